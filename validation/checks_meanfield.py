"""Checks of the mean-field forms (igbsym/families/meanfield.py) against wide torch MLPs with biases.

Networks: h^1 = W_1 x + b_1, h^l = W_l φ(h^{l−1}) + b_l, W ~ N(0, σ_w²/N), b ~ N(0, σ_b²), width N = d_in, float64.
Inputs: P pairs (x_a, x_b) with |x|²/N = 1 and x_a·x_b/N = ρ₀ = 0 exactly (Gram–Schmidt), so layer 1 is exactly
(q_1, c_1) = (σ_w² + σ_b², (σ_w² ρ₀ + σ_b²)/q_1). Per init and layer: Q = mean h², Q_ab = mean h_a h_b, X_1 =
σ_w² mean φ'(h)², X_c = σ_w² mean φ'(h_a)φ'(h_b) over units and pairs. Inits are the independent units: SEs over
inits (ratio estimates by the delta method; log-slopes by the jackknife). The three fixed-point configurations share
each init's standard-normal weights (their Results are correlated, each is still a valid z-test).

Finite width: every estimate is the 1/N extrapolation of two widths, v̂ = (N_b v̂(N_b) − N_s v̂(N_s))/(N_b − N_s), with
the SE of that combination (the neglected O(1/N²) term is below the SE at these widths). Finite depth: the forms are
depth → ∞ limits; each Result's ``bias_bound`` is the distance of the finite-depth theory (the mean-field trajectory
of igbsym.engine.meanfield from the same layer-1 state) from the form's value at the layers used, stated in the
note. Results: q* (deep layer), c* and γ_∞ (deep layer, chaotic and ordered points), χ_1 and χ_c (the measured
slopes at the deep layer), ξ_c (the log-slope of ĉ_l − c* between layers 4 and 10, and −1/ln χ̂_c), ξ_q (−1/ln of the
measured σ_w² mean(φ'² + φφ''), and the log-slope of q̂_l − q* between layers 2 and 5), the phase
(the sign of ln χ̂_1, resolved at 5 SE), the edge of chaos (a Newton step of the measured χ̂_1 − 1 at the form's σ_w,
with the theory slope dχ_1/dσ_w). False-failure rate: z = 5 per assertion (t tails with >= 24 inits: <= 2e-4 each).
"""
from __future__ import annotations

import math

import numpy as np
import torch

import igbsym
from igbsym.engine import meanfield as MF
from igbsym.gauss.hermite import series

from .checks import register_check, register_sizes, reusable, seed_for, size, z_result
from .stats import ratio_estimate

register_sizes("meanfield", quick={"widths": (500, 1000), "inits": 24, "pairs": 32, "depth": 30, "chains": 4000},
               thorough={"widths": (1000, 2000), "inits": 64, "pairs": 64, "depth": 40, "chains": 16000})
CHAOS, ORDER = (2.0, 0.3), (1.0, 0.3)       # tanh (σ_w, σ_b): chaotic (c* = 0.264) and ordered (c* = 1) points
RELU = (math.sqrt(1.5), 0.5)               # relu, ordered: q* = 1
RHO0 = 0.0                                 # independent inputs (the IGB setting): c_1 = σ_b²/q_1, below c*
XI_C_LAYERS, XI_Q_LAYERS = (4, 10), (2, 5)


def _inputs(gen, pairs, width, rho):
    za, zb = (torch.randn(pairs, width, generator=gen, dtype=torch.float64) for _ in range(2))
    ua = za / za.norm(dim=1, keepdim=True)
    zb = zb - (zb * ua).sum(1, keepdim=True) * ua
    ub = zb / zb.norm(dim=1, keepdim=True)
    root = math.sqrt(width)
    return root * ua, root * (rho * ua + math.sqrt(1 - rho * rho) * ub)


