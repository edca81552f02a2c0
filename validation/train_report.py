"""``igbsym train``: group trained inits by their initial prejudice, estimate the effect sizes, write the report.

The grouping and the statistics of norm-placement-bn-ln.txt Fig. 2 on a ``validation.train.TrainResult``:

- Prejudice of init i: p_i = max_c G_c − 1/C at step 0 (|G0 − ½| for two classes). Groups: the inits sorted by p
  (ties by init index); **neutral** = the bottom third (⌊I/3⌋ inits), **prejudiced** = the top third; the middle
  third is in neither ("all" has every init).
- Curves: per group and step the mean over inits and its SE (sd/√n) of the global accuracy and of the per-class
  accuracy in the relabelled order (class 0 = the init's dominant class at step 0, ``TrainResult.relabel``).
- Metrics per init, on three curves (global accuracy; the dominant class's; the other classes' mean accuracy):
  **reach** = the first logged step at which the curve is ≥ the target a, **settle** = the first logged step from
  which it stays ≥ a to the end (a prejudiced init's dominant class starts near 1, drops, and must come back:
  its reach time is 0, its settle time is not); resolution: the logged grid. Default target a = 1/C + 0.9·(Ā −
  1/C), Ā the median over inits of the final global accuracy (90 % of the way from chance to the typical final
  accuracy). **Censoring**: an init that never reaches (or is below a at the last step S) is given S, a lower
  bound of its time; group means are then restricted means (of min(T, S)) and the number censored is reported.
  And **gap** = the mean over steps 0..S (trapezoid in the step) of accuracy(dominant) − accuracy(other): the
  per-class asymmetry of Fig. 2 (bottom right) in one number.
- Effect sizes: prejudiced − neutral difference of the group means with the Welch SE √(s₁²/n₁ + s₂²/n₂) and
  z = difference/SE; over all inits the Spearman ρ of p with each metric (censored times tie at S, which keeps
  their ranks right: all exceed S), with the Fisher-z SE √(1.06/(I−3)) of atanh ρ (Fieller, Hartley & Pearson
  1957; 95 % interval tanh(atanh ρ ± 1.96·SE); ``se_fisher`` is its delta-method image (1 − ρ²)·SE on ρ) and a
  bootstrap SE over inits (2000 resamples, seeded). ρ is None (with a note) when a metric or p is the same for
  every init.
"""
from __future__ import annotations

import csv
import json
import math
import os
import sys
from pathlib import Path

import numpy as np
from scipy import stats as sps

from igbsym.errors import InputError

from .stats import Z95

GROUPS = ("all", "neutral", "prejudiced")
CURVES = ("global", "dominant", "other")
METRICS = (*(f"reach_{k}" for k in CURVES), *(f"settle_{k}" for k in CURVES), "gap")
SCATTER = ("reach_global", "reach_other", "settle_dominant", "gap")
N_BOOT = 2000


def groups(res) -> dict:
    """Init indices per group (module docstring: bottom / top third by the initial prejudice)."""
    n = res.n_inits
    k = n // 3
    order = np.argsort(res.prejudice, kind="stable")
    return {"all": np.arange(n), "neutral": np.sort(order[:k]), "prejudiced": np.sort(order[n - k:])}


def class_curves(res) -> dict:
    """[I, T] curves: global accuracy, the dominant class's and the other classes' mean accuracy (relabelled)."""
    rel = res.relabel(res.acc_c)
    return {"global": res.acc, "dominant": rel[:, :, 0], "other": rel[:, :, 1:].mean(2)}


def default_target(res) -> float:
    c = res.n_classes
    return 1.0 / c + 0.9 * (float(np.median(res.acc[:, -1])) - 1.0 / c)


def first_passage(curve: np.ndarray, steps: np.ndarray, target: float) -> tuple:
    """(times [I], censored [I]): the first logged step with curve ≥ target, else the last step (censored)."""
    hit = curve >= target
    reached = hit.any(1)
    times = np.where(reached, steps[np.argmax(hit, 1)], steps[-1])
    return times.astype(float), ~reached


