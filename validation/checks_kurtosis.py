"""Checks of the kurtosis family against deep narrow leaky-ReLU nets simulated in torch (many inits batched, bmm).

Net (kurtosis-vanishing-empirical-variance.txt, Sec. 3): y^(0) = x ~ N(0, I_w), y^(l) = W^(l) leaky_relu(y^(l-1), a),
W^(l)_ij iid with variance 2/(w (1 + a^2)) and law normal / uniform / rademacher. Moments are over data AND weights
(the paper's kappa_l): each init contributes the mean over its data points, and standard errors treat inits as the
independent units (cluster delta method: the per-init means of y^2, y^4 and y_i^2 y_j^2 carry 8th moments).

Heavy tails: kappa_l grows like lambda_max^l, and once it is large the fourth-moment estimate is dominated by rare
inits whose share of the sample is not yet representative, so the sample SE is itself unreliable. We therefore
z-test only layers whose *predicted* kappa_l is at most KAPPA_GATE (fixed in advance, not tuned on the outcome) and
plot the rest, where the simulation falls below the theory by a factor that the figure shows.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from scipy import stats

import igbsym
from igbsym import kurtosis_api as api

from .checks import law_result, register_check, z_result

KAPPA_GATE = 25.0
LAWS = ("normal", "uniform", "rademacher")


def weights(shape, law: str, std: float, gen: torch.Generator, dtype=torch.float64) -> torch.Tensor:
    """iid weights of the given law with standard deviation ``std``."""
    if law == "normal":
        return torch.randn(shape, generator=gen, dtype=dtype) * std
    if law == "uniform":
        return (torch.rand(shape, generator=gen, dtype=dtype) * 2 - 1) * (std * math.sqrt(3))
    return (torch.randint(0, 2, shape, generator=gen).to(dtype) * 2 - 1) * std


def run_net(w, depth, a, law, inits, data, seed, rho=0.0, dtype=torch.float64):
    """Per-init layer statistics of the net: dict of arrays [depth + 1, inits] (means over data and units)
    plus the per-init empirical variance of output unit 0 over the data ('s2', [depth + 1, inits])."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn((inits, data, w), generator=gen, dtype=dtype)
    if rho:  # equicorrelated Gaussian input: x = sqrt(1-rho) z + sqrt(rho) g (breaks joint sign symmetry)
        x = math.sqrt(1 - rho) * x + math.sqrt(rho) * torch.randn((inits, data, 1), generator=gen, dtype=dtype)
    std = math.sqrt(2.0 / (w * (1 + a * a)))
    out = {k: [] for k in ("m2", "m4", "m22", "nonzero", "s2")}
    y = x
    for layer in range(depth + 1):
        if layer:
            y = torch.bmm(torch.nn.functional.leaky_relu(y, a), weights((inits, w, w), law, std, gen, dtype))
        sq = y * y
        out["m2"].append(sq.mean(dim=(1, 2)))
        out["m4"].append((sq * sq).mean(dim=(1, 2)))
        if w > 1:
            tot = sq.sum(dim=2)
            out["m22"].append(((tot * tot - (sq * sq).sum(dim=2)) / (w * (w - 1))).mean(dim=1))
        out["nonzero"].append((y != 0).any(dim=2).to(dtype).mean(dim=1))
        out["s2"].append(y[:, :, 0].var(dim=1))
    return {k: torch.stack(v).numpy() for k, v in out.items() if v}


def delta(fn, cols: list):
    """Estimate fn(means) and its cluster delta-method SE from per-init columns (numeric gradient)."""
    X = np.stack(cols, axis=1)
    m = X.mean(axis=0)
    g = np.array([(fn(m + e) - fn(m - e)) / (2 * e[i]) for i, e in enumerate(np.diag(np.abs(m) * 1e-6 + 1e-300))])
    cov = np.cov(X, rowvar=False).reshape(len(cols), len(cols))
    return fn(m), float(np.sqrt(g @ cov @ g / X.shape[0]))


def kappa_hat(st, layer):
    return delta(lambda m: m[1] / m[0] ** 2, [st["m2"][layer], st["m4"][layer]])


def c_hat(st, layer):
    """c_l / sigma^4 estimated as E[y_i^2 y_j^2]/E[y^2]^2 - 1."""
    return delta(lambda m: m[1] / m[0] ** 2 - 1, [st["m2"][layer], st["m22"][layer]])


