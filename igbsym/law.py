"""Working with the law of G0: sampling and the regime of an architecture's γ.

x = Φ⁻¹(G0) ~ N(0, γ) (igb-initial-guessing-bias.txt, Sec. 4 / App. D), so sampling is G0 = Φ(√γ Z).

Regimes (the talk slides' names; thresholds are ours, fixed from the law):
- ``neutral``: γ ≤ GAMMA_NEUTRAL, i.e. P(G0 ∉ [0.1, 0.9]) ≤ 1 %: at most 1 network in 100 puts more than 90 % of a
  balanced dataset in one class. GAMMA_NEUTRAL = (Φ⁻¹(0.1)/Φ⁻¹(0.005))² ≈ 0.2476 solves 2Φ(Φ⁻¹(0.1)/√γ) = 0.01.
- ``weak prejudice``: GAMMA_NEUTRAL < γ ≤ 1: f(g; γ) still has its single mode at g = 1/2 (the exponent
  (1 − 1/γ)x²/2 is ≤ 0), but a visible fraction of networks is strongly biased.
- ``deep prejudice``: γ > 1: f is U-shaped, diverging at g → 0 and 1 (the exponent is positive): a typical network
  puts most of the data in one class. γ = 1 is the uniform law, the boundary.
"""
from __future__ import annotations

import numpy as np
from scipy import special

from .errors import InputError

GAMMA_NEUTRAL = float((special.ndtri(0.1) / special.ndtri(0.005)) ** 2)
REGIMES = ("neutral", "weak prejudice", "deep prejudice")


def _check_gamma(gamma) -> np.ndarray:
    g = np.asarray(gamma, dtype=float)
    if np.isnan(g).any() or (g < 0).any():
        raise InputError(f"gamma={gamma!r} is not allowed; allowed: a real number >= 0 (or inf)")
    return g


def regime(gamma) -> str:
    """'neutral' | 'weak prejudice' | 'deep prejudice' for a scalar γ (thresholds in the module docstring)."""
    g = float(_check_gamma(gamma))
    if g <= GAMMA_NEUTRAL:
        return REGIMES[0]
    return REGIMES[1] if g <= 1 else REGIMES[2]


def sample(gamma, size, rng: np.random.Generator | None = None) -> np.ndarray:
    """Draw G0 ~ f(·; γ) as Φ(√γ Z), Z ~ N(0, 1); γ = ∞ gives 0 or 1 with probability 1/2 each."""
    g = float(_check_gamma(gamma))
    rng = np.random.default_rng() if rng is None else rng
    z = rng.standard_normal(size)
    if np.isinf(g):
        return (z > 0).astype(float)
    return special.ndtr(np.sqrt(g) * z)
