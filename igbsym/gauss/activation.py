"""E φ(σZ) and Var φ(σZ), Z ~ N(0, 1), of a smooth activation, from its entry in ``igbsym.activations`` alone.

Everything is derived from the entry's SymPy expression and callables, so a new smooth activation needs no table:
- near 0 the deviation d(x) = φ(x) − φ(0) is its Taylor series (SymPy, exact coefficients, |x| < SERIES_X), so
  neither d nor its even part (d(x) + d(−x))/2 loses digits where φ(0) ≠ 0 or φ is nearly odd (the cancellations
  that cost 5.8e-4 relative at σ = 1e-6 when Var was formed as E φ² − (E φ)²);
- the mean is φ(0) + E[even part of d], the variance E d² − (E d)² (the subtracted part is O(σ²) of the first as
  σ → 0, at most a third of it where φ'(0) = 0: no cancellation);
- for σ > SPLIT_FROM the far field φ∞(x) = c₊x + b₊ (x > 0), c₋x + b₋ (x < 0) (SymPy limits) is integrated in
  closed form and the remainder r = φ − φ∞, exponentially small in |x| (checked at |x| = 45), on a fixed x-grid:
  Var φ = Var φ∞ + 2 Cov(φ∞, r) + Var r with Var φ∞ = σ²[(c₊² + c₋²)/2 − (c₊ − c₋)²/(2π)] +
  σ(c₊ + c₋)(b₊ − b₋)/√(2π) + (b₊ − b₋)²/4 — a cost independent of σ and no overflow before the value's own.
An activation without such a far field keeps the σ-dependent z-grid up to σ = PLAIN_SIGMA_MAX and is refused beyond.
NumPy: relative error <= 1e-12 for every σ whose value is a normal double (values below the normal range raise
NumericalError: a subnormal carries fewer than 53 bits); mpmath: the same identities at the working precision
(d near 0 at the extra precision its cancellation needs), the reference route.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import mpmath
import numpy as np
import sympy as sp

from .. import activations as acts
from ..errors import InputError, NumericalError
from .rules import normal_nodes
from .univariate import SPLIT_FROM, X_FIXED, X_MAX, Z_FIXED, mp_density, mp_expect

SERIES_X = 0.1         # |x| below which d(x) is its Taylor series
SERIES_ORDER = 18      # terms of the series: (0.1/(π/2))^19 < 1e-22 relative for a strip >= π/2
PLAIN_SIGMA_MAX = 100.0   # the σ-dependent z-grid's range (1e-12: gauss.univariate.EXPECT_ERROR)
NORMAL_MIN = 2.2250738585072014e-308
GUARD = 12             # extra mpmath digits for the moment identities
_SQ2PI = math.sqrt(2 * math.pi)


@dataclass(frozen=True)
class Far:
    """φ(x) ≈ c₊x + b₊ (x → +∞), c₋x + b₋ (x → −∞), exact (SymPy) values."""

    cp: sp.Expr
    cm: sp.Expr
    bp: sp.Expr
    bm: sp.Expr

    def floats(self) -> tuple:
        return tuple(float(v) for v in (self.cp, self.cm, self.bp, self.bm))

    def mps(self) -> tuple:
        return tuple(mpmath.mpf(str(sp.N(v, mpmath.mp.dps + 10))) for v in (self.cp, self.cm, self.bp, self.bm))


@dataclass(frozen=True)
class Entry:
    """The derived numerics of one smooth activation (module docstring)."""

    name: str
    phi0: sp.Expr           # φ(0), exact
    series: tuple           # exact Taylor coefficients c_1 … c_K of d(x) = φ(x) − φ(0)
    far: Far | None


def _expression(name: str) -> sp.Expr:
    act = acts.get(name)
    if act.kinked:
        raise InputError(f"activation {name}: not smooth; its Gaussian moments come from its slope or the entry's "
                         "exact overrides (mean_exact, var_exact)")
    expr = act.expr.rewrite(sp.erf)   # Phi -> erf: SymPy's series and limits know erf
    if expr.free_symbols - {acts.x_}:
        raise InputError(f"activation {name}: the expression depends on parameters "
                         f"{sorted(map(str, expr.free_symbols - {acts.x_}))}; the generic moments need φ(x) alone")
    return expr


def far_field(name: str) -> Far | None:
    """The affine far field of φ (module docstring), or None where φ has none with a remainder x³r(x) → 0 at ±∞."""
    return entry(name).far


def _far(expr) -> Far | None:
    x = acts.x_
    try:
        cp, cm = (sp.limit(expr / x, x, end) for end in (sp.oo, -sp.oo))
        if not (cp.is_finite and cm.is_finite):
            return None
        bp, bm = sp.limit(expr - cp * x, x, sp.oo), sp.limit(expr - cm * x, x, -sp.oo)
        if not (bp.is_finite and bm.is_finite):
            return None
        for end, c, b in ((sp.oo, cp, bp), (-sp.oo, cm, bm)):
            if sp.limit(x**3 * (expr - c * x - b), x, end) != 0:
                return None
    except (NotImplementedError, ValueError, TypeError):
        return None
    return Far(cp, cm, bp, bm)


@lru_cache(maxsize=None)
def entry(name: str) -> Entry:
    """The derived numerics of activation ``name`` (cached per process)."""
    expr = _expression(name)
    x = acts.x_
    poly = sp.series(expr, x, 0, SERIES_ORDER + 1).removeO()
    series = tuple(poly.coeff(x, k) for k in range(1, SERIES_ORDER + 1))
    far = _far(expr)
    if far is not None:     # the remainder must be negligible at the end of the x-grid (exponential decay)
        f = acts.get(name).numpy
        cp, cm, bp, bm = far.floats()
        tails = (float(f(np.float64(X_MAX), 0.0, 0.0)) - (cp * X_MAX + bp),
                 float(f(np.float64(-X_MAX), 0.0, 0.0)) - (-cm * X_MAX + bm))
        if max(abs(t) for t in tails) > 1e-15 * max(1.0, abs(bp), abs(bm)):
            far = None
    return Entry(name, expr.subs(x, 0), series, far)


# --- NumPy ---------------------------------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def _float_series(name: str) -> tuple:
    e = entry(name)
    return float(e.phi0), np.array([float(c) for c in e.series])


def _horner(coeffs, x):
    out = np.zeros_like(x)
    for c in coeffs[::-1]:
        out = out * x + c
    return out


def _deviation_over_sigma(name, sigma, z):
    """d(σz)/σ (rows σ [n, 1], nodes z [m]) without underflow at tiny σ."""
    f = acts.get(name).numpy
    phi0, c = _float_series(name)
    x = sigma * z
    near = np.abs(x) < SERIES_X
    with np.errstate(all="ignore"):
        direct = (f(x, 0.0, 0.0) - phi0) / sigma
    return np.where(near, z * _horner(c, x), direct)


def _even_over_sigma(name, sigma, z):
    """(d(σz) + d(−σz))/(2σ): the part of d whose Gaussian mean is not 0 by symmetry."""
    f = acts.get(name).numpy
    phi0, c = _float_series(name)
    x = sigma * z
    even = c[1::2]                      # c_2, c_4, ...: d's even part is x² Σ c_{2k} x^{2k−2}
    with np.errstate(all="ignore"):
        direct = ((f(x, 0.0, 0.0) - phi0) + (f(-x, 0.0, 0.0) - phi0)) / (2 * sigma)
    return np.where(np.abs(x) < SERIES_X, z * x * _horner(even, x * x), direct)


def _far_parts(name, sigma):
    """For σ > SPLIT_FROM (rows [n]): (E φ∞, Var φ∞, E r, E r², E φ∞ r) with r = φ − φ∞ on the fixed x-grid."""
    cp, cm, bp, bm = entry(name).far.floats()
    f = acts.get(name).numpy
    x, w = X_FIXED
    far = np.where(x > 0, cp * x + bp, cm * x + bm)
    r = f(x, 0.0, 0.0) - far
    s = sigma[:, None]
    dens = np.exp(-(x / s) ** 2 / 2) / (s * _SQ2PI) * w
    er, er2, efr = (r * dens).sum(-1), (r * r * dens).sum(-1), (far * r * dens).sum(-1)
    A = (cp * cp + cm * cm) / 2 - (cp - cm) ** 2 / (2 * math.pi)
    with np.errstate(over="ignore"):
        mean_far = (cp - cm) * sigma / _SQ2PI + (bp + bm) / 2
        var_far = sigma * (sigma * A + (cp + cm) * (bp - bm) / _SQ2PI) + (bp - bm) ** 2 / 4
    return mean_far, var_far, er, er2, efr


def _rows(sigma):
    sigma = np.asarray(sigma, float)
    return sigma, sigma.ravel()


def mean_np(name: str, sigma) -> np.ndarray:
    """E φ(σZ), vectorised over σ (each row its scalar value)."""
    if acts.get(name).odd:
        return 0 * np.asarray(sigma, float)
    sigma, flat = _rows(sigma)
    phi0 = _float_series(name)[0]
    out = np.empty(flat.shape)
    near, far_rows = _split(name, flat)
    if near.any():
        s = flat[near]
        dev = s * _z_sums(s, lambda rows, z: _even_over_sigma(name, rows, z))
        _check_normal(name, "E[phi]", dev, phi0)
        out[near] = phi0 + dev
    if far_rows.any():
        mean_far, _, er, _, _ = _far_parts(name, flat[far_rows])
        out[far_rows] = mean_far + er
    return _shaped(out, sigma)


def var_np(name: str, sigma) -> np.ndarray:
    """Var φ(σZ), vectorised over σ (module docstring)."""
    sigma, flat = _rows(sigma)
    out = np.empty(flat.shape)
    near, far_rows = _split(name, flat)
    if near.any():
        s = flat[near]
        second = _z_sums(s, lambda rows, z: _deviation_over_sigma(name, rows, z) ** 2)
        mean = 0.0 if acts.get(name).odd else _z_sums(s, lambda rows, z: _even_over_sigma(name, rows, z))
        out[near] = s * (s * (second - mean * mean))
    if far_rows.any():
        mean_far, var_far, er, er2, efr = _far_parts(name, flat[far_rows])
        out[far_rows] = var_far + 2 * (efr - mean_far * er) + (er2 - er * er)
    if (out < 0).any():
        raise NumericalError(f"activation {name}: Var[phi] came out negative ({float(out.min()):.3g})")
    _check_normal(name, "Var[phi]", out, 0.0)
    return _shaped(out, sigma)


def _z_sums(s, integrand):
    """Σ_j w_j g(σ_i, z_j) per row σ_i: the fixed z-grid for σ <= SPLIT_FROM, the σ's own grid (panels <= 0.4/σ)
    above (activations without a far field), so every row equals its scalar call."""
    out = np.empty(s.shape)
    fixed = s <= SPLIT_FROM
    if fixed.any():
        z, w = Z_FIXED
        out[fixed] = (integrand(s[fixed, None], z) * w).sum(-1)
    for i in np.flatnonzero(~fixed):
        z, w = normal_nodes(0.4 / s[i])
        out[i] = (integrand(s[i:i + 1, None], z) * w).sum(-1)[0]
    return out


def _split(name, flat):
    """(rows on a z-grid, rows on the far-field split); refuses σ beyond the z-grid's range without a far field."""
    if entry(name).far is not None:
        return flat <= SPLIT_FROM, flat > SPLIT_FROM
    if (flat > PLAIN_SIGMA_MAX).any():
        raise NumericalError(f"activation {name}: no affine far field with an exponentially small remainder, so "
                             f"its moments are computed for sigma <= {PLAIN_SIGMA_MAX:g} only, got sigma = "
                             f"{float(flat.max()):.3g}")
    return np.ones(flat.shape, bool), np.zeros(flat.shape, bool)


