"""Mean field with LayerNorm / RMSNorm (issue 48, "IGB meets mean field"): the phase diagram of a wide MLP whose
blocks normalise before or after the activation.

Block (width N → ∞): h_{l+1} = W x_l + b, W ~ N(0, σ_w²/N), b ~ N(0, σ_b²), with x_l = φ(Norm(h_l)) (placement
``before``) or x_l = Norm(φ(h_l)) (``after``); Norm = LayerNorm (centre and divide by the sd over units) or RMSNorm
(divide by the root mean square over units), no affine part, ε = 0. The units of h_l are i.i.d. N(0, q) per input,
correlation c between two inputs; over units the averages are expectations (derivations/meanfield_norm.py).
- before: the mean over units of the zero-mean units of h is 0, so LN = RMSNorm = h/√q: the norm fixes q = 1 and
  q' = σ_w² S_1 + σ_b², c' = (σ_w² E[φ(u)φ(v)]_{1,c} + σ_b²)/(σ_w² S_1 + σ_b²) (S_1 = E φ(Z)², A_1 = E φ'(Z)²),
  χ_1 = dc'/dc at c = 1 = σ_w² A_1/(σ_w² S_1 + σ_b²) (Price: d E φφ/dc = E φ'φ' at q = 1). Edge of chaos: the ray
  σ_b²/σ_w² = A_1 − S_1, which needs A_1 > S_1 (erf, tanh: the Gaussian Poincaré inequality A_1 >= Var φ = S_1,
  strict as φ is not affine). relu / leaky_relu: A_1 = S_1 = (1 + a²)/2, so χ_1 < 1 for every σ_b > 0: ordered,
  c* = 1, no edge of chaos at σ_b > 0 (the σ_b = 0 axis is critical).
- after: E x² = 1 exactly, so q' = σ_w² + σ_b² =: q at every layer past the first; LN gives x = (φ − M)/√V, RMSNorm
  x = φ/√S (M, S, V = S − M² of φ on N(0, q)), c' = (σ_w² ρ(c) + σ_b²)/q with ρ = (P(c) − M²)/V (LN) or P(c)/S (RMS),
  P(c) = E φ(u)φ(v), and χ_1 = σ_w² q A(q)/(q V) = σ_w² A(q)/V(q) (LN), σ_w² A(q)/S(q) (RMS), A = E φ'(u)².
  Odd φ (erf, tanh): M = 0, LN = RMSNorm. relu/leaky RMSNorm: χ_1 = σ_w²/q < 1, ordered. relu/leaky LayerNorm: the
  centring gives χ_1 = σ_w²/(q(1 − r/π)), r = (1 − a)²/(1 + a²), so a chaotic phase below the ray σ_b²/σ_w² =
  r/(π − r) (relu 1/(π − 1)); odd φ: the edge where σ_w² = S(q)/A(q), i.e. q − S(q)/A(q) = σ_b² (the plain MLP's
  edge relation in q, engine.meanfield.eoc_q_np), σ_w² = q − σ_b².
Routes (no new quadrature): c* of a smooth φ is the plain MLP's c* (igbsym.engine.meanfield) at an equivalent
(σ̃_w, σ̃_b) whose fixed point q̃* carries the same c-map: before, (σ_w, σ_b)/√(σ_w² S_1 + σ_b²) (q̃* = 1); after,
(σ_w/√S(q), σ_b) (q̃* = q). relu/leaky after LayerNorm: the map of e = 1 − c, e' = (1 − k(c))/((1 − r/π)(1 + β)),
β = σ_b²/σ_w², k the arc-cosine map (ops.arccos_loss), concave with slope χ_1 at 0: its root e* in (0, 1) by the
engine's Newton (refined in c by ops.act.np_spread_ratio where c* < 1/2). γ_∞ = c*/(1 − c*) of the readout
pre-activations (+inf where c* = 1).
"""
from __future__ import annotations

from functools import lru_cache

import mpmath
import numpy as np
import sympy as sp

