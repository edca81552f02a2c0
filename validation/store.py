"""The sweep result store: one SQLite file (stdlib ``sqlite3``, WAL mode), safe to resume and to share.

Tables
------
``points``  one row per point, keyed by ``point_key`` = SHA-256 of (canonical point config, seed, inits, chunk,
            estimator, igbsym version; with --rel-se the target and the first round, inits being the cap).
            ``result`` (JSON) is filled once every chunk is in (with --rel-se: once the target is met or the cap
            reached).
``chunks``  the checkpoint: per chunk of inits, the per-init estimator units (float64, [n, F] row-major bytes).
            Primary key (point, idx) with ``INSERT OR IGNORE``: a chunk written twice (a resumed run, two
            concurrent sweeps) is stored once, and both copies are bit-identical because init i is seeded by
            (seed, i) alone.
``runs``    one row per invocation: how many chunks it computed and how many it found checkpointed.

Concurrency: WAL journal (readers never block the writer), a 60 s busy timeout, and every write is one short
``BEGIN IMMEDIATE`` transaction, so two sweeps on one file serialise their writes and never corrupt it.
``synchronous = NORMAL`` (the WAL default recommendation): a killed process loses no committed transaction; only an
OS crash or power cut can drop the last few commits, which a re-run recomputes.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from pathlib import Path

import numpy as np

import igbsym
from igbsym.errors import InputError

SCHEMA = """
CREATE TABLE IF NOT EXISTS points (
    key TEXT PRIMARY KEY, config TEXT NOT NULL, label TEXT NOT NULL, seed INTEGER NOT NULL,
    inits INTEGER NOT NULL, chunk INTEGER NOT NULL, estimator TEXT NOT NULL, version TEXT NOT NULL,
    created REAL NOT NULL, result TEXT);
CREATE TABLE IF NOT EXISTS chunks (
    point TEXT NOT NULL REFERENCES points(key), idx INTEGER NOT NULL, first_init INTEGER NOT NULL,
    n INTEGER NOT NULL, fields TEXT NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY (point, idx));
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, started REAL NOT NULL, finished REAL, grid TEXT, ranks INTEGER,
    points INTEGER, points_done_before INTEGER, chunks_computed INTEGER DEFAULT 0,
    chunks_reused INTEGER DEFAULT 0, comm_seconds REAL, cpu_seconds REAL);
