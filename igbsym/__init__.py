"""igbsym: exact closed forms for the statistics of untrained neural networks (Initial Guessing Bias).

>>> import igbsym
>>> igbsym.get("igb.gamma").numpy(activation="relu", sigma_w=1.0)   # doctest: +ELLIPSIS
0.4669...
"""
from .errors import InputError, NumericalError
from .form import ClosedForm, Condition, NumericRoute, Param, Provenance
from .registry import families, forms, get, names

__version__ = "0.1.0"
__all__ = ["ClosedForm", "Condition", "InputError", "NumericRoute", "NumericalError", "Param",
           "Provenance", "families", "forms", "get", "names", "__version__"]
