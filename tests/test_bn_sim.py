"""Simulation-vs-form property: BN + ReLU MLPs with drawn (B, width, depth) have, at every layer, the gamma of
torch's BatchNorm law (bn.gamma_canonical), not the proxy's; ReLU + BN has mu_c = 0 exactly."""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import igbsym
from igbsym.validation.simulate import NetSpec, simulate
from igbsym.validation.stats import gamma_estimate


def _examples(n_ci: int) -> int:
    """Examples scaled by the profile: n_ci under ci (25 examples), proportionally more under thorough."""
    return max(1, round(n_ci * settings().max_examples / 25))


@settings(max_examples=_examples(4))
@given(B=st.sampled_from([4, 6, 8, 12, 16]), width=st.integers(48, 96), depth=st.integers(2, 5),
       seed=st.integers(0, 2**16))
def test_bn_relu_gamma_per_layer(B, width, depth, seed):
    spec = NetSpec(32, (width,) * depth, activation="relu", norm="batchnorm", placement="pre", bn_batch=B,
                   sigma_w=math.sqrt(2))
    res = simulate(spec, 60, 64 * B, seed=seed, layer_stats=("pre",), fresh_data=True)
    pred = float(igbsym.get("bn.gamma_canonical").numpy(B=B))
    for layer in range(1, depth):  # pre-activations of layers 2..depth: gamma of the BN+ReLU layer before
        st_ = res.layers[layer]["pre"]
        est = gamma_estimate(st_.mean, st_.var, res.n_data)
        bias = (B - 1) / (res.n_data - 1) * (1 + pred)  # within-batch correlation (checks_bn.check_depth_gamma)
        assert abs(est.value - pred) <= 5 * est.se + bias, (layer, est, pred, seed)


@settings(max_examples=_examples(3))
@given(B=st.integers(2, 16), depth=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_relu_bn_output_means_are_zero(B, depth, seed):
    spec = NetSpec(16, (32,) * depth, activation="relu", norm="batchnorm", placement="post", bn_batch=B)
    res = simulate(spec, 8, 16 * B, seed=seed, dtype=torch.float64, layer_stats=False)
    assert np.abs(res.mu.numpy()).max() < 1e-12 * math.sqrt(res.var.numpy().max())
    assert igbsym.get("bn.gamma_relu_bn").numpy(B=B) == 0


def test_eval_mode_bn_does_not_normalise_at_init():
    """The condition of Thm E.2: eval-mode BN at init (running stats 0/1) is x/sqrt(1+eps), not a normalisation."""
    bn = torch.nn.BatchNorm1d(3).eval()
    x = torch.randn(10, 3) * 5 + 2
    assert torch.allclose(bn(x), x / math.sqrt(1 + bn.eps))
    with pytest.raises(ValueError):
        torch.nn.BatchNorm1d(3).train()(torch.randn(1, 3))  # B = 1 is not allowed in train mode
