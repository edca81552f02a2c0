"""Sweep grid files (TOML, read with the standard library's ``tomllib``): parse, validate fully, expand to points.

A grid file has three tables::

    [run]                      # how the sweep runs (part of every point's key)
    seed = 0                   # init i of every point is seeded by (seed, i) alone (validation/simulate.py)
    inits = 64                 # initialisations per point (--inits overrides; --thorough multiplies by 4)
    chunk = 16                 # inits per checkpointed chunk (the unit of resume and of sharding over ranks)
    # rel_se = 0.02            # optional (--rel-se): inits is then the first round, rounded up to whole chunks;
    # max_inits = 4096         # chunks are added until SE/|γ̂| <= rel_se at the output or max_inits (--max-inits)

    [fixed]                    # settings shared by every point
    width = 128
    n_data = 1024

    [axes]                     # lists: the grid is their Cartesian product
    depth = [1, 2, 4]
    activation = ["relu", "tanh"]

Point settings (in [fixed] or [axes]): the ``NetSpec`` fields ``d_in, widths, activation, a, weight_law,
sigma_w, sigma_b, pool, norm, placement, bn_batch, n_classes, srelu_shift`` (``sigma_b``: the bias sd of every
Linear, default 0; a point's key holds it only when > 0, so bias-free points keep their stored keys); the
shorthands ``width`` and ``depth`` (``widths = [width] * depth``; ``d_in`` defaults to ``width``); the data
``n_data, data_law, fresh_data``; and the ``estimator``. ``norm = "none"`` means no normalisation layer. Every
point is built as a ``NetSpec`` here, so a bad combination (e.g. batchnorm without bn_batch) is reported before any
work is done.
"""
from __future__ import annotations

import inspect
import itertools
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

from igbsym.errors import InputError
from igbsym.ops import SIGMA_W
from igbsym.spec import NORMS as NORM_NAMES

from .estimators import ESTIMATORS
from .simulate import ACTIVATIONS, DATA_LAWS, WEIGHT_LAWS, NetSpec
from .stats import MAX_INITS

RUN_KEYS = {"seed": 0, "inits": 64, "chunk": 16}
DEFAULTS = {"width": 64, "depth": 1, "n_data": 1024, "data_law": "gaussian", "fresh_data": False,
            "estimator": "moment", "activation": "relu", "a": 0.01, "weight_law": "normal", "sigma_w": SIGMA_W,
            "norm": "none", "placement": "pre", "n_classes": 2}


def _pos_int(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# key -> (test, what is allowed)
KINDS = {
    "d_in": (_pos_int, "a positive integer"),
    "width": (_pos_int, "a positive integer"),
    "depth": (_pos_int, "a positive integer (hidden layers)"),
    "widths": (lambda v: isinstance(v, list) and len(v) > 0 and all(_pos_int(w) for w in v),
               "a non-empty list of positive integers"),
    "activation": (lambda v: v in ACTIVATIONS, "one of " + ", ".join(ACTIVATIONS)),
    "a": (_number, "a finite number"),
    "weight_law": (lambda v: v in WEIGHT_LAWS, "one of " + ", ".join(WEIGHT_LAWS)),
    "sigma_w": (lambda v: _number(v) and v > 0, "a finite number > 0"),
    "sigma_b": (lambda v: _number(v) and v >= 0, "a finite number >= 0 (no norm, pool or srelu with a bias)"),
    "pool": (_pos_int, "a positive integer (max-pool kernel; 1 = no pooling)"),
    "norm": (lambda v: v in NORM_NAMES, "one of " + ", ".join(NORM_NAMES)),
    "placement": (lambda v: v in ("pre", "post"), "pre or post"),
    "bn_batch": (lambda v: _pos_int(v) and v >= 2, "an integer >= 2"),
    "n_classes": (lambda v: _pos_int(v) and v >= 2, "an integer >= 2"),
    "srelu_shift": (_number, "a finite number"),
    "n_data": (lambda v: _pos_int(v) and v >= 2, "an integer >= 2"),
    "data_law": (lambda v: v in DATA_LAWS, "one of " + ", ".join(DATA_LAWS)),
    "fresh_data": (lambda v: isinstance(v, bool), "true or false"),
    "estimator": (lambda v: v in tuple(ESTIMATORS), lambda: "one of " + ", ".join(tuple(ESTIMATORS))),
}
RUN_KINDS = {"seed": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
                      "a non-negative integer"),
             "inits": (lambda v: _pos_int(v) and v >= 2, "an integer >= 2"),
             "chunk": (_pos_int, "a positive integer"),
             "rel_se": (lambda v: _number(v) and 0 < v < 1, "a number in (0, 1)"),
             "max_inits": (lambda v: _pos_int(v) and v >= 2, "an integer >= 2 (with rel_se)")}
