"""MaxPool2d's dataset-kernel map (igbsym/ops/maxpool.py, issue 46): every expected value from an independent route
(the maxpool family's i.i.d. law, seeded Monte Carlo with its SE, torch layer averages in nngp.maxpool_vs_torch).
Statistical tolerances z <= 5 (false-failure rate 5.7e-7 per assertion)."""
import numpy as np
import pytest

import igbsym
from igbsym.errors import InputError
from igbsym.nngp.theory import theory
from igbsym.ops import Act, Conv2d, Dense, Flatten, Kernel
from igbsym.ops.datakernel import input_kernel
from igbsym.ops.maxpool import MaxPool2d, separable_max, windows

Z = 5.0


def _kernel(C, P, hw):
    """The Gaussian kernel block of one pair from its joint covariance C [2P, 2P]."""
    blk = lambda x: x[None, None]  # noqa: E731
    zero = np.zeros((1, 1, 1))
    return Kernel(blk(C[:P, P:]), blk(C[:P, :P]), blk(C[P:, P:]), zero, zero, hw, False, True)


def _replicas(op, s, R=8):
    outs = [op.replica(r).kernel(s) for r in range(R)]
    return [(np.mean([getattr(o, f) for o in outs], 0), np.std([getattr(o, f) for o in outs], 0, ddof=1) / np.sqrt(R))
            for f in ("k", "ka", "kb", "ma", "mb")]


@pytest.mark.parametrize("act", ["identity", "relu"])
def test_iid_units_reproduce_the_maxpool_family(act):
    """ka = σ² I, independent points: per window of 9 units the pooled mean, second moment and cross moment are
    maxpool.mean, maxpool.var + mean² and mean² (the max of 9 i.i.d. units; relu: max of relu = relu of max)."""
    P, sig2 = 36, 2.0
    C = np.zeros((2 * P, 2 * P))
    C[np.arange(2 * P), np.arange(2 * P)] = sig2
    s = _kernel(C, P, (6, 6))
    if act == "relu":
        s = Act("relu").kernel(s)
    (k, kse), (ka, kase), _, (ma, mase), _ = _replicas(MaxPool2d(3, draws=512), s)
    mean = float(igbsym.get("maxpool.mean").numpy(k=9, sigma=np.sqrt(sig2), activation=act))
    var = float(igbsym.get("maxpool.var").numpy(k=9, sigma=np.sqrt(sig2), activation=act))
    assert np.all(np.abs(ma - mean) <= Z * mase + 1e-12)
    d = np.diagonal(ka[0, 0])
    assert np.all(np.abs(d - (var + mean**2)) <= Z * np.diagonal(kase[0, 0]))
    assert np.all(np.abs(k - mean**2) <= Z * kse)


def _mc_pooled(C, P, pool, phi, n=400_000, seed=1):
    """Brute-force Monte Carlo of (E g_a g_bᵀ, its SE, E g_a) with numpy's generator (independent of Sobol)."""
    L = np.linalg.cholesky(C + 1e-12 * np.eye(2 * P))
    F = phi(L @ np.random.default_rng(seed).standard_normal((2 * P, n)))
    ga, gb = pool(F[None, :P])[0], pool(F[None, P:])[0]
    prod = ga[:, None] * gb[None]
    return prod.mean(-1), prod.std(-1) / np.sqrt(n), ga.mean(-1), ga.std(-1) / np.sqrt(n)


def _random_cov(P, seed=0, corr=0.6):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((P, 3 * P))
    Y = corr * X + np.sqrt(1 - corr**2) * rng.standard_normal((P, 3 * P))
    F = np.concatenate([X, Y])
    return F @ F.T / (3 * P)


