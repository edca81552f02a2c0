"""The record a derivation keeps: steps (prose + LaTeX), proofs that registered forms equal what was derived,
and errata of the papers.

Proof kinds, strongest first:
- ``symbolic``: ``sympy.simplify(derived − registered) == 0`` (or ``.equals``), possibly after a stated
  rewrite (e.g. Φ → erf);
- ``numeric-identity``: SymPy could not close it; the identity is checked at stated points with mpmath at
  ``dps`` digits to a stated tolerance — said so explicitly in the output;
- ``numeric-route``: the form has no closed form; its quadrature is checked against an independent mpmath
  evaluation of the defining integral;
- ``registry-self-comparison``: two registered forms compared with each other (a consistency check between
  forms, not a proof from a definition).

Derivation steps check their claims with :func:`require`, which raises :class:`DerivationError` (a bare
``assert`` disappears under ``python -O``).
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field

import mpmath
import sympy as sp

import igbsym
from igbsym.functions import Phi, PhiInv
from igbsym.latex import LONG, abbreviate, equation, escape, numbered, preamble, prose, to_latex
from igbsym.latex import tidy
from igbsym.notation import PAPERS, symbol, undisplay

PROOF_KINDS = {"symbolic": "symbolic", "numeric-identity": "numeric identity",
               "numeric-route": "numeric route", "registry-self-comparison": "registry self-comparison"}
FAMILY_PAPER = {"maxpool": "igb-initial-guessing-bias.txt", "depth": "igb-initial-guessing-bias.txt",
                "igb": "igb-initial-guessing-bias.txt", "bn": "norm-placement-bn-ln.txt",
                "rectified": "norm-placement-bn-ln.txt", "kurtosis": "kurtosis-vanishing-empirical-variance.txt"}


class DerivationError(AssertionError):
    """A derived expression does not equal the registered form, or a derivation step's claim fails."""


def require(condition, what: str = "a derivation step's claim"):
    """Check a claim made by a derivation step; raise :class:`DerivationError` (never skipped, unlike assert)."""
    if not condition:
        raise DerivationError(f"derivation step failed: {what}")


@dataclass
class Proof:
    form: str
    kind: str
    detail: str
    case: dict = field(default_factory=dict)


def to_elementary(expr):
    """Rewrite Φ, Φ⁻¹ into erf / erfinv so SymPy's simplifier sees elementary functions."""
    return expr.rewrite(sp.erf).rewrite(sp.erfinv) if isinstance(expr, sp.Basic) else expr


def symbolically_equal(a, b) -> bool:
    """True iff SymPy proves a == b (simplify of the difference, then ``equals`` as a second route)."""
    diff = sp.simplify(to_elementary(a) - to_elementary(b))
    if diff == 0:
        return True
    if sp.simplify(sp.expand(diff)) == 0:
        return True
    try:
        return to_elementary(a).equals(to_elementary(b)) is True
    except TypeError:  # SymPy's equals can trip on relational NaN comparisons; treat as "not proved"
        return False


