"""Residual networks and Labatie's moments: maps, limits, the bridge, bad input, and torch equality."""
import math
import subprocess
import sys
import time

import mpmath
import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings, strategies as st

import igbsym
from igbsym.errors import InputError, NumericalError
from igbsym.engine import chi_path, states as trunk_states
from igbsym.ops import Act, BatchNorm, Dense, LayerNorm, Residual, State
from igbsym.spec import mlp_ops, resnet_ops, residual_block

HOMOG = ("relu", "leaky_relu", "identity")
few = settings(max_examples=max(3, settings().max_examples // 5))


@given(act=st.sampled_from(HOMOG + ("srelu",)), alpha=st.floats(0.05, 3), c=st.floats(0.0, 0.95),
       m=st.floats(0.0, 0.3), a=st.floats(0.0, 0.5))
def test_residual_map_sympy_numpy_mpmath_agree(act, alpha, c, m, a):
    """One residual block's map in the three backends (SymPy evaluated, NumPy, mpmath at 40 digits)."""
    block = residual_block(act, "none", "pre", "linear-first", a, math.sqrt(2))
    op = Residual(alpha, block)
    s_np = op.numpy(State(np.float64(1.0), np.float64(c), np.float64(1 - c), np.float64(m), False))
    with mpmath.workdps(40):
        s_mp = op.mp(State(mpmath.mpf(1), mpmath.mpf(c), 1 - mpmath.mpf(c), mpmath.mpf(m), False))
    asym, csym, msym = sp.Symbol("alpha", nonnegative=True), sp.Symbol("c", real=True), sp.Symbol("m", real=True)
    s_sym = Residual(asym, residual_block(act, "none", "pre", "linear-first", sp.Float(a, 30), sp.sqrt(2))).sym(
        State(sp.S.One, csym, 1 - csym, msym, False))
    ref = float(s_sym.c.subs({asym: alpha, csym: c, msym: m}).evalf(30))
    assert float(s_np.c) == pytest.approx(ref, rel=1e-12, abs=1e-14)
    assert float(s_mp.c) == pytest.approx(ref, rel=1e-12, abs=1e-14)
    assert float(s_np.e) == pytest.approx(1 - ref, rel=1e-10, abs=1e-14)


@given(act=st.sampled_from(HOMOG), L=st.integers(1, 30), order=st.sampled_from(("linear-first", "linear-last")))
def test_alpha_zero_is_the_identity(act, L, order):
    """alpha = 0: the blocks vanish, the readout sees the embedding of N(0, I) data: gamma = 0 exactly."""
    assert igbsym.get("resnet.gamma").numpy(L=L, activation=act, order=order, alpha=0.0) == 0.0


@given(act=st.sampled_from(("relu", "leaky_relu")), L=st.integers(1, 6))
@few
def test_large_alpha_recovers_the_vanilla_depth_law(act, L):
    """alpha -> inf (positively homogeneous phi: scale-free): the skip path is negligible and the embedding merges with
    the first Dense (vanilla depth L)."""
    big = igbsym.get("resnet.gamma").numpy(L=L, activation=act, alpha=1e7, a=0.1)
    vanilla = igbsym.get("depth.gamma").numpy(L=L, activation=act, a=0.1)
    assert big == pytest.approx(vanilla, rel=1e-5)


def test_relu_one_block_closed_form_against_quadrature():
    """gamma after one block by direct mpmath quadrature of the moments (alpha = 0.8, sigma_w = 1.3)."""
    al, sw = mpmath.mpf("0.8"), mpmath.mpf("1.3")
    with mpmath.workdps(30):
        dens = lambda z: mpmath.npdf(z)  # noqa: E731
        S = mpmath.quad(lambda z: max(sw**2 * z, 0) ** 2 * dens(z), [-mpmath.inf, 0, mpmath.inf])
        M = mpmath.quad(lambda z: max(sw**2 * z, 0) * dens(z), [-mpmath.inf, 0, mpmath.inf])
        q, p = sw**2 + al**2 * S, al**2 * M**2
        ref = p / (q - p)
    got = igbsym.get("resnet.gamma").numpy(L=1, activation="relu", alpha=0.8, sigma_w=1.3)
    assert got == pytest.approx(float(ref), rel=1e-13)


def test_deep_numpy_route_against_mpmath_and_without_overflow():
    """q grows like 2^L through ReLU blocks: the scale-free path is rescaled and matches mpmath at L = 2000."""
    form = igbsym.get("resnet.gamma")
    got = form.numpy(L=2000, activation="relu", alpha=1.0, order="linear-last")
    assert got == pytest.approx(float(form.mp(30, L=2000, activation="relu", alpha=1, order="linear-last")), rel=1e-9)


@given(c=st.floats(0.0, 0.999))
def test_bridge_centred_ratio_is_one_minus_c(c):
    """moments.centred_ratio(gamma) = 1 - c at gamma = c/(1 - c) (the point-like/IGB bridge)."""
    assert igbsym.get("moments.centred_ratio").numpy(gamma=c / (1 - c)) == pytest.approx(1 - c, rel=1e-12)


@pytest.mark.parametrize("act", ["relu", "leaky_relu", "tanh", "gelu", "silu", "sigmoid", "erf", "srelu"])
def test_sensitivity_rates_are_nonnegative_poincare(act):
    """Gaussian Poincare inequality: Var phi(Z) <= E phi'(Z)^2, so both growth rates are >= 0; NumPy == mpmath."""
    for name in ("moments.bn_feedforward_rate", "moments.bn_resnet_exponent"):
        form = igbsym.get(name)
        v = form.numpy(activation=act, a=0.2)
        assert v > 0
        assert v == pytest.approx(float(form.mp(30, activation=act, a=0.2)), rel=1e-11)
    assert igbsym.get("moments.bn_feedforward_rate").numpy(activation="identity") == 0


def test_bn_feedforward_rate_is_exact_per_layer():
    """chi_{l+1}/chi_l = exp(rate) exactly from layer 2 on (the BN state is the same at every layer)."""
    form = igbsym.get("moments.sensitivity")
    chis = [form.numpy(L=L, architecture="bn_feedforward", activation="relu") for L in (2, 3, 7)]
    rate = igbsym.get("moments.bn_feedforward_rate").numpy(activation="relu")
    assert math.log(chis[1] / chis[0]) == pytest.approx(rate, rel=1e-12)
    assert math.log(chis[2] / chis[0]) / 5 == pytest.approx(rate, rel=1e-12)


@pytest.mark.parametrize("norm,order", [("none", "linear-first"), ("layernorm", "linear-first"),
                                        ("batchnorm", "linear-last"), ("none", "linear-last")])
def test_residual_torch_module_equals_batched_forward(norm, order):
    """Residual.torch (an nn.Module per init) and Residual.batched (all inits at once) agree per init."""
    torch.manual_seed(0)
    block = residual_block("relu", norm, "pre", order, width=12)
    if norm == "batchnorm":   # full batch in torch = a mini-batch of all 16 rows
        block = (BatchNorm(16),) + block[1:]
    op = Residual(0.7, block)
    ws = [torch.randn(3, 12, 12, dtype=torch.float64) for _ in op.shapes(12)]
    h = torch.randn(3, 16, 12, dtype=torch.float64)
    it = iter(ws)
    batched = op.batched(h, lambda: next(it))
    for i in range(3):
        mod = op.torch(12, dtype=torch.float64)
        linears = [m for m in mod.modules() if isinstance(m, torch.nn.Linear)]
        with torch.no_grad():
            for lin, w in zip(linears, ws):
                lin.weight.copy_(w[i].T)
            torch.testing.assert_close(mod(h[i]), batched[i], rtol=1e-12, atol=1e-12)


def test_bad_input_one_line():
    with pytest.raises(InputError, match="alpha"):
        igbsym.get("resnet.gamma").numpy(L=2, activation="relu", alpha=-1.0)
    with pytest.raises(InputError, match="L"):
        igbsym.get("resnet.gamma").numpy(L=0, activation="relu", alpha=1.0)
    with pytest.raises(InputError, match="norm"):
        igbsym.get("resnet.gamma").numpy(L=1, activation="relu", alpha=1.0, norm="groupnorm")
    with pytest.raises(InputError, match="keep the trunk width"):
        Residual(1.0, (Dense(8), Act("relu"))).width(16)
    with pytest.raises(InputError, match="start or end with a Dense"):
        Residual(1.0, (LayerNorm(), Act("relu")))
    with pytest.raises(InputError, match="alpha"):
        Residual(-0.5, (Dense(8), Act("relu")))
    out = subprocess.run([sys.executable, "-m", "igbsym", "eval", "resnet.gamma", "L=2", "activation=relu",
                          "alpha=-1"], capture_output=True, text=True)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_chi_path_matches_vanilla_identity():
    """Vanilla ReLU: nu and q scale alike, so chi_L^2 = 1 + gamma_L (an identity between two registered laws)."""
    for L in (1, 4, 9):
        chi = float(chi_path(mlp_ops(L, "relu"))[-1][1])
        assert chi**2 == pytest.approx(1 + igbsym.get("depth.gamma").numpy(L=L, activation="relu"), rel=1e-12)


def test_trunk_states_sympy_is_exact():
    """The SymPy route keeps pi and sqrt exact (no floats) for ReLU."""
    g = igbsym.get("resnet.gamma").case(L=1, activation="relu")
    assert not g.atoms(sp.Float)
    s = trunk_states(resnet_ops(2, "relu", sp.Symbol("alpha", nonnegative=True), sigma_w=sp.sqrt(2)), "sympy")[-1]
    assert not s.c.atoms(sp.Float) and not s.e.atoms(sp.Float)


def test_predict_residual_cli_equals_resnet_gamma():
    """`igbsym predict --residual` prints resnet.gamma after every block."""
    import json
    from igbsym.cli import main
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["predict", "--residual", "--alpha", "0.5", "--depth", "3", "--json"])
    assert rc == 0
    res = json.loads(buf.getvalue())
    form = igbsym.get("resnet.gamma")
    assert [r["gamma"] for r in res["layers"]] == pytest.approx(
        [form.numpy(L=L, activation="relu", alpha=0.5) for L in (1, 2, 3)], rel=1e-12)
    assert res["source"].startswith("resnet.gamma")
    for bad in (["--residual", "--alpha", "-1"], ["--alpha", "2"], ["--residual", "--pool", "2"]):
        with contextlib.redirect_stderr(io.StringIO()) as err:
            assert main(["predict"] + bad) == 2
        assert len(err.getvalue().strip().splitlines()) == 1


# --- issue 17 regressions (helper dep) -------------------------------------------------------------------------
@pytest.mark.parametrize("act", ["tanh", "erf", "identity"])
@pytest.mark.parametrize("norm,order", [("none", "linear-first"), ("layernorm", "linear-first"),
                                        ("rmsnorm", "linear-last")])
def test_odd_activation_resnet_is_zero_exactly_at_any_depth(act, norm, order):
    """Every op is odd in the input (Dense, odd φ, the norms, x + αF(x)), so each node's centre over the symmetric
    data is 0: γ = 0 exactly (exact value), at a cost independent of L. Old code: the mp route composed a 1-d
    quadrature per block (23 s for 100 tanh blocks at 30 digits)."""
    form = igbsym.get("resnet.gamma")
    start = time.process_time()
    kw = dict(L=10000, activation=act, norm=norm, order=order, alpha=0.7, sigma_w=1.3)
    assert float(form.numpy(**kw)) == 0.0 and form.mp(30, **kw) == 0
    assert time.process_time() - start < 5


def test_smooth_resnet_depth_is_capped_and_listed():
    """Nested-quadrature blocks have no fixed point to stop at: L <= L_NESTED is part of the declared domain (the
    condition is listed) and beyond it evaluation raises InputError naming the form."""
    from igbsym.params import L_NESTED
    form = igbsym.get("resnet.gamma")
    assert any(f"L <= {L_NESTED}" in c for c in form.describe()["domain"]["conditions"])
    with pytest.raises(InputError, match=f"^resnet.gamma: .*L <= .* fails at L={L_NESTED + 1}, activation=gelu, "
                                         "norm=layernorm"):   # a structural condition names the structural values
        form.numpy(L=L_NESTED + 1, activation="gelu", norm="layernorm", alpha=1.0)
    assert float(form.numpy(L=L_NESTED + 1, activation="gelu", norm="batchnorm", alpha=1.0)) > 0   # BN: cheap


def test_sensitivity_raises_where_one_minus_c_underflows():
    """resnet relu: 1 − c falls below 1e-300 near block 1500, and χ² = ν/((1 − c) q) became a ratio of
    subnormals (old code: χ = 1.0 at L = 1e4; the mp route gives 1.616). Now a NumericalError; before the
    underflow the NumPy value equals the mp route's."""
    form = igbsym.get("moments.sensitivity")
    with pytest.raises(NumericalError, match="^moments.sensitivity: 1 - c"):
        form.numpy(L=10000, architecture="resnet", activation="relu", alpha=1.0)
    ref = form.mp(30, L=10000, architecture="resnet", activation="relu", alpha=1.0)   # χ has plateaued by L = 1000
    assert float(form.numpy(L=1000, architecture="resnet", activation="relu", alpha=1.0)) == pytest.approx(
        float(ref), rel=1e-12)


def test_deep_bn_feedforward_smooth_sensitivity_costs_what_a_shallow_one_does():
    """After full-batch BN every layer sees q = 1: the quadratures are evaluated once (memoised), so L = 1e4 costs
    seconds (old code: 35 s NumPy, > 5 min mp). The value grows by √p a layer exactly from layer 2 on, p from
    moments.bn_feedforward_rate (an independent route: activation.var and one E[φ'(Z)²])."""
    form = igbsym.get("moments.sensitivity")
    start = time.process_time()
    chi2, chi_L = (form.mp(30, L=L, architecture="bn_feedforward", activation="gelu") for L in (2, 3000))
    rate = igbsym.get("moments.bn_feedforward_rate").mp(30, activation="gelu")
    with mpmath.workdps(30):
        assert abs(mpmath.log(chi_L / chi2) / (3000 - 2) - rate) < mpmath.mpf(10) ** -20
    assert float(form.numpy(L=3000, architecture="bn_feedforward", activation="gelu")) == pytest.approx(
        float(chi_L), rel=1e-10)
    assert time.process_time() - start < 15


@pytest.mark.parametrize("act", ["gelu", "silu", "sigmoid"])
def test_noise_factor_cost_and_value_do_not_depend_on_q(act):
    """Issue 17: E[φ'(u)²] sized its z-grid by 0.4/√q (alpha = 3e26 asked numpy for ~1e28 nodes: ValueError). It
    now uses igbsym.gauss's kink nodes. Reference: mpmath quadrature in x = √q z with breakpoints where φ' bends
    (x-scale 1), at 40 digits; an array call gives each point its scalar value."""
    from igbsym.functions import MPMATH_MODULES
    x = igbsym.activations.x_
    d = sp.lambdify(x, sp.diff(igbsym.activations.get(act).expr, x), modules=MPMATH_MODULES)
    qs = [1e-6, 2.0, 1e8, 1e40]
    for q in qs:
        with mpmath.workdps(40):
            sd = mpmath.sqrt(q)
            ref = mpmath.quad(lambda x: d(x) ** 2 * mpmath.npdf(x / sd) / sd,
                              [-mpmath.inf, -50 * sd, -45, -5, 0, 5, 45, 50 * sd, mpmath.inf])
        got = Act(act).noise(State(q, 0.0, 1.0, 0.0), "numpy")
        assert float(got) == pytest.approx(float(ref), rel=1e-12, abs=0)
    arr = Act(act).noise(State(np.array(qs), 0.0, 1.0, 0.0), "numpy")
    assert [float(v) for v in arr] == [float(Act(act).noise(State(q, 0.0, 1.0, 0.0), "numpy")) for q in qs]


def test_srelu_shift_cancellation_in_the_closed_form_case():
    """Issue 17: srelu's E φ = (√q_φ − 1)/√(2π) cancels where the block's φ input has q_φ ≈ 1. The lambdified L = 1
    closed form was 100 % off at σ_w = 1 + 1e-11, α = 3.2e-6; the composed NumPy route 3.5e-6 off at L = 2,
    α = 2.6e-123, σ_w = 1 + 2.4e-11 (domain seed 30343). Such points take the mpmath route. References: the exact
    L = 1 expression evaluated by SymPy at 50 digits, and the mpmath route at 80 digits."""
    form = igbsym.get("resnet.gamma")
    expr = form.case(L=1, activation="srelu")
    point = {"alpha": 3.2414865110862653e-06, "sigma_w": 1.00000000001, "a": 0.01}
    ref = expr.subs({form.symbol(k): sp.Float(v, 60) for k, v in point.items()}).evalf(50)
    assert float(form.numpy(L=1, activation="srelu", **point)) == pytest.approx(float(ref), rel=1e-13, abs=0)
    deep = {"alpha": 2.6e-123, "sigma_w": 1 + 2.4e-11}
    assert float(form.numpy(L=2, activation="srelu", **deep)) == pytest.approx(
        float(form.mp(80, L=2, activation="srelu", **deep)), rel=2e-13, abs=0)
