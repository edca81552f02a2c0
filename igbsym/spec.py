"""The architecture spec: the one description of a network, a tuple of ops (``igbsym.ops``) plus its input and
output; builders for the MLPs and residual MLPs of the papers.

Papers: igb-initial-guessing-bias.txt App. F.1 (layer-by-layer propagation), App. G (activations);
norm-placement-bn-ln.txt Thms E.1, E.2, F.2, F.3, Sec. 4.1.3. The same spec drives prediction (``igbsym.predict``,
the depth/resnet/moments forms through ``igbsym.engine``) and simulation (``igbsym.validation.simulate`` builds the
torch network from the ops' own modules).

``Spec(d_in, ops, weight_law='normal', n_classes=2, sigma_out=SIGMA_W, args=None)``: ``ops`` are applied to the input
(dimension ``d_in``; None = infinite, for prediction); an output ``Dense(n_classes, sigma_out)`` follows implicitly.
``weight_law`` ∈ WEIGHT_LAWS (its kurtosis enters the simulator only). ``args``: the builder's keyword values, kept
for records and display (JSON output, sweep keys); nothing is computed from them.
Builders: ``NetSpec`` / ``mlp_ops`` (hidden layer = Dense(σ_w) → [norm if 'pre'] → φ → [norm if 'post'] → [MaxPool]),
``resnet_ops`` (an embedding Dense, then residual blocks x + α·F(x)). One vocabulary: norms are spelled
NORMS = ('none', 'batchnorm', 'layernorm', 'rmsnorm') everywhere (``norm_name`` accepts None at the boundary).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from . import activations as acts
from .errors import InputError
from .ops import NORM_OPS, SIGMA_W, Act, Dense, MaxPool, Op, Residual
from .ops.dense import WEIGHT_LAWS

NORMS = ("none",) + tuple(NORM_OPS)
PLACEMENTS = ("pre", "post")
BLOCKS = ("linear-first", "linear-last")

__all__ = ["SIGMA_W", "WEIGHT_LAWS", "NORMS", "PLACEMENTS", "BLOCKS", "Spec", "NetSpec", "norm_name", "block_ops",
           "mlp_ops", "residual_block", "resnet_ops", "default_srelu_shift"]


def _fail(msg):
    raise InputError(msg)


def _is_int(v) -> bool:
    import numpy as np
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def norm_name(norm) -> str:
    """The one spelling of a norm: None → 'none'; anything else must be in NORMS."""
    norm = "none" if norm is None else norm
    if norm not in NORMS:
        _fail(f"unknown norm {norm!r}; allowed: {', '.join(NORMS)}")
    return norm


@dataclass(frozen=True)
class Spec:
    """An architecture (module docstring): input dimension, ops, weight law, output classes."""

    d_in: int | None
    ops: tuple
    weight_law: str = "normal"
    n_classes: int = 2
    sigma_out: object = SIGMA_W
    args: dict | None = field(default=None, compare=False, repr=False)
    sigma_b_out: object = 0          # the readout's bias sd (the mean-field convention: every Dense has one)

    def __post_init__(self):
        object.__setattr__(self, "ops", tuple(self.ops))
        if self.d_in is not None and (not _is_int(self.d_in) or self.d_in < 1):
            _fail(f"Spec: d_in must be a positive integer, got {self.d_in!r}")
        if self.weight_law not in WEIGHT_LAWS:
            _fail(f"Spec: unknown weight_law {self.weight_law!r}; allowed: {', '.join(WEIGHT_LAWS)}")
        if not _is_int(self.n_classes) or self.n_classes < 2:
            _fail(f"Spec: n_classes must be an integer >= 2, got {self.n_classes!r}")
        if not all(isinstance(op, Op) for op in self.ops):
            _fail("Spec: ops must be Op instances (Dense, Act, BatchNorm, LayerNorm, RMSNorm, MaxPool, Residual, ...)")

    @property
    def widths(self) -> tuple:
        """The output widths of the spec's Dense layers (the output layer excluded), residual branches included."""
        out, n = [], self.d_in
        for op in self.ops:
            out += [fo for _, fo in op.shapes(n)]
            n = op.width(n)
        return tuple(out)

    @property
    def batch(self) -> int:
        """Rows processed together: the BN mini-batch size, else 1."""
        bs = {op.rows for op in _walk(self.ops) if op.rows is not None}
        return int(next(iter(bs))) if bs else 1

    def output(self) -> Dense:
        return Dense(self.n_classes, self.sigma_out, self.sigma_b_out)

    def all_ops(self) -> tuple:
        return self.ops + (self.output(),)

    def shapes(self) -> list:
        """(fan_in, fan_out) of every Dense, the output layer last."""
        out, n = [], self.d_in
        for op in self.all_ops():
            out += op.shapes(n)
            n = op.width(n)
        return out

    def full_batch(self, n_data: int) -> "Spec":
        """The spec with full-batch BatchNorm made explicit as batches of ``n_data`` rows (for the simulator)."""
        return dataclasses.replace(self, ops=tuple(op.full_batch(n_data) for op in self.ops))


