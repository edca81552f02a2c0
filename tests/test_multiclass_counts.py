"""The law of the largest class count given the fractions (igbsym/multiclass_numerics/counts.py, issue 27): the
saddle-point Poissonisation P(max_c K_c <= k | p), stated relative COUNT_ERROR, against an independent route: the
multinomial as sequential binomials (K_1 ~ binomial(D, p_1), K_2 | K_1 ~ binomial(D - K_1, p_2/(1 - p_1)), ...) summed
over every path with K_c <= k in mpmath at 40 digits, down to values of 1e-184."""
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import special

from igbsym.errors import NumericalError
from igbsym.multiclass_numerics import counts, vectors
from igbsym.multiclass_numerics.counts import COUNT_ERROR, max_count_cdf, max_count_mean


def mp_max_count_cdf(p, D: int, k: int):
    """P(max_c K_c <= k) for K ~ multinomial(D, p) by the sequential-binomial recursion over the points left, 40
    digits."""
    with mpmath.workdps(40):
        q = [mpmath.mpf(float(x)) for x in p]
        q = [x / sum(q) for x in q]
        left, rest = {D: mpmath.mpf(1)}, mpmath.mpf(1)
        for c in range(len(q) - 1):
            share, step = q[c] / rest, {}
            for r, pr in left.items():
                for j in range(min(k, r) + 1):
                    step[r - j] = step.get(r - j, 0) + pr * mpmath.binomial(r, j) * share**j * (1 - share)**(r - j)
            left, rest = step, rest - q[c]
        return sum((v for r, v in left.items() if r <= k), mpmath.mpf(0))


def _check(p, D, k):
    """Relative error <= COUNT_ERROR; where the law is below the normal doubles (2^-1022) the value must underflow to
    a subnormal or 0 (a thorough run drew P = 4e-325 at (gamma, C, D, k) = (10, 8, 39, 5), and this asserted
    ref > 0)."""
    value = max_count_cdf(np.atleast_2d(p), D, k)[0]
    ref = mp_max_count_cdf(p, D, k)
    if ref < mpmath.mpf(2) ** -1022:
        assert 0 <= value <= 2.0 ** -1022, (D, k, value, ref)
        return
    ref = float(ref)
    assert abs(value - ref) <= COUNT_ERROR * ref, (D, k, value, ref)


@given(gamma=st.floats(0.01, 10), C=st.integers(3, 9), D=st.integers(2, 40), level=st.floats(0, 1),
       seed=st.integers(0, 10**6))
