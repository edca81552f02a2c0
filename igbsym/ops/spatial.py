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


def pooled(s: Kernel, ph: np.ndarray, pw: np.ndarray) -> Kernel:
    """The kernel state through the separable linear pool Π = ph ⊗ pw (rows [H', H], columns [W', W]): each of the
    four position axes of k [..., H, W, H, W] is contracted with its own 1-d pool."""
    h, w = ph.shape[1], pw.shape[1]
    ho, wo = ph.shape[0], pw.shape[0]

    def both(k):
        x = k.reshape(k.shape[:-2] + (h, w, h, w))
        x = np.einsum("ia,...abcd->...ibcd", ph, x)
        x = np.einsum("jb,...abcd->...ajcd", pw, x)
        x = np.einsum("kc,...abcd->...abkd", ph, x)
        x = np.einsum("ld,...abcd->...abcl", pw, x)
        return x.reshape(x.shape[:-4] + (ho * wo, ho * wo))

    def mean(m):
        x = np.broadcast_to(m, m.shape[:-1] + (h * w,)).reshape(m.shape[:-1] + (h, w))
        return np.einsum("ia,jb,...ab->...ij", ph, pw, x).reshape(m.shape[:-1] + (ho * wo,))
    return s.replace(k=both(s.k), ka=both(s.ka), kb=both(s.kb), ma=mean(s.ma), mb=mean(s.mb), hw=(ho, wo))


@dataclass(frozen=True)
class AvgPool2d(Op):
    """nn.AvgPool2d(k, stride, padding) (stride None: k)."""

    k: int = 2
    stride: int | None = None
    padding: int = 0
    stage = "pool"
    spatial = True
    sym = numpy = mp = no_state_map
    noise = no_noise_map

    def kernel(self, s: Kernel) -> Kernel:
        h, w = s.spatial("AvgPool2d")
        st = self.k if self.stride is None else self.stride
        return pooled(s, pool_matrix(h, self.k, st, self.padding), pool_matrix(w, self.k, st, self.padding))

    def torch(self, n, device=None, dtype=None):
        from torch import nn
        return nn.AvgPool2d(self.k, self.stride, self.padding)


@dataclass(frozen=True)
class GlobalAvgPool(Op):
    """nn.AdaptiveAvgPool2d(1): the mean over all positions."""

    stage = "pool"
    spatial = True
    sym = numpy = mp = no_state_map
    noise = no_noise_map

    def kernel(self, s: Kernel) -> Kernel:
        h, w = s.spatial("global average pooling")
        return pooled(s, np.full((1, h), 1.0 / h), np.full((1, w), 1.0 / w))

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

    def batched(self, h, take):
        """[I, N, ...] → [I, N, features]: the init and row axes kept (nn.Flatten() would merge rows into features)."""
        return h.flatten(2)

