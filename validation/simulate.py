"""Batched simulation of untrained MLPs: many weight initialisations evaluated at once on one fixed dataset.

API (stable; other check modules rely on these names)
------------------------------------------------------
The architecture is ``igbsym.spec.Spec`` (one spec for prediction and simulation): ``simulate`` runs any Spec
whose ops have a torch module (Dense, Act, BatchNorm(B) with finite B, LayerNorm, RMSNorm, MaxPool, and any op
implementing ``batched``/``torch``). ``NetSpec`` (re-exported from igbsym.spec) builds the MLP:
``NetSpec(d_in, widths, activation='relu', a=0.01, weight_law='normal', sigma_w=SIGMA_W (= √2), pool=None,
norm=None, placement='pre', bn_batch=None, n_classes=2, srelu_shift=None, sigma_b=0)``
    Hidden layer l is ``Linear → [norm if placement='pre'] → activation → [norm if placement='post']
    → [MaxPool1d(pool)]``; then an output ``Linear`` to ``n_classes`` nodes (every Linear with a bias
    b ~ N(0, sigma_b²) when ``sigma_b > 0``, the mean-field convention, else none). Weights of every layer
    (output included) are i.i.d. with variance ``sigma_w**2 / fan_in``: 'normal' (Kaiming normal, kurtosis 3),
    'uniform' (kurtosis 1.8) or 'rademacher' (±, kurtosis 1). ``norm`` ∈ {None, 'batchnorm', 'layernorm',
    'rmsnorm'} uses the real ``torch.nn`` layers (no affine part; it is the identity at init); BatchNorm is in
    training mode on consecutive mini-batches of ``bn_batch`` data points. ``srelu`` subtracts ``srelu_shift``
    (default σ/√(2π) with σ = 1 after a pre-activation norm, else ``sigma_w``: the nominal ReLU mean of a
    N(0, σ²) pre-activation, exact in layer 1 for unit-variance data).

``simulate(spec, n_inits, n_data=None, seed=0, device=None, dtype=torch.float32, data=None, chunk=None,
data_law='gaussian', df=5.0, layer_stats=True, moments=2, record=0, init_chunk=None, progress=None,
shortcut=None, fresh_data=False, first_init=0) -> SimResult``
    Init i always gets the same weights (seeded by (seed, i), independent of chunking); the dataset is the same
    for every init: ``data`` (a [D, d_in] tensor) or a ``Blob`` of i.i.d. unit-variance coordinates
    ('gaussian' | 'uniform' | 'laplace' | 'student' with ``df``) generated in fixed seeded blocks, so it is
    never held in memory. Data stream in chunks of ``chunk`` rows (a multiple of ``bn_batch``) and inits in
    groups of ``init_chunk``, both chosen to bound memory when None. Statistics accumulate in float64 as
    shifted power sums. ``shortcut='gaussian'``: first-layer pre-activations of Gaussian data drawn as
    z·Lᵀ with L = chol(WᵀW) and z ~ N(0, I_n) (exact in law for each init given W; needs width ≤ d_in).
    ``fresh_data=True``: each init gets its own dataset (gaussian/uniform/laplace), making inits fully i.i.d.
    ``layer_stats``: True (every stage), False, stage names (each costs about one pass over the activations), or
    'penultimate' (only the last hidden layer's last stage: what the Rao–Blackwellised estimator needs);
    ``moments=4`` adds central m3, m4; ``record=R`` keeps the full values of the first R data points.
    Speed note: with shared CPU cores use torch.set_num_threads(1) (see validation/cli.py).

``SimResult`` (statistics float64 on the CPU; ``records`` in the working dtype, on the CPU):
    ``mu`` [I, C] per-init data mean of output O_c; ``var`` [I, C] its unbiased data variance;
    ``g0`` [I] fraction of data with argmax == 0; ``frac`` [I, C] fraction with argmax == c;
    ``out`` the output ``NodeStats``; ``layers[l][stage]`` a ``NodeStats`` per hidden layer l and stage in
    ``stages(spec)`` ('pre' after Linear, 'norm', 'act', 'pool'); ``records`` {'out' or (l, stage): tensor
    [I, record, n]} holding the first ``record`` data points; ``n_data``, ``n_inits``, ``seed``, ``spec``,
    ``device``, ``seconds``, ``first_init``, ``data_law`` (None when a data tensor was given).
    ``NodeStats``: ``mean``, ``var`` (unbiased) [I, n]; ``m3``, ``m4`` (central, 1/D) when ``moments=4``.

Helpers: ``sample_weights(spec, inits, seed, device, dtype)`` → list of [I, fan_in (+ 1 with a bias), fan_out]
(``igbsym.ops.dense.split_bias`` splits off the bias row);
``forward(spec, weights, x, on_stage=None)`` the batched forward (x [N, d] shared or [I, N, d]);
``sequential(spec, weights, i)`` the reference ``torch.nn.Sequential`` of init i; ``Blob``.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from igbsym import activations as acts
from igbsym.errors import InputError
from igbsym.ops.dense import split_bias
from igbsym.spec import NORMS, WEIGHT_LAWS, NetSpec, Spec  # noqa: F401  (NetSpec: the public builder)

from .device import resolve_device
from .seeding import DATA, FRESH, WEIGHTS, derive_seed

ACTIVATIONS = acts.names()
DATA_LAWS = ("gaussian", "uniform", "laplace", "student")
BLOCK = 4096                       # rows per seeded data block
_ELEM_BUDGET = 1 << 21             # elements per live [inits, rows, width] tensor (8 MB in float32: small
                                   # enough for the allocator to reuse, large enough for efficient GEMMs)
_ROWS = 256                        # default data rows per chunk
SHARED_GEMM = True                 # shared data: first layer as one [rows, d]·[d, I·n] GEMM (else a bmm per init)


def _fail(msg):
    raise InputError(msg)


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def layer_stages(spec: Spec) -> list:
    """Per hidden layer, the stage names of its ops in order ('pre' for its Dense, then 'norm', 'act', 'pool')."""
    out = []
    for op in spec.ops:
        if op.starts_layer:
            out.append([])
        out[-1].append(op.stage)
    return [tuple(st) for st in out]


def stages(spec: Spec) -> tuple:
    """The recorded stages of a hidden layer, in order (an MLP's layers all have the same stages)."""
    per = layer_stages(spec)
    return tuple(dict.fromkeys(name for st in per for name in st))


# --------------------------------------------------------------------------------------------- data
class Blob:
    """i.i.d. unit-variance data in R^d, generated in seeded blocks of BLOCK rows (never stored whole)."""

    def __init__(self, d: int, law: str = "gaussian", seed: int = 0, df: float = 5.0):
        if law not in DATA_LAWS:
            _fail(f"unknown data_law {law!r}; allowed: {', '.join(DATA_LAWS)}")
        if law == "student" and not df > 2:
            _fail(f"student data needs df > 2 (finite variance), got {df!r}")
        self.d, self.law, self.seed, self.df = d, law, seed, float(df)
        self._cache = (None, None)

    @property
    def kurtosis(self) -> float:
        """Kurtosis E[x⁴] of one coordinate (inf for Student df ≤ 4)."""
        return {"gaussian": 3.0, "uniform": 1.8, "laplace": 6.0}.get(
            self.law, 3 + 6 / (self.df - 4) if self.df > 4 else math.inf)

    def _block(self, b: int) -> np.ndarray:
        if self._cache[0] == b:
            return self._cache[1]
        rng = np.random.default_rng(derive_seed(self.seed, DATA, b))
        shape = (BLOCK, self.d)
        if self.law == "gaussian":
            x = rng.standard_normal(shape, dtype=np.float64)
        elif self.law == "uniform":
            x = rng.uniform(-math.sqrt(3), math.sqrt(3), shape)
        elif self.law == "laplace":
            x = rng.laplace(0.0, 1 / math.sqrt(2), shape)
        else:
            x = rng.standard_t(self.df, shape) / math.sqrt(self.df / (self.df - 2))
        self._cache = (b, x)
        return x

    def rows(self, start: int, stop: int) -> torch.Tensor:
        """Rows [start, stop) as a float64 CPU tensor."""
        parts = []
        for b in range(start // BLOCK, (stop - 1) // BLOCK + 1):
            lo, hi = max(start, b * BLOCK) - b * BLOCK, min(stop, (b + 1) * BLOCK) - b * BLOCK
            parts.append(self._block(b)[lo:hi])
        return torch.from_numpy(np.concatenate(parts) if len(parts) > 1 else parts[0])


def fresh_rows(d: int, law: str, seed: int, inits, start: int, stop: int, device, dtype) -> torch.Tensor:
    """A fresh dataset per init: rows [start, stop) of init i, [len(inits), stop − start, d], seeded by
    (seed, i, start) (so reproducible for a fixed chunk size). Laws: gaussian, uniform, laplace."""
    if law not in ("gaussian", "uniform", "laplace"):
        _fail(f"fresh_data supports data_law gaussian, uniform or laplace, got {law!r}")
    x = torch.empty((len(inits), stop - start, d), device=device, dtype=dtype)
    gen = torch.Generator(device=device)
    for k, i in enumerate(inits):
        gen.manual_seed(derive_seed(seed, FRESH, int(i) * (1 << 32) + start))
        if law == "gaussian":
            x[k].normal_(generator=gen)
        else:
            x[k].uniform_(-math.sqrt(3), math.sqrt(3), generator=gen)
    if law == "laplace":   # inverse cdf of Laplace(0, 1/√2) from u = x/(2√3) ~ U(−1/2, 1/2)
        u = x / (2 * math.sqrt(3))
        x = -torch.sign(u) * torch.log1p(-2 * u.abs()) / math.sqrt(2)
    return x


# --------------------------------------------------------------------------------------------- network
def dense_ops(ops) -> list:
    """Every Dense op in order, descending into residual blocks."""
    out = []
    for op in ops:
        if op.starts_layer:
            out.append(op)
        out += dense_ops(op.children)
    return out


def sample_weights(spec: Spec, inits, seed: int, device=None, dtype=torch.float32) -> list:
    """Weights [len(inits), fan_in, fan_out] of every layer; init i is seeded by (seed, i) alone. A Dense with a bias
    (σ_b > 0, the mean-field convention) gets [len(inits), fan_in + 1, fan_out]: its last row the bias
    b ~ N(0, σ_b²), drawn after the weights from the same generator (so a bias-free spec draws what it always drew;
    ``igbsym.ops.dense.split_bias`` splits it)."""
    device = resolve_device(device) if not isinstance(device, torch.device) else device
    shapes, dense = spec.shapes(), dense_ops(spec.all_ops())
    sds = [0.0 if op.unbiased else float(op.sigma_b) for op in dense]
    out = [torch.empty((len(inits), fi + (sd > 0), fo), device=device, dtype=dtype)
           for (fi, fo), sd in zip(shapes, sds)]
    gen = torch.Generator(device=device)
    for k, i in enumerate(inits):
        gen.manual_seed(derive_seed(seed, WEIGHTS, int(i)))
        for w, (fi, _), op, sd in zip(out, shapes, dense, sds):
            s = float(op.sigma_w) / math.sqrt(fi)
            if spec.weight_law == "normal":
                w[k, :fi].normal_(0.0, s, generator=gen)
            elif spec.weight_law == "uniform":
                w[k, :fi].uniform_(-math.sqrt(3) * s, math.sqrt(3) * s, generator=gen)
            else:
                w[k, :fi].bernoulli_(0.5, generator=gen).mul_(2 * s).sub_(s)
            if sd > 0:
                w[k, fi].normal_(0.0, sd, generator=gen)
    return out


def forward(spec: Spec, weights: list, x: torch.Tensor, on_stage=None, first=None) -> torch.Tensor:
    """Batched forward pass: outputs [I, N, C]. ``x`` is [N, d] (shared by all inits) or [I, N, d].

    Each op of ``spec`` runs through its ``batched`` method (Dense: one bmm for all inits). ``on_stage(layer,
    stage, h)`` sees every hidden tensor [I, N, n]. ``first`` (optional) replaces the first Dense: a precomputed
    [I, N, n] pre-activation (the Gaussian shortcut).
    """
    n_init = weights[0].shape[0]
    h = x.expand(n_init, *x.shape) if x.dim() == 2 else x
    it = iter(weights[:-1])
    layer = -1
    for k, op in enumerate(spec.ops):
        if op.starts_layer:
            layer += 1
        if k == 0 and first is not None:
            next(it)
            h = first
        else:
            h = op.batched(h, lambda: next(it))
        if on_stage is not None:
            on_stage(layer, op.stage, h)
    v, b = split_bias(weights[-1], h.shape[-1])
    o = torch.bmm(v.transpose(1, 2), h.transpose(1, 2)).transpose(1, 2)   # (Vᵀhᵀ)ᵀ: faster
    return (o if b is None else o + b).contiguous()


def sequential(spec: Spec, weights: list, i: int) -> nn.Sequential:
    """The reference network of init i as a torch.nn.Sequential of each op's own torch module."""
    mods, n, k = [], spec.d_in, 0
    for op in spec.all_ops():
        w = weights[min(k, len(weights) - 1)]
        mod = op.torch(n, w.device, w.dtype)
        for lin in (m for m in mod.modules() if isinstance(m, nn.Linear)):   # a Dense, or a residual branch's
            v, b = split_bias(weights[k][i:i + 1], lin.in_features)
            lin.weight.data.copy_(v[0].T)
            if b is not None:
                lin.bias.data.copy_(b[0, 0])
            k += 1
        mods.append(mod)
        n = op.width(n)
    return nn.Sequential(*mods).train()


# --------------------------------------------------------------------------------------------- statistics
@dataclass
class NodeStats:
    """Per init and node: data mean and unbiased data variance [I, n]; central m3, m4 (1/D) if requested."""

    mean: torch.Tensor
    var: torch.Tensor
    n: int
    m3: torch.Tensor | None = None
    m4: torch.Tensor | None = None

    @staticmethod
    def cat(parts: list) -> "NodeStats":
        pick = lambda k: None if getattr(parts[0], k) is None else torch.cat([getattr(p, k) for p in parts])
        return NodeStats(pick("mean"), pick("var"), parts[0].n, pick("m3"), pick("m4"))


class _Moments:
    """Streaming shifted power sums S_k = Σ (x − K)^k over the data axis (K = first chunk's mean).

    Each chunk is summed in the working dtype (pairwise, over ≤ a few hundred rows) and accumulated in float64.
    """

    def __init__(self, order: int):
        self.order, self.shift, self.sums, self.n = order, None, None, 0

    def add(self, x: torch.Tensor):
        if self.shift is None:
            self.shift = x.mean(1, keepdim=True)
            self.sums = [0.0] * self.order
        y = x - self.shift
        parts = [y.sum(1)]
        if self.order == 4:
            y2 = y * y
            parts += [y2.sum(1), (y2 * y).sum(1), y2.square_().sum(1)]
        else:
            parts.append(y.square_().sum(1))
        self.sums = [acc + part.double() for acc, part in zip(self.sums, parts)]
        self.n += x.shape[1]

    def result(self) -> NodeStats:
        n, s = self.n, [t.cpu() / self.n for t in self.sums]
        m1 = s[0]
        m2 = (s[1] - m1 * m1).clamp_min(0)
        mean = self.shift.squeeze(1).to(device="cpu", dtype=torch.float64) + m1
        st = NodeStats(mean, m2 * n / max(n - 1, 1), n)
        if self.order >= 4:
            st.m3 = s[2] - 3 * m1 * s[1] + 2 * m1**3
            st.m4 = s[3] - 4 * m1 * s[2] + 6 * m1**2 * s[1] - 3 * m1**4
        return st


@dataclass
class SimResult:
    spec: Spec
    n_inits: int
    n_data: int
    seed: int
    device: str
    out: NodeStats
    frac: torch.Tensor
    layers: list
    records: dict = field(default_factory=dict)
    seconds: float = 0.0
    first_init: int = 0
    data_law: str | None = "gaussian"     # None when a data tensor was given

    @property
    def mu(self) -> torch.Tensor:
        return self.out.mean

    @property
    def var(self) -> torch.Tensor:
        return self.out.var

    @property
    def g0(self) -> torch.Tensor:
        return self.frac[:, 0]


def _check_run(spec, n_inits, n_data, seed, dtype, data, moments, record, chunk, shortcut, data_law, first_init=0):
    if not isinstance(spec, Spec):
        _fail(f"simulate: spec must be an igbsym.spec.Spec (e.g. NetSpec(...)), got {type(spec).__name__}")
    if spec.d_in is None or any(w is None for w in spec.widths):
        _fail("simulate: every width (and d_in) must be a finite integer to build the network")
    if any(op.full_batch(2) is not op for op in spec.ops):
        _fail("simulate: BatchNorm needs a finite mini-batch size (bn_batch) to simulate")
    if not _is_int(n_inits) or n_inits < 1:
        _fail(f"simulate: n_inits must be a positive integer, got {n_inits!r}")
    if data is not None:
        if not isinstance(data, torch.Tensor) or data.dim() != 2 or data.shape[1] != spec.d_in:
            _fail(f"simulate: data must be a [D, d_in={spec.d_in}] tensor")
        if n_data is not None and n_data != data.shape[0]:
            _fail(f"simulate: n_data={n_data} but data has {data.shape[0]} rows")
        n_data = data.shape[0]
    if not _is_int(n_data) or n_data < 2:
        _fail(f"simulate: n_data must be an integer >= 2, got {n_data!r}")
    if n_data % spec.batch:
        _fail(f"simulate: n_data={n_data} must be a multiple of bn_batch={spec.batch}")
    if not _is_int(first_init) or first_init < 0:
        _fail(f"simulate: first_init must be a non-negative integer, got {first_init!r}")
    if not _is_int(seed) or seed < 0:
        _fail(f"simulate: seed must be a non-negative integer, got {seed!r}")
    if dtype not in (torch.float32, torch.float64):
        _fail(f"simulate: dtype must be torch.float32 or torch.float64, got {dtype}")
    if moments not in (2, 4):
        _fail(f"simulate: moments must be 2 or 4, got {moments!r}")
    if not _is_int(record) or not 0 <= record <= n_data:
        _fail(f"simulate: record must be an integer in [0, n_data], got {record!r}")
    if chunk is not None and (not _is_int(chunk) or chunk < 1 or chunk % spec.batch):
        _fail(f"simulate: chunk must be a positive multiple of bn_batch={spec.batch}, got {chunk!r}")
    if shortcut not in (None, "gaussian"):
        _fail(f"simulate: shortcut must be None or 'gaussian', got {shortcut!r}")
    if shortcut and (data is not None or data_law != "gaussian" or spec.widths[0] > spec.d_in):
        _fail("simulate: the gaussian shortcut needs the default Gaussian data and widths[0] <= d_in")
    return n_data


def simulate(spec: Spec, n_inits: int, n_data: int | None = None, seed: int = 0, device=None,
             dtype=torch.float32, data: torch.Tensor | None = None, chunk: int | None = None,
             data_law: str = "gaussian", df: float = 5.0, layer_stats=True, moments: int = 2,
             record: int = 0, init_chunk: int | None = None, progress=None, shortcut: str | None = None,
             fresh_data: bool = False, first_init: int = 0) -> SimResult:
    """Run ``n_inits`` independent initialisations of ``spec`` on one dataset of ``n_data`` points.

    ``first_init``: run inits ``first_init, …, first_init + n_inits − 1`` (init i is seeded by (seed, i) alone,
    so a range split across processes or chunks reproduces exactly the inits of one large run).

    ``fresh_data=True`` gives every init its own dataset (see ``fresh_rows``): inits are then fully i.i.d.,
    so standard errors over inits include the dataset's own fluctuation (which a shared dataset freezes).

    ``layer_stats``: True (every stage), False, a collection of stage names (e.g. ``("act",)``) to
    accumulate per-node statistics for (each recorded stage costs about one extra pass over the activations), or
    'penultimate': only the last hidden layer's last stage (``layers[l]`` is then empty for the others).
    """
    n_data = _check_run(spec, n_inits, n_data, seed, dtype, data, moments, record, chunk, shortcut, data_law,
                        first_init)
    device = resolve_device(device)
    t0 = time.perf_counter()
    per_layer = layer_stages(spec)
    keep, wanted = _kept_stages(spec, per_layer, layer_stats)
    b, widest = spec.batch, max(spec.d_in, *spec.widths)
    if chunk is None:
        chunk = max(b, _ROWS // b * b)
    chunk = min(max(chunk, -(-record // b) * b), n_data)
    group = init_chunk or max(1, min(n_inits, _ELEM_BUDGET // (chunk * widest)))
    if fresh_data and data is not None:
        _fail("simulate: fresh_data draws its own data; do not pass data")
    blob = None if data is not None or fresh_data else \
        Blob(spec.widths[0] if shortcut else spec.d_in, data_law, seed, df)
    run = _Run(spec, n_data, seed, device, dtype, data, blob, chunk, moments, record, wanted, bool(keep or record),
               shortcut, fresh_data, data_law, progress, n_inits * n_data)
    outs, fracs, layer_parts, rec_parts = [], [], [], {}
    for g_start in range(0, n_inits, group):
        out, frac, part, rec = run.group(range(first_init + g_start, first_init + min(n_inits, g_start + group)))
        outs.append(out)
        fracs.append(frac)
        layer_parts.append(part)
        for k, v in rec.items():
            rec_parts.setdefault(k, []).append(v)
    layers = [{s: NodeStats.cat([p[l, s] for p in layer_parts]) for s in per_layer[l] if (l, s) in wanted}
              for l in range(len(spec.widths))] if keep else []
    return SimResult(spec, n_inits, n_data, seed, str(device), NodeStats.cat(outs), torch.cat(fracs), layers,
                     {k: torch.cat(v) for k, v in rec_parts.items()}, time.perf_counter() - t0, first_init,
                     None if data is not None else data_law)


def _kept_stages(spec, per_layer, layer_stats) -> tuple:
    """(stage names kept, (layer, stage) pairs accumulated) of ``simulate``'s ``layer_stats``."""
    only_last = isinstance(layer_stats, str) and layer_stats == "penultimate"
    keep = {per_layer[-1][-1]} if only_last else set(stages(spec)) if layer_stats is True \
        else set(() if isinstance(layer_stats, str) else layer_stats or ())
    if not keep <= set(stages(spec)) or (isinstance(layer_stats, str) and not only_last):
        _fail(f"simulate: layer_stats must be True, False, 'penultimate' or stages among {stages(spec)}, "
              f"got {layer_stats!r}")
    wanted = {(l, s) for l in range(len(spec.widths)) for s in keep if s in per_layer[l]
              and (not only_last or l == len(spec.widths) - 1)}
    return keep, wanted


@dataclass
class _Run:
    """One ``simulate`` call's settings, shared by its groups of inits; ``done`` counts the rows run (progress)."""
    spec: Spec
    n_data: int
    seed: int
    device: object
    dtype: object
    data: object
    blob: object
    chunk: int
    moments: int
    record: int
    wanted: set
    hooked: bool          # some stage is accumulated or recorded
    shortcut: object
    fresh_data: bool
    data_law: str
    progress: object
    total: int
    done: int = 0

    def group(self, inits) -> tuple:
        """(output moments, class fractions, moments per (layer, stage), recorded rows) of the inits ``inits``,
        over the data in chunks of ``chunk`` rows."""
        spec = self.spec
        weights = sample_weights(spec, inits, self.seed, self.device, self.dtype)
        first_layer = self._first_layer(weights, len(inits))
        acc_out = _Moments(self.moments)
        acc = {key: _Moments(self.moments) for key in self.wanted}
        counts = torch.zeros((len(inits), spec.n_classes), dtype=torch.float64, device=self.device)
        rec = {}

        def on_stage(layer, stage, h):
            if (layer, stage) in self.wanted:
                acc[layer, stage].add(h)
            if start == 0 and self.record:
                rec[layer, stage] = h[:, :self.record].to("cpu", copy=True)

        for start in range(0, self.n_data, self.chunk):
            stop = min(self.n_data, start + self.chunk)
            x = self._rows(inits, start, stop)
            o = forward(spec, weights, x, on_stage if self.hooked else None, first_layer(x))
            acc_out.add(o)
            counts += F.one_hot(o.argmax(-1), spec.n_classes).sum(1, dtype=torch.float64)
            if start == 0 and self.record:
                rec["out"] = o[:, :self.record].to("cpu", copy=True)
            self.done += len(inits) * (stop - start)
            if self.progress is not None:
                self.progress(self.done / self.total)
        return acc_out.result(), (counts / self.n_data).cpu(), {k: v.result() for k, v in acc.items()}, rec

    def _rows(self, inits, start, stop) -> torch.Tensor:
        """Data rows start … stop − 1: each init's own (fresh_data), the given tensor's or the seeded blob's."""
        if self.fresh_data:
            return fresh_rows(self.spec.widths[0] if self.shortcut else self.spec.d_in, self.data_law, self.seed,
                              inits, start, stop, self.device, self.dtype)
        rows = self.data[start:stop] if self.data is not None else self.blob.rows(start, stop)
        return rows.to(device=self.device, dtype=self.dtype)

    def _first_layer(self, weights, n):
        """x -> the first Dense's output of the group's ``n`` inits on rows x where a faster route computes it
        (the Gaussian shortcut, or shared data's one GEMM), else None (``forward`` then computes it)."""
        spec = self.spec
        w0, b0 = split_bias(weights[0], spec.d_in)
        if self.shortcut:   # x W + b given (W, b) is N(b, WᵀW) per row: z Lᵀ + b
            chol_t = torch.linalg.cholesky(w0.transpose(1, 2) @ w0).transpose(1, 2)

            def linear(x):
                return torch.bmm(x.expand(n, *x.shape[-2:]), chol_t)
        elif SHARED_GEMM and not self.fresh_data and spec.ops[0].starts_layer:
            w0_cat = w0.transpose(0, 1).reshape(spec.d_in, -1)

            def linear(x):   # shared data: the first layer of all inits as ONE GEMM [rows, d]·[d, I·n]
                return (x @ w0_cat).view(x.shape[0], n, -1).transpose(0, 1)
        else:
            return lambda x: None
        return linear if b0 is None else lambda x: linear(x) + b0
