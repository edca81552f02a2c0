"""Plain walks over a spec's ops: the state after every op, Labatie's sensitivity, γ per layer.

``states(ops, backend)``: the state after every op from N(0, I) data; a path whose ops all have a homogeneity
degree (``Op.degree``) is rescaled to q = 1 after every op (m in units of √q), so q's geometric growth through deep
or residual nets never overflows while c, e and m/√q are unchanged. ``chi_path(ops, backend)`` walks the same states
with the noise factor of every op (``Op.noise``): Labatie's normalised sensitivity χ_l² = (ν_l/ν₀)/(μ₂,c(x_l)/μ₂,c(x₀))
= ν_l/(e_l q_l) (moments-well-behaved-vs-pathological.txt Sec. 3.1), ν rescaled with the state.
"""
from __future__ import annotations

import math

import mpmath
import numpy as np
import sympy as sp

from ..errors import NumericalError
from ..ops import E_MIN, check_state, compose, degree, input_state
from .walk import walk


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
    """[(state, χ)] after every op, from N(0, I) data with an isotropic input noise (χ₀ = 1)."""
    return list(_chi_steps(ops, backend))


def _chi_steps(ops, backend, start=None):
    """Yield (state, χ, ν) after every op from ``start`` = (state, ν) (default the data, ν = 1). NumPy carries √ν
    and forms χ = √ν/(√e √q), so χ² never overflows before χ does."""
    s, nu = start if start is not None else (input_state(backend), 1)
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
                yield s, nu / np.sqrt(s.e) / np.sqrt(s.q), nu
            continue
        chi2 = nu / (s.e * s.q)
        yield s, (sp.sqrt(chi2) if backend == "sympy" else mpmath.sqrt(chi2)), nu


SPAN = 64     # blocks over which chi_last measures the per-block factor of its tail


def chi_last(ops, backend: str = "numpy", where: str = "moments.sensitivity"):
    """χ after the last op. Where the ops repeat one block and the state after a block is stationary (a fixed point
    of the block map, e.g. after a full-batch BatchNorm), every later block multiplies χ by the same factor, so
    χ_L = χ_l·(χ_l/χ_(l−SPAN))^((L−l)/SPAN): the cost does not grow with L. NumPy raises NumericalError where χ
    leaves the double range (an mpmath evaluation, --dps, gives the value)."""
    block = _period(ops)
    n = len(ops) // len(block)
    tol = 4 * np.finfo(float).eps if backend == "numpy" else mpmath.mpf(10) ** (2 - mpmath.mp.dps)
    prev_state = prev_chi = prev_ratio = start = anchor = None
    for k in range(n):
        *_, (s, chi, nu) = _chi_steps(block, backend, start)
        if anchor is not None and k - anchor[0] == SPAN:      # the factor per block, measured over SPAN blocks
            return _chi_tail(chi, (chi / anchor[1]), SPAN, n - k - 1, backend, where)
        if prev_chi is not None:
            ratio = chi / prev_chi
            if (anchor is None and prev_ratio is not None and _same(prev_state, s, tol)
                    and abs(ratio / prev_ratio - 1) <= 16 * tol):
                anchor = (k, chi)
            prev_ratio = ratio
        prev_state, prev_chi, start = s, chi, (s, nu)
    if backend == "numpy" and not np.isfinite(chi):
        raise NumericalError(f"{where}: chi exceeds the double range (use --dps)")
    return chi


