"""Derivation of the mean-field forms (igbsym/families/meanfield.py; Schoenholz et al. 2017, Poole et al. 2016).

1. The readout convention: gamma = q_ab/(q - q_ab) = c/(1 - c), i.e. c = gamma/(1 + gamma) (igb-talk-slides.txt).
2. (Leaky) ReLU: E phi^2 = q(1 + a^2)/2 and E phi'^2 = (1 + a^2)/2 by SymPy integration; the length map is linear, so
   q*, chi_1 = chi_q, the edge of chaos and the depth scales follow in closed form; the correlation map is
   chi_1 k(c) + 1 - chi_1 with the arc-cosine k (derivations/depth.py), k(c) >= c, so c* = 1 is the only fixed point.
3. Convexity (every activation): Mehler's series E[phi(u_a)phi(u_b)] = sum_k beta_k c^k, beta_k >= 0, so the map is
   convex on [0, 1]: c* = 1 iff chi_1 <= 1, else exactly one stable c* in (0, 1) with chi_c < 1.
4. erf: Price's theorem and a Gaussian integral give the arcsine kernel; the NumPy route with the closed kernel is
   checked against mpmath roots of the derived kernel, tanh's against the mpmath quadrature route.
5. gamma_L on the edge of chaos (meanfield.gamma_eoc_growth): the maps expanded at e = 1 - c -> 0, the ansatz
   e_l = beta/l^p substituted and solved for beta (p = 2 for (leaky) ReLU, whose q_l grows by sigma_b^2 a layer;
   p = 1 for smooth odd phi at q*), and the linearised perturbation giving the subleading order.
"""
import mpmath
import sympy as sp

import igbsym

from .base import Derivation, require, symbolically_equal
from .depth import relu_cross_moment

q = sp.Symbol("q", positive=True)
c = sp.Symbol("c", real=True)
a = sp.Symbol("a", real=True)
sw, sb = sp.Symbol("sigma_w", positive=True), sp.Symbol("sigma_b", positive=True)
x, z1, z2 = sp.Symbol("x", real=True), sp.Symbol("z1", real=True), sp.Symbol("z2", real=True)
th, u = sp.Symbol("theta", positive=True), sp.Symbol("u", positive=True)
rho, s, beta = sp.Symbol("rho", positive=True), sp.Symbol("s", positive=True), sp.Symbol("beta", positive=True)


def _gauss(f, v, sd=1):
    return sp.integrate(f * sp.exp(-v**2 / (2 * sd**2)) / (sd * sp.sqrt(2 * sp.pi)), (v, -sp.oo, sp.oo))


def _convention(d: Derivation):
    gam, qab, qq = sp.Symbol("gamma", positive=True), sp.Symbol("q_ab", positive=True), sp.Symbol("q", positive=True)
    d.step("Readout convention (the issue's): gamma_L = q_ab/(q - q_ab) of the readout pre-activations, with q_ab = "
           "E[y(x_a) y(x_b)] (biases included) and q = E[y(x)^2]; with c = q_ab/q this is", sp.Eq(gam, c / (1 - c)))
    require(sp.simplify((qab / (qq - qab)) - (qab / qq) / (1 - qab / qq)) == 0, "gamma = c/(1 - c)")
    require(sp.simplify((c / (1 - c)).subs(c, gam / (1 + gam)) - gam) == 0, "c = gamma/(1 + gamma)")
    d.step("and c = gamma/(1 + gamma) (igb-talk-slides.txt): gamma_inf = c*/(1 - c*), infinite where c* = 1.")


