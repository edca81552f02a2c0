"""Mean-field signal propagation (Poole et al. 2016; Schoenholz et al. 2017, "Deep Information Propagation"): the
fixed points of the length and correlation maps of a wide MLP with biases, and their slopes.

MLP Y^(l) = W φ(Y^(l−1)) + B, W ~ N(0, σ_w²/N), B ~ N(0, σ_b²). Length map (Schoenholz Eq. 3)
q' = σ_w² E[φ(√q Z)²] + σ_b²; correlation map (Eq. 4) c' = (σ_w² E[φ(u_a)φ(u_b)] + σ_b²)/q* with (u_a, u_b)
bivariate normal of variance q* and correlation c. Slopes: χ_1 = σ_w² E[φ'(√q* Z)²] (Eq. 7: ∂c'/∂c at c = 1),
χ_c = σ_w² E[φ'(u_a)φ'(u_b)] at c* (Price's theorem: ∂E[φφ]/∂(q c) = E[φ'φ']), χ_q = ∂q'/∂q at q* =
σ_w² E[φ'² + φφ''] (heat equation; the slope of Schoenholz Eq. 5, ξ_q^{-1} = −ln(χ_1 + σ_w² E[φ''φ])).

Numerics, carrying e = 1 − c (never formed as a difference, so γ_∞ = c*/(1 − c*) = (1 − e*)/e* keeps its digits):
- relu / leaky_relu: E φ² = q(1 + a²)/2, so q* = σ_b²/(1 − χ_1), χ_1 = σ_w²(1 + a²)/2 (closed forms in the family).
- erf: the arcsine kernel E[erf(u)erf(u')] = (2/π) arcsin(2qc/(1 + 2q)) in closed form; q* and e* by safeguarded
  Newton (``numerics.bracketed_newton``).
- tanh: S, dS/dq, A = E φ'² by ``gauss.hermite.moments_vec``; the correlation map as Mehler's power series
  Σ β_k c^k (``gauss.hermite.series``, Parseval-certified), e* by Newton from e = 1.
The map in e is e' = G(e) = (σ_w²/q̃) Σ_k β_k (1 − (1 − e)^k), q̃ = σ_w² Σ β_k + σ_b² (the series' own q*), concave
with G(0) = 0 and G'(0) = χ_1: in the chaotic phase (χ_1 > 1) it has exactly one root e* in (0, 1) and
G'(e*) = χ_c < 1; otherwise e* = 0 (derivations/meanfield.py). mpmath routes (the references): ``gauss.moments_mp``,
``gauss.pair_mp`` (nested quadrature of the pair moment, not the series) and ``rules.mp_nested`` for E[φ'φ'], roots
by the Illinois method on brackets.
"""
from __future__ import annotations

import mpmath
import numpy as np

from .. import activations as acts
from ..errors import NumericalError
from ..gauss import derivative_moment_mp, moments_mp, normal_nodes, pair_mp
from ..gauss.hermite import Q_MAX_SERIES, moments_vec, series
from ..gauss.rules import mp_level, mp_nested
from ..numerics import bracketed_newton, row_dot
from ..ops import arccos_loss, slope_ratio

HOMOGENEOUS = ("relu", "leaky_relu")
QUADRATURE = ("tanh",)
ACTIVATIONS = HOMOGENEOUS + ("erf",) + QUADRATURE
CRITICAL_TOL = 1e-12     # |χ_1 − 1| below this is the critical line (phase 0): the routes' own accuracy
Q_MAX_MP = 100.0         # the mpmath nested quadrature's range (gauss.Q_MAX)
STEPS = 200
GROWTH_NODES = normal_nodes(0.05)


def _erf_S(q):
    """E erf(√q Z)² = (2/π) arcsin(2q/(1 + 2q)) = (2/π) atan2(2q, √(1 + 4q)); dS/dq; A = E erf'² = (4/π)/√(1 + 4q)."""
    r = np.sqrt(1 + 4 * q)
    return 2 / np.pi * np.arctan2(2 * q, r), 4 / np.pi / ((1 + 2 * q) * r), 4 / np.pi / r


