"""Mean-field forms (igbsym/families/meanfield.py) against independent references: mpmath quadrature of the length
map at 30 digits, a 2-D trapezoid rule for the correlation map (written here, exponentially accurate for these
analytic Gaussian-weighted integrands), SymPy identities for relu/erf, the published edge of chaos, and the CLI."""
import json
import math
import subprocess
import sys

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize

import igbsym
from igbsym.engine import meanfield as MF
from igbsym.gauss import derivative_moment_np, moments_np
from igbsym.gauss.hermite import series

FORMS = ("q_star", "c_star", "chi_1", "chi_c", "xi_q", "xi_c", "phase")


def get(name):
    return igbsym.get(f"meanfield.{name}")


def val(name, **kw):
    return float(get(name).numpy(**kw))


# ------------------------------------------------------------------------------------------ independent references
def _mp_gauss(f, q):
    """E f(√q Z) by mpmath.quad at the working precision."""
    sd = mpmath.sqrt(q)
    return mpmath.quad(lambda z: f(sd * z) * mpmath.npdf(z), [-mpmath.inf, -4, -1, 0, 1, 4, mpmath.inf])


def _reference_1d(sw, sb, dps=30):
    """(q*, χ_1, χ_q) of tanh: mpmath roots of the length map with mpmath.quad moments."""
    with mpmath.workdps(dps):
        sw2, sb2 = mpmath.mpf(sw) ** 2, mpmath.mpf(sb) ** 2
        q = mpmath.findroot(lambda q: q - sw2 * _mp_gauss(lambda x: mpmath.tanh(x) ** 2, q) - sb2,
                            (sb2, sw2 + sb2), solver="anderson")
        d1 = lambda x: mpmath.sech(x) ** 2  # noqa: E731
        chi1 = sw2 * _mp_gauss(lambda x: d1(x) ** 2, q)
        chiq = chi1 + sw2 * _mp_gauss(lambda x: -2 * mpmath.tanh(x) ** 2 * d1(x), q)
        return float(q), float(chi1), float(chiq)


Z = np.linspace(-12, 12, 961)            # trapezoid step 0.025 (tanh's poles at distance π/(2√q) >= 0.5 for q <= 10)
WZ = np.exp(-Z**2 / 2) / math.sqrt(2 * math.pi) * (Z[1] - Z[0])


def _pair(f, q, c):
    """E f(u_a) f(u_b), (u_a, u_b) ~ N(0, q[[1, c], [c, 1]]), by the 2-D trapezoid rule."""
    s = math.sqrt(q)
    ua = f(s * Z)[:, None]
    ub = f(s * (c * Z[:, None] + math.sqrt(1 - c * c) * Z[None, :]))
    return float(WZ @ (ua * ub) @ WZ)


def _reference_2d(sw, sb, q):
    """(c*, χ_c) of tanh at q*: the root in (0, 1) of c' − c by brentq on the trapezoid pair moment."""
    F = lambda c: (sw**2 * _pair(np.tanh, q, c) + sb**2) / q - c  # noqa: E731
    c = optimize.brentq(F, 0.0, 0.999, xtol=1e-15, rtol=1e-15)
    return c, sw**2 * _pair(lambda x: 1 / np.cosh(x) ** 2, q, c)


@pytest.mark.parametrize("sw, sb", [(2.0, 0.3), (1.6, 0.1), (3.0, 0.6)])
def test_tanh_chaotic_fixed_points_against_independent_quadrature(sw, sb):
    kw = dict(activation="tanh", sigma_w=sw, sigma_b=sb)
    q, chi1, chiq = _reference_1d(sw, sb)
    assert val("q_star", **kw) == pytest.approx(q, rel=1e-12)
    assert val("chi_1", **kw) == pytest.approx(chi1, rel=1e-12)
    assert val("xi_q", **kw) == pytest.approx(-1 / math.log(chiq), rel=1e-11)
    c, chic = _reference_2d(sw, sb, q)
    assert val("c_star", **kw) == pytest.approx(c, rel=1e-11)
    assert val("chi_c", **kw) == pytest.approx(chic, rel=1e-11)
    assert val("xi_c", **kw) == pytest.approx(-1 / math.log(chic), rel=1e-10)
    assert float(get("gamma_inf").numpy(**kw)) == pytest.approx(c / (1 - c), rel=1e-10)
    assert val("phase", **kw) == 1.0


