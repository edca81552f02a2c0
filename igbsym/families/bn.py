"""BatchNorm: the law of one normalised value of an iid Gaussian mini-batch, and γ of BN + ReLU / ReLU + BN.

Paper: norm-placement-bn-ln.txt App. E (Eqs. 20–81, Theorems E.1 and E.2). For a batch x_1..x_B iid N(μ, σ²):

* proxy (the paper's leave-one-out estimator, Eqs. 27–29): B̃ = (x_a − m_{−a})/s_{−a} with m_{−a}, s²_{−a} the mean
  and the *biased* variance (divisor B − 1) of the other B − 1 points. Exactly B̃ = √(B/(B−2)) T_{B−2}, a Student t
  with B − 2 degrees of freedom scaled by √(B/(B−2)) (Eqs. 49/55 are this density; the paper does not name it).
* canonical (torch.nn.BatchNorm1d in training mode, eps → 0): z = (x_a − x̄)/s, s² the biased variance of the whole
  batch. Exactly z²/(B−1) ~ Beta(1/2, (B−2)/2): a scaled symmetric Beta law on |z| ≤ √(B−1), with E z² = 1.
  The two are one monotone map apart: z = √(B−1) B̃ / √(B + B̃²) (derivations/bn.py).

γ of BN + ReLU is E[ReLU(V)]²/Var[ReLU(V)] with V the normalised value (Thm E.1, Eqs. 16–17, 57–59); it does not
change with depth. With BN after ReLU (Thm E.2) every BN output has dataset mean exactly 0, so γ = 0.
All forms take the batch size B as an integer array-able parameter; the NumPy kernels use a stable Γ-ratio so any
B up to 1e12 evaluates without overflow.
"""
import mpmath
import numpy as np
import sympy as sp
from scipy import optimize, special

from ..bn_law import (CANON_GAMMA, CANON_RELU_MEAN, CANON_RELU_VAR, canonical_relu_mean, canonical_relu_var,
                      gamma_half_ratio)
from ..form import ClosedForm, Condition, NumericRoute, Param, Provenance
from ..functions import BetaReg
from ..registry import register

NORM = "norm-placement-bn-ln.txt"
b = sp.Symbol("b", real=True)
B = sp.Symbol("B", integer=True)
half = sp.S.Half

def _cond(minimum, why):
    return (Condition(sp.Ge(B, minimum), f"B >= {minimum} ({why})"),)


B_PARAM = Param("B", "integer", "BatchNorm batch size (points per mini-batch)", minimum=2)
BVAL = Param("b", "real", "value of the normalised variable")
ESTIMATOR = Param("estimator", "choice", "which normalised value: the paper's leave-one-out proxy or torch's canonical",
                  choices=("proxy", "canonical"), default="proxy")

# ---------------------------------------------------------------------------------------------------------------
# The proxy (leave-one-out) law: B̃ = √(B/(B−2)) T_{B−2}.
PROXY_NORM = sp.gamma((B - 1) / 2) / (sp.sqrt(sp.pi * B) * sp.gamma((B - 2) / 2))
PROXY_PDF = PROXY_NORM * (1 + b**2 / B) ** (-(B - 1) / 2)
PROXY_CDF = (1 + sp.sign(b)) / 2 - sp.sign(b) / 2 * BetaReg((B - 2) / 2, half, B / (B + b**2))
PROXY_VAR = B / (B - 4)
PROXY_KURT = 3 * (B - 4) / (B - 6)
PROXY_RELU_MEAN = sp.sqrt(B) * sp.gamma((B - 3) / 2) / (2 * sp.sqrt(sp.pi) * sp.gamma((B - 2) / 2))
PROXY_RELU_VAR = B / (2 * (B - 4)) - PROXY_RELU_MEAN**2
PROXY_GAMMA = PROXY_RELU_MEAN**2 / PROXY_RELU_VAR


def _proxy_norm(B):
    return gamma_half_ratio((B - 2) / 2) / np.sqrt(np.pi * B)


def _proxy_pdf(b, B):
    return _proxy_norm(B) * np.exp(-(B - 1) / 2 * np.log1p(b * b / B))


_SPLIT = 2.0**27 + 1   # Dekker's splitter for an exact square
_SPLIT_BELOW = 1e150   # |b| up to which the split (and b²) cannot overflow


def _two_sum(p, q):
    """(s, e) with s + e = p + q exactly (Knuth's TwoSum)."""
    s = p + q
    back = s - p
    return s, (p - (s - back)) + (q - back)


