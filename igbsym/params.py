"""Parameters shared by the families that evaluate an architecture (one declaration each, one vocabulary).

The activation, the leaky slope ``a`` (used by leaky_relu only: a value given with another activation is refused),
the Kaiming gain ``sigma_w`` (default ``igbsym.ops.SIGMA_W`` = √2, the papers' setting), the norm and its placement.
"""
from .activations import names as activation_names
from .form import Param
from .ops import SIGMA_W
from .spec import NORMS, PLACEMENTS

ACTIVATION = Param("activation", "choice", "activation function", choices=activation_names())
LEAKY_A = Param("a", "real", "leaky slope, used by leaky_relu only", default=0.01,
                used_when=lambda case: case.get("activation") == "leaky_relu", used_text="with activation=leaky_relu only")
SIGMA_W_PARAM = Param("sigma_w", "positive", "Kaiming gain: weights N(0, sigma_w^2/fan_in); default sqrt(2), the "
                      "papers' Kaiming setting (igbsym.ops.SIGMA_W)", default=SIGMA_W)
NORM = Param("norm", "choice", "normalisation layer", choices=NORMS, default="none")
PLACEMENT = Param("placement", "choice", "norm before (pre) or after (post) the activation", choices=PLACEMENTS,
                  default="pre", used_when=lambda case: case.get("norm", "none") != "none",
                  used_text="with a norm only")
