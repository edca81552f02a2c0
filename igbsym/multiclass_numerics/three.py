"""C = 3: functionals of the law of one class fraction as deterministic 2-d integrals (IGB paper App. H; the law
G_1 = int phi(z) Phi(z - d_2) Phi(z - d_3) dz = Phi_2(-d_2/sqrt 2, -d_3/sqrt 2; 1/2) of the differences
d_j = u_j - u_1, (d_2, d_3) ~ N(0, gamma [[2, 1], [1, 2]])).

E[F(G_1)] (p_empty: F = (1 - G)^D; entropy: F = -G log G) is integrated over the ordered differences
m = max(d_2, d_3), delta = |d_2 - d_3| >= 0 (weight 2: G is symmetric), in log space around the integrand's own
peak: the mode m* of log(density) + log F on delta = 0 (bounded scalar search), composite Gauss-Legendre panels
growing geometrically (ratio 2) from m* in both directions and from delta = 0, out to where the log-integrand has
dropped by LOG_DROP below its peak (the integrand is then < e^-LOG_DROP of the peak; the density keeps decaying
like a Gaussian beyond, so the cut tails are negligible relative to the value). So a rare-event probability such as
p_empty(gamma = 0.1, C = 3, D = 1000) ~ 1e-13 keeps its relative precision (plain sampling never visits the region).
The law of G_1 (cdf, pdf) needs G_1 to full relative precision down to g = 1e-300: Owen's T (bvn_cdf) is only
absolutely accurate (~1e-17), so below TAIL_SWITCH the root finder takes log G_1 from Drezner's positive form
(log_phi2_half); the functionals do not need it (they weigh G, not its relative error). Stated relative error
THREE_ERROR (self-convergence and mpmath references, tests/test_multiclass_exact.py).
"""
from __future__ import annotations

import math
from functools import lru_cache
from fractions import Fraction

import numpy as np
from scipy import optimize, special

from ..errors import NumericalError
from ..gauss import composite_gauss_legendre, gauss_legendre
from ..gauss import bvn_cdf
from .observed import entropy_kernel, log_entropy_kernel

PANEL_CAP = 1.0       # widest panel where G_1 still changes (|d| <= CAP_ZONE)
CAP_ZONE = 24.0
LOG_DROP = 75.0       # integrate out to where the log-integrand is this far below its peak
N_GL = 16             # Gauss-Legendre nodes per panel
THREE_ERROR = 1e-10   # stated relative error of the C = 3 functionals
_SQ2 = math.sqrt(2.0)
_R_HALF = math.sqrt(0.75)


TAIL_SWITCH = 1e-4    # below: Phi_2(a, b; 1/2) by Drezner's positive integral (log_phi2_half), not by Owen's T
THETA_HALVINGS = 20   # its panels halve towards the integrand's peak down to 2^-20 of each side (widths
                      # ~1/(a^2 + b^2) >= 1e-4 where it is used: log Phi(min(a, b)) >= LOG_FLOOR)
LOG_FLOOR = -800.0    # below: log G is set to its upper bound log Phi(min(a, b)) (G < 1e-347 underflows anyway)
BISECT_EXACT_BELOW = 1e-10   # root_d2 bisects with the tail-exact G only for g below this (Owen's T decides the
                             # sign elsewhere; the Newton steps always use it)


@lru_cache(maxsize=1)
def _unit_rule() -> tuple:
    """(v, w): 16-node Gauss-Legendre on [0, 1], panels halving towards v = 0 down to 2^-THETA_HALVINGS."""
    return composite_gauss_legendre(np.concatenate([[0.0], 2.0 ** -np.arange(THETA_HALVINGS, -1, -1)]), N_GL)


