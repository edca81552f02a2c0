"""Conv2d: a 2-d convolution over an image [C, H, W], weights i.i.d. with mean 0 and variance σ_w²/(C k²), optional
bias of variance σ_b², zero padding, stride.

Dataset kernel (the CNN-GP: Novak et al. 2019, Eq. 7; Garriga-Alonso et al. 2019, Sec. 3.1): a channel of the
output at position p is Σ_c Σ_δ w_cδ h_c(s p + δ − pad) + b with weights independent across offsets δ and channels,
so at infinite width k'(a, b; p, p') = (σ_w²/k²) Σ_δ k(a, b; s p + δ − pad, s p' + δ − pad) + σ_b², the SAME offset
on both positions (entries in the padding are 0), m' = 0, Gaussian. No width-limit State map: the i.i.d. N(0, I)
state has no positions (use the dataset kernel, ``igbsym.nngp``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Op, fail
from .datakernel import Kernel
from .dense import SIGMA_W


def out_size(n: int, k: int, stride: int, padding: int) -> int:
    """Output length of a window k with stride and zero padding over n positions (torch's floor rule)."""
    size = (n + 2 * padding - k) // stride + 1
    if size < 1:
        fail(f"a window of {k} with padding {padding} does not fit {n} positions; allowed: k <= n + 2 padding")
    return size


def positions(k: np.ndarray, hw) -> np.ndarray:
    """k [..., P, P] as [..., H, W, H, W]."""
    return k.reshape(k.shape[:-2] + tuple(hw) + tuple(hw))


def no_state_map(self, s):
    """The width-limit State map of a spatial op: none (the i.i.d. N(0, I) state has no positions)."""
    fail(f"{type(self).__name__}: no width-limit map on i.i.d. N(0, I) data (a spatial op); use the dataset "
         "kernel (igbsym.nngp.theory)")


def no_noise_map(self, s, backend="numpy"):
    fail(f"sensitivity: {type(self).__name__} has no width-limit noise map")


@dataclass(frozen=True)
class Conv2d(Op):
    """nn.Conv2d(C, ``channels``, k, stride, padding) with gain ``sigma_w`` (fan-in C k²) and bias sd ``sigma_b``."""

    channels: int | None = None
    k: int = 3
    stride: int = 1
    padding: int = 0
    sigma_w: object = SIGMA_W
    sigma_b: object = 0
    stage = "conv"
    draws_weights = spatial = True
    sym = numpy = mp = no_state_map
    noise = no_noise_map

    @classmethod
    def example(cls):
        return cls(4, 3, 1, 1)

    def __post_init__(self):
        for name in ("k", "stride"):
            if not (isinstance(getattr(self, name), int) and getattr(self, name) >= 1):
                fail(f"Conv2d: {name} must be an integer >= 1, got {getattr(self, name)!r}")
        if not (isinstance(self.padding, int) and 0 <= self.padding):
            fail(f"Conv2d: padding must be an integer >= 0, got {self.padding!r}")

    @property
    def degree(self):
        return 1 if self.sigma_b == 0 else None

    def width(self, n):
        return self.channels

    def kernel(self, s: Kernel) -> Kernel:
        h, w = s.spatial("Conv2d")
        ho, wo = out_size(h, self.k, self.stride, self.padding), out_size(w, self.k, self.stride, self.padding)
        w2, b2, pad, st = float(self.sigma_w) ** 2, float(self.sigma_b) ** 2, self.padding, self.stride

        def conv(k):
            x = positions(k, (h, w))
            if pad:
                x = np.pad(x, [(0, 0)] * (x.ndim - 4) + [(pad, pad)] * 4)
            out = 0
            for di in range(self.k):
                for dj in range(self.k):
                    ri, rj = slice(di, di + st * (ho - 1) + 1, st), slice(dj, dj + st * (wo - 1) + 1, st)
                    out = out + x[..., ri, rj, ri, rj]
            out = out * (w2 / self.k**2) + b2
            return out.reshape(out.shape[:-4] + (ho * wo, ho * wo))
        zero = np.zeros((1, 1, 1))
        return Kernel(conv(s.k), conv(s.ka), conv(s.kb), zero, zero, (ho, wo), False, True, whole=s.whole)

    def torch(self, n, device=None, dtype=None):
        from torch import nn
        return nn.Conv2d(n, self.channels, self.k, self.stride, self.padding, bias=self.sigma_b != 0,
                         device=device, dtype=dtype)
