"""Kernel speed and tail accuracy, measured as ratios in one run (issue 11 §4; foundation bench).

For igb.pdf and rectified.{mean,var,moment} on 10^6 points: the lambdified closed form (``form.lambdified()``,
SymPy -> NumPy/SciPy with cse) and the registered production kernel (``form.numpy``: input validation, NaN guard and,
for igb.pdf / rectified.mean / rectified.var, a one-pass tail-stable kernel) vs
 (a) per-point scipy.integrate.quad of the defining integral, (b) per-point SymPy evalf of the exact expression,
 (c) the hand-written NumPy expression a user writes (igb.pdf: x = ndtri(g), exp((1 - 1/gamma) x²/2)/sqrt(gamma);
     rectified.mean: mu ndtr(t) + sigma phi(t), t = mu/sigma; rectified.var: (mu² + sigma²) ndtr(t) + mu sigma phi(t)
     - mean²).
Table 1: numpy()/hand, the median over --repeats paired measurements (each the best of 3 calls of either), the
machine may be loaded: only ratios within one run are meaningful. Target <= 1.5x.
Table 2: relative error against 50-digit mpmath where the plain formula cancels (t = mu/sigma = -10, -20, -37; for
igb.pdf at g = Phi(t) as a double, gamma = 2): numpy() vs the hand expression.
Table 3: (a) and (b) are timed on a subsample and reported per point. Target: >= 1000x over (a).
Run: python bench/bench_kernels.py [--points N] [--repeats R]
"""
import argparse
import statistics
import time

import mpmath
import numpy as np
from scipy import integrate, special

import igbsym
from timing import best_of

TARGET = 1.5
TAIL_T = (-10.0, -20.0, -37.0)
SQ2PI = np.sqrt(2 * np.pi)


def hand_pdf(g, gamma):
    x = special.ndtri(g)
    return np.exp((1 - 1 / gamma) * x * x / 2) / np.sqrt(gamma)


def hand_mean(mu, sigma):
    t = mu / sigma
    return mu * special.ndtr(t) + sigma * np.exp(-t * t / 2) / SQ2PI


def hand_var(mu, sigma):
    t = mu / sigma
    ph, cdf = np.exp(-t * t / 2) / SQ2PI, special.ndtr(t)
    m = mu * cdf + sigma * ph
    return (mu * mu + sigma * sigma) * cdf + mu * sigma * ph - m * m


def paired_ratio(kernel, hand, repeats):
    """(median numpy()/hand ratio, its min and max, median kernel and hand seconds) over ``repeats`` pairs."""
    pairs = [(best_of(kernel, 3), best_of(hand, 3)) for _ in range(repeats)]
    ratios = [k / h for k, h in pairs]
    return (statistics.median(ratios), min(ratios), max(ratios), statistics.median(k for k, _ in pairs),
            statistics.median(h for _, h in pairs))


def mp_reference(name, t):
    """50-digit value at the tail point t (mu = t, sigma = 1; igb.pdf: g = Phi(t) rounded to a double, gamma = 2), by
    the plain formulas in mpmath (their cancellation costs < 12 of the 50 digits) and, for the pdf, x = Phi^-1(g) by
    erfinv at 400 digits (2g - 1 must resolve g ~ 1e-300)."""
    if name == "igb.pdf":
        g = float(special.ndtr(t))
        with mpmath.workdps(400):
            x = mpmath.sqrt(2) * mpmath.erfinv(2 * mpmath.mpf(g) - 1)
            return dict(g=g, gamma=2.0), mpmath.exp((1 - mpmath.mpf(1) / 2) * x * x / 2) / mpmath.sqrt(2)
    with mpmath.workdps(50):
        mu, sigma = mpmath.mpf(t), mpmath.mpf(1)
        cdf, ph = mpmath.ncdf(mu / sigma), mpmath.npdf(mu / sigma)
        m = mu * cdf + sigma * ph
        var = (mu**2 + sigma**2) * cdf + mu * sigma * ph - m**2
        return dict(mu=t, sigma=1.0), m if name == "rectified.mean" else var


