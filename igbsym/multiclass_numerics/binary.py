"""C = 2 (IGB paper App. H): G_0 = Phi(sqrt(gamma) Z), the igb law, gives closed forms or 1-d rules for p_empty
(p_empty_binary: a t rule, or a log-space z rule below gamma = T_ROUTE_MIN), the entropy (binary_entropy: a
Gauss-Legendre rule in the integrand's own scale), and at finite D max_fraction and max_fraction_cdf (binomial closed
forms integrated over the igb law, relative BINARY_COUNT_ERROR); and the mpmath references of C = 2."""
from __future__ import annotations

import math

import mpmath
import numpy as np
from scipy import optimize, special, stats

from ..errors import NumericalError
from ..gauss import composite_gauss_legendre
from .common import SQ2PI, probit
from .observed import entropy_kernel
from .products import inverse_mills


def _t_rule(n_panels, n):
    """Gauss-Legendre in xi = log t over [-25, log 50] for int_0^inf e^-t F(1 - e^(-t/D)) dt (t = e^xi)."""
    xi, w = composite_gauss_legendre(np.linspace(-25.0, math.log(50.0), n_panels + 1), n)
    t = np.exp(xi)
    return t, w * t * np.exp(-t)


_T2, _T2_W = _t_rule(15, 16)           # exact C = 2 route: relative error <= 2e-9 (tested against mpmath)


def p_empty_binary(gamma, D):
    """C = 2: E[Phi(-sqrt(gamma) Z)^D] (G_0 = Phi(sqrt(gamma) Z), the igb law).
    For gamma >= T_ROUTE_MIN the t-substitution with the exact igb cdf; below it the step of P(G <= g) at g = 1/2 (width
    ~ sqrt(gamma) in log t) is not resolved by the t rule (1.3 % off at gamma = 1e-8, 4e-5 at 0.01), so the z route
    (_p_empty_binary_z) is used up to gamma D = Z_ROUTE_MAX and NumericalError is raised beyond (never a wrong value).
    The two routes agree to <= 7e-14 where both apply (gamma in [0.2, 1], D <= 1e6; exact 1/(D + 1) at gamma = 1)."""
    if gamma < T_ROUTE_MIN:
        if gamma * D > Z_ROUTE_MAX:
            raise NumericalError(f"multiclass.p_empty: C = 2 with gamma = {gamma:g} < {T_ROUTE_MIN} and gamma*D = "
                                 f"{gamma * D:g} > {Z_ROUTE_MAX:g} is outside the accurate range of both quadrature "
                                 "rules")
        return _p_empty_binary_z(gamma, D)
    g = -np.expm1(-_T2 / D)
    return float(special.ndtr(probit(g) / math.sqrt(gamma)) @ _T2_W)


Z_ROUTE_MAX = 1e6     # gamma D bound of the z route (its cost: 800 sqrt(1 + gamma D) nodes)
T_ROUTE_MIN = 0.2     # smallest gamma at which the t rule meets the stated 2e-9 (measured against mpmath quadrature)


def _p_empty_binary_z(gamma, D):
    """int phi(z) Phi(-s z)^D dz, s = sqrt(gamma), in log space: the log-integrand is concave with curvature in
    [1, 1 + gamma D], so around its mode z0 (a bracketed root) the trapezoid rule with step 0.1/sqrt(1 + gamma D)
    over z0 +- 40 is accurate to rounding (f <= f(z0) exp(-(z - z0)^2/2) bounds the cut tails by e^-800)."""
    s = math.sqrt(gamma)

    z0 = 0.0 if s == 0 else optimize.brentq(lambda z: -z - D * s * inverse_mills(-s * z), -0.8 * D * s - 1.0, 0.0,
                                             xtol=1e-12, rtol=1e-15)
    h = 0.1 / math.sqrt(1.0 + gamma * D)
    z = z0 + h * np.arange(-math.ceil(40 / h), math.ceil(40 / h) + 1)
    log_f = -z * z / 2 + D * special.log_ndtr(-s * z)
    top = log_f.max()
    return float(math.exp(top + math.log(np.exp(log_f - top).sum() * h / SQ2PI)))


_X, _X_W = composite_gauss_legendre(np.linspace(-40.0, 40.0, 81), 16)   # h(Phi(x)) < 1e-300 beyond |x| = 37


