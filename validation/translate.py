"""Translate a torch model into igbsym ops, layer by layer, for the data theory (``igbsym.nngp.theory``), and the
``igbsym predict --model M --data X`` route.

``translate(model, input_shape, zero_bias=False, seed=0) -> (ops, names, notes)``: ``model`` is a built-in model's
factory with ops (``SpecFactory``, ``MLPFactory``: their ops are used as they are), an ``nn.Module`` or a factory
``seed -> nn.Module`` (issue 45). The network translated is the one the probe builds (``validation.probe.Inits``,
same seed): its forward graph by torch.fx (``validation.graph``: functional calls, custom blocks, a module used
twice, skip connections), and its weight laws: a stock Linear / Conv2d of an ``nn.Module`` instance is re-initialised
by ``reset_parameters`` (kaiming_uniform, a = √5: σ_w² = 1/3, σ_b² = 1/(3 fan_in) exactly); every other layer (a
factory's own init, e.g. ``kaiming_normal_``; a subclass) is measured over the model's own inits (``measured_laws``,
its relative SE in the notes). ``zero_bias`` sets σ_b = 0 (the probe's --zero-bias). LayerNorm's ε (1e-5 against
unit-scale features) is left out of the kernel map. Stock modules: Linear, Conv2d (square kernel, equal strides and
paddings, zeros padding, no dilation or groups), the activations with a ``torch_module`` entry, LeakyReLU, GELU
(exact), LayerNorm, RMSNorm (over all non-batch dimensions), AvgPool2d (count_include_pad, floor mode),
AdaptiveAvgPool2d(1), MaxPool2d (dilation 1, floor mode: ``igbsym.ops.MaxPool2d``'s QMC map), Flatten, and
BatchNorm1d on features: in training mode (the probe's) ``igbsym.ops.BatchNorm`` over the probe's batches of
``batch_size`` (default 256), whose affine part is the identity at init (weight 1, bias 0: checked); in eval mode at
init (running mean 0, variance 1) the scale 1/√(1 + ε). Attention is refused before tracing (``refuse_attention``:
its width limit at a fixed number of heads is not Gaussian).
"""
from __future__ import annotations

import json
import math
import sys

import torch
from torch import nn

from igbsym import ops as O
from igbsym.activations import ACTIVATIONS
from igbsym.errors import InputError
from igbsym.nngp.walk import samples_entries

from . import datasets, graph, models

TORCH_LINEAR, TORCH_CONV = nn.Linear, nn.Conv2d    # torch's classes (subclasses too), not igbsym ops
SUPPORTED = ("Linear, Conv2d, ReLU, LeakyReLU, Tanh, Sigmoid, GELU, SiLU, Identity, LayerNorm, RMSNorm, AvgPool2d, "
             "AdaptiveAvgPool2d(1), MaxPool2d, Flatten, BatchNorm1d (residual nets: a SpecFactory of igbsym ops, e.g. "
             "the built-in mlp-residual)")


ATTENTION = (nn.MultiheadAttention, nn.TransformerEncoderLayer, nn.TransformerDecoderLayer, nn.Transformer)
DEFAULT_PAIRS = 20000      # sampled pairs for a model with a QMC kernel map (MaxPool2d), unless --pairs is given
LAW_WEIGHTS = 10**6        # weights pooled over inits per measured layer (relative SE of sigma_w^2 ~ sqrt(2/n))
LAW_INITS = (4, 64)        # at least / at most this many inits


def stock_law(mod: nn.Module):
    """(σ_w², σ_b²) of torch's own reset_parameters for a stock Linear / Conv2d (kaiming_uniform with a = √5)."""
    fan_in = mod.weight[0].numel()
    return 1.0 / 3.0, (0.0 if getattr(mod, "bias", None) is None else 1.0 / (3.0 * fan_in))


