"""The probe (validation/probe.py): MLP = simulate per init, vmap path = loop path per init over random small
architectures, init i independent of grouping, estimator choice, datasets, bad input, CLI."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st
from torch import nn

from igbsym.errors import InputError
from igbsym.validation import datasets, probe as probe_mod
from igbsym.validation.models import NAMES, MLPFactory, build
from igbsym.validation.probe import probe
from igbsym.validation.simulate import NetSpec, simulate

torch.set_num_threads(1)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _blob(shape, n, seed=0):
    return torch.randn((n, *shape), generator=torch.Generator().manual_seed(seed))


def test_mlp_through_probe_equals_simulate():
    """Same spec, same seed: per-init μ_c, Var_χ(O_c), G_c and the last hidden layer's statistics agree."""
    x = datasets.load("digits").data[:300]
    spec = NetSpec(64, (32, 16), activation="relu")
    sim = simulate(spec, 6, data=x.flatten(1), seed=3, layer_stats=("act",))
    res = probe(MLPFactory(spec), x, 6, seed=3)
    assert torch.allclose(res.mu, sim.mu, rtol=1e-4, atol=1e-6)
    assert torch.allclose(res.var, sim.var, rtol=1e-4, atol=1e-6)
    assert torch.allclose(res.frac, sim.frac, atol=1.5 / 300)       # at most one argmax near-tie flip
    act = [l for l in res.layers if l.kind == "Activation"][-1]
    assert torch.allclose(act.mean, sim.layers[-1]["act"].mean, rtol=1e-4, atol=1e-6)
    assert res.estimator == "rao-blackwell" and res.path == "vmap"


@st.composite
def architectures(draw):
    """A small random image model: conv / norm / activation / pool blocks, then Linear (or a final ReLU)."""
    layers, c, size = [], 2, 6
    for _ in range(draw(st.integers(1, 3))):
        c_out = draw(st.sampled_from([2, 3, 4]))
        layers.append(nn.Conv2d(c, c_out, 3, padding=1, bias=draw(st.booleans())))
        norm = draw(st.sampled_from(["none", "batch", "group", "layer"]))
        if norm == "batch":
            layers.append(nn.BatchNorm2d(c_out))
        elif norm == "group":
            layers.append(nn.GroupNorm(1, c_out))
        elif norm == "layer":
            layers.append(nn.LayerNorm([c_out, size, size]))
        layers.append(draw(st.sampled_from([nn.ReLU(inplace=True), nn.Tanh(), nn.GELU(), nn.Identity()])))
        if size >= 2 and draw(st.booleans()):
            layers.append(draw(st.sampled_from([nn.MaxPool2d(2), nn.AvgPool2d(2)])))
            size //= 2
        c = c_out
    layers += [nn.Flatten(), nn.Linear(c * size * size, draw(st.integers(2, 4)))]
    if draw(st.integers(0, 4)) == 0:
        layers.append(nn.ReLU())
    return nn.Sequential(*layers)


@given(architectures(), st.integers(0, 2**31 - 1))
def test_vmap_path_equals_loop_path(model, seed):
    x = _blob((2, 6, 6), 24, seed)
    try:
        a = probe(model, x, 3, seed=seed, batch_size=8, path="vmap")
    except InputError as err:   # a degenerate draw (e.g. a dead final ReLU): both paths must refuse it alike
        with pytest.raises(InputError) as loop_err:
            probe(model, x, 3, seed=seed, batch_size=8, path="loop")
        assert str(loop_err.value) == str(err)
        return
    b = probe(model, x, 3, seed=seed, batch_size=8, path="loop")
    assert a.path == "vmap" and b.path == "loop"
    for u, v in ((a.mu, b.mu), (a.var, b.var)):
        assert torch.allclose(u, v, rtol=1e-4, atol=1e-5)
    assert torch.allclose(a.frac, b.frac, atol=1.5 / 24)
    for la, lb in zip(a.layers, b.layers):
        assert la.name == lb.name and torch.allclose(la.mean, lb.mean, rtol=1e-4, atol=1e-5)


def test_init_i_independent_of_grouping(monkeypatch):
    model = build("cnn-a-relu-maxpool", (1, 8, 8), 2)
    x = _blob((1, 8, 8), 40)
    whole = probe(model, x, 5, seed=7, layers=False)
    monkeypatch.setattr(probe_mod, "_MAX_GROUP", 2)
    split = probe(model, x, 5, seed=7, layers=False)
    head = probe(model, x, 3, seed=7, layers=False)
    assert torch.allclose(whole.mu, split.mu, rtol=1e-5, atol=1e-7)
    assert torch.allclose(whole.mu[:3], head.mu, rtol=1e-5, atol=1e-7)
    assert not torch.allclose(whole.mu[0], whole.mu[1])


