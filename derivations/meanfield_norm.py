"""Derivation of the LayerNorm / RMSNorm mean-field forms (igbsym/families/meanfield_norm.py).

1. The norm's map at infinite width: the units of h are i.i.d. N(0, q) (W, b of mean 0), so the layer mean -> 0 and
   the layer mean square -> q: LN(h) = RMS(h) = h/sqrt(q) before phi; after phi LN(phi) = (phi - M)/sqrt(V) and
   RMS(phi) = phi/sqrt(S), whose mean square is 1 exactly, so q' = sigma_w^2 + sigma_b^2.
2. chi_1 = dc'/dc at c = 1 from the c-maps by Price's theorem, d E phi(u)phi(v)/d(qc) = E phi'(u)phi'(v), proved
   here for the arc-cosine kernel of relu / leaky_relu and the arcsine kernel of erf (SymPy derivatives at c = 1),
   with E phi, E phi^2, E phi'^2 integrated by SymPy; the registered closed forms equal the assembled chi_1.
3. The edge of chaos: chi_1 = 1 solved for sigma_b^2/sigma_w^2; relu/leaky_relu before the norm or after RMSNorm
   have chi_1 < 1 at every sigma_b > 0 (E phi'^2 = E phi^2 for 1-homogeneous phi); LayerNorm after relu gives the
   ray 1/(pi - 1), after leaky_relu r/(pi - r); erf before: 4/(pi sqrt 5) - (2/pi) asin(2/3) > 0.
4. The equivalent plain MLP used by the routes: its c-map equals the normed one (SymPy identity in the moments).
5. A numeric route (tanh's c* before the norm): against the c-map's root by a 2-D Gauss-Hermite rule.
"""
import sympy as sp

import igbsym

from .base import Derivation, DerivationError, Proof, require, symbolically_equal

x, c = sp.Symbol("x", real=True), sp.Symbol("c", real=True)
q, sw, sb = sp.Symbol("q", positive=True), sp.Symbol("sigma_w", positive=True), sp.Symbol("sigma_b", positive=True)
a = sp.Symbol("a", real=True)
CHI = "meanfield.norm_chi_1"


def _gauss(f, var=1):
    """E f(sqrt(var) Z) by SymPy."""
    return sp.simplify(sp.integrate(f.subs(x, sp.sqrt(var) * x) * sp.exp(-x**2 / 2) / sp.sqrt(2 * sp.pi),
                                    (x, -sp.oo, sp.oo)))


def _leaky_moments(slope, var=1):
    """(M, S, A) = (E phi, E phi^2, E phi'^2) of phi = x for x >= 0, slope x otherwise, on N(0, var)."""
    phi = sp.Piecewise((x, x >= 0), (slope * x, True))
    dphi = sp.Piecewise((1, x >= 0), (slope, True))
    return _gauss(phi, var), _gauss(phi**2, var), _gauss(dphi**2, var)


def _kernel_slope(d: Derivation):
    """Price's theorem at c = 1 for the closed kernels: d/dc of the normalised pair moment."""
    k = sp.Function("k")
    r = sp.Symbol("r", positive=True)
    arccos = c + r * (sp.sqrt(1 - c**2) - c * sp.acos(c)) / sp.pi          # ops.act.arccos_map
    slope = sp.limit(sp.diff(arccos, c), c, 1, "-")
    require(sp.simplify(slope - 1) == 0, "k'(1) = 1")
    d.step("Price's theorem: d E[phi(u)phi(v)]/dc = q E[phi'(u)phi'(v)]; for the leaky arc-cosine kernel "
           "k(c) = E phi(u)phi(v)/E phi^2 (ops.act.arccos_map) SymPy gives", sp.Eq(sp.Derivative(k(c), c), slope))
    erf_pair = 2 / sp.pi * sp.asin(2 * q * c / (1 + 2 * q))
    dslope = sp.simplify(sp.diff(erf_pair, c).subs(c, 1))
    require(sp.simplify(dslope - q * 4 / (sp.pi * sp.sqrt(1 + 4 * q))) == 0, "erf: P'(1) = q E erf'^2")
    d.step("and for erf's arcsine kernel P(c) = (2/pi) asin(2qc/(1 + 2q)): P'(1) = q E erf'(u)^2 =",
           sp.Eq(sp.Symbol("P'(1)"), dslope))


