"""Benchmarks of the data theory (igbsym.nngp), ratios in one run: the kernel walk and the GP law against simulating
the same precision with the probe.

Targets (issue 26): the kernel of a depth-10 MLP over all 1797 digits <= 2 s; 10^5 draws of G0 <= 10 s; a
two-conv-layer CNN-GP (cnn-gap) on 300 digits <= 5 min within 8 GB; larger D by pair sampling with a stated SE.
"Same precision with the probe": the probe's γ̂ at one width N (which still carries its O(1/N) bias) needs
I = (SE₁/target)² inits for a relative SE ``target``; its cost is I × (seconds per init), measured on a pilot.
python bench/bench_nngp.py [--json FILE]; 1 thread.
"""
from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np
import torch

from igbsym.nngp import law as L
from igbsym.nngp import theory
from igbsym.nngp.walk import walk
from igbsym.spec import NetSpec
from igbsym.validation import datasets, models
from igbsym.validation.probe import probe


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def probe_cost(name, x, width, pilot, target):
    """(seconds for a relative SE ``target``, SE per sqrt(init)) from a pilot of ``pilot`` inits at ``width``."""
    factory = models.SpecFactory(models.spec_ops(name, width), x.shape[1:])
    res, sec = timed(lambda: probe(factory, x, pilot, seed=1, zero_bias=True, layers=False))
    rel = res.gamma.se / abs(res.gamma.value)
    inits = max(pilot, int(np.ceil(pilot * (rel / target) ** 2)))
    return sec / pilot * inits, inits, res.gamma.value, res.gamma.se


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--json", default=None)
    args = p.parse_args()
    torch.set_num_threads(1)
    out = {}
    digits = datasets.load("digits").data.double().numpy()
    ops = NetSpec(None, (None,) * 10, "relu").all_ops()
    walk(ops, digits[:50])                                         # warm-up (imports, caches)
    w, out["depth10_kernel_1797_s"] = timed(lambda: walk(ops, digits))
    print(f"depth-10 MLP kernel, 1797 digits: {out['depth10_kernel_1797_s']:.2f} s (target <= 2 s)", flush=True)
    K = walk(NetSpec(None, (None,), "relu").all_ops(), digits).kernel
    law, out["g0_1e5_draws_s"] = timed(lambda: L.sample(K, 100000, 2, seed=0))
    out["g0_rank"] = law.rank
    print(f"10^5 draws of G0 (mlp on digits, rank {law.rank}): {out['g0_1e5_draws_s']:.2f} s (target <= 10 s)",
          flush=True)
    law10, out["g10_1e4_draws_s"] = timed(lambda: L.sample(K, 10000, 10, seed=0))
    print(f"10^4 draws of (G_1..G_10): {out['g10_1e4_draws_s']:.2f} s", flush=True)
    cnn_ops = models.spec_ops("cnn-gap", 1)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    th, out["cnn_gp_300_s"] = timed(lambda: theory(cnn_ops, digits[:300], with_law=False))
    out["cnn_gp_300_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"CNN-GP (cnn-gap, 2 conv layers) on 300 digits: {out['cnn_gp_300_s']:.1f} s, peak RSS "
          f"{out['cnn_gp_300_peak_rss_mb']:.0f} MB (before: {rss0 / 1024:.0f} MB) (targets <= 300 s, 8 GB); "
          f"gamma = {th.gamma:.5g}", flush=True)
    sub, out["cnn_gp_1797_pairs_s"] = timed(lambda: theory(cnn_ops, digits, pairs=20000, seed=0))
    out["cnn_gp_1797_pairs_gamma"], out["cnn_gp_1797_pairs_se"] = sub.gamma, sub.gamma_se
    print(f"CNN-GP on all 1797 digits by 20000 sampled pairs: gamma = {sub.gamma:.5g} ± {sub.gamma_se:.2g}, "
          f"{out['cnn_gp_1797_pairs_s']:.1f} s", flush=True)
    # the probe at the same precision (relative SE 1 % for the MLP, 2 % for the CNN), one width
    th_mlp, t_mlp = timed(lambda: theory(NetSpec(None, (None,), "relu"), digits, with_law=False))
    sec, inits, g, se = probe_cost("mlp", torch.from_numpy(digits).float(), 1024, 16, 0.01)
    out["mlp"] = dict(theory_s=t_mlp, theory=th_mlp.gamma, probe_s=sec, probe_inits=inits, ratio=sec / t_mlp)
    print(f"mlp on digits: theory {t_mlp:.2f} s (gamma_inf {th_mlp.gamma:.5g}); probe at N = 1024 for 1 % SE: "
          f"{inits} inits, {sec:.1f} s (pilot gamma_hat {g:.4g} ± {se:.2g}): ratio {sec / t_mlp:.0f}x", flush=True)
    sec, inits, g, se = probe_cost("cnn-gap", torch.from_numpy(digits[:300]).float(), 128, 8, 0.02)
    out["cnn_gap"] = dict(theory_s=out["cnn_gp_300_s"], theory=th.gamma, probe_s=sec, probe_inits=inits,
                          ratio=sec / out["cnn_gp_300_s"])
    print(f"cnn-gap on 300 digits: theory {out['cnn_gp_300_s']:.1f} s (gamma_inf {th.gamma:.5g}); probe at N = 128 "
          f"for 2 % SE: {inits} inits, {sec:.1f} s (pilot gamma_hat {g:.4g} ± {se:.2g}): ratio "
          f"{sec / out['cnn_gp_300_s']:.1f}x", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
