"""Derivation of the depth law of γ and of the normalisation placements (igbsym/families/depth.py).

1. The node-centre picture gives c = V_μ/(V_μ + V_χ) = γ/(1+γ) and the block map c' = E[φ(u)φ(u')]/E[φ(u)²].
2. For ReLU the Gaussian integral E[φ(u)φ(u')] is done by SymPy in polar coordinates: the degree-1 arc-cosine
   kernel; leaky ReLU follows from ReLU by the sign symmetry of the Gaussian. Every registered closed-form case is
   rebuilt from these integrals and proved equal to the registry.
3. Asymptotics: SymPy series of the map near c = 1 give γ_L = 2r²L²/(9π²) + O(L log L).
4. Placements: LN/RMSNorm rescale by a positive per-sample scalar (Lemma F.1 for α > 0 suffices), LN after φ
   re-centres, RMSNorm after φ does not (Sec. 4.1.3 fails), BN before φ resets c to 0, BN after φ centres.
"""
import math

import mpmath
import sympy as sp

import igbsym
from igbsym.families import depth as D

from .base import Derivation, require, symbolically_equal

q = sp.Symbol("q", positive=True)
c = sp.Symbol("c", real=True)
a = sp.Symbol("a", real=True)
sw = sp.Symbol("sigma_w", positive=True)
sb = sp.Symbol("sigma_b", nonnegative=True)
r, t, th = sp.Symbol("r", positive=True), sp.Symbol("t", real=True), sp.Symbol("theta", positive=True)
vmu, vchi = sp.Symbol("V_mu", positive=True), sp.Symbol("V_chi", positive=True)


def relu_cross_moment():
    """E[ReLU(u) ReLU(u')] for (u, u') ~ N(0, q[[1, c], [c, 1]]), c = cos θ, by integrating in polar coordinates.

    z = (r cos t, r sin t) standard normal; u = √q r cos t, u' = √q r cos(t − θ); both > 0 iff t ∈ (θ − π/2, π/2).
    """
    radial = sp.integrate(r**3 * sp.exp(-r**2 / 2) / (2 * sp.pi), (r, 0, sp.oo))
    angular = sp.integrate(sp.cos(t) * sp.cos(t - th), (t, th - sp.pi / 2, sp.pi / 2))
    return radial, sp.simplify(angular), q * radial * sp.simplify(angular)


def _map(d: Derivation):
    d.step("State of a layer (App. F.1 of the IGB paper, in closed form): node i's pre-activation on input x is "
           "h_i(x) = mu_i + xi_i(x), centre mu_i ~ N(0, V_mu) over nodes and initialisations, data noise "
           "xi_i ~ N(0, V_chi). For two independent inputs x, x' the pair (h_i(x), h_i(x')) = (mu + xi, mu + xi') has "
           "covariance [[V_mu + V_chi, V_mu], [V_mu, V_mu + V_chi]] (xi, xi' independent given the weights):")
    cov_uu = sp.expand((vmu + 0) + 0)   # E[(mu+xi)(mu+xi')] = E[mu^2]
    c_def = cov_uu / (vmu + vchi)
    d.step("so the correlation of two independent inputs is c = V_mu/(V_mu + V_chi); with gamma = V_mu/V_chi:",
           sp.Eq(sp.Symbol("c"), c_def))
    gam = sp.Symbol("gamma", positive=True)
    require(sp.simplify(c_def.subs(vmu, gam * vchi) - gam / (1 + gam)) == 0)
    d.step("which is c = gamma/(1+gamma) (igb-talk-slides.txt), proved by substituting V_mu = gamma V_chi.")
    d.step("Next layer, zero-mean weights N(0, sigma_w^2/N): Var_W(mu') = sigma_w^2 E_mu[(E_xi phi(mu + xi))^2] = "
           "sigma_w^2 E[phi(u) phi(u')] (the Gaussian integral over node centres), and E_W Var_chi(h') = "
           "sigma_w^2 (E[phi(u)^2] - E[phi(u) phi(u')]) (cross-node data covariances average to 0 over the zero-mean "
           "weights). Hence q' = sigma_w^2 E[phi^2], c' = E[phi(u) phi(u')]/E[phi(u)^2] and gamma' = c'/(1 - c').")
    radial, angular, cross = relu_cross_moment()
    d.step("ReLU: in polar coordinates the radial integral is", radial)
    d.step("and the angular integral over t in (theta - pi/2, pi/2) of cos t cos(t - theta) is", angular)
    cross_c = sp.simplify(cross.subs(th, sp.acos(c)))
    d.step("so with theta = arccos c (0 <= theta <= pi covers -1 <= c <= 1), E[ReLU(u) ReLU(u')] =", cross_c)
    second = sp.integrate(q * r**3 * sp.exp(-r**2 / 2) / (2 * sp.pi) * sp.cos(t)**2 / q * q, (t, -sp.pi / 2, sp.pi / 2))
    second = sp.simplify(sp.integrate(second, (r, 0, sp.oo)))
    d.step("and E[ReLU(u)^2] (the same integral with theta = 0) =", second)
    relu_map = sp.simplify(cross_c / second)
    d.prove("depth.corr_map", relu_map, activation="relu")
    d.step("This is the normalised degree-1 arc-cosine kernel k(c) = (sqrt(1-c^2) + (pi - arccos c) c)/pi: "
           "the hint's formula, now derived.")
    require(symbolically_equal(relu_map, (sp.sqrt(1 - c**2) + (sp.pi - sp.acos(c)) * c) / sp.pi))
    # leaky: phi_a(u) = ReLU(u) - a ReLU(-u); (−u, −u') has correlation c, (u, −u') has correlation −c
    rr = lambda cc: cross_c.subs(c, cc)  # noqa: E731
    leaky_cross = sp.expand(rr(c) + a**2 * rr(c) - 2 * a * rr(-c)).subs(sp.acos(-c), sp.pi - sp.acos(c))
    leaky_second = sp.expand((1 + a**2) * second)
    d.step("Leaky ReLU phi_a(u) = ReLU(u) - a ReLU(-u): (-u, -u') has correlation c and (u, -u') has correlation -c, "
           "so E[phi_a(u) phi_a(u')] = (1 + a^2) K(c) - 2 a K(-c) with K the ReLU cross moment "
           "(and arccos(-c) = pi - arccos(c) on [-1, 1]):", leaky_cross)
    leaky_map = leaky_cross / leaky_second
    d.prove("depth.corr_map", leaky_map, activation="leaky_relu")
    d.prove("depth.corr_map", sp.expand(q * c) / q, activation="identity")
    mean = sp.integrate(r**2 * sp.exp(-r**2 / 2) / (2 * sp.pi), (r, 0, sp.oo)) * sp.integrate(sp.cos(t), (t, -sp.pi / 2,
                                                                                                       sp.pi / 2))
    relu_mean = sp.sqrt(q) * mean
    d.step("E[ReLU(u)] = sqrt(q) x (polar integral) =", relu_mean)
    require(sp.simplify(cross_c.subs(c, 0) - relu_mean**2) == 0)
    d.step("At c = 0 the cross moment equals E[ReLU(u)]^2 (independent inputs): the first layer's centres carry "
           "E[phi]^2 only.")
    return {"relu": (cross_c, second, relu_mean),
            "leaky_relu": (leaky_cross, leaky_second, (1 - a) * relu_mean),
            "identity": (q * c, q, sp.S.Zero)}


