"""The IGB law: kernels vs mpmath vs quadrature, limits, tails, sampler and regimes."""
import mpmath
import numpy as np
import pytest
from hypothesis import example, given, strategies as st
from scipy import integrate, special, stats

import igbsym
from igbsym import activations as acts
from igbsym.law import GAMMA_NEUTRAL, regime, sample
from reference import gauss_expect, rel_err

G = st.floats(1e-12, 1 - 1e-12)
GAMMA = st.floats(1e-3, 1e3)


def mp_pdf(g, gamma):
    """Independent route: change of variables of x ~ N(0, gamma) at g = Phi(x), in mpmath."""
    with mpmath.workdps(40):
        x = mpmath.sqrt(2) * mpmath.erfinv(2 * mpmath.mpf(g) - 1)
        gamma = mpmath.mpf(gamma)
        return mpmath.npdf(x, 0, mpmath.sqrt(gamma)) / mpmath.npdf(x)


@given(g=G, gamma=GAMMA)
@example(g=0.5, gamma=1.0)
def test_pdf_kernel_mp_and_change_of_variables_agree(g, gamma):
    ref = mp_pdf(g, gamma)
    # conditioning: d log f / d g is ~ |x|/(gamma phi(x)); keep to g where 1-g and g are resolved to 1e-12
    assert rel_err(igbsym.get("igb.pdf").mp(30, g=g, gamma=gamma), ref) < 1e-25
    x = float(special.ndtri(g))
    cond = 1 + abs(1 - 1 / gamma) * x * x  # relative error of exp((1 - 1/gamma) x^2 / 2) from rounding in x
    log_ref = float(mpmath.log(ref))
    assert abs(igbsym.get("igb.logpdf").numpy(g=g, gamma=gamma) - log_ref) < 1e-14 * cond * 50
    if ref > 1e-290:  # below that the float result is subnormal and loses relative precision by design
        assert rel_err(igbsym.get("igb.pdf").numpy(g=g, gamma=gamma), ref) < 1e-14 * cond * 50


@given(gamma=st.floats(0.01, 50))
def test_pdf_integrates_to_one_and_cdf_is_its_integral(gamma):
    """Substituting g = Phi(x): int_0^G f(g) dg = int_{-inf}^{Phi^-1(G)} f(Phi(x)) phi(x) dx (Simpson on a fine
    grid)."""
    pdf, cdf = igbsym.get("igb.pdf"), igbsym.get("igb.cdf")
    lo = -12 * max(1, np.sqrt(gamma))
    for g in (0.05, 0.3, 0.5):  # f(g) = f(1-g), so the half-line x < 0 covers the whole law
        xs = np.linspace(lo, special.ndtri(g), 20001)
        vals = pdf.numpy(g=special.ndtr(xs).clip(1e-300), gamma=gamma) * stats.norm.pdf(xs)
        integral = integrate.simpson(vals, x=xs) + special.ndtr(lo / np.sqrt(gamma))
        assert abs(integral - cdf.numpy(g=g, gamma=gamma)) < 1e-7, g
        if g == 0.5:
            assert abs(2 * integral - 1) < 2e-7


EPS = np.finfo(float).eps


@given(p=st.floats(1e-10, 1 - 1e-10), gamma=st.floats(1e-3, 30))
@example(p=1 - 1e-10, gamma=30.0)   # g -> 1 with gamma > 1: the density blows up at the edge
@example(p=1e-10, gamma=1e-3)
def test_quantile_inverts_cdf(p, gamma):
    """cdf(quantile(p)) = p up to the rounding the two maps must make, from their condition numbers:
    q = Phi(sqrt(gamma) x), x = Phi^-1(p), is rounded to a double (spacing ulp(q), which near g -> 1 is 1.1e-16
    absolute), and cdf(q) = p moves by dp/dq = f(q) = phi(x_q/sqrt(gamma))/(sqrt(gamma) phi(x_q)) per unit of q
    (x_q = Phi^-1(q), computed by SciPy here, not by the code under test); relative rounding of x moves p by
    phi(x)|x| per unit. Allowance: 32 eps (p + phi(x)(1 + |x|)) + 4 f(q) ulp(q)."""
    q = igbsym.get("igb.quantile").numpy(p=p, gamma=gamma)
    if not 0 < q < 1:
        return  # the quantile rounded to an endpoint: nothing left to invert
    x, xq = special.ndtri(p), special.ndtri(q)
    slope = stats.norm.pdf(xq / np.sqrt(gamma)) / (np.sqrt(gamma) * stats.norm.pdf(xq))
    allowance = 32 * EPS * (p + stats.norm.pdf(x) * (1 + abs(x))) + 4 * slope * np.spacing(q)
    err = abs(igbsym.get("igb.cdf").numpy(g=q, gamma=gamma) - p)
    assert err <= allowance, (p, gamma, q, err, allowance)


