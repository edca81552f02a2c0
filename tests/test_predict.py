"""`igbsym predict`: γ per layer, f_G0 summary, regime, c; JSON and plot; bad input exits 2 with one line."""
import json
import math

import pytest

import igbsym
from igbsym.cli import main


def run(capsys, *argv):
    rc = main(["predict", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_layernorm_pre_text(capsys):
    rc, out, _ = run(capsys, "--activation", "relu", "--depth", "20", "--norm", "layernorm", "--placement", "pre")
    assert rc == 0
    assert "regime: deep prejudice" in out and "P(G0 < 0.1 or G0 > 0.9)" in out
    assert len([ln for ln in out.splitlines() if ln.strip()[:2].strip().isdigit()]) == 20


def test_json_matches_forms(capsys):
    rc, out, _ = run(capsys, "--activation", "leaky_relu", "--a", "0.2", "--depth", "6", "--norm", "rmsnorm",
                     "--placement", "post", "--json")
    assert rc == 0
    res = json.loads(out)
    g = igbsym.get("depth.gamma")
    for row in res["layers"]:
        assert row["gamma"] == pytest.approx(float(g.numpy(L=row["layer"], activation="leaky_relu", a=0.2)), rel=1e-12)
        assert row["c"] == pytest.approx(row["gamma"] / (1 + row["gamma"]), rel=1e-12)
    q = igbsym.get("igb.quantile")
    assert res["f_G0"]["q05"] == pytest.approx(float(q.numpy(p=0.05, gamma=res["gamma"])), rel=1e-12)
    assert res["f_G0"]["q50"] == pytest.approx(0.5, abs=1e-12)
    assert res["sigma_w"] == pytest.approx(math.sqrt(2))


def test_batchnorm_and_post_norms(capsys):
    rc, out, _ = run(capsys, "--depth", "4", "--norm", "batchnorm", "--batch-size", "64", "--json")
    res = json.loads(out)
    ref = float(igbsym.get("bn.gamma_canonical").numpy(B=64))
    assert rc == 0 and all(r["gamma"] == pytest.approx(ref, rel=1e-14) for r in res["layers"])
    rc, out, _ = run(capsys, "--depth", "4", "--norm", "layernorm", "--placement", "post", "--json")
    res = json.loads(out)
    assert res["gamma"] == 0 and res["regime"] == "neutral" and res["f_G0"]["q95"] == pytest.approx(0.5)


def test_pool_depth_one(capsys):
    rc, out, _ = run(capsys, "--pool", "4", "--json")
    res = json.loads(out)
    assert rc == 0 and res["gamma"] == pytest.approx(float(igbsym.get("maxpool.gamma").numpy(k=4, activation="relu")))


def test_plot(capsys, tmp_path):
    path = tmp_path / "f.png"
    rc, out, _ = run(capsys, "--depth", "5", "--plot", str(path))
    assert rc == 0 and path.stat().st_size > 1000 and "wrote" in out


@pytest.mark.parametrize("argv,match", [
    (["--norm", "groupnorm"], "unknown norm"),
    (["--norm", "layernorm", "--placement", "middle"], "unknown placement"),
    (["--depth", "0"], "--depth 0"),
    (["--norm", "batchnorm"], "needs --batch-size"),
    (["--batch-size", "32"], "--batch-size 32"),
    (["--activation", "swish"], "unknown activation"),
    (["--sigma-w", "-1"], "sigma-w"),
    (["--pool", "2", "--depth", "3"], "--pool"),
    (["--pool", "2", "--activation", "gelu"], "--pool 2"),
    (["--norm", "batchnorm", "--batch-size", "16", "--activation", "gelu"], "relu only"),
    (["--sigma-b", "-0.1"], "--sigma-b -0.1"),
    (["--sigma-b", "nan"], "--sigma-b nan"),
    (["--sigma-b", "0.3", "--norm", "layernorm"], "--sigma-b"),
    (["--sigma-b", "0.3", "--residual", "--norm", "layernorm"], "--sigma-b"),   # resnet.gamma: biases without a norm
    (["--sigma-b", "0.3", "--activation", "srelu"], "--sigma-b"),
    (["--sigma-b", "0.3", "--model", "mlp", "--data", "gaussian"], "carries its own biases"),
])
def test_bad_input_exits_2_with_one_line(capsys, argv, match):
    rc, out, err = run(capsys, *argv)
    assert rc == 2 and out == "" and match in err and len(err.strip().splitlines()) == 1


def test_biases_every_layer_is_depth_gamma_with_sigma_b(capsys):
    """--sigma-b: the mean-field convention Y = W phi(Y) + B in every Dense (issue 48); per layer the form's value
    (depth.gamma is checked against an independent mpmath recursion and torch nets with biases)."""
    rc, out, _ = run(capsys, "--activation", "tanh", "--depth", "5", "--sigma-w", "1.5", "--sigma-b", "0.3", "--json")
    assert rc == 0
    res = json.loads(out)
    g = igbsym.get("depth.gamma")
    assert res["sigma_b"] == 0.3 and len(res["layers"]) == 5
    assert "zero biases" not in res["source"] and "sigma_b" in res["source"]     # the source names the biases
    for row in res["layers"]:
        want = float(g.numpy(L=row["layer"], activation="tanh", sigma_w=1.5, sigma_b=0.3))
        assert row["gamma"] == pytest.approx(want, rel=1e-12) and want > 0
    rc, out, _ = run(capsys, "--activation", "tanh", "--depth", "2", "--sigma-b", "0.3")
    assert "sigma_b=0.3" in out.splitlines()[0]


def test_biases_at_finite_width_take_the_exact_chain_and_match_torch_nets(capsys):
    """--sigma-b with --width N: the 1/N series has no biases, so gamma_N is the exact chain's (the readout's bias
    included); per layer it agrees with Rao-Blackwellised torch MLPs with biases at the same width within 5 of the
    combined SEs (false-failure rate 5.7e-7 per layer, seeds fixed)."""
    import numpy as np
    import torch
    from igbsym.validation.estimators import gamma_of_sim, gamma_rao_blackwell
    from igbsym.validation.simulate import NetSpec, simulate
    rc, out, _ = run(capsys, "--depth", "2", "--sigma-b", "0.5", "--width", "32", "--rel-se", "0.02", "--json")
    assert rc == 0
    rows = json.loads(out)["finite_width"]["layers"]
    res = simulate(NetSpec(32, (32, 32), sigma_b=0.5), 1500, 128, seed=7, dtype=torch.float64, fresh_data=True)
    sims = [gamma_of_sim(res)]
    st = res.layers[0]["act"]          # layer 1 read out by the second Dense (its bias: sigma_b^2 in the numerator)
    sims.insert(0, gamma_rao_blackwell(st.mean, st.var.sum(1), 128, 2 / 32, np.full(1500, 0.25)))
    for row, sim in zip(rows, sims):
        assert row["route"] == "exact chain" and "no biases" in row["series"]
        assert abs(row["gamma_N"] - sim.value) <= 5 * math.hypot(row["chain_se"], sim.se), (row, sim)
