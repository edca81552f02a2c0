"""Regression tests for the points the registry-wide domain test (tests/test_domain.py, issue 17) found broken in
the activation, moments, bn and kurtosis families. Each expected value comes from an independent route: the exact
expression or the defining integral in mpmath at high precision, or a large-σ expansion whose constants are known
in closed form (η(2) = π²/12, the logistic law's variance π²/3).
"""
from __future__ import annotations

import mpmath
import numpy as np
import pytest

import igbsym

DBL_MAX = float(np.finfo(float).max)
TINY = 5e-324


def _rel(value, ref) -> float:
    return float(abs(mpmath.mpf(float(value)) - ref) / abs(ref))


# --- activation.mean / activation.var, leaky slope at the ends of the double range ------------------------------
def _leaky_moments(a, sigma):
    """E[φ_a(σZ)] and Var[φ_a(σZ)] by mpmath quadrature of the defining integrals (σ factored out: φ_a is
    positively homogeneous), at 60 digits."""
    with mpmath.workdps(60):
        a, sigma = mpmath.mpf(a), mpmath.mpf(sigma)
        m1 = mpmath.quad(lambda z: a * z * mpmath.npdf(z), [-mpmath.inf, 0]) + mpmath.quad(
            lambda z: z * mpmath.npdf(z), [0, mpmath.inf])
        m2 = mpmath.quad(lambda z: (a * z) ** 2 * mpmath.npdf(z), [-mpmath.inf, 0]) + mpmath.quad(
            lambda z: z * z * mpmath.npdf(z), [0, mpmath.inf])
        return sigma * m1, sigma**2 * (m2 - m1**2)


@pytest.mark.parametrize("a,sigma", [(-DBL_MAX, TINY), (-DBL_MAX, 1e-160), (DBL_MAX, 1e-300), (-1.5, 1.5e154),
                                     (0.01, 1.5e154)])
def test_activation_moments_of_leaky_relu_over_the_double_range(a, sigma):
    """a = -1.8e308, σ = 5e-324 gave mean error 0.41 (σ/√(2π) rounded as a subnormal) and a NaN variance (a²σ²);
    σ = 1.5e154 gave var = inf (σ² overflows, the variance does not)."""
    mean, var = _leaky_moments(a, sigma)
    got_mean = igbsym.get("activation.mean").numpy(activation="leaky_relu", sigma=sigma, a=a)
    got_var = igbsym.get("activation.var").numpy(activation="leaky_relu", sigma=sigma, a=a)
    assert _rel(got_mean, mean) < 1e-15
    assert _rel(got_var, var) < 1e-15


@pytest.mark.parametrize("activation", ["relu", "srelu", "identity"])
def test_activation_var_of_homogeneous_activations_where_sigma_squared_overflows(activation):
    """σ = 1.5e154: σ² = 2.25e308 overflows but Var = σ²(π − 1)/(2π) = 7.7e307 (relu, srelu) is a double; identity
    at σ = 1.3e154: σ² = 1.69e308."""
    sigma = 1.3e154 if activation == "identity" else 1.5e154
    with mpmath.workdps(50):
        s = mpmath.mpf(sigma)
        ref = s * s if activation == "identity" else s * s * (mpmath.pi - 1) / (2 * mpmath.pi)
    got = igbsym.get("activation.var").numpy(activation=activation, sigma=sigma)
    assert np.isfinite(got) and _rel(got, ref) < 1e-15


@pytest.mark.parametrize("sigma", [1e8, 1e20, 1.5e154, 1e200, DBL_MAX])
def test_activation_var_erf_at_large_sigma(sigma):
    """(2/π) asin(2σ²/(1 + 2σ²)) (Williams' arcsine kernel) lost 6.4e-9 at σ = 1e8 (asin near 1) and gave NaN from
    σ = 1.3e154 (σ² overflows); reference: the same expression in mpmath at 1000 digits (1 − value is ≈ 1/σ)."""
    with mpmath.workdps(1000):
        s = mpmath.mpf(sigma)
        ref = 2 * mpmath.asin(2 * s * s / (1 + 2 * s * s)) / mpmath.pi
    assert _rel(igbsym.get("activation.var").numpy(activation="erf", sigma=sigma), ref) < 2e-16


