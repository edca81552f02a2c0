"""BatchNorm family: kernels vs independent mpmath routes, exact identities, limits, bad input, and small Monte
Carlo checks of the two laws (the full torch checks live in validation/checks_bn.py)."""
import math

import mpmath
import numpy as np
import pytest
from hypothesis import example, given, strategies as st
from scipy import integrate, stats

import igbsym
from igbsym.bn_law import gamma_half_ratio

get = igbsym.get
INTS = st.integers(min_value=7, max_value=5000)


def mp_proxy_pdf(b, B):
    """Scaled Student t: sqrt(B/(B-2)) T_{B-2}, from the t density (independent of the registered form)."""
    nu, c = mpmath.mpf(B - 2), mpmath.sqrt(mpmath.mpf(B) / (B - 2))
    t = mpmath.mpf(b) / c
    return mpmath.gamma((nu + 1) / 2) / (mpmath.sqrt(nu * mpmath.pi) * mpmath.gamma(nu / 2)) \
        * (1 + t * t / nu) ** (-(nu + 1) / 2) / c


def mp_canon_pdf(b, B):
    """Beta(1/2, (B-2)/2) law of z^2/(B-1), pushed to z (independent route)."""
    x = mpmath.mpf(b) ** 2 / (B - 1)
    if x >= 1:
        return mpmath.mpf(0)
    a, c = mpmath.mpf(1) / 2, mpmath.mpf(B - 2) / 2
    # Beta density at x times |dx/dz| = 2|z|/(B-1), halved for the two signs; x^(a-1) |z| = sqrt(B-1)
    return (1 - x) ** (c - 1) / mpmath.beta(a, c) / mpmath.sqrt(B - 1)


def mp_moment(pdf, B, f, edge=mpmath.inf):
    with mpmath.workdps(40):
        return mpmath.quad(lambda s: f(s) * pdf(s, B), [-edge, -1, 0, 1, edge])


def rel(a, b):
    return abs(float(a) - float(b)) / max(abs(float(b)), 1e-300)


def test_gamma_half_ratio_matches_mpmath():
    z = np.array([0.5, 1, 2.5, 10, 24.9, 25, 25.1, 100, 1e4, 1e8, 1e12])
    got = gamma_half_ratio(z)
    with mpmath.workdps(40):
        ref = [mpmath.gamma(mpmath.mpf(v) + 0.5) / mpmath.gamma(mpmath.mpf(v)) for v in z]
    assert max(rel(g, r) for g, r in zip(got, ref)) < 1e-14


@pytest.mark.parametrize("B", [3, 4, 5, 8, 16, 64, 512, 10**5])
def test_pdfs_match_independent_mpmath(B):
    bs = np.array([-7.0, -2.2, -0.3, 0.0, 0.4, 1.0, 1.7, 3.0, 25.0])
    for name, ref in (("bn.pdf", mp_proxy_pdf), ("bn.pdf_canonical", mp_canon_pdf)):
        got = get(name).numpy(b=bs, B=B)
        with mpmath.workdps(40):
            want = [ref(v, B) for v in bs]
        for g, w, v in zip(got, want, bs):
            if name == "bn.pdf_canonical" and abs(v * v - (B - 1)) < 1e-9:
                continue
            assert (g == 0 and w == 0) or rel(g, w) < 1e-12, (name, B, v, g, w)


@pytest.mark.parametrize("B", [3, 5, 8, 64, 150])  # Γ² in the lambdified form overflows near B = 340
def test_kernels_equal_lambdified_and_mp(B):
    bs = np.linspace(-0.99, 0.99, 9) * math.sqrt(B - 1)
    for name in ("bn.pdf", "bn.pdf_canonical", "bn.cdf", "bn.cdf_canonical"):
        f = get(name)
        assert np.allclose(f.numpy(b=bs, B=B), f.lambdified()(b=bs, B=B), rtol=1e-12, atol=1e-15)
    for name in ("bn.relu_mean", "bn.relu_var", "bn.gamma", "bn.relu_mean_canonical", "bn.relu_var_canonical",
                 "bn.gamma_canonical"):
        f = get(name)
        if B < 5 and not name.endswith("canonical"):
            continue
        assert rel(f.numpy(B=B), f.lambdified()(B=B)) < 1e-12
        assert rel(f.numpy(B=B), f.mp(B=B)) < 1e-12


