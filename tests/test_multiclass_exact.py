"""The deterministic multiclass routes (issue 27) against independent references, each at its stated bound.

* var and max_fraction (D = inf): igbsym/multiclass_numerics/power.py, stated relative VAR_REL = 1e-12. References:
  the exact C = 2 values (mpmath, at Hypothesis points over gamma in [1e-3, 1e3], through the general C >= 3 route at
  k = 1) and MP_REF, the mpmath reference power.mp_moment at C = 3 (32 digits working precision; its Gauss-Legendre
  rule in the plain variables (t1, y), 12 nodes per panel of width 2, has a discretisation error <= 2e-16 absolute on
  M: measured at gamma = 1e-3 against 24 nodes per panel, whose value is used there). Self-convergence against a
  rule twice as fine for C up to 1e4.
* p_empty and entropy at C = 3: igbsym/multiclass_numerics/three.py, stated relative THREE_ERROR = 1e-10. References:
  exact identities (D = 1: 2/3; gamma -> 0: (2/3)^D), a converged 3-d Gauss-Hermite rule of the definition
  (the three means, not the differences), the mpmath 2-d quadrature of the rare event p_empty(0.1, 3, 1000)
  (mpmath.quad, Phi_2 by power.mp_phi2, 20 digits), and self-convergence.
"""
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import igbsym
from igbsym.multiclass_numerics import common, moments, power, three, vectors
from igbsym.gauss import bvn_cdf

SLOW = pytest.mark.slow      # a neighbour of the cases kept in the CI budget (run them with -m slow)

get = igbsym.get
REL = moments.VAR_REL

# mp_moment(rho, 2) at 32 digits: var: rho = gamma/(1+gamma); max: rho = sqrt(gamma/(1+gamma))
MP_REF = {
    ("var", "0.001"): "0.11123037704613707361718126209424",      # 24 nodes per panel (12 nodes: ...722958565680)
    ("max", "0.001"): "0.11490337405909857612042393443325",
    ("var", "0.1"): "0.12213138224115220739718613722607",
    ("max", "0.1"): "0.14932258423775309435171449395295",
    ("var", "1"): "0.17821260674671016092114862063386",          # 24 nodes per panel (12 nodes: ...023089878)
    ("max", "1"): "0.21468500608816539868943631441042",
    ("var", "10"): "0.2668090072292373663976987236322",
    ("max", "10"): "0.2855312029388049618575214664469",
    ("var", "1000"): "0.32623868795887498543032456457464",
    ("max", "1000"): "0.32831209813086433817824118844731",
}
MP_RULE_ERROR = 2e-16      # absolute on M (see the module docstring)


@pytest.mark.parametrize("kind,gamma", sorted(MP_REF))
def test_var_and_max_fraction_three_classes_vs_mpmath(kind, gamma):
    with mpmath.workdps(32):
        M = mpmath.mpf(MP_REF[kind, gamma])
        ref = M - mpmath.mpf(1) / 9 if kind == "var" else 3 * M
        err = MP_RULE_ERROR * (1 if kind == "var" else 3)
        form = get("multiclass.var" if kind == "var" else "multiclass.max_fraction")
        got = form.numpy(gamma=float(gamma), C=3)
        assert abs(got - ref) <= REL * abs(ref) + err, (got, ref, float(abs(got - ref) / ref))


@settings(max_examples=25)
@given(x=st.floats(-3, 3))
def test_general_route_reproduces_the_two_class_closed_forms(x):
    """k = C - 1 = 1 through moment_excess (the C >= 3 code path): Var = asin(rho)/(2 pi), E max = 1/2 + atan(s)/pi."""
    gamma = 10.0 ** x
    with mpmath.workdps(30):
        G = mpmath.mpf(gamma)
        var = mpmath.asin(G / (1 + G)) / (2 * mpmath.pi)
        mx = mpmath.mpf(1) / 2 + mpmath.atan(mpmath.sqrt(G)) / mpmath.pi
    rho, r, s, s_c = moments._correlations(gamma)
    assert abs(power.moment_excess(rho, 1, r)[1] / var - 1) <= REL
    assert abs(2 * power.moment_excess(s, 1, s_c)[0] / mx - 1) <= REL
    assert abs(get("multiclass.var").numpy(gamma=gamma, C=2) / var - 1) <= REL
    assert abs(get("multiclass.max_fraction").numpy(gamma=gamma, C=2) / mx - 1) <= REL


