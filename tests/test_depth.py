"""Depth law of γ and normalisation placement (igbsym/families/depth.py).

Independent routes: scipy / mpmath quadrature of the defining Gaussian integrals, special-case identities, and
the papers' exact values (γ₁ = 1/(π − 1) for ReLU)."""
import math
import subprocess
import sys

import mpmath
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from scipy import integrate, special

import igbsym
from igbsym.engine.routes import arccos_gamma_mp
from igbsym.families import depth as D
from reference import gauss_expect, layer_walk

G = igbsym.get("depth.gamma")
K = igbsym.get("depth.corr_map")
PI = math.pi


def relu_pair_moment(c, slope=0.0):
    """E[φ(u)φ(u')]/E[φ(u)²] for u = z1, u' = c z1 + s z2: outer scipy quad over z1 of φ(z1) times the inner
    mean E_z2 φ(c z1 + s z2) = (1 − slope)(mΦ(m/s) + s φ(m/s)) + slope·m (independent of the arc-cosine form)."""
    s = math.sqrt(1 - c * c)
    f = lambda x: x if x > 0 else slope * x  # noqa: E731
    dens = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * PI)  # noqa: E731
    inner = lambda m: (1 - slope) * (m * special.ndtr(m / s) + s * dens(m / s)) + slope * m  # noqa: E731
    val = sum(integrate.quad(lambda z: f(z) * inner(c * z) * dens(z), lo, hi, epsabs=1e-14, epsrel=1e-13)[0]
              for lo, hi in ((-14, 0), (0, 14)))
    return val / ((1 + slope**2) / 2)


@pytest.mark.parametrize("c", [0.0, 0.3, -0.4, 0.9])
@pytest.mark.parametrize("act,slope", [("relu", 0.0), ("leaky_relu", 0.2), ("leaky_relu", -0.5)])
def test_corr_map_is_the_gaussian_integral(c, act, slope):
    got = float(K.numpy(c=c, activation=act, a=slope))
    assert got == pytest.approx(relu_pair_moment(c, slope), rel=1e-8, abs=1e-10)


