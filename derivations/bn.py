"""Derivations for the BatchNorm family (igbsym/families/bn.py): norm-placement-bn-ln.txt App. E.

Every law is built from its definition for an iid N(μ, σ²) batch of size B: the leave-one-out value B̃ through its
stochastic representation √B U/√V (U ~ N(0,1), V ~ χ²_{B−2} independent) and one SymPy integral over V; the
canonical value z through the exact map z = √(B−1) B̃/√(B + B̃²) and, independently, through the Beta law of
χ²_1/(χ²_1 + χ²_{B−2}). Moments come from the same integrals; the large-B forms from series in 1/B.
"""
import mpmath
import sympy as sp
from sympy.stats import StudentT, density

import igbsym

from .base import Derivation, require

NORM = "norm-placement-bn-ln.txt"
B = sp.Symbol("B", positive=True)  # the batch size; every identity below is used for B > 4 (or as stated)
b = sp.Symbol("b", real=True)
beta = sp.Symbol("beta", positive=True)
u, v, t, x = (sp.Symbol(n, positive=True) for n in "uvtx")
sigma, mu = sp.Symbol("sigma", positive=True), sp.Symbol("mu", real=True)
Bn = sp.Symbol("B", integer=True)  # the registry's symbol


def chi2_pdf(k, var=v):
    return var ** (k / 2 - 1) * sp.exp(-var / 2) / (2 ** (k / 2) * sp.gamma(k / 2))


def inv_moment(k, r):
    """E[V^{-r}] for V ~ χ²_k, by integration (exists iff k > 2r)."""
    return sp.gammasimp(sp.expand_func(sp.integrate(v ** (-r) * chi2_pdf(k), (v, 0, sp.oo), conds="none")))


def beta_moment(a, c, r):
    """E[X^r] for X ~ Beta(a, c), by integration (Gauss's hypergeometric sum at 1 expanded; 0^(c-1) = 0 for c > 1)."""
    integral = sp.hyperexpand(sp.integrate(x ** (r + a - 1) * (1 - x) ** (c - 1), (x, 0, 1), conds="none"))
    integral = integral.replace(lambda e: e.is_Pow and e.base == 0, lambda e: sp.S.Zero)
    return sp.gammasimp(sp.expand_func(sp.gammasimp(integral / sp.beta(a, c))))


_n = sp.Symbol("n", positive=True)


def _eq(a, c_):
    """SymPy proves a == c_ for all B > 4 (B = n + 4, n > 0, so every sqrt(B - k) with k <= 4 is real); both sides
    are analytic in B on B > 2, so equality extends to the whole domain."""
    a, c_ = (sp.expand_func(e).subs(B, _n + 4) for e in (a, c_))
    if sp.simplify(sp.gammasimp(a - c_)) == 0:
        return True
    return c_ != 0 and sp.simplify(sp.powsimp(sp.gammasimp(a / c_), force=True)) == 1


