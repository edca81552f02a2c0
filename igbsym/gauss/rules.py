"""Quadrature rules for Gaussian expectations: the nodes every route of ``igbsym.gauss`` is built on.

NumPy: composite Gauss–Legendre (``composite_gauss_legendre``, ``gauss_legendre``), the 7-15 Gauss-Kronrod pair
(``composite_gauss_kronrod``: a value and, as its difference from the Gauss rule, an error estimate) and the
Gauss-Legendre rule's N(0, 1)-weighted form on z ∈ [−Z_MAX, Z_MAX] (``normal_nodes``; the tail mass beyond Z_MAX = 13
is < 1e-38), panels sized to an activation's x-scale where it bends (``kink_nodes``), Gauss–Hermite where a level's
error bound allows it (``level_nodes``).
mpmath: fixed rules accurate to 10^-(dps+8) by their a-priori error bounds for integrands analytic in a strip
(``mp_rules``, ``mp_level``, ``mp_nested``; Gauss–Hermite below GH_SCALE, else the trapezoid rule), and
``mp_gauss`` (mpmath.quad with breakpoints) where q is beyond the fixed rules' range.
"""
from __future__ import annotations

import math
from functools import lru_cache

import mpmath
import numpy as np

Z_MAX = 13.0
POINTS = 8
X_KINK = 45.0          # beyond |x| = 45 every smooth φ is constant or linear to < 3e-20 (sigmoid, SiLU: e^-45;
                       # tanh, GELU: smaller): only |x| <= 45 needs panels on the x-scale
GH_MAX = 128           # NumPy's Gauss-Hermite nodes are accurate in double precision up to this order
GH_SCALE = 0.3         # a Gaussian level of the nested mp integral with sd below this uses Gauss-Hermite, else a
                       # trapezoid


@lru_cache(maxsize=None)
def gauss_legendre(n: int):
    """The n-point Gauss–Legendre rule on [−1, 1] (nodes, weights), computed once per n."""
    return np.polynomial.legendre.leggauss(n)


def composite_gauss_legendre(edges, points: int = POINTS):
    """(x, w): the ``points``-point Gauss–Legendre rule on every panel [edges[i], edges[i+1]], flattened;
    ∫ f over [edges[0], edges[-1]] ≈ f(x) @ w."""
    return _on_panels(edges, *gauss_legendre(points))


def _on_panels(edges, x, *weights):
    """A rule (nodes x on [-1, 1], one or more weight vectors) mapped onto every panel [edges[i], edges[i+1]] and
    flattened: (nodes, *weights)."""
    edges = np.asarray(edges, dtype=float)
    mid, half = (edges[1:] + edges[:-1]) / 2, (edges[1:] - edges[:-1]) / 2
    return ((mid[:, None] + half[:, None] * x).ravel(),) + tuple((half[:, None] * w).ravel() for w in weights)


# Gauss-Kronrod 7-15 on [-1, 1], the nonnegative half (QUADPACK qk15; Piessens et al. 1983): Kronrod nodes, their
# weights, and the 7-point Gauss weights of the odd-indexed nodes (the Gauss-Legendre nodes among them)
_GK15_X = (0.991455371120812639206854697526329, 0.949107912342758524526189684047851,
           0.864864423359769072789712788640926, 0.741531185599394439863864773280788,
           0.586087235467691130294144845693013, 0.405845151377397166906606412076961,
           0.207784955007898467600689403773245, 0.0)
_GK15_WK = (0.022935322010529224963732008058970, 0.063092092629978553290700663189204,
            0.104790010322250183839876322541518, 0.140653259715525918745189590510238,
            0.169004726639267902826583426598550, 0.190350578064785409913256402421014,
            0.204432940075298892414161999234649, 0.209482141084727828012999174891714)
_GK15_WG = (0.0, 0.129484966168869693270611432679082, 0.0, 0.279705391489276667901467771423780,
            0.0, 0.381830050505118944950369775488975, 0.0, 0.417959183673469387755102040816327)


def gauss_kronrod_15():
    """(nodes, Kronrod weights, Gauss weights) of the 7-15 Gauss-Kronrod pair on [-1, 1], nodes ascending: the
    15-point Kronrod rule (exact to degree 22) and the 7-point Gauss rule on 7 of its nodes (degree 13, weight 0 on
    the other 8), so one set of values gives a result and, as its difference from the Gauss rule, an error estimate."""
    x, wk, wg = (np.asarray(v) for v in (_GK15_X, _GK15_WK, _GK15_WG))
    return (np.concatenate([-x[:-1], x[::-1]]), np.concatenate([wk[:-1], wk[::-1]]),
            np.concatenate([wg[:-1], wg[::-1]]))


def composite_gauss_kronrod(edges):
    """(x, wk, wg): the 7-15 Gauss-Kronrod pair (gauss_kronrod_15) on every panel [edges[i], edges[i+1]], flattened:
    f(x) @ wk is the 15-point composite rule, f(x) @ wg the 7-point Gauss rule on the same values."""
    return _on_panels(edges, *gauss_kronrod_15())


