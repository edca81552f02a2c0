"""``igbsym sweep GRID.toml`` / ``igbsym sweep show DB``: grids of simulated MLPs, sharded, checkpointed, resumable.

A point (validation/grid.py) is a ``NetSpec`` + data settings + an estimator. Its inits are cut into chunks of
``run.chunk`` consecutive indices; chunk c holds inits [c·chunk, (c+1)·chunk). A chunk is simulated with
``simulate(spec, n, first_init=c·chunk)`` (init i seeded by (seed, i) alone) and reduced to per-init estimator
units (``ESTIMATORS``): float64 rows whose sums over inits are everything the estimates need (γ̂ = Σa/Σb, the
delta-method SE from the paired units, the G0 law test from the per-init G0). The chunk is the unit of work,
of checkpointing (validation/store.py) and of sharding.

Distributed (``torchrun --nproc_per_node=K -m igbsym sweep GRID.toml``; WORLD_SIZE > 1 in the environment): the
process group is initialised from env:// (gloo on CPU, nccl on CUDA). For every point rank 0 reads which chunks are
checkpointed and broadcasts the list; the missing chunks are dealt to the ranks in rounds of K (chunk
todo[r·K + rank] to rank ``rank``); each round all-reduces (SUM, float64) a zero-filled [K, chunk, F] buffer in
which every rank wrote only its own slot, so the sum is exact (x + 0 = x) and rank 0 — the only writer — stores
the K chunks bit-identical to a single-process run. The chunk boundaries do not depend on K, so every init is
simulated in the same batch as in a single-process run and γ̂ agrees to the last bit.

Target SE (``--rel-se R [--max-inits M]`` or ``rel_se``/``max_inits`` in [run]; ``Plan``): ``inits`` is the first
round, rounded up to whole chunks; every point then grows by whole chunks (``stats.next_round``: to 1.1 × n ×
(achieved/R)² inits, the same rule as ``igbsym probe --rel-se`` and ``estimate_gamma``) until its output γ̂ has
SE/|γ̂| <= R (the SE <= R once γ̂ is 0 within 2 SE) or M inits (default ``stats.MAX_INITS``). Each round is decided
from the stored units alone, never from timing, so resumed runs, ranks and concurrent writers end every point with
the same inits and bit-identical results; the key hashes R, the first round and M (as ``inits``). The result adds
rel_se, rel_se_achieved, rel_se_kind, target_met and max_inits (``summarise``); unmet points are named in one line.

Predictions: ``igbsym.predict.predict`` (the registered ``depth.gamma`` path per layer, ``bn.gamma_canonical``
under BatchNorm, ``maxpool.gamma`` with pooling) for Gaussian data and Gaussian weights, the infinite-width
limit: z = (γ̂ − γ)/SE also contains the O(1/width) finite-size bias, so it is reported, not judged. The judged column
is the finite-width one (issue 47): pred_N ± se_N the exact chain at the point's own widths (``validation.chain``:
every width and depth, norms in either place, BatchNorm, pooling; run to a third of the point's SE),
z_N = (γ̂ − pred_N)/√(SE² + se_N²) and verdict 'pass' where |z_N| <= 5 (igbsym.engine.finite.verdict), 'fail'
otherwise, None where the chain does not apply (non-Gaussian weights or data). A shared dataset (not fresh_data)
makes γ̂ conditional on it: an O(1/(D√d)) difference from the population value the chain gives."""
from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

import numpy as np

from igbsym.errors import InputError, NumericalError

from . import grid as gridmod
from .estimators import ESTIMATORS, unit_fields
from .store import Store, point_key

CHAIN_SEED = 47          # the exact chain's seed (independent of the sweep's inits)
CHAIN_REL_MIN = 1e-3     # the chain runs to a third of the point's SE, at most this fine relative to γ̂
CHAIN_REL_MAX = 0.05     # its relative target where the point gives none (γ̂ = 0 with SE 0)


# --------------------------------------------------------------------------------------------- estimators


def simulate_chunk(spec, config, seed, first, n, device) -> np.ndarray:
    """The units of inits first … first + n − 1 of one point."""
    from .simulate import simulate
    res = simulate(spec, n, n_data=config["n_data"], seed=seed, device=device, first_init=first,
                   layer_stats=("pre",) if len(spec.widths) > 1 else False, data_law=config["data_law"],
                   fresh_data=config["fresh_data"])
    return ESTIMATORS[config["estimator"]](res)


