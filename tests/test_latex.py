"""LaTeX output: every form has the papers' notation, every display form is proved equal to the registered
expression, golden strings for a few forms per family, prose typeset as mathematics, and the forms document, a
standalone equation, every derivation and the errata report compile with pdflatex without errors or overfull
boxes (skipped, with the reason, when pdflatex is absent; CI installs it)."""
import re
import shutil
import subprocess
import sys

import pytest
import sympy as sp

import igbsym
from igbsym.derivations.base import document as derivation_document
from igbsym.derivations.base import errata, symbolically_equal
from igbsym.latex import check_latex_text, document, errata_document, form_cases, standalone
from igbsym.latex import display, tidy
from igbsym.notation import NOTATION, notation, symbol, undisplay
from igbsym.prose import prose

KNOWN_MACROS = set(r"""documentclass usepackage begin end title date maketitle section subsection noindent textbf
texttt frac sqrt left right Phi pi mu sigma gamma kappa alpha varepsilon log exp e cdot quad text mathrm displaystyle
linewidth int infty limits operatorname tanh erf asin atan sin cos dx textbackslash textasciitilde max min tfrac ge
le mapsto sum prod binom Gamma beta delta lambda nu chi tilde hat bar arctan arcsin arccos acos textless textgreater
geq leq neq ne lim to cdots ldots vdots ln item itemize Bigl Bigr bigl bigr Big mathcal sim mathbb mathbf times pm mp
approx equiv propto partial nabla qquad theta phi psi omega rho tau zeta eta xi epsilon emph hfill normalfont small
setlength parindent parskip allowdisplaybreaks sloppy label Delta overset notin in description surd pagestyle
textbar lvert rvert mid operatorname quad qquad det tr matrix Sigma Omega Lambda Pi Theta Xi Psi""".split())
PDFLATEX = shutil.which("pdflatex")
needs_tex = pytest.mark.skipif(PDFLATEX is None, reason="pdflatex is not installed (CI installs TeX Live)")
OVERFULL_PT = 3.0  # an overfull box wider than this fails the compile test


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
    assert "resizebox" not in text


# --- notation --------------------------------------------------------------------------------------------------
def test_every_registered_form_has_a_notation_entry():
    missing = [n for n in igbsym.names() if n not in NOTATION]
    lines = "\n".join(f'    "{n}": N(r"<symbol in the papers\' notation>"),' for n in missing)
    assert not missing, f"add to NOTATION in igbsym/notation.py:\n{lines}"
    stale = sorted(set(NOTATION) - set(igbsym.names()))
    assert not stale, f"NOTATION has entries for forms that are not registered: {stale}"


def test_missing_notation_says_what_to_add():
    with pytest.raises(KeyError, match=r'add a line  "fam.new": N\(r"<LaTeX symbol>"\)'):
        notation("fam.new")


def test_symbol_placeholders_are_all_filled():
    for form in igbsym.forms():
        for case in [{}] + form_cases(form):
            assert not re.search(r"<[a-z_]+>", symbol(form, **case)), (form.name, case)


def _display_cases(form):
    return [{}] if not form.structural_params else form_cases(form, limit=100)


def proved_equal(shown, registered) -> bool:
    """SymPy proof that a display equals the registered expression: the rewrites are algebraic, so expand or
    cancel of the difference usually closes it; the full simplifier is the fallback."""
    diff = sp.expand(undisplay(shown) - registered)
    return diff == 0 or sp.cancel(diff) == 0 or symbolically_equal(undisplay(shown), registered)


def test_display_forms_equal_the_registered_expressions():
    """Every display is proved equal (SymPy) to the registered expression: it is never a second formula."""
    checked = 0
    for form in igbsym.forms():
        pairs = []
        for case in _display_cases(form):
            registered = form.case(**case)
            if isinstance(registered, sp.MatrixBase):
                pairs += [(tidy(e), e) for e in registered]
            elif isinstance(registered, sp.Basic):
                pairs.append((display(form, **case), registered))
        note = notation(form.name)
        pairs += [(tidy(value), value) for _, value in (note.extra() if note.extra else [])]
        for shown, registered in pairs:
            if shown != registered:
                assert proved_equal(shown, registered), (form.name, shown, registered)
                checked += 1
    assert checked >= 10  # the rewrites are exercised, not all identity


