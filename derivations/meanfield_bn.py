"""Derivation of the BatchNorm mean-field forms (igbsym/families/meanfield_bn.py; Yang et al. 2019).

1. The batch Gram of the BN outputs: the only permutation-symmetric matrix with unit diagonal and zero row sums is
   Sigma* = B/(B - 1) P, P = I - 11^T/B (solved by SymPy); per unit the batch vector is sqrt(B) u, u uniform on the
   unit sphere of the centred subspace, so E x_1^2 = 1 and E x_1 x_2 = -1/(B - 1).
2. The backward map of one block: E[1/chi^2_n] = 1/(n - 2) (SymPy integral), and E tr[(P - uu^T) D P D (P - uu^T)]
   with D = diag phi'(x) sharing x with BN's Jacobian (SymPy on explicit B x B matrices, moments by exchangeability):
   lambda_B = ((B - 1) d_1 + d_2 - beta)/(alpha (B - 3)).
3. The leaky family phi = relu(x) - a relu(-x) (phi'(x) x = phi(x), so beta = alpha): homogeneity maps the sphere
   law to a Gaussian of covariance P, whose orthant probability and arc-cosine moment are integrated in polar
   coordinates; the assembled lambda_B is proved
   equal to the registered form for relu, leaky_relu, abs and identity at several B; identity's (B - 2)/(B - 3) and
   the B -> inf limit E phi'^2/Var phi (E phi, E phi^2, E phi'^2 integrated by SymPy) with symbolic B.
4. No edge of chaos: lambda_inf - 1 = (1 - a)^2/(pi(1 + a^2) - (1 - a)^2) >= 0, the denominator a quadratic with
   negative discriminant (Gaussian Poincare for this family), = 0 only at a = 1 (the identity).
5. Smooth activations: the NumPy route against an independent mpmath.quad of E phi'(Z)^2 and Var phi(Z) at 30 digits.
"""
import mpmath
import sympy as sp

import igbsym
from igbsym.families.meanfield_bn import SMOOTH

from .base import Derivation, DerivationError, Proof, require, symbolically_equal

a = sp.Symbol("a", real=True)
B = sp.Symbol("B", integer=True, positive=True)
x, r, t = sp.Symbol("x", real=True), sp.Symbol("r", positive=True), sp.Symbol("t", real=True)
th = sp.Symbol("theta", positive=True)
n = sp.Symbol("n", positive=True)
B_CASES = (4, 5, 8, 16, 1024)
FORM = "meanfield.bn_grad_rate"


def _gauss(f):
    return sp.integrate(f * sp.exp(-x**2 / 2) / sp.sqrt(2 * sp.pi), (x, -sp.oo, sp.oo))


def _fixed_point(d: Derivation):
    al, be = sp.symbols("alpha beta", real=True)
    sol = sp.solve([al + be - 1, al + 4 * be], [al, be], dict=True)[0]   # B = 4: the pattern, then general B
    Bs = sp.Symbol("B", positive=True)
    gen = sp.solve([al + be - 1, al + Bs * be], [al, be], dict=True)[0]
    require(sp.simplify(gen[al] - Bs / (Bs - 1)) == 0 and sp.simplify(gen[be] + 1 / (Bs - 1)) == 0,
            "Sigma* = B/(B-1) P")
    require(sol[al] == sp.Rational(4, 3), "Sigma* at B = 4")
    d.step("The BN outputs of a unit are centred and scaled over the batch: their batch Gram (averaged over units) has "
           "unit diagonal and zero row sums. A permutation-symmetric Gram alpha I + beta 1 1^T with alpha + beta = 1 "
           "and alpha + B beta = 0 is", sp.Eq(sp.Symbol("Sigma^*"), Bs / (Bs - 1) * sp.Symbol("P")))
    d.step("(P = I - 1 1^T/B; Yang et al.'s BSB1 fixed point, the one the mean-field theory propagates). At infinite "
           "width the pre-BN batch vector of a unit, P h, is an isotropic Gaussian in the (B - 1)-dim centred "
           "subspace, so the BN output is x = sqrt(B) u, u uniform on that subspace's unit sphere: E x_1^2 = 1, "
           "E x_1 x_2 = -1/(B - 1).")


