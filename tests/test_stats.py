"""Estimators: unbiasedness of γ̂ (with the 1/D correction), calibrated delta / bootstrap SEs, G0 tests."""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import igbsym
from igbsym.errors import InputError
from validation.stats import (binned_chi2, gamma_estimate, jitter_g0, ks_test, mean_se, ratio_estimate)


def synthetic(rng, gamma, inits, d_pts, classes=2):
    """Per-init output centres μ ~ N(0, γ v), data variance v ~ χ²_8/8 and the sample centre of D Gaussian points."""
    v = rng.chisquare(8, (inits, classes)) / 8
    mu = rng.standard_normal((inits, classes)) * np.sqrt(gamma * v)
    x = mu[..., None] + rng.standard_normal((inits, classes, d_pts)) * np.sqrt(v)[..., None]
    return x.mean(-1), x.var(-1, ddof=1)


@given(st.floats(0.0, 3.0), st.integers(0, 2**32 - 1))
def test_gamma_estimate_unbiased_and_se_calibrated(gamma, seed):
    """Over 40 replicates: mean of γ̂ within 5 SE of γ (the 1/D bias removed), and the delta SE within 35 % of
    the replicate spread (the SE of a standard deviation from 40 replicates is ≈ 11 %)."""
    rng = np.random.default_rng(seed)
    ests = [gamma_estimate(*synthetic(rng, gamma, 300, 20), 20) for _ in range(40)]
    vals = np.array([e.value for e in ests])
    spread = vals.std(ddof=1)
    assert abs(vals.mean() - gamma) < 5 * spread / math.sqrt(len(vals))
    assert abs(np.mean([e.se for e in ests]) / spread - 1) < 0.35


def test_uncorrected_estimate_is_biased_by_one_over_d():
    """Without the correction E[μ̂²] = Var μ + E[var]/D: the raw ratio sits 1/D above γ (here 1/5)."""
    rng = np.random.default_rng(1)
    mu, var = synthetic(rng, 0.5, 20000, 5)
    raw = (mu**2).mean() / var.mean()
    assert abs(raw - 0.5 - 1 / 5) < 0.03
    assert abs(gamma_estimate(mu, var, 5).value - 0.5) < 0.03


def test_bootstrap_and_delta_agree():
    rng = np.random.default_rng(2)
    mu, var = synthetic(rng, 0.47, 2000, 100)
    d, b = gamma_estimate(mu, var, 100), gamma_estimate(mu, var, 100, method="bootstrap", seed=3)
    assert d.value == b.value
    assert abs(d.se / b.se - 1) < 0.15
    assert b.lo < d.value < b.hi


def test_mean_se_and_ratio_inputs():
    m = mean_se([1.0, 2.0, 3.0, 4.0])
    assert m.value == 2.5 and abs(m.se - np.std([1, 2, 3, 4], ddof=1) / 2) < 1e-15
    for bad in (lambda: mean_se([1.0]), lambda: ratio_estimate([1, 2], [1, 2, 3]),
                lambda: ratio_estimate([1, 2], [1, 2], method="jackknife"),
                lambda: gamma_estimate(np.zeros((3, 2)), np.zeros((3, 3)), 10)):
        with pytest.raises(InputError):
            bad()


def test_jitter_stays_within_half_a_step():
    g = np.arange(0, 11) / 10
    j = jitter_g0(g, 10, seed=0)
    assert np.all(np.abs(j - g) <= 0.05 + 1e-15) and np.all((0 <= j) & (j <= 1))


def g0_samples(rng, gamma, n):
    """G0 = Φ(√γ Z) — the law x = Φ⁻¹(G0) ~ N(0, γ) (independent route: scipy's normal)."""
    from scipy.stats import norm
    return norm.cdf(math.sqrt(gamma) * rng.standard_normal(n))


def test_ks_and_chi2_accept_right_law_reject_wrong():
    rng = np.random.default_rng(4)
    g = g0_samples(rng, 0.47, 3000)
    cdf = lambda gam: (lambda x: igbsym.get("igb.cdf").numpy(g=np.clip(x, 0, 1), gamma=gam))
    assert ks_test(g, cdf(0.47))[1] > 1e-4
    assert ks_test(g, cdf(0.8))[1] < 1e-6
    assert binned_chi2(g, cdf(0.47))[1] > 1e-4
    assert binned_chi2(g, cdf(0.8))[1] < 1e-6
    with pytest.raises(InputError):
        binned_chi2(g[:50], cdf(0.47))
