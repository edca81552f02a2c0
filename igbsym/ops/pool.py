"""MaxPool: nn.MaxPool1d(k) over consecutive units (width n → n // k).

Width-limit map (IGB paper Sec. 4.2, App. C): k = 1 is the identity; for k > 1 the pooled units are known where they
have no centre spread before φ (c = 0 into φ: the first hidden layer, or after full-batch BN): the pooled units
are then i.i.d. over nodes with the mean and variance of the maximum of k (``igbsym.extreme``), mapped through the
norms between φ and the pool (``State.pool_src``). Deeper pooled layers need the k-node centre integral (refused).
Noise factor 1 (the selected unit's noise passes).
Dataset kernel: refused. The max of k units of one channel is not Gaussian and E[max_i h_i(a) max_j h_j(b)] over the
2k-dimensional Gaussian of a window pair has no closed form for k > 1 (Novak et al. 2019 leave max-pooling out of the
CNN-GP for this reason); a Monte Carlo route over GP samples of each window is not implemented.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import extreme
from .base import Op, State, fail


@dataclass(frozen=True)
class MaxPool(Op):
    """nn.MaxPool1d(k) over consecutive units (width n → n // k)."""

    k: int = 1
    stage = "pool"

    def width(self, n):
        return None if n is None else n // self.k

    def _pooled(self, s, backend):
        if self.k == 1:
            return s
        if s.pool_src is None:
            fail(f"MaxPool(k={self.k}) is predicted only where the pooled units have no centre spread before the "
                 "activation (first hidden layer, or after full-batch BatchNorm); deeper pooled layers need the "
                 "k-node centre integral")
        src = s.pool_src
        if src.activation not in extreme.EXACT_MOMENTS:
            fail(f"MaxPool(k={self.k}) after {src.activation}: the max-of-k law is known for "
                 f"{', '.join(extreme.EXACT_MOMENTS)} only")
        if backend == "sympy":
            mean, var = extreme.exact_mean(src.activation, self.k), extreme.exact_var(src.activation, self.k)
            if mean is None:
                fail(f"MaxPool(k={self.k}) with {src.activation}: no closed form (use the numpy or mpmath backend)")
            mean, var = mean.subs(extreme.sigma, src.sigma), var.subs(extreme.sigma, src.sigma)
        elif backend == "numpy":
            mean, var = extreme.unit_moments(src.activation, self.k)
            mean, var = mean * src.sigma, var * np.asarray(src.sigma, float) ** 2
        else:
            mean, var = extreme.mp_moments(src.activation, self.k, src.sigma)
        mean, var = (mean - src.shift) / src.scale, var / src.scale**2
        q = var + mean**2
        return State(q, mean**2 / q, var / q, mean, False, None, None, 0 * q)

    def sym(self, s):
        return self._pooled(s, "sympy")

    def numpy(self, s):
        return self._pooled(s, "numpy")

    def mp(self, s):
        return self._pooled(s, "mpmath")

    def torch(self, n, device=None, dtype=None):
        from torch import nn

        class Pool(nn.Module):
            def __init__(self, k):
                super().__init__()
                self.pool = nn.MaxPool1d(k)

            def forward(self, h):
                return self.pool(h.reshape(-1, 1, h.shape[-1])).reshape(*h.shape[:-1], -1)
        return Pool(self.k)

    def noise(self, s, backend="numpy"):
        return 1 + 0 * s.q

    def kernel(self, s):
        if self.k == 1:
            return s
        fail(f"MaxPool(k={self.k}): no kernel map over a dataset (the max of a window of Gaussian units has no "
             "closed-form pair moment); allowed: AvgPool2d, AdaptiveAvgPool2d(1), or k = 1")