def _canonical_x(b, B):
    """x = 1 - b²/(B-1), clipped to 0 outside the support, with full relative accuracy up to the support's edge.

    Near |b| = sqrt(B-1) the rounded b² cancels against B - 1: the naive form loses ε/x relative. Here b² = p + e
    exactly
    (Dekker's split) and B - 1 = m + m_lo exactly (TwoSum), m - p is exact where p is within a factor 2 of m
    (Sterbenz), and the small parts are added by TwoSum, so the gap B - 1 - b² is rounded about twice."""
    b = np.minimum(np.abs(b), _SPLIT_BELOW)
    m = B - 1
    m_lo = (B - m) - 1                                   # exact: B - 1 = m + m_lo
    c = _SPLIT * b
    hi = c - (c - b)
    lo = b - hi
    p = b * b
    e = ((hi * hi - p) + 2 * hi * lo) + lo * lo          # exact: b² = p + e
    small, small_err = _two_sum(m_lo, -e)
    gap = ((m - p) + small) + small_err
    near = (p >= 0.5 * m) & (p <= 2 * m)
    return np.maximum(0.0, np.where(near, gap / m, 1 - p / m))


def _canonical_log_x(b, B):
    """log(1 - b²/(B-1)) (-inf outside the support): log1p of -b²/(B-1) below 1/2, log of _canonical_x above."""
    u = np.square(np.minimum(np.abs(b), _SPLIT_BELOW)) / (B - 1)
    return np.where(u < 0.5, np.log1p(-np.minimum(u, 0.5)), np.log(_canonical_x(b, B)))


_FAR_X = 1e-3   # x = B/(B + b²) at and below which the proxy tail (B < _TAIL_QUAD_B) is taken in logs
_FAR_TERMS = 6  # terms of the 2F1 series there: the remainder is below x^6 <= 1e-18


def _proxy_far_tail(b, B):
    """P(B~ <= -|b|) = I_x(a, 1/2)/2, a = (B-2)/2, x = B/(B + b²) <= 1e-3, in logs (DLMF 8.17.8):
    I_x(a, 1/2) = x^a (1-x)^{1/2} F(a + 1/2, 1; a + 1; x)/(a B(a, 1/2)), the series' terms falling by < x each.
    SciPy's betainc returns 0 below ~1e-308 (B = 7 at b = -2.4e62: 0 for 2.5e-311) and b² overflows from
    |b| = 1.3e154 (B = 3 at b = -3.5e156: 0 for 1.6e-157); here log x = -log1p(w²), w = |b|/sqrt(B), or -2 log w
    where w² would overflow (w >= 1e150: the dropped log1p(1/w²) is below 1e-300)."""
    w = np.abs(b) / np.sqrt(B)
    big = w >= 1e150
    w2 = np.square(np.where(big, 1.0, w))
    log_x = np.where(big, -2 * np.log(w), -np.log1p(w2))
    x = np.exp(log_x)
    a = (B - 2) / 2
    term, series = np.ones(np.shape(x)), np.ones(np.shape(x))
    for n in range(1, _FAR_TERMS):
        term = term * (a + n - 0.5) / (a + n) * x
        series = series + term
    log_i = a * log_x + 0.5 * np.log1p(-x) + np.log(series) - np.log(a) - special.betaln(a, 0.5)
    return np.exp(log_i) / 2


_GLAG_X, _GLAG_W = np.polynomial.laguerre.laggauss(40)
_TAIL_QUAD_FROM = 6.0     # |b| at and beyond which the lower tail is the Laguerre integral (B >= _TAIL_QUAD_B)
_TAIL_QUAD_B = 100.0
_EXPANSION_FROM = 1e16    # B at and beyond which the 1/B expansion is used (next term < (40^4/B)^2 < 1e-20)
_PHI_ZERO_FROM = 40.0     # |b| beyond which phi(b)(|b|^3 + 5|b|)/(4B) < e^{-800} |b|^3/B rounds to 0 in double


