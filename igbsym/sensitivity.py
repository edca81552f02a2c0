"""Labatie's moments in the width limit: the centred/non-centred ratio and the normalised sensitivity χ.

Paper: moments-well-behaved-vs-pathological.txt (Labatie 2019), Sec. 3.1 (moments μ₂(x) = E_{c,x,Θ}[x_c²],
central μ₂,c(x) with x centred over the data, effective rank, normalised sensitivity χ from the simultaneous
propagation of the signal x and a small input noise dx), Sec. 3.2 (pathologies), Secs. 5–7 (vanilla,
batch-normalised feedforward, batch-normalised residual nets). The math is stripped from our copy; the
definitions below are the ones the text states in words.

With the spec state (q, c, e, m) of igbsym/spec.py: μ₂ = q and μ₂,c = e·q, so μ₂,c/μ₂ = 1 − c = 1/(1 + γ) where
γ = c/e is the IGB ratio of a linear readout of that layer: Labatie's point-like (zero-dimensional) pathology
μ₂,c/μ₂ → 0 is exactly γ → ∞ (deep prejudice), registered as ``moments.centred_ratio``.

The noise dx is propagated by the Jacobian (forward mode). For an isotropic input noise independent of the data,
in the width limit its second moment ν = μ₂(dx) maps as ν' = noise_factor(op, state)·ν with
    Dense(σ_w): σ_w²;   φ: E[φ'(u)²], u ~ N(0, q) (Gaussian units);   LayerNorm: 1/(q − m²);   RMSNorm: 1/q;
    full-batch BatchNorm: 1/(e q) (every unit has the data variance e q: Gaussian units, or no centre spread);
    MaxPool: 1 (the noise of the selected unit passes);   Residual(α, F): 1 + α²·(the branch's factor) (the
    branch's Jacobian has fresh zero-mean weights: no cross term).
and χ_l² = (ν_l/ν₀)/(μ₂,c(x_l)/μ₂,c(x₀)) with x₀ ~ N(0, I) data (ν₀ = μ₂,c(x₀) = 1): χ_l² = ν_l/(e_l q_l).
"""
from __future__ import annotations

import math
from functools import lru_cache

import mpmath
import numpy as np
import sympy as sp

from . import activations as acts
from .errors import InputError, NumericalError
from .functions import MPMATH_MODULES, NUMPY_MODULES
from .spec import (HOMOGENEOUS, Act, BatchNorm, Dense, LayerNorm, MaxPool, RMSNorm, State, E_MIN,
                   X_KINK, _check_q, _kink_nodes, input_state)



def _derivative(name: str, module):
    x = acts.x_
    return sp.lambdify(x, sp.diff(acts.get(name).expr, x), modules=module)


def act_noise_factor(op: Act, q, backend: str):
    """E[φ'(u)²] for u ~ N(0, q): (1 + s²)/2 for φ(x) = x⁺ − s x⁻ (srelu: 1/2); quadrature otherwise."""
    if op.name in HOMOGENEOUS or op.name == "srelu":
        s = 0 if op.name == "srelu" else op.slope
        if backend == "sympy":
            return (1 + sp.sympify(s) ** 2) / 2
        return (1 + s * s) / 2 + 0 * q
    if backend == "sympy":
        raise InputError(f"E[phi'(u)^2] for activation {op.name} has no closed form (use the numpy or mpmath route)")
    if backend == "mpmath":
        return +_mp_noise_factor(op.name, q, mpmath.mp.dps)
    q = np.asarray(q, float)
    _check_q(q)
    out = np.empty(q.shape)
    for i in np.ndindex(q.shape):     # per point (cached): an array call gives each point its scalar value
        out[i] = _np_noise_factor(op.name, float(q[i]))
    return out if q.ndim else out[()]


@lru_cache(maxsize=4096)
def _np_noise_factor(name: str, q: float) -> np.float64:
    """E[φ'(u)²] at one q (NumPy), cached like ``_mp_noise_factor``."""
    d = _derivative(name, NUMPY_MODULES)
    # panels on φ's x-scale only where it bends: a cost independent of q (the z-grid sized 0.4/√q asked for 1e28
    # nodes at alpha = 3e26); φ' is constant beyond |x| = X_KINK, where sigmoid' = σ(1 − σ) gave inf/inf = NaN
    z, w = _kink_nodes(math.sqrt(q))
    return (d(np.clip(math.sqrt(q) * z, -X_KINK, X_KINK)) ** 2) @ w


