"""The trainer (validation/train.py) and its report (validation/train_report.py): the batched trainer against a
per-init torch.optim loop step for step, init i = the probe's init i, a linear model on separable data, the
dominant-class relabelling, the statistics on constructed inputs, CLI bad input, resume from the store."""
import json
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from igbsym.cli import main
from igbsym.errors import InputError
from igbsym.validation import datasets, train as train_mod, train_report
from igbsym.validation.probe import probe
from igbsym.validation.seeding import DATA, WEIGHTS, derive_seed
from igbsym.validation.train import train

torch.set_num_threads(1)


def small_mlp(seed):
    """A user factory seed -> module (biases kept, so every parameter kind is trained)."""
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 12), nn.Tanh(), nn.Linear(12, 2))


def _digits(n=90):
    ds = datasets.load("digits-parity")
    return ds.data[:n], ds.labels[:n]


def _reference(factory, x, y, n_inits, steps, seed, batch, optimizer, lr):
    """Per init: an nn.Module seeded as the probe documents, torch.optim, the documented batch order
    (epoch e of init i: randperm seeded by (seed, DATA, i, e), last incomplete batch dropped); float64.
    Returns loss [I, T] and accuracy [I, T] on the whole set before each step, and at the end."""
    loss, acc = np.zeros((n_inits, steps + 1)), np.zeros((n_inits, steps + 1))
    x, n = x.double(), x.shape[0]
    for i in range(n_inits):
        torch.manual_seed(derive_seed(seed, WEIGHTS, i))
        model = factory(derive_seed(seed, WEIGHTS, i)).double()
        opt = (torch.optim.SGD if optimizer == "sgd" else torch.optim.Adam)(model.parameters(), lr=lr)
        per_epoch = n // batch
        for t in range(steps + 1):
            with torch.no_grad():
                out = model(x)
                loss[i, t] = F.cross_entropy(out, y).item()
                acc[i, t] = (out.argmax(1) == y).double().mean().item()
            if t == steps:
                break
            e, j = divmod(t, per_epoch)
            perm = torch.randperm(n, generator=torch.Generator().manual_seed(derive_seed(seed, DATA, i, e)))
            b = perm[j * batch:(j + 1) * batch]
            opt.zero_grad()
            F.cross_entropy(model(x[b]), y[b]).backward()
            opt.step()
    return loss, acc


@pytest.mark.parametrize("optimizer,lr", [("sgd", 0.2), ("adam", 0.01)])
@pytest.mark.parametrize("path", ["vmap", "loop"])
def test_trainer_equals_torch_optim_loop_step_for_step(optimizer, lr, path):
    """float64: the loss at every step agrees to 1e-9 relative (bound 1e-6 stated in the issue; observed 4e-16),
    the accuracy exactly; 4 inits × 12 steps of batch 40 on 90 points (2 batches/epoch: 6 epochs reshuffled)."""
    x, y = _digits()
    steps, seed = 12, 5
    res = train(small_mlp, x, 4, steps, labels=y, lr=lr, optimizer=optimizer, batch_size=40, seed=seed,
                dtype=torch.float64, log_steps=range(steps + 1), path=path)
    ref_loss, ref_acc = _reference(small_mlp, x, y, 4, steps, seed, 40, optimizer, lr)
    assert res.path == path
    np.testing.assert_allclose(res.loss, ref_loss, rtol=1e-9, atol=0)
    np.testing.assert_array_equal(res.acc, ref_acc)
    assert ref_loss[:, -1].mean() < 0.8 * ref_loss[:, 0].mean()      # it did train


def test_step_zero_is_the_probes_init():
    """G_c at step 0 = the probe's class fractions for the same seed (init i seeded by (seed, i) alone)."""
    x, y = _digits(400)
    res = train("mlp", x, 3, 1, labels=y, seed=7, log_steps=[0, 1])
    ref = probe(train_mod.resolve_model("mlp", x.shape[1:], 2), x, 3, seed=7, layers=False)
    np.testing.assert_allclose(res.g, ref.frac.numpy(), atol=1.5 / 400)   # at most one argmax near-tie flip


