"""Mean field with LayerNorm / RMSNorm (igbsym/families/meanfield_norm.py): chi_1 against mpmath quadrature of its
definition, c* and gamma_inf against the root of the c-map built from independent quadratures and against the
layer engine's walk (the ops' own width-limit maps), the edge of chaos, the Poincare / ordered claims, a torch
Monte Carlo of chi_1 with its SE (and a mutation it catches), and one-line refusals (forms and `igbsym phase`)."""
from __future__ import annotations

import math
import subprocess
import sys

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import igbsym
from igbsym.errors import InputError
from igbsym.families import depth as D

CHI, CSTAR, GAMMA, EOC = (igbsym.get(f"meanfield.norm_{n}") for n in ("chi_1", "c_star", "gamma_inf", "eoc"))
ACTS = ("relu", "leaky_relu", "erf", "tanh")
A = 0.2
AM = mpmath.mpf(A)      # mpf: a float slope squared in float arithmetic would round at 1e-17
PHI = {"relu": (lambda z: max(z, 0), lambda z: 1 if z > 0 else 0),
       "leaky_relu": (lambda z: z if z > 0 else AM * z, lambda z: 1 if z > 0 else AM),
       "erf": (mpmath.erf, lambda z: 2 / mpmath.sqrt(mpmath.pi) * mpmath.exp(-z * z)),
       "tanh": (mpmath.tanh, lambda z: mpmath.sech(z) ** 2)}


def _e(f, var=1, dps=25):
    """E f(sqrt(var) Z) by mpmath.quad (breakpoint at the kink)."""
    with mpmath.workdps(dps):
        sd = mpmath.sqrt(var)
        return mpmath.quad(lambda z: mpmath.npdf(z) * f(sd * z), [-mpmath.inf, 0, mpmath.inf])


def _kw(act, norm, placement, **more):
    return dict(activation=act, norm=norm, placement=placement, **more) | ({"a": A} if act == "leaky_relu" else {})


def chi_definition(act, norm, placement, sw, sb):
    """chi_1 from its definition (module docstring of the family) by quadrature at 25 digits: before, sigma_w^2 A_1/
    (sigma_w^2 S_1 + sigma_b^2); after, sigma_w^2 A(q)/V(q) (LN) or /S(q) (RMS), q = sigma_w^2 + sigma_b^2."""
    phi, dphi = PHI[act]
    with mpmath.workdps(25):
        sw, sb = mpmath.mpf(sw), mpmath.mpf(sb)          # the doubles' exact values
        var = 1 if placement == "before" else sw * sw + sb * sb
        S, Ap = _e(lambda z: phi(z) ** 2, var), _e(lambda z: dphi(z) ** 2, var)
        if placement == "before":
            return sw * sw * Ap / (sw * sw * S + sb * sb)
        M = _e(phi, var)
        return sw * sw * Ap / (S - M * M if norm == "layernorm" else S)


@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("norm", ("layernorm", "rmsnorm"))
@pytest.mark.parametrize("placement", ("before", "after"))
@pytest.mark.parametrize("sw,sb", [(1.0, 0.3), (2.2, 0.05)])
def test_chi_1_equals_the_quadrature_of_its_definition(act, norm, placement, sw, sb):
    ref = chi_definition(act, norm, placement, sw, sb)
    got = float(CHI.numpy(**_kw(act, norm, placement, sigma_w=sw, sigma_b=sb)))
    assert abs(got - float(ref)) <= CHI.accuracy.relative * float(ref)
    assert abs(CHI.mp(30, **_kw(act, norm, placement, sigma_w=sw, sigma_b=sb)) - ref) <= 1e-20 * ref


def _relu_cmap_root(sw, sb, a=0.0):
    """c* of relu/leaky after LayerNorm: root of c = (sigma_w^2 rho(c) + sigma_b^2)/q, rho the centred pair moment
    with E[phi(v) | u] in closed Gaussian form and the outer expectation by mpmath.quad (no arc-cosine formula)."""
    with mpmath.workdps(25):
        a = mpmath.mpf(a)
        phi = lambda z: z if z > 0 else a * z  # noqa: E731
        M, S = _e(phi), _e(lambda z: phi(z) ** 2)

        def pair(c):
            s = mpmath.sqrt(1 - c * c)

            def inner(z):             # E[phi(c z + s y)], y ~ N(0, 1): E[v+] - a E[v-]
                m = c * z
                pos = s * mpmath.npdf(m / s) + m * mpmath.ncdf(m / s)
                return pos - a * (pos - m)
            return _e(lambda z: phi(z) * inner(z))
        rho = lambda c: (pair(c) - M * M) / (S - M * M)  # noqa: E731
        f = lambda c: (sw * sw * rho(c) + sb * sb) / (sw * sw + sb * sb) - c  # noqa: E731
        return mpmath.findroot(f, (mpmath.mpf("0.01"), mpmath.mpf("0.9")), solver="anderson")


