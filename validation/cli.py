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
    return [c for c in checks if any(f.split(".")[0] == family for f in c.forms) or c.name.split(".")[0] == family]


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
          f"refresh: python -m igbsym.validation.checks --write-mutation)")
    return 0


def _crash_result(check, exc, seed):
    from .checks import Result
    return Result(check.forms[0] if check.forms else check.name, f"check {check.name} crashed: "
                  f"{type(exc).__name__}: {exc}", math.nan, math.nan, math.nan, 0, seed, passed=False)


def _run_check(check, ctx):
    """(results, (wall s, CPU s)) of one check; a crash is a failed Result (InputError propagates: bad input).
    CPU s is this process's CPU time (time.process_time): on a shared machine it is the cost, wall is the wait."""
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        found = check.run(ctx)
    except InputError:
        raise
    except Exception as exc:   # a crashing check is a failed check, reported, not a crash of the run
        found = [_crash_result(check, exc, ctx.seed)]
    return found, (time.perf_counter() - t0, time.process_time() - c0)


def _worker_init(threads: int):
    import torch
    torch.set_num_threads(threads)


def _worker(name, device, mode, seed, report_dir):
    """Run check ``name`` in a worker process: (name, results, seconds, figures) or (name, InputError)."""
    from .checks import Context, all_checks
    check = {c.name: c for c in all_checks()}[name]
    ctx = Context(device=device, mode=mode, seed=seed, report_dir=report_dir)
    try:
        found, seconds = _run_check(check, ctx)
    except InputError as exc:
        return name, exc
    return name, found, seconds, ctx.figures


