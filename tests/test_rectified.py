"""Rectified-Gaussian, leaky-ReLU and activation-moment forms against mpmath quadrature of their definitions."""
import math

import mpmath
import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

import igbsym
from igbsym import activations as acts
from reference import gauss_expect, rel_err

T = st.floats(-10, 50)
SIG = st.floats(0.05, 20)


@given(t=T, sigma=SIG)
@example(t=0.0, sigma=1.0)
@example(t=-10.0, sigma=3.0)
def test_rectified_mean_and_var_match_quadrature(t, sigma):
    mu = t * sigma
    relu = lambda x: max(x, 0)  # noqa: E731
    m_ref = gauss_expect(relu, mu, sigma, lo=0)
    v_ref = gauss_expect(lambda x: relu(x) ** 2, mu, sigma, lo=0) - m_ref**2
    assert rel_err(igbsym.get("rectified.mean").numpy(mu=mu, sigma=sigma), m_ref) < 1e-12 * max(1, t * t / 10)
    assert rel_err(igbsym.get("rectified.var").numpy(mu=mu, sigma=sigma), v_ref) < 1e-12 * max(1, abs(t) ** 3 / 10)
    assert rel_err(igbsym.get("rectified.mean").mp(30, mu=mu, sigma=sigma), m_ref) < 1e-25


@given(n=st.integers(0, 8), t=st.floats(-5, 8), sigma=SIG)
def test_rectified_moment_matches_quadrature(n, t, sigma):
    mu = t * sigma
    form = igbsym.get("rectified.moment")
    ref = gauss_expect(lambda x: max(x, 0) ** n if n else 1, mu, sigma, lo=0 if n else -mpmath.inf)
    assert rel_err(form.mp(30, n=n, mu=mu, sigma=sigma), ref) < 1e-25
    assert rel_err(form.numpy(n=n, mu=mu, sigma=sigma), ref) < 1e-12 * 10 ** max(0, n - 2) * max(1, abs(t)) ** (n + 1)


def test_hand_kernels_equal_lambdified_closed_form():
    """Where the plain closed form is itself accurate (mu/sigma >= -8), the stable kernels reproduce it."""
    sigma = np.linspace(0.1, 5, 301)
    mu = np.linspace(-8, 40, 301) * sigma
    for name in ("rectified.mean", "rectified.var"):
        form = igbsym.get(name)
        np.testing.assert_allclose(form.numpy(mu=mu, sigma=sigma), form.lambdified()(mu=mu, sigma=sigma), rtol=1e-10)


@given(a=st.floats(-3, 3), t=st.floats(-4, 4), sigma=st.floats(0.1, 5))
def test_lemma_f1_true_form(a, t, sigma):
    """E[ReLU(aX)] by quadrature; the paper's a·E[ReLU(X)] agrees only for a > 0."""
    if abs(a) < 1e-3:
        return
    mu = t * sigma
    ref = gauss_expect(lambda x: max(a * x, 0), mu, sigma)
    assert rel_err(igbsym.get("rectified.scaled_mean").numpy(alpha=a, mu=mu, sigma=sigma), ref) < 1e-10
    paper = a * igbsym.get("rectified.mean").numpy(mu=mu, sigma=sigma)
    assert (rel_err(paper, ref) < 1e-10) == (a > 0)


def test_leaky_moments_symmetric_laws():
    """m2, m4 for Gaussian (kappa 3) and Laplace (kappa 6) inputs by direct quadrature of phi_a(x)^k."""
    for a in (-0.5, 0.0, 0.1, 1.0):
        phi = lambda x: x if x >= 0 else a * x  # noqa: E731
        with mpmath.workdps(30):
            lap = lambda x, b=mpmath.mpf(1) / mpmath.sqrt(2): mpmath.exp(-abs(x) / b) / (2 * b)  # noqa: E731 var 1
            m4_lap = mpmath.quad(lambda x: phi(x) ** 4 * lap(x), [-mpmath.inf, 0, mpmath.inf])
        assert rel_err(igbsym.get("leaky.m4").numpy(a=a, sigma=1.0, kappa=6.0), m4_lap) < 1e-12
        g4 = gauss_expect(lambda x: phi(x) ** 4, 0, 1.7)
        assert rel_err(igbsym.get("leaky.m4").numpy(a=a, sigma=1.7, kappa=3.0), g4) < 1e-12
        g2 = gauss_expect(lambda x: phi(x) ** 2, 0, 1.7)
        assert rel_err(igbsym.get("leaky.m2").numpy(a=a, sigma=1.7), g2) < 1e-12
        m = gauss_expect(phi, 0, 1.7)
        assert abs(igbsym.get("leaky.mean").numpy(a=a, sigma=1.7) - float(m)) < 1e-12
        assert rel_err(igbsym.get("leaky.var").numpy(a=a, sigma=1.7), g2 - m * m) < 1e-12


