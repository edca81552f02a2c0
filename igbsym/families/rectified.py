"""Rectified-Gaussian moments, leaky-ReLU moments and moments of any activation of a Gaussian.

Papers: norm-placement-bn-ln.txt Lemma F.1 (Eqs. 83–86); kurtosis-vanishing-empirical-variance.txt
Lemma 4.1 and the second-moment lemma before it; igb-initial-guessing-bias.txt Eq. 78 (ReLU mean) and
App. G (antisymmetric activations, SReLU Eq. 188).
"""
import mpmath
import numpy as np
import sympy as sp
from scipy import special

from .. import activations as acts
from .. import params as P
from ..form import ClosedForm, Condition, NumericRoute, Param, Provenance
from ..functions import Phi
from ..gauss import activation as gauss_act
from ..numerics import power_product
from ..registry import register

NORM = "norm-placement-bn-ln.txt"
THESIS = "kurtosis-vanishing-empirical-variance.txt"
IGB = "igb-initial-guessing-bias.txt"

MU = Param("mu", "real", "mean of X ~ N(mu, sigma^2)")
SIGMA = Param("sigma", "positive", "standard deviation")
A = Param("a", "real", "leaky slope (negative_slope in torch)")
mu, sigma, a, kappa, alpha = sp.symbols("mu", real=True), sp.Symbol("sigma", positive=True), \
    sp.Symbol("a", real=True), sp.Symbol("kappa", positive=True), sp.Symbol("alpha", real=True)


def phi(t):
    """Standard normal density."""
    return sp.exp(-t**2 / 2) / sp.sqrt(2 * sp.pi)


def relu_moment(n: int, m=mu, s=sigma) -> sp.Expr:
    """E[ReLU(X)^n], X ~ N(m, s²), exact for integer n ≥ 0 (0^0 = 1).

    Truncated moments T_j = E[X^j 1{X>0}] obey T_j = m T_{j-1} + (j-1) s² T_{j-2} (Stein's lemma), with
    T_0 = Φ(m/s), T_1 = m Φ(m/s) + s φ(m/s).
    """
    if n == 0:
        return sp.S.One
    t = m / s
    # T_j = A_j Φ(t) + B_j φ(t): the recursion runs on the polynomial coefficients (sp.Poly), not on the expanded
    # expression (expanding it costs minutes at n = 60)
    poly = lambda e: sp.Poly(e, m, s)  # noqa: E731
    a_prev, a_cur, b_prev, b_cur = poly(1), poly(m), poly(0), poly(s)
    for j in range(2, n + 1):
        a_prev, a_cur = a_cur, poly(m) * a_cur + (j - 1) * poly(s**2) * a_prev
        b_prev, b_cur = b_cur, poly(m) * b_cur + (j - 1) * poly(s**2) * b_prev
    return sp.collect(sp.expand(a_cur.as_expr() * Phi(t) + b_cur.as_expr() * phi(t)), [Phi(t), phi(t)])


RELU_MEAN = relu_moment(1)
RELU_VAR = sp.collect(sp.expand(relu_moment(2) - RELU_MEAN**2), [Phi(mu / sigma)])
_SQ2PI = np.sqrt(2 * np.pi)
_SQ2PI_INV = 1 / _SQ2PI


def _mills(t):
    """(t, φ(t), R) with R = Φ(−|t|)/φ(t), the Mills ratio at |t| (one erfcx call, no overflow)."""
    t = np.asarray(t, dtype=float)
    return t, np.exp(-t * t / 2) / _SQ2PI, np.sqrt(np.pi / 2) * special.erfcx(np.abs(t) / np.sqrt(2))