TABLES = ("run", "fixed", "axes")


@dataclass(frozen=True)
class Point:
    """One grid point: the canonical settings (a JSON-able dict), its NetSpec and its varying-axis values."""

    config: dict
    spec: NetSpec
    label: dict


@dataclass(frozen=True)
class Grid:
    path: Path
    run: dict
    axes: dict
    points: tuple


def _fail(path, msg):
    raise InputError(f"{path}: {msg}")


def _check(path, where, key, value, kinds):
    ok, allowed = kinds[key]
    if not ok(value):
        _fail(path, f"{where} = {value!r} is not allowed; allowed: {allowed() if callable(allowed) else allowed}")


def point_spec(config: dict) -> NetSpec:
    widths = config.get("widths") or [config["width"]] * config["depth"]
    pool = config.get("pool")
    if config["norm"] == "batchnorm" and config.get("bn_batch") is None:
        raise InputError("NetSpec: batchnorm needs an integer bn_batch >= 2 (the simulation normalises over "
                         "mini-batches of that many data points)")
    return NetSpec(d_in=config.get("d_in", widths[0]), widths=tuple(widths), activation=config["activation"],
                   a=float(config["a"]), weight_law=config["weight_law"], sigma_w=float(config["sigma_w"]),
                   pool=None if pool in (None, 1) else pool,
                   norm=None if config["norm"] == "none" else config["norm"], placement=config["placement"],
                   bn_batch=config.get("bn_batch"), n_classes=config["n_classes"],
                   srelu_shift=None if config.get("srelu_shift") is None else float(config["srelu_shift"]),
                   sigma_b=float(config.get("sigma_b", 0.0)))


def canonical(config: dict) -> dict:
    """The point's full settings with defaults filled in and shorthands resolved (what its key hashes)."""
    spec = point_spec(config)
    args = spec.args
    out = {"d_in": spec.d_in, "widths": list(spec.widths)}
    out.update({k: args[k] for k in ("activation", "a", "weight_law", "sigma_w", "pool", "norm", "placement",
                                     "bn_batch", "n_classes", "srelu_shift")})
    if args.get("sigma_b"):
        out["sigma_b"] = args["sigma_b"]
    out.update({k: config[k] for k in ("n_data", "data_law", "fresh_data", "estimator")})
    return out


NETSPEC_KEYS = tuple(inspect.signature(NetSpec).parameters)


def spec_of(config: dict) -> NetSpec:
    """The NetSpec of a canonical config (as stored in the result store)."""
    return NetSpec(**{k: (tuple(v) if k == "widths" else v) for k, v in config.items()
                      if k in NETSPEC_KEYS})


def load(path, inits: int | None = None, mode: str = "quick", rel_se: float | None = None,
         max_inits: int | None = None) -> Grid:
    """Read and validate a grid file (``inits``, ``rel_se``, ``max_inits``: the command line's overrides of [run]);
    every error is one line naming the key (or line) and what is allowed."""
    path = Path(path)
    raw = _read(path)
    run = _run_table(path, raw.get("run", {}), inits, mode, rel_se, max_inits)
    fixed, axes = raw.get("fixed", {}), raw.get("axes", {})
    _check_settings(path, fixed, axes)
    return Grid(path, run, {k: list(v) for k, v in axes.items()}, _points(path, fixed, axes))