def log_phi2_half(a, b) -> np.ndarray:
    """log Phi_2(a, b; 1/2) with full relative precision however small (also below 1e-308): Drezner & Wesolowsky's
    form of Plackett's identity, Phi_2(a, b; rho) = Phi(a) Phi(b) + (1/2 pi) int_0^asin(rho) exp(-(a^2 + b^2 -
    2ab sin t)/(2 cos^2 t)) dt, whose two terms are positive for rho > 0 (no cancellation), summed in log space. The
    exponent peaks at sin t* = min(|a|, |b|)/max(|a|, |b|) (ab > 0; at the end pi/6 if that exceeds 1/2) or at t = 0
    (ab <= 0), with width down to ~1/(a^2 + b^2): [0, t*] and [t*, pi/6] each carry _unit_rule refined towards t*."""
    a, b = np.broadcast_arrays(np.asarray(a, float), np.asarray(b, float))
    v, w = _unit_rule()
    out = np.empty(a.shape)
    fa, fb, flat = a.ravel(), b.ravel(), out.reshape(-1)
    h = math.pi / 6
    for s0 in range(0, fa.size, 256):
        x, y = fa[s0:s0 + 256, None], fb[s0:s0 + 256, None]
        big = np.maximum(np.abs(x), np.abs(y))
        ratio = np.where((x * y > 0) & (big > 0), np.minimum(np.abs(x), np.abs(y)) / np.where(big > 0, big, 1.0), 0.0)
        peak = np.arcsin(np.minimum(ratio, 0.5))
        t = np.concatenate([peak - peak * v, peak + (h - peak) * v], axis=1)
        wt = np.concatenate([peak * w, (h - peak) * w], axis=1)
        sin, cos2 = np.sin(t), np.cos(t) ** 2
        L = -(x * x + y * y - 2 * x * y * sin) / (2 * cos2)
        top = L.max(1, keepdims=True)
        log_int = top[:, 0] + np.log((np.exp(L - top) * wt).sum(1)) - math.log(2 * math.pi)
        flat[s0:s0 + 256] = np.logaddexp(special.log_ndtr(x[:, 0]) + special.log_ndtr(y[:, 0]), log_int)
    return out


def log_fraction(d2, d3, exact_tails: bool = False):
    """(log G_1, log(1 - G_1)) at differences (d2, d3): G_1 = Phi_2(a, b; 1/2), a = -d2/sqrt 2, b = -d3/sqrt 2; each
    from the side where it is small: Owen's T (bvn_cdf) where both are >= TAIL_SWITCH, else that side in log space,
    log G = log_phi2_half(a, b), log(1 - G) = log(Phi(-a) + Phi(-b) - Phi_2(-a, -b; 1/2)) (the joint is below half of
    the sum there). Owen's T sums terms of size Phi(a): its absolute error ~1e-17 was relative junk below G ~ 1e-16
    (P(G_1 <= 1e-300) read 3.5e-3 at gamma = 10 for ~1e-31). Where log Phi(min(a, b)) < LOG_FLOOR, log G is that upper
    bound (the root only needs it below log 5e-324). Without ``exact_tails``: Owen's T only (absolute error ~1e-17),
    which is all the functionals need (their integrands weigh G or 1 - G, never its relative error)."""
    a, b = np.broadcast_arrays(-np.asarray(d2, float) / _SQ2, -np.asarray(d3, float) / _SQ2)
    G = bvn_cdf(a, b, 0.5, _R_HALF)                         # P(X < a, Y < b)
    Q = special.ndtr(-a) + special.ndtr(-b) - bvn_cdf(-a, -b, 0.5, _R_HALF)
    with np.errstate(divide="ignore"):
        lg = np.where(G < 0.5, np.log(np.maximum(G, 1e-320)), np.log1p(-np.minimum(Q, 1.0)))
        lq = np.where(Q < 0.5, np.log(np.maximum(Q, 1e-320)), np.log1p(-np.minimum(G, 1.0)))
    if not exact_tails:
        return lg, lq
    tail = G < TAIL_SWITCH
    if tail.any():
        lg_t = special.log_ndtr(np.minimum(a[tail], b[tail]))          # G <= Phi(min(a, b))
        ok = lg_t >= LOG_FLOOR
        lg_t[ok] = log_phi2_half(a[tail][ok], b[tail][ok])
        lg[tail] = lg_t
    tail = Q < TAIL_SWITCH
    if tail.any():
        marg = np.logaddexp(special.log_ndtr(-a[tail]), special.log_ndtr(-b[tail]))
        lq_t = marg.copy()
        ok = marg >= LOG_FLOOR
        lq_t[ok] = marg[ok] + np.log1p(-np.exp(log_phi2_half(-a[tail][ok], -b[tail][ok]) - marg[ok]))
        lq[tail] = lq_t
    return lg, lq


