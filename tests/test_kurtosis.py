"""Tests of the kurtosis family: kernels vs mpmath / independent routes, Lemma 4.4-4.5 properties, bad input."""
import itertools
import math
import subprocess
import sys

import mpmath
import numpy as np
import pytest
from hypothesis import example, given, strategies as st
from scipy import stats

import igbsym
from igbsym import InputError, kurtosis_api as api

MATRIX, AFTER, C_AFTER, LAM = (igbsym.get(f"kurtosis.{n}") for n in ("matrix", "after", "c_after", "lambda_max"))
VAR, DF, PSMALL, PNZ = (igbsym.get(f"kurtosis.{n}") for n in ("var_s2", "df", "p_small_var", "p_nonzero"))

widths = st.integers(2, 64)
slopes = st.floats(-2, 2, allow_nan=False)
kappas = st.floats(1, 20, allow_nan=False)


def mp_power(L, w, a, kappa_w, kappa0, c0, sigma2, dps=50):
    """[A^L k0] by repeated mpmath matrix products (independent of the eigen closed form)."""
    with mpmath.workdps(dps):
        A = MATRIX.mp(dps, w=w, a=a, kappa_w=kappa_w, sigma2=sigma2)
        k = mpmath.matrix([mpmath.mpf(kappa0), mpmath.mpf(c0), 1])
        for _ in range(L):
            k = A * k
        return k[0], k[1]


@given(st.integers(0, 40), st.integers(1, 40), slopes, kappas, st.floats(1, 10), st.floats(0, 1), st.floats(0.1, 5))
@example(0, 3, 0.0, 3.0, 3.0, 0.0, 1.0)
@example(30, 2, 1.0, 1.0, 1.0, 0.0, 1.0)
def test_after_equals_matrix_power(L, w, a, kappa_w, kappa0, c_frac, sigma2):
    # inside [-sigma^4, (kappa0 - 1) sigma^4] exactly: the float product can round 1 ulp past an end (c_frac = 0,
    # sigma2 = 0.1: -0.1**2 < -sigma2^2 exactly), and the conditions are decided exactly; shrink by 1e-15 inwards
    c0 = (-1 + c_frac * kappa0) * sigma2**2 * (1 - 1e-15)
    kap, c = mp_power(L, w, a, kappa_w, kappa0, c0, sigma2)
    got = AFTER.numpy(L=L, w=w, a=a, kappa_w=kappa_w, kappa0=kappa0, c0=c0, sigma2=sigma2)
    assert abs(got - float(kap)) <= 1e-12 * abs(float(kap)) * max(1, L)
    assert abs(AFTER.mp(40, L=L, w=w, a=a, kappa_w=kappa_w, kappa0=kappa0, c0=c0, sigma2=sigma2) - kap) <= 1e-30 * kap
    if w >= 2:
        gc = C_AFTER.numpy(L=L, w=w, a=a, kappa_w=kappa_w, kappa0=kappa0, c0=c0, sigma2=sigma2)
        assert abs(gc - float(c)) <= 1e-11 * (abs(float(c)) + sigma2**2 * float(kap)) * max(1, L)


def test_kernel_equals_lambdified():
    grid = dict(L=np.arange(0, 30)[:, None], w=np.array([1, 2, 3, 10, 32]), a=0.3, kappa_w=1.8, kappa0=3.0, c0=0.2,
                sigma2=1.5)
    assert np.allclose(AFTER.numpy(**grid), AFTER.lambdified()(**grid), rtol=1e-11, atol=0)
    g2 = dict(grid, w=np.array([2, 3, 10, 32]))
    assert np.allclose(C_AFTER.numpy(**g2), C_AFTER.lambdified()(**g2), rtol=1e-10, atol=1e-12)
    eps, n, k = np.array([0.01, 0.5, 1.0, 2.0])[:, None], np.array([2, 10, 100]), 5.0
    assert np.allclose(PSMALL.numpy(eps=eps, n=n, kappa=k), PSMALL.lambdified()(eps=eps, n=n, kappa=k), rtol=1e-12)
    assert np.allclose(PNZ.numpy(L=np.arange(50), w=3), PNZ.lambdified()(L=np.arange(50), w=3), rtol=1e-13)


