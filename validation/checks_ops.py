"""The generic simulation check over every op × activation (issue 51): adding an op (one module of igbsym/ops with an
``Op`` subclass and its ``example()``) or an activation (one entry of igbsym/activations.py) is checked against torch
with no other change.

Enumeration: the ops are ``igbsym.ops.OPS`` (every public ``Op`` subclass of the package), each at its own
``example()``; the activations are ``igbsym.activations.names()`` (the registry); the whole product runs in both
modes (quick: about 25 s on one core). An op is skipped only from its protocol, ``spatial`` (its map needs images:
the i.i.d. state has no positions) or ``whole_data`` (its map needs the whole batch: train-mode BatchNorm couples the
data points; checks_bn and depth_placements cover it), or where the width-limit walk itself refuses the network (its
one InputError line, e.g. an activation on non-Gaussian units); every skip is reported (``ctx.progress`` and the
list :func:`plan_combos` returns), never silent.

Network around op ∘ φ: the one-hidden-layer MLP head of ``NetSpec`` (Dense(N, σ_w = √2) → φ, srelu at its default
shift), then the op at width N (the fields that ``op.limit()`` drops set to N), then a readout Dense(N → N, gain 1),
d_in = N (igbsym/spec.py). Prediction: the ops' own maps through the public walk (``igbsym.engine.layer_gammas``,
the walk ``predict`` uses) for γ of the readout (= c/e of the state after the op), and ``igbsym.ops.compose`` for its
second moment E[o²] = q (the gain-1 readout keeps q); where the net is the depth law's MLP (no op, or a norm after φ:
the ops equal ``spec.mlp_ops(1, φ, norm, 'post')``) γ is credited to ``depth.gamma`` with that form's own value
(its mutations are caught here). Simulation: ``validation.simulate`` with a fresh N(0, I) dataset per init (inits
i.i.d.); γ̂ = ΣX/ΣY with X = mean over readout nodes of μ̂² − s²/D and Y = s² (stats.gamma_units, delta-method SE),
q̂ = mean of μ̂² + s²(1 − 1/D) (unbiased for E o²). Finite width: the 1/N Richardson extrapolation of two widths
(checks_depth.compare_widths: its SE, its t-tail alpha over the inits, no bias allowance: the O(1/N²) remainder
c₂/(N_s N_b) is below 1/(64·256) ≈ 6e-5 for |c₂| ≤ 1, under the SE). Maps are double-precision compositions
(relative accuracy ≈ 1e-12, far below the SE); torch's norm guard ε = 1e-5 moves q by a relative ε/Var ≤ 2e-4
here (sigmoid's smallest layer variance ≈ 0.07), under the SE (≥ 1e-3). m is not measured: a readout's mean is 0
whatever m is (an error in m alone shows only through a later LayerNorm or Residual).
"""
from __future__ import annotations

import dataclasses

import igbsym
from igbsym import activations as acts
from igbsym.engine import layer_gammas
from igbsym.errors import InputError
from igbsym.ops import OPS, Op, compose, input_state
from igbsym.spec import NORMS, SIGMA_W, NetSpec, Spec, default_srelu_shift, mlp_ops

from .checks import register_check, register_sizes, reusable, seed_for, size
from .checks_depth import compare_widths, ratio
from .simulate import simulate
from .stats import gamma_units, mean_se

register_sizes("ops", quick=dict(widths=(64, 256), inits=(96, 48), data=256),
               thorough=dict(widths=(128, 512), inits=(192, 64), data=512))
NONE = "none"        # the op-free net (depth.gamma's L = 1 MLP): every activation's baseline


def ops_under_test() -> dict:
    """{name: example instance} of every registered op (igbsym.ops.OPS), sorted by name."""
    return {name: OPS[name].example() for name in sorted(OPS)}


def skip_reason(op: Op) -> str | None:
    """Why the generic i.i.d.-data network cannot hold ``op`` (from its protocol), else None."""
    if op.spatial:
        return "spatial: its map needs images (the i.i.d. state has no positions; checks_nngp covers it)"
    if op.whole_data:
        return "whole_data: its map needs the whole batch (checks_bn and depth_placements cover it)"
    return None


def widened(op: Op, n: int) -> Op:
    """The op at width n: every field that ``op.limit()`` drops (its widths) set to n; composites recursively."""
    lim, vals = op.limit(), {}
    for f in dataclasses.fields(op):
        v, w = getattr(op, f.name), getattr(lim, f.name)
        if isinstance(v, tuple) and v and all(isinstance(o, Op) for o in v):
            vals[f.name] = tuple(widened(o, n) for o in v)
        elif v is not None and w is None:
            vals[f.name] = n
    return dataclasses.replace(op, **vals) if vals else op


