"""The standard-normal special functions igbsym uses, as SymPy functions with stable numeric kernels.

``Phi`` (the N(0,1) CDF) and ``PhiInv`` (its inverse) keep the papers' notation in printed expressions
while lambdify maps them to SciPy's ``ndtr`` / a symmetric ``ndtri`` (accurate in both tails) and mpmath's
``ncdf`` / an ``erfinv``-based inverse. ``rewrite(sp.erf)`` turns them into elementary SymPy for proofs.
"""
import mpmath
import numpy as np
import sympy as sp
from mpmath.libmp import prec_to_dps
from scipy import special


class Phi(sp.Function):
    """Standard normal CDF Φ(x) = (1 + erf(x/√2))/2."""

    nargs = 1

    @classmethod
    def eval(cls, x):
        if x is sp.S.Zero:
            return sp.S.Half
        if x is sp.S.Infinity:
            return sp.S.One
        if x is sp.S.NegativeInfinity:
            return sp.S.Zero
        if isinstance(x, PhiInv):
            return x.args[0]
        if x.could_extract_minus_sign():
            return 1 - Phi(-x)  # canonical form: Φ(−x) = 1 − Φ(x)
        return None

    def fdiff(self, argindex=1):
        x = self.args[0]
        return sp.exp(-x**2 / 2) / sp.sqrt(2 * sp.pi)

    def _eval_rewrite_as_erf(self, x, **kwargs):
        return (1 + sp.erf(x / sp.sqrt(2))) / 2

    def _eval_evalf(self, prec):
        return self.rewrite(sp.erf).evalf(prec_to_dps(prec))

    def _eval_is_positive(self):
        return self.args[0].is_extended_real

    def _latex(self, printer, exp=None):
        s = r"\Phi\left(%s\right)" % printer._print(self.args[0])
        return s if exp is None else r"%s^{%s}" % (s, exp)


class PhiInv(sp.Function):
    """Standard normal quantile Φ⁻¹(p) = √2 erfinv(2p − 1), for 0 < p < 1."""

    nargs = 1

    @classmethod
    def eval(cls, p):
        if p == sp.S.Half:
            return sp.S.Zero
        if isinstance(p, Phi):
            return p.args[0]
        if (2 * p - 1).could_extract_minus_sign() and p.free_symbols:
            return -PhiInv(1 - p)  # canonical form: Φ⁻¹(1 − p) = −Φ⁻¹(p)
        return None

    def fdiff(self, argindex=1):
        return sp.sqrt(2 * sp.pi) * sp.exp(PhiInv(self.args[0]) ** 2 / 2)

    def _eval_rewrite_as_erfinv(self, p, **kwargs):
        return sp.sqrt(2) * sp.erfinv(2 * p - 1)

    def _eval_evalf(self, prec):
        return self.rewrite(sp.erfinv).evalf(prec_to_dps(prec))

    def inverse(self, argindex=1):
        return Phi

    def _latex(self, printer, exp=None):
        s = r"\Phi^{-1}\left(%s\right)" % printer._print(self.args[0])
        return s if exp is None else r"\left(%s\right)^{%s}" % (s, exp)


class BetaReg(sp.Function):
    """Regularised incomplete beta function I_x(a, b) = B(x; a, b)/B(a, b), for a, b > 0 and 0 <= x <= 1.

    SymPy's own ``betainc_regularized`` is used for proofs (``rewrite(sp.betainc_regularized)``); this class exists
    because SymPy 1.14 lambdifies that function wrongly to SciPy (a missing parenthesis) and not at all to mpmath.
    """

    nargs = 3

    def fdiff(self, argindex=3):
        a, b, x = self.args
        if argindex != 3:
            raise sp.ArgumentIndexError(self, argindex)
        return x**(a - 1) * (1 - x)**(b - 1) / sp.beta(a, b)

    def _eval_rewrite_as_betainc_regularized(self, a, b, x, **kwargs):
        return sp.betainc_regularized(a, b, 0, x)

    def _latex(self, printer, exp=None):
        s = r"I_{%s}\left(%s, %s\right)" % tuple(printer._print(v) for v in (self.args[2], *self.args[:2]))
        return s if exp is None else r"\left(%s\right)^{%s}" % (s, exp)


