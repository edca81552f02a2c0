"""NumericRoute: how a case with no closed form is computed (its NumPy and mpmath evaluators, method, error)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import sympy as sp


@dataclass(frozen=True)
class NumericRoute:
    """A case with no closed form: NumPy and mpmath evaluators with a stated method and error bound.

    numpy(**numeric) -> ndarray; mp(**numeric) -> mpf (called inside ``mpmath.workdps``).
    """

    numpy: Callable
    mp: Callable
    method: str
    error: str
    defining: sp.Basic | None = None  # the defining integral, for printing
