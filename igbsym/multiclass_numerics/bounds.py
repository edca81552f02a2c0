"""The stated relative error of each value of every multiclass form (its Accuracy.per_value; IGB paper App. H):
the closed forms' CLOSED_ERROR, the deterministic routes' own constants, and b/(v - b) at 99.99 % over the
randomised-QMC scrambles elsewhere, inf where no digit is claimed."""
from __future__ import annotations

import math

import numpy as np

from .binary import BINARY_COUNT_ERROR
from .common import T_FACTOR, broadcast_flat, qmc_estimate, relative
from .dominant import max_cdf_relative_bound, max_fraction_se
from .functionals import entropy_law, p_empty_relative_bound
from .law import law_relative_bound, law_table
from .moments import VAR_REL
from .three import THREE_ERROR
from .vectors import sampled_at_levels

CLOSED_ERROR = 1e-12   # relative error of the C = 2 closed forms (the igb law: ndtr, ndtri, exp, erf in double)


def _grouped(fn, g, gamma, C, *more) -> np.ndarray:
    """fn(g values, gamma, C, *more) once per distinct (gamma, C, *more) over its g (one pass over a law table),
    shaped as the parameters broadcast."""
    shape, (gg, *keys) = broadcast_flat(g, gamma, C, *more)
    out = np.empty(gg.shape)
    for key in set(zip(*keys)):
        at = np.logical_and.reduce([k == v for k, v in zip(keys, key)])
        out[at] = fn(gg[at], float(key[0]), int(key[1]), *key[2:])
    return out.reshape(shape)


def _each(fn, *params) -> np.ndarray:
    """fn(*floats) at every point of the broadcast parameters, shaped as they broadcast (the tables are memoised)."""
    shape, flat = broadcast_flat(*params)
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
    THREE_ERROR at C = 3, at C >= 4 b/(f_hat - b) with b the density's bound (LawTable.density_bounded: 99.99 % over
    the scrambles plus its deterministic parts; inf where no digit is claimed)."""
    def bound(x, gamma, C):
        if C <= 3:
            return np.full(x.shape, CLOSED_ERROR if C == 2 else THREE_ERROR)
        f, b, _ = law_table(gamma, C).density_bounded(x)
        return relative(np.maximum(f.mean(0), 0.0), b)
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
        return float(relative(value, T_FACTOR * se))
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
                out[live] = np.where(se == 0, CLOSED_ERROR, relative(value, T_FACTOR * se))
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
        return float(relative(*qmc_estimate(*entropy_law(gamma, C, D))))
    return _each(one, gamma, C, D)
