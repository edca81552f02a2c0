"""The ``igbsym`` command line: the argument parser and the commands over the registry.

The CLI contract (relied on by scripts): ``list [--json]``, ``show NAME``, ``eval NAME k=v ... [--dps N]
[--json] [--bound]``, ``latex NAME`` / ``latex --all -o FILE.tex``, ``derive FAMILY``, ``validate [--family F]
[--device D] [--quick|--thorough] [--report DIR] [--list [--json]]``, ``predict ...``, ``sweep GRID.toml [--db FILE]
[--inits N] [--quick|--thorough] [--device D]``, ``sweep show DB [--format table|csv|json] [--plot DIR]``,
``train --model M --data D --inits N --steps S [--lr LR] [--optimizer sgd|adam] [--batch-size B] [--classes C]
[--zero-bias] [--seed S] [--report DIR] [--json]``, ``phase --activation A [--depth L] [--norm N [--placement P]]
[--json] [--plot FILE]``.
Bad input prints one line saying what is wrong and what is allowed, and exits 2.

The core package never imports ``derivations`` or ``validation`` (docs/ARCHITECTURE.md): ``derive``, ``validate`` and
``run``
are dispatched by name ("module:function", imported at dispatch time) to ``igbsym.derivations.cli``,
``igbsym.validation.commands``, ``igbsym.validation.sweep`` and ``igbsym.validation.probe``, which check every argument
before any long work starts.
"""
from __future__ import annotations

import argparse
import importlib
import json
import re
import sys

import mpmath
import numpy as np

from . import registry
from .errors import InputError, NumericalError
from .files import writable_file, write_text
from .latex import document


DPS_MIN, DPS_MAX = 5, 1000   # closed forms: 1000 digits take < 1 s for every registered expression
DPS_MAX_NUMERIC = 100        # numeric routes (mpmath.quad): 100 digits take up to ~10 s, 200 digits a minute
SEED_MAX = 2**63 - 1
EXTRAS = {"torch": "validation", "matplotlib": "validation", "tqdm": "validation"}  # optional module -> extra


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        if "allowed:" not in message and "choose from" not in message:
            message += "; allowed: " + " ".join(self.format_usage().split()).removeprefix("usage: ")
        raise InputError(f"{self.prog}: {message}")


def _int_range(option: str, lo: int, hi: int):
    """An argparse ``type``: an integer lo..hi, read without float conversion (any digit count is safe)."""
    def parse(raw: str) -> int:
        text = raw.strip()
        digits = text.lstrip("+-")
        if not digits.isdigit() or len(digits) > 30 or not lo <= int(text) <= hi:
            raise argparse.ArgumentTypeError(f"{option} {raw!r} is not allowed; allowed: an integer {lo}..{hi}")
        return int(text)
    return parse


def _parse_assignments(form, items: list) -> dict:
    values = {}
    params = {p.name: p for p in form.params}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key or not raw:
            raise InputError(f"{form.name}: malformed argument {item!r}; allowed: key=value with key in "
                             + ", ".join(params))
        if key not in params:
            raise InputError(f"{form.name}: unknown parameter {key}; parameters are "
                             + ", ".join(form.signature_parts()))
        if key in values:
            raise InputError(f"{form.name}: parameter {key} given twice; give each of "
                             + ", ".join(params) + " at most once")
        values[key] = params[key].parse(form.name, raw)
    return values


def _json_params(form, values: dict) -> dict:
    out = {}
    for p in form.params:
        if p.name in values:
            v = values[p.name]
            out[p.name] = v if not isinstance(v, str) or p.kind == "choice" else float(v)
    return out


def cmd_list(args):
    forms = registry.forms(args.family)
    if args.json:
        print(json.dumps([f.describe() for f in forms], indent=2))
        return
    for f in forms:
        conds = "; ".join(c.text for c in f.conditions)
        print(f"{f.signature()}\n    {f.summary}\n    source: {f.provenance}" + (f"\n    conditions: {conds}"
                                                                                 if conds else ""))


def cmd_show(args):
    f = registry.get(args.name)
    d = f.describe()
    try:
        latex = f.latex()
    except InputError:   # structural forms print one equation per case: say how to get one
        latex = "per case: igbsym latex " + f.name + " " + " ".join(f"{p.name}=..." for p in f.structural_params)
    lines = [f"{f.signature()}\n{f.summary}\n"]
    for p in d["parameters"]:
        default = f" (default {p['default']})" if "default" in p else ""
        lines.append(f"  {p['name']}: {p['allowed']}{default} — {p['doc']}")
    lines += [f"  condition: {c}" for c in d["conditions"]]
    lines += [f"  accuracy: {f.accuracy}", f"  domain: {f.domain_text()}", f"\nprovenance: {d['provenance']}"]
    if f.expr is not None:
        lines.append(f"\nexpression: {f.expr}")
    lines.append(f"\nLaTeX: {latex}")
    print("\n".join(lines))


