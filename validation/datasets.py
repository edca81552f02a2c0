"""Datasets for the probe (validation/probe.py): named offline datasets, files and tensors.

Names (``load(name)``):
- ``digits``: scikit-learn's bundled ``load_digits`` (1797 images 1×8×8, 10 classes; the offline MNIST stand-in),
  standardised as igb-initial-guessing-bias.txt App. I.4 does for CIFAR10: pixels rescaled to [0, 1] (÷16), then
  shifted by the mean and divided by the standard deviation of the (single) channel.
- ``digits-parity``: the same images with labels even = 0 / odd = 1 (the E&O macro-classes of App. I.1.1).
- ``gaussian[:SHAPE[:D]]``: the paper's Gaussian blob (App. I.4), D i.i.d. points of i.i.d. N(0, 1) coordinates;
  SHAPE like ``3x32x32`` or ``64`` (default 1x8x8, D = 1797, i.e. the shape and size of ``digits``), seeded.
Files: ``.npy`` (an array [D, ...]) or ``.pt`` (a tensor, or a dict with ``data`` and optional ``labels``).
scikit-learn is the optional extra ``igbsym[data]``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from igbsym.errors import InputError

NAMES = ("digits", "digits-parity", "gaussian")
GAUSSIAN_DEFAULT = ((1, 8, 8), 1797)


@dataclass
class Dataset:
    """data [D, ...] (float32), labels [D] (int64) or None, n_classes of the labels (None without labels)."""

    name: str
    data: torch.Tensor
    labels: torch.Tensor | None = None
    n_classes: int | None = None


def digits(parity: bool = False) -> Dataset:
    """scikit-learn's digits, standardised (module docstring); ``parity`` merges the labels into even/odd."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise InputError("dataset 'digits' needs scikit-learn: pip install 'igbsym[data]'") from None
    bunch = load_digits()
    x = torch.tensor(bunch.images, dtype=torch.float64).unsqueeze(1) / 16.0
    x = standardise(x)
    y = torch.tensor(bunch.target, dtype=torch.int64)
    if parity:
        return Dataset("digits-parity", x.float(), y % 2, 2)
    return Dataset("digits", x.float(), y, 10)


def gaussian(shape=GAUSSIAN_DEFAULT[0], n: int = GAUSSIAN_DEFAULT[1], seed: int = 0) -> Dataset:
    """The Gaussian blob: n points of i.i.d. N(0, 1) coordinates of the given shape (no labels)."""
    shape = tuple(int(s) for s in shape)
    if not shape or any(s < 1 for s in shape) or n < 2:
        raise InputError(f"gaussian: shape must be positive integers and D >= 2, got {shape} and {n}")
    gen = torch.Generator().manual_seed(seed)
    return Dataset(f"gaussian:{'x'.join(map(str, shape))}:{n}", torch.randn((n, *shape), generator=gen))


def _parse_gaussian(spec: str, seed: int) -> Dataset:
    parts = spec.split(":")
    try:
        shape = tuple(int(s) for s in parts[1].split("x")) if len(parts) > 1 and parts[1] else GAUSSIAN_DEFAULT[0]
        n = int(parts[2]) if len(parts) > 2 else GAUSSIAN_DEFAULT[1]
        if len(parts) > 3:
            raise ValueError
    except ValueError:
        raise InputError(f"bad gaussian dataset {spec!r}; allowed: gaussian[:SHAPE[:D]], e.g. gaussian:3x32x32:2000"
                         ) from None
    return gaussian(shape, n, seed)


def _from_file(path: Path) -> Dataset:
    if not path.is_file():
        raise InputError(f"data file {str(path)!r} does not exist")
    labels = None
    try:
        if path.suffix == ".npy":
            data = torch.from_numpy(np.load(path, allow_pickle=False))
        else:
            obj = torch.load(path, map_location="cpu", weights_only=True)
            data, labels = (obj.get("data"), obj.get("labels")) if isinstance(obj, dict) else (obj, None)
    except Exception as exc:
        raise InputError(f"cannot read data file {str(path)!r}: {type(exc).__name__}: {exc}") from None
    return from_tensor(data, labels, name=path.name)


def from_tensor(data, labels=None, name: str = "tensor") -> Dataset:
    """Validate a tensor / ndarray dataset [D, ...]: finite, float, at least 2 points."""
    if isinstance(data, np.ndarray):
        data = torch.from_numpy(data)
    if not isinstance(data, torch.Tensor):
        raise InputError(f"data must be a tensor or ndarray [D, ...], a .npy/.pt path or one of {', '.join(NAMES)}; "
                         f"got {type(data).__name__}")
    if data.dim() < 2 or data.shape[0] < 2:
        raise InputError(f"data must be [D, ...] with D >= 2 points of at least one feature, got shape "
                         f"{tuple(data.shape)}")
    if data.is_complex() or data.dtype == torch.bool:
        raise InputError(f"data must be real numbers, got dtype {data.dtype}")
    data = data.float() if not data.is_floating_point() or data.dtype == torch.float16 else data
    bad = (~torch.isfinite(data)).sum().item()
    if bad:
        raise InputError(f"data contains {bad} NaN/inf values; allowed: finite numbers only")
    n_classes = None
    if labels is not None:
        labels = torch.as_tensor(np.asarray(labels)).reshape(-1)
        if labels.numel() != data.shape[0] or labels.is_floating_point() or (labels < 0).any():
            raise InputError(f"labels must be {data.shape[0]} non-negative integers (one per data point)")
        labels = labels.long()
        n_classes = int(labels.max()) + 1
    return Dataset(name, data, labels, n_classes)


def load(data, labels=None, seed: int = 0) -> Dataset:
    """A Dataset from a name (``digits``, ``digits-parity``, ``gaussian[:SHAPE[:D]]``), a path or a tensor."""
    if isinstance(data, Dataset):
        return data if labels is None else from_tensor(data.data, labels, data.name)
    if isinstance(data, (str, Path)):
        s = str(data)
        if s in ("digits", "digits-parity"):
            ds = digits(parity=s == "digits-parity")
        elif s == "gaussian" or s.startswith("gaussian:"):
            ds = _parse_gaussian(s, seed)
        elif s.endswith((".npy", ".pt")):
            ds = _from_file(Path(s))
        else:
            raise InputError(f"unknown dataset {s!r}; allowed: {', '.join(NAMES)} (gaussian[:SHAPE[:D]]) or a "
                             f".npy/.pt file")
        return ds if labels is None else from_tensor(ds.data, labels, ds.name)
    return from_tensor(data, labels)


def standardise(x: torch.Tensor) -> torch.Tensor:
    """Per-channel standardisation (dim 1 of [D, C, ...]): subtract the mean, divide by the SD (App. I.4)."""
    dims = [d for d in range(x.dim()) if d != 1]
    sd = x.std(dim=dims, keepdim=True)
    if not bool(torch.all(sd > 0)):
        raise InputError("standardise: a channel is constant (zero standard deviation)")
    return (x - x.mean(dim=dims, keepdim=True)) / sd

