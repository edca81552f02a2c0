"""Mean-field signal propagation tied to IGB (issue 48): the fixed points of the length and correlation maps of a wide
MLP with biases, their slopes, depth scales, the edge of chaos, the phase, and γ_∞ = c*/(1 − c*).

Papers: Poole et al. 2016 ("Exponential expressivity in deep neural networks through transient chaos"), Schoenholz
et al. 2017 ("Deep Information Propagation", Eqs. 3-9); igb-talk-slides.txt (c = γ/(1 + γ)).
Convention: Y^(l) = W φ(Y^(l−1)) + B, W ~ N(0, σ_w²/N), B ~ N(0, σ_b²), width N → ∞.
- q* : the fixed point of the length map q' = σ_w² E[φ(√q Z)²] + σ_b² (Schoenholz Eq. 3).
- c* : the stable fixed point of the correlation map c' = (σ_w² E[φ(u_a)φ(u_b)] + σ_b²)/q* (Eq. 4; (u_a, u_b) of
  variance q*, correlation c): 1 in the ordered phase, the unique root in (0, 1) in the chaotic phase.
- χ_1 = σ_w² E[φ'(√q* Z)²] (Eq. 7), χ_c = ∂c'/∂c at c* = σ_w² E[φ'(u_a)φ'(u_b)] (Price's theorem; = χ_1 when c* = 1).
- ξ_q = −1/ln χ_q with χ_q = ∂q'/∂q at q* = χ_1 + σ_w² E[φ''(u)φ(u)] (Schoenholz Eq. 5: ξ_q^{-1} = −ln(χ_1 +
  σ_w² ∫Dz φ''φ)), ξ_c = −1/ln χ_c (Eq. 9: ξ_c^{-1} = −ln(σ_w² ∫Dz₁Dz₂ φ'(u_1)φ'(u_2))); inf on the critical line.
- eoc_sigma_w: σ_w with χ_1 = 1 at σ_b (on it σ_w² = 1/E φ'(u)², σ_b² = q − E φ(u)²/E φ'(u)²: a root in q).
- phase: sign(ln χ_1) as −1 (ordered), 0 (critical: |χ_1 − 1| <= 1e-12, the routes' accuracy), +1 (chaotic).
- gamma_inf: γ_∞ = c*/(1 − c*) of the readout pre-activations (γ_L = q_ab/(q − q_ab), the issue's convention):
  finite in the chaotic phase, +inf in the ordered phase and on the critical line (c* = 1: γ_L grows without bound).
- gamma_eoc_growth: C = lim γ_L/L^p on the edge of chaos (how γ_L grows there): p = 2, C = 8r²/(9π²) for (leaky)
  ReLU (r = (1 − a)²/(1 + a²); four times the zero-bias law, every σ_b > 0); p = 1, C = σ_w² q* E[φ''(√q* Z)²]/2 for
  erf (2q*²/(1 + 4q*)) and tanh (quadrature). Registered as the coefficient, not C L^p: the limit is exact, C L^p only
  the leading term (derivations/meanfield.py states the subleading orders). Ordered phase: γ_L ∝ χ_1^{−L} (ξ_c).
Exact in SymPy for relu / leaky_relu (E φ² = q(1 + a²)/2: q* = σ_b²/(1 − χ_1), χ_1 = σ_w²(1 + a²)/2 = χ_c = χ_q, c* = 1,
EOC σ_w² = 2/(1 + a²) for every σ_b; valid for σ_w²(1 + a²) < 2, beyond which q* diverges: these nets are never
chaotic). erf: the arcsine kernel (2/π) arcsin(2qc/(1 + 2q)) in closed form (derivations/meanfield.py), roots by
Newton. tanh: quadrature moments and Mehler's series of the correlation map (igbsym.engine.meanfield). σ_b > 0
(σ_b → 0 is a limit: odd φ then has q* = 0 below σ_w = 1). Numerics: igbsym/engine/meanfield.py.
"""
from __future__ import annotations

