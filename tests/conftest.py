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
    """Every family's derivation, run once per session (test_coverage, test_latex)."""
    import derivations
    return [derivations.run(fam) for fam in derivations.modules()]
