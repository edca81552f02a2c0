"""Derivation of the residual depth law (igbsym/families/resnet.py, igbsym/residual.py).

New theory: none of the seed papers has a law for skip connections (igb-initial-guessing-bias.txt App. I.2
measures IGB in ResNets; moments-well-behaved-vs-pathological.txt Secs. 6–7 discuss batch-normalised ResNets).
Setting: N(0, I) data, Dense(σ_w) embedding, blocks x' = x + α F(x), weights N(0, σ_w²/fan_in), biases N(0, σ_b²)
in every Dense (the readout's too; default 0), all widths → ∞.
"""
import math

import mpmath
import sympy as sp

import igbsym

from .base import Derivation, require
from .rectified import gauss, x

al = sp.Symbol("alpha", nonnegative=True)
sw = sp.Symbol("sigma_w", positive=True)
a = sp.Symbol("a", real=True)
c, m = sp.Symbol("c", real=True), sp.Symbol("m", real=True)
q, qF, mF, PF, P = sp.symbols("q q_F m_F P_F P", real=True)
X, F, X2, F2 = sp.symbols("x_i F_i x_i' F_i'", real=True)


def _expect(expr, table):
    """E[·] of a polynomial in trunk/branch units, given the table of second moments (a linear functional)."""
    poly = sp.Poly(sp.expand(expr), X, F, X2, F2)
    return sum(coef * table[mono] for mono, coef in poly.terms())


def _block_law(d: Derivation):
    d.step("Trunk unit x_i(x) and branch unit F_i(x) for two independent inputs x, x' (primes). If F starts with a "
           "Dense layer, F_i depends on x only through the fresh row W_i (independent of x_i); if F ends with one, "
           "F_i = W_i . phi(...) has zero mean given the rest. Either way, in the width limit "
           "E[x_i F_i] = E[x_i] E[F_i] = m m_F (averages over units, data and weights).")
    table = {(2, 0, 0, 0): q, (0, 2, 0, 0): qF, (1, 1, 0, 0): m * mF, (1, 0, 1, 0): P, (0, 1, 0, 1): PF,
             (1, 0, 0, 1): m * mF, (0, 1, 1, 0): m * mF}
    q_new = _expect((X + al * F) ** 2, table)
    p_new = _expect((X + al * F) * (X2 + al * F2), table)
    d.step("Second moment q' = E[(x_i + alpha F_i)^2]:", sp.Eq(sp.Symbol("q'"), q_new))
    d.step("Shared moment P' = E[(x_i + alpha F_i)(x_i' + alpha F_i')]:", sp.Eq(sp.Symbol("P'"), p_new))
    centred = sp.expand(q_new - p_new)
    require(sp.simplify(centred - ((q - P) + al**2 * (qF - PF))) == 0, "centred part does not add")
    d.step("The data-centred part adds with no cross term: q' - P' = (q - P) + alpha^2 (q_F - P_F), which the "
           "library carries directly (never as a difference), so 1 - c keeps its relative accuracy as c -> 1:",
           sp.Eq(sp.Symbol("q'") - sp.Symbol("P'"), centred))


def _relu_moments(s2):
    """(S, M, P at c = 0) of ReLU on N(0, s2) by Gaussian integrals."""
    s = sp.sqrt(s2)
    relu = sp.Max(x, 0)
    S = sp.integrate(x**2 * gauss(0, s), (x, 0, sp.oo))
    M = sp.integrate(x * gauss(0, s), (x, 0, sp.oo))
    require(sp.simplify(sp.integrate(relu * gauss(0, s), (x, -sp.oo, sp.oo)) - M) == 0, "ReLU mean")
    return sp.simplify(S), sp.simplify(M)