def test_tanh_ordered_point_against_independent_quadrature():
    kw = dict(activation="tanh", sigma_w=1.0, sigma_b=0.3)
    q, chi1, chiq = _reference_1d(1.0, 0.3)
    assert chi1 < 1
    assert val("q_star", **kw) == pytest.approx(q, rel=1e-12)
    assert val("c_star", **kw) == 1.0 and val("chi_c", **kw) == pytest.approx(chi1, rel=1e-12)
    assert val("phase", **kw) == -1.0 and float(get("gamma_inf").numpy(**kw)) == math.inf


# ------------------------------------------------------------------------------------------ reference points
def test_edge_of_chaos_reference_points():
    """tanh at σ_b² = 0.05: σ_w² ≈ 1.76 (Schoenholz et al. 2017, Fig. 1); ReLU σ_w² = 2 and leaky 2/(1 + a²) for
    every σ_b (SymPy: the registered cases are exactly those)."""
    eoc = get("eoc_sigma_w")
    tanh = float(eoc.numpy(activation="tanh", sigma_b=math.sqrt(0.05))) ** 2
    assert tanh == pytest.approx(1.76, abs=0.005)
    assert float(eoc.mp(30, activation="tanh", sigma_b=math.sqrt(0.05))) ** 2 == pytest.approx(tanh, rel=1e-12)
    a = sp.Symbol("a", real=True)
    assert sp.simplify(eoc.case(activation="relu") ** 2 - 2) == 0
    assert sp.simplify(eoc.case(activation="leaky_relu") ** 2 - 2 / (1 + a**2)) == 0
    sb = np.array([0.01, 0.3, 5.0])
    assert eoc.numpy(activation="relu", sigma_b=sb) == pytest.approx(np.sqrt(2), rel=1e-15)
    # on the curve chi_1 = 1 (phase 0); just off it, -1 / +1
    sw = float(eoc.numpy(activation="tanh", sigma_b=0.3))
    assert val("chi_1", activation="tanh", sigma_w=sw, sigma_b=0.3) == pytest.approx(1, abs=1e-13)
    assert val("phase", activation="tanh", sigma_w=sw, sigma_b=0.3) == 0.0
    assert [val("phase", activation="tanh", sigma_w=sw * f, sigma_b=0.3) for f in (0.999, 1.001)] == [-1.0, 1.0]


def test_relu_forms_are_the_closed_forms():
    sw, sb, a = (sp.Symbol(n, **kw) for n, kw in (("sigma_w", dict(positive=True)), ("sigma_b", dict(positive=True)),
                                                  ("a", dict(real=True))))
    assert sp.simplify(get("q_star").case(activation="relu") - sb**2 / (1 - sw**2 / 2)) == 0
    assert sp.simplify(get("q_star").case(activation="leaky_relu") - 2 * sb**2 / (2 - sw**2 * (1 + a**2))) == 0
    assert get("c_star").case(activation="relu") == 1
    for name in ("chi_1", "chi_c"):
        assert sp.simplify(get(name).case(activation="relu") - sw**2 / 2) == 0
    # the NumPy route equals the iterated maps (q and c from layer 1 of two independent inputs)
    q, e = MF.trajectory("relu", 0.0, 1.2, 0.5, 400)[-1]
    assert float(q) == pytest.approx(val("q_star", activation="relu", sigma_w=1.2, sigma_b=0.5), rel=1e-12)
    assert float(e) < 1e-6


@pytest.mark.parametrize("form, kw", [("q_star", dict(activation="relu", sigma_w=1.5, sigma_b=0.1)),
                                      ("chi_c", dict(activation="leaky_relu", sigma_w=1.4, sigma_b=0.1, a=0.2)),
                                      ("q_star", dict(activation="tanh", sigma_w=3.0, sigma_b=1.2)),
                                      ("q_star", dict(activation="tanh", sigma_w=1.0, sigma_b=0.0)),
                                      ("gamma_inf", dict(activation="relu", sigma_w=1.0, sigma_b=0.1)),
                                      ("eoc_sigma_w", dict(activation="tanh", sigma_b=2.0))])
def test_outside_the_domain_is_one_line(form, kw):
    with pytest.raises(igbsym.InputError) as info:
        get(form).numpy(**kw)
    assert "\n" not in str(info.value) and "meanfield" in str(info.value)


