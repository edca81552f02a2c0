"""Checks of the rectified.*, leaky.* and activation.* families against torch samples and torch networks.

- rectified.*: X ~ N(μ, σ²) sampled with torch (seeded), pushed through ``torch.nn.ReLU`` (and Y = αX for the
  scaled forms, incl. α < 0 where the paper's Lemma F.1 is false); sample mean / variance / moments with
  their SEs (variance SE from the sample 4th central moment, valid for any law).
- leaky.m2 / leaky.m4: zero-mean symmetric non-Gaussian inputs (uniform κ=1.8, Rademacher κ=1, Laplace κ=6,
  Student-t κ=3+6/(ν−4)) and Gaussian (κ=3) through ``torch.nn.LeakyReLU``.
- activation.* and leaky.mean / leaky.var: a real batched MLP layer. With Rademacher weights ±σ_w/√d every
  first-layer pre-activation of Gaussian data is EXACTLY N(0, σ_w²), so each hidden node's data mean and
  unbiased data variance estimate E[φ(σ_w Z)] and Var[φ(σ_w Z)] without bias; units are inits (fresh data per
  init, nodes of one init averaged).
"""
from __future__ import annotations

import math

import torch
from torch import nn

import igbsym

from .checks import register_check, register_sizes, reusable, seed_for, size, z_result
from .simulate import ACTIVATIONS, Blob, NetSpec, simulate


register_sizes("rectified", quick=dict(samples=1_000_000, layer=(16, 128, 100, 2000), sigmas=(1.0,)),
               thorough=dict(samples=10_000_000, layer=(64, 256, 200, 4000), sigmas=(0.5, 1.0, 2.0)))


def _n(ctx) -> int:
    return size(ctx, "rectified.samples")


@reusable
def _gauss(ctx, n, mu, sigma, salt) -> torch.Tensor:
    gen = torch.Generator(device=ctx.device).manual_seed(seed_for(ctx, "rectified.gauss", salt))
    return torch.randn(n, generator=gen, device=ctx.device, dtype=torch.float64) * sigma + mu


def _mean_z(form, label, pred, y, ctx, note=""):
    y = y.double()
    return z_result(form, label, pred, float(y.mean()), float(y.std() / math.sqrt(y.numel())), y.numel(), ctx.seed,
                    note=note)


def _var_z(form, label, pred, y, ctx, note=""):
    y = y.double()
    c = y - y.mean()
    m2, m4 = float((c**2).mean()), float((c**4).mean())
    n = y.numel()
    return z_result(form, label, pred, m2 * n / (n - 1), math.sqrt(max(m4 - m2**2, 0.0) / n), n, ctx.seed,
                    note=note or "SE from the sample 4th central moment")


POINTS = ((0.0, 1.0), (1.5, 0.7), (-2.0, 1.3), (-3.5, 1.0))


@register_check("rectified.relu_gaussian", forms=["rectified.mean", "rectified.var", "rectified.moment"])
def check_rectified(ctx) -> list:
    """ReLU of N(μ, σ²) samples through torch.nn.ReLU: mean, variance and moments n = 1..4."""
    out, relu = [], nn.ReLU()
    for k, (mu, sigma) in enumerate(POINTS):
        ctx.progress(f"rectified: mu={mu} sigma={sigma}")
        y = relu(_gauss(ctx, _n(ctx), mu, sigma, k))
        lab = f"mu={mu} sigma={sigma} N={y.numel()}"
        out.append(_mean_z("rectified.mean", lab, float(igbsym.get("rectified.mean").numpy(mu=mu, sigma=sigma)),
                           y, ctx))
        out.append(_var_z("rectified.var", lab, float(igbsym.get("rectified.var").numpy(mu=mu, sigma=sigma)),
                          y, ctx))
        for n in range(1, 5):   # n = 0 is E[Y^0] = 1 identically: nothing to test
            pred = float(igbsym.get("rectified.moment").numpy(n=n, mu=mu, sigma=sigma))
            out.append(_mean_z("rectified.moment", f"n={n} {lab}", pred, y**n, ctx))
    return out


@register_check("rectified.scaled_gaussian", forms=["rectified.scaled_mean", "rectified.scaled_var"])
def check_scaled(ctx) -> list:
    """ReLU(αX), X ~ N(μ, σ²), α of both signs; the note gives the z of the paper's (false) Lemma F.1 claim."""
    out, relu = [], nn.ReLU()
    for k, (alpha, mu, sigma) in enumerate(((-1.5, 0.8, 1.0), (0.5, -1.0, 2.0), (-0.3, -0.5, 1.2))):
        ctx.progress(f"rectified: alpha={alpha}")
        y = relu(alpha * _gauss(ctx, _n(ctx), mu, sigma, 10 + k))
        lab = f"alpha={alpha} mu={mu} sigma={sigma}"
        se = float(y.std() / math.sqrt(y.numel()))
        claim = alpha * float(igbsym.get("rectified.mean").numpy(mu=mu, sigma=sigma))
        note = f"paper's Lemma F.1 claim alpha*E[ReLU X]={claim:.4g}: z={(float(y.mean()) - claim) / se:.1f}"
        pred = float(igbsym.get("rectified.scaled_mean").numpy(alpha=alpha, mu=mu, sigma=sigma))
        out.append(_mean_z("rectified.scaled_mean", lab, pred, y, ctx, note=note))
        pred = float(igbsym.get("rectified.scaled_var").numpy(alpha=alpha, mu=mu, sigma=sigma))
        out.append(_var_z("rectified.scaled_var", lab, pred, y, ctx))
    return out


