"""Benchmark of ``igbsym.validation.estimate_gamma`` against the per-init loop a user writes (issue 47), one run.

Rows: d = 784, N = 256, L ∈ {1, 5, 10, 20, 50}; relu, gelu, silu (no norm), relu and tanh with LayerNorm before φ.
Target: a 1 % relative SE of γ̂ on fresh N(0, I) data; tanh + LayerNorm has γ = 0 exactly (odd φ, symmetric data),
so its target is an absolute SE of 0.01 (``estimate_gamma``'s rule), which both routes meet in their pilots (a
cross-check of the two values, not a speed row).
- igbsym: ``estimate_gamma(spec, 0.01)`` — pilots of every valid estimator and the run of the chosen one, CPU
  seconds as it reports them (``time.process_time``).
- the loop: per init an ``nn.Sequential`` of bias-free ``nn.Linear`` layers with ``kaiming_normal_`` (σ_w² =
  2/fan_in, the readout too), the activation (and ``nn.LayerNorm``), a forward pass of ``--points`` (1024) fresh
  Gaussian points, the plain moment units a = mean_c(μ̂_c² − s²_c/D), b = mean_c s²_c. Its CPU time to the target is
  measured on a pilot of ``--loop-inits`` (32) inits and extrapolated: (seconds per init) × (inits needed =
  pilot relative variance / 0.01²); its γ̂ is given beside igbsym's as a cross-check.
Torch threads: ``IGBSYM_THREADS`` (default 1). Results go to stdout and ``bench/results_chain.json``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from igbsym.spec import NetSpec  # noqa: E402
from igbsym.validation import estimate_gamma  # noqa: E402
from igbsym.validation.stats import ratio_estimate  # noqa: E402

ACTS = {"relu": nn.ReLU, "gelu": nn.GELU, "silu": nn.SiLU, "tanh": nn.Tanh}
ROWS = (("relu", "none"), ("gelu", "none"), ("silu", "none"), ("relu", "layernorm"), ("tanh", "layernorm"))


def user_loop(act, norm, d, N, L, inits, points, seed=0):
    """(a, b) plain units per init, CPU seconds."""
    g = torch.Generator().manual_seed(seed)
    a, b = [], []
    t0 = time.process_time()
    for i in range(inits):
        torch.manual_seed(seed * 100003 + i)
        mods, n = [], d
        for _ in range(L):
            lin = nn.Linear(n, N, bias=False)
            nn.init.kaiming_normal_(lin.weight, nonlinearity="relu")
            mods += [lin] + ([nn.LayerNorm(N, elementwise_affine=False)] if norm == "layernorm" else []) + [ACTS[act]()]
            n = N
        out = nn.Linear(n, 2, bias=False)
        nn.init.kaiming_normal_(out.weight, nonlinearity="relu")
        net = nn.Sequential(*mods, out)
        with torch.no_grad():
            y = net(torch.randn(points, d, generator=g))
        mu, s2 = y.mean(0).double(), y.var(0).double()
        a.append(float((mu**2 - s2 / points).mean()))
        b.append(float(s2.mean()))
    return np.array(a), np.array(b), time.process_time() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--depths", default="1,5,10,20,50")
    ap.add_argument("--loop-inits", type=int, default=32)
    ap.add_argument("--points", type=int, default=1024)
    ap.add_argument("--rows", default=None, help="only these rows, e.g. tanh:layernorm; merged into the results file")
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("IGBSYM_THREADS", "1")))
    d, N, target = 784, 256, 0.01
    rows = []
    todo = ROWS if args.rows is None else [tuple(r.split(":")) for r in args.rows.split(",")]
    for act, norm in todo:
        for L in (int(x) for x in args.depths.split(",")):
            spec = NetSpec(d, (N,) * L, activation=act, norm=None if norm == "none" else norm, placement="pre")
            est = estimate_gamma(spec, target, seed=1)
            a, b, secs = user_loop(act, norm, d, N, L, args.loop_inits, args.points)
            loop = ratio_estimate(a, b)
            scale = abs(loop.value) if est.target == "relative" else 1.0     # absolute SE target where γ = 0
            need = max(args.loop_inits, (loop.se / scale) ** 2 * args.loop_inits / target**2)
            loop_cpu = secs / args.loop_inits * need
            row = dict(activation=act, norm=norm, L=L, gamma=est.value, se=est.se, target=est.target,
                       estimator=est.estimator, units=est.units, cpu_s=est.seconds, loop_gamma=loop.value,
                       loop_se=loop.se, loop_s_per_init=secs / args.loop_inits, loop_inits_needed=math.ceil(need),
                       loop_cpu_s=loop_cpu, speedup=loop_cpu / est.seconds)
            rows.append(row)
            print(f"{act:5s} {norm:9s} L={L:3d}  gamma = {est.value:.4g} +- {est.se:.2g} ({est.estimator}, "
                  f"{est.units} units, {est.seconds:.2f} CPU s)  loop: {loop.value:.4g} +- {loop.se:.2g}, "
                  f"{secs / args.loop_inits:.3f} s/init x {math.ceil(need)} inits = {loop_cpu:.1f} s  "
                  f"-> {loop_cpu / est.seconds:.0f}x", flush=True)
    out = Path(__file__).with_name("results_chain.json")
    if args.rows is not None and out.exists():     # merge: the other rows of the last full run stay
        keep = [r for r in json.loads(out.read_text())["rows"] if (r["activation"], r["norm"]) not in todo]
        rows = keep + rows
    out.write_text(json.dumps(dict(d=d, N=N, target=target, loop_inits=args.loop_inits, points=args.points,
                                   threads=torch.get_num_threads(), rows=rows), indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
