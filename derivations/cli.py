"""``igbsym derive [FAMILY] [-o DIR]``: run derivations and write each family's LaTeX (dispatched by name from
igbsym/cli.py, so the core package never imports this one). Arguments are checked before any derivation runs."""
from __future__ import annotations

from igbsym import derivations, registry
from igbsym.files import writable_dir, write_text
from igbsym.errors import InputError

from .base import document


def families(family) -> list:
    """The derivation modules named by the ``derive`` argument: 'all' or None (every module), a registry family
    (``igbsym list``'s names, e.g. leaky → rectified) or a module's own name."""
    names = derivations.modules()
    if family in (None, "all"):
        return names
    if family in names:
        return [family]
    if family not in registry.families():
        raise InputError(f"derive: unknown family {family!r}; allowed: all, {', '.join(registry.families())}")
    return [registry.family_module(family)]


def derive(args) -> list:
    """``igbsym derive [FAMILY] [-o DIR]`` (argparse arguments ``family``, ``output``)."""
    return write(args.family, args.output)


def write(family, output) -> list:
    """Run the selected derivations; write ``<output>/<family>.tex``; print one summary line per family."""
    selected = families(family)
    outdir = writable_dir(output, "derive -o")
    done = []
    for fam in selected:
        d = derivations.run(fam)
        path = outdir / f"{fam}.tex"
        write_text(path, document([d], title=d.title), "derive -o")
        kinds = {}
        for p in d.proofs:
            kinds[p.kind] = kinds.get(p.kind, 0) + 1
        print(f"{fam}: {len(d.proofs)} proofs {kinds}, {len(d.errata)} errata -> {path}")
        done.append(d)
    return done