def one_step(st, layer, A):
    """kappa_(l+1) - [A (kappa_l, c_l, 1)]_1 from the same nets (sigma2 = 1)."""
    cols = [st["m2"][layer], st["m4"][layer], st["m22"][layer], st["m2"][layer + 1], st["m4"][layer + 1]]
    return delta(lambda m: m[4] / m[3] ** 2 - (A[0, 0] * m[1] / m[0] ** 2 + A[0, 1] * (m[2] / m[0] ** 2 - 1)
                                               + A[0, 2]), cols)


def _configs(quick: bool):
    if quick:
        return [(2, 0.0, "normal"), (3, 0.5, "rademacher"), (5, 0.1, "uniform"), (10, 0.0, "normal"),
                (32, 1.0, "rademacher"), (32, 0.0, "uniform")]
    return [(w, a, law) for w in (2, 3, 5, 10, 32) for a in (0.0, 0.1, 0.5, 1.0) for law in LAWS]


@register_check("kurtosis.deep_narrow", forms=["kurtosis.matrix", "kurtosis.after", "kurtosis.c_after",
                                               "kurtosis.lambda_max"])
def check_deep_narrow(ctx):
    """kappa_l and c_l of deep narrow nets vs the recursion (Prop. 4.3), one-step matrix test, growth rate."""
    after, c_after, lam = (igbsym.get(f"kurtosis.{n}") for n in ("after", "c_after", "lambda_max"))
    inits, data, cap = (2000, 32, 20) if ctx.quick else (20000, 256, 50)
    results, curves = [], []
    for i, (w, a, law) in enumerate(_configs(ctx.quick)):
        kw = api.KAPPA_W[law]
        pred_k = after.numpy(L=np.arange(51), w=w, a=a, kappa_w=kw, kappa0=3.0, c0=0.0, sigma2=1.0)
        depth = int(min(cap, np.searchsorted(pred_k, KAPPA_GATE, side="right") + (4 if ctx.quick else 20)))
        seed = ctx.seed * 1000 + i
        ctx.progress(f"kurtosis.deep_narrow w={w} a={a} {law} depth={depth}")
        st = run_net(w, depth, a, law, inits, data, seed)
        A = igbsym.get("kurtosis.matrix").numpy(w=w, a=a, kappa_w=kw, sigma2=1.0)
        tag = f"w={w} a={a} {law}"
        est = [kappa_hat(st, l) for l in range(depth + 1)]
        curves.append((w, a, law, pred_k[:depth + 1], est))
        tested = [l for l in range(1, depth + 1) if pred_k[l] <= KAPPA_GATE]
        for l in tested:
            k_est, k_se = est[l]
            results.append(z_result("kurtosis.after", f"{tag} L={l}", pred_k[l], k_est, k_se, inits * data, seed,
                                    note=f"{inits} inits x {data} data"))
            pc = float(c_after.numpy(L=l, w=w, a=a, kappa_w=kw, kappa0=3.0, c0=0.0, sigma2=1.0))
            c_est, c_se = c_hat(st, l)
            results.append(z_result("kurtosis.c_after", f"{tag} L={l}", pc, c_est, c_se, inits * data, seed))
            m2 = st["m2"][l]
            results.append(z_result("kurtosis.after", f"{tag} L={l} E[y^2]/sigma^2 (Prop. 3.2)", 1.0, m2.mean(),
                                    m2.std(ddof=1) / math.sqrt(inits), inits * data, seed))
        for l in tested[:-1]:
            d_est, d_se = one_step(st, l, A)
            results.append(z_result("kurtosis.matrix", f"{tag} one step {l}->{l + 1}", 0.0, d_est, d_se,
                                    inits * data, seed, note="kappa_(l+1) - [A k_l]_1 with k_l measured"))
        if len(tested) >= 3:  # growth factor: kappa_L / kappa_(L-1) at the last tested layers vs the exact ratio
            l = tested[-1]
            ratio = delta(lambda m: (m[3] / m[2] ** 2) / (m[1] / m[0] ** 2),
                          [st["m2"][l - 1], st["m4"][l - 1], st["m2"][l], st["m4"][l]])
            lm = float(lam.numpy(w=w, a=a, kappa_w=kw, sigma2=1.0))
            results.append(z_result("kurtosis.lambda_max", f"{tag} kappa_{l}/kappa_{l - 1}", pred_k[l] / pred_k[l - 1],
                                    ratio[0], ratio[1], inits * data, seed,
                                    note=f"exact ratio (lambda_max = {lm:.4f} is its limit)"))
    _plot_kappa(ctx, curves)
    results += _broken_input(ctx)
    return results


