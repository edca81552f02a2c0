"""Issue 47: the exact chain (validation/chain.py) against independent routes.

- torch networks with real weight matrices (``validation.simulate``, fresh data per init, Rao–Blackwellised γ̂;
  residual nets by ``validation.moments.measure``, the readout's units averaged):
  the same γ_N within z <= 5 of the two SEs combined (two-sided normal false-failure rate 5.7e-7 per point; seeds
  fixed), where the 1/N series fails (ReLU L = 8, N = 16), with biases (the readout's adds σ_b²/σ_w² to the
  off-diagonal: dropping it is 50 SE off), for norms before φ, BatchNorm with its within-batch pairs,
  residual blocks in both orders, RMSNorm after an odd φ, uneven widths;
- exact facts: one hidden ReLU layer has γ_N = 1/(π − 1) at every width (a_1 = 0, and the ratio (Eφ)²/Var φ does not
  depend on ‖w‖); odd φ gives γ_N = 0 (symmetric data) — both within 5 SE;
- the 1/N series where it holds: |γ̂ − (γ_∞ + a_L/N)| <= 5 SE + its remainder allowance;
- the sampled Dense: the Gram of Dense.chain(h) has the mean σ_w² h hᵀ/n + σ_b² and the variance of h W + b for a
  real W (Wishart: Var G_ab = σ⁴ (G_aa G_bb + G_ab²)/(n² n') per output unit average).
"""
import math

import pytest
import torch

from igbsym import InputError, NumericalError
from igbsym import ops as O
from igbsym.families import width as W
from igbsym.spec import NetSpec, Spec, resnet_ops
from igbsym.validation.chain import chain_gamma
from igbsym.validation.estimators import gamma_of_sim
from igbsym.validation.moments import measure
from igbsym.validation.simulate import simulate

Z = 5.0


def _z(a, b):
    return (a.value - b.value) / math.hypot(a.se, b.se)


