"""Checks of the data-kernel theory (igbsym/families/nngp.py, igbsym/nngp/) against torch networks.

- ``nngp.kernels_vs_torch`` (nngp.relu_kernel, nngp.erf_kernel): one Dense layer of width N over three digits
  (a strongly negatively correlated third point included); its pre-activations are exactly the Gaussian pair of the
  data kernel, so the unit average of φ(h_a)φ(h_b) over N units × I inits is an unbiased estimate of the form's value
  at every width (SE over the i.i.d. units).
- ``nngp.layers_vs_torch`` (every op map): mlp-layernorm (torch's LayerNorm ε set to 0, as in the map),
  mlp-residual, cnn-linear, cnn-gap on three digits; after
  every op, the layer average (1/(C P)) Σ h(a) h(b) of torch networks at widths N and 2N (Richardson 2x(2N) − x(N):
  the O(1/N) finite-width bias removed; O(1/N²) left, below the SE at these sizes) against the kernel walk's
  (1/P) Σ_p k(a, b; p, p). No form is credited: the op maps are checked here, and tests/test_nngp.py mutates each map
  and requires this comparison to fail.
- ``nngp.gamma_vs_probe`` (nngp.gamma): ``igbsym probe`` (Rao–Blackwellised γ̂, zero biases) of spec-built networks
  at several widths on digits and the Gaussian blob, fitted γ̂(N) = γ_∞ + b/N by weighted least squares; γ_∞ against
  nngp.gamma(T, M_off) of the kernel walk. At the widest N, G0 against the GP law (two-sample KS against 20000 GP
  draws; the law's own sampling error is in the two-sample p-value).
- ``nngp.population_vs_probe`` (nngp.gamma_population): the dataset as a population: the probe on D' points drawn
  with replacement from it estimates γ_D'(resample) (the estimand of that sample), whose expectation over
  resamples is γ_pop up to O(1/D'); the bias bound is the theory's |γ_D'(resample) − γ_pop| of the drawn sample.
z ≤ 5 per assertion (false-failure rate 5.7e-7); KS at α = 5.7e-7.
"""
from __future__ import annotations

import numpy as np
import torch

import igbsym
from igbsym.nngp import law as L
from igbsym.nngp.walk import image_input, walk
from igbsym.ops.datakernel import input_kernel

from . import datasets, models
from .checks import law_result, register_check, register_sizes, reusable, seed_for, size, z_result
from .probe import probe
from .stats import jitter_g0

register_sizes("nngp", quick=dict(unit_width=2048, unit_inits=8, layer_width=(128, 256), layer_inits=96,
                                  probe_widths=(64, 256), probe_inits=(48, 24), cnn_widths=(16, 32),
                                  cnn_inits=(32, 16), data=192, cnn_data=48, law_draws=20000,
                                  cases=("mlp/digits", "mlp-layernorm/digits", "mlp-residual/digits",
                                         "cnn-gap/digits", "mlp/gaussian"), resample=1024),
               thorough=dict(unit_width=8192, unit_inits=32, layer_width=(256, 512), layer_inits=64,
                             probe_widths=(64, 256, 1024), probe_inits=(96, 48, 32), cnn_widths=(32, 64, 128),
                             cnn_inits=(64, 32, 24), data=1797, cnn_data=300, law_draws=20000,
                             cases=("mlp/digits", "mlp-deep/digits", "mlp-layernorm/digits", "mlp-residual/digits",
                                    "cnn-linear/digits", "cnn-gap/digits", "mlp/gaussian", "mlp-deep/gaussian",
                                    "mlp-layernorm/gaussian", "mlp-residual/gaussian", "cnn-linear/gaussian",
                                    "cnn-gap/gaussian"), resample=4096))


def _points() -> np.ndarray:
    """Three digits, the third −0.9·x₀ + 0.3·x₁ (a negative correlation): [3, 1, 8, 8] float64."""
    x = datasets.load("digits").data[:2].double().numpy()
    return np.concatenate([x, -0.9 * x[:1] + 0.3 * x[1:2]])


