"""Derivations for the max-pool family (igbsym/families/maxpool.py).

The law of M_k = max_j φ(X_j) is built from independence; the exact moments are integrated from their definition
with SymPy after integration by parts (x φ = -φ', x²φ = φ - (xφ)'), which reduces them to integrals of
φ^n erf(x/√2)^j; those with j = 2 are done by differentiating under the integral sign (Feynman's trick) in the
slope a of erf(a x/√2). The Fisher-Tippett-Gnedenko constants are derived by an asymptotic expansion of k Q(a_k) = 1,
and the growth rate of γ with k follows from them.
"""
import mpmath
import numpy as np
import sympy as sp

import igbsym
from igbsym import extreme
from igbsym.families import maxpool as mp_family
from igbsym.functions import Phi

from .base import Derivation, Proof, require

x = sp.Symbol("x", real=True)
a = sp.Symbol("a", positive=True)
k = sp.Symbol("k", integer=True)
sigma = sp.Symbol("sigma", positive=True)
PHI = sp.exp(-x**2 / 2) / sp.sqrt(2 * sp.pi)
ERF = sp.erf(x / sp.sqrt(2))            # Φ = (1 + ERF)/2
ACTS = ("identity", "relu")
LOWER = {"identity": -sp.oo, "relu": sp.S.Zero}


class Integrals:
    """∫_lo^∞ x^p φ(x)^n erf(x/√2)^j dx, reduced until SymPy integrates it (memoised)."""

    def __init__(self, d: Derivation):
        self.d, self.memo = d, {}

    def __call__(self, n: int, p: int, j: int, lo):
        key = (n, p, j, lo)
        if key not in self.memo:
            self.memo[key] = self._eval(n, p, j, lo)
        return self.memo[key]

    def _eval(self, n, p, j, lo):
        if lo == -sp.oo and (p + j) % 2:
            return sp.S.Zero  # odd integrand on the whole line
        if j <= 1:
            return normalise_atan(sp.simplify(sp.integrate(sp.expand(x**p * PHI**n * ERF**j), (x, lo, sp.oo))))
        if p == 1:  # x φ^n = -(φ^n)'/n, erf' = 2φ, boundary terms vanish (erf(0) = 0)
            return sp.Rational(2 * j, n) * self(n + 1, 0, j - 1, lo)
        if j == 2 and p == 0:
            return self._feynman(n, lo)
        raise NotImplementedError((n, p, j, lo))

    def _feynman(self, n, lo):
        """F(a) = ∫ φ^n erf(a x/√2)² dx: F(0) = 0 and F'(a) integrates in closed form; F(1) = ∫_0^1 F'(a) da."""
        ea = sp.erf(a * x / sp.sqrt(2))
        dfa = sp.factor(sp.integrate(sp.expand(PHI**n * sp.diff(ea**2, a)), (x, lo, sp.oo)))
        value = normalise_atan(sp.simplify(rationalised_integral(dfa)))
        where = "the whole line" if lo == -sp.oo else "x > 0"
        self.d.step(f"Feynman's trick for the integral of phi^{n} erf(x/sqrt 2)^2 over {where}: with erf(a x/sqrt 2) "
                    "the a-derivative is linear in erf and integrates to", sp.Eq(sp.Symbol("dF/da"), dfa))
        self.d.step("so the integral is F(1) = integral_0^1 F'(a) da =", value)
        return value


def rationalised_integral(dfa):
    """∫_0^1 dfa da for dfa = rational(a) / sqrt(α a² + β), by w = sqrt(α a² + β) (a rational integral in w)."""
    w = sp.Symbol("w", positive=True)
    root = next(f.base for f in sp.preorder_traversal(dfa)
                if isinstance(f, sp.Pow) and f.exp in (sp.S.Half, -sp.S.Half))
    poly = sp.Poly(root, a)
    alpha, beta = poly.coeff_monomial(a**2), poly.coeff_monomial(1)
    a_of_w = sp.sqrt((w**2 - beta) / alpha)
    integrand = sp.cancel(sp.simplify(dfa.subs(a, a_of_w) * w / (alpha * a_of_w)))
    return sp.integrate(integrand, (w, sp.sqrt(beta), sp.sqrt(alpha + beta)))