def test_estimator_choice_and_zero_bias():
    x = _blob((6,), 50)
    lin = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2))
    r = probe(lin, x, 8)
    assert r.estimator == "rao-blackwell" and "bias kept" in r.estimator_note and r.gamma_rb is not None
    r0 = probe(lin, x, 8, zero_bias=True)
    assert "bias kept" not in r0.estimator_note
    relu_last = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2), nn.ReLU())
    rp = probe(relu_last, x, 8)
    assert rp.estimator == "plain" and rp.gamma_rb is None and "centred" in rp.estimator_note
    with pytest.raises(InputError, match="Rao"):
        probe(relu_last, x, 8, estimator="rao-blackwell")
    assert probe(lin, x, 8, estimator="plain").gamma is not None


def test_dropout_uses_the_seeded_loop_reproducibly():
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 2))
    x = _blob((6,), 40)
    a, b = probe(model, x, 3, seed=1), probe(model, x, 3, seed=1)
    assert a.path == "loop" and "stochastic" in a.path_note and torch.equal(a.mu, b.mu)


def test_macro_classes_and_label_table():
    ds = datasets.load("digits")
    r = probe(build("mlp", (1, 8, 8), 2), datasets.Dataset("d", ds.data[:200], ds.labels[:200], 10), 3, classes=2,
              layers=False)
    ones = torch.ones(3, 2, dtype=r.label_frac.dtype)
    assert r.label_frac.shape == (3, 2, 2) and torch.allclose(r.label_frac.sum(-1), ones)


def test_datasets(tmp_path):
    d = datasets.load("digits")
    assert d.data.shape == (1797, 1, 8, 8) and abs(float(d.data.mean())) < 1e-5 and abs(float(d.data.std()) - 1) < 1e-5
    p = datasets.load("digits-parity")
    assert torch.equal(p.labels, d.labels % 2) and p.n_classes == 2
    assert datasets.load("gaussian:3x4:10").data.shape == (10, 3, 4)
    np.save(tmp_path / "x.npy", np.ones((5, 3)))
    torch.save({"data": torch.zeros(4, 2), "labels": torch.tensor([0, 1, 1, 0])}, tmp_path / "x.pt")
    assert datasets.load(str(tmp_path / "x.npy")).data.shape == (5, 3)
    assert datasets.load(str(tmp_path / "x.pt")).n_classes == 2
    for bad, msg in (("cifar", "unknown dataset"), ("gaussian:3xq", "bad gaussian"),
                     (str(tmp_path / "no.npy"), "does not exist"),
                     (torch.tensor([[1.0, float("nan")]] * 3), "NaN"), (torch.zeros(1, 3), "D >= 2")):
        with pytest.raises(InputError, match=msg):
            datasets.load(bad)


def test_every_builtin_model_runs_on_digits():
    x = datasets.load("digits").data[:16]
    for name in NAMES:
        r = probe(build(name, (1, 8, 8), 2), x, 2, batch_size=16, layers=False)
        assert r.frac.shape == (2, 2) and np.isfinite(r.gamma.value), name


def test_bad_input_one_line():
    x = _blob((6,), 20)
    ok = nn.Sequential(nn.Linear(6, 2))
    cases = [(lambda: probe(ok, x, 1), "n_inits"), (lambda: probe(nn.Linear(6, 1), x, 3), "at least 2 outputs"),
             (lambda: probe(nn.Sequential(nn.Flatten(), nn.Linear(7, 2)), x, 3), r"shape \(20, 6\).*'1' \(Linear\)"),
             (lambda: probe(ok, "nope", 3), "unknown dataset"), (lambda: probe(42, x, 3), "nn.Module or a factory"),
             (lambda: build("lenet", (1, 8, 8), 2), "unknown model")]
    for fn, msg in cases:
        with pytest.raises(InputError, match=msg) as exc:
            fn()
        assert "\n" not in str(exc.value)


def _cli(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "igbsym", "probe", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300)


