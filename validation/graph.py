"""A torch model's forward graph as igbsym ops (issue 45): what torch runs, not the list of its modules.

``graph_ops(module, input_shape, law) -> (ops, names)`` traces ``module`` with torch.fx (``symbolic_trace``: every
stock ``torch.nn`` module is a leaf, custom modules are traced through, so a module instance called twice is two
nodes and a functional call is a node) and propagates shapes on two zero points (``ShapeProp``). Nodes map to ops:
stock modules (``validation.translate.leaf``); the functional forms of the activations (``FUNCTIONS``, ``METHODS``);
``view``/``reshape``/``flatten`` to [batch, features] (Flatten) or to the same shape (nothing); ``mean`` over the
two spatial dims (global average pooling); ``F.layer_norm`` over all features without affine tensors;
``F.avg_pool2d`` / ``F.adaptive_avg_pool2d(·, 1)``; ``x * α``, ``α * x``, ``x / α`` (Scale, α > 0); and
``a + b`` where one side is the other's ancestor on the op chain: the residual op x + α·F(x) (a trailing Scale of
the branch is its α). Anything else — a projection skip, a parameter used functionally, data-dependent control
flow (fx cannot trace it) — is refused in one line naming the node. ``law(target, module)`` gives the (σ_w, σ_b)
of a Linear/Conv2d node (translate.py: the model's own init).
"""
from __future__ import annotations

import dataclasses
import math
import numbers
import operator

import torch
import torch.fx
import torch.nn.functional as F
from torch.fx.passes.shape_prop import ShapeProp

from igbsym import ops as O
from igbsym.activations import ACTIVATIONS
from igbsym.errors import InputError

FUNCTIONS = {F.relu: "relu", torch.relu: "relu", torch.tanh: "tanh", F.tanh: "tanh", torch.sigmoid: "sigmoid",
             F.sigmoid: "sigmoid", torch.erf: "erf", torch.special.erf: "erf", F.silu: "silu", F.gelu: "gelu",
             F.leaky_relu: "leaky_relu", torch.abs: "abs"}
METHODS = {"relu": "relu", "tanh": "tanh", "sigmoid": "sigmoid", "erf": "erf", "abs": "abs"}
assert set(FUNCTIONS.values()) | set(METHODS.values()) <= set(ACTIVATIONS)
RESHAPES = {torch.flatten, torch.reshape, "view", "reshape", "flatten", "contiguous"}
SUPPORTED_NODES = ("stock modules (see translate.SUPPORTED), F.relu/gelu/silu/leaky_relu, torch.tanh/sigmoid/erf, "
                   "F.layer_norm, F.avg_pool2d, F.adaptive_avg_pool2d(x, 1), flatten/view/reshape, mean over the "
                   "spatial dims, x * alpha, and x + F(x) (a residual block)")


def trace(module, input_shape):
    """The fx GraphModule of ``module`` with each node's output shape (node.meta['tensor_meta'])."""
    try:
        gm = torch.fx.symbolic_trace(module)
    except Exception as exc:
        msg = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise InputError(f"the model's forward cannot be traced by torch.fx ({msg}); data-dependent control flow "
                         "has no kernel map: write forward as a fixed sequence of ops") from None
    try:
        with torch.no_grad():
            ShapeProp(gm).propagate(torch.zeros(2, *input_shape))
    except Exception as exc:
        msg = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise InputError(f"the model cannot take data points of shape {tuple(input_shape)}: {msg}") from None
    return gm


def _shape(node):
    meta = node.meta.get("tensor_meta") if isinstance(node, torch.fx.Node) else None
    return tuple(meta.shape) if meta is not None and hasattr(meta, "shape") else None


def _refuse(node, what: str):
    raise InputError(f"graph node {node.name!r} ({node.op} {getattr(node.target, '__name__', node.target)}): {what}; "
                     f"supported: {SUPPORTED_NODES}")


def _arg(node, i, key, default):
    return node.args[i] if len(node.args) > i else node.kwargs.get(key, default)


