"""The IGB law on a fixed dataset at infinite width (NNGP / CNN-GP): γ in both conventions and the activation
kernel maps that carry the data's Gram matrix through the network.

New theory on the IGB paper's App. I regime (igb-initial-guessing-bias.txt Sec. 3 defines γ = Var_W(μ_c)/E Var_χ(O_c);
App. I measures it on real data); the kernel construction is Lee et al. 2018 (NNGP), Novak et al. 2019 (CNN-GP).
derivations/nngp.py derives each form; igbsym.nngp computes them over a dataset (the ops' ``kernel`` maps).
With the output kernel K over the D points, T = (1/D) Σ_a K_aa, M = (1/D²) Σ_ab K_ab, M_off the mean over a ≠ b.
"""
import numpy as np
import sympy as sp

from ..form import Accuracy, ClosedForm, Condition, Param, Provenance
from ..ops import erf_kernel, relu_kernel
from ..registry import register

IGB = "igb-initial-guessing-bias.txt"
T, M, Moff = sp.Symbol("T", positive=True), sp.Symbol("M", real=True), sp.Symbol("M_off", real=True)
rho = sp.Symbol("rho", real=True)
k, va, vb = sp.Symbol("k", real=True), sp.Symbol("v_a", nonnegative=True), sp.Symbol("v_b", nonnegative=True)
T_PARAM = Param("T", "positive", "mean of the output kernel's diagonal, (1/D) sum_a K(x_a, x_a)")


def _ratio(num, den_from):
    """num/(den_from − num) without overflow: halves where the difference leaves the double range."""
    def fn(**kw):
        top, other = np.asarray(kw[num], float), np.asarray(kw[den_from], float)
        d = other - top
        big = ~np.isfinite(d)
        half = np.where(big, other / 2 - top / 2, d)
        return np.where(big, top / 2, top) / half
    return fn


register(ClosedForm(
    "nngp.gamma", "gamma of a network on a fixed dataset at infinite width, as the probe's estimators measure it: "
                  "M_off/(T - M_off) (their 1/D correction removes the self-pairs a = b).",
    (T_PARAM, Param("M_off", "real", "mean of the output kernel K(x_a, x_b) over pairs of distinct points a != b")),
    Provenance(IGB, "Sec. 3 (gamma = Var_W(mu_c)/E Var_chi(O_c)); App. I (real data)",
               "new: derivations/nngp.py (the expectation of the plain and Rao-Blackwellised estimator units over the "
               "output GP of kernel K)"),
    expr=Moff / (T - Moff), conditions=(Condition(sp.Lt(Moff, T), "M_off < T (the outputs vary over the data)"),),
    kernel=lambda T, M_off: _ratio("M_off", "T")(T=T, M_off=M_off)))

register(ClosedForm(
    "nngp.gamma_population", "gamma with the fixed dataset as the population: M/(T - M) = nngp.gamma + (1 + "
                             "nngp.gamma)/(D - 1), M = (1/D^2) sum_ab K(x_a, x_b).",
    (T_PARAM, Param("M", "real", "mean of the output kernel over all ordered pairs (a = b included)")),
    Provenance(IGB, "Sec. 3 (Var_W(mu_c) with mu_c the mean over the dataset)", "new: derivations/nngp.py"),
    expr=M / (T - M), conditions=(Condition(sp.Lt(M, T), "M < T (the outputs vary over the data)"),),
    kernel=lambda T, M: _ratio("M", "T")(T=T, M=M)))

register(ClosedForm(
    "nngp.relu_kernel", "The arc-cosine kernel J(rho) = E[relu(u) relu(v)]/sqrt(E u^2 E v^2) of a centred Gaussian "
                        "pair "
                        "with correlation rho: every positively homogeneous activation's kernel map is (1 - s)^2 "
                        "sqrt(v_a v_b) J(rho) + s k.",
    (Param("rho", "real", "correlation of the two Gaussian pre-activations"),),
    Provenance("Cho & Saul 2009 (arc-cosine kernel of degree 1); Lee et al. 2018, Eq. 5",
               "the NNGP activation map",
               "derivations/nngp.py: CAS from the arc-cosine map, and a 1-d mpmath integral"),
    expr=(sp.sqrt(1 - rho**2) + rho * (sp.pi - sp.acos(rho))) / (2 * sp.pi),
    conditions=(Condition(sp.Le(sp.Abs(rho), 1), "-1 <= rho <= 1"),), kernel=relu_kernel))

register(ClosedForm(
    "nngp.erf_kernel", "The arcsine kernel E[erf(u) erf(v)] of a centred Gaussian pair with variances v_a, v_b and "
                       "covariance k: (2/pi) arcsin(2k/sqrt((1 + 2 v_a)(1 + 2 v_b))).",
    (Param("k", "real", "covariance E[uv]"), Param("v_a", "nonnegative", "variance of u (at most 1e3)"),
     Param("v_b", "nonnegative", "variance of v (at most 1e3)")),
    Provenance("Williams 1997 (arcsine kernel); Lee et al. 2018, Sec. 2.3", "the NNGP map of erf",
               "derivations/nngp.py: Price's theorem (CAS), and a 1-d mpmath integral"),
    expr=2 / sp.pi * sp.asin(2 * k / sp.sqrt((1 + 2 * va) * (1 + 2 * vb))),
    conditions=(Condition(sp.Le(k**2, va * vb), "k^2 <= v_a v_b (a covariance)",
                          # the larger of two roundings of sqrt(v_a v_b): sqrt(v_a) sqrt(v_b) can fall 1 ulp below
                          # k = v_a = v_b (3.0 does), sqrt(v_a v_b) is exact there but underflows below 1e-154
                          numpy=lambda k, v_a, v_b: np.abs(k) <= np.maximum(np.sqrt(v_a) * np.sqrt(v_b),
                                                                            np.sqrt(v_a * v_b))),
                Condition(sp.And(sp.Le(va, 1000), sp.Le(vb, 1000)),
                          "v_a, v_b <= 1e3 (erf saturates; the atan2 form keeps 1e-12 relative there)")),
    kernel=lambda k, v_a, v_b: erf_kernel(k, v_a, v_b),
    accuracy=Accuracy(1e-12)))