def measured_laws(inits, targets: list, notes: list) -> dict:
    """target -> (σ_w², σ_b²) of the model's own init, pooled over ``inits`` (validation.probe.Inits: the probe's
    init i), with the relative SE √(Var W²/(n E[W²]²)) in the notes. Only the variance enters at infinite width, so
    any zero-mean i.i.d. law gives the same theory (Lee et al. 2018 Sec. 2.2)."""
    if not targets:
        return {}
    first = inits.module(0)
    per_init = min(first.get_submodule(t).weight.numel() for t in targets)
    n = int(min(max(LAW_INITS[0], math.ceil(LAW_WEIGHTS / per_init)), LAW_INITS[1]))
    w2 = {t: [] for t in targets}
    b2 = {t: [] for t in targets}
    for i in range(n):
        m = first if i == 0 else inits.module(i)
        for t in targets:
            mod = m.get_submodule(t)
            w2[t].append((mod.weight.detach().double() ** 2).flatten())
            if getattr(mod, "bias", None) is not None:
                b2[t].append((mod.bias.detach().double() ** 2).flatten())
    out = {}
    for t in targets:
        w = torch.cat(w2[t])
        fan_in = first.get_submodule(t).weight[0].numel()
        s2w = float(fan_in * w.mean())
        rel = float(w.std() / w.mean() / math.sqrt(w.numel())) if w.mean() > 0 else 0.0
        s2b = float(torch.cat(b2[t]).mean()) if b2[t] else 0.0
        out[t] = (s2w, s2b)
        notes.append(f"{t}: the model's own init over {n} inits: sigma_w^2 = {s2w:.5g} (relative SE {rel:.1g})"
                     + (f", sigma_b^2 = {s2b:.4g}" if b2[t] else ""))
    return out


def _single(v, what, name):
    vals = tuple(v) if isinstance(v, (tuple, list)) else (v, v)
    if len(set(vals)) != 1:
        raise InputError(f"module {name!r} (Conv2d/AvgPool2d): {what} {vals} is not square; allowed: equal "
                         "values in both dimensions")
    return int(vals[0])


def batchnorm(mod: nn.BatchNorm1d, name: str, batch_size):
    """The op of a BatchNorm1d at init (module docstring)."""
    if mod.affine and not (bool((mod.weight == 1).all()) and bool((mod.bias == 0).all())):
        raise InputError(f"module {name!r} (BatchNorm1d): its affine part is not the identity at init (weight 1, "
                         "bias 0); allowed: torch's default init")
    if mod.training or not mod.track_running_stats:
        from .probe import DEFAULT_BATCH
        return O.BatchNorm(batch_size or DEFAULT_BATCH)
    if not (bool((mod.running_mean == 0).all()) and bool((mod.running_var == 1).all())):
        raise InputError(f"module {name!r} (BatchNorm1d, eval mode): running statistics are not the initial (0, 1)")
    return O.Scale(1 / math.sqrt(1 + mod.eps))


def leaf(mod: nn.Module, name: str, law, batch_size=None):
    """The op of a stock module (None: not one); ``law(name, mod)`` gives a Linear/Conv2d's (σ_w, σ_b);
    ``batch_size`` the probe's (a train-mode BatchNorm's batch)."""
    kind = type(mod)
    if kind is nn.BatchNorm1d:
        return batchnorm(mod, name, batch_size)
    entry = {e.torch_module: n for n, e in ACTIVATIONS.items() if e.torch_module}.get(kind.__name__)
    if entry is not None and kind.__module__.startswith("torch.nn") and entry not in ("leaky_relu", "gelu"):
        return O.Act(entry)
    if kind is nn.LeakyReLU:
        return O.Act("leaky_relu", float(mod.negative_slope))
    if kind is nn.GELU and mod.approximate == "none":
        return O.Act("gelu")
    if kind is nn.Flatten and mod.start_dim == 1 and mod.end_dim == -1:
        return O.Flatten()
    if issubclass(kind, TORCH_LINEAR):
        return O.Dense(mod.out_features, *law(name, mod))
    if issubclass(kind, TORCH_CONV):
        if mod.groups != 1 or _single(mod.dilation, "dilation", name) != 1 or mod.padding_mode != "zeros" \
                or isinstance(mod.padding, str):
            raise InputError(f"module {name!r} (Conv2d): groups, dilation, string padding or padding_mode "
                             f"{mod.padding_mode!r} have no kernel map; allowed: groups=1, dilation=1, integer "
                             "zeros padding")
        return O.Conv2d(mod.out_channels, _single(mod.kernel_size, "kernel_size", name),
                        _single(mod.stride, "stride", name), _single(mod.padding, "padding", name), *law(name, mod))
    if kind is nn.LayerNorm:
        return O.LayerNorm()
    if kind is getattr(nn, "RMSNorm", None):
        return O.RMSNorm()
    if kind is nn.AvgPool2d and mod.count_include_pad and not mod.ceil_mode and mod.divisor_override is None:
        return O.AvgPool2d(_single(mod.kernel_size, "kernel_size", name),
                           _single(mod.stride, "stride", name), _single(mod.padding, "padding", name))
    if kind is nn.AdaptiveAvgPool2d and _single(mod.output_size, "output_size", name) == 1:
        return O.GlobalAvgPool()
    if kind is nn.MaxPool2d:
        if _single(mod.dilation, "dilation", name) != 1 or mod.ceil_mode or mod.return_indices:
            raise InputError(f"module {name!r} (MaxPool2d): dilation, ceil_mode or return_indices have no kernel "
                             "map; allowed: dilation=1, ceil_mode=False, return_indices=False")
        k = _single(mod.kernel_size, "kernel_size", name)
        return O.MaxPool2d(k, _single(mod.stride, "stride", name) if mod.stride is not None else k,
                           _single(mod.padding, "padding", name))
    return None


