"""Train many initialisations of a model and record how their initial guessing bias shapes training (issue 49).

norm-placement-bn-ln.txt Fig. 2 (and igb-talk-slides, "Impact on dynamics") train a ReLU MLP from many random
inits, split the inits by their initial G0 into neutral and prejudiced ones and compare the global and per-class
training accuracy, with class 0 relabelled in each run as the init's initially dominant class. This module is the
trainer; validation/train_report.py groups the inits, estimates the effect sizes and draws the figures.

``train(model, data, n_inits, steps, *, labels=None, classes=None, init=None, lr=None, optimizer='sgd',
batch_size=None, seed=0, zero_bias=False, device=None, dtype=torch.float32, log_steps=None, path='auto',
store=None, progress=None) -> TrainResult``

- ``model``, ``init``, ``seed``, ``zero_bias``: exactly as ``igbsym.validation.probe.probe`` (its ``Inits``: init i
  is seeded by (seed, i) alone, so init i here IS init i of the probe); ``model`` may also be a string, a built-in
  name or ``module.path:factory`` (``igbsym.validation.models.resolve_model``). ``data``/``labels``/``classes`` as
  the probe's (``igbsym.validation.datasets.load``; ``classes`` C: labels mod C). Training needs labels: data
  without labels (the Gaussian blob) get balanced random labels, a permutation of (0, 1, ..., C−1, 0, ...) seeded
  by (seed, DATA, 'labels').
- Training: cross-entropy (mean over the batch), ``optimizer`` 'sgd' (p ← p − lr·g, no momentum) or 'adam'
  (Kingma & Ba 2015, Alg. 1 with torch.optim.Adam's defaults β = (0.9, 0.999), ε = 1e-8); ``lr`` defaults to
  DEFAULT_LR. Mini-batches of ``batch_size`` (default 256; ≥ D: full batch) without replacement: init i's epoch e
  is a permutation seeded by (seed, DATA, i, e), the last incomplete batch of an epoch dropped. The optimiser
  step is one function (:func:`optimizer_step`) on dicts of tensors, stacked or not.
- Paths: inits run in groups through ``torch.func.stack_module_state``-style stacked parameters with
  ``vmap(grad(functional_call ∘ cross-entropy))`` ('vmap'), or one at a time through the same gradient and step
  ('loop': requested, a model whose first vmapped step raises, or a Dropout-like module in training mode, whose
  masks are then seeded by (seed, DROPOUT, i, step)); ``TrainResult.path``/``path_note`` say which ran and why.
- Records at the logged steps (default :func:`default_log_steps`: 0, S and a geometric plus a linear grid of
  about 100 steps; step t = after t updates) on the whole training set, in the model's own mode: per init the
  global accuracy and mean loss, and per class (true label c) the accuracy (recall), the mean loss and the fraction
  of points predicted as c. Step 0 gives G_c (the fraction guessed as class c, the probe's ``frac``).
  ``TrainResult.relabel`` reorders the classes of each init by decreasing G_c at step 0 (ties: lower label first),
  so rank 0 is the init's dominant class (the paper's relabelling).
- ``store``: a SQLite file (validation/store.py, the sweep store): every finished group of inits is checkpointed
  as one chunk of per-init records; a re-run with the same configuration takes the finished groups from the store
  and trains only the others (init i depends on (seed, i) alone, and the groups are fixed by the configuration).
A diverged run (non-finite loss) raises ``NumericalError`` naming the init and the step.
"""
from __future__ import annotations

import contextlib
import copy
import hashlib
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

import igbsym
from igbsym.errors import InputError, NumericalError

from . import datasets
from .device import resolve_device
from .models import resolve_model
from .probe import Inits, dry_run, macro_classes
from .seeding import DATA, DROPOUT, derive_seed
from .store import Store, point_key

OPTIMIZERS = ("sgd", "adam")
DEFAULT_LR = {"sgd": 0.01, "adam": 1e-3}
ADAM_BETAS, ADAM_EPS = (0.9, 0.999), 1e-8
DEFAULT_BATCH = 256
PATHS = ("auto", "vmap", "loop")
QUANTITIES = ("acc", "loss")          # per logged step, then per class: acc_c, loss_c, frac_c
PER_CLASS = ("acc_c", "loss_c", "frac_c")
_ELEM_BUDGET = 1 << 24                # largest activation × batch × init group
_MAX_GROUP = 32                       # also the checkpoint granularity