def _proxy(d: Derivation):
    d.step("Setup (Eqs. 27-29): x_1..x_B iid N(mu, sigma^2); for point a, m = mean and s^2 = (1/(B-1)) sum (x_j - m)^2 "
           "of the other B-1 points, B~ = (x_a - m)/s. The difference D = x_a - m is Gaussian with variance "
           "sigma^2 (1 + (B-1)/(B-1)^2):",
           sp.Eq(sp.Symbol("Var_D"), sp.factor(sigma**2 * (1 + (B - 1) / (B - 1) ** 2))))
    d.step("S = (B-1) s^2/sigma^2 is chi-square with B-2 degrees of freedom, independent of D (Cochran; the mean and "
           "variance of a Gaussian sample are independent and x_a is independent of both). "
           "Hence B~ = sqrt(B) U/sqrt(S) "
           "with U ~ N(0,1): U = D/(sigma sqrt(B/(B-1))) and s = sigma sqrt(S/(B-1)).")
    integrand = chi2_pdf(B - 2) * sp.sqrt(v / B) * sp.exp(-b**2 * v / (2 * B)) / sp.sqrt(2 * sp.pi)
    d.step("Density from the definition: f(b) = int_0^oo f_S(v) sqrt(v/B) phi(b sqrt(v/B)) dv =",
           sp.Integral(integrand, (v, 0, sp.oo)))
    pdf = d.step("SymPy integrates it:", sp.integrate(integrand, (v, 0, sp.oo), conds="none"))
    d.prove("bn.pdf", pdf)
    nu = sp.Symbol("nu", positive=True)
    scale = sp.sqrt(B / (B - 2))
    student = density(StudentT("T", nu))(b / scale).subs(nu, B - 2) / scale
    require(_eq(pdf, student))
    d.step("Identification: this is exactly the density of sqrt(B/(B-2)) T with T ~ Student t, B-2 degrees of freedom "
           "(SymPy: difference with sympy.stats.StudentT density simplifies to 0). The paper's Eq. 49/55 is this "
           "density (correct as printed) but never names it; a scale sqrt(B/(B-1)) would belong to the unbiased "
           "divisor B-2 in Eq. 29, which the paper does not use.", sp.Eq(sp.Symbol("f_B~"), student))
    # CDF
    cdf = igbsym.get("bn.cdf").expr.xreplace({Bn: B})
    for sign in (1, -1):
        deriv = sp.diff(cdf.subs(b, sign * beta), beta) * sign
        require(_eq(deriv, pdf.subs(b, sign * beta)), sign)
    require(cdf.subs(b, 0) == sp.S.Half)
    d.step("bn.cdf: its derivative equals the density on b > 0 and on b < 0 (SymPy, with d I_x(a,c)/dx = "
           "x^(a-1)(1-x)^(c-1)/B(a,c)), it is 1/2 at b = 0 and tends to 0 / 1 at -oo / +oo (I_0 = 0, I_1 = 1). "
           "Writing it with I at B/(B+b^2) keeps the left tail free of cancellation.", cdf)
    d.prove("bn.cdf", cdf)
    # moments from the representation
    e_inv1, e_inv2, e_invhalf = inv_moment(B - 2, 1), inv_moment(B - 2, 2), inv_moment(B - 2, sp.S.Half)
    var = d.step("Var B~ = B E[U^2] E[1/S] (E[1/S] exists iff B-2 > 2, i.e. B >= 5):", sp.factor(B * e_inv1))
    d.prove("bn.var", var)
    m4 = B**2 * 3 * e_inv2
    kurt = d.step("E[B~^4] = B^2 E[U^4] E[S^-2] (exists iff B >= 7); kurtosis E[B~^4]/Var^2 =", sp.factor(m4 / var**2))
    d.prove("bn.kurtosis", kurt)
    relu_mean = d.step("E[ReLU(B~)] = sqrt(B) E[U 1{U>0}] E[S^(-1/2)] (exists iff B >= 4):",
                       sp.gammasimp(sp.sqrt(B) / sp.sqrt(2 * sp.pi) * e_invhalf))
    d.prove("bn.relu_mean", relu_mean)
    paper57 = (sp.sqrt(1 / (B * sp.pi)) * sp.gamma((B - 1) / 2) / sp.gamma((B - 2) / 2) * B / (B - 3))
    require(_eq(relu_mean, paper57))
    d.step("The paper's Eq. 57 equals it (Gamma recursion): correct as printed, valid for B >= 4.", paper57)
    relu_var = d.step("Var ReLU(B~) = E[B~^2]/2 - E[ReLU(B~)]^2 (symmetry; Eqs. 58-59 are exact for the proxy):",
                      var / 2 - relu_mean**2)
    d.prove("bn.relu_var", relu_var)
    d.step("gamma of BN + ReLU (Thm E.1, Eqs. 16-17): Var_W(mu_c) = sigma_w^2 E[Y]^2 and Var_chi(O_c) = "
           "sigma_w^2 Var[Y] with Y = ReLU of the BN output, so gamma = E[Y]^2/Var[Y] at every depth.")
    d.prove("bn.gamma", relu_mean**2 / relu_var)
    for n in range(5, 10):  # independent route: direct integration of the printed density at fixed B
        f_n = pdf.subs(B, n)
        m_n = sp.integrate(b * f_n, (b, 0, sp.oo))
        v_n = sp.integrate(b**2 * f_n, (b, -sp.oo, sp.oo))
        require(sp.simplify(sp.integrate(f_n, (b, -sp.oo, sp.oo)) - 1) == 0)
        require(sp.simplify(m_n - relu_mean.subs(B, n)) == 0 and sp.simplify(v_n - var.subs(B, n)) == 0)
    d.step("Cross-check at B = 5..9: direct integration of the density over b gives total mass 1, the same "
           "E[ReLU(B~)] and the same variance.")