def translate(model, input_shape, zero_bias: bool = False, seed: int = 0, batch_size=None):
    """(ops, names, notes) of ``model`` (module docstring): the forward graph (validation.graph) of the network
    the probe builds for init 0, with the weight laws of that same network (``Inits``: a factory's own init;
    an nn.Module instance re-initialised by reset_parameters, torch's stock law exactly for stock layers)."""
    notes: list = []
    if isinstance(model, (models.SpecFactory, models.MLPFactory)):
        ops = model.ops if isinstance(model, models.SpecFactory) else (O.Flatten(),) + model.spec.all_ops()
        return tuple(ops), [f"{i} {type(op).__name__}" for i, op in enumerate(ops)], notes
    from .probe import Inits
    if not (isinstance(model, nn.Module) or callable(model)):
        raise InputError(f"model must be an nn.Module or a factory, got {type(model).__name__}")
    inits = Inits(model, None, seed, zero_bias)
    refuse_attention(inits.module(0))
    gm = graph.trace(inits.module(0), input_shape)
    weighted = [n.target for n in gm.graph.nodes if n.op == "call_module"
                and isinstance(gm.get_submodule(n.target), (TORCH_LINEAR, TORCH_CONV))]
    stock = isinstance(model, nn.Module)
    own = [t for t in dict.fromkeys(weighted) if not (stock and _is_stock(gm.get_submodule(t)))]
    laws = measured_laws(inits, own, notes)

    def law(name, mod):
        s2w, s2b = laws[name] if name in laws else stock_law(mod)
        return math.sqrt(s2w), (0.0 if zero_bias else math.sqrt(s2b))
    ops, names = graph.graph_ops(gm, lambda target, mod: leaf(mod, target, law, batch_size))
    return ops, names, notes


def refuse_attention(module: nn.Module) -> None:
    """One line for a model with attention: with a fixed number of heads and torch's 1/√d_head logit scale, the
    logits q·k/√d_head keep O(1) random fluctuations as the width grows, so the width limit is a Gaussian mixture
    (Gaussian given the random similarity scores), not a Gaussian process with a kernel map (Hron et al. 2020,
    "Infinite attention", Sec. 3: a GP only as the number of heads → ∞; Sakai et al. 2025, arXiv:2506.00846)."""
    for name, mod in module.named_modules():
        if isinstance(mod, ATTENTION):
            raise InputError(
                f"module {name!r} ({type(mod).__name__}): attention with a fixed number of heads has no Gaussian "
                "width limit (the scaled logits stay random; Hron et al. 2020 Sec. 3), so no kernel map exists; "
                "allowed: models without attention (measure this one with igbsym probe)")


def _is_stock(mod) -> bool:
    stock = TORCH_LINEAR if isinstance(mod, TORCH_LINEAR) else TORCH_CONV
    return type(mod).reset_parameters is stock.reset_parameters


