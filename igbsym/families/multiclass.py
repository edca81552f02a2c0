"""Multiclass IGB: the law of the class fractions (G_1, ..., G_C) of an untrained C-class network.

Paper: igb-initial-guessing-bias.txt App. H (Eqs. 189-192) and App. I.1.2-I.1.3 (CIFAR-10/100).

Model (derived in derivations/multiclass.py; every assumption is in ``MODEL``): given the weights, the C output
means mu_c are i.i.d. N(0, V_W) over the weight ensemble and the outputs over the data are independent
N(mu_c, V_chi) around them (infinite width; the class outputs uncorrelated over the data). With u_c = mu_c/sqrt(V_chi)
~ N(0, gamma), gamma = V_W/V_chi (the binary law's gamma), the fraction of the data put in class c is

    G_c = P_x(argmax = c | W) = integral phi(z) prod_{c' != c} Phi(z + u_c - u_c') dz.

C = 2 gives G_0 = Phi((u_0 - u_1)/sqrt 2) = Phi(sqrt(gamma) Z): the igb law exactly.

Numeric routes (no closed form exists for C >= 3; each says how it is computed and how accurate it is):

* ``var``: E[G_c^2] = E[Phi_2(T_1, T_2; rho)^(C-1)], (T_1, T_2) standard bivariate normal with rho = gamma/(1+gamma)
  (the inner expectation over the other C - 1 means is a bivariate-normal CDF), and ``max_fraction`` at D = inf:
  E[max_c G_c] = C E[Phi_2(X, Y; r)^(C-1)], r = sqrt(rho) (derivations/multiclass.py). Both by the deterministic 2-d
  quadrature of igbsym/multiclass_numerics/power.py (Gumbel variables of T_1, T_2; the excess over 1/C^2 formed
  pointwise, so Var keeps its relative precision as gamma -> 0): relative error <= 1e-12 (VAR_ERROR). mpmath: exact at
  C = 2; power.mp_moment is the independent reference at C >= 3 (minutes per point, test data).
* C = 3, exactly (igbsym/multiclass_numerics/three.py; derivations/multiclass.py): G_1 depends on the differences
  d_j = u_j - u_1 only, and with p = (d_2 + d_3)/2, q = (d_2 - d_3)/2 independent and G_1 decreasing in p, the law of
  G_1 (``cdf``, ``pdf``) is a 1-d integral over q, and ``p_empty`` / ``n_empty``, ``entropy`` (D = inf) and
  ``max_fraction_cdf`` (D = inf) are 2-d (1-d) integrals, all in log space around their own peak: relative error
  <= THREE_ERROR = 1e-10, rare events included (p_empty(0.1, 3, 1000) = 1.139e-13).
* C >= 4: the law of one G_c (``cdf``, ``pdf``): randomised quasi-Monte Carlo over the other C - 1 means,
  deterministic (fixed scrambles), with a RELATIVE error bound that holds at 99.99 % (``law_relative_bound``).
  Given the others G_c is an increasing function of u_c, so P(G_c <= g) = E[Phi(u*(g)/s)], u* its root
  (Rao-Blackwellised over u_c). Two kinds of table (``_centred`` picks the one with the tighter measured bound):
  - plain: 16 independently scrambled Sobol nets of 2^m points (``points_log2``: 2^12 below C = 10 ... 2^7 at
    C = 10^4) mapped to descending order statistics, the largest importance-sampled in its Gumbel variable
    (``_others``), s^2 = gamma;
  - centred (gamma up to 2 ... 10, ``_centred``): the others are centred on their mean, whose Gaussian offset from
    u_c integrates in closed form with u_c (``_Table``: s^2 = gamma C/(C - 1)), and the centred others, a standard
    normal vector of the (C - 2)-dimensional sum-zero subspace, are integrated in polar form (``_radial_rows``,
    igbsym/multiclass_numerics/spherical.py): the radius by the Gauss rule of its chi law (``radial_rule``; G_c
    depends on the centred others mostly through it at small gamma), the direction by a uniformly rotated product
    rule on the sphere at C = 4, 5 (``sphere_rule``: spectrally accurate, 1e-13 between scrambles at C = 4), as in
    Genz and Monahan's stochastic spherical-radial rules, and from C = 6 by the plain nets' directions with control
    variates: the even symmetric power sums of the direction up to degree 14, whose exact means are Gaussian moments
    (``power_feature_means``), cross-fitted over the scrambles (``_Table.controlled``; 1e3 ... 1e9 less variance).
    The radial rule's error is stated from the half rule on the first scramble (``_Table.radial_error``).
  G_hat(u) on a u grid by the trapezoid rule (< 1e-10), u* by cubic Hermite inversion in probit space (det_error). The
  product H(w) = prod_j Phi(w - u_j) over the others: exact below C = BINNED_FROM; from there the others are binned on
  a lattice and log H is a 5th-order Taylor expansion in the bins' exact moments, one matrix product
  (``binned_log_cdf_of_max``; remainder eta <= 1.5e-8 at C = 1000, computed per table). Error bound (``law_bound``):
  Student t (15 dof, 99.99 %) times the between-scramble standard error, plus det_error of the value (relative to the
  nearer tail), plus the rows whose root falls below their u grid (computed), plus what G_hat's error (eta and the
  trapezoid's) can move the cdf by (``Deterministic.g_hat``, computed), plus the radial rule's error; relative:
  b/(F_hat - b), inf where no digit is resolved (the far lower tail). The density (``pdf``) is the rows' own, with
  its own bound the same way (``_Table.density_bounded``: the Hermite slope's error, what G_hat's error moves it by,
  the radial rule's). Every form states this per value (``Accuracy.per_value``: ``cdf_relative_bound``,
  ``pdf_relative_bound``, ... ; ``igbsym eval --bound``). Measured (``_centred``) at g in [1/(2C), 2/C]:
  <= 1e-7 relative for gamma in [0.01, 0.3] at every C in [4, 10^4] and up to gamma = 10 at C = 4; 3e-7 ... 1e-6 at
  gamma = 1e-3; at gamma = 1 <= 5e-8 up to C = 10, 4e-7 ... 1e-5 above; 1e-6 ... 8e-5 at gamma = 3; the plain
  tables' 1e-7 ... 1e-5 at gamma = 10 and <= 3e-6 beyond. ``p_empty``, ``n_empty`` and ``entropy`` (any D) are
  functionals of that law, E psi(G_c) = psi(1) - int psi'(g) F(g) dg (``law_functional``), with per-scramble
  replicates, so their relative bounds are stated the same way (``p_empty_relative_bound``, ``entropy_se``).
  ``p_empty`` on a centred table radially tilts the centred others (``radial_tilt``: the rare empty class is carried
  by spread others; one cross-entropy step on a pilot scramble picks the scale of the radial rule, the likelihood
  ratio is exact).
* ``entropy`` at finite D: the observed entropy is a sum of one-class terms and each count is binomial(D, G_c), so
  E H(K/D) = C E psi_D(G_c) with the kernel psi_D(g) = E h(K/D), K ~ binomial(D, g) (a Frullani integral over the
  binomial's generating function, igbsym/multiclass_numerics/observed.py): the same functional of the law of one
  G_c as at D = inf, with psi_D for -g log g (C = 2: 1-d, C = 3: 2-d quadrature, C >= 4: ``law_functional``).
* ``max_fraction`` at finite D, ``max_fraction_cdf`` at finite D, C >= 3: randomised QMC over whole vectors
  (G_1..G_C) of the law tables' nets (``net_means``), each vector computed by the same trapezoid rule
  (``fraction_vectors``; sum_c G_c = 1 to 1e-12) and observed through multinomial counts at the dataset size D, which
  is what a network evaluated on D points shows; the SE (over the scrambles) is stated relative. ``max_fraction``:
  the exact D = inf value + the sampled overtaking of the leader; ``max_fraction_cdf``: P(max_c K_c <= k | G) with
  the leading pair's split integrated exactly (``pair_smoothed_max_cdf``). Where that wins on a measured map of
  variance x time (``exact_count_mean``, ``exact_count_cdf``: gamma D and D/C bounded) no count is drawn:
  E[max_c K_c | G] and P(max_c K_c <= k | G) are exact per vector (igbsym/multiclass_numerics/counts.py:
  Poissonisation at a saddle point). C = 2: exact
  (``max_fraction_binary``, ``max_cdf_binary``: binomial closed forms integrated over the igb law).
* ``paper_approx``: the paper's App. H construction as printed (class c against the largest of the other C - 1
  means, Eqs. 189-192 + the binary law): an erratum (it violates sum_c G_c = 1; at gamma -> 0 it puts every G_c at
  1/2 instead of 1/C); deterministic 40-node Gumbel-Gauss rule for the maximum (maxpool's rule) for gamma >= 0.1, a
  log-space trapezoid rule around the integrand's peak below (_paper_log_space).
* ``max_fraction_cdf`` at C = 4, D = inf, deterministic (igbsym/multiclass_numerics/chamber.py): the fractions depend
  on the ordered gaps of the means only, {max_c G_c <= g} is star-shaped in them, so the radius integrates in closed
  form (an incomplete gamma at the root of G_top = g along each ray) and the directions on a graded product rule of
  the simplex: relative error max(1e-6, 1e-12/(4 g - 1)), stated per value, in both tails (max_cdf_relative_bound).
* ``max_fraction``, ``max_fraction_cdf``, ``entropy`` at C = 2, D = inf: closed forms (G_0 = Phi(sqrt(gamma) Z)), the
  entropy by a 1-d Gauss-Legendre rule in the integrand's own scale (_binary_entropy).
* mpmath references of peaked integrals (p_empty at C = 2, paper_approx) by mp_log_concave_integral: the integrand
  divided by its peak and integrated in the peak's scale (mpmath.quad's tolerance is absolute).
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import mpmath
import numpy as np
import sympy as sp
from scipy import optimize, special, stats

from ..errors import InputError, NumericalError
from ..gauss import composite_gauss_kronrod, composite_gauss_legendre
from ..form import Accuracy, ClosedForm, Condition, NumericRoute, Param, Provenance
from ..functions import Phi, PhiInv, mp_log_ncdf, mp_ncdf, mp_ncdf_inv
from ..numerics import row_dot
from ..registry import register
from ..extreme import gumbel_gauss_rule, quantile_at_gumbel
from ..multiclass_numerics import chamber, three
from ..multiclass_numerics.three import THREE_ERROR
from ..multiclass_numerics.counts import max_count_cdf, max_count_mean
from ..multiclass_numerics.observed import entropy_kernel
from ..multiclass_numerics.power import moment_excess_many
from ..multiclass_numerics.spherical import (helmert, power_feature_means, power_features, radial_rule,
                                             sphere_rule)

IGB = "igb-initial-guessing-bias.txt"
C_MAX = 10_000
SEED = 20_240_613       # fixed: the routes are deterministic functions of their inputs
VEC_BUDGET = 100_000    # samples * C for the whole-vector Monte Carlo (max_fraction, entropy)
H_Z = 0.2               # largest trapezoid step in the data-noise variable (see _step)
_SQ2PI = math.sqrt(2 * math.pi)

MODEL = ("model: (i) given W the C output means are i.i.d. N(0, V_W) over the weights (infinite width: a sum of many "
         "independent terms); (ii) given W the outputs over the data are independent N(mu_c, V_chi) with one common "
         "V_chi (infinite width: class outputs uncorrelated over the data); (iii) i.i.d. data; gamma = V_W/V_chi")

gamma_s = sp.Symbol("gamma", nonnegative=True)
C_s = sp.Symbol("C", integer=True)
g_s = sp.Symbol("g", nonnegative=True)
D_s = sp.Symbol("D", integer=True)
z_s, u_s = sp.Symbol("z", real=True), sp.Symbol("u", real=True)

GAMMA = Param("gamma", "nonnegative", "IGB strength Var_W(mu)/Var_chi(O) (0 and inf are the exact limits)",
              allow_inf=True)
C_PARAM = Param("C", "integer", "number of classes", minimum=2, maximum=C_MAX)
G_PARAM = Param("g", "nonnegative", "class fraction, 0 <= g <= 1")
G_OPEN = Param("g", "positive", "class fraction, 0 < g < 1")
D_MAX = 10**9            # largest finite dataset size (NumPy's multinomial draws counts up to 2^63)
D_PARAM = Param("D", "integer", "dataset size (number of data points)", minimum=1, maximum=D_MAX)
D_INF = Param("D", "integer", "dataset size (inf = the population fraction)", default=math.inf, minimum=1,
              maximum=D_MAX, allow_inf=True)
G_AT_MOST_1 = Condition(sp.Le(g_s, 1), "g <= 1 (a fraction)")
G_BELOW_1 = Condition(sp.Lt(G_OPEN.symbol(), 1), "g < 1 (the density lives on 0 < g < 1; g = 1 is an atom at "
                                                  "gamma = inf)")


def _step(C: int) -> float:
    """Trapezoid step for integrals against prod_j Phi(w - u_j) over <= C classes. That product is (up to) the CDF
    of a maximum of C normals, Gumbel-like with scale b = 1/sqrt(2 ln C), whose Fourier transform decays only like
    exp(-pi b |omega|/2): the trapezoid error is ~exp(-pi^2 b/h); h = 0.4 b keeps it below 2e-11."""
    return min(H_Z, 0.4 / math.sqrt(2 * math.log(max(C, 2))))


# ============================================================================ bivariate normal (Owen's T)


def mp_bvn_cdf(h, k, rho):
    """Phi_2 in mpmath by Drezner's integral:
    Phi(h)Phi(k) + (1/2pi) int_0^asin(rho) exp(-(h^2+k^2-2hk sin t)/(2cos^2 t)) dt."""
    f = lambda t: mpmath.exp(-(h * h + k * k - 2 * h * k * mpmath.sin(t)) / (2 * mpmath.cos(t) ** 2))  # noqa: E731
    return mpmath.ncdf(h) * mpmath.ncdf(k) + mpmath.quad(f, [0, mpmath.asin(rho)]) / (2 * mpmath.pi)


def _pairs(gamma, C, *more):
    arrays = np.broadcast_arrays(np.asarray(gamma, float), np.asarray(C, float), *[np.asarray(m, float) for m in more])
    return arrays[0].shape, [a.ravel() for a in arrays]


# ============================================================================ variance (2-d quadrature)
VAR_ERROR = ("relative error <= 1e-12 (measured <= 1e-15 against the exact C = 2 value asin(rho)/(2 pi) over gamma in "
             "[1e-3, 1e3] and <= 1e-14 against the mpmath reference mp_moment at C = 3; self-convergence <= 1e-15 up "
             "to C = 1e4): 2-d Gauss-Legendre in the Gumbel variables of (T1, T2) with the excess over 1/C^2 formed "
             "pointwise (no cancellation as gamma -> 0), igbsym/multiclass_numerics/power.py")
VAR_REL = 1e-12


def _correlations(gamma: float) -> tuple:
    """(rho, sqrt(1 - rho^2)) for rho = gamma/(1+gamma), and (r, sqrt(1 - r^2)) for r = sqrt(rho): each complement in
    closed form (1 - rho^2 = (1 + 2 gamma)/(1 + gamma)^2), so gamma >= 1e16, where rho rounds to 1, stays exact."""
    rho = gamma / (1 + gamma)
    return rho, math.sqrt(1 + 2 * gamma) / (1 + gamma), math.sqrt(rho), 1 / math.sqrt(1 + gamma)


def _by_gamma(fn, gamma, C):
    """Evaluate fn(float gamma, int array Cs) -> values once per distinct gamma, over its distinct C (array call =
    scalar call): the C of one gamma share one Phi_2 table (moment_excess_many)."""
    shape, (gm, cc) = _pairs(gamma, C)
    out = np.empty(gm.shape)
    for g in np.unique(gm):
        at = gm == g
        cs, inverse = np.unique(cc[at], return_inverse=True)
        out[at] = np.asarray(fn(float(g), cs.astype(int)), float)[inverse]
    return out.reshape(shape)


def _var_many(gamma: float, Cs: np.ndarray) -> np.ndarray:
    """Var G_c = E[Phi_2(T1, T2; rho)^(C-1)] - 1/C^2 at every C of Cs (App. H, the second moment;
    derivations/multiclass.py)."""
    if gamma == 0:
        return np.zeros(Cs.shape)
    if math.isinf(gamma):
        return (1 - 1 / Cs) / Cs                     # one class takes everything: G_c is Bernoulli(1/C)
    rho, r = _correlations(gamma)[:2]
    out = np.full(Cs.shape, math.atan2(gamma, math.sqrt(2) * math.sqrt(gamma + 0.5)) / (2 * math.pi))  # C = 2: exact
    many = Cs > 2                                    # asin(rho)/(2 pi) = atan2(gamma, sqrt(1 + 2 gamma))/(2 pi)
    if many.any():
        out[many] = moment_excess_many(rho, Cs[many] - 1, r)[1]
    return np.minimum(out, (Cs - 1) / Cs**2)       # Var G_c <= E G_c - (E G_c)^2 (0 <= G_c <= 1): rounding at rho ~ 1


def var_numpy(gamma, C):
    """Var G_c at every (gamma, C): one 2-d Phi_2 table per distinct gamma, shared by its C (moment_excess_many;
    VAR_ERROR)."""
    return _by_gamma(_var_many, gamma, C)


def var_mp(gamma, C):
    """mpmath value where an exact one exists: C = 2, asin(gamma/(1+gamma))/(2 pi) (derivations/multiclass.py).
    For C >= 3 the independent reference is multiclass_numerics.power.mp_moment (minutes per point; test data)."""
    if int(C) != 2:
        raise NumericalError("multiclass.var: no fast full-precision mpmath route for C >= 3; the independent "
                             "reference is igbsym.multiclass_numerics.power.mp_moment (minutes per point)")
    return mpmath.asin(gamma / (1 + gamma)) / (2 * mpmath.pi)


def _var_limit(gamma, C):
    if gamma == 0:
        return 0
    if gamma == mpmath.inf:
        return (1 - mpmath.mpf(1) / C) / C
    return None


# ============================================================================ the law of one G_c (randomised QMC)
K_SCRAMBLES = 16         # independent scrambles (replicates): the error estimate has K - 1 degrees of freedom
SOBOL_DIM = 256          # Sobol coordinates drive the largest other means; further ones are i.i.d. uniform (padding)
CONFIDENCE = 0.9999      # two-sided level of the stated error bound (Student t over the scrambles)
T_FACTOR = float(special.stdtrit(K_SCRAMBLES - 1, 0.5 + CONFIDENCE / 2))   # 5.24
_MEMO = 4                # law tables kept (up to ~120 MB each at 2^16 rows)


GUMBEL_WIDTH = 1.5       # importance sampling of the largest other mean: Gumbel variable with this scale


def points_log2(C: int) -> int:
    """2^m RQMC points per scramble (K_SCRAMBLES scrambles), sized so one (gamma, C) table costs about a second on one
    core up to C = 200 and ten at C = 10^4: the rows cost ~ C each (exact products) below BINNED_FROM and ~ the
    lattice bins above it. The randomised-QMC error falls like 2^-m (measured: 4-10x per factor 4 at C = 4)."""
    if C < BINNED_FROM:
        return 12
    return 11 if C <= 200 else (9 if C <= 2000 else 7)


@lru_cache(maxsize=4)
def _others(C: int, m: int | None = None) -> tuple:
    """([K_SCRAMBLES, 2^m, C - 1] the other C - 1 standard normal means in descending order, [K, 2^m] weights);
    m = points_log2(C) unless given (the centred tables' directions take fewer points, _directions).

    One scrambled (LMS + digital shift) Sobol net per replicate, fixed seeds. The largest other mean x is
    importance-sampled: its Gumbel variable t (Phi(x)^(C-1) = exp(-e^-t), exactly Gumbel) is drawn from a Gumbel of
    scale GUMBEL_WIDTH by the first coordinate, weight p(t)/q(t) <= 2 (bounded), so the rare configurations with a
    large (or small) other maximum, which make the tails of the law of G_c, are sampled ~20x more often. Given x, the
    other C - 2 are i.i.d. N(0, 1) below x, by Renyi's representation of descending uniform order statistics
    (U_(1) = Phi(x) V_2^(1/(C-2)), U_(i) = U_(i-1) V_(i+1)^(1/(C-1-i))), so the best-spread first Sobol coordinates
    drive the largest means (effective dimension reduction, like a Brownian bridge); coordinates past SOBOL_DIM are
    i.i.d. uniform."""
    d, m, b = C - 1, points_log2(C) if m is None else m, GUMBEL_WIDTH
    dims = min(d, SOBOL_DIM)
    out, weight = np.empty((K_SCRAMBLES, 2**m, d)), np.empty((K_SCRAMBLES, 2**m))
    for k, child in enumerate(np.random.SeedSequence([SEED, C, 0]).spawn(K_SCRAMBLES)):
        net, pad = child.spawn(2)
        v = np.empty((2**m, d))
        v[:, :dims] = stats.qmc.Sobol(dims, scramble=True, seed=np.random.default_rng(net)).random_base2(m)
        v[:, dims:] = np.random.default_rng(pad).random((2**m, d - dims))
        v = np.clip(v, 1e-300, 1 - 1e-16)
        t = -b * np.log(-np.log(v[:, 0]))
        weight[k] = b * np.exp(-t - np.exp(-t) + t / b + np.exp(-t / b))
        x = quantile_at_gumbel(t, d)
        out[k, :, 0] = x
        if d > 1:
            log_u = special.log_ndtr(x)[:, None] + np.cumsum(np.log(v[:, 1:]) / (d - 1 - np.arange(d - 1)), axis=1)
            out[k, :, 1:] = -special.ndtri(-np.expm1(log_u))      # Phi^-1(U) through 1 - U (no rounding near 1)
    return out, weight


SPHERE_RULES = {4: (64,), 5: (32, 8)}    # C: product rule sizes of the directions (sphere_rule)


def radial_nodes(C: int) -> int:
    """Gauss nodes of the radial rule of the centred others (_radial_rows); with the directions, 2^points_log2(C) rows
    per scramble. The radius of C - 2 centred standard normals concentrates as C grows (relative width
    ~ 1/sqrt(2C)), so fewer nodes do; where the directions are integrated well (the angular rule at C = 4, exact to
    ~1e-13; the control variates) the rows go to the radius, whose integrand has structure at r ~ 1/sqrt(gamma)
    (C = 4, 64 nodes: the half rule differs by <= 6e-7 relative at gamma = 10; C = 10, 16 against 8 nodes: the
    stated bound of 1 - F at g = 0.8 falls from 7e-4 to 5e-5 at gamma = 1, while at C = 30 and 100 the halved
    directions cost more). Measured against 40 (24) nodes on the same directions, the cdf moves by <= 2e-10 relative
    at C = 5 (16 nodes), <= 1e-10 at C = 100 (8 nodes) down to values of 1e-258."""
    return 64 if C <= 4 else (16 if C < 20 else (8 if C <= 2000 else 4))


def _directions(C: int, scrambles: int) -> tuple:
    """(theta [scrambles, M, C - 1], weight [scrambles, M]): unit vectors of the centred others' subspace (sum zero)
    and their weights, summing to 1 per scramble, M = 2^points_log2(C) / radial_nodes(C) per scramble, antipodes
    included. C in SPHERE_RULES (C - 2 <= 3 dimensions): the product sphere_rule, uniformly randomly rotated per
    scramble (a stochastic spherical rule, as Genz and Monahan's spherical-radial rules; unbiased, and spectrally
    accurate for a smooth integrand: between-scramble SE ~1e-13 relative at C = 4, 1e-8 at C = 5). Else the
    directions of the plain table's base points (_others on M/2 points: importance-sampled top, so the nets' best
    coordinates still drive the largest others) and their antipodes (the normal law is symmetric), with the
    importance weights: exact likelihood ratios of the whole vector, hence of any function of its direction; from
    C = 6 these carry control variates (_Table.controlled), which beat the product rules there (measured at C = 6,
    7, gamma = 1: 8e-7 against 5e-6 with features to degree 10)."""
    if C in SPHERE_RULES:
        pts, w = sphere_rule(SPHERE_RULES[C])
        rng = np.random.default_rng([SEED, C, 1])
        turns = [stats.special_ortho_group.rvs(C - 2, random_state=rng) for _ in range(K_SCRAMBLES)][:scrambles]
        theta = np.einsum("kij,nj->kni", np.array(turns), pts) @ helmert(C - 1)
        return theta, np.broadcast_to(w, theta.shape[:2]).copy()
    M = 2 ** points_log2(C) // radial_nodes(C)
    base, w0 = _others(C, int(math.log2(M // 2)))
    base, w0 = base[:scrambles], w0[:scrambles] / (2 * w0[:scrambles].sum(1, keepdims=True))
    theta = base - base.mean(2, keepdims=True)
    if C > 2:
        theta /= np.linalg.norm(theta, axis=2, keepdims=True)
    return np.concatenate([theta, -theta], 1), np.concatenate([w0, w0], 1)


def _radial_rows(C: int, n: int, tilt: float = 1.0, scrambles: int = K_SCRAMBLES) -> tuple:
    """(xi [rows, C - 1] descending, weight [rows], nodes per direction, theta): the centred others r theta of the first
    ``scrambles`` scrambles, theta the QMC directions (_directions) and r the n-node radial_rule scaled by ``tilt``.
    Direction and radius of centred standard normals are independent, so the weight is the direction's times
    w_r tilt^(C-2) exp(-(tilt^2 - 1) r^2/2) (the exact likelihood ratio of the scaled radius at the rule's node).
    Both theta and -theta are directions, so the rule integrates the even part of each ray, a smooth function of
    r^2 (Gauss-Laguerre in r^2/2 converges geometrically). Rows per scramble: [direction, node], a direction's
    nodes contiguous."""
    theta, w0 = _directions(C, scrambles)
    r, w = radial_rule(C, n)
    rows = theta[:, :, None, :] * (tilt * r)[:, None]
    xi = -np.sort(-rows.reshape(-1, C - 1), axis=1)
    lr = (C - 2) * math.log(tilt) - (tilt * tilt - 1) * r * r / 2
    return xi, (w0[:, :, None] * (w * np.exp(lr))).reshape(-1), r.size, theta


def _cdf_of_max(w: np.ndarray, u: np.ndarray, block: int = 64) -> np.ndarray:
    """H[s, k] = prod_j Phi(w[s, k] - u[s, j]) (the CDF of max_j (u_j + eps_j)) for rows u[s, :] in descending order.
    A factor with w - u_j > 8.3 is 1 in double precision, so whole blocks of small u_j are skipped where they are."""
    H = np.ones(w.shape)
    lead = w - u[:, :1]
    for j0 in range(0, u.shape[1], block):
        uj = u[:, j0:j0 + block]
        cols = np.nonzero((lead - (uj[:, :1] - u[:, :1]) < 8.3).any(0))[0]
        if cols.size == 0:
            break
        a, b = cols[0], cols[-1] + 1
        H[:, a:b] *= special.ndtr(w[:, a:b, None] - uj[:, None, :]).prod(-1)
    return H


def _offsets(C: int, below: float, above: float) -> tuple:
    """(h, offsets w - max u) of the trapezoid grid for C classes: from max - below to max + sqrt(2 ln C) + above."""
    h = _step(C)
    top = math.sqrt(2 * math.log(max(C, 2))) + above
    return h, -below + h * np.arange(int(math.ceil((top + below) / h)) + 1)


@lru_cache(maxsize=32)
def _law_grid(C: int):
    """The law tables' grid for the C - 1 other classes: w offsets [-20.5, x + 17.5] (x = sqrt(2 ln(C-1))) of step h,
    of which H is computed on the core [-8.5, x + 8.5] (H <= Phi(w - max) < 1e-17 below, 1 - H < 1e-17 above); u
    offsets [-12, x + 9] of step h / U_REFINE; the kernels h phi(w - u) and h (w - u) phi(w - u) for G and dG/du."""
    h, rel = _offsets(C - 1, 20.5, 17.5)
    x = rel[-1] - 17.5
    core = (int(np.searchsorted(rel, -8.5)), int(np.searchsorted(rel, x + 8.5)))
    ui = (int(np.searchsorted(rel, -12.0)), int(np.searchsorted(rel, x + 9.0)))
    rel_u = rel[ui[0]] + h / U_REFINE * np.arange(U_REFINE * (ui[1] - ui[0] - 1) + 1)
    d = rel[None, :] - rel_u[:, None]
    ker = np.exp(-d * d / 2) / _SQ2PI * h
    return rel, core, rel_u, ker.T.copy(), (d * ker).T.copy()


U_REFINE = 2   # the u grid (G_hat, its inversion) at h / 2: the cubic Hermite root's error falls 16x (det_relative)


def _core_cdf(u: np.ndarray, w: np.ndarray) -> np.ndarray:
    """H on the core grid w [rows, n] (see _law_grid) by the exact product: every 8th point first; where all rows are
    < 1e-18 (below) or > 1 - 1e-17 (above) H is monotone, so it is set to 0 / 1 there and computed only in between."""
    H = np.zeros(w.shape)
    coarse = np.arange(0, w.shape[1], 8)
    hc = _cdf_of_max(w[:, coarse], u)
    low = np.nonzero((hc <= 1e-18).all(0))[0]
    high = np.nonzero((hc >= 1 - 1e-17).all(0))[0]
    a = coarse[low[-1]] if low.size else 0
    b = coarse[high[0]] + 1 if high.size else w.shape[1]
    H[:, b:] = 1.0
    H[:, a:b] = _cdf_of_max(w[:, a:b], u)
    return H


# --- binned others: log H = sum_j log Phi(w - u_j) by a Taylor expansion around lattice bin centres ---------------
TAYLOR_ORDER = 5         # p: per bin the exact moments sum_j e_j^n, n <= p, of the offsets e_j from the bin centre
D_CUT = 17.5             # others more than D_CUT below the top are dropped: w - u_j >= -8.5 + D_CUT = 9 on the core
LOG_PHI_9 = 1.2e-19      # >= |log Phi(x)| for x >= 9 (= Phi(-9)/Phi(9) (1 + 1e-18) = 1.13e-19): per dropped other
D6_SUP = 0.4456          # >= sup_x |d^6/dx^6 log Phi(x)| (0.445478 at x = 1.949; tests check it on a fine grid)
BINNED_FROM = 10         # the binned route for C >= BINNED_FROM; below it saves nothing (measured: equal at C = 8)


def inverse_mills(x):
    """lam(x) = phi(x)/Phi(x) = (log Phi)'(x), through log_ndtr (no underflow of Phi in the lower tail)."""
    return np.exp(-x * x / 2 - special.log_ndtr(x)) / _SQ2PI


def log_phi_derivatives(x: np.ndarray, n: int) -> np.ndarray:
    """[n + 1, len(x)]: f^(k)(x) for f = log Phi, k = 0..n. f' = lam = phi/Phi (the inverse Mills ratio of -x) and
    lam' = -lam (x + lam), so f^(k) = P_k(x, lam) with P_1 = lam, P_(k+1) = dP_k/dx - lam (x + lam) dP_k/dlam
    (coefficient arrays c[a, b] of x^a lam^b; derivations/multiclass.py checks them by SymPy). f and lam from
    log_ndtr (no underflow). For x >= -8.6 (all this module uses) the polynomials lose < 1e-8 absolute to
    cancellation (k <= 6; measured against mpmath), which the moments they multiply (<= (h/2)^k/k! each) make
    < 1e-17 in log H."""
    x = np.asarray(x, float)
    lam = inverse_mills(x)
    out, c = [special.log_ndtr(x), lam], np.array([[0.0, 1.0]])
    for _ in range(n - 1):
        nx, nl = c.shape
        nxt = np.zeros((nx + 1, nl + 1))
        nxt[:nx - 1, :nl] += c[1:] * np.arange(1, nx)[:, None]         # d/dx x^a lam^b
        dl = c * np.arange(nl)[None, :]                                  # b x^a lam^(b-1) times -(x lam + lam^2)
        nxt[1:, :nl] -= dl
        nxt[:nx, 1:] -= dl
        c = nxt
        out.append(np.polynomial.polynomial.polyval2d(x, lam, c))
    return np.array(out[:n + 1])


@lru_cache(maxsize=8)
def _taylor_table(C: int) -> np.ndarray:
    """B [K + 1, p + 1, n_core]: (-1)^n/n! f^(n)(rel_i + k h) for the bins k = 0..K (centre k h below the top other
    mean, K h >= D_CUT), the Taylor orders n <= p and the core grid offsets rel_i (_law_grid)."""
    rel, (c0, c1) = _law_grid(C)[:2]
    h = rel[1] - rel[0]
    k = np.arange(math.ceil(D_CUT / h) + 2)
    x = rel[None, c0:c1] + h * k[:, None]
    f = log_phi_derivatives(x.ravel(), TAYLOR_ORDER).reshape((TAYLOR_ORDER + 1,) + x.shape)
    sign = np.array([(-1) ** n / math.factorial(n) for n in range(TAYLOR_ORDER + 1)])
    return np.ascontiguousarray((f * sign[:, None, None]).transpose(1, 0, 2))


def binned_log_cdf_of_max(u: np.ndarray, C: int) -> tuple:
    """(log H [rows, n_core], eta [rows]) for H[s, i] = prod_j Phi(w_i - u[s, j]) on the core grid w = u[s, 0] +
    rel[c0:c1] (_law_grid, step h) of rows u[s, :] (descending, C - 1 others), with |log H - exact| <= eta[s] at every
    w (plus floating-point rounding, relative ~1e-15 of the terms summed).

    The others are put in bins of width h on a lattice hanging from the top (centres u_0 - k h), so every (bin, w)
    pair sits at x = w - centre = rel_i + k h, a point of one shared lattice. With the exact moments
    M_n[k] = sum_(j in k) e_j^n (e_j = u_j - centre, |e_j| <= h/2), sum_(j in k) log Phi(x - e_j) =
    sum_(n <= p) M_n[k] (-1)^n f^(n)(x)/n! + R_k, |R_k| <= D6_SUP/6! sum_(j in k) |e_j|^6 (Lagrange, p = 5), so log H
    is one matrix product moments [rows, bins x orders] @ _taylor_table. Others more than D_CUT below the top add
    |log Phi| <= LOG_PHI_9 each and are dropped. eta = D6_SUP/720 sum_j |e_j|^6 + LOG_PHI_9 (number dropped)
    <= D6_SUP/720 (C - 1) (h/2)^6 (4e-9 at C = 10, 1.5e-8 at C = 1000, 6.4e-8 at C = 10^4)."""
    rel = _law_grid(C)[0]
    h = rel[1] - rel[0]
    table = _taylor_table(C)
    d = u[:, :1] - u                                       # >= 0: depth below the top
    keep = d <= D_CUT
    k = np.rint(d / h)
    e = (k * h - d)[keep]                                  # u_j - centre, |e| <= h/2
    k = k[keep].astype(np.int64)
    n_bins = int(k.max()) + 1                              # bins 0..n_bins-1 (the others sit in a prefix)
    row = np.nonzero(keep)[0]
    idx = row * n_bins + k
    size = u.shape[0] * n_bins
    moments, power = [np.bincount(idx, minlength=size).astype(float)], np.ones(e.shape)
    for _ in range(TAYLOR_ORDER):
        power *= e
        moments.append(np.bincount(idx, power, minlength=size))
    A = np.stack(moments, -1).reshape(u.shape[0], -1)      # [rows, bins x orders]
    log_h = A @ table[:n_bins].reshape(A.shape[1], -1)
    eta = D6_SUP / 720 * np.bincount(row, power * e, minlength=u.shape[0])    # e^6 = |e|^6
    return log_h, eta + LOG_PHI_9 * (~keep).sum(1)


G_TRAPEZOID = 5e-13   # relative error of G_hat from the trapezoid in w (_step) and rounding: measured <= 1.3e-13
#                       against the grid of half the step (C = 4 ... 100, gamma = 1e-3 ... 1e3, G = 1e-45 ... 1)
H_CUT = 9.6e-18       # >= Phi(-8.5) >= H below the core (_law_grid), which G_hat omits: G - G_hat in [0, H_CUT]
#                       (measured: log G_hat moves by 2e-5 at G ~ 1e-20, 7e-10 at G ~ 1e-10 with the step)
RADIAL_SAFETY = 2.0   # radial_error: the engine at C = 3 (64 radial nodes) against the exact law, gamma = 0.1,
#                       g = 1e-6: the full rule is off by 1.6e-5 relative, the half rule (32 nodes) by 9e-10, 16
#                       nodes by 1.5e-9, 128 by 1e5: the difference was 0.998 of the cdf's error there, and 0.9999997
#                       of the density's at gamma = 0.01, g = 4.5e-5
DENSITY_GRID = 2.0    # a row density's Hermite error <= DENSITY_GRID det_relative of its value (measured <= 1.03x)
DENSITY_G_HAT = 2.0   # the slope part of what G_hat's error moves a row density by, <= DENSITY_G_HAT e |f| (measured
#                       <= 0.98 e |f| beyond the rows' |f(hi) - f(lo)|: C = 10 ... 1000, gamma = 1e-3 ... 300, 15 g)
TAYLOR_SAFETY = 1.01  # a row's density over the g interval is <= 1.01x its value at g (_Table.g_interval) ...
TAYLOR_LOCAL = 1e-3   # ... where its width is <= TAYLOR_LOCAL min(g, 1 - g): measured, the two roots' values
#                       differ by <= (1 + 2.2e-5) x the density's width (the excess: rounding; 14 tables, 200 g each,
#                       half-widths e = 2e-9 ... 1e-6); the two-sided width is itself 2x the one-sided error


class Deterministic(NamedTuple):
    """The deterministic parts of a law value's stated bound ([n_g] each; _Table.bounded): ``grid`` det_error of the
    value (the u grid and the Hermite inversion); ``clip`` the rows whose root falls below their u grid; ``g_hat``
    what the error of G_hat itself moves the value by: G_hat/G is in [e^-e, e^e] with e = eta (the binning
    remainder, binned_log_cdf_of_max, |log H_hat - log H| <= eta, C >= BINNED_FROM; the kernels are >= 0) +
    G_TRAPEZOID, and G - G_hat in [0, H_CUT], so each row's exact root at g is the table's root at some g' in
    _Table.g_interval, which moves its value by <= the interval's width x the row's density there, taken as
    TAYLOR_SAFETY x its density at g where the interval is small against g and 1 - g (TAYLOR_LOCAL), else the
    values at its two ends (_Table.two_roots; tests check the one against the other; near g = 1 G_hat's error is a
    large part of 1 - g, near g = H_CUT all of g); ``radial`` the radial rule's error (_Table.radial_error)."""
    grid: np.ndarray
    clip: np.ndarray
    g_hat: np.ndarray
    radial: np.ndarray

    def total(self) -> np.ndarray:
        return self.grid + self.clip + self.g_hat + self.radial


class _Table:
    """One (gamma, C): per point of the RQMC nets (rows), G_hat(u) = P(u + eps > max others | others) and dG_hat/du on
    the u grid top + rel_u around the others' maximum ``top`` (G_hat increases in u); inverted in probit space
    p = Phi^-1(G_hat). ``centred`` (_centred): the others are centred on their own mean m. G_c depends on u_c - m and
    the centred others only, and u_c - m ~ N(0, s^2), s^2 = gamma C/(C - 1), is independent of the centred others
    (Gaussian), so the common mode integrates in closed form: P(G_c <= g | centred others) = Phi(u*(g)/s); plain,
    s^2 = gamma. ``weight``: the rows' weights, summing to 1 per scramble (importance weights; on centred tables
    times the spherical-radial rule's, ``group`` radial nodes per direction)."""

    def __init__(self, gamma: float, C: int, top: np.ndarray, rel_u: np.ndarray, G: np.ndarray, dG: np.ndarray,
                 weight: np.ndarray, eta: float = 0.0, centred: bool = True, radius2: np.ndarray | None = None,
                 group: int = 1, check=None, features: np.ndarray | None = None):
        self.s = math.sqrt(gamma * C / (C - 1) if centred else gamma)    # the sd of u_c (- the others' mean)
        # probit G_hat, nondecreasing along each row: G increases in u, and rounding near G = 1 must not unsort the
        # stacked search keys of ``rows`` (an unsorted key made a value depend on the other g values in its call)
        self.C, self.top, self.rel_u, self.P = C, top, rel_u, np.maximum.accumulate(_probit(G), axis=1)
        self.dudp = np.exp(-self.P * self.P / 2) / _SQ2PI / np.maximum(dG, 1e-300)    # du/dp at the grid points
        self.weight = weight
        self.eta = eta        # |log H_hat - log H| <= eta at every grid point of every row (binned_log_cdf_of_max)
        self.centred = centred
        self.radius2 = radius2    # centred: |xi - mean xi|^2 of each row's others (standard units, after any tilt)
        self.group = group        # contiguous rows per QMC direction (centred: the radial nodes; plain: 1)
        self.check = check        # centred: builds the first scramble's table on the half radial rule (radial_error)
        self.cv = None if features is None else self._cross_fit(features)
        self.memos: dict = {}   # (name, args) -> what this table computed once (functionals, pilot tilts)

    def memo(self, key: tuple, compute):
        """compute(), once per table and key: a form's value, its bound and its SE all come from the same pass
        (p_empty costs 2-30 s, its tilt pilot up to 2 s)."""
        if key not in self.memos:
            self.memos[key] = compute()
        return self.memos[key]

    def functional(self, key: tuple, compute) -> tuple:
        """compute() = (per-scramble replicates, deterministic bound) of a law functional, memoised (read-only
        replicates)."""
        def frozen():
            reps, det = compute()
            reps.setflags(write=False)
            return reps, det
        return self.memo(key, frozen)

    def first_scramble(self) -> "_Table":
        """The same table restricted to the rows of the first scramble (a pilot: 1/K_SCRAMBLES of the cost), sharing
        its arrays, with its own memos and neither half rule nor control variates."""
        n = self.top.size // K_SCRAMBLES
        view = object.__new__(_Table)
        view.__dict__.update(self.__dict__, memos={}, check=None, cv=None, top=self.top[:n], P=self.P[:n],
                             dudp=self.dudp[:n], weight=self.weight[:n] * K_SCRAMBLES,
                             radius2=None if self.radius2 is None else self.radius2[:n])
        return view

    def rows(self, g: np.ndarray) -> tuple:
        """Per row [rows, n_g]: (P(G_c <= g | others) = Phi(u*(g)/s), its g-derivative, the clip error, 1 where the
        root is off the row's grid else 0, u*/s clipped to the grid). u*(g) = G_hat^-1(g) by cubic Hermite
        interpolation of u(p) between the two grid points that bracket g (relative error of the cdf <= det_relative,
        measured). Where u* lies below the grid or below -ROW_Z_MIN s the truth is in [0, Phi(lo/s)]: the value is the
        midpoint and the half-width the clip error (computed, part of law_bound); above 8.5 s the value is 1 in
        double. Off the grid (below it or above its end) the derivative is 0 and the row's true density unknown
        (density_bounded claims no digit where such a row carries weight)."""
        t = _probit(np.clip(g, 1e-300, 1 - 1e-16))
        n, n_u = self.P.shape
        r = np.arange(n)[:, None]
        key = (self.P + _ROW_KEY * r).ravel()           # rows stacked: probit G_hat increases along each row
        i = np.searchsorted(key, (t[None, :] + _ROW_KEY * r).ravel()).reshape(n, -1) - n_u * r
        i = np.clip(i, 1, n_u - 1)                      # P[i-1] < p(g) <= P[i]
        flat, P, dudp = i + n_u * r, self.P.ravel(), self.dudp.ravel()   # flat gathers: 2x faster than [r, i]
        p0, p1 = P.take(flat - 1), P.take(flat)
        u0, u1 = self.top[:, None] + self.rel_u.take(i - 1), self.top[:, None] + self.rel_u.take(i)
        dp = np.maximum(p1 - p0, 1e-300)
        m0, m1 = dudp.take(flat - 1) * dp, dudp.take(flat) * dp
        x = np.clip((t[None, :] - p0) / dp, 0.0, 1.0)
        root = u0 + x * (x * (x * (2 * u0 - 2 * u1 + m0 + m1) + (3 * u1 - 3 * u0 - 2 * m0 - m1)) + m0)
        slope = (x * (x * 3 * (2 * u0 - 2 * u1 + m0 + m1) + 2 * (3 * u1 - 3 * u0 - 2 * m0 - m1)) + m0) / dp   # du/dp
        lo = np.maximum(-ROW_Z_MIN * self.s, self.top + self.rel_u[0])[:, None]
        end = (self.top + self.rel_u[-1])[:, None]
        z = np.clip(root, lo, np.minimum(8.5 * self.s, end)) / self.s   # Phi(8.5) is 1 in double
        on_grid = (root > lo) & (root < end)
        zd = np.clip(root, lo, end) / self.s
        dens = np.where(on_grid, np.exp((t * t)[None, :] / 2 - zd * zd / 2) / self.s * slope, 0.0)   # dPhi(z)/dg
        F = special.ndtr(z)
        clip = np.where(root <= lo, F / 2, 0.0)          # the truth is in [0, Phi(lo/s)]: report the midpoint
        return F - clip, dens, clip, (~on_grid).astype(float), zd

    def replicates(self, g: np.ndarray, node_weights: np.ndarray | None = None, controlled: bool = True) -> tuple:
        """(F [K, n_g], f [K, n_g], clip [n_g], ess): per-scramble means of P(G_c <= g | centred others) and of its
        g-derivative (less their control variates unless ``controlled`` is False, ``controlled``), the weighted mean
        clip error of ``rows``, and the effective number of rows carrying each value (scramble_sums)."""
        (F, f, clip), ess = self.scramble_sums(np.atleast_1d(np.asarray(g, float)), lambda x, *rows: rows[:3],
                                               node_weights, controlled=2 if controlled else 0)
        return F, f, clip.mean(0), ess

    def positive_ratio(self) -> np.ndarray | None:
        """Per row |m_d| (its direction's), the factor by which the row weights w |m| bound the controlled estimate's
        from above in absolute value; None (all 1) where there are no control variates. The controlled mean is linear
        in the direction values, sum_d (w_d m_d / K) V_d with m_d = 1 - sum_(k != scramble of d) Sx_k . P_k
        (X_d - xbar_k) / (K - 1), so errors |e_d| <= b_d of the rows move it by <= sum_d (w_d |m_d| / K) b_d: the
        deterministic bounds (det_error, clip, binning remainder) are those of the positive weights w |m| (|m| ~ 1;
        their sum, the mass, slightly above 1)."""
        if self.cv is None:
            return None

        def ratio():
            X, Sx, xbar, P = self.cv
            K = X.shape[0]
            A = np.einsum("kfg,kg->kf", P, Sx)
            c = (np.einsum("kmf,f->km", X, A.sum(0)) - np.einsum("kmf,kf->km", X, A) - (A * xbar).sum()
                 + (A * xbar).sum(1)[:, None]) / (K - 1)
            return np.repeat(np.abs(1 - c).ravel(), self.group)
        return self.memo(("positive ratio",), ratio)

    def mass(self) -> float:
        """The mean over the scrambles of the positive weights' sums (w |m|, positive_ratio; 1 on untilted tables
        without control variates): the Jensen factor of det_error on a weighted mean."""
        ratio = self.positive_ratio()
        return float((self.weight if ratio is None else self.weight * ratio).sum() / K_SCRAMBLES)

    def bounded(self, g: np.ndarray, node_weights: np.ndarray | None = None) -> tuple:
        """(F [K, n_g], f [K, n_g], ess, Deterministic [n_g] each): replicates and the deterministic parts of the
        values' bound from the same pass over the rows (each row's value, density and clip error summed under both
        the estimate's weights and the positive ones, positive_ratio): det_error of the positive-weight mean times the
        mass (Jensen on normalised weights), the clip error, the binning remainder and the radial rule's error."""
        g, ratio = np.atleast_1d(np.asarray(g, float)), self.positive_ratio()

        def per_row(x, F, f, clip, *_):
            parts = (F, np.abs(f), clip)
            return (F, f) + (parts if ratio is None else tuple(v * ratio[:, None] for v in parts))
        (F, f, Fp, slope, clip), ess = self.scramble_sums(g, per_row, node_weights, controlled=2)
        lo, hi = self.g_interval(g)
        width = hi - lo                                   # where the exact root's g lies
        g_hat = TAYLOR_SAFETY * width * slope.mean(0)  # slope: the positive-weight mean of the rows' |density|
        far = width > TAYLOR_LOCAL * np.minimum(g, 1 - g)
        if far.any():
            g_hat[far] = self.two_roots(g[far])
        mass = self.mass()
        return F, f, ess, Deterministic(mass * det_error(np.abs(Fp.mean(0)) / mass, self.s), clip.mean(0), g_hat,
                                        mass * self.radial_error(g))

    def g_interval(self, g: np.ndarray) -> tuple:
        """(lo, hi) [n_g]: G_hat/G is in [e^-e, e^e] (e = eta + G_TRAPEZOID) and G - G_hat in [0, H_CUT] (the part
        below the core) on the whole u grid, so each row's exact root at g is the table's root at some g' in
        [lo, hi] = [g e^-e - H_CUT, g e^e] (lo <= 0: anywhere below, the value in [0, the value at hi])."""
        e = self.eta + G_TRAPEZOID
        return g * math.exp(-e) - H_CUT, g * math.exp(e)

    def two_roots(self, g: np.ndarray) -> np.ndarray:
        """The bound on what G_hat's error moves the value at g by (Deterministic.g_hat) from the two roots: the
        positive-weight means of the rows' values at the ends of g_interval, whose difference bounds it (0 for the
        lower end where it is <= 0). Used where the interval is not small against g and 1 - g (TAYLOR_LOCAL),
        elsewhere the density at g bounds it."""
        lo, hi = self.g_interval(np.asarray(g, float))
        ratio = self.positive_ratio()

        def per_row(x, F, f, clip, *_):
            return (F if ratio is None else F * ratio[:, None],)
        up, down, inside = self.scramble_sums(hi, per_row)[0][0].mean(0), np.zeros(lo.shape), lo > 0
        if inside.any():          # the lower end's pass only where it lies above 0
            down[inside] = self.scramble_sums(lo[inside], per_row)[0][0].mean(0)
        return np.abs(up - down)

    def _cross_fit(self, features: np.ndarray) -> tuple:
        """The directions' parts of the cross-fitted control variates (``controlled``): X = features / their SD
        [K, M, f], per scramble Sx = sum_d w_d X_d, and for each scramble k the pooled mean of X and the pseudo-
        inverse of its pooled covariance over the other K - 1 scrambles."""
        K = features.shape[0]
        w = self.weight.reshape(K, features.shape[1], self.group).sum(2)             # [K, M] direction weights
        X = features / np.sqrt(np.einsum("km,kmf->f", w, features ** 2) / K)
        Sx, Sxx = np.einsum("km,kmf->kf", w, X), np.einsum("km,kmf,kmg->kfg", w, X, X)
        xbar = (Sx.sum(0) - Sx) / (K - 1)
        cov = (Sxx.sum(0) - Sxx) / (K - 1) - xbar[:, :, None] * xbar[:, None, :]
        return X, Sx, xbar, np.linalg.pinv(cov, rcond=1e-10, hermitian=True)

    def controlled(self, v: np.ndarray, sums: np.ndarray) -> np.ndarray:
        """Per-scramble sums [K, n] of the row values v [rows, n] less their control variates: the even symmetric
        power sums of the direction (spherical.power_features, exact means), whose part that varies with the
        direction removes 1e3 ... 1e9 of the variance over the directions at C = 10 ... 100 (measured out of sample;
        G_c is a symmetric function of the others, smooth in their direction). Cross-fitted: scramble k's
        coefficients beta_k are the regression of the direction values on X over the other K - 1 scrambles, which are
        independent of scramble k, so each replicate stays unbiased: sums_k - beta_k . Sx_k. Per column of v, in the
        same order whatever the other columns (array call = scalar call)."""
        if self.cv is None:
            return sums
        X, Sx, xbar, P = self.cv
        K, M, _ = X.shape
        out = np.empty(sums.shape)
        for j in range(v.shape[1]):
            c = sums[:, j].mean()         # beta is blind to a constant shift of V: shifted, the sums cancel less
            wv = (self.weight * (np.ascontiguousarray(v[:, j]) - c)).reshape(K, M, self.group).sum(2)   # w_d (V_d - c)
            Sxy = np.einsum("kmf,km->kf", X, wv)
            ybar = (sums[:, j].sum() - sums[:, j]) / (K - 1) - c
            cxy = (Sxy.sum(0) - Sxy) / (K - 1) - xbar * ybar[:, None]
            beta = np.einsum("kfg,kg->kf", P, cxy)
            out[:, j] = sums[:, j] - (beta * Sx).sum(1)
        return out

    def scramble_sums(self, g: np.ndarray, per_row, node_weights: np.ndarray | None = None,
                      controlled: int = 0) -> tuple:
        """The one pass over the rows: per_row(g_chunk, *rows(g_chunk)) gives per-row arrays [rows, n_chunk]; returns
        (their per-scramble weighted sums, each [K, n_g], ess): ess [n_g] = (sum w v_r)^2 / sum (w v_r)^2 of the first
        array v — or, given ``node_weights`` [n_g], the ess of the rows' weighted sums sum_g node_weights v_r(g) (a
        functional). The first ``controlled`` arrays' sums are less their control variates (``controlled``). The g
        values go in chunks of _CHUNK (memory ~ rows x chunk)."""
        # [K, n_g] views of [n_g, K] arrays: a mean over the scrambles runs along memory, in the same order whatever
        # the other g values (array call = scalar call, bit for bit)
        sums, ess, total = None, np.empty(g.size), np.zeros(self.top.size)
        for a in range(0, g.size, _CHUNK):
            x = g[a:a + _CHUNK]
            values = per_row(x, *self.rows(x))
            if sums is None:
                sums = [np.empty((g.size, K_SCRAMBLES)).T for _ in values]
            for i, (out, v) in enumerate(zip(sums, values)):
                out[:, a:a + _CHUNK] = _per_scramble(v, self.weight)
                if i < controlled:
                    out[:, a:a + _CHUNK] = self.controlled(v, out[:, a:a + _CHUNK])
            ess[a:a + _CHUNK] = _ess(self.by_direction(self.weight[:, None] * values[0]))
            if node_weights is not None:
                total += values[0] @ node_weights[a:a + _CHUNK]
        if node_weights is not None:
            ess = float(_ess(self.by_direction((self.weight * total)[:, None]))[0])
        return sums, ess

    def by_direction(self, x: np.ndarray) -> np.ndarray:
        """Row values x [rows, n] summed over each direction's radial nodes [directions, n]: the ESS counts the QMC
        directions, the independent draws (a direction's radii are one quadrature, not |group| samples)."""
        return x if self.group == 1 else x.reshape(-1, self.group, x.shape[1]).sum(1)

    def radial_error(self, g: np.ndarray, which: int = 0) -> np.ndarray:
        """The radial rule's stated error at g [n_g] of the value (``which`` 0) or of the density (1): RADIAL_SAFETY x
        |first scramble on the full rule - the same directions on the half rule|. In the bulk a Gauss rule's error
        falls geometrically in its nodes, so the difference measures the half rule's error, which bounds the full
        rule's (measured 1e-10 vs 1e-9 ... 2.5e-5 relative in the far tail, radial_nodes); in the far lower tail the
        outermost nodes of the larger rule carry rows of value ~1 with weights far above the value, and there the
        half rule is the more accurate one, so the difference is the full rule's error itself (the safety factor).
        0 on plain tables."""
        if self.check is None:
            return np.zeros(np.shape(g))
        half = self.memo(("half rule",), self.check)
        return RADIAL_SAFETY * np.abs(half.replicates(g)[which].mean(0)
                                      - self.first_scramble().replicates(g)[which].mean(0))

    def density_bounded(self, g: np.ndarray) -> tuple:
        """(f [K, n_g], the stated bound [n_g], Deterministic [n_g] each) of the density at g (App. H, the law of one
        fraction): T_FACTOR x the scramble SE of the controlled density plus its deterministic parts, summed per row
        under the positive weights (positive_ratio): ``grid`` the Hermite slope's error, DENSITY_GRID x det_relative_z
        of the row's root x its |density| (measured against the u grid of half the step, tests); ``g_hat`` what
        G_hat's own error moves it by: each row's exact density at g is its table density at some g' in g_interval
        times dg'/dg, so the rows' |f(hi) - f(lo)| plus DENSITY_G_HAT e |f| for the slope (e = eta + G_TRAPEZOID;
        measured, binned against exact products on the same rows); ``radial`` the radial rule's error (radial_error).
        inf (no digit) where the interval reaches 0, where a row whose root is off its grid carries weight (its
        density is unknown: rows) or where fewer than ESS_MIN effective rows carry the density."""
        g, ratio = np.atleast_1d(np.asarray(g, float)), self.positive_ratio()
        positive = self.weight if ratio is None else self.weight * ratio

        def per_row(x, F, f, clip, outside, z):
            parts = (DENSITY_GRID * det_relative_z(z, self.s) * np.abs(f), np.abs(f), outside)
            return (f,) + (parts if ratio is None else tuple(v * ratio[:, None] for v in parts))
        (f, grid, size, off), ess = self.scramble_sums(g, per_row, controlled=1)
        lo, hi = self.g_interval(g)
        shift = np.zeros(g.size)
        for a in range(0, g.size, _CHUNK):
            ends = self.rows(hi[a:a + _CHUNK])[1] - self.rows(np.maximum(lo[a:a + _CHUNK], 1e-300))[1]
            shift[a:a + _CHUNK] = positive @ np.abs(ends) / K_SCRAMBLES
        parts = Deterministic(grid.mean(0), np.zeros(g.size),
                              shift + DENSITY_G_HAT * (self.eta + G_TRAPEZOID) * size.mean(0),
                              self.mass() * self.radial_error(g, 1))
        unresolved = (ess < ESS_MIN) | (off.mean(0) > 0) | (lo <= 0)
        return f, np.where(unresolved, np.inf, T_FACTOR * scramble_se(f) + parts.total()), parts


_CHUNK = 16        # g values per pass over the rows
_ROW_KEY = 100.0   # row offset of the stacked probit keys (probits lie in [-38.5, 8.3]; rounding ~1e-9 at 2^16 rows)


ESS_MIN = 300     # fewer effective rows: the spread between the scrambles does not measure the error (no digit)


def _ess(x: np.ndarray) -> np.ndarray:
    """Effective number of rows per column of the weighted row values x [rows, n]: (sum x)^2 / sum x^2 (summed along
    memory per column). Measured on the engine at C = 2 against the exact law: the stated bound failed (by up to 2.6x)
    only where this was < 25, in the far lower tail (tests/test_multiclass.py), hence ESS_MIN."""
    xt = np.ascontiguousarray(x.T)
    scale = np.abs(xt).max(1, keepdims=True)
    xt = xt / np.where(scale > 0, scale, 1.0)         # scale-free; unscaled, x^2 of rows ~1e-160 underflowed to 0
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.nan_to_num(xt.sum(1) ** 2 / (xt * xt).sum(1), nan=0.0)


def _per_scramble(values: np.ndarray, w: np.ndarray) -> np.ndarray:
    """[K, n_g]: sum over each scramble's rows of w * values [rows, n_g] (w: weights normalised per scramble), each
    sum over contiguous memory, so a column is summed in the same order whatever the other columns are (array call =
    scalar call, bit for bit)."""
    per_g = np.ascontiguousarray((values * w[:, None]).T).reshape(values.shape[1], K_SCRAMBLES, -1)
    return per_g.sum(-1).T


CENTRE_GAMMA = ((3, 0.5), (4, 10.0), (19, 5.0), (30, 4.0), (2000, 3.0), (C_MAX, 2.0))   # (up to C, centre at gamma <=)


def _centred(gamma: float, C: int) -> bool:
    """Whether the table of (gamma, C) centres the others (spherical-radial rows, _Table) rather than sampling them
    plainly. Both are unbiased; the thresholds are the measured crossovers of the stated relative bound of the cdf at
    g in [0.2/C, 2/C] (max over g): centred, <= 3e-7 at gamma = 0.1 for every C in [4, 10^4] (plain: 1e-3 ... 1e-4),
    at gamma = 3 1.4e-6 ... 1.6e-5 up to C = 30 (plain 1.7e-5 ... 4e-5); plain wins from gamma = 30 at C = 4 (2.8e-6
    vs 7.3e-6), 10 at C = 5, 5 ... 6 at C = 9 ... 20, 4 ... 5 at C = 30, 3 ... 4 at C = 100 and 1000 (with the
    degree-14 control variates: at C = 10, gamma = 5, 5.4e-6 against 2.0e-5; at C = 1000, gamma = 3, 3.3e-5 against
    4.9e-5): the centred rows' integrand has structure at r ~ 1/sqrt(gamma), in the radius and the direction alike. C
    = 2 has no centred dimension (plain); C = 3 (the engine's test bed: multiclass.cdf is deterministic there) keeps
    0.5."""
    return C >= 3 and gamma <= next(limit for top, limit in CENTRE_GAMMA if C <= top)


def _build_table(gamma: float, C: int, centred: bool, tilt: float = 1.0) -> _Table:
    """The law table of one (gamma, C) on the base points u = sqrt(gamma) xi. Plain: the others of _others (Gumbel
    importance-sampled top, weights self-normalised per scramble). Centred (_Table): the centred others of
    _radial_rows, directions by randomised QMC and radii by the Gauss rule of their chi law, so the radius the
    bulk of the law depends on (G_c is quadratic in the centred others at small gamma) is integrated, not sampled;
    from C = 6 the directions carry their power-sum control variates (_Table.controlled); the table's radial_error
    compares the first scramble with the half rule. ``tilt`` (centred only; radial_tilt):
    the radii are scaled to tilt r, whose likelihood ratio is exact, tilt^(C-2) exp(-(tilt^2 - 1) r^2/2) (mean 1)."""
    if not centred:
        if tilt != 1.0:
            raise ValueError("_build_table: a radial tilt needs the centred table")
        base, weight = _others(C)
        return _rows_table(gamma, C, base.reshape(-1, C - 1), (weight / weight.sum(1, keepdims=True)).reshape(-1))
    n = radial_nodes(C)

    def check() -> _Table:            # the first scramble's directions on the half rule
        xi, weight, group, _ = _radial_rows(C, n // 2, tilt, 1)
        return _rows_table(gamma, C, xi, weight * K_SCRAMBLES, group)
    xi, weight, group, theta = _radial_rows(C, n, tilt)
    features = None if C in SPHERE_RULES or C < 6 else power_features(theta) - power_feature_means(C - 1)
    return _rows_table(gamma, C, xi, weight, group, check, features)


def _rows_table(gamma: float, C: int, xi: np.ndarray, weight: np.ndarray, group: int | None = None,
                check=None, features: np.ndarray | None = None) -> _Table:
    """A law table on the rows xi [rows, C - 1] (standard units, descending) with weights summing to 1 per scramble
    (K_SCRAMBLES of them): plain (group None) or centred, ``group`` contiguous rows (radial nodes) per direction,
    ``features`` [K, directions, f] the directions' control variates less their exact means (_Table.controlled)."""
    rel, (c0, c1), rel_u, ker, dker = _law_grid(C)
    kernels = np.concatenate([ker, dker], 1)
    core, above = kernels[c0:c1], kernels[c1:].sum(0)       # H = 0 below the core and 1 above it (see _law_grid)
    u = math.sqrt(gamma) * xi
    eta = 0.0
    if C >= BINNED_FROM:
        log_h, eta_rows = binned_log_cdf_of_max(u, C)
        H, eta = np.exp(log_h), float(eta_rows.max())
    else:
        H = _core_cdf(u, u[:, :1] + rel[None, c0:c1])
    both = H @ core + above
    G, dG = np.clip(both[:, :ker.shape[1]], 1e-300, 1 - 1e-16), both[:, ker.shape[1]:]
    centred = group is not None
    return _Table(gamma, C, u[:, 0].copy(), rel_u, G, dG, weight, eta, centred, (xi * xi).sum(1) if centred else None,
                  group or 1, check, features)


_TABLES: dict = {}


def _table(gamma: float, C: int, centred: bool | None = None, tilt: float = 1.0) -> _Table:
    """The law table of (gamma, C), centred as _centred says unless ``centred`` is given, radially tilted by ``tilt``
    (centred tables); built on first use, the last _MEMO kept."""
    key = (float(gamma), int(C), _centred(gamma, C) if centred is None else bool(centred), float(tilt))
    if key not in _TABLES:
        _TABLES[key] = _build_table(*key)
        while len(_TABLES) > _MEMO:
            _TABLES.pop(next(iter(_TABLES)))
    return _TABLES[key]


def law_replicates(g, gamma: float, C: int) -> tuple:
    """Per-scramble (F_k(g), f_k(g)) [K_SCRAMBLES, n_g] at one 0 < gamma < inf, C >= 3: P(G_c <= g) and its density.
    Their means are multiclass.cdf / pdf; their SD/sqrt(K) the randomised-QMC standard error."""
    g = np.atleast_1d(np.asarray(g, float))
    return _table(gamma, C).replicates(g)[:2]


def law_se(g, gamma: float, C: int) -> tuple:
    """(cdf, its standard error over the K_SCRAMBLES scrambles) at g (scalar gamma, C >= 3); the stated error bound
    at CONFIDENCE is T_FACTOR * SE plus the deterministic parts (law_bound)."""
    F, _ = law_replicates(g, gamma, C)
    return F.mean(0), scramble_se(F)


def law_bound(g, gamma: float, C: int) -> np.ndarray:
    """The stated error bound of multiclass.cdf at g: T_FACTOR x SE (Student t, K - 1 dof, 99.99 % two-sided) plus
    the deterministic parts: det_error of the value (grid + Hermite inversion), the clip error of the rows whose root
    lies below the u grid (computed), what G_hat's error (its trapezoid and, for C >= BINNED_FROM, the Taylor
    remainder of the binned products) moves the value by (Deterministic.g_hat, computed), and the radial rule's
    error; inf (no claim) where fewer than ESS_MIN effective rows carry the value (the far lower tail: the
    between-scramble spread does not measure the error there). C = 3: the deterministic
    route's relative bound, THREE_ERROR x the value (multiclass_numerics/three.py)."""
    g = np.atleast_1d(np.asarray(g, float))
    if int(C) == 3:
        return THREE_ERROR * cdf_numpy(g, gamma, 3)
    return table_bound(_table(gamma, C), g)[1]


def table_bound(tab: _Table, g: np.ndarray) -> tuple:
    """(per-scramble F [K, n_g], the stated bound [n_g]) of one law table at g: law_bound's C >= 4 part, on any table
    (the engine run at C = 2 or 3 in the tests)."""
    F, _, ess, det = tab.bounded(g)
    return F, replicate_bound(F, det.total(), ess)


def replicate_bound(F: np.ndarray, det, ess) -> np.ndarray:
    """The stated absolute bound of per-scramble estimates F [K, n] at CONFIDENCE: T_FACTOR x SE + the deterministic
    bound ``det``, inf (no claim) where fewer than ESS_MIN effective rows carry the value."""
    return np.where(np.asarray(ess) < ESS_MIN, np.inf, T_FACTOR * scramble_se(F) + det)


def scramble_se(F: np.ndarray) -> np.ndarray:
    """SD/sqrt(K) of per-scramble estimates F [K, ...] along the scrambles, each column scaled by its largest |F|
    first: the squared spread of values ~1e-160 underflows (it read 0, a bound of det alone)."""
    scale = np.abs(F).max(0)
    scale = np.where(scale > 0, scale, 1.0)
    return scale * (F / scale).std(0, ddof=1) / math.sqrt(F.shape[0])


def law_relative_bound(g, gamma: float, C: int) -> np.ndarray:
    """A true relative error bound of multiclass.cdf at g (App. H, the law of one fraction), at the confidence of
    law_bound: |F_hat - F| <= b implies |F_hat - F|/F <= b/(F_hat - b) where F_hat > b, and inf where F_hat <= b (no
    correct digit can be claimed there). C = 3: THREE_ERROR."""
    g = np.atleast_1d(np.asarray(g, float))
    return _relative(cdf_numpy(g, gamma, C), law_bound(g, gamma, C))


def _relative(value, bound):
    """|v_hat - v| <= b  =>  |v_hat - v|/v <= b/(v_hat - b) where v_hat > b; inf where v_hat <= b (no digit), and
    where v_hat is below the normal doubles (2.2e-308: a subnormal value and its bound keep few digits)."""
    value, bound = np.asarray(value, float), np.asarray(bound, float)
    ok = (value > bound) & (value >= np.finfo(float).tiny)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(ok, bound / np.where(ok, value - bound, 1.0), np.inf)


DET_REL = 2e-9     # relative error floor of the cubic Hermite inversion of G_hat on its u grid (step h / U_REFINE) ...
DET_U = 7e-10      # ... plus DET_U z/s: the root's error in u moves Phi(u*/s) by ~ z/s relative (det_relative)


def det_relative(F, s: float):
    """Stated relative error of a row value (or a weighted mean of rows) F = Phi(u*/s) in the lower tail from the u
    grid and the cubic Hermite inversion: DET_REL + DET_U max(1, -Phi^-1(F))/s. Measured against the grid of half
    the step (C = 4, 6, 10, 30, 100, exact products, gamma in [1e-3, 1e3], g in [1e-14, 1 - 1e-13], F down to 1e-13
    and 1 - F down to 1e-13, beyond 4 ulp of rounding and twice what G_hat's own error moves the value by,
    Deterministic.g_hat): relative error <= 6.0e-10 where z/s is small and (relative error) s/z <= 2.2e-10, 3x
    margins (on the u grid of step h, before U_REFINE: 8.4e-9 and 5.1e-9)."""
    return det_relative_z(special.ndtri(np.clip(np.asarray(F, float), 1e-300, 1.0)), s)


def det_relative_z(z, s: float):
    """det_relative in terms of the root z = u*/s: DET_REL + DET_U max(1, |z|)/s (the root's error du moves
    Phi(z) and phi(z) by ~ |z| du/s relative), for either tail: 1 - Phi(z) rounds to 0 from z ~ 8.3, the root does
    not (the density's upper tail, _Table.density_bounded)."""
    return DET_REL + DET_U * np.maximum(1.0, np.abs(z)) / s


def det_error(F, s: float):
    """Stated absolute error of a row value (or a weighted mean of rows) F = Phi(u*/s) from the grid and the
    inversion: det_relative of the nearer tail t = min(F, 1 - F) times t, plus rounding (4 ulp: 2^-50 F). The root's
    error du moves Phi(u*/s) by phi(u*/s) du/s, small against both tails alike (measured on both sides, det_relative).
    For a mean of rows: t is concave in F and t max(1, -Phi^-1(t)) concave and
    nondecreasing in t, so the mean's term bounds the rows' weighted sum (Jensen)."""
    F = np.asarray(F, float)
    t = np.clip(np.minimum(F, 1 - F), 0.0, None)
    return det_relative(t, s) * t + np.abs(F) * 2.0 ** -50


def _by_pair(fn, g, gamma, C, side: int | None = None):
    """Evaluate fn(g_values, table) per distinct (gamma, C) with C >= 4 and 0 < gamma < inf (one table at a time).
    C = 3 is deterministic: element ``side`` of three.law (0: cdf, 2: density) per g value (one
    call per value: array call = scalar call). Returns (shape, flat g, flat gamma, flat C, out with those filled)."""
    shape, (gm, cc, gg) = _pairs(gamma, C, g)
    out = np.zeros(gg.shape)
    live = (cc >= 3) & (gm > 0) & np.isfinite(gm)
    for i in np.nonzero(live & (cc == 3) & (gg > 0) & (gg < 1))[0]:
        if side == 0 and gm[i] > three.LAW_GAMMA_MAX:
            out[i] = 2 / 3       # the interior mass is O(gamma^-1/2) < 1e-152: the gamma = inf value in double
        else:
            out[i] = three.law(np.clip(gg[i:i + 1], 1e-300, 1 - 1e-16), float(gm[i]))[side][0]
    live &= cc >= 4
    for c in np.unique(cc[live]):
        at_c = live & (cc == c)
        for gamma_ in np.unique(gm[at_c]):
            sel = at_c & (gm == gamma_)
            out[sel] = fn(gg[sel], _table(gamma_, c))
    return shape, gg, gm, cc, out


def cdf_numpy(g, gamma, C):
    shape, gg, gm, cc, out = _by_pair(_monotone_cdf, g, gamma, C, side=0)
    out = np.clip(out, 0.0, 1.0)         # three.law at C = 3 can round to 1 + 2^-52 (gamma = 0.125, g = 0.99)
    s = np.sqrt(np.where(np.isfinite(gm) & (gm > 0), gm, 1.0))
    out = np.where(cc == 2, special.ndtr(_probit(gg) / s), out)
    out = np.where(gm == 0, np.where(gg < 1 / cc, 0.0, 1.0), np.where(np.isinf(gm), 1 - 1 / cc, out))
    return np.where(gg <= 0, 0.0, np.where(gg >= 1, 1.0, out)).reshape(shape)


def _monotone_cdf(x, tab):
    """The mean over the scrambles at the g values x of one (gamma, C), made monotone in g (running maximum in sorted
    g) and clipped to [0, 1]: every row is monotone up to its cubic Hermite inversion (not shape-preserving), so
    neighbouring values can cross by up to that error; each value stays within the bound of the (monotone) truth
    after this projection."""
    order = np.argsort(x)
    vals = tab.replicates(np.clip(x[order], 1e-300, 1 - 1e-16))[0].mean(0)
    out = np.empty(x.shape)
    out[order] = np.clip(np.maximum.accumulate(vals), 0.0, 1.0)
    return out


def _probit(g):
    g = np.asarray(g, float)
    x = special.ndtri(np.minimum(g, 1 - g))
    return np.where(g > 0.5, -x, x)


def pdf_numpy(g, gamma, C):
    shape, gg, gm, cc, out = _by_pair(lambda x, tab: tab.replicates(x)[1].mean(0), g, gamma, C, side=2)
    x = _probit(gg)
    binary = np.exp(-0.5 * np.log(gm) + (1 - 1 / gm) * x * x / 2)
    return np.where(cc == 2, binary, np.maximum(out, 0.0)).reshape(shape)   # a Hermite slope can dip below 0


# --- functionals of the law of one G_c at C >= 4: p_empty, entropy --------------------------------------------
ROW_Z_MIN = 37.0         # rows carry P(G_c <= g | others) = Phi(u*/s) down to Phi(-37) = 5.7e-300 (below: clip)
SUPPORT_Z = 10.0         # above the support every row's P(G_c <= g | others) is within Phi(-10) = 7.6e-24 of 1
SUPPORT_PANELS = 24      # Gauss-Kronrod panels (7-15 nodes) uniform in probit g over the support (16: the 7-node
#                          check stated 3e-7 relative in Var G_c at (C, gamma) = (4, 0.01), 24: 1e-8, the floor)
T_MAX = 50.0             # p_empty: the t = -D log(1 - g) rule stops at T_MAX (beyond: <= e^-50, in the bound) ...
T_CAP = 720.0            # ... or further, up to T_CAP (e^-720 = 2e-313), where the value is a rare event
T_NEGLIGIBLE = 1e-8      # the cut e^-t_max (in the bound) is left where it is below this fraction of the rest
T_STEP = 4.0             # t panels of p_empty: the 7-node check rule's error on e^-t over 4 is ~7e-11 relative (step 2
#                          gave the same bounds at 1.6-1.7x the cost: (0.01, 4, 1e4) 38 s -> 23 s)


def _support(tab: _Table) -> tuple:
    """(g_lo, g_hi) such that below g_lo every row's P(G_c <= g | others) is <= Phi(-ROW_Z_MIN) or its root lies under
    the row's u grid (clip, G_hat < 1e-17 there), and above g_hi it is >= 1 - Phi(-SUPPORT_Z): the grid values at or
    below u = -ROW_Z_MIN s (above u = SUPPORT_Z s), the smallest (largest) over the rows."""
    h = tab.rel_u[1] - tab.rel_u[0]
    base, n_u = tab.top + tab.rel_u[0], tab.P.shape[1]
    r = np.arange(tab.top.size)
    i_lo = np.clip(np.floor((np.maximum(-ROW_Z_MIN * tab.s, base) - base) / h).astype(int), 0, n_u - 1)
    i_hi = np.clip(np.ceil((np.minimum(SUPPORT_Z * tab.s, tab.top + tab.rel_u[-1]) - base) / h).astype(int), 0,
                   n_u - 1)
    return float(special.ndtr(tab.P[r, i_lo].min())), float(special.ndtr(tab.P[r, i_hi].max()))


def law_functional(tab: _Table, psi, dpsi, below, above, g_top: float = 1.0, breaks=()) -> tuple:
    """(per-scramble E[psi(G_c)] [K_SCRAMBLES], deterministic error bound, per-scramble integral -int psi' F over the
    rule [K_SCRAMBLES], the value less psi(g_end) without its cancellation) for a psi of bounded variation on [0, 1]:
    E psi(G) = psi(1) - int_0^1 psi'(g) F(g) dg (integration by parts against the law F of one G_c, App. H), so the
    functional inherits the law's randomised-QMC replicates. Over the support [g_lo, g_hi] (_support), cut at g_top:
    SUPPORT_PANELS panels uniform in probit g plus the caller's ``breaks`` (probits), the 15-point Gauss-Kronrod rule
    on each; above min(g_hi, g_top) F is taken as 1, i.e. the term psi(g_end). Bound: the law's deterministic parts
    (Deterministic) integrated against |psi'|, F_hat(g_lo) x below(g_lo) (= int_0^g_lo |psi'|, F <= F(g_lo) there),
    (1 - F_hat(g_end)) x above(g_end) (= int_g_end^1 |psi'|) and the rule's own error, stated as its difference from
    the 7-point Gauss rule on the same values (the lower rule's error bounds the higher's: the rules converge
    geometrically on the smooth F); inf where fewer than ESS_MIN effective rows carry the functional (a rare event
    the rows do not reach: no digit claimed)."""
    g_lo, g_hi = _support(tab)
    g_end = min(g_hi, g_top)
    if not g_lo < g_end:
        g_end = g_lo
    p_lo, p_end = _probit(g_lo), _probit(g_end)
    edges = np.unique(np.concatenate([np.linspace(p_lo, p_end, SUPPORT_PANELS + 1),
                                      [b for b in breaks if p_lo < b < p_end]]))
    p, wk, wg = composite_gauss_kronrod(edges) if edges.size > 1 else (np.zeros(0),) * 3
    g, dg = special.ndtr(p), np.exp(-p * p / 2) / _SQ2PI                            # dg = phi(p) dp
    d = dpsi(g)
    dw, n = d * wk * dg, g.size
    F, _, ess, parts = tab.bounded(np.concatenate([g, [g_lo, g_end]]), node_weights=np.concatenate([dw, [0, 0]]))
    integral = -(F[:, :n] @ dw)
    check = -(F[:, :n] @ (d * wg * dg))
    row_det = parts.total()
    Fm = F.mean(0)
    det = np.abs(dw) @ row_det[:n] + abs(float(integral.mean() - check.mean()))
    det += (Fm[-2] + row_det[-2]) * below(g_lo) + (max(1 - Fm[-1], 0.0) + row_det[-1]) * above(g_end)
    return psi(g_end) + integral, float(det) if ess >= ESS_MIN else math.inf, integral


def _t_breaks(D: int, t_max: float) -> np.ndarray:
    """p_empty's breakpoints (probits of g = 1 - e^(-t/D)): log t uniform (step 2) from e^-25 to 1, then t uniform
    (step T_STEP) to t_max, so each panel sees e^-t vary by at most e^T_STEP."""
    t = np.concatenate([np.exp(np.arange(-25.0, 0.0, 2.0)), np.arange(1.0, t_max + 1, T_STEP)])
    return _probit(-np.expm1(-t / D))


def p_empty_replicates(gamma: float, C: int, D: int) -> tuple:
    """(per-scramble P(class c gets no point of D) [K_SCRAMBLES], deterministic bound) at C >= 4: E[(1 - G_c)^D] =
    int_0^1 D (1 - g)^(D-1) F(g) dg by law_functional on the t breakpoints up to t_max, where F is taken as 1 (the
    term e^-t_max, its error <= e^-t_max in the bound) (App. I.1.3, the empty classes). t_max starts at T_MAX; where
    e^-t_max is not below T_NEGLIGIBLE x the rest (the part below t_max, a rare event) it moves to where it is
    (at least doubling, at most T_CAP). Mean = multiclass.p_empty, SD/sqrt(K) its standard error."""
    D, tab = int(D), _table(gamma, C)
    if tab.centred:
        tilt = tab.memo(("tilt", D), lambda: radial_tilt(tab, D))
        if abs(tilt - 1) > TILT_MIN:
            tab = _table(gamma, C, True, tilt)
    return tab.functional(("p_empty", D), lambda: _p_empty_functional(tab, D))


TILT_MIN = 0.05       # p_empty on a centred table: tilt the others radially where the pilot asks for more than 5 %
TILT_RANGE = (0.5, 4.0)


def radial_tilt(tab: _Table, D: int) -> float:
    """The radial tilt lambda of the centred others for p_empty(D) (App. H): one cross-entropy step on the first
    scramble's rows of the untilted table. The rare event {G_c <~ 1/D} is carried by rows whose centred others are
    spread (log G_c is concave in them), so the rows' contributions c_r = w_r int |psi'| P(G_c <= g | others) dg
    (psi = (1 - g)^D; 2-node panels on the t rule to T_CAP) weight their radii: lambda^2 = sum c_r |xi_c|^2 /
    ((C - 2) sum c_r), the scale of the Gaussian family closest to the rows that carry the value. Rounded to 0.01
    (tables are shared between nearby D) and clipped to TILT_RANGE; 1 where the pilot sees no contribution."""
    if tab.C < 3:                 # no centred others to spread (C - 2 = 0 dimensions)
        return 1.0
    pilot = tab.first_scramble()
    g_lo, g_hi = _support(pilot)
    g_end = min(g_hi, -math.expm1(-T_CAP / D))
    if not g_lo < g_end:
        return 1.0
    p_lo, p_end = _probit(g_lo), _probit(g_end)
    edges = np.unique(np.concatenate([np.linspace(p_lo, p_end, SUPPORT_PANELS + 1),
                                      [b for b in _t_breaks(D, T_CAP) if p_lo < b < p_end]]))
    p, w = composite_gauss_legendre(edges, 2)
    g = special.ndtr(p)
    node = w * np.exp(-p * p / 2) / _SQ2PI * D * np.exp((D - 1) * np.log1p(-g))     # |psi'(g)| dg
    c = np.zeros(pilot.top.size)
    for a in range(0, g.size, _CHUNK):
        c += pilot.rows(g[a:a + _CHUNK])[0] @ node[a:a + _CHUNK]
    c *= pilot.weight
    if not c.sum() > 0:
        return 1.0
    return float(np.clip(round(math.sqrt((c @ pilot.radius2) / ((tab.C - 2) * c.sum())), 2), *TILT_RANGE))


def _p_empty_functional(tab: _Table, D: int) -> tuple:
    """p_empty_replicates on one table (the t_max loop)."""
    t_max = T_MAX
    while True:
        reps, det, integral = law_functional(
            tab, lambda g: np.exp(D * np.log1p(-g)), lambda g: -D * np.exp((D - 1) * np.log1p(-g)),
            lambda g: -math.expm1(D * math.log1p(-g)), lambda g: math.exp(D * math.log1p(-g)),
            -math.expm1(-t_max / D), _t_breaks(D, t_max))
        rest = float(integral.mean())      # the part below t_max (<= the value), free of e^-t_max's cancellation
        if t_max >= T_CAP or math.exp(-t_max) <= T_NEGLIGIBLE * rest:
            return reps, det
        t_max = T_CAP if rest <= 0 else min(T_CAP, max(2 * t_max, 2 - math.log(T_NEGLIGIBLE * rest)))


def p_empty_numpy(gamma, C, D):
    shape, (gm, cc, dd) = _pairs(gamma, C, D)
    out = np.empty(gm.shape)
    for i, (gamma_, C_, D_) in enumerate(zip(gm, cc.astype(int), dd.astype(int))):
        if gamma_ == 0:
            out[i] = math.exp(D_ * math.log1p(-1 / C_))      # (1 - 1/C)^D: the power amplifies 1 - 1/C's rounding
        elif math.isinf(gamma_):
            out[i] = 1 - 1 / C_
        elif C_ == 2:
            out[i] = _p_empty_binary(gamma_, D_)
        elif C_ == 3:
            out[i] = three.p_empty(gamma_, D_)      # deterministic, relative THREE_ERROR, rare events included
        elif D_ <= 2:
            out[i] = p_empty_by_moments(gamma_, C_, D_)
        else:
            out[i] = min(max(float(p_empty_replicates(gamma_, C_, D_)[0].mean()), 0.0), 1.0)
    return out.reshape(shape)


def p_empty_by_moments(gamma: float, C: int, D: int) -> float:
    """E[(1 - G_c)^D] for D <= 2 from the first two moments: 1 - 1/C (E G_c = 1/C) and (1 - 1/C)^2 + Var G_c (the
    2-d quadrature, relative VAR_REL; a sum of positive terms), C >= 3."""
    return (1 - 1 / C) if D == 1 else (1 - 1 / C) ** 2 + float(var_numpy(gamma, C))


def p_empty_relative_bound(gamma: float, C: int, D: int) -> float:
    """A true relative error bound of multiclass.p_empty (App. H, E[(1 - G_c)^D]) at the confidence of law_bound:
    C >= 4: b = T_FACTOR x SE (over the scrambles) + the deterministic bound of law_functional, so
    |p_hat - p|/p <= b/(p_hat - b) where p_hat > b, inf otherwise (no digit claimed); D <= 2 VAR_REL
    (p_empty_by_moments). C = 3: THREE_ERROR; C = 2: 2e-9 (deterministic routes)."""
    if int(C) == 3:
        return THREE_ERROR
    if int(C) == 2 or gamma == 0 or math.isinf(gamma):
        return 2e-9
    if int(D) <= 2:
        return VAR_REL
    return float(_relative(*qmc_estimate(*p_empty_replicates(gamma, int(C), int(D)))))


def p_empty_se(gamma: float, C: int, D: int) -> float:
    """The standard error of multiclass.p_empty: over the scrambles plus the deterministic bound at C >= 4 (the law's
    randomised QMC), and the (relative THREE_ERROR / 2e-9) deterministic error at C <= 3."""
    if int(C) <= 3 or gamma == 0 or math.isinf(gamma) or int(D) <= 2:
        return float(p_empty_relative_bound(gamma, C, D) * p_empty_numpy(gamma, C, D))
    reps, det = p_empty_replicates(gamma, int(C), int(D))
    return float(scramble_se(reps)) + det


def _p_empty_upper(gamma: float, C: int, D: int) -> float:
    """p_hat + b (C >= 4): a true upper bound of p_empty at the confidence of law_bound, where no digit is resolved."""
    return min(1.0, sum(qmc_estimate(*p_empty_replicates(gamma, int(C), int(D)))))


def qmc_estimate(reps: np.ndarray, det: float = 0.0) -> tuple:
    """(v_hat, b) from per-scramble estimates ``reps`` and a deterministic bound ``det``: their mean and the bound at
    the confidence of law_bound, b = T_FACTOR x SE + det."""
    return float(reps.mean()), T_FACTOR * float(scramble_se(reps)) + det


def _t_rule(n_panels, n):
    """Gauss-Legendre in xi = log t over [-25, log 50] for int_0^inf e^-t F(1 - e^(-t/D)) dt (t = e^xi)."""
    xi, w = composite_gauss_legendre(np.linspace(-25.0, math.log(50.0), n_panels + 1), n)
    t = np.exp(xi)
    return t, w * t * np.exp(-t)


_T2, _T2_W = _t_rule(15, 16)           # exact C = 2 route: relative error <= 2e-9 (tested against mpmath)


def _p_empty_binary(gamma, D):
    """C = 2: E[Phi(-sqrt(gamma) Z)^D] (G_0 = Phi(sqrt(gamma) Z), the igb law).
    For gamma >= T_ROUTE_MIN the t-substitution with the exact igb cdf; below it the step of P(G <= g) at g = 1/2 (width
    ~ sqrt(gamma) in log t) is not resolved by the t rule (1.3 % off at gamma = 1e-8, 4e-5 at 0.01), so the z route
    (_p_empty_binary_z) is used up to gamma D = Z_ROUTE_MAX and NumericalError is raised beyond (never a wrong value).
    The two routes agree to <= 7e-14 where both apply (gamma in [0.2, 1], D <= 1e6; exact 1/(D + 1) at gamma = 1)."""
    if gamma < T_ROUTE_MIN:
        if gamma * D > Z_ROUTE_MAX:
            raise NumericalError(f"multiclass.p_empty: C = 2 with gamma = {gamma:g} < {T_ROUTE_MIN} and gamma*D = "
                                 f"{gamma * D:g} > {Z_ROUTE_MAX:g} is outside the accurate range of both quadrature "
                                 "rules")
        return _p_empty_binary_z(gamma, D)
    g = -np.expm1(-_T2 / D)
    return float(special.ndtr(_probit(g) / math.sqrt(gamma)) @ _T2_W)


Z_ROUTE_MAX = 1e6     # gamma D bound of the z route (its cost: 800 sqrt(1 + gamma D) nodes)
T_ROUTE_MIN = 0.2     # smallest gamma at which the t rule meets the stated 2e-9 (measured against mpmath quadrature)


def _p_empty_binary_z(gamma, D):
    """int phi(z) Phi(-s z)^D dz, s = sqrt(gamma), in log space: the log-integrand is concave with curvature in
    [1, 1 + gamma D], so around its mode z0 (a bracketed root) the trapezoid rule with step 0.1/sqrt(1 + gamma D)
    over z0 +- 40 is accurate to rounding (f <= f(z0) exp(-(z - z0)^2/2) bounds the cut tails by e^-800)."""
    s = math.sqrt(gamma)

    z0 = 0.0 if s == 0 else optimize.brentq(lambda z: -z - D * s * inverse_mills(-s * z), -0.8 * D * s - 1.0, 0.0,
                                             xtol=1e-12, rtol=1e-15)
    h = 0.1 / math.sqrt(1.0 + gamma * D)
    z = z0 + h * np.arange(-math.ceil(40 / h), math.ceil(40 / h) + 1)
    log_f = -z * z / 2 + D * special.log_ndtr(-s * z)
    top = log_f.max()
    return float(math.exp(top + math.log(np.exp(log_f - top).sum() * h / _SQ2PI)))


def p_empty_mp(gamma, C, D):
    if int(C) != 2:
        raise NumericalError("multiclass.p_empty: no mpmath reference for C >= 3 (randomised QMC route; its standard "
                             "error is multiclass.p_empty_se)")
    s, D = mpmath.sqrt(gamma), int(D)
    return mp_log_concave_integral(lambda z: -z * z / 2 + D * mp_log_ncdf(-s * z),
                                   lambda z: -z - D * s * mp_mills(-s * z)) / mpmath.sqrt(2 * mpmath.pi)


def mp_mills(x):
    """phi(x)/Phi(x) = d log Phi(x)/dx in mpmath for any real x (through functions.mp_log_ncdf)."""
    return mpmath.exp(-x * x / 2 - mp_log_ncdf(x)) / mpmath.sqrt(2 * mpmath.pi)


MP_NEGLIGIBLE_LOG = -10_000   # log of the peak below which mp_log_concave_integral returns 0 (see there)


def mp_log_concave_integral(log_f, dlog_f):
    """int exp(log_f(x)) dx over the real line at full relative precision whatever its size, for log_f'' <= -1 (a
    standard normal factor times log-concave ones): mpmath.quad's tolerance is absolute, so on a fixed interval a value
    of 1e-17 came back as 4.5e-38 (multiclass.p_empty, C = 2, gamma = 0.3, D = 1e6) and one of 4e-30 was off by 1e-2.
    Here the integrand is divided by its value at the mode x0 (bisection of the decreasing dlog_f) and integrated in
    t = x - x0 over +- X, X = sqrt(2 (dps + 10) ln 10) (log_f(x) <= log_f(x0) - t^2/2: the cut tails are < 10^-(dps + 5)
    of the value), split at t = +- w 4^j with w = 1/sqrt(-log_f''(x0)) the peak's own width. x0 and log_f are taken
    with log2 |x0| + log2 |log_f(x0)| extra bits (the mode can sit at 1e149 and log_f at -1e299), quad at the working
    precision. Where log_f(x0) < MP_NEGLIGIBLE_LOG the value (< sqrt(2 pi) e^log_f(x0) < 10^-4000) is returned as 0:
    an absolute error no double and no comparison at 1e-300 can see, stated here (an exact value would take tens of
    seconds of ~1700-bit arithmetic at gamma = 1e-300)."""
    lo, hi = mpmath.mpf(-1), mpmath.mpf(1)
    while dlog_f(lo) <= 0:
        lo *= 2
    while dlog_f(hi) >= 0:
        hi *= 2
    extra = int(mpmath.log(max(-lo, hi), 2)) + 10
    with mpmath.extraprec(extra):
        while True:
            mid = (lo + hi) / 2
            if mid in (lo, hi):
                break
            lo, hi = (mid, hi) if dlog_f(mid) > 0 else (lo, mid)
        peak = log_f(mid)
        if peak < MP_NEGLIGIBLE_LOG:
            return mpmath.mpf(0)
        extra += int(mpmath.log(1 + abs(peak), 2)) + 10
    with mpmath.extraprec(extra):
        x0 = +mid
        top = log_f(x0)
        e = mpmath.mpf(2) ** (-(mpmath.mp.prec - extra) // 3)
        w = 1 / mpmath.sqrt(max(1, (dlog_f(x0 - e) - dlog_f(x0 + e)) / (2 * e)))

    def ratio(t):
        with mpmath.extraprec(extra):
            return mpmath.exp(log_f(x0 + t) - top)
    X = mpmath.sqrt(2 * (mpmath.mp.dps + 10) * mpmath.log(10))
    w = +w
    steps = [w * 4**j for j in range(int(mpmath.log(X / w, 4)) + 1)] + [X]
    return mpmath.exp(top) * mpmath.quad(ratio, [-t for t in reversed(steps)] + [0] + steps)


def _p_empty_limit(gamma, C, D):
    if gamma == 0:
        return (1 - mpmath.mpf(1) / C) ** D
    if gamma == mpmath.inf:
        return 1 - mpmath.mpf(1) / C
    return None


# ============================================================================ whole vectors (max fraction, entropy)
def vector_samples(gamma: float, C: int, n: int | None = None, seed: int = 0) -> np.ndarray:
    """n exact fraction vectors (G_1..G_C) [n, C] for means u ~ N(0, gamma I_C) (fixed seed); n defaults to
    min(4000, VEC_BUDGET // C) (10 at C = C_MAX), so n C <= VEC_BUDGET bounds the cost whatever C (a floor of 100
    made it grow as C above C = 1000: 19 s of CPU per gamma at C = 10^4)."""
    n = n or min(4000, VEC_BUDGET // C)
    return _vectors(float(gamma), int(C), int(n), int(seed)).copy()


@lru_cache(maxsize=16)
def _vectors(gamma, C, n, seed):
    rng = np.random.default_rng([SEED, C, seed, 1])
    if gamma == 0:
        return np.full((n, C), 1 / C)
    z = rng.standard_normal((n, C))
    if math.isinf(gamma):
        return (z == z.max(1, keepdims=True)).astype(float)
    return fraction_vectors(math.sqrt(gamma) * z)


def fraction_vectors(u: np.ndarray, block: int = 32) -> np.ndarray:
    """G_c = int phi(w - u_c) prod_{j != c} Phi(w - u_j) dw for every class of each row of means u [n, C]: the
    trapezoid rule on the law tables' grid (_offsets, _cdf_of_max), dividing the full product by Phi(w - u_c) (>= 1e-17
    on the grid w >= max u - 8.5, so no underflow)."""
    C = u.shape[1]
    order = np.argsort(-u, axis=1)
    us = np.take_along_axis(u, order, 1)                       # descending, as _cdf_of_max needs
    h, rel = _offsets(C, 8.5, 8.5)
    out = np.empty(u.shape)
    for s0 in range(0, u.shape[0], block):
        rows = us[s0:s0 + block]
        w = rows[:, :1] + rel[None, :]
        H = _cdf_of_max(w, rows)
        d = w[:, :, None] - rows[:, None, :]
        vals = h * (H[:, :, None] * np.exp(-d * d / 2) / _SQ2PI / special.ndtr(d)).sum(1)
        np.put_along_axis(out[s0:s0 + block], order[s0:s0 + block], vals, 1)
    return out


def observed_fractions(vectors: np.ndarray, D: float, seed: int = 0) -> np.ndarray:
    """Fractions as measured on D i.i.d. data points (D finite): multinomial(D, G)/D per vector."""
    rng = np.random.default_rng([SEED, vectors.shape[1], int(D), seed, 2])
    p = vectors / vectors.sum(1, keepdims=True)
    return rng.multinomial(int(D), p) / D


def max_fraction_samples(gamma: float, C: int) -> np.ndarray:
    """Monte Carlo sample of the dominant class fraction max_c G_c (D = inf; the plain reference of tests and
    derivations)."""
    return np.sort(vector_samples(gamma, C).max(1))


def _vector_route(exact, sampled, gamma, C, D, *more):
    """Evaluate per point: ``exact(gamma, *more)`` (vectorised) where C = 2 and D = inf (G_0 = Phi(sqrt(gamma) Z), the
    igb law, gives closed forms), else the Monte Carlo ``sampled(gamma, C, D, *more)`` over fraction vectors."""
    shape, (gm, cc, dd, *rest) = _pairs(gamma, C, D, *more)
    binary = (cc == 2) & np.isinf(dd)
    out = np.empty(gm.shape)
    out[binary] = exact(gm[binary], *[r[binary] for r in rest])
    for i in np.nonzero(~binary)[0]:
        out[i] = sampled(gm[i], int(cc[i]), dd[i], *[r[i] for r in rest])
    return out.reshape(shape)


_X, _X_W = composite_gauss_legendre(np.linspace(-40.0, 40.0, 81), 16)   # h(Phi(x)) < 1e-300 beyond |x| = 37


def _binary_entropy(gamma, D: float = math.inf):
    """E h(Phi(s Z)), h(p) = -p log p - (1-p) log(1-p), s = sqrt(gamma) (C = 2): 16-node Gauss-Legendre on unit panels
    of [-40, 40], in z for s < 1 and in x = s z (weight phi(x/s)/s) for s >= 1, so the rule follows the integrand's
    scale at every gamma (entropy ~ 1/s for large s). Finite D: h(p) -> psi_D(p) + psi_D(1 - p), the expected entropy
    of binomial(D, p)/D (observed.entropy_kernel)."""
    s = np.sqrt(gamma)[:, None]
    small = s < 1
    t = np.where(small, s * _X, _X)                                      # the argument of Phi
    weight = np.where(small, np.exp(-_X**2 / 2), np.exp(-(_X / np.where(small, 1.0, s)) ** 2 / 2) / s) / _SQ2PI
    p, q = special.ndtr(t), special.ndtr(-t)
    if math.isinf(D):
        h = -(p * special.log_ndtr(t) + q * special.log_ndtr(-t))
    else:
        h = entropy_kernel(p, q, int(D))[0] + entropy_kernel(q, p, int(D))[0]
    return (weight * h) @ _X_W


def max_fraction_exact(gamma: float, Cs) -> np.ndarray:
    """E[max_c G_c] at D = inf at every C of Cs (App. H, the dominant class): max_c G_c = G_(argmax u) (G_c increases
    in u_c), so E max_c G_c = P(argmax u = argmax(u + eps)) = C E[Phi_2(X, Y; r)^(C-1)], (X, Y) standard bivariate
    normal with r = sqrt(gamma/(1+gamma)) (derivations/multiclass.py); C = 2: 1/2 + atan(sqrt(gamma))/pi. Relative
    error <= VAR_REL (moment_excess_many: the C of one gamma share one table)."""
    Cs = np.atleast_1d(np.asarray(Cs, float))
    if gamma == 0:
        return 1 / Cs
    if math.isinf(gamma):
        return np.ones(Cs.shape)
    out = np.full(Cs.shape, 0.5 + math.atan(math.sqrt(gamma)) / math.pi)
    many = Cs > 2
    if many.any():
        _, _, r, r_c = _correlations(gamma)
        out[many] = np.minimum(1.0, 1 / Cs[many] + Cs[many] * moment_excess_many(r, Cs[many] - 1, r_c)[1])
    return out


def max_fraction_numpy(gamma, C, D):
    shape, (gm, cc, dd) = _pairs(gamma, C, D)
    out = np.empty(gm.shape)
    inf = np.isinf(dd)
    if inf.any():
        out[inf] = _by_gamma(max_fraction_exact, gm[inf], cc[inf])
    for i in np.nonzero(~inf)[0]:
        out[i] = max_fraction_se(float(gm[i]), int(cc[i]), float(dd[i]))[0]
    return out.reshape(shape)


def max_fraction_se(gamma: float, C: int, D: float) -> tuple:
    """(E max_c K_c/D, its standard error) at dataset size D (App. H, the dominant class; counts K multinomial(D, G)
    given the weights). D = inf: max_fraction_exact (relative 1e-12, SE 0); C = 2: exact (max_fraction_binary, SE 0);
    gamma = inf: 1 (one class takes every point). Else max_fraction_sampled: the exact D = inf value plus a sampled
    count-noise correction, its SE stated (relative SE <= MAX_REL_SE where measured, not everywhere)."""
    if math.isinf(D) or math.isinf(gamma):
        return float(max_fraction_exact(gamma, C)[0]), 0.0
    if int(C) == 2 and gamma > 0:
        return float(max_fraction_binary(gamma, int(D))), 0.0
    return max_fraction_sampled(gamma, int(C), D)


MAX_REL_SE = 1e-4      # finite-D max_fraction: nets are enlarged until the relative SE is at most this ...
VEC_ROWS = 2 ** 17     # ... or 2^m C reaches this per scramble (vector_points_log2; ~15 s at C = 100)
VEC_PILOT = 4          # the first net: 2^-4 of the largest (the pilot that sizes the next)
MAX_COUNT_REPEATS = 64  # multinomial draws per vector there: at 16 the count noise was most of the variance


def vector_points_log2(C: int) -> int:
    """The largest net of max_fraction_sampled: 2^m vectors per scramble, 2^m C <= VEC_ROWS, 2 <= m <= 13 (C = 10:
    2^13; C = 100: 2^10; C = 10^4: 2^3)."""
    return max(2, min(13, int(math.log2(VEC_ROWS // C))))


@lru_cache(maxsize=32)
def max_fraction_sampled(gamma: float, C: int, D: float, exact: bool | None = None) -> tuple:
    """(value, SE) over net_means. Where ``exact`` (None: as exact_count_mean says): the mean of E[max_c K_c | G]/D,
    exact per vector (max_count_mean). Else max_fraction_exact(gamma, C) + the mean of (max_c K_c - K_top)/D,
    K multinomial(D, G), top = argmax_c G_c: max_c K_c/D - max_c G_c less the control variate K_top/D - G_top, whose
    mean given G is exactly 0, so only the overtaking of the leading class by the count noise is sampled: each vector
    with MAX_COUNT_REPEATS multinomial draws less control variates of mean 0 given G (overtaking): the overtaking
    depends on the gap between the largest means, which the nets' best coordinates drive (per vector 2 ... 6x less
    variance than i.i.d. means, measured at C = 30 ... 1000). The value is projected onto [1/C, 1]. Memoised: a
    form's value and its SE share a run."""
    if exact_count_mean(gamma, C, D) if exact is None else exact:
        value, se, _ = net_means(gamma, C, lambda v, k: max_count_mean(v, int(D))[:, None] / D)
    else:
        population = float(max_fraction_exact(gamma, C)[0])
        value, se, _ = net_means(gamma, C, lambda v, k: count_means(v, D, lambda frac: overtaking(frac, v, D), k,
                                                                    MAX_COUNT_REPEATS)[:, None], population)
    return min(1.0, max(1 / C, float(value[0]))), float(se[0])


EXACT_MEAN_RULE = ((10.0, 3), (3.0, 10))   # exact_count_mean: gamma D <= a and D <= b C, for a pair (a, b)
EXACT_CDF_GD, EXACT_CDF_DC, EXACT_CDF_D = 30.0, 10, 1000   # exact_count_cdf: gamma D, D/C and D at most these


def exact_count_mean(gamma: float, C: int, D: float) -> bool:
    """Whether finite-D max_fraction (C >= 3) takes E[max_c K_c | G] exactly per vector (max_count_mean) rather
    than drawing counts: where gamma D <= 10 and D <= 3 C, or gamma D <= 3 and D <= 10 C (EXACT_MEAN_RULE), the
    side of a measured map (gamma in {0.01, ..., 1}, C in {10, 100}, D/C in {0.3, ..., 10}) on which the exact
    route's variance x time is the smaller: 6e-6 ... 0.64x the drawn one's at 26 points there, 4.2 ... 160x at six
    beyond (e.g. (gamma, C, D) = (0.1, 10, 100): 12.6x; (1, 100, 30): 4.4x). The rule is conservative: at
    (0.01, 100, 1000) the exact route won too (0.54x), in 240 s."""
    return any(gamma * D <= gd and D <= dc * C for gd, dc in EXACT_MEAN_RULE)


def exact_count_cdf(gamma: float, C: int, D: float) -> bool:
    """Whether finite-D max_fraction_cdf (C >= 3) takes P(max_c K_c <= k | G) exactly per vector (max_count_cdf)
    rather than drawing counts: where gamma D <= 30, D <= 10 C and D <= 1000 (the DFT grows as sqrt(D)). On the same
    measured map the exact route's variance x time (the worst of the 1 ... 99 % quantiles) is 2e-5 ... 0.32x the
    drawn one's at 32 points there, and 1.3 ... 5x at five beyond ((gamma, C, D) = (0.1, 100, 1000),
    (0.3, 100, 300), (1, 10, 100), (1, 100, 300), (0.467, 10, 400)); its relative SE at the 1 % quantile
    5e-6 ... 1.9e-3 (drawn: 3.7e-4 ... 1.2e-2), in 0.3 ... 64 s (drawn: 5 ... 13 s). The rule is conservative: at
    (0.467, 3, 400) the exact route won too (0.44x)."""
    return gamma * D <= EXACT_CDF_GD and D <= EXACT_CDF_DC * C and D <= EXACT_CDF_D


def net_means(gamma: float, C: int, stat, offset: float = 0.0) -> tuple:
    """(values, SEs [n_out], per-scramble means [K, n_out]) of offset + E stat(G) over fraction vectors G,
    stat(v, k) -> [n, n_out] for the vectors v [n, C] of scramble k. The means u are the randomised QMC nets of the
    law tables (_others with C + 1: C means in descending order, the largest Gumbel importance-sampled, so G is
    descending and class 0 leads); per scramble the self-normalised weighted mean, SE = SD/sqrt(K) over the
    K_SCRAMBLES scrambles. From 2^-VEC_PILOT of the largest net (vector_points_log2) the net grows by the factor
    (largest relative SE / MAX_REL_SE)^2 the last one asks for, up to the largest."""
    top = vector_points_log2(C)
    m = max(2, top - VEC_PILOT)
    while True:
        base, weight = _others(C + 1, m)
        per = np.array([weight[k] @ stat(fraction_vectors(math.sqrt(gamma) * base[k]), k) / weight[k].sum()
                        for k in range(K_SCRAMBLES)])
        value, se = offset + per.mean(0), scramble_se(per)
        worst = float(np.max(se / np.maximum(np.abs(value), 1e-300)))
        if worst <= MAX_REL_SE or m == top:
            return value, se, per
        m = min(top, m + max(1, math.ceil(2 * math.log2(worst / MAX_REL_SE))))


OVERTAKE_PAIRS = 2     # classes behind the leader whose count differences carry control variates (overtaking)


def overtaking(frac: np.ndarray, G: np.ndarray, D: float) -> np.ndarray:
    """Per draw, (max_c K_c - K_1)/D for counts K = D frac of fraction vectors G [n, C] led by class 0, less for each
    of the OVERTAKE_PAIRS classes b behind it the first two Hermite terms of (K_b - K_1)^+ about its mean: given G,
    X = K_b - K_1 has exactly mean mu = D (p_b - p_1) and variance s^2 = D (p_1 (1 - p_1) + p_b (1 - p_b) + 2 p_1 p_b)
    (p = G normalised, as drawn), so Phi(mu/s) (X - mu) + phi(mu/s)/(2 s) ((X - mu)^2 - s^2) has mean 0 given G
    whatever its coefficients, functions of G (the Gaussian projections of x^+ on He_1, He_2): unbiased. Measured
    (2 pairs against none): 3.8x less variance at (gamma, C, D) = (0.1, 30, 100) and (0.467, 100, 300), 2.4x at
    (0.1, 1e3, 1e4), none at (0.01, 100, 100) (D/C = 1: every class overtakes); 4 pairs did worse."""
    K, p = frac * D, G / G.sum(1, keepdims=True)
    out = K.max(1) - K[:, 0]
    for b in range(1, min(OVERTAKE_PAIRS, G.shape[1] - 1) + 1):
        mu = D * (p[:, b] - p[:, 0])
        var = D * (p[:, 0] * (1 - p[:, 0]) + p[:, b] * (1 - p[:, b]) + 2 * p[:, 0] * p[:, b])
        live = var > 1e-8                      # else X = mu: the terms are 0
        s = np.sqrt(np.where(live, var, 1.0))
        z, x = mu / s, K[:, b] - K[:, 0] - mu
        out -= np.where(live, special.ndtr(z) * x + np.exp(-z * z / 2) / (2 * _SQ2PI * s) * (x * x - var), 0.0)
    return out / D


COUNT_REPEATS = 16     # multinomial draws per fraction vector in the finite-D control variates (SE 3-4x below one)


def count_means(vectors: np.ndarray, D: float, stat, batch: int = 0, repeats: int = COUNT_REPEATS) -> np.ndarray:
    """Per vector, the mean of stat(K/D) [n] over ``repeats`` independent multinomial(D, G) draws (fixed seeds; each
    batch of vectors its own)."""
    return np.mean([stat(observed_fractions(vectors, D, seed=repeats * batch + r)) for r in range(repeats)], axis=0)


BINARY_COUNT_ERROR = 1e-10   # relative error of the C = 2 finite-D routes (max_fraction_binary, max_cdf_binary)


def max_fraction_binary(gamma: float, D: int) -> float:
    """C = 2, finite D: E[max(K, D - K)]/D, K | Z ~ Binomial(D, p), p = Phi(sqrt(gamma) Z) (the igb law). Exactly
    max(K, D - K) = D/2 + |K - D/2| and E|K - c| = E K - c + 2 E(c - K)^+ with
    E(c - K)^+ = c F_D(m) - D p F_(D-1)(m - 1), m = ceil(c) - 1 (k pmf_D(k) = D p pmf_(D-1)(k - 1)), F_n the
    binomial cdf (regularised incomplete beta): one
    closed form per node, integrated over Z (phi(z) < 1e-31 beyond |z| = 12) by 16-node Gauss-Legendre on quarter
    panels of [-12, 12] refined geometrically towards z = 0, where |K - D/2| has its kink smoothed over a width
    ~ 1/(sqrt(gamma D)) in z. Relative error <= 1e-10 (tests: scipy quad of the binomial sum)."""
    width = 0.25 / math.sqrt(gamma * D)
    near = width * 2.0 ** np.arange(0, max(1, math.ceil(math.log2(12 / width))))
    near = near[near < 12]
    z, w = composite_gauss_legendre(np.unique(np.concatenate([np.linspace(-12.0, 12.0, 97), near, -near])), 16)
    p = special.ndtr(math.sqrt(gamma) * z)
    c = D / 2
    m = math.ceil(c) - 1
    below = c * stats.binom.cdf(m, D, p) - D * p * stats.binom.cdf(m - 1, D - 1, p)
    mad = D * p - c + 2 * below
    return float((w * np.exp(-z * z / 2) / _SQ2PI) @ (c + mad)) / D


def count_level(g, D: int) -> np.ndarray:
    """The largest count k with k/D <= g in floating point, as a simulation compares its observed fraction K/D with g
    (floor(g D) alone misses k = 29 at g = 0.29, D = 100: 0.29 * 100 = 28.999999999999996)."""
    k = np.floor(np.asarray(g, float) * D)
    k += (k + 1) / D <= g
    k -= k / D > g
    return k.astype(np.int64)


PMF_TERMS = 64   # binomial window probabilities sum their pmf terms over windows of at most this many counts


def window_probability(lo: int, hi: int, D: int, p: np.ndarray) -> np.ndarray:
    """P(lo <= K <= hi), K ~ binomial(D, p), for p [n] >= 1/2 (so F_D(lo - 1) is the smaller cdf): the cdf
    difference, or where the window has at most PMF_TERMS counts its pmf terms (the difference cancels there: at
    D = 1e9, hi = lo = D/2 it lost 1e-8 relative)."""
    if hi - lo + 1 <= PMF_TERMS:
        return stats.binom.pmf(np.arange(lo, hi + 1)[None], D, p[:, None]).sum(1)
    return stats.binom.cdf(hi, D, p) - stats.binom.cdf(lo - 1, D, p)


def max_cdf_binary(ks: np.ndarray, gamma: float, D: int) -> np.ndarray:
    """C = 2, finite D: P(max(K, D - K) <= k) = P(D - k <= K <= k), K | Z ~ binomial(D, p), p = Phi(sqrt(gamma) Z)
    (the igb law): 2 int_0^12 phi(z) P(D - k <= K <= k | p) dz (even in z; p >= 1/2 on z >= 0; window_probability),
    16-node Gauss-Legendre on 49 panels of [0, 12] refined geometrically towards the edge z_e where p = k/D, which
    the window's probability falls off across over a width sqrt(p (1 - p)/D)/(sqrt(gamma) phi(Phi^-1(p))) (at
    k ~ D/2 the edge is z = 0). gamma = 0: p = 1/2 exactly. Relative error <= 1e-10 (tests: an mpmath Beta mixture
    of the igb law; the uniform law, gamma = 1, up to D = 1e9: <= 2e-11 measured)."""
    ks = np.asarray(ks, np.int64)
    out = np.where(ks >= D, 1.0, 0.0)
    for i in np.nonzero((2 * ks >= D) & (ks < D))[0]:
        k = int(ks[i])
        if gamma == 0:
            out[i] = window_probability(D - k, k, D, np.array([0.5]))[0]
            continue
        s = math.sqrt(gamma)
        x = float(special.ndtri(k / D))
        edge, width = x / s, math.sqrt(k * (D - k) / D**3) / (s * math.exp(-x * x / 2) / _SQ2PI)
        steps = 2.0 ** np.arange(-2, 40)
        breaks = np.concatenate([np.linspace(0.0, 12.0, 49), edge + width * steps, edge - width * steps])
        z, w = composite_gauss_legendre(np.unique(breaks[(breaks >= 0) & (breaks <= 12)]), 16)
        inner = window_probability(D - k, k, D, special.ndtr(s * z))
        out[i] = 2 * float((w * np.exp(-z * z / 2) / _SQ2PI) @ inner)
    return out


CDF_COUNT_REPEATS = 16  # count draws per vector in max_cdf_sampled (against 4: 1.0-7x less variance, measured)


def pair_smoothed_max_cdf(G: np.ndarray, D: int, ks: np.ndarray, seed: int, repeats: int) -> np.ndarray:
    """[n, n_k]: per fraction vector G [n, C] (descending: columns 0 and 1 the two largest), the mean over ``repeats``
    draws of 1{max_(c >= 2) K_c <= k} P(S - k <= K_0 <= k | S), where (S, K_2, ...) ~ multinomial(D, (p_0 + p_1,
    p_2, ...)) and K_0 | S ~ binomial(S, p_0/(p_0 + p_1)): the split of the leading pair integrated exactly, so an
    unbiased estimate of P(max_c K_c <= k | G) with less count noise than the indicator (fixed seeds per scramble)."""
    C = G.shape[1]
    p = G / G.sum(1, keepdims=True)
    lump = np.concatenate([np.minimum(p[:, :1] + p[:, 1:2], 1.0), p[:, 2:]], 1)   # the sum can round to 1 + 2^-52
    q = (p[:, 0] / lump[:, 0])[:, None]
    rng = np.random.default_rng([SEED, C, int(D), seed, 3])
    out = np.zeros((G.shape[0], ks.size))
    for _ in range(repeats):
        K = rng.multinomial(int(D), lump)
        S = np.broadcast_to(K[:, :1], out.shape)
        k = np.broadcast_to(ks[None], out.shape)
        rest = K[:, 1:].max(1, initial=0)[:, None] <= k
        out += rest & (S <= k)                                   # the pair cannot exceed k: probability 1
        split = rest & (S > k) & (S <= 2 * k)                   # else (S > 2k) one of the pair exceeds k: 0
        n, kk, qq = S[split], k[split], np.broadcast_to(q, out.shape)[split]
        out[split] += np.maximum(stats.binom.cdf(kk, n, qq) - stats.binom.cdf(n - kk - 1, n, qq), 0.0)
    return out / repeats


@lru_cache(maxsize=32)
def max_cdf_sampled(gamma: float, C: int, D: int, ks: tuple, exact: bool | None = None) -> tuple:
    """(values, SEs) [len(ks)]: P(max_c K_c <= k) at dataset size D, C >= 3, over net_means of P(max_c K_c <= k | G):
    exact per vector where ``exact`` (None: as exact_count_cdf says; max_count_cdf), else pair_smoothed_max_cdf
    (CDF_COUNT_REPEATS draws per vector). Exactly 0 where C k < D, 1 where k >= D. SE inf (no digit claimed) where a
    scramble's mean is 0: no draw saw the event, too rare for the spread to measure the error (at (gamma, C, D) =
    (1, 100, 100), P(every class gets one point) < 1e-42 reads 0), or it underflowed. Memoised: a form's values
    and SEs share a run."""
    k = np.asarray(ks, np.int64)
    value, se = np.where(k >= D, 1.0, 0.0), np.zeros(k.size)
    live = (C * k >= D) & (k < D)
    if live.any():
        if exact_count_cdf(gamma, C, D) if exact is None else exact:
            def stat(vec, s):
                return np.stack([max_count_cdf(vec, D, int(x)) for x in k[live]], 1)
        else:
            def stat(vec, s):
                return pair_smoothed_max_cdf(vec, D, k[live], s, CDF_COUNT_REPEATS)
        v, e, per = net_means(gamma, C, stat)
        value[live], se[live] = np.clip(v, 0.0, 1.0), np.where((per > 0).all(0), e, np.inf)
    return value, se


def sampled_at_levels(g: np.ndarray, gamma: float, C: int, D: int) -> tuple:
    """(values, SEs) of max_cdf_sampled at the count levels of g (each distinct level computed once), shaped as g."""
    levels, inverse = np.unique(count_level(g, D), return_inverse=True)
    value, se = max_cdf_sampled(float(gamma), int(C), int(D), tuple(int(x) for x in levels))
    return value[inverse], se[inverse]


def max_fraction_cdf_se(g, gamma: float, C: int, D: int) -> np.ndarray:
    """The stated standard error of multiclass.max_fraction_cdf at finite D, in the value's units (its relative SE
    is SE / value): C >= 3 the scramble SE of max_cdf_sampled (inf where no digit is resolved); 0 where the route is
    exact (C = 2, gamma = inf, C k < D, k >= D)."""
    g = np.atleast_1d(np.asarray(g, float))
    if int(C) == 2 or math.isinf(gamma):
        return np.zeros(g.shape)
    return sampled_at_levels(g, gamma, C, D)[1]


def _max_cdf_finite(g: np.ndarray, gamma: float, C: int, D: int) -> np.ndarray:
    """P(max_c K_c/D <= g) at finite D for the g of one (gamma, C, D): gamma = inf 1{g >= 1} (one class takes every
    point), C = 2 max_cdf_binary, else max_cdf_sampled at the distinct count levels."""
    if math.isinf(gamma):
        return (count_level(g, D) >= D).astype(float)
    if C == 2:
        return max_cdf_binary(count_level(g, D), gamma, D)
    return sampled_at_levels(g, gamma, C, D)[0]


def max_fraction_cdf_numpy(g, gamma, C, D):
    shape, (gg, gm, cc, dd) = _pairs(g, gamma, C, D)
    out = np.empty(gg.shape)
    finite = ~np.isinf(dd)
    for key in set(zip(gm[finite], cc[finite], dd[finite])):
        at = finite & (gm == key[0]) & (cc == key[1]) & (dd == key[2])
        out[at] = _max_cdf_finite(gg[at], float(key[0]), int(key[1]), int(key[2]))
    if (~finite).any():
        out[~finite] = _max_cdf_population(gm[~finite], cc[~finite], gg[~finite])
    return out.reshape(shape)


CHAMBER_C = (4,)   # C where max_fraction_cdf at D = inf is the deterministic ordered-gaps integral (chamber.py)


def _max_cdf_population(gamma, C, g):
    """P(max_c G_c <= g) at D = inf per point: C = 2 erf(Phi^-1(g)/sqrt(2 gamma)) (max(G, 1 - G) <= g <=>
    |Z| <= Phi^-1(g)/s), C = 3 three.max_cdf, C = 4 chamber.max_cdf (both deterministic), C >= 5
    max_cdf_replicates (projected onto [0, 1]: never farther from the truth); gamma in {0, inf} exact."""
    out = np.empty(g.shape)
    for i in range(g.size):
        gm, cc, gg = float(gamma[i]), int(C[i]), float(g[i])
        if gm == 0 or math.isinf(gm):
            out[i] = float(gg >= 1 / cc) if gm == 0 else float(gg >= 1)
        elif cc == 2:
            out[i] = 0.0 if gg < 0.5 else special.erf(_probit(gg) / (math.sqrt(gm) * math.sqrt(2)))
        elif cc == 3:
            out[i] = three.max_cdf(gg, gm)
        elif cc in CHAMBER_C:
            out[i] = chamber.max_cdf(gg, gm, cc)[0]
        else:
            value = float(max_cdf_replicates(np.array([gg]), gm, cc)[0].mean(0)[0]) if gg > 1 / cc else 0.0
            out[i] = min(max(value, 0.0), 1.0)
    return out


def max_cdf_replicates(g: np.ndarray, gamma: float, C: int) -> tuple:
    """(per-scramble P(max_c G_c <= g) [K, n_g], deterministic bound [n_g], ess [n_g]) at D = inf from the law tables
    (App. H, the dominant class). max_c G_c is the G of the largest mean (G_c increases in u_c), the classes are
    exchangeable and {argmax u = c} disjoint, so P(max_c G_c <= g) = C P(G_1 <= g, u_1 > max others) =
    C E[(Phi(u*(g)/s) - Phi(u_top/s))_+] given the others (u_1 in (u_top, u*(g)]): the same Rao-Blackwellised rows
    as the cdf, on the plain (uncentred) table: its rows depend on u_top mostly, which the nets' best coordinate and
    the importance sampling drive (centred, the bound was up to 100x wider where the value is near 1, at gamma <=
    0.1, and 0.1 relative at C = 10 with the radius integrated up to its kink). Deterministic bound:
    C E[det_error(Phi(u*/s))] over the rows where the bracket is positive (the root's relative error).
    Where g >= 1/2 and the law's table is centred (_centred), _max_cdf_upper (exactly 1 - C (1 - F(g))) unless
    fewer than ESS_MIN effective rows carry 1 - F there."""
    g = np.atleast_1d(np.asarray(g, float))
    F, det, ess = np.empty((K_SCRAMBLES, g.size)), np.empty(g.size), np.empty(g.size)
    upper = (g >= 0.5) & _centred(gamma, C)
    if upper.any():
        F[:, upper], det[upper], ess[upper] = _max_cdf_upper(g[upper], gamma, C)
        upper[upper] = ess[upper] >= ESS_MIN
    if not upper.all():
        tab = _table(gamma, C, centred=False)
        lead = special.ndtr(tab.top / tab.s)[:, None]

        def bracket(x, Fr, fr, clip, *_):
            raw = Fr + clip                                  # Phi(u*/s) (clipped rows: root below u_top, 0 here)
            term = C * np.maximum(raw - lead, 0.0)
            return term, C * det_error(raw, tab.s) * (term > 0)
        (F[:, ~upper], det_rows), ess[~upper] = tab.scramble_sums(g[~upper], bracket)
        det[~upper] = det_rows.mean(0)
    return F, det, ess


def _max_cdf_upper(g: np.ndarray, gamma: float, C: int) -> tuple:
    """max_cdf_replicates at g >= 1/2: the fractions sum to 1, so at most one class has G_c > g, the events
    {G_c > g} are disjoint and P(max_c G_c <= g) = 1 - C (1 - P(G_1 <= g)) exactly: the law of one fraction with its
    control variates and its whole deterministic bound (_Table.bounded), times C. Measured against the plain route
    at gamma = 1, C = 4, 10, 100, g in [0.5, 0.95]: relative bounds 4e-11 ... 6e-6 against 1.6e-6 ... 1.4e-4. ess:
    the effective rows of 1 - F (those of F count every row near g = 1, where few carry its complement)."""
    tab = _table(gamma, C)
    F, _, _, det = tab.bounded(g)
    _, ess = tab.scramble_sums(g, lambda x, Fr, *_: (1 - Fr,))
    return 1 - C * (1 - F), C * det.total(), ess


def max_cdf_relative_bound(g, gamma: float, C: int) -> np.ndarray:
    """A true relative error bound of multiclass.max_fraction_cdf at D = inf, 0 < gamma < inf, C >= 3. C >= 5
    (99.99 %, as law_bound): b = T_FACTOR x SE + the deterministic bound, inf where fewer than ESS_MIN effective rows
    carry the value; relative b/(F_hat - b). C = 4: chamber.max_cdf's deterministic bound, relative the same way.
    C = 3: THREE_ERROR."""
    g = np.atleast_1d(np.asarray(g, float))
    if int(C) == 3:
        return np.full(g.shape, THREE_ERROR)
    if int(C) in CHAMBER_C:
        value, bound = np.array([chamber.max_cdf(float(x), float(gamma), int(C)) for x in g]).T
        return np.where(g <= 1 / int(C), 0.0, _relative(value, bound))      # exactly 0 at g <= 1/C
    F, det, ess = max_cdf_replicates(g, gamma, int(C))
    return _relative(F.mean(0), replicate_bound(F, det, ess))


def entropy_law(gamma: float, C: int, D: float = math.inf) -> tuple:
    """(per-scramble entropy C E[psi(G_c)] [K_SCRAMBLES], deterministic bound) at C >= 4, from the law of one G_c
    (law_functional): a functional of the randomised QMC law, not of sampled fraction vectors. D = inf:
    psi(g) = -g log g; finite D: psi_D(g) = E h(K/D), K ~ binomial(D, g) (observed.entropy_kernel), the observed
    entropy being a sum of one-class terms whose counts are binomial(D, G_c). The tails of int |psi'| use concavity
    (psi_D is concave, psi_D(0) = psi_D(1) = 0, psi_D <= h <= 1/e): int_0^g |psi'| = psi(g) where psi'(g) >= 0, else
    <= 2/e (and symmetrically above)."""
    tab = _table(gamma, C)
    if math.isinf(D):
        def psi(g):
            return -special.xlogy(g, g)

        def below(g):      # int_0^g |1 + log x| dx = -g log g for g <= 1/e (bounded by 1/e + g beyond)
            return -g * math.log(g) if 0 < g <= math.exp(-1) else (g + math.exp(-1) if g > 0 else 0.0)
        parts = (psi, lambda g: -(1 + np.log(g)), below, lambda g: (1 - g) * (1 + abs(math.log(g))))
    else:
        D = int(D)

        def kernel(g):
            return entropy_kernel(g, 1 - np.asarray(g, float), D)

        def tail(rising):
            def bound(g):
                value, slope = (float(x) for x in kernel(g))
                return value if (slope >= 0) == rising else 2 / math.e
            return bound
        parts = (lambda g: kernel(g)[0], lambda g: kernel(g)[1], tail(True), tail(False))
    return tab.functional(("entropy", D), lambda: tuple(C * x for x in law_functional(tab, *parts)[:2]))


def entropy_numpy(gamma, C, D):
    return _vector_route(_binary_entropy, lambda gm, cc, dd: entropy_se(gm, cc, dd)[0], gamma, C, D)


def entropy_se(gamma: float, C: int, D: float) -> tuple:
    """(E entropy of the observed fractions K_c/D, its standard error) (App. H; D = inf: of G). No vector is sampled:
    E H(K/D) = C E psi_D(G_c) over the law of one G_c (observed.py). C = 2: _binary_entropy (deterministic);
    C = 3: three.entropy (relative THREE_ERROR); C >= 4: entropy_law (randomised QMC law: SE over the scrambles, its
    deterministic bound added to it); gamma = 0: C psi_D(1/C) (G = 1/C), gamma = inf: 0. The SE is 0 on the
    deterministic routes; relative SE = SE/value."""
    C, finite = int(C), math.isfinite(D)
    if gamma == 0:
        value = C * float(entropy_kernel(1 / C, 1 - 1 / C, int(D))[0]) if finite else math.log(C)
        return value, 0.0
    if math.isinf(gamma) or (finite and D < 2):
        return 0.0, 0.0
    se = 0.0
    if C == 2:
        value = float(_binary_entropy(np.array([gamma]), D)[0])
    elif C == 3:
        value = three.entropy(gamma, D)
    else:
        reps, det = entropy_law(gamma, C, D)
        value, se = float(reps.mean()), float(scramble_se(reps)) + det
    return min(max(value, 0.0), math.log(C)), se


def _no_vector_reference(name, C, D):
    if int(C) != 2 or D != mpmath.inf:
        raise NumericalError(f"{name}: no mpmath reference for C >= 3 or finite D (Monte Carlo route; see "
                             "vector_samples)")


def binary_max_mp(gamma, C, D):
    _no_vector_reference("multiclass.max_fraction", C, D)
    return mpmath.mpf(1) / 2 + mpmath.atan(mpmath.sqrt(gamma)) / mpmath.pi


def _binary_max_cdf_mp(g, gamma, C, D):
    """C = 2: P(max(G, 1 - G) <= g) = P(|Z| <= Phi^-1(g)/sqrt(gamma)) = erf(erfinv(2g - 1)/sqrt(gamma)) for g >= 1/2."""
    _no_vector_reference("multiclass.max_fraction_cdf", C, D)
    if g < mpmath.mpf(1) / 2:
        return mpmath.mpf(0)
    if gamma == 0 or g == 1:
        return mpmath.mpf(1)
    return mpmath.mpf(0) if gamma == mpmath.inf else mpmath.erf(mpmath.erfinv(2 * g - 1) / mpmath.sqrt(gamma))


def binary_entropy_mp(gamma, C, D):
    """C = 2: E h(Phi(s Z)); for s > 1 in x = s z (the integrand's scale is 1 in x: a spike of width 1/s in z), on
    [-X, X] with X = sqrt(2 (dps + 10) ln 10): the integrand is <= phi(|x|) (1 + x^2) beyond, so the cut tails are
    below 10^-(dps + 5) of the value (an infinite interval put tanh-sinh nodes at x ~ 1e125 for s = 1e125 and missed
    the bump: 7.2013e-126 for 7.2065e-126 at both 30 and 50 digits)."""
    _no_vector_reference("multiclass.entropy", C, D)
    s = mpmath.sqrt(gamma)
    X = mpmath.sqrt(2 * (mpmath.mp.dps + 10) * mpmath.log(10))
    ends = [-X, -8, -3, -1, 0, 1, 3, 8, X]

    def h(x):
        p, q = mpmath.ncdf(x), mpmath.ncdf(-x)
        return -(p * mpmath.log(p) + q * mpmath.log(q)) if p > 0 and q > 0 else mpmath.mpf(0)
    if s > 1:
        return mpmath.quad(lambda x: mpmath.npdf(x / s) * h(x), ends) / s
    return mpmath.quad(lambda z: mpmath.npdf(z) * h(s * z), ends)


# ============================================================================ the paper's approximation (App. H)
def paper_approx_numpy(g, gamma, C):
    """P(Phi((u_c - M)/sqrt 2) <= g), M the largest of C - 1 i.i.d. N(0, gamma): E_M[Phi(M/s + sqrt(2) x/s)]."""
    g, gamma, C = np.broadcast_arrays(np.asarray(g, float), np.asarray(gamma, float), np.asarray(C, float))
    x = _probit(g)
    nodes, weights = gumbel_gauss_rule()
    regular = (gamma > 0) & np.isfinite(gamma) & (g > 0) & (g < 1)
    s = np.sqrt(np.where(regular, gamma, 1.0))
    m = quantile_at_gumbel(nodes, (C - 1)[..., None])              # the max of C - 1 standard normals
    out = row_dot(special.ndtr(m + (np.sqrt(2) * np.where(regular, x, 0.0) / s)[..., None]), weights)
    small = regular & ((gamma < PAPER_RULE_MIN) | (out < PAPER_LOG_BELOW))   # the rule's error is absolute: a small
    if small.any():                                                            # value takes the log-space route
        out = np.array(out, dtype=float)
        out[small] = _paper_log_space(np.sqrt(2) * x[small] / s[small], C[small] - 1)
    out = np.where(np.isinf(gamma), 1 - 1 / C, out)
    out = np.where(gamma == 0, np.where(g < 0.5, 0.0, 1.0), out)
    return np.where(g <= 0, 0.0, np.where(g >= 1, 1.0, np.clip(out, 0.0, 1.0)))   # a probability (rule rounding)


PAPER_ERROR = 1e-7      # relative: the rule's absolute 1e-9 on the values >= PAPER_LOG_BELOW it returns
PAPER_LOG_BELOW = 1e-2  # values below this come from the log-space route (relative; the rule said 4.3e-183 for
                        # 4.9e-149 at g = 1e-16, gamma = 0.1)
PAPER_RULE_MIN = 0.1    # below this gamma the fixed 40-node rule misses the peak (1.2e-69 for 2.8e-66 at 0.0019)
_PAPER_T = 0.1 * np.arange(-400, 401)   # trapezoid nodes in units of the peak width (+- 40 widths)


def _paper_log_space(shift, k):
    """int k phi(m) Phi(m)^(k-1) Phi(m + shift) dm (flat arrays) by the trapezoid rule in log space around the mode
    m0 of the log-concave integrand (vectorised bisection of its decreasing derivative -m + (k-1) lam(m) +
    lam(m + shift), lam the inverse Mills ratio), step 0.1 w over m0 +- 40 w, w = 1/sqrt(-L''(m0)) <= 1: the log drops
    >= 50 at 10 w and at least linearly beyond (log-concavity), so the cut is < e^-300 relative and the step resolves
    the analytic peak to rounding. Full relative accuracy at every size of the value (what gamma < PAPER_RULE_MIN
    needs: there the peak sits far in the upper tail of the maximum); 0 where the log of the peak is below -800."""
    far_below = shift < -100            # value <= k Phi(-50)^2-ish < e^-2400: 0 in double
    shift = np.clip(shift, -100.0, 100.0)  # above 100: Phi(m + shift) = 1 wherever the weight of m is not 0

    def dlog(m):
        return -m + (k - 1) * inverse_mills(m) + inverse_mills(m + shift)
    lo = np.full(shift.shape, -1.0)
    hi = np.maximum(-shift, 0.0) + np.sqrt(2 * np.log(np.maximum(k, 1))) + 10
    for _ in range(200):
        mid = (lo + hi) / 2
        up = dlog(mid) > 0
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    m0 = (lo + hi) / 2
    w = 1 / np.sqrt(np.maximum(1.0, (dlog(m0 - 1e-4) - dlog(m0 + 1e-4)) / 2e-4))
    m = m0[:, None] + w[:, None] * _PAPER_T[None, :]
    log_f = -m * m / 2 + (k - 1)[:, None] * special.log_ndtr(m) + special.log_ndtr(m + shift[:, None])
    top = log_f[:, 400]      # below -800 the value is < e^-790, 0 in double (and m0 +- w may not even be resolved)
    value = k * np.exp(top) * (np.exp(log_f - top[:, None]).sum(-1) * 0.1 * w) / _SQ2PI
    return np.where(far_below | (top < -800), 0.0, np.minimum(value, 1.0))   # a probability (rounding: 1 + 1e-15)


def paper_approx_mp(g, gamma, C):
    k = int(C) - 1
    if g <= 0 or g >= 1:
        return mpmath.mpf(0) if g <= 0 else mpmath.mpf(1)
    shift = mpmath.sqrt(2) * mp_ncdf_inv(g) / mpmath.sqrt(gamma)
    return k * mp_log_concave_integral(lambda m: -m * m / 2 + (k - 1) * mp_log_ncdf(m) + mp_log_ncdf(m + shift),
                                       lambda m: -m + (k - 1) * mp_mills(m) + mp_mills(m + shift)) / mpmath.sqrt(
                                           2 * mpmath.pi)


def _paper_limit(g, gamma, C):
    if g == 0 or g == 1:
        return g
    if gamma == 0:
        return 0 if g < 0.5 else 1
    if gamma == mpmath.inf:
        return 1 - mpmath.mpf(1) / C
    return None


# ============================================================================ the stated relative error of each value
CLOSED_ERROR = 1e-12   # relative error of the C = 2 closed forms (the igb law: ndtr, ndtri, exp, erf in double)


def _grouped(fn, g, gamma, C, *more) -> np.ndarray:
    """fn(g values, gamma, C, *more) once per distinct (gamma, C, *more) over its g (one pass over a law table),
    shaped as the parameters broadcast."""
    shape, (gg, *keys) = _pairs(g, gamma, C, *more)
    out = np.empty(gg.shape)
    for key in set(zip(*keys)):
        at = np.logical_and.reduce([k == v for k, v in zip(keys, key)])
        out[at] = fn(gg[at], float(key[0]), int(key[1]), *key[2:])
    return out.reshape(shape)


def _each(fn, *params) -> np.ndarray:
    """fn(*floats) at every point of the broadcast parameters, shaped as they broadcast (the tables are memoised)."""
    shape, flat = _pairs(*params)
    return np.array([fn(*point) for point in zip(*flat)], float).reshape(shape)


def cdf_relative_bound(g, gamma, C) -> np.ndarray:
    """multiclass.cdf's stated relative error at each point (its Accuracy.per_value): CLOSED_ERROR where a closed
    form gives the value (g <= 0 or g >= 1, gamma in {0, inf}, C = 2: the igb law), THREE_ERROR at C = 3
    (deterministic), law_relative_bound at C >= 4 (99.99 %; inf where no digit is claimed)."""
    def bound(x, gamma, C):
        closed = (x <= 0) | (x >= 1) | (gamma == 0) | math.isinf(gamma) | (C == 2)
        out = np.full(x.shape, CLOSED_ERROR)
        if not closed.all():
            out[~closed] = law_relative_bound(x[~closed], gamma, C)
        return out
    return _grouped(bound, g, gamma, C)


def pdf_relative_bound(g, gamma, C) -> np.ndarray:
    """multiclass.pdf's stated relative error at each point (0 < g < 1, 0 < gamma < inf): CLOSED_ERROR at C = 2,
    THREE_ERROR at C = 3, at C >= 4 b/(f_hat - b) with b the density's bound (_Table.density_bounded: 99.99 % over
    the scrambles plus its deterministic parts; inf where no digit is claimed)."""
    def bound(x, gamma, C):
        if C <= 3:
            return np.full(x.shape, CLOSED_ERROR if C == 2 else THREE_ERROR)
        f, b, _ = _table(gamma, C).density_bounded(x)
        return _relative(np.maximum(f.mean(0), 0.0), b)
    return _grouped(bound, g, gamma, C)


def p_empty_bound_each(gamma, C, D) -> np.ndarray:
    """multiclass.p_empty's (and n_empty's) stated relative error at each point: p_empty_relative_bound; CLOSED_ERROR
    at gamma in {0, inf} (closed forms)."""
    return _each(lambda gm, c, d: CLOSED_ERROR if gm == 0 or math.isinf(gm) else
                 p_empty_relative_bound(gm, int(c), int(d)), gamma, C, D)


def max_fraction_relative_bound(gamma, C, D) -> np.ndarray:
    """multiclass.max_fraction's stated relative error at each point: CLOSED_ERROR at gamma in {0, inf} with D = inf
    and at gamma = inf (closed forms), VAR_REL at D = inf (the 2-d quadrature), BINARY_COUNT_ERROR at C = 2 with
    finite D (max_fraction_binary), else b/(v - b) with b = T_FACTOR x the SE over the scrambles (max_fraction_se),
    99.99 %."""
    def one(gamma, C, D):
        if math.isinf(gamma) or (gamma == 0 and math.isinf(D)):
            return CLOSED_ERROR
        if math.isinf(D):
            return VAR_REL
        if int(C) == 2 and gamma > 0:
            return BINARY_COUNT_ERROR
        value, se = max_fraction_se(gamma, int(C), D)
        return float(_relative(value, T_FACTOR * se))
    return _each(one, gamma, C, D)


def max_fraction_cdf_relative_bound(g, gamma, C, D) -> np.ndarray:
    """multiclass.max_fraction_cdf's stated relative error at each point: CLOSED_ERROR where the value is 0, 1 or a
    closed form (g <= 0 or g >= 1, gamma in {0, inf}, g <= 1/C at D = inf, C = 2 at D = inf); D = inf, C >= 3:
    max_cdf_relative_bound (THREE_ERROR at C = 3, chamber.max_cdf's at C = 4, the law tables' at 99.99 % from
    C = 5); finite D: BINARY_COUNT_ERROR at C = 2, else b/(v - b) with b = T_FACTOR x the SE over the scrambles
    (max_fraction_cdf_se; CLOSED_ERROR where the route is exact, SE 0)."""
    def bound(x, gamma, C, D):
        out = np.full(x.shape, CLOSED_ERROR)
        live = (x > 0) & (x < 1) & (gamma > 0) & (not math.isinf(gamma))
        if math.isinf(D):
            live &= (x > 1 / C) & (C > 2)
            if live.any():
                out[live] = max_cdf_relative_bound(x[live], gamma, C)
            return out
        if live.any():
            if C == 2:
                out[live] = BINARY_COUNT_ERROR
            else:
                value, se = sampled_at_levels(x[live], gamma, C, int(D))
                out[live] = np.where(se == 0, CLOSED_ERROR, _relative(value, T_FACTOR * se))
        return out
    return _grouped(bound, g, gamma, C, D)


def entropy_relative_bound(gamma, C, D) -> np.ndarray:
    """multiclass.entropy's stated relative error at each point: CLOSED_ERROR at gamma = inf or D < 2 (the value is 0),
    at gamma = 0 (C psi_D(1/C) or log C) and C = 2 (the 1-d rule), THREE_ERROR at C = 3, at C >= 4
    b/(v - b) with b = T_FACTOR x the SE over the scrambles + the deterministic bound of entropy_law (99.99 %)."""
    def one(gamma, C, D):
        C = int(C)
        if math.isinf(gamma) or D < 2 or gamma == 0 or C == 2:
            return CLOSED_ERROR
        if C == 3:
            return THREE_ERROR
        return float(_relative(*qmc_estimate(*entropy_law(gamma, C, D))))
    return _each(one, gamma, C, D)


# ============================================================================ registration
LAW = Provenance(IGB, "App. H (multi-class extension; exact law derived in derivations/multiclass.py)", MODEL)
_G_DEF = sp.Integral(sp.exp(-z_s**2 / 2) / sp.sqrt(2 * sp.pi) * sp.Product(Phi(z_s + u_s - sp.Symbol("u_j")),
                                                                         (sp.Symbol("j"), 1, C_s - 1)),
                     (z_s, -sp.oo, sp.oo))
MC_ERROR = ("randomised QMC over the other C-1 means, 16 scrambles: at gamma up to 2 ... 10 (_centred) the others' "
            "common mode in closed form and the centred others in polar form, the radius by its chi law's Gauss rule "
            "and the direction by a rotated product rule (C = 4, 5) or by importance-sampled Sobol directions with "
            "cross-fitted control variates (the symmetric power sums of degree <= 14, exact means); above, plain "
            "Sobol nets (2^12 ... 2^7 points, importance-sampled largest mean); for C >= 10 the product over the "
            "others by binned 5th-order Taylor expansions with a computed remainder): |error| <= law_bound = 5.24 x "
            "(SE between the scrambles) + det_error (2e-9 + 7e-10 z/s of the nearer tail) + clip + what G_hat's "
            "error moves the value by + 2 x the radial rule's half-rule difference (computed) at 99.99 % (Student "
            "t, 15 dof); relative: law_relative_bound = b/(F_hat - b), the form's per-value accuracy (see "
            "multiclass.cdf); inf where no digit is claimed (the far lower tail); C = 3 relative 1e-10 "
            "(deterministic), C = 2 and gamma in {0, inf} exact")


_E, _Gc = sp.Function("E"), sp.Symbol("G_c")
_T1S, _T2S = sp.symbols("T_1 T_2", real=True)


def _per_value(text: str, bound) -> Accuracy:
    """The form's accuracy, stated per value by ``bound`` (Accuracy.per_value: the relative error of each value the
    route returns, at 99.99 % where the route samples, inf where no digit is claimed); ``text`` says how each route
    makes it and what it measured."""
    return Accuracy(math.inf, text, per_value=bound)


_LAW_TEXT = ("C = 2 the igb closed form (relative 1e-12); C = 3 deterministic, relative 1e-10 (a 1-d integral over "
             "q = (d2 - d3)/2 of Phi(-p*(q)/sigma_p), multiclass_numerics/three.py); C >= 4 randomised QMC over the "
             "other means with spherical-radial rows and control variates, at 99.99 % (Student t over 16 "
             "scrambles) plus the computed deterministic parts; exact at gamma in {0, inf}. ")
_CDF_ACC = _per_value(_LAW_TEXT + "C >= 4: cdf_relative_bound = law_relative_bound, measured max over g in "
                      "[1/(2C), 2/C], C in {4, 5, 10, 30, 100, 1e3, 1e4}: <= 1.2e-7 at gamma in [0.01, 0.3], "
                      "<= 6.5e-8 at gamma = 1 up to C = 10 and 4.3e-7 ... 1.1e-5 above, 2e-9 (C = 4) ... 3.3e-5 "
                      "(C = 1e3) and 7.8e-5 (C = 1e4) at gamma = 3, 2.4e-7 ... 1.4e-5 at gamma = 10, <= 2.8e-6 at "
                      "gamma >= 100, 3e-7 ... 1.3e-6 at gamma = 1e-3 (there those g are tail values); inf in the far "
                      "lower tail", cdf_relative_bound)
_PDF_ACC = _per_value(_LAW_TEXT + "C >= 4: pdf_relative_bound, the density of the same rows with its own bound "
                      "(_Table.density_bounded: T x SE, the Hermite slope's error, what G_hat's error moves it by, "
                      "the radial rule's; inf where a row off its grid or too few rows carry it), measured max over "
                      "g in [0.3/C, 2/C], C in {4, 5, 10, 30, 100, 1e3, 1e4}: <= 2.4e-6 at gamma <= 0.1 (the "
                      "Hermite part; tail values down to 1e-142), 7.7e-9 (C = 4) ... 2.4e-6 (C = 30) ... 8.6e-5 "
                      "(C = 1e4) at gamma = 1, 1.7e-8 (C = 4) ... 7.1e-5 (C = 100), 4.1e-4 (C = 1e3), 2.8e-3 "
                      "(C = 1e4) at gamma = 3, 6.5e-6 ... 1e-4 up to C = 100 and 5.7e-4 ... 2.7e-3 above at gamma "
                      "in [10, 100]", pdf_relative_bound)
_VEC_ACC = _per_value("D = inf: exact where C = 2 (closed form) or gamma in {0, inf}, relative <= 1e-10 at C = 3 (1-d "
                      "integral 3 E_q[(Phi(-q/s_p) - Phi(p*/s_p))_+], multiclass_numerics/three.max_cdf), C = 4 "
                      "relative <= max(1e-6, 1e-12/(4 g - 1)) deterministic, in both tails (the ordered gaps, radius "
                      "in closed form, simplex rule: multiclass_numerics/chamber.py; measured <= 7.7e-9 at 70 random "
                      "points, gamma in [1e-3, 1e3], and <= 2.7e-7 at 25 with 1 - g in [3e-16, 1e-4]), C >= 5 "
                      "C E[(Phi(u*/s) - Phi(u_top/s))_+] over the randomised QMC law tables at 99.99 % (2e-6 ... "
                      "5.6e-2 measured down to the 1 % quantile, up to 0.24 at the 0.1 %, inf in the far lower "
                      "tail), and at g >= 1/2 where the law's table is centred exactly 1 - C (1 - F(g)) (4e-11 ... "
                      "3.5e-5 measured, 5e-9 ... 3e-7 at gamma = 1, C <= 10); finite D: P(max_c K_c <= k), k the "
                      "largest count with k/D <= g, K multinomial(D, G): C = 2 exact (binomial cdf difference over "
                      "the igb law, relative <= 1e-10), C >= 3 randomised QMC over the law tables' nets of fraction "
                      "vectors with the leading pair's split integrated exactly, 16 count draws per vector, "
                      "T x the SE over the 16 scrambles (max_fraction_cdf_se; the net enlarged until the relative SE "
                      "is <= 1e-4 or 2^m C reaches 2^17; relative SE measured at the 50 / 95 % quantiles: 1.3e-4 / "
                      "3.4e-5 at (gamma, C, D) = (0.467, 3, 400), 2.8e-4 / 1.0e-4 at (0.467, 10, 400), 1.2e-3 / "
                      "2.7e-4 at (0.467, 100, 300), 3.5e-3 / 4.9e-4 at (0.1, 1e3, 1e4), 5.5e-2 at the median at "
                      "(1, 1e4, 1e5); 1e-3 ... 2e-2 at the 1 ... 5 % quantiles; inf where a scramble saw no draw in "
                      "the event); where gamma D <= 30, D <= 10 C and D <= 1000 (exact_count_cdf) P(max_c K_c <= k "
                      "| G) exact per vector instead (multiclass_numerics/counts.py, relative 2e-12; relative SE "
                      "measured at the 1 ... 99 % quantiles 5e-6 ... 1.9e-3 / 2e-7 ... 2.5e-5 at 32 (gamma, C, D) "
                      "points, where drawn counts gave 3.7e-4 ... 1.2e-2 / 8.8e-6 ... 1.4e-4, e.g. 1.5e-4 ... 4.6e-7 "
                      "at (0.01, 100, 100), and the rare event of every class getting one point, ~1e-43, where it "
                      "read 0); exact 0 where C k < D and 1 where k >= D", max_fraction_cdf_relative_bound)
_EMPTY_ACC = _per_value("C >= 4: a functional of the randomised QMC law (spherical-radial rows, radially tilted for "
                        "rare events), p_empty_relative_bound at 99.99 % (2e-7 ... 2e-6 measured at C in [4, 1000], "
                        "5e-6 ... 7e-6 for values down to 1.7e-184 at gamma = 0.01; inf where no digit is "
                        "resolved); C = 3: relative <= 1e-10, deterministic 2-d log-space quadrature around the "
                        "integrand's peak (rare events included: relative precision down to 1e-300, "
                        "multiclass_numerics/three.py); C = 2: relative <= 2e-9; exact at gamma in {0, inf}",
                        p_empty_bound_each)
_MAX_ACC = _per_value("D = inf: relative <= 1e-12 (exact 2-d quadrature C E[Phi_2(X, Y; r)^(C-1)], "
                      "multiclass_numerics/power.py); finite D, C = 2: exact (binomial closed form integrated over "
                      "the igb law, relative <= 1e-10); finite D, C >= 3: T x the SE over the scrambles of the exact "
                      "D = inf value + the mean of (max_c K_c - K_top)/D (the count noise overtaking the leading "
                      "class) over the randomised QMC nets of the means (16 scrambles, the largest mean "
                      "importance-sampled) and 64 multinomial draws per vector, less control variates of exact mean "
                      "0 (overtaking), the net enlarged until the relative SE (max_fraction_se) is <= 1e-4 or 2^m C "
                      "reaches 2^17 per scramble (relative SE measured 7e-6 ... 9.5e-5 at 15 points with C from 3 to "
                      "1e4 and D from 20 to 1e5, e.g. 7.5e-5 at (gamma, C, D) = (0.467, 100, 300), 7.1e-5 at "
                      "(0.1, 1e3, 1e4)); where gamma D <= 10 and D <= 3 C or gamma D <= 3 and D <= 10 C "
                      "(exact_count_mean) the mean of E[max_c K_c | G]/D instead, exact per vector "
                      "(multiclass_numerics/counts.py, relative 2e-12), over the same nets (relative SE 3.1e-6 ... "
                      "8.3e-5 at 26 points, e.g. 8.3e-5 at (0.01, 100, 100), 3.2e-5 at (0.1, 100, 100), 7.2e-5 at "
                      "(0.01, 1e3, 1e3), where drawn counts gave 4.6e-4, 2.5e-4, 7.2e-4)", max_fraction_relative_bound)
_ENT_ACC = _per_value("C E[psi(G_c)] over the law of one G_c, psi = -g log g (D = inf) or psi_D(g) = E h(K/D), K ~ "
                      "binomial(D, g) (finite D: the observed entropy; no vector is sampled, multiclass_numerics/"
                      "observed.py, relative 1e-14): C >= 4 a functional of the randomised QMC law, "
                      "entropy_relative_bound at 99.99 % (T x SE + the functional's deterministic bound; the SE "
                      "with that bound, entropy_se, measured relative 5e-9 ... 2e-6 at C <= 100, 2e-5 ... 5e-5 at "
                      "C = 1e3, 1e4); C = 3 relative <= 1e-10 (2-d quadrature over the law of G_1, "
                      "multiclass_numerics/three.py); C = 2 relative <= 1e-12 (1-d rule over the igb law); gamma in "
                      "{0, inf} exact", entropy_relative_bound)


def _route(np_fn, mp_fn, method, error, defining=None):
    return lambda: NumericRoute(np_fn, mp_fn, method, error, defining)


def _mp_binary_cdf(g, gamma, C):
    if int(C) != 2:
        raise NumericalError("multiclass.cdf: no mpmath reference for C >= 3 (randomised QMC route; "
                             "law_bound gives its error bound)")
    return mp_ncdf(mp_ncdf_inv(g) / mpmath.sqrt(gamma))


def _mp_binary_pdf(g, gamma, C):
    if int(C) != 2:
        raise NumericalError("multiclass.pdf: no mpmath reference for C >= 3 (randomised QMC route)")
    x = mp_ncdf_inv(g)
    return mpmath.exp((1 - 1 / gamma) * x * x / 2) / mpmath.sqrt(gamma)


def _cdf_limit(g, gamma, C):
    if g == 0 or g == 1:
        return g
    if gamma == 0:
        return 0 if g < mpmath.mpf(1) / C else 1
    if gamma == mpmath.inf:
        return 1 - mpmath.mpf(1) / C
    return None


register(ClosedForm(
    "multiclass.mean", "E[G_c] = 1/C: by exchangeability of the classes and sum_c G_c = 1.", (C_PARAM,), LAW,
    expr=1 / C_s))
register(ClosedForm(
    "multiclass.var", "Var[G_c] of one class fraction: E[Phi_2(T1, T2; gamma/(1+gamma))^(C-1)] - 1/C^2.",
    (GAMMA, C_PARAM), Provenance(IGB, "App. H (exact second moment; the paper gives none)", MODEL),
    accuracy=Accuracy(VAR_REL, "2-d Gauss-Legendre quadrature (no closed form for C >= 3); " + VAR_ERROR),
    builder=_route(var_numpy, var_mp, "2-d quadrature of E[Phi_2(T1,T2;rho)^(C-1)] - 1/C^2 in the Gumbel variables "
                   "of (T1, T2), the excess over 1/C^2 formed pointwise",
                   VAR_ERROR, _E(sp.Function("Phi_2")(_T1S, _T2S, gamma_s / (1 + gamma_s)) ** (C_s - 1)) - 1 / C_s**2),
    limit=_var_limit,
    display=r"E\left[\Phi_2\left(T_1, T_2; \tfrac{\gamma}{1+\gamma}\right)^{C-1}\right] - \frac{1}{C^2}"))
register(ClosedForm(
    "multiclass.cdf", "P(G_c <= g): the law of the fraction of the data put in one class c of C.",
    (G_PARAM, GAMMA, C_PARAM), LAW, conditions=(G_AT_MOST_1,),
    accuracy=_CDF_ACC,
    builder=_route(cdf_numpy, _mp_binary_cdf, "randomised QMC over the other means (exact igb.cdf at C = 2)",
                   MC_ERROR, sp.Function("P")(sp.Le(_G_DEF, g_s))), limit=_cdf_limit,
    display=r"P\left(\int \phi(z) \prod_{c' \neq c} \Phi(z + u_c - u_{c'})\,dz \le g\right),\ "
            r"u \sim N(0, \gamma I_C)"))
register(ClosedForm(
    "multiclass.pdf", "Density of one class fraction G_c (0 < gamma < inf; C = 2 is igb.pdf).",
    (G_OPEN, Param("gamma", "positive", "IGB strength"), C_PARAM), LAW, conditions=(G_BELOW_1,),
    accuracy=_PDF_ACC,
    builder=_route(pdf_numpy, _mp_binary_pdf, "randomised QMC (density of the Rao-Blackwellised cdf); "
                   "exact igb.pdf at C = 2", MC_ERROR.replace("law_bound", "T x SE of law_replicates' densities"),
                   sp.Derivative(sp.Function("P")(sp.Le(_G_DEF, g_s)), g_s)),
    display=r"\frac{d}{dg} P(G_c \le g)"))
register(ClosedForm(
    "multiclass.p_empty", "P(a class receives no point of a dataset of D points) = E[(1 - G_c)^D] (the CIFAR-100 "
    "peak at 0, App. I.1.3).", (GAMMA, C_PARAM, D_PARAM),
    Provenance(IGB, "App. I.1.3 (peak at 0 for CIFAR-100)", MODEL + "; data points assigned independently given W"),
    accuracy=_EMPTY_ACC,
    builder=_route(p_empty_numpy, p_empty_mp, "int_0^1 D (1 - g)^(D-1) F(g) dg against the randomised QMC cdf F "
                   "(law_functional); exact igb law at C = 2", MC_ERROR.replace("law_relative_bound",
                                                                               "p_empty_relative_bound"),
                   _E((1 - _Gc) ** D_s)),
    limit=_p_empty_limit,
    display=r"E\left[(1 - G_c)^D\right] = \int_0^1 D (1 - g)^{D-1} F_{G_c}(g)\, dg"))
register(ClosedForm(
    "multiclass.n_empty", "Expected number of classes with no point of a dataset of D points: C E[(1 - G_c)^D].",
    (GAMMA, C_PARAM, D_PARAM), Provenance(IGB, "App. I.1.3", MODEL),
    accuracy=_EMPTY_ACC,
    builder=_route(lambda gamma, C, D: C * p_empty_numpy(gamma, C, D),
                   lambda gamma, C, D: C * p_empty_mp(gamma, C, D), "C times multiclass.p_empty", MC_ERROR + " (x C)",
                   C_s * _E((1 - _Gc) ** D_s)),
    limit=lambda gamma, C, D: None if (lim := _p_empty_limit(gamma, C, D)) is None else C * lim,
    display=r"C\,E\left[(1 - G_c)^D\right]"))
register(ClosedForm(
    "multiclass.max_fraction", "E[max_c G_c]: mean fraction of the dominant class (the sorted frequencies of App. H), "
    "as measured on D data points (D = inf: the population value).", (GAMMA, C_PARAM, D_INF),
    Provenance(IGB, "App. H (sorted frequencies G_(1))", MODEL),
    accuracy=_MAX_ACC,
    builder=_route(max_fraction_numpy, binary_max_mp, "D = inf: C E[Phi_2(X, Y; r)^(C-1)] (2-d quadrature); finite "
                   "D: + the sampled count-noise correction over exact fraction vectors (C = 2: exact)",
                   "D = inf relative <= 1e-12; finite D, C >= 3: standard error stated by max_fraction_se (relative, "
                   "over the scrambles of the randomised QMC means)",
                   _E(sp.Function("max_c")(_Gc))),
    limit=lambda gamma, C, D: (1 / mpmath.mpf(C) if gamma == 0 and D == mpmath.inf else
                               (1 if gamma == mpmath.inf else None)),
    display=r"E\left[\max_c G_c\right]"))
register(ClosedForm(
    "multiclass.max_fraction_cdf", "P(max_c G_c <= g): the law of the dominant class fraction (at dataset size D).",
    (G_PARAM, GAMMA, C_PARAM, D_INF), Provenance(IGB, "App. H (sorted frequencies G_(1))", MODEL),
    conditions=(G_AT_MOST_1,),
    accuracy=_VEC_ACC,
    builder=_route(max_fraction_cdf_numpy, _binary_max_cdf_mp, "D = inf: C E[(Phi(u*/s) - Phi(u_top/s))_+] over the "
                   "law tables (C = 4: P((C - 1)/2, rho*^2 q/2) over the ordered gaps' simplex, rho* the root of "
                   "G_top = g along each ray; C = 3: 1-d quadrature; C = 2: erf(erfinv(2g - 1)/sqrt(gamma))); "
                   "finite D: P(max_c K_c <= k) over randomised QMC fraction vectors, the leading pair's split exact "
                   "(C = 2: exact)",
                   "D = inf relative bound max_cdf_relative_bound; finite D, C >= 3: standard error stated by "
                   "max_fraction_cdf_se (relative, over the scrambles of the randomised QMC means)",
                   sp.Function("P")(sp.Le(sp.Function("max_c")(_Gc), g_s))),
    display=r"P\left(\max_c G_c \le g\right)"))
register(ClosedForm(
    "multiclass.entropy", "E[-sum_c G_c log G_c] (nats): how prejudiced a C-class net is (log C: none; 0: total).",
    (GAMMA, C_PARAM, D_INF), Provenance(IGB, "App. H", MODEL),
    accuracy=_ENT_ACC,
    builder=_route(entropy_numpy, binary_entropy_mp, "C E[psi(G_c)] over the law of one G_c, psi = -g log g "
                   "(D = inf) or the binomial kernel psi_D (finite D); C = 2 a 1-d rule over the igb law, C = 3 "
                   "quadrature, C >= 4 law_functional of the randomised QMC law", "deterministic at C <= 3 (relative "
                   "1e-12 at C = 2, 1e-10 at C = 3); C >= 4 standard error stated by entropy_se (relative)",
                   _E(-sp.Sum(_Gc * sp.log(_Gc), (sp.Symbol("c"), 1, C_s)))),
    limit=lambda gamma, C, D: (mpmath.log(C) if gamma == 0 and D == mpmath.inf else
                               (0 if gamma == mpmath.inf else None)),
    display=r"E\left[-\sum_c G_c \log G_c\right]"))
PAPER_NOTE = ("ERRATUM: the construction compares class c with the largest of the other C-1 means only, i.e. "
              "G_c ~ Phi((u_c - max_{c'} u_c')/sqrt 2); it ignores the other C-2 classes, so it violates sum_c G_c = 1 "
              "(E G_c != 1/C; at gamma -> 0 every G_c -> 1/2 instead of 1/C); its error against the exact law is "
              "tabulated in derivations/multiclass.py and the README")
register(ClosedForm(
    "multiclass.paper_approx", "The paper's App. H construction as printed: P(Phi((u_c - M_{C-1})/sqrt 2) <= g), "
    "M_{C-1} the largest of the other C-1 means (Eqs. 189-192 + the binary law).", (G_PARAM, GAMMA, C_PARAM),
    Provenance(IGB, "App. H, Eqs. 189-192 (with App. C.1 Eq. 82)", PAPER_NOTE), conditions=(G_AT_MOST_1,),
    accuracy=Accuracy(PAPER_ERROR, "the 40-node Gumbel-Gauss rule for gamma >= 0.1 (absolute error <= 1e-9, on "
                      "values >= 1e-2 only), the log-space trapezoid around the peak below gamma = 0.1 and wherever "
                      "the value is < 1e-2 (relative, measured <= 2e-13); measured against mpmath at 150 random "
                      "(g, gamma, C), gamma in [1e-3, 1e3], C in [2, 1e4]: <= 1.5e-10 relative"),
    builder=_route(paper_approx_numpy, paper_approx_mp, "40-node Gumbel-Gauss rule for the maximum (maxpool); a "
                   "log-space trapezoid for values < 1e-2 and gamma < 0.1",
                   "relative <= 1e-7 (absolute <= 1e-9 on values >= 1e-2), tested against mpmath",
                   sp.Integral(Phi(sp.Symbol("m") + sp.sqrt(2) * PhiInv(g_s) / sp.sqrt(gamma_s))
                               * sp.Derivative(Phi(sp.Symbol("m")) ** (C_s - 1), sp.Symbol("m")),
                               (sp.Symbol("m"), -sp.oo, sp.oo))),
    limit=_paper_limit,
    display=r"\int \Phi\left(m + \tfrac{\sqrt{2}\,\Phi^{-1}(g)}{\sqrt{\gamma}}\right) d\,\Phi(m)^{C-1}"))


# ============================================================================ the summary `predict --classes` prints
SUMMARY_D = 10_000


def multiclass_summary(gamma: float, C: int, D: int = SUMMARY_D) -> dict:
    """What ``igbsym predict --classes C`` prints for an architecture of IGB strength gamma (one line per key).

    Keys: classes, gamma, mean_fraction (1/C), sd_fraction, p_empty and expected_empty_classes at dataset size D,
    p_empty_relative_bound (None where the C >= 4 randomised QMC route resolves no digit) and p_empty_upper (a true
    upper bound),
    max_fraction (E of the dominant class fraction, population), max_fraction_uniform (1/C, no IGB), entropy
    (E entropy, nats) and entropy_max (log C), paper_approx_mean (the paper's App. H construction: its E G_c)."""
    from ..registry import get
    if isinstance(C, bool) or not float(C).is_integer() or C < 2 or C > C_MAX:
        raise InputError(f"multiclass summary: C={C!r} is not allowed; allowed: an integer 2 <= C <= {C_MAX}")
    C = int(C)
    GAMMA.check_array("multiclass summary", gamma)
    D_PARAM.check_scalar("multiclass summary", D)
    gamma = float(gamma)
    pts = np.linspace(0.0005, 0.9995, 1000)
    paper = get("multiclass.paper_approx").numpy(g=pts, gamma=gamma, C=C)
    paper_mean = float(1 - np.mean(paper)) if 0 < gamma < math.inf else (0.5 if gamma == 0 else 1 / C)
    return {
        "classes": C, "gamma": gamma, "dataset_size": int(D),
        "mean_fraction": 1 / C,
        "sd_fraction": math.sqrt(float(get("multiclass.var").numpy(gamma=gamma, C=C))),
        "p_empty": (p_empty := float(get("multiclass.p_empty").numpy(gamma=gamma, C=C, D=D))),
        "p_empty_relative_bound": None if math.isinf(rb := p_empty_relative_bound(gamma, C, D)) else rb,
        "p_empty_upper": p_empty * (1 + rb) if math.isfinite(rb) else _p_empty_upper(gamma, C, D),
        "expected_empty_classes": float(get("multiclass.n_empty").numpy(gamma=gamma, C=C, D=D)),
        "max_fraction": float(get("multiclass.max_fraction").numpy(gamma=gamma, C=C)),
        "max_fraction_uniform": 1 / C,
        "entropy": float(get("multiclass.entropy").numpy(gamma=gamma, C=C)),
        "entropy_max": math.log(C),
        "paper_approx_mean": paper_mean,
    }