# ------------------------------------------------------------------------------------------ erf: the arcsine kernel
def test_erf_arcsine_kernel_is_the_pair_moment():
    """CAS: d/dc (2/π) arcsin(2qc/(1 + 2q)) = q E[erf'(u_a) erf'(u_b)] = (4q/π)/√((1 + 2q)² − 4q²c²) (Price); the
    kernel against the 2-D trapezoid rule; the closed-kernel route against Mehler's series route."""
    q, c = sp.Symbol("q", positive=True), sp.Symbol("c", real=True)
    K = 2 / sp.pi * sp.asin(2 * q * c / (1 + 2 * q))
    assert sp.simplify(sp.diff(K, c) ** 2 - (4 * q / sp.pi) ** 2 / ((1 + 2 * q) ** 2 - 4 * q**2 * c**2)) == 0
    from scipy.special import erf
    for qq, cc in ((0.3, 0.2), (2.6, 0.8)):
        assert _pair(erf, qq, cc) == pytest.approx(float(K.subs({q: qq, c: cc})), rel=1e-12)
    st = MF.state_np("erf", 0.0, np.array([1.5, 2.5]), np.array([0.3, 0.2]))
    groups = series("erf", 0.0, st["q"])
    assert sorted(j for idx, _ in groups for j in idx) == [0, 1]
    for idx, beta in groups:
        for i, j in enumerate(idx):
            sw2, sb2 = [1.5, 2.5][j] ** 2, [0.3, 0.2][j] ** 2
            F = np.polynomial.polynomial.Polynomial(beta[i])
            cs = 1 - st["e"][j]
            assert (sw2 * F(cs) + sb2) / (sw2 * F(1) + sb2) == pytest.approx(cs, rel=1e-12)


# ------------------------------------------------------------------------------------------ series and routes
@pytest.mark.parametrize("name", ["tanh", "erf"])
def test_mehler_series_parseval_and_nonnegative(name):
    q = np.array([0.01, 0.7, 4.0, 9.5])
    for idx, beta in series(name, 0.0, q):
        assert (beta >= 0).all()
        for i, j in enumerate(idx):
            S = moments_np(name, 0.0, q[j])[1]
            A = derivative_moment_np(name, float(q[j]))
            assert beta[i].sum() == pytest.approx(float(S), rel=1e-12)
            assert beta[i] @ np.arange(beta.shape[1]) == pytest.approx(q[j] * float(A), rel=1e-11)


@pytest.mark.parametrize("act", ["tanh", "erf"])
def test_numpy_and_mpmath_routes_agree(act):
    """At random points of both phases, every form's NumPy value against its mpmath route (quadrature, not the
    closed kernel or the series) at 20 digits: the stated 1e-9 (measured ~1e-14)."""
    rng = np.random.default_rng(48)
    worst = 0.0
    for sw, sb in zip(rng.uniform(0.6, 2.8, 3), rng.uniform(0.05, 0.8, 3)):
        kw = dict(activation=act, sigma_w=float(sw), sigma_b=float(sb))
        for name in FORMS + (("gamma_inf",) if val("phase", **kw) > 0 else ()):
            got, ref = val(name, **kw), float(get(name).mp(20, **kw))
            worst = max(worst, abs(got - ref) / abs(ref))
    assert worst <= 1e-9


def test_xi_c_is_the_decay_rate_of_the_correlation():
    """Iterating the correlation map at q* from c* + δ: (c_{l+1} − c*)/(c_l − c*) → χ_c, so c_l − c* ~ e^{−l/ξ_c}."""
    sw, sb = 2.0, 0.3
    q, cs = val("q_star", activation="tanh", sigma_w=sw, sigma_b=sb), val("c_star", activation="tanh", sigma_w=sw,
                                                                           sigma_b=sb)
    tr = MF.trajectory("tanh", 0.0, sw, sb, 12, q, cs + 1e-4)
    dev = [(1 - float(e)) - cs for _, e in tr]
    assert dev[-1] / dev[-2] == pytest.approx(val("chi_c", activation="tanh", sigma_w=sw, sigma_b=sb), rel=1e-3)