def test_corr_map_special_values():
    assert float(K.numpy(c=1.0, activation="relu")) == pytest.approx(1.0, abs=1e-15)
    assert float(K.numpy(c=0.0, activation="relu")) == pytest.approx(1 / PI, rel=1e-15)
    cs = np.linspace(-1, 1, 41)
    np.testing.assert_allclose(K.numpy(c=cs, activation="leaky_relu", a=0.0), K.numpy(c=cs, activation="relu"),
                               rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(K.numpy(c=cs, activation="identity"), cs, atol=1e-15)
    with pytest.raises(igbsym.InputError, match="-1 <= c <= 1"):
        K.numpy(c=1.5, activation="relu")


@pytest.mark.parametrize("act", igbsym.activations.names())
@pytest.mark.parametrize("sw", [0.6, 1.0, 2.0])
def test_one_layer_is_igb_gamma(act, sw):
    got = float(G.numpy(L=1, activation=act, sigma_w=sw, a=0.1))
    ref = float(igbsym.get("igb.gamma").numpy(activation=act, sigma_w=sw, a=0.1))
    assert got == pytest.approx(ref, rel=1e-10, abs=1e-14)


def test_relu_first_values_and_mpmath():
    assert float(G.numpy(L=1, activation="relu")) == pytest.approx(1 / (PI - 1), rel=1e-15)
    with mpmath.workdps(50):
        c = mpmath.mpf(0)
        for L in range(1, 31):
            c = (mpmath.sqrt(1 - c * c) + (mpmath.pi - mpmath.acos(c)) * c) / mpmath.pi
            if L in (1, 2, 4, 5, 12, 30):
                ref = c / (1 - c)
                assert float(G.numpy(L=L, activation="relu")) == pytest.approx(float(ref), rel=1e-12)
                assert abs(G.mp(40, L=L, activation="relu") - ref) < mpmath.mpf(10) ** -35 * ref


@pytest.mark.parametrize("L", [1, 2, 3, 4])
@pytest.mark.parametrize("act", ["relu", "leaky_relu", "srelu"])
def test_exact_case_kernel_matches_lambdified(L, act):
    assert G.is_exact(L=L, activation=act)
    a, sw, sb = np.array([0.0, 0.1, -0.3, 0.2]), np.array([0.7, 1.0, 1.9, 1.2]), np.array([0.0, 0.0, 0.4, 1.5])
    if act == "srelu":                                   # its shift is defined without biases: sigma_b is refused
        sb = np.zeros(4)
    np.testing.assert_allclose(G.numpy(L=L, activation=act, a=a, sigma_w=sw, sigma_b=sb),
                               G.lambdified(L=L, activation=act)(a=a, sigma_w=sw, sigma_b=sb, B=np.inf), rtol=1e-11,
                               atol=1e-15)


def test_rate_in_depth():
    for L in (10**4, 10**5):
        for slope in (0.0, 0.2):
            r = (1 - slope) ** 2 / (1 + slope**2)
            ratio = float(G.numpy(L=L, activation="leaky_relu", a=slope)) / (2 * r * r * L * L / (9 * PI**2))
            assert abs(ratio - 1) < 60 * math.log(L) / L
    g = G.numpy(L=200, activation="relu")
    assert np.isfinite(g) and g > float(G.numpy(L=199, activation="relu"))


@pytest.mark.parametrize("L", [1, 3, 9])
def test_placements_homogeneous(L):
    none = float(G.numpy(L=L, activation="relu"))
    for short in ("ln_pre", "rms_pre", "rms_post"):
        assert float(igbsym.get(f"depth.gamma_{short}").numpy(L=L, activation="relu")) == pytest.approx(none, rel=1e-14)
    for short in ("ln_post", "bn_post"):
        assert float(igbsym.get(f"depth.gamma_{short}").numpy(L=L, activation="relu")) == 0.0
    bn = igbsym.get("depth.gamma_bn_pre")
    assert float(bn.numpy(L=L, activation="relu")) == pytest.approx(1 / (PI - 1), rel=1e-14)
    assert float(bn.numpy(L=L, activation="relu", B=32)) == pytest.approx(
        float(igbsym.get("bn.gamma_canonical").numpy(B=32)), rel=1e-14)
    assert float(G.numpy(L=L, activation="relu", norm="batchnorm", placement="pre", B=32)) == pytest.approx(
        float(bn.numpy(L=L, activation="relu", B=32)), rel=1e-15)


def test_bn_pre_is_one_layer_unit_variance():
    for act in ("gelu", "sigmoid", "leaky_relu"):
        got = float(igbsym.get("depth.gamma_bn_pre").numpy(L=6, activation=act, sigma_w=2.5, a=0.2))
        assert got == pytest.approx(float(igbsym.get("igb.gamma").numpy(activation=act, sigma_w=1.0, a=0.2)), rel=1e-12)
    with pytest.raises(igbsym.InputError, match="relu only"):
        igbsym.get("depth.gamma_bn_pre").numpy(L=2, activation="gelu", B=16)


def test_odd_activations_and_post_norms_are_zero():
    for act in ("tanh", "erf", "identity"):
        for norm in D.NORMS:
            for pl in D.PLACEMENTS:
                assert float(G.numpy(L=5, activation=act, norm=norm, placement=pl)) == 0.0
    for act in ("gelu", "silu", "sigmoid", "srelu", "leaky_relu"):
        assert float(G.numpy(L=4, activation=act, norm="layernorm", placement="post")) == 0.0


def test_srelu_variance_fixed_point():
    sw = math.sqrt(2 * PI / (PI - 1))
    assert abs(float(G.numpy(L=12, activation="srelu", sigma_w=sw))) < 1e-12
    assert float(G.numpy(L=2, activation="srelu", sigma_w=1.0)) > 0.1


def _scipy_gamma(act, L, sw, norm="none"):
    """Independent (q, c) recursion: scipy quad for 1-D moments, nested quad for the centre integral."""
    f = {"gelu": lambda x: x * special.ndtr(x), "sigmoid": special.expit,
         "silu": lambda x: x * special.expit(x)}[act]
    dens = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * PI)  # noqa: E731
    E = lambda g: integrate.quad(lambda z: g(z) * dens(z), -14, 14, limit=200, epsabs=1e-14)[0]  # noqa: E731
    q, c = sw * sw, 0.0
    for _ in range(L):
        qi = 1.0 if norm == "layernorm" else q
        m, s = E(lambda z: f(math.sqrt(qi) * z)), E(lambda z: f(math.sqrt(qi) * z) ** 2)
        p = m * m if c == 0 else E(lambda z0: E(lambda z1: f(math.sqrt(c * qi) * z0
                                                             + math.sqrt((1 - c) * qi) * z1)) ** 2)
        q, c = sw * sw * s, p / s
    return c / (1 - c)


@pytest.mark.parametrize("act,sw,norm", [("gelu", 1.0, "none"), ("sigmoid", 1.5, "none"), ("gelu", 1.0, "layernorm"),
                                         ("silu", 2.0, "none")])
def test_numeric_route_vs_scipy(act, sw, norm):
    got = float(G.numpy(L=2, activation=act, sigma_w=sw, norm=norm))
    assert got == pytest.approx(_scipy_gamma(act, 2, sw, norm), rel=1e-8)


def test_layernorm_differs_from_no_norm_for_gelu():
    kw = dict(L=6, activation="gelu", sigma_w=1.0)
    assert float(G.numpy(norm="layernorm", **kw)) > 2 * float(G.numpy(**kw))


@pytest.mark.slow
@pytest.mark.parametrize("act", ["gelu", "sigmoid"])
def test_numeric_route_vs_mpmath(act):
    got = float(G.numpy(L=2, activation=act, sigma_w=1.3))
    assert got == pytest.approx(float(G.mp(20, L=2, activation=act, sigma_w=1.3)), rel=1e-11)


