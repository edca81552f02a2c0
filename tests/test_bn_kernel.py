"""Train-mode BatchNorm's dataset-kernel map (igbsym/ops/bn_kernel.py, igbsym/ops/norms.py, issue 46). Expected
values from independent routes: the bn family's canonical law (SymPy/mpmath, the i.i.d.-data limit), exact
identities of BatchNorm outputs, and seeded Monte Carlo of torch's BatchNorm1d on Gaussian units with its SE.
Statistical tolerances z <= 5 (false-failure rate 5.7e-7 per assertion)."""
import numpy as np
import pytest
import torch

import igbsym
from igbsym import ops as O
from igbsym.errors import InputError
from igbsym.nngp.walk import walk
from igbsym.ops import bn_kernel
from igbsym.ops.bn_kernel import CROSS_ERR, REL_ERR, cross_moments, normalised_moments
from igbsym.ops.datakernel import input_kernel

Z = 5.0


@pytest.mark.parametrize("B", [2, 3, 7, 32])
def test_iid_limit_is_the_bn_family(B):
    """K = I (i.i.d. data at d → ∞): E relu(y) and Var relu(y) are bn.relu_mean_canonical / relu_var_canonical
    (torch's BatchNorm1d law), evaluated by mpmath at 30 digits; tolerance the map's stated REL_ERR."""
    second, mean = normalised_moments(np.eye(B), 0.0)
    m = float(igbsym.get("bn.relu_mean_canonical").mp(dps=30, B=B))
    v = float(igbsym.get("bn.relu_var_canonical").mp(dps=30, B=B))
    scale = second.diagonal().max()
    assert np.abs(mean - m).max() <= REL_ERR * np.sqrt(scale)
    assert np.abs(second.diagonal() - mean**2 - v).max() <= 3 * REL_ERR * scale


def test_identity_outputs_sum_rules():
    """Σ_a y_a² = n and Σ_b y_b = 0 for every draw: the kernel's trace is n and its rows sum to 0 (exact)."""
    rng = np.random.default_rng(1)
    A = rng.standard_normal((12, 30))
    K = A @ A.T / 30 + 0.3
    second, _ = normalised_moments(K, 1.0)
    assert abs(np.trace(second) - 12) <= 12 * REL_ERR
    assert np.abs(second.sum(1)).max() <= 12 * REL_ERR
    assert np.allclose(second, second.T, rtol=0, atol=1e-14)


def _torch_bn_units(x, n_units, sigma_w, seed, slope):
    """ψ(BatchNorm1d(x W)) per unit for Gaussian W: the first layer's units are exactly N(0, K) at any width."""
    g = torch.Generator().manual_seed(seed)
    X = torch.tensor(x)
    W = torch.randn(x.shape[1], n_units, generator=g, dtype=torch.float64) * sigma_w / np.sqrt(x.shape[1])
    y = torch.nn.BatchNorm1d(n_units, affine=False, track_running_stats=False, eps=1e-12, dtype=torch.float64)(X @ W)
    return (torch.relu(y) - slope * torch.relu(-y)).numpy()         # [D, units]


@pytest.mark.parametrize("slope", [0.0, 0.2, 1.0])
def test_against_torch_batchnorm(slope):
    """E[ψ(y_a)ψ(y_b)] and E ψ(y_a) against 40000 torch units, each entry within Z SEs; the map with torch's
    unbiased variance instead (a mutation: the kernel × (n − 1)/n) is caught on the diagonal."""
    rng = np.random.default_rng(2)
    D = 24
    x = rng.standard_normal((D, 6)) + 0.7 * rng.standard_normal((1, 6))
    ops = (O.Dense(64, 1.3, 0.0), O.BatchNorm(), O.Act("leaky_relu", slope) if 0 < slope < 1 else
           O.Act("relu" if slope == 0 else "identity"))
    s = input_kernel(x, np.arange(D), np.arange(D), True, whole=True)
    for op in ops:
        s = op.kernel(s)
    pred, pred_m = s.k[..., 0, 0], np.broadcast_to(s.ma[:, 0, 0], (D,))
    u = _torch_bn_units(x, 40000, 1.3, 0, slope)
    prod = u[:, None, :] * u[None, :, :]
    est, se = prod.mean(-1), prod.std(-1, ddof=1) / np.sqrt(u.shape[1])
    assert np.abs((est - pred) / se).max() <= Z
    m, mse = u.mean(-1), u.std(-1, ddof=1) / np.sqrt(u.shape[1])
    if slope < 1:
        assert np.abs((m - pred_m) / mse).max() <= Z
    mutated = pred * (D - 1) / D
    assert np.abs((est - mutated) / se).diagonal().max() > Z