@dataclass
class Derivation:
    """Steps and proofs of one family."""

    family: str
    title: str
    steps: list = field(default_factory=list)
    proofs: list = field(default_factory=list)
    errata: list = field(default_factory=list)

    def step(self, text: str, expr=None):
        """Record a step: prose and optionally an equation (SymPy object or LaTeX string)."""
        self.steps.append((text, expr))
        return expr

    def prove(self, name: str, derived, cases=None, **case):
        """Assert the registered form ``name`` (for a structural ``case``) equals ``derived`` symbolically.

        ``cases``: optional list of {symbol_name: expr} substitutions that split the domain (e.g. alpha = beta and
        alpha = -beta with beta > 0); the identity is proved on each piece.
        """
        form = igbsym.get(name)
        registered = form.case(**case)
        derived = _rename(derived, form)
        for split in cases or [{}]:
            subs = {form.symbols[k]: v for k, v in split.items()}
            if not symbolically_equal(derived.subs(subs), registered.subs(subs)):
                raise DerivationError(f"{name} {case} {split}: derived {derived} != registered {registered}")
        how = "simplify(derived - registered) == 0" + (f" on each of {cases}" if cases else "")
        self.proofs.append(Proof(name, "symbolic", how, case))
        self.step(f"{name} {_case_text(case)}".strip() + ": symbolic proof", (symbol(form, **case), _shown(registered)))

    def compare_registry(self, name: str, other: str, case: dict, other_case: dict, expected=None):
        """Check registered ``name`` (at ``case``) equals registered ``other`` (or ``expected``) and record it as a
        registry self-comparison: a consistency check between forms, not a proof from a definition."""
        a = igbsym.get(name).case(**case)
        b = expected if expected is not None else igbsym.get(other).case(**other_case)
        if not symbolically_equal(a, b):
            raise DerivationError(f"{name} {case} != {other} {other_case}: {a} vs {b}")
        self.proofs.append(Proof(name, "registry-self-comparison",
                                 f"equals {other} {_case_text(other_case)} (both registered; SymPy)", case))

    def check_route(self, name: str, points: list, reference, tol: float, reason: str, **case):
        """Check the form's NumPy route against an independent float ``reference(**point)`` at each point to ``tol``
        (relative) and record a 'numeric-route' proof: a form with no closed form, its route checked."""
        form, worst = igbsym.get(name), 0.0
        for pt in points:
            got, ref = float(form.numpy(**case, **pt)), float(reference(**pt))
            err = 0.0 if got == ref else abs(got - ref) / abs(ref)
            worst = max(worst, err)
            if not err <= tol:
                raise DerivationError(f"{name} {case} at {pt}: route {got} != reference {ref} (rel. error {err:.2e})")
        self.proofs.append(Proof(name, "numeric-route", f"{len(points)} points, worst relative error {worst:.1e} <= "
                                                        f"{tol:.0e}; {reason}", case))
        self.step(f"Numeric route check (not a symbolic proof) for {name} ({case['activation']}): {reason}; "
                  f"{len(points)} points, worst relative error {worst:.1e}.")

    def prove_numeric_identity(self, name: str, derived_mp, points: list, dps: int = 50, tol: float = 1e-40,
                               reason: str = "", **case):
        """Check ``form.mp == derived_mp(**point)`` at each point to ``tol`` (relative) at ``dps`` digits."""
        form = igbsym.get(name)
        worst = 0.0
        for pt in points:
            with mpmath.workdps(dps):
                ref = derived_mp(**{k: mpmath.mpf(v) for k, v in pt.items()})
                got = form.mp(dps, **case, **pt)
                err = abs(got - ref) / max(abs(ref), mpmath.mpf(10) ** (-dps))
            worst = max(worst, float(err))
            if err > tol:
                raise DerivationError(f"{name} {case} at {pt}: registered {got} != derived {ref} (rel err {err})")
        self.proofs.append(Proof(name, "numeric-identity",
                                 f"{len(points)} points, worst relative error {worst:.1e} at {dps} digits; {reason}",
                                 case))
        self.step(f"Numeric identity check (not a symbolic proof) for {name} {_case_text(case)}: {reason}; "
                  f"{len(points)} points, worst relative error {worst:.1e} at {dps} digits.")

    def erratum(self, where: str, paper_says: str, correct: str, how: str, identity=None, simulation: str = ""):
        """Record a place where a paper is wrong: ``where`` (paper file, then the equation), the claim as printed,
        the correction, the evidence ``how``; optionally the CAS ``identity`` (SymPy relation or LaTeX) that
        decides it and the ``simulation`` evidence (check name with its z or p)."""
        paper, equation = _split_where(where, FAMILY_PAPER.get(self.family, ""))
        ident = identity if identity is None or isinstance(identity, str) else "$%s$" % to_latex(identity)
        self.errata.append(dict(where=where, paper=paper, equation=equation, paper_says=paper_says, correct=correct,
                                how=how, identity=ident, simulation=simulation, family=self.family))
        self.step(f"Erratum ({where}): the paper says {paper_says}; correct: {correct}. Shown by: {how}.")

    def proven_forms(self) -> set:
        return {p.form for p in self.proofs}

    def latex(self) -> str:
        """A LaTeX section: numbered steps, the proof status of every result, the errata found."""
        out = [r"\section{%s}" % prose(self.title)]
        rows = []  # consecutive short steps: one line of an align each, the justification on the right
        for i, (text, expr) in enumerate(self.steps, 1):
            row = _align_row(text, expr)
            if row:
                rows.append(row)
                continue
            out += _align(rows)
            rows = []
            out.append(prose(text))
            if expr is not None:
                out += _step_equations(expr, f"{self.family}:{i}")
            out.append("")
        out += _align(rows)
        out += [r"\subsection*{Proof status}", r"\begin{itemize}"]
        for p in self.proofs:
            out.append(r"\item \texttt{%s} %s: \textbf{%s} --- %s" % (escape(p.form), prose(_case_text(p.case)),
                                                                     PROOF_KINDS[p.kind], prose(p.detail)))
        out.append(r"\end{itemize}")
        if self.errata:
            out += [r"\subsection*{Errata found}", r"\begin{itemize}"]
            for e in self.errata:
                out.append(r"\item \emph{%s}, %s: the paper says %s; correct: %s (%s)." % (
                    escape(PAPERS.get(e["paper"], e["paper"])), prose(e["equation"]), prose(e["paper_says"]),
                    prose(e["correct"]), prose(e["how"])))
            out.append(r"\end{itemize}")
        return "\n".join(out)


