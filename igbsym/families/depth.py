"""The depth law of γ and normalisation placement: γ at the output of an L-hidden-layer MLP.

Papers: igb-initial-guessing-bias.txt App. F.1 (layer-by-layer propagation of node centres and node variances,
left numeric there), App. F.2 (γ → ∞ with depth), App. G (activation rule); norm-placement-bn-ln.txt
Thms E.1, E.2, F.2, F.3, Lemma F.1, Sec. 4.1.3 (LN vs RMSNorm); igb-talk-slides.txt (c = γ/(1+γ)).

State of layer l (infinite width, N(0, I_d) data with d → ∞, zero biases, weights N(0, σ_w²/fan_in)): node i's
pre-activation on input x is h_i(x) = μ_i + ξ_i(x) with centres μ_i ~ N(0, V_μ) across nodes/initialisations and
data noise ξ_i ~ N(0, V_χ). We carry q = V_μ + V_χ and c = V_μ/q, the correlation of h_i(x), h_i(x') for two
independent inputs; γ = V_μ/V_χ = c/(1 − c). With (u, u') ~ N(0, q[[1, c], [c, 1]]), P = E[φ(u)φ(u')] =
E_μ[(E_ξ φ(μ + ξ))²] (the Gaussian integral over node centres), S = E[φ(u)²], M = E[φ(u)], one block maps

    no norm:        q' = σ_w² S,  c' = P/S              (App. F.1 in closed form)
    norm before φ:  (q, c) → (1, c) for LN/RMSNorm, (1, 0) for full-batch BN, then as above
    LN after φ:     q' = σ_w²,    c' = (P − M²)/(S − M²)   (0 from c = 0: Thm F.3)
    RMSNorm after:  q' = σ_w²,    c' = P/S              (the no-norm law: Sec. 4.1.3's claim fails here)
    BN after φ:     q' = σ_w²,    c' = 0                (Thm E.2)

starting from (σ_w², 0) at the first hidden layer. For (leaky) ReLU P/S is the degree-1 arc-cosine map
k_a(c) = c + (1 − a)²(√(1 − c²) − c·arccos c)/(π(1 + a²)), independent of q; it is registered as
``depth.corr_map`` and proved from the integral in derivations/depth.py.

Implementation: each block is a sequence of ``igbsym.spec`` ops ([norm] Act [norm] Dense), and γ_L is the
composition of the ops' maps (SymPy for the nested closed form at L <= 4, NumPy / mpmath for the numeric routes),
the same ops that ``validation/simulate.py`` turns into torch layers. The numeric state carries 1 − c itself
(never formed as a difference), so γ keeps its relative accuracy as c → 1; a NumericalError is raised where
γ leaves the double range (1 − c < 1e-300) or q leaves the quadrature route's range (q <= 100), never a wrong
sign or inf. The iteration stops at a fixed point of the block map (later layers repeat it), so any depth up
to L_MAX is cheap; GELU/SiLU with RMSNorm after φ at q = σ_w² <= 0.01, where ~1/q layers pass before c settles,
iterate Mehler's power series of the block map (igbsym/mehler.py) instead of a nested quadrature a layer.
Default σ_w = √2 (igbsym.spec.SIGMA_W: the papers' Kaiming setting).
"""
from __future__ import annotations

import dataclasses
import math

import mpmath
import numpy as np
from mpmath import libmp
import sympy as sp

from .. import activations as acts
from .. import mehler
from .. import gauss, spec
from .. import ops as O
from ..errors import InputError, NumericalError
from ..form import Accuracy, ClosedForm, Condition, NumericRoute, Param, Provenance
from ..registry import register

IGB = "igb-initial-guessing-bias.txt"
NORM = "norm-placement-bn-ln.txt"
NORMS = ("none", "batchnorm", "layernorm", "rmsnorm")
PLACEMENTS = spec.PLACEMENTS
L_EXACT = 4          # up to this depth the registered case is the nested closed form, beyond it the iteration
L_MAX = 100000
BN_FORM = "bn.gamma_canonical"
QUAD_ERROR = gauss.QUAD_ERROR

q_, c_ = sp.Symbol("q", positive=True), sp.Symbol("c", real=True)
a_, sw_ = sp.Symbol("a", real=True), sp.Symbol("sigma_w", positive=True)
_SLOPE = {n: (a_ if acts.get(n).slope == "a" else sp.Integer(acts.get(n).slope)) for n in acts.homogeneous_names()}   # φ = x⁺ − s x⁻
ODD = tuple(n for n, act in acts.ACTIVATIONS.items() if act.odd)
SMOOTH = tuple(n for n in acts.names() if n not in _SLOPE and n not in ODD and n != "srelu")
arccos_map = O.arccos_map


def block(activation, norm, placement, a, sigma_w, B=None, shift_backend="numpy"):
    """The ops of one hidden block after its Dense, then the next Dense: [norm pre] φ [norm post] Dense(σ_w).

    srelu's shift is σ₁/√(2π), the ReLU mean of layer 1's N(0, σ₁²) input to φ (σ₁ = σ_w, or 1 after a norm
    placed before φ): exact centring in layer 1 only (igb.gamma's and validation/simulate.py's convention)."""
    pre_norm = norm != "none" and placement == "pre"
    shift = None
    if activation == "srelu":
        sig = 1 if pre_norm else sigma_w
        root = {"sympy": sp.sqrt(2 * sp.pi), "mpmath": mpmath.sqrt(2 * mpmath.pi)}.get(shift_backend,
                                                                                        math.sqrt(2 * math.pi))
        shift = sig / root
    return spec.block_ops(activation, norm, placement, a, B, None, shift) + (O.Dense(None, sigma_w),)


def sym_step(activation, norm, placement, q, c):
    """One block (q, c) → (q', c') in SymPy (closed-form activations), composed from the ops' maps."""
    st = O.State(q, c, 1 - c, sp.S.Zero)
    for op in block(activation, norm, placement, a_, sw_, shift_backend="sympy"):
        st = op.sym(st)
    return st.q, sp.simplify(st.c) if st.c.is_number else st.c


def _kind(activation, norm, placement):
    """'zero' where γ = 0 at every depth exactly: odd φ (symmetric data), BN/LN after φ (Thms E.2, F.3), and srelu
    with LayerNorm or RMSNorm (BN before φ: the 'bn_pre' route, also 0): its shift σ/√(2π) is the ReLU mean of the
    N(0, σ²) input φ sees at every layer (σ = 1 after a norm before φ; σ = σ_w when the norm after φ resets q = 1
    before the next Dense), so E φ = 0 and c stays 0 from the data's c = 0 (the mp route's 1/√(2π) − k at 50 digits left 1e-102, an unconverged reference)."""
    if activation in ODD or (norm in ("batchnorm", "layernorm") and placement == "post") or (
            activation == "srelu" and norm in ("layernorm", "rmsnorm")):
        return "zero"
    if norm == "batchnorm":
        return "bn_pre"
    return "homogeneous" if activation in _SLOPE else ("srelu" if activation == "srelu" else "smooth")