def test_matrix_vectorised_and_mp():
    w = np.array([2, 3, 5])
    out = MATRIX.numpy(w=w, a=0.1, kappa_w=3.0, sigma2=2.0)
    assert out.shape == (3, 3, 3)
    for i, v in enumerate(w):
        ref = MATRIX.mp(30, w=int(v), a=0.1, kappa_w=3.0, sigma2=2.0)
        assert np.allclose(out[i], np.array(ref.tolist(), dtype=float), rtol=1e-14, atol=0)
    one = MATRIX.numpy(w=2, a=0.0, kappa_w=3.0, sigma2=1.0)  # the paper's entries at w=2, a=0, Gaussian
    assert np.allclose(one, [[3.0, 1.5, 1.5], [1.0, 0.5, -0.5], [0, 0, 1]], rtol=1e-15)


@given(widths, slopes, kappas, st.floats(0.1, 10))
@example(2, 1.0, 1.0, 1.0)
@example(64, 1.0, 1.0, 1.0)
def test_lemma_4_4_and_4_5(w, a, kappa_w, sigma2):
    A = MATRIX.numpy(w=w, a=a, kappa_w=kappa_w, sigma2=sigma2)
    al, be, ga, de = api.lemma44(A, sigma2)
    assert ga > 0 and de > 0 and al >= ga * (1 - 1e-14) and be >= de
    lam = float(LAM.numpy(w=w, a=a, kappa_w=kappa_w, sigma2=sigma2))
    assert lam > 1
    assert abs(lam - max(np.linalg.eigvals(A).real)) <= 1e-9 * lam
    with mpmath.workdps(40):  # lambda_max in mpmath is a root of the 2x2 characteristic polynomial
        lm = LAM.mp(40, w=w, a=a, kappa_w=kappa_w, sigma2=sigma2)
        Am = MATRIX.mp(40, w=w, a=a, kappa_w=kappa_w, sigma2=sigma2)
        assert abs(lm**2 - (Am[0, 0] + Am[1, 1]) * lm + Am[0, 0] * Am[1, 1] - Am[0, 1] * Am[1, 0]) < 1e-30 * lm**2


@given(st.lists(widths, min_size=1, max_size=12), slopes, kappas, st.floats(0.1, 10))
def test_products_keep_lemma_4_4_form(ws, a, kappa_w, sigma2):
    B = api.product(ws, a, kappa_w, sigma2)
    al, be, ga, de = api.lemma44(B, sigma2, rtol=1e-10)
    assert ga > 0 and de > 0 and al >= ga * (1 - 1e-12) and be >= de * (1 - 1e-12)


def test_lambda_max_failure_region():
    assert LAM.mp(30, w=1, a=1, kappa_w=1, sigma2=1) == 1
    assert LAM.mp(30, w=1, a=-1, kappa_w=1, sigma2=3) == 1
    assert LAM.numpy(w=1, a=0.99, kappa_w=1, sigma2=1) > 1 and LAM.numpy(w=1, a=1, kappa_w=1.01, sigma2=1) > 1


def test_trajectory_matches_constant_width():
    kap, c = api.trajectory([4] * 10, a=0.2, kappa_w=1.8, kappa0=3.0, c0=0.0, sigma2=1.0)
    L = np.arange(11)
    assert np.allclose(kap, AFTER.numpy(L=L, w=4, a=0.2, kappa_w=1.8, kappa0=3.0, c0=0.0, sigma2=1.0), rtol=1e-12)
    assert np.allclose(c, C_AFTER.numpy(L=L, w=4, a=0.2, kappa_w=1.8, kappa0=3.0, c0=0.0, sigma2=1.0), rtol=1e-11)
    assert api.trajectory([], 0, 3, 3, 0, 1)[0].tolist() == [3.0]
    assert abs(api.p_nonzero([1, 2, 3]) - 0.5 * 0.75 * 0.875) < 1e-15


def exact_var_s2(values, probs, n):
    """Var[S_n^2] by enumerating all n-tuples of a discrete law (independent route)."""
    values, probs = np.asarray(values, float), np.asarray(probs, float)
    m1, m2 = 0.0, 0.0
    for idx in itertools.product(range(len(values)), repeat=n):
        p = np.prod(probs[list(idx)])
        s2 = np.var(values[list(idx)], ddof=1)
        m1, m2 = m1 + p * s2, m2 + p * s2**2
    return m2 - m1**2


