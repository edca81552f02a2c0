"""The base points of the law tables (IGB paper App. H, C >= 4): randomised QMC over the other C - 1 means, with
fixed scrambles (the routes are deterministic functions of their inputs).

* plain: K_SCRAMBLES independently scrambled Sobol nets of 2^m points (points_log2: 2^12 below C = 10 ... 2^7 at
  C = 10^4) mapped to descending order statistics, the largest importance-sampled in its Gumbel variable
  (other_means);
* centred: the others centred on their mean, a standard normal vector of the (C - 2)-dimensional sum-zero subspace,
  in polar form (radial_rows): the radius by the Gauss rule of its chi law (spherical.radial_rule), the direction by a
  uniformly rotated product rule on the sphere at C = 4, 5 (SPHERE_RULES, spherical.sphere_rule), as in Genz and
  Monahan's stochastic spherical-radial rules, and from C = 6 by the plain nets' directions (directions), which
  carry control variates (tables.LawTable.controlled)."""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import special, stats

from ..extreme import quantile_at_gumbel
from .common import K_SCRAMBLES, SEED
from .products import BINNED_FROM
from .spherical import helmert, radial_rule, sphere_rule

SOBOL_DIM = 256          # Sobol coordinates drive the largest other means; further ones are i.i.d. uniform (padding)


GUMBEL_WIDTH = 1.5       # importance sampling of the largest other mean: Gumbel variable with this scale


def points_log2(C: int) -> int:
    """2^m RQMC points per scramble (K_SCRAMBLES scrambles), sized so one (gamma, C) table costs about a second on one
    core up to C = 200 and ten at C = 10^4: the rows cost ~ C each (exact products) below BINNED_FROM and ~ the
    lattice bins above it. The randomised-QMC error falls like 2^-m (measured: 4-10x per factor 4 at C = 4)."""
    if C < BINNED_FROM:
        return 12
    return 11 if C <= 200 else (9 if C <= 2000 else 7)


@lru_cache(maxsize=4)
def other_means(C: int, m: int | None = None) -> tuple:
    """([K_SCRAMBLES, 2^m, C - 1] the other C - 1 standard normal means in descending order, [K, 2^m] weights);
    m = points_log2(C) unless given (the centred tables' directions take fewer points, directions).

    One scrambled (LMS + digital shift) Sobol net per replicate, fixed seeds. The largest other mean x is
    importance-sampled: its Gumbel variable t (Phi(x)^(C-1) = exp(-e^-t), exactly Gumbel) is drawn from a Gumbel of
    scale GUMBEL_WIDTH by the first coordinate, weight p(t)/q(t) <= 2 (bounded), so the rare configurations with a
    large (or small) other maximum, which make the tails of the law of G_c, are sampled ~20x more often. Given x, the
    other C - 2 are i.i.d. N(0, 1) below x, by Renyi's representation of descending uniform order statistics
    (U_(1) = Phi(x) V_2^(1/(C-2)), U_(i) = U_(i-1) V_(i+1)^(1/(C-1-i))), so the best-spread first Sobol coordinates
    drive the largest means (effective dimension reduction, like a Brownian bridge); coordinates past SOBOL_DIM are
    i.i.d. uniform."""
    d, m, b = C - 1, points_log2(C) if m is None else m, GUMBEL_WIDTH
    dims = min(d, SOBOL_DIM)
    out, weight = np.empty((K_SCRAMBLES, 2**m, d)), np.empty((K_SCRAMBLES, 2**m))
    for k, child in enumerate(np.random.SeedSequence([SEED, C, 0]).spawn(K_SCRAMBLES)):
        net, pad = child.spawn(2)
        v = np.empty((2**m, d))
        v[:, :dims] = stats.qmc.Sobol(dims, scramble=True, seed=np.random.default_rng(net)).random_base2(m)
        v[:, dims:] = np.random.default_rng(pad).random((2**m, d - dims))
        v = np.clip(v, 1e-300, 1 - 1e-16)
        t = -b * np.log(-np.log(v[:, 0]))
        weight[k] = b * np.exp(-t - np.exp(-t) + t / b + np.exp(-t / b))
        x = quantile_at_gumbel(t, d)
        out[k, :, 0] = x
        if d > 1:
            log_u = special.log_ndtr(x)[:, None] + np.cumsum(np.log(v[:, 1:]) / (d - 1 - np.arange(d - 1)), axis=1)
            out[k, :, 1:] = -special.ndtri(-np.expm1(log_u))      # Phi^-1(U) through 1 - U (no rounding near 1)
    return out, weight


