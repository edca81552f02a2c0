"""``igbsym validate`` / ``igbsym run``: run the registered checks, print a table, write the report.

Exit status (returned): 0 if every comparison passes, 1 if any fails (a crashing check counts as a failure);
bad input (unknown family or device) raises igbsym.InputError, which the CLI prints as one line (status 2).
Torch CPU threads: ``IGBSYM_THREADS`` (default 1). The batched simulator issues many mid-sized ops, whose
OpenMP synchronisation dominates when cores are shared: on a loaded 2-core machine a 16-init simulation took
0.30 s with 1 thread and 7.1 s with 2. On an idle machine IGBSYM_THREADS=2 gains at most 2x.
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path

from igbsym import registry
from igbsym.errors import InputError


def _selected(checks, family):
    if family is None:
        return checks
    return [c for c in checks if any(f.split(".")[0] == family for f in c.forms)]


def _list(args, coverage) -> int:
    """Per form: the check that covers it and whether its mutations are caught (from the recorded meta-test,
    validation/mutation_coverage.json; nothing is simulated here)."""
    if args.json:
        print(json.dumps(coverage, indent=1))
        return 0
    width = max(len(c["name"]) for c in coverage)
    cwidth = max(len(c["check"] or "-- NO CHECK --") for c in coverage)
    for c in coverage:
        muts = " ".join(f"{k}:{'y' if v else ('-' if v is None else 'NO')}" for k, v in c["mutations"].items())
        print(f"{c['name'].ljust(width)}  {(c['check'] or '-- NO CHECK --').ljust(cwidth)}  {c['status'].ljust(12)}"
              f"  {muts}".rstrip())
    checked = sum(c["check"] is not None for c in coverage)
    caught = sum(c["caught"] for c in coverage)
    print(f"{checked}/{len(coverage)} forms have a check; {caught}/{len(coverage)} caught by the mutation meta-test "
          f"(y caught, - below the check's resolution or not applicable; record: validation/mutation_coverage.json, "
          f"refresh: python -m validation.checks --write-mutation)")
    return 0


def _crash_result(check, exc, seed):
    from .checks import Result
    return Result(check.forms[0] if check.forms else check.name, f"check {check.name} crashed: "
                  f"{type(exc).__name__}: {exc}", math.nan, math.nan, math.nan, 0, seed, passed=False)


def run(args) -> int:
    """Entry point called by igbsym.cli (args: family, device, mode, report, seed, list, json)."""
    from .checks import Context, all_checks, coverage, false_failure_rate
    family = getattr(args, "family", None)
    if family is not None and family not in registry.families():
        raise InputError(f"unknown family {family!r}; families are {', '.join(registry.families())}")
    cov = [c for c in coverage() if family is None or c["name"].split(".")[0] == family]
    if getattr(args, "list", False):
        return _list(args, cov)
    import torch
    from tqdm import tqdm

    from . import report
    from .device import resolve_device
    threads = os.environ.get("IGBSYM_THREADS", "1")
    if not threads.isdigit() or int(threads) < 1:
        raise InputError(f"IGBSYM_THREADS must be a positive integer, got {threads!r}")
    torch.set_num_threads(int(threads))
    device = resolve_device(getattr(args, "device", None))
    mode = getattr(args, "mode", None) or "quick"
    if mode not in ("quick", "thorough"):
        raise InputError(f"unknown mode {mode!r}; use --quick or --thorough")
    report_dir = Path(args.report) if getattr(args, "report", None) else None
    checks = _selected(all_checks(), family)
    bar = tqdm(checks, desc=f"validate ({mode}, {device})", file=sys.stderr, unit="check")
    ctx = Context(device=str(device), mode=mode, seed=int(args.seed), report_dir=report_dir,
                  progress=lambda msg: bar.set_postfix_str(str(msg)[:48], refresh=True))
    results, timings, t_start = [], {}, time.perf_counter()
    for check in bar:
        bar.set_postfix_str(check.name)
        t0 = time.perf_counter()
        try:
            found = check.run(ctx)
        except InputError:
            raise
        except Exception as exc:   # a crashing check is a failed check, reported, not a crash of the run
            found = [_crash_result(check, exc, ctx.seed)]
        timings[check.name] = time.perf_counter() - t0
        results += [(check.name, r) for r in found]
    bar.close()
    print(report.console_table(results))
    n_fail = sum(not r.passed for _, r in results)
    print(f"\n{len(results) - n_fail}/{len(results)} comparisons pass ({len(checks)} checks, "
          f"{time.perf_counter() - t_start:.1f} s, device {device}, mode {mode}); probability that correct forms "
          f"fail any comparison <= {false_failure_rate([r for _, r in results]):.1g} (union bound)")
    for _, r in results:
        if not r.passed:
            print("FAIL " + r.explain())
    if report_dir is not None:
        meta = dict(mode=mode, device=str(device), seed=ctx.seed, torch=torch.__version__,
                    seconds=time.perf_counter() - t_start, timings=timings, family=family)
        paths = report.write(report_dir, results, ctx.figures, meta, cov)
        print("report: " + ", ".join(str(p) for p in paths))
    return 1 if n_fail else 0
