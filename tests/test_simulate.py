"""The batched simulator equals torch.nn networks, its statistics equal direct computation, bad specs fail fast."""
import math

import numpy as np
import pytest
import torch
from hypothesis import example, given, strategies as st
from scipy import stats as sps

from igbsym.errors import InputError
from igbsym.validation.device import resolve_device
from igbsym.validation.simulate import (ACTIVATIONS, WEIGHT_LAWS, Blob, NetSpec, forward, sample_weights, sequential,
                                 simulate, stages)

torch.set_num_threads(1)


@st.composite
def specs(draw):
    norm = draw(st.sampled_from([None, "batchnorm", "layernorm", "rmsnorm"]))
    pool = draw(st.sampled_from([None, 1, 2, 3]))
    k = pool or 1
    widths = tuple(k * draw(st.integers(1, 6)) for _ in range(draw(st.integers(1, 3))))
    activation = draw(st.sampled_from(ACTIVATIONS))
    plain = norm is None and pool is None and activation != "srelu"     # where NetSpec takes biases
    return NetSpec(draw(st.integers(1, 7)), widths, activation=activation,
                   a=draw(st.floats(-0.9, 0.9)), weight_law=draw(st.sampled_from(sorted(WEIGHT_LAWS))),
                   sigma_w=draw(st.floats(0.3, 3.0)), pool=pool, norm=norm,
                   placement=draw(st.sampled_from(["pre", "post"])), bn_batch=draw(st.integers(2, 5)),
                   n_classes=draw(st.integers(2, 5)), sigma_b=draw(st.sampled_from([0.0, 0.7])) if plain else 0.0)


@given(specs(), st.integers(0, 2**31 - 1))
@example(NetSpec(3, (4, 4), norm="batchnorm", placement="post", bn_batch=2, pool=2), 0)
@example(NetSpec(5, (6, 2, 2), weight_law="rademacher", pool=2, norm="rmsnorm", placement="pre", sigma_w=1.0), 35)
def test_batched_forward_equals_torch_sequential(spec, seed):
    """Every init of the batched forward equals its own torch.nn.Sequential (real BN/LN/RMSNorm/MaxPool1d), except
    on rows where an RMSNorm input is an exact zero vector (see ``_rmsnorm_degenerate``): there the value is decided
    by rounding, and only those rows may differ."""
    b = spec.batch
    weights = sample_weights(spec, range(3), seed, "cpu", torch.float64)
    x = torch.from_numpy(np.random.default_rng(seed).standard_normal((4 * b, spec.d_in)))
    got = forward(spec, weights, x)
    degenerate = _rmsnorm_degenerate(spec, weights, x)
    for i in range(3):
        net = sequential(spec, weights, i)
        ref = torch.cat([net(x[j:j + b]) for j in range(0, x.shape[0], b)])
        keep = ~degenerate[i]
        torch.testing.assert_close(got[i][keep], ref[keep], rtol=1e-9, atol=1e-9)


def _rmsnorm_degenerate(spec, weights, x):
    """[I, N] rows where some RMSNorm input has mean square < 1e-20 (data and weights are O(1)).

    Found by Hypothesis (thorough profile): Rademacher weights ±s times tied max-pool outputs cancel exactly, so a
    layer's pre-activations are exactly 0. nn.Linear on one row (FMA: the exact product x·s minus the rounded one)
    returns ±1 ulp instead, and nn.RMSNorm divides by sqrt(ms + eps) with eps = machine epsilon, which maps 1e-17
    to 1e-9 and, one layer later, to O(1). Neither torch path is wrong in floating point; the exact value is 0."""
    bad = torch.zeros(weights[0].shape[0], x.shape[0], dtype=torch.bool)
    if (spec.args or {}).get("norm") != "rmsnorm":
        return bad
    prev = {}

    def hook(layer, stage, h):
        if stage == "norm" and "h" in prev:
            bad.logical_or_(prev["h"].square().mean(-1) < 1e-20)
        prev["h"] = h.clone()
    forward(spec, weights, x, on_stage=hook)
    return bad


def test_rmsnorm_degenerate_row_is_exactly_zero():
    """The pinned case: the batched forward returns the exact-arithmetic value 0 on the degenerate row."""
    spec = NetSpec(5, (6, 2, 2), weight_law="rademacher", pool=2, norm="rmsnorm", placement="pre", sigma_w=1.0)
    weights = sample_weights(spec, range(1), 35, "cpu", torch.float64)
    x = torch.from_numpy(np.random.default_rng(35).standard_normal((4, 5)))
    pre = []
    out = forward(spec, weights, x, on_stage=lambda l, s, h: pre.append(h[0, 0].clone()) if s == "pre" else 0)
    assert _rmsnorm_degenerate(spec, weights, x)[0, 0] and any(torch.equal(p, torch.zeros(2)) for p in pre[1:])
    assert torch.equal(out[0, 0], torch.zeros(2))