def _chi_cases(d: Derivation):
    M1, S1, A1 = _leaky_moments(a)
    require(sp.simplify(S1 - A1) == 0, "E phi^2 = E phi'^2 (1-homogeneous)")
    Mq, Sq, Aq = _leaky_moments(a, q)
    Vq = sp.simplify(Sq - Mq**2)
    d.step("Leaky phi (slope a) on N(0, q): E phi, E phi^2, E phi'^2 =", sp.Tuple(Mq, Sq, Aq))
    before = sw**2 * A1 / (sw**2 * S1 + sb**2)
    after = {"rmsnorm": sw**2 * Aq / Sq, "layernorm": sw**2 * Aq / Vq}
    d.step("before the norm (q = 1): chi_1 = sigma_w^2 E phi'^2/(sigma_w^2 E phi^2 + sigma_b^2) =", before)
    form = igbsym.get(CHI)
    for act, sub in (("relu", {a: 0}), ("leaky_relu", {})):
        for norm in ("layernorm", "rmsnorm"):
            for placement, derived in (("before", before), ("after", after[norm].subs(q, sw**2 + sb**2))):
                d.prove(CHI, sp.simplify(derived.subs(sub)), activation=act, norm=norm, placement=placement)
    e_a1 = _erf_moment(sp.diff(sp.erf(x), x) ** 2)
    require(sp.simplify(e_a1 - 4 / (sp.pi * sp.sqrt(5))) == 0, "E erf'(Z)^2")
    d.step("erf: E erf'(u)^2 = (4/pi)/sqrt(1 + 4q) (SymPy at q = 1:", sp.Eq(sp.Symbol("A_1"), e_a1))
    S = 2 / sp.pi * sp.asin(2 * q / (1 + 2 * q))
    A = 4 / (sp.pi * sp.sqrt(1 + 4 * q))
    for norm in ("layernorm", "rmsnorm"):
        d.prove(CHI, (sw**2 * A.subs(q, 1) / (sw**2 * S.subs(q, 1) + sb**2)), activation="erf", norm=norm,
                placement="before")
        got = form.case(activation="erf", norm=norm, placement="after").subs(
            {form.symbol("sigma_w"): sw, form.symbol("sigma_b"): sb})
        if not symbolically_equal(got, (sw**2 * A / S).subs(q, sw**2 + sb**2)):
            raise DerivationError(f"{CHI} erf {norm} after: {got}")
        d.proofs.append(Proof(CHI, "symbolic", "sigma_w^2 A(q)/S(q), M = 0 (odd): LN = RMS",
                              dict(activation="erf", norm=norm, placement="after")))
    return Vq, Sq


def _erf_moment(f):
    """E f(Z) for erf's derivatives (a Gaussian integral SymPy closes)."""
    return sp.simplify(sp.integrate(f * sp.exp(-x**2 / 2) / sp.sqrt(2 * sp.pi), (x, -sp.oo, sp.oo)))


def _edge(d: Derivation, Vq, Sq):
    beta = sp.Symbol("beta", positive=True)
    chi_ln = (Sq / Vq).subs(q, 1) / (1 + beta)              # sigma_w^2 A/V with A = S/q at q = sigma_w^2(1 + beta)
    root = sp.solve(sp.Eq(chi_ln, 1), beta)
    require(len(root) == 1, "one root")
    ratio2 = sp.simplify(root[0])
    r = (1 - a) ** 2 / (1 + a**2)
    require(sp.simplify(ratio2 - r / (sp.pi - r)) == 0, "LN after: beta = r/(pi - r)")
    require(sp.simplify(ratio2.subs(a, 0) - 1 / (sp.pi - 1)) == 0, "relu 1/(pi - 1)")
    d.step("LayerNorm after leaky phi: chi_1 = 1 at sigma_b^2/sigma_w^2 =", sp.Eq(beta, ratio2))
    for act, sub in (("relu", {a: 0}), ("leaky_relu", {})):
        form = igbsym.get("meanfield.norm_eoc")
        registered = form.case(activation=act, norm="layernorm", placement="after").subs(form.symbol("a"), a)
        if sp.simplify(sp.expand(registered**2 - ratio2.subs(sub))) != 0:
            raise DerivationError(f"meanfield.norm_eoc {act} layernorm after: {registered}^2 != {ratio2}")
        d.proofs.append(Proof("meanfield.norm_eoc", "symbolic", "registered^2 - sigma_b^2/sigma_w^2 at chi_1 = 1 "
                              "simplifies to 0 (both >= 0)", dict(activation=act, norm="layernorm",
                                                                   placement="after")))
    gap = 4 / (sp.pi * sp.sqrt(5)) - 2 / sp.pi * sp.asin(sp.Rational(2, 3))
    require(bool(gap > 0), "erf: A_1 > S_1")
    for norm in ("layernorm", "rmsnorm"):
        d.prove("meanfield.norm_eoc", sp.sqrt(gap), activation="erf", norm=norm, placement="before")
    d.step("Before the norm: chi_1 = 1 at sigma_b^2/sigma_w^2 = A_1 - S_1 (a ray; needs A_1 > S_1, Gaussian Poincare "
           "for odd non-affine phi); erf:", sp.Eq(sp.Symbol("A_1 - S_1"), gap))
    d.step("relu/leaky_relu: A_1 = S_1 and A(q)/S(q) = 1/q, so chi_1 = sigma_w^2/(sigma_w^2 + sigma_b^2/h) before and "
           "sigma_w^2/(sigma_w^2 + sigma_b^2) after RMSNorm: < 1 at every sigma_b > 0 (no edge of chaos there; "
           "meanfield.norm_eoc refuses these cases).")