# --------------------------------------------------------------------------------------------- results
def chain_target(est) -> float | None:
    """The chain's absolute target SE for a point whose output γ̂ ± SE is ``est``: a third of that SE (it then adds
    at most 5.4 % to the SE its z is judged by), whatever the size of γ̂ (a relative target chased nothing where γ
    is tiny: LayerNorm after φ, γ ≈ 0.004, stopped at SE 0.004), at most ``CHAIN_REL_MIN`` × |γ̂| fine; None where
    γ̂ and its SE are both 0 (the chain then runs to ``CHAIN_REL_MAX`` relative, its SE reported with it)."""
    target = max(est.se / 3, CHAIN_REL_MIN * abs(est.value))
    return target if target > 0 and math.isfinite(target) else None


def finite_prediction(config, rel_se: float = 0.01, abs_se: float | None = None) -> list | None:
    """Per hidden layer (pred_N, its SE) of the exact chain at the point's own widths (``validation.chain``, to
    relative SE ``rel_se`` at the output, or absolute SE ``abs_se``; BatchNorm's within-batch pairs weighted for its
    ``n_data`` points), or None where the chain does not apply (non-Gaussian weights or data)."""
    if config["weight_law"] != "normal" or config["data_law"] != "gaussian":
        return None
    from .estimate import estimate_gamma
    spec = gridmod.point_spec(config)
    est = estimate_gamma(spec, rel_se, seed=CHAIN_SEED, estimator="exact-chain",
                         n_data=config["n_data"] if spec.batch > 1 else None, abs_se=abs_se)
    return [(e.value, e.se) for e in est.layers]


def prediction(config) -> tuple:
    """(γ after each hidden layer, the forms used) from the registered forms, or (None, reason)."""
    if config["weight_law"] != "normal" or config["data_law"] != "gaussian" or config["srelu_shift"] is not None:
        return None, "no registered form for non-Gaussian weights/data or a custom srelu shift"
    from igbsym.predict import predict
    try:
        res = predict(gridmod.point_spec(config)).to_dict()
    except InputError as exc:
        return None, str(exc)
    forms = "maxpool.gamma" if (config["pool"] or 1) > 1 else "depth.gamma" + (
        " + bn.gamma_canonical" if config["norm"] == "batchnorm" else "")
    return [r["gamma"] for r in res["layers"]], forms


def summarise(config, seed, fields, units, precision=None, cap=None) -> dict:
    """γ̂ ± SE per layer and at the output, the prediction and z, and the G0 law test (KS vs igb.cdf); with a
    target SE (``precision``: the ``stats.Precision`` the point stopped at, ``cap``: max_inits) also rel_se (the
    target), rel_se_achieved, rel_se_kind ('relative', or 'absolute' where γ̂ was 0 within 2 SE), target_met and
    max_inits; ``inits`` is always the count used."""
    import igbsym
    from igbsym.engine import finite
    from .stats import jitter_g0, ks_test, ratio_estimate
    depth, n = len(config["widths"]), units.shape[0]
    col = {f: units[:, i] for i, f in enumerate(fields)}
    pred, source = prediction(config)
    ests = [ratio_estimate(col[f"a{l}"], col[f"b{l}"], "delta") for l in range(1, depth + 1)]
    fin = finite_prediction(config, CHAIN_REL_MAX, abs_se=chain_target(ests[-1]))
    layers = []
    for l, est in enumerate(ests, 1):
        p = pred[l - 1] if pred is not None else None
        z = (est.value - p) / est.se if p is not None and est.se > 0 else None
        row = {"layer": l, "gamma": est.value, "se": est.se, "pred": p, "z": z, "pred_N": None, "z_N": None,
               "verdict": None}
        if fin is not None:
            p_n, se_n = fin[l - 1]
            both = math.hypot(est.se, se_n)
            row.update(pred_N=p_n, se_N=se_n, z_N=(est.value - p_n) / both if both > 0 else None)
            row["verdict"] = finite.verdict(est.value, both, p_n, 0.0, True)
        layers.append(row)
    out = dict(layers[-1])
    del out["layer"]
    g0 = col["g0"]
    out.update(inits=n, layers=layers, source=source, g0_mean=float(g0.mean()), g0_sd=float(g0.std(ddof=1)),
               ks_stat=None, ks_p=None)
    if precision is not None:
        out.update(rel_se=precision.rel_se, rel_se_achieved=precision.achieved, rel_se_kind=precision.target,
                   target_met=precision.met, max_inits=cap)
    if pred is not None and config["n_classes"] == 2 and pred[-1] > 0:
        cdf = igbsym.get("igb.cdf")
        stat, p = ks_test(jitter_g0(g0, config["n_data"], seed), lambda x: cdf.numpy(g=np.clip(x, 0, 1),
                                                                                      gamma=pred[-1]))
        out.update(ks_stat=stat, ks_p=p)
    for row in [out, *layers]:   # never a silent NaN or inf in the store
        for k, v in row.items():
            if isinstance(v, float) and not math.isfinite(v):
                raise NumericalError(f"sweep: {k} = {v} (layer {row.get('layer', depth)}) for point {config}")
    return out