def _moments_srelu(mom, sigma1):
    p, s, m = mom["relu"]
    k = sigma1 / sp.sqrt(2 * sp.pi)
    return p - 2 * k * m + k**2, s - 2 * k * m + k**2, m - k


def _step(mom, act, norm, placement, qq, cc):
    """One block rebuilt from the derived integrals (not from the family module's expressions)."""
    pre_norm = norm != "none" and placement == "pre"
    qi, ci = (qq, cc) if not pre_norm else ((1, cc) if norm != "batchnorm" else (1, 0))
    p, s, m = _moments_srelu(mom, 1 if pre_norm else sw) if act == "srelu" else mom[act]
    p, s, m = (sp.sympify(v).subs({q: qi, c: ci}, simultaneous=True) for v in (p, s, m))
    if placement == "pre" or norm == "none":
        return sw**2 * s, p / s
    if norm == "layernorm":
        return sw**2, (p - m**2) / (s - m**2)
    return (sw**2, p / s) if norm == "rmsnorm" else (sw**2, sp.S.Zero)


def _iterate(mom, act, norm, placement, L):
    """γ_L as the L-fold composition of the derived block map, from (σ_w², 0)."""
    qq, cc = sw**2, sp.S.Zero
    for _ in range(L):
        qq, cc = _step(mom, act, norm, placement, qq, cc)
    return cc / (1 - cc)


def _iterate_biased(mom, act, L):
    """γ_L with biases N(0, σ_b²) in every Dense (no norm), rebuilt from the derived integrals: the first layer's
    (q, c) = (σ_w² + σ_b², σ_b²/(σ_w² + σ_b²)) (the bias is shared by both inputs), then q' = σ_w² E φ² + σ_b²,
    c' = (σ_w² E[φ(u)φ(u')] + σ_b²)/q'."""
    qq, cc = sw**2 + sb**2, sb**2 / (sw**2 + sb**2)
    for _ in range(L):
        p, s, _ = (sp.sympify(v).subs({q: qq, c: cc}, simultaneous=True) for v in mom[act])
        qq, cc = sw**2 * s + sb**2, (sw**2 * p + sb**2) / (sw**2 * s + sb**2)
    return cc / (1 - cc)


def _depth_law(d: Derivation, mom):
    """The depth law (igb-initial-guessing-bias.txt App. F.1): depth.gamma is the L-fold composition of the derived
    block map, from the first hidden layer on."""
    _depth_one_layer(d, mom)
    _depth_biased(d, mom)
    _depth_compositions(d, mom)
    _srelu_fixed_point(d, mom)


