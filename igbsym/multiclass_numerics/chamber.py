"""P(max_c G_c <= g) at D = inf on the ordered gaps of the means (IGB paper App. H, the dominant class), for few
classes: a deterministic (C - 2)-dimensional integral, the radius done in closed form.

Sort the standard means z_(1) >= ... >= z_(C) (u = sqrt(gamma) z). The fractions depend on the gaps
d_i = z_(i) - z_(i+1) >= 0 only; with the common mode integrated out the gaps have the density
C! (2 pi)^-(C-1)/2 C^-1/2 exp(-d'M d/2) on the orthant (``gap_form``: M the Gram matrix of the centred positions).
The largest fraction is the top class's, G_top = int phi(v) prod_j Phi(v + sqrt(gamma) a_j) dv with a_j the
cumulative gaps, and each factor increases along every ray d = rho omega (omega on the simplex sum omega = 1), so
{max_c G_c <= g} is star-shaped: rho <= rho*(omega), the root of G_top = g (``ray_roots``). The radius then
integrates in closed form, to the regularised incomplete gamma P((C - 1)/2, rho*^2 q/2), q = omega'M omega, and the
value is the integral over the simplex of a smooth function: Stroud's conical product rule in collapsed coordinates,
composite Gauss-Legendre panels graded geometrically towards the faces where the top classes tie (there rho* runs to
infinity where k tied classes have 1/k <= g, and the integrand saturates at 1 non-analytically; ``simplex_rule``).
The cost grows as the rule's nodes, (panels x points)^(C - 2): used at C = 4 (measured: C = 5 needs grading in three
coordinates and took 194 s for 5 values with the rule still moving by 1e-4 at g = 0.27; the randomised law tables
stay there).
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import special

from ..errors import NumericalError
from ..gauss import composite_gauss_legendre
from ..numerics import bracketed_newton

FINE = (8, 8)         # (geometric gradings towards a tie face, Gauss points per panel) of the value's rule ...
COARSE = (6, 6)       # ... and of the rule whose difference from it is the stated quadrature error (see max_cdf);
                      # both graded deeper (``gradings``) where the integrand's features are finer
G_ERROR = 2e-14       # relative error of G_top and of 1 - G_top: trapezoid (step 0.2, spectrally small), the cut
                      # tails, rounding of ~100 terms, the root's tolerance (tests: mpmath at 30 digits)
V_LOW, V_HIGH = -12.0, 8.5   # the v grid of G_top: phi < 1e-32 below (1 - G_top keeps its digits down to 1e-16),
                             # above, phi (1 - prod Phi) < 1e-33 and G_top misses < 1e-17 of its mass
V_STEP = 0.2
SATURATED = 1e-18     # rho beyond the radius where 1 - P((C - 1)/2, rho^2 q/2) < SATURATED: the integrand is 1 there
ROOT_STEPS = 100
RAY_CHUNK = 4096      # rays per pass of top_fraction
MAX_EXTRA = 30        # gradings resolve g down to 2^-30 (relative) from a threshold 1/k
_SQ2PI = math.sqrt(2 * math.pi)


@lru_cache(maxsize=8)
def simplex_rule(n: int, gradings: tuple, points: int) -> tuple:
    """(omega [nodes, n], weights [nodes]) on the simplex {omega >= 0, sum omega = 1} in R^n, for the Lebesgue measure
    of its first n - 1 coordinates (total 1/(n - 1)!): Stroud's collapsed coordinates
    omega_k = x_k prod_(i<k) (1 - x_i), Jacobian prod_k (1 - x_k)^(n - 2 - k), each x_k on the composite
    Gauss-Legendre rule of ``points`` points on the panels [0, 2^-gradings[k], ..., 1/2, 1] (the top k classes tied,
    omega_0 = ... = omega_(k-2) = 0, is x_0 = ... = x_(k-2) = 0). n = 1: the one point omega = (1)."""
    dim = n - 1
    rules = [composite_gauss_legendre(np.concatenate([[0.0], 2.0 ** -np.arange(depth, -1, -1)]), points)
             for depth in gradings[:dim]]
    nodes = np.meshgrid(*[x for x, _ in rules], indexing="ij")
    X = np.stack([c.ravel() for c in nodes], 1) if dim else np.zeros((1, 0))
    W = np.prod([c.ravel() for c in np.meshgrid(*[w for _, w in rules], indexing="ij")], 0) if dim else np.ones(1)
    omega, rest = np.empty((X.shape[0], n)), np.ones(X.shape[0])
    for k in range(dim):
        W = W * (1 - X[:, k]) ** (dim - 1 - k)
        omega[:, k] = rest * X[:, k]
        rest = rest * (1 - X[:, k])
    omega[:, -1] = rest
    return omega, W


def gap_form(C: int) -> np.ndarray:
    """[C - 1, C - 1] M with |z - mean z|^2 = d'M d for the sorted z and their gaps d (z_i - z_0 = -sum_(k<i) d_k)."""
    L = -np.tril(np.ones((C, C - 1)), -1)
    return L.T @ (np.eye(C) - 1 / C) @ L


