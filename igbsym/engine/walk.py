"""The layer walk: γ after every block of a spec's repeated block, with exact shortcuts so cost does not grow with L.

``walk(head, block, L, backend)`` composes ``head`` (the ops before the first block, e.g. the first Dense) and then
``block`` L times from N(0, I) data, observing γ = c/e after every block (igb-initial-guessing-bias.txt App. F.1:
the depth law; residual blocks likewise). Blocks with a cheaper exact map take a route of ``routes`` (arc-cosine,
srelu's shift, Mehler's series); otherwise the ops' maps are composed and the walk stops where the remaining
layers are known: a fixed point of the block map (directly, or by Steffensen's iteration in ``fixed``), the
geometric or affine tails of ``tails``. NumPy evaluates every point of broadcast parameters on its own course (an
array call gives each point its scalar value); NumericalError where γ leaves the double range or a quadrature
route its range in q.
"""
from __future__ import annotations

import dataclasses
import math

import mpmath
import numpy as np

from ..errors import InputError, NumericalError
from ..ops import State, check_state, compose, degree, input_state
from .fixed import PROXY_MIN, block_step, chebyshev_tail, np_fixed_points, np_hint, steffensen
from .routes import (arccos_block, arccos_gamma_mp, arccos_gammas, mehler_block, mehler_split, shift_path,
                     shift_points)
from .tails import affine, affine_tail, freeze, geometric, geometric_tail, span_ratio, stationary


def points(ops) -> tuple:
    """The broadcast shape of the array-valued parameters of ``ops`` (their points)."""
    shapes = [np.shape(getattr(op, f.name)) for op in ops for f in dataclasses.fields(op)
              if isinstance(getattr(op, f.name), np.ndarray)]
    return np.broadcast_shapes(*shapes) if shapes else ()


def walk(head, ops, L, backend="numpy", where="walk", last=False):
    """γ after blocks 1..L (module docstring); ``last``: only γ_L. NumPy parameters of the ops must be broadcast
    to one shape (``points``)."""
    try:
        routed = _route(head, ops, L, backend, where, last)
    except NumericalError as exc:
        raise NumericalError(_prefixed(where, exc)) from None
    return routed if routed is not None else _compose_walk(head, ops, L, backend, where, last)


def _route(head, ops, L, backend, where, last):
    """γ by a cheaper exact route of ``routes`` where the block has one, else None."""
    act = ops[0] if ops[0].elementwise else None
    if arccos_block(ops) and (backend == "numpy" or last):
        slope = next(op for op in ops if op.elementwise).slope
        if backend != "numpy":
            return [arccos_gamma_mp(L, slope)]
        return arccos_gammas(L, np.asarray(slope, float) + np.zeros(points(ops)))
    if (act is not None and act.name == "srelu" and len(ops) == 2 and ops[1].starts_layer and len(head) == 1
            and head[0].starts_layer and head[0].degree == 1 and ops[1].degree == 1   # no bias
            and _centres_layer_one(act, ops[1], backend)):
        if backend == "numpy":
            return shift_points(L, *np.broadcast_arrays(np.asarray(act.a, float), np.asarray(ops[1].sigma_w, float)),
                                where, last)
        return shift_path(L, act.a, ops[1].sigma_w, backend, where, last)
    if mehler_block(ops):
        return mehler_split(L, ops, backend, last, lambda mask: _compose_walk(
            tuple(op.at(mask) for op in head), tuple(op.at(mask) for op in ops), L, backend, where, last))
    return None


def _centres_layer_one(act, dense, backend) -> bool:
    """srelu's shift is the ReLU mean σ_w/√(2π) of layer 1's N(0, σ_w²) input (the IGB paper's convention)."""
    if backend == "numpy":
        return bool(np.all(np.asarray(act.shift, float) == np.asarray(dense.sigma_w, float) / math.sqrt(2 * math.pi)))
    return act.shift == dense.sigma_w / mpmath.sqrt(2 * mpmath.pi)