def settling(curve: np.ndarray, steps: np.ndarray, target: float) -> tuple:
    """(times [I], censored [I]): the first logged step from which curve ≥ target to the end, else the last step
    (censored: below the target at the last step)."""
    below = curve < target
    last_below = np.where(below.any(1), below.shape[1] - 1 - np.argmax(below[:, ::-1], 1), -1)
    censored = last_below == below.shape[1] - 1
    times = np.where(censored, steps[-1], steps[np.minimum(last_below + 1, below.shape[1] - 1)])
    return times.astype(float), censored


def gap(res) -> np.ndarray:
    """[I] mean over steps 0..S (trapezoid) of accuracy(dominant class) − mean accuracy(other classes)."""
    c = class_curves(res)
    d, s = c["dominant"] - c["other"], res.steps.astype(float)
    if s[-1] == 0:
        return d[:, 0]
    return ((d[:, 1:] + d[:, :-1]) / 2 * np.diff(s)).sum(1) / s[-1]


def metrics(res, target: float) -> dict:
    """{metric: (values [I], censored [I] or None)} (module docstring)."""
    curves = class_curves(res)
    out = {f"reach_{k}": first_passage(v, res.steps, target) for k, v in curves.items()}
    out.update({f"settle_{k}": settling(v, res.steps, target) for k, v in curves.items()})
    out["gap"] = (gap(res), None)
    return out


def _mean_se(x):
    x = np.asarray(x, float)
    if x.size == 0:
        return dict(mean=None, se=None, n=0)
    return dict(mean=float(x.mean()), se=float(x.std(ddof=1) / math.sqrt(x.size)) if x.size > 1 else None,
                n=int(x.size))


def difference(a, b) -> dict:
    """mean(a) − mean(b) with the Welch SE and z (None if a group has < 2 inits)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.size < 2 or b.size < 2:
        return dict(value=None, se=None, z=None, note="a group has fewer than 2 inits")
    diff, se = float(a.mean() - b.mean()), math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    return dict(value=diff, se=se, z=diff / se if se > 0 else None)


def spearman(x, y, seed: int = 0) -> dict:
    """Spearman ρ with its Fisher-z SE and interval and a bootstrap SE (module docstring)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    n = x.size
    if n < 4 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return dict(rho=None, note="undefined: fewer than 4 inits or a constant variable")
    rho = float(sps.spearmanr(x, y).statistic)
    se_z = math.sqrt(1.06 / (n - 3))
    z = math.atanh(max(min(rho, 1 - 1e-15), -1 + 1e-15))
    rng = np.random.default_rng(seed)
    boot = []
    for _ in range(N_BOOT):
        i = rng.integers(0, n, n)
        if np.ptp(x[i]) > 0 and np.ptp(y[i]) > 0:
            boot.append(sps.spearmanr(x[i], y[i]).statistic)
    return dict(rho=rho, se_fisher=se_z * (1 - rho * rho), lo=math.tanh(z - Z95 * se_z), hi=math.tanh(z + Z95 * se_z),
                se_bootstrap=float(np.std(boot, ddof=1)) if len(boot) > 1 else None, n=n)


def analyse(res, target: float | None = None, seed: int = 0) -> dict:
    """Groups, the metrics' group means, effect sizes and correlations (module docstring)."""
    target = default_target(res) if target is None else float(target)
    grp, mets, p = groups(res), metrics(res, target), res.prejudice
    cens = lambda c, ix: None if c is None else int(c[ix].sum())
    out = dict(target=target, rule="neutral = bottom third, prejudiced = top third of the inits by the initial "
               "prejudice max_c G_c - 1/C (|G0 - 1/2| for two classes)",
               censoring=f"an init not reaching (settling at) the target by the last step S = {int(res.steps[-1])} "
               "counts as S (restricted mean); c = censored inits",
               groups={g: dict(n=int(len(ix)), prejudice=_mean_se(p[ix]),
                               prejudice_range=[float(p[ix].min()), float(p[ix].max())] if len(ix) else None,
                               final_accuracy=_mean_se(res.acc[ix, -1]),
                               metrics={k: dict(**_mean_se(v[ix]), censored=cens(c, ix))
                                        for k, (v, c) in mets.items()})
                       for g, ix in grp.items()},
               effect={k: difference(v[grp["prejudiced"]], v[grp["neutral"]]) for k, (v, _) in mets.items()},
               correlation={k: spearman(p, v, seed) for k, (v, _) in mets.items()})
    out["per_init"] = dict(prejudice=p.tolist(), **{k: v.tolist() for k, (v, _) in mets.items()},
                           **{f"censored_{k}": c.tolist() for k, (_, c) in mets.items() if c is not None})
    return out


