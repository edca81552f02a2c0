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


# --- issue 48: sigma_b in every Dense (embedding, branches, readout) ------------------------------------------------
# numpy and mp(30) values before sigma_b existed (commit 6aa42fb): sigma_b = 0 must give them bit for bit
UNBIASED = [
    (dict(L=1, activation="relu", alpha=0.8, sigma_w=1.3), 0.12577428747263766, "0.12577428747263764"),
    (dict(L=3, activation="relu", alpha=1.0), 1.602965849687912, "1.602965849687912"),
    (dict(L=4, activation="relu", alpha=0.7, order="linear-last"), 0.49723149990737464, "0.49723149990737453"),
    (dict(L=2000, activation="relu", alpha=1.0, order="linear-last"), 23005.3277348227, "23005.32773482394"),
    (dict(L=4, activation="relu", alpha=0.5, norm="layernorm"), 0.2799748703797594, "0.2799748703797594"),
    (dict(L=4, activation="relu", alpha=1.0, norm="batchnorm", order="linear-last"), 0.2693683246243169,
     "0.2693683246243169"),
    (dict(L=3, activation="leaky_relu", alpha=0.6, a=0.2), 0.4825693575025841, "0.48256935750258406"),
    (dict(L=2, activation="gelu", alpha=1.0), 0.5727001478917242, "0.572700147891724"),
    (dict(L=2, activation="srelu", alpha=0.9), 0.18328493927231315, "0.1832849392723131"),
    (dict(L=5, activation="tanh", alpha=0.7), 0.0, "0.0"),
    (dict(L=3, activation="identity", alpha=0.7), 0.0, "0.0"),
    (dict(L=2, activation="sigmoid", alpha=0.5, order="linear-last"), 0.12185226645901961, "0.12185226645901961"),
]


@pytest.mark.parametrize("kw,old_np,old_mp", UNBIASED)
def test_sigma_b_zero_reproduces_the_unbiased_values_bit_for_bit(kw, old_np, old_mp):
    form = igbsym.get("resnet.gamma")
    for extra in ({}, {"sigma_b": 0.0}):
        assert float(form.numpy(**kw, **extra)) == old_np
        assert repr(float(form.mp(30, **kw, **extra))) == old_mp


def _relu_pair(q, p):
    """E[relu(u) relu(u')], (u, u') ~ N(0, [[q, p], [p, q]]), by 2-d mpmath quadrature of the Gaussian density in
    polar coordinates (z1, z2) = t (cos θ, sin θ), u' = √q (ρ z1 + √(1 − ρ²) z2) = √q t sin(θ + asin ρ): both are
    positive on the wedge −asin ρ < θ < π/2."""
    phi0 = mpmath.asin(p / q)

    def density(th, t):
        return t**3 * mpmath.cos(th) * mpmath.sin(th + phi0) * mpmath.exp(-t**2 / 2) / (2 * mpmath.pi)
    return q * mpmath.quad(density, [-phi0, mpmath.pi / 2], [0, mpmath.inf])


def _hand_gamma(L, order, alpha, sw, sb):
    """gamma_L of a ReLU ResNet with biases N(0, sb^2) in every Dense, the block recursion written out: a bias adds
    sb^2 to the second moment q and the shared moment P of its Dense's output; the trunk x and the branch F are
    uncorrelated apart from their means (F's Dense and bias are fresh); the readout is Dense(sw, sb)."""
    b2, w2 = sb**2, sw**2
    q, P, m = w2 + b2, b2, mpmath.mpf(0)                                   # the embedding
    for _ in range(L):
        if order == "linear-first":                                        # F = relu(W x + b)
            qh, ph = w2 * q + b2, w2 * P + b2
            S, M, PF = qh / 2, mpmath.sqrt(qh / (2 * mpmath.pi)), _relu_pair(qh, ph)
        else:                                                              # F = W relu(x) + b, x ~ N(0, .)
            S, M, PF = w2 * q / 2 + b2, 0, w2 * _relu_pair(q, P) + b2
        q, P, m = q + 2 * alpha * m * M + alpha**2 * S, P + 2 * alpha * m * M + alpha**2 * PF, m + alpha * M
    return (w2 * P + b2) / (w2 * (q - P))


@pytest.mark.parametrize("L,order,alpha,sw,sb", [(1, "linear-first", "0.8", "1.3", "0.4"),
                                                 (2, "linear-first", "1", "1.41421356237309505", "0.7"),
                                                 (2, "linear-last", "0.6", "1.2", "1.5")])
def test_biased_relu_gamma_against_direct_2d_quadrature(L, order, alpha, sw, sb):
    """An independent route: the block recursion by hand with the pair moment by 2-d quadrature, to the form's
    stated accuracy (NumPy and mpmath routes)."""
    form = igbsym.get("resnet.gamma")
    with mpmath.workdps(20):
        ref = _hand_gamma(L, order, *(mpmath.mpf(v) for v in (alpha, sw, sb)))
    kw = dict(L=L, activation="relu", order=order, alpha=float(alpha), sigma_w=float(sw), sigma_b=float(sb))
    bound = form.accuracy.at(kw)
    assert abs(float(form.numpy(**kw)) / float(ref) - 1) <= bound
    assert abs(float(form.mp(30, **kw)) / float(ref) - 1) <= bound
    assert float(ref) > 1.05 * float(form.numpy(**{**kw, "sigma_b": 0.0}))      # the bias matters here