def test_two_unit_windows_are_exact():
    """1×6 image, MaxPool2d(2, 2, 1): windows {0}, {1, 2}, {3, 4}, {5} of Gaussian units: the closed form
    (max of two Gaussians) against brute-force Monte Carlo."""
    P = 6
    C = _random_cov(P)
    out = MaxPool2d(2, 2, 1).kernel(_kernel(C, P, (1, 6)))
    pool = lambda f: np.stack([f[:, 0], np.maximum(f[:, 1], f[:, 2]), np.maximum(f[:, 3], f[:, 4]), f[:, 5]], 1)  # noqa
    ref, se, m, mse = _mc_pooled(C, P, pool, lambda x: x)
    assert np.all(np.abs(out.k[0, 0] - ref) <= Z * se)
    assert np.all(np.abs(out.ma[0, 0] - m) <= Z * mse + 1e-12)
    # the same pair with the same seed twice: a closed form, no sampling
    assert np.array_equal(out.k, MaxPool2d(2, 2, 1, seed=5).kernel(_kernel(C, P, (1, 6))).k)


@pytest.mark.parametrize("act,k,stride,pad", [("relu", 3, 1, 1), ("relu", 2, 2, 0), ("identity", 3, 2, 1),
                                              ("tanh", 2, 1, 0)])
def test_sampled_route_against_monte_carlo(act, k, stride, pad):
    """The QMC route (mean over 8 seeds, SE from their spread) against brute-force Monte Carlo on a correlated
    4×4 pair, φ applied before the max (tanh: not monotone-free of the route: φ then max)."""
    P, hw = 16, (4, 4)
    C = _random_cov(P, seed=3)
    s = _kernel(C, P, hw)
    if act != "identity":
        s = Act(act).kernel(s)
    (kk, kse), (ka, kase), _, (ma, mase), _ = _replicas(MaxPool2d(k, stride, pad, draws=1024), s)
    phi = {"relu": lambda x: np.maximum(x, 0), "identity": lambda x: x, "tanh": np.tanh}[act]
    ref, se, m, mse = _mc_pooled(C, P, separable_max(hw, k, stride, pad), phi)
    assert np.all(np.abs(kk[0, 0] - ref) <= Z * np.hypot(se, kse[0, 0]))
    assert np.all(np.abs(ma[0, 0] - m) <= Z * np.hypot(mse, mase[0, 0]))


def test_windows_follow_torch_padding():
    """Torch pads a max-pool with −inf: the windows are clipped to the image (checked against nn.MaxPool2d)."""
    torch = pytest.importorskip("torch")
    x = torch.randn(1, 1, 5, 7, dtype=torch.float64)
    for k, st, pad in ((3, 1, 1), (2, 2, 0), (3, 2, 1), (2, 2, 1)):
        ref = torch.nn.MaxPool2d(k, st, pad)(x).flatten().numpy()
        got = x.flatten().numpy()[windows(5, 7, k, st, pad)].max(1)
        assert np.array_equal(got, ref)
        got2 = separable_max((5, 7), k, st, pad)(x.flatten().numpy()[None, :, None])[0, :, 0]
        assert np.array_equal(got2, ref)


def test_refusals_in_one_line():
    x = np.random.default_rng(0).standard_normal((3, 1, 4, 4))
    s = input_kernel(x, np.arange(3), np.arange(3), False)
    with pytest.raises(InputError, match="neither Gaussian"):
        MaxPool2d(2).kernel(s)
    for kw, match in ((dict(k=0), "k must be"), (dict(k=2, padding=2), "padding must"), (dict(draws=1000), "power")):
        with pytest.raises(InputError, match=match):
            MaxPool2d(**kw)


def test_walk_through_a_maxpool_cnn_is_stable():
    """theory() through conv → relu → max-pool (twice) on 6 digits-like images: finite γ, independent seeds agree
    within their spread (the replicate SE of γ_∞)."""
    x = np.random.default_rng(0).standard_normal((6, 1, 8, 8))
    g = []
    for r in range(4):
        ops = (Conv2d(8, 3, 1, 1), Act("relu"), MaxPool2d(3, 1, 1, 256).replica(r), Conv2d(8, 3, 1, 1), Act("relu"),
               MaxPool2d(2, 2, 0, 256).replica(r), Flatten(), Dense(2))
        g.append(theory(ops, x, with_law=False).gamma)
    assert np.all(np.isfinite(g)) and np.std(g) < 0.2 * np.mean(g)