def _lower_tail(b, B, canonical: bool):
    """P(V <= -|b|) for the proxy (canonical=False) or canonical law, stable in every regime:

    * B >= 1e16: Phi(-|b|) + phi(b)(|b|³ + 5|b|)/(4B) (proxy), Phi(-|b|) - phi(b)(|b|³ - 3|b|)/(4B) (canonical) (the
    1/B expansion of bn.pdf_large_B integrated;
      relative error O(b^8/B²) < 1e-20 wherever the value is above 1e-300);
    * |b| >= 6 and B >= 100: ∫_{|b|}^∞ f(s) ds = f(|b|) ∫_0^∞ e^{-r} s'(r) dr with r the drop of the log-density
      from |b| (s(r) in closed form) and the 40-point Gauss–Laguerre rule: s'(r) is analytic with its nearest
      singularity at r ≈ -b²/2 <= -18, so the rule is exact to rounding;
    * near the centre, where the central mass I_y(1/2, a) = P(|V| <= |b|) is at most 1/2: (1 - I_y(1/2, a))/2,
      with I_y computed directly (y = 1 - x without cancellation; SciPy's complement betaincc(1/2, 1/2, y) loses
      up to all digits for y < 1e-12, and x = 1 - y rounds to 1 for |b| < 1e-8, e.g. B = 3 at b = 6e-8);
    * proxy with B < 100 and x = B/(B + b²) <= 1e-3 (or b² overflowing): the tail in logs (_proxy_far_tail);
    * otherwise SciPy's regularised incomplete beta, through its complement I_y(1/2, a) where x > 1/2 (no 1 - I);
      for the canonical law x = 1 - b²/(B-1) is computed exactly near the support's edge (_canonical_x).
    """
    b, B = np.broadcast_arrays(np.abs(np.asarray(b, float)), np.asarray(B, float))
    shape, b, B = b.shape, b.ravel(), B.ravel()
    u = b * b
    a = (B - 2) / 2
    if canonical:
        x = _canonical_x(b, B)
        y = np.minimum(1.0, u / (B - 1))
    else:
        x, y = B / (B + u), u / (B + u)
    with np.errstate(all="ignore"):
        central = special.betainc(0.5, a, y)
        out = np.where(central <= 0.5, (1 - central) / 2,
                       np.where(x <= 0.5, special.betainc(a, 0.5, x), special.betaincc(0.5, a, y)) / 2)
        far = (not canonical) & (B < _TAIL_QUAD_B) & ~(x > _FAR_X)   # (x is NaN where b² overflowed)
        if far.any():
            out = out.copy()
            out[far] = _proxy_far_tail(b[far], B[far])
        quad = (b >= _TAIL_QUAD_FROM) & (B >= _TAIL_QUAD_B) & (x > 0)
        if quad.any():
            out = out.copy()
            out[quad] = _laguerre_tail(b[quad], B[quad], canonical)
        big = B >= _EXPANSION_FROM
        if big.any():
            bb, BB = np.minimum(b[big], _PHI_ZERO_FROM), B[big]  # beyond 40 the phi term is exactly 0
            poly = bb**3 + 5 * bb if not canonical else bb**3 - 3 * bb
            out = out.copy()
            out[big] = special.ndtr(-b[big]) + np.where(
                b[big] >= _PHI_ZERO_FROM, 0.0,
                np.exp(-bb * bb / 2) / np.sqrt(2 * np.pi) * poly / (4 * BB) * (-1 if canonical else 1))
        if canonical:
            out = np.where(x > 0, out, 0.0)  # |b| >= sqrt(B-1): outside the support
    return out.reshape(shape)


def _laguerre_tail(b, B, canonical: bool):
    """∫_b^sup f(s) ds by the log-density substitution (see _lower_tail), b > 0, B >= 100."""
    r = _GLAG_X[None, :]
    b, B = b[:, None], B[:, None]
    if canonical:
        m = B - 1
        level = _canonical_log_x(b, B)                # exact near the support's edge
        drop = level - 2 * r / (B - 4)
        s2 = -m * np.expm1(drop)
        ds = m * np.exp(drop) / ((B - 4) * np.sqrt(s2))  # (m - s2 = m e^drop without the cancellation)
        logf = np.log(gamma_half_ratio((B - 2) / 2) / np.sqrt(np.pi * m)) + (B - 4) / 2 * level
    else:
        level = np.log1p(b * b / B)
        s2 = B * np.expm1(level + 2 * r / (B - 1))
        ds = (B + s2) / ((B - 1) * np.sqrt(s2))
        logf = np.log(_proxy_norm(B)) - (B - 1) / 2 * level
    return np.exp(logf[:, 0]) * np.sum(ds * _GLAG_W, axis=-1)   # row by row: an array call gives the scalar value


def _cdf_from_tail(b, B, canonical: bool):
    lower = _lower_tail(b, B, canonical)
    return np.where(np.asarray(b) < 0, lower, 1 - lower)


_MP_CENTRAL_TO = 2      # |b| up to which the mp tail (B >= 100) is 1/2 minus the central mass (tail >= Phi(-2)/2)
_MP_BETAINC_DROP = 1000  # log-density drop f(0)/f(|b|) up to which mpmath.betainc is used (tail >= ~1e-440)