def normalise_atan(expr):
    """atan(v) -> π/2 - atan(1/v) for 0 < v < 1 (so equal numbers get equal atan arguments); see _law."""
    def small(e):
        return isinstance(e, sp.atan) and e.args[0].is_positive and bool(e.args[0] < 1)
    return expr.replace(small, lambda e: sp.pi / 2 - sp.atan(sp.radsimp(1 / e.args[0])))


def phi_power_integral(I: Integrals, n: int, p: int, m: int, lo):
    """∫_lo^∞ x^p φ^n Φ^m dx with Φ = (1 + erf)/2 expanded binomially."""
    return sum(sp.binomial(m, j) * I(n, p, j, lo) for j in range(m + 1)) / 2**m


def moments_by_parts(I: Integrals, activation: str, kk: int):
    """(E[M_k], E[M_k²]) for σ = 1 from the by-parts reductions (verified symbolically in _law)."""
    lo = LOWER[activation]
    if kk == 1:
        first = sp.integrate(x * PHI, (x, lo, sp.oo))
        return first, sp.integrate(x**2 * PHI, (x, lo, sp.oo))
    atom = kk * PHI.subs(x, 0) / 2 ** (kk - 1) if activation == "relu" else 0
    mass = 1 - sp.Rational(1, 2**kk) if activation == "relu" else 1
    first = atom + kk * (kk - 1) * phi_power_integral(I, 2, 0, kk - 2, lo)
    second = mass + kk * (kk - 1) * phi_power_integral(I, 2, 1, kk - 2, lo)
    return sp.simplify(first), sp.simplify(second)


def _law(d: Derivation):
    z = x / sigma
    d.step("M_k = max_j phi(X_j), X_j iid N(0, sigma^2): {M_k <= x} = {all X_j <= x} (and x >= 0 for ReLU, since "
           "ReLU(X_j) >= 0), so by independence the CDF is the k-th power of Phi(x/sigma) (App. C.1, Eq. 81):")
    j = sp.Symbol("j", integer=True, positive=True)
    power = sp.Product(Phi(z), (j, 1, k)).doit()
    d.prove("maxpool.cdf", power, activation="identity")
    d.prove("maxpool.cdf", sp.Heaviside(x, 1) * power, activation="relu")
    dens = sp.diff(power, x)
    d.step("Differentiating (Eq. 82):", dens)
    d.prove("maxpool.pdf", dens, activation="identity")
    d.prove("maxpool.pdf", sp.Heaviside(x, 1) * dens, activation="relu")
    atom = power.subs(x, 0)
    d.step("For ReLU the CDF jumps at 0 from 0 to Phi(0)^k: an atom P(M_k = 0) = P(all X_j < 0) of mass", atom)
    require(sp.simplify(atom - 2**-k) == 0)
    cont = sp.simplify(sp.integrate(dens.subs({sigma: 1, k: 3}).rewrite(sp.erf), (x, 0, sp.oo)))
    d.step("The continuous part carries the rest: for k = 3 its integral over x > 0 is", cont)
    require(sp.simplify(cont - (1 - sp.Rational(1, 8))) == 0)
    d.erratum("App. C.1, Eqs. 82-85 (ReLU + MaxPool)",
              "f_M = k F^{k-1} f with f the ReLU density of Eq. 78/83, which contains (1/2) delta(x) (symbols lost "
              "in extraction; read literally this gives an atom k F(0)^{k-1}/2, i.e. k 2^-k with F(0) = 1/2, or 0 "
              "with F(0^-) = 0)",
              "the chain rule fails at the jump of F: f_M = 2^-k delta(x) + 1{x>0} k Phi(x/sigma)^{k-1} "
              "phi(x/sigma)/sigma; the atom is P(all k pre-activations < 0) = 2^-k",
              "limit of the CDF Phi(x/sigma)^k at x = 0 (SymPy) and a binomial test of P(M_k = 0) on torch "
              "MaxPool1d samples (validation/checks_maxpool.py)")
    by_parts = sp.diff(-k * PHI * Phi(x) ** (k - 1), x)
    claim = k * x * PHI * Phi(x) ** (k - 1) - k * (k - 1) * PHI**2 * Phi(x) ** (k - 2)
    require(sp.simplify(sp.powsimp(sp.expand((by_parts - claim) / (PHI * Phi(x) ** (k - 2))))) == 0)
    d.step("Integration by parts (x phi = -phi'), checked by SymPy for symbolic k: d/dx[-k phi Phi^(k-1)] equals",
           claim)
    second = sp.diff(Phi(x) ** k - k * x * PHI * Phi(x) ** (k - 1), x)
    claim2 = k * x**2 * PHI * Phi(x) ** (k - 1) - k * (k - 1) * x * PHI**2 * Phi(x) ** (k - 2)
    require(sp.simplify(sp.powsimp(sp.expand((second - claim2) / (PHI * Phi(x) ** (k - 2))))) == 0)
    d.step("and (x^2 phi = phi - (x phi)') d/dx[Phi^k - k x phi Phi^(k-1)] equals", claim2)
    y = sp.Symbol("y", positive=True)
    require(sp.simplify(sp.diff(sp.atan(y) + sp.atan(1 / y), y)) == 0 and sp.atan(1) * 2 == sp.pi / 2)
    d.step("Used to normalise results: atan(y) + atan(1/y) = pi/2 for y > 0 (derivative 0, value pi/2 at y = 1).")
    d.step("Hence, for sigma = 1 and k >= 2: E[M_k] = k(k-1) int phi^2 Phi^(k-2), E[M_k^2] = 1 + k(k-1) int x phi^2 "
           "Phi^(k-2) over the line (identity), and over x > 0 for ReLU with the boundary terms k phi(0) 2^(1-k) and "
           "1 - 2^-k.")


