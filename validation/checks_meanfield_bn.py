"""Checks of the BatchNorm mean-field form (igbsym/families/meanfield_bn.py) against wide torch BN MLPs.

Networks: y^1 = BN(W_1 x), y^l = BN(W_l φ(y^{l−1}) + b_l), W ~ N(0, σ_w²/N), b ~ N(0, σ_b²), width N = d_in, a batch
of B points x ~ N(0, I), BN in training mode (centre and divide by the population sd over the batch, no affine,
eps = 0), float64; loss r·y^L with a random readout r. Per init: the squared gradient norms n_l = |∂L/∂y^l|² and
the log-rate (ln n_lo − ln n_hi)/(hi − lo) over the layers lo = 2 .. hi = L − 2 (the top layer's gradient has a
batch-mean part and the first layer sees raw data). Inits are the independent units: the rate λ̂ = exp(mean), its
SE by the delta method.

Finite width: every estimate is the 1/N extrapolation of two widths, v̂ = (N_b v̂(N_b) − N_s v̂(N_s))/(N_b − N_s),
with the SE of that combination (measured before this check was written: identity at B = 8 is 1.1893, 1.1904,
1.1980, 1.1985 at N = 256 .. 2048 against 1.2, an O(1/N) deficit; relu the same). Finite batch: finite-B cases are
the form at that B (relu and identity at B = 6, where B → B + 1 moves λ by 6-7 %). B = inf cases are simulated at a
batch B_big; their bias_bound is the finite-B term |λ_B − λ_∞| of the mean-field theory, computed here independently
of the form: λ_B by quadrature over the batch sphere (``sphere_rate``: x = √B u, u uniform on the centred unit
sphere; λ_B = ((B − 1) d_1 + d_2 − β)/(α (B − 3))) minus the Gaussian ratio E φ'²/Var φ by Gauss–Hermite, plus the
quadrature's own error (the difference of two node counts; relu's kink makes it 1e-3 at B = 512). No edge of
chaos: BN(σ_w Z φ + σ_b ξ) = BN(Z φ) exactly, so with shared standard-normal weights the measured rate is the same
at every (σ_w, σ_b) of the grid (checked to rounding) and equals λ > 1. False-failure rate: z = 5 per assertion.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from scipy.special import roots_hermitenorm, roots_jacobi

import igbsym
from igbsym import activations as acts

from .checks import register_check, register_sizes, reusable, seed_for, size, z_result

FORM = "meanfield.bn_grad_rate"
register_sizes("meanfield_bn", quick={"widths": (256, 1024), "inits": 8, "inits_small": 32, "depth": 14,
                                      "b_big": 512},
               thorough={"widths": (512, 2048), "inits": 24, "inits_small": 96, "depth": 16, "b_big": 1024})
B_SMALL = 6        # the finite-B cases: B -> B + 1 moves lambda by 6.7 % (relu) and 6.3 % (identity)
GRID = ((1.0, 0.0), (0.3, 1.0), (3.0, 2.0))      # (σ_w, σ_b): the no-edge-of-chaos grid (relu, B = B_SMALL)
SPHERE_NODES = (160, 80)                         # Gauss–Jacobi nodes per axis, and the coarser count for its error


def _derivative(name, x, a=0.0):
    slope = acts.get(name).slope
    if slope is not None:
        return np.where(x > 0, 1.0, a if slope == "a" else float(slope))
    return acts.derivatives(name, "numpy")(x)[0]


def sphere_rate(name, B, a=0.0, nodes=SPHERE_NODES[0]):
    """λ_B of the mean-field theory by quadrature over the batch sphere (module docstring): (x_1, x_2) = √(B − 1)
    (w_1, c w_1 + √(1 − c²) √(1 − w_1²) t), c = −1/(B − 1), w_1 and t Gauss–Jacobi on their marginal laws
    ∝ (1 − w²)^((B − 4)/2) and ∝ (1 − t²)^((B − 5)/2) (two coordinates of a uniform point of S^(B − 2))."""
    n = B - 1
    w1, q1 = roots_jacobi(nodes, (n - 3) / 2, (n - 3) / 2)
    t, q2 = roots_jacobi(nodes, (n - 4) / 2, (n - 4) / 2)
    c, r = -1 / (B - 1), math.sqrt(B - 1)
    W, T = np.meshgrid(w1, t, indexing="ij")
    Q = np.outer(q1 / q1.sum(), q2 / q2.sum())
    x1, x2 = r * W, r * (c * W + math.sqrt(1 - c * c) * np.sqrt(1 - W * W) * T)
    f = acts.get(name).numpy
    p1, p2, g1, g2 = f(x1, a, 0.0), f(x2, a, 0.0), _derivative(name, x1, a), _derivative(name, x2, a)
    v1, v2 = g1 * x1, g2 * x2

    def e(z):
        return float((z * Q).sum())
    alpha, beta = e(p1 * p1) - e(p1 * p2), e(v1 * v1) - e(v1 * v2)
    return ((B - 1) * e(g1 * g1) + e(g1 * g2) - beta) / (alpha * (B - 3))


def gauss_ratio(name, a=0.0, nodes=400):
    """E φ'(Z)²/Var φ(Z) by Gauss–Hermite (probabilists'), the B = inf theory computed apart from the form."""
    z, w = roots_hermitenorm(nodes)
    w = w / w.sum()
    f = acts.get(name).numpy(z, a, 0.0)
    m = f @ w
    return float((_derivative(name, z, a) ** 2) @ w / (((f - m) ** 2) @ w))


def finite_batch_bias(name, B):
    """|λ_B − λ_∞| of the theory plus the sphere quadrature's error (two node counts): the bias bound of a B = inf
    result simulated at batch B."""
    fine, coarse = (sphere_rate(name, B, nodes=k) for k in SPHERE_NODES)
    return abs(fine - gauss_ratio(name)) + abs(fine - coarse)


def _bn(h):
    c = h - h.mean(1, keepdim=True)
    return c / c.pow(2).mean(1, keepdim=True).sqrt()


@reusable
def log_rates(ctx, configs, width, B, depth, inits, seed):
    """{config: [inits]} log-rates (module docstring) for configs (activation, σ_w, σ_b) sharing each init's
    standard-normal weights, biases, data and readout."""
    out = {cfg: np.empty(inits) for cfg in configs}
    lo, hi = 2, depth - 2
    for i in range(inits):
        gen = torch.Generator().manual_seed(seed_for(ctx, "meanfield_bn", seed, width, B, i))
        x = torch.randn(width, B, generator=gen, dtype=torch.float64)
        zs = [torch.randn(width, width, generator=gen, dtype=torch.float64) / math.sqrt(width)
              for _ in range(depth)]
        xis = [torch.randn(width, 1, generator=gen, dtype=torch.float64) for _ in range(depth)]
        r = torch.randn(width, B, generator=gen, dtype=torch.float64)
        for cfg in configs:
            activation, sw, sb = cfg
            act = acts.get(activation)
            h, ys = x.clone().requires_grad_(), []
            for layer in range(depth):
                inp = h if layer == 0 else act.torch(h, 0.0, 0.0)
                h = _bn(sw * (zs[layer] @ inp) + (sb * xis[layer] if layer else 0.0))
                h.retain_grad()
                ys.append(h)
            (h * r).sum().backward()
            n = [float(y.grad.pow(2).sum()) for y in ys]
            out[cfg][i] = (math.log(n[lo]) - math.log(n[hi])) / (hi - lo)
    return out


def _rate(logs):
    m, se = float(np.mean(logs)), float(np.std(logs, ddof=1) / math.sqrt(len(logs)))
    return math.exp(m), math.exp(m) * se


def extrapolated(ctx, configs, B, inits, seed):
    """{config: (λ̂, SE)}: the 1/N extrapolation of the two widths' rates."""
    (ns, nb), depth = size(ctx, "meanfield_bn.widths"), size(ctx, "meanfield_bn.depth")
    small, big = (log_rates(ctx, configs, n, B, depth, inits, seed) for n in (ns, nb))
    out = {}
    for cfg in configs:
        (vs, ss), (vb, sb) = _rate(small[cfg]), _rate(big[cfg])
        out[cfg] = ((nb * vb - ns * vs) / (nb - ns), math.hypot(nb * sb, ns * ss) / (nb - ns))
    return out


