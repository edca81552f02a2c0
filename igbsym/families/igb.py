"""The Initial Guessing Bias law: γ of a single hidden layer and the law of G0.

Paper: igb-initial-guessing-bias.txt Sec. 3–4 (Def. of γ, Eqs. 16–19), App. C–D (law of G0), App. G
(activation rule); igb-talk-slides.txt (c = γ/(1+γ)); norm-placement-bn-ln.txt Def. C.2.

With x = Φ⁻¹(G0), the law is x ~ N(0, γ) (two classes, infinite width and data), so
f(g; γ) = γ^{-1/2} exp((1 − 1/γ) x²/2), F(g; γ) = Φ(x/√γ), Q(p; γ) = Φ(√γ Φ⁻¹(p)).
Limits: γ = 0 is a point mass at 1/2, γ = 1 the uniform law, γ = ∞ half the mass at each of 0 and 1.
"""
import mpmath
import numpy as np
import sympy as sp
from scipy import special

from .. import activations as acts
from .. import params as P
from ..form import ClosedForm, Condition, NumericRoute, Param, Provenance
from ..functions import Phi, PhiInv, ndtri_nearer, ndtri_symmetric
from ..gauss import activation as gauss_act
from ..ops import SIGMA_W as KAIMING
from ..registry import get, register

IGB = "igb-initial-guessing-bias.txt"
g, p, q = sp.Symbol("g", positive=True), sp.Symbol("p", positive=True), sp.Symbol("q", positive=True)
gamma = sp.Symbol("gamma", nonnegative=True)
gamma_pos = sp.Symbol("gamma", positive=True)
x = PhiInv(g)

PDF = sp.exp((1 - 1 / gamma_pos) * x**2 / 2) / sp.sqrt(gamma_pos)
LOGPDF = (1 - 1 / gamma_pos) * x**2 / 2 - sp.log(gamma_pos) / 2
g_closed = sp.Symbol("g", nonnegative=True)
CDF = Phi(PhiInv(g_closed) / sp.sqrt(gamma))
QUANTILE = Phi(sp.sqrt(gamma) * PhiInv(p))
P_OUTSIDE = 2 * Phi(PhiInv(q) / sp.sqrt(gamma))

G_OPEN = Param("g", "positive", "fraction of the dataset put in class 0")
GAMMA_POS = Param("gamma", "positive", "IGB strength Var_W(mu)/Var_chi(O)")
GAMMA = Param("gamma", "nonnegative", "IGB strength Var_W(mu)/Var_chi(O) (0 and inf are the exact limits)",
              allow_inf=True)
G_LT1 = Condition(sp.Lt(g, 1), "0 < g < 1")
LAW = Provenance(IGB, "Sec. 4, App. D (law of G0; x = Phi^{-1}(G0) ~ N(0, gamma))")


def _shape(g, gamma):
    """(x²(γ − 1)/γ, γ as an array), x = Φ⁻¹(g), by one formula for every γ: x²((γ − 1)/max(γ, 1))/min(γ, 1).
    γ − 1 is exact near γ = 1 (1 − 1/γ rounds 1/γ first: at γ = 1 − 2⁻⁵³ it is off by a factor 2). For γ < 1 this is
    x²(γ − 1)/γ with x²(γ − 1) first (|x| < 38.5, so x² < 1500): 1/γ never overflows at subnormal γ; for γ ≥ 1 it is
    x²·((γ − 1)/γ): x²(γ − 1) never overflows at γ near the double maximum."""
    x2 = ndtri_nearer(g)
    x2 *= x2
    gamma = np.asarray(gamma, dtype=float)
    ratio = np.subtract(gamma, 1.0, out=np.empty(gamma.shape))
    ratio /= np.maximum(gamma, 1.0)
    shape = np.multiply(x2, ratio, out=np.empty(np.broadcast_shapes(x2.shape, gamma.shape)))
    shape /= np.minimum(gamma, 1.0)
    return shape, gamma


def _logpdf(g, gamma):
    """½[x²(γ − 1)/γ − log γ] (see _shape)."""
    shape, gamma = _shape(g, gamma)
    shape -= np.log(gamma)
    shape *= 0.5
    return shape


_EXP_SAFE = (-708.0, 709.0)  # exp of a half-shape in here is a normal double, so exp(h)/√γ neither over- nor underflows