def _moments(name, a, q):
    """(S, dS/dq, A) of φ on N(0, q) (NumPy)."""
    if name == "erf":
        return _erf_S(q)
    S, dS, A, _ = moments_vec(name, a, q)
    return S, dS, A


def q_star_np(name, a, sw, sb):
    """q* by safeguarded Newton on q − σ_w² S(q) − σ_b² (convex; root in [σ_b², σ_w² + σ_b²] since S <= 1)."""
    sw2, sb2 = sw * sw, sb * sb
    lo, hi = sb2.ravel().copy(), (sw2 + sb2).ravel().copy()
    x = hi.copy()
    s2, b2 = sw2.ravel(), sb2.ravel()

    def evaluate(rows, q):
        S, dS, _ = _moments(name, a, q)
        return q - s2[rows] * S - b2[rows], 1 - s2[rows] * dS
    bad = bracketed_newton(evaluate, x, lo, hi, lambda f, lo, hi: (np.abs(f) <= 2e-16 * hi) | (hi - lo <= 4e-16 * hi),
                           STEPS)
    if bad.size:
        raise NumericalError(f"meanfield: the length map's fixed point did not converge ({bad.size} points)")
    return x.reshape(sw.shape)


def _e_erf(q, sw2, sb2):
    """(e*, χ_c) of erf in the chaotic phase: G(e) = (σ_w²/q)(2/π)(arcsin t − arcsin t(1 − e)), t = 2q/(1 + 2q),
    with the difference of arcsines as one atan2 (x² − y² = t² e (2 − e): no cancellation)."""
    t = 2 * q / (1 + 2 * q)
    cx = np.sqrt(1 + 4 * q) / (1 + 2 * q)

    def G(rows, e):
        qq, tt, cxx = q[rows], t[rows], cx[rows]
        y = tt * (1 - e)
        cy = np.sqrt((1 + 2 * qq * e) * (1 + 4 * qq - 2 * qq * e)) / (1 + 2 * qq)
        num = tt * tt * e * (2 - e) / (tt * cy + y * cxx)
        g = sw2[rows] / qq * 2 / np.pi * np.arctan2(num, cxx * cy + tt * y)
        slope = sw2[rows] * 4 / np.pi / np.sqrt((1 + 2 * qq * e) * (1 + 4 * qq - 2 * qq * e))
        return g, slope
    e, slope = solve_e(G, q.size)

    def F(rows, c):
        qq, s2 = q[rows], sw2[rows]
        return ((s2 * 2 / np.pi * np.arcsin(t[rows] * c) + sb2[rows]) / qq,
                s2 * 4 / np.pi / np.sqrt((1 + 2 * qq) ** 2 - (2 * qq * c) ** 2))
    return e, slope, refine_c(F, e)


def refine_c(F, e):
    """c* = 1 − e*, refined where c* < 1/2 by Newton steps on F(c) − c computed in c itself (1 − e* keeps only an
    absolute 1e-16: odd φ at small σ_b has c* ~ σ_b²/q*, whose relative digits the difference would lose)."""
    c = 1 - e
    rows = np.flatnonzero(e > 0.5)
    if rows.size:
        cs = c[rows]
        for _ in range(3):
            f, d = F(rows, cs)
            cs = cs - (f - cs) / (d - 1)
        c[rows] = cs
    return c


def solve_e(G, n):
    """The root e* in (0, 1] of e − G(e) (convex, negative just right of 0, positive at 1) by Newton from e = 1."""
    x, lo, hi = np.ones(n), np.zeros(n), np.ones(n)
    slopes = np.empty(n)

    def evaluate(rows, e):
        g, s = G(rows, e)
        slopes[rows] = s
        return e - g, 1 - s
    bad = bracketed_newton(evaluate, x, lo, hi, lambda f, lo, hi: np.abs(f) <= 1e-15 * hi, STEPS)
    if bad.size:
        raise NumericalError(f"meanfield: the correlation map's fixed point did not converge ({bad.size} points)")
    return x, slopes


