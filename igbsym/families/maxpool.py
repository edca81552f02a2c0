"""Max-pool family: the extreme-value law of a pooled unit and the IGB it creates and amplifies.

Paper: igb-initial-guessing-bias.txt Sec. 4.1 (ReLU + MaxPool, Eq. 13), Sec. 4.2 (Eqs. 16-19), App. C.1 (Eqs. 80-85),
C.2-C.3 (Eqs. 92-94, 101-103), D.2 (Eqs. 115-117, max-pool peaks) and E (Eqs. 118-125).

A pooled unit is M_k = max(φ(X_1), ..., φ(X_k)) with X_j iid N(0, σ²) and φ = identity ('identity', linear + pool)
or φ = ReLU ('relu'); its CDF is Φ(x/σ)^k, times 1{x ≥ 0} for ReLU (an atom of mass 2^-k at 0).

Design of k. ``k`` is a *numeric* integer parameter (not structural) in every form, so a whole array of (k, σ)
pairs is one vectorised call (10^4 pairs with k up to 10^6 in a few tens of ms, bench/bench_maxpool.py). The
moments have no closed form in k; their NumPy route evaluates, per distinct k,

* the exact closed forms of ``EXACT_MOMENTS`` (identity: k <= 5, ReLU: k <= 4; derived and proved from the
  defining integral in derivations/maxpool.py) where they exist, and otherwise
* E[h(M_k)] = ∫ h(x_k(t)) e^{-t-e^{-t}} dt, the probability-integral substitution x_k(t) = Φ^{-1}(exp(-e^{-t}/k))
  that turns the law of M_k into a standard Gumbel variable t for every k; a 40-point Gauss rule for that
  Gumbel weight (built once by the Stieltjes procedure) integrates the smooth x_k(t) to ~1e-15;
* for ReLU the exact correction E[ReLU(M)] = E[M] + ∫_0^∞ Q(y)^k dy, E[ReLU(M)²] = E[M²] - k∫_0^∞ y²φ(y)Q(y)^{k-1}
  dy (Q = 1 - Φ) by composite Gauss-Legendre for k < 64; for k >= 64 both terms are < 1e-20 relative and omitted.

The mpmath route is independent: tanh-sinh quadrature of the defining integral ∫ x dΦ(x/σ)^k in x.
"""
from __future__ import annotations


import mpmath
import numpy as np
import sympy as sp
from scipy import special

from ..extreme import (EXACT_MOMENTS, EXACT_TEXT, QUAD_ERROR, exact_mean, exact_var,
                       mp_moments, quantile_at_gumbel, unit_moments)
from ..form import ClosedForm, NumericRoute, Param, Provenance
from ..functions import Phi, PhiInv
from ..numerics import row_dot
from ..registry import register

IGB = "igb-initial-guessing-bias.txt"
ACTS = ("identity", "relu")
x, t = sp.Symbol("x", real=True), sp.Symbol("t", real=True)
k = sp.Symbol("k", integer=True)
sigma = sp.Symbol("sigma", positive=True)
D = sp.Symbol("D", integer=True)

K_MAX = 10**9
K = Param("k", "integer", "pooling kernel size (number of pooled units)", minimum=1, maximum=K_MAX)
K2 = Param("k", "integer", "pooling kernel size (number of pooled units)", minimum=2, maximum=K_MAX)
X = Param("x", "real", "value of the pooled unit")
SIGMA = Param("sigma", "positive", "standard deviation of the pre-activations N(0, sigma^2)")
ACTIVATION = Param("activation", "choice", "identity (linear + pool) or relu (ReLU + pool)", choices=ACTS)

# --- law ------------------------------------------------------------------------------------------------------
_z = x / sigma
CDF = {"identity": Phi(_z) ** k, "relu": sp.Heaviside(x, 1) * Phi(_z) ** k}
_DENSITY = k * sp.exp(-_z**2 / 2) / (sp.sqrt(2 * sp.pi) * sigma) * Phi(_z) ** (k - 1)
PDF = {"identity": _DENSITY, "relu": sp.Heaviside(x, 1) * _DENSITY}
_LOG_SQ2PI = 0.5 * np.log(2 * np.pi)


def _cdf_kernel(activation, x, k, sigma):
    """exp(k log Φ(x/σ)): no underflow of Φ^k before it is truly < 1e-308, exact 1 at Φ = 1."""
    out = np.exp(k * special.log_ndtr(x / sigma))
    return out if activation == "identity" else np.where(x < 0, 0.0, out)


