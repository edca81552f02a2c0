"""The CLI contract: list/show/eval/latex/derive names and arguments, JSON shapes, one-line errors with exit 2."""
import json
import subprocess
import sys

import mpmath
import pytest

from igbsym.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_list_json_lists_every_form_with_parameters_conditions_provenance(capsys):
    import igbsym
    code, out, _ = run(capsys, "list", "--json")
    data = json.loads(out)
    assert code == 0 and [d["name"] for d in data] == igbsym.names()
    pdf = next(d for d in data if d["name"] == "igb.pdf")
    assert [p["name"] for p in pdf["parameters"]] == ["g", "gamma"]
    assert pdf["conditions"] == ["0 < g < 1"] and "igb-initial-guessing-bias.txt" in pdf["provenance"]


def test_show_prints_expression_conditions_provenance_latex(capsys):
    code, out, _ = run(capsys, "show", "rectified.mean")
    assert code == 0 and "provenance" in out and "LaTeX" in out and "Phi" in out


def test_eval_json_and_dps(capsys):
    code, out, _ = run(capsys, "eval", "igb.gamma", "activation=relu", "--json")
    data = json.loads(out)
    assert code == 0 and data["name"] == "igb.gamma" and data["params"] == {"activation": "relu"}
    assert abs(float(data["value"]) - 1 / (float(mpmath.pi) - 1)) < 1e-15
    code, out, _ = run(capsys, "eval", "igb.gamma", "activation=relu", "--dps", "40")
    with mpmath.workdps(45):
        ref = 1 / (mpmath.pi - 1)
        assert len(out.strip().replace(".", "").lstrip("0")) >= 40
        assert abs(mpmath.mpf(out.strip()) - ref) < mpmath.mpf(10) ** -39


def test_eval_dps_reads_every_digit_of_the_input(capsys):
    """0.1 at 50 digits is the decimal 0.1, not the binary double nearest to it."""
    _, out, _ = run(capsys, "eval", "leaky.m2", "a=0.1", "sigma=1", "--dps", "50")
    with mpmath.workdps(60):
        assert abs(mpmath.mpf(out.strip()) - mpmath.mpf("0.505")) < mpmath.mpf(10) ** -48


@pytest.mark.parametrize("argv,fragment", [
    (["eval", "nope.form"], "unknown closed form 'nope.form'"),
    (["eval", "rectified.mean", "mu=0"], "missing parameter sigma"),
    (["eval", "rectified.mean", "mu=0", "sigma=1", "tau=2"], "unknown parameter tau"),
    (["eval", "rectified.mean", "mu=0", "sigma=0"], "sigma=0 is not allowed; allowed: a real number > 0"),
    (["eval", "igb.pdf", "g=1.2", "gamma=1"], "0 < g < 1"),
    (["eval", "igb.cdf", "g=0.3", "gamma=-0.5"], "gamma=-0.5 is not allowed"),
    (["eval", "rectified.moment", "n=1.5", "mu=0", "sigma=1"], "is not an integer"),
    (["eval", "rectified.mean", "mu0", "sigma=1"], "malformed argument 'mu0'"),
    (["eval", "rectified.mean", "mu=abc", "sigma=1"], "mu='abc' is not a number"),
    (["eval", "rectified.mean", "mu=1", "sigma=1", "--dps", "2"], "dps=2 is not allowed"),
    (["latex"], "give a form NAME or --all"),
    (["derive", "nofamily"], "unknown derivation family"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_input_one_line_exit_2(capsys, argv, fragment):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert fragment in err and err.count("\n") == 1 and "Traceback" not in err


def test_latex_one_and_all(capsys, tmp_path):
    code, out, _ = run(capsys, "latex", "igb.pdf")
    assert code == 0 and r"\Phi^{-1}" in out
    code, out, _ = run(capsys, "latex", "rectified.moment", "n=3")
    assert code == 0 and "n=3" in out
    target = tmp_path / "all.tex"
    code, out, _ = run(capsys, "latex", "--all", "-o", str(target))
    assert code == 0 and target.read_text().startswith(r"\documentclass")


def test_console_script_runs_as_a_process():
    res = subprocess.run([sys.executable, "-m", "igbsym", "eval", "rectified.mean", "mu=0", "sigma=-1"],
                         capture_output=True, text=True)
    assert res.returncode == 2 and res.stderr.startswith("igbsym: error:") and res.stdout == ""


def test_core_imports_without_torch():
    """DESIGN: the core package (registry, kernels, LaTeX, CLI) never imports torch; only validation/ does."""
    code = ("import sys, igbsym, igbsym.cli, igbsym.predict; igbsym.forms(); "
            "assert 'torch' not in sys.modules, 'torch was imported'")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