def _mp_tail(b, B, canonical: bool):
    """P(V <= -|b|) in mpmath: the incomplete beta I_x((B-2)/2, 1/2)/2 for B < 100; for B >= 100 (all at
    log2(B) extra bits, the condition number of x = 1 - b²/B near 1):

    * |b| <= 2: 1/2 - ∫_0^{|b|} f(s) ds (a smooth integrand on a short interval; the tail is >= 0.02, so the
      subtraction costs under two digits, which the guard precision of ``ClosedForm.mp`` absorbs);
    * a log-density drop d = -log(f(|b|)/f(0)) <= 1000: mpmath.betainc (its hypergeometric series stops
      converging only for tails far below 1e-1000, e.g. B = 1e6, b = 100);
    * beyond: ∫_{|b|}^sup f(s) ds in the log-density drop r (the substitution of _laguerre_tail): weight e^{-r}
      times s'(r), analytic for r > -d, so tanh-sinh converges."""
    a, h = abs(b), mpmath.mpf(1) / 2
    m = B - 1 if canonical else B
    if canonical and a * a >= m:
        return mpmath.mpf(0)
    if B < _TAIL_QUAD_B:
        x = 1 - a * a / m if canonical else B / (B + a * a)
        return mpmath.betainc((B - 2) / 2, h, 0, x, regularized=True) / 2
    with mpmath.extraprec(int(mpmath.log(B, 2)) + 20):
        c = mpmath.exp(mpmath.loggamma((B - 1) / 2) - mpmath.loggamma((B - 2) / 2)) / mpmath.sqrt(mpmath.pi * m)
        power, sign = ((B - 4) / 2, -1) if canonical else (-(B - 1) / 2, 1)
        if a <= _MP_CENTRAL_TO:
            f = lambda s: c * mpmath.exp(power * mpmath.log1p(sign * s * s / m))  # noqa: E731
            return h - mpmath.quad(f, [0, a])
        level = mpmath.log1p(sign * a * a / m)
        if -power * level <= _MP_BETAINC_DROP:
            x = 1 - a * a / m if canonical else B / (B + a * a)
            return mpmath.betainc((B - 2) / 2, h, 0, x, regularized=True) / 2
        rate = 2 / (B - 4) if canonical else 2 / (B - 1)  # s² = m (e^{level + sign·rate·r} - 1)·sign

        def ds(r):
            s2 = sign * m * mpmath.expm1(level + sign * rate * r)
            return (m + sign * s2) * rate / (2 * mpmath.sqrt(s2))
        # mpmath.quad stops on an absolute error: integrate s'(r)/s'(0) (O(1)), not s'(r), which is ~ |b| (1e308 at
        # b = 1.8e308, B = 1e30: every panel ran to the maximal degree, 25 s a point)
        d0 = ds(mpmath.mpf(0))
        return c * mpmath.exp(power * level) * d0 * mpmath.quad(lambda r: mpmath.exp(-r) * ds(r) / d0,
                                                                  [0, 1, 4, 16, 64, 256, mpmath.inf])


def _mp_cdf(b, B, canonical: bool):
    tail = _mp_tail(b, B, canonical)
    return tail if b < 0 else 1 - tail


def _proxy_cdf(b, B):
    return _cdf_from_tail(b, B, False)


def _proxy_relu_mean(B):
    return np.sqrt(B) / (2 * np.sqrt(np.pi) * gamma_half_ratio((B - 3) / 2))


def _proxy_relu_var(B):
    return B / (2 * (B - 4)) - _proxy_relu_mean(B) ** 2


PROXY = ("proxy = the paper's leave-one-out estimator (Eqs. 27-29: mean and biased variance of the other B-1 points); "
         "exactly sqrt(B/(B-2)) times a Student t with B-2 degrees of freedom")
ERRATA_PDF = ("Eqs. 42 and 49 print exp(-(-y^2)/2 ...) (sign error, non-normalisable) and drop the mean of "
              "mu-tilde; Eq. 40 prints Var(eps_B) = (sigma^2 + (B-1)sigma^2/B^2)/B^2, correct is sigma^2/(B(B-1)); "
              "the paper states no validity condition: the density needs B >= 3, the variance B >= 5, Eq. 57 B >= 4")

register(ClosedForm(
    "bn.pdf", "Density of the leave-one-out BatchNorm value B~ of an iid Gaussian batch (scaled Student t_{B-2}).",
    (BVAL, B_PARAM), Provenance(NORM, "App. E.1.2, Eqs. 27-29, 49, 55", PROXY + "; " + ERRATA_PDF),
    expr=PROXY_PDF, conditions=_cond(3, "B-2 >= 1 degrees of freedom"), kernel=_proxy_pdf))
register(ClosedForm(
    "bn.cdf", "P(B~ <= b) for the leave-one-out BatchNorm value (regularised incomplete beta; stable in both tails).",
    (BVAL, B_PARAM), Provenance(NORM, "integral of Eq. 49", PROXY),
    expr=PROXY_CDF, conditions=_cond(3, "B-2 >= 1 degrees of freedom"), kernel=_proxy_cdf,
    mp_kernel=lambda b, B: _mp_cdf(b, B, False)))
