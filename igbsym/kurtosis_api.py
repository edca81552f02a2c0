"""Kurtosis recursion for nets whose widths change from layer to layer (plain Python API over kurtosis.matrix).

Paper: kurtosis-vanishing-empirical-variance.txt, Prop. 4.3 (k^(l+1) = A^(l) k^(l)), Lemma 4.4 (the (alpha, beta,
gamma, delta) form of products of A), Prop. B.2 (P(y != 0) for ReLU nets). ``widths`` are the fan-ins
w_0, ..., w_(L-1): the widths of the input and of every hidden layer that feeds a weight matrix.

>>> kappa, c = trajectory([3, 3], a=0.0, kappa_w=3.0, kappa0=3.0, c0=0.0, sigma2=1.0)
>>> [round(float(v), 6) for v in kappa]
[3.0, 5.0, 10.666667]
"""
from __future__ import annotations

import mpmath
import numpy as np

from .errors import InputError
from .ops.dense import WEIGHT_LAWS as KAPPA_W  # noqa: F401  (the weight laws' kurtosis, for users of this API)
from .registry import get


def _widths(widths) -> list:
    out = list(widths)
    if not all(isinstance(v, (int, np.integer)) and v >= 1 for v in out):
        raise InputError(f"kurtosis_api: widths={widths!r} is not allowed; allowed: a list of integers >= 1")
    return [int(v) for v in out]


def matrices(widths, a, kappa_w, sigma2, dps: int | None = None) -> list:
    """A^(0), ..., A^(L-1) for the given fan-ins (float64 arrays, or mpmath matrices at ``dps`` digits)."""
    form = get("kurtosis.matrix")
    if dps is None:
        return [form.numpy(w=v, a=a, kappa_w=kappa_w, sigma2=sigma2) for v in _widths(widths)]
    return [form.mp(dps, w=v, a=a, kappa_w=kappa_w, sigma2=sigma2) for v in _widths(widths)]


def product(widths, a, kappa_w, sigma2, dps: int | None = None):
    """B = A^(L-1) ... A^(0) (identity for an empty list)."""
    mats = matrices(widths, a, kappa_w, sigma2, dps)
    out = np.eye(3) if dps is None else mpmath.eye(3)
    for m in mats:
        out = m @ out if dps is None else m * out
    return out


def trajectory(widths, a, kappa_w, kappa0, c0, sigma2):
    """(kappa_l, c_l) for l = 0..L: the recursion k^(l+1) = A^(l) k^(l) from k^(0) = [kappa0, c0, 1]."""
    get("kurtosis.after").numpy(L=0, w=2, a=a, kappa_w=kappa_w, kappa0=kappa0, c0=c0, sigma2=sigma2)  # validates
    k = np.array([kappa0, c0, 1.0], dtype=float)
    out = [k]
    for m in matrices(widths, a, kappa_w, sigma2):
        k = m @ k
        out.append(k)
    out = np.array(out)
    return out[:, 0], out[:, 1]


def lemma44(B, sigma2, rtol: float = 1e-12) -> tuple:
    """(alpha, beta, gamma, delta) of a product B in the form of Lemma 4.4; raises ValueError if B is not of it.

    B = [[alpha, beta/sigma2^2, beta], [gamma sigma2^2, delta, sigma2^2 (delta - 1)], [0, 0, 1]].
    """
    B = np.asarray(B, dtype=float)
    s4 = float(sigma2) ** 2
    alpha, beta, gamma, delta = B[0, 0], B[0, 2], B[1, 0] / s4, B[1, 1]
    expected = np.array([[alpha, beta / s4, beta], [gamma * s4, delta, s4 * (delta - 1)], [0, 0, 1]])
    if not np.allclose(B, expected, rtol=rtol, atol=rtol * np.abs(B).max()):
        raise ValueError(f"matrix is not of the Lemma 4.4 form: {B.tolist()}")
    return float(alpha), float(beta), float(gamma), float(delta)


def p_nonzero(widths) -> float:
    """P(y^(L) != 0) of a ReLU net with fan-ins w_0..w_(L-1) (Prop. B.2): prod (1 - 2^-w_l)."""
    return float(np.exp(sum(np.log1p(-2.0 ** -v) for v in _widths(widths))))
