"""Checks of Labatie's moments (igbsym/families/moments.py) on torch networks, and the depth-profile figure.

Architectures of moments-well-behaved-vs-pathological.txt Secs. 5–7 built from spec ops (``moments.sensitivity_ops``):
vanilla ReLU, BN-ReLU feedforward (full-batch BN), the linear-first ReLU ResNet and the BN pre-activation ResNet.
Per layer (validation/moments.py): μ̂₂, μ̂₂,c, the forward-mode noise moment ν̂ (``torch.func.jvp``) and r_eff; every
init has its own dataset and noise. Statistics are Richardson-extrapolated over two widths (input dimension = width),
removing the O(1/n) bias; z ≤ 5 per assertion (false-failure rate 5.7e-7).
"""
from __future__ import annotations

import math

import numpy as np

import igbsym
from igbsym.families.moments import ARCHITECTURES, sensitivity_ops
from igbsym.residual import Residual, resnet_ops
from igbsym.sensitivity import chi_path
from igbsym.spec import Act

from .checks import register_check, z_result
from .moments import at_two_widths, richardson

BLOCKS = {"vanilla": Act, "bn_feedforward": Act, "resnet": Residual, "bn_resnet": Residual}


def _plan(ctx):
    if ctx.quick:
        return (128, 256), {128: 32, 256: 16}, 256, 6
    return (256, 512), {256: 96, 512: 48}, 512, 20


def _layer_index(architecture, depth):
    """Op index of the end of each layer/block (after its activation, or after the residual block)."""
    ops = sensitivity_ops(depth, architecture, "relu", 1.0, 0.01, math.sqrt(2))
    return [k for k, op in enumerate(ops) if isinstance(op, BLOCKS[architecture])]


def _profiles(ctx):
    """{architecture: (runs at two widths, layer indices)} — the expensive part, shared by the checks below."""
    widths, inits, n_data, depth = _plan(ctx)
    out = {}
    for k, arch in enumerate(ARCHITECTURES):
        runs = at_two_widths(lambda w: _ops(arch, depth, w), widths, inits, n_data, ctx.seed + 1000 * (k + 1),
                             r_eff=ctx.report_dir is not None)
        out[arch] = (runs, _layer_index(arch, depth))
    return out


def _ops(arch, depth, width):
    if arch in ("resnet", "bn_resnet"):
        norm, order = ("none", "linear-first") if arch == "resnet" else ("batchnorm", "linear-last")
        return resnet_ops(depth, "relu", 1.0, norm, "pre", order, width=width)
    from igbsym.spec import mlp_ops
    return mlp_ops(depth, "relu", "batchnorm" if arch == "bn_feedforward" else None, widths=(width,) * depth)


_CACHE = {}


def _shared(ctx):
    key = (ctx.mode, ctx.seed)
    if key not in _CACHE:
        _CACHE.clear()
        _CACHE[key] = _profiles(ctx)
    return _CACHE[key]


@register_check("moments.sensitivity_vs_torch", forms=["moments.sensitivity"])
def check_sensitivity(ctx):
    """chi after layers 2 and L of the four architectures vs moments.sensitivity (forward-mode noise)."""
    widths, _, n_data, depth = _plan(ctx)
    form, out = igbsym.get("moments.sensitivity"), []
    for arch, (runs, idx) in _shared(ctx).items():
        for layer in (2, depth):
            pred = float(form.numpy(L=layer, architecture=arch, activation="relu"))
            est = richardson(*(runs[w][idx[layer - 1]].chi() for w in widths))
            out.append(z_result("moments.sensitivity", f"{arch}, layer {layer}", pred, est.value, est.se, est.n,
                                ctx.seed, note=f"Richardson over widths {widths}, D = {n_data}"))
    _figure(ctx)
    return out


@register_check("moments.centred_ratio_vs_torch", forms=["moments.centred_ratio"])
def check_centred_ratio(ctx):
    """mu_2,c/mu_2 measured vs centred_ratio(gamma) with gamma from depth.gamma / resnet.gamma (the bridge)."""
    widths, _, n_data, depth = _plan(ctx)
    form, out = igbsym.get("moments.centred_ratio"), []
    gammas = {"vanilla": lambda l: igbsym.get("depth.gamma").numpy(L=l, activation="relu"),
              "bn_resnet": lambda l: igbsym.get("resnet.gamma").numpy(L=l, activation="relu", norm="batchnorm",
                                                                     order="linear-last", alpha=1.0)}
    profiles = _shared(ctx)
    for arch, gamma_of in gammas.items():
        runs, idx = profiles[arch]
        for layer in (1, depth):
            pred = float(form.numpy(gamma=float(gamma_of(layer))))
            est = richardson(*(runs[w][idx[layer - 1]].centred_ratio() for w in widths))
            out.append(z_result("moments.centred_ratio", f"{arch}, layer {layer}", pred, est.value, est.se, est.n,
                                ctx.seed, note="gamma of the layer's readout from the registered depth law"))
    return out


