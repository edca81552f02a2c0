"""The law of one BatchNorm output that ops and the BN family share: a stable Γ-ratio and the canonical ReLU moments.

Paper: norm-placement-bn-ln.txt App. E. torch's BatchNorm1d in training mode (eps → 0) maps an i.i.d. Gaussian batch
of B to z with z²/(B−1) ~ Beta(1/2, (B−2)/2) (derivations/bn.py); E ReLU(z) = √(B−1) Γ((B−1)/2)/(2√π Γ(B/2)),
E ReLU(z)² = 1/2, and γ of BN + ReLU is E[ReLU(z)]²/Var[ReLU(z)] at every depth (Thm E.1).
"""
import numpy as np
import sympy as sp
from scipy import special

B = sp.Symbol("B", integer=True)
half = sp.S.Half

# Stable Γ(z + 1/2)/Γ(z) for the NumPy kernels.
# log Γ(z+1/2) − log Γ(z) ~ ½ log z + Σ_k (B_{k+1}(½) − B_{k+1}) / (k(k+1) z^k), k odd (Bernoulli polynomials).
_LOG_RATIO_COEFFS = [(k, float((sp.bernoulli(k + 1, half) - sp.bernoulli(k + 1)) / (k * (k + 1))))
                     for k in range(1, 16, 2)]
_ASYMPTOTIC_FROM = 25.0  # first omitted term (k = 17) is < 1e-22 there


def gamma_half_ratio(z):
    """Γ(z + 1/2)/Γ(z) for z > 0 (array): SciPy Γ below z = 25, the Bernoulli asymptotic series above.

    Relative error ≤ 1e-14 for all z > 0 (tests compare with mpmath).
    """
    z = np.asarray(z, dtype=float)
    small = np.minimum(z, _ASYMPTOTIC_FROM)
    direct = special.gamma(small + 0.5) / special.gamma(small)
    big = np.maximum(z, _ASYMPTOTIC_FROM)
    series = sum(c / big**k for k, c in _LOG_RATIO_COEFFS)
    return np.where(z < _ASYMPTOTIC_FROM, direct, np.sqrt(big) * np.exp(series))



CANON_RELU_MEAN = sp.sqrt(B - 1) * sp.gamma((B - 1) / 2) / (2 * sp.sqrt(sp.pi) * sp.gamma(B / 2))
CANON_RELU_VAR = half - CANON_RELU_MEAN**2
CANON_GAMMA = CANON_RELU_MEAN**2 / CANON_RELU_VAR


def canonical_relu_mean(B):
    return np.sqrt(B - 1) / (2 * np.sqrt(np.pi) * gamma_half_ratio((B - 1) / 2))


def canonical_relu_var(B):
    return 0.5 - canonical_relu_mean(B) ** 2


def canonical_relu_gamma(B):
    """γ of BN + ReLU with torch's BatchNorm1d (NumPy, any B >= 2 up to 1e12)."""
    return canonical_relu_mean(B) ** 2 / canonical_relu_var(B)