# large-σ expansions (x = σZ; the far field of SiLU and GELU is ReLU's, and the remainders' integrals are
# ∫ −|x| e(−|x|) dx = −2η(2) = −π²/6 and ∫ [(x e(x))² − x²1{x>0}] dx = −π²/3 (the logistic variance) for SiLU):
#   E silu(σZ) = σ/√(2π) − π²/(6√(2π) σ) + O(σ⁻³),  Var silu(σZ) = σ²(π − 1)/(2π) + π/6 − π²/(3√(2π) σ) + O(σ⁻²)
def _silu_expansion(sigma):
    s, r = mpmath.mpf(sigma), mpmath.sqrt(2 * mpmath.pi)
    return s / r - mpmath.pi**2 / (6 * r * s), s * s * (mpmath.pi - 1) / (2 * mpmath.pi) + mpmath.pi / 6 - \
        mpmath.pi**2 / (3 * r * s)


@pytest.mark.parametrize("sigma", [1e10, 1e100, 1e300])
def test_activation_silu_mp_route_at_large_sigma(sigma):
    """The mp route at σ = 1e100 spent 20-70 s (plain quadrature resolving the kink at 0 inside panels of width σ);
    the far-field split is σ-independent. Reference: the expansion above, whose dropped terms are below
    σ⁻⁴ ≤ 1e-40 relative."""
    mean_ref, var_ref = (mpmath.mpf(v) for v in _silu_expansion(sigma))
    with mpmath.workdps(40):
        mean_ref, var_ref = _silu_expansion(sigma)
    mean = igbsym.get("activation.mean").mp(40, activation="silu", sigma=sigma)
    var = igbsym.get("activation.var").mp(40, activation="silu", sigma=sigma)
    assert abs(mean - mean_ref) <= mpmath.mpf("1e-35") * abs(mean_ref)
    assert abs(var - var_ref) <= mpmath.mpf("1e-35") * abs(var_ref)


@pytest.mark.parametrize("activation", ["silu", "gelu"])
def test_activation_var_of_smooth_activations_where_the_second_moment_overflows(activation):
    """σ = 1.5e154: E[φ²] ≈ σ²/2 is a double but was computed as σ·σ/2 = inf, and at σ = 1e300 E[φ²] − E[φ]² was
    inf − inf = NaN; now the variance is finite where it is a double and +inf only beyond (true 3.4e599).
    Reference: σ²(π − 1)/(2π) (the O(1) correction is 1e-308 relative here)."""
    var = igbsym.get("activation.var")
    with mpmath.workdps(50):
        ref = mpmath.mpf(1.5e154) ** 2 * (mpmath.pi - 1) / (2 * mpmath.pi)
    assert _rel(var.numpy(activation=activation, sigma=1.5e154), ref) < 1e-15
    assert var.numpy(activation=activation, sigma=1e300) == np.inf


@pytest.mark.parametrize("act,sigma", [("silu", 20.0), ("gelu", 20.0), ("tanh", 9.0), ("sigmoid", 50.0)])
def test_activation_mp_split_equals_the_direct_quadrature(act, sigma):
    """Just above the split (σ > 8): the far-field split of the mp route (closed-form affine far field plus the
    remainder's quadrature) agrees with plain quadrature of the defining integrands over the whole line
    (gauss.mp_expect, no split) to 1e-25."""
    from igbsym import activations
    from igbsym.gauss import mp_expect
    f = activations.get(act).mp
    with mpmath.workdps(40):
        mean = mp_expect(lambda x: f(x, 0, 0), sigma)
        direct = mp_expect(lambda x: (f(x, 0, 0) - mean) ** 2, sigma)
    got = igbsym.get("activation.var").mp(30, activation=act, sigma=sigma)
    assert abs(got - direct) <= mpmath.mpf("1e-25") * abs(direct)