@dataclass
class TrainResult:
    """What ``train`` recorded (module docstring); arrays are float64 NumPy, per-class ones in the original labels
    (use ``relabel`` for the dominant-class order). ``config`` identifies the run (and its store point)."""

    steps: np.ndarray          # [T] logged steps
    acc: np.ndarray            # [I, T]
    loss: np.ndarray           # [I, T]
    acc_c: np.ndarray          # [I, T, C]
    loss_c: np.ndarray         # [I, T, C]
    frac_c: np.ndarray         # [I, T, C]
    class_sizes: np.ndarray    # [C] training points per label
    path: str
    path_note: str
    config: dict
    seconds: float = 0.0
    computed: int = 0          # inits trained by this call
    reused: int = 0            # inits read from the store
    notes: list = field(default_factory=list)

    @property
    def n_inits(self) -> int:
        return self.acc.shape[0]

    @property
    def n_classes(self) -> int:
        return self.acc_c.shape[2]

    @property
    def g(self) -> np.ndarray:
        """G_c at initialisation [I, C] (original labels)."""
        return self.frac_c[:, 0, :]

    @property
    def prejudice(self) -> np.ndarray:
        """max_c G_c − 1/C at initialisation [I]; for two classes |G0 − ½|."""
        return self.g.max(1) - 1.0 / self.n_classes

    @property
    def order(self) -> np.ndarray:
        """[I, C]: order[i, r] = the label with the r-th largest G_c of init i (stable: ties keep label order)."""
        return np.argsort(-self.g, axis=1, kind="stable")

    def relabel(self, per_class: np.ndarray) -> np.ndarray:
        """A per-class array [I, T, C] reordered so that class r of init i is its r-th most guessed at step 0."""
        return np.take_along_axis(per_class, self.order[:, None, :], axis=2)