@pytest.mark.parametrize("act,a,sw,sb", [("relu", 0.0, 1.0, 0.3), ("relu", 0.0, 3.0, 0.1),
                                         ("leaky_relu", A, 1.0, 0.3), ("leaky_relu", -0.5, 2.0, 0.5)])
def test_centred_c_star_equals_the_root_of_the_quadrature_c_map(act, a, sw, sb):
    ref = _relu_cmap_root(sw, sb, a)
    kw = dict(activation=act, norm="layernorm", placement="after", sigma_w=sw, sigma_b=sb) | (
        {"a": a} if act == "leaky_relu" else {})
    assert abs(float(CSTAR.numpy(**kw)) - float(ref)) <= CSTAR.accuracy.relative * float(ref)
    assert abs(float(GAMMA.numpy(**kw)) - float(ref / (1 - ref))) <= GAMMA.accuracy.relative * float(ref / (1 - ref))


@pytest.mark.parametrize("act,norm,placement,sw,sb", [
    ("relu", "layernorm", "after", 1.0, 0.3), ("relu", "layernorm", "after", 2.0, 0.05),
    ("tanh", "layernorm", "before", 2.0, 0.3), ("tanh", "rmsnorm", "before", 1.5, 0.2),
    ("erf", "rmsnorm", "before", 3.0, 0.3), ("tanh", "layernorm", "after", 2.0, 0.3),
    ("erf", "rmsnorm", "after", 1.8, 0.4), ("tanh", "rmsnorm", "after", 1.2, 0.2)])
def test_gamma_inf_is_the_limit_of_the_layer_engine_walk(act, norm, placement, sw, sb):
    """The engine's walk of the ops (Dense with bias, norm, Act: their own width-limit maps) converges
    geometrically to gamma_inf; 1500 layers take chi_c^L below 1e-40 at these points."""
    g = float(np.asarray(D.path(1500, act, norm, "pre" if placement == "before" else "post", 0.01, sw,
                                sigma_b=sb, last=True)[-1]))
    assert float(GAMMA.numpy(**_kw(act, norm, placement, sigma_w=sw, sigma_b=sb))) == pytest.approx(g, rel=1e-9)


@pytest.mark.parametrize("act,norm,placement", [("relu", "layernorm", "after"), ("leaky_relu", "layernorm", "after"),
                                                ("erf", "rmsnorm", "before"), ("tanh", "layernorm", "before"),
                                                ("erf", "layernorm", "after"), ("tanh", "rmsnorm", "after")])
@pytest.mark.parametrize("sb", [0.05, 0.3, 1.2])
def test_edge_of_chaos_has_chi_1_equal_one_by_quadrature(act, norm, placement, sb):
    rho = float(EOC.numpy(**_kw(act, norm, placement, sigma_b=sb)))
    assert float(chi_definition(act, norm, placement, sb / rho, sb)) == pytest.approx(1, rel=1e-9)
    for side, phase in ((1.01, -1), (0.99, 1)):            # chaotic below the ratio, ordered above it
        chi = float(CHI.numpy(**_kw(act, norm, placement, sigma_w=sb / (rho * side), sigma_b=sb)))
        assert math.copysign(1, chi - 1) == phase


def test_exact_values_of_the_claims():
    """relu: LN after has the ray 1/sqrt(pi - 1); erf before: sqrt(A_1 - S_1) > 0; relu c* = 1 before."""
    assert float(EOC.numpy(**_kw("relu", "layernorm", "after", sigma_b=0.7))) == pytest.approx(
        1 / math.sqrt(math.pi - 1), rel=1e-15)
    a1 = 4 / (math.pi * math.sqrt(5))
    s1 = 2 / math.pi * math.asin(2 / 3)
    assert float(EOC.numpy(**_kw("erf", "rmsnorm", "before", sigma_b=0.7))) == pytest.approx(math.sqrt(a1 - s1),
                                                                                             rel=1e-15)
    assert CSTAR.case(activation="relu", norm="layernorm", placement="before") == 1


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(("relu", "leaky_relu")), st.sampled_from(("before", "rms-after")),
       st.floats(1e-3, 1e3), st.floats(1e-3, 1e3), st.floats(-10, 10))