def _log_density(m, delta, gamma):
    """log of 2 x the N(0, gamma [[2, 1], [1, 2]]) density at (d2, d3) = (m, m - delta): the quadratic form is
    (d2^2 - d2 d3 + d3^2)/(3 gamma) (half of x^T Sigma^-1 x); |Sigma| = 3 gamma^2."""
    d3 = m - delta
    return math.log(2) - (m * m - m * d3 + d3 * d3) / 3 / gamma - math.log(2 * math.pi * math.sqrt(3)) - math.log(gamma)


def _panels_from(x0, w, ok, far, lo=-math.inf, cap=None):
    """Edges from x0 outwards on each side (not below lo), each panel twice the last: at most PANEL_CAP wide where it
    touches |x| <= CAP_ZONE (there G_1 changes on its own scale ~1 whatever the density's), at least ``far`` (a
    quarter of the density's scale) beyond it (G_1 is constant to < 1e-60 there); until ok(edge) says the integrand is
    below the cut (at most 4000 panels a side)."""
    sides = []
    for sign in (1, -1):
        edges, x, width = [], x0, w
        for _ in range(4000):
            if sign < 0 and x <= lo:
                break
            y = x + sign * width
            near = min(abs(x), abs(y)) <= CAP_ZONE or (x < 0) != (y < 0)
            step = min(width, cap or PANEL_CAP) if near else max(width, far)
            x = max(x + sign * step, lo)
            edges.append(x)
            if not ok(x) or not math.isfinite(x):
                break
            width = 2 * step
        sides.append(edges)
    return np.array(sides[1][::-1] + [x0] + sides[0])


def expect(log_f, gamma: float) -> float:
    """E[exp(log_f(log G, log(1 - G)))] over the C = 3 differences (module docstring), as a float; log_f vectorised.
    0 < gamma < inf."""
    def ell(m, delta):
        lg, lq = log_fraction(m, m - delta)
        return _log_density(m, delta, gamma) + log_f(lg, lq)

    sd = math.sqrt(2 * gamma)
    span = 40 * sd + 60
    line = lambda m: ell(np.asarray(m, float), np.zeros(np.shape(m)))  # noqa: E731
    lo_j = math.floor(math.log2(min(sd, 1.0))) - 12
    grid = 2.0 ** np.arange(lo_j, math.ceil(math.log2(span)) + 1)
    cand = np.concatenate([-grid[::-1], [0.0], grid])
    vals = line(cand)
    i = int(np.argmax(vals))
    a_, b_ = cand[max(i - 1, 0)], cand[min(i + 1, cand.size - 1)]
    res = optimize.minimize_scalar(lambda m: -float(line(np.array([m]))[0]), bounds=(a_, b_), method="bounded",
                                   options={"xatol": 1e-13 * max(abs(a_), abs(b_), 2.0 ** lo_j)})
    m0 = res.x if -res.fun >= vals[i] else cand[i]
    e = 1e-3 * min(sd, 1.0)
    for _ in range(3):               # the peak's scale along m (central differences at a step well inside it)
        f0, fp, fm = (float(line(np.array([m0 + s]))[0]) for s in (0.0, e, -e))
        w = 1 / math.sqrt(max((2 * f0 - fp - fm) / e / e, 1e-300))
        if e <= 1e-2 * w:
            break
        e = 1e-3 * w
    peak = f0
    w = max(min(w, sd, PANEL_CAP), 1e-9 * min(sd, 1.0))
    cut = peak - LOG_DROP
    ok = lambda m: float(ell(np.array([m]), np.array([0.0]))[0]) > cut  # noqa: E731
    m_edges = _panels_from(m0, w, ok, sd / 4)
    x, wx = gauss_legendre(N_GL)
    mid, half = (m_edges[1:] + m_edges[:-1]) / 2, np.diff(m_edges) / 2
    m = (mid[:, None] + half[:, None] * x).ravel()
    wm = (half[:, None] * wx).ravel()
    # delta >= 0 per m node: geometric panels from 0 (first width: the smaller of the m width and sd / 64)
    d0 = min(w, sd / 64)
    d_edges = _panels_from(0.0, d0, lambda x: bool(np.any(ell(m, np.full(m.shape, x)) >= cut)), sd / 4, lo=0.0)
    d_edges = np.unique(d_edges[d_edges >= 0])
    dmid, dhalf = (d_edges[1:] + d_edges[:-1]) / 2, np.diff(d_edges) / 2
    delta = (dmid[:, None] + dhalf[:, None] * x).ravel()
    wd = (dhalf[:, None] * wx).ravel()
    vals = ell(m[:, None], delta[None, :])
    peak = max(peak, float(vals.max()))          # the search's peak is a lower bound of the grid's
    return float(math.exp(peak) * (wm @ np.exp(vals - peak) @ wd))


