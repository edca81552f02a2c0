"""Registry-wide property: for every registered form and every *exact* structural case, the NumPy kernel agrees
with the mpmath evaluation of the exact expression at parameters Hypothesis draws from each parameter's kind
(rejecting draws that violate the form's conditions). Numeric routes (quadrature, recursions) have no exact
expression to compare with; each family's tests check them against an independent mpmath route. Family test files
also check tighter tolerances; this test makes sure no form — present or future — ships a kernel that disagrees
with its own exact expression."""
import math

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import igbsym
from igbsym.form import REQUIRED

from cases import selected_cases

RANGES = {"real": (-3.0, 3.0), "positive": (0.05, 5.0), "nonnegative": (0.0, 5.0)}


MAX_CASES = 12  # per form: the covering cases plus up to 12 evenly spaced over the structural product
CASES = [(f.name, case) for f in igbsym.forms()
         for case in selected_cases(f, MAX_CASES, steps=(0, 1, 3), maximum=False, keep=lambda c, f=f: f.is_exact(**c))]


def numeric_strategy(p):
    if p.kind == "integer":
        lo = p.minimum if p.minimum is not None else 0
        hi = min(p.maximum if p.maximum is not None else lo + 20, lo + 20)
        return st.integers(lo, hi)
    lo, hi = RANGES[p.kind]
    return st.floats(lo, hi)


def to_float(ref):
    """An mpf, or an mpmath matrix (matrix-valued forms), as float / float array."""
    if isinstance(ref, mpmath.matrix):
        return np.array(ref.tolist(), dtype=float)
    return np.asarray(ref, dtype=float)[()]


@pytest.mark.parametrize("name,case", CASES, ids=[f"{n}{c or ''}" for n, c in CASES])
@settings(max_examples=max(2, settings().max_examples // 4),  # ~300 cases: a quarter of the profile's budget each
          suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(data=st.data())
def test_numpy_kernel_agrees_with_mpmath(name, case, data):
    form = igbsym.get(name)
    params = dict(case)
    for p in form.numeric_params:
        params[p.name] = data.draw(numeric_strategy(p), label=p.name)
    try:
        value = form.numpy(**params)
    except igbsym.InputError:
        assume(False)  # the draw violates a stated condition: that is the condition working, not a failure
    value = np.asarray(value, dtype=float)
    ref_f = to_float(form.mp(30, **params))
    assert np.shape(value) == np.shape(ref_f)
    scale = np.maximum(np.abs(ref_f), 1e-300)
    with np.errstate(invalid="ignore"):      # inf − inf where both are +inf (γ_∞ in the ordered phase): err 0 there
        err = np.where(np.isinf(ref_f), np.where(value == ref_f, 0.0, np.inf), np.abs(value - ref_f) / scale)
        assert np.all((err <= 1e-9) | (np.abs(value - ref_f) <= 1e-13)), (params, value, ref_f)
    assert not math.isnan(float(np.max(err)))


def test_every_parameter_default_is_allowed():
    for form in igbsym.forms():
        for p in form.params:
            if p.default is not REQUIRED and p.default is not None:
                p.check_scalar(form.name, p.default)
