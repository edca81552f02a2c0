"""Checks of the IGB family (γ of one hidden layer, the law of G0, c = γ/(1+γ)) against batched torch MLPs.

Setting (igb-initial-guessing-bias.txt Sec. 4.1): one hidden layer, Kaiming weights, N(0, I_d) data, 2 classes.

Finite-size honesty. For one hidden layer with zero-mean output weights, E_W[μ_c²]/E_W[Var_χ(O_c)] equals
E[m(s)²]/E[v(s)] EXACTLY at any width n, where s = ‖w_j‖ is a first-layer node norm and m(s), v(s) are the
mean and variance of φ(sZ). For Kaiming-normal weights s² = σ_w² χ²_d/d, so:
- homogeneous activations (relu, leaky_relu, identity) and odd ones (tanh: m ≡ 0) have NO finite-size bias;
- srelu and gelu have an O(1/d) bias, computed exactly here (``gamma_finite_d``: srelu in closed form,
  γ_d = 2(1 − E[s]/σ_w)/(π − 1) ≈ 1/(2d(π − 1)); gelu by quadrature over χ²_d) and passed as the stated
  ``bias_bound`` of the z-test against igb.gamma (infinite d); the convergence sweep shows it shrinking ∝ 1/d.
γ estimates use ``fresh_data=True`` (each init its own dataset) so the SE over inits is complete (see stats.py),
and the Rao–Blackwellised estimator (validation/estimators.py: the output layer's i.i.d. weights integrated out
exactly given the hidden features; unbiased for the same γ, ≈ 20× smaller SE at the same cost). The network is
still simulated (the hidden layer's features come from the torch forward pass on data), unlike 'gaussian-rb'.
G0 laws: KS on G0 jittered by U(−1/2, 1/2)/D (continuity correction; residual |ΔF| ≤ max f/D, stated).
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import special
from scipy import stats as sps

import igbsym
from igbsym import activations
from igbsym.ops import SIGMA_W

from .checks import (Context, law_result, register_check, register_sizes, reusable, seed_for, size,
                     z_result)
from .estimators import gamma_of_sim
from .simulate import NetSpec, simulate
from .stats import jitter_g0, ks_test, pdf_chi2, ratio_estimate

GAMMA_ACTS = (("relu", 0.01), ("leaky_relu", 0.2), ("identity", 0.01), ("tanh", 0.01), ("srelu", 0.01),
              ("gelu", 0.01))


register_sizes("igb", quick=dict(d=64, n=256, inits=400, data=1000, law_inits=1000, law_d=32, law_n=128,
                                 law_data=1000, sweep=(32, 64, 128, 256), sweep_inits=300, sweep_data=500),
               thorough=dict(d=256, n=256, inits=1000, data=2000, law_inits=4000, law_d=64, law_n=256,
                             law_data=2000, sweep=(64, 128, 256, 512, 1024), sweep_inits=400, sweep_data=1000))
# sweep_inits: the srelu sweep's allowance is 5 SE + the exact finite-d gap γ_d (2.3e-4 at d = 1024); the RB SE
# there is ~1e-5, so 400 inits (was 1000; the d = 1024 point alone was 2 TFLOP) widen the allowance by < 10 %.


def sizes(ctx) -> dict:
    """This module's rows of the one size table (checks.SIZES): quick (CI / README job) vs thorough."""
    return {k: size(ctx, f"igb.{k}") for k in ("d", "n", "inits", "data", "law_inits", "law_d", "law_n", "law_data",
                                                "sweep", "sweep_inits", "sweep_data")}


@lru_cache(maxsize=64)
def _sim(activation, a, d, n, inits, data, seed, device, weight_law="normal", fresh=True):
    """One cached simulation; the seed is salted by the configuration so different checks are independent."""
    spec = NetSpec(d, (n,), activation=activation, a=a, weight_law=weight_law)
    return simulate(spec, inits, data, seed=seed_for(Context(seed=seed), "igb", activation, a, d, n, weight_law, fresh),
                    device=device, layer_stats="penultimate", fresh_data=fresh)