def _homogeneous(d: Derivation):
    phi = sp.Piecewise((x, x >= 0), (a * x, True))
    sd = sp.sqrt(q)
    S = sp.simplify(_gauss(phi**2, x, sd))
    A = sp.simplify(_gauss(sp.Piecewise((1, x >= 0), (a**2, True)), x, sd))
    d.step("Leaky ReLU phi(x) = x for x >= 0, a x otherwise, on u ~ N(0, q): E phi(u)^2 =", S)
    d.step("and E phi'(u)^2 =", A)
    require(symbolically_equal(S, q * (1 + a**2) / 2) and symbolically_equal(A, (1 + a**2) / 2), "leaky moments")
    h = (1 + a**2) / 2
    qstar = sp.solve(sp.Eq(q, sw**2 * h * q + sb**2), q)[0]
    d.step("The length map q' = sigma_w^2 q (1 + a^2)/2 + sigma_b^2 is linear; its fixed point (stable iff its slope "
           "chi_1 < 1, i.e. sigma_w^2 (1 + a^2) < 2; otherwise q diverges with depth) is", qstar)
    chi = sw**2 * A
    for act, sub in (("relu", {a: 0}), ("leaky_relu", {})):
        d.prove("meanfield.q_star", qstar.subs(sub), activation=act)
        d.prove("meanfield.chi_1", chi.subs(sub), activation=act)
        d.prove("meanfield.xi_q", (-1 / sp.log(sp.diff(sw**2 * S + sb**2, q))).subs(sub), activation=act)
    cross = relu_cross_moment()[2]
    kmap = sp.cos(th) + (1 - a)**2 / (1 + a**2) * (sp.sin(th) - th * sp.cos(th)) / sp.pi
    require(sp.simplify(cross / (q / 2) - kmap.subs(a, 0)) == 0, "ReLU: the polar integral is q k(c)/2")
    d.step("Correlation map: E[phi(u_a) phi(u_b)] = q (1 + a^2)/2 k(c) with the arc-cosine map k (proved from the "
           "polar integral in derivations/depth.py; c = cos theta), so c' = (sigma_w^2 q* (1 + a^2) k(c)/2 + "
           "sigma_b^2)/q* = chi_1 k(c) + 1 - chi_1, and c' - c = chi_1 (k(c) - c) + (1 - chi_1)(1 - c), where", kmap)
    excess = sp.sin(th) - th * sp.cos(th)
    require(sp.simplify(sp.diff(excess, th) - th * sp.sin(th)) == 0 and excess.subs(th, 0) == 0, "sin - t cos >= 0")
    d.step("k(c) - c = r (sin theta - theta cos theta)/pi >= 0 (its theta-derivative is theta sin theta >= 0 on "
           "[0, pi] and it vanishes at 0), so for chi_1 < 1 every c < 1 moves up: c* = 1 is the only fixed point.")
    for act in ("relu", "leaky_relu"):
        d.prove("meanfield.c_star", sp.S.One, activation=act)
    slope = sp.limit(sp.diff(kmap, th) / sp.diff(sp.cos(th), th), th, 0)
    d.step("Its slope at c = 1: dk/dc = (dk/dtheta)/(dc/dtheta) -> ", slope)
    require(sp.simplify(slope - 1) == 0, "k'(1) = 1")
    for act, sub in (("relu", {a: 0}), ("leaky_relu", {})):
        d.prove("meanfield.chi_c", (chi * slope).subs(sub), activation=act)
        d.prove("meanfield.xi_c", (-1 / sp.log(chi * slope)).subs(sub), activation=act)
        eoc = [v for v in sp.solve(sp.Eq(chi.subs(sub), 1), sw) if v.is_positive is not False]
        d.prove("meanfield.eoc_sigma_w", eoc[0], activation=act)
    d.step("chi_c = chi_1 (c* = 1), and chi_1 = 1 gives the edge of chaos sigma_w^2 = 2/(1 + a^2) for every "
           "sigma_b: no chaotic phase exists where q* is finite.")
    below = sp.sign(sp.expand_log(sp.log(sp.simplify(chi.subs(sw, sp.sqrt(2 / (1 + a**2)) / (1 + u)))), force=True))
    require(below == -1, "phase -1 below the edge of chaos")
    d.step("With sigma_w = sqrt(2/(1 + a^2))/(1 + u), u > 0 (the whole valid domain), sign(ln chi_1) = -1:")
    for act in ("relu", "leaky_relu"):
        d.prove("meanfield.phase", sp.Integer(-1), activation=act)