def _scale_free(ops) -> bool:
    """Every op commutes with a rescaling of the state (positively homogeneous φ, norms, Dense): q can be reset."""
    return all(not isinstance(op, O.Act) or acts.get(op.name).homogeneous for op in ops)


def _stationary(old, new, tol, older=None):
    """The block map has reached its fixed point to ``tol`` relative (q too, unless φ is linear there): elementwise
    (a bool array on the NumPy route, a bool on mpmath). With ``older`` (the state before ``old``) the step is
    divided by 1 − ρ, ρ = |e_new − e_old|/|e_old − e_older| the contraction (where ρ < 1): the distance to the fixed
    point is ρ/(1 − ρ) steps, so a slow contraction is not taken for convergence (gelu + RMSNorm after φ, ρ = 0.93,
    stopped 1.3e-14 short of the fixed point)."""
    mp = isinstance(new.e, mpmath.mpf)
    absf = abs if mp else (lambda v: np.abs(np.asarray(v, float)))
    factor = 1
    if older is not None:
        step, before = absf(new.e - old.e), absf(old.e - older.e)
        if mp:
            factor = 1 - step / before if step < before else 1
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                factor = np.where(step < before, 1 - step / np.where(before > 0, before, 1.0), 1.0)
    ok = [absf(x - y) <= tol * factor * absf(y) for x, y in ((old.c, new.c), (old.e, new.e))]
    q_ok = absf(old.q - new.q) <= tol * factor * absf(new.q)
    if mp:
        return ok[0] and ok[1] and q_ok
    return ok[0] & ok[1] & (q_ok | (np.asarray(new.q, float) < gauss.Q_LINEAR))


def _fast_homogeneous(ops) -> bool:
    """The block acts on (c, 1 − c) through a positively homogeneous φ only (norms before φ or RMSNorm after
    rescale; Dense keeps c): the map is k_s on (c, e) alone."""
    kinds = [type(op) for op in ops]
    act = kinds.index(O.Act)
    return acts.get(ops[act].name).homogeneous and all(
        k in (O.Dense, O.RMSNorm) or (k is O.LayerNorm and i < act) for i, k in enumerate(kinds) if i != act)


def _homogeneous_gammas(L, slope, start=(0.0, 1.0)):
    """γ_l, l = 1..L, of the (leaky) ReLU depth law, iterating (c, e = 1 − c) with t = arccos c from e, from the
    state ``start`` = (c, e) (the data: (0, 1))."""
    r = O.slope_ratio(slope)
    c0, e0 = (np.broadcast_to(np.asarray(v, float), r.shape) for v in start)
    if 0 < r.size <= 8 and r.ndim:      # a few points: the scalar loop per point is faster than array ufuncs
        cols = [_homogeneous_gammas(L, float(s_), (float(c_), float(e_)))
                for s_, c_, e_ in zip(np.asarray(slope, float).ravel(), c0.ravel(), e0.ravel())]
        return [np.array([col[i] for col in cols]).reshape(r.shape) for i in range(L)]
    if r.ndim == 0:
        r = float(r)
        c, e, out = float(c0), float(e0), []
        for _ in range(L):
            t = 2 * math.asin(math.sqrt(e / 2))
            g = (t * t * t * (1 / 3 - t * t * (1 / 30 - t * t * (1 / 840 - t * t * (1 / 45360 - t * t / 3991680))))
                 if t < 0.1 else math.sin(t) - t * math.cos(t))
            c, e = (r / math.pi if c == 0 else c + r * (math.sin(t) - t * c) / math.pi), max(e - r * g / math.pi, 0.0)
            if e < O.E_MIN:
                raise NumericalError(f"1 - c = {e:.3g}: gamma exceeds the double range")
            out.append(np.float64(c / e))
        return out
    c, e, out = np.array(c0), np.array(e0), []
    for _ in range(L):
        t = 2 * np.arcsin(np.sqrt(e / 2))
        c, e = c + r * (np.sin(t) - t * c) / np.pi, np.maximum(e - r * O.sin_minus_tcos(t) / np.pi, 0.0)
        if (e < O.E_MIN).any():
            raise NumericalError(f"1 - c = {float(e.min()):.3g}: gamma exceeds the double range")
        out.append(c / e)
    return out


def _mp_homogeneous_gamma(L, slope, start=None):
    """γ_L of the (leaky) ReLU depth law at the working mpmath precision: the same (c, e = 1 − c) iteration as
    spec's mpmath Act map, in one loop on mpmath's raw numbers (``mpmath.libmp``) with 24 guard bits (the generic op
    composition cost ~1 ms a layer, the mpf loop ~150 µs: 35 s for the two references at L = 1e5). sin t − t cos t
    is evaluated with the 2 log2(1/t) bits its cancellation loses added to the precision."""
    prec = mpmath.mp.prec + 24
    with mpmath.workprec(prec):
        rpi = (O.slope_ratio(mpmath.mpf(slope)) / mpmath.pi)._mpf_
        c, e = (mpmath.mpf(0), mpmath.mpf(1)) if start is None else (mpmath.mpf(start[0]), mpmath.mpf(start[1]))
    c, e = c._mpf_, e._mpf_
    add, sub, mul = libmp.mpf_add, libmp.mpf_sub, libmp.mpf_mul
    quarter, eps = libmp.from_rational(1, 4, prec), libmp.mpf_shift(libmp.fone, 4 - prec)
    carry_c = True
    for _ in range(L):
        if carry_c and libmp.mpf_lt(e, quarter) and libmp.mpf_le(libmp.mpf_abs(sub(add(c, e, prec), libmp.fone,
                                                                                   prec)), eps):
            carry_c = False          # once c > 3/4, c = 1 − e loses nothing: carry e alone (half the cost a layer)
        t = libmp.mpf_shift(libmp.mpf_asin(libmp.mpf_sqrt(libmp.mpf_shift(e, -1), prec), prec), 1)
        wp = prec + max(0, -2 * (t[2] + t[3])) + 8 if t != libmp.fzero else prec
        cos_t, sin_t = libmp.mpf_cos_sin(t, wp)
        if carry_c:
            c = rpi if c == libmp.fzero else add(c, mul(rpi, sub(sin_t, mul(t, c, wp), wp), prec), prec)
        e = sub(e, mul(rpi, sub(sin_t, mul(t, cos_t, wp), wp), prec), prec)
    c, e = mpmath.mpf(c), mpmath.mpf(e)
    return (c if carry_c else 1 - e) / e


