"""γ estimators beyond the plain moment estimator, one module for the simulator checks, the probe and sweeps.

γ = Var_W(μ_c) / E_W[Var_χ(O_c)] (Def. C.2 of norm-placement-bn-ln.txt; igb-initial-guessing-bias.txt Sec. 3).

Plain estimator (``igbsym.validation.stats.gamma_estimate``): per init the sample centre μ̂_c and unbiased data variance
s²_c of every output node; units a_i = mean_c(μ̂²_ic − s²_ic/D), b_i = mean_c s²_ic; γ̂ = ā/b̄ (delta-method SE).

Rao–Blackwellised estimator (this module). If the output is a Linear layer O_c(x) = v_c·h(x) + β_c whose weight
entries v_cj are i.i.d. with mean 0 and variance s², independent of the penultimate features h and of the bias β,
then conditioning on (h, β) and integrating the output weights out exactly gives

    E_v[μ̂_c² − s²_c/D | h, β] = s² (‖h̄‖² − tr Ĉ/D) + β_c²,      E_v[s²_c | h, β] = s² tr Ĉ,

with h̄ the data mean of h and Ĉ its unbiased data covariance (tr Ĉ = Σ_j of the unbiased per-unit variances).
The same 1/D correction as the plain estimator (E‖h̄‖² = ‖E_χ h‖² + tr C/D for i.i.d. data) makes the numerator
unbiased for ‖E_χ h‖². Units a_i = s²_i(‖h̄_i‖² − tr Ĉ_i/D) + mean_c β_ic², b_i = s²_i tr Ĉ_i target the same
ā/b̄ limit as the plain ones (E[plain a_i] = E[a_i], E[plain b_i] = E[b_i]) but average over the last layer's
weights instead of sampling them: the variance they remove is the output layer's (for C = 2 and a one-hidden-layer
ReLU net most of it). ``weight_var`` may be the known s² (a constant; it cancels when there is no bias) or each
init's empirical mean of v² (unbiased for s² and independent of h, so a and b stay unbiased).

Gaussian-data estimator 'gaussian-rb' (one hidden layer: Dense → Act → output Dense, data x ~ N(0, I_d)). Given
the first layer's weights W (columns w_j, any weight law), unit j's pre-activation w_j·x is exactly N(0, ‖w_j‖²),
so the POPULATION data mean and variance of h_j = φ(w_j·x) are one-dimensional Gaussian integrals
m_j = E φ(‖w_j‖Z), v_j = Var φ(‖w_j‖Z) (closed forms for relu, leaky_relu, identity, srelu; the library's
``activation.mean``/``activation.var`` otherwise). With the output layer integrated out as above, the exact
conditional expectations given W are E[μ_c² | W] = s² ‖m‖² and E[Var_χ O_c | W] = s² Σ_j v_j, so the units
a_i = ‖m‖², b_i = Σ_j v_j (s² cancels) have the same expectations over W as the plain units' limits (E[plain a_i]
= E[a_i] for i.i.d. Gaussian data: the plain a_i's 1/D correction makes it unbiased for the population ‖E_χ h‖²,
and E[plain b_i] = E[b_i]) — no data points at all, and neither the data's nor the output layer's noise. For a
positively homogeneous φ (relu, leaky_relu, identity) m_j² and v_j are both ∝ ‖w_j‖², so a_i/b_i is the same
constant for every init: the estimator is exact per init (zero variance). Its SE adds, in quadrature, the
kernels' stated relative error (``KERNEL_REL``) to the delta-method SE, so an exact-per-init value never reports
SE = 0 below its rounding.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from igbsym.errors import InputError

from .stats import Z95, Estimate, as_numpy, gamma_estimate, ratio_estimate

ESTIMATORS = ("plain", "rao-blackwell", "gaussian-rb")
KERNEL_REL = 3e-12     # relative error bound of the activation moments (igbsym.gauss.EXPECT_ERROR, twice, + rounding)
_WEIGHT_BUDGET = 1 << 22   # weight entries per sampled group of inits (32 MB in float64)


def rao_blackwell_units(h_mean, h_trace, n_data: int, weight_var=1.0, bias_sq=None):
    """Per-init units (a_i, b_i) of the Rao–Blackwellised γ̂ (module docstring).

    h_mean [I, n]: data mean of the penultimate features per init; h_trace [I]: trace of their unbiased data
    covariance; n_data: D; weight_var: s² of the output weights, a scalar or [I]; bias_sq: None (no bias) or
    [I] the mean over classes of the squared output biases β_c².
    """
    h_mean, h_trace = as_numpy(h_mean), as_numpy(h_trace).ravel()
    if h_mean.ndim != 2 or h_mean.shape[0] != h_trace.size:
        raise InputError(f"rao_blackwell: h_mean must be [inits, units] and h_trace [inits], got {h_mean.shape} "
                         f"and {h_trace.shape}")
    if not isinstance(n_data, (int, np.integer)) or n_data < 2:
        raise InputError(f"rao_blackwell: n_data must be an integer >= 2, got {n_data!r}")
    s2 = np.broadcast_to(as_numpy(weight_var).ravel() if np.ndim(weight_var) else float(weight_var), h_trace.shape)
    if (s2 <= 0).any() or not np.isfinite(s2).all():
        raise InputError("rao_blackwell: weight_var must be positive and finite")
    a = s2 * ((h_mean**2).sum(1) - h_trace / n_data)
    if bias_sq is not None:
        a = a + as_numpy(bias_sq).ravel()
    return a, s2 * h_trace


def gamma_rao_blackwell(h_mean, h_trace, n_data: int, weight_var=1.0, bias_sq=None,
                        method: str = "delta", seed: int = 0) -> Estimate:
    """Rao–Blackwellised γ̂ ± SE (delta method or bootstrap over inits, ``igbsym.validation.stats.ratio_estimate``)."""
    a, b = rao_blackwell_units(h_mean, h_trace, n_data, weight_var, bias_sq)
    est = ratio_estimate(a, b, method, seed=seed)
    est.method = f"rao-blackwell/{est.method}"
    return est


def penultimate(res):
    """The NodeStats of the features feeding a SimResult's output layer (last stage of the last hidden layer)."""
    if not res.layers:
        raise InputError("rao_blackwell: the simulation must record layer statistics of the last hidden stage "
                         "(simulate(..., layer_stats=True or (last stage,)))")
    last = res.layers[-1]
    from .simulate import stages
    stage = stages(res.spec)[-1]
    if stage not in last:
        raise InputError(f"rao_blackwell: simulate must record the last hidden stage {stage!r} (layer_stats)")
    return last[stage]


