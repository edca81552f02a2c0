"""Estimators with uncertainties for simulated untrained networks (inits are the i.i.d. units).

γ = Var_W(μ_c) / E_W[Var_χ(O_c)] (paper Def. C.2). With D data points the sample centre μ̂ has
E[μ̂²] = E_W[μ²] + E_W[Var_χ]/D (exactly, for i.i.d. data and the unbiased data variance s²), so
:func:`gamma_estimate` uses a_i = mean_c(μ̂_ic² − s²_ic/D), b_i = mean_c s²_ic and γ̂ = ā / b̄; E_W[μ_c] = 0 by the
sign symmetry of the output weights, so no centring is needed (``center=True`` centres anyway, for hidden
nodes). Standard error: delta method over inits (``method='delta'``) or a percentile bootstrap over inits
(``method='bootstrap'``). The ratio-of-means bias is O(1/I) relative, below SE/√I.

With a dataset shared by all inits the units are i.i.d. only given the dataset; its own fluctuation
(O(1/(D√d)) in γ̂) is then not in the SE — negligible unless γ = 0, where checks use ``fresh_data=True``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy import stats as sps

from igbsym.errors import InputError

Z95 = 1.959963984540054


@dataclass
class Estimate:
    """value ± se with a confidence interval [lo, hi] (95 % unless stated), the method and the unit count."""

    value: float
    se: float
    lo: float
    hi: float
    method: str
    n: int

    def __str__(self):
        return f"{self.value:.5g} ± {self.se:.2g} ({self.method}, n={self.n})"


def as_numpy(x) -> np.ndarray:
    return x.detach().cpu().double().numpy() if isinstance(x, torch.Tensor) else np.asarray(x, float)


def mean_se(x) -> Estimate:
    """Mean of i.i.d. units with its standard error."""
    x = as_numpy(x).ravel()
    if x.size < 2:
        raise InputError(f"mean_se needs at least 2 units, got {x.size}")
    m, se = float(x.mean()), float(x.std(ddof=1) / math.sqrt(x.size))
    return Estimate(m, se, m - Z95 * se, m + Z95 * se, "mean", x.size)


def delta_method(fn, columns) -> tuple:
    """fn(means) and its delta-method SE from per-unit columns (the one delta-method helper of the checks).

    columns: a list of k arrays of n i.i.d. units (paired); fn maps the k means to a scalar. The gradient is a
    central difference with relative step 1e-6 (exact for the polynomial / rational statistics used here to
    ≈1e-10 relative); SE = sqrt(∇fᵀ Σ ∇f / n) with Σ the unbiased covariance of the columns.
    """
    X = np.stack([as_numpy(c).ravel() for c in columns], axis=1)
    n, k = X.shape
    if n < 2:
        raise InputError(f"delta_method needs at least 2 units, got {n}")
    m = X.mean(axis=0)
    steps = np.abs(m) * 1e-6 + 1e-300
    grad = np.array([(fn(m + e) - fn(m - e)) / (2 * h) for e, h in zip(np.diag(steps), steps)])
    cov = np.cov(X, rowvar=False).reshape(k, k)
    return float(fn(m)), float(np.sqrt(max(grad @ cov @ grad, 0.0) / n))


def ratio_estimate(a, b, method: str = "delta", n_boot: int = 2000, seed: int = 0) -> Estimate:
    """mean(a)/mean(b) over paired i.i.d. units with a delta-method or bootstrap standard error."""
    a, b = as_numpy(a).ravel(), as_numpy(b).ravel()
    n = a.size
    if n < 2 or b.size != n:
        raise InputError(f"ratio_estimate needs paired arrays of >= 2 units, got {a.size} and {b.size}")
    r = float(a.mean() / b.mean())
    if method == "delta":
        cov = np.cov(np.vstack([a, b]), ddof=1)
        var = (cov[0, 0] - 2 * r * cov[0, 1] + r * r * cov[1, 1]) / (n * b.mean() ** 2)
        se = float(math.sqrt(max(var, 0.0)))
        return Estimate(r, se, r - Z95 * se, r + Z95 * se, "delta", n)
    if method == "bootstrap":
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, n, size=(n_boot, n))
        reps = a[idx].mean(1) / b[idx].mean(1)
        lo, hi = np.quantile(reps, [0.025, 0.975])
        return Estimate(r, float(reps.std(ddof=1)), float(lo), float(hi), "bootstrap", n)
    raise InputError(f"unknown method {method!r}; allowed: delta, bootstrap")


def gamma_units(mu, var, n_data: int, center: bool = False):
    """Per-init numerator and denominator units (a_i, b_i) of γ̂ (see module docstring); mu, var [I, K]."""
    mu, var = as_numpy(mu), as_numpy(var)
    if mu.ndim != 2 or mu.shape != var.shape:
        raise InputError(f"gamma: mu and var must both be [inits, nodes], got {mu.shape} and {var.shape}")
    if center:
        n = mu.shape[0]
        mu = (mu - mu.mean(0, keepdims=True)) * math.sqrt(n / (n - 1))
    return (mu**2 - var / n_data).mean(1), var.mean(1)


def gamma_estimate(mu, var, n_data: int, method: str = "delta", center: bool = False, seed: int = 0) -> Estimate:
    """γ̂ = Var_W(μ)/E[Var_χ] with the 1/D correction; units are inits (nodes of one init are averaged)."""
    a, b = gamma_units(mu, var, n_data, center)
    return ratio_estimate(a, b, method, seed=seed)


def gamma_of(res, method: str = "delta") -> Estimate:
    """γ̂ of a SimResult's output nodes."""
    return gamma_estimate(res.mu, res.var, res.n_data, method)