register(ClosedForm(
    "bn.var", "Var(B~) = B/(B-4) of the leave-one-out BatchNorm value.", (B_PARAM,),
    Provenance(NORM, "Eq. 47", PROXY + "; the variance of t_nu exists iff nu > 2"),
    expr=PROXY_VAR, conditions=_cond(5, "t_{B-2} has a variance iff B-2 > 2")))
register(ClosedForm(
    "bn.kurtosis", "Kurtosis E[B~^4]/Var(B~)^2 = 3(B-4)/(B-6) of the leave-one-out BatchNorm value.", (B_PARAM,),
    Provenance(NORM, "beyond the paper (t_{B-2} kurtosis 3 + 6/(B-6))", PROXY),
    expr=PROXY_KURT, conditions=_cond(7, "t_{B-2} has a fourth moment iff B-2 > 4")))
register(ClosedForm(
    "bn.relu_mean", "E[ReLU(B~)] for the leave-one-out BatchNorm value (BN + ReLU node mean).", (B_PARAM,),
    Provenance(NORM, "Eq. 57", PROXY), expr=PROXY_RELU_MEAN, conditions=_cond(4, "E|t_{B-2}| exists iff B-2 > 1"),
    kernel=_proxy_relu_mean))
register(ClosedForm(
    "bn.relu_var", "Var[ReLU(B~)] for the leave-one-out BatchNorm value (BN + ReLU node variance).", (B_PARAM,),
    Provenance(NORM, "Eqs. 58-59 (exact, not approximate, for the proxy)", PROXY), expr=PROXY_RELU_VAR,
    conditions=_cond(5, "Var t_{B-2} exists iff B-2 > 2"), kernel=_proxy_relu_var))
register(ClosedForm(
    "bn.gamma", "gamma of BN + ReLU with the paper's leave-one-out law: E[ReLU(B~)]^2/Var[ReLU(B~)], the same at every "
    "depth (Thm E.1); see bn.gamma_canonical for what torch's BatchNorm1d gives.", (B_PARAM,),
    Provenance(NORM, "Thm E.1, Eqs. 16-17, 57-61", PROXY + "; gamma = Var_W(mu_c)/Var_chi(O_c) = E[Y]^2/Var[Y] by "
               "Eqs. 16-17 (sigma_w^2 cancels)"),
    expr=PROXY_GAMMA, conditions=_cond(5, "Var t_{B-2} exists iff B-2 > 2"),
    kernel=lambda B: _proxy_relu_mean(B) ** 2 / _proxy_relu_var(B)))

# ---------------------------------------------------------------------------------------------------------------
# The canonical law (torch.nn.BatchNorm1d, train mode, eps -> 0): z²/(B−1) ~ Beta(1/2, (B−2)/2).
CANON_NORM = sp.gamma((B - 1) / 2) / (sp.sqrt(sp.pi * (B - 1)) * sp.gamma((B - 2) / 2))
CANON_PDF = sp.Piecewise((CANON_NORM * (1 - b**2 / (B - 1)) ** ((B - 4) / 2), b**2 < B - 1), (0, True))
CANON_CDF = (1 + sp.sign(b)) / 2 - sp.sign(b) / 2 * BetaReg((B - 2) / 2, half, sp.Max(0, 1 - b**2 / (B - 1)))
CANON_SUPPORT = sp.sqrt(B - 1)
CANON_VAR = sp.S.One
CANON_KURT = 3 * (B - 1) / (B + 1)


def _canon_pdf(b, B):
    """c_B (1 - b²/(B-1))^{(B-4)/2} inside the support, with log(1 - b²/(B-1)) from the exact gap (_canonical_log_x)."""
    b, B = np.broadcast_arrays(np.asarray(b, float), np.asarray(B, float))
    log_x = _canonical_log_x(b, B)
    inside = log_x > -np.inf
    shape = np.where(B == 4, 1.0, np.exp((B - 4) / 2 * np.where(inside, log_x, 0.0)))
    return np.where(inside, gamma_half_ratio((B - 2) / 2) / np.sqrt(np.pi * (B - 1)) * shape, 0.0)


CANON = ("canonical = torch.nn.BatchNorm1d in training mode (batch mean, biased batch variance, eps -> 0); "
         "z^2/(B-1) ~ Beta(1/2, (B-2)/2) exactly for iid Gaussian inputs of any mean and variance; with eps > 0 the "
         "value is shrunk by sqrt(s^2/(s^2+eps)), which changes E z^2 by at most eps B/((B-3) sigma^2)")