def _one_block(d: Derivation):
    d.step("One linear-first block on the embedding: the embedding gives (q, c, m) = (sigma_w^2, 0, 0); the block's "
           "Dense gives pre-activations N(0, sigma_w^4), uncorrelated across independent inputs (c = 0).")
    S, M = _relu_moments(sw**4)
    d.step("ReLU moments by Gaussian integrals: E[phi^2] and E[phi]:", sp.Tuple(S, M))
    q1 = sw**2 + al**2 * S          # m = 0 on the embedding: no cross term
    p1 = al**2 * M**2               # c = 0: the shared moment of phi is E[phi]^2
    gamma1 = sp.simplify(p1 / (q1 - p1))
    d.step("gamma after one block = P'/(q' - P'):", gamma1)
    d.prove("resnet.gamma", gamma1, [{"sigma_b": 0}], L=1, activation="relu")
    lim0 = sp.limit(gamma1, al, 0)
    lim_inf = sp.limit(gamma1, al, sp.oo)
    require(lim0 == 0, "alpha -> 0 must give the embedding's gamma = 0")
    require(sp.simplify(lim_inf - igbsym.get("igb.gamma").case(activation="relu")) == 0,
             "alpha -> oo must give one hidden ReLU layer")
    d.step("Limits: alpha -> 0 gives the identity (gamma = 0, the embedding's); alpha -> oo gives the vanilla "
           "one-hidden-layer value 1/(pi - 1) (igb.gamma):", sp.Tuple(lim0, lim_inf))


def _k0(cc):
    return cc + (mpmath.sqrt(1 - cc * cc) - cc * mpmath.acos(cc)) / mpmath.pi


def _independent_relu_gamma(L):
    """γ_L of a linear-first ReLU ResNet by the (q, P, m) recursion written out (an independent route); biases
    N(0, σ_b²) add σ_b² to q and P at every Dense (a bias is shared by the data and independent of the rest)."""
    def route(alpha, sigma_w, sigma_b=mpmath.mpf(0)):
        b2 = sigma_b**2
        q_, p_, m_ = sigma_w**2 + b2, b2, mpmath.mpf(0)
        for _ in range(L):
            qh, ph = sigma_w**2 * q_ + b2, sigma_w**2 * p_ + b2
            S, M, Pf = qh / 2, mpmath.sqrt(qh / (2 * mpmath.pi)), qh / 2 * _k0(ph / qh)
            q_, p_, m_ = q_ + 2 * alpha * m_ * M + alpha**2 * S, p_ + 2 * alpha * m_ * M + alpha**2 * Pf, m_ + alpha * M
        return (sigma_w**2 * p_ + b2) / (sigma_w**2 * (q_ - p_))     # the readout Dense(sigma_w, sigma_b)
    return route


def _deeper(d: Derivation):
    pts = [dict(alpha=al_, sigma_w=s_) for al_ in ("0.25", "1", "3") for s_ in ("1", "1.41421356237309504880")]
    for L in (2, 5):
        d.prove_numeric_identity("resnet.gamma", _independent_relu_gamma(L), pts, dps=40, tol=1e-25,
                                 reason="the (q, P, m) recursion written out with the arc-cosine kernel",
                                 L=L, activation="relu")
    bpts = [dict(alpha=al_, sigma_w=s_, sigma_b=b_) for al_, s_, b_ in (("0.5", "1.3", "0.4"), ("1", "1", "2"))]
    for L in (1, 2, 5):
        d.prove_numeric_identity("resnet.gamma", _independent_relu_gamma(L), bpts, dps=40, tol=1e-25,
                                 reason="with biases N(0, sigma_b^2) in every Dense, the readout's included (issue 48)",
                                 L=L, activation="relu")
    d.step("alpha -> oo (checked at alpha = 1e8, L = 3): the skip path is negligible and the embedding merges with "
           "the first block's Dense, giving the vanilla depth law depth.gamma(L).")
    big = igbsym.get("resnet.gamma").mp(40, L=3, activation="relu", alpha=10**8)
    vanilla = igbsym.get("depth.gamma").mp(40, L=3, activation="relu")
    require(abs(big / vanilla - 1) < 1e-6, f"alpha -> oo: {big} vs vanilla {vanilla}")