def _convexity(d: Derivation):
    d.step("Every activation (Mehler's formula): E[phi(u_a) phi(u_b)] = sum_k beta_k c^k with beta_k = b_k^2, b_k = "
           "E[phi(sqrt(q) Z) He_k(Z)]/sqrt(k!) (igbsym/gauss/hermite.py). So the correlation map F(c) = (sigma_w^2 "
           "sum_k beta_k c^k + sigma_b^2)/q* is convex on [0, 1], F(1) = 1 and F'(1) = sigma_w^2 sum_k k beta_k/q* = "
           "sigma_w^2 E phi'(u)^2 = chi_1 (Parseval for phi'). If chi_1 <= 1, F(c) >= 1 - chi_1 (1 - c) >= c: c* = 1. "
           "If chi_1 > 1, F - c is convex, positive at 0 (F(0) = (sigma_w^2 beta_0 + sigma_b^2)/q* > 0), zero at 1 "
           "with positive slope: exactly one root c* in (0, 1), where chi_c = F'(c*) < 1 (stable). In e = 1 - c the "
           "map is e' = (sigma_w^2/q*) sum_k beta_k (1 - (1 - e)^k), concave, which the NumPy route solves by Newton "
           "from e = 1 (monotone convergence to e*).")
    d.step("Slopes (Price's theorem: the derivative of E[f(u_a) g(u_b)] in the covariance q c is E[f' g']): "
           "chi_c = dc'/dc = sigma_w^2 E[phi'(u_a) phi'(u_b)]; by the heat equation d/dq E[f(sqrt(q) Z)] = "
           "E[f''(sqrt(q) Z)]/2 with f = phi^2, chi_q = dq'/dq = sigma_w^2 E[phi'^2 + phi phi''] = chi_1 + sigma_w^2 "
           "E[phi'' phi] (Schoenholz Eq. 5: xi_q = -1/ln chi_q).")


