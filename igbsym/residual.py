"""Residual blocks x → x + α·F(x) as an op of the architecture spec (igbsym/spec.py), and residual MLP builders.

No seed paper has a theory of skip connections (igb-initial-guessing-bias.txt App. I.2 only measures IGB in
ResNets; moments-well-behaved-vs-pathological.txt Secs. 6–7 measure batch-normalised ResNets). The width-limit
law derived here (derivations/resnet.py) is new:

Let the trunk x have the state (q, c, e, m) of igbsym/spec.py (q = E[x_i²], c = E[x_i(x)x_i(x')]/q for two
independent inputs, e = 1 − c, m = E[x_i]) and let the branch F (a sequence of ops) map it to (q_F, c_F, e_F, m_F).
If the branch starts or ends with a Dense layer (fresh zero-mean weights), then in the width limit the trunk unit
x_i and the branch unit F_i are uncorrelated apart from their means, so

    q' = q + 2α m m_F + α² q_F,         (second moment)
    e' q' = e q + α² e_F q_F,           (the data-centred part adds: no cross term)
    c' q' = c q + 2α m m_F + α² c_F q_F,
    m' = m + α m_F.

The centred part is carried directly (never as q' − P'), so 1 − c keeps its relative accuracy as c → 1.
A branch that neither starts nor ends with a Dense (e.g. F = φ) correlates with the trunk: no width-limit law here.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import sympy as sp

from .errors import InputError
from .spec import (HOMOGENEOUS, SIGMA_W, Act, BatchNorm, Dense, LayerNorm, Op, RMSNorm, State, block_ops, compose)

BLOCKS = ("linear-first", "linear-last")
NORMS = ("none", "batchnorm", "layernorm", "rmsnorm")


def _fail(msg):
    raise InputError(msg)


@dataclass(frozen=True)
class Residual(Op):
    """x → x + α·F(x) with F = ``block`` (a tuple of ops that keeps the trunk width).

    ``block`` must start or end with a Dense (module docstring). ``alpha`` ≥ 0 is the branch scale."""

    alpha: object = 1.0
    block: tuple = ()
    stage = "res"

    def __post_init__(self):
        object.__setattr__(self, "block", tuple(self.block))
        if not self.block or not all(isinstance(op, Op) for op in self.block):
            _fail("Residual: block must be a non-empty sequence of ops (Dense, Act, LayerNorm, ...)")
        if not (isinstance(self.block[0], Dense) or isinstance(self.block[-1], Dense)):
            _fail("Residual: the block must start or end with a Dense layer (otherwise the branch is correlated "
                  "with the skip path and has no width-limit law)")
        a = self.alpha
        if isinstance(a, (int, float, np.floating)) and not (np.isfinite(a) and a >= 0):
            _fail(f"Residual: alpha={a!r} is not allowed; allowed: a finite number >= 0")

    # --- the map ---
    def _combine(self, s: State, f: State) -> State:
        a = self.alpha
        q = s.q + 2 * a * s.m * f.m + a**2 * f.q
        centred = s.e * s.q + a**2 * f.e * f.q
        shared = s.c * s.q + 2 * a * s.m * f.m + a**2 * f.c * f.q
        return State(q, shared / q, centred / q, s.m + a * f.m, bool(s.gaussian and f.gaussian))

    def _map(self, s: State, backend: str) -> State:
        if s.bn_batch is not None:
            _fail("Residual: a trunk of mini-batch BatchNorm outputs is not Gaussian (no width-limit law)")
        return self._combine(s, compose(self.block[self._start()], s, backend)[-1])

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

    # --- widths and torch ---
    def width(self, n):
        out = n
        for op in self.block:
            out = op.width(out)
        if out != n:
            _fail(f"Residual: the block maps width {n} to {out}; a residual block must keep the trunk width")
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


def residual_block(activation="relu", norm="none", placement="pre", order="linear-first", a=0.01,
                   sigma_w=SIGMA_W, width=None) -> tuple:
    """The branch F: 'linear-first' = Dense → [norm if pre] → φ → [norm if post] (the issue's block);
    'linear-last' = [norm] → φ → Dense (He et al. 2016's pre-activation ResNet; ``placement`` is ignored)."""
    if order not in BLOCKS:
        _fail(f"residual block order {order!r} is not allowed; allowed: {', '.join(BLOCKS)}")
    if norm not in NORMS:
        _fail(f"residual norm {norm!r} is not allowed; allowed: {', '.join(NORMS)}")
    if placement not in ("pre", "post"):
        _fail(f"residual placement {placement!r} is not allowed; allowed: pre, post")
    nrm = None if norm == "none" else norm
    if order == "linear-first":
        return (Dense(width, sigma_w),) + block_ops(activation, nrm, placement, a)
    mk = {None: (), "batchnorm": (BatchNorm(None),), "layernorm": (LayerNorm(),), "rmsnorm": (RMSNorm(),)}[nrm]
    return mk + (Act(activation, a), Dense(width, sigma_w))


def resnet_ops(L, activation="relu", alpha=1.0, norm="none", placement="pre", order="linear-first", a=0.01,
               sigma_w=SIGMA_W, width=None) -> tuple:
    """Embedding Dense(width, σ_w) then L residual blocks (the output Dense is the Spec's own)."""
    block = residual_block(activation, norm, placement, order, a, sigma_w, width)
    return (Dense(width, sigma_w),) + tuple(Residual(alpha, block) for _ in range(L))


def scale_free(ops) -> bool:
    """True iff rescaling the state (q → q/λ, m → m/√λ) commutes with every map: Dense, norms and positively
    homogeneous activations; a residual block only if its branch has no norm (a norm makes the branch's output
    scale-free while the skip path keeps the trunk's scale). Such a path can be rescaled to q = 1 after every op."""
    for op in ops:
        if isinstance(op, Residual):
            if any(isinstance(b, (BatchNorm, LayerNorm, RMSNorm)) for b in op.block) or not scale_free(op.block):
                return False
        elif isinstance(op, Act) and op.name not in HOMOGENEOUS:
            return False
    return True


def rescaled(s: State) -> tuple:
    """(the state with q = 1 and m in units of √q, the factor q it was divided by)."""
    root = s.q ** 0.5 if not isinstance(s.q, sp.Basic) else sp.sqrt(s.q)
    return replace(s, q=s.q / s.q, m=s.m / root), s.q


def trunk_states(ops, backend="numpy") -> list:
    """States after every op, starting from N(0, I) data. A scale-free NumPy path is rescaled to q = 1 after every
    op (``rescaled``), so q's geometric growth through residual blocks (×(1 + α²λ) per block) never overflows."""
    from .spec import input_state, check_state
    out, s = [], input_state(backend)
    free = backend != "sympy" and scale_free(ops)
    for op in ops:
        s = op.map(s, backend)
        if free:
            s = rescaled(s)[0]
        if backend == "numpy":
            check_state(s, "resnet")
        out.append(s)
    return out