def test_linear_model_on_separable_data_reaches_full_accuracy():
    """Logistic regression by full-batch gradient descent on linearly separable data drives the loss to 0 and
    separates every point (Soudry et al. 2018); the classes are split by x_1 = 0 with margin ≥ 1."""
    g = torch.Generator().manual_seed(0)
    y = torch.arange(200) % 2
    x = torch.randn(200, 5, generator=g)
    x[:, 0] = (2 * y - 1) * (1 + torch.randn(200, generator=g).abs())
    res = train(nn.Linear(5, 2), x, 6, 150, labels=y, lr=0.5, batch_size=200)
    assert (res.acc[:, -1] == 1).all() and (res.acc_c[:, -1] == 1).all()
    assert (res.loss[:, -1] < 0.1 * res.loss[:, 0]).all()


def biased_linear(seed, i):
    """Init i guesses class (i + 1) mod 2 for every point at step 0 (zero weights, bias 5 on that class)."""
    m = nn.Linear(3, 2)
    with torch.no_grad():
        m.weight.zero_()
        m.bias.copy_(torch.tensor([0.0, 5.0]) if i % 2 == 0 else torch.tensor([5.0, 0.0]))
    return m


def test_relabelling_puts_the_dominant_class_first():
    x, y = torch.randn(40, 3, generator=torch.Generator().manual_seed(1)), torch.arange(40) % 2
    res = train(biased_linear, x, 4, 2, labels=y, lr=1e-3, batch_size=40)
    np.testing.assert_array_equal(res.g, [[0, 1], [1, 0], [0, 1], [1, 0]])
    np.testing.assert_array_equal(res.order, [[1, 0], [0, 1], [1, 0], [0, 1]])
    rel = res.relabel(res.acc_c)
    np.testing.assert_array_equal(rel[:, 0], [[1, 0]] * 4)           # dominant class: all right; the other: none
    np.testing.assert_array_equal(res.acc_c[:, 0], [[0, 1], [1, 0], [0, 1], [1, 0]])
    np.testing.assert_array_equal(res.prejudice, [0.5] * 4)


def test_statistics_on_constructed_inputs():
    steps = np.array([0, 1, 2, 5, 10])
    curves = np.array([[0.1, 0.5, 0.9, 1.0, 1.0], [0.1, 0.2, 0.3, 0.4, 0.5], [0.95, 0.1, 0.2, 0.9, 0.9]])
    t, c = train_report.first_passage(curves, steps, 0.9)
    np.testing.assert_array_equal(t, [2, 10, 0])
    np.testing.assert_array_equal(c, [False, True, False])
    t, c = train_report.settling(curves, steps, 0.9)
    np.testing.assert_array_equal(t, [2, 10, 5])                    # init 2: reached at 0, settled from step 5
    np.testing.assert_array_equal(c, [False, True, False])
    d = train_report.difference([1.0, 3.0], [0.0, 0.0, 3.0])
    assert d["value"] == pytest.approx(1.0) and d["se"] == pytest.approx(np.sqrt(2 / 2 + 3 / 3))
    r = train_report.spearman([1, 2, 3, 4, 5, 6], [2, 1, 4, 3, 6, 5])
    assert r["rho"] == pytest.approx(1 - 6 * 6 / (6 * 35))           # Σd² = 6: ρ = 1 − 6Σd²/(n(n²−1))
    assert train_report.spearman([1, 2, 3, 4], [5, 5, 5, 5])["rho"] is None


@pytest.mark.parametrize("argv,needle", [
    (["--model", "nope", "--data", "digits-parity", "--inits", "4", "--steps", "2"], "unknown model"),
    (["--model", "mlp", "--data", "digits-parity", "--inits", "4", "--steps", "0"], "steps"),
    (["--model", "mlp", "--data", "digits-parity", "--inits", "4", "--steps", "2", "--lr", "-1"], "lr"),
    (["--model", "mlp", "--data", "digits-parity", "--inits", "2", "--steps", "2"], "inits"),
    (["--model", "mlp", "--data", "digits-parity", "--inits", "4", "--steps", "2", "--optimizer", "rmsprop"],
     "optimizer"),
    (["--model", "mlp", "--data", "nothere.npy", "--inits", "4", "--steps", "2"], "does not exist"),
])
def test_cli_bad_input_is_one_line_exit_2(argv, needle, capsys, tmp_path):
    try:
        rc = main(["train", *argv, "--report", str(tmp_path / "r")])
    except SystemExit as exc:                                        # argparse's own errors
        rc = exc.code
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and needle in err and "Traceback" not in err
    assert re.search(r"allowed|choose from|built-in models are|does not exist", err)   # says what is allowed
    assert not (tmp_path / "r").exists()


