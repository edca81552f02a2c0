"""The op protocol: one class per architecture op, carrying every map of that op; the width-limit state they map.

State (igb-initial-guessing-bias.txt App. F.1; norm-placement-bn-ln.txt Apps. E–F): one unit of a layer over
N(0, I) data, all widths → ∞. q = E[h²]; c = E[h(x)h(x')]/q for two independent inputs (the node-centre share,
c = γ/(1+γ) after a Dense); e = 1 − c carried on its own (full relative accuracy as c → 1; never formed as 1 − c
in NumPy/mpmath); m = E[h] (the layer mean); d = (P − m²)/q, the centres' spread around the layer mean, where an
op knows it exactly. ``gaussian``: the units are jointly Gaussian over data and weights; ``bn_batch``: they are
mini-batch BatchNorm outputs of batch B; ``pool_src``: the law of i.i.d. units with no centre spread, for MaxPool.

Every op implements (the base class says what a missing map means):
- ``sym`` / ``numpy`` / ``mp``: the State map in SymPy (exact), NumPy (vectorised over broadcast parameters) and
  mpmath (working precision); ``map(state, backend)`` dispatches;
- ``width(n)``, ``shapes(n)``: output width and the (fan_in, fan_out) of its Dense layers; ``children``: the ops
  of a composite op (a residual branch);
- ``torch(n, device, dtype)``: the torch module; ``batched(h, take)``: the op on a batch of inits;
- ``noise(state, backend)``: the factor ν'/ν of an isotropic input noise's second moment through the op's Jacobian
  (Labatie 2019 Sec. 3.1; moments-well-behaved-vs-pathological.txt);
- ``keeps_share``: whether the map leaves the centre share (c, e) unchanged (so a block is an arc-cosine map);
- ``degree``: 1 if the op is positively homogeneous of degree 1 (op(λx) = λ op(x)), 0 if scale-invariant
  (op(λx) = op(x)), None otherwise: a walk whose ops all have a degree may rescale the state to q = 1;
- ``full_batch(n_data)``: the op with full-batch statistics over a dataset of n_data rows made explicit;
- ``at(i)``: the op with its array-valued parameters taken at point i (per-point walks);
- ``kernel(k)``: the map of the infinite-width kernel over a dataset (``igbsym.nngp``);
- ``empirical(t)``: the map of a layer's empirical averages over its units (finite width, ``engine.finite``);
- ``example()``: a small valid instance, for the generic tests over every op.
Composing ops composes maps (``compose``); a residual block is a composite op (``igbsym.ops.residual``).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import mpmath
import numpy as np
import sympy as sp

from ..errors import InputError, NumericalError

E_MIN = 2.2250738585072014e-308   # 1 − c below the smallest normal double: γ = c/(1 − c) (<= 4.5e307) would be
                                   # formed from a subnormal e with fewer than 53 bits
BACKENDS = ("sympy", "numpy", "mpmath")


def fail(msg):
    raise InputError(msg)


@dataclass(frozen=True)
class PoolSource:
    """i.i.d. units y = (φ(σZ) − shift)/scale over nodes with no centre spread: the law a MaxPool can pool."""

    activation: str
    a: object
    sigma: object
    shift: object = 0
    scale: object = 1


@dataclass(frozen=True)
class State:
    """The width-limit state of one unit (module docstring)."""

    q: object
    c: object
    e: object
    m: object
    gaussian: bool = True
    bn_batch: object = None
    pool_src: PoolSource | None = None
    d: object = None

    @property
    def gamma(self):
        return self.c / self.e

    @property
    def spread(self):
        """(P − m²)/q: the centres' variance around the layer mean (carried exactly where it is 0)."""
        return self.c - self.m**2 / self.q if self.d is None else self.d

    def rescaled(self) -> tuple:
        """(the state with q = 1 and m in units of √q, the factor q it was divided by)."""
        root = sp.sqrt(self.q) if isinstance(self.q, sp.Basic) else self.q ** 0.5
        return dataclasses.replace(self, q=self.q / self.q, m=self.m / root), self.q