@pytest.mark.parametrize("act,L", [("relu", 3000), ("srelu", 40), ("leaky_relu", 5)])
@pytest.mark.parametrize("dps", [5, 15, 40])
def test_mp_route_any_dps(act, L, dps):
    """Issue 17: --dps gave ZeroDivisionError/InputError tracebacks; the mp route now carries 1 − c itself.
    (Smooth activations at deep L: tests/test_spec.py::test_smooth_depth_vs_mpmath, slow.)"""
    v = G.mp(dps, L=L, activation=act, sigma_w=1.0)
    assert v > 0 and mpmath.isfinite(v)
    if dps >= 15:    # rounding grows like L ulps of the working precision (dps = 5: a value, not an accurate one)
        assert float(v) == pytest.approx(float(G.mp(30, L=L, activation=act, sigma_w=1.0)), rel=L * 10.0 ** (3 - dps))


def test_bad_input():
    with pytest.raises(igbsym.InputError, match="L=0"):
        G.numpy(L=0, activation="relu")
    with pytest.raises(igbsym.InputError, match="norm"):
        G.numpy(L=2, activation="relu", norm="groupnorm")
    with pytest.raises(igbsym.InputError, match="placement"):
        G.numpy(L=2, activation="relu", norm="layernorm", placement="middle")
    with pytest.raises(igbsym.InputError, match="sigma_w"):
        G.numpy(L=2, activation="gelu", sigma_w=-1)


@given(act=st.sampled_from(igbsym.activations.names()), L=st.integers(1, 25), norm=st.sampled_from(D.NORMS),
       pl=st.sampled_from(D.PLACEMENTS), a=st.floats(-2, 0.99), sw=st.floats(0.3, 3.0))
@example(act="sigmoid", L=14, norm="none", pl="pre", a=0.01, sw=1.0)       # was -4.5e15 (1 - c cancelled)
@example(act="sigmoid", L=16, norm="none", pl="pre", a=0.01, sw=math.sqrt(2))   # was inf
def test_no_nan_and_nonnegative(act, L, norm, pl, a, sw):
    """A finite γ >= 0, or NumericalError naming a documented range (q of the quadrature route, or γ beyond the
    double range); never a wrong sign, NaN or inf."""
    try:
        g = float(G.numpy(L=L, activation=act, norm=norm, placement=pl, a=a, sigma_w=sw))
    except igbsym.NumericalError as exc:
        assert "quadrature route's range" in str(exc) or "exceeds the double range" in str(exc)
        return
    assert np.isfinite(g) and g >= 0
    if act in ("relu", "leaky_relu") and norm in ("none", "layernorm", "rmsnorm") and (norm == "none" or pl == "pre"
                                                                                      or norm == "rmsnorm"):
        assert g == pytest.approx(float(G.numpy(L=L, activation=act, a=a)), rel=1e-12)


@pytest.mark.parametrize("act", ["sigmoid", "gelu", "silu"])
@pytest.mark.parametrize("sw", [30.0, 1e3, 1e10])
def test_one_smooth_layer_beyond_q_100(act, sw):
    """Issue 17: the smooth route raised for q > 100 although γ exists. One hidden layer: γ₁ = M²/(S − M²) with
    M = E φ(σ_w Z), S = E φ(σ_w Z)², both by mpmath quadrature of the defining integral at 40 digits
    (tests/reference.py); the kernel's panels follow φ's x-scale only where it bends, so the cost is σ_w-free."""
    f = igbsym.activations.get(act).mp
    m = gauss_expect(lambda x: f(x, 0, 0), 0, sw)
    s = gauss_expect(lambda x: f(x, 0, 0) ** 2, 0, sw)
    assert float(G.numpy(L=1, activation=act, sigma_w=sw)) == pytest.approx(float(m * m / (s - m * m)), rel=1e-12)


def test_deeper_smooth_layers_beyond_q_100_raise_a_documented_error():
    """The nested (two-level) quadrature is limited to q <= 100 (D.S.Q_MAX): beyond it a NumericalError says so."""
    with pytest.raises(igbsym.NumericalError, match="nested quadrature route's range"):
        G.numpy(L=2, activation="gelu", sigma_w=30.0)


@pytest.mark.parametrize("form", ["depth.gamma_ln_pre", "depth.gamma_rms_pre", "depth.gamma_bn_pre"])
@pytest.mark.parametrize("act", ["silu", "relu"])
def test_norm_before_phi_is_free_of_sigma_w_even_when_it_underflows(form, act):
    """Issue 17 domain point: σ_w = 1e-320 made q = σ_w² underflow to 0 and the state NaN, though a norm before φ
    resets q to 1 (γ does not depend on σ_w): the value is the one-layer γ at unit variance (igb.gamma, σ_w = 1)."""
    want = float(igbsym.get("igb.gamma").numpy(activation=act, sigma_w=1.0))
    assert float(igbsym.get(form).numpy(L=1, activation=act, sigma_w=1e-320)) == pytest.approx(want, rel=1e-12)


