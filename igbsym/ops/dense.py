"""Dense: a linear layer without bias, weights i.i.d. with mean 0 and variance σ_w²/fan_in.

Width-limit map (IGB paper App. F.1): the CLT makes the output Gaussian; (q, c, e, m) → (σ_w² q, c, e, 0): the
centre share of the output is the input's cross moment over its second moment. Noise factor σ_w²; homogeneous of
degree 1.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import mpmath

from .base import Op, State

SIGMA_W = math.sqrt(2.0)   # the one default Kaiming gain: σ_w² = 2 (He et al. 2015; norm paper App. C)
WEIGHT_LAWS = {"normal": 3.0, "uniform": 1.8, "rademacher": 1.0}   # weight law -> its kurtosis E[W⁴]/E[W²]²


@dataclass(frozen=True)
class Dense(Op):
    """Linear layer without bias to ``width_`` units (None: infinite, for prediction), gain ``sigma_w``."""

    width_: int | None = None
    sigma_w: object = SIGMA_W
    stage = "pre"
    keeps_share = True

    def _map(self, s):
        return State(self.sigma_w**2 * s.q, s.c, s.e, 0 * s.m)

    sym = numpy = _map

    def mp(self, s):
        return State(mpmath.mpf(self.sigma_w) ** 2 * s.q, s.c, s.e, 0 * s.m)

    def width(self, n):
        return self.width_

    def limit(self):
        return Dense(None, self.sigma_w)

    def shapes(self, n):
        return [(n, self.width_)]

    def torch(self, n, device=None, dtype=None):
        from torch import nn
        return nn.Linear(n, self.width_, bias=False, device=device, dtype=dtype)

    def batched(self, h, take):
        import torch
        return torch.bmm(h, take())

    def noise(self, s, backend="numpy"):
        return self.sigma_w**2 + 0 * s.q