def _walk(ops):
    for op in ops:
        yield op
        yield from _walk(op.children)


def _norm_op(norm, B=None):
    norm = norm_name(norm)
    if norm == "none":
        return None
    return NORM_OPS[norm](B) if norm == "batchnorm" else NORM_OPS[norm]()


def block_ops(activation, norm="none", placement="pre", a=0.01, B=None, pool=None, shift=None) -> tuple:
    """The ops after a hidden Dense: [norm if pre] φ [norm if post] [MaxPool(pool)]."""
    nrm = _norm_op(norm, B)
    out = []
    if nrm and placement == "pre":
        out.append(nrm)
    out.append(Act(activation, a, shift))
    if nrm and placement == "post":
        out.append(nrm)
    if pool and pool > 1:
        out.append(MaxPool(pool))
    return tuple(out)


def mlp_ops(L, activation, norm="none", placement="pre", a=0.01, sigma_w=SIGMA_W, B=None, pool=None, widths=None,
            shift=None, sigma_b=0) -> tuple:
    """Hidden ops of an L-hidden-layer MLP (infinite width unless ``widths``); biases N(0, σ_b²) in every Dense."""
    widths = (None,) * L if widths is None else tuple(widths)
    block = block_ops(activation, norm, placement, a, B, pool, shift)
    return tuple(op for w in widths for op in (Dense(w, sigma_w, sigma_b),) + block)


def residual_block(activation="relu", norm="none", placement="pre", order="linear-first", a=0.01,
                   sigma_w=SIGMA_W, width=None, shift=None, layers=1, sigma_b=0) -> tuple:
    """The branch F of ``layers`` layers (Labatie 2019 uses 2 per residual unit): 'linear-first' = (Dense → [norm if
    pre] → φ → [norm if post]) × layers; 'linear-last' = ([norm] → φ → Dense) × layers (He et al. 2016's
    pre-activation ResNet; ``placement`` is ignored); every Dense has biases N(0, σ_b²)."""
    if not _is_int(layers) or layers < 1:
        _fail(f"residual block: layers={layers!r} is not allowed; allowed: an integer >= 1")
    return _residual_layer(activation, norm, placement, order, a, sigma_w, width, shift, sigma_b) * layers


def _residual_layer(activation, norm, placement, order, a, sigma_w, width, shift, sigma_b=0) -> tuple:
    if order not in BLOCKS:
        _fail(f"residual block order {order!r} is not allowed; allowed: {', '.join(BLOCKS)}")
    if placement not in PLACEMENTS:
        _fail(f"residual placement {placement!r} is not allowed; allowed: pre, post")
    if order == "linear-first":
        return (Dense(width, sigma_w, sigma_b),) + block_ops(activation, norm, placement, a, shift=shift)
    nrm = _norm_op(norm)
    return ((nrm,) if nrm else ()) + (Act(activation, a, shift), Dense(width, sigma_w, sigma_b))


def resnet_ops(L, activation="relu", alpha=1.0, norm="none", placement="pre", order="linear-first", a=0.01,
               sigma_w=SIGMA_W, width=None, layers=1, embedding=None, sigma_b=0) -> tuple:
    """An embedding Dense then L residual blocks of ``layers`` layers (the output Dense is the Spec's own). The
    embedding's gain is ``embedding`` (default σ_w: the trunk starts at variance σ_w²; 1: a LeCun embedding, trunk
    variance 1, as in Labatie's code). Every Dense, the embedding's too, has biases N(0, σ_b²) (the mean-field
    convention; the readout's is the Spec's ``sigma_b_out``)."""
    block = residual_block(activation, norm, placement, order, a, sigma_w, width, layers=layers, sigma_b=sigma_b)
    embed = Dense(width, sigma_w if embedding is None else embedding, sigma_b)
    return (embed,) + tuple(Residual(alpha, block) for _ in range(L))


