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
from igbsym.ops.bn_kernel import REL_ERR, normalised_moments
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
    """One line each: several batches, pair sampling, BatchNorm after an activation, a smooth activation after it."""
    x = np.random.default_rng(3).standard_normal((10, 4))
    head = (O.Dense(8, 1.0, 0.0),)
    tail = (O.Act("relu"), O.Dense(2, 1.0, 0.0))
    with pytest.raises(InputError, match="across two batches"):
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
