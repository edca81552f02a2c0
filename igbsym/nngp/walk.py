"""The kernel walk: compose the ops' kernel maps (``Op.kernel``) over a dataset, tile by tile.

``walk(ops, x)`` runs the data's channel-averaged kernel (``igbsym.ops.datakernel.input_kernel``) through every op
for all pairs of points, in tiles of rows × columns of the D × D matrix (upper triangle only; each tile holds at
most ``TILE`` entries k(a, b; p, p'), so an image kernel over positions never has to fit in memory at once), and
keeps per op the three summaries the IGB statistics need, per position p over the D points:
T_p = (1/D) Σ_a k(a, a; p, p), M_off,p = Σ_{a≠b} k(a, b; p, p)/(D(D − 1)) and m̄_p = (1/D) Σ_a m(a, p) — and the last
op's full D × D kernel (its positions averaged). ``walk(..., pairs=n)`` instead draws n off-diagonal pairs uniformly
(with replacement; an unbiased estimate of M_off with its standard error) and walks the D diagonal entries exactly:
the route for large D, without the full kernel. An op that needs the whole dataset's kernel at once (``whole_data``:
a train-mode BatchNorm normalises over its batch) makes the walk one tile of all D × D entries (flat data).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError, NumericalError
from ..ops.datakernel import input_kernel

TILE = 1 << 21          # kernel entries k(a, b; p, p') per tile (16 MB of float64 per array)


@dataclass
class Summary:
    """One op's output over the dataset (module docstring): T, M_off and m̄ per position [P]; ``off_se`` the
    standard error of Σ_p M_off,p under pair sampling (0 when every pair was walked)."""

    name: str
    T: np.ndarray
    M_off: np.ndarray
    mbar: np.ndarray
    off_se: float = 0.0

    def ratio(self) -> float:
        """Σ_p (M_off,p − m̄_p²) / Σ_p (T_p − M_off,p): the expectation of the probe's γ-like ratio of this layer's
        units (data mean's variance over inits, 1/D-corrected, over the mean unbiased data variance)."""
        den = float((self.T - self.M_off).sum())
        if not den > 0:
            raise NumericalError(f"{self.name}: the units do not vary over the data (T - M_off = {den:.3g})")
        return float((self.M_off - self.mbar**2).sum()) / den

    def ratio_population(self, n_data: int) -> float:
        """The same with the dataset as the population: Σ_p (M_p − m̄_p²)/Σ_p (T_p − M_p), M = T/D + (1 − 1/D) M_off."""
        M = self.T / n_data + (1 - 1 / n_data) * self.M_off
        return float((M - self.mbar**2).sum()) / float((self.T - M).sum())


@dataclass
class Walk:
    """Per op summaries (in op order), the output kernel [D, D] (None under pair sampling) and the sample size."""

    summaries: list
    kernel: np.ndarray | None
    n_data: int
    n_pairs: int | None = None
    notes: list = field(default_factory=list)


def image_input(ops, x) -> bool:
    """The data enter as an image [D, C, H, W] iff the first op is spatial (a convolution or pool); else flattened."""
    return x.ndim == 4 and bool(ops) and ops[0].spatial


def check_data(x) -> np.ndarray:
    """The data as float64 [D, ...]: at least 2 points, finite, not all points equal (one line otherwise)."""
    x = np.asarray(x)
    if x.ndim < 2 or x.shape[0] < 2 or x[0].size < 1:
        raise InputError(f"data must be [D, ...] with D >= 2 points of at least one feature, got shape {x.shape}")
    if not np.issubdtype(x.dtype, np.number) or np.iscomplexobj(x):
        raise InputError(f"data must be real numbers, got dtype {x.dtype}")
    x = x.astype(float)
    bad = int((~np.isfinite(x)).sum())
    if bad:
        raise InputError(f"data contains {bad} NaN/inf values; allowed: finite numbers only")
    if np.all(x == x[:1]):
        raise InputError("data are constant (every point equal): gamma is undefined; allowed: at least two "
                         "different points")
    if x.ndim == 3:
        x = x[:, None]
    return x


def needs_whole(ops) -> bool:
    """Whether an op (or a composite op's child) maps only the whole dataset's kernel (``Op.whole_data``)."""
    return any(op.whole_data or needs_whole(op.children) for op in ops)


def samples_entries(ops) -> bool:
    """Whether an op (or a child) samples each kernel entry (``Op.sampled_kernel``: a QMC map)."""
    return any(op.sampled_kernel or samples_entries(op.children) for op in ops)


def _whole_walk(ops, x, names, image) -> Walk:
    """All D × D entries as one tile (module docstring): the summaries from its diagonal and off-diagonal."""
    n = x.shape[0]
    if image:
        raise InputError("a train-mode BatchNorm over image data has no kernel map here (BatchNorm2d: not "
                         "supported); allowed: flat data (a leading Flatten) with BatchNorm1d after a Linear")
    idx = np.arange(n)
    summaries = [None] * len(ops)

    def rec(i, s):                                 # flat units: one position
        k = np.broadcast_to(s.k[..., 0, 0], (n, n))
        off = (k.sum() - np.trace(k)) / (n * (n - 1))
        summaries[i] = Summary(names[i], np.array([np.trace(k) / n]), np.array([off]),
                               np.array([np.broadcast_to(s.ma[..., 0], (n, 1)).mean()]))
    s = _apply(ops, input_kernel(x, idx, idx, True, whole=True), rec)
    if not s.flat or s.P != 1:
        raise InputError("the ops must end in a Dense readout (features, one position) for an output kernel")
    kernel = s.k[..., 0, 0]
    if not np.isfinite(kernel).all():
        raise NumericalError("the output kernel has NaN/inf entries (overflow in a deep or large-gain network)")
    return Walk(summaries, np.array(kernel), n)


def _apply(ops, s, record):
    for i, op in enumerate(ops):
        s = op.kernel(s)
        if record is not None:
            record(i, s)
    return s


def _pos_diag(k):
    return np.diagonal(k, axis1=-2, axis2=-1)


def walk(ops, x, names=None, pairs: int | None = None, seed=0, tile: int = TILE, own_diag: bool = False) -> Walk:
    """Compose ``ops`` over the dataset ``x`` (module docstring). ``names``: a label per op (default: index and op
    type). The last op must leave features (a Dense readout: P = 1 after it) for the output kernel. ``own_diag``
    (with ``pairs``): T and m̄ from the sampled pairs' own points (k(a, a), k(b, b) of each pair's walk, each point
    marginally uniform: unbiased) instead of walking every point, so a QMC map's point-set error is common to T and
    M_off of the same pairs (``theory``'s replicas of MaxPool2d)."""
    ops = tuple(ops)
    x = check_data(x)
    image = image_input(ops, x)
    n = x.shape[0]
    names = list(names) if names is not None else [f"{i} {type(op).__name__}" for i, op in enumerate(ops)]
    acc = [dict(T=0.0, off=0.0, m=0.0) for _ in ops]
    if needs_whole(ops):
        if pairs is not None:
            raise InputError("a train-mode BatchNorm needs every pair of points (no pair sampling); allowed: the "
                             "full walk (no --pairs)")
        return _whole_walk(ops, x, names, image)

    def diag_walk(idx):
        def rec(i, s):
            acc[i]["T"] = acc[i]["T"] + _pos_diag(s.k)[:, 0].sum(0)
            acc[i]["m"] = acc[i]["m"] + np.broadcast_to(s.ma, s.k.shape[:-1])[:, 0].sum(0)
        return _apply(ops, input_kernel(x, idx, idx, not image, pairs=True), rec)

    P0 = x[0, 0].size if image else 1
    per = max(1, tile // (3 * P0 * P0))              # points (or pairs) per chunk: k, ka and kb each [n, 1, P, P]
    for lo in range(0, 0 if own_diag and pairs is not None else n, per):
        diag_walk(np.arange(lo, min(n, lo + per)))
    if pairs is not None:
        if not (isinstance(pairs, (int, np.integer)) and pairs >= 2):
            raise InputError(f"pairs must be an integer >= 2, got {pairs!r}")
        rng = np.random.default_rng(seed)
        a = rng.integers(0, n, pairs)
        b = (a + rng.integers(1, n, pairs)) % n          # uniform over b != a
        vals = [[] for _ in ops]

        def rec(i, s):
            vals[i].append(_pos_diag(s.k)[:, 0])
            if own_diag:
                acc[i]["T"] = acc[i]["T"] + (_pos_diag(s.ka) + _pos_diag(s.kb))[:, 0].sum(0) / 2
                acc[i]["m"] = acc[i]["m"] + (np.broadcast_to(s.ma, s.k.shape[:-1])
                                             + np.broadcast_to(s.mb, s.k.shape[:-1]))[:, 0].sum(0) / 2
        for lo in range(0, pairs, per):
            _apply(ops, input_kernel(x, a[lo:lo + per], b[lo:lo + per], not image, pairs=True), rec)
        summaries = []
        for i, name in enumerate(names):
            v = np.concatenate(vals[i])
            se = float(v.sum(-1).std(ddof=1) / np.sqrt(pairs))
            diag = pairs if own_diag else n
            summaries.append(Summary(name, acc[i]["T"] / diag, v.mean(0), acc[i]["m"] / diag, se))
        return Walk(summaries, None, n, pairs)
    side = max(1, int(np.sqrt(tile / P0**2)))
    blocks = [np.arange(lo, min(n, lo + side)) for lo in range(0, n, side)]
    kernel = np.empty((n, n))
    for bi, ra in enumerate(blocks):
        for cb in blocks[bi:]:
            weight = 1.0 if cb is ra else 2.0

            def rec(i, s, weight=weight, same=cb is ra):
                d = _pos_diag(s.k).sum((0, 1))
                if same:                                   # the tile's own diagonal a = b is not an off pair
                    d = d - _pos_diag(np.moveaxis(np.diagonal(s.k, axis1=0, axis2=1), -1, 0)).sum(0)
                acc[i]["off"] = acc[i]["off"] + weight * d
            s = _apply(ops, input_kernel(x, ra, cb, not image), rec)
            if not s.flat or s.P != 1:
                raise InputError("the ops must end in a Dense readout (features, one position) for an output kernel")
            kernel[np.ix_(ra, cb)] = s.k[..., 0, 0]
            kernel[np.ix_(cb, ra)] = s.k[..., 0, 0].T
    if not np.isfinite(kernel).all():
        raise NumericalError("the output kernel has NaN/inf entries (overflow in a deep or large-gain network)")
    summaries = [Summary(name, acc[i]["T"] / n, acc[i]["off"] / (n * (n - 1)), acc[i]["m"] / n)
                 for i, name in enumerate(names)]
    return Walk(summaries, kernel, n)