@reusable
def _symmetric(ctx, law, n, sigma, salt):
    """Zero-mean symmetric samples with variance sigma² and the law's kurtosis κ: the data laws of
    igbsym.validation.simulate.Blob (gaussian, uniform, laplace, student with ν = 12), plus Rademacher (±1)."""
    seed = seed_for(ctx, "rectified.symmetric", law, salt)
    if law == "rademacher":
        gen = torch.Generator(device=ctx.device).manual_seed(seed)
        x = torch.randint(0, 2, (n,), generator=gen, device=ctx.device, dtype=torch.float64) * 2.0 - 1
        return x * sigma, 1.0
    blob = Blob(1, law, seed, df=12.0)
    return blob.rows(0, n)[:, 0].to(ctx.device) * sigma, blob.kurtosis


@register_check("leaky.symmetric_inputs", forms=["leaky.m2", "leaky.m4"])
def check_leaky_moments(ctx) -> list:
    """E[φ_a(x)²], E[φ_a(x)⁴] through torch.nn.LeakyReLU for symmetric laws of kurtosis 1, 1.8, 3, 3.75, 6."""
    out = []
    laws = ("rademacher", "uniform", "gaussian", "student", "laplace")
    for k, law in enumerate(laws):
        for a, sigma in ((0.01, 1.0), (0.3, 1.7), (-0.5, 0.6)):
            ctx.progress(f"leaky: {law} a={a}")
            x, kappa = _symmetric(ctx, law, _n(ctx) // 2, sigma, 20 + 7 * k + int(10 * a))
            y = nn.LeakyReLU(a)(x)
            lab = f"{law} (kappa={kappa:.3g}) a={a} sigma={sigma}"
            out.append(_mean_z("leaky.m2", lab, float(igbsym.get("leaky.m2").numpy(a=a, sigma=sigma)), y**2, ctx))
            pred = float(igbsym.get("leaky.m4").numpy(a=a, sigma=sigma, kappa=kappa))
            out.append(_mean_z("leaky.m4", lab, pred, y**4, ctx))
    return out


@reusable
def _layer_sim(ctx, activation, a, sigma_w):
    d, n, inits, data = size(ctx, "rectified.layer")
    ctx.progress(f"activation: {activation} sigma_w={sigma_w}")
    spec = NetSpec(d, (n,), activation=activation, a=a, weight_law="rademacher", sigma_w=sigma_w)
    return simulate(spec, inits, data, seed=seed_for(ctx, "rectified.layer"), device=ctx.device, layer_stats=("act",),
                    fresh_data=True).layers[0]["act"]


def _layer_results(ctx, family, activation, a, sigma_w):
    st = _layer_sim(ctx, activation, a, sigma_w)
    lab = f"{activation} a={a} sigma_w={sigma_w} layer-1 nodes, I={st.mean.shape[0]} n={st.mean.shape[1]} D={st.n}"
    kw = dict(sigma=sigma_w, a=a) if family == "leaky" else dict(activation=activation, sigma=sigma_w, a=a)
    out = []
    for what, est in (("mean", st.mean), ("var", st.var)):
        unit = est.mean(1)
        pred = float(igbsym.get(f"{family}.{what}").numpy(**kw))
        out.append(z_result(f"{family}.{what}", lab, pred, float(unit.mean()),
                            float(unit.std() / math.sqrt(unit.numel())), unit.numel(), ctx.seed,
                            note="Rademacher weights: pre-activations exactly N(0, sigma_w^2)"))
    return out


@register_check("activation.layer_moments", forms=["activation.mean", "activation.var"])
def check_activation(ctx) -> list:
    """Data mean / variance of first-layer nodes of a real torch MLP vs activation.mean / activation.var."""
    out = []
    sigmas = size(ctx, "rectified.sigmas")
    for sigma_w in sigmas:
        for act in ACTIVATIONS:
            out += _layer_results(ctx, "activation", act, 0.2 if act == "leaky_relu" else 0.01, sigma_w)
    return out


@register_check("leaky.layer_moments", forms=["leaky.mean", "leaky.var"])
def check_leaky_layer(ctx) -> list:
    """Leaky-ReLU first-layer nodes of a real torch MLP vs leaky.mean / leaky.var (several slopes)."""
    out = []
    for a, sigma_w in ((0.01, 1.0), (0.2, 1.5), (-0.5, 0.8)):
        out += _layer_results(ctx, "leaky", "leaky_relu", a, sigma_w)
    return out