def _pdf_kernel(activation, x, k, sigma):
    z = x / sigma
    tail = np.where(k == 1, 0.0, (k - 1) * special.log_ndtr(z))
    out = np.exp(np.log(k) - z * z / 2 - _LOG_SQ2PI - np.log(sigma) + tail)
    return out if activation == "identity" else np.where(x < 0, 0.0, out)


# --- forms: law ---------------------------------------------------------------------------------------------------
ATOM_NOTE = ("relu: an atom of mass 2^-k at 0 (all k pre-activations negative); the pdf is the density of the "
             "absolutely continuous part (x > 0), and the cdf includes the atom (F(0) = 2^-k)")
register(ClosedForm(
    "maxpool.cdf", "P(M_k <= x) for M_k = max of k iid phi(N(0, sigma^2)), phi = identity or ReLU.",
    (X, K, SIGMA, ACTIVATION), Provenance(IGB, "App. C.1, Eqs. 81 and 84", ATOM_NOTE),
    builder=lambda activation: CDF[activation], kernel=_cdf_kernel,
    display=r"\Phi\left(\tfrac{x}{\sigma}\right)^{k}\ (\text{identity}),\quad "
            r"\theta(x)\,\Phi\left(\tfrac{x}{\sigma}\right)^{k}\ (\text{relu}, \theta(0) = 1)"))
register(ClosedForm(
    "maxpool.pdf", "Density of M_k (for relu: of its continuous part, x > 0; the atom 2^-k at 0 is in maxpool.cdf).",
    (X, K, SIGMA, ACTIVATION), Provenance(IGB, "App. C.1, Eqs. 82-85", ATOM_NOTE + "; Eq. 85 as printed lost its "
                                                                                 "symbols and is rebuilt here"),
    builder=lambda activation: PDF[activation], kernel=_pdf_kernel,
    display=r"\frac{k}{\sigma}\,\phi\left(\tfrac{x}{\sigma}\right)\Phi\left(\tfrac{x}{\sigma}\right)^{k-1}"
            r"\ (\text{relu: times } \theta(x);\ \text{plus the atom } 2^{-k}\delta(x))"))

# --- forms: moments -------------------------------------------------------------------------------------------------


def _defining(activation: str, power: int):
    lo = 0 if activation == "relu" else -sp.oo
    return sp.Integral(x**power * sp.diff(Phi(_z) ** k, x), (x, lo, sp.oo))


def _moment_route(activation: str, centred: bool) -> NumericRoute:
    def np_route(k, sigma):
        mean, var = unit_moments(activation, k)
        return var * sigma**2 if centred else mean * sigma

    def mp_route(k, sigma):
        mean, var = mp_moments(activation, k, sigma)
        return var if centred else mean

    first = _defining(activation, 1)
    defining = _defining(activation, 2) - first**2 if centred else first
    return NumericRoute(np_route, mp_route, EXACT_TEXT + "; otherwise Gumbel-variable Gauss quadrature",
                        QUAD_ERROR, defining)


def _exact_display(which) -> str:
    from ..latex import to_latex
    rows = []
    for act in ACTS:
        cases = ", ".join(f"k={kk}: {to_latex(which(act, kk))}" for kk in sorted(EXACT_MOMENTS[act]))
        rows.append(r"\text{%s: }%s" % (act, cases))
    return r"\\ ".join(rows)


_MEAN_INT = r"\int x\,\mathrm{d}\,\Phi\left(\tfrac{x}{\sigma}\right)^{k}\ (\text{relu: } \int_0^\infty)"
register(ClosedForm(
    "maxpool.mean", "E[M_k]: mean of a max-pooled unit (exact for small k, Gumbel-variable quadrature otherwise).",
    (K, SIGMA, ACTIVATION), Provenance(IGB, "App. C.1 Eq. 85, App. C.3 Eq. 101 (computed numerically in the paper)"),
    builder=lambda activation: _moment_route(activation, False),
    display=_MEAN_INT + r";\ \text{exact: }" + _exact_display(exact_mean)))
register(ClosedForm(
    "maxpool.var", "Var[M_k]: variance of a max-pooled unit (exact for small k, Gumbel-variable quadrature otherwise).",
    (K, SIGMA, ACTIVATION), Provenance(IGB, "App. C.3 Eq. 102 (computed numerically in the paper)"),
    builder=lambda activation: _moment_route(activation, True),
    display=r"E[M_k^2] - E[M_k]^2;\ \text{exact: }" + _exact_display(exact_var)))