@settings(max_examples=12)
@given(x=st.floats(-3, 3), c=st.floats(math.log(3), math.log(1e4)))
def test_var_and_max_fraction_self_convergence_up_to_c_max(x, c):
    """Against a rule twice as fine in every variable (and 40 Drezner nodes): within REL / 10."""
    gamma, C = 10.0 ** x, int(round(math.exp(c)))
    rho, r, s, s_c = moments._correlations(gamma)
    got = power.moment_excess(rho, C - 1, r), power.moment_excess(s, C - 1, s_c)
    saved = power.T_EDGES, power.Y_EDGES, power.N_THETA
    try:
        power.T_EDGES = np.linspace(-10.0, 10.0, 161)       # panels of 1/8 (the route: 1/4 on [-9.5, 9.5])
        power.Y_EDGES, power.N_THETA = np.linspace(-10, 10, 161), 40
        ref = power.moment_excess(rho, C - 1, r), power.moment_excess(s, C - 1, s_c)
    finally:
        power.T_EDGES, power.Y_EDGES, power.N_THETA = saved
    assert abs(got[0][1] / ref[0][1] - 1) <= REL / 10      # Var
    assert abs(got[1][0] / ref[1][0] - 1) <= REL / 10      # E max / C


def test_var_at_huge_gamma_is_finite_and_tends_to_its_limit():
    """NaN at gamma >= 1e16 with C = 3 before (rho rounded to 1, r = 0): now sqrt(1 - rho^2) is in closed form."""
    for gamma in (1e16, 1e50, 1e300):
        v = float(get("multiclass.var").numpy(gamma=gamma, C=3))
        assert math.isfinite(v) and abs(v - 2 / 9) <= 1e-7 and v <= 2 / 9
    m = float(get("multiclass.max_fraction").numpy(gamma=1e16, C=3))
    assert 1 - 1e-7 < m <= 1


def test_array_call_equals_scalar_call_at_c_max():
    """The array and the scalar call gave different values at C = 1e4 before (shared vs single-point rules)."""
    for name in ("multiclass.var", "multiclass.max_fraction"):
        form = get(name)
        arr = form.numpy(gamma=np.array([1.0, 2.0, 1.0]), C=common.C_MAX)
        assert arr[0] == form.numpy(gamma=1.0, C=common.C_MAX) == arr[2]


# --- C = 3: p_empty, entropy --------------------------------------------------------------------------------------
RARE_MP = "1.1389017842157699722e-13"    # mp_p_empty_three(0.1, 1000, ...) at 20 digits (580 s)


def mp_p_empty_three(gamma, D, m0, w, dps=20):
    """E[(1 - G_1)^D] at C = 3 by mpmath.quad over (m, delta) (the ordered differences), breakpoints at the mode m0
    +- multiples of its width w, G_1 = Phi_2 by power.mp_phi2 (tanh-sinh): independent of three.py's rule, panels,
    Owen's T and double arithmetic. Minutes per point."""
    with mpmath.workdps(dps):
        gamma, m0, w = mpmath.mpf(gamma), mpmath.mpf(m0), mpmath.mpf(w)

        def f(m, dl):
            d3 = m - dl
            dens = 2 * mpmath.exp(-(m * m - m * d3 + d3 * d3) / (3 * gamma)) / (2 * mpmath.pi * mpmath.sqrt(3) * gamma)
            return dens * (1 - power.mp_phi2(-m / mpmath.sqrt(2), -d3 / mpmath.sqrt(2), mpmath.mpf(1) / 2)) ** D
        return mpmath.quad(f, [m0 + w * k for k in (-12, -6, -3, -1, 0, 1, 3, 6, 12, 24)],
                           [0, w, 3 * w, 6 * w, 12 * w, 24 * w])