def network(op: Op | None, act: str, n: int | None) -> Spec:
    """Dense(n, √2) → φ (NetSpec's head) → op at width n → readout Dense(n, gain 1); n None: the width limit."""
    head = NetSpec(n, (n,), act).ops
    tail = () if op is None else ((op.limit() if n is None else widened(op, n)),)
    return Spec(n, head + tail, n_classes=n if n is not None else 2, sigma_out=1.0)


def depth_case(spec: Spec, act: str) -> dict | None:
    """depth.gamma's keywords where the net's hidden ops are its L = 1 MLP (no norm, or a norm after φ), else None
    (``a`` only where the activation's slope is the leaky parameter, placement only with a norm: the form refuses
    a parameter its case ignores)."""
    a = spec.ops[1].a
    shift = default_srelu_shift("none", "pre", SIGMA_W) if act == "srelu" else None
    for norm in NORMS:
        if norm != "batchnorm" and tuple(o.limit() for o in spec.ops) == mlp_ops(1, act, norm, "post", a,
                                                                                 shift=shift):
            return dict(L=1, activation=act, **({"a": a} if acts.get(act).slope == "a" else {}),
                        **({"norm": norm, "placement": "post"} if norm != "none" else {}))
    return None


def prediction(op: Op | None, act: str) -> tuple:
    """(γ of the readout, its E[o²] = q after the op) by the ops' maps; InputError where the walk refuses the net."""
    ops = network(op, act, None).all_ops()
    return float(layer_gammas(ops, where="ops.generic")[-1]), float(compose(ops, input_state())[-1].q)


def plan_combos(ops: dict, activations) -> tuple:
    """([(op name, op or None, activation)], [(op name, activation or '*', reason)]): every activation's op-free
    baseline, then every op × activation that the protocol and the walk admit."""
    run, skipped = [(NONE, None, a) for a in activations], []
    for name, op in ops.items():
        reason = skip_reason(op)
        if reason:
            skipped.append((name, "*", reason))
            continue
        for act in activations:
            try:
                prediction(op, act)
            except InputError as exc:
                skipped.append((name, act, str(exc)))
                continue
            run.append((name, op, act))
    return run, skipped


@reusable
def _readout_units(ctx, op, act, width, inits, n_data, seed):
    """Per init (X, Y, Q) of the readout nodes: μ̂² − s²/D, s², μ̂² + s²(1 − 1/D), averaged over nodes."""
    res = simulate(network(op, act, width), inits, n_data, seed=seed, device=ctx.device, layer_stats=False,
                   fresh_data=True)
    x, y = gamma_units(res.out.mean, res.out.var, res.n_data)
    return x, y, x + y


def combo_results(ctx, name, op, act, widths, inits, n_data) -> list:
    """The Results of one op × activation: γ of the readout (depth.gamma's value where ``depth_case``, else the ops'
    walk, form 'ops.map') and its second moment q (form 'ops.map'), by Richardson over the two widths."""
    gamma, q = prediction(op, act)
    units = {w: _readout_units(ctx, op, act, w, i, n_data, seed_for(ctx, "ops", name, act, w))
             for w, i in zip(widths, inits)}
    case = depth_case(network(op, act, None), act)
    form = "ops.map" if case is None else "depth.gamma"
    if case is not None:
        gamma = float(igbsym.get("depth.gamma").numpy(**case))
    per_width = dict(zip(widths, inits))
    g_hat = {w: ratio(x, y) for w, (x, y, _) in units.items()}
    q_hat = {w: (mean_se(qs).value, mean_se(qs).se) for w, (_, _, qs) in units.items()}
    label = f"{name} after {act}"
    note = "prediction: depth.gamma" if case else "prediction: the ops' maps (engine walk)"
    return (compare_widths(form, f"{label}: gamma of the readout", gamma, g_hat, widths, ctx.seed, note, per_width)
            + compare_widths("ops.map", f"{label}: q after the op", q, q_hat, widths, ctx.seed,
                             "prediction: compose of the ops' maps", per_width))


def generic_results(ctx, ops: dict, activations, widths, inits, n_data) -> tuple:
    """(Results, skipped) of the generic check over ``ops`` × ``activations`` (``plan_combos``) at the given sizes."""
    run, skipped = plan_combos(ops, tuple(activations))
    for name, act, reason in skipped:
        ctx.progress(f"ops.generic: skip {name} after {act}: {reason}")
    out = []
    for name, op, act in run:
        ctx.progress(f"ops.generic: {name} after {act}")
        out += combo_results(ctx, name, op, act, widths, inits, n_data)
    return out, skipped


@register_check("ops.generic", forms=["depth.gamma"])
def check_generic(ctx) -> list:
    """Every op (its example) × activation in Dense → φ → op → readout vs torch at two widths (Richardson)."""
    out, _ = generic_results(ctx, ops_under_test(), acts.names(), size(ctx, "ops.widths"), size(ctx, "ops.inits"),
                             size(ctx, "ops.data"))
    return out