def _mills_mean(mu, sigma):
    """σ(tΦ(t) + φ(t)), t = μ/σ: φ(1 + tR) for t < 0 (no cancellation), t + φ(1 − tR) for t ≥ 0 (the mean kernel's
    route for t < -3 and t = inf)."""
    t, ph, r = _mills(mu / sigma)
    tail = np.where(ph == 0, 0.0, ph * (1 + np.where(t < 0, t, -t) * r))  # no inf·0 where t = mu/sigma overflows
    out = np.where(t < 0, sigma * tail, mu + sigma * tail)
    deep = t < -30
    if deep.any():  # relative accuracy 1e-16 t² would still hold, but phi(t) underflows while the mean need not
        mu, sigma, out = np.broadcast_arrays(mu, sigma, out)
        out = out.copy()
        out[deep] = _deep_mean(mu[deep], sigma[deep])
    return out


def _mills_var(mu, sigma):
    """Var[ReLU(X)]: Mills-ratio form for t < 0, upper-tail form with Q = Φ(−t) = φR for t ≥ 0 (the variance
    kernel's route for t < -3 and t = inf)."""
    t, ph, r = _mills(mu / sigma)
    q = ph * r
    sign = t
    live = ph > 0  # ph = 0: |t| > 38.6, where the variance is sigma² (t > 0) or below 1e-300 sigma² (t < 0)
    t = np.where(live, t, 0.0)
    neg = np.where(live, ph * ((1 + t * t) * r + t) - ph**2 * (1 + t * r) ** 2, 0.0)
    pos = np.where(live, 1 - q - t * ph - ph**2 + t * t * q * (1 - q) + 2 * t * q * ph, 1.0)
    out = sigma * (sigma * np.where(sign < 0, neg, pos))  # sigma² alone can overflow where the variance does not
    deep = sign < -5
    if deep.any():  # the Mills-ratio form loses ~1e-16 |t|³: the log recurrence keeps 1e-15
        mu, sigma, out = np.broadcast_arrays(mu, sigma, out)
        out = out.copy()
        out[deep] = _deep_var(mu[deep], sigma[deep])
    return out


_FAST_FROM = -3.0  # the one-pass form for t >= -3: as accurate as the Mills-ratio form there (max relative error
#                    over t in [-3, -2]: mean 24 vs 23 ulp, variance 149 vs 149 ulp); below, 53 vs 42 and 480 vs 280


def _fast_terms(mu, sigma):
    """The one-pass kernels' terms, each in its own buffer: (mu, sigma, t, s, Q, D), mu and sigma broadcast, t = μ/σ,
    s = |t|, Q = Φ(−s) = erfc(a)/2 (the smaller tail: no 1 − Φ cancellation), D = φ(s) − sQ = E[(Z − s)⁺] with
    φ(s) = exp(−a·a)/√(2π), a = s/√2. erfc(a) is exp(−a·a) times a rational function of a in SciPy, so Q and φ share
    the rounding of a² and φ − sQ does not amplify it (ndtr(−s) with exp(−s²/2): 5× the error at t = -3).
    With Φ(t) = Q + [t > 0](1 − 2Q): E[ReLU(X)] = max(μ, 0) + σD and Var[ReLU(X)] = σ²(Q − D(s + D) + [t > 0](1 − 2Q)),
    one erfc and one exp per point and no branch."""
    mu, sigma = np.broadcast_arrays(np.asarray(mu, dtype=float), np.asarray(sigma, dtype=float))
    t = np.divide(mu, sigma, out=np.empty(mu.shape))
    s = np.abs(t, out=np.empty(mu.shape))
    q = np.multiply(s, 1 / np.sqrt(2), out=np.empty(mu.shape))
    d = np.multiply(q, q, out=np.empty(mu.shape))
    special.erfc(q, out=q)
    q *= 0.5
    d *= -1.0
    np.exp(d, out=d)
    d *= 1 / _SQ2PI
    d -= s * q
    return mu, sigma, t, s, q, d


def _with_tail(out, t, tail, mu, sigma):
    """``out`` (the one-pass value) where -3 <= t < inf, ``tail(mu, sigma)`` elsewhere; the route is chosen point by
    point, so an array call gives each point's scalar value."""
    if t.size == 0 or (t.min() >= _FAST_FROM and t.max() < np.inf):
        return out
    sel = ~((t >= _FAST_FROM) & (t < np.inf))
    out[sel] = tail(mu[sel], sigma[sel])
    return out