@reusable
def _measured(ctx, configs, width, depth, inits, pairs, rho, seed):
    """{config: [5, inits, depth]} of Q, Q_ab, X_1, X_c, X_q (module docstring) for configs (activation, σ_w, σ_b)
    that share each init's standard-normal weights Z (W = σ_w Z/√N) and biases ξ (b = σ_b ξ)."""
    out = {cfg: np.empty((5, inits, depth)) for cfg in configs}
    for i in range(inits):
        gen = torch.Generator().manual_seed(seed_for(ctx, "meanfield", seed, width, i))
        xa, xb = _inputs(gen, pairs, width, rho)
        hs = {cfg: torch.cat([xa, xb]).T for cfg in configs}               # [N, 2P] each
        for layer in range(depth):
            z = torch.randn(width, width, generator=gen, dtype=torch.float64) / math.sqrt(width)
            xi = torch.randn(width, 1, generator=gen, dtype=torch.float64)
            for cfg in configs:
                activation, sw, sb = cfg
                act = igbsym.activations.get(activation)
                h = hs[cfg]
                h = hs[cfg] = sw * (z @ (h if layer == 0 else act.torch(h, 0.0, 0.0))) + sb * xi
                d1, d2 = _derivatives(activation, h)
                dd = d1[:, :pairs] * d1[:, pairs:]
                out[cfg][:, i, layer] = [float((h * h).mean()), float((h[:, :pairs] * h[:, pairs:]).mean()),
                                         sw * sw * float((d1 * d1).mean()), sw * sw * float(dd.mean()),
                                         sw * sw * float((d1 * d1 + act.torch(h, 0.0, 0.0) * d2).mean())]
    return out


def _derivatives(activation, h):
    """(φ'(h), φ''(h)) (tanh: sech², −2 tanh sech²; relu: the step, 0 away from the kink)."""
    if activation == "tanh":
        t = h.tanh()
        return 1 - t * t, -2 * t * (1 - t * t)
    return (h > 0).to(h.dtype), torch.zeros_like(h)


def _extrapolate(est):
    """[(value, se) at N_s, at N_b] -> the 1/N extrapolation and its SE (``widths`` of the mode)."""
    (vs, ss, ns), (vb, sbb, nb) = est
    return (nb * vb - ns * vs) / (nb - ns), math.hypot(nb * sbb, ns * ss) / (nb - ns)


def _runs(ctx, configs, salt):
    """{config: [(data, N) per width]} for configs sharing their draws (``_measured``)."""
    d = size(ctx, "meanfield.depth")
    sims = [(_measured(ctx, configs, n, d, size(ctx, "meanfield.inits"), size(ctx, "meanfield.pairs"), RHO0, salt), n)
            for n in size(ctx, "meanfield.widths")]
    return {cfg: [(sim[cfg], n) for sim, n in sims] for cfg in configs}


def _mean(x):
    return float(x.mean()), float(x.std(ddof=1) / math.sqrt(x.size))


def _at(runs, fn):
    """fn(data) -> (value, se) per width, extrapolated in 1/N."""
    return _extrapolate([(*fn(data), n) for data, n in runs])


def _theory(activation, point, depth):
    """[(q_l, e_l)] of the mean-field trajectory from the layer-1 state of the simulated inputs."""
    sw, sb = point
    q1 = sw * sw + sb * sb
    return MF.trajectory(activation, 0.0, sw, sb, depth, q1, (sw * sw * RHO0 + sb * sb) / q1)


def _chi_c_at(activation, point, q, e):
    """σ_w² E[φ'(u_a)φ'(u_b)] at (q, 1 − e): (σ_w²/q) Σ k β_k c^(k−1) (Mehler's series; Price's theorem)."""
    (_, beta), = series(activation, 0.0, np.array([float(q)]))
    k = np.arange(beta.shape[1])
    return point[0] ** 2 / q * float((beta[0, 1:] * k[1:] * (1 - e) ** (k[1:] - 1)).sum())


def _log_slope(x, ref, l1, l2):
    """ξ̂ = (l2 − l1)/ln(|x_l1 − ref|/|x_l2 − ref|) from per-init layer values x [inits, depth] (ratio of means per
    layer), with its jackknife SE over inits."""
    def stat(idx):
        m = x[idx].mean(0)
        return (l2 - l1) / math.log(abs(m[l1 - 1] - ref) / abs(m[l2 - 1] - ref))
    n = x.shape[0]
    jack = np.array([stat(np.delete(np.arange(n), i)) for i in range(n)])
    return stat(np.arange(n)), math.sqrt((n - 1) / n * ((jack - jack.mean()) ** 2).sum())


@register_check("meanfield_tanh", forms=["meanfield.q_star", "meanfield.c_star", "meanfield.gamma_inf",
                                         "meanfield.chi_1", "meanfield.chi_c", "meanfield.xi_c", "meanfield.xi_q",
                                         "meanfield.phase"])