def cmd_eval(args):
    form = registry.get(args.name)
    values = _parse_assignments(form, args.assignments)
    form.check(**values)
    if args.bound and args.dps is not None:
        raise InputError(f"{form.name}: --bound states the NumPy route's relative error and --dps asks for mpmath; "
                         "allowed: one of them")
    bound = None
    if args.dps is not None:
        structural = {p.name: values[p.name] for p in form.structural_params if p.name in values}
        if args.dps > DPS_MAX_NUMERIC and not form.is_exact(**structural):
            raise InputError(f"{form.name}: --dps {args.dps} is not allowed for this case (a numeric route, mpmath "
                             f"quadrature); allowed: an integer {DPS_MIN}..{DPS_MAX_NUMERIC}")
        out = form.mp(args.dps, **values)
        if isinstance(out, mpmath.matrix):  # matrix-valued form: rows of strings
            value = [[mpmath.nstr(out[i, j], args.dps, strip_zeros=False) for j in range(out.cols)]
                     for i in range(out.rows)]
        else:
            value = mpmath.nstr(out, args.dps, strip_zeros=False)
    else:
        numeric = {k: (float(v) if isinstance(v, str) and k in form.symbols else v) for k, v in values.items()}
        out = form.numpy(**numeric)
        value = repr(float(out)) if np.ndim(out) == 0 else [[repr(float(v)) for v in row] for row in out]
        if args.bound:
            bound = float(form.relative_bound(**numeric))
    if args.json:
        print(json.dumps({"name": form.name, "params": _json_params(form, values), "value": value,
                          **({} if bound is None else {"relative_bound": bound})}))
        return
    if isinstance(value, list):
        width = max(len(v) for row in value for v in row)
        print("\n".join("[" + "  ".join(v.rjust(width) for v in row) + "]" for row in value))
    else:
        print(value)
    if bound is not None:
        print(f"relative error <= {bound:.3g}" if bound < float("inf") else "relative error: no digit claimed")


LATEX_USAGE = "igbsym latex NAME [key=value ...], or igbsym latex --all [-o FILE.tex]"


def cmd_latex(args):
    if args.errata:
        return dispatch("igbsym.derivations.base:write_errata")(args)
    if args.standalone:
        from .latex import write_standalone
        form = registry.get(args.name) if args.name else None
        return write_standalone(args, form, _parse_assignments(form, args.assignments) if form else {})
    if args.all:
        if args.name:
            raise InputError(f"latex: give either NAME or --all, not both; allowed: {LATEX_USAGE}")
        target = writable_file(args.output, "latex -o") if args.output is not None else None
        text = document(registry.forms())
        if target is not None:
            write_text(target, text, "latex -o")
            print(f"wrote {args.output} ({len(registry.forms())} forms)")
        else:
            print(text)
        return
    if not args.name:
        raise InputError(f"latex: give a form NAME or --all; allowed: {LATEX_USAGE}")
    form = registry.get(args.name)
    structural = _parse_assignments(form, args.assignments)
    equation = form.latex(**structural)
    print(" ".join(["%", form.name, *args.assignments]))  # the registry name as a LaTeX comment label
    print(equation)


def cmd_predict(args):
    if args.model is not None or args.data is not None:     # the data route: theory on the user's data (torch)
        if args.sigma_b is not None:
            raise InputError("predict: --sigma-b belongs to the architecture flags; a --model carries its own biases "
                             "(its init's, or none with --zero-bias)")
        return dispatch("igbsym.validation.translate:run")(args)
    if args.zero_bias or args.pairs is not None:
        raise InputError("predict: --zero-bias and --pairs belong to the data route; allowed with --model M --data X")
    from . import predict
    return predict.run(args)


def dispatch(target: str):
    """The function named "module:function" (command implementations outside the core package)."""
    module, _, function = target.partition(":")
    return getattr(importlib.import_module(module), function)