from functools import lru_cache

import mpmath
import numpy as np
import sympy as sp

from ..engine import meanfield as MF
from ..form import Accuracy, ClosedForm, Condition, NumericRoute, Param, Provenance
from .. import params as P
from ..registry import register

SLIDES = "igb-talk-slides.txt"
SCHOENHOLZ = "Schoenholz, Gilmer, Ganguli & Sohl-Dickstein 2017 (Deep Information Propagation)"
WHERE = "c = gamma/(1+gamma); " + SCHOENHOLZ + " Eqs. 3-9; Poole et al. 2016"

sw_, sb_, a_ = sp.Symbol("sigma_w", positive=True), sp.Symbol("sigma_b", positive=True), sp.Symbol("a", real=True)
ACT = Param("activation", "choice", "activation function (mean-field routes: closed forms for relu/leaky_relu, the "
                                    "arcsine kernel for erf, quadrature for tanh)", choices=MF.ACTIVATIONS)
CHAOTIC = tuple(n for n in MF.ACTIVATIONS if n not in MF.HOMOGENEOUS)
ACT_CHAOS = Param("activation", "choice", "activation function with a chaotic phase", choices=CHAOTIC)
SW = Param("sigma_w", "positive", "weight scale: W ~ N(0, sigma_w^2/N)")
SB = Param("sigma_b", "positive", "bias scale: B ~ N(0, sigma_b^2)")
A = P.LEAKY_A
PARAMS = (ACT, A, SW, SB)
PARAMS_CHAOS = (ACT_CHAOS, A, SW, SB)
Q_MAX_TANH = MF.Q_MAX_SERIES
RANGE = Condition(sp.And(sp.Ge(sw_, sp.Rational(1, 1000)), sp.Ge(sb_, sp.Rational(1, 1000)), sp.Le(sb_, 10**100)),
                  "sigma_w >= 1e-3 and 1e-3 <= sigma_b <= 1e100 (the routes' double range: chi_1 = sigma_w^2 E phi'^2 "
                  "and q* stay ordinary doubles)")
CONDITIONS = (
    RANGE,
    Condition(sp.Lt(sw_**2, 2), "sigma_w^2 < 2 (relu: beyond, q* diverges; chi_1 = sigma_w^2/2 >= 1)",
              applies=lambda case: case.get("activation") == "relu"),
    Condition(sp.Lt(sw_**2 * (1 + a_**2), 2), "sigma_w^2 (1 + a^2) < 2 (leaky_relu: beyond, q* diverges)",
              applies=lambda case: case.get("activation") == "leaky_relu"),
    Condition(sp.Le(sw_**2 + sb_**2, Q_MAX_TANH), f"sigma_w^2 + sigma_b^2 <= {Q_MAX_TANH:g} (tanh: q* <= that, the "
              "range of the Mehler series route)", applies=lambda case: case.get("activation") == "tanh"),
    Condition(sp.Le(sw_**2 + sb_**2, MF.Q_MAX_MP), f"sigma_w^2 + sigma_b^2 <= {MF.Q_MAX_MP:g} (erf: q* <= that, the "
              "range of the mpmath reference)", applies=lambda case: case.get("activation") == "erf"),
)
SB_EOC_MAX = {"tanh": 1.5, "erf": 5.0}    # q on the edge of chaos <= 10 (tanh: 5.2 at 1.5) and <= 100 (erf: 33 at 5)
EOC_RANGE = Condition(sp.Ge(sb_, sp.Rational(1, 1000)), "sigma_b >= 1e-3 (the routes' double range)")
EOC_CONDITIONS = (EOC_RANGE,) + tuple(Condition(sp.Le(sb_, v), f"sigma_b <= {v:g} ({n}: the edge of chaos at q <= "
                                 f"{Q_MAX_TANH if n == 'tanh' else MF.Q_MAX_MP:g}, the routes' range)",
                                 applies=lambda case, n=n: case.get("activation") == n) for n, v in SB_EOC_MAX.items())

