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
from .rules import normal_nodes

Q_MAX_SERIES = 10.0     # the range in q of the series route (tanh: K ~ 900 terms there)
CHUNK = 256             # points per matrix product (sorted by q, so a chunk shares its K and nodes)
TAIL = 19 * math.log(10)


def terms(strip: float, q: float) -> int:
    """K: the number of Hermite terms after which β_k < 1e-19 by the strip bound."""
    rate = 2 * strip / math.sqrt(max(q, 1e-300))
    return 2 * max(8, int(math.ceil((TAIL / rate) ** 2 / 2)) + 4)


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


def hermite_betas(name: str, a, q, K=None):
    """(β [m, K + 1], S − Σβ, qA − Σkβ) for the points q [m] (one K for all: by default that of max q)."""
    q = np.asarray(q, float).ravel()
    _check(name, q)
    f, d1 = acts.get(name).numpy, acts.derivatives(name, "numpy")
    K = K or terms(acts.get(name).strip, float(q.max()))
    z, w, WH = basis(K, min(0.1, 1.9 / math.sqrt(2 * K)))
    x = np.sqrt(q)[:, None] * z
    y = f(x, a, 0.0)
    beta = (y @ WH) ** 2
    k = np.arange(K + 1)
    S = (y * y) @ w
    A = (np.asarray(d1(x)[0], float) + 0 * x) ** 2 @ w
    return beta, S - beta.sum(1), q * A - beta @ k


def series(name: str, a, q, tol: float = 1e-13):
    """β per point, chunked by q (sorted), as a list of (indices, β [m, K + 1]); NumericalError where a Parseval
    defect exceeds ``tol`` relative (the truncation or the quadrature failed)."""
    q = np.asarray(q, float).ravel()
    order = np.argsort(q, kind="stable")
    out = []
    for lo in range(0, q.size, CHUNK):
        idx = order[lo:lo + CHUNK]
        beta, dS, dA = hermite_betas(name, a, q[idx])
        S, QA = beta.sum(1), beta @ np.arange(beta.shape[1])
        if np.any(np.abs(dS) > tol * S) or np.any(np.abs(dA) > tol * np.maximum(QA, 1e-300)):
            beta, dS, dA = hermite_betas(name, a, q[idx], 2 * (beta.shape[1] - 1))
            S, QA = beta.sum(1), beta @ np.arange(beta.shape[1])
        if np.any(np.abs(dS) > tol * S) or np.any(np.abs(dA) > tol * np.maximum(QA, 1e-300)):
            raise NumericalError(f"{name}: Mehler series defect {float(np.max(np.abs(dS) / S)):.2g} above {tol:g} "
                                 f"(q <= {float(q[idx].max()):.3g})")
        out.append((idx, beta))
    return out


def moments_vec(name: str, a, q):
    """(S, dS/dq, A, dA/dq) of φ on u ~ N(0, q), vectorised over q [m] (chunked, nodes sized by each chunk's max q)."""
    q = np.asarray(q, float).ravel()
    _check(name, q)
    f, ds = acts.get(name).numpy, acts.derivatives(name, "numpy")
    out = np.empty((4, q.size))
    order = np.argsort(q, kind="stable")
    for lo in range(0, q.size, 4 * CHUNK):
        idx = order[lo:lo + 4 * CHUNK]
        sd = np.sqrt(q[idx])
        z, w = normal_nodes(min(0.25, 0.4 / float(sd.max())))
        x = sd[:, None] * z
        y = f(x, a, 0.0)
        d1, d2, d3, _ = (np.asarray(v, float) + 0 * x for v in ds(x))
        out[:, idx] = np.stack([(y * y) @ w, (d1 * d1 + y * d2) @ w, (d1 * d1) @ w, (d2 * d2 + d1 * d3) @ w])
    return tuple(out)