def input_state(backend: str = "numpy") -> State:
    """N(0, I) data coordinates: unit second moment, independent inputs (c = 0), zero mean."""
    one, zero = {"sympy": (sp.S.One, sp.S.Zero), "mpmath": (mpmath.mpf(1), mpmath.mpf(0))}.get(
        backend, (np.float64(1.0), np.float64(0.0)))
    return State(one, zero, one, zero)


def sqrt(x):
    if isinstance(x, sp.Basic):
        return sp.sqrt(x)
    return mpmath.sqrt(x) if isinstance(x, mpmath.mpf) else np.sqrt(x)


def is_zero(x) -> bool:
    if isinstance(x, sp.Basic):
        return x == 0
    return bool(np.all(np.asarray(x, float) == 0)) if not isinstance(x, mpmath.mpf) else x == 0


class Op:
    """An architecture op (module docstring). Subclasses are frozen dataclasses."""

    stage = "op"          # the simulator's label of the tensor after this op ('pre', 'norm', 'act', 'pool', 'res')
    # the roles a composition asks for (tests/test_architecture.py: no dispatch on `stage` outside igbsym/ops)
    starts_layer = False  # a Dense: its output is a new layer's pre-activations
    elementwise = False   # applies one activation φ unit by unit (an Act)
    draws_weights = False  # draws a weight tensor (Dense, Conv2d, a residual block's branch)
    spatial = False       # acts on images [N, C, H, W] (Conv2d, the pools)
    degree = 1            # 1: op(λx) = λ op(x); 0: op(λx) = op(x); None: neither
    rows = None           # rows the op processes together (a BatchNorm mini-batch), else None
    keeps_share = False   # True: the map keeps (c, e); "centred": it does where the input mean is 0
    whole_data = False    # its kernel map needs the whole dataset's kernel block (a train-mode BatchNorm)
    sampled_kernel = False  # its kernel map samples each entry (QMC: MaxPool2d), so a full D × D walk is costly

    @classmethod
    def example(cls) -> "Op":
        """A small valid instance (with widths, so its torch module builds): the generic protocol tests run every
        op through it. The dataclass defaults where they are valid; ops whose defaults are not override it."""
        return cls()

    def sym(self, s: State) -> State:
        raise InputError(f"{type(self).__name__}: no closed-form (SymPy) map; use the numpy or mpmath backend")

    def numpy(self, s: State) -> State:
        raise NotImplementedError

    def mp(self, s: State) -> State:
        raise NotImplementedError

    def map(self, s: State, backend: str) -> State:
        return {"sympy": self.sym, "numpy": self.numpy, "mpmath": self.mp}[backend](s)

    def width(self, n):
        return n

    def shapes(self, n) -> list:
        """(fan_in, fan_out) of the Dense layers inside this op, for input width n."""
        return []

    @property
    def children(self) -> tuple:
        return ()

    def torch(self, n: int, device=None, dtype=None):
        raise InputError(f"{type(self).__name__}: no torch module")

    def batched(self, h, take):
        """The op on a batch of inits: h [I, N, n] → [I, N, n']; ``take()`` returns the next Dense weight
        [I, fan_in, fan_out] (Dense ops consume them in order)."""
        return self.torch(h.shape[-1], h.device, h.dtype)(h)

    def chain(self, h, gen):
        """The op on a few points with its weights integrated out exactly (the exact chain,
        ``igbsym.validation.chain``): h [I, P, n] → [I, P, n'], ``gen`` a torch.Generator. An op without weights
        is its ``batched`` map; an op with weights needs its own (Dense, Residual)."""
        if self.draws_weights:
            raise InputError(f"{type(self).__name__}: no exact-chain map (covered: Dense, Residual, and ops without "
                             "weights: activations, norms, BatchNorm over the chain's points, MaxPool, Scale)")
        return self.batched(h, None)

    def noise(self, s: State, backend: str = "numpy"):
        raise InputError(f"sensitivity: no noise map for op {type(self).__name__}")

    def full_batch(self, n_data: int) -> "Op":
        return self

    def at(self, i) -> "Op":
        """The op with every array-valued field taken at index ``i`` (scalars and tuples of ops pass through)."""
        vals = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, np.ndarray) and v.ndim:
                vals[f.name] = v[i]
            elif isinstance(v, tuple) and v and all(isinstance(o, Op) for o in v):
                vals[f.name] = tuple(o.at(i) for o in v)
        return dataclasses.replace(self, **vals) if vals else self

    def scaled_bias(self, k) -> "Op":
        """The op with every bias sd multiplied by ``k`` (Dense; composites recurse): the bias-carrying maps of a
        path that is homogeneous without biases commute with scaling the state and the biases alike."""
        vals = {f.name: tuple(o.scaled_bias(k) for o in getattr(self, f.name)) for f in dataclasses.fields(self)
                if isinstance(getattr(self, f.name), tuple) and getattr(self, f.name)
                and all(isinstance(o, Op) for o in getattr(self, f.name))}
        return dataclasses.replace(self, **vals) if vals else self

    def limit(self) -> "Op":
        """The op at infinite width (what the width-limit maps see): widths dropped."""
        return self

    def as_float(self) -> "Op":
        """The op with its mpmath-valued fields as floats (a double-precision copy of an mpmath walk's ops)."""
        vals = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, mpmath.mpf):
                vals[f.name] = float(v)
            elif isinstance(v, tuple) and v and all(isinstance(o, Op) for o in v):
                vals[f.name] = tuple(o.as_float() for o in v)
        return dataclasses.replace(self, **vals) if vals else self

    def kernel(self, k):
        raise InputError(f"{type(self).__name__}: no kernel map over a dataset (infinite-width NNGP)")

    def empirical(self, t):
        """The op on a layer's empirical averages over its units (finite width, igbsym.engine.finite): rows
        t = (G_aa, G_bb, G_ab, m_a, m_b) of two data points' second moments, cross moment and layer means, [P, 5]
        → [P, 5]. Only ops that act per sample across the units (LayerNorm, RMSNorm after φ) have one."""
        raise InputError(f"{type(self).__name__}: no finite-width map on the empirical layer averages")


