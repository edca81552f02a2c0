"""Spherical-radial integration of the centred other means of the multiclass law (IGB paper App. H).

Given the common mode, G_c depends on the centred others xi - mean(xi), a standard normal vector of the
(n - 1)-dimensional sum-zero subspace of R^n (n = C - 1 others). In polar form xi = r theta the radius r (chi law,
n - 1 degrees of freedom) and the direction theta (uniform on that subspace's unit sphere) are independent, so the
law tables integrate r by a Gauss rule (``radial_rule``) and theta by a rotated product rule (``sphere_rule``, few
dimensions) or by sampled directions with control variates: the symmetric power sums of theta (``power_features``),
whose exact means (``power_feature_means``) follow from the bivariate moments of two centred coordinates.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import linalg, special

# the even symmetric polynomials of theta of degree <= 14 on the sum-zero sphere (p_1 = 0, p_2 = 1 there): a basis of
# products of power sums p_k = sum_j theta_j^k, k >= 3 (odd ones are killed by the antipodal directions); each degree
# added took 2 ... 30x off the variance (measured out of sample at C = 10, 100, 1000; degree 14: 2 ... 10x at gamma =
# 1 ... 3, C = 10 ... 1000); degree 16 gains < 2x at gamma = 1 and loses 100x at gamma = 0.1, C = 1000 (conditioning)
POWER_FEATURES = ((4,), (6,), (3, 3), (8,), (3, 5), (4, 4), (10,), (3, 7), (4, 6), (5, 5), (3, 3, 4),
                  (12,), (3, 9), (4, 8), (5, 7), (6, 6), (3, 3, 6), (3, 4, 5), (4, 4, 4), (3, 3, 3, 3),
                  (14,), (3, 11), (4, 10), (5, 9), (6, 8), (7, 7), (3, 3, 8), (3, 4, 7), (3, 5, 6), (4, 4, 6),
                  (4, 5, 5), (3, 3, 4, 4), (3, 3, 3, 5))
_POWERS = frozenset(k for f in POWER_FEATURES for k in f)      # the power sums the features use


@lru_cache(maxsize=16)
def radial_rule(C: int, n: int) -> tuple:
    """(r, w): the n-node Gauss rule of the chi law with C - 2 degrees of freedom (the radius of the centred others):
    Gauss-Laguerre in x = r^2/2 for the weight x^a e^-x, a = (C - 4)/2, by Golub-Welsch (Jacobi matrix diagonal
    2k + a + 1, off-diagonal sqrt(k (k + a)); weights the squared first components, summing to 1: no Gamma(a + 1)
    to overflow at large C). Exact for polynomials of degree < 2n in r^2. C = 2 (no centred dimension): r = 0."""
    if C == 2:
        return np.zeros(1), np.ones(1)
    a, k = (C - 4) / 2, np.arange(n, dtype=float)
    x, v = linalg.eigh_tridiagonal(2 * k + a + 1, np.sqrt(k[1:] * (k[1:] + a)))
    return np.sqrt(2 * x), v[0] ** 2


@lru_cache(maxsize=8)
def sphere_rule(sizes: tuple) -> tuple:
    """(points [N, d], weights [N] summing to 1): a product rule on the unit sphere S^(d-1), d = len(sizes) + 1, for
    the uniform law: sizes[0] equally spaced angles on S^1 (trapezoid), then level k = 3..d puts S^(k-2) at height t
    with t the sizes[k-2]-node Gauss-Jacobi rule of the height's density (1 - t^2)^((k-3)/2). With an even number of
    angles the set is antipodal (the Jacobi nodes are symmetric), so it integrates the even part of a function."""
    phi = 2 * math.pi * np.arange(sizes[0]) / sizes[0]
    pts, w = np.stack([np.cos(phi), np.sin(phi)], 1), np.full(sizes[0], 1 / sizes[0])
    for k, n in enumerate(sizes[1:], start=3):
        t, wt = special.roots_jacobi(n, (k - 3) / 2, (k - 3) / 2)
        ring = (np.sqrt(1 - t * t)[:, None, None] * pts).reshape(-1, k - 1)
        pts = np.concatenate([np.repeat(t, len(pts))[:, None], ring], 1)
        w = np.outer(wt / wt.sum(), w).reshape(-1)
    return pts, w


def helmert(n: int) -> np.ndarray:
    """[n - 1, n]: an orthonormal basis of the sum-zero subspace of R^n (Helmert's contrasts)."""
    k = np.arange(1, n)[:, None]
    j = np.arange(n)[None, :]
    H = np.where(j < k, 1.0, np.where(j == k, -k, 0.0))        # row k: k ones, then -k
    return H / np.sqrt(k * (k + 1))


def power_features(theta: np.ndarray) -> np.ndarray:
    """[..., len(POWER_FEATURES)]: the products of power sums prod_i p_(k_i)(theta) of directions theta [..., n]; the
    powers by repeated products (theta ** k calls pow per element: 28x slower, 2.8 s of the C = 10^4 table)."""
    p, power = {}, theta
    for k in range(2, max(_POWERS) + 1):
        power = power * theta
        if k in _POWERS:
            p[k] = power.sum(-1)
    return np.stack([math.prod(p[k] for k in f) for f in POWER_FEATURES], -1)


@lru_cache(maxsize=None)
def _centred_moment(powers: tuple, n: int) -> float:
    """E prod_b z_b^(m_b) over distinct coordinates b of z = x - mean(x), x ~ N(0, I_n) (variance 1 - 1/n, covariance
    -1/n), by Isserlis' recursion: the first factor's slot pairs with another slot of its own coordinate (m_0 - 1
    ways, the variance) or of coordinate b (m_b ways, the covariance)."""
    powers = tuple(sorted((m for m in powers if m), reverse=True))
    if not powers:
        return 1.0
    if sum(powers) % 2:
        return 0.0
    head, rest = powers[0], list(powers[1:])
    out = (head - 1) * (1 - 1 / n) * _centred_moment((head - 2, *rest), n) if head > 1 else 0.0
    for b, m in enumerate(rest):
        cut = rest.copy()
        cut[b] = m - 1
        out += m * (-1 / n) * _centred_moment((head - 1, *cut), n)
    return out


def _set_partitions(items: list):
    """All partitions of ``items`` into blocks (lists)."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in _set_partitions(rest):
        for i in range(len(part)):
            yield part[:i] + [[first, *part[i]]] + part[i + 1:]
        yield [[first], *part]


@lru_cache(maxsize=32)
def power_feature_means(n: int) -> np.ndarray:
    """Exact E power_features(theta) for theta uniform on the unit sphere of the sum-zero subspace of R^n. With
    z = x - mean(x), x ~ N(0, I_n): theta = z/|z| with |z| independent of theta, so for a homogeneous polynomial of
    degree m E p(theta) = E p(z) / E |z|^m, E |z|^(2k) = prod_(i<k) (n - 1 + 2i) (chi^2_(n-1) moments), and
    E prod_i p_(a_i)(z) = sum over the partitions of the factors into equal indices of n (n - 1) ... (one per block)
    times the moment of the blocks' summed powers over distinct coordinates (_centred_moment)."""
    out = []
    for f in POWER_FEATURES:
        m = sum(f)
        num = sum(math.prod(n - i for i in range(len(part))) * _centred_moment(tuple(sum(b) for b in part), n)
                  for part in _set_partitions(list(f)))
        out.append(num / math.prod(n - 1 + 2 * i for i in range(m // 2)))
    return np.array(out)