def _erf(d: Derivation):
    G = sp.simplify(_gauss(sp.exp(-beta * x**2), x))
    inner = sp.simplify(_gauss(sp.exp(-q * (rho * z1 + s * z2)**2), z2))
    expo = sp.simplify(sp.expand_log(sp.log(inner * sp.sqrt(2 * q * s**2 + 1)), force=True) / z1**2)
    pair = sp.simplify((G.subs(beta, q - expo) / sp.sqrt(2 * q * s**2 + 1)).subs(s, sp.sqrt(1 - rho**2)))
    target = 1 / sp.sqrt((1 + 2 * q)**2 - 4 * q**2 * rho**2)
    require(sp.simplify(pair**2 / target**2) == 1, "E exp(-u^2 - v^2)")
    d.step("erf: erf'(x) = (2/sqrt(pi)) exp(-x^2). With u = sqrt(q) z1, v = sqrt(q)(rho z1 + sqrt(1 - rho^2) z2) "
           "(two Gaussian integrals in SymPy) E[exp(-u^2 - v^2)] =", target)
    K = 2 / sp.pi * sp.asin(2 * q * c / (1 + 2 * q))
    require(symbolically_equal(sp.diff(K, c)**2, (q * 4 / sp.pi * target.subs(rho, c))**2), "Price: dK/dc")
    require(K.subs(c, 0) == 0, "K(0) = 0 (odd)")
    d.step("By Price's theorem dE[erf(u_a) erf(u_b)]/dc = q E[erf'(u_a) erf'(u_b)] = (4q/pi) E[exp(-u^2 - v^2)], "
           "and the value is 0 at c = 0 (erf is odd), so the arcsine kernel (SymPy: the derivatives agree)", K)
    A = sp.simplify(4 / sp.pi * _gauss(sp.exp(-2 * x**2), x, sp.sqrt(q)))
    d.step("and E erf'(u)^2 =", A)
    require(symbolically_equal(A, 4 / (sp.pi * sp.sqrt(1 + 4 * q))), "E erf'^2")
    require(sp.simplify(sp.tan(sp.asin(2 * q / (1 + 2 * q))) - 2 * q / sp.sqrt(1 + 4 * q)) == 0, "atan2 form")
    d.step("The NumPy route writes arcsin(2q/(1 + 2q)) = atan2(2q, sqrt(1 + 4q)) (the tangents agree in SymPy; both "
           "in [0, pi/2)). Its roots are checked against mpmath roots of the derived kernel at 30 digits:")
    pts = [dict(sigma_w=sw_, sigma_b=sb_) for sw_, sb_ in ((1.0, 0.3), (1.5, 0.3), (2.5, 0.2), (3.0, 1.0))]
    picks = {"q_star": 0, "c_star": 1, "chi_1": 2, "chi_c": 3, "xi_q": 4, "xi_c": 5, "gamma_inf": 6, "phase": 7}
    for name, i in picks.items():
        d.check_route(f"meanfield.{name}", pts, lambda i=i, **p: _erf_reference(p["sigma_w"], p["sigma_b"])[i],
                     2e-10, "erf: the NumPy route vs mpmath roots (30 digits) of the derived arcsine kernel",
                     activation="erf")
    d.check_route("meanfield.eoc_sigma_w", [dict(sigma_b=v) for v in (0.05, 0.3, 1.0)],
                 lambda sigma_b: _erf_eoc(sigma_b), 2e-10, "erf: NumPy vs the mpmath root of the derived "
                                                         "chi_1 = 1 condition", activation="erf")


def _erf_reference(sw_, sb_):
    """(q*, c*, chi_1, chi_c, xi_q, xi_c, gamma_inf, phase) of erf from the derived kernel, in mpmath (30 digits)."""
    with mpmath.workdps(30):
        sw2, sb2 = mpmath.mpf(sw_) ** 2, mpmath.mpf(sb_) ** 2
        S = lambda qq: 2 / mpmath.pi * mpmath.asin(2 * qq / (1 + 2 * qq))  # noqa: E731
        qs = mpmath.findroot(lambda qq: qq - sw2 * S(qq) - sb2, (sb2, sw2 + sb2), solver="anderson")
        chi1 = sw2 * 4 / (mpmath.pi * mpmath.sqrt(1 + 4 * qs))
        chiq = sw2 * 4 / (mpmath.pi * (1 + 2 * qs) * mpmath.sqrt(1 + 4 * qs))
        if chi1 <= 1:
            cs, chic = mpmath.mpf(1), chi1
        else:
            F = lambda cc: (sw2 * 2 / mpmath.pi * mpmath.asin(2 * qs * cc / (1 + 2 * qs)) + sb2) / qs  # noqa: E731
            cs = mpmath.findroot(lambda cc: F(cc) - cc, (mpmath.mpf(0), 1 - mpmath.mpf(10) ** -12), solver="anderson")
            chic = sw2 * 4 / (mpmath.pi * mpmath.sqrt((1 + 2 * qs) ** 2 - 4 * qs**2 * cs**2))
        gam = cs / (1 - cs) if cs < 1 else mpmath.inf
        return (qs, cs, chi1, chic, -1 / mpmath.log(chiq), -1 / mpmath.log(chic), gam, mpmath.sign(chi1 - 1))


def _erf_eoc(sb_):
    with mpmath.workdps(30):
        sb2 = mpmath.mpf(sb_) ** 2
        r = lambda qq: qq - mpmath.sqrt(1 + 4 * qq) / 2 * mpmath.asin(2 * qq / (1 + 2 * qq)) - sb2  # noqa: E731
        qq = mpmath.findroot(r, (sb2, sb2 + 10), solver="anderson")
        return mpmath.sqrt(mpmath.pi * mpmath.sqrt(1 + 4 * qq) / 4)


