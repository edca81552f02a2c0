"""Activation functions: everything the library knows about one activation, in one place.

Each ``Activation`` carries a SymPy expression in (x, a, sigma), NumPy and mpmath callables, its torch function,
and the properties the maps dispatch on: ``odd`` (φ(−x) = −φ(x): γ = 0, IGB paper App. G.2), ``slope`` (φ is
positively homogeneous, φ(x) = x⁺ − s·x⁻ with x⁻ = max(−x, 0): the closed-form arc-cosine maps apply; None: not
homogeneous; "a": the slope is the parameter ``a``) and ``strip`` (the half-width of the strip |Im x| < d in which
a smooth φ is analytic: it sizes the quadrature rules of ``igbsym.gauss``). ``a`` is the leaky slope (leaky_relu
only). ``sigma`` is the nominal sd of the pre-activation; it enters only ``srelu``, the IGB paper's shifted ReLU
(App. G.3, Eq. 188): ReLU minus its mean σ/√(2π) under N(0, σ²). Adding an activation is adding one entry here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import mpmath
import numpy as np
import sympy as sp
from scipy import special

from .functions import MPMATH_MODULES, NUMPY_MODULES, Phi, mp_ncdf

x_, a_, s_ = sp.symbols("x a sigma", real=True)


@dataclass(frozen=True)
class Activation:
    name: str
    expr: sp.Basic            # in x_, a_, s_
    numpy: Callable           # f(x, a, sigma)
    mp: Callable              # f(x, a, sigma) with mpf arguments
    odd: bool
    doc: str
    torch: Callable = None    # f(tensor, a, shift) with torch's own functions (imports torch only when called)
    slope: object = None      # φ = x⁺ − slope·x⁻ (positively homogeneous); "a": the leaky parameter; None: not
    strip: float = math.pi / 2   # analytic in |Im x| < strip (smooth activations; sizes the quadrature rules)

    @property
    def homogeneous(self) -> bool:
        return self.slope is not None

    def slope_at(self, a):
        """The homogeneous slope s (φ = x⁺ − s x⁻) for leaky parameter ``a``."""
        return a if self.slope == "a" else self.slope


def _relu(x, a, s):
    return np.maximum(x, 0.0)


def _torch_fn(name):
    def fn(h, a, shift):
        import torch.nn.functional as F
        return {"identity": lambda: h, "relu": lambda: F.relu(h), "leaky_relu": lambda: F.leaky_relu(h, a),
                "abs": lambda: h.abs(), "tanh": lambda: h.tanh(), "erf": lambda: h.erf(),
                "sigmoid": lambda: h.sigmoid(), "gelu": lambda: F.gelu(h), "silu": lambda: F.silu(h),
                "srelu": lambda: F.relu(h) - shift}[name]()
    return fn


_SQ2PI = np.sqrt(2 * np.pi)
_PI = math.pi
ACTIVATIONS = {act.name: act for act in [
    Activation("relu", sp.Max(x_, 0), _relu, lambda x, a, s: mpmath.mpf(max(x, 0)), False, "max(x, 0)",
               _torch_fn("relu"), 0),
    Activation("leaky_relu", sp.Piecewise((x_, x_ >= 0), (a_ * x_, True)),
               lambda x, a, s: np.where(x >= 0, x, a * x), lambda x, a, s: x if x >= 0 else a * x, False,
               "x for x >= 0, a x otherwise (torch's negative_slope = a)", _torch_fn("leaky_relu"), "a"),
    Activation("identity", x_, lambda x, a, s: x, lambda x, a, s: x, True, "x", _torch_fn("identity"), 1),
    Activation("abs", sp.Abs(x_), lambda x, a, s: np.abs(x), lambda x, a, s: abs(x), False,
               "|x| = x⁺ + x⁻ (positively homogeneous, slope −1; neural-tangents' stax.Abs)", _torch_fn("abs"), -1),
    Activation("tanh", sp.tanh(x_), lambda x, a, s: np.tanh(x), lambda x, a, s: mpmath.tanh(x), True, "tanh x",
               _torch_fn("tanh"), None, _PI / 2),
    Activation("erf", sp.erf(x_), lambda x, a, s: special.erf(x), lambda x, a, s: mpmath.erf(x), True, "erf x",
               _torch_fn("erf"), None, _PI),
    Activation("sigmoid", 1 / (1 + sp.exp(-x_)), lambda x, a, s: special.expit(x),
               lambda x, a, s: 1 / (1 + mpmath.exp(-x)), False, "1/(1+e^{-x})", _torch_fn("sigmoid"), None, _PI),
    Activation("gelu", x_ * Phi(x_), lambda x, a, s: x * special.ndtr(x), lambda x, a, s: x * mp_ncdf(x),
               False, "x Φ(x) (exact GELU, torch approximate='none')", _torch_fn("gelu"), None, _PI),
    Activation("silu", x_ / (1 + sp.exp(-x_)), lambda x, a, s: x * special.expit(x),
               lambda x, a, s: x / (1 + mpmath.exp(-x)), False, "x/(1+e^{-x})", _torch_fn("silu"), None, _PI),
    Activation("srelu", sp.Max(x_, 0) - s_ / sp.sqrt(2 * sp.pi), lambda x, a, s: np.maximum(x, 0.0) - s / _SQ2PI,
               lambda x, a, s: max(x, 0) - s / mpmath.sqrt(2 * mpmath.pi), False,
               "max(x, 0) − σ/√(2π): ReLU minus its mean under N(0, σ²) (IGB paper Eq. 188)", _torch_fn("srelu")),
]}
# strip: tanh has poles at ±iπ/2, sigmoid and SiLU at ±iπ; GELU and erf are entire, taken as π (their growth
# e^{d²/2} on the strip is covered by the rules' extra digits).


def names() -> tuple:
    return tuple(ACTIVATIONS)


def get(name: str) -> Activation:
    return ACTIVATIONS[name]


def homogeneous_names() -> tuple:
    return tuple(n for n, act in ACTIVATIONS.items() if act.homogeneous)


@lru_cache(maxsize=None)
def derivatives(name: str, module: str):
    """The derivatives of orders 1-4 of a smooth activation, lambdified for ``numpy`` or ``mpmath``."""
    ds = [sp.diff(get(name).expr, x_, k) for k in (1, 2, 3, 4)]
    return sp.lambdify(x_, ds, modules=NUMPY_MODULES if module == "numpy" else MPMATH_MODULES)
