"""Exceptions raised by igbsym.

Every error a user can trigger with bad input is an :class:`InputError`; its message is one line that says
what is wrong and what is allowed. The CLI prints that line and exits with status 2.
"""


class InputError(ValueError):
    """Bad input: unknown name, missing or extra parameter, or a value outside a form's validity conditions."""


class NumericalError(ArithmeticError):
    """A kernel produced NaN on valid input (never returned silently)."""