@pytest.mark.parametrize("values,probs", [([-1, 1], [0.5, 0.5]), ([-2, 0, 2], [0.1, 0.8, 0.1]),
                                          ([0, 1, 5], [0.5, 0.3, 0.2])])
@pytest.mark.parametrize("n", [2, 3, 5])
def test_var_s2_exact_enumeration(values, probs, n):
    v, p = np.asarray(values, float), np.asarray(probs, float)
    mean = v @ p
    sigma2 = ((v - mean) ** 2) @ p
    kappa = ((v - mean) ** 4) @ p / sigma2**2
    assert abs(VAR.numpy(n=n, kappa=kappa, sigma2=sigma2) - exact_var_s2(v, p, n)) < 1e-12
    assert abs(DF.numpy(n=n, kappa=kappa) - 2 * sigma2**2 / exact_var_s2(v, p, n)) < 1e-9 * DF.numpy(n=n, kappa=kappa)


@pytest.mark.parametrize("n", [2, 5, 50, 1000])
def test_gamma_exact_for_gaussian(n):
    assert abs(DF.mp(30, n=n, kappa=3) - (n - 1)) < 1e-25 * n
    eps = np.array([0.01, 0.3, 1.0, 1.7])
    ref = stats.chi2.cdf((n - 1) * eps, n - 1)
    assert np.allclose(PSMALL.numpy(eps=eps, n=n, kappa=3.0), ref, rtol=1e-10, atol=1e-300)
    for e in eps:  # the chi²_{n-1} law in mpmath (the defining law for Gaussian draws, not the form's mp route)
        with mpmath.workdps(40):
            ref = mpmath.gammainc(mpmath.mpf(n - 1) / 2, 0, (n - 1) * mpmath.mpf(float(e)) / 2, regularized=True)
        got = PSMALL.numpy(eps=float(e), n=n, kappa=3.0)
        assert abs(ref - got) <= 1e-12 * ref if ref > 1e-300 else got < 1e-300  # float64 underflow below


def test_p_nonzero():
    L = np.arange(0, 60)
    assert np.allclose(PNZ.numpy(L=L, w=1), 0.5**L, rtol=1e-15)
    with mpmath.workdps(40):  # (1 - 2^-w)^L directly in mpmath, not the form's mp route
        want = (1 - mpmath.mpf(2) ** -40) ** 1000
    assert abs(PNZ.numpy(L=1000, w=40) - float(want)) < 1e-15
    assert PNZ.numpy(L=3, w=2) == pytest.approx(0.75**3, rel=1e-15)


@pytest.mark.parametrize("form,kw,msg", [
    (MATRIX, dict(w=3, a=0, kappa_w=0.5, sigma2=1), "kappa_w >= 1"),
    (MATRIX, dict(w=0, a=0, kappa_w=3, sigma2=1), "w=0"),
    (AFTER, dict(L=-1, w=3, a=0, kappa_w=3, kappa0=3, c0=0, sigma2=1), "L=-1"),
    (AFTER, dict(L=2, w=3, a=0, kappa_w=3, kappa0=3, c0=-2, sigma2=1), "c0 >= -sigma2^2"),
    (AFTER, dict(L=2, w=3, a=0, kappa_w=3, kappa0=3, c0=5, sigma2=1), "Cauchy-Schwarz"),
    (C_AFTER, dict(L=2, w=1, a=0, kappa_w=3, kappa0=3, c0=0, sigma2=1), "w >= 2"),
    (VAR, dict(n=1, kappa=3, sigma2=1), "n=1"),
    (PSMALL, dict(eps=0, n=3, kappa=3), "eps=0"),
    (PNZ, dict(L=2, w=1.5), "w=1.5"),
])
def test_bad_input(form, kw, msg):
    with pytest.raises(InputError, match=msg.replace("^", r"\^")):
        form.numpy(**kw)


def test_no_nan_at_extremes():
    big = AFTER.numpy(L=np.array([0, 10**4, 10**6]), w=2, a=0.0, kappa_w=3.0, kappa0=3.0, c0=0.0, sigma2=1.0)
    assert big[0] == pytest.approx(3.0) and np.isinf(big[1:]).all()
    assert np.isfinite(PSMALL.numpy(eps=np.array([1e-300, 1.0, 1e300]), n=10**6, kappa=np.array([[1.0], [1e12]]))).all()
    assert PNZ.numpy(L=10**9, w=1) == 0.0