def test_display_rewrite_is_checked_not_trusted():
    """The proof above can fail: a display off by a factor is rejected."""
    form = igbsym.get("activation.mean")
    shown = display(form, activation="relu")
    assert not proved_equal(shown * sp.Rational(11, 10), form.case(activation="relu"))


# --- golden strings (symbol and display form), a few per family ----------------------------------------------
GOLDEN = {
    ("nngp.gamma", ()): r"\gamma_{\mathcal{D}} = \frac{M_{off}}{T - M_{off}}",
    ("nngp.relu_kernel", ()):
        r"J(\rho) = \frac{\rho \left(\pi - \arccos{\left(\rho \right)}\right) + \sqrt{1 - \rho^{2}}}{2 \pi}",
    ("moments.centred_ratio", ()): r"\frac{\mu_{2,c}}{\mu_2}(\gamma) = \frac{1}{\gamma + 1}",
    ("moments.bn_resnet_exponent", (("activation", "relu"),)):
        r"\beta_{\mathrm{BN\text{-}Res}}(\mathrm{ReLU}) = \frac{1}{2 \left(\pi - 1\right)}",
    # with biases (sigma_b = 0 gives alpha^2 sigma_w^2/(alpha^2 sigma_w^2 (pi - 1) + 2 pi): derivations/resnet.py)
    ("resnet.gamma", (("L", 1), ("activation", "relu"))):
        r"\gamma^{\mathrm{res}}_{1} = \frac{\sigma_w^{2} \left(\Delta_{2} \alpha^{2} - 2 \pi \sigma_{b}^{2}\right) - "
        r"2 \pi \sigma_{b}^{2}}{\sigma_w^{2} \left(\Delta_{1} \alpha^{2} - 2 \pi \sigma_w^{2}\right)}",
    ("activation.mean", (("activation", "relu"),)):
        r"\mathbb{E}\left[\mathrm{ReLU}(X)\right] = \frac{\sigma}{\sqrt{2\pi}}",
    ("activation.var", (("activation", "relu"),)):
        r"\operatorname{Var}\left[\mathrm{ReLU}(X)\right] = \frac{\sigma^{2} \left(\pi - 1\right)}{2 \pi}",
    ("leaky.m4", ()): r"\mathbb{E}\left[\phi_a(x)^4\right] = \frac{\kappa \sigma^{4} \left(a^{4} + 1\right)}{2}",
    ("leaky.mean", ()): r"\mathbb{E}\left[\phi_a(X)\right] = \frac{\sigma \left(1 - a\right)}{\sqrt{2\pi}}",
    ("bn.var", ()): r"\operatorname{Var}[\tilde B] = \frac{B}{B - 4}",
    ("bn.support_canonical", ()): r"\max |z| = \sqrt{B - 1}",
    ("bn.kurtosis_canonical", ()): r"\kappa[z] = \frac{3 \left(B - 1\right)}{B + 1}",
    ("igb.gamma", (("activation", "relu"),)): r"\gamma(\mathrm{ReLU}) = \frac{1}{\pi - 1}",
    ("igb.corr", ()): r"c(\gamma) = \frac{\gamma}{\gamma + 1}",
    ("igb.quantile", ()): r"F_{G_0}^{-1}(p; \gamma) = \Phi\left(\sqrt{\gamma} \Phi^{-1}\left(p\right)\right)",
    # with biases (sigma_b = 0 gives 1/(pi - 1): derivations/depth.py)
    ("depth.gamma", (("L", 1), ("activation", "relu"))):
        r"\gamma_{1}(\mathrm{ReLU}) = " + (
                                      r"\frac{\pi \sigma_{b}^{2} \sigma_w^{2} - \sigma_{b}^{2} \sigma_w^{2} "
                                      r"\arccos{\left(\frac{\sigma_{b}^{2}}{\sigma_{b}^{2} + \sigma_w^{2}} \right)} "
                                      r"+ 2 \pi \sigma_{b}^{2} + \sigma_w^{3} \sqrt{2 \sigma_{b}^{2} + "
                                      r"\sigma_w^{2}}}{\sigma_w^{2} \left(\sigma_{b}^{2} "
                                      r"\arccos{\left(\frac{\sigma_{b}^{2}}{\sigma_{b}^{2} + \sigma_w^{2}} \right)} "
                                      r"+ \pi \sigma_w^{2} - \sigma_w \sqrt{2 \sigma_{b}^{2} + "
                                      r"\sigma_w^{2}}\right)}"),
    ("depth.corr_map", (("activation", "identity"),)): r"\mathcal{C}_{\mathrm{id}}(c) = c",
    ("kurtosis.p_nonzero", ()): r"P\left(y^{(L)} \neq 0\right) = \left(1 - 2^{- w}\right)^{L}",
    ("kurtosis.df", ()): r"\mathrm{DF}_n = \frac{2 n \left(n - 1\right)}{\kappa \left(n - 1\right) - n + 3}",
    ("maxpool.gumbel_scale", ()): r"b_k = \frac{\sigma}{\sqrt{2} \sqrt{\ln{\left(k \right)}}}",
    ("maxpool.cdf", (("activation", "identity"),)): r"F_{M_k^{\mathrm{id}}}(x) = \Phi\left(\frac{x}{\sigma}\right)^{k}",
    ("rectified.mean", ()): r"\mathbb{E}\left[\mathrm{ReLU}(X)\right] = \mu \Phi\left(\frac{\mu}{\sigma}\right) + "
                            r"\frac{\sigma e^{- \frac{\mu^{2}}{2 \sigma^{2}}}}{\sqrt{2\pi}}",
    ("rectified.moment", (("n", 0),)): r"\mathbb{E}\left[\mathrm{ReLU}(X)^{0}\right] = 1",
    ("width.coefficient", (("L", 1), ("activation", "relu"))): r"a_{1}(\mathrm{ReLU}) = 0",
    ("meanfield.q_star", (("activation", "relu"),)):
        r"q^*_{\mathrm{ReLU}}(\sigma_w, \sigma_b) = \frac{2 \sigma_{b}^{2}}{2 - \sigma_w^{2}}",
    ("meanfield.eoc_sigma_w", (("activation", "leaky_relu"),)):
        r"\sigma_w^{\mathrm{EOC}}(\phi_a; \sigma_b) = \frac{\sqrt{2}}{\sqrt{a^{2} + 1}}",
}


