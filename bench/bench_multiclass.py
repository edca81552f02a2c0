"""Multiclass kernels for 10^3 (gamma, C) points (issue 13: "multiclass.var and multiclass.cdf in seconds").

Grid: 40 gamma log-spaced in [1e-3, 1e3] x 25 C log-spaced in [2, 1000] (rounded to integers; 24 distinct C),
one ``form.numpy`` call per form over all points (input validation included), tables and base points cleared first
(cold):
- multiclass.var (deterministic quadrature; the C of one gamma share one Phi_2 table);
- issue 27, C >= 4: multiclass.pdf with its own stated bound (the density's deterministic parts added to its
  scramble SE);
- issue 27, C >= 4: multiclass.cdf at g = 1/C per (gamma, C) point, cold, at C = 4 ... 10^4 (randomised QMC, 16
  scrambles of 2^12 ... 2^7 rows; at gamma up to 2 ... 10 the spherical-radial tables: common mode in closed form,
  radius by a Gauss rule, direction by a rotated product rule or control-variated QMC), with its stated relative
  bound, and those tables against the plain QMC tables (the old route there) as ratios of bound and time;
  p_empty (radially tilted at small gamma) and entropy (any D) as functionals of that law; with --compare, the
  binned products against the exact product on a
  sub-grid; finite-D max_fraction (QMC nets of the means) against the replaced i.i.d.-vector route run for the same
  time, as a ratio of variances; finite-D max_fraction_cdf likewise against the replaced empirical cdf; where
  exact_count_mean / exact_count_cdf route them, the count noise exact per vector against drawn counts on the same
  nets, as a ratio of variance x time;
- issue 27 (deterministic routes): multiclass.var on the grid (2-d quadrature to 1e-12 relative, one Phi_2 table
  per gamma shared by its C),
  multiclass.max_fraction at D = inf on the grid (the same quadrature; was Monte Carlo), and per point at C = 3:
  cdf / pdf (1-d integral, 1e-10 relative), p_empty (rare events included) and entropy (2-d log-space quadrature),
  each as a ratio to the route it replaced; max_fraction_cdf at C = 4, D = inf on the ordered gaps against the law
  tables' bracket route, as stated relative bounds and a time ratio. OLD: the replaced routes' times, measured at the
  start of the issue-27 work on this machine (commit 5cd1c49, load ~1): var 1.77 s for the 1000-point grid (shared
  Phi_2 tables, 5e-9 absolute); max_fraction 0.77 s per point at (gamma, C) = (10, 100) (Monte Carlo, 2.9 % off);
  cdf 0.19 s at C = 3 (first call, QMC, absolute 0.03), 0.10 s at C = 1e4; p_empty 0.008 s at (0.1, 3, 1000) (cached QMC
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
from igbsym.multiclass_numerics import (bounds, chamber, common, dominant, functionals, law, nets, products,  # noqa: E402
                                        spherical, vectors)

BINNED = products.BINNED_FROM


OLD = {"var_grid": 1.77, "max_point": 0.77, "cdf3": 0.19, "cdf1e4": 0.10, "p_empty3": 0.008}   # see the docstring


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def clear():
    """Forget the law tables and base points."""
    law._TABLES.clear()
    nets.other_means.cache_clear()
    spherical.power_feature_means.cache_clear()
    products._taylor_table.cache_clear()


def iid_se(gamma, C, D, seconds, stat, repeats):
    """SE of a replaced finite-D route run for ``seconds``: the mean of stat(v)(K/D) over batches of i.i.d. exact
    fraction vectors v (vector_samples), ``repeats`` multinomial draws each."""
    parts, t0, seed = [], time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds or seed < 2:
        v = vectors.vector_samples(gamma, C, seed=1000 + seed)
        parts.append(vectors.count_means(v, D, stat(v), 1000 + seed, repeats))
        seed += 1
    d = np.concatenate(parts)
    return d.std(0, ddof=1) / np.sqrt(d.shape[0])


def overtaken(v):     # max_fraction's old route: (max_c K_c - K_top)/D, top the largest G
    top = v.argmax(1)
    return lambda f: f.max(1) - f[np.arange(v.shape[0]), top]


def cdf_grid(G, C, exact: bool):
    """(seconds, values) of multiclass.cdf at g = 1/C on the grid, cold; exact=True: the exact-product route."""
    clear()
    binned_from = products.BINNED_FROM
    products.BINNED_FROM = common.C_MAX + 1 if exact else binned_from
    try:
        return timed(lambda: igbsym.get("multiclass.cdf").numpy(g=1 / C, gamma=G, C=C))
    finally:
        products.BINNED_FROM = binned_from


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
    grid_forms(G, C)
    c3_points()
    cold_points()
    pdf_bounds()
    spherical_vs_plain()
    finite_d()
    finite_d_cdf()
    count_noise()
    chamber_cdf()
    deep_tail()
    if a.compare:
        compare(G, C)


def grid_forms(G, C):
    """multiclass.var and max_fraction (D = inf) on the whole grid, one call each, against the old routes."""
    n = G.size
    t, _ = timed(lambda: igbsym.get("multiclass.var").numpy(gamma=G, C=C))
    print(f"multiclass.var  {n} points: {t:.2f} s ({1e3 * t / n:.2f} ms/point); old route {OLD['var_grid']:.2f} s: "
          f"{t / OLD['var_grid']:.1f}x the time at 1e-12 relative instead of 5e-9 absolute")
    t, _ = timed(lambda: igbsym.get("multiclass.max_fraction").numpy(gamma=G, C=C))
    print(f"multiclass.max_fraction (D = inf) {n} points: {t:.2f} s ({1e3 * t / n:.2f} ms/point); old Monte Carlo "
          f"{OLD['max_point']:.2f} s per point: {OLD['max_point'] * n / t:.0f}x faster per point")


def c3_points():
    """C = 3, per point: cdf / pdf / p_empty / entropy, against the routes they replaced."""
    for name, kw, old in (("cdf", dict(g=1 / 6, gamma=3.0, C=3), OLD["cdf3"]),
                          ("pdf", dict(g=1 / 6, gamma=3.0, C=3), OLD["cdf3"]),
                          ("p_empty", dict(gamma=0.1, C=3, D=1000), OLD["p_empty3"]),
                          ("entropy", dict(gamma=1.0, C=3), None)):
        t, v = timed(lambda name=name, kw=kw: igbsym.get(f"multiclass.{name}").numpy(**kw))
        print(f"multiclass.{name} {kw}: {float(v):.12g} in {t:.3f} s" + (f" ({t / old:.1f}x the old route)" if old
                                                                          else ""))


def cold_points():
    """C >= 4, per point, cold: cdf at g = 1/C, p_empty and entropy with their stated relative bounds."""
    print("C >= 4, per (gamma, C) point, cold (table built): value, stated relative bound (99.99 %), time")
    print("  | form | C | value | relative bound | s | old route |")
    for cc in (4, 10, 100, 1000, 10000):
        clear()
        t, v = timed(lambda cc=cc: igbsym.get("multiclass.cdf").numpy(g=1 / cc, gamma=1.0, C=cc))
        rb = float(law.law_relative_bound(np.array([1 / cc]), 1.0, cc)[0])
        old = f"{OLD['cdf1e4']:.2f} s, absolute <= 0.05: {t / OLD['cdf1e4']:.0f}x the time" if cc == 10000 else ""
        print(f"  | cdf(1/C, gamma = 1) | {cc} | {float(v):.8f} | {rb:.1e} | {t:.2f} | {old} |")
    for name, kw in (("p_empty", dict(gamma=0.467, C=10, D=400)), ("p_empty", dict(gamma=0.467, C=100, D=300)),
                     ("p_empty", dict(gamma=0.01, C=4, D=10**4)), ("entropy", dict(gamma=0.467, C=10)),
                     ("entropy", dict(gamma=0.467, C=10, D=400))):
        clear()
        t, v = timed(lambda name=name, kw=kw: igbsym.get(f"multiclass.{name}").numpy(**kw))
        rb = (functionals.p_empty_relative_bound(kw["gamma"], kw["C"], kw["D"]) if name == "p_empty"
              else functionals.entropy_se(kw["gamma"], kw["C"], kw.get("D", np.inf))[1] * common.T_FACTOR / float(v))
        print(f"  | {name} {kw} | {kw['C']} | {float(v):.8g} | {rb:.1e} | {t:.2f} | |")


def pdf_bounds():
    """The pdf's stated relative bound at C >= 4 against its statistical part alone, and their times."""
    print("pdf at C >= 4: the density's stated relative bound (pdf_relative_bound: 99.99 % with its deterministic "
          "parts) at g in [0.3/C, 2/C] (max), the statistical part alone (T x SE of the densities: what the pdf "
          "stated before), and the time of the bound over the value's (table built)")
    print("  | gamma | C | relative bound | T x SE alone | value s | bound s |")
    for gm, cc in ((0.1, 4), (1.0, 4), (1.0, 10), (0.01, 30), (3.0, 100), (1.0, 1000)):
        clear()
        g = np.geomspace(0.3 / cc, 2 / cc, 6)
        tv, v = timed(lambda g=g, gm=gm, cc=cc: law.pdf_numpy(g, gm, cc))
        tb, b = timed(lambda g=g, gm=gm, cc=cc: bounds.pdf_relative_bound(g, gm, cc))
        f = law.law_table(gm, cc).replicates(g)[1]
        alone = common.T_FACTOR * common.scramble_se(f) / f.mean(0)
        print(f"  | {gm} | {cc} | {np.max(b):.1e} | {np.max(alone):.1e} | {tv:.2f} | {tb:.2f} |")


