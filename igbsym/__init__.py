"""igbsym: exact closed forms for the statistics of untrained neural networks (Initial Guessing Bias).

>>> import igbsym
>>> igbsym.get("igb.gamma").numpy(activation="relu", sigma_w=1.0)   # doctest: +ELLIPSIS
0.4669...
"""
# The subpackage igbsym.families is imported first: importing it later (the registry loads it) would rebind the
# name igbsym.families from the public function below to the package.
from . import families as _family_package  # noqa: F401
from .errors import InputError, NumericalError
from .form import ClosedForm, Condition, NumericRoute, Param, Provenance
from .registry import families, forms, get, names

__version__ = "0.1.0"
__all__ = ["ClosedForm", "Condition", "InputError", "NumericRoute", "NumericalError", "Param",
           "Provenance", "families", "forms", "get", "names", "__version__"]
