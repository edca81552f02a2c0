"""Routes of the layer walk for blocks whose map has a cheaper exact form than composing the ops' maps.

- ``arccos``: a block acting through one positively homogeneous φ = x⁺ − s x⁻ (other ops keep the centre share) is
  the degree-1 arc-cosine map k_s on (c, e = 1 − c) alone (Cho & Saul 2009; IGB paper App. F.1): iterated in
  plain floats / raw mpmath numbers;
- ``shift``: srelu (φ = relu − κ·rms, the IGB paper's App. G.3 shift centring layer 1) then Dense: homogeneous in
  (x, κ), so the state is carried at q = 1 with the shift relative to the input rms, κ' = κ/√q';
- ``mehler``: GELU / SiLU then RMSNorm then Dense at q = σ_w² <= mehler.Q_MAX: the block map at the fixed q is
  Mehler's power series, iterated as a polynomial (igbsym/mehler.py).
"""
from __future__ import annotations

import math

import mpmath
import numpy as np
from mpmath import libmp

from .. import gauss, mehler
from ..errors import NumericalError
from ..ops import E_MIN, SHIFT_CANCEL, Act, arccos_loss, State, check_state, input_state, sin_minus_tcos, slope_ratio
from .tails import geometric, geometric_tail, stationary


def arccos_block(ops) -> bool:
    """The block acts on (c, 1 − c) through one positively homogeneous φ only (every other op keeps the centre share:
    Dense, RMSNorm, LayerNorm on a centred input before φ): the map is k_s on (c, e) alone."""
    acts_at = [i for i, op in enumerate(ops) if op.elementwise]
    if len(acts_at) != 1 or ops[acts_at[0]].degree != 1:
        return False
    k = acts_at[0]
    return all(op.keeps_share is True or (op.keeps_share == "centred" and i < k) for i, op in enumerate(ops) if i != k)


def arccos_gammas(L, slope, start=(0.0, 1.0)):
    """γ_l, l = 1..L, of the (leaky) ReLU depth law, iterating (c, e = 1 − c) with t = arccos c from e, from the
    state ``start`` = (c, e) (the data: (0, 1))."""
    r = slope_ratio(slope)
    c0, e0 = (np.broadcast_to(np.asarray(v, float), r.shape) for v in start)
    if 0 < r.size <= 8 and r.ndim:      # a few points: the scalar loop per point is faster than array ufuncs
        cols = [arccos_gammas(L, float(s_), (float(c_), float(e_)))
                for s_, c_, e_ in zip(np.asarray(slope, float).ravel(), c0.ravel(), e0.ravel())]
        return [np.array([col[i] for col in cols]).reshape(r.shape) for i in range(L)]
    if r.ndim == 0:
        r = float(r)
        c, e, out = float(c0), float(e0), []
        for _ in range(L):
            t = 2 * math.asin(math.sqrt(e / 2))
            g = sin_minus_tcos(t)
            c, e = (r / math.pi if c == 0 else c + r * (math.sin(t) - t * c) / math.pi), max(e - r * g / math.pi, 0.0)
            if e < E_MIN:
                raise NumericalError(f"1 - c = {e:.3g}: gamma exceeds the double range")
            out.append(np.float64(c / e))
        return out
    c, e, out = np.array(c0), np.array(e0), []
    for _ in range(L):
        t = 2 * np.arcsin(np.sqrt(e / 2))
        c, e = c + r * (np.sin(t) - t * c) / np.pi, np.maximum(arccos_loss(e, r), 0.0)
        if (e < E_MIN).any():
            raise NumericalError(f"1 - c = {float(e.min()):.3g}: gamma exceeds the double range")
        out.append(c / e)
    return out


def arccos_gamma_mp(L, slope, start=None):
    """γ_L of the (leaky) ReLU depth law at the working mpmath precision: the same (c, e = 1 − c) iteration as
    spec's mpmath Act map, in one loop on mpmath's raw numbers (``mpmath.libmp``) with 24 guard bits (the generic op
    composition cost ~1 ms a layer, the mpf loop ~150 µs: 35 s for the two references at L = 1e5). sin t − t cos t
    is evaluated with the 2 log2(1/t) bits its cancellation loses added to the precision."""
    prec = mpmath.mp.prec + 24
    with mpmath.workprec(prec):
        rpi = (slope_ratio(mpmath.mpf(slope)) / mpmath.pi)._mpf_
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


KAPPA_1 = 1 / math.sqrt(2 * math.pi)     # srelu's layer-1 shift in units of the input rms (centres layer 1 exactly)


class ShiftCancels(Exception):
    """Raised inside the NumPy srelu path where E φ = 1/√(2π) − κ cancels; ``shift_points`` re-evaluates."""


def shift_points(L, a, sigma_w, where, last):
    """The NumPy srelu path, except where κ returns to κ₁ (σ_w²·S ≈ 1, e.g. σ_w ≈ √(2π/(π − 1)) = 1.713 at layer
    2): there E φ = 1/√(2π) − κ is a difference of nearly equal doubles, c' = (E φ)²/S at the next layer is all
    of it, and the double route lost up to every digit (1e-4 relative at σ_w = 1.713(1 + 1e-12)). Such a point is
    evaluated on the mpmath route at 40 digits, the others on NumPy one by one (the array call = the scalar
    calls)."""
    try:
        return shift_path(L, a, sigma_w, "numpy", where, last)
    except ShiftCancels:
        pass
    out = None
    for i in np.ndindex(a.shape):
        try:
            g = shift_path(L, a[i], sigma_w[i], "numpy", where, last)
        except ShiftCancels:
            with mpmath.workdps(40):
                g = shift_path(L, mpmath.mpf(float(a[i])), mpmath.mpf(float(sigma_w[i])), "mpmath", where, last)
            if not all(mpmath.isfinite(x) and abs(x) < 1e300 for x in g):
                raise NumericalError(f"{where}: gamma exceeds the double range (the mpmath route gives "
                                     f"{mpmath.nstr(max(g), 5)})") from None
            g = [float(x) for x in g]
        out = out or [np.empty(a.shape) for _ in g]
        for o, x in zip(out, g):
            o[i] = x
    return out


