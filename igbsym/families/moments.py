"""Labatie's moments (moments-well-behaved-vs-pathological.txt, Secs. 3.1–3.2, 5–7) in the width limit.

The bridge (``moments.centred_ratio``): the ratio μ₂,c/μ₂ of a layer's data-centred to non-centred second moment is
1/(1 + γ), with γ the IGB ratio of a linear readout of that layer — the point-like (zero-dimensional) pathology is
deep prejudice seen from the other side. The normalised sensitivity χ (``moments.sensitivity``) composes the noise
maps of igbsym/sensitivity.py along the same spec; its growth per layer is exponential for batch-normalised
feedforward nets (``moments.bn_feedforward_rate``) and a power law for batch-normalised pre-activation ResNets
(``moments.bn_resnet_exponent``), both fixed by p = E[φ'(Z)²]/Var[φ(Z)] ≥ 1 (the Gaussian Poincaré inequality;
equality iff φ is linear). Derivations: derivations/moments.py.
"""
from __future__ import annotations

import mpmath
import numpy as np
import sympy as sp

from .. import params as P
from ..form import ClosedForm, Condition, NumericRoute, Param, Provenance
from ..registry import get, register
from ..params import L_NESTED, RANGE
from ..engine import chi_last
from ..ops import Act, State
from ..spec import mlp_ops, resnet_ops

LABATIE = "moments-well-behaved-vs-pathological.txt"
ARCHITECTURES = ("vanilla", "bn_feedforward", "resnet", "bn_resnet")
L_MAX = 10000   # the recursion costs O(L)

gamma_ = sp.Symbol("gamma", nonnegative=True)
a_ = sp.Symbol("a", real=True)

register(ClosedForm(
    "moments.centred_ratio", "Labatie's ratio mu_2,c/mu_2 of a layer's data-centred to non-centred second moment, "
                             "1/(1+gamma) with gamma the IGB ratio of a linear readout of the layer: the point-like "
                             "pathology (ratio -> 0) is deep prejudice (gamma -> inf).",
    (Param("gamma", "nonnegative", "IGB ratio of a linear readout of the layer", allow_inf=True),),
    Provenance(LABATIE, "Sec. 3.1 (moments), Sec. 3.2 (zero-dimensional signal)",
               "new bridge: mu_2 = q, mu_2,c = (1 - c) q and c = gamma/(1+gamma) (derivations/moments.py)"),
    expr=1 / (1 + gamma_), kernel=lambda gamma: 1 / (1 + gamma),
    limit=lambda gamma: 0 if gamma == mpmath.inf else None))


EMBEDDINGS = {"kaiming": None, "unit": 1}   # the residual trunk starts at variance sigma_w^2, or 1 (LeCun)


def sensitivity_ops(L, architecture, activation, alpha, a, sigma_w, H=1, embedding="kaiming", width=None):
    """The ops of the four architectures of Labatie Secs. 5–7 (full-batch BN); residual units of H layers; every
    Dense of width ``width`` (None: infinite)."""
    emb = EMBEDDINGS[embedding]
    return {"vanilla": lambda: mlp_ops(L, activation, "none", "pre", a, sigma_w, widths=(width,) * L),
            "bn_feedforward": lambda: mlp_ops(L, activation, "batchnorm", "pre", a, sigma_w, widths=(width,) * L),
            "resnet": lambda: resnet_ops(L, activation, alpha, "none", "pre", "linear-first", a, sigma_w, width,
                                         layers=H, embedding=emb),
            "bn_resnet": lambda: resnet_ops(L, activation, alpha, "batchnorm", "pre", "linear-last", a, sigma_w,
                                            width, layers=H, embedding=emb),
            }[architecture]()


def _chi_np(L, architecture, activation, H, embedding):
    def fn(alpha, a, sigma_w):
        alpha, a, sigma_w = np.broadcast_arrays(*(np.asarray(v, float) for v in (alpha, a, sigma_w)))
        out = np.empty(alpha.shape)
        for idx in np.ndindex(alpha.shape):
            ops = sensitivity_ops(L, architecture, activation, float(alpha[idx]), float(a[idx]), float(sigma_w[idx]),
                                  H, embedding)
            out[idx] = float(chi_last(ops))
        return out
    return fn


def _chi_mp(L, architecture, activation, H, embedding):
    def fn(alpha, a, sigma_w):
        return chi_last(sensitivity_ops(L, architecture, activation, alpha, a, sigma_w, H, embedding), "mpmath")
    return fn


