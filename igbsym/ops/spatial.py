"""Linear pooling and reshaping of image units: AvgPool2d, global average pooling, Flatten.

Dataset kernel (Novak et al. 2019, Sec. 3.1 and Eq. 8): a linear pool h' = Π h over positions (no weights) maps
k' = Π k Πᵀ on both position axes and m' = Π m; it keeps the units Gaussian. AvgPool2d(k, stride, padding) with
torch's defaults (count_include_pad: every window divides by k²; floor mode); the global pool is Π = (1/P) 1ᵀ
(nn.AdaptiveAvgPool2d(1)). Flatten keeps the positions and marks the units as features: the next Dense averages
k(a, b; p, p) over them. No width-limit State map for the pools (the i.i.d. state has no positions); Flatten is the
identity there.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Op
from .conv import no_noise_map, no_state_map, out_size
from .datakernel import Kernel


def pool_matrix(n: int, k: int, stride: int, padding: int) -> np.ndarray:
    """[n_out, n]: the average over each window (zero padding counted, so each row divides by k)."""
    n_out = out_size(n, k, stride, padding)
    out = np.zeros((n_out, n))
    for t in range(n_out):
        lo = t * stride - padding
        out[t, max(lo, 0):min(lo + k, n)] = 1.0 / k
    return out


def pooled(s: Kernel, pi: np.ndarray, hw) -> Kernel:
    """The kernel state through the linear pool ``pi`` [P', P] (output spatial shape ``hw``)."""
    def both(k):
        return np.einsum("ip,...pq,jq->...ij", pi, k, pi, optimize=True)
    return s.replace(k=both(s.k), ka=both(s.ka), kb=both(s.kb), ma=s.ma @ pi.T, mb=s.mb @ pi.T, hw=hw)


@dataclass(frozen=True)
class AvgPool2d(Op):
    """nn.AvgPool2d(k, stride, padding) (stride None: k)."""

    k: int = 2
    stride: int | None = None
    padding: int = 0
    stage = "pool"
    sym = numpy = mp = no_state_map
    noise = no_noise_map

    def kernel(self, s: Kernel) -> Kernel:
        h, w = s.spatial("AvgPool2d")
        st = self.k if self.stride is None else self.stride
        ph, pw = pool_matrix(h, self.k, st, self.padding), pool_matrix(w, self.k, st, self.padding)
        return pooled(s, np.kron(ph, pw), (ph.shape[0], pw.shape[0]))

    def torch(self, n, device=None, dtype=None):
        from torch import nn
        return nn.AvgPool2d(self.k, self.stride, self.padding)


@dataclass(frozen=True)
class GlobalAvgPool(Op):
    """nn.AdaptiveAvgPool2d(1): the mean over all positions."""

    stage = "pool"
    sym = numpy = mp = no_state_map
    noise = no_noise_map

    def kernel(self, s: Kernel) -> Kernel:
        h, w = s.spatial("global average pooling")
        return pooled(s, np.full((1, h * w), 1.0 / (h * w)), (1, 1))

    def torch(self, n, device=None, dtype=None):
        from torch import nn
        return nn.AdaptiveAvgPool2d(1)


@dataclass(frozen=True)
class Flatten(Op):
    """nn.Flatten(): image units become features (positions kept for the next Dense's average)."""

    stage = "flatten"

    def _map(self, s):
        return s

    sym = numpy = mp = _map

    def noise(self, s, backend="numpy"):
        return 1 + 0 * s.q

    def kernel(self, s: Kernel) -> Kernel:
        return s.replace(flat=True)

    def torch(self, n, device=None, dtype=None):
        from torch import nn
        return nn.Flatten()

