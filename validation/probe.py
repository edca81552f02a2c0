"""Probe any torch model at initialisation: its initial guessing bias (IGB) on given data.

igb-initial-guessing-bias.txt App. I (Secs. I.1–I.4) measures IGB in CNNs, a ResNet and a ViT on real data; this
module measures it for any ``nn.Module``:

``probe(model, data, n_inits, *, labels=None, classes=None, init=None, seed=0, device=None, batch_size=None,
layers=True, progress=None, zero_bias=False, estimator='auto', path='auto', rel_se=None, max_inits=None)
-> ProbeResult``

- ``model``: an ``nn.Module`` re-initialised for init i by calling ``reset_parameters()`` (or the private
  ``_reset_parameters()`` of e.g. ``nn.MultiheadAttention``) of every submodule, in ``modules()`` order, with the
  global torch RNG seeded by (seed, i) — or by ``init(module)`` if given (same seeding); or a factory: ``f(s)``
  gets the per-init seed s = (seed, i) hashed (the global RNG is seeded with it too) and ``f(seed, i)`` gets both
  (``igbsym.validation.models.MLPFactory`` uses this to reproduce ``igbsym.validation.simulate``'s init i exactly).
  Models are built on the CPU, then moved to ``device``, so init i has the same weights however the work is split
  or where it runs. ``zero_bias=True`` sets every parameter whose name ends in ``bias`` to 0 (the paper's setting).
- ``data``: tensor / ndarray [D, ...], a ``.npy``/``.pt`` path or a name of ``igbsym.validation.datasets``. ``labels``
  (or the dataset's own) with ``classes`` (an int k: macro-class = label mod k; or a sequence label → macro-class)
  only add a per-macro-class table of guesses; IGB never uses labels.
- Evaluation: the data stream in fixed batches of ``batch_size`` (default 256; it is also the BatchNorm batch of a
  model in training mode, whose outputs depend on the batch, so it never depends on how inits are grouped). Inits
  run in groups through ``torch.func.stack_module_state`` + ``vmap(functional_call)``; if the model cannot be
  vmapped (the first call raises, or a Dropout-like module is active in training mode) a per-init loop runs the
  same function; ``ProbeResult.path``/``path_note`` say which and why. BatchNorm in training mode vmaps with
  stacked buffers (its running-statistics update is kept, per init, as in the model; outputs in training mode do
  not depend on it). In-place ops (``ReLU(inplace=True)``) act on per-init tensors and are left as they are.
- Statistics (float64 sums over the data): per init the class fractions G_c (argmax counts / D), output means μ_c
  and unbiased data variances Var_χ(O_c); γ̂ ± SE from ``igbsym.validation.stats.gamma_estimate`` (plain) and, when the
  last module producing the output is an ``nn.Linear`` on [B, n] features, the Rao–Blackwellised γ̂ of
  ``igbsym.validation.estimators`` (exact expectation over the output weights, assumed i.i.d. zero-mean and independent
  of the earlier layers, as every torch/Kaiming/Xavier init makes them); the latter is the default
  (``estimator='auto'``). With two outputs: the KS test of G0 against f_G0 at the fitted γ̂ (``igb.cdf``; G0 jittered
  by U(−½, ½)/D as in validation/checks_igb.py; γ̂ is fitted from the moments, not from G0, and the p-value ignores
  the fit). The regime is ``igbsym.law.regime(γ̂)``. ``layers``: forward hooks on every module called once whose
  tensor output is not just a child's output give per-unit data means/variances and the γ-like ratio
  Var_W(mean)/E Var_χ (centred over inits, 1/D-corrected) per module.
- Target SE (``rel_se`` R in (0, 1)): ``n_inits`` is the first round, rounded up to whole groups of inits; then
  rounds grow the run (``stats.grow``: to 1.1 × n × (achieved/R)² inits, SE ∝ 1/√n, in whole groups) until
  SE/|γ̂| <= R (an absolute SE <= R from the first round whose γ̂ is within 2 SE of 0) or ``max_inits``
  (default ``MAX_INITS``) is reached. Init i is still seeded by (seed, i) and run in the same group as in one
  plain run of the final count (the group size depends on the cap, not on the round), so the result for n inits is
  that of ``probe(..., n)``. ``ProbeResult.precision``: the target, the achieved SE, met or not, inits used, the cap and
  the rounds; an unmet target at the cap is one line of the summary and ``met: false`` in ``to_dict``.
"""
from __future__ import annotations

