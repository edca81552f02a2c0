"""The law of the maximum of k i.i.d. Gaussian pre-activations (after identity or ReLU): its moments for any k.

Paper: igb-initial-guessing-bias.txt Sec. 4.2, App. C.1–C.3 (max-pooling). M_k = max(φ(X_1), ..., φ(X_k)), X_j iid
N(0, σ²), φ = identity or ReLU. Moments: exact closed forms for small k (identity k <= 5, ReLU k <= 4; proved in
derivations/maxpool.py); otherwise the probability-integral substitution x_k(t) = Φ^{-1}(exp(-e^{-t}/k)), which
turns M_k into a standard Gumbel variable t for every k, integrated by a 40-point Gauss rule for the Gumbel weight
(plus the exact ReLU correction terms for k < 64). The mpmath route (``mp_moments``) is independent: quadrature of
the defining integral in x. Used by the max-pool family (``igbsym.families.maxpool``), the MaxPool op and the
multiclass family (the Gumbel rule).
"""
from __future__ import annotations

from functools import lru_cache

import mpmath
import numpy as np
import sympy as sp
from scipy import special

from .functions import PhiInv
from .numerics import row_dot

x, t = sp.Symbol("x", real=True), sp.Symbol("t", real=True)
k = sp.Symbol("k", integer=True)
sigma = sp.Symbol("sigma", positive=True)
_LOG_SQ2PI = 0.5 * np.log(2 * np.pi)

# --- exact moments (proved in derivations/maxpool.py) ------------------------------------------------------------
_pi, _r2, _r3 = sp.pi, sp.sqrt(2), sp.sqrt(3)
#: (E[M_k], E[M_k^2]) for σ = 1; scale by σ and σ².
EXACT_MOMENTS = {
    "identity": {
        1: (sp.S.Zero, sp.S.One),
        2: (1 / sp.sqrt(_pi), sp.S.One),
        3: (3 / (2 * sp.sqrt(_pi)), 1 + _r3 / (2 * _pi)),
        4: (6 * sp.atan(_r2) / _pi ** sp.Rational(3, 2), 1 + _r3 / _pi),
        5: (5 * (6 * sp.atan(_r2) - _pi) / (2 * _pi ** sp.Rational(3, 2)),
            1 + 5 * _r3 * sp.atan(sp.sqrt(15) / 3) / _pi**2),
    },
    "relu": {
        1: (1 / sp.sqrt(2 * _pi), sp.S.Half),
        2: ((1 + _r2) / (2 * sp.sqrt(_pi)), sp.Rational(3, 4) + 1 / (2 * _pi)),
        3: (3 * (_pi * (4 + _r2) - 4 * sp.atan(_r2)) / (8 * _pi ** sp.Rational(3, 2)),
            (6 + 2 * _r3 + 7 * _pi) / (8 * _pi)),
        4: ((6 + _r2) / (4 * sp.sqrt(_pi)), (36 + 32 * _r3 + 45 * _pi) / (48 * _pi)),
    },
}


def exact_mean(activation: str, kk: int):
    """E[M_k] as an exact SymPy expression in σ, or None where no closed form is registered."""
    pair = EXACT_MOMENTS[activation].get(kk)
    return None if pair is None else sigma * pair[0]


def exact_var(activation: str, kk: int):
    pair = EXACT_MOMENTS[activation].get(kk)
    return None if pair is None else sp.radsimp(sigma**2 * (pair[1] - pair[0] ** 2))


EXACT_TEXT = "exact closed forms for k <= 5 (identity) and k <= 4 (relu)"


@lru_cache(maxsize=None)
def _exact_values(activation: str):
    """{k: (mean, var)} at σ = 1 as floats (30-digit SymPy evaluation)."""
    return {kk: (float(sp.N(m, 30)), float(sp.N(s - m**2, 30))) for kk, (m, s) in EXACT_MOMENTS[activation].items()}


# --- quadrature --------------------------------------------------------------------------------------------------
X_OF_T = PhiInv(sp.exp(-sp.exp(-t) / k))     # the quantile of M_k at Gumbel level exp(-e^-t)
GUMBEL_WEIGHT = sp.exp(-t - sp.exp(-t))
N_GAUSS = 40
QUAD_ERROR = ("k-independent Gumbel substitution + 40-point Gauss rule for the weight e^{-t-e^{-t}}: relative error "
              "<= 1e-13 (mean: absolute 1e-13·sigma at k = 1) for 1 <= k <= 1e9, tested against mpmath")


@lru_cache(maxsize=None)
def gumbel_gauss_rule(n: int = N_GAUSS):
    """Nodes and weights of the n-point Gauss rule for the standard Gumbel density w(t) = e^{-t-e^{-t}}.

    Stieltjes procedure on the discrete measure of a fine trapezoid rule (h = 0.05 on [-5, 50]; the trapezoid is
    exact to ~1e-17 for this analytic, doubly-exponentially decaying weight), then Golub-Welsch.
    """
    tt = np.arange(-5.0, 50.0 + 0.025, 0.05)
    ww = 0.05 * np.exp(-tt - np.exp(-tt))
    ww /= ww.sum()
    alpha, beta = np.empty(n), np.empty(n)
    p_prev, p, norm, b_prev = np.zeros_like(tt), np.ones_like(tt), 1.0, 0.0
    for j in range(n):
        alpha[j] = ww @ (tt * p * p) / norm
        p_next = (tt - alpha[j]) * p - b_prev * p_prev
        norm_next = ww @ (p_next * p_next)
        beta[j] = norm_next / norm
        p_prev, p, norm, b_prev = p, p_next, norm_next, beta[j]
    off = np.sqrt(beta[:-1])
    nodes, vecs = np.linalg.eigh(np.diag(alpha) + np.diag(off, 1) + np.diag(off, -1))
    return nodes, vecs[0] ** 2