def _mean_kernel(mu, sigma):
    """E[ReLU(X)] = max(μ, 0) + σD (see _fast_terms); the Mills-ratio and log routes for t < -3."""
    mu, sigma, t, s, q, d = _fast_terms(mu, sigma)
    d *= sigma
    d += np.maximum(mu, 0.0, out=s)
    return _with_tail(d, t, _mills_mean, mu, sigma)


def _var_kernel(mu, sigma):
    """Var[ReLU(X)] = σ(σ(Q − D(s + D) + [t > 0](1 − 2Q))) (see _fast_terms; σ² alone can overflow where the variance
    does not); the Mills-ratio and log routes for t < -3."""
    mu, sigma, t, s, q, d = _fast_terms(mu, sigma)
    s += d
    s *= d                              # D(s + D)
    np.multiply(q, -2.0, out=d)
    d += 1.0
    np.copysign(d, t, out=d)
    np.maximum(d, 0.0, out=d)           # [t > 0](1 − 2Q); at t = 0, 1 − 2Q = 0 exactly
    q -= s
    q += d
    q *= sigma
    q *= sigma
    return _with_tail(q, t, _mills_var, mu, sigma)


def mp_relu_moment(n: int, mu, sigma):
    """E[ReLU(X)^n] in mpmath without cancellation for any t = mu/sigma: sigma^n n! e^{-t²/4} D_{-n-1}(-t)/sqrt(2 pi)
    (D the parabolic-cylinder function: ∫_0^∞ s^n e^{ts - s²/2} ds = n! e^{t²/4} D_{-n-1}(-t)); n = 0 gives 1."""
    if n == 0:
        return mpmath.mpf(1)
    t = mu / sigma
    if t > _MP_SERIES_FROM:  # the lower tail is below e^{-5e11}: the full Gaussian moment, exactly
        return mpmath.fsum(mpmath.binomial(n, j) * mu ** (n - j) * sigma**j * mpmath.fac2(j - 1)
                           for j in range(0, n + 1, 2))
    if t < -_MP_ZERO_BELOW:  # the moment is below exp(-10^200): 0, as mpmath's own exp gives there
        return mpmath.mpf(0)
    if t < -_MP_SERIES_FROM:  # I_n = sum_k (-1)^k (n+2k)!/(2^k k! |t|^(n+2k+1)), terms fall by <= (n+2k)²/(k t²)
        total, k, term, a = mpmath.mpf(0), 0, None, -t
        while term is None or abs(term) > mpmath.eps * abs(total):
            term = (-1) ** k * mpmath.factorial(n + 2 * k) / (2**k * mpmath.factorial(k) * a ** (n + 2 * k + 1))
            total += term
            k += 1
        return sigma**n * mpmath.npdf(t) * total
    return (sigma**n * mpmath.factorial(n) * mpmath.exp(-t * t / 4) * mpmath.pcfd(-n - 1, -t)
            / mpmath.sqrt(2 * mpmath.pi))


def _mp_var(mu, sigma):
    """Var[ReLU(X)] = T2 - T1² for mu <= 0; for mu > 0, with X⁻ = ReLU(-X), sigma² - E[X⁻²] - E[X⁻]² - 2 mu E[X⁻]
    (ReLU(X) = X + X⁻), whose correction terms are tiny where T2 - T1² would cancel."""
    if mu <= 0:
        return mp_relu_moment(2, mu, sigma) - mp_relu_moment(1, mu, sigma) ** 2
    m1 = mp_relu_moment(1, -mu, sigma)
    return sigma**2 - mp_relu_moment(2, -mu, sigma) - m1 * m1 - 2 * mu * m1


_MP_SERIES_FROM = 10**6
_MP_ZERO_BELOW = 10**100
_MILLER_TERMS = 20.0  # backward start N >= (sqrt(n) + 20/|t|)^2: the dominant solution is e^{-40} ~ 4e-18 smaller
_FORWARD_REACH = 2.0  # forward recursion for t >= -min(1, 2/sqrt(n)): its error growth e^{2|t| sqrt(n)} <= e^4
_MILLER_MIN = 24      # ... and at least n + 24 steps: each step contracts the error by <= (k - 1)/(k - 1 + t²) < 1/2


