"""Tail shortcuts of the layer walk: where the remaining layers are known without walking them.

- ``stationary``: the block map has reached its fixed point (later layers repeat it);
- ``geometric`` / ``geometric_tail``: at a fixed q, 1 − c decays geometrically (the ordered phase: the map is
  e → ρe to the working precision once e is small), so the remaining layers are e·ρ^k (NumPy: ρ measured over
  ``SPAN`` layers, ``span_ratio``);
- ``affine`` / ``affine_tail``: φ comes first and sees q below its linear range, so the block is the affine map
  c' = (c + β)/(1 + β) and 1 − c = e/(1 + β)^k exactly.
``freeze`` keeps the points whose remaining layers are known unchanged while the other points walk on (so an
array call gives every point its scalar value).
"""
from __future__ import annotations

import dataclasses

import mpmath
import numpy as np

from .. import gauss
from ..errors import NumericalError
from ..ops import E_MIN


def stationary(old, new, tol, older=None):
    """The block map has reached its fixed point to ``tol`` relative (q too, unless φ is linear there): elementwise
    (a bool array on the NumPy route, a bool on mpmath). With ``older`` (the state before ``old``) the step is
    divided by 1 − ρ, ρ = |e_new − e_old|/|e_old − e_older| the contraction (where ρ < 1): the distance to the fixed
    point is ρ/(1 − ρ) steps, so a slow contraction is not taken for convergence."""
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


RATIO_GAP = 1e-3    # the geometric tail needs e_(l+1)/e_l < 1 - RATIO_GAP: a decay to 0, not a nonzero fixed point


def geometric(q_old, q_new, ratio, prev, tol) -> bool:
    """1 − c decays geometrically at a fixed q: the ratio e_(l+1)/e_l has settled to ``tol``·(1 − ratio)² (the
    remaining layers' ratios differ from it by a geometrically decaying amount whose sum, over all layers, is
    below tol relative), with ratio < 1 − RATIO_GAP and q at its fixed point. The gap: near a nonzero fixed
    point e* the ratio is 1 − O(ulp) and two rounded ratios can be equal, which passed the test and extrapolated
    e·ratio^k over 1e5 layers (a nonzero fixed point would be extrapolated as a decay)."""
    if prev is None:
        return False
    if isinstance(ratio, mpmath.mpf):
        return (ratio < 1 - RATIO_GAP and abs(ratio - prev) <= tol * (1 - ratio) ** 2) and (
            abs(q_old - q_new) <= tol * abs(q_new) or q_new < gauss.Q_LINEAR)
    ratio, prev, q_old, q_new = (np.asarray(v, float) for v in (ratio, prev, q_old, q_new))
    ok = (ratio < 1 - RATIO_GAP) & (np.abs(ratio - prev) <= tol * (1 - ratio) ** 2)   # per point (NumPy)
    return ok & ((np.abs(q_old - q_new) <= tol * np.abs(q_new)) | (q_new < gauss.Q_LINEAR))


def geometric_tail(new, ratio, rest, backend, where, layer, last):
    """γ at the remaining ``rest`` layers when e = 1 − c decays by ``ratio`` a layer (c + e = 1 is kept:
    c_k = c + e − e_k); NumPy raises NumericalError at the first layer where e leaves the double range."""
    if backend != "numpy":
        ks = [rest] if last else range(1, rest + 1)
        return [(new.c + new.e - new.e * ratio**k) / (new.e * ratio**k) for k in ks]
    ks = np.arange(1, rest + 1).reshape((-1,) + (1,) * np.ndim(ratio))
    with np.errstate(under="ignore"):
        e = new.e * np.exp(ks * np.log(ratio))       # e·ratio^k without k-fold rounding of a product
    if (e < E_MIN).any():
        k = int(np.argmax((e < E_MIN).reshape(rest, -1).any(axis=1)))
        rate = float(np.max(np.where(e[k] < E_MIN, ratio, 0.0)))     # the ratio of a point that left the range
        raise NumericalError(f"{where} at layer {layer + 2 + k}: 1 - c = {float(e[k].min()):.3g} < {E_MIN:g}: "
                             "gamma = c/(1-c) exceeds the double range (1 - c decays geometrically, ratio "
                             f"{rate:.6g} a layer)")
    return list((new.c + new.e - e) / e)


SPAN = 256          # NumPy: the geometric tail's ratio is measured over this many layers, not one


def span_ratio(geo, ratio, anchor, new, layer, rest, done):
    """The NumPy geometric tail e·ρ^k multiplies the error of ρ by k, and a one-layer ratio of two rounded e's carries
    ~1e-15: measured over SPAN layers the error of ρ is SPAN times smaller. A point where
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


def freeze(frozen, mask, new):
    """``frozen`` with the points in ``mask`` set to ``new`` (NumPy): the states of the points whose remaining
    layers are already known (a fixed point or a tail), so that later layers leave them as they are."""
    if frozen is None:
        return new
    return dataclasses.replace(frozen, **{k: np.where(mask, getattr(new, k), getattr(frozen, k)) for k in "qcem"})


def affine(ops, state, new, tol, backend, rest):
    """Per point: the block map is affine in c to the working precision, c' = (c + β)/(1 + β): φ comes first and
    the q entering it is below 1e-60 (NumPy, where its linear branch is exactly this map) or 1e-40 with the final c
    below 10^-(dps+5) (mpmath: the next terms are O(c) relative) and stays fixed (a norm after φ resets it). Then
    1 − c = e/(1 + β)^k exactly, with no fixed point for ~1/β layers: the iteration would walk every layer
    (gelu + RMSNorm after φ at L = 1e5, σ_w = 1e-320: 27 s a precision). Returns the mask and β = (c' − c)/e'."""
    if not ops[0].elementwise:
        return False, None
    if backend != "numpy":   # the map's next terms are O(c) relative: c_L ~ c + rest·β must be below the precision
        beta = (new.c - state.c) / new.e
        ok = state.q < mpmath.mpf("1e-40") and abs(new.q - state.q) <= tol * new.q and beta > 0
        return ok and new.c + rest * beta < mpmath.mpf(10) ** (-mpmath.mp.dps - 5), beta
    q_old, q_new = np.asarray(state.q, float), np.asarray(new.q, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        beta = (np.asarray(new.c, float) - state.c) / new.e
    return (q_old < gauss.Q_LINEAR) & (q_old == q_new) & (beta > 0), beta


def affine_tail(new, beta, rest, backend, last):
    """γ at the remaining ``rest`` layers of the affine map (``affine``): (expm1(k·log1p β) + c)/e."""
    if backend != "numpy":
        ks = [rest] if last else range(1, rest + 1)
        return [(mpmath.expm1(k * mpmath.log1p(beta)) + new.c) / new.e for k in ks]
    ks = np.arange(1, rest + 1).reshape((-1,) + (1,) * np.ndim(beta))
    return list((np.expm1(ks * np.log1p(beta)) + new.c) / new.e)
