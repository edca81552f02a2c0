"""Closed pair kernels of smooth activations (igbsym/gauss/bivariate.py, issue 46): E[φ(u)φ(v)] against mpmath
quadrature at 30 digits (1-d outer quadrature over u with the exact inner mean E[GELU(μ + sZ)] = μΦ(μ/τ) +
s²φ(μ/τ)/τ, τ = √(1 + s²): an independent route), held to the stated bound GELU_KERNEL_ERROR."""
import mpmath
import numpy as np
import pytest

from igbsym.gauss.bivariate import gelu_kernel
from igbsym.ops import Act

CASES = [(0.3, 0.8, 1.5), (-0.6, 1.2, 0.4), (0.95, 1.0, 1.0), (1.0, 1.0, 1.0), (-1.0, 1.0, 1.0), (0.0, 2.0, 3.0),
         (5.0, 5.0, 5.5), (-4.9, 5.0, 5.0), (1e-3, 1e-3, 1e-3), (30.0, 30.0, 31.0), (-29.9, 30.0, 30.0),
         (1e-8, 1e-8, 1e-8), (200.0, 200.0, 201.0)]


def _ref(k, va, vb):
    with mpmath.workdps(30):
        k, va, vb = (mpmath.mpf(x) for x in (k, va, vb))
        sa, sb, r = mpmath.sqrt(va), mpmath.sqrt(vb), k / mpmath.sqrt(va * vb)
        s = sb * mpmath.sqrt(1 - r * r)
        tau = mpmath.sqrt(1 + s * s)

        def inner(mu):
            return mu * mpmath.ncdf(mu / tau) + s * s * mpmath.npdf(mu / tau) / tau
        val = mpmath.quad(lambda z: sa * z * mpmath.ncdf(sa * z) * inner(r * sb * z) * mpmath.npdf(z),
                          [-mpmath.inf, -3, 0, 3, mpmath.inf])
        scale = mpmath.sqrt(mpmath.quad(lambda z: (sa * z * mpmath.ncdf(sa * z)) ** 2 * mpmath.npdf(z),
                                        [-mpmath.inf, 0, mpmath.inf])
                            * mpmath.quad(lambda z: (sb * z * mpmath.ncdf(sb * z)) ** 2 * mpmath.npdf(z),
                                          [-mpmath.inf, 0, mpmath.inf]))
        return float(val), float(scale)


@pytest.mark.parametrize("k,va,vb", CASES)
def test_gelu_closed_form_against_mpmath(k, va, vb):
    ref, scale = _ref(k, va, vb)
    got = float(gelu_kernel(k, va, vb))
    assert abs(got - ref) <= 1e-14 * scale, (got, ref)


def test_gelu_act_map_uses_the_closed_form():
    """Act('gelu').kernel_entry is the closed form (vectorised, one call over an array)."""
    rng = np.random.default_rng(0)
    va, vb = rng.uniform(0.1, 4, 50), rng.uniform(0.1, 4, 50)
    k = rng.uniform(-1, 1, 50) * np.sqrt(va * vb)
    assert np.array_equal(Act("gelu").kernel_entry(k, va, vb), gelu_kernel(k, va, vb))
