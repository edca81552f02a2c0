"""Time to precision (issue 11 §1): CPU-seconds until γ̂ reaches a 1 % relative standard error.

``python bench/bench_precision.py [--quick]`` — one run, 1 torch thread, writes bench/results_precision.json.

Configurations: d ∈ {1000, 3072}, N = 100, P (data points) ∈ {1000, 20000}, L ∈ {1, 20} hidden layers, ReLU,
Kaiming-normal weights, Gaussian blob data N(0, I_d).

Baseline (what a user writes, and the IGB paper's code does): per init a fresh
``nn.Sequential(Linear(d, N), ReLU, …, Linear(N, 2))`` with ``kaiming_normal_`` weights and zero biases, the whole
fixed dataset X [P, d] forwarded under ``no_grad``; the plain moment estimator (μ_c and the unbiased Var_χ(O_c) per
init, γ̂ = Var_W(μ)/E Var_χ with the 1/D correction: ``igbsym.validation.stats.gamma_units``).

Method (the best applicable estimator, validation/estimators.py):
- L = 1: 'gaussian-rb' — no data at all; exact per init for ReLU (zero variance up to the kernels' 3e-12
  relative error), so it is run to the target directly (2 inits, the minimum for an SE).
- L = 20: ``simulate(shortcut='gaussian', fresh_data=True)`` (first-layer pre-activations z·chol(WᵀW)ᵀ, exact in
  law; every init its own P' fresh Gaussian points) with the Rao–Blackwellised output layer ('rao-blackwell').
  The estimand is γ on N(0, I_d) data, and the 1/D correction makes both units unbiased for it at ANY number of
  points per init, so P' is the method's own cost knob: its pilot tries P' ∈ {100, 300, 1000, P} (≤ P), keeps
  the P' with the least n·t, and the row reports a fresh pilot (another seed) at that P' (no selection bias).
Both are measured by a pilot: per-init CPU time t and the relative SE at one init ρ₁ = SE·√n/γ̂; inits needed
n = (ρ₁/0.01)², time = n·t (stated per row as 'extrapolated'). Same estimand: the L = 1 and L = 20 rows print both
γ̂'s (the baseline's is conditional on its fixed X, which moves it by O(1/√(P d)) relative, far below 1 %).
The pilot's ρ₁ has its own sampling error (≈ 1/√(2n) relative for near-Gaussian units; more for the plain
estimator's heavy-tailed units), so the speed-ups are good to roughly ±30 %.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from igbsym.validation.estimators import gamma_gaussian_rb, gamma_of_sim  # noqa: E402
from igbsym.validation.simulate import NetSpec, simulate  # noqa: E402
from igbsym.validation.stats import gamma_units, ratio_estimate  # noqa: E402
from timing import user_mlp  # noqa: E402

TARGET = 0.01
N = 100
P_CANDIDATES = (100, 300, 1000)     # data points per init tried by the L = 20 method's pilot


def cpu():
    return time.process_time()


def baseline(d, P, L, n_pilot, seed=0):
    """The per-init loop with the plain estimator: (γ̂ Estimate, CPU seconds per init)."""
    gen = torch.Generator().manual_seed(seed)
    X = torch.randn(P, d, generator=gen)
    torch.manual_seed(seed + 1)
    mus, vars_ = [], []
    t0 = cpu()
    for _ in range(n_pilot):
        net = user_mlp(d, L, N)
        with torch.no_grad():
            o = net(X).double()
        mus.append(o.mean(0))
        vars_.append(o.var(0))
    t = (cpu() - t0) / n_pilot
    a, b = gamma_units(torch.stack(mus), torch.stack(vars_), P)
    return ratio_estimate(a, b), t


def method(d, P, L, n_pilot, seed=0):
    """The best applicable estimator with P data points per init: (γ̂ Estimate, CPU seconds per init, name)."""
    spec = NetSpec(d, (N,) * L, activation="relu")
    t0 = cpu()
    if L == 1:
        est = gamma_gaussian_rb(spec, n_pilot, seed=seed)
        name = "gaussian-rb"
    else:
        res = simulate(spec, n_pilot, P, seed=seed, shortcut="gaussian", fresh_data=True, layer_stats="penultimate")
        est = gamma_of_sim(res, "rao-blackwell")
        name = f"shortcut+RB, P'={P}"
    return est, (cpu() - t0) / n_pilot, name


def needed(est):
    """(ρ₁, inits needed for a 1 % relative SE)."""
    rho1 = est.se * math.sqrt(est.n) / abs(est.value)
    return rho1, max(2, math.ceil((rho1 / TARGET) ** 2))


def row(d, P, L, quick):
    flops = 2.0 * P * (d * N + (L - 1) * N * N + 2 * N)
    per_s = 2e10                                     # rough single-thread GEMM rate, only to size the pilots
    n_base = int(min(64, max(12, 30 / (flops / per_s)))) // (4 if quick else 1)
    b, tb = baseline(d, P, L, max(n_base, 8))
    rb, nb = needed(b)
    if L == 1:
        m, tm, name = method(d, P, L, 2)
        rm, nm = needed(m)
        mode = "run to target"
    else:   # P' (data per init) minimising the pilot's n·t, then a fresh pilot (new seed) at that P' is reported
        n_m = 16 if quick else 64
        cost = {}
        for p_ in sorted({q for q in P_CANDIDATES if q < P} | {P}):
            e, t, _ = method(d, p_, L, n_m, seed=1)
            cost[p_] = needed(e)[1] * t
        best = min(cost, key=cost.get)
        m, tm, name = method(d, best, L, n_m, seed=2)
        rm, nm = needed(m)
        mode = "extrapolated"
    pilots = {} if L == 1 else {str(k): v for k, v in cost.items()}
    time_b, time_m = nb * tb, (nm * tm if mode == "extrapolated" else m.n * tm)
    z = (b.value - m.value) / math.hypot(b.se, m.se)
    return dict(d=d, N=N, P=P, L=L, baseline=dict(gamma=b.value, se=b.se, pilot=b.n, s_per_init=tb, rho1=rb,
                                                    inits=nb, seconds=time_b),
                method=dict(name=name, mode=mode, gamma=m.value, se=m.se, pilot=m.n, s_per_init=tm, rho1=rm,
                            inits=nm, seconds=time_m),
                speedup=time_b / time_m, z_same_estimand=z, pilot_seconds_by_P=pilots)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="smaller pilots (a smoke run)")
    p.add_argument("--configs", default="all", help="'all' or a comma list of d:P:L, e.g. 1000:1000:1")
    args = p.parse_args()
    torch.set_num_threads(1)
    configs = [(d, P, L) for d in (1000, 3072) for P in (1000, 20000) for L in (1, 20)] if args.configs == "all" \
        else [tuple(int(v) for v in c.split(":")) for c in args.configs.split(",")]
    rows = []
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread; CPU seconds to a {100 * TARGET:.0f} % "
          "relative SE of γ̂ (ReLU, N = 100, Gaussian data)")
    print(f"{'d':>5} {'P':>6} {'L':>3} | {'baseline γ̂':>11} {'ρ₁':>6} {'s/init':>8} {'inits':>8} {'CPU s':>9} | "
          f"{'method':<25} {'γ̂':>8} {'ρ₁':>8} {'s/init':>8} {'inits':>6} {'CPU s':>8} | {'speed-up':>9} {'z':>5}")
    for d, P, L in configs:
        r = row(d, P, L, args.quick)
        rows.append(r)
        b, m = r["baseline"], r["method"]
        print(f"{d:>5} {P:>6} {L:>3} | {b['gamma']:>11.4f} {b['rho1']:>6.2f} {b['s_per_init']:>8.4f} "
              f"{b['inits']:>8} {b['seconds']:>9.1f} | {m['name']:<25} {m['gamma']:>8.4f} {m['rho1']:>8.2g} "
              f"{m['s_per_init']:>8.4f} {m['inits']:>6} {m['seconds']:>8.3f} | {r['speedup']:>8.0f}x "
              f"{r['z_same_estimand']:>5.1f}", flush=True)
    out = dict(torch=torch.__version__, threads=1, target_rel_se=TARGET, rows=rows,
               note="baseline seconds = inits needed × CPU s/init (pilot); method: run to target at L = 1, "
                    "extrapolated the same way at L = 20")
    (Path(__file__).parent / "results_precision.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