def test_trajectory_is_depth_gamma_without_biases():
    """σ_b → 0, independent inputs: the readout's γ_L is depth.gamma (ReLU, L = 1..3)."""
    tr = MF.trajectory("relu", 0.0, math.sqrt(2), 1e-300, 4)
    for L in (1, 2, 3):
        e = float(tr[L][1])
        assert (1 - e) / e == pytest.approx(float(igbsym.get("depth.gamma").numpy(L=L, activation="relu")), rel=1e-12)


def test_the_convexity_argument_unique_chaotic_root():
    """In the chaotic phase e − G(e) changes sign once on (0, 1] (checked on a grid), at the route's e*."""
    st = MF.state_np("tanh", 0.0, 2.0, 0.3)
    (_, beta), = series("tanh", 0.0, np.array([float(st["q"])]))
    k = np.arange(beta.shape[1])
    scale = 4.0 / (4.0 * beta[0].sum() + 0.09)
    e = np.linspace(1e-6, 1, 2001)
    resid = e - scale * (beta[0] * (1 - (1 - e[:, None]) ** k)).sum(1)
    assert np.count_nonzero(np.diff(np.sign(resid))) == 1
    assert e[np.argmax(resid > 0)] == pytest.approx(float(st["e"]), abs=1e-3)


# ------------------------------------------------------------------------------------------ CLI
def _cli(*args):
    return subprocess.run([sys.executable, "-m", "igbsym", "phase", *args], capture_output=True, text=True)


def test_phase_cli_json_and_plot(tmp_path):
    out = _cli("--activation", "tanh", "--grid", "6", "--json")
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert len(res["values"]) == 6 and len(res["values"][0]) == 6 and len(res["eoc_sigma_w2"]) == 6
    i, j = 0, 5                                           # (σ_w² = 4, σ_b² = 0.5/6): chaotic, γ_∞ finite
    g = float(get("gamma_inf").numpy(activation="tanh", sigma_w=math.sqrt(res["sigma_w2"][j]),
                                     sigma_b=math.sqrt(res["sigma_b2"][i])))
    assert res["values"][i][j] == pytest.approx(math.log10(g), rel=1e-12)
    assert res["values"][i][0] is None                    # ordered: γ_∞ = ∞
    plot = tmp_path / "phase.png"
    out = _cli("--activation", "relu", "--depth", "3", "--grid", "5", "--plot", str(plot))
    assert out.returncode == 0 and plot.stat().st_size > 1000, out.stderr


@pytest.mark.parametrize("args", [("--activation", "gelu"), ("--activation", "tanh", "--depth", "0"),
                                  ("--activation", "tanh", "--sw2-max", "30"), ("--activation", "tanh", "--grid", "x")])
def test_phase_cli_bad_input_is_one_line_exit_2(args):
    out = _cli(*args)
    assert out.returncode == 2 and out.stdout == "" and len(out.stderr.strip().splitlines()) == 1, out.stderr


# ----------------------------------------------------------------------------------- gamma_L on the edge of chaos
def _relu_eoc_e(a, sb2, L):
    """e_l = 1 − c_l, l = 1..L + 1 (row l; vectorised over σ_b²) of the leaky ReLU net (a = 0: ReLU) on its edge of
    chaos σ_w² = 1/h, h = (1 + a²)/2, from two independent inputs (q_1 = σ_w² + σ_b², e_1 = σ_w²/q_1): q_{l+1} =
    q_l + σ_b², e_{l+1} = (q_l/q_{l+1})(e_l − r(sin t − t cos t)/π), r = (1 − a)²/(1 + a²) (the arc-cosine map), in
    the stable form t = 2 arcsin √(e/2) (cos t = 1 − e exactly) with sin t − t cos t by its Taylor series for
    t < 0.01, so e ~ 1e-11 keeps its digits (MF.trajectory forms c = 1 − e and arccos c)."""
    sb2 = np.asarray(sb2, float)
    r, sw2 = (1 - a) ** 2 / (1 + a * a), 2 / (1 + a * a)
    q, e = sw2 + sb2, sw2 / (sw2 + sb2)
    out = np.empty((L + 2,) + sb2.shape)
    out[1] = e
    for l in range(1, L + 1):
        t = 2 * np.arcsin(np.sqrt(e / 2))
        t2 = t * t
        small = t * t2 * (1 / 3 - t2 * (1 / 30 - t2 * (1 / 840 - t2 / 45360)))
        lost = e - r * np.where(t < 1e-2, small, np.sin(t) - t * np.cos(t)) / math.pi
        e, q = q / (q + sb2) * lost, q + sb2
        out[l + 1] = e
    return out