import contextlib
import copy
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

import igbsym
from igbsym.errors import InputError, NumericalError
from igbsym.law import regime

from . import datasets, models
from .device import resolve_device
from .estimators import rao_blackwell_units
from .seeding import DROPOUT, WEIGHTS, derive_seed
from .stats import (MAX_INITS, Estimate, check_rel_se, gamma_estimate, gamma_units, grow, jitter_g0, ks_test,
                    ratio_estimate)

DEFAULT_BATCH = 256
_ELEM_BUDGET = 1 << 24              # elements of the largest per-point activation × batch × init group
_MAX_GROUP = 64
_STOCHASTIC = (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout, nn.FeatureAlphaDropout)
ESTIMATORS = ("auto", "plain", "rao-blackwell")
PATHS = ("auto", "vmap", "loop")


@dataclass
class LayerStats:
    """One hooked module: per-unit data mean and unbiased variance [I, U] and the γ-like ratio (None if the
    module's outputs do not vary over the data or are the same in every init, e.g. a Flatten of the input)."""

    name: str
    kind: str
    mean: torch.Tensor
    var: torch.Tensor
    gamma: Estimate | None


@dataclass
class ProbeResult:
    """What ``probe`` measured (module docstring). Tensors are float64 on the CPU."""

    frac: torch.Tensor
    mu: torch.Tensor
    var: torch.Tensor
    n_data: int
    n_inits: int
    seed: int
    gamma: Estimate
    estimator: str
    estimator_note: str
    gamma_plain: Estimate
    gamma_rb: Estimate | None
    path: str
    path_note: str
    regime: str
    ks: tuple | None
    ks_note: str
    layers: list = field(default_factory=list)
    label_frac: torch.Tensor | None = None
    notes: list = field(default_factory=list)
    device: str = "cpu"
    seconds: float = 0.0
    units: dict = field(default_factory=dict)   # estimator -> per-init (a_i, b_i), for paired comparisons
    precision: dict | None = None               # with rel_se: the target, achieved SE, met, inits, cap, rounds

    @property
    def g0(self) -> torch.Tensor:
        return self.frac[:, 0]

    @property
    def n_classes(self) -> int:
        return self.frac.shape[1]

    def pdf(self, g):
        """The fitted law f_G0(g; γ̂) (``igb.pdf``), γ̂ clipped at 0."""
        return igbsym.get("igb.pdf").numpy(g=g, gamma=max(self.gamma.value, 0.0))

    def to_dict(self) -> dict:
        est = lambda e: None if e is None else dict(value=e.value, se=e.se, lo=e.lo, hi=e.hi, method=e.method, n=e.n)
        return dict(n_inits=self.n_inits, n_data=self.n_data, n_classes=self.n_classes, seed=self.seed,
                    gamma=est(self.gamma), estimator=self.estimator, estimator_note=self.estimator_note,
                    gamma_plain=est(self.gamma_plain), gamma_rao_blackwell=est(self.gamma_rb),
                    regime=self.regime, path=self.path, path_note=self.path_note,
                    ks=None if self.ks is None else dict(statistic=self.ks[0], p_value=self.ks[1]),
                    ks_note=self.ks_note,
                    mean_frac=self.frac.mean(0).tolist(), max_frac_mean=float(self.frac.max(1).values.mean()),
                    layers=[dict(name=l.name, kind=l.kind, units=l.mean.shape[1], gamma=est(l.gamma))
                            for l in self.layers],
                    label_frac=None if self.label_frac is None else self.label_frac.mean(0).tolist(),
                    notes=self.notes, device=self.device, seconds=self.seconds, precision=self.precision)

    def summary(self) -> str:
        ratio = (f"; variance ratio plain/RB = {(self.gamma_plain.se / self.gamma_rb.se) ** 2:.3g}"
                 if self.gamma_rb is not None and self.gamma_rb.se > 0 else "")
        lines = [f"gamma = {self.gamma.value:.4g} ± {self.gamma.se:.2g} ({self.estimator}; {self.estimator_note})"]
        if self.precision is not None:
            p = self.precision
            lines.append(f"precision: {p['target']} SE {p['achieved']:.3g} "
                         + (f"<= {p['rel_se']:g} after {p['inits']} inits" if p["met"] else
                            f"> {p['rel_se']:g}: TARGET NOT MET at the cap of {p['max_inits']} inits (the SE "
                            f"asks for {p['need']})")
                         + f"; rounds: {', '.join(map(str, p['rounds']))} inits")
        lines += [f"plain estimator: {self.gamma_plain}" + ratio,
                  f"regime: {self.regime}; mean over inits of the largest class fraction max_c G_c = "
                  f"{float(self.frac.max(1).values.mean()):.3f}",
                  "KS of G0 vs f_G0(gamma_hat): " + (f"D_n = {self.ks[0]:.4f}, p = {self.ks[1]:.3g}" if self.ks
                                                      else "-") + f" ({self.ks_note})",
                  f"{self.n_inits} inits × {self.n_data} points, {self.n_classes} outputs, path {self.path} "
                  f"({self.path_note}), {self.device}, {self.seconds:.1f} s"]
        if self.layers:
            lines.append("per-module gamma-like ratio Var_W(mean)/E Var_x:")
            lines += [f"  {l.name:<28} {l.kind:<24} units {l.mean.shape[1]:>6}  "
                      + (f"{l.gamma.value:.4g} ± {l.gamma.se:.2g}" if l.gamma else "-") for l in self.layers]
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


