"""Max-pool family: kernels vs mpmath and vs the lambdified exact expressions, special-case identities, Hypothesis
properties over k and sigma, bad input. Expected values come from mpmath quadrature of the defining integral, exact
closed forms (derived independently in derivations/maxpool.py) or other families' forms."""
import math

import mpmath
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import igbsym
from igbsym import extreme
from igbsym.families import maxpool as fam
from igbsym.gauss import composite_gauss_legendre

ACTS = ("identity", "relu")
get = igbsym.get


def rel(a, b):
    return abs(float(a) / float(b) - 1)


def cdf_route_moments(act, k, sigma=1, dps=30):
    """(E[M_k], Var[M_k]) from the CDF F = Phi(x/sigma)^k alone (independent of the library's density integral and
    its Gumbel rule): E M = int_0^inf (1 - F) - int_-inf^0 F, E M^2 = 2 int_0^inf x (1 - F) + 2 int_-inf^0 |x| F
    (for relu F = 0 below 0), by mpmath.quad with breakpoints around the location sqrt(2 ln k)."""
    with mpmath.workdps(dps):
        k, sigma = int(k), mpmath.mpf(sigma)
        centre = mpmath.sqrt(2 * mpmath.log(k)) if k > 1 else mpmath.mpf(0)
        around = [centre + j / max(centre, 1) for j in (-3, 3)]
        upper = sorted({mpmath.mpf(0), *(v for v in around if v > 0), centre + 10, mpmath.inf})
        survival = lambda x: -mpmath.expm1(k * mpmath.log(mpmath.ncdf(x)))  # noqa: E731  1 - Phi^k, no cancellation
        below = lambda x: mpmath.ncdf(x) ** k  # noqa: E731
        m = mpmath.quad(survival, upper)
        m2 = 2 * mpmath.quad(lambda x: x * survival(x), upper)
        if act == "identity":
            lower = [-mpmath.inf, -3, 0]
            m -= mpmath.quad(below, lower)
            m2 += 2 * mpmath.quad(lambda x: -x * below(x), lower)
        return sigma * m, sigma**2 * (m2 - m * m)


# --- law ------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("name", ["maxpool.cdf", "maxpool.pdf"])
def test_law_kernel_equals_lambdified_expression(name, act):
    form = get(name)
    xs, ks, ss = np.meshgrid(np.linspace(-4, 6, 41), [1.0, 2.0, 7.0, 64.0, 1e4], [0.5, 1.0, 3.0], indexing="ij")
    kern = form.numpy(x=xs, k=ks, sigma=ss, activation=act)
    with np.errstate(all="ignore"):
        lam = form.lambdified(activation=act)(x=xs, k=ks, sigma=ss)
    ok = lam > 1e-280
    assert np.all(np.abs(kern[ok] / lam[ok] - 1) < 1e-12)
    assert np.all(kern[~ok] < 1e-250)


@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("name", ["maxpool.cdf", "maxpool.pdf"])
def test_law_kernel_vs_mpmath(name, act):
    form = get(name)
    for x, k, s in [(0.3, 1, 1.0), (2.5, 3, 1.0), (4.9, 10**6, 1.0), (3.0, 10**6, 1.0), (-2.0, 5, 2.0),
                    (12.0, 10**9, 2.0), (0.01, 2, 0.1)]:
        ref = form.mp(40, x=x, k=k, sigma=s, activation=act)
        got = form.numpy(x=x, k=k, sigma=s, activation=act)
        if float(ref) < 1e-300:  # below the double range
            assert got < 1e-300
        else:
            assert rel(got, ref) < 1e-12 * max(1.0, abs(float(k * mpmath.log(mpmath.ncdf(x / s))))), (x, k, s)


@pytest.mark.parametrize("k", [1, 2, 3, 10, 40])
def test_relu_atom_at_zero_has_mass_two_to_minus_k(k):
    cdf = get("maxpool.cdf")
    assert rel(cdf.numpy(x=0.0, k=k, sigma=1.7, activation="relu"), 2.0**-k) < 1e-14
    assert cdf.numpy(x=-1e-12, k=k, sigma=1.7, activation="relu") == 0
    assert cdf.mp(30, x=0, k=k, sigma=1, activation="relu") == mpmath.mpf(2) ** -k
    # the continuous part carries 1 - 2^-k: integrate the pdf over x > 0 with Gauss-Legendre
    x, w = composite_gauss_legendre([0.0, 12.0], 200)
    mass = w @ get("maxpool.pdf").numpy(x=x, k=k, sigma=1.0, activation="relu")
    assert abs(mass - (1 - 2.0**-k)) < 1e-10