def _gamma(e):
    """γ_L = (1 − e_{L+1})/e_{L+1} (the readout after L hidden layers), row L."""
    return (1 - e[1:]) / e[1:]


def _richardson_tail(f, L1, L2, factor, weight):
    """The two Richardson values R(L) = (w f(factor L) − f(L))/(w − 1) at L1 and L2 = factor·L1, and the tail bound
    |R(L2) − R(L1)|: where the remainder of R shrinks at least twofold from L1 to L2, |R(L2) − R_∞| <= that bound."""
    R = [(weight * f(factor * L) - f(L)) / (weight - 1) for L in (L1, L2)]
    return R[1], np.abs(R[1] - R[0])


@pytest.mark.parametrize("a", [0.0, 0.2, -0.5])
def test_relu_eoc_growth_is_the_iterated_map(a):
    """(Leaky) ReLU with biases on the edge of chaos: γ_L/(C L²) → 1 with C = 8r²/(9π²). The stated subleading
    order (derivations/meanfield.py): γ_L/(C L²) = 1 + D L^{-1/2} + O(ln L/L), D depending on σ_b and the input.
    Richardson in L^{-1/2} (L, 4L: weight 2) removes D; its O(ln L/L) remainder shrinks ~3.4-fold from L = 6250 to
    25000, so |R(25000) − 1| must be below the tail bound |R(25000) − R(6250)|. The zero-bias coefficient
    2r²/(9π²) (depth.gamma's law) in its place gives R ≈ 4 and fails."""
    sb = np.array([0.1, 0.3, 0.5, 1.0, 3.0])
    e = _relu_eoc_e(a, sb**2, 100000)
    g = _gamma(e)
    form = get("gamma_eoc_growth")
    C = form.numpy(activation="leaky_relu" if a else "relu", a=a, sigma_b=sb)
    r = (1 - a) ** 2 / (1 + a * a)
    assert C == pytest.approx(8 * r * r / (9 * math.pi**2), rel=1e-14)

    def ratio(coef):
        return lambda L: g[L] / (coef * L * L)
    R, tail = _richardson_tail(ratio(C), 6250, 25000, 4, 2.0)
    assert np.all(np.abs(R - 1) <= tail), (R - 1, tail)
    assert np.all(tail < 0.05)
    R0, tail0 = _richardson_tail(ratio(2 * r * r / (9 * math.pi**2)), 6250, 25000, 4, 2.0)
    assert np.all(np.abs(R0 - 1) > tail0)                       # the mutation: the zero-bias coefficient fails
    # the engine's trajectory (arccos of c = 1 − e) is the same map: agreement at L = 2000
    if a == 0.0:
        tr = MF.trajectory("relu", 0.0, math.sqrt(2), sb, 2001)
        assert np.asarray(tr[2000][1]) == pytest.approx(e[2001], rel=1e-8)


@settings(max_examples=10)
@given(st.floats(0.3, 3.0))
def test_relu_eoc_growth_at_any_bias(sb):
    """Hypothesis over σ_b: the same Richardson tail test at L = 1000, 4000 (the law holds for every σ_b > 0)."""
    g = _gamma(_relu_eoc_e(0.0, np.array([sb * sb]), 16000))[:, 0]
    C = float(get("gamma_eoc_growth").numpy(activation="relu", sigma_b=sb))
    R, tail = _richardson_tail(lambda L: g[L] / (C * L * L), 1000, 4000, 4, 2.0)
    assert abs(R - 1) <= tail < 0.05


_ZT = np.linspace(-45, 45, 4501)                 # trapezoid in z, step 0.02 (exponentially accurate: analytic φ)
_HALF = np.exp(-_ZT**2 / 4)
_KH = 300


def _hermite_rows():
    """The orthonormal Hermite functions h_k(z) e^{-z²/4}, k < 300 (stable three-term recurrence)."""
    h = np.empty((_KH, _ZT.size))
    h[0], h[1] = _HALF, _ZT * _HALF
    for k in range(1, _KH - 1):
        h[k + 1] = (_ZT * h[k] - math.sqrt(k) * h[k - 1]) / math.sqrt(k + 1)
    return h * _HALF * (_ZT[1] - _ZT[0]) / math.sqrt(2 * math.pi)


