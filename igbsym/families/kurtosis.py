"""Kurtosis of deep narrow leaky-ReLU nets, vanishing empirical variance and dead ReLU outputs.

Paper: kurtosis-vanishing-empirical-variance.txt (Grzejdziak, Loog, Tax 2023): Prop. 4.3 (the transition matrix A
acting on k = [kappa_l, c_l, 1]), Lemmas 4.4-4.6 and Thm. 4.7 (growth), Sec. 5 (law of the empirical variance),
App. B (Prop. B.1/B.2, P(y != 0) for ReLU nets). Every form is derived in derivations/kurtosis.py.

Notation: u = (1 + a^4)/(1 + a^2)^2 in [1/2, 1]; in raw-moment coordinates m = (kappa, e), e = 1 + c/sigma2^2 =
E[y_i^2 y_j^2]/sigma2^2, the affine map A is the homogeneous 2x2 map M = [[2u kappa_w/w, 3(w-1)/w], [2u/w, (w-1)/w]],
so kappa_L = lam_+^L (P_+ m_0)_1 + lam_-^L (P_- m_0)_1 with the eigenvalues lam_+- of M and its spectral projectors.
"""
from fractions import Fraction

import mpmath
import numpy as np
import sympy as sp
from scipy import special

from ..form import ClosedForm, Condition, Param, Provenance
from ..numerics import power_product, times_exp
from ..registry import register

THESIS = "kurtosis-vanishing-empirical-variance.txt"

W = Param("w", "integer", "layer width (fan-in of the next layer); w = 1 makes only the kappa row meaningful",
          minimum=1)
A = Param("a", "real", "leaky slope (a = 0 ReLU, a = 1 linear)")
KAPPA_W = Param("kappa_w", "positive", "kurtosis of the weight law (normal 3, uniform 1.8, Rademacher 1)")
SIGMA2 = Param("sigma2", "positive", "variance sigma_x^2 of every unit (preserved by He init, Prop. 3.2)")
L = Param("L", "integer", "number of layers (transitions A) after the input", minimum=0)
KAPPA0 = Param("kappa0", "positive", "kurtosis of the input units (Gaussian: 3)")
C0 = Param("c0", "real", "Cov[x_i^2, x_j^2] of two input units (independent units: 0)")
N = Param("n", "integer", "sample size of the empirical variance", minimum=2)
KAPPA = Param("kappa", "positive", "kurtosis of the sampled law")
EPS = Param("eps", "positive", "threshold on S_n^2/sigma^2")

w, a, kw, s2, ell, k0, c0, n, kap, eps = (p.symbol() for p in (W, A, KAPPA_W, SIGMA2, L, KAPPA0, C0, N, KAPPA, EPS))

U = (1 + a**4) / (1 + a**2) ** 2
P11 = 2 * U * kw / w          # A_11: the fourth-moment (diagonal) term, Lemma 4.1 times E[W^4]
OFF = 3 * (w - 1) / w         # A_12 sigma2^2 = A_13: the 6 C(w,2) pair terms, Lemma 4.2
G21 = 2 * U / w               # A_21 / sigma2^2
D22 = (w - 1) / w             # A_22
MATRIX = sp.ImmutableMatrix([[P11, OFF / s2**2, OFF],
                             [G21 * s2**2, D22, -s2**2 / w],
                             [0, 0, 1]])
TRACE = P11 + D22
DET = sp.factor(P11 * D22 - OFF * G21)
DISC = sp.factor(TRACE**2 - 4 * DET)           # = (P11 - D22)^2 + 4 OFF G21 > 0
LAM_PLUS = (TRACE + sp.sqrt(DISC)) / 2
LAM_MINUS = (TRACE - sp.sqrt(DISC)) / 2
E0 = 1 + c0 / s2**2                           # raw fourth cross-moment E[x_i^2 x_j^2]/sigma2^2


