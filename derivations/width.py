"""Derivation of the finite-width forms (igbsym/families/width.py, igbsym/engine/finite.py): γ of a width-N MLP to
first order in 1/N.

Setting: data x ~ N(0, I_d), d = N, hidden widths N, zero biases, weights N(0, σ_w²/fan_in), fresh Gaussian output
weights. Source of the method: Roberts, Yaida & Hanin, *The Principles of Deep Learning Theory* (2022), chs. 4–5
(the empirical kernel's mean and four-point vertex, recursed layer by layer); here the data points are random too.
"""
import sympy as sp

import igbsym

from .base import Derivation, require

s, d, v = sp.Symbol("s", positive=True), sp.Symbol("d", positive=True), sp.Symbol("v", positive=True)
a = sp.Symbol("a", real=True)
x = sp.Symbol("x", real=True)
va, vb, k = sp.symbols("v_a v_b k", positive=True)
rho = sp.Symbol("rho", real=True)


def _gauss(sd):
    return sp.exp(-x**2 / (2 * sd**2)) / (sd * sp.sqrt(2 * sp.pi))


def _model(d_: Derivation):
    d_.step("Integrate the output weights out: for output node c, E_W[mu_c^2] = sigma_w^2 (1/N) sum_i (E_x y_i)^2 "
            "and E_W[Var_x O_c] = sigma_w^2 (1/N) sum_i Var_x y_i, with y_i the last hidden layer's units. So gamma "
            "at width N is a ratio of expectations of the two-point empirical kernel of two independent data "
            "points a != b:", r"\gamma_L(N) = \frac{E[\hat G_{ab}]}{E[\hat G_{aa}] - E[\hat G_{ab}]},\quad "
                               r"\hat G_{ab} = \frac{1}{N}\sum_{i=1}^N y_i(x_a) y_i(x_b)")
    d_.step("Given layer l - 1, the pre-activations of layer l are N_l i.i.d. Gaussian processes over the data with "
            "kernel K = sigma_w^2 G^(l-1) (exact). The state is g = (G_aa, G_bb, G_ab) with mean gbar and covariance "
            "S = O(1/N); for the next layer's mean a second-order Taylor expansion of the one-unit expectation "
            "T(K) suffices (third cumulants are O(1/N^2)), and the covariance of the next empirical average adds the "
            "one-unit covariance C over the N_l units (Roberts-Yaida-Hanin ch. 4, the four-point vertex):",
            r"\bar g' = T(\bar K) + J\,\delta + \tfrac12 H:S,\qquad S' = JS J^{T} + C/N_l")
    d_.step("A norm after phi is a smooth function of the five empirical averages (G_aa, G_bb, G_ab, m_a, m_b) "
            "(LayerNorm: (G_ab - m_a m_b)/sqrt((G_aa - m_a^2)(G_bb - m_b^2)); RMSNorm: G_ab/sqrt(G_aa G_bb)) and "
            "is taken through by the same delta method.")


def _input(d_: Derivation):
    d_.step("The data kernel: x_a.x_a/d has variance 2/d and x_a.x_b/d variance 1/d (E x^4 = 3 for a N(0,1) "
            "coordinate, E x^2 = 1); all covariances between the three entries vanish (odd moments):")
    m4 = sp.integrate(x**4 * _gauss(1), (x, -sp.oo, sp.oo))
    require(m4 == 3, "E x^4 = 3")
    var_diag = d * (m4 - 1) / d**2
    var_off = d * 1 / d**2
    require(sp.simplify(var_diag - 2 / d) == 0 and sp.simplify(var_off - 1 / d) == 0, "input covariance")
    d_.step("so the input state is", sp.Eq(sp.Symbol("V_0"), sp.diag(var_diag, var_diag, var_off)))