# --- moments.bn_feedforward_rate / bn_resnet_exponent -----------------------------------------------------------
def _p_exact(a):
    """p = E[φ'²]/Var[φ] = ((1 + a²)/2) / ((1 + a²)/2 − (1 − a)²/(2π)) for leaky ReLU, at 1500 digits."""
    with mpmath.workdps(1500):
        a = mpmath.mpf(a)
        return ((1 + a * a) / 2) / ((1 + a * a) / 2 - (1 - a) ** 2 / (2 * mpmath.pi))


@pytest.mark.parametrize("a", [-DBL_MAX, DBL_MAX, -1e200, 1 - 1e-9, 1 + 2**-52, 1.0000011942095401, TINY, -3.0, 0.01])
def test_bn_rates_of_leaky_relu_over_the_double_range(a):
    """a = -1.8e308 gave NaN (a² overflows in the lambdified log(p)/2); a → 1 (p → 1) keeps relative accuracy."""
    with mpmath.workdps(1500):
        p = _p_exact(a)
        rate, exponent = mpmath.log(p) / 2, (p - 1) / 2
    got_rate = igbsym.get("moments.bn_feedforward_rate").numpy(activation="leaky_relu", a=a)
    got_exp = igbsym.get("moments.bn_resnet_exponent").numpy(activation="leaky_relu", a=a)
    assert _rel(got_rate, rate) < 1e-15 and _rel(got_exp, exponent) < 1e-15


@pytest.mark.parametrize("activation", ["tanh", "erf", "sigmoid", "gelu", "silu"])
def test_bn_rates_array_equals_scalar(activation):
    """p does not depend on a for a smooth activation; an array call was 1e-14 off the scalar call (the quadrature's
    matrix product rounds by batch size)."""
    for name in ("moments.bn_feedforward_rate", "moments.bn_resnet_exponent"):
        form = igbsym.get(name)
        scalar = form.numpy(activation=activation, a=-3.0)
        assert np.all(form.numpy(activation=activation, a=np.array([-3.0, 0.5, 1e300])) == scalar)


# --- bn.cdf at |b| = 1.8e308, B = 1e30 ------------------------------------------------------------------------
@pytest.mark.parametrize("b,B", [(-DBL_MAX, 1e30), (-1e200, 1e30), (-DBL_MAX, 1e10)])
def test_bn_cdf_mp_far_tail(b, B):
    """The mp route's Laguerre-substitution quadrature ran every panel to its maximal degree (25 s a point) because
    mpmath.quad stops on an absolute error and the integrand was ~|b|. Reference: for |b| ≫ √B the tail of the
    scaled t law is c B^((B-1)/2) |b|^-(B-2)/(B-2) (1 + O(B²/b²)), c = Γ((B-1)/2)/(√(πB) Γ((B-2)/2)); the dropped
    factor is exp(-O(B²/b²)) = 1 - 1e-200 or closer here."""
    got = igbsym.get("bn.cdf").mp(40, b=b, B=B)
    with mpmath.workdps(100):   # the exponent is ~1e33: 100 digits leave 60 for the value
        bb, BB = mpmath.mpf(b), mpmath.mpf(B)
        c = mpmath.exp(mpmath.loggamma((BB - 1) / 2) - mpmath.loggamma((BB - 2) / 2)) / mpmath.sqrt(mpmath.pi * BB)
        ref = c * mpmath.exp((BB - 1) / 2 * mpmath.log(BB) - (BB - 2) * mpmath.log(-bb)) / (BB - 2)
        assert abs(got - ref) <= mpmath.mpf("1e-35") * ref
    assert igbsym.get("bn.cdf").numpy(b=b, B=B) == 0.0   # the true value underflows


# --- kurtosis.after / c_after at kappa0 = 1.8e308 -------------------------------------------------------------
def _moments_by_iteration(L, w, a, kappa_w, kappa0, c0, sigma2):
    """(kappa_L, c_L) by applying Prop. 4.3's affine map A to k = [kappa, c, 1] L times (kurtosis.matrix's exact
    expression at rational arguments, iterated in exact rational arithmetic)."""
    import sympy as sp
    from fractions import Fraction
    A = igbsym.get("kurtosis.matrix")
    q = {k: sp.Rational(Fraction(v)) for k, v in dict(w=w, a=a, kappa_w=kappa_w, sigma2=sigma2).items()}
    mat = A.case().subs({A.symbols[k]: v for k, v in q.items()})
    k = sp.Matrix([sp.Rational(Fraction(kappa0)), sp.Rational(Fraction(c0)), 1])
    for _ in range(L):
        k = mat * k
    return k[0], k[1]


