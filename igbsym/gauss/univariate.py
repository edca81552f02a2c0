"""One-dimensional Gaussian expectations E[f(σZ)], Z ~ N(0, 1): of any integrand, and the moments of an activation.

Generic integrands. NumPy: composite 8-point Gauss–Legendre on z ∈ [−13, 13] with panels h = min(0.05, 0.4/σ)
(``expect``); the fixed grids ``Z_FIXED`` (σ <= 8) and ``X_FIXED`` (the x-grid of a far-field remainder, σ > 8) of
``igbsym.gauss.activation``, whose cost is independent of σ. tanh, sigmoid and SiLU have poles at distance π/(2σ) from
the real z axis, so a panel-to-pole ratio >= π/0.8 makes the rule's error <= 1e-15 per unit mass; GELU is entire.
mpmath: ``mp_expect`` (mpmath.quad with σ-independent breakpoints, the reference).
Activation moments (u ~ N(0, q)): ``moments_np`` (E φ, E φ²) on ``kink_nodes`` (cost independent of q),
``moments_mp`` (E φ, E φ², Var φ, the small-noise and Mehler constants) on the fixed mpmath rules, and
``derivative_moment_np/_mp`` (E φ'(u)², the noise factor of Labatie's sensitivity).
Stated bound (checked against mpmath in tests): relative error <= 1e-12 for σ <= 100 (activation moments: q <= 1e300).
"""
from __future__ import annotations

import math
from functools import lru_cache

import mpmath
import numpy as np

from .. import activations as acts
from ..errors import NumericalError
from ..numerics import row_dot
from .rules import X_KINK, composite_gauss_legendre, kink_nodes, mp_gauss, mp_level, normal_nodes

Q_MAX = 100.0          # the fixed mpmath rules' range in q (beyond: mpmath.quad); also the nested route's range
Q_MAX_1D = 1e300       # the one-level moments' range in q: beyond it φ(√q z)² overflows on the z-grid
SMALL_SD = 1e-3        # below this √q, E φ(√q Z) is its Taylor series φ(0) + φ''(0)q/2 + φ''''(0)q²/8

EXPECT_ERROR = ("composite Gauss–Legendre (8 points/panel, panel <= min(0.05, 0.4/sigma)): relative error <= 1e-12 "
                "for sigma <= 100")


def expect(f, sigma, *args, chunk: int = 4096):
    """E[f(σZ, *args)], vectorised over broadcast σ and args (f must broadcast)."""
    sigma, *args = np.broadcast_arrays(np.asarray(sigma, float), *[np.asarray(v, float) for v in args])
    out = np.empty(sigma.shape)
    flat_s, flat_a, flat_o = sigma.ravel(), [v.ravel() for v in args], out.reshape(-1)
    for start in range(0, flat_s.size, chunk):
        s = flat_s[start:start + chunk]
        z, w = normal_nodes(min(0.05, 0.4 / max(float(s.max()), 1e-300)))
        vals = f(s[:, None] * z, *[v[start:start + chunk, None] for v in flat_a])
        flat_o[start:start + chunk] = row_dot(vals, w)
    return out[()] if out.ndim == 0 else out


X_MAX = 45.0          # |x| beyond which an activation's far-field remainder is below 1e-17 relative
SPLIT_FROM = 8.0      # sigma above which igbsym.gauss.activation integrates the far-field remainder in x


def _x_nodes():
    """Composite 8-point Gauss–Legendre on x ∈ [−45, 45], panel <= 0.4 (poles of tanh/sigmoid at distance ≥ π/2),
    with an edge at 0 (an activation's far-field remainder has a kink there)."""
    return composite_gauss_legendre(np.linspace(-X_MAX, X_MAX, 2 * int(np.ceil(X_MAX / 0.4)) + 1))


Z_FIXED = normal_nodes(0.05)   # the σ-independent z-grid (σ <= SPLIT_FROM: panel 0.05 = 0.4/8 on φ's x-scale)
X_FIXED = _x_nodes()


def mp_density(sigma):
    """x -> the N(0, σ²) density, in mpmath."""
    norm = sigma * mpmath.sqrt(2 * mpmath.pi)
    return lambda x: mpmath.exp(-(x / sigma) ** 2 / 2) / norm


def mp_expect(f, sigma, scale=1):
    """E[f(σZ)] by mpmath.quad at the working precision (the reference route).

    ``scale``: the integral's order of magnitude (e.g. σ² for an even integrand that is O(x²) at 0). mpmath.quad stops
    on an absolute error estimate, so an integral of size σ² ≪ 1 would keep only an absolute 1e-dps accuracy;
    integrating f/scale makes the tolerance relative."""
    sigma, scale = mpmath.mpf(sigma), mpmath.mpf(scale)
    pts = [-mpmath.inf] + [sigma * t for t in range(-14, 15)] + [mpmath.inf]
    pts = sorted(set(pts + [mpmath.mpf(t) for t in range(-8, 9)]), key=lambda v: v)
    dens = mp_density(sigma)
    return mpmath.quad(lambda x: f(x) * dens(x) / scale, pts) * scale


