"""``--rel-se`` (issue 47, the API contract): the shared rule ``stats.next_round`` / ``stats.grow``, ``probe(...,
rel_se=R)`` and ``igbsym probe --rel-se``, ``igbsym sweep --rel-se`` (one process and two torchrun ranks).

Expected values come from independent routes: the round sizes by hand from SE ∝ 1/√n; a run grown to n inits
against one plain run of n inits (the same per-init (seed, i) seeding, so the units and γ̂ are identical); a sweep
grown to n inits against a fixed sweep of n inits; a resumed sweep against an uninterrupted one.
"""
from __future__ import annotations

import json
import math
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from igbsym.cli import main
from igbsym.errors import InputError
from igbsym.validation import probe as probe_mod
from igbsym.validation.probe import probe
from igbsym.validation.stats import MAX_INITS, Estimate, grow, next_round, ratio_estimate

torch.set_num_threads(1)
ROOT = str(Path(__file__).resolve().parents[1])
BAD_R = ("0", "1", "nan", "-0.5", "inf", "1.5")


def _est(value, se, n=10):
    return Estimate(value, se, value - 2 * se, value + 2 * se, "delta", n)


def test_next_round_sizes_by_the_se_ratio():
    """Relative SE 0.06 at n = 100 for a target 0.05: SE ∝ 1/√n asks for 100·(0.06/0.05)² = 144, ×1.1 = 158.4."""
    p = next_round(_est(1.0, 0.06), 100, 0.05, 10_000, False)
    assert (p.met, p.next, p.need, p.target) == (False, 159, 159, "relative")
    assert next_round(_est(1.0, 0.06), 100, 0.05, 10_000, False, step=64).next == 192    # whole groups: 3 × 64
    assert next_round(_est(1.0, 0.06), 100, 0.05, 150, False).next == 150                # clipped to the cap
    at_cap = next_round(_est(1.0, 0.06), 150, 0.05, 150, False)
    assert (at_cap.met, at_cap.next, at_cap.need) == (False, None, 238)                   # 237.6: unmet at the cap
    met = next_round(_est(-2.0, 0.1), 100, 0.05, 10_000, False)                           # |γ̂| in the ratio
    assert (met.met, met.next, met.achieved) == (True, None, 0.05)
    absolute = next_round(_est(0.001, 0.04), 100, 0.05, 10_000, True)
    assert (absolute.met, absolute.achieved, absolute.target) == (True, 0.04, "absolute")


def test_grow_meets_the_target_and_equals_one_run_of_its_count():
    """Units of a fixed stream (unit i depends on i alone): the grown estimate is that of its first n units, its
    relative SE is at most the target, and a zero-mean stream switches to the absolute SE."""
    rng = np.random.default_rng(5)
    a_all, b_all = 1.0 + rng.standard_normal(50_000), 2.0 + 0.3 * rng.standard_normal(50_000)
    n = [0]

    def run_to(k):
        n[0] = max(n[0], k)

    est, p = grow(run_to, lambda: ratio_estimate(a_all[:n[0]], b_all[:n[0]]), 0.02, 16, 50_000)
    assert p.met and p.n == n[0] and p.target == "relative"
    assert est.se / abs(est.value) <= 0.02 and p.achieved == est.se / abs(est.value)
    plain = ratio_estimate(a_all[:p.n], b_all[:p.n])
    assert (est.value, est.se) == (plain.value, plain.se)
    zero = a_all - 1.0                                    # mean 0: no relative SE exists
    n[0] = 0
    est, p = grow(run_to, lambda: ratio_estimate(zero[:n[0]], b_all[:n[0]]), 0.02, 16, 50_000)
    assert p.met and p.target == "absolute" and est.se <= 0.02
    n[0] = 0                                              # absolute from the start: a non-zero γ held to its SE
    est, p = grow(run_to, lambda: ratio_estimate(a_all[:n[0]], b_all[:n[0]]), 0.004, 16, 50_000, absolute=True)
    assert p.met and p.target == "absolute" and est.se <= 0.004 < 0.02 * abs(est.value)


