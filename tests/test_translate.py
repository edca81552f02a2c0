"""Issue 45: the theory of the network torch runs — its forward graph (torch.fx) and its own init.

Each idiom against an independent route: a spec-built twin of igbsym ops walked over the same data (the kernel
walk is deterministic: equal to 1e-12), and the known variance of torch's init functions (kaiming_normal_: 2/fan_in)
within 5 of the stated relative SE (a 6e-7 false-failure rate; the seed is fixed).
"""
import json
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from igbsym import InputError
from igbsym import ops as O
from igbsym.nngp import theory
from igbsym.validation.translate import translate

DATA = np.random.default_rng(0).standard_normal((24, 1, 6, 6))
FLAT = DATA.reshape(24, -1)


def gamma_of(ops, data):
    return theory(tuple(ops), data, with_law=False).gamma


def he_mlp(seed):
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Linear(36, 64), nn.GELU(), nn.Linear(64, 2))
    for m in net:
        if isinstance(m, nn.Linear):
            nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
            nn.init.zeros_(m.bias)
    return net


def test_a_factory_that_initialises_stock_layers_gets_its_own_weight_law():
    ops, names, notes = translate(he_mlp, (36,))
    dense = [op for op in ops if isinstance(op, O.Dense)]
    assert len(dense) == 2 and all(op.sigma_b == 0 for op in dense)
    for op, note in zip(dense, [n for n in notes if "sigma_w^2" in n]):
        rel = float(note.split("relative SE ")[1].split(")")[0])
        assert abs(float(op.sigma_w) ** 2 / 2.0 - 1) <= 5 * rel, (op.sigma_w, note)     # kaiming_normal_: 2/fan_in
    twin = (O.Dense(64, dense[0].sigma_w), O.Act("gelu"), O.Dense(2, dense[1].sigma_w))
    assert gamma_of(ops, FLAT) == pytest.approx(gamma_of(twin, FLAT), rel=1e-12)
    stock = (O.Dense(64, 3 ** -0.5, (3 * 36) ** -0.5), O.Act("gelu"), O.Dense(2, 3 ** -0.5, (3 * 64) ** -0.5))
    assert abs(gamma_of(ops, FLAT) / gamma_of(stock, FLAT) - 1) > 0.01     # the old translation's network differs


def shared_cnn(seed):
    torch.manual_seed(seed)
    act = nn.ReLU()
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), act, nn.Conv2d(8, 8, 3, padding=1), act,
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 2))


def test_an_activation_instance_used_twice_is_two_ops():
    ops, names, _ = translate(shared_cnn(0), (1, 6, 6))     # an instance: the probe resets it (torch's stock law)
    assert sum(isinstance(op, O.Act) for op in ops) == 2, names
    w, c1, c2 = 3 ** -0.5, (3 * 9) ** -0.5, (3 * 72) ** -0.5
    twin = (O.Conv2d(8, 3, 1, 1, w, c1), O.Act("relu"), O.Conv2d(8, 3, 1, 1, w, c2), O.Act("relu"),
            O.GlobalAvgPool(), O.Flatten(), O.Dense(2, w, (3 * 8) ** -0.5))
    assert gamma_of(ops, DATA) == pytest.approx(gamma_of(twin, DATA), rel=1e-12)


class Erf(nn.Module):
    def forward(self, x):
        return torch.erf(x)


class Block(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, n, bias=False)

    def forward(self, x):
        return x + 0.5 * self.fc(F.relu(x))


class Mixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.block, self.act, self.out = nn.Linear(36, 32, bias=False), Block(32), Erf(), nn.Linear(32, 2)

    def forward(self, x):
        h = self.fc1(x.flatten(1))
        return self.out(self.act(self.block(h)) * 2.0)


def test_custom_modules_functional_calls_and_a_residual_block_are_their_ops():
    ops, names, _ = translate(Mixed(), (1, 6, 6))
    w = 3 ** -0.5
    twin = (O.Flatten(), O.Dense(32, w), O.Residual(0.5, (O.Act("relu"), O.Dense(32, w))), O.Act("erf"),
            O.Scale(2.0), O.Dense(2, w, (3 * 32) ** -0.5))
    assert [type(op) for op in ops] == [type(op) for op in twin], names
    assert gamma_of(ops, DATA) == pytest.approx(gamma_of(twin, DATA), rel=1e-12)
    assert any("residual" in n and "Dense" in n for n in names)        # the listing shows what was predicted