from ..engine import meanfield as MF
from ..errors import InputError
from ..form import Accuracy, ClosedForm, Condition, NumericRoute, Param, Provenance
from ..gauss import derivative_moment_mp, moments_mp
from ..gauss.hermite import moments_vec
from ..ops import arccos_loss, mp_sin_minus_tcos, slope_ratio
from ..ops.act import mp_spread_ratio, np_spread_ratio
from .. import params as P
from ..registry import register
from .meanfield import SB, SB_EOC_MAX, SCHOENHOLZ, SW

NORMS = ("layernorm", "rmsnorm")
PLACEMENTS = ("before", "after")
SMOOTH = tuple(n for n in MF.ACTIVATIONS if n not in MF.HOMOGENEOUS)      # erf, tanh (odd)
WHERE = SCHOENHOLZ + " Eqs. 3-9 with the norm's map (derivations/meanfield_norm.py); c = gamma/(1 + gamma)"

sw_, sb_, a_ = sp.Symbol("sigma_w", positive=True), sp.Symbol("sigma_b", positive=True), sp.Symbol("a", real=True)
ACT = Param("activation", "choice", "activation function (relu/leaky_relu closed forms or arc-cosine roots; erf, "
                                    "tanh by the mean-field engine's routes)", choices=MF.ACTIVATIONS)
NORM = Param("norm", "choice", "normalisation over units (no affine part, eps = 0)", choices=NORMS)
PLACE = Param("placement", "choice", "before: phi(Norm(h)); after: Norm(phi(h))", choices=PLACEMENTS)
PARAMS = (ACT, P.LEAKY_A, NORM, PLACE, SW, SB)
A_MAX = 10**100


def kind(activation, norm, placement) -> str:
    """'unit' (norm before φ: q = 1), 'centred' (LayerNorm after relu/leaky_relu), 'rms' (RMSNorm after φ, or
    LayerNorm after an odd φ: E φ = 0, the same map)."""
    if placement == "before":
        return "unit"
    return "centred" if norm == "layernorm" and activation in MF.HOMOGENEOUS else "rms"


def _on(*kinds, acts=MF.ACTIVATIONS):
    return lambda case: kind(case["activation"], case["norm"], case["placement"]) in kinds \
        and case["activation"] in acts


RANGE = Condition(sp.And(sp.Ge(sw_, sp.Rational(1, 1000)), sp.Le(sw_, 10**100), sp.Ge(sb_, sp.Rational(1, 1000)),
                         sp.Le(sb_, 10**100)), "1e-3 <= sigma_w <= 1e100 and 1e-3 <= sigma_b <= 1e100 (the routes' "
                  "double range: sigma_w^2 + sigma_b^2 stays an ordinary double)")
SLOPE = Condition(sp.Le(sp.Abs(a_), A_MAX), "|a| <= 1e100 (the double range of 1 + a^2)")
TANH_Q = Condition(sp.Le(sw_**2 + sb_**2, MF.Q_MAX_SERIES / 2), f"sigma_w^2 + sigma_b^2 <= {MF.Q_MAX_SERIES / 2:g} "
                   "(tanh after the norm: the equivalent MLP's length-map bracket q/S(q) <= 6.4 stays within the "
                   f"Mehler series route's range q <= {MF.Q_MAX_SERIES:g})", applies=_on("rms", acts=("tanh",)))
ERF_Q = Condition(sp.Le(sw_**2 + sb_**2, MF.Q_MAX_MP), f"sigma_w^2 + sigma_b^2 <= {MF.Q_MAX_MP:g} (erf after the "
                  "norm: q within the mpmath reference's range)", applies=_on("rms", acts=("erf",)))
RATIO = Condition(sp.Ge(sb_, sw_ / 10**6), "sigma_b >= 1e-6 sigma_w (smooth phi before the norm: c* ~ sigma_b^2/"
                  "sigma_w^2, and the mpmath reference carries 1 - c* to 40 digits)", applies=_on("unit", acts=SMOOTH))