def check_q(q, q_max=Q_MAX_1D, route="quadrature"):
    if not np.all(np.isfinite(q)) or np.any(q > q_max):
        bad = np.asarray(q)[~(np.isfinite(q) & (q <= q_max))].flat[0]
        raise NumericalError(f"the second moment q = {bad:.3g} entering a smooth activation is outside the "
                             f"{route} route's range q <= {q_max:g} (sigma_w too large for this depth)")


def moments_np(name, a, q):
    """(M, S) = (E φ(u), E φ(u)²), u ~ N(0, q), vectorised over q."""
    f = acts.get(name).numpy
    q = np.asarray(q, float)
    check_q(q)
    M, S = np.empty(q.shape), np.empty(q.shape)
    a = np.broadcast_to(np.asarray(a, float), q.shape)
    for i in np.ndindex(q.shape):
        sd = math.sqrt(q[i])
        z, w = kink_nodes(sd)
        y = f(sd * z, a[i], 0.0)
        M[i] = 0.0 if acts.get(name).odd else y @ w
        S[i] = (y * y) @ w
    return M, S



@lru_cache(maxsize=None)
def moments_mp(name, a, q, dps, which):
    """Gaussian moments of φ on u ~ N(0, q) at ``dps`` digits, cached (at a fixed q, after a norm or at q's fixed
    point, every layer reuses them): ``which`` = "MS": (E φ, E φ²); "V": Var φ(u); "taylor": (A, C) =
    (E φ'(u)², E φ''(u)²/2), the constants of the small-noise series V = s²A − s⁴C (the 2-term Taylor series in the
    noise sd s, averaged over μ ~ N(0, q − s²) and expanded in s² by the heat equation; at c = 0 it is Var φ(√q Z));
    "mehler": (E φ^(k)(u), k = 1..4), the coefficients of Mehler's series P − M² = Σ_k (cq)^k/k! (E φ^(k)(u))².
    q <= 100: the fixed rules of ``mp_level``; beyond, mpmath.quad with breakpoints where φ bends (``mp_gauss``).
    E φ at q < 10^(−dps/2−2): its Taylor series φ(0) + φ''(0)q/2 + φ''''(0)q²/8 (the sum over ±z would cancel)."""
    fn = acts.get(name).mp
    f = lambda x: fn(x, a, 0)  # noqa: E731
    with mpmath.workdps(dps):
        sd = mpmath.sqrt(q)
        d = acts.get(name).strip
        expect = (lambda h: mp_level(h, d, sd)) if q <= Q_MAX else (lambda h: mp_gauss(h, sd))
        der = acts.derivatives(name, "mpmath")
        if which == "taylor":
            return expect(lambda x: der(x)[0] ** 2), expect(lambda x: der(x)[1] ** 2) / 2
        if which == "mehler":
            return tuple(expect(lambda x, k=k: der(x)[k]) for k in range(4))
        if acts.get(name).odd:
            M = mpmath.mpf(0)
        elif q < mpmath.mpf(10) ** (-(dps // 2) - 2):
            _, d2, _, d4 = acts.derivatives(name, "mpmath")(mpmath.mpf(0))
            M = f(mpmath.mpf(0)) + d2 * q / 2 + d4 * q * q / 8
        else:
            M = expect(f)
        return (M, expect(lambda x: f(x) ** 2)) if which == "MS" else expect(lambda x: (f(x) - M) ** 2)


@lru_cache(maxsize=4096)
def derivative_moment_np(name: str, q: float) -> np.float64:
    """E[φ'(u)²], u ~ N(0, q), at one q (NumPy, cached: after a norm every layer has the same q)."""
    d = acts.derivatives(name, "numpy")
    # panels on φ's x-scale only where it bends: a cost independent of q; φ' is clipped to its constant tails beyond
    # |x| = X_KINK (sigmoid' = σ(1 − σ) is inf/inf there in floating point)
    z, w = kink_nodes(math.sqrt(q))
    return (d(np.clip(math.sqrt(q) * z, -X_KINK, X_KINK))[0] ** 2) @ w


def derivative_moment_mp(name: str, q, dps: int):
    """E[φ'(u)²], u ~ N(0, q), at ``dps`` digits (the fixed rules of ``moments_mp``, cached per q)."""
    return moments_mp(name, 0, q, dps, "taylor")[0]
