"""The exact chain: γ of a finite-width MLP on Gaussian data at any width and depth, by sampling a few points' units
with every weight matrix integrated out (issue 47).

γ_N = E[Ĝ_ab] / E[Ĝ_aa − Ĝ_ab], Ĝ_ab = (1/N_L) Σ_i h_i(x_a) h_i(x_b) the last hidden layer's empirical kernel of two
independent data points (the output weights integrated out, as in ``igbsym.engine.finite``). Given a layer's units
h [P, n] at P points, a fresh Dense gives h W + b with W ~ N(0, σ_w²/n) independent of h, i.e. N(0, σ_w² h hᵀ/n +
σ_b²) i.i.d. over the n' output units: exact in law, sampled in O(P²·n') through the thin QR of hᵀ
(``Dense.chain``), instead of O(P·n·n') for the matrix product. Every op without weights (activations, LayerNorm,
RMSNorm, BatchNorm over the chain's points, MaxPool, Scale) acts on the sampled units as torch runs it (its
``batched`` map), a residual block adds its branch to the same units (``Residual.chain``). So the P points' units
at every layer are an exact Markov chain; one chain costs O(P²·Σ_l N_l) against O(D·Σ_l N_l N_{l−1}) for one
network on D points — the reason it is the route for MLPs on Gaussian data (no 1/N expansion, every (N, L)).

A chain draws its own P data points x ~ N(0, I_d) (fresh data: the population γ), so chains are i.i.d. and γ̂ =
Σ a / Σ b with a = the mean off-diagonal Ĝ over the chain's pairs and b = its mean diagonal minus a, the
delta-method SE over chains (``stats.ratio_estimate``). With BatchNorm (batch B) a chain holds two batches
(P = 2B); pairs from different batches and from one batch are weighted as in a dataset of D points (``n_data``;
a fraction (B − 1)/(D − 1) of a point's partners share its batch; default D = ∞: only pairs across batches).
Float64 units: deep GELU/SiLU nets at σ_w² = 2 carry γ in a part of relative size √q of a unit, which float32
rounding erases (GELU L = 50, N = 256: float32 chains give γ̂ = 0.0059 ± 0.0035, float64 ones 0.00022 ± 0.00005).
Per hidden layer the same ratio (a linear readout of that layer: the next Dense, whose bias, if any, adds
σ_b²/σ_w² to the off-diagonal, ``_readout_bias_shares``). Gaussian weights only (``weight_law='normal'``):
the Gaussian image of h is exact for them alone.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from igbsym.errors import InputError, NumericalError

from .seeding import derive_seed
from .stats import Estimate, ratio_estimate

CHAIN = 5                 # the seeding stream of the exact chain
POINTS = 4                # points per chain without BatchNorm (6 pairs share one draw of the weights' images)
POINTS_TRIED = (2, 4, 8)  # the pilots of estimate_gamma
GROUP_ENTRIES = 1 << 24   # unit values per group of chains (128 MB in float64)


@dataclass
class ChainResult:
    """γ̂ ± SE at the output (``gamma``) and after each hidden layer (``layers``), from ``chains`` i.i.d. chains."""

    gamma: Estimate
    layers: list
    chains: int
    points: int
    seconds: float


def applies(spec) -> str | None:
    """Why the exact chain does not apply to ``spec`` (None when it does)."""
    if spec.weight_law != "normal":
        return f"weight_law {spec.weight_law!r}: the exact chain needs Gaussian weights"
    try:
        _check_ops(spec.ops)
    except InputError as exc:
        return str(exc)
    return None


def _check_ops(ops):
    for op in ops:
        if op.spatial:
            raise InputError(f"{type(op).__name__}: image ops have no exact chain (an MLP on Gaussian data only)")
        if op.draws_weights and not (op.starts_layer or op.children):
            op.chain(None, None)      # raises its one line
        _check_ops(op.children)


def _layer_ends(spec) -> list:
    """Indices k of spec.ops after which a hidden layer ends (the next op starts a layer, or the end)."""
    ops = spec.ops
    return [k for k in range(len(ops)) if k == len(ops) - 1 or ops[k + 1].starts_layer or ops[k + 1].children]


def _pair_weights(points: int, batch: int, n_data) -> torch.Tensor:
    """[P, P] weights of the off-diagonal mean: equal over all pairs; with BatchNorm a pair from different batches
    and a pair from one batch weighted as a dataset of ``n_data`` points holds them (a fraction (B − 1)/(D − 1) of
    a point's partners share its batch; D = inf: none)."""
    idx = torch.arange(points)
    off = (idx[:, None] != idx[None, :]).double()
    if batch == 1:
        return off / off.sum()
    same = (idx[:, None] // batch) == (idx[None, :] // batch)
    within = (batch - 1) / (n_data - 1) if n_data is not None else 0.0
    w_same, w_cross = off * same, off * ~same
    return within * w_same / w_same.sum() + (1 - within) * w_cross / w_cross.sum()


def _readout_bias_shares(spec) -> dict:
    """{layer end k: σ_b²/σ_w² of the Dense reading that layer out} (0 without a bias): the readout's kernel is
    σ_w² Ĝ + σ_b², so its γ = (E Ĝ_ab + σ_b²/σ_w²)/E[Ĝ_aa − Ĝ_ab] (the mean-field convention of depth.gamma: every
    Dense, the readout included, has the bias; the next hidden Dense reads out hidden layer l < L)."""
    ops = spec.ops + (spec.output(),)
    return {k: 0.0 if ops[k + 1].children or ops[k + 1].unbiased else float(ops[k + 1].sigma_b / ops[k + 1].sigma_w)
            ** 2 for k in _layer_ends(spec)}


def run_chains(spec, chains: int, seed: int = 0, first: int = 0, points: int | None = None, n_data=None,
               device=None, dtype=torch.float64):
    """Per-chain units (a, b) [chains, layers] of ``chains`` chains; a group of chains is seeded by (seed, index of
    its first chain ``first + lo``, its size), so a call is reproducible and calls with disjoint ``first`` ranges
    are independent."""
    why = applies(spec)
    if why is not None:
        raise InputError(f"exact chain: {why}")
    batch = spec.batch
    P = points or (2 * batch if batch > 1 else POINTS)
    if batch > 1 and P % batch:
        raise InputError(f"exact chain: points {P} must be a multiple of the BatchNorm batch {batch}")
    if batch > 1 and n_data is not None and not (isinstance(n_data, (int, np.integer)) and n_data >= 2 * batch
                                                  and n_data % batch == 0):
        raise InputError(f"exact chain: n_data must be a multiple of the batch {batch}, >= 2 batches; got {n_data!r}")
    pw = _pair_weights(P, batch, n_data).to(device=device)
    ends = set(_layer_ends(spec))
    shared = _readout_bias_shares(spec)
    widest = max([spec.d_in] + list(spec.widths))
    group = max(1, GROUP_ENTRIES // (P * widest))
    a = np.empty((chains, len(ends)))
    b = np.empty((chains, len(ends)))
    for lo in range(0, chains, group):
        n = min(group, chains - lo)
        gen = torch.Generator(device=device or "cpu")
        gen.manual_seed(derive_seed(seed, CHAIN, first + lo, n))
        h = torch.randn(n, P, spec.d_in, generator=gen, device=device, dtype=dtype)
        col = 0
        for k, op in enumerate(spec.ops):
            h = op.chain(h, gen)
            if k in ends:
                g = h @ h.transpose(1, 2) / h.shape[-1]
                off = (g * pw).sum((1, 2))
                diag = torch.diagonal(g, dim1=1, dim2=2).mean(1)
                a[lo:lo + n, col] = off.cpu().numpy() + shared[k]
                b[lo:lo + n, col] = (diag - off).cpu().numpy()
                col += 1
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise NumericalError("exact chain: non-finite units (the parameters overflow the float64 range)")
    return a, b, P


def chain_gamma(spec, chains: int = 4096, seed: int = 0, points: int | None = None, n_data=None,
                device=None) -> ChainResult:
    """γ̂ ± SE of ``spec`` (an ``igbsym.spec.Spec`` MLP, Gaussian weights) on fresh N(0, I) data by ``chains``
    exact chains (module docstring); per hidden layer as well. ``n_data``: with BatchNorm, the dataset size whose
    within-batch pairs count (None: infinitely many points)."""
    if not (isinstance(chains, (int, np.integer)) and chains >= 2):
        raise InputError(f"exact chain: chains must be an integer >= 2, got {chains!r}")
    t0 = time.process_time()
    a, b, P = run_chains(spec, int(chains), seed, 0, points, n_data, device)
    return _result(a, b, P, time.process_time() - t0)


def _result(a, b, P, seconds) -> ChainResult:
    if not (b[:, -1].mean() > 0):
        raise NumericalError("exact chain: the output units do not vary over the data (E[G_aa - G_ab] = 0)")
    layers = [_ratio(a[:, j], b[:, j]) for j in range(a.shape[1])]
    return ChainResult(layers[-1], layers, a.shape[0], P, seconds)


def _ratio(a, b) -> Estimate:
    est = ratio_estimate(a, b)
    est.method = "exact-chain/delta"
    return est
