"""`igbsym validate`: coverage listing, exit codes (0 pass / 1 fail / 2 bad input) and the written report."""
import json

import pytest
import torch

from igbsym.cli import main
from igbsym.validation import checks
from igbsym.validation.checks import Check, Result


def test_list_json_covers_foundation_families(capsys):
    assert main(["validate", "--list", "--json"]) == 0
    cov = json.loads(capsys.readouterr().out)
    assert {"name", "check"} <= set(cov[0])
    found = [c for c in cov if c["name"].split(".")[0] in ("rectified", "leaky", "activation", "igb")]
    assert found and all(c["check"] for c in found)


def test_list_text(capsys):
    assert main(["validate", "--family", "leaky", "--list"]) == 0
    out = capsys.readouterr().out
    assert "leaky.m4" in out and "4/4 forms have a check" in out
    assert "4/4 caught by the mutation meta-test" in out
    assert "leaky.symmetric_inputs" in out and "shift:y gross:y" in out


def test_list_marks_a_changed_check_stale(monkeypatch, capsys):
    """validate --list reads the recorded meta-test; a check whose source changed since is shown 'stale'."""
    monkeypatch.setattr(checks, "check_fingerprint", lambda chk: "changed")
    assert main(["validate", "--family", "leaky", "--list", "--json"]) == 0
    cov = json.loads(capsys.readouterr().out)
    assert cov and all(c["status"] == "stale" and not c["caught"] for c in cov)


@pytest.mark.parametrize("argv,msg", [(["validate", "--family", "nope"], "unknown family"),
                                      (["validate", "--device", "tpu"], "unknown device")])
def test_bad_input_exit_2_one_line(argv, msg, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert msg in err and "\n" not in err


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_unavailable_cuda_exit_2(capsys):
    assert main(["validate", "--device", "cuda", "--family", "leaky"]) == 2
    err = capsys.readouterr().err.strip()
    assert "not available" in err and "\n" not in err


def test_validate_family_writes_report(tmp_path, capsys):
    assert main(["validate", "--family", "leaky", "--quick", "--device", "cpu", "--report", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "leaky.m4" in out and "comparisons pass" in out
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["results"] and all(r["passed"] for r in data["results"])
    assert data["meta"]["mode"] == "quick"
    assert r"\begin{longtable}" in (tmp_path / "table.tex").read_text()
    md = (tmp_path / "report.md").read_text()
    assert "| form |" in md and "Finite-size notes" in md and "z_scores.png" in md
    assert (tmp_path / "z_scores.png").stat().st_size > 1000


def _fake(monkeypatch, fn):
    monkeypatch.setitem(checks._CHECKS, "leaky.zz_fake", Check("leaky.zz_fake", ("leaky.m2",), fn, "fake"))
    monkeypatch.setattr(checks, "_LOADED", True)


def test_failing_check_exit_1(monkeypatch, capsys):
    checks.all_checks()
    _fake(monkeypatch, lambda ctx: [Result("leaky.m2", "deliberately wrong", 1.0, 2.0, 0.01, 10, 0, z=100.0)])
    assert main(["validate", "--family", "leaky", "--device", "cpu"]) == 1
    assert "FAIL leaky.m2 [deliberately wrong]" in capsys.readouterr().out


def test_crashing_check_is_a_failure(monkeypatch, capsys):
    checks.all_checks()

    def boom(ctx):
        raise RuntimeError("boom")
    _fake(monkeypatch, boom)
    assert main(["validate", "--family", "leaky", "--device", "cpu"]) == 1
    assert "crashed: RuntimeError: boom" in capsys.readouterr().out


def test_check_filter_and_unknown_check_exit_2(capsys):
    assert main(["validate", "--check", "nope.none"]) == 2
    err = capsys.readouterr().err.strip()
    assert "matches no check" in err and "\n" not in err


def test_verdicts_written_as_checks_finish_and_survive_an_interrupt(monkeypatch, tmp_path, capsys):
    """checks.jsonl gets each check's verdict when it finishes; Ctrl-C during a later check keeps them, writes the
    partial report and exits 130."""
    checks.all_checks()

    def interrupted(ctx):
        raise KeyboardInterrupt
    _fake(monkeypatch, interrupted)
    assert main(["validate", "--family", "leaky", "--check", "leaky.symmetric_inputs,leaky.zz_fake",
                 "--report", str(tmp_path)]) == 130
    rows = [json.loads(line) for line in (tmp_path / "checks.jsonl").read_text().splitlines()]
    assert [r["check"] for r in rows] == ["leaky.symmetric_inputs"] and rows[0]["passed"]
    assert rows[0]["results"] and rows[0]["cpu_seconds"] >= 0
    captured = capsys.readouterr()
    assert "[1/2] leaky.symmetric_inputs: pass" in captured.err and "interrupted: 1/2" in captured.err
    assert "leaky.zz_fake" in captured.out and "not run" in captured.out
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["meta"]["finished"] == "1/2 checks" and all(r["check"] == "leaky.symmetric_inputs"
                                                            for r in data["results"])


def test_jobs_give_the_serial_results(tmp_path):
    """Every check seeds itself: two worker processes give exactly the serial run's results (and their order)."""
    runs = {}
    for jobs in ("1", "2"):
        out = tmp_path / jobs
        assert main(["validate", "--check", "leaky.symmetric_inputs,rectified.scaled_gaussian", "--jobs", jobs,
                     "--report", str(out)]) == 0
        runs[jobs] = [(r["check"], r["label"], r["estimate"], r["se"])
                      for r in json.loads((out / "results.json").read_text())["results"]]
    assert runs["1"] == runs["2"] and {c for c, *_ in runs["1"]} == {"leaky.symmetric_inputs",
                                                                      "rectified.scaled_gaussian"}