@register_check("meanfield_bn_rate", forms=[FORM])
def check_bn_rate(ctx):
    """Gradient-explosion rate of BN MLPs: finite B (relu, identity at B = 6), B = inf (relu, tanh at a large
    batch, the theory's finite-B term as bias), and no edge of chaos (relu at a grid of (sigma_w, sigma_b))."""
    form, inits, few = igbsym.get(FORM), size(ctx, "meanfield_bn.inits_small"), size(ctx, "meanfield_bn.inits")
    results = []
    small = [("relu",) + GRID[0], ("identity", 1.0, 0.3)] + [("relu",) + g for g in GRID[1:]]
    est = extrapolated(ctx, tuple(small), B_SMALL, inits, 1)
    for cfg in small:
        activation, sw, sb = cfg
        v, se = est[cfg]
        results.append(z_result(FORM, f"{activation} B={B_SMALL} sigma_w={sw:g} sigma_b={sb:g}",
                                float(form.numpy(activation=activation, B=B_SMALL)), v, se, inits, 1,
                                note=f"finite B: the form at B = {B_SMALL}; 1/N-extrapolated (no bias term)"))
    grid = [est[("relu",) + g][0] for g in GRID]
    spread = max(grid) - min(grid)
    results[0].note += f"; no EOC: the grid {GRID} gives rates {', '.join(f'{g:.6f}' for g in grid)} " \
                       f"(spread {spread:.1e}: BN removes sigma_w and sigma_b exactly)"
    b_big = size(ctx, "meanfield_bn.b_big")
    big = [("relu", 1.0, 0.3), ("tanh", 1.0, 0.3)]
    est = extrapolated(ctx, tuple(big), b_big, few, 2)
    for cfg in big:
        v, se = est[cfg]
        bias = finite_batch_bias(cfg[0], b_big)
        results.append(z_result(FORM, f"{cfg[0]} B=inf (simulated at B={b_big})",
                                float(form.numpy(activation=cfg[0], B=math.inf)), v, se, few, 2, bias_bound=bias,
                                note=f"bias_bound {bias:.2e}: the theory's finite-B term |lambda_B - lambda_inf| "
                                     "(sphere quadrature minus Gauss-Hermite ratio, plus quadrature error)"))
    return results