def _tanh(d: Derivation):
    d.step("tanh has no closed kernel: its NumPy route (quadrature moments, Mehler's series) is checked against the "
           "mpmath route (nested quadrature of the pair moment, Illinois/Newton roots) at 30 digits:")
    pts = [dict(sigma_w=1.0, sigma_b=0.3), dict(sigma_w=2.0, sigma_b=0.3)]
    for name in ("q_star", "c_star", "chi_c", "xi_q", "gamma_inf"):
        form = igbsym.get(f"meanfield.{name}")
        d.check_route(f"meanfield.{name}", pts[1:] if name == "gamma_inf" else pts,
                     lambda form=form, **p: form.mp(30, activation="tanh", **p), 1e-9,
                     "tanh: NumPy vs the mpmath quadrature route", activation="tanh")
    eoc = igbsym.get("meanfield.eoc_sigma_w")
    d.check_route("meanfield.eoc_sigma_w", [dict(sigma_b=0.05 ** 0.5)],
                 lambda sigma_b: eoc.mp(30, activation="tanh", sigma_b=sigma_b), 1e-9,
                 "tanh at sigma_b^2 = 0.05 (Schoenholz et al.: sigma_w^2 ~ 1.76)", activation="tanh")
    value = float(eoc.numpy(activation="tanh", sigma_b=0.05 ** 0.5)) ** 2
    require(abs(value - 1.76) < 0.01, f"tanh EOC sigma_w^2 = {value}")
    d.step(f"tanh's edge of chaos at sigma_b^2 = 0.05: sigma_w^2 = {value:.5f} (Schoenholz et al. 2017: ~1.76).")