def _exact_moments(d: Derivation):
    I = Integrals(d)
    for act in ACTS:
        for kk in sorted(extreme.EXACT_MOMENTS[act]):
            m1, m2 = moments_by_parts(I, act, kk)
            reg_m, reg_s = extreme.EXACT_MOMENTS[act][kk]
            for derived, registered, what in ((m1, reg_m, "E[M_k]"), (m2, reg_s, "E[M_k^2]")):
                require(sp.simplify(sp.expand(derived - registered)) == 0,
                        f"maxpool {act} k={kk} {what}: derived {derived} != table {registered}")
            d.step(f"{act}, k = {kk}: SymPy gives E[M_k]/sigma and E[M_k^2]/sigma^2 equal to the registered table "
                   "(simplify of the difference is 0):", sp.Tuple(m1, m2))
            pts = [{"k": kk, "sigma": s} for s in ("0.7", "2.5")]
            for name, expr in (("maxpool.mean", extreme.exact_mean(act, kk)),
                               ("maxpool.var", extreme.exact_var(act, kk))):
                if expr == 0:  # E[X] = 0: the quadrature of an odd integrand is 0 up to rounding
                    got = max(float(abs(igbsym.get(name).mp(30, activation=act, **p))) for p in pts)
                    require(got < 1e-25, got)
                    d.step(f"{name} ({act}, k = {kk}) is 0 by symmetry; the mpmath route gives |value| <= {got:.1e}.")
                    continue
                fn = sp.lambdify([sigma], expr, modules="mpmath")
                d.prove_numeric_identity(name, lambda k, sigma, fn=fn: fn(sigma), pts, dps=30, tol=1e-25,
                                         reason="the registered route (mpmath quadrature of the defining integral) "
                                                "equals the exact closed form derived above", activation=act)
    d.step("Beyond these k no elementary form is registered: the k = 6 mean needs the 4-dimensional equicorrelated "
           "orthant probability E[Phi(Y)^4], which has no elementary closed form; the registry uses the "
           "Gumbel-variable quadrature there.")
    d.erratum("App. C.3 (ReLU + MaxPool, Eqs. 101-102)",
              "there is no analytical expression for the mean and variance of the pooled unit",
              "closed forms exist for k <= 4 (ReLU + pool) and k <= 5 (linear + pool), e.g. E[max(0, X1, X2)] = "
              "(1 + sqrt 2)/(2 sqrt pi) sigma and gamma(linear, k=2) = 1/(pi - 1); only k >= 5 (ReLU) / k >= 6 "
              "(linear) need numerics",
              "SymPy integration from the definition (this derivation) and mpmath quadrature at 30 digits")


