"""Mean field with BatchNorm (issue 48, Norms): the gradient-explosion rate of Yang et al. 2019 and the absence of an
edge of chaos.

Paper: Yang, Pennington, Rao, Sohl-Dickstein & Schoenholz 2019 ("A Mean Field Theory of Batch Normalization", ICLR).
Block: h = W φ(x) + b, x' = BN(h) with W ~ N(0, σ_w²/N), b ~ N(0, σ_b²), BN in training mode over a batch of B points
(per unit: centre over the batch, divide by the batch standard deviation, population variance; no affine at init).
Width N → ∞, mean-field assumptions: the BN outputs' batch Gram sits at its permutation-symmetric fixed point
Σ* = B/(B − 1)·(I − 11ᵀ/B) (the only symmetric Gram with unit diagonal and zero row sums: Yang et al.'s BSB1 point),
and the backward pass sees W independent of the forward pass (gradient independence).

- bn_grad_rate: λ, the per-layer factor of the mean squared gradient, E|∂L/∂x^{l−1}|² = λ E|∂L/∂x^l|² (the norm
  grows as λ^{L/2}). Per unit the batch vector x is √B·u, u uniform on the unit sphere of the centred subspace, and
  P h = σ_w √α·ξ (ξ standard in the (B − 1)-dim centred subspace, α = E φ(x_1)² − E φ(x_1)φ(x_2)). Backward, per
  unit: the gradient at h is J D s, J = (√B/|Ph|)(P − uuᵀ) BN's Jacobian, D = diag φ'(x), s = (Wᵀ ∂L/∂h')_unit
  Gaussian with covariance σ_w² m P (centred; by exchangeability) and independent of x (gradient independence);
  |Ph| is independent of u, E[1/χ²_{B−1}] = 1/(B − 3), and E tr[(P − uuᵀ) D P D (P − uuᵀ)] = (B − 1)/B ·
  ((B − 1) d_1 + d_2 − β), d_1 = E φ'(x_1)², d_2 = E φ'(x_1)φ'(x_2), β = E v_1² − E v_1 v_2 with v = φ'(x) x
  (D and J share x: the −uuᵀ term is not independent of D). So
      λ_B = ((B − 1) d_1 + d_2 − β)/(α (B − 3)),   B >= 4,
  independent of σ_w and σ_b (BN removes the scale σ_w and the batch-constant bias). For positively homogeneous φ
  (leaky ReLU of slope a: relu a = 0, identity a = 1, abs a = −1) the sphere law reduces to Gaussian orthant and
  arc-cosine integrals at correlation ρ = −1/(B − 1), in closed form: d_1 = (1 + a²)/2, d_2 = (1 + a²)(1/4 + s) +
  2a(1/4 − s), s = arcsin(ρ)/(2π), α = (1 + a²)(1/2 − g(ρ)) + 2a g(−ρ), g(r) = (√(1 − r²) + r(π − arccos r))/(2π),
  and β = α (φ'(x) x = φ(x)): λ_B = (((B − 1) d_1 + d_2)/α − 1)/(B − 3).
  Identity: (B − 2)/(B − 3) (Yang et al.'s linear rate). B → ∞: λ_∞ = E φ'(Z)²/Var φ(Z), Z ~ N(0, 1);
  relu π/(π − 1) ≈ 1.4669 (Yang et al.), leaky π(1 + a²)/(π(1 + a²) − (1 − a)²), abs π/(π − 2).
  Smooth φ (tanh, erf, sigmoid, gelu, silu): B = inf only (their finite-B sphere integrals are not in the library),
  E φ'² and Var φ by the library's quadrature (igbsym.gauss).
- No edge of chaos: by the Gaussian Poincaré inequality Var φ(Z) <= E φ'(Z)², equality iff φ is affine, so λ_∞ >= 1
  for every (σ_w, σ_b), = 1 only for the identity: a BN MLP's gradients explode at rate λ per layer whatever the
  initialisation (derivations/meanfield_bn.py proves it for the leaky family; tests/test_meanfield_norms.py checks
  λ_B > 1 at finite B).
"""
from __future__ import annotations

import mpmath
import numpy as np
import sympy as sp

from ..errors import InputError
from ..form import Accuracy, ClosedForm, Condition, NumericRoute, Param, Provenance
from ..gauss import derivative_moment_mp, derivative_moment_np
from ..gauss.activation import var_mp, var_np
from ..ops import arccos_map
from .. import params as P
from ..registry import register

YANG = "Yang, Pennington, Rao, Sohl-Dickstein & Schoenholz 2019 (A Mean Field Theory of Batch Normalization, ICLR)"
SLOPE = {"relu": sp.S.Zero, "identity": sp.S.One, "abs": sp.Integer(-1)}     # leaky_relu: the parameter a
HOMOGENEOUS = ("relu", "leaky_relu", "identity", "abs")
SMOOTH = ("tanh", "erf", "sigmoid", "gelu", "silu")
ACTIVATIONS = HOMOGENEOUS + SMOOTH
INF = float("inf")

a_, B_ = sp.Symbol("a", real=True), sp.Symbol("B", integer=True)
A_MAX = 10**100
ACT = Param("activation", "choice", "activation function (closed forms at every B for relu/leaky_relu/identity/abs; "
                                    "B = inf by quadrature for the smooth ones)", choices=ACTIVATIONS)
B_PARAM = Param("B", "integer", "BatchNorm batch size (training-mode batch statistics, B >= 4); inf (default): the "
                "large-batch limit E phi'^2/Var phi", default=INF, minimum=4, allow_inf=True, structural=True)
