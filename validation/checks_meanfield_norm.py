"""Checks of the LayerNorm / RMSNorm mean-field forms (igbsym/families/meanfield_norm.py) against torch simulations.

χ_1 (meanfield.norm_chi_1): one block at its fixed-point input law, h ~ N(0, q I_N) per sample (q = σ_w² + σ_b²
after φ; before φ the norm removes q, q = 1), x = block(h) by the ops' own torch modules (nn.LayerNorm / nn.RMSNorm
without affine, the activation's module), and the Jacobian–vector product J ξ of a random direction ξ (torch.func.jvp:
the growth of an infinitesimal perturbation). With the next Dense integrated out, E|Δh'|² = σ_w² |Δx|², so per
sample χ̂ = σ_w² (|J ξ|²/|ξ|²)·q̂/q̂' with q̂ = |h|²/N, q̂' = σ_w² |x|²/N + σ_b² (the relative growth of 1 − c).
Samples are i.i.d.: the mean and its SE; O(1/N) finite-width terms removed by the 1/N extrapolation of two widths
(v̂ = (N_b v̂_b − N_s v̂_s)/(N_b − N_s), the SE of that combination).

c* and γ_∞ (meanfield.norm_c_star, meanfield.norm_gamma_inf): the exact chain (validation/chain.py: every Dense's
weights integrated out, the norms and φ as torch runs them) of an L-hidden-layer MLP with biases in every Dense and
the norm before or after φ (L = 24; 72 before φ, where the c-map at q = 1 contracts at χ_c ≈ 0.93), on fresh
N(0, I) data; γ̂ of the readout pre-activations (the readout's bias share
σ_b²/σ_w² included) and ĉ = γ̂/(1 + γ̂), 1/N-extrapolated over two widths. Bias bound: the finite-depth theory's
distance from the limit, |γ_L − γ_∞| with γ_L walked by the layer engine (igbsym.families.depth.path: the ops'
width-limit maps, not the form's routes), stated in the note. False-failure rate: z = 5 per assertion.
"""
from __future__ import annotations

import math

import numpy as np
import torch

import igbsym
from igbsym import ops as O
from igbsym.families import depth as D
from igbsym.spec import Spec, mlp_ops

from .chain import run_chains
from .checks import register_check, register_sizes, reusable, seed_for, size, z_result
from .stats import ratio_estimate

register_sizes("meanfield_norm", quick={"widths": (128, 512), "samples": 4000, "chains": 2000, "depth": 24,
                                        "depth_before": 72},
               thorough={"widths": (256, 1024), "samples": 16000, "chains": 8000, "depth": 32, "depth_before": 96})
NORM_OP = {"layernorm": O.LayerNorm, "rmsnorm": O.RMSNorm}
PLACE = {"before": "pre", "after": "post"}
CHI_CASES = (("relu", "layernorm", "before", 1.0, 0.3), ("relu", "layernorm", "after", 1.0, 0.3),
             ("relu", "rmsnorm", "after", 1.0, 0.3), ("tanh", "rmsnorm", "before", 2.0, 0.3),
             ("tanh", "layernorm", "after", 2.0, 0.3), ("erf", "layernorm", "before", 1.5, 0.2))
FIXED_CASES = (("relu", "layernorm", "after", 1.0, 0.3), ("tanh", "layernorm", "before", 2.0, 0.3),
               ("tanh", "rmsnorm", "after", 2.0, 0.3))


def _block(activation, norm, placement, width):
    """The block's torch map h -> x from the ops' own modules (float64)."""
    act = O.Act(activation).torch(width)
    nrm = NORM_OP[norm]().torch(width, dtype=torch.float64)
    return (lambda h: act(nrm(h))) if placement == "before" else (lambda h: nrm(act(h)))