SPHERE_RULES = {4: (64,), 5: (32, 8)}    # C: product rule sizes of the directions (sphere_rule)


def radial_nodes(C: int) -> int:
    """Gauss nodes of the radial rule of the centred others (radial_rows); with the directions, 2^points_log2(C) rows
    per scramble. The radius of C - 2 centred standard normals concentrates as C grows (relative width
    ~ 1/sqrt(2C)), so fewer nodes do; where the directions are integrated well (the angular rule at C = 4, exact to
    ~1e-13; the control variates) the rows go to the radius, whose integrand has structure at r ~ 1/sqrt(gamma)
    (C = 4, 64 nodes: the half rule differs by <= 6e-7 relative at gamma = 10; C = 10, 16 against 8 nodes: the
    stated bound of 1 - F at g = 0.8 falls from 7e-4 to 5e-5 at gamma = 1, while at C = 30 and 100 the halved
    directions cost more). Measured against 40 (24) nodes on the same directions, the cdf moves by <= 2e-10 relative
    at C = 5 (16 nodes), <= 1e-10 at C = 100 (8 nodes) down to values of 1e-258."""
    return 64 if C <= 4 else (16 if C < 20 else (8 if C <= 2000 else 4))


def directions(C: int, scrambles: int) -> tuple:
    """(theta [scrambles, M, C - 1], weight [scrambles, M]): unit vectors of the centred others' subspace (sum zero)
    and their weights, summing to 1 per scramble, M = 2^points_log2(C) / radial_nodes(C) per scramble, antipodes
    included. C in SPHERE_RULES (C - 2 <= 3 dimensions): the product sphere_rule, uniformly randomly rotated per
    scramble (a stochastic spherical rule, as Genz and Monahan's spherical-radial rules; unbiased, and spectrally
    accurate for a smooth integrand: between-scramble SE ~1e-13 relative at C = 4, 1e-8 at C = 5). Else the
    directions of the plain table's base points (other_means on M/2 points: importance-sampled top, so the nets' best
    coordinates still drive the largest others) and their antipodes (the normal law is symmetric), with the
    importance weights: exact likelihood ratios of the whole vector, hence of any function of its direction; from
    C = 6 these carry control variates (LawTable.controlled), which beat the product rules there (measured at C = 6,
    7, gamma = 1: 8e-7 against 5e-6 with features to degree 10)."""
    if C in SPHERE_RULES:
        pts, w = sphere_rule(SPHERE_RULES[C])
        rng = np.random.default_rng([SEED, C, 1])
        turns = [stats.special_ortho_group.rvs(C - 2, random_state=rng) for _ in range(K_SCRAMBLES)][:scrambles]
        theta = np.einsum("kij,nj->kni", np.array(turns), pts) @ helmert(C - 1)
        return theta, np.broadcast_to(w, theta.shape[:2]).copy()
    M = 2 ** points_log2(C) // radial_nodes(C)
    base, w0 = other_means(C, int(math.log2(M // 2)))
    base, w0 = base[:scrambles], w0[:scrambles] / (2 * w0[:scrambles].sum(1, keepdims=True))
    theta = base - base.mean(2, keepdims=True)
    if C > 2:
        theta /= np.linalg.norm(theta, axis=2, keepdims=True)
    return np.concatenate([theta, -theta], 1), np.concatenate([w0, w0], 1)


def radial_rows(C: int, n: int, tilt: float = 1.0, scrambles: int = K_SCRAMBLES) -> tuple:
    """(xi [rows, C - 1] descending, weight [rows], nodes per direction, theta): the centred others r theta of the first
    ``scrambles`` scrambles, theta the QMC directions (directions) and r the n-node radial_rule scaled by ``tilt``.
    Direction and radius of centred standard normals are independent, so the weight is the direction's times
    w_r tilt^(C-2) exp(-(tilt^2 - 1) r^2/2) (the exact likelihood ratio of the scaled radius at the rule's node).
    Both theta and -theta are directions, so the rule integrates the even part of each ray, a smooth function of
    r^2 (Gauss-Laguerre in r^2/2 converges geometrically). Rows per scramble: [direction, node], a direction's
    nodes contiguous."""
    theta, w0 = directions(C, scrambles)
    r, w = radial_rule(C, n)
    rows = theta[:, :, None, :] * (tilt * r)[:, None]
    xi = -np.sort(-rows.reshape(-1, C - 1), axis=1)
    lr = (C - 2) * math.log(tilt) - (tilt * tilt - 1) * r * r / 2
    return xi, (w0[:, :, None] * (w * np.exp(lr))).reshape(-1), r.size, theta
