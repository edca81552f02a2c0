"""Act: an activation φ (by name, igbsym.activations) applied unit-wise.

Width-limit map on a Gaussian state (IGB paper App. F.1, App. G): q' = S = E φ(u)², c' = P/S with
P = E[φ(u)φ(u')] = E_μ[(E_ξ φ(μ+ξ))²], e' = V/S with V = E_μ[Var_ξ φ(μ+ξ)] (computed directly, not as S − P),
m' = E φ(u), d' = (P − M²)/S. Positively homogeneous φ = x⁺ − s x⁻ (relu, leaky_relu, identity, abs) and
srelu = relu − k have closed forms: P/S is the degree-1 arc-cosine map k_s(c) = c + r(√(1 − c²) − c·arccos c)/π,
r = (1 − s)²/(1 + s²) (Cho & Saul 2009), with e' = e − r(sin t − t cos t)/π from t = arccos c taken from e. Other
activations use the pair moments of ``igbsym.gauss``. After a mini-batch BatchNorm (not Gaussian) the unit's γ is
``bn_law.canonical_relu_gamma`` (relu) or 0 (odd φ). Noise factor E φ'(u)² (Labatie 2019).
Dataset kernel (Lee et al. 2018, Eq. 5; Cho & Saul 2009): k'(a, b) = E φ(u)φ(v), (u, v) ~ N(0, [[v_a, k], [k, v_b]]):
(1 − s)²√(v_a v_b) J(ρ) + s k with the arc-cosine J(ρ) = (√(1 − ρ²) + ρ(π − arccos ρ))/(2π), for
φ = x⁺ − s x⁻ (srelu: minus κ(M_a + M_b) − κ²); (2/π) arcsin(2k/√((1 + 2v_a)(1 + 2v_b))) for erf (Williams 1997);
``gauss.gelu_kernel`` (closed form) for GELU; ``gauss.pair_kernel_np`` otherwise.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import mpmath
import numpy as np
import sympy as sp

from .. import activations as acts
from .. import bn_law, gauss
from ..gauss.bivariate import gelu_kernel
from .base import Op, PoolSource, State, fail, is_zero
from .datakernel import Kernel

SHIFT_CANCEL = 64      # srelu's mean E φ = √q/√(2π) − shift loses log2(shift/|E φ|) bits: beyond 64 (6 bits) the
                       # double routes hand the point to mpmath (families/depth.py, families/resnet.py)


def arccos_map(c, s):
    """k_s(c) = E[φ(u)φ(u')]/E[φ(u)²] for φ(x) = max(x, 0) + s·min(x, 0), corr(u, u') = c (SymPy)."""
    r = (1 - s) ** 2 / (1 + s**2)
    return c + r * (sp.sqrt(1 - c**2) - c * sp.acos(c)) / sp.pi


def sin_minus_tcos(t):
    """sin t − t cos t (NumPy, or a Python float with math), with its Taylor series for t < 0.1 (no cancellation)."""
    if isinstance(t, float):
        return _stc_series(t, t * t) if t < 0.1 else math.sin(t) - t * math.cos(t)
    t = np.asarray(t, float)
    return np.where(t < 0.1, _stc_series(t, t * t), np.sin(t) - t * np.cos(t))


def arccos_loss(e, r):
    """1 − k_s(c) of the (leaky) ReLU map at e = 1 − c, r = slope_ratio(s) (NumPy): e − r(sin t − t cos t)/π with
    t = arccos c = 2 arcsin √(e/2) taken from e, so no digit is lost as e → 0 (arccos(1 − e) loses eps/e of t)."""
    e = np.asarray(e, float)
    return e - r * sin_minus_tcos(2 * np.arcsin(np.sqrt(e / 2))) / np.pi


def _stc_series(t, t2):
    return t * t2 * (1 / 3 - t2 * (1 / 30 - t2 * (1 / 840 - t2 * (1 / 45360 - t2 / 3991680))))


def mp_sin_minus_tcos(t):
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


def np_spread_ratio(slope, r, c, kc):
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


def mp_spread_ratio(slope, r, c, kc):
    """np_spread_ratio at the working precision."""
    if c <= mpmath.mpf(1) / 2:
        return (c * ((1 + slope) / mpmath.hypot(1, slope)) ** 2 / 2
                + r / mpmath.pi * (c * mpmath.asin(c) - c**2 / (1 + mpmath.sqrt(1 - c**2))))
    return kc - r / mpmath.pi


def relu_kernel(rho):
    """J(ρ) = E[relu(u) relu(v)]/√(E u² E v²) for corr(u, v) = ρ: (√(1 − ρ²) + ρ(π − arccos ρ))/(2π) (Cho & Saul
    2009), as ρ/2 + (sin t − t cos t)/(2π), t = arccos ρ, for ρ >= 0 and (sin u − u cos u)/(2π), u = arccos(−ρ), for
    ρ < 0 (no cancellation: J → 0 as ρ → −1). NumPy, elementwise."""
    rho = np.clip(np.asarray(rho, float), -1.0, 1.0)
    pos = rho >= 0
    t = np.arccos(np.abs(rho))
    return np.where(pos, np.maximum(rho, 0.0) / 2, 0.0) + sin_minus_tcos(t) / (2 * np.pi)


def arccos_kernel(k, va, vb, slope):
    """E[φ(u)φ(v)] for φ = x⁺ − s x⁻ = (1 − s) relu(x) + s x, (u, v) ~ N(0, [[va, k], [k, vb]]):
    (1 − s)² √(va vb) J(ρ) + s k (E[relu(u) v] = k/2 by Stein's lemma); 0 where va·vb = 0. NumPy, elementwise."""
    prod = np.sqrt(va) * np.sqrt(vb)
    rho = np.divide(k, prod, out=np.zeros(np.broadcast(k, prod).shape), where=prod > 0)
    return (1 - slope) ** 2 * prod * relu_kernel(rho) + slope * k


def erf_kernel(k, va, vb):
    """E[erf(u) erf(v)] = (2/π) arcsin(2k/√((1 + 2va)(1 + 2vb))) (Williams 1997, the arcsine kernel), as
    (2/π) atan2(2k, √(1 + 2va + 2vb + 4(va vb − k²))) (no loss near |arcsin| = π/2). NumPy, elementwise."""
    k, va, vb = (np.asarray(v, float) for v in (k, va, vb))
    return 2 / np.pi * np.arctan2(2 * k, np.sqrt(np.maximum(1 + 2 * va + 2 * vb + 4 * (va * vb - k * k), 0.0)))


def _np_homogeneous(op, q, c, e):
    """φ = x⁺ − s x⁻ (and srelu = relu − k): closed forms, with e' = e − r(sin t − t cos t)/π, t = arccos c
    computed from e (accurate as c → 1); srelu keeps V and P − M² of relu (a shift moves the mean only)."""
    slope = np.asarray(op.slope, float)
    r = slope_ratio(slope)
    t = 2 * np.arcsin(np.sqrt(np.clip(e / 2, 0.0, 1.0)))
    S = q * (1 + slope**2) / 2
    M = (1 - slope) * np.sqrt(q / (2 * np.pi))
    kc = np.where(c == 0, r / np.pi, c + r * (np.sin(t) - t * c) / np.pi)   # k(0) = r/π exactly
    ke = np.maximum(e - r * sin_minus_tcos(t) / np.pi, 0.0)
    spread = S * np_spread_ratio(slope, r, c, kc)                          # P − M² >= 0, shift-invariant
    if op.name != "srelu":
        zero = np.zeros(np.shape(S))      # broadcasting by 0·S would turn an overflowed S (|a| > 1e154) into NaN
        with np.errstate(invalid="ignore"):
            return State(S, kc + zero, ke + zero, M + zero, False, d=spread / S)
    k = np.asarray(op.shift_value("numpy"), float)
    V, M = S * ke, M - k
    S = (S - (M + k) ** 2) + M * M                                    # Var φ + (E φ)²: a sum of terms >= 0
    return State(S, (M * M + spread) / S, V / S, M, False, d=spread / S)


def _mp_homogeneous(op, q, c, e):
    slope = mpmath.mpf(op.slope)
    r = slope_ratio(slope)
    t = 2 * mpmath.asin(mpmath.sqrt(e / 2))
    S = q * (1 + slope**2) / 2
    # √q/√(2π): the rounding of srelu's shift σ/√(2π), so at q = σ² E φ = 0 exactly (√(q/2π) left 1e-51 at 50 digits)
    M = (1 - slope) * mpmath.sqrt(q) / mpmath.sqrt(2 * mpmath.pi)
    kc = r / mpmath.pi if c == 0 else c + r * (mpmath.sin(t) - t * c) / mpmath.pi
    ke = e - r * mp_sin_minus_tcos(t) / mpmath.pi
    spread = S * mp_spread_ratio(slope, r, c, kc)
    if op.name != "srelu":
        return State(S, kc, ke, M, False, d=spread / S)
    k = op.shift_value("mpmath") if op.shift is None else mpmath.mpf(op.shift)
    V, M = S * ke, M - k
    S = (S - (M + k) ** 2) + M * M
    return State(S, (M * M + spread) / S, V / S, M, False, d=spread / S)


@dataclass(frozen=True)
class Act(Op):
    """Activation φ by name; ``a`` the leaky slope, ``shift`` srelu's constant (None: the nominal ReLU mean
    1/√(2π) of a unit-variance input, igb.gamma's convention after a norm)."""

    name: str = "relu"
    a: object = 0.01
    shift: object = None
    stage = "act"
    elementwise = True

    @classmethod
    def example(cls):
        return cls("gelu")

    def __post_init__(self):
        if self.name not in acts.names():
            fail(f"unknown activation {self.name!r}; allowed: {', '.join(acts.names())}")

    @property
    def act(self) -> acts.Activation:
        return acts.get(self.name)

    @property
    def slope(self):
        """s of φ = x⁺ − s x⁻ (srelu: its ReLU part, 0); None where φ is not positively homogeneous."""
        return 0 if self.name == "srelu" else self.act.slope_at(self.a)

    @property
    def odd(self) -> bool:
        return self.act.odd

    @property
    def closed_form(self) -> bool:
        """The map has a closed form (positively homogeneous φ, or srelu = relu − shift)."""
        return self.slope is not None

    @property
    def degree(self):
        return 1 if self.act.homogeneous else None

    def shift_value(self, backend):
        """srelu's subtracted constant in the backend's number type."""
        if self.shift is not None:
            return self.shift
        return {"sympy": 1 / sp.sqrt(2 * sp.pi), "mpmath": 1 / mpmath.sqrt(2 * mpmath.pi)}.get(
            backend, 1 / math.sqrt(2 * math.pi))

    def torch(self, n, device=None, dtype=None):
        from torch import nn
        fn, name, a = self.act.torch, self.name, self.a
        shift = float(self.shift_value("numpy")) if name == "srelu" else None

        class Activation(nn.Module):
            def forward(self, h):
                return fn(h, a, shift)

            def extra_repr(self):
                return name
        return Activation()

    # --- the map in three backends ---
    def _src(self, s, sigma):
        return PoolSource(self.name, self.a, sigma) if s.gaussian and is_zero(s.c) else None

    def _bn_minibatch(self, s, backend):
        if self.name != "relu" and not self.odd:
            fail(f"bn.gamma_canonical covers relu only; activation={self.name} after a mini-batch BatchNorm "
                 "(finite B) has no prediction (use B=inf)")
        if self.odd:
            g = 0
        elif backend == "sympy":
            fail("mini-batch BatchNorm: no closed form in the depth recursion (numpy or mpmath backend)")
        elif backend == "numpy":
            g = bn_law.canonical_relu_gamma(np.asarray(s.bn_batch, float))
        else:
            with mpmath.workprec(mpmath.mp.prec + 40):
                g = sp.lambdify(bn_law.B, bn_law.CANON_GAMMA, "mpmath")(mpmath.mpf(s.bn_batch))
            g = +g
        one = 1 + 0 * g
        return State(one, g / (1 + g), one / (1 + g), 0 * g, False)

    def _check_input(self, s, backend):
        if s.bn_batch is not None:
            return self._bn_minibatch(s, backend)
        if not s.gaussian:
            fail(f"activation {self.name} on non-Gaussian units (after a max-pool or mini-batch BN) has no map")
        return None

    def sym(self, s):
        out = self._check_input(s, "sympy")
        if out is not None:
            return out
        if not self.closed_form:
            fail(f"activation {self.name}: no closed-form map (use the numpy or mpmath backend)")
        slope = sp.sympify(self.slope)
        S = s.q * (1 + slope**2) / 2
        P = S * arccos_map(s.c, slope)
        M = (1 - slope) * sp.sqrt(s.q) / sp.sqrt(2 * sp.pi)
        if self.name == "srelu":
            k = self.shift_value("sympy")
            P, S, M = P - 2 * k * M + k**2, S - 2 * k * M + k**2, M - k
        return State(S, P / S, 1 - P / S, M, False, None, self._src(s, sp.sqrt(s.q)))

    def numpy(self, s):
        out = self._check_input(s, "numpy")
        if out is not None:
            return out
        q, c, e = (np.asarray(v, float) for v in (s.q, s.c, s.e))
        if self.closed_form:
            out = _np_homogeneous(self, q, c, e)
        else:
            S, c2, e2, M, d2 = gauss.pair_np(self.name, self.a, q, c, e)
            out = State(S, c2, e2, M, False, d=d2)
        return replace(out, pool_src=self._src(s, np.sqrt(q)))

    def mp(self, s):
        out = self._check_input(s, "mpmath")
        if out is not None:
            return out
        if self.closed_form:
            out = _mp_homogeneous(self, s.q, s.c, s.e)
        else:
            S, c2, e2, M, d2 = gauss.pair_mp(self.name, self.a, s.q, s.c, s.e)
            out = State(S, c2, e2, M, False, d=d2)
        return replace(out, pool_src=self._src(s, mpmath.sqrt(s.q)))

    def kernel_entry(self, k, va, vb):
        """E[φ(u)φ(v)], (u, v) ~ N(0, [[va, k], [k, vb]]), elementwise (module docstring)."""
        if self.closed_form:
            out = arccos_kernel(k, va, vb, float(self.slope))
            if self.name == "srelu":
                kap = float(self.shift_value("numpy"))
                out = out - kap * (np.sqrt(va / (2 * np.pi)) + np.sqrt(vb / (2 * np.pi))) + kap * kap
            return out
        if self.name == "erf":
            return erf_kernel(k, va, vb)
        if self.name == "gelu":
            return gelu_kernel(k, va, vb)
        return gauss.pair_kernel_np(self.name, float(self.a), k, va, vb)

    def kernel_mean(self, v):
        """E φ(u), u ~ N(0, v), elementwise."""
        if self.closed_form:
            m = (1 - float(self.slope)) * np.sqrt(v / (2 * np.pi))
            return m - float(self.shift_value("numpy")) if self.name == "srelu" else m
        if self.odd:
            return np.zeros(np.shape(v))
        uniq, inv = np.unique(np.asarray(v, float), return_inverse=True)
        return gauss.moments_np(self.name, float(self.a), uniq)[0][inv].reshape(np.shape(v))

    def kernel(self, s: Kernel) -> Kernel:
        src = s.current_source()
        if src is not None and src[1].whole_data:                   # φ of train-mode BatchNorm outputs
            return src[1].activation_kernel(src[0], self)
        if not s.gaussian:
            fail(f"activation {self.name}: its input units are not jointly Gaussian with zero mean (an activation "
                 "needs a Dense, Conv2d, or a norm/linear pool of one, before it; not the raw data or another "
                 "activation)")
        linear = self.closed_form and self.name != "srelu" and float(self.slope) == 1.0
        if linear:
            return s                                 # φ(x) = x: E[uv] = k (the map below with s = 1, exactly)
        k, ka, kb = s.entrywise(self.kernel_entry)
        return s.replace(k=k, ka=ka, kb=kb, ma=self.kernel_mean(s.va), mb=self.kernel_mean(s.vb), gaussian=linear,
                         source=(s, self, k))

    def apply_np(self, x):
        """φ(x) elementwise in NumPy (srelu: relu(x) minus its constant), for maps that sample Gaussian units."""
        if self.name == "srelu":
            return np.maximum(x, 0) - float(self.shift_value("numpy"))
        return self.act.numpy(x, float(self.a), 0.0)

    def noise(self, s, backend="numpy"):
        """E[φ'(u)²], u ~ N(0, q): (1 + s²)/2 for φ = x⁺ − s x⁻ (srelu: 1/2); quadrature otherwise."""
        if not s.gaussian:
            fail(f"sensitivity: activation {self.name} on non-Gaussian units has no width-limit noise map")
        if self.closed_form:
            if backend == "sympy":
                return (1 + sp.sympify(self.slope) ** 2) / 2
            return (1 + self.slope * self.slope) / 2 + 0 * s.q
        if backend == "sympy":
            fail(f"E[phi'(u)^2] for activation {self.name} has no closed form (use the numpy or mpmath route)")
        if backend == "mpmath":
            return +gauss.derivative_moment_mp(self.name, s.q, mpmath.mp.dps)
        q = np.asarray(s.q, float)
        gauss.check_q(q)
        out = np.empty(q.shape)
        for i in np.ndindex(q.shape):     # per point (cached): an array call gives each point its scalar value
            out[i] = gauss.derivative_moment_np(self.name, float(q[i]))
        return out if q.ndim else out[()]