# --- issue 17 regressions (helper dep) -------------------------------------------------------------------------
def _gelu_ln_map(c, n=120):
    """F(c) = E[φ(u)φ(u')]/E[φ(u)²] for GELU, u = z1, u' = c z1 + √(1 − c²) z2 (unit variance: a LayerNorm before
    φ), by a 2-d tensor Gauss–Hermite rule in double precision (φ is entire: the rule converges geometrically;
    independent of the library's composite rules and of its (q, c, e) state)."""
    z, w = np.polynomial.hermite_e.hermegauss(n)
    w = w / w.sum()
    gelu = lambda x: x * special.ndtr(x)  # noqa: E731
    z1, z2 = np.meshgrid(z, z, indexing="ij")
    P = np.einsum("i,j,ij->", w, w, gelu(z1) * gelu(c * z1 + math.sqrt(1 - c * c) * z2))
    return P / (w @ gelu(z) ** 2)


@pytest.mark.parametrize("L", [1000, 100000])
def test_gelu_layernorm_deep_is_the_fixed_point_of_the_block_map(L):
    """gelu + LN before φ: γ_L is the fixed point c* = F(c*) for L >= 1000 (contraction ~0.967 a layer). The
    residual F(c) − c of the returned value is (ρ − 1)δc: a 1e-14 residual bounds the γ error by ~3e-12. Old code:
    the state drifted off c + e = 1 (γ = 37 at layer 300 for 3.17) and, at L = 1e5, the geometric tail
    extrapolated rounded ratios: 3.17365588773 for 3.17365588639 (residual 2.5e-12)."""
    g = float(D.np_path(L, "gelu", "layernorm", "pre", 0.01, 1.4)[-1])
    c = g / (1 + g)
    assert abs(_gelu_ln_map(c) - c) < 1e-14
    assert abs(_gelu_ln_map(0.7604) - 0.7604) > 1e-8    # the check can fail: a nearby c is not a fixed point


def test_smooth_state_stays_on_c_plus_e_equals_one():
    """Every smooth-activation block returns c + e = 1 (to rounding): off that line the map is unstable."""
    from igbsym import ops as O
    for act in ("gelu", "silu", "sigmoid"):
        st = O.State(np.float64(1.0), np.float64(0.7), np.float64(0.3), np.float64(0.0))
        for _ in range(5):
            st = O.Act(act).numpy(O.LayerNorm().numpy(st))
            assert abs(float(st.c) + float(st.e) - 1) < 4e-16, act
            st = O.State(np.float64(1.0), st.c, st.e, np.float64(0.0))


@pytest.mark.parametrize("form", ["depth.gamma_ln_pre", "depth.gamma_rms_pre", "depth.gamma_rms_post",
                                  "depth.gamma_bn_pre"])
def test_srelu_with_a_norm_is_zero_exactly_in_both_routes(form):   # bn_pre: the constant route, also 0
    """srelu's shift is the ReLU mean of the unit φ sees at every layer when a norm fixes its scale: E φ = 0, so
    c = 0 and γ = 0 exactly (exact value). Old code: mp at 50 digits returned 1.3e-102 (30 digits: 0)."""
    f = igbsym.get(form)
    for dps in (30, 50):
        assert f.mp(dps, L=6, activation="srelu", sigma_w=1.0) == 0
    assert float(f.numpy(L=6, activation="srelu", sigma_w=3.0)) == 0.0


def _gamma_one_layer_by_quadrature(act, sigma, dps=160):
    """γ after one φ + RMSNorm block at input sd σ (c = 0 into φ): M²/(S − M²) with M = E φ(σZ), S = E φ(σZ)²
    by mpmath.quad of the defining integrals at ``dps`` digits (S − M² ~ σ² cancels 2·log10(1/σ) digits)."""
    fn = igbsym.activations.get(act).mp
    with mpmath.workdps(dps):
        s = mpmath.mpf(sigma)
        dens = lambda z: mpmath.exp(-z * z / 2) / mpmath.sqrt(2 * mpmath.pi)  # noqa: E731
        M = mpmath.quad(lambda z: fn(s * z, 0, 0) * dens(z), [-mpmath.inf, -5, 0, 5, mpmath.inf])
        S2 = mpmath.quad(lambda z: fn(s * z, 0, 0) ** 2 * dens(z), [-mpmath.inf, -5, 0, 5, mpmath.inf])
        return M * M / (S2 - M * M)


@pytest.mark.parametrize("act,sigma", [("gelu", 1e-20), ("silu", 1e-20), ("silu", 4e-45), ("gelu", 3e-31)])
def test_tiny_sigma_w_keeps_the_mean_squared_share(act, sigma):
    """Issue 17: at tiny σ_w, c' = M²/S ~ q; the mp route formed it as (S − V)/S and lost every digit (gelu at
    1e-20: 8 digits off at 30 digits; silu at 1e-320: 1.4e-48 for 2.5e-641), and the NumPy branch for q < 1e-60
    dropped M² (silu at 4e-45: 0 for 4e-90)."""
    ref = _gamma_one_layer_by_quadrature(act, sigma)
    f = igbsym.get("depth.gamma_rms_post")
    for dps in (30, 50):
        with mpmath.workdps(60):   # the ratio at 15 digits would be 1 whatever the digits past 15
            assert abs(f.mp(dps, L=1, activation=act, a=0.01, sigma_w=sigma) / ref - 1) < mpmath.mpf(10) ** (5 - dps)
    assert float(f.numpy(L=1, activation=act, a=0.01, sigma_w=sigma)) == pytest.approx(float(ref), rel=1e-13, abs=0)