def log_gap_constant(C: int) -> float:
    """log of C! (2 pi)^-(C-1)/2 C^-1/2 2^((C-3)/2) Gamma((C-1)/2): the gaps' density constant times the radial
    integral's, int_0^R rho^(C-2) e^(-rho^2 q/2) d rho = 2^((C-3)/2) Gamma((C-1)/2) q^-(C-1)/2 P((C-1)/2, R^2 q/2)."""
    a = (C - 1) / 2
    return (math.lgamma(C + 1) - a * math.log(2 * math.pi) - 0.5 * math.log(C) + (C - 3) / 2 * math.log(2)
            + math.lgamma(a))


def _v_grid() -> tuple:
    v = np.arange(V_LOW, V_HIGH + V_STEP / 2, V_STEP)
    return v, V_STEP * np.exp(-v * v / 2) / _SQ2PI


def top_fraction(cum: np.ndarray, rho: np.ndarray) -> tuple:
    """(G_top, 1 - G_top, dG_top/drho) [n] at rho [n] on the rays cum [n, C - 1] (u_top - u_j = rho cum_j >= 0):
    G_top = int phi(v) prod_j Phi(v + rho cum_j) dv by the trapezoid rule in v (the integrand is smooth and
    Gaussian-tailed), its complement as int phi(v) (1 - prod_j Phi) dv from the log of the product (expm1: relative
    precision as G_top -> 1), and its derivative, sum_j cum_j phi(v + rho cum_j)/Phi(v + rho cum_j) under the
    integral."""
    v, kernel = _v_grid()
    out = np.empty((3, rho.size))
    for a in range(0, rho.size, RAY_CHUNK):          # [rays, v, C - 1] arrays of ~10 MB at a time
        c = cum[a:a + RAY_CHUNK]
        x = v[None, :, None] + rho[a:a + RAY_CHUNK, None, None] * c[:, None, :]
        log_prod = special.log_ndtr(x).sum(-1)
        H = np.exp(log_prod) * kernel
        mills = np.exp(-x * x / 2) / _SQ2PI / np.maximum(special.ndtr(x), 1e-300)
        out[0, a:a + RAY_CHUNK] = H.sum(1)
        out[1, a:a + RAY_CHUNK] = -(np.expm1(log_prod) * kernel).sum(1)
        out[2, a:a + RAY_CHUNK] = (H * (mills * c[:, None, :]).sum(-1)).sum(1)
    return tuple(out)


def ray_roots(cum: np.ndarray, g: float, reach: np.ndarray) -> tuple:
    """(rho* [n], dG/drho there [n]): per ray the root of G_top(rho cum) = g by Newton's method safeguarded by
    bisection on [0, reach] (G_top increases along the ray, from 1/C at 0), on G_top - g where g <= 1/2 and on
    (1 - g) - (1 - G_top) above (each side to its own relative precision); inf (slope 0) where G_top(reach) < g (the
    integrand is saturated there). A root is met where the residual is <= 1e-15 min(g, 1 - g) or its bracket is down
    to rounding; NumericalError if not within ROOT_STEPS steps."""
    upper, side = g > 0.5, min(g, 1 - g)
    slope = np.zeros(cum.shape[0])

    def residual(rows, r):
        G, Q, slope[rows] = top_fraction(cum[rows], r)
        return ((1 - g) - Q if upper else G - g), slope[rows]

    def converged(f, lo, hi):
        return (np.abs(f) <= 1e-15 * side) | (hi - lo <= 4e-16 * hi)     # met, or down to rounding
    live = residual(np.arange(cum.shape[0]), reach)[0] >= 0
    slope[:] = 0.0                                   # saturated rays keep slope 0
    r, lo, hi = np.where(live, np.minimum(1.0, reach / 2), 0.0), np.zeros(cum.shape[0]), reach.copy()
    if bracketed_newton(residual, r, lo, hi, converged, ROOT_STEPS - 1, np.nonzero(live)[0]).size:
        raise NumericalError(f"multiclass.max_fraction_cdf: the ray roots at g = {g!r} did not converge in "
                             f"{ROOT_STEPS} steps")
    return np.where(live, r, np.inf), slope