# --------------------------------------------------------------------------------------------- initialisation
def _reset(module: nn.Module) -> list:
    """Re-initialise every submodule in place; returns the names of modules with own parameters and no reset."""
    missing = []
    for name, m in module.named_modules():
        fn = getattr(m, "reset_parameters", None) or getattr(m, "_reset_parameters", None)
        if callable(fn):
            fn()
        elif any(True for _ in m.parameters(recurse=False)):
            missing.append(name or type(m).__name__)
    return missing


class Inits:
    """Builds init i's parameters and buffers (CPU) from a template module, an init callable or a factory."""

    def __init__(self, model, init, seed: int, zero_bias: bool):
        self.seed, self.zero_bias, self.init, self.notes = seed, zero_bias, init, []
        if isinstance(model, nn.Module):
            self.factory, self.work = None, copy.deepcopy(model).cpu()
        elif callable(model):
            if init is not None:
                raise InputError("probe: give either a model factory or an init callable, not both")
            self.factory, self.work = model, None
        else:
            raise InputError(f"probe: model must be an nn.Module or a factory seed -> nn.Module, got "
                             f"{type(model).__name__}")
        self.index_factory = self.factory is not None and models.takes_index(self.factory)

    def module(self, i: int) -> nn.Module:
        s = derive_seed(self.seed, WEIGHTS, i)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(s)
            if self.factory is not None:
                m = self.factory(self.seed, i) if self.index_factory else self.factory(s)
                if not isinstance(m, nn.Module):
                    raise InputError(f"probe: the model factory returned {type(m).__name__}, not an nn.Module")
                m = m.cpu()
            else:
                m = self.work
                if self.init is not None:
                    self.init(m)
                else:
                    missing = _reset(m)
                    if missing and i == 0:
                        self.notes.append("not re-initialised (no reset_parameters; same in every init): "
                                          + ", ".join(missing))
        if self.zero_bias:
            with torch.no_grad():
                for name, p in m.named_parameters():
                    if name.split(".")[-1].endswith("bias"):
                        p.zero_()
        return m

    def state(self, i: int):
        m = self.module(i)
        return ({k: v.detach().clone() for k, v in m.named_parameters()},
                {k: v.detach().clone() for k, v in m.named_buffers()})


