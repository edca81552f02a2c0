"""Derivations: one module per family. Each module's ``derive()`` builds results from their definitions with
SymPy, proves the registry's forms equal them, and returns a :class:`~igbsym.derivations.base.Derivation` whose
``latex()`` shows the steps. The library never imports this package.
"""
import importlib
import pkgutil

from igbsym.errors import InputError


def modules() -> list:
    """Names of the derivation modules (families), discovered with pkgutil (base and the ``derive`` command are not
    families)."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name not in ("base", "cli"))


def run(family: str):
    """Run one family's derivation; raises DerivationError if a proof fails."""
    if family not in modules():
        raise InputError(f"unknown derivation family {family!r}; families are {', '.join(modules())}")
    return importlib.import_module(f"{__name__}.{family}").derive()
