"""The 7-15 Gauss-Kronrod pair (igbsym.gauss.rules.gauss_kronrod_15): its degrees of exactness (independent route:
the exact moments of x^k on [-1, 1]), its Gauss half against NumPy's Gauss-Legendre rule, and the composite rule's
error estimate (its difference from the 7-point rule) bounding its error on a smooth integrand."""
import math

import numpy as np
import pytest

from igbsym.gauss import composite_gauss_kronrod
from igbsym.gauss.rules import gauss_kronrod_15


@pytest.mark.parametrize("k", range(0, 28, 2))
def test_kronrod_is_exact_to_degree_23_and_gauss_to_13(k):
    """Even powers (the odd ones vanish by the nodes' symmetry): exact up to 22 and 12, not at 24 and 14."""
    x, wk, wg = gauss_kronrod_15()
    exact = 2 / (k + 1)
    assert (abs(x ** k @ wk - exact) <= 4e-16) == (k <= 22)
    assert (abs(x ** k @ wg - exact) <= 4e-16) == (k <= 12)
    assert abs(x ** (k + 1) @ wk) <= 1e-16 and abs(x ** (k + 1) @ wg) <= 1e-16


def test_gauss_half_is_the_seven_point_gauss_legendre_rule():
    x, _, wg = gauss_kronrod_15()
    gx, gw = np.polynomial.legendre.leggauss(7)
    assert np.allclose(x[wg > 0], gx, rtol=0, atol=2e-16) and np.allclose(wg[wg > 0], gw, rtol=0, atol=3e-16)
    assert np.all(np.diff(x) > 0)


@pytest.mark.parametrize("a, b, panels", [(0.0, 4.0, 1), (-3.0, 5.0, 4), (0.0, 60.0, 15)])
def test_composite_pair_estimate_bounds_its_error_on_exp(a, b, panels):
    x, wk, wg = composite_gauss_kronrod(np.linspace(a, b, panels + 1))
    exact = math.exp(-a) - math.exp(-b)                          # int_a^b e^-x dx
    kronrod, gauss = np.exp(-x) @ wk, np.exp(-x) @ wg
    assert abs(kronrod - exact) <= max(abs(kronrod - gauss), 4e-16 * exact)
    assert abs(kronrod / exact - 1) <= 1e-15
