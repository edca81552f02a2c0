"""Checks of the BatchNorm family against real torch.nn.BatchNorm1d (train mode) and BN MLPs.

1. ``bn.layer_law``: iid Gaussian batches (mean 3, sd 2) through BatchNorm1d(affine=False) with a tiny eps
   (1e-12 relative to the input variance 4) for B in {3, 4, 5, 8, 12, 16, 64, 512} (B -> B+1 is resolved at the
   small B): KS of one value per batch against bn.cdf_canonical and, for
   B >= 5, a χ² of equal-count bins with expected counts from ∫bn.pdf_canonical (the density itself);
   moments with SEs over batches (the unit: batches are iid, values inside a batch are not; delta-method SEs by
   ``stats.delta_method``); the support; the proxy from an explicit leave-one-out computation on the same batches
   against bn.cdf / bn.pdf and its moments (only where the SE exists: a variance SE needs a finite 4th moment,
   so bn.var is tested for B >= 8 and bn.kurtosis for B >= 16); TV via the exact coupling. Torch's default
   eps = 1e-5 at sigma = 1: bias bound 0 <= 1 - E z² <= eps B/((B-3) sigma²) (from 1 - s²/(s²+eps) <= eps/s²
   and E[1/s²] = B/((B-3) sigma²)).
   Rounding: float64 sums of B terms carry a relative error <= B·u (u = 2^-53, standard summation bound); the
   bounds below add 4·B·u for the two sums (mean, variance) and the square/division (a derived, not tuned, term).
2. ``bn.large_B_order``: the large-B expansions claim error O(1/B²); their error against the exact forms is
   measured at B and 2B and its order log2(err(B)/err(2B)) must be 2 ± 1/4 (a deterministic convergence test;
   the tolerance covers the O(1/B) relative drift of the order at B = 1024, |Δp| ≈ c/(B ln 2) ≪ 1/4).
3. ``bn.depth_gamma``: BN + ReLU MLPs of depth 20 (igbsym.validation.simulate, real BatchNorm1d in train mode): γ of the
   pre-activations of several layers and of the outputs vs bn.gamma_canonical (flat in depth).
4. ``bn.relu_bn_zero``: ReLU + BN MLPs (float64): γ̂ = mean μ_c² / mean Var vs bn.gamma_relu_bn (0) within the
   float64 rounding bound.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from scipy import stats as sps

import igbsym
from igbsym.families.bn import density_crossing

from .checks import law_result, register_check, reusable, seed_for, register_sizes, size, z_result
from .simulate import NetSpec, simulate
from .stats import delta_method, gamma_estimate, jitter_g0, ks_test, mean_se, pdf_chi2

BATCHES = (3, 4, 5, 8, 12, 16, 64, 512)
U64 = 2.0 ** -53                       # float64 unit roundoff
get = igbsym.get
# Thorough sizes, from the allowance they buy. relu_bn: γ̂ = 0 is tested against a float64 rounding bound, not an
# SE: every init must pass on its own, so more inits add no power; 32 inits (was 400: 7.5 min) keep the thorough
# width, data and depths that set the bound. depth: per-layer SE of γ̂ ∝ 1/√(inits) (≈ 0.0063 at 100 inits, n = 128
# in quick mode); 160 inits at n = 256 give SE ≈ 0.0035 (allowance 5 SE + bias ≈ 0.019 at B = 5, 8; 0.04 at
# B = 64, where the (B−1)/(D−1) bias bound dominates), half the quick allowance, at 0.4 of the former 400 inits' work.
register_sizes("bn",
               quick=dict(batches=40000, batches_512=4000, relu_bn=(20, 512, 64),
                          depth=dict(d=64, n=128, inits=100, data=1024, depth=20, batches=(8,))),
               thorough=dict(batches=400000, batches_512=40000, relu_bn=(32, 4096, 256),
                             depth=dict(d=256, n=256, inits=160, data=4096, depth=20, batches=(5, 8, 64))))


def _torch_bn(x, eps):
    """x [B, C]: C independent batches of size B through one BatchNorm1d (channels = batches), train mode."""
    bn = torch.nn.BatchNorm1d(x.shape[1], affine=False, eps=eps, dtype=x.dtype).train()
    with torch.no_grad():
        return bn(x)


def _leave_one_out(x):
    """Explicit proxy (Eqs. 27-29) for the first point of each batch: (x_0 - mean_{-0}) / std_{-0} (biased)."""
    rest = x[1:]
    return (x[0] - rest.mean(0)) / rest.std(0, unbiased=False)


@reusable
def bn_batches(ctx, B: int) -> dict:
    """Per-batch statistics of C iid N(3, 4) batches of size B through torch's BatchNorm1d (eps = 1e-12 σ² and
    the default 1e-5 at σ = 1) and the explicit leave-one-out proxy of the first point (numpy arrays [C])."""
    g = torch.Generator().manual_seed(seed_for(ctx, "bn.layer_law", B))
    C = size(ctx, "bn.batches") if B < 512 else size(ctx, "bn.batches_512")
    x = 3.0 + 2.0 * torch.randn(B, C, generator=g, dtype=torch.float64)
    z = _torch_bn(x, eps=4e-12)
    z_def = _torch_bn(x / 2, eps=1e-5)  # unit-variance input: eps/sigma^2 = 1e-5
    return dict(C=C, first=z[0].numpy(), m2=(z**2).mean(0).numpy(), m4=(z**4).mean(0).numpy(),
                top=float(z.abs().max()), proxy=_leave_one_out(x).numpy(), first_def=z_def[0].numpy(),
                m2_def=(z_def**2).mean(0).numpy())


def _law_results(out, form_cdf, form_pdf, samples, B, label, seed, support=math.inf):
    cdf = lambda v: get(form_cdf).numpy(b=v, B=B)  # noqa: E731
    ks, p = ks_test(samples, cdf)
    out.append(law_result(form_cdf, f"KS {label}", p, samples.size, seed, estimate=ks))
    if B < 5:   # B = 3: canonical density singular at the support ends, proxy a Cauchy law: quadrature unsafe
        return
    pdf = lambda v: get(form_pdf).numpy(b=np.clip(v, -support, support), B=B)  # noqa: E731
    stat, p2, dof = pdf_chi2(samples, pdf, n_bins=40, lo=-support, hi=support)
    out.append(law_result(form_pdf, f"chi2 (40 equal-count bins, expected = integral of the pdf, dof {dof}) {label}",
                          p2, samples.size, seed, estimate=stat,
                          note="outer bins reach 10 sd beyond the sample extremes (or the support)"))


def _units(v):
    e = mean_se(v)
    return e.value, e.se


def _support_result(B, top, first, C, seed):
    """Support [-S, S] of the canonical law: every |z| <= S (rounding 8·B·u relative), and the largest of C
    iid first values comes within g_alpha of S, where P(S - max|z_1| > g_alpha) = alpha under the exact law
    z²/(B-1) ~ Beta(1/2, (B-2)/2) (scipy's Beta: an independent route)."""
    S = float(get("bn.support_canonical").numpy(B=B))
    alpha = law_result("", "", 1.0, 1, 0).alpha
    p = -math.expm1(math.log(alpha) / C)                   # P(|z| > t) with (1 - p)^C = alpha
    t = math.sqrt((B - 1) * sps.beta.isf(p, 0.5, (B - 2) / 2))
    gap = math.sqrt(B - 1) - t
    m1 = float(np.abs(first).max())
    r = z_result("bn.support_canonical", f"B={B}: max |z| of {C} iid batch values within g_alpha of S, all "
                                         f"{B * C} values <= S", S, m1, 0.0, C, seed, bias_bound=gap,
                 note=f"g_alpha = {gap:.3g} from the exact Beta law; overall max |z| = {top:.6g}")
    r.passed = bool(r.passed and top <= S * (1 + 8 * B * U64))
    return r


def _layer_law_one(ctx, B, out, keep):
    st = bn_batches(ctx, B)
    C, first, bt = st["C"], st["first"], st["proxy"]
    lab = f"B={B} torch BatchNorm1d eps=1e-12*sigma^2, {C} batches"
    _law_results(out, "bn.cdf_canonical", "bn.pdf_canonical", first, B, lab, ctx.seed, support=math.sqrt(B - 1))
    bound = 1e-12 * B / (B - 3) + 4 * B * U64 if B > 3 else math.inf   # E[1/s²] = inf at B = 3
    if B > 3:
        out.append(z_result("bn.var_canonical", lab, get("bn.var_canonical").numpy(B=B), *_units(st["m2"]), C, ctx.seed,
                            bias_bound=bound, note=f"bias bound eps B/((B-3) sigma^2) + 4 B u = {bound:.2g} (derived)"))
        out.append(z_result("bn.kurtosis_canonical", lab, get("bn.kurtosis_canonical").numpy(B=B), *_units(st["m4"]),
                            C, ctx.seed, bias_bound=2 * bound, note="E z^4 = kurtosis since E z^2 = 1 (eps bias <= "
                                                                    "2 x that of E z^2)"))
    relu = np.maximum(first, 0)
    out.append(z_result("bn.relu_mean_canonical", lab, get("bn.relu_mean_canonical").numpy(B=B), *_units(relu), C,
                        ctx.seed))
    out.append(z_result("bn.relu_var_canonical", lab, get("bn.relu_var_canonical").numpy(B=B),
                        *delta_method(lambda m: m[1] - m[0] ** 2, [relu, relu**2]), C, ctx.seed))
    out.append(_support_result(B, st["top"], first, C, ctx.seed))
    lab_p = f"B={B} explicit leave-one-out, {C} batches"
    _law_results(out, "bn.cdf", "bn.pdf", bt, B, lab_p, ctx.seed)
    r_p = np.maximum(bt, 0)
    if B >= 5:   # the SE of a mean needs a finite variance of ReLU(B~): t_{B-2} with B - 2 > 2
        out.append(z_result("bn.relu_mean", lab_p, get("bn.relu_mean").numpy(B=B), *_units(r_p), C, ctx.seed))
    if B >= 8:
        out.append(z_result("bn.var", lab_p, get("bn.var").numpy(B=B), *_units(bt**2), C, ctx.seed,
                            note="SE needs E B~^4 < inf: B >= 7"))
        out.append(z_result("bn.relu_var", lab_p, get("bn.relu_var").numpy(B=B),
                            *delta_method(lambda m: m[1] - m[0] ** 2, [r_p, r_p**2]), C, ctx.seed))
        out.append(z_result("bn.gamma", lab_p + " (mean^2/var of ReLU(B~))", get("bn.gamma").numpy(B=B),
                            *delta_method(lambda m: m[0] ** 2 / (m[1] - m[0] ** 2), [r_p, r_p**2]), C, ctx.seed))
    if B >= 16:
        out.append(z_result("bn.kurtosis", lab_p, get("bn.kurtosis").numpy(B=B),
                            *delta_method(lambda m: m[1] / m[0] ** 2, [bt**2, bt**4]), C, ctx.seed,
                            note="delta-method SE; needs E B~^8 < inf: B >= 11"))
    out.append(z_result("bn.gamma_canonical", lab + " (mean^2/var of ReLU(z))", get("bn.gamma_canonical").numpy(B=B),
                        *delta_method(lambda m: m[0] ** 2 / (m[1] - m[0] ** 2), [relu, relu**2]), C, ctx.seed))
    # TV through the exact monotone coupling z = g(B~) of the same point: TV = P(c <= |B~|, |z| < c)
    c = math.sqrt(density_crossing(B)) if B >= 5 else math.sqrt(B - 1)   # B < 5: no crossing (bn.tv_proxy)
    hit = ((np.abs(bt) >= c) & (np.abs(first) < c)).astype(float)
    out.append(z_result("bn.tv_proxy", f"B={B} P(c <= |B~|, |z| < c), c = density crossing {c:.4f}",
                        get("bn.tv_proxy").numpy(B=B), *_units(hit), C, ctx.seed,
                        note="the TV of two laws related by a monotone map, estimated on coupled samples"))
    keep[B] = (first, bt)
    if B > 3:
        _default_eps(out, st, B, C, ctx.seed)


def _default_eps(out, st, B, C, seed):
    """torch's default eps = 1e-5 at sigma = 1 (B > 3: the bound needs E[1/s²] < inf)."""
    bound = 1e-5 * B / (B - 3) + 4 * B * U64
    out.append(z_result("bn.var_canonical", f"B={B} torch default eps=1e-5, sigma=1",
                        get("bn.var_canonical").numpy(B=B),
                        *_units(st["m2_def"]), C, seed, bias_bound=bound,
                        note=f"exact bias bound eps B/((B-3) sigma^2) + 4 B u = {bound:.2g}; KS shift <= "
                             f"{bound / 8:.1g}, far below the KS resolution 1/sqrt(n)"))
    _law_results(out, "bn.cdf_canonical", "bn.pdf_canonical", st["first_def"], B,
                 f"B={B} torch default eps=1e-5, sigma=1", seed, support=math.sqrt(B - 1))


@register_check("bn.layer_law", forms=["bn.pdf", "bn.cdf", "bn.var", "bn.kurtosis", "bn.relu_mean", "bn.relu_var",
                                       "bn.pdf_canonical", "bn.cdf_canonical", "bn.support_canonical",
                                       "bn.var_canonical", "bn.kurtosis_canonical", "bn.relu_mean_canonical",
                                       "bn.relu_var_canonical", "bn.tv_proxy", "bn.gamma", "bn.gamma_canonical"])
def check_layer_law(ctx) -> list:
    """One BatchNorm1d layer (train mode) on Gaussian batches: canonical law, explicit leave-one-out proxy, eps."""
    out, keep = [], {}
    for B in BATCHES:
        ctx.progress(f"bn: BatchNorm1d law B={B}")
        _layer_law_one(ctx, B, out, keep)
    _plot_laws(ctx, keep)
    return out


ORDER_B = 1024
_ORDER_NOTE = "order of the error of the large-B expansion vs the exact form (claim: O(1/B^2), order 2 +- 1/4)"
_ORDER_EXEMPT = "B -> B+1 moves the expansion by O(1/B^2): within its own claim"


def _order(err_b: float, err_2b: float) -> float:
    return math.log2(err_b / err_2b) if err_b > 0 and err_2b > 0 else 0.0


@register_check("bn.large_B_order", forms=["bn.pdf_large_B", "bn.gamma_large_B"],
                exempt={"bn.pdf_large_B": {"B+1": _ORDER_EXEMPT}, "bn.gamma_large_B": {"B+1": _ORDER_EXEMPT}})
def check_large_b_order(ctx) -> list:
    """The large-B expansions' own claim: their error against the exact laws / γ falls like 1/B² (order 2)."""
    out, grid = [], np.linspace(-6, 6, 1201)
    for est, exact in (("proxy", "bn.pdf"), ("canonical", "bn.pdf_canonical")):
        err = [float(np.max(np.abs(get("bn.pdf_large_B").numpy(b=grid, B=B, estimator=est)
                                   - get(exact).numpy(b=grid, B=B)))) for B in (ORDER_B, 2 * ORDER_B)]
        out.append(z_result("bn.pdf_large_B", f"{est}: order of sup_b |expansion - {exact}| at B={ORDER_B}, "
                                              f"{2 * ORDER_B}", 2.0, _order(*err), 0.0, 2, ctx.seed, bias_bound=0.25,
                            note=f"{_ORDER_NOTE}; errors {err[0]:.3g}, {err[1]:.3g}"))
    for est, exact in (("proxy", "bn.gamma"), ("canonical", "bn.gamma_canonical")):
        err = [abs(float(get("bn.gamma_large_B").numpy(B=B, estimator=est)) - float(get(exact).numpy(B=B)))
               for B in (ORDER_B, 2 * ORDER_B)]
        out.append(z_result("bn.gamma_large_B", f"{est}: order of |expansion - {exact}| at B={ORDER_B}, "
                                                f"{2 * ORDER_B}", 2.0, _order(*err), 0.0, 2, ctx.seed,
                            bias_bound=0.25, note=f"{_ORDER_NOTE}; errors {err[0]:.3g}, {err[1]:.3g}"))
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


@reusable
def bn_relu_net(ctx, B: int) -> dict:
    """BN + ReLU MLP (depth 20, fresh data per init): per-layer pre-activation γ̂ (value, se) and G0."""
    s = size(ctx, "bn.depth")
    spec = NetSpec(s["d"], (s["n"],) * s["depth"], activation="relu", norm="batchnorm", placement="pre",
                   bn_batch=B, sigma_w=math.sqrt(2))
    n_data = s["data"] - s["data"] % B   # whole mini-batches of B (the largest multiple of B not above the size)
    res = simulate(spec, s["inits"], n_data, seed=seed_for(ctx, "bn.depth_gamma", B), device=ctx.device,
                   layer_stats=("pre",), fresh_data=True)
    rows = []
    for layer in range(1, s["depth"] + 1):
        st = res.layers[layer]["pre"] if layer < s["depth"] else res.out
        est = gamma_estimate(st.mean, st.var, res.n_data)
        rows.append((layer + 1, est.value, est.se))
    return dict(rows=rows, g0=res.g0.numpy(), n_inits=res.n_inits, n_data=res.n_data)


@register_check("bn.depth_gamma", forms=["bn.gamma_canonical"])
def check_depth_gamma(ctx) -> list:
    """BN + ReLU MLP (depth 20): gamma of every layer's pre-activations and of the outputs vs bn.gamma_canonical.

    Bias bound (B-1)/(D-1) (derived): inside a BN batch the outputs of one init are correlated (BN couples the
    batch), so Var(μ̂) = Var/D · (1 + (B-1)ρ) with ρ the within-batch correlation, |ρ| <= 1, while γ̂ subtracts
    the iid value Var/D: the numerator is off by at most (B-1)/D · Var and the unbiased data variance by the same
    relative amount, so |E γ̂ - γ| <= (B-1)/(D-1) (1 + γ)."""
    s, out = size(ctx, "bn.depth"), []
    for B in s["batches"]:
        ctx.progress(f"bn: BN+ReLU depth {s['depth']} B={B}")
        sim = bn_relu_net(ctx, B)
        pred, proxy = float(get("bn.gamma_canonical").numpy(B=B)), float(get("bn.gamma").numpy(B=B))
        rows, D = sim["rows"], sim["n_data"]
        bias = (B - 1) / (D - 1) * (1 + pred)
        for layer, value, se in rows:
            if layer - 1 in (1, 2, 5, 10, s["depth"]):
                where = f"layer {layer} pre-activations" if layer - 1 < s["depth"] else "outputs"
                out.append(z_result("bn.gamma_canonical", f"BN+ReLU B={B} depth {s['depth']}, {where}, n={s['n']} "
                                    f"I={sim['n_inits']} D={D}", pred, value, se, sim["n_inits"], ctx.seed,
                                    bias_bound=bias,
                                    note=f"proxy bn.gamma = {proxy:.4f} is {(value - proxy) / se:.1f} SE away; bias "
                                         f"bound (B-1)/(D-1)(1+gamma) (within-batch correlation, see doc)"))
        slope = np.polyfit([r[0] for r in rows], [r[1] for r in rows], 1, w=[1 / r[2] for r in rows])[0]
        out.append(z_result("bn.gamma_canonical", f"BN+ReLU B={B}: slope of gamma vs layer (flat in depth)", 0.0,
                            slope, max(r[2] for r in rows) / s["depth"] * math.sqrt(12 / s["depth"]), sim["n_inits"],
                            ctx.seed, note="weighted LSQ slope; SE bound from the largest per-layer SE"))
        _plot_depth(ctx, B, rows, pred, proxy, sim)
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
    g0 = jitter_g0(res["g0"], res["n_data"], ctx.seed)
    grid = np.linspace(0.002, 0.998, 400)
    axes[1].hist(g0, bins=40, range=(0, 1), density=True, alpha=0.5, label="simulated G0")
    axes[1].plot(grid, get("igb.pdf").numpy(g=grid, gamma=pred), label="f_G0 at bn.gamma_canonical")
    axes[1].set_xlabel("G0")
    axes[1].legend(fontsize=7)
    ctx.save_figure(f"bn_relu_depth_B{B}", fig, f"BN + ReLU, B = {B}: gamma is flat over 20 layers at the torch-BN "
                                                f"value; G0 histogram vs f_G0.")


@reusable
def relu_bn_net(ctx, B: int, depth: int):
    inits, data, width = size(ctx, "bn.relu_bn")
    spec = NetSpec(64, (width,) * depth, activation="relu", norm="batchnorm", placement="post", bn_batch=B,
                   sigma_w=math.sqrt(2))
    return simulate(spec, inits, data, seed=seed_for(ctx, "bn.relu_bn_zero", B, depth), device=ctx.device,
                    dtype=torch.float64, layer_stats=False, fresh_data=True)


@register_check("bn.relu_bn_zero", forms=["bn.gamma_relu_bn"])
def check_relu_bn(ctx) -> list:
    """ReLU + BN (Thm E.2): every init's output mean over the dataset is 0 to rounding, so gamma = 0 at any depth.

    Rounding bound (float64, u = 2^-53): μ_c is a sum over D data, n features and B batch members, each a sum
    of at most N = B + n + D terms, so |μ̂_c| <= N u Σ_j |V_cj| max|z_j| <= N u √n ‖V_c‖ √(B-1) (|z| <= √(B-1)),
    and Var(O_c) ≈ ‖V_c‖² (unit-variance BN features, nearly uncorrelated at init; factor 4 of margin for their
    correlation): γ̂ = mean μ̂² / mean Var <= 4 n (B-1) (N u)²."""
    out = []
    inits, data, width = size(ctx, "bn.relu_bn")
    for B, depth in ((8, 1), (8, 10), (64, 20)):
        ctx.progress(f"bn: ReLU+BN depth {depth} B={B}")
        res = relu_bn_net(ctx, B, depth)
        mu, var = res.mu.numpy(), res.var.numpy()
        gamma_hat = float((mu**2).mean() / var.mean())
        bound = 4 * width * (B - 1) * ((B + width + data) * U64) ** 2
        out.append(z_result("bn.gamma_relu_bn", f"ReLU+BN B={B} depth {depth} n={width} I={inits} D={data} (float64)",
                            get("bn.gamma_relu_bn").numpy(B=B), gamma_hat, 0.0, inits, ctx.seed, bias_bound=bound,
                            note=f"max |mu_c| = {np.abs(mu).max():.1e}; bias bound 4 n (B-1) ((B+n+D) u)^2 = "
                                 f"{bound:.1e}: float64 rounding (derived in the check's doc); train-mode BN only"))
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
