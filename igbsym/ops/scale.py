"""Scale: a fixed multiplication x → α·x (e.g. a residual branch's scale written as its own op, or a temperature).

Width-limit map: (q, c, e, m) → (α² q, c, e, α m) (c, e and the spread d are ratios, unchanged); noise factor α²;
positively homogeneous of degree 1 for α > 0. Kernel over a dataset: K → α² K, m → α m.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import mpmath
import sympy as sp

from .base import Op, fail


@dataclass(frozen=True)
class Scale(Op):
    """x → alpha·x with a fixed alpha > 0."""

    alpha: object = 1.0
    stage = "scale"
    keeps_share = True

    @classmethod
    def example(cls):
        return cls(0.7)

    def __post_init__(self):
        a = self.alpha
        if isinstance(a, (int, float)) and not (a > 0 and a < float("inf")):
            fail(f"Scale: alpha={a!r} is not allowed; allowed: a finite number > 0")

    def _map(self, s, alpha):
        return dataclasses.replace(s, q=alpha**2 * s.q, m=alpha * s.m)

    def sym(self, s):
        return self._map(s, sp.sympify(self.alpha))

    def numpy(self, s):
        return self._map(s, self.alpha)

    def mp(self, s):
        return self._map(s, mpmath.mpf(self.alpha))

    def torch(self, n, device=None, dtype=None):
        from torch import nn
        alpha = float(self.alpha)

        class ScaleModule(nn.Module):
            def forward(self, h):
                return alpha * h

            def extra_repr(self):
                return f"alpha={alpha}"
        return ScaleModule()

    def batched(self, h, take):
        return float(self.alpha) * h

    def noise(self, s, backend="numpy"):
        return self.alpha**2 + 0 * s.q

    def kernel(self, s):
        a = float(self.alpha)
        return dataclasses.replace(s, k=a * a * s.k, ka=a * a * s.ka, kb=a * a * s.kb, ma=a * s.ma, mb=a * s.mb)