@settings(max_examples=10)
@given(x=st.floats(-300, 300))
def test_p_empty_one_point_is_two_thirds_at_every_gamma(x):
    assert abs(get("multiclass.p_empty").numpy(gamma=10.0 ** x, C=3, D=1) / (2 / 3) - 1) <= three.THREE_ERROR


def test_p_empty_three_classes_limits():
    for D in (5, 1000):
        assert get("multiclass.p_empty").numpy(gamma=1e-30, C=3, D=D) == pytest.approx((2 / 3) ** D, rel=1e-10, abs=0)
    assert get("multiclass.p_empty").numpy(gamma=1e300, C=3, D=5) == pytest.approx(2 / 3, rel=1e-10, abs=0)


def gauss_hermite_three(F, gamma, n):
    """E[F(G_1)] over the three means u ~ N(0, gamma I_3) by an n^3 Gauss-Hermite rule (the definition)."""
    x, w = np.polynomial.hermite_e.hermegauss(n)
    w, s = w / w.sum(), math.sqrt(gamma)
    u1, u2, u3 = np.meshgrid(s * x, s * x, s * x, indexing="ij")
    G = bvn_cdf((u1 - u2) / math.sqrt(2), (u1 - u3) / math.sqrt(2), 0.5)
    return float(np.einsum("i,j,k,ijk->", w, w, w, F(G)))


@pytest.mark.parametrize("gamma", [0.1, 0.5])
def test_p_empty_and_entropy_three_classes_vs_gauss_hermite(gamma):
    for D in (2, 10):
        refs = [gauss_hermite_three(lambda G: (1 - G) ** D, gamma, n) for n in (60, 80)]
        assert abs(refs[0] / refs[1] - 1) < 1e-11
        got = get("multiclass.p_empty").numpy(gamma=gamma, C=3, D=D)
        assert abs(got / refs[1] - 1) <= three.THREE_ERROR, (got, refs)
    refs = [3 * gauss_hermite_three(lambda G: -G * np.log(np.maximum(G, 1e-300)), gamma, n) for n in (60, 80)]
    assert abs(refs[0] / refs[1] - 1) < 1e-11
    got = get("multiclass.entropy").numpy(gamma=gamma, C=3)
    assert abs(got / refs[1] - 1) <= three.THREE_ERROR, (got, refs)


def test_rare_event_p_empty_vs_mpmath():
    """p_empty(gamma = 0.1, C = 3, D = 1000) ~ 1.1e-13: the QMC route said 2.1e-4 (absolute bound)."""
    got = get("multiclass.p_empty").numpy(gamma=0.1, C=3, D=1000)
    assert abs(got / float(RARE_MP) - 1) <= three.THREE_ERROR, (got, RARE_MP)
    assert get("multiclass.n_empty").numpy(gamma=0.1, C=3, D=1000) == 3 * got


@pytest.mark.slow
def test_rare_event_mp_reference_recomputed():
    """The stored 20-digit reference, recomputed: the tanh-sinh quadrature reproduces it to 1.1e-15 (its own
    convergence; the stored value serves at THREE_ERROR = 1e-10)."""
    ref = mp_p_empty_three(0.1, 1000, 2.5413302023602795, 0.1596407274610167)    # the mode and its width
    assert abs(ref / mpmath.mpf(RARE_MP) - 1) < 1e-13


@pytest.mark.parametrize("gamma,D", [(0.1, 1000), (0.01, 10**4), (10.0, 10**6), (1e3, 100), (0.05, 10**9),
                                     (1e8, 10**9), (3.0, 2)])