# --- moments ------------------------------------------------------------------------------------------------------
KS_FAST = [1, 5, 6, 17, 40, 63, 64, 1000, 10**6]  # relu k < 64 uses the tail table


@pytest.mark.parametrize("act", ACTS)
def test_moments_vs_cdf_route_quadrature(act):
    mean, var = get("maxpool.mean"), get("maxpool.var")
    for k in KS_FAST:
        m_ref, v_ref = cdf_route_moments(act, k, mpmath.mpf("1.3"))
        m = mean.numpy(k=k, sigma=1.3, activation=act)
        v = var.numpy(k=k, sigma=1.3, activation=act)
        assert abs(m - float(m_ref)) <= 1e-13 * max(abs(float(m_ref)), 1.0), (k, m, m_ref)
        assert rel(v, v_ref) < 1e-13, (k, v, v_ref)


@pytest.mark.slow
@pytest.mark.parametrize("act", ACTS)
def test_moments_vs_mpmath_dense_in_k(act):
    ks = sorted(set(np.unique(np.round(np.logspace(0, 9, 40)).astype(int)).tolist() + list(range(1, 70, 7))))
    mean, var = extreme.unit_moments(act, np.array(ks, float))
    for k, m, v in zip(ks, mean, var):
        m_ref, v_ref = cdf_route_moments(act, k)
        assert abs(m - float(m_ref)) <= 1e-13 * max(abs(float(m_ref)), 1.0) and rel(v, v_ref) < 1e-13, k


@pytest.mark.parametrize("act", ACTS)
def test_exact_cases_kernel_equals_lambdified_closed_form_and_quadrature(act):
    """The exact dispatch returns the closed form (the quadrature between and beyond the exact k is checked against
    the CDF route above, including the relu tail table at k < 64)."""
    for k in sorted(extreme.EXACT_MOMENTS[act]):
        for which, form in ((extreme.exact_mean, "maxpool.mean"), (extreme.exact_var, "maxpool.var")):
            expr = which(act, k)
            lam = float(expr.subs(extreme.sigma, 2.5).evalf(30))
            got = get(form).numpy(k=k, sigma=2.5, activation=act)
            assert got == lam if lam == 0 else rel(got, lam) < 1e-15


def test_special_cases_agree_with_other_families():
    """k = 1 is no pooling: the pooled unit is the activation itself (a special-case identity: max over k = 1 is the
    identity)."""
    for s in (0.4, 1.0, 3.0):
        for act in ACTS:
            assert rel(get("maxpool.var").numpy(k=1, sigma=s, activation=act),
                       get("activation.var").numpy(activation=act, sigma=s)) < 1e-14
        assert rel(get("maxpool.mean").numpy(k=1, sigma=s, activation="relu"),
                   get("rectified.mean").numpy(mu=0.0, sigma=s)) < 1e-14
        assert get("maxpool.mean").numpy(k=1, sigma=s, activation="identity") == 0
    for act in ACTS:
        assert abs(get("maxpool.gamma").numpy(k=1, activation=act) - get("igb.gamma").numpy(activation=act)) < 1e-14
    g2 = get("maxpool.gamma").numpy(k=2, activation="identity")
    assert rel(g2, 1 / (math.pi - 1)) < 1e-14 and g2 > 0  # pooling alone creates IGB


def test_known_literature_values():
    """E[max of k N(0,1)] from the literature (Teichroew 1956): k=2: 1/sqrt(pi), 3: 3/(2 sqrt(pi)), 10: 1.538752731."""
    mean = get("maxpool.mean")
    assert rel(mean.numpy(k=2, sigma=1.0, activation="identity"), 1 / math.sqrt(math.pi)) < 1e-15
    assert rel(mean.numpy(k=3, sigma=1.0, activation="identity"), 1.5 / math.sqrt(math.pi)) < 1e-15
    assert abs(mean.numpy(k=10, sigma=1.0, activation="identity") - 1.538752731) < 1e-9


