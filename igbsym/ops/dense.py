"""Dense: a linear layer, weights i.i.d. with mean 0 and variance σ_w²/fan_in, optional bias of variance σ_b².

Width-limit map (IGB paper App. F.1): the CLT makes the output Gaussian; (q, c, e, m) → (σ_w² q, c, e, 0): the
centre share of the output is the input's cross moment over its second moment; a bias adds σ_b² to q and to the
shared moment cq. Noise factor σ_w²; homogeneous of degree 1 without bias. Dataset kernel (Lee et al. 2018, Eq. 4):
k'(a, b) = σ_w² (1/P) Σ_p k(a, b; p, p) + σ_b² (the average over the input units, positions of a flattened image
included), m' = 0.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import mpmath
import numpy as np

from ..errors import InputError
from .datakernel import Kernel, require_flat
from .base import Op, State

SIGMA_W = math.sqrt(2.0)   # the one default Kaiming gain: σ_w² = 2 (He et al. 2015; norm paper App. C)
WEIGHT_LAWS = {"normal": 3.0, "uniform": 1.8, "rademacher": 1.0}   # weight law -> its kurtosis E[W⁴]/E[W²]²


@dataclass(frozen=True)
class Dense(Op):
    """Linear layer to ``width_`` units (None: infinite, for prediction), gain ``sigma_w``, bias sd ``sigma_b``
    (0: no bias)."""

    width_: int | None = None
    sigma_w: object = SIGMA_W
    sigma_b: object = 0
    stage = "pre"
    starts_layer = draws_weights = True

    @classmethod
    def example(cls):
        return cls(4, 1.3)

    @property
    def unbiased(self) -> bool:
        """No bias at any point (σ_b = 0; a NumPy array of σ_b: 0 at every point; a SymPy symbol: False)."""
        b = self.sigma_b
        return bool(np.all(b == 0)) if isinstance(b, np.ndarray) else bool(b == 0)

    @property
    def degree(self):
        return 1 if self.unbiased else None

    @property
    def keeps_share(self):
        """Without a bias the map keeps (c, e); a bias shared by the data raises c (the arc-cosine route is off)."""
        return self.unbiased

    def _map(self, s, w2=None):
        w2 = self.sigma_w**2 if w2 is None else w2
        if self.unbiased:
            return State(w2 * s.q, s.c, s.e, 0 * s.m)
        b2 = self.sigma_b**2
        q = w2 * s.q + b2
        return State(q, (w2 * s.c * s.q + b2) / q, w2 * s.e * s.q / q, 0 * s.m)

    sym = _map

    def numpy(self, s, w2=None):
        """The NumPy route squares σ_w in float64 (a Python float overflows: σ_w = 1e200 gives inf, which the
        next map reports as out of range instead of an OverflowError). With a bias, (c, e) are taken from the ratio
        t = σ_b²/(σ_w² q) alone, so an overflowing q (σ_w = 1e308) leaves them finite (the bias is then below the
        double's resolution of q, t = 0)."""
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            sw = np.asarray(self.sigma_w, float) if w2 is None else np.sqrt(w2)
            w2 = np.square(sw) if w2 is None else w2
            if self.unbiased:
                return self._map(s, w2)
            t = np.square(np.asarray(self.sigma_b, float) / sw) / np.asarray(s.q, float)
            t = np.where(np.isnan(t), 0.0, t)           # σ_b = 0 points of an array (0/0 only where q = inf)
            e = s.e / (1 + t)
            c = np.where(t > 1, 1 - e, (s.c + t) / (1 + t))
            return State(w2 * s.q * (1 + t), c, e, 0 * s.m)

    def mp(self, s):
        return self._map(s, mpmath.mpf(self.sigma_w) ** 2)

    def kernel(self, s: Kernel) -> Kernel:
        require_flat(s, "Dense")
        w2, b2 = float(self.sigma_w) ** 2, float(self.sigma_b) ** 2

        def avg(k):
            return w2 * np.diagonal(k, axis1=-2, axis2=-1).mean(-1)[..., None, None] + b2
        zero = np.zeros((1, 1, 1))
        return Kernel(avg(s.k), avg(s.ka), avg(s.kb), zero, zero, (1, 1), True, True, whole=s.whole)

    def width(self, n):
        return self.width_

    def limit(self):
        return dataclasses.replace(self, width_=None)

    def scaled_bias(self, k):
        return self if self.unbiased else dataclasses.replace(self, sigma_b=self.sigma_b * k)

    def shapes(self, n):
        return [(n, self.width_)]

    def torch(self, n, device=None, dtype=None):
        from torch import nn
        return nn.Linear(n, self.width_, bias=self.sigma_b != 0, device=device, dtype=dtype)

    def batched(self, h, take):
        """h W (+ b): ``take()`` gives [I, n, n'], or [I, n + 1, n'] whose last row is the bias (``split_bias``)."""
        import torch
        w, b = split_bias(take(), h.shape[-1])
        return torch.bmm(h, w) if b is None else torch.baddbmm(b, h, w)

    def chain(self, h, gen):
        """h W + b for fresh W ~ N(0, σ_w²/n), b ~ N(0, σ_b²), sampled exactly in O(I·P²·n'): the n' output units are
        i.i.d. N(0, σ_w² h hᵀ/n + σ_b²) (W is independent of h), drawn as S ε for any square root S S ᵀ = h hᵀ: the
        Cholesky factor, or Rᵀ of the thin QR hᵀ = Q R where h hᵀ is singular (fewer units than points)."""
        import torch
        if self.width_ is None:
            raise InputError("Dense: the exact chain needs a finite width")
        n_init, P, n = h.shape
        root, info = torch.linalg.cholesky_ex(h @ h.transpose(1, 2))
        bad = (info > 0) | ~torch.isfinite(root).flatten(1).all(1)
        if bad.any():
            r = torch.linalg.qr(h[bad].transpose(1, 2), mode="r").R.transpose(1, 2)
            root[bad] = torch.nn.functional.pad(r, (0, P - r.shape[2]))
        # the Gaussian draws in float32 (4x faster; a float32 sample of N(0, 1) is a sample), the products in h's dtype
        eps = torch.randn(n_init, P, self.width_, generator=gen, device=h.device).to(h.dtype)
        out = root @ eps * (float(self.sigma_w) / math.sqrt(n))
        if self.sigma_b != 0:
            out = out + float(self.sigma_b) * torch.randn(n_init, 1, self.width_, generator=gen, device=h.device,
                                                          dtype=h.dtype)
        return out

    def noise(self, s, backend="numpy"):
        return self.sigma_w**2 + 0 * s.q


def split_bias(w, fan_in: int):
    """(weights [I, fan_in, fan_out], bias [I, 1, fan_out] or None) of a batched layer tensor whose extra last row,
    if any, is the bias (validation.simulate.sample_weights draws them so)."""
    return (w, None) if w.shape[1] == fan_in else (w[:, :fan_in], w[:, fan_in:])