def degree(ops) -> int | None:
    """The homogeneity degree of the composition of ``ops`` (applied in order): 0 once a scale-invariant op sees
    a homogeneous input, None once a non-homogeneous op sees a scale-carrying input."""
    deg = 1
    for op in ops:
        if op.degree == 0:
            deg = 0 if deg in (0, 1) else None
        elif op.degree is None and deg != 0:
            deg = None
    return deg


def compose(ops, state: State, backend: str = "numpy") -> list:
    """The states after every op, starting from ``state``."""
    out = []
    for op in ops:
        state = op.map(state, backend)
        out.append(state)
    return out


def check_state(s: State, where: str) -> State:
    """NumPy state guard: never a NaN, inf or negative γ; 1 − c below E_MIN means γ beyond the double range."""
    c, e = np.asarray(s.c, float), np.asarray(s.e, float)
    if np.isnan(c).any() or np.isnan(e).any() or np.isnan(np.asarray(s.q, float)).any():
        raise NumericalError(f"{where}: the state became NaN (q={s.q}, c={s.c}, e={s.e})")
    if (e < E_MIN).any():
        raise NumericalError(f"{where}: 1 - c = {float(e.min()):.3g} < {E_MIN:g}: gamma = c/(1-c) exceeds the double "
                             "range (use the mpmath route, e.g. igbsym eval ... --dps 50)")
    return s