PAIRS = ((0, 1), (0, 2), (1, 2), (0, 0))
TORCH_NORMS = (torch.nn.LayerNorm,)     # torch's module class (its eps is set to 0 below), not the igbsym op


@reusable
def _unit_products(ctx, act):
    """Per pair, the products φ(h_a)φ(h_b) averaged per init over N units [I, pairs] of a Dense(64 → N, σ_w² = 2)."""
    x = torch.from_numpy(_points().reshape(3, -1))
    gen = torch.Generator().manual_seed(seed_for(ctx, "nngp", "units", act))
    n, inits = size(ctx, "nngp.unit_width"), size(ctx, "nngp.unit_inits")
    fn = {"relu": torch.relu, "erf": torch.erf}[act]
    out = []
    for _ in range(inits):
        w = torch.randn(64, n, generator=gen, dtype=torch.float64) * (2.0 / 64) ** 0.5
        y = fn(x @ w)
        out.append(torch.stack([(y[a] * y[b]) for a, b in PAIRS]))          # [pairs, N]
    return torch.cat(out, 1).numpy()                                            # [pairs, I N]


@register_check("nngp.kernels_vs_torch", forms=["nngp.relu_kernel", "nngp.erf_kernel"])
def check_kernels(ctx):
    """E phi(u) phi(v) of the data kernel's Gaussian pair vs one torch Dense layer (unit averages)."""
    x = _points().reshape(3, -1)
    K = 2.0 * x @ x.T / x.shape[1]
    out = []
    for act, form in (("relu", "nngp.relu_kernel"), ("erf", "nngp.erf_kernel")):
        prods = _unit_products(ctx, act)
        for j, (a, b) in enumerate(PAIRS):
            va, vb, k = K[a, a], K[b, b], K[a, b]
            if act == "relu":
                pred = np.sqrt(va * vb) * float(igbsym.get(form).numpy(rho=k / np.sqrt(va * vb)))
            else:
                pred = float(igbsym.get(form).numpy(k=k, v_a=va, v_b=vb))
            v = prods[j]
            out.append(z_result(form, f"{act}, points ({a}, {b}), rho = {k / np.sqrt(va * vb):.3f}", pred, v.mean(),
                                v.std(ddof=1) / np.sqrt(v.size), v.size, ctx.seed,
                                note="exact Gaussian pre-activations: unbiased at any width"))
    return out


def kernel_path(ops, x) -> list:
    """Per op, the walk's layer average (1/P) Σ_p k(a, b; p, p) for the pairs PAIRS of the points x."""
    a = np.array([p[0] for p in PAIRS])
    b = np.array([p[1] for p in PAIRS])
    s = input_kernel(x, a, b, not image_input(ops, x), pairs=True)
    out = []
    for op in ops:
        s = op.kernel(s)
        out.append(np.diagonal(s.k, axis1=-2, axis2=-1)[:, 0].mean(-1))
    return out


def _torch_products(ops, n_inits: int, seed) -> np.ndarray:
    """Per op output of the spec-built ``ops`` in torch (float64, norms without torch's guard ε: the maps are the
    norms without it, a relative 1e-5/σ²): per init the layer averages for PAIRS [ops, I, pairs]."""
    x = torch.from_numpy(_points())
    factory = models.SpecFactory(ops, x.shape[1:])
    torch.manual_seed(seed)
    rows = []
    for _ in range(n_inits):
        net = factory(0).double()
        for m in net.modules():
            if isinstance(m, TORCH_NORMS):
                m.eps = 0.0
        h, per = x, []
        with torch.no_grad():
            for mod in net:
                h = mod(h)
                f = h.flatten(1)
                per.append([float(f[a] @ f[b]) / f.shape[1] for a, b in PAIRS])
        rows.append(per)
    return np.array(rows).transpose(1, 0, 2)


