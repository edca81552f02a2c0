"""The codebase's layering and the op protocol (docs/ARCHITECTURE.md): no private name imported across modules, no
import circle (function-level imports included), no isinstance dispatch on op types outside igbsym/ops, every op
implementing the protocol, and the two end-to-end proofs that adding an op or an activation touches one module
(``Scale`` in igbsym/ops/scale.py, ``abs`` in igbsym/activations.py)."""
import ast
import math
import pathlib

import mpmath
import numpy as np
import pytest
import sympy as sp

import igbsym
from igbsym import ops as O
from igbsym.engine import layer_gammas, periodic, walk
from igbsym.predict import predict
from igbsym.spec import NetSpec, Spec, mlp_ops

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = {"igbsym": ROOT / "igbsym", "igbsym.validation": ROOT / "validation",
            "igbsym.derivations": ROOT / "derivations"}
STDLIB_PRIVATE = {"sys"}       # sys._getframe is the documented way to name a caller


def _modules():
    out = {}
    for pkg, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([pkg] + parts)] = path
    return out


MODULES = _modules()


def _imports(name, path):
    """(line, target module, imported names) of every import in the module, at any depth."""
    tree = ast.parse(path.read_text())
    base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            target = (".".join(base[:len(base) - node.level + 1] + ([node.module] if node.module else []))
                      if node.level else node.module)
            yield node.lineno, target, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name, []


def test_no_private_name_is_imported_across_modules():
    bad = []
    for name, path in MODULES.items():
        imported_modules = set()
        for line, target, names in _imports(name, path):
            bad += [f"{path}:{line} from {target} import {n}" for n in names if n.startswith("_")
                    and not n.startswith("__")]
            imported_modules |= {target.split(".")[-1]} | set(names)
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                    and isinstance(node.value, ast.Name) and node.value.id in imported_modules
                    and node.value.id not in STDLIB_PRIVATE and f"igbsym.{node.value.id}" in MODULES
                    or isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in ("fam", "S", "D", "O") and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                bad.append(f"{path}:{node.lineno} {node.value.id}.{node.attr}")
    assert not bad, "\n".join(bad)


def test_every_package_is_installed():
    """pyproject lists packages explicitly (validation/ and derivations/ install under igbsym.): a subpackage
    missing from the list is absent from a non-editable install."""
    tomllib = pytest.importorskip("tomllib")   # Python >= 3.11
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = set()
    for top, name in (("igbsym", "igbsym"), ("validation", "igbsym.validation"), ("derivations", "igbsym.derivations")):
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / top).parts
            found.add(".".join((name,) + rel))
    assert found == listed, f"missing from pyproject: {found - listed}; listed but absent: {listed - found}"


def _edges() -> dict:
    """module -> the igbsym modules it imports (module-level and function-level imports)."""
    edges = {m: set() for m in MODULES}
    for name, path in MODULES.items():
        for _, target, names in _imports(name, path):
            for t in [target] + [f"{target}.{n}" for n in names]:
                while t and t not in MODULES and "." in t:
                    t = t.rsplit(".", 1)[0]
                if t in MODULES and t != name:
                    edges[name].add(t)
    return edges


# The core's layers, top to bottom (docs/ARCHITECTURE.md "Layers"): a module imports only its own layer and those
# above it. validation/ and derivations/ sit below everything; the package __init__ re-exports and is exempt.
LAYERS = [("errors", "functions", "numerics", "route"), ("activations",), ("gauss",), ("extreme", "bn_law", "mehler"),
          ("ops",), ("spec",), ("engine", "nngp", "multiclass_numerics"), ("notation", "prose", "latex"),
          ("form", "registry", "params", "kurtosis_api"), ("families",),
          ("predict", "law", "files", "cli", "__main__", "phase")]


def _layer(module: str):
    parts = module.split(".")
    if len(parts) < 2 or parts[1] in ("validation", "derivations"):
        return None
    return next(i for i, names in enumerate(LAYERS) if parts[1] in names)