def _log_unit_moment(n: int, t) -> np.ndarray:
    """log E[ReLU(t + Z)^n] = log Phi(t) + sum_{k<=n} log g_k, g_k = I_k/I_{k-1}, I_k = ∫_0^∞ s^k e^{ts - s²/2} ds.

    I_k = t I_{k-1} + (k-1) I_{k-2}, so g_k = t + (k-1)/g_{k-1} with g_1 = t + phi(t)/Phi(t). For t < 0, I_k is the
    minimal solution: the dominant one is larger by ~ e^{2|t| sqrt(k)}, which the forward recursion amplifies its
    rounding by (n = 60 at t = -1: 1.8e-10 relative). So forward for t >= -min(1, _FORWARD_REACH/sqrt(n)) (growth
    at most e^4; measured <= 6e-14 for n <= 60), and below g_{k-1} = (k-1)/(g_k - t) runs backward (Miller) from
    g_N = 0, N from the bound at _MILLER_TERMS (at most (11 sqrt(n))² steps, 7300 at n = 60, fewer as |t| grows).
    No cancellation, no overflow, no underflow (logs throughout).
    """
    t = np.asarray(t, dtype=float)
    logp = np.zeros(t.shape)
    fwd = t >= -min(1.0, _FORWARD_REACH / np.sqrt(n))
    if fwd.any():
        tf = t[fwd]
        g = tf + np.sqrt(2 / np.pi) / special.erfcx(-tf / np.sqrt(2))  # t + phi(t)/Phi(t)
        lp = np.log(g)
        for k in range(2, n + 1):
            g = tf + (k - 1) / g
            lp += np.log(g)
        logp[fwd] = lp
    back = ~fwd
    if back.any():
        # each point starts at its own N (so an array call gives every point its scalar value): points sorted by N,
        # descending, so the points running at step k are a prefix, and the work is the sum of the N, not their max
        tb = t[back]
        top = np.maximum(np.ceil((np.sqrt(n) + _MILLER_TERMS / np.abs(tb)) ** 2) + 2, n + _MILLER_MIN)
        order = np.argsort(-top, kind="stable")
        tb, top = tb[order], top[order]
        g, lp = np.zeros(tb.shape), np.zeros(tb.shape)
        for k in range(int(top[0]) + 1, 1, -1):  # g = g_k -> g_{k-1}, from g = 0 at k = N + 1
            m = np.searchsorted(-top, 1.0 - k, side="right")  # the points with N >= k - 1
            g[:m] = (k - 1) / (g[:m] - tb[:m])
            if k - 1 <= n:
                lp += np.log(g)
        logp.reshape(-1)[np.flatnonzero(back)[order]] = lp  # logp is a fresh contiguous array: a view
    return special.log_ndtr(t) + logp


def relu_moment_kernel(n: int, mu, sigma):
    """E[ReLU(X)^n] = exp(n log sigma + log E[ReLU(t + Z)^n]) (see _log_unit_moment); t > 1e8 gives mu^n."""
    mu, sigma = np.broadcast_arrays(np.asarray(mu, float), np.asarray(sigma, float))
    if n == 0:
        return np.ones(mu.shape)[()]
    t = mu / sigma
    huge = t > 1e8  # E[(mu + sigma Z)^n] = mu^n (1 + O(n² t^-2)); also where mu/sigma overflows
    out = np.exp(np.where(huge, n * np.log(np.where(huge, mu, 1.0)),
                          n * np.log(sigma) + _log_unit_moment(n, np.where(huge, 0.0, t))))
    return out[()] if out.ndim == 0 else out


def _deep_mean(mu, sigma):
    """E[ReLU(X)] for t = mu/sigma < -30 in logs (phi(t) underflows for t < -38.6 while sigma phi(t)/t² need not)."""
    return np.exp(np.log(sigma) + _log_unit_moment(1, mu / sigma))