def spherical_vs_plain():
    """The spherical-radial law tables against the plain QMC tables: stated bounds and times."""
    print("spherical-radial tables (centred others: radius by a Gauss rule, direction by a rotated product rule or "
          "control-variated QMC) against the plain QMC tables on the same (gamma, C), cold; stated relative bound "
          "at g in [1/(2C), 2/C] (max)")
    print("  | gamma | C | plain bound | s | spherical-radial bound | s | bound ratio | time ratio |")
    for gm, cc in ((0.1, 4), (1.0, 4), (0.1, 10), (1.0, 10), (0.1, 100), (0.3, 1000), (0.1, 10000)):
        g = np.geomspace(0.5 / cc, 2 / cc, 5)
        row = []
        for centred in (False, True):
            clear()
            t, (F, b) = timed(lambda centred=centred, gm=gm, cc=cc: law.table_bound(law.law_table(gm, cc, centred), g))
            row += [float(np.max(common.relative(F.mean(0), b))), t]
        print(f"  | {gm} | {cc} | {row[0]:.1e} | {row[1]:.2f} | {row[2]:.1e} | {row[3]:.2f} | "
              f"{row[0] / row[2]:.0f}x tighter | {row[3] / row[1]:.1f}x |")


def finite_d():
    """Finite D: entropy as a functional of the law, max_fraction on QMC nets against i.i.d. vectors."""
    print("finite D (issue 27): entropy as a functional of the law (no sampling), max_fraction sampled over QMC nets "
          "of the means to relative SE 1e-4 (or 2^m C = 2^17 per scramble)")
    for name, kw in (("entropy", dict(gamma=0.467, C=3, D=400)), ("entropy", dict(gamma=1.0, C=2, D=100)),
                     ("max_fraction", dict(gamma=0.467, C=10, D=400)),
                     ("max_fraction", dict(gamma=0.467, C=100, D=300)),
                     ("max_fraction", dict(gamma=0.1, C=1000, D=10_000))):
        clear()
        vectors.max_fraction_sampled.cache_clear()
        t, v = timed(lambda name=name, kw=kw: igbsym.get(f"multiclass.{name}").numpy(**kw))
        se_of = functionals.entropy_se if name == "entropy" else dominant.max_fraction_se
        se = se_of(kw["gamma"], kw["C"], kw["D"])[1]
        ratio = ""
        if name == "max_fraction":   # the old route: i.i.d. vectors, 16 draws each, for the same time
            old_se = iid_se(kw["gamma"], kw["C"], kw["D"], t, overtaken, vectors.COUNT_REPEATS)
            ratio = (f" | i.i.d. vectors for the same time: relative SE {old_se / float(v):.1e} "
                     f"(variance {(old_se / se) ** 2:.1f}x)")
        print(f"  | {name} {kw} | {float(v):.10g} | relative SE {se / float(v):.1e} | {t:.2f} s{ratio} |")


