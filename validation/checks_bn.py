"""Checks of the BatchNorm family against real torch.nn.BatchNorm1d (train mode) and BN MLPs.

1. ``bn.layer_law``: iid Gaussian batches (mean 3, sd 2) through BatchNorm1d(affine=False) with a tiny eps
   (1e-12 relative to the input variance 4) for B in {5, 8, 16, 64, 512}: KS and equiprobable-bin χ² of one value
   per batch against bn.cdf_canonical / bn.pdf_canonical; moments with SEs over batches (the unit: batches are
   iid, values inside a batch are not); the support bound; the proxy from an explicit leave-one-out computation
   on the same batches against bn.cdf / bn.pdf and its moments (only where the SE exists: a variance SE needs a
   finite 4th moment, so bn.var is tested for B >= 8 and bn.kurtosis for B >= 16); TV via the exact coupling.
   Then torch's default eps = 1e-5: bias bound 0 <= 1 - E z² <= eps B/((B-3) sigma²) (from 1 - s²/(s²+eps) <=
   eps/s² and E[1/s²] = B/((B-3) sigma²)), and a run at sigma² = eps where the effect is large, against the exact
   E[X/(X + B eps/sigma²)], X ~ chi²_{B-1} (1-D quadrature).
2. ``bn.depth_gamma``: BN + ReLU MLPs of depth 20 (validation.simulate, real BatchNorm1d in train mode): γ of the
   pre-activations of every layer 2..20 and of the outputs vs bn.gamma_canonical (flat in depth) and bn.gamma.
3. ``bn.relu_bn_zero``: ReLU + BN MLPs (float64): μ_c = 0 to rounding for every init, γ = 0 at every depth.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from scipy import integrate, stats as sps

import igbsym
from igbsym.families.bn import density_crossing

from .checks import Result, law_result, register_check, z_result
from .simulate import NetSpec, simulate
from .stats import binned_chi2, gamma_estimate, jitter_g0, ks_test

BATCHES = (5, 8, 16, 64, 512)
get = igbsym.get


def _n_batches(ctx, B):
    return (40000 if ctx.quick else 400000) if B < 512 else (4000 if ctx.quick else 40000)


def _torch_bn(x, eps):
    """x [B, C]: C independent batches of size B through one BatchNorm1d (channels = batches), train mode."""
    bn = torch.nn.BatchNorm1d(x.shape[1], affine=False, eps=eps, dtype=x.dtype).train()
    with torch.no_grad():
        return bn(x)


def _leave_one_out(x):
    """Explicit proxy (Eqs. 27-29) for the first point of each batch: (x_0 - mean_{-0}) / std_{-0} (biased)."""
    rest = x[1:]
    return (x[0] - rest.mean(0)) / rest.std(0, unbiased=False)


def _units(v):
    """Per-batch means [C] -> mean and standard error over iid batches."""
    v = v.double().numpy() if isinstance(v, torch.Tensor) else v
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size))


def _delta_var(r, q):
    """Var = E q - (E r)^2 from per-batch means r (of ReLU) and q (of ReLU^2), with a delta-method SE."""
    mr, mq = r.mean(), q.mean()
    cov = np.cov(np.vstack([r, q]))
    grad = np.array([-2 * mr, 1.0])
    return float(mq - mr**2), float(math.sqrt(grad @ cov @ grad / r.size))


def _law_results(out, form_cdf, form_pdf, samples, B, label, seed):
    cdf = lambda v: get(form_cdf).numpy(b=v, B=B)  # noqa: E731
    ks, p = ks_test(samples, cdf)
    out.append(law_result(form_cdf, f"KS {label}", p, samples.size, seed, estimate=ks))
    stat, p2, dof = binned_chi2(samples, cdf, n_bins=40)
    out.append(law_result(form_pdf, f"chi2 (40 equiprobable bins, dof {dof}) {label}", p2, samples.size, seed,
                          estimate=stat))


def _layer_law_one(ctx, B, out, keep):
    g = torch.Generator().manual_seed(ctx.seed * 1000 + B)
    C = _n_batches(ctx, B)
    x = 3.0 + 2.0 * torch.randn(B, C, generator=g, dtype=torch.float64)
    z = _torch_bn(x, eps=4e-12)
    first = z[0].numpy()
    lab = f"B={B} torch BatchNorm1d eps=1e-12*sigma^2, {C} batches"
    _law_results(out, "bn.cdf_canonical", "bn.pdf_canonical", first, B, lab, ctx.seed)
    m2 = (z**2).mean(0).numpy()
    out.append(z_result("bn.var_canonical", lab, 1.0, m2.mean(), m2.std(ddof=1) / math.sqrt(C), C, ctx.seed,
                        bias_bound=1e-10, note="sum z^2 = B exactly per batch; bias bound = eps/sigma^2 + rounding"))
    m4 = (z**4).mean(0).numpy()
    out.append(z_result("bn.kurtosis_canonical", lab, get("bn.kurtosis_canonical").numpy(B=B), *_units(m4), C,
                        ctx.seed, note="E z^4 = kurtosis since E z^2 = 1"))
    relu = torch.relu(z)
    r, q = relu.mean(0).numpy(), (relu**2).mean(0).numpy()
    out.append(z_result("bn.relu_mean_canonical", lab, get("bn.relu_mean_canonical").numpy(B=B), *_units(r), C,
                        ctx.seed))
    out.append(z_result("bn.relu_var_canonical", lab, get("bn.relu_var_canonical").numpy(B=B), *_delta_var(r, q), C,
                        ctx.seed))
    support = float(get("bn.support_canonical").numpy(B=B))
    top = float(z.abs().max())
    out.append(Result("bn.support_canonical", f"max |z| over {B * C} values, {lab}", support, top, 0.0, B * C,
                      ctx.seed, passed=top <= support * (1 + 1e-12), note="every |z| must be <= sqrt(B-1)"))
    # the proxy: explicit leave-one-out on the same batches
    bt = _leave_one_out(x).numpy()
    lab_p = f"B={B} explicit leave-one-out, {C} batches"
    _law_results(out, "bn.cdf", "bn.pdf", bt, B, lab_p, ctx.seed)
    out.append(z_result("bn.relu_mean", lab_p, get("bn.relu_mean").numpy(B=B), *_units(np.maximum(bt, 0)), C,
                        ctx.seed))
    if B >= 8:
        out.append(z_result("bn.var", lab_p, get("bn.var").numpy(B=B), *_units(bt**2), C, ctx.seed,
                            note="SE needs E B~^4 < inf: B >= 7"))
        r_p = np.maximum(bt, 0)
        out.append(z_result("bn.relu_var", lab_p, get("bn.relu_var").numpy(B=B),
                            *_delta_var(r_p, r_p**2), C, ctx.seed))
        g_hat = r_p.mean() ** 2 / (r_p**2 - r_p.mean() ** 2).mean()
        out.append(z_result("bn.gamma", lab_p + " (mean^2/var of ReLU(B~))", get("bn.gamma").numpy(B=B), g_hat,
                            _gamma_se(r_p), C, ctx.seed))
    if B >= 16:
        k = (bt**4).mean() / (bt**2).mean() ** 2
        out.append(z_result("bn.kurtosis", lab_p, get("bn.kurtosis").numpy(B=B), k, _kurt_se(bt), C, ctx.seed,
                            note="delta-method SE; needs E B~^8 < inf: B >= 11"))
    rc = np.maximum(first, 0)
    out.append(z_result("bn.gamma_canonical", lab + " (mean^2/var of ReLU(z))", get("bn.gamma_canonical").numpy(B=B),
                        rc.mean() ** 2 / rc.var(), _gamma_se(rc), C, ctx.seed))
    # TV through the exact monotone coupling z = g(B~) of the same point: TV = P(c <= |B~|, |z| < c)
    c = math.sqrt(density_crossing(B)) if B >= 5 else math.sqrt(B - 1)
    hit = ((np.abs(bt) >= c) & (np.abs(first) < c)).astype(float)
    out.append(z_result("bn.tv_proxy", f"B={B} P(c <= |B~|, |z| < c), c = density crossing {c:.4f}",
                        get("bn.tv_proxy").numpy(B=B), *_units(hit), C, ctx.seed,
                        note="the TV of two laws related by a monotone map, estimated on coupled samples"))
    _large_b(out, B, first, bt, C, ctx.seed)
    keep[B] = (first, bt)
    # torch's default eps
    z_def = _torch_bn(x / 2, eps=1e-5)  # unit-variance input: eps/sigma^2 = 1e-5
    m2d = (z_def**2).mean(0).numpy()
    bound = 1e-5 * B / (B - 3)
    out.append(z_result("bn.var_canonical", f"B={B} torch default eps=1e-5, sigma=1", 1.0, m2d.mean(),
                        m2d.std(ddof=1) / math.sqrt(C) + 1e-17, C, ctx.seed, bias_bound=bound,
                        note=f"exact bias bound eps B/((B-3) sigma^2) = {bound:.2g}; KS shift <= {bound / 8:.1g}, "
                             "far below the KS resolution 1/sqrt(n): eps=1e-5 is invisible at sigma = 1"))
    _law_results(out, "bn.cdf_canonical", "bn.pdf_canonical", z_def[0].numpy(), B,
                 f"B={B} torch default eps=1e-5, sigma=1", ctx.seed)
    if B <= 64:
        z_small = _torch_bn((x - 3.0) / 2 * math.sqrt(1e-5), eps=1e-5)  # sigma^2 = eps: a large, exact effect
        m2s = (z_small**2).mean(0).numpy()
        kk, a = B - 1, float(B)  # E[X/(X + a)] with X ~ chi^2_{B-1}, a = B eps/sigma^2
        pred = integrate.quad(lambda v: v / (v + a) * sps.chi2.pdf(v, kk), 0, np.inf, epsabs=1e-13)[0]
        out.append(z_result("bn.var_canonical", f"B={B} eps=1e-5 at sigma^2=1e-5 (eps effect, exact prediction)",
                            pred, *_units(m2s), C, ctx.seed,
                            note="E z_eps^2 = E[SS/(SS + B eps)], SS/sigma^2 ~ chi^2_{B-1}: the eps-free 1 is "
                                 f"off by {1 - pred:.3f} here"))


def _gamma_se(r):
    """Delta-method SE of mean(r)^2/var(r) for iid r."""
    m, v = r.mean(), r.var()
    q = r**2
    cov = np.cov(np.vstack([r, q]))
    grad = np.array([2 * m / v + 2 * m * m**2 / v**2, -m**2 / v**2])  # d/dm, d/dE[q] with v = E q - m^2
    return float(math.sqrt(grad @ cov @ grad / r.size))


def _kurt_se(x):
    m2, m4 = (x**2).mean(), (x**4).mean()
    cov = np.cov(np.vstack([x**2, x**4]))
    grad = np.array([-2 * m4 / m2**3, 1 / m2**2])
    return float(math.sqrt(grad @ cov @ grad / x.size))


def _large_b(out, B, first, bt, C, seed):
    """bn.pdf_large_B vs the simulated mass of [-1, 1] (integrated large-B density) at the two largest B."""
    if B < 64:
        return
    grid = np.linspace(-1, 1, 2001)
    for est, samples in (("canonical", first), ("proxy", bt)):
        mass = float(np.trapezoid(get("bn.pdf_large_B").numpy(b=grid, B=B, estimator=est), grid))
        exact = get("bn.cdf_canonical" if est == "canonical" else "bn.cdf")
        exact_mass = float(exact.numpy(b=1.0, B=B) - exact.numpy(b=-1.0, B=B))
        hit = (np.abs(samples) <= 1).astype(float)
        out.append(z_result("bn.pdf_large_B", f"B={B} {est}: P(|value| <= 1)", mass, *_units(hit), C, seed,
                            bias_bound=abs(mass - exact_mass) + 1e-6,
                            note=f"bias bound = O(1/B^2) remainder vs the exact law ({abs(mass - exact_mass):.1g}) "
                                 "+ trapezoid error"))


@register_check("bn.layer_law", forms=["bn.pdf", "bn.cdf", "bn.var", "bn.kurtosis", "bn.relu_mean", "bn.relu_var",
                                       "bn.pdf_canonical", "bn.cdf_canonical", "bn.support_canonical",
                                       "bn.var_canonical", "bn.kurtosis_canonical", "bn.relu_mean_canonical",
                                       "bn.relu_var_canonical", "bn.tv_proxy", "bn.pdf_large_B", "bn.gamma",
                                       "bn.gamma_canonical"])
def check_layer_law(ctx) -> list:
    """One BatchNorm1d layer (train mode) on Gaussian batches: canonical law, explicit leave-one-out proxy, eps."""
    out, keep = [], {}
    for B in BATCHES:
        ctx.progress(f"bn: BatchNorm1d law B={B}")
        _layer_law_one(ctx, B, out, keep)
    _plot_laws(ctx, keep)
    return out


def _plot_laws(ctx, keep):
    if ctx.report_dir is None:
        return
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for ax, B in zip(axes[:2], (5, 16)):
        first, bt = keep[B]
        grid = np.linspace(-4, 4, 801)
        ax.hist(first, bins=120, range=(-4, 4), density=True, alpha=0.45, label="torch BatchNorm1d")
        ax.hist(bt, bins=120, range=(-4, 4), density=True, alpha=0.35, label="leave-one-out (explicit)")
        ax.plot(grid, get("bn.pdf_canonical").numpy(b=grid, B=B), "C0-", label="bn.pdf_canonical")
        ax.plot(grid, get("bn.pdf").numpy(b=grid, B=B), "C1--", label="bn.pdf (paper, Eq. 49)")
        ax.plot(grid, sps.norm.pdf(grid), "k:", lw=0.8, label="N(0,1) (B = inf)")
        ax.set_title(f"B = {B}")
        ax.set_xlabel("normalised value")
        ax.legend(fontsize=6)
    Bs = np.unique(np.geomspace(5, 4096, 60).astype(int))
    ax = axes[2]
    ax.plot(Bs, get("bn.gamma").numpy(B=Bs), "C1--", label="gamma, proxy (bn.gamma)")
    ax.plot(Bs, get("bn.gamma_canonical").numpy(B=Bs), "C0-", label="gamma, torch BN (bn.gamma_canonical)")
    ax.axhline(1 / (np.pi - 1), color="k", lw=0.8, label="no BN / full batch 1/(pi-1)")
    ax.plot(Bs, get("bn.tv_proxy").numpy(B=Bs), "C3-", label="TV(proxy, torch BN)")
    ax.set_xscale("log")
    ax.set_xlabel("batch size B")
    ax.legend(fontsize=6)
    ctx.save_figure("bn_proxy_vs_canonical", fig,
                    "Left/centre: the paper's leave-one-out density (scaled t_{B-2}) vs torch's BatchNorm1d output "
                    "(scaled Beta law on |z| <= sqrt(B-1)). Right: gamma of BN + ReLU for both laws and their "
                    "total-variation distance (~0.633/B).")


def _depth_sizes(ctx):
    return dict(d=64, n=128, inits=100, data=1024, depth=20, batches=(8,)) if ctx.quick else \
        dict(d=256, n=256, inits=400, data=4096, depth=20, batches=(5, 8, 64))


@register_check("bn.depth_gamma", forms=["bn.gamma_canonical", "bn.gamma", "bn.gamma_large_B"])
def check_depth_gamma(ctx) -> list:
    """BN + ReLU MLP (depth 20): gamma of every layer's pre-activations and of the outputs vs bn.gamma_canonical."""
    s, out = _depth_sizes(ctx), []
    for B in s["batches"]:
        ctx.progress(f"bn: BN+ReLU depth {s['depth']} B={B}")
        spec = NetSpec(s["d"], (s["n"],) * s["depth"], activation="relu", norm="batchnorm", placement="pre",
                       bn_batch=B, sigma_w=math.sqrt(2))
        res = simulate(spec, s["inits"], s["data"], seed=ctx.seed + B, device=ctx.device, layer_stats=("pre",),
                       fresh_data=True)
        pred, proxy = float(get("bn.gamma_canonical").numpy(B=B)), float(get("bn.gamma").numpy(B=B))
        rows = []
        for layer in range(1, s["depth"] + 1):
            st = res.layers[layer]["pre"] if layer < s["depth"] else res.out
            est = gamma_estimate(st.mean, st.var, res.n_data)
            rows.append((layer + 1, est.value, est.se))
            if layer in (1, 2, 5, 10, s["depth"]):
                where = f"layer {layer + 1} pre-activations" if layer < s["depth"] else "outputs"
                out.append(z_result("bn.gamma_canonical", f"BN+ReLU B={B} depth {s['depth']}, {where}, n={s['n']} "
                                    f"I={res.n_inits} D={res.n_data}", pred, est.value, est.se, res.n_inits,
                                    ctx.seed, bias_bound=(B - 1) / res.n_data,
                                    note=f"proxy bn.gamma = {proxy:.4f} is {(est.value - proxy) / est.se:.1f} SE away; "
                                         "bias bound (B-1)/D: within-batch correlation of the 1/D data-mean "
                                         "correction"))
        slope = np.polyfit([r[0] for r in rows], [r[1] for r in rows], 1, w=[1 / r[2] for r in rows])[0]
        out.append(z_result("bn.gamma_canonical", f"BN+ReLU B={B}: slope of gamma vs layer (flat in depth)", 0.0,
                            slope, max(r[2] for r in rows) / s["depth"] * math.sqrt(12 / s["depth"]), res.n_inits,
                            ctx.seed, note="weighted LSQ slope; SE bound from the largest per-layer SE"))
        out.append(z_result("bn.gamma_large_B", f"B={B} large-B form vs measured output gamma",
                            float(get("bn.gamma_large_B").numpy(B=B, estimator="canonical")), rows[-1][1], rows[-1][2],
                            res.n_inits, ctx.seed, bias_bound=abs(float(get("bn.gamma_large_B").numpy(
                                B=B, estimator="canonical")) - pred) + (B - 1) / res.n_data,
                            note="bias bound: the O(1/B^2) remainder of the expansion"))
        _plot_depth(ctx, B, rows, pred, proxy, res)
    return out