def test_exact_limits():
    g = np.array([0.0, 1e-300, 0.2, 0.5, 0.7, 1 - 1e-16, 1.0])
    cdf = igbsym.get("igb.cdf")
    np.testing.assert_array_equal(cdf.numpy(g=g, gamma=0.0), [0, 0, 0, 0.5, 1, 1, 1])
    np.testing.assert_array_equal(cdf.numpy(g=g, gamma=np.inf), [0, 0.5, 0.5, 0.5, 0.5, 0.5, 1])
    # Phi(Phi^-1(g)) round trip: condition number ~ x^2 ~ 1400 at g = 1e-300, so 1400 eps ~ 3e-13
    np.testing.assert_allclose(cdf.numpy(g=g, gamma=1.0), g, rtol=1e-12, atol=0)
    np.testing.assert_allclose(igbsym.get("igb.pdf").numpy(g=g[1:-1], gamma=1.0), 1.0, rtol=0, atol=0)
    np.testing.assert_array_equal(igbsym.get("igb.quantile").numpy(p=[0.1, 0.5, 0.9], gamma=0.0), [0.5] * 3)
    np.testing.assert_array_equal(igbsym.get("igb.quantile").numpy(p=[0.1, 0.5, 0.9], gamma=np.inf), [0, 0.5, 1])
    np.testing.assert_array_equal(igbsym.get("igb.corr").numpy(gamma=[0.0, 1.0, np.inf]), [0, 0.5, 1])


def test_tails_never_nan_and_logpdf_never_overflows():
    g = np.array([5e-324, 1e-300, 1e-100, 1 - 1e-16, 1 - 2**-53])
    for gamma in (1e-6, 0.3, 1.0, 7.0, 1e6):
        lp = igbsym.get("igb.logpdf").numpy(g=g, gamma=gamma)
        assert np.all(np.isfinite(lp))
        assert not np.isnan(igbsym.get("igb.pdf").numpy(g=g, gamma=gamma)).any()
    # symmetric tail: 1 - 1e-16 resolves as well as 1e-16
    lp = igbsym.get("igb.logpdf")
    assert abs(lp.numpy(g=1 - 2**-53, gamma=3.0) - lp.numpy(g=2**-53, gamma=3.0)) < 1e-12


def test_sampler_follows_the_law():
    """KS test of 20000 draws (fixed seed) against igb.cdf; per-test false-failure rate 1e-6."""
    cdf = igbsym.get("igb.cdf")
    for gamma in (0.1, 1.0, 5.0):
        draws = sample(gamma, 20000, np.random.default_rng(7))
        p = stats.kstest(draws, lambda u: cdf.numpy(g=u, gamma=gamma)).pvalue
        assert p > 1e-6, (gamma, p)
    assert set(np.unique(sample(np.inf, 100, np.random.default_rng(0)))) <= {0.0, 1.0}


def test_regimes_follow_the_stated_thresholds():
    p_out = igbsym.get("igb.p_outside")
    assert abs(p_out.numpy(gamma=GAMMA_NEUTRAL) - 0.01) < 1e-12
    assert [regime(v) for v in (0, GAMMA_NEUTRAL, 0.5, 1.0, 1.0001, np.inf)] == \
        ["neutral", "neutral", "weak prejudice", "weak prejudice", "deep prejudice", "deep prejudice"]
    with pytest.raises(igbsym.InputError):
        regime(-1)


@pytest.mark.parametrize("activation", acts.names())
def test_gamma_equals_mean_squared_over_variance_by_quadrature(activation):
    for sw in (0.5, 1.0, 2.0):
        f = acts.get(activation)
        m = gauss_expect(lambda x: f.mp(x, 0.01, sw), 0, sw, dps=30)
        v = gauss_expect(lambda x: (f.mp(x, 0.01, sw) - m) ** 2, 0, sw, dps=30)
        got = igbsym.get("igb.gamma").numpy(activation=activation, sigma_w=sw)
        assert abs(got - float(m * m / v)) <= 1e-11 * float(m * m / v) + 1e-13
    if activation == "relu":
        assert abs(igbsym.get("igb.gamma").numpy(activation="relu") - 1 / (np.pi - 1)) < 1e-15
    if acts.get(activation).odd:
        assert igbsym.get("igb.gamma").numpy(activation=activation) == 0


