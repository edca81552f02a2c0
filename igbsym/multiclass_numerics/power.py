"""E[Phi_2(T1, T2; rho)^k] over a standard bivariate normal (T1, T2) of correlation rho: the two-dimensional
reduction of the multiclass second moment and dominant-class mean (IGB paper App. H; derivations/multiclass.py).

* E[G_c^2]     = M(rho, C - 1), rho = gamma/(1 + gamma)             (two data points, one weight draw)
* E[max_c G_c] = C M(r, C - 1),  r = sqrt(gamma/(1 + gamma))        (P(argmax u = argmax(u + eps)))

``moment_excess`` returns M(rho, k) - 1/(k + 1)^2 (= Var G_c for rho = gamma/(1+gamma)) without cancellation:
at the same node (t1, t2) the integrand phi_2(t; rho) P^k - phi(t1) phi(t2) Q^k (P = Phi_2(t1, t2; rho),
Q = Phi(t1) Phi(t2), whose integral is 1/(k+1)^2) is formed as phi phi Q^k expm1(log c + k log1p(Delta/Q)), with
c = phi_2/(phi phi) in closed form and Delta = P - Q by Drezner's integral (1/2 pi) int_0^asin(rho) exp(-(t1^2 +
t2^2 - 2 t1 t2 sin th)/(2 cos^2 th)) dth (positive integrand, full relative precision) for rho <= RHO_DREZNER.

Quadrature: one fixed rule in t for every k <= 1e4 and every rho (composite 8-node Gauss-Legendre on T_EDGES,
panels of width 1/4 on [-9.5, 9.5]; the mass of phi(t) Phi(t)^k sits at sqrt(2 ln k) <= 4.3 with width
>= 1/sqrt(2 ln k) ~ 0.23, resolved to < 1e-14 relative: measured against the former per-k Gumbel-variable rule and
a rule of panels 3/8, which is already within 7e-12). So the Phi_2 work (Drezner / Owen's T at every node pair) is
done once per rho and shared by every k (moment_excess_many: the C of one gamma). For rho > RHO_SPLIT the copula c is
a ridge of width ~sqrt(1 - rho) along t1 = t2, so there the route is (t1, y), t2 = rho t1 + r y (r = sqrt(1 - rho^2)
passed exactly, never 1 - rho rounded), y ~ N(0, 1) on fine panels, and the excess is M - 1/(k+1)^2 (no
cancellation there: the excess is >= 1/3 of M).

Stated relative error (POWER_ERROR) measured against the mpmath reference (mp_moment) and the exact k = 1 value
1/4 + asin(rho)/(2 pi).
"""
from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..gauss import bvn_cdf, composite_gauss_legendre, gauss_legendre

RHO_SPLIT = 0.9        # above: the (tau_1, y) route (copula ridge), below: (tau_1, tau_2)
RHO_DREZNER = 0.5      # at or below: Delta = P - Q by Drezner's integral (relative); above: log P - log Q
N_THETA = 16           # Gauss-Legendre nodes of Drezner's integral on [0, asin rho], rho <= 0.5
T_EDGES = np.linspace(-9.5, 9.5, 77)   # panels of width 1/4 in t (one rule for every k <= 1e4 and every rho)
T_POINTS = 8
Y_EDGES = np.linspace(-9.0, 9.0, 37)
POWER_ERROR = 1e-12    # stated relative error of moment_excess and M (see tests/test_multiclass_power.py)
_SQ2PI = math.sqrt(2 * math.pi)


def _log_upper_cdf(t1, t2, rho, r):
    """log P, P = Phi_2(t1, t2; rho) = 1 - tail, tail = Phi(-t1) + Phi(-t2) - Phi_2(-t1, -t2; rho) (Owen's T with the
    exact r), so log1p(-tail) keeps the upper tail (P near 1) to full precision."""
    upper = bvn_cdf(-t1, -t2, rho, r)                     # P(X > t1, Y > t2)
    tail = special.ndtr(-t1) + special.ndtr(-t2) - upper
    with np.errstate(divide="ignore"):
        return np.log1p(-np.clip(tail, 0.0, 1.0))



def _drezner_delta(t1, t2, rho):
    """Phi_2(t1, t2; rho) - Phi(t1) Phi(t2) = (1/2pi) int_0^asin(rho) exp(-(t1^2 + t2^2 - 2 t1 t2 sin th)/(2 cos^2 th))
    dth, N_THETA-node Gauss-Legendre (rho <= RHO_DREZNER: the integrand is analytic well beyond the interval)."""
    x, w = gauss_legendre(N_THETA)
    half = math.asin(rho) / 2
    th = half * (1 + x)
    sn, c2 = np.sin(th), 2 * np.cos(th) ** 2
    q = (t1 * t1 + t2 * t2)[..., None]
    return np.exp(-(q - 2 * (t1 * t2)[..., None] * sn) / c2) @ (half * w) / (2 * np.pi)


def moment_excess(rho: float, k: float, r: float | None = None) -> tuple:
    """(M, M - 1/(k+1)^2) for M = E[Phi_2(T1, T2; rho)^k], 0 <= rho < 1 (r = sqrt(1 - rho^2), pass it exactly when
    rho is near 1), k >= 1. Relative error <= POWER_ERROR on both (module docstring).
    One point of moment_excess_many."""
    m, ex = moment_excess_many(rho, np.array([float(k)]), r)
    return float(m[0]), float(ex[0])


