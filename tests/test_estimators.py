"""Rao–Blackwellised γ̂ and 'gaussian-rb' (validation/estimators.py): unbiased for the same γ as the plain
estimator, calibrated SEs.

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
from igbsym.validation.estimators import (gamma_gaussian_rb, gamma_of_sim, gamma_rao_blackwell, gaussian_rb_units,
                                   gaussian_unit_moments, paired_difference, rao_blackwell_units)
from igbsym.validation.simulate import sample_weights
from igbsym.validation.simulate import NetSpec, simulate
from igbsym.validation.stats import gamma_units, ratio_estimate

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
    with pytest.raises(InputError, match="one hidden layer"):
        gamma_gaussian_rb(NetSpec(4, (8, 8)), 10)
    with pytest.raises(InputError, match="one hidden layer"):
        gamma_gaussian_rb(NetSpec(4, (8,), norm="layernorm"), 10)
    with pytest.raises(InputError, match="Gaussian data"):
        gamma_of_sim(simulate(NetSpec(4, (8,)), 4, 8, data_law="uniform"), "gaussian-rb")
    with pytest.raises(InputError, match="n_inits"):
        gamma_gaussian_rb(NetSpec(4, (8,)), 1)


# --------------------------------------------------------------------------------------------- gaussian-rb
def _quad_moments(f, sigma):
    """E f(σZ) and Var f(σZ) by 30-digit mpmath quadrature of the defining integral (the independent route)."""
    import mpmath
    with mpmath.workdps(30):
        dens = lambda z: mpmath.npdf(z)  # noqa: E731
        m1 = mpmath.quad(lambda z: f(sigma * z) * dens(z), [-mpmath.inf, -1, 0, 1, mpmath.inf])
        m2 = mpmath.quad(lambda z: f(sigma * z) ** 2 * dens(z), [-mpmath.inf, -1, 0, 1, mpmath.inf])
        return float(m1), float(m2 - m1 * m1)


@pytest.mark.parametrize("activation", ["relu", "leaky_relu", "identity", "srelu", "gelu", "sigmoid", "tanh"])
def test_unit_moments_against_quadrature(activation):
    import mpmath
    from igbsym import activations as acts
    act = NetSpec(4, (8,), activation=activation, a=0.2, srelu_shift=0.3).ops[1]
    k = 0.3 if activation == "srelu" else None
    f = lambda x: acts.get(activation).mp(x, mpmath.mpf("0.2"), k)  # noqa: E731
    if activation == "srelu":
        f = lambda x: max(x, 0) - mpmath.mpf("0.3")  # noqa: E731
    sig = np.array([0.3, 1.0, 2.7])
    mean, var = gaussian_unit_moments(act, sig)
    for s, m, v in zip(sig, mean, var):
        qm, qv = _quad_moments(f, mpmath.mpf(float(s)))
        assert m == pytest.approx(qm, rel=1e-10, abs=1e-14) and v == pytest.approx(qv, rel=1e-10)


def test_gaussian_rb_relu_exact_per_init():
    """Homogeneous φ: a_i/b_i is the same constant 1/(π − 1) = igb.gamma(relu) for every init, any d and width."""
    spec = NetSpec(5, (7,), activation="relu")
    a, b = gaussian_rb_units(spec, sample_weights(spec, range(20), 3, "cpu", torch.float64)[0])
    assert np.allclose(a / b, 1 / (math.pi - 1), rtol=1e-13, atol=0)
    est = gamma_gaussian_rb(spec, 20, seed=3)
    assert abs(est.value - GAMMA_RELU) <= 4 * est.se and est.se < 1e-9


def test_gaussian_rb_paired_with_plain(runs):
    """Same inits (the runs' weights), same estimand: plain − gaussian-rb has mean 0 (pooled paired z ≤ 5);
    ReLU's 'gaussian-rb' is exact, so this also checks the plain one against 1/(π − 1)."""
    units = [(gamma_units(r.mu, r.var, r.n_data),
              gaussian_rb_units(r.spec, sample_weights(r.spec, range(r.n_inits), r.seed, "cpu", torch.float64)[0]))
             for r in runs]
    pooled = [tuple(np.concatenate([u[k][j] for u in units]) for j in (0, 1)) for k in (0, 1)]
    d = paired_difference(*pooled)
    assert abs(d.value) < 5 * d.se, d


def _srelu_gamma_exact(d, k, sigma_w=math.sqrt(2)):
    """γ of Dense(d → n) → SReLU(shift k) → Dense on N(0, I_d) data, exactly at finite d. Unit j's pre-activation
    is N(0, r²) with r = σ_w √(χ²_d/d), so m = r/√(2π) − k, v = r²(1/2 − 1/(2π)) and γ = E[m²]/E[v] with the χ
    moments E r² = σ_w², E r = σ_w √(2/d) Γ((d+1)/2)/Γ(d/2)."""
    er = sigma_w * math.sqrt(2 / d) * math.exp(math.lgamma((d + 1) / 2) - math.lgamma(d / 2))
    num = sigma_w**2 / (2 * math.pi) - 2 * k * er / math.sqrt(2 * math.pi) + k * k
    return num / (sigma_w**2 * (0.5 - 1 / (2 * math.pi)))


def _srelu_gauss_z(n_seeds, inits, base):
    """SReLU with the default shift σ_w/√(2π): not homogeneous, so a_i/b_i varies with the column norms."""
    spec = NetSpec(6, (10,), activation="srelu")
    truth = _srelu_gamma_exact(6, math.sqrt(2) / math.sqrt(2 * math.pi))
    return np.array([(e.value - truth) / e.se for e in
                     (gamma_gaussian_rb(spec, inits, seed=base + s) for s in range(n_seeds))])


def test_gaussian_rb_calibrated():
    """z-scores of 'gaussian-rb' against the exact finite-d γ over 300 seeds of 60 inits are standard."""
    _assert_calibrated(_srelu_gauss_z(300, 60, 0))


def test_gaussian_rb_wrong_truth_detected():
    """Power: the d → ∞ value (r = σ_w exactly, so m = 0 and γ = 0 at this shift) misses the O(1/d) finite-d
    term, and the same calibration test rejects it."""
    z_wrong = np.array([e.value / e.se for e in (gamma_gaussian_rb(NetSpec(6, (10,), activation="srelu"), 60,
                                                                   seed=s) for s in range(100))])
    with pytest.raises(AssertionError):
        _assert_calibrated(z_wrong)


def test_gaussian_rb_paired_with_rao_blackwell_gelu():
    """GELU, the same inits: the data-based RB and 'gaussian-rb' agree (paired z ≤ 5, 500 i.i.d. inits)."""
    res = simulate(NetSpec(6, (10,), activation="gelu"), 500, 64, seed=7, layer_stats=("act",), fresh_data=True)
    st = res.layers[-1]["act"]
    d = paired_difference(rao_blackwell_units(st.mean, st.var.sum(1), res.n_data),
                          gaussian_rb_units(res.spec, sample_weights(res.spec, range(500), 7, "cpu",
                                                                     torch.float64)[0]))
    assert abs(d.value) < 5 * d.se, d
    assert gamma_of_sim(res, "gaussian-rb").se < gamma_of_sim(res, "rao-blackwell").se


@pytest.mark.slow
def test_gaussian_rb_calibrated_thorough():
    _assert_calibrated(_srelu_gauss_z(3000, 200, 10_000))