@register_check("moments.bn_feedforward_rate_vs_torch", forms=["moments.bn_feedforward_rate"])
def check_bn_rate(ctx):
    """Per-layer growth log(chi_{l+k}/chi_l)/k of a BN-ReLU feedforward net vs moments.bn_feedforward_rate."""
    widths, _, n_data, depth = _plan(ctx)
    runs, idx = _shared(ctx)["bn_feedforward"]
    lo, hi = 2, depth
    a, b = (richardson(*(runs[w][idx[l - 1]].chi() for w in widths)) for l in (lo, hi))
    est = (math.log(b.value) - math.log(a.value)) / (hi - lo)
    # the two layers share inits (positively correlated): adding variances over-states the SE (conservative)
    se = math.hypot(a.se / a.value, b.se / b.value) / (hi - lo)
    pred = float(igbsym.get("moments.bn_feedforward_rate").numpy(activation="relu"))
    return [z_result("moments.bn_feedforward_rate", f"relu, layers {lo}..{hi}", pred, est, se, a.n, ctx.seed,
                     note="log-ratio of Richardson-extrapolated chi; SE conservative (correlation ignored)")]


@register_check("moments.bn_resnet_exponent_vs_recursion", forms=["moments.bn_resnet_exponent"])
def check_bn_resnet_exponent(ctx):
    """The asymptotic exponent against the exact chi recursion (itself checked against torch above)."""
    form, out = igbsym.get("moments.sensitivity"), []
    for act in ("relu", "leaky_relu"):
        lo, hi = 2000, 4000
        slope = math.log(form.numpy(L=hi, architecture="bn_resnet", activation=act, a=0.2) /
                         form.numpy(L=lo, architecture="bn_resnet", activation=act, a=0.2)) / math.log(2)
        pred = float(igbsym.get("moments.bn_resnet_exponent").numpy(activation=act, a=0.2))
        out.append(z_result("moments.bn_resnet_exponent", f"{act}: log-slope of chi over L = 1e4..2e4", pred, slope,
                            0.0, 1, ctx.seed, bias_bound=10 / lo,
                            note="deterministic: slope(L, 2L) = beta + O(1/L) (log nu_L = p log L + c + O(1/L)); "
                                 "allowance 10/L"))
    return out


def _figure(ctx):
    if ctx.report_dir is None:
        return
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    widths, _, n_data, depth = _plan(ctx)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for k, (arch, (runs, idx)) in enumerate(_shared(ctx).items()):
        colour = f"C{k}"
        theory = chi_path(sensitivity_ops(depth, arch, "relu", 1.0, 0.01, math.sqrt(2)))
        layers = np.arange(1, depth + 1)
        big = runs[widths[-1]]
        g_th = [float(theory[i][0].c / theory[i][0].e) for i in idx]
        chi_th = [float(theory[i][1]) for i in idx]
        ratio = [big[i].centred_ratio() for i in idx]
        axes[0].plot(layers, g_th, "--", color=colour)
        axes[0].errorbar(layers, [1 / r.value - 1 for r in ratio], [r.se / r.value**2 for r in ratio], fmt="o",
                         color=colour, ms=3, label=arch)
        axes[1].plot(layers, [float(np.mean(big[i].r_eff)) for i in idx], "o-", color=colour, ms=3)
        chis = [big[i].chi() for i in idx]
        axes[2].plot(layers, chi_th, "--", color=colour)
        axes[2].errorbar(layers, [c.value for c in chis], [c.se for c in chis], fmt="o", color=colour, ms=3)
    axes[0].set(xlabel="layer / block l", ylabel=r"$\gamma_l = \mu_2/\mu_{2,c} - 1$", yscale="log",
                title="point-like signal (IGB)")
    axes[1].set(xlabel="layer / block l", ylabel=r"$r_\mathrm{eff}$", title=f"effective rank (n = {widths[-1]})")
    axes[2].set(xlabel="layer / block l", ylabel=r"$\chi_l$", yscale="log", title="normalised sensitivity")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    ctx.save_figure("moments_profiles", fig, f"Labatie's moments vs depth for four ReLU architectures (width "
                    f"{widths[-1]}, D = {n_data}): points measured (torch, jvp), dashed lines width-limit theory.")