@pytest.mark.parametrize("key", list(GOLDEN), ids=[k[0] + "".join(f"-{v}" for _, v in k[1]) for k in GOLDEN])
def test_golden_equations(key):
    name, case = key
    assert igbsym.get(name).latex(**dict(case)) == GOLDEN[key]


def test_families_all_have_golden_strings():
    assert {n.split(".")[0] for n, _ in GOLDEN} >= {f.family for f in igbsym.forms()} - {"multiclass"}


def test_repr_latex_is_the_symbol_equation():
    assert igbsym.get("igb.pdf")._repr_latex_().startswith(r"$f_{G_0}(g; \gamma) = ")


# --- prose -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("ascii_text, latex", [
    ("X ~ N(0, sigma^2)", r"$X \sim \mathcal{N}(0, \sigma^{2})$"),
    ("B >= 3 (B-2 >= 1 degrees of freedom)", r"$B \ge 3$ ($B-2 \ge 1$ degrees of freedom)"),
    ("B~ = sqrt(B) U/sqrt(S)", r"$\tilde{B} = \sqrt{B} U/\sqrt{S}$"),
    ("Eqs. 27-29, App. G", "Eqs. 27--29, App. G"),
    ("an atom of mass 2^-k at 0", r"an atom of mass $2^{-k}$ at 0"),
    ("see bn.gamma_canonical in derivations/bn.py", r"see \texttt{bn.gamma\_canonical} in \texttt{derivations/bn.py}"),
    ("kappa_w >= 1, e.g. a Student t", r"$\kappa_{w} \ge 1$, e.g. a Student $t$"),
])
def test_prose_mathematics_is_typeset(ascii_text, latex):
    assert prose(ascii_text) == latex