def projected(row: int, sign: int):
    """Row ``row`` of P_(sign) m_0, P_+ = (M - lam_- I)/(lam_+ - lam_-), P_- = (lam_+ I - M)/(lam_+ - lam_-)."""
    lam_other = LAM_MINUS if sign > 0 else LAM_PLUS
    m_row = [(P11, OFF), (G21, D22)][row]
    diag = (k0, E0)[row]
    return sign * (m_row[0] * k0 + m_row[1] * E0 - lam_other * diag) / sp.sqrt(DISC)


KAPPA_AFTER = LAM_PLUS**ell * projected(0, 1) + LAM_MINUS**ell * projected(0, -1)
C_AFTER = s2**2 * (LAM_PLUS**ell * projected(1, 1) + LAM_MINUS**ell * projected(1, -1) - 1)


def _u(a):
    """u = (1 + a^4)/(1 + a^2)^2 without overflow: u(a) = u(1/a), so evaluate at min(|a|, 1/|a|)."""
    a = np.abs(np.asarray(a, float))
    with np.errstate(divide="ignore"):
        b = np.minimum(a, 1 / a)
    return (1 + b**4) / (1 + b * b) ** 2


def _eigen(w, a, kappa_w):
    """lam_+, r = lam_-/lam_+, sqrt(disc), lam_- and delta = lam_+ - 1 in float64 (lam_+ >= 1 on the domain).

    lam_- = det/lam_+ with det = 2u(w-1)(kappa_w-3)/w² in factored form; delta from the characteristic polynomial
    at 1 + delta, delta² + (2 - tr) delta + chi(1) = 0, chi(1) = [w(1-p) - 6u(w-1)]/w², in its stable root form, so
    lam_+^L = exp(L log1p(delta)) keeps relative accuracy when lam_+ = 1 + 1e-20 and L = 1e30.
    """
    u = _u(a)
    q = 2 * u / w
    p, off, g, d = q * kappa_w, 3 * (w - 1) / w, q, (w - 1) / w
    root = np.hypot(p - d, 2 * np.sqrt(off * g))
    lam_p = p / 2 + d / 2 + root / 2
    lam_m = q * (w - 1) * (kappa_w - 3) / w / lam_p
    two_minus_tr = 1 / w - (p - 1)
    chi1 = (1 - p) / w - 3 * q * (w - 1) / w
    # √(t² − 4χ) without squaring t (t² overflowed at κ_w = 1e308, w = 1e30: δ = inf, κ_1 = inf for 1.8e278)
    t, r2 = np.abs(two_minus_tr), 2 * np.sqrt(np.abs(chi1))
    disc = np.where(chi1 <= 0, np.hypot(t, r2), np.sqrt(np.maximum(t - r2, 0.0)) * np.sqrt(t + r2))
    delta = np.where(two_minus_tr > 0, -2 * chi1 / (two_minus_tr + disc), (disc - two_minus_tr) / 2)
    return p, off, g, d, lam_p, lam_m / lam_p, root, lam_m, delta


def _matrix_kernel(w, a, kappa_w, sigma2):
    p, off, g, d = (2 * _u(a) / w * kappa_w, 3 * (w - 1) / w, 2 * _u(a) / w, (w - 1) / w)
    p, off, g, d, s2 = np.broadcast_arrays(p, off, g, d, np.asarray(sigma2, float))
    zero, one = np.zeros(p.shape), np.ones(p.shape)
    rows = [[p, off / s2 / s2, off], [g * s2 * s2, d, -s2 * s2 / w], [zero, zero, one]]
    return np.stack([np.stack(r, axis=-1) for r in rows], axis=-2)


