"""``igbsym probe``: resolve --model / --data, run ``igbsym.validation.probe.probe`` with a progress bar, print the summary
(or JSON) and write the report (probe.json, report.md, the G_c histogram with the fitted f_G0, the per-layer plot).

Bad input (unknown names, a factory that is not importable, a model failing on the data, NaN data, < 2 inits or
outputs) raises InputError before anything is written: the report directory is only created after success.
"""
from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path

import numpy as np

from igbsym.errors import InputError

from . import datasets, models


def resolve_model(spec: str, input_shape, n_classes: int):
    """A built-in name (igbsym.validation.models.NAMES) or ``module.path:attr`` (an nn.Module instance or class, or a
    factory seed -> nn.Module / (seed, i) -> nn.Module)."""
    if ":" not in spec:
        return models.build(spec, input_shape, n_classes)
    mod_name, _, attr = spec.partition(":")
    try:
        obj = getattr(importlib.import_module(mod_name), attr)
    except Exception as exc:   # ImportError, AttributeError, or an error raised while importing the module
        raise InputError(f"cannot import model factory {spec!r}: {type(exc).__name__}: {exc}") from None
    import torch
    if isinstance(obj, type) and issubclass(obj, torch.nn.Module):
        try:
            return obj()
        except Exception as exc:
            raise InputError(f"cannot instantiate {spec!r} without arguments: {exc}") from None
    if not (isinstance(obj, torch.nn.Module) or callable(obj)):
        raise InputError(f"{spec!r} is a {type(obj).__name__}, not an nn.Module or a factory")
    return obj


def run(args) -> int:
    """Entry point of ``igbsym probe`` (args: model, data, inits, classes, zero_bias, device, json, report, seed,
    batch_size)."""
    import torch
    from tqdm import tqdm

    from .probe import probe
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
                    device=args.device, batch_size=args.batch_size, zero_bias=args.zero_bias, progress=progress)
    finally:
        for bar in bars:
            bar.close()
    info = dict(model=args.model, data=args.data, zero_bias=args.zero_bias, **res.to_dict())
    print(json.dumps(info, indent=1) if args.json else res.summary())
    if args.report:
        paths = write(Path(args.report), res, info)
        if not args.json:
            print("report: " + ", ".join(str(p) for p in paths))
    return 0


def write(report_dir: Path, res, info: dict) -> list:
    """probe.json, probe.png (G_c histogram with f_G0; the per-module γ-like ratio) and report.md in ``report_dir``."""
    report_dir.mkdir(parents=True, exist_ok=True)
    paths = [report_dir / "probe.json", report_dir / "probe.png", report_dir / "report.md"]
    paths[0].write_text(json.dumps(info, indent=1))
    figure(res, f"{info['model']} on {info['data']}", paths[1])
    md = [f"# IGB probe: {info['model']} on {info['data']}", "", "```", res.summary(), "```", "",
          f"![G_c histogram and per-module gamma]({paths[1].name})"]
    paths[2].write_text("\n".join(md) + "\n")
    return paths


def figure(res, title: str, path: Path) -> Path:
    """Left: histogram of G0 (two outputs) or of all G_c over inits, with the fitted f_G0(γ̂) (igb.pdf). Right (with
    layer statistics): the γ-like ratio Var_W(mean)/E Var_χ per hooked module (± 2 SE) in forward order."""
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
    ax.set_xlabel(label)
    ax.set_ylabel("density")
    ax.set_title(f"{title}: {res.regime}", fontsize=9)
    ax.legend(fontsize=7)
    if rows:
        ax = axes[0, 1]
        x, vals = np.arange(len(rows)), np.array([g.value for _, _, g in rows])
        ax.errorbar(x, vals, yerr=[2 * g.se for _, _, g in rows], fmt="o-", ms=3)
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
