"""LaTeX output: golden strings for a few equations, and the full document is well formed (and compiles when
pdflatex is installed)."""
import re
import shutil
import subprocess

import pytest

import igbsym
from igbsym.latex import document

KNOWN_MACROS = set(r"""documentclass usepackage begin end title date maketitle section subsection noindent textbf
texttt frac sqrt left right Phi pi mu sigma gamma kappa alpha varepsilon log exp e cdot quad text mathrm displaystyle
resizebox linewidth int infty limits operatorname tanh erf operatorname asin operatorname atan sin cos dx
textbackslash textasciitilde max min tfrac ge le mapsto operatorname sum prod binom Gamma beta delta lambda nu
chi tilde hat bar infty arctan arcsin acos asin textless textgreater geq leq neq lim to cdots ldots vdots
begin end ln item itemize Bigl Bigr bigl bigr mathcal sim mathbb mathbf cdot times pm mp approx equiv propto partial nabla qquad theta phi psi omega rho tau zeta eta xi epsilon operatorname""".split())


def check_well_formed(text: str):
    body = re.sub(r"\\[\\{}&%$#_ ,;!]", "", text)  # escaped characters and spacing commands
    depth = 0
    for ch in body:
        depth += ch == "{"
        depth -= ch == "}"
        assert depth >= 0, "unbalanced }"
    assert depth == 0, "unbalanced {"
    assert body.count(r"\[") == body.count(r"\]")
    envs = re.findall(r"\\(begin|end)\{([^}]*)\}", text)
    stack = []
    for kind, name in envs:
        if kind == "begin":
            stack.append(name)
        else:
            assert stack and stack.pop() == name, name
    assert not stack
    unknown = set(re.findall(r"\\([A-Za-z]+)", text)) - KNOWN_MACROS
    assert not unknown, f"unknown macros {unknown}"


def test_golden_equations():
    assert igbsym.get("igb.pdf").latex() == (
        r"\mathrm{igb.pdf}\left(g, \gamma\right) = \frac{e^{\frac{\left(1 - \frac{1}{\gamma}\right) "
        r"\left(\Phi^{-1}\left(g\right)\right)^{2}}{2}}}{\sqrt{\gamma}}")
    assert igbsym.get("igb.gamma").latex(activation="relu") == (
        r"\mathrm{igb.gamma}\left(activation=\text{relu}, \sigma_w, a\right) = \frac{1}{-1 + \pi}")
    assert igbsym.get("leaky.m4").latex() == (
        r"\mathrm{leaky.m4}\left(a, \sigma, \kappa\right) = \frac{\kappa \sigma^{4} \left(a^{4} + 1\right)}{2}")


def test_document_of_every_form_is_well_formed():
    check_well_formed(document(igbsym.forms()))


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not installed")
def test_document_compiles(tmp_path):
    (tmp_path / "all.tex").write_text(document(igbsym.forms()))
    res = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "all.tex"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-3000:]