def _deep_var(mu, sigma):
    """Var[ReLU(X)] = T2 (1 - T1²/T2) for t < -5 in logs (T1²/T2 < 1e-7 there: no cancellation)."""
    t = mu / sigma
    l1, l2 = _log_unit_moment(1, t), _log_unit_moment(2, t)
    ratio = np.where(np.isfinite(l2), np.exp(2 * l1 - np.where(np.isfinite(l2), l2, 0.0)), 0.0)
    return np.exp(2 * np.log(sigma) + l2 + np.log1p(-ratio))


STABILITY = ("NumPy kernel: Mills-ratio (erfcx) form for mu/sigma < 0, the log ratio recurrence below -30 (mean) / "
             "-5 (var); mpmath: the parabolic-cylinder form (no cancellation at any mu/sigma)")

register(ClosedForm(
    "rectified.mean", "E[ReLU(X)] for X ~ N(mu, sigma^2).", (MU, SIGMA),
    Provenance(NORM, "Lemma F.1, Eq. 85", STABILITY), expr=RELU_MEAN, kernel=_mean_kernel,
    mp_kernel=lambda mu, sigma: mp_relu_moment(1, mu, sigma)))
register(ClosedForm(
    "rectified.var", "Var[ReLU(X)] for X ~ N(mu, sigma^2).", (MU, SIGMA),
    Provenance(NORM, "Lemma F.1, Eq. 86", STABILITY), expr=RELU_VAR, kernel=_var_kernel, mp_kernel=_mp_var))
register(ClosedForm(
    "rectified.moment", "E[ReLU(X)^n] for X ~ N(mu, sigma^2), any integer n >= 0 (0^0 = 1).",
    (Param("n", "integer", "moment order", structural=True, minimum=0, maximum=60), MU, SIGMA),
    Provenance(NORM, "generalises Eqs. 85-86 (Stein recursion T_n = mu T_{n-1} + (n-1) sigma^2 T_{n-2})",
               "kernels: the ratio recurrence of relu_moment_kernel (NumPy; Miller backward for mu/sigma < -1) and the "
               "parabolic-cylinder form (mpmath), both free of the expanded form's cancellation"),
    builder=lambda n: relu_moment(n), kernel=relu_moment_kernel, mp_kernel=mp_relu_moment,
    display=r"T_n,\; T_n = \mu T_{n-1} + (n-1)\sigma^2 T_{n-2},\; T_0 = \Phi\left(\tfrac{\mu}{\sigma}\right),"
            r"\; T_1 = \mu\Phi\left(\tfrac{\mu}{\sigma}\right) + \tfrac{\sigma}{\sqrt{2\pi}}e^{-\mu^2/2\sigma^2}"
            r"\quad (n \ge 1;\ n = 0 \mapsto 1)"))

# --- Lemma F.1 as it really is: E[ReLU(alpha X)] for any real alpha != 0 --------------------------------
_scaled_mean = RELU_MEAN.subs({mu: alpha * mu, sigma: sp.Abs(alpha) * sigma}, simultaneous=True)
_scaled_var = RELU_VAR.subs({mu: alpha * mu, sigma: sp.Abs(alpha) * sigma}, simultaneous=True)
ALPHA = Param("alpha", "real", "scale factor of Y = alpha X")
_NONZERO = (Condition(sp.Ne(alpha, 0), "alpha != 0 (alpha = 0 gives ReLU(0) = 0 trivially)"),)
LEMMA_F1_NOTE = ("Lemma F.1 claims E[ReLU(aX)] = a E[ReLU(X)] and Var[ReLU(aX)] = a^2 Var[ReLU(X)] for every real "
                 "a; the mean identity holds iff a >= 0, the variance identity iff a >= 0 or mu = 0 "
                 "(derivations/rectified.py proves both)")