def _numeric_routes(d: Derivation):
    pts = [{"k": kk, "sigma": "1.3"} for kk in (6, 10, 100, 10**4, 10**6)]
    for act in ACTS:
        for name, idx in (("maxpool.mean", 0), ("maxpool.var", 1)):
            form = igbsym.get(name)

            def ref(k, sigma, idx=idx, act=act):
                return extreme.mp_moments(act, int(k), sigma)[idx]
            worst = max(abs(float(form.numpy(k=p["k"], sigma=1.3, activation=act)) / float(ref(p["k"], 1.3)) - 1)
                        for p in pts)
            d.proofs.append(Proof(name, "numeric-route", f"NumPy Gumbel-variable Gauss rule vs mpmath "
                                              f"quadrature of the defining integral at k = 6..1e6: worst relative "
                                              f"error {worst:.1e}", {"activation": act}))
            require(worst < 1e-13, (name, act, worst))
        gam = igbsym.get("maxpool.gamma")
        worst = max(abs(float(gam.numpy(k=kk, activation=act)) / float(gam.mp(25, k=kk, activation=act)) - 1)
                    for kk in (2, 7, 1000))
        require(worst < 3e-13, worst)
        d.proofs.append(Proof("maxpool.gamma", "numeric-route", f"NumPy vs mpmath at k = 2, 7, 1000: worst "
                                          f"relative error {worst:.1e}", {"activation": act}))
    d.step("Numeric routes: for k without a closed form, the NumPy route integrates h(x_k(t)) against the Gumbel "
           "density in t, x_k(t) = Phi^-1(exp(-e^-t/k)), with a 40-point Gauss rule; it agrees with mpmath quadrature "
           "of the defining integral in x to < 1e-13 (relative) for k = 6 ... 1e6, for both activations.")


def _gumbel(d: Derivation):
    big_a, c, lk = sp.Symbol("A", positive=True), sp.Symbol("c", real=True), sp.Symbol("L", positive=True)
    d.step("Fisher-Tippett-Gnedenko: a_k solves k Q(a_k) = 1 (Q = 1 - Phi); with Mills' ratio Q(a) ~ phi(a)/a this is "
           "L = ln k = a^2/2 + ln a + ln(2 pi)/2. Try a = A + c/A, A = sqrt(2L):")
    a_try = big_a + c / big_a
    residual = sp.expand(big_a**2 / 2 - a_try**2 / 2 - sp.log(big_a) - sp.log(1 + c / big_a**2)
                         - sp.log(2 * sp.pi) / 2)
    order0 = sp.limit(residual + sp.log(big_a), big_a, sp.oo) - sp.log(big_a)
    d.step("The residual, to order A^0, is", order0)
    c_sol = sp.solve(sp.Eq(order0, 0), c)[0]
    d.step("so c =", c_sol)
    loc = (a_try.subs(c, c_sol)).subs(big_a, sp.sqrt(2 * lk)).subs(lk, sp.log(k))
    d.prove("maxpool.gumbel_loc", sp.expand_log(sigma * loc, force=True))
    d.step("The scale is b_k = 1/(k phi(a_k)) = Q(a_k)/phi(a_k) ~ 1/a_k ~ 1/sqrt(2 ln k) to leading order:")
    d.prove("maxpool.gumbel_scale", sigma / sp.sqrt(2 * sp.log(k)))
    euler, lk = sp.EulerGamma, sp.Symbol("L", positive=True)
    loc_l = mp_family.GUMBEL_LOC.subs({k: sp.exp(lk), sigma: 1})
    scale_l = mp_family.GUMBEL_SCALE.subs({k: sp.exp(lk), sigma: 1})
    gamma_g = sp.simplify(6 * (loc_l + euler * scale_l) ** 2 / (sp.pi**2 * scale_l**2))
    d.step("Gumbel moments (mean a + gamma_E b, variance pi^2 b^2/6) give the asymptotic IGB strength, L = ln k:",
           gamma_g)
    rate = sp.limit(gamma_g / lk**2, lk, sp.oo)
    d.step("whose growth rate is gamma ~ (24/pi^2) (ln k)^2 (App. E, Eq. 19: pooling amplifies IGB without bound):",
           rate)
    require(sp.simplify(rate - 24 / sp.pi**2) == 0)
    d.step("App. E shows that M_k concentrates around the growing value sqrt(2 ln k); gamma -> inf (Eq. 19) also needs "
           "the spread to stay bounded, which the Gumbel scale supplies: Var[M_k] ~ pi^2/(12 ln k) -> 0, so E[M_k]^2 "
           "grows like 2 ln k while the variance shrinks like 1/ln k, giving the (ln k)^2 rate.")
    rows = []
    g_np = sp.lambdify([lk], gamma_g, modules="numpy")
    for kk in (10, 100, 10**3, 10**4, 10**6, 10**9):
        exact = float(igbsym.get("maxpool.gamma").numpy(k=kk, activation="identity"))
        rows.append(f"k={kk}: gamma={exact:.4g}, Gumbel {g_np(np.log(kk)):.4g} ({g_np(np.log(kk)) / exact - 1:+.1%}), "
                    f"Kolmogorov distance to the Gumbel law {mp_family.gumbel_kolmogorov(kk):.3g}")
    d.step("Measured quality of the Gumbel approximation (exact gamma from the registry; Kolmogorov distance "
           "sup_x |Phi(x)^k - exp(-exp(-(x - a_k)/b_k))| on a fine grid): " + "; ".join(rows) + ". The error decays "
           "only like (ln ln k)^2/ln k for these constants (Hall 1979).")