def check_fixed_points(ctx) -> list:
    """Wide tanh (and relu) MLPs with biases: q*, c*, gamma_inf, chi_1, chi_c, xi_c, xi_q and the phase."""
    out, depth = [], size(ctx, "meanfield.depth")
    ws = size(ctx, "meanfield.widths")
    seed = seed_for(ctx, "meanfield")
    points = (("tanh chaotic", "tanh", CHAOS), ("tanh ordered", "tanh", ORDER), ("relu ordered", "relu", RELU))
    ctx.progress(f"meanfield: tanh and relu nets, widths {ws}, depth {depth}")
    sims = _runs(ctx, tuple((act, *pt) for _, act, pt in points), "fixed points")
    for label, act, point in points:
        runs = sims[(act, *point)]
        kw = dict(activation=act, sigma_w=point[0], sigma_b=point[1])
        get = lambda name: float(igbsym.get(f"meanfield.{name}").numpy(**kw))  # noqa: E731
        traj = _theory(act, point, depth)
        qL, eL = (float(v) for v in traj[-1])
        lim = {k: float(v) for k, v in MF.state_np(act, 0.0, point[0], point[1]).items()}   # the engine's limits
        lim_xi = {k: float(MF.depth_scale(lim[k])) for k in ("chic", "chiq")}
        note = f"N = {ws}, layer {depth}; bias: the trajectory at layer {depth} vs the limit"
        q_hat = _at(runs, lambda d: _mean(d[0][:, -1]))
        out.append(z_result("meanfield.q_star", f"{label}: q at layer {depth}", get("q_star"), *q_hat, ws[-1], seed,
                            bias_bound=abs(qL - lim["q"]), note=note))
        c_hat = _at(runs, lambda d: (lambda r: (r.value, r.se))(ratio_estimate(d[1][:, -1], d[0][:, -1])))
        out.append(z_result("meanfield.c_star", f"{label}: c at layer {depth}", get("c_star"), *c_hat, ws[-1], seed,
                            bias_bound=abs(eL - lim["e"]), note=note))
        chi1 = _at(runs, lambda d: _mean(d[2][:, -1]))
        bias1 = 0.0 if act == "relu" else abs(point[0] ** 2 * float(MF.moments_vec(act, 0.0, np.array([qL]))[2][0])
                                               - lim["chi1"])
        out.append(z_result("meanfield.chi_1", f"{label}: sigma_w^2 mean phi'(h)^2 at layer {depth}", get("chi_1"),
                            *chi1, ws[-1], seed, bias_bound=bias1, note=note))
        ph = 0.0 if abs(math.log(chi1[0])) < 5 * chi1[1] / chi1[0] else math.copysign(1.0, math.log(chi1[0]))
        out.append(z_result("meanfield.phase", f"{label}: sign(ln chi_1-hat), resolved at 5 SE", get("phase"), ph, 0.0,
                            ws[-1], seed, note=f"chi_1-hat = {chi1[0]:.4f} +- {chi1[1]:.2g}"))
        if act != "tanh" or point != CHAOS:
            continue
        g_hat = _at(runs, lambda d: _gamma(d[1][:, -1], d[0][:, -1]))
        gL = (1 - eL) / eL
        out.append(z_result("meanfield.gamma_inf", f"{label}: c/(1 - c) at layer {depth}", get("gamma_inf"), *g_hat,
                            ws[-1], seed, bias_bound=abs(gL - (1 - lim["e"]) / lim["e"]), note=note))
        chic = _at(runs, lambda d: _mean(d[3][:, -1]))
        out.append(z_result("meanfield.chi_c", f"{label}: sigma_w^2 mean phi'(h_a)phi'(h_b) at layer {depth}",
                            get("chi_c"), *chic, ws[-1], seed,
                            bias_bound=abs(_chi_c_at(act, point, qL, eL) - lim["chic"]), note=note))
        c_star, (l1, l2) = 1 - lim["e"], XI_C_LAYERS
        xi_hat = _at(runs, lambda d: _log_slope(d[1] / d[0], c_star, l1, l2))
        c_th = [1 - float(e) for _, e in traj]
        xi_th = (l2 - l1) / math.log(abs(c_th[l1 - 1] - c_star) / abs(c_th[l2 - 1] - c_star))
        out.append(z_result("meanfield.xi_c", f"{label}: decay of c_l - c* over layers {l1}..{l2}", get("xi_c"),
                            *xi_hat, ws[-1], seed, bias_bound=abs(xi_th - lim_xi["chic"]),
                            note=f"bias: the trajectory's log-slope over the same layers ({xi_th:.4f})"))
        xi_chi = _at(runs, lambda d: _xi_of(d[3][:, -1]))
        out.append(z_result("meanfield.xi_c", f"{label}: -1/ln of the measured chi_c at layer {depth}", get("xi_c"),
                            *xi_chi, ws[-1], seed, bias_bound=abs(-1 / math.log(_chi_c_at(act, point, qL, eL))
                                                                 - lim_xi["chic"]), note=note))
        xq_chi = _at(runs, lambda d: _xi_of(d[4][:, -1]))
        chiq_L = point[0] ** 2 * float(MF.moments_vec(act, 0.0, np.array([qL]))[1][0])
        out.append(z_result("meanfield.xi_q", f"{label}: -1/ln sigma_w^2 mean(phi'^2 + phi phi'') at layer {depth}",
                            get("xi_q"), *xq_chi, ws[-1], seed, bias_bound=abs(-1 / math.log(chiq_L) - lim_xi["chiq"]),
                            note=note))
        q_star, (m1, m2) = lim["q"], XI_Q_LAYERS
        xq_hat = _at(runs, lambda d: _log_slope(d[0], q_star, m1, m2))
        q_th = [float(v) for v, _ in traj]
        xq_th = (m2 - m1) / math.log(abs(q_th[m1 - 1] - q_star) / abs(q_th[m2 - 1] - q_star))
        out.append(z_result("meanfield.xi_q", f"{label}: decay of q_l - q* over layers {m1}..{m2}", get("xi_q"),
                            *xq_hat, ws[-1], seed, bias_bound=abs(xq_th - lim_xi["chiq"]),
                            note=f"bias: the trajectory's log-slope over the same layers ({xq_th:.4f})"))
    return out


