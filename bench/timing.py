"""Shared timing helper for the bench scripts (run as ``python bench/<script>.py``, so this is importable)."""
import time


def best_of(fn, repeat=5):
    """The fastest of ``repeat`` wall-clock timings of ``fn()``, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best
