"""Every form, every point of its declared domain: the right value, a documented error, or nothing (issue 17).

For every registered form and structural case, Hypothesis draws points over the *whole* declared domain — each
numeric parameter from its kind (``real``: 0, ±1, uniform in [-5, 5], ±10^e for e in [-320, 308], 1/2 ± 10^-e,
1 ± 10^-e; ``positive`` / ``nonnegative`` the same restricted to the kind; ``integer`` from its minimum up to its
maximum, or 10^30 when it has none, on a log scale) — and checks, at each point:

* validity is decided independently of the code under test: each condition is evaluated exactly by SymPy at the
  point's exact rational value. A point outside the declared domain must raise ``InputError`` naming the form; a
  point inside must not (what ``list --json`` advertises is what evaluation accepts).
* the reference is *converged*: ``mp(30)`` and ``mp(50)`` agree to 1e-20 relative, 8 orders below the loosest
  accuracy checked (a reference route that is itself wrong undermines everything that trusts it). The pair was
  50/100 digits; the quadrature routes' cost grows steeply with the digits (maxpool, activation and depth at 100
  digits: > 20 s a point), and 30/50 agreeing to 1e-20 is as honest a convergence proof for a 1e-12 check.
* each point has a limit of POINT_SECONDS of CPU time (SIGPROF, so a loaded machine does not fail a point; a hang
  fails after WALL_FACTOR x that of wall time); exceeding it is a failure ("timeout"), never a skip.
* cases: for forms with several structural switches, the covering set (every value of every switch at least once)
  plus up to MAX_CASES spread over the full product (tests/cases.py, shared with test_registry_kernels.py); for
  each case, Hypothesis draws random points and ``test_every_corner_of_the_declared_domain`` checks every
  parameter at its extremes (the ends of the double range, 0, the integer bounds) deterministically.
* the NumPy value agrees with the reference to the form's stated accuracy (``form.accuracy``, 1e-12 relative by
  default, or the bound the form states for this very value, ``form.relative_bound``; magnitudes below 1e-300 are
  compared absolutely at 1e-300·rel; a true value beyond the double range may come back as ±inf of the right sign),
  or a ``NumericalError`` is raised where the true value is not an ordinary double (|value| > 1.8e308, or
  0 < |value| < 2.2e-308 where only a subnormal or 0 could be returned) — never another exception, never a silent
  mismatch.
* an array call (the point next to another drawn point) gives the scalar call's value within 1 ulp.

``python tests/test_domain.py [--points N] [--seed S]`` prints the per-form worst relative error over a seeded
sweep of the same generator (the before/after table of the issue's closing note).
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import random
import signal
import subprocess
import sys
import threading
import time
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

import igbsym
from igbsym.errors import InputError, NumericalError

from cases import selected_cases
from igbsym.gauss import bvn_cdf


DBL_MAX = float(np.finfo(float).max)
DBL_MIN = float(np.finfo(float).tiny)   # the smallest normal double (2.2e-308)
TINY = 1e-300            # below this magnitude values are compared absolutely (TINY·rel)
REF_DPS = (30, 50)       # the reference: mp at these two precisions must agree to CONVERGED
CONVERGED = mpmath.mpf("1e-20")   # 8 orders below the loosest checked accuracy (1e-12): a converged reference
# per-point CPU-time limit (NumPy + both mp references + the array call); exceeding it fails
POINT_SECONDS = float(os.environ.get("IGBSYM_DOMAIN_POINT_SECONDS", 30))
UNBOUNDED_INT = 10**30   # largest drawn value of an integer parameter with no maximum


# --- the point generator (shared by Hypothesis and the sweep table) -------------------------------------------
def _float_value(kind: str, rnd: random.Random) -> float:
    pick = rnd.randrange(7)
    if pick == 0:
        v = rnd.choice([0.0, 1.0, -1.0, 0.5, 2.0, 3.0])
    elif pick == 1:
        v = rnd.uniform(-5, 5)
    elif pick in (2, 3):
        e = rnd.choice([-320.0, 308.0, rnd.uniform(-320, 308), rnd.uniform(-20, 20)])
        v = min(10.0 ** e, DBL_MAX) * (1 if pick == 2 else -1)
    else:
        centre = rnd.choice([0.5, 1.0])
        v = centre + rnd.choice([-1, 1]) * 10.0 ** rnd.uniform(-17, 0)
    if kind == "positive":
        v = abs(v) or 10.0 ** rnd.uniform(-320, 308)
    elif kind == "nonnegative":
        v = abs(v)
    return v


def _int_value(p, rnd: random.Random) -> int:
    lo = p.minimum if p.minimum is not None else -UNBOUNDED_INT
    lo = max(lo, 0) if p.minimum is None else lo
    hi = p.maximum if p.maximum is not None else UNBOUNDED_INT
    if rnd.random() < 0.4:
        return min(hi, lo + rnd.randrange(6))
    if rnd.random() < 0.1:
        return hi
    return min(hi, lo + int(10 ** rnd.uniform(0, math.log10(hi - lo + 1))))


def draw_point(form, rnd: random.Random) -> dict:
    return {p.name: (_int_value(p, rnd) if p.kind == "integer" else _float_value(p.kind, rnd))
            for p in form.numeric_params}


def _extremes(p) -> list:
    """A parameter's extreme and typical values: the ends of its kind's double range, 0, ±1, its integer bounds."""
    if p.kind == "integer":
        lo = p.minimum if p.minimum is not None else 0
        return sorted({lo, lo + 1, p.maximum if p.maximum is not None else UNBOUNDED_INT})
    tiny = 5e-324
    return {"real": [-DBL_MAX, -1.0, -tiny, 0.0, tiny, 1.0, DBL_MAX], "positive": [tiny, 1.0, DBL_MAX],
            "nonnegative": [0.0, tiny, 1.0, DBL_MAX]}[p.kind]


def _typical(p):
    return p.minimum + 1 if p.kind == "integer" and p.minimum is not None else 1.0 if p.kind != "integer" else 1


def corner_points(form) -> list:
    """Every parameter at each of its extremes with the others typical, plus all at their lowest / highest: the
    points a random draw reaches rarely, checked on every run (they are the ones issue 17 found broken)."""
    params = form.numeric_params
    typical = {p.name: _typical(p) for p in params}
    out = [{p.name: _extremes(p)[0] for p in params}, {p.name: _extremes(p)[-1] for p in params}]
    out += [dict(typical, **{p.name: v}) for p in params for v in _extremes(p)]
    unique = []
    for pt in out:
        if pt not in unique:
            unique.append(pt)
    return unique


# --- exact validity -----------------------------------------------------------------------------------------------
def _exact(v):
    return sp.Integer(v) if isinstance(v, int) else sp.Rational(Fraction(v))


def in_domain(form, case: dict, point: dict) -> bool:
    """The declared domain decided exactly (SymPy on the point's exact rational values)."""
    subs = {form.symbols[k]: _exact(v) for k, v in point.items()}
    subs.update({form.symbols[k]: v for k, v in case.items() if k in form.symbols})
    return all(bool(c.relation.subs(subs)) for c in form.conditions if c.binds(case))


# --- comparison ---------------------------------------------------------------------------------------------------
def _as_mp_list(ref) -> list:
    return [ref[i, j] for i in range(ref.rows) for j in range(ref.cols)] if isinstance(ref, mpmath.matrix) else [ref]


def rel_error(value, ref) -> float:
    """Worst relative error of a float (array) against an mpf (matrix); see the module docstring for the rules."""
    got = np.asarray(value, dtype=float).ravel()
    worst = 0.0
    for g, r in zip(got, _as_mp_list(ref)):
        if abs(r) > DBL_MAX:
            err = 0.0 if (math.isinf(g) and (g > 0) == (r > 0)) or abs(g) > DBL_MAX else math.inf
        elif not math.isfinite(g):
            err = math.inf
        else:
            err = float(abs(mpmath.mpf(g) - r) / max(abs(r), mpmath.mpf(TINY)))
        worst = max(worst, err)
    return worst


def converged(ref_low, ref_high) -> bool:
    return all(abs(a - b) <= CONVERGED * max(abs(b), mpmath.mpf(TINY)) or (mpmath.isinf(a) and a == b)
               for a, b in zip(_as_mp_list(ref_low), _as_mp_list(ref_high)))


def within_ulp(array_value, scalar_value) -> bool:
    a, s = np.asarray(array_value, float), np.asarray(scalar_value, float)
    with np.errstate(invalid="ignore"):   # inf - inf where both are the same infinity (then a == s)
        return bool(np.all((a == s) | (np.abs(a - s) <= np.spacing(np.abs(s)))))


def _array_point(form, p1: dict, p2: dict) -> dict:
    return {p.name: np.array([p1[p.name], p2[p.name]], dtype=float) for p in form.numeric_params}


def _first(value):
    return np.asarray(value)[0]


# --- forms whose accuracy is stated per value --------------------------------------------------------------------
# A form with Accuracy.per_value (multiclass: randomised QMC, quadratures with their error estimates) states the
# relative error of each value it returns (``stated_bound``). Where the form has an mp reference (C = 2, gamma in
# {0, inf}) the value must be within that bound of it; where its mp route has none (it raises NumericalError, e.g.
# C >= 3) the point is checked against the form's documented guarantees instead (``guarantee_failure``): the value's
# range, the identities between forms, the stated bound itself (a number >= 0 or inf, never NaN), and, at C = 3, an
# independent reference (the exact 2-d quadrature of the law, a 3-d Gauss-Hermite rule for Var) within that bound.
GUARANTEED = ("multiclass.cdf", "multiclass.pdf", "multiclass.p_empty", "multiclass.n_empty", "multiclass.var",
              "multiclass.max_fraction", "multiclass.max_fraction_cdf", "multiclass.entropy")


def stated_bound(form, case: dict, point: dict) -> float:
    """The relative error the form states at this point: its per-value bound (the largest over an array point), else
    its structural case's."""
    if form.accuracy.per_value is None:
        return form.accuracy.at(case)
    return float(np.max(form.relative_bound(**case, **point)))


def _value_range(name: str, C: int):
    """The documented range of each form's value at C classes (G_c, max_c G_c in [0, 1], sum_c G_c = 1)."""
    return {"multiclass.cdf": (0, 1), "multiclass.pdf": (0, math.inf), "multiclass.p_empty": (0, 1),
            "multiclass.n_empty": (0, C), "multiclass.var": (0, (1 - 1 / C) / C),   # Var G <= E G (1 - E G)
            "multiclass.max_fraction": (1 / C, 1), "multiclass.max_fraction_cdf": (0, 1),
            "multiclass.entropy": (0, math.log(C))}[name]


def guarantee_failure(form, point: dict, value) -> str:
    """'' if the value meets the form's documented guarantees at the point, else what failed (see above)."""
    from igbsym.multiclass_numerics import law
    name, v, C = form.name, float(value), int(point["C"])
    lo, hi = _value_range(name, C)
    slack = 1e-12 * max(1.0, abs(hi) if math.isfinite(hi) else 1.0)
    if not (lo - slack <= v <= hi + slack):
        return f"value {v!r} outside the documented range [{lo:g}, {hi:g}]"
    try:
        stated = stated_bound(form, {}, point)
    except NumericalError as e:
        return f"the stated bound is not a number >= 0: {e}"
    gamma = point.get("gamma")
    if name == "multiclass.cdf":
        g2 = point["g"] + (1 - point["g"]) / 2          # monotone in g, up to the stated bound
        pair = form.numpy(g=np.array([point["g"], g2]), gamma=gamma, C=C)
        bound = law.law_bound(np.array([point["g"], g2]), gamma, C)
        if pair[1] < pair[0] - bound.sum():
            return f"not monotone: F({g2!r}) = {pair[1]!r} < F(g) = {pair[0]!r} - bound {bound.sum():.3g}"
        if C == 3 and 1e-3 <= gamma <= 1e3:             # the exact C = 3 law (tests/test_multiclass_reference.py)
            from test_multiclass_reference import exact_cdf_three_classes
            ref = float(exact_cdf_three_classes(np.array([point["g"]]), gamma)[0])
            b = stated * ref + (5e-6 if gamma <= 30 else 2e-4)   # + the reference's own convergence (its docstring)
            if abs(v - ref) > b:
                return f"|{v!r} - exact C = 3 quadrature {ref!r}| > stated bound {b:.3g}"
    if name == "multiclass.n_empty":                     # documented as C times multiclass.p_empty
        p_empty = float(igbsym.get("multiclass.p_empty").numpy(gamma=gamma, C=C, D=point["D"]))
        if abs(v - C * p_empty) > 1e-12 * max(abs(v), 1e-300):
            return f"n_empty {v!r} != C p_empty = {C * p_empty!r}"
    if name == "multiclass.max_fraction_cdf" and point["g"] < 1 / C and v != 0:
        return f"P(max_c G_c <= {point['g']!r}) = {v!r}, but max_c G_c >= 1/C"
    if name == "multiclass.var" and C == 3 and 0.05 <= gamma <= 2:   # converged 3-d Gauss-Hermite (60 vs 80 nodes)
        refs = []
        for n in (60, 80):
            x, w = np.polynomial.hermite_e.hermegauss(n)
            w, s = w / w.sum(), math.sqrt(gamma)
            u, u1, u2 = np.meshgrid(s * x, s * x, s * x, indexing="ij")
            G = bvn_cdf((u - u1) / math.sqrt(2), (u - u2) / math.sqrt(2), 0.5)
            refs.append(float(np.einsum("i,j,k,ijk->", w, w, w, G * G)) - 1 / 9)
        if abs(refs[0] - refs[1]) > 1e-10 or abs(v - refs[1]) > form.accuracy.relative * v + 1e-10:
            return f"|{v!r} - 3-d Gauss-Hermite {refs[1]!r}| > stated bound {form.accuracy.relative:g} relative " \
                   f"(rule converged to {abs(refs[0] - refs[1]):.2g})"
    return ""


class Outcome:
    """What happened at one point: 'ok', 'input-error', 'numerical-error' (allowed) or a failure string."""

    def __init__(self, kind: str, err: float = 0.0, detail: str = ""):
        self.kind, self.err, self.detail = kind, err, detail

    @property
    def failed(self) -> bool:
        return self.kind not in ("ok", "input-error", "numerical-error")


class PointTimeout(BaseException):
    """A point exceeded its time limit (a BaseException, so no library ``except Exception`` can swallow it)."""


WALL_FACTOR = 10   # a point also fails after WALL_FACTOR x its CPU limit of wall time (a hang uses no CPU)


@contextlib.contextmanager
def time_limit(seconds: float):
    """Raise PointTimeout in the main thread after ``seconds`` of this process's CPU time (SIGPROF: the cost of the
    point, independent of how many other processes share the machine) or WALL_FACTOR x that of wall time (SIGALRM);
    no limit where interval timers are unavailable."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_cpu(*_):
        raise PointTimeout(f"point took longer than {seconds:g} s of CPU")

    def on_wall(*_):
        raise PointTimeout(f"point took longer than {WALL_FACTOR * seconds:g} s of wall time")
    previous = signal.signal(signal.SIGPROF, on_cpu), signal.signal(signal.SIGALRM, on_wall)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    signal.setitimer(signal.ITIMER_REAL, WALL_FACTOR * seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGPROF, previous[0])
        signal.signal(signal.SIGALRM, previous[1])


def check_point(form, case: dict, point: dict, other: dict | None = None, seconds: float = POINT_SECONDS) -> Outcome:
    """Every check of the module docstring at one point within ``seconds`` (a timeout is a failure, never a skip);
    ``other``: a second point for the array call."""
    try:
        with time_limit(seconds):
            return _check_point(form, case, point, other)
    except PointTimeout as e:
        return Outcome("timeout", math.inf, str(e))


def _check_point(form, case: dict, point: dict, other: dict | None) -> Outcome:
    valid = in_domain(form, case, point)
    try:
        value = form.numpy(**case, **point)
    except InputError as e:
        if valid:
            return Outcome("rejects-declared-domain", math.inf, str(e))
        if not str(e).startswith(form.name):
            return Outcome("error-names-other-form", math.inf, str(e))
        return Outcome("input-error")
    except NumericalError as e:
        value, numerical = None, e
    except Exception as e:  # noqa: BLE001 - any other exception is the failure this test exists to find
        return Outcome(f"numpy-{type(e).__name__}", math.inf, str(e)[:200])
    if not valid:
        return Outcome("accepts-outside-domain", math.inf, "")
    try:
        ref_low, ref_high = (form.mp(dps, **case, **point) for dps in REF_DPS)
    except NumericalError as e:
        if value is not None and form.name in GUARANTEED:   # relative or not: no fast mp route at C >= 3
            failure = guarantee_failure(form, point, value)   # no mp reference: the documented guarantees
            return Outcome("guarantee-failed", math.inf, failure) if failure else Outcome("ok")
        return Outcome("numerical-error" if value is None else "mp-numerical-error", 0.0 if value is None else
                       math.inf, str(e)[:200])
    except Exception as e:  # noqa: BLE001
        return Outcome(f"mp-{type(e).__name__}", math.inf, str(e)[:200])
    if not converged(ref_low, ref_high):
        return Outcome("mp-not-converged", math.inf, f"mp{REF_DPS[0]}={mpmath.nstr(_as_mp_list(ref_low)[0], 20)} "
                                                     f"mp{REF_DPS[1]}={mpmath.nstr(_as_mp_list(ref_high)[0], 20)}")
    if value is None:
        exists = all(r == 0 or DBL_MIN <= abs(r) <= DBL_MAX for r in _as_mp_list(ref_high))   # an ordinary double
        return Outcome("numerical-error-on-double" if exists else "numerical-error", math.inf if exists else 0.0,
                       f"{numerical}; true value {mpmath.nstr(_as_mp_list(ref_high)[0], 17)}"[:300])
    err = rel_error(value, ref_high)
    bound = stated_bound(form, case, point)
    if err > bound:
        return Outcome("inaccurate", err, f"numpy={value!r} mp={mpmath.nstr(_as_mp_list(ref_high)[0], 17)}")
    if other is not None:
        second = other if in_domain(form, case, other) else point
        try:
            arr = form.numpy(**case, **_array_point(form, point, second))
        except NumericalError:
            arr = None  # the other point may be beyond the double range; the scalar point was checked above
        except Exception as e:  # noqa: BLE001
            return Outcome(f"array-{type(e).__name__}", math.inf, str(e)[:200])
        if arr is not None and not within_ulp(_first(arr), value):
            return Outcome("array-differs-from-scalar", err, f"array={_first(arr)!r} scalar={value!r} "
                                                            f"other={second}")
    return Outcome("ok", err)


# --- the test -----------------------------------------------------------------------------------------------------
MAX_CASES = 6   # per form: the covering cases (every structural value once) plus up to 6 spread over the product
# IGBSYM_DOMAIN_FAMILIES=bn,kurtosis restricts the cases to those families (-k cannot: ids of other families
# contain e.g. 'activation')
FAMILIES = {f for f in os.environ.get("IGBSYM_DOMAIN_FAMILIES", "").split(",") if f}
CASES = [(f.name, case) for f in igbsym.forms() if not FAMILIES or f.family in FAMILIES
         for case in selected_cases(f, MAX_CASES)]
IDS = [f"{name}{case or ''}" for name, case in CASES]


def _examples() -> int:
    """The profile's examples spread over the ~240 cases: 1 per case in CI (25), 10 under thorough (400)."""
    return max(1, settings().max_examples // 40)


@pytest.mark.slow
@pytest.mark.parametrize("name,case", CASES, ids=IDS)
@settings(max_examples=_examples(), suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
          phases=[Phase.explicit, Phase.reuse, Phase.generate])   # no shrinking: the message names the point, and
@given(rnd=st.randoms(use_true_random=False))                    # re-running timeouts while shrinking costs hours
def test_every_point_of_the_declared_domain(name, case, rnd):
    form = igbsym.get(name)
    point, other = draw_point(form, rnd), draw_point(form, rnd)
    out = check_point(form, case, point, other)
    assert not out.failed, f"{name} {case} at {point}: {out.kind} (rel err {out.err:.3g}) {out.detail}"


@pytest.mark.slow
@pytest.mark.parametrize("name,case", CASES, ids=IDS)
def test_every_corner_of_the_declared_domain(name, case):
    """Each parameter at its extremes (the ends of the double range, 0, the integer bounds) with the others
    typical: checked deterministically, whatever the random draw reached."""
    form = igbsym.get(name)
    failures = []
    for point in corner_points(form):
        out = check_point(form, case, point)
        if out.failed:
            failures.append(f"{point}: {out.kind} (rel err {out.err:.3g}) {out.detail}")
    assert not failures, f"{name} {case}: " + "; ".join(failures)


def test_every_form_states_accuracy_and_domain():
    for form in igbsym.forms():
        d = form.describe()
        acc = d["accuracy"]
        if acc["per_value"]:          # stated for each value: no one bound over the domain, and the reason says how
            assert acc["relative"] is None and acc["reason"] and callable(form.accuracy.per_value), form.name
        else:
            assert 0 < acc["relative"] <= 1e-6
            assert (acc["relative"] == 1e-12) or acc["reason"], form.name
        assert [p["name"] for p in d["domain"]["parameters"]] == [p.name for p in form.params]


def test_forms_stated_per_value_have_guarantees_and_a_wrong_value_fails_them():
    """Every form whose accuracy is stated per value has documented guarantees checked where it has no mp reference
    (GUARANTEED), and a value off by more than its stated bound fails them."""
    assert {f.name for f in igbsym.forms() if f.accuracy.per_value is not None} <= set(GUARANTEED)
    cdf, point = igbsym.get("multiclass.cdf"), {"g": 0.3, "gamma": 1.0, "C": 3}
    assert guarantee_failure(cdf, point, cdf.numpy(**point)) == ""
    assert "exact C = 3" in guarantee_failure(cdf, point, cdf.numpy(**point) + 1e-5)   # > 1e-10 relative + 5e-6
    assert "range" in guarantee_failure(cdf, point, 1.5)
    var = igbsym.get("multiclass.var")
    assert guarantee_failure(var, {"gamma": 0.5, "C": 3}, var.numpy(gamma=0.5, C=3)) == ""
    assert "Gauss-Hermite" in guarantee_failure(var, {"gamma": 0.5, "C": 3}, var.numpy(gamma=0.5, C=3) + 2e-10)
    cdf2 = {"g": 0.3, "gamma": 1.0, "C": 2}          # an mp reference: the per-value bound is the tolerance
    assert check_point(cdf, {}, cdf2).kind == "ok" and stated_bound(cdf, {}, cdf2) == 1e-12


def test_show_and_list_state_every_forms_accuracy_and_domain(capsys):
    """``list --json`` (the CLI, in a subprocess) and ``show F`` print each form's stated accuracy and the domain
    that evaluation enforces (the same parameter kinds and conditions; the domain test above checks that
    evaluation accepts exactly that domain)."""
    from igbsym.cli import main
    run = subprocess.run([sys.executable, "-m", "igbsym", "list", "--json"], capture_output=True, text=True,
                         env=os.environ, check=True)
    listed = {d["name"]: d for d in json.loads(run.stdout)}
    assert set(listed) == {f.name for f in igbsym.forms()}
    for form in igbsym.forms():
        d = listed[form.name]
        per_value = form.accuracy.per_value is not None
        assert d["accuracy"] == {"relative": None if per_value else form.accuracy.relative, "per_value": per_value,
                                 "reason": form.accuracy.reason}
        assert d["domain"]["text"] == form.domain_text()
        assert d["domain"]["conditions"] == [c.text for c in form.conditions]
        assert [p["allowed"] for p in d["domain"]["parameters"]] == [p.allowed() for p in form.params]
        assert main(["show", form.name]) in (0, None)
        out = capsys.readouterr().out
        assert f"accuracy: {form.accuracy}" in out and f"domain: {form.domain_text()}" in out, form.name


def test_point_time_limit_counts_cpu_and_catches_a_hang():
    """The per-point limit fires on CPU spent (a busy loop) and, for a point that waits without using CPU, on
    WALL_FACTOR x the limit of wall time; both leave the timers off afterwards."""
    start = time.process_time()
    with pytest.raises(PointTimeout, match="CPU"):
        with time_limit(0.2):
            while True:
                pass
    assert 0.15 <= time.process_time() - start < 2   # the profiling timer and process_time tick differently
    with pytest.raises(PointTimeout, match="wall"):
        with time_limit(0.03):
            time.sleep(5)
    assert signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0) == signal.getitimer(signal.ITIMER_REAL)


def test_dps_is_capped_with_a_clear_message():
    from igbsym.form import MAX_DPS
    form = igbsym.get("igb.corr")
    value = form.mp(MAX_DPS, gamma=2)
    with mpmath.workdps(MAX_DPS):
        assert abs(value - mpmath.mpf(2) / 3) < mpmath.mpf(10) ** (5 - MAX_DPS)   # all MAX_DPS digits right
    with pytest.raises(InputError, match=f"<= {MAX_DPS}"):
        form.mp(MAX_DPS + 1, gamma=2)


# --- the sweep table (python tests/test_domain.py) ---------------------------------------------------------------
def sweep(points: int, seed: int, names=None, corners: bool = True):
    """{form name: (worst rel err over ok points, {failure kind: count}, example detail, seconds)} over the test's
    cases: the corner points plus ``points`` seeded random points per case."""
    rows = {}
    for f in igbsym.forms():
        if names and f.name not in names:
            continue
        worst, fails, detail, start = 0.0, {}, "", time.perf_counter()
        for case in selected_cases(f, MAX_CASES):
            rnd = random.Random(f"{seed}:{f.name}:{sorted(case.items())}")
            pairs = [(p, None) for p in corner_points(f)] if corners else []
            pairs += [(draw_point(f, rnd), draw_point(f, rnd)) for _ in range(points)]
            for p1, p2 in pairs:
                out = check_point(f, case, p1, p2)
                if out.failed:
                    fails[out.kind] = fails.get(out.kind, 0) + 1
                    detail = detail or f"{case} {p1} {out.detail}"[:240]
                if math.isfinite(out.err):
                    worst = max(worst, out.err)
        rows[f.name] = (worst, fails, detail, time.perf_counter() - start)
        print(f"{f.name:28s} {rows[f.name][3]:7.1f}s worst ok rel err {worst:9.2e}  failures {fails}  {detail}",
              flush=True)
    return rows


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description="per-form worst error over a seeded domain sweep")
    ap.add_argument("--points", type=int, default=10, help="random points per structural case")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-corners", action="store_true", help="skip the deterministic corner points")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    table = sweep(args.points, args.seed, set(args.names), corners=not args.no_corners)
    sys.exit(1 if any(row[1] for row in table.values()) else 0)