@pytest.mark.parametrize("sw", [0.7, 2.0])
def test_deep_fixed_point_array_equals_scalar_and_mp(sw):
    """Issue 17: gelu + RMSNorm after φ contracts slowly (ρ = 0.93); the scalar call stopped 1.3e-14 short of the
    fixed point while an array call went on, so the two differed by ~60 ulp. Stationarity now divides the step by
    1 − ρ, each point freezes at its own fixed point, and the mp route converges (30 and 50 digits agree)."""
    f = igbsym.get("depth.gamma_rms_post")
    kw = dict(L=100000, activation="gelu")
    scalar = f.numpy(a=0.01, sigma_w=sw, **kw)
    array = f.numpy(a=np.array([0.01, 0.01]), sigma_w=np.array([sw, 4.0]), **kw)
    assert array[0] == scalar
    lo, hi = (f.mp(dps, a=0.01, sigma_w=sw, **kw) for dps in (30, 50))
    with mpmath.workdps(60):   # the ratio at 15 digits would be 1 whatever the digits past 15
        assert abs(lo / hi - 1) < mpmath.mpf("1e-25")
    assert float(scalar) == pytest.approx(float(hi), rel=1e-12)


@pytest.mark.parametrize("a", [0.01, -3.0, 0.999])
def test_leaky_mp_loop_equals_the_composed_op_maps(a):
    """The raw-libmp (leaky) ReLU loop against the generic composition of the ops' mpmath maps (L = 3, 40) and the
    SymPy nested closed form (L = 3) at 40 digits."""
    with mpmath.workdps(40):
        for L in (3, 40):
            fast = arccos_gamma_mp(L, a)
            composed = layer_walk("leaky_relu", "none", "pre", mpmath.sqrt(2), L, "mpmath", mpmath.mpf(a))[-1]
            assert abs(fast / composed - 1) < mpmath.mpf("1e-35")
        exact = D.exact_gamma(3, "leaky_relu", "none", "pre").subs({D.a_: D.sp.Rational(a), D.sb_: 0})   # float a
        assert abs(arccos_gamma_mp(3, a) / mpmath.mpf(D.sp.N(exact, 50)) - 1) < mpmath.mpf("1e-35")


def test_array_call_gives_each_point_its_scalar_value_across_regimes():
    """Issue 17: a point whose 1 − c decays geometrically took the geometric tail alone but iterated layer by layer
    next to a point at a fixed point (sigmoid + RMSNorm after φ, L = 9: 2.8e-14 apart; at L = 1e5 the iteration of
    the other point ran past 30 s). Each point now takes its own shortcut."""
    f = igbsym.get("depth.gamma_rms_post")
    a, sw = np.array([-3.0182109199919345, -1.801923050472793]), np.array([1.6440769548991177e-15, 0.5000000429897472])
    arr = f.numpy(L=9, activation="sigmoid", a=a, sigma_w=sw)
    assert [float(v) for v in arr] == [float(f.numpy(L=9, activation="sigmoid", a=x, sigma_w=y)) for x, y in zip(a, sw)]
    ref = f.mp(50, L=9, activation="sigmoid", a=a[0], sigma_w=sw[0])
    assert float(arr[0]) == pytest.approx(float(ref), rel=1e-12)


@pytest.mark.parametrize("act", ["gelu", "silu"])
def test_tiny_sigma_w_post_norm_is_the_affine_map_in_closed_form(act):
    """Issue 17: with RMSNorm after φ, q = σ_w² enters every φ; at q < 1e-60 the block map is c' = (c + β)/(1 + β)
    with β = γ₁ (one layer), so γ_L = (1 + β)^L − 1, with no fixed point for ~1/β layers. The iteration walked
    every layer (mp: 27 s a precision at L = 1e5; NumPy: 17 s and 1e-13 off). Reference: that closed form with β
    from the 160-digit quadrature of one layer; both routes now take it per point."""
    f = igbsym.get("depth.gamma_rms_post")
    for sw in (1e-31, 1e-40):   # (the reference quadrature loses digits to the ±z cancellation below ~1e-50)
        beta = _gamma_one_layer_by_quadrature(act, sw)
        for L in (1000, 100000):
            with mpmath.workdps(60):
                ref = mpmath.expm1(L * mpmath.log1p(beta))
            got = float(f.numpy(L=L, activation=act, a=0.01, sigma_w=sw))
            assert got == pytest.approx(float(ref), rel=1e-13, abs=0)
            for dps in (30, 50):
                value = f.mp(dps, L=L, activation=act, a=0.01, sigma_w=sw)
                with mpmath.workdps(60):   # the ratio at 15 digits would be 1 whatever the digits past 15
                    assert abs(value / ref - 1) < mpmath.mpf(10) ** (5 - dps)


