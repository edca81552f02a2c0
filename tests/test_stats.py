"""Estimators: unbiasedness of γ̂ (with the 1/D correction), calibrated delta / bootstrap SEs, G0 tests."""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import igbsym
from igbsym.errors import InputError
from igbsym.validation.stats import (binned_chi2, gamma_estimate, jitter_g0, ks_test, mean_se, ratio_estimate)


def synthetic(rng, gamma, inits, d_pts, classes=2):
    """Per-init output centres μ ~ N(0, γ v), data variance v ~ χ²_8/8 and the sample centre of D Gaussian points."""
    v = rng.chisquare(8, (inits, classes)) / 8
    mu = rng.standard_normal((inits, classes)) * np.sqrt(gamma * v)
    x = mu[..., None] + rng.standard_normal((inits, classes, d_pts)) * np.sqrt(v)[..., None]
    return x.mean(-1), x.var(-1, ddof=1)


REPLICATES = 200


@given(st.floats(0.0, 3.0), st.integers(0, 2**32 - 1))
def test_gamma_estimate_unbiased_and_se_calibrated(gamma, seed):
    """Over 200 replicates (300 inits, D = 20): the mean of γ̂ is γ (the 1/D bias removed) and the delta-method
    SE is calibrated: z_i = (γ̂_i − γ)/SE_i has E z² = 1 (t-like: 1 + O(1/I)). Both are z-tests at 5 SE of their own
    replicate spread (false-failure rate ≤ 2 × 5.7e-7 per example, union bound over the profile's examples).

    Issue 10 found the old form of this test (mean SE within 35 % of the spread of 40 replicates) failing at
    γ = 1 under the thorough profile: over 2000 replicates the delta SE is calibrated to 1 % (mean SE / spread =
    0.99 at γ = 1, D = 20); the old tolerance was by eye, about 3 SDs of a 40-replicate spread, and 400 examples
    made a > 3 SD excursion likely. The test was at fault, not the SE."""
    rng = np.random.default_rng(seed)
    ests = [gamma_estimate(*synthetic(rng, gamma, 300, 20), 20) for _ in range(REPLICATES)]
    vals = np.array([e.value for e in ests])
    z2 = ((vals - gamma) / np.array([e.se for e in ests])) ** 2
    assert abs(vals.mean() - gamma) <= 5 * vals.std(ddof=1) / math.sqrt(REPLICATES)
    assert abs(z2.mean() - 1) <= 5 * z2.std(ddof=1) / math.sqrt(REPLICATES) + 0.01


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


# ------------------------------------------------------------------------------------- estimators of the checks
def test_delta_method_equals_ratio_delta_se():
    rng = np.random.default_rng(5)
    a, b = rng.gamma(2.0, 1.0, 500), rng.gamma(3.0, 1.0, 500)
    from igbsym.validation.stats import delta_method
    v, se = delta_method(lambda m: m[0] / m[1], [a, b])
    r = ratio_estimate(a, b)
    assert v == pytest.approx(r.value, rel=1e-12) and se == pytest.approx(r.se, rel=1e-6)
    v, se = delta_method(lambda m: m[0], [a])
    assert se == pytest.approx(a.std(ddof=1) / math.sqrt(a.size), rel=1e-6)


@given(st.integers(0, 2**32 - 1))
def test_delta_method_kurtosis_calibrated(seed):
    """κ̂ = mean x⁴ / (mean x²)² of Gaussian data (truth 3): z-scores over 200 replicates have mean 0 and
    E z² = 1 within 5 of their own SEs (the estimator of checks_kurtosis / checks_bn)."""
    from igbsym.validation.stats import delta_method
    rng = np.random.default_rng(seed)
    zs = []
    for _ in range(REPLICATES):
        x = rng.standard_normal(2000)
        v, se = delta_method(lambda m: m[1] / m[0] ** 2, [x**2, x**4])
        zs.append((v - 3.0) / se)
    zs = np.array(zs)
    assert abs(zs.mean()) <= 5 * zs.std(ddof=1) / math.sqrt(REPLICATES) + 0.1   # + the O(1/√n) ratio skew
    assert abs((zs**2).mean() - 1) <= 5 * (zs**2).std(ddof=1) / math.sqrt(REPLICATES) + 0.05