def _gamma(d: Derivation):
    d.step("gamma of one hidden layer with pooling: the output O_c = sum_m v_cm P_m over N pooled units. Given the "
           "weights, mu_c = E[M_k] sum_m v_cm and Var_chi(O_c) = Var[M_k] sum_m v_cm^2 (units independent as "
           "d -> inf), so Var_W(mu_c)/E_W Var_chi(O_c) = E[M_k]^2/Var[M_k] (paper Eqs. 16-19, 101-103); sigma cancels.")
    exact = {}
    for act in ACTS:
        for kk, (m, s) in sorted(extreme.EXACT_MOMENTS[act].items()):
            exact[act, kk] = sp.simplify(sp.together(m**2 / (s - m**2)))
            ref, text = str(sp.N(exact[act, kk], 40)), str(exact[act, kk])
            text = text if len(text) < 90 else "E[M]^2/(E[M^2] - E[M]^2) of the table"
            d.prove_numeric_identity("maxpool.gamma", lambda k, ref=ref: mpmath.mpf(ref), [{"k": kk}], dps=30,
                                     tol=1e-25, reason=f"k = {kk}: gamma = {text}", activation=act)
    lin2 = exact["identity", 2]
    require(sp.simplify(lin2 - 1 / (sp.pi - 1)) == 0)
    d.step("Linear + pool, k = 2: gamma = 1/(pi - 1) > 0 although linear activations alone give gamma = 0 — pooling "
           "alone creates IGB (Sec. 4.2). It equals gamma of ReLU without pooling, since max(X1, X2) = "
           "(X1 + X2)/2 + |X1 - X2|/2 and ReLU(X) = X/2 + |X|/2 have the same mean-to-spread ratio.", lin2)
    require(sp.simplify(exact["relu", 1] - lin2) == 0)
    values = {act: [sp.N(exact[act, kk]) for kk in sorted(extreme.EXACT_MOMENTS[act])] for act in ACTS}
    require(all(b > a_ for v in values.values() for a_, b in zip(v, v[1:])))
    ks = np.unique(np.round(np.logspace(0, 9, 400)))
    for act in ACTS:
        g = igbsym.get("maxpool.gamma").numpy(k=ks, activation=act)
        require(np.all(np.diff(g) > 0), act)
    text = "; ".join(f"{act}: " + " < ".join(f"{float(v):.4g}" for v in vals) for act, vals in values.items())
    first_u = {act: int(ks[np.argmax(igbsym.get("maxpool.gamma").numpy(k=ks, activation=act) > 1)]) for act in ACTS}
    d.step(f"gamma increases strictly with k: exactly on the closed forms ({text}) and numerically on 400 log-spaced "
           f"k up to 1e9 for both activations. gamma > 1 — a U-shaped law of G0 — from k = {first_u['relu']} "
           f"(ReLU + pool) and k = {first_u['identity']} (linear + pool).")


