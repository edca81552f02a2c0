"""The IGB law of a network on a fixed dataset at infinite width: γ in both conventions and the law of the class
fractions, from the output kernel K (igb-initial-guessing-bias.txt Secs. 3–4, App. C; new on data: derivations/nngp.py).

The readout O_c(x) = v_c·h(x) (+ β_c) with i.i.d. zero-mean weights makes (O_c(x_1), …, O_c(x_D)) a centred GP with
kernel K over the data, independent over c. With T = (1/D) Σ_a K_aa, M = (1/D²) Σ_ab K_ab and the off-diagonal mean
M_off = Σ_{a≠b} K_ab/(D(D − 1)):
- the dataset as the population: Var_W(μ_c) = M, E_W Var_χ(O_c) = T − M, so γ_pop = M/(T − M);
- the estimand of the project's estimators (validation/stats.py, validation/estimators.py: the unbiased data variance
  and the 1/D correction μ̂² − s²/D, plain and Rao–Blackwellised alike): E[μ̂² − s²/D] = M − (T − M)/(D − 1) and
  E s² = D(T − M)/(D − 1), whose ratio is γ_D = M_off/(T − M_off) = γ_pop − (1 + γ_pop)/D exactly (the self-pairs
  a = b leave the numerator); this is what ``igbsym probe`` measures. For i.i.d. data both tend to the same limit as
  D → ∞.

The law of the class fractions: G_c = #{a : O_c(x_a) = max_k O_k(x_a)}/D, sampled exactly in law from the GP
(eigendecomposition K = V Λ Vᵀ, f = V √Λ z; a low-rank kernel, e.g. of a linear net, keeps its nonzero part). The
eigenvalues below the kept rank r are dropped when the resulting bias bound, (1/D) Σ_a arccos(√(1 − ε_a/K_aa))/π
(ε_a the dropped variance at point a: the probability that the dropped part flips the sign of point a's value), is
below ``BIAS_TOL``; draws are formed in float32 (a sign flips only where |f| < 1e-6 of its sd: probability < 1e-6
per point). Summaries carry Monte Carlo standard errors.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError, NumericalError

BIAS_TOL = 1e-5         # bound on E|G - G_truncated| from dropping small eigenvalues
CHUNK = 1 << 24         # entries of one float32 draw block [D, n]
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


def kernel_means(K: np.ndarray) -> tuple:
    """(T, M, M_off) of a D × D kernel (module docstring)."""
    K = np.asarray(K, float)
    D = K.shape[0]
    T = float(np.trace(K)) / D
    S = float(K.sum())
    return T, S / D**2, (S - D * T) / (D * (D - 1))


def gamma_population(T: float, M: float) -> float:
    """γ with the dataset as the population: M/(T − M)."""
    if not T - M > 0:
        raise NumericalError(f"the outputs do not vary over the data (T - M = {T - M:.3g}): gamma is undefined")
    return M / (T - M)


def gamma_estimand(T: float, M_off: float) -> float:
    """The estimand of the probe's γ̂ (plain or Rao–Blackwellised): M_off/(T − M_off)."""
    if not T - M_off > 0:
        raise NumericalError(f"the outputs do not vary over the data (T - M_off = {T - M_off:.3g}): gamma is undefined")
    return M_off / (T - M_off)


@dataclass
class Law:
    """Monte Carlo summary of the class fractions under the GP (module docstring); ``draws`` [n, C] the sampled
    fractions G_c (kept for KS comparisons)."""

    classes: int
    n_draws: int
    rank: int
    bias_bound: float
    summary: dict
    draws: np.ndarray = field(repr=False, default=None)

    def to_dict(self) -> dict:
        return dict(classes=self.classes, n_draws=self.n_draws, rank=self.rank, truncation_bias_bound=self.bias_bound,
                    **self.summary)


