"""The layer engine: walks the ops of a spec over the width-limit state, with the shortcuts that make depth cheap.

``states(ops, backend)``: the state after every op from N(0, I) data; a path whose ops all have a homogeneity
degree (``Op.degree``) is rescaled to q = 1 after every op (m in units of √q), so q's geometric growth through deep
or residual nets never overflows while c, e and m/√q are unchanged. ``chi_path(ops, backend)`` walks the same states
with the noise factor of every op (``Op.noise``): Labatie's normalised sensitivity χ_l² = (ν_l/ν₀)/(μ₂,c(x_l)/μ₂,c(x₀))
= ν_l/(e_l q_l) (moments-well-behaved-vs-pathological.txt Sec. 3.1), ν rescaled with the state.
"""
from __future__ import annotations

import mpmath
import numpy as np
import sympy as sp

from .errors import NumericalError
from .ops import E_MIN, check_state, input_state


def _free(ops, backend) -> bool:
    return backend != "sympy" and all(op.degree is not None for op in ops)


def states(ops, backend: str = "numpy", where: str = "resnet") -> list:
    """States after every op, starting from N(0, I) data (rescaled to q = 1 after every op where the path allows)."""
    out, s = [], input_state(backend)
    free = _free(ops, backend)
    for op in ops:
        s = op.map(s, backend)
        if free:
            s = s.rescaled()[0]
        if backend == "numpy":
            check_state(s, where)
        out.append(s)
    return out


def chi_path(ops, backend: str = "numpy") -> list:
    """[(state, χ)] after every op, from N(0, I) data with an isotropic input noise (χ₀ = 1). NumPy carries √ν and
    forms χ = √ν/(√e √q), so χ² never overflows before χ does."""
    s, nu, out = input_state(backend), 1, []
    free = _free(ops, backend)
    numpy = backend == "numpy"
    for op in ops:
        factor = op.noise(s, backend)
        nu = nu * (np.sqrt(factor) if numpy else factor)          # NumPy: nu holds √ν
        s = op.map(s, backend)
        if free:
            s, factor = s.rescaled()
            nu = nu / (np.sqrt(factor) if numpy else factor)
        if numpy:
            if np.any(np.asarray(s.e, float) < E_MIN):
                raise NumericalError(f"moments.sensitivity: 1 - c = {float(np.min(s.e)):.3g} < {E_MIN:g}: chi^2 = "
                                     "nu/((1 - c) q) is a ratio of underflowed numbers in double precision (use --dps)")
            with np.errstate(over="ignore"):
                out.append((s, nu / np.sqrt(s.e) / np.sqrt(s.q)))
            continue
        chi2 = nu / (s.e * s.q)
        out.append((s, sp.sqrt(chi2) if backend == "sympy" else mpmath.sqrt(chi2)))
    return out


def layers(ops) -> list:
    """The ops cut into layers: a layer starts at every Dense or residual block (``Op.stage`` 'pre' / 'res'); a
    layer that is a lone Dense (a linear embedding, γ = 0 on N(0, I) data) is merged into the next one."""
    out = []
    for op in ops:
        if op.stage in ("pre", "res") or not out:
            out.append([op])
        else:
            out[-1].append(op)
    merged, carry = [], []
    for layer in out:
        if len(layer) == 1 and layer[0].stage == "pre":
            carry += layer
            continue
        merged.append(tuple(carry + layer))
        carry = []
    if carry:
        merged.append(tuple(carry))
    return merged


def layer_gammas(ops, backend: str = "numpy", where: str = "predict") -> list:
    """γ = c/e at the end of every layer (``layers``): a readout Dense keeps c and e, so this is γ at the next
    layer's pre-activations (the output's for the last layer)."""
    out, s = [], input_state(backend)
    free = _free(ops, backend)
    for layer in layers(ops):
        for op in layer:
            s = op.map(s, backend)
            if free:
                s = s.rescaled()[0]
            if backend == "numpy":
                check_state(s, where)
        out.append(s.gamma)
    return out
