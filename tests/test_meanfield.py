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
    (idx, beta), = series("erf", 0.0, st["q"])
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
