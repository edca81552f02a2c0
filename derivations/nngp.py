"""Derivation of the data-kernel IGB law (igbsym/families/nngp.py, igbsym/nngp/).

New theory for the IGB paper's App. I regime (real data): at infinite width the outputs over a fixed dataset are a
centred GP (Lee et al. 2018; Novak et al. 2019 for convolutions) whose kernel K composes one map per op.
"""
import mpmath
import numpy as np
import sympy as sp

import igbsym
from igbsym.nngp import walk
from igbsym.ops import arccos_map
from igbsym.spec import NetSpec, resnet_ops

from .base import Derivation, require

rho = sp.Symbol("rho", real=True)
D = sp.Symbol("D", positive=True, integer=True)
Sd, Sa = sp.symbols("S_diag S_all", real=True)
T, Moff, M = sp.Symbol("T", positive=True), sp.Symbol("M_off", real=True), sp.Symbol("M", real=True)


def _conventions(d: Derivation):
    d.step("Readout O_c(x) = v_c . h(x) with i.i.d. zero-mean weights: given the penultimate features, (O_c(x_a))_a "
           "is a centred Gaussian vector with covariance K (the output kernel), and E_W O_c = 0. Write S_diag = "
           "sum_a K_aa and S_all = sum_ab K_ab.")
    Emu2 = Sa / D**2                                     # E[mu_hat^2], mu_hat = (1/D) sum_a O(x_a)
    Es2 = (Sd - D * Emu2) / (D - 1)                      # E[s^2], s^2 the unbiased data variance
    d.step("E[mu_hat^2] = S_all/D^2 and E[s^2] = (S_diag - S_all/D)/(D - 1) (linearity of expectation).",
           sp.Tuple(Emu2, Es2))
    derived = sp.simplify((Emu2 - Es2 / D) / Es2)
    derived = sp.simplify(derived.subs({Sd: D * T, Sa: D * T + D * (D - 1) * Moff}))
    d.step("The estimators' units a = mu_hat^2 - s^2/D, b = s^2 (plain; the Rao-Blackwellised units have the same "
           "expectations, validation/estimators.py) give E a/E b, with S_diag = D T and S_all = D T + D(D-1) M_off:",
           derived)
    d.prove("nngp.gamma", derived)
    pop = sp.simplify((Sa / D**2) / (Sd / D - Sa / D**2)).subs({Sd: D * T, Sa: D**2 * M})
    d.step("With the dataset as the population: Var_W(mu) = E mu^2 = M and E Var_chi(O) = T - M (population variance):",
           sp.simplify(pop))
    d.prove("nngp.gamma_population", sp.simplify(pop))
    g = sp.Symbol("gamma_D")
    rel = (M / (T - M)).subs(M, T / D + (1 - 1 / D) * Moff) - (g + (1 + g) / (D - 1)).subs(g, Moff / (T - Moff))
    require(sp.simplify(rel) == 0, "gamma_pop = gamma_D + (1 + gamma_D)/(D - 1)")
    d.step("Since M = T/D + (1 - 1/D) M_off: gamma_pop = gamma_D + (1 + gamma_D)/(D - 1) exactly; the probe measures "
           "gamma_D, and both have the same limit for i.i.d. data as D -> oo.")


def _relu_inner(mu, s):
    """E[relu(mu + s xi)] = mu Phi(mu/s) + s phi(mu/s)."""
    return mu * mpmath.ncdf(mu / s) + s * mpmath.npdf(mu / s) if s > 0 else max(mu, 0)


def _relu_kernel_route(rho):
    """J(ρ) by the 1-d integral E_u[relu(u) E[relu(v) | u]] (u, v standard, corr ρ): an independent route."""
    s = mpmath.sqrt(1 - rho * rho)
    return mpmath.quad(lambda u: u * _relu_inner(rho * u, s) * mpmath.npdf(u), [0, 4, mpmath.inf])


def _erf_route(k, v_a, v_b):
    """E[erf(u) erf(v)] = E_u[erf(u) erf(mu/sqrt(1 + 2 s^2))], mu = (k/v_a) u, s^2 = v_b - k^2/v_a (1-d)."""
    s2 = v_b - k * k / v_a
    sd = mpmath.sqrt(v_a)
    return mpmath.quad(lambda z: mpmath.erf(sd * z) * mpmath.erf(k / v_a * sd * z / mpmath.sqrt(1 + 2 * s2))
                       * mpmath.npdf(z), [-mpmath.inf, -3, 0, 3, mpmath.inf])