# --------------------------------------------------------------------------------------------- distributed
class Comm:
    """torch.distributed when launched by torchrun (WORLD_SIZE > 1), else a single process."""

    def __init__(self, device):
        import torch
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.device = device
        self.buffer_device = torch.device("cpu")   # gloo reduces CPU tensors; nccl CUDA ones
        self.dist = None
        if self.world > 1:
            import torch.distributed as dist
            backend = "nccl" if device.type == "cuda" else "gloo"
            if device.type == "cuda":
                self.device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
                torch.cuda.set_device(self.device)
                self.buffer_device = self.device
            dist.init_process_group(backend, init_method="env://")
            self.dist = dist
        self.seconds = 0.0      # time spent in collectives

    def bcast(self, obj):
        if self.dist is None:
            return obj
        t0 = time.perf_counter()
        box = [obj]
        self.dist.broadcast_object_list(box, src=0)
        self.seconds += time.perf_counter() - t0
        return box[0]

    def gather_units(self, mine, slot_rows, n_fields) -> np.ndarray:
        """All ranks' chunk units [K, rows, F]: a float64 all-reduce of zero-padded slots (exact)."""
        import torch
        if self.dist is None:
            return mine[None]
        buf = torch.zeros((self.world, slot_rows, n_fields), dtype=torch.float64, device=self.buffer_device)
        if mine is not None:
            buf[self.rank, :mine.shape[0], :mine.shape[1]] = torch.from_numpy(mine).to(self.buffer_device)
        t0 = time.perf_counter()
        self.dist.all_reduce(buf, op=self.dist.ReduceOp.SUM)
        self.seconds += time.perf_counter() - t0
        return buf.cpu().numpy()

    def close(self):
        if self.dist is not None:
            self.dist.destroy_process_group()


# --------------------------------------------------------------------------------------------- the run
def default_db(grid_path) -> Path:
    return Path(grid_path).resolve().parent / "sweep.db"