def _plot_depth(ctx, B, rows, pred, proxy, res):
    if ctx.report_dir is None:
        return
    import matplotlib.pyplot as plt
    layer, g, se = map(np.array, zip(*rows))
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    axes[0].errorbar(layer, g, yerr=2 * se, fmt="o", label="simulated gamma ± 2 SE")
    axes[0].axhline(pred, color="C0", label="bn.gamma_canonical (torch BN)")
    axes[0].axhline(proxy, color="C1", ls="--", label="bn.gamma (paper's proxy)")
    axes[0].set_xlabel("layer")
    axes[0].set_ylabel("gamma")
    axes[0].legend(fontsize=7)
    g0 = jitter_g0(res.g0, res.n_data, ctx.seed)
    grid = np.linspace(0.002, 0.998, 400)
    axes[1].hist(g0, bins=40, range=(0, 1), density=True, alpha=0.5, label="simulated G0")
    axes[1].plot(grid, get("igb.pdf").numpy(g=grid, gamma=pred), label="f_G0 at bn.gamma_canonical")
    axes[1].set_xlabel("G0")
    axes[1].legend(fontsize=7)
    ctx.save_figure(f"bn_relu_depth_B{B}", fig, f"BN + ReLU, B = {B}: gamma is flat over 20 layers at the torch-BN "
                                                f"value; G0 histogram vs f_G0.")