def _check_normal(name, what, value, base):
    """A nonzero value below the normal doubles (an underflowed moment) is refused, not returned with a few bits."""
    tiny = (np.abs(value) < NORMAL_MIN) & (base == 0)
    if tiny.any():
        raise NumericalError(f"activation {name}: {what} at this sigma is below the normal double range "
                             f"({NORMAL_MIN:.3g}); use the mpmath route (igbsym eval ... --dps 30)")


def _shaped(out, sigma):
    out = out.reshape(sigma.shape)
    return out[()] if out.ndim == 0 else out


# --- mpmath (the reference route) ----------------------------------------------------------------------------------
def _mp_deviation(name):
    """x -> d(x) = φ(x) − φ(0) at the working precision, the cancellation near 0 paid with extra digits."""
    f = acts.get(name).mp
    phi0 = entry(name).phi0

    def d(x):
        extra = GUARD + max(0, int(-mpmath.log10(abs(x)))) if x != 0 else 0
        with mpmath.extradps(extra):
            return f(mpmath.mpf(x), 0, 0) - mpmath.mpf(str(sp.N(phi0, mpmath.mp.dps + 10)))
    return d


def _mp_even(name):
    d = _mp_deviation(name)

    def even(x):
        extra = GUARD + max(0, int(-mpmath.log10(abs(x)))) if x != 0 else 0
        with mpmath.extradps(extra):
            return (d(x) + d(-x)) / 2
    return even