def test_vectorised_over_k_and_sigma_no_nan():
    rng = np.random.default_rng(0)
    k = np.round(np.exp(rng.uniform(0, np.log(1e6), 10_000)))
    s = np.exp(rng.uniform(-3, 3, 10_000))
    for act in ACTS:
        m = get("maxpool.mean").numpy(k=k, sigma=s, activation=act)
        v = get("maxpool.var").numpy(k=k, sigma=s, activation=act)
        g = get("maxpool.gamma").numpy(k=k, activation=act)
        assert m.shape == v.shape == g.shape == (10_000,) and np.all(np.isfinite(m + v + g)) and np.all(v > 0)
        i = np.flatnonzero(k > 100)[:3]
        for j in i:
            mj = get("maxpool.mean").numpy(k=k[j], sigma=s[j], activation=act)
            assert rel(mj, m[j]) < 1e-15


# --- Hypothesis ---------------------------------------------------------------------------------------------------
ks = st.integers(1, 10**6)
sigmas = st.floats(0.01, 100.0)


@given(k=ks, sigma=sigmas, act=st.sampled_from(ACTS))
@example(k=1, sigma=1.0, act="identity")
@example(k=10**6, sigma=100.0, act="relu")
def test_mean_increases_in_k_and_scales_with_sigma(k, sigma, act):
    mean = get("maxpool.mean")
    m1, m2 = mean.numpy(k=[k, k + 1], sigma=sigma, activation=act)
    assert m2 > m1
    assert rel(mean.numpy(k=k, sigma=sigma, activation=act) + 1e-300,
               sigma * mean.numpy(k=k, sigma=1.0, activation=act) + 1e-300) < 1e-14
    g1, g2 = get("maxpool.gamma").numpy(k=[k, k + 1], activation=act)
    assert g2 > g1


@given(k=ks, sigma=sigmas, act=st.sampled_from(ACTS), x=st.lists(st.floats(-50, 50), min_size=2, max_size=20))
@example(k=3, sigma=1.0, act="relu", x=[-1e-9, 0.0])
def test_cdf_in_unit_interval_monotone_in_x_and_decreasing_in_k(k, sigma, act, x):
    cdf = get("maxpool.cdf")
    xs = np.sort(np.asarray(x))
    f = cdf.numpy(x=xs, k=k, sigma=sigma, activation=act)
    assert np.all((f >= 0) & (f <= 1)) and np.all(np.diff(f) >= 0)
    assert np.all(cdf.numpy(x=xs, k=k + 1, sigma=sigma, activation=act) <= f)
    if act == "relu":
        assert np.all(f[xs < 0] == 0) and np.all(f[xs >= 0] >= 2.0**-k * (1 - 1e-13))