def _after_kernel(row):
    """kappa_L (row 0) or c_L (row 1) as kappa0 lam_+^L [(P_+ m)_row + r^L (P_- m)_row] with the input scaled by
    kappa0, m = (1, e0/kappa0) (e0 <= kappa0 by Cauchy-Schwarz): nothing overflows unless the value does (at
    kappa0 = 1.8e308 the unscaled p kappa0 + off e0 overflowed, giving NaN or -inf where kappa_L = 8.99e307)."""
    def kernel(L, w, a, kappa_w, kappa0, c0, sigma2):
        p, off, g, d, lam_p, r, root, lam_m, delta = _eigen(w, a, kappa_w)
        kappa0, sigma2 = np.asarray(kappa0, float), np.asarray(sigma2, float)
        e = 1 / kappa0 + c0 / sigma2 / sigma2 / kappa0
        first, second = (p + off * e, 1.0) if row == 0 else (g + d * e, e)
        plus = (first - lam_m * second) / root
        minus = (lam_p * second - first) / root
        scaled, log_growth = plus + r**L * minus, L * np.log1p(delta)
        value = times_exp(kappa0 * scaled, log_growth)
        # L = 0 is the input itself (the spectral terms cancel to e0 there: c_0 = 1 came back as -1 at kappa0 = 1.8e308)
        if row == 0:
            return np.where(L == 0, kappa0, value)
        # c_L = sigma2² (e_L - 1); where e_L overflows, c_L ~ sigma2² kappa0 scaled growth may still be a double
        big = times_exp(power_product([(sigma2, 2), (kappa0, 1), (np.abs(scaled), 1)], np.sign(scaled)), log_growth)
        return np.where(L == 0, c0, np.where(np.isfinite(value), sigma2 * (sigma2 * (value - 1)), big))
    return kernel


def _mp_after(row):
    """kappa_L (row 0) or c_L (row 1) in mpmath as M^L m0 by repeated squaring of the raw-moment map M (every entry
    >= 0, m0 >= 0: no cancellation, unlike the spectral form, whose two terms cancel where kappa0 is huge)."""
    def kernel(L, w, a, kappa_w, kappa0, c0, sigma2):
        u = (1 + a**4) / (1 + a * a) ** 2
        mat = mpmath.matrix([[2 * u * kappa_w / w, 3 * (w - 1) / w], [2 * u / w, (w - 1) / w]])
        vec = mpmath.matrix([kappa0, 1 + c0 / sigma2**2])
        n = int(L)
        while n:
            if n & 1:
                vec = mat * vec
            mat, n = mat * mat, n >> 1
        return vec[0] if row == 0 else sigma2**2 * (vec[1] - 1)
    return kernel


def _excess(n, kappa):
    """kappa - (n-3)/(n-1) = (kappa - 1) + 2/(n-1) without the cancellation at kappa = 1 and large n."""
    return (kappa - 1) + 2 / (n - 1)


_LARGE_SHAPE = 1e4   # shape beyond which SciPy's gammainc loses digits (1e-10 at s = 1e6, all of them at 1e12)
_Y_EDGES = np.array([0.0, 1, 2, 4, 8, 16, 32, 64])
_Y_NODES, _Y_WEIGHTS = (np.polynomial.legendre.leggauss(16))


def _excess_exp(d):
    """e^d - 1 - d without cancellation (series below |d| = 0.1: 14 terms, next < 1e-17 relative)."""
    d = np.asarray(d, dtype=float)
    small = np.minimum(np.abs(d), 0.1) * np.sign(d)
    term, series = small * small / 2, 0.0
    for k in range(3, 17):
        series, term = series + term, term * small / k
    return np.where(np.abs(d) < 0.1, series, np.expm1(d) - d)


def _p_small_large_shape(eps, s):
    """P(s, s eps) for s > 1e4 by the integral of _mp_p_small in double: log C = ½ log(s/2π) - 1/(12s) + 1/(360s³)
    (Stirling; next term < 1e-18), the drop from the endpoint on the fixed panels [0, 1, 2, ..., 64] of y (16-point
    Gauss-Legendre each: the integrand is entire and decays at least like e^{-y} from y = 1 on, so the part beyond
    64 is < e^{-63}). Relative error <= 1e-13 where the value is above 1e-300 (the exponent s g(L) <= 700
    carries 700 ulp)."""
    L = np.log(eps)
    e1 = np.expm1(L)
    gL = _excess_exp(L)
    with np.errstate(divide="ignore"):
        step = np.minimum(1 / np.sqrt(s), 1 / (s * np.abs(e1)))
    direction = np.where(eps <= 1, -1.0, 1.0)
    mid, half = (_Y_EDGES[1:] + _Y_EDGES[:-1]) / 2, (_Y_EDGES[1:] - _Y_EDGES[:-1]) / 2
    y = (mid[:, None] + half[:, None] * _Y_NODES).ravel()
    w = (half[:, None] * _Y_WEIGHTS).ravel()
    d = (direction * step)[..., None] * y
    drop = s[..., None] * (e1[..., None] * d + np.exp(L)[..., None] * _excess_exp(d))
    log_c = 0.5 * np.log(s / (2 * np.pi)) - 1 / (12 * s) + 1 / (360 * s**3)
    part = np.exp(log_c - s * gL) * step * (np.exp(-drop) @ w)
    return np.where(eps <= 1, part, 1 - part)