@pytest.mark.parametrize("B", [3, 4, 7, 40])
def test_cdfs_against_scipy_and_quadrature(B):
    bs = np.array([-40.0, -3.0, -1.0, 0.0, 0.5, 2.0, 40.0])
    c = math.sqrt(B / (B - 2))
    assert np.allclose(get("bn.cdf").numpy(b=bs, B=B), stats.t(B - 2).cdf(bs / c), rtol=1e-12, atol=1e-15)
    canon = get("bn.cdf_canonical").numpy(b=bs, B=B)
    x = np.minimum(bs**2 / (B - 1), 1)
    want = 0.5 + np.sign(bs) * stats.beta(0.5, (B - 2) / 2).cdf(x) / 2
    assert np.allclose(canon, want, rtol=1e-12, atol=1e-15)
    with mpmath.workdps(30):
        q = mpmath.quad(lambda s: mp_canon_pdf(s, B), [0, 0.5])
    assert rel(get("bn.cdf_canonical").mp(b=0.5, B=B) - 0.5, q) < 1e-20


def test_left_tail_cdf_keeps_relative_accuracy():
    got = get("bn.cdf").numpy(b=-1e3, B=30)
    with mpmath.workdps(40):  # P(T_28 < -1e3 sqrt(28/30)) as a Beta tail, computed directly
        want = mpmath.betainc(14, 0.5, 0, mpmath.mpf(30) / (30 + 10**6), regularized=True) / 2
    assert 0 < got < 1e-60 and rel(got, want) < 1e-12


@pytest.mark.parametrize("B", [7, 9, 20])
def test_moments_by_quadrature(B):
    var = mp_moment(mp_proxy_pdf, B, lambda s: s * s)
    assert rel(get("bn.var").numpy(B=B), var) < 1e-12
    m4 = mp_moment(mp_proxy_pdf, B, lambda s: s**4)
    assert rel(get("bn.kurtosis").numpy(B=B), m4 / var**2) < 1e-11
    relu = mp_moment(mp_proxy_pdf, B, lambda s: max(s, 0))
    assert rel(get("bn.relu_mean").numpy(B=B), relu) < 1e-12
    edge = mpmath.sqrt(B - 1)
    for f, name in ((lambda s: s * s, "bn.var_canonical"), (lambda s: s**4, "bn.kurtosis_canonical"),
                    (lambda s: max(s, 0), "bn.relu_mean_canonical")):
        assert rel(get(name).numpy(B=B), mp_moment(mp_canon_pdf, B, f, edge)) < 1e-12, name


def test_two_point_law_at_B2():
    """B = 2: torch BN gives z = +-1 exactly, so E ReLU = 1/2, Var = 1/4, gamma = 1, kurtosis 1."""
    assert rel(get("bn.relu_mean_canonical").numpy(B=2), 0.5) < 1e-15
    assert rel(get("bn.gamma_canonical").numpy(B=2), 1.0) < 1e-14
    assert get("bn.kurtosis_canonical").numpy(B=2) == 1.0
    assert get("bn.support_canonical").numpy(B=2) == 1.0


def test_special_values():
    assert math.isclose(get("bn.gamma").numpy(B=6), 1 / 3, rel_tol=1e-14)  # m = √6/4, E Y² = 3/2: (3/8)/(9/8)
    assert math.isclose(get("bn.gamma_canonical").numpy(B=6), 45 / 83, rel_tol=1e-14)
    assert get("bn.pdf_canonical").numpy(b=0.3, B=4) == pytest.approx(1 / (2 * math.sqrt(3)), rel=1e-14)  # uniform


@given(B=INTS)
@example(B=7)
def test_large_B_ordering_and_limits(B):
    g_inf = 1 / (math.pi - 1)
    gp, gc = get("bn.gamma").numpy(B=B), get("bn.gamma_canonical").numpy(B=B)
    assert gp < g_inf < gc
    assert get("bn.var").numpy(B=B) > 1 == get("bn.var_canonical").numpy(B=B)
    assert get("bn.kurtosis_canonical").numpy(B=B) < 3 < get("bn.kurtosis").numpy(B=B)
    for est, g in (("proxy", gp), ("canonical", gc)):
        approx = get("bn.gamma_large_B").numpy(B=B, estimator=est)
        assert abs(approx - g) < 3.0 / B**2  # O(1/B^2) remainder, constant bounded by the B = 7 value


