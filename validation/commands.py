"""``igbsym validate`` and ``igbsym run`` (the main job), dispatched by name from igbsym/cli.py.

Every argument is checked here before any long work starts (no derivation, no simulation), so bad input gives
one line and exit status 2 at once: the family, the device (validation/device.py), the report folder, the
thread count. The work itself is validation/cli.py (checks, table, report) and derivations/cli.py (derive).
"""
from __future__ import annotations

import os
from pathlib import Path

from igbsym import registry
from igbsym.files import writable_dir
from igbsym.errors import InputError

MODES = ("quick", "thorough")


def check_arguments(args):
    """Raise InputError (one line: what is wrong, what is allowed) for any bad argument of validate/run."""
    family = getattr(args, "family", None)
    if family is not None and family not in registry.families():
        raise InputError(f"unknown family {family!r}; allowed: {', '.join(registry.families())}")
    mode = getattr(args, "mode", None) or "quick"
    if mode not in MODES:
        raise InputError(f"unknown mode {mode!r}; allowed: --quick, --thorough")
    threads = os.environ.get("IGBSYM_THREADS", "1")
    if not threads.isdigit() or not 1 <= int(threads) <= 1024:
        raise InputError(f"IGBSYM_THREADS={threads!r} is not allowed; allowed: an integer 1..1024")
    if getattr(args, "report", None) is not None:
        writable_dir(args.report, "--report")
    if getattr(args, "check", None):
        from .checks import all_checks
        from .cli import select_checks
        select_checks(all_checks(), args.check)
    if not getattr(args, "list", False) or getattr(args, "device", None) is not None:
        from .device import resolve_device
        resolve_device(getattr(args, "device", None))


def validate(args) -> int:
    from . import cli
    check_arguments(args)
    return cli.run(args)


def run(args) -> int:
    """The main job: derive every family, validate (quick by default), write the report."""
    from igbsym.derivations import cli as derive_cli

    from . import cli
    check_arguments(args)
    derive_cli.write("all", str(Path(args.report) / "derivations"))
    return cli.run(args)