ACCURACY = Accuracy(1e-9, "relu/leaky_relu: rounding, amplified by 1/(1 - chi_1) in q*, xi (1.1e-12 at "
                          "sigma_w = 1.4142, 1 - chi_1 = 2e-5; the 1e-9 holds for 1 - chi_1 >= 1e-7); erf, tanh: "
                          "roots by safeguarded Newton to 1e-15 of moments with relative error <= 1e-12 (tanh's "
                          "Mehler series certified by Parseval to 1e-13); the fixed point amplifies by 1/(1 - chi) "
                          "(chi the map's slope there). Measured against the mpmath quadrature routes (30 and 50 "
                          "digits, agreeing to 1e-29) on a grid of 304 erf/tanh points over the domain, corners "
                          "included: <= 8.1e-14 (tanh q* at sigma_w = 1, sigma_b = 1e-3; tests/test_meanfield.py "
                          "checks random points); stated 1e-9. Near the edge of chaos e* = 1 - c* -> 0 and "
                          "gamma_inf, xi_c grow; their relative error grows like 1e-15/|1 - chi_c|")

_H = {"relu": sp.Rational(1, 2), "leaky_relu": (1 + a_**2) / 2}


def _np_state(name, a, sigma_w, sigma_b):
    return MF.state_np(name, a, sigma_w, sigma_b)


def _mp_state(name, a, sigma_w, sigma_b, with_c):
    """The mpmath state; the NumPy e* only narrows the Illinois bracket (checked by the signs there, else the wide
    bracket): the root is the mpmath route's own. Cached per working precision: every quantity of a point shares
    one state (eight forms at one point cost one nested-quadrature solve)."""
    return _mp_state_at(name, a, sigma_w, sigma_b, with_c, mpmath.mp.dps)


@lru_cache(maxsize=64)
def _mp_state_at(name, a, sigma_w, sigma_b, with_c, dps):
    guess = float(MF.state_np(name, float(a), float(sigma_w), float(sigma_b))["e"]) if with_c else 0.0
    return MF.state_mp(name, a, sigma_w, sigma_b, e_guess=guess if 0 < guess < 1 else None, with_c=with_c)


def _route(name, pick_np, pick_mp, method, defining, with_c=True):
    return NumericRoute(
        lambda sigma_w, sigma_b, a=0.01: pick_np(_np_state(name, a, sigma_w, sigma_b)),
        lambda sigma_w, sigma_b, a=mpmath.mpf("0.01"): pick_mp(*_mp_state(name, a, sigma_w, sigma_b, with_c)),
        method + ("; the arcsine kernel in closed form" if name == "erf" else
                  "; moments by quadrature, the correlation map as Mehler's series (igbsym.gauss.hermite)")
        + "; mpmath: Illinois roots of the maps by nested quadrature (gauss.pair_mp)", ACCURACY.reason, defining)


def _xi(chi):
    return mpmath.inf if chi == 1 else -1 / mpmath.log(chi)


def _phase_mp(chi1):
    return mpmath.mpf(0) if abs(chi1 - 1) <= MF.CRITICAL_TOL else mpmath.sign(chi1 - 1)


