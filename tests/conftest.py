"""Hypothesis profiles: ``ci`` (derandomised, no database, no deadline; the default) and ``thorough``
(more examples), selected with the environment variable IGBSYM_HYPOTHESIS_PROFILE."""
import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, database=None, deadline=None, max_examples=25,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", deadline=None, max_examples=400,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("IGBSYM_HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def all_derivations():
    """Every family's derivation, run once per session (under pytest-xdist: once per worker that runs
    test_coverage or test_latex)."""
    from igbsym import derivations
    return [derivations.run(fam) for fam in derivations.modules()]


# --- no vacuous pytest.approx ----------------------------------------------------------------------------------
# pytest.approx adds a default absolute tolerance of 1e-12, so approx(ref, rel=1e-13) with ref = 1e-41 accepts any
# value below 1e-12: four NumPy checks of tiny γ could not fail. A nonzero expected value below 1e-10 must state
# its abs= (usually abs=0).
_approx = pytest.approx


def _strict_approx(expected, *args, **kwargs):
    import numpy as np
    if "abs" not in kwargs and len(args) < 2:
        try:
            values = np.abs(np.asarray(expected, dtype=float)).ravel()
        except (TypeError, ValueError):
            values = np.array([])
        tiny = values[(values > 0) & (values < 1e-10)]
        if tiny.size:
            raise AssertionError(f"pytest.approx({tiny[0]:.3g}, ...) without abs=: the default abs=1e-12 makes the "
                                 "comparison vacuous; state abs= (e.g. abs=0)")
    return _approx(expected, *args, **kwargs)


pytest.approx = _strict_approx
