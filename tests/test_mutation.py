"""The mutation meta-test (issue 10): every registered form's own check fails when the form is mutated.

For every form, ``igbsym.validation.checks.run_mutations`` re-runs the check that claims it (quick mode, the
simulations memoised by ``reuse_simulations`` so only predictions and statistics are recomputed) with the form's
value replaced on every route (numpy, mp, lambdified) by: a relative shift of 3 allowances of the check
('shift'), 1.25 v + 0.05 ('gross'), and each integer structural parameter + 1 (B+1, k+1, L+1, w+1, n+1, D+1).
A form is caught when some Result of that form fails under every mutation (a structural mutation that moves no
z-test prediction by more than 2 allowances is recorded as below the check's resolution, not as a miss). The outcome
must equal the
committed record validation/mutation_coverage.json that ``igbsym validate --list`` shows (regenerate with
``IGBSYM_WRITE_MUTATION=1``). The meta-test itself (a quick run of every check, then of each mutation) is
``slow``: CI verifies instead that the committed record is current (tests/test_coverage.py: every form caught,
no check's source changed since the record was made)."""
import json
import os

import numpy as np
import pytest
import torch

import igbsym
from igbsym.validation import checks
from igbsym.validation.checks import Check, Context, mutated, run_mutations, z_result

torch.set_num_threads(1)


# ------------------------------------------------------------------------------------------- the machinery
def test_mutation_hits_every_route_and_is_undone():
    form = igbsym.get("bn.gamma_canonical")
    v, m, lam = float(form.numpy(B=8)), float(form.mp(30, B=8)), float(form.lambdified()(B=8))
    with mutated("bn.gamma_canonical", "gross"):
        assert float(form.numpy(B=8)) == pytest.approx(1.25 * v + 0.05)
        assert float(form.mp(30, B=8)) == pytest.approx(1.25 * m + 0.05)
        assert float(form.lambdified()(B=8)) == pytest.approx(1.25 * lam + 0.05)
        assert float(igbsym.get("bn.gamma_canonical").numpy(B=8)) == pytest.approx(1.25 * v + 0.05)
    with mutated("bn.gamma_canonical", "B+1"):
        assert float(form.numpy(B=8)) == float(igbsym.get("bn.gamma_canonical").__class__.numpy(form, B=9))
        assert float(form.lambdified()(B=np.array([8.0]))[0]) == pytest.approx(float(form.numpy(B=8)))
    assert float(form.numpy(B=8)) == v and "numpy" not in form.__dict__


def test_structural_mutation_of_a_structural_parameter():
    form = igbsym.get("rectified.moment")
    with mutated("rectified.moment", "n+1"):
        assert float(form.numpy(n=2, mu=0.0, sigma=1.0)) == pytest.approx(
            float(type(form).numpy(form, n=3, mu=0.0, sigma=1.0)))
        assert float(form.lambdified(n=2)(mu=0.0, sigma=1.0)) == pytest.approx(
            float(type(form).numpy(form, n=3, mu=0.0, sigma=1.0)))


def _fake_checks(own: bool):
    """A check of leaky.m2 at a = 0: E φ(x)² = σ²(1 + a²)/2 with a 'simulated' estimate equal to the truth;
    ``own`` uses the form's value as prediction, else a re-derivation (which the meta-test must expose)."""
    def fn(ctx):
        truth = 0.5
        pred = float(igbsym.get("leaky.m2").numpy(a=0.0, sigma=1.0)) if own else truth
        return [z_result("leaky.m2", "fake", pred, truth + 1e-4, 1e-3, 100, 0)]
    return [Check("fake.m2", ("leaky.m2",), fn, "fake")]


@pytest.mark.parametrize("own", [True, False])
def test_meta_test_exposes_a_check_that_rederives_its_prediction(own):
    rec = run_mutations(_fake_checks(own))
    row = rec["forms"]["leaky.m2"]
    assert row["check"] == "fake.m2" and row["caught"] is own
    assert rec["baseline"]["fake.m2"]["passed"]


def test_refresh_reruns_only_the_checks_whose_source_changed(monkeypatch):
    fakes = _fake_checks(True)
    monkeypatch.setattr(checks, "all_checks", lambda: fakes)
    current = run_mutations(fakes)
    ran = []
    real = checks.run_mutations
    monkeypatch.setattr(checks, "run_mutations", lambda chks, progress=None: ran.append(chks) or real(chks))
    assert checks.refresh_mutation_record(current)["forms"]["leaky.m2"] == current["forms"]["leaky.m2"]
    assert ran == [[]]
    wrong = {**current["forms"]["leaky.m2"], "caught": False}
    old = dict(current, checks={"fake.m2": "0" * 16, "removed.check": "1" * 16},
               forms={**current["forms"], "leaky.m2": wrong})
    fresh = checks.refresh_mutation_record(old)
    assert [c.name for c in ran[-1]] == ["fake.m2"]
    assert fresh["checks"] == current["checks"] and fresh["forms"]["leaky.m2"]["caught"] is True


def test_reusable_memoises_only_inside_the_block():
    calls = []

    @checks.reusable
    def draw(ctx, k):
        calls.append(k)
        return k * 2
    ctx = Context()
    draw(ctx, 1), draw(ctx, 1)
    with checks.reuse_simulations():
        draw(ctx, 1), draw(ctx, 1), draw(ctx, 2)
    assert calls == [1, 1, 1, 2]


# ------------------------------------------------------------------------------------------- the meta-test
@pytest.fixture(scope="session")
def record():
    rec = run_mutations()
    if os.environ.get("IGBSYM_WRITE_MUTATION"):
        checks.MUTATION_RECORD.write_text(json.dumps(rec, indent=1) + "\n")
    return rec


@pytest.mark.slow
def test_every_check_passes_unmutated(record):
    bad = {k: v["failed"] for k, v in record["baseline"].items() if not v["passed"]}
    assert not bad, bad


@pytest.mark.slow
@pytest.mark.parametrize("name", igbsym.names())
def test_every_form_mutation_is_caught(record, name):
    row = record["forms"][name]
    assert row["check"] is not None, f"{name}: no check produces a Result for it"
    missed = [k for k, v in row["mutations"].items() if v["caught"] is False]   # None: below resolution
    assert not missed, f"{name} ({row['check']}): mutations not caught: {missed}"


@pytest.mark.slow
def test_recorded_coverage_is_current(record):
    """validate --list shows validation/mutation_coverage.json: it must be what the meta-test finds now."""
    saved = checks.load_mutation_record()
    assert saved is not None, "no validation/mutation_coverage.json: run IGBSYM_WRITE_MUTATION=1 pytest " \
                              "tests/test_mutation.py"
    strip = lambda r: {f: (v["check"], v["caught"], sorted(v["mutations"])) for f, v in r["forms"].items()}
    assert strip(saved) == strip(record) and saved["checks"] == record["checks"]
    assert all(c["status"] == "caught" for c in checks.coverage())