def mean_curves(res) -> dict:
    """{group: {quantity: (mean [T], se [T])}} for the global accuracy and loss and the relabelled per-class
    accuracy (acc_r0 = dominant class)."""
    rel = res.relabel(res.acc_c)
    qs = {"acc": res.acc, "loss": res.loss, **{f"acc_r{r}": rel[:, :, r] for r in range(res.n_classes)}}
    out = {}
    for g, ix in groups(res).items():
        out[g] = {}
        for q, v in qs.items():
            x = v[ix]
            se = x.std(0, ddof=1) / math.sqrt(len(ix)) if len(ix) > 1 else np.full(x.shape[1], np.nan)
            out[g][q] = (x.mean(0) if len(ix) else np.full(x.shape[1], np.nan), se)
    return out


# --------------------------------------------------------------------------------------------- text and files
def _fmt(d, digits=4):
    if d["mean"] is None:
        return "-"
    return f"{d['mean']:.{digits}g}" + (f" ± {d['se']:.2g}" if d["se"] is not None else "")


def summary(res, ana: dict) -> str:
    G = ana["groups"]
    lines = [f"{res.n_inits} inits × {int(res.steps[-1])} steps ({res.config['optimizer']}, lr {res.config['lr']:g}, "
             f"batch {res.config['batch']}), path {res.path} ({res.path_note}); trained {res.computed}, from the "
             f"store {res.reused}; {res.seconds:.1f} s",
             f"groups: {ana['rule']}"]
    lines += [f"  {g:<10} {G[g]['n']:>4} inits, prejudice {_fmt(G[g]['prejudice'], 3)} (range "
              f"{G[g]['prejudice_range'][0]:.3f}..{G[g]['prejudice_range'][1]:.3f}), final accuracy "
              f"{_fmt(G[g]['final_accuracy'])}" for g in GROUPS if G[g]["n"]]
    lines += [f"target accuracy a = {ana['target']:.4f}; {ana['censoring']}",
              f"{'metric':<16} {'all':>20} {'neutral':>20} {'prejudiced':>20} {'prejudiced - neutral':>28}  "
              "Spearman rho(prejudice, metric) ± SE (Fisher; bootstrap)"]
    for k in METRICS:
        cells = []
        for g in GROUPS:
            d = G[g]["metrics"][k]
            tail = "" if d["censored"] is None else f" ({d['censored']} c)"
            cells.append(f"{_fmt(d) + tail:>20}")
        e, r = ana["effect"][k], ana["correlation"][k]
        eff = "-" if e["value"] is None else (f"{e['value']:+.4g} ± {e['se']:.2g}"
                                              + (f" (z = {e['z']:+.2f})" if e["z"] is not None else ""))
        cor = (f"{r['rho']:+.3f} ± {r['se_fisher']:.2g}; ± {r['se_bootstrap']:.2g}  [{r['lo']:+.2f}, {r['hi']:+.2f}]"
               if r["rho"] is not None else r["note"])
        lines.append(f"{k:<16} {' '.join(cells)} {eff:>28}  {cor}")
    lines.append("(reach/settle: logged steps to the target accuracy; gap: mean over steps of accuracy(dominant) - "
                 "accuracy(other))")
    lines += [f"note: {n}" for n in res.notes]
    return "\n".join(lines)