def _p_small_kernel(eps, n, kappa):
    shape = n / _excess(n, kappa)
    eps, shape = np.broadcast_arrays(np.asarray(eps, dtype=float), np.asarray(shape, dtype=float))
    large = shape > _LARGE_SHAPE
    out = special.gammainc(shape, shape * eps)
    if large.any():
        out = np.array(out, dtype=float)
        out[large] = _p_small_large_shape(eps[large], shape[large])
    return out


_MP_GAMMAINC_TO = 1000  # shape up to which mpmath.gammainc is used (beyond, its series stops converging near x = s)


def _mp_p_small(eps, n, kappa):
    """P(s, s·eps) = γ(s, s eps)/Γ(s), s = n/(kappa - (n-3)/(n-1)), in mpmath. For s > 1000 (mpmath.gammainc raises
    NoConvergence from s ≈ 1e5 near x = s) the defining integral in v = log(t/s):

        P = C ∫_{-∞}^{log eps} exp(-s g(v)) dv,  g(v) = e^v - 1 - v >= 0,  C = s^s e^{-s}/Γ(s),

    (and 1 - C ∫_{log eps}^{∞} for eps > 1), integrated from the endpoint L = log eps outwards on the scale
    l = min(1/√s, 1/(s |e^L - 1|)) of the integrand there, with the drop s[g(L + d) - g(L)] = s[(e^L - 1) d +
    e^L (e^d - 1 - d)] written as a sum of two non-negative terms (no cancellation), at log2(s (1 + g(L))) extra
    bits for the exponent of size s g(L) and for C."""
    s = n / ((kappa - 1) + 2 / (n - 1))
    if s <= _MP_GAMMAINC_TO:
        return mpmath.gammainc(s, 0, s * eps, regularized=True)
    lower = eps <= 1
    L = mpmath.log(eps)
    with mpmath.extraprec(int(mpmath.log(s * (1 + abs(L)), 2)) + 40):
        gL = mpmath.expm1(L) - L
        with mpmath.extraprec(int(mpmath.log(s * (1 + gL), 2))):
            C = mpmath.exp(s * mpmath.log(s) - s - mpmath.loggamma(s))
            head = mpmath.exp(-s * gL)
        step = min(1 / mpmath.sqrt(s), 1 / (s * abs(mpmath.expm1(L)))) if L != 0 else 1 / mpmath.sqrt(s)
        direction = -1 if lower else 1
        eL, e1 = mpmath.exp(L), mpmath.expm1(L)

        def drop(y):
            d = direction * step * y
            return s * (e1 * d + eL * (mpmath.expm1(d) - d))
        # drop is convex with drop(0) = 0, so the rest beyond Y is <= ∫_Y^∞ e^{-drop(Y) y/Y} = Y e^{-drop(Y)}/drop(Y):
        # stop at the first Y = 2^K where that is below 2^-(prec + 10) (an infinite end would evaluate e^{e^y})
        ends, target = [mpmath.mpf(0), mpmath.mpf(1)], (mpmath.mp.prec + 10) * mpmath.ln2
        while drop(ends[-1]) - mpmath.log(ends[-1]) < target:
            ends.append(2 * ends[-1])
        part = C * head * step * mpmath.quad(lambda y: mpmath.exp(-drop(y)), ends)
    return part if lower else 1 - part