def _e_series(name, a, q, sw2, sb2):
    """(e*, χ_c) from Mehler's series of φ at q* (``gauss.hermite.series``), chunk by chunk."""
    e, chic, c = np.empty(q.size), np.empty(q.size), np.empty(q.size)
    for idx, beta in series(name, a, q):
        k = np.arange(1, beta.shape[1], dtype=float)
        b = beta[:, 1:]
        scale = sw2[idx] / (sw2[idx] * beta.sum(1) + sb2[idx])

        def G(rows, ee, b=b, scale=scale):
            lg = np.log1p(-ee)[:, None]
            one_minus = -np.expm1(k * lg)                          # 1 − (1 − e)^k, no cancellation
            pw = np.power((1 - ee)[:, None], k - 1)
            return scale[rows] * (b[rows] * one_minus).sum(1), scale[rows] * (b[rows] * k * pw).sum(1)
        with np.errstate(divide="ignore", invalid="ignore"):
            e[idx], chic[idx] = solve_e(G, idx.size)

        def F(rows, cc, b=beta, scale=scale, ratio=sb2[idx] / sw2[idx]):
            kk = np.arange(b.shape[1])
            pw = np.power(cc[:, None], kk)
            br, sr = b[rows], scale[rows]
            return sr * ((br * pw).sum(1) + ratio[rows]), sr * (br[:, 1:] * kk[1:] * pw[:, :-1]).sum(1)
        c[idx] = refine_c(F, e[idx])
    return e, chic, c


def state_np(name, a, sigma_w, sigma_b):
    """{q, e, c, chi1, chic, chiq} at the fixed point, broadcast over (a, σ_w, σ_b); e = 1 − c* and c = c*, each
    with its own relative accuracy."""
    a, sw, sb = np.broadcast_arrays(*(np.asarray(v, float) for v in (a, sigma_w, sigma_b)))
    shape = sw.shape
    sw2, sb2 = (sw * sw).ravel(), (sb * sb).ravel()
    if name in HOMOGENEOUS:
        h = (1 + (a * a if name == "leaky_relu" else 0 * a)) / 2
        chi1 = (sw2 * h.ravel())
        out = dict(q=sb2 / (1 - chi1), e=np.zeros(sw2.size), c=np.ones(sw2.size), chi1=chi1, chic=chi1, chiq=chi1)
        return {k: v.reshape(shape) for k, v in out.items()}
    aa = float(a.flat[0]) if a.size else 0.0
    q = q_star_np(name, aa, sw.ravel(), sb.ravel())
    _, dS, A = _moments(name, aa, q)
    chi1 = sw2 * A
    e, chic, c = np.zeros(q.size), chi1.copy(), np.ones(q.size)
    chaos = np.flatnonzero(chi1 > 1)
    if chaos.size:
        solve = _e_erf if name == "erf" else (lambda qq, s2, b2: _e_series(name, aa, qq, s2, b2))
        e[chaos], chic[chaos], c[chaos] = solve(q[chaos], sw2[chaos], sb2[chaos])
    out = dict(q=q, e=e, c=c, chi1=chi1, chic=chic, chiq=sw2 * dS)
    return {k: v.reshape(shape) for k, v in out.items()}


def eoc_np(name, a, sigma_b):
    """σ_w on the edge of chaos χ_1 = 1 at σ_b: on it σ_w² = 1/A(q) and σ_b² = q − S(q)/A(q); the root in q of the
    latter (increasing in q; bracket [σ_b², hi] with hi doubled until the residual is positive)."""
    a, sb = np.broadcast_arrays(np.asarray(a, float), np.asarray(sigma_b, float))
    if name in HOMOGENEOUS:
        return np.sqrt(2) / np.hypot(1.0, a if name == "leaky_relu" else 0 * a)   # no overflow at |a| = 1e308
    q, aa = eoc_q_np(name, a, sb)
    return (1 / np.sqrt(_moments(name, aa, q)[2])).reshape(sb.shape)


