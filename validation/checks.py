"""Check registry: each closed form declares how it is validated against torch simulations.

A *check* is a function ``fn(ctx: Context) -> list[Result]`` registered with :func:`register_check` under a
unique check name, naming the forms it validates. Family check modules are ``validation/checks_<family>.py``;
:func:`all_checks` imports them all (pkgutil discovery), so adding a family's checks is adding a file.

Every :class:`Result` carries prediction, estimate, its standard error, z, p-value and the per-assertion
false-failure rate ``alpha`` at which it passes; the default z threshold 5 gives alpha ≈ 5.7e-7 (two-sided
normal), so a quick run of ~600 assertions fails falsely with probability ≤ 600·5.7e-7 ≈ 3.4e-4 (union bound;
:func:`false_failure_rate` sums the ``alpha`` of any result list).

What a new check must provide so that the mutation meta-test (tests/test_mutation.py) covers it automatically
-------------------------------------------------------------------------------------------------------------
1. Register with ``@register_check(name, forms=[...])`` and list every form it is credited with.
2. Its prediction for form F is F's own value: ``igbsym.get(F).numpy(...)`` (or ``.mp`` / ``.lambdified``) —
   never a re-derivation — and each :class:`Result` it returns for F has ``form == F``. The meta-test replaces
   F's value on all three routes (:func:`mutated`) and requires that some Result with ``form == F`` fails.
3. Its allowance is derived (z·SE from the simulation, plus a ``bias_bound`` computed from theory and stated
   in ``note``), never taken from the simulation under test or from ``|approximation − exact|``.
4. Its expensive sampling goes through a function decorated with :func:`reusable` (first argument ``ctx``,
   remaining arguments hashable): inside :func:`reuse_simulations` the draw is memoised, so the meta-test
   re-runs the check under each mutation recomputing only predictions and statistics. The check must not
   modify what a reusable function returned (no in-place ops on it).
5. Seeds come from :func:`seed_for` (one seeding scheme), sizes from ``SIZES`` via :func:`size` (one table
   per mode, filled with :func:`register_sizes`), and the quick mode must catch the mutations (the meta-test runs quick
   mode).
Then ``python -m igbsym.validation.checks --write-mutation`` (or ``IGBSYM_WRITE_MUTATION=1 pytest
tests/test_mutation.py``)
records the outcome in ``validation/mutation_coverage.json``; ``igbsym validate --list`` reads that record
(it never re-runs simulations) and :func:`coverage` counts a form only if its mutations are caught and the
recorded fingerprint of the check's source still matches (else the row says ``stale``).
"""
from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import json
import math
import pkgutil
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from igbsym.errors import InputError

from .seeding import derive_seed

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
    """A registered check. ``exempt``: {form: {mutation kind: reason}} for structural mutations that the form's
    own claim does not resolve (e.g. B -> B+1 in an O(1/B²) expansion moves it by O(1/B²): within its claim)."""

    name: str
    forms: tuple
    fn: Callable
    doc: str
    exempt: dict = field(default_factory=dict)

    def run(self, ctx: Context) -> list:
        return self.fn(ctx)


_CHECKS: dict = {}
_LOADED = False


def register_check(name: str, forms, exempt=None):
    """Decorator: register ``fn(ctx) -> list[Result]`` as check ``name`` validating ``forms`` (form names);
    ``exempt`` as in :class:`Check` (each exemption states its reason, shown by the meta-test's record)."""
    def deco(fn):
        if name in _CHECKS:
            raise ValueError(f"duplicate check name {name}")
        _CHECKS[name] = Check(name, tuple(forms), fn, (fn.__doc__ or "").strip().split("\n")[0],
                              dict(exempt or {}))
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


def false_failure_rate(results) -> float:
    """Union bound on the probability that a correct form fails any of ``results``: Σ alpha."""
    return float(sum(r.alpha for r in results))


# --------------------------------------------------------------------------------------------- seeds, sizes
def seed_for(ctx: Context, *salt) -> int:
    """A check's seed: :func:`igbsym.validation.seeding.derive_seed` of (ctx.seed, salt...), the one seeding scheme;
    salt items are ints or strings, so every draw of every check is independent."""
    return derive_seed(ctx.seed, *salt)


SIZES: dict = {}


def size(ctx: Context, key: str):
    """The size of ``key`` ('<family>.<item>') in ctx's mode: one table (SIZES) per mode, filled by the check
    modules with :func:`register_sizes`."""
    return SIZES[ctx.mode][key]