def below_scaled_square(x, k, shift, s) -> np.ndarray:
    """Exactly x <= (k - shift) s^2, elementwise, for float64 arrays (shift an integer): with s = m 2^e (frexp,
    1/2 <= m < 1) it compares x 2^-2e with (k - shift) m^2, which cannot overflow (s^2 overflows from s = 1.3e154);
    the elements this float comparison cannot decide (within
    1e-12 relative of each other, or x 2^-2e below the normal range) are decided in exact rational arithmetic."""
    x, k, s = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (x, k, s)))
    m, e = np.frexp(s)
    with np.errstate(all="ignore"):
        q = (k - shift) * m * m
        xs = np.ldexp(x, -2 * e)
        ok = np.asarray(xs <= q)
        close = ~(np.abs(xs - q) > 1e-12 * np.maximum(np.abs(xs), np.abs(q))) | ((x != 0) & (np.abs(xs) < 1e-290))
    for i in np.argwhere(close):
        i = tuple(i)
        ok[i] = Fraction(float(x[i])) <= (Fraction(float(k[i])) - shift) * Fraction(float(s[i])) ** 2
    return ok


_KW_COND = Condition(sp.Ge(kw, 1), "kappa_w >= 1 (every law has E[W^4] >= E[W^2]^2)")
_INPUT_CONDS = (Condition(sp.Ge(k0, 1), "kappa0 >= 1"),
                Condition(sp.Ge(c0 + s2**2, 0), "c0 >= -sigma2^2 (E[x_i^2 x_j^2] >= 0)",
                          numpy=lambda c0, sigma2: below_scaled_square(-np.asarray(c0, float), 1.0, 0, sigma2)),
                Condition(sp.Le(c0, (k0 - 1) * s2**2), "c0 <= (kappa0 - 1) sigma2^2 (Cauchy-Schwarz)",
                          numpy=lambda c0, kappa0, sigma2: below_scaled_square(c0, kappa0, 1, sigma2)))
_HYPOTHESES = ("exact for any input that is zero-mean and jointly sign-symmetric ((x_i) =d (s_i x_i) for all signs "
               "s), e.g. independent symmetric units; every hidden layer of the net is (row-sign flips of W), so "
               "only the input layer needs it; kappa0 = E[x^4]/sigma2^2 and c0 are averages over units / pairs")
LEMMA42 = ("Lemma 4.2 is false as printed ('identically distributed, uncorrelated, zero-mean, symmetric' is not "
           "enough: derivations/kurtosis.py gives an exact counterexample); it holds under joint sign symmetry, "
           "which every hidden layer has")
INDEX = "Prop. 3.2 / Sec. 3 write Var W^(l) = 2/(w_l(a^2+1)); it is the fan-in w_(l-1) (as the proof of Prop. 4.3 uses)"

register(ClosedForm(
    "kurtosis.matrix", "Transition matrix A of Prop. 4.3: [kappa_(l+1), c_(l+1), 1] = A [kappa_l, c_l, 1].",
    (W, A, KAPPA_W, SIGMA2), Provenance(THESIS, "Prop. 4.3", f"{LEMMA42}; {INDEX}; {_HYPOTHESES}"),
    expr=MATRIX, conditions=(_KW_COND,), kernel=_matrix_kernel))
register(ClosedForm(
    "kurtosis.lambda_max", "Largest eigenvalue of A (Lemma 4.5): the per-layer growth factor of kappa_L.",
    (W, A, KAPPA_W, SIGMA2),
    Provenance(THESIS, "Lemma 4.5", "lambda_max > 1 for all w >= 2, any a, kappa_w >= 1 (proved via tr - det - 1 > 0); "
                                    "the only failure for w >= 1 is w = 1, a^2 = 1, kappa_w = 1 where it equals 1; "
                                    "independent of sigma2"),
    expr=LAM_PLUS, conditions=(_KW_COND,), kernel=lambda w, a, kappa_w, sigma2: _eigen(w, a, kappa_w)[4]
    + 0 * np.asarray(sigma2, float)))