def _add_form_commands(sub) -> None:
    """list, show, eval, latex, derive: the registry's forms and their derivations."""
    s = sub.add_parser("list", help="list registered closed forms")
    s.add_argument("--json", action="store_true")
    s.add_argument("--family", default=None)
    s.set_defaults(func=cmd_list)

    s = sub.add_parser("show", help="expression, conditions, provenance and LaTeX of a form")
    s.add_argument("name")
    s.set_defaults(func=cmd_show)

    s = sub.add_parser("eval", help="evaluate a form: igbsym eval NAME key=value ...")
    s.add_argument("name")
    s.add_argument("assignments", nargs="*", metavar="key=value")
    s.add_argument("--dps", type=_int_range("--dps", DPS_MIN, DPS_MAX), default=None, metavar="N",
                   help=f"evaluate with mpmath at N digits ({DPS_MIN}..{DPS_MAX}; numeric routes up to "
                        f"{DPS_MAX_NUMERIC}) and print them all")
    s.add_argument("--json", action="store_true")
    s.add_argument("--bound", action="store_true",
                   help="also print the stated relative error of this value (per value where the route computes it)")
    s.set_defaults(func=cmd_eval)

    s = sub.add_parser("latex", help="LaTeX of one form, or a compilable document of all (--all -o FILE.tex)")
    s.add_argument("name", nargs="?")
    s.add_argument("assignments", nargs="*", metavar="key=value", help="structural parameters, e.g. n=3")
    s.add_argument("--all", action="store_true")
    s.add_argument("--errata", action="store_true", help="the errata report (runs every derivation)")
    s.add_argument("--standalone", action="store_true", help="a compilable one-equation document of NAME")
    s.add_argument("-o", "--output", default=None)
    s.set_defaults(func=cmd_latex)

    s = sub.add_parser("derive", help="run a family's derivation (or all) and write its LaTeX")
    s.add_argument("family", nargs="?", default="all")
    s.add_argument("-o", "--output", default="derivations-out")
    s.set_defaults(func="igbsym.derivations.cli:derive")


def _add_job_commands(sub) -> None:
    """validate and run (the main job): torch checks of the forms."""
    for name, func, helptext in (("validate", "igbsym.validation.commands:validate",
                                  "check closed forms against torch simulations"),
                                 ("run", "igbsym.validation.commands:run", "main job: derive + validate + report")):
        s = sub.add_parser(name, help=helptext)
        s.add_argument("--family", default=None)
        s.add_argument("--device", default=None, help="cuda, mps or cpu (default: best available)")
        mode = s.add_mutually_exclusive_group()
        mode.add_argument("--quick", dest="mode", action="store_const", const="quick")
        mode.add_argument("--thorough", dest="mode", action="store_const", const="thorough")
        s.add_argument("--report", default="report" if name == "run" else None, help="write the report here")
        s.add_argument("--seed", type=_int_range("--seed", 0, SEED_MAX), default=0)
        s.add_argument("--jobs", type=_int_range("--jobs", 1, 256), default=None,
                       help="worker processes (default: 1 in quick mode, one per core in thorough mode)")
        s.add_argument("--check", default=None, help="only the checks whose name starts with these (comma-separated)")
        if name == "validate":
            s.add_argument("--list", action="store_true", help="which forms have a check")
            s.add_argument("--json", action="store_true")
        s.set_defaults(func=func, mode="quick", list=False, json=False)


def _add_predict_command(sub) -> None:
    """predict: γ per layer of an architecture (or of a torch model on data)."""
    s = sub.add_parser("predict", help="predict gamma per layer for an architecture")
    s.add_argument("--activation", default="relu")
    s.add_argument("--depth", type=int, default=1)
    s.add_argument("--norm", default="none")
    s.add_argument("--placement", default="pre")
    s.add_argument("--pool", type=int, default=None)
    s.add_argument("--batch-size", type=int, default=None)
    s.add_argument("--a", type=float, default=0.01, help="leaky slope")
    s.add_argument("--sigma-w", type=float, default=None)
    s.add_argument("--sigma-b", type=float, default=None, help="bias sd: every Dense, the readout too, adds "
                   "B ~ N(0, sigma_b^2) (the mean-field convention; default 0)")
    s.add_argument("--residual", action="store_true", help="residual MLP: --depth blocks x + alpha F(x)")
    s.add_argument("--alpha", type=float, default=None, help="residual branch scale (with --residual; default 1)")
    s.add_argument("--order", default="linear-first", choices=("linear-first", "linear-last"),
                   help="residual branch: Dense, [norm], phi (linear-first) or [norm], phi, Dense (linear-last)")
    s.add_argument("--classes", type=int, default=None, help="C >= 2 output classes: add the multiclass summary")
    s.add_argument("--width", type=int, default=None,
                   help="N: add the finite-width prediction of an MLP of width N (d_in = N) next to the N = inf one")
    s.add_argument("--rel-se", type=float, default=None,
                   help="with --width: the exact chain's relative SE at the output (default 0.01)")
    s.add_argument("--json", action="store_true")
    s.add_argument("--plot", default=None)
    s.add_argument("--model", default=None, help="data route: a probe model name or module.path:factory")
    s.add_argument("--data", default=None, help="data route: digits, digits-parity, gaussian[:SHAPE[:D]], .npy/.pt")
    s.add_argument("--zero-bias", action="store_true", help="data route: biases set to 0 (as igbsym probe)")
    s.add_argument("--pairs", type=int, default=None, help="data route: estimate gamma from N sampled pairs")
    s.set_defaults(func=cmd_predict)


