"""One LaTeX printer for equations, derivation steps and the documents, with one symbol-name table so every
piece of output uses the papers' notation (docs/ARCHITECTURE.md, "Notation"; symbols per form in igbsym/notation.py).

Typesetting: one type size; long displays are broken across lines by breqn (``dmath*``); sub-expressions that
cannot break (a long radicand, a long numerator) are named Δ₁, Δ₂ … and defined on their own lines; prose is
converted from ASCII mathematics to inline math (igbsym/prose.py).
"""
from __future__ import annotations

import re
from functools import lru_cache

import sympy as sp
from sympy.printing.latex import LatexPrinter

from .notation import SQRT_2, SQRT_2PI, keep_sqrt_2pi, notation, paper, symbol
from .route import NumericRoute
from .prose import escape, prose

SYMBOL_NAMES = {
    "sigma": r"\sigma", "sigma_w": r"\sigma_w", "sigma2": r"\sigma^2", "mu": r"\mu", "gamma": r"\gamma",
    "kappa": r"\kappa", "kappa_w": r"\kappa_w", "kappa0": r"\kappa_0", "c0": "c_0", "a": "a", "g": "g",
    "p": "p", "n": "n", "B": "B", "k": "k", "L": "L", "w": "w", "x": "x", "b": "b", "eps": r"\varepsilon",
    "alpha": r"\alpha", "D": "D", "c": "c", "q": "q", SQRT_2PI.name: r"\sqrt{2\pi}", SQRT_2.name: r"\sqrt{2}",
}
LONG = 150          # characters of LaTeX source above which a display goes to breqn's dmath*
UNBREAKABLE = 230   # a sub-expression longer than this (inside a root or fraction) is named and defined apart


class _Printer(LatexPrinter):
    """SymPy's printer with the project's choices: positive terms first (π − 1, not −1 + π), ln, arctan."""

    def __init__(self, names):
        super().__init__(dict(symbol_names=names, ln_notation=True, inv_trig_style="full"))

    def _print_Add(self, expr, order=None):
        terms = list(expr.as_ordered_terms())
        first = next((i for i, t in enumerate(terms) if not t.could_extract_minus_sign()), 0)
        terms = terms[first:first + 1] + terms[:first] + terms[first + 1:]
        out = ""
        for i, term in enumerate(terms):
            if i == 0:
                pass
            elif term.could_extract_minus_sign():
                out += " - "
                term = -term
            else:
                out += " + "
            text = self._print(term)
            if self._needs_add_brackets(term):
                text = r"\left(%s\right)" % text
            out += text
        return out


def to_latex(expr) -> str:
    """LaTeX of a SymPy object with the project's symbol names."""
    if isinstance(expr, str):
        return expr
    names = {s: SYMBOL_NAMES[s.name] for s in getattr(expr, "free_symbols", ()) if s.name in SYMBOL_NAMES}
    return _Printer(names).doprint(expr)


# --- equations -------------------------------------------------------------------------------------------------
def abbreviate(expr, limit: int = UNBREAKABLE):
    """Name long sub-expressions that a line breaker cannot split (inside roots, powers, fractions).

    Returns (expression with Δ symbols, [(Δ, sub-expression)]); substituting back gives ``expr`` exactly."""
    defs = []
    if not isinstance(expr, sp.Expr):
        return expr, defs
    for i in range(1, 7):
        top = set(expr.args) if isinstance(expr, sp.Add) else set()
        long = [s for s in sp.preorder_traversal(expr) if isinstance(s, sp.Add) and s is not expr and s not in top
                and len(to_latex(s)) > limit]
        innermost = [s for s in long if not any(t is not s and t in long for t in sp.preorder_traversal(s))]
        if not innermost:
            break
        big = max(innermost, key=lambda s: len(to_latex(s)))
        delta = sp.Symbol(r"\Delta_{%d}" % i)
        defs.append((delta, big))
        expr = expr.xreplace({big: delta})
    return expr, defs


def form_equation(form, **structural) -> str:
    """``symbol = display`` for a case, or the general statement when structural values are absent and the form
    has cases (one line of LaTeX, math mode; used by ``igbsym latex NAME`` and ``_repr_latex_``)."""
    return " ".join(_equation_parts(form, structural)[0]).replace("\n", r",\quad ")


