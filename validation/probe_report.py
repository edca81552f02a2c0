"""``igbsym probe``: resolve --model / --data, run ``igbsym.validation.probe.probe`` with a progress bar, print the
summary (or JSON) and write the report (probe.json, report.md, the G_c histogram with the fitted f_G0, the
per-layer plot).

Bad input (unknown names, a factory that is not importable, a model failing on the data, NaN data, < 2 inits or
outputs) raises InputError before anything is written: the report directory is only created after success.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

from igbsym.errors import InputError

from . import datasets
from .models import resolve_model


def run(args) -> int:
    """Entry point of ``igbsym probe`` (args: model, data, inits, classes, zero_bias, device, json, report, seed,
    batch_size, rel_se, max_inits)."""
    import torch
    from tqdm import tqdm

    from .probe import probe
    from .stats import check_rel_se
    if args.rel_se is not None:
        check_rel_se(args.rel_se, "probe --rel-se")   # before the data are loaded
    threads = os.environ.get("IGBSYM_THREADS", "1")
    if not threads.isdigit() or int(threads) < 1:
        raise InputError(f"IGBSYM_THREADS must be a positive integer, got {threads!r}")
    torch.set_num_threads(int(threads))
    ds = datasets.load(args.data, seed=args.seed)
    n_out = args.classes or ds.n_classes or 2
    if n_out < 2:
        raise InputError(f"--classes must be >= 2, got {n_out}")
    model = resolve_model(args.model, ds.data.shape[1:], n_out)
    bars = []   # created at the first progress report, so input errors print one line only

    def progress(frac):
        if not bars:
            bars.append(tqdm(total=1000, desc=f"probe {args.model} on {args.data}", file=sys.stderr, unit="‰"))
        bars[0].update(int(1000 * frac) - bars[0].n)

    try:
        res = probe(model, ds, args.inits, classes=args.classes if ds.labels is not None else None, seed=args.seed,
                    device=args.device, batch_size=args.batch_size, zero_bias=args.zero_bias, progress=progress,
                    rel_se=args.rel_se, max_inits=args.max_inits)
    finally:
        for bar in bars:
            bar.close()
    info = dict(model=args.model, data=args.data, zero_bias=args.zero_bias, **res.to_dict())
    theory = None
    if getattr(args, "theory", False):
        from .translate import compare_with_probe, comparison_text
        info["theory"], theory = compare_with_probe(res, model, ds, res.n_classes, args.zero_bias, args.seed)
    from .translate import compare_finite_width, finite_width_text
    fw = compare_finite_width(args.model, ds, res)
    if fw is not None:
        info["finite_width"] = fw
    print(json.dumps(info, indent=1) if args.json else res.summary()
          + ("\n" + finite_width_text(fw) if fw is not None else "")
          + ("\n" + comparison_text(info["theory"]) if theory is not None else ""))
    if args.report:
        paths = write(Path(args.report), res, info, theory)
        if not args.json:
            print("report: " + ", ".join(str(p) for p in paths))
    return 0


def write(report_dir: Path, res, info: dict, theory=None) -> list:
    """probe.json, probe.png (G_c histogram with f_G0; the per-module γ-like ratio) and report.md in ``report_dir``."""
    report_dir.mkdir(parents=True, exist_ok=True)
    paths = [report_dir / "probe.json", report_dir / "probe.png", report_dir / "report.md"]
    paths[0].write_text(json.dumps(info, indent=1))
    figure(res, f"{info['model']} on {info['data']}", paths[1], theory, info.get("theory"))
    md = [f"# IGB probe: {info['model']} on {info['data']}", "", "```", res.summary(), "```", "",
          f"![G_c histogram and per-module gamma]({paths[1].name})"]
    paths[2].write_text("\n".join(md) + "\n")
    return paths


def figure(res, title: str, path: Path, theory=None, cmp=None) -> Path:
    """Left: histogram of G0 (two outputs) or of all G_c over inits, with the fitted f_G0(γ̂) (igb.pdf) and, with
    ``theory`` (igbsym.nngp.DataTheory), the GP law of G0 on the data. Right (with layer statistics): the γ-like
    ratio Var_W(mean)/E Var_χ per hooked module (± 2 SE) in forward order, and the theory's (``cmp``) as crosses."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [(l.name, l.kind, l.gamma) for l in res.layers if l.gamma is not None]
    fig, axes = plt.subplots(1, 2 if rows else 1, figsize=(11 if rows else 5, 3.6),
                             gridspec_kw=dict(width_ratios=[1, 1.6]) if rows else None, squeeze=False)
    ax = axes[0, 0]
    frac = res.frac.numpy()
    label = "$G_0$" if frac.shape[1] == 2 else "$G_c$ (all classes)"
    ax.hist(frac[:, 0] if frac.shape[1] == 2 else frac.ravel(), bins=40, range=(0, 1), density=True, alpha=0.6,
            label=f"{label}, {res.n_inits} inits")
    if frac.shape[1] == 2 and res.gamma.value > 0:
        g = np.linspace(0.002, 0.998, 400)
        ax.plot(g, res.pdf(g), "r-", label=f"$f_{{G_0}}$ at $\\hat\\gamma$={res.gamma.value:.3g}")
    if theory is not None and theory.law is not None and frac.shape[1] == 2:
        ax.hist(theory.law.draws[:, 0], bins=40, range=(0, 1), density=True, histtype="step", color="k",
                label=f"GP law on the data ($\\gamma_\\infty$={theory.gamma:.3g})")
    ax.set_xlabel(label)
    ax.set_ylabel("density")
    ax.set_title(f"{title}: {res.regime}", fontsize=9)
    ax.legend(fontsize=7)
    if rows:
        ax = axes[0, 1]
        x, vals = np.arange(len(rows)), np.array([g.value for _, _, g in rows])
        ax.errorbar(x, vals, yerr=[2 * g.se for _, _, g in rows], fmt="o-", ms=3)
        if cmp is not None:
            th = {r["name"].split(" ")[0]: r["theory"] for r in cmp["layers"]}
            ax.plot(x, [th.get(n, np.nan) for n, _, _ in rows], "kx", label="theory (infinite width)")
        ax.axhline(res.gamma.value, color="r", ls=":", lw=1, label=f"output $\\hat\\gamma$ = {res.gamma.value:.3g}")
        if (vals > 0).all() and res.gamma.value > 0:
            ax.set_yscale("log")
        else:
            ax.set_yscale("symlog", linthresh=1e-2)
        ax.set_xticks(x, [f"{n} {k}" for n, k, _ in rows], rotation=75, fontsize=6)
        ax.set_ylabel("Var$_W$(mean) / E Var$_\\chi$")
        ax.set_title("γ-like ratio per module (± 2 SE)", fontsize=9)
        ax.legend(fontsize=7)
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)
    return path
