"""Time to a 1 % SE on γ̂: the finite-width control variates vs Rao–Blackwell vs the per-init loop (issue 28, Speed).

``python bench/bench_width_cv.py [--quick] [--configs relu:5,gelu:10]`` — one run, 1 torch thread, side by side,
writes bench/results_width_cv.json.

Network: MLP d = 784 → L × (Dense(256, no bias) → φ) → Dense(2), Kaiming-normal weights (σ_w = √2), φ ∈ {ReLU,
GELU}; the estimand is γ on N(0, I_d) data.
- loop: what a user writes (a fresh ``nn.Sequential`` per init, ``kaiming_normal_``, zero biases, one fixed
  dataset of P = 1000 points under ``no_grad``) with the plain moment estimator (``gamma_units``).
- RB: ``simulate(shortcut='gaussian', fresh_data=True)`` with P' = 100 fresh points per init and the
  Rao–Blackwellised output layer (README "Time to a 1 % relative SE": the existing best for L > 1).
- CV: validation/control_variate.py on the same P' = 100 points per init, β cross-fitted in 4 folds
  (``gamma_cv_crossfit``: no separate pilot) on n = max(200, 2k) inits (k = 6L − 4 CVs).
Each: per-init CPU time t and ρ₁ = SE·√n/γ̂ from a pilot of n inits; inits to 1 % = (ρ₁/0.01)² (CV: at least
the n it was measured at, so the cross-fit's β noise is never extrapolated below it); time = inits × t. The
variance factor is (ρ₁ of the CV's own units without CVs / ρ₁ with them)² (≈ 1/(1 − R²), R² printed in sample);
the CV and RB estimates (other seeds, so independent) are compared by z. 'CV/RB 0.1%': the same time ratio
for a 0.1 % SE (100× the inits; the CV's ρ₁ measured at its floor is conservative there).
ρ₁ carries ≈ 1/√(2n) relative sampling error (more for the loop's heavy-tailed units): ratios ±20–30 %.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from igbsym.validation import control_variate as cv  # noqa: E402
from igbsym.validation.estimators import gamma_of_sim  # noqa: E402
from igbsym.validation.simulate import NetSpec, simulate  # noqa: E402
from igbsym.validation.stats import gamma_units, ratio_estimate  # noqa: E402
from timing import user_mlp  # noqa: E402

TARGET = 0.01
D_IN, N, P_LOOP, P_FRESH = 784, 256, 1000, 100
ACT = {"relu": nn.ReLU, "gelu": nn.GELU}


def cpu():
    return time.process_time()


def inits_needed(est):
    rho1 = cv.rel_se_one(est)
    return rho1, max(2, math.ceil((rho1 / TARGET) ** 2))


def loop(act, L, n, seed=0):
    """The per-init loop with the plain estimator: (Estimate, CPU s per init)."""
    X = torch.randn(P_LOOP, D_IN, generator=torch.Generator().manual_seed(seed))
    torch.manual_seed(seed + 1)
    mus, vars_ = [], []
    t0 = cpu()
    for _ in range(n):
        net = user_mlp(D_IN, L, N, ACT[act])
        with torch.no_grad():
            o = net(X).double()
        mus.append(o.mean(0))
        vars_.append(o.var(0))
    t = (cpu() - t0) / n
    return ratio_estimate(*gamma_units(torch.stack(mus), torch.stack(vars_), P_LOOP)), t


def rb(act, L, n, seed=1):
    spec = NetSpec(D_IN, (N,) * L, activation=act)
    t0 = cpu()
    res = simulate(spec, n, P_FRESH, seed=seed, shortcut="gaussian", fresh_data=True, layer_stats="penultimate")
    est = gamma_of_sim(res, "rao-blackwell")
    return est, (cpu() - t0) / n


def control(act, L, n_min, seed=2):
    """CV with β cross-fitted in 4 folds on n = max(n_min, 2k) inits (k CVs): (Estimate, CPU s/init, n floor, R²,
    the same units without CVs)."""
    spec = NetSpec(D_IN, (N,) * L, activation=act)
    n = max(n_min, 2 * (6 * L - 4))
    t0 = cpu()
    a, b, X = cv.units_and_cvs(spec, range(n), P_FRESH, seed=seed)
    est = cv.gamma_cv_crossfit(a, b, X, folds=4)
    t = (cpu() - t0) / n
    return est, t, n, cv.explained(a, b, X, cv.fit(a, b, X)), ratio_estimate(a, b)


def row(act, L, quick):
    n_loop, n_rb, n_cv = (8, 32, 64) if quick else (24, 128, 200)
    lo, t_lo = loop(act, L, n_loop)
    r_lo, i_lo = inits_needed(lo)
    r, t_r = rb(act, L, n_rb)
    r_r, i_r = inits_needed(r)
    c, t_c, n_floor, r2, plain = control(act, L, n_cv)
    r_c, i_c = inits_needed(c)
    i_c = max(i_c, n_floor)           # the 4-fold fit was measured at n_floor inits: never extrapolate below it
    s_lo, s_r, s_c = i_lo * t_lo, i_r * t_r, i_c * t_c
    fine = (i_r * 100 * t_r) / (max(100 * (r_c / TARGET) ** 2, n_floor) * t_c)    # the same at a 0.1 % SE
    return dict(activation=act, L=L, d=D_IN, N=N,
                loop=dict(gamma=lo.value, se=lo.se, n=lo.n, s_per_init=t_lo, rho1=r_lo, inits=i_lo, seconds=s_lo),
                rb=dict(gamma=r.value, se=r.se, n=r.n, s_per_init=t_r, rho1=r_r, inits=i_r, seconds=s_r),
                cv=dict(gamma=c.value, se=c.se, n=c.n, s_per_init=t_c, rho1=r_c, inits=i_c, seconds=s_c,
                        measured_at=n_floor, explained_in_sample=r2,
                        rho1_without_cv=cv.rel_se_one(plain)),
                variance_factor=(cv.rel_se_one(plain) / r_c) ** 2, speedup_vs_loop=s_lo / s_c,
                speedup_vs_rb=s_r / s_c, rb_vs_loop=s_lo / s_r, speedup_vs_rb_at_0p1pct=fine,
                z_cv_vs_rb=(c.value - r.value) / math.hypot(c.se, r.se))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="small pilots (a smoke run)")
    p.add_argument("--configs", default="relu:5,relu:10,relu:20,gelu:5,gelu:10,gelu:20",
                   help="comma list of activation:depth")
    args = p.parse_args()
    torch.set_num_threads(1)
    rows = []
    print(f"CPU s to a {100 * TARGET:.0f} % SE on γ̂, d = {D_IN}, N = {N} (1 thread; loop P = {P_LOOP}, RB and CV "
          f"P' = {P_FRESH} fresh points per init)")
    print(f"{'act':>5} {'L':>3} | {'loop ρ₁':>7} {'CPU s':>8} | {'RB ρ₁':>6} {'CPU s':>7} | {'CV ρ₁':>6} {'R²':>5} "
          f"{'var×':>6} {'s/init':>7} {'inits':>6} {'CPU s':>7} | {'CV/loop':>8} {'CV/RB':>6} {'RB/loop':>7} "
          f"{'z':>5} {'CV/RB 0.1%':>10}")
    for c in args.configs.split(","):
        act, L = c.split(":")
        r = row(act, int(L), args.quick)
        rows.append(r)
        lo, b, m = r["loop"], r["rb"], r["cv"]
        print(f"{act:>5} {L:>3} | {lo['rho1']:>7.3f} {lo['seconds']:>8.1f} | {b['rho1']:>6.3f} {b['seconds']:>7.1f} | "
              f"{m['rho1']:>6.3f} {m['explained_in_sample']:>5.2f} {r['variance_factor']:>6.1f} "
              f"{m['s_per_init']:>7.4f} {m['inits']:>6} {m['seconds']:>7.1f} | {r['speedup_vs_loop']:>7.0f}x "
              f"{r['speedup_vs_rb']:>5.1f}x {r['rb_vs_loop']:>6.0f}x {r['z_cv_vs_rb']:>5.1f} "
              f"{r['speedup_vs_rb_at_0p1pct']:>9.1f}x", flush=True)
    out = dict(torch=torch.__version__, threads=1, target_rel_se=TARGET, rows=rows, quick=args.quick,
               note="seconds = inits needed x CPU s/init from a pilot; CV: beta cross-fitted in 4 folds, "
                    "inits floored at the 8k it was measured at")
    (Path(__file__).parent / "results_width_cv.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
