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

from functools import lru_cache

import mpmath
import numpy as np
import sympy as sp
from scipy import special

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


# --- exact moments (proved in derivations/maxpool.py) ------------------------------------------------------------
_pi, _r2, _r3 = sp.pi, sp.sqrt(2), sp.sqrt(3)
#: (E[M_k], E[M_k^2]) for σ = 1; scale by σ and σ².
EXACT_MOMENTS = {
    "identity": {
        1: (sp.S.Zero, sp.S.One),
        2: (1 / sp.sqrt(_pi), sp.S.One),
        3: (3 / (2 * sp.sqrt(_pi)), 1 + _r3 / (2 * _pi)),
        4: (6 * sp.atan(_r2) / _pi ** sp.Rational(3, 2), 1 + _r3 / _pi),
        5: (5 * (6 * sp.atan(_r2) - _pi) / (2 * _pi ** sp.Rational(3, 2)),
            1 + 5 * _r3 * sp.atan(sp.sqrt(15) / 3) / _pi**2),
    },
    "relu": {
        1: (1 / sp.sqrt(2 * _pi), sp.S.Half),
        2: ((1 + _r2) / (2 * sp.sqrt(_pi)), sp.Rational(3, 4) + 1 / (2 * _pi)),
        3: (3 * (_pi * (4 + _r2) - 4 * sp.atan(_r2)) / (8 * _pi ** sp.Rational(3, 2)),
            (6 + 2 * _r3 + 7 * _pi) / (8 * _pi)),
        4: ((6 + _r2) / (4 * sp.sqrt(_pi)), (36 + 32 * _r3 + 45 * _pi) / (48 * _pi)),
    },
}


def exact_mean(activation: str, kk: int):
    """E[M_k] as an exact SymPy expression in σ, or None where no closed form is registered."""
    pair = EXACT_MOMENTS[activation].get(kk)
    return None if pair is None else sigma * pair[0]


def exact_var(activation: str, kk: int):
    pair = EXACT_MOMENTS[activation].get(kk)
    return None if pair is None else sp.radsimp(sigma**2 * (pair[1] - pair[0] ** 2))


EXACT_TEXT = "exact closed forms for k <= 5 (identity) and k <= 4 (relu)"


@lru_cache(maxsize=None)
def _exact_values(activation: str):
    """{k: (mean, var)} at σ = 1 as floats (30-digit SymPy evaluation)."""
    return {kk: (float(sp.N(m, 30)), float(sp.N(s - m**2, 30))) for kk, (m, s) in EXACT_MOMENTS[activation].items()}


# --- quadrature --------------------------------------------------------------------------------------------------
X_OF_T = PhiInv(sp.exp(-sp.exp(-t) / k))     # the quantile of M_k at Gumbel level exp(-e^-t)
GUMBEL_WEIGHT = sp.exp(-t - sp.exp(-t))
N_GAUSS = 40
QUAD_ERROR = ("k-independent Gumbel substitution + 40-point Gauss rule for the weight e^{-t-e^{-t}}: relative error "
              "<= 1e-13 (mean: absolute 1e-13·sigma at k = 1) for 1 <= k <= 1e9, tested against mpmath")


@lru_cache(maxsize=None)
def gumbel_gauss_rule(n: int = N_GAUSS):
    """Nodes and weights of the n-point Gauss rule for the standard Gumbel density w(t) = e^{-t-e^{-t}}.

    Stieltjes procedure on the discrete measure of a fine trapezoid rule (h = 0.05 on [-5, 50]; the trapezoid is
    exact to ~1e-17 for this analytic, doubly-exponentially decaying weight), then Golub-Welsch.
    """
    tt = np.arange(-5.0, 50.0 + 0.025, 0.05)
    ww = 0.05 * np.exp(-tt - np.exp(-tt))
    ww /= ww.sum()
    alpha, beta = np.empty(n), np.empty(n)
    p_prev, p, norm, b_prev = np.zeros_like(tt), np.ones_like(tt), 1.0, 0.0
    for j in range(n):
        alpha[j] = ww @ (tt * p * p) / norm
        p_next = (tt - alpha[j]) * p - b_prev * p_prev
        norm_next = ww @ (p_next * p_next)
        beta[j] = norm_next / norm
        p_prev, p, norm, b_prev = p, p_next, norm_next, beta[j]
    off = np.sqrt(beta[:-1])
    nodes, vecs = np.linalg.eigh(np.diag(alpha) + np.diag(off, 1) + np.diag(off, -1))
    return nodes, vecs[0] ** 2


