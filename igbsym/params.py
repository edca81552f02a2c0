"""Parameters shared by the families that evaluate an architecture (one declaration each, one vocabulary).

The activation, the leaky slope ``a`` (used by leaky_relu only: a value given with another activation is refused),
the Kaiming gain ``sigma_w`` (default ``igbsym.ops.SIGMA_W`` = √2, the papers' setting), the norm and its placement.
"""
import sympy as sp

from .activations import names as activation_names
from .form import Condition, Param
from .ops import SIGMA_W
from .spec import NORMS, PLACEMENTS

ACTIVATION = Param("activation", "choice", "activation function", choices=activation_names())
LEAKY_A = Param("a", "real", "leaky slope, used by leaky_relu only", default=0.01,
                used_when=lambda case: case.get("activation") == "leaky_relu",
                used_text="with activation=leaky_relu only")
SIGMA_W_PARAM = Param("sigma_w", "positive", "Kaiming gain: weights N(0, sigma_w^2/fan_in); default sqrt(2), the "
                      "papers' Kaiming setting (igbsym.ops.SIGMA_W)", default=SIGMA_W)
NORM = Param("norm", "choice", "normalisation layer", choices=NORMS, default="none")


def bias_used(case) -> bool:
    """σ_b enters depth.gamma and resnet.gamma without a norm, in the width limit, for every activation but srelu
    (a norm's centring, and srelu's shift fixed by layer 1's bias-free variance, App. G.3, are defined without
    biases; the finite-width forms have none)."""
    return (case.get("norm", "none") == "none" and case.get("activation") != "srelu"
            and case.get("N", float("inf")) == float("inf"))


def width_param(form: str, supported, text: str) -> tuple:
    """(N, its condition) of a form whose finite-N value is the width family's ``form`` (issue 28): N = inf (the
    default) is the width limit; a finite N is used where ``supported(case)`` and refused elsewhere in one line
    that says what it needs (``text``)."""
    param = Param("N", "integer", f"width of every hidden layer and dimension of the data; inf (default): the width "
                  f"limit; finite: {form} = gamma_L(inf) + a_L/N", default=float("inf"), minimum=1, allow_inf=True,
                  structural=True, used_when=supported, used_text=f"with {text}")
    return param, Condition(sp.Eq(param.symbol(), sp.oo, evaluate=False), f"N = inf (a finite N needs {text})",
                            applies=lambda case: case.get("N", float("inf")) != float("inf") and not supported(case))
PLACEMENT = Param("placement", "choice", "norm before (pre) or after (post) the activation", choices=PLACEMENTS,
                  default="pre", used_when=lambda case: case.get("norm", "none") != "none",
                  used_text="with a norm only")

# Residual nets (resnet.gamma, moments.sensitivity): the NumPy route's double range, and the depth at which a
# smooth φ that sees a trunk correlation (a nested quadrature per block, mp ~0.1-0.3 s at 50 digits; a growing trunk
# has no fixed point for the engine to stop at) keeps a domain point's mp route at 30 and 50 digits within 30 s.
L_NESTED = 100
SCALE_MAX = 10**30  # alpha, sigma_w <= 1e30 and sigma_w >= 1e-30: q_F = alpha^2 sigma_w^4 q/2 stays a double
alpha_, a_, sw_ = (sp.Symbol("alpha", nonnegative=True), sp.Symbol("a", real=True),
                   sp.Symbol("sigma_w", positive=True))
RANGE = (Condition(sp.Le(alpha_, SCALE_MAX), "alpha <= 1e30 (the double range of the NumPy route)"),
         Condition(sp.And(sp.Le(sw_, SCALE_MAX), sp.Ge(sw_, sp.Rational(1, SCALE_MAX))),
                   "1e-30 <= sigma_w <= 1e30 (the double range of the NumPy route)"),
         Condition(sp.Le(sp.Abs(a_), SCALE_MAX), "|a| <= 1e30 (the double range of the NumPy route: (1 + a^2) q "
                                                 "overflowed to NaN at a = -1.8e308)"))