CHI_ACCURACY = Accuracy(1e-11, "relu/leaky_relu/erf: closed forms, rounding only; tanh: E phi'^2 and E phi^2 by the "
                               "library's quadrature (<= 1e-12 each, gauss.hermite.moments_vec), a ratio: 1e-11")
ROOT_ACCURACY = Accuracy(1e-9, "roots by safeguarded Newton to 1e-15 (engine.meanfield: the plain MLP's c* at the "
                               "equivalent (sigma_w, sigma_b); relu/leaky after LayerNorm: the arc-cosine e-map) of "
                               "maps with relative error <= 1e-12, amplified by 1/(1 - chi_c) at the fixed point; as "
                               "meanfield.c_star, the error grows like 1e-15/|1 - chi_c| at the edge of chaos")


# ----------------------------------------------------------------------------------- moments (library routes)
@lru_cache(maxsize=None)
def unit_moments_np(name):
    """(A_1, S_1) = (E φ'(Z)², E φ(Z)²) of a smooth φ by the library's quadrature (gauss.hermite.moments_vec)."""
    S, _, A, _ = moments_vec(name, 0.0, np.array([1.0]))
    return float(A[0]), float(S[0])


def unit_moments_mp(name, dps):
    """(A_1, S_1) at ``dps`` digits (gauss.moments_mp's fixed rules)."""
    return derivative_moment_mp(name, mpmath.mpf(1), dps), moments_mp(name, 0, mpmath.mpf(1), dps, "MS")[1]


def _q_moments_np(name, q):
    """(A(q), S(q)) of φ on N(0, q), q an array (moments_vec, point by point grouped by its nodes)."""
    q = np.asarray(q, float)
    S, _, A, _ = moments_vec(name, 0.0, q.ravel())
    return A.reshape(q.shape), S.reshape(q.shape)


# ----------------------------------------------------------------------------------------------------- chi_1
def _h(activation):
    return sp.Rational(1, 2) if activation == "relu" else (1 + a_**2) / 2


def centring(activation):
    """1/(1 − r/π) = π(1 + a²)/((π − 1)(1 + a²) + 2a): S/V of relu/leaky_relu (LayerNorm's centring gain)."""
    a = sp.S.Zero if activation == "relu" else a_
    return sp.pi * (1 + a**2) / ((sp.pi - 1) * (1 + a**2) + 2 * a)


ERF_A1, ERF_S1 = 4 / (sp.pi * sp.sqrt(5)), 2 / sp.pi * sp.asin(sp.Rational(2, 3))


def _tanh_chi_np(k):
    def value(sigma_w, sigma_b, a=0.01):
        sw2, sb2 = np.asarray(sigma_w, float) ** 2, np.asarray(sigma_b, float) ** 2
        if k == "unit":
            A1, S1 = unit_moments_np("tanh")
            return sw2 * A1 / (sw2 * S1 + sb2)
        A, S = _q_moments_np("tanh", sw2 + sb2)
        return sw2 * A / S
    return value


def _tanh_chi_mp(k):
    def value(sigma_w, sigma_b, a=None):
        dps = mpmath.mp.dps + 10
        with mpmath.workdps(dps):
            sw2, sb2 = sigma_w**2, sigma_b**2
            if k == "unit":
                A1, S1 = unit_moments_mp("tanh", dps)
                return sw2 * A1 / (sw2 * S1 + sb2)
            q = sw2 + sb2
            return sw2 * derivative_moment_mp("tanh", q, dps) / moments_mp("tanh", 0, q, dps, "MS")[1]
    return value