def sim(ctx, activation, a=0.01, d=None, n=None, inits=None, data=None, weight_law="normal", fresh=True):
    s = sizes(ctx)
    ctx.progress(f"igb: simulating {activation} d={d or s['d']} n={n or s['n']}")
    return _sim(activation, a, d or s["d"], n or s["n"], inits or s["inits"], data or s["data"], ctx.seed,
                ctx.device, weight_law, fresh)


def gamma_inf(activation, a=0.01, sigma_w=SIGMA_W) -> float:
    return float(igbsym.get("igb.gamma").numpy(activation=activation, sigma_w=sigma_w, a=a))


def gamma_finite_d(activation, d, a=0.01, sigma_w=SIGMA_W, weight_law="normal", k=400) -> float:
    """Exact E[m(s)²]/E[v(s)] for first-layer node norms s (finite input dim d; see module docstring)."""
    act = activations.get(activation)
    if weight_law == "rademacher" or act.homogeneous or act.odd:
        return gamma_inf(activation, a, sigma_w)        # s constant, or m²/v independent of s (homogeneous; odd: 0)
    if weight_law != "normal":
        raise ValueError("finite-d gamma is tabulated for normal (or rademacher) weights")
    if activation == "srelu":
        mean_s = math.sqrt(2 / d) * math.exp(special.gammaln((d + 1) / 2) - special.gammaln(d / 2))
        return 2 * (1 - mean_s) / (math.pi - 1)
    s = sigma_w * np.sqrt(sps.chi2.ppf((np.arange(k) + 0.5) / k, d) / d)    # midpoint rule in probability
    m = igbsym.get("activation.mean").numpy(activation=activation, sigma=s, a=a)
    v = igbsym.get("activation.var").numpy(activation=activation, sigma=s, a=a)
    return float(np.mean(m**2) / np.mean(v))


