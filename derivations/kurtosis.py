"""Derivations for the kurtosis family (igbsym/families/kurtosis.py), from kurtosis-vanishing-empirical-variance.txt.

Built from definitions: the fourth moment of a unit is expanded with the multinomial theorem (a partition engine
for general w, checked against brute-force SymPy expansion at w = 2, 3, 4), Lemmas 4.1/4.2 are derived from the
sign-quadrant decomposition (Lemma 4.2 is refuted as printed by an exact discrete counterexample), Lemma 4.5 is
proved as a polynomial inequality with nonnegative coefficients, kappa_L is obtained from SymPy's symbolic matrix
power, Var[S_n^2] from the pair-overlap count of the U-statistic S^2 (brute-forced for n = 2..5), the Gamma
probability by integrating its density, and P(y != 0) from its one-layer recursion.
"""
from math import factorial

import sympy as sp
from sympy.utilities.iterables import partitions

import igbsym
from igbsym.families import kurtosis as K

from .base import Derivation, require

PAPER = "kurtosis-vanishing-empirical-variance.txt"
w, a, kw, s2, ell, k0, c0 = K.w, K.a, K.kw, K.s2, K.ell, K.k0, K.c0
kap, c = sp.symbols("kappa c", real=True)
mu2, mu4 = sp.symbols("mu_2 mu_4", positive=True)       # E[W^2], E[W^4]
F4, F22 = sp.symbols("F_4 F_22", positive=True)          # E[phi^4], E[phi_j^2 phi_k^2] (j != k)
STATE = {(2,): F4, (1, 1): F22}


def even_expansion(m: int, width):
    """E[(sum_{j<=width} W_j phi_j)^(2m)] for iid zero-mean W independent of phi, as a sum over partitions of m.

    A partition (exponents 2 lambda_i on r distinct units) contributes ff(width, r)/prod(mult!) unit choices times the
    multinomial coefficient (2m)!/prod (2 lambda_i)! times prod E[W^(2 lambda_i)] times the phi moment of the pattern.
    """
    total = 0
    for part in partitions(m):
        r = sum(part.values())
        choices = sp.ff(width, r) / sp.prod([factorial(v) for v in part.values()])
        coef = sp.Integer(factorial(2 * m)) / sp.prod([factorial(2 * p) ** v for p, v in part.items()])
        moments = sp.prod([{1: mu2, 2: mu4}[p] ** v for p, v in part.items()])
        pattern = tuple(sorted((p for p, v in part.items() for _ in range(v)), reverse=True))
        total += choices * coef * moments * STATE[pattern]
    return sp.expand(total)