def quantile_at_gumbel(tt, kk):
    """x_k(t) = Φ^{-1}(exp(-e^{-t}/k)) from whichever tail is accurate (q = 1 - u by expm1)."""
    lam = np.exp(-tt) / kk
    q, u = -np.expm1(-lam), np.exp(-lam)
    return np.where(q < u, -1.0, 1.0) * special.ndtri(np.minimum(q, u))


def _identity_moments(kk: np.ndarray):
    """(E[M_k], Var[M_k]) for σ = 1 by the Gumbel-weight Gauss rule (kk: 1-d float array of distinct k)."""
    nodes, weights = gumbel_gauss_rule()
    xs = quantile_at_gumbel(nodes[None, :], kk[:, None])
    mean = row_dot(xs, weights)
    return mean, row_dot((xs - mean[:, None]) ** 2, weights)


K_RELU_TAIL = 64


@lru_cache(maxsize=None)
def _relu_tail_table():
    """c1[k] = ∫_0^∞ Q^k dy and c2[k] = k ∫_0^∞ y² φ Q^{k-1} dy, k < 64 (10-point composite Gauss-Legendre)."""
    gx, gw = np.polynomial.legendre.leggauss(10)
    edges = np.concatenate([np.linspace(0, 1, 41), np.linspace(1, 10, 19)[1:]])
    mid, half = (edges[1:] + edges[:-1]) / 2, (edges[1:] - edges[:-1]) / 2
    y, wy = (mid[:, None] + half[:, None] * gx).ravel(), (half[:, None] * gw).ravel()
    kk = np.arange(K_RELU_TAIL, dtype=float)[:, None]
    logq = special.log_ndtr(-y)[None, :]
    c1 = np.exp(kk * logq) @ wy
    c2 = (kk * y**2 * np.exp(-y * y / 2 - _LOG_SQ2PI + np.where(kk == 0, 0.0, (kk - 1) * logq))) @ wy
    return c1, c2


def _unit_moments(activation: str, kk: np.ndarray):
    """(mean, var) at σ = 1 for a 1-d array of distinct k values."""
    mean, var = _identity_moments(kk)
    if activation == "relu":
        c1, c2 = _relu_tail_table()
        small = kk < K_RELU_TAIL
        idx = kk[small].astype(int)
        m, v = mean[small], var[small]
        mean[small] = m + c1[idx]
        var[small] = v - c2[idx] - 2 * m * c1[idx] - c1[idx] ** 2
    exact = _exact_values(activation)
    for kk_exact, (m, v) in exact.items():
        hit = kk == kk_exact
        mean[hit], var[hit] = m, v
    return mean, var


def unit_moments(activation: str, kk):
    """(E[M_k], Var[M_k]) for σ = 1, vectorised over any array of k (evaluated once per distinct k)."""
    kk = np.asarray(kk, dtype=float)
    uniq, inv = np.unique(kk, return_inverse=True)
    mean, var = _unit_moments(activation, uniq)
    return mean[inv].reshape(kk.shape), var[inv].reshape(kk.shape)


# --- mpmath reference route (independent: quadrature of the defining integral in x) ----------------------------
def mp_moments(activation: str, kk, sig=1):
    """(E[M_k], Var[M_k]) by mpmath.quad of ∫ x^n dΦ(x/σ)^k at the working precision (σ = 1 moments cached per
    (activation, k, precision): the domain test and the forms ask for the same k at many σ)."""
    sig = mpmath.mpf(sig)
    m, var = _mp_unit_moments(activation, int(kk), mpmath.mp.prec)
    return sig * m, sig**2 * var


@lru_cache(maxsize=256)
def _mp_unit_moments(activation: str, kk: int, prec: int):
    with mpmath.workprec(prec):
        centre = mpmath.sqrt(2 * mpmath.log(kk)) if kk > 1 else mpmath.mpf(0)
        width = 1 / max(centre, 1)
        lo = 0 if activation == "relu" else -mpmath.inf
        pts = [lo] + [p for p in (centre + j * width for j in (-6, -2, 0, 2, 6)) if p > lo] + [mpmath.inf]

        def dens(y):
            return kk * mpmath.npdf(y) * mpmath.exp((kk - 1) * mpmath.log(mpmath.ncdf(y))) if kk > 1 else \
                mpmath.npdf(y)
        # k = 1, identity: the integrand is odd, E[M_1] = 0 exactly (quadrature would leave a rounding residue)
        m = mpmath.mpf(0) if kk == 1 and activation == "identity" else mpmath.quad(lambda y: y * dens(y), pts)
        if activation == "relu":
            var = mpmath.quad(lambda y: y * y * dens(y), pts) - m * m
        else:
            var = mpmath.quad(lambda y: (y - m) ** 2 * dens(y), pts)
        return m, var


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
