"""The architecture spec (igbsym/spec.py): each op's SymPy, NumPy and mpmath maps agree; composing them gives the
previous nested closed form of depth.gamma; predict(spec) is depth.gamma; the spec builds the simulated network.

Independent routes: the old (q, c) block map written out here from the papers' formulas (not from the ops), mpmath
at 30 digits, SymPy evaluated at 40 digits, direct quadrature vs the Taylor series across its switch point."""
import math
from dataclasses import replace

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

import igbsym
from igbsym import gauss, ops as O, spec as S
from igbsym.errors import InputError, NumericalError
from igbsym.families import depth as D
from igbsym.predict import predict

G = igbsym.get("depth.gamma")
CLOSED = ("relu", "leaky_relu", "identity", "srelu")


def _ops():
    return st.one_of(
        st.builds(O.Dense, st.none(), st.floats(0.2, 3.0)),
        st.builds(O.Act, st.sampled_from(CLOSED), st.floats(-2.0, 0.95), st.floats(-0.5, 0.5)),
        st.just(O.LayerNorm()), st.just(O.RMSNorm()), st.just(O.BatchNorm()))


def _state(q, c, m, gaussian):
    return O.State(q, c, 1 - c, m if not gaussian else 0, gaussian)


@given(op=_ops(), q=st.floats(0.05, 20.0), c=st.floats(0.0, 0.999), m=st.floats(0.0, 0.9), gaussian=st.booleans())
def test_closed_form_ops_agree_in_three_backends(op, q, c, m, gaussian):
    """NumPy and mpmath (30 digits) and SymPy (evaluated at 40 digits) give the same next state."""
    m = m * math.sqrt(q * c) if not gaussian else 0.0       # a layer mean with m² <= cq (post-activation states)
    if isinstance(op, O.Act) and not gaussian:
        gaussian = True
    if not gaussian and isinstance(op, O.Act):
        return
    np_out = op.numpy(_state(np.float64(q), np.float64(c), np.float64(m), gaussian))
    with mpmath.workdps(30):
        mp_out = op.mp(O.State(mpmath.mpf(q), mpmath.mpf(c), 1 - mpmath.mpf(c), mpmath.mpf(m), gaussian))
        exact = {f: sp.Float(v, 40) for f, v in vars(op).items() if isinstance(v, float)}   # the float's binary value
        sy = replace(op, **exact).sym(O.State(sp.Float(q, 40), sp.Float(c, 40), 1 - sp.Float(c, 40), sp.Float(m, 40),
                                              gaussian))
        for name in ("q", "c", "e", "m"):
            a, b, ref = float(getattr(np_out, name)), getattr(mp_out, name), sp.N(getattr(sy, name), 30)
            assert abs(b - mpmath.mpf(str(ref))) <= mpmath.mpf(10) ** -25 * (1 + abs(b)), (name, b, ref)
            assert a == pytest.approx(float(b), rel=1e-12, abs=1e-14), (name, a, b)


@pytest.mark.parametrize("act", ["gelu", "sigmoid", "silu"])
@pytest.mark.parametrize("q", [0.3, 2.0])
def test_smooth_act_first_layer_numpy_vs_mpmath(act, q):
    """c = 0 (first layer): 1-D Gaussian moments by Gauss-Legendre vs mpmath quadrature at 25 digits."""
    st_np = O.Act(act).numpy(O.State(np.float64(q), np.float64(0), np.float64(1), np.float64(0)))
    with mpmath.workdps(25):
        st_mp = O.Act(act).mp(O.input_state("mpmath").__class__(mpmath.mpf(q), mpmath.mpf(0), mpmath.mpf(1),
                                                                  mpmath.mpf(0)))
    for name in ("q", "c", "e", "m"):
        assert float(getattr(st_np, name)) == pytest.approx(float(getattr(st_mp, name)), rel=1e-12)


@pytest.mark.parametrize("act", ["gelu", "sigmoid", "silu"])
def test_smooth_act_taylor_branch_continuous(act):
    """The noise sd s = sqrt(e q) crosses TAYLOR_S: direct two-pass quadrature just above, 2-term Taylor series
    just below; 1 − c' = V/S must agree to the direct route's accuracy (~1e-16/s)."""
    q, op = 1.3, O.Act(act)
    vals = []
    for s in (gauss.TAYLOR_S * 1.0001, gauss.TAYLOR_S * 0.9999):
        e = s * s / q
        vals.append(float(op.numpy(O.State(np.float64(q), np.float64(1 - e), np.float64(e), np.float64(0))).e) / e)
    assert vals[0] == pytest.approx(vals[1], rel=1e-9)