def default_jobs(mode: str, threads: int, n_checks: int) -> int:
    """Worker processes when --jobs is not given: 1 in quick mode (a short run, often next to a test suite);
    in thorough mode one per usable core (os.sched_getaffinity) divided by IGBSYM_THREADS, at most the checks."""
    if mode == "quick":
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(n_checks, cores // threads))


def _finished(checks, ctx, jobs: int, threads: int, hints=None):
    """Yield (check, results, seconds) as checks finish: serially in this process (jobs = 1, ctx.progress shows
    inside-check progress), else over ``jobs`` spawned worker processes. Every check seeds itself
    (checks.seed_for), so the results do not depend on jobs or on the order in which checks finish."""
    by_name = {c.name: c for c in checks}
    if jobs <= 1 or len(checks) <= 1:
        for check in checks:
            found, seconds = _run_check(check, ctx)
            yield check, found, seconds
        return
    import multiprocessing
    pool = multiprocessing.get_context("spawn").Pool(jobs, initializer=_worker_init, initargs=(threads,))
    try:
        hints = hints or {}   # longest first (CPU s of an earlier run) balances the workers; unknown ones first
        order = sorted(checks, key=lambda c: -hints.get(c.name, math.inf))
        tasks = [(c.name, ctx.device, ctx.mode, ctx.seed, ctx.report_dir) for c in order]
        for name, *rest in pool.imap_unordered(_worker_star, tasks):
            if isinstance(rest[0], InputError):
                raise rest[0]
            found, seconds, figures = rest
            ctx.figures += figures
            yield by_name[name], found, seconds
        pool.close()
    finally:
        pool.terminate()   # an interrupted run leaves no worker behind
        pool.join()


def cost_hints(report_dir) -> dict:
    """CPU seconds per check recorded by an earlier run in ``<report_dir>/checks.jsonl`` ({} if none)."""
    try:
        rows = [json.loads(line) for line in (Path(report_dir) / "checks.jsonl").read_text().splitlines()]
        return {r["check"]: float(r["cpu_seconds"]) for r in rows}
    except (TypeError, OSError, ValueError, KeyError):
        return {}


def _worker_star(task):
    return _worker(*task)


def _sigterm_as_interrupt():
    """Treat SIGTERM like Ctrl-C while the checks run (the partial report is written, workers end); returns the
    previous handler, or None when this is not the main thread."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum, frame):
        raise KeyboardInterrupt
    return signal.signal(signal.SIGTERM, handler)


def _verdict_line(check, found, seconds, k, n) -> str:
    bad = sum(not r.passed for r in found)
    return (f"[{k}/{n}] {check.name}: {'pass' if not bad else 'FAIL'} {len(found) - bad}/{len(found)} "
            f"({seconds[0]:.1f} s wall, {seconds[1]:.1f} s CPU)")


def run(args) -> int:
    """Entry point called by igbsym.cli (args: family, device, mode, report, seed, list, json, jobs, check).

    One line per finished check on stderr (name, verdict, seconds). With --report, each finished check's results
    are appended at once to ``<report>/checks.jsonl`` (one JSON object per check), so the verdicts of finished
    checks survive an interrupted run; Ctrl-C writes the report of the finished checks (exit status 130)."""
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
    checks = select_checks(_selected(all_checks(), family), getattr(args, "check", None))
    jobs = getattr(args, "jobs", None) or default_jobs(mode, int(threads), len(checks))
    bar = tqdm(total=len(checks), desc=f"validate ({mode}, {device}, {jobs} job{'s' * (jobs > 1)})",
               file=sys.stderr, unit="check")
    ctx = Context(device=str(device), mode=mode, seed=int(args.seed), report_dir=report_dir,
                  progress=lambda msg: bar.set_postfix_str(str(msg)[:48], refresh=True))
    log, hints = None, cost_hints(report_dir)   # read before checks.jsonl is rewritten
    if report_dir is not None:
        report_dir.mkdir(parents=True, exist_ok=True)
        log = (report_dir / "checks.jsonl").open("w")
    done, timings, t_start, status = {}, {}, time.perf_counter(), None
    previous = _sigterm_as_interrupt()
    try:
        for check, found, seconds in _finished(checks, ctx, jobs, int(threads), hints):
            done[check.name], timings[check.name] = found, seconds
            bar.update(1)
            bar.write(_verdict_line(check, found, seconds, len(done), len(checks)), file=sys.stderr)
            if log is not None:
                log.write(json.dumps({"check": check.name, "seconds": seconds[0], "cpu_seconds": seconds[1],
                                      "passed": all(r.passed for r in found),
                                      "results": [r.to_dict() for r in found]}, default=str) + "\n")
                log.flush()
    except KeyboardInterrupt:
        status = 130
        print(f"\ninterrupted: {len(done)}/{len(checks)} checks finished", file=sys.stderr)
    finally:
        if previous is not None:
            import signal
            signal.signal(signal.SIGTERM, previous)
        bar.close()
        if log is not None:
            log.close()
    results = [(c.name, r) for c in checks if c.name in done for r in done[c.name]]   # registry order
    print(report.console_table(results))
    n_fail = sum(not r.passed for _, r in results)
    print(f"\n{len(results) - n_fail}/{len(results)} comparisons pass ({len(done)}/{len(checks)} checks, "
          f"{time.perf_counter() - t_start:.1f} s wall, {jobs} job{'s' * (jobs > 1)}, device {device}, mode {mode}); "
          f"probability that correct forms fail any comparison <= "
          f"{false_failure_rate([r for _, r in results]):.1g} (union bound)")
    print("\n" + timing_table(checks, done, timings))
    for _, r in results:
        if not r.passed:
            print("FAIL " + r.explain())
    if report_dir is not None:
        meta = dict(mode=mode, device=str(device), seed=ctx.seed, torch=torch.__version__,
                    seconds=time.perf_counter() - t_start, jobs=jobs, family=family,
                    timings={k: v[0] for k, v in timings.items()}, cpu_timings={k: v[1] for k, v in timings.items()},
                    finished=f"{len(done)}/{len(checks)} checks")
        paths = report.write(report_dir, results, ctx.figures, meta, cov)
        print("report: " + ", ".join(str(p) for p in paths))
    if status is not None:
        return status
    return 1 if n_fail else 0


def select_checks(checks, patterns):
    """The checks whose name starts with one of ``patterns`` (--check, comma-separated prefixes); all if None."""
    if not patterns:
        return checks
    prefixes = tuple(p.strip() for p in str(patterns).split(",") if p.strip())
    picked = [c for c in checks if c.name.startswith(prefixes)]
    if not picked:
        raise InputError(f"--check {patterns!r} matches no check; check names: {', '.join(c.name for c in checks)}")
    return picked


def timing_table(checks, done, timings) -> str:
    """Per check: verdict, comparisons passed, wall and CPU seconds (the run's summary table)."""
    width = max(len(c.name) for c in checks)
    lines = [f"{'check'.ljust(width)}  verdict  passed     wall s    CPU s", "-" * (width + 39)]
    for c in checks:
        if c.name not in done:
            lines.append(f"{c.name.ljust(width)}  not run")
            continue
        found = done[c.name]
        bad = sum(not r.passed for r in found)
        lines.append(f"{c.name.ljust(width)}  {'pass' if not bad else 'FAIL':7}  "
                     f"{f'{len(found) - bad}/{len(found)}':9}  {timings[c.name][0]:7.1f}  {timings[c.name][1]:7.1f}")
    return "\n".join(lines)
