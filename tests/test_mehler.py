"""Mehler's series of the smooth correlation map at small q (igbsym/mehler.py) and depth.gamma's RMSNorm-after-φ
route through it. Independent routes: mpmath quadrature of the defining Gaussian integrals, SymPy derivatives of
the activations, and the layer-by-layer composition of the ops' maps (the nested quadrature)."""
import mpmath
import numpy as np
import pytest
import sympy as sp

import igbsym
from igbsym import activations as acts
from igbsym import mehler as Me
from igbsym import ops as O
from igbsym.errors import NumericalError
from reference import layer_walk

RMS_POST = igbsym.get("depth.gamma_rms_post")


@pytest.mark.parametrize("name", Me.ACTIVATIONS)
def test_derivatives_at_zero_are_sympys(name):
    x = acts.x_
    expr = acts.get(name).expr
    with mpmath.workdps(40):
        for n in range(0, 13):
            exact = sp.diff(expr, x, n).subs(x, 0)
            assert abs(Me._derivative_at_zero(name, n) - mpmath.mpf(sp.N(exact, 50))) <= mpmath.mpf(10) ** -38


@pytest.mark.parametrize("name", Me.ACTIVATIONS)
@pytest.mark.parametrize("q", ["1e-30", "1e-6", "3e-3", "0.01"])
def test_coefficients_are_the_gaussian_moments(name, q):
    """b_0 = (E φ)²/E φ² by mpmath.quad at 60 digits; Σ b_k = 1 (Mehler at c = 1); b_1 = q (E φ')²/E φ², E φ' from
    quadrature of the SymPy derivative. The quadrature runs at 110 digits: at q = 1e-30, E φ ~ q comes from ±z terms
    of size √q, and 15 digits cancel."""
    f = sp.lambdify(acts.x_, acts.get(name).expr, modules=igbsym.functions.MPMATH_MODULES)
    d1 = sp.lambdify(acts.x_, sp.diff(acts.get(name).expr, acts.x_), modules=igbsym.functions.MPMATH_MODULES)
    with mpmath.workdps(110):
        qq = mpmath.mpf(q)
        sd = mpmath.sqrt(qq)
        E = lambda g: mpmath.quad(lambda z: g(sd * z) * mpmath.npdf(z), [-mpmath.inf, -12, 0, 12, mpmath.inf])  # noqa
        M, Sq, A1 = E(f), E(lambda t: f(t) ** 2), E(d1)
        b = Me.coefficients(name, qq, 50)
        assert abs(b[0] / (M * M / Sq) - 1) < mpmath.mpf(10) ** -48
        assert abs(b[1] / (qq * A1 * A1 / Sq) - 1) < mpmath.mpf(10) ** -48
        assert abs(mpmath.fsum(b) - 1) < mpmath.mpf(10) ** -48


@pytest.mark.parametrize("name", Me.ACTIVATIONS)
@pytest.mark.parametrize("q", ["1e-6", "3e-3", "0.01"])
def test_the_series_is_spec_s_nested_quadrature_map(name, q):
    """F(c) = Σ b_k c^k against the Act op's mp map of φ at (q, c) (nested quadrature of E[φ(u)φ(u')]), 40 digits."""
    with mpmath.workdps(40):
        qq = mpmath.mpf(q)
        b = Me.coefficients(name, qq, 40)
        for c in ("0.001", "0.3", "0.6"):
            cc = mpmath.mpf(c)
            ref = O.Act(name).map(O.State(qq, cc, 1 - cc, mpmath.mpf(0)), "mpmath").c
            assert abs(mpmath.fsum(bk * cc**k for k, bk in enumerate(b)) / ref - 1) < mpmath.mpf(10) ** -37


@pytest.mark.parametrize("name", Me.ACTIVATIONS)
@pytest.mark.parametrize("sw", [1e-30, 1e-6, 0.03, 0.0999])
def test_rms_post_route_equals_the_composed_maps(name, sw):
    """depth.gamma_rms_post through Mehler's polynomial = the ops' maps composed layer by layer (L = 40), NumPy and
    mp at 30 digits."""
    with mpmath.workdps(30):
        ref = layer_walk(name, "rmsnorm", "post", mpmath.mpf(sw), 40, "mpmath")[-1]
    with mpmath.workdps(40):
        assert abs(RMS_POST.mp(30, L=40, activation=name, sigma_w=sw) / ref - 1) < mpmath.mpf(10) ** -27
    assert float(RMS_POST.numpy(L=40, activation=name, sigma_w=sw)) == pytest.approx(float(ref), rel=1e-14, abs=0)


@pytest.mark.parametrize("name", Me.ACTIVATIONS)
@pytest.mark.parametrize("q", [1e-24, 1e-12, 1e-6, 1e-3])
def test_deep_double_iteration_keeps_its_digits(name, q):
    """1e5 near-identity steps: the compensated increment keeps NumPy within 1e-15 of the fixed-point integer
    iteration at 40 digits (the plain Horner iteration drifted to 3.8e-12); mp30 and mp50 agree (converged)."""
    L = 100000
    got = Me.np_path(name, q, L)[-1]
    with mpmath.workdps(40):
        ref = Me.mp_path(name, mpmath.mpf(q), L, last=True)[0]
    assert got == pytest.approx(float(ref), rel=1e-15, abs=0)
    paths = []
    for d in (30, 50):   # the fixed-point coefficients hold 2^-P, not the working precision (b_1 ≈ 1 rounded to 30
        with mpmath.workdps(d):   # digits drifted 2.4e-27 over 1e5 layers)
            paths.append(Me.mp_path(name, mpmath.mpf(q), L, last=True)[0])
    with mpmath.workdps(60):
        assert abs(paths[0] / paths[1] - 1) < mpmath.mpf(10) ** -29


def test_array_call_mixing_routes_equals_the_scalar_calls():
    sws = np.array([1e-70, 1e-20, 1e-3, 0.0999, 0.5, 2.0])
    for L in (1, 7, 3000):
        arr = RMS_POST.numpy(L=L, activation="gelu", sigma_w=sws)
        assert list(arr) == [float(RMS_POST.numpy(L=L, activation="gelu", sigma_w=s)) for s in sws]


def test_outside_its_range_the_series_refuses():
    with pytest.raises(ValueError):
        Me.coefficients("silu", 0.5, 30)
    with mpmath.workdps(30):
        with pytest.raises(NumericalError):   # SiLU's asymptotic sum in j turns to grow near j = π²/(2q)
            Me._gauss_derivative("silu", 2, mpmath.mpf(2), mpmath.mpf(10) ** -40)


def test_mp_route_at_the_smallest_double_sigma_w():
    """σ_w = 5e-324 (q = 2.5e-647 in mp; domain seed 25444: float(q) = 0 divided by zero in the series' turning
    point). GELU at q → 0: E φ = q/√(2π(1 + q)) (closed form), E φ² = q/4 (1 + O(q)), so β = b_0 ≈ 2q/π and the
    affine map gives γ_L = (1 + β)^L − 1."""
    with mpmath.workdps(60):
        q = mpmath.mpf(5e-324) ** 2
        beta = 2 * q / mpmath.pi
        for L in (1, 100000):
            ref = mpmath.expm1(L * mpmath.log1p(beta))
            assert abs(RMS_POST.mp(30, L=L, activation="gelu", sigma_w=5e-324) / ref - 1) < mpmath.mpf(10) ** -27
