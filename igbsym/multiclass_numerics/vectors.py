"""Whole fraction vectors (G_1..G_C) and their counts at a finite dataset size D (IGB paper App. H, C >= 3).

Randomised QMC over whole vectors of the law tables' nets (net_means), each vector by the trapezoid rule of the law
tables (fraction_vectors; sum_c G_c = 1 to 1e-12) and observed through multinomial counts at D, which is what a
network evaluated on D points shows; the SE (over the scrambles) is stated relative. max_fraction: the exact D = inf
value + the sampled overtaking of the leader (max_fraction_sampled); max_fraction_cdf: P(max_c K_c <= k | G) with the
leading pair's split integrated exactly (pair_smoothed_max_cdf). Where that wins on a measured map of variance x time
(exact_count_mean, exact_count_cdf: gamma D and D/C bounded) no count is drawn: E[max_c K_c | G] and
P(max_c K_c <= k | G) are exact per vector (counts.py: Poissonisation at a saddle point). vector_samples: plain
Monte Carlo vectors, the reference of tests and derivations."""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import special, stats

from .common import K_SCRAMBLES, SEED, SQ2PI, scramble_se
from .counts import max_count_cdf, max_count_mean
from .moments import max_fraction_exact
from .nets import other_means
from .products import cdf_of_max, grid_offsets

VEC_BUDGET = 100_000    # samples * C for the whole-vector Monte Carlo (max_fraction, entropy)