@given(activation=st.sampled_from(acts.names()), sigma=st.floats(0.05, 10), a=st.floats(-1, 1))
def test_activation_moments_numpy_vs_mpmath_vs_quadrature(activation, sigma, a):
    f = acts.get(activation)
    m_ref = gauss_expect(lambda x: f.mp(x, a, sigma), 0, sigma, dps=30)
    v_ref = gauss_expect(lambda x: (f.mp(x, a, sigma) - m_ref) ** 2, 0, sigma, dps=30)
    mean, var = igbsym.get("activation.mean"), igbsym.get("activation.var")
    kw = dict(activation=activation, sigma=sigma, a=a)
    got_m, got_v = mean.numpy(**kw), var.numpy(**kw)
    scale = float(gauss_expect(lambda x: abs(f.mp(x, a, sigma)), 0, sigma, dps=20))  # conditioning of the mean
    assert abs(got_m - float(m_ref)) <= 1e-12 * scale + 1e-300
    assert rel_err(got_v, v_ref) < 1e-11


@settings(max_examples=max(5, settings().max_examples // 16))
@given(activation=st.sampled_from(acts.names()), sigma=st.floats(0.05, 10), a=st.floats(-1, 1))
def test_activation_var_mp_route_vs_quadrature(activation, sigma, a):
    """The mp route (tanh–sinh over ~46 panels at 30 digits, up to 6 s a call for GELU) on 1/16 of the profile's
    examples: it dominated the thorough profile (400 calls), which then never finished."""
    f = acts.get(activation)
    m_ref = gauss_expect(lambda x: f.mp(x, a, sigma), 0, sigma, dps=30)
    v_ref = gauss_expect(lambda x: (f.mp(x, a, sigma) - m_ref) ** 2, 0, sigma, dps=30)
    assert rel_err(igbsym.get("activation.var").mp(30, activation=activation, sigma=sigma, a=a), v_ref) < 1e-20


def test_special_case_identities():
    s = np.linspace(0.1, 4, 50)
    act_m, act_v = igbsym.get("activation.mean"), igbsym.get("activation.var")
    np.testing.assert_allclose(act_v.numpy(activation="leaky_relu", a=0.0, sigma=s),
                               act_v.numpy(activation="relu", sigma=s))
    np.testing.assert_allclose(act_v.numpy(activation="leaky_relu", a=1.0, sigma=s), s**2)
    np.testing.assert_allclose(act_v.numpy(activation="srelu", sigma=s), act_v.numpy(activation="relu", sigma=s))
    np.testing.assert_allclose(act_m.numpy(activation="relu", sigma=s),
                               igbsym.get("rectified.mean").numpy(mu=0, sigma=s))
    assert act_m.is_exact(activation="tanh") and not act_v.is_exact(activation="tanh")


@pytest.mark.parametrize("name,kw,fragment", [
    ("rectified.mean", dict(mu=0, sigma=-1), "sigma=-1 is not allowed; allowed: a real number > 0"),
    ("rectified.moment", dict(n=2.5, mu=0, sigma=1), "n=2.5 is not an integer"),
    ("rectified.moment", dict(n=-1, mu=0, sigma=1), "out of range"),
    ("rectified.mean", dict(mu=0), "missing parameter sigma"),
    ("rectified.mean", dict(mu=0, sigma=1, nu=2), "unknown parameter nu"),
    ("rectified.mean", dict(mu=math.nan, sigma=1), "mu=nan is not allowed"),
    ("activation.var", dict(activation="softplus", sigma=1), "allowed: one of relu"),
    ("rectified.scaled_mean", dict(alpha=0, mu=1, sigma=1), "alpha != 0"),
    ("leaky.m4", dict(a=0, sigma=1, kappa=0.5), "kappa >= 1"),
])
def test_bad_input_is_one_clear_line(name, kw, fragment):
    with pytest.raises(igbsym.InputError) as err:
        igbsym.get(name).numpy(**kw)
    assert fragment in str(err.value) and "\n" not in str(err.value)


def _moment_reference(n, mu, sigma, dps=50):
    """E[ReLU(X)^n], X ~ N(μ, σ²), by 50-digit quadrature of the defining integral ∫_0^∞ x^n N(x; μ, σ²) dx after
    the exact substitution x = σ u/a, a = max(|t|, 1), t = μ/σ (the exponent −(x − μ)²/(2σ²) = −t²/2 + t u/a −
    u²/(2a²)): σ^n φ(t) a^{−n−1} ∫_0^∞ u^n e^{t u/a − u²/(2a²)} du, whose integrand lives on u = O(n + 1) for any t
    (plain tanh–sinh on the original form is off by 1e-8 at t = −20)."""
    with mpmath.workdps(dps):
        mu, sigma = mpmath.mpf(mu), mpmath.mpf(sigma)
        t = mu / sigma
        a = max(abs(t), 1)
        f = lambda u: u**n * mpmath.exp(t * u / a - u * u / (2 * a * a))  # noqa: E731
        pts = [0, 1, 4, 16, 64] + ([t * a] if t > 0 else []) + [mpmath.inf]
        return sigma**n * mpmath.npdf(t) * a ** (-n - 1) * mpmath.quad(f, sorted(set(pts)))


@pytest.mark.parametrize("t", [-40.0, -37.0, -20.0, -10.0, -3.0, 0.0, 2.5])
def test_rectified_moment_deep_tail_against_50_digit_quadrature(t):
    """Issue 11 §4: the mp route within 1e-14 relative of 50-digit quadrature for n ≤ 8 down to μ/σ = −40. The
    NumPy kernel (log ratio recurrence, Miller backward for t < −1) within 1e-14 + 2t²ε: t = μ/σ is rounded (ε/2)
    and the moment's condition number in t is ≈ t² for t ≪ 0 (d ln I_n/d ln t ≈ −t²), so no double-precision
    kernel does better. Below t ≈ −37.5 the moment itself is below the double range and the kernel returns 0."""
    form = igbsym.get("rectified.moment")
    for n in range(1, 9):
        ref = _moment_reference(n, t * 1.3, 1.3)
        assert rel_err(form.mp(30, n=n, mu=t * 1.3, sigma=1.3), ref) < 1e-14, n
        got = form.numpy(n=n, mu=t * 1.3, sigma=1.3)
        if ref < 1e-308:
            assert 0 <= got < 1e-300, (n, got)
        else:
            assert rel_err(got, ref) < 1e-14 + 2 * t * t * np.finfo(float).eps, n


@pytest.mark.parametrize("form, activation, leading", [
    ("activation.mean", "silu", lambda: mpmath.mpf(1) / 4),            # x/2 tanh(x/2) = x²/4 + O(x⁴)
    ("activation.mean", "gelu", lambda: 1 / mpmath.sqrt(2 * mpmath.pi)),   # x/2 erf(x/√2) = x²/√(2π) + O(x⁴)
    ("activation.var", "tanh", lambda: mpmath.mpf(1)),                 # tanh² x = x² + O(x⁴)
    ("activation.var", "sigmoid", lambda: mpmath.mpf(1) / 16),         # (σ(x) − 1/2)² = x²/16 + O(x⁴)
])
def test_smooth_mp_route_relative_at_tiny_sigma(form, activation, leading):
    """The mp route keeps relative accuracy where the moment is O(σ²) ≪ 1 (mpmath.quad's absolute tolerance left
    it 2.4e-13 off at σ = 1e-100 before mp_expect's scale); reference: the leading Taylor term, exact to O(σ²)."""
    with mpmath.workdps(60):
        sigma = mpmath.mpf("1e-100")
        value = igbsym.get(form).mp(dps=30, sigma=sigma, activation=activation)
        assert abs(value / (leading() * sigma**2) - 1) < mpmath.mpf("1e-25")


# the one-pass kernels' range (t >= -3, both sides of the switch) and the Mills / log routes below it
_KERNEL_T = [-37.0, -20.0, -10.0, -5.0, -3.0001, -3.0, -2.5, -2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0, 10.0]


@pytest.mark.parametrize("t", _KERNEL_T)
def test_mean_and_var_kernels_against_quadrature_across_the_switch(t):
    """Issue 11 §4: the one-pass kernels (one erfc, one exp; t >= -3) keep the tail routes' accuracy. Reference:
    30-digit quadrature of the defining integrals (_moment_reference; Var = M2 - M1², 30 digits leave >= 20 after the
    cancellation). Allowance in units of ε(1 + t²): rounding t = μ/σ alone moves both by ≈ t²ε relative for t ≪ 0
    (condition number); the mean's kernels add a few ulp (4 units), the variance's cancellation more (16 units)."""
    mu, sigma = t * 1.3, 1.3
    m1, m2 = _moment_reference(1, mu, sigma, dps=30), _moment_reference(2, mu, sigma, dps=30)
    with mpmath.workdps(30):
        var = m2 - m1 * m1
    unit = np.finfo(float).eps * (1 + t * t)
    assert rel_err(igbsym.get("rectified.mean").numpy(mu=mu, sigma=sigma), m1) < 4 * unit
    assert rel_err(igbsym.get("rectified.var").numpy(mu=mu, sigma=sigma), var) < 16 * unit
    both = igbsym.get("rectified.var").numpy(mu=np.array([mu, 0.3]), sigma=np.array([sigma, 2.0]))
    assert both[0] == igbsym.get("rectified.var").numpy(mu=mu, sigma=sigma)  # array = scalar, bit for bit


@pytest.mark.parametrize("n", [30, 40, 60])
@pytest.mark.parametrize("t", [-1.0, -0.941, -0.5, -0.26, -0.25, -0.01])
def test_rectified_moment_high_order_near_the_recursion_switch(n, t):
    """The forward ratio recursion ran for every t >= -1, but for t < 0 it amplifies rounding by ~e^{2|t| sqrt(n)}:
    n = 60 at t = -1 was 1.8e-10 off (the domain test's corner), n = 40 at t = -0.94 1.2e-11. Now forward only for
    t >= -2/sqrt(n); reference: 50-digit quadrature of the defining integral (_moment_reference)."""
    got = igbsym.get("rectified.moment").numpy(n=n, mu=t, sigma=1.0)
    assert rel_err(got, _moment_reference(n, t, 1.0)) < 2e-13