@pytest.mark.parametrize("est,name", [("proxy", "bn.pdf"), ("canonical", "bn.pdf_canonical")])
def test_pdf_large_B_error_is_order_B_minus_2(est, name):
    bs = np.linspace(-3, 3, 13)
    errs = [np.max(np.abs(get("bn.pdf_large_B").numpy(b=bs, B=B, estimator=est) - get(name).numpy(b=bs, B=B)))
            for B in (100, 1000, 10000)]
    assert 80 < errs[0] / errs[1] < 120 and 80 < errs[1] / errs[2] < 120  # ratio 100 per decade: O(1/B^2)
    assert np.max(np.abs(get(name).numpy(b=bs, B=10**9) - stats.norm.pdf(bs))) < 1e-8


def mp_tv(B, dps=40):
    """TV = (1/2) int |f_c - f_p| db from the two densities above (independent of the registered route): the
    positive part of f_c - f_p on b > 0, doubled. The crossing b* (f_c = f_p) is bracketed on a geometric grid
    of the canonical support (0.01 to the edge) and refined by a bracketing root finder (anderson); for B < 5
    the canonical density is above the proxy on its whole support and TV is the proxy's mass outside it."""
    with mpmath.workdps(dps):
        edge = mpmath.sqrt(B - 1)
        if B < 5:
            return 2 * mpmath.quad(lambda v: mp_proxy_pdf(v, B), [edge, edge + 10, mpmath.inf])
        diff = lambda v: mpmath.log(mp_canon_pdf(v, B)) - mpmath.log(mp_proxy_pdf(v, B))  # noqa: E731
        grid = [mpmath.mpf("0.01") * (100 * edge) ** (mpmath.mpf(j) / 400) for j in range(400)]  # 0.01 .. edge
        lo, hi = next((u, v) for u, v in zip(grid, grid[1:]) if diff(u) > 0 >= diff(v))
        cross = mpmath.findroot(diff, (lo, hi), solver="anderson")
        return 2 * mpmath.quad(lambda v: mp_canon_pdf(v, B) - mp_proxy_pdf(v, B), [0, cross / 2, cross])


def test_tv_matches_independent_quadrature_and_asymptote():
    c = math.sqrt(1 + math.sqrt(2))
    const = stats.norm.pdf(c) * c * (2 + math.sqrt(2))
    for B in (3, 4, 5, 8, 64, 512, 10**6, 10**9):
        assert rel(get("bn.tv_proxy").numpy(B=B), mp_tv(B)) < 1e-13, B
    tvs = get("bn.tv_proxy").numpy(B=np.array([10**4, 10**6]))
    assert abs(tvs[0] * 1e4 - const) < 2e-4 and abs(tvs[1] * 1e6 - const) < 2e-6


@given(B=st.integers(3, 400), b=st.floats(-50, 50))
def test_density_properties(B, b):
    """Symmetric, non-negative, CDF consistent with the density (finite differences) and with symmetry."""
    for pdf, cdf in (("bn.pdf", "bn.cdf"), ("bn.pdf_canonical", "bn.cdf_canonical")):
        f, F = get(pdf), get(cdf)
        assert f.numpy(b=b, B=B) == pytest.approx(f.numpy(b=-b, B=B), rel=1e-14, abs=1e-300)
        assert F.numpy(b=b, B=B) + F.numpy(b=-b, B=B) == pytest.approx(1.0, abs=1e-14)
        assert f.numpy(b=b, B=B) >= 0
    edge = math.sqrt(B - 1)
    assert get("bn.cdf_canonical").numpy(b=edge * 1.0001 + 1e-9, B=B) == 1.0


@given(B=st.integers(3, 200))
def test_density_integrates_to_one(B):
    """Adaptive quadrature of both densities (tails / arcsine edge singularity included) gives total mass 1."""
    proxy = integrate.quad(lambda v: get("bn.pdf").numpy(b=v, B=B), -np.inf, np.inf, epsabs=1e-11, limit=200)[0]
    edge = math.sqrt(B - 1)
    canon = integrate.quad(lambda v: get("bn.pdf_canonical").numpy(b=v, B=B), -edge, edge, epsabs=1e-11,
                           limit=200)[0]
    assert proxy == pytest.approx(1, abs=1e-8) and canon == pytest.approx(1, abs=1e-8)