def vector_samples(gamma: float, C: int, n: int | None = None, seed: int = 0) -> np.ndarray:
    """n exact fraction vectors (G_1..G_C) [n, C] for means u ~ N(0, gamma I_C) (fixed seed); n defaults to
    min(4000, VEC_BUDGET // C) (10 at C = C_MAX), so n C <= VEC_BUDGET bounds the cost whatever C (a floor of 100
    made it grow as C above C = 1000: 19 s of CPU per gamma at C = 10^4)."""
    n = n or min(4000, VEC_BUDGET // C)
    return _vectors(float(gamma), int(C), int(n), int(seed)).copy()


@lru_cache(maxsize=16)
def _vectors(gamma, C, n, seed):
    rng = np.random.default_rng([SEED, C, seed, 1])
    if gamma == 0:
        return np.full((n, C), 1 / C)
    z = rng.standard_normal((n, C))
    if math.isinf(gamma):
        return (z == z.max(1, keepdims=True)).astype(float)
    return fraction_vectors(math.sqrt(gamma) * z)


def fraction_vectors(u: np.ndarray, block: int = 32) -> np.ndarray:
    """G_c = int phi(w - u_c) prod_{j != c} Phi(w - u_j) dw for every class of each row of means u [n, C]: the
    trapezoid rule on the law tables' grid (grid_offsets, cdf_of_max), dividing the full product by Phi(w - u_c)
    (>= 1e-17 on the grid w >= max u - 8.5, so no underflow)."""
    C = u.shape[1]
    order = np.argsort(-u, axis=1)
    us = np.take_along_axis(u, order, 1)                       # descending, as cdf_of_max needs
    h, rel = grid_offsets(C, 8.5, 8.5)
    out = np.empty(u.shape)
    for s0 in range(0, u.shape[0], block):
        rows = us[s0:s0 + block]
        w = rows[:, :1] + rel[None, :]
        H = cdf_of_max(w, rows)
        d = w[:, :, None] - rows[:, None, :]
        vals = h * (H[:, :, None] * np.exp(-d * d / 2) / SQ2PI / special.ndtr(d)).sum(1)
        np.put_along_axis(out[s0:s0 + block], order[s0:s0 + block], vals, 1)
    return out


def observed_fractions(vectors: np.ndarray, D: float, seed: int = 0) -> np.ndarray:
    """Fractions as measured on D i.i.d. data points (D finite): multinomial(D, G)/D per vector."""
    rng = np.random.default_rng([SEED, vectors.shape[1], int(D), seed, 2])
    p = vectors / vectors.sum(1, keepdims=True)
    return rng.multinomial(int(D), p) / D


def max_fraction_samples(gamma: float, C: int) -> np.ndarray:
    """Monte Carlo sample of the dominant class fraction max_c G_c (D = inf; the plain reference of tests and
    derivations)."""
    return np.sort(vector_samples(gamma, C).max(1))


MAX_REL_SE = 1e-4      # finite-D max_fraction: nets are enlarged until the relative SE is at most this ...
VEC_ROWS = 2 ** 17     # ... or 2^m C reaches this per scramble (vector_points_log2; ~15 s at C = 100)
VEC_PILOT = 4          # the first net: 2^-4 of the largest (the pilot that sizes the next)
MAX_COUNT_REPEATS = 64  # multinomial draws per vector there: at 16 the count noise was most of the variance


def vector_points_log2(C: int) -> int:
    """The largest net of max_fraction_sampled: 2^m vectors per scramble, 2^m C <= VEC_ROWS, 2 <= m <= 13 (C = 10:
    2^13; C = 100: 2^10; C = 10^4: 2^3)."""
    return max(2, min(13, int(math.log2(VEC_ROWS // C))))


@lru_cache(maxsize=32)
def max_fraction_sampled(gamma: float, C: int, D: float, exact: bool | None = None) -> tuple:
    """(value, SE) over net_means. Where ``exact`` (None: as exact_count_mean says): the mean of E[max_c K_c | G]/D,
    exact per vector (max_count_mean). Else max_fraction_exact(gamma, C) + the mean of (max_c K_c - K_top)/D,
    K multinomial(D, G), top = argmax_c G_c: max_c K_c/D - max_c G_c less the control variate K_top/D - G_top, whose
    mean given G is exactly 0, so only the overtaking of the leading class by the count noise is sampled: each vector
    with MAX_COUNT_REPEATS multinomial draws less control variates of mean 0 given G (overtaking): the overtaking
    depends on the gap between the largest means, which the nets' best coordinates drive (per vector 2 ... 6x less
    variance than i.i.d. means, measured at C = 30 ... 1000). The value is projected onto [1/C, 1]. Memoised: a
    form's value and its SE share a run."""
    if exact_count_mean(gamma, C, D) if exact is None else exact:
        value, se, _ = net_means(gamma, C, lambda v, k: max_count_mean(v, int(D))[:, None] / D)
    else:
        population = float(max_fraction_exact(gamma, C)[0])
        value, se, _ = net_means(gamma, C, lambda v, k: count_means(v, D, lambda frac: overtaking(frac, v, D), k,
                                                                    MAX_COUNT_REPEATS)[:, None], population)
    return min(1.0, max(1 / C, float(value[0]))), float(se[0])


EXACT_MEAN_RULE = ((10.0, 3), (3.0, 10))   # exact_count_mean: gamma D <= a and D <= b C, for a pair (a, b)
EXACT_CDF_GD, EXACT_CDF_DC, EXACT_CDF_D = 30.0, 10, 1000   # exact_count_cdf: gamma D, D/C and D at most these


def exact_count_mean(gamma: float, C: int, D: float) -> bool:
    """Whether finite-D max_fraction (C >= 3) takes E[max_c K_c | G] exactly per vector (max_count_mean) rather
    than drawing counts: where gamma D <= 10 and D <= 3 C, or gamma D <= 3 and D <= 10 C (EXACT_MEAN_RULE), the
    side of a measured map (gamma in {0.01, ..., 1}, C in {10, 100}, D/C in {0.3, ..., 10}) on which the exact
    route's variance x time is the smaller: 6e-6 ... 0.64x the drawn one's at 26 points there, 4.2 ... 160x at six
    beyond (e.g. (gamma, C, D) = (0.1, 10, 100): 12.6x; (1, 100, 30): 4.4x). The rule is conservative: at
    (0.01, 100, 1000) the exact route won too (0.54x), in 240 s."""
    return any(gamma * D <= gd and D <= dc * C for gd, dc in EXACT_MEAN_RULE)


def exact_count_cdf(gamma: float, C: int, D: float) -> bool:
    """Whether finite-D max_fraction_cdf (C >= 3) takes P(max_c K_c <= k | G) exactly per vector (max_count_cdf)
    rather than drawing counts: where gamma D <= 30, D <= 10 C and D <= 1000 (the DFT grows as sqrt(D)). On the same
    measured map the exact route's variance x time (the worst of the 1 ... 99 % quantiles) is 2e-5 ... 0.32x the
    drawn one's at 32 points there, and 1.3 ... 5x at five beyond ((gamma, C, D) = (0.1, 100, 1000),
    (0.3, 100, 300), (1, 10, 100), (1, 100, 300), (0.467, 10, 400)); its relative SE at the 1 % quantile
    5e-6 ... 1.9e-3 (drawn: 3.7e-4 ... 1.2e-2), in 0.3 ... 64 s (drawn: 5 ... 13 s). The rule is conservative: at
    (0.467, 3, 400) the exact route won too (0.44x)."""
    return gamma * D <= EXACT_CDF_GD and D <= EXACT_CDF_DC * C and D <= EXACT_CDF_D


def net_means(gamma: float, C: int, stat, offset: float = 0.0) -> tuple:
    """(values, SEs [n_out], per-scramble means [K, n_out]) of offset + E stat(G) over fraction vectors G,
    stat(v, k) -> [n, n_out] for the vectors v [n, C] of scramble k. The means u are the randomised QMC nets of the
    law tables (other_means with C + 1: C means in descending order, the largest Gumbel importance-sampled, so G is
    descending and class 0 leads); per scramble the self-normalised weighted mean, SE = SD/sqrt(K) over the
    K_SCRAMBLES scrambles. From 2^-VEC_PILOT of the largest net (vector_points_log2) the net grows by the factor
    (largest relative SE / MAX_REL_SE)^2 the last one asks for, up to the largest."""
    top = vector_points_log2(C)
    m = max(2, top - VEC_PILOT)
    while True:
        base, weight = other_means(C + 1, m)
        per = np.array([weight[k] @ stat(fraction_vectors(math.sqrt(gamma) * base[k]), k) / weight[k].sum()
                        for k in range(K_SCRAMBLES)])
        value, se = offset + per.mean(0), scramble_se(per)
        worst = float(np.max(se / np.maximum(np.abs(value), 1e-300)))
        if worst <= MAX_REL_SE or m == top:
            return value, se, per
        m = min(top, m + max(1, math.ceil(2 * math.log2(worst / MAX_REL_SE))))


OVERTAKE_PAIRS = 2     # classes behind the leader whose count differences carry control variates (overtaking)


def overtaking(frac: np.ndarray, G: np.ndarray, D: float) -> np.ndarray:
    """Per draw, (max_c K_c - K_1)/D for counts K = D frac of fraction vectors G [n, C] led by class 0, less for each
    of the OVERTAKE_PAIRS classes b behind it the first two Hermite terms of (K_b - K_1)^+ about its mean: given G,
    X = K_b - K_1 has exactly mean mu = D (p_b - p_1) and variance s^2 = D (p_1 (1 - p_1) + p_b (1 - p_b) + 2 p_1 p_b)
    (p = G normalised, as drawn), so Phi(mu/s) (X - mu) + phi(mu/s)/(2 s) ((X - mu)^2 - s^2) has mean 0 given G
    whatever its coefficients, functions of G (the Gaussian projections of x^+ on He_1, He_2): unbiased. Measured
    (2 pairs against none): 3.8x less variance at (gamma, C, D) = (0.1, 30, 100) and (0.467, 100, 300), 2.4x at
    (0.1, 1e3, 1e4), none at (0.01, 100, 100) (D/C = 1: every class overtakes); 4 pairs did worse."""
    K, p = frac * D, G / G.sum(1, keepdims=True)
    out = K.max(1) - K[:, 0]
    for b in range(1, min(OVERTAKE_PAIRS, G.shape[1] - 1) + 1):
        mu = D * (p[:, b] - p[:, 0])
        var = D * (p[:, 0] * (1 - p[:, 0]) + p[:, b] * (1 - p[:, b]) + 2 * p[:, 0] * p[:, b])
        live = var > 1e-8                      # else X = mu: the terms are 0
        s = np.sqrt(np.where(live, var, 1.0))
        z, x = mu / s, K[:, b] - K[:, 0] - mu
        out -= np.where(live, special.ndtr(z) * x + np.exp(-z * z / 2) / (2 * SQ2PI * s) * (x * x - var), 0.0)
    return out / D


COUNT_REPEATS = 16     # multinomial draws per fraction vector in the finite-D control variates (SE 3-4x below one)


def count_means(vectors: np.ndarray, D: float, stat, batch: int = 0, repeats: int = COUNT_REPEATS) -> np.ndarray:
    """Per vector, the mean of stat(K/D) [n] over ``repeats`` independent multinomial(D, G) draws (fixed seeds; each
    batch of vectors its own)."""
    return np.mean([stat(observed_fractions(vectors, D, seed=repeats * batch + r)) for r in range(repeats)], axis=0)


def count_level(g, D: int) -> np.ndarray:
    """The largest count k with k/D <= g in floating point, as a simulation compares its observed fraction K/D with g
    (floor(g D) alone misses k = 29 at g = 0.29, D = 100: 0.29 * 100 = 28.999999999999996)."""
    k = np.floor(np.asarray(g, float) * D)
    k += (k + 1) / D <= g
    k -= k / D > g
    return k.astype(np.int64)


CDF_COUNT_REPEATS = 16  # count draws per vector in max_cdf_sampled (against 4: 1.0-7x less variance, measured)


def pair_smoothed_max_cdf(G: np.ndarray, D: int, ks: np.ndarray, seed: int, repeats: int) -> np.ndarray:
    """[n, n_k]: per fraction vector G [n, C] (descending: columns 0 and 1 the two largest), the mean over ``repeats``
    draws of 1{max_(c >= 2) K_c <= k} P(S - k <= K_0 <= k | S), where (S, K_2, ...) ~ multinomial(D, (p_0 + p_1,
    p_2, ...)) and K_0 | S ~ binomial(S, p_0/(p_0 + p_1)): the split of the leading pair integrated exactly, so an
    unbiased estimate of P(max_c K_c <= k | G) with less count noise than the indicator (fixed seeds per scramble)."""
    C = G.shape[1]
    p = G / G.sum(1, keepdims=True)
    lump = np.concatenate([np.minimum(p[:, :1] + p[:, 1:2], 1.0), p[:, 2:]], 1)   # the sum can round to 1 + 2^-52
    q = (p[:, 0] / lump[:, 0])[:, None]
    rng = np.random.default_rng([SEED, C, int(D), seed, 3])
    out = np.zeros((G.shape[0], ks.size))
    for _ in range(repeats):
        K = rng.multinomial(int(D), lump)
        S = np.broadcast_to(K[:, :1], out.shape)
        k = np.broadcast_to(ks[None], out.shape)
        rest = K[:, 1:].max(1, initial=0)[:, None] <= k
        out += rest & (S <= k)                                   # the pair cannot exceed k: probability 1
        split = rest & (S > k) & (S <= 2 * k)                   # else (S > 2k) one of the pair exceeds k: 0
        n, kk, qq = S[split], k[split], np.broadcast_to(q, out.shape)[split]
        out[split] += np.maximum(stats.binom.cdf(kk, n, qq) - stats.binom.cdf(n - kk - 1, n, qq), 0.0)
    return out / repeats


@lru_cache(maxsize=32)
def max_cdf_sampled(gamma: float, C: int, D: int, ks: tuple, exact: bool | None = None) -> tuple:
    """(values, SEs) [len(ks)]: P(max_c K_c <= k) at dataset size D, C >= 3, over net_means of P(max_c K_c <= k | G):
    exact per vector where ``exact`` (None: as exact_count_cdf says; max_count_cdf), else pair_smoothed_max_cdf
    (CDF_COUNT_REPEATS draws per vector). Exactly 0 where C k < D, 1 where k >= D. SE inf (no digit claimed) where a
    scramble's mean is 0: no draw saw the event, too rare for the spread to measure the error (at (gamma, C, D) =
    (1, 100, 100), P(every class gets one point) < 1e-42 reads 0), or it underflowed. Memoised: a form's values
    and SEs share a run."""
    k = np.asarray(ks, np.int64)
    value, se = np.where(k >= D, 1.0, 0.0), np.zeros(k.size)
    live = (C * k >= D) & (k < D)
    if live.any():
        if exact_count_cdf(gamma, C, D) if exact is None else exact:
            def stat(vec, s):
                return np.stack([max_count_cdf(vec, D, int(x)) for x in k[live]], 1)
        else:
            def stat(vec, s):
                return pair_smoothed_max_cdf(vec, D, k[live], s, CDF_COUNT_REPEATS)
        v, e, per = net_means(gamma, C, stat)
        value[live], se[live] = np.clip(v, 0.0, 1.0), np.where((per > 0).all(0), e, np.inf)
    return value, se


def sampled_at_levels(g: np.ndarray, gamma: float, C: int, D: int) -> tuple:
    """(values, SEs) of max_cdf_sampled at the count levels of g (each distinct level computed once), shaped as g."""
    levels, inverse = np.unique(count_level(g, D), return_inverse=True)
    value, se = max_cdf_sampled(float(gamma), int(C), int(D), tuple(int(x) for x in levels))
    return value[inverse], se[inverse]
