"""Finite width (issue 28): width.coefficient / width.gamma and igbsym.engine.finite.

Independent routes: (1) brute-force Monte Carlo of the networks themselves in NumPy (Gaussian weights and data,
every pair of data points of a network), γ(N) at two widths, the 1/N coefficient by Richardson extrapolation
â = (N_b² Δ_b − N_s² Δ_s)/(N_b − N_s), Δ = γ̂(N) − γ_∞, with its delta-method SE; tolerance 4.5 SE (two-sided
normal false-failure rate 7e-6 per assertion) plus the neglected O(1/N³) term c/(N_s N_b), bounded by the
geometric model's 2|a|³/(γ_∞² N_s N_b); (2) the one-unit covariance against sampled Gaussian pairs; (3) the exact
cases: a_1 = 0 for one (leaky) ReLU layer, ReLU + LayerNorm γ_1 = 1/(2N(π − 1)), odd φ 0. Fixed seeds.
"""
import math

import numpy as np
import pytest

import igbsym
from igbsym import activations as acts
from igbsym import ops as O
from igbsym.engine import finite
from igbsym.errors import InputError
from igbsym.families import depth as D
from igbsym.families import width as W

Z = 4.5


def _mc_gamma(act, L, N, nets, seed, points=16, chunk=4000):
    """γ̂(N) = ΣX/ΣY over simulated networks (X: mean over pairs a != b of G_ab, Y: mean of G_aa − X) and its SE."""
    rng = np.random.default_rng(seed)
    f = acts.get(act).numpy
    xs, ys = [], []
    for start in range(0, nets, chunk):
        b = min(chunk, nets - start)
        h = rng.standard_normal((b, points, N))                       # data x ~ N(0, I_N), d_in = N
        for _ in range(L):
            w = rng.standard_normal((b, N, N)) * math.sqrt(2.0 / N)
            h = f(h @ w, 0.01, 0.0)
        g = h @ h.transpose(0, 2, 1) / N                              # [b, P, P] empirical kernel
        diag = np.trace(g, axis1=1, axis2=2) / points
        off = (g.sum((1, 2)) - diag * points) / (points * (points - 1))
        xs.append(off)
        ys.append(diag - off)
    x, y = np.concatenate(xs), np.concatenate(ys)
    g = x.mean() / y.mean()
    se = np.sqrt(np.var(x - g * y, ddof=1) / len(x)) / y.mean()
    return g, se


@pytest.mark.parametrize("act,nets", [("relu", 60000), ("gelu", 60000)])
def test_coefficient_matches_monte_carlo_of_the_networks(act, nets):
    L, ns, nb = 2, 16, 32
    g_inf = float(igbsym.get("depth.gamma").numpy(L=L, activation=act))
    a = float(igbsym.get("width.coefficient").numpy(L=L, activation=act))
    (gs, ses), (gb, seb) = _mc_gamma(act, L, ns, nets, 1), _mc_gamma(act, L, nb, nets, 2)
    est = (nb * nb * (gb - g_inf) - ns * ns * (gs - g_inf)) / (nb - ns)
    se = math.hypot(nb * nb * seb, ns * ns * ses) / (nb - ns)
    bias = 2 * abs(a) ** 3 / (g_inf**2 * ns * nb)
    assert abs(est - a) <= Z * se + bias, f"{act}: a = {a:.4f}, Monte Carlo {est:.4f} +- {se:.4f} (bias {bias:.3g})"
    assert se < 0.1 * abs(a), "the test must resolve a to 10 %"


def test_unit_covariance_matches_sampled_pairs():
    k, p = 1.7, 0.6
    act = O.Act("gelu")
    C = finite.unit_cov(act, k, p)
    rng = np.random.default_rng(3)
    u = rng.multivariate_normal([0, 0], [[k, p], [p, k]], size=400000)
    f = acts.get("gelu").numpy
    fa, fb = f(u[:, 0], 0.01, 0.0), f(u[:, 1], 0.01, 0.0)
    t = np.stack([fa * fa, fb * fb, fa * fb, fa, fb])
    emp = np.cov(t)
    se = np.sqrt((np.var((t - t.mean(1, keepdims=True))[:, None] * (t - t.mean(1, keepdims=True))[None], axis=-1))
                 / u.shape[0])
    assert np.all(np.abs(C - emp) <= Z * se + 1e-12)


