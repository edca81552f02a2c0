"""Check registry: each closed form declares how it is validated against torch simulations.

A *check* is a function ``fn(ctx: Context) -> list[Result]`` registered with :func:`register_check` under a
unique check name, naming the forms it validates. Family check modules are ``validation/checks_<family>.py``;
:func:`all_checks` imports them all (pkgutil discovery), so adding a family's checks is adding a file.

Every :class:`Result` carries prediction, estimate, its standard error, z, p-value and the per-assertion
false-failure rate ``alpha`` at which it passes; the default z threshold 5 gives alpha ≈ 5.7e-7 (two-sided
normal), so a suite of ~200 assertions fails falsely with probability ≈ 1e-4 (union bound).
"""
from __future__ import annotations

import importlib
import math
import pkgutil
from dataclasses import asdict, dataclass, field
from typing import Callable

Z_DEFAULT = 5.0


def alpha_of_z(z: float) -> float:
    """Two-sided normal tail probability P(|N(0,1)| > z)."""
    return math.erfc(z / math.sqrt(2))


@dataclass
class Context:
    """What a check is run with: device string, mode ('quick' | 'thorough'), base seed, progress callback,
    and where figures go (``report_dir``; None means do not plot)."""

    device: str = "cpu"
    mode: str = "quick"
    seed: int = 0
    progress: Callable[[str], None] = lambda msg: None
    report_dir: object = None
    figures: list = field(default_factory=list)

    @property
    def quick(self) -> bool:
        return self.mode == "quick"

    def save_figure(self, name: str, fig, caption: str = "") -> None:
        """Save a matplotlib figure as ``<report_dir>/<name>.png`` (no-op without a report dir) and close it."""
        import matplotlib.pyplot as plt
        if self.report_dir is not None:
            from pathlib import Path
            path = Path(self.report_dir) / f"{name}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            fig.savefig(path, dpi=110, bbox_inches="tight")
            self.figures.append((str(path), caption))
        plt.close(fig)


@dataclass
class Result:
    """One statistical comparison of a form's prediction with a simulation estimate.

    For a z-test: passed iff |estimate − prediction| ≤ z_max·se + bias_bound. For a law test (KS, χ²):
    ``p_value`` is the test's p-value and passed iff p_value ≥ alpha. ``bias_bound`` is a stated finite-size
    bias allowance (0 unless the check explains it in ``note``).
    """

    form: str
    label: str
    prediction: float
    estimate: float
    se: float
    n: int
    seed: int
    z: float | None = None
    p_value: float | None = None
    alpha: float = field(default_factory=lambda: alpha_of_z(Z_DEFAULT))
    bias_bound: float = 0.0
    passed: bool = False
    note: str = ""

    def to_dict(self) -> dict:
        return asdict(self)

    def explain(self) -> str:
        return (f"{self.form} [{self.label}]: prediction={self.prediction:.6g} estimate={self.estimate:.6g} "
                f"se={self.se:.3g} z={self.z} p={self.p_value} n={self.n} seed={self.seed} "
                f"bias_bound={self.bias_bound:.3g} -> {'pass' if self.passed else 'FAIL'} {self.note}")


def z_result(form, label, prediction, estimate, se, n, seed, z_max=Z_DEFAULT, bias_bound=0.0, note="") -> Result:
    """A z-test result: |estimate − prediction| ≤ z_max·se + bias_bound."""
    diff = abs(estimate - prediction)
    z = (estimate - prediction) / se if se > 0 else (0.0 if diff == 0 else math.inf)
    return Result(form, label, float(prediction), float(estimate), float(se), int(n), int(seed), z=float(z),
                  p_value=alpha_of_z(abs(z)) if math.isfinite(z) else 0.0, alpha=alpha_of_z(z_max),
                  bias_bound=float(bias_bound), passed=bool(diff <= z_max * se + bias_bound), note=note)


def law_result(form, label, p_value, n, seed, alpha=alpha_of_z(Z_DEFAULT), prediction=math.nan,
               estimate=math.nan, note="") -> Result:
    """A goodness-of-fit result (KS, χ²): passes iff p_value ≥ alpha."""
    return Result(form, label, float(prediction), float(estimate), math.nan, int(n), int(seed),
                  p_value=float(p_value), alpha=float(alpha), passed=bool(p_value >= alpha), note=note)


@dataclass(frozen=True)
class Check:
    name: str
    forms: tuple
    fn: Callable
    doc: str

    def run(self, ctx: Context) -> list:
        return self.fn(ctx)


_CHECKS: dict = {}
_LOADED = False


def register_check(name: str, forms):
    """Decorator: register ``fn(ctx) -> list[Result]`` as check ``name`` validating ``forms`` (form names)."""
    def deco(fn):
        if name in _CHECKS:
            raise ValueError(f"duplicate check name {name}")
        _CHECKS[name] = Check(name, tuple(forms), fn, (fn.__doc__ or "").strip().split("\n")[0])
        return fn
    return deco


def all_checks() -> list:
    """All registered checks, importing every ``validation/checks_*.py`` module."""
    global _LOADED
    if not _LOADED:
        package = importlib.import_module(__package__)
        for mod in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
            if mod.name.startswith("checks_"):
                importlib.import_module(f"{__package__}.{mod.name}")
        _LOADED = True
    return [_CHECKS[k] for k in sorted(_CHECKS)]


def coverage() -> list:
    """[{"name": form, "check": check name or None}] for every registered form."""
    import igbsym
    by_form = {}
    for chk in all_checks():
        for f in chk.forms:
            by_form.setdefault(f, chk.name)
    return [{"name": f.name, "check": by_form.get(f.name)} for f in igbsym.forms()]