def test_p_empty_three_classes_self_convergence(gamma, D):
    got = three.p_empty(gamma, D)
    saved = three.N_GL, three.LOG_DROP, three.PANEL_CAP
    try:
        three.N_GL, three.LOG_DROP, three.PANEL_CAP = 24, 110.0, 0.5
        ref = three.p_empty(gamma, D)
    finally:
        three.N_GL, three.LOG_DROP, three.PANEL_CAP = saved
    assert abs(got / ref - 1) <= three.THREE_ERROR / 10


def test_entropy_three_classes_limits_and_monte_carlo():
    assert get("multiclass.entropy").numpy(gamma=1e-20, C=3) == pytest.approx(math.log(3), rel=1e-10, abs=0)
    for gamma in (1.0, 1e3):
        v = vectors.vector_samples(gamma, 3)
        h = -(v * np.log(np.maximum(v, 1e-300))).sum(1)
        got = get("multiclass.entropy").numpy(gamma=gamma, C=3)
        assert abs(got - h.mean()) <= 5 * h.std(ddof=1) / math.sqrt(h.size)


@pytest.mark.parametrize("g", [1e-16, 1e-10, 1e-300])
def test_paper_approx_small_values_are_relative(g):
    """paper_approx at g = 1e-16, gamma = 0.1 said 4.3e-183 for 4.9e-149 (the rule's error is absolute)."""
    form = get("multiclass.paper_approx")
    for gamma in (0.05, 0.1, 1.0):
        ref = form.mp(30, g=g, gamma=gamma, C=3)
        got = form.numpy(g=g, gamma=gamma, C=3)
        if ref > 1e-300:
            assert abs(got / ref - 1) <= 1e-9, (g, gamma, got, ref)
    assert form.numpy(g=1 - 1e-16, gamma=1.0, C=3) <= 1.0


# --- C = 3: the law of one fraction (cdf, pdf) ----------------------------------------------------------------------
LAW_G = np.array([1e-6, 1e-3, 0.05, 0.2, 1 / 3, 0.5, 0.9, 0.999, 1 - 1e-9])


@pytest.mark.parametrize("gamma", [1e-12, 1e-3, 0.1, 1.0, 30.0, 1e3, 1e12])
def test_law_three_classes_self_convergence_and_both_sides(gamma):
    """cdf, 1 - cdf (its own log-integrand) and density against a rule with half-width panels, 24 nodes, a deeper
    cut and more root steps: within THREE_ERROR; the two sides sum to 1."""
    F, S, f = three.law(LAW_G, gamma)
    assert np.max(np.abs(F + S - 1)) <= 1e-14
    saved = three.N_GL, three.LOG_DROP, three.ROOT_STEPS, three._panels_from
    try:
        three.N_GL, three.LOG_DROP, three.ROOT_STEPS = 24, 110.0, 100
        three._panels_from = lambda x0, w, ok, far, lo=-math.inf, cap=None: saved[3](x0, w / 2, ok, far / 2, lo,
                                                                                       cap / 2 if cap else None)
        F2, S2, f2 = three.law(LAW_G, gamma)
    finally:
        three.N_GL, three.LOG_DROP, three.ROOT_STEPS, three._panels_from = saved
    for a, b in ((F, F2), (S, S2), (f, f2)):
        live = b > 1e-300
        assert np.all(np.abs(a[live] / b[live] - 1) <= three.THREE_ERROR), (gamma, a / b - 1)


@pytest.mark.parametrize("gamma", [0.3, 3.0])
def test_density_three_classes_is_the_derivative_of_the_cdf(gamma):
    """Richardson-extrapolated central differences of the cdf (an independent use of the same law)."""
    g = np.array([0.1, 0.25, 0.45, 0.7])
    F = lambda x: get("multiclass.cdf").numpy(g=x, gamma=gamma, C=3)  # noqa: E731
    h = 1e-3
    d1, d2 = (F(g + h) - F(g - h)) / (2 * h), (F(g + h / 2) - F(g - h / 2)) / h
    deriv = (4 * d2 - d1) / 3
    got = get("multiclass.pdf").numpy(g=g, gamma=gamma, C=3)
    assert np.all(np.abs(got / deriv - 1) <= 1e-6), got / deriv - 1