def test_relu_like_before_the_norm_and_after_rmsnorm_are_ordered(act, where, sw, sb, a):
    placement, norm = ("before", "layernorm") if where == "before" else ("after", "rmsnorm")
    kw = dict(activation=act, norm=norm, placement=placement, sigma_w=sw, sigma_b=sb) | (
        {"a": a} if act == "leaky_relu" else {})
    assert float(CHI.numpy(**kw)) < 1 and float(GAMMA.numpy(**kw)) == math.inf


@pytest.mark.parametrize("name", ["erf", "tanh"])
def test_poincare_before_the_norm_odd_phi(name):
    """E phi'(Z)^2 > E phi(Z)^2 (= Var phi, odd) by quadrature: the before-norm ray exists."""
    phi, dphi = PHI[name]
    assert _e(lambda z: dphi(z) ** 2) > _e(lambda z: phi(z) ** 2) + 0.05


def test_torch_chi_1_monte_carlo_matches_and_catches_a_mutation():
    """Quick MC (fixed seeds): the jvp growth of a perturbation through LN/RMS blocks, 1/N-extrapolated; z <= 5 for
    the form, and the form times 1.05 is rejected at z > 5."""
    from igbsym.validation import checks_meanfield_norm as C
    from igbsym.validation.checks import Context, SIZES
    saved = dict(SIZES["quick"])
    SIZES["quick"].update({"meanfield_norm.samples": 3000})
    try:
        results = C.check_chi(Context(mode="quick", seed=7))
    finally:
        SIZES["quick"].clear()
        SIZES["quick"].update(saved)
    for r in results:
        assert r.passed and abs(r.z) <= 5, (r.label, r.z)
        assert abs(r.estimate - 1.05 * r.prediction) > 5 * r.se, r.label


@pytest.mark.parametrize("kw,needle", [
    (_kw("relu", "layernorm", "before", sigma_b=0.5), "an edge of chaos at sigma_b"),
    (_kw("relu", "rmsnorm", "after", sigma_b=0.5), "an edge of chaos at sigma_b"),
    (dict(activation="leaky_relu", a=1.0, norm="layernorm", placement="after", sigma_b=0.5), "a != 1"),
    (_kw("tanh", "layernorm", "after", sigma_b=2.0), "sigma_b <= 1.5"),
])
def test_eoc_refuses_in_one_line(kw, needle):
    with pytest.raises(InputError) as e:
        EOC.numpy(**kw)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_forms_refuse_out_of_range_in_one_line():
    with pytest.raises(InputError) as e:
        CSTAR.numpy(**_kw("tanh", "rmsnorm", "after", sigma_w=2.0, sigma_b=1.2))
    assert "sigma_w^2 + sigma_b^2 <= 5" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(InputError) as e:
        GAMMA.numpy(**_kw("erf", "layernorm", "before", sigma_w=1e4, sigma_b=1e-3))
    assert "sigma_b >= 1e-6 sigma_w" in str(e.value)


@pytest.mark.parametrize("args,code,needle", [
    (["--norm", "layernorm", "--placement", "after"], 0, "edge of chaos sigma_w^2 ="),
    (["--norm", "rmsnorm"], 0, "no edge of chaos at sigma_b > 0"),
    (["--norm", "layernorm", "--depth", "4"], 2, "--depth is not available"),
    (["--placement", "after"], 2, "--placement needs --norm layernorm or rmsnorm"),
    (["--norm", "rmsnorm", "--batch", "8"], 2, "--batch needs --norm batchnorm"),
])
def test_phase_with_layernorm_and_rmsnorm(args, code, needle):
    out = subprocess.run([sys.executable, "-m", "igbsym", "phase", "--activation", "relu", "--grid", "8", *args],
                         capture_output=True, text=True)
    text = out.stdout if code == 0 else out.stderr
    assert out.returncode == code and len(text.strip().splitlines()) == 1 and needle in text, (out.stdout, out.stderr)


def test_phase_json_and_plot(tmp_path):
    import json
    out = subprocess.run([sys.executable, "-m", "igbsym", "phase", "--activation", "tanh", "--norm", "layernorm",
                          "--placement", "before", "--grid", "6", "--json", "--plot", str(tmp_path / "p.png")],
                         capture_output=True, text=True)
    res = json.loads(out.stdout)
    rho = float(EOC.numpy(activation="tanh", norm="layernorm", placement="before", sigma_b=1.0))
    assert res["eoc_sigma_w2"][0] == pytest.approx(res["sigma_b2"][0] / rho**2, rel=1e-12)
    assert (tmp_path / "p.png").stat().st_size > 1000