def _broken_input(ctx):
    """Equicorrelated Gaussian input (rho = 1/2): the input is not jointly sign-symmetric, so A^(0) is wrong; the
    exact first step (orthant integrals) plus A^(l) for l >= 1 is right. Reports the paper's error, tests the fix."""
    w, a, law, rho, depth = 3, 0.0, "normal", 0.5, 4
    inits, data = (4000, 64) if ctx.quick else (20000, 256)
    seed = ctx.seed * 1000 + 99
    st = run_net(w, depth, a, law, inits, data, seed, rho=rho)
    kw = api.KAPPA_W[law]
    # exact E[relu(x)^2 relu(y)^2] for corr rho: quadrant integrals of the bivariate normal (numeric quadrature)
    from scipy import integrate
    dens = stats.multivariate_normal(mean=[0, 0], cov=[[1, rho], [rho, 1]]).pdf
    e22 = integrate.dblquad(lambda v, u: u * u * v * v * dens([u, v]), 0, 12, 0, 12, epsabs=1e-11)[0]
    s_w2 = 2.0 / (w * (1 + a * a))
    f4 = (1 + a**4) / 2 * 3.0
    m4_1 = s_w2**2 * (kw * w * f4 + 3 * w * (w - 1) * e22)        # E[y^4] after layer 1 (Prop. 4.3 row 1, exact)
    m22_1 = s_w2**2 * (w * f4 + w * (w - 1) * e22)                # E[y_i^2 y_j^2] after layer 1
    k1 = np.array([m4_1, m22_1 - 1.0, 1.0])
    A = igbsym.get("kurtosis.matrix").numpy(w=w, a=a, kappa_w=kw, sigma2=1.0)
    paper = api.trajectory([w] * depth, a, kw, 3.0, 2 * rho**2, 1.0)[0]  # c0 = Cov[x_i^2, x_j^2] = 2 rho^2
    fixed = [np.nan, k1[0]]
    for _ in range(depth - 1):
        k1 = A @ k1
        fixed.append(k1[0])
    out = []
    for l in range(1, depth + 1):
        est, se = kappa_hat(st, l)
        out.append(z_result("kurtosis.after", f"corr. input rho={rho} w={w} L={l}: exact first step + A", fixed[l],
                            est, se, inits * data, seed,
                            note=f"paper's A^(0) predicts {paper[l]:.4f} ({(paper[l] / est - 1) * 100:+.1f}% vs sim, "
                                 f"z = {(paper[l] - est) / se:+.1f})"))
    return out


def _plot_kappa(ctx, curves):
    if ctx.report_dir is None:
        return
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for j, (w, a, law, pred, est) in enumerate(curves):
        col = f"C{j}"
        L = np.arange(len(pred))
        ax.semilogy(L, pred, color=col, lw=1.2, label=f"theory w={w} a={a} {law}")
        e = np.array(est)
        ax.errorbar(L, e[:, 0], yerr=2 * e[:, 1], fmt="o", ms=3, color=col, alpha=0.8)
    ax.axhline(KAPPA_GATE, color="grey", ls=":", lw=1)
    ax.set_xlabel("depth l")
    ax.set_ylabel("kurtosis kappa_l")
    ax.legend(fontsize=6)
    ctx.save_figure("kurtosis_vs_depth", fig, "kappa_l vs depth: Prop. 4.3 recursion (lines) vs simulation over data "
                    f"and weights (dots, 2 SE); z-tests only below the dotted gate kappa = {KAPPA_GATE:g}")


