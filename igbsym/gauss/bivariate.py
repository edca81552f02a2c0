"""Two-dimensional Gaussian expectations of an activation: the pair moments behind its layer map.

For (u, u') ~ N(0, q[[1, c], [c, 1]]) (two independent inputs through one unit: IGB paper App. F.1) the map of a
smooth φ needs S = E φ(u)², P = E φ(u)φ(u') = E_μ[(E_ξ φ(μ + ξ))²] (centres μ ~ N(0, cq), data noise
ξ ~ N(0, eq), e = 1 − c carried on its own), V = E_μ[Var_ξ φ(μ + ξ)], M = E φ(u) and D = P − M². ``pair_np``
returns (S, P/S, V/S, M, D/S) per point in double precision, ``pair_mp`` at the working mpmath precision.
NumPy: nested composite Gauss–Legendre / Gauss–Hermite levels (``rules.level_nodes``), the 2-term Taylor series of
Var_ξ in the noise sd s < TAYLOR_S, φ's linear branch below Q_LINEAR, Mehler's first terms where c <= 1/2 at tiny
q. mpmath: the fixed rules of ``rules.mp_nested`` (GELU's inner level in closed form), V = S − P at extra
precision, the small-noise and Mehler series where they are exact to the working precision.
"""
from __future__ import annotations

import math
from functools import lru_cache

import mpmath
import numpy as np
from scipy import special

from .. import activations as acts
from ..errors import NumericalError
from .rules import GH_MAX, hermite_nodes, kink_nodes, level_nodes, mp_nested
from .univariate import Q_MAX, Q_MAX_1D, SMALL_SD, check_q, moments_mp, moments_np

Q_LINEAR = 1e-60       # below this q a smooth φ with φ(0) = 0 is linear to double precision
TAYLOR_S = 1e-4        # inner noise sd below which Var_ξ φ(μ+ξ) is its 2-term Taylor series (rel. error ~ s⁴)
QUAD_ERROR = ("composite 8-point Gauss-Legendre on z in [-13, 13] (panels <= min(0.25, 0.4 scale/sd)) for E[phi], "
              "E[phi^2] and both levels of P = E_mu[(E_xi phi(mu+xi))^2], V = E_mu[Var_xi phi(mu+xi)] (two-pass; "
              "2-term Taylor series in the noise sd s < 1e-4): relative error <= 1e-11 per layer for q <= 100 "
              "(one-level moments, c = 0: q <= 1e300, panels on the x-scale only where phi bends, |x| <= 45) "
              "(tests compare with nested mpmath quadrature)")


def pair_np(name, a, q, c, e):
    """(S, P/S, V/S, M, D/S) by quadrature, pointwise over broadcast (q, c, e, a) (each point its scalar value).
    Odd φ from c = 0 (the only reachable value: the data are symmetric): M = 0 and P = 0 exactly."""
    if acts.get(name).odd and not np.any(np.asarray(c) != 0):
        S = moments_np(name, a, q)[1]
        zero = np.zeros(np.shape(S))
        return S, zero, zero + 1, zero, zero
    q, c, e, a = np.broadcast_arrays(q, c, e, np.asarray(a, float))
    check_q(q)
    out = np.empty((5,) + q.shape)
    for i in np.ndindex(q.shape):
        out[(slice(None),) + i] = _pair_cached(name, float(q[i]), float(c[i]), float(e[i]), float(a[i]))
    return tuple(out)


@lru_cache(maxsize=4096)
def _pair_cached(name, q, c, e, a):
    """``_pair_point`` memoised on its (exact float) arguments: a layer after a norm, or at a fixed point of
    the block map, repeats its input state, so a deep path evaluates the quadrature once, not once a layer."""
    act = acts.get(name)
    return _pair_point(name, act.odd, act.strip, act.numpy, acts.derivatives(name, "numpy"), q, c, e, a)


def clear_cache() -> None:
    _pair_cached.cache_clear()