def write(report_dir: Path, res, ana: dict, info: dict) -> list:
    """train.json, inits.csv, curves.csv, train_curves.png, train_scatter.png and report.md in ``report_dir``."""
    report_dir.mkdir(parents=True, exist_ok=True)
    names = ("train.json", "inits.csv", "curves.csv", "train_curves.png", "train_scatter.png", "report.md")
    paths = [report_dir / n for n in names]
    paths[0].write_text(json.dumps(info, indent=1))
    grp, C = groups(res), res.n_classes
    member = {i: g for g in ("neutral", "prejudiced") for i in grp[g]}
    with paths[1].open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["init", *(f"G{c}" for c in range(C)), "prejudice", "dominant_label", "group", "final_acc",
                    *METRICS, *(f"censored_{k}" for k in METRICS if k != "gap")])
        pi = ana["per_init"]
        for i in range(res.n_inits):
            w.writerow([i, *(f"{v:.6g}" for v in res.g[i]), f"{res.prejudice[i]:.6g}", int(res.order[i, 0]),
                        member.get(i, "middle"), f"{res.acc[i, -1]:.6g}", *(f"{pi[k][i]:.6g}" for k in METRICS),
                        *(int(pi[f"censored_{k}"][i]) for k in METRICS if k != "gap")])
    curves = mean_curves(res)
    with paths[2].open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["step", "group", "quantity", "mean", "se"])
        for g, qs in curves.items():
            for q, (m, s) in qs.items():
                w.writerows([int(t), g, q, f"{a:.6g}", f"{b:.6g}"] for t, a, b in zip(res.steps, m, s))
    title = f"{info['model']} on {info['data']}"
    curves_figure(res, curves, ana, title, paths[3])
    scatter_figure(res, ana, title, paths[4])
    md = [f"# Training from prejudiced and neutral inits: {title}", "", "```", summary(res, ana), "```", "",
          f"![curves]({names[3]})", "", f"![scatter]({names[4]})"]
    paths[5].write_text("\n".join(md) + "\n")
    return paths


# --------------------------------------------------------------------------------------------- figures
COLOURS = {"all": "0.3", "neutral": "tab:blue", "prejudiced": "tab:red"}


def _band(ax, steps, mean, se, **kw):
    line, = ax.plot(steps, mean, **kw)
    ax.fill_between(steps, mean - se, mean + se, color=line.get_color(), alpha=0.2, lw=0)


