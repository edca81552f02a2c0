"""`ClosedForm`: a named result that can be evaluated fast (NumPy), precisely (mpmath), printed (LaTeX)
and checked (its validity conditions are enforced on every evaluation).

A form has *numeric* parameters, which are SymPy symbols with exact assumptions and may be NumPy arrays at
evaluation, and *structural* parameters (an activation name, an integer order such as the moment n) that
select which expression applies and must be scalars. When no closed form exists for a structural case the
builder returns a :class:`NumericRoute`, which says how it is computed and how accurate it is.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

import mpmath
import numpy as np
import sympy as sp

from .errors import InputError, NumericalError
from .functions import MPMATH_MODULES, NUMPY_MODULES
from .route import NumericRoute

REQUIRED = object()
MAX_DPS = 2000          # mp() precision cap: every form evaluates in well under a minute at this many digits
_MAX_GUARD_BITS = 1 << 15  # guard precision an exact expression may use to converge (cancellation of ~1e-9800)

_ASSUMPTIONS = {
    "real": dict(real=True),
    "positive": dict(positive=True),
    "nonnegative": dict(nonnegative=True),
    "integer": dict(integer=True),
}
_KIND_TEXT = {
    "real": "a finite real number",
    "positive": "a real number > 0",
    "nonnegative": "a real number >= 0",
    "integer": "an integer",
}


@dataclass(frozen=True)
class Param:
    """One parameter of a form.

    kind: ``real`` | ``positive`` | ``nonnegative`` | ``integer`` | ``choice``.
    structural: the value selects the expression (must be a scalar); ``choice`` parameters always are.
    minimum / maximum: inclusive integer bounds (``integer`` kind only).
    allow_inf: +inf is accepted (a documented limit, e.g. γ → ∞).
    used_when / used_text: a predicate on the structural values and the sentence saying when the parameter is used;
    a value other than the default given where it is not used is refused (the user would believe it mattered).
    """

    name: str
    kind: str
    doc: str = ""
    choices: tuple = ()
    default: object = REQUIRED
    structural: bool = False
    minimum: int | None = None
    maximum: int | None = None
    allow_inf: bool = False
    used_when: Callable | None = None
    used_text: str = ""

    @property
    def is_structural(self) -> bool:
        return self.structural or self.kind == "choice"

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def symbol(self) -> sp.Symbol:
        return sp.Symbol(self.name, **_ASSUMPTIONS[self.kind])

    def allowed(self) -> str:
        if self.kind == "choice":
            return "one of " + ", ".join(map(str, self.choices))
        text = _KIND_TEXT[self.kind]
        if self.kind == "integer":
            lo = "" if self.minimum is None else f" >= {self.minimum}"
            hi = "" if self.maximum is None else f" <= {self.maximum}"
            text += lo + ("," if lo and hi else "") + hi
        if self.allow_inf:
            text += " (or inf)"
        return text

    def parse(self, form: str, raw: str):
        """Parse a CLI string. Real values stay strings so mpmath can read every digit at high precision."""
        if self.kind == "choice":
            return self.check_scalar(form, raw)
        if self.kind == "integer":
            if self.allow_inf and raw.strip().lower() in ("inf", "+inf", "infinity", "+infinity"):
                return self.check_scalar(form, float("inf"))
            try:
                value = int(raw)
            except ValueError:
                raise InputError(f"{form}: {self.name}={raw!r} is not {self.allowed()}") from None
            return self.check_scalar(form, value)
        try:
            value = float(raw)
        except ValueError:
            raise InputError(f"{form}: {self.name}={raw!r} is not a number; allowed: {self.allowed()}") from None
        self.check_array(form, value)
        return raw

    def check_scalar(self, form: str, value):
        """Validate a structural (scalar) value and return it normalised."""
        if self.kind == "choice":
            if value not in self.choices:
                close = difflib.get_close_matches(str(value), list(map(str, self.choices)), n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                raise InputError(f"{form}: {self.name}={value!r} is not allowed{hint}; allowed: {self.allowed()}")
            return value
        if self.kind == "integer":
            self._in_double_range(form, value)
            if self.allow_inf and not isinstance(value, (bool, np.bool_)) and float(value) == float("inf"):
                return value
            if isinstance(value, (bool, np.bool_)) or not float(value).is_integer():
                raise InputError(f"{form}: {self.name}={value!r} is not {self.allowed()}")
            value = int(value)
            if (self.minimum is not None and value < self.minimum) or (
                    self.maximum is not None and value > self.maximum):
                raise InputError(f"{form}: {self.name}={value} is out of range; allowed: {self.allowed()}")
            return value
        self.check_array(form, value)
        return value

    def _in_double_range(self, form: str, value) -> None:
        """A Python integer beyond the double range (e.g. 400 digits) is refused in one line, not an OverflowError."""
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and abs(int(value)) > 2**1023:
            digits = str(abs(int(value)))
            shown = f"{'-' if value < 0 else ''}{digits[:4]}...({len(digits)} digits)"
            raise InputError(f"{form}: {self.name}={shown} exceeds the double range; allowed: {self.allowed()}")

    def check_array(self, form: str, value) -> np.ndarray:
        """Validate numeric values (scalar or array) against the kind; return them as a float array."""
        self._in_double_range(form, value)
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise InputError(f"{form}: {self.name}={value!r} is not a number; allowed: {self.allowed()}") from None
        if arr.size and self.kind != "integer" and self._range_ok(arr.min(), arr.max()):
            return arr  # two reductions (NaN propagates through both) instead of a mask per rule
        bad = np.isnan(arr) | (np.isinf(arr) & ~(self.allow_inf & (arr > 0)))
        if self.kind == "positive":
            bad |= ~(arr > 0)
        elif self.kind == "nonnegative":
            bad |= ~(arr >= 0)
        elif self.kind == "integer":
            bad |= np.isfinite(arr) & (arr != np.round(arr))
            if self.minimum is not None:
                bad |= arr < self.minimum
            if self.maximum is not None:
                bad |= np.isfinite(arr) & (arr > self.maximum)   # +inf: allowed or not by allow_inf above
        if bad.any():
            first = arr[bad].flat[0] if arr.ndim else arr
            raise InputError(f"{form}: {self.name}={first:g} is not allowed; allowed: {self.allowed()}")
        return arr

    def _range_ok(self, lo, hi) -> bool:
        """Every value between lo = min and hi = max is allowed by the kind (False for NaN, so the caller's masks
        then find and name the first bad value)."""
        floor = lo > 0 if self.kind == "positive" else lo >= 0 if self.kind == "nonnegative" else lo > -np.inf
        return bool(floor and (hi < np.inf or (self.allow_inf and hi == np.inf)))


@dataclass(frozen=True)
class Condition:
    """A validity condition: a SymPy relation in the form's symbols plus the sentence a user reads.

    applies: optional predicate on the structural values (a dict); the condition binds only the cases where it is
    true (e.g. "B = inf" for the activations a mini-batch law does not cover). None: every case.
    numpy: optional exact NumPy test ``numpy(**arrays) -> bool array`` of the relation, called with the numeric
    parameters the relation names (after structural substitution), used instead of the lambdified relation where
    that one overflows or rounds in float64 (e.g. c0 <= (kappa0 - 1) sigma2^2 at sigma2 = 1e200).
    """

    relation: sp.Basic
    text: str
    applies: Callable | None = None
    numpy: Callable | None = None

    def binds(self, structural: dict) -> bool:
        return self.applies is None or bool(self.applies(structural))

    def latex(self) -> str:
        from .latex import to_latex
        return to_latex(self.relation)


@dataclass(frozen=True)
class Provenance:
    """Where a result comes from: paper file (in shared/papers) and equation/lemma, plus a note (errata)."""

    paper: str
    where: str
    note: str = ""

    def __str__(self) -> str:
        return f"{self.paper}, {self.where}" + (f" — {self.note}" if self.note else "")


@dataclass(frozen=True)
class Accuracy:
    """The stated accuracy of a form's NumPy kernel over its whole declared domain.

    relative: bound on |numpy - exact| / |exact| (values below 1e-300 in magnitude: absolute 1e-300·relative; a true
    value beyond the double range may come back as ±inf of the right sign). reason: why it is not 1e-12.
    per_case: optional (structural case dict → relative bound) for a form whose cases have different routes
    (depth.gamma at finite width N is width.gamma's 1e-6 route); the reason must say which cases.
    per_value: optional ``per_value(**params) -> relative bound`` (broadcast like the value, inf where no digit is
    claimed) for a form whose route computes the bound of each value it returns (randomised QMC: a confidence bound
    from the spread of its scrambles plus its deterministic parts; a rule with its error estimate). That is then the
    statement, ``relative`` is inf (no one bound holds over the whole domain: the far tails resolve no digit) and the
    reason says how the bound is made and what it measured.
    tests/test_domain.py checks the bound at points drawn over the whole domain.
    """

    relative: float = 1e-12
    reason: str = ""
    per_case: Callable | None = None
    per_value: Callable | None = None

    def at(self, case: dict) -> float:
        """The relative bound stated for one structural case (inf where it is stated per value)."""
        return self.relative if self.per_case is None else float(self.per_case(case))

    def __str__(self) -> str:
        if self.per_value is not None:
            return "relative error stated per value (igbsym eval --bound)" + (f": {self.reason}" if self.reason else "")
        return f"relative error <= {self.relative:g}" + (f" ({self.reason})" if self.reason else "")


@dataclass
class ClosedForm:
    """A registered result. See the module docstring.

    expr: the SymPy expression when the form has no structural parameters, else ``None``.
    builder: ``builder(**structural) -> sympy.Expr | NumericRoute`` for forms with structural parameters.
    kernel: an optional hand-written stable NumPy kernel ``kernel(**numeric)``; the lambdified expression
        stays available (``lambdified``) and the tests show the two agree.
    conditions: extra validity conditions beyond each parameter's kind.
    limit: optional ``limit(**numeric_mpf) -> value | None``: the exact value at documented limit points the
        expression cannot take (e.g. γ = 0 or ∞), used by ``mp`` before the expression; None means "not a limit".
    display: LaTeX of the general statement when it cannot be one SymPy expression (e.g. a recursion in n).
    accuracy: the stated accuracy of the NumPy route over the declared domain (:class:`Accuracy`).
    mp_kernel: an optional mpmath evaluation ``mp_kernel(**structural, **numeric_mpf)`` of the same expression by a
        route that keeps full relative precision where the expression itself cancels (it is still checked for
        convergence in precision like the expression).
    """

    name: str
    summary: str
    params: tuple
    provenance: Provenance
    expr: sp.Basic | None = None
    builder: Callable | None = None
    conditions: tuple = ()
    kernel: Callable | None = None
    limit: Callable | None = None
    display: str | None = None
    accuracy: Accuracy = Accuracy()
    mp_kernel: Callable | None = None
    symbols: dict = field(init=False)

    def __post_init__(self):
        self.symbols = {p.name: p.symbol() for p in self.params if p.kind != "choice"}
        if (self.expr is None) == (self.builder is None):
            raise TypeError(f"{self.name}: give exactly one of expr and builder")
        self._case = lru_cache(maxsize=None)(self._build)

    # --- structure -------------------------------------------------------------------------------
    @property
    def family(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def numeric_params(self) -> list:
        return [p for p in self.params if not p.is_structural]

    @property
    def structural_params(self) -> list:
        return [p for p in self.params if p.is_structural]

    def symbol(self, name: str) -> sp.Symbol:
        return self.symbols[name]

    def _build(self, key: tuple):
        case = self.expr if self.builder is None else self.builder(**dict(key))
        if isinstance(case, sp.Basic):
            stray = case.free_symbols - set(self.symbols.values())
            if stray:
                raise TypeError(f"{self.name}: expression symbols {sorted(map(str, stray))} are not the form's "
                                f"parameter symbols (same name, same assumptions required)")
        return case

    def case(self, **structural):
        """The expression (or NumericRoute) for given structural values, checked and cached."""
        key = self._structural_key(structural)
        return self._case(key)

    def is_exact(self, **structural) -> bool:
        return not isinstance(self.case(**structural), NumericRoute)

    def _structural_key(self, values: dict) -> tuple:
        out = []
        for p in self.structural_params:
            v = values.get(p.name, p.default)
            if v is REQUIRED:
                raise InputError(f"{self.name}: missing parameter {p.name} ({p.allowed()})")
            out.append((p.name, p.check_scalar(self.name, v)))
        return tuple(out)

    # --- input checking --------------------------------------------------------------------------
    def _split(self, values: dict):
        names = {p.name for p in self.params}
        extra = sorted(set(values) - names)
        if extra:
            raise InputError(f"{self.name}: unknown parameter {extra[0]}; parameters are "
                             + ", ".join(self.signature_parts()))
        missing = [p.name for p in self.params if p.required and p.name not in values]
        if missing:
            raise InputError(f"{self.name}: missing parameter {missing[0]}; parameters are "
                             + ", ".join(self.signature_parts()))
        structural = {p.name: values.get(p.name, p.default) for p in self.structural_params}
        key = self._structural_key(structural)
        numeric = {}
        for p in self.numeric_params:
            v = values.get(p.name, p.default)
            if isinstance(v, str):
                v = float(v)
            numeric[p.name] = p.check_array(self.name, v)
        return key, numeric

    def check(self, **values) -> None:
        """Validate ``values`` as ``numpy`` would and also refuse a parameter the case ignores (a non-default value
        where its ``used_when`` is false: the user would believe it mattered). ``igbsym eval`` calls this; the numpy
        and mp routes accept such parameters, so vectorised code may pass one keyword set for every case."""
        key, numeric = self._split(values)
        for p in self.params:
            if p.used_when is not None and p.name in values and not p.used_when(dict(key)) \
                    and not _is_default(values[p.name], p.default):
                raise InputError(f"{self.name}: {p.name}={values[p.name]!r} has no effect here; {p.name} is used "
                                 f"{p.used_text} (leave it out)")
        self._check_conditions(key, numeric)

    def _check_conditions(self, key: tuple, numeric: dict):
        if not self.conditions:
            return
        arrays = {k: np.asarray(v, dtype=float) for k, v in numeric.items()}
        for cond, args, test in self._condition_tests(key):
            ok = np.asarray(test(*[arrays[s.name] for s in args]) if args else test)
            if not ok.all():
                where = ", ".join(f"{s.name}={np.broadcast_to(arrays[s.name], ok.shape)[~ok].flat[0]:g}"
                                  for s in args) if args else ", ".join(f"{k}={v}" for k, v in key)   # structural
                raise InputError(f"{self.name}: condition {cond.text} fails at {where}")

    @lru_cache(maxsize=None)
    def _condition_tests(self, key: tuple) -> list:
        """Each condition with structural values substituted, lambdified once: (condition, args, test)."""
        out = []
        for cond in self.conditions:
            if not cond.binds(dict(key)):
                continue
            rel = cond.relation.subs({self.symbols[k]: v for k, v in key if k in self.symbols})
            args = sorted(rel.free_symbols, key=lambda s: s.name)
            if cond.numpy is not None and args:
                test = _keyword_test(cond.numpy, [a.name for a in args])
            else:
                test = sp.lambdify(args, rel, modules="numpy") if args else bool(rel)
            out.append((cond, args, test))
        return out

    # --- evaluation ------------------------------------------------------------------------------
    def numpy(self, **values) -> np.ndarray:
        """Vectorised float64 evaluation (broadcasts numeric parameters)."""
        key, numeric = self._split(values)
        self._check_conditions(key, numeric)
        case = self._case(key)
        with np.errstate(all="ignore"):
            if isinstance(case, NumericRoute):
                out = case.numpy(**numeric)
            elif self.kernel is not None:
                out = self.kernel(**dict(key), **numeric)
            else:
                out = self._lambdified(key)(**numeric)
        out = np.asarray(out, dtype=float)
        if np.isnan(out).any():
            raise NumericalError(f"{self.name}: the NumPy kernel gave NaN at valid input {values}")
        return out[()] if out.ndim == 0 else out

    def relative_bound(self, **values):
        """The stated relative error of ``numpy(**values)``: the form's per-value bound (Accuracy.per_value), broadcast
        like the value, inf where no digit is claimed; else the one bound of the structural case (a float, for every
        element of the value). Bad input is refused as by ``numpy``."""
        key, numeric = self._split(values)
        self._check_conditions(key, numeric)
        if self.accuracy.per_value is None:
            return self.accuracy.at(dict(key))
        with np.errstate(all="ignore"):
            out = np.asarray(self.accuracy.per_value(**dict(key), **numeric), dtype=float)
        if np.isnan(out).any() or (out < 0).any():
            raise NumericalError(f"{self.name}: the stated relative bound is not a number >= 0 at {values}")
        return out[()] if out.ndim == 0 else out

    def lambdified(self, **structural) -> Callable:
        """The lambdified NumPy/SciPy function of the exact expression (keyword arguments)."""
        return self._lambdified(self._structural_key(structural))

    @lru_cache(maxsize=None)
    def _lambdified(self, key: tuple) -> Callable:
        case = self._case(key)
        if isinstance(case, NumericRoute):
            raise InputError(f"{self.name}: no closed form for {dict(key)} (numeric route: {case.method})")
        args = [self.symbols[p.name] for p in self.numeric_params]
        names = [p.name for p in self.numeric_params]
        if isinstance(case, sp.MatrixBase):
            return _matrix_kernel(sp.lambdify(args, list(case), modules=NUMPY_MODULES, cse=True), names, case.shape)
        fn = sp.lambdify(args, case, modules=NUMPY_MODULES, cse=True)

        def kernel(**kw):
            return fn(*[kw[n] for n in names]) + np.zeros(np.broadcast(*[np.asarray(kw[n]) for n in names]).shape
                                                          if names else ())
        return kernel

    @lru_cache(maxsize=None)
    def _mp_lambdified(self, key: tuple) -> Callable:
        args = [self.symbols[p.name] for p in self.numeric_params]
        return sp.lambdify(args, self._case(key), modules=MPMATH_MODULES)

    def mp(self, dps: int = 50, **values) -> mpmath.mpf:
        """Reference evaluation with mpmath at ``dps`` significant digits (scalars only; 5 <= dps <= MAX_DPS).

        Exact expressions (and ``mp_kernel``) are evaluated with growing guard precision until two successive
        evaluations agree to ``dps`` digits, so cancellation inside the expression never reaches the result;
        numeric routes carry their own error control. NumericalError if no convergence.
        """
        if isinstance(dps, bool) or not isinstance(dps, (int, np.integer)) or not 5 <= dps <= MAX_DPS:
            raise InputError(f"{self.name}: dps={dps!r} is not allowed; allowed: an integer >= 5 and <= {MAX_DPS}")
        dps = int(dps)
        key, _ = self._split(values)
        raw = {p.name: values.get(p.name, p.default) for p in self.numeric_params}
        for name, v in raw.items():
            if np.ndim(v):
                raise InputError(f"{self.name}: mp evaluation takes scalars; {name} is an array")
        self._check_conditions(key, {k: float(v) for k, v in raw.items()})
        case = self._case(key)
        with mpmath.workdps(dps):
            prec = mpmath.mp.prec
            args = {k: mpmath.mpf(v) for k, v in raw.items()}
        if self.limit is not None:
            with mpmath.workdps(dps):
                at_limit = self.limit(**args)
            if at_limit is not None:
                with mpmath.workdps(dps):
                    return mpmath.mpf(at_limit)
        if isinstance(case, NumericRoute):
            with mpmath.workdps(dps):
                out = case.mp(**args)
        else:
            if self.mp_kernel is not None:
                evaluate = lambda: self.mp_kernel(**dict(key), **args)  # noqa: E731
            else:
                fn = self._mp_lambdified(key)
                evaluate = lambda: fn(*[args[p.name] for p in self.numeric_params])  # noqa: E731
            out = self._converged(evaluate, prec, values)
        with mpmath.workdps(dps):
            if isinstance(out, mpmath.matrix):
                return _mp_matrix(self.name, out.apply(lambda v: +v), values)
            out = +out if isinstance(out, mpmath.mpc) else +mpmath.mpf(out)
        if isinstance(out, mpmath.mpc) or mpmath.isnan(out):
            raise NumericalError(f"{self.name}: mpmath gave {out} at valid input {values}")
        return out

    def _converged(self, evaluate, prec: int, values: dict):
        """evaluate() at prec + 20, 40, 80, ... guard bits until two successive results agree to prec bits."""
        prev, guard = None, 20
        while True:
            with mpmath.workprec(prec + guard):
                try:
                    cur = evaluate()
                except (ZeroDivisionError, OverflowError, ValueError):  # too little precision for an inner step
                    cur = None
            if cur is not None and prev is not None and _agree(prev, cur, prec):
                return cur
            if guard >= _MAX_GUARD_BITS:
                raise NumericalError(f"{self.name}: the mpmath evaluation did not converge with {guard} guard bits "
                                     f"at {values}")
            prev, guard = cur, guard * 2

    # --- printing --------------------------------------------------------------------------------
    def signature_parts(self) -> list:
        parts = []
        for p in self.params:
            parts.append(p.name if p.required else f"{p.name}={p.default}")
        return parts

    def signature(self) -> str:
        return f"{self.name}({', '.join(self.signature_parts())})"

    def latex(self, **structural) -> str:
        """LaTeX of the result: the specific case if structural values are given, else the general form."""
        from .latex import form_equation
        return form_equation(self, **structural)

    def _repr_latex_(self) -> str:
        return "$" + self.latex() + "$"

    def describe(self) -> dict:
        return {
            "name": self.name,
            "summary": self.summary,
            "parameters": [{"name": p.name, "kind": p.kind, "allowed": p.allowed(), "doc": p.doc,
                            **({} if p.required else {"default": p.default})} for p in self.params],
            "conditions": [c.text for c in self.conditions],
            "provenance": str(self.provenance),
            "accuracy": {"relative": None if self.accuracy.per_value else self.accuracy.relative,
                         "per_value": self.accuracy.per_value is not None, "reason": self.accuracy.reason},
            "domain": {"parameters": [{"name": p.name, "allowed": p.allowed()} for p in self.params],
                       "conditions": [c.text for c in self.conditions],
                       "text": self.domain_text()},
            "dps": {"minimum": 5, "maximum": MAX_DPS},
        }

    def domain_text(self) -> str:
        """One line: every parameter's allowed values and every condition (what evaluation accepts)."""
        parts = [f"{p.name}: {p.allowed()}" for p in self.params] + [c.text for c in self.conditions]
        return "; ".join(parts)

    def __hash__(self):
        return hash(self.name)

    def __eq__(self, other):
        return self is other


def _is_default(value, default) -> bool:
    """The given value equals the parameter's default (a CLI string is compared as a number)."""
    try:
        given = float(value) if isinstance(value, str) else value
        return bool(np.all(np.asarray(given, dtype=float) == float(default)))
    except (TypeError, ValueError):
        return value == default


def _keyword_test(fn: Callable, names: list) -> Callable:
    """A Condition's exact NumPy test called positionally, like the lambdified relations (arguments in ``names``)."""
    return lambda *values: fn(**dict(zip(names, values)))


def _matrix_kernel(fn, names: list, shape: tuple) -> Callable:
    """NumPy kernel of a matrix-valued form: broadcast shape of the parameters + the matrix shape."""
    def kernel(**kw):
        values = [np.asarray(kw[n], dtype=float) for n in names]
        base = np.broadcast(*values).shape if names else ()
        entries = [np.broadcast_to(np.asarray(e, dtype=float), base) for e in fn(*values)]
        return np.stack(entries, axis=-1).reshape(base + shape)
    return kernel


def _agree(a, b, prec: int) -> bool:
    """Two mpf (or matrices) agree to ``prec`` bits relative (exact zeros agree with zeros)."""
    pairs = ([(a[i, j], b[i, j]) for i in range(a.rows) for j in range(a.cols)] if isinstance(a, mpmath.matrix)
             else [(a, b)])
    tol = mpmath.ldexp(1, -prec)
    for x, y in pairs:
        if isinstance(x, mpmath.mpc) or isinstance(y, mpmath.mpc):
            return False
        if mpmath.isnan(x) or mpmath.isnan(y):
            return False
        if x != y and abs(x - y) > tol * abs(y):
            return False
    return True


def _mp_matrix(name: str, out, values: dict):
    """Check an mpmath matrix result entry by entry (real, not NaN) and return it."""
    for i in range(out.rows):
        for j in range(out.cols):
            if isinstance(out[i, j], mpmath.mpc) or mpmath.isnan(out[i, j]):
                raise NumericalError(f"{name}: mpmath gave {out[i, j]} at valid input {values}")
    return out