def _smooth_eoc_e(phi, sw, sb, L):
    """e_l, l = 1..L + 1, of the smooth net from two independent inputs: Mehler's series written here (β_k =
    (E φ(√q Z) He_k(Z))²/k! by the trapezoid rule), e' = (σ_w²/q') Σ β_k(q)(1 − (1 − e)^k), q' = σ_w² Σ β_k + σ_b²
    (β frozen once q is at its fixed point to 1e-16); and the series' own χ_1 = σ_w² Σ k β_k/q*."""
    rows = _hermite_rows()
    sw2, sb2 = sw * sw, sb * sb
    q, e, k, frozen = sw2 + sb2, sw2 / (sw2 + sb2), np.arange(float(_KH)), False
    out = np.empty(L + 2)
    out[1] = e
    for l in range(1, L + 1):
        if not frozen:
            beta = (rows @ phi(math.sqrt(q) * _ZT)) ** 2
            q_next = sw2 * beta.sum() + sb2
            frozen = abs(q_next - q) <= 1e-16 * q
        else:
            q_next = q
        e, q = sw2 * (beta * -np.expm1(k * math.log1p(-e))).sum() / q_next, q_next
        out[l + 1] = e
    return out, sw2 * (k * beta).sum() / q


@pytest.mark.parametrize("act, sb", [("tanh", 0.05), ("tanh", 0.3), ("erf", 0.05), ("erf", 0.3)])
def test_smooth_eoc_growth_is_the_iterated_map(act, sb):
    """tanh / erf on the edge of chaos: γ_L = C L + K ln L + O(1) (derivations/meanfield.py), so the difference
    quotient (γ_{2L} − γ_L)/(C L) = 1 + κ/L + O(ln L/L²); Richardson in 1/L (L, 4L: weight 4) leaves
    O(ln L/L²), ~13-fold smaller from L = 3125 to 12500: |R(12500) − 1| below the tail bound |R(12500) − R(3125)|
    (a 1e-5 change of C fails it). Also γ_L/(C L) → 1 itself at L = 1e5 within the O(ln L/L) it states."""
    from scipy.special import erf
    sw = float(get("eoc_sigma_w").numpy(activation=act, sigma_b=sb))
    e, chi1 = _smooth_eoc_e(np.tanh if act == "tanh" else erf, sw, sb, 100000)
    assert chi1 == pytest.approx(1, abs=1e-12)                 # the independent series sits on the edge of chaos
    g = _gamma(e)
    C = float(get("gamma_eoc_growth").numpy(activation=act, sigma_b=sb))

    def quotient(coef):
        return lambda L: (g[2 * L] - g[L]) / (coef * L)
    R, tail = _richardson_tail(quotient(C), 3125, 12500, 4, 4.0)
    assert abs(R - 1) <= tail < 1e-4, (R - 1, tail)
    Rm, tailm = _richardson_tail(quotient(C * (1 + 1e-4)), 3125, 12500, 4, 4.0)
    assert abs(Rm - 1) > tailm
    assert abs(g[100000] / (C * 1e5) - 1) < 20 * math.log(1e5) / 1e5


def test_erf_eoc_growth_closed_form():
    """erf: E erf''(√q Z)² = 16q/(π(1 + 4q)^{3/2}) (SymPy integral) and σ_w² = π√(1 + 4q)/4 on the edge of chaos give
    C = 2q*²/(1 + 4q*); the route's value against its mpmath quadrature route (independent of the closed form)."""
    x, q = sp.Symbol("x", real=True), sp.Symbol("q", positive=True)
    d2 = sp.diff(sp.erf(x), x, 2)
    m = sp.integrate(d2**2 * sp.exp(-x**2 / (2 * q)) / sp.sqrt(2 * sp.pi * q), (x, -sp.oo, sp.oo))
    assert sp.simplify(m - 16 * q / (sp.pi * (1 + 4 * q) ** sp.Rational(3, 2))) == 0
    assert sp.simplify(sp.pi * sp.sqrt(1 + 4 * q) / 4 * q * m / 2 - 2 * q**2 / (1 + 4 * q)) == 0
    form = get("gamma_eoc_growth")
    for sb in (1e-3, 0.3, 5.0):
        assert float(form.numpy(activation="erf", sigma_b=sb)) == pytest.approx(
            float(form.mp(30, activation="erf", sigma_b=sb)), rel=1e-12)