def jitter_g0(g0, n_data: int, seed: int = 0) -> np.ndarray:
    """Continuous version of the discrete G0 = k/D: k/D + (U − 1/2)/D, clipped to [0, 1]."""
    g = as_numpy(g0).ravel()
    u = np.random.default_rng(seed).uniform(-0.5, 0.5, g.size)
    return np.clip(g + u / n_data, 0.0, 1.0)


def ks_test(samples, cdf) -> tuple:
    """One-sample KS test: (statistic, p-value)."""
    r = sps.kstest(as_numpy(samples).ravel(), cdf)
    return float(r.statistic), float(r.pvalue)


def binned_chi2(samples, cdf, n_bins: int = 20) -> tuple:
    """Binned χ² goodness of fit on equiprobable bins of the hypothesised law (cdf must be invertible
    numerically on the sample range): (statistic, p-value, dof)."""
    x = np.sort(as_numpy(samples).ravel())
    n = x.size
    if n < 5 * n_bins:
        raise InputError(f"binned_chi2 needs at least 5 samples per bin ({5 * n_bins}), got {n}")
    u = np.clip(cdf(x), 0.0, 1.0)
    counts = np.histogram(u, bins=np.linspace(0, 1, n_bins + 1))[0]
    expected = n / n_bins
    stat = float(((counts - expected) ** 2 / expected).sum())
    return stat, float(sps.chi2.sf(stat, n_bins - 1)), n_bins - 1


def pdf_chi2(samples, pdf, n_bins: int = 30, lo: float = -math.inf, hi: float = math.inf, pad: float = 10.0,
             nodes: int = 40) -> tuple:
    """χ² of ``n_bins`` equal-count bins (edges at sample quantiles) with expected counts n·∫pdf over each bin
    (Gauss-Legendre, ``nodes`` per bin): the density itself is tested (not a cdf). The outer edges are the sample
    extremes moved out by ``pad`` sample standard deviations, clipped to the support [lo, hi]; the mass beyond
    them is negligible against the per-bin count for the laws used here (stated by the caller).
    Returns (statistic, p-value, dof = n_bins − 1); quantile edges cost no degree of freedom asymptotically."""
    x = as_numpy(samples).ravel()
    n = x.size
    if n < 5 * n_bins:
        raise InputError(f"pdf_chi2 needs at least 5 samples per bin ({5 * n_bins}), got {n}")
    edges = np.quantile(x, np.linspace(0, 1, n_bins + 1))
    sd = x.std()
    edges[0], edges[-1] = max(lo, edges[0] - pad * sd), min(hi, edges[-1] + pad * sd)
    gx, gw = np.polynomial.legendre.leggauss(nodes)
    a, b = edges[:-1, None], edges[1:, None]
    probs = ((b - a)[:, 0] / 2) * (np.asarray(pdf((a + b) / 2 + (b - a) / 2 * gx), float) @ gw)
    counts = np.histogram(x, bins=edges)[0]
    if np.any(probs <= 0):
        return math.inf, 0.0, n_bins - 1
    stat = float(((counts - n * probs) ** 2 / (n * probs)).sum())
    return stat, float(sps.chi2.sf(stat, n_bins - 1)), n_bins - 1


