"""Public numerical building blocks shared by the library, derivations, validation and tests.

Quadrature rules and Gaussian expectations live in ``igbsym.gauss``.

``power_product(factors, scale)`` evaluates scale·Π x_i^k_i over the whole double range (a product such as
(1 + a²)σ²/2 at a = 1e308, σ = 1e-320 is 5e-25 though a² overflows and σ² underflows).

``row_dot(rows, w)`` is rows @ w with each row summed on its own, and ``row_matmul(rows, M)`` rows @ M with the rows
zero-padded to a multiple of ROW_BLOCK, so an array call gives each point its scalar call's value.

``bracketed_newton(evaluate, x, lo, hi, converged, steps)`` finds a root per row of an increasing residual: Newton
steps kept inside each row's bisection bracket, each row stopping where it converged.
"""
from __future__ import annotations

import numpy as np


def power_product(factors, scale=1.0):
    """scale · Π x^k over ``factors`` = [(x, k), ...] (x >= 0 arrays, k small non-negative integers), without
    intermediate overflow or underflow: mantissas and binary exponents (np.frexp) are multiplied and added apart
    and np.ldexp rounds once at the end, so the result overflows or underflows only where the true value does.
    Relative error <= (Σ k + 1) ulp (plus the final rounding when the result is subnormal)."""
    mantissa, exponent = np.asarray(scale, dtype=float), 0
    for x, k in factors:
        m, e = np.frexp(np.asarray(x, dtype=float))
        mantissa, exponent = mantissa * m**k, exponent + k * e.astype(np.int64)
    return np.ldexp(mantissa, exponent)


def times_exp(x, t):
    """x·e^t without intermediate overflow or underflow (e^t may leave the double range while the product does not):
    x = m 2^e, e^t = 2^(t/ln 2); the integer part of t/ln 2 is added to the exponent, the rest multiplies m."""
    x, t2 = np.asarray(x, dtype=float), np.asarray(t, dtype=float) / np.log(2)
    k = np.floor(np.where(np.isfinite(t2), t2, 0.0))
    m, e = np.frexp(x)
    with np.errstate(over="ignore", under="ignore"):
        return np.where(np.isfinite(t2), np.ldexp(m * np.exp2(t2 - k), e + k.astype(np.int64)),
                        x * np.exp(np.asarray(t, dtype=float)))


def row_dot(rows, w):
    """rows @ w, each row summed on its own: a BLAS matrix-vector product may round a row differently depending on
    how many rows share the call (multiclass.paper_approx: 2 ulp between an array call and the scalar call)."""
    return np.sum(rows * w, axis=-1)


ROW_BLOCK = 16   # row_matmul pads the row count to a multiple of this


def row_matmul(rows, M):
    """rows [m, n] @ M [n, k] with each row's rounding independent of m: OpenBLAS picks its kernel by the row count
    (measured: a Mehler basis product of 1-15 rows differed from the same rows among 300 by up to 1e-11 relative
    in most counts that are not a multiple of 4), so the rows are zero-padded to a multiple of ROW_BLOCK (every
    count 1..63 then matched the 300-row product exactly)."""
    m = rows.shape[0]
    padded = np.zeros((-(-m // ROW_BLOCK) * ROW_BLOCK, rows.shape[1]))
    padded[:m] = rows
    return (padded @ M)[:m]


def bracketed_newton(evaluate, x, lo, hi, converged, steps: int, rows=None) -> np.ndarray:
    """Roots, row by row, of a residual that increases in x: Newton steps, each kept strictly inside its row's
    bisection bracket [lo, hi] and at most half as long as the step before the last one (else the bracket's midpoint:
    Numerical Recipes' rtsafe; a sigmoid residual sent plain Newton back and forth between two points inside the
    bracket). evaluate(rows, x[rows]) -> (residual, slope) at the live rows (storing whatever else it computes there);
    a row stops at the point where converged(residual, lo, hi) holds on its bracket updated by that point, and only
    live rows are evaluated (stepping on, a bracket collapsed onto the root sends a converged row back to a
    midpoint). x, lo, hi [n] are updated in place; ``rows`` the initially live rows (default all). Returns the rows
    still unconverged after ``steps`` Newton steps (steps + 1 evaluations)."""
    rows = np.arange(x.size) if rows is None else rows
    last = np.abs(hi - lo)                       # the last step's length and the one before (rtsafe's dx, dxold)
    before = last.copy()
    for step_no in range(steps + 1):
        f, slope = evaluate(rows, x[rows])
        lo[rows] = np.where(f < 0, x[rows], lo[rows])
        hi[rows] = np.where(f > 0, x[rows], hi[rows])
        go = ~converged(f, lo[rows], hi[rows])
        rows, f, slope = rows[go], f[go], slope[go]
        if step_no == steps or not rows.size:
            return rows
        step = x[rows] - f / np.maximum(slope, 1e-300)
        newton = (step > lo[rows]) & (step < hi[rows]) & (np.abs(step - x[rows]) <= before[rows] / 2)
        step = np.where(newton, step, (lo[rows] + hi[rows]) / 2)
        before[rows], last[rows] = last[rows], np.abs(step - x[rows])
        x[rows] = step