@reusable
def _layer_products(ctx, name, width):
    """``_torch_products`` of the built-in spec model ``name`` at ``width``."""
    return _torch_products(models.spec_ops(name, width), size(ctx, "nngp.layer_inits"),
                           seed_for(ctx, "nngp", "layers", name, width))


LAYER_MODELS = ("mlp-layernorm", "mlp-residual", "cnn-linear", "cnn-gap")


def layer_comparisons(ctx, kernel_path_fn=kernel_path) -> list:
    """The per-op comparisons of ``nngp.layers_vs_torch`` (``kernel_path_fn``: the theory route, replaceable so
    tests can mutate a map)."""
    n1, n2 = size(ctx, "nngp.layer_width")
    out = []
    for name in LAYER_MODELS:
        ops = models.spec_ops(name, n1)
        theory = kernel_path_fn(ops, _points())
        e1, e2 = _layer_products(ctx, name, n1), _layer_products(ctx, name, n2)
        for i, op in enumerate(ops[:-1]):
            if np.all(e1[i].std(0) <= 1e-12 * np.abs(e1[i]).max()):
                continue                       # the data themselves (a leading Flatten): no weights, nothing to test
            for j, (a, b) in enumerate(PAIRS):
                est = 2 * e2[i, :, j].mean() - e1[i, :, j].mean()
                se = np.hypot(2 * e2[i, :, j].std(ddof=1) / np.sqrt(e2.shape[1]),
                              e1[i, :, j].std(ddof=1) / np.sqrt(e1.shape[1]))
                out.append(z_result("ops.kernel", f"{name} op {i} {type(op).__name__} ({a}, {b})", theory[i][j],
                                    est, se, e1.shape[1], ctx.seed, bias_bound=1e-12 * abs(theory[i][j]),
                                    note=f"Richardson over widths {n1}, {n2}; bias bound: float64 rounding"))
    return out


@register_check("nngp.layers_vs_torch", forms=[])
def check_layers(ctx):
    """Every op's kernel map vs the layer averages of torch networks at two widths (Richardson)."""
    return layer_comparisons(ctx)


def _data(ctx, dataset, cnn):
    n = size(ctx, "nngp.cnn_data" if cnn else "nngp.data")
    if dataset == "digits":
        return datasets.load("digits").data[:n].double()
    return datasets.gaussian((1, 8, 8), n, seed=seed_for(ctx, "nngp", "blob") % (2**31)).data.double()


@reusable
def _probe(ctx, name, dataset, width, inits):
    cnn = name.startswith("cnn")
    x = _data(ctx, dataset, cnn).float()
    factory = models.SpecFactory(models.spec_ops(name, width), x.shape[1:])
    res = probe(factory, x, inits, seed=seed_for(ctx, "nngp", "probe", name, dataset, width) % (2**31),
                zero_bias=True, layers=False)
    return res.gamma.value, res.gamma.se, res.g0.numpy()


def fit_inverse_width(widths, values, ses):
    """Weighted least squares of γ̂(N) = γ_∞ + b/N: (γ_∞, its SE)."""
    X = np.stack([np.ones(len(widths)), 1 / np.asarray(widths, float)], 1)
    W = np.diag(1 / np.asarray(ses, float) ** 2)
    cov = np.linalg.inv(X.T @ W @ X)
    beta = cov @ X.T @ W @ np.asarray(values, float)
    return float(beta[0]), float(np.sqrt(cov[0, 0]))


@reusable
def _theory(ctx, name, dataset, draws):
    cnn = name.startswith("cnn")
    x = _data(ctx, dataset, cnn).numpy()
    w = walk(models.spec_ops(name, 1), x)
    T, _, M_off = L.kernel_means(w.kernel)
    law = L.sample(w.kernel, draws, 2, seed_for(ctx, "nngp", "law", name, dataset))
    return T, M_off, law.draws[:, 0], x.shape[0]


