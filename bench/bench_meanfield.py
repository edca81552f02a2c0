"""The mean-field phase diagram (issue 48): a 200 x 200 grid of gamma_inf for tanh over (sigma_w^2, sigma_b^2) in
(0, 4] x (0, 0.5] (igbsym phase's default ranges), on one core, cold caches; target <= 30 s. Also the erf grid
(closed kernel) and the depth-L grid, for scale. Writes bench/results_meanfield.json.
Run: OMP_NUM_THREADS=1 python bench/bench_meanfield.py [--grid N]
"""
import argparse
import json
import os
import platform
import time
from pathlib import Path

from igbsym import gauss
from igbsym.phase import grid


def cold():
    gauss.clear_caches()           # includes the Hermite basis of igbsym.gauss.hermite


def timed(fn):
    cold()
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", type=int, default=200)
    args = ap.parse_args()
    n = args.grid
    rows = []
    for label, act, depth in (("tanh gamma_inf", "tanh", None), ("erf gamma_inf", "erf", None),
                              ("tanh gamma_L, L = 10", "tanh", 10)):
        seconds, res = timed(lambda: grid(act, n, 4.0, 0.5, depth))
        finite = sum(v is not None for row in res["values"] for v in row)
        rows.append({"case": label, "grid": f"{n}x{n}", "seconds": round(seconds, 2), "finite_points": finite})
        print(f"{label:24s} {n}x{n}: {seconds:6.2f} s ({finite} finite values)", flush=True)
    out = {"bench": "meanfield phase diagram", "target_seconds": 30, "threads": os.environ.get("OMP_NUM_THREADS"),
           "machine": platform.processor() or platform.machine(), "rows": rows}
    path = Path(__file__).with_name("results_meanfield.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