def _chi_case(activation, norm, placement):
    k = kind(activation, norm, placement)
    sw2, sb2 = sw_**2, sb_**2
    if activation in MF.HOMOGENEOUS:
        if k == "unit":
            return sw2 * _h(activation) / (sw2 * _h(activation) + sb2)
        return sw2 / (sw2 + sb2) * (centring(activation) if k == "centred" else 1)
    if activation == "erf":
        if k == "unit":
            return sw2 * ERF_A1 / (sw2 * ERF_S1 + sb2)
        q = sw2 + sb2                  # sigma_w^2 A(q)/S(q), A = (4/pi)/sqrt(1 + 4q), S = (2/pi) asin(2q/(1 + 2q))
        return 2 * sw2 / (sp.sqrt(1 + 4 * q) * sp.asin(2 * q / (1 + 2 * q)))
    return NumericRoute(_tanh_chi_np(k), _tanh_chi_mp(k), "sigma_w^2 E[phi'^2]/E[phi^2] by the library's quadrature "
                        "(before: at q = 1 over sigma_w^2 E phi^2 + sigma_b^2; after: at q = sigma_w^2 + sigma_b^2)",
                        CHI_ACCURACY.reason, sp.Symbol("chi_1"))


register(ClosedForm(
    "meanfield.norm_chi_1",
    "chi_1 = dc'/dc at c = 1 of a wide MLP with biases and LayerNorm/RMSNorm (no affine) before or after phi (also "
    "the per-layer factor of the mean squared gradient at the fixed point): before, sigma_w^2 E phi'(Z)^2/(sigma_w^2 "
    "E phi(Z)^2 + sigma_b^2) (LN = RMS: the norm fixes q = 1); after, sigma_w^2 E phi'(u)^2/Var phi(u) (LN) or "
    "/E phi(u)^2 (RMS), u ~ N(0, sigma_w^2 + sigma_b^2). relu before: sigma_w^2/(sigma_w^2 + 2 sigma_b^2); relu "
    "after LN: pi sigma_w^2/((pi - 1)(sigma_w^2 + sigma_b^2)).",
    PARAMS, Provenance("(none in shared/papers)", WHERE, "infinite width; averages over units are expectations"),
    builder=_chi_case, accuracy=CHI_ACCURACY, conditions=(RANGE, SLOPE, TANH_Q)))


# ------------------------------------------------------------------------------------------ c* and gamma_inf
def equivalent_np(name, k, sigma_w, sigma_b):
    """(σ̃_w, σ̃_b) of the plain MLP with the same correlation map (module docstring), NumPy."""
    sw, sb = np.broadcast_arrays(np.asarray(sigma_w, float), np.asarray(sigma_b, float))
    if k == "unit":
        A1, S1 = unit_moments_np(name)
        root = np.sqrt(sw * sw * S1 + sb * sb)
        return sw / root, sb / root
    return sw / np.sqrt(_q_moments_np(name, sw * sw + sb * sb)[1]), sb


def equivalent_mp(name, k, sw, sb, dps):
    """``equivalent_np`` at ``dps`` digits."""
    if k == "unit":
        root = mpmath.sqrt(sw**2 * unit_moments_mp(name, dps)[1] + sb**2)
        return sw / root, sb / root
    return sw / mpmath.sqrt(moments_mp(name, 0, sw**2 + sb**2, dps, "MS")[1]), sb


def _smooth_state_np(name, k, sigma_w, sigma_b):
    st = MF.state_np(name, 0.0, *equivalent_np(name, k, sigma_w, sigma_b))
    return st["c"], st["e"]


@lru_cache(maxsize=64)
def _smooth_state_mp(name, k, sigma_w, sigma_b, dps):
    """(c*, e*) at the working precision: the engine's mpmath state (nested quadrature) at the equivalent point."""
    guess = float(_smooth_state_np(name, k, float(sigma_w), float(sigma_b))[1])
    with mpmath.workdps(dps + 10):
        tw, tb = equivalent_mp(name, k, mpmath.mpf(sigma_w), mpmath.mpf(sigma_b), dps + 10)
    _, e, *_ = MF.state_mp(name, 0, tw, tb, e_guess=guess if 0 < guess < 1 else None)
    return 1 - e, e