def case_runs(ctx, case: str) -> dict:
    """One validation case 'model/dataset': the probe at the mode's widths, the 1/N fit, the theory's (T, M_off),
    and the two-sample KS of G0 at the widest N against the GP law."""
    from scipy import stats
    name, dataset = case.split("/")
    cnn = name.startswith("cnn")
    widths = size(ctx, "nngp.cnn_widths" if cnn else "nngp.probe_widths")
    inits = size(ctx, "nngp.cnn_inits" if cnn else "nngp.probe_inits")
    runs = [_probe(ctx, name, dataset, w, i) for w, i in zip(widths, inits)]
    g_inf, se = fit_inverse_width(widths, [r[0] for r in runs], [r[1] for r in runs])
    T, M_off, law_g0, n = _theory(ctx, name, dataset, size(ctx, "nngp.law_draws"))
    probe_g0 = jitter_g0(runs[-1][2], n, ctx.seed)
    ks = stats.ks_2samp(probe_g0, jitter_g0(law_g0, n, ctx.seed + 1))
    return dict(case=case, D=n, widths=list(widths), inits=list(inits), gamma_hat=[r[0] for r in runs],
                gamma_hat_se=[r[1] for r in runs], gamma_inf_fit=g_inf, gamma_inf_fit_se=se, T=T, M_off=M_off,
                ks_statistic=float(ks.statistic), ks_p=float(ks.pvalue), ks_n=len(probe_g0))


@register_check("nngp.gamma_vs_probe", forms=["nngp.gamma"])
def check_gamma(ctx):
    """gamma_inf of spec-built networks on digits / the blob vs the probe extrapolated in 1/N; KS of G0 vs the law."""
    out = []
    for case in size(ctx, "nngp.cases"):
        r = case_runs(ctx, case)
        pred = float(igbsym.get("nngp.gamma").numpy(T=r["T"], M_off=r["M_off"]))
        out.append(z_result("nngp.gamma", f"{case} (D = {r['D']})", pred, r["gamma_inf_fit"], r["gamma_inf_fit_se"],
                            sum(r["inits"]), ctx.seed, note=f"gamma_hat(N) = gamma_inf + b/N over N = {r['widths']}: "
                            + ", ".join(f"{g:.4g}±{s:.2g}" for g, s in zip(r["gamma_hat"], r["gamma_hat_se"]))))
        out.append(law_result("nngp.g0_law", f"{case}: KS of G0 at N = {r['widths'][-1]} vs the GP law", r["ks_p"],
                              r["ks_n"], ctx.seed, estimate=r["ks_statistic"],
                              note="two-sample KS against GP draws (both jittered by U(-1/2,1/2)/D)"))
    return out