# --------------------------------------------------------------------------------------------- a target SE
GROWTH = 1.1         # each round runs to 1.1 × the units the SE so far says are needed (SE ∝ 1/√n)
MAX_INITS = 10_000   # the default cap on the inits of probe / sweep --rel-se


def check_rel_se(rel_se, who: str) -> float:
    """``rel_se`` as a float in (0, 1) or one InputError line (NaN, ±inf, <= 0, >= 1, a non-number)."""
    if isinstance(rel_se, bool) or not isinstance(rel_se, (int, float, np.floating)) or not 0 < rel_se < 1:
        raise InputError(f"{who}: rel_se = {rel_se!r} is not allowed; allowed: a number in (0, 1)")
    return float(rel_se)


def absolute_target(est: Estimate, before: bool | None = None) -> bool:
    """γ̂ within 2 SE of 0 (odd φ on symmetric data: γ = 0) has no relative SE; the target is then the absolute SE.
    ``before``: the previous round's mode. The switch is one way (relative → absolute, never back), so a zero γ
    does not flip to a relative target on a 2-SE excursion, and a small first round whose γ̂ of a zero γ happened
    to lie beyond 2 SE (its SE is noisy too) does not chase a relative SE it cannot reach."""
    return bool(before) or abs(est.value) <= 2 * est.se


@dataclass
class Precision:
    """Where a run of ``n`` units stands against its target ``rel_se`` (``next_round``): ``achieved`` is SE/|γ̂|
    (``target`` 'relative') or SE ('absolute'); ``next`` the unit count to run to, None when ``met`` or at the ``cap``;
    ``need`` the count the SE so far asks for (> cap: the target is out of reach within the cap)."""

    achieved: float
    met: bool
    n: int
    next: int | None
    need: int
    target: str
    rel_se: float


def next_round(est: Estimate, n: int, rel_se: float, cap: int, absolute: bool, step: int = 1) -> Precision:
    """The one "grow until the target SE" rule (probe, sweeps, ``estimate_gamma``): met where the achieved SE is at
    most ``rel_se``; else run to ``GROWTH`` × n × (achieved/rel_se)² units (SE ∝ 1/√n), rounded up to a multiple of
    ``step`` (whole chunks or init groups) and clipped to ``cap``; at the cap the run stops unmet. The rule reads only
    the estimate, never a clock, so a run is reproducible for its seed."""
    achieved = est.se if absolute else est.se / abs(est.value)
    target = "absolute" if absolute else "relative"
    if achieved <= rel_se:
        return Precision(achieved, True, n, None, n, target, rel_se)
    need = int(math.ceil(n * GROWTH * (achieved / rel_se) ** 2))
    need = step * -(-need // step)
    return Precision(achieved, False, n, None if n >= cap else min(cap, need), need, target, rel_se)


def grow(run_to, estimate, rel_se: float, start: int, cap: int, step: int = 1, progress=None,
         strict: bool = False, absolute: bool | None = None) -> tuple:
    """Run ``run_to(start)``, then rounds ``run_to(next)`` (``next_round``) until the target is met or the cap is
    reached; ``run_to(n)`` brings the run to n units in total (units 0 … n − 1, so the result for n units is that of
    one run of n), ``estimate()`` the Estimate of the units so far; the target mode switches one way
    (``absolute_target``); ``absolute=True``: ``rel_se`` is an absolute SE from the start. ``strict``: stop as soon as
    the SE asks for more than the cap (instead of running to it). ``progress(precision)`` after each round but the
    first. Returns (Estimate, Precision)."""
    run_to(start)
    n, est = start, estimate()
    while True:
        absolute = absolute_target(est, absolute)
        p = next_round(est, n, rel_se, cap, absolute, step)
        if progress is not None and n > start:
            progress(p)
        if p.next is None or (strict and p.need > cap):
            return est, p
        run_to(p.next)
        n, est = p.next, estimate()