def _read(path) -> dict:
    """The grid file's tables, each one of [run], [fixed], [axes]."""
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        _fail(path, "no such grid file")
    except (OSError, UnicodeDecodeError) as exc:
        _fail(path, f"cannot read the grid file ({exc})")
    except tomllib.TOMLDecodeError as exc:
        _fail(path, f"TOML syntax error: {exc}; allowed: TOML with the tables [run], [fixed], [axes]")
    for table in raw:
        if table not in TABLES or not isinstance(raw[table], dict):
            _fail(path, f"unknown table [{table}]; allowed tables: [run], [fixed], [axes]")
    return raw


def _run_table(path, table, inits, mode, rel_se, max_inits) -> dict:
    """[run] over its defaults, with the command line's overrides; max_inits only with rel_se, >= inits."""
    run = dict(RUN_KEYS)
    for key, value in table.items():
        if key not in RUN_KINDS:
            _fail(path, f"unknown key run.{key}; allowed: {', '.join(RUN_KINDS)}")
        _check(path, f"run.{key}", key, value, RUN_KINDS)
        run[key] = value
    if inits is not None:
        _check(path, "--inits", "inits", inits, RUN_KINDS)
        run["inits"] = inits
    elif mode == "thorough":
        run["inits"] *= 4
    for key, value in (("rel_se", rel_se), ("max_inits", max_inits)):
        if value is not None:
            _check(path, "--" + key.replace("_", "-"), key, value, RUN_KINDS)
            run[key] = value
    if run.get("rel_se") is None:
        if run.get("max_inits") is not None:
            _fail(path, "max_inits caps the rounds of rel_se; allowed: with rel_se (or --rel-se) only")
    else:
        run.setdefault("max_inits", MAX_INITS)
        if run["max_inits"] < run["inits"]:
            _fail(path, f"max_inits = {run['max_inits']} is below inits = {run['inits']}; allowed: max_inits >= "
                  "inits (the first round)")
    return run


def _check_settings(path, fixed, axes):
    """Every [fixed] setting and [axes] list valid: known keys, lists of distinct valid values, no key twice, widths
    not together with width/depth."""
    allowed = ", ".join(KINDS)
    for key, value in fixed.items():
        if key not in KINDS:
            _fail(path, f"unknown setting fixed.{key}; allowed: {allowed}")
        _check(path, f"fixed.{key}", key, value, KINDS)
    if not axes:
        _fail(path, "empty grid: no [axes] table; allowed: an [axes] table of one or more non-empty lists")
    for key, values in axes.items():
        if key not in KINDS:
            _fail(path, f"unknown axis axes.{key}; allowed: {allowed}")
        if key in fixed:
            _fail(path, f"{key} is both in [fixed] and in [axes]; allowed: one place")
        if not isinstance(values, list):
            _fail(path, f"axes.{key} = {values!r} is not allowed; allowed: a list of values")
        if not values:
            _fail(path, f"empty grid: axes.{key} is an empty list; allowed: a non-empty list of values")
        for i, v in enumerate(values):
            _check(path, f"axes.{key}[{i}]", key, v, KINDS)
        if len({repr(v) for v in values}) < len(values):
            _fail(path, f"axes.{key} repeats a value; allowed: distinct values")
    if "widths" in axes or "widths" in fixed:
        for clash in ("width", "depth"):
            if clash in axes or clash in fixed:
                _fail(path, f"both widths and {clash} are given; allowed: either widths or width/depth")


def _points(path, fixed, axes) -> tuple:
    """The grid's points (the product of the axes in file order), each built as a NetSpec; distinct."""
    names = list(axes)
    points, seen = [], set()
    for combo in itertools.product(*(axes[k] for k in names)):
        label = dict(zip(names, combo))
        config = {**DEFAULTS, **fixed, **label}
        try:
            spec = point_spec(config)
        except InputError as exc:
            _fail(path, f"point {label}: {exc}")
        if config["n_data"] % spec.batch:
            _fail(path, f"point {label}: n_data = {config['n_data']} must be a multiple of bn_batch = {spec.batch}")
        if config["fresh_data"] and config["data_law"] == "student":
            _fail(path, f"point {label}: fresh_data = true needs data_law gaussian, uniform or laplace")
        canon = canonical(config)
        ident = repr(sorted(canon.items()))
        if ident in seen:
            _fail(path, f"point {label} repeats an earlier point (the axes overlap); allowed: distinct points")
        seen.add(ident)
        points.append(Point(canon, spec, label))
    return tuple(points)
