"""Checks of the depth law and the normalisation placements against real torch MLPs (validation/simulate.py:
Linear layers (biased only in depth_bias), torch's activations, nn.LayerNorm / nn.RMSNorm / nn.BatchNorm1d in
training mode).

Estimator (per layer l, the pre-activations after hidden layer l; l = L is the output, with as many output nodes
as hidden ones): the same weights (same seed) are run on two independent Gaussian datasets A and B, so
μ̂_A·μ̂_B is unbiased for μ² of every node (also under BatchNorm, whose batches stay inside one dataset), and
V̂_μ = mean over nodes of μ̂_A μ̂_B, V̂_χ = mean of the data variances, γ̂ = V̂_μ/V̂_χ. Initialisations are the
independent units: SE by the delta method over per-init averages.

Finite width: the prediction is the N → ∞ limit (input dimension d = N too). The leading correction is O(1/N)
(e.g. ReLU + LN has γ₁ ≈ 1/(2d(π − 1)) from the spread of the first-layer row norms): γ(N) = γ + c/N + O(1/N²).
The check therefore tests the Richardson extrapolation of two widths N_s < N_b,
γ̂_∞ = (N_b γ̂(N_b) − N_s γ̂(N_s))/(N_b − N_s), against the prediction, with the SE of that combination
(independent simulations) and no bias allowance: both widths are tested, and nothing in the allowance comes from
the simulation's own gap. The neglected O(1/N²) term is c₂/(N_s N_b) after extrapolation (< 1/(64·256) ≈ 6e-5
for |c₂| ≤ 1, below the SE). The report also shows the raw gap at each width.
False-failure rate: SEs are delta-method over I inits, so each comparison is a t-statistic with about
min(I) − 1 degrees of freedom; its ``alpha`` is the two-sided t tail at 5 (≈ 5e-6 for 64 inits), not the normal one.
"""
from __future__ import annotations

import math

import numpy as np
import torch

import igbsym

from .checks import Result, register_check, reusable, seed_for, z_result
from .seeding import derive_seed
from .simulate import NetSpec, simulate
from .stats import gamma_units, ratio_estimate

PLACEMENTS = (("bn_pre", "batchnorm", "pre"), ("bn_post", "batchnorm", "post"), ("ln_pre", "layernorm", "pre"),
              ("ln_post", "layernorm", "post"), ("rms_pre", "rmsnorm", "pre"), ("rms_post", "rmsnorm", "post"))
BN_BATCH = 128


def plan(ctx):
    """(widths, inits per width, data points per dataset, depth of the placement nets).

    Thorough sizes, from the allowance they buy (pilot at depth 20, widths 128 and 256, ReLU with and without
    LN): the SE of γ̂ is the spread between inits; with fresh data per init it was the same at D = 128, 512 and
    1024 within 2 % (the data's share of the variance is below the SE's own sampling error), while the cost is
    ∝ I·D·N². So the thorough nets see D = 128 points (BatchNorm: 2 batches of 128) and spend the work on
    inits and width. With per-init relative spread ∝ 1/√N, the 1/N extrapolation of the pair (256, 1024),
    (4 γ̂(1024) − γ̂(256))/3, has variance (16/9)/(I_b·1024) + (1/9)/(I_s·256) in those units; I_b = 48, I_s = 128
    make its SE 0.72 × that of the former pairs (256, 512), (512, 1024) with 256/128/64 inits and D = 1024
    (2 γ̂(N_b) − γ̂(N_s): variance 4/(64·1024) + 1/(128·512)), at 1/16 of their work. The neglected O(1/N²)
    term is c₂/(256·1024) ≈ 4e-6 for |c₂| ≤ 1. The same SE at N = 256 and 1024 alike would need 4× the inits at
    1024 (16× the work of N = 256): the extrapolation leans on the wide net, so that is where the inits go."""
    if ctx.quick:
        return (64, 256), {64: 128, 256: 64}, 512, 4
    return (256, 1024), {256: 128, 1024: 48}, 128, 20


