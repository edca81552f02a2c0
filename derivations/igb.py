"""Derivation of the IGB law (igbsym/families/igb.py) from the definition of G0, and of γ for one hidden layer.

igb-initial-guessing-bias.txt Sec. 3–4 and App. C–D: for fixed weights, outputs over the data are
O_c ~ N(μ_c, V_χ) and the centres over weights are μ_c ~ N(0, V_W) (infinite width). With two classes,
G0 = P_χ(O_0 > O_1 | W) = Φ((μ_0 − μ_1)/√(2V_χ)) and μ_0 − μ_1 ~ N(0, 2V_W), so G0 = Φ(√γ Z) with γ = V_W/V_χ.
"""
import sympy as sp

from igbsym import activations as acts
from igbsym.functions import Phi, PhiInv

from .base import Derivation, require
from .rectified import gauss, mp_moment, x

g = sp.Symbol("g", positive=True)
p = sp.Symbol("p", positive=True)
q = sp.Symbol("q", positive=True)
gamma = sp.Symbol("gamma", positive=True)
z = sp.Symbol("z", real=True)
a = sp.Symbol("a", real=True)
VW, VX = sp.symbols("V_W V_chi", positive=True)


def _law(d: Derivation):
    d.step("Two classes: G0 = Phi((mu_0 - mu_1)/sqrt(2 V_chi)), mu_0 - mu_1 = sqrt(2 V_W) Z, Z ~ N(0,1), so",
           sp.Eq(sp.Symbol("G_0"), Phi(sp.sqrt(2 * VW) * z / sp.sqrt(2 * VX))))
    d.step("i.e. G0 = Phi(sqrt(gamma) Z) with gamma = V_W / V_chi.")
    cdf = Phi(PhiInv(g) / sp.sqrt(gamma))
    d.step("CDF: P(G0 <= g) = P(Z <= Phi^{-1}(g)/sqrt(gamma)), Phi being increasing:", cdf)
    d.prove("igb.cdf", cdf)
    pdf = sp.simplify(sp.diff(cdf, g))
    d.step("Density by differentiation (d Phi^{-1}(g)/dg = sqrt(2 pi) exp(Phi^{-1}(g)^2/2)):", pdf)
    d.prove("igb.pdf", pdf)
    d.prove("igb.logpdf", sp.expand_log(sp.log(pdf), force=True))
    xs = sp.Symbol("x", real=True)
    total = sp.integrate(sp.exp(-xs**2 / (2 * gamma)) / sp.sqrt(2 * sp.pi * gamma), (xs, -sp.oo, sp.oo))
    d.step("Normalisation: with g = Phi(x), f(g) dg = N(x; 0, gamma) dx, whose integral is", total)
    require(total == 1)
    quant = Phi(sp.sqrt(gamma) * PhiInv(p))
    require(sp.simplify(cdf.subs(g, quant) - p) == 0)
    d.step("Quantile: solving F(Q) = p (Phi and Phi^{-1} invert each other):", quant)
    d.prove("igb.quantile", quant)
    d.prove("igb.p_outside", sp.simplify(cdf.subs(g, q) + 1 - cdf.subs(g, 1 - q)))
    d.step("P(G0 < q or G0 > 1-q) = F(q) + 1 - F(1-q) = 2 F(q) by the symmetry Phi^{-1}(1-q) = -Phi^{-1}(q).")
    xx = sp.Symbol("x", real=True)
    f_x = sp.exp((1 - 1 / gamma) * xx**2 / 2) / sp.sqrt(gamma)
    require(f_x.subs(gamma, 1) == 1)
    d.step("Limits. gamma = 1: f = 1 (uniform). gamma -> 0: F -> 0 for g < 1/2 and 1 for g > 1/2 (point mass at 1/2); "
           "gamma -> oo: F -> 1/2 on (0, 1) (mass 1/2 at each end):")
    neg, pos = sp.Symbol("x", negative=True), sp.Symbol("x", positive=True)
    lims = [sp.limit(Phi(neg / sp.sqrt(gamma)).rewrite(sp.erf), gamma, 0, "+"),
            sp.limit(Phi(pos / sp.sqrt(gamma)).rewrite(sp.erf), gamma, 0, "+"),
            sp.limit(Phi(neg / sp.sqrt(gamma)).rewrite(sp.erf), gamma, sp.oo)]
    require(lims == [0, 1, sp.S.Half], lims)
    d.step("SymPy limits [gamma->0 (x<0), gamma->0 (x>0), gamma->oo]:", sp.Tuple(*lims))
    c = VW / (VW + VX)
    d.step("Mean-field correlation of two inputs' outputs: Cov = Var_W(mu) = V_W, Var = V_W + V_chi, so", c)
    d.prove("igb.corr", sp.simplify(c.subs(VW, gamma * VX)))


def _gamma(d: Derivation):
    sw = sp.Symbol("sigma_w", positive=True)
    d.step("igb.gamma: one hidden layer, N(0, I) data, Kaiming weights: node pre-activations are N(0, sigma_w^2) "
           "in the "
           "infinite-width limit; with zero-mean output weights v, Var_W(mu_c) = N E[v^2] E_x[phi]^2 and "
           "Var_chi(O_c) = N E[v^2] Var_x[phi] (IGB paper Eqs. 16-19), so gamma = E[phi]^2 / Var[phi].")
    kinked = [n for n, act in acts.ACTIVATIONS.items() if act.kinked]
    for name in kinked:
        f = acts.get(name).expr.subs({acts.x_: x, acts.a_: a, acts.s_: sw})
        m = sp.integrate(f * gauss(0, sw), (x, -sp.oo, sp.oo))
        v = sp.integrate((f - m) ** 2 * gauss(0, sw), (x, -sp.oo, sp.oo))
        d.prove("igb.gamma", m**2 / v, activation=name)
    d.step("ReLU: gamma = (1/(2 pi)) / (1/2 - 1/(2 pi)) = 1/(pi - 1), independent of sigma_w.")
    odd = [n for n, act in acts.ACTIVATIONS.items() if act.odd and not act.kinked]
    for name in odd:
        d.prove("igb.gamma", sp.S.Zero, activation=name)
    d.step(f"{', '.join(odd)} (antisymmetric): E[phi] = 0 so gamma = 0 (IGB paper App. G.2).")
    for name in (n for n, act in acts.ACTIVATIONS.items() if not act.kinked and not act.odd):
        mean, var = mp_moment(name, False), mp_moment(name, True)
        d.prove_numeric_identity("igb.gamma", lambda sigma_w, mean=mean, var=var: mean(sigma_w) ** 2 / var(sigma_w),
                                 [dict(sigma_w=v) for v in ("0.5", "1", "2")], dps=30, tol=1e-11,
                                 reason="ratio of quadratures vs independent mpmath quadrature", activation=name)


def derive() -> Derivation:
    d = Derivation("igb", "The IGB law of G0 and gamma of one hidden layer")
    _law(d)
    _gamma(d)
    return d


if __name__ == "__main__":
    from .base import document
    print(document([derive()]))
