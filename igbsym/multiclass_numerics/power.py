"""E[Phi_2(T1, T2; rho)^k] over a standard bivariate normal (T1, T2) of correlation rho: the two-dimensional
reduction of the multiclass second moment and dominant-class mean (IGB paper App. H; derivations/multiclass.py).

* E[G_c^2]     = M(rho, C - 1), rho = gamma/(1 + gamma)             (two data points, one weight draw)
* E[max_c G_c] = C M(r, C - 1),  r = sqrt(gamma/(1 + gamma))        (P(argmax u = argmax(u + eps)))

``moment_excess`` returns M(rho, k) - 1/(k + 1)^2 (= Var G_c for rho = gamma/(1+gamma)) without cancellation:
at the same node (t1, t2) the integrand phi_2(t; rho) P^k - phi(t1) phi(t2) Q^k (P = Phi_2(t1, t2; rho),
Q = Phi(t1) Phi(t2), whose integral is 1/(k+1)^2) is formed as phi phi Q^k expm1(log c + k log1p(Delta/Q)), with
c = phi_2/(phi phi) in closed form and Delta = P - Q by Drezner's integral (1/2 pi) int_0^asin(rho) exp(-(t1^2 +
t2^2 - 2 t1 t2 sin th)/(2 cos^2 th)) dth (positive integrand, full relative precision) for rho <= RHO_DREZNER.

Quadrature (the integrand's mass follows Phi(t)^k, which for large k sits at sqrt(2 ln k) with width
1/sqrt(2 ln k)): each t_i in its Gumbel variable tau_i, Phi(t_i) = exp(-e^-tau_i / k), where phi(t) Phi(t)^k dt =
exp(-tau - e^-tau (1 + 1/k))/k dtau is a fixed bell for every k (composite Gauss-Legendre on TAU_EDGES). For
rho > RHO_SPLIT the copula c is a ridge of width ~sqrt(1 - rho) along t1 = t2, so there the route is (tau_1, y),
t2 = rho t1 + r y (r = sqrt(1 - rho^2) passed exactly, never 1 - rho rounded), y ~ N(0, 1) on fine panels, and
the excess is M - 1/(k+1)^2 (no cancellation there: the excess is >= 1/3 of M).

Stated relative error (POWER_ERROR) measured against the mpmath reference (mp_moment) and the exact k = 1 value
1/4 + asin(rho)/(2 pi).
"""
from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..extreme import quantile_at_gumbel
from ..gauss import composite_gauss_legendre, gauss_legendre

RHO_SPLIT = 0.9        # above: the (tau_1, y) route (copula ridge), below: (tau_1, tau_2)
RHO_DREZNER = 0.5      # at or below: Delta = P - Q by Drezner's integral (relative); above: log P - log Q
N_THETA = 16           # Gauss-Legendre nodes of Drezner's integral on [0, asin rho], rho <= 0.5
TAU_EDGES = np.concatenate([np.arange(-4.0, 2.0, 0.5), np.arange(2.0, 10.0, 1.0), np.arange(10.0, 40.0, 3.0)])
Y_EDGES = np.linspace(-9.0, 9.0, 37)
POWER_ERROR = 1e-12    # stated relative error of moment_excess and M (see tests/test_multiclass_power.py)
_SQ2PI = math.sqrt(2 * math.pi)


def _tau_rule(points: int = 8):
    return composite_gauss_legendre(TAU_EDGES, points)


def _gumbel(tau, k):
    """(t, log Phi(t), weight phi(t) Phi(t)^k dt/dtau) at tau for Phi(t) = exp(-e^-tau / k)."""
    e = np.exp(-tau)
    return quantile_at_gumbel(tau, k), -e / k, np.exp(-tau - e * (1 + 1 / k)) / k


def _log_upper_cdf(t1, t2, rho, r):
    """log P, P = Phi_2(t1, t2; rho) = 1 - tail, tail = Phi(-t1) + Phi(-t2) - Phi_2(-t1, -t2; rho) (Owen's T with the
    exact r), so log1p(-tail) keeps the upper tail (P near 1) to full precision."""
    upper = bvn_upper(t1, t2, rho, r)
    tail = special.ndtr(-t1) + special.ndtr(-t2) - upper
    with np.errstate(divide="ignore"):
        return np.log1p(-np.clip(tail, 0.0, 1.0))


def bvn_upper(a, b, rho, r):
    """P(X > a, Y > b) for a standard bivariate normal of correlation rho, r = sqrt(1 - rho^2) given exactly (Owen's
    T; the formula of multiclass.bvn_cdf at (-a, -b))."""
    a, b = np.broadcast_arrays(-np.asarray(a, float), -np.asarray(b, float))
    sa, sb = np.sign(a), np.sign(b)
    beta = np.where((sa * sb < 0) | ((sa * sb == 0) & (a + b < 0)), 0.5, 0.0)
    with np.errstate(all="ignore"):
        ta = np.where(a == 0, np.sign(b - rho * a) / 4, special.owens_t(a, (b / a - rho) / r))
        tb = np.where(b == 0, np.sign(a - rho * b) / 4, special.owens_t(b, (a / b - rho) / r))
    out = 0.5 * (special.ndtr(a) + special.ndtr(b)) - ta - tb - beta
    return np.where((a == 0) & (b == 0), 0.25 + np.arcsin(rho) / (2 * np.pi), out)


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
    rho is near 1), k >= 1. Relative error <= POWER_ERROR on both (module docstring)."""
    if r is None:
        r = math.sqrt((1 - rho) * (1 + rho))
    base = 1 / (k + 1) ** 2
    if rho == 0:
        return base, 0.0
    if rho > RHO_SPLIT:
        m = _moment_ridge(rho, r, k)
        return m, m - base
    tau, w = _tau_rule()
    t, log_phi, g = _gumbel(tau, k)
    i, j = np.triu_indices(t.size)                 # the integrand is symmetric in (t1, t2): the upper triangle,
    t1, t2 = t[i], t[j]                            # off-diagonal pairs counted twice
    lq = log_phi[i] + log_phi[j]
    log_c = -0.5 * math.log1p(-rho * rho) - (rho * rho * (t1 * t1 + t2 * t2) - 2 * rho * t1 * t2) / (2 * r * r)
    if rho <= RHO_DREZNER:
        k_log_ratio = k * np.log1p(_drezner_delta(t1, t2, rho) / np.exp(lq))
    else:
        k_log_ratio = k * (_log_upper_cdf(t1, t2, rho, r) - lq)
    weight = (g * w)[i] * (g * w)[j] * np.where(i == j, 1.0, 2.0)
    excess = float(weight @ np.expm1(log_c + k_log_ratio))
    return excess + base, excess


def _moment_ridge(rho, r, k):
    """M by (tau_1, y): t2 = rho t1 + r y, phi(t1) dt1 = exp(-tau - e^-tau/k)/k dtau, y on Y_EDGES panels."""
    tau, wt = _tau_rule()
    e = np.exp(-tau)
    t1 = quantile_at_gumbel(tau, k)
    dens = np.exp(-tau - e / k) / k
    y, wy = composite_gauss_legendre(Y_EDGES, 8)
    wy = wy * np.exp(-y * y / 2) / _SQ2PI
    t2 = rho * t1[:, None] + r * y[None, :]
    lp = _log_upper_cdf(t1[:, None], t2, rho, r)
    return float((np.exp(k * lp) @ wy * dens) @ wt)


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
