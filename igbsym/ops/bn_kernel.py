"""Train-mode BatchNorm over a dataset at infinite width: the kernel of its outputs, and of φ = x⁺ − s·x⁻ after it.

One unit's pre-activations over a mini-batch of n points are h ~ N(0, K) at infinite width (K the batch's block of
the layer kernel). BatchNorm1d in training mode without affine part maps them to y = √n x/‖x‖, x = P h,
P = I − 11ᵀ/n (torch's biased batch variance; its ε = 1e-5 is left out, a relative effect ε/σ²), so x ~ N(0, Σ),
Σ = P K P. For ψ(x) = x⁺ − s x⁻ (positively homogeneous of degree 1; s = 1 is the identity) ψ(y_a)ψ(y_b) =
n ψ(x_a)ψ(x_b)/‖x‖² and ψ(y_a) = √n ψ(x_a)/‖x‖. With 1/r = ∫ e^{−tr} dt, r^{−1/2} = π^{−1/2} ∫ t^{−1/2} e^{−tr} dt
and the Gaussian tilt E[g(x) e^{−t‖x‖²}] = det(I + 2tΣ)^{−1/2} E_{N(0, Σ_t)} g, Σ_t = Σ(I + 2tΣ)^{−1} (the integral
representation of Yang, Pennington, Rao, Sohl-Dickstein & Schoenholz, "A Mean Field Theory of Batch Normalization",
ICLR 2019, Sec. 3 and App. B):

    E[ψ(y_a)ψ(y_b)] = n ∫_0^∞ det(I + 2tΣ)^{−1/2} κ_ψ(Σ_t)_ab dt,
    E ψ(y_a)        = (n/π)^{1/2} ∫_0^∞ t^{−1/2} det(I + 2tΣ)^{−1/2} (1 − s) (Σ_t,aa / 2π)^{1/2} dt,

κ_ψ the arc-cosine kernel (``act.arccos_kernel``). One dimension of quadrature whatever n: the trapezoid rule in
u = log t, exponentially convergent (error ~ e^{−π²/h} at step h: the integrands are analytic and bounded in the
strip |Im u| < π/2, Σ_t's poles sitting at t = −1/(2λ)). Its error is estimated at run time by the same rule at
twice the step; a map whose estimate exceeds ``REL_ERR`` (relative to the largest second moment) raises instead of
returning a value. Measured: the i.i.d. limit K = I matches the bn family's canonical law to ~1e-15 relative
(tests/test_bn_kernel.py). Cost per batch: one eigendecomposition; for ψ = identity (the BatchNorm outputs' own
kernel) the integral acts on Σ's eigenvalues alone (κ(Σ_t) = Σ_t: n = 256 in ~0.03 s); otherwise ~370 nodes of n³
flops (n = 256: ~1 s; the full digits batch n = 1797: ~4 min on one core). Entries across two batches (two random
normalisers: a two-dimensional integral) have no map here (``norms.BatchNorm`` refuses them).
"""
from __future__ import annotations

import numpy as np

from ..errors import NumericalError
from .act import arccos_kernel
from .base import fail

STEP = 0.125           # trapezoid step in log t; the rule at twice the step (error ~ e^{−π²/(2·STEP)} ≈ 7e-18 of the
                       # integrand's scale in the strip) is the error estimate
SPAN = 90.0            # half-width of the log-t range around the peak at t = 1/n before trimming
TAIL = 1e-18           # nodes whose integrand bound is below TAIL × its peak are dropped (the tails decay
                       # geometrically at rate >= e^{−STEP/2} per node: their sum <= 9 × TAIL × peak)
REL_ERR = 1e-11        # the stated relative accuracy of every value (module docstring)
RANK_TOL = 1e-13       # eigenvalues of Σ below RANK_TOL × the largest are zero (Σ has the null vector 1)