def gamma_of_sim(res, estimator: str = "rao-blackwell", method: str = "delta") -> Estimate:
    """γ̂ of a ``simulate`` run's outputs with the chosen estimator ('plain' | 'rao-blackwell' | 'gaussian-rb').

    The simulator's output layer has i.i.d. zero-mean weights of variance σ_out²/n (and, with sigma_b, a
    N(0, σ_b²) bias: E b² = σ_b² joins the numerator), so Rao–Blackwellisation applies to every NetSpec; it needs
    the last hidden stage's statistics (``layer_stats``). 'gaussian-rb' uses the run's
    first-layer weights only (regenerated from its seed: init i is seeded by (seed, i) alone) and needs a
    one-hidden-layer spec run on Gaussian data (``gaussian_rb_reason``)."""
    if estimator == "plain":
        return gamma_estimate(res.mu, res.var, res.n_data, method)
    if estimator == "gaussian-rb":
        if res.data_law != "gaussian":
            raise InputError("gaussian-rb: the simulation must run on the default Gaussian data (data_law='gaussian', "
                             "no data tensor)")
        return gamma_gaussian_rb(res.spec, res.n_inits, res.seed, res.first_init, method)
    if estimator != "rao-blackwell":
        raise InputError(f"unknown estimator {estimator!r}; allowed: {', '.join(ESTIMATORS)}")
    st = penultimate(res)
    out = res.spec.output()
    if out.unbiased:
        return gamma_rao_blackwell(st.mean, st.var.sum(1), res.n_data, method=method)
    bias_sq = np.full(res.n_inits, float(out.sigma_b) ** 2)      # E b_c² of the readout's N(0, σ_b²) bias
    return gamma_rao_blackwell(st.mean, st.var.sum(1), res.n_data, float(out.sigma_w) ** 2 / st.mean.shape[1],
                               bias_sq, method=method)


# --------------------------------------------------------------------------------------------- gaussian-rb
def gaussian_rb_reason(spec) -> str | None:
    """Why 'gaussian-rb' does not apply to ``spec`` (None when it does): it needs Dense → Act → output Dense, no
    bias."""
    ops = spec.ops
    if len(ops) != 2 or not ops[0].starts_layer or not ops[1].elementwise:
        return ("gaussian-rb needs one hidden layer Dense → activation (no norm, no pool) before the output "
                "layer; deeper nets: simulate(..., shortcut='gaussian') with estimator 'rao-blackwell'")
    if any(not op.unbiased for op in spec.all_ops() if op.starts_layer):
        return "gaussian-rb needs bias-free Dense layers (its units use the weights' column norms only)"
    return None