def test_statistics_equal_direct_computation_and_chunking_invariance():
    """Streaming stats (any chunk / init grouping) equal mean/var/argmax computed on the full outputs."""
    spec = NetSpec(5, (12, 8), activation="gelu", norm="batchnorm", placement="pre", bn_batch=4, pool=2,
                   n_classes=3)
    kw = dict(seed=11, dtype=torch.float64, moments=4, record=200)
    a = simulate(spec, 9, 200, chunk=8, init_chunk=2, **kw)
    b = simulate(spec, 9, 200, chunk=200, init_chunk=9, **kw)
    o = a.records["out"]
    torch.testing.assert_close(a.mu, o.mean(1), rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(a.var, o.var(1), rtol=1e-10, atol=1e-12)
    counts = torch.nn.functional.one_hot(o.argmax(-1), 3).double().mean(1)
    torch.testing.assert_close(a.frac, counts)
    torch.testing.assert_close(a.g0, counts[:, 0])
    for layer in range(2):
        for stage in stages(spec):
            h = a.records[layer, stage]
            st_ = a.layers[layer][stage]
            torch.testing.assert_close(st_.mean, h.mean(1), rtol=1e-9, atol=1e-12)
            torch.testing.assert_close(st_.var, h.var(1), rtol=1e-9, atol=1e-12)
            c = h - h.mean(1, keepdim=True)
            torch.testing.assert_close(st_.m4, (c**4).mean(1), rtol=1e-8, atol=1e-12)
            torch.testing.assert_close(st_.m3, (c**3).mean(1), rtol=1e-8, atol=1e-12)
            torch.testing.assert_close(st_.mean, b.layers[layer][stage].mean, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(a.mu, b.mu, rtol=1e-10, atol=1e-12)


def test_dataset_shared_and_given_tensor_accepted():
    """Default data is one seeded blob shared by all inits; a user tensor gives identical results."""
    spec = NetSpec(6, (10,), activation="tanh")
    x = Blob(6, "gaussian", seed=5).rows(0, 300).float()
    a = simulate(spec, 4, 300, seed=5, record=300)
    b = simulate(spec, 4, seed=5, data=x, record=300)
    torch.testing.assert_close(a.mu, b.mu)
    w = sample_weights(spec, range(4), 5, "cpu", torch.float32)
    torch.testing.assert_close(a.records["out"], forward(spec, w, x), rtol=1e-5, atol=1e-6)


def test_blob_blocks_and_laws():
    blob = Blob(3, "laplace", seed=2)
    whole = blob.rows(0, 9000)
    torch.testing.assert_close(torch.cat([Blob(3, "laplace", 2).rows(0, 4000), blob.rows(4000, 9000)]), whole)
    for law, kappa in (("gaussian", 3.0), ("uniform", 1.8), ("laplace", 6.0)):
        x = Blob(4, law, seed=1).rows(0, 40000).numpy().ravel()
        assert abs(x.var() - 1) < 5 * math.sqrt((kappa - 1) / x.size)
        assert abs(sps.kurtosis(x, fisher=False) - kappa) < 0.2


@pytest.mark.parametrize("law,kappa", sorted(WEIGHT_LAWS.items()))
def test_weight_laws_variance_and_kurtosis(law, kappa):
    spec = NetSpec(200, (300,), weight_law=law, sigma_w=1.7)
    w = sample_weights(spec, range(4), 3, "cpu", torch.float64)[0].numpy().ravel() * math.sqrt(200) / 1.7
    assert abs(np.mean(w**2) - 1) <= 5 * math.sqrt((kappa - 1) / w.size) + 1e-12
    assert abs(np.mean(w**4) / np.mean(w**2) ** 2 - kappa) < 0.05
    assert abs(w.mean()) < 5 / math.sqrt(w.size)


def test_init_weights_independent_of_grouping():
    spec = NetSpec(4, (5,))
    a = sample_weights(spec, range(6), 9, "cpu")
    b = sample_weights(spec, [4, 5], 9, "cpu")
    torch.testing.assert_close(a[0][4:], b[0])


def test_fresh_data_per_init_reproducible():
    spec = NetSpec(4, (8,), activation="identity")
    a = simulate(spec, 5, 64, seed=3, fresh_data=True, record=64)
    b = simulate(spec, 5, 64, seed=3, fresh_data=True, record=64, init_chunk=2)
    torch.testing.assert_close(a.records["out"], b.records["out"])
    assert not torch.allclose(a.records[0, "pre"][0], a.records[0, "pre"][1])


def test_gaussian_shortcut_equal_in_law():
    """shortcut='gaussian' (z·Lᵀ, L = chol(WᵀW)) vs the plain network with the same W: the first-layer node
    variances both estimate ‖w_j‖² (z-test with the χ² SE), and the per-init output laws agree (2-sample KS)."""
    spec = NetSpec(64, (32,), activation="relu")
    kw = dict(seed=4, dtype=torch.float64, layer_stats=("pre",), fresh_data=True)  # i.i.d. units
    plain = simulate(spec, 200, 2000, **kw)
    fast = simulate(spec, 200, 2000, shortcut="gaussian", **kw)
    norms2 = (sample_weights(spec, range(200), 4, "cpu", torch.float64)[0] ** 2).sum(1)
    for res in (plain, fast):
        ratio = (res.layers[0]["pre"].var / norms2).numpy().ravel()
        assert abs(ratio.mean() - 1) < 5 * ratio.std() / math.sqrt(ratio.size)
    zp, zf = ((r.mu / r.var.sqrt()).numpy().ravel() for r in (plain, fast))
    assert sps.ks_2samp(zp, zf).pvalue > 1e-4


@pytest.mark.parametrize("kwargs,msg", [
    (dict(d_in=4, widths=(-3,)), "widths"), (dict(d_in=0, widths=(3,)), "d_in"),
    (dict(d_in=4, widths=(3,), activation="swish"), "unknown activation"),
    (dict(d_in=4, widths=(4,), norm="batchnorm", bn_batch=1), "bn_batch"),
    (dict(d_in=4, widths=(4,), n_classes=1), "n_classes"), (dict(d_in=4, widths=(5,), pool=2), "divisible"),
    (dict(d_in=4, widths=(4,), weight_law="cauchy"), "weight_law"),
    (dict(d_in=4, widths=(4,), sigma_w=-1.0), "sigma_w"),
    (dict(d_in=4, widths=(4,), placement="middle"), "placement"), (dict(d_in=4, widths=(4,), norm="groupnorm"), "norm"),
])
def test_bad_specs_fail_fast(kwargs, msg):
    with pytest.raises(InputError, match=msg) as e:
        NetSpec(**kwargs)
    assert "\n" not in str(e.value)


def test_bad_runs_fail_fast():
    spec = NetSpec(4, (4,), norm="batchnorm", bn_batch=4)
    for kw, msg in ((dict(n_inits=0, n_data=8), "n_inits"), (dict(n_inits=2, n_data=10), "multiple of bn_batch"),
                    (dict(n_inits=2, n_data=8, record=9), "record"), (dict(n_inits=2, n_data=8, chunk=6), "chunk"),
                    (dict(n_inits=2, n_data=8, device="tpu"), "unknown device"),
                    (dict(n_inits=2, n_data=8, dtype=torch.float16), "dtype"),
                    (dict(n_inits=2, data=torch.zeros(8, 3)), "data must be")):
        with pytest.raises(InputError, match=msg):
            simulate(spec, **kw)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_unavailable_cuda_is_one_clear_line():
    with pytest.raises(InputError, match="not available"):
        resolve_device("cuda")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
def test_cuda_path_same_code_and_statistics():
    """The same simulate() on CUDA: statistics agree with the CPU run of the same spec within SEs."""
    spec = NetSpec(32, (128,), activation="relu")
    gpu = simulate(spec, 400, 500, seed=1, device="cuda", fresh_data=True)
    assert gpu.device.startswith("cuda")
    from igbsym.validation.stats import gamma_of
    import igbsym
    est = gamma_of(gpu)
    assert abs(est.value - igbsym.get("igb.gamma").numpy(activation="relu")) < 5 * est.se
    x = Blob(32, seed=1).rows(0, 64)
    w = sample_weights(spec, range(2), 1, "cuda", torch.float64)
    cpu_w = [t.cpu() for t in w]
    torch.testing.assert_close(forward(spec, w, x.cuda()).cpu(), forward(spec, cpu_w, x))


def test_first_init_reproduces_the_inits_of_one_large_run():
    """Init i is seeded by (seed, i) alone: a range starting at first_init equals that slice of a larger run."""
    spec = NetSpec(d_in=8, widths=(16, 12))
    whole = simulate(spec, 10, n_data=64, seed=3, layer_stats=False)
    part = simulate(spec, 6, n_data=64, seed=3, layer_stats=False, first_init=4, init_chunk=4)
    assert torch.equal(whole.mu[4:], part.mu) and torch.equal(whole.var[4:], part.var)
    assert torch.equal(whole.frac[4:], part.frac)


def test_penultimate_layer_stats_only():
    """layer_stats='penultimate' records exactly the last hidden stage of a full run, and nothing else."""
    spec = NetSpec(6, (8, 8), activation="relu")
    full = simulate(spec, 5, 40, seed=2, layer_stats=True)
    last = simulate(spec, 5, 40, seed=2, layer_stats="penultimate")
    assert last.layers[0] == {} and set(last.layers[1]) == {"act"}
    assert torch.equal(last.layers[1]["act"].mean, full.layers[1]["act"].mean)
    assert torch.equal(last.layers[1]["act"].var, full.layers[1]["act"].var)
    with pytest.raises(InputError, match="penultimate"):
        simulate(spec, 2, 8, layer_stats="act")


def test_biases_are_drawn_normal_with_their_sd_and_shift_every_layer():
    """sigma_b > 0: every Linear's bias is N(0, sigma_b²) (mean within 5 SE, variance within 5 SE of sigma_b²: each
    false-failure rate < 1e-6), the readout's included; the forward equals torch.nn.Linear with that bias (the
    Hypothesis test above draws biased specs too) and differs from the bias-free net by the bias."""
    spec = NetSpec(4, (50, 30), "tanh", sigma_b=0.7)
    w = sample_weights(spec, range(200), 2, "cpu", torch.float64)
    assert [tuple(t.shape[1:]) for t in w] == [(5, 50), (51, 30), (31, 2)]
    b = torch.cat([t[:, -1].ravel() for t in w]).numpy()
    n = b.size
    assert abs(b.mean()) <= 5 * 0.7 / math.sqrt(n)
    assert abs(b.var(ddof=1) - 0.49) <= 5 * 0.49 * math.sqrt(2 / (n - 1))
    x = torch.randn(6, 4, dtype=torch.float64)
    free = [t[:, :-1] for t in w]
    no_bias = forward(NetSpec(4, (50, 30), "tanh"), free, x)
    h = torch.tanh(torch.tanh(x @ free[0] + w[0][:, -1:]) @ free[1] + w[1][:, -1:])
    torch.testing.assert_close(forward(spec, w, x), h @ free[2] + w[2][:, -1:], rtol=1e-12, atol=1e-12)
    assert not torch.allclose(forward(spec, w, x), no_bias)


def test_rao_blackwell_integrates_the_readout_bias():
    """With a N(0, sigma_b²) readout bias the Rao–Blackwellised γ̂ adds E b² = sigma_b² to the centre spread: on one
    run it agrees with the plain estimator within 5 of the plain SE (an upper bound on the SD of their difference, the
    Rao–Blackwellised one being its conditional expectation; false-failure rate < 1e-6), where dropping the bias
    term is 30 SE off (measured at seeds 4-6)."""
    from igbsym.validation.estimators import gamma_of_sim
    res = simulate(NetSpec(16, (16,), "relu", sigma_b=1.0, n_classes=8), 2000, 64, seed=4, dtype=torch.float64,
                   fresh_data=True)
    plain, rb = gamma_of_sim(res, "plain"), gamma_of_sim(res)
    assert abs(rb.value - plain.value) <= 5 * plain.se
    assert rb.se < plain.se / 2


def test_biased_simulation_is_its_forward_and_the_shortcut_keeps_the_bias():
    """sigma_b > 0 through simulate's own first-layer paths: the shared-data GEMM gives forward's outputs on the same
    data, and shortcut='gaussian' draws x W + b: the first-layer data means minus the biases, over their SE
    √(v/D), have mean square 1 within 5 of its SE √(2/n) (false-failure rate < 1e-6; without the bias it is ~2000)."""
    spec = NetSpec(6, (5, 4), "gelu", sigma_b=0.7, n_classes=3)
    res = simulate(spec, 4, 40, seed=3, dtype=torch.float64, record=40)
    x = Blob(6, "gaussian", 3).rows(0, 40).double()
    ref = forward(spec, sample_weights(spec, range(4), 3, "cpu", torch.float64), x)
    torch.testing.assert_close(res.records["out"], ref, rtol=1e-10, atol=1e-12)
    spec = NetSpec(64, (8,), "relu", sigma_b=3.0)
    fast = simulate(spec, 50, 400, seed=5, dtype=torch.float64, layer_stats=("pre",), shortcut="gaussian")
    bias = sample_weights(spec, range(50), 5, "cpu", torch.float64)[0][:, -1]
    st_ = fast.layers[0]["pre"]
    z2 = (((st_.mean - bias) ** 2) / (st_.var / 400)).numpy().ravel()
    assert abs(z2.mean() - 1) <= 5 * math.sqrt(2 / z2.size)