def test_cli_matrix():
    run = subprocess.run([sys.executable, "-m", "igbsym", "eval", "kurtosis.matrix", "w=3", "a=0", "kappa_w=3",
                          "sigma2=2"], capture_output=True, text=True, check=True)
    rows = [r.strip("[] ").split() for r in run.stdout.strip().splitlines()]
    assert np.allclose(np.array(rows, float), MATRIX.numpy(w=3, a=0, kappa_w=3, sigma2=2), rtol=1e-15)


# --- issue 17 regressions ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [2 * 10**5 + 1, 2 * 10**6 + 1])
@pytest.mark.parametrize("z", [-10.0, -1.0, 0.0, 1.0])
def test_p_small_var_at_large_shape(n, z):
    """Gaussian draws (kappa = 3): P(chi²_{n-1} < (n-1) eps) by mpmath.gammainc((n-1)/2, ...) at 60 digits, the
    defining law (SciPy's gammainc was 2e-10 off at n = 2e6 and had no digit right at n = 2e12). The kernel's stated
    bound is 1e-12; the input eps = 1 + z/sqrt(s) is exact as a double for both sides. (mpmath.gammainc, the
    reference, itself stops converging from s ~ 1e8, which is why the library's mp route integrates instead.)"""
    s = (n - 1) / 2
    eps = 1 + z / math.sqrt(s)
    with mpmath.workdps(60):
        want = mpmath.gammainc(mpmath.mpf(s), 0, mpmath.mpf(s) * mpmath.mpf(eps), regularized=True)
    assert abs(PSMALL.numpy(eps=eps, n=n, kappa=3.0) - want) <= 1e-12 * want
    assert abs(PSMALL.mp(40, eps=eps, n=n, kappa=3) - want) <= mpmath.mpf(10) ** -38 * want


def test_p_small_var_mp_at_huge_n():
    """The issue's point (n = 1e30, kappa ~ 1, eps = 1 + 7.2e-6) raised NoConvergence. Shape s ~ 3e44, so by the
    Chernoff bound 1 - P <= exp(-s (r - 1 - log r)) = exp(-7.8e33) with r = eps: P = 1 to every digit."""
    got = PSMALL.mp(50, eps=1.0000072286845403, n=10**30, kappa=1.0000000000000033)
    assert abs(got - 1) < mpmath.mpf(10) ** -50
    assert PSMALL.numpy(eps=1.0000072286845403, n=10**30, kappa=1.0000000000000033) == 1.0


LEAKY_POINTS = [(-1e308, 1e-320), (1.79e308, 1.0), (-1.0, 1.45e308), (0.5, 0.3), (1e-300, 1e154)]


@pytest.mark.parametrize("a,sigma", LEAKY_POINTS)
def test_leaky_moments_over_the_double_range(a, sigma):
    """leaky.mean was inf at sigma = 1.45e308 (value 1.16e308) and leaky.m2 NaN at a = -1e308, sigma = 1e-320
    (value 5e-25). Reference: the defining integrals of the unit law in mpmath (E[phi_a(sigma Z)^k] =
    sigma^k E[phi_a(Z)^k]), E Z⁺ = 1/sqrt(2 pi), E(Z⁺)^k over the half line, multiplied out in mpmath."""
    with mpmath.workdps(40):
        A, S = mpmath.mpf(a), mpmath.mpf(sigma)
        half = lambda k: mpmath.quad(lambda z: z**k * mpmath.npdf(z), [0, mpmath.inf])  # noqa: E731
        mean = S * (half(1) - A * half(1))
        m2 = S**2 * (1 + A**2) * half(2)
        m4 = S**4 * (1 + A**4) * half(4) / 3 * 3  # kappa = 3 for the Gaussian: E x^4 = 3 sigma^4
        var = m2 - mean**2
    cases = [("leaky.mean", {}, mean), ("leaky.m2", {}, m2), ("leaky.m4", {"kappa": 3.0}, m4),
             ("leaky.var", {}, var)]
    for name, extra, want in cases:
        got = igbsym.get(name).numpy(a=a, sigma=sigma, **extra)
        if abs(want) > 1.7976931348623157e308:
            assert np.isinf(got) and (got > 0) == (want > 0), name
        elif abs(want) < 1e-300:
            assert abs(got) < 1e-300, name
        else:
            assert abs(got - want) <= 1e-14 * abs(want), (name, got, want)