def _errata_proxy(d: Derivation):
    eps_var = sp.factor(sigma**2 * (1 + 1 / (B - 1)) / B**2)
    d.erratum("norm-placement-bn-ln.txt Eq. 40", "Var(eps_B) = (sigma^2 + (B-1) sigma^2/B^2)/B^2",
              f"Var(eps_B) = Var(x_a - mu~)/B^2 = {eps_var} (still O(1/B^2), conclusion unaffected)",
              "eps_B = (x_a - mu~)/B with x_a, mu~ independent, Var = sigma^2 + sigma^2/(B-1) (SymPy factor)")
    h = sp.Symbol("h", real=True)
    paper42 = sp.sqrt((B - 1) / (2 * sp.pi * sigma**2)) * sp.exp(-(-h**2) / 2 * (B - 1) / sigma**2)
    require(sp.integrate(paper42.subs({B: 5, sigma: 1}), (h, -sp.oo, sp.oo)) == sp.oo)
    d.erratum("norm-placement-bn-ln.txt Eq. 42 (and the same sign inside Eq. 49)",
              "f_mu~(h) = sqrt((B-1)/(2 pi sigma^2)) exp(-(-y^2)/2 (B-1)/sigma^2)",
              "f_mu~(h) = sqrt((B-1)/(2 pi sigma^2)) exp(-(h - mu)^2 (B-1)/(2 sigma^2))",
              "the printed function integrates to +oo (SymPy at B = 5, sigma = 1); mu~ ~ N(mu, sigma^2/(B-1))",
              identity=sp.Eq(sp.Integral(paper42.subs({B: 5, sigma: 1}), (h, -sp.oo, sp.oo)), sp.oo, evaluate=False))
    d.erratum("norm-placement-bn-ln.txt Eqs. 47, 49, 57, 59", "no validity condition on B",
              "Eq. 49 needs B >= 3, Eq. 57 B >= 4, Eqs. 47 and 59 B >= 5 (moments of t_{B-2})",
              "E[S^-r] for S ~ chi^2_{B-2} converges iff B-2 > 2r (SymPy integral conditions)")


def g_map(bt):
    """The canonical value as a function of the leave-one-out value."""
    return sp.sqrt(B - 1) * bt / sp.sqrt(B + bt**2)


