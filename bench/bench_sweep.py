"""Benchmark of ``igbsym sweep`` sharding: one grid point on 1 rank vs 2 ranks (torchrun, gloo on CPU).

``python bench/bench_sweep.py [--inits 256] [--chunk 16] [--repeat 2]`` measures, in one run:
1. the sweep loop's wall time (the store's ``runs`` row: first point registered → last point finished, so process
   start-up and imports are excluded) on 1 rank and on 2 ranks: the speed-up t1/t2;
2. rank 0's CPU time in the loop on 1 and on 2 ranks: their ratio is the work split (the speed-up an idle machine
   would show), which a loaded machine's wall times cannot;
3. rank 0's time inside collectives during the 2-rank run (broadcasts + all-reduces, including waits for the
   slower rank) as a fraction of the loop;
4. the bare all-reduce of one round's buffer ([2, chunk, F] float64, F = 1 + 2·depth) timed in a 2-rank
   torchrun (``--allreduce-only`` is that worker);
5. that the 2-rank store equals the 1-rank one bit for bit;
6. store growth: bytes per finished point (depth 4, 64 inits in 4 chunks, per-init units kept) from 1000
   synthetic points written through igbsym.validation.store.Store, the file VACUUMed.
Times are the best of ``--repeat``; on a shared machine read the ratios, not the seconds.
Results go to stdout and ``bench/results_sweep.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRID = """
[run]
inits = {inits}
chunk = {chunk}
[fixed]
width = 128
n_data = 4096
[axes]
depth = [4]
"""


def _env():
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "IGBSYM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def _sweep(grid, db, ranks):
    launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={ranks}"] \
        if ranks > 1 else [sys.executable]
    subprocess.run(launch + ["-m", "igbsym", "sweep", str(grid), "--db", str(db)], env=_env(), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    con = sqlite3.connect(db)
    run = con.execute("SELECT finished - started, comm_seconds, cpu_seconds FROM runs").fetchone()
    chunks = con.execute("SELECT point, idx, data FROM chunks ORDER BY point, idx").fetchall()
    con.close()
    return run, chunks


def allreduce_worker(chunk, fields, repeat=200):
    """Under torchrun: time the all-reduce of one round's [world, chunk, F] float64 buffer."""
    import torch
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method="env://")
    buf = torch.zeros((dist.get_world_size(), chunk, fields), dtype=torch.float64)
    for _ in range(10):
        dist.all_reduce(buf)
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(repeat):
        dist.all_reduce(buf)
    dt = (time.perf_counter() - t0) / repeat
    if dist.get_rank() == 0:
        print(json.dumps({"allreduce_seconds": dt, "bytes": buf.numel() * 8}))
    dist.destroy_process_group()


def store_bytes_per_point(n_points=1000, inits=64, chunk=16, depth=4):
    """File size per point of a store holding ``n_points`` finished points (synthetic units, real schema)."""
    import numpy as np
    sys.path.insert(0, str(ROOT))
    from igbsym.validation.store import Store, point_key
    from igbsym.validation.estimators import unit_fields
    fields = unit_fields(depth)
    rng = np.random.default_rng(0)
    config = {"d_in": 128, "widths": [128] * depth, "activation": "relu", "a": 0.01, "weight_law": "normal",
              "sigma_w": 1.0, "pool": None, "norm": None, "placement": "pre", "bn_batch": None, "n_classes": 2,
              "srelu_shift": None, "n_data": 1024, "data_law": "gaussian", "fresh_data": False, "estimator": "moment"}
    layer = {"layer": 1, "gamma": 0.4, "se": 0.04, "pred": 0.46, "z": -1.5}
    result = {"gamma": 0.4, "se": 0.04, "pred": 0.46, "z": -1.5, "inits": inits, "layers": [layer] * depth,
              "source": "depth.gamma", "g0_mean": 0.5, "g0_sd": 0.2, "ks_stat": 0.1, "ks_p": 0.5}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "size.db"
        store = Store(path)
        for i in range(n_points):
            cfg = {**config, "sigma_w": 1.0 + i * 1e-6}
            key = point_key(cfg, 0, inits, chunk)
            store.add_point(key, cfg, {"sigma_w": cfg["sigma_w"]}, 0, inits, chunk)
            store.put_chunks([(key, c, c * chunk, rng.standard_normal((chunk, len(fields))), fields)
                              for c in range(inits // chunk)])
            store.finish(key, result)
        store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        store.db.execute("VACUUM")
        store.close()
        return path.stat().st_size / n_points


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inits", type=int, default=256)
    ap.add_argument("--chunk", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--allreduce-only", action="store_true")
    args = ap.parse_args()
    fields = 1 + 2 * 4
    if args.allreduce_only:
        return allreduce_worker(args.chunk, fields)
    out = {"grid": GRID.format(inits=args.inits, chunk=args.chunk).strip(), "load_average": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp:
        grid = Path(tmp) / "point.toml"
        grid.write_text(GRID.format(inits=args.inits, chunk=args.chunk))
        best, stores = {}, {}
        for rep in range(args.repeat):
            for ranks in (1, 2):
                run, stores[ranks] = _sweep(grid, Path(tmp) / f"r{ranks}-{rep}.db", ranks)
                if ranks not in best or run[0] < best[ranks][0]:
                    best[ranks] = run
        proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                               __file__, "--allreduce-only", "--chunk", str(args.chunk)], env=_env(), check=True,
                              capture_output=True, text=True)
        bare = json.loads(proc.stdout.strip().splitlines()[-1])
    rounds = -(-args.inits // args.chunk) // 2
    out.update({
        "seconds_1_rank": best[1][0], "seconds_2_ranks": best[2][0], "speedup": best[1][0] / best[2][0],
        "cpu_seconds_rank0_1_rank": best[1][2], "cpu_seconds_rank0_2_ranks": best[2][2],
        "cpu_split": best[1][2] / best[2][2],
        "collective_seconds_2_ranks": best[2][1], "collective_fraction": best[2][1] / best[2][0],
        "allreduce_seconds_per_round": bare["allreduce_seconds"], "allreduce_bytes_per_round": bare["bytes"],
        "allreduce_fraction": rounds * bare["allreduce_seconds"] / best[2][0],
        "bit_identical": stores[1] == stores[2], "store_bytes_per_point": store_bytes_per_point()})
    for k, v in out.items():
        print(f"{k}: {v}")
    (ROOT / "bench" / "results_sweep.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