def test_biased_resnet_gamma_against_torch_with_a_mutation():
    """Monte Carlo: a wide ReLU ResNet (width 512 = d_in, 96 inits with their own data, fixed seed) with biases
    N(0, 1) in every Linear (validation/simulate.py draws them) vs resnet.gamma: |z| <= 5 from the SE. Dropping the
    readout's bias term (the trunk's c/e) is far outside that allowance (measured: z = -0.5, mutated z = -17)."""
    from igbsym.spec import SIGMA_W, Spec
    from igbsym.validation.simulate import simulate
    from igbsym.validation.stats import gamma_units, ratio_estimate
    L, alpha, order, sb, w, D = 1, 1.0, "linear-last", 1.0, 512, 256
    spec = Spec(w, resnet_ops(L, "relu", alpha, order=order, width=w, sigma_b=sb), n_classes=w, sigma_out=SIGMA_W,
                sigma_b_out=sb)
    res = simulate(spec, 96, D, seed=48, dtype=torch.float64, layer_stats=False, fresh_data=True)
    est = ratio_estimate(*gamma_units(res.out.mean, res.out.var, D))
    pred = float(igbsym.get("resnet.gamma").numpy(L=L, activation="relu", alpha=alpha, order=order, sigma_b=sb))
    assert abs(est.value - pred) <= 5 * est.se
    trunk = trunk_states(resnet_ops(L, "relu", alpha, order=order, sigma_b=sb))[-1]
    mutated = float(trunk.c / trunk.e)                      # no readout bias: (sigma_w^2 c q)/(sigma_w^2 e q)
    assert abs(mutated - est.value) > 12 * est.se


def test_biased_bad_input_one_line():
    form = igbsym.get("resnet.gamma")
    with pytest.raises(InputError, match="^resnet.gamma: .*sigma_b"):
        form.numpy(L=2, activation="relu", alpha=1.0, sigma_b=-0.5)
    with pytest.raises(InputError, match=r"^resnet.gamma: .*sigma_b = 0 .*N = inf"):
        form.numpy(L=2, activation="relu", alpha=1.0, sigma_b=0.5, N=64)
    with pytest.raises(InputError, match=r"^resnet.gamma: .*sigma_b = 0 .*norm=none"):
        form.numpy(L=2, activation="relu", alpha=1.0, sigma_b=0.5, norm="layernorm")
    with pytest.raises(InputError, match=r"^resnet.gamma: .*L <= 4 for tanh"):
        form.numpy(L=5, activation="tanh", alpha=1.0, sigma_b=0.5)
    for args in (["sigma_b=-1"], ["sigma_b=0.5", "N=64"]):
        out = subprocess.run([sys.executable, "-m", "igbsym", "eval", "resnet.gamma", "L=2", "activation=relu",
                              "alpha=1"] + args, capture_output=True, text=True)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_odd_phi_with_bias_is_not_zero():
    """The odd-φ shortcut γ = 0 holds at σ_b = 0 only: a bias is shared by the data. identity at L = 1 is exact."""
    form = igbsym.get("resnet.gamma")
    g = form.case(L=1, activation="identity")
    assert g.subs(form.symbol("sigma_b"), 0) == 0 and g != 0
    for act in ("identity", "tanh", "erf"):
        v = float(form.numpy(L=3, activation=act, alpha=0.7, sigma_b=0.3))
        assert v > 0 and v == pytest.approx(float(form.mp(30, L=3, activation=act, alpha=0.7, sigma_b=0.3)), rel=1e-12)


def test_predict_residual_with_sigma_b_equals_resnet_gamma():
    """`igbsym predict --residual --sigma-b S` prints resnet.gamma(sigma_b=S) after every block (the readout's bias
    counted at every block); a norm with --sigma-b is refused in one line."""
    import contextlib
    import io
    import json
    from igbsym.cli import main
    form = igbsym.get("resnet.gamma")
    for order in ("linear-first", "linear-last"):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert main(["predict", "--residual", "--alpha", "0.5", "--depth", "3", "--sigma-b", "0.4", "--order",
                         order, "--json"]) == 0
        res = json.loads(buf.getvalue())
        assert res["sigma_b"] == 0.4
        assert [r["gamma"] for r in res["layers"]] == pytest.approx(
            [form.numpy(L=L, activation="relu", alpha=0.5, order=order, sigma_b=0.4) for L in (1, 2, 3)], rel=1e-12)
    with contextlib.redirect_stderr(io.StringIO()) as err:
        assert main(["predict", "--residual", "--sigma-b", "0.4", "--norm", "layernorm"]) == 2
    assert len(err.getvalue().strip().splitlines()) == 1


def test_biased_deep_numpy_route_rescales_and_matches_mpmath():
    """q grows like 2^L through ReLU blocks: the NumPy state is rescaled with its biases (no overflow) and matches
    mpmath at L = 10000."""
    form = igbsym.get("resnet.gamma")
    kw = dict(L=10000, activation="relu", alpha=1.0, order="linear-last", sigma_b=0.5)
    assert float(form.numpy(**kw)) == pytest.approx(float(form.mp(30, **kw)), rel=1e-12)