def default_srelu_shift(norm, placement, sigma_w) -> float:
    """srelu's default shift σ/√(2π): the ReLU mean of the nominal N(0, σ²) input (σ = 1 after a norm before φ)."""
    sigma = 1.0 if (norm_name(norm) != "none" and placement == "pre") else sigma_w
    return sigma / math.sqrt(2 * math.pi)


def NetSpec(d_in, widths, activation="relu", a=0.01, weight_law="normal", sigma_w=SIGMA_W, pool=None, norm=None,
            placement="pre", bn_batch=None, n_classes=2, srelu_shift=None, sigma_b=0.0) -> Spec:
    """The MLP builder (module docstring); its keyword values are kept in ``spec.args``."""
    widths = (widths,) if _is_int(widths) else tuple(widths)
    if d_in is not None and (not _is_int(d_in) or d_in < 1):
        _fail(f"NetSpec: d_in must be a positive integer, got {d_in!r}")
    if not widths or any(w is not None and (not _is_int(w) or w < 1) for w in widths):
        _fail(f"NetSpec: widths must be positive integers (at least one hidden layer), got {widths!r}")
    if activation not in acts.names():
        _fail(f"NetSpec: unknown activation {activation!r}; allowed: {', '.join(acts.names())}")
    if weight_law not in WEIGHT_LAWS:
        _fail(f"NetSpec: unknown weight_law {weight_law!r}; allowed: {', '.join(WEIGHT_LAWS)}")
    if isinstance(sigma_w, bool) or not (isinstance(sigma_w, (int, float)) and math.isfinite(sigma_w) and sigma_w > 0):
        _fail(f"NetSpec: sigma_w must be a positive finite number, got {sigma_w!r}")
    if not isinstance(a, (int, float)) or not math.isfinite(float(a)):
        _fail(f"NetSpec: leaky slope a must be finite, got {a!r}")
    if isinstance(sigma_b, bool) or not (isinstance(sigma_b, (int, float)) and math.isfinite(sigma_b) and sigma_b >= 0):
        _fail(f"NetSpec: sigma_b must be a finite number >= 0, got {sigma_b!r}")
    if sigma_b and (norm not in (None, "none") or activation == "srelu" or pool is not None):
        _fail("NetSpec: biases (sigma_b > 0) are modelled without norms, pooling or srelu only (depth.gamma's "
              "sigma_b); allowed: sigma_b = 0 there")
    if pool is not None:
        if not _is_int(pool) or pool < 1:
            _fail(f"NetSpec: pool (max-pool kernel) must be a positive integer or None, got {pool!r}")
        if any(w is not None and w % pool for w in widths):
            _fail(f"NetSpec: every width must be divisible by the pool kernel {pool}, got {widths}")
    if norm is not None and norm not in NORMS:
        _fail(f"NetSpec: unknown norm {norm!r}; allowed: None, batchnorm, layernorm, rmsnorm")
    norm = None if norm == "none" else norm
    if placement not in PLACEMENTS:
        _fail(f"NetSpec: placement must be 'pre' or 'post' (norm before/after activation), got {placement!r}")
    if norm == "batchnorm" and bn_batch is not None and bn_batch != "full" and (not _is_int(bn_batch) or bn_batch < 2):
        _fail(f"NetSpec: batchnorm needs an integer bn_batch >= 2 (or None = full batch), got {bn_batch!r}")
    if not _is_int(n_classes) or n_classes < 2:
        _fail(f"NetSpec: n_classes must be an integer >= 2, got {n_classes!r}")
    if srelu_shift is not None and not (isinstance(srelu_shift, (int, float)) and math.isfinite(srelu_shift)):
        _fail(f"NetSpec: srelu_shift must be a finite number or None, got {srelu_shift!r}")
    shift = srelu_shift if srelu_shift is not None else default_srelu_shift(norm, placement, sigma_w)
    ops = mlp_ops(len(widths), activation, norm_name(norm), placement, a, sigma_w,
                  bn_batch if norm == "batchnorm" else None, pool, widths, shift if activation == "srelu" else None,
                  sigma_b)
    args = dict(d_in=d_in, widths=widths, activation=activation, a=a, weight_law=weight_law, sigma_w=sigma_w,
                pool=pool, norm=norm, placement=placement, bn_batch=bn_batch, n_classes=n_classes,
                srelu_shift=srelu_shift, **({"sigma_b": sigma_b} if sigma_b else {}))
    return Spec(d_in, ops, weight_law, n_classes, sigma_w, args, sigma_b)