def _xi_of(chi):
    """−1/ln of the mean of per-init slopes, with its delta-method SE."""
    m, se = _mean(chi)
    return -1 / math.log(m), se / (m * math.log(m) ** 2)


def _gamma(qab, q):
    r = ratio_estimate(qab, q)
    return r.value / (1 - r.value), r.se / (1 - r.value) ** 2


@register_check("meanfield_eoc", forms=["meanfield.eoc_sigma_w"])
def check_edge_of_chaos(ctx) -> list:
    """tanh at sigma_b^2 = 0.05 on the form's edge of chaos: the measured chi_1 - 1 as a Newton step in sigma_w."""
    sb = math.sqrt(0.05)
    form = igbsym.get("meanfield.eoc_sigma_w")
    sw = float(form.numpy(activation="tanh", sigma_b=sb))
    depth, ws = size(ctx, "meanfield.depth"), size(ctx, "meanfield.widths")
    ctx.progress(f"meanfield: edge of chaos, sigma_w = {sw:.5f}")
    runs = _runs(ctx, (("tanh", sw, sb),), "edge of chaos")[("tanh", sw, sb)]
    chi1 = _at(runs, lambda d: _mean(d[2][:, -1]))
    h = 1e-5
    chi = lambda w: float(MF.state_np("tanh", 0.0, w, sb)["chi1"])  # noqa: E731 - the engine's chi_1 (theory)
    slope = (chi(sw + h) - chi(sw - h)) / (2 * h)
    qL = float(_theory("tanh", (sw, sb), depth)[-1][0])
    bias = abs(sw * sw * float(MF.moments_vec("tanh", 0.0, np.array([qL]))[2][0]) - chi(sw)) / slope
    est = sw + (1 - chi1[0]) / slope
    return [z_result("meanfield.eoc_sigma_w", "tanh sigma_b^2 = 0.05: sigma_w + (1 - chi_1-hat)/(d chi_1/d sigma_w)",
                     sw, est, chi1[1] / slope, ws[-1], seed_for(ctx, "meanfield_eoc"), bias_bound=bias,
                     note=f"chi_1-hat = {chi1[0]:.5f} +- {chi1[1]:.2g} at sigma_w^2 = {sw * sw:.5f}; "
                          f"slope {slope:.4f} (theory); second-order term of the Newton step below the SE")]



EOC_SB = 0.5     # relu on its edge of chaos (sigma_w^2 = 2) at this sigma_b: gamma_L/L^2 is within 2-6% of its limit at
                 # L = 30-40 (the trajectory's distance, the bias bound); the L^{-1/2} term changes sign near here