def test_cli_json_report_and_bad_input(tmp_path, capsys):
    out = _cli("--model", "mlp", "--data", "gaussian:1x8x8:64", "--inits", "4", "--json", "--report",
               str(tmp_path / "rep"))
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["n_inits"] == 4 and info["estimator"] == "rao-blackwell"
    assert {p.name for p in (tmp_path / "rep").iterdir()} >= {"probe.json", "probe.png", "report.md"}
    from igbsym.cli import main
    (tmp_path / "userfac.py").write_text("from torch import nn\n"
                                         "def make(seed):\n    return nn.Sequential(nn.Flatten(), nn.Linear(12, 3))\n")
    sys.path.insert(0, str(tmp_path))
    try:
        capsys.readouterr()
        assert main(["probe", "--model", "userfac:make", "--data", "gaussian:12:40", "--inits", "3", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["n_classes"] == 3
    finally:
        sys.path.remove(str(tmp_path))
    for args, msg in ((["--model", "nomodule.x:f", "--data", "digits"], "cannot import"),
                      (["--model", "mlp", "--data", "digits", "--inits", "1"], "n_inits"),
                      (["--model", "vit", "--data", "gaussian:12"], "image data"),
                      (["--model", "mlp", "--data", "mnist"], "unknown dataset")):
        capsys.readouterr()
        assert main(["probe", *args, "--report", str(tmp_path / "bad")]) == 2
        err = capsys.readouterr().err
        assert msg in err and len(err.strip().splitlines()) == 1, err
        assert not (tmp_path / "bad").exists()


def test_quick_check_probe_equals_simulate_passes():
    from igbsym.validation.checks import Context
    from igbsym.validation.checks_probe import check_equals_simulate
    results = check_equals_simulate(Context(mode="quick", seed=0))
    assert results and all(r.passed for r in results), [r.explain() for r in results]


class _ItemGate(nn.Module):
    """Data-dependent Python control flow (``.item()``): vmap cannot run it, the loop can."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 2)

    def forward(self, x):
        y = self.lin(x)
        return y if y.sum().item() > -1e30 else -y


def test_vmap_failure_falls_back_to_the_loop_and_says_why():
    x = _blob((6,), 30)
    r = probe(_ItemGate(), x, 3)
    assert r.path == "loop" and "vmap failed" in r.path_note
    ref = probe(_ItemGate(), x, 3, path="loop")
    assert torch.equal(r.mu, ref.mu)


def test_user_init_callable_seeded_per_init():
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 2))
    init = lambda m: [nn.init.normal_(p, std=0.5) for p in m.parameters()]
    x = _blob((6,), 30)
    a, b = probe(model, x, 3, init=init, seed=2), probe(model, x, 3, init=init, seed=2)
    assert torch.equal(a.mu, b.mu) and not torch.allclose(a.mu[0], a.mu[1])
    with pytest.raises(InputError, match="not both"):
        probe(lambda s: model, x, 3, init=init)


def test_probe_finite_width_prediction_for_builtin_mlps():
    """The probe's MLPs on the Gaussian blob get the finite-width prediction next to γ̂ (issue 28): ReLU + LayerNorm
    after φ (γ_∞ = 0 exactly, Thm F.3) at d = N = 512 measures γ̂ ≈ 1e-3, > 5 SE away from 0 and within 5 SE + the
    stated O(1/N²) allowance of γ_∞ + δ (igbsym.families.width.uneven; false-failure rate 5.7e-7); another dataset
    or a model without a finite-width map gets none."""
    import math as m
    from igbsym.families import width as W
    from igbsym.validation.models import resolve_model
    from igbsym.validation.translate import compare_finite_width, finite_width_text
    torch.set_num_threads(1)
    ds = datasets.load("gaussian:512:1024", seed=3)
    res = probe(resolve_model("mlp-layernorm", ds.data.shape[1:], 2), ds, 48, seed=3)
    cmp = compare_finite_width("mlp-layernorm", ds, res)
    g, corr = W.uneven("relu", "layernorm", 0.01, m.sqrt(2), 512, [512, 512])[-1]
    assert cmp["gamma_inf"] == 0 and cmp["gamma_N"] == pytest.approx(g + corr, rel=1e-14) and cmp["holds"]
    assert abs(res.gamma.value - cmp["gamma_N"]) <= 5 * res.gamma.se + cmp["remainder"], cmp
    assert abs(res.gamma.value) > 5 * res.gamma.se and cmp["passes"]
    assert "finite width" in finite_width_text(cmp)
    assert compare_finite_width("mlp-maxpool", ds, res) is None
    assert compare_finite_width("mlp-layernorm", datasets.load("digits"), res) is None