def _old_nested(L, act, norm, placement):
    """The previous registry's nested closed form: q' = σ_w² S, c' = P/S from (σ_w², 0), P = S·k_s(c),
    norms as in depth.py's docstring (LN/RMSNorm before φ: q → 1; RMSNorm after: no change; LN after: 0)."""
    a, sw = sp.Symbol("a", real=True), sp.Symbol("sigma_w", positive=True)
    slope = {"relu": 0, "identity": 1, "leaky_relu": a, "srelu": 0}[act]
    pre = norm != "none" and placement == "pre"
    k = (1 if pre else sw) / sp.sqrt(2 * sp.pi)
    q, c = sw**2, sp.S.Zero
    for _ in range(L):
        qi = 1 if pre else q
        s = qi * (1 + slope**2) / 2
        p = s * (c + (1 - slope) ** 2 / (1 + slope**2) * (sp.sqrt(1 - c**2) - c * sp.acos(c)) / sp.pi)
        m = (1 - slope) * sp.sqrt(qi) / sp.sqrt(2 * sp.pi)
        if act == "srelu":
            p, s = p - 2 * k * m + k**2, s - 2 * k * m + k**2
        q, c = (sw**2 * s, p / s) if (norm == "none" or pre) else (sw**2, p / s)
    return c / (1 - c)


@pytest.mark.parametrize("L", [1, 2, 3, 4])
@pytest.mark.parametrize("act,norm,placement", [("relu", "none", "pre"), ("leaky_relu", "none", "pre"),
                                                ("srelu", "none", "pre"), ("srelu", "layernorm", "pre"),
                                                ("leaky_relu", "rmsnorm", "post")])
def test_composed_depth_gamma_is_the_old_nested_form(L, act, norm, placement):
    new, old = G.case(L=L, activation=act, norm=norm, placement=placement), _old_nested(L, act, norm, placement)
    new = new.subs(sp.Symbol("sigma_b", nonnegative=True), 0)          # the old form had no biases
    if L == 1:
        assert sp.simplify(new - old) == 0
    a, sw = sp.Symbol("a", real=True), sp.Symbol("sigma_w", positive=True)
    f_new, f_old = (sp.lambdify((a, sw), e, modules="mpmath") for e in (new, old))
    with mpmath.workdps(50):
        for av, sv in (("0.1", "0.7"), ("-0.3", "1.9")):
            x, y = f_new(mpmath.mpf(av), mpmath.mpf(sv)), f_old(mpmath.mpf(av), mpmath.mpf(sv))
            assert abs(x - y) <= mpmath.mpf(10) ** -40 * abs(y), (x, y)


@pytest.mark.parametrize("act", ["relu", "leaky_relu", "srelu", "identity", "tanh", "erf"])
def test_depth_sweep_to_ten_thousand_vs_mpmath(act):
    """Every closed-form activation (and the odd ones) to L = 10^4: NumPy vs the mpmath route at 30 digits."""
    for L in (1, 7, 120, 3000 if act == "srelu" else 10**4):
        ref = G.mp(30, L=L, activation=act, a=0.2, sigma_w=1.3)
        got = float(G.numpy(L=L, activation=act, a=0.2, sigma_w=1.3))
        assert got >= 0 and math.isfinite(got)
        # abs: srelu's layer-1 centring is exact, 0 = √(q/2π) − σ_w/√(2π) to rounding (γ₁ ~ 1e-32)
        assert got == pytest.approx(float(ref), rel=1e-10, abs=1e-25), (L, got, ref)
    if act == "srelu":   # at σ_w = 1.3 the shift dominates: 1 − c decays geometrically, γ_3000 ~ 1e220, γ_10^4 > 1e300
        assert float(ref) > 1e200
        with pytest.raises(NumericalError, match="exceeds the double range"):
            G.numpy(L=10**4, activation=act, a=0.2, sigma_w=1.3)


