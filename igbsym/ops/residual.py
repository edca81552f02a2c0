"""Residual: the composite op x → x + α·F(x), F a sequence of ops (the branch) that keeps the trunk width.

No seed paper has a theory of skip connections (IGB paper App. I.2 only measures IGB in ResNets; Labatie 2019
Secs. 6–7 measure batch-normalised ResNets). The width-limit law (new; derivations/resnet.py): with the trunk state
(q, c, e, m) mapped by F to (q_F, c_F, e_F, m_F), if F starts or ends with a Dense (fresh zero-mean weights), the
trunk unit and the branch unit are uncorrelated apart from their means, so

    q' = q + 2α m m_F + α² q_F,   e' q' = e q + α² e_F q_F,   c' q' = c q + 2α m m_F + α² c_F q_F,   m' = m + α m_F.

The centred part is carried directly (never as q' − P'). Noise factor 1 + α²·(the branch's factor): the branch's
Jacobian has fresh zero-mean weights, so there is no cross term. Homogeneous of degree 1 iff the branch is.
Dataset kernel (the same independence, per pair of points): k' = k + α(m_a m_F,b + m_F,a m_b) + α² k_F, m' = m + α m_F:
the uncentred kernel carries the trunk's mean (linear-first blocks end in φ, so m_F ≠ 0).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .act import Act
from .base import Op, State, compose, degree, fail
from .dense import Dense
from .norms import BatchNorm


@dataclass(frozen=True)
class Residual(Op):
    """x → x + α·F(x) with F = ``block`` (a tuple of ops that keeps the trunk width); ``alpha`` >= 0."""

    alpha: object = 1.0
    block: tuple = ()
    stage = "res"
    draws_weights = True

    @classmethod
    def example(cls):
        return cls(0.5, (Dense(4, 1.1), Act("relu")))

    def __post_init__(self):
        object.__setattr__(self, "block", tuple(self.block))
        if not self.block or not all(isinstance(op, Op) for op in self.block):
            fail("Residual: block must be a non-empty sequence of ops (Dense, Act, LayerNorm, ...)")
        if not (isinstance(self.block[0], Dense) or isinstance(self.block[-1], Dense)):
            fail("Residual: the block must start or end with a Dense layer (otherwise the branch is correlated "
                 "with the skip path and has no width-limit law)")
        a = self.alpha
        if isinstance(a, (int, float, np.floating)) and not (np.isfinite(a) and a >= 0):
            fail(f"Residual: alpha={a!r} is not allowed; allowed: a finite number >= 0")

    @property
    def children(self) -> tuple:
        return self.block

    @property
    def degree(self):
        return 1 if degree(self.block) == 1 else None

    # --- the map ---
    def _combine(self, s: State, f: State) -> State:
        a = self.alpha
        q = s.q + 2 * a * s.m * f.m + a**2 * f.q
        centred = s.e * s.q + a**2 * f.e * f.q
        shared = s.c * s.q + 2 * a * s.m * f.m + a**2 * f.c * f.q
        return State(q, shared / q, centred / q, s.m + a * f.m, bool(s.gaussian and f.gaussian))

    def _map(self, s: State, backend: str) -> State:
        if s.bn_batch is not None:
            fail("Residual: a trunk of mini-batch BatchNorm outputs is not Gaussian (no width-limit law)")
        return self._combine(s, compose(self.block[self._start()], s, backend)[-1])

    def kernel(self, s):
        f = s
        for op in self.block:
            f = op.kernel(f)
        a = float(self.alpha)

        def add(k, ma, mb, fk, fa, fb):
            return k + a * (ma[..., :, None] * fb[..., None, :] + fa[..., :, None] * mb[..., None, :]) + a * a * fk
        return s.replace(k=add(s.k, s.ma, s.mb, f.k, f.ma, f.mb), ka=add(s.ka, s.ma, s.ma, f.ka, f.ma, f.ma),
                         kb=add(s.kb, s.mb, s.mb, f.kb, f.mb, f.mb), ma=s.ma + a * f.ma, mb=s.mb + a * f.mb,
                         gaussian=s.gaussian and f.gaussian)

    def _start(self) -> slice:
        """The ops that determine the branch output: from the last full-batch BatchNorm on (its output (1, 0, 1, 0)
        does not depend on its input, so the ops before it, e.g. a smooth φ whose nested quadrature has a range in
        q, are not evaluated)."""
        full = [i for i, op in enumerate(self.block) if isinstance(op, BatchNorm) and op.B is None]
        return slice(full[-1] if full else 0, None)

    def sym(self, s):
        return self._map(s, "sympy")

    def numpy(self, s):
        return self._map(s, "numpy")

    def mp(self, s):
        return self._map(s, "mpmath")

    def noise(self, s, backend="numpy"):
        nu, state = 1 + 0 * s.q, s
        for op in self.block:
            nu = nu * op.noise(state, backend)
            state = op.map(state, backend)
        return 1 + self.alpha**2 * nu

    def limit(self):
        return Residual(self.alpha, tuple(op.limit() for op in self.block))

    def full_batch(self, n_data):
        block = tuple(op.full_batch(n_data) for op in self.block)
        return self if all(x is y for x, y in zip(block, self.block)) else Residual(self.alpha, block)

    # --- widths and torch ---
    def width(self, n):
        out = n
        for op in self.block:
            out = op.width(out)
        if out != n:
            fail(f"Residual: the block maps width {n} to {out}; a residual block must keep the trunk width")
        return n

    def shapes(self, n):
        out, w = [], n
        for op in self.block:
            out += op.shapes(w)
            w = op.width(w)
        return out

    def torch(self, n, device=None, dtype=None):
        from torch import nn
        alpha, mods, w = float(self.alpha), [], n
        for op in self.block:
            mods.append(op.torch(w, device, dtype))
            w = op.width(w)
        branch = nn.Sequential(*mods)

        class ResidualBlock(nn.Module):
            def __init__(self):
                super().__init__()
                self.branch = branch

            def forward(self, x):
                return x + alpha * self.branch(x)
        return ResidualBlock()

    def batched(self, h, take):
        out = h
        for op in self.block:
            out = op.batched(out, take)
        return h + float(self.alpha) * out

    def chain(self, h, gen):
        out = h
        for op in self.block:
            out = op.chain(out, gen)
        return h + float(self.alpha) * out
