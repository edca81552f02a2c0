"""Checks of the max-pool family against torch.nn.MaxPool1d and single-hidden-layer nets (the paper's SHLP).

- maxpool.pooled_unit: N(0, σ²) pre-activations → (ReLU) → ``torch.nn.MaxPool1d(k)``, k ∈ {2, 3, 4, 8, 16, 64}:
  sample mean and variance (SE from the sample 4th central moment) vs maxpool.mean / maxpool.var; KS vs
  maxpool.cdf (ReLU: the atom P(M = 0) = 2^-k by a binomial z-test, KS on the continuous part); binned χ² with
  bin probabilities from Gauss-Legendre integrals of maxpool.pdf.
- maxpool.gumbel: the constants' own claim, deterministically: a_k and b_k are the expansions of the exact norming
  constants a*_k = σΦ⁻¹(1 − 1/k), b*_k = σ/(kφ(a*_k/σ)) (mpmath) to the stated order; after subtracting the derived
  next-order term the remainder must be within |next term|·ln(4π ln k)/ln k, at k = 10³, 10⁶, 10⁹. (A KS test of
  MaxPool1d maxima standardised with the constants cannot test them: the exact law Φ^k moves with them.)
- maxpool.shlp_gamma: SHLP Linear(d, kN) → act → MaxPool1d(k) → Linear(N, 2) (validation/simulate.py, fresh
  Gaussian data per init, Kaiming normal weights). Two estimators of γ = Var_W(μ_c)/E_W Var_χ(O_c): the outputs
  (paper-literal) and the pooled units (the output layer's zero-mean weights average out exactly, so
  Var_W(μ_c)/E_W Var_χ(O_c) = E_W[(E_χ P)²]/E_W[Var_χ P] per pooled unit — the same γ with a much smaller SE).
  Finite input dimension d: the pooled unit's data-mean varies across nodes with the weights, so γ_d ≠ γ. For
  Gaussian data and positively 1-homogeneous φ∘max, E_W E_χ P² = E[M²] exactly, and E_W[(E_χ P)²] =
  c_d Σ_n a_n E[ρ^n] (Mehler expansion over the cosine ρ of two data points; c_d = (E‖x‖/√d)², E[ρ²] = 1/d,
  odd moments 0, Σ a_n = E[M²]); a_2 = k e₁²/2 + k(k−1)J²/2 from Stein's lemma (J = ∫φ²Φ^{k−2} over the
  line (identity) or x > 0 (ReLU), e₁ = (k−1)J (+ φ(0)2^{1−k} for ReLU)). Truncating after a_2 brackets γ_d in
  [γ_lo, γ_hi] (the rest ≤ (Var − a_2)·3/(d(d+2))); bias_bound = max |γ_d − γ| over the bracket.
- maxpool.g0_law: the law of G0_hat over inits (U-shaped at large k) vs the igb law at γ = maxpool.gamma, made exact
  in D (G0_hat ~ Binomial(D, G0)/D; binned χ² with the extreme bins {0}, {D} kept separate),
  and the fraction of inits with G0_hat ∈ {0, 1} vs maxpool.extreme_mass (binomial rule, exact in D; bias bound
  from the finite-d γ_d bracket measured from the unit moments, never from the form's own value). The paper's
  threshold rule is an approximation without an error bound: reported in the note, not tested.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from scipy import special
from scipy import stats as sps
from torch import nn

import igbsym
from igbsym import extreme
from igbsym.families import maxpool as fam

from .checks import law_result, register_check, register_sizes, reusable, seed_for, size, z_result
from .simulate import NetSpec, simulate
from .stats import gamma_estimate, gamma_of, ks_test

KS_POOL = (2, 3, 4, 8, 16, 64)
register_sizes("maxpool", quick=dict(pooled=200_000, shlp=(256, 32, 256, 160, (1, 2, 4, 16, 64)),
                                     g0=[("relu", 16, 256, 64, 64, 2000)]),
               thorough=dict(pooled=4_000_000, shlp=(512, 32, 512, 400, (1, 2, 3, 4, 8, 16, 32, 64, 128)),
                             g0=[("relu", k, 256, 64, 400, 2000) for k in (2, 4, 16, 64)]
                             + [("identity", 16, 256, 64, 400, 2000)]))
ACTS = ("identity", "relu")
get = igbsym.get


def _axes(ctx, width, height, ncols=1):
    """(fig, axes) for a report figure, or None when the run writes no report."""
    if ctx.report_dir is None:
        return None
    import matplotlib.pyplot as plt
    return plt.subplots(1, ncols, figsize=(width, height), squeeze=False)


# --------------------------------------------------------------------------------------------- pooled unit
@reusable
def pooled_samples(ctx, k: int, n: int, sigma: float, act: str) -> torch.Tensor:
    """n pooled units: N(0, σ²) pre-activations [n, 1, k] → activation → torch.nn.MaxPool1d(k)."""
    gen = torch.Generator(device=ctx.device).manual_seed(seed_for(ctx, "maxpool.pooled", k, n, sigma, act))
    pool, relu, parts = nn.MaxPool1d(k), nn.ReLU(), []
    rows = max(1, (1 << 23) // k)                 # ≤ 8M pre-activations (64 MB) per chunk
    for start in range(0, n, rows):
        h = torch.randn(min(rows, n - start), 1, k, generator=gen, device=ctx.device, dtype=torch.float64) * sigma
        parts.append(pool(relu(h) if act == "relu" else h).reshape(-1).cpu())
    return torch.cat(parts)


def _moment_results(label, pred_mean, pred_var, y, ctx):
    n = y.numel()
    c = y - y.mean()
    m2, m4 = float((c**2).mean()), float((c**4).mean())
    return [z_result("maxpool.mean", label, pred_mean, float(y.mean()), float(y.std()) / math.sqrt(n), n, ctx.seed),
            z_result("maxpool.var", label, pred_var, m2 * n / (n - 1), math.sqrt(max(m4 - m2 * m2, 0) / n), n,
                     ctx.seed, note="SE from the sample 4th central moment")]


def _pdf_chi2(label, y, k, sigma, act, ctx):
    """χ² of 30 equal-count bins of the continuous part; bin probabilities = Gauss-Legendre ∫ maxpool.pdf."""
    pos = y[y > 0] if act == "relu" else y
    edges = np.quantile(pos.numpy(), np.linspace(0, 1, 31))
    edges[0], edges[-1] = (0.0 if act == "relu" else edges[0] - 10 * sigma), edges[-1] + 10 * sigma
    gx, gw = np.polynomial.legendre.leggauss(40)
    lo, hi = edges[:-1, None], edges[1:, None]
    nodes = (lo + hi) / 2 + (hi - lo) / 2 * gx
    probs = ((hi - lo)[:, 0] / 2) * (get("maxpool.pdf").numpy(x=nodes, k=k, sigma=sigma, activation=act) @ gw)
    counts = np.histogram(pos.numpy(), bins=edges)[0]
    n = y.numel()
    chi2 = float(((counts - n * probs) ** 2 / (n * probs)).sum())
    return law_result("maxpool.pdf", f"binned chi2 (30 bins, integrals of the pdf) {label}",
                      float(sps.chi2.sf(chi2, 30)), n, ctx.seed, prediction=30.0, estimate=chi2,
                      note="df 30: bin edges are sample quantiles of the data, expected counts from the pdf")


@register_check("maxpool.pooled_unit", forms=["maxpool.cdf", "maxpool.pdf", "maxpool.mean", "maxpool.var"])
def check_pooled_unit(ctx) -> list:
    """torch.nn.MaxPool1d on N(0, σ²) pre-activations (identity and ReLU): moments, KS, atom, binned χ²."""
    out, sigma = [], 1.3
    n = size(ctx, "maxpool.pooled")
    samples = {}
    for i, k in enumerate(KS_POOL):
        for j, act in enumerate(ACTS):
            ctx.progress(f"maxpool pooled unit k={k} {act}")
            y = pooled_samples(ctx, k, n, sigma, act)
            samples[k, act] = y
            label = f"{act} k={k} sigma={sigma} n={n}"
            out += _moment_results(label, float(get("maxpool.mean").numpy(k=k, sigma=sigma, activation=act)),
                                   float(get("maxpool.var").numpy(k=k, sigma=sigma, activation=act)), y, ctx)
            cdf = get("maxpool.cdf")
            if act == "relu":
                atom = float(cdf.numpy(x=0.0, k=k, sigma=sigma, activation=act))   # the atom P(M = 0) = 2^-k
                if n * 2.0**-k >= 100:   # the binomial z-test needs >= 100 expected atoms (k <= 10 here)
                    out.append(z_result("maxpool.cdf", f"atom P(M=0) = maxpool.cdf(0), {label}", atom,
                                        float((y == 0).double().mean()), math.sqrt(atom * (1 - atom) / n), n,
                                        ctx.seed, note="binomial SE"))
                pos = y[y > 0].numpy()
                stat, p = ks_test(pos, lambda x: (cdf.numpy(x=x, k=k, sigma=sigma, activation=act) - atom) / (1 - atom))
            else:
                stat, p = ks_test(y, lambda x: cdf.numpy(x=x, k=k, sigma=sigma, activation=act))
            out.append(law_result("maxpool.cdf", f"KS {label}" + (" (continuous part)" if act == "relu" else ""),
                                  p, n, ctx.seed, prediction=0.0, estimate=stat))
            out.append(_pdf_chi2(label, y, k, sigma, act, ctx))
    _plot_pooled(ctx, samples, sigma)
    return out


def _plot_pooled(ctx, samples, sigma):
    if (made := _axes(ctx, 12, 3.4, 3)) is None:
        return
    fig, axes = made
    for ax, k in zip(axes[0], (2, 16, 64)):
        for act, color in zip(ACTS, ("C0", "C1")):
            y = samples[k, act].numpy()
            pos = y[y > 0] if act == "relu" else y
            counts, edges = np.histogram(pos, bins=120)
            ax.stairs(counts / (y.size * np.diff(edges)), edges, fill=True, alpha=0.35, color=color,
                      label=f"MaxPool1d samples, {act}")
            grid = np.linspace(pos.min(), pos.max(), 400)
            ax.plot(grid, get("maxpool.pdf").numpy(x=grid, k=k, sigma=sigma, activation=act), color=color,
                    label=f"maxpool.pdf ({act})")
        ax.set_title(f"k = {k} (relu atom at 0: {2.0 ** -k:.2g})")
        ax.set_xlabel("pooled unit")
    axes[0, 0].legend(fontsize=7)
    ctx.save_figure("maxpool_pooled_unit_law", fig, f"Pooled-unit law: torch.nn.MaxPool1d samples vs maxpool.pdf "
                                                    f"(sigma={sigma}); ReLU histograms show the continuous part.")


# --------------------------------------------------------------------------------------------- Gumbel
GUMBEL_K = (10**3, 10**5, 10**8)


def gumbel_reference(k: int, sigma: float = 1.0) -> tuple:
    """The exact Gumbel-matching constants of the max of k iid N(0, σ²), by an independent route (mpmath):
    a*_k = σ Φ⁻¹(1 − 1/k) and b*_k = σ (1 − Φ(a*/σ))/φ(a*/σ) = σ/(k φ(a*/σ)) (von Mises norming), and the
    next-order terms of their expansions in L = ln k, l = ln(4πL) (derived by inverting the Mills ratio
    1 − Φ(y) = φ(y)/y (1 − 1/y² + …)):
        a*_k = a_k − σ [(l − 2)² + 4] / (8 (2L)^{3/2}) + O(σ l³/L^{5/2}),
        b*_k = b_k [1 + (l − 2)/(4L)] + O(b_k l²/L²),
    with a_k, b_k the registered two-term location and one-term scale. Returns (a*, b*, T_a, T_b) with
    T_a, T_b the next-order terms (a* = a_k + T_a, b* = b_k + T_b to leading order)."""
    import mpmath
    with mpmath.workdps(40):
        y = -mpmath.sqrt(2) * mpmath.erfinv(2 / mpmath.mpf(k) - 1)
        a_star, b_star = float(sigma * y), float(sigma / (mpmath.mpf(k) * mpmath.npdf(y)))
    L = math.log(k)
    l_ = math.log(4 * math.pi * L)
    t_a = -sigma * ((l_ - 2) ** 2 + 4) / (8 * (2 * L) ** 1.5)
    t_b = sigma / math.sqrt(2 * L) * (l_ - 2) / (4 * L)
    return a_star, b_star, t_a, t_b


@register_check("maxpool.gumbel", forms=["maxpool.gumbel_loc", "maxpool.gumbel_scale"])
def check_gumbel(ctx) -> list:
    """The Gumbel constants' own claim: they are the expansions of the exact norming constants a*_k, b*_k
    (mpmath, independent route) up to the stated next-order term; the remainder after that term is O(l/L)
    relative to it (allowance |T|·l/L: the next relative order with unit constant; measured 0.04-0.17 of it)."""
    out, sigma = [], 0.8
    for k in GUMBEL_K:
        a_star, b_star, t_a, t_b = gumbel_reference(k, sigma)
        L = math.log(k)
        rel = math.log(4 * math.pi * L) / L
        loc = float(get("maxpool.gumbel_loc").numpy(k=k, sigma=sigma))
        scale = float(get("maxpool.gumbel_scale").numpy(k=k, sigma=sigma))
        out.append(z_result("maxpool.gumbel_loc", f"k={k}: a_k vs exact a*_k - next-order term (sigma={sigma})",
                            loc, a_star - t_a, 0.0, 1, ctx.seed, bias_bound=abs(t_a) * rel,
                            note=f"a*_k = sigma Phi^-1(1 - 1/k) = {a_star:.6g}; next-order term {t_a:.3g}; "
                                 f"allowance |T_a| ln(4 pi L)/L (deterministic)"))
        out.append(z_result("maxpool.gumbel_scale", f"k={k}: b_k vs exact b*_k - next-order term (sigma={sigma})",
                            scale, b_star - t_b, 0.0, 1, ctx.seed, bias_bound=abs(t_b) * rel,
                            note=f"b*_k = sigma/(k phi(a*/sigma)) = {b_star:.6g}; next-order term {t_b:.3g}"))
    _plot_gumbel(ctx)
    return out


def _plot_gumbel(ctx):
    if (made := _axes(ctx, 5, 3.4)) is None:
        return
    fig, ax = made[0], made[1][0, 0]
    kk = np.unique(np.round(np.logspace(0.5, 9, 60)).astype(int))
    ax.semilogx(kk, [fam.gumbel_kolmogorov(int(k)) for k in kk], "-", label=r"exact $\sup|\Phi^k-\Lambda|$")
    ax.set_xlabel("k")
    ax.set_ylabel("Kolmogorov distance to Gumbel")
    ax.legend(fontsize=8)
    ctx.save_figure("maxpool_gumbel_error", fig, "Error of the Gumbel (FTG) approximation vs k: it decays "
                                                  "only slowly (about 1/ln k).")


# --------------------------------------------------------------------------------------------- gamma (SHLP)
def gamma_finite_d(k: int, act: str, d: int) -> tuple:
    """Bracket [γ_lo, γ_hi] of γ at input dimension d (module docstring); σ_w cancels."""
    m, v = (float(a) for a in extreme.unit_moments(act, k))
    phi0 = 1 / math.sqrt(2 * math.pi)
    if act == "identity":
        jj = m / (k * (k - 1)) if k > 1 else 0.0
        e1 = (k - 1) * jj
    else:
        jj = (m - k * phi0 * 2.0 ** (1 - k)) / (k * (k - 1)) if k > 1 else 0.0
        e1 = phi0 * 2.0 ** (1 - k) + (k - 1) * jj
    a2 = k * e1**2 / 2 + k * (k - 1) * jj**2 / 2
    c_d = 2 / d * math.exp(2 * (special.gammaln((d + 1) / 2) - special.gammaln(d / 2)))
    second = v + m * m
    lo = c_d * (m * m + a2 / d)
    hi = lo + c_d * max(v - a2, 0.0) * 3 / (d * (d + 2))
    return lo / (second - lo), hi / (second - hi)


def gamma_infinite_d(k: int, act: str) -> float:
    """γ = E[M]²/Var[M] from the unit moments (igbsym.families.maxpool.unit_moments), not through the form: the
    reference from which finite-d bias bounds are measured (a bound built from the form's own value would
    absorb an error in it)."""
    m, v = (float(a) for a in extreme.unit_moments(act, k))
    return m * m / v


def finite_d_bias(k: int, act: str, lo: float, hi: float) -> float:
    """max |γ_d − γ| over the finite-d bracket [lo, hi] (see gamma_finite_d)."""
    ref = gamma_infinite_d(k, act)
    return max(abs(lo - ref), abs(hi - ref))


@reusable
def _shlp_sim(ctx, k, act, d, n_pool, n_data, inits):
    spec = NetSpec(d_in=d, widths=(k * n_pool,), activation=act, pool=k if k > 1 else None)
    stage = "pool" if k > 1 else "act"
    return simulate(spec, inits, n_data, seed=seed_for(ctx, "maxpool.shlp", k, act), device=ctx.device,
                    fresh_data=True, layer_stats=(stage,)), stage


def _shlp(ctx, k, act, d, n_pool, n_data, inits):
    return _shlp_sim(ctx, k, act, d, n_pool, n_data, inits)


@register_check("maxpool.shlp_gamma", forms=["maxpool.gamma"])
def check_shlp_gamma(ctx) -> list:
    """γ of ReLU + max-pool and linear + max-pool SHLPs (outputs and pooled units) vs maxpool.gamma."""
    out, rows = [], []
    d, n_pool, n_data, inits, ks = size(ctx, "maxpool.shlp")
    for act in ACTS:
        for k in ks:
            ctx.progress(f"maxpool SHLP gamma {act} k={k}")
            res, stage = _shlp(ctx, k, act, d, n_pool, n_data, inits)
            pred = float(get("maxpool.gamma").numpy(k=k, activation=act))
            lo, hi = gamma_finite_d(k, act, d)
            bias = finite_d_bias(k, act, lo, hi)
            unit = gamma_estimate(res.layers[0][stage].mean, res.layers[0][stage].var, n_data)
            outp = gamma_of(res)
            label = f"{act} k={k} d={d} N={n_pool} D={n_data} I={inits}"
            note = f"finite-d bracket gamma_d in [{lo:.5g}, {hi:.5g}] (bias bound); z vs gamma_d midpoint " \
                   f"{(unit.value - (lo + hi) / 2) / unit.se:+.2f}" if unit.se > 0 else ""
            out.append(z_result("maxpool.gamma", f"pooled units: {label}", pred, unit.value, unit.se, inits, ctx.seed,
                                bias_bound=bias, note=note))
            out.append(z_result("maxpool.gamma", f"outputs (paper's definition): {label}", pred, outp.value, outp.se,
                                inits, ctx.seed, bias_bound=bias, note="delta-method SE over inits"))
            rows.append((act, k, unit.value, unit.se, outp.value, outp.se, lo, hi))
    _plot_gamma(ctx, rows, d)
    return out


def _plot_gamma(ctx, rows, d):
    if (made := _axes(ctx, 5.5, 3.8)) is None:
        return
    fig, ax = made[0], made[1][0, 0]
    kk = np.unique(np.round(np.logspace(0, 3, 200)))
    for act, color in zip(ACTS, ("C0", "C1")):
        ax.plot(kk, get("maxpool.gamma").numpy(k=kk, activation=act), "-", color=color, label=f"maxpool.gamma, {act}")
        sel = [r for r in rows if r[0] == act]
        ax.errorbar([r[1] for r in sel], [r[2] for r in sel], yerr=[2 * r[3] for r in sel], fmt="o", color=color,
                    ms=4, label=f"SHLP pooled units ±2SE ({act})")
        ax.errorbar([r[1] * 1.08 for r in sel], [r[4] for r in sel], yerr=[2 * r[5] for r in sel], fmt="s",
                    color=color, mfc="none", ms=4, label=f"SHLP outputs ±2SE ({act})")
        ax.plot([r[1] for r in sel], [(r[6] + r[7]) / 2 for r in sel], "x", color="k", ms=5)
    ax.plot(kk, 24 / np.pi**2 * np.log(kk) ** 2, ":", color="gray", label=r"$\frac{24}{\pi^2}\ln^2 k$")
    ax.set_xscale("log")
    ax.set_yscale("symlog", linthresh=0.5)
    ax.set_ylim(0, None)
    ax.set_xlabel("pooling kernel k")
    ax.set_ylabel(r"$\gamma$")
    ax.legend(fontsize=6.5)
    ctx.save_figure("maxpool_gamma_vs_k", fig, f"gamma vs k for linear + pool and ReLU + pool: theory (lines) over "
                                               f"SHLP simulations (d = {d}; x = finite-d prediction gamma_d).")


# --------------------------------------------------------------------------------------------- G0 law
def _g0_configs(ctx):
    return size(ctx, "maxpool.g0")


@register_check("maxpool.g0_law", forms=["maxpool.extreme_mass", "maxpool.gamma"])
def check_g0_law(ctx) -> list:
    """Law of G0 of max-pool SHLPs vs igb.cdf at γ = maxpool.gamma; mass of the extreme bins vs App. D.2."""
    out, panels = [], []
    for act, k, d, n_pool, n_data, inits in _g0_configs(ctx):
        ctx.progress(f"maxpool G0 law {act} k={k}")
        res, _ = _shlp(ctx, k, act, d, n_pool, n_data, inits)
        gam = float(get("maxpool.gamma").numpy(k=k, activation=act))
        lo, hi = gamma_finite_d(k, act, d)
        g0 = res.g0.numpy()
        label = f"{act} k={k} (gamma={gam:.4g}) d={d} N={n_pool} D={n_data} I={inits}"
        chi2, p, dof = _g0_chi2(g0, gam, n_data)
        ks_gap = max(_ks_distance(gam, g) for g in (lo, hi))
        out.append(law_result("maxpool.gamma", f"chi2 of G0_hat vs the finite-D law at gamma=maxpool.gamma: "
                                                      f"{label}", p, inits, ctx.seed, prediction=dof, estimate=chi2,
                              note=f"P(G0_hat = j/D) = E_z[Binom(j; D, Phi(sqrt(gamma) z))] (exact in D); "
                                   f"finite-d gamma_d moves the G0 law by KS distance <= {ks_gap:.3f}"))
        frac = float(((g0 == 0) | (g0 == 1)).mean())
        exact = float(get("maxpool.extreme_mass").numpy(k=k, activation=act, D=n_data, rule="binomial"))
        ref = float(fam.mass_binomial(gamma_infinite_d(k, act), n_data))
        bias_d = max(abs(float(fam.mass_binomial(g, n_data)) - ref) for g in (lo, hi))
        se = math.sqrt(exact * (1 - exact) / inits)
        thr = float(get("maxpool.extreme_mass").numpy(k=k, activation=act, D=n_data, rule="threshold"))
        out.append(z_result("maxpool.extreme_mass", f"P(G0_hat in {{0,1}}), binomial rule: {label}", exact, frac, se,
                            inits, ctx.seed, bias_bound=bias_d,
                            note=f"binomial SE; bias bound from the finite-d gamma_d bracket (measured from the unit "
                                 f"moments, not the form). Paper's threshold rule (an approximation with no error "
                                 f"bound; reported, not tested): {thr:.4g}, z = {(frac - thr) / se:+.2f}"))
        panels.append((act, k, gam, g0, n_data))
    _plot_g0(ctx, panels)
    return out


def g0_pmf(gamma: float, n_data: int) -> np.ndarray:
    """P(G0_hat = j/D), j = 0..D: G0 = Φ(√γ z), z ~ N(0, 1), G0_hat ~ Binomial(D, G0)/D (Gauss-Legendre in z)."""
    gx, gw = np.polynomial.legendre.leggauss(200)
    edges = np.linspace(-9, 9, 31)
    z = ((edges[1:, None] + edges[:-1, None]) / 2 + (edges[1] - edges[0]) / 2 * gx).ravel()
    w = np.tile(gw * (edges[1] - edges[0]) / 2, edges.size - 1) * np.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    j = np.arange(n_data + 1)[None, :]
    log_p, log_q = special.log_ndtr(math.sqrt(gamma) * z)[:, None], special.log_ndtr(-math.sqrt(gamma) * z)[:, None]
    log_choose = special.gammaln(n_data + 1) - special.gammaln(j + 1) - special.gammaln(n_data - j + 1)
    return w @ np.exp(log_choose + j * log_p + (n_data - j) * log_q)


def _g0_chi2(g0, gamma: float, n_data: int, n_bins: int = 20) -> tuple:
    """χ² of the counts of G0_hat over {0}, {D} and interior groups of about equal predicted mass."""
    pmf = g0_pmf(gamma, n_data)
    j = np.rint(np.asarray(g0) * n_data).astype(int)
    counts = np.bincount(j, minlength=n_data + 1)
    cum = np.cumsum(pmf[1:-1]) / pmf[1:-1].sum()
    group = np.concatenate([[0], 1 + np.minimum((cum * (n_bins - 2)).astype(int), n_bins - 3), [n_bins - 1]])
    exp_ = np.bincount(group, weights=pmf, minlength=n_bins) * j.size
    obs = np.bincount(group, weights=counts, minlength=n_bins)
    keep = exp_ > 0
    chi2 = float(((obs[keep] - exp_[keep]) ** 2 / exp_[keep]).sum())
    dof = int(keep.sum()) - 1
    return chi2, float(sps.chi2.sf(chi2, dof)), dof


def _ks_distance(g1: float, g2: float) -> float:
    """sup_x |Φ(x/√g1) − Φ(x/√g2)|: the KS distance between the G0 laws at γ = g1 and g2."""
    x = np.linspace(0, 10 * math.sqrt(max(g1, g2)), 4001)
    return float(np.max(np.abs(special.ndtr(x / math.sqrt(g1)) - special.ndtr(x / math.sqrt(g2)))))


def _plot_g0(ctx, panels):
    if (made := _axes(ctx, 4.2 * len(panels), 3.4, len(panels))) is None:
        return
    fig, axes = made
    for ax, (act, k, gam, g0, n_data) in zip(axes[0], panels):
        ax.hist(g0, bins=40, range=(0, 1), density=True, alpha=0.5, label=f"SHLP, {len(g0)} inits")
        g = np.linspace(1e-4, 1 - 1e-4, 800)
        ax.plot(g, get("igb.pdf").numpy(g=g, gamma=gam), "k-", label=r"$f_{G_0}$, $\gamma$ = maxpool.gamma")
        ax.set_ylim(0, 4 * float(np.histogram(g0, bins=40, range=(0, 1), density=True)[0][5:35].max() + 0.5))
        ax.set_title(f"{act} + MaxPool k={k}: gamma={gam:.3g}")
        ax.set_xlabel("$G_0$")
        ax.legend(fontsize=7)
    ctx.save_figure("maxpool_g0_hist", fig, "G0 histograms of max-pool SHLPs vs f_G0 at gamma = maxpool.gamma: "
                                            "U-shaped for gamma > 1 (peaks at 0 and 1, App. D.2).")