def _leading_order(name, even: bool) -> int:
    """The lowest power of x in d (or in its even part, or in d²): the scale of the integral at small σ."""
    coeffs = entry(name).series
    ks = [k for k, c in enumerate(coeffs, start=1) if c != 0 and (k % 2 == 0 or not even)]
    return ks[0] if ks else 2


def _mp_far_parts(name, sigma):
    """(E φ∞, Var φ∞, E r, E r², E φ∞ r) at the working precision (σ > SPLIT_FROM): mpmath.quad of the remainder
    against the N(0, σ²) density with breakpoints on the remainder's own scale."""
    cp, cm, bp, bm = entry(name).far.mps()
    f = acts.get(name).mp
    far = lambda x: cp * x + bp if x > 0 else cm * x + bm  # noqa: E731
    r = lambda x: f(x, 0, 0) - far(x)  # noqa: E731
    dens = mp_density(sigma)
    edges = [mpmath.mpf(2) ** k for k in range(-2, 8)]
    pts = [-mpmath.inf] + [-e for e in reversed(edges)] + [mpmath.mpf(0)] + edges + [mpmath.inf]
    er, er2, efr = (mpmath.quad(lambda x, g=g: g(x) * dens(x), pts)
                    for g in (r, lambda x: r(x) ** 2, lambda x: far(x) * r(x)))
    two_pi = 2 * mpmath.pi
    mean_far = (cp - cm) * sigma / mpmath.sqrt(two_pi) + (bp + bm) / 2
    var_far = sigma**2 * ((cp**2 + cm**2) / 2 - (cp - cm) ** 2 / two_pi) \
        + sigma * (cp + cm) * (bp - bm) / mpmath.sqrt(two_pi) + (bp - bm) ** 2 / 4
    return mean_far, var_far, er, er2, efr