@pytest.mark.parametrize("L,w,a,kappa_w,kappa0,c0,sigma2", [
    (1, 2, 1.0, 3.0, DBL_MAX, 1.0, 1.0), (2, 2, 0.0, 3.0, DBL_MAX / 8, 0.0, 1.0), (0, 2, 1.0, 3.0, DBL_MAX, 1.0, 1.0),
    (0, 2, 0.0, 3.0, DBL_MAX, 0.5, 1.0), (5, 5, 0.1, 3.0, DBL_MAX, 1e280, 1e-10), (3, 3, 0.5, 3.0, 3.0, 0.5, 1.0)])
def test_kurtosis_after_at_huge_input_kurtosis(L, w, a, kappa_w, kappa0, c0, sigma2):
    """kappa0 = 1.8e308 gave NaN / -inf for kappa_L (p kappa0 + off e0 overflowed) where kappa_1 = 2.7e308 overflows
    but kappa_1 = 8.99e307 (w = 2, a = 1, kappa_w = 1) does not, c_0 = 1 came back as -1, and c_5 = 1.1e289 as inf;
    the mp route (spectral form) returned 0 for c_0 = 1. Reference: the affine map iterated exactly."""
    kappa, c = _moments_by_iteration(L, w, a, kappa_w, kappa0, c0, sigma2)
    args = dict(L=L, w=w, a=a, kappa_w=kappa_w, kappa0=kappa0, c0=c0, sigma2=sigma2)
    for name, exact in (("kurtosis.after", kappa), ("kurtosis.c_after", c)):
        got, mp_value = igbsym.get(name).numpy(**args), igbsym.get(name).mp(30, **args)
        with mpmath.workdps(60):
            ref = mpmath.mpf(exact.p) / exact.q
            assert abs(mp_value - ref) <= mpmath.mpf("1e-28") * abs(ref), name
            assert (got == np.inf) if ref > DBL_MAX else _rel(got, ref) < 1e-14, (name, got, ref)


def test_kurtosis_after_at_huge_input_kurtosis_below_overflow():
    """kappa_1 = 8.99e307 at kappa0 = 1.8e308 (w = 2, a = 1, kappa_w = 1: p = 1/2, off = 3/2): was -inf."""
    kappa, _ = _moments_by_iteration(1, 2, 1.0, 1.0, DBL_MAX, 1.0, 1.0)
    got = igbsym.get("kurtosis.after").numpy(L=1, w=2, a=1.0, kappa_w=1.0, kappa0=DBL_MAX, c0=1.0, sigma2=1.0)
    assert _rel(got, mpmath.mpf(kappa.p) / kappa.q) < 1e-15


# --- resnet.corr_map / resnet.gamma: declared domain = where the map is defined --------------------------------
def test_resnet_corr_map_domain_is_the_physical_one():
    """m = E[x_i]/sqrt(E[x_i^2]) lies in [-1, 1]; beyond, the map has a pole (m = -1.88 at alpha sigma_w = 1: 27.1
    came back for c = -1, m = -2) and overflowed to NaN at m = -1.8e308. Inside, the value agrees with the mpmath
    evaluation of the exact expression at 50 digits; outside, a one-line InputError naming the form."""
    form = igbsym.get("resnet.corr_map")
    for m in (-1.0, -0.5, 0.0, 1.0):
        for c in (-1.0, 0.3, 1.0):
            for alpha in (0.0, 1.0, 1e30):
                got = form.numpy(activation="relu", c=c, m=m, alpha=alpha, sigma_w=1.0)
                ref = form.mp(50, activation="relu", c=c, m=m, alpha=alpha, sigma_w=1.0)
                assert abs(mpmath.mpf(float(got)) - ref) <= 1e-13 * max(abs(ref), 1), (c, m, alpha)
    for m in (-2.0, -DBL_MAX):
        with pytest.raises(igbsym.errors.InputError, match="^resnet.corr_map: condition -1 <= m <= 1"):
            form.numpy(activation="relu", c=1.0, m=m, alpha=1.0, sigma_w=1.0)
    with pytest.raises(igbsym.errors.InputError, match=r"^resnet.gamma: condition \|a\| <= 1e30"):
        igbsym.get("resnet.gamma").numpy(L=2, activation="leaky_relu", alpha=1.0, a=-DBL_MAX, sigma_w=1.0)


