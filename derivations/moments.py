"""Derivation of Labatie's moments in the width limit (igbsym/families/moments.py; the noise maps are the ops'
own, Op.noise).

moments-well-behaved-vs-pathological.txt Sec. 3.1 defines, in words (its formulas are stripped in our copy), the
non-central and central second moments of a layer's feature vectors, averaged over channels, and the normalised
sensitivity χ from the simultaneous propagation of the signal and a small input noise. Here they are computed from
the spec state (q, c, e = 1 − c, m) and the noise second moment ν.
"""
import math

import mpmath
import sympy as sp

import igbsym

from .base import Derivation, require
from .rectified import gauss, x

gamma, c, q = sp.Symbol("gamma", nonnegative=True), sp.Symbol("c", real=True), sp.Symbol("q", positive=True)


def _bridge(d: Derivation):
    d.step("Feature vector of a layer, unit i, data point x, weights W: mu_2 = E[x_i^2] = q; centred over the data "
           "(given W): mu_2,c = E[Var_x x_i] = E[x_i^2] - E[(E_x x_i)^2] = q - c q, because for two independent "
           "data points E[x_i(x) x_i(x')] = E[(E_x x_i)^2] = c q.")
    ratio = (q - c * q) / q
    d.step("A linear readout O = v . x / sqrt(n) of the layer has Var_W(mu_O) = sigma_v^2 c q and E Var_chi(O) = "
           "sigma_v^2 (1 - c) q, so its IGB ratio is gamma = c/(1 - c), i.e. c = gamma/(1 + gamma). Then")
    bridged = sp.simplify(ratio.subs(c, gamma / (1 + gamma)))
    d.step("mu_2,c / mu_2 = 1 - c =", bridged)
    d.prove("moments.centred_ratio", bridged)
    d.step("Labatie's zero-dimensional (point-like) pathology mu_2,c/mu_2 -> 0 is therefore exactly gamma -> oo: a "
           "layer whose readout is deeply prejudiced (IGB) is a point-like layer, and every depth law of igbsym "
           "(depth.gamma, bn.*, maxpool.gamma, resnet.gamma) is a statement about it.")


def _noise(d: Derivation):
    s = sp.Symbol("s", real=True)
    density = gauss(0, sp.sqrt(q))
    dphi2 = sp.integrate(density, (x, 0, sp.oo)) + s**2 * sp.integrate(density, (x, -sp.oo, 0))
    d.step("Noise: dx' = J dx. Dense: E[(W dx)_i^2] = sigma_w^2 nu. phi: E[phi'(u)^2] nu for an isotropic noise "
           "independent of the data (u and du are uncorrelated in the width limit); for phi = x^+ - s x^-:",
           sp.simplify(dphi2))
    require(sp.simplify(dphi2 - (1 + s**2) / 2) == 0, "E phi'^2 of the leaky ReLU")
    d.step("Norms divide by the per-sample scale: LayerNorm 1/(q - m^2), RMSNorm 1/q; full-batch BN divides unit i by "
           "its data standard deviation sqrt(e q) (equal for every unit when the units are Gaussian). A residual "
           "block adds alpha^2 times the branch's noise (its Jacobian has fresh zero-mean weights: no cross term). "
           "chi_l^2 = (nu_l/nu_0)/(mu_2,c(x_l)/mu_2,c(x_0)) = nu_l/(e_l q_l) for N(0, I) data.")


def _vanilla_route(L):
    """χ_L of a vanilla ReLU net: ν and q both scale by σ_w²/2 per layer, e from depth.gamma (independent route)."""
    def route(sigma_w):
        g = igbsym.get("depth.gamma").mp(mpmath.mp.dps, L=L, activation="relu", sigma_w=sigma_w)
        # after the L-th activation: q = (σ_w²/2)^L (from unit data), ν = (σ_w²/2)^L, e = 1/(1 + γ_L) of the next Dense
        return mpmath.sqrt(1 + g)
    return route


