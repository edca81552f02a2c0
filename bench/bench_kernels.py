"""Kernel speed, measured as ratios in one run (issue: foundation bench).

For igb.pdf and rectified.{mean,var,moment} on 10^6 points: the lambdified closed form (``form.lambdified()``,
SymPy -> NumPy/SciPy with cse) and the registered production kernel (``form.numpy``: input validation, NaN guard and,
for igb.pdf / rectified.mean / rectified.var, a tail-stable hand kernel) vs
 (a) per-point scipy.integrate.quad of the defining integral, (b) per-point SymPy evalf of the exact expression,
 (c) a hand-written NumPy expression of the same closed form.
(a) and (b) are timed on a subsample and reported per point. Targets: >= 1000x over (a); within 1.5x of (c).
Run: python bench/bench_kernels.py [--points N]
"""
import argparse
import time

import numpy as np
from scipy import integrate, special

import igbsym
from timing import best_of



def per_point(fn, args, n_sub):
    t0 = time.perf_counter()
    for row in args[:n_sub]:
        fn(*row)
    return (time.perf_counter() - t0) / n_sub


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--points", type=int, default=10**6)
    n = ap.parse_args().points
    rng = np.random.default_rng(0)
    g, gamma = rng.uniform(1e-6, 1 - 1e-6, n), rng.uniform(0.05, 5, n)
    mu, sigma = rng.uniform(-3, 3, n), rng.uniform(0.2, 3, n)
    sq2pi = np.sqrt(2 * np.pi)

    def hand_pdf():
        x = special.ndtri(g)
        return np.exp((1 - 1 / gamma) * x * x / 2) / np.sqrt(gamma)

    def hand_mean():
        t = mu / sigma
        return mu * special.ndtr(t) + sigma * np.exp(-t * t / 2) / sq2pi

    def hand_var():
        t = mu / sigma
        ph, cdf = np.exp(-t * t / 2) / sq2pi, special.ndtr(t)
        m = mu * cdf + sigma * ph
        return (mu * mu + sigma * sigma) * cdf + mu * sigma * ph - m * m

    def hand_m3():
        t = mu / sigma
        ph, cdf = np.exp(-t * t / 2) / sq2pi, special.ndtr(t)
        return (mu**3 + 3 * mu * sigma**2) * cdf + sigma * (mu * mu + 2 * sigma * sigma) * ph

    def quad_relu(m, s, k):
        return integrate.quad(lambda x: x**k * np.exp(-((x - m) / s) ** 2 / 2) / (s * sq2pi), 0, np.inf)[0]

    def quad_pdf(gv, gm):  # defining route: the density of Phi(sqrt(gamma) Z) by differentiating its CDF numerically
        h = 1e-6 * min(gv, 1 - gv)
        cdf = lambda u: integrate.quad(lambda z: np.exp(-z * z / 2) / sq2pi, -np.inf, special.ndtri(u) / np.sqrt(gm))[0]  # noqa
        return (cdf(gv + h) - cdf(gv - h)) / (2 * h)

    cases = {
        "igb.pdf": (lambda: igbsym.get("igb.pdf").numpy(g=g, gamma=gamma), hand_pdf, quad_pdf,
                    list(zip(g, gamma)), dict(g=g, gamma=gamma)),
        "rectified.mean": (lambda: igbsym.get("rectified.mean").numpy(mu=mu, sigma=sigma), hand_mean,
                           lambda m, s: quad_relu(m, s, 1), list(zip(mu, sigma)), dict(mu=mu, sigma=sigma)),
        "rectified.var": (lambda: igbsym.get("rectified.var").numpy(mu=mu, sigma=sigma), hand_var,
                          lambda m, s: quad_relu(m, s, 2) - quad_relu(m, s, 1) ** 2, list(zip(mu, sigma)),
                          dict(mu=mu, sigma=sigma)),
        "rectified.moment(n=3)": (lambda: igbsym.get("rectified.moment").numpy(n=3, mu=mu, sigma=sigma), hand_m3,
                                  lambda m, s: quad_relu(m, s, 3), list(zip(mu, sigma)), dict(mu=mu, sigma=sigma)),
    }
    print(f"{n} points per kernel call; best of 5. (a), (b) per point from subsamples of 300 and 30 points.\n")
    print(f"{'form':22s} {'lambdified':>10s} {'lamb/hand':>9s} {'numpy()':>9s} {'numpy/hand':>10s} {'hand (c)':>9s} "
          f"{'quad (a)':>9s} {'x over quad':>11s} {'evalf (b)':>10s} {'x over evalf':>12s}")
    for name, (kernel, hand, quad, args, syms) in cases.items():
        form_name = name.split("(")[0]
        form = igbsym.get(form_name)
        structural = {"n": 3} if "n=3" in name else {}
        expr = form.case(**structural)
        keys = [s for s in syms]
        evalf = lambda *vals: expr.evalf(15, subs={form.symbols[k]: v for k, v in zip(keys, vals)})  # noqa: E731
        lamb = form.lambdified(**structural)
        t_lamb = best_of(lambda: lamb(**syms))
        t_kernel, t_hand = best_of(kernel), best_of(hand)
        t_quad = per_point(quad, args, 300) * n
        t_evalf = per_point(evalf, args, 30) * n
        print(f"{name:22s} {t_lamb:9.4f}s {t_lamb / t_hand:8.2f}x {t_kernel:8.4f}s {t_kernel / t_hand:9.2f}x "
              f"{t_hand:8.4f}s {t_quad:8.1f}s {t_quad / t_kernel:10.0f}x {t_evalf:9.1f}s {t_evalf / t_kernel:11.0f}x")


if __name__ == "__main__":
    main()
