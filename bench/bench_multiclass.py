"""Multiclass kernels for 10^3 (gamma, C) points (issue 13: "multiclass.var and multiclass.cdf in seconds").

Timed through ``form.numpy`` (input validation included), one call per form over all points:
- multiclass.var at 10^3 distinct (gamma, C), gamma log-uniform in [1e-2, 1e2], C log-uniform in [2, 1000]
  (deterministic 2-d quadrature: cost independent of C);
- multiclass.cdf at 10^3 points: (a) 10^3 values of g at each of a few (gamma, C) (one conditional Monte Carlo engine
  per pair, reused for every g) and (b) 10^3 distinct (gamma, C) pairs with C in [2, 100] (one engine each: the cost
  is ~ n_draws(C) (C - 1) n_w, i.e. linear in C up to C = 30 and flat above, where the draws fall as 1/C);
- the per-pair cost of one cdf engine at C = 3, 10, 100, 1000, 10000.
Run: python bench/bench_multiclass.py [--points N]. Times are wall clock on whatever the machine is doing.
Measured on the shared 2-core machine at load 10-14 (so several times slower than idle): var 30 ms/point (10^3 points
in 30 s); cdf 1000 g at one pair 8-22 s (C = 3..1000); one cdf engine 0.35 s (C <= 100), 2.4 s (C = 1000), so 10^3
distinct (gamma, C) pairs take ~8 min: the cdf is not "seconds" for 10^3 distinct pairs (see the README).
"""
import argparse
import time

import numpy as np

import igbsym
from igbsym.families import multiclass as fam


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--points", type=int, default=1000)
    n = ap.parse_args().points
    rng = np.random.default_rng(0)
    gamma = np.exp(rng.uniform(np.log(1e-2), np.log(1e2), n))
    C = np.round(np.exp(rng.uniform(np.log(2), np.log(1000), n)))
    var = igbsym.get("multiclass.var")
    cdf = igbsym.get("multiclass.cdf")
    t, _ = timed(lambda: var.numpy(gamma=gamma, C=C))
    print(f"multiclass.var  {n} distinct (gamma, C), C <= 1000: {t:.2f} s ({1e3 * t / n:.2f} ms/point)")
    g = np.linspace(0.001, 0.999, n)
    for gm, cc in ((0.5, 3), (2.0, 10), (1.0, 100), (1.0, 1000)):
        fam._conditional.cache_clear()
        t, _ = timed(lambda: cdf.numpy(g=g, gamma=gm, C=cc))
        print(f"multiclass.cdf  {n} values of g at gamma={gm}, C={cc}: {t:.2f} s")
    small = np.round(np.exp(rng.uniform(np.log(2), np.log(100), n)))
    fam._conditional.cache_clear()
    t, _ = timed(lambda: cdf.numpy(g=rng.uniform(0.01, 0.99, n), gamma=gamma, C=small))
    print(f"multiclass.cdf  {n} distinct (gamma, C), C <= 100: {t:.1f} s ({1e3 * t / n:.0f} ms/point)")
    for cc in (3, 10, 100, 1000, 10000):
        fam._conditional.cache_clear()
        fam._others.cache_clear()
        t, _ = timed(lambda: cdf.numpy(g=0.5 / cc, gamma=1.0, C=cc))
        print(f"  one cdf engine at C={cc}: {t:.2f} s (n_draws={fam.n_draws(cc)})")


if __name__ == "__main__":
    main()
