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


def test_families_stays_the_public_function_after_the_registry_loads():
    """igbsym.families() is API; importing the igbsym.families subpackage must not rebind the name."""
    import igbsym
    igbsym.forms()
    assert callable(igbsym.families) and "igb" in igbsym.families()


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
    (["eval", "rectified.mean", "mu=1", "sigma=1", "--dps", "2"],
     "--dps '2' is not allowed; allowed: an integer 5..1000"),
    (["eval", "igb.pdf", "g=0.5", "gamma=0.3", "--dps", "99999999999999999999999"], "allowed: an integer 5..1000"),
    (["eval", "igb.pdf", "g=0.5", "gamma=0.3", "--dps", "1e3"], "--dps '1e3' is not allowed"),
    (["eval", "maxpool.gamma", "k=3", "activation=relu", "--dps", "200"], "numeric route"),
    (["eval", "igb.pdf", "g=0.5", "g=0.3"], "parameter g given twice; give each of g, gamma at most once"),
    (["eval", "igb.pdf", "g=0.5", "gamma=0.3", "--foo"], "unrecognized arguments: --foo; allowed: igbsym eval"),
    (["list", "--bogus"], "igbsym list: unrecognized arguments: --bogus; allowed: igbsym list [-h] [--json]"),
    ([], "required: command; allowed: igbsym [-h] {list"),
    (["validate", "--device", "cpu:-1"], "unknown device 'cpu:-1'; allowed: cpu, cuda, cuda:N, mps"),
    (["validate", "--device", "cuda:99"], "not available on this machine; allowed here: cpu"),
    (["validate", "--seed", "-1"], "--seed '-1' is not allowed; allowed: an integer 0.."),
    (["validate", "--family", "nope"], "unknown family 'nope'; allowed:"),
    (["run", "--device", "foo", "--report", "rep"], "unknown device 'foo'"),
    (["derive", "nofamily", "-o", "out"], "allowed: all, activation, bn"),
    (["latex"], "give a form NAME or --all"),
    (["derive", "nofamily"], "derive: unknown family"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_input_one_line_exit_2(capsys, argv, fragment, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing may be written on bad input
    code, out, err = run(capsys, *argv)
    assert list(tmp_path.iterdir()) == []
    assert code == 2 and out == ""
    assert fragment in err and err.count("\n") == 1 and "Traceback" not in err


def test_output_paths_that_cannot_be_written_are_one_line(capsys, tmp_path):
    """A file where a folder must be (NotADirectoryError before): refused before any work, nothing written."""
    afile = tmp_path / "afile"
    afile.write_text("")
    for argv in (["latex", "--all", "-o", str(afile / "x.tex")], ["latex", "--all", "-o", str(tmp_path)],
                 ["derive", "igb", "-o", str(afile)], ["validate", "--report", str(afile / "r")],
                 ["run", "--report", str(afile)]):
        code, out, err = run(capsys, *argv)
        assert code == 2 and out == "" and err.count("\n") == 1 and "allowed:" in err, (argv, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_dps_cap_boundaries(capsys):
    """5 and 1000 digits are accepted (a closed form at 1000 digits prints all of them); 4 and 1001 are not."""
    code, out, _ = run(capsys, "eval", "igb.gamma", "activation=relu", "--dps", "1000")
    with mpmath.workdps(1010):
        assert code == 0 and abs(mpmath.mpf(out.strip()) - 1 / (mpmath.pi - 1)) < mpmath.mpf(10) ** -998
    assert run(capsys, "eval", "igb.gamma", "activation=relu", "--dps", "5")[0] == 0
    for bad in ("4", "1001"):
        assert run(capsys, "eval", "igb.gamma", "activation=relu", "--dps", bad)[0] == 2


def test_run_checks_arguments_before_deriving(capsys, monkeypatch):
    """`igbsym run --device foo` answered after a 60 s derivation; now the device is refused first."""
    from igbsym import derivations
    monkeypatch.setattr(derivations, "run", lambda family: pytest.fail("derived before checking arguments"))
    code, _, err = run(capsys, "run", "--device", "foo", "--report", "rep")
    assert code == 2 and "unknown device 'foo'" in err


def test_core_install_without_torch_names_the_extra(capsys, monkeypatch):
    """On the core install (no torch) `validate` says which extra to install instead of a ModuleNotFoundError."""
    monkeypatch.delitem(sys.modules, "igbsym.validation.device")
    monkeypatch.setitem(sys.modules, "torch", None)   # `import torch` now raises ModuleNotFoundError
    code, out, err = run(capsys, "validate", "--device", "cpu", "--family", "leaky")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "needs torch, which is not installed; allowed: pip install 'igbsym[validation]'" in err


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


LAYERS = ("igbsym.derivations", "igbsym.validation")


def test_core_never_imports_torch_derivations_or_validation():
    """docs/ARCHITECTURE.md: the core package (registry, kernels, LaTeX, CLI) never imports torch, derivations/ or
    validation/
    (the CLI dispatches to them by name). Checked on the source (every absolute import in igbsym/) and at run time
    (importing every core module and building the registry in a fresh interpreter)."""
    import ast
    import pkgutil
    from pathlib import Path

    import igbsym
    for path in Path(igbsym.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            assert not any(n.split(".")[0] in ("derivations", "validation") or n.startswith(LAYERS)
                           for n in names), (path, names)
    mods = [m.name for m in pkgutil.walk_packages(igbsym.__path__, "igbsym.") if m.name != "igbsym.__main__"]
    code = (f"import sys, importlib; [importlib.import_module(m) for m in {mods!r}]; import igbsym; igbsym.forms(); "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('torch', 'derivations', 'validation') "
            f"or m.startswith({LAYERS!r})]; "
            "assert not bad, bad")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
