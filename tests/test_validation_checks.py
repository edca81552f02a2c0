"""Foundation checks (rectified, leaky, activation, igb): full coverage, quick checks pass, and Hypothesis-drawn
architectures agree with the closed forms within z ≤ 5 standard errors."""
import math

import pytest
import torch
from hypothesis import given, strategies as st

import igbsym
from igbsym.validation import checks_igb, checks_rectified
from igbsym.validation.checks import Context, all_checks, coverage
from igbsym.validation.simulate import ACTIVATIONS, NetSpec, simulate
from igbsym.validation.stats import gamma_of

torch.set_num_threads(1)
FOUNDATION = ("rectified", "leaky", "activation", "igb")


def test_every_foundation_form_has_a_check():
    cov = [c for c in coverage() if c["name"].split(".")[0] in FOUNDATION]
    assert len(cov) == sum(len(igbsym.forms(f)) for f in FOUNDATION)
    assert [c["name"] for c in cov if c["check"] is None] == []
    names = {c.name for c in all_checks()}
    assert {"igb.gamma_single_layer", "igb.g0_law", "rectified.relu_gaussian", "leaky.symmetric_inputs"} <= names


def _assert_all_pass(results):
    assert results, "a check returned no results"
    bad = [r.explain() for r in results if not r.passed]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("fn", [checks_rectified.check_rectified, checks_rectified.check_scaled,
                                checks_rectified.check_leaky_moments, checks_rectified.check_activation,
                                checks_rectified.check_leaky_layer, checks_igb.check_corr])
def test_quick_foundation_checks_pass(fn):
    _assert_all_pass(fn(Context(mode="quick", seed=0)))


def test_quick_gamma_and_g0_checks_pass(tmp_path):
    ctx = Context(mode="quick", seed=0, report_dir=tmp_path)
    for fn in (checks_igb.check_gamma, checks_igb.check_gamma_sweep, checks_igb.check_g0_law):
        _assert_all_pass(fn(ctx))
    assert {p.split("/")[-1] for p, _ in ctx.figures} >= {"gamma_vs_width.png", "g0_hist_panels.png"}


def test_lemma_f1_claim_is_rejected_by_simulation():
    """The paper's E[ReLU(αX)] = α E[ReLU(X)] is far outside the SE for α < 0 (the registered form passes)."""
    res = checks_rectified.check_scaled(Context(mode="quick", seed=1))
    neg = [r for r in res if r.form == "rectified.scaled_mean" and "alpha=-" in r.label]
    assert neg and all(float(r.note.split("z=")[1]) > 100 for r in neg)


def test_finite_d_gamma_srelu_matches_quadrature_and_vanishes():
    """Closed-form srelu γ_d equals the quadrature route and behaves like 1/(2d(π−1))."""
    import numpy as np
    from scipy import stats as sps
    for d in (16, 256):
        s = np.sqrt(sps.chi2.ppf((np.arange(20000) + 0.5) / 20000, d) / d)
        quad = np.mean((s - 1) ** 2) / (np.mean(s**2) * (math.pi - 1))
        assert abs(checks_igb.gamma_finite_d("srelu", d) / quad - 1) < 2e-3
        assert abs(checks_igb.gamma_finite_d("srelu", d) * 2 * d * (math.pi - 1) - 1) < 2 / d
    assert checks_igb.gamma_finite_d("relu", 8) == checks_igb.gamma_inf("relu")


@given(st.sampled_from(ACTIVATIONS), st.floats(0.4, 2.5), st.floats(-0.6, 0.6), st.integers(2, 40),
       st.integers(0, 10_000))
def test_property_layer_moments(act, sigma_w, a, d, seed):
    """Random activation / gain / slope / input dim: first-layer node moments of a torch MLP with Rademacher
    weights (pre-activations exactly N(0, σ_w²)) match activation.mean / activation.var within 5 SE."""
    spec = NetSpec(d, (32,), activation=act, a=a, weight_law="rademacher", sigma_w=sigma_w)
    st_ = simulate(spec, 60, 400, seed=seed, layer_stats=("act",), fresh_data=True).layers[0]["act"]
    for what, est in (("mean", st_.mean), ("var", st_.var)):
        unit = est.mean(1)
        pred = float(igbsym.get(f"activation.{what}").numpy(activation=act, sigma=sigma_w, a=a))
        se = float(unit.std() / math.sqrt(unit.numel()))
        assert abs(float(unit.mean()) - pred) <= 5 * se + 1e-12, (act, what, pred, float(unit.mean()), se, seed)


@given(st.sampled_from(["relu", "leaky_relu", "identity", "tanh"]), st.sampled_from(["normal", "uniform",
       "rademacher"]), st.integers(4, 48), st.integers(8, 96), st.floats(0.5, 2.0), st.integers(0, 10_000))
def test_property_gamma_exact_at_any_width(act, law, d, n, sigma_w, seed):
    """γ̂ of a random single-hidden-layer net agrees with igb.gamma within 5 SE (no finite-size bias for these
    activations: E[μ²]/E[Var_χ] is exact at any width, see checks_igb)."""
    spec = NetSpec(d, (n,), activation=act, a=0.2, weight_law=law, sigma_w=sigma_w)
    res = simulate(spec, 250, 200, seed=seed, layer_stats=False, fresh_data=True)
    est = gamma_of(res)
    pred = float(igbsym.get("igb.gamma").numpy(activation=act, sigma_w=sigma_w, a=0.2))
    assert abs(est.value - pred) <= 5 * est.se, (act, law, d, n, pred, str(est), seed)


@pytest.mark.slow
def test_thorough_gamma_checks_pass():
    _assert_all_pass(checks_igb.check_gamma(Context(mode="thorough", seed=0)))


def test_thorough_depth_checks_reach_width_1024_and_depth_20():
    """Issue 11 §3: the thorough depth checks run the 1024-wide, 20-deep nets (sized by their SE, not dropped)."""
    from igbsym.validation.checks_depth import plan
    widths, inits, n_data, depth = plan(Context(mode="thorough"))
    assert max(widths) == 1024 and depth == 20 and all(inits[w] >= 48 for w in widths) and n_data >= 128