def register_sizes(module: str, quick: dict, thorough: dict) -> None:
    """Register a check module's sizes for both modes (same keys in both)."""
    if set(quick) != set(thorough):
        raise ValueError(f"{module}: quick and thorough sizes must have the same keys")
    for mode, table in (("quick", quick), ("thorough", thorough)):
        for k, v in table.items():
            SIZES.setdefault(mode, {})[f"{module}.{k}"] = v


# --------------------------------------------------------------------------------------------- reuse
_REUSE: dict | None = None


def reusable(fn):
    """Decorator for a check's deterministic sampling step ``fn(ctx, *hashable_args)``. Outside
    :func:`reuse_simulations` it is a plain call; inside, its result is memoised by (function, ctx mode, seed,
    device, args), so a check re-run under a mutated form recomputes only predictions and statistics."""
    @functools.wraps(fn)
    def wrapper(ctx, *args, **kw):
        if _REUSE is None:
            return fn(ctx, *args, **kw)
        key = (fn.__module__, fn.__qualname__, ctx.mode, ctx.seed, str(ctx.device), args,
               tuple(sorted(kw.items())))
        if key not in _REUSE:
            _REUSE[key] = fn(ctx, *args, **kw)
        return _REUSE[key]
    return wrapper


@contextmanager
def reuse_simulations():
    """Memoise every :func:`reusable` draw until the block exits."""
    global _REUSE
    outer, _REUSE = _REUSE, ({} if _REUSE is None else _REUSE)
    try:
        yield _REUSE
    finally:
        _REUSE = outer


# --------------------------------------------------------------------------------------------- mutations
GROSS = (1.25, 0.05)            # v -> 1.25 v + 0.05: the mutation of issue 10
STRUCTURAL = ("B", "k", "L", "w", "n", "D")   # integer parameters whose +1 is a structural mutation


def _perturb(value, scale: float, offset: float):
    import mpmath
    if isinstance(value, mpmath.matrix):
        return value * scale + mpmath.ones(value.rows, value.cols) * offset
    return value * scale + offset


@contextmanager
def mutated(name: str, kind: str, delta: float = 0.0):
    """Replace form ``name``'s value on every route (``numpy``, ``mp``, ``lambdified``) while the block runs.

    kind: 'shift' (v -> v + delta, delta = :func:`resolution`: three allowances of the check's most sensitive
    assertion), 'gross' (v -> 1.25 v + 0.05) or '<P>+1' for an integer parameter P (the form is evaluated at
    P + 1: B -> B+1, k -> k+1, ...)."""
    import igbsym
    form = igbsym.get(name)
    numpy_, mp_, lamb_ = form.numpy, form.mp, form.lambdified
    if kind == "shift":
        scale, offset = 1.0, delta
    elif kind == "gross":
        scale, offset = GROSS
    elif kind.endswith("+1") and kind[:-2] in {p.name for p in form.params}:
        scale, offset = None, kind[:-2]
    else:
        raise ValueError(f"unknown mutation {kind!r} for {name}")

    def bump(values):
        values = dict(values)
        values[offset] = np.asarray(values[offset]) + 1 if np.ndim(values[offset]) else values[offset] + 1
        return values

    if scale is None:
        form.numpy = lambda **v: numpy_(**bump(v))
        form.mp = lambda dps=50, **v: mp_(dps, **bump(v))
        form.lambdified = lambda **s: (lambda fn: (lambda **v: fn(**bump(v))))(lamb_(**s)) \
            if offset not in s else lamb_(**bump(s))
    else:
        form.numpy = lambda **v: _perturb(numpy_(**v), scale, offset)
        form.mp = lambda dps=50, **v: _perturb(mp_(dps, **v), scale, offset)
        form.lambdified = lambda **s: (lambda fn: (lambda **v: _perturb(fn(**v), scale, offset)))(lamb_(**s))
    try:
        yield form
    finally:
        for attr in ("numpy", "mp", "lambdified"):
            form.__dict__.pop(attr, None)


def mutations(form_name: str, check: Check | None = None) -> list:
    """The mutation kinds applied to a form: shift, gross, and '<P>+1' for each integer parameter P of the form
    named in STRUCTURAL (B, k, L, w, n, D), minus the check's stated exemptions."""
    import igbsym
    form = igbsym.get(form_name)
    skip = check.exempt.get(form_name, {}) if check is not None else {}
    return [k for k in ["shift", "gross"] + [f"{p.name}+1" for p in form.params
                                             if p.name in STRUCTURAL and p.kind == "integer"] if k not in skip]


