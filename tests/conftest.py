"""Hypothesis profiles: ``ci`` (derandomised, no database, no deadline; the default) and ``thorough``
(more examples), selected with the environment variable IGBSYM_HYPOTHESIS_PROFILE."""
import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, database=None, deadline=None, max_examples=25,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", deadline=None, max_examples=400,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("IGBSYM_HYPOTHESIS_PROFILE", "ci"))
