"""The entropy of class fractions observed on D data points, as a functional of the law of one G_c (IGB paper App. H).

Given the weights the counts are K ~ multinomial(D, G), and the observed entropy H(K/D) = sum_c h(K_c/D),
h(x) = -x log x, is a sum of one-class terms; K_c ~ binomial(D, G_c) marginally, so E H(K/D) = C E psi_D(G_c) with

    psi_D(g) = E h(K/D), K ~ binomial(D, g)      (a Bernstein polynomial of h: concave, psi_D(0) = psi_D(1) = 0).

No vector is sampled: the family integrates psi_D against the law of one G_c as it does h at D = inf. Size-biasing,
E[K log K] = D g E log(1 + K') with K' ~ binomial(D - 1, g), and Frullani's integral log(b/a) = int_0^inf (e^-at -
e^-bt) dt/t with the binomial's generating function give, with q = 1 - g,

    psi_D(g) = g I(q),   I(q) = E log(D/(1 + K')) = int_0^inf e^-Dt expm1((D - 1) log1p(q expm1 t)) dt/t,
    psi_D'(g) = I(q) - g (D - 1) J(q),   J(q) = int_0^inf e^-Dt (1 + q expm1 t)^(D-2) expm1(t) dt/t,

both integrands positive, so I keeps its relative precision down to I ~ q/D (g -> 1) and up to D = 1e9 (the exponent
-Dt + (D - 1) log(...) is formed as -t + (D - 1) log1p(-g (1 - e^-t)) where g <= 1/2, without the D t cancellation).
Rule: 16-node Gauss-Legendre on panels of width 2 in log t over [1e-18/D, 50] (the integrands are exp(-a e^u) shapes in
u = log t; the cut ends are < 1e-18 of I and J). Relative error of psi_D <= KERNEL_ERROR (measured <= 2.6e-16 against
mpmath binomial sums, D = 2 ... 1e9, g = 1e-300 ... 1 - 1e-12; psi_D' within 4e-16 of max(|psi_D'|, I);
tests/test_multiclass_observed.py).
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ..gauss import composite_gauss_legendre

KERNEL_ERROR = 1e-14    # stated relative error of psi_D (and of psi_D' against max(|psi_D'|, psi_D/g))
T_TOP = 50.0            # upper end of the t rule
T_BOTTOM = 1e-18        # lower end of the t rule, times 1/D
PANEL = 2.0             # panel width in log t ...
POINTS = 16             # ... and its Gauss-Legendre nodes
_CHUNK = 2048           # g values per block (block x nodes <= ~2M doubles)


@lru_cache(maxsize=8)
def _t_rule(D: int) -> tuple:
    lo, hi = math.log(T_BOTTOM / D), math.log(T_TOP)
    u, w = composite_gauss_legendre(np.linspace(lo, hi, math.ceil((hi - lo) / PANEL) + 1), POINTS)
    return np.exp(u), w                              # dt/t = du


def _frullani(g: np.ndarray, q: np.ndarray, D: int) -> tuple:
    """(I(q), J(q)) of the module docstring for 1-d arrays g, q = 1 - g (both passed: each accurate on its side)."""
    t, w = _t_rule(D)
    e, s = np.expm1(t), -np.expm1(-t)
    g, q = g[:, None], q[:, None]
    A = np.log1p(q * e)                              # log(1 + q expm1 t) = t + L
    L = np.log1p(-np.minimum(g, 0.5) * s)            # log(1 - g (1 - e^-t)), accurate where g <= 1/2
    low = g <= 0.5
    X = (D - 1) * A
    big = X > 1
    tail = np.exp(np.where(low, -t + (D - 1) * L, X - D * t)) * -np.expm1(-np.maximum(X, 1.0))
    f = np.where(big, tail, np.exp(-D * t) * np.expm1(np.minimum(X, 1.0)))
    j = np.exp(np.where(low, -2 * t + (D - 2) * L, (D - 2) * A - D * t)) * e
    return f @ w, j @ w


def _parts(g, q, D: int) -> tuple:
    """(g, I, J) as flat arrays, in blocks of _CHUNK values (D >= 2)."""
    g, q = (x.ravel() for x in np.broadcast_arrays(np.asarray(g, float), np.asarray(q, float)))
    I, J = np.empty(g.size), np.empty(g.size)
    for s0 in range(0, g.size, _CHUNK):
        I[s0:s0 + _CHUNK], J[s0:s0 + _CHUNK] = _frullani(g[s0:s0 + _CHUNK], q[s0:s0 + _CHUNK], int(D))
    return g, I, J


def entropy_kernel(g, q, D: int) -> tuple:
    """(psi_D(g), psi_D'(g)) for arrays g in [0, 1] with q = 1 - g (module docstring); D >= 1 an integer
    (D = 1: both 0, a single point has entropy 0)."""
    shape = np.broadcast(np.asarray(g), np.asarray(q)).shape
    if D < 2:
        return np.zeros(shape), np.zeros(shape)
    g, I, J = _parts(g, q, D)
    return (g * I).reshape(shape), (I - g * (D - 1) * J).reshape(shape)


def log_entropy_kernel(lg, lq, D: int) -> np.ndarray:
    """log psi_D(G) from (log G, log(1 - G)) (the C = 3 log-space quadrature's arguments): log G + log I(1 - G),
    so a G that underflows keeps its value; D >= 2."""
    lg, lq = np.broadcast_arrays(np.asarray(lg, float), np.asarray(lq, float))
    with np.errstate(divide="ignore"):          # G = 1: I = 0, log psi_D = -inf (psi_D(1) = 0)
        return lg + np.log(_parts(np.exp(lg), np.exp(lq), D)[1]).reshape(lg.shape)