@register_check("kurtosis.empirical_variance", forms=["kurtosis.var_s2", "kurtosis.df", "kurtosis.p_small_var"])
def check_empirical_variance(ctx):
    """Var[S_n^2] on iid outputs of independent nets; the Gamma law where exact (Gaussian outputs of a fixed
    torch.nn.Linear); and the thesis Fig. 1 setting (outputs of one net share W) where it is only an approximation."""
    var_s2, df, psmall, after = (igbsym.get(f"kurtosis.{n}") for n in ("var_s2", "df", "p_small_var", "after"))
    results = []
    seed = ctx.seed * 1000 + 500
    # (1) iid draws: one (init, input) per sample, n samples per group; leaky a = 1/2 keeps the 8th moment modest
    w, L, n, a = 10, 2, 32, 0.5
    groups = 3000 if ctx.quick else 30000
    kap = float(after.numpy(L=L, w=w, a=a, kappa_w=3.0, kappa0=3.0, c0=0.0, sigma2=1.0))
    gen = torch.Generator().manual_seed(seed + 1)
    y = _iid_outputs(w, L, a, groups * n, gen).reshape(groups, n)
    s2 = y.var(axis=1, ddof=1)
    dev = (s2 - 1.0) ** 2  # Var[S^2] with the known mean sigma^2 = 1
    results.append(z_result("kurtosis.var_s2", f"iid outputs w={w} L={L} n={n} (kappa={kap:.3f})",
                            float(var_s2.numpy(n=n, kappa=kap, sigma2=1.0)), dev.mean(),
                            dev.std(ddof=1) / math.sqrt(groups), groups * n, seed,
                            note=_gamma_gap(psmall, y, kap)))
    pred_df = float(df.numpy(n=n, kappa=kap))
    est_df, se_df = delta(lambda m: 2.0 / m[0], [dev])
    results.append(z_result("kurtosis.df", f"iid outputs w={w} L={L} n={n}", pred_df, est_df, se_df, groups * n, seed))
    # (2) exact Gamma case: a fixed torch.nn.Linear on Gaussian data gives Gaussian outputs (kappa = 3)
    torch.manual_seed(seed + 2)
    lin = torch.nn.Linear(16, 1, bias=False).double()
    with torch.no_grad():
        sigma2 = float((lin.weight ** 2).sum())
        for n in (3, 20):
            reps = 4000 if ctx.quick else 40000
            out = lin(torch.randn((reps, n, 16), generator=gen, dtype=torch.float64)).squeeze(-1)
            ratio = (out.var(dim=1) / sigma2).numpy()
            cdf = lambda e: psmall.numpy(eps=np.maximum(e, 1e-300), n=n, kappa=3.0)  # noqa: E731
            p = stats.kstest(ratio, cdf).pvalue
            results.append(law_result("kurtosis.p_small_var", f"Gaussian outputs of nn.Linear, n={n} (KS)", p, reps,
                                      seed))
    results += _fig1(ctx, seed + 3)
    return results


def _gamma_gap(psmall, y, kap) -> str:
    """kappa != 3: the Gamma law is an approximation with no error bound; measure P(S_n^2 < eps) on iid groups."""
    n = y.shape[1]
    s2 = y.var(axis=1, ddof=1)
    eps = float(np.quantile(s2, 0.1))
    pred = float(psmall.numpy(eps=eps, n=n, kappa=kap))
    se = math.sqrt(0.09 / len(s2))
    return (f"Gamma approximation (not tested, no error bound): P(S_n^2 < {eps:.3g}) sim 0.100 vs Gamma {pred:.4f} "
            f"(gap {(0.1 - pred) / se:+.1f} SE)")


def _iid_outputs(w, L, a, count, gen):
    """Output unit 0 of ``count`` independent nets, each on its own N(0, I) input (iid draws of the law of y)."""
    std = math.sqrt(2.0 / (w * (1 + a * a)))
    y = torch.randn((count, 1, w), generator=gen, dtype=torch.float64)
    for _ in range(L):
        y = torch.bmm(torch.nn.functional.leaky_relu(y, a),
                      torch.randn((count, w, w), generator=gen, dtype=torch.float64) * std)
    return y[:, 0, 0].numpy()