def centred_state_np(a, sigma_w, sigma_b):
    """(c*, e*) of relu/leaky_relu after LayerNorm: e' = arccos_loss(e, r)/((1 − r/π)(1 + β)) solved by the engine's
    Newton from e = 1 (MF.solve_e), c refined where c* < 1/2 (MF.refine_c, ρ by np_spread_ratio)."""
    a, sw, sb = np.broadcast_arrays(*(np.asarray(v, float) for v in (a, sigma_w, sigma_b)))
    shape = sw.shape
    a, r = a.ravel(), slope_ratio(a).ravel()
    den = (1 - r / np.pi) * (1 + (sb.ravel() / sw.ravel()) ** 2)       # (1 − r/π)(1 + β) = 1/χ_1
    c, e = np.ones(den.size), np.zeros(den.size)
    rows = np.flatnonzero(den < 1)
    if rows.size:
        ar, rr, dr, beta = a[rows], r[rows], den[rows], (sb.ravel()[rows] / sw.ravel()[rows]) ** 2

        def G(idx, ee):
            t = 2 * np.arcsin(np.sqrt(ee / 2))
            return arccos_loss(ee, rr[idx]) / dr[idx], (1 - rr[idx] * t / np.pi) / dr[idx]

        def F(idx, cc):
            kc = cc + rr[idx] * (np.sqrt(1 - cc * cc) - cc * np.arccos(cc)) / np.pi
            rho = np_spread_ratio(ar[idx], rr[idx], cc, kc) / (1 - rr[idx] / np.pi)
            return (rho + beta[idx]) / (1 + beta[idx]), (1 - rr[idx] * np.arccos(cc) / np.pi) / dr[idx]
        e[rows] = MF.solve_e(G, rows.size)[0]
        c[rows] = MF.refine_c(F, e[rows])
    return c.reshape(shape), e.reshape(shape)


def _newton_mp(f, x, what):
    """Newton's root of a convex monotone residual f (returns (value, slope)) from x, monotone to the root."""
    for _ in range(400):
        v, d = f(x)
        step = v / d
        x -= step
        if abs(step) <= mpmath.mpf(10) ** (-mpmath.mp.dps + 5) * abs(x):
            return x
    raise InputError(f"meanfield.norm_c_star: {what} did not converge")


def centred_state_mp(a, sigma_w, sigma_b):
    """``centred_state_np`` at the working precision: Newton on e − G(e) from e = 1, then on F(c) − c from c = 0
    where c* < 1/2 (both residuals convex: monotone convergence)."""
    with mpmath.workdps(mpmath.mp.dps + 15):
        a = mpmath.mpf(a)
        r, beta = slope_ratio(a), (sigma_b / sigma_w) ** 2
        den = (1 - r / mpmath.pi) * (1 + beta)
        if den >= 1:
            return mpmath.mpf(1), mpmath.mpf(0)

        def h(e):
            t = 2 * mpmath.asin(mpmath.sqrt(e / 2))
            return e - (e - r * mp_sin_minus_tcos(t) / mpmath.pi) / den, 1 - (1 - r * t / mpmath.pi) / den
        e = _newton_mp(h, mpmath.mpf(1), "the e-map")
        if e <= mpmath.mpf(1) / 2:
            return 1 - e, e

        def g(c):
            kc = c + r * (mpmath.sqrt(1 - c * c) - c * mpmath.acos(c)) / mpmath.pi
            rho = mp_spread_ratio(a, r, c, kc) / (1 - r / mpmath.pi)
            return c - (rho + beta) / (1 + beta), 1 - (1 - r * mpmath.acos(c) / mpmath.pi) / den
        c = _newton_mp(g, mpmath.mpf(0), "the c-map")
        return c, 1 - c


