"""The validation report: console table, report.md (table, finite-size notes, embedded PNGs), results.json and
table.tex (a LaTeX longtable), plus a z-score overview plot of all results."""
from __future__ import annotations

import json
import math
from pathlib import Path

COLUMNS = ("form", "label", "predicted", "measured ± SE", "z / p", "verdict")


def fmt_measured(r) -> str:
    if r.se is None or (isinstance(r.se, float) and math.isnan(r.se)):
        return f"{r.estimate:.4g} (statistic)"
    return f"{r.estimate:.6g} ± {r.se:.2g}"


def fmt_test(r) -> str:
    if r.z is not None:
        return f"z={r.z:+.2f}" + (f" (+bias {r.bias_bound:.2g})" if r.bias_bound else "")
    if r.p_value is None:
        return "-"
    return f"p={r.p_value:.3g} (alpha={r.alpha:.1e})"


def rows(results) -> list:
    return [(r.form, r.label, f"{r.prediction:.6g}", fmt_measured(r), fmt_test(r), "pass" if r.passed else "FAIL")
            for _, r in results]


def console_table(results, label_width: int = 58) -> str:
    """A fixed-width text table of (check, Result) pairs."""
    body = [(a, b if len(b) <= label_width else b[:label_width - 1] + "…", c, d, e, f)
            for a, b, c, d, e, f in rows(results)]
    widths = [max(len(str(x)) for x in col) for col in zip(COLUMNS, *body)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([line(COLUMNS), line(["-" * w for w in widths])] + [line(r) for r in body])


def _md_escape(s: str) -> str:
    return str(s).replace("|", "\\|")


def _tex_escape(s: str) -> str:
    out = str(s).replace("\\", "\0")
    for a, b in (("&", r"\&"), ("%", r"\%"), ("$", r"\$"), ("#", r"\#"), ("_", r"\_"), ("{", r"\{"),
                 ("}", r"\}"), ("~", r"\~{}"), ("^", r"\^{}"), ("±", r"$\pm$"), ("γ", r"$\gamma$"),
                 ("…", r"\dots{}")):
        out = out.replace(a, b)
    return out.replace("\0", r"\textbackslash{}")


def latex_table(results) -> str:
    """A LaTeX longtable (needs \\usepackage{longtable,booktabs})."""
    head = " & ".join(_tex_escape(c) for c in COLUMNS) + r" \\"
    body = [" & ".join(_tex_escape(c) for c in row) + r" \\" for row in rows(results)]
    return "\n".join([r"% requires \usepackage{longtable,booktabs}", r"\begin{longtable}{llrrll}", r"\toprule",
                      head, r"\midrule", r"\endhead", *body, r"\bottomrule", r"\end{longtable}", ""])


def z_plot(results, path: Path):
    """All z-scores (and law-test p-values as equivalent |z|) with the ±5 band."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from scipy import stats as sps
    zs, colors = [], []
    for _, r in results:
        if r.z is not None and math.isfinite(r.z):
            zs.append(r.z)
        else:
            p = max(r.p_value if r.p_value is not None else 0.0, 1e-300)
            zs.append(float(sps.norm.isf(p / 2)))
        colors.append("tab:blue" if r.passed else "tab:red")
    fig, ax = plt.subplots(figsize=(max(6, 0.08 * len(zs)), 3))
    ax.scatter(range(len(zs)), zs, c=colors, s=10)
    for y in (-5, 5):
        ax.axhline(y, color="k", ls=":", lw=0.8)
    ax.set_xlabel("result #")
    ax.set_ylabel("z (law tests: |z| of p)")
    ax.set_title("All comparisons (red = fail); |z| ≤ 5 ↔ false-failure rate 5.7e-7 each", fontsize=9)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


FINITE_SIZE = """The closed forms are asymptotic (infinite width, infinite data). Each z-test compares the estimate with
the prediction within 5 standard errors plus an explicitly stated finite-size bias bound (column `+bias`, 0
unless given); the bound is derived from theory (stated in the check's note and docstring), never taken from the
simulation under test nor from the form's own value. For one hidden layer E[μ²]/E[Var_χ] is exact at any width n
as a ratio of expectations over the first-layer node norms s = ‖w‖ (s² = σ_w² χ²_d/d): relu, leaky_relu,
identity and tanh have no finite-size bias; srelu and gelu have an O(1/d) bias, computed exactly (srelu:
γ_d = 2(1 − E[s]/σ_w)/(π − 1) ≈ 1/(2d(π − 1))) and shown to shrink with width (γ vs width plot). The 1/D bias of
the sample centre (E[μ̂²] = Var_W μ + E[Var_χ]/D) is subtracted exactly; γ SEs are delta-method over inits.
G0 is discrete (k/D): KS tests use G0 + U(−1/2, 1/2)/D, leaving |ΔF| ≤ max f_G0 / D (stated per test)."""


def write(report_dir, results, figures, meta: dict, coverage: list) -> list:
    """Write report.md, results.json, table.tex and z_scores.png into report_dir; return the paths."""
    out = Path(report_dir)
    out.mkdir(parents=True, exist_ok=True)
    z_plot(results, out / "z_scores.png")
    figures = list(figures) + [(str(out / "z_scores.png"), "z-scores of every comparison")]
    (out / "results.json").write_text(json.dumps(
        {"meta": meta, "coverage": coverage,
         "results": [dict(check=c, **r.to_dict()) for c, r in results]}, indent=1, default=str))
    (out / "table.tex").write_text(latex_table(results))
    n_fail = sum(not r.passed for _, r in results)
    covered = sum(c["check"] is not None for c in coverage)
    caught = sum(bool(c.get("caught")) for c in coverage)
    lines = [f"# igbsym validation report ({meta['mode']})", "",
             f"device `{meta['device']}`, seed {meta['seed']}, torch {meta['torch']}, {meta['seconds']:.1f} s; "
             f"**{len(results) - n_fail}/{len(results)} comparisons pass**; {covered}/{len(coverage)} forms "
             f"have a check, {caught}/{len(coverage)} with their mutations caught (tests/test_mutation.py).", "",
             f"Union bound on the false-failure probability of this run: Σ alpha = "
             f"{sum(r.alpha for _, r in results):.2g}.", "",
             "Per-comparison false-failure rate: z-tests |z| ≤ 5 (two-sided 5.7e-7), law tests p ≥ alpha.", "",
             "| " + " | ".join(COLUMNS) + " | check |", "|" + "---|" * (len(COLUMNS) + 1)]
    lines += ["| " + " | ".join(_md_escape(c) for c in row) + f" | {check} |"
              for row, (check, _) in zip(rows(results), results)]
    cpu = meta.get("cpu_timings", {})
    lines += ["", "## Check timings", ""] + [f"- `{k}`: {v:.1f} s" + (f" wall, {cpu[k]:.1f} s CPU" if k in cpu else "")
                                             for k, v in meta.get("timings", {}).items()]
    lines += ["", "## Finite-size notes", "", FINITE_SIZE, ""]
    lines += [f"- {r.form} [{r.label}]: {r.note}" for _, r in results if r.bias_bound or "finite" in r.note]
    lines += ["", "## Figures", ""]
    for path, caption in figures:
        lines += [f"![{caption}]({Path(path).name})", "", f"*{caption}*", ""]
    derived = sorted((out / "derivations").glob("*.tex"))
    if derived:
        lines += ["## Derivations (`igbsym run`)", ""] + [f"- [{p.name}](derivations/{p.name})" for p in derived] + [""]
    missing = [c["name"] for c in coverage if c["check"] is None]
    lines += ["## Coverage", "", "Forms without a check: " + (", ".join(missing) if missing else "none"), ""]
    (out / "report.md").write_text("\n".join(lines))
    return [out / "report.md", out / "results.json", out / "table.tex"]