def _pdf(g, gamma):
    """f = exp(h)/√γ, h = x²(γ − 1)/(2γ) (one exp, one sqrt, no log) where exp(h) is a normal double; elsewhere
    exp(log f) (γ far from 1 with |x| large: exp(h) alone would overflow or lose digits in the subnormal range while f
    need not). The route is chosen point by point, so an array call gives each point's scalar value."""
    shape, gamma = _shape(g, gamma)
    shape *= 0.5
    out = np.exp(shape, out=np.empty(shape.shape))
    out /= np.sqrt(gamma)
    lo, hi = _EXP_SAFE
    if out.size and not (shape.min() >= lo and shape.max() <= hi):
        gamma = np.broadcast_to(gamma, shape.shape)
        sel = ~((shape >= lo) & (shape <= hi))
        out[sel] = np.exp(shape[sel] - 0.5 * np.log(gamma[sel]))
    return out


def _scaled_phi(z, scale):
    """Φ(z·scale), scale ≥ 0, with the exact limits: z = 0 gives 1/2, z = ±∞ gives 0/1 for every scale,
    finite z ≠ 0 with scale = ∞ gives 0/1."""
    z, scale = np.broadcast_arrays(np.asarray(z, float), np.asarray(scale, float))
    finite_z = np.where(np.isinf(z), 1.0, z)
    arg = np.where(z == 0, 0.0, np.where(np.isinf(z), z, np.where(np.isinf(scale), np.sign(z) * np.inf,
                                                                       finite_z * np.where(np.isinf(scale), 0, scale))))
    return special.ndtr(arg)


def _cdf(g, gamma):
    xx = ndtri_symmetric(g)  # −∞ at g = 0, +∞ at g = 1
    return _scaled_phi(xx, 1 / np.sqrt(gamma))


def _quantile(p, gamma):
    return _scaled_phi(ndtri_symmetric(p), np.sqrt(gamma))


def _cdf_limit(g, gamma):
    """Exact F(g; γ) at γ ∈ {0, ∞} and g ∈ {0, 1} (mpmath route)."""
    if g == 0 or g == 1:
        return g
    if gamma == 0:
        return 0 if g < 0.5 else (0.5 if g == 0.5 else 1)
    return 0.5 if gamma == mpmath.inf else None


def _quantile_limit(p, gamma):
    """Exact Q(p; γ) at γ ∈ {0, ∞}."""
    if gamma == 0:
        return 0.5
    if gamma == mpmath.inf:
        return 0 if p < 0.5 else (0.5 if p == 0.5 else 1)
    return None


register(ClosedForm(
    "igb.pdf", "Density f(g; gamma) of G0, the fraction of a balanced dataset guessed as class 0.",
    (G_OPEN, GAMMA_POS), Provenance(IGB, "Sec. 4, App. D (f_G0)",
                                    "gamma = 0 is a point mass at 1/2: use igb.cdf; the pdf overflows to inf only "
                                    "where its true value exceeds 1.8e308 — igb.logpdf never does"),
    expr=PDF, conditions=(G_LT1,), kernel=_pdf))
register(ClosedForm(
    "igb.logpdf", "log f(g; gamma), overflow-free in both tails.", (G_OPEN, GAMMA_POS), LAW,
    expr=LOGPDF, conditions=(G_LT1,), kernel=_logpdf))
register(ClosedForm(
    "igb.cdf", "P(G0 <= g) = Phi(Phi^{-1}(g)/sqrt(gamma)); gamma = 0 and inf are the limit laws (value 1/2 at the "
    "atom g = 1/2 for gamma = 0).", (Param("g", "nonnegative", "fraction guessed as class 0"), GAMMA), LAW,
    expr=CDF, conditions=(Condition(sp.Le(g_closed, 1), "0 <= g <= 1"),), kernel=_cdf, limit=_cdf_limit))
register(ClosedForm(
    "igb.quantile", "The p-quantile of G0: Phi(sqrt(gamma) Phi^{-1}(p)).",
    (Param("p", "positive", "probability level"), GAMMA), LAW, expr=QUANTILE,
    conditions=(Condition(sp.Lt(p, 1), "0 < p < 1"),), kernel=_quantile, limit=_quantile_limit))
