"""The data theory against the probe at growing widths (thorough sizes of validation/checks_nngp.py), the App. I
table's theory column, and the plot of γ̂(N) against 1/N with γ_∞ marked.

python bench/nngp_validation.py [--out docs] [--quick]: writes <out>/nngp-validation.json, prints the Markdown tables
(docs/nngp-readme-section.md quotes them) and saves <out>/nngp-gamma-vs-inverse-width.png. One process, 1 thread.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

import igbsym
from igbsym.nngp import theory
from igbsym.validation import checks_nngp as C
from igbsym.validation import datasets, models, translate
from igbsym.validation.checks import Context, size

APP_I = ("mlp", "mlp-deep", "cnn-a-linear-avgpool", "cnn-b-linear-avgpool")
APP_I_MEASURED = {   # README's App. I table (48 inits, zero biases, Rao-Blackwellised): digits-parity, blob
    "mlp": ((1.518, 0.015), (0.4668, 0.00012)), "mlp-deep": ((3.492, 0.094), (2.079, 0.037)),
    "cnn-a-linear-avgpool": ((1.735, 0.06), (-0.0003013, 6.6e-06)),
    "cnn-b-linear-avgpool": ((1.912, 0.089), (-0.0002729, 1.1e-05))}


def sweep(ctx):
    rows = []
    for case in size(ctx, "nngp.cases"):
        t0 = time.perf_counter()
        row = C.case_runs(ctx, case)
        row["theory"] = float(igbsym.get("nngp.gamma").numpy(T=row["T"], M_off=row["M_off"]))
        row.update(z=(row["gamma_inf_fit"] - row["theory"]) / row["gamma_inf_fit_se"],
                   seconds=time.perf_counter() - t0)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def app_i(pairs: int):
    out = []
    for dataset in ("digits-parity", "gaussian"):
        ds = datasets.load(dataset)
        for name in APP_I:
            model = models.build(name, ds.data.shape[1:], 2)
            ops, names, _ = translate.translate(model, tuple(ds.data.shape[1:]), zero_bias=True)
            cnn = name.startswith("cnn")
            t0 = time.perf_counter()
            th = theory(ops, ds.data.double().numpy(), names=names, pairs=pairs if cnn else None, with_law=False)
            row = dict(model=name, data=dataset, theory=th.gamma, theory_se=th.gamma_se,
                       seconds=time.perf_counter() - t0)
            out.append(row)
            print(json.dumps(row), flush=True)
    return out


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, (len(rows) + 1) // 2, figsize=(3.2 * ((len(rows) + 1) // 2), 6), squeeze=False)
    for ax, r in zip(axes.ravel(), rows):
        inv = 1 / np.array(r["widths"], float)
        ax.errorbar(inv, r["gamma_hat"], yerr=2 * np.array(r["gamma_hat_se"]), fmt="o", ms=3, label="probe ±2SE")
        xs = np.linspace(0, inv.max() * 1.05, 50)
        b = (np.array(r["gamma_hat"]) - r["gamma_inf_fit"]) @ inv / (inv @ inv)
        ax.plot(xs, r["gamma_inf_fit"] + b * xs, "b:", lw=1, label="fit γ∞ + b/N")
        ax.errorbar([0], [r["gamma_inf_fit"]], yerr=[2 * r["gamma_inf_fit_se"]], fmt="bs", ms=3)
        ax.plot([0], [r["theory"]], "r*", ms=10, label="γ∞ theory")
        ax.set_title(f"{r['case']} (D={r['D']})", fontsize=8)
        ax.set_xlabel("1/N", fontsize=8)
        ax.tick_params(labelsize=7)
    axes.ravel()[0].legend(fontsize=6)
    for ax in axes.ravel()[len(rows):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default="docs")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--pairs", type=int, default=20000)
    p.add_argument("--part", choices=("all", "sweep", "app-i"), default="all")
    args = p.parse_args()
    torch.set_num_threads(1)
    ctx = Context(mode="quick" if args.quick else "thorough", seed=0)
    out = Path(args.out)
    path = out / "nngp-validation.json"
    old = json.loads(path.read_text()) if path.exists() else {}
    rows = sweep(ctx) if args.part != "app-i" else old.get("sweep", [])
    if args.part != "app-i":
        plot(rows, out / "nngp-gamma-vs-inverse-width.png")
    table = app_i(args.pairs) if args.part != "sweep" else old.get("app_i", [])
    path.write_text(json.dumps(dict(sweep=rows, app_i=table), indent=1))
    print("\n| case | D | widths N | probe γ̂(N) ± SE | fit γ∞ ± SE | theory γ∞ | z | KS p (widest N) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        g = ", ".join(f"{v:.4g}±{s:.2g}" for v, s in zip(r["gamma_hat"], r["gamma_hat_se"]))
        print(f"| {r['case']} | {r['D']} | {', '.join(map(str, r['widths']))} | {g} | {r['gamma_inf_fit']:.4g} ± "
              f"{r['gamma_inf_fit_se']:.2g} | {r['theory']:.4g} | {r['z']:.2f} | {r['ks_p']:.2g} |")
    print("\n| model | data | theory γ∞ | measured γ̂ (README) |")
    print("|---|---|---|---|")
    for r in table:
        m = APP_I_MEASURED[r["model"]][0 if r["data"] == "digits-parity" else 1]
        se = f" ± {r['theory_se']:.2g}" if r["theory_se"] else ""
        print(f"| {r['model']} | {r['data']} | {r['theory']:.4g}{se} | {m[0]:.4g} ± {m[1]:.2g} |")


if __name__ == "__main__":
    main()