def test_document_has_no_ascii_relations_in_text_mode():
    text = document(igbsym.forms())
    check_well_formed(text)
    assert not check_latex_text(text)
    assert not re.search(r"(?<!\\)sigma\^", text) and "~ N(" not in text


# --- compilation ---------------------------------------------------------------------------------------------
def compile_tex(tmp_path, name: str, text: str) -> str:
    """Compile with pdflatex; fail on any LaTeX error or an overfull box wider than OVERFULL_PT."""
    (tmp_path / f"{name}.tex").write_text(text)
    res = subprocess.run([PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", f"{name}.tex"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    log = (tmp_path / f"{name}.log").read_text(errors="replace")
    errors = [m.group() for m in re.finditer(r"^!.*(?:\n.*){0,3}", log, re.M)]
    assert res.returncode == 0 and not errors, f"{name}.tex: LaTeX errors:\n" + "\n".join(errors)[:3000]
    wide = [(float(w), line) for w, line in re.findall(r"Overfull \\[hv]box \(([\d.]+)pt too \w+\) (.*)", log)]
    bad = [x for x in wide if x[0] > OVERFULL_PT]
    assert not bad, f"{name}.tex: {len(bad)} overfull boxes wider than {OVERFULL_PT}pt: {bad[:5]}"
    return log


@needs_tex
def test_forms_document_compiles_cleanly(tmp_path):
    compile_tex(tmp_path, "forms", document(igbsym.forms()))


@needs_tex
def test_standalone_equation_compiles(tmp_path):
    compile_tex(tmp_path, "one", standalone(igbsym.get("kurtosis.after")))
    compile_tex(tmp_path, "two", standalone(igbsym.get("igb.gamma"), activation="leaky_relu"))


@needs_tex
def test_derivations_and_errata_compile_cleanly(tmp_path, all_derivations):
    for d in all_derivations:
        compile_tex(tmp_path, d.family, derivation_document([d], title=d.title))
    compile_tex(tmp_path, "errata", errata_document(errata(all_derivations)))


def test_errata_report_has_one_entry_per_erratum(all_derivations):
    found = errata(all_derivations)
    text = errata_document(found)
    check_well_formed(text)
    assert text.count(r"\item[As printed.]") == len(found) == text.count(r"\item[Correction.]")
    assert all(e["paper"].endswith(".txt") and e["equation"] for e in found)
    assert any(e["simulation"] for e in found) and any(e["identity"] for e in found)


def test_derivation_documents_report_proof_status(all_derivations):
    kinds = {p.kind for d in all_derivations for p in d.proofs}
    assert kinds <= {"symbolic", "numeric-identity", "numeric-route", "registry-self-comparison"}
    assert "registry-self-comparison" in kinds
    text = derivation_document(all_derivations)
    assert r"\begin{dmath}" in text and "Proof status" in text
    assert "sign(L" not in text and r"\operatorname{sign}{\left(\frac{1}{L^{2}}" not in text


def test_cli_standalone_and_errors(tmp_path):
    target = tmp_path / "eq.tex"
    run = [sys.executable, "-m", "igbsym", "latex"]
    res = subprocess.run(run + ["igb.gamma", "activation=relu", "--standalone", "-o", str(target)],
                         capture_output=True, text=True)
    assert res.returncode == 0 and target.read_text().startswith(r"\documentclass")
    assert r"\gamma(\mathrm{ReLU})" in target.read_text()
    res = subprocess.run(run + ["--standalone"], capture_output=True, text=True)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