def binary_entropy(gamma, D: float = math.inf):
    """E h(Phi(s Z)), h(p) = -p log p - (1-p) log(1-p), s = sqrt(gamma) (C = 2): 16-node Gauss-Legendre on unit panels
    of [-40, 40], in z for s < 1 and in x = s z (weight phi(x/s)/s) for s >= 1, so the rule follows the integrand's
    scale at every gamma (entropy ~ 1/s for large s). Finite D: h(p) -> psi_D(p) + psi_D(1 - p), the expected entropy
    of binomial(D, p)/D (observed.entropy_kernel)."""
    s = np.sqrt(gamma)[:, None]
    small = s < 1
    t = np.where(small, s * _X, _X)                                      # the argument of Phi
    weight = np.where(small, np.exp(-_X**2 / 2), np.exp(-(_X / np.where(small, 1.0, s)) ** 2 / 2) / s) / SQ2PI
    p, q = special.ndtr(t), special.ndtr(-t)
    if math.isinf(D):
        h = -(p * special.log_ndtr(t) + q * special.log_ndtr(-t))
    else:
        h = entropy_kernel(p, q, int(D))[0] + entropy_kernel(q, p, int(D))[0]
    return (weight * h) @ _X_W


BINARY_COUNT_ERROR = 1e-10   # relative error of the C = 2 finite-D routes (max_fraction_binary, max_cdf_binary)


def max_fraction_binary(gamma: float, D: int) -> float:
    """C = 2, finite D: E[max(K, D - K)]/D, K | Z ~ Binomial(D, p), p = Phi(sqrt(gamma) Z) (the igb law). Exactly
    max(K, D - K) = D/2 + |K - D/2| and E|K - c| = E K - c + 2 E(c - K)^+ with
    E(c - K)^+ = c F_D(m) - D p F_(D-1)(m - 1), m = ceil(c) - 1 (k pmf_D(k) = D p pmf_(D-1)(k - 1)), F_n the
    binomial cdf (regularised incomplete beta): one
    closed form per node, integrated over Z (phi(z) < 1e-31 beyond |z| = 12) by 16-node Gauss-Legendre on quarter
    panels of [-12, 12] refined geometrically towards z = 0, where |K - D/2| has its kink smoothed over a width
    ~ 1/(sqrt(gamma D)) in z. Relative error <= 1e-10 (tests: scipy quad of the binomial sum)."""
    width = 0.25 / math.sqrt(gamma * D)
    near = width * 2.0 ** np.arange(0, max(1, math.ceil(math.log2(12 / width))))
    near = near[near < 12]
    z, w = composite_gauss_legendre(np.unique(np.concatenate([np.linspace(-12.0, 12.0, 97), near, -near])), 16)
    p = special.ndtr(math.sqrt(gamma) * z)
    c = D / 2
    m = math.ceil(c) - 1
    below = c * stats.binom.cdf(m, D, p) - D * p * stats.binom.cdf(m - 1, D - 1, p)
    mad = D * p - c + 2 * below
    return float((w * np.exp(-z * z / 2) / SQ2PI) @ (c + mad)) / D


PMF_TERMS = 64   # binomial window probabilities sum their pmf terms over windows of at most this many counts


def window_probability(lo: int, hi: int, D: int, p: np.ndarray) -> np.ndarray:
    """P(lo <= K <= hi), K ~ binomial(D, p), for p [n] >= 1/2 (so F_D(lo - 1) is the smaller cdf): the cdf
    difference, or where the window has at most PMF_TERMS counts its pmf terms (the difference cancels there: at
    D = 1e9, hi = lo = D/2 it lost 1e-8 relative)."""
    if hi - lo + 1 <= PMF_TERMS:
        return stats.binom.pmf(np.arange(lo, hi + 1)[None], D, p[:, None]).sum(1)
    return stats.binom.cdf(hi, D, p) - stats.binom.cdf(lo - 1, D, p)


