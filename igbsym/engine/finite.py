"""Finite width: γ of an MLP whose layers have N units, to first order in 1/N (issue 28).

Model (the simulator's, validation/simulate.py): data x ~ N(0, I_d) with d = d_in, hidden widths N_1 … N_L, zero
biases, weights N(0, σ_w²/fan_in), a fresh Gaussian output Linear. Integrating the output weights out, γ at the
output is a ratio of expectations over the data and every hidden weight,

    γ_L(N) = E[Ĝ_ab] / E[Ĝ_aa − Ĝ_ab],   Ĝ_ab = (1/N_L) Σ_i y_i(x_a) y_i(x_b),

for two independent data points a ≠ b and y the last hidden layer's output (the estimators' Σa/Σb targets exactly
this). Conditioned on layer l − 1, the N_l pre-activations of layer l are i.i.d. Gaussian processes over the data
with kernel K = σ_w² Ĝ^(l−1) (exact); the state of a layer is therefore the two-point empirical kernel over a
random pair of data points, g = (G_aa, G_bb, G_ab), with its mean and its covariance Σ over data and weights.
Σ is O(1/N) and closes on itself (Roberts, Yaida & Hanin, *The Principles of Deep Learning Theory*, chs. 4–5: the
four-point vertex, here with the data points random): through the activation step

    mean' = T(K̄) + J δ + ½ H:Σ,     Σ' = J Σ Jᵀ + C/N_l,

T(K) the one-unit expectations (E φ(u_a)², E φ(u_b)², E φ(u_a)φ(u_b), E φ(u_a), E φ(u_b)) of (u_a, u_b) ~ N(0, K)
(the ops' own kernel maps ``Act.kernel_entry`` / ``kernel_mean``), J, H its derivatives (central differences of
those maps), C the one-unit covariance of the same five statistics (``igbsym.gauss`` nested expectations). A norm
after the activation is a smooth function of those five empirical averages (``Op.empirical``), taken through by the
delta method. The input kernel x_a·x_b/d has mean (1, 1, 0) and covariance diag(2, 2, 1)/d exactly.
Everything is linear in the sources (1/d and the 1/N_l), so the 1/N coefficient splits as
a = a_in·(N/d_in) + Σ_l a_l·(N/N_l); the forms take d_in = N_l = N (``ratios``).

Exact cases reproduced: one hidden ReLU (leaky, identity) layer has a = 0 (the per-unit ratio (Eφ)²/Var φ does not
depend on ‖w‖); odd φ has γ = 0 at every width (every unit is an odd function of x, the data are symmetric).
Accuracy: derivatives by Richardson-combined central differences (steps 1e-3 and 5e-4 of the largest entry),
the per-unit covariance by nested quadrature (``FINITE_ERROR``). The series holds where |a|/N is small against
γ_∞ (``validity``): the coefficient grows geometrically with depth for smooth φ.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from .. import activations as acts
from .. import gauss
from ..errors import InputError, NumericalError
from ..gauss.rules import normal_nodes
from ..ops import Act

IDENTITY = Act("identity")
STEP = 1e-3            # finite-difference step, relative to the largest entry of the state
FINITE_ERROR = 1e-6    # stated relative error of the 1/N coefficient (measured <= 5e-8: families/width.py)
L_MAX = 32             # deepest net with a finite-width form: the series has long stopped holding there (README)
L_MAX_RESIDUAL = 8     # deepest residual net: each block costs ~0.2 s (two nested covariances), and the trunk's
                       # variance grows as (1 + alpha^2 ...)^L out of the quadrature's range for smooth phi
REMAINDER_FACTOR = 2.0  # allowance for the O(1/N²) remainder: factor · (a/N)²/γ_∞ (module ``validity``)


def _stencil(fn, x0, h):
    """Central differences at step h: (value, Jacobian, Hessian), every evaluation in one call of fn (the same
    quadrature nodes for all points, so the differences of a quadrature are smooth)."""
    n = x0.size
    eye = np.eye(n)
    pts = [x0] + [x0 + s * h * eye[i] for i in range(n) for s in (1, -1)]
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    pts += [x0 + h * (si * eye[i] + sj * eye[j]) for i, j in pairs for si, sj in ((1, 1), (1, -1), (-1, 1), (-1, -1))]
    vals = np.asarray(fn(np.array(pts)), float)
    f0 = vals[0]
    jac, hess = np.empty((f0.size, n)), np.empty((f0.size, n, n))
    for i in range(n):
        fp, fm = vals[1 + 2 * i], vals[2 + 2 * i]
        jac[:, i] = (fp - fm) / (2 * h)
        hess[:, i, i] = (fp - 2 * f0 + fm) / (h * h)
    for k, (i, j) in enumerate(pairs):
        pp, pm, mp, mm = vals[1 + 2 * n + 4 * k: 5 + 2 * n + 4 * k]
        hess[:, i, j] = hess[:, j, i] = (pp - pm - mp + mm) / (4 * h * h)
    return f0, jac, hess


def _derivs(fn, x0, step=STEP):
    """Value, Jacobian and Hessian of fn: R^n → R^m (fn maps [P, n] → [P, m]) by central differences at steps h
    and h/2, Richardson-combined (4 D(h/2) − D(h))/3: truncation O(h⁴) ~ 1e-12, rounding ~ ε/h² ~ 1e-9."""
    x0 = np.asarray(x0, float)
    h = step * max(float(np.max(np.abs(x0))), 1e-300)
    f0, j1, h1 = _stencil(fn, x0, h)
    _, j2, h2 = _stencil(fn, x0, h / 2)
    return f0, (4 * j2 - j1) / 3, (4 * h2 - h1) / 3


def _delta(fn, mean, shift, cov, step=STEP):
    """The delta method through fn: (fn(mean), J·shift + ½ H:cov, J cov Jᵀ) (shift, cov in units of 1/N)."""
    f0, jac, hess = _derivs(fn, mean, step)
    return f0, jac @ shift + 0.5 * np.einsum("mij,ij->m", hess, cov), jac @ cov @ jac.T


def unit_means(act, K):
    """T(K) for rows K = (K_aa, K_bb, K_ab): the five one-unit expectations (module docstring), [P, 5]."""
    K = np.asarray(K, float)
    kaa, kbb, kab = K[:, 0], K[:, 1], K[:, 2]
    if np.any(kab * kab > kaa * kbb * (1 + 1e-12)) or np.any(np.minimum(kaa, kbb) <= 0):
        raise NumericalError("finite width: the pair correlation left [-1, 1] in the difference stencil (the layer's "
                             "c is within 1e-3 of 1: outside the finite-width route's range)")
    out = np.stack([act.kernel_entry(kaa, kaa, kaa), act.kernel_entry(kbb, kbb, kbb),
                    act.kernel_entry(kab, kaa, kbb), act.kernel_mean(kaa), act.kernel_mean(kbb)], axis=1)
    if not np.all(np.isfinite(out)):
        raise NumericalError(f"finite width: the one-unit moments of {act.name} overflow (q = {kaa.max():.3g})")
    return out


@lru_cache(maxsize=1024)
def unit_moments(name, a, k, p, panel=0.4):
    """M[i, j] = E φ(u_a)^i φ(u_b)^j, i + j <= 4, (u_a, u_b) ~ N(0, [[k, p], [p, k]]), 0 <= p <= k: with the
    shared part μ ~ N(0, p) and the data parts ξ ~ N(0, k − p), E_μ[A_i(μ) A_j(μ)], A_n(μ) = E_ξ φ(μ + ξ)^n by
    ``gauss.expect`` (IGB App. F.1's centre/noise split)."""
    if abs(p) <= 1e-12 * k:
        p = 0.0                     # rounding of an exactly-zero shared part (layer 1: E[x_a·x_b] = 0)
    if p < 0 or p > k:
        raise NumericalError(f"finite width: shared moment p = {p:.3g} outside [0, q = {k:.3g}]")
    f = acts.get(name).numpy
    s = float(np.sqrt(k - p))
    if p == 0:
        mu, w = np.zeros(1), np.ones(1)
    else:
        mu, w = normal_nodes(min(0.25, panel * max(s, 1e-3) / np.sqrt(p)))
        mu = np.sqrt(p) * mu
    A = np.stack([gauss.expect(lambda x, m, n=n: f(m + x, a, 0.0) ** n, s, mu) if s > 0
                  else f(mu, a, 0.0) ** n for n in range(5)])          # [5, len(mu)]
    M = np.zeros((5, 5))
    for i in range(5):
        for j in range(5 - i):
            M[i, j] = (A[i] * A[j]) @ w
    return M


def unit_cov(act, k, p, panel=0.4):
    """The one-unit covariance of (φ_a², φ_b², φ_aφ_b, φ_a, φ_b) at (u_a, u_b) ~ N(0, [[k, p], [p, k]])."""
    M = unit_moments(act.name, float(act.a), float(k), float(p), panel)
    if not np.all(np.isfinite(M)):
        raise NumericalError(f"finite width: the one-unit fourth moments of {act.name} overflow at q = {k:.3g}")
    powers = [(2, 0), (0, 2), (1, 1), (1, 0), (0, 1)]
    C = np.empty((5, 5))
    for x, (i, j) in enumerate(powers):
        for y, (u, v) in enumerate(powers):
            C[x, y] = M[i + u, j + v] - M[i, j] * M[u, v]
    return C


def input_state(r_in=1.0):
    """(mean, shift, cov) of the data kernel (x_a·x_a/d, x_b·x_b/d, x_a·x_b/d), x ~ N(0, I_d), shift and cov in
    units of 1/N with r_in = N/d: E = (1, 1, 0), Var = (2, 2, 1)/d, all covariances 0 (exact)."""
    return np.array([1.0, 1.0, 0.0]), np.zeros(3), r_in * np.diag([2.0, 2.0, 1.0])


def layer_series(head, block, L, r_in=1.0, r=None, where="finite width", refine=False):
    """[(γ_∞, a)] after hidden layers 1..L: γ_l(N) = γ_∞ + a/N + O(1/N²) (module docstring). ``head``: the ops
    before the first block (the first Dense); ``block``: [norm] Act [norm] Dense; r_in = N/d_in, r[l] = N/N_l
    (default 1: every width N). ``refine``: half the difference step and the outer quadrature panel (the
    independent discretisation the forms' mpmath route reports)."""
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            return _layer_series(head, block, L, r_in, r, where, refine)
    except (OverflowError, ZeroDivisionError) as exc:
        raise NumericalError(f"{where}: a one-unit moment overflows ({exc}); the parameters are outside the "
                             "finite-width route's double range") from None


def _residual_cov(act, kernel, alpha, mean, panel):
    """The one-unit covariance of a residual block's new trunk averages given the trunk: u_i = A(x_i) v_i with
    v = (φ_a², φ_b², φ_aφ_b, φ_a, φ_b) of the branch unit and A = A0 + x_a Aa + x_b Ab linear in the trunk unit's
    values; averaged over units, E_i[A C Aᵀ] needs only the trunk's second moments (G_aa, G_bb, G_ab) and means."""
    g_aa, g_bb, g_ab, m_a, m_b = mean
    C = unit_cov(act, kernel[0], kernel[2], panel)       # the branch units at their kernel σ_w² (G_aa, G_bb, G_ab)
    a2 = alpha * alpha
    A0 = np.diag([a2, a2, a2, alpha, alpha])
    Aa, Ab = np.zeros((5, 5)), np.zeros((5, 5))
    Aa[0, 3], Aa[2, 4] = 2 * alpha, alpha
    Ab[1, 4], Ab[2, 3] = 2 * alpha, alpha

    def sym(X, Y):
        return X @ C @ Y.T + Y @ C @ X.T
    return (A0 @ C @ A0.T + m_a * sym(Aa, A0) + m_b * sym(Ab, A0) + g_aa * Aa @ C @ Aa.T + g_bb * Ab @ C @ Ab.T
            + g_ab * sym(Aa, Ab))


def _residual(op, mean, shift, cov, ratio, step, panel, where):
    """x → x + α φ(W x) (a linear-first branch [Dense, Act]) on the trunk's five averages (module docstring)."""
    block = op.children
    if len(block) != 2 or not block[0].starts_layer or not block[1].elementwise or block[0].sigma_b != 0:
        raise InputError(f"{where}: finite width covers residual blocks x + alpha phi(W x) (linear-first, no norm, "
                         "no bias) only")
    act, alpha, w2 = block[1], float(op.alpha), float(block[0].sigma_w) ** 2

    def cond_mean(t):
        t = np.asarray(t, float)
        T = unit_means(act, w2 * t[:, :3])
        return np.stack([t[:, 0] + 2 * alpha * t[:, 3] * T[:, 3] + alpha**2 * T[:, 0],
                         t[:, 1] + 2 * alpha * t[:, 4] * T[:, 4] + alpha**2 * T[:, 1],
                         t[:, 2] + alpha * (t[:, 3] * T[:, 4] + T[:, 3] * t[:, 4]) + alpha**2 * T[:, 2],
                         t[:, 3] + alpha * T[:, 3], t[:, 4] + alpha * T[:, 4]], axis=1)
    f0, sh, cv = _delta(cond_mean, mean, shift, cov, step)
    return f0, sh, cv + ratio * _residual_cov(act, w2 * mean[:3], alpha, mean, panel)


def _layer_series(head, block, L, r_in, r, where, refine):
    step, panel = (STEP / 2, 0.2) if refine else (STEP, 0.4)
    r = [1.0] * L if r is None else list(r)
    if len(r) != L:
        raise InputError(f"{where}: {len(r)} width ratios for {L} hidden layers")
    mean, shift, cov = input_state(r_in)
    stage = "data"       # 'data' | 'kernel' (pre-activation K, 3) | 'units' (five empirical averages)
    out = []

    def dense(op, mean, shift, cov):
        w2 = float(op.sigma_w) ** 2
        if op.sigma_b != 0:
            raise InputError(f"{where}: Dense with a bias has no finite-width map (allowed: sigma_b = 0)")
        return w2 * mean[:3], w2 * shift[:3], w2 * w2 * cov[:3, :3]

    for op in head:
        if not op.starts_layer:
            raise InputError(f"{where}: the ops before the first block must be one Dense")
        mean, shift, cov = dense(op, mean, shift, cov)
        stage = "kernel"
    for layer in range(L):
        for op in block:
            if op.elementwise:
                if stage != "kernel":
                    raise InputError(f"{where}: an activation must follow a Dense (got {op.name} after a {stage})")
                f0, sh, cv = _delta(lambda K, act=op: unit_means(act, K), mean, shift, cov, step)
                cv = cv + r[layer] * unit_cov(op, mean[0], mean[2], panel)
                mean, shift, cov, stage = f0, sh, cv, "units"
            elif op.starts_layer:
                if stage != "units":
                    raise InputError(f"{where}: a Dense must follow an activation or a norm after it")
                out.append(_gamma_pair(mean, shift, layer, where))
                mean, shift, cov = dense(op, mean, shift, cov)
                stage = "kernel"
            elif op.children:
                if stage == "kernel":      # the embedding's units: the identity on i.i.d. Gaussian units
                    f0, sh, cv = _delta(lambda K: unit_means(IDENTITY, K), mean, shift, cov, step)
                    mean, shift, cov, stage = f0, sh, cv + r[0] * unit_cov(IDENTITY, mean[0], mean[2], panel), "units"
                mean, shift, cov = _residual(op, mean, shift, cov, r[layer], step, panel, where)
                out.append(_gamma_pair(mean, shift, layer, where))
            elif stage == "units":         # an op across the units (a norm after φ): its own empirical map
                mean, shift, cov = _delta(op.empirical, mean, shift, cov, step)
            else:
                raise InputError(f"{where}: op {type(op).__name__} at stage {stage!r} has no finite-width map "
                                 "(covered: Dense without bias, an activation, LayerNorm or RMSNorm after it)")
    if not all(np.isfinite(v) for pair in out for v in pair):
        raise NumericalError(f"{where}: a non-finite coefficient (the parameters are outside the double range)")
    return out


def _gamma_pair(mean, shift, layer, where):
    """(γ_∞, a) of a linear readout of units with averages ``mean`` (shift: their 1/N shift)."""
    g_aa, g_ab = mean[0], mean[2]
    if abs(g_ab) <= 1e-12 * g_aa:
        g_ab = 0.0          # an exactly centred layer (srelu's layer 1, LN after φ) up to rounding
    if not g_aa - g_ab > 1e-9 * g_aa:
        raise NumericalError(f"{where}: 1 - c = {1 - g_ab / g_aa:.3g} at layer {layer + 1}: the finite-width route "
                             "needs c < 1 - 1e-9")
    return float(g_ab / (g_aa - g_ab)), float((g_aa * shift[2] - g_ab * shift[0]) / (g_aa - g_ab) ** 2)


ZERO_REL = 4.0          # γ_∞ = 0 (LayerNorm after φ): |b/a| <= 4 for γ = a/N + b/N² (stated, not derived: measured
                       # b/a ≈ −4 and −2.8 at ReLU + LN, L = 1, 2, torch, N = 16; README "Finite width")


Z_VERDICT = 5.0         # as validation/checks.Z_DEFAULT: two-sided normal false-failure rate 5.7e-7 per verdict


def verdict(estimate, se, prediction, remainder, holds, z=Z_VERDICT) -> str:
    """A measured γ̂ ± SE against the finite-width prediction (``judge``'s remainder and condition): 'outside series'
    where the condition fails, else 'pass' iff |γ̂ − pred_N| <= z·SE + remainder, 'fail' otherwise."""
    if not holds:
        return "outside series"
    return "pass" if abs(estimate - prediction) <= z * se + remainder else "fail"


def validity(gamma_inf, a, N):
    """``judge(gamma_inf, a/N, N)`` for uniform width N (d_in = N)."""
    return judge(gamma_inf, a / N, N)


def judge(gamma_inf, correction, N):
    """(holds, remainder): the series is stated to hold where |a|/N <= γ_∞/2 (the relative correction at most
    1/2); the O(1/N²) remainder allowance is |a/N|·max(FINITE_ERROR, REMAINDER_FACTOR·|a/N|/γ_∞), the second
    term of the geometric resummation γ_∞/(1 − a/(γ_∞N)) with a factor 2. Where γ_∞ = 0 exactly (LayerNorm after
    φ, Thm F.3) γ = a/N + b/N² with the stated |b/a| <= ZERO_REL: holds where ZERO_REL/N <= 1/2, allowance
    |a/N|·REMAINDER_FACTOR·ZERO_REL/N."""
    corr = abs(correction)
    if gamma_inf == 0:
        return ZERO_REL / N <= 0.5, corr * max(FINITE_ERROR, REMAINDER_FACTOR * ZERO_REL / N)
    if gamma_inf < 0:
        raise NumericalError(f"finite width: gamma_inf = {gamma_inf:.3g} < 0")
    return corr <= gamma_inf / 2, corr * max(FINITE_ERROR, REMAINDER_FACTOR * corr / gamma_inf)