def _stack(states, device):
    ps, bs = zip(*states)
    stack = lambda ds: {k: torch.stack([d[k] for d in ds]).to(device) for k in ds[0]}
    return stack(ps), stack(bs)


# --------------------------------------------------------------------------------------------- structure
def dry_run(base: nn.Module, x: torch.Tensor):
    """Run init 0 on one batch with hooks: call counts, outputs, the output-producing Linear; a failure names the
    innermost module that raised and the input shape."""
    names = {m: n for n, m in base.named_modules()}
    stack, calls, outs, order, handles = [], {}, {}, [], []

    def pre(m, inp):
        stack.append(m)

    def post(m, inp, out):
        stack.pop()
        calls[m] = calls.get(m, 0) + 1
        outs[m] = (out, inp)
        order.append(m)

    for m in names:
        if m is not base:
            handles += [m.register_forward_pre_hook(pre), m.register_forward_hook(post)]
    try:
        with torch.no_grad():
            out = base(x)
    except Exception as exc:
        where = names[stack[-1]] if stack else "(top level)"
        kind = type(stack[-1]).__name__ if stack else type(base).__name__
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"model fails on input of shape {tuple(x.shape)} in module {where!r} ({kind}): "
                         f"{type(exc).__name__}: {msg}") from None
    finally:
        for h in handles:
            h.remove()
    if not isinstance(out, torch.Tensor) or out.dim() != 2 or out.shape[0] != x.shape[0]:
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise InputError(f"the model must return logits [batch, classes]; on input {tuple(x.shape)} it returned "
                         f"{shape}")
    if out.shape[1] < 2:
        raise InputError(f"the model has {out.shape[1]} output; IGB needs at least 2 outputs (classes)")
    if not bool(torch.isfinite(out).all()):
        raise InputError(f"the model returns NaN/inf on input of shape {tuple(x.shape)} at initialisation")
    last = next((m for m in reversed(order) if isinstance(m, nn.Linear)), None)
    head = None
    if last is not None and outs[last][0] is out and calls[last] == 1 and outs[last][1][0].dim() == 2:
        head = names[last]
    return out.shape[1], names, calls, outs, head


def _hooked(names, calls, outs, layers, batch: int) -> list:
    """Modules whose per-unit statistics are recorded (module docstring)."""
    if layers is False or layers is None:
        return []
    keep = []
    for m, name in names.items():
        if not name or calls.get(m) != 1:
            continue
        out = outs[m][0]
        if not isinstance(out, torch.Tensor) or out.dim() < 2 or out.shape[0] != batch or not out.is_floating_point():
            continue
        if any(outs.get(c, (None,))[0] is out for c in m.modules() if c is not m):
            continue                                   # a container whose output is a child's
        if layers is True or name in layers:
            keep.append((name, m))
    if layers is not True:
        unknown = set(layers) - {n for n, _ in keep}
        if unknown:
            raise InputError(f"probe: layers {sorted(unknown)} are not modules called once with a tensor output")
    return keep


def _moments(y: torch.Tensor):
    """Per-unit Σ y and Σ y² over one batch: summed in the working dtype (pairwise, ≤ batch rows) and returned in
    float64, in which batches accumulate (as validation/simulate.py does); the variance S2/D − mean² then keeps a
    relative precision of about 1e-7·(mean²/var) in float32."""
    y = y.detach().flatten(1)
    return y.sum(0).double(), y.square().sum(0).double()