def _depth_one_layer(d: Derivation, mom):
    """L = 1 is igb.gamma, with and without biases."""
    d.step("Depth law: start from the first hidden layer (q, c) = (sigma_w^2, 0) and apply the block map L times; "
           "gamma_L = c_L/(1 - c_L) at the output. L = 1 must reproduce igb.gamma:")
    for act in ("relu", "leaky_relu", "srelu", "identity"):
        g1 = sp.simplify(_iterate(mom, act, "none", "pre", 1))
        if act == "srelu":
            d.prove("depth.gamma", g1, L=1, activation=act)
        else:
            biased = _iterate_biased(mom, act, 1)
            d.prove("depth.gamma", biased, L=1, activation=act)
            require(symbolically_equal(biased.subs(sb, 0), g1), (act, "sigma_b = 0"))
        ref = igbsym.get("igb.gamma").case(activation=act)
        require(symbolically_equal(g1, ref.subs(sp.Symbol("sigma", positive=True), sw)), (act, g1, ref))
    d.step("and depth.gamma(L=1) = igb.gamma for relu, leaky_relu, srelu, identity at sigma_b = 0 (gamma_1 = "
           "1/(pi - 1) for ReLU). With biases B ~ N(0, sigma_b^2) in every Dense (the readout too; the mean-field "
           "convention) the first layer is (q, c) = (sigma_w^2 + sigma_b^2, sigma_b^2/(sigma_w^2 + sigma_b^2)) and "
           "each Dense maps (S, P) to (sigma_w^2 S + sigma_b^2, (sigma_w^2 P + sigma_b^2)/(sigma_w^2 S + "
           "sigma_b^2)); the registered L = 1 forms with sigma_b equal that composition (symbolic), e.g. ReLU:",
           _iterate_biased(mom, "relu", 1))


def _depth_biased(d: Derivation, mom):
    """With biases: the linear net in closed form (L = 1..4), ReLU and leaky ReLU numerically at 50 digits."""
    lin = [sp.simplify(_iterate_biased(mom, "identity", L)) for L in range(1, D.L_EXACT + 1)]
    for L, g in enumerate(lin, 1):
        require(symbolically_equal(g, sb**2 * sum(sw**(-2 * j) for j in range(1, L + 2))), ("linear net", L))
        d.prove("depth.gamma", g, L=L, activation="identity")
    d.step("The linear net with biases: gamma_L = sigma_b^2 sum_{j=1}^{L+1} sigma_w^(-2j) (each Dense multiplies "
           "q(1 - c) by sigma_w^2 and adds sigma_b^2 to q c), proved for L = 1..4; it vanishes only at sigma_b = 0, "
           "where odd activations give 0 (below).")
    bpts = [dict(a=av, sigma_w=sv, sigma_b=bv) for av, sv, bv in (("0", "1.4", "0.3"), ("0.2", "1.1", "1.5"))]
    for L in range(2, D.L_EXACT + 1):
        for act in ("relu", "leaky_relu"):
            fn = sp.lambdify((a, sw, sb), _iterate_biased(mom, act, L), modules="mpmath", cse=True)
            d.prove_numeric_identity("depth.gamma", lambda a, sigma_w, sigma_b, fn=fn: fn(a, sigma_w, sigma_b), bpts,
                                     dps=50, tol=1e-45, reason="registered nested closed form with biases vs the "
                                     "derived composition with biases", L=L, activation=act)


def _depth_compositions(d: Derivation, mom):
    """The registry's block map is the derived one; its nested compositions equal the derived ones."""
    for act in ("relu", "leaky_relu", "srelu", "identity"):
        for norm, pl in (("none", "pre"), ("layernorm", "pre"), ("rmsnorm", "pre"), ("rmsnorm", "post"),
                         ("layernorm", "post"), ("batchnorm", "post")):
            registered = D.sym_step(act, norm, pl, q, c)
            derived = _step(mom, act, norm, pl, q, c)
            require(all(symbolically_equal(x, y) for x, y in zip(registered, derived)), (act, norm, pl))
    d.step("The registry's block map (q, c) -> (q', c') equals the derived one for symbolic q, c, for relu, "
           "leaky_relu, srelu, identity and every LN/RMSNorm placement and BN after phi (SymPy). The registered "
           "nested forms for L >= 2 are L-fold compositions of that map, so they equal the derived compositions by "
           "induction; the nested expressions are also compared numerically at 50 digits:")
    pts = [dict(a=av, sigma_w=sv) for av, sv in (("0", "1"), ("0.1", "0.6"), ("-0.3", "2.2"))]
    for L in range(2, D.L_EXACT + 1):
        for act in ("relu", "leaky_relu", "srelu") if L < D.L_EXACT else ("relu", "srelu"):
            fn = sp.lambdify((a, sw), _iterate(mom, act, "none", "pre", L), modules="mpmath", cse=True)
            d.prove_numeric_identity("depth.gamma", lambda a, sigma_w, fn=fn: fn(a, sigma_w), pts, dps=50,
                                     tol=1e-45, reason="registered nested closed form vs the derived nested closed "
                                                       "form (equal by induction on the proved block map)",
                                     L=L, activation=act)
    g2 = _iterate(mom, "relu", "none", "pre", 2)
    d.step("For example gamma after two ReLU layers:", g2)
    step = sp.lambdify((q, c, a, sw), _step(mom, "leaky_relu", "none", "pre", q, c), modules="mpmath", cse=True)

    def iterate(L, a, sigma_w):
        qq, cc = sigma_w**2, mpmath.mpf(0)
        for _ in range(L):
            qq, cc = step(qq, cc, a, sigma_w)
        return cc / (1 - cc)
    for L in (6, 12, 40):
        d.prove_numeric_identity("depth.gamma", lambda a, sigma_w, L=L: iterate(L, a, sigma_w), pts, dps=40,
                                 tol=1e-30, reason="the registered iteration vs the derived block map iterated in "
                                                   "mpmath", L=L, activation="leaky_relu")


