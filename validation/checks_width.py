"""Checks of the finite-width forms (width.gamma, width.coefficient) against real torch MLPs of width N.

Networks: validation/simulate.py's MLPs with d_in = N = every hidden width and N output nodes (the forms' model),
fresh Gaussian data per init; γ̂ = ΣX/ΣY over inits with the unbiased units of ``checks_depth.measure`` (SE by the
delta method over inits, which are independent).

width.gamma: γ̂(N) against the form's own value γ_∞ + a_L/N at points inside the series (|a_L|/N <= γ_∞/2) and
chosen where the infinite-width value fails (its z is in the note); allowance z·SE + the derived O(1/N²) remainder
|a/N|·max(1e-6, 2|a/N|/γ_∞) (``igbsym.engine.finite.validity``). width.coefficient: ReLU + LayerNorm after φ
(γ_∞ = 0 exactly, Thm F.3, so γ(N) = a/N + b/N² + c/N³ …): the 1/N extrapolation of two widths,
â = (N_b² γ̂(N_b) − N_s² γ̂(N_s))/(N_b − N_s), against the form's a_L; the neglected term leaves −c/(N_s N_b) in â,
allowed as ZERO_REL²·|a|/(N_s N_b) (the stated |b/a| <= ZERO_REL = 4 of igbsym.engine.finite continued
geometrically, |c/a| <= 16; thorough mode measured a drift of −2 SE at L = 3, 4 at (16, 32) without it, so the
thorough widths are (32, 64)). width.resnet_gamma: torch residual MLPs x + α ReLU(W x) (validation/moments.measure:
the spec's own Residual ops, fresh data per init, γ̂ of a linear readout of the trunk) at N = 64 against the form's
γ_∞ + a_L/N with the same allowance; L = 4 is where resnet.gamma (N = ∞) is off by ≈ 20 SE.
False-failure rate: z = 5 per assertion (alpha ≈ 5.7e-7, normal; >= 200 inits).
"""
from __future__ import annotations

import math

import igbsym
from igbsym.engine import finite

from igbsym.spec import Spec, resnet_ops

from .checks import register_check, register_sizes, reusable, seed_for, size, z_result
from .checks_depth import measure, ratio
from .moments import measure as measure_ops
from .simulate import NetSpec

# (label, activation, norm, depth, width): points of width.gamma inside the series where pred_inf fails
GAMMA_POINTS = (("relu L=4 N=32", "relu", "none", 4, 32), ("relu L=8 N=128", "relu", "none", 8, 128),
                ("gelu L=3 N=32", "gelu", "none", 3, 32))
register_sizes("width", quick={"inits": {32: 600, 128: 64, 16: 1500}, "n_data": 64, "coef_depth": 2,
                                "coef_widths": (16, 32), "res_inits": 200, "res_data": 128},
               thorough={"inits": {32: 4000, 128: 512, 16: 8000, 64: 3000}, "n_data": 128, "coef_depth": 4,
                         "coef_widths": (32, 64), "res_inits": 1000, "res_data": 256})
# (label, depth, alpha, width): residual points inside the series
RESNET_POINTS = (("relu alpha=1 L=2 N=64", 2, 1.0, 64), ("relu alpha=1 L=4 N=64", 4, 1.0, 64))


@reusable
def _measured(ctx, activation, norm, depth, width, n_inits, n_data, seed):
    spec = NetSpec(d_in=width, widths=(width,) * depth, n_classes=width, activation=activation,
                   norm=None if norm == "none" else norm, placement="post")
    return measure(spec, n_inits, n_data, seed, ctx.device)


def _norm_kw(norm):
    return {} if norm == "none" else {"norm": norm, "placement": "post"}


