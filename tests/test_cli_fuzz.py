"""Fuzz the CLI as a new user would: Hypothesis draws argument lists for every subcommand (valid names and values
mixed with malformed ones) and asserts the contract — exit 0, or exit 2 with exactly one line on stderr
("igbsym: error: ... allowed ..."), never a traceback, within a time bound.

The CLI runs in-process (``igbsym.cli.main(argv)``, stdout/stderr captured) in a scratch working directory.
Commands that would start long jobs are fuzzed only through their argument checks: ``igbsym.derivations.run`` and
``igbsym.validation.cli.run`` (the derivations and the simulations) are replaced by stubs, so ``derive``, ``validate``
and ``run`` exercise every check of their arguments and return at once. ``eval --dps`` draws at most 30 valid
digits (numeric routes at 100 digits take seconds), ``predict --depth`` at most 40 (issue 10's ``--depth 100000``
limit is predict's own test).
"""
import contextlib
import io
import os
import re
import time

import pytest
from hypothesis import given, strategies as st

from igbsym import derivations
import igbsym
from igbsym.derivations.base import Derivation
from igbsym.cli import main
from igbsym.validation import cli as validation_cli

SAYS_ALLOWED = re.compile(r"allowed|choose from|parameters are|families are|missing parameter|give each of|"
                          r"'igbsym list' for all names|did you mean|is not (a|an|one of) ")
SECONDS = 20.0  # per call, on a loaded 2-core machine (the slowest valid call, latex --all, takes ~2 s)
GARBAGE = ["", "-", "--", "-x", "--bogus", "=", "a=b", "nan", "inf", "-inf", "-1", "0", "1e308", "1e-308",
           "99999999999999999999999", "x" * 60, "é∂", "line\nbreak", "-h", "--json", "1.5", "3"]
FAMILIES = igbsym.families()
FORMS = igbsym.names()
PATHS = ["out", "out.tex", "sub/dir/x.tex", "afile", "afile/x.tex", ".", ""]
DEVICES = ["cpu", "cpu:0", "cpu:-1", "cpu:1", "cuda", "cuda:0", "mps", "foo", "", "CPU", "cpu:"]
VALUES = ["0.5", "0.3", "1", "2", "3", "10", "0", "-1", "1e-9", "relu", "identity", "gelu", "proxy", "canonical",
          "none", "pre", "post", "binomial", "threshold", "1e400", "abc"]


def _assignment():
    names = sorted({p.name for f in igbsym.forms() for p in f.params})
    return st.builds(lambda k, v: f"{k}={v}", st.sampled_from(names + ["zz", ""]), st.sampled_from(VALUES + [""]))


TOKENS = {
    "list": st.sampled_from(["--json", "--family", *FAMILIES, *GARBAGE]),
    "show": st.sampled_from([*FORMS, *GARBAGE]),
    "eval": st.one_of(st.sampled_from(FORMS), _assignment(), _assignment(),
                      st.sampled_from(["--dps", "--json", "--dps", *map(str, range(3, 31, 3)), "1001", *GARBAGE])),
    "latex": st.one_of(st.sampled_from(FORMS), _assignment(), st.sampled_from(["--all", "-o", "--output", *PATHS,
                                                                               *GARBAGE])),
    "derive": st.sampled_from(["all", *derivations.modules(), "-o", "--output", *PATHS, *GARBAGE]),
    "validate": st.sampled_from(["--family", *FAMILIES, "--device", *DEVICES, "--quick", "--thorough", "--report",
                                 *PATHS, "--seed", "0", "7", "-3", "2e3", "--list", "--json", *GARBAGE]),
    "run": st.sampled_from(["--family", *FAMILIES, "--device", *DEVICES, "--quick", "--thorough", "--report",
                            *PATHS, "--seed", "0", "-3", *GARBAGE]),
    "predict": st.sampled_from(["--activation", "relu", "gelu", "tanh", "sigmoid", "leaky_relu", "--depth", "1", "3",
                                "40", "0", "--norm", "none", "layernorm", "batchnorm", "rmsnorm", "--placement",
                                "pre", "post", "--pool", "2", "--batch-size", "8", "--a", "0.1", "--sigma-w", "1",
                                "1.4", "0.5", "--json", *GARBAGE]),
}


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    """A scratch working directory (with a file named ``afile``) and stubs for the long jobs."""
    root = tmp_path_factory.mktemp("cli_fuzz")
    (root / "afile").write_text("")
    old_cwd, old_derive, old_validate = os.getcwd(), derivations.run, validation_cli.run
    os.chdir(root)
    derivations.run = lambda family: Derivation(family, f"stub derivation of {family}")
    validation_cli.run = lambda args: 0
    yield root
    os.chdir(old_cwd)
    derivations.run, validation_cli.run = old_derive, old_validate


def call(argv):
    out, err = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's --help exits 0
            code = exc.code
    return code, out.getvalue(), err.getvalue(), time.perf_counter() - t0


def assert_contract(argv, code, out, err, seconds):
    assert seconds < SECONDS, (argv, seconds)
    assert "Traceback" not in err, (argv, err)
    assert code in (0, 2), (argv, code, err)
    if code == 2:
        assert out == "" and err.startswith("igbsym: error: ") and err.count("\n") == 1, (argv, out, err)
        assert SAYS_ALLOWED.search(err), (argv, err)


@pytest.mark.parametrize("command", sorted(TOKENS))
@given(data=st.data())
def test_any_argument_list_gives_exit_0_or_one_line_exit_2(sandbox, command, data):
    tokens = data.draw(st.lists(TOKENS[command], max_size=6), label="tokens")
    argv = [command, *tokens]
    assert_contract(argv, *call(argv))


@given(argv=st.lists(st.sampled_from(["list", "eval", "--json", "-h", "--bogus", *GARBAGE]), max_size=4))
def test_any_top_level_argument_list(sandbox, argv):
    assert_contract(argv, *call(argv))