# --- rectified.moment build cost, rectified.scaled_var at the ends of the double range ---------------------------
def test_relu_moment_n60_expression_against_the_defining_integral():
    """Building E[ReLU(X)^60] by expanding the recursion took minutes (domain points timed out building the case);
    the recursion on polynomial coefficients takes ~2 s. Reference: the defining integral by mpmath quadrature."""
    import sympy as sp
    from igbsym.functions import MPMATH_MODULES
    form = igbsym.get("rectified.moment")
    expr = form.case(n=60)
    fn = sp.lambdify([form.symbols["mu"], form.symbols["sigma"]], expr, modules=MPMATH_MODULES)
    with mpmath.workdps(60):
        mu, sigma = mpmath.mpf("0.3"), mpmath.mpf("1.2")
        ref = mpmath.quad(lambda x: x**60 * mpmath.npdf(x, mu, sigma), [0, 10, 20, 40, mpmath.inf])
        assert abs(fn(mu, sigma) - ref) <= mpmath.mpf("1e-40") * ref


@pytest.mark.parametrize("alpha,mu,sigma", [(-DBL_MAX, -DBL_MAX, TINY), (DBL_MAX, -40.0, 1.0), (-2.5, 3.0, 1.0)])
def test_rectified_scaled_var_over_the_double_range(alpha, mu, sigma):
    """alpha = -1.8e308, mu = -1.8e308, sigma = 5e-324 gave 0 (sigma² underflowed before alpha² could scale it back);
    the true value is 7.9e-31. Reference: alpha² sigma² Var[ReLU(t + Z)], t = sign(alpha) mu/sigma, by mpmath
    quadrature of the defining integral (t = +inf: Var = 1)."""
    with mpmath.workdps(60):
        a, m, s = mpmath.mpf(alpha), mpmath.mpf(mu), mpmath.mpf(sigma)
        t = mpmath.sign(a) * m / s
        if t > 1e6:
            unit = mpmath.mpf(1)
        else:   # t < 0: E[ReLU(t + Z)^k] = φ(t) ∫_0^∞ y^k e^{-|t| y - y²/2} dy (z = |t| + y)
            r = -t
            i1, i2 = (mpmath.quad(lambda y, k=k: y**k * mpmath.exp(-r * y - y * y / 2), [0, 1, mpmath.inf])
                      for k in (1, 2))
            unit = mpmath.npdf(r) * (i2 - mpmath.npdf(r) * i1**2)
        ref = a * a * s * s * unit
        got = igbsym.get("rectified.scaled_var").numpy(alpha=alpha, mu=mu, sigma=sigma)
        assert abs(mpmath.mpf(float(got)) - ref) <= mpmath.mpf("1e-12") * ref   # the stated accuracy (t = -40: 2e-13)


# ------------------------------------------------------------------------------------------------ issue 25 residue
def _cli(capsys, *argv):
    from igbsym.cli import main
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv", [
    ["eval", "bn.cdf", "b=0.4", f"B={10**400}"], ["eval", "depth.gamma", f"L={10**400}", "activation=relu"],
    ["eval", "kurtosis.after", f"L={10**400}", "w=3", "a=0", "kappa_w=3", "kappa0=3", "c0=0", "sigma2=1"],
    ["predict", "--plot", "FILE/x.png"], ["eval", "depth.gamma", "L=3", "activation=relu", "norm=none", "B=2"],
    ["eval", "moments.sensitivity", "L=3", "architecture=vanilla", "activation=relu", "alpha=0"],
    ["predict", "--sigma-w", "1e200", "--activation", "gelu"],
    ["predict", "--sigma-w", "1e200", "--activation", "gelu", "--width", "64"],
    ["predict", "--sigma-w", "1e200", "--activation", "gelu", "--norm", "rmsnorm", "--placement", "post"]])