def _srelu_fixed_point(d: Derivation, mom):
    """SReLU centres layer 1 only: IGB-free at every depth iff sigma_w^2 = 2 pi/(pi - 1) (App. G.3's erratum)."""
    d.step("SReLU (App. G.3) subtracts sigma/sqrt(2 pi), the ReLU mean of layer 1 only. The next layer's variance is "
           "q_2 = sigma_w^2 Var[ReLU] = sigma_w^4 (pi - 1)/(2 pi), so the shift centres layer 2 iff q_2 = sigma_w^2:")
    fixed = sp.solve(sp.Eq(sw**4 * (sp.pi - 1) / (2 * sp.pi), sw**2), sw)
    d.step("sigma_w =", fixed[0])
    start = (sw**2, sp.S.Zero)
    image = _step(mom, "srelu", "none", "pre", *start)
    require(all(sp.simplify((x - y).subs(sw, fixed[0])) == 0 for x, y in zip(image, start)))
    d.step("At that sigma_w the first-layer state (sigma_w^2, 0) is a fixed point of the SReLU block map (SymPy), so "
           "SReLU is IGB-free at every depth; otherwise gamma_L > 0 for L >= 2, "
           f"e.g. sigma_w = 1: gamma_2 = {float(_iterate(mom, 'srelu', 'none', 'pre', 2).subs(sw, 1)):.6f}.")
    d.erratum("igb-initial-guessing-bias.txt, App. G.2-G.3 (Eqs. 178-188, SReLU)",
              "a null-mean activation (e.g. SReLU) keeps every layer's nodes identically distributed: no IGB at any "
              "depth",
              "the null-mean condition must hold for the pre-activation law of each layer, whose variance changes with "
              "depth; SReLU's fixed shift centres layer 1 only, so gamma_L > 0 for L >= 2 unless sigma_w^2 = "
              "2 pi/(pi - 1) (or a norm resets the variance before phi)",
              "SymPy iteration of the derived block map (derivations/depth.py); torch check depth_activations",
              identity=r"$(q_1, c_1) = (\sigma_w^2, 0)$ is a fixed point of the SReLU block map iff "
                       r"$\sigma_w^2 = 2\pi/(\pi - 1)$ (SymPy)",
              simulation="check depth_activations: SReLU, sigma_w = 1: gamma_2 = 0.237 predicted, torch "
                         "0.248 +- 0.007; gamma_3 = 1.65 predicted, torch 1.650 +- 0.056 (README run)")


def _asymptotics(d: Derivation):
    rr = sp.Symbol("r", positive=True)
    kmap = sp.cos(th) + rr * (sp.sin(th) - th * sp.cos(th)) / sp.pi
    series = sp.series(kmap - sp.cos(th), th, 0, 6).removeO()
    d.step("Near c = 1 write c = cos theta. With r = (1 - a)^2/(1 + a^2) the leaky map is c + r (sin theta - "
           "theta cos theta)/pi, whose excess over c is", series)
    inv = sp.simplify(sp.series(1 / sp.acos(kmap), th, 0, 2).removeO())
    d.step("SymPy series of 1/theta' = 1/arccos(k(cos theta)):", inv)
    step1 = sp.simplify(inv.coeff(th, 0))
    step_lin = sp.simplify(inv.coeff(th, 1))
    require(sp.simplify(inv - (1 / th + step1 + step_lin * th)) == 0)
    d.step("so 1/theta_L = r L/(3 pi) + O(log L) (each layer adds r/(3 pi), the O(theta) term sums to a logarithm) "
           "and gamma_L = cos theta/(1 - cos theta) = 2/theta^2 - 5/6 + O(theta^2):")
    depth_L = sp.Symbol("L", positive=True)
    lim = sp.limit((2 * (rr * depth_L / (3 * sp.pi)) ** 2) / depth_L**2, depth_L, sp.oo)
    require(sp.simplify(lim - 2 * rr**2 / (9 * sp.pi**2)) == 0, f"limit {lim}")
    d.step("lim gamma_L / L^2 = 2 r^2/(9 pi^2) = 2 (1-a)^4/(9 pi^2 (1+a^2)^2); ReLU: 2/(9 pi^2) ~ 0.0225, with next "
           "term (2/(3 pi^2)) L ln L for ReLU:", lim)
    require(sp.simplify(step1 - rr / (3 * sp.pi)) == 0)
    form = igbsym.get("depth.gamma")
    for L in (10**3, 10**5):
        ratio = float(form.numpy(L=L, activation="relu")) / L**2 / (2 / (9 * math.pi**2))
        d.step(f"Numerically gamma_L/(2 L^2/(9 pi^2)) = {ratio:.6f} at L = {L} (the registered iteration).")
    require(abs(ratio - 1) < 1e-3)
    d.step("So gamma_L -> infinity like L^2 for every slope a != 1 (App. F.2 proves divergence; the rate is new). "
           "For a = 1 (identity) r = 0 and gamma stays 0.")