def _equation_parts(form, structural: dict):
    """[(lhs, rel, rhs)] lines plus definitions [(Δ, expr)] for a case (or the general statement)."""
    note = notation(form.name)
    if form.structural_params and not structural and (note.general or form.display):
        general = note.general or form.display
        if isinstance(general, tuple):
            general = "\n".join(general)
        return (symbol(form), "=", general), []
    case = form.case(**structural)
    lhs = symbol(form, **structural)
    if isinstance(case, NumericRoute):
        rhs = to_latex(keep_sqrt_2pi(case.defining)) if case.defining is not None else r"\text{(numeric)}"
        return (lhs, "=", rhs + r"\quad\text{(numeric route)}"), []
    expr, defs = abbreviate(display(form, **structural))
    return (lhs, "=", to_latex(expr) + note.suffix), defs


def equation(body: str) -> str:
    """A displayed, unnumbered equation; long ones are broken across lines by breqn."""
    if len(body) > LONG:
        return "\\begin{dmath*}\n%s\n\\end{dmath*}" % body
    return "\\[ %s \\]" % body


def numbered(body: str, label: str = "") -> str:
    """A displayed, numbered equation (breqn's ``dmath`` breaks long ones)."""
    lab = r"\label{%s}" % label if label else ""
    return "\\begin{dmath}%s\n%s\n\\end{dmath}" % (lab, body)


def case_equations(form, **structural) -> list:
    """The displayed equations of one case (a matrix entry by entry; abbreviations defined after 'where')."""
    case = form.case(**structural) if (structural or not form.structural_params) else None
    if isinstance(case, sp.MatrixBase):
        lhs = symbol(form, **structural)
        rows = []
        for i in range(case.rows):
            for j in range(case.cols):
                rows.append(equation(r"%s_{%d%d} = %s" % (lhs, i + 1, j + 1, to_latex(tidy(case[i, j])))))
        return rows
    (lhs, rel, rhs), defs = _equation_parts(form, structural)
    if "\n" in rhs:  # a general statement given as lines
        first, *rest = rhs.split("\n")
        return [r"\begin{gather*}" + r" \\ ".join([f"{lhs} {rel} {first}"] + rest) + r"\end{gather*}"]
    out = [equation(f"{lhs} {rel} {rhs}")]
    if defs:
        out.append(r"where")
        out += [equation(f"{to_latex(d)} = {to_latex(e)}") for d, e in defs]
    if isinstance(case, NumericRoute):
        out.append(r"\noindent Numeric route: " + prose(case.method) + "; error: " + prose(case.error) + ".")
    return out


# --- documents -------------------------------------------------------------------------------------------------
def preamble(title: str, standalone: bool = False) -> list:
    """The document head shared by the forms document, the derivations and the errata report."""
    head = [r"\documentclass[11pt]{article}", r"\usepackage[T1]{fontenc}", r"\usepackage[utf8]{inputenc}",
            r"\usepackage{lmodern}", r"\usepackage[margin=2.2cm,marginparwidth=2cm]{geometry}",
            r"\usepackage{amsmath,amssymb}", r"\usepackage{breqn}", r"\setlength{\parindent}{0pt}",
            r"\setlength{\parskip}{0.5ex}", r"\allowdisplaybreaks", r"\sloppy"]
    if standalone:
        return head + [r"\pagestyle{empty}", r"\begin{document}"]
    return head + [r"\begin{document}", r"\title{%s}" % prose(title), r"\date{}", r"\maketitle"]