def moment_excess_many(rho: float, ks, r: float | None = None) -> tuple:
    """(M, M - 1/(k+1)^2) at every k of ``ks`` for one rho (arrays): the expensive part (the copula log c and
    log P - log Q at every node pair, by Drezner's integral or Owen's T) is formed once on the fixed T_EDGES rule and
    shared by every k; per k only exp(k log Q) and the expm1 of the excess remain (App. H, Var G_c = M(rho, C - 1) -
    1/C^2 and E max G_c = C M(r, C - 1); why: the C of one gamma share all the Phi_2 work). Relative error
    <= POWER_ERROR (module docstring)."""
    ks = np.asarray(ks, float).ravel()
    if r is None:
        r = math.sqrt((1 - rho) * (1 + rho))
    base = 1 / (ks + 1) ** 2
    if rho == 0:
        return base, np.zeros_like(ks)
    t, w = composite_gauss_legendre(T_EDGES, T_POINTS)
    log_w = np.log(w) - t * t / 2 - 0.5 * math.log(2 * math.pi)           # log(w phi(t))
    if rho > RHO_SPLIT:
        m = _moment_ridge(rho, r, ks, t, np.exp(log_w))
        return m, m - base
    i, j = np.triu_indices(t.size)                 # the integrand is symmetric in (t1, t2): the upper triangle,
    t1, t2 = t[i], t[j]                            # off-diagonal pairs counted twice
    log_phi = special.log_ndtr(t)
    lq = log_phi[i] + log_phi[j]
    log_c = -0.5 * math.log1p(-rho * rho) - (rho * rho * (t1 * t1 + t2 * t2) - 2 * rho * t1 * t2) / (2 * r * r)
    if rho <= RHO_DREZNER:
        log_ratio = np.log1p(_drezner_delta(t1, t2, rho) / np.exp(lq))
    else:
        log_ratio = _log_upper_cdf(t1, t2, rho, r) - lq
    log_pair = log_w[i] + log_w[j] + np.where(i == j, 0.0, math.log(2))
    excess = np.empty_like(ks)
    for n, k in enumerate(ks):
        b = log_pair + k * lq                      # log of the weight w phi phi Q^k of the pair
        keep = b > -745.0                          # the rest underflow (their excess term is < e^-745 e^(a) too)
        a, b = log_c[keep] + k * log_ratio[keep], b[keep]
        big = a > 1.0                              # e^b expm1(a) = e^(a+b) - e^b without inf * 0 where a is large
        excess[n] = np.sum(np.where(big, np.exp(np.where(big, a + b, 0.0)) - np.exp(b), np.exp(b) *
                                    np.expm1(np.minimum(a, 1.0))))
    return excess + base, excess


def _moment_ridge(rho, r, ks, t1, w1):
    """M by (t1, y): t2 = rho t1 + r y, y on Y_EDGES panels, t1 on the fixed rule (weights w1 include phi(t1))."""
    y, wy = composite_gauss_legendre(Y_EDGES, 8)
    wy = wy * np.exp(-y * y / 2) / _SQ2PI
    lp = _log_upper_cdf(t1[:, None], rho * t1[:, None] + r * y[None, :], rho, r)
    return np.array([(np.exp(k * lp) @ wy) @ w1 for k in ks])


def mp_phi2(h, q, rho):
    """Phi_2(h, q; rho) in mpmath: Phi(h) Phi(q) + (1/2pi) int_0^asin(rho) exp(-(h^2 + q^2 - 2 h q sin t)/(2 cos^2 t))
    dt (Drezner 1978), the integral by mpmath.quad (tanh-sinh) at the working precision."""
    import mpmath
    f = lambda t: mpmath.exp(-(h * h + q * q - 2 * h * q * mpmath.sin(t)) / (2 * mpmath.cos(t) ** 2))  # noqa: E731
    return mpmath.ncdf(h) * mpmath.ncdf(q) + mpmath.quad(f, [0, mpmath.asin(rho)]) / (2 * mpmath.pi)


def mp_moment(rho, k: int, dps: int = 32, panel: float = 2.0, degree: int = 4, reach: float = 11.0):
    """Independent mpmath reference for M = E[Phi_2(T1, T2; rho)^k]: plain variables (t1, y), t2 = rho t1 + r y, each
    on a composite Gauss-Legendre rule (mpmath nodes, 3 2^(degree-1) per panel of width ``panel`` on [-reach, reach];
    the
    cut Gaussian mass is < 1e-27 at reach 11), Phi_2 by mp_phi2 (Drezner's integral by tanh-sinh). Not the NumPy
    route's variables, rule or Phi_2. Its discretisation error is estimated by the caller from two rule sizes
    (tests/test_multiclass_power.py records both). Minutes per point at dps 32 (test data, not a form's route)."""
    import mpmath
    with mpmath.workdps(dps):
        rho = mpmath.mpf(rho)
        r = mpmath.sqrt((1 - rho) * (1 + rho))
        pts = mpmath.calculus.quadrature.GaussLegendre(mpmath.mp).calc_nodes(degree, mpmath.mp.prec)
        edges = [mpmath.mpf(-reach) + panel * i for i in range(int(round(2 * reach / panel)) + 1)]
        rule = []
        for a, b in zip(edges[:-1], edges[1:]):
            half, mid = (b - a) / 2, (a + b) / 2
            rule += [(mid + half * xx, half * ww * mpmath.npdf(mid + half * xx)) for xx, ww in pts]
        total = mpmath.mpf(0)
        for t1, w1 in rule:
            total += w1 * mpmath.fsum(wy * mp_phi2(t1, rho * t1 + r * y, rho) ** k for y, wy in rule)
        return total