GAMMA_TINY = 1e-200   # below: G_1 = 1/3 + O(sqrt gamma) with E[G_1 - 1/3] = 0, so the limits hold to O(gamma D^2)
GAMMA_HUGE = 1e300    # above: p_empty = 2/3 + O(log(D)/sqrt gamma); entropy = c/sqrt(gamma) (1 + O(1/gamma))


def p_empty(gamma: float, D: float) -> float:
    """P(class 1 gets none of D points) = E[(1 - G_1)^D] at C = 3."""
    if gamma < GAMMA_TINY:
        return (2 / 3) ** D
    if gamma > GAMMA_HUGE:
        return 2 / 3
    return expect(lambda lg, lq: D * lq, gamma)


def entropy(gamma: float, D: float = math.inf) -> float:
    """E[-sum_c G_c log G_c] = 3 E[-G_1 log G_1] at C = 3 (nats); at a finite dataset size D the entropy of the
    observed fractions K/D, 3 E psi_D(G_1) (observed.py: the one-class kernel, relative KERNEL_ERROR). Above
    GAMMA_HUGE by its 1/sqrt(gamma) scaling: the integrand lives within O(1) of the lines d_2 = 0, d_3 = 0, where the
    density is flat to O(1/gamma)."""
    finite = math.isfinite(D)
    if finite and D < 2:
        return 0.0
    if gamma < GAMMA_TINY:
        return 3 * float(entropy_kernel(1 / 3, 2 / 3, int(D))[0]) if finite else math.log(3)
    if gamma > GAMMA_HUGE:
        return entropy(GAMMA_HUGE, D) * math.sqrt(GAMMA_HUGE / gamma)
    if finite:
        return 3 * expect(lambda lg, lq: log_entropy_kernel(lg, lq, int(D)), gamma)
    return 3 * expect(lambda lg, lq: lg + np.log(np.maximum(-lg, 1e-300)), gamma)


# --- the law of G_1 at C = 3: P(G_1 <= g) as a 1-d integral --------------------------------------------------------
# With p = (d_2 + d_3)/2 ~ N(0, 3 gamma/2) and q = (d_2 - d_3)/2 ~ N(0, gamma/2) independent, G_1 strictly decreases in
# p (both differences grow), so P(G_1 <= g) = E_q[P(p >= p*(q))] = E_q[Phi(-p*(q)/sigma_p)], p* the root of
# G_1(p + q, p - q) = g; symmetric in q. The density: E_q[phi(p*/sigma_p)/sigma_p / |dG_1/dp|(p*)].
LAW_GAMMA_MAX = 1e305     # above: NumericalError (law)
ROOT_STEPS = 48           # bisection steps in p (then Newton in probit space)


def _probit_fraction(d2, q, exact_tails: bool = True):
    """probit(G_1) at d = (d2, d2 - 2q) (p = d2 - q: the larger difference is the unknown, so q >> 1 loses nothing to
    p + q cancelling), from the accurate tail (log G_1 tail-exact unless ``exact_tails`` is False: log_fraction)."""
    lg, lq = log_fraction(d2, d2 - 2 * q, exact_tails)
    return np.where(lg < math.log(0.5), special.ndtri_exp(np.minimum(lg, 0.0)), -special.ndtri_exp(np.minimum(lq, 0.0)))


def _log_slope(d2, q):
    """log |dG_1/dp| at d = (d2, d2 - 2q), in logs (no underflow where G_1 is tiny)."""
    a, b = -d2 / _SQ2, -(d2 - 2 * q) / _SQ2
    return np.logaddexp(-a * a / 2 + special.log_ndtr((b - a / 2) / _R_HALF),
                        -b * b / 2 + special.log_ndtr((a - b / 2) / _R_HALF)) - math.log(2 * math.sqrt(math.pi))