@settings(max_examples=max(2, settings().max_examples // 6))  # each example is two mpmath quadratures
@given(k=st.integers(2, 10**8), act=st.sampled_from(ACTS))
def test_hypothesis_moments_agree_with_mpmath(k, act):
    m_ref, v_ref = cdf_route_moments(act, k)
    m, v = get("maxpool.mean").numpy(k=k, sigma=1.0, activation=act), get("maxpool.var").numpy(k=k, sigma=1.0,
                                                                                              activation=act)
    assert rel(m, m_ref) < 1e-13 and rel(v, v_ref) < 1e-13


# --- Gumbel constants -----------------------------------------------------------------------------------------------
def test_gumbel_constants_kernel_vs_mpmath_and_asymptotics():
    loc, scale = get("maxpool.gumbel_loc"), get("maxpool.gumbel_scale")
    for k in (2, 10, 10**6):
        assert rel(loc.numpy(k=k, sigma=2.0), loc.mp(30, k=k, sigma=2.0)) < 1e-14
        assert rel(scale.numpy(k=k, sigma=2.0), scale.mp(30, k=k, sigma=2.0)) < 1e-14
    dist = [fam.gumbel_kolmogorov(k) for k in (10, 10**3, 10**6, 10**9)]
    assert all(b < a for a, b in zip(dist, dist[1:])) and dist[-1] < dist[0] / 2
    # Hall (1979): with these constants the error is of order (ln ln k)^2/ln k — decaying, but very slowly
    scaled = [dd * math.log(k) / math.log(math.log(k)) ** 2 for dd, k in zip(dist, (10, 10**3, 10**6, 10**9))]
    assert all(b < a for a, b in zip(scaled[1:], scaled[2:]))
    # Gumbel mean a_k + gamma_E b_k approaches E[M_k] in units of b_k (slowly: O(1/ln k))
    gap = [abs(float(loc.numpy(k=k, sigma=1.0) + 0.5772156649 * scale.numpy(k=k, sigma=1.0)
                     - get("maxpool.mean").numpy(k=k, sigma=1.0, activation="identity")) / scale.numpy(k=k, sigma=1.0))
           for k in (10, 10**3, 10**6, 10**9)]
    assert all(b < a for a, b in zip(gap, gap[1:]))


def test_gamma_growth_rate_is_24_over_pi2_log2k():
    """gamma/(ln k)^2 -> 24/pi^2; the next-order Gumbel form (6/pi^2)(2L - ln(4 pi L)/2 + gamma_E)^2 is closer."""
    ks_ = np.array([1e3, 1e6, 1e9])
    g = get("maxpool.gamma").numpy(k=ks_, activation="relu")
    L = np.log(ks_)
    lead = g / (24 / np.pi**2 * L**2)
    nxt = g / (6 / np.pi**2 * (2 * L - np.log(4 * np.pi * L) / 2 + np.euler_gamma) ** 2)
    assert np.all(np.diff(np.abs(lead - 1)) < 0) and np.all(np.abs(nxt - 1) < np.abs(lead - 1))
    assert abs(nxt[-1] - 1) < 0.05


# --- App. D.2 ------------------------------------------------------------------------------------------------------
def test_extreme_mass_threshold_is_igb_cdf_and_binomial_vs_mpmath():
    em = get("maxpool.extreme_mass")
    for act, k, d in (("relu", 4, 100), ("identity", 64, 1000), ("relu", 2, 10**6)):
        gamma = get("maxpool.gamma").numpy(k=k, activation=act)
        thr = em.numpy(k=k, activation=act, D=d, rule="threshold")
        assert rel(thr, 2 * get("igb.cdf").numpy(g=1 / d, gamma=gamma)) < 1e-13
        ref = em.mp(20, k=k, activation=act, D=d, rule="binomial")
        assert rel(em.numpy(k=k, activation=act, D=d, rule="binomial"), ref) < 1e-12
    # gamma = 0 (linear, no pooling): G0_hat = Binomial(D, 1/2)/D exactly
    assert em.numpy(k=1, activation="identity", D=10, rule="binomial") == 2.0**-9
    assert em.numpy(k=1, activation="identity", D=10, rule="threshold") == 0


def test_extreme_mass_binomial_vs_monte_carlo_of_the_model():
    """Independent route: draw x ~ N(0, gamma), G0 = Phi(x), G0_hat ~ Binomial(D, G0)/D."""
    rng = np.random.default_rng(5)
    gamma = float(get("maxpool.gamma").numpy(k=4, activation="relu"))
    n, d = 400_000, 50
    from scipy import special
    g0 = special.ndtr(rng.normal(0, math.sqrt(gamma), n))
    hits = rng.binomial(d, g0)
    p_hat = np.mean((hits == 0) | (hits == d))
    pred = float(get("maxpool.extreme_mass").numpy(k=4, activation="relu", D=d, rule="binomial"))
    assert abs(p_hat - pred) < 5 * math.sqrt(pred * (1 - pred) / n)


# --- bad input ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,kw,fragment", [
    ("maxpool.mean", dict(k=0, sigma=1.0, activation="relu"), "k=0 is not allowed"),
    ("maxpool.mean", dict(k=2.5, sigma=1.0, activation="relu"), "k=2.5 is not allowed"),
    ("maxpool.var", dict(k=3, sigma=-1.0, activation="relu"), "sigma=-1 is not allowed"),
    ("maxpool.gamma", dict(k=3, activation="tanh"), "activation='tanh' is not allowed"),
    ("maxpool.cdf", dict(x=float("nan"), k=3, sigma=1.0, activation="relu"), "x=nan is not allowed"),
    ("maxpool.gumbel_loc", dict(k=1, sigma=1.0), "k=1 is not allowed"),
    ("maxpool.extreme_mass", dict(k=3, activation="relu", D=1), "D=1 is not allowed"),
    ("maxpool.extreme_mass", dict(k=3, activation="relu", D=10, rule="exact"), "rule='exact' is not allowed"),
    ("maxpool.mean", dict(k=2 * 10**9, sigma=1.0, activation="relu"), "is not allowed"),
])
def test_bad_input_raises_input_error(name, kw, fragment):
    with pytest.raises(igbsym.InputError, match=fragment.replace("(", r"\(")):
        get(name).numpy(**kw)