def _backward(d: Derivation):
    chi = sp.integrate(x ** (n / 2 - 2) * sp.exp(-x / 2) / (2 ** (n / 2) * sp.gamma(n / 2)), (x, 0, sp.oo),
                       conds="none")
    require(sp.simplify(chi.subs(n, 7) - sp.Rational(1, 5)) == 0 and sp.simplify(chi - 1 / (n - 2)) == 0,
            "E[1/chi^2_n] = 1/(n - 2)")
    d.step("BN's Jacobian at h is (sqrt(B)/|P h|)(P - u u^T), u = P h/|P h|; with |P h|^2 = sigma_w^2 alpha "
           "chi^2_{B-1} (alpha = E phi(x_1)^2 - E phi(x_1) phi(x_2), the centred variance of phi over the batch) "
           "and E[1/chi^2_n] (SymPy) =", chi)
    d1, d2, beta, alpha = sp.symbols("d_1 d_2 beta alpha", real=True)
    for b in (4, 5, 6):
        f, v = sp.symbols(f"f1:{b + 1}", real=True), sp.symbols(f"v1:{b + 1}", real=True)
        Pm, D = sp.eye(b) - sp.ones(b, b) / b, sp.diag(*f)
        trace = sp.expand((D * Pm * D * Pm).trace())
        moments = {f[i] ** 2: d1 for i in range(b)}
        e_trace = sp.expand(trace).subs(moments)
        e_trace = e_trace.subs({f[i] * f[k]: d2 for i in range(b) for k in range(b) if i != k})
        require(sp.simplify(e_trace - sp.Rational(b - 1, b) * ((b - 1) * d1 + d2)) == 0, f"E tr(DPDP) at B = {b}")
        vv = sp.Matrix(v)
        quad = sp.expand((vv.T * Pm * vv)[0])
        e_quad = quad.subs({v[i] ** 2: sp.Symbol("m2") for i in range(b)})
        e_quad = e_quad.subs({v[i] * v[k]: sp.Symbol("m11") for i in range(b) for k in range(b) if i != k})
        require(sp.simplify(e_quad - (b - 1) * (sp.Symbol("m2") - sp.Symbol("m11"))) == 0, f"E|Pv|^2 at B = {b}")
    d.step("Backward through one block, per unit: the gradient at h is J D s with D = diag phi'(x) and s = "
           "(W^T dL/dh')_unit, Gaussian of covariance sigma_w^2 m P (centred; exchangeability) and independent of x "
           "(gradient independence). J and D share x, so E|J D s|^2 = sigma_w^2 m B E[1/|P h|^2] "
           "E tr[(P - u u^T) D P D (P - u u^T)] (|P h| is independent of u), and tr[(P - uu^T) D P D (P - uu^T)] "
           "= tr(DPDP) - |P D u|^2 with "
           "E tr(DPDP) = (B - 1)/B ((B - 1) d_1 + d_2) and E|P D u|^2 = (B - 1) beta/B, d_1 = E phi'(x_1)^2, d_2 = "
           "E phi'(x_1)phi'(x_2), beta = E v_1^2 - E v_1 v_2 with v = phi'(x) x (SymPy on explicit B x B matrices, "
           "B = 4, 5, 6, moments substituted by exchangeability).")
    Bs = sp.Symbol("B", positive=True)
    m = sp.Symbol("m", positive=True)
    grad = m * Bs / (alpha * (Bs - 3)) * (Bs - 1) / Bs * ((Bs - 1) * d1 + d2 - beta)   # sigma_w^2 cancels
    lam = sp.simplify(grad / ((Bs - 1) * m))     # the new m' = E|grad|^2/(B - 1), over m
    require(sp.simplify(lam - ((Bs - 1) * d1 + d2 - beta) / (alpha * (Bs - 3))) == 0, "lambda_B")
    d.step("The centred covariance m P maps to m' P with m'(B - 1) = E|J D s|^2; the mean squared gradient of every "
           "layer is proportional to m, so its per-layer factor, independent of sigma_w and sigma_b, is",
           sp.Eq(sp.Symbol("lambda_B"), lam))