CASES = {
    "relu L8 N16 (outside the series)": (NetSpec(16, (16,) * 8), None),
    "gelu LN-pre L3": (NetSpec(16, (16,) * 3, activation="gelu", norm="layernorm", placement="pre"), None),
    "relu BN(8) L2, D = 64": (NetSpec(16, (16,) * 2, norm="batchnorm", bn_batch=8), 64),
    "silu uneven widths": (NetSpec(12, (24, 8, 16), activation="silu"), None),
    "tanh with biases L2 (the readout's bias)": (NetSpec(16, (16,) * 2, activation="tanh", sigma_w=1.5, sigma_b=0.3),
                                                  None),
    "resnet linear-first": (Spec(16, resnet_ops(3, "relu", 0.7, width=16)), None),
    "resnet linear-last LN": (Spec(16, resnet_ops(2, "gelu", 1.0, "layernorm", "pre", "linear-last", width=16)),
                              None),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_chain_is_the_torch_network(name):
    spec, n_data = CASES[name]
    chain = chain_gamma(spec, 20000, seed=1, n_data=n_data).gamma
    if any(op.children for op in spec.ops):      # residual nets: validation.moments (the simulator is for MLPs)
        sim = measure(spec, 1500, 64, seed=3)[-1].gamma(64)
    else:
        sim = gamma_of_sim(simulate(spec, 1500, n_data=n_data or 64, seed=3, fresh_data=True))
    assert abs(_z(chain, sim)) <= Z, (name, chain, sim)


def test_exact_values_at_every_width():
    for N in (2, 5, 40):
        est = chain_gamma(NetSpec(N, (N,)), 20000, seed=N).gamma
        assert abs(est.value - 1 / (math.pi - 1)) <= Z * est.se, (N, est)
    odd = chain_gamma(NetSpec(8, (8,) * 3, activation="tanh", norm="layernorm", placement="pre"), 8000).gamma
    assert abs(odd.value) <= Z * odd.se and odd.se > 0


@pytest.mark.parametrize("act,L,N", [("relu", 3, 512), ("gelu", 2, 256), ("tanh", 2, 64)])
def test_agrees_with_the_series_where_it_holds(act, L, N):
    pred = float(W.gamma_width(L, N, act))
    g_inf, a_L = W.series(L, act, "none", 0.01, math.sqrt(2))[-1]
    holds, rem = W.finite.validity(g_inf, a_L, N)
    assert holds
    est = chain_gamma(NetSpec(N, (N,) * L, activation=act), 6000, seed=2).gamma
    assert abs(est.value - pred) <= Z * est.se + rem, (est, pred, rem)
    # and the chain resolves the 1/N term itself where it is large against its SE (ReLU L = 3, N = 512: a/N ≈ 0.02)
    if act == "relu":
        assert abs(est.value - g_inf) > Z * est.se


def test_the_sampled_dense_has_the_law_of_a_real_weight_matrix():
    torch.manual_seed(0)
    n, n_out, reps = 6, 40, 40000
    h = torch.randn(1, 3, n, dtype=torch.float64).expand(reps, 3, n).contiguous()
    op = O.Dense(n_out, 1.3, 0.4)
    gen = torch.Generator().manual_seed(1)
    out = op.chain(h, gen)
    real = h @ (torch.randn(reps, n, n_out, generator=gen, dtype=torch.float64) * 1.3 / math.sqrt(n)) \
        + 0.4 * torch.randn(reps, 1, n_out, generator=gen, dtype=torch.float64)
    for y in (out, real):
        g = y @ y.transpose(1, 2) / n_out
        target = 1.69 * h[0] @ h[0].T / n + 0.16
        mean, se = g.mean(0), g.std(0) / math.sqrt(reps)
        assert torch.all((mean - target).abs() <= Z * se), (mean, target)
    g_chain = (out @ out.transpose(1, 2) / n_out).flatten(1)
    g_real = (real @ real.transpose(1, 2) / n_out).flatten(1)
    v1, v2 = g_chain.var(0), g_real.var(0)
    # the variance of a sample variance of 40000 values: relative SE sqrt(2/reps)·sqrt(kurtosis/2) < 2 %
    assert torch.all((v1 / v2 - 1).abs() <= Z * 0.02), v1 / v2


def test_bad_input():
    with pytest.raises(InputError, match="Gaussian weights"):
        chain_gamma(NetSpec(8, (8,), weight_law="uniform"), 10)
    with pytest.raises(InputError, match="chains"):
        chain_gamma(NetSpec(8, (8,)), 1)
    with pytest.raises(InputError, match="multiple of the batch"):
        chain_gamma(NetSpec(8, (8,), norm="batchnorm", bn_batch=4), 10, n_data=6)


def test_series_forms_never_return_a_value_outside_their_condition():
    """On a grid over (N, L, activation): width.gamma returns a value iff the series' stated condition holds."""
    import igbsym
    form = igbsym.get("width.gamma")
    for act in ("relu", "gelu", "tanh", "silu"):
        for L in (1, 2, 4, 8):
            g, a_L = W.series(L, act, "none", 0.01, math.sqrt(2))[-1]
            for N in (4, 16, 64, 256, 1024):
                holds = W.finite.validity(g, a_L, N)[0]
                try:
                    val = float(form.numpy(L=L, N=N, activation=act))
                except NumericalError as exc:
                    assert not holds and "does not hold" in str(exc) and "\n" not in str(exc)
                else:
                    assert holds or acts_odd(act), (act, L, N)
                    assert math.isfinite(val) and val >= 0


def acts_odd(act):
    from igbsym import activations
    return activations.get(act).odd


@pytest.mark.parametrize("spec,data", [(NetSpec(16, (16,) * 2, activation="gelu"), None),
                                       (NetSpec(8, (8,) * 2, weight_law="uniform"), None),
                                       (NetSpec(8, (8,)), torch.randn(64, 8, generator=torch.Generator().manual_seed(0),
                                                                      dtype=torch.float64))])
def test_estimate_gamma_reaches_the_target_with_a_valid_estimator(spec, data):
    from igbsym.validation import estimate_gamma
    res = estimate_gamma(spec, 0.02, data=data, seed=5)
    assert res.se <= 0.02 * abs(res.value) and res.seconds > 0 and res.units >= 8
    from igbsym.validation.estimate import candidates
    assert candidates(spec, data)[res.estimator] is None and res.estimator in res.reason
    if res.estimator == "exact-chain":       # the same γ_N as real networks (an independent torch route)
        sim = gamma_of_sim(simulate(spec, 1500, n_data=64, seed=3, fresh_data=True))
        assert abs(_z(res.gamma, sim)) <= Z
    with pytest.raises(InputError, match="rel_se"):
        estimate_gamma(spec, 0.0)
    for bad in (0.0, -1e-3, math.inf, math.nan, True):
        with pytest.raises(InputError, match="abs_se"):
            estimate_gamma(spec, 0.02, abs_se=bad)
