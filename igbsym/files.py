"""Output paths checked before any work starts: one line (InputError) for a path that cannot be written."""
from __future__ import annotations

import os
from pathlib import Path

from .errors import InputError


def writable_file(path: str, option: str) -> Path:
    """Check, before any work, that ``path`` can be written as a file (its nearest existing ancestor is a
    writable directory); one-line InputError otherwise."""
    target = Path(path)
    if not path or target.is_dir():
        raise InputError(f"{option} {path!r} is a directory or empty; allowed: a file path")
    writable_dir(str(target.parent), option, what=f"the folder of {path!r}")
    return target


def writable_dir(path: str, option: str, what: str | None = None) -> Path:
    """Check, before any work, that ``path`` is (or can be created as) a writable directory."""
    what = what or repr(path)
    if not path or "\0" in path:
        raise InputError(f"{option} {path!r} is not allowed; allowed: a directory path")
    target = Path(path)
    probe = target
    while not probe.exists():
        if probe.is_symlink() or probe.parent == probe:
            raise InputError(f"{option}: {what} cannot be created; allowed: a path under an existing directory")
        probe = probe.parent
    if not probe.is_dir():
        raise InputError(f"{option}: {what} cannot be a directory because {str(probe)!r} is a file; allowed: a "
                         "path whose existing parts are directories")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise InputError(f"{option}: {what} is not writable ({str(probe)!r} denies it); allowed: a writable "
                         "directory")
    return target


def write_text(path: Path, text: str, option: str):
    """Write a result file; an OS refusal becomes one line (the path was checked, but the disk may still say no)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError as exc:
        raise InputError(f"{option}: cannot write {str(path)!r} ({exc.strerror or exc}); allowed: a writable "
                         "file path") from None
