"""Derivations: one module per family. Each module's ``derive()`` builds results from their definitions with
SymPy, proves the registry's forms equal them, and returns a :class:`~igbsym.derivations.base.Derivation` whose
``latex()`` shows the steps. The library never imports this package.
"""
import importlib
import pkgutil

from igbsym import registry
from igbsym.errors import InputError


def modules() -> list:
    """Names of the derivation modules, discovered with pkgutil (base and the ``derive`` command are not families);
    each is named after the module of igbsym/families/ whose forms it proves."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name not in ("base", "cli"))


def run(family: str):
    """Run the derivation of a family (a registry family, e.g. ``leaky``, or its module's name, e.g. ``rectified``);
    raises DerivationError if a proof fails."""
    module = family if family in modules() else registry.family_module(family)
    if module not in modules():
        raise InputError(f"no derivation module for family {family!r}; families are {', '.join(registry.families())}")
    return importlib.import_module(f"{__name__}.{module}").derive()