@register_check("bn.relu_bn_zero", forms=["bn.gamma_relu_bn"])
def check_relu_bn(ctx) -> list:
    """ReLU + BN (Thm E.2): every init's output mean over the dataset is 0 to rounding, so gamma = 0 at any depth."""
    out = []
    inits, data, width = (20, 512, 64) if ctx.quick else (400, 4096, 256)
    for B, depth in ((8, 1), (8, 10), (64, 20)):
        ctx.progress(f"bn: ReLU+BN depth {depth} B={B}")
        spec = NetSpec(64, (width,) * depth, activation="relu", norm="batchnorm", placement="post", bn_batch=B,
                       sigma_w=math.sqrt(2))
        res = simulate(spec, inits, data, seed=ctx.seed + depth, device=ctx.device, dtype=torch.float64,
                       layer_stats=False, fresh_data=True)
        mu, var = res.mu.numpy(), res.var.numpy()
        gamma_hat = float((mu**2).mean() / var.mean())
        out.append(z_result("bn.gamma_relu_bn", f"ReLU+BN B={B} depth {depth} n={width} I={inits} D={data} (float64)",
                            0.0, gamma_hat, 0.0, inits, ctx.seed, bias_bound=1e-20,
                            note=f"max |mu_c| = {np.abs(mu).max():.1e}; bias bound: float64 rounding of batch sums "
                                 "(gamma ~ (n 1e-16)^2); train-mode BN only"))
        if depth == 20:
            _plot_relu_bn(ctx, res)
    return out


def _plot_relu_bn(ctx, res):
    if ctx.report_dir is None:
        return
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5, 3.6))
    ax.hist(jitter_g0(res.g0, res.n_data, ctx.seed), bins=40, range=(0, 1), density=True, alpha=0.5,
            label="simulated G0 (ReLU + BN, depth 20)")
    ax.axvline(0.5, color="k", label="f_G0 at gamma = 0: point mass at 1/2 (D = inf)")
    ax.set_xlabel("G0")
    ax.legend(fontsize=7)
    ctx.save_figure("bn_relu_bn_g0", fig, "ReLU + BN: G0 concentrates at 1/2 (only the finite-D binomial spread).")