class _Fn:
    """The per-init function (params, buffers, x, labels) -> sufficient statistics, shared by vmap and loop."""

    def __init__(self, base, hooked, head, n_classes, n_labels):
        self.base, self.names, self.head = base, [n for n, _ in hooked], head
        self.n_classes, self.n_labels, self.store = n_classes, n_labels, {}
        self.handles = [m.register_forward_hook(self._hook(n)) for n, m in hooked]
        if head is not None:
            mod = base.get_submodule(head)
            self.handles.append(mod.register_forward_pre_hook(lambda m, inp: self.store.__setitem__(
                "__head__", _moments(inp[0]))))

    def _hook(self, name):
        def hook(m, inp, out):
            self.store[name] = _moments(out)
        return hook

    def __call__(self, params, buffers, x, lab):
        self.store.clear()
        out = torch.func.functional_call(self.base, (params, buffers), (x,))
        o = out.double()
        guess = (out.argmax(-1, keepdim=True) == torch.arange(self.n_classes, device=out.device)).double()
        res = {"s1": o.sum(0), "s2": (o * o).sum(0), "count": guess.sum(0)}
        if lab is not None:
            res["by_label"] = (lab.unsqueeze(-1) == torch.arange(self.n_labels, device=out.device)).double().T @ guess
        for k, (s1, s2) in self.store.items():
            res[k + "/1"], res[k + "/2"] = s1, s2
        return res

    def close(self):
        for h in self.handles:
            h.remove()


def _stochastic(model: nn.Module) -> list:
    return [n for n, m in model.named_modules() if m.training and isinstance(m, _STOCHASTIC) and m.p > 0]


# --------------------------------------------------------------------------------------------- probe
def _check_args(n_inits, seed, batch_size, estimator, path, layers):
    if not isinstance(n_inits, (int, np.integer)) or isinstance(n_inits, bool) or n_inits < 2:
        raise InputError(f"probe: n_inits must be an integer >= 2 (γ is a variance over inits), got {n_inits!r}")
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"probe: seed must be a non-negative integer, got {seed!r}")
    if batch_size is not None and (not isinstance(batch_size, (int, np.integer)) or batch_size < 2):
        raise InputError(f"probe: batch_size must be an integer >= 2, got {batch_size!r}")
    if estimator not in ESTIMATORS:
        raise InputError(f"probe: unknown estimator {estimator!r}; allowed: {', '.join(ESTIMATORS)}")
    if path not in PATHS:
        raise InputError(f"probe: unknown path {path!r}; allowed: {', '.join(PATHS)}")
    if not (isinstance(layers, bool) or layers is None or
            (isinstance(layers, (list, tuple, set)) and all(isinstance(n, str) for n in layers))):
        raise InputError("probe: layers must be True, False or a list of module names")


def macro_classes(labels, classes):
    if labels is None:
        if classes is not None and not isinstance(classes, int):
            raise InputError("probe: classes maps labels to macro-classes; give labels too")
        return None, None
    if classes is None:
        return labels, int(labels.max()) + 1
    if isinstance(classes, (int, np.integer)) and not isinstance(classes, bool):
        if classes < 2:
            raise InputError(f"probe: classes must be >= 2, got {classes}")
        return labels % int(classes), int(classes)
    table = torch.as_tensor(np.asarray(classes)).long().reshape(-1)
    if table.numel() <= int(labels.max()) or (table < 0).any():
        raise InputError(f"probe: classes must map every label 0..{int(labels.max())} to a macro-class >= 0")
    return table[labels], int(table.max()) + 1