def _compose_walk(head, ops, L, backend, where, last):
    """γ after blocks 1..L by composing the ops' maps, stopping where the remaining layers are known: at a fixed
    point, on an affine or geometric tail (module docstring; per point in NumPy)."""
    # a block with a homogeneity degree commutes with rescaling: the state is put at q = 1 after every block, so q
    # may overflow or underflow (σ_w = 1e308, 5e-324) without touching γ; a scale-invariant first op (a norm) makes
    # the state after the head irrelevant to q as well
    free = degree(ops) is not None
    state = compose(head, input_state(backend), backend)[-1]
    if ops[0].degree == 0:
        state = dataclasses.replace(state, q=np.ones(np.shape(state.q)) if backend == "numpy" else 1 + 0 * state.q)
    tol = 4 * np.finfo(float).eps if backend == "numpy" else mpmath.mpf(10) ** (2 - mpmath.mp.dps)
    run = _Walk(ops, backend, where, last, free, tol, block_step(ops, backend, free))
    prev, older = None, None
    try:
        for layer in range(L):
            new = run.advance(state, layer)
            rest = L - layer - 1
            if layer and run.settle(state, new, older, layer, rest):
                break
            ratio = new.e / state.e if layer else None
            if run.tail(state, new, ratio, prev, layer, rest) or run.mp_fixed(state, new, ratio, layer, rest):
                break
            state, prev, older = new, ratio, state
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None
    except NumericalError as exc:
        raise NumericalError(_prefixed(where, exc)) from None
    return run.result()


def _prefixed(where, exc) -> str:
    """The error's message beginning with ``where`` (once)."""
    return str(exc) if str(exc).startswith(where) else f"{where}: {exc}"