def _allowed(p) -> str:
    """The allowed values of a parameter as mathematics (σ > 0, B ∈ ℤ, B ≥ 3, φ ∈ {ReLU, …})."""
    sym = SYMBOL_NAMES.get(p.name, p.name if len(p.name) == 1 else r"\mathrm{%s}" % escape(p.name))
    if p.kind == "choice":
        table = {"activation": r"\phi"}
        from .notation import VALUES
        vals = ", ".join(VALUES.get(p.name, {}).get(v) or r"\text{%s}" % escape(str(v)) for v in p.choices)
        return r"$%s \in \{%s\}$" % (table.get(p.name, sym), vals)
    kind = {"real": r"\in \mathbb{R}", "positive": "> 0", "nonnegative": r"\ge 0", "integer": r"\in \mathbb{Z}"}
    parts = [f"{sym} {kind[p.kind]}"]
    if p.minimum is not None:
        parts.append(f"{sym} \\ge {p.minimum}")
    if p.maximum is not None and p.maximum < 10**6:
        parts.append(f"{sym} \\le {p.maximum}")
    text = "$" + ",\\ ".join(parts) + "$"
    return text + (r" (or $\infty$)" if p.allow_inf else "")


def provenance(prov) -> str:
    """Provenance as prose: paper title in italics, the place, the note."""
    out = r"\emph{%s}, %s" % (escape(paper(prov.paper)), prose(prov.where))
    return out + (" --- " + prose(prov.note) if prov.note else "")


def form_section(form) -> str:
    """A document section for one form: symbol, summary, equations, conditions, provenance."""
    lines = [r"\subsection*{$%s$\hfill{\normalfont\small\texttt{%s}}}" % (symbol(form), escape(form.name)),
             prose(form.summary), ""]
    for eq in form_equations(form):
        lines += [x for x in eq if x not in lines]  # a numeric route's note once per form
    conds = [_allowed(p) for p in form.params] + [prose(c.text) for c in form.conditions]
    lines += ["", r"\textbf{Conditions.} " + "; ".join(conds) + ".", "",
              r"\textbf{Provenance.} " + provenance(form.provenance) + ".", ""]
    return "\n".join(lines)


def form_cases(form, limit: int = 12) -> list:
    """Structural cases to print: every value of each required choice parameter (defaults elsewhere), integer
    parameters at their default or minimum; at most ``limit`` cases."""
    base = {p.name: (p.default if not p.required else (p.choices[0] if p.choices else p.minimum or 0))
            for p in form.structural_params}
    cases = [base]
    for p in form.structural_params:
        if p.kind == "choice" and p.required:
            cases = [dict(c, **{p.name: v}) for c in cases for v in p.choices]
    return cases[:limit]


def form_equations(form) -> list:
    """Lists of displayed equations: the general statement (if any), then one block per structural case."""
    if not form.structural_params:
        return [case_equations(form)]
    note = notation(form.name)
    out = []
    if note.general or form.display:
        out.append(case_equations(form))
    out += [case_equations(form, **c) for c in form_cases(form)]
    if note.extra:
        out.append([r"Exact values registered for small $k$:"] +
                   [equation(f"{lhs} = {to_latex(tidy(value))}") for lhs, value in note.extra()])
    return out


def document(forms, title: str = "igbsym: registered closed forms") -> str:
    """A complete, compilable LaTeX document of the given forms."""
    head = preamble(title) + [r"$\Phi$ is the standard normal distribution function and $\phi$ its density "
                              r"(or an activation, as stated); $\mathbb{E}$ and $\operatorname{Var}$ are over "
                              r"$X \sim \mathcal{N}(0, \sigma^2)$ unless said otherwise. Each right-hand side is "
                              r"the registered expression (rearranged for reading; the tests prove the two equal) "
                              r"unless a numeric route is named. The typewriter name is the form's registry name.",
                              ""]
    return "\n".join(head + [form_section(f) for f in forms] + [r"\end{document}", ""])


def standalone(form, **structural) -> str:
    """A compilable one-equation document of a form (a case when structural values are given)."""
    body = case_equations(form, **structural) if (structural or not form.structural_params) else \
        [x for block in form_equations(form)[:1] for x in block]
    return "\n".join(preamble(form.name, standalone=True) + body + [r"\end{document}", ""])