def test_walk_refuses_what_it_cannot_map():
    """One line each: too costly cross blocks, pair sampling, BatchNorm after an activation, a smooth activation after
    it, a last batch of one point."""
    x = np.random.default_rng(3).standard_normal((10, 4))
    head = (O.Dense(8, 1.0, 0.0),)
    tail = (O.Act("relu"), O.Dense(2, 1.0, 0.0))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bn_kernel, "MAX_CROSS_WORK", 1e4)
        with pytest.raises(InputError, match="3 batch pairs need"):
            walk(head + (O.BatchNorm(4),) + tail, x)
    with pytest.raises(InputError, match="no pair sampling"):
        walk(head + (O.BatchNorm(),) + tail, x, pairs=20)
    with pytest.raises(InputError, match="not Gaussian"):
        walk(head + (O.Act("relu"), O.BatchNorm()) + tail, x)
    with pytest.raises(InputError, match="tanh after a train-mode BatchNorm"):
        walk(head + (O.BatchNorm(), O.Act("tanh"), O.Dense(2, 1.0, 0.0)), x)
    with pytest.raises(InputError, match="last batch of one point"):
        walk(head + (O.BatchNorm(3),) + tail, x)


def test_translate_batchnorm1d():
    """Training mode → BatchNorm over the probe's batch; eval mode at init → 1/√(1 + ε); a moved affine refused."""
    from validation.translate import leaf
    bn = torch.nn.BatchNorm1d(5)
    assert leaf(bn, "bn", None, 100) == O.BatchNorm(100)
    assert leaf(bn, "bn", None) == O.BatchNorm(256)
    assert leaf(bn.eval(), "bn", None) == O.Scale(1 / np.sqrt(1 + bn.eps))
    with torch.no_grad():
        bn.weight.fill_(2.0)
    with pytest.raises(InputError, match="affine part"):
        leaf(bn.train(), "bn", None)


def _random_kernel(rng, n, d, shift=0.3):
    A = rng.standard_normal((n, d))
    return A @ A.T / d + shift, A