def test_mutated_maxpool_fails_the_torch_comparison(monkeypatch):
    """nngp.maxpool_vs_torch passes; the map × 1.25 and the map without its mean term (centred) fail it."""
    torch = pytest.importorskip("torch")
    from igbsym.validation import checks, checks_nngp
    torch.set_num_threads(1)
    ctx = checks.Context(mode="quick", seed=0)
    orig = MaxPool2d.kernel

    def scaled(self, s):
        o = orig(self, s)
        return o.replace(k=1.25 * o.k, ka=1.25 * o.ka, kb=1.25 * o.kb)

    def centred(self, s):
        o = orig(self, s)
        outer = lambda m1, m2: m1[..., :, None] * m2[..., None, :]  # noqa: E731
        return o.replace(k=o.k - outer(o.ma, o.mb), ka=o.ka - outer(o.ma, o.ma), kb=o.kb - outer(o.mb, o.mb))
    with checks.reuse_simulations():
        assert all(r.passed for r in checks_nngp.maxpool_comparisons(ctx))
        for fn in (scaled, centred):
            with monkeypatch.context() as m:
                m.setattr(MaxPool2d, "kernel", fn)
                assert not all(r.passed for r in checks_nngp.maxpool_comparisons(ctx)), fn.__name__


def _cnn(draws, r):
    return (Conv2d(8, 3, 1, 1), Act("relu"), MaxPool2d(3, 1, 1, draws).replica(r), Conv2d(8, 3, 1, 1), Act("relu"),
            MaxPool2d(2, 2, 0, draws).replica(r), Flatten(), Dense(2))


def test_own_diagonal_of_the_pairs_is_the_exact_diagonal_with_two_points():
    """walk(pairs, own_diag=True) takes T from each sampled pair's own points: with D = 2 every pair holds both
    points, so T equals the full walk's T to rounding (no QMC op: a deterministic map)."""
    from igbsym.nngp.walk import walk
    x = np.random.default_rng(1).standard_normal((2, 1, 8, 8))
    ops = (Conv2d(4, 3, 1, 1), Act("relu"), Conv2d(4, 3, 1, 1), Act("relu"), Flatten(), Dense(2))
    full, own = walk(ops, x), walk(ops, x, pairs=8, own_diag=True)
    for f, o in zip(full.summaries, own.summaries):
        np.testing.assert_allclose(o.T, f.T, rtol=1e-12)
        np.testing.assert_allclose(o.mbar, f.mbar, rtol=1e-12, atol=1e-300)


def test_sampled_pairs_state_the_qmc_error_of_a_maxpool_cnn():
    """theory(pairs=...) of a max-pool CNN: 16 replicas of independent point sets (1024 points each) against every
    pair walked with 4 independent 4096-point sets (the reference's SE from their spread), z <= 5 with both SEs.
    One point set for all pairs had an SE of the pair sampling alone, though its own error does not shrink with the
    pairs (CNN-A on digits: spread 0.6 across point sets at a stated 0.68; module nngp.theory)."""
    from igbsym.nngp.theory import REPLICAS
    x = np.random.default_rng(2).standard_normal((8, 1, 8, 8))
    ref = [theory(_cnn(4096, 100 + r), x, with_law=False).gamma for r in range(4)]
    ref_g, ref_se = np.mean(ref), np.std(ref, ddof=1) / 2
    res = theory(_cnn(1024, 0), x, pairs=REPLICAS * 24, with_law=False)
    assert res.gamma_se > 0 and "replicas" in " ".join(res.notes)
    assert abs(res.gamma - ref_g) <= Z * np.hypot(res.gamma_se, ref_se), (res.gamma, res.gamma_se, ref_g, ref_se)
    with pytest.raises(InputError, match="too few"):
        theory(_cnn(1024, 0), x, pairs=REPLICAS, with_law=False)
