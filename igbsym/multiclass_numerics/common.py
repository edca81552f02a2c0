"""What every multiclass route shares (IGB paper App. H): the fixed seed and class range, the randomised-QMC replicate
arithmetic (K_SCRAMBLES independent scrambles; the stated bound T_FACTOR x SE + det at 99.99 %, Student t with
K - 1 dof; a relative bound b/(v - b), inf where no digit is claimed), the broadcasting of parameters, and the
mpmath references of peaked integrals (mp_log_concave_integral: the integrand divided by its peak and integrated in
the peak's scale, since mpmath.quad's tolerance is absolute)."""
from __future__ import annotations

import math

import mpmath
import numpy as np
from scipy import special

from ..functions import mp_log_ncdf

C_MAX = 10_000
SEED = 20_240_613       # fixed: the routes are deterministic functions of their inputs
SQ2PI = math.sqrt(2 * math.pi)


def broadcast_flat(gamma, C, *more):
    arrays = np.broadcast_arrays(np.asarray(gamma, float), np.asarray(C, float), *[np.asarray(m, float) for m in more])
    return arrays[0].shape, [a.ravel() for a in arrays]


K_SCRAMBLES = 16         # independent scrambles (replicates): the error estimate has K - 1 degrees of freedom
CONFIDENCE = 0.9999      # two-sided level of the stated error bound (Student t over the scrambles)
T_FACTOR = float(special.stdtrit(K_SCRAMBLES - 1, 0.5 + CONFIDENCE / 2))   # 5.24


ESS_MIN = 300     # fewer effective rows: the spread between the scrambles does not measure the error (no digit)


def replicate_bound(F: np.ndarray, det, ess) -> np.ndarray:
    """The stated absolute bound of per-scramble estimates F [K, n] at CONFIDENCE: T_FACTOR x SE + the deterministic
    bound ``det``, inf (no claim) where fewer than ESS_MIN effective rows carry the value."""
    return np.where(np.asarray(ess) < ESS_MIN, np.inf, T_FACTOR * scramble_se(F) + det)


def scramble_se(F: np.ndarray) -> np.ndarray:
    """SD/sqrt(K) of per-scramble estimates F [K, ...] along the scrambles, each column scaled by its largest |F|
    first: the squared spread of values ~1e-160 underflows (it read 0, a bound of det alone)."""
    scale = np.abs(F).max(0)
    scale = np.where(scale > 0, scale, 1.0)
    return scale * (F / scale).std(0, ddof=1) / math.sqrt(F.shape[0])


def relative(value, bound):
    """|v_hat - v| <= b  =>  |v_hat - v|/v <= b/(v_hat - b) where v_hat > b; inf where v_hat <= b (no digit), and
    where v_hat is below the normal doubles (2.2e-308: a subnormal value and its bound keep few digits)."""
    value, bound = np.asarray(value, float), np.asarray(bound, float)
    ok = (value > bound) & (value >= np.finfo(float).tiny)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(ok, bound / np.where(ok, value - bound, 1.0), np.inf)


def probit(g):
    g = np.asarray(g, float)
    x = special.ndtri(np.minimum(g, 1 - g))
    return np.where(g > 0.5, -x, x)


def qmc_estimate(reps: np.ndarray, det: float = 0.0) -> tuple:
    """(v_hat, b) from per-scramble estimates ``reps`` and a deterministic bound ``det``: their mean and the bound at
    the confidence of law_bound, b = T_FACTOR x SE + det."""
    return float(reps.mean()), T_FACTOR * float(scramble_se(reps)) + det


def mp_mills(x):
    """phi(x)/Phi(x) = d log Phi(x)/dx in mpmath for any real x (through functions.mp_log_ncdf)."""
    return mpmath.exp(-x * x / 2 - mp_log_ncdf(x)) / mpmath.sqrt(2 * mpmath.pi)


MP_NEGLIGIBLE_LOG = -10_000   # log of the peak below which mp_log_concave_integral returns 0 (see there)


def mp_log_concave_integral(log_f, dlog_f):
    """int exp(log_f(x)) dx over the real line at full relative precision whatever its size, for log_f'' <= -1 (a
    standard normal factor times log-concave ones): mpmath.quad's tolerance is absolute, so on a fixed interval a value
    of 1e-17 came back as 4.5e-38 (multiclass.p_empty, C = 2, gamma = 0.3, D = 1e6) and one of 4e-30 was off by 1e-2.
    Here the integrand is divided by its value at the mode x0 (bisection of the decreasing dlog_f) and integrated in
    t = x - x0 over +- X, X = sqrt(2 (dps + 10) ln 10) (log_f(x) <= log_f(x0) - t^2/2: the cut tails are < 10^-(dps + 5)
    of the value), split at t = +- w 4^j with w = 1/sqrt(-log_f''(x0)) the peak's own width. x0 and log_f are taken
    with log2 |x0| + log2 |log_f(x0)| extra bits (the mode can sit at 1e149 and log_f at -1e299), quad at the working
    precision. Where log_f(x0) < MP_NEGLIGIBLE_LOG the value (< sqrt(2 pi) e^log_f(x0) < 10^-4000) is returned as 0:
    an absolute error no double and no comparison at 1e-300 can see, stated here (an exact value would take tens of
    seconds of ~1700-bit arithmetic at gamma = 1e-300)."""
    lo, hi = mpmath.mpf(-1), mpmath.mpf(1)
    while dlog_f(lo) <= 0:
        lo *= 2
    while dlog_f(hi) >= 0:
        hi *= 2
    extra = int(mpmath.log(max(-lo, hi), 2)) + 10
    with mpmath.extraprec(extra):
        while True:
            mid = (lo + hi) / 2
            if mid in (lo, hi):
                break
            lo, hi = (mid, hi) if dlog_f(mid) > 0 else (lo, mid)
        peak = log_f(mid)
        if peak < MP_NEGLIGIBLE_LOG:
            return mpmath.mpf(0)
        extra += int(mpmath.log(1 + abs(peak), 2)) + 10
    with mpmath.extraprec(extra):
        x0 = +mid
        top = log_f(x0)
        e = mpmath.mpf(2) ** (-(mpmath.mp.prec - extra) // 3)
        w = 1 / mpmath.sqrt(max(1, (dlog_f(x0 - e) - dlog_f(x0 + e)) / (2 * e)))

    def ratio(t):
        with mpmath.extraprec(extra):
            return mpmath.exp(log_f(x0 + t) - top)
    X = mpmath.sqrt(2 * (mpmath.mp.dps + 10) * mpmath.log(10))
    w = +w
    steps = [w * 4**j for j in range(int(mpmath.log(X / w, 4)) + 1)] + [X]
    return mpmath.exp(top) * mpmath.quad(ratio, [-t for t in reversed(steps)] + [0] + steps)