def _scaled_var_kernel(alpha, mu, sigma):
    """Var[ReLU(alpha X)] = r² Var[ReLU(Y)], Y ~ N(sign(alpha) 2^k mu, (2^k sigma)²), |alpha| = r 2^k (r >= 1, k as
    large as keeps 2^k mu finite where mu/sigma is): the power-of-two scaling keeps t = mu/sigma exactly and lets the
    kernel (logs in the deep tail) see nearly the true scale |alpha| sigma (alpha = -1.8e308, sigma = 5e-324 is
    7.9e-31, but sigma² underflowed first: 0). Where 2^k sigma is not a normal double, alpha² Var[ReLU(sign(alpha) X)]
    as before."""
    alpha, mu, sigma = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (alpha, mu, sigma)))
    k = np.frexp(np.abs(alpha))[1] - 1
    finite_t = np.isfinite(mu / sigma)   # then 2^k mu must stay finite too (else t would change): k capped
    k = np.where(finite_t, np.minimum(k, 1022 - np.frexp(np.maximum(np.abs(mu), sigma))[1]), k)
    r = np.ldexp(np.abs(alpha), -k)
    scaled_sigma = np.ldexp(sigma, k)
    ok = np.isfinite(scaled_sigma) & (scaled_sigma >= np.finfo(float).tiny) & np.isfinite(r)
    direct = np.abs(alpha) * (np.abs(alpha) * _var_kernel(np.sign(alpha) * mu, sigma))
    scaled = r * (r * _var_kernel(np.sign(alpha) * np.ldexp(mu, k), np.where(ok, scaled_sigma, 1.0)))
    scaled = np.where(ok, scaled, 0.0)   # (r = inf times 0 where ok is false)
    return np.where(ok, scaled, direct)


register(ClosedForm(
    "rectified.scaled_mean", "E[ReLU(alpha X)] for X ~ N(mu, sigma^2): the true form of Lemma F.1 (any real alpha).",
    (ALPHA, MU, SIGMA), Provenance(NORM, "Lemma F.1, Eqs. 83, 87-89", LEMMA_F1_NOTE),
    expr=_scaled_mean, conditions=_NONZERO,
    kernel=lambda alpha, mu, sigma: np.abs(alpha) * _mean_kernel(np.sign(alpha) * mu, sigma),
    mp_kernel=lambda alpha, mu, sigma: mp_relu_moment(1, alpha * mu, abs(alpha) * sigma)))
register(ClosedForm(
    "rectified.scaled_var", "Var[ReLU(alpha X)] for X ~ N(mu, sigma^2): the true form of Lemma F.1 (any real alpha).",
    (ALPHA, MU, SIGMA), Provenance(NORM, "Lemma F.1, Eqs. 84, 90", LEMMA_F1_NOTE),
    expr=_scaled_var, conditions=_NONZERO,
    kernel=lambda alpha, mu, sigma: _scaled_var_kernel(alpha, mu, sigma),
    mp_kernel=lambda alpha, mu, sigma: _mp_var(alpha * mu, abs(alpha) * sigma)))

# --- leaky ReLU, zero-mean symmetric input (any law) and Gaussian input ----------------------------------
# Kernels over the whole double range (a = -1e308 with sigma = 1e-320 is an ordinary value): powers of a are
# split as max(1, |a|)^k times a factor in [1, 2] (the polynomial divided by its leading power), and the product
# of powers is taken by exponent and mantissa (igbsym.numerics.power_product), so nothing overflows or underflows
# unless the value does. Relative error <= 1e-15.
def _leaky_big(a):
    return np.maximum(1.0, np.abs(a))


def _leaky_small(a):
    """min(|a|, 1/|a|): (1 + a^4) = max(1, |a|)^4 (1 + small^4)."""
    a = np.abs(np.asarray(a, dtype=float))
    with np.errstate(divide="ignore"):
        return np.minimum(a, 1 / a)


def _leaky_var(a, sigma):
    """σ²[(π−1)a² + 2a + (π−1)]/(2π) = σ² s² q/(2π), s = max(1, |a|), q = (π−1)t² + 2t/s + (π−1)/s², t = a/s; q >= 1.67
    (the quadratic has no real root), so q loses no digits."""
    s = _leaky_big(a)
    t = np.asarray(a, dtype=float) / s
    q = (np.pi - 1) * t * t + 2 * t / s + (np.pi - 1) / (s * s)
    return power_product([(s, 2), (sigma, 2)], q / (2 * np.pi))