register(ClosedForm(
    "bn.pdf_canonical", "Density of torch's BatchNorm1d (train mode) output z for an iid Gaussian batch: a scaled "
    "symmetric Beta law on the open interval |z| < sqrt(B-1) (0 outside; B = 3 is the arcsine law, B = 4 uniform).",
    (BVAL, B_PARAM), Provenance(NORM, "beyond the paper (the canonical estimator of Eq. 4 / Sec. E.1.2)", CANON),
    expr=CANON_PDF, conditions=_cond(3, "B = 2 is the two-point law z = +-1, which has no density"),
    kernel=_canon_pdf))
register(ClosedForm(
    "bn.cdf_canonical", "P(z <= b) for torch's BatchNorm1d (train mode) output of an iid Gaussian batch.",
    (BVAL, B_PARAM), Provenance(NORM, "beyond the paper", CANON), expr=CANON_CDF,
    conditions=_cond(3, "B = 2 is the two-point law z = +-1"),
    kernel=lambda b, B: _cdf_from_tail(b, B, True), mp_kernel=lambda b, B: _mp_cdf(b, B, True)))
register(ClosedForm(
    "bn.support_canonical", "Largest possible |z| = sqrt(B-1) of a BatchNorm1d (train mode) output (any input law).",
    (B_PARAM,), Provenance(NORM, "beyond the paper (sum of z^2 over the batch is B, sum of z is 0)", CANON),
    expr=CANON_SUPPORT))
register(ClosedForm(
    "bn.var_canonical", "E[z^2] = Var(z) = 1 for torch's BatchNorm1d (train mode) output, eps -> 0 (any input law).",
    (B_PARAM,), Provenance(NORM, "beyond the paper (sum of z^2 over the batch is exactly B)", CANON),
    expr=CANON_VAR))
register(ClosedForm(
    "bn.kurtosis_canonical", "Kurtosis E[z^4] = 3(B-1)/(B+1) of torch's BatchNorm1d output for iid Gaussian input.",
    (B_PARAM,), Provenance(NORM, "beyond the paper", CANON), expr=CANON_KURT))
register(ClosedForm(
    "bn.relu_mean_canonical", "E[ReLU(z)] for torch's BatchNorm1d (train mode) output of an iid Gaussian batch.",
    (B_PARAM,), Provenance(NORM, "beyond the paper (canonical counterpart of Eq. 57)", CANON),
    expr=CANON_RELU_MEAN, kernel=canonical_relu_mean))
register(ClosedForm(
    "bn.relu_var_canonical", "Var[ReLU(z)] = 1/2 - E[ReLU(z)]^2 for torch's BatchNorm1d (train mode) output.",
    (B_PARAM,), Provenance(NORM, "beyond the paper (canonical counterpart of Eqs. 58-59)", CANON),
    expr=CANON_RELU_VAR, kernel=canonical_relu_var))
register(ClosedForm(
    "bn.gamma_canonical", "gamma of BN + ReLU with torch's BatchNorm1d (train mode): E[ReLU(z)]^2/Var[ReLU(z)], the "
    "same at every depth (Thm E.1 holds exactly for the canonical law).", (B_PARAM,),
    Provenance(NORM, "Thm E.1 with the canonical law", CANON + "; exchangeable Gaussian batches (deeper layers) give "
               "the same law because BN sees only the projection orthogonal to (1,...,1), which is isotropic"),
    expr=CANON_GAMMA, kernel=lambda B: canonical_relu_mean(B) ** 2 / canonical_relu_var(B)))

# ---------------------------------------------------------------------------------------------------------------
# ReLU + BN (Thm E.2).
register(ClosedForm(
    "bn.gamma_relu_bn", "gamma of ReLU + BN (BatchNorm after every activation) at every depth, full batch (B = inf) "
    "and mini-batch: 0 exactly.", (Param("B", "integer", "BatchNorm batch size (inf = full batch)", minimum=2,
                                         allow_inf=True),),
    Provenance(NORM, "Thm E.2, Eqs. 62-63 (full batch), Eq. 81 (mini-batch)",
               "exact at any width: conditions are BN in training mode (batch statistics; at initialisation eval mode "
               "uses running stats 0/1 and normalises nothing), the last hidden layer ends with BN, the output layer "
               "has no bias, and mu_c is the mean over whole batches; each BN output sums to 0 over its batch, so "
               "mu_c = 0 for every initialisation. Errata: Eq. 70 divides by Var instead of the standard deviation; "
               "Eq. 74 puts the ReLU atom at b = +a/alpha with mass sigma_w sqrt(pi-1)/(2 sqrt(2 pi)) (correct: "
               "mass 1/2 at b = -1/sqrt(pi-1), continuous part N(b; -1/sqrt(pi-1), 2pi/(pi-1)) on b > -1/sqrt(pi-1)); "
               "Eq. 79 has E[B^2] = Var - E^2 (correct: Var + E^2)"),
    expr=sp.S.Zero))