def quantile_at_gumbel(tt, kk):
    """x_k(t) = Φ^{-1}(exp(-e^{-t}/k)) from whichever tail is accurate (q = 1 - u by expm1)."""
    lam = np.exp(-tt) / kk
    q, u = -np.expm1(-lam), np.exp(-lam)
    return np.where(q < u, -1.0, 1.0) * special.ndtri(np.minimum(q, u))


def _identity_moments(kk: np.ndarray):
    """(E[M_k], Var[M_k]) for σ = 1 by the Gumbel-weight Gauss rule (kk: 1-d float array of distinct k)."""
    nodes, weights = gumbel_gauss_rule()
    xs = quantile_at_gumbel(nodes[None, :], kk[:, None])
    mean = row_dot(xs, weights)
    return mean, row_dot((xs - mean[:, None]) ** 2, weights)


K_RELU_TAIL = 64


@lru_cache(maxsize=None)
def _relu_tail_table():
    """c1[k] = ∫_0^∞ Q^k dy and c2[k] = k ∫_0^∞ y² φ Q^{k-1} dy, k < 64 (10-point composite Gauss-Legendre)."""
    gx, gw = np.polynomial.legendre.leggauss(10)
    edges = np.concatenate([np.linspace(0, 1, 41), np.linspace(1, 10, 19)[1:]])
    mid, half = (edges[1:] + edges[:-1]) / 2, (edges[1:] - edges[:-1]) / 2
    y, wy = (mid[:, None] + half[:, None] * gx).ravel(), (half[:, None] * gw).ravel()
    kk = np.arange(K_RELU_TAIL, dtype=float)[:, None]
    logq = special.log_ndtr(-y)[None, :]
    c1 = np.exp(kk * logq) @ wy
    c2 = (kk * y**2 * np.exp(-y * y / 2 - _LOG_SQ2PI + np.where(kk == 0, 0.0, (kk - 1) * logq))) @ wy
    return c1, c2


def _unit_moments(activation: str, kk: np.ndarray):
    """(mean, var) at σ = 1 for a 1-d array of distinct k values."""
    mean, var = _identity_moments(kk)
    if activation == "relu":
        c1, c2 = _relu_tail_table()
        small = kk < K_RELU_TAIL
        idx = kk[small].astype(int)
        m, v = mean[small], var[small]
        mean[small] = m + c1[idx]
        var[small] = v - c2[idx] - 2 * m * c1[idx] - c1[idx] ** 2
    exact = _exact_values(activation)
    for kk_exact, (m, v) in exact.items():
        hit = kk == kk_exact
        mean[hit], var[hit] = m, v
    return mean, var


def unit_moments(activation: str, kk):
    """(E[M_k], Var[M_k]) for σ = 1, vectorised over any array of k (evaluated once per distinct k)."""
    kk = np.asarray(kk, dtype=float)
    uniq, inv = np.unique(kk, return_inverse=True)
    mean, var = _unit_moments(activation, uniq)
    return mean[inv].reshape(kk.shape), var[inv].reshape(kk.shape)


# --- mpmath reference route (independent: quadrature of the defining integral in x) ----------------------------
def mp_moments(activation: str, kk, sig=1):
    """(E[M_k], Var[M_k]) by mpmath.quad of ∫ x^n dΦ(x/σ)^k at the working precision (σ = 1 moments cached per
    (activation, k, precision): the domain test and the forms ask for the same k at many σ)."""
    sig = mpmath.mpf(sig)
    m, var = _mp_unit_moments(activation, int(kk), mpmath.mp.prec)
    return sig * m, sig**2 * var


@lru_cache(maxsize=256)
def _mp_unit_moments(activation: str, kk: int, prec: int):
    with mpmath.workprec(prec):
        centre = mpmath.sqrt(2 * mpmath.log(kk)) if kk > 1 else mpmath.mpf(0)
        width = 1 / max(centre, 1)
        lo = 0 if activation == "relu" else -mpmath.inf
        pts = [lo] + [p for p in (centre + j * width for j in (-6, -2, 0, 2, 6)) if p > lo] + [mpmath.inf]

        def dens(y):
            return kk * mpmath.npdf(y) * mpmath.exp((kk - 1) * mpmath.log(mpmath.ncdf(y))) if kk > 1 else \
                mpmath.npdf(y)
        # k = 1, identity: the integrand is odd, E[M_1] = 0 exactly (quadrature would leave a rounding residue)
        m = mpmath.mpf(0) if kk == 1 and activation == "identity" else mpmath.quad(lambda y: y * dens(y), pts)
        if activation == "relu":
            var = mpmath.quad(lambda y: y * y * dens(y), pts) - m * m
        else:
            var = mpmath.quad(lambda y: (y - m) ** 2 * dens(y), pts)
        return m, var