def _bn_inits(ctx, inits: dict) -> dict:
    """BatchNorm configurations run one init at a time (two datasets each): fewer inits in quick mode; their
    alpha is the t tail with that many units (reported per Result)."""
    return {w: max(32, i // 2) for w, i in inits.items()} if ctx.quick else inits


def measure(spec: NetSpec, n_inits: int, n_data: int, seed: int, device) -> dict:
    """Per layer l = 1..L: per-init arrays X (centre spread V̂_μ) and Y (data variance V̂_χ).

    Without BatchNorm the data points stay iid given the weights, so one fresh dataset per init (batched
    ``simulate(fresh_data=True)``) with X = mean over nodes of μ̂² − s²/D (unbiased, stats.gamma_units) is exact.
    BatchNorm couples the points of a batch, which breaks the 1/D correction; there every init gets its own pair
    of datasets A, B and X = mean μ̂_A μ̂_B (unbiased for μ² also under BN, whose batches stay inside one dataset).
    Either way the per-init values are independent (a dataset shared by all inits would add a common fluctuation
    of order 1/(√d·D) to every X that the SE over inits cannot see)."""
    if spec.batch == 1:
        res = simulate(spec, n_inits, n_data, seed=seed, device=device, layer_stats=("pre",), fresh_data=True)
        out = {}
        for l in range(1, len(spec.widths) + 1):
            st = res.layers[l]["pre"] if l < len(spec.widths) else res.out
            out[l] = gamma_units(st.mean, st.var, res.n_data)
        return out
    xs, ys = {}, {}
    for i in range(n_inits):
        init_seed = derive_seed(seed, spec.widths[0], i)
        gen = torch.Generator().manual_seed(init_seed)
        xa, xb = (torch.randn(n_data, spec.d_in, generator=gen, dtype=torch.float64) for _ in range(2))
        runs = [simulate(spec, 1, data=x, seed=init_seed, device=device, layer_stats=("pre",))
                for x in (xa, xb)]
        for l in range(1, len(spec.widths) + 1):
            sa, sb = ((r.layers[l]["pre"] if l < len(spec.widths) else r.out) for r in runs)
            xs.setdefault(l, []).append(float((sa.mean * sb.mean).mean()))
            ys.setdefault(l, []).append(float(((sa.var + sb.var) / 2).mean()))
    return {l: (np.array(xs[l]), np.array(ys[l])) for l in xs}


@reusable
def _measured(ctx, spec, n_inits, n_data, seed):
    return measure(spec, n_inits, n_data, seed, ctx.device)


def ratio(x, y):
    """γ̂ = ΣX/ΣY and its delta-method SE over independent inits (stats.ratio_estimate)."""
    est = ratio_estimate(x, y)
    return est.value, est.se


def _corr_step(x1, y1, x2, y2, act, a):
    """ĉ_{l+1} − k(ĉ_l) with a jackknife SE over inits (the one-step arc-cosine map, locally)."""
    kmap = igbsym.get("depth.corr_map")

    def stat(idx):
        c1 = x1[idx].mean() / (x1[idx].mean() + y1[idx].mean())
        c2 = x2[idx].mean() / (x2[idx].mean() + y2[idx].mean())
        return c2, float(kmap.numpy(c=np.clip(c1, -1, 1), activation=act, a=a))
    n = len(x1)
    full = stat(np.arange(n))
    jack = np.array([np.subtract(*stat(np.delete(np.arange(n), i))) for i in range(n)])
    se = math.sqrt((n - 1) / n * ((jack - jack.mean()) ** 2).sum())
    return full[0], full[1], se


def compare_widths(form, label, pred, sims, widths, seed, note="", inits=None):
    """One Result per consecutive width pair: the 1/N extrapolation of the two estimates vs the prediction."""
    from scipy import stats as sps
    out = []
    for ws, wb in zip(widths, widths[1:]):
        (gs, ses), (gb, seb) = sims[ws], sims[wb]
        g_inf = (wb * gb - ws * gs) / (wb - ws)
        se = math.hypot(wb * seb, ws * ses) / (wb - ws)
        r = z_result(form, f"{label}, 1/N extrapolation of N={ws}, {wb}", pred, g_inf, se, wb, seed,
                     note=f"gap N={ws}: {gs - pred:+.4g} (se {ses:.2g}), N={wb}: {gb - pred:+.4g} (se {seb:.2g}); "
                          f"{note}")
        if inits:
            r.alpha = float(2 * sps.t.sf(5.0, min(inits[ws], inits[wb]) - 1))
        out.append(r)
    return out


def run_config(ctx, name, spec_kw, depth, seed):
    """{width: {layer: (X, Y)}} for one architecture at every planned width."""
    widths, inits, n_data, _ = plan(ctx)
    if spec_kw.get("norm") == "batchnorm":
        inits, n_data = _bn_inits(ctx, inits), max(n_data, 2 * BN_BATCH)
    res = {}
    for w in widths:
        ctx.progress(f"depth: {name}, width {w}, depth {depth}")
        spec = NetSpec(d_in=w, widths=(w,) * depth, n_classes=w, **spec_kw)
        res[w] = _measured(ctx, spec, inits[w], n_data, seed_for(ctx, "depth", name, w, seed))
    return res


@register_check("depth_law_relu", forms=["depth.gamma", "depth.corr_map"])
def check_relu_law(ctx) -> list:
    """γ after each hidden layer of a ReLU MLP (no norm) vs the arc-cosine depth law, and the one-step map."""
    widths, _, _, depth = plan(ctx)
    depth = depth + 2 if ctx.quick else depth
    sims = run_config(ctx, "relu", dict(activation="relu"), depth, ctx.seed)
    results = []
    for l in range(1, depth + 1):
        pred = float(igbsym.get("depth.gamma").numpy(L=l, activation="relu"))
        results += compare_widths("depth.gamma", f"relu, no norm, layer {l}", pred,
                            {w: ratio(*sims[w][l]) for w in widths}, widths, ctx.seed, inits=plan(ctx)[1])
    for l in range(1, depth):
        step = {}
        for w in widths:
            c2, k1, se = _corr_step(*sims[w][l], *sims[w][l + 1], "relu", 0.0)
            step[w] = (c2 - k1, se)
        results += compare_widths("depth.corr_map", f"c_{l + 1} - k(c_{l}) (measured c_{l})", 0.0, step, widths,
                                  ctx.seed, "local one-step test of the arc-cosine map", inits=plan(ctx)[1])
    return results


@register_check("depth_placements", forms=["depth.gamma"] + [f"depth.gamma_{s}" for s, _, _ in PLACEMENTS])
def check_placements(ctx) -> list:
    """γ per layer for ReLU MLPs with BatchNorm / LayerNorm / RMSNorm before or after the activation."""
    widths, _, _, depth = plan(ctx)
    results, curves = [], {}
    for k, (short, norm, pl) in enumerate(PLACEMENTS):
        kw = dict(activation="relu", norm=norm, placement=pl, bn_batch=BN_BATCH if norm == "batchnorm" else None)
        sims = run_config(ctx, f"relu {norm} {pl}", kw, depth, ctx.seed + k)
        form = igbsym.get(f"depth.gamma_{short}")
        extra = dict(B=BN_BATCH) if norm == "batchnorm" else {}
        curves[short] = {w: [ratio(*sims[w][l]) for l in range(1, depth + 1)] for w in widths}
        for l in range(1, depth + 1):
            pred = float(form.numpy(L=l, activation="relu", **extra))
            results += compare_widths(form.name, f"relu, {norm} {pl}, layer {l}", pred,
                                {w: curves[short][w][l - 1] for w in widths}, widths, ctx.seed + k,
                                f"B={BN_BATCH} (bn.gamma_canonical)" if extra else "",
                                inits=_bn_inits(ctx, plan(ctx)[1]) if norm == "batchnorm" else plan(ctx)[1])
    _figure(ctx, curves, widths, depth)
    return results


def _figure(ctx, curves, widths, depth):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, 3, figsize=(13, 7), sharex=True)
    layers = np.arange(1, depth + 1)
    none = [float(igbsym.get("depth.gamma").numpy(L=l, activation="relu")) for l in layers]
    for ax, (short, norm, pl) in zip(axes.ravel(), PLACEMENTS):
        extra = dict(B=BN_BATCH) if norm == "batchnorm" else {}
        theory = [float(igbsym.get(f"depth.gamma_{short}").numpy(L=l, activation="relu", **extra)) for l in layers]
        ax.plot(layers, none, color="0.75", lw=3, label="no norm (theory)")
        ax.plot(layers, theory, "k-", label="theory")
        for j, w in enumerate(widths):
            g, se = np.array(curves[short][w]).T
            ax.errorbar(layers + 0.12 * (j - 1), g, yerr=se, fmt="os^"[j % 3], ms=4, capsize=2, label=f"torch N={w}")
        name = {"batchnorm": "BN", "layernorm": "LN", "rmsnorm": "RMSNorm"}[norm]
        ax.set_title(f"{name} + ReLU" if pl == "pre" else f"ReLU + {name}")
        ax.set_xlabel("hidden layer l")
        ax.set_ylabel("gamma after layer l")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    ctx.save_figure("depth_placements", fig, "gamma vs depth for the six norm placements of a ReLU MLP: theory "
                                                "(black; grey = no norm) and torch simulations (+/- 1 SE) at several "
                                                f"widths (BN: training mode, batch {BN_BATCH}).")


ACTIVATION_CASES = (
    ("leaky_relu a=0.2", dict(activation="leaky_relu", a=0.2), {}),
    ("tanh", dict(activation="tanh"), {}),
    ("gelu", dict(activation="gelu"), {}),
    ("gelu, LN before", dict(activation="gelu", norm="layernorm", placement="pre"), {}),
    ("srelu", dict(activation="srelu"), {}),
    ("sigmoid, RMSNorm after", dict(activation="sigmoid", norm="rmsnorm", placement="post"), {}),
)


@register_check("depth_activations", forms=["depth.gamma"])
def check_activations(ctx) -> list:
    """γ per layer for leaky ReLU, tanh (0), GELU with and without LN (they differ), SReLU and sigmoid."""
    widths, _, _, depth = plan(ctx)
    depth = 3 if ctx.quick else 10
    cases = ACTIVATION_CASES if not ctx.quick else ACTIVATION_CASES[:5]
    results = []
    for k, (label, kw, _) in enumerate(cases):
        sims = run_config(ctx, label, kw, depth, ctx.seed + 100 + k)
        for l in range(1, depth + 1):
            pred = float(igbsym.get("depth.gamma").numpy(L=l, activation=kw["activation"], a=kw.get("a", 0.01),
                                                         norm=kw.get("norm", "none"),
                                                         placement=kw.get("placement", "pre")))
            results += compare_widths("depth.gamma", f"{label}, layer {l}", pred,
                                      {w: ratio(*sims[w][l]) for w in widths}, widths, ctx.seed + 100 + k,
                                      inits=plan(ctx)[1])
    return results


SCALE = 1.3     # Scale(α) after a unit-gain Dense is a Dense of gain α: depth.gamma(sigma_w = α) predicts it


@reusable
def _scaled(ctx, width, depth, n_inits, n_data, seed):
    from igbsym.ops import Act, Dense, Scale
    from igbsym.spec import Spec
    spec = Spec(width, (Dense(width, 1.0), Scale(SCALE), Act("gelu")) * depth, n_classes=width, sigma_out=1.0)
    return measure(spec, n_inits, n_data, seed, ctx.device)


@register_check("depth_new_ops", forms=["depth.gamma"])
def check_new_ops(ctx) -> list:
    """The two ops added to prove that an op or an activation is one module (docs/ARCHITECTURE.md): nets of
    Dense(1) → Scale(α) → GELU against depth.gamma(gelu, sigma_w = α), and |x| nets against depth.gamma(abs) (the
    arc-cosine map at slope −1), per layer, by the 1/N extrapolation of two widths."""
    widths, inits, n_data, _ = plan(ctx)
    depth = 3 if ctx.quick else 8
    seed = ctx.seed + 300
    scaled = {w: _scaled(ctx, w, depth, inits[w], n_data, seed_for(ctx, "depth", "scale", w, seed)) for w in widths}
    absolute = run_config(ctx, "abs", dict(activation="abs"), depth, seed + 1)
    form, out = igbsym.get("depth.gamma"), []
    for l in range(1, depth + 1):
        pred = float(form.numpy(L=l, activation="gelu", sigma_w=SCALE))
        out += compare_widths("depth.gamma", f"Scale({SCALE}) + gelu, layer {l}", pred,
                              {w: ratio(*scaled[w][l]) for w in widths}, widths, seed, inits=inits)
        pred = float(form.numpy(L=l, activation="abs"))
        out += compare_widths("depth.gamma", f"abs, layer {l}", pred, {w: ratio(*absolute[w][l]) for w in widths},
                              widths, seed + 1, inits=inits)
    return out


BIAS_CASES = (("relu", math.sqrt(2), 0.5), ("tanh", 1.5, 0.3))     # relu on the edge of chaos; tanh ordered-ish


@register_check("depth_bias", forms=["depth.gamma"])
def check_biases(ctx) -> list:
    """depth.gamma with sigma_b (issue 48): γ per layer of relu and tanh MLPs with biases, by the 1/N extrapolation
    of two widths (module docstring); the bias-free value differs by far more than the SE (relu L = 1: 0.467 vs
    0.581), so a form that drops σ_b fails."""
    widths, inits, _, _ = plan(ctx)
    depth = 3 if ctx.quick else 8
    form, out = igbsym.get("depth.gamma"), []
    for k, (act, sw, sb) in enumerate(BIAS_CASES):
        seed = ctx.seed + 400 + k
        sims = run_config(ctx, f"{act} with biases", dict(activation=act, sigma_w=sw, sigma_b=sb), depth, seed)
        for l in range(1, depth + 1):
            pred = float(form.numpy(L=l, activation=act, sigma_w=sw, sigma_b=sb))
            out += compare_widths("depth.gamma", f"{act} sigma_w={sw:.4g} sigma_b={sb:g}, layer {l}", pred,
                                  {w: ratio(*sims[w][l]) for w in widths}, widths, seed, inits=inits)
    return out


__all__ = ["measure", "ratio", "Result"]