def test_malformed_and_extreme_cli_input_is_one_line_exit_2(capsys, tmp_path, argv):
    """A 400-digit integer raised OverflowError in 56 forms; --plot under a file raised NotADirectoryError; a parameter
    the chosen case ignores was accepted silently; predict squared a Python float σ_w = 1e200 (OverflowError)."""
    (tmp_path / "FILE").write_text("x")
    argv = [a.replace("FILE", str(tmp_path / "FILE")) for a in argv]
    code, out, err = _cli(capsys, *argv)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_negative_option_value_in_exponent_form(capsys):
    """argparse read --a -1e308 as an option. Reference: the leaky law at a → -inf is the ReLU law of -x scaled."""
    code, out, _ = _cli(capsys, "predict", "--activation", "leaky_relu", "--a", "-1e308", "--depth", "1", "--json")
    import json
    ref = igbsym.get("depth.gamma").mp(30, L=1, activation="leaky_relu", a="-1e308")
    assert code == 0 and json.loads(out)["gamma"] == pytest.approx(float(ref), rel=1e-13)


def test_kurtosis_after_beyond_exp_overflow():
    """kappa_w = 1e300: lam_+^L overflowed (inf) though kappa_L, c_L are doubles. Reference: the mpmath route (M^L by
    repeated squaring of the non-negative raw-moment map), with the form's stated accuracy as tolerance."""
    for name, L in (("kurtosis.c_after", 2), ("kurtosis.after", 1)):
        form = igbsym.get(name)
        kw = dict(L=L, w=4, a=0.2, kappa_w=1e300, kappa0=3, c0=0.5, sigma2=1.3)
        got, ref = form.numpy(**kw), form.mp(30, **kw)
        assert np.isfinite(got) and abs(got / float(ref) - 1) <= form.accuracy.relative


@pytest.mark.parametrize("a", [1e300, -1e300])
def test_bn_pre_leaky_at_huge_slope(a):
    """S = q(1 + a²)/2 overflows; the broadcast 0·S turned c' into NaN. Reference: the mpmath route."""
    form = igbsym.get("depth.gamma_bn_pre")
    ref = form.mp(30, L=3, activation="leaky_relu", a=a)
    assert float(form.numpy(L=3, activation="leaky_relu", a=a)) == pytest.approx(float(ref), rel=1e-13)


def test_srelu_deep_gamma_near_the_top_of_the_double_range():
    """γ_1000 = 6.33e300 was refused (1 − c = 1.6e-301 < 1e-300). Reference: the mpmath route at 30 digits."""
    form = igbsym.get("depth.gamma")
    ref = form.mp(30, L=1000, activation="srelu", sigma_w=1.0)
    assert float(form.numpy(L=1000, activation="srelu", sigma_w=1.0)) == pytest.approx(float(ref), rel=1e-12)


def test_bn_feedforward_chi_beyond_the_double_range():
    """χ_L = p^(L/2) (p = π/(π − 1) for ReLU, bn_feedforward_rate) was a silent inf for L >= 3705 on NumPy."""
    form = igbsym.get("moments.sensitivity")
    kw = dict(L=10**4, architecture="bn_feedforward", activation="relu")
    with pytest.raises(igbsym.NumericalError, match="exceeds the double range"):
        form.numpy(**kw)
    with mpmath.workdps(30):
        ref = (mpmath.pi / (mpmath.pi - 1)) ** (mpmath.mpf(10**4) / 2)
        assert abs(form.mp(30, **kw) / ref - 1) < mpmath.mpf("1e-25")
    assert float(form.numpy(L=3000, architecture="bn_feedforward", activation="relu")) == pytest.approx(
        float((mpmath.pi / (mpmath.pi - 1)) ** 1500), rel=form.accuracy.relative)