def _fig1(ctx, seed):
    """Thesis Fig. 1 scaled to CPU: w = 10, ReLU, He-normal, quantiles of S_n^2 over inits vs depth."""
    psmall, after = igbsym.get("kurtosis.p_small_var"), igbsym.get("kurtosis.after")
    w, depth = 10, (40 if ctx.quick else 100)
    inits, n = (2000, 128) if ctx.quick else (10000, 1000)
    st = run_net(w, depth, 0.0, "normal", inits, n, seed, dtype=torch.float32)
    qs = (0.5, 0.9, 0.99)
    sim = np.quantile(st["s2"], qs, axis=1)  # [q, depth + 1]
    kap = after.numpy(L=np.arange(depth + 1), w=w, a=0.0, kappa_w=3.0, kappa0=3.0, c0=0.0, sigma2=1.0)
    grid = np.logspace(-12, 3, 3000)
    gamma_q = np.array([[grid[min(np.searchsorted(psmall.numpy(eps=grid, n=n, kappa=float(k)), q), len(grid) - 1)]
                         for k in kap] for q in qs])
    frac_small = (st["s2"] < 1e-3).mean(axis=1)
    p_gamma = psmall.numpy(eps=1e-3, n=n, kappa=kap)
    note = "; ".join(f"L={l}: sim P(S2<1e-3)={frac_small[l]:.3f} vs Gamma {p_gamma[l]:.3f}, q0.9 sim {sim[1, l]:.3g} "
                     f"vs Gamma {gamma_q[1, l]:.3g}" for l in (10, 20, depth))
    ctx.progress("kurtosis Fig. 1: " + note)
    if ctx.report_dir is not None:
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for j, q in enumerate(qs):
            ax.semilogy(sim[j], color=f"C{j}", label=f"simulation q={q}")
            ax.semilogy(gamma_q[j], color=f"C{j}", ls="--", label=f"Gamma law (Sec. 5) q={q}")
        ax.set_xlabel("depth")
        ax.set_ylabel("empirical variance S_n^2 of one output unit")
        ax.set_title(f"w={w}, ReLU, He-normal, {inits} nets, n={n} Gaussian inputs each")
        ax.legend(fontsize=7)
        ctx.save_figure("kurtosis_empirical_variance", fig, "Quantiles over nets of the empirical output variance vs "
                        "depth (thesis Fig. 1 setting, scaled) against the Gamma(DF_n/2, 2/DF_n) law of Sec. 5 with "
                        "kappa_L from Prop. 4.3; the law assumes iid draws, the n outputs of one net share W")
    # Shared W: E[S_n^2] = sigma^2 - Cov(y(x), y(x')) < sigma^2 (per-net output means are not 0), so the Gamma law's
    # premise fails; its misfit is reported in the note. The valid test here is the pooled E[y^2] = sigma^2.
    l = 5
    m = st["m2"][l]
    note += f"; mean over nets of S_n^2 at L={l}: {st['s2'][l].mean():.3f} (iid premise would give 1)"
    return [z_result("kurtosis.var_s2", f"Fig. 1 setting, pooled E[y^2]/sigma^2 at L={l}", 1.0, m.mean(),
                     m.std(ddof=1) / math.sqrt(inits), inits * n, seed, note=note)]


@register_check("kurtosis.dead_relu", forms=["kurtosis.p_nonzero"])
def check_dead_relu(ctx):
    """P(y^(L) != 0) of ReLU nets (Prop. B.1/B.2), and where its assumptions break (Rademacher, correlated input)."""
    pnz = igbsym.get("kurtosis.p_nonzero")
    inits, data = (2000, 32) if ctx.quick else (40000, 64)
    results = []
    cases = [(1, 8, "normal", 0.0), (2, 12, "uniform", 0.0), (3, 12, "normal", 0.0), (5, 20, "normal", 0.0),
             (2, 8, "rademacher", 0.0), (3, 6, "normal", 0.5)]
    for i, (w, depth, law, rho) in enumerate(cases):
        seed = ctx.seed * 1000 + 700 + i
        st = run_net(w, depth, 0.0, law, inits, data, seed, rho=rho)
        for l in sorted({1, depth // 2, depth}):
            est = st["nonzero"][l]
            paper = float(pnz.numpy(L=l, w=w))
            tag = f"w={w} {law} L={l}" + (f" corr. input rho={rho}" if rho else "")
            se = max(est.std(ddof=1), 1e-12) / math.sqrt(inits)
            if law == "rademacher":  # the all-or-none step fails: report, test only the first layer (still exact)
                if l == 1:
                    results.append(z_result("kurtosis.p_nonzero", tag, paper, est.mean(), se, inits * data, seed))
                else:
                    ctx.progress(f"kurtosis.dead_relu {tag}: sim {est.mean():.4f} vs Prop. B.2 {paper:.4f} "
                                 f"(z = {(est.mean() - paper) / se:+.1f}; atoms in the weights)")
                    results.append(z_result("kurtosis.p_nonzero", tag + " (upper bound: Rademacher cancels)", paper,
                                            max(est.mean(), paper), se, inits * data, seed,
                                            note=f"measured {est.mean():.4f} < Prop. B.2 {paper:.4f}, "
                                                 f"z = {(est.mean() - paper) / se:+.1f}: Prop. B.2 needs atomless "
                                                 "weights; tested: it is an upper bound"))
            elif rho:  # equicorrelated rho = 1/2: P(all x_k <= 0) = 1/(w+1) replaces 2^-w in the first factor
                fixed = (1 - 1 / (w + 1)) * float(pnz.numpy(L=l - 1, w=w))
                results.append(z_result("kurtosis.p_nonzero", tag + " (first factor 1 - 1/(w+1))", fixed, est.mean(),
                                        se, inits * data, seed, note=f"Prop. B.2 as printed: {paper:.4f} "
                                        f"(z = {(paper - est.mean()) / se:+.1f})"))
            else:
                results.append(z_result("kurtosis.p_nonzero", tag, paper, est.mean(), se, inits * data, seed))
    return results