def predict_on_data(model_spec, data, classes=None, zero_bias: bool = False, seed: int = 0, n_draws=None,
                    pairs=None, batch_size=None):
    """(DataTheory, info) of a model name / module.path:factory / nn.Module on a dataset name, file or tensor;
    ``batch_size``: the probe's (default 256), a train-mode BatchNorm's batch."""
    from igbsym.nngp import theory
    ds = datasets.load(data, seed=seed)
    n_out = classes or ds.n_classes or 2
    if n_out < 2:
        raise InputError(f"--classes must be >= 2, got {n_out}")
    model = models.resolve_model(model_spec, ds.data.shape[1:], n_out) if isinstance(model_spec, str) else model_spec
    ops, names, notes = translate(model, tuple(ds.data.shape[1:]), zero_bias, seed, batch_size)
    n = ds.data.shape[0]
    if pairs is None and samples_entries(ops) and n * (n - 1) // 2 > DEFAULT_PAIRS:
        pairs = DEFAULT_PAIRS
        notes.append(f"a QMC kernel map (MaxPool2d) samples every entry: {pairs} sampled pairs by default (all D^2 "
                     "pairs cost ~D^2/pairs times more; pass --pairs N to choose)")
    res = theory(ops, ds.data.double().numpy(), classes=n_out, names=names, n_draws=n_draws, seed=seed, pairs=pairs)
    res.notes = notes + res.notes
    info = dict(model=model_spec if isinstance(model_spec, str) else type(model_spec).__name__,
                data=data if isinstance(data, str) else ds.name, classes=n_out, zero_bias=zero_bias)
    return res, info


def run(args) -> int:
    """``igbsym predict --model M --data X [--classes C] [--zero-bias] [--pairs N] [--json]``."""
    if args.model is None or args.data is None:
        raise InputError("predict: --model and --data go together (the data route); allowed: both, or neither "
                         "(the i.i.d. Gaussian-data route with --activation --depth ...)")
    fixed = [o for o, v in (("--activation", args.activation != "relu"), ("--depth", args.depth != 1),
                            ("--norm", args.norm != "none"), ("--pool", args.pool is not None),
                            ("--sigma-w", args.sigma_w is not None),
                            ("--residual", args.residual), ("--alpha", args.alpha is not None),
                            ("--plot", args.plot is not None)) if v]
    if fixed:
        raise InputError(f"predict: {', '.join(fixed)} describe the i.i.d. Gaussian-data architecture; with --model "
                         "the architecture is the model's; allowed with --model/--data: --classes, --zero-bias, "
                         "--pairs, --batch-size (a train-mode BatchNorm's batch, as the probe's), --json")
    if args.classes is not None and args.classes < 2:
        raise InputError(f"predict: --classes {args.classes} is not allowed; allowed: an integer >= 2")
    torch.set_num_threads(1)
    if args.batch_size is not None and args.batch_size < 2:
        raise InputError(f"predict: --batch-size {args.batch_size} is not allowed; allowed: an integer >= 2")
    res, info = predict_on_data(args.model, args.data, args.classes, args.zero_bias, pairs=args.pairs,
                                batch_size=args.batch_size)
    if args.json:
        print(json.dumps(dict(info, **res.to_dict())))
    else:
        print(f"igbsym predict: model {info['model']} on {info['data']} ({info['classes']} classes"
              + (", zero biases" if args.zero_bias else "") + ")")
        print(res.summary())
    sys.stdout.flush()
    return 0





def compare_with_probe(res, model, ds, classes: int, zero_bias: bool, seed: int = 0, n_draws: int = 20000):
    """``igbsym probe --theory``: the infinite-width prediction next to a ProbeResult ``res`` of ``model`` on the
    Dataset ``ds``: γ_∞ vs γ̂ (z from the probe's SE: the finite-width O(1/N) gap is included in what z measures),
    the KS test of the measured G0 against the GP law (two-sample, against ``n_draws`` GP draws; both jittered by
    U(−½, ½)/D), and per module the theory's γ-like ratio next to the measured one. Returns (dict, theory)."""
    from scipy import stats as sps

    from .stats import jitter_g0
    ops, names, notes = translate(model, tuple(ds.data.shape[1:]), zero_bias, seed)
    from igbsym.nngp import theory
    th = theory(ops, ds.data.double().numpy(), classes=classes, names=names, n_draws=n_draws, seed=seed)
    th.notes = notes + th.notes
    z = (res.gamma.value - th.gamma) / res.gamma.se if res.gamma.se > 0 else math.inf
    out = dict(gamma_inf=th.gamma, gamma_population=th.gamma_population, gamma_hat=res.gamma.value,
               gamma_hat_se=res.gamma.se, z=z, law=th.law.to_dict() if th.law is not None else None, ks=None)
    if th.law is not None and res.n_classes == 2:
        ks = sps.ks_2samp(jitter_g0(res.g0, res.n_data, seed), jitter_g0(th.law.draws[:, 0], res.n_data, seed + 1))
        out["ks"] = dict(statistic=float(ks.statistic), p_value=float(ks.pvalue))
    measured = {l.name: l.gamma for l in res.layers}
    out["layers"] = [dict(name=r["name"], theory=r["ratio"],
                          measured=None if measured.get(r["name"].split(" ")[0]) is None
                          else measured[r["name"].split(" ")[0]].value,
                          measured_se=None if measured.get(r["name"].split(" ")[0]) is None
                          else measured[r["name"].split(" ")[0]].se) for r in th.layers]
    out["notes"] = th.notes
    return out, th


