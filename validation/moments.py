"""Labatie's moments measured on randomly initialised torch networks built from an architecture spec.

Paper: moments-well-behaved-vs-pathological.txt Sec. 3.1. For every op output x_l of a spec (igbsym/spec.py,
igbsym/ops/residual.py) and a batch of inits, on a shared N(0, I) dataset with an isotropic input noise dx₀:
    μ₂ = E[x²] (over units, data, inits), μ₂,c = E[Var_data x] (unbiased), ν = E[dx²] with dx_l the forward-mode
    derivative (``torch.func.jvp``, not finite differences) of x_l along dx₀, r_eff = tr Σ/‖Σ‖₂ of the data
    covariance Σ of x_l (a finite-width quantity), and γ̂_l of a linear readout (``igbsym.validation.stats``).
Weights: every Dense of the spec (including those inside residual blocks) is drawn N(0, σ_w²/fan_in) with init i
seeded by (seed, i) alone (``igbsym.validation.simulate``'s seeding scheme), so results do not depend on chunking; every
init has its own dataset and noise (``igbsym.validation.simulate.fresh_rows``), so inits are i.i.d. units.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from igbsym.errors import InputError
from igbsym.spec import Spec

from .simulate import dense_ops, fresh_rows, sample_weights
from .stats import Estimate, gamma_estimate, ratio_estimate


@dataclass
class LayerMoments:
    """Per op output: per-init μ₂, μ₂,c, ν [I]; unit centres and data variances [I, n] (for γ̂); r_eff [I]."""

    op: str
    mu2: np.ndarray
    mu2c: np.ndarray
    nu: np.ndarray
    centres: torch.Tensor
    variances: torch.Tensor
    r_eff: np.ndarray | None
    input_scale: np.ndarray       # per init ν₀/μ₂,c(x₀) of the dataset and noise actually drawn

    def gamma(self, n_data: int) -> Estimate:
        """γ̂ of a linear readout of this layer (uncentred: the layer mean counts, as for the readout)."""
        return gamma_estimate(self.centres, self.variances, n_data)

    def centred_ratio(self) -> Estimate:
        """μ₂,c/μ₂ (ratio of means over inits, delta-method SE)."""
        return ratio_estimate(self.mu2c, self.mu2)

    def chi(self) -> Estimate:
        """χ̂ = √(E[ν]/E[μ₂,c·ν₀/μ₂,c(x₀)]), each init normalised by its own dataset's and noise's empirical
        moments (``input_scale``), so their sampling fluctuation cancels to first order."""
        r = ratio_estimate(self.nu, self.mu2c * self.input_scale)
        v = math.sqrt(r.value)
        return Estimate(v, r.se / (2 * v), math.sqrt(max(r.lo, 0)), math.sqrt(r.hi), "delta", r.n)


def _effective_rank(x: torch.Tensor) -> np.ndarray:
    xc = x - x.mean(1, keepdim=True)
    cov = xc.transpose(1, 2) @ xc / (x.shape[1] - 1)
    return (cov.diagonal(dim1=1, dim2=2).sum(-1) / torch.linalg.matrix_norm(cov, ord=2)).numpy()


def measure(spec: Spec, n_inits: int, n_data: int, seed: int = 0, r_eff: bool = False, init_chunk: int = 8,
            progress=None) -> list:
    """[LayerMoments] after every op of ``spec.ops`` (the output layer excluded)."""
    if spec.d_in is None or any(op.width_ is None for op in dense_ops(spec.ops)):
        raise InputError("moments.measure: the spec needs finite d_in and widths")
    if n_inits < 2 or n_data < 2:
        raise InputError(f"moments.measure: needs n_inits >= 2 and n_data >= 2, got {n_inits}, {n_data}")
    ops = spec.full_batch(n_data).ops
    parts = []
    for start in range(0, n_inits, init_chunk):
        inits = range(start, min(n_inits, start + init_chunk))
        ws = sample_weights(spec, inits, seed, torch.device("cpu"), torch.float64)
        # every init gets its own dataset (rows [0, D)) and noise (rows [D, 2D) of the same seeded stream): inits are
        # then fully i.i.d. and the SE over inits includes the data's own fluctuation
        x = fresh_rows(spec.d_in, "gaussian", seed, inits, 0, n_data, torch.device("cpu"), torch.float64)
        dx = fresh_rows(spec.d_in, "gaussian", seed, inits, n_data, 2 * n_data, torch.device("cpu"), torch.float64)

        def run(inp):
            it = iter(ws)
            h, outs = inp, []
            for op in ops:
                h = op.batched(h, lambda: next(it))
                outs.append(h)
            return tuple(outs)

        with torch.no_grad():
            hs, dhs = torch.func.jvp(run, (x,), (dx,))
        nu0, mu2c0 = dx.pow(2).mean((1, 2)).numpy(), x.var(1).mean(1).numpy()
        rows = []
        for h, dh in zip(hs, dhs):
            mean, var = h.mean(1), h.var(1)
            rows.append((h.pow(2).mean((1, 2)).numpy(), var.mean(1).numpy(), dh.pow(2).mean((1, 2)).numpy(),
                         mean, var, _effective_rank(h) if r_eff else None, nu0 / mu2c0))
        parts.append(rows)
        if progress is not None:
            progress(min(n_inits, start + init_chunk) / n_inits)
    out = []
    for k, op in enumerate(ops):
        cols = list(zip(*[p[k] for p in parts]))
        out.append(LayerMoments(type(op).__name__, np.concatenate(cols[0]), np.concatenate(cols[1]),
                                np.concatenate(cols[2]), torch.cat(cols[3]), torch.cat(cols[4]),
                                np.concatenate(cols[5]) if r_eff else None, np.concatenate(cols[6])))
    return out


def richardson(small: Estimate, big: Estimate) -> Estimate:
    """Width extrapolation 2·x(2n) − x(n) of two independent estimates at widths n and 2n (input dimension scaling
    with the width): it removes the O(1/n) finite-width bias, leaving O(1/n²); SE = √(4 se_big² + se_small²)."""
    v, se = 2 * big.value - small.value, math.sqrt(4 * big.se**2 + small.se**2)
    return Estimate(v, se, v - 1.959963984540054 * se, v + 1.959963984540054 * se, "richardson", small.n + big.n)


def at_two_widths(make_ops, widths: tuple, inits: dict, n_data: int, seed: int, r_eff: bool = False) -> dict:
    """{width: [LayerMoments]} for ``make_ops(width)`` with input dimension = width (d and n → ∞ together)."""
    return {w: measure(Spec(w, make_ops(w)), inits[w], n_data, seed=seed + w, r_eff=r_eff) for w in widths}