def _kernels(d: Derivation):
    d.step("Activation map: the pre-activations of two points are a centred Gaussian pair (u, v) with variances "
           "v_a, v_b and covariance k (a Dense or Conv2d output). ReLU: by homogeneity E[relu(u) relu(v)] = "
           "sqrt(v_a v_b) J(rho), rho = k/sqrt(v_a v_b), and J is half the equal-variance arc-cosine map k_0 of "
           "igbsym.ops.arccos_map (E relu(u)^2 = v/2):")
    d.prove("nngp.relu_kernel", sp.simplify(arccos_map(rho, 0) / 2))
    pts = [dict(rho=r) for r in ("-0.9", "-0.3", "0", "0.5", "0.95")]
    d.prove_numeric_identity("nngp.relu_kernel", _relu_kernel_route, pts, dps=30, tol=1e-25,
                             reason="the 1-d integral E_u[relu(u) E(relu(v) | u)] with the closed-form inner mean")
    d.step("Positively homogeneous phi = x+ - s x- = (1 - s) relu(x) + s x: E[relu(u) v] = k E[relu'(u)] = k/2 "
           "(Stein's lemma), so E[phi(u) phi(v)] = (1 - s)^2 sqrt(v_a v_b) J(rho) + s k; SReLU = relu - kappa adds "
           "-kappa (E relu(u) + E relu(v)) + kappa^2 with E relu(u) = sqrt(v_a/(2 pi)).")
    s, va, vb, kk = mpmath.mpf("0.3"), mpmath.mpf("0.7"), mpmath.mpf("1.9"), mpmath.mpf("0.5")
    phi = lambda x: x if x > 0 else s * x  # noqa: E731
    L = mpmath.sqrt(va)
    c, r = kk / L, mpmath.sqrt(vb - kk * kk / va)
    inner = lambda m: m + (1 - s) * (r * mpmath.npdf(m / r) - m * mpmath.ncdf(-m / r))  # E phi(m + r xi)  # noqa: E731
    ref = mpmath.quad(lambda z: phi(L * z) * inner(c * z) * mpmath.npdf(z), [-mpmath.inf, 0, mpmath.inf])
    got = float(igbsym.ops.arccos_kernel(np.float64(kk), np.float64(va), np.float64(vb), 0.3))
    require(abs(got - ref) < 1e-13 * abs(ref), f"leaky kernel by Stein: {got} vs 1-d quadrature {ref}")
    d.step(f"Checked for leaky_relu (s = 0.3, v_a = 0.7, v_b = 1.9, k = 0.5) against the 1-d integral: "
           f"{float(ref):.15g}.")
    A, B, t, k = (sp.Symbol(n, positive=True) for n in ("A", "B", "t", "k"))
    d.step("erf: Price's theorem d/dk E[erf(u) erf(v)] = E[erf'(u) erf'(v)] = (4/pi) E[e^{-u^2-v^2}] = (4/pi)/sqrt(det"
           "(I + 2 C)) = (4/pi)/sqrt(A B - 4 k^2), C the covariance of (u, v), A = 1 + 2 v_a, B = 1 + 2 v_b, and "
           "the value 0 at k = 0:")
    integral = sp.integrate(4 / (sp.pi * sp.sqrt(A * B - 4 * t**2)), (t, 0, k), conds="none")
    derived = sp.simplify(integral.subs({A: 1 + 2 * sp.Symbol("v_a"), B: 1 + 2 * sp.Symbol("v_b")}))
    d.step("the integral:", derived)
    require(sp.simplify(sp.diff(2 / sp.pi * sp.asin(2 * k / sp.sqrt(A * B)), k)
                        - 4 / (sp.pi * sp.sqrt(A * B - 4 * k**2))) == 0, "derivative of the arcsine kernel")
    pts = [dict(k=k_, v_a=a_, v_b=b_) for k_, a_, b_ in (("0.3", "1", "0.5"), ("-1.2", "2", "1"), ("0.9", "0.9", "1"))]
    d.prove_numeric_identity("nngp.erf_kernel", _erf_route, pts, dps=20, tol=1e-15,
                             reason="the 1-d integral E_u[erf(u) E(erf(v) | u)], E erf(m + s xi) = erf(m/sqrt(1+2s^2))")


def _iid_limit(d: Derivation):
    d.step("The i.i.d. limit: N(0, I_d) data with d -> oo have x_a . x_b / d -> delta_ab, i.e. the data kernel "
           "K_0 = I. "
           "With K_0 = I exactly (orthonormal rows scaled to norm sqrt(d)) every op's kernel map reduces to its "
           "width-limit State map (k(a, a) = q, k(a, b) = c q), so the kernel walk must give depth.gamma and "
           "resnet.gamma for any D >= 2:")
    q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((64, 64)))
    x = q[:8] * 8.0
    cases = [("depth.gamma relu L=3", NetSpec(None, (None,) * 3, "relu").all_ops(),
              igbsym.get("depth.gamma").numpy(L=3, activation="relu")),
             ("depth.gamma gelu L=2", NetSpec(None, (None,) * 2, "gelu").all_ops(),
              igbsym.get("depth.gamma").numpy(L=2, activation="gelu")),
             ("resnet.gamma relu L=3 alpha=0.7", resnet_ops(3, "relu", 0.7) + (igbsym.ops.Dense(2),),
              igbsym.get("resnet.gamma").numpy(L=3, activation="relu", alpha=0.7))]
    for label, ops, ref in cases:
        s = walk(ops, x).summaries[-1]
        g = float(igbsym.get("nngp.gamma").numpy(T=float(s.T.sum()), M_off=float(s.M_off.sum())))
        require(abs(g - ref) <= 1e-10 * abs(ref), f"{label}: walk {g} vs {ref}")
        d.step(f"{label}: kernel walk {g:.15g}, registered {float(ref):.15g}.")


def derive() -> Derivation:
    d = Derivation("nngp", "IGB on a fixed dataset at infinite width (NNGP / CNN-GP)")
    _conventions(d)
    _kernels(d)
    _iid_limit(d)
    return d
