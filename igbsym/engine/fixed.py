"""Fixed points of a block map: Steffensen's iteration (quadratic convergence: a few maps instead of the
~dps/log10(1/ρ) layers a contraction ρ needs), per point on NumPy and from a double-precision hint on mpmath."""
from __future__ import annotations

import mpmath
import numpy as np

from ..errors import InputError, NumericalError
from ..ops import State
from ..ops.base import sqrt


RHO_CLEAR = 1e4     # Steffensen's contraction estimate d2/d1 is used only where |d1| > RHO_CLEAR·tol·|v|


def steffensen(step, state, tol, rest, start=None):
    """The chaotic-phase fixed point c* = F(c*) of the block map at a fixed q (mpmath route, and NumPy per point
    where q is fixed or rescaled), by Steffensen's iteration from ``start`` (default ``state``, the iterate reached;
    quadratic convergence: a few maps instead of ~dps/log10(1/ρ) layers). Returns the fixed-point state if the
    iteration converges to ``tol`` with contraction ρ = F'(c*) < 1 − 1e-3 and ρ^rest·|c − c*| below tol (then every
    remaining layer equals c* to the working precision), else None. Works on NumPy 0-d states too (``np_hint``)."""
    x0, rho = (state if start is None else start), None

    def at(x, v):
        return State(x.q, 1 - v, v, x.m) if k == "e" else State(x.q, v, 1 - v, x.m)
    for _ in range(12):
        # extrapolate the smaller of c and e = 1 − c (both are carried): c near 1 set as 1 − c left e with the error
        # of c divided by e (gelu + RMSNorm after φ at σ_w = 9.99, γ = 232: 1.8e-11 off on NumPy)
        k = "e" if x0.e < 0.5 else "c"
        x1 = step(x0)
        x2 = step(x1)
        v0, v1, v2 = (getattr(x, k) for x in (x0, x1, x2))
        d1, d2 = v1 - v0, v2 - v1
        if abs(d1) <= tol * abs(v1) and abs(d2) <= tol * abs(v2):
            # x0 is the fixed point to the working precision (d2 may be a rounding of it: at 30 digits d1 = 0 with
            # d2 = 1e-31 returned None, and gelu + RMSNorm after φ iterated the layers at 0.4 s each)
            if rho is None or abs(rho) ** rest * abs(getattr(state, k) - v2) > tol * abs(v2):
                return None
            return x2
        if d1 == 0:
            return None
        if abs(d1) > RHO_CLEAR * tol * abs(v1):
            # ρ only from steps clear of rounding: near the fixed point d2/d1 is a ratio of roundings, and an accepted
            # noise ρ jumped silu + LayerNorm before φ at L = 300 to c* (NumPy 1.9e-9 off; ρ = 0.94, 236 layers left)
            rho = d2 / d1
            if not (0 <= abs(rho) < 1 - mpmath.mpf("1e-3")):
                return None
        v = v2 - d2 * d2 / (d2 - d1)
        if not 0 < v < 1:
            return None
        if abs(v - v2) <= tol * abs(v):
            if rho is None or abs(rho) ** rest * abs(getattr(state, k) - v) > tol * abs(v):
                return None
            return at(x2, v)
        x0 = at(x2, v)
    return None


def block_step(ops, backend, free):
    """The block map on a state (the ops composed); where the path is scale-free (``free``) the state is rescaled
    to q = 1 after it (m in units of √q; q may have overflowed or underflowed: the rescaled state does not care)."""
    def step(st):
        for op in ops:
            with np.errstate(over="ignore", under="ignore"):
                st = op.map(st, backend)
        return unit_scale(st, backend) if free else st
    return step


def unit_scale(st, backend):
    """The state at q = 1 (m divided by √q; a zero m stays exactly 0 whatever q is)."""
    if backend == "numpy":
        if np.all(np.asarray(st.m) == 0):
            m = st.m
        else:
            with np.errstate(all="ignore"):
                m = np.where(np.asarray(st.m) == 0, 0.0, st.m / np.sqrt(st.q))
        return State(1 + 0 * np.nan_to_num(st.q), st.c, st.e, m, st.gaussian)
    return State(1 + 0 * st.q, st.c, st.e, st.m if st.m == 0 else st.m / sqrt(st.q), st.gaussian)


def np_hint(block, state, free, rest):
    """c* of the block map in double precision (NumPy maps, Steffensen from the mpmath ``state``): the start of the
    mpmath Steffensen iteration, which then needs 2-3 maps instead of ~15 (a smooth φ's nested quadrature costs
    ~0.5 s a map at 50 digits). None where the NumPy maps leave their range or do not converge."""
    step = block_step(tuple(op.as_float() for op in block), "numpy", free)
    x = State(*(np.float64(float(v)) for v in (state.q, state.c, state.e, state.m)))
    converged, _, c, _, _ = np_fixed_points(lambda i: step, x, rest, 64 * np.finfo(float).eps)
    return mpmath.mpf(float(c)) if converged else None


def np_fixed_points(point_step, state, rest, tol=16 * np.finfo(float).eps):
    """Per point of a NumPy state (any shape): (converged mask, q*, c*, e*, m*) of the block map's fixed point by
    Steffensen's iteration on that point alone (``point_step(i)``: its block map) to ``tol``, so an array call gives
    each point its scalar call's value; a point whose maps leave their range does not converge."""
    shape = np.broadcast_shapes(*(np.shape(getattr(state, k)) for k in "qcem"))
    out = [np.zeros(shape, bool)] + [np.array(np.broadcast_to(getattr(state, k), shape), float) for k in "qcem"]
    for i in np.ndindex(shape):
        x = State(*(np.float64(np.asarray(getattr(state, k), float)[i] if np.ndim(getattr(state, k)) else
                                 getattr(state, k)) for k in "qcem"))
        try:
            with np.errstate(all="ignore"):
                fx = steffensen(point_step(i), x, tol, rest)
        except (NumericalError, InputError, OverflowError, ValueError, ZeroDivisionError):
            fx = None
        if fx is not None and 0 < float(fx.c) < 1:
            out[0][i] = True
            for arr, k in zip(out[1:], "qcem"):
                arr[i] = float(getattr(fx, k))
    return out
