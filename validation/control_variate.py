"""The finite-width theory as a control variate for γ̂ (issue 28, "Speed").

Estimand: γ of an MLP (Dense → Act blocks, no norm, no bias, Gaussian weights) on N(0, I_d) data, the ratio of
expectations the Rao–Blackwellised units target (validation/estimators.py): with the output layer integrated out,
per init a = Ĝ_off, b = Ĝ_diag − Ĝ_off of the last hidden layer's empirical kernel Ĝ = h hᵀ/N over the init's P
fresh points (Ĝ_off the mean over pairs a ≠ b, Ĝ_diag over the points: the RB units up to the constant N s²).

Control variates with EXACT expectation 0. Given layer l − 1, the N_l pre-activations of layer l are i.i.d.
Gaussian processes over the data with kernel K = σ_w² Ĝ^(l−1), exactly (the model of igbsym.engine.finite;
Roberts, Yaida & Hanin, *The Principles of Deep Learning Theory*, ch. 4). So per layer the relative increments

    D_l = (S_l − E[S_l | F_{l−1}]) / E[Ĝ_diag^(l) | F_{l−1}],   S_l = (Ĝ_diag^(l), Ĝ_off^(l)),

with the conditional expectations by the op's own kernel map on the previous layer's empirical kernel
(``Act.kernel_entry``), are martingale differences: E[D_l | F_{l−1}] = 0 at every width. Layer 1 with the
Gaussian shortcut conditions on W₁: E = (1/N) Σ_j E φ(‖w_j‖Z)² and (1/N) Σ_j (E φ(‖w_j‖Z))² (the 'gaussian-rb'
moments). The products D_l^c · (D_1 + … + D_{l−1})^{c'} (second order, c, c' ∈ {diag, off}) have mean 0 too (the
second factor is F_{l−1}-measurable): they capture the ½H:Σ curvature that makes the finite-width shift.
Quadrature φ (GELU, SiLU, …) takes S_l over a fixed subset (the first SUB_POINTS points, SUB_POINTS/2 disjoint
pairs; layer 1 over the first SUB_UNITS units) to bound the cost of the 2-D kernel quadrature; closed-form φ
((leaky) ReLU, identity) uses every point and pair. Weight norms ‖W_l‖²/(σ_w² N_l) − 1 (exact mean 0) were tried
and explain nothing beyond the D_l (measured: R² unchanged), so they are not used.

Estimator: adjusted units a'_i = a_i − βᵀX_i (b_i kept), β the least squares of the linearised ratio terms
a − r b on X fitted on an INDEPENDENT pilot (other inits; or cross-fitted over folds, ``gamma_cv_crossfit``):
E[a'] = E[a] exactly, so γ̂_cv = ā'/b̄ keeps only the ratio estimator's O(1/I) bias; SE by the delta method over
the adjusted units (``igbsym.validation.stats.ratio_estimate``). The variance removed is the explained fraction
R² of the linearised terms (``explained``). Forward in float32 (``dtype``), kernels and CVs in float64: rounding
moves a CV's mean by ~1e-7 relative, far below any SE here. The O(1/N) theory (engine/finite.py) would give
E[Ĝ^(l)] itself to O(1/N²), but centring on it would bias γ̂ by β·O(1/N²): only the exact conditional
expectations above are used.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from igbsym import activations as acts
from igbsym import gauss
from igbsym.errors import InputError, NumericalError

from .estimators import gaussian_unit_moments
from .simulate import forward, fresh_rows, sample_weights
from .stats import Estimate, ratio_estimate

_GROUP_BUDGET = 1 << 22     # elements of one [inits, P, N] activation tensor per group


def cv_reason(spec) -> str | None:
    """Why the CV estimator does not apply to ``spec`` (None when it does): Dense → Act blocks, no bias."""
    ops = spec.ops
    alternating = all(o.starts_layer == (k % 2 == 0) and o.elementwise == (k % 2 == 1) for k, o in enumerate(ops))
    if len(ops) < 2 or len(ops) % 2 or not alternating:
        return "control variates need an MLP of Dense → activation blocks (no norm, no pool)"
    if any(not o.unbiased for o in spec.all_ops() if o.starts_layer):
        return "control variates need bias-free Dense layers"
    if spec.weight_law != "normal":
        return f"control variates need Gaussian weights (weight_law 'normal'), got {spec.weight_law!r}"
    return None


SUB_POINTS = 16     # quadrature φ: the CVs' diagonal over the first 16 points, off-diagonal over 8 disjoint pairs
SUB_UNITS = 32      # quadrature φ: layer 1's CV (shortcut) over the first 32 units


def _pair_index(P, closed):
    """(diag points, pair rows, pair columns) the CVs use: all of them for closed-form φ, else a fixed subset."""
    if closed:
        ia, ib = np.triu_indices(P, 1)
        return torch.arange(P), torch.from_numpy(ia), torch.from_numpy(ib)
    m = min(P, SUB_POINTS)
    ia = np.arange(0, m - 1, 2)
    return torch.arange(m), torch.from_numpy(ia), torch.from_numpy(ia + 1)


def _unit_moments(act, sigma):
    """(E φ(σZ), E φ(σZ)²) elementwise: the closed forms (``gaussian_unit_moments``) for closed-form φ, else one
    vectorised quadrature each (``igbsym.gauss.expect``; the registry's per-point route is ~100× slower here)."""
    if act.closed_form:
        m, v = gaussian_unit_moments(act, sigma)
        return m, v + m * m
    phi, a = acts.get(act.name).numpy, float(act.a)
    f = lambda u: phi(u, a, 0.0)
    return gauss.expect(f, sigma), gauss.expect(lambda u: f(u) ** 2, sigma)


def _cond(act, K, idx):
    """E[(Ĝ_diag, Ĝ_off) over the CV's points and pairs | K] for φ of N(0, K) units, K [I, P, P] (float64)."""
    pts, ia, ib = idx
    Kn = K.numpy()
    diag = np.diagonal(Kn, axis1=1, axis2=2)
    dd = diag[:, pts.numpy()]
    d = act.kernel_entry(dd, dd, dd).mean(1)
    o = act.kernel_entry(Kn[:, ia, ib], diag[:, ia], diag[:, ib]).mean(1)
    return d, o


def units_and_cvs(spec, inits, n_data, seed=0, device="cpu", dtype=torch.float32):
    """Per init (a [I], b [I], X [I, 6L − 4]) for inits ``inits`` (each its own n_data fresh Gaussian points; the
    Gaussian shortcut for layer 1 when N_1 <= d_in). a, b: the last hidden layer's RB units (module docstring);
    X: the exact-zero-mean control variates (``with_products``)."""
    reason = cv_reason(spec)
    if reason:
        raise InputError(reason)
    if not isinstance(n_data, (int, np.integer)) or n_data < 2:
        raise InputError(f"control variates: n_data must be an integer >= 2, got {n_data!r}")
    inits = list(inits)
    acts_ = [o for o in spec.ops if o.elementwise]
    dens = [o for o in spec.ops if o.starts_layer]
    act = acts_[0]
    closed = bool(act.closed_form)
    widths = list(spec.widths)
    shortcut = widths[0] <= spec.d_in
    idx = _pair_index(n_data, closed)
    _, full_i, full_j = _pair_index(n_data, True)
    units = slice(None) if closed else slice(0, SUB_UNITS)
    group = max(1, _GROUP_BUDGET // (n_data * max(spec.d_in, *widths)))
    A, B, X = [], [], []
    for g in range(0, len(inits), group):
        ids = inits[g:g + group]
        W = sample_weights(spec, ids, seed, device, dtype)
        x = fresh_rows(widths[0] if shortcut else spec.d_in, "gaussian", seed, ids, 0, n_data, device, dtype)
        if shortcut:      # chol(W₁ᵀW₁) in float64 (W₁ᵀW₁ is near-singular when N_1 = d_in is small)
            w0 = W[0].double()
            first = torch.bmm(x, torch.linalg.cholesky(w0.transpose(1, 2) @ w0).transpose(1, 2).to(dtype))
        else:
            first = None
        feats, prev = [], {}
        if shortcut:
            norms = np.sqrt((W[0][:, :, units].double() ** 2).sum(1).numpy())    # [I, n] row norms ‖w_j‖
            m, s2 = _unit_moments(act, norms)
            prev["cond"] = (s2.mean(1), (m * m).mean(1))                # exact given W₁ (independent points)
        else:
            prev["K"] = float(dens[0].sigma_w) ** 2 * (x @ x.transpose(1, 2)).double() / spec.d_in
        last = {}

        def on_stage(layer, stage, h):
            if stage != "act":
                return
            G = (h @ h.transpose(1, 2)).double() / h.shape[-1]
            if "cond" in prev:
                cd, co = prev.pop("cond")
                hs = h[:, :, units]
                Gs = (hs @ hs.transpose(1, 2)).double() / hs.shape[-1]
                dg = torch.diagonal(Gs, dim1=1, dim2=2).mean(1).numpy()
                off = Gs[:, full_i, full_j].mean(1).numpy()
            else:
                cd, co = _cond(act, prev.pop("K"), idx)
                dg = torch.diagonal(G, dim1=1, dim2=2)[:, idx[0]].mean(1).numpy()
                off = G[:, idx[1], idx[2]].mean(1).numpy()
            feats.append(np.stack([(dg - cd) / cd, (off - co) / cd], 1))
            if layer + 1 < len(widths):
                prev["K"] = float(dens[layer + 1].sigma_w) ** 2 * G
            last["G"] = G

        with torch.no_grad():
            forward(spec, W, x, on_stage, first)
        G = last["G"]
        off_all = G[:, full_i, full_j].mean(1).numpy()
        dg = torch.diagonal(G, dim1=1, dim2=2).mean(1).numpy()
        A.append(off_all)
        B.append(dg - off_all)
        X.append(np.stack(feats, 1))
    a, b, X = np.concatenate(A), np.concatenate(B), with_products(np.concatenate(X))
    if not (np.isfinite(a).all() and np.isfinite(b).all() and np.isfinite(X).all()):
        raise NumericalError("control variates: a non-finite unit (the net's activations left the double range)")
    return a, b, X


def with_products(D):
    """[I, L, 2] increments D_l → the CVs [I, 6L − 4]: every D_l^c, then D_l^c · (D_1 + … + D_{l−1})^{c'}."""
    S = np.cumsum(D, 1)
    prods = [D[:, l, c] * S[:, l - 1, c2] for l in range(1, D.shape[1]) for c in range(2) for c2 in range(2)]
    return np.concatenate([D.reshape(len(D), -1)] + ([np.stack(prods, 1)] if prods else []), 1)


def fit(a, b, X, ridge=1e-8):
    """β (in units of a): least squares of the linearised ratio terms a − r b (r = ā/b̄ of these units) on the CVs
    X (centred at their exact mean 0; a tiny ridge on the standardised columns for collinear CVs)."""
    a, b, X = (np.asarray(v, float) for v in (a, b, X))
    if X.ndim != 2 or X.shape[0] != a.size or a.size != b.size:
        raise InputError(f"control variates: X must be [inits, k] paired with a, b; got {X.shape}, {a.size}")
    if a.size <= X.shape[1] + 1:
        raise InputError(f"control variates: the pilot needs more inits ({a.size}) than CVs + 1 ({X.shape[1] + 1})")
    u = a - a.mean() / b.mean() * b
    Xc = X - X.mean(0)
    scale = np.sqrt((Xc * Xc).mean(0)) + 1e-300
    Z = Xc / scale
    return np.linalg.solve(Z.T @ Z + ridge * a.size * np.eye(Z.shape[1]), Z.T @ (u - u.mean())) / scale


def explained(a, b, X, beta):
    """Fraction of the linearised ratio terms' variance the CVs remove on these units: 1 − Var(u − Xβ)/Var(u)."""
    a, b, X = (np.asarray(v, float) for v in (a, b, X))
    u = a - a.mean() / b.mean() * b
    return float(1 - np.var(u - X @ beta, ddof=1) / np.var(u, ddof=1))


def gamma_cv(a, b, X, beta) -> Estimate:
    """γ̂_cv ± SE from the adjusted units a'_i = a_i − βᵀX_i (β from an independent pilot: E[a'] = E[a] exactly)."""
    a, b, X = (np.asarray(v, float) for v in (a, b, X))
    beta = np.asarray(beta, float)
    if X.shape != (a.size, beta.size):
        raise InputError(f"control variates: X must be [inits, {beta.size}], got {X.shape}")
    est = ratio_estimate(a - X @ beta, b)
    est.method = f"control-variate/{est.method}"
    return est


def gamma_cv_crossfit(a, b, X, folds=2) -> Estimate:
    """γ̂_cv with cross-fitted β (no separate pilot): the inits are cut into ``folds`` consecutive blocks and each
    block's units are adjusted with the β fitted on the other blocks (independent of them, so each block's a' is
    unbiased); SE by the delta method over all adjusted units (the β's own noise is O(k/I) relative: second
    order, as for a pilot)."""
    a, b, X = (np.asarray(v, float) for v in (a, b, X))
    if not isinstance(folds, int) or folds < 2:
        raise InputError(f"control variates: folds must be an integer >= 2, got {folds!r}")
    edges = np.linspace(0, a.size, folds + 1).astype(int)
    adj = np.empty(a.size)
    for lo, hi in zip(edges[:-1], edges[1:]):
        rest = np.r_[0:lo, hi:a.size]
        beta = fit(a[rest], b[rest], X[rest])
        adj[lo:hi] = a[lo:hi] - X[lo:hi] @ beta
    est = ratio_estimate(adj, b)
    est.method = f"control-variate/cross-fit/{est.method}"
    return est


def gamma_control_variate(spec, n_inits, n_data, seed=0, n_pilot=None, first_init=0):
    """γ̂ ± SE with the CVs: β fitted on a pilot of ``n_pilot`` inits (default max(64, 4·#CVs)) placed after the
    estimate's inits (disjoint, so independent), then applied to inits first_init … first_init + n_inits − 1.
    Returns (Estimate, explained fraction on the estimate's inits)."""
    if not isinstance(n_inits, (int, np.integer)) or n_inits < 2:
        raise InputError(f"control variates: n_inits must be an integer >= 2, got {n_inits!r}")
    k = 6 * len(spec.widths) - 4
    n_pilot = n_pilot or max(64, 4 * k)
    pa, pb, pX = units_and_cvs(spec, range(first_init + n_inits, first_init + n_inits + n_pilot), n_data, seed)
    beta = fit(pa, pb, pX)
    a, b, X = units_and_cvs(spec, range(first_init, first_init + n_inits), n_data, seed)
    return gamma_cv(a, b, X, beta), explained(a, b, X, beta)


def rel_se_one(est: Estimate) -> float:
    """ρ₁ = SE·√n/|γ̂|: the relative SE of one init (inits to a 1 % SE: (ρ₁/0.01)²)."""
    return est.se * math.sqrt(est.n) / abs(est.value)
