"""Activation functions: everything the library knows about one activation, in one place.

Each ``Activation`` carries a SymPy expression in (x, a, sigma), NumPy and mpmath callables, its torch function,
and the properties the maps dispatch on: ``odd`` (φ(−x) = −φ(x): γ = 0, IGB paper App. G.2), ``slope`` (φ is
positively homogeneous, φ(x) = x⁺ − s·x⁻ with x⁻ = max(−x, 0): the closed-form arc-cosine maps apply; None: not
homogeneous; "a": the slope is the parameter ``a``) and ``strip`` (the half-width of the strip |Im x| < d in which
a smooth φ is analytic: it sizes the quadrature rules of ``igbsym.gauss``). ``a`` is the leaky slope (leaky_relu
only). ``sigma`` is the nominal sd of the pre-activation; it enters only ``srelu``, the IGB paper's shifted ReLU
(App. G.3, Eq. 188): ReLU minus its mean σ/√(2π) under N(0, σ²). Adding an activation is adding one entry here:
its moments under N(0, σ²) (``igbsym.gauss.activation``), layer maps, kernels, forms, predict, probe and checks
follow from the expression and callables. Optional exact overrides on an entry: ``mean_exact`` / ``var_exact``
(E φ(σZ), Var φ(σZ) in SymPy, with their NumPy kernels ``mean_np`` / ``var_np`` over the double range),
``derivative_at_zero`` (φ^(n)(0) exactly, for Mehler's series, ``igbsym.mehler``), ``latex`` and ``torch_module``
(the torch.nn class name whose module is this activation, for the torch translator).
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
from .numerics import power_product

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
    latex: str = ""              # the LaTeX name (default \mathrm{name})
    torch_module: str = ""       # the torch.nn class name of this activation ("" if none)
    mean_exact: sp.Basic = None  # E φ(σZ) in (s_, a_) exactly, with its NumPy kernel mean_np(σ, a) (both or neither)
    mean_np: Callable = None
    var_exact: sp.Basic = None   # Var φ(σZ) in (s_, a_) exactly, with var_np(σ, a)
    var_np: Callable = None
    derivative_at_zero: Callable = None   # n -> φ^(n)(0) at the working mpmath precision (Mehler's series)

    @property
    def homogeneous(self) -> bool:
        return self.slope is not None

    @property
    def kinked(self) -> bool:
        """φ has a kink (not analytic at some real x): its moments come from ``slope`` or exact overrides."""
        return self.expr.has(sp.Max, sp.Min, sp.Abs, sp.Piecewise, sp.Heaviside, sp.sign)

    @property
    def smooth(self) -> bool:
        return not self.kinked

    @property
    def tex(self) -> str:
        return self.latex or r"\mathrm{%s}" % self.name

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


def _gelu_mean_np(s, a):
    """σ²/√(2π(1 + σ²)) without σ² overflow."""
    return np.where(s < 1, s * (s / np.sqrt(1 + s * s)), s / np.sqrt(1 + 1 / (s * s))) / _SQ2PI


def _erf_var_np(s, a):
    """(2/π) asin(2σ²/(1 + 2σ²)) = (2/π) atan2(2σ, sqrt(1/σ² + 4)): no σ² overflow (NaN from σ = 1.3e154) and no
    asin(1 − ε) cancellation at large σ."""
    return 2 / np.pi * np.arctan2(2 * s, np.hypot(1 / s, 2.0))


def _gelu_derivative(n: int):
    """GELU^(n)(0): x/2 + (1/√(2π)) Σ_m (−1)^m x^(2m+2)/(2^m m!(2m + 1)) (Φ's series)."""
    if n == 1:
        return mpmath.mpf(1) / 2
    if n == 0 or n % 2:
        return mpmath.mpf(0)
    m = n // 2 - 1
    return (-1) ** m * mpmath.factorial(n) / (mpmath.sqrt(2 * mpmath.pi) * 2**m * mpmath.factorial(m) * (2 * m + 1))


def _silu_derivative(n: int):
    """SiLU^(n)(0): x/2 + (x/2)·tanh(x/2), so φ^(2n)(0) = (2^(2n) − 1) B_2n (tanh's Bernoulli series)."""
    if n == 1:
        return mpmath.mpf(1) / 2
    if n == 0 or n % 2:
        return mpmath.mpf(0)
    return (mpmath.mpf(2) ** n - 1) * mpmath.bernoulli(n)


_SRELU_VAR = s_**2 * (sp.pi - 1) / (2 * sp.pi)
ACTIVATIONS = {act.name: act for act in [
    Activation("relu", sp.Max(x_, 0), _relu, lambda x, a, s: mpmath.mpf(max(x, 0)), False, "max(x, 0)",
               _torch_fn("relu"), 0, latex=r"\mathrm{ReLU}", torch_module="ReLU"),
    Activation("leaky_relu", sp.Piecewise((x_, x_ >= 0), (a_ * x_, True)),
               lambda x, a, s: np.where(x >= 0, x, a * x), lambda x, a, s: x if x >= 0 else a * x, False,
               "x for x >= 0, a x otherwise (torch's negative_slope = a)", _torch_fn("leaky_relu"), "a",
               latex=r"\phi_a", torch_module="LeakyReLU"),
    Activation("identity", x_, lambda x, a, s: x, lambda x, a, s: x, True, "x", _torch_fn("identity"), 1,
               latex=r"\mathrm{id}", torch_module="Identity"),
    Activation("abs", sp.Abs(x_), lambda x, a, s: np.abs(x), lambda x, a, s: abs(x), False,
               "|x| = x⁺ + x⁻ (positively homogeneous, slope −1; neural-tangents' stax.Abs)", _torch_fn("abs"), -1),
    Activation("tanh", sp.tanh(x_), lambda x, a, s: np.tanh(x), lambda x, a, s: mpmath.tanh(x), True, "tanh x",
               _torch_fn("tanh"), None, _PI / 2, latex=r"\tanh", torch_module="Tanh"),
    Activation("erf", sp.erf(x_), lambda x, a, s: special.erf(x), lambda x, a, s: mpmath.erf(x), True, "erf x",
               _torch_fn("erf"), None, _PI, latex=r"\operatorname{erf}",
               var_exact=2 * sp.asin(2 * s_**2 / (1 + 2 * s_**2)) / sp.pi, var_np=_erf_var_np),
    Activation("sigmoid", 1 / (1 + sp.exp(-x_)), lambda x, a, s: special.expit(x),
               lambda x, a, s: 1 / (1 + mpmath.exp(-x)), False, "1/(1+e^{-x})", _torch_fn("sigmoid"), None, _PI,
               latex=r"\mathrm{sigm}", torch_module="Sigmoid"),
    Activation("gelu", x_ * Phi(x_), lambda x, a, s: x * special.ndtr(x), lambda x, a, s: x * mp_ncdf(x),
               False, "x Φ(x) (exact GELU, torch approximate='none')", _torch_fn("gelu"), None, _PI,
               latex=r"\mathrm{GELU}", torch_module="GELU",
               mean_exact=s_ / sp.sqrt(2 * sp.pi) / sp.sqrt(1 + s_**-2), mean_np=_gelu_mean_np,  # σ²/√(2π(1+σ²))
               derivative_at_zero=_gelu_derivative),
    Activation("silu", x_ / (1 + sp.exp(-x_)), lambda x, a, s: x * special.expit(x),
               lambda x, a, s: x / (1 + mpmath.exp(-x)), False, "x/(1+e^{-x})", _torch_fn("silu"), None, _PI,
               latex=r"\mathrm{SiLU}", torch_module="SiLU", derivative_at_zero=_silu_derivative),
    Activation("srelu", sp.Max(x_, 0) - s_ / sp.sqrt(2 * sp.pi), lambda x, a, s: np.maximum(x, 0.0) - s / _SQ2PI,
               lambda x, a, s: max(x, 0) - s / mpmath.sqrt(2 * mpmath.pi), False,
               "max(x, 0) − σ/√(2π): ReLU minus its mean under N(0, σ²) (IGB paper Eq. 188)", _torch_fn("srelu"),
               latex=r"\mathrm{SReLU}", mean_exact=sp.S.Zero, mean_np=lambda s, a: 0 * s,
               var_exact=_SRELU_VAR, var_np=lambda s, a: power_product([(s, 2)], (np.pi - 1) / (2 * np.pi))),
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
