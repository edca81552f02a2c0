"""Checks of the probe (validation/probe.py) and App. I of igb-initial-guessing-bias.txt as measured numbers.

1. ``probe.mlp_equals_simulate``: an MLP through ``probe`` (igbsym.validation.models.MLPFactory) and the same NetSpec
   through ``simulate`` (same seed) give the same per-init μ_c, Var_χ(O_c), G_c (float32 rounding: 1e-4 relative).
2. ``probe.mlp_gamma_depth``: γ̂ of ReLU MLPs through the probe (Rao–Blackwellised, Gaussian blob of dimension d = N)
   vs ``depth.gamma`` (L = 1: exact at any width, no bias bound; L = 2: two widths, the bias bound of
   validation/checks_depth.py — the small-width gap plus 5 SE, scaled by 1/N). One dataset is shared by the inits,
   so the dataset's own O(1/(D√d)) fluctuation is not in the SE (validation/stats.py); at D ≥ 1000, d ≥ 128 it
   is < 1e-4, below the SEs here.
3. ``probe.estimators_agree``: plain and Rao–Blackwellised γ̂ on the same inits (paired delta-method z of the
   difference, z ≤ 5); the measured variance ratio is in the note.
4. ``probe.app_i``: App. I claims, measured on ``digits-parity`` with zero biases (the paper's setting): CNN-B with
   ReLU + MaxPool has larger γ̂ than with identity + AvgPool; the ResNet, the ViT and the linear CNN-B have γ̂ > 0;
   and the contrast digits vs a Gaussian blob of the same shape and size for CNN-A (ReLU + MaxPool) and CNN-B
   (identity + AvgPool, which has γ = 0 on i.i.d. centred data: data correlations alone make its IGB). Each is a
   one-sided z-test of an independent-runs difference (SE = hypot of the two SEs), passing at z ≥ 3 (p ≤ 1.3e-3 if the
   claim were false at the boundary). These are claims about architectures and data, not closed forms; a failure would
   say App. I does not reproduce here.
All z-tests of forms use z = 5 (alpha = 5.7e-7 each).
"""
from __future__ import annotations

import math
from functools import lru_cache

import igbsym

from . import datasets
from .checks import Result, register_check, z_result
from .checks_depth import compare_widths
from .estimators import paired_difference
from .models import MLPFactory, build
from .probe import probe
from .simulate import NetSpec, simulate

Z_CLAIM = 3.0


def _plan(ctx) -> dict:
    if ctx.quick:
        return dict(eq_inits=6, eq_data=300, widths=(128, 512), inits={128: 96, 512: 48}, data=1000,
                    app_inits=16, app_data=500)
    return dict(eq_inits=16, eq_data=1797, widths=(128, 512), inits={128: 400, 512: 200}, data=1000,
                app_inits=48, app_data=1797)


@register_check("probe.mlp_equals_simulate", forms=[])
def check_equals_simulate(ctx) -> list:
    """The probe's MLP path reproduces igbsym.validation.simulate per init (same seeds)."""
    p = _plan(ctx)
    x = datasets.load("digits").data[:p["eq_data"]]
    out = []
    for spec in (NetSpec(64, (64,), activation="relu"), NetSpec(64, (48, 48), activation="tanh", pool=2)):
        sim = simulate(spec, p["eq_inits"], data=x.flatten(1), seed=ctx.seed, device=ctx.device, layer_stats=False)
        res = probe(MLPFactory(spec), x, p["eq_inits"], seed=ctx.seed, device=ctx.device, layers=False)
        rel = max(float(((res.mu - sim.mu).abs() / sim.var.sqrt()).max()),
                  float(((res.var - sim.var).abs() / sim.var).max()))
        flips = float((res.frac - sim.frac).abs().max()) * x.shape[0]
        out.append(Result("probe", f"probe = simulate per init: {spec.args['activation']} widths={spec.widths} "
                          f"I={p['eq_inits']} D={x.shape[0]}", 0.0, rel, math.nan, p["eq_inits"], ctx.seed,
                          passed=rel <= 1e-4 and flips <= 1,
                          note=f"max relative difference of mu (in data SDs) and var {rel:.2g} (float32: <= 1e-4); "
                               f"max argmax flips per init {flips:.0f} (<= 1 near-tie)"))
    return out


@lru_cache(maxsize=16)
def _mlp(depth, width, inits, n_data, seed, device):
    spec = NetSpec(width, (width,) * depth, activation="relu")
    data = datasets.gaussian((width,), n_data, seed=seed + 17)
    return probe(MLPFactory(spec), data, inits, seed=seed, device=device, layers=False)


