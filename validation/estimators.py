"""γ estimators beyond the plain moment estimator, one module for the simulator checks, the probe and sweeps.

γ = Var_W(μ_c) / E_W[Var_χ(O_c)] (Def. C.2 of norm-placement-bn-ln.txt; igb-initial-guessing-bias.txt Sec. 3).

Plain estimator (``validation.stats.gamma_estimate``): per init the sample centre μ̂_c and unbiased data variance
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
"""
from __future__ import annotations

import numpy as np

from igbsym.errors import InputError

from .stats import Z95, Estimate, _np, gamma_estimate, ratio_estimate

ESTIMATORS = ("plain", "rao-blackwell")


def rao_blackwell_units(h_mean, h_trace, n_data: int, weight_var=1.0, bias_sq=None):
    """Per-init units (a_i, b_i) of the Rao–Blackwellised γ̂ (module docstring).

    h_mean [I, n]: data mean of the penultimate features per init; h_trace [I]: trace of their unbiased data
    covariance; n_data: D; weight_var: s² of the output weights, a scalar or [I]; bias_sq: None (no bias) or
    [I] the mean over classes of the squared output biases β_c².
    """
    h_mean, h_trace = _np(h_mean), _np(h_trace).ravel()
    if h_mean.ndim != 2 or h_mean.shape[0] != h_trace.size:
        raise InputError(f"rao_blackwell: h_mean must be [inits, units] and h_trace [inits], got {h_mean.shape} "
                         f"and {h_trace.shape}")
    if not isinstance(n_data, (int, np.integer)) or n_data < 2:
        raise InputError(f"rao_blackwell: n_data must be an integer >= 2, got {n_data!r}")
    s2 = np.broadcast_to(_np(weight_var).ravel() if np.ndim(weight_var) else float(weight_var), h_trace.shape)
    if (s2 <= 0).any() or not np.isfinite(s2).all():
        raise InputError("rao_blackwell: weight_var must be positive and finite")
    a = s2 * ((h_mean**2).sum(1) - h_trace / n_data)
    if bias_sq is not None:
        a = a + _np(bias_sq).ravel()
    return a, s2 * h_trace


def gamma_rao_blackwell(h_mean, h_trace, n_data: int, weight_var=1.0, bias_sq=None,
                        method: str = "delta", seed: int = 0) -> Estimate:
    """Rao–Blackwellised γ̂ ± SE (delta method or bootstrap over inits, ``validation.stats.ratio_estimate``)."""
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
    """γ̂ of a ``simulate`` run's outputs with the chosen estimator ('plain' | 'rao-blackwell').

    The simulator's output layer is bias-free with i.i.d. zero-mean weights, so Rao–Blackwellisation applies to
    every NetSpec; it needs the last hidden stage's statistics (``layer_stats``)."""
    if estimator == "plain":
        return gamma_estimate(res.mu, res.var, res.n_data, method)
    if estimator != "rao-blackwell":
        raise InputError(f"unknown estimator {estimator!r}; allowed: {', '.join(ESTIMATORS)}")
    st = penultimate(res)
    return gamma_rao_blackwell(st.mean, st.var.sum(1), res.n_data, method=method)


def paired_difference(units1, units2) -> Estimate:
    """r1 − r2 for two ratio estimators ā/b̄ on the SAME inits (paired units (a, b) each), delta-method SE of the
    difference: the linearised per-init terms (a1 − r1 b1)/b̄1 − (a2 − r2 b2)/b̄2 keep their correlation."""
    (a1, b1), (a2, b2) = [tuple(_np(v).ravel() for v in u) for u in (units1, units2)]
    n = a1.size
    if n < 2 or not a1.size == b1.size == a2.size == b2.size:
        raise InputError(f"paired_difference needs paired arrays of >= 2 inits, got {a1.size}, {a2.size}")
    r1, r2 = a1.mean() / b1.mean(), a2.mean() / b2.mean()
    u = (a1 - r1 * b1) / b1.mean() - (a2 - r2 * b2) / b2.mean()
    d, se = float(r1 - r2), float(u.std(ddof=1) / np.sqrt(n))
    return Estimate(d, se, d - Z95 * se, d + Z95 * se, "paired delta", n)