# ---------------------------------------------------------------------------------------------------------------
# Full-batch limit B → ∞ with the leading 1/B correction (derivations/bn.py derives both by series expansion).
GAMMA_INF = 1 / (sp.pi - 1)
_LARGE_PDF = {
    "proxy": sp.exp(-b**2 / 2) / sp.sqrt(2 * sp.pi) * (1 + (b**4 + 2 * b**2 - 5) / (4 * B)),
    "canonical": sp.exp(-b**2 / 2) / sp.sqrt(2 * sp.pi) * (1 - (b**4 - 6 * b**2 + 3) / (4 * B)),
}
_LARGE_GAMMA = {
    "proxy": GAMMA_INF - sp.pi / (2 * (sp.pi - 1) ** 2 * B),
    "canonical": GAMMA_INF + sp.pi / (2 * (sp.pi - 1) ** 2 * B),
}
LIMIT = Provenance(NORM, "App. E.1.2 (binomial/Stirling argument after Eq. 50), made quantitative",
                   "error O(1/B^2); B -> inf gives N(0,1) and the no-BN ReLU value gamma = 1/(pi-1)")
_LARGE_PDF_POLY = {"proxy": (-5.0, 2.0, 1.0), "canonical": (3.0, -6.0, 1.0)}  # ±P(b) in powers of b² (as above)
_LARGE_PDF_SIGN = {"proxy": 1.0, "canonical": -1.0}


def _large_pdf(estimator, b, B):
    """phi(b)[1 ± P(b)/(4B)] in log space: log phi(b) + log|1 ± P/(4B)|, so no 0·inf where b⁴ overflows. For
    b² > 1e150, exp(-b²/2) is below the smallest subnormal whatever the polynomial factor (< 1e600), so the value
    is a signed 0 (the sign of the bracket: negative for the canonical law at large b)."""
    u = np.square(np.asarray(b, dtype=float))
    safe = np.minimum(u, 1e150)
    bracket = 1 + _LARGE_PDF_SIGN[estimator] * np.polynomial.polynomial.polyval(safe, _LARGE_PDF_POLY[estimator]) / (
        4 * np.asarray(B, dtype=float))
    log_value = np.where(u > 1e150, -np.inf, -safe / 2 + np.log(np.abs(bracket))) - 0.5 * np.log(2 * np.pi)
    return np.sign(bracket) * np.exp(log_value)


register(ClosedForm(
    "bn.pdf_large_B", "Large-B expansion of the BatchNorm value's density: phi(b)[1 + P(b)/(4B)] + O(1/B^2).",
    (BVAL, B_PARAM, ESTIMATOR), LIMIT, builder=lambda estimator: _LARGE_PDF[estimator], kernel=_large_pdf))
register(ClosedForm(
    "bn.gamma_large_B", "Large-B expansion of gamma of BN + ReLU: 1/(pi-1) + c/B + O(1/B^2).",
    (B_PARAM, ESTIMATOR), LIMIT, builder=lambda estimator: _LARGE_GAMMA[estimator]))


# ---------------------------------------------------------------------------------------------------------------
# How far the proxy is from the real thing: total-variation distance between the laws of B̃ and z.
def _log_ratio(u, B):
    """log f_canonical/f_proxy at b² = u (inside the canonical support)."""
    return 0.5 * np.log(B / (B - 1)) + (B - 4) / 2 * np.log1p(-u / (B - 1)) + (B - 1) / 2 * np.log1p(u / B)


# B·log(f_c/f_p) in powers of ε = 1/B (SymPy series; tests/test_bn.py re-derives them): the direct form above cancels
# terms of size u/2 down to O(u²/B), so its rounding moves the root by ~ 1e-16·B; from B = 1e6 the series is used
# (first omitted term O(u⁴ε⁴) < 1e-21 near the root u ≈ 1 + √2).
_RATIO_SERIES_FROM = 1e6
_RATIO_SERIES = ((0.5, 1.0, -0.5), (0.25, 1.5, 0.75), (1 / 6, 1.5, 1.25, 0.0, -0.25), (0.125, 1.5, 2.0, 1.0, 0.125))


def _scaled_log_ratio_series(u, B):
    eps, total = 1.0 / B, 0.0
    for power, coeffs in enumerate(_RATIO_SERIES):
        total += eps**power * np.polynomial.polynomial.polyval(u, coeffs)
    return total


_GL20 = np.polynomial.legendre.leggauss(20)