# --- issue 17: the input conditions are decided exactly at every double (no overflow of sigma2^2) --------------
def _exact_inputs_ok(kappa0, c0, sigma2) -> bool:
    """The declared conditions decided by SymPy on the exact rational values of the doubles (the domain's
    definition)."""
    import sympy as sp
    from fractions import Fraction
    k, c, s = (sp.Rational(Fraction(v)) for v in (kappa0, c0, sigma2))
    return bool(k >= 1 and c + s**2 >= 0 and c <= (k - 1) * s**2)


@given(kappa0=st.one_of(st.just(1.0), st.floats(1, 1e300), st.floats(1, 1 + 1e-12)),
       c0=st.floats(-1.7e308, 1.7e308, allow_nan=False, allow_infinity=False),
       sigma2=st.floats(5e-324, 1.7e308, allow_nan=False, allow_infinity=False), boundary=st.sampled_from([0, 1, 2]))
@example(kappa0=1.0, c0=0.0, sigma2=1e200, boundary=0)     # sigma2^2 = inf, (kappa0 - 1) inf = NaN: rejected before
@example(kappa0=1.0, c0=5e-324, sigma2=1e200, boundary=0)  # c0 > 0 = (kappa0 - 1) sigma2^2: outside
@example(kappa0=3.0, c0=-1e300, sigma2=1e150, boundary=0)  # c0 = -sigma2^2 to rounding: decided exactly
@example(kappa0=2.0, c0=1e-300, sigma2=1e-150, boundary=0)  # sigma2^2 underflows in float64
def test_input_conditions_are_decided_exactly(kappa0, c0, sigma2, boundary):
    if boundary:   # a point on a boundary to rounding: c0 = (kappa0 - 1) sigma2^2 or -sigma2^2 in float
        with np.errstate(all="ignore"):
            c0 = float((kappa0 - 1) * sigma2 * sigma2) if boundary == 1 else float(-sigma2 * sigma2)
        if not math.isfinite(c0):
            c0 = 0.0
    expected = _exact_inputs_ok(kappa0, c0, sigma2)
    args = dict(L=2, w=2, a=0.0, kappa_w=3.0, kappa0=kappa0, c0=c0, sigma2=sigma2)
    try:
        AFTER.numpy(**args)
        accepted = True
    except InputError as e:
        assert str(e).startswith("kurtosis.after: "), e
        accepted = False
    assert accepted == expected, (args, expected)


def test_value_at_overflowing_sigma2_matches_mpmath():
    """The point the overflowing condition rejected (sigma2 = 1e200, kappa0 = 1, c0 = 0) evaluates to the exact value:
    kappa_L and c_L = sigma2^2 (e_L - 1) against repeated mpmath matrix products."""
    args = dict(L=3, w=2, a=0.0, kappa_w=3.0, kappa0=1.0, c0=0.0, sigma2=1e200)
    kap, _ = mp_power(**args)
    assert abs(AFTER.numpy(**args) - float(kap)) <= 1e-13 * float(kap)
    assert float(C_AFTER.numpy(**args)) == float(C_AFTER.mp(50, **args)) or \
        abs(float(C_AFTER.numpy(**args)) / float(C_AFTER.mp(50, **args)) - 1) <= 1e-13


def test_huge_weight_kurtosis_does_not_overflow_the_eigenvalue_gap():
    """Issue 17 (domain seed 7095): at kappa_w = 1e308, w = 1e30 the discriminant's t² overflowed, so δ = lam_+ − 1
    was inf and kappa_1 = inf where it is 1.8e278 (c_1 = inf for 2.0). Reference: the mp route, M^L m0 by repeated
    squaring of the raw-moment map (no spectral form)."""
    point = {"L": 1, "w": 10**30, "a": 0.9999999999995949, "kappa_w": 1e308, "kappa0": 1.7655163541373948,
             "c0": 2.0, "sigma2": 4.021694041467336}
    for name in ("kurtosis.after", "kurtosis.c_after"):
        form = igbsym.get(name)
        assert float(form.numpy(**point)) == pytest.approx(float(form.mp(30, **point)), rel=1e-12, abs=0)