QS, CS, CH1, CHC, CHQ = (sp.Symbol(s) for s in ("q^*", "c^*", "chi_1", "chi_c", "chi_q"))
SPECS = {   # quantity: (homogeneous closed form (h = (1 + a^2)/2), numpy pick, mp pick, method, defining, summary)
    "q_star": (lambda h: sb_**2 / (1 - sw_**2 * h), lambda s: s["q"], lambda q, e, c1, cc, cq: q,
               "q* by Newton on the length map", QS, "q*, the fixed point of the length map q' = sigma_w^2 "
               "E[phi(sqrt(q) Z)^2] + sigma_b^2"),
    "c_star": (lambda h: sp.S.One, lambda s: s["c"], lambda q, e, c1, cc, cq: 1 - e,
               "c* = 1 - e*, e* by Newton from e = 1 on the map of 1 - c (refined in c where c* < 1/2)", CS,
               "c*, the stable fixed point of the correlation map c' = (sigma_w^2 E[phi(u_a) phi(u_b)] + "
               "sigma_b^2)/q* (1 in the ordered phase)"),
    "chi_1": (lambda h: sw_**2 * h, lambda s: s["chi1"], lambda q, e, c1, cc, cq: c1,
              "chi_1 = sigma_w^2 E[phi'(u)^2] at q*", CH1, "chi_1 = sigma_w^2 E[phi'(sqrt(q*) Z)^2], the slope of "
              "the correlation map at c = 1"),
    "chi_c": (lambda h: sw_**2 * h, lambda s: s["chic"], lambda q, e, c1, cc, cq: cc,
              "chi_c = sigma_w^2 E[phi'(u_a) phi'(u_b)] at (q*, c*)", CHC,
              "chi_c, the slope of the correlation map at its stable fixed point c* (= chi_1 where c* = 1)"),
    "xi_q": (lambda h: -1 / sp.log(sw_**2 * h), lambda s: MF.depth_scale(s["chiq"]),
             lambda q, e, c1, cc, cq: _xi(cq), "xi_q = -1/ln chi_q, chi_q = chi_1 + sigma_w^2 E[phi'' phi]",
             -1 / sp.log(CHQ), "xi_q = -1/ln(chi_1 + sigma_w^2 E[phi''(u) phi(u)]), the depth scale of the length "
             "map (Schoenholz Eq. 5)"),
    "xi_c": (lambda h: -1 / sp.log(sw_**2 * h), lambda s: MF.depth_scale(s["chic"]),
             lambda q, e, c1, cc, cq: _xi(cc), "xi_c = -1/ln chi_c", -1 / sp.log(CHC),
             "xi_c = -1/ln chi_c, the depth scale over which c approaches c* (Schoenholz Eq. 9; inf at the edge "
             "of chaos)"),
    "phase": (lambda h: sp.Integer(-1), lambda s: MF.phase_of(s["chi1"]), lambda q, e, c1, cc, cq: _phase_mp(c1),
              "sign(ln chi_1): -1 ordered, 0 critical (|chi_1 - 1| <= 1e-12), +1 chaotic", sp.sign(sp.log(CH1)),
              "the phase sign(ln chi_1): -1 ordered (chi_1 < 1, c* = 1), 0 critical (|chi_1 - 1| <= 1e-12), "
              "+1 chaotic (chi_1 > 1, c* < 1)"),
}


NO_C = ("q_star", "chi_1", "xi_q", "phase")    # quantities that do not need the correlation map's fixed point


def _builder(quantity):
    closed, pick_np, pick_mp, method, defining, _ = SPECS[quantity]

    def build(activation):
        if activation in MF.HOMOGENEOUS:
            return closed(_H[activation])
        return _route(activation, pick_np, pick_mp, method, defining, quantity not in NO_C)
    return build


for _q, (_c, _pn, _pm, _m, _d, _summary) in SPECS.items():
    register(ClosedForm(
        f"meanfield.{_q}", f"Mean-field theory of a wide MLP with biases: {_summary}.", PARAMS,
        Provenance(SLIDES, WHERE, "sigma_b > 0; relu/leaky_relu exact and never chaotic (valid for "
                                  "sigma_w^2 (1 + a^2) < 2)"),
        builder=_builder(_q), accuracy=ACCURACY, conditions=CONDITIONS))


def _gamma_np(s):
    e = s["e"]
    with np.errstate(divide="ignore"):
        return np.where(e > 0, s["c"] / np.where(e > 0, e, 1.0), np.inf)


