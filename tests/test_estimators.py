"""Rao–Blackwellised γ̂ (validation/estimators.py): unbiased for the same γ as the plain estimator, calibrated SEs.

Truth: a one-hidden-layer ReLU MLP with Kaiming-normal weights has γ = igb.gamma(relu) EXACTLY at any width and
input dimension (homogeneity; validation/checks_igb.py docstring), and ``fresh_data=True`` makes inits i.i.d.
False-failure rates: pooled z-tests at z = 5 (5.7e-7 each); calibration: the count of |z| > 2 among R
independent seeds is Binomial(R, p₂) with p₂ = P(|N(0,1)| > 2) = 0.0455; the band is ±4 binomial SDs (6e-5).
The delta-method z of a ratio is only asymptotically normal; at 60 inits per seed the plain estimator's z has a
small skew (mean ≈ −0.25), well inside the band; the slow test repeats with 2000 seeds of 200 inits.
"""
import math

import numpy as np
import pytest
import torch

import igbsym
from igbsym.errors import InputError
from validation.estimators import gamma_of_sim, gamma_rao_blackwell, paired_difference, rao_blackwell_units
from validation.simulate import NetSpec, simulate
from validation.stats import gamma_units, ratio_estimate

torch.set_num_threads(1)

P2 = math.erfc(2 / math.sqrt(2))
GAMMA_RELU = float(igbsym.get("igb.gamma").numpy(activation="relu", sigma_w=1.0, a=0.0))


def _runs(n_seeds, inits, d=8, n=16, data=32, base=0):
    torch.manual_seed(0)
    spec = NetSpec(d, (n,), activation="relu")
    return [simulate(spec, inits, data, seed=base + s, layer_stats=("act",), fresh_data=True)
            for s in range(n_seeds)]


@pytest.fixture(scope="module")
def runs():
    return _runs(300, 60)


def _rb_units(res, correct=True):
    st = res.layers[-1]["act"]
    return rao_blackwell_units(st.mean, st.var.sum(1), res.n_data if correct else 10**12)


def _pooled(runs, units):
    a, b = map(np.concatenate, zip(*[units(r) for r in runs]))
    return ratio_estimate(a, b)


def test_rao_blackwell_unbiased_for_the_same_gamma(runs):
    """Pooled over 300 × 60 i.i.d. inits (ratio bias O(1/18000)): both estimators hit igb.gamma(relu) within 5 SE."""
    plain = _pooled(runs, lambda r: gamma_units(r.mu, r.var, r.n_data))
    rb = _pooled(runs, _rb_units)
    for est in (plain, rb):
        assert abs(est.value - GAMMA_RELU) < 5 * est.se, (est, GAMMA_RELU)
    assert abs(plain.value - rb.value) < 5 * math.hypot(plain.se, rb.se)
    assert rb.se < plain.se / 5      # the variance it removes: the output layer's (measured ≈ 20× in SE)


def test_missing_one_over_d_correction_is_detected(runs):
    """Mutation: without the 1/D correction the RB numerator is biased by tr C/D; the same test must fail."""
    wrong = _pooled(runs, lambda r: _rb_units(r, correct=False))
    assert abs(wrong.value - GAMMA_RELU) > 5 * wrong.se


@pytest.mark.parametrize("estimator", ["plain", "rao-blackwell"])
def test_z_scores_calibrated(runs, estimator):
    z = np.array([(e.value - GAMMA_RELU) / e.se for e in (gamma_of_sim(r, estimator) for r in runs)])
    _assert_calibrated(z)


def test_paired_difference_calibrated(runs):
    """plain − RB on the same inits has true value 0; its paired delta-method z-scores are standard."""
    ests = [paired_difference(gamma_units(r.mu, r.var, r.n_data), _rb_units(r)) for r in runs]
    _assert_calibrated(np.array([e.value / e.se for e in ests]))


def _assert_calibrated(z):
    r = z.size
    k = int((np.abs(z) > 2).sum())
    band = 4 * math.sqrt(r * P2 * (1 - P2))
    assert abs(k - r * P2) <= band, f"{k}/{r} |z|>2, expected {r * P2:.1f} ± {band:.1f}"
    assert abs(z.mean()) < 0.5 and 0.8 < z.std() < 1.25, (z.mean(), z.std())


@pytest.mark.slow
@pytest.mark.parametrize("estimator", ["plain", "rao-blackwell"])
def test_z_scores_calibrated_thorough(estimator):
    runs = _runs(2000, 200, base=10_000)
    _assert_calibrated(np.array([(e.value - GAMMA_RELU) / e.se for e in (gamma_of_sim(r, estimator) for r in runs)]))


def test_known_value_and_bias_term():
    """Hand-computable case: h̄ = (1, 2), tr Ĉ = 4, D = 4, s² = 0.5, β² = 0.25 → a = 0.5·(5 − 1) + 0.25, b = 2."""
    a, b = rao_blackwell_units(np.array([[1.0, 2.0]] * 2), np.array([4.0, 4.0]), 4, 0.5, np.array([0.25, 0.25]))
    assert np.allclose(a, 2.25) and np.allclose(b, 2.0)
    est = gamma_rao_blackwell(np.array([[1.0, 2.0], [0.0, 1.0]]), np.array([4.0, 2.0]), 4)
    assert est.value == pytest.approx((4.0 + 0.5) / 6.0) and est.method.startswith("rao-blackwell")


def test_bad_inputs():
    for bad in (lambda: rao_blackwell_units(np.zeros(3), np.zeros(3), 10),
                lambda: rao_blackwell_units(np.zeros((3, 2)), np.zeros(2), 10),
                lambda: rao_blackwell_units(np.zeros((3, 2)), np.zeros(3), 1),
                lambda: rao_blackwell_units(np.zeros((3, 2)), np.zeros(3), 10, weight_var=0.0),
                lambda: gamma_of_sim(_runs(1, 4)[0], "median")):
        with pytest.raises(InputError):
            bad()
    res = simulate(NetSpec(4, (8,)), 4, 8, layer_stats=False)
    with pytest.raises(InputError, match="layer statistics"):
        gamma_of_sim(res)