@reusable
def _resampled(ctx, draws):
    x = datasets.load("digits").data[:size(ctx, "nngp.data") // 4].double().numpy()
    idx = np.random.default_rng(seed_for(ctx, "nngp", "resample")).integers(0, x.shape[0], size(ctx, "nngp.resample"))
    return x, x[idx]


@register_check("nngp.population_vs_probe", forms=["nngp.gamma_population"])
def check_population(ctx):
    """gamma with the dataset as the population vs the probe on a sample drawn with replacement from it."""
    pop, sample = _resampled(ctx, 0)
    ops = models.spec_ops("mlp", 1)
    T, M, _ = L.kernel_means(walk(ops, pop).kernel)
    Ts, _, Moff_s = L.kernel_means(walk(ops, sample).kernel)
    pred = float(igbsym.get("nngp.gamma_population").numpy(T=T, M=M))
    bias = abs(L.gamma_estimand(Ts, Moff_s) - L.gamma_population(T, M))    # the drawn sample's own estimand
    widths = size(ctx, "nngp.probe_widths")
    runs = [_probe_sample(ctx, w, i) for w, i in zip(widths, size(ctx, "nngp.probe_inits"))]
    g_inf, se = fit_inverse_width(widths, [r[0] for r in runs], [r[1] for r in runs])
    return [z_result("nngp.gamma_population", f"mlp, population of {pop.shape[0]} digits, {sample.shape[0]} drawn",
                     pred, g_inf, se, sum(size(ctx, "nngp.probe_inits")), ctx.seed, bias_bound=bias,
                     note=f"bias bound |gamma_D'(drawn sample) - gamma_pop| = {bias:.3g} (theory)")]


@reusable
def _probe_sample(ctx, width, inits):
    _, sample = _resampled(ctx, 0)
    x = torch.from_numpy(sample).float()
    factory = models.SpecFactory(models.spec_ops("mlp", width), x.shape[1:])
    res = probe(factory, x, inits, seed=seed_for(ctx, "nngp", "probe-pop", width) % (2**31), zero_bias=True,
                layers=False)
    return res.gamma.value, res.gamma.se


# ------------------------------------------------------------------------------------------ MaxPool2d (issue 46)
MAXPOOL_REPLICAS = 4          # independent QMC point sets of the theory: its own SE per value
MAXPOOL_DRAWS = 4096


def maxpool_ops(width: int, seed: int = 0) -> tuple:
    """A small ReLU + max-pool CNN (CNN-B's two pool kinds: 3×3 stride 1 padding 1, then 2×2 stride 2)."""
    return (igbsym.ops.Conv2d(width, 3, 1, 1), igbsym.ops.Act("relu"),
            igbsym.ops.MaxPool2d(3, 1, 1, MAXPOOL_DRAWS, seed), igbsym.ops.Conv2d(width, 3, 1, 1),
            igbsym.ops.Act("relu"), igbsym.ops.MaxPool2d(2, 2, 0, MAXPOOL_DRAWS, seed), igbsym.ops.Flatten(),
            igbsym.ops.Dense(2))


@reusable
def _maxpool_products(ctx, width):
    """``_torch_products`` of ``maxpool_ops(width)``."""
    return _torch_products(maxpool_ops(width), size(ctx, "nngp.cnn_inits")[0] * 8,
                           seed_for(ctx, "nngp", "maxpool", width))


def maxpool_comparisons(ctx, kernel_path_fn=kernel_path) -> list:
    """``nngp.maxpool_vs_torch``: per op and pair, the kernel walk (mean over MAXPOOL_REPLICAS QMC seeds, its SE
    from their spread) against torch layer averages at widths N, 2N (Richardson), combined SE."""
    n1, n2 = size(ctx, "nngp.cnn_widths")[:2]
    paths = np.array([kernel_path_fn(maxpool_ops(n1, seed_for(ctx, "nngp", "maxpool-qmc", r) % 2**31), _points())
                      for r in range(MAXPOOL_REPLICAS)])                          # [R, ops, pairs]
    theory, theory_se = paths.mean(0), paths.std(0, ddof=1) / np.sqrt(MAXPOOL_REPLICAS)
    e1, e2 = _maxpool_products(ctx, n1), _maxpool_products(ctx, n2)
    out = []
    for i, op in enumerate(maxpool_ops(n1)[:-1]):
        for j, (a, b) in enumerate(PAIRS):
            est = 2 * e2[i, :, j].mean() - e1[i, :, j].mean()
            se = np.sqrt((2 * e2[i, :, j].std(ddof=1)) ** 2 / e2.shape[1] + e1[i, :, j].std(ddof=1) ** 2 / e1.shape[1]
                         + theory_se[i, j] ** 2)
            out.append(z_result("ops.kernel", f"maxpool-cnn op {i} {type(op).__name__} ({a}, {b})", theory[i, j],
                                est, se, e1.shape[1], ctx.seed, note=f"Richardson over widths {n1}, {n2}; theory "
                                f"RQMC SE {theory_se[i, j]:.2g} ({MAXPOOL_REPLICAS} seeds) in the SE"))
    return out


@register_check("nngp.maxpool_vs_torch", forms=[])
def check_maxpool(ctx):
    """MaxPool2d's kernel map (QMC, with its mean) vs torch layer averages at two widths (Richardson)."""
    return maxpool_comparisons(ctx)