# --- forms: Gumbel (Fisher-Tippett-Gnedenko) constants ---------------------------------------------------------------
_L = sp.log(k)
GUMBEL_LOC = sigma * (sp.sqrt(2 * _L) - (sp.log(_L) + sp.log(4 * sp.pi)) / (2 * sp.sqrt(2 * _L)))
GUMBEL_SCALE = sigma / sp.sqrt(2 * _L)
GUMBEL_NOTE = ("(M_k - a_k)/b_k -> standard Gumbel; the next-order term -(ln ln k + ln 4 pi)/(2 sqrt(2 ln k)) in a_k "
               "is kept; the Kolmogorov distance to the true law still decays only like (ln ln k)^2/ln k (Hall 1979; "
               "measured in derivations/maxpool.py and the checks)")
register(ClosedForm(
    "maxpool.gumbel_loc", "Fisher-Tippett-Gnedenko location a_k of the max of k iid N(0, sigma^2), with the "
    "next-order correction.", (K2, SIGMA), Provenance(IGB, "App. C.1 (after Eq. 84), App. E", GUMBEL_NOTE),
    expr=GUMBEL_LOC))
register(ClosedForm(
    "maxpool.gumbel_scale", "Fisher-Tippett-Gnedenko scale b_k = sigma/sqrt(2 ln k) of the max of k iid N(0, sigma^2).",
    (K2, SIGMA), Provenance(IGB, "App. C.1 (after Eq. 84), App. E", GUMBEL_NOTE), expr=GUMBEL_SCALE))

def gumbel_kolmogorov(kk: int, n: int = 20001) -> float:
    """Measured Gumbel error: sup_x |Φ(x)^k − Λ((x − a_k)/b_k)| on a grid of -8..+30 Gumbel scales around a_k."""
    loc, scale = (float(sp.N(e.subs({k: kk, sigma: 1}), 20)) for e in (GUMBEL_LOC, GUMBEL_SCALE))
    grid = loc + scale * np.linspace(-8, 30, n)
    return float(np.max(np.abs(np.exp(kk * special.log_ndtr(grid)) - np.exp(-np.exp(-(grid - loc) / scale)))))


# --- forms: gamma ------------------------------------------------------------------------------------------------
GAMMA_NOTE = ("gamma = E[M_k]^2/Var[M_k] (scale-free): Var_W(mu_c) = N sigma_v^2 E[M_k]^2 and Var_chi(O_c) = "
              "N sigma_v^2 Var[M_k] for N pooled units with zero-mean output weights (Eqs. 16-19, 101-103); "
              "linear + pool has gamma > 0 for every k >= 2 (pooling alone creates IGB, Sec. 4.2)")


def _gamma_case(activation):
    def np_route(k):
        mean, var = unit_moments(activation, k)
        return mean**2 / var

    def mp_route(k):
        mean, var = mp_moments(activation, k)
        return mean**2 / var

    m = _defining(activation, 1).subs(sigma, 1)
    return NumericRoute(np_route, mp_route, "E[M_k]^2/Var[M_k] with " + EXACT_TEXT + "; quadrature otherwise",
                        "relative error <= 3e-13 (from the moment bound)", m**2 / (_defining(activation, 2).subs(
                            sigma, 1) - m**2))


register(ClosedForm(
    "maxpool.gamma", "IGB strength gamma of a single hidden layer with max-pooling of kernel k (Kaiming weights, "
    "N(0, I) data, infinite width).", (K, ACTIVATION), Provenance(IGB, "Sec. 4.2 Eqs. 16-19, App. C.3, App. E",
                                                                GAMMA_NOTE),
    builder=_gamma_case, display=r"\frac{E[M_k]^2}{\mathrm{Var}[M_k]},\ \gamma(\text{identity}, 2) = "
                                 r"\gamma(\text{relu}, 1) = \frac{1}{\pi - 1},\ "
                                 r"\gamma \sim \frac{24}{\pi^2}\ln^2 k\ (k \to \infty)"))

# --- forms: App. D.2 extreme bins ---------------------------------------------------------------------------------
RULES = ("threshold", "binomial")
H_TRAP, T_TRAP = 0.2, np.arange(-6.0, 45.0 + 0.1, 0.2)


def mass_binomial(gamma, dd):
    """2 E_z[Φ(√γ z)^D] = 2 E[Φ(-M_D/√γ)] (M_D: max of D iid N(0, 1)); trapezoid in the Gumbel variable of M_D."""
    gamma, dd = np.broadcast_arrays(np.asarray(gamma, float), np.asarray(dd, float))
    shape, gamma, dd = gamma.shape, gamma.ravel(), dd.ravel()
    out = 2.0 ** (1 - dd)  # gamma = 0: G0 = Binomial(D, 1/2)/D exactly
    pos = gamma > 0
    d_uniq, row = np.unique(dd[pos], return_inverse=True)
    xs = quantile_at_gumbel(T_TRAP[None, :], d_uniq[:, None])   # depends on D only
    w = H_TRAP * np.exp(-T_TRAP - np.exp(-T_TRAP))
    out[pos] = 2 * row_dot(special.ndtr(-xs[row] / np.sqrt(gamma[pos])[:, None]), w)
    return out.reshape(shape)


