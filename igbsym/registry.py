"""The registry: dotted names (``family.quantity``) to :class:`~igbsym.form.ClosedForm` objects.

Family modules live in ``igbsym/families/`` and call :func:`register` at import; :func:`forms` imports them
all (discovered with ``pkgutil``, so adding a family is adding a file).
"""
from __future__ import annotations

import difflib
import importlib
import pkgutil
import sys

from .errors import InputError

_REGISTRY: dict = {}
_MODULE: dict = {}      # family -> the family module (igbsym/families/<module>.py) that registers its forms
                        # (the one named after the family when several do)
_LOADED = False


def register(form):
    """Add a form; names are unique."""
    if form.name in _REGISTRY:
        raise ValueError(f"duplicate closed-form name {form.name}")
    _REGISTRY[form.name] = form
    module = sys._getframe(1).f_globals["__name__"].rsplit(".", 1)[-1]
    if form.family not in _MODULE or module == form.family:   # a family split over modules (meanfield and
        _MODULE[form.family] = module                         # meanfield_bn): the module named after it
    return form


def delegate(name: str, fixed: dict, method: str, error: str, defining=None, ignore=()):
    """A NumericRoute whose values are the registered form ``name``'s at the structural values ``fixed`` (a case that
    is another family's form: depth.gamma at finite N is width.gamma), the numeric parameters in ``ignore`` dropped;
    the form is looked up at evaluation time, so neither family imports the other."""
    import mpmath
    from .route import NumericRoute

    def numeric(values):
        return {k: v for k, v in values.items() if k not in ignore}
    return NumericRoute(lambda **v: get(name).numpy(**fixed, **numeric(v)),
                        lambda **v: get(name).mp(mpmath.mp.dps, **fixed, **numeric(v)), method, error, defining)


def family_module(family: str) -> str:
    """The module of igbsym/families/ that registers ``family`` (its derivations/ and checks carry the same name)."""
    _load()
    if family not in _MODULE:
        raise InputError(f"unknown family {family!r}; families are {', '.join(families())}")
    return _MODULE[family]


def _load():
    global _LOADED
    if not _LOADED:
        package = importlib.import_module(__package__ + ".families")
        for mod in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
            importlib.import_module(f"{package.__name__}.{mod.name}")
        _LOADED = True


def forms(family: str | None = None) -> list:
    """All registered forms (sorted by name), optionally one family (the part before the dot)."""
    _load()
    out = [_REGISTRY[k] for k in sorted(_REGISTRY)]
    if family is not None:
        out = [f for f in out if f.family == family]
        if not out:
            raise InputError(f"unknown family {family!r}; families are {', '.join(families())}")
    return out


def families() -> list:
    _load()
    return sorted({f.family for f in _REGISTRY.values()})


def get(name: str):
    """The form called ``name``; an unknown name raises InputError with the closest names."""
    _load()
    try:
        return _REGISTRY[name]
    except KeyError:
        close = difflib.get_close_matches(name, list(_REGISTRY), n=3)
        hint = f"did you mean {', '.join(close)}?" if close else "run 'igbsym list' for all names"
        raise InputError(f"unknown closed form {name!r}; {hint}") from None


def names() -> list:
    return [f.name for f in forms()]