CONDITIONS = (
    Condition(sp.Le(sp.Abs(a_), A_MAX), "|a| <= 1e100 (the double range of (1 + a^2))"),
    Condition(sp.Eq(B_, sp.oo, evaluate=False), "B = inf for smooth activations (tanh, erf, sigmoid, gelu, silu): "
              "their finite-B rate needs expectations over the batch sphere, closed only for relu, leaky_relu, "
              "identity and abs", applies=lambda case: case.get("activation") in SMOOTH and case.get("B", INF) != INF),
)
ACCURACY = Accuracy(1e-11, "relu/leaky_relu/identity/abs: closed forms, rounding only (no cancellation: alpha >= "
                           "(1 + a^2)(1/2 - 1/pi) > 0); smooth activations: E phi'^2 and Var phi by the library's "
                           "quadrature (each <= 1e-12 relative, gauss.univariate / gauss.activation), a ratio: "
                           "stated 1e-11. Measured against mpmath.quad at 30 digits (tests/test_meanfield_norms.py)")


def relu_pair(r):
    """E relu(z_1) relu(z_2) for unit normals of correlation r: (√(1 − r²) + r(π − arccos r))/(2π), i.e. half
    the normalised arc-cosine map at slope 0 (ops.arccos_map; E relu(z)² = 1/2)."""
    return arccos_map(r, sp.S.Zero) / 2      # a SymPy zero: the slope ratio stays exact (1, not 1.0)


def homogeneous_rate(a, B):
    """λ_B of the leaky family of slope a (module docstring; B = sp.oo: the limit)."""
    if B == sp.oo:
        return sp.pi * (1 + a**2) / (sp.pi * (1 + a**2) - (1 - a) ** 2)
    B = sp.sympify(B)
    rho = -1 / (B - 1)
    s = sp.asin(rho) / (2 * sp.pi)
    d1 = (1 + a**2) / 2
    d2 = (1 + a**2) * (sp.Rational(1, 4) + s) + 2 * a * (sp.Rational(1, 4) - s)
    alpha = (1 + a**2) * (sp.Rational(1, 2) - relu_pair(rho)) + 2 * a * relu_pair(-rho)
    return (((B - 1) * d1 + d2) / alpha - 1) / (B - 3)


def _smooth_np(name):
    def value(a=0.01):
        return float(derivative_moment_np(name, 1.0)) / float(var_np(name, 1.0)) + 0 * np.asarray(a, float)
    return value


def _smooth_mp(name):
    def value(a=mpmath.mpf("0.01")):
        return derivative_moment_mp(name, mpmath.mpf(1), mpmath.mp.dps) / var_mp(name, mpmath.mpf(1))
    return value


def _refuse(activation, B):
    def route(**_):
        raise InputError(f"meanfield.bn_grad_rate: activation={activation} B={B}: smooth activations need B = inf "
                         "(the finite-B rate is closed for relu, leaky_relu, identity and abs only)")
    return route


def _build(activation, B=INF):
    if activation == "identity":     # the leaky form at a = 1 (derivations/meanfield_bn.py proves it at every B)
        return sp.S.One if B == INF else (sp.Integer(B) - 2) / (sp.Integer(B) - 3)
    if activation in HOMOGENEOUS:
        return homogeneous_rate(SLOPE.get(activation, a_), sp.oo if B == INF else sp.Integer(B))
    if B != INF:     # refused by the condition B = inf before evaluation; the route refuses too if called directly
        return NumericRoute(_refuse(activation, B), _refuse(activation, B), "none: B = inf only", "",
                            sp.Symbol("d_1") / sp.Symbol("alpha"))
    return NumericRoute(_smooth_np(activation), _smooth_mp(activation),
                        "E[phi'(Z)^2]/Var phi(Z), Z ~ N(0, 1): the library's quadrature moments (gauss)",
                        ACCURACY.reason, sp.Symbol("d_1") / sp.Symbol("alpha"))


register(ClosedForm(
    "meanfield.bn_grad_rate",
    "Gradient-explosion rate of a wide MLP with training-mode BatchNorm after every Dense (Dense -> BN -> phi): "
    "lambda, the per-layer factor of the mean squared gradient (its norm grows as lambda^(L/2)), independent of "
    "sigma_w and sigma_b. Leaky family (slope a; relu, identity, abs): lambda_B = (((B - 1) d_1 + d_2)/alpha - 1)/"
    "(B - 3) with d_1 = E[phi'(x_1)^2], d_2 = E[phi'(x_1)phi'(x_2)], alpha = E[phi(x_1)^2] - E[phi(x_1)phi(x_2)] "
    "over the batch sphere (closed: orthant and arc-cosine integrals at correlation -1/(B - 1); identity "
    "(B - 2)/(B - 3)); B = inf: E[phi'(Z)^2]/Var phi(Z) >= 1 (Gaussian Poincare; = 1 only for affine phi), relu "
    "pi/(pi - 1) = 1.4669: no (sigma_w, sigma_b) reaches the edge of chaos with BN.",
    (ACT, P.LEAKY_A, B_PARAM),
    Provenance("(none in shared/papers)", YANG + ": the gradient-explosion rate (linear (B - 2)/(B - 3), relu "
               "pi/(pi - 1) at large B); derivations/meanfield_bn.py",
               "infinite width; the BSB1 fixed point Sigma* = B/(B - 1)(I - 11^T/B) of the BN outputs and gradient "
               "independence (the mean-field assumptions); B >= 4 (E[1/chi^2_(B-1)] is infinite at B = 3)"),
    builder=_build, accuracy=ACCURACY, conditions=CONDITIONS))
