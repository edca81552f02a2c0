"""Activation functions, each as a SymPy expression in (x, a, sigma) plus NumPy and mpmath callables.

``a`` is the leaky slope (used by ``leaky_relu`` only). ``sigma`` is the nominal standard deviation of the
pre-activation; it enters only ``srelu``, the IGB paper's shifted ReLU (App. G.3, Eq. 188): ReLU minus its
mean σ/√(2π) under N(0, σ²). ``odd`` marks antisymmetric functions (φ(−x) = −φ(x)), which give γ = 0 (App. G.2).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import mpmath
import numpy as np
import sympy as sp
from scipy import special

from .functions import Phi, mp_ncdf

x_, a_, s_ = sp.symbols("x a sigma", real=True)


@dataclass(frozen=True)
class Activation:
    name: str
    expr: sp.Basic            # in x_, a_, s_
    numpy: Callable           # f(x, a, sigma)
    mp: Callable              # f(x, a, sigma) with mpf arguments
    odd: bool
    doc: str


def _relu(x, a, s):
    return np.maximum(x, 0.0)


_SQ2PI = np.sqrt(2 * np.pi)
ACTIVATIONS = {act.name: act for act in [
    Activation("relu", sp.Max(x_, 0), _relu, lambda x, a, s: mpmath.mpf(max(x, 0)), False, "max(x, 0)"),
    Activation("leaky_relu", sp.Piecewise((x_, x_ >= 0), (a_ * x_, True)),
               lambda x, a, s: np.where(x >= 0, x, a * x), lambda x, a, s: x if x >= 0 else a * x, False,
               "x for x >= 0, a x otherwise (torch's negative_slope = a)"),
    Activation("identity", x_, lambda x, a, s: x, lambda x, a, s: x, True, "x"),
    Activation("tanh", sp.tanh(x_), lambda x, a, s: np.tanh(x), lambda x, a, s: mpmath.tanh(x), True, "tanh x"),
    Activation("erf", sp.erf(x_), lambda x, a, s: special.erf(x), lambda x, a, s: mpmath.erf(x), True, "erf x"),
    Activation("sigmoid", 1 / (1 + sp.exp(-x_)), lambda x, a, s: special.expit(x),
               lambda x, a, s: 1 / (1 + mpmath.exp(-x)), False, "1/(1+e^{-x})"),
    Activation("gelu", x_ * Phi(x_), lambda x, a, s: x * special.ndtr(x), lambda x, a, s: x * mp_ncdf(x),
               False, "x Φ(x) (exact GELU, torch approximate='none')"),
    Activation("silu", x_ / (1 + sp.exp(-x_)), lambda x, a, s: x * special.expit(x),
               lambda x, a, s: x / (1 + mpmath.exp(-x)), False, "x/(1+e^{-x})"),
    Activation("srelu", sp.Max(x_, 0) - s_ / sp.sqrt(2 * sp.pi), lambda x, a, s: np.maximum(x, 0.0) - s / _SQ2PI,
               lambda x, a, s: max(x, 0) - s / mpmath.sqrt(2 * mpmath.pi), False,
               "max(x, 0) − σ/√(2π): ReLU minus its mean under N(0, σ²) (IGB paper Eq. 188)"),
]}


def names() -> tuple:
    return tuple(ACTIVATIONS)


def get(name: str) -> Activation:
    return ACTIVATIONS[name]