def finite_d_cdf():
    """Finite-D max_fraction_cdf on QMC nets against the replaced empirical cdf, same time."""
    print("finite-D max_fraction_cdf (issue 27): QMC nets of the means, the leading pair's split exact, at the "
          "5 / 50 / 95 % quantiles of max_c G_c, against the replaced empirical cdf (i.i.d. vectors, one count draw "
          "each) run for the same time")
    for gm, cc, dd in ((0.467, 3, 400), (0.467, 10, 400), (0.467, 100, 300)):
        g = np.quantile(vectors.max_fraction_samples(gm, cc), [0.05, 0.5, 0.95])
        clear()
        vectors.max_cdf_sampled.cache_clear()
        t, v = timed(lambda: igbsym.get("multiclass.max_fraction_cdf").numpy(g=g, gamma=gm, C=cc, D=dd))
        se = dominant.max_fraction_cdf_se(g, gm, cc, dd)
        ks = vectors.count_level(g, dd)
        old = iid_se(gm, cc, dd, t, lambda v: lambda f: (f.max(1)[:, None] * dd <= ks + 0.5).astype(float), 1)
        print(f"  | (gamma, C, D) = ({gm}, {cc}, {dd}) | {t:.2f} s | " + " | ".join(
            f"F = {x:.4g}: relative SE {e / x:.1e}, empirical cdf {o / x:.1e} (variance {(o / e) ** 2:.0f}x)"
            for x, e, o in zip(v, se, old)) + " |")