def resolution(results, form_name: str) -> float:
    """The 'shift' mutation size for a form: 3 × the smallest allowance z·SE + bias among its z-tests (so the
    most sensitive assertion must fail if the prediction is the form's value), or, for law tests only,
    3 × the DKW-type resolution sqrt(2 ln(2/alpha)/n) of a probability (cdf values, masses)."""
    allow = []
    for r in results:
        if r.form != form_name:
            continue
        if r.z is not None:
            allow.append(-_norm_isf(r.alpha / 2) * r.se + r.bias_bound)
        elif r.p_value is not None and r.n > 0:
            allow.append(math.sqrt(2 * math.log(2 / r.alpha) / r.n))
    allow = [a for a in allow if math.isfinite(a) and a > 0]   # a zero allowance is an exact identity
    return 3 * min(allow) if allow else 0.05


def _norm_isf(p: float) -> float:
    from scipy.special import ndtri
    return float(ndtri(p))


def _max_shift(base, mutated_results, name: str):
    """How far a structural mutation moved the form's z-test predictions, in units of each test's allowance
    (z·SE + bias); None when that cannot be told (law tests, whose prediction is a whole law, or a changed
    result list). Detection is guaranteed only for a move of more than 2 allowances (the unmutated estimate may
    sit anywhere within one allowance); a structural mutation that moves no prediction that far is below the
    check's resolution (like a shift smaller than the SE) and is recorded as such, with the move."""
    a = [r for r in base if r.form == name]
    b = [r for r in mutated_results if r.form == name]
    if len(a) != len(b) or any(r.z is None for r in a):
        return None
    shifts = []
    for r, m in zip(a, b):
        allowance = -_norm_isf(r.alpha / 2) * r.se + r.bias_bound
        diff = abs(m.prediction - r.prediction)
        shifts.append(diff / allowance if allowance > 0 else (0.0 if diff == 0 else math.inf))
    return max(shifts)


def check_fingerprint(check: Check) -> str:
    """sha256 of the source of the module defining the check (a recorded mutation outcome is stale once it
    changes)."""
    src = inspect.getsource(inspect.getmodule(check.fn))
    return hashlib.sha256(src.encode()).hexdigest()[:16]


MUTATION_RECORD = Path(__file__).with_name("mutation_coverage.json")


def run_mutations(checks=None, ctx: Context | None = None, progress=None) -> dict:
    """The mutation meta-test: run every check once (quick mode, draws memoised), then for every form it claims
    and every mutation in :func:`mutations`, re-run it with the form mutated and record whether a Result of that
    form fails. Returns the record {"forms": {form: {...}}, "checks": {check: fingerprint}, "baseline": {...}}."""
    ctx = ctx or Context(mode="quick", seed=0)
    checks = checks if checks is not None else all_checks()
    record = {"mode": ctx.mode, "seed": ctx.seed, "forms": {}, "checks": {}, "baseline": {}}
    with reuse_simulations():
        for chk in checks:
            if progress:
                progress(f"{chk.name}: unmutated run")
            base = chk.run(ctx)
            record["checks"][chk.name] = check_fingerprint(chk)
            record["baseline"][chk.name] = {"passed": all(r.passed for r in base), "n": len(base),
                                            "failed": [r.explain() for r in base if not r.passed]}
            for name in chk.forms:
                if not any(r.form == name for r in base):
                    continue
                delta = resolution(base, name)
                outcome = {}
                for kind in mutations(name, chk):
                    if progress:
                        progress(f"{chk.name}: {name} {kind}")
                    with mutated(name, kind, delta):
                        try:
                            res = chk.run(ctx)
                            caught = any(r.form == name and not r.passed for r in res)
                            how = "fails" if caught else "passes"
                            if not caught and kind.endswith("+1"):
                                shift = _max_shift(base, res, name)
                                if shift is not None and shift <= 2:
                                    caught, how = None, f"below resolution (moves predictions by <= " \
                                                        f"{shift:.2g} allowances)"
                        except InputError as exc:
                            if kind.endswith("+1"):   # the mutated parameter left the form's domain (k+1 > max)
                                caught, how = None, f"not applicable: {exc}"
                            else:                     # a crash is a failed check (as in validate)
                                caught, how = True, f"crash: {exc}"
                        except Exception as exc:   # a crashing check is a failed check (as in validate)
                            caught, how = True, f"crash: {type(exc).__name__}"
                    outcome[kind] = {"caught": caught, "how": how}
                row = {"check": chk.name, "delta": delta, "mutations": outcome, "exempt": chk.exempt.get(name, {}),
                       "caught": all(o["caught"] is not False for o in outcome.values())}
                _keep_best(record["forms"], name, row)
    record["forms"] = _every_form(record["forms"])
    return record


def _keep_best(forms: dict, name: str, row: dict) -> None:
    """A form's row is that of the check that catches it with the finest shift."""
    old = forms.get(name)
    if old is None or (row["caught"], -row["delta"]) > (old["caught"], -old["delta"]):
        forms[name] = row