def eoc_q_np(name, a, sb):
    """(q* on the edge of chaos [flat], the leaky slope as a float) of a smooth φ at σ_b (``eoc_np``'s root)."""
    b2 = (sb * sb).ravel()
    aa = float(a.flat[0]) if a.size else 0.0

    def resid(q):
        if name == "erf":
            S, _, A = _erf_S(q)
            dA = -8 / np.pi / (1 + 4 * q) ** 1.5
            dS = _erf_S(q)[1]
        else:
            S, dS, A, dA = moments_vec(name, aa, q)
        return q - S / A, 1 - (dS * A - S * dA) / (A * A)
    hi = b2 + 1.0
    for _ in range(60):
        low = resid(hi)[0] - b2 <= 0
        if not low.any():
            break
        if name in QUADRATURE and np.any(hi[low] * 2 > Q_MAX_SERIES):
            raise NumericalError(f"meanfield.eoc_sigma_w: the edge of chaos at sigma_b = "
                                 f"{float(np.sqrt(b2[low].max())):.3g} lies beyond q = {Q_MAX_SERIES:g}")
        hi[low] *= 2
    x, lo = hi.copy(), b2.copy()

    def evaluate(rows, q):
        r, s = resid(q)
        return r - b2[rows], s
    bad = bracketed_newton(evaluate, x, lo, hi, lambda f, lo, hi: (np.abs(f) <= 4e-16 * hi) | (hi - lo <= 4e-16 * hi),
                           STEPS)
    if bad.size:
        raise NumericalError(f"meanfield.eoc_sigma_w: the edge of chaos did not converge ({bad.size} points)")
    return x, aa


def eoc_growth_np(name, a, sigma_b):
    """B = lim γ_L/L on the edge of chaos of a smooth odd φ at σ_b: the map of e = 1 − c at q* is e' = e − B e² +
    O(e³) with B = σ_w² q* E[φ''(u)²]/2 = q* E[φ''(u)²]/(2 E[φ'(u)²]) (σ_w² = 1/E φ'², Mehler's series: its second
    c-derivative at c = 1 is q*² E φ''², Price's theorem), so 1/e_L = B L + O(ln L). erf: E erf''(u)² =
    16q/(π(1 + 4q)^{3/2}) and E erf'² = 4/(π√(1 + 4q)) give B = 2q*²/(1 + 4q*) (derivations/meanfield.py); tanh:
    E φ''², E φ'² by composite Gauss–Legendre on a fixed z-grid (panels 0.05 <= 0.4/√q for q <= 64: relative error
    <= 1e-12, ``gauss.univariate``'s bound; the edge of chaos has q* <= 5.2 over the form's domain)."""
    sb = np.asarray(sigma_b, float)
    a = np.broadcast_to(np.asarray(a, float), sb.shape)
    if name == "erf":
        q = eoc_q_np(name, a, sb)[0]
        return (2 * q * q / (1 + 4 * q)).reshape(sb.shape)
    # point by point: moments_vec sizes its nodes by a chunk's largest q, so an array's roots would round
    # differently from the scalar calls
    q = np.array([eoc_q_np(name, a.flat[i], sb.flat[i])[0][0] for i in range(sb.size)])
    d = acts.derivatives(name, "numpy")
    z, w = GROWTH_NODES              # one grid for every point: an array's entries equal the scalar calls
    x = np.sqrt(q)[:, None] * z
    d1, d2 = (row_dot(np.asarray(d(x)[k], float) ** 2 + 0 * x, w) for k in (0, 1))
    return (q * d2 / (2 * d1)).reshape(sb.shape)


# --------------------------------------------------------------------------------------------- mpmath references
def _mp_fns(name, a):
    act = acts.get(name)
    d = acts.derivatives(name, "mpmath")
    return (lambda x: act.mp(x, a, 0)), (lambda x: d(x)[0]), (lambda x: d(x)[1]), act.strip


def _illinois(f, lo, hi, what):
    """The root of f on [lo, hi] (a sign change) by the Illinois method at the working precision."""
    try:
        return mpmath.findroot(f, (lo, hi), solver="illinois", tol=mpmath.mpf(10) ** (-mpmath.mp.dps - 4),
                               maxsteps=400)
    except (ValueError, ZeroDivisionError) as exc:
        raise NumericalError(f"meanfield: {what}: no root found on [{mpmath.nstr(lo, 5)}, {mpmath.nstr(hi, 5)}] "
                             f"({exc})") from None


def _newton(resid, slope, guess, dps):
    """Newton's root of resid (slope 1 − χ_c) from ``guess``, or None if it does not converge quadratically to
    10^-(dps+2) relative within 8 steps (the caller then takes the bracketed root)."""
    e = mpmath.mpf(guess)
    for _ in range(8):
        d = 1 - slope(e)
        if d <= 0:
            return None
        step = resid(e) / d
        e -= step
        if not 0 < e < 1:
            return None
        if abs(step) <= mpmath.mpf(10) ** (-dps - 2) * e:
            return e
    return None