def per_point(fn, args, n_sub):
    t0 = time.perf_counter()
    for row in args[:n_sub]:
        fn(*row)
    return (time.perf_counter() - t0) / n_sub


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--points", type=int, default=10**6)
    ap.add_argument("--repeats", type=int, default=9, help="paired numpy()/hand measurements (median reported)")
    args = ap.parse_args()
    n = args.points
    rng = np.random.default_rng(0)
    g, gamma = rng.uniform(1e-6, 1 - 1e-6, n), rng.uniform(0.05, 5, n)
    mu, sigma = rng.uniform(-3, 3, n), rng.uniform(0.2, 3, n)
    hands = {"igb.pdf": hand_pdf, "rectified.mean": hand_mean, "rectified.var": hand_var}
    inputs = {"igb.pdf": dict(g=g, gamma=gamma), "rectified.mean": dict(mu=mu, sigma=sigma),
              "rectified.var": dict(mu=mu, sigma=sigma)}

    print(f"Table 1: numpy() / hand-written NumPy, {n} points, median of {args.repeats} paired measurements "
          f"(each the best of 3); target <= {TARGET}x\n")
    print(f"{'form':16s} {'numpy()':>9s} {'hand':>9s} {'ratio':>7s} {'[min, max]':>14s} {'target':>7s}")
    for name, hand in hands.items():
        form, kw = igbsym.get(name), inputs[name]
        med, lo, hi, t_k, t_h = paired_ratio(lambda: form.numpy(**kw), lambda: hand(**kw), args.repeats)
        print(f"{name:16s} {t_k * 1e3:7.1f}ms {t_h * 1e3:7.1f}ms {med:6.2f}x   [{lo:.2f}, {hi:.2f}] "
              f"{'met' if med <= TARGET else 'MISSED':>7s}")

    print(f"\nTable 2: relative error against 50-digit mpmath at t = mu/sigma = {', '.join(map(str, TAIL_T))} "
          "(igb.pdf: g = Phi(t), gamma = 2)\n")
    print(f"{'form':16s} {'':8s}" + "".join(f"{f't = {t:g}':>11s}" for t in TAIL_T))
    for name, hand in hands.items():
        rows = {"numpy()": [], "hand": []}
        for t in TAIL_T:
            kw, ref = mp_reference(name, t)
            with np.errstate(all="ignore"):
                for label, value in (("numpy()", igbsym.get(name).numpy(**kw)), ("hand", hand(**kw))):
                    rows[label].append(float(abs(mpmath.mpf(float(value)) - ref) / ref))
        for label, errs in rows.items():
            print(f"{name if label == 'numpy()' else '':16s} {label:8s}" + "".join(f"{e:11.1e}" for e in errs))

    def quad_relu(m, s, k):
        return integrate.quad(lambda x: x**k * np.exp(-((x - m) / s) ** 2 / 2) / (s * SQ2PI), 0, np.inf)[0]

    def quad_pdf(gv, gm):  # defining route: the density of Phi(sqrt(gamma) Z) by differentiating its CDF numerically
        h = 1e-6 * min(gv, 1 - gv)
        cdf = lambda u: integrate.quad(lambda z: np.exp(-z * z / 2) / SQ2PI, -np.inf, special.ndtri(u) / np.sqrt(gm))[0]  # noqa
        return (cdf(gv + h) - cdf(gv - h)) / (2 * h)

    def hand_m3():
        t = mu / sigma
        ph, cdf = np.exp(-t * t / 2) / SQ2PI, special.ndtr(t)
        return (mu**3 + 3 * mu * sigma**2) * cdf + sigma * (mu * mu + 2 * sigma * sigma) * ph

    cases = {
        "igb.pdf": (lambda: igbsym.get("igb.pdf").numpy(g=g, gamma=gamma), lambda: hand_pdf(g, gamma), quad_pdf,
                    list(zip(g, gamma)), dict(g=g, gamma=gamma)),
        "rectified.mean": (lambda: igbsym.get("rectified.mean").numpy(mu=mu, sigma=sigma), lambda: hand_mean(mu, sigma),
                           lambda m, s: quad_relu(m, s, 1), list(zip(mu, sigma)), dict(mu=mu, sigma=sigma)),
        "rectified.var": (lambda: igbsym.get("rectified.var").numpy(mu=mu, sigma=sigma), lambda: hand_var(mu, sigma),
                          lambda m, s: quad_relu(m, s, 2) - quad_relu(m, s, 1) ** 2, list(zip(mu, sigma)),
                          dict(mu=mu, sigma=sigma)),
        "rectified.moment(n=3)": (lambda: igbsym.get("rectified.moment").numpy(n=3, mu=mu, sigma=sigma), hand_m3,
                                  lambda m, s: quad_relu(m, s, 3), list(zip(mu, sigma)), dict(mu=mu, sigma=sigma)),
    }
    print(f"\nTable 3: {n} points per kernel call; best of 5. (a), (b) per point from subsamples of 300 and 30 "
          "points.\n")
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
