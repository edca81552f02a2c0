"""Benchmarks of igbsym.validation.simulate, all measured in one run (``python bench/bench_simulate.py``).

1. Batched simulator vs a per-network loop over torch.nn.Sequential doing the same work (same weights
   sampler, same data chunks, same output statistics): target ≥ 5× on CPU.
2. Achieved FLOP/s of the simulator vs a plain torch.mm of the same total size: target ≥ 50 % at width ≥ 256.
3. Peak RSS (VmHWM) as the dataset grows 10⁴ → 10⁶ points (each size in a fresh process): stays bounded.
4. The exact Gaussian shortcut (first-layer pre-activations z·chol(WᵀW)ᵀ) vs the plain network.
5. Equal work (issue 11 §2): simulate(spec, n, data=X, layer_stats=False) vs the per-init loop a user writes
   (fresh nn.Sequential(Linear(d, N), ReLU, …, Linear(N, 2)) per init, kaiming_normal_ weights, zero biases, the
   whole X under no_grad, argmax counted) at d = 1000, N = 100, P ∈ {1000, 20000}, L ∈ {1, 20}; and both as a
   fraction of the single-thread torch.mm roofline (the same FLOPs at the rate of a [P, d]·[d, 8N] GEMM).
Times are the best of ``--repeat`` runs (the machine may be shared). Torch threads: ``IGBSYM_THREADS``
(default 1, as in ``igbsym validate``).
Results go to stdout and ``bench/results_simulate.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from igbsym.validation.simulate import NetSpec, sample_weights, sequential, simulate, Blob  # noqa: E402
from timing import best_of, user_mlp  # noqa: E402


def loop_reference(spec, n_inits, n_data, chunk=256, seed=0):
    """Per-network loop: one torch.nn.Sequential per init, the same chunks and output statistics."""
    blob = Blob(spec.d_in, seed=seed)
    stats = []
    for i in range(n_inits):
        net = sequential(spec, sample_weights(spec, [i], seed, "cpu"), 0)
        s1 = s2 = 0.0
        counts = torch.zeros(spec.n_classes)
        with torch.no_grad():
            for start in range(0, n_data, chunk):
                o = net(blob.rows(start, min(n_data, start + chunk)).float())
                s1, s2 = s1 + o.sum(0).double(), s2 + (o.double() ** 2).sum(0)
                counts += torch.bincount(o.argmax(1), minlength=spec.n_classes)
        stats.append((s1 / n_data, counts / n_data))
    return stats


def user_loop(X, n_inits, depth, width=100):
    """The per-init pattern of the IGB paper's code: a fresh nn.Sequential per init, the whole X at once."""
    for _ in range(n_inits):
        net = user_mlp(X.shape[1], depth, width)
        with torch.no_grad():
            torch.bincount(net(X).argmax(1), minlength=2)