def q_star_mp(name, a, sw, sb):
    dps = mpmath.mp.dps
    return _illinois(lambda q: q - sw**2 * moments_mp(name, a, q, dps + 5, "MS")[1] - sb**2,
                     sb**2, sw**2 + sb**2, "the length map")


def state_mp(name, a, sw, sb, e_guess=None, with_c=True):
    """(q*, e*, χ_1, χ_c, χ_q) at the working precision (erf and tanh by quadrature: independent of the NumPy
    routes' closed kernel and series). ``e_guess`` (optional) only narrows the Illinois bracket (kept only where the
    residual changes sign on it); ``with_c`` False: e* and χ_c are not computed (returned as None)."""
    dps = mpmath.mp.dps
    with mpmath.workdps(dps + 10):
        sw, sb = mpmath.mpf(sw), mpmath.mpf(sb)
        f, d1, d2, strip = _mp_fns(name, a)
        q = q_star_mp(name, a, sw, sb)
        if q > Q_MAX_MP:
            raise NumericalError(f"meanfield: q* = {mpmath.nstr(q, 4)} is beyond the mpmath route's range "
                                 f"q <= {Q_MAX_MP:g}")
        A = derivative_moment_mp(name, q, dps + 10)
        chi1 = sw**2 * A
        chiq = sw**2 * (A + mp_level(lambda x: f(x) * d2(x), strip, mpmath.sqrt(q)))
        if chi1 <= 1:
            return q, mpmath.mpf(0), chi1, chi1, chiq
        if not with_c:
            return q, None, chi1, None, chiq

        def resid(e):
            S, _, V, _, _ = pair_mp(name, a, q, 1 - e, e)
            return e - sw**2 * S * V / q
        def slope(e):
            return sw**2 * mp_nested(d1, strip, mpmath.sqrt((1 - e) * q), mpmath.sqrt(e * q))
        e = _newton(resid, slope, e_guess, dps) if e_guess is not None and 0 < e_guess < 1 else None
        if e is None:
            e = _illinois(resid, mpmath.mpf(10) ** (-dps), mpmath.mpf(1), "the correlation map")
        chic = slope(e)
        return q, e, chi1, chic, chiq


def eoc_mp(name, a, sb, q_guess=None):
    """σ_w on the edge of chaos at the working precision: the root in q of q − S/A − σ_b² (mpmath moments)."""
    dps = mpmath.mp.dps
    with mpmath.workdps(dps + 10):
        return 1 / mpmath.sqrt(derivative_moment_mp(name, eoc_q_mp(name, a, sb, q_guess), dps + 10))


def eoc_growth_mp(name, a, sb):
    """``eoc_growth_np`` at the working precision by quadrature for every smooth φ (erf too: independent of its
    closed form): B = q* E[φ''²]/(2 E[φ'²]) with q* the mpmath root on the edge of chaos."""
    dps = mpmath.mp.dps
    with mpmath.workdps(dps + 10):
        q = eoc_q_mp(name, a, sb)
        A, half_d2 = moments_mp(name, a, q, dps + 10, "taylor")
        return q * half_d2 / A


def eoc_q_mp(name, a, sb, q_guess=None):
    """q* on the edge of chaos at the working precision: the root in q of q − S/A − σ_b² (mpmath moments)."""
    dps = mpmath.mp.dps
    with mpmath.workdps(dps + 10):
        sb = mpmath.mpf(sb)

        def parts(q):
            S = moments_mp(name, a, q, dps + 10, "MS")[1]
            return S, derivative_moment_mp(name, q, dps + 10)

        def resid(q):
            S, A = parts(q)
            return q - S / A - sb**2
        lo, hi = sb**2, sb**2 + 1
        if q_guess is not None:
            g = mpmath.mpf(q_guess)
            lo, hi = max(lo, g * (1 - mpmath.mpf("1e-6"))), g * (1 + mpmath.mpf("1e-6"))
            if not (resid(lo) < 0 < resid(hi)):
                lo, hi = sb**2, sb**2 + 1
        while resid(hi) <= 0:
            hi *= 2
            if hi > Q_MAX_MP:
                raise NumericalError("meanfield.eoc_sigma_w: the edge of chaos lies beyond the mpmath route's range")
        return _illinois(resid, lo, hi, "the edge of chaos")