def _corr_map(d: Derivation):
    d.step("resnet.corr_map: a linear-first block on a trunk normalised to q = 1 with shared fraction c and mean m. "
           "The block's Dense gives pre-activations with second moment sigma_w^2 and correlation c; the ReLU "
           "shared moment is (sigma_w^2/2) k_0(c) with the degree-1 arc-cosine map k_0 (derivations/depth.py).")
    k0 = c + (sp.sqrt(1 - c**2) - c * sp.acos(c)) / sp.pi
    S, M = _relu_moments(sw**2)
    new_c = (c + 2 * al * m * M + al**2 * S * k0) / (1 + 2 * al * m * M + al**2 * S)
    d.step("c' = (c + 2 alpha m E[phi] + alpha^2 E[phi phi']) / (1 + 2 alpha m E[phi] + alpha^2 E[phi^2]):", new_c)
    d.prove("resnet.corr_map", new_c, activation="relu")


def _growth(d: Derivation):
    e, r, kap, Ls = sp.Symbol("e", positive=True), sp.Symbol("r", positive=True), sp.Symbol("kappa", positive=True), \
        sp.Symbol("L", positive=True)
    s = sp.Symbol("s", real=True)
    k_s = lambda cc: cc + (1 - s) ** 2 * (sp.sqrt(1 - cc**2) - cc * sp.acos(cc)) / (sp.pi * (1 + s**2))  # noqa: E731
    series = sp.series(1 - k_s(1 - e), e, 0, 2).removeO()
    d.step("Growth, linear-last blocks without norm ([phi, Dense]: the trunk stays Gaussian with zero mean). With "
           "lambda = sigma_w^2 (1 + s^2)/2 the branch scales q by lambda, so e' = (e + alpha^2 lambda (1 - k_s(1 - e)))"
           "/(1 + alpha^2 lambda), and near e = 0 the arc-cosine map gives 1 - k_s(1 - e) =", series)
    rate = sp.simplify(-sp.expand(series - e).coeff(e ** sp.Rational(3, 2)))
    d.step("so e' = e - kappa r e^(3/2) + O(e^2) with kappa = alpha^2 lambda/(1 + alpha^2 lambda) and r =", rate)
    sol = 4 / (kap * r * Ls) ** 2
    require(sp.simplify(sp.diff(sol, Ls) + kap * r * sol ** sp.Rational(3, 2)) == 0, "ODE solution")
    d.step("The ODE de/dL = -kappa r e^(3/2) has e = 4/(kappa r L)^2, so gamma_L = c/e ~ (kappa r L / 2)^2: the "
           "vanilla L^2 law (kappa = 1) damped by kappa^2; with alpha = alpha_0 L^(-1/2), kappa = O(1/L) and the "
           "total decrease of e is O(1): gamma stays bounded as L -> oo.", sp.Eq(sp.Symbol("e_L"), sol))
    form = igbsym.get("resnet.gamma")
    for L in (10**3, 10**4):
        g = form.numpy(L=L, activation="relu", order="linear-last", alpha=1.0)
        kappa = 0.5   # alpha = 1, lambda = 1 (He)
        lead = float((kappa * rate.subs(s, 0) * L / 2) ** 2)
        d.step(f"Measured on the recursion (relu, alpha = 1, kappa = 1/2): gamma_L/leading term at L = {L}: "
               f"{g / lead:.4f}")
    g1 = form.numpy(L=10**4, activation="relu", order="linear-last", alpha=1 / math.sqrt(10**4))
    d.step(f"alpha = L^(-1/2), L = 10^4: gamma_L = {g1:.4f} (bounded); linear-first blocks instead accumulate the "
           "branch mean E[phi] > 0 in the trunk and become point-like even at alpha = L^(-1/2) "
           f"(gamma_40 = {form.numpy(L=40, activation='relu', alpha=40 ** -0.5):.1f}).")


def derive() -> Derivation:
    d = Derivation("resnet", "Residual networks: the trunk law and gamma with depth")
    _block_law(d)
    _one_block(d)
    _deeper(d)
    _corr_map(d)
    _growth(d)
    return d