def sensitivity_case(L, architecture, activation, H=1, embedding="kaiming"):
    return NumericRoute(_chi_np(L, architecture, activation, H, embedding),
                        _chi_mp(L, architecture, activation, H, embedding),
                        f"composition of the signal and noise maps over {L} layers/blocks (igbsym.engine, Op.noise)",
                        "rounding only for relu/leaky_relu/identity; composite Gauss-Legendre for E[phi'(u)^2] and the "
                        "spec's quadrature for smooth activations", sp.Symbol("chi_L"))


def _quadrature_per_layer(case) -> bool:
    """vanilla / resnet with an activation that has no closed-form moments: q changes every layer, so every layer
    is a fresh quadrature (nested for sigmoid, gelu, silu), and the path has no fixed point to stop at."""
    return (not Act(case.get("activation")).closed_form
            and case.get("architecture") in ("vanilla", "resnet"))


L_PARAM = Param("L", "integer", "layers or residual blocks", structural=True, minimum=1, maximum=L_MAX)
H_MAX = 8


def _residual(case) -> bool:
    return case.get("architecture") in ("resnet", "bn_resnet")


H_PARAM = Param("H", "integer", "layers per residual unit (Labatie's experiments use 2)", default=1, minimum=1,
                maximum=H_MAX, structural=True, used_when=_residual,
                used_text="with architecture=resnet or bn_resnet only")
QUADRATURE_DEPTH = Condition(sp.Le(L_PARAM.symbol(), L_NESTED),
                             f"L <= {L_NESTED} for vanilla and resnet with activations other than relu, leaky_relu, "
                             "identity, srelu (a fresh quadrature per layer, no fixed point to stop at)",
                             applies=_quadrature_per_layer)

register(ClosedForm(
    "moments.sensitivity", "Labatie's normalised sensitivity chi after L layers (vanilla, bn_feedforward: Dense, "
                           "[BN], phi) or blocks (resnet: x + alpha (Dense, phi); bn_resnet: x + alpha (BN, phi, "
                           "Dense)), infinite width, N(0, I) data and an isotropic input noise.",
    (L_PARAM,
     Param("architecture", "choice", "network family of Labatie Secs. 5-7", choices=ARCHITECTURES),
     P.ACTIVATION,
     Param("alpha", "nonnegative", "residual branch scale (resnet, bn_resnet)", default=1.0,
           used_when=_residual, used_text="with architecture=resnet or bn_resnet only"),
     P.LEAKY_A, P.SIGMA_W_PARAM, H_PARAM,
     Param("embedding", "choice", "residual trunk's embedding: kaiming (gain sigma_w: variance sigma_w^2) or unit "
           "(LeCun, variance 1, as in Labatie's code)", choices=tuple(EMBEDDINGS), default="kaiming",
           used_when=_residual, used_text="with architecture=resnet or bn_resnet only")),
    Provenance(LABATIE, "Sec. 3.1 (normalised sensitivity), Thms 2-3, Secs. 6-7",
               "chi^2 = (mu_2(dx_l)/mu_2(dx_0)) / (mu_2,c(x_l)/mu_2,c(x_0)); noise maps derived in "
               "derivations/moments.py (the paper's formulas are stripped in our copy)"),
    builder=sensitivity_case, conditions=RANGE + (QUADRATURE_DEPTH,)))


def poincare_ratio(activation, a=a_):
    """p = E[φ'(Z)²]/Var[φ(Z)], Z ~ N(0, 1), for φ(x) = x⁺ − s x⁻ (srelu: a shifted ReLU, s = 0)."""
    s = a if activation == "leaky_relu" else sp.Integer(Act(activation).slope)
    return ((1 + s**2) / 2) / ((1 + s**2) / 2 - (1 - s) ** 2 / (2 * sp.pi))


def _homogeneous_excess(activation, a):
    """p - 1 = (1 - s)²/(π (1 + s²) - (1 - s)²) for φ(x) = x⁺ − s x⁻, without overflow or cancellation at any slope:
    numerator and denominator divided by m² (m = max(1, |s|), t = s/m), the denominator written as the quadratic
    (π - 1)(t² + 1/m²) + 2t/m >= (π - 2)(t² + 1/m²) >= π - 2 (|t| = 1 or m = 1), so nothing cancels."""
    s = np.asarray(a if activation == "leaky_relu" else Act(activation).slope,
                   dtype=float)
    m = np.maximum(1.0, np.abs(s))
    t = s / m
    den = (np.pi - 1) * (t * t + 1 / (m * m)) + 2 * t / m
    return ((1 - s) / m) ** 2 / den   # 1 - s is exact near s = 1 (1/m - t cancelled: 9e-11 at a = 1 + 1.2e-6)