def _equivalent(d: Derivation):
    K, S1, P = sp.symbols("K S_1 P", positive=True)           # K = E phi phi at (1, c), S1 = E phi^2 at q = 1
    Q = sw**2 * S1 + sb**2
    tw2, tb2 = sw**2 / Q, sb**2 / Q
    require(sp.simplify(tw2 * S1 + tb2 - 1) == 0, "q~* = 1")
    require(sp.simplify((tw2 * K + tb2) / 1 - (sw**2 * K + sb**2) / Q) == 0, "same c-map (before)")
    Sq = sp.Symbol("S_q", positive=True)
    qq = sw**2 + sb**2
    require(sp.simplify((sw**2 / Sq) * Sq + sb**2 - qq) == 0, "q~* = q (after)")
    require(sp.simplify(((sw**2 / Sq) * P + sb**2) / qq - (sw**2 * P / Sq + sb**2) / qq) == 0, "same c-map (after)")
    d.step("The routes' equivalent plain MLP: before, (sigma_w, sigma_b)/sqrt(sigma_w^2 S_1 + sigma_b^2) has the "
           "length-map fixed point q~* = 1 and the c-map (sigma_w^2 K(c) + sigma_b^2)/(sigma_w^2 S_1 + sigma_b^2); "
           "after RMSNorm (or LN of odd phi), (sigma_w/sqrt(S(q)), sigma_b) has q~* = q = sigma_w^2 + sigma_b^2 and "
           "c-map (sigma_w^2 P(c)/S(q) + sigma_b^2)/q: the normed nets' maps (SymPy identities).")


def _numeric(d: Derivation):
    """tanh c* before LayerNorm: the root of the c-map with E tanh(u) tanh(v) by a 2-D Gauss-Hermite tensor rule
    (200 x 200 nodes; independent of the route's Mehler series), against the route."""
    import numpy as np
    from scipy.optimize import brentq
    from scipy.special import roots_hermitenorm
    z, w = roots_hermitenorm(200)
    w = w / w.sum()
    s1 = float(np.tanh(z) ** 2 @ w)
    w2, b2 = 4.0, 0.09

    def cmap(cc):
        v = cc * z[:, None] + np.sqrt(1 - cc * cc) * z[None, :]
        return (w2 * float(w @ (np.tanh(z)[:, None] * np.tanh(v)) @ w) + b2) / (w2 * s1 + b2)
    ref = brentq(lambda cc: cmap(cc) - cc, 0.2, 0.8, xtol=1e-15, rtol=1e-15)
    case = dict(activation="tanh", norm="layernorm", placement="before")
    at = [dict(sigma_w=2.0, sigma_b=0.3)]
    d.check_route("meanfield.norm_c_star", at, lambda **_: ref, 1e-9, "the root of the c-map by a 200 x 200 "
                  "Gauss-Hermite rule at sigma_w = 2, sigma_b = 0.3", **case)
    d.check_route("meanfield.norm_gamma_inf", at, lambda **_: ref / (1 - ref), 1e-9, "c*/(1 - c*) of the same "
                  "Gauss-Hermite root", **case)


def derive() -> Derivation:
    d = Derivation("meanfield_norm", "Mean field with LayerNorm / RMSNorm before or after phi")
    d.step("At infinite width the units of h are i.i.d. N(0, q) (W and b have mean 0): the layer mean tends to 0 and "
           "the mean square to q, so before phi LN(h) = RMS(h) = h/sqrt(q) (q is fixed to 1, and q' = sigma_w^2 "
           "E phi(Z)^2 + sigma_b^2); after phi LN(phi) = (phi - M)/sqrt(V), RMS(phi) = phi/sqrt(S) have mean square "
           "1, so q' = sigma_w^2 + sigma_b^2 at every layer past the first.")
    _kernel_slope(d)
    Vq, Sq = _chi_cases(d)
    _edge(d, Vq, Sq)
    _equivalent(d)
    _numeric(d)
    return d


if __name__ == "__main__":
    from .base import document
    print(document([derive()]))
