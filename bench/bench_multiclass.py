"""Multiclass kernels for 10^3 (gamma, C) points (issue 13: "multiclass.var and multiclass.cdf in seconds").

Grid: 40 gamma log-spaced in [1e-3, 1e3] x 25 C log-spaced in [2, 1000] (rounded to integers; 24 distinct C),
one ``form.numpy`` call per form over all points (input validation included), tables and base points cleared first
(cold):
- multiclass.var (deterministic quadrature; the C of one gamma share one Phi_2 table);
- multiclass.cdf at g = 1/C (the mean fraction) per point (randomised QMC; the gammas of one C are built in one batch
  on the same base points, u = sqrt(gamma) xi; the product over the other means by lattice bins with a Taylor
  remainder for C >= BINNED_FROM), with the largest stated error bound (law_bound) and the largest part of it due to
  the binning (_Table.taylor_error) over the grid;
- with --compare, the same cdf call with the exact product over the other means (the route before the binning;
  C < BINNED_FROM always uses it) in the same run, and the largest difference of the two;
- the cost of one cdf batch vs C (40 gammas at one C) up to C = 10^4, per point.
- issue 27 (deterministic routes): multiclass.var on the grid (2-d quadrature to 1e-12 relative, one Phi_2 table
  per gamma shared by its C),
  multiclass.max_fraction at D = inf on the grid (the same quadrature; was Monte Carlo), and per point at C = 3:
  cdf / pdf (1-d integral, 1e-10 relative), p_empty (rare events included) and entropy (2-d log-space quadrature),
  each as a ratio to the route it replaced. OLD: the replaced routes' times, measured at the start of the issue-27
  work on this machine (commit 5cd1c49, load ~1): var 1.77 s for the 1000-point grid (shared Phi_2 tables, 5e-9
  absolute); max_fraction 0.77 s per point at (gamma, C) = (10, 100) (Monte Carlo, 2.9 % off); cdf 0.19 s at
  C = 3 (first call, QMC, absolute 0.03), 0.10 s at C = 1e4; p_empty 0.008 s at (0.1, 3, 1000) (cached QMC
  tables: 2.1e-4 for 1.1e-13). Times are wall clock on a shared machine: the ratios are indicative.
  Measured after the shared-table change (one Phi_2 table per gamma; this bench, load ~3): var 3.9 s for the grid
  (2.2x the old route, was 15-25 s = 9-14x), max_fraction 3.6 s for the grid.
Run: python bench/bench_multiclass.py [--gammas 40 --classes 25 --compare]. BLAS runs at 1 thread unless
OPENBLAS_NUM_THREADS / OMP_NUM_THREADS say otherwise (on the loaded shared 2-core machine a 2-thread BLAS stalls the
many mid-sized products up to 100x). Times are wall clock on whatever the machine is doing: compare within one run.
"""
import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import igbsym  # noqa: E402
from igbsym.families import multiclass as fam  # noqa: E402


OLD = {"var_grid": 1.77, "max_point": 0.77, "cdf3": 0.19, "cdf1e4": 0.10, "p_empty3": 0.008}   # see the docstring


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def clear(nets: bool = True):
    """Forget the law tables and base points (nets=False keeps the scrambled Sobol nets, shared by every C)."""
    fam._TABLES.clear()
    fam._others.cache_clear()
    fam._taylor_table.cache_clear()
    if nets:
        fam._sobol_nets.cache_clear()


