"""One LaTeX printer for equations, derivation steps and the document, with one symbol-name table so every
piece of output uses the papers' notation (DESIGN.md, "Notation")."""
from __future__ import annotations

import sympy as sp

SYMBOL_NAMES = {
    "sigma": r"\sigma", "sigma_w": r"\sigma_w", "sigma2": r"\sigma^2", "mu": r"\mu", "gamma": r"\gamma",
    "kappa": r"\kappa", "kappa_w": r"\kappa_w", "kappa0": r"\kappa_0", "c0": "c_0", "a": "a", "g": "g",
    "p": "p", "n": "n", "B": "B", "k": "k", "L": "L", "w": "w", "x": "x", "b": "b", "eps": r"\varepsilon",
    "alpha": r"\alpha", "D": "D", "c": "c",
}


def to_latex(expr) -> str:
    """LaTeX of a SymPy object with the project's symbol names."""
    names = {s: SYMBOL_NAMES[s.name] for s in getattr(expr, "free_symbols", ()) if s.name in SYMBOL_NAMES}
    return sp.latex(expr, symbol_names=names)


def escape(text: str) -> str:
    """Escape prose for LaTeX text mode."""
    for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("$", r"\$"), ("#", r"\#"),
                 ("_", r"\_"), ("{", r"\{"), ("}", r"\}"), ("~", r"\textasciitilde{}"), ("^", r"\^{}")):
        text = text.replace(a, b)
    return text


def _value(v) -> str:
    """A structural value in math mode: words as text (leaky_relu), numbers as they are."""
    return r"\text{%s}" % escape(v) if isinstance(v, str) else str(v)


def _lhs(form, structural: dict) -> str:
    args = ", ".join(SYMBOL_NAMES.get(p.name, p.name) if not p.is_structural or p.name not in structural
                     else f"{SYMBOL_NAMES.get(p.name, p.name)}={_value(structural[p.name])}" for p in form.params)
    head = form.name.replace("_", r"\_")
    return r"\mathrm{%s}\left(%s\right)" % (head, args)


def form_equation(form, **structural) -> str:
    """`name(params) = expression` for a case, or the general display when structural values are absent."""
    from .form import NumericRoute
    if form.structural_params and not structural:
        if form.display:
            return _lhs(form, {}) + " = " + form.display
        return "\n".join(form_equations(form))
    case = form.case(**structural)
    if isinstance(case, NumericRoute):
        rhs = to_latex(case.defining) if case.defining is not None else r"\text{numeric}"
        return _lhs(form, structural) + " = " + rhs + r"\quad\text{(%s)}" % escape(case.method)
    return _lhs(form, structural) + " = " + to_latex(case)


def equation(body: str) -> str:
    """A displayed equation; long ones are scaled to the line width so the document never overflows."""
    if len(body) > 110:
        return "\\[\\resizebox{\\linewidth}{!}{$\\displaystyle %s$}\\]" % body
    return "\\[ %s \\]" % body


def preamble(title: str) -> list:
    """The document head shared by the forms document and the derivation documents."""
    return [r"\documentclass[11pt]{article}", r"\usepackage[margin=2cm]{geometry}",
            r"\usepackage{amsmath,amssymb,graphicx}", r"\begin{document}",
            r"\title{%s}" % escape(title), r"\date{}", r"\maketitle"]


def form_section(form) -> str:
    """A document section for one form: equation, conditions, provenance."""
    lines = [r"\subsection*{\texttt{%s}}" % escape(form.name), escape(form.summary), "",
             *[equation(e) for e in form_equations(form)]]
    conds = [escape(p.name) + ": " + escape(p.allowed()) for p in form.params]
    conds += [escape(c.text) for c in form.conditions]
    lines += [r"\noindent\textbf{Conditions.} " + "; ".join(conds) + ".", "",
              r"\noindent\textbf{Provenance.} " + escape(str(form.provenance)) + ".", ""]
    return "\n".join(lines)


def form_cases(form, limit: int = 12) -> list:
    """Structural cases to print for a form without a general display: every value of each choice parameter
    (defaults elsewhere), integer parameters at their default or minimum; at most ``limit`` cases."""
    base = {p.name: (p.default if not p.required else (p.choices[0] if p.choices else p.minimum or 0))
            for p in form.structural_params}
    cases = [base]
    for p in form.structural_params:
        if p.kind == "choice" and p.required:
            cases = [dict(c, **{p.name: v}) for c in cases for v in p.choices]
    return cases[:limit]


def form_equations(form) -> list:
    """The general equation, or one equation per case (``form_cases``) when there is no general display."""
    if not form.structural_params or form.display:
        return [form_equation(form)]
    return [form_equation(form, **c) for c in form_cases(form)]


def document(forms, title: str = "igbsym: registered closed forms") -> str:
    """A complete, compilable LaTeX document of the given forms."""
    head = preamble(title) + [r"\noindent $\Phi$ is the standard normal CDF; expressions are exact SymPy output "
                              r"unless a numeric route is named.", ""]
    return "\n".join(head + [form_section(f) for f in forms] + [r"\end{document}", ""])