def root_d2(g, q):
    """d2* = p* + q (q >= 0) with G_1(d2*, d2* - 2q) = g, arrays broadcast; ROOT_STEPS bisections of probit(G_1) in
    [-80 - 4|t|, 80 + 4|t|] (t = probit(g); G_1 <= Phi(-d2/sqrt 2) and >= Phi_2 at d3 = d2 bound it there), then three
    Newton steps (probit(G_1) is smooth and nearly linear)."""
    g, q = np.broadcast_arrays(np.asarray(g, float), np.asarray(q, float))
    t = special.ndtri(g)
    lo = np.full(g.shape, -80.0) - 4 * np.abs(t)
    hi = np.full(g.shape, 80.0) + 4 * np.abs(t)
    exact = bool(np.min(g) < BISECT_EXACT_BELOW)
    for _ in range(ROOT_STEPS):
        mid = (lo + hi) / 2
        above = _probit_fraction(mid, q, exact) > t          # G too large: p* is further right
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    p = (lo + hi) / 2
    for _ in range(3):
        x = _probit_fraction(p, q)                          # p: here the unknown d2
        slope = -np.exp(_log_slope(p, q) + x * x / 2 + math.log(2 * math.pi) / 2)   # dprobit/dd2 (logs: no underflow)
        step = np.where(slope < 0, (x - t) / slope, 0.0)
        p = np.clip(p - step, lo - (hi - lo), hi + (hi - lo))
    return p


def law(g, gamma: float) -> tuple:
    """(P(G_1 <= g), P(G_1 > g), density) at C = 3 for an array g in (0, 1), 0 < gamma < inf: the 1-d integral over
    q >= 0 (weight 2 phi(q/sigma_q)/sigma_q) on panels from q = 0 (width <= min(1, sigma)/2 while |q| <= CAP_ZONE,
    doubling beyond), out to where every log-integrand is LOG_DROP below its peak; each side of the law from its
    own log-integrand, so both tails keep their relative precision."""
    g = np.atleast_1d(np.asarray(g, float))
    if gamma < GAMMA_TINY:      # G_1 = 1/3 + a_3 (2 u_1 - u_2 - u_3) + O(gamma): normal, sd sqrt(6 gamma) a_3
        sd = math.sqrt(6 * gamma) / (4 * math.sqrt(math.pi))           # a_3 = 1/(4 sqrt(pi))
        z = np.array([float(Fraction(x) - Fraction(1, 3)) for x in g]) / sd
        return special.ndtr(z), special.ndtr(-z), np.exp(-z * z / 2) / (sd * math.sqrt(2 * math.pi))
    if gamma > LAW_GAMMA_MAX:
        raise NumericalError(f"multiclass.cdf/pdf: C = 3 at gamma = {gamma:g} > {LAW_GAMMA_MAX:g}: the density's scale "
                             "overflows the quadrature (the law is within 1e-150 of its gamma = inf atoms there)")
    sp_, sq = math.sqrt(1.5 * gamma), math.sqrt(0.5 * gamma)
    cap = min(1.0, sq) / 2

    def logs(q):
        q = np.asarray(q, float)
        d2 = root_d2(g[None, :], q[:, None])
        log_w = math.log(2 / (sq * math.sqrt(2 * math.pi))) - (q[:, None] / sq) ** 2 / 2
        z = (d2 - q[:, None]) / sp_                                    # p*/sigma_p
        log_pdf = log_w - z * z / 2 - math.log(sp_ * math.sqrt(2 * math.pi)) - _log_slope(d2, q[:, None])
        return log_w + special.log_ndtr(-z), log_w + special.log_ndtr(z), log_pdf

    probe = np.concatenate([[0.0], cap * 2.0 ** np.arange(0, 1000)])
    probe = probe[probe <= 40 * sq + 60]
    peaks = np.max(np.stack(logs(probe)), axis=1)                       # [3, n_g]

    def ok(q):
        return bool(np.any(np.stack(logs(np.array([q])))[:, 0, :] > peaks - LOG_DROP))
    edges = _panels_from(0.0, cap, ok, sq / 4, lo=0.0, cap=cap)
    edges = np.unique(edges[edges >= 0])
    x, wx = gauss_legendre(N_GL)
    mid, half = (edges[1:] + edges[:-1]) / 2, np.diff(edges) / 2
    q = (mid[:, None] + half[:, None] * x).ravel()
    wq = (half[:, None] * wx).ravel()
    out = []
    for vals, top in zip(logs(q), peaks):
        top = np.maximum(top, vals.max(0))
        out.append(np.exp(top) * (wq @ np.exp(vals - top)))
    return tuple(out)