def _srelu_mlp_gamma_reference(L, sigma_w, dps=80):
    """γ_L of the no-norm SReLU MLP from the shifted-ReLU moments (u ~ N(0, q), corr c, t = arccos c):
    E relu = √(q/2π), E relu² = q/2, E relu(u)relu(u') = q(sin t + c(π − t))/(2π); φ = relu − k with
    k = σ_w/√(2π); q' = σ_w²S, c' = P/S, from (σ_w², 0). Written here from the definitions, at ``dps`` digits."""
    with mpmath.workdps(dps):
        sw = mpmath.mpf(sigma_w)
        k, q, c = sw / mpmath.sqrt(2 * mpmath.pi), sw**2, mpmath.mpf(0)
        for _ in range(L):
            t, mean = mpmath.acos(c), mpmath.sqrt(q / (2 * mpmath.pi))
            S = q / 2 - 2 * k * mean + k**2
            P = q * (mpmath.sin(t) + c * (mpmath.pi - t)) / (2 * mpmath.pi) - 2 * k * mean + k**2
            q, c = sw**2 * S, P / S
        return c / (1 - c)


@pytest.mark.parametrize("L", [2, 3, 7])
@pytest.mark.parametrize("rel", [0.0, 1e-12, 1e-6, 3e-3])
def test_srelu_shift_cancellation_near_sigma_w_1_713(L, rel):
    """Issue 17: at σ_w²·S = 1 (σ_w = √(2π/(π − 1)) = 1.713) layer 2's shift equals layer 1's and E φ = 1/√(2π) − κ
    cancelled in doubles (1e-4 off at rel = 1e-12, 86× at the nearest double); such points now take the mpmath
    route. Reference: the moment recursion above at 80 digits."""
    sw = math.sqrt(2 * PI / (PI - 1)) * (1 + rel)
    ref = _srelu_mlp_gamma_reference(L, sw)
    got = G.numpy(L=L, activation="srelu", sigma_w=sw)
    assert float(got) == pytest.approx(float(ref), rel=1e-13 * L, abs=0)


def test_srelu_array_with_a_cancelling_point_equals_the_scalar_calls():
    sws = np.array([0.5, math.sqrt(2 * PI / (PI - 1)), 2.0, 30.0])
    arr = G.numpy(L=5, activation="srelu", sigma_w=sws)
    assert list(arr) == [float(G.numpy(L=5, activation="srelu", sigma_w=s)) for s in sws]


@pytest.mark.parametrize("act,sw", [("gelu", 2.0), pytest.param("gelu", 9.99, marks=pytest.mark.slow),
                                    ("silu", 9.0)])          # slow: as silu at 9, ~50 s (2000 layers walked first)
def test_fixed_q_deep_fixed_point_by_steffensen_keeps_e_accurate(act, sw):
    """RMSNorm after φ keeps q = σ_w², so NumPy now finds the fixed point per point by Steffensen's iteration
    (L = 1e5 at σ_w = 9: 14–35 s of layers before). It extrapolates e = 1 − c where e < 1/2: extrapolating c and
    setting e = 1 − c was 1.8e-11 off at γ = 232. Reference: the mp route at 30 digits (its own Steffensen at
    30 digits, checked against mp50 by the domain test); the array call = the scalar calls."""
    f = igbsym.get("depth.gamma_rms_post")
    ref = f.mp(30, L=100000, activation=act, sigma_w=sw)
    assert float(f.numpy(L=100000, activation=act, sigma_w=sw)) == pytest.approx(float(ref), rel=1e-12, abs=0)
    sws = np.array([sw, 0.7, 1e-3])
    assert list(f.numpy(L=100000, activation=act, sigma_w=sws)) == [
        float(f.numpy(L=100000, activation=act, sigma_w=s)) for s in sws]


@pytest.mark.parametrize("L", [250, 300, 400])
def test_steffensen_rejects_a_contraction_estimated_from_rounding(L):
    """silu + LayerNorm before φ, σ_w = 0.5 (ρ = 0.94): from layer 64 Steffensen reached c* and accepted a ρ that was
    a ratio of roundings, so γ_300 was c*'s value, 1.9e-9 off (the mp route, 30 digits, agrees with the layer walk).
    Reference: the ops' maps composed layer by layer in NumPy (no shortcut), within the per-layer rounding."""
    ref = layer_walk("silu", "layernorm", "pre", 0.5, L)[-1]
    got = float(igbsym.get("depth.gamma_ln_pre").numpy(L=L, activation="silu", sigma_w=0.5))
    assert got == pytest.approx(ref, rel=1e-13, abs=0)