def _leaky_mean(a, sigma):
    """(1 − a)σ/√(2π) as sign(1 − a)·|1 − a|·σ by power_product (a = -1.8e308 with σ = 5e-324 is 3.5e-16)."""
    return np.sign(1 - a) * power_product([(np.abs(1 - a), 1), (sigma, 1)], 1 / np.sqrt(2 * np.pi))


register(ClosedForm(
    "leaky.m2", "E[phi_a(x)^2] for zero-mean symmetric x with variance sigma^2 (any law).", (A, SIGMA),
    Provenance(THESIS, "second-moment lemma before Lemma 4.1"), expr=(1 + a**2) * sigma**2 / 2,
    kernel=lambda a, sigma: power_product([(np.hypot(1.0, a), 2), (sigma, 2)], 0.5)))
register(ClosedForm(
    "leaky.m4", "E[phi_a(x)^4] for zero-mean symmetric x with variance sigma^2 and kurtosis kappa.",
    (A, SIGMA, Param("kappa", "positive", "kurtosis E[x^4]/sigma^4 (>= 1 for any law)")),
    Provenance(THESIS, "Lemma 4.1"), expr=(1 + a**4) * sigma**4 * kappa / 2,
    conditions=(Condition(sp.Ge(kappa, 1), "kappa >= 1 (every law has E[x^4] >= E[x^2]^2)"),),
    kernel=lambda a, sigma, kappa: power_product([(_leaky_big(a), 4), (1 + _leaky_small(a) ** 4, 1),
                                                  (sigma, 4), (kappa, 1)], 0.5)))
register(ClosedForm(
    "leaky.mean", "E[phi_a(X)] for X ~ N(0, sigma^2).", (A, SIGMA),
    Provenance(IGB, "Eq. 78 generalised to slope a"), expr=(1 - a) * sigma / sp.sqrt(2 * sp.pi),
    kernel=_leaky_mean))
register(ClosedForm(
    "leaky.var", "Var[phi_a(X)] for X ~ N(0, sigma^2).", (A, SIGMA),
    Provenance(IGB, "Eq. 78 generalised to slope a"),
    expr=sp.factor((1 + a**2) * sigma**2 / 2 - (1 - a)**2 * sigma**2 / (2 * sp.pi)), kernel=_leaky_var))

# --- any activation of N(0, sigma^2) ------------------------------------------------------------------
# Everything per activation comes from its entry (igbsym.activations): a fixed slope gives the closed forms of a
# positively homogeneous φ = x⁺ − s x⁻, odd φ a zero mean, φ(x) + φ(−x) = 2φ(0) the mean φ(0), the entry's
# exact overrides the rest; any other smooth φ takes the quadrature of igbsym.gauss.activation.
_s = sp.Symbol("sigma", positive=True)
ACTIVATION, A_DEFAULT = P.ACTIVATION, P.LEAKY_A
_x = sp.Symbol("x", real=True)


def _on_entry(expr):
    """An entry's override (in acts.s_, acts.a_) in this module's symbols."""
    return sp.sympify(expr).subs({acts.s_: _s, acts.a_: a})


def _homogeneous(act, which):
    """The closed form (SymPy) of E or Var of φ = x⁺ − t x⁻ (t the entry's slope, or the leaky parameter a)."""
    t = a if act.slope == "a" else sp.sympify(act.slope)
    if which == "mean":
        return (1 - t) * _s / sp.sqrt(2 * sp.pi)
    return sp.factor(((1 + t**2) / sp.Integer(2) - (1 - t) ** 2 / (2 * sp.pi)) * _s**2)


def _homogeneous_np(act, which, s, a_value):
    if act.slope == "a":
        return _leaky_mean(a_value, s) if which == "mean" else _leaky_var(a_value, s)
    t = float(act.slope)
    if which == "mean":
        return s * ((1 - t) * _SQ2PI_INV)
    return power_product([(s, 2)], (1 + t * t) / 2 - (1 - t) ** 2 / (2 * np.pi))