register(ClosedForm(
    "meanfield.gamma_inf", "gamma_inf = c*/(1 - c*): the IGB of the readout of an infinitely deep wide MLP with "
                           "biases (gamma_L = q_ab/(q - q_ab) of the readout pre-activations -> gamma_inf); finite "
                           "in the chaotic phase, +inf in the ordered phase and on the critical line.",
    PARAMS_CHAOS, Provenance(SLIDES, WHERE, "c* the fixed point of the pre-activation correlation (biases "
                                            "included); 1 - c* carried on its own, so gamma keeps its digits"),
    builder=lambda activation: _route(activation, _gamma_np,
                                      lambda q, e, c1, cc, cq: (1 - e) / e if e > 0 else mpmath.inf,
                                      "gamma_inf = (1 - e*)/e*", CS / (1 - CS)),
    accuracy=ACCURACY, conditions=(RANGE,) + CONDITIONS[3:]))


def _eoc_case(activation):
    if activation in MF.HOMOGENEOUS:
        return sp.sqrt(1 / _H[activation])
    return NumericRoute(
        lambda sigma_b, a=0.01: MF.eoc_np(activation, a, sigma_b),
        lambda sigma_b, a=mpmath.mpf("0.01"): MF.eoc_mp(activation, a, sigma_b),
        "the root in q of q - E[phi^2]/E[phi'^2] = sigma_b^2 (safeguarded Newton), then sigma_w = "
        "1/sqrt(E[phi'(u)^2]); mpmath: the Illinois root with quadrature moments", ACCURACY.reason,
        sp.Symbol("sigma_w^EOC"))


register(ClosedForm(
    "meanfield.eoc_sigma_w", "sigma_w on the edge of chaos (chi_1 = 1) at bias scale sigma_b: relu/leaky_relu "
                             "sigma_w^2 = 2/(1 + a^2) for every sigma_b; tanh at sigma_b^2 = 0.05: sigma_w^2 = 1.761 "
                             "(Schoenholz et al. 2017, Fig. 1).",
    (ACT, A, SB), Provenance(SLIDES, SCHOENHOLZ + " Sec. 3 (chi_1 = 1); Poole et al. 2016", "the order-to-chaos "
                                                 "transition; on it xi_c = inf"),
    builder=_eoc_case, accuracy=ACCURACY, conditions=EOC_CONDITIONS,
    kernel=lambda activation, sigma_b, a=0.0: MF.eoc_np(activation, a, sigma_b)))   # relu/leaky: sqrt 2/hypot(1, a)


# --------------------------------------------------------------------------------------------- gamma_L on the EOC
GROWTH_POWER = {"relu": 2, "leaky_relu": 2, "erf": 1, "tanh": 1}   # p in gamma_L ~ C L^p on the edge of chaos
EOC_GROWTH_ACCURACY = Accuracy(1e-9, "relu/leaky_relu: exact (rounding only); erf: 2 q*^2/(1 + 4 q*) at the edge of "
                                     "chaos root q* (safeguarded Newton); tanh: q* E[phi''^2]/(2 E[phi'^2]) by "
                                     "composite Gauss-Legendre (<= 1e-12) at that root. Measured against the mpmath "
                                     "quadrature route (30 digits) at sigma_b = 1e-3 .. 1.5: <= 5.9e-13 (tanh at "
                                     "sigma_b = 1e-3, where q* ~ 0.009 and C ~ q*^2); stated 1e-9 as eoc_sigma_w")
QE, _EXP = sp.Symbol("q^*_EOC", positive=True), sp.Function("E")