def _mc_cross(A, shift, n1, slope, draws, seed):
    """Monte Carlo of ψ(y1_a)ψ(y2_b) over h = A g/√d + √shift·z (kernel A Aᵀ/d + shift): (mean, SE) [n1, n2]."""
    rng = np.random.default_rng(seed)
    tot, tot2, m = 0.0, 0.0, 0
    for _ in range(draws // 250_000):
        h = rng.standard_normal((250_000, A.shape[1])) @ A.T / np.sqrt(A.shape[1])
        h += np.sqrt(shift) * rng.standard_normal((250_000, 1))
        ys = []
        for x in (h[:, :n1], h[:, n1:]):
            x = x - x.mean(1, keepdims=True)
            y = np.sqrt(x.shape[1]) * x / np.linalg.norm(x, axis=1, keepdims=True)
            ys.append(np.maximum(y, 0) - slope * np.maximum(-y, 0))
        p = ys[0][:, :, None] * ys[1][:, None, :]
        tot, tot2, m = tot + p.sum(0), tot2 + (p * p).sum(0), m + len(p)
    mean = tot / m
    return mean, np.sqrt((tot2 / m - mean**2) / m)


@pytest.mark.parametrize("n1, n2, d, slope", [(3, 4, 10, 0.0), (5, 3, 2, 0.3), (4, 5, 6, 1.0)])
def test_cross_batches_against_monte_carlo(n1, n2, d, slope):
    """(i) Entries across two batches against 2e6 draws of the normalised Gaussian vectors (independent of the
    integral representation), each within Z SEs; the map without the cross term (E ψ(y1_a) E ψ(y2_b)) is caught."""
    rng = np.random.default_rng(10 + n1 + d)
    K, A = _random_kernel(rng, n1 + n2, d)
    pred = cross_moments(K[:n1, :n1], K[:n1, n1:], K[n1:, n1:], slope, 1.0)
    est, se = _mc_cross(A, 0.3, n1, slope, 2_000_000, n1 + d)
    assert np.abs((est - pred) / se).max() <= Z
    m1, m2 = normalised_moments(K[:n1, :n1], slope)[1], normalised_moments(K[n1:, n1:], slope)[1]
    assert np.abs((est - np.outer(m1, m2)) / se).max() > Z


@pytest.mark.parametrize("n, slope", [(3, 0.0), (5, 0.2), (30, 1.0)])
def test_identical_batches_are_the_batch_map(n, slope):
    """(ii) h1 = h2 (the joint kernel [[K, K], [K, K]]): the cross block is the one-batch map (exact identity),
    within the stated CROSS_ERR."""
    K, _ = _random_kernel(np.random.default_rng(n), n, 7)
    second, _ = normalised_moments(K, slope)
    scale = second.diagonal().max()
    assert np.abs(cross_moments(K, K, K, slope, scale) - second).max() <= CROSS_ERR * scale


@pytest.mark.parametrize("n1, n2, slope", [(3, 4, 0.0), (6, 2, 0.5)])
def test_independent_batches_factorise(n1, n2, slope):
    """(iii) K12 = 0: the two normalised vectors are independent, E ψ(y1_a)ψ(y2_b) = E ψ(y1_a) E ψ(y2_b) (exact)."""
    rng = np.random.default_rng(n1 * n2)
    K1, _ = _random_kernel(rng, n1, 5)
    K2, _ = _random_kernel(rng, n2, 5)
    (s1, m1), (s2, m2) = normalised_moments(K1, slope), normalised_moments(K2, slope)
    scale = np.sqrt(s1.diagonal().max() * s2.diagonal().max())
    out = cross_moments(K1, np.zeros((n1, n2)), K2, slope, scale)
    assert np.abs(out - np.outer(m1, m2)).max() <= CROSS_ERR * scale


def _torch_two_layers(x, width, n_init, B, seed):
    """relu(BN(W2 relu(BN(W1 x)))) per unit, [D, n_init · width], torch BatchNorm1d over batches of B rows."""
    g = torch.Generator().manual_seed(seed)
    X = torch.tensor(x).expand(n_init, *x.shape)
    bn = torch.nn.BatchNorm1d(width, affine=False, track_running_stats=False, eps=1e-12, dtype=torch.float64)

    def norm(h):                                      # [n_init, D, width] over consecutive batches of B rows
        return torch.cat([torch.stack([bn(hi[i:i + B]) for hi in h]) for i in range(0, h.shape[1], B)], 1)
    h = X
    for fan_in in (x.shape[1], width):
        W = torch.randn(n_init, fan_in, width, generator=g, dtype=torch.float64) * np.sqrt(2.0 / fan_in)
        h = torch.relu(norm(h @ W))
    return h.permute(1, 0, 2).reshape(x.shape[0], -1).numpy()


def test_batches_against_torch_two_widths():
    """(iv) Dense → BatchNorm(B) → ReLU twice on 12 points in batches of 5 (5, 5, 2): the layer kernel over 2^17
    torch units at widths 512 and 2048 within Z SEs (the finite-width bias O(1/N) is below the SE); the map without
    the cross blocks (products of the batch means there) is caught."""
    rng = np.random.default_rng(7)
    D, B = 12, 5
    x = rng.standard_normal((D, 6)) + 0.5 * rng.standard_normal((1, 6))
    ops = (O.Dense(64, np.sqrt(2), 0.0), O.BatchNorm(B), O.Act("relu")) * 2
    s = input_kernel(x, np.arange(D), np.arange(D), True, whole=True)
    for op in ops:
        s = op.kernel(s)
    pred, mean = s.k[..., 0, 0], s.ma[:, 0, 0]
    same = np.arange(D)[:, None] // B == np.arange(D)[None, :] // B
    mutated = np.where(same, pred, np.outer(mean, mean))
    for width in (512, 2048):
        u = _torch_two_layers(x, width, 2**17 // width, B, width)
        prod = u[:, None, :] * u[None, :, :]
        est = prod.mean(-1)
        se = np.maximum(prod.std(-1, ddof=1) / np.sqrt(u.shape[1]), 1e-15)   # 0 in the 2-point batch: y = ±1
        assert np.abs((est - pred) / se).max() <= Z
        assert np.abs((est - mutated) / se).max() > Z
