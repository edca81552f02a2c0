"""Mean field with BatchNorm (igbsym/families/meanfield_bn.py): meanfield.bn_grad_rate against independent mpmath
quadratures, the batch-sphere quadrature of validation/checks_meanfield_bn.py, the Poincaré bound λ >= 1 (no edge of
chaos), the exact identity cases, a quick torch simulation and one-line refusals."""
from __future__ import annotations

import math
import subprocess
import sys

import mpmath
import pytest
from hypothesis import given, strategies as st

import igbsym
from igbsym.errors import InputError

FORM = igbsym.get("meanfield.bn_grad_rate")
TOL = FORM.accuracy.relative
LEAKY = {"relu": 0.0, "identity": 1.0, "abs": -1.0}


def _gauss(f, dps=30):
    with mpmath.workdps(dps):
        w = lambda z: mpmath.exp(-z * z / 2) / mpmath.sqrt(2 * mpmath.pi)  # noqa: E731
        return mpmath.quad(lambda z: f(z) * w(z), [-mpmath.inf, -6, 0, 6, mpmath.inf])


def _ratio_mp(phi, dphi):
    mean = _gauss(phi)
    return _gauss(lambda z: dphi(z) ** 2) / _gauss(lambda z: (phi(z) - mean) ** 2)


def _leaky(a):
    return (lambda z: z if z > 0 else a * z), (lambda z: 1 if z > 0 else a)


def _finite_b_mp(a, B):
    """λ_B = (((B − 1) d_1 + d_2)/α − 1)/(B − 3) of the leaky family, its pair moments by 2-D quadrature of
    Gaussians at ρ = −1/(B − 1) (the sphere law reduced by homogeneity; d_2 by a 1-D orthant integral)."""
    phi, dphi = _leaky(mpmath.mpf(a))
    with mpmath.workdps(20):
        rho = mpmath.mpf(-1) / (B - 1)
        s = mpmath.sqrt(1 - rho * rho)
        # given z_1, z_2 = rho z_1 + s y: E over y in closed form of the Gaussian cdf/pdf (no kink inside a panel)
        def inner(z1, g):
            m = rho * z1
            t = m / s
            pos = s * mpmath.npdf(t) + m * mpmath.ncdf(t)       # E[(z_2)_+ | z_1]
            neg = pos - m                                       # E[(z_2)_- | z_1] = E[(-z_2)_+]
            return g(pos, neg, mpmath.ncdf(t))
        d1 = (1 + a * a) / mpmath.mpf(2)
        d2 = _gauss(lambda z: dphi(z) * inner(z, lambda p, n, c: c + a * (1 - c)), 20)
        cross = _gauss(lambda z: phi(z) * inner(z, lambda p, n, c: p - a * n), 20)
        alpha = (1 + a * a) / mpmath.mpf(2) - cross
        return (((B - 1) * d1 + d2) / alpha - 1) / (B - 3)


@pytest.mark.parametrize("activation", ["relu", "identity", "abs", "leaky_relu"])
def test_b_inf_closed_forms_equal_mpmath_quadrature(activation):
    a = LEAKY.get(activation, 0.2)
    ref = _ratio_mp(*_leaky(mpmath.mpf(a)))
    got = FORM.numpy(activation=activation, a=0.2) if activation == "leaky_relu" else FORM.numpy(activation=activation)
    assert abs(float(got) - float(ref)) <= TOL * float(ref)
    if activation == "relu":
        assert float(got) == pytest.approx(math.pi / (math.pi - 1), rel=1e-15)   # Yang et al.'s 1.4669


@pytest.mark.parametrize("name", ["tanh", "erf", "sigmoid", "gelu", "silu"])
def test_smooth_routes_equal_mpmath_quadrature(name):
    act = igbsym.activations.get(name)
    with mpmath.workdps(30):
        phi = lambda z: act.mp(z, 0, 0)  # noqa: E731
        ref = _ratio_mp(phi, lambda z: mpmath.diff(phi, z))
    got = FORM.numpy(activation=name)
    assert abs(float(got) - float(ref)) <= TOL * float(ref)
    assert abs(FORM.mp(30, activation=name) - ref) <= mpmath.mpf(10) ** -25 * ref
    assert float(got) > 1


@pytest.mark.parametrize("activation,a,B", [("relu", 0.0, 4), ("relu", 0.0, 7), ("leaky_relu", 0.3, 12),
                                             ("abs", -1.0, 5), ("leaky_relu", -2.5, 40)])
def test_finite_b_closed_forms_equal_mpmath_quadrature(activation, a, B):
    ref = _finite_b_mp(a, B)
    got = FORM.numpy(activation=activation, a=a, B=B) if activation == "leaky_relu" else \
        FORM.numpy(activation=activation, B=B)
    assert abs(float(got) - float(ref)) <= TOL * float(ref)
    assert abs(FORM.mp(30, activation=activation, B=B, **({"a": a} if activation == "leaky_relu" else {}))
               - ref) <= mpmath.mpf(10) ** -15 * ref


