"""Benchmark of igbsym.validation.train, measured in one run (``python bench/bench_train.py``).

The issue-49 workload: ``--inits`` (64) inits of the built-in ``mlp`` (one ReLU layer of 512, bias-free) on
``digits-parity`` (1797 points) for ``--steps`` (500) SGD steps of batch 256, with the default logging (~100
evaluations on the whole training set). Timed: the batched path (``vmap(grad)`` over stacked inits) on all inits,
and the per-init loop path (the same gradient and optimiser step, one init at a time) on ``--loop-inits`` (16) of
them; the ratio is of inits per second, both measured in this process (the machine may be shared: wall and CPU
seconds are both given). Peak resident memory of the process (ru_maxrss) after the run. Torch threads:
``IGBSYM_THREADS`` (default 1). Results go to stdout and ``bench/results_train.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from igbsym.validation.train import train  # noqa: E402


def timed(path, inits, steps):
    t0, c0 = time.perf_counter(), time.process_time()
    res = train("mlp", "digits-parity", inits, steps, path=path, seed=0)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return res, dict(path=res.path, inits=inits, steps=steps, wall_s=wall, cpu_s=cpu, inits_per_s=inits / wall,
                     final_acc_mean=float(res.acc[:, -1].mean()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inits", type=int, default=64)
    ap.add_argument("--loop-inits", type=int, default=16)
    ap.add_argument("--steps", type=int, default=500)
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("IGBSYM_THREADS", "1")))
    batched, row_b = timed("vmap", args.inits, args.steps)
    loop, row_l = timed("loop", args.loop_inits, args.steps)
    n = args.loop_inits
    same = float(abs(batched.loss[:n] - loop.loss).max() / abs(loop.loss).max())
    out = dict(workload=f"mlp on digits-parity, SGD lr 0.01, batch 256, {len(batched.steps)} logged steps",
               threads=torch.get_num_threads(), batched=row_b, loop=row_l,
               speedup_inits_per_s=row_b["inits_per_s"] / row_l["inits_per_s"],
               max_rel_loss_difference_batched_vs_loop=same,
               peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, torch=torch.__version__)
    print(json.dumps(out, indent=1))
    Path(__file__).with_name("results_train.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
