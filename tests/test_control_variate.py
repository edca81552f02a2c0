"""The finite-width control variates (validation/control_variate.py): exact zero means, unbiased and calibrated γ̂.

Independent routes: the CVs' zero means are checked by Monte Carlo over many inits at a width (N = 8) where a wrong
conditional expectation (a missing σ_w², a wrong kernel map, a lost 1/N) moves the mean by O(1) relative; γ̂_cv is
checked against the Rao–Blackwellised estimator on ``simulate`` (its own forward and statistics) over independent
inits. False-failure rates: z-tests at |z| < 5 (5.7e-7 each, ≤ 2e-5 for all columns together); calibration: the
count of |z| > 2 among R seeds is Binomial(R, 0.0455), band ±4 binomial SDs (6e-5), as tests/test_estimators.py.
"""
import math

import numpy as np
import pytest
import torch

import igbsym
from igbsym.errors import InputError
from igbsym.validation import control_variate as cv
from igbsym.validation.estimators import gamma_of_sim
from igbsym.validation.simulate import NetSpec, simulate

torch.set_num_threads(1)
P2 = math.erfc(2 / math.sqrt(2))
GAMMA_RELU = float(igbsym.get("igb.gamma").numpy(activation="relu", sigma_w=1.0, a=0.0))


def _zero_mean(X, z_max=5.0):
    m, se = X.mean(0), X.std(0, ddof=1) / math.sqrt(len(X))
    z = m / se
    assert np.all(np.abs(z) < z_max), (m, se, z)
    return z


@pytest.mark.parametrize("activation, d_in, widths, inits", [
    ("relu", 8, (8, 8, 8), 6000),        # layer 1 by the shortcut (conditioned on W₁), then the arc-cosine map
    ("relu", 4, (8, 8), 6000),           # layer 1 from the data kernel σ_w² x xᵀ/d (N_1 > d_in: no shortcut)
    ("gelu", 32, (32, 32), 600),        # quadrature kernel map on the subset of points and pairs
])
def test_control_variates_have_exact_zero_mean(activation, d_in, widths, inits):
    spec = NetSpec(d_in, widths, activation=activation)
    _, _, X = cv.units_and_cvs(spec, range(inits), 8)
    assert X.shape == (inits, 6 * len(widths) - 4)
    _zero_mean(X)


def test_a_wrong_conditional_expectation_is_caught(monkeypatch):
    """The zero-mean test can fail: a kernel map with the wrong gain (K·1.05) moves the mean of D_2 by > 5 SE."""
    spec = NetSpec(8, (8, 8), activation="relu")
    real = cv._cond
    monkeypatch.setattr(cv, "_cond", lambda act, K, idx: real(act, 1.05 * K, idx))
    _, _, X = cv.units_and_cvs(spec, range(6000), 8)
    with pytest.raises(AssertionError):
        _zero_mean(X)


def _assert_calibrated(z):
    k2 = int((np.abs(z) > 2).sum())
    band = 4 * math.sqrt(z.size * P2 * (1 - P2))
    assert abs(k2 - z.size * P2) <= band, (k2, z.size * P2, band)
    assert abs(z.mean()) < 0.5 and 0.75 < z.std() < 1.3, (z.mean(), z.std())


def _reps(spec, reps=120, inits=100, n_data=16):
    """β from one independent 300-init pilot, then ``reps`` estimates on disjoint blocks of ``inits`` inits."""
    pa, pb, pX = cv.units_and_cvs(spec, range(10**6, 10**6 + 300), n_data)
    beta = cv.fit(pa, pb, pX)
    a, b, X = cv.units_and_cvs(spec, range(reps * inits), n_data)
    blocks = [slice(k * inits, (k + 1) * inits) for k in range(reps)]
    ests = [cv.gamma_cv(a[s], b[s], X[s], beta) for s in blocks]
    cross = [cv.gamma_cv_crossfit(a[s], b[s], X[s], folds=2) for s in blocks]
    return ests, cv.gamma_cv(a, b, X, beta), cv.explained(a, b, X, beta), cross


@pytest.mark.parametrize("d_in", [16, 8])
def test_cv_exact_case_one_layer(d_in):
    """One hidden ReLU layer: γ_1(N) = igb.gamma(relu) EXACTLY at every width and input dimension (a_1 = 0,
    tests/test_width.py). 120 seeds × 100 inits: z against the exact value calibrated (β from an independent
    pilot, and cross-fitted in 2 folds); pooled within 5 SE.
    d_in = 16: the shortcut (layer 1 conditioned on W₁); d_in = 8 < N: layer 1 conditioned on the data."""
    ests, pooled, r2, cross = _reps(NetSpec(d_in, (16,), activation="relu"))
    for e_ in (ests, cross):
        _assert_calibrated(np.array([(e.value - GAMMA_RELU) / e.se for e in e_]))
    assert abs(pooled.value - GAMMA_RELU) < 5 * pooled.se, (pooled, GAMMA_RELU)
    assert r2 > 0.5         # measured 0.99 (shortcut), 0.76 (data)


def test_cv_unbiased_and_calibrated_deep():
    """ReLU, d = N = 16, L = 3 (no exact value): calibration of the SE from the spread of 120 independent
    estimates (z of each against the mean of the other 119, both SEs in quadrature; β from the pilot and
    cross-fitted in 2 folds of 50 inits), and no bias: pooled γ̂_cv
    (12 000 inits) against simulate + Rao–Blackwell on 40 000 OTHER inits (another seed), within 5 SE."""
    spec = NetSpec(16, (16, 16, 16), activation="relu")
    ests, pooled, r2, cross = _reps(spec)
    for e_ in (ests, cross):
        v = np.array([e.value for e in e_])
        se = np.array([e.se for e in e_])
        rest = (v.sum() - v) / (v.size - 1)
        rest_se = np.sqrt((np.sum(se**2) - se**2)) / (v.size - 1)
        _assert_calibrated((v - rest) / np.hypot(se, rest_se))
    res = simulate(spec, 40_000, 16, seed=7, shortcut="gaussian", fresh_data=True, layer_stats="penultimate",
                   dtype=torch.float64)
    ref = gamma_of_sim(res, "rao-blackwell")
    assert abs(pooled.value - ref.value) < 5 * math.hypot(pooled.se, ref.se), (pooled, ref)
    assert r2 > 0.5         # measured ≈ 0.9


def test_one_call_estimator_and_bad_inputs():
    spec = NetSpec(8, (8, 8), activation="relu")
    est, r2 = cv.gamma_control_variate(spec, 64, 8, n_pilot=64)
    assert est.method.startswith("control-variate") and est.n == 64 and est.se > 0 and -1 < r2 <= 1
    with pytest.raises(InputError, match="Dense"):
        cv.units_and_cvs(NetSpec(8, (8,), norm="layernorm", placement="post"), range(4), 8)
    with pytest.raises(InputError, match="Gaussian weights"):
        cv.units_and_cvs(NetSpec(8, (8,), weight_law="uniform"), range(4), 8)
    with pytest.raises(InputError, match="n_data"):
        cv.units_and_cvs(spec, range(4), 1)
    a, b, X = cv.units_and_cvs(spec, range(6), 8)
    with pytest.raises(InputError, match="pilot"):
        cv.fit(a, b, X)
    with pytest.raises(InputError, match="folds"):
        cv.gamma_cv_crossfit(a, b, X, folds=1)
    with pytest.raises(InputError, match="X must be"):
        cv.gamma_cv(a, b, X[:, :1], np.zeros(X.shape[1]))