def depth_scale(chi):
    """ξ = −1/ln χ (inf at χ = 1: the critical line), NumPy."""
    chi = np.asarray(chi, float)
    with np.errstate(divide="ignore"):
        return np.where(chi == 1, np.inf, -1 / np.log(chi))


def phase_of(chi1):
    """−1 (ordered, χ_1 < 1), 0 (critical, |χ_1 − 1| <= CRITICAL_TOL), +1 (chaotic)."""
    chi1 = np.asarray(chi1, float)
    return np.where(np.abs(chi1 - 1) <= CRITICAL_TOL, 0.0, np.sign(chi1 - 1))



# --------------------------------------------------------------------------------------------- finite depth
def trajectory(name, a, sigma_w, sigma_b, L, q1=None, c1=None):
    """[(q_l, e_l)] for l = 1..L (NumPy, broadcast over σ_w, σ_b): the pre-activations of layer l of the MLP whose
    first layer sees two independent N(0, I) inputs (q_1 = σ_w² + σ_b², c_1 = σ_b²/q_1; or the given q1, c1), then
    q_{l+1} = σ_w² S(q_l) + σ_b², e_{l+1} = σ_w² Σ_k β_k(q_l)(1 − (1 − e_l)^k)/q_{l+1} (Mehler's series at q_l;
    relu/leaky_relu: the arc-cosine map, erf: the arcsine kernel). γ_L of the readout after L hidden layers is
    (1 − e_{L+1})/e_{L+1}."""
    sw, sb = np.broadcast_arrays(np.asarray(sigma_w, float), np.asarray(sigma_b, float))
    shape, sw2, sb2 = sw.shape, (sw * sw).ravel(), (sb * sb).ravel()
    q = sw2 + sb2 if q1 is None else np.broadcast_to(np.asarray(q1, float), shape).ravel().copy()
    e = (sw2 / q if c1 is None else 1 - np.broadcast_to(np.asarray(c1, float), shape).ravel()).copy()
    out = [(q.reshape(shape), e.reshape(shape))]
    for _ in range(L - 1):
        q_next, lost = _layer(name, a, q, e, sw2, sb2)
        q, e = q_next, lost / q_next
        out.append((q.reshape(shape), e.reshape(shape)))
    return out


def _layer(name, a, q, e, sw2, sb2):
    """(q', σ_w²(S − P)) of one layer at (q, 1 − e) per point."""
    if name in HOMOGENEOUS:
        s = a if name == "leaky_relu" else 0.0
        h = (1 + s * s) / 2
        # S − P = h q (1 − k(c)), without cancellation as e → 0 (arccos(1 − e) lost 1e-8 of γ_1000 in the ordered
        # phase)
        return sw2 * h * q + sb2, sw2 * h * q * arccos_loss(e, slope_ratio(s))
    if name == "erf":
        S = _erf_S(q)[0]
        t = 2 * q / (1 + 2 * q)
        cx = np.sqrt(1 + 4 * q) / (1 + 2 * q)
        y = t * (1 - e)
        cy = np.sqrt((1 + 2 * q * e) * (1 + 4 * q - 2 * q * e)) / (1 + 2 * q)
        lost = 2 / np.pi * np.arctan2(t * t * e * (2 - e) / (t * cy + y * cx), cx * cy + t * y)
        return sw2 * S + sb2, sw2 * lost
    q_next, lost = np.empty(q.size), np.empty(q.size)
    for idx, beta in series(name, a, q):
        k = np.arange(1, beta.shape[1], dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            one_minus = np.where(e[idx, None] >= 1, 1.0, -np.expm1(k * np.log1p(-np.minimum(e[idx, None], 1))))
        S = beta.sum(1)
        q_next[idx] = sw2[idx] * S + sb2[idx]
        lost[idx] = sw2[idx] * (beta[:, 1:] * one_minus).sum(1)
    return q_next, lost
