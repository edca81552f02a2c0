"""Plot the finite-width breakdown from a sweep store (examples/sweep-width.toml): N·(γ̂ − γ_∞) against N per
(activation, norm, depth), with the predicted a_L (dashed) and the width below which the series is stated not to
hold (|a_L|/N > γ_∞/2, dotted). Where the 1/N series holds the points sit on their a_L; where it fails they leave it.

    python bench/plot_width.py SWEEP.db OUT.png
"""
from __future__ import annotations

import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from igbsym.families import width as W  # noqa: E402
from igbsym.validation.store import Store  # noqa: E402


def main(db, out):
    store = Store(db, create=False)
    points = [p for p in store.points() if p["result"]]
    store.close()
    series = defaultdict(list)
    for p in points:
        lab = p["label"]
        series[(lab["activation"], lab["norm"], lab["depth"])].append((lab["width"], p["result"]))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    for i, ((act, norm, depth), rows) in enumerate(sorted(series.items())):
        ax = axes[0 if norm == "none" else 1]
        rows.sort(key=lambda r: r[0])
        g_inf, a = W.series(depth, act, norm, 0.01, 2 ** 0.5)[-1]
        ns = [n for n, _ in rows]
        y = [n * (r["gamma"] - g_inf) for n, r in rows]
        e = [1.96 * n * r["se"] for n, r in rows]
        line = ax.errorbar(ns, y, yerr=e, fmt="o-", capsize=3, color=f"C{i % 10}", label=f"{act} L={depth}")
        ax.axhline(a, ls="--", color=line[0].get_color(), alpha=0.7)
        if g_inf > 0:
            ax.axvline(2 * abs(a) / g_inf, ls=":", color=line[0].get_color(), alpha=0.7)
    for ax, title in zip(axes, ("no norm: N(gamma_N - gamma_inf)", "LayerNorm after phi: N gamma_N (gamma_inf = 0)")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("width N (= d_in)")
        ax.set_ylabel("N (gamma-hat - gamma_inf)")
        ax.set_title(title + "\ndashed: a_L (width.coefficient); dotted: N = 2|a_L|/gamma_inf", fontsize=9)
        ax.legend(fontsize=7)
    axes[0].set_yscale("symlog", linthresh=1)
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