def test_geometric_tail_ratio_is_measured_over_a_span():
    """sigmoid + RMSNorm after φ, σ_w = 6, L = 3000 (γ = 7.1e140): the tail e·ρ^k took ρ from one layer, two rounded
    e's, and was 9.8e-12 off at k ~ 2700 (stated 1e-11); over SPAN layers, 2e-13. Reference: the ops' maps composed
    layer by layer (no shortcut; 1.8e-13 from the mp route at 30 digits, measured once: 121 s)."""
    ref = layer_walk("sigmoid", "rmsnorm", "post", 6.0, 3000)[-1]
    got = float(igbsym.get("depth.gamma_rms_post").numpy(L=3000, activation="sigmoid", sigma_w=6.0))
    assert got == pytest.approx(ref, rel=2e-12, abs=0)


@pytest.mark.parametrize("act", ["gelu", "silu", "sigmoid"])
@pytest.mark.parametrize("norm,placement", [("none", "pre"), ("layernorm", "pre"), ("rmsnorm", "pre"),
                                            ("layernorm", "post"), ("rmsnorm", "post")])
def test_shortcuts_equal_the_layer_walk_at_intermediate_depth(act, norm, placement):
    """The fixed-point, Steffensen, geometric, affine and Mehler shortcuts against the plain composition of the maps
    at depths the domain test does not draw (its cases take L <= 9 and L = 1e5): a noise contraction accepted by
    Steffensen (1.9e-9 off at L = 300) and a one-layer tail ratio (9.8e-12 at L = 3000) were found this way. The
    walk carries its own rounding (<= 2e-13 against mp at L = 3000), so the bound is 2e-12, inside the stated 1e-11."""
    Ls = [20, 80, 300, 1200]
    for sw in (0.3, 1.0, 2.0, 6.0):
        walk = layer_walk(act, norm, placement, sw, max(Ls))
        for L in Ls:
            if L > len(walk):
                with pytest.raises(igbsym.NumericalError):
                    G.numpy(L=L, activation=act, norm=norm, placement=placement, sigma_w=sw)
                continue
            got = float(G.numpy(L=L, activation=act, norm=norm, placement=placement, sigma_w=sw))
            assert got == pytest.approx(walk[L - 1], rel=2e-12, abs=0), (sw, L)


@pytest.mark.parametrize("act, norm, placement, L", [("gelu", "layernorm", "pre", 70), ("silu", "rmsnorm", "pre", 70)])
def test_mp_chebyshev_proxy_equals_the_layer_walk(act, norm, placement, L):
    """At intermediate depth the mpmath route iterates a Chebyshev interpolant of the one-dimensional block map
    (engine.fixed.chebyshev_tail) instead of a nested quadrature a layer. Reference: the plain layer walk of the ops'
    mpmath maps at 40 digits (tests/reference.py); the proxy at 30 digits must match it to 1e-26."""
    with mpmath.workdps(40):
        ref = layer_walk(act, norm, placement, mpmath.sqrt(2), L, "mpmath")[-1]
    got = igbsym.get("depth.gamma").mp(30, L=L, activation=act, norm=norm, placement=placement)
    assert abs(got / ref - 1) < mpmath.mpf("1e-26")


# --- biases (issue 48): Y = W φ(Y) + B in every Dense, the readout included ------------------------------------
def biased_gamma_mp(act, sw, sb, L, a=0.0, dps=40):
    """γ_L with biases by a plain mpmath loop (independent of the ops' maps): layer 1 (q, c) = (σ_w² + σ_b²,
    σ_b²/q); then q' = σ_w² S + σ_b², c' = (σ_w² P + σ_b²)/q' with (leaky) ReLU S = q(1 + a²)/2, P = S k(c) (the
    arc-cosine kernel, derivations/depth.py), erf S = (2/π) arcsin(2q/(1 + 2q)), P = (2/π) arcsin(2qc/(1 + 2q))
    (Williams 1997), and the identity S = q, P = qc; γ_L = c/(1 − c) of the readout."""
    with mpmath.workdps(dps):
        sw2, sb2 = mpmath.mpf(sw) ** 2, mpmath.mpf(sb) ** 2
        q = sw2 + sb2
        c = sb2 / q
        for _ in range(L):
            if act == "erf":
                S = 2 / mpmath.pi * mpmath.asin(2 * q / (1 + 2 * q))
                P = 2 / mpmath.pi * mpmath.asin(2 * q * c / (1 + 2 * q))
            elif act == "identity":
                S, P = q, q * c
            else:
                a = mpmath.mpf(a)
                r = (1 - a) ** 2 / (1 + a * a)
                S = q * (1 + a * a) / 2
                P = S * (c + r * (mpmath.sqrt(1 - c * c) - c * mpmath.acos(c)) / mpmath.pi)
            q, c = sw2 * S + sb2, (sw2 * P + sb2) / (sw2 * S + sb2)
        return c / (1 - c)


@given(act=st.sampled_from(["relu", "leaky_relu", "erf", "identity"]), L=st.integers(1, 40),
       sw=st.floats(0.5, 2.0), sb=st.floats(0.01, 2.0), a=st.floats(-0.5, 0.5))