def _relu_one_layer(d_: Derivation):
    d_.step("One hidden layer, phi(x) = max(x, 0) + a min(x, 0): given the row w_i, unit i is N(0, s^2) over the "
            "data with s = sigma_w |w_i|/sqrt(d); its mean and second moment are")
    phi = sp.Piecewise((x, x >= 0), (a * x, True))
    M = sp.simplify(sp.integrate(phi * _gauss(s), (x, -sp.oo, sp.oo)))
    S = sp.simplify(sp.integrate(phi**2 * _gauss(s), (x, -sp.oo, sp.oo)))
    d_.step("E phi =", M)
    d_.step("E phi^2 =", S)
    ratio = sp.simplify(M**2 / (S - M**2))
    require(sp.diff(ratio, s) == 0 or sp.simplify(sp.diff(ratio, s)) == 0, "per-unit ratio independent of s")
    d_.step("Both are proportional to s^2, so every unit of every init has the same ratio (E phi)^2/Var phi, "
            "independent of |w_i|, of N and of d: gamma_1(N) = gamma_1(inf) exactly, a_1 = 0.", ratio)
    for act in ("relu", "leaky_relu", "identity"):
        d_.prove("width.coefficient", sp.S.Zero, L=1, activation=act, norm="none")


def _relu_delta_method(d_: Derivation):
    d_.step("The same through the delta method (the route the library takes): F(v_a, v_b, k) = sqrt(v_a v_b) "
            "J(k/sqrt(v_a v_b)) with the arc-cosine J(rho) = (sqrt(1 - rho^2) + rho (pi - arccos rho))/(2 pi), "
            "S(v) = v/2 (linear: no shift). The shift of E G_ab is (1/2) H:V_0 at (1, 1, 0):")
    J = (sp.sqrt(1 - rho**2) + rho * (sp.pi - sp.acos(rho))) / (2 * sp.pi)
    F = sp.sqrt(va * vb) * J.subs(rho, k / sp.sqrt(va * vb))
    at = {va: 1, vb: 1, k: 0}
    kk = sp.Symbol("kk", real=True)
    Fk = F.subs(k, kk)
    h_aa = sp.simplify(sp.diff(F, va, 2).subs(at))
    h_bb = sp.simplify(sp.diff(F, vb, 2).subs(at))
    h_kk = sp.simplify(sp.limit(sp.diff(Fk, kk, 2).subs({va: 1, vb: 1}), kk, 0))
    shift = sp.simplify((h_aa * 2 / d + h_bb * 2 / d + h_kk / d) / 2)
    d_.step("H_aa = H_bb =", h_aa)
    d_.step("H_kk =", h_kk)
    require(shift == 0, "delta-method shift of the ReLU shared moment at L = 1")
    d_.step("(1/2)(2 H_aa 2/d + H_kk/d) = 0: the recursion reproduces the exact result.", sp.Eq(sp.Symbol(r"\delta"),
                                                                                             shift))


def _layernorm_one_layer(d_: Derivation):
    d_.step("ReLU + LayerNorm after phi, one hidden layer: LN centres each data point over the units, so at infinite "
            "width gamma = 0 (Thm F.3), but at width N the per-unit means m_i = s_i/sqrt(2 pi) spread with the row "
            "norms: Var_i(s_i) = sigma_w^2/(2d) + O(1/d^2) (chi distribution), the centred sum sum_i (E_x y_i)^2 = "
            "N Var_i(m_i)/sigma_y^2 with sigma_y^2 = Var(phi) = sigma_w^2 (1/2 - 1/(2 pi)), and sum_i Var_x y_i = N "
            "(each data point's units have mean square 1 after LN):")
    var_m = s**2 / (2 * d) / (2 * sp.pi)
    sig2 = s**2 * (sp.Rational(1, 2) - 1 / (2 * sp.pi))
    g1 = sp.simplify(var_m / sig2)
    require(sp.simplify(g1 - 1 / (2 * d * (sp.pi - 1))) == 0, "LN gamma_1")
    d_.step("gamma_1(N) = ", sp.Eq(sp.Symbol(r"\gamma_1(N)"), g1))
    got = float(igbsym.get("width.coefficient").numpy(L=1, activation="relu", norm="layernorm", placement="post"))
    exact = float(1 / (2 * (sp.pi - 1)))
    require(abs(got / exact - 1) < 1e-5, f"width.coefficient LN L=1 {got} vs {exact}")
    d_.step(f"width.coefficient(L = 1, relu, layernorm) = {got:.8f} from the delta-method recursion vs "
            f"1/(2(pi - 1)) = {exact:.8f} (an independent check of the LayerNorm map).")