def _canonical(d: Derivation):
    for n in range(2, 8):
        xs = sp.symbols(f"x1:{n + 1}", real=True)
        mean, loo = sum(xs) / n, sum(xs[1:]) / (n - 1)
        lhs = sum((xi - mean) ** 2 for xi in xs)
        rhs = sum((xi - loo) ** 2 for xi in xs[1:]) + sp.Rational(n - 1, n) * (xs[0] - loo) ** 2
        require(sp.expand(lhs - rhs) == 0)
        require(sp.expand((xs[0] - mean) - sp.Rational(n - 1, n) * (xs[0] - loo)) == 0)
    d.step("Canonical value (torch.nn.BatchNorm1d, train mode, eps -> 0): z = (x_a - xbar)/s_B with s_B^2 = SS/B, "
           "SS = sum (x_j - xbar)^2. Exact decompositions (SymPy, expanded for B = 2..7): SS = S' + (B-1)/B D^2 and "
           "x_a - xbar = (B-1)/B D, with D = x_a - m and S' = (B-1) s^2 the leave-one-out sum of squares.")
    D, Sp, bt = sp.symbols("D S' Bt", positive=True)
    z = (B - 1) / B * D / sp.sqrt((Sp + (B - 1) / B * D**2) / B)
    z_of_bt = sp.simplify(z.subs(Sp, (B - 1) * D**2 / bt**2))
    require(sp.simplify(z_of_bt - g_map(bt)) == 0)
    d.step("Substituting S' = (B-1) D^2/B~^2 (the definition of B~) gives an exact monotone map: "
           "z = g(B~), so |z| < sqrt(B-1).", sp.Eq(sp.Symbol("z"), g_map(bt)))
    d.step("Support for any input law: sum z = 0 and sum z^2 = B, so z_a^2 = (sum_{j!=a} z_j)^2 <= (B-1)(B - z_a^2) "
           "(Cauchy-Schwarz), i.e. z_a^2 <= B - 1 with equality iff the other B-1 values are equal.",
           sp.solve(sp.Symbol("w", positive=True) - (B - 1) * (B - sp.Symbol("w", positive=True)),
                    sp.Symbol("w", positive=True))[0])
    d.prove("bn.support_canonical", sp.limit(g_map(bt), bt, sp.oo))
    # route 1: push the proxy density through g
    proxy = sp.gamma((B - 1) / 2) / (sp.sqrt(sp.pi * B) * sp.gamma((B - 2) / 2)) * (1 + bt**2 / B) ** (-(B - 1) / 2)
    zz = sp.Symbol("z", positive=True)
    inv = zz * sp.sqrt(B) / sp.sqrt(B - 1 - zz**2)
    require(sp.simplify(g_map(inv).subs(B, _n + 4) - zz) == 0 or _eq(g_map(inv) / zz, 1))
    pushed = proxy.subs(bt, inv) * sp.diff(inv, zz)
    canon_pdf = igbsym.get("bn.pdf_canonical").expr.args[0][0].xreplace({Bn: B, sp.Symbol("b", real=True): zz})
    d.step("Route 1: the inverse map is B~ = z sqrt(B)/sqrt(B-1-z^2); the change of variables f_z(z) = "
           "f_B~(g^-1(z)) dg^-1/dz gives", sp.simplify(pushed))
    q = sp.Symbol("q", positive=True)  # z = sqrt(B-1) q/sqrt(1+q^2) sweeps the open support (0, sqrt(B-1))
    ratio = sp.simplify((pushed / canon_pdf).subs(zz, sp.sqrt(B - 1) * q / sp.sqrt(1 + q**2)).subs(B, _n + 4))
    require(sp.simplify(sp.factor(ratio, deep=True)) == 1)
    # route 2: Beta law
    joint = chi2_pdf(sp.S.One, x * t) * chi2_pdf(B - 2, (1 - x) * t) * t
    beta_pdf = sp.gammasimp(sp.integrate(joint, (t, 0, sp.oo), conds="none"))
    target = x ** (-sp.S.Half) * (1 - x) ** ((B - 4) / 2) / sp.beta(sp.S.Half, (B - 2) / 2)
    require(_eq(sp.expand_func(beta_pdf / target), 1) or _eq(beta_pdf, sp.expand_func(target)))
    d.step("Route 2: z^2/(B-1) = A/(A+S') with A = (B-1)D^2/(B sigma^2) ~ chi^2_1 and S'/sigma^2 ~ chi^2_{B-2} "
           "independent; the density of X = A/(A+S') is int_0^oo f_A(x t) f_S'((1-x) t) t dt =", beta_pdf)
    via_beta = 2 * beta_pdf.subs(x, zz**2 / (B - 1)) * zz / (B - 1) / 2
    require(_eq(sp.expand_func(via_beta / canon_pdf), 1) or _eq(via_beta, canon_pdf))
    d.step("i.e. X ~ Beta(1/2, (B-2)/2); the symmetric z = +-sqrt((B-1)X) has the registered density on "
           "|z| < sqrt(B-1) (both routes agree; independent of mu and sigma).", canon_pdf)
    d.prove("bn.pdf_canonical", sp.Piecewise((canon_pdf.subs(zz, b), b**2 < B - 1), (0, True)))
    cdf = igbsym.get("bn.cdf_canonical").expr.xreplace({Bn: B})
    inner = cdf.subs(sp.Max(0, 1 - b**2 / (B - 1)), 1 - b**2 / (B - 1))
    for sign in (1, -1):
        deriv = sp.diff(inner.subs(b, sign * beta), beta) * sign
        require(_eq(deriv, canon_pdf.subs(zz, beta)), sign)
    d.step("bn.cdf_canonical: derivative equals the density on 0 < |b| < sqrt(B-1) (SymPy), value 1/2 at 0, and the "
           "Max(0, .) makes it exactly 0 / 1 outside the support.", cdf)
    d.prove("bn.cdf_canonical", cdf)
    ex1, ex2, exh = beta_moment(sp.S.Half, (B - 2) / 2, 1), beta_moment(sp.S.Half, (B - 2) / 2, 2), \
        beta_moment(sp.S.Half, (B - 2) / 2, sp.S.Half)
    d.prove("bn.var_canonical", sp.simplify((B - 1) * ex1))
    d.step("E z^2 = (B-1) E X = 1 (as it must: sum z^2 = B). E z^4 = (B-1)^2 E X^2 gives the kurtosis",
           sp.factor((B - 1) ** 2 * ex2))
    d.prove("bn.kurtosis_canonical", sp.factor((B - 1) ** 2 * ex2))
    m_c = d.step("E ReLU(z) = sqrt(B-1) E[sqrt X]/2:", sp.gammasimp(sp.sqrt(B - 1) * exh / 2))
    d.prove("bn.relu_mean_canonical", m_c)
    d.prove("bn.relu_var_canonical", sp.S.Half - m_c**2)
    d.prove("bn.gamma_canonical", m_c**2 / (sp.S.Half - m_c**2))
    d.step("Depth: at layer l >= 2 the pre-activations of one node across a batch are (wide limit) an exchangeable "
           "Gaussian vector: a common part plus an isotropic part on the plane orthogonal to (1,..,1). BN removes "
           "the common part and sees only that isotropic projection, which is what an iid batch gives; so the "
           "canonical law, and gamma_canonical, are exact at every depth (Thm E.1 without the proxy). B = 2 "
           "is the two-point law z = +-1: gamma_canonical(2) = 1.", sp.Eq(sp.Symbol("gamma_c2"),
                                                                        (m_c**2 / (sp.S.Half - m_c**2)).subs(B, 2)))