def _homogeneous_kernel(kind):
    """rate = log(p)/2 = log1p(p - 1)/2, exponent = (p^H - 1)/2 = expm1(H log1p(p - 1))/2, from
    _homogeneous_excess (no a² overflow, no cancellation in p - 1)."""
    def kernel(activation, a, H=1):
        x = _homogeneous_excess(activation, a) + np.zeros(np.shape(a))
        out = np.log1p(x) / 2 if kind == "rate" else np.expm1(H * np.log1p(x)) / 2
        return out[()] if np.ndim(out) == 0 else out
    return kernel


def _numeric_p(activation, backend):
    op = Act(activation)

    def np_fn(a):
        """p does not depend on a for a smooth activation: one scalar evaluation, broadcast (an array call then
        equals the scalar call bit for bit; the quadrature's matrix product rounds differently by batch size)."""
        var = get("activation.var").numpy(activation=activation, sigma=1.0)
        return np.full(np.shape(a), float(op.noise(State(np.ones(()), 0.0, 1.0, 0.0), "numpy")) / float(var))

    def mp_fn(a):
        var = get("activation.var").mp(mpmath.mp.dps, activation=activation, sigma=1, a=a)
        return op.noise(State(mpmath.mpf(1), 0, 1, 0), "mpmath") / var
    return np_fn if backend == "numpy" else mp_fn


def _rate_case(kind):
    def case(activation, H=1):
        if Act(activation).closed_form:
            p = poincare_ratio(activation)
            return sp.simplify(sp.log(p) / 2 if kind == "rate" else (p**H - 1) / 2)
        np_p, mp_p = _numeric_p(activation, "numpy"), _numeric_p(activation, "mpmath")
        if kind == "rate":
            return NumericRoute(lambda a: np.log(np_p(a)) / 2, lambda a: mpmath.log(mp_p(a)) / 2,
                                "p from activation.var and composite Gauss-Legendre E[phi'(Z)^2]", "1e-12 relative",
                                sp.log(sp.Symbol("p")) / 2)
        return NumericRoute(lambda a: np.expm1(H * np.log(np_p(a))) / 2,
                            lambda a: mpmath.expm1(H * mpmath.log(mp_p(a))) / 2,
                            "p from activation.var and composite Gauss-Legendre E[phi'(Z)^2]", "1e-12 relative",
                            (sp.Symbol("p") ** H - 1) / 2)
    return case


ACT_ALL = P.ACTIVATION
A_PARAM = P.LEAKY_A
register(ClosedForm(
    "moments.bn_feedforward_rate", "Exponential growth rate ln(chi_{l+1}/chi_l) = (1/2) ln p of chi per layer of a "
                                   "batch-normalised feedforward net (Dense, BN, phi), p = E[phi'(Z)^2]/Var[phi(Z)] "
                                   ">= 1: chi_l = p^(l/2).",
    (ACT_ALL, A_PARAM),
    Provenance(LABATIE, "Thm 3 (BN feedforward nets: exploding sensitivity)",
               "chi_l = p^(l/2) exactly from layer 1 on in the width limit with N(0, I) data (derivations/moments.py)"),
    builder=_rate_case("rate"), kernel=_homogeneous_kernel("rate")))
register(ClosedForm(
    "moments.bn_resnet_exponent", "Power-law exponent beta of chi ~ L^beta for batch-normalised pre-activation "
                                  "ResNets x + alpha (Dense(phi(BN(.))))^H (x) with H layers per residual unit: "
                                  "beta = (p^H - 1)/2, any alpha > 0.",
    (ACT_ALL, A_PARAM, Param("H", "integer", "layers per residual unit (Labatie's experiments use 2)", default=1,
                             minimum=1, maximum=H_MAX, structural=True)),
    Provenance(LABATIE, "Sec. 7 (BN ResNets: power-law rather than exponential evolution)",
               "new: from V_l growing linearly and log nu_L = p^H log L + O(1) (derivations/moments.py)"),
    builder=_rate_case("exponent"), kernel=_homogeneous_kernel("exponent")))
