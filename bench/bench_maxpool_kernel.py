"""Benchmark of MaxPool2d's kernel map (issue 46): CNN-B with ReLU + max-pool (validation/models.py
cnn-b-relu-maxpool, as ops) on digits, one thread.

Measures (one run): (1) the full D × D kernel on a small D (seconds per pair of points, peak memory), and its cost
extrapolated to D = 300 (D(D + 1)/2 pairs); (2) the 300-digit γ_∞ by unbiased pair sampling (``theory(...,
pairs=n)``: the D diagonal entries exactly, n sampled off-diagonal pairs) for ``--replicas`` independent QMC seeds:
γ_∞ ± (pair-sampling SE, QMC SE over seeds), wall time, peak RSS. Target (issue 46): 300 digits <= 5 min on 2
cores, <= 8 GB.
python bench/bench_maxpool_kernel.py [--digits 300] [--pairs 3000] [--replicas 2] [--draws 1024] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from igbsym.nngp.theory import theory  # noqa: E402
from igbsym.ops import Act, Conv2d, Dense, Flatten, MaxPool2d  # noqa: E402
from igbsym.validation import datasets  # noqa: E402


def cnn_b_ops(draws: int, seed: int) -> tuple:
    """cnn-b-relu-maxpool as ops (validation/models.py cnn_b): 5 × [conv3 p1 → relu → maxpool(3, 1, 1)],
    conv5 p2 → relu → maxpool(2, 2), conv5 p2 → relu → maxpool(3, 2, 1), Flatten, Linear (biases zero)."""
    ops = []
    for c in (8, 8, 16, 16, 16):
        ops += [Conv2d(c, 3, 1, 1), Act("relu"), MaxPool2d(3, 1, 1, draws, seed)]
    ops += [Conv2d(16, 5, 1, 2), Act("relu"), MaxPool2d(2, 2, 0, draws, seed), Conv2d(16, 5, 1, 2), Act("relu"),
            MaxPool2d(3, 2, 1, draws, seed), Flatten(), Dense(2)]
    return tuple(ops)


def peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--digits", type=int, default=300)
    ap.add_argument("--small", type=int, default=24)
    ap.add_argument("--pairs", type=int, default=3000)
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--draws", type=int, default=1024)
    ap.add_argument("--json")
    args = ap.parse_args()
    x = datasets.load("digits").data.double().numpy()
    out = dict(draws=args.draws, threads=os.environ["OPENBLAS_NUM_THREADS"])
    t0 = time.perf_counter()
    theory(cnn_b_ops(args.draws, 0), x[:args.small], with_law=False)
    sec = time.perf_counter() - t0
    n_pairs = args.small * (args.small + 1) / 2
    out["full_kernel"] = dict(D=args.small, seconds=sec, seconds_per_pair=sec / n_pairs,
                              extrapolated_seconds_D300=sec / n_pairs * 300 * 301 / 2)
    print(f"full kernel, D = {args.small}: {sec:.1f} s ({1e3 * sec / n_pairs:.1f} ms per pair); D = 300 "
          f"extrapolated: {sec / n_pairs * 45150 / 60:.1f} min", flush=True)
    runs = []
    for r in range(args.replicas):
        t0 = time.perf_counter()
        res = theory(cnn_b_ops(args.draws, 1000 + 7919 * r), x[:args.digits], pairs=args.pairs, seed=r)
        runs.append(dict(gamma=res.gamma, pair_se=res.gamma_se, seconds=time.perf_counter() - t0))
        print(f"replica {r}: gamma_inf = {res.gamma:.4g} ± {res.gamma_se:.2g} (pairs), "
              f"{runs[-1]['seconds']:.1f} s, peak {peak_gb():.2f} GB", flush=True)
    g = np.array([r["gamma"] for r in runs])
    qmc_se = float(g.std(ddof=1) / np.sqrt(len(g))) if len(g) > 1 else float("nan")
    pair_se = float(np.sqrt(np.mean([r["pair_se"] ** 2 for r in runs]) / len(runs)))
    out["sampled"] = dict(D=args.digits, pairs=args.pairs, runs=runs, gamma=float(g.mean()), pair_se=pair_se,
                          spread_se=qmc_se, peak_gb=peak_gb())
    print(f"D = {args.digits}, {args.pairs} pairs x {len(g)} seeds: gamma_inf = {g.mean():.4g}, SE over seeds "
          f"{qmc_se:.2g} (pair sampling + QMC), pair-sampling SE {pair_se:.2g}; seconds per replica "
          f"{np.mean([r['seconds'] for r in runs]):.0f}; peak {peak_gb():.2f} GB")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