def _large_b(d: Derivation):
    z = sp.Symbol("z", positive=True)
    eps = sp.Symbol("epsilon", positive=True)  # 1/B
    log_ratio = sp.series(sp.loggamma(z + sp.S.Half) - sp.loggamma(z), z, sp.oo, 5).removeO()
    d.step("Stirling: log Gamma(z+1/2) - log Gamma(z) =", log_ratio)
    ratio = lambda zz: sp.exp(log_ratio.subs(z, zz))  # noqa: E731
    phi = sp.exp(-b**2 / 2) / sp.sqrt(2 * sp.pi)
    Be = 1 / eps
    log_f = {  # log f - log phi, from the exact densities
        "proxy": (log_ratio.subs(z, (Be - 2) / 2) - sp.log(sp.pi * Be) / 2 - (Be - 1) / 2 * sp.log(1 + b**2 * eps)),
        "canonical": (log_ratio.subs(z, (Be - 2) / 2) - sp.log(sp.pi * (Be - 1)) / 2
                      + (Be - 4) / 2 * sp.log(1 - b**2 * eps / (1 - eps))),
    }
    out = {}
    for name, lf in log_f.items():
        ser = sp.series(sp.expand_log(lf + b**2 / 2 + sp.log(2 * sp.pi) / 2, force=True), eps, 0, 2).removeO()
        c0, c1 = sp.simplify(ser.coeff(eps, 0)), sp.factor(ser.coeff(eps, 1))
        require(c0 == 0)
        out[name] = phi * (1 + c1 / B)
        d.step(f"Large B, {name}: log f(b) - log phi(b) = ({c1})/B + O(1/B^2), so f = phi (1 + ({c1})/B) + O(1/B^2); "
               "B -> oo gives N(0,1) (the paper's binomial/Stirling argument, now with its leading correction).",
               out[name])
        d.prove("bn.pdf_large_B", out[name], estimator=name)
    gamma_inf = 1 / (sp.pi - 1)
    means = {"proxy": sp.sqrt(Be) / (2 * sp.sqrt(sp.pi) * ratio((Be - 3) / 2)),
             "canonical": sp.sqrt(Be - 1) / (2 * sp.sqrt(sp.pi) * ratio((Be - 1) / 2))}
    second = {"proxy": Be / (2 * (Be - 4)), "canonical": sp.S.Half}
    for name in ("proxy", "canonical"):
        g = means[name] ** 2 / (second[name] - means[name] ** 2)
        ser = sp.series(g, eps, 0, 2).removeO()
        c0, c1 = sp.simplify(ser.coeff(eps, 0)), sp.simplify(ser.coeff(eps, 1))
        require(sp.simplify(c0 - gamma_inf) == 0)
        d.step(f"gamma, {name}: 1/(pi-1) + ({c1})/B + O(1/B^2); 1/(pi-1) is gamma of a ReLU layer without BN "
               "(igb.gamma, relu), the full-batch value of Thm E.1.", gamma_inf + c1 / B)
        d.prove("bn.gamma_large_B", gamma_inf + c1 / B, estimator=name)
    d.step("So the proxy underestimates and the canonical law overestimates gamma by the same pi/(2(pi-1)^2 B) "
           "at leading order: gamma_proxy(B) < 1/(pi-1) < gamma_canonical(B).")
    diff = sp.factor(sp.expand((out["proxy"] - out["canonical"]) / phi * B))
    c = sp.sqrt(1 + sp.sqrt(2))
    require(sp.simplify(diff.subs(b, c)) == 0)
    tv1 = sp.simplify(2 * sp.integrate(diff * phi, (b, c, sp.oo)) / 2 * 2)
    d.step("Proxy vs canonical: f_p - f_c = phi(b)(b^4 - 2b^2 - 1)/(2B) + O(1/B^2), one sign change on b > 0 at "
           "b^2 = 1 + sqrt(2); the total-variation distance (1/2) int |f_p - f_c| is therefore", tv1 / B)
    d.step(f"i.e. TV ~ {float(tv1):.6f}/B (bn.tv_proxy approaches it; tests check B * TV).")
    return float(tv1)