def test_cli_writes_the_report(capsys, tmp_path):
    rc = main(["train", "--model", "mlp", "--data", "digits-parity", "--inits", "3", "--steps", "3",
               "--report", str(tmp_path), "--json"])
    info = json.loads(capsys.readouterr().out)
    assert rc == 0 and info["n_inits"] == 3 and info["path"] == "vmap"
    for name in ("train.json", "inits.csv", "curves.csv", "train_curves.png", "train_scatter.png", "train.db"):
        assert (tmp_path / name).stat().st_size > 0
    assert set(info["groups"]) == {"all", "neutral", "prejudiced"} and info["groups"]["neutral"]["n"] == 1


def test_a_killed_run_resumes_without_recomputing_finished_inits(monkeypatch, tmp_path):
    """Groups of 2 inits; the first run dies in its third group; the re-run trains only that group and equals
    a run without the store."""
    monkeypatch.setattr(train_mod, "_MAX_GROUP", 2)
    x, y = _digits()
    kw = dict(labels=y, batch_size=30, seed=3, log_steps=[0, 2, 4])
    real, calls = train_mod._train_group, []

    def dying(obj, inits, idx, *rest):
        calls.append(list(idx))
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(obj, inits, idx, *rest)

    monkeypatch.setattr(train_mod, "_train_group", dying)
    with pytest.raises(KeyboardInterrupt):
        train(small_mlp, x, 6, 4, store=tmp_path / "t.db", **kw)
    monkeypatch.setattr(train_mod, "_train_group", real)
    res = train(small_mlp, x, 6, 4, store=tmp_path / "t.db", **kw)
    assert (res.computed, res.reused) == (2, 4)
    fresh = train(small_mlp, x, 6, 4, **kw)
    np.testing.assert_array_equal(res.acc_c, fresh.acc_c)
    np.testing.assert_array_equal(res.loss, fresh.loss)
    again = train(small_mlp, x, 6, 4, store=tmp_path / "t.db", **kw)
    assert (again.computed, again.reused) == (0, 6)


def test_bad_api_input():
    x, y = _digits()
    with pytest.raises(InputError, match="outputs"):
        train(small_mlp, x, 2, 1, labels=y % 1 + torch.arange(90) % 3)
    with pytest.raises(InputError, match="log_steps"):
        train(small_mlp, x, 2, 3, labels=y, log_steps=[0, 7])


def test_gap_is_the_step_mean_of_the_class_difference():
    """Constructed result: dominant-class accuracy 1 − t/10 and other-class t/10 on steps 0, 5, 10 (linear, so
    the trapezoid is exact): gap = mean over [0, 10] of 1 − 2t/10 = 0."""
    steps = np.array([0, 5, 10])
    acc_c = np.stack([1 - steps / 10, steps / 10], 1)[None].repeat(3, 0)    # label 0 dominant (G0 = 1)
    frac = np.zeros((3, 3, 2))
    frac[:, 0] = [1, 0]
    acc_c[1] = acc_c[1][:, ::-1]                                             # init 1: label 1 dominant
    frac[1, 0] = [0, 1]
    res = train_mod.TrainResult(steps, acc_c.mean(2), acc_c.mean(2), acc_c, acc_c, frac, np.ones(2), "vmap", "",
                                {})
    np.testing.assert_allclose(train_report.gap(res), [0, 0, 0], atol=1e-15)
    res.acc_c[2] = np.stack([np.ones(3), np.zeros(3)], 1)
    assert train_report.gap(res)[2] == pytest.approx(1.0)