@example(act="relu", L=5, sw=math.sqrt(2), sb=0.3, a=0.0)       # an L > 4 route of (leaky) ReLU: the arc-cosine
@example(act="erf", L=40, sw=1.8, sb=0.05, a=0.0)               # shortcut ignored σ_b (γ of the bias-free net)
def test_gamma_with_biases_is_the_mean_field_recursion(act, L, sw, sb, a):
    kw = dict(L=L, activation=act, sigma_w=sw, sigma_b=sb, **({"a": a} if act == "leaky_relu" else {}))
    ref = biased_gamma_mp(act, sw, sb, L, a if act == "leaky_relu" else 0.0)
    tol = float(G.relative_bound(**kw))
    assert float(G.numpy(**kw)) == pytest.approx(float(ref), rel=tol, abs=0)
    if L <= 6:
        assert float(G.mp(30, **kw)) == pytest.approx(float(ref), rel=1e-25, abs=0)


@pytest.mark.parametrize("c1_case", [(1.0, 0.5), (1.6, 0.2)])
def test_relu_with_biases_against_two_dimensional_quadrature(c1_case):
    """The first two ReLU layers with biases from scipy's 2-D Gaussian integral (``relu_pair_moment``), not the
    arc-cosine formula; its quadrature is good to ~1e-12, the bound used."""
    sw, sb = c1_case
    q, c = sw * sw + sb * sb, sb * sb / (sw * sw + sb * sb)
    for L in (1, 2):
        s = sw * sw * q / 2
        q, c = s + sb * sb, (s * relu_pair_moment(c) + sb * sb) / (s + sb * sb)
        assert float(G.numpy(L=L, activation="relu", sigma_w=sw, sigma_b=sb)) == pytest.approx(c / (1 - c), rel=1e-10)


def test_tanh_with_biases_equals_the_mean_field_trajectory():
    """tanh: the ops' quadrature moments against Mehler's series of the correlation map (igbsym.engine.meanfield,
    another route), in both phases, at every layer up to 60 (depth.gamma stops at fixed points and takes tails)."""
    from igbsym.engine import meanfield as MF
    for sw, sb in ((1.0, 0.3), (1.5, 0.1), (2.5, 0.5)):
        traj = MF.trajectory("tanh", 0.0, sw, sb, 61)
        for L in (1, 7, 30, 60):
            e = float(traj[L][1])
            got = float(G.numpy(L=L, activation="tanh", sigma_w=sw, sigma_b=sb))
            assert got == pytest.approx((1 - e) / e, rel=float(G.relative_bound(L=L, activation="tanh"))), (sw, sb, L)


def test_odd_activations_are_zero_without_bias_only_and_arrays_equal_scalar_calls():
    sb = np.array([0.0, 0.4, 0.0, 1.0])
    for act in ("tanh", "identity", "relu"):
        arr = G.numpy(L=6, activation=act, sigma_w=1.3, sigma_b=sb)
        one = [float(G.numpy(L=6, activation=act, sigma_w=1.3, sigma_b=b)) for b in sb]
        assert list(arr) == one
        if act != "relu":
            assert one[0] == one[2] == 0.0 and one[1] > 0 and one[3] > one[1]
    assert float(G.numpy(L=6, activation="relu", sigma_w=1.3, sigma_b=0.0)) == float(G.numpy(L=6, activation="relu",
                                                                                              sigma_w=1.3))


@pytest.mark.parametrize("kw", [dict(norm="layernorm"), dict(activation="srelu"), dict(N=64)])
def test_a_bias_where_it_has_no_route_is_one_line(kw):
    case = dict(L=2, activation="relu", sigma_b=0.5) | kw
    with pytest.raises(igbsym.InputError, match="sigma_b = 0") as err:
        G.numpy(**case)
    assert "\n" not in str(err.value)
    out = subprocess.run([sys.executable, "-m", "igbsym", "eval", "depth.gamma",
                          *(f"{k}={v}" for k, v in case.items())], capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr and "sigma_b" in out.stderr


def test_every_layer_of_a_biased_walk_is_the_plain_composition():
    """Regression: the walk froze a point at its Steffensen fixed point once ρ^rest|c − c*| < tol, i.e. for the LAST
    layer, and wrote c* into every skipped layer (γ_66 of erf at σ_w = 1.3, σ_b = 0.1 was 1.2 % off c*'s way):
    predict's per-layer values. Every layer now against the plain composition of the ops' maps."""
    from igbsym import engine
    from igbsym import ops as O
    for act, sw, sb in (("erf", 1.3, 0.1), ("gelu", 1.4, 0.3), ("tanh", 2.0, 0.2)):
        ops = D.block(act, "none", "pre", 0.01, sw, sigma_b=sb)
        head = (O.Dense(None, sw, sb),)
        walked = [float(g) for g in engine.walk(head, ops, 400, "numpy", "t")]
        state, plain = head[0].map(O.input_state("numpy"), "numpy"), []
        for _ in range(400):
            for op in ops:
                state = op.map(state, "numpy")
            plain.append(float(state.c) / float(state.e))
        assert walked == pytest.approx(plain, rel=1e-12, abs=0), act