"""


def point_key(config: dict, seed: int, inits: int, chunk: int, rel_se: float | None = None,
              first: int | None = None) -> str:
    """SHA-256 of the point's full identity (config includes the estimator; the igbsym version is added). With a
    target SE ``rel_se`` (validation/sweep.py), ``inits`` is the cap and ``first`` the first round: both decide
    which inits the point ends with."""
    ident = {"config": config, "seed": seed, "inits": inits, "chunk": chunk, "estimator": config["estimator"],
             "version": igbsym.__version__}
    if rel_se is not None:
        ident["rel_se"] = {"target": rel_se, "first": first}
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()


class Store:
    """A handle on one store file (create it on first open)."""

    def __init__(self, path, create: bool = True):
        self.path = Path(path)
        if not create and not self.path.exists():
            raise InputError(f"{self.path}: no such sweep database")
        self.db = sqlite3.connect(str(self.path), timeout=60.0, isolation_level=None)
        deadline, attempt = time.monotonic() + 60.0, 0
        while True:
            try:
                self._setup(create)
                return
            except sqlite3.OperationalError as exc:
                # two processes opening a new store at once: switching it to WAL takes an exclusive lock for which
                # SQLite does not wait (busy_timeout is not consulted), so "database is locked" is retried here
                if "locked" in str(exc) and time.monotonic() < deadline:
                    time.sleep(min(0.01 * 2 ** attempt, 0.5))
                    attempt += 1
                    continue
                self._not_a_store(exc)
            except sqlite3.DatabaseError as exc:
                self._not_a_store(exc)

    def _setup(self, create: bool):
        self.db.execute("PRAGMA busy_timeout = 60000")
        self.db.execute("PRAGMA synchronous = NORMAL")   # with WAL: a killed process loses no commit
        if create:
            self.db.execute("PRAGMA journal_mode = WAL")
            with self.write():
                for stmt in SCHEMA.split(";"):
                    if stmt.strip():
                        self.db.execute(stmt)
        self.db.execute("SELECT key FROM points LIMIT 1").fetchall()

    def _not_a_store(self, exc):
        self.db.close()
        raise InputError(f"{self.path} is not a sweep database ({exc}); allowed: a file written by "
                         "igbsym sweep, or a new path") from None

    def write(self):
        """A context manager: one BEGIN IMMEDIATE … COMMIT transaction (rolled back on error)."""
        db = self.db

        class _Tx:
            def __enter__(self):
                db.execute("BEGIN IMMEDIATE")
                return db

            def __exit__(self, kind, *_):
                db.execute("COMMIT" if kind is None else "ROLLBACK")
        return _Tx()

    def close(self):
        self.db.close()

    # ------------------------------------------------------------------ points and chunks
    def add_point(self, key, config, label, seed, inits, chunk):
        with self.write() as db:
            db.execute("INSERT OR IGNORE INTO points VALUES (?,?,?,?,?,?,?,?,?,NULL)",
                       (key, json.dumps(config, sort_keys=True), json.dumps(label), seed, inits, chunk,
                        config["estimator"], igbsym.__version__, time.time()))

    def state(self, key) -> tuple:
        """(finished?, the set of checkpointed chunk indices) of a point."""
        row = self.db.execute("SELECT result FROM points WHERE key = ?", (key,)).fetchone()
        done = {r[0] for r in self.db.execute("SELECT idx FROM chunks WHERE point = ?", (key,))}
        return row is not None and row[0] is not None, done

    def put_chunks(self, chunks) -> int:
        """Checkpoint chunks [(point key, idx, first_init, units [n, F], fields)] in one transaction; returns how
        many were new (a chunk already stored is left as it is)."""
        new = 0
        with self.write() as db:
            for key, idx, first_init, units, fields in chunks:
                units = np.ascontiguousarray(units, dtype="<f8")
                new += db.execute("INSERT OR IGNORE INTO chunks VALUES (?,?,?,?,?,?)",
                                  (key, idx, first_init, units.shape[0], json.dumps(fields),
                                   units.tobytes())).rowcount
        return new

    def units(self, key) -> tuple:
        """All checkpointed units of a point, ordered by init: (fields, [n_inits, F] float64, first inits)."""
        rows = self.db.execute("SELECT first_init, n, fields, data FROM chunks WHERE point = ? ORDER BY first_init",
                               (key,)).fetchall()
        if not rows:
            return [], np.zeros((0, 0)), []
        fields = json.loads(rows[0][2])
        data = np.concatenate([np.frombuffer(r[3], dtype="<f8").reshape(r[1], len(fields)) for r in rows])
        return fields, data, [r[0] for r in rows]

    def finish(self, key, result: dict):
        with self.write() as db:
            db.execute("UPDATE points SET result = ? WHERE key = ? AND result IS NULL",
                       (json.dumps(result, sort_keys=True), key))

    def points(self) -> list:
        """Every point as a dict: key, config, label, seed, inits, chunk, estimator, version, result, chunks."""
        cols = ("key", "config", "label", "seed", "inits", "chunk", "estimator", "version", "created", "result")
        out = []
        for row in self.db.execute(f"SELECT {', '.join(cols)} FROM points ORDER BY created, key"):
            d = dict(zip(cols, row))
            d["config"], d["label"] = json.loads(d["config"]), json.loads(d["label"])
            d["result"] = json.loads(d["result"]) if d["result"] else None
            d["chunks"] = self.db.execute("SELECT COUNT(*) FROM chunks WHERE point = ?", (d["key"],)).fetchone()[0]
            out.append(d)
        return out

    # ------------------------------------------------------------------ runs
    def start_run(self, grid, ranks, n_points, n_done) -> int:
        with self.write() as db:
            cur = db.execute("INSERT INTO runs (started, grid, ranks, points, points_done_before) VALUES "
                             "(?,?,?,?,?)", (time.time(), str(grid), ranks, n_points, n_done))
        return cur.lastrowid

    def count_run(self, run_id, computed=0, reused=0):
        with self.write() as db:
            db.execute("UPDATE runs SET chunks_computed = chunks_computed + ?, chunks_reused = chunks_reused + ? "
                       "WHERE id = ?", (computed, reused, run_id))

    def end_run(self, run_id, comm_seconds=0.0, cpu_seconds=None):
        """Mark a run finished; rank 0's time in collectives (waits for other ranks included) and CPU time."""
        with self.write() as db:
            db.execute("UPDATE runs SET finished = ?, comm_seconds = ?, cpu_seconds = ? WHERE id = ?",
                       (time.time(), comm_seconds, cpu_seconds, run_id))

    def runs(self) -> list:
        cols = ("id", "started", "finished", "grid", "ranks", "points", "points_done_before", "chunks_computed",
                "chunks_reused", "comm_seconds", "cpu_seconds")
        return [dict(zip(cols, r)) for r in self.db.execute(f"SELECT {', '.join(cols)} FROM runs ORDER BY id")]