@dataclasses.dataclass
class _Walk:
    """One composed walk (``_compose_walk``): γ so far (``out``); the points ``done`` (at their fixed point or on a
    tail) stay at ``frozen``; ``tails`` (mask, layer, γ after it) are written back at the end; ``anchor``: NumPy's
    (e, layer) per point where the geometric decay was first seen (``span_ratio``); ``hinted``, ``plain``: mpmath's
    once-only fixed-point attempts."""
    ops: tuple
    backend: str
    where: str
    last: bool
    free: bool
    tol: object
    step: object
    out: list = dataclasses.field(default_factory=list)
    done: object = False
    frozen: object = None
    tails: list = dataclasses.field(default_factory=list)
    anchor: object = None
    hinted: bool = False
    plain: bool = False

    def point_step(self, i):
        """The block map of point i alone (NumPy)."""
        return block_step(tuple(op.at(i) for op in self.ops), self.backend, self.free)

    def advance(self, state, layer):
        """The state after one more block, its γ appended; NumPy: the points done stay where they are (the array
        call = the scalar call)."""
        new = self.step(state)
        if self.backend == "numpy":
            if np.any(self.done):
                new = freeze(new, self.done, self.frozen)
            check_state(new, f"{self.where} at layer {layer + 1}")
        self.out.append(new.gamma)
        return new

    def settle(self, state, new, older, layer, rest) -> bool:
        """Freeze the points at their fixed point: stationary, or (NumPy, layers 1, 4, 16, 64, q at its fixed point)
        found by Steffensen's iteration per point; True (the rest of ``out`` filled in) once every point is."""
        newly = stationary(state, new, self.tol, older) & ~np.asarray(self.done, bool)
        if (self.backend == "numpy" and layer in (1, 4, 16, 64) and rest > 20
                and (self.free or np.array_equal(state.q, new.q))):   # q at its fixed point (a norm after φ)
            # Steffensen per point (~20 maps, not ~500); the layers it skips must all equal c*: the last only
            # (ρ^rest |c − c*| < tol) when only γ_L is wanted, else the next one already (ρ |c − c*|)
            fixed = np_fixed_points(self.point_step, new, rest if self.last else 1)
            newly = newly | (fixed[0] & ~np.asarray(self.done, bool))
            new = dataclasses.replace(new, **{k: np.where(fixed[0], v, getattr(new, k))
                                              for k, v in zip("qcem", fixed[1:])})
        if np.any(newly):
            self.frozen = freeze(self.frozen, newly, new)
        self.done = self.done | newly
        if np.all(self.done):
            self.out += [(new if self.frozen is None else self.frozen).gamma] * rest
            return True
        return False

    def tail(self, state, new, ratio, prev, layer, rest) -> bool:
        """The affine or geometric tail where the remaining layers follow one (``tails``); True once the walk is
        finished."""
        backend = self.backend
        aff, beta = affine(self.ops, state, new, self.tol, backend, rest) if layer and rest else (False, None)
        geo = rest and geometric(state.q, new.q, ratio, prev, self.tol)
        rate = ratio
        if backend == "numpy" and layer and rest:
            geo, rate, self.anchor = span_ratio(geo, ratio, self.anchor, new, layer, rest, self.done)
        shortcuts = ((aff, lambda m: affine_tail(new, np.where(m, beta, 0.0) if backend == "numpy" else beta,
                                                  rest, backend, self.last)),
                     (geo, lambda m: geometric_tail(new, np.where(m, rate, 1.0) if backend == "numpy" else rate,
                                                     rest, backend, self.where, layer, self.last)))
        for mask, tail in shortcuts:
            if backend != "numpy":
                if mask:
                    self.out = self.out + tail(mask)
                    return True
                continue
            # per point, so an array call gives each point its scalar value: the points' remaining layers are their
            # tails (written into ``out`` by ``result``), and they stay frozen meanwhile
            mask = mask & ~np.asarray(self.done, bool)
            if np.any(mask):
                self.tails.append((mask, layer, tail(mask)))
                self.frozen, self.done = freeze(self.frozen, mask, new), self.done | mask
                if np.all(self.done):
                    self.out = self.out + [self.frozen.gamma] * rest
                    return True
        return False

    def mp_fixed(self, state, new, ratio, layer, rest) -> bool:
        """mpmath, q at its fixed point: the remaining layers from the fixed point c* (Steffensen's iteration from
        the double-precision hint, else the Chebyshev proxy of F(v), once; or plain Steffensen, once, where the
        decay is slow); True once found."""
        if not (self.backend == "mpmath" and layer and rest > 20
                and (self.free or abs(new.q - state.q) <= self.tol * new.q)):
            return False
        fixed, wanted = None, rest if self.last else 1
        if not self.hinted:        # once: from the double-precision fixed point, if there is one
            self.hinted, c_star = True, np_hint(self.ops, new, self.free)
            if c_star is not None:
                fixed = steffensen(self.step, new, self.tol, wanted, State(new.q, c_star, 1 - c_star, new.m))
            if fixed is None and c_star is not None and rest >= PROXY_MIN and new.m == 0:   # F(v) alone
                tail = chebyshev_tail(self.step, new, c_star, rest, self.tol, self.last)
                if tail is not None:
                    self.out += tail
                    return True
        if fixed is None and abs(ratio - 1) < 0.05 and not self.plain:
            # once: ρ^rest·|c − c*| is the same at every later layer, so a failed attempt never succeeds later (and
            # each attempt costs up to 24 maps)
            self.plain, fixed = True, steffensen(self.step, new, self.tol, wanted)
        if fixed is not None:
            self.out += [fixed.gamma] * (1 if self.last else rest)
            return True
        return False

    def result(self) -> list:
        """``out`` with the per-point tails written in; only γ_L if ``last``."""
        out = self.out
        for mask, start, tail in self.tails:
            for k, g in enumerate(tail):
                out[start + 1 + k] = np.where(mask, g, out[start + 1 + k])
        return out[-1:] if self.last else out