def _placements(d: Derivation, mom):
    al = sp.Symbol("alpha", positive=True)
    p, s, m = mom["relu"]
    ratio_scaled = sp.simplify((p / s).subs(q, al**2 * q) - p / s)
    d.step("LN + phi (Thm F.2): LN subtracts the layer mean of h(x), which tends to 0 (the centres have zero mean over "
           "nodes), and divides by the per-sample std sqrt(q) > 0, the same for every input as width -> inf. So the "
           "activation sees (q, c) -> (1, c). For ReLU the map depends on c only: P/S at (alpha^2 q, c) minus P/S "
           "at (q, c) is", ratio_scaled)
    require(ratio_scaled == 0)
    d.step("This is Lemma F.1 with alpha = 1/sigma-hat > 0, where it holds (rectified.scaled_mean/var, "
           "derivations/rectified.py); the paper's use never needs alpha < 0, for which Lemma F.1 is false.")
    for short, norm, pl in (("ln_pre", "layernorm", "pre"), ("rms_pre", "rmsnorm", "pre"),
                            ("rms_post", "rmsnorm", "post"), ("ln_post", "layernorm", "post"),
                            ("bn_post", "batchnorm", "post")):
        for act in ("relu", "leaky_relu"):
            d.prove(f"depth.gamma_{short}", sp.simplify(_iterate(mom, act, norm, pl, 1)), L=1, activation=act)
        for L in (2, 3):
            unbiased = igbsym.get("depth.gamma").case(L=L, activation="relu").subs(sb, 0)   # no-norm law, σ_b = 0
            d.compare_registry(f"depth.gamma_{short}", "depth.gamma", dict(L=L, activation="relu"),
                               dict(L=L, activation="relu", sigma_b=0),
                               expected=sp.S.Zero if short in ("ln_post", "bn_post") else unbiased)
    d.step("Proved at L = 1 from the integrals; for L = 2, 3 the registered forms are compared with each other "
           "(a registry self-comparison, SymPy): LN + ReLU, RMSNorm + ReLU and ReLU + RMSNorm all equal the "
           "no-norm law; ReLU + LN and ReLU + BN give 0.")
    d.step("phi + LN (Thm F.3): LN subtracts the per-sample layer mean E[phi(u)] and divides by the layer std, so "
           "c' = (P - M^2)/(S - M^2); from c = 0, P = M^2 and c' = 0 at every layer. phi + RMSNorm divides by "
           "sqrt(E[phi^2]) but keeps the layer mean E[phi] = sqrt(q/(2 pi)) != 0, so c' = P/S: the no-norm law.")
    d.erratum("norm-placement-bn-ln.txt, Sec. 4.1.3 and Sec. 1 ('LN is formally equivalent to RMSNorm at "
              "initialization, so our LN results directly extend to RMSNorm')",
              "LN and RMSNorm are equivalent at init in both placements",
              "true before the activation (the layer mean of pre-activations vanishes); false after it: the layer mean "
              "of ReLU outputs is sqrt(q/(2 pi)) > 0, RMSNorm keeps it, and ReLU + RMSNorm follows the growing no-norm "
              "law (gamma_L ~ 2L^2/(9 pi^2)) instead of ReLU + LN's gamma = 0",
              "SymPy (derivations/depth.py) and torch nn.RMSNorm MLPs (check depth_placements)",
              simulation="check depth_placements: ReLU + RMSNorm at L = 4: gamma = 2.13 predicted, torch 2.19 +- 0.06 "
                         "(README run)")
    d.erratum("norm-placement-bn-ln.txt, Thm F.2 (Eqs. 92-93)",
              "both variances are multiplied by (sigma-hat^(1))^2, a factor constant in depth",
              "LN divides (Eq. 101: sigma_w^2/(sigma-hat^(1))^2) and rescales at every layer by 1/q_l, which changes "
              "with depth unless sigma_w^2 = 2; gamma is unaffected because the factor is common",
              "the (q, c) recursion of derivations/depth.py")
    g_none = float(igbsym.get("depth.gamma").numpy(L=6, activation="gelu", sigma_w=1))
    g_ln = float(igbsym.get("depth.gamma_ln_pre").numpy(L=6, activation="gelu", sigma_w=1))
    d.step(f"For an activation that is not positively homogeneous the rescaling changes the map: GELU, sigma_w = 1, "
           f"L = 6: no norm gamma = {g_none:.4f}, LN + GELU gamma = {g_ln:.4f}.")
    d.erratum("norm-placement-bn-ln.txt, Thm F.2 with App. B ('our theoretical results hold broadly across generic "
              "activation functions')",
              "LN before the activation leaves gamma equal to the no-norm value",
              "only for positively homogeneous activations (ReLU, leaky ReLU): for GELU/SiLU/sigmoid LN resets q to 1 "
              "and the depth law differs (GELU, sigma_w = 1, L = 6: %.4f vs %.4f)" % (g_ln, g_none),
              "quadrature of the (q, c) recursion and torch LayerNorm+GELU MLPs (check depth_activations)")
    d.step("BN + phi (Thm E.1): BN standardises every node over the data, removing its centre: (q, c) -> (1, 0) before "
           "phi at every layer, so gamma is the one-layer value E[phi(Z)]^2/Var[phi(Z)], Z ~ N(0, 1), at every depth "
           "(training-mode batch statistics; with a mini-batch of B points the canonical law of bn.gamma_canonical). "
           "phi + BN (Thm E.2): every node is centred (per batch, hence over the data): gamma = 0.")
    d.prove_numeric_identity("depth.gamma_bn_pre", lambda a, sigma_w, B: 1 / (mpmath.pi - 1),
                             [dict(a="0.01", sigma_w=sv, B="inf") for sv in ("0.5", "1", "3")], dps=30, tol=1e-25,
                             reason="full-batch BN + ReLU equals 1/(pi - 1) at every depth and sigma_w", L=5,
                             activation="relu")
    for act in ("relu", "gelu", "tanh"):
        d.prove("depth.gamma_bn_post", sp.S.Zero, L=4, activation=act)
    d.step("Antisymmetric activations (App. G.2): if phi is odd and the data law is symmetric (x and -x equal in law), "
           "every pre-activation is an odd function of x (Linear, odd phi, LN, RMSNorm and BN with zero bias all "
           "commute with x -> -x), so E_chi h_i = 0 exactly for every node, width and depth: gamma = 0. In the "
           "width limit centred data (E x = 0) suffice, since the pre-activations are Gaussian; uncentred data "
           "E x = m give gamma_1 = |m|^2/tr Cov(x) > 0 already for the identity.")
    for act in ("tanh", "erf", "identity"):
        for norm, pl in (("layernorm", "pre"), ("rmsnorm", "post")):
            d.prove("depth.gamma", sp.S.Zero, L=7, activation=act, norm=norm, placement=pl)
        d.prove_numeric_identity("depth.gamma", lambda a, sigma_w: mpmath.mpf(0), [dict(a="0", sigma_w="1.4")],
                                 dps=30, tol=0, reason="odd phi without norm at sigma_b = 0 is exactly 0 (a bias "
                                 "breaks the symmetry x -> -x: the value then is the walk's)", L=7, activation=act)