@register_check("probe.mlp_gamma_depth", forms=["depth.gamma", "igb.gamma"])
def check_gamma_depth(ctx) -> list:
    """γ̂ of ReLU MLPs measured by the probe vs depth.gamma (L = 1 exact at any width; L = 2 two-width rule)."""
    p, out = _plan(ctx), []
    for depth in (1, 2):
        pred = float(igbsym.get("depth.gamma").numpy(L=depth, activation="relu"))
        sims = {}
        for w in p["widths"]:
            ctx.progress(f"probe: MLP depth {depth} width {w}")
            r = _mlp(depth, w, p["inits"][w], p["data"], ctx.seed, ctx.device)
            sims[w] = (r.gamma.value, r.gamma.se)
        if depth == 1:
            w = p["widths"][-1]
            out.append(z_result("depth.gamma", f"probe relu L=1 N=d={w} I={p['inits'][w]} D={p['data']} (RB)", pred,
                                *sims[w], p["inits"][w], ctx.seed, note="exact at any width for homogeneous relu"))
        else:
            out += compare_widths("depth.gamma", "probe relu L=2 (RB)", pred, sims, p["widths"], ctx.seed)
    return out


@register_check("probe.estimators_agree", forms=["igb.gamma"])
def check_estimators_agree(ctx) -> list:
    """Plain and Rao–Blackwellised γ̂ estimate the same γ (paired z on the same inits); variance ratio reported."""
    p, out = _plan(ctx), []
    cases = [("mlp relu L=1", _mlp(1, p["widths"][0], p["inits"][p["widths"][0]], p["data"], ctx.seed, ctx.device))]
    ds = _digits(p["app_data"])
    cases.append(("mlp-deep on digits-parity", probe(build("mlp-deep", (1, 8, 8), 2), ds, 4 * p["app_inits"],
                                                     seed=ctx.seed, device=ctx.device, layers=False)))
    for label, r in cases:
        d = paired_difference(r.units["plain"], r.units["rao-blackwell"])
        ratio = (r.gamma_plain.se / r.gamma_rb.se) ** 2
        out.append(z_result("igb.gamma", f"plain - RB, {label}, I={r.n_inits} D={r.n_data}", 0.0, d.value, d.se,
                            r.n_inits, ctx.seed, note=f"plain {r.gamma_plain.value:.4g}±{r.gamma_plain.se:.2g}, RB "
                                                      f"{r.gamma_rb.value:.4g}±{r.gamma_rb.se:.2g}; variance ratio "
                                                      f"plain/RB = {ratio:.3g}"))
    return out


@lru_cache(maxsize=4)
def _digits(n):
    ds = datasets.load("digits-parity")
    return datasets.Dataset(ds.name, ds.data[:n], ds.labels[:n], 2)


@lru_cache(maxsize=32)
def app_i_run(model: str, data: str, inits: int, n_data: int, seed: int, device: str):
    """γ̂ of a built-in model on digits-parity (first n_data points) or the Gaussian blob of the same shape/size."""
    ds = _digits(n_data) if data == "digits-parity" else datasets.gaussian((1, 8, 8), n_data, seed=seed + 29)
    return probe(build(model, (1, 8, 8), 2), ds, inits, seed=seed, device=device, layers=False, zero_bias=True)


def _claim(label, hi, lo, n, seed, note="") -> Result:
    d, se = hi.gamma.value - (lo.gamma.value if lo is not None else 0.0), math.hypot(hi.gamma.se,
                                                                                    lo.gamma.se if lo else 0.0)
    z = d / se if se > 0 else math.inf
    return Result("probe (App. I)", label, 0.0, d, se, n, seed, z=z, p_value=0.5 * math.erfc(z / math.sqrt(2)),
                  alpha=0.5 * math.erfc(Z_CLAIM / math.sqrt(2)), passed=bool(z >= Z_CLAIM),
                  note=f"gamma_hat {hi.gamma.value:.4g}±{hi.gamma.se:.2g}"
                       + (f" vs {lo.gamma.value:.4g}±{lo.gamma.se:.2g}" if lo is not None else "")
                       + f" ({hi.estimator})" + (f"; {note}" if note else ""))


@register_check("probe.app_i", forms=[])
def check_app_i(ctx) -> list:
    """App. I on digits-parity (zero biases): ReLU+MaxPool > identity+AvgPool for CNN-B, ResNet and ViT γ̂ > 0,
    Gaussian blob vs digits for CNN-B."""
    p = _plan(ctx)
    run = lambda m, d="digits-parity": (ctx.progress(f"probe: {m} on {d}"),
                                        app_i_run(m, d, p["app_inits"], p["app_data"], ctx.seed, ctx.device))[1]
    n, seed = p["app_inits"], ctx.seed
    tag = f"I={n} D={p['app_data']}"
    relu, lin = run("cnn-b-relu-maxpool"), run("cnn-b-linear-avgpool")
    out = [_claim(f"CNN-B relu+maxpool - linear+avgpool, digits-parity {tag}", relu, lin, n, seed),
           _claim(f"ResNet gamma > 0, digits-parity {tag}", run("resnet"), None, n, seed),
           _claim(f"ViT gamma > 0, digits-parity {tag}", run("vit"), None, n, seed),
           _claim(f"CNN-B linear+avgpool gamma > 0 (data correlations alone), digits-parity {tag}", lin, None, n, seed)]
    for m in ("cnn-a-relu-maxpool", "cnn-b-linear-avgpool"):
        out.append(_claim(f"{m}: digits-parity - Gaussian blob (same shape, size) {tag}", run(m), run(m, "gaussian"),
                          n, seed, "App. I.1: structured data amplify IGB"))
    return out
