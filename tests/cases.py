"""The structural cases of a form (activation kinds, norm placements, depths, ...), shared by the registry-wide
tests (tests/test_domain.py, tests/test_registry_kernels.py).

``structural_cases(form)`` is the full product of every structural parameter's values (choices: all of them;
integers: the minimum, a few small steps above it and the maximum). Forms with several switches have hundreds of
cases (depth.gamma 504, resnet.gamma 1008), so the tests run ``selected_cases(form, n)``: a *covering* set in which
every value of every structural parameter occurs at least once (the i-th case takes each parameter's i-th value,
cyclically), plus up to ``n`` cases evenly spaced over the full product.
"""
from __future__ import annotations


def parameter_values(p, steps=(0, 1, 2, 3, 5, 8), maximum=True) -> list:
    """The values a test tries for one structural parameter: every choice, or min + steps (and the maximum)."""
    if p.kind == "choice":
        return list(p.choices)
    lo = p.minimum if p.minimum is not None else 0
    values = {lo + s for s in steps} | ({p.maximum} if p.maximum is not None and maximum else set())
    return sorted(v for v in values if p.maximum is None or v <= p.maximum) + ([p.default] if _optional(p) else [])


def structural_cases(form, steps=(0, 1, 2, 3, 5, 8), maximum=True) -> list:
    """Every combination of the structural parameters' values (``[{}]`` for a form without any)."""
    cases = [{}]
    for p in form.structural_params:
        cases = [dict(c, **{p.name: v}) for c in cases for v in parameter_values(p, steps, maximum)]
    return cases


def _optional(p) -> bool:
    """A structural integer whose default is +inf (a limit: depth.gamma's width N): the covering cases keep it at
    the default and add one case per other value, so the limit keeps its full coverage."""
    return p.kind == "integer" and p.allow_inf and p.default == float("inf")


def covering_cases(form, steps=(0, 1, 2, 3, 5, 8), maximum=True) -> list:
    """As few cases as the longest value list, in which every value of every structural parameter occurs
    (optional parameters, ``_optional``: at their default, plus one case per other value)."""
    params = form.structural_params
    values = {p.name: parameter_values(p, steps, maximum) for p in params if not _optional(p)}
    n = max((len(v) for v in values.values()), default=1)
    base = [{name: vs[i % len(vs)] for name, vs in values.items()} for i in range(n)]
    extra = [dict(base[i % n], **{p.name: v}) for p in params if _optional(p)
             for i, v in enumerate(parameter_values(p, steps, maximum)) if v != p.default]
    return base + extra


def spread(cases: list, n: int) -> list:
    """At most ``n`` cases evenly spaced over ``cases`` (first and order kept)."""
    step = max(1, -(-len(cases) // n))
    return cases[::step]


def selected_cases(form, n: int, steps=(0, 1, 2, 3, 5, 8), maximum=True, keep=lambda case: True) -> list:
    """The covering cases plus up to ``n`` evenly spaced ones, without repeats, each passing ``keep``
    (``maximum``: include each integer parameter's maximum)."""
    out = []
    full = [c for c in structural_cases(form, steps, maximum) if keep(c)]
    for case in covering_cases(form, steps, maximum) + spread(full, n):
        if keep(case) and case not in out:
            out.append(case)
    return out