def curves_figure(res, curves: dict, ana: dict, title: str, path: Path) -> Path:
    """Fig. 2 of norm-placement-bn-ln.txt: global (top) and per-class (bottom, relabelled: class 0 = dominant)
    training accuracy, mean ± SE over inits; left unfiltered, right the neutral and prejudiced groups."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, 2, figsize=(9, 6.2), sharex=True, sharey="row")
    s = res.steps
    for col, gs in enumerate((("all",), ("neutral", "prejudiced"))):
        for g in gs:
            n = ana["groups"][g]["n"]
            lab = f"{g} ({n} inits)"
            _band(axes[0, col], s, *curves[g]["acc"], color=COLOURS[g], label=lab)
            _band(axes[1, col], s, *curves[g]["acc_r0"], color=COLOURS[g], label=f"{g}: class 0 (dominant)")
            other = [curves[g][f"acc_r{r}"] for r in range(1, res.n_classes)]
            _band(axes[1, col], s, np.mean([m for m, _ in other], 0), np.sqrt(np.mean([e * e for _, e in other], 0)
                                                                              / len(other)),
                  color=COLOURS[g], ls="--", label=f"{g}: class 1" + (" (others' mean)" if len(other) > 1 else ""))
        for row in range(2):
            ax = axes[row, col]
            ax.axhline(ana["target"], color="k", ls=":", lw=0.8, label=f"target a = {ana['target']:.3f}")
            ax.set_xscale("symlog", linthresh=1)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7, loc="lower right")
        axes[0, col].set_title("unfiltered (random inits)" if col == 0 else
                               "filtered by initial $|G_0 - 1/2|$ (bottom / top third)", fontsize=9)
        axes[1, col].set_xlabel("training step")
    axes[0, 0].set_ylabel("global training accuracy")
    axes[1, 0].set_ylabel("per-class training accuracy")
    ins = axes[0, 0].inset_axes([0.08, 0.55, 0.3, 0.35])
    ins.hist(res.g[:, 0], bins=20, range=(0, 1), color="0.5")
    ins.set_xlabel("$G_0$ at init", fontsize=6)
    ins.tick_params(labelsize=5)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def scatter_figure(res, ana: dict, title: str, path: Path) -> Path:
    """Initial prejudice against the metrics of SCATTER (steps to the target: global and other class reach,
    dominant class settle; the per-class gap); censored inits as open markers at the last step."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(SCATTER), figsize=(12, 3.2))
    p, pi = np.asarray(ana["per_init"]["prejudice"]), ana["per_init"]
    for ax, k in zip(axes, SCATTER):
        v = np.asarray(pi[k])
        c = np.asarray(pi.get(f"censored_{k}", np.zeros(v.size)), bool)
        ax.scatter(p[~c], v[~c], s=12, color="tab:purple", label="inits" if k == "gap" else "reached")
        if c.any():
            ax.scatter(p[c], v[c], s=14, facecolors="none", edgecolors="k", label="censored at the last step")
        r = ana["correlation"][k]
        rho = f"ρ = {r['rho']:+.2f} ± {r['se_fisher']:.2f}" if r["rho"] is not None else "ρ undefined"
        ax.set_title(f"{k.replace('_', ' ')}: Spearman {rho}", fontsize=8)
        ax.set_xlabel("initial prejudice $\\max_c G_c - 1/C$")
        ax.set_ylabel("acc(dominant) - acc(other), step mean" if k == "gap"
                      else f"steps to accuracy {ana['target']:.3f}", fontsize=8)
        if k != "gap":
            ax.set_yscale("symlog", linthresh=1)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def run(args) -> int:
    """Entry point of ``igbsym train`` (args: model, data, inits, steps, lr, optimizer, batch_size, classes,
    zero_bias, seed, report, json). The store (train.db) lives in --report; a re-run resumes there."""
    import torch
    from tqdm import tqdm

    from igbsym.files import writable_dir

    from .train import train
    threads = os.environ.get("IGBSYM_THREADS", "1")
    if not threads.isdigit() or int(threads) < 1:
        raise InputError(f"IGBSYM_THREADS={threads!r} is not allowed; allowed: a positive integer")
    torch.set_num_threads(int(threads))
    if args.inits is not None and args.inits < 3:
        raise InputError(f"--inits {args.inits} is not allowed; allowed: an integer >= 3 (three groups by prejudice)")
    report = writable_dir(args.report, "--report") if args.report else None
    bars = []

    def progress(frac):
        if not bars:
            bars.append(tqdm(total=1000, desc=f"train {args.model} on {args.data}", file=sys.stderr, unit="‰"))
        bars[0].update(int(1000 * frac) - bars[0].n)

    try:
        res = train(args.model, args.data, args.inits, args.steps, classes=args.classes, lr=args.lr,
                    optimizer=args.optimizer, batch_size=args.batch_size, seed=args.seed, zero_bias=args.zero_bias,
                    store=None if report is None else report / "train.db", progress=progress)
    finally:
        for bar in bars:
            bar.close()
    ana = analyse(res, seed=args.seed)
    info = dict(model=args.model, data=args.data, path=res.path, path_note=res.path_note, config=res.config,
                n_inits=res.n_inits, trained=res.computed, from_store=res.reused, seconds=res.seconds,
                notes=res.notes, **{k: v for k, v in ana.items() if k != "per_init"})
    print(json.dumps(info, indent=1) if args.json else summary(res, ana))
    if report is not None:
        paths = write(report, res, ana, info)
        if not args.json:
            print("report: " + ", ".join(str(p) for p in paths))
    return 0