register(ClosedForm(
    "igb.corr", "Mean-field correlation c = gamma/(1+gamma) between outputs of two inputs (c = 1 at gamma = inf).",
    (GAMMA,), Provenance("igb-talk-slides.txt", "IGB and mean-field correlation"), expr=gamma / (1 + gamma),
    kernel=lambda gamma: np.where(np.isinf(gamma), 1.0, gamma / (1 + np.where(np.isinf(gamma), 0.0, gamma))),
    limit=lambda gamma: 1 if gamma == mpmath.inf else None))
register(ClosedForm(
    "igb.p_outside", "P(G0 < q or G0 > 1-q): the mass of strongly prejudiced networks (regime thresholds).",
    (GAMMA, Param("q", "positive", "edge of the central band [q, 1-q]", default=0.1)), LAW, expr=P_OUTSIDE,
    conditions=(Condition(sp.Lt(q, sp.S.Half), "0 < q < 1/2"),),
    kernel=lambda gamma, q: 2 * _scaled_phi(special.ndtri(q), 1 / np.sqrt(gamma)),
    limit=lambda gamma, q: 0 if gamma == 0 else (1 if gamma == mpmath.inf else None)))

# --- gamma of one hidden layer ------------------------------------------------------------------------
SIGMA_W = Param("sigma_w", "positive", "Kaiming gain: weights N(0, sigma_w^2/fan_in); default sqrt(2), the papers' "
                "Kaiming setting (igbsym.spec.SIGMA_W, the one default of the library)", default=KAIMING)
A_DEFAULT = P.LEAKY_A
_sw, _a = sp.Symbol("sigma_w", positive=True), sp.Symbol("a", real=True)


def gamma_case(activation):
    """γ = E[φ(z)]² / Var[φ(z)], z ~ N(0, σ_w²): the centre spread over the data variance of one node.

    Inputs N(0, I_d) give pre-activations N(0, σ_w² ‖x‖²/d) → N(0, σ_w²) per node; output weights of zero mean
    make Var_W(μ_c) ∝ E[φ]² and Var_χ(O_c) ∝ Var[φ] with the same factor (paper Eqs. 16–19).
    """
    mean, var = get("activation.mean"), get("activation.var")
    m, v = mean.case(activation=activation), var.case(activation=activation)
    if not isinstance(m, NumericRoute) and not isinstance(v, NumericRoute):
        s = sp.Symbol("sigma", positive=True)
        return sp.simplify((m**2 / v).subs(s, _sw))
    if not isinstance(m, NumericRoute) and m == 0:
        return sp.S.Zero
    small, large = _small_sigma_gamma(activation), _large_sigma_gamma(activation)

    def ratio(sigma_w, a):
        sigma_w, a = np.broadcast_arrays(np.asarray(sigma_w, float), np.asarray(a, float))
        out = np.empty(sigma_w.shape)
        tiny = sigma_w <= _SMALL_SIGMA if small is not None else np.zeros(sigma_w.shape, bool)
        huge = sigma_w >= _LARGE_SIGMA if large is not None else np.zeros(sigma_w.shape, bool)
        mid = ~(tiny | huge)
        if mid.any():   # the limits take over where mean and variance under- or overflow
            m = mean.numpy(activation=activation, sigma=sigma_w[mid], a=a[mid])
            out[mid] = m * (m / var.numpy(activation=activation, sigma=sigma_w[mid], a=a[mid]))  # m² underflows
        out[tiny] = small(sigma_w[tiny]) if tiny.any() else 0
        out[huge] = large
        return out[()] if out.ndim == 0 else out
    return NumericRoute(
        ratio,
        lambda sigma_w, a: mean.mp(activation=activation, sigma=sigma_w, a=a, dps=_dps()) ** 2
        / var.mp(activation=activation, sigma=sigma_w, a=a, dps=_dps()),
        "ratio of quadratures; for sigma_w <= 1e-100 the Taylor limit (mean and variance both underflow there), for "
        "sigma_w >= 1e100 the limit of a linear far field (the variance overflows from sigma_w ~ 1e154)",
        "relative error <= 3e-12 (twice the quadrature bound plus rounding); the small- and large-sigma limits are "
        "exact to O(sigma_w^2), O(sigma_w^-2) < 1e-199 relative",
        sp.Function("E")(sp.Symbol("phi"))**2 / sp.Function("Var")(sp.Symbol("phi")))