def test_finite_b_form_equals_the_batch_sphere_quadrature():
    """The check's independent route (quadrature over the batch sphere, no homogeneity used): identity to rounding,
    relu to the kink-limited accuracy of its tensor Gauss–Jacobi rule."""
    from igbsym.validation.checks_meanfield_bn import sphere_rate
    for B in (4, 6, 9, 33, 200):
        assert sphere_rate("identity", B) == pytest.approx((B - 2) / (B - 3), rel=1e-12)
        assert sphere_rate("relu", B) == pytest.approx(float(FORM.numpy(activation="relu", B=B)), rel=2e-3)


@given(st.floats(-1e6, 1e6, allow_nan=False))
def test_poincare_lambda_at_least_one_over_leaky_slopes(a):
    lam = float(FORM.numpy(activation="leaky_relu", a=a))
    gap = (1 - a) ** 2 / (math.pi * (1 + a * a) - (1 - a) ** 2)
    assert lam >= 1 and lam - 1 == pytest.approx(gap, rel=1e-9, abs=1e-15)
    assert (lam == 1) == (a == 1)


@given(st.floats(-100, 100, allow_nan=False), st.integers(4, 10**6))
def test_finite_batch_rate_exceeds_one(a, B):
    assert float(FORM.numpy(activation="leaky_relu", a=a, B=B)) > 1


def test_identity_is_exactly_one_and_the_linear_rate():
    assert FORM.case(activation="identity") == 1
    for B in (4, 5, 10, 1000):
        assert FORM.case(activation="identity", B=B) == sp_rational(B - 2, B - 3)
        assert float(FORM.numpy(activation="leaky_relu", a=1.0, B=B)) == pytest.approx((B - 2) / (B - 3), rel=1e-14)


def sp_rational(p, q):
    import sympy as sp
    return sp.Rational(p, q)


def test_torch_bn_mlp_matches_the_rate_and_has_no_edge_of_chaos():
    """Quick MC (fixed seed): relu and identity at B = 6, widths 128/512 extrapolated in 1/N, depth 10, 16 inits;
    the rate is identical at every (sigma_w, sigma_b) of the grid and matches the form with z <= 5."""
    from igbsym.validation import checks_meanfield_bn as C
    from igbsym.validation.checks import Context, SIZES
    ctx = Context(mode="quick", seed=3)
    saved = dict(SIZES["quick"])
    SIZES["quick"].update({"meanfield_bn.widths": (128, 512), "meanfield_bn.depth": 10})
    try:
        configs = (("relu", 1.0, 0.0), ("relu", 0.4, 1.5), ("relu", 3.0, 0.2), ("identity", 1.0, 0.3))
        est = C.extrapolated(ctx, configs, 6, 16, 1)
    finally:
        SIZES["quick"].clear()
        SIZES["quick"].update(saved)
    relu = [est[c][0] for c in configs[:3]]
    assert max(relu) - min(relu) <= 1e-12 * relu[0]            # sigma_w and sigma_b cancel exactly under BN
    for cfg in (configs[0], configs[3]):
        v, se = est[cfg]
        lam = float(FORM.numpy(activation=cfg[0], B=6))
        assert abs(v - lam) <= 5 * se, (cfg, v, lam, se)
        assert v - 1 > 5 * se                                  # gradients explode: no edge of chaos


@pytest.mark.parametrize("kw,needle", [
    (dict(activation="tanh", B=8), "B = inf for smooth activations"),
    (dict(activation="relu", B=3), "B=3 is out of range"),
    (dict(activation="softmax"), "activation='softmax' is not allowed"),
    (dict(activation="relu", a=0.3), "a=0.3 has no effect here"),
])
def test_bad_input_gets_one_clear_line(kw, needle):
    with pytest.raises(InputError) as e:
        FORM.check(**kw)
        FORM.numpy(**kw)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_cli_refuses_in_one_line():
    out = subprocess.run([sys.executable, "-m", "igbsym", "eval", "meanfield.bn_grad_rate", "activation=tanh", "B=8"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "B = inf" in out.stderr


@pytest.mark.parametrize("args,code,needle", [
    (["--activation", "relu", "--norm", "batchnorm"], 0, "no edge of chaos"),
    (["--activation", "relu", "--norm", "batchnorm", "--batch", "16"], 0, "lambda = 1.58995"),
    (["--activation", "identity", "--norm", "batchnorm"], 0, "lambda = 1 at every"),
    (["--activation", "tanh", "--norm", "batchnorm", "--batch", "16"], 2, "B = inf for smooth"),
    (["--activation", "relu", "--norm", "batchnorm", "--depth", "5"], 2, "--depth has no effect"),
    (["--activation", "relu", "--batch", "8"], 2, "--batch needs --norm batchnorm"),
])
def test_phase_norm_batchnorm_prints_one_line(args, code, needle):
    out = subprocess.run([sys.executable, "-m", "igbsym", "phase", *args], capture_output=True, text=True)
    text = out.stdout if code == 0 else out.stderr
    assert out.returncode == code and len(text.strip().splitlines()) == 1 and needle in text, (out.stdout, out.stderr)
    if code == 0 and "relu" in args and "--batch" not in args:
        assert "lambda = 1.46694" in text