def density_crossing(B: float) -> float:
    """The u = b² > 0 where f_canonical = f_proxy (B >= 5): the log-ratio increases up to u* = (2B+1)/(2B-5),
    then falls to -inf at u = B - 1, and is positive at 0, so there is exactly one root, in (u*, B - 1).
    For B >= 1e6 the root of the 1/B series, in (u*, 4) (the series is 1 + O(1/B) at u* and -3.5 + O(1/B) at 4)."""
    lo = (2 * B + 1) / (2 * B - 5)
    if B >= _RATIO_SERIES_FROM:
        return optimize.brentq(_scaled_log_ratio_series, lo, 4.0, args=(B,), xtol=1e-15)
    hi = (B - 1) * (1 - 1e-12)  # log-ratio at hi <= 0.35 (B-1) - 13.8 (B-4) < 0
    return optimize.brentq(_log_ratio, lo, hi, args=(B,), xtol=1e-14)


def _tv_one(B: float) -> float:
    """TV = 2[F_c(c) - F_p(c)] = I_{x1} - I_{x2} with I = I(1/2, (B-2)/2), x1 = c²/(B-1), x2 = c²/(B+c²): the
    Beta(1/2, (B-2)/2) mass of [x2, x1], integrated directly (20-point Gauss-Legendre on a smooth integrand) to
    avoid the cancellation of two nearby CDF values."""
    if B < 5:  # f_c > f_p on the whole canonical support: TV = P(|B~| > sqrt(B-1))
        return float(special.betainc((B - 2) / 2, 0.5, B / (2 * B - 1)))
    u = density_crossing(B)
    x2, width = u / (B + u), u * (1 + u) / ((B - 1) * (B + u))  # width = x1 - x2 without cancellation
    t = x2 + width / 2 * (1 + _GL20[0])
    dens = np.exp(-0.5 * np.log(t) + (B - 4) / 2 * np.log1p(-t))
    return float(gamma_half_ratio((B - 2) / 2) / np.sqrt(np.pi) * width / 2 * (_GL20[1] @ dens))


def _tv_numpy(B):
    B = np.asarray(B, dtype=float)
    return np.vectorize(_tv_one, otypes=[float])(B)


def _tv_mp(B):
    """The same construction in mpmath, at 2 log2(B) + 30 extra bits (the log-ratio cancels O(1) terms down to
    O(1/B), and the crossing's TV is stationary, so its root error enters squared): findroot from the double
    root, then the Beta mass of [x2, x1] by mpmath.quad (a smooth integrand on a short interval)."""
    B, h2 = mpmath.mpf(B), mpmath.mpf(1) / 2
    if B < 5:
        return mpmath.betainc((B - 2) / 2, h2, 0, B / (2 * B - 1), regularized=True)
    with mpmath.extraprec(2 * int(mpmath.log(B, 2)) + 30):
        h = lambda u: (mpmath.log1p(1 / (B - 1)) / 2 + (B - 4) / 2 * mpmath.log1p(-u / (B - 1))  # noqa: E731
                       + (B - 1) / 2 * mpmath.log1p(u / B))
        u = mpmath.findroot(h, mpmath.mpf(density_crossing(float(B))))  # secant from the double-precision root
        x2, width = u / (B + u), u * (1 + u) / ((B - 1) * (B + u))
        a = (B - 2) / 2
        norm = mpmath.exp(mpmath.loggamma(a + h2) - mpmath.loggamma(a)) / mpmath.sqrt(mpmath.pi)
        dens = lambda t: mpmath.exp(-mpmath.log(t) / 2 + (a - 1) * mpmath.log1p(-t))  # noqa: E731
        return norm * mpmath.quad(dens, [x2, x2 + width])


register(ClosedForm(
    "bn.tv_proxy", "Total-variation distance between the paper's leave-one-out law (bn.pdf) and torch's BatchNorm1d "
    "law (bn.pdf_canonical); ~ 0.633/B for large B.", (Param("B", "integer", "BatchNorm batch size", minimum=3),),
    Provenance(NORM, "beyond the paper (quantifies the proxy of Eqs. 27-29)",
               "f_c/f_p crosses 1 once on b > 0 (at b = c), so TV = 2[F_c(c) - F_p(c)]; for B = 3, 4 there is no "
               "crossing and TV = P(|B~| > sqrt(B-1))"),
    builder=lambda: NumericRoute(
        _tv_numpy, _tv_mp,
        "root of the density log-ratio (Brent; mpmath secant) + Beta mass between the two CDF arguments",
        "relative error <= 1e-13 for every B (tests: a quadrature of |f_c - f_p| and the large-B expansion); the TV is "
        "stationary in the crossing point, so root error enters squared",
        sp.Integral(sp.Abs(PROXY_PDF - CANON_PDF), (b, -sp.oo, sp.oo)) / 2)))