def shift_path(L, a, sigma_w, backend, where, last):
    """γ_l of the no-norm SReLU MLP without overflow at any σ_w: the block φ(x) = relu(x) − k then Dense is
    positively homogeneous in (x, k), so the state is carried at q = 1 with the shift relative to the input rms,
    κ = k/√q (κ₁ = 1/√(2π): layer 1 is centred exactly), κ' = κ/√q'. Where κ settles the remaining layers follow
    the fixed-point or geometric shortcuts of ``path``; where κ falls below the working precision (σ_w large: the
    shift no longer matters) the remaining layers are the ReLU law from the current (c, e); where κ overflows (σ_w
    tiny: the shift dominates) 1 − c ~ 1/κ² and γ is beyond the double range."""
    mp = backend == "mpmath"
    if mp:
        kappa, tol = 1 / mpmath.sqrt(2 * mpmath.pi), mpmath.mpf(10) ** (2 - mpmath.mp.dps)
        state = input_state("mpmath")
    else:
        a, sigma_w = np.broadcast_arrays(np.asarray(a, float), np.asarray(sigma_w, float))
        kappa, tol = np.full(a.shape, KAPPA_1), 4 * np.finfo(float).eps
        state = State(np.ones(a.shape), np.zeros(a.shape), np.ones(a.shape), np.zeros(a.shape))
    sqrt = mpmath.sqrt if mp else np.sqrt
    out, prev, ratio = [], None, None
    for layer in range(L):
        if not mp and layer and np.any(SHIFT_CANCEL * np.abs(kappa - KAPPA_1) < kappa):
            raise ShiftCancels
        new = Act("srelu", a, kappa).map(state, backend)        # the Dense after it keeps (c, e), q' = σ_w² S
        with np.errstate(over="ignore", divide="ignore"):
            k_new = kappa / sigma_w / sqrt(new.q)
        new = State(1 + 0 * new.q, new.c, new.e, 0 * new.m)
        if not mp:
            if not np.all(np.isfinite(k_new)):
                raise NumericalError(f"{where} at layer {layer + 2}: the shift dominates (shift/rms > 1e308): "
                                     "1 - c < 1e-300, gamma exceeds the double range")
            check_state(new, f"{where} at layer {layer + 1}")
        out.append(new.gamma)
        rest = L - layer - 1
        if not rest:
            break
        small = (k_new <= tol * (1 - k_new / kappa)) if mp else bool(np.all(k_new <= tol * (1 - k_new / kappa)))
        if small:       # the shift's remaining effect, Σ κ_k <= κ/(1 − ratio), is below the working precision
            tail = (arccos_gamma_mp(rest, 0, (new.c, new.e)) if mp
                    else arccos_gammas(rest, 0.0 * a, (new.c, new.e)))
            out += [tail] if mp else tail
            break
        if layer and np.all(stationary(State(kappa, state.c, state.e, 0), State(k_new, new.c, new.e, 0), tol)):
            out += [new.gamma] * rest
            break
        ratio = new.e / state.e if layer else None
        if np.all(geometric(kappa, k_new, ratio, prev, tol)):
            out += geometric_tail(new, ratio, rest, backend, where, layer, last)
            break
        state, kappa, prev = new, k_new, ratio
    return out[-1:] if last else out


def mehler_block(ops) -> bool:
    """φ ∈ mehler.ACTIVATIONS, then a scale-invariant op that keeps the centre share (RMSNorm), then the Dense: the
    q entering φ is σ_w² at every layer."""
    return (len(ops) == 3 and ops[0].elementwise and ops[0].name in mehler.ACTIVATIONS
            and ops[1].keeps_share is True and ops[1].degree == 0 and ops[2].starts_layer)


def mehler_split(L, ops, backend, last, walk_rest):
    """γ_l by Mehler's series where q = σ_w² <= mehler.Q_MAX (NumPy: Q_LINEAR <= q, below which the walk's affine
    tail is exact); ``walk_rest(mask)`` walks the other points. Returns None where no point is routed here."""
    activation, sigma_w = ops[0].name, ops[2].sigma_w
    if backend != "numpy":
        q = sigma_w**2                                  # mpmath: no overflow
        if not 0 < q <= mehler.Q_MAX:
            return None
        return [c / (1 - c) for c in mehler.mp_path(activation, q, L, last)]
    with np.errstate(over="ignore"):                    # a Python float σ_w = 1e200 would raise OverflowError
        q = np.square(np.asarray(sigma_w, float))
    small = (q >= gauss.Q_LINEAR) & (q <= mehler.Q_MAX)
    if not small.any():
        return None
    out = [np.empty(q.shape) for _ in range(1 if last else L)]
    if not small.all():
        for o, g in zip(out, walk_rest(~small)):
            o[~small] = g
    for i in filter(lambda i: small[i], np.ndindex(q.shape)):
        cs = mehler.np_path(activation, float(q[i]), L)
        for o, c in zip(out, cs[-1:] if last else cs):
            o[i] = c / (1 - c)
    return out