def mean_mp(name: str, sigma):
    """E φ(σZ) at the working precision."""
    if acts.get(name).odd:
        return mpmath.mpf(0)
    with mpmath.extradps(GUARD):
        sigma = mpmath.mpf(sigma)
        if sigma > SPLIT_FROM and entry(name).far is not None:
            mean_far, _, er, _, _ = _mp_far_parts(name, sigma)
            return +(mean_far + er)
        scale = min(sigma ** _leading_order(name, True), 1)
        return +(mpmath.mpf(str(sp.N(entry(name).phi0, mpmath.mp.dps + 10))) + mp_expect(_mp_even(name), sigma, scale))


def var_mp(name: str, sigma):
    """Var φ(σZ) at the working precision."""
    with mpmath.extradps(GUARD):
        sigma = mpmath.mpf(sigma)
        if sigma > SPLIT_FROM and entry(name).far is not None:
            mean_far, var_far, er, er2, efr = _mp_far_parts(name, sigma)
            return +(var_far + 2 * (efr - mean_far * er) + er2 - er * er)
        d = _mp_deviation(name)
        scale = min(sigma ** (2 * _leading_order(name, False)), 1)
        second = mp_expect(lambda x: d(x) ** 2, sigma, scale)
        mean = 0 if acts.get(name).odd else mp_expect(_mp_even(name), sigma, min(sigma ** _leading_order(name, True),
                                                                                1))
        return +(second - mean * mean)