def _shown(registered):
    """The readable display of a registered expression, used only where SymPy confirms it is equal."""
    if not isinstance(registered, sp.Expr) or sp.count_ops(registered) > 25 or registered.has(
            sp.gamma, sp.Integral, sp.betainc_regularized, sp.Piecewise):
        return registered
    shown = tidy(registered)
    return shown if shown == registered or sp.expand(undisplay(shown) - registered) == 0 else registered


def _align_row(text: str, expr) -> str:
    """``lhs &= rhs && \text{justification}`` for a short step with a short expression, else ''."""
    lhs = ""
    if isinstance(expr, tuple):
        lhs, expr = expr
    if not isinstance(expr, sp.Expr) or len(text) > 60:
        return ""
    body, why = to_latex(expr), re.sub(r"\s*(\$=\$|[:=])\s*$", "", prose(text))
    if len(body) + len(lhs) > 75 or _visible(lhs + body) + _visible(why) > 72:
        return ""
    return "%s &%s %s && \\text{%s}" % (lhs, "=" if lhs else "", body, why)


def _visible(latex: str) -> int:
    """A rough count of the characters LaTeX source prints (macros, braces, blanks dropped)."""
    return len(re.sub(r"\\[A-Za-z]+|[{}$\s^_]", "", latex))


def _align(rows: list) -> list:
    """A numbered align of short steps, one row per step."""
    if not rows:
        return []
    return [r"\begin{align}", " \\\\\n".join(rows), r"\end{align}", ""]


def _step_equations(expr, label: str) -> list:
    """Numbered display(s) of a step's expression: LaTeX strings as given; long tuples/matrices entry by entry;
    long unbreakable sub-expressions named and defined after 'where'."""
    lhs = ""
    if isinstance(expr, tuple):  # (LaTeX left-hand side, SymPy right-hand side)
        lhs, expr = expr[0] + " = ", expr[1]
    if isinstance(expr, str):
        return [numbered(expr)]
    if isinstance(expr, (sp.MatrixBase, sp.Tuple)) and len(to_latex(expr)) > LONG:
        if isinstance(expr, sp.Tuple):
            items = [(f"{lhs}[{i + 1}]" if lhs else "", e) for i, e in enumerate(expr)]
        else:
            items = [((r"%s_{%d%d}" % (lhs.rstrip(" ="), i + 1, j + 1)) if lhs else "", expr[i, j])
                     for i in range(expr.rows) for j in range(expr.cols)]
        out = []
        for head, item in items:
            out += _step_equations((head, item) if head else item, label)
        return out
    if isinstance(expr, sp.Eq) and len(to_latex(expr)) > LONG:
        lhs, expr = to_latex(expr.lhs) + " = ", expr.rhs
    main, defs = abbreviate(expr) if isinstance(expr, sp.Expr) else (expr, [])
    out = [numbered(lhs + to_latex(main))]
    if defs:
        out += ["where"] + [equation(f"{to_latex(d)} = {to_latex(e)}") for d, e in defs]
    return out


def _split_where(where: str, default: str):
    """('paper file', 'equation') from an erratum's ``where``."""
    m = re.match(r"\s*(\S+\.txt)[,\s]*(.*)$", where)
    return (m.group(1), m.group(2)) if m else (default, where)


def _rename(expr, form):
    """Replace symbols by the form's own symbols of the same name (so assumptions match)."""
    if not isinstance(expr, sp.Basic):
        return sp.sympify(expr)
    table = {s: form.symbols[s.name] for s in expr.free_symbols if s.name in form.symbols}
    return expr.xreplace(table)


def _case_text(case: dict) -> str:
    return "(" + ", ".join(f"{k} = {v}" for k, v in case.items()) + ")" if case else ""


def document(derivations, title="igbsym derivations") -> str:
    """A complete LaTeX document of one or more derivations."""
    return "\n".join(preamble(title) + [d.latex() for d in derivations] + [r"\end{document}", ""])


def errata(derivations) -> list:
    """Every erratum recorded by the given derivations, in order."""
    return [e for d in derivations for e in d.errata]


def write_errata(args) -> None:
    """``igbsym latex --errata [-o FILE]``: run every derivation and write the errata report."""
    from igbsym import derivations as package
    from igbsym.errors import InputError
    from igbsym.latex import errata_document, write_text
    if args.name or args.all:
        raise InputError("latex --errata takes no NAME and no --all (it reports every family's errata)")
    done = []
    for fam in package.modules():
        print(f"deriving {fam} ...", file=sys.stderr, flush=True)
        done.append(package.run(fam))
    found = errata(done)
    write_text(errata_document(found), args.output, f"{len(found)} errata")


__all__ = ["Derivation", "DerivationError", "Phi", "PhiInv", "document", "errata", "require", "symbolically_equal",
           "to_elementary"]