def _model():
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))


def _blob(n=120):
    return torch.randn((n, 6), generator=torch.Generator().manual_seed(0))


def test_probe_rel_se_meets_the_target_and_equals_a_plain_run(monkeypatch):
    monkeypatch.setattr(probe_mod, "_MAX_GROUP", 4)       # small groups: several rounds on a tiny model
    x = _blob()
    res = probe(_model(), x, 4, seed=2, rel_se=0.1, layers=False, estimator="plain")   # plain: needs rounds
    p = res.precision
    assert p["met"] and p["achieved"] <= 0.1 and res.gamma.se / abs(res.gamma.value) <= 0.1
    assert len(p["rounds"]) >= 2 and p["rounds"][-1] == res.n_inits and res.n_inits % 4 == 0
    plain = probe(_model(), x, res.n_inits, seed=2, layers=False, estimator="plain")
    assert torch.equal(res.mu, plain.mu) and torch.equal(res.var, plain.var) and torch.equal(res.frac, plain.frac)
    assert (res.gamma.value, res.gamma.se) == (plain.gamma.value, plain.gamma.se)
    assert plain.precision is None and "precision" in res.summary()
    assert res.to_dict()["precision"]["inits"] == res.n_inits


def test_probe_cap_reached_is_one_line_and_in_the_json():
    res = probe(_model(), _blob(), 4, seed=2, rel_se=0.001, max_inits=12, layers=False)
    p = res.to_dict()["precision"]
    assert (p["met"], p["inits"], p["max_inits"], res.n_inits) == (False, 12, 12, 12)
    assert p["achieved"] > 0.001 and p["need"] > 12
    lines = [line for line in res.summary().splitlines() if "NOT MET" in line]
    assert len(lines) == 1 and "cap of 12 inits" in lines[0]


def test_probe_bad_rel_se_and_cap():
    for r in (0.0, 1.0, math.nan, -0.5, math.inf, True):
        with pytest.raises(InputError, match="rel_se") as exc:
            probe(_model(), _blob(), 4, rel_se=r)
        assert "\n" not in str(exc.value)
    with pytest.raises(InputError, match="max_inits"):
        probe(_model(), _blob(), 8, rel_se=0.1, max_inits=4)
    with pytest.raises(InputError, match="give rel_se too"):
        probe(_model(), _blob(), 8, max_inits=40)


def test_probe_cli_rel_se(capsys):
    for r in BAD_R:
        capsys.readouterr()
        assert main(["probe", "--model", "mlp", "--data", "gaussian:12:64", "--rel-se", r]) == 2
        err = capsys.readouterr().err
        assert "--rel-se" in err and len(err.strip().splitlines()) == 1, err
    capsys.readouterr()
    assert main(["probe", "--model", "mlp", "--data", "gaussian:12:64", "--inits", "4", "--rel-se", "0.2",
                 "--max-inits", "40", "--json"]) == 0
    p = json.loads(capsys.readouterr().out)["precision"]
    assert p["met"] and p["achieved"] <= 0.2 and p["max_inits"] == 40
    assert MAX_INITS == 10_000        # the default the CLI help states


GRID = """
[run]
seed = 3
inits = 8
chunk = 4
[fixed]
width = 16
n_data = 128
[axes]
activation = ["relu"]
"""


def _results(db):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {k: json.loads(r) for k, r in con.execute("SELECT key, result FROM points")}
    finally:
        con.close()


def _chunks(db):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute("SELECT idx, first_init, n, data FROM chunks ORDER BY idx").fetchall()
    finally:
        con.close()