def _pair_point(name, odd, strip, f, derivs, q, c, e, a):
    """(S, c', e', M, d') at one point: c' = P/S, e' = V/S, d' = (P − M²)/S."""
    sd = math.sqrt(q)
    f0 = float(f(np.float64(0.0), a, 0.0))
    g1, g2, g3, g4 = (float(v) for v in derivs(np.float64(0.0)))
    if q < Q_LINEAR and f0 == 0.0:
        # φ(x) = g1 x + g2 x²/2 to relative 1e-60 on the scale √q; per unit q, P = g2² q/4 + c g1² (M² + Mehler's
        # first term) and V = e g1². M² is the whole of c' where c = 0
        p, v = g2 * g2 * q / 4 + c * g1 * g1, e * g1 * g1
        return g1 * g1 * q, p / (p + v), v / (p + v), g2 * q / 2, c * g1 * g1 / (p + v)
    z, w = kink_nodes(sd)
    y = f(sd * z, a, 0.0)
    M = 0.0 if odd else (y @ w if sd >= SMALL_SD else f0 + g2 * q / 2 + g4 * q * q / 8)  # Taylor: no cancellation
    S = (y * y) @ w
    if c == 0:
        if sd < TAYLOR_S:                     # Var φ(√q Z) by its Taylor series: no cancellation as q → 0
            V = q * g1 * g1 + q * q * (g2 * g2 / 2 + g1 * g3)
        else:
            V = ((y - M) ** 2) @ w
        return _on_constraint(S, M * M, V, M, 0.0)
    s, sdm = math.sqrt(e * q), math.sqrt(c * q)
    check_q(q, Q_MAX, "nested quadrature")
    zo, wo = level_nodes(strip, sdm, min(0.25, 0.4 * max(s, 1.0) / sdm))
    mu = sdm * zo
    if s < TAYLOR_S:
        f1, f2, f3, _ = (np.asarray(v, float) + 0 * mu for v in derivs(mu))
        V = (s * s * f1 * f1 + s**4 * (f2 * f2 / 2 + f1 * f3)) @ wo
        if c > 0.5:
            return S, (S - V) / S, V / S, M, (S - V - M * M) / S
        # c <= 1/2 forces q = s²/(1 − c) < 2e-8: P − M² = Σ_k (cq)^k/k! (E φ^(k)(u))² (Mehler), error (cq)^4
        ak = [(np.asarray(v, float) + 0 * z) @ w for v in derivs(sd * z)[:3]]
        D = sum((c * q) ** k / math.factorial(k) * ak[k - 1] ** 2 for k in (1, 2, 3))
        return _on_constraint(S, M * M + D, V, M, D)
    zi, wi = level_nodes(strip, s, min(0.25, 0.4 / s))
    P = V = D = 0.0
    step = max(1, (1 << 21) // zi.size)
    for lo in range(0, mu.size, step):
        vals = f(mu[lo:lo + step, None] + s * zi, a, 0.0)
        m = vals @ wi
        P += (m * m) @ wo[lo:lo + step]
        D += ((m - M) ** 2) @ wo[lo:lo + step]
        V += (((vals - m[:, None]) ** 2) @ wi) @ wo[lo:lo + step]
    return _on_constraint(S, P, V, M, D)


def _on_constraint(S, P, V, M, D):
    """(S, c', e', M, d') with c' = P/(P + V), e' = V/(P + V), d' = D/(P + V): P and V come from separate
    quadratures, and P + V = S holds only to their error; the block map is unstable off the line c + e = 1
    (a drift δ grows by d log S/d log q > 1 a layer: gelu + LayerNorm went from the fixed point γ = 3.17 to 37
    by layer 300), so the state is put back on it. γ' = P/V is unchanged."""
    T = P + V
    return S, P / T, V / T, M, D / T


def _gelu_inner(mu, s):
    """E_ξ[GELU(μ + ξ)], ξ ~ N(0, s²), in closed form: μΦ(μ/τ) + s²φ(μ/τ)/τ, τ = √(1 + s²) (E Φ(μ + ξ) = Φ(μ/τ);
    Stein's lemma E[ξ Φ(μ + ξ)] = s² E[φ(μ + ξ)]); checked against the quadrature in tests/test_spec.py."""
    tau = mpmath.sqrt(1 + s * s)
    return mu * mpmath.ncdf(mu / tau) + s * s * mpmath.npdf(mu / tau) / tau


def pair_mp(name, a, q, c, e):
    """(S, P/S, V/S, M, D/S) at the working precision: 1-d moments by mpmath quadrature (cached per q), the nested
    P = E_μ[(E_ξ φ(μ+ξ))²] by ``rules.mp_nested`` (GELU: inner level in closed form), V = S − P at extra precision (the
    digits lost to the cancellation), or V = s²A − s⁴C when s² < 10^(−dps/2−2) (relative error ~ s⁴ < 10^(−dps))."""
    fn, a = acts.get(name).mp, mpmath.mpf(a)
    f = lambda x: fn(x, a, 0)  # noqa: E731
    dps = mpmath.mp.dps
    s2 = e * q
    taylor = s2 < mpmath.mpf(10) ** (-(dps // 2) - 2)
    q_max, route = (Q_MAX, "nested quadrature") if c != 0 else (Q_MAX_1D, "quadrature")
    if not (mpmath.isfinite(q) and q <= q_max):
        raise NumericalError(f"the second moment q = {mpmath.nstr(q, 3)} entering a smooth activation is outside the "
                             f"{route} route's range q <= {q_max:g} (sigma_w too large for this depth)")
    # V/S ~ s²/q: the digits S − P loses; the 1-d sums lose up to log10(1/sd) < dps/4 + 1 to the ±z cancellation
    extra = 10 + dps // 4 + (0 if (c == 0 or taylor) else 10 * (max(0, int(-mpmath.log10(s2 / q))) // 10 + 1))
    with mpmath.workdps(dps + extra):
        q = +q
        M, S = moments_mp(name, a, q, dps + extra, "MS")
        if taylor:
            A, C = moments_mp(name, a, q, dps + extra, "taylor")
            V = s2 * A - s2 * s2 * C
            # P = M² + D where P ≪ S, not S − V: at small q, M² ~ q² and S − V would cancel every digit
            if c == 0:
                D = mpmath.mpf(0)
                P = M * M
            elif c > 0.5:
                P = S - V
                D = P - M * M
            else:   # c <= 1/2 forces q = s²/(1 − c) tiny: Mehler's series, remainder (cq)^5 < 10^(-2 dps) relative
                ak = moments_mp(name, a, q, dps + extra, "mehler")
                D = mpmath.fsum((c * q) ** k / mpmath.factorial(k) * ak[k - 1] ** 2 for k in (1, 2, 3, 4))
                P = M * M + D
        elif c == 0:
            V, D = moments_mp(name, a, q, dps + extra, "V"), mpmath.mpf(0)
            P = M * M
        else:
            # c = 1 − e from the accurately carried e (c itself holds dps digits: V = S − P would lose them)
            s, sdm = mpmath.sqrt(s2), mpmath.sqrt((1 - e if e < 0.5 else c) * q)
            strip = acts.get(name).strip
            if name == "gelu":
                P = mp_nested(None, strip, sdm, s, inner=lambda mu: _gelu_inner(mu, s))
            else:
                P = mp_nested(f, strip, sdm, s)
            V, D = S - P, P - M * M
        return +S, +(P / S), +(V / S), +M, +(D / S)


# --------------------------------------------------------------------------------------------- unequal variances
KERNEL_TOL = 1e-10     # target of the Gauss–Hermite error bound per level of pair_kernel_np
KERNEL_BOUND = 1e-7    # the largest bound accepted (at n = GH_MAX nodes)
KERNEL_ERROR = ("tensor Gauss-Hermite rule, n nodes per level with e^{-(d/sd)sqrt(2n)} <= 1e-10 (phi analytic in "
                "|Im x| < d, sd the larger standard deviation), n <= 128: error <= 1e-7 relative to E phi(u)^2 "
                "(<= 1e-10 where n < 128; tests compare with mpmath 2-d quadrature); a larger bound is refused "
                "(tanh: variances > 2.4; erf, sigmoid, gelu, silu: > 9.7)")


def pair_kernel_np(name, a, k, va, vb):
    """E[φ(u)φ(v)] for (u, v) ~ N(0, [[va, k], [k, vb]]), elementwise over broadcast arrays: the activation map of
    the dataset kernel for two points with unequal variances (Lee et al. 2018, Eq. 5). u = √va z₁,
    v = √vb(ρ z₁ + √(1 − ρ²) z₂), ρ = k/√(va vb), each level by an n-point Gauss–Hermite rule (``KERNEL_ERROR``);
    a point with va = 0 (or vb = 0) is φ(0)·E φ(√vb Z). NumericalError where the stated bound cannot be met."""
    act = acts.get(name)
    f = act.numpy
    k, va, vb = np.broadcast_arrays(*(np.asarray(v, float) for v in (k, va, vb)))
    out = np.empty(k.shape)
    flat_k, flat_a, flat_b, flat_o = k.ravel(), va.ravel(), vb.ravel(), out.reshape(-1)
    sd_max = float(np.sqrt(max(flat_a.max(initial=0.0), flat_b.max(initial=0.0))))
    if not np.isfinite(sd_max):
        raise NumericalError(f"pair_kernel_np: a non-finite variance entered activation {name}")
    n = min(GH_MAX, int((math.log(1 / KERNEL_TOL) * sd_max / act.strip) ** 2 / 2) + 8)
    if math.exp(-act.strip / max(sd_max, 1e-300) * math.sqrt(2 * n)) > KERNEL_BOUND:
        raise NumericalError(f"activation {name}: variance {sd_max ** 2:.3g} is outside the Gauss-Hermite kernel "
                             f"route's range (error bound e^(-(d/sd) sqrt(2n)) > {KERNEL_BOUND:g} at n = {GH_MAX})")
    z, w = hermite_nodes(-(-n // 4) * 4)
    chunk = max(1, (1 << 21) // (z.size * z.size))
    for lo in range(0, flat_k.size, chunk):
        sa, sb = np.sqrt(flat_a[lo:lo + chunk]), np.sqrt(flat_b[lo:lo + chunk])
        den = sa * sb
        rho = np.clip(np.divide(flat_k[lo:lo + chunk], den, out=np.zeros_like(den), where=den > 0), -1.0, 1.0)
        outer = f(sa[:, None] * z, a, 0.0)                                           # [m, n]
        v = sb[:, None, None] * (rho[:, None, None] * z[None, :, None]
                                 + np.sqrt(1 - rho * rho)[:, None, None] * z[None, None, :])
        inner = f(v, a, 0.0) @ w                                                     # [m, n]
        flat_o[lo:lo + chunk] = (outer * inner) @ w
    return out


def bvn_cdf(a, b, rho, r=None):
    """Phi_2(a, b; rho) = P(X <= a, Y <= b), corr(X, Y) = rho in (-1, 1), by Owen's T (vectorised): ½Φ(a) + ½Φ(b) −
    T(a, (b − ρa)/(a r)) − T(b, (a − ρb)/(b r)) − β, r = √(1 − ρ²), β = ½ if a, b have opposite signs (or one is 0 and
    a + b < 0); ``r`` may be passed exactly where ρ rounds to 1. At a = 0 the first T is its limit sign(b − ρa)/4
    (likewise at b = 0); signs, not products, decide β (a·b underflows for tiny arguments)."""
    a, b, rho = np.broadcast_arrays(np.asarray(a, float), np.asarray(b, float), np.asarray(rho, float))
    r = np.sqrt((1 - rho) * (1 + rho)) if r is None else np.asarray(r, float)   # r exact when given (rho -> 1)
    sa, sb = np.sign(a), np.sign(b)
    beta = np.where((sa * sb < 0) | ((sa * sb == 0) & (a + b < 0)), 0.5, 0.0)
    with np.errstate(all="ignore"):
        # (b − ρa)/(a r) as (b/a − ρ)/r: a subnormal a carries few digits, and ρa or a·r would pass its rounding on
        ta = np.where(a == 0, np.sign(b - rho * a) / 4, special.owens_t(a, (b / a - rho) / r))
        tb = np.where(b == 0, np.sign(a - rho * b) / 4, special.owens_t(b, (a / b - rho) / r))
    out = 0.5 * (special.ndtr(a) + special.ndtr(b)) - ta - tb - beta
    return np.where((a == 0) & (b == 0), 0.25 + np.arcsin(rho) / (2 * np.pi), out)   # the orthant (Sheppard)


# --------------------------------------------------------------------------------------------- closed pair kernels
GELU_KERNEL_ERROR = ("closed form (Stein / orthant moments): absolute error <= 1e-14 sqrt(E phi(u)^2 E phi(v)^2) "
                     "(rounding of a few dozen flops; tests/test_pair_kernels.py against mpmath 2-d quadrature)")


def gelu_kernel(k, va, vb):
    """E[GELU(u) GELU(v)], GELU(x) = xΦ(x), (u, v) ~ N(0, [[va, k], [k, vb]]), elementwise, in closed form:

        k/4 + k·arcsin(k/(αβ))/(2π) + (va vb α²β² + k²(1 − va vb)) / (2π α²β² √(α²β² − k²)),  α² = 1 + va, β² = 1 + vb.

    Derivation: Φ(u) = P(X <= u) for an independent X ~ N(0, 1), so the value is E[u v 1{A >= 0} 1{B >= 0}] with
    A = u − X, B = v − Y jointly Gaussian with (u, v); regressing u, v on the standardised (A, B) (correlation
    r = k/(αβ)) leaves k·P(A, B >= 0) plus the quadrant's second moments (P = 1/4 + arcsin(r)/(2π),
    E[Ã²1] = P + r√(1 − r²)/(2π), E[ÃB̃1] = rP + √(1 − r²)/(2π)), which collapse to the form above (the same
    closed form as Tsuchida et al. 2021, "Avoiding kernel fixed points", for GELU). At k = 0 it is
    E GELU(u)·E GELU(v) = va vb/(2παβ). α²β² − k² = 1 + va + vb + (va vb − k²) >= 1 + va + vb (no cancellation);
    the arcsine as atan2 (no loss near |r| = 1). ``GELU_KERNEL_ERROR``."""
    k, va, vb = (np.asarray(v, float) for v in (k, va, vb))
    a2, b2 = 1 + va, 1 + vb
    ab2 = a2 * b2
    root = np.sqrt(1 + va + vb + np.maximum(va * vb - k * k, 0.0))
    return (k / 4 + k * np.arctan2(k, root) / (2 * np.pi)
            + (va * vb * ab2 + k * k * (1 - va * vb)) / (2 * np.pi * ab2 * root))
