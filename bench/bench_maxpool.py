"""Max-pool kernels for 10^4 (k, sigma) pairs with k up to 10^6 (issue 5: "well under a second").

Timed (best of 5, one vectorised call each): maxpool.mean, maxpool.var, maxpool.gamma, maxpool.cdf and maxpool.pdf
(one x per pair), maxpool.extreme_mass (binomial rule, D = 1000), all through ``form.numpy`` (input validation
included). Baselines, timed on a subsample and extrapolated per pair: (a) scipy.integrate.quad of the defining
integral ∫ x k φ(x) Φ(x)^{k-1} dx (with breakpoints at the Gumbel location), (b) the mpmath reference route at
20 digits. Printed: seconds per call, per pair, and speed-up ratios; the worst relative difference to (a) is printed
as a sanity check.
Run: python bench/bench_maxpool.py [--pairs N]
"""
import argparse
import time

import mpmath
import numpy as np
from scipy import integrate, special

import igbsym
from timing import best_of
from igbsym.families import maxpool as fam



def quad_mean(k, sigma):
    """E[M_k] by scipy quad in x (log-space density), the naive per-pair route."""
    c = np.sqrt(2 * np.log(k)) if k > 1 else 0.0
    f = lambda x: x * np.exp(np.log(k) - x * x / 2 - 0.5 * np.log(2 * np.pi)  # noqa: E731
                             + (k - 1) * special.log_ndtr(x))
    pts = [c - 8, c - 2, c, c + 2, c + 8]
    return sigma * (integrate.quad(f, -np.inf, pts[0])[0] + sum(integrate.quad(f, a, b, epsabs=1e-14, epsrel=1e-13)[0]
                                                               for a, b in zip(pts[:-1], pts[1:]))
                    + integrate.quad(f, pts[-1], np.inf)[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=10**4)
    n = ap.parse_args().pairs
    rng = np.random.default_rng(0)
    k = np.round(np.exp(rng.uniform(0, np.log(1e6), n)))
    sigma = np.exp(rng.uniform(np.log(0.1), np.log(10), n))
    x = sigma * rng.uniform(-1, 5, n)
    get = igbsym.get
    fam.gumbel_gauss_rule()  # build the Gauss rule once (cached; ~1 ms)
    print(f"{n} (k, sigma) pairs, k log-uniform in [1, 1e6] ({np.unique(k).size} distinct), sigma in [0.1, 10]")
    timings = {
        "maxpool.mean": best_of(lambda: get("maxpool.mean").numpy(k=k, sigma=sigma, activation="relu")),
        "maxpool.var": best_of(lambda: get("maxpool.var").numpy(k=k, sigma=sigma, activation="relu")),
        "maxpool.gamma": best_of(lambda: get("maxpool.gamma").numpy(k=k, activation="identity")),
        "maxpool.cdf": best_of(lambda: get("maxpool.cdf").numpy(x=x, k=k, sigma=sigma, activation="relu")),
        "maxpool.pdf": best_of(lambda: get("maxpool.pdf").numpy(x=x, k=k, sigma=sigma, activation="identity")),
        "maxpool.extreme_mass": best_of(lambda: get("maxpool.extreme_mass").numpy(k=k, activation="relu", D=1000,
                                                                                   rule="binomial")),
    }
    n_quad, n_mp = 200, 20
    t0 = time.perf_counter()
    ref = np.array([quad_mean(kk, s) for kk, s in zip(k[:n_quad], sigma[:n_quad])])
    t_quad = (time.perf_counter() - t0) / n_quad
    t0 = time.perf_counter()
    for kk, s in zip(k[:n_mp], sigma[:n_mp]):
        with mpmath.workdps(20):
            fam.mp_moments("identity", int(kk), s)
    t_mp = (time.perf_counter() - t0) / n_mp
    ours = get("maxpool.mean").numpy(k=k[:n_quad], sigma=sigma[:n_quad], activation="identity")
    worst = float(np.max(np.abs(ours - ref) / np.maximum(np.abs(ref), sigma[:n_quad])))
    for name, t in timings.items():
        print(f"{name:22s} {t * 1e3:8.1f} ms per call  {t / n * 1e6:7.2f} us per pair")
    t_mean = timings["maxpool.mean"]
    print(f"scipy quad (a)         {t_quad * 1e6:9.1f} us per pair -> {n * t_quad:7.2f} s for {n} pairs; "
          f"ratio {t_quad * n / t_mean:,.0f}x")
    print(f"mpmath route (b, 20 d) {t_mp * 1e6:9.1f} us per pair (mean and var) -> {n * t_mp:7.1f} s; "
          f"ratio {t_mp * n / t_mean:,.0f}x")
    print(f"worst difference maxpool.mean vs scipy quad on {n_quad} pairs (relative, or in units of sigma "
          f"when |mean| < sigma): {worst:.1e}")
    total = sum(timings.values())
    print(f"all six kernels together: {total:.3f} s for {n} pairs (target: well under 1 s)")


if __name__ == "__main__":
    main()