def test_monte_carlo_leave_one_out_and_canonical_numpy():
    """Independent numpy simulation (no torch): explicit leave-one-out and batch-normalised values."""
    rng = np.random.default_rng(1)
    for B in (5, 12):
        x = rng.normal(3.0, 2.0, size=(40000, B))
        rest = x[:, 1:]
        bt = (x[:, 0] - rest.mean(1)) / rest.std(1)
        z = (x[:, 0] - x.mean(1)) / x.std(1)
        assert stats.kstest(bt, lambda v: get("bn.cdf").numpy(b=v, B=B)).pvalue > 1e-4
        assert stats.kstest(z, lambda v: get("bn.cdf_canonical").numpy(b=v, B=B)).pvalue > 1e-4
        assert np.allclose(z, np.sqrt(B - 1) * bt / np.sqrt(B + bt**2), atol=1e-12)  # the exact map


@pytest.mark.parametrize("name,kw,msg", [
    ("bn.pdf", dict(b=0.0, B=2), "B >= 3"),
    ("bn.var", dict(B=4), "B >= 5"),
    ("bn.kurtosis", dict(B=6), "B >= 7"),
    ("bn.relu_mean", dict(B=3), "B >= 4"),
    ("bn.gamma", dict(B=np.array([8, 4])), "B >= 5"),
    ("bn.pdf_canonical", dict(b=0.0, B=2), "B >= 3"),
    ("bn.gamma_canonical", dict(B=1), "B=1"),
    ("bn.gamma_canonical", dict(B=7.5), "integer"),
    ("bn.var", dict(B=np.inf), "B=inf"),
    ("bn.pdf", dict(b=np.nan, B=8), "b=nan"),
    ("bn.tv_proxy", dict(B=2), "B=2"),
    ("bn.pdf_large_B", dict(b=0.0, B=8, estimator="torch"), "estimator"),
])
def test_bad_input(name, kw, msg):
    with pytest.raises(igbsym.InputError, match=msg.replace("+", r"\+")):
        get(name).numpy(**kw)


def test_no_nan_on_wide_grid():
    bs = np.concatenate([-np.logspace(-3, 8, 30), [0.0], np.logspace(-3, 8, 30)])
    for B in (3, 4, 5, 7, 10, 345, 10**6, 10**12):
        for name in ("bn.pdf", "bn.cdf", "bn.pdf_canonical", "bn.cdf_canonical"):
            out = get(name).numpy(b=bs, B=B)
            assert np.all(np.isfinite(out)) and np.all(out >= 0)
    Bs = np.array([7, 10, 345, 1000, 10**6, 10**12])
    for name in ("bn.gamma", "bn.gamma_canonical", "bn.relu_mean", "bn.relu_var", "bn.var", "bn.kurtosis"):
        assert np.all(np.isfinite(get(name).numpy(B=Bs)))
    assert abs(get("bn.gamma").numpy(B=10**12) - 1 / (math.pi - 1)) < 1e-11


# --- issue 17 regressions: each failing point pinned against an independent route ------------------------------
@pytest.mark.parametrize("B", [3, 4, 5, 99, 100, 1000, 10**9])
@pytest.mark.parametrize("b", [6e-8, 1e-10, -1e-12, 3e-300, 0.4, -1.9])
def test_cdf_near_the_centre(B, b):
    """1/2 + ∫_0^b f(s) ds by mpmath.quad of the two densities above (a short smooth integral). SciPy's
    betaincc(1/2, 1/2, y) lost digits for tiny y (bn.cdf at B = 3, b = 6e-8 was 1.3e-9 off). For |b| <= 0.4 the
    value is (1 ± I)/2 in [0.3, 0.7] with I computed to a few ulp, so 4 ulp bound it; b = -1.9 is a tail value
    (SciPy's incomplete beta), held to the form's stated 1e-12."""
    for name, pdf in (("bn.cdf", mp_proxy_pdf), ("bn.cdf_canonical", mp_canon_pdf)):
        if name == "bn.cdf_canonical" and b * b >= B - 1:
            continue  # outside the canonical support (test_cdfs_against_scipy_and_quadrature covers it)
        with mpmath.workdps(40):
            want = mpmath.mpf(1) / 2 + mpmath.quad(lambda s: pdf(s, B), [0, b])
        assert rel(get(name).numpy(b=b, B=B), want) <= (4 * 2.0**-52 if abs(b) <= 0.4 else 1e-12), (name, B, b)
        assert rel(get(name).mp(30, b=b, B=B), want) < 1e-28, (name, B, b)