def _function_op(node, shape_in, shape_out):
    """The op of a call_function / call_method node on one tensor, or () for a shape-only no-op."""
    t = node.target
    if t in FUNCTIONS or (node.op == "call_method" and t in METHODS):
        name = FUNCTIONS.get(t) or METHODS[t]
        if name == "gelu" and node.kwargs.get("approximate", "none") != "none":
            _refuse(node, "the tanh approximation of GELU has no entry (allowed: approximate='none')")
        if name == "leaky_relu":
            return (O.Act("leaky_relu", float(_arg(node, 1, "negative_slope", 0.01))),)
        return (O.Act(name),)
    if t in RESHAPES or (node.op == "call_method" and t in RESHAPES):
        if shape_out == shape_in:
            return ()
        if len(shape_out) == 2 and math.prod(shape_out[1:]) == math.prod(shape_in[1:]) and len(shape_in) == 4:
            return (O.Flatten(),)
        _refuse(node, f"a reshape {shape_in} -> {shape_out} other than flattening to [batch, features]")
    if (t is torch.mean or t == "mean") and len(shape_in) == 4:
        dims = _arg(node, 1, "dim", None)
        dims = {d % 4 for d in (dims if isinstance(dims, (tuple, list)) else (dims,))} if dims is not None else None
        if dims == {2, 3}:
            return (O.GlobalAvgPool(),) + ((O.Flatten(),) if len(shape_out) == 2 else ())
    if t is F.layer_norm and tuple(_arg(node, 1, "normalized_shape", ())) == tuple(shape_in[1:]) \
            and _arg(node, 2, "weight", None) is None and _arg(node, 3, "bias", None) is None:
        return (O.LayerNorm(),)
    if t is F.adaptive_avg_pool2d and _arg(node, 1, "output_size", None) in (1, (1, 1)):
        return (O.GlobalAvgPool(),)
    if t is F.avg_pool2d:
        k = _arg(node, 1, "kernel_size", None)
        stride, pad = _arg(node, 2, "stride", None), _arg(node, 3, "padding", 0)
        if isinstance(k, int) and (stride is None or isinstance(stride, int)) and isinstance(pad, int):
            return (O.AvgPool2d(k, stride, pad),)
    if t in (operator.mul, torch.mul, operator.truediv, torch.div):
        scalars = [a for a in node.args if isinstance(a, numbers.Real)]
        if len(scalars) == 1 and scalars[0] > 0:
            alpha = float(scalars[0]) if t in (operator.mul, torch.mul) else 1.0 / float(scalars[0])
            return (O.Scale(alpha),)
        _refuse(node, "a product other than by one positive number")
    _refuse(node, "no kernel map")


def _residual(node, a, b, scales):
    """The path of a + b: the residual op x + α·F(x) where one side's chain is a prefix of the other's."""
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    if long_[:len(short)] != short or len(long_) == len(short):
        _refuse(node, "a sum of two branches neither of which is the skip (a projection skip or parallel branches: "
                      "no cross-kernel map)")
    branch = [op for _, op, _ in long_[len(short):]]
    alpha = 1.0
    if long_[-1][0] in scales:             # the branch ends in x * alpha: the block's alpha
        alpha = float(branch.pop().alpha)
    try:
        op = O.Residual(alpha, tuple(branch))
    except InputError as exc:
        _refuse(node, str(exc))
    label = f"{node.name} residual x + {alpha:.4g}·[{', '.join(type(o).__name__ for o in branch)}]"
    return short + ((node.name, op, label),)


def describe(op) -> str:
    """The op's parameters in one line (what the listing shows)."""
    parts = []
    for f in dataclasses.fields(op):
        v = getattr(op, f.name)
        if isinstance(v, numbers.Real) and not isinstance(v, bool) and f.name != "width_":
            parts.append(f"{f.name}={v:.4g}")
        elif isinstance(v, str):
            parts.append(f"{f.name}={v}")
    return f"{type(op).__name__}({', '.join(parts)})"


def graph_ops(gm, leaf):
    """(ops, names) of a traced GraphModule; ``leaf(target, module)`` maps a call_module node (None: refused)."""
    paths, out, scales = {}, None, set()
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            if paths:
                _refuse(node, "a second input")
            paths[node] = ()
            continue
        if node.op == "output":
            out = paths.get(node.args[0])
            if out is None:
                _refuse(node, "the model must return one tensor of logits")
            continue
        inputs = [a for a in node.all_input_nodes if paths.get(a) is not None]
        if _shape(node) is None:            # a size or other non-tensor value: an argument only
            paths[node] = None
            continue
        if node.op == "get_attr":
            _refuse(node, "a parameter or buffer used functionally (use the module: nn.Linear, nn.Conv2d, ...)")
        if node.op == "call_function" and node.target in (operator.add, torch.add) and len(inputs) == 2:
            paths[node] = _residual(node, paths[inputs[0]], paths[inputs[1]], scales)
            continue
        if len(inputs) != 1:
            _refuse(node, f"{len(inputs)} tensor inputs")
        if node.op == "call_module":
            mod = gm.get_submodule(node.target)
            op = leaf(node.target, mod)
            if op is None:
                _refuse(node, f"module {type(mod).__name__} has no kernel map over a dataset")
            new = ((op, f"{node.target} {type(mod).__name__}"),)
        else:
            new = tuple((op, f"{node.name} {getattr(node.target, '__name__', node.target)}")
                        for op in _function_op(node, _shape(inputs[0]), _shape(node)))
        if node.target in (operator.mul, torch.mul, operator.truediv, torch.div):
            scales.add(node.name)
        paths[node] = paths[inputs[0]] + tuple((node.name, op, label) for op, label in new)
    if len(out[-1:]) == 0 or _shape(node.args[0]) is None or len(_shape(node.args[0])) != 2:
        raise InputError("the model must return logits [batch, classes]")
    return tuple(op for _, op, _ in out), [f"{label} {describe(op)}" for _, op, label in out]