def _extreme(d: Derivation):
    g, dd, z = sp.Symbol("gamma", positive=True), sp.Symbol("D", integer=True, positive=True), sp.Symbol("z", real=True)
    d.step("App. D.2: with x = Phi^-1(G0) ~ N(0, gamma), the paper's recipe puts G0 in the extreme bin when the "
           "population value G0 < 1/D, i.e. x < Phi^-1(1/D): P = Phi(Phi^-1(1/D)/sqrt(gamma)) per side (Eqs. 115-117).")
    d.step("On D data points the measured G0_hat is Binomial(D, G0)/D, so exactly P(G0_hat = 0) = E[(1 - G0)^D] = "
           "E_z[Phi(sqrt(gamma) z)^D], the probability that D equicorrelated normals (rho = gamma/(1+gamma) = c) are "
           "all negative:", sp.Integral(sp.exp(-z**2 / 2) / sp.sqrt(2 * sp.pi) * Phi(sp.sqrt(g) * z) ** dd,
                                    (z, -sp.oo, sp.oo)))
    form = igbsym.get("maxpool.extreme_mass")
    rows = []
    for act, kk in (("relu", 2), ("relu", 4), ("identity", 4), ("relu", 64)):
        for dd_ in (100, 1000):
            thr = float(form.numpy(k=kk, activation=act, D=dd_, rule="threshold"))
            exact = float(form.numpy(k=kk, activation=act, D=dd_, rule="binomial"))
            rows.append(f"{act} k={kk} D={dd_}: threshold {thr:.4g}, binomial {exact:.4g} ({thr / exact - 1:+.1%})")
    d.step("The two rules compared: " + "; ".join(rows) + ". For a power-law edge F(g) ~ C g^(1/gamma) the binomial "
           "mass is Gamma(1 + 1/gamma) F(1/D): the threshold rule overstates the peaks by up to 1/Gamma(1+1/gamma) - 1 "
           "(13% at gamma = 2), vanishing as gamma -> inf.")
    d.erratum("App. D.2, Eqs. 115-116",
              "the mass of the G0 = 0 peak is the population mass below the resolution threshold, P(G0 < 1/D)",
              "G0 measured on D points is Binomial(D, G0)/D, so P(G0_hat = 0) = E[(1 - G0)^D] = E_z[Phi(sqrt(gamma) "
              "z)^D]; the threshold rule is an approximation off by a factor ~Gamma(1 + 1/gamma) (registered as "
              "rule='threshold' vs rule='binomial')",
              "SymPy/mpmath evaluation of both and a torch SHLP simulation (validation/checks_maxpool.py)",
              identity=r"$P(\hat G_0 = 0) = \mathbb{E}[(1 - G_0)^D] = \mathbb{E}_z[\Phi(\sqrt{\gamma} z)^D]$",
              simulation="check maxpool.g0_law: the binomial rule exceeds the threshold rule by 12.7 % at "
                         "gamma = 2.2 (README run)")
    worst = 0.0
    for rule in ("threshold", "binomial"):
        for act, kk, dd_ in (("relu", 2, 50), ("identity", 16, 1000)):
            ref = form.mp(25, k=kk, activation=act, D=dd_, rule=rule)
            worst = max(worst, abs(float(form.numpy(k=kk, activation=act, D=dd_, rule=rule)) / float(ref) - 1))
    require(worst < 1e-12, worst)
    d.proofs.append(Proof("maxpool.extreme_mass", "numeric-route",
                                      f"NumPy vs mpmath (z-integral at 25 digits): worst relative error {worst:.1e}"))


def derive() -> Derivation:
    d = Derivation("maxpool", "Max-pooling: extreme-value law of pooled units and the IGB it creates")
    _law(d)
    _exact_moments(d)
    _numeric_routes(d)
    _gumbel(d)
    _gamma(d)
    _extreme(d)
    return d


__all__ = ["derive"]