def _tv(d: Derivation):
    def direct(B):
        with mpmath.workdps(2 * mpmath.mp.dps):  # the edge singularity (B = 3) needs guard digits
            return +_direct(B)

    def _direct(B):
        f_p = lambda s: (mpmath.gamma((B - 1) / 2) / (mpmath.sqrt(mpmath.pi * B) * mpmath.gamma((B - 2) / 2))  # noqa
                         * (1 + s * s / B) ** (-(B - 1) / 2))
        f_c = lambda s: (mpmath.gamma((B - 1) / 2) / (mpmath.sqrt(mpmath.pi * (B - 1)) * mpmath.gamma((B - 2) / 2))  # noqa
                         * (1 - s * s / (B - 1)) ** ((B - 4) / 2)) if s * s < B - 1 else mpmath.mpf(0)
        edge = mpmath.sqrt(B - 1)
        pts = [0, edge]
        if B >= 5:
            pts.insert(1, mpmath.findroot(lambda s: f_c(s) - f_p(s), mpmath.sqrt(1 + mpmath.sqrt(2))))
        inner = mpmath.quad(lambda s: abs(f_p(s) - f_c(s)), pts)
        return inner + mpmath.quad(f_p, [edge, mpmath.inf])  # (1/2) * 2 sides
    d.prove_numeric_identity("bn.tv_proxy", direct, [dict(B=n) for n in (3, 4, 5, 8, 16, 64)], dps=30, tol=1e-20,
                             reason="direct mpmath quadrature of (1/2) int |f_p - f_c| db with breakpoints at the "
                                    "density crossing (root of f_c - f_p, not the log-ratio) and at sqrt(B-1)")