RATIO_GAP = 1e-3    # the geometric tail needs e_(l+1)/e_l < 1 - RATIO_GAP: a decay to 0, not a nonzero fixed point


def _geometric(q_old, q_new, ratio, prev, tol) -> bool:
    """1 − c decays geometrically at a fixed q: the ratio e_(l+1)/e_l has settled to ``tol``·(1 − ratio)² (the
    remaining layers' ratios differ from it by a geometrically decaying amount whose sum, over all layers, is
    below tol relative), with ratio < 1 − RATIO_GAP and q at its fixed point. The gap: near a nonzero fixed
    point e* the ratio is 1 − O(ulp) and two rounded ratios can be equal, which passed the test and extrapolated
    e·ratio^k over 1e5 layers (gelu + LayerNorm at L = 1e5: 3.17365588773 for 3.17365588639, 4e-10 off)."""
    if prev is None:
        return False
    if isinstance(ratio, mpmath.mpf):
        return (ratio < 1 - RATIO_GAP and abs(ratio - prev) <= tol * (1 - ratio) ** 2) and (
            abs(q_old - q_new) <= tol * abs(q_new) or q_new < gauss.Q_LINEAR)
    ratio, prev, q_old, q_new = (np.asarray(v, float) for v in (ratio, prev, q_old, q_new))
    ok = (ratio < 1 - RATIO_GAP) & (np.abs(ratio - prev) <= tol * (1 - ratio) ** 2)   # per point (NumPy)
    return ok & ((np.abs(q_old - q_new) <= tol * np.abs(q_new)) | (q_new < gauss.Q_LINEAR))


def _geometric_tail(new, ratio, rest, backend, where, layer, last):
    """γ at the remaining ``rest`` layers when e = 1 − c decays by ``ratio`` a layer (c + e = 1 is kept:
    c_k = c + e − e_k); NumPy raises NumericalError at the first layer where e leaves the double range."""
    if backend != "numpy":
        ks = [rest] if last else range(1, rest + 1)
        return [(new.c + new.e - new.e * ratio**k) / (new.e * ratio**k) for k in ks]
    ks = np.arange(1, rest + 1).reshape((-1,) + (1,) * np.ndim(ratio))
    with np.errstate(under="ignore"):
        e = new.e * np.exp(ks * np.log(ratio))       # e·ratio^k without k-fold rounding of a product
    if (e < O.E_MIN).any():
        k = int(np.argmax((e < O.E_MIN).reshape(rest, -1).any(axis=1)))
        rate = float(np.max(np.where(e[k] < O.E_MIN, ratio, 0.0)))     # the ratio of a point that left the range
        raise NumericalError(f"{where} at layer {layer + 2 + k}: 1 - c = {float(e[k].min()):.3g} < {O.E_MIN:g}: "
                             "gamma = c/(1-c) exceeds the double range (1 - c decays geometrically, ratio "
                             f"{rate:.6g} a layer)")
    return list((new.c + new.e - e) / e)


SPAN = 256          # NumPy: the geometric tail's ratio is measured over this many layers, not one


def _span_ratio(geo, ratio, anchor, new, layer, rest, done):
    """The NumPy geometric tail e·ρ^k multiplies the error of ρ by k: a one-layer ratio of two rounded e's (~1e-15)
    was 1e-11 off at k ~ 3000 (sigmoid + RMSNorm after φ, σ_w = 6, L = 3000; over 256 layers 2e-13). A point where
    the decay is first seen is anchored (its e and layer) and walks SPAN more layers; its tail then takes
    ρ = (e/e_anchor)^(1/SPAN). Points with at most SPAN layers left take the one-layer ratio (error <= SPAN·1e-15).
    Returns (the points to take the tail now, their ratios, the anchors)."""
    shape = np.shape(new.e)
    if anchor is None:
        anchor = (np.full(shape, np.nan), np.full(shape, -1))
    e0, l0 = anchor
    free = ~np.asarray(done, bool)
    start = np.asarray(geo, bool) & free & (l0 < 0) & (rest > SPAN)
    e0, l0 = np.where(start, new.e, e0), np.where(start, layer, l0)
    ready = free & (l0 >= 0) & (layer - l0 == SPAN)
    with np.errstate(divide="ignore", invalid="ignore"):
        spanned = np.exp(np.log(np.asarray(new.e, float) / e0) / SPAN)
    now = (np.asarray(geo, bool) & free & (l0 < 0)) | ready
    return now, np.where(ready, spanned, ratio), (e0, l0)


def _freeze(frozen, mask, new):
    """``frozen`` with the points in ``mask`` set to ``new`` (NumPy): the states of the points whose remaining
    layers are already known (a fixed point or a tail), so that later layers leave them as they are."""
    if frozen is None:
        return new
    return dataclasses.replace(frozen, **{k: np.where(mask, getattr(new, k), getattr(frozen, k)) for k in "qcem"})