def mp_cdf_three(g, gamma, dps=20):
    """P(G_1 <= g) at C = 3 in mpmath: 2 int_0^inf phi(q/s_q)/s_q Phi(-p*(q)/s_p) dq (mpmath.quad), p* by
    mpmath.findroot on Phi_2 of power.mp_phi2 (Drezner by tanh-sinh): independent of three.py's panels, bisection,
    Owen's T and double arithmetic. Tens of seconds."""
    with mpmath.workdps(dps):
        g, gamma = mpmath.mpf(g), mpmath.mpf(gamma)
        sp_, sq = mpmath.sqrt(3 * gamma / 2), mpmath.sqrt(gamma / 2)

        def G(p, q):
            return power.mp_phi2(-(p + q) / mpmath.sqrt(2), -(p - q) / mpmath.sqrt(2), mpmath.mpf(1) / 2)

        def f(q):
            p = mpmath.findroot(lambda x: G(x, q) - g, float(three.root_d2(float(g), float(q)) - float(q)))
            return 2 * mpmath.npdf(q / sq) / sq * mpmath.ncdf(-p / sp_)
        return mpmath.quad(f, [0, sq, 4 * sq, 12 * sq])


@pytest.mark.slow
@pytest.mark.parametrize("g,gamma", [(0.2, 1.0), (0.05, 0.1)])
def test_cdf_three_classes_vs_mpmath(g, gamma):
    ref = mp_cdf_three(g, gamma)
    got = get("multiclass.cdf").numpy(g=g, gamma=gamma, C=3)
    assert abs(got / float(ref) - 1) <= three.THREE_ERROR, (got, ref)


# --- C = 3: the law of the dominant fraction (max_fraction_cdf, D = inf) ------------------------------------------
@pytest.mark.parametrize("gamma", [pytest.param(1e-6, marks=SLOW), 0.1, 1.0, 1e3, 1e8])
def test_max_fraction_cdf_three_classes_self_convergence(gamma):
    gs = [0.34, 0.4, 0.45, 0.4999, 0.5, 0.6, 0.95, 0.9999]
    got = [three.max_cdf(g, gamma) for g in gs]
    saved = three.N_GL, three.LOG_DROP, three.ROOT_STEPS, three._panels_from
    try:
        three.N_GL, three.LOG_DROP, three.ROOT_STEPS = 24, 110.0, 100
        three._panels_from = lambda x0, w, ok, far, lo=-math.inf, cap=None: saved[3](x0, w / 2, ok, far / 2, lo,
                                                                                       cap / 2 if cap else None)
        ref = [three.max_cdf(g, gamma) for g in gs]
    finally:
        three.N_GL, three.LOG_DROP, three.ROOT_STEPS, three._panels_from = saved
    for a, b in zip(got, ref):
        assert abs(a - b) <= three.THREE_ERROR * b, (gamma, a, b)


@pytest.mark.parametrize("gamma", [0.1, 1.0, 10.0])
def test_max_fraction_cdf_three_classes_vs_monte_carlo(gamma):
    """Against the Monte Carlo max fractions (DKW band at alpha = 1e-6)."""
    x = vectors.max_fraction_samples(gamma, 3)
    g = np.linspace(0.34, 0.99, 14)
    F = get("multiclass.max_fraction_cdf").numpy(g=g, gamma=gamma, C=3)
    band = math.sqrt(math.log(2 / 1e-6) / (2 * x.size))
    assert np.all(np.abs(F - np.searchsorted(x, g, side="right") / x.size) <= band)