def test_no_nan_at_extreme_arguments():
    for act in ACTS:
        for name in ("maxpool.cdf", "maxpool.pdf"):
            out = get(name).numpy(x=np.array([-1e300, -40.0, 0.0, 40.0, 1e300]), k=np.array([1.0, 1e9]).reshape(2, 1),
                                  sigma=1e-3, activation=act)
            assert np.all(np.isfinite(out)) and np.all(out >= 0)
        assert np.isfinite(get("maxpool.extreme_mass").numpy(k=10**9, activation=act, D=10**9, rule="binomial"))


def test_gumbel_substitution_kernel_equals_lambdified_and_rule_reproduces_gumbel_moments():
    """x_k(t) hand kernel vs the lambdified SymPy substitution Φ^{-1}(exp(-e^{-t}/k)) where the latter is accurate,
    and the 40-point Gauss rule against the Gumbel moments (mean γ_E, variance π²/6, E[e^{-t}] = 1)."""
    import sympy as sp
    from igbsym.functions import NUMPY_MODULES
    lam = sp.lambdify([extreme.t, extreme.k], extreme.X_OF_T, modules=NUMPY_MODULES)
    tt = np.linspace(-2, 3, 41)[:, None]
    kk = np.array([1.0, 3.0, 50.0])[None, :]
    assert np.allclose(extreme.quantile_at_gumbel(tt, kk), lam(tt, kk), rtol=1e-12, atol=1e-12)
    nodes, weights = extreme.gumbel_gauss_rule()
    dens = sp.lambdify([extreme.t], extreme.GUMBEL_WEIGHT, modules="numpy")
    assert abs(weights.sum() - 1) < 1e-14 and abs(weights @ nodes - np.euler_gamma) < 1e-13
    assert abs(weights @ (nodes - np.euler_gamma) ** 2 - np.pi**2 / 6) < 1e-12
    assert abs(weights @ np.exp(-nodes) - 1) < 1e-12
    grid = np.linspace(-5, 50, 200001)
    assert abs(np.trapezoid(dens(grid), grid) - 1) < 1e-9


def test_issue17_domain_points():
    """Points tests/test_domain.py found: an array call must give the scalar call's value (a BLAS product rounded
    rows differently by batch), and at k = 1 (identity) E[M_1] = 0 exactly, so γ = 0 and the binomial extreme
    mass is 2·2^-D (G0_hat = Binomial(D, 1/2)/D) on both routes (mp left a 1e-76 residue that never converged)."""
    var, gamma, mass = (igbsym.get(n) for n in ("maxpool.var", "maxpool.gamma", "maxpool.extreme_mass"))
    for act, ks, sig in (("identity", [6, 3], [0.5, 4.4e-4]), ("relu", [5, 2], [1.0, 1.0])):
        arr = var.numpy(k=np.array(ks), sigma=np.array(sig), activation=act)
        assert arr[0] == var.numpy(k=ks[0], sigma=sig[0], activation=act)
    arr = mass.numpy(k=np.array([88195768, 4]), D=np.array([9204223, 7]), activation="relu", rule="binomial")
    assert arr[0] == mass.numpy(k=88195768, D=9204223, activation="relu", rule="binomial")
    assert gamma.mp(30, k=1, activation="identity") == 0
    assert mass.mp(30, k=1, D=7, activation="identity", rule="binomial") == mpmath.mpf(2) ** -6
    assert mass.numpy(k=1, D=7, activation="identity", rule="binomial") == 2.0 ** -6
    # threshold rule at γ = 0: G0 = 1/2 is never below 1/D (D = 2: not strictly), so the mass is 0 (was NaN = 0/0)
    assert mass.numpy(k=1, D=2, activation="identity", rule="threshold") == 0.0
    assert mass.mp(30, k=1, D=2, activation="identity", rule="threshold") == 0
