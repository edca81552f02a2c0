"""Var G_c and E[max_c G_c] at D = inf by the deterministic 2-d quadrature of power.py (IGB paper App. H).

E[G_c^2] = E[Phi_2(T_1, T_2; rho)^(C-1)], (T_1, T_2) standard bivariate normal with rho = gamma/(1+gamma) (the inner
expectation over the other C - 1 means is a bivariate-normal CDF), and E[max_c G_c] = C E[Phi_2(X, Y; r)^(C-1)],
r = sqrt(rho) (derivations/multiclass.py); in the Gumbel variables of T_1, T_2 with the excess over 1/C^2 formed
pointwise, so Var keeps its relative precision as gamma -> 0: relative error <= 1e-12 (VAR_ERROR). mpmath: exact at
C = 2; power.mp_moment is the independent reference at C >= 3 (minutes per point, test data)."""
from __future__ import annotations

import math

import mpmath
import numpy as np

from ..errors import NumericalError
from .common import broadcast_flat
from .power import moment_excess_many


def mp_bvn_cdf(h, k, rho):
    """Phi_2 in mpmath by Drezner's integral:
    Phi(h)Phi(k) + (1/2pi) int_0^asin(rho) exp(-(h^2+k^2-2hk sin t)/(2cos^2 t)) dt."""
    f = lambda t: mpmath.exp(-(h * h + k * k - 2 * h * k * mpmath.sin(t)) / (2 * mpmath.cos(t) ** 2))  # noqa: E731
    return mpmath.ncdf(h) * mpmath.ncdf(k) + mpmath.quad(f, [0, mpmath.asin(rho)]) / (2 * mpmath.pi)


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


def by_gamma(fn, gamma, C):
    """Evaluate fn(float gamma, int array Cs) -> values once per distinct gamma, over its distinct C (array call =
    scalar call): the C of one gamma share one Phi_2 table (moment_excess_many)."""
    shape, (gm, cc) = broadcast_flat(gamma, C)
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
    return by_gamma(_var_many, gamma, C)


def var_mp(gamma, C):
    """mpmath value where an exact one exists: C = 2, asin(gamma/(1+gamma))/(2 pi) (derivations/multiclass.py).
    For C >= 3 the independent reference is multiclass_numerics.power.mp_moment (minutes per point; test data)."""
    if int(C) != 2:
        raise NumericalError("multiclass.var: no fast full-precision mpmath route for C >= 3; the independent "
                             "reference is igbsym.multiclass_numerics.power.mp_moment (minutes per point)")
    return mpmath.asin(gamma / (1 + gamma)) / (2 * mpmath.pi)


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