def _state_route(activation, k, pick, pick_mp, method, defining):
    """The NumericRoute of c* (or a function of (c*, e*)) for a case with a chaotic phase."""
    if k == "centred":
        slope = (lambda a: 0 * a) if activation == "relu" else (lambda a: a)
        return NumericRoute(lambda sigma_w, sigma_b, a=0.01: pick(*centred_state_np(slope(np.asarray(a, float)),
                                                                                     sigma_w, sigma_b)),
                            lambda sigma_w, sigma_b, a=mpmath.mpf("0.01"): pick_mp(*centred_state_mp(
                                slope(a), sigma_w, sigma_b)),
                            method + "; the arc-cosine e-map of LayerNorm after relu/leaky_relu (ops.arccos_loss), "
                            "Newton (engine.meanfield.solve_e, refine_c); mpmath: the same maps, monotone Newton",
                            ROOT_ACCURACY.reason, defining)
    return NumericRoute(lambda sigma_w, sigma_b, a=0.01: pick(*_smooth_state_np(activation, k, sigma_w, sigma_b)),
                        lambda sigma_w, sigma_b, a=None: pick_mp(*_smooth_state_mp(activation, k, sigma_w, sigma_b,
                                                                                   mpmath.mp.dps)),
                        method + "; the plain MLP's fixed point (engine.meanfield.state_np / state_mp) at the "
                        "equivalent (sigma_w, sigma_b)", ROOT_ACCURACY.reason, defining)


def _gamma_np(c, e):
    e = np.asarray(e, float)
    with np.errstate(divide="ignore"):
        return np.where(e > 0, c / np.where(e > 0, e, 1.0), np.inf)


CS = sp.Symbol("c^*")
QUANTITIES = {   # name: (value where c* = 1 at every point, pick(c, e), mp pick, method, defining, summary)
    "c_star": (sp.S.One, lambda c, e: c, lambda c, e: c, "c* = 1 - e*", CS,
               "c*, the stable fixed point of the correlation map of the pre-activations (1 in the ordered phase)"),
    "gamma_inf": (sp.oo, _gamma_np, lambda c, e: c / e if e > 0 else mpmath.inf, "gamma_inf = c*/e*",
                  CS / (1 - CS), "gamma_inf = c*/(1 - c*), the IGB of the readout of an infinitely deep net (+inf "
                  "in the ordered phase and on the critical line)"),
}


def _fixed_builder(quantity):
    ordered, pick, pick_mp, method, defining, _ = QUANTITIES[quantity]

    def build(activation, norm, placement):
        k = kind(activation, norm, placement)
        if activation in MF.HOMOGENEOUS and k != "centred":
            return ordered                  # chi_1 < 1 at every sigma_b > 0: c* = 1
        return _state_route(activation, k, pick, pick_mp, method, defining)
    return build


for _q, (_o, _p, _pm, _m, _d, _summary) in QUANTITIES.items():
    register(ClosedForm(
        f"meanfield.norm_{_q}", f"Mean field of a wide MLP with biases and LayerNorm/RMSNorm before or after phi: "
        f"{_summary}. Ordered at every point (c* = 1) for relu/leaky_relu before the norm and after RMSNorm; relu "
        "after LayerNorm is chaotic below sigma_b^2/sigma_w^2 = 1/(pi - 1).", PARAMS,
        Provenance("(none in shared/papers)", WHERE, "infinite width, infinite depth; sigma_b > 0"),
        builder=_fixed_builder(_q), accuracy=ROOT_ACCURACY, conditions=(RANGE, SLOPE, TANH_Q, ERF_Q, RATIO)))


# ------------------------------------------------------------------------------------------- edge of chaos
def _eoc_after_np(name):
    def value(sigma_b, a=0.01):
        sb = np.asarray(sigma_b, float)
        q = MF.eoc_q_np(name, np.zeros(sb.shape), sb)[0].reshape(sb.shape)
        return sb / np.sqrt(q - sb * sb)          # sigma_w^2 = q - sigma_b^2 = S/A >= q/2 here: no cancellation
    return value


def _eoc_after_mp(name):
    def value(sigma_b, a=None):
        with mpmath.workdps(mpmath.mp.dps + 10):
            q = MF.eoc_q_mp(name, 0, sigma_b)
            return sigma_b / mpmath.sqrt(q - sigma_b**2)
    return value


def _tanh_unit_ratio_np(sigma_b, a=0.01):
    A1, S1 = unit_moments_np("tanh")
    return np.sqrt(A1 - S1) + 0 * np.asarray(sigma_b, float)