@pytest.mark.parametrize("name,b,B", [
    ("bn.cdf", -2.5, 10**30), ("bn.cdf", -30.0, 150), ("bn.cdf", -1e5, 150), ("bn.cdf", -100.0, 2303),
    ("bn.cdf_canonical", -2.5, 10**30), ("bn.cdf_canonical", -30.0, 2303), ("bn.cdf_canonical", -40.0, 2303)])
def test_cdf_mp_route_in_every_regime(name, b, B):
    """The mp tail for B >= 100 has three regimes (central quadrature, mpmath.betainc, the log-density-drop
    quadrature beyond a drop of 1000; B = 2303, b = 0.57 took > 20 s before). Reference: the Student-t / Beta
    CDF I_x((B-2)/2, 1/2)/2 evaluated by mpmath at 120 digits."""
    canonical = name.endswith("canonical")
    with mpmath.workdps(120):
        u, m = mpmath.mpf(b) ** 2, mpmath.mpf(B - 1 if canonical else B)
        x = 1 - u / m if canonical else m / (m + u)
        want = mpmath.betainc(mpmath.mpf(B - 2) / 2, mpmath.mpf(1) / 2, 0, x, regularized=True) / 2
    assert rel(get(name).mp(50, b=b, B=B), want) < 1e-45


@pytest.mark.parametrize("name", ["bn.cdf", "bn.cdf_canonical"])
def test_cdf_extreme_b_at_huge_B(name):
    """b = -1e308 at B ~ 8e26 gave NaN (0·inf in the 1/B expansion); the true value is Φ(-1e308) = 0."""
    assert get(name).numpy(b=-1e308, B=793202300545946136885592066) == 0.0
    assert get(name).numpy(b=1e308, B=10**30) == 1.0


@pytest.mark.parametrize("est", ["proxy", "canonical"])
@pytest.mark.parametrize("b", [0.0, 3.0, 38.0, 1e20, 1e308])
def test_pdf_large_B_over_the_double_range(est, b):
    """phi(b)[1 ± P(b)/(4B)] from its definition in mpmath (npdf times the bracket): NaN at b = 1e308 before (the
    exact value 2e-2171472409516259138255644594583025411471 rounds to a signed 0)."""
    poly = {"proxy": lambda v: v**4 + 2 * v**2 - 5, "canonical": lambda v: -(v**4 - 6 * v**2 + 3)}[est]
    got = get("bn.pdf_large_B").numpy(b=b, B=8, estimator=est)
    with mpmath.workdps(40):
        v = mpmath.mpf(b)
        want = mpmath.npdf(v) * (1 + poly(v) / 32)
    assert np.isfinite(got) and rel(got, want) < 1e-13 if abs(want) > 1e-300 else abs(got) < 1e-300


def test_tv_crossing_series_coefficients():
    """The 1/B series of B log(f_c/f_p) used for B >= 1e6 is SymPy's series of the exact log-ratio."""
    import sympy as sp
    from igbsym.families.bn import _RATIO_SERIES
    u, e = sp.symbols("u epsilon", positive=True)
    Bs = 1 / e
    exact = Bs / 2 * sp.log(1 + 1 / (Bs - 1)) + Bs * (Bs - 4) / 2 * sp.log(1 - u / (Bs - 1)) \
        + Bs * (Bs - 1) / 2 * sp.log(1 + u / Bs)
    series = sp.expand(sp.series(exact, e, 0, len(_RATIO_SERIES)).removeO())
    for power, coeffs in enumerate(_RATIO_SERIES):
        want = sp.Poly(series.coeff(e, power), u).all_coeffs()[::-1]
        assert len(want) <= len(coeffs) and all(
            abs(float(w) - c) < 1e-16 for w, c in zip(list(want) + [0] * (len(coeffs) - len(want)), coeffs))