@register_check("igb.gamma_single_layer", forms=["igb.gamma"])
def check_gamma(ctx) -> list:
    """γ̂ (Rao–Blackwellised, delta-method SE over inits) of one hidden layer vs igb.gamma for six activations and
    three weight laws."""
    s, out = sizes(ctx), []
    for act, a in GAMMA_ACTS:
        res = sim(ctx, act, a)
        est = gamma_of_sim(res, "rao-blackwell")
        pred, pred_d = gamma_inf(act, a), gamma_finite_d(act, s["d"], a)
        bias = abs(pred_d - pred)
        note = (f"finite-d exact gamma_d={pred_d:.4g} (bias {bias:.2g}, O(1/d)); z vs gamma_d "
                f"{(est.value - pred_d) / est.se:.2f}" if bias else "no finite-size bias (exact at any d, n)")
        out.append(z_result("igb.gamma", f"{act} a={a} d={s['d']} n={s['n']} I={res.n_inits} D={res.n_data}",
                            pred, est.value, est.se, res.n_inits, ctx.seed, bias_bound=bias, note=note))
    for law in ("uniform", "rademacher"):
        res = sim(ctx, "relu", weight_law=law, inits=s["inits"] // 2)
        est = gamma_of_sim(res, "rao-blackwell")
        out.append(z_result("igb.gamma", f"relu weights={law} d={s['d']} n={s['n']} I={res.n_inits}",
                            gamma_inf("relu"), est.value, est.se, res.n_inits, ctx.seed,
                            note="relu γ is independent of the weight law (homogeneity)"))
    return out


@register_check("igb.gamma_finite_size", forms=["igb.gamma"])
def check_gamma_sweep(ctx) -> list:
    """srelu γ̂ vs input dim d = width: the O(1/d) finite-size gap to γ = 0 and its exact value γ_d."""
    s, out, rows = sizes(ctx), [], []
    for d in s["sweep"]:
        res = sim(ctx, "srelu", d=d, n=d, inits=s["sweep_inits"], data=s["sweep_data"])
        est = gamma_of_sim(res, "rao-blackwell")
        pred_d = gamma_finite_d("srelu", d)
        rows.append((d, est.value, est.se, pred_d))
        out.append(z_result("igb.gamma", f"srelu d=n={d} I={res.n_inits} D={res.n_data}", gamma_inf("srelu"),
                            est.value, est.se, res.n_inits, ctx.seed, bias_bound=pred_d,
                            note=f"bias bound: the exact finite-d gamma_d = 2(1 - E s)/(pi - 1) = {pred_d:.3g} "
                                 f"(-> 0 like 1/(2d(pi-1))); z vs gamma_d {(est.value - pred_d) / est.se:+.2f}"))
    _plot_sweep(ctx, rows)
    return out


def _plot_sweep(ctx, rows):
    if ctx.report_dir is None:
        return
    import matplotlib.pyplot as plt
    d, g, se, gd = map(np.array, zip(*rows))
    fig, ax = plt.subplots(figsize=(5, 3.6))
    ax.errorbar(d, g, yerr=2 * se, fmt="o", label="simulated $\\hat\\gamma$ ± 2 SE")
    dd = np.unique(np.geomspace(d.min() / 1.3, d.max() * 1.3, 60).astype(int))
    ax.plot(dd, [gamma_finite_d("srelu", int(x)) for x in dd], "-", label="exact finite-d $\\gamma_d$")
    ax.plot(dd, 1 / (2 * dd * (np.pi - 1)), ":", label="$1/(2d(\\pi-1))$")
    ax.axhline(0, color="k", lw=0.8, label="infinite width: $\\gamma=0$")
    ax.set_xscale("log")
    ax.set_xticks(d, [str(int(v)) for v in d], minor=False)
    ax.minorticks_off()
    ax.set_xlabel("input dim d = width n")
    ax.set_ylabel("$\\gamma$ (shifted ReLU)")
    ax.legend(fontsize=7)
    ctx.save_figure("gamma_vs_width", fig, "Shifted ReLU: γ vs width (d = n); the finite-size gap shrinks like 1/d.")


def _law_sim(ctx, activation="relu"):
    s = sizes(ctx)
    return sim(ctx, activation, d=s["law_d"], n=s["law_n"], inits=s["law_inits"], data=s["law_data"], fresh=False)


@register_check("igb.g0_law", forms=["igb.cdf", "igb.pdf", "igb.logpdf", "igb.quantile", "igb.p_outside",
                                     "igb.gamma"])
def check_g0_law(ctx) -> list:
    """Law of G0 over inits (one shared dataset): KS vs igb.cdf, binned χ² vs ∫igb.pdf, quantile and tail
    binomial tests, mean log-likelihood vs E[log f], and the finite-D spread of G0_hat for odd nets (γ = 0)."""
    out = []
    cdf, pdf = igbsym.get("igb.cdf"), igbsym.get("igb.pdf")
    for act in ("relu", "gelu"):
        res = _law_sim(ctx, act)
        gam, n, D = gamma_inf(act), res.n_inits, res.n_data
        g = jitter_g0(res.g0, D, ctx.seed)
        disc = float(pdf.numpy(g=0.5, gamma=gam)) / D if gam < 1 else math.inf
        stat, p = ks_test(g, lambda x: cdf.numpy(g=np.clip(x, 0, 1), gamma=gam))
        out.append(law_result("igb.cdf", f"KS G0 {act} (gamma={gam:.4f}) I={n} D={D}", p, n, ctx.seed,
                              prediction=0.0, estimate=stat,
                              note=f"KS D_n={stat:.4f}; discreteness |dF| <= {disc:.1e} after jitter"))
        chi2, p_chi2, dof = pdf_chi2(g, lambda t: pdf.numpy(g=np.clip(t, 1e-300, 1 - 1e-16), gamma=gam),
                                     n_bins=20, lo=0.0, hi=1.0)
        out.append(law_result("igb.pdf", f"binned chi2 (20 equal-count bins, integral of pdf) {act} I={n}",
                              p_chi2, n, ctx.seed, prediction=dof, estimate=chi2,
                              note="bin probabilities by Gauss-Legendre quadrature of igb.pdf"))
        lp = igbsym.get("igb.logpdf").numpy(g=np.clip(g, 1e-12, 1 - 1e-12), gamma=gam)
        zh, wh = np.polynomial.hermite_e.hermegauss(40)       # E_Z[h(Z)], Z ~ N(0, 1); |Z| <= 8.1
        g_nodes = np.clip(special.ndtr(math.sqrt(gam) * zh), 1e-300, 1 - 2.0**-53)
        expect = float(wh @ np.log(pdf.numpy(g=g_nodes, gamma=gam)) / math.sqrt(2 * math.pi))
        out.append(z_result("igb.logpdf", f"mean igb.logpdf(G0) vs E[log igb.pdf(G0)], {act}", expect,
                            float(lp.mean()), float(lp.std(ddof=1) / math.sqrt(n)), n, ctx.seed,
                            note="G0 = Phi(sqrt(gamma) Z): the expectation by 40-point Gauss-Hermite over Z, with "
                                 "igb.pdf (so the log-density form is tested against the density form's log)"))
        for p_ in (0.1, 0.25, 0.5, 0.75, 0.9):
            q = float(igbsym.get("igb.quantile").numpy(p=p_, gamma=gam))
            frac = float((g <= q).mean())
            out.append(z_result("igb.quantile", f"P(G0 <= Q({p_})) {act}", p_, frac,
                                math.sqrt(p_ * (1 - p_) / n), n, ctx.seed, note=f"Q={q:.4f}; binomial SE"))
        for q in (0.1, 0.25):
            pred = float(igbsym.get("igb.p_outside").numpy(gamma=gam, q=q))
            frac = float(((g < q) | (g > 1 - q)).mean())
            out.append(z_result("igb.p_outside", f"P(G0<{q} or G0>{1 - q}) {act}", pred, frac,
                                math.sqrt(pred * (1 - pred) / n), n, ctx.seed, note="binomial SE"))
        if act == "relu":
            _plot_g0(ctx, res, gam, "relu (shared dataset)")
    for act in ("tanh", "identity"):   # γ = 0: with fresh data G0 ~ Binomial(D, 1/2)/D exactly (odd network)
        res = sim(ctx, act)
        D, gam = res.n_data, gamma_inf(act)
        y = 4 * D * (res.g0.numpy() - 0.5) ** 2
        zh, wh = np.polynomial.hermite_e.hermegauss(40)
        spread = float(wh @ (special.ndtr(math.sqrt(gam) * zh) - 0.5) ** 2 / math.sqrt(2 * math.pi))
        out.append(z_result("igb.gamma", f"gamma=0 of odd {act}: 4D E(G0_hat-1/2)^2 = 1 + 4D E(G0-1/2)^2 at "
                                         f"gamma=igb.gamma", 1 + 4 * D * spread, float(y.mean()),
                            float(y.std(ddof=1) / math.sqrt(y.size)), y.size, ctx.seed,
                            note="G0_hat | G0 ~ Binomial(D, G0)/D, G0 = Phi(sqrt(gamma) Z); odd network: gamma = 0 "
                                 "and P(class 0) = 1/2 exactly"))
    _plot_g0_panels(ctx)
    return out


def _plot_g0(ctx, res, gam, title):
    if ctx.report_dir is None:
        return
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(4.5, 3.4))
    _g0_axis(ax, res, gam, title)
    ctx.save_figure("g0_hist_relu", fig, f"G0 histogram over {res.n_inits} inits vs f_G0 at γ={gam:.4f}")