def brute_force(width: int):
    """The same expectation by expanding the polynomial at a concrete width (odd W powers vanish, E[W^3] = 0)."""
    Ws, Ps = sp.symbols(f"W1:{width + 1}"), sp.symbols(f"p1:{width + 1}")
    poly = sp.Poly(sp.expand(sum(x * y for x, y in zip(Ws, Ps)) ** 4), *Ws, *Ps)
    total = 0
    for exps, coef in poly.terms():
        we, pe = exps[:width], exps[width:]
        if any(e % 2 for e in we):
            continue
        wm = sp.prod([{0: 1, 2: mu2, 4: mu4}[e] for e in we])
        total += coef * wm * STATE[tuple(sorted((e // 2 for e in pe if e), reverse=True))]
    return sp.expand(total)


def _lemmas(d: Derivation):
    q = sp.symbols("q_pp q_pm q_mp q_mm", nonnegative=True)
    d.step("Lemma 4.1 (reused from leaky.m4): split E[phi_a(x)^4] at 0; a symmetric law puts E[x^4]/2 on each side.",
           igbsym.get("leaky.m4").expr)
    quad = q[0] + a**2 * (q[1] + q[2]) + a**4 * q[3]
    d.step("Lemma 4.2 from the definition: with q_Q = E[x^2 y^2 1_Q] on the four sign quadrants Q,", quad)
    e22 = sp.Symbol("E_xxyy", positive=True)
    sym = quad.subs({v: e22 / 4 for v in q})
    require(sp.simplify(sym - (1 + a**2) ** 2 / 4 * e22) == 0)
    d.step("Joint sign symmetry ((x, y) =d (s x, t y) for signs s, t) gives q_Q = E[x^2 y^2]/4 for every Q, so",
           sp.Eq(sp.Symbol("E_phi2phi2"), sp.factor(sym)))
    # Exact counterexample to Lemma 4.2 as printed: identically distributed, uncorrelated, zero-mean, symmetric.
    third = sp.Rational(1, 6)
    law = {(1, 1): third, (-1, -1): third}
    for (u, v) in [(2, sp.Rational(-1, 4)), (sp.Rational(1, 4), -2), (-2, sp.Rational(1, 4)), (sp.Rational(-1, 4), 2)]:
        law[(u, v)] = third
    E = lambda f: sum(p * f(u, v) for (u, v), p in law.items())  # noqa: E731
    require(sum(law.values()) == 1 and E(lambda u, v: u * v) == 0 and E(lambda u, v: u) == 0)
    require(sorted((u, p) for (u, _), p in law.items()) == sorted((v, p) for (_, v), p in law.items()))
    relu2 = lambda t: max(t, 0) ** 2  # noqa: E731
    lhs, rhs = E(lambda u, v: relu2(u) * relu2(v)), E(lambda u, v: u**2 * v**2) / 4
    require(lhs != rhs)
    d.step(f"Counterexample (a = 0): (x, y) uniform on (1,1), (-1,-1), (2,-1/4), (1/4,-2), (-2,1/4), (-1/4,2) is "
           f"identically distributed, symmetric, zero-mean and uncorrelated, yet E[ReLU(x)^2 ReLU(y)^2] = {lhs} while "
           f"Lemma 4.2 gives (sigma^4 + c)/4 = E[x^2 y^2]/4 = {rhs}.")
    d.erratum(f"{PAPER}, Lemma 4.2 (and App. C)",
              "identically distributed, uncorrelated, zero-mean, symmetric x, y give "
              "E[phi_a^2(x) phi_a^2(y)] = (a^2+1)^2 (sigma^4 + c)/4",
              "true under joint sign symmetry (x, y) =d (s x, t y); every hidden layer of the net has it (independent "
              "symmetric rows of W), so Prop. 4.3 holds for l >= 1 and for l = 0 iff the input has it",
              "exact six-point counterexample (E = 1/6 vs 1/8 at a = 0) in derivations/kurtosis.py")


def _matrix(d: Derivation):
    for width in (2, 3, 4):
        require(sp.expand(even_expansion(2, width) - brute_force(width)) == 0)
    gen = even_expansion(2, w)
    d.step("Multinomial expansion of E[y_i^4] = E[(sum_j W_ij phi_j)^4] (terms with an odd W power vanish; checked "
           "against brute-force expansion at w = 2, 3, 4):", gen)
    m4 = igbsym.get("leaky.m4").expr.subs({sp.Symbol("sigma", positive=True): sp.sqrt(s2),
                                          sp.Symbol("kappa", positive=True): kap, sp.Symbol("a", real=True): a})
    sub = {mu2: 2 / (w * (1 + a**2)), mu4: kw * (2 / (w * (1 + a**2))) ** 2, F4: m4,
           F22: (1 + a**2) ** 2 / 4 * (s2**2 + c)}
    kappa_next = sp.expand(gen.subs(sub) / s2**2)
    d.step("He variance E[W^2] = 2/(w(1+a^2)), E[W^4] = kappa_w E[W^2]^2, Lemma 4.1 and the corrected Lemma 4.2:",
           sp.Eq(sp.Symbol("kappa_next"), sp.factor(kappa_next)))
    # c_{l+1}: rows i != j are independent given phi, E[(sum_k W_ik phi_k)^2 | phi] = mu2 sum_k phi_k^2.
    sq = sp.expand(mu2**2 * (w * F4 + (w**2 - w) * F22))
    for width in (2, 3):
        P = sp.symbols(f"p1:{width + 1}")
        poly = sp.Poly(sp.expand(sum(p**2 for p in P) ** 2), *P)
        bf = sum(cf * STATE[tuple(sorted((e // 2 for e in ex if e), reverse=True))] for ex, cf in poly.terms())
        require(sp.expand(mu2**2 * bf - sq.subs(w, width)) == 0)
    c_next = sp.expand(sq.subs(sub) - s2**2)
    d.step("Two rows are independent given phi: E[y_i^2 y_j^2] = E[(mu_2 sum_k phi_k^2)^2] (sum split into k1 = k2 "
           "and k1 != k2, checked at w = 2, 3), so", sp.Eq(sp.Symbol("c_next"), sp.factor(c_next)))
    rows = [sp.Poly(r, kap, c) for r in (kappa_next, c_next)]
    derived = sp.ImmutableMatrix([[r.coeff_monomial(kap), r.coeff_monomial(c), r.coeff_monomial(1)] for r in rows]
                                 + [[0, 0, 1]])
    d.prove("kurtosis.matrix", derived)
    printed = sp.ImmutableMatrix([
        [2 * (a**4 + 1) * kw / (w * (a**2 + 1) ** 2), 3 * (w - 1) / (w * s2**2), 3 * (w - 1) / w],
        [2 * (a**4 + 1) * s2**2 / (w * (a**2 + 1) ** 2), (w - 1) / w, -s2**2 / w], [0, 0, 1]])
    require(sp.simplify(printed - derived).is_zero_matrix)
    d.step("The derived matrix equals the entries printed in Prop. 4.3.", printed)
    d.erratum(f"{PAPER}, proof of Prop. 4.3 (multinomial expansion)",
              "sum over ordered pairs j != k with coefficient binom(4; 2, 2) = 6",
              "coefficient 3 for ordered pairs (6 for unordered); the next line's 6 binom(w, 2) = 3 w (w-1) is right",
              "partition engine vs brute-force expansion at w = 2, 3, 4")
    d.erratum(f"{PAPER}, Sec. 3 and Prop. 3.2", "Var W^(l)_ij = 2/(w_l (a^2+1)) with W^(l) of size w_l x w_(l-1)",
              "2/(w_(l-1) (a^2+1)) (fan-in), as the proof of Prop. 4.3 uses", "variance recursion E[y^2] preserved "
              "only with fan-in scaling (validation/checks_kurtosis.py, E[y^2]/sigma^2 = 1)")
    return derived


def _lemma44(d: Derivation):
    al, be, ga, de = (sp.symbols(f"{n}1:3", positive=True) for n in ("alpha", "beta", "gamma", "delta"))
    form = lambda i: sp.Matrix([[al[i], be[i] / s2**2, be[i]], [ga[i] * s2**2, de[i], s2**2 * (de[i] - 1)],  # noqa
                                [0, 0, 1]])
    B = form(0) * form(1)
    new = dict(alpha=B[0, 0], beta=B[0, 2], gamma=B[1, 0] / s2**2, delta=B[1, 1])
    closed = sp.Matrix([[new["alpha"], new["beta"] / s2**2, new["beta"]],
                        [new["gamma"] * s2**2, new["delta"], s2**2 * (new["delta"] - 1)], [0, 0, 1]])
    require(sp.simplify(B - closed).is_zero_matrix)
    t = sp.symbols("t1:5", nonnegative=True)  # alpha_i = gamma_i + t, beta_i = delta_i + t
    gaps = [sp.expand((new["alpha"] - new["gamma"]).subs({al[0]: ga[0] + t[0], be[0]: de[0] + t[1]})),
            sp.expand((new["beta"] - new["delta"]).subs({al[0]: ga[0] + t[0], be[0]: de[0] + t[1]}))]
    require(all(all(cf > 0 for cf in sp.Poly(g, *t, *al, *be, *ga, *de).coeffs()) for g in gaps))
    d.step("Lemma 4.4: the product of two matrices of the form is of the form, and alpha - gamma, beta - delta are "
           "polynomials with positive coefficients in nonnegative quantities:", sp.Matrix(gaps))
    A = K.MATRIX
    entries = dict(alpha=A[0, 0], beta=A[0, 2], gamma=A[1, 0] / s2**2, delta=A[1, 1])
    require(sp.simplify(A[0, 1] - entries["beta"] / s2**2) == 0
            and sp.simplify(A[1, 2] - s2**2 * (entries["delta"] - 1)) == 0)
    d.step("A itself is of the form with alpha - gamma = 2u(kappa_w - 1)/w >= 0, beta - delta = 2(w-1)/w >= 0, "
           "gamma = 2u/w > 0, delta = (w-1)/w > 0 for w >= 2.",
           sp.Matrix([sp.factor(entries["alpha"] - entries["gamma"]), sp.factor(entries["beta"] - entries["delta"])]))
    d.erratum(f"{PAPER}, proof of Lemma 4.6, case 1", "delta_(m+1) = gamma_m beta_1 + delta_m delta_2",
              "delta_(m+1) = gamma_m beta_1 + delta_m delta_1 (A^(m+1) = A^m A)", "Lemma 4.4 product formula")


def _spectrum(d: Derivation):
    lam = sp.Symbol("lambda")
    A = K.MATRIX
    cp = sp.factor((A - lam * sp.eye(3)).det())
    Am = A[:2, :2]
    tr, det = sp.simplify(Am.trace()), sp.factor(Am.det())
    require(sp.simplify(cp - (1 - lam) * (lam**2 - tr * lam + det)) == 0)
    d.step("Characteristic polynomial of A = (1 - lambda) times that of the upper-left block A_-:", cp)
    printed_tr = 2 * (a**4 + 1) * kw / (w * (a**2 + 1) ** 2) - 1 / w + 1
    printed_det = 2 * (a**4 + 1) * (w - 1) * (kw - 3) / (w**2 * (a**2 + 1) ** 2)
    require(sp.simplify(tr - printed_tr) == 0 and sp.simplify(det - printed_det) == 0)
    d.step("tr and det of A_- agree with Lemma 4.5 as printed.", sp.Matrix([tr, det]))
    root = (tr + sp.sqrt(tr**2 - 4 * det)) / 2
    require(sp.simplify((root**2 - tr * root + det) - 0) == 0)
    d.prove("kurtosis.lambda_max", root)
    # lambda_max > 1  <=>  p(1) = 1 - tr + det < 0 (the parabola opens upwards); write u = 1/2 + t, t >= 0.
    u, t, v, kk = sp.symbols("u t v k", nonnegative=True)
    require(sp.simplify(K.U - sp.Rational(1, 2) - (1 - a**2) ** 2 / (2 * (1 + a**2) ** 2)) == 0)
    num_u = sp.expand(1 + (w - 1) * (1 - 6 * u) - 2 * u * kw)
    require(sp.simplify(sp.expand((1 - tr + det) * w**2) - num_u.subs(u, K.U)) == 0)
    neg = sp.expand(-num_u.subs({u: sp.Rational(1, 2) + t, w: 2 + v, kw: 1 + kk}))
    require(all(cf > 0 for cf in sp.Poly(neg, t, v, kk).coeffs()) and neg.subs({t: 0, v: 0, kk: 0}) > 0)
    d.step("Lemma 4.5 as an inequality on trace and determinant: "
           "w^2 (1 - tr + det) = 1 + (w-1)(1-6u) - 2u kappa_w with "
           "u = (1+a^4)/(1+a^2)^2 = 1/2 + (1-a^2)^2/(2(1+a^2)^2). With u = 1/2 + t, w = 2 + v, kappa_w = 1 + k "
           "(t, v, k >= 0) its negative is a polynomial with positive coefficients and constant term > 0, so "
           "tr > det + 1 and lambda_max > 1 for every w >= 2, a, kappa_w >= 1 (in fact every kappa_w >= 0):", neg)
    w1 = sp.expand(-num_u.subs({u: sp.Rational(1, 2) + t, w: 1, kw: 1 + kk}))
    require(sp.factor(w1) == sp.factor(2 * t + kk + 2 * t * kk))
    d.step("At w = 1 the same expression is -(2t + k + 2tk): it vanishes iff t = 0 and k = 0, i.e. a^2 = 1 and "
           "kappa_w = 1, where tr = 1 and lambda_max = 1 exactly; this is the whole failure region for w >= 1, "
           "kappa_w >= 1 (the paper's remark after Thm. 4.7).", w1)
    require(sp.simplify(K.LAM_PLUS.subs({w: 1, a: 1, kw: 1}) - 1) == 0)
    gap = sp.simplify(K.DISC - (K.P11 - K.D22) ** 2)
    d.step("The discriminant exceeds (A_11 - A_22)^2 by 4 A_12 A_21 sigma^4 = 24u(w-1)/w^2 >= 0, so the eigenvalues "
           "are real, distinct for w >= 2, and lambda_- < A_11, A_22 < lambda_+.", gap)


def _power(d: Derivation):
    M = sp.Matrix([[K.P11, K.OFF], [K.G21, K.D22]])
    d.step("In raw-moment coordinates m = (kappa, e), e = 1 + c/sigma^4 = E[y_i^2 y_j^2]/sigma^4, the affine map A is "
           "the homogeneous linear map M (no fixed point, no constant term):", M)
    kaff = sp.expand(K.MATRIX * sp.Matrix([kap, c, 1]))
    mlin = M * sp.Matrix([kap, 1 + c / s2**2])
    require(sp.simplify(kaff[0] - mlin[0]) == 0 and sp.simplify(1 + kaff[1] / s2**2 - mlin[1]) == 0)
    m0 = sp.Matrix([k0, K.E0])
    lp, lm = K.LAM_PLUS, K.LAM_MINUS
    Pp, Pm = (M - lm * sp.eye(2)) / (lp - lm), (lp * sp.eye(2) - M) / (lp - lm)
    ch = sp.simplify((M - lp * sp.eye(2)) * (M - lm * sp.eye(2)))
    require(ch.is_zero_matrix and sp.simplify(Pp + Pm - sp.eye(2)).is_zero_matrix)
    d.step("Cayley-Hamilton (M - lambda_+)(M - lambda_-) = 0 and P_+ + P_- = I, so v(L) = lambda_+^L P_+ m0 + "
           "lambda_-^L P_- m0 satisfies v(0) = m0 and v(L+1) = M v(L) (induction on L): v(L) = M^L m0.")
    plus, minus = Pp * m0, Pm * m0
    registered = [(K.projected(r, 1), K.projected(r, -1)) for r in (0, 1)]
    for r in (0, 1):
        require(sp.simplify(plus[r] - registered[r][0]) == 0 and sp.simplify(minus[r] - registered[r][1]) == 0)
    d.step("The coefficients of lambda_+^L and lambda_-^L, P_+- m0, simplify to the registered ones (checked row by "
           "row; the proofs below then compare the assembled expressions).", sp.Matrix([plus[0], minus[0]]))
    d.prove("kurtosis.after", lp**ell * registered[0][0] + lm**ell * registered[0][1])
    d.prove("kurtosis.c_after", s2**2 * (lp**ell * registered[1][0] + lm**ell * registered[1][1] - 1))
    pts = [{w: 3, a: 0, kw: 3}, {w: 2, a: sp.Rational(1, 2), kw: sp.Rational(9, 5)}, {w: 5, a: 1, kw: 1}]
    for pt in pts:
        Ak = K.MATRIX.subs(pt) * sp.Matrix([k0, c0, 1])
        for L in range(1, 6):
            got = K.KAPPA_AFTER.subs(pt).subs(ell, L)
            require(sp.simplify(sp.expand(got - Ak[0])) == 0, (pt, L))
            Ak = K.MATRIX.subs(pt) * Ak
    d.step("Cross-check: at (w, a, kappa_w) = (3, 0, 3), (2, 1/2, 9/5), (5, 1, 1) the closed form equals the explicit "
           "product A^L [kappa0, c0, 1] for L = 1..5 with kappa0, c0 symbolic.")
    first = sp.simplify(2 * Pp[0, 0] * (lp - lm))
    d.step("Growth: (P_+ m0)_1 = ((A_11 - lambda_-) kappa0 + A_13 e0)/sqrt(disc) > 0 because A_11 - lambda_- > 0, so "
           "kappa_(L+1)/kappa_L -> lambda_max and log kappa_L = L log lambda_max + log (P_+ m0)_1 + o(1).", first)
    _mixed_widths(d, M)


def _mixed_widths(d: Derivation, M):
    t, v, kk = sp.symbols("t v k", nonnegative=True)
    u = sp.Symbol("u", positive=True)
    Mu = sp.Matrix([[2 * u * kw / w, K.OFF], [2 * u / w, K.D22]])  # M depends on a only through u
    require(sp.simplify(Mu.subs(u, K.U) - M).is_zero_matrix)
    vec = sp.Matrix([sp.Rational(3, 2), 1])
    excess = [sp.factor(e.subs(u, sp.Rational(1, 2) + t)) for e in Mu * vec - (1 + 1 / (2 * w)) * vec]
    for e in excess:
        num, den = sp.fraction(sp.together(e))
        num = sp.expand(num.subs({w: 2 + v, kw: 1 + kk}))
        require(all(cf > 0 for cf in sp.Poly(num, t, v, kk).coeffs())
                and sp.Poly(den.subs(w, 2 + v), v).coeffs()[0] > 0)
    d.step("Theorem 4.7 without rearranging: for v = (3/2, 1), M_w v >= (1 + 1/(2w)) v entrywise for every w >= 2 "
           "(numerators are polynomials with positive coefficients in t, w - 2, kappa_w - 1). With m1 = M m0 > 0, "
           "kappa_L >= const * prod_l (1 + 1/(2 w_l)), which diverges whenever sum_l 1/w_l = infinity (in particular "
           "for widths bounded by w_max).", sp.Matrix(excess))
    mats = {v_: K.MATRIX.subs({w: v_, a: 0, kw: 1, s2: 1}) for v_ in (2, 3)}
    interleaved = mats[2] * mats[3] * mats[2] * mats[3]
    grouped = mats[2] * mats[2] * mats[3] * mats[3]
    lam = sp.Symbol("lambda")
    p1, p2 = interleaved.charpoly(lam).as_expr(), grouped.charpoly(lam).as_expr()
    require(sp.expand(p1 - p2) != 0)
    r1 = max(sp.Poly(p1, lam).nroots(n=30), key=sp.re)
    r2 = max(sp.Poly(p2, lam).nroots(n=30), key=sp.re)
    d.erratum(f"{PAPER}, proof of Thm. 4.7", "lambda_max(prod_l A^(l)) = lambda_max(prod_w A_w^(m_w)) (rearranged)",
              "only cyclic shifts keep the spectrum; A_w do not commute. The theorem still holds (proof by the common "
              "vector v = (3/2, 1) above), even for unbounded widths with sum 1/w_l = infinity",
              f"exact: lambda_max(A2 A3 A2 A3) = {sp.N(r1, 8)} != lambda_max(A2 A2 A3 A3) = {sp.N(r2, 8)} "
              "(a = 0, kappa_w = 1; for 2x2 blocks tr(ABAB) - tr(AABB) = -det[A, B], and det[M_2, M_3] is "
              "proportional to kappa_w - 3)")


def _sample_variance(d: Derivation):
    n, s2_, kap_ = (igbsym.get("kurtosis.var_s2").symbols[k] for k in ("n", "sigma2", "kappa"))
    m3 = sp.Symbol("m_3", real=True)
    mom = {1: 0, 2: s2_, 3: m3, 4: kap_ * s2_**2}

    def expect(expr, xs):
        poly = sp.Poly(sp.expand(expr), *xs)
        return sp.expand(sum(cf * sp.prod([mom[e] if e else 1 for e in ex]) for ex, cf in poly.terms()))

    x = sp.symbols("x1:6", real=True)
    e_same = expect((x[0] - x[1]) ** 4, x[:2])
    e_one = expect((x[0] - x[1]) ** 2 * (x[0] - x[2]) ** 2, x[:3])
    e_none = expect((x[0] - x[1]) ** 2 * (x[2] - x[3]) ** 2, x[:4])
    d.step("S^2 = sum_{i != j} (x_i - x_j)^2 / (2n(n-1)) (shift invariant: take E x = 0). For two ordered pairs, E of "
           "the product of squared differences by overlap 2, 1, 0 (m_3 cancels):", sp.Matrix([e_same, e_one, e_none]))
    for size in range(2, 6):  # overlap counts for one ordered pair (i, j): 2, 4(n-2), (n-2)(n-3)
        pairs = [(i, j) for i in range(size) for j in range(size) if i != j]
        counts = [sum(len({0, 1} & {k, l}) == o for k, l in pairs) for o in (2, 1, 0)]
        require(counts == [2, 4 * (size - 2), (size - 2) * (size - 3)])
    es4 = n * (n - 1) * (2 * e_same + 4 * (n - 2) * e_one + (n - 2) * (n - 3) * e_none) / (4 * n**2 * (n - 1) ** 2)
    var = sp.factor(sp.simplify(es4 - s2_**2))
    d.step("Counting ordered pairs by overlap (2, 4(n-2), (n-2)(n-3); brute-forced for n = 2..5):", var)
    for size in range(2, 6):
        xs = x[:size]
        mean = sum(xs) / size
        s2n = sum((xi - mean) ** 2 for xi in xs) / (size - 1)
        require(sp.simplify(expect(s2n**2, xs) - s2_**2 - var.subs(n, size)) == 0)
    d.step("Brute force: E[S_n^4] - sigma^4 expanded directly for n = 2..5 agrees.")
    d.prove("kurtosis.var_s2", var)
    n_, kap2 = (igbsym.get("kurtosis.df").symbols[k] for k in ("n", "kappa"))
    df = 2 * s2_**2 / var
    d.prove("kurtosis.df", df.subs({n: n_, kap_: kap2}))
    require(sp.simplify(df.subs(kap_, 3) - (n - 1)) == 0)
    d.step("kappa = 3 gives DF_n = n - 1: the Gamma law is then exact ((n-1)S^2/sigma^2 ~ chi^2(n-1) for Gaussian "
           "draws).", sp.Eq(sp.Symbol("DF_n"), sp.simplify(df.subs(kap_, 3))))
    g = igbsym.get("kurtosis.p_small_var")
    k, eps, xx = sp.Symbol("k", positive=True), g.symbols["eps"], sp.Symbol("x", positive=True)
    dens = xx ** (k - 1) * sp.exp(-k * xx) * k**k / sp.gamma(k)
    require(sp.simplify(sp.integrate(dens, (xx, 0, sp.oo)) - 1) == 0)
    require(sp.simplify(sp.integrate(xx * dens, (xx, 0, sp.oo)) - 1) == 0)
    require(sp.simplify(sp.integrate(xx**2 * dens, (xx, 0, sp.oo)) - 1 - 1 / k) == 0)
    d.step("Gamma(k, 1/k) density (Sec. 5) integrates to 1 with mean 1 and variance 1/k = 2/DF_n (moment matching):",
           dens)
    cdf = sp.simplify(sp.integrate(dens, (xx, 0, eps)))
    d.step("P(S^2/sigma^2 < eps) is the integral of the density over (0, eps):", cdf)
    shape = (df / 2).subs({n: g.symbols["n"], kap_: g.symbols["kappa"]})
    d.prove("kurtosis.p_small_var", cdf.subs(k, sp.simplify(shape)))
    d.erratum(f"{PAPER}, Sec. 5", "S_n^2 of a network's n outputs has Var = (kappa - (n-3)/(n-1)) sigma^4/n and the "
              "Gamma(DF_n/2, 2/DF_n) law", "both assume n iid draws; the outputs of one net share its weights, so "
              "Var[S_n^2] also contains Var_W(Var_x(y|W)), which does not vanish as n grows",
              "simulation in validation/checks_kurtosis.py (thesis Fig. 1 setting): quantiles of S_n^2 vs the "
              "Gamma law",
              simulation="check kurtosis.empirical_variance: at L = 20, P(S^2 < 10^-3) is 0.46 simulated vs 0.87 "
                         "predicted by the iid formula (README run)")


def _p_nonzero(d: Derivation):
    P, ww = sp.symbols("P_l w_l", positive=True)
    step = P * (1 - sp.Rational(1, 2) ** ww)
    d.step("ReLU (a = 0), weights without atoms: y^(l+1) = 0 iff phi_0(y^(l)) = 0 iff all units of y^(l) are <= 0; "
           "given y^(l) != 0 (then every unit is nonzero) joint sign symmetry makes that 2^(-w_l), so", step)
    g = igbsym.get("kurtosis.p_nonzero")
    L_, w_ = g.symbols["L"], g.symbols["w"]
    j = sp.Symbol("j", integer=True, nonnegative=True)
    prod = sp.Product(1 - 2 ** (-w_), (j, 0, L_ - 1)).doit()
    d.prove("kurtosis.p_nonzero", prod)
    require(sp.simplify(prod.subs(w_, 1) - 2 ** (-L_)) == 0)
    d.step("w = 1 gives Prop. B.1: P(y^(L) != 0) = 2^(-L).", sp.simplify(prod.subs(w_, 1)))
    d.erratum(f"{PAPER}, App. B, Prop. B.2 and its proof", "widths {w_l}_(l=1..d); 'all elements of y^(l) are non-zero "
              "or all are zero'; P(all negative | non-zero) = 2^(-w_l) 'because they are symmetric and uncorrelated'",
              "the product runs over w_0..w_(d-1); the all-or-none step needs weights without atoms (false for "
              "Rademacher weights: equal rows cancel); the orthant probability needs joint sign symmetry of the "
              "input (an equicorrelated Gaussian input with rho = 1/2 has P(all < 0) = 1/(w+1), not 2^-w)",
              "simulation in validation/checks_kurtosis.py")


def derive() -> Derivation:
    d = Derivation("kurtosis", "Kurtosis transition matrix, exploding kurtosis, vanishing empirical variance")
    _lemmas(d)
    _matrix(d)
    _lemma44(d)
    _spectrum(d)
    _power(d)
    _sample_variance(d)
    _p_nonzero(d)
    d.erratum(f"{PAPER}, proof of Prop. 3.2", "y_k is symmetric 'as a sum of symmetric random variables'",
              "the summands are dependent; y_k is symmetric because the row W_k. is symmetric and independent of "
              "phi_a(y^(l)) (and the whole vector is jointly sign-symmetric, which Lemma 4.2 needs)", "argument")
    return d
