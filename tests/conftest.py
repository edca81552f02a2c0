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
def all_derivations(tmp_path_factory):
    """Every family's derivation, each run once per test session: under pytest-xdist the workers share them through
    the session's common temporary folder (one pickle per family, written under a per-family lock), and a worker
    takes the families no other worker is running first, so two workers that need them all split the work."""
    from igbsym import derivations
    base = tmp_path_factory.getbasetemp()        # an xdist worker's is a child of the session's folder
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "igbsym-derivations"
    root.mkdir(exist_ok=True)
    return shared_results(derivations.modules(), derivations.run, root)


def shared_results(keys, compute, root):
    """[compute(k) for k in keys], each computed by one process of the session and read back by the others."""
    import fcntl
    import pickle
    import time
    done, pending = {}, list(keys)
    while pending:
        for key in list(pending):
            with open(root / f"{key}.lock", "w") as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue                                  # another worker is computing it: take the next one
                path = root / f"{key}.pickle"
                if path.exists():
                    done[key] = pickle.loads(path.read_bytes())
                else:
                    done[key] = compute(key)
                    part = path.with_suffix(".part")
                    part.write_bytes(pickle.dumps(done[key]))
                    part.rename(path)
            pending.remove(key)
        if pending:
            time.sleep(0.2)
    return [done[k] for k in keys]


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