def _g0_axis(ax, res, gam, title, gam_d=None):
    g0 = res.g0.numpy()
    lo, hi = (0.0, 1.0) if gam > 0 else (0.4, 0.6)
    ax.hist(g0, bins=40, range=(lo, hi), density=True, alpha=0.6, label=f"simulated ({res.n_inits} inits)")
    x = np.linspace(max(lo, 0.001), min(hi, 0.999), 500)
    if gam > 0:
        ax.plot(x, igbsym.get("igb.pdf").numpy(g=x, gamma=gam), "r-", label=f"$f_{{G_0}}$, γ={gam:.3f}")
    else:
        sd = 1 / (2 * math.sqrt(res.n_data))
        ax.plot(x, sps.norm.pdf(x, 0.5, sd), "r-", label="γ=0: δ(1/2) ⊛ Binomial(D,1/2)/D")
    if gam_d:
        ax.plot(x, igbsym.get("igb.pdf").numpy(g=x, gamma=gam_d), "g--", label=f"finite-d γ_d={gam_d:.4f}")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("$G_0$")
    ax.legend(fontsize=6)


def _plot_g0_panels(ctx):
    if ctx.report_dir is None:
        return
    import matplotlib.pyplot as plt
    s = sizes(ctx)
    fig, axes = plt.subplots(1, 5, figsize=(17, 3.2))
    for ax, act in zip(axes, ("identity", "relu", "tanh", "srelu", "gelu")):
        res = sim(ctx, act)
        gd = gamma_finite_d(act, s["d"]) if act == "srelu" else None
        _g0_axis(ax, res, gamma_inf(act), f"{act} d={s['d']} n={s['n']} D={res.n_data}", gd)
    ctx.save_figure("g0_hist_panels", fig, "G0 histograms vs the theoretical f_G0 (linear, ReLU, tanh, shifted "
                                           "ReLU, GELU); γ = 0 is a point mass at 1/2 broadened by Binomial(D,1/2)/D")


