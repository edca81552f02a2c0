"""One architecture spec: a sequence of ops, each carrying its infinite-width map on the layer state.

Papers: igb-initial-guessing-bias.txt App. F.1 (layer-by-layer propagation of node centres and variances),
App. G (activations); norm-placement-bn-ln.txt Thms E.1, E.2, F.2, F.3, Sec. 4.1.3; igb-talk-slides.txt.

The same spec drives prediction (``igbsym.predict.predict(spec)``, the form ``depth.gamma``) and simulation
(``igbsym.validation.simulate.simulate(spec, ...)``, which builds the torch network from the ops).

Public API (stable; other modules build on it)
-----------------------------------------------
``SIGMA_W = √2``: the one default Kaiming gain of the library (weights N(0, σ_w²/fan_in)). It is the papers'
    setting: the IGB paper uses Kaiming Normal initialisation (He et al. 2015, σ_w² = 2) and the norm paper
    states "we adopt the standard setting σ_w² = 2" (App. C). Every default σ_w (depth.gamma, predict, NetSpec)
    is this constant.
``Spec(d_in, ops, weight_law='normal', n_classes=2, sigma_out=SIGMA_W)``: an architecture. ``ops`` is a tuple of
    ops applied to the input (dimension ``d_in``; None = infinite, for prediction only); an output
    ``Dense(n_classes, sigma_out)`` follows them implicitly. ``weight_law`` ∈ WEIGHT_LAWS (its kurtosis is
    irrelevant in the infinite-width maps, used by the simulator). Methods: ``widths`` (hidden Dense widths),
    ``shapes()`` ((fan_in, fan_out) of every Dense, output last), ``batch`` (rows processed together: the BN
    mini-batch, else 1), ``path(backend)`` (the states after every Dense, see below), ``gammas(backend)``.
``NetSpec(d_in, widths, activation='relu', a=0.01, weight_law='normal', sigma_w=SIGMA_W, pool=None, norm=None,
    placement='pre', bn_batch=None, n_classes=2, srelu_shift=None) -> Spec``: the MLP builder. Hidden layer l is
    ``Dense(widths[l], σ_w) → [norm if 'pre'] → Act → [norm if 'post'] → [MaxPool(pool)]``; the MLP's keyword
    values stay readable as attributes (``spec.activation``, ``spec.norm`` ...). ``widths`` may hold None
    (infinite width) for prediction. Bad values raise InputError (one line).
``mlp_ops(L, activation, norm, placement, a, sigma_w, B, pool)``: the hidden ops of an infinite-width MLP.
Ops (frozen dataclasses; the op protocol is the class ``Op``):
    ``Dense(width=None, sigma_w=SIGMA_W)``, ``Act(name, a=0.01, shift=None)`` (shift: srelu's subtracted
    constant), ``BatchNorm(B=None)`` (B None or 'full' = full batch, else the mini-batch size),
    ``LayerNorm()``, ``RMSNorm()``, ``MaxPool(k)``.
``State(q, c, e, m, ...)``: the width-limit state of one unit (NumPy arrays, mpf, or SymPy): q = second moment
    E[h²]; c = E[h(x)h(x')]/q for two independent inputs (the node-centre share, c = γ/(1+γ) after a Dense);
    e = 1 − c carried separately so that it keeps full relative accuracy as c → 1 (never formed as 1 − c in
    NumPy/mpmath); m = E[h] (the layer mean; 0 after a Dense). ``State.gamma`` = c/e.
    ``input_state(backend)`` is the data: (1, 0, 1, 0).
Op protocol: ``op.sym(state)``, ``op.numpy(state)``, ``op.mp(state)`` map a State in the three backends (SymPy
    exact, NumPy vectorised over broadcast parameters, mpmath at the working precision); ``op.width(n)`` is the
    op's output width for input width n; ``op.torch(n, device, dtype)`` builds the torch module (imports torch
    lazily: the core package never needs it). A new op (e.g. ``Residual(alpha, block)``) is one new subclass
    implementing these five methods; composing ops composes maps (``compose``).
``compose(ops, state, backend)`` → list of states after every op; ``gamma_path(spec_or_ops, backend)`` → γ after
    every hidden Dense (the pre-activations of hidden layer 2, 3, ... and of the output).

Maps (zero biases, zero-mean weights, N(0, I) data, all widths → ∞): Dense(σ_w): (q, c, e, m) → (σ_w² q, c, e, 0)
(the CLT makes the output Gaussian; its centre share is the input's cross moment over its second moment).
Act φ on a Gaussian state: q' = S = E φ(u)², c' = P/S with P = E[φ(u)φ(u')] = E_μ[(E_ξ φ(μ+ξ))²],
e' = V/S with V = E_μ[Var_ξ φ(μ+ξ)] (computed directly, not as S − P), m' = E φ(u). LayerNorm: centre by m and
scale: (1, (cq − m²)/(q − m²), eq/(q − m²), 0). RMSNorm: (1, c, e, m/√q). BatchNorm (full batch): each node
centred and scaled over the data: (1, 0, 1, 0); mini-batch B: the units are not Gaussian, the next activation
takes its γ from ``bn.gamma_canonical`` (relu only). MaxPool(k): k = 1 is the identity; k > 1 is known when the
pooled units have no centre spread before φ (c = 0 into φ, e.g. the first hidden layer or after full-batch BN):
the pooled units are then i.i.d. over nodes with mean and variance from ``maxpool.mean`` / ``maxpool.var``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache

import mpmath
import numpy as np
import sympy as sp

from . import activations as acts
from .errors import InputError, NumericalError
from .functions import MPMATH_MODULES, NUMPY_MODULES
from .numerics import Z_MAX, composite_gauss_legendre, normal_nodes as _nodes

SIGMA_W = math.sqrt(2.0)
NORMS = (None, "batchnorm", "layernorm", "rmsnorm")
PLACEMENTS = ("pre", "post")
WEIGHT_LAWS = {"normal": 3.0, "uniform": 1.8, "rademacher": 1.0}   # law -> kurtosis
HOMOGENEOUS = {"relu": 0, "identity": 1, "leaky_relu": None}  # φ(x) = x⁺ − s x⁻ (None: s = a)
Q_MAX = 100.0          # the nested (two-level) quadrature route's range in q (second moment entering a smooth φ)
Q_MAX_1D = 1e300       # the one-level moments' range in q: beyond it φ(√q z)² overflows on the z-grid
X_KINK = 45.0          # beyond |x| = 45 every smooth φ is constant or linear to < 3e-20 (sigmoid, SiLU: e^-45;
                       # tanh, GELU: smaller): only |x| <= 45 needs panels on the x-scale
Q_LINEAR = 1e-60       # below this q a smooth φ with φ(0) = 0 is linear to double precision
E_MIN = 1e-300         # 1 − c below this: γ = c/(1 − c) leaves the double range
SHIFT_CANCEL = 64      # srelu's mean E φ = √q/√(2π) − shift loses log2(shift/|E φ|) bits: beyond 64 (6 bits) the
                       # double routes hand the point to mpmath (families/depth.py, families/resnet.py)
TAYLOR_S = 1e-4        # inner noise sd below which Var_ξ φ(μ+ξ) is its 2-term Taylor series (rel. error ~ s⁴)
SMALL_SD = 1e-3        # below this √q, E φ(√q Z) is its Taylor series φ(0) + φ''(0)q/2 + φ''''(0)q²/8
QUAD_ERROR = ("composite 8-point Gauss-Legendre on z in [-13, 13] (panels <= min(0.25, 0.4 scale/sd)) for E[phi], "
              "E[phi^2] and both levels of P = E_mu[(E_xi phi(mu+xi))^2], V = E_mu[Var_xi phi(mu+xi)] (two-pass; "
              "2-term Taylor series in the noise sd s < 1e-4): relative error <= 1e-11 per layer for q <= 100 "
              "(one-level moments, c = 0: q <= 1e300, panels on the x-scale only where phi bends, |x| <= 45) "
              "(tests compare with nested mpmath quadrature)")


def _fail(msg):
    raise InputError(msg)


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


# --------------------------------------------------------------------------------------------- state
@dataclass(frozen=True)
class State:
    """Width-limit state of one unit (module docstring). ``bn_batch``: the units are mini-batch BN outputs of
    batch B (not Gaussian). ``pool_src``: (activation, a, sigma, shift, scale) when the units are i.i.d. over nodes
    with no centre spread, y = (φ(σZ) − shift)/scale (so a MaxPool can use the maxpool forms)."""

    q: object
    c: object
    e: object
    m: object
    gaussian: bool = True
    bn_batch: object = None
    pool_src: tuple | None = None
    d: object = None

    @property
    def gamma(self):
        return self.c / self.e

    @property
    def spread(self):
        """(P − m²)/q: the centres' variance around the layer mean (carried exactly where it is 0)."""
        return self.c - self.m**2 / self.q if self.d is None else self.d