def count_noise():
    """Finite D: the count noise exact per vector against drawn counts, as variance x time."""
    print("finite D: the count noise exact per vector (exact_count_mean / exact_count_cdf) against drawn counts on "
          "the same nets, relative SE (the cdf's worst at the 1 / 50 / 99 % quantiles of max_c K_c) and variance x "
          "time")
    for gm, cc, dd in ((0.03, 10, 30), (0.1, 100, 100)):
        counts = np.rint(vectors.observed_fractions(vectors.vector_samples(gm, cc), dd).max(1) * dd)
        ks = tuple(int(k) for k in np.unique(np.quantile(counts, [0.01, 0.5, 0.99], method="nearest")))
        cost = {}
        for exact in (True, False):
            vectors.max_fraction_sampled.cache_clear()
            vectors.max_cdf_sampled.cache_clear()
            tm, (v, se) = timed(lambda exact=exact: vectors.max_fraction_sampled(gm, cc, dd, exact))
            tc, (F, sF) = timed(lambda exact=exact: vectors.max_cdf_sampled(gm, cc, dd, ks, exact))
            e = float(np.max(sF / F))
            cost[exact] = ((se / v) ** 2 * tm, e * e * tc)
            print(f"  | ({gm}, {cc}, {dd}) {'exact' if exact else 'drawn'} | max_fraction relative SE {se / v:.1e} in "
                  f"{tm:.1f} s | max_fraction_cdf {e:.1e} in {tc:.1f} s |")
        ratio = [cost[True][i] / cost[False][i] for i in (0, 1)]
        print(f"  | ({gm}, {cc}, {dd}) variance x time, exact / drawn | max_fraction {ratio[0]:.2g} | "
              f"max_fraction_cdf {ratio[1]:.2g} |")


def chamber_cdf():
    """C = 4, D = inf: max_fraction_cdf on the ordered gaps against the law tables' route."""
    print("C = 4, D = inf: max_fraction_cdf on the ordered gaps (chamber, deterministic) against the law tables' "
          "route it replaced (max_cdf_replicates, 99.99 %), at the 0.1 / 1 / 50 / 99 % quantiles of max_c G_c: "
          "stated relative bound and time per value (tables cold)")
    for gm in (0.1, 1.0, 10.0):
        levels = np.quantile(vectors.vector_samples(gm, 4).max(1), [0.001, 0.01, 0.5, 0.99])
        chamber.max_cdf.cache_clear()
        tc, new = timed(lambda gm=gm, levels=levels: [chamber.max_cdf(float(x), gm, 4) for x in levels])
        clear()
        to, (F, det, ess) = timed(lambda gm=gm, levels=levels: dominant.max_cdf_replicates(levels, gm, 4))
        old = common.relative(F.mean(0), common.replicate_bound(F, det, ess))
        print(f"  | gamma = {gm} | chamber " + ", ".join(f"{b / v:.1e}" for v, b in new) + f" in {tc / 4:.2f} s | "
              "tables " + ", ".join(f"{x:.1e}" for x in old) + f" in {to / 4:.2f} s | time ratio {tc / to:.1f} |")


def deep_tail():
    """C = 3: cdf deep in the lower tail (g down to 1e-300)."""
    t, v = timed(lambda: igbsym.get("multiclass.cdf").numpy(g=np.geomspace(1e-300, 1e-3, 12), gamma=1.0, C=3))
    print(f"C = 3 deep lower tail: cdf at 12 g in [1e-300, 1e-3], gamma = 1: {t:.1f} s (tail-exact G_1); "
          f"cdf(1e-300) = {float(v[0]):.6e}")


def compare(G, C):
    """--compare: the binned products against the exact product on a sub-grid, values and times."""
    pts = [(gm, int(c)) for gm, c in zip(G.ravel()[::50], C.ravel()[::50]) if c >= BINNED]
    t_new, F = cdf_grid(np.array([p[0] for p in pts]), np.array([p[1] for p in pts]), exact=False)
    t_old, F_old = cdf_grid(np.array([p[0] for p in pts]), np.array([p[1] for p in pts]), exact=True)
    print(f"binned products vs the exact product on {len(pts)} grid points: {t_new:.1f} s vs {t_old:.1f} s "
          f"({t_old / t_new:.1f}x); largest |difference| {np.abs(F - F_old).max():.1e}")


if __name__ == "__main__":
    main()