def normal_nodes(h: float, points: int = POINTS):
    """(z, w) with E[f(Z)] ≈ f(z) @ w for Z ~ N(0, 1): composite Gauss–Legendre on [−Z_MAX, Z_MAX], panels ≤ h."""
    z, w = composite_gauss_legendre(np.linspace(-Z_MAX, Z_MAX, int(np.ceil(2 * Z_MAX / h)) + 1), points)
    return z, w * np.exp(-z * z / 2) / np.sqrt(2 * np.pi)


def kink_nodes(sd):
    """(z, w) with E[φ(sd·Z)] ≈ φ(sd z) @ w at a cost independent of sd: panels <= 0.4/sd (the x-scale 1 of φ) on
    |sd z| <= X_KINK, where φ bends, and <= 0.25 elsewhere, where φ(sd z) is constant or linear in z."""
    h = 0.4 / max(sd, 1e-300)
    zk = X_KINK / max(sd, 1e-300)
    if h >= 0.25 or zk >= Z_MAX:
        return normal_nodes(min(0.25, h))
    outer = np.linspace(zk, Z_MAX, int(np.ceil((Z_MAX - zk) / 0.25)) + 1)
    inner = np.linspace(-zk, zk, int(np.ceil(2 * zk / h)) + 1)
    z, w = composite_gauss_legendre(np.concatenate([-outer[::-1], inner[1:-1], outer]))
    return z, w * np.exp(-z * z / 2) / np.sqrt(2 * np.pi)



@lru_cache(maxsize=None)
def hermite_nodes(n: int):
    z, w = np.polynomial.hermite_e.hermegauss(n)
    return z, w / math.sqrt(2 * math.pi)