def input_state(backend: str = "numpy") -> State:
    """N(0, I) data coordinates: unit second moment, independent inputs (c = 0), zero mean."""
    one, zero = {"sympy": (sp.S.One, sp.S.Zero), "mpmath": (mpmath.mpf(1), mpmath.mpf(0))}.get(
        backend, (np.float64(1.0), np.float64(0.0)))
    return State(one, zero, one, zero)


def _sqrt(x):
    if isinstance(x, sp.Basic):
        return sp.sqrt(x)
    return mpmath.sqrt(x) if isinstance(x, mpmath.mpf) else np.sqrt(x)


# --------------------------------------------------------------------------------------------- ops
class Op:
    """An architecture op: maps the State in SymPy, NumPy and mpmath and builds its torch module.

    Subclasses implement ``sym``, ``numpy``, ``mp``, ``torch`` and (if the width changes) ``width``."""

    def sym(self, s: State) -> State:
        raise NotImplementedError

    def numpy(self, s: State) -> State:
        raise NotImplementedError

    def mp(self, s: State) -> State:
        raise NotImplementedError

    stage = "op"          # the simulator's name for the tensor after this op ('pre', 'norm', 'act', 'pool')

    def width(self, n):
        return n

    def shapes(self, n) -> list:
        """(fan_in, fan_out) of the Dense layers inside this op, for input width n."""
        return []

    def torch(self, n: int, device=None, dtype=None):
        raise NotImplementedError

    def batched(self, h, take):
        """The op on a batch of inits: h [I, N, n] → [I, N, n']; ``take()`` returns the next Dense weight
        [I, fan_in, fan_out] (Dense ops consume them in order)."""
        return self.torch(h.shape[-1], h.device, h.dtype)(h)

    def map(self, s: State, backend: str) -> State:
        return {"sympy": self.sym, "numpy": self.numpy, "mpmath": self.mp}[backend](s)


@dataclass(frozen=True)
class Dense(Op):
    """Linear layer without bias, weights N(0, σ_w²/fan_in) (or another law of that variance)."""

    width_: int | None = None
    sigma_w: object = SIGMA_W

    def _map(self, s):
        return State(self.sigma_w**2 * s.q, s.c, s.e, 0 * s.m)

    sym = numpy = _map
    stage = "pre"

    def mp(self, s):
        return State(mpmath.mpf(self.sigma_w) ** 2 * s.q, s.c, s.e, 0 * s.m)

    def width(self, n):
        return self.width_

    def shapes(self, n):
        return [(n, self.width_)]

    def torch(self, n, device=None, dtype=None):
        from torch import nn
        return nn.Linear(n, self.width_, bias=False, device=device, dtype=dtype)

    def batched(self, h, take):
        import torch
        return torch.bmm(h, take())


def _norm_checked(s: State, name: str) -> None:
    if s.bn_batch is not None:
        _fail(f"{name} after a mini-batch BatchNorm has no width-limit map (the units are not Gaussian)")


@dataclass(frozen=True)
class _SampleNorm(Op):
    """A per-sample normalisation over the layer without affine part: the torch module of the same name."""

    stage = "norm"

    def torch(self, n, device=None, dtype=None):
        from torch import nn
        return getattr(nn, type(self).__name__)(n, elementwise_affine=False, device=device, dtype=dtype)


@dataclass(frozen=True)
class LayerNorm(_SampleNorm):
    """nn.LayerNorm without affine part: subtract the per-sample layer mean (→ m), divide by the layer std."""

    def _map(self, s):
        _norm_checked(s, "LayerNorm")
        v = s.q - s.m**2
        src = None if s.pool_src is None else s.pool_src[:3] + (s.pool_src[3] + s.m * s.pool_src[4],
                                                                s.pool_src[4] * _sqrt(v))
        return State(1 + 0 * v, s.spread * s.q / v, s.e * s.q / v, 0 * v, s.gaussian, None, src)

    sym = numpy = mp = _map


@dataclass(frozen=True)
class RMSNorm(_SampleNorm):
    """nn.RMSNorm without affine part: divide by the per-sample root mean square (→ √q); keeps the mean."""

    def _map(self, s):
        _norm_checked(s, "RMSNorm")
        r = _sqrt(s.q)
        src = None if s.pool_src is None else s.pool_src[:4] + (s.pool_src[4] * r,)
        return State(1 + 0 * s.q, s.c, s.e, s.m / r, s.gaussian, None, src, s.d)

    sym = numpy = mp = _map