class Plan:
    """How far each point runs: a fixed ``inits``, or with ``rel_se`` rounds of whole chunks from ``first`` (the
    grid's inits rounded up to whole chunks) to ``cap`` (max_inits), each sized by ``stats.next_round`` from the
    output layer's γ̂ of the stored units. A plan reads only stored units, so a resumed run or a second writer
    replays the same rounds and ends every point with the same inits."""

    def __init__(self, run: dict):
        self.seed, self.chunk, self.rel_se = run["seed"], run["chunk"], run.get("rel_se")
        self.cap = run["inits"] if self.rel_se is None else run["max_inits"]
        self.first = self.cap if self.rel_se is None else min(self.cap, self.chunk * -(-run["inits"] // self.chunk))

    def key(self, config) -> str:
        return point_key(config, self.seed, self.cap, self.chunk, self.rel_se,
                         None if self.rel_se is None else self.first)

    def rows(self, c) -> int:
        return min(self.chunk, self.cap - c * self.chunk)

    def chunks(self, n) -> range:
        return range(-(-n // self.chunk))

    def step(self, have, units, fields):
        """(n, precision): the inits the point runs to next and, once chunks 0 … of n are all in ``have`` and the
        point is finished there, its Precision (None for a fixed count; False while chunks are missing).
        ``units()`` reads the point's stored units (ordered by init)."""
        n = self.first
        if not set(self.chunks(n)) <= have:
            return n, False
        if self.rel_se is None:
            return n, None
        from .stats import absolute_target, next_round, ratio_estimate
        data = units()
        a, b = fields.index(f"a{(len(fields) - 1) // 2}"), fields.index(f"b{(len(fields) - 1) // 2}")
        absolute = None
        while True:
            est = ratio_estimate(data[:n, a], data[:n, b])
            absolute = absolute_target(est, absolute)
            p = next_round(est, n, self.rel_se, self.cap, absolute, self.chunk)
            if p.next is None:
                return n, p
            n = p.next
            if not set(self.chunks(n)) <= have:
                return n, False


def run_grid(grid, db_path, device, comm, progress=True) -> dict:
    """Simulate every unfinished point of ``grid`` into the store; returns the run summary (rank 0).

    The work list is every missing (point, chunk) pair of each point's current round (``Plan``) in grid order; it is
    dealt to the ranks in rounds of K (one chunk per rank per round), so K ranks stay busy even when a point has
    fewer than K chunks. After each round rank 0 stores the round's chunks in one transaction and, for every point
    whose chunks are all in, finishes it or (with rel_se) puts its next round's chunks on the next work list, which
    it broadcasts.
    """
    plan = Plan(grid.run)
    seed = plan.seed
    lead = comm.rank == 0
    store = Store(db_path) if lead else None
    keys = [plan.key(p.config) for p in grid.points]
    fields = [unit_fields(len(p.spec.widths)) for p in grid.points]
    width = max(len(f) for f in fields)
    have, open_points, run_id = _open_points(store, grid, plan, keys, comm.world) if lead else ({}, [], None)
    n_open = comm.bcast(len(open_points))
    t_start, cpu_start = time.perf_counter(), time.process_time()
    bar_points, bar_inits = _bars(plan, len(keys), n_open, not (lead and progress))

    def advance(i):
        """Rank 0: finish point i, or the missing chunks of its current round."""
        n, prec = plan.step(have[i], lambda: store.units(keys[i])[1], fields[i])
        if prec is False:
            return [(i, c) for c in plan.chunks(n) if c not in have[i]]
        got, data, _ = store.units(keys[i])
        if data.shape[0] < n or got != fields[i] or (prec is None and data.shape[0] != n):
            raise RuntimeError(f"sweep: store {db_path} holds {data.shape[0]} of {n} inits of point {keys[i]}")
        store.finish(keys[i], summarise(grid.points[i].config, seed, fields[i], data[:n], prec, plan.cap))
        bar_points.update()
        return []

    work, computed, reused = [], 0, sum(len(h) for h in have.values())
    if lead:
        bar_inits.update(sum(plan.rows(c) for h in have.values() for c in h)
                         + (plan.cap * (len(keys) - len(open_points)) if plan.rel_se is None else 0))
        if reused:
            store.count_run(run_id, reused=reused)
        for i in open_points:      # a point with all chunks in (killed before its summary) is finished here
            work += advance(i)
    while True:
        work = comm.bcast(work)
        if not work:
            break
        missing = {}
        for i, _ in work:
            missing[i] = missing.get(i, 0) + 1
        following = []
        for r0 in range(0, len(work), comm.world):
            batch = work[r0:r0 + comm.world]
            units = _round_units(batch, grid, plan, comm, width, bar_points)
            computed += len(batch)
            bar_inits.update(sum(plan.rows(c) for _, c in batch))
            if not lead:
                continue
            store.put_chunks([(keys[i], c, c * plan.chunk, units[j, :plan.rows(c), :len(fields[i])], fields[i])
                              for j, (i, c) in enumerate(batch)])
            store.count_run(run_id, computed=len(batch))
            for i, c in batch:
                have[i].add(c)
                missing[i] -= 1
                if missing[i] == 0:
                    following += advance(i)
        work = following
    bar_inits.close()
    bar_points.close()
    if not lead:
        return {}
    store.end_run(run_id, comm.seconds, time.process_time() - cpu_start)
    store.close()
    return {"db": str(db_path), "points": len(keys), "points_done_before": len(keys) - len(open_points),
            "chunks_computed": computed, "chunks_reused": reused, "ranks": comm.world,
            "seconds": time.perf_counter() - t_start, "collective_seconds": comm.seconds, "run_id": run_id}


def _open_points(store, grid, plan, keys, ranks) -> tuple:
    """Rank 0: registers the points and the run; (stored chunks per unfinished point, the unfinished points in
    grid order, the run's id)."""
    for key, p in zip(keys, grid.points):
        store.add_point(key, p.config, p.label, plan.seed, plan.cap, plan.chunk)
    states = [store.state(k) for k in keys]
    run_id = store.start_run(grid.path, ranks, len(keys), sum(done for done, _ in states))
    open_points = [i for i, (done, _) in enumerate(states) if not done]
    return {i: set(states[i][1]) for i in open_points}, open_points, run_id


def _bars(plan, n_points, n_open, quiet) -> tuple:
    """The progress bars (on stderr) of points finished and of inits run."""
    from tqdm import tqdm
    bar_points = tqdm(total=n_points, initial=n_points - n_open, desc="sweep points", unit="point",
                      file=sys.stderr, disable=quiet)
    bar_inits = tqdm(total=None if plan.rel_se is not None else plan.cap * n_points, desc="inits", unit="init",
                     file=sys.stderr, disable=quiet, leave=False)
    return bar_points, bar_inits


def _round_units(batch, grid, plan, comm, width, bar_points):
    """One round: rank r simulates the r-th (point, chunk) of ``batch`` (if any); every rank's units, gathered."""
    mine = None
    if comm.rank < len(batch):
        i, c = batch[comm.rank]
        p = grid.points[i]
        bar_points.set_postfix_str(" ".join(f"{k}={v}" for k, v in p.label.items())[:60])
        mine = simulate_chunk(p.spec, p.config, plan.seed, c * plan.chunk, plan.rows(c), comm.device)
    return comm.gather_units(mine, plan.chunk, width)


def cmd_run(args) -> int:
    """``igbsym sweep GRID.toml [--db FILE] [--inits N] [--rel-se R [--max-inits M]] [--quick|--thorough]
    [--device D]``."""
    if args.format is not None or args.plot is not None or args.db_pos is not None:
        raise InputError("sweep: --format, --plot and a second positional belong to 'igbsym sweep show DB'")
    grid = gridmod.load(args.target, inits=args.inits, mode=args.mode or "quick",   # validates everything
                        rel_se=args.rel_se, max_inits=args.max_inits)
    db = Path(args.db) if args.db else default_db(args.target)
    if db.exists() and db.is_dir():
        raise InputError(f"sweep: --db {db} is a directory; allowed: a file path")
    if not db.parent.is_dir():
        raise InputError(f"sweep: --db {db}: directory {db.parent} does not exist")
    import torch
    from .device import resolve_device
    threads = os.environ.get("IGBSYM_THREADS", "1")
    if not threads.isdigit() or int(threads) < 1:
        raise InputError(f"IGBSYM_THREADS must be a positive integer, got {threads!r}")
    torch.set_num_threads(int(threads))
    device = resolve_device(args.device)
    comm = Comm(device)
    try:
        summary = run_grid(grid, db, comm.device, comm)
    finally:
        comm.close()
    if comm.rank == 0:
        print(f"sweep: {summary['points']} points ({summary['points_done_before']} already done), "
              f"{summary['chunks_computed']} chunks computed, {summary['chunks_reused']} reused from checkpoints, "
              f"{summary['ranks']} rank(s), {summary['seconds']:.1f} s -> {summary['db']}")
        keys = {Plan(grid.run).key(p.config) for p in grid.points}
        from .sweep_show import table
        store = Store(db, create=False)
        points = [p for p in store.points() if p["key"] in keys]
        print(table(points))
        store.close()
        unmet = [p["key"][:10] for p in points if (p["result"] or {}).get("target_met") is False]
        if unmet:
            print(f"sweep: {len(unmet)} point(s) reached max_inits = {grid.run['max_inits']} before SE/gamma <= "
                  f"{grid.run['rel_se']:g} (target_met False): {', '.join(unmet)}")
    return 0


def main(args) -> int:
    """Dispatch of the ``sweep`` subcommand (args from igbsym.cli)."""
    if args.target == "show":
        from .sweep_show import cmd_show
        return cmd_show(args)
    return cmd_run(args)