@reusable
def _pair_outputs(ctx, act):
    """Raw outputs of 64 fresh data points per init (one hidden layer, law sizes)."""
    s = sizes(ctx)
    spec = NetSpec(s["law_d"], (s["law_n"],), activation=act)
    res = simulate(spec, s["law_inits"], 64, seed=seed_for(ctx, "igb.corr", act), device=ctx.device,
                   layer_stats=False, record=64, fresh_data=True)
    return res.records["out"].double().numpy()


@register_check("igb.corr_pairs", forms=["igb.corr"])
def check_corr(ctx) -> list:
    """c = E[O(x)O(x')]/E[O(x)²] from pairs of distinct data points (recorded raw outputs) vs γ/(1+γ)."""
    s, out = sizes(ctx), []
    for act in ("relu", "gelu", "tanh"):
        o = _pair_outputs(ctx, act)                      # [I, R, C]
        tot, sq = o.sum(1), (o**2).sum(1)
        r = o.shape[1]
        a = ((tot**2 - sq) / (r * (r - 1))).mean(1)       # mean over distinct pairs, averaged over classes
        b = (sq / r).mean(1)
        est = ratio_estimate(a, b)
        gam_d, gam = gamma_finite_d(act, s["law_d"]), gamma_inf(act)
        pred = float(igbsym.get("igb.corr").numpy(gamma=gam))
        bias = abs(gam_d / (1 + gam_d) - gam / (1 + gam))      # finite-d shift of c, not built from the prediction
        out.append(z_result("igb.corr", f"{act} d={s['law_d']} n={s['law_n']} I={o.shape[0]} (64 pts each)",
                            pred, est.value, est.se, o.shape[0], ctx.seed, bias_bound=bias,
                            note=f"finite-d bias {bias:.2g} (exact gamma_d)" if bias else ""))
    return out