def _rates(d: Derivation):
    d.prove_numeric_identity("moments.sensitivity", lambda alpha, sigma_w: _vanilla_route(6)(sigma_w),
                             [dict(alpha=1, sigma_w=v) for v in ("0.7", "1.41421356237309504880", "2")], dps=30,
                             tol=1e-20, reason="vanilla ReLU: nu and q scale alike, so chi_L = sqrt(1 + gamma_L) with "
                                               "gamma_L from depth.gamma", L=6, architecture="vanilla",
                             activation="relu")
    S = sp.integrate(x**2 * gauss(0, 1), (x, 0, sp.oo))
    M = sp.integrate(x * gauss(0, 1), (x, 0, sp.oo))
    dphi2 = sp.integrate(gauss(0, 1), (x, 0, sp.oo))
    p = sp.simplify(dphi2 / (S - M**2))
    d.step("BN feedforward (Dense, BN, phi): after BN the units are N(0, 1) for every layer, so per layer nu is "
           "multiplied by E[phi'(Z)^2]/Var[phi(Z)] = p while e q = Var[phi(Z)] stays fixed: chi_{l+1}/chi_l = sqrt(p). "
           "For ReLU p =", p)
    d.prove("moments.bn_feedforward_rate", sp.log(p) / 2, activation="relu")
    d.step("BN ResNet (x + alpha Dense(phi(BN(x))), full-batch BN): the branch adds alpha^2 sigma_w^2 Var[phi(Z)] to "
           "the centred part V = e q at every block, so V_l = V_0 + l alpha^2 sigma_w^2 Var[phi(Z)]; the noise gets "
           "nu_{l+1} = nu_l (1 + alpha^2 sigma_w^2 E[phi'(Z)^2]/V_l), so log nu_L = p log L + O(1) and "
           "chi_L^2 = nu_L/V_L ~ L^(p - 1): a power law with exponent beta = (p - 1)/2 for every alpha > 0.")
    d.prove("moments.bn_resnet_exponent", (p - 1) / 2, activation="relu")
    d.step("With H layers (BN, phi, Dense) per residual unit (Labatie's experiments: H = 2) every inner BN divides by "
           "the data variance sigma_w^2 Var[phi(Z)] of the layer before it, so the branch multiplies the noise by "
           "alpha^2 sigma_w^2 E[phi'(Z)^2] p^(H-1)/V_l while V still grows by alpha^2 sigma_w^2 Var[phi(Z)] a block: "
           "log nu_L = p^H log L + O(1) and beta = (p^H - 1)/2.")
    for H in (1, 2):
        d.prove("moments.bn_resnet_exponent", (p**H - 1) / 2, activation="relu", H=H)
    form = igbsym.get("moments.sensitivity")
    lo, hi = 5000, 10**4
    for H in (1, 2):
        slope = math.log(form.numpy(L=hi, architecture="bn_resnet", activation="relu", H=H) /
                         form.numpy(L=lo, architecture="bn_resnet", activation="relu", H=H)) / math.log(2)
        beta = float((p**H - 1) / 2)
        require(abs(slope - beta) < 1e-3, f"BN ResNet (H = {H}) log-slope {slope} vs exponent {beta}")
        d.step(f"Check on the recursion (H = {H}): the log-log slope of chi between L = 5000 and 10^4 is {slope:.5f}, "
               f"the exponent (p^H - 1)/2 = {beta:.5f}.")
    d.step("Gaussian Poincare inequality: Var[phi(Z)] <= E[phi'(Z)^2], so p >= 1 with equality iff phi is linear: BN "
           "feedforward nets explode exponentially and BN ResNets grow as a power law for every nonlinear phi "
           "(Labatie Thm 3 and Sec. 7, here with the rate and the exponent in closed form).")


def derive() -> Derivation:
    d = Derivation("moments", "Labatie's moments: the point-like bridge and the normalised sensitivity")
    _bridge(d)
    _noise(d)
    _rates(d)
    return d