def _eoc_growth(d: Derivation):
    """meanfield.gamma_eoc_growth: lim gamma_L/L^p on the edge of chaos (Schoenholz et al. 2017 Sec. 3: there xi_c
    = inf and c_l -> 1 algebraically, not exponentially)."""
    eps, r, A, B3 = (sp.Symbol(n, positive=True) for n in ("epsilon", "r", "A", "C_3"))
    e_, xx, bt, ss, BB = (sp.Symbol(n, positive=True) for n in ("e", "x", "beta", "s", "B"))
    t = sp.acos(1 - eps**2)
    excess = sp.simplify(sp.series(r * (sp.sin(t) - t * sp.cos(t)) / sp.pi, eps, 0, 7).removeO())
    a_coef = 2 * sp.sqrt(2) * r / (3 * sp.pi)
    require(sp.simplify(excess - a_coef * eps**3 - sp.sqrt(2) * r * eps**5 / (30 * sp.pi)) == 0, "excess series")
    d.step("(Leaky) ReLU: 1 - k(c) = e - r (sin t - t cos t)/pi with cos t = 1 - e, r = (1 - a)^2/(1 + a^2); with "
           "e = epsilon^2 the SymPy series of the excess r (sin t - t cos t)/pi is", excess)
    d.step("so 1 - k = e - A e^{3/2} + O(e^{5/2}) with A =", a_coef)
    d.step("On the edge of chaos (sigma_w^2 (1 + a^2)/2 = 1) the length map is q_{l+1} = q_l + sigma_b^2: q_l = "
           "sigma_b^2 (l + s) with s = sigma_w^2/sigma_b^2 (q_1 = sigma_w^2 + sigma_b^2), and e_{l+1} = "
           "(q_l/q_{l+1}) (1 - k(1 - e_l)). Ansatz e_l = beta/l^2, l = 1/x, series in x:")
    ratio = (1 + ss * xx) / (1 + (ss + 1) * xx)
    lhs = bt * xx**2 / (1 + xx) ** 2
    e_l = bt * xx**2
    resid = sp.expand(sp.series(lhs - ratio * (e_l - A * e_l ** sp.Rational(3, 2)), xx, 0, 4).removeO())
    require(resid.coeff(xx, 2) == 0, "the x^2 terms cancel")
    x3 = sp.factor(resid.coeff(xx, 3))
    d.step("the x^2 terms cancel; the x^3 coefficient must vanish:", sp.Eq(x3, 0))
    beta_sol = [v for v in sp.solve(x3, bt) if v != 0]
    require(len(beta_sol) == 1 and sp.simplify(beta_sol[0] - 1 / A**2) == 0, "beta = 1/A^2")
    d.step("so beta = 1/A^2 for every s (every sigma_b > 0), and gamma_L = (1 - e_{L+1})/e_{L+1} ~ L^2/beta:",
           sp.Eq(sp.Symbol("C"), sp.expand(a_coef**2)))
    zero = sp.expand(sp.series(lhs - (e_l - A * e_l ** sp.Rational(3, 2)), xx, 0, 4).removeO()).coeff(xx, 3)
    beta0 = [v for v in sp.solve(zero, bt) if v != 0][0]
    require(sp.simplify(beta0 - 4 / A**2) == 0, "zero bias: beta = 4/A^2")
    d.step("Without biases (q_l constant, the ratio is 1) the same ansatz gives beta = 4/A^2, gamma_L ~ A^2 L^2/4 = "
           "2 r^2 L^2/(9 pi^2) (depth.gamma's law): the biases' growing q_l (the factor 1 - 1/l) makes the growth four "
           "times faster. The limits do not commute: the law needs L >> s = sigma_w^2/sigma_b^2.")
    mult = sp.series(ratio * (1 - sp.Rational(3, 2) * A * sp.sqrt(e_l)) * (1 + xx) ** 2, xx, 0, 2).removeO()
    mult = sp.expand(mult.subs(bt, 1 / A**2))
    require(sp.simplify(mult - (1 - xx / 2)) == 0, "perturbation multiplier 1 - 1/(2l)")
    mult0 = sp.expand(sp.series((1 - 3 * A * sp.sqrt(e_l) / 2) * (1 + xx) ** 2, xx, 0, 2).removeO().subs(
        bt, 4 / A**2))
    require(sp.simplify(mult0 - (1 - xx)) == 0, "zero bias multiplier 1 - 1/l")
    d.step("Subleading order: a relative perturbation e_l (1 + delta_l) obeys delta_{l+1} = delta_l (q_l/q_{l+1}) "
           "(1 - (3/2) A e_l^{1/2}) e_l/e_{l+1}, whose multiplier is (series in x = 1/l)", mult)
    d.step("so delta_l ~ D l^{-1/2}: gamma_L/(C L^2) = 1 + D L^{-1/2} + O(ln L/L), D set by sigma_b and the inputs "
           "(not universal; measured at L = 1e5: -8% at sigma_b = 0.1, +0.8% at 1, +4% at 3). Without biases the "
           "multiplier is 1 - 1/l (delta ~ 1/l, and the e^{5/2} term adds the L ln L term of depth.gamma).")
    for act, sub in (("relu", {r: 1}), ("leaky_relu", {r: (1 - a) ** 2 / (1 + a**2)})):
        d.prove("meanfield.gamma_eoc_growth", (a_coef**2).subs(sub), activation=act)
    emap = e_ - BB * e_**2 + B3 * e_**3
    u_step = sp.series(1 / emap - 1 / e_, e_, 0, 2).removeO()
    require(sp.simplify(u_step - (BB + (BB**2 - B3) * e_)) == 0, "1/e' - 1/e")
    d.step("Smooth odd phi on the edge of chaos: q_l -> q* geometrically (chi_q < 1) and, by Mehler's series "
           "sum_k beta_k c^k (whose n-th c-derivative at c = 1 is q*^n E[phi^(n)(u)^2], Price's theorem), with "
           "1 - (1 - e)^k = k e - C(k, 2) e^2 + C(k, 3) e^3, the map of e is e' = chi_1 e - B e^2 + C_3 e^3, "
           "chi_1 = 1, B = sigma_w^2 q* E[phi^(2)(u)^2]/2, C_3 = sigma_w^2 q*^2 E[phi^(3)(u)^2]/6; then "
           "1/e' - 1/e =", u_step)
    d.step("so 1/e_l = B l + ((B^2 - C_3)/B) ln l + O(1): gamma_L = B L + O(ln L), C = B (the ansatz e_l = beta/l, "
           "series in x = 1/l, below).")
    lhs1 = bt * xx / (1 + xx)
    res1 = sp.expand(sp.series(lhs1 - (bt * xx - BB * (bt * xx) ** 2), xx, 0, 3).removeO())
    b1 = [v for v in sp.solve(res1.coeff(xx, 2), bt) if v != 0]
    require(len(b1) == 1 and sp.simplify(b1[0] - 1 / BB) == 0, "beta = 1/B")
    d.step("The x^2 coefficient vanishes for beta = 1/B:", sp.Eq(res1.coeff(xx, 2), 0))
    qq = sp.Symbol("q", positive=True)
    m2 = sp.simplify(_gauss(sp.diff(sp.erf(x), x, 2) ** 2, x, sp.sqrt(qq)))
    require(symbolically_equal(m2, 16 * qq / (sp.pi * (1 + 4 * qq) ** sp.Rational(3, 2))), "E erf''^2")
    c_erf = sp.simplify(sp.pi * sp.sqrt(1 + 4 * qq) / 4 * qq * m2 / 2)
    require(sp.simplify(c_erf - 2 * qq**2 / (1 + 4 * qq)) == 0, "erf: C = 2q^2/(1 + 4q)")
    d.step("erf: E[erf''(u)^2] (SymPy) =", m2)
    d.step("and on the edge of chaos sigma_w^2 = 1/E erf'^2 = pi sqrt(1 + 4q*)/4, so C = B =", c_erf)
    d.check_route("meanfield.gamma_eoc_growth", [dict(sigma_b=v) for v in (0.05, 0.3, 1.0)],
                 lambda sigma_b: _erf_growth(sigma_b), 1e-12,
                 "erf: NumPy vs 2q*^2/(1 + 4q*) at the mpmath root of the derived chi_1 = 1 condition",
                 activation="erf")
    form = igbsym.get("meanfield.gamma_eoc_growth")
    d.check_route("meanfield.gamma_eoc_growth", [dict(sigma_b=0.3), dict(sigma_b=1.0)],
                 lambda sigma_b: form.mp(30, activation="tanh", sigma_b=sigma_b), 1e-11,
                 "tanh: q* E[phi''^2]/(2 E[phi'^2]), NumPy quadrature vs the mpmath route at 30 digits",
                 activation="tanh")


def _erf_growth(sb_):
    """2q*^2/(1 + 4q*) at the erf edge of chaos, q* the mpmath root (30 digits) of the derived chi_1 = 1 condition."""
    with mpmath.workdps(30):
        sb2 = mpmath.mpf(sb_) ** 2
        r = lambda qq: qq - mpmath.sqrt(1 + 4 * qq) / 2 * mpmath.asin(2 * qq / (1 + 2 * qq)) - sb2  # noqa: E731
        qq = mpmath.findroot(r, (sb2, sb2 + 10), solver="anderson")
        return 2 * qq**2 / (1 + 4 * qq)


def derive() -> Derivation:
    d = Derivation("meanfield", "Mean-field signal propagation and IGB")
    _convention(d)
    _homogeneous(d)
    _convexity(d)
    _erf(d)
    _tanh(d)
    _eoc_growth(d)
    return d


if __name__ == "__main__":
    from .base import document
    print(document([derive()]))