def bench_equal_work(repeat, quick=False):
    rows = []
    for P, L in ((1000, 1), (1000, 20), (20000, 1), (20000, 20)):
        d, n = 1000, 100
        inits = max(4, (64 if P == 1000 else 8) // (4 if quick else 1))
        X = torch.randn(P, d)
        spec = NetSpec(d, (n,) * L, activation="relu")
        t_loop = best_of(lambda: user_loop(X, inits, L), repeat)
        t_sim = best_of(lambda: simulate(spec, inits, data=X, layer_stats=False), repeat)
        f = flops(spec, inits, P)
        a, b = torch.randn(P, d), torch.randn(d, 8 * n)
        rate = 2.0 * P * d * 8 * n / best_of(lambda: torch.mm(a, b), repeat)
        rows.append(dict(d=d, N=n, P=P, L=L, inits=inits, loop_ms_per_init=1e3 * t_loop / inits,
                         sim_ms_per_init=1e3 * t_sim / inits, ratio=t_loop / t_sim, mm_gflops=rate / 1e9,
                         sim_roofline=f / t_sim / rate, loop_roofline=f / t_loop / rate))
    return rows


def flops(spec, n_inits, n_data):
    return 2.0 * n_inits * n_data * sum(fi * fo for fi, fo in spec.shapes())


def bench_loop(repeat):
    rows = []
    for d, n, inits, data in ((16, 32, 2000, 512), (32, 64, 400, 1024), (64, 256, 400, 1024), (256, 256, 64, 4096)):
        spec = NetSpec(d, (n,), activation="relu")
        t_b = best_of(lambda: simulate(spec, inits, data, layer_stats=False), repeat)
        t_l = best_of(lambda: loop_reference(spec, inits, data), repeat)
        rows.append(dict(d=d, width=n, inits=inits, data=data, batched_s=t_b, loop_s=t_l, speedup=t_l / t_b))
    return rows


def bench_flops(repeat):
    rows = []
    for d, n, inits, data in ((256, 256, 128, 4096), (512, 512, 64, 4096)):
        spec = NetSpec(d, (n,), activation="relu")
        f = flops(spec, inits, data)
        t_sim = best_of(lambda: simulate(spec, inits, data, layer_stats=False), repeat)
        a, b = torch.randn(data, d), torch.randn(d, inits * n)   # the first layer as one GEMM
        t_mm = best_of(lambda: torch.mm(a, b), repeat)
        f_mm = 2.0 * data * d * b.shape[1]
        rows.append(dict(d=d, width=n, inits=inits, data=data, sim_gflops=f / t_sim / 1e9,
                         mm_gflops=f_mm / t_mm / 1e9, ratio=(f / t_sim) / (f_mm / t_mm)))
    return rows


CHILD = """
import os, sys, time, torch
torch.set_num_threads(int(os.environ.get("IGBSYM_THREADS", "1")))
sys.path.insert(0, {root!r})
from igbsym.validation.simulate import NetSpec, simulate
hwm = lambda: int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM")).split()[1]) / 1024
spec = NetSpec(32, (128,), activation="relu")
base = hwm()
t0 = time.perf_counter()
simulate(spec, 16, {n}, layer_stats=True)
print(base, hwm(), time.perf_counter() - t0)
"""


def bench_memory():
    rows, root = [], str(Path(__file__).resolve().parents[1])
    for n in (10_000, 100_000, 1_000_000):
        out = subprocess.run([sys.executable, "-c", CHILD.format(root=root, n=n)], capture_output=True, text=True,
                             check=True, env=os.environ.copy()).stdout.split()
        rows.append(dict(n_data=n, inits=16, d=32, width=128, rss_after_import_mb=float(out[0]),
                         peak_rss_mb=float(out[1]), seconds=float(out[2]), dataset_mb_if_stored=n * 32 * 4 / 2**20,
                         activations_mb_if_stored=n * 16 * 128 * 4 / 2**20))
    return rows


def bench_shortcut(repeat):
    spec = NetSpec(1024, (128,), activation="relu")
    kw = dict(layer_stats=False, fresh_data=True)
    t_plain = best_of(lambda: simulate(spec, 64, 4096, **kw), repeat)
    t_fast = best_of(lambda: simulate(spec, 64, 4096, shortcut="gaussian", **kw), repeat)
    return dict(d=1024, width=128, inits=64, data=4096, plain_s=t_plain, shortcut_s=t_fast,
                speedup=t_plain / t_fast)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--equal-work", action="store_true", help="only the equal-work table (5.)")
    p.add_argument("--quick", action="store_true", help="fewer inits in the equal-work table")
    args = p.parse_args()
    torch.set_num_threads(int(os.environ.get("IGBSYM_THREADS", "1")))
    eq = bench_equal_work(args.repeat, args.quick)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), best of {args.repeat}")
    print("[equal work] d=1000 N=100: per-init loop vs simulate(data=X, layer_stats=False); roofline = the same "
          "FLOPs at torch.mm's rate")
    for r in eq:
        print(f"  P={r['P']:>5} L={r['L']:>2} I={r['inits']:>3}: loop {r['loop_ms_per_init']:7.1f} ms/init, simulate "
              f"{r['sim_ms_per_init']:7.1f} ms/init -> {r['ratio']:.2f}x; roofline: simulate "
              f"{100 * r['sim_roofline']:.0f} %, loop {100 * r['loop_roofline']:.0f} %"
              f" (mm {r['mm_gflops']:.1f} GFLOP/s)")
    if args.equal_work:
        (Path(__file__).parent / "results_simulate_equal_work.json").write_text(json.dumps(eq, indent=1))
        return
    res = dict(threads=torch.get_num_threads(), torch=torch.__version__, equal_work=eq, loop=bench_loop(args.repeat),
               flops=bench_flops(args.repeat), memory=bench_memory(), shortcut=bench_shortcut(args.repeat))
    for r in res["loop"]:
        print(f"[batched vs nn.Sequential loop] d={r['d']} n={r['width']} I={r['inits']} D={r['data']}: "
              f"{r['batched_s']:.2f} s vs {r['loop_s']:.2f} s -> {r['speedup']:.1f}x")
    for r in res["flops"]:
        print(f"[FLOP/s] d={r['d']} n={r['width']} I={r['inits']} D={r['data']}: simulator {r['sim_gflops']:.1f} "
              f"GFLOP/s vs torch.mm {r['mm_gflops']:.1f} GFLOP/s -> {100 * r['ratio']:.0f} %")
    for r in res["memory"]:
        print(f"[memory] D={r['n_data']:>8}: peak RSS {r['peak_rss_mb']:.0f} MB (after imports "
              f"{r['rss_after_import_mb']:.0f} MB) in {r['seconds']:.1f} s; stored, the dataset would take "
              f"{r['dataset_mb_if_stored']:.0f} MB and one layer's activations {r['activations_mb_if_stored']:.0f} MB")
    s = res["shortcut"]
    print(f"[gaussian shortcut] d={s['d']} n={s['width']} I={s['inits']} D={s['data']}: {s['plain_s']:.2f} s -> "
          f"{s['shortcut_s']:.2f} s ({s['speedup']:.1f}x)")
    (Path(__file__).parent / "results_simulate.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
