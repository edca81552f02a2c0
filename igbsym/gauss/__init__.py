"""One module for Gaussian expectations: every family's E[f(σZ)] and every activation's pair moments.

- ``rules``: quadrature nodes (composite Gauss–Legendre, N(0, 1)-weighted nodes, kink-aware panels, Gauss–Hermite;
  mpmath rules accurate to 10^-(dps+8) by their a-priori bounds).
- ``activation``: E φ(σZ) and Var φ(σZ) of an activation entry, cancellation-free for every σ (its Taylor series at
  0, even parts, the affine far field), from the entry alone.
- ``univariate``: E[f(σZ)] of any integrand (NumPy and mpmath) and the moments
  of an activation on u ~ N(0, q) (E φ, E φ², Var φ, E φ'(u)², small-q Taylor limits).
- ``bivariate``: the pair moments of an activation for two inputs with correlation c (S, P, V, M, D: the layer map),
  E[φ(u)φ(v)] for unequal variances over many pairs (the dataset kernel's activation map), and the bivariate
  normal cdf Φ₂ (``bvn_cdf``, Owen's T) of the multiclass law.

Stated error (tests/test_spec.py, tests/test_domain_regressions.py compare with nested mpmath quadrature;
tests/test_multiclass.py Φ₂ with mpmath): NumPy relative error <= 1e-12 for one-dimensional expectations (σ <= 100;
activation moments q <= 1e300) and <= 1e-11 per layer for the pair moments (q <= 100); mpmath routes to the working
precision.
"""
from .bivariate import KERNEL_ERROR, QUAD_ERROR, Q_LINEAR, TAYLOR_S, bvn_cdf, pair_kernel_np, pair_mp, pair_np
from .rules import (X_KINK, Z_MAX, composite_gauss_kronrod, composite_gauss_legendre, gauss_legendre, kink_nodes,
                    mp_hermite, normal_nodes)
from .univariate import (EXPECT_ERROR, Q_MAX, Q_MAX_1D, SMALL_SD, check_q, derivative_moment_mp,
                         derivative_moment_np, expect, moments_mp, moments_np, mp_expect)

__all__ = ["KERNEL_ERROR", "bvn_cdf", "pair_kernel_np",
           "QUAD_ERROR", "Q_LINEAR", "TAYLOR_S", "pair_mp", "pair_np", "X_KINK", "Z_MAX", "composite_gauss_kronrod",
           "composite_gauss_legendre",
           "gauss_legendre", "kink_nodes", "mp_hermite", "normal_nodes", "EXPECT_ERROR", "Q_MAX", "Q_MAX_1D",
           "SMALL_SD", "check_q", "derivative_moment_mp", "derivative_moment_np", "expect", "moments_mp",
           "moments_np", "mp_expect"]


def clear_caches() -> None:
    """Empty the memoised moments (benchmarks time cold evaluations)."""
    from . import bivariate, hermite, univariate
    bivariate.clear_cache()
    hermite.basis.cache_clear()
    univariate.moments_mp.cache_clear()
    univariate.derivative_moment_np.cache_clear()