FINITE_MLPS = {"mlp": ("relu", "none", (512,)), "mlp-linear": ("identity", "none", (512,)),
               "mlp-deep": ("relu", "none", (256,) * 4), "mlp-layernorm": ("relu", "layernorm", (512, 512)),
               "mlp-residual": ("relu", "residual", (256, 256))}   # built-in name -> (φ, norm, hidden widths)


def compare_finite_width(name, ds, res) -> dict | None:
    """The finite-width prediction next to the probe's γ̂ (issue 28) for a built-in MLP on the Gaussian blob, where
    the width theory applies (bias-free Dense, Kaiming-normal weights, i.i.d. N(0, 1) coordinates): γ_∞ + δ with
    δ = a_in/d_in + Σ_l a_l/N_l (``igbsym.families.width.uneven``; the residual MLP by ``resnet_series``, which
    needs d_in = its width 256), the O(1/N²) allowance and whether the series holds (igbsym.engine.finite.judge).
    The probe's dataset is shared by all inits: its γ̂ is conditional on it, an O(1/(D√d)) difference from the
    data-averaged prediction. None where the theory does not apply (another model or dataset; mlp-maxpool)."""
    if not isinstance(name, str) or name not in FINITE_MLPS or not ds.name.startswith("gaussian"):
        return None
    from igbsym.engine import finite
    from igbsym.families import width as W
    act, norm, widths = FINITE_MLPS[name]
    d_in = math.prod(ds.data.shape[1:])
    if norm == "residual":
        if d_in != widths[0]:
            return None
        g, corr = W.resnet_series(len(widths), act, 1.0)[-1]
        corr = corr / d_in
    else:
        g, corr = W.uneven(act, norm, 0.01, math.sqrt(2.0), d_in, list(widths))[-1]
    holds, rem = finite.judge(g, corr, min(d_in, *widths))
    est = res.gamma
    z = lambda pred: (est.value - pred) / est.se if est.se > 0 else (0.0 if est.value == pred else math.inf)
    return dict(gamma_inf=g, gamma_N=g + corr, correction=corr, holds=bool(holds), remainder=rem, d_in=d_in,
                widths=list(widths), z_inf=z(g), z_N=z(g + corr),
                passes=finite.verdict(est.value, est.se, g + corr, rem, holds) == "pass")


def finite_width_text(cmp: dict) -> str:
    verdict = ("pass" if cmp["passes"] else "FAIL") if cmp["holds"] else "outside the 1/N series"
    return (f"finite width (d_in = {cmp['d_in']}, widths {cmp['widths']}): gamma_N = {cmp['gamma_N']:.5g} (z_N = "
            f"{cmp['z_N']:+.2f}, allowance 5 SE + {cmp['remainder']:.2g}: {verdict}); infinite width "
            f"{cmp['gamma_inf']:.5g} (z = {cmp['z_inf']:+.2f})")


def comparison_text(cmp: dict) -> str:
    lines = [f"theory (infinite width, this dataset): gamma_inf = {cmp['gamma_inf']:.5g}; measured gamma_hat = "
             f"{cmp['gamma_hat']:.5g} ± {cmp['gamma_hat_se']:.2g} (z = {cmp['z']:.2f}, finite width included)"]
    if cmp["ks"] is not None:
        lines.append(f"KS of G0 against the GP law (two-sample): D_n = {cmp['ks']['statistic']:.4f}, "
                     f"p = {cmp['ks']['p_value']:.3g}")
    lines.append("per module: theory (infinite width) vs measured gamma-like ratio")
    for r in cmp["layers"]:
        meas = "-" if r["measured"] is None else f"{r['measured']:.4g} ± {r['measured_se']:.2g}"
        lines.append(f"  {r['name']:<32} {r['theory']:10.4g}   {meas}")
    return "\n".join(lines + [f"note: {n}" for n in cmp["notes"]])