def test_sweep_rel_se_meets_target_equals_fixed_run_and_resumes(tmp_path, capsys):
    grid = tmp_path / "g.toml"
    grid.write_text(GRID)
    db = tmp_path / "rel.db"
    assert main(["sweep", str(grid), "--db", str(db), "--rel-se", "0.1", "--max-inits", "2000"]) == 0
    (res,) = _results(db).values()
    n = res["inits"]
    assert res["target_met"] and res["rel_se_achieved"] <= 0.1 and res["rel_se"] == 0.1
    assert res["se"] / abs(res["gamma"]) == pytest.approx(res["rel_se_achieved"], rel=1e-12)
    assert n > 8 and n % 4 == 0 and res["max_inits"] == 2000 and res["rel_se_kind"] == "relative"
    assert "rel_se_achieved" in capsys.readouterr().out
    fixed = tmp_path / "fixed.db"
    assert main(["sweep", str(grid), "--db", str(fixed), "--inits", str(n)]) == 0
    (ref,) = _results(fixed).values()
    assert _chunks(db) == _chunks(fixed)                   # the same per-init units
    assert {k: ref[k] for k in ref} == {k: res[k] for k in ref}
    # resume: drop the result and the last two chunks; the re-run replays the rounds from the stored units
    con = sqlite3.connect(db)
    with con:
        con.execute("UPDATE points SET result = NULL")
        con.execute("DELETE FROM chunks WHERE idx >= (SELECT MAX(idx) - 1 FROM chunks)")
    con.close()
    assert main(["sweep", str(grid), "--db", str(db), "--rel-se", "0.1", "--max-inits", "2000"]) == 0
    assert _results(db) == {k: res for k in _results(db)} and len(_chunks(db)) == n // 4


def test_sweep_rel_se_cap_and_bad_input(tmp_path, capsys):
    grid = tmp_path / "g.toml"
    grid.write_text(GRID)
    capsys.readouterr()
    assert main(["sweep", str(grid), "--db", str(tmp_path / "cap.db"), "--rel-se", "0.001", "--max-inits",
                 "12"]) == 0
    out = capsys.readouterr().out
    (res,) = _results(tmp_path / "cap.db").values()
    assert (res["target_met"], res["inits"]) == (False, 12) and res["rel_se_achieved"] > 0.001
    assert len([line for line in out.splitlines() if "max_inits = 12" in line]) == 1
    bad = [["--rel-se", r] for r in BAD_R] + [["--max-inits", "100"], ["--rel-se", "0.1", "--max-inits", "4"]]
    for args in bad:
        capsys.readouterr()
        assert main(["sweep", str(grid), "--db", str(tmp_path / "bad.db"), *args]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "allowed" in err, err
    grid.write_text(GRID.replace("chunk = 4", "chunk = 4\nrel_se = 2"))
    assert main(["sweep", str(grid), "--db", str(tmp_path / "bad.db")]) == 2
    assert "run.rel_se" in capsys.readouterr().err
    assert not (tmp_path / "bad.db").exists()


def test_sweep_rel_se_two_ranks_equal_one(tmp_path):
    """torchrun with 2 ranks: the rounds are decided on rank 0 and broadcast; chunks and results are bit-identical
    to one process."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p),
           "IGBSYM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    grid = tmp_path / "g.toml"
    grid.write_text(GRID.replace('activation = ["relu"]', 'activation = ["relu", "tanh"]'))
    one, two = tmp_path / "one.db", tmp_path / "two.db"
    assert main(["sweep", str(grid), "--db", str(one), "--rel-se", "0.1", "--max-inits", "2000"]) == 0
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                           "-m", "igbsym", "sweep", str(grid), "--db", str(two), "--rel-se", "0.1", "--max-inits",
                           "2000"], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _results(one) == _results(two) and len(_results(one)) == 2
    con = [sqlite3.connect(f"file:{db}?mode=ro", uri=True) for db in (one, two)]
    rows = [c.execute("SELECT point, idx, data FROM chunks ORDER BY point, idx").fetchall() for c in con]
    for c in con:
        c.close()
    assert rows[0] == rows[1] and len(rows[0]) > 4