@lru_cache(maxsize=4)
def _setup(C: int, rule: tuple) -> tuple:
    """(cumulative gaps [nodes, C - 1], q, weights, saturation radius) of the simplex rule (gradings, points)."""
    omega, W = simplex_rule(C - 1, *rule)
    q = np.einsum("ni,ij,nj->n", omega, gap_form(C), omega)
    a = (C - 1) / 2
    weight = W * np.exp(log_gap_constant(C) - a * np.log(q))
    reach = np.sqrt(2 * special.gammainccinv(a, SATURATED) / q)
    return np.cumsum(omega, 1), q, weight, reach


def _value(g: float, gamma: float, C: int, rule: tuple) -> tuple:
    """(value, deterministic error) on one rule: sum_nodes weight P(a, rho*^2 q/2), and sum weight x the density of
    the radius at rho* x the root's error G_ERROR min(g, 1 - g) / (dG/drho) + SATURATED per saturated node."""
    cum, q, weight, reach = _setup(C, rule)
    rho, slope = ray_roots(math.sqrt(gamma) * cum, g, reach)
    a = (C - 1) / 2
    finite = np.isfinite(rho)
    t = np.where(finite, np.where(finite, rho, 0.0) ** 2 * q / 2, np.inf)
    F = np.where(finite, special.gammainc(a, np.where(finite, t, 0.0)), 1.0)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        log_density = (a - 1) * np.log(t) - t - math.lgamma(a) + np.log(rho * q)      # dP/drho = density(t) rho q
        moved = np.where(finite & (slope > 0), np.exp(log_density) * G_ERROR * min(g, 1 - g)
                         / np.where(slope > 0, slope, 1.0), 0.0)
    moved = np.where(finite, np.nan_to_num(moved, nan=0.0, posinf=np.inf), SATURATED)
    return float(weight @ F), float(weight @ moved)


def gradings(g: float, gamma: float, C: int, base: int) -> tuple:
    """Per collapsed coordinate x_i, base + the log2 of the finest scale of the integrand's saturation near the tie
    faces through it, ~ min |g - 1/k| / sqrt(gamma) over k >= i + 2 tied classes (their shares tend to 1/k, so just
    above 1/k the top must lead by a margin that scale resolves; at large gamma the radius's structure sits at
    rho ~ 1/sqrt(gamma)), down to 2^-MAX_EXTRA from a threshold."""
    out = []
    for i in range(C - 2):
        near = max(2.0 ** -MAX_EXTRA, min([1.0] + [abs(g - 1 / k) * k for k in range(i + 2, C)]))
        out.append(base + max(0, math.ceil(math.log2(math.sqrt(max(gamma, 1.0)) / near))))
    return tuple(out)


@lru_cache(maxsize=256)
def max_cdf(g: float, gamma: float, C: int) -> tuple:
    """(P(max_c G_c <= g), its stated absolute error) at D = inf, 0 < gamma < inf: the FINE rule's value; the error
    |FINE - COARSE| (both rules converge geometrically in their points per panel and gradings, so the coarse rule's
    error, which the difference measures, bounds the fine one's; measured: the bound >= 7x the fine rule's error at
    70 random (gamma, g) at C = 4 against a rule 6 gradings x 12 points finer, >= 11x at 150 at C = 3 against
    three.max_cdf) plus each rule's deterministic part (_value). 0 for g <= 1/C, 1 for g >= 1. Memoised: a form's
    value and its bound share a run."""
    if g <= 1 / C:
        return 0.0, 0.0
    if g >= 1:
        return 1.0, 0.0
    fine, det_fine = _value(g, gamma, C, (gradings(g, gamma, C, FINE[0]), FINE[1]))
    coarse, det_coarse = _value(g, gamma, C, (gradings(g, gamma, C, COARSE[0]), COARSE[1]))
    return min(max(fine, 0.0), 1.0), abs(fine - coarse) + det_fine + det_coarse