def factor(K: np.ndarray, tol: float = BIAS_TOL) -> tuple:
    """(L [D, r], bias bound): K ≈ L Lᵀ from the top r eigenpairs, r the smallest rank whose sign-flip bias bound
    is <= ``tol`` (module docstring). NumericalError if K is not positive semidefinite to rounding."""
    K = np.asarray(K, float)
    lam, V = np.linalg.eigh((K + K.T) / 2)
    top = float(lam[-1])
    if not top > 0:
        raise NumericalError("the output kernel is zero: the outputs do not vary")
    if lam[0] < -1e-8 * top * K.shape[0]:
        raise NumericalError(f"the output kernel is not positive semidefinite (eigenvalue {lam[0]:.3g} against "
                             f"{top:.3g})")
    lam = np.clip(lam, 0.0, None)[::-1]
    V = V[:, ::-1]
    diag = np.maximum(np.diag(K), 1e-300)
    tail = np.cumsum(((V * V) * lam)[:, ::-1], axis=1)[:, ::-1]     # tail[:, r] = variance left out beyond rank r
    tail = np.concatenate([tail, np.zeros((K.shape[0], 1))], axis=1)
    def bound(r):
        frac = np.clip(tail[:, r] / diag, 0.0, 1.0)
        return float(np.mean(np.arccos(np.sqrt(1 - frac))) / np.pi)
    lo, hi = 1, max(1, int((lam > 0).sum()))          # bound(hi) = 0: the nonzero eigenvalues are all kept
    while lo < hi:                                     # the bound decreases with r: the smallest r within tol
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if bound(mid) <= tol else (mid + 1, hi)
    return V[:, :lo] * np.sqrt(lam[:lo]), bound(lo)


def _se(x) -> float:
    x = np.asarray(x, float)
    return float(x.std(ddof=1) / math.sqrt(x.size))


def sample(K: np.ndarray, n_draws: int = 100000, classes: int = 2, seed: int = 0, tol: float = BIAS_TOL) -> Law:
    """The law of (G_1 … G_C) on the data of kernel K (module docstring): summaries with SEs."""
    if not (isinstance(classes, (int, np.integer)) and classes >= 2):
        raise InputError(f"classes must be an integer >= 2, got {classes!r}")
    if not (isinstance(n_draws, (int, np.integer)) and n_draws >= 2):
        raise InputError(f"n_draws must be an integer >= 2, got {n_draws!r}")
    L, bound = factor(K, tol)
    D, r = L.shape
    L32 = L.astype(np.float32)
    rng = np.random.default_rng(seed)
    # two classes: argmax is the sign of O_0 − O_1, a GP with kernel 2K (one field suffices)
    fields = 1 if classes == 2 else classes
    per = max(1, CHUNK // (D * fields))
    frac = np.empty((n_draws, classes))
    for lo in range(0, n_draws, per):
        m = min(per, n_draws - lo)
        z = rng.standard_normal((fields, r, m), dtype=np.float32)
        f = np.einsum("dr,crm->cdm", L32, z, optimize=True)                 # [fields, D, m]
        if classes == 2:
            g0 = (f[0] > 0).mean(0)
            frac[lo:lo + m, 0], frac[lo:lo + m, 1] = g0, 1 - g0
        else:
            win = f.argmax(0)                                               # [D, m]
            for c in range(classes):
                frac[lo:lo + m, c] = (win == c).mean(0)
    g0, mx = frac[:, 0], frac.max(1)
    out = (g0 < 0.1) | (g0 > 0.9)
    empty = (frac == 0).sum(1)
    summary = {"mean_G0": float(g0.mean()), "mean_G0_se": _se(g0), "sd_G0": float(g0.std(ddof=1)),
               "p_outside_0.1_0.9": float(out.mean()), "p_outside_0.1_0.9_se": _se(out),
               "max_fraction": float(mx.mean()), "max_fraction_se": _se(mx),
               "expected_empty_classes": float(empty.mean()), "expected_empty_classes_se": _se(empty)}
    summary.update({f"q{int(100 * p):02d}": float(np.quantile(g0, p)) for p in QUANTILES})
    return Law(classes, n_draws, r, bound, summary, frac)