def _relu_bn(d: Derivation):
    d.step("ReLU + BN (Thm E.2): every BN output node j of the last hidden layer sums to 0 over each batch (train "
           "mode, any eps), so for a dataset made of whole batches E_chi(B_j) = 0 exactly, "
           "mu_c = sum_j w_cj E_chi(B_j) "
           "= 0 for every initialisation and Var_W(mu_c) = 0: gamma = 0 at any width, depth and B (full batch "
           "B = oo included).")
    d.prove("bn.gamma_relu_bn", sp.S.Zero)
    sw = sp.Symbol("sigma_w", positive=True)
    y = sp.Symbol("y", positive=True)
    a = sw / sp.sqrt(2 * sp.pi)
    alpha = sw * sp.sqrt((sp.pi - 1) / (2 * sp.pi))
    atom = sp.simplify(-a / alpha)
    d.step("Law of the full-batch BN output after ReLU, Bo = (Y - a)/alpha with Y = ReLU(N(0, sigma_w^2)), "
           "a = E Y, alpha = sd Y: an atom of mass 1/2 at", atom)
    cont_mean = sp.integrate((y - a) / alpha * sp.exp(-y**2 / (2 * sw**2)) / (sp.sqrt(2 * sp.pi) * sw), (y, 0, sp.oo))
    require(sp.simplify(atom / 2 + cont_mean) == 0)
    bb = sp.Symbol("bb", real=True)
    paper_mass = sw * sp.sqrt(sp.pi - 1) / 2 * sp.integrate(sp.DiracDelta(bb * sp.sqrt(2 * sp.pi) - sw),
                                                            (bb, -sp.oo, sp.oo))
    d.step("(mean atom/2 + continuous part = 0, checked by SymPy). The paper's Eq. 74 atom "
           "(sigma_w sqrt(pi-1)/2) delta(b sqrt(2 pi) - sigma_w) has mass", sp.simplify(paper_mass))
    require(sp.simplify(paper_mass - sp.S.Half) != 0)
    d.erratum("norm-placement-bn-ln.txt Eq. 74", "atom (sigma_w sqrt(pi-1)/2) delta(b sqrt(2pi) - sigma_w) at "
              "b = sigma_w/sqrt(2pi), continuous part N(b; sigma_w/sqrt(2pi), 2pi/(pi-1)) on b > sigma_w/sqrt(2pi)",
              "atom of mass 1/2 at b = -1/sqrt(pi-1) (independent of sigma_w), continuous part "
              "N(b; -1/sqrt(pi-1), 2pi/(pi-1)) restricted to b > -1/sqrt(pi-1)",
              "SymPy: the printed atom has mass sigma_w sqrt(pi-1)/(2 sqrt(2pi)) != 1/2; the corrected law has mean 0")
    d.erratum("norm-placement-bn-ln.txt Eq. 70", "B = (Y - E Y)/Var(Y)", "B = (Y - E Y)/sqrt(Var Y)",
              "unit variance of the BN output (Eq. 79 and the text after Eq. 74 need it)")
    d.erratum("norm-placement-bn-ln.txt Eq. 79", "E[B^2] = Var(B) - E[B]^2", "E[B^2] = Var(B) + E[B]^2",
              "definition of the variance (harmless there since E[B] = 0)")


def derive() -> Derivation:
    d = Derivation("bn", "BatchNorm: mini-batch laws (leave-one-out proxy and torch's canonical BN) and gamma")
    _proxy(d)
    _errata_proxy(d)
    _canonical(d)
    _large_b(d)
    _tv(d)
    _relu_bn(d)
    return d