def _mass_route(rule: str, activation: str) -> NumericRoute:
    def np_route(k, D):
        mean, var = unit_moments(activation, k)
        gamma = mean**2 / var
        if rule == "binomial":
            return mass_binomial(gamma, D)
        with np.errstate(divide="ignore", invalid="ignore"):   # γ = 0 (identity, k = 1): G0 = 1/2, never extreme
            return np.where(gamma > 0, 2 * special.ndtr(special.ndtri(1 / D) / np.sqrt(gamma)), 0.0)

    def mp_route(k, D):
        mean, var = mp_moments(activation, k)
        gamma, dd = mean**2 / var, int(D)
        if rule == "threshold":
            xthr = mpmath.sqrt(2) * mpmath.erfinv(mpmath.mpf(2) / dd - 1)
            return 2 * mpmath.ncdf(xthr / mpmath.sqrt(gamma)) if gamma > 0 else mpmath.mpf(0)
        if gamma == 0:
            return mpmath.mpf(2) ** (1 - dd)
        s = mpmath.sqrt(gamma)
        f = lambda z: mpmath.npdf(z) * mpmath.exp(dd * mpmath.log(mpmath.ncdf(s * z)))  # noqa: E731
        step = mpmath.sqrt(2 * mpmath.log(dd)) / s      # where Φ(s z)^D switches on, width ~ 1/(s·sqrt(2 ln D))
        width = 1 / (s * mpmath.sqrt(2 * mpmath.log(dd)))
        pts = sorted({mpmath.mpf(p) for p in (-2, 0, 2, 4, 6, 8)}
                     | {step + j * width for j in (-8, -3, -1, 0, 1, 3, 8)})
        with mpmath.extraprec(mpmath.mp.prec // 2 + 30):   # D up to 1e9: the quadrature's error estimate needs it
            return 2 * mpmath.quad(f, [-mpmath.inf] + pts + [mpmath.inf])

    g, z = sp.Symbol("gamma", positive=True), sp.Symbol("z", real=True)
    defining = (2 * Phi(PhiInv(1 / D) / sp.sqrt(g)) if rule == "threshold" else
                2 * sp.Integral(sp.exp(-z**2 / 2) / sp.sqrt(2 * sp.pi) * Phi(sp.sqrt(g) * z) ** D, (z, -sp.oo, sp.oo)))
    method = ("paper's threshold rule (Eqs. 115-116): G0 counts as extreme when its population value is < 1/D or "
              "> 1 - 1/D" if rule == "threshold" else
              "exact finite-D law: G0_hat = Binomial(D, G0)/D, so P(G0_hat in {0, 1}) = 2 E[Phi(sqrt(gamma) z)^D]")
    return NumericRoute(np_route, mp_route, method + "; gamma = maxpool.gamma(k)",
                        "relative error <= 1e-12 for gamma >= 0.4 (gamma of maxpool.gamma for k >= 2) and D <= 1e9",
                        defining)


register(ClosedForm(
    "maxpool.extreme_mass", "Probability that G0, measured on D data points, lands in the extreme bins {0, 1} "
    "(the max-pool peaks), for a single hidden layer with max-pool kernel k.",
    (K, ACTIVATION, Param("D", "integer", "dataset size (resolution 1/D of G0)", minimum=2, maximum=K_MAX),
     Param("rule", "choice", "threshold (the paper's App. D.2 recipe) or binomial (exact finite-D law)",
           choices=RULES, default="threshold")),
    Provenance(IGB, "App. D.2, Eqs. 115-117 (with App. D.1 Eq. 114)",
               "the threshold rule replaces the binomial finite-D law of G0_hat by a cut of the population G0 at "
               "1/D; for a power-law edge F(g) ~ g^(1/gamma) the two differ by a factor ~Gamma(1 + 1/gamma)"),
    builder=lambda rule, activation: _mass_route(rule, activation),
    display=r"2\,\Phi\left(\Phi^{-1}(1/D)/\sqrt{\gamma_k}\right)\ (\text{threshold}),\quad "
            r"2\int \phi(z)\,\Phi(\sqrt{\gamma_k} z)^{D}\,dz\ (\text{binomial})"))