@pytest.mark.parametrize("B", [10**12, 10**15, 10**20, 10**30])
def test_tv_at_huge_B(B):
    """B·TV = c(c²+1)φ(c) + K/B with c² = 1 + √2 (the 1/B expansion of f_c - f_p integrated; K ≈ 1.21 measured
    by the independent quadrature mp_tv at B = 1e4..1e9 above): at B >= 1e12 the K/B term is < 1e-11 relative to
    0.633, so the TV is checked to 2e-12 against the leading term; brentq failed to converge at B = 1e15 before."""
    c = math.sqrt(1 + math.sqrt(2))
    const = stats.norm.pdf(c) * c * (c * c + 1)
    assert abs(get("bn.tv_proxy").numpy(B=B) * B / const - 1) < 2e-12
    with mpmath.workdps(60):
        mp_tv_value = get("bn.tv_proxy").mp(50, B=B)
    assert abs(float(mp_tv_value) * B / const - 1) < 2e-12


def _mp_student_beta_tail(b, B, canonical: bool):
    """P(V <= -|b|) = I_x((B-2)/2, 1/2)/2 from the Student-t / Beta law at 120 digits, with b the exact double."""
    with mpmath.workdps(120):
        u, m = mpmath.mpf(b) ** 2, mpmath.mpf(B - 1 if canonical else B)
        x = 1 - u / m if canonical else m / (m + u)
        return mpmath.betainc(mpmath.mpf(B - 2) / 2, mpmath.mpf(1) / 2, 0, x, regularized=True) / 2


@pytest.mark.parametrize("b,B", [(-3.5e156, 3), (-1.7976931348623157e308, 3), (-1e200, 4), (-1.7e104, 5),
                                 (-1.2e78, 6), (-2.4e62, 7), (-8.4e17, 20), (-3e7, 50), (-1e300, 99)])
def test_proxy_cdf_far_tail(b, B):
    """bn.cdf returned 0 where b² overflows (B = 3 from |b| = 1.3e154: 0 for 1.6e-157, a relative error of 1) and
    where SciPy's betainc flushes to 0 (B = 7 at b = -2.4e62: 0 for 2.5e-311); the far tail is now taken in logs.
    Values below 1e-300 are held to 1e-312 absolute (the domain test's rule), the others to 1e-12 relative."""
    want = _mp_student_beta_tail(b, B, False)
    got = get("bn.cdf").numpy(b=b, B=B)
    if want > 1e-300:
        assert rel(got, want) < 1e-12
    else:
        assert abs(mpmath.mpf(float(got)) - want) < 1e-312
    assert get("bn.cdf").numpy(b=-b, B=B) == 1.0


@pytest.mark.parametrize("B", [3, 4, 10, 50, 1000, 2**60 + 2**9])
@pytest.mark.parametrize("gap", [1e-3, 1e-8, 1e-12, 1e-15])
def test_canonical_law_at_the_edge_of_its_support(B, gap):
    """|b| = (1 - gap) sqrt(B-1): 1 - b²/(B-1) computed from the rounded b² lost ε/gap relative (bn.cdf_canonical
    at B = 3, gap = 1e-15 was 1.2 % off, bn.pdf_canonical at B = 10 4.6 %). References: the Beta law's CDF and
    density (mp_canon_pdf) at the exact double b, 120 digits."""
    b = -float(np.nextafter(math.sqrt(B - 1) * (1 - gap), 0))
    want_cdf = _mp_student_beta_tail(b, B, True)
    with mpmath.workdps(120):
        want_pdf = mp_canon_pdf(mpmath.mpf(b), mpmath.mpf(B))
    for name, want in (("bn.cdf_canonical", want_cdf), ("bn.pdf_canonical", want_pdf)):
        got = get(name).numpy(b=b, B=B)
        if abs(want) > 1e-300:
            assert rel(got, want) < 1e-13, (name, got, want)
        else:
            assert abs(mpmath.mpf(float(got)) - want) < 1e-312, (name, got, want)


def test_cdf_array_call_gives_the_scalar_value():
    """The Gauss-Laguerre tail (B >= 100, |b| >= 6) summed its rule by a matrix-vector product, whose rounding
    depends on the number of rows: B = 101, b = -27.43 differed by 1 ulp between an array and a scalar call."""
    for name in ("bn.cdf", "bn.cdf_canonical"):
        for b, B in ((-27.428774266138053, 101), (-7.5, 1000), (-9.0, 150)):
            scalar = get(name).numpy(b=b, B=B)
            array = get(name).numpy(b=np.array([b, 24.69, -6.1, -300.0]), B=B)
            assert array[0] == scalar, (name, b, B)