def test_max_count_cdf_matches_the_sequential_binomial_law(gamma, C, D, level, seed):
    """Fraction vectors of the family's model at random (gamma, C, D) and a random level k from ceil(D/C) to D - 1:
    relative error <= COUNT_ERROR (measured <= 4e-14 at 80 random points with C <= 11, D <= 60)."""
    k0 = -(-D // C)
    k = min(D - 1, k0 + int(level * (D - k0)))
    _check(vectors.vector_samples(gamma, C, 1, seed=seed)[0], D, k)


@pytest.mark.parametrize("gamma,C,D,k", [(0.01, 100, 100, 1), (0.01, 100, 100, 2), (1.0, 30, 200, 7),
                                         pytest.param(3.0, 10, 300, 100, marks=pytest.mark.slow),
                                         pytest.param(0.1, 300, 301, 2, marks=pytest.mark.slow)])
def test_max_count_cdf_keeps_its_relative_precision_on_rare_events(gamma, C, D, k):
    """Levels down to the smallest (C k = D: every class gets exactly k points, the closed form D! prod p^k / k!^C,
    ~1e-44 at C = D = 100) and values down to 1e-184, where the saddle point moves far from lam = D."""
    _check(vectors.vector_samples(gamma, C, 1, seed=3)[0], D, k)


def test_max_count_cdf_is_one_where_the_union_bound_says_so_and_exact_at_the_ends():
    """At the first level where sum_c P(K_c > k) < COUNT_ERROR/1000 the value is 1, and the mpmath law is within
    COUNT_ERROR of it; 0 where C k < D; 1 where k >= D."""
    p = vectors.vector_samples(0.01, 5, 1, seed=7)
    D = 30
    k = next(k for k in range(D) if special.bdtrc(k, D, p[0] / p[0].sum()).sum() < COUNT_ERROR / 1000)
    assert k < D - 1 and max_count_cdf(p, D, k)[0] == 1.0 and max_count_cdf(p, D, k - 1)[0] < 1.0
    assert 1 - float(mp_max_count_cdf(p[0], D, k)) < COUNT_ERROR
    assert max_count_cdf(p, D, 5)[0] == 0.0 and max_count_cdf(p, D, 30)[0] == 1.0


def test_max_count_mean_is_the_sum_of_the_tails():
    """E[max_c K_c | p] against sum_k (1 - P(max <= k)) of the mpmath law, relative 1e-12."""
    p = vectors.vector_samples(0.1, 4, 2, seed=11)
    D = 17
    got = max_count_mean(p, D)
    for i in range(2):
        ref = sum(1 - float(mp_max_count_cdf(p[i], D, k)) for k in range(D))
        assert math.isclose(got[i], ref, rel_tol=1e-12), (got[i], ref)


def test_saddle_point_stops_each_row_where_it_converged(monkeypatch):
    """Regression: a converged row kept stepping, its bracket collapsed onto the root and the next step fell back to
    the midpoint of the stale bracket, so every pass ran all SADDLE_STEPS. On 2000 of the family's vectors at
    (gamma, C, D, k) = (0.1, 10, 100, 21) every root is met (|excess| <= 1e-13 D) in a few Newton steps."""
    calls = []
    original = counts.truncated_poisson
    monkeypatch.setattr(counts, "truncated_poisson", lambda y, k: calls.append(y.shape[0]) or original(y, k))
    p = vectors.vector_samples(0.1, 10, 2000, seed=3)
    p = p / p.sum(1, keepdims=True)
    pmf = counts.saddle_point(p, 100, 21)[1]
    assert len(calls) <= 8, len(calls)
    excess = (pmf @ np.arange(22)).sum(1) - 100
    assert np.all(np.abs(excess) <= 1e-13 * 100), np.abs(excess).max()


def test_saddle_point_raises_where_it_did_not_converge(monkeypatch):
    """Regression: rows still off the saddle point after SADDLE_STEPS returned without a word (the DFT then reads the
    sum's law off its centre). With one step allowed, the 200 rows are not met and the call raises NumericalError."""
    monkeypatch.setattr(counts, "SADDLE_STEPS", 1)
    p = vectors.vector_samples(0.1, 10, 200, seed=3)
    with pytest.raises(NumericalError, match="saddle point"):
        counts.saddle_point(p / p.sum(1, keepdims=True), 100, 21)


def test_saddle_point_where_plain_newton_goes_back_and_forth():
    """Regression: at this vector of the family's nets ((gamma, C, D) = (1.34, 5, 7), k = 3: one class holds 0.99) the
    truncated means' sum is a sigmoid in log lam, and Newton steps, each inside the bracket, went back and forth between
    t ~ 4.25 and 8.85 while the bracket shrank by ~1e-4 a step: no root in SADDLE_STEPS (raised NumericalError, and
    before that was an error returned without a word). With rtsafe's rule (a step at most half the one before the
    last, else bisection) the root is met, and the value is the 40-digit recursion's within COUNT_ERROR."""
    p = np.array([[0.990140267775036, 0.005319489778679858, 0.0023623197189907145, 0.0020813992055834173,
                   9.652352170994849e-05]])
    pmf = counts.saddle_point(p, 7, 3)[1]
    assert abs((pmf @ np.arange(4)).sum() - 7) <= 1e-13 * 7
    ref = float(mp_max_count_cdf(p[0], 7, 3))
    assert abs(max_count_cdf(p, 7, 3)[0] / ref - 1) <= COUNT_ERROR


@pytest.mark.parametrize("D,k,p0", [(20000, 10100, 0.5), (20000, 10250, 0.51), (100000, 50500, 0.499)])
def test_max_count_cdf_at_large_d_keeps_its_digits(D, k, p0):
    """Regression: the prefactor log(D! lam^-D prod e_k) was summed from terms ~ D log D that cancel to O(1), losing
    2.1e-11, 1.4e-11 and 2.6e-10 relative here. Against the binomial window sum P(D - k <= K_0 <= k) in mpmath at 40
    digits (C = 2, an independent route), within COUNT_ERROR."""
    with mpmath.workdps(40):
        lp, lq, top = mpmath.log(mpmath.mpf(p0)), mpmath.log(1 - mpmath.mpf(p0)), mpmath.loggamma(D + 1)
        ref = float(mpmath.fsum(mpmath.exp(top - mpmath.loggamma(j + 1) - mpmath.loggamma(D - j + 1) + j * lp
                                           + (D - j) * lq) for j in range(D - k, k + 1)))
    value = max_count_cdf(np.array([[p0, 1 - p0]]), D, k)[0]
    assert abs(value / ref - 1) <= COUNT_ERROR, (value, ref)


def test_stirling_remainder_against_mpmath():
    """log D! - (D log D - D) for the small D taken directly and the series from D = 20, against mpmath at 30
    digits, relative 4e-15."""
    for D in (1, 2, 19, 20, 21, 100, 10**5, 10**9):
        with mpmath.workdps(30):
            ref = float(mpmath.loggamma(D + 1) - D * mpmath.log(D) + D)
        assert abs(counts.stirling_remainder(D) / ref - 1) <= 4e-15, D