@register_check("width_gamma", forms=["width.gamma", "width.coefficient"])
def check_width(ctx) -> list:
    """γ̂ at finite width vs width.gamma per layer; the 1/N coefficient of ReLU + LayerNorm vs width.coefficient."""
    inits, n_data = size(ctx, "width.inits"), size(ctx, "width.n_data")
    out = []
    for k, (label, act, norm, depth, width) in enumerate(GAMMA_POINTS):
        ctx.progress(f"width: {label}")
        seed = seed_for(ctx, "width", label)
        sims = _measured(ctx, act, norm, depth, width, inits[width], n_data, seed)
        g_est, se = ratio(*sims[depth])
        pred = float(igbsym.get("width.gamma").numpy(L=depth, N=width, activation=act, **_norm_kw(norm)))
        g_inf = float(igbsym.get("depth.gamma").numpy(L=depth, activation=act, **_norm_kw(norm)))
        a = float(igbsym.get("width.coefficient").numpy(L=depth, activation=act, **_norm_kw(norm)))
        holds, rem = finite.validity(g_inf, a, width)
        if not holds:
            raise RuntimeError(f"width check point {label} is outside the series; choose a wider one")
        out.append(z_result("width.gamma", label, pred, g_est, se, inits[width], seed, bias_bound=rem,
                            note=f"infinite width {g_inf:.4g}: z_inf = {(g_est - g_inf) / se:+.2f}; a_L = {a:.4g}; "
                                 f"O(1/N^2) allowance {rem:.3g}"))
    depth = size(ctx, "width.coef_depth")
    ns, nb = size(ctx, "width.coef_widths")
    sims = {w: _measured(ctx, "relu", "layernorm", depth, w, inits[w], n_data, seed_for(ctx, "width", "ln", w))
            for w in (ns, nb)}
    for l in range(1, depth + 1):
        (gs, ses), (gb, seb) = ratio(*sims[ns][l]), ratio(*sims[nb][l])
        est = (nb * nb * gb - ns * ns * gs) / (nb - ns)
        se = math.hypot(nb * nb * seb, ns * ns * ses) / (nb - ns)
        a = float(igbsym.get("width.coefficient").numpy(L=l, activation="relu", norm="layernorm", placement="post"))
        bias = finite.ZERO_REL ** 2 * abs(a) / (ns * nb)
        out.append(z_result("width.coefficient", f"relu + LN after, layer {l}, 1/N extrapolation of N={ns}, {nb}",
                            a, est, se, min(inits[ns], inits[nb]), seed_for(ctx, "width", "ln", nb), bias_bound=bias,
                            note=f"N*gamma: {ns * gs:.4g} (N={ns}), {nb * gb:.4g} (N={nb}); O(1/N^2) allowance "
                                 f"{bias:.3g}"))
    return out


@reusable
def _measured_resnet(ctx, depth, alpha, width, n_inits, n_data, seed):
    return measure_ops(Spec(width, resnet_ops(depth, "relu", alpha, width=width)), n_inits, n_data, seed)


@register_check("width_resnet", forms=["width.resnet_gamma"])
def check_width_resnet(ctx) -> list:
    """γ̂ of torch residual MLPs at width N vs width.resnet_gamma (γ_∞ + a_L/N) with the O(1/N²) allowance."""
    inits, n_data = size(ctx, "width.res_inits"), size(ctx, "width.res_data")
    out = []
    for label, depth, alpha, width in RESNET_POINTS:
        ctx.progress(f"width: {label}")
        seed = seed_for(ctx, "width", label)
        est = _measured_resnet(ctx, depth, alpha, width, inits, n_data, seed)[-1].gamma(n_data)
        form = igbsym.get("width.resnet_gamma")
        kw = dict(L=depth, activation="relu", alpha=alpha)
        pred = float(form.numpy(N=width, **kw))
        g_inf = float(igbsym.get("resnet.gamma").numpy(**kw))
        holds, rem = finite.validity(g_inf, (pred - g_inf) * width, width)
        # the points are inside the series (README table); a form whose value leaves it gets no allowance
        out.append(z_result("width.resnet_gamma", label, pred, est.value, est.se, inits, seed,
                            bias_bound=rem if holds else 0.0,
                            note=f"infinite width {g_inf:.4g}: z_inf = {(est.value - g_inf) / est.se:+.2f}; "
                                 + (f"O(1/N^2) allowance {rem:.3g}" if holds else "OUTSIDE the series")))
    return out
