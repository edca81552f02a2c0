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
flops (n = 256: ~1 s; the full digits batch n = 1797: ~4 min on one core).

Entries across two batches (issue 46; batch 1: n1 points, x1 = P1 h1; batch 2: n2 points, x2 = P2 h2; (h1, h2)
jointly Gaussian, Σ = the joint covariance of (x1, x2)): ψ(y1_a)ψ(y2_b) = √(n1 n2) ψ(x1_a)ψ(x2_b)/(‖x1‖‖x2‖); the
r^{−1/2} representation for each norm and the tilt by e^{−s‖x1‖² − t‖x2‖²} (D = diag(s I_{n1}, t I_{n2}):
E[g e^{−xᵀDx}] = det(I + 2DΣ)^{−1/2} E_{N(0, Σ_st)} g, Σ_st = (Σ⁺ + 2D)⁻¹ = Σ(I + 2DΣ)⁻¹ on Σ's range) give

    E[ψ(y1_a)ψ(y2_b)] = (√(n1 n2)/π) ∫∫ (st)^{−1/2} det(I + 2DΣ)^{−1/2} κ_ψ(Σ_st)_ab ds dt.

Structure: tilting by s first (Σ11 = U Λ Uᵀ once) and then by t, det(I + 2DΣ) = Π(1 + 2sλ) Π(1 + 2tμ(s)) with μ(s),
V(s) the eigenpairs of Σ_s,22 = Σ22 − Yᵀ diag(2s/(1 + 2sλ)) Y (Y = UᵀΣ12), and with W = Σ_s,12 V
(Σ_s,12 = U diag(1/(1 + 2sλ)) Y): Σ_st,12 = W diag(1/(1 + 2tμ)) Vᵀ, Σ_st,11,aa = Σ_s,11,aa − Σ_j W_aj² 2t/(1 + 2tμ_j),
Σ_st,22,bb = Σ_j V_bj² μ_j/(1 + 2tμ_j): one n2 × n2 eigendecomposition per s node and n1·n2·rank(Σ_s,22) flops per
(s, t) node. The rule: the product trapezoid in (v, w) with log s = −log n1 + v + (sinh v)/4 (log t likewise): a
double-exponential map of the module's log-t grid, since here both tails decay only like s^{±1/2} (the weight
s^{−1/2} at s → 0; a batch of rank 1 at s → ∞). Its error is estimated by the rule at twice the step in both
variables; the step is halved (0.2 → 0.1 → 0.05) where the estimate exceeds ``CROSS_ERR`` (relative to the largest
second moment of the two batches), and the map raises beyond that (e.g. two identical batches of 2 points: rank 1,
the estimate 1e-8 at step 0.05). Measured against the rule at step 0.04 (random K): the estimate is conservative,
at step 0.2 3.6e-7 for an actual error 1.5e-9 (batches of 3 and 4 of rank 1), 4.2e-8 for 4e-14 (64 and 64); the
2-d map of identical batches equals the 1-d map to ~1e-15, independent batches give the product of the means, and
Monte Carlo of the normalised vectors agrees within 5 SE (tests/test_bn_kernel.py). Cost: ~3600 (s, t) nodes per
pair of 256-point batches, each one n1 × n2 arc-cosine kernel; measured (one core, a loaded machine): a pair of
256-point batches of a rank-64 kernel in 173 s (the step 0.2 estimate 4e-7 fails, 0.1 passes), so digits (1797
points in batches of 256: 8 batches, 28 pairs) ~1.3 h per BatchNorm layer. A dataset whose estimated count of
(node × entry) evaluations exceeds ``MAX_CROSS_WORK`` is refused with its cost in one line.
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
CROSS_ERR = 1e-9       # the stated relative accuracy of an entry across two batches (module docstring)
CROSS_STEPS = (0.2, 0.1, 0.05)   # the cross rule's steps in v (the next where the estimate at one fails)
CROSS_SPAN = 6.5       # |v| <= CROSS_SPAN: |log s + log n1| <= 89 (tails e^{−44} of the peak at rate 1/2)
CROSS_TAIL = 1e-16     # (s, t) nodes whose integrand bound is below CROSS_TAIL × its peak are dropped
MAX_CROSS_WORK = 2e10  # (s, t) nodes × n1 n2 entries over all batch pairs beyond which a dataset is refused (~4 h)
NODES_PER_ENTRY = 4000  # the work's estimate: (s, t) nodes per cross entry at steps 0.2 then 0.1 (n = 256: ~3600)
WORK_RATE = 1.5e6      # node-entry evaluations per second on one core (measured: a 256 × 256 pair in 173 s)


