"""Benchmarks of igbsym.validation.probe, measured in one run (``python bench/bench_probe.py``).

1. Inits per second, batched (``torch.func.vmap`` over stacked inits) vs the per-init loop running the same
   function, for the MLP (one ReLU layer of 512) and CNN-B (ReLU + MaxPool) on ``digits`` (1797 points), at the
   default data batch of 256 and at 16 (where per-op overhead, which vmap amortises, dominates on a CPU).
2. The Rao–Blackwellised estimator's CPU-seconds to a 2 % relative SE on γ̂ vs the plain one, on digits-parity:
   a pilot of ``--pilot`` inits gives each estimator's SE and the CPU time per init (process time, each estimator
   run on its own, the plain one without the penultimate-feature hook); inits needed = pilot·(SE/(0.02 γ̂))².
Time ratios are measured within one run (the machine may be shared). Torch threads: ``IGBSYM_THREADS`` (default 1).
Results go to stdout and ``bench/results_probe.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from igbsym.validation import datasets  # noqa: E402
from igbsym.validation.models import build  # noqa: E402
from igbsym.validation.probe import probe  # noqa: E402

warnings.filterwarnings("ignore", message="There is a performance drop")


def throughput(name, ds, inits, batch):
    model = build(name, ds.data.shape[1:], 2)
    row = {"model": name, "inits": inits, "batch_size": batch}
    for path in ("vmap", "loop"):
        t0 = time.perf_counter()
        probe(model, ds, inits, path=path, layers=False, zero_bias=True, batch_size=batch)
        row[f"{path}_inits_per_s"] = inits / (time.perf_counter() - t0)
    row["speedup"] = row["vmap_inits_per_s"] / row["loop_inits_per_s"]
    return row


def time_to_precision(name, ds, pilot, target=0.02):
    model = build(name, ds.data.shape[1:], 2)
    row = {"model": name, "pilot_inits": pilot, "target_rel_se": target}
    for est in ("plain", "rao-blackwell"):
        t0 = time.process_time()
        r = probe(model, ds, pilot, layers=False, zero_bias=True, estimator=est)
        cpu = (time.process_time() - t0) / pilot
        need = pilot * (r.gamma.se / (target * abs(r.gamma.value))) ** 2
        row[est] = dict(gamma=r.gamma.value, se=r.gamma.se, cpu_s_per_init=cpu, inits_needed=need,
                        cpu_s_to_target=need * cpu)
    row["cpu_ratio_plain_over_rb"] = row["plain"]["cpu_s_to_target"] / row["rao-blackwell"]["cpu_s_to_target"]
    row["variance_ratio"] = (row["plain"]["se"] / row["rao-blackwell"]["se"]) ** 2
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mlp-inits", type=int, default=64)
    ap.add_argument("--cnn-inits", type=int, default=16)
    ap.add_argument("--pilot", type=int, default=64)
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("IGBSYM_THREADS", "1")))
    digits, parity = datasets.load("digits"), datasets.load("digits-parity")
    for path in ("vmap", "loop"):   # one-time warm-up (functorch's first vmap call costs seconds)
        probe(build("cnn-b-relu-maxpool", (1, 8, 8), 2), digits.data[:16], 2, path=path)
    out = {"threads": torch.get_num_threads(), "throughput": [], "precision": []}
    print("1. inits/s on digits (1797 points), vmap vs per-init loop")
    for name, inits in (("mlp", args.mlp_inits), ("cnn-b-relu-maxpool", args.cnn_inits)):
        for batch in (256, 16):
            row = throughput(name, digits, inits, batch)
            out["throughput"].append(row)
            print(f"  {name:<20} batch {batch:>3}  vmap {row['vmap_inits_per_s']:8.2f}/s  loop "
                  f"{row['loop_inits_per_s']:8.2f}/s  speedup {row['speedup']:.2f}x")
    print("2. CPU-seconds to a 2 % relative SE on gamma_hat (digits-parity, zero biases), plain vs Rao-Blackwell")
    for name, pilot in (("mlp", args.pilot), ("cnn-b-relu-maxpool", max(8, args.pilot // 2))):
        row = time_to_precision(name, parity, pilot)
        out["precision"].append(row)
        p, rb = row["plain"], row["rao-blackwell"]
        print(f"  {name:<20} gamma {rb['gamma']:.4g}; plain {p['inits_needed']:9.0f} inits {p['cpu_s_to_target']:9.1f}"
              f" s | RB {rb['inits_needed']:7.0f} inits {rb['cpu_s_to_target']:7.1f} s"
              f" | {row['cpu_ratio_plain_over_rb']:.3g}x"
              f" less CPU (variance ratio {row['variance_ratio']:.3g})")
    path = Path(__file__).with_name("results_probe.json")
    path.write_text(json.dumps(out, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
