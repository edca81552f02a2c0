"""The record a derivation keeps: steps (prose + LaTeX), and proofs that registered forms equal what was derived.

Proof kinds, strongest first:
- ``symbolic``: ``sympy.simplify(derived − registered) == 0`` (or ``.equals``), possibly after a stated
  rewrite (e.g. Φ → erf);
- ``numeric-identity``: SymPy could not close it; the identity is checked at stated points with mpmath at
  ``dps`` digits to a stated tolerance — said so explicitly in the output;
- ``numeric-route``: the form has no closed form; its quadrature is checked against an independent mpmath
  evaluation of the defining integral.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import mpmath
import sympy as sp

import igbsym
from igbsym.functions import Phi, PhiInv
from igbsym.latex import equation, escape, preamble, to_latex


class DerivationError(AssertionError):
    """A derived expression does not equal the registered form."""


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
        self.step(f"Proved: {name} {_case_text(case)} equals the derivation.",
                  r"\mathrm{%s} = %s" % (name.replace("_", r"\_"), to_latex(registered)))

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

    def erratum(self, where: str, paper_says: str, correct: str, how: str):
        """Record a place where the paper is wrong, and how the CAS/simulation showed it."""
        self.errata.append(dict(where=where, paper_says=paper_says, correct=correct, how=how))
        self.step(f"Erratum ({where}): the paper says {paper_says}; correct: {correct}. Shown by: {how}.")

    def proven_forms(self) -> set:
        return {p.form for p in self.proofs}

    def latex(self) -> str:
        """A LaTeX section with every step (to be wrapped by :func:`document`)."""
        out = [r"\section{%s}" % escape(self.title)]
        for text, expr in self.steps:
            out.append(escape(text))
            if expr is not None:
                out.append(equation(expr if isinstance(expr, str) else to_latex(expr)))
            out.append("")
        if self.errata:
            out.append(r"\subsection*{Errata found}")
            out.append(r"\begin{itemize}")
            for e in self.errata:
                out.append(r"\item " + escape(f"{e['where']}: paper says {e['paper_says']}; correct: {e['correct']} "
                                              f"({e['how']})."))
            out.append(r"\end{itemize}")
        return "\n".join(out)


def _rename(expr, form):
    """Replace symbols by the form's own symbols of the same name (so assumptions match)."""
    if not isinstance(expr, sp.Basic):
        return sp.sympify(expr)
    table = {s: form.symbols[s.name] for s in expr.free_symbols if s.name in form.symbols}
    return expr.xreplace(table)


def _case_text(case: dict) -> str:
    return "(" + ", ".join(f"{k}={v}" for k, v in case.items()) + ")" if case else ""


def document(derivations, title="igbsym derivations") -> str:
    """A complete LaTeX document of one or more derivations."""
    return "\n".join(preamble(title) + [d.latex() for d in derivations] + [r"\end{document}", ""])


__all__ = ["Derivation", "DerivationError", "Phi", "PhiInv", "document", "symbolically_equal", "to_elementary"]