def test_one_relu_layer_is_exact_at_every_width():
    for act in ("relu", "leaky_relu", "identity"):
        assert igbsym.get("width.coefficient").numpy(L=1, activation=act) == 0.0
    ops = D.block("relu", "none", "post", 0.01, 1.0)
    raw = finite.layer_series((O.Dense(None, 1.0),), ops, 1)[0][1]
    assert abs(raw) < 1e-7, raw                     # the recursion itself (the form returns the exact 0)
    assert igbsym.get("width.gamma").numpy(L=1, N=3, activation="relu") == pytest.approx(1 / (math.pi - 1), 1e-14)


def test_layernorm_after_relu_has_the_derived_coefficient():
    got = igbsym.get("width.coefficient").numpy(L=1, activation="relu", norm="layernorm", placement="post")
    assert got == pytest.approx(1 / (2 * (math.pi - 1)), rel=1e-6)


def test_odd_activations_stay_at_zero_at_every_width():
    for act in ("tanh", "erf"):
        for norm in ("none", "layernorm", "rmsnorm"):
            kw = {} if norm == "none" else {"norm": norm, "placement": "post"}
            assert igbsym.get("width.gamma").numpy(L=3, N=8, activation=act, **kw) == 0.0
    gs, se = _mc_gamma("tanh", 2, 8, 20000, 4)
    assert abs(gs) <= Z * se                          # simulated tanh nets: consistent with 0


def test_infinite_width_part_is_depth_gamma_and_uneven_widths_are_linear():
    ops = D.block("gelu", "none", "post", 0.01, math.sqrt(2))
    head = (O.Dense(None, math.sqrt(2)),)
    s = finite.layer_series(head, ops, 4)
    for l, (g, _) in enumerate(s, 1):
        assert g == pytest.approx(float(igbsym.get("depth.gamma").numpy(L=l, activation="gelu")), rel=1e-9)
    a = lambda r_in, r: finite.layer_series(head, ops, 4, r_in, r)[-1][1]
    assert a(0.0, [1] * 4) + a(1.0, [0] * 4) == pytest.approx(a(1.0, [1] * 4), rel=1e-8)
    assert a(2.0, [1] * 4) - a(1.0, [1] * 4) == pytest.approx(a(1.0, [0] * 4), rel=1e-8)


def test_validity_condition_and_remainder():
    holds, rem = finite.validity(5.039, -107.2, 128)
    assert holds and rem == pytest.approx(2 * (107.2 / 128) ** 2 / 5.039)
    assert not finite.validity(1.6, -80.0, 64)[0]     # GELU L = 8: |a|/N = 1.25 > gamma/2
    assert finite.validity(0.0, 0.23, 64)[0] and not finite.validity(0.0, 0.23, 4)[0]


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "64"])
def test_bad_width_is_one_line(bad):
    with pytest.raises(InputError) as exc:
        W.check_width(bad, "predict --width")
    assert "\n" not in str(exc.value) and "integer width >= 1" in str(exc.value)
    if not isinstance(bad, (str, bool)):        # the registry's integer Param takes True as 1
        with pytest.raises(InputError) as exc:
            igbsym.get("width.gamma").numpy(L=2, N=bad, activation="relu")
        assert "\n" not in str(exc.value)


def test_refused_ops_say_what_is_covered():
    ops = D.block("relu", "layernorm", "pre", 0.01, 1.0)
    with pytest.raises(InputError, match="no finite-width map"):
        finite.layer_series((O.Dense(None, 1.0),), ops, 2)