@dataclass(frozen=True)
class BatchNorm(Op):
    """nn.BatchNorm1d in training mode without affine part; B None/'full' = full batch, else mini-batches of B."""

    B: object = None

    def __post_init__(self):
        if self.B == "full" or (self.B is not None and not isinstance(self.B, sp.Basic)
                                and np.all(np.isinf(np.asarray(self.B, float)))):
            object.__setattr__(self, "B", None)

    def _map(self, s, one, zero):
        _norm_checked(s, "BatchNorm")
        return State(one, zero, one, zero, self.B is None, self.B)

    def sym(self, s):
        return self._map(s, sp.S.One, sp.S.Zero)

    def numpy(self, s):
        shape = np.broadcast(np.asarray(s.q), np.asarray(s.c)).shape
        return self._map(s, np.ones(shape), np.zeros(shape))

    def mp(self, s):
        return self._map(s, mpmath.mpf(1), mpmath.mpf(0))

    def torch(self, n, device=None, dtype=None):
        from torch import nn
        return nn.BatchNorm1d(n, affine=False, track_running_stats=False, device=device, dtype=dtype)

    stage = "norm"

    def batched(self, h, take):
        """Per init, over consecutive mini-batches of B rows (one module call for all inits and batches)."""
        n_init, n, width = h.shape
        b = int(self.B)
        y = h.reshape(n_init, n // b, b, width).permute(2, 0, 1, 3).reshape(b, -1)
        y = self.torch(y.shape[1], h.device, h.dtype)(y)
        return y.reshape(b, n_init, n // b, width).permute(1, 2, 0, 3).reshape(n_init, n, width)


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
            _fail(f"MaxPool(k={self.k}) is predicted only where the pooled units have no centre spread before the "
                  "activation (first hidden layer, or after full-batch BatchNorm); deeper pooled layers need the "
                  "k-node centre integral")
        from .registry import get
        act, a, sigma, shift, scale = s.pool_src
        kw = dict(k=self.k, sigma=sigma, activation=act)
        if backend == "sympy":
            mean, var = (get(f"maxpool.{n}").case(k=self.k, activation=act) for n in ("mean", "var"))
            if not all(isinstance(v, sp.Basic) for v in (mean, var)):
                _fail(f"MaxPool(k={self.k}) with {act}: no closed form (use the numpy or mpmath backend)")
            sig = sp.Symbol("sigma", positive=True)
            mean, var = mean.subs(sig, sigma), var.subs(sig, sigma)
        elif backend == "numpy":
            mean, var = (get(f"maxpool.{n}").numpy(**kw) for n in ("mean", "var"))
        else:
            mean, var = (get(f"maxpool.{n}").mp(mpmath.mp.dps, **kw) for n in ("mean", "var"))
        mean, var = (mean - shift) / scale, var / scale**2
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


# --------------------------------------------------------------------------------------------- activations
def arccos_map(c, s):
    """k_s(c) = E[φ(u)φ(u')]/E[φ(u)²] for φ(x) = max(x, 0) + s·min(x, 0), corr(u, u') = c (SymPy)."""
    r = (1 - s) ** 2 / (1 + s**2)
    return c + r * (sp.sqrt(1 - c**2) - c * sp.acos(c)) / sp.pi


def sin_minus_tcos(t):
    """sin t − t cos t (NumPy), with its Taylor series for t < 0.1 (no cancellation)."""
    t = np.asarray(t, float)
    t2 = t * t
    series = t * t2 * (1 / 3 - t2 * (1 / 30 - t2 * (1 / 840 - t2 * (1 / 45360 - t2 / 3991680))))
    return np.where(t < 0.1, series, np.sin(t) - t * np.cos(t))


def _mp_sin_minus_tcos(t):
    """sin t − t cos t at the working precision; for t < 1e-3 its series Σ_k≥1 (−1)^(k+1) 2k t^(2k+1)/(2k+1)!
    summed directly until a term is below the precision (mpmath.nsum costs ~1 ms: minutes over 1e5 layers)."""
    if t < mpmath.mpf("1e-3"):
        t2, term, total, k = t * t, t ** 3 / 3, mpmath.mpf(0), 1   # k = 1 term: 2 t³/3! = t³/3
        eps = mpmath.eps * abs(term)
        while abs(term) > eps:
            total += term
            k += 1
            term = -term * t2 * k / ((k - 1) * (2 * k) * (2 * k + 1))
        return total
    return mpmath.sin(t) - t * mpmath.cos(t)


def slope_ratio(s):
    """r = (1 − s)²/(1 + s²) without overflow for huge |s| (NumPy or mpmath)."""
    if isinstance(s, mpmath.mpf):
        return ((1 - s) / mpmath.hypot(1, s)) ** 2
    s = np.asarray(s, float)
    return ((1 - s) / np.hypot(1.0, s)) ** 2


@lru_cache(maxsize=None)
def _derivatives(name: str, module: str):
    """The derivatives of orders 1-4 of a smooth activation, lambdified for ``numpy`` or ``mpmath``."""
    x = acts.x_
    ds = [sp.diff(acts.get(name).expr, x, k) for k in (1, 2, 3, 4)]
    return sp.lambdify(x, ds, modules=NUMPY_MODULES if module == "numpy" else MPMATH_MODULES)


@dataclass(frozen=True)
class Act(Op):
    """Activation φ by name (igbsym.activations); ``a`` the leaky slope, ``shift`` srelu's constant (None: the
    nominal ReLU mean 1/√(2π) of a unit-variance input, igb.gamma's convention after a norm)."""

    name: str = "relu"
    a: object = 0.01
    shift: object = None
    stage = "act"

    def __post_init__(self):
        if self.name not in acts.names():
            _fail(f"unknown activation {self.name!r}; allowed: {', '.join(acts.names())}")

    @property
    def slope(self):
        return self.a if self.name == "leaky_relu" else HOMOGENEOUS.get(self.name)

    @property
    def odd(self) -> bool:
        return acts.get(self.name).odd

    def _shift(self, backend):
        if self.shift is not None:
            return self.shift
        return {"sympy": 1 / sp.sqrt(2 * sp.pi), "mpmath": 1 / mpmath.sqrt(2 * mpmath.pi)}.get(
            backend, 1 / math.sqrt(2 * math.pi))

    def torch(self, n, device=None, dtype=None):
        from torch import nn
        import torch.nn.functional as F
        name, a, k = self.name, self.a, (None if self.name != "srelu" else float(self._shift("numpy")))
        fn = {"identity": lambda h: h, "relu": F.relu, "leaky_relu": lambda h: F.leaky_relu(h, a),
              "tanh": lambda h: h.tanh(), "erf": lambda h: h.erf(), "sigmoid": lambda h: h.sigmoid(),
              "gelu": F.gelu, "silu": F.silu, "srelu": lambda h: F.relu(h) - k}[name]

        class Activation(nn.Module):
            def forward(self, h):
                return fn(h)

            def extra_repr(self):
                return name
        return Activation()

    # --- the map in three backends ---
    def _src(self, s, sigma):
        return (self.name, self.a, sigma, self._shift_for_src(), 1) if s.gaussian and _is_zero(s.c) else None

    def _shift_for_src(self):
        return 0

    def _bn_minibatch(self, s, backend):
        from .registry import get
        if self.name != "relu" and not self.odd:
            _fail(f"bn.gamma_canonical covers relu only; activation={self.name} after a mini-batch BatchNorm "
                  "(finite B) has no prediction (use B=inf)")
        if self.odd:
            g = 0
        elif backend == "sympy":
            _fail("mini-batch BatchNorm: no closed form in the depth recursion (numpy or mpmath backend)")
        elif backend == "numpy":
            g = get("bn.gamma_canonical").numpy(B=s.bn_batch)
        else:
            g = get("bn.gamma_canonical").mp(mpmath.mp.dps, B=s.bn_batch)
        one = 1 + 0 * g
        return State(one, g / (1 + g), one / (1 + g), 0 * g, False)

    def sym(self, s):
        if s.bn_batch is not None:
            return self._bn_minibatch(s, "sympy")
        if not s.gaussian:
            _fail(f"activation {self.name} on non-Gaussian units (after a max-pool or mini-batch BN) has no map")
        if self.name in HOMOGENEOUS or self.name == "srelu":
            slope = sp.S.Zero if self.name == "srelu" else sp.sympify(self.slope)
            S = s.q * (1 + slope**2) / 2
            P = S * arccos_map(s.c, slope)
            M = (1 - slope) * sp.sqrt(s.q) / sp.sqrt(2 * sp.pi)
            if self.name == "srelu":
                k = self._shift("sympy")
                P, S, M = P - 2 * k * M + k**2, S - 2 * k * M + k**2, M - k
            return State(S, P / S, 1 - P / S, M, False, None, self._src(s, sp.sqrt(s.q)))
        _fail(f"activation {self.name}: no closed-form map (use the numpy or mpmath backend)")

    def numpy(self, s):
        if s.bn_batch is not None:
            return self._bn_minibatch(s, "numpy")
        if not s.gaussian:
            _fail(f"activation {self.name} on non-Gaussian units (after a max-pool or mini-batch BN) has no map")
        q, c, e = (np.asarray(v, float) for v in (s.q, s.c, s.e))
        if self.name in HOMOGENEOUS or self.name == "srelu":
            out = _np_homogeneous(self, q, c, e)
        elif self.odd:
            out = _np_odd(self, q, c, e)
        else:
            out = _np_smooth(self, q, c, e)
        return replace(out, pool_src=self._src(s, np.sqrt(q)))

    def mp(self, s):
        if s.bn_batch is not None:
            return self._bn_minibatch(s, "mpmath")
        if not s.gaussian:
            _fail(f"activation {self.name} on non-Gaussian units (after a max-pool or mini-batch BN) has no map")
        if self.name in HOMOGENEOUS or self.name == "srelu":
            out = _mp_homogeneous(self, s.q, s.c, s.e)
        else:
            out = _mp_smooth(self, s.q, s.c, s.e)
        return replace(out, pool_src=self._src(s, mpmath.sqrt(s.q)))


def _is_zero(x) -> bool:
    if isinstance(x, sp.Basic):
        return x == 0
    return bool(np.all(np.asarray(x, float) == 0)) if not isinstance(x, mpmath.mpf) else x == 0


def _np_spread_ratio(slope, r, c, kc):
    """(P − M²)/S = k(c) − r/π for φ = x⁺ − s x⁻, r = (1 − s)²/(1 + s²). For c <= 1/2 in the form
    c(1 + s)²/(2(1 + s²)) + (r/π)(c·arcsin c − c²/(1 + √(1 − c²))), a sum with no cancellation at c → 0 (k(c) − r/π
    left an absolute 1e-17 where the value is c/2: srelu at α = 1e-123 drove c to 1e-266; (1 + s)² is taken from s,
    not as 1 − r/2, which for φ = |x| is a rounding residue where the value is c²/π); above 1/2, where arcsin is
    ill-conditioned near 1, the difference k(c) − r/π loses at most a factor 9 (φ = |x|, r = 2; 2.1 for relu)."""
    c = np.asarray(c, float)
    small = np.minimum(c, 0.5)
    series = (small * ((1 + slope) / np.hypot(1.0, slope)) ** 2 / 2
              + r / np.pi * (small * np.arcsin(small) - small**2 / (1 + np.sqrt(1 - small**2))))
    return np.where(c <= 0.5, np.maximum(series, 0.0), np.maximum(kc - r / np.pi, 0.0))


def _mp_spread_ratio(slope, r, c, kc):
    """_np_spread_ratio at the working precision."""
    if c <= mpmath.mpf(1) / 2:
        return (c * ((1 + slope) / mpmath.hypot(1, slope)) ** 2 / 2
                + r / mpmath.pi * (c * mpmath.asin(c) - c**2 / (1 + mpmath.sqrt(1 - c**2))))
    return kc - r / mpmath.pi


def _np_homogeneous(op, q, c, e):
    """φ = x⁺ − s x⁻ (and srelu = relu − k): closed forms, with e' = e − r(sin t − t cos t)/π, t = arccos c
    computed from e (accurate as c → 1); srelu keeps V and P − M² of relu (a shift moves the mean only)."""
    slope = 0.0 if op.name == "srelu" else np.asarray(op.slope, float)
    r = slope_ratio(slope)
    t = 2 * np.arcsin(np.sqrt(np.clip(e / 2, 0.0, 1.0)))
    S = q * (1 + slope**2) / 2
    M = (1 - slope) * np.sqrt(q / (2 * np.pi))
    kc = np.where(c == 0, r / np.pi, c + r * (np.sin(t) - t * c) / np.pi)   # k(0) = r/π exactly
    ke = np.maximum(e - r * sin_minus_tcos(t) / np.pi, 0.0)
    spread = S * _np_spread_ratio(slope, r, c, kc)                          # P − M² >= 0, shift-invariant
    if op.name != "srelu":
        return State(S, kc + 0 * S, ke + 0 * S, M + 0 * S, False, d=spread / S)
    k = np.asarray(op._shift("numpy"), float)
    V, M = S * ke, M - k
    S = (S - (M + k) ** 2) + M * M                                    # Var φ + (E φ)²: a sum of terms >= 0
    return State(S, (M * M + spread) / S, V / S, M, False, d=spread / S)


def _mp_homogeneous(op, q, c, e):
    slope = mpmath.mpf(0) if op.name == "srelu" else mpmath.mpf(op.slope)
    r = slope_ratio(slope)
    t = 2 * mpmath.asin(mpmath.sqrt(e / 2))
    S = q * (1 + slope**2) / 2
    # √q/√(2π): the rounding of srelu's shift σ/√(2π), so at q = σ² E φ = 0 exactly (√(q/2π) left 1e-51 at 50 digits)
    M = (1 - slope) * mpmath.sqrt(q) / mpmath.sqrt(2 * mpmath.pi)
    kc = r / mpmath.pi if c == 0 else c + r * (mpmath.sin(t) - t * c) / mpmath.pi
    ke = e - r * _mp_sin_minus_tcos(t) / mpmath.pi
    spread = S * _mp_spread_ratio(slope, r, c, kc)
    if op.name != "srelu":
        return State(S, kc, ke, M, False, d=spread / S)
    k = op._shift("mpmath") if op.shift is None else mpmath.mpf(op.shift)
    V, M = S * ke, M - k
    S = (S - (M + k) ** 2) + M * M
    return State(S, (M * M + spread) / S, V / S, M, False, d=spread / S)


def _np_odd(op, q, c, e):
    """Odd φ: M = 0, and from c = 0 (the only reachable value: the data are symmetric) P = 0 exactly."""
    if np.any(c != 0):
        return _np_smooth(op, q, c, e)
    S = _np_1d(op, q)[1]
    zero = np.zeros(np.shape(S))
    return State(S, zero, zero + 1, zero, False, d=zero)


def _np_1d(op, q):
    """(M, S) = (E φ(u), E φ(u)²), u ~ N(0, q), vectorised over q."""
    f = acts.get(op.name).numpy
    q = np.asarray(q, float)
    _check_q(q)
    M, S = np.empty(q.shape), np.empty(q.shape)
    a = np.broadcast_to(np.asarray(op.a, float), q.shape)
    for i in np.ndindex(q.shape):
        sd = math.sqrt(q[i])
        z, w = _kink_nodes(sd)
        y = f(sd * z, a[i], 0.0)
        M[i] = 0.0 if op.odd else y @ w
        S[i] = (y * y) @ w
    return M, S


def _check_q(q, q_max=Q_MAX_1D, route="quadrature"):
    if not np.all(np.isfinite(q)) or np.any(q > q_max):
        bad = np.asarray(q)[~(np.isfinite(q) & (q <= q_max))].flat[0]
        raise NumericalError(f"the second moment q = {bad:.3g} entering a smooth activation is outside the "
                             f"{route} route's range q <= {q_max:g} (sigma_w too large for this depth)")


def _kink_nodes(sd):
    """(z, w) with E[φ(sd·Z)] ≈ φ(sd z) @ w at a cost independent of sd: panels <= 0.4/sd (the x-scale 1 of φ) on
    |sd z| <= X_KINK, where φ bends, and <= 0.25 elsewhere, where φ(sd z) is constant or linear in z."""
    h = 0.4 / max(sd, 1e-300)
    zk = X_KINK / max(sd, 1e-300)
    if h >= 0.25 or zk >= Z_MAX:
        return _nodes(min(0.25, h))
    outer = np.linspace(zk, Z_MAX, int(np.ceil((Z_MAX - zk) / 0.25)) + 1)
    inner = np.linspace(-zk, zk, int(np.ceil(2 * zk / h)) + 1)
    z, w = composite_gauss_legendre(np.concatenate([-outer[::-1], inner[1:-1], outer]))
    return z, w * np.exp(-z * z / 2) / np.sqrt(2 * np.pi)


GH_MAX = 128      # NumPy's Gauss-Hermite nodes are accurate in double precision up to this order


@lru_cache(maxsize=None)
def _hermite_nodes(n: int):
    z, w = np.polynomial.hermite_e.hermegauss(n)
    return z, w / math.sqrt(2 * math.pi)


def _level_nodes(name, sd, panel):
    """(z, w) for one Gaussian level E[h(sd·Z)] of the nested NumPy route: the n-point Gauss–Hermite rule where
    its error bound e^{−(d/sd)√(2n)} (h analytic in |Im x| < d, ``_STRIP``) is below 1e-18 with n <= GH_MAX
    (0.01 <= sd <= ~1.2: ~80² instead of 832² nodes a layer), else composite Gauss–Legendre with panels <= ``panel``."""
    n = int((41.5 * sd / _STRIP.get(name, math.pi / 2)) ** 2 / 2) + 8
    return _hermite_nodes(-(-n // 8) * 8) if n <= GH_MAX and sd >= 0.01 else _nodes(panel)


def _np_smooth(op, q, c, e):
    """(S, P/S, V/S, M) by quadrature, pointwise over broadcast (q, c, e, a)."""
    q, c, e, a = np.broadcast_arrays(q, c, e, np.asarray(op.a, float))
    _check_q(q)
    out = np.empty((5,) + q.shape)
    for i in np.ndindex(q.shape):
        out[(slice(None),) + i] = _np_smooth_cached(op.name, float(q[i]), float(c[i]), float(e[i]), float(a[i]))
    S, c2, e2, M, d2 = out
    return State(S, c2, e2, M, False, d=d2)


@lru_cache(maxsize=4096)
def _np_smooth_cached(name, q, c, e, a):
    """``_np_smooth_point`` memoised on its (exact float) arguments: a layer after a norm, or at a fixed point of
    the block map, repeats its input state, so a deep path evaluates the quadrature once, not once a layer."""
    return _np_smooth_point(Act(name, a), acts.get(name).numpy, _derivatives(name, "numpy"), q, c, e, a)


def _np_smooth_point(op, f, derivs, q, c, e, a):
    """(S, c', e', M, d') at one point: c' = P/S, e' = V/S, d' = (P − M²)/S."""
    sd = math.sqrt(q)
    f0 = float(f(np.float64(0.0), a, 0.0))
    g1, g2, g3, g4 = (float(v) for v in derivs(np.float64(0.0)))
    if q < Q_LINEAR and f0 == 0.0:
        # φ(x) = g1 x + g2 x²/2 to relative 1e-60 on the scale √q; per unit q, P = g2² q/4 + c g1² (M² + Mehler's
        # first term) and V = e g1². M² is the whole of c' where c = 0 (silu at sigma_w = 4e-45 gave 0 for 4e-90)
        p, v = g2 * g2 * q / 4 + c * g1 * g1, e * g1 * g1
        return g1 * g1 * q, p / (p + v), v / (p + v), g2 * q / 2, c * g1 * g1 / (p + v)
    z, w = _kink_nodes(sd)
    y = f(sd * z, a, 0.0)
    M = 0.0 if op.odd else (y @ w if sd >= SMALL_SD else f0 + g2 * q / 2 + g4 * q * q / 8)  # Taylor: no cancellation
    S = (y * y) @ w
    if c == 0:
        if sd < TAYLOR_S:                     # Var φ(√q Z) by its Taylor series: no cancellation as q → 0
            V = q * g1 * g1 + q * q * (g2 * g2 / 2 + g1 * g3)
        else:
            V = ((y - M) ** 2) @ w
        return _on_constraint(S, M * M, V, M, 0.0)
    s, sdm = math.sqrt(e * q), math.sqrt(c * q)
    _check_q(q, Q_MAX, "nested quadrature")
    zo, wo = _level_nodes(op.name, sdm, min(0.25, 0.4 * max(s, 1.0) / sdm))
    mu = sdm * zo
    if s < TAYLOR_S:
        f1, f2, f3, _ = (np.asarray(v, float) + 0 * mu for v in derivs(mu))
        V = (s * s * f1 * f1 + s**4 * (f2 * f2 / 2 + f1 * f3)) @ wo
        if c > 0.5:
            return S, (S - V) / S, V / S, M, (S - V - M * M) / S
        # c <= 1/2 forces q = s²/(1 − c) < 2e-8: P − M² = Σ_k (cq)^k/k! (E φ^(k)(u))² (Mehler), error (cq)^4
        ak = [(np.asarray(v, float) + 0 * z) @ w for v in derivs(sd * z)[:3]]
        D = sum((c * q) ** k / math.factorial(k) * ak[k - 1] ** 2 for k in (1, 2, 3))
        return _on_constraint(S, M * M + D, V, M, D)
    zi, wi = _level_nodes(op.name, s, min(0.25, 0.4 / s))
    P = V = D = 0.0
    step = max(1, (1 << 21) // zi.size)
    for lo in range(0, mu.size, step):
        vals = f(mu[lo:lo + step, None] + s * zi, a, 0.0)
        m = vals @ wi
        P += (m * m) @ wo[lo:lo + step]
        D += ((m - M) ** 2) @ wo[lo:lo + step]
        V += (((vals - m[:, None]) ** 2) @ wi) @ wo[lo:lo + step]
    return _on_constraint(S, P, V, M, D)


def _on_constraint(S, P, V, M, D):
    """(S, c', e', M, d') with c' = P/(P + V), e' = V/(P + V), d' = D/(P + V): P and V come from separate
    quadratures, and P + V = S holds only to their error; the block map is unstable off the line c + e = 1
    (a drift δ grows by d log S/d log q > 1 a layer: gelu + LayerNorm went from the fixed point γ = 3.17 to 37
    by layer 300), so the state is put back on it. γ' = P/V is unchanged."""
    T = P + V
    return S, P / T, V / T, M, D / T


def _mp_gauss(f, sd):
    """E[f(sd·Z)] by Gauss–Legendre quadrature in z on [−∞, −8, −3, 0, 3, 8, ∞], plus ±x/sd for x = 1, 5, 15, 45
    where φ bends on its x-scale 1 (sd > 1; smooth integrands)."""
    dens = 1 / mpmath.sqrt(2 * mpmath.pi)
    pts = {mpmath.mpf(p) for p in (-8, -3, 0, 3, 8)}
    if sd > 1:
        pts |= {sgn * x / sd for x in (1, 5, 15, X_KINK) for sgn in (-1, 1)}
    return mpmath.quad(lambda z: f(sd * z) * dens * mpmath.exp(-z * z / 2),
                       [-mpmath.inf] + sorted(pts) + [mpmath.inf], method="gauss-legendre")


# Half-width d of the strip |Im x| < d in which φ is analytic (tanh: poles at ±iπ/2; sigmoid, SiLU: ±iπ; GELU and erf
# are entire, taken as π: their growth e^{d²/2} on the strip is covered by the rules' 8 extra digits).
_STRIP = {"tanh": math.pi / 2, "sigmoid": math.pi, "silu": math.pi, "gelu": math.pi, "erf": math.pi}
GH_SCALE = 0.3         # a Gaussian level of the nested mp integral with sd below this uses Gauss-Hermite, else a trapezoid


@lru_cache(maxsize=None)
def _mp_hermite(n: int, dps: int):
    """The n-point Gauss–Hermite rule for E[f(Z)], Z ~ N(0, 1), at ``dps`` digits: Newton on He_n from NumPy's
    nodes; weights (n − 1)!/(n He_{n−1}(z)²)."""
    with mpmath.workdps(dps + 10):
        zs, ws = [], []
        for x0 in np.polynomial.hermite_e.hermegauss(n)[0][n // 2:]:
            z = mpmath.mpf(float(x0))
            for _ in range(100):
                p0, p1 = mpmath.mpf(1), z
                for k in range(1, n):
                    p0, p1 = p1, z * p1 - k * p0
                step = p1 / (n * p0)
                z -= step
                if abs(step) <= mpmath.mpf(10) ** (-dps - 8) * (1 + abs(z)):
                    break
            p0, p1 = mpmath.mpf(1), z
            for k in range(1, n):
                p0, p1 = p1, z * p1 - k * p0
            w = mpmath.factorial(n - 1) / (n * p0 * p0)
            zs += [z] if z == 0 else [z, -z]
            ws += [w] if z == 0 else [w, w]
    return zs, ws


def _mp_rules(d, sd):
    """Quadrature parameters for a Gaussian level of sd ``sd`` against a factor analytic in |Im| < d, accurate to
    10^-(dps+8): (T, z_max, the trapezoid step, the Gauss–Hermite order)."""
    T = mpmath.log(10) * (mpmath.mp.dps + 8)
    # trapezoid: error ~ e^{-2πd/h} from the strip and e^{-2π² sd²/h²} from the Gaussian (aliasing)
    h = min(2 * mpmath.pi * d / T, mpmath.pi * sd * mpmath.sqrt(2 / T))
    # Gauss–Hermite on f(sd z): error ~ e^{-(d/sd)√(2n)} (measured for sigmoid: conservative); for small sd the
    # remainder n!/(2n)!·E f^(2n) with |f^(k)| <= k!(sd/d)^k on the strip, n!(sd/d)^(2n) (measured: GELU² at sd = 0.1
    # has 5.7e-39 at n = 20, 5e-59 at 30, as this predicts). It is searched past the first estimate, which was the
    # minimum 20 there: the 1-d moments at q = 0.01 held 38 digits at 50 (and q = 0.003 48 at 100)
    n = max(20, int(((T * sd / d) ** 2) / 2) + 1)
    if sd < d / 4:
        lg, log_fac, t = float(mpmath.log(d / sd)), 0.0, float(T) + 3
        for m in range(1, 10 * n + 200):
            log_fac += math.log(m)
            if m >= 4 and 2 * m * lg - log_fac >= t:
                n = m
                break
    return T, mpmath.sqrt(2 * T) + 1, h, n


def _mp_level(h, d, sd):
    """E[h(sd·Z)], Z ~ N(0, 1), h analytic in |Im x| < d, by a fixed rule accurate to 10^-(dps+8) (``_mp_rules``):
    Gauss–Hermite if sd < GH_SCALE, else the trapezoid rule with step h ≤ min(2πd/T, π sd √(2/T))."""
    _, zt, step, n = _mp_rules(d, sd)
    if sd < GH_SCALE:
        zo, wo = _mp_hermite(n, mpmath.mp.dps)
        return mpmath.fdot(wo, [h(sd * z) for z in zo])
    N = int(sd * zt / step) + 1
    dens = 1 / mpmath.sqrt(2 * mpmath.pi)
    w = [step * dens / sd * mpmath.exp(-(i * step / sd) ** 2 / 2) for i in range(N + 1)]
    return w[0] * h(mpmath.mpf(0)) + mpmath.fsum(w[i] * (h(i * step) + h(-i * step)) for i in range(1, N + 1))


def _mp_outer(g, d, sdm):
    """E_μ[g(μ)²], μ ~ N(0, sdm²), g analytic in |Im μ| < d."""
    return _mp_level(lambda mu: g(mu) ** 2, d, sdm)


def _mp_nested(f, d, sdm, s, inner=None):
    """P = E_μ[(E_ξ f(μ + ξ))²], μ ~ N(0, sdm²), ξ ~ N(0, s²) at the working precision (f analytic in |Im x| < d;
    ``inner``: E_ξ f(μ + ξ) in closed form, if known). The nested mpmath.quad cost 50-250 s a layer; here each level
    uses a fixed rule accurate to 10^-(dps+8) by its a-priori error bound (``_mp_rules``): a level whose sd is below
    GH_SCALE uses Gauss–Hermite (f(μ + s z) is analytic in a z-strip of half-width d/s); otherwise the trapezoid
    rule on a uniform grid (exponentially accurate for integrands analytic in a strip and Gaussian-decaying); when
    both levels use the trapezoid they share one grid, so f is evaluated once per node and the inner integral is a
    banded discrete convolution. mp routes at two precisions use different rules, so their agreement (the domain
    test's convergence check) also checks the rules."""
    dens = 1 / mpmath.sqrt(2 * mpmath.pi)
    _, zt, h_o, n_o = _mp_rules(d, sdm)
    _, _, h_i, n_i = _mp_rules(d, s)
    if inner is not None:
        return _mp_outer(inner, d, sdm)
    if s < GH_SCALE:
        zi, wi = _mp_hermite(n_i, mpmath.mp.dps)
        return _mp_outer(lambda mu: mpmath.fdot(wi, [f(mu + s * z) for z in zi]), d, sdm)
    band = lambda h: int(s * zt / h) + 1  # noqa: E731
    kern = lambda h: [h * dens / s * mpmath.exp(-(k * h / s) ** 2 / 2) for k in range(-band(h), band(h) + 1)]  # noqa
    if sdm < GH_SCALE:
        zo, wo = _mp_hermite(n_o, mpmath.mp.dps)
        B, vals = band(h_i), {}

        def g(mu):
            j0 = int(mpmath.nint(mu / h_i))
            js = range(j0 - B, j0 + B + 1)
            for j in js:
                if j not in vals:
                    vals[j] = f(j * h_i)
            return mpmath.fdot([h_i * dens / s * mpmath.exp(-((j * h_i - mu) / s) ** 2 / 2) for j in js],
                               [vals[j] for j in js])
        return mpmath.fdot(wo, [g(sdm * z) ** 2 for z in zo])
    h = min(h_o, h_i)
    N, B = int(sdm * zt / h) + 1, band(h)
    K = kern(h)
    phi = [f(j * h) for j in range(-N - B, N + B + 1)]          # phi[j + N + B] = f(j h)
    w = [h * dens / sdm * mpmath.exp(-(i * h / sdm) ** 2 / 2) for i in range(-N, N + 1)]
    g = [mpmath.fdot(K, phi[i:i + 2 * B + 1]) for i in range(2 * N + 1)]   # g(i h) for i = -N..N
    return mpmath.fdot(w, [x * x for x in g])


def _mp_gelu_inner(mu, s):
    """E_ξ[GELU(μ + ξ)], ξ ~ N(0, s²), in closed form: μΦ(μ/τ) + s²φ(μ/τ)/τ, τ = √(1 + s²) (E Φ(μ + ξ) = Φ(μ/τ);
    Stein's lemma E[ξ Φ(μ + ξ)] = s² E[φ(μ + ξ)]); checked against the quadrature in tests/test_spec.py."""
    tau = mpmath.sqrt(1 + s * s)
    return mu * mpmath.ncdf(mu / tau) + s * s * mpmath.npdf(mu / tau) / tau


@lru_cache(maxsize=None)
def _mp_moments(name, a, q, dps, which):
    """Gaussian moments of φ on u ~ N(0, q) at ``dps`` digits, cached (at a fixed q, after a norm or at q's fixed
    point, every layer reuses them): ``which`` = "MS": (E φ, E φ²); "V": Var φ(u); "taylor": (A, C) =
    (E φ'(u)², E φ''(u)²/2), the constants of the small-noise series V = s²A − s⁴C (the 2-term Taylor series in the
    noise sd s, averaged over μ ~ N(0, q − s²) and expanded in s² by the heat equation; at c = 0 it is Var φ(√q Z));
    "mehler": (E φ^(k)(u), k = 1..4), the coefficients of Mehler's series P − M² = Σ_k (cq)^k/k! (E φ^(k)(u))².
    q <= 100: the fixed rules of ``_mp_level``; beyond, mpmath.quad with breakpoints where φ bends (``_mp_gauss``).
    E φ at q < 10^(−dps/2−2): its Taylor series φ(0) + φ''(0)q/2 + φ''''(0)q²/8 (the sum over ±z would cancel)."""
    fn = acts.get(name).mp
    f = lambda x: fn(x, a, 0)  # noqa: E731
    with mpmath.workdps(dps):
        sd = mpmath.sqrt(q)
        d = _STRIP.get(name, math.pi / 2)
        expect = (lambda h: _mp_level(h, d, sd)) if q <= Q_MAX else (lambda h: _mp_gauss(h, sd))
        der = _derivatives(name, "mpmath")
        if which == "taylor":
            return expect(lambda x: der(x)[0] ** 2), expect(lambda x: der(x)[1] ** 2) / 2
        if which == "mehler":
            return tuple(expect(lambda x, k=k: der(x)[k]) for k in range(4))
        if acts.get(name).odd:
            M = mpmath.mpf(0)
        elif q < mpmath.mpf(10) ** (-(dps // 2) - 2):
            _, d2, _, d4 = _derivatives(name, "mpmath")(mpmath.mpf(0))
            M = f(mpmath.mpf(0)) + d2 * q / 2 + d4 * q * q / 8
        else:
            M = expect(f)
        return (M, expect(lambda x: f(x) ** 2)) if which == "MS" else expect(lambda x: (f(x) - M) ** 2)


def _mp_smooth(op, q, c, e):
    """The smooth φ map at the working precision: 1-d moments by mpmath quadrature (cached per q), the nested
    P = E_μ[(E_ξ φ(μ+ξ))²] by ``_mp_nested`` (GELU: inner level in closed form), V = S − P at extra precision (the
    digits lost to the cancellation), or V = s²A − s⁴C when s² < 10^(−dps/2−2) (relative error ~ s⁴ < 10^(−dps))."""
    fn, a = acts.get(op.name).mp, mpmath.mpf(op.a)
    f = lambda x: fn(x, a, 0)  # noqa: E731
    dps = mpmath.mp.dps
    s2 = e * q
    taylor = s2 < mpmath.mpf(10) ** (-(dps // 2) - 2)
    q_max, route = (Q_MAX, "nested quadrature") if c != 0 else (Q_MAX_1D, "quadrature")
    if not (mpmath.isfinite(q) and q <= q_max):
        raise NumericalError(f"the second moment q = {mpmath.nstr(q, 3)} entering a smooth activation is outside the "
                             f"{route} route's range q <= {q_max:g} (sigma_w too large for this depth)")
    # V/S ~ s²/q: the digits S − P loses; the 1-d sums lose up to log10(1/sd) < dps/4 + 1 to the ±z cancellation
    extra = 10 + dps // 4 + (0 if (c == 0 or taylor) else 10 * (max(0, int(-mpmath.log10(s2 / q))) // 10 + 1))
    with mpmath.workdps(dps + extra):
        q = +q
        M, S = _mp_moments(op.name, a, q, dps + extra, "MS")
        if taylor:
            A, C = _mp_moments(op.name, a, q, dps + extra, "taylor")
            V = s2 * A - s2 * s2 * C
            # P = M² + D where P ≪ S, not S − V: at small q, M² ~ q² and S − V would cancel every digit (gelu at
            # sigma_w = 1e-20 lost 8 digits at 30, silu at 1e-320 gave 1.4e-48 for 2.5e-641)
            if c == 0:
                D = mpmath.mpf(0)
                P = M * M
            elif c > 0.5:
                P = S - V
                D = P - M * M
            else:   # c <= 1/2 forces q = s²/(1 − c) tiny: Mehler's series, remainder (cq)^5 < 10^(-2 dps) relative
                ak = _mp_moments(op.name, a, q, dps + extra, "mehler")
                D = mpmath.fsum((c * q) ** k / mpmath.factorial(k) * ak[k - 1] ** 2 for k in (1, 2, 3, 4))
                P = M * M + D
        elif c == 0:
            V, D = _mp_moments(op.name, a, q, dps + extra, "V"), mpmath.mpf(0)
            P = M * M
        else:
            # c = 1 − e from the accurately carried e (c itself holds dps digits: V = S − P would lose them)
            s, sdm = mpmath.sqrt(s2), mpmath.sqrt((1 - e if e < 0.5 else c) * q)
            if op.name == "gelu":
                P = _mp_nested(None, _STRIP["gelu"], sdm, s, inner=lambda mu: _mp_gelu_inner(mu, s))
            else:
                P = _mp_nested(f, _STRIP.get(op.name, math.pi / 2), sdm, s)
            V, D = S - P, P - M * M
        return State(+S, +(P / S), +(V / S), +M, False, d=+(D / S))


# --------------------------------------------------------------------------------------------- composition
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


@dataclass(frozen=True)
class Spec:
    """An architecture (module docstring): input dimension, ops, weight law, output classes."""

    d_in: int | None
    ops: tuple
    weight_law: str = "normal"
    n_classes: int = 2
    sigma_out: object = SIGMA_W
    mlp: dict | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "ops", tuple(self.ops))
        if self.d_in is not None and (not _is_int(self.d_in) or self.d_in < 1):
            _fail(f"NetSpec: d_in must be a positive integer, got {self.d_in!r}")
        if self.weight_law not in WEIGHT_LAWS:
            _fail(f"NetSpec: unknown weight_law {self.weight_law!r}; allowed: {', '.join(WEIGHT_LAWS)}")
        if not _is_int(self.n_classes) or self.n_classes < 2:
            _fail(f"NetSpec: n_classes must be an integer >= 2, got {self.n_classes!r}")
        if not all(isinstance(op, Op) for op in self.ops):
            _fail("Spec: ops must be Op instances (Dense, Act, BatchNorm, LayerNorm, RMSNorm, MaxPool, ...)")

    def __getattr__(self, name):
        mlp = self.__dict__.get("mlp")
        if mlp is not None and name in mlp:
            return mlp[name]
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}"
                             + ("" if mlp is None else " (an MLP spec has " + ", ".join(mlp) + ")"))

    @property
    def widths(self) -> tuple:
        return tuple(op.width_ for op in self.ops if isinstance(op, Dense))

    @property
    def batch(self) -> int:
        """Rows processed together: the BN mini-batch size, else 1."""
        bs = {op.B for op in self.ops if isinstance(op, BatchNorm) and op.B is not None}
        return int(next(iter(bs))) if bs else 1

    def output(self) -> Dense:
        return Dense(self.n_classes, self.sigma_out)

    def all_ops(self) -> tuple:
        return self.ops + (self.output(),)

    def shapes(self) -> list:
        """(fan_in, fan_out) of every Dense, the output layer last."""
        out, n = [], self.d_in
        for op in self.all_ops():
            out += op.shapes(n)
            n = op.width(n)
        return out

    def path(self, backend: str = "numpy") -> list:
        """States after every Dense but the first (hidden layer 1's output onward, the output last)."""
        return dense_states(self.all_ops(), backend)

    def gammas(self, backend: str = "numpy") -> list:
        return [s.gamma for s in self.path(backend)]


def dense_states(ops, backend: str = "numpy", where: str = "spec") -> list:
    """States after every Dense but the first, composing the ops' maps from the data state."""
    state, out, seen = input_state(backend), [], False
    for op in ops:
        state = op.map(state, backend)
        if backend == "numpy":
            check_state(state, where)
        if isinstance(op, Dense):
            if seen:
                out.append(state)
            seen = True
    return out


def gamma_path(spec_or_ops, backend: str = "numpy") -> list:
    """γ after every hidden layer (γ at the pre-activations of the next layer; the last is the output's)."""
    ops = spec_or_ops.all_ops() if isinstance(spec_or_ops, Spec) else tuple(spec_or_ops)
    return [s.gamma for s in dense_states(ops, backend)]


def block_ops(activation, norm=None, placement="pre", a=0.01, B=None, pool=None, shift=None) -> tuple:
    """The ops after a hidden Dense: [norm if pre] φ [norm if post] [MaxPool(pool)]."""
    norm = None if norm == "none" else norm
    mk = {None: None, "batchnorm": lambda: BatchNorm(B), "layernorm": LayerNorm, "rmsnorm": RMSNorm}[norm]
    out = []
    if mk and placement == "pre":
        out.append(mk())
    out.append(Act(activation, a, shift))
    if mk and placement == "post":
        out.append(mk())
    if pool and pool > 1:
        out.append(MaxPool(pool))
    return tuple(out)


def mlp_ops(L, activation, norm=None, placement="pre", a=0.01, sigma_w=SIGMA_W, B=None, pool=None, widths=None,
            shift=None) -> tuple:
    """Hidden ops of an L-hidden-layer MLP (infinite width unless ``widths``)."""
    widths = (None,) * L if widths is None else tuple(widths)
    block = block_ops(activation, norm, placement, a, B, pool, shift)
    return tuple(op for w in widths for op in (Dense(w, sigma_w),) + block)


def default_srelu_shift(norm, placement, sigma_w) -> float:
    """srelu's default shift σ/√(2π): the ReLU mean of the nominal N(0, σ²) input (σ = 1 after a norm before φ)."""
    sigma = 1.0 if (norm is not None and norm != "none" and placement == "pre") else sigma_w
    return sigma / math.sqrt(2 * math.pi)


def NetSpec(d_in, widths, activation="relu", a=0.01, weight_law="normal", sigma_w=SIGMA_W, pool=None, norm=None,
            placement="pre", bn_batch=None, n_classes=2, srelu_shift=None) -> Spec:
    """The MLP builder (module docstring); its keyword values stay readable as attributes of the Spec."""
    widths = (widths,) if _is_int(widths) else tuple(widths)
    if d_in is not None and (not _is_int(d_in) or d_in < 1):
        _fail(f"NetSpec: d_in must be a positive integer, got {d_in!r}")
    if not widths or any(w is not None and (not _is_int(w) or w < 1) for w in widths):
        _fail(f"NetSpec: widths must be positive integers (at least one hidden layer), got {widths!r}")
    if activation not in acts.names():
        _fail(f"NetSpec: unknown activation {activation!r}; allowed: {', '.join(acts.names())}")
    if weight_law not in WEIGHT_LAWS:
        _fail(f"NetSpec: unknown weight_law {weight_law!r}; allowed: {', '.join(WEIGHT_LAWS)}")
    if isinstance(sigma_w, bool) or not (isinstance(sigma_w, (int, float)) and math.isfinite(sigma_w) and sigma_w > 0):
        _fail(f"NetSpec: sigma_w must be a positive finite number, got {sigma_w!r}")
    if not isinstance(a, (int, float)) or not math.isfinite(float(a)):
        _fail(f"NetSpec: leaky slope a must be finite, got {a!r}")
    if pool is not None:
        if not _is_int(pool) or pool < 1:
            _fail(f"NetSpec: pool (max-pool kernel) must be a positive integer or None, got {pool!r}")
        if any(w is not None and w % pool for w in widths):
            _fail(f"NetSpec: every width must be divisible by the pool kernel {pool}, got {widths}")
    if norm not in NORMS and norm != "none":
        _fail(f"NetSpec: unknown norm {norm!r}; allowed: None, batchnorm, layernorm, rmsnorm")
    norm = None if norm == "none" else norm
    if placement not in PLACEMENTS:
        _fail(f"NetSpec: placement must be 'pre' or 'post' (norm before/after activation), got {placement!r}")
    if norm == "batchnorm" and bn_batch is not None and bn_batch != "full" and (not _is_int(bn_batch) or bn_batch < 2):
        _fail(f"NetSpec: batchnorm needs an integer bn_batch >= 2 (or None = full batch), got {bn_batch!r}")
    if not _is_int(n_classes) or n_classes < 2:
        _fail(f"NetSpec: n_classes must be an integer >= 2, got {n_classes!r}")
    if srelu_shift is not None and not (isinstance(srelu_shift, (int, float)) and math.isfinite(srelu_shift)):
        _fail(f"NetSpec: srelu_shift must be a finite number or None, got {srelu_shift!r}")
    shift = srelu_shift if srelu_shift is not None else default_srelu_shift(norm, placement, sigma_w)
    ops = mlp_ops(len(widths), activation, norm, placement, a, sigma_w, bn_batch if norm == "batchnorm" else None,
                  pool, widths, shift if activation == "srelu" else None)
    mlp = dict(widths=widths, activation=activation, a=a, sigma_w=sigma_w, pool=pool, norm=norm,
               placement=placement, bn_batch=bn_batch, srelu_shift=srelu_shift, shift=lambda: float(shift))
    return Spec(d_in, ops, weight_law, n_classes, sigma_w, mlp)