def _kernels():
    """Orthant probability and arc-cosine moment of unit normals at correlation cos(theta), in polar coordinates
    (z = (r cos t, r sin t); z_1 > 0 and z_2 = cos(theta) z_1 + sin(theta) z_perp > 0 iff t in (theta - pi/2, pi/2))."""
    radial0 = sp.integrate(r * sp.exp(-r**2 / 2) / (2 * sp.pi), (r, 0, sp.oo))
    orth = sp.integrate(radial0, (t, th - sp.pi / 2, sp.pi / 2))
    radial = sp.integrate(r**3 * sp.exp(-r**2 / 2) / (2 * sp.pi), (r, 0, sp.oo))
    cross = radial * sp.integrate(sp.cos(t) * sp.cos(t - th), (t, th - sp.pi / 2, sp.pi / 2))
    return sp.simplify(orth), sp.simplify(cross)


def _homogeneous(d: Derivation):
    orth, cross = _kernels()
    rho = sp.Symbol("rho", real=True)
    P_pp = orth.subs(th, sp.acos(rho))          # P(z_1 > 0, z_2 > 0)
    g = cross.subs(th, sp.acos(rho))            # E relu(z_1) relu(z_2)
    d.step("Unit normals of correlation rho = cos(theta) (polar coordinates): P(z_1 > 0, z_2 > 0) =", P_pp)
    d.step("and E relu(z_1) relu(z_2) =", g)
    require(sp.simplify(P_pp - (sp.Rational(1, 4) + sp.asin(rho) / (2 * sp.pi)).rewrite(sp.acos)) == 0, "Sheppard")
    d.step("Leaky phi(x) = relu(x) - a relu(-x) is 1-homogeneous and the orthant events depend on directions only: "
           "the sphere law x = sqrt(B) u and the Gaussian g = P zeta = |P zeta| u (covariance P: variance (B - 1)/B, "
           "correlation rho = -1/(B - 1)) give E phi(x_1)phi(x_2) = B/(B - 1) E phi(g_1)phi(g_2) and the same "
           "orthant probabilities. Hence, with the unit-variance kernels at rho:")
    pm = sp.Rational(1, 2) - P_pp               # P(z_1 > 0, z_2 < 0) = P(z_1 > 0) - P(++)
    d1 = (1 + a**2) / 2
    d2 = P_pp + a**2 * P_pp + 2 * a * pm
    # E phi(g1) phi(g2)/var = E r r + a^2 E r(-) r(-) - a (E r(g1) r(-g2) + E r(-g1) r(g2)); r(-z) has correlation
    # -rho with r(z') for the mixed terms
    cross_phi = (1 + a**2) * g - 2 * a * g.subs(rho, -rho)
    alpha = d1 - cross_phi                      # E phi(x_1)^2 - B/(B-1) (B-1)/B E phi(z_1)phi(z_2)
    leaky = sp.Piecewise((x, x >= 0), (a * x, True))
    require(sp.simplify(sp.piecewise_fold(sp.diff(leaky, x) * x - leaky)) == 0, "phi'(x) x = phi(x)")
    beta = alpha                                # v = phi'(x) x = phi(x) (Euler: 1-homogeneous)
    lam = ((B - 1) * d1 + d2 - beta) / (alpha * (B - 3))
    lam = lam.subs(rho, -1 / (B - 1))
    d.step("lambda_B of the leaky family (d_1 = (1 + a^2)/2, d_2 = (1 + a^2) P_{++} + 2a P_{+-}, alpha = "
           "(1 + a^2)/2 - (1 + a^2) g(rho) + 2 a g(-rho), and beta = alpha since phi'(x) x = phi(x)):", lam)
    for act, sub in (("relu", {a: 0}), ("leaky_relu", {}), ("abs", {a: -1}), ("identity", {a: 1})):
        for b in B_CASES:
            derived = lam.subs(sub).subs(B, b)
            registered = igbsym.get(FORM).case(activation=act, B=b)
            if not symbolically_equal(derived.rewrite(sp.asin), registered.rewrite(sp.asin)):
                raise DerivationError(f"{FORM} {act} B={b}: derived {derived} != registered {registered}")
            d.proofs.append(Proof(FORM, "symbolic", "simplify(derived - registered) == 0 (acos rewritten as asin)",
                                  dict(activation=act, B=b)))
    ident = sp.simplify(lam.subs(a, 1).rewrite(sp.asin))
    require(sp.simplify(ident - (B - 2) / (B - 3)) == 0, "identity: (B - 2)/(B - 3)")
    d.step("The identity (a = 1), every B (Yang et al.'s linear rate):", sp.Eq(sp.Symbol("lambda_B"), ident))
    limit = sp.limit(lam.rewrite(sp.asin), B, sp.oo)
    mean, second = _gauss(leaky), _gauss(leaky**2)
    slope2 = _gauss(sp.Piecewise((1, x >= 0), (a**2, True)))
    poincare = sp.simplify(slope2 / (second - mean**2))
    require(symbolically_equal(limit, poincare), "lim_B lambda_B = E phi'^2/Var phi")
    d.step("B -> inf (SymPy limit) equals E phi'(Z)^2/Var phi(Z) with E phi, E phi^2, E phi'^2 integrated by SymPy:",
           sp.Eq(sp.Symbol("lambda_inf"), poincare))
    for act, sub in (("relu", {a: 0}), ("leaky_relu", {}), ("abs", {a: -1}), ("identity", {a: 1})):
        d.prove(FORM, sp.simplify(poincare.subs(sub)), activation=act, B=float("inf"))
    require(sp.simplify(poincare.subs(a, 0) - sp.pi / (sp.pi - 1)) == 0, "relu pi/(pi - 1)")
    d.step("relu: pi/(pi - 1) = 1.4669, the large-batch rate Yang et al. quote.")
    return poincare