def gaussian_unit_moments(act, sigma):
    """Mean and variance of φ(σZ), Z ~ N(0, 1), elementwise over ``sigma`` (an ``igbsym.ops.Act`` φ): the forms
    activation.mean / activation.var (srelu: ReLU's, less the op's fixed shift)."""
    from igbsym import registry
    sigma = np.asarray(sigma, float)
    srelu = act.name == "srelu"
    kw = dict(activation="relu" if srelu else act.name, sigma=sigma, a=float(act.a))
    mean, var = registry.get("activation.mean").numpy(**kw), registry.get("activation.var").numpy(**kw)
    return mean - (float(act.shift_value("numpy")) if srelu else 0.0), var


def gaussian_rb_units(spec, first_weights):
    """Per-init units (a_i, b_i) = (‖m‖², Σ_j v_j) of 'gaussian-rb' (module docstring); first_weights [I, d, n]."""
    reason = gaussian_rb_reason(spec)
    if reason:
        raise InputError(reason)
    w = as_numpy(first_weights)
    if w.ndim != 3 or w.shape[1:] != (spec.d_in, spec.widths[0]):
        raise InputError(f"gaussian-rb: first_weights must be [inits, {spec.d_in}, {spec.widths[0]}], got {w.shape}")
    mean, var = gaussian_unit_moments(spec.ops[1], np.sqrt((w * w).sum(1)))
    return (mean**2).sum(1), var.sum(1)


def _with_kernel_floor(est: Estimate) -> Estimate:
    se = math.hypot(est.se, KERNEL_REL * abs(est.value))
    est.se, est.lo, est.hi = se, est.value - Z95 * se, est.value + Z95 * se
    return est


def gamma_gaussian_rb(spec, n_inits: int, seed: int = 0, first_init: int = 0, method: str = "delta",
                      progress=None) -> Estimate:
    """'gaussian-rb' γ̂ ± SE straight from a Spec: inits first_init … first_init + n_inits − 1 (the weights
    ``simulate`` would draw for them), no data. The estimand is γ of the spec on N(0, I_d) data."""
    from .simulate import sample_weights
    if not isinstance(n_inits, (int, np.integer)) or n_inits < 2:
        raise InputError(f"gaussian-rb: n_inits must be an integer >= 2, got {n_inits!r}")
    reason = gaussian_rb_reason(spec)
    if reason:
        raise InputError(reason)
    group = max(1, _WEIGHT_BUDGET // (spec.d_in * spec.widths[0]))
    parts = []
    for start in range(first_init, first_init + n_inits, group):
        inits = range(start, min(first_init + n_inits, start + group))
        parts.append(gaussian_rb_units(spec, sample_weights(spec, inits, seed, "cpu", torch.float64)[0]))
        if progress is not None:
            progress((inits.stop - first_init) / n_inits)
    a, b = (np.concatenate(v) for v in zip(*parts))
    est = _with_kernel_floor(ratio_estimate(a, b, method, seed=seed))
    est.method = f"gaussian-rb/{est.method}"
    return est


def paired_difference(units1, units2) -> Estimate:
    """r1 − r2 for two ratio estimators ā/b̄ on the SAME inits (paired units (a, b) each), delta-method SE of the
    difference: the linearised per-init terms (a1 − r1 b1)/b̄1 − (a2 − r2 b2)/b̄2 keep their correlation."""
    (a1, b1), (a2, b2) = [tuple(as_numpy(v).ravel() for v in u) for u in (units1, units2)]
    n = a1.size
    if n < 2 or not a1.size == b1.size == a2.size == b2.size:
        raise InputError(f"paired_difference needs paired arrays of >= 2 inits, got {a1.size}, {a2.size}")
    r1, r2 = a1.mean() / b1.mean(), a2.mean() / b2.mean()
    u = (a1 - r1 * b1) / b1.mean() - (a2 - r2 * b2) / b2.mean()
    d, se = float(r1 - r2), float(u.std(ddof=1) / np.sqrt(n))
    return Estimate(d, se, d - Z95 * se, d + Z95 * se, "paired delta", n)


# --------------------------------------------------------------------------------------------- sweep units
def unit_fields(depth: int) -> list:
    """Columns of the per-init units: G0, then (a_l, b_l) for l = 1..L (l = L is the output layer)."""
    return ["g0"] + [f"{s}{l}" for l in range(1, depth + 1) for s in ("a", "b")]


def moment_units(res) -> np.ndarray:
    """Per-init units of the plain moment estimator (igbsym.validation.stats.gamma_units) for every layer: γ after
    hidden layer l < L from the pre-activations of layer l + 1, the output for l = L. [n_inits, 1 + 2L] float64."""
    from .stats import gamma_units
    cols = [res.g0.double().numpy()]
    stats = [res.layers[l]["pre"] for l in range(1, len(res.spec.widths))] + [res.out]
    for st in stats:
        a, b = gamma_units(st.mean, st.var, res.n_data)
        cols += [a, b]
    return np.stack(cols, axis=1)


ESTIMATORS = {"moment": moment_units}   # name -> per-init units of a SimResult (the sweep grid key ``estimator``)