def default_log_steps(steps: int, n: int = 100) -> np.ndarray:
    """0, ``steps`` and about ``n`` steps between: half geometric from 1 (early dynamics), half linear."""
    geo = np.round(np.geomspace(1, max(steps, 1), n // 2)) if steps >= 1 else []
    lin = np.round(np.linspace(0, steps, n // 2 + 1))
    return np.unique(np.concatenate([[0, steps], geo, lin]).astype(np.int64))


def optimizer_step(name: str, params: dict, grads: dict, state: dict, lr: float) -> tuple:
    """One optimiser step on dicts of tensors (one init's or stacked [I, ...]): 'sgd' p − lr·g; 'adam' with
    t ← t+1, m ← β1 m + (1−β1) g, v ← β2 v + (1−β2) g², p ← p − (lr/(1−β1^t)) m / (√v/√(1−β2^t) + ε)
    (Kingma & Ba 2015 Alg. 1, in torch.optim.Adam's arrangement). Returns (new params, new state)."""
    if name == "sgd":
        return {k: p - lr * grads[k] for k, p in params.items()}, state
    b1, b2 = ADAM_BETAS
    t = state.get("t", 0) + 1
    m = {k: b1 * state["m"][k] + (1 - b1) * g for k, g in grads.items()} if "m" in state else \
        {k: (1 - b1) * g for k, g in grads.items()}
    v = {k: b2 * state["v"][k] + (1 - b2) * g * g for k, g in grads.items()} if "v" in state else \
        {k: (1 - b2) * g * g for k, g in grads.items()}
    step, root = lr / (1 - b1 ** t), math.sqrt(1 - b2 ** t)
    new = {k: p - step * m[k] / (v[k].sqrt() / root + ADAM_EPS) for k, p in params.items()}
    return new, {"t": t, "m": m, "v": v}


class _Objective:
    """The model as functions of (params, buffers): the training loss and the evaluation sums."""

    def __init__(self, base, n_classes: int):
        self.base, self.n_classes = base, n_classes

    def loss(self, params, buffers, x, y):
        return F.cross_entropy(functional_call(self.base, (params, buffers), (x,)), y)

    def sums(self, params, buffers, x, y):
        """Per true label: correct guesses, summed loss; per guessed label: counts (float64)."""
        out = functional_call(self.base, (params, buffers), (x,))
        classes = torch.arange(self.n_classes, device=out.device)
        nll = -out.double().log_softmax(-1).gather(-1, y[:, None])[:, 0]
        pred = out.argmax(-1)
        by_label = (y[:, None] == classes).double()
        return torch.stack([by_label.T @ (pred == y).double(), by_label.T @ nll,
                            (pred[:, None] == classes).double().sum(0)])


# --------------------------------------------------------------------------------------------- arguments
def _check_args(n_inits, steps, lr, optimizer, batch_size, seed, path):
    integer = lambda v: isinstance(v, (int, np.integer)) and not isinstance(v, bool)
    if not integer(n_inits) or n_inits < 1:
        raise InputError(f"train: inits {n_inits!r} is not allowed; allowed: an integer >= 1")
    if not integer(steps) or steps < 1:
        raise InputError(f"train: steps {steps!r} is not allowed; allowed: an integer >= 1")
    if optimizer not in OPTIMIZERS:
        raise InputError(f"train: unknown optimizer {optimizer!r}; allowed: {', '.join(OPTIMIZERS)}")
    if lr is not None and not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
        raise InputError(f"train: lr {lr!r} is not allowed; allowed: a finite number > 0")
    if batch_size is not None and (not integer(batch_size) or batch_size < 1):
        raise InputError(f"train: batch size {batch_size!r} is not allowed; allowed: an integer >= 1")
    if not integer(seed) or seed < 0:
        raise InputError(f"train: seed {seed!r} is not allowed; allowed: an integer >= 0")
    if path not in PATHS:
        raise InputError(f"train: unknown path {path!r}; allowed: {', '.join(PATHS)}")


def _labels(ds, classes, n_out, seed):
    """Training labels [D] in 0..C−1 and C (module docstring: random balanced labels for unlabelled data)."""
    if ds.labels is None:
        if classes is not None and not isinstance(classes, (int, np.integer)):
            raise InputError("train: classes maps labels to macro-classes but the data have no labels; "
                             "allowed: an integer C")
        c = int(classes or n_out or 2)
        gen = torch.Generator().manual_seed(derive_seed(seed, DATA, "labels"))
        return (torch.arange(ds.data.shape[0]) % c)[torch.randperm(ds.data.shape[0], generator=gen)], c
    return macro_classes(ds.labels, classes)


def _identity(model, init, ds, y) -> dict:
    """What names the model and the data in the store key (a string spec, else the class and repr)."""
    what = model if isinstance(model, str) else f"{type(model).__module__}.{type(model).__qualname__}:{model!r}"
    if init is not None:
        what += f"|init={getattr(init, '__module__', '')}.{getattr(init, '__qualname__', repr(init))}"
    digest = hashlib.sha256(ds.data.contiguous().numpy().tobytes() + y.numpy().tobytes()).hexdigest()
    return {"model": what, "data": f"{ds.name}:{digest[:16]}"}


def _log_steps(log_steps, steps):
    if log_steps is None:
        return default_log_steps(steps)
    s = np.unique(np.asarray(log_steps, dtype=np.int64))
    if s.size == 0 or s[0] < 0 or s[-1] > steps:
        raise InputError(f"train: log_steps out of range; allowed: integers in 0..{steps}")
    return s if s[0] == 0 else np.concatenate([[0], s])


def record_fields(steps: np.ndarray, n_classes: int) -> list:
    """The names of one init's record (the store's fields): per logged step t, 'acc@t', 'loss@t', then per
    class c 'acc_c<c>@t', 'loss_c<c>@t', 'frac_c<c>@t'."""
    per = list(QUANTITIES) + [f"{q}{c}" for q in PER_CLASS for c in range(n_classes)]
    return [f"{q}@{int(t)}" for t in steps for q in per]


# --------------------------------------------------------------------------------------------- training
class _Batches:
    """Init i's mini-batch indices at step t (module docstring): epoch permutations seeded by (seed, DATA, i, e)."""

    def __init__(self, n_data: int, batch: int, seed: int, idx):
        self.n, self.b, self.seed, self.idx = n_data, batch, seed, list(idx)
        self.per_epoch, self.epoch, self.perms = n_data // batch, -1, None

    def __call__(self, t: int) -> torch.Tensor:
        if self.b >= self.n:
            return torch.arange(self.n).expand(len(self.idx), -1)
        e, j = divmod(t, self.per_epoch)
        if e != self.epoch:
            gens = [torch.Generator().manual_seed(derive_seed(self.seed, DATA, i, e)) for i in self.idx]
            self.perms, self.epoch = torch.stack([torch.randperm(self.n, generator=g) for g in gens]), e
        return self.perms[:, j * self.b:(j + 1) * self.b]


class _Group:
    """One group of inits trained together: stacked parameters [G, ...], buffers, optimiser state."""

    def __init__(self, states, device, dtype):
        ps, bs = zip(*states)
        cast = lambda v: v.to(device, dtype) if v.is_floating_point() else v.to(device)
        self.params = {k: cast(torch.stack([p[k] for p in ps])) for k in ps[0]}
        self.buffers = {k: cast(torch.stack([b[k] for b in bs])) for k in bs[0]}
        self.state: dict = {}

    def one(self, j: int):
        return {k: v[j] for k, v in self.params.items()}, {k: v[j] for k, v in self.buffers.items()}


def _step(obj, grp, x, y, t, run):
    """One training step of the group (x [G, B, ...], y [G, B]) on the run's path."""
    if run.path == "vmap":
        g = vmap(grad(obj.loss))(grp.params, grp.buffers, x, y)
    else:
        per = []
        for j, i in enumerate(run.idx):
            p, b = grp.one(j)
            with _seeded(run, i, t):
                per.append(grad(obj.loss)(p, b, x[j], y[j]))
        g = {k: torch.stack([d[k] for d in per]) for k in per[0]}
    grp.params, grp.state = optimizer_step(run.optimizer, grp.params, g, grp.state, run.lr)


@contextlib.contextmanager
def _seeded(run, i, t):
    """Dropout masks of init i at step t (evaluations: t < 0) from (seed, DROPOUT, i, t); nothing otherwise."""
    if not run.stochastic:
        yield
        return
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(derive_seed(run.seed, DROPOUT, i, t))
        yield


def _choose_path(obj, inits, n_inits, run, data):
    """'vmap' unless requested otherwise or stochastic; with 'auto', a model whose vmapped step or evaluation
    raises on two inits runs on the loop path (the reason is kept)."""
    if run.path == "loop" or run.requested == "vmap":
        return
    x_all, y_all, batch, device, dtype, _, _ = data
    run.idx = list(range(min(2, n_inits)))
    grp = _Group([inits.state(i) for i in run.idx], device, dtype)
    b = torch.arange(min(batch, x_all.shape[0])).expand(len(run.idx), -1)
    try:
        _evaluate(obj, grp, x_all[:min(8, x_all.shape[0])], y_all[:8], 8, run, 0)
        _step(obj, grp, x_all[b], y_all[b], 0, run)
    except Exception as exc:
        if run.requested != "auto":
            raise
        run.path = "loop"
        run.note = f"vmap failed ({type(exc).__name__}: {str(exc).strip().splitlines()[0][:120]})"


def _evaluate(obj, grp, x_all, y_all, chunk, run, t) -> torch.Tensor:
    """[G, 3, C] sums over the training set (correct, loss, guesses) at step t; buffers are not changed."""
    total = None
    for a in range(0, x_all.shape[0], chunk):
        x, y = x_all[a:a + chunk], y_all[a:a + chunk]
        with torch.no_grad():
            if run.path == "vmap":
                bufs = {k: v.clone() for k, v in grp.buffers.items()}
                s = vmap(obj.sums, in_dims=(0, 0, None, None))(grp.params, bufs, x, y)
            else:
                outs = []
                for j, i in enumerate(run.idx):
                    p, b = grp.one(j)
                    with _seeded(run, i, -1 - t):
                        outs.append(obj.sums(p, {k: v.clone() for k, v in b.items()}, x, y))
                s = torch.stack(outs)
        total = s if total is None else total + s
    return total.cpu()


@dataclass
class _Run:
    requested: str
    path: str
    note: str
    optimizer: str
    lr: float
    seed: int
    stochastic: bool
    idx: list = field(default_factory=list)


def _train_group(obj, inits, idx, run, data, log, progress):
    """Train inits ``idx`` for log[-1] steps; returns their records [G, T, 2 + 3C] (float64)."""
    x_all, y_all, batch, device, dtype, chunk, sizes = data
    run.idx = list(idx)
    grp = _Group([inits.state(i) for i in idx], device, dtype)
    batches = _Batches(x_all.shape[0], batch, run.seed, idx)
    recs, k = [], 0
    for t in range(int(log[-1]) + 1):
        if t == log[k]:
            s = _evaluate(obj, grp, x_all, y_all, chunk, run, t)
            recs.append(_record(s, sizes, x_all.shape[0]))
            _check_finite(recs[-1], idx, t)
            k += 1
            if progress is not None:
                progress(len(idx), t)
        if t == log[-1]:
            break
        b = batches(t).to(device)
        _step(obj, grp, x_all[b], y_all[b], t, run)
    return torch.stack(recs, 1).numpy()


def _record(s, sizes, n_data):
    """[G, 2 + 3C]: acc, loss, acc_c, loss_c, frac_c from the evaluation sums."""
    correct, loss, guessed = s[:, 0], s[:, 1], s[:, 2]
    return torch.cat([correct.sum(1, keepdim=True) / n_data, loss.sum(1, keepdim=True) / n_data,
                      correct / sizes, loss / sizes, guessed / n_data], 1)


def _check_finite(rec, idx, t):
    bad = (~torch.isfinite(rec).all(1)).nonzero().ravel().tolist()
    if bad:
        raise NumericalError(f"train: init {list(idx)[bad[0]]} diverged (non-finite loss) at step {t}; "
                             "lower the learning rate")


# --------------------------------------------------------------------------------------------- train
def _setup(model, data, labels, classes, seed, batch_size, device, dtype):
    ds = datasets.load(data, labels, seed)
    n_out = int(classes) if isinstance(classes, (int, np.integer)) and not isinstance(classes, bool) else None
    y, n_classes = _labels(ds, classes, n_out or ds.n_classes, seed)
    if n_classes < 2:
        raise InputError(f"train: the labels have {n_classes} class; allowed: at least 2 classes")
    sizes = torch.bincount(y, minlength=n_classes).double()
    if not bool(sizes.gt(0).all()):
        raise InputError(f"train: class {int(sizes.eq(0).nonzero()[0])} has no training point; allowed: labels "
                         "with every class 0..C-1 present")
    spec = model
    if isinstance(model, str):
        model = resolve_model(model, ds.data.shape[1:], n_classes)
    return ds, y, n_classes, sizes, spec, model


def train(model, data, n_inits: int, steps: int, *, labels=None, classes=None, init=None, lr=None,
          optimizer: str = "sgd", batch_size: int | None = None, seed: int = 0, zero_bias: bool = False,
          device=None, dtype=torch.float32, log_steps=None, path: str = "auto", store=None,
          progress=None) -> TrainResult:
    """Train ``n_inits`` inits of ``model`` on ``data`` for ``steps`` steps and record them (module docstring).
    ``progress(fraction)`` is called as the work advances."""
    t0 = time.perf_counter()
    _check_args(n_inits, steps, lr, optimizer, batch_size, seed, path)
    lr = float(lr if lr is not None else DEFAULT_LR[optimizer])
    ds, y, n_classes, sizes, spec, model = _setup(model, data, labels, classes, seed, batch_size, device, dtype)
    log = _log_steps(log_steps, steps)
    n_data = ds.data.shape[0]
    batch = min(batch_size or DEFAULT_BATCH, n_data)
    device = resolve_device(device)
    inits = Inits(model, init, seed, zero_bias)
    base = copy.deepcopy(inits.module(0)).to(device, dtype)
    x_all, y_all = ds.data.to(device, dtype), y.to(device)
    n_out, _, _, outs, _ = dry_run(base, x_all[:min(batch, 8)])
    if n_out != n_classes:
        raise InputError(f"train: the model has {n_out} outputs but the labels have {n_classes} classes; "
                         "allowed: --classes equal to the outputs")
    per_point = max([o[0][0].numel() for o in outs.values() if isinstance(o[0], torch.Tensor)] + [x_all[0].numel()])
    group = max(1, min(_MAX_GROUP, n_inits, _ELEM_BUDGET // (batch * per_point)))
    chunk = max(1, min(n_data, _ELEM_BUDGET // (group * per_point)))
    stochastic = [n for n, m in base.named_modules() if m.training and isinstance(m, _dropouts()) and m.p > 0]
    run = _Run(path, "loop" if path == "loop" or stochastic else "vmap",
               "requested" if path == "loop" else (f"stochastic modules in training mode ({', '.join(stochastic)}): "
                                                   "per-init loop, masks seeded by (seed, DROPOUT, init, step)"
                                                   if stochastic else "torch.func.vmap over stacked inits"),
               optimizer, lr, seed, bool(stochastic))
    if stochastic and path == "vmap":
        raise InputError("train: stochastic modules in training mode cannot be vmapped reproducibly; allowed: "
                         "path='loop' or model.eval()")
    config = dict(kind="train", **_identity(spec, init, ds, y), n_classes=n_classes, steps=int(steps), lr=lr,
                  optimizer=optimizer, batch=batch, zero_bias=bool(zero_bias), dtype=str(dtype), path=path,
                  log=[int(t) for t in log], estimator="train", version=igbsym.__version__)
    fields = record_fields(log, n_classes)
    starts = list(range(0, n_inits, group))
    db, key, done = _open_store(store, config, seed, n_inits, group)
    work = (n_inits - sum(min(group, n_inits - starts[c]) for c in done)) * int(log[-1]) or 1
    finished = [0]

    def tick(n, t):
        if progress is not None:
            progress(min(1.0, (finished[0] + n * t) / work))

    records, computed = {}, 0
    obj = _Objective(base, n_classes)
    data_args = (x_all, y_all, batch, device, dtype, chunk, sizes.to(dtype=torch.float64))
    if len(done) < len(starts):
        _choose_path(obj, inits, n_inits, run, data_args)
    try:
        for c, a in enumerate(starts):
            idx = range(a, min(n_inits, a + group))
            if c in done:
                continue
            rec = _train_group(obj, inits, idx, run, data_args, log, tick)
            finished[0] += len(idx) * int(log[-1])
            records[c], computed = rec, computed + len(idx)
            if db is not None:
                db.put_chunks([(key, c, a, rec.reshape(len(idx), -1), fields)])
        if db is not None:
            got, flat, _ = db.units(key)
            if got != fields or flat.shape[0] != n_inits:
                raise InputError(f"train: store {db.path} holds {flat.shape[0]} of {n_inits} inits of this run "
                                 "with other fields; use a new --report folder")
            full = flat.reshape(n_inits, len(log), -1)
        else:
            full = np.concatenate([records[c] for c in range(len(starts))])
    finally:
        if db is not None:
            db.close()
    C = n_classes
    return TrainResult(log, full[..., 0], full[..., 1], full[..., 2:2 + C], full[..., 2 + C:2 + 2 * C],
                       full[..., 2 + 2 * C:], sizes.numpy(), run.path, run.note, config,
                       time.perf_counter() - t0, computed, n_inits - computed, list(inits.notes))


def _dropouts():
    from torch import nn
    return (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout, nn.FeatureAlphaDropout)


def _open_store(store, config, seed, n_inits, group):
    """(Store or None, point key, the set of finished chunk indices)."""
    if store is None:
        return None, None, set()
    Path(store).parent.mkdir(parents=True, exist_ok=True)     # after every input was checked
    db = Store(store)
    key = point_key(config, seed, n_inits, group)
    db.add_point(key, config, dict(model=config["model"], data=config["data"]), seed, n_inits, group)
    return db, key, db.state(key)[1]