@reusable
def chi_samples(ctx, case, width, samples):
    """[samples] per-sample χ̂ (module docstring) at one width."""
    activation, norm, placement, sw, sb = case
    q = 1.0 if placement == "before" else sw * sw + sb * sb
    gen = torch.Generator().manual_seed(seed_for(ctx, "meanfield_norm", "chi", case, width))
    h = math.sqrt(q) * torch.randn(samples, width, generator=gen, dtype=torch.float64)
    xi = torch.randn(samples, width, generator=gen, dtype=torch.float64)
    x, jx = torch.func.jvp(_block(activation, norm, placement, width), (h,), (xi,))
    q_in = h.pow(2).mean(1)
    q_out = sw * sw * x.pow(2).mean(1) + sb * sb
    return (sw * sw * jx.pow(2).sum(1) / xi.pow(2).sum(1) * q_in / q_out).numpy()


def _extrapolate(est):
    (vs, ss, ns), (vb, sbb, nb) = est
    return (nb * vb - ns * vs) / (nb - ns), math.hypot(nb * sbb, ns * ss) / (nb - ns)


@register_check("meanfield_norm_chi", forms=["meanfield.norm_chi_1"])
def check_chi(ctx) -> list:
    """chi_1 of LayerNorm/RMSNorm blocks before and after phi: the growth of an infinitesimal perturbation."""
    form, ws, n = igbsym.get("meanfield.norm_chi_1"), size(ctx, "meanfield_norm.widths"), \
        size(ctx, "meanfield_norm.samples")
    out = []
    for case in CHI_CASES:
        activation, norm, placement, sw, sb = case
        est = []
        for w in ws:
            s = chi_samples(ctx, case, w, n)
            est.append((float(s.mean()), float(s.std(ddof=1) / math.sqrt(s.size)), w))
        v, se = _extrapolate(est)
        pred = float(form.numpy(activation=activation, norm=norm, placement=placement, sigma_w=sw, sigma_b=sb))
        out.append(z_result("meanfield.norm_chi_1", f"{activation} {norm} {placement} phi, sigma_w={sw:g} "
                            f"sigma_b={sb:g}", pred, v, se, n, seed_for(ctx, "meanfield_norm", "chi"),
                            note=f"N = {ws} extrapolated in 1/N, {n} samples each (jvp of the block)"))
    return out


@reusable
def chain_units(ctx, case, width, depth, chains):
    """(a, b) [chains] of the readout's exact-chain units (validation/chain.py) after ``depth`` hidden layers."""
    activation, norm, placement, sw, sb = case
    ops = mlp_ops(depth, activation, norm, PLACE[placement], sigma_w=sw, sigma_b=sb, widths=(width,) * depth)
    spec = Spec(width, ops, sigma_out=sw, sigma_b_out=sb)
    a, b, _ = run_chains(spec, chains, seed_for(ctx, "meanfield_norm", "chain", case, width, depth))
    return a[:, -1].copy(), b[:, -1].copy()


def _gamma_hat(ctx, case, depth):
    ws, n = size(ctx, "meanfield_norm.widths"), size(ctx, "meanfield_norm.chains")
    est = []
    for w in ws:
        r = ratio_estimate(*chain_units(ctx, case, w, depth, n))
        est.append((r.value, r.se, w))
    return _extrapolate(est)