_SMALL_SIGMA = 1e-100  # below, E[phi] and Var[phi] underflow (gelu at 1e-308: 0/0) but the Taylor limit is exact


def _small_sigma_gamma(activation):
    """γ(σ) for σ <= 1e-100 from φ's Taylor coefficients at 0 (``igbsym.gauss.activation.entry``): E φ(σZ) =
    φ(0) + φ''(0)σ²/2 + O(σ⁴) and Var φ(σZ) = φ'(0)²σ² + O(σ⁴), so γ = φ(0)²/(φ'(0)σ)² (1 + O(σ²)) if φ(0) != 0,
    else (φ''(0)/(2φ'(0)))² σ² (1 + O(σ²)); None where φ'(0) = 0 or φ is not a smooth function of x alone (those
    cases are exact forms)."""
    if not _generic(activation):
        return None
    e = gauss_act.entry(activation)
    d0, d1, d2 = e.phi0, e.series[0], 2 * e.series[1]
    if d1 == 0:
        return None
    if d0 != 0:
        c = float(d0**2 / d1**2)
        return lambda sigma_w: c / np.square(sigma_w)  # inf where the true value exceeds the double range
    c = float((d2 / (2 * d1)) ** 2)
    return lambda sigma_w: c * np.square(sigma_w)


_LARGE_SIGMA = 1e100  # above, the large-sigma limit of a linear far field (Var[phi] overflows from sigma ~ 1e154)


def _large_sigma_gamma(activation):
    """γ(σ) for σ >= 1e100 where φ(x) = c₊x + b₊ (x > 0), c₋x + b₋ (x < 0) plus a remainder r with x³r(x) -> 0 at
    ±∞ (``igbsym.gauss.activation.far_field``; SiLU, GELU: exponentially small): E φ(σZ) = σ(c₊ − c₋)/√(2π) + O(1)
    and E φ(σZ)² = σ²(c₊² + c₋²)/2 + O(σ), so γ = (c₊ − c₋)²/(π(c₊² + c₋²) − (c₊ − c₋)²) (1 + O(σ⁻¹)) (ReLU's
    1/(π − 1) at c₊ = 1, c₋ = 0; the O(σ⁻¹) term is < 1e-99 relative); None where φ is bounded (c₊ = c₋ = 0: its
    moments stay finite and the quadrature ratio holds), or has no such far field."""
    if not _generic(activation):
        return None
    far = gauss_act.far_field(activation)
    if far is None or (far.cp == 0 and far.cm == 0):
        return None
    cp, cm = far.cp, far.cm
    return float((cp - cm) ** 2 / (sp.pi * (cp**2 + cm**2) - (cp - cm) ** 2))


def _generic(activation) -> bool:
    """A smooth activation of x alone: its Taylor series and far field come from igbsym.gauss.activation."""
    act = acts.ACTIVATIONS[activation]
    return act.smooth and not (act.expr.free_symbols - {acts.x_})


def _leaky_gamma(a):
    """(1 - a)²/((π - 1)a² + 2a + π - 1) with numerator and denominator divided by s² = max(1, |a|)² (a² overflows
    from |a| = 1.3e154); the quadratic has no real root, so the denominator loses no digits."""
    a = np.asarray(a, dtype=float)
    s = np.maximum(1.0, np.abs(a))
    t = a / s
    num = (1 - a) / s
    return num * num / ((np.pi - 1) * t * t + 2 * t / s + (np.pi - 1) / (s * s))


def _exact_gamma_kernel(activation, sigma_w, a):
    """NumPy kernel of the exact cases: leaky_relu by _leaky_gamma, the others are constants."""
    shape = np.broadcast(np.asarray(sigma_w), np.asarray(a)).shape
    if activation == "leaky_relu":
        return np.broadcast_to(_leaky_gamma(a), shape) + 0.0
    return np.full(shape, float(gamma_case(activation)))


def _dps():
    import mpmath
    return mpmath.mp.dps


register(ClosedForm(
    "igb.gamma", "gamma = Var_W(mu_c)/Var_chi(O_c) of a single-hidden-layer net (Kaiming weights, N(0, I) data).",
    (P.ACTIVATION, SIGMA_W, A_DEFAULT),
    Provenance(IGB, "Sec. 4.1, Eqs. 16-19; App. G (antisymmetric activations give 0)"), builder=gamma_case,
    kernel=_exact_gamma_kernel))