def cdf_grid(G, C, exact: bool):
    """(seconds, values) of multiclass.cdf at g = 1/C on the grid, cold; exact=True: the exact-product route."""
    clear()
    binned_from = fam.BINNED_FROM
    fam.BINNED_FROM = fam.C_MAX + 1 if exact else binned_from
    try:
        return timed(lambda: igbsym.get("multiclass.cdf").numpy(g=1 / C, gamma=G, C=C))
    finally:
        fam.BINNED_FROM = binned_from


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gammas", type=int, default=40)
    ap.add_argument("--classes", type=int, default=25)
    ap.add_argument("--compare", action="store_true", help="also time the exact-product route (slow: ~1 min)")
    a = ap.parse_args()
    gammas = np.geomspace(1e-3, 1e3, a.gammas)
    classes = np.round(np.geomspace(2, 1000, a.classes))
    G, C = np.meshgrid(gammas, classes)
    n = G.size
    print(f"grid: {a.gammas} gamma in [1e-3, 1e3] x {a.classes} C in [2, 1000] ({np.unique(classes).size} distinct) "
          f"= {n} points; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, BLAS threads "
          f"{os.environ['OPENBLAS_NUM_THREADS']}")
    t, _ = timed(lambda: igbsym.get("multiclass.var").numpy(gamma=G, C=C))
    print(f"multiclass.var  {n} points: {t:.2f} s ({1e3 * t / n:.2f} ms/point); old route {OLD['var_grid']:.2f} s: "
          f"{t / OLD['var_grid']:.1f}x the time at 1e-12 relative instead of 5e-9 absolute")
    t, _ = timed(lambda: igbsym.get("multiclass.max_fraction").numpy(gamma=G, C=C))
    print(f"multiclass.max_fraction (D = inf) {n} points: {t:.2f} s ({1e3 * t / n:.2f} ms/point); old Monte Carlo "
          f"{OLD['max_point']:.2f} s per point: {OLD['max_point'] * n / t:.0f}x faster per point")
    for name, kw, old in (("cdf", dict(g=1 / 6, gamma=3.0, C=3), OLD["cdf3"]),
                          ("pdf", dict(g=1 / 6, gamma=3.0, C=3), OLD["cdf3"]),
                          ("p_empty", dict(gamma=0.1, C=3, D=1000), OLD["p_empty3"]),
                          ("entropy", dict(gamma=1.0, C=3), None)):
        t, v = timed(lambda name=name, kw=kw: igbsym.get(f"multiclass.{name}").numpy(**kw))
        print(f"multiclass.{name} {kw}: {float(v):.12g} in {t:.3f} s" + (f" ({t / old:.1f}x the old route)" if old
                                                                          else ""))
    t_new, F = cdf_grid(G, C, exact=False)
    print(f"multiclass.cdf  {n} points at g = 1/C: {t_new:.2f} s ({1e3 * t_new / n:.1f} ms/point; binned products "
          f"for C >= {fam.BINNED_FROM})")
    pts = [(gm, int(c)) for gm, c in zip(G.ravel(), C.ravel()) if c >= 3]
    bound = max(float(fam.law_bound(np.array([1 / c]), gm, c)[0]) for gm, c in pts)
    taylor = max(float(fam._tables([gm], c)[gm].taylor_error(np.array([1 / c]))[0]) for gm, c in pts)
    eta = max(fam._tables([gm], c)[gm].eta for gm, c in pts)
    print(f"  largest stated error bound (99.99 %) on that grid: {bound:.4f}; of it from the binning: {taylor:.1e} "
          f"(largest eta, the bound on |log H_hat - log H|: {eta:.1e})")
    if a.compare:
        t_old, F_old = cdf_grid(G, C, exact=True)
        print(f"  exact-product route (before the binning), same run: {t_old:.2f} s ({1e3 * t_old / n:.1f} ms/point): "
              f"{t_old / t_new:.1f}x slower; largest |difference| {np.abs(F - F_old).max():.1e}")
    t, _ = timed(lambda: igbsym.get("multiclass.cdf").numpy(g=np.linspace(0.001, 0.999, 1000), gamma=1.0, C=10))
    print(f"multiclass.cdf  1000 values of g at one cached (gamma, C): {t:.3f} s")
    clear()
    t_nets, _ = timed(fam._sobol_nets)
    print(f"cost vs C (one batch of the {gammas.size} gammas at one C, cold but for the scrambled nets shared by all "
          f"C, {t_nets:.2f} s once; per (gamma, C) point, base points included):")
    print("  |      C | ms per point | base points (s) | rows per gamma |")
    for cc in (3, 10, 100, 1000, 3000, 10000):
        clear(nets=False)
        t_base, _ = timed(lambda cc=cc: fam._others(cc))
        t, _ = timed(lambda cc=cc: igbsym.get("multiclass.cdf").numpy(g=1 / cc, gamma=gammas, C=cc))
        print(f"  | {cc:>6} | {1e3 * (t + t_base) / gammas.size:>12.1f} | {t_base:>15.2f} | "
              f"{fam.K_SCRAMBLES} x {2 ** fam.points_log2(cc):<9} |")


if __name__ == "__main__":
    main()