def _batch_size(raw: str):
    """--batch: an integer >= 4 or inf."""
    if raw.strip().lower() in ("inf", "+inf", "infinity"):
        return float("inf")
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not allowed; allowed: an integer >= 4 or inf") from None
    if value < 4:
        raise argparse.ArgumentTypeError(f"{value} is out of range; allowed: an integer >= 4 or inf")
    return value


def _add_phase_command(sub) -> None:
    """phase: the mean-field phase diagram."""
    s = sub.add_parser("phase", help="mean-field phase diagram: log10 gamma_inf (or gamma_L) over (sigma_w^2, "
                       "sigma_b^2) with the edge of chaos")
    s.add_argument("--activation", required=True)
    s.add_argument("--depth", type=_int_range("--depth", 1, 100000), default=None, help="gamma_L after L layers")
    s.add_argument("--grid", type=_int_range("--grid", 2, 2000), default=100, help="points per axis (default 100)")
    s.add_argument("--sw2-max", type=float, default=4.0, help="largest sigma_w^2 (default 4)")
    s.add_argument("--sb2-max", type=float, default=0.5, help="largest sigma_b^2 (default 0.5)")
    s.add_argument("--a", type=float, default=0.01, help="leaky slope (leaky_relu)")
    s.add_argument("--norm", choices=("none", "batchnorm", "layernorm", "rmsnorm"), default="none",
                   help="batchnorm: no diagram, one line: no edge of chaos and the gradient-explosion rate lambda; "
                   "layernorm/rmsnorm: the diagram of gamma_inf with that norm (see --placement)")
    s.add_argument("--placement", choices=("before", "after", "pre", "post"), default=None,
                   type=lambda v: {"pre": "before", "post": "after"}.get(v, v),
                   help="with --norm layernorm/rmsnorm: phi(Norm(h)) (before, default; alias pre, as predict's) or "
                   "Norm(phi(h)) (after; alias post)")
    s.add_argument("--batch", type=_batch_size, default=float("inf"), metavar="B",
                   help="with --norm batchnorm: the batch size (default inf; finite B >= 4: relu, leaky_relu, "
                   "identity, abs)")
    s.add_argument("--json", action="store_true")
    s.add_argument("--plot", default=None, metavar="FILE")
    s.set_defaults(func="igbsym.phase:run")