@pytest.mark.parametrize("name,kw,fragment", [
    ("igb.pdf", dict(g=1.5, gamma=1), "0 < g < 1"),
    ("igb.pdf", dict(g=0.5, gamma=0), "gamma=0 is not allowed"),
    ("igb.cdf", dict(g=0.5, gamma=-1), "gamma=-1 is not allowed; allowed: a real number >= 0 (or inf)"),
    ("igb.quantile", dict(p=1.0, gamma=1), "0 < p < 1"),
    ("igb.p_outside", dict(gamma=1, q=0.7), "0 < q < 1/2"),
])
def test_bad_input(name, kw, fragment):
    with pytest.raises(igbsym.InputError, match=None) as err:
        igbsym.get(name).numpy(**kw)
    assert fragment in str(err.value)


# --- issue 17 regressions, each against an independent mpmath route ------------------------------------------
def _mp_phi_inv(p, dps=400):
    """Φ⁻¹(p) = √2 erfinv(2p − 1) at ``dps`` digits (the library's mp route uses Newton on log Φ instead)."""
    with mpmath.workdps(dps):
        return mpmath.sqrt(2) * mpmath.erfinv(2 * mpmath.mpf(p) - 1)


@pytest.mark.parametrize("g,gamma", [(1.4e-45, 4.0), (1.401298464324817e-45, 4.0), (1e-300, 2.5)])
def test_cdf_at_tiny_g(g, gamma):
    """F(g; γ) = Φ(Φ⁻¹(g)/√γ): the issue's point g = 1.4e-45, γ = 4 returned 0 on the mp route (true 8.3e-13)."""
    with mpmath.workdps(400):
        want = mpmath.ncdf(_mp_phi_inv(g) / mpmath.sqrt(gamma))
    assert rel_err(igbsym.get("igb.cdf").mp(50, g=g, gamma=gamma), want) < 1e-45
    assert rel_err(igbsym.get("igb.cdf").numpy(g=g, gamma=gamma), want) < 1e-12


@pytest.mark.parametrize("gamma", [5e-324, 1e-310])
def test_p_outside_at_subnormal_gamma(gamma):
    """P = 2Φ(z), z = Φ⁻¹(q)/√γ < -1e150 (mpmath.ncdf overflowed there). Independent route: log P from the Mills
    ratio, log 2 − z²/2 − log(−z√(2π)) + log(1 − 1/z² + ...), where 1/z² < 1e-300 is below every digit kept."""
    q = 0.1
    got = igbsym.get("igb.p_outside").mp(50, gamma=gamma, q=q)
    with mpmath.workdps(80):
        z = _mp_phi_inv(q, 80) / mpmath.sqrt(mpmath.mpf(gamma))
        want_log = mpmath.log(2) - z * z / 2 - mpmath.log(-z * mpmath.sqrt(2 * mpmath.pi))
        assert abs(mpmath.log(got) - want_log) < mpmath.mpf(10) ** -45 * abs(want_log)
    assert igbsym.get("igb.p_outside").numpy(gamma=gamma, q=q) == 0.0  # e^{-1e320}: 0 in double


@pytest.mark.parametrize("g,gamma", [(1e-320, 0.9999999999991379), (0.9999993198625218, 1 - 2.0**-53),
                                     (0.3, 1e-300), (1e-300, 1e308)])
def test_logpdf_near_gamma_one_and_extremes(g, gamma):
    """log f = ½[x²(γ−1)/γ − log γ] from the change of variables in mpmath (x = Φ⁻¹(g) by erfinv): 1 − 1/γ was a
    factor 2 off at γ = 1 − 2⁻⁵³ and 1.3e-4 at g = 1e-320. The two terms cancel only at x² ≈ γ log γ/(γ − 1) ≈ 1;
    away from it the kernel's error is a few ulp of the larger term, below 1e-14 relative here."""
    with mpmath.workdps(400):
        x, gm = _mp_phi_inv(g), mpmath.mpf(gamma)
        want = (x * x * (gm - 1) / gm - mpmath.log(gm)) / 2
    assert rel_err(igbsym.get("igb.logpdf").numpy(g=g, gamma=gamma), want) < 1e-14


# Even parts of φ (the odd part integrates to 0 under N(0, σ²), so E φ = E[even part] without the cancellation of
# terms of size σ against a mean of size σ²) and the integrand of the variance, for the defining integrals below.
_EVEN = {"gelu": lambda v: v * mpmath.erf(v / mpmath.sqrt(2)) / 2, "silu": lambda v: v * mpmath.tanh(v / 2) / 2}
_SQUARE = {"gelu": lambda v: (v * mpmath.ncdf(v)) ** 2, "silu": lambda v: (v / (1 + mpmath.exp(-v))) ** 2}