def _odd(d_: Derivation):
    d_.step("Odd phi (tanh, erf, identity) without bias: every unit is an odd function of x (a composition of odd maps "
            "and linear ones), and the data law is symmetric, so E_x y_i = 0 for every unit of every init: gamma = 0 "
            "at every finite width, with or without LayerNorm/RMSNorm after phi (both keep oddness).")
    for act in ("tanh", "erf"):
        d_.prove("width.coefficient", sp.S.Zero, L=2, activation=act, norm="none")
        d_.prove("width.gamma", sp.S.Zero, L=2, activation=act, norm="none")


def _gamma_width(d_: Derivation):
    d_.step("width.gamma = depth.gamma + width.coefficient/N (registry self-comparison at L = 1, ReLU: the "
            "coefficient is 0, so the finite-width value equals the infinite-width one at every N).")
    g = igbsym.get("width.gamma").numpy(L=1, N=7, activation="relu")
    inf = igbsym.get("depth.gamma").numpy(L=1, activation="relu")
    require(abs(g - inf) < 1e-13, "width.gamma L=1 relu")
    d_.compare_registry("width.gamma", "width.gamma", {"L": 1, "activation": "tanh"}, {"L": 1, "activation": "tanh"},
                        expected=sp.S.Zero)


def _resnet(d_: Derivation):
    d_.step("Residual blocks x' = x + alpha phi(W x) (linear-first, no norm): the trunk's five averages (G_aa, G_bb, "
            "G_ab, m_a, m_b) are the state. Given the trunk, the branch units v = phi(W x) are i.i.d. over units with "
            "kernel sigma_w^2 G, and the new trunk unit x_i + alpha v_i contributes u_i = A(x_i) v_i + (x_i terms), "
            "A linear in the trunk unit's values; so the conditional mean is the trunk plus the branch map, and the "
            "one-unit covariance averaged over units, E_i[A(x_i) C A(x_i)^T], needs only the trunk's own second "
            "moments (igbsym.engine.finite._residual):",
            r"E[u\,|\,x] = \bar x + 2\alpha\, m\, T_1 + \alpha^2 T_2,\qquad "
            r"\Sigma' = J\Sigma J^{T} + \frac{1}{N}\,E_i\!\left[A(x_i)\, C\, A(x_i)^{T}\right]")
    zero = float(igbsym.get("width.resnet_gamma").numpy(L=2, N=7, activation="relu", alpha=0.0))
    require(zero == 0.0, f"width.resnet_gamma alpha=0: {zero}")
    d_.step("alpha = 0: the trunk is the embedding W x, odd in x, so gamma = 0 at every width; the recursion gives "
            f"{zero} at N = 7 (exact).")
    g_inf = float(igbsym.get("resnet.gamma").numpy(L=3, activation="relu", alpha=1.0))
    g_big = float(igbsym.get("width.resnet_gamma").numpy(L=3, N=10**12, activation="relu", alpha=1.0))
    require(abs(g_big / g_inf - 1) < 1e-9, f"width.resnet_gamma N -> inf {g_big} vs resnet.gamma {g_inf}")
    d_.step(f"N -> infinity: width.resnet_gamma(L = 3, relu, alpha = 1, N = 1e12) = {g_big:.12g} against "
            f"resnet.gamma = {g_inf:.12g} (the infinite-width part is the block map of igbsym/ops/residual.py).")
    for act in ("tanh", "erf"):
        d_.prove("width.resnet_gamma", sp.S.Zero, L=2, activation=act)


def derive() -> Derivation:
    d_ = Derivation("width", "Finite width: gamma of a width-N MLP to O(1/N)")
    _model(d_)
    _input(d_)
    _relu_one_layer(d_)
    _relu_delta_method(d_)
    _layernorm_one_layer(d_)
    _odd(d_)
    _gamma_width(d_)
    _resnet(d_)
    return d_