@pytest.mark.slow
@pytest.mark.parametrize("gamma", [0.1, 1.0, 10.0])
def test_max_fraction_cdf_three_classes_integrates_to_the_exact_mean(gamma):
    """E max = 1/3 + int_(1/3)^1 (1 - F): the 2-d route of max_fraction against the 1-d route of its law."""
    t, w = np.polynomial.legendre.leggauss(40)
    edges = np.array([1 / 3, 0.4, 0.5, 0.6, 0.8, 0.9, 0.97, 0.99, 0.997, 0.999, 1 - 1e-4, 1 - 1e-5, 1.0])  # kink: 1/2
    mids, halves = (edges[1:] + edges[:-1]) / 2, np.diff(edges) / 2
    nodes, weights = (mids[:, None] + halves[:, None] * t).ravel(), (halves[:, None] * w).ravel()
    mean = 1 / 3 + weights @ (1 - get("multiclass.max_fraction_cdf").numpy(g=nodes, gamma=gamma, C=3))
    assert abs(mean / get("multiclass.max_fraction").numpy(gamma=gamma, C=3) - 1) < 1e-7


def _mp_log_phi2_half(a, b):
    """log Phi_2(a, b; 1/2) by mpmath (40 digits): int_-inf^min phi(x) Phi((max - x/2)/sqrt(3/4)) dx, breakpoints
    halving towards the end where the log-concave integrand peaks (independent of Drezner's form)."""
    with mpmath.workdps(40):
        lo, hi = sorted([mpmath.mpf(a), mpmath.mpf(b)])
        r = mpmath.sqrt(mpmath.mpf(3) / 4)
        pts = sorted({lo} | {lo - mpmath.mpf(2) ** j for j in range(-14, 9)})
        return float(mpmath.log(mpmath.quad(lambda x: mpmath.npdf(x) * mpmath.ncdf((hi - x / 2) / r),
                                            [-mpmath.inf] + pts)))


@pytest.mark.parametrize("a,b", [(-1, -1), (-10, -10), (-30, -25), (-37, 2), (3, -40), (-2, -50), (-60, -61),
                                 (-0.1, -30), (-12, 30), (-25, -24.9), (0.5, -0.2)])
def test_log_phi2_half_keeps_relative_precision_in_the_deep_tail(a, b):
    """Phi_2(a, b; 1/2) down to e^-2450 (Drezner's positive form in log space) within 5e-11 relative (measured
    1.7e-11: the exponent's own rounding at |a| ~ 40) of mpmath; Owen's T (bvn_cdf) is absolute: at (-10, -10) its
    relative error is ~1e-1, at (-30, -25) it returns no digit."""
    got = float(three.log_phi2_half(np.array([a]), np.array([b]))[0])
    assert abs(got - _mp_log_phi2_half(a, b)) <= 5e-11, (got, _mp_log_phi2_half(a, b))


@pytest.mark.parametrize("gamma", [pytest.param(0.1, marks=SLOW), 1.0, pytest.param(10.0, marks=SLOW), 1e3])
def test_law_three_classes_in_the_deep_lower_tail_is_bracketed(gamma):
    """P(G_1 <= g) for g from 1e-300 to 1e-3 against analytic brackets (independent of the route): G_1 <=
    Phi(-max(d_2, d_3)/sqrt 2) gives P >= P(d_2 >= M) = Phi(-M/sqrt(2 gamma)), M = -sqrt 2 Phi^-1(g); Slepian,
    G_1 >= Phi(-d_2/sqrt 2) Phi(-d_3/sqrt 2) >= Phi(-m/sqrt 2)^2 (m = max d), gives P <= 2 Phi(-m_g/sqrt(2 gamma)),
    m_g = -sqrt 2 Phi^-1(sqrt g); and monotone. The route said 3.5e-3 at gamma = 10, g = 1e-300 (truth ~1e-31),
    where Owen's T had lost every digit of G."""
    from scipy import special
    g = np.geomspace(1e-300, 1e-3, 9)
    F = three.law(g, gamma)[0]
    lo = special.ndtr(math.sqrt(2) * special.ndtri(g) / math.sqrt(2 * gamma))
    hi = 2 * special.ndtr(math.sqrt(2) * special.ndtri(np.sqrt(g)) / math.sqrt(2 * gamma))
    assert np.all(np.diff(F) >= 0)
    assert np.all((F >= lo * (1 - 1e-10)) & (F <= hi * (1 + 1e-10))), np.c_[lo, F, hi]