def test_predict_width_prints_both_predictions():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "igbsym", "predict", "--depth", "8", "--width", "128"],
                         capture_output=True, text=True, check=True).stdout
    row = [ln.split() for ln in out.splitlines() if ln.strip().startswith("8 ") and ln.endswith("series")]
    assert row and float(row[0][1]) == pytest.approx(5.03924, rel=1e-5) and float(row[0][2]) == pytest.approx(
        5.03924 - 107.2149 / 128, rel=1e-5)
    chain = float(row[0][6])                # the exact chain beside it, within 5 SE + the series' remainder
    assert abs(chain - float(row[0][2])) <= 5 * float(row[0][8]) + float(row[0][5])
    bad = subprocess.run([sys.executable, "-m", "igbsym", "predict", "--width", "0"], capture_output=True, text=True)
    assert bad.returncode != 0 and len(bad.stderr.strip().splitlines()) == 1 and "integer width >= 1" in bad.stderr
    bad = subprocess.run([sys.executable, "-m", "igbsym", "predict", "--width", "16", "--rel-se", "2"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "--rel-se" in bad.stderr
    bn = subprocess.run([sys.executable, "-m", "igbsym", "predict", "--norm", "batchnorm", "--batch-size", "8",
                         "--width", "64", "--json"], capture_output=True, text=True, check=True).stdout
    rows = __import__("json").loads(bn)["finite_width"]["layers"]
    assert rows[0]["route"] == "exact chain" and rows[0]["gamma_series"] is None and rows[0]["chain_se"] > 0


def test_sweep_judges_against_the_finite_width_prediction():
    from igbsym.validation.sweep import finite_prediction
    cfg = dict(weight_law="normal", data_law="gaussian", srelu_shift=None, pool=None, norm="none", placement="post",
               activation="relu", a=0.01, sigma_w=math.sqrt(2), d_in=128, widths=[128] * 8,
               n_classes=2, n_data=256)
    rows = finite_prediction(cfg, 0.01)         # the exact chain, against the series where it holds (its remainder)
    g, a = W.series(8, "relu", "none", 0.01, math.sqrt(2))[-1]
    holds, rem = W.finite.validity(g, a, 128)
    assert holds and len(rows) == 8 and abs(rows[-1][0] - (g + a / 128)) <= 5 * rows[-1][1] + rem
    assert finite_prediction(dict(cfg, weight_law="uniform")) is None
    bn = finite_prediction(dict(cfg, norm="batchnorm", placement="pre", bn_batch=8, n_data=64, widths=[128] * 2),
                           0.05)
    assert len(bn) == 2 and all(se > 0 for _, se in bn)
    gelu = finite_prediction(dict(cfg, activation="gelu", d_in=32, widths=[32] * 8), 0.05)
    assert gelu[-1][1] <= 0.05 * gelu[-1][0] + 1e-12   # GELU L = 8 at N = 32, outside the series: answered


def test_sweep_chain_target_is_a_third_of_the_points_se_even_where_gamma_is_tiny():
    """LayerNorm after φ (γ_∞ = 0, γ_N ≈ a/N ≈ 0.008 at N = 64): the judged column's chain must reach an absolute SE
    below the point's own; a relative target of a γ within 2 SE of 0 stopped at the pilot, SE 0.004 (issue 47)."""
    from igbsym.validation.stats import Estimate

    def _est(v, se):
        return Estimate(v, se, v - 2 * se, v + 2 * se, "delta", 100)
    from igbsym.validation.sweep import chain_target, finite_prediction
    assert chain_target(_est(0.0078, 3e-4)) == pytest.approx(1e-4, rel=1e-12)
    assert chain_target(_est(2.0, 1e-4)) == pytest.approx(2e-3, rel=1e-12)      # CHAIN_REL_MIN × |γ̂|
    assert chain_target(_est(0.0, 0.0)) is None
    cfg = dict(weight_law="normal", data_law="gaussian", srelu_shift=None, pool=None, norm="layernorm",
               placement="post", activation="relu", a=0.01, sigma_w=math.sqrt(2), d_in=64, widths=[64] * 2,
               n_classes=2, n_data=256)
    rows = finite_prediction(cfg, abs_se=3e-4)
    g, a = W.series(2, "relu", "layernorm", 0.01, math.sqrt(2))[-1]
    holds, rem = W.finite.validity(g, a, 64)
    assert g == 0 and holds and rows[-1][1] <= 3e-4
    assert abs(rows[-1][0] - (g + a / 64)) <= 5 * rows[-1][1] + rem


def test_residual_net_at_finite_width_matches_torch():
    """x + phi(W x) ReLU blocks (alpha = 1, d_in = N = 64): the finite-width value against torch ResNets
    (validation/moments.measure: shared dataset, SE over inits), tolerance 4.5 SE + the derived remainder; the
    infinite-width value is resnet.gamma and is off by many SE at block 4."""
    import torch
    from igbsym.spec import Spec, resnet_ops
    from igbsym.validation.moments import measure
    torch.set_num_threads(1)
    L, N = 4, 64
    pairs = W.resnet_series(L, "relu", 1.0)
    for l, (g, _) in enumerate(pairs, 1):
        assert g == pytest.approx(float(igbsym.get("resnet.gamma").numpy(L=l, activation="relu", alpha=1.0)), rel=1e-12)
    m = measure(Spec(N, resnet_ops(L, "relu", 1.0, width=N)), 300, 256, seed=69)
    for l in (2, 4):
        est = m[l].gamma(256)
        g, a = pairs[l - 1]
        holds, rem = finite.validity(g, a, N)
        assert holds and abs(est.value - (g + a / N)) <= Z * est.se + rem, (l, est.value, est.se, g + a / N)
    assert abs(m[4].gamma(256).value - pairs[3][0]) > 5 * m[4].gamma(256).se     # the N = inf value fails there


def test_resnet_gamma_form():
    """width.resnet_gamma is γ_∞ + a_L/N of resnet_series (the torch comparison is the test above and the check
    width_resnet); γ_∞ is resnet.gamma; the mpmath route (the refined discretisation) agrees to the stated 1e-6;
    α = 0 and odd φ are 0 at every width; N must be an integer >= 1 and L <= 8 (one line each)."""
    f = igbsym.get("width.resnet_gamma")
    g, a = W.resnet_series(3, "relu", 0.7)[-1]
    assert float(f.numpy(L=3, N=48, activation="relu", alpha=0.7)) == pytest.approx(g + a / 48, rel=1e-14)
    assert g == pytest.approx(float(igbsym.get("resnet.gamma").numpy(L=3, activation="relu", alpha=0.7)), rel=1e-12)
    assert a < 0
    v = f.numpy(L=2, N=np.array([32, 64]), activation="gelu", alpha=0.5)
    ref = float(f.mp(20, L=2, N=64, activation="gelu", alpha=0.5))
    assert abs(v[1] / ref - 1) < 1e-6 and v[0] < v[1]
    assert float(f.numpy(L=2, N=5, activation="relu", alpha=0.0)) == 0.0
    assert float(f.numpy(L=2, N=5, activation="tanh", alpha=1.0)) == 0.0
    for bad in (dict(N=0), dict(N=2.5), dict(L=9)):
        with pytest.raises(InputError):
            f.numpy(**dict(dict(L=2, N=8, activation="relu", alpha=1.0), **bad))


def test_depth_and_resnet_gamma_take_the_width():
    """depth.gamma(N=…) and resnet.gamma(N=…) (issue 28): N = inf (the default) is today's value bit for bit;
    a finite N is width.gamma / width.resnet_gamma (delegated through the registry), on NumPy and mpmath; a finite
    N where the finite-width route has no map (BatchNorm, a norm before φ, linear-last blocks, L > 32) is refused
    in one line by numpy and by check()."""
    dg, wg = igbsym.get("depth.gamma"), igbsym.get("width.gamma")
    assert float(dg.numpy(L=8, activation="relu", N=float("inf"))) == float(dg.numpy(L=8, activation="relu"))
    assert float(dg.numpy(L=8, activation="relu", N=128)) == float(wg.numpy(L=8, N=128, activation="relu"))
    ln = dict(norm="layernorm", placement="post")
    assert float(dg.numpy(L=2, activation="gelu", N=64, **ln)) == float(wg.numpy(L=2, N=64, activation="gelu", **ln))
    assert float(dg.mp(20, L=3, activation="gelu", N=64)) == pytest.approx(
        float(wg.mp(20, L=3, N=64, activation="gelu")), rel=1e-12)
    rg, wr = igbsym.get("resnet.gamma"), igbsym.get("width.resnet_gamma")
    assert float(rg.numpy(L=4, activation="relu", alpha=1.0, N=64)) == float(
        wr.numpy(L=4, N=64, activation="relu", alpha=1.0))
    assert float(rg.numpy(L=4, activation="relu", alpha=1.0)) == pytest.approx(3.0418700489955, rel=1e-12)
    for form, kw in ((dg, dict(L=2, activation="relu", norm="batchnorm")),
                     (dg, dict(L=2, activation="relu", norm="layernorm", placement="pre")),
                     (dg, dict(L=40, activation="relu")),
                     (rg, dict(L=2, activation="relu", alpha=1.0, order="linear-last")),
                     (rg, dict(L=2, activation="relu", alpha=1.0, norm="layernorm")),
                     (rg, dict(L=9, activation="relu", alpha=1.0))):
        for call in (form.numpy, form.check):
            with pytest.raises(InputError, match="N"):
                call(N=64, **kw)