def _period(ops) -> tuple:
    for p in range(1, len(ops) + 1):
        if len(ops) % p == 0 and ops[:p] * (len(ops) // p) == tuple(ops):
            return tuple(ops[:p])


def _same(a, b, tol) -> bool:
    return all(abs(x - y) <= tol * abs(y) for x, y in ((a.q, b.q), (a.c, b.c), (a.e, b.e), (a.m, b.m)))


def _chi_tail(chi, growth, span, rest, backend, where):
    """χ after ``rest`` more blocks that each multiply it by growth^(1/span) (a ratio over span blocks: its
    rounding is divided by span, so the tail's error stays below the walk's own)."""
    if backend != "numpy":
        return chi * growth ** (mpmath.mpf(rest) / span)
    log10 = math.log10(chi) + rest * math.log10(growth) / span
    if log10 > 308:
        raise NumericalError(f"{where}: chi = 10^{log10:.6g} exceeds the double range (use --dps)")
    return chi * math.exp(rest * math.log(growth) / span)


def periodic(ops) -> tuple:
    """(head, block, L) with ops = head + block × L (ignoring a trailing readout Dense, which keeps c and e), the
    block ending in a Dense or being one residual op; None where the ops are not a repeated block."""
    ops = tuple(op.limit() for op in ops)          # widths do not enter the width-limit maps
    body = ops[1:-1] if ops[-1].starts_layer else ops[1:]
    for cand in (body, body + ops[:1]):
        for p in range(1, len(cand) + 1):
            n, block = len(cand) // p, cand[:p]
            if n * p == len(cand) and block * n == cand and (block[-1].starts_layer or block[-1].children):
                return ops[:1], block, n
    return None


def biased(ops) -> bool:
    """Some Dense of ``ops`` (residual branches included) has a bias (σ_b > 0)."""
    return any((op.starts_layer and not getattr(op, "unbiased", True)) or biased(op.children) for op in ops)


RESCALE = 1e100       # readout_gammas: the NumPy state is rescaled (with its biases) once q leaves [1/RESCALE, RESCALE]


def readout_gammas(head, block, L, readout, backend: str = "numpy", where: str = "walk", last: bool = False) -> list:
    """γ of the ``readout`` Dense's pre-activations after blocks 1..L (``last``: only γ_L), for biased ops (σ_b > 0,
    the mean-field convention: a bias, the readout's included, is zero-mean and independent of everything else).
    Plain composition, O(L): biases break the homogeneity the walk's shortcuts rest on. Where the ops are homogeneous
    of degree 1 without their biases, the maps commute with scaling the state and every bias alike, so NumPy rescales
    both (q never overflows; γ is unchanged)."""
    scalable = backend == "numpy" and degree(tuple(op.scaled_bias(0) for op in (*head, *block, readout))) == 1
    s = compose(head, input_state(backend), backend)[-1]
    k, ops, out = 1.0, tuple(block), []
    for layer in range(L):
        if scalable and not 1 / RESCALE < float(s.q) < RESCALE:
            s, f = s.rescaled()
            k = k / np.sqrt(f)
            ops = tuple(op.scaled_bias(k) for op in block)
        s = compose(ops, s, backend)[-1]
        if backend == "numpy":
            check_state(s, f"{where} at block {layer + 1}")
        if not last or layer == L - 1:
            r = readout.scaled_bias(k).map(s, backend)
            out.append((check_state(r, where) if backend == "numpy" else r).gamma)
    return out


def layer_gammas(ops, backend: str = "numpy", where: str = "predict") -> list:
    """γ = c/e after every layer of ``ops`` (a spec's ``all_ops()``: its hidden layers, or residual blocks, then the
    readout): by ``walk`` with its shortcuts where the ops repeat one block, else by composing them op by op
    (γ at the start of every Dense after the first and after every residual block)."""
    rep = periodic(ops)
    if rep is not None:
        head, block, L = rep
        if block[-1].children and ops[-1].starts_layer and biased(ops):   # biased residual blocks: the readout's bias
            return readout_gammas(head, block, L, tuple(op.limit() for op in ops)[-1], backend, where)
        return walk(head, block, L, backend, where)
    out, s, seen = [], input_state(backend), False
    free = _free(ops, backend)
    for op in ops:
        if op.starts_layer and seen:
            out.append(s.gamma)
        s = op.map(s, backend)
        if free:
            s = s.rescaled()[0]
        if backend == "numpy":
            check_state(s, where)
        seen = seen or op.starts_layer
        if op.children:
            out.append(s.gamma)
    return out
