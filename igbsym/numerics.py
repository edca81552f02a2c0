"""Public numerical building blocks shared by the library, derivations, validation and tests.

Composite Gauss–Legendre rules (the quadrature behind igbsym/gaussian.py, the depth maps and the max-pool
tables): ``composite_gauss_legendre(edges, points)`` integrates over the panels between consecutive edges, and
``normal_nodes(h)`` gives nodes and N(0, 1)-density weights on z ∈ [−Z_MAX, Z_MAX] with panel width ≤ h, so that
E[f(Z)] ≈ f(z) @ w. Beyond Z_MAX = 13 the normal tail mass is < 1e-38 (stated error bounds: igbsym/gaussian.py).

``power_product(factors, scale)`` evaluates scale·Π x_i^k_i over the whole double range (a product such as
(1 + a²)σ²/2 at a = 1e308, σ = 1e-320 is 5e-25 though a² overflows and σ² underflows).

``row_dot(rows, w)`` is rows @ w with each row summed on its own, so an array call gives each point its scalar
call's value.
"""
from __future__ import annotations

import numpy as np

Z_MAX = 13.0
POINTS = 8


def composite_gauss_legendre(edges, points: int = POINTS):
    """(x, w): the ``points``-point Gauss–Legendre rule on every panel [edges[i], edges[i+1]], flattened;
    ∫ f over [edges[0], edges[-1]] ≈ f(x) @ w."""
    edges = np.asarray(edges, dtype=float)
    gx, gw = np.polynomial.legendre.leggauss(points)
    mid, half = (edges[1:] + edges[:-1]) / 2, (edges[1:] - edges[:-1]) / 2
    return (mid[:, None] + half[:, None] * gx).ravel(), (half[:, None] * gw).ravel()


def normal_nodes(h: float, points: int = POINTS):
    """(z, w) with E[f(Z)] ≈ f(z) @ w for Z ~ N(0, 1): composite Gauss–Legendre on [−Z_MAX, Z_MAX], panels ≤ h."""
    z, w = composite_gauss_legendre(np.linspace(-Z_MAX, Z_MAX, int(np.ceil(2 * Z_MAX / h)) + 1), points)
    return z, w * np.exp(-z * z / 2) / np.sqrt(2 * np.pi)


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


def row_dot(rows, w):
    """rows @ w, each row summed on its own: a BLAS matrix-vector product may round a row differently depending on
    how many rows share the call (multiclass.paper_approx: 2 ulp between an array call and the scalar call)."""
    return np.sum(rows * w, axis=-1)