@pytest.mark.parametrize("pool,twin", [(nn.MaxPool2d(2), O.MaxPool2d(2, 2, 0)),
                                       (nn.MaxPool2d(3, stride=2, padding=1), O.MaxPool2d(3, 2, 1))])
def test_a_max_pool_is_the_maxpool2d_op_with_its_window_stride_and_padding(pool, twin):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), pool, nn.Flatten(), nn.Linear(4 * 9, 2))
    ops, names, _ = translate(net, (1, 6, 6))
    w = 3 ** -0.5
    spec = (O.Conv2d(4, 3, 1, 1, w, 9 ** -0.5 * w), O.Act("relu"), twin, O.Flatten(), O.Dense(2, w, 36 ** -0.5 * w))
    assert [type(op) for op in ops] == [type(op) for op in spec], names
    assert gamma_of(ops, DATA) == pytest.approx(gamma_of(spec, DATA), rel=1e-12)
    with pytest.raises(InputError, match="ceil_mode") as err:
        translate(nn.Sequential(nn.MaxPool2d(2, ceil_mode=True), nn.Flatten(), nn.Linear(9, 2)), (1, 6, 6))
    assert "\n" not in str(err.value)


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(36, 8), nn.Linear(36, 8)

    def forward(self, x):
        return self.a(x) + self.b(x)


class Control(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(36, 2)

    def forward(self, x):
        return self.fc(x) if x.sum() > 0 else -self.fc(x)


@pytest.mark.parametrize("model,words", [(Branchy(), "neither of which is the skip"), (Control(), "torch.fx"),
                                         (nn.Sequential(nn.Linear(36, 4), nn.Dropout(), nn.Linear(4, 2)),
                                          "Dropout"),
                                         (nn.Sequential(nn.Linear(36, 8), nn.Unflatten(1, (2, 4)),
                                                        nn.TransformerEncoderLayer(4, 2, 8, batch_first=True),
                                                        nn.Flatten(), nn.Linear(8, 2)), "Hron et al. 2020")])
def test_what_has_no_map_is_refused_in_one_line_naming_the_node(model, words):
    with pytest.raises(InputError) as err:
        translate(model, (36,))
    assert words in str(err.value) and "\n" not in str(err.value)


def test_cli_predict_a_factory_lists_the_translated_ops(tmp_path):
    (tmp_path / "usernet.py").write_text(
        "import torch\nfrom torch import nn\n\ndef make(seed):\n    torch.manual_seed(seed)\n"
        "    net = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 2))\n"
        "    for m in net:\n        if isinstance(m, nn.Linear):\n            nn.init.normal_(m.weight, std=0.25)\n"
        "    return net\n")
    run = [sys.executable, "-m", "igbsym", "predict", "--model", "usernet:make", "--data", "digits-parity", "--json"]
    env = {"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}
    res = subprocess.run(run, capture_output=True, text=True, cwd=tmp_path, env=env)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert any("sigma_w=2" in layer["name"] for layer in out["layers"]), out["layers"]   # 0.25^2 * 64 = 4
    (tmp_path / "bad.npy").write_text("not an array")
    res = subprocess.run(run[:6] + [str(tmp_path / "bad.npy")], capture_output=True, text=True, cwd=tmp_path,
                         env=env)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "Traceback" not in res.stderr


def test_a_qmc_model_samples_pairs_by_default(monkeypatch):
    """predict on a MaxPool2d model over more than DEFAULT_PAIRS pairs samples them (a note says so) instead of
    walking all D² QMC entries; below that it walks them all (the full kernel and the law of G)."""
    from validation import translate as T
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32, 2))
    x = torch.randn(12, 1, 8, 8)
    res, _ = T.predict_on_data(m, x, classes=2, n_draws=200)
    assert res.kernel is not None and res.gamma_se == 0
    monkeypatch.setattr(T, "DEFAULT_PAIRS", 40)
    res, _ = T.predict_on_data(m, x, classes=2, n_draws=200)
    assert res.kernel is None and res.gamma_se > 0
    assert any("40 sampled pairs by default" in n for n in res.notes)


def test_the_built_in_vit_is_refused_with_the_reason_not_a_trace_error():
    """Regression: the ViT failed on its patch reshape, a message that hid why attention has no kernel map."""
    from igbsym.validation.models import build
    with pytest.raises(InputError, match="no Gaussian width limit") as err:
        translate(build("vit", (1, 8, 8), 2), (1, 8, 8))
    assert "blocks.0" in str(err.value)