def _numeric_routes(d: Derivation):
    for act, sv in (("gelu", "0.7"), ("sigmoid", "1.5")):
        d.prove_numeric_identity(
            "depth.gamma", lambda a, sigma_w, act=act: _mp_reference(act, 2, a, sigma_w), [dict(a="0.01", sigma_w=sv)],
            dps=16, tol=1e-11,
            reason="the registry's node-centre quadrature E_mu[(E_xi phi(mu + xi))^2] vs the joint 2-D integral "
                   "E[phi(u) phi(u')] by mpmath", L=2, activation=act)


def _mp_reference(act, L, a, sigma_w):
    """Independent of the registry's route: the joint integral E[phi(u) phi(u')] over (z1, z2) with
    u = sqrt(q) z1, u' = sqrt(q)(c z1 + sqrt(1 - c^2) z2), one 2-D mpmath quadrature per layer."""
    f = igbsym.activations.get(act).mp
    pdf = mpmath.npdf
    grid = [-12, -4, 0, 4, 12]
    qq, cc = sigma_w**2, mpmath.mpf(0)
    for _ in range(L):
        sq, sc = mpmath.sqrt(qq), mpmath.sqrt(1 - cc * cc)
        s = mpmath.quad(lambda z: f(sq * z, a, 0) ** 2 * pdf(z), grid)
        p = mpmath.quad(lambda z1, z2: f(sq * z1, a, 0) * f(sq * (cc * z1 + sc * z2), a, 0) * pdf(z1) * pdf(z2),
                        grid, grid, method="gauss-legendre")
        qq, cc = sigma_w**2 * s, p / s
    return cc / (1 - cc)


def _node_centre_check(d: Derivation):
    mean = igbsym.get("rectified.mean")

    def via_centres(c, a=None):
        """E_mu[(E_xi ReLU(mu + xi))^2] / E[ReLU^2] with q = 1, using rectified.mean (Lemma F.1's Eq. 85)."""
        sd = mpmath.sqrt(1 - c)
        p = mpmath.quad(lambda z: mean.mp(mpmath.mp.dps, mu=mpmath.sqrt(c) * z, sigma=sd) ** 2
                        * mpmath.npdf(z), [-mpmath.inf, 0, mpmath.inf])
        return p / mpmath.mpf("0.5")
    d.prove_numeric_identity("depth.corr_map", via_centres, [dict(c=cv) for cv in ("0.1", "0.5", "0.9")], dps=25,
                             tol=1e-18, reason="the paper's recursion (App. F.1, Eqs. 137-141): the Gaussian integral "
                                                "over node centres of the squared rectified mean equals the arc-cosine "
                                                "map", activation="relu")


# --- Errata sweep of norm-placement-bn-ln.txt App. F, Eqs. 115-139 (issue 10) -----------------------------------
def _appendix_f_sweep(d: Derivation):
    """Equation-by-equation check of App. F.1 (LN + ReLU, Eqs. 115-124) and App. F.2 (ReLU + LN, Thm F.3,
    Eqs. 125-139); the appendix's numbering ends at Eq. 139. Each equation gets a SymPy check or a numeric identity;
    what fails is recorded as an erratum."""
    _sweep_f1_laws(d)
    _sweep_f1_scaling(d)
    _sweep_f2(d)


def _sweep_require(ok, what):
    """``require`` with the sweep's equation named."""
    require(ok, f"App. F sweep: {what}")