def n_batches(n_data: int, batch) -> int:
    """The number of the probe's fixed batches: consecutive rows of ``batch`` (None: one batch of all rows); the
    last may be smaller, and a batch of one row is refused (torch: no batch variance of one value)."""
    b = n_data if batch is None else int(batch)
    if b < 2 or n_data % b == 1:
        fail(f"BatchNorm (training mode): {n_data} points in batches of {b} leave a last batch of one point (no "
             "batch variance); allowed: a batch size that leaves every batch at least 2 points")
    return -(-n_data // b)


def centred_spectrum(K: np.ndarray):
    """(λ, U): the nonzero eigenpairs of Σ = P K P, scaled so that Σ λ = n (BatchNorm is scale-invariant)."""
    n = K.shape[0]
    S = K - K.mean(0, keepdims=True)
    S = S - S.mean(1, keepdims=True)
    lam, U = np.linalg.eigh((S + S.T) / 2)
    top = lam.max()
    if not top > 0:
        fail("BatchNorm (training mode): the units are constant over a batch (centred batch kernel 0); allowed: "
             "a batch whose points differ")
    keep = lam > RANK_TOL * top
    lam, U = lam[keep], U[:, keep]
    return lam * (n / lam.sum()), U


def _nodes(lam: np.ndarray, n: int):
    """Nodes t = exp(u) on a u-grid of step STEP around the peak u = −log n (the integrands are ~ t e^{−nt} and
    t^{1/2} e^{−nt}: width O(1) in u); log det(I + 2tΣ)^{−1/2} at each; and the masks of the nodes where the
    second-moment and the mean integrand can matter (bounds: Σ_t,aa <= min(λ_max, 1/(2t))). Each mask covers an
    even number of steps from an even node, so the twice-step rule takes every other node."""
    u = -np.log(n) + np.arange(-SPAN, SPAN + STEP / 2, STEP)
    t = np.exp(u)
    logdet = -0.5 * np.log1p(2 * t[:, None] * lam[None, :]).sum(1)
    cap = np.log(np.minimum(lam.max(), 1 / (2 * t)))

    def mask(bound):
        idx = np.flatnonzero(bound > bound.max() + np.log(TAIL))
        out = np.zeros(len(t), bool)
        out[idx[0] - idx[0] % 2: idx[-1] + 1] = True
        return out
    return t, logdet, mask(u + logdet + cap), mask(0.5 * u + logdet + 0.5 * cap)


def _trapezoid(values: np.ndarray, mask: np.ndarray, axis: int = -1):
    """(the step-STEP rule, the twice-step rule) over the masked nodes of ``values`` (nodes on ``axis``)."""
    idx = np.flatnonzero(mask)
    fine = STEP * np.take(values, idx, axis=axis).sum(axis)
    coarse = 2 * STEP * np.take(values, idx[(idx - idx[0]) % 2 == 0], axis=axis).sum(axis)
    return fine, coarse


def _second_moments(U, shrink, diag, weight, mask, slope):
    """(the step-STEP rule, the twice-step rule) of Σ_nodes weight · κ_ψ(Σ_t) over the masked nodes: one n × n
    kernel per node (Σ_t = U diag(shrink) Uᵀ, its diagonal ``diag`` [n, T])."""
    n = U.shape[0]
    second, second_2h = np.zeros((n, n)), np.zeros((n, n))
    for j, i in enumerate(np.flatnonzero(mask)):
        St = (U * shrink[i]) @ U.T
        d = diag[:, i]
        f2 = (STEP * weight[i]) * arccos_kernel(St, d[:, None], d[None, :], slope)
        second += f2
        if j % 2 == 0:
            second_2h += 2 * f2
    return second, second_2h


def normalised_moments(K: np.ndarray, slope: float):
    """(E[ψ(y_a)ψ(y_b)] [n, n], E ψ(y_a) [n]) for the BatchNorm outputs y of one batch with pre-activation kernel K
    [n, n] and ψ = x⁺ − slope·x⁻ (module docstring); NumericalError if the quadrature's estimated error exceeds
    ``REL_ERR`` of the largest second moment."""
    K = np.asarray(K, float)
    n = K.shape[0]
    lam, U = centred_spectrum(K)
    t, logdet, m2, m1 = _nodes(lam, n)
    shrink = lam[None, :] / (1 + 2 * t[:, None] * lam[None, :])                    # [T, r]: Σ_t's eigenvalues
    diag = np.maximum((U * U) @ shrink.T, 0.0)                                       # [n, T]: Σ_t,aa
    w = np.exp(logdet)
    mean, mean_2h = _trapezoid(np.sqrt(n / np.pi) * np.sqrt(t) * w * (1 - slope) * np.sqrt(diag / (2 * np.pi)), m1)
    weight = n * t * w                                                               # dt = t du
    if slope == 1:                     # ψ = identity: κ(Σ_t) = Σ_t, so the integral acts on Σ's eigenvalues alone
        coef, coef_2h = _trapezoid(weight[:, None] * shrink, m2, axis=0)             # [r]
        second, second_2h = (U * coef) @ U.T, (U * coef_2h) @ U.T
    else:
        second, second_2h = _second_moments(U, shrink, diag, weight, m2, slope)
    scale = np.abs(np.diagonal(second)).max()
    err = max(np.abs(second - second_2h).max() / scale, np.abs(mean - mean_2h).max() / np.sqrt(scale))
    if not (np.isfinite(second).all() and np.isfinite(mean).all()) or err > REL_ERR:
        raise NumericalError(f"BatchNorm kernel: the quadrature's estimated relative error {err:.2g} exceeds "
                             f"{REL_ERR:g} (batch of {n}, centred rank {len(lam)})")
    return second, mean
