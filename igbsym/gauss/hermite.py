"""Mehler's series of an activation's correlation map at any q, vectorised over q, and the one-dimensional moments
of mean-field theory (Poole et al. 2016; Schoenholz et al. 2017), on the composite Gauss–Legendre nodes of ``rules``.

Mehler: for (u, u') ~ N(0, q[[1, c], [c, 1]]), E[φ(u)φ(u')] = Σ_k β_k c^k with β_k = b_k², b_k = E[φ(√q Z) h_k(Z)],
h_k = He_k/√k! the orthonormal Hermite polynomials of N(0, 1) (h_{k+1} = (z h_k − √k h_{k−1})/√(k + 1)). So β_k >= 0,
Σ β_k = E φ(u)² (Parseval) and Σ k β_k = q E φ'(u)² (He_k' = k He_{k−1}): the correlation map is a power series with
nonnegative coefficients, convex in c on [0, 1]. ``hermite_betas`` returns β_0..β_K per point with the two Parseval
defects (the truncation and quadrature certificate): S − Σβ_k and q A − Σ kβ_k, S and A from the same nodes.

Truncation: φ(√q z) is analytic in |Im z| < d/√q (d = the entry's ``strip``), so |b_k| decays like e^{−(d/√q)√(2k)};
K is twice the smallest k with e^{−2(d/√q)√(2k)} < 1e-19 (measured for tanh: the bound's prefactor left
β_K ~ 4e-14 at the bound's K, 1e-20 at twice it; ``series`` doubles K again where a Parseval defect stays above tol).
Nodes: ``normal_nodes`` with panels h <= min(0.1, 1.9/√(2K))
(h_K oscillates with frequency <= √(2K) on |z| <= 13; the 8-point rule's error on such a panel is below 1e-16).
``moments_vec``: S = E φ², dS/dq = E[φ'² + φφ''], A = E φ'², dA/dq = E[φ''² + φ'φ'''] (heat equation
d/dq E f(√q Z) = E f''(√q Z)/2) on ``normal_nodes(min(0.25, 0.4/√q))`` (the rule of ``univariate.expect``).
Stated error (tests/test_meanfield.py against mpmath): relative 1e-12 per moment for q <= Q_MAX_SERIES.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from .. import activations as acts
from ..errors import NumericalError
from ..numerics import row_dot, row_matmul
from .rules import Z_MAX, normal_nodes

Q_MAX_SERIES = 10.0     # the range in q of the series route (tanh: K ~ 900 terms there)
CHUNK = 256             # points per matrix product (of one K or one node set)
TAIL = 19 * math.log(10)


def terms(strip: float, q):
    """K per point: the number of Hermite terms after which β_k < 1e-19 by the strip bound, on ``_grid``."""
    rate = 2 * strip / np.sqrt(np.maximum(np.asarray(q, float), 1e-300))
    return _grid(2 * np.maximum(8, np.ceil((TAIL / rate) ** 2 / 2).astype(np.int64) + 4))


def _grid(n):
    """n (integers >= 8) rounded up to the next of eight values per octave: a point's K and panel count depend on its
    own q only (so an array call gives each point its scalar call's value) while a call has few distinct ones."""
    step = np.left_shift(1, np.maximum(0, np.floor(np.log2(n)).astype(np.int64) - 3))
    return -(-n // step) * step


@lru_cache(maxsize=32)
def basis(K: int, h: float):
    """(z, w·h_k(z)) on normal_nodes(h): the weighted orthonormal Hermite values [n, K + 1]."""
    z, w = normal_nodes(h)
    H = np.empty((z.size, K + 1))
    H[:, 0] = 1.0
    H[:, 1] = z
    for k in range(1, K):
        H[:, k + 1] = (z * H[:, k] - math.sqrt(k) * H[:, k - 1]) / math.sqrt(k + 1)
    return z, w, w[:, None] * H


def _check(name, q):
    if not np.all(np.isfinite(q)) or np.any(q > Q_MAX_SERIES) or np.any(q <= 0):
        bad = q[~(np.isfinite(q) & (q <= Q_MAX_SERIES) & (q > 0))].flat[0]
        raise NumericalError(f"{name}: q = {bad:.3g} is outside the Hermite series route's range "
                             f"0 < q <= {Q_MAX_SERIES:g}")


def hermite_betas(name: str, a, q, K: int):
    """(β [m, K + 1], S − Σβ, qA − Σkβ) for the points q [m], K terms on ``normal_nodes(min(0.1, 1.9/√(2K)))``."""
    f, d1 = acts.get(name).numpy, acts.derivatives(name, "numpy")
    z, w, WH = basis(int(K), min(0.1, 1.9 / math.sqrt(2 * K)))
    x = np.sqrt(q)[:, None] * z
    y = f(x, a, 0.0)
    beta = row_matmul(y, WH) ** 2
    S = row_dot(y * y, w)
    A = row_dot((np.asarray(d1(x)[0], float) + 0 * x) ** 2, w)
    return beta, S - beta.sum(1), q * A - row_dot(beta, np.arange(K + 1.0))


def series(name: str, a, q, tol: float = 1e-13):
    """β per point as a list of (indices, β [m, K + 1]), the points grouped by their own K (``terms``); a point whose
    Parseval defects exceed ``tol`` relative is redone with 2K, and NumericalError where they still do (the
    truncation or the quadrature failed)."""
    q = np.asarray(q, float).ravel()
    _check(name, q)
    Ks = terms(acts.get(name).strip, q)
    out = []
    for K in np.unique(Ks):
        group = np.flatnonzero(Ks == K)
        for lo in range(0, group.size, CHUNK):
            idx = group[lo:lo + CHUNK]
            for k_terms in (K, 2 * K):
                beta, dS, dA = hermite_betas(name, a, q[idx], k_terms)
                S, QA = beta.sum(1), row_dot(beta, np.arange(k_terms + 1.0))
                bad = (np.abs(dS) > tol * S) | (np.abs(dA) > tol * np.maximum(QA, 1e-300))
                if np.any(~bad):
                    out.append((idx[~bad], beta[~bad]))
                idx, dS, S = idx[bad], dS[bad], S[bad]
                if not idx.size:
                    break
            if idx.size:
                raise NumericalError(f"{name}: Mehler series defect {float(np.max(np.abs(dS) / S)):.2g} above {tol:g} "
                                     f"(q = {float(q[idx].max()):.3g})")
    return out


def moments_vec(name: str, a, q):
    """(S, dS/dq, A, dA/dq) of φ on u ~ N(0, q), vectorised over q [m]: each point on its own nodes
    ``normal_nodes(min(0.25, 0.4/√q))`` (the panel count on ``_grid``), the points grouped by them."""
    q = np.asarray(q, float).ravel()
    _check(name, q)
    f, ds = acts.get(name).numpy, acts.derivatives(name, "numpy")
    out = np.empty((4, q.size))
    sd = np.sqrt(q)
    panels = _grid(np.ceil(2 * Z_MAX / np.minimum(0.25, 0.4 / sd)).astype(np.int64))
    for n in np.unique(panels):
        group = np.flatnonzero(panels == n)
        z, w = normal_nodes(2 * Z_MAX / n)
        for lo in range(0, group.size, 4 * CHUNK):
            idx = group[lo:lo + 4 * CHUNK]
            x = sd[idx, None] * z
            y = f(x, a, 0.0)
            d1, d2, d3, _ = (np.asarray(v, float) + 0 * x for v in ds(x))
            out[:, idx] = np.stack([row_dot(y * y, w), row_dot(d1 * d1 + y * d2, w), row_dot(d1 * d1, w),
                                    row_dot(d2 * d2 + d1 * d3, w)])
    return tuple(out)
