"""Multiclass kernels for 10^3 (gamma, C) points (issue 13: "multiclass.var and multiclass.cdf in seconds").

Grid: 40 gamma log-spaced in [1e-3, 1e3] x 25 C log-spaced in [2, 1000] (rounded to integers; 24 distinct C),
one ``form.numpy`` call per form over all points (input validation included), tables cleared first (cold):
- multiclass.var (deterministic quadrature; the C of one gamma share one Phi_2 table);
- multiclass.cdf at g = 1/C (the mean fraction) per point (randomised QMC; the gammas of one C are built in one batch
  on the same base points, u = sqrt(gamma) xi), with the largest stated error bound (law_bound) over the grid;
- the cost of one cdf batch vs C (40 gammas at one C) up to C = 10^4, per point.
Run: python bench/bench_multiclass.py [--gammas 40 --classes 25]. Times are wall clock on whatever the machine is
doing (the shared 2-core machine is loaded: compare within one run).
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


def clear():
    fam._TABLES.clear()
    fam._others.cache_clear()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gammas", type=int, default=40)
    ap.add_argument("--classes", type=int, default=25)
    a = ap.parse_args()
    gammas = np.geomspace(1e-3, 1e3, a.gammas)
    classes = np.round(np.geomspace(2, 1000, a.classes))
    G, C = np.meshgrid(gammas, classes)
    n = G.size
    print(f"grid: {a.gammas} gamma in [1e-3, 1e3] x {a.classes} C in [2, 1000] ({np.unique(classes).size} distinct) "
          f"= {n} points")
    var, cdf = igbsym.get("multiclass.var"), igbsym.get("multiclass.cdf")
    t, _ = timed(lambda: var.numpy(gamma=G, C=C))
    print(f"multiclass.var  {n} points: {t:.2f} s ({1e3 * t / n:.2f} ms/point)")
    clear()
    t, F = timed(lambda: cdf.numpy(g=1 / C, gamma=G, C=C))
    print(f"multiclass.cdf  {n} points at g = 1/C: {t:.2f} s ({1e3 * t / n:.1f} ms/point)")
    bound = max(float(fam.law_bound(np.array([1 / c]), gm, int(c))[0])
                for gm, c in zip(G.ravel(), C.ravel()) if c >= 3)
    print(f"  largest stated error bound (99.99 %) on that grid: {bound:.4f}")
    t, _ = timed(lambda: cdf.numpy(g=np.linspace(0.001, 0.999, 1000), gamma=1.0, C=10))
    print(f"multiclass.cdf  1000 values of g at one cached (gamma, C): {t:.3f} s")
    print("cost vs C (one batch of the 40 gammas at one C, cold; per (gamma, C) point):")
    for cc in (3, 10, 100, 1000, 3000, 10000):
        clear()
        t_base, _ = timed(lambda: fam._others(cc))
        t, _ = timed(lambda: cdf.numpy(g=1 / cc, gamma=gammas, C=cc))
        print(f"  C={cc:>5}: {t:.2f} s for {gammas.size} gammas ({1e3 * t / gammas.size:.0f} ms/point; "
              f"base points {t_base:.2f} s, {fam.K_SCRAMBLES} x {2 ** fam.points_log2(cc)} rows per gamma)")


if __name__ == "__main__":
    main()