def max_cdf_binary(ks: np.ndarray, gamma: float, D: int) -> np.ndarray:
    """C = 2, finite D: P(max(K, D - K) <= k) = P(D - k <= K <= k), K | Z ~ binomial(D, p), p = Phi(sqrt(gamma) Z)
    (the igb law): 2 int_0^12 phi(z) P(D - k <= K <= k | p) dz (even in z; p >= 1/2 on z >= 0; window_probability),
    16-node Gauss-Legendre on 49 panels of [0, 12] refined geometrically towards the edge z_e where p = k/D, which
    the window's probability falls off across over a width sqrt(p (1 - p)/D)/(sqrt(gamma) phi(Phi^-1(p))) (at
    k ~ D/2 the edge is z = 0). gamma = 0: p = 1/2 exactly. Relative error <= 1e-10 (tests: an mpmath Beta mixture
    of the igb law; the uniform law, gamma = 1, up to D = 1e9: <= 2e-11 measured)."""
    ks = np.asarray(ks, np.int64)
    out = np.where(ks >= D, 1.0, 0.0)
    for i in np.nonzero((2 * ks >= D) & (ks < D))[0]:
        k = int(ks[i])
        if gamma == 0:
            out[i] = window_probability(D - k, k, D, np.array([0.5]))[0]
            continue
        s = math.sqrt(gamma)
        x = float(special.ndtri(k / D))
        edge, width = x / s, math.sqrt(k * (D - k) / D**3) / (s * math.exp(-x * x / 2) / SQ2PI)
        steps = 2.0 ** np.arange(-2, 40)
        breaks = np.concatenate([np.linspace(0.0, 12.0, 49), edge + width * steps, edge - width * steps])
        z, w = composite_gauss_legendre(np.unique(breaks[(breaks >= 0) & (breaks <= 12)]), 16)
        inner = window_probability(D - k, k, D, special.ndtr(s * z))
        out[i] = 2 * float((w * np.exp(-z * z / 2) / SQ2PI) @ inner)
    return out


def _no_vector_reference(name, C, D):
    if int(C) != 2 or D != mpmath.inf:
        raise NumericalError(f"{name}: no mpmath reference for C >= 3 or finite D (Monte Carlo route; see "
                             "vector_samples)")


def binary_max_mp(gamma, C, D):
    _no_vector_reference("multiclass.max_fraction", C, D)
    return mpmath.mpf(1) / 2 + mpmath.atan(mpmath.sqrt(gamma)) / mpmath.pi


def binary_max_cdf_mp(g, gamma, C, D):
    """C = 2: P(max(G, 1 - G) <= g) = P(|Z| <= Phi^-1(g)/sqrt(gamma)) = erf(erfinv(2g - 1)/sqrt(gamma)) for g >= 1/2."""
    _no_vector_reference("multiclass.max_fraction_cdf", C, D)
    if g < mpmath.mpf(1) / 2:
        return mpmath.mpf(0)
    if gamma == 0 or g == 1:
        return mpmath.mpf(1)
    return mpmath.mpf(0) if gamma == mpmath.inf else mpmath.erf(mpmath.erfinv(2 * g - 1) / mpmath.sqrt(gamma))


def binary_entropy_mp(gamma, C, D):
    """C = 2: E h(Phi(s Z)); for s > 1 in x = s z (the integrand's scale is 1 in x: a spike of width 1/s in z), on
    [-X, X] with X = sqrt(2 (dps + 10) ln 10): the integrand is <= phi(|x|) (1 + x^2) beyond, so the cut tails are
    below 10^-(dps + 5) of the value (an infinite interval put tanh-sinh nodes at x ~ 1e125 for s = 1e125 and missed
    the bump: 7.2013e-126 for 7.2065e-126 at both 30 and 50 digits)."""
    _no_vector_reference("multiclass.entropy", C, D)
    s = mpmath.sqrt(gamma)
    X = mpmath.sqrt(2 * (mpmath.mp.dps + 10) * mpmath.log(10))
    ends = [-X, -8, -3, -1, 0, 1, 3, 8, X]

    def h(x):
        p, q = mpmath.ncdf(x), mpmath.ncdf(-x)
        return -(p * mpmath.log(p) + q * mpmath.log(q)) if p > 0 and q > 0 else mpmath.mpf(0)
    if s > 1:
        return mpmath.quad(lambda x: mpmath.npdf(x / s) * h(x), ends) / s
    return mpmath.quad(lambda z: mpmath.npdf(z) * h(s * z), ends)