def _symmetric_mean(act):
    """φ(0) where φ(x) + φ(−x) = 2φ(0) identically (odd about its value at 0: E φ(σZ) = φ(0)), else None."""
    f = act.expr.subs({acts.x_: _x})
    if act.expr.free_symbols - {acts.x_}:
        return None
    f0 = f.subs(_x, 0)
    return sp.simplify(f0) if sp.simplify(f + f.subs(_x, -_x) - 2 * f0) == 0 else None


def _exact(activation, which):
    """The exact E / Var of φ(σZ) from the entry, or None (then the quadrature route)."""
    act = acts.get(activation)
    override = act.mean_exact if which == "mean" else act.var_exact
    if override is not None:
        return _on_entry(override)
    if act.homogeneous:
        return _homogeneous(act, which)
    if which == "mean":
        return sp.S.Zero if act.odd else _symmetric_mean(act)
    return None


def _exact_np(which):
    def kernel(activation, sigma, a):
        act = acts.get(activation)
        sigma, a_value = np.broadcast_arrays(np.asarray(sigma, float), np.asarray(a, float))
        own = act.mean_np if which == "mean" else act.var_np
        if own is not None:
            return own(sigma, a_value)
        if act.homogeneous:
            return _homogeneous_np(act, which, sigma, a_value)
        return 0 * sigma + float(_exact(activation, which))    # odd or symmetric: a constant mean
    return kernel


def _defining(act, power: int):
    """The defining Gaussian integral of E[φ(X)^power], X ~ N(0, σ²)."""
    f = acts.get(act).expr.subs({acts.x_: _x, acts.a_: a, acts.s_: _s})
    return sp.Integral(f ** power * sp.exp(-_x**2 / (2 * _s**2)) / (sp.sqrt(2 * sp.pi) * _s),
                       (_x, -sp.oo, sp.oo))


SMOOTH_ERROR = ("from the entry alone (igbsym.gauss.activation): Taylor series of phi - phi(0) near 0, even parts, "
                "fixed composite Gauss-Legendre z-grid (panel 0.05) for sigma <= 8, closed-form affine far field + "
                "x-grid of the exponentially small remainder on [-45, 45] above: relative error <= 1e-12 for every "
                "sigma whose value is a normal double (below: NumericalError)")


def _numeric_moment(act: str, centred: bool) -> NumericRoute:
    """E[φ(σZ)] or Var[φ(σZ)] by the entry-derived quadrature (the route for cases with no closed form)."""
    np_fn, mp_fn = (gauss_act.var_np, gauss_act.var_mp) if centred else (gauss_act.mean_np, gauss_act.mean_mp)
    defining = _defining(act, 2) - _defining(act, 1) ** 2 if centred else _defining(act, 1)
    return NumericRoute(lambda sigma, a: np_fn(act, np.broadcast_arrays(np.asarray(sigma, float),
                                                                        np.asarray(a, float))[0]),
                        lambda sigma, a: mp_fn(act, sigma), "quadrature", SMOOTH_ERROR, defining)


def _mean_case(activation):
    exact = _exact(activation, "mean")
    return exact if exact is not None else _numeric_moment(activation, False)


def _var_case(activation):
    exact = _exact(activation, "var")
    return exact if exact is not None else _numeric_moment(activation, True)


register(ClosedForm(
    "activation.mean", "E[phi(X)] for X ~ N(0, sigma^2) and a named activation phi.",
    (ACTIVATION, SIGMA, A_DEFAULT), Provenance(IGB, "Eq. 78 (ReLU); App. G (antisymmetric: 0)"),
    builder=_mean_case, kernel=_exact_np("mean")))
register(ClosedForm(
    "activation.var", "Var[phi(X)] for X ~ N(0, sigma^2) and a named activation phi.",
    (ACTIVATION, SIGMA, A_DEFAULT), Provenance(IGB, "Eq. 78 (ReLU); erf: Williams (1997) arcsine kernel"),
    builder=_var_case, kernel=_exact_np("var")))