def probe(model, data, n_inits: int, *, labels=None, classes=None, init=None, seed: int = 0, device=None,
          batch_size: int | None = None, layers=True, progress=None, zero_bias: bool = False,
          estimator: str = "auto", path: str = "auto", rel_se: float | None = None,
          max_inits: int | None = None) -> ProbeResult:
    """Measure the initial guessing bias of ``model`` on ``data`` over ``n_inits`` initialisations (module doc);
    with ``rel_se`` R, ``n_inits`` is the first round and inits are added in rounds until SE/|γ̂| <= R or
    ``max_inits`` (default ``MAX_INITS``) is reached (module docstring, "Target SE")."""
    t0 = time.perf_counter()
    _check_args(n_inits, seed, batch_size, estimator, path, layers)
    rel_se, cap = _rounds_cap(n_inits, rel_se, max_inits)
    ds = datasets.load(data, labels, seed)
    x_all, n_data = ds.data, ds.data.shape[0]
    lab_all, n_labels = macro_classes(ds.labels, classes)
    device = resolve_device(device)
    batch = min(batch_size or DEFAULT_BATCH, n_data)
    if n_data % batch == 1:
        raise InputError(f"probe: D={n_data} leaves a last batch of 1 point with batch_size={batch}; choose another")
    inits = Inits(model, init, seed, zero_bias)
    base = copy.deepcopy(inits.module(0)).to(device)
    x0 = x_all[:batch].to(device)
    n_classes, names, calls, outs, head = dry_run(base, x0)
    hooked = _hooked(names, calls, outs, layers, x0.shape[0])
    head = _readout(base, head, estimator)
    use_rb = head is not None and estimator != "plain"
    per_point = max([outs[m][0][0].numel() for m in names if isinstance(outs.get(m, (None,))[0], torch.Tensor)]
                    + [x0[0].numel()])
    # the group size depends on the cap, not the round, so rounds of whole groups run init i in the same group
    # (the same vmapped shapes) as one plain run of the final count
    group = max(1, min(_MAX_GROUP, cap, _ELEM_BUDGET // (batch * per_point)))
    fn = _Fn(base, hooked, head if use_rb else None, n_classes, n_labels)
    stochastic = _stochastic(base)
    how = dict(zip(("path", "note"), _choose_path(path, stochastic)))
    chunks = [(s, min(n_data, s + batch)) for s in range(0, n_data, batch)]
    parts, done = [], [0]

    def run_to(n_total):
        """Inits len(so far) … n_total − 1, in groups of ``group`` from init 0."""
        for g0 in range(sum(p["s1"].shape[0] for p in parts), n_total, group):
            idx = range(g0, min(n_total, g0 + group))
            params, buffers = _stack([inits.state(i) for i in idx], device)
            acc = {}
            for k, (a, b) in enumerate(chunks):
                x = x_all[a:b].to(device)
                lab = lab_all[a:b].to(device) if lab_all is not None else None
                res = _chunk_sums(fn, params, buffers, x, lab, how, path == "auto" and not (g0 or k), lambda: _loop(
                    fn, params, buffers, x, lab, idx, k, len(chunks), seed, bool(stochastic)))
                for key, v in res.items():
                    acc[key] = acc[key] + v if key in acc else v
                done[0] += len(idx) * (b - a)
                if progress is not None:
                    progress(min(1.0, done[0] / (n_total * n_data)))
            acc = {k: v.cpu() for k, v in acc.items()}
            if use_rb:
                acc.update(_readout_squares(params, head))
            parts.append(acc)

    def result():
        n = sum(p["s1"].shape[0] for p in parts)
        return _result(parts, n_data, n, seed, use_rb, estimator, head, hooked, how["path"], how["note"],
                       inits.notes + _mode_notes(base, stochastic, batch), str(device), t0)

    try:
        if rel_se is None:
            run_to(n_inits)
            return result()
        start = min(cap, group * -(-n_inits // group))
        rounds = []
        _, prec = grow(run_to, lambda: _gamma(rounds, result()), rel_se, start, cap, step=group)
    finally:
        fn.close()
    res = rounds[-1]
    res.precision = dict(rel_se=rel_se, target=prec.target, achieved=prec.achieved, met=prec.met,
                         inits=res.n_inits, max_inits=cap, need=prec.need, rounds=[r.n_inits for r in rounds])
    res.seconds = time.perf_counter() - t0
    return res


def _rounds_cap(n_inits, rel_se, max_inits) -> tuple:
    """(rel_se checked, the most inits ``probe`` may run): ``n_inits`` without rel_se, else max_inits (default
    ``MAX_INITS``), which must be >= n_inits; max_inits without rel_se is refused."""
    cap = n_inits
    if rel_se is not None:
        rel_se = check_rel_se(rel_se, "probe")
        cap = MAX_INITS if max_inits is None else max_inits
        if not isinstance(cap, (int, np.integer)) or isinstance(cap, bool) or cap < n_inits:
            raise InputError(f"probe: max_inits must be an integer >= n_inits = {n_inits}, got {cap!r}")
    elif max_inits is not None:
        raise InputError("probe: max_inits caps the rounds of rel_se; give rel_se too")
    return rel_se, cap


def _readout(base, head, estimator):
    """The readout Linear's name for the Rao–Blackwellised estimator, None where its weight is tied to another
    module (not an independent layer); required for estimator 'rao-blackwell'."""
    if estimator == "rao-blackwell" and head is None:
        raise InputError("probe: the Rao–Blackwellised estimator needs an nn.Linear on [batch, n] features "
                         "producing the model output")
    if head is not None and f"{head}.weight" not in dict(base.named_parameters()):
        return None
    return head


def _chunk_sums(fn, params, buffers, x, lab, how, may_fall_back, loop) -> dict:
    """The sums of ``fn`` over one chunk for a group of inits: vmapped over the stacked inits, or ``loop()``
    (per init) on path 'loop'; a vmap failure on the first chunk of path 'auto' switches ``how`` to the loop."""
    if how["path"] == "vmap":
        try:
            with torch.no_grad():
                return torch.func.vmap(fn, in_dims=(0, 0, None, None))(params, buffers, x, lab)
        except Exception as exc:
            if not may_fall_back:
                raise
            how["path"] = "loop"
            how["note"] = f"vmap failed ({type(exc).__name__}: {str(exc).strip().splitlines()[0][:120]})"
    return loop()


def _readout_squares(params, head) -> dict:
    """Per init the mean squared readout weight and bias (None without a bias): the Rao–Blackwellised units'
    integrals over the readout."""
    w = params[f"{head}.weight"].double()
    bias = params.get(f"{head}.bias")
    return {"__w2": (w * w).flatten(1).mean(1).cpu(),
            "__b2": None if bias is None else (bias.double() ** 2).mean(1).cpu()}


def _gamma(rounds, res):
    """``grow``'s estimate: the round's γ̂, its result kept (the last one is returned)."""
    rounds.append(res)
    return res.gamma


def _choose_path(path, stochastic):
    if path == "loop":
        return "loop", "requested"
    if stochastic:
        if path == "vmap":
            raise InputError(f"probe: stochastic modules active in training mode ({', '.join(stochastic)}) cannot "
                             "be vmapped reproducibly; use path='loop' or model.eval()")
        return "loop", (f"stochastic modules in training mode ({', '.join(stochastic[:3])}): per-init loop with "
                        "the RNG seeded by (seed, init, batch)")
    return "vmap", "torch.func.vmap over stacked inits"


def _loop(fn, params, buffers, x, lab, idx, chunk, n_chunks, seed, stochastic):
    outs = []
    for j, i in enumerate(idx):
        p = {k: v[j] for k, v in params.items()}
        b = {k: v[j] for k, v in buffers.items()}
        with torch.no_grad(), (torch.random.fork_rng(devices=[]) if stochastic else contextlib.nullcontext()):
            if stochastic:
                torch.manual_seed(derive_seed(seed, DROPOUT, i * n_chunks + chunk))
            outs.append(fn(p, b, x, lab))
    return {k: torch.stack([o[k] for o in outs]) for k in outs[0]}


def _mode_notes(base, stochastic, batch):
    notes = []
    if any(isinstance(m, nn.modules.batchnorm._BatchNorm) and m.training for m in base.modules()):
        notes.append(f"BatchNorm in training mode: normalised over each batch of {batch} data points "
                     "(batch_size); outputs depend on that batch")
    if stochastic:
        notes.append("dropout active (training mode): each init's outputs include random masks")
    return notes


def _cat(parts, key):
    return torch.cat([p[key] for p in parts]) if parts[0].get(key) is not None else None


def _mean_var(s1, s2, n):
    mean = s1 / n
    return mean, ((s2 - n * mean * mean) / (n - 1)).clamp_min(0)


def _result(parts, n_data, n_inits, seed, use_rb, estimator, head, hooked, path_used, path_note, notes, device, t0):
    mu, var = _mean_var(_cat(parts, "s1"), _cat(parts, "s2"), n_data)
    frac = _cat(parts, "count") / n_data
    bad = (~torch.isfinite(mu).all(1) | ~torch.isfinite(var).all(1)).nonzero().ravel().tolist()
    if bad:
        raise NumericalError(f"probe: the model's outputs overflow (NaN/inf statistics) for inits {bad[:5]}; "
                             "rescale the init or use float64 data")
    if not bool(var.mean(1).gt(0).all()):
        raise InputError("probe: the model's outputs do not vary over the data for some init (Var_χ(O) = 0); "
                         "γ is undefined")
    units = {"plain": gamma_units(mu, var, n_data, center=head is None)}
    plain, rb = ratio_estimate(*units["plain"]), None
    if use_rb:
        h_mean, h_var = _mean_var(_cat(parts, "__head__/1"), _cat(parts, "__head__/2"), n_data)
        w2, b2 = _cat(parts, "__w2"), _cat(parts, "__b2")
        nonzero_bias = b2 is not None and bool(b2.gt(0).any())
        units["rao-blackwell"] = rao_blackwell_units(h_mean, h_var.sum(1), n_data, w2 if nonzero_bias else 1.0,
                                                     b2 if nonzero_bias else None)
        rb = ratio_estimate(*units["rao-blackwell"])
        rb.method = f"rao-blackwell/{rb.method}"
    if rb is not None:
        gamma, how = rb, (f"exact expectation over the output Linear {head!r}'s i.i.d. zero-mean weights"
                          + (" (output bias kept)" if nonzero_bias else ""))
    else:
        gamma = plain
        how = ("requested" if estimator == "plain" else
               "the output is not produced by an nn.Linear on [batch, n] features; centred over inits")
    g = max(gamma.value, 0.0)
    ks, ks_note = None, ""
    if frac.shape[1] != 2:
        ks_note = "f_G0 is the two-class law; with more outputs see the per-class fractions"
    elif g == 0:
        ks_note = "gamma_hat <= 0: f_G0 is a point mass at 1/2"
    else:
        cdf = igbsym.get("igb.cdf")
        ks = ks_test(jitter_g0(frac[:, 0], n_data, seed), lambda t: cdf.numpy(g=np.clip(t, 0, 1), gamma=g))
        ks_note = "G0 jittered by U(-1/2,1/2)/D; gamma fitted from the moments (p-value ignores the fit)"
    layer_stats = []
    for name, m in hooked:
        mean, v = _mean_var(_cat(parts, name + "/1"), _cat(parts, name + "/2"), n_data)
        varies = bool(v.mean(1).gt(0).all()) and bool((mean != mean[:1]).any())
        lg = gamma_estimate(mean, v, n_data, center=True) if varies else None
        layer_stats.append(LayerStats(name, type(m).__name__, mean, v, lg))
    label_frac = None
    if parts[0].get("by_label") is not None:
        by = _cat(parts, "by_label")
        label_frac = by / by.sum(-1, keepdim=True).clamp_min(1)
    return ProbeResult(frac, mu, var, n_data, n_inits, seed, gamma, "rao-blackwell" if rb is not None else "plain",
                       how, plain, rb, path_used, path_note, regime(g), ks, ks_note, layer_stats, label_frac, notes,
                       device, time.perf_counter() - t0, units)