def test_tanh_eoc_growth_against_mpmath_quad():
    """tanh: the NumPy route and the form's mpmath route (fixed quadrature rules) against mpmath.quad at 30 digits:
    q* the findroot of q − E tanh²/E sech⁴ = σ_b², C = q* E[tanh''²]/(2 E[tanh'²])."""
    form = get("gamma_eoc_growth")
    for sb in (0.05, 1.5):
        with mpmath.workdps(30):
            sb2 = mpmath.mpf(sb) ** 2
            d1 = lambda x: mpmath.sech(x) ** 2  # noqa: E731
            S = lambda q: _mp_gauss(lambda x: mpmath.tanh(x) ** 2, q)  # noqa: E731
            A = lambda q: _mp_gauss(lambda x: d1(x) ** 2, q)  # noqa: E731
            q = mpmath.findroot(lambda q: q - S(q) / A(q) - sb2, (sb2, sb2 + 10), solver="anderson")
            ref = q * _mp_gauss(lambda x: (2 * mpmath.tanh(x) * d1(x)) ** 2, q) / (2 * A(q))
        assert abs(form.mp(30, activation="tanh", sigma_b=sb) - ref) <= mpmath.mpf(10) ** -26 * ref
        assert float(form.numpy(activation="tanh", sigma_b=sb)) == pytest.approx(float(ref), rel=1e-12)


@pytest.mark.parametrize("act, sw, sb", [("relu", math.sqrt(1.5), 0.5), ("leaky_relu", 1.2, 0.3),
                                         ("tanh", 1.0, 0.3), ("erf", 1.0, 0.5)])
def test_ordered_phase_gamma_grows_at_rate_one_over_xi_c(act, sw, sb):
    """Ordered phase (χ_1 < 1): q → q*, e_{l+1}/e_l → χ_1, so ln γ_{L+1} − ln γ_L → −ln χ_1 = 1/ξ_c (meanfield.xi_c);
    the approach is geometric (O(√e_L) for ReLU, O(e_L) + O(χ_q^L) for smooth φ), below 1e-9 at L = 240."""
    tr = MF.trajectory(act, 0.2, sw, sb, 242)
    (_, e1), (_, e2) = tr[-2], tr[-1]
    rate = math.log((1 - float(e2)) / float(e2)) - math.log((1 - float(e1)) / float(e1))
    kw = dict(activation=act, sigma_w=sw, sigma_b=sb, a=0.2)
    assert val("phase", **kw) == -1.0
    assert rate == pytest.approx(1 / val("xi_c", **kw), rel=1e-9)


@settings(max_examples=settings().max_examples // 5, deadline=None)    # 5 in CI (~1.3 s each), 80 thorough
@given(st.lists(st.floats(1e-6, 10.0), min_size=2, max_size=4))
def test_each_point_of_an_array_call_is_its_scalar_call(qs):
    """Mehler's β and the moments of a point do not depend on the other points of the call (its own K and nodes,
    sums and products that round per row): bit for bit, so array and scalar calls of the tanh forms agree (found by
    the domain test: K and nodes of a chunk's largest q moved chi_c, xi_c and eoc_sigma_w by ~1e-16)."""
    from igbsym.gauss.hermite import moments_vec
    q = np.array(qs)
    together = {j: b for idx, beta in series("tanh", 0.0, q) for j, b in zip(idx, beta)}
    moments = np.stack(moments_vec("tanh", 0.0, q))
    for j, qj in enumerate(q):
        (_, alone), = series("tanh", 0.0, np.array([qj]))
        assert np.array_equal(alone[0], together[j])
        assert np.array_equal(np.stack(moments_vec("tanh", 0.0, np.array([qj])))[:, 0], moments[:, j])
    sw, sb = np.full(2, 1.8), 1e-3 + np.sqrt(q[:2]) / 4
    chi_c = igbsym.get("meanfield.chi_c")
    assert np.array_equal(chi_c.numpy(activation="tanh", sigma_w=sw, sigma_b=sb),
                          [chi_c.numpy(activation="tanh", sigma_w=1.8, sigma_b=b) for b in sb])
