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
    remaining layer equals c* to the working precision; ``rest`` None: the fixed point alone is wanted), else None.
    Works on NumPy 0-d states too (``np_hint``)."""
    x0, rho = (state if start is None else start), None

    def at(x, v):
        return State(x.q, 1 - v, v, x.m) if k == "e" else State(x.q, v, 1 - v, x.m)
    for _ in range(12):
        # extrapolate the smaller of c and e = 1 − c (both are carried): c near 1 set as 1 − c would leave e with
        # the error of c divided by e
        k = "e" if x0.e < 0.5 else "c"
        x1 = step(x0)
        x2 = step(x1)
        v0, v1, v2 = (getattr(x, k) for x in (x0, x1, x2))
        d1, d2 = v1 - v0, v2 - v1
        if abs(d1) <= tol * abs(v1) and abs(d2) <= tol * abs(v2):
            # x0 is the fixed point to the working precision (d2 may be a rounding of it)
            if rho is None or rest is not None and abs(rho) ** rest * abs(getattr(state, k) - v2) > tol * abs(v2):
                return None
            return x2
        if d1 == 0:
            return None
        if abs(d1) > RHO_CLEAR * tol * abs(v1):
            # ρ only from steps clear of rounding: near the fixed point d2/d1 is a ratio of roundings, and a noise ρ
            # accepted would jump to c* too early
            rho = d2 / d1
            if not (0 <= abs(rho) < 1 - mpmath.mpf("1e-3")):
                return None
        v = v2 - d2 * d2 / (d2 - d1)
        if not 0 < v < 1:
            return None
        if abs(v - v2) <= tol * abs(v):
            if rho is None or rest is not None and abs(rho) ** rest * abs(getattr(state, k) - v) > tol * abs(v):
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


def np_hint(block, state, free):
    """c* of the block map in double precision (NumPy maps, Steffensen from the mpmath ``state``): the start of the
    mpmath Steffensen iteration, which then needs 2-3 maps instead of ~15 (a smooth φ's nested quadrature costs
    ~0.5 s a map at 50 digits). None where the NumPy maps leave their range or do not converge."""
    step = block_step(tuple(op.as_float() for op in block), "numpy", free)
    x = State(*(np.float64(float(v)) for v in (state.q, state.c, state.e, state.m)))
    converged, _, c, _, _ = np_fixed_points(lambda i: step, x, None, 64 * np.finfo(float).eps)
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


PROXY_MIN = 64          # remaining layers from which the Chebyshev proxy (>= 17 maps) is tried on the mpmath route
PROXY_MAX_NODES = 512
PROXY_GUARD = 10        # extra digits of the samples


def chebyshev_tail(step, state, c_star, rest, tol, last):
    """γ at the remaining ``rest`` layers of a one-dimensional block map (q fixed or rescaled: v ↦ F(v), v = c, or
    e = 1 − c where e* < 1/2) converging to its fixed point v*, on the mpmath route: F is interpolated at Chebyshev
    points of the interval from v to v* widened by 5 % (F is increasing — Mehler's coefficients are >= 0 — so the
    orbit is monotone and stays inside; F is analytic there), doubling
    the degree until the coefficients' tail is below tol·(1 − ρ) (the error the iteration accumulates is the
    interpolation error over 1 − ρ, ρ = |F'(v*)|), and the proxy, a polynomial, is iterated: the cost is that of
    the ~20–300 maps the interpolant needs, whatever the depth (Trefethen, Approximation Theory and Approximation
    Practice, Ch. 8: geometric convergence for analytic F). None where it does not settle or the orbit leaves the
    interval."""
    with mpmath.extradps(PROXY_GUARD):         # samples, coefficients and iterates below the tolerance
        out = _chebyshev_tail(step, state, +c_star, rest, tol, last)
    return out and [+g for g in out]


def _chebyshev_tail(step, state, c_star, rest, tol, last):
    key = "e" if 1 - c_star < 0.5 else "c"
    v_star = 1 - c_star if key == "e" else c_star
    v0 = getattr(state, key)
    r = abs(v0 - v_star) / 20 + abs(v_star) * mpmath.mpf(10) ** (4 - mpmath.mp.dps)
    lo, hi = min(v0, v_star) - r, max(v0, v_star) + r
    if not (0 < lo and hi < 1):
        return None

    def at(v):
        return State(state.q, 1 - v, v, state.m) if key == "e" else State(state.q, v, 1 - v, state.m)
    n, values = 16, {}
    while n <= PROXY_MAX_NODES:
        nodes = [(lo + hi) / 2 + (hi - lo) / 2 * mpmath.cos(mpmath.pi * j / n) for j in range(n + 1)]
        for j in range(n + 1):
            if (2 * j * (PROXY_MAX_NODES // n)) not in values:
                values[2 * j * (PROXY_MAX_NODES // n)] = getattr(step(at(nodes[j])), key)
        g = [values[2 * j * (PROXY_MAX_NODES // n)] for j in range(n + 1)]
        coef = [2 / mpmath.mpf(n) * mpmath.fsum((g[j] / (2 if j in (0, n) else 1)) * mpmath.cos(mpmath.pi * j * k / n)
                                                for j in range(n + 1)) for k in range(n + 1)]
        coef[0] /= 2
        coef[n] /= 2
        rho = abs(_cheb_derivative(coef, (2 * v_star - lo - hi) / (hi - lo)) * 2 / (hi - lo))
        if rho < 1 - mpmath.mpf("1e-3") and max(abs(a) for a in coef[-3:]) <= tol * (1 - rho) * abs(v_star) / 16:
            break
        n *= 2
    else:
        return None
    out, v = [], v0
    for k in range(rest):
        v = _clenshaw(coef, (2 * v - lo - hi) / (hi - lo))
        if not lo <= v <= hi:
            return None
        if not last or k == rest - 1:
            out.append((1 - v) / v if key == "e" else v / (1 - v))
    return out


def _clenshaw(coef, x):
    b1 = b2 = 0
    for a in reversed(coef[1:]):
        b1, b2 = 2 * x * b1 - b2 + a, b1
    return x * b1 - b2 + coef[0]


def _cheb_derivative(coef, x):
    """d/dx Σ a_k T_k(x) by the derivative recurrence of Chebyshev series."""
    n = len(coef) - 1
    d = [mpmath.mpf(0)] * (n + 2)
    for k in range(n, 0, -1):
        d[k - 1] = d[k + 1] + 2 * k * coef[k]
    d[0] /= 2
    return _clenshaw(d[:n], x) if n > 0 else mpmath.mpf(0)
