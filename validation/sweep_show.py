"""``igbsym sweep show DB [--format table|csv|json] [--plot DIR]``: the points of a sweep store, and plots of γ
against each numeric axis (error bars ±1.96 SE, the registered prediction as a dashed line of the same colour, the
finite-width one, width.gamma, dotted), with the judged columns pred_N, z_N and verdict (validation/sweep.py)."""
from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

from igbsym.errors import InputError

from .store import Store

FORMATS = ("table", "csv", "json")
COLUMNS = ("inits", "gamma", "se", "pred", "z", "pred_N", "z_N", "verdict", "ks_p")
TARGET_COLUMNS = ("rel_se_achieved", "target_met")


def _axes(points) -> list:
    """The label keys of all points, in first-seen order."""
    out = []
    for p in points:
        out += [k for k in p["label"] if k not in out]
    return out


def rows(points) -> tuple:
    """(header, rows of strings-or-numbers) for the table and CSV; ``inits`` is the count a finished point used,
    and points run to a target SE (--rel-se) add the achieved SE and whether the target was met."""
    axes = _axes(points)
    cols = COLUMNS + (TARGET_COLUMNS if any("rel_se" in (p["result"] or {}) for p in points) else ())
    header = ["key", *axes, *cols, "status"]
    out = []
    for p in points:
        r = p["result"] or {}
        n_chunks = -(-p["inits"] // p["chunk"])
        status = "done" if p["result"] else f"partial {p['chunks']}/{n_chunks} chunks"
        out.append([p["key"][:10], *(p["label"].get(a, "-") for a in axes),
                    r.get("inits", p["inits"]), *(r.get(c) for c in cols[1:]), status])
    return header, out


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def table(points) -> str:
    header, body = rows(points)
    cells = [header] + [[_fmt(v) for v in r] for r in body]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells)


def to_csv(points) -> str:
    header, body = rows(points)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows([["" if v is None else v for v in r] for r in body])
    return buf.getvalue().rstrip("\n")


def plot(points, outdir) -> list:
    """One PNG per numeric axis: γ̂ ± 1.96 SE vs the axis, a series per combination of the other axes."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    done = [p for p in points if p["result"]]
    axes = _axes(done)
    numeric = [a for a in axes if all(isinstance(p["label"].get(a), (int, float)) and
                                      not isinstance(p["label"].get(a), bool) for p in done)]
    paths = []
    for x in numeric:
        others = [a for a in axes if a != x]
        series = {}
        for p in done:
            series.setdefault(tuple(p["label"].get(a, "-") for a in others), []).append(p)
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        for i, (name, pts) in enumerate(sorted(series.items(), key=lambda kv: str(kv[0]))):
            pts = sorted(pts, key=lambda p: p["label"][x])
            xs = [p["label"][x] for p in pts]
            g = [p["result"]["gamma"] for p in pts]
            e = [1.96 * p["result"]["se"] for p in pts]
            label = ", ".join(f"{a}={v}" for a, v in zip(others, name)) or "measured"
            line = ax.errorbar(xs, g, yerr=e, fmt="o", capsize=3, label=label, color=f"C{i % 10}")
            pred = [(xv, p["result"]["pred"]) for xv, p in zip(xs, pts) if p["result"]["pred"] is not None]
            if pred:
                ax.plot(*zip(*pred), "--", color=line[0].get_color(), alpha=0.8)
            pred_n = [(xv, p["result"]["pred_N"]) for xv, p in zip(xs, pts)
                      if p["result"].get("pred_N") is not None]
            if pred_n:
                ax.plot(*zip(*pred_n), ":", color=line[0].get_color(), alpha=0.8)
        ax.set(xlabel=x, ylabel="gamma (output)",
               title=f"gamma vs {x}: ±1.96 SE; dashed: N = inf form, dotted: width.gamma")
        if max(p["label"][x] for p in done) > 8 * max(min(p["label"][x] for p in done), 1e-300):
            ax.set_xscale("log", base=2)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = outdir / f"gamma_vs_{x}.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        paths.append(path)
    return paths


def cmd_show(args) -> int:
    if args.db_pos is None:
        raise InputError("sweep show: give the database file: igbsym sweep show DB [--format table|csv|json] "
                         "[--plot DIR]")
    for flag in ("db", "inits", "device", "mode"):
        if getattr(args, flag, None) is not None:
            name = "quick|--thorough" if flag == "mode" else flag
            raise InputError(f"sweep show: --{name} belongs to 'igbsym sweep GRID.toml'; allowed here: --format, "
                             "--plot")
    fmt = args.format or "table"
    if fmt not in FORMATS:
        raise InputError(f"sweep show: --format {fmt!r} is not allowed; allowed: {', '.join(FORMATS)}")
    store = Store(args.db_pos, create=False)
    try:
        points = store.points()
    finally:
        store.close()
    if fmt == "json":
        print(json.dumps(points, indent=1))
    elif fmt == "csv":
        print(to_csv(points))
    else:
        print(table(points))
    if args.plot:
        for path in plot(points, args.plot):
            print(f"wrote {path}", file=sys.stderr)
    return 0