@pytest.mark.parametrize("act", ["gelu", "silu", "sigmoid"])
@pytest.mark.parametrize("sw", [0.8, 1.0, math.sqrt(2), 2.0])
def test_smooth_depth_sweep_to_ten_thousand(act, sw):
    """Smooth activations to L = 10^4: a finite γ >= 0 that is non-decreasing in L up to the fixed point, or a
    NumericalError saying that γ leaves the double range (1 − c < 1e-300) or q leaves the quadrature range."""
    try:
        path = D.np_path(10**4, act, "none", "pre", 0.01, sw)
    except NumericalError as exc:
        assert "exceeds the double range" in str(exc) or "quadrature route's range" in str(exc)
        return
    g = np.array([float(x) for x in path])
    assert np.isfinite(g).all() and (g >= 0).all()


@pytest.mark.slow
@pytest.mark.parametrize("act,sw,L", [("gelu", 1.3, 3), ("sigmoid", 1.0, 14), ("silu", 2.0, 2)])
def test_smooth_depth_vs_mpmath(act, sw, L):
    """The NumPy quadrature route vs nested mpmath quadrature (20 digits), including sigmoid at L = 14 where
    1 − c ~ 1e-17 (the old recursion returned a negative gamma there)."""
    assert float(G.numpy(L=L, activation=act, sigma_w=sw)) == pytest.approx(
        float(G.mp(20, L=L, activation=act, sigma_w=sw)), rel=1e-9)


def test_sigmoid_deep_is_positive_and_growing():
    """Issue 10's failing points: sigmoid L = 14, σ_w = 1 (was −4.5e15) and L = 16, σ_w = √2 (was inf)."""
    g14 = float(G.numpy(L=14, activation="sigmoid", sigma_w=1.0))
    g13 = float(G.numpy(L=13, activation="sigmoid", sigma_w=1.0))
    g16 = float(G.numpy(L=16, activation="sigmoid", sigma_w=math.sqrt(2)))
    assert g14 > g13 > 1e10 and math.isfinite(g16) and g16 > 0


def test_predict_of_spec_is_depth_gamma():
    spec = S.NetSpec(None, (None,) * 5, activation="leaky_relu", a=0.2, norm="rmsnorm", placement="post",
                     sigma_w=1.1)
    res = predict(spec)
    for row in res.layers:
        ref = float(G.numpy(L=row["layer"], activation="leaky_relu", a=0.2, norm="rmsnorm", placement="post",
                            sigma_w=1.1))
        assert row["gamma"] == pytest.approx(ref, rel=1e-13)
    gen = S.Spec(None, S.mlp_ops(5, "gelu", sigma_w=1.1), sigma_out=1.1)   # a plain Spec: composed generically
    assert predict(gen).gammas == pytest.approx([float(G.numpy(L=l, activation="gelu", sigma_w=1.1))
                                                 for l in range(1, 6)], rel=1e-12)


def test_one_default_sigma_w():
    """σ_w = √2 (the papers' Kaiming setting) is the default of depth.gamma, NetSpec and predict."""
    assert S.SIGMA_W == math.sqrt(2)
    assert next(p for p in G.params if p.name == "sigma_w").default == S.SIGMA_W
    assert S.NetSpec(3, (4,)).args["sigma_w"] == S.SIGMA_W
    assert float(G.numpy(L=3, activation="gelu")) == float(G.numpy(L=3, activation="gelu", sigma_w=math.sqrt(2)))


def test_declared_domain_is_accepted_domain():
    """B is declared as an integer >= 2 (or inf) and every such value is accepted; errors name depth.gamma."""
    b = next(p for p in G.params if p.name == "B")
    assert b.kind == "integer" and b.minimum == 2 and b.allow_inf
    for B in (2, 3, 1000, float("inf")):
        assert float(G.numpy(L=2, activation="relu", norm="batchnorm", B=B)) > 0
    with pytest.raises(InputError, match=r"^depth.gamma: B=1\.5"):
        G.numpy(L=2, activation="relu", norm="batchnorm", B=1.5)
    with pytest.raises(InputError, match=r"^depth.gamma: .*relu only"):
        G.numpy(L=2, activation="gelu", norm="batchnorm", B=16)
    mixed = G.numpy(L=2, activation="relu", norm="batchnorm", B=np.array([16, np.inf]))
    assert mixed[0] == pytest.approx(float(igbsym.get("bn.gamma_canonical").numpy(B=16)), rel=1e-14)
    assert mixed[1] == pytest.approx(1 / (math.pi - 1), rel=1e-14)