def _tanh_unit_ratio_mp(sigma_b, a=None):
    with mpmath.workdps(mpmath.mp.dps + 10):
        A1, S1 = unit_moments_mp("tanh", mpmath.mp.dps)
        return mpmath.sqrt(A1 - S1)


def _no_eoc(**_):
    raise InputError("meanfield.norm_eoc: no edge of chaos at sigma_b > 0 for this case (ordered everywhere)")


def _eoc_case(activation, norm, placement):
    k = kind(activation, norm, placement)
    if activation in MF.HOMOGENEOUS:
        if k != "centred":             # refused by NO_EOC before evaluation
            return NumericRoute(_no_eoc, _no_eoc, "none: no edge of chaos", "", sp.Symbol("rho^EOC"))
        a = sp.S.Zero if activation == "relu" else a_
        return sp.Abs(1 - a) / sp.sqrt((sp.pi - 1) * (1 + a**2) + 2 * a)      # sqrt(r/(pi - r))
    if k == "unit":
        if activation == "erf":
            return sp.sqrt(ERF_A1 - ERF_S1)
        return NumericRoute(_tanh_unit_ratio_np, _tanh_unit_ratio_mp, "sqrt(E phi'(Z)^2 - E phi(Z)^2) by the "
                            "library's quadrature", CHI_ACCURACY.reason, sp.Symbol("rho^EOC"))
    return NumericRoute(_eoc_after_np(activation), _eoc_after_mp(activation),
                        "sigma_b/sqrt(q - sigma_b^2) with q the root of q - S(q)/A(q) = sigma_b^2 (engine.meanfield."
                        "eoc_q_np / eoc_q_mp)", ROOT_ACCURACY.reason, sp.Symbol("rho^EOC"))


EOC_CONDITIONS = (
    Condition(sp.And(sp.Ge(sb_, sp.Rational(1, 1000)), sp.Le(sb_, 10**100)), "1e-3 <= sigma_b <= 1e100"),
    SLOPE,
    Condition(sp.S.false, "an edge of chaos at sigma_b > 0: relu/leaky_relu before the norm or after RMSNorm have "
              "chi_1 < 1 at every sigma_b > 0 (ordered; the edge is the sigma_b = 0 axis)",
              applies=lambda case: case["activation"] in MF.HOMOGENEOUS and kind(**case) != "centred"),
    Condition(sp.Ne(a_, 1), "a != 1 (leaky_relu after LayerNorm: a = 1 is the identity, chi_1 < 1 at sigma_b > 0)",
              applies=lambda case: case["activation"] == "leaky_relu" and kind(**case) == "centred"),
) + tuple(Condition(sp.Le(sb_, v), f"sigma_b <= {v:g} ({n} after the norm: the edge at q within the routes' range)",
                    applies=_on("rms", acts=(n,))) for n, v in SB_EOC_MAX.items())

register(ClosedForm(
    "meanfield.norm_eoc",
    "The edge of chaos (chi_1 = 1) of a wide MLP with biases and LayerNorm/RMSNorm as the ratio sigma_b/sigma_w on "
    "it through sigma_b: a ray (independent of sigma_b) before the norm, sqrt(E phi'(Z)^2 - E phi(Z)^2) (erf "
    "0.3237), and for relu/leaky_relu after LayerNorm, sqrt(r/(pi - r)) (relu 1/sqrt(pi - 1)); after the norm with "
    "erf/tanh sigma_b/sqrt(q - sigma_b^2), q - S(q)/A(q) = sigma_b^2. Chaotic below the ratio. None (refused) for "
    "relu/leaky_relu before the norm or after RMSNorm.",
    (ACT, P.LEAKY_A, NORM, PLACE, SB),
    Provenance("(none in shared/papers)", WHERE, "chi_1 = 1 solved for sigma_b/sigma_w"),
    builder=_eoc_case, accuracy=ROOT_ACCURACY, conditions=EOC_CONDITIONS))
