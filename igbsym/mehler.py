"""Mehler's series of a smooth activation's correlation map at a fixed small q, and its iteration over layers.

For (u, u') ~ N(0, q[[1, c], [c, 1]]) Mehler's formula gives E[φ(u)φ(u')] = Σ_k c^k q^k A_k²/k!, A_k = E φ^(k)(√q Z)
(A_0 = E φ). At a fixed q the block map c' = P/S is therefore the power series F(c) = Σ_k b_k c^k with
b_k = q^k A_k²/(k! S) >= 0 and Σ_k b_k = 1 (S = E φ² is the same series at c = 1).

depth.gamma's block with RMSNorm after φ keeps q = σ_w² at every layer (norm-placement-bn-ln.txt Sec. 4.1.3: the
no-norm law at a reset scale). For GELU and SiLU (φ(0) = 0, φ'(0) = 1/2) the map at small q is the identity up
to O(q): b_1 = 1 − O(q), so about 1/q layers pass before c settles and the layer-by-layer route, a nested
quadrature per layer, costs ~1/q nested quadratures. Here the layers are iterations
of a polynomial whose coefficients come, once per q, from the Taylor series of φ at 0:

    A_k = Σ_j φ^(k+2j)(0) q^j/(2^j j!)      (E Z^(2j) = (2j − 1)!!),

with the exact derivatives at 0: GELU = x/2 + (1/√(2π)) Σ_m (−1)^m x^(2m+2)/(2^m m!(2m + 1)) (Φ's series); SiLU =
x/2 + (x/2)·tanh(x/2), φ^(2n)(0) = (2^(2n) − 1) B_2n (tanh's Bernoulli series). φ − x/2 is even for both, so
A_k = 0 for odd k >= 3 and A_1 = 1/2. SiLU's series in j is asymptotic (tanh has poles at ±iπ): its terms shrink
until j ≈ π²/(2q) and the error of the truncated sum is below e^(−π²/(2q)) (< 1e-200 at q <= Q_MAX).
"""
from __future__ import annotations

import math
from functools import lru_cache

import mpmath

from .activations import ACTIVATIONS as ENTRIES, get as entry
from .errors import NumericalError

# the activations with exact derivatives at 0 on their entry (φ(0) = 0, φ − φ'(0)x even: GELU, SiLU)
ACTIVATIONS = tuple(n for n, act in ENTRIES.items() if act.derivative_at_zero is not None)
Q_MAX = 0.01           # σ_w <= 0.1: here e^(−π²/(2q)) < 1e-214 and the series in k needs <= ~80 terms at 100 digits
GUARD = 15             # extra digits for the coefficients (the alternating sums in j)


def _derivative_at_zero(name: str, n: int):
    """φ^(n)(0) at the working precision: the entry's exact ``derivative_at_zero`` (igbsym.activations)."""
    return entry(name).derivative_at_zero(n)


def _gauss_derivative(name: str, k: int, q, tol):
    """A_k = E φ^(k)(√q Z) = Σ_j φ^(k+2j)(0) q^j/(2^j j!), summed until a term changes q^k A_k²/k! by less than
    ``tol``·q/4 (S >= q A_1² = q/4: ``tol`` relative to S); raises NumericalError if SiLU's asymptotic terms turn to
    grow before that."""
    total, j = mpmath.mpf(0), 0
    turn = k + mpmath.mpf(entry(name).strip) ** 2 / (2 * q)   # beyond it the terms of φ with poles at
    #                                                                       ±i·strip grow (SiLU; GELU's keep falling)
    scale = q**k / mpmath.factorial(k)
    while True:
        term = _derivative_at_zero(name, k + 2 * j) * q**j / (2**j * mpmath.factorial(j))
        total += term
        if j and (2 * abs(total) + abs(term)) * abs(term) * scale <= tol * q / 4:
            return total
        if j > turn:
            raise NumericalError(f"Mehler series of {name} at q = {mpmath.nstr(q, 5)}: the Taylor sum of "
                                 f"E phi^({k}) does not reach the precision (q <= {Q_MAX} is covered)")
        j += 1


@lru_cache(maxsize=256)
def coefficients(name: str, q, dps: int) -> tuple:
    """(b_0, b_1, ..., b_K) at ``dps`` digits for φ = ``name`` at second moment ``q`` (an mpf or float; cached), the
    series truncated where the tail is below 10^(−dps − 5) of S. Only even k >= 2 and k = 0, 1 are nonzero."""
    if name not in ACTIVATIONS:
        raise ValueError(f"Mehler coefficients are implemented for {', '.join(ACTIVATIONS)}, not {name}")
    with mpmath.workdps(dps + GUARD):
        q = mpmath.mpf(q)
        if not 0 < q <= Q_MAX:
            raise ValueError(f"Mehler route: q = {mpmath.nstr(q, 5)} outside (0, {Q_MAX}]")
        tol = mpmath.mpf(10) ** (-(dps + GUARD))
        terms, k, fact = [], 0, mpmath.mpf(1)
        while True:
            A = _gauss_derivative(name, k, q, tol)
            terms.append(q**k * A * A / fact)
            total = mpmath.fsum(terms)
            # the terms of even k >= 2 fall by ~ q·k/π² a step (SiLU) or faster (GELU): stop once one is negligible
            if k >= 2 and k % 2 == 0 and terms[-1] <= tol * total:
                break
            k += 1
            fact *= k
        return tuple(+(t / total) for t in terms)


def np_path(name: str, q: float, L: int) -> list:
    """c_l, l = 1..L, from c_0 = 0 at a fixed q (floats). The increment g(c) = F(c) − c = b_0 − δ c + Σ_(k>=2) b_k c^k,
    δ = 1 − b_1 = b_0 + Σ_(k>=2) b_k (a sum, no cancellation), is added with Kahan's compensation, so the rounding of
    ~1/q near-identity steps does not accumulate."""
    b = [float(v) for v in coefficients(name, float(q), 30)]
    b0, high = b[0], b[2:][::-1]
    delta = b0 + math.fsum(b[2:])
    c, comp, out = 0.0, 0.0, []
    for _ in range(L):
        h = 0.0
        for bk in high:
            h = h * c + bk
        g = b0 - delta * c + h * c * c
        y = g - comp
        t = c + y
        comp = (t - c) - y
        c = t
        out.append(c)
    return out


def mp_path(name: str, q, L: int, last: bool = False) -> list:
    """c_l at the working precision: F iterated in fixed point (Python integers scaled by 2^P) with P bits enough that
    the L·K roundings of 2^−P stay below 10^−(dps+3) of c_1 = b_0 (the smallest c); returns [c_L] if ``last``."""
    dps = mpmath.mp.dps
    b = coefficients(name, q, dps)
    bits = int((dps + 3) * math.log2(10) + math.log2(L * len(b) + 1) - float(mpmath.log(b[0], 2))) + 16
    with mpmath.workprec(bits + 64):      # floor at the working precision rounded b_1 ≈ 1 to ~dps digits: 1e-31 a layer
        B = [int(mpmath.floor(mpmath.ldexp(v, bits))) for v in b][::-1]
    C, out = 0, []
    for _ in range(L):
        acc = 0
        for Bk in B:
            acc = Bk + ((acc * C) >> bits)
        C = acc
        if not last:
            out.append(mpmath.ldexp(mpmath.mpf(C), -bits))
    return out if not last else [mpmath.ldexp(mpmath.mpf(C), -bits)]