def test_pdf_chi2_tests_the_density():
    from scipy.stats import norm
    from igbsym.validation.stats import pdf_chi2
    x = np.random.default_rng(6).standard_normal(20000)
    assert pdf_chi2(x, norm.pdf)[1] > 1e-4
    assert pdf_chi2(x, lambda t: 1.1 * norm.pdf(t))[1] < 1e-6            # mass 1.1: rejected
    assert pdf_chi2(x, lambda t: norm.pdf(t, scale=1.05))[1] < 1e-6     # wrong scale: rejected
    with pytest.raises(InputError):
        pdf_chi2(x[:10], norm.pdf)


def test_kurtosis_start_moments_match_monte_carlo():
    """κ_1 = 3(κ_w + w − 1)/w and c_1 = 2/w of y = W x (checks_kurtosis docstring) against numpy samples."""
    from igbsym.validation.checks_kurtosis import start_moments
    from igbsym.validation.stats import delta_method
    rng = np.random.default_rng(7)
    for w, law, kw in ((2, "rademacher", 1.0), (5, "uniform", 1.8), (3, "normal", 3.0)):
        n = 200_000
        W = {"rademacher": lambda s: rng.choice([-1.0, 1.0], s), "uniform": lambda s: rng.uniform(-3**.5, 3**.5, s),
             "normal": rng.standard_normal}[law]((n, w, w))
        y = np.einsum("nij,nj->ni", W, rng.standard_normal((n, w)))
        k1, c1 = start_moments(w, kw)
        k, se = delta_method(lambda m: m[1] / m[0] ** 2, [(y**2).mean(1), (y**4).mean(1)])
        assert abs(k - k1) <= 5 * se
        c, se = delta_method(lambda m: m[1] / m[0] ** 2 - 1, [(y**2).mean(1), y[:, 0] ** 2 * y[:, 1] ** 2])
        assert abs(c - c1) <= 5 * se


def test_g0_pmf_is_the_binomial_mixture():
    """maxpool's exact finite-D law of G0_hat sums to 1, is symmetric and matches a direct simulation."""
    from igbsym.validation.checks_maxpool import g0_pmf
    from scipy.special import ndtr
    pmf = g0_pmf(0.8, 16)
    assert pmf.sum() == pytest.approx(1, abs=1e-10) and np.allclose(pmf, pmf[::-1], atol=1e-12)
    rng = np.random.default_rng(8)
    j = rng.binomial(16, ndtr(math.sqrt(0.8) * rng.standard_normal(200_000)))
    freq = np.bincount(j, minlength=17) / j.size
    assert np.all(np.abs(freq - pmf) <= 5 * np.sqrt(pmf * (1 - pmf) / j.size))


def test_gumbel_reference_constants():
    """The exact norming constants of checks_maxpool (mpmath) against scipy: a* = Φ⁻¹(1 − 1/k), b* = 1/(k φ(a*))."""
    from scipy.stats import norm
    from igbsym.validation.checks_maxpool import gumbel_reference
    for k in (10**3, 10**6):
        a, b, t_a, t_b = gumbel_reference(k)
        assert a == pytest.approx(norm.isf(1 / k), rel=1e-10) and b == pytest.approx(1 / (k * norm.pdf(a)), rel=1e-8)
        assert t_a < 0 < t_b


def test_depth_extrapolation_removes_a_one_over_n_bias():
    """checks_depth.compare_widths: γ(N) = γ + c/N at two widths extrapolates to γ exactly."""
    from igbsym.validation.checks_depth import compare_widths
    sims = {64: (0.5 + 3 / 64, 0.01), 256: (0.5 + 3 / 256, 0.01)}
    r = compare_widths("depth.gamma", "synthetic", 0.5, sims, (64, 256), 0, inits={64: 128, 256: 64})[0]
    assert r.estimate == pytest.approx(0.5) and r.passed and r.alpha > 5.7e-7
    r = compare_widths("depth.gamma", "synthetic", 0.6, sims, (64, 256), 0)[0]
    assert not r.passed