def _sweep_f1_laws(d: Derivation):
    """App. F.1, Eqs. 115-121: the layer law as a mixture over node centres, LN's rescaling, ReLU's atom."""
    import sympy.stats as ss

    from igbsym.functions import Phi

    tt = sp.Symbol("t", real=True)
    s_z, s_e = sp.Symbol("sigma_z", positive=True), sp.Symbol("sigma_E", positive=True)
    mgf = ss.moment_generating_function
    conv = mgf(ss.Normal("A", 0, s_z))(tt) * mgf(ss.Normal("B", 0, s_e))(tt)
    _sweep_require(sp.simplify(conv - mgf(ss.Normal("C", 0, sp.sqrt(s_z**2 + s_e**2)))(tt)) == 0, "Eq. 116")
    d.step("App. F sweep, Eqs. 115-116: the layer law is the mixture over node centres y ~ N(0, sigma_E^2) of "
           "N(y, sigma_z^2); the convolution is N(0, sigma_z^2 + sigma_E^2) (SymPy: the product of the two moment "
           "generating functions is that of N(0, sigma_z^2 + sigma_E^2)), i.e. q = V_chi + V_mu of the (q, c) "
           "state. Correct (the integrand of Eq. 116 writes x for the argument z of its left-hand side).", conv)
    d.step("Eqs. 117-119: LN of the layer divides node i by alpha = sqrt(sigma_z^2 + sigma_E^2) = sqrt(q) (the layer "
           "mean tends to 0): N(mu, sigma^2) -> N(mu/alpha, sigma^2/alpha^2). Correct; this is the (q, c) -> (1, c) "
           "map of LN before phi used by depth.gamma_ln_pre.")

    mu, sig = sp.Symbol("mu", real=True), sp.Symbol("sigma", positive=True)
    atom = ss.cdf(ss.Normal("Z", mu, sig))(0)             # P(Z <= 0): the mass ReLU sends to 0
    _sweep_require(symbolically_equal(atom, Phi(-mu / sig)), "ReLU atom")
    total_as_printed = sp.simplify((Phi(mu / sig) + (1 - atom)).rewrite(sp.erf))
    _sweep_require(sp.simplify(total_as_printed - 1) != 0, "Eq. 120 total mass")
    d.step("Eqs. 120-121: ReLU of N(mu, sigma^2) puts the mass P(Z <= 0) = Phi(-mu/sigma) at 0 (SymPy: the normal CDF "
           "at 0). The printed atom Phi(mu/sigma) gives total mass Phi(mu/sigma) + (1 - Phi(-mu/sigma)) =",
           total_as_printed)
    d.erratum("norm-placement-bn-ln.txt App. F.1, Eqs. 120-121",
              "f_Y(y) = Phi(mu/sigma) delta(y) + 1[y > 0] N(y; mu, sigma^2) (and Phi((mu/alpha)/(sigma/alpha)) in "
              "Eq. 121)",
              "the atom is Phi(-mu/sigma) = P(N(mu, sigma^2) <= 0); as printed the law has total mass 1 + erf(mu/"
              "(sqrt 2 sigma)) != 1 unless mu = 0 (Eqs. 102-103, 131 with mu = 0 are right)",
              "SymPy: normal CDF at 0 and the total mass (derivations/depth.py, App. F sweep)")


def _sweep_f1_scaling(d: Derivation):
    """App. F.1, Eqs. 122-124: ReLU's mean and variance scale with a positive factor; Eq. 124 is the no-norm map."""
    al = sp.Symbol("alpha", positive=True)
    for name, power in (("rectified.mean", 1), ("rectified.var", 2)):
        form = igbsym.get(name)
        expr, sym = form.case(), form.symbols
        scaled = expr.subs({sym["mu"]: sym["mu"] / al, sym["sigma"]: sym["sigma"] / al}, simultaneous=True)
        _sweep_require(sp.simplify(scaled * al**power - expr) == 0, f"Eqs. 122-123 ({name})")
    d.step("Eqs. 122-123: E[ReLU(Z/alpha)] = E[ReLU Z]/alpha and Var[ReLU(Z/alpha)] = Var[ReLU Z]/alpha^2 for "
           "alpha > 0 (SymPy on the registered rectified.mean and rectified.var). Correct: Lemma F.1 is only needed "
           "for alpha > 0 here (Eqs. 122-124 write sigma_<z> for the sigma_E of Eq. 116: the same quantity).")

    mean, var = igbsym.get("rectified.mean"), igbsym.get("rectified.var")

    def ratio_after_ln(c, scale="7"):
        """Eq. 124 at q = scale (any per-sample LN factor): c' = E_mu[m^2]/(E_mu[m^2] + E_mu[v]), m, v the rectified
        mean and variance of node mu + N(0, (1 - c) q), centres mu ~ N(0, c q) (mpmath quadrature)."""
        q_ = mpmath.mpf(scale)
        sd, dps = mpmath.sqrt((1 - c) * q_), mpmath.mp.dps
        at = lambda z: dict(mu=mpmath.sqrt(c * q_) * z, sigma=sd)  # noqa: E731
        p_ = mpmath.quad(lambda z: mean.mp(dps, **at(z)) ** 2 * mpmath.npdf(z), [-mpmath.inf, 0, mpmath.inf])
        v_ = mpmath.quad(lambda z: var.mp(dps, **at(z)) * mpmath.npdf(z), [-mpmath.inf, 0, mpmath.inf])
        return p_ / (p_ + v_)
    d.prove_numeric_identity("depth.corr_map", ratio_after_ln, [dict(c=cv) for cv in ("0.2", "0.7")], dps=20,
                             tol=1e-14, reason="App. F.1 Eq. 124: Var_W(E_chi Z)/Var_chi(Z) after LN + ReLU, built "
                                               "from node centres at a layer scale q = 7, is the no-norm ratio "
                                               "(the LN factor cancels for ReLU)", activation="relu")