@lru_cache(maxsize=4096)
def _mp_noise_factor(name: str, q, dps: int):
    """E[φ'(u)²], u ~ N(0, q), at ``dps`` digits, cached: after a norm every layer has q = 1, so a deep batch-
    normalised net evaluates the quadrature once, not once a layer."""
    d = _derivative(name, MPMATH_MODULES)
    with mpmath.workdps(dps):
        sd = mpmath.sqrt(q)
        return mpmath.quad(lambda z: d(sd * z) ** 2 * mpmath.npdf(z), [-mpmath.inf, -5, 0, 5, mpmath.inf])


def noise_factor(op, s: State, backend: str = "numpy"):
    """The factor ν'/ν of the op at input state ``s`` (module docstring)."""
    from .residual import Residual
    if isinstance(op, Dense):
        return op.sigma_w**2 + 0 * s.q
    if isinstance(op, Act):
        if not s.gaussian:
            raise InputError(f"sensitivity: activation {op.name} on non-Gaussian units has no width-limit noise map")
        return act_noise_factor(op, s.q, backend)
    if isinstance(op, LayerNorm):
        return 1 / (s.q - s.m**2)
    if isinstance(op, RMSNorm):
        return 1 / s.q
    if isinstance(op, BatchNorm):
        if op.B is not None and op.B != "full":
            raise InputError("sensitivity: mini-batch BatchNorm has no width-limit noise map (use full batch)")
        if not s.gaussian and not (s.c == 0):
            raise InputError("sensitivity: BatchNorm on units with unequal data variances (after an activation with "
                             "a centre spread) has no width-limit noise map")
        return 1 / (s.e * s.q)
    if isinstance(op, MaxPool):
        return 1 + 0 * s.q
    if isinstance(op, Residual):
        nu, state = 1 + 0 * s.q, s
        for inner in op.block:
            nu = nu * noise_factor(inner, state, backend)
            state = inner.map(state, backend)
        return 1 + op.alpha**2 * nu
    raise InputError(f"sensitivity: no noise map for op {type(op).__name__}")


def chi_path(ops, backend: str = "numpy") -> list:
    """[(state, χ)] after every op, from N(0, I) data with an isotropic input noise (χ₀ = 1). A scale-free path
    is rescaled to q = 1 after every op with ν divided by the same factor (χ² = ν/(e q) is unchanged). NumPy
    carries √ν and forms χ = √ν/(√e √q): χ² overflowed at χ = 1.95e180 (bn_feedforward gelu, L = 3000)."""
    from .residual import rescaled, scale_free
    s, nu, out = input_state(backend), 1, []
    free = backend != "sympy" and scale_free(ops)
    numpy = backend == "numpy"
    for op in ops:
        factor = noise_factor(op, s, backend)
        nu = nu * (np.sqrt(factor) if numpy else factor)          # NumPy: nu holds √ν
        s = op.map(s, backend)
        if free:
            s, factor = rescaled(s)
            nu = nu / (np.sqrt(factor) if numpy else factor)
        if numpy:
            if np.any(np.asarray(s.e, float) < E_MIN):
                # e q subnormal: χ² = ν/(e q) was a ratio of underflowed numbers (1.0 for 1.616 at resnet relu L = 1e4)
                raise NumericalError(f"moments.sensitivity: 1 - c = {float(np.min(s.e)):.3g} < {E_MIN:g}: chi^2 = "
                                     "nu/((1 - c) q) is a ratio of underflowed numbers in double precision (use --dps)")
            with np.errstate(over="ignore"):
                out.append((s, nu / np.sqrt(s.e) / np.sqrt(s.q)))
            continue
        chi2 = nu / (s.e * s.q)
        out.append((s, sp.sqrt(chi2) if backend == "sympy" else mpmath.sqrt(chi2)))
    return out