def _every_form(forms: dict) -> dict:
    """The rows sorted by name, with an empty row for every registered form that no check covers."""
    import igbsym
    for f in igbsym.forms():
        forms.setdefault(f.name, {"check": None, "delta": None, "mutations": {}, "caught": False})
    return dict(sorted(forms.items()))


def refresh_mutation_record(record: dict, progress=None) -> dict:
    """Re-run the meta-test only for the checks whose source changed since ``record`` (or that it lacks) and merge:
    a form keeps the best row (caught, then finest shift) among the checks not re-run and the fresh ones."""
    checks = all_checks()
    stale = [c for c in checks if record["checks"].get(c.name) != check_fingerprint(c)]
    stale_names = {c.name for c in stale}
    fresh = run_mutations(stale, progress=progress)
    names = {c.name for c in checks}
    merged = {"mode": fresh["mode"], "seed": fresh["seed"], "forms": {},
              "checks": {k: v for k, v in record["checks"].items() if k in names and k not in stale_names},
              "baseline": {k: v for k, v in record["baseline"].items() if k in names and k not in stale_names}}
    merged["checks"].update(fresh["checks"])
    merged["baseline"].update(fresh["baseline"])
    rows = [r for r in record["forms"].items() if r[1].get("check") in merged["checks"]
            and r[1]["check"] not in stale_names] + [r for r in fresh["forms"].items() if r[1].get("check")]
    for name, row in rows:
        _keep_best(merged["forms"], name, row)
    merged["forms"] = _every_form(merged["forms"])
    return merged


def load_mutation_record() -> dict | None:
    try:
        return json.loads(MUTATION_RECORD.read_text())
    except (OSError, ValueError):
        return None


def coverage() -> list:
    """[{"name", "check", "caught", "status"}] for every registered form.

    ``check``: the check whose mutation run covers it (from the recorded meta-test), else the first check that
    claims it; ``caught``: True only if every mutation was caught, the check's own prediction is the form's
    value (implied: a mutation of the value made it fail) and the check's source is unchanged since the
    record (``status`` 'caught' | 'NOT CAUGHT' | 'stale' | 'not recorded' | 'no check')."""
    import igbsym
    checks = all_checks()
    by_form = {}
    for chk in checks:
        for f in chk.forms:
            by_form.setdefault(f, chk.name)
    rec = load_mutation_record() or {"forms": {}, "checks": {}}
    prints = {c.name: c for c in checks}
    out = []
    for f in igbsym.forms():
        row = rec["forms"].get(f.name)
        check = (row or {}).get("check") or by_form.get(f.name)
        if check is None:
            status, caught = "no check", False
        elif row is None or row.get("check") is None:
            status, caught = "not recorded", False
        elif check not in prints or rec["checks"].get(check) != check_fingerprint(prints[check]):
            status, caught = "stale", False
        else:
            caught = bool(row["caught"])
            status = "caught" if caught else "NOT CAUGHT"
        out.append({"name": f.name, "check": check, "caught": caught, "status": status,
                    "mutations": {k: v["caught"] for k, v in (row or {}).get("mutations", {}).items()}})
    return out


def main(argv=None) -> int:
    """``python -m igbsym.validation.checks --write-mutation [--stale]``: run the mutation meta-test (all checks, or
    with --stale only those whose source changed since the record) and write the record."""
    import argparse
    import sys
    import torch
    parser = argparse.ArgumentParser(prog="python -m igbsym.validation.checks")
    parser.add_argument("--write-mutation", action="store_true", help="run the meta-test, write the record")
    parser.add_argument("--stale", action="store_true",
                        help="re-run only the checks whose source changed since the committed record")
    args = parser.parse_args(argv)
    if not args.write_mutation:
        parser.print_help()
        return 0
    torch.set_num_threads(1)
    progress = lambda m: print(m, file=sys.stderr, flush=True)
    old = load_mutation_record() if args.stale else None
    rec = refresh_mutation_record(old, progress) if old else run_mutations(progress=progress)
    bad_base = {k: v["failed"] for k, v in rec["baseline"].items() if not v["passed"]}
    if bad_base:
        print(f"unmutated checks fail, record not written: {bad_base}")
        return 1
    MUTATION_RECORD.write_text(json.dumps(rec, indent=1) + "\n")
    bad = [f for f, r in rec["forms"].items() if not r["caught"]]
    print(f"{len(rec['forms']) - len(bad)}/{len(rec['forms'])} forms caught; not caught: {bad}")
    return 0


if __name__ == "__main__":   # run the package module, not this __main__ copy (its registry would be empty)
    from igbsym.validation.checks import main as _main
    raise SystemExit(_main())