def _log_ndtr_diff(a, b):
    """log(Phi(b) - Phi(a)) for a < b, from the tail where both are small (no cancellation)."""
    a, b = np.broadcast_arrays(np.asarray(a, float), np.asarray(b, float))
    lower = special.log_ndtr(b) + np.log(-np.expm1(np.minimum(special.log_ndtr(a) - special.log_ndtr(b), -1e-300)))
    upper = special.log_ndtr(-a) + np.log(-np.expm1(np.minimum(special.log_ndtr(-b) - special.log_ndtr(-a), -1e-300)))
    return np.where(b <= 0, lower, np.where(a >= 0, upper, np.log(special.ndtr(b) - special.ndtr(a))))


def max_cdf(g: float, gamma: float) -> float:
    """P(max_c G_c <= g) at C = 3, D = inf: max_c G_c = G of the largest mean, so it is 3 P(G_1 <= g, u_1 largest)
    = 3 P(p >= p*(q), p < -|q|) = 6 int_0^inf phi_q(q) (Phi(-q/sigma_p) - Phi(p*(q)/sigma_p))_+ dq (u_1 largest: both
    differences < 0). 0 for g <= 1/3; for 1/3 < g < 1/2 the bracket is positive only below q_k, where
    G_1(0, -2 q_k) = Phi_2(0, sqrt(2) q_k; 1/2) = g (G_1(0, -2q) increases from 1/3 to 1/2): the integral ends there,
    on panels <= min(1, sigma_q)/2 (no kink inside a panel)."""
    if g <= 1 / 3:
        return 0.0
    if g >= 1:
        return 1.0
    if gamma > LAW_GAMMA_MAX or gamma < GAMMA_TINY:
        raise NumericalError(f"multiclass.max_fraction_cdf: C = 3 at gamma = {gamma:g} outside [{GAMMA_TINY:g}, "
                             f"{LAW_GAMMA_MAX:g}] (the law's scale leaves the quadrature's range)")
    sp_, sq = math.sqrt(1.5 * gamma), math.sqrt(0.5 * gamma)
    q_end = math.inf
    if g < 0.5:
        q_end = optimize.brentq(lambda q: float(np.exp(log_fraction(np.array([0.0]), np.array([-2 * q]))[0][0])) - g,
                             0.0, 60.0, xtol=1e-15, rtol=1e-15)
    cap = min(1.0, sq) / 2

    def logs(q):
        q = np.asarray(q, float)
        d2 = np.minimum(root_d2(np.full(q.shape, g), q), 0.0)
        log_w = math.log(6 / (sq * math.sqrt(2 * math.pi))) - (q / sq) ** 2 / 2
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(d2 < 0, log_w + _log_ndtr_diff((d2 - q) / sp_, -q / sp_), -np.inf)

    probe = np.concatenate([[0.0], cap * 2.0 ** np.arange(0, 1000)])
    probe = probe[probe <= min(40 * sq + 60, q_end)]
    peak = float(np.max(logs(probe)))
    if math.isfinite(q_end):
        edges = np.linspace(0.0, q_end, max(2, math.ceil(q_end / cap)) + 1)
    else:
        edges = _panels_from(0.0, cap, lambda q: bool(logs(np.array([q]))[0] > peak - LOG_DROP), sq / 4, lo=0.0,
                             cap=cap)
        edges = np.unique(edges[edges >= 0])
    x, wx = gauss_legendre(N_GL)
    mid, half = (edges[1:] + edges[:-1]) / 2, np.diff(edges) / 2
    q = (mid[:, None] + half[:, None] * x).ravel()
    vals = logs(q)
    top = max(peak, float(vals.max()))
    return float(min(1.0, math.exp(top) * ((half[:, None] * wx).ravel() @ np.exp(vals - top))))