def _sweep_f2(d: Derivation):
    """App. F.2, Eqs. 127-139: fan-in sums, ReLU of N(0, sigma_w^2), the LN variance bullet, Thm F.3."""
    import sympy.stats as ss

    n0, swf = sp.Symbol("N_0", positive=True, integer=True), sp.Symbol("sigma_w", positive=True)
    node_var = swf**2 / n0 * ss.ChiSquared("X", n0)        # sum_j w_ij^2 Var(x_j), w_ij ~ N(0, sigma_w^2/N_0)
    e_nv, v_nv = sp.simplify(ss.E(node_var)), sp.simplify(ss.variance(node_var))
    _sweep_require(e_nv == swf**2 and sp.simplify(v_nv - 2 * swf**4 / n0) == 0, "Eq. 129")
    d.step("Eqs. 127-130: E_chi Z_i = 0 (correct). The node variance sum_j w_ij^2 Var(x_j) over the N_0 inputs is "
           "sigma_w^2/N_0 chi^2_{N_0}: mean and variance", sp.Matrix([e_nv, v_nv]))
    d.erratum("norm-placement-bn-ln.txt App. F.2, Eqs. 128-130",
              "sums over i = 1..N_1 of w_ij X_j, Var = N_1 sigma_w^2/N_1 = sigma_w^2 exactly, and N(0, sigma_{w_i}^2)",
              "the sums run over j = 1..N_0 (fan-in), and sum_j w_ij^2 = sigma_w^2 holds only as N_0 -> inf: for "
              "finite N_0 it is random with mean sigma_w^2 and variance 2 sigma_w^4/N_0 (Gaussian weights), which is "
              "the node-dependent sigma_{w_i}^2 of Eq. 130",
              "SymPy (sympy.stats chi-square moments)")

    y0 = sp.Symbol("y", real=True)
    relu_mass = sp.Rational(1, 2) + sp.integrate(sp.exp(-y0**2 / (2 * swf**2)) / sp.sqrt(2 * sp.pi * swf**2),
                                                 (y0, 0, sp.oo))
    _sweep_require(sp.simplify(relu_mass - 1) == 0, "Eq. 131")
    ys = sp.symbols("Y_1:6", real=True)
    unsquared = sp.expand(sum(v - sum(ys) / 5 for v in ys))
    _sweep_require(unsquared == 0, "LN variance bullet")
    d.step("Eqs. 131-133: ReLU of N(0, sigma_w^2): atom 1/2 plus the half-normal, total mass 1 (SymPy); identical "
           "laws across nodes in the N_0 -> inf limit. Correct. The bullet before Eq. 134 defines the layer variance "
           "as sum_i (Y_i - mu_hat)/N_1, which is identically 0 (SymPy, N_1 = 5):", unsquared)
    d.erratum("norm-placement-bn-ln.txt App. F.2, the definition of (sigma_hat_a^(1))^2 before Eq. 134",
              "(sigma_hat_a)^2 = sum_i (Y_i - mu_hat_a)/N_1", "sum_i (Y_i - mu_hat_a)^2/N_1 (the unsquared sum is 0)",
              "SymPy expansion")
    d.step("Eqs. 134-136: LN after ReLU standardises every node per sample; in the width limit the layer mean and "
           "std are E_chi Y = sigma_w/sqrt(2 pi) and sqrt(Var_chi Y) for every node, so E_chi L_i = 0 and Var_chi "
           "L_i = 1 (correct). Eqs. 137-139 and Thm F.3 (Eqs. 125-126): Z^(2)_i = sum_j w_ij L_j has centre "
           "sum_j w_ij E_chi L_j = 0 for every node and variance sum_j w_ij^2 -> sigma_w^2: gamma = 0 at every "
           "depth, which is the registered depth.gamma_ln_post = 0 (proved above; checked against torch LayerNorm "
           "MLPs by check depth_placements).")
    d.erratum("norm-placement-bn-ln.txt App. F.2, Eqs. 138-139",
              "f_{Z_i^(1)} with weights w_j^(1)", "the law of Z_i^(2) (second layer), weights w_ij^(1)",
              "reading against Eq. 137 (index typo, no change to the result)")


def derive() -> Derivation:
    d = Derivation("depth", "Depth law of gamma and normalisation placement")
    mom = _map(d)
    _node_centre_check(d)
    _depth_law(d, mom)
    _asymptotics(d)
    _placements(d, mom)
    _numeric_routes(d)
    _appendix_f_sweep(d)
    return d


if __name__ == "__main__":
    from .base import document
    print(document([derive()]))