def mp_betainc_reg(a, b, x):
    """I_x(a, b) in mpmath at the working precision."""
    return mpmath.betainc(a, b, 0, x, regularized=True)


def ndtri_nearer(p):
    """Φ⁻¹(min(p, 1 − p)) = −|Φ⁻¹(p)|, an ndarray in a new buffer: the quantile from the nearer tail, where ndtri keeps
    full relative accuracy (1 − p is exact for p ≥ 1/2, Sterbenz)."""
    p = np.asarray(p, dtype=float)
    x = np.subtract(1.0, p, out=np.empty(p.shape))
    np.minimum(p, x, out=x)
    return special.ndtri(x, out=x)


def ndtri_symmetric(p):
    """Φ⁻¹(p) evaluated from the nearer tail, so p close to 1 keeps full relative accuracy in 1 − p."""
    p = np.asarray(p, dtype=float)
    x = ndtri_nearer(p)
    return np.copysign(x, p - 0.5, out=x)  # the sign of p − 1/2 (exact); x = 0 at p = 1/2


_MP_ASYMPTOTIC_FROM = 10**6  # mpmath's erfc raises OverflowError for |x| beyond ~1e150; the series is used above 1e6


def mp_ncdf(x):
    """Φ(x) in mpmath at the working precision for every real x (mpmath.ncdf raises OverflowError for |x| ≳ 1e150).

    For |x| >= 1e6 the lower tail is φ(x)/|x| Σ_k (-1)^k (2k-1)!!/x^{2k}: the terms fall by (2k+1)/x² <= 1e-9 each
    for the few hundred terms any precision up to MAX_DPS needs, so the truncation error is below the last term.
    """
    x = mpmath.mpf(x)
    if mpmath.isinf(x):
        return mpmath.mpf(1 if x > 0 else 0)
    if abs(x) < _MP_ASYMPTOTIC_FROM:
        return mpmath.ncdf(x)
    if x > 0:
        return 1 - mp_ncdf(-x)
    x2, term, total, k = x * x, mpmath.mpf(1), mpmath.mpf(1), 0
    eps = mpmath.eps
    while abs(term) > eps * abs(total):
        k += 1
        term = -term * (2 * k - 1) / x2
        total += term
    return mpmath.npdf(x) / -x * total


def mp_log_ncdf(x):
    """log Φ(x) in mpmath at full relative precision for every real x: log of ``mp_ncdf`` in the lower half, and
    log1p(−Φ(−x)) in the upper half, where Φ(x) itself would round to 1 (log Φ(30) = −4.9e-198)."""
    x = mpmath.mpf(x)
    return mpmath.log(mp_ncdf(x)) if x <= 0 else mpmath.log1p(-mp_ncdf(-x))


def mp_ncdf_inv(p):
    """Φ⁻¹(p) in mpmath at the working precision for every 0 < p < 1 (full relative accuracy in both tails).

    Newton on log Φ(x) = log p from the nearer tail (Φ⁻¹(p) = -Φ⁻¹(1 - p) for p > 1/2; 1 - p is exact for a p
    given as a double), starting from the asymptotic x ≈ -sqrt(2 log(1/p)); quadratic convergence.
    """
    p = mpmath.mpf(p)
    if p == mpmath.mpf(1) / 2:
        return mpmath.mpf(0)
    if p > mpmath.mpf(1) / 2:
        with mpmath.extraprec(mpmath.mp.prec + 64):
            q = 1 - p
        return -mp_ncdf_inv(q)
    with mpmath.extraprec(30):
        logp = mpmath.log(p)
        x = mpmath.sqrt(2) * mpmath.erfinv(2 * p - 1) if p > mpmath.mpf("1e-10") else -mpmath.sqrt(-2 * logp)
        for _ in range(200):
            step = (mpmath.log(mp_ncdf(x)) - logp) * mp_ncdf(x) / mpmath.npdf(x)
            x -= step
            if abs(step) <= mpmath.eps * abs(x) * 4:
                break
    return +x


NUMPY_MODULES = [{"Phi": special.ndtr, "PhiInv": ndtri_symmetric, "BetaReg": special.betainc}, "scipy", "numpy"]
MPMATH_MODULES = [{"Phi": mp_ncdf, "PhiInv": mp_ncdf_inv, "BetaReg": mp_betainc_reg}, "mpmath"]
