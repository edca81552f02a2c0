"""Derivation of the mean-field forms (igbsym/families/meanfield.py; Schoenholz et al. 2017, Poole et al. 2016).

1. The readout convention: gamma = q_ab/(q - q_ab) = c/(1 - c), i.e. c = gamma/(1 + gamma) (igb-talk-slides.txt).
2. (Leaky) ReLU: E phi^2 = q(1 + a^2)/2 and E phi'^2 = (1 + a^2)/2 by SymPy integration; the length map is linear, so
   q*, chi_1 = chi_q, the edge of chaos and the depth scales follow in closed form; the correlation map is
   chi_1 k(c) + 1 - chi_1 with the arc-cosine k (derivations/depth.py), k(c) >= c, so c* = 1 is the only fixed point.
3. Convexity (every activation): Mehler's series E[phi(u_a)phi(u_b)] = sum_k beta_k c^k, beta_k >= 0, so the map is
   convex on [0, 1]: c* = 1 iff chi_1 <= 1, else exactly one stable c* in (0, 1) with chi_c < 1.
4. erf: Price's theorem and a Gaussian integral give the arcsine kernel; the NumPy route with the closed kernel is
   checked against mpmath roots of the derived kernel, tanh's against the mpmath quadrature route.
"""
import mpmath
import sympy as sp

import igbsym

from .base import Derivation, DerivationError, Proof, require, symbolically_equal
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
        _route_check(d, f"meanfield.{name}", pts, lambda i=i, **p: _erf_reference(p["sigma_w"], p["sigma_b"])[i],
                     2e-10, "erf: the NumPy route vs mpmath roots (30 digits) of the derived arcsine kernel",
                     activation="erf")
    _route_check(d, "meanfield.eoc_sigma_w", [dict(sigma_b=v) for v in (0.05, 0.3, 1.0)],
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


def _route_check(d: Derivation, name, points, reference, tol, reason, **case):
    form, worst = igbsym.get(name), 0.0
    for pt in points:
        got, ref = float(form.numpy(**case, **pt)), float(reference(**pt))
        err = 0.0 if got == ref else abs(got - ref) / abs(ref)
        worst = max(worst, err)
        if not err <= tol:
            raise DerivationError(f"{name} {case} at {pt}: route {got} != reference {ref} (rel. error {err:.2e})")
    d.proofs.append(Proof(name, "numeric-route", f"{len(points)} points, worst relative error {worst:.1e} <= "
                                                 f"{tol:.0e}; {reason}", case))
    d.step(f"Numeric route check (not a symbolic proof) for {name} ({case['activation']}): {reason}; "
           f"{len(points)} points, worst relative error {worst:.1e}.")


def _tanh(d: Derivation):
    d.step("tanh has no closed kernel: its NumPy route (quadrature moments, Mehler's series) is checked against the "
           "mpmath route (nested quadrature of the pair moment, Illinois/Newton roots) at 30 digits:")
    pts = [dict(sigma_w=1.0, sigma_b=0.3), dict(sigma_w=2.0, sigma_b=0.3)]
    for name in ("q_star", "c_star", "chi_c", "xi_q", "gamma_inf"):
        form = igbsym.get(f"meanfield.{name}")
        _route_check(d, f"meanfield.{name}", pts[1:] if name == "gamma_inf" else pts,
                     lambda form=form, **p: form.mp(30, activation="tanh", **p), 1e-9,
                     "tanh: NumPy vs the mpmath quadrature route", activation="tanh")
    eoc = igbsym.get("meanfield.eoc_sigma_w")
    _route_check(d, "meanfield.eoc_sigma_w", [dict(sigma_b=0.05 ** 0.5)],
                 lambda sigma_b: eoc.mp(30, activation="tanh", sigma_b=sigma_b), 1e-9,
                 "tanh at sigma_b^2 = 0.05 (Schoenholz et al.: sigma_w^2 ~ 1.76)", activation="tanh")
    value = float(eoc.numpy(activation="tanh", sigma_b=0.05 ** 0.5)) ** 2
    require(abs(value - 1.76) < 0.01, f"tanh EOC sigma_w^2 = {value}")
    d.step(f"tanh's edge of chaos at sigma_b^2 = 0.05: sigma_w^2 = {value:.5f} (Schoenholz et al. 2017: ~1.76).")


def derive() -> Derivation:
    d = Derivation("meanfield", "Mean-field signal propagation and IGB")
    _convention(d)
    _homogeneous(d)
    _convexity(d)
    _erf(d)
    _tanh(d)
    return d


if __name__ == "__main__":
    from .base import document
    print(document([derive()]))