def _no_edge_of_chaos(d: Derivation, poincare):
    gap = (1 - a) ** 2 / (sp.pi * (1 + a**2) - (1 - a) ** 2)
    require(sp.simplify(poincare - 1 - gap) == 0, "lambda - 1 = gap")
    den = sp.expand(sp.pi * (1 + a**2) - (1 - a) ** 2)
    disc = sp.discriminant(den, a)
    require(sp.simplify(disc - (4 - 4 * (sp.pi - 1) ** 2)) == 0 and bool(disc < 0)
            and bool(den.coeff(a, 2) > 0), "denominator positive")
    require(sp.solve(sp.Eq(gap, 0), a) == [1], "equality only at a = 1")
    d.step("No edge of chaos: lambda_inf - 1 =", gap)
    d.step("whose denominator (pi - 1) a^2 + 2 a + pi - 1 has discriminant 4 - 4(pi - 1)^2 < 0: lambda_inf >= 1 for "
           "every slope, = 1 only at a = 1 (the identity). This is the Gaussian Poincare inequality Var phi(Z) <= "
           "E phi'(Z)^2 (equality iff phi is affine), which holds for every activation: sigma_w and sigma_b cancel "
           "under BN, so no initialisation reaches chi = 1; gradients explode at rate lambda per layer.")


def _smooth(d: Derivation):
    form = igbsym.get(FORM)
    for name in SMOOTH:
        act = igbsym.activations.get(name)
        with mpmath.workdps(30):
            f = lambda z: act.mp(z, 0, 0)  # noqa: E731
            fp = lambda z: mpmath.diff(f, z)  # noqa: E731
            w = lambda z: mpmath.exp(-z * z / 2) / mpmath.sqrt(2 * mpmath.pi)  # noqa: E731
            quad = lambda h: mpmath.quad(lambda z: h(z) * w(z), [-mpmath.inf, -5, 0, 5, mpmath.inf])  # noqa: E731
            m1 = quad(f)
            ref = quad(lambda z: fp(z) ** 2) / (quad(lambda z: (f(z) - m1) ** 2))
        got = float(form.numpy(activation=name))
        err = abs(got - float(ref)) / float(ref)
        if not err <= form.accuracy.relative:
            raise DerivationError(f"{FORM} {name}: route {got} != mpmath {ref} (rel. error {err:.1e})")
        d.proofs.append(Proof(FORM, "numeric-route", f"relative error {err:.1e} <= {form.accuracy.relative:g} "
                                                     "against mpmath.quad at 30 digits", dict(activation=name)))
        d.step(f"Numeric route check (not a symbolic proof) for {FORM} ({name}, B = inf): E phi'^2/Var phi = "
               f"{got:.12g}, relative error {err:.1e} against mpmath.quad at 30 digits.")


def derive() -> Derivation:
    d = Derivation("meanfield_bn", "Mean field with BatchNorm: gradient explosion, no edge of chaos")
    _fixed_point(d)
    _backward(d)
    poincare = _homogeneous(d)
    _no_edge_of_chaos(d, poincare)
    _smooth(d)
    return d


if __name__ == "__main__":
    from .base import document
    print(document([derive()]))
