"""The ``igbsym`` command line: a thin layer over the registry (and over ``validation`` / ``derivations``).

The CLI contract (relied on by scripts): ``list [--json]``, ``show NAME``, ``eval NAME k=v ... [--dps N]
[--json]``, ``latex NAME`` / ``latex --all -o FILE.tex``, ``derive FAMILY``, ``validate [--family F] [--device D]
[--quick|--thorough] [--report DIR] [--list [--json]]``, ``predict ...``. Bad input prints one line and exits 2.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import mpmath
import numpy as np

from . import registry
from .errors import InputError, NumericalError
from .latex import document


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise InputError(f"{self.prog}: {message} (see '{self.prog} --help')")


def _parse_assignments(form, items: list) -> dict:
    values = {}
    params = {p.name: p for p in form.params}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key or not raw:
            raise InputError(f"{form.name}: malformed argument {item!r}; expected key=value with key in "
                             + ", ".join(params))
        if key not in params:
            raise InputError(f"{form.name}: unknown parameter {key}; parameters are "
                             + ", ".join(form.signature_parts()))
        if key in values:
            raise InputError(f"{form.name}: parameter {key} given twice")
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
    print(f"{f.signature()}\n{f.summary}\n")
    for p in d["parameters"]:
        default = f" (default {p['default']})" if "default" in p else ""
        print(f"  {p['name']}: {p['allowed']}{default} — {p['doc']}")
    for c in d["conditions"]:
        print(f"  condition: {c}")
    print(f"\nprovenance: {d['provenance']}")
    if f.expr is not None:
        print(f"\nexpression: {f.expr}")
    print(f"\nLaTeX: {f.latex()}")


def cmd_eval(args):
    form = registry.get(args.name)
    values = _parse_assignments(form, args.assignments)
    if args.dps is not None:
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
    if isinstance(value, list) and not args.json:
        width = max(len(v) for row in value for v in row)
        print("\n".join("[" + "  ".join(v.rjust(width) for v in row) + "]" for row in value))
        return
    if args.json:
        print(json.dumps({"name": form.name, "params": _json_params(form, values), "value": value}))
    else:
        print(value)


def cmd_latex(args):
    if args.errata:
        from derivations.base import write_errata
        return write_errata(args)
    if args.standalone:
        from .latex import write_standalone
        form = registry.get(args.name) if args.name else None
        return write_standalone(args, form, _parse_assignments(form, args.assignments) if form else {})
    if args.all:
        if args.name:
            raise InputError("latex: give either NAME or --all, not both")
        text = document(registry.forms())
        if args.output:
            Path(args.output).write_text(text)
            print(f"wrote {args.output} ({len(registry.forms())} forms)")
        else:
            print(text)
        return
    if not args.name:
        raise InputError("latex: give a form NAME or --all")
    form = registry.get(args.name)
    structural = _parse_assignments(form, args.assignments)
    print(" ".join(["%", form.name, *args.assignments]))  # the registry name as a LaTeX comment label
    print(form.latex(**structural))


def cmd_derive(args):
    import derivations
    from derivations.base import document as derivation_document
    families = derivations.modules() if args.family in (None, "all") else [args.family]
    done = []
    outdir = Path(args.output)
    outdir.mkdir(parents=True, exist_ok=True)
    for fam in families:
        d = derivations.run(fam)
        path = outdir / f"{fam}.tex"
        path.write_text(derivation_document([d], title=d.title))
        kinds = {}
        for p in d.proofs:
            kinds[p.kind] = kinds.get(p.kind, 0) + 1
        print(f"{fam}: {len(d.proofs)} proofs {kinds}, {len(d.errata)} errata -> {path}")
        done.append(d)
    return done


def cmd_validate(args):
    from validation import cli as vcli
    return vcli.run(args)


def cmd_predict(args):
    from . import predict
    return predict.run(args)


def cmd_run(args):
    """The main job: derive every family, validate (quick by default), write the report."""
    cmd_derive(argparse.Namespace(family="all", output=str(Path(args.report) / "derivations")))
    return cmd_validate(args)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="igbsym", description="Closed forms for the statistics of untrained neural networks.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

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
    s.add_argument("--dps", type=int, default=None, help="evaluate with mpmath at N digits and print them all")
    s.add_argument("--json", action="store_true")
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
    s.set_defaults(func=cmd_derive)

    for name, func, helptext in (("validate", cmd_validate, "check closed forms against torch simulations"),
                                 ("run", cmd_run, "main job: derive + validate + report")):
        s = sub.add_parser(name, help=helptext)
        s.add_argument("--family", default=None)
        s.add_argument("--device", default=None, help="cuda, mps or cpu (default: best available)")
        mode = s.add_mutually_exclusive_group()
        mode.add_argument("--quick", dest="mode", action="store_const", const="quick")
        mode.add_argument("--thorough", dest="mode", action="store_const", const="thorough")
        s.add_argument("--report", default="report" if name == "run" else None, help="write the report here")
        s.add_argument("--seed", type=int, default=0)
        if name == "validate":
            s.add_argument("--list", action="store_true", help="which forms have a check")
            s.add_argument("--json", action="store_true")
        s.set_defaults(func=func, mode="quick", list=False, json=False)

    s = sub.add_parser("predict", help="predict gamma per layer for an architecture")
    s.add_argument("--activation", default="relu")
    s.add_argument("--depth", type=int, default=1)
    s.add_argument("--norm", default="none")
    s.add_argument("--placement", default="pre")
    s.add_argument("--pool", type=int, default=None)
    s.add_argument("--batch-size", type=int, default=None)
    s.add_argument("--a", type=float, default=0.01, help="leaky slope")
    s.add_argument("--sigma-w", type=float, default=None)
    s.add_argument("--json", action="store_true")
    s.add_argument("--plot", default=None)
    s.set_defaults(func=cmd_predict)
    return p


def main(argv=None) -> int:
    try:
        args = build_parser().parse_args(argv)
        rc = args.func(args)
        return rc if isinstance(rc, int) else 0
    except (InputError, NumericalError) as exc:
        print(f"igbsym: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("igbsym: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `igbsym list | head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