def n_batches(n_data: int, batch) -> int:
    """The number of the probe's fixed batches: consecutive rows of ``batch`` (None: one batch of all rows); the
    last may be smaller, and a batch of one row is refused (torch: no batch variance of one value)."""
    b = n_data if batch is None else int(batch)
    if b < 2 or n_data % b == 1:
        fail(f"BatchNorm (training mode): {n_data} points in batches of {b} leave a last batch of one point (no "
             "batch variance); allowed: a batch size that leaves every batch at least 2 points")
    return -(-n_data // b)


def centred(K: np.ndarray) -> np.ndarray:
    """P1 K P2: a kernel block with its rows' and columns' batch means removed (x = P h in each batch)."""
    S = K - K.mean(0, keepdims=True)
    return S - S.mean(1, keepdims=True)


def centred_spectrum(K: np.ndarray):
    """(λ, U): the nonzero eigenpairs of Σ = P K P, scaled so that Σ λ = n (BatchNorm is scale-invariant)."""
    n = K.shape[0]
    S = centred(K)
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


def _cross_nodes(lam: np.ndarray, n: int, h: float):
    """The cross rule's nodes in one variable (module docstring): (grid index k, t, log of the weight
    h·(du/dv)·t^{1/2} of ∫ t^{−1/2} g dt = ∫ e^{u/2} g du, log det(I + 2tΣ)^{−1/2}, log min(λ_max, 1/(2t)))."""
    k = np.arange(-int(round(CROSS_SPAN / h)), int(round(CROSS_SPAN / h)) + 1)
    v = k * h
    u = -np.log(n) + v + np.sinh(v) / 4
    t = np.exp(u)
    logdet = -0.5 * np.log1p(2 * t[:, None] * lam[None, :]).sum(1)
    return k, t, np.log(h * (1 + np.cosh(v) / 4)) + u / 2, logdet, np.log(np.minimum(lam.max(), 1 / (2 * t)))


def _cross_mask(nodes1, nodes2) -> np.ndarray:
    """The (s, t) nodes whose integrand bound (weights × min of the two batches' det factors, which bound the joint
    one, × √(Σ_st,aa Σ_st,bb) <= √(cap_a cap_b)) is within CROSS_TAIL of its peak."""
    _, _, w1, d1, c1 = nodes1
    _, _, w2, d2, c2 = nodes2
    b = (w1 + 0.5 * c1)[:, None] + (w2 + 0.5 * c2)[None, :] + np.minimum(d1[:, None], d2[None, :])
    return b > b.max() + np.log(CROSS_TAIL)


def _cross_rule(lam1, U1, Y, S22, slope, h):
    """(the step-h rule, the twice-step rule) of E[ψ(y1_a)ψ(y2_b)] [n1, n2] (module docstring); Σ11 = U1 diag(lam1)
    U1ᵀ, Y = U1ᵀΣ12, Σ22 = S22, scaled so that tr Σ11 = n1, tr Σ22 = n2."""
    n1, n2 = U1.shape[0], S22.shape[0]
    lam2 = np.linalg.eigvalsh(S22)
    nodes1, nodes2 = _cross_nodes(lam1, n1, h), _cross_nodes(lam2[lam2 > RANK_TOL * lam2.max()], n2, h)
    (k1, s, w1, det1, _), (k2, t, w2, _, _) = nodes1, nodes2
    mask = _cross_mask(nodes1, nodes2)
    fine, coarse = np.zeros((n1, n2)), np.zeros((n1, n2))
    for i in np.flatnonzero(mask.any(1)):
        f = 1 / (1 + 2 * s[i] * lam1)
        mu, V = np.linalg.eigh(S22 - Y.T @ (Y * (2 * s[i] * f)[:, None]))
        keep = mu > RANK_TOL * max(mu.max(), 0.0) if mu.max() > 0 else np.zeros(len(mu), bool)
        mu, V = mu[keep], V[:, keep]
        W = U1 @ ((Y * f[:, None]) @ V)                                         # Σ_s,12 V
        d11 = (U1 * U1) @ (lam1 * f)                                            # Σ_s,11,aa
        for j in np.array_split(np.flatnonzero(mask[i]), max(1, mask[i].sum() // 16)):
            g = 1 / (1 + 2 * t[j, None] * mu[None, :])                          # [J, r]
            da = np.maximum(d11[None, :] - (2 * t[j, None] * g) @ (W * W).T, 0.0)  # [J, n1]: Σ_st,11,aa
            db = np.maximum((mu * g) @ (V * V).T, 0.0)                          # [J, n2]: Σ_st,22,bb
            C = (W[None] * g[:, None, :]) @ V.T                                 # [J, n1, n2]: Σ_st,12
            wt = np.exp(w1[i] + w2[j] + det1[i] - 0.5 * np.log1p(2 * t[j, None] * mu[None, :]).sum(1))
            val = wt[:, None, None] * arccos_kernel(C, da[:, :, None], db[:, None, :], slope)
            fine += val.sum(0)
            if k1[i] % 2 == 0:
                coarse += 4 * val[k2[j] % 2 == 0].sum(0)
    pref = np.sqrt(n1 * n2) / np.pi
    return pref * fine, pref * coarse


def cross_moments(K11: np.ndarray, K12: np.ndarray, K22: np.ndarray, slope: float, scale: float) -> np.ndarray:
    """E[ψ(y1_a)ψ(y2_b)] [n1, n2] for two batches with joint pre-activation kernel [[K11, K12], [K12ᵀ, K22]] and
    ψ = x⁺ − slope·x⁻ (module docstring); NumericalError where the estimated error exceeds ``CROSS_ERR`` × ``scale``
    (the largest second moment of the two batches) at the finest step."""
    n1, n2 = K11.shape[0], K22.shape[0]
    lam1, U1 = centred_spectrum(K11)
    c1, S22 = np.trace(centred(K11)) / n1, centred(K22)
    c2 = np.trace(S22) / n2
    if not c2 > 0:
        fail("BatchNorm (training mode): the units are constant over a batch (centred batch kernel 0); allowed: "
             "a batch whose points differ")
    Y = U1.T @ centred(K12) / np.sqrt(c1 * c2)
    for h in CROSS_STEPS:
        fine, coarse = _cross_rule(lam1, U1, Y, (S22 + S22.T) / (2 * c2), slope, h)
        err = np.abs(fine - coarse).max() / scale
        if np.isfinite(fine).all() and err <= CROSS_ERR:
            return fine
    raise NumericalError(f"BatchNorm kernel across two batches: the quadrature's estimated relative error {err:.2g} "
                         f"exceeds {CROSS_ERR:g} at step {CROSS_STEPS[-1]} (batches of {n1} and {n2})")


def batch_slices(n_data: int, batch) -> list:
    """The probe's fixed batches (``n_batches``) as slices of consecutive rows."""
    m = n_batches(n_data, batch)
    b = n_data if batch is None else int(batch)
    return [slice(i * b, min(n_data, (i + 1) * b)) for i in range(m)]


def dataset_moments(K: np.ndarray, batch, slope: float):
    """(E[ψ(y_a)ψ(y_b)] [D, D], E ψ(y_a) [D]) over a dataset of D points in the probe's batches of ``batch``
    consecutive rows (``n_batches``): each batch's block and mean by ``normalised_moments``, each pair of batches'
    block by ``cross_moments``; refused in one line when the cross blocks' work exceeds ``MAX_CROSS_WORK``."""
    K = np.asarray(K, float)
    D = K.shape[0]
    parts = batch_slices(D, batch)
    work = NODES_PER_ENTRY * (D * D - sum((p.stop - p.start) ** 2 for p in parts)) / 2
    if work > MAX_CROSS_WORK:
        pairs = len(parts) * (len(parts) - 1) // 2
        fail(f"BatchNorm (training mode) over {D} points in batches of {batch}: the {pairs} batch pairs need "
             f"~{work:.1g} node-entry evaluations (~{work / WORK_RATE / 3600:.1f} h on one core), beyond "
             f"{MAX_CROSS_WORK:g}; allowed: fewer points or larger batches (one batch: batch size >= {D})")
    second, mean = np.zeros((D, D)), np.zeros(D)
    for p in parts:
        second[p, p], mean[p] = normalised_moments(K[p, p], slope)
    scale = np.abs(np.diagonal(second))
    for i, p in enumerate(parts):
        for q in parts[i + 1:]:
            block = cross_moments(K[p, p], K[p, q], K[q, q], slope, np.sqrt(scale[p].max() * scale[q].max()))
            second[p, q], second[q, p] = block, block.T
    return second, mean