register(ClosedForm(
    "kurtosis.after", "Output kurtosis kappa_L after L layers of constant width w (Prop. 4.3 iterated, eigen form).",
    (L, W, A, KAPPA_W, KAPPA0, C0, SIGMA2),
    Provenance(THESIS, "Prop. 4.3, Thm. 4.7", "closed form of [A^L k0]_1 via the spectral projectors of the 2x2 "
               f"raw-moment map; kernel: lam_+^L[(P+m0)_1 + r^L (P-m0)_1], r = lam_-/lam_+; {_HYPOTHESES}"),
    expr=KAPPA_AFTER, conditions=(_KW_COND, *_INPUT_CONDS), kernel=_after_kernel(0), mp_kernel=_mp_after(0)))
register(ClosedForm(
    "kurtosis.c_after", "Cov[y_i^2, y_j^2] of two output units after L layers of constant width w >= 2.",
    (L, W, A, KAPPA_W, KAPPA0, C0, SIGMA2),
    Provenance(THESIS, "Prop. 4.3 (second row), iterated", _HYPOTHESES),
    expr=C_AFTER, conditions=(_KW_COND, Condition(sp.Ge(w, 2), "w >= 2 (two units needed)"), *_INPUT_CONDS),
    kernel=_after_kernel(1), mp_kernel=_mp_after(1)))

_IID = ("exact for n iid draws; the n outputs of ONE network share its weights and are not independent, so in the "
        "thesis Fig. 1 setting this is an approximation (validation/checks_kurtosis.py measures the gap)")
register(ClosedForm(
    "kurtosis.var_s2",
    "Var[S_n^2] of the unbiased sample variance of n iid draws with variance sigma2, kurtosis kappa.",
    (N, KAPPA, SIGMA2), Provenance(THESIS, "Sec. 5 (O'Neill 2014)", _IID),
    expr=(kap - (n - 3) / (n - 1)) * s2**2 / n, conditions=(Condition(sp.Ge(kap, 1), "kappa >= 1"),),
    kernel=lambda n, kappa, sigma2: sigma2 * (sigma2 * (_excess(n, kappa) / n))))
register(ClosedForm(
    "kurtosis.df", "Degrees of freedom DF_n = 2 sigma^4 / Var[S_n^2] of the moment-matched chi^2 law of S_n^2/sigma^2.",
    (N, KAPPA), Provenance(THESIS, "Sec. 5", "kappa = 3 gives DF_n = n - 1 (exact chi^2 for Gaussian draws)"),
    expr=2 * n / (kap - (n - 3) / (n - 1)), conditions=(Condition(sp.Ge(kap, 1), "kappa >= 1"),),
    kernel=lambda n, kappa: 2 * n / _excess(n, kappa)))
_SHAPE = n / (kap - (n - 3) / (n - 1))
register(ClosedForm(
    "kurtosis.p_small_var", "P(S_n^2/sigma^2 < eps) under the Gamma(k = DF_n/2, theta = 2/DF_n) approximation.",
    (EPS, N, KAPPA),
    Provenance(THESIS, "Sec. 5", "moment-matched (mean 1, variance 2/DF_n) approximation, exact for Gaussian draws "
               f"(kappa = 3); {_IID}; kernel: scipy gammainc (the lambdified Gamma ratio overflows for k > 171)"),
    expr=sp.lowergamma(_SHAPE, _SHAPE * eps) / sp.gamma(_SHAPE), conditions=(Condition(sp.Ge(kap, 1), "kappa >= 1"),),
    kernel=_p_small_kernel, mp_kernel=_mp_p_small))
register(ClosedForm(
    "kurtosis.p_nonzero", "P(y^(L) != 0) for a ReLU net (a = 0) of constant width w and depth L (w = 1: Prop. B.1).",
    (L, W),
    Provenance(THESIS, "App. B, Prop. B.1/B.2", "needs a jointly sign-symmetric input without atoms at 0 and weights "
               "without atoms (Gaussian, uniform); Rademacher weights break the 'all units zero or none' step and "
               "uncorrelated-but-dependent inputs break the 2^-w orthant probability; Prop. B.2 lists widths w_1..w_d "
               "but the product runs over w_0..w_(d-1)"),
    expr=(1 - 2**(-w)) ** ell, kernel=lambda L, w: np.exp(L * np.log1p(-np.exp2(-w)))))