@reusable
def _eoc_chains(ctx, width, depth, chains, sw, sb, seed):
    """[2, chains] (Q, Q_ab) of layer ``depth`` of a width-N relu MLP with biases on two inputs with |x|^2/N = 1,
    x_a.x_b = 0, its weights integrated out (exact in law: given layer l the units of layer l + 1 are i.i.d.
    N(0, sigma_w^2 phi phi^T/N + sigma_b^2) over units, a 2 x 2 covariance per chain; layer 1 has q_1 = sigma_w^2 +
    sigma_b^2, covariance sigma_b^2). O(chains N) a layer instead of the N^2 weight draws of a network; chains are
    independent networks."""
    gen = torch.Generator().manual_seed(seed_for(ctx, "meanfield_eoc_growth", seed, width))
    kaa = torch.full((chains,), sw * sw + sb * sb, dtype=torch.float64)
    kbb, kab = kaa.clone(), torch.full((chains,), sb * sb, dtype=torch.float64)
    for layer in range(depth):
        za, zb = (torch.randn(chains, width, generator=gen, dtype=torch.float64) for _ in range(2))
        la = kaa.sqrt()
        lb = (kab / la)
        lc = (kbb - lb * lb).clamp_min(0).sqrt()
        ha, hb = la[:, None] * za, lb[:, None] * za + lc[:, None] * zb
        if layer == depth - 1:
            return np.stack([((ha * ha + hb * hb).mean(1) / 2).numpy(), (ha * hb).mean(1).numpy()])
        pa, pb = ha.clamp_min(0), hb.clamp_min(0)
        kaa, kbb = sw * sw * (pa * pa).mean(1) + sb * sb, sw * sw * (pb * pb).mean(1) + sb * sb
        kab = sw * sw * (pa * pb).mean(1) + sb * sb


@register_check("meanfield_eoc_growth", forms=["meanfield.gamma_eoc_growth"])
def check_eoc_growth(ctx) -> list:
    """ReLU MLPs with biases on the edge of chaos (sigma_w = eoc_sigma_w, sigma_b = 0.5), sampled as exact chains
    (``_eoc_chains``) at two widths, extrapolated in 1/N: gamma_L/L^2 of the readout after L hidden layers against
    C = lim gamma_L/L^2; bias bound: the mean-field trajectory's |gamma_L/L^2 - C| at that L. (tanh/erf, p = 1, are
    not simulated: their O(ln L) term leaves gamma_L/L some 10-20% from C at L = 30, a bias bound wider than a
    mutation.)"""
    form = igbsym.get("meanfield.gamma_eoc_growth")
    sw = float(igbsym.get("meanfield.eoc_sigma_w").numpy(activation="relu", sigma_b=EOC_SB))
    C = float(form.numpy(activation="relu", sigma_b=EOC_SB))
    depth, ws, n = size(ctx, "meanfield.depth"), size(ctx, "meanfield.widths"), size(ctx, "meanfield.chains")
    L = depth - 1                                   # layer `depth` is the readout after depth - 1 hidden layers
    ctx.progress(f"meanfield: relu on the edge of chaos, sigma_b = {EOC_SB}, {n} chains, readout after {L} layers")
    est = [(*_gamma(*(lambda d: (d[1], d[0]))(_eoc_chains(ctx, w, depth, n, sw, EOC_SB, "growth"))), w) for w in ws]
    g_hat = _extrapolate(est)
    g_th, limit, tail = _trajectory_limit(sw, EOC_SB, L)
    return [z_result("meanfield.gamma_eoc_growth", f"relu sigma_b = {EOC_SB}: gamma_L/L^2 at L = {L}", C,
                     g_hat[0] / L**2, g_hat[1] / L**2, n, seed_for(ctx, "meanfield_eoc_growth"),
                     bias_bound=abs(g_th - limit) + tail,
                     note=f"N = {ws} extrapolated in 1/N, {n} chains each; bias: the trajectory's gamma_L/L^2 = "
                          f"{g_th:.5f} vs its own limit {limit:.5f} +- {tail:.1g} (Richardson in L^(-1/2) at L = "
                          f"{GROWTH_LS}, not the form)")]


GROWTH_LS = (6250, 25000, 100000)


def _trajectory_limit(sw, sb, L):
    """(gamma_L/L^2 of the relu trajectory, its L -> inf limit, that limit's tail bound), from the trajectory alone:
    gamma_L/L^2 = lim + D L^(-1/2) + O(ln L/L) (derivations/meanfield.py), so R(L) = 2 f(4L) - f(L) at L = 25000
    (remainder O(ln L/L) ~ 1e-4) with |R(25000) - R(6250)| its bound."""
    traj = _theory("relu", (sw, sb), GROWTH_LS[-1] + 1)
    f = {l: (1 - float(traj[l][1])) / float(traj[l][1]) / l**2 for l in (L, *GROWTH_LS)}
    r_hi = 2 * f[GROWTH_LS[2]] - f[GROWTH_LS[1]]
    r_lo = 2 * f[GROWTH_LS[1]] - f[GROWTH_LS[0]]
    return f[L], r_hi, abs(r_hi - r_lo)