@given(c=st.floats(-1, 1), a=st.one_of(st.floats(-1e300, 1e300), st.sampled_from([0.0, 1.0, -1.0, 1e-300])))
def test_corr_map_stable_kernel_vs_mpmath(c, a):
    """depth.corr_map's NumPy kernel vs the defining arc-cosine map over the whole domain. At c = −1 the value is
    1 − r = 2a/(1 + a²), which cancels in the defining form: 700 digits keep it exact for every double a."""
    got = float(K.numpy(c=c, activation="leaky_relu", a=a))
    with mpmath.workdps(700):
        cc, aa = mpmath.mpf(c), mpmath.mpf(a)
        r = (1 - aa) ** 2 / (1 + aa**2)
        ref = cc + r * (mpmath.sqrt(1 - cc**2) - cc * mpmath.acos(cc)) / mpmath.pi
    assert got == pytest.approx(float(ref), rel=1e-12, abs=1e-300)


K = igbsym.get("depth.corr_map")


def test_spec_builds_the_simulated_network():
    """The same spec gives the torch modules: Dense → nn.Linear, norms → nn.LayerNorm/RMSNorm/BatchNorm1d."""
    torch = pytest.importorskip("torch")
    from igbsym.validation.simulate import sample_weights, sequential
    spec = S.NetSpec(5, (6, 4), activation="gelu", norm="layernorm", placement="post", pool=2)
    net = sequential(spec, sample_weights(spec, range(1), 0, "cpu", torch.float64), 0)
    names = [type(m).__name__ for m in net]
    assert names == ["Linear", "Activation", "LayerNorm", "Pool", "Linear", "Activation", "LayerNorm", "Pool",
                     "Linear"]
    assert spec.shapes() == [(5, 6), (3, 4), (2, 2)]


def test_bad_specs():
    with pytest.raises(InputError, match="unknown activation"):
        O.Act("swish")
    with pytest.raises(InputError, match="MaxPool"):
        predict(S.NetSpec(None, (None, None), pool=2))
    with pytest.raises(AttributeError, match="no attribute"):
        S.Spec(3, (O.Dense(4),)).activation


@pytest.mark.parametrize("slope", [0.0, 0.01, -1.0, 3.0])
def test_homogeneous_centre_spread_keeps_its_digits_at_tiny_c(slope):
    """Issue 17: (P − M²)/S was formed as k(c) − r/π, an absolute 1e-17 where the value is ~c (srelu at α = 1e-123
    drove c to 1e-266 and mp30 / mp50 differed). Reference: the same difference of the defining arc-cosine form
    evaluated at 700 digits (no cancellation left at that precision: φ = |x| has (P − M²)/S = c²/π + O(c⁴))."""
    from igbsym.ops.act import mp_spread_ratio, np_spread_ratio, slope_ratio
    for c in [1e-300, 1e-100, 1e-8, 0.3, 0.5, 0.7, 0.999999]:
        with mpmath.workdps(700):
            cc, r = mpmath.mpf(c), slope_ratio(mpmath.mpf(slope))
            ref = cc + r * (mpmath.sqrt(1 - cc**2) - cc * mpmath.acos(cc)) / mpmath.pi - r / mpmath.pi
        kc = float(c + slope_ratio(slope) * (math.sqrt(1 - c * c) - c * math.acos(c)) / math.pi)
        got = float(np_spread_ratio(slope, float(slope_ratio(slope)), c, kc))
        assert got == pytest.approx(float(ref), rel=1e-13, abs=0)
        with mpmath.workdps(30):
            r30, c30 = slope_ratio(mpmath.mpf(slope)), mpmath.mpf(c)
            k30 = c30 + r30 * (mpmath.sqrt(1 - c30**2) - c30 * mpmath.acos(c30)) / mpmath.pi
            assert abs(mp_spread_ratio(mpmath.mpf(slope), r30, c30, k30) - ref) <= mpmath.mpf(10) ** -26 * ref