def test_the_layer_table_is_true():
    """Every core import goes up the layer table (or stays in its layer), and docs/ARCHITECTURE.md's table lists the
    same layers in the same order (each row names its modules in backticks)."""
    bad = [f"{a} -> {b}" for a, targets in _edges().items() for b in targets
           if _layer(a) is not None and _layer(b) is not None and _layer(b) > _layer(a)]
    assert not bad, bad
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    table = text.split("## Layers", 1)[1].split("\n\n", 2)[1]
    rows = [r for r in table.splitlines() if r.startswith("|")][2:]
    assert len(rows) == len(LAYERS)
    for row, names in zip(rows, LAYERS):
        cell = row.split("|")[2]
        assert all(f"`{n}" in cell for n in names), (names, cell)
    core = {m.split(".")[1] for m in MODULES if _layer(m) is not None or m.count(".") == 1}
    assert core - {"validation", "derivations"} <= {n for names in LAYERS for n in names}


def test_no_import_circle():
    """Tarjan's strongly connected components of the import graph (module-level and function-level imports)."""
    edges = _edges()
    index, low, stack, on, circles, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))
    for v in MODULES:
        if v not in index:
            visit(v)
    assert not circles, circles


def test_no_isinstance_dispatch_on_op_types_outside_the_ops():
    """Composition reads the protocol (roles, degree, keeps_share, children, noise, ...), never the op's class."""
    op_names = set(O.OPS)
    bad = []
    for name, path in MODULES.items():
        if name.startswith("igbsym.ops"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance" and len(node.args) == 2:
                classes = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
                hit = [c for c in classes if (getattr(c, "attr", None) or getattr(c, "id", None)) in op_names]
                if hit:
                    bad.append(f"{path}:{node.lineno}")
    assert not bad, bad


def test_no_dispatch_on_stage_names_outside_the_ops():
    """Composition asks an op for its role (starts_layer, elementwise, draws_weights, spatial, children), never
    compares its ``stage`` label (the simulator's name for a recorded tensor): issue 51."""
    bad = []
    for name, path in MODULES.items():
        if name.startswith("igbsym.ops"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            sides = [node.left, *node.comparators] if isinstance(node, ast.Compare) else []
            if any(isinstance(side, ast.Attribute) and side.attr == "stage" for side in sides):
                bad.append(f"{path}:{node.lineno}")
    assert not bad, bad


@pytest.mark.parametrize("name", sorted(O.OPS))
def test_every_op_implements_the_protocol(name):
    """Every registered op maps a state on NumPy and mpmath, has a noise factor (or refuses in one line), a degree
    in {0, 1, None} and a torch module; ``at`` and ``as_float`` preserve it."""
    cls = O.OPS[name]
    op = cls.example()
    assert isinstance(op, cls) and op.degree in (0, 1, None) and op.stage
    s = O.State(np.float64(1.7), np.float64(0.2), np.float64(0.8), np.float64(0.0))
    if op.spatial:                                   # image ops: the i.i.d. state has no positions
        for fn in (op.numpy, op.mp, lambda st: op.noise(st, "numpy")):
            with pytest.raises(igbsym.InputError, match=name):
                fn(s)
        torch = pytest.importorskip("torch")
        assert op.torch(2, dtype=torch.float64)(torch.randn(3, 2, 6, 6, dtype=torch.float64)).dim() == 4
        return
    out = op.numpy(s)
    with mpmath.workdps(30):
        out_mp = op.mp(O.State(mpmath.mpf("1.7"), mpmath.mpf("0.2"), mpmath.mpf("0.8"), mpmath.mpf(0)))
        assert float(out_mp.c) == pytest.approx(float(out.c), rel=1e-11, abs=1e-300)
        assert float(out_mp.e) == pytest.approx(float(out.e), rel=1e-11)
    assert np.isfinite(float(op.noise(s, "numpy")))
    assert op.at(0) == op and op.as_float() == op
    torch = pytest.importorskip("torch")
    h = torch.randn(3, 4, dtype=torch.float64)
    mod = op.torch(4, dtype=torch.float64)
    assert mod(h).shape[-1] == op.width(4)


def test_scale_op_end_to_end():
    """Scale(α) after Dense(σ_w) is Dense(α σ_w): its map, predict (through the engine), its noise factor and the
    batched simulator and the dataset kernel agree with that identity; the diff that added Scale is
    igbsym/ops/scale.py alone."""
    a = 1.3
    scaled = Spec(None, (O.Dense(None, 1.0), O.Scale(a), O.Act("gelu")) * 3, sigma_out=1.0)
    plain = Spec(None, (O.Dense(None, a), O.Act("gelu")) * 3, sigma_out=1.0)
    assert predict(scaled).gammas == pytest.approx(predict(plain).gammas, rel=1e-14)
    g3 = float(igbsym.get("depth.gamma").numpy(L=3, activation="gelu", sigma_w=a))
    assert predict(scaled).gamma == pytest.approx(g3, rel=1e-13)
    from igbsym.nngp import theory
    x = np.random.default_rng(0).standard_normal((40, 6))
    assert theory(scaled.all_ops(), x).gamma == pytest.approx(theory(plain.all_ops(), x).gamma, rel=1e-12)
    s = O.State(np.float64(2.0), 0.3, 0.7, 0.1)
    assert float(O.Scale(a).noise(s)) == pytest.approx(a * a, rel=1e-15)
    assert float(O.Scale(a).numpy(s).m) == pytest.approx(a * 0.1, rel=1e-15)
    torch = pytest.importorskip("torch")
    from igbsym.validation.simulate import forward, sample_weights
    spec = Spec(5, (O.Dense(6, 1.0), O.Scale(a), O.Act("gelu")))
    ref = Spec(5, (O.Dense(6, a), O.Act("gelu")))
    w = sample_weights(spec, range(2), 3, "cpu", torch.float64)
    x = torch.randn(7, 5, dtype=torch.float64)
    w_ref = [w[0] * a, w[1]]
    torch.testing.assert_close(forward(spec, w, x), forward(ref, w_ref, x), rtol=1e-12, atol=1e-12)


def test_abs_activation_end_to_end():
    """abs = x⁺ + x⁻ (slope −1): its closed forms (γ of one layer 2/(π − 2) from E|Z| = √(2/π)), the depth law equal
    to leaky_relu with a = −1, activation.mean/var against mpmath quadrature, predict and the torch module."""
    g1 = igbsym.get("depth.gamma")
    assert float(g1.numpy(L=1, activation="abs")) == pytest.approx(2 / (math.pi - 2), rel=1e-14)
    assert sp.simplify(igbsym.get("igb.gamma").case(activation="abs").subs(sp.Symbol("sigma_w", positive=True), 1)
                       - 2 / (sp.pi - 2)) == 0
    for L in (2, 7, 40):
        assert float(g1.numpy(L=L, activation="abs")) == pytest.approx(
            float(g1.numpy(L=L, activation="leaky_relu", a=-1.0)), rel=1e-13)
    with mpmath.workdps(30):
        mean = mpmath.quad(lambda x: abs(x) * mpmath.npdf(x, 0, 1.7), [-mpmath.inf, 0, mpmath.inf])
        second = mpmath.quad(lambda x: x * x * mpmath.npdf(x, 0, 1.7), [-mpmath.inf, 0, mpmath.inf])
    assert float(igbsym.get("activation.mean").numpy(activation="abs", sigma=1.7)) == pytest.approx(float(mean),
                                                                                                    rel=1e-14)
    assert float(igbsym.get("activation.var").numpy(activation="abs", sigma=1.7)) == pytest.approx(
        float(second - mean**2), rel=1e-14)
    assert predict(NetSpec(None, (None,) * 4, "abs")).gamma == pytest.approx(
        float(g1.numpy(L=4, activation="abs")), rel=1e-14)
    torch = pytest.importorskip("torch")
    h = torch.linspace(-2, 2, 9)
    assert torch.equal(O.Act("abs").torch(9)(h), h.abs())


def test_engine_walk_is_periodic_composition():
    """predict's engine view: an MLP is a head Dense and L blocks; the walk equals composing the maps op by op."""
    ops = NetSpec(None, (None,) * 5, "sigmoid", norm="rmsnorm", placement="post").all_ops()
    head, block, L = periodic(ops)
    assert L == 5 and len(head) == 1 and block[-1].starts_layer
    assert periodic((O.Dense(None), O.Act("relu"), O.Dense(None, 2.0), O.Act("tanh")))[2] == 1   # one block
    state, plain, seen = O.input_state(), [], False
    for op in ops:
        if op.starts_layer and seen:
            plain.append(float(state.c / state.e))
        seen = seen or op.starts_layer
        state = op.map(state, "numpy")
    walked = walk(head, block, L)
    assert min(plain) > 0.01 and [float(g) for g in walked] == pytest.approx(plain, rel=1e-12)
    assert layer_gammas(ops) == pytest.approx(walked, rel=0)


@pytest.mark.parametrize("form, kw, words", [
    ("depth.gamma", dict(L=3, activation="relu", norm="none", B=2), "B is used with norm=batchnorm"),
    ("moments.sensitivity", dict(L=3, architecture="vanilla", activation="relu", alpha=0), "alpha is used"),
    ("depth.gamma", dict(L=3, activation="gelu", a=0.3), "a is used with activation=leaky_relu only"),
    ("resnet.gamma", dict(L=2, activation="relu", alpha=1, placement="post"), "placement is used"),
])
def test_a_parameter_the_case_ignores_is_refused(form, kw, words):
    with pytest.raises(igbsym.InputError, match=words):
        igbsym.get(form).check(**kw)
    kw.pop(words.split()[0])
    igbsym.get(form).check(**kw)


def test_mlp_ops_vocabulary_is_one_spelling():
    with pytest.raises(igbsym.InputError, match="allowed: none, batchnorm, layernorm, rmsnorm"):
        mlp_ops(2, "relu", "LN")
    assert mlp_ops(1, "relu", "none") == mlp_ops(1, "relu", None)


@pytest.mark.parametrize("sigma_w", [0.05, math.sqrt(2)])
def test_predict_takes_the_mehler_route_with_scalar_parameters(sigma_w):
    """predict walks scalar ops; the Mehler route's point mask was a Python bool there (AttributeError)."""
    spec = NetSpec(None, (None,) * 3, "gelu", norm="rmsnorm", placement="post", sigma_w=sigma_w)
    ref = [float(igbsym.get("depth.gamma").numpy(L=L, activation="gelu", norm="rmsnorm", placement="post",
                                                 sigma_w=sigma_w)) for L in (1, 2, 3)]
    assert predict(spec).gammas == pytest.approx(ref, rel=1e-13)


def test_every_local_link_of_the_docs_exists():
    """README.md and docs/*.md link figures and files by paths relative to their own folder."""
    import re
    bad = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)\)", doc.read_text()):
            if not target.startswith(("http://", "https://", "mailto:")) and not (doc.parent / target).exists():
                bad.append(f"{doc.relative_to(ROOT)}: {target}")
    assert not bad, bad


LONG_FUNCTION = 80      # issue 50: a longer function is split into named steps
LONG_ALLOWED = {}       # "path:function" -> why it stays longer (none)


def _long_functions(root) -> list:
    """Every function (methods and nested ones included; decorators not counted) of the non-test tree under
    ``root`` longer than LONG_FUNCTION lines and not in LONG_ALLOWED."""
    long = []
    for folder in ("igbsym", "validation", "derivations", "bench"):
        for path in sorted((root / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                name = f"{path.relative_to(root)}:{getattr(node, 'name', '')}"
                if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and name not in LONG_ALLOWED
                        and node.end_lineno - node.lineno + 1 > LONG_FUNCTION):
                    long.append(f"{name} ({node.end_lineno - node.lineno + 1} lines)")
    return long


def test_no_function_is_longer_than_80_lines():
    long = _long_functions(ROOT)
    assert not long, f"functions over {LONG_FUNCTION} lines (split them into named steps): {', '.join(long)}"