def level_nodes(strip, sd, panel):
    """(z, w) for one Gaussian level E[h(sd·Z)] of the nested NumPy route: the n-point Gauss–Hermite rule where
    its error bound e^{−(d/sd)√(2n)} (h analytic in |Im x| < d, ``strip``) is below 1e-18 with n <= GH_MAX
    (0.01 <= sd <= ~1.2: ~80² instead of 832² nodes a layer), else composite Gauss–Legendre with panels <= ``panel``."""
    n = int((41.5 * sd / strip) ** 2 / 2) + 8
    return hermite_nodes(-(-n // 8) * 8) if n <= GH_MAX and sd >= 0.01 else normal_nodes(panel)


def mp_gauss(f, sd):
    """E[f(sd·Z)] by Gauss–Legendre quadrature in z on [−∞, −8, −3, 0, 3, 8, ∞], plus ±x/sd for x = 1, 5, 15, 45
    where φ bends on its x-scale 1 (sd > 1; smooth integrands)."""
    dens = 1 / mpmath.sqrt(2 * mpmath.pi)
    pts = {mpmath.mpf(p) for p in (-8, -3, 0, 3, 8)}
    if sd > 1:
        pts |= {sgn * x / sd for x in (1, 5, 15, X_KINK) for sgn in (-1, 1)}
    return mpmath.quad(lambda z: f(sd * z) * dens * mpmath.exp(-z * z / 2),
                       [-mpmath.inf] + sorted(pts) + [mpmath.inf], method="gauss-legendre")


@lru_cache(maxsize=None)
def mp_hermite(n: int, dps: int):
    """The n-point Gauss–Hermite rule for E[f(Z)], Z ~ N(0, 1), at ``dps`` digits: Newton on He_n from NumPy's
    nodes; weights (n − 1)!/(n He_{n−1}(z)²)."""
    with mpmath.workdps(dps + 10):
        zs, ws = [], []
        for x0 in np.polynomial.hermite_e.hermegauss(n)[0][n // 2:]:
            z = mpmath.mpf(float(x0))
            for _ in range(100):
                p0, p1 = mpmath.mpf(1), z
                for k in range(1, n):
                    p0, p1 = p1, z * p1 - k * p0
                step = p1 / (n * p0)
                z -= step
                if abs(step) <= mpmath.mpf(10) ** (-dps - 8) * (1 + abs(z)):
                    break
            p0, p1 = mpmath.mpf(1), z
            for k in range(1, n):
                p0, p1 = p1, z * p1 - k * p0
            w = mpmath.factorial(n - 1) / (n * p0 * p0)
            zs += [z] if z == 0 else [z, -z]
            ws += [w] if z == 0 else [w, w]
    return zs, ws


def mp_rules(d, sd):
    """Quadrature parameters for a Gaussian level of sd ``sd`` against a factor analytic in |Im| < d, accurate to
    10^-(dps+8): (T, z_max, the trapezoid step, the Gauss–Hermite order)."""
    T = mpmath.log(10) * (mpmath.mp.dps + 8)
    # trapezoid: error ~ e^{-2πd/h} from the strip and e^{-2π² sd²/h²} from the Gaussian (aliasing)
    h = min(2 * mpmath.pi * d / T, mpmath.pi * sd * mpmath.sqrt(2 / T))
    # Gauss–Hermite on f(sd z): error ~ e^{-(d/sd)√(2n)} (measured for sigmoid: conservative); for small sd the
    # remainder n!/(2n)!·E f^(2n) with |f^(k)| <= k!(sd/d)^k on the strip, n!(sd/d)^(2n) (measured: GELU² at sd = 0.1
    # has 5.7e-39 at n = 20, 5e-59 at 30, as this predicts). It is searched past the first estimate, which was the
    # minimum 20 there: the 1-d moments at q = 0.01 held 38 digits at 50 (and q = 0.003 48 at 100)
    n = max(20, int(((T * sd / d) ** 2) / 2) + 1)
    if sd < d / 4:
        lg, log_fac, t = float(mpmath.log(d / sd)), 0.0, float(T) + 3
        for m in range(1, 10 * n + 200):
            log_fac += math.log(m)
            if m >= 4 and 2 * m * lg - log_fac >= t:
                n = m
                break
    return T, mpmath.sqrt(2 * T) + 1, h, n


def mp_level(h, d, sd):
    """E[h(sd·Z)], Z ~ N(0, 1), h analytic in |Im x| < d, by a fixed rule accurate to 10^-(dps+8) (``mp_rules``):
    Gauss–Hermite if sd < GH_SCALE, else the trapezoid rule with step h ≤ min(2πd/T, π sd √(2/T))."""
    _, zt, step, n = mp_rules(d, sd)
    if sd < GH_SCALE:
        zo, wo = mp_hermite(n, mpmath.mp.dps)
        return mpmath.fdot(wo, [h(sd * z) for z in zo])
    N = int(sd * zt / step) + 1
    dens = 1 / mpmath.sqrt(2 * mpmath.pi)
    w = [step * dens / sd * mpmath.exp(-(i * step / sd) ** 2 / 2) for i in range(N + 1)]
    return w[0] * h(mpmath.mpf(0)) + mpmath.fsum(w[i] * (h(i * step) + h(-i * step)) for i in range(1, N + 1))


def mp_outer(g, d, sdm):
    """E_μ[g(μ)²], μ ~ N(0, sdm²), g analytic in |Im μ| < d."""
    return mp_level(lambda mu: g(mu) ** 2, d, sdm)


def mp_nested(f, d, sdm, s, inner=None):
    """P = E_μ[(E_ξ f(μ + ξ))²], μ ~ N(0, sdm²), ξ ~ N(0, s²) at the working precision (f analytic in |Im x| < d;
    ``inner``: E_ξ f(μ + ξ) in closed form, if known). The nested mpmath.quad cost 50-250 s a layer; here each level
    uses a fixed rule accurate to 10^-(dps+8) by its a-priori error bound (``mp_rules``): a level whose sd is below
    GH_SCALE uses Gauss–Hermite (f(μ + s z) is analytic in a z-strip of half-width d/s); otherwise the trapezoid
    rule on a uniform grid (exponentially accurate for integrands analytic in a strip and Gaussian-decaying); when
    both levels use the trapezoid they share one grid, so f is evaluated once per node and the inner integral is a
    banded discrete convolution. mp routes at two precisions use different rules, so their agreement (the domain
    test's convergence check) also checks the rules."""
    dens = 1 / mpmath.sqrt(2 * mpmath.pi)
    _, zt, h_o, n_o = mp_rules(d, sdm)
    _, _, h_i, n_i = mp_rules(d, s)
    if inner is not None:
        return mp_outer(inner, d, sdm)
    if s < GH_SCALE:
        zi, wi = mp_hermite(n_i, mpmath.mp.dps)
        return mp_outer(lambda mu: mpmath.fdot(wi, [f(mu + s * z) for z in zi]), d, sdm)
    band = lambda h: int(s * zt / h) + 1  # noqa: E731
    kern = lambda h: [h * dens / s * mpmath.exp(-(k * h / s) ** 2 / 2) for k in range(-band(h), band(h) + 1)]  # noqa
    if sdm < GH_SCALE:
        zo, wo = mp_hermite(n_o, mpmath.mp.dps)
        B, vals = band(h_i), {}

        def g(mu):
            j0 = int(mpmath.nint(mu / h_i))
            js = range(j0 - B, j0 + B + 1)
            for j in js:
                if j not in vals:
                    vals[j] = f(j * h_i)
            return mpmath.fdot([h_i * dens / s * mpmath.exp(-((j * h_i - mu) / s) ** 2 / 2) for j in js],
                               [vals[j] for j in js])
        return mpmath.fdot(wo, [g(sdm * z) ** 2 for z in zo])
    h = min(h_o, h_i)
    N, B = int(sdm * zt / h) + 1, band(h)
    K = kern(h)
    phi = [f(j * h) for j in range(-N - B, N + B + 1)]          # phi[j + N + B] = f(j h)
    w = [h * dens / sdm * mpmath.exp(-(i * h / sdm) ** 2 / 2) for i in range(-N, N + 1)]
    g = [mpmath.fdot(K, phi[i:i + 2 * B + 1]) for i in range(2 * N + 1)]   # g(i h) for i = -N..N
    return mpmath.fdot(w, [x * x for x in g])