def _growth_case(activation):
    """C = lim gamma_L / L^p on the edge of chaos (p = GROWTH_POWER[activation]).

    (Leaky) ReLU: 1 - k(c) = e - A e^{3/2} + O(e^{5/2}), A = 2 sqrt(2) r/(3 pi), r = (1 - a)^2/(1 + a^2); on the EOC
    q_{l+1} = q_l + sigma_b^2, so e_{l+1} = (q_l/q_{l+1})(e_l - A e_l^{3/2}) with q_l/q_{l+1} = 1 - 1/l + O(1/l^2) and
    e_l ~ 1/(A^2 l^2): C = A^2 = 8 r^2/(9 pi^2), four times the zero-bias law (depth.gamma), for every sigma_b > 0.
    Smooth odd phi: q_l -> q* and e' = e - B e^2 + O(e^3), B = q* E[phi''^2]/(2 E[phi'^2]): C = B.
    """
    if activation in MF.HOMOGENEOUS:
        r = (1 - a_) ** 2 / (1 + a_**2) if activation == "leaky_relu" else sp.S.One
        return 8 * r**2 / (9 * sp.pi**2)
    method = ("2 q*^2/(1 + 4 q*) (erf: E erf''^2 = 16 q/(pi (1 + 4q)^{3/2}) in closed form)" if activation == "erf"
              else "q* E[phi''^2]/(2 E[phi'^2]) by composite Gauss-Legendre quadrature")
    return NumericRoute(
        lambda sigma_b, a=0.01: MF.eoc_growth_np(activation, a, sigma_b),
        lambda sigma_b, a=mpmath.mpf("0.01"): MF.eoc_growth_mp(activation, a, sigma_b),
        method + ", q* the root of q - E[phi^2]/E[phi'^2] = sigma_b^2 (eoc_sigma_w's); mpmath: the Illinois root "
        "and the fixed quadrature rules (gauss.moments_mp) for E[phi'^2], E[phi''^2]", EOC_GROWTH_ACCURACY.reason,
        2 * QE**2 / (1 + 4 * QE) if activation == "erf" else QE * _EXP(sp.Symbol(r"{\phi''}") ** 2)
        / (2 * _EXP(sp.Symbol(r"{\phi'}") ** 2)))


def _growth_kernel(activation, sigma_b, a=0.01):
    """8 r^2/(9 pi^2) with r = (1 - a)^2/(1 + a^2) formed as (1/a - 1)^2/(1/a^2 + 1) for |a| > 1 (no overflow at
    |a| = 1e308); relu r = 1."""
    a = np.asarray(a, float) if activation == "leaky_relu" else np.zeros(())
    big = np.abs(a) > 1
    b = np.where(big, 1 / np.where(big, a, 1.0), a)
    r = np.where(big, (b - 1) ** 2 / (b * b + 1), (1 - a) ** 2 / (1 + a * a))
    return 8 * r * r / (9 * np.pi**2) + 0 * np.asarray(sigma_b, float)


register(ClosedForm(
    "meanfield.gamma_eoc_growth",
    "C = lim gamma_L/L^p on the edge of chaos (sigma_w = eoc_sigma_w(sigma_b), sigma_b > 0): gamma_L ~ C L^p with "
    "p = 2 for relu/leaky_relu (C = 8 r^2/(9 pi^2), r = (1 - a)^2/(1 + a^2): four times the zero-bias law of "
    "depth.gamma, independent of sigma_b; relative correction O(L^{-1/2}) with a sigma_b-dependent coefficient, the "
    "law setting in for L >> sigma_w^2/sigma_b^2) and p = 1 for erf/tanh (C = sigma_w^2 q* E[phi''(sqrt(q*) Z)^2]/2; "
    "gamma_L = C L + O(ln L)). Off the edge: ordered, gamma_L ~ K chi_1^{-L} (rate 1/xi_c); chaotic, gamma_inf.",
    (ACT, A, SB),
    Provenance(SLIDES, SCHOENHOLZ + " Sec. 3 (the edge of chaos, where xi_c = inf: c_l -> 1 algebraically); "
               "derivations/meanfield.py (the maps expanded at e = 1 - c -> 0, the ansatz e_l = beta/l^p solved)",
               "the coefficient, not C L^p: it is the exact limit lim gamma_L/L^p (C L^p is only the leading term: "
               "at L = 1e5 relu is still 0.1-8% from it, depending on sigma_b)"),
    builder=_growth_case, kernel=_growth_kernel, accuracy=EOC_GROWTH_ACCURACY, conditions=EOC_CONDITIONS))