@pytest.mark.parametrize("activation", ["gelu", "silu", "sigmoid"])
@pytest.mark.parametrize("sigma_w", [1e-308, 1e-120, 1e-90])
def test_gamma_at_tiny_sigma_w(activation, sigma_w):
    """igb.gamma at σ_w = 1e-308 was NaN (0/0) for gelu; the true value 6.4e-617 rounds to 0. Reference: the
    defining Gaussian integrals in mpmath, E φ from φ's even part and Var = E φ² − (E φ)² (no cancellation: the
    mean is O(σ²), the second moment O(σ²)); sigmoid: E φ = 1/2 exactly, Var = E[tanh(x/2)²]/4."""
    with mpmath.workdps(50):
        sw = mpmath.mpf(sigma_w)
        def expect(f):  # in z = x/σ, the integrand scaled by 1/σ² (mpmath.quad's stopping test is absolute)
            return sw**2 * mpmath.quad(lambda z: f(sw * z) / sw**2 * mpmath.npdf(z),
                                       [-mpmath.inf, -8, 0, 8, mpmath.inf])
        if activation == "sigmoid":
            m, v = mpmath.mpf(1) / 2, expect(lambda t: mpmath.tanh(t / 2) ** 2 / 4)
        else:
            m = expect(_EVEN[activation])
            v = expect(_SQUARE[activation]) - m * m
        want = m * m / v
    got = igbsym.get("igb.gamma").numpy(activation=activation, sigma_w=sigma_w)
    if want > 1.7976931348623157e308:
        assert got == np.inf
    elif want < 1e-300:
        assert got < 1e-300
    else:
        assert rel_err(got, want) < 1e-12


@pytest.mark.parametrize("a,sigma_w", [(-1.7976931348623157e308, 5e-324), (1.7976931348623157e308, 1.0),
                                       (4.4e167, 4.6e-6), (-3e154, 2.0), (0.01, 1e300), (-0.5, 1.0)])
def test_gamma_of_leaky_relu_over_the_double_range(a, sigma_w):
    """The lambdified (a-1)²/((π-1)a² + 2a + π - 1) gave NaN from |a| = 1.3e154 (a² overflows). Reference: the
    defining integrals E φ_a(Z), E φ_a(Z)² by 60-digit mpmath quadrature (γ does not depend on σ_w: φ_a is
    positively homogeneous)."""
    with mpmath.workdps(60):
        am = mpmath.mpf(a)
        m1 = mpmath.quad(lambda z: am * z * mpmath.npdf(z), [-mpmath.inf, 0]) + \
            mpmath.quad(lambda z: z * mpmath.npdf(z), [0, mpmath.inf])
        m2 = mpmath.quad(lambda z: (am * z) ** 2 * mpmath.npdf(z), [-mpmath.inf, 0]) + mpmath.mpf(1) / 2
        want = m1 * m1 / (m2 - m1 * m1)
    got = igbsym.get("igb.gamma").numpy(activation="leaky_relu", sigma_w=sigma_w, a=a)
    assert rel_err(got, want) < 1e-15
    arr = igbsym.get("igb.gamma").numpy(activation="leaky_relu", sigma_w=sigma_w, a=np.array([a, 0.3]))
    assert arr[0] == got


@pytest.mark.parametrize("activation", ["gelu", "silu"])
@pytest.mark.parametrize("sigma_w", [1e160, 1e250, 1.7976931348623157e308])
def test_gamma_at_huge_sigma_w(activation, sigma_w):
    """igb.gamma was 0 from σ_w ~ 1e154 (Var[φ] overflows to inf, E[φ]²/inf = 0); the value is 1/(π - 1)(1 + O(σ⁻²)).
    Reference: the defining integrals E φ(σZ), E φ(σZ)² by 40-digit mpmath quadrature in z, split at 0 (φ's kink
    scale 1/σ), scaled by σ and σ² (Φ by igbsym.functions.mp_ncdf: mpmath.ncdf overflows beyond |x| ~ 1e150)."""
    from igbsym.functions import mp_ncdf
    phi = {"gelu": lambda x: x * mp_ncdf(x), "silu": lambda x: x / (1 + mpmath.exp(-x))}[activation]
    with mpmath.workdps(40):
        s = mpmath.mpf(sigma_w)
        m = mpmath.quad(lambda z: phi(s * z) / s * mpmath.npdf(z), [-mpmath.inf, 0, mpmath.inf])
        m2 = mpmath.quad(lambda z: (phi(s * z) / s) ** 2 * mpmath.npdf(z), [-mpmath.inf, 0, mpmath.inf])
        want = m * m / (m2 - m * m)
    assert rel_err(igbsym.get("igb.gamma").numpy(activation=activation, sigma_w=sigma_w), want) < 1e-14