def _affine(ops, state, new, tol, backend, rest):
    """Per point: the block map is affine in c to the working precision, c' = (c + β)/(1 + β): φ comes first and
    the q entering it is below 1e-60 (NumPy, where its linear branch is exactly this map) or 1e-40 with the final c
    below 10^-(dps+5) (mpmath: the next terms are O(c) relative) and stays fixed (a norm after φ resets it). Then
    1 − c = e/(1 + β)^k exactly, with no fixed point for ~1/β layers: the iteration would walk every layer
    (gelu + RMSNorm after φ at L = 1e5, σ_w = 1e-320: 27 s a precision). Returns the mask and β = (c' − c)/e'."""
    if not isinstance(ops[0], O.Act):
        return False, None
    if backend != "numpy":   # the map's next terms are O(c) relative: c_L ~ c + rest·β must be below the precision
        beta = (new.c - state.c) / new.e
        ok = state.q < mpmath.mpf("1e-40") and abs(new.q - state.q) <= tol * new.q and beta > 0
        return ok and new.c + rest * beta < mpmath.mpf(10) ** (-mpmath.mp.dps - 5), beta
    q_old, q_new = np.asarray(state.q, float), np.asarray(new.q, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        beta = (np.asarray(new.c, float) - state.c) / new.e
    return (q_old < gauss.Q_LINEAR) & (q_old == q_new) & (beta > 0), beta


def _affine_tail(new, beta, rest, backend, last):
    """γ at the remaining ``rest`` layers of the affine map (``_affine``): (expm1(k·log1p β) + c)/e."""
    if backend != "numpy":
        ks = [rest] if last else range(1, rest + 1)
        return [(mpmath.expm1(k * mpmath.log1p(beta)) + new.c) / new.e for k in ks]
    ks = np.arange(1, rest + 1).reshape((-1,) + (1,) * np.ndim(beta))
    return list((np.expm1(ks * np.log1p(beta)) + new.c) / new.e)


RHO_CLEAR = 1e4     # Steffensen's contraction estimate d2/d1 is used only where |d1| > RHO_CLEAR·tol·|v|


def _steffensen(step, state, tol, rest, start=None):
    """The chaotic-phase fixed point c* = F(c*) of the block map at a fixed q (mpmath route, and NumPy per point
    where q is fixed or rescaled), by Steffensen's iteration from ``start`` (default ``state``, the iterate reached;
    quadratic convergence: a few maps instead of ~dps/log10(1/ρ) layers). Returns the fixed-point state if the
    iteration converges to ``tol`` with contraction ρ = F'(c*) < 1 − 1e-3 and ρ^rest·|c − c*| below tol (then every
    remaining layer equals c* to the working precision), else None. Works on NumPy 0-d states too (``_np_hint``)."""
    x0, rho = (state if start is None else start), None

    def at(x, v):
        return O.State(x.q, 1 - v, v, x.m) if k == "e" else O.State(x.q, v, 1 - v, x.m)
    for _ in range(12):
        # extrapolate the smaller of c and e = 1 − c (both are carried): c near 1 set as 1 − c left e with the error
        # of c divided by e (gelu + RMSNorm after φ at σ_w = 9.99, γ = 232: 1.8e-11 off on NumPy)
        k = "e" if x0.e < 0.5 else "c"
        x1 = step(x0)
        x2 = step(x1)
        v0, v1, v2 = (getattr(x, k) for x in (x0, x1, x2))
        d1, d2 = v1 - v0, v2 - v1
        if abs(d1) <= tol * abs(v1) and abs(d2) <= tol * abs(v2):
            # x0 is the fixed point to the working precision (d2 may be a rounding of it: at 30 digits d1 = 0 with
            # d2 = 1e-31 returned None, and gelu + RMSNorm after φ iterated the layers at 0.4 s each)
            if rho is None or abs(rho) ** rest * abs(getattr(state, k) - v2) > tol * abs(v2):
                return None
            return x2
        if d1 == 0:
            return None
        if abs(d1) > RHO_CLEAR * tol * abs(v1):
            # ρ only from steps clear of rounding: near the fixed point d2/d1 is a ratio of roundings, and an accepted
            # noise ρ jumped silu + LayerNorm before φ at L = 300 to c* (NumPy 1.9e-9 off; ρ = 0.94, 236 layers left)
            rho = d2 / d1
            if not (0 <= abs(rho) < 1 - mpmath.mpf("1e-3")):
                return None
        v = v2 - d2 * d2 / (d2 - d1)
        if not 0 < v < 1:
            return None
        if abs(v - v2) <= tol * abs(v):
            if rho is None or abs(rho) ** rest * abs(getattr(state, k) - v) > tol * abs(v):
                return None
            return at(x2, v)
        x0 = at(x2, v)
    return None


def _block_step(ops, backend, free):
    """The block map on a state (the ops composed); where the path is scale-free (``free``) q is reset to 1 after it."""
    def step(st):
        for op in ops:
            with np.errstate(over="ignore", under="ignore"):
                st = op.map(st, backend)
        return O.State(1 + 0 * np.nan_to_num(st.q) if backend == "numpy" else 1 + 0 * st.q, st.c, st.e, st.m) \
            if free else st
    return step


def _np_hint(activation, norm, placement, a, sigma_w, B, state, free, rest):
    """c* of the block map in double precision (NumPy maps, Steffensen from the mpmath ``state``): the start of the
    mpmath Steffensen iteration, which then needs 2-3 maps instead of ~15 (gelu + RMSNorm after φ at σ_w = 4.5:
    0.4-0.8 s a map). None where the NumPy maps leave their range or do not converge."""
    step = _block_step(block(activation, norm, placement, float(a), float(sigma_w), B, "numpy"), "numpy", free)
    x = O.State(*(np.float64(float(v)) for v in (state.q, state.c, state.e, state.m)))
    converged, _, c, _, _ = _np_fixed_points(lambda i: step, x, rest, 64 * np.finfo(float).eps)
    return mpmath.mpf(float(c)) if converged else None


def _np_fixed_points(point_step, state, rest, tol=16 * np.finfo(float).eps):
    """Per point of a NumPy state (any shape): (converged mask, q*, c*, e*, m*) of the block map's fixed point by
    Steffensen's iteration on that point alone (``point_step(i)``: its block map) to ``tol``, so an array call gives
    each point its scalar call's value; a point whose maps leave their range does not converge."""
    shape = np.shape(state.c)
    out = [np.zeros(shape, bool)] + [np.array(np.broadcast_to(getattr(state, k), shape), float) for k in "qcem"]
    for i in np.ndindex(shape):
        x = O.State(*(np.float64(np.asarray(getattr(state, k), float)[i] if np.ndim(getattr(state, k)) else
                                 getattr(state, k)) for k in "qcem"))
        try:
            with np.errstate(all="ignore"):
                fx = _steffensen(point_step(i), x, tol, rest)
        except (NumericalError, InputError, OverflowError, ValueError, ZeroDivisionError):
            fx = None
        if fx is not None and 0 < float(fx.c) < 1:
            out[0][i] = True
            for arr, k in zip(out[1:], "qcem"):
                arr[i] = float(getattr(fx, k))
    return out


KAPPA_1 = 1 / math.sqrt(2 * math.pi)     # srelu's layer-1 shift in units of the input rms (centres layer 1 exactly)


class _ShiftCancels(Exception):
    """Raised inside the NumPy srelu path where E φ = 1/√(2π) − κ cancels; ``_srelu_points`` re-evaluates."""


def _srelu_points(L, a, sigma_w, where, last):
    """The NumPy srelu path, except where κ returns to κ₁ (σ_w²·S ≈ 1, e.g. σ_w ≈ √(2π/(π − 1)) = 1.713 at layer
    2): there E φ = 1/√(2π) − κ is a difference of nearly equal doubles, c' = (E φ)²/S at the next layer is all
    of it, and the double route lost up to every digit (1e-4 relative at σ_w = 1.713(1 + 1e-12)). Such a point is
    evaluated on the mpmath route at 40 digits, the others on NumPy one by one (the array call = the scalar
    calls)."""
    try:
        return _srelu_path(L, a, sigma_w, "numpy", where, last)
    except _ShiftCancels:
        pass
    out = None
    for i in np.ndindex(a.shape):
        try:
            g = _srelu_path(L, a[i], sigma_w[i], "numpy", where, last)
        except _ShiftCancels:
            with mpmath.workdps(40):
                g = _srelu_path(L, mpmath.mpf(float(a[i])), mpmath.mpf(float(sigma_w[i])), "mpmath", where, last)
            if not all(mpmath.isfinite(x) and abs(x) < 1e300 for x in g):
                raise NumericalError(f"{where}: gamma exceeds the double range (the mpmath route gives "
                                     f"{mpmath.nstr(max(g), 5)})") from None
            g = [float(x) for x in g]
        out = out or [np.empty(a.shape) for _ in g]
        for o, x in zip(out, g):
            o[i] = x
    return out


def _srelu_path(L, a, sigma_w, backend, where, last):
    """γ_l of the no-norm SReLU MLP without overflow at any σ_w: the block φ(x) = relu(x) − k then Dense is
    positively homogeneous in (x, k), so the state is carried at q = 1 with the shift relative to the input rms,
    κ = k/√q (κ₁ = 1/√(2π): layer 1 is centred exactly), κ' = κ/√q'. Where κ settles the remaining layers follow
    the fixed-point or geometric shortcuts of ``path``; where κ falls below the working precision (σ_w large: the
    shift no longer matters) the remaining layers are the ReLU law from the current (c, e); where κ overflows (σ_w
    tiny: the shift dominates) 1 − c ~ 1/κ² and γ is beyond the double range."""
    mp = backend == "mpmath"
    if mp:
        kappa, tol = 1 / mpmath.sqrt(2 * mpmath.pi), mpmath.mpf(10) ** (2 - mpmath.mp.dps)
        state = O.input_state("mpmath")
    else:
        a, sigma_w = np.broadcast_arrays(np.asarray(a, float), np.asarray(sigma_w, float))
        kappa, tol = np.full(a.shape, KAPPA_1), 4 * np.finfo(float).eps
        state = O.State(np.ones(a.shape), np.zeros(a.shape), np.ones(a.shape), np.zeros(a.shape))
    sqrt = mpmath.sqrt if mp else np.sqrt
    out, prev, ratio = [], None, None
    for layer in range(L):
        if not mp and layer and np.any(O.SHIFT_CANCEL * np.abs(kappa - KAPPA_1) < kappa):
            raise _ShiftCancels
        new = O.Act("srelu", a, kappa).map(state, backend)        # the Dense after it keeps (c, e), q' = σ_w² S
        with np.errstate(over="ignore", divide="ignore"):
            k_new = kappa / sigma_w / sqrt(new.q)
        new = O.State(1 + 0 * new.q, new.c, new.e, 0 * new.m)
        if not mp:
            if not np.all(np.isfinite(k_new)):
                raise NumericalError(f"{where} at layer {layer + 2}: the shift dominates (shift/rms > 1e308): "
                                     "1 - c < 1e-300, gamma exceeds the double range")
            O.check_state(new, f"{where} at layer {layer + 1}")
        out.append(new.gamma)
        rest = L - layer - 1
        if not rest:
            break
        small = (k_new <= tol * (1 - k_new / kappa)) if mp else bool(np.all(k_new <= tol * (1 - k_new / kappa)))
        if small:       # the shift's remaining effect, Σ κ_k <= κ/(1 − ratio), is below the working precision
            tail = (_mp_homogeneous_gamma(rest, 0, (new.c, new.e)) if mp
                    else _homogeneous_gammas(rest, 0.0 * a, (new.c, new.e)))
            out += [tail] if mp else tail
            break
        if layer and np.all(_stationary(O.State(kappa, state.c, state.e, 0), O.State(k_new, new.c, new.e, 0), tol)):
            out += [new.gamma] * rest
            break
        ratio = new.e / state.e if layer else None
        if np.all(_geometric(kappa, k_new, ratio, prev, tol)):
            out += _geometric_tail(new, ratio, rest, backend, where, layer, last)
            break
        state, kappa, prev = new, k_new, ratio
    return out[-1:] if last else out


def path(L, activation, norm, placement, a, sigma_w, B=None, backend="numpy", where="depth.gamma", last=False):
    """γ after hidden layers 1..L (the pre-activations of layer l + 1, the output for l = L); ``last``: only γ_L.

    Composes the ops' maps block by block from the data state and resets q = 1 after each block when every op is
    scale-free (so q never overflows). Exact shortcuts, so that the cost does not grow with L: at a fixed point
    of the block map the remaining layers repeat it; where 1 − c decays geometrically at a fixed q (the ordered
    phase: the map is e → ρe to the working precision once e is small) the remaining layers are e·ρ^k; on the
    mpmath route the chaotic-phase fixed point c* is found by Steffensen's iteration.
    NumPy: raises NumericalError where 1 − c leaves the double range or the state leaves a route's range."""
    if backend == "numpy":
        a, sigma_w = np.broadcast_arrays(np.asarray(a, float), np.asarray(sigma_w, float))
    if activation == "srelu" and norm != "none":
        # φ(x) = relu(x) − k with k ∝ the nominal input sd (σ_w, or 1 after a pre-norm) is homogeneous in (x, k) and
        # every norm removes the scale: γ does not depend on σ_w (σ_w = 1 exactly; no overflow at σ_w = 1e308)
        sigma_w = np.ones(np.shape(sigma_w)) if backend == "numpy" else mpmath.mpf(1)
    ops = block(activation, norm, placement, a, sigma_w, B, backend)
    if backend == "numpy" and _fast_homogeneous(ops):
        try:
            return _homogeneous_gammas(L, acts.get(activation).slope_at(a) + 0.0 * sigma_w)
        except NumericalError as exc:
            raise NumericalError(f"{where}: {exc}") from None
    if activation == "srelu" and norm == "none":
        try:
            return (_srelu_points(L, a, sigma_w, where, last) if backend == "numpy"
                    else _srelu_path(L, a, sigma_w, backend, where, last))
        except NumericalError as exc:
            raise NumericalError(str(exc) if str(exc).startswith(where) else f"{where}: {exc}") from None
    if activation in mehler.ACTIVATIONS and norm == "rmsnorm" and placement == "post":
        routed = _mehler_split(L, activation, norm, placement, a, sigma_w, B, backend, where, last)
        if routed is not None:
            return routed
    # a norm first in the block is scale-invariant on a Dense output (m = 0): q is reset to 1 after every block, so
    # σ_w² q may overflow or underflow (σ_w = 1e308, 5e-324) without touching γ
    free = _scale_free(ops) or isinstance(ops[0], (O.LayerNorm, O.RMSNorm, O.BatchNorm))
    state = O.Dense(None, sigma_w).map(O.input_state(backend), backend)
    if isinstance(ops[0], (O.LayerNorm, O.RMSNorm, O.BatchNorm)):   # the norm resets q: σ_w² may underflow to 0
        state = dataclasses.replace(state, q=np.ones(np.shape(state.q)) if backend == "numpy" else 1 + 0 * state.q)
    tol = 4 * np.finfo(float).eps if backend == "numpy" else mpmath.mpf(10) ** (2 - mpmath.mp.dps)

    step = _block_step(ops, backend, free)

    def point_step(i):   # the block map of point i alone (NumPy)
        return _block_step(block(activation, norm, placement, a[i], sigma_w[i], B, backend), backend, free)

    out, prev, older, done, hinted, plain, frozen, tails = [], None, None, False, False, False, None, []
    anchor = None     # NumPy: (e, layer) per point where the geometric decay was first seen (``_span_ratio``)
    try:
        for layer in range(L):
            new = step(state)
            if backend == "numpy":
                if np.any(done):      # a point at its fixed point stays there: the array call = the scalar call
                    new = _freeze(new, done, frozen)
                O.check_state(new, f"{where} at layer {layer + 1}")
            out.append(new.gamma)
            rest = L - layer - 1
            if layer:
                newly = _stationary(state, new, tol, older) & ~np.asarray(done, bool)
                if (backend == "numpy" and layer in (1, 4, 16, 64) and rest > 20
                        and (free or np.array_equal(state.q, new.q))):   # q at its fixed point (a norm after φ)
                    fixed = _np_fixed_points(point_step, new, rest)   # Steffensen per point: ~20 maps, not ~500
                    newly = newly | (fixed[0] & ~np.asarray(done, bool))
                    new_fixed = dataclasses.replace(new, **{k: np.where(fixed[0], v, getattr(new, k))
                                                            for k, v in zip("qcem", fixed[1:])})
                else:
                    new_fixed = new
                if np.any(newly):
                    frozen = _freeze(frozen, newly, new_fixed)
                done = done | newly
                if np.all(done):
                    out += [(new_fixed if frozen is None else frozen).gamma] * rest
                    break
            ratio = new.e / state.e if layer else None
            aff, beta = _affine(ops, state, new, tol, backend, rest) if layer and rest else (False, None)
            geo = rest and _geometric(state.q, new.q, ratio, prev, tol)
            rate = ratio
            if backend == "numpy" and layer and rest:
                geo, rate, anchor = _span_ratio(geo, ratio, anchor, new, layer, rest, done)
            shortcuts = ((aff, lambda m: _affine_tail(new, np.where(m, beta, 0.0) if backend == "numpy" else beta,
                                                      rest, backend, last)),
                         (geo, lambda m: _geometric_tail(new, np.where(m, rate, 1.0) if backend == "numpy" else rate,
                                                         rest, backend, where, layer, last)))
            finished = False
            for mask, tail in shortcuts:
                if backend != "numpy":
                    if mask:
                        out, finished = out + tail(mask), True
                        break
                    continue
                # per point, so an array call gives each point its scalar value: the points' remaining layers are
                # their tails (written into ``out`` below), and they stay frozen meanwhile
                mask = mask & ~np.asarray(done, bool)
                if np.any(mask):
                    tails.append((mask, layer, tail(mask)))
                    frozen, done = _freeze(frozen, mask, new), done | mask
                    if np.all(done):
                        out, finished = out + [frozen.gamma] * rest, True
                        break
            if finished:
                break
            if backend == "mpmath" and layer and rest > 20 and (free or abs(new.q - state.q) <= tol * new.q):
                fixed = None
                if not hinted:        # once: from the double-precision fixed point, if there is one
                    hinted, c = True, _np_hint(activation, norm, placement, a, sigma_w, B, new, free, rest)
                    if c is not None:
                        fixed = _steffensen(step, new, tol, rest, O.State(new.q, c, 1 - c, new.m))
                if fixed is None and abs(ratio - 1) < 0.05 and not plain:
                    # once: ρ^rest·|c − c*| is the same at every later layer, so a failed attempt never succeeds
                    # later (each retry cost up to 24 maps: silu + RMSNorm after φ at L = 100 took > 200 s)
                    plain, fixed = True, _steffensen(step, new, tol, rest)
                if fixed is not None:
                    out += [fixed.gamma] * (1 if last else rest)
                    break
            state, prev, older = new, ratio, state
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None
    except NumericalError as exc:
        raise NumericalError(str(exc) if str(exc).startswith(where) else f"{where}: {exc}") from None
    for mask, start, tail in tails:
        for k, g in enumerate(tail):
            out[start + 1 + k] = np.where(mask, g, out[start + 1 + k])
    return out[-1:] if last else out


def _mehler_split(L, activation, norm, placement, a, sigma_w, B, backend, where, last):
    """GELU / SiLU with RMSNorm after φ at q = σ_w² <= mehler.Q_MAX: the block map at the fixed q is Mehler's power
    series, iterated as a polynomial (igbsym/mehler.py; the nested quadrature a layer took > 60 s at σ_w = 1e-3,
    L = 1e5). NumPy: the points with Q_LINEAR <= q <= Q_MAX (below, the linear branch's affine map in closed form);
    the other points take ``path``. Returns None where no point is routed here."""
    q = sigma_w**2
    if backend != "numpy":
        if not 0 < q <= mehler.Q_MAX:
            return None
        return [c / (1 - c) for c in mehler.mp_path(activation, q, L, last)]
    small = (q >= gauss.Q_LINEAR) & (q <= mehler.Q_MAX)
    if not small.any():
        return None
    out = [np.empty(a.shape) for _ in range(1 if last else L)]
    if not small.all():
        for o, g in zip(out, path(L, activation, norm, placement, a[~small], sigma_w[~small], B, backend, where,
                                  last)):
            o[~small] = g
    for i in filter(lambda i: small[i], np.ndindex(a.shape)):
        cs = mehler.np_path(activation, float(q[i]), L)
        for o, c in zip(out, cs[-1:] if last else cs):
            o[i] = c / (1 - c)
    return out


def np_path(L, activation, norm, placement, a, sigma_w, B=np.inf, where="depth.gamma"):
    """γ after hidden layers 1..L (a list of arrays broadcast over a, σ_w, B; B = inf is full batch)."""
    kind = _kind(activation, norm, placement)
    a, sigma_w, B = np.broadcast_arrays(*(np.asarray(v, float) for v in (a, sigma_w, B)))
    if kind == "zero":
        return [np.zeros(a.shape)] * L
    finite = np.isfinite(B)
    if kind != "bn_pre" or not finite.any():
        return path(L, activation, norm, placement, a, sigma_w, None, "numpy", where)
    out = [np.empty(a.shape) for _ in range(L)]
    groups = [(B == bb, int(bb)) for bb in np.unique(B[finite])] + [(~finite, None)]   # the ops take a scalar B
    for mask, bb in groups:
        if mask.any():
            for o, g in zip(out, path(L, activation, norm, placement, a[mask], sigma_w[mask], bb, "numpy", where)):
                o[mask] = g
    return out


def mp_gamma(L, activation, norm, placement, a, sigma_w, B, where="depth.gamma"):
    """γ_L at the working mpmath precision (the reference route; the ops' mpmath maps composed)."""
    if _kind(activation, norm, placement) == "zero":
        return mpmath.mpf(0)
    if _fast_homogeneous(block(activation, norm, placement, a, sigma_w, None, "mpmath")):
        return _mp_homogeneous_gamma(L, acts.get(activation).slope_at(a))
    return path(L, activation, norm, placement, a, sigma_w, None if mpmath.isinf(B) else int(B), "mpmath",
                where, last=True)[-1]


# --- the registered cases ----------------------------------------------------------------------------------
def exact_gamma(L, activation, norm, placement):
    """The nested closed form of γ_L (SymPy) for the closed-form activations: the ops' SymPy maps composed."""
    ops = block(activation, norm, placement, a_, sw_, shift_backend="sympy")
    state = O.Dense(None, sw_).sym(O.input_state("sympy"))
    for _ in range(L):
        for op in ops:
            state = op.sym(state)
    return sp.simplify(state.c / (1 - state.c)) if L == 1 else state.c / (1 - state.c)


def case(L, activation, norm, placement, where="depth.gamma"):
    kind = _kind(activation, norm, placement)
    if kind == "zero":
        return sp.S.Zero
    if kind in ("homogeneous", "srelu") and L <= L_EXACT:
        return exact_gamma(L, activation, norm, placement)
    if kind == "bn_pre":
        method, error = ("constant in depth (Thm E.1): E[phi(Z)]^2/Var[phi(Z)], Z ~ N(0,1), for B = inf; "
                         f"{BN_FORM}(B) for finite B"), "that of the block map / " + BN_FORM
    elif kind == "smooth":
        method, error = f"{L}-fold composition of the (q, c, 1-c) block map with quadrature moments", QUAD_ERROR
        if activation in mehler.ACTIVATIONS and norm == "rmsnorm" and placement == "post":
            method += (f"; at sigma_w^2 <= {mehler.Q_MAX}: Mehler's power series of the block map at the fixed q, "
                       "iterated as a polynomial (igbsym/mehler.py)")
    else:
        method = (f"{L}-fold composition of the closed-form block map in (c, 1-c) (nested form printed for "
                  f"L <= {L_EXACT})")
        error = "rounding only: relative error <= 1e-13 * L"
    method += "; stops at a fixed point of the block map (later layers repeat it)"
    return NumericRoute(
        lambda a, sigma_w, B=np.inf: np_path(L, activation, norm, placement, a, sigma_w, B, where)[-1],
        lambda a, sigma_w, B=mpmath.inf: mp_gamma(L, activation, norm, placement, a, sigma_w, B, where),
        method, error, sp.Symbol("c_L") / (1 - sp.Symbol("c_L")))


def _kernel(L, activation, norm, placement, a, sigma_w, B, where="depth.gamma"):
    return np_path(L, activation, norm, placement, a, sigma_w, B, where)[-1]


def _corr_kernel(activation, c, a):
    """k_s(c) without cancellation: for c >= 0, c + r(sin t − t c)/π (t = arccos c); for c < 0, with
    u = arccos(−c) = π − t, c(1 − r) + r(sin u − u cos u)/π (→ 0 smoothly as c → −1 for ReLU)."""
    s = acts.get(activation).slope_at(a)
    c, s = np.broadcast_arrays(np.asarray(c, float), np.asarray(s, float))
    r = O.slope_ratio(s)
    t = np.arccos(np.clip(c, -1, 1))
    u = np.arccos(np.clip(-c, -1, 1))
    pos = c + r * (np.sin(t) - t * c) / np.pi
    h = np.hypot(1.0, s)
    neg = c * (2 * (s / h) / h) + r * O.sin_minus_tcos(u) / np.pi   # 1 − r = 2s/(1 + s²), no cancellation near r = 1
    return np.where(c >= 0, pos, neg)


def corr_map_expr(c, s):
    """k_s(c) = spec.arccos_map(c, s) written without cancellation for the mpmath route: c(1 − r) with
    1 − r = 2s/(1 + s²) exactly, plus r(√(1 − c²) + c(π − arccos c))/π (at c = −1 the old form −1 + r lost every
    digit of −2s/(1 + s²) for large s: mp gave 0 where the value is −4.6e-116 at s = 4.3e115)."""
    r = (1 - s) ** 2 / (1 + s**2)
    return 2 * s * c / (1 + s**2) + r * (sp.sqrt(1 - c**2) + c * (sp.pi - sp.acos(c))) / sp.pi


DISPLAY = (r"\frac{c_L}{1-c_L},\; (q_1, c_1) = (\sigma_w^2, 0),\; "
           r"(q_{l+1}, c_{l+1}) = \left(\sigma_w^2 E[\phi(u)^2],\ \frac{E[\phi(u)\phi(u')]}{E[\phi(u)^2]}\right),\;"
           r"(u, u') \sim \mathcal{N}\left(0, q_l\begin{pmatrix}1 & c_l\\ c_l & 1\end{pmatrix}\right)"
           r"\quad\text{(norm placements: see summary)}")
L_PARAM = Param("L", "integer", "number of hidden layers", structural=True, minimum=1, maximum=L_MAX)
ACT = Param("activation", "choice", "activation function", choices=acts.names())
A = Param("a", "real", "leaky slope, used by leaky_relu only", default=0.01)
SW = Param("sigma_w", "positive", "Kaiming gain: weights N(0, sigma_w^2/fan_in); default sqrt(2), the papers' "
           "Kaiming setting (igbsym.spec.SIGMA_W)", default=O.SIGMA_W)
B_PARAM = Param("B", "integer", "BatchNorm batch size (training-mode batch statistics); inf = full batch",
                default=float("inf"), minimum=2, allow_inf=True)
B_FULL = Condition(sp.Eq(sp.Symbol("B", integer=True), sp.oo, evaluate=False),   # B is integer: kept unevaluated
                   "B = inf (full batch) for activations other than relu and the odd ones: the mini-batch law "
                   f"({BN_FORM}) covers relu only", applies=lambda case: _needs_full_batch(case.get("activation")))


def _needs_full_batch(activation) -> bool:
    """A norm='batchnorm' case whose mini-batch law is not known (see spec.Act._bn_minibatch)."""
    return activation not in ("relu",) + ODD
DEPTH_ACCURACY = Accuracy(1e-11, "smooth activations (sigmoid, gelu, silu): the quadrature moments' stated bound, "
                                  "1e-11 per layer (spec.QUAD_ERROR; measured <= 6e-16 against nested mpmath), amplified by "
                                  "1/(1 - rho) at a fixed point of contraction rho (measured <= 1e-13 at L = 1e5); "
                                  "closed-form activations: rounding only (measured 1.3e-14 at L = 1e5)")
ZERO_NOTE = "0 for every activation, width-limit exact; odd activations give 0 for every norm (data symmetric)"
DEPTH_NOTE = ("The papers leave the recursion numeric (App. F.1); here it is the arc-cosine map for (leaky) ReLU: "
              "gamma_L ~ 2 (1-a)^4 L^2 / (9 pi^2 (1+a^2)^2) as L -> inf (derivations/depth.py). SReLU (App. G.3) "
              "is IGB-free for one hidden layer only: its fixed shift no longer centres deeper layers")

register(ClosedForm(
    "depth.gamma", "gamma at the output of an L-hidden-layer MLP (infinite width, N(0, I) data, zero biases, "
                   "Kaiming weights) with an optional norm before (pre) or after (post) each activation.",
    (L_PARAM, ACT, Param("norm", "choice", "normalisation layer", choices=NORMS, default="none"),
     Param("placement", "choice", "norm before (pre) or after (post) the activation", choices=PLACEMENTS,
           default="pre"), A, SW, B_PARAM),
    Provenance(IGB, "App. F.1-F.2 (depth), App. G; norm-placement-bn-ln.txt Thms E.1, E.2, F.2, F.3", DEPTH_NOTE),
    builder=case, kernel=_kernel, display=DISPLAY, accuracy=DEPTH_ACCURACY,
    conditions=(Condition(B_FULL.relation, B_FULL.text + " (norm=batchnorm, placement=pre)",
                          applies=lambda case: case.get("norm") == "batchnorm" and case.get("placement", "pre") == "pre"
                          and _needs_full_batch(case.get("activation"))),)))
register(ClosedForm(
    "depth.corr_map", "One hidden (leaky) ReLU layer maps the input correlation c of two independent inputs to "
                      "E[phi(u)phi(u')]/E[phi(u)^2]: the normalised degree-1 arc-cosine kernel.",
    (Param("c", "real", "correlation of the pre-activations of two independent inputs, c = gamma/(1+gamma)"),
     Param("activation", "choice", "positively homogeneous activation", choices=tuple(_SLOPE)), A),
    Provenance(IGB, "App. F.1, Eqs. 137-141 in closed form; igb-talk-slides.txt (c = gamma/(1+gamma))",
               "Cho & Saul (2009) arc-cosine kernel of degree 1 (ReLU), generalised to slope a"),
    builder=lambda activation: corr_map_expr(sp.Symbol("c", real=True), _SLOPE[activation]), kernel=_corr_kernel,
    conditions=(Condition(sp.Le(sp.Abs(sp.Symbol("c", real=True)), 1), "-1 <= c <= 1"),)))

_PLACEMENT_FORMS = {
    ("batchnorm", "pre"): ("bn_pre", "Thm E.1 (E.1.1 full batch, E.1.2 mini-batch; value bn.gamma_canonical(B))",
                           "BN + phi: constant in depth, equal to one hidden layer with unit-variance pre-activations; "
                           "training-mode BN (batch statistics), affine weight 1 and bias 0 at init; eval mode at init "
                           "is the identity (running stats 0, 1) and gives the no-norm law"),
    ("batchnorm", "post"): ("bn_post", "Thm E.2", "phi + BN: 0 at every depth (each node is centred over the data); "
                                                  "training-mode BN, bias 0 at init; any activation, any batch size"),
    ("layernorm", "pre"): ("ln_pre", "Thm F.2",
                           "LN + phi: the no-norm law with the pre-activation variance reset to 1 at every layer; for "
                           "(leaky) ReLU exactly the no-norm law (positive homogeneity: LN divides by a positive "
                           "per-sample std, Lemma F.1 is needed only for alpha > 0)"),
    ("layernorm", "post"): ("ln_post", "Thm F.3", "phi + LN: 0 at every depth (layer-1 nodes are identically "
                                                   "distributed, so subtracting the layer mean centres every node)"),
    ("rmsnorm", "pre"): ("rms_pre", "Sec. 4.1.3", "RMSNorm + phi: equal to LN + phi at init (the layer mean of the "
                                                  "pre-activations vanishes)"),
    ("rmsnorm", "post"): ("rms_post", "Sec. 4.1.3 (claim fails)",
                          "phi + RMSNorm: NOT equal to phi + LN: the layer mean of phi(h) is E[phi] != 0 for ReLU, "
                          "RMSNorm does not remove it, and gamma follows the no-norm depth law (grows like L^2)"),
}
F2_NOTE = ("Thm F.2 holds for positively homogeneous activations only (LN resets q to 1; GELU/SiLU/sigmoid differ from "
           "the no-norm law); Eqs. 92-93 multiply by (sigma-hat^(1))^2 where LN divides, and the factor changes with "
           "depth; " + DEPTH_NOTE)
RMS_NOTE = ("Sec. 4.1.3 claims LN = RMSNorm at init in general: true before phi, false after phi (RMSNorm keeps the "
            "layer mean E[phi] > 0 of ReLU outputs, so gamma grows like the no-norm law, not 0 as for phi + LN)")
_NOTES = {"bn_pre": DEPTH_NOTE, "bn_post": ZERO_NOTE, "ln_post": ZERO_NOTE, "ln_pre": F2_NOTE, "rms_pre": RMS_NOTE,
          "rms_post": RMS_NOTE}
for (_norm, _pl), (_short, _where, _summary) in _PLACEMENT_FORMS.items():
    _params = (L_PARAM, ACT, A, SW) + ((B_PARAM,) if _norm == "batchnorm" else ())
    register(ClosedForm(
        f"depth.gamma_{_short}", f"gamma after L hidden layers, {_summary}.", _params,
        Provenance(NORM, _where, _NOTES[_short]),
        builder=(lambda n, p, w: lambda L, activation: case(L, activation, n, p, w))(_norm, _pl, f"depth.gamma_{_short}"),
        kernel=(lambda n, p, w: lambda L, activation, a, sigma_w, B=np.inf: _kernel(L, activation, n, p, a, sigma_w, B,
                                                                                   w))(_norm, _pl, f"depth.gamma_{_short}"),
        display=DISPLAY, accuracy=DEPTH_ACCURACY, conditions=(B_FULL,) if (_norm, _pl) == ("batchnorm", "pre") else ()))