def errata_document(errata: list, title: str = "Errata found by igbsym") -> str:
    """The errata report: one entry per erratum (paper, equation, claim as printed, correction, evidence)."""
    lines = preamble(title) + [
        r"Each entry was found by building the result from its definition with a computer-algebra system "
        r"(SymPy) and/or by simulating untrained networks with PyTorch; the evidence says which. "
        r"Generated by \texttt{igbsym latex -{}-errata} from the records the derivations keep.", ""]
    by_paper = {}
    for e in errata:
        by_paper.setdefault(e["paper"], []).append(e)
    n = 0
    for name, entries in by_paper.items():
        lines.append(r"\section*{\emph{%s}}" % escape(paper(name)))
        for e in entries:
            n += 1
            lines += [r"\subsection*{%d.\quad %s}" % (n, prose(e["equation"])),
                      r"\begin{description}",
                      r"\item[As printed.] " + prose(e["paper_says"]),
                      r"\item[Correction.] " + prose(e["correct"]),
                      r"\item[Evidence.] " + prose(e["how"])]
            if e.get("identity"):
                lines.append(r"\item[CAS identity.] " + e["identity"])
            if e.get("simulation"):
                lines.append(r"\item[Simulation.] " + prose(e["simulation"]))
            lines += [r"\item[Derivation.] \texttt{igbsym derive %s}" % escape(e["family"]), r"\end{description}"]
    return "\n".join(lines + [r"\end{document}", ""])


def check_latex_text(text: str) -> list:
    """Cheap lint of generated LaTeX: ASCII relations or ``~`` left in text mode (they print as ¡, ¿)."""
    outside = re.sub(r"\$[^$]*\$", "", text)
    outside = re.sub(r"\\begin\{(dmath\*?|equation\*?|align\*?)\}.*?\\end\{\1\}", "", outside, flags=re.S)
    outside = re.sub(r"\\\[.*?\\\]", "", outside, flags=re.S)
    return [m.group() for m in re.finditer(r".{0,20}(?<![\\])(<=|>=|[<>])(?!\{).{0,20}", outside)]


def write_text(text: str, output: str | None, what: str) -> None:
    """Write ``text`` to ``output`` (or print it); a bad path is an InputError, not a traceback."""
    from pathlib import Path

    from .errors import InputError
    if not output:
        print(text)
        return
    try:
        Path(output).write_text(text)
    except OSError as exc:
        raise InputError(f"latex: cannot write {output} ({exc.strerror}); give a writable file path") from None
    print(f"wrote {output} ({what})")


def write_standalone(args, form, structural: dict) -> None:
    """``igbsym latex NAME [k=v ...] --standalone [-o FILE]``: a compilable one-equation document."""
    from .errors import InputError
    if form is None or args.all:
        raise InputError("latex --standalone: give one form NAME (and structural values, e.g. activation=relu)")
    write_text(standalone(form, **structural), args.output, f"standalone {form.name}")


def _candidates(expr):
    yield expr
    for fn in (sp.factor, sp.together, lambda e: sp.collect(sp.expand(e), sp.pi), sp.cancel):
        try:
            yield fn(expr)
        except (sp.PolynomialError, TypeError, ValueError, NotImplementedError):
            continue


@lru_cache(maxsize=None)
def tidy(expr):
    """The shortest-printing of a few equal rewrites of ``expr`` (factored, collected, √(2π) kept whole)."""
    if not isinstance(expr, sp.Expr) or isinstance(expr, sp.Piecewise) or sp.count_ops(expr) > 80 \
            or expr.has(sp.Integral, sp.Heaviside):
        return expr
    options = []
    for cand in _candidates(expr):
        options += [cand, keep_sqrt_2pi(cand), cand.subs(sp.sqrt(2), 2 / SQRT_2)]
    return min(options, key=lambda e: (_reading_cost(e, to_latex(e)), sp.count_ops(e)))


def _reading_cost(expr, latex: str) -> int:
    """Visible length of the LaTeX, plus a penalty for sums with a common factor left inside (3B - 3)."""
    common = sum(3 for s in sp.preorder_traversal(expr) if isinstance(s, sp.Add) and s.primitive()[0] != 1)
    return len(re.sub(r"\\left|\\right|\s", "", latex)) + common


def display(form, **structural):
    """The display expression of one case (equal to ``form.case(**structural)``; SQRT_2PI stands for √(2π))."""
    case = form.case(**structural)
    return tidy(case) if isinstance(case, sp.Basic) else case