@register_check("meanfield_norm_fixed", forms=["meanfield.norm_gamma_inf", "meanfield.norm_c_star"])
def check_fixed(ctx) -> list:
    """gamma_inf and c* of deep LayerNorm/RMSNorm MLPs with biases (exact chains) in their chaotic phase."""
    ws, n = size(ctx, "meanfield_norm.widths"), size(ctx, "meanfield_norm.chains")
    out = []
    for case in FIXED_CASES:
        activation, norm, placement, sw, sb = case
        # before phi the c-map at q = 1 contracts slowly (chi_c = 0.93 for tanh): a deeper net for the same bias
        depth = size(ctx, "meanfield_norm.depth_before" if placement == "before" else "meanfield_norm.depth")
        kw = dict(activation=activation, norm=norm, placement=placement, sigma_w=sw, sigma_b=sb)
        g, se = _gamma_hat(ctx, case, depth)
        bias = finite_depth_bias(activation, norm, placement, sw, sb, depth)
        g_inf = float(igbsym.get("meanfield.norm_gamma_inf").numpy(**kw))
        c_inf = float(igbsym.get("meanfield.norm_c_star").numpy(**kw))
        label = f"{activation} {norm} {placement} phi, sigma_w={sw:g} sigma_b={sb:g}, L={depth}"
        note = (f"exact chains, N = {ws} extrapolated in 1/N, {n} chains each; bias: the engine walk's "
                f"|gamma_L - gamma_(10 L)| at L = {depth} ({bias:.1e})")
        seed = seed_for(ctx, "meanfield_norm", "chain")
        out.append(z_result("meanfield.norm_gamma_inf", label, g_inf, g, se, n, seed, bias_bound=bias, note=note))
        out.append(z_result("meanfield.norm_c_star", label, c_inf, g / (1 + g), se / (1 + g) ** 2, n, seed,
                            bias_bound=bias, note=note + " (c = gamma/(1 + gamma))"))
    return out


def finite_depth_bias(activation, norm, placement, sw, sb, depth):
    """|γ_L − γ_{10L}| of the layer engine's walk (igbsym.families.depth.path: the ops' width-limit maps, not the
    form's routes; γ_l converges geometrically at rate χ_c < 1, so γ_{10L} stands for the limit to ~χ_c^{9L})."""
    path = D.path(10 * depth, activation, norm, PLACE[placement], 0.01, sw, sigma_b=sb)
    return abs(float(np.asarray(path[depth - 1])) - float(np.asarray(path[-1])))


EOC_CASES = (("relu", "layernorm", "after"), ("tanh", "rmsnorm", "before"), ("tanh", "layernorm", "after"))
EOC_SB = 0.3


@register_check("meanfield_norm_eoc", forms=["meanfield.norm_eoc"])
def check_eoc(ctx) -> list:
    """The edge of chaos: chi-hat_1 measured (jvp of the block) at sigma_w = sigma_b/rho on the form's ray, as a
    Newton step in rho = sigma_b/sigma_w with the theory slope d chi_1/d rho (central difference of the
    meanfield.norm_chi_1 theory; its second-order term is below the SE)."""
    eoc, chi = igbsym.get("meanfield.norm_eoc"), igbsym.get("meanfield.norm_chi_1")
    ws, n = size(ctx, "meanfield_norm.widths"), size(ctx, "meanfield_norm.samples")
    out = []
    for activation, norm, placement in EOC_CASES:
        kw = dict(activation=activation, norm=norm, placement=placement)
        rho = float(eoc.numpy(**kw, sigma_b=EOC_SB))
        sw = EOC_SB / rho
        est = []
        for w in ws:
            s = chi_samples(ctx, (activation, norm, placement, sw, EOC_SB), w, n)
            est.append((float(s.mean()), float(s.std(ddof=1) / math.sqrt(s.size)), w))
        v, se = _extrapolate(est)
        h = 1e-5 * rho
        slope = float(chi.numpy(**kw, sigma_w=EOC_SB / (rho + h), sigma_b=EOC_SB)
                      - chi.numpy(**kw, sigma_w=EOC_SB / (rho - h), sigma_b=EOC_SB)) / (2 * h)
        out.append(z_result("meanfield.norm_eoc", f"{activation} {norm} {placement} phi, sigma_b={EOC_SB:g}: rho + "
                            f"(chi_1-hat - 1)/(d chi_1/d rho)", rho, rho + (1 - v) / slope, se / abs(slope), n,
                            seed_for(ctx, "meanfield_norm", "eoc"),
                            note=f"chi_1-hat = {v:.5f} +- {se:.2g} at sigma_w = {sw:.5f}; slope {slope:.4f} (theory)"))
    return out
