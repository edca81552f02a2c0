"""The generic simulation check over every op × activation (issue 51, validation/checks_ops.py): enumeration from the
registries, a tiny-size run of the whole product, a wrong op map caught, a new activation entry picked up.

References: the op-free baseline's γ and q from the defining Gaussian integrals (mpmath quadrature, 30 digits);
everything else against torch Monte Carlo at z <= 5 (the check's own Results, fixed seeds).
"""
import dataclasses
import json
import math
import subprocess
import sys

import mpmath
import pytest

import igbsym
from igbsym import activations as acts
from igbsym.ops import OPS, Scale

torch = pytest.importorskip("torch")
from igbsym.validation import checks_ops as C  # noqa: E402
from igbsym.validation.checks import Context, mutated, reuse_simulations  # noqa: E402

TINY = dict(widths=(32, 128), inits=(64, 32), n_data=128)


@pytest.fixture(autouse=True)
def one_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def test_every_op_and_activation_is_enumerated_or_skipped_with_a_reason():
    """Every op of igbsym.ops.OPS and every registered activation is run or skipped with a one-line reason; the
    protocol skips are exactly the spatial and whole_data ops."""
    run, skipped = C.plan_combos(C.ops_under_test(), acts.names())
    seen = {name for name, _, _ in run} | {name for name, _, _ in skipped}
    assert seen == set(OPS) | {C.NONE}
    assert {a for name, _, a in run if name == C.NONE} == set(acts.names())
    protocol = {name for name, a, _ in skipped if a == "*"}
    assert protocol == {n for n, cls in OPS.items() if cls.example().spatial or cls.example().whole_data}
    assert all(reason and "\n" not in reason for _, _, reason in skipped)
    assert len(run) >= 8 * len(acts.names())       # baseline + Dense, Flatten, LN, MaxPool, RMS, Residual, Scale


@pytest.mark.parametrize("act", acts.names())
def test_baseline_prediction_matches_the_defining_integrals(act):
    """Dense(√2) → φ → gain-1 readout: γ = (E φ)²/Var φ and q = E φ² under u ~ N(0, 2) (srelu's shift √2/√(2π)),
    by quadrature; the check's γ there is depth.gamma's own value (depth_case), equal to the walk's."""
    f, a = acts.get(act).mp, 0.01
    with mpmath.workdps(30):
        s = mpmath.sqrt(2)
        dens = lambda u: mpmath.npdf(u, 0, s)  # noqa: E731
        pts = [-mpmath.inf, -5 * s, 0, 5 * s, mpmath.inf]
        m1 = mpmath.quad(lambda u: f(u, a, s) * dens(u), pts)
        m2 = mpmath.quad(lambda u: f(u, a, s) ** 2 * dens(u), pts)
    gamma_ref, q_ref = float(m1**2 / (m2 - m1**2)), float(m2)
    gamma, q = C.prediction(None, act)
    assert q == pytest.approx(q_ref, rel=1e-10)
    assert gamma == pytest.approx(gamma_ref, rel=1e-9, abs=1e-12)       # odd φ: 0 (the reference is noise)
    case = C.depth_case(C.network(None, act, None), act)
    form = igbsym.get("depth.gamma")
    assert case is not None and float(form.numpy(**case)) == pytest.approx(gamma, rel=form.relative_bound(**case),
                                                                            abs=1e-300)


def test_the_whole_product_passes_at_a_tiny_size():
    """Every admitted op × activation at widths 32, 128 passes its z <= 5 tests (false failure ≈ 200 × 5.7e-7)."""
    res, _ = C.generic_results(Context(seed=11), C.ops_under_test(), acts.names(), **TINY)
    assert len(res) >= 2 * 8 * len(acts.names())
    bad = [r.explain() for r in res if not r.passed]
    assert not bad, bad
    assert {r.form for r in res} == {"depth.gamma", "ops.map"}


class WrongScale(Scale):
    """Scale with its NumPy map off by 10 % in q (the torch module is the true Scale's)."""

    def numpy(self, s):
        return dataclasses.replace(s, q=1.1 * self.alpha**2 * s.q, m=self.alpha * s.m)


def test_a_new_op_with_a_wrong_map_is_caught():
    """An op defined here with a wrong map, given to the generic machinery like any registered op, fails its
    q test at the tiny size, while the true Scale (same draws' sizes) passes."""
    ops = {"Scale": Scale.example(), "WrongScale": WrongScale.example()}
    res, skipped = C.generic_results(Context(seed=5), ops, ("relu", "tanh"), **TINY)
    assert not skipped
    wrong = [r for r in res if r.label.startswith("WrongScale") and "q after" in r.label]
    assert wrong and all(not r.passed for r in wrong), [r.explain() for r in wrong]
    assert all(r.passed for r in res if r.label.startswith("Scale")), [r.explain() for r in res if not r.passed]


def test_a_mutated_depth_gamma_fails_the_check():
    """The baselines' γ results are depth.gamma's own value: its gross mutation fails them (draws reused)."""
    ctx = Context(seed=3)
    with reuse_simulations():
        base, _ = C.generic_results(ctx, {}, ("relu", "gelu"), **TINY)
        with mutated("depth.gamma", "gross"):
            mut, _ = C.generic_results(ctx, {}, ("relu", "gelu"), **TINY)
    assert all(r.passed for r in base)
    assert any(r.form == "depth.gamma" and not r.passed for r in mut)


_SOFTPLUS = r'''
import json, math
import mpmath, numpy as np, sympy as sp, torch
import igbsym.activations as A
A.ACTIVATIONS["softplus"] = A.Activation(
    "softplus", sp.log(1 + sp.exp(A.x_)), lambda x, a, s: np.logaddexp(0.0, x),
    lambda x, a, s: mpmath.log1p(mpmath.exp(x)), False, "log(1 + e^x)",
    lambda h, a, shift: torch.nn.functional.softplus(h), None, math.pi, torch_module="Softplus")
torch.set_num_threads(1)
from igbsym.ops import LayerNorm, Scale
from igbsym.validation import checks_ops as C
from igbsym.validation.checks import Context
run, _ = C.plan_combos(C.ops_under_test(), A.names())
res, _ = C.generic_results(Context(seed=2), {"Scale": Scale.example(), "LayerNorm": LayerNorm.example()},
                           ("softplus",), widths=(32, 128), inits=(64, 32), n_data=128)
print(json.dumps({"planned": sorted({n for n, _, a in run if a == "softplus"}),
                  "results": [[r.form, r.label, r.passed, r.z] for r in res]}))
'''


def test_a_new_activation_entry_is_picked_up():
    """softplus, added in a fresh process as one Activation entry, is planned with every admitted op and passes the
    generic tests (baseline credited to depth.gamma, Scale, LayerNorm after it) at the tiny size."""
    run = subprocess.run([sys.executable, "-c", _SOFTPLUS], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert {"none", "Dense", "Scale", "LayerNorm", "Residual"} <= set(out["planned"])
    assert len(out["results"]) == 6 and all(r[2] for r in out["results"]), out["results"]
    assert {r[0] for r in out["results"]} == {"depth.gamma", "ops.map"}
    assert all(math.isfinite(r[3]) for r in out["results"])
