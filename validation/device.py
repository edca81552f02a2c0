"""Device choice: cuda when available, then mps, else cpu; an explicit name must be available."""
from __future__ import annotations

import torch

from igbsym.errors import InputError

DEVICES = ("cpu", "cuda", "mps")


def _available(name: str) -> bool:
    if name == "cuda":
        return torch.cuda.is_available()
    if name == "mps":
        return bool(getattr(torch.backends, "mps", None)) and torch.backends.mps.is_available()
    return name == "cpu"


def resolve_device(name=None) -> torch.device:
    """``None`` → best available (cuda, mps, cpu); otherwise the named device, which must exist here."""
    if isinstance(name, torch.device):
        name = str(name)
    if name is None:
        return torch.device(next(d for d in ("cuda", "mps", "cpu") if _available(d)))
    base = str(name).split(":")[0]
    if base not in DEVICES:
        raise InputError(f"unknown device {name!r}; devices are cpu, cuda, mps")
    if not _available(base):
        have = ", ".join(d for d in DEVICES if _available(d))
        raise InputError(f"device {name!r} is not available on this machine; available: {have}")
    return torch.device(name)