def _add_data_commands(sub) -> None:
    """sweep, probe, train: simulated grids, torch models on data, training grouped by G0."""
    s = sub.add_parser("sweep", help="sweep GRID.toml: simulate a grid into a resumable store (torchrun shards it); "
                       "sweep show DB: its results")
    s.add_argument("target", metavar="GRID.toml|show")
    s.add_argument("db_pos", nargs="?", metavar="DB", help="with show: the sweep database")
    s.add_argument("--db", default=None, help="result store (default: sweep.db beside the grid file)")
    s.add_argument("--inits", type=int, default=None, help="inits per point (with --rel-se: the first round)")
    s.add_argument("--rel-se", type=float, default=None, metavar="R",
                   help="add chunks of inits to each point until SE/gamma_hat <= R at the output, R in (0, 1)")
    s.add_argument("--max-inits", type=int, default=None, metavar="M",
                   help="with --rel-se: the cap on each point's inits (default 10000); reaching it unmet is stored")
    mode = s.add_mutually_exclusive_group()
    mode.add_argument("--quick", dest="mode", action="store_const", const="quick")
    mode.add_argument("--thorough", dest="mode", action="store_const", const="thorough")
    s.add_argument("--device", default=None)
    s.add_argument("--format", default=None, help="show: table, csv or json")
    s.add_argument("--plot", default=None, metavar="DIR", help="show: write gamma plots here")
    s.set_defaults(func="igbsym.validation.sweep:main", mode=None)

    s = sub.add_parser("probe", help="IGB of any torch model at initialisation on given data")
    s.add_argument("--model", required=True, help="built-in name or module.path:factory")
    s.add_argument("--data", required=True, help="digits, digits-parity, gaussian[:SHAPE[:D]], or a .npy/.pt file")
    s.add_argument("--inits", type=int, default=100, help="initialisations (with --rel-se: the first round)")
    s.add_argument("--rel-se", type=float, default=None, metavar="R",
                   help="add inits in rounds until SE/gamma_hat <= R, R in (0, 1) (SE <= R where gamma is 0 within "
                   "2 SE)")
    s.add_argument("--max-inits", type=int, default=None, metavar="M",
                   help="with --rel-se: the cap on the inits (default 10000); reaching it unmet is reported")
    s.add_argument("--classes", type=int, default=None, help="outputs of a built-in model; macro-classes = label mod C")
    s.add_argument("--zero-bias", action="store_true")
    s.add_argument("--device", default=None)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--batch-size", type=int, default=None)
    s.add_argument("--json", action="store_true")
    s.add_argument("--report", default=None)
    s.add_argument("--theory", action="store_true", help="the infinite-width theory on the same data next to "
                   "each measurement (igbsym.nngp; models whose modules all have kernel maps)")
    s.set_defaults(func="igbsym.validation.probe_report:run")

    s = sub.add_parser("train", help="train many inits; training curves grouped by the initial prejudice |G0 - 1/2|")
    s.add_argument("--model", required=True, help="built-in name or module.path:factory (as probe)")
    s.add_argument("--data", required=True, help="digits, digits-parity, gaussian[:SHAPE[:D]], or a .npy/.pt file")
    s.add_argument("--inits", type=int, required=True)
    s.add_argument("--steps", type=int, required=True)
    s.add_argument("--lr", type=float, default=None, help="learning rate (default 0.01 for sgd, 0.001 for adam)")
    s.add_argument("--optimizer", default="sgd", choices=("sgd", "adam"))
    s.add_argument("--batch-size", type=int, default=None, help="mini-batch size (default 256; >= D: full batch)")
    s.add_argument("--classes", type=int, default=None, help="outputs of a built-in model; macro-classes = label mod C")
    s.add_argument("--zero-bias", action="store_true")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--report", default=None, help="folder for CSV/JSON/figures and the resumable store train.db")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func="igbsym.validation.train_report:run")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="igbsym", description="Closed forms for the statistics of untrained neural networks.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p.commands = sub.choices   # name -> subparser, for errors reported with the subcommand's own usage
    _add_form_commands(sub)
    _add_job_commands(sub)
    _add_predict_command(sub)
    _add_phase_command(sub)
    _add_data_commands(sub)
    return p


_NEGATIVE = re.compile(r"^-(\d|\.\d|inf|infinity|nan)", re.IGNORECASE)


def _negative_values(argv: list) -> list:
    """``--a -1e308`` → ``--a=-1e308``: argparse takes a token like -1e308 (exponent) for an option, not a value."""
    out = []
    for tok in argv:
        if out and out[-1].startswith("--") and "=" not in out[-1] and _NEGATIVE.match(tok):
            out[-1] = f"{out[-1]}={tok}"
        else:
            out.append(tok)
    return out


def parse(argv=None) -> argparse.Namespace:
    """Parse the command line; an unknown option is reported by the subcommand it was given to, with its usage."""
    parser = build_parser()
    args, extra = parser.parse_known_args(_negative_values(sys.argv[1:] if argv is None else list(argv)))
    if extra and hasattr(args, "assignments"):   # key=value after an option (eval NAME --dps 30 x=1) is still one
        args.assignments += [e for e in extra if "=" in e and not e.startswith("-")]
        extra = [e for e in extra if not ("=" in e and not e.startswith("-"))]
    if extra:
        parser.commands[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def main(argv=None) -> int:
    try:
        args = parse(argv)
        func = dispatch(args.func) if isinstance(args.func, str) else args.func
        rc = func(args)
        return rc if isinstance(rc, int) else 0
    except (InputError, NumericalError) as exc:
        line = str(exc).replace("\r", "\\r").replace("\n", "\\n")   # one line, even if the input held newlines
        print(f"igbsym: error: {line}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:   # the core install has no torch/matplotlib: say which extra to install
        extra = EXTRAS.get((exc.name or "").split(".")[0])
        if extra is None:
            raise
        print(f"igbsym: error: this command needs {exc.name}, which is not installed; allowed: "
              f"pip install 'igbsym[{extra}]'", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("igbsym: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `igbsym list | head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
