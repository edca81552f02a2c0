"""Device choice: cuda when available, then mps, else cpu; an explicit name must be available.

Allowed names: ``cpu``, ``cuda``, ``cuda:N`` (0 <= N < the number of CUDA devices), ``mps``, ``mps:0``. The
string is checked here, before torch parses it (torch raises RuntimeError on e.g. ``cpu:-1``), so a bad name is
one line saying what is allowed.
"""
from __future__ import annotations

import re

import torch

from igbsym.errors import InputError

DEVICES = ("cpu", "cuda", "mps")
_NAME = re.compile(r"(cpu|cuda|mps)(?::(\d{1,4}))?")


def _available(name: str) -> bool:
    if name == "cuda":
        return torch.cuda.is_available()
    if name == "mps":
        return bool(getattr(torch.backends, "mps", None)) and torch.backends.mps.is_available()
    return name == "cpu"


def _count(base: str) -> int:
    """How many devices of this kind exist here (indices 0..count-1 are allowed)."""
    if not _available(base):
        return 0
    return torch.cuda.device_count() if base == "cuda" else 1


def resolve_device(name=None) -> torch.device:
    """``None`` → best available (cuda, mps, cpu); otherwise the named device, which must exist here."""
    if isinstance(name, torch.device):
        name = str(name)
    if name is None:
        return torch.device(next(d for d in ("cuda", "mps", "cpu") if _available(d)))
    have = ", ".join(d for d in DEVICES if _available(d))
    match = _NAME.fullmatch(str(name))
    if match is None:
        raise InputError(f"unknown device {name!r}; allowed: cpu, cuda, cuda:N, mps (available here: {have})")
    base, index = match.group(1), match.group(2)
    if not _available(base):
        raise InputError(f"device {name!r} is not available on this machine; allowed here: {have}")
    if index is not None and int(index) >= _count(base):
        raise InputError(f"device {name!r} does not exist; allowed: {base}:0..{base}:{_count(base) - 1} "
                         f"(available here: {have})")
    return torch.device(name)
