"""The depth law of γ and normalisation placement: γ at the output of an L-hidden-layer MLP.

Papers: igb-initial-guessing-bias.txt App. F.1 (layer-by-layer propagation of node centres and node variances,
left numeric there), App. F.2 (γ → ∞ with depth), App. G (activation rule); norm-placement-bn-ln.txt
Thms E.1, E.2, F.2, F.3, Lemma F.1, Sec. 4.1.3 (LN vs RMSNorm); igb-talk-slides.txt (c = γ/(1+γ)).

State of layer l (infinite width, N(0, I_d) data with d → ∞, zero biases, weights N(0, σ_w²/fan_in)): node i's
pre-activation on input x is h_i(x) = μ_i + ξ_i(x) with centres μ_i ~ N(0, V_μ) across nodes/initialisations and
data noise ξ_i ~ N(0, V_χ). We carry q = V_μ + V_χ and c = V_μ/q, the correlation of h_i(x), h_i(x') for two
independent inputs; γ = V_μ/V_χ = c/(1 − c). With (u, u') ~ N(0, q[[1, c], [c, 1]]), P = E[φ(u)φ(u')] =
E_μ[(E_ξ φ(μ + ξ))²] (the Gaussian integral over node centres), S = E[φ(u)²], M = E[φ(u)], one block maps

    no norm:        q' = σ_w² S,  c' = P/S              (App. F.1 in closed form)
    norm before φ:  (q, c) → (1, c) for LN/RMSNorm, (1, 0) for full-batch BN, then as above
    LN after φ:     q' = σ_w²,    c' = (P − M²)/(S − M²)   (0 from c = 0: Thm F.3)
    RMSNorm after:  q' = σ_w²,    c' = P/S              (the no-norm law: Sec. 4.1.3's claim fails here)
    BN after φ:     q' = σ_w²,    c' = 0                (Thm E.2)

starting from (σ_w², 0) at the first hidden layer. For (leaky) ReLU P/S is the degree-1 arc-cosine map
k_a(c) = c + (1 − a)²(√(1 − c²) − c·arccos c)/(π(1 + a²)), independent of q; it is registered as
``depth.corr_map`` and proved from the integral in derivations/depth.py.

Implementation: each block is a sequence of ``igbsym.spec`` ops ([norm] Act [norm] Dense), and γ_L is the
composition of the ops' maps (SymPy for the nested closed form at L <= 4, NumPy / mpmath for the numeric routes),
the same ops that ``validation/simulate.py`` turns into torch layers. The numeric state carries 1 − c itself
(never formed as a difference), so γ keeps its relative accuracy as c → 1; a NumericalError is raised where
γ leaves the double range (1 − c < 1e-300) or q leaves the quadrature route's range (q <= 100), never a wrong
sign or inf. The iteration stops at a fixed point of the block map (later layers repeat it), so any depth up
to L_MAX is cheap; GELU/SiLU with RMSNorm after φ at q = σ_w² <= 0.01, where ~1/q layers pass before c settles,
iterate Mehler's power series of the block map (igbsym/mehler.py) instead of a nested quadrature a layer.
Default σ_w = √2 (igbsym.spec.SIGMA_W: the papers' Kaiming setting).
"""
from __future__ import annotations

import math

import mpmath
import numpy as np
import sympy as sp

from .. import activations as acts
from .. import mehler
from .. import engine, gauss, spec
from ..engine.finite import L_MAX as finite_L_MAX
from .. import ops as O
import dataclasses

from .. import params as P
from ..params import bias_used
from ..form import Accuracy, ClosedForm, Condition, NumericRoute, Param, Provenance
from .. import registry
from ..registry import register

IGB = "igb-initial-guessing-bias.txt"
NORM = "norm-placement-bn-ln.txt"
NORMS = ("none", "batchnorm", "layernorm", "rmsnorm")
PLACEMENTS = spec.PLACEMENTS
L_EXACT = 4          # up to this depth the registered case is the nested closed form, beyond it the iteration
L_MAX = 100000
BN_FORM = "bn.gamma_canonical"
QUAD_ERROR = gauss.QUAD_ERROR

q_, c_ = sp.Symbol("q", positive=True), sp.Symbol("c", real=True)
a_, sw_ = sp.Symbol("a", real=True), sp.Symbol("sigma_w", positive=True)
_SLOPE = {n: (a_ if acts.get(n).slope == "a" else sp.Integer(acts.get(n).slope))   # φ = x⁺ − s x⁻
          for n in acts.homogeneous_names()}
ODD = tuple(n for n, act in acts.ACTIVATIONS.items() if act.odd)
SMOOTH = tuple(n for n in acts.names() if n not in _SLOPE and n not in ODD and n != "srelu")
arccos_map = O.arccos_map


def block(activation, norm, placement, a, sigma_w, B=None, shift_backend="numpy", sigma_b=0):
    """The ops of one hidden block after its Dense, then the next Dense: [norm pre] φ [norm post] Dense(σ_w, σ_b).

    srelu's shift is σ₁/√(2π), the ReLU mean of layer 1's N(0, σ₁²) input to φ (σ₁ = σ_w, or 1 after a norm
    placed before φ): exact centring in layer 1 only (igb.gamma's and validation/simulate.py's convention)."""
    pre_norm = norm != "none" and placement == "pre"
    shift = None
    if activation == "srelu":
        sig = 1 if pre_norm else sigma_w
        root = {"sympy": sp.sqrt(2 * sp.pi), "mpmath": mpmath.sqrt(2 * mpmath.pi)}.get(shift_backend,
                                                                                        math.sqrt(2 * math.pi))
        shift = sig / root
    return spec.block_ops(activation, norm, placement, a, B, None, shift) + (O.Dense(None, sigma_w, sigma_b),)


def sym_step(activation, norm, placement, q, c):
    """One block (q, c) → (q', c') in SymPy (closed-form activations), composed from the ops' maps."""
    st = O.State(q, c, 1 - c, sp.S.Zero)
    for op in block(activation, norm, placement, a_, sw_, shift_backend="sympy"):
        st = op.sym(st)
    return st.q, sp.simplify(st.c) if st.c.is_number else st.c


def _kind(activation, norm, placement):
    """'odd' for odd φ without a norm: 0 at σ_b = 0 (symmetric data), a bias shared by the data raises it.
    'zero' where γ = 0 at every depth exactly: odd φ with a norm, BN/LN after φ (Thms E.2, F.3), and srelu
    with LayerNorm or RMSNorm (BN before φ: the 'bn_pre' route, also 0): its shift σ/√(2π) is the ReLU mean of the
    N(0, σ²) input φ sees at every layer (σ = 1 after a norm before φ; σ = σ_w when the norm after φ resets q = 1
    before the next Dense), so E φ = 0 and c stays 0 from the data's c = 0 (the mp route's 1/√(2π) − k at 50 digits
    left 1e-102, an unconverged reference)."""
    if activation in ODD and norm == "none":
        return "odd"
    if activation in ODD or (norm in ("batchnorm", "layernorm") and placement == "post") or (
            activation == "srelu" and norm in ("layernorm", "rmsnorm")):
        return "zero"
    if norm == "batchnorm":
        return "bn_pre"
    return "homogeneous" if activation in _SLOPE else ("srelu" if activation == "srelu" else "smooth")


def path(L, activation, norm, placement, a, sigma_w, B=None, backend="numpy", where="depth.gamma", last=False,
         sigma_b=0):
    """γ after hidden layers 1..L (the pre-activations of layer l + 1, the output for l = L; ``last``: only γ_L):
    the first Dense, then L blocks, walked by the layer engine (igbsym.engine.walk, with its exact shortcuts);
    every Dense has biases N(0, σ_b²) (the readout's too)."""
    if backend == "numpy":
        a, sigma_w, sigma_b = np.broadcast_arrays(*(np.asarray(v, float) for v in (a, sigma_w, sigma_b)))
    if activation == "srelu" and norm != "none":
        # φ(x) = relu(x) − k with k ∝ the nominal input sd (σ_w, or 1 after a pre-norm) is homogeneous in (x, k) and
        # every norm removes the scale: γ does not depend on σ_w (σ_w = 1 exactly; no overflow at σ_w = 1e308)
        sigma_w = np.ones(np.shape(sigma_w)) if backend == "numpy" else mpmath.mpf(1)
    ops = block(activation, norm, placement, a, sigma_w, B, backend, sigma_b)
    return engine.walk((O.Dense(None, sigma_w, sigma_b),), ops, L, backend, where, last)


def np_path(L, activation, norm, placement, a, sigma_w, B=np.inf, where="depth.gamma", sigma_b=0.0):
    """γ after hidden layers 1..L (a list of arrays broadcast over a, σ_w, σ_b, B; B = inf is full batch)."""
    kind = _kind(activation, norm, placement)
    a, sigma_w, sigma_b, B = np.broadcast_arrays(*(np.asarray(v, float) for v in (a, sigma_w, sigma_b, B)))
    if kind == "zero":
        return [np.zeros(a.shape)] * L
    if sigma_b.any():                       # biases (no norm): the points with them, and those without
        out = [np.zeros(a.shape) for _ in range(L)]
        for mask in (sigma_b > 0, sigma_b == 0):
            if mask.any() and (kind != "odd" or sigma_b[mask].any()):   # odd φ without bias: 0 exactly
                for o, g in zip(out, path(L, activation, norm, placement, a[mask], sigma_w[mask], None, "numpy",
                                          where, sigma_b=sigma_b[mask])):
                    o[mask] = g
        return out
    if kind == "odd":
        return [np.zeros(a.shape)] * L
    finite = np.isfinite(B)
    if kind != "bn_pre" or not finite.any():
        return path(L, activation, norm, placement, a, sigma_w, None, "numpy", where)
    out = [np.empty(a.shape) for _ in range(L)]
    groups = [(B == bb, int(bb)) for bb in np.unique(B[finite])] + [(~finite, None)]   # the ops take a scalar B
    for mask, bb in groups:
        if mask.any():
            for o, g in zip(out, path(L, activation, norm, placement, a[mask], sigma_w[mask], bb, "numpy", where)):
                o[mask] = g
    return out


def mp_gamma(L, activation, norm, placement, a, sigma_w, B, where="depth.gamma", sigma_b=0):
    """γ_L at the working mpmath precision (the reference route; the ops' mpmath maps composed)."""
    kind = _kind(activation, norm, placement)
    if kind == "zero" or (kind == "odd" and sigma_b == 0):
        return mpmath.mpf(0)
    return path(L, activation, norm, placement, a, sigma_w, None if mpmath.isinf(B) else int(B), "mpmath",
                where, last=True, sigma_b=sigma_b)[-1]


# --- the registered cases ----------------------------------------------------------------------------------
def exact_gamma(L, activation, norm, placement):
    """The nested closed form of γ_L (SymPy) for the closed-form activations: the ops' SymPy maps composed, with
    the bias σ_b where it is used (``bias_used``)."""
    sb = sb_ if bias_used(dict(activation=activation, norm=norm)) else 0
    ops = block(activation, norm, placement, a_, sw_, shift_backend="sympy", sigma_b=sb)
    state = O.Dense(None, sw_, sb).sym(O.input_state("sympy"))
    for _ in range(L):
        for op in ops:
            state = op.sym(state)
    return sp.simplify(state.c / (1 - state.c)) if L == 1 else state.c / (1 - state.c)


def finite_supported(case) -> bool:
    """A depth.gamma case with a finite-width form (width.gamma): no norm, or LayerNorm / RMSNorm after φ, and
    L <= igbsym.engine.finite.L_MAX."""
    norm = case.get("norm", "none")
    return (norm == "none" or (norm in ("layernorm", "rmsnorm") and case.get("placement", "pre") == "post")) \
        and case.get("L", 1) <= finite_L_MAX


def _width_case(L, activation, norm, placement, N):
    """depth.gamma at finite N: width.gamma's value (looked up in the registry at evaluation time: the width family
    builds on this one, so this module cannot import it)."""
    kw = dict(L=L, N=N, activation=activation, **({} if norm == "none" else dict(norm=norm, placement=placement)))
    return registry.delegate(
        "width.gamma", kw, "width.gamma: depth.gamma + width.coefficient/N (the delta method on the two-point "
        "empirical kernel)", "that of width.coefficient (1e-6 relative)",
        sp.Symbol("gamma_L") + sp.Symbol("a_L") / sp.Symbol("N"), ignore=("B", "sigma_b"))


def case(L, activation, norm, placement, where="depth.gamma", N=np.inf):
    if N != np.inf:
        return _width_case(L, activation, norm, placement, N)
    kind = _kind(activation, norm, placement)
    if kind == "zero":
        return sp.S.Zero
    if kind == "odd" and activation == "identity" and L <= L_EXACT:      # the linear net: exact in σ_b
        return exact_gamma(L, activation, norm, placement)
    if kind in ("homogeneous", "srelu") and L <= L_EXACT:
        return exact_gamma(L, activation, norm, placement)
    if kind == "bn_pre":
        method, error = ("constant in depth (Thm E.1): E[phi(Z)]^2/Var[phi(Z)], Z ~ N(0,1), for B = inf; "
                         f"{BN_FORM}(B) for finite B"), "that of the block map / " + BN_FORM
    elif kind in ("smooth", "odd"):
        method, error = f"{L}-fold composition of the (q, c, 1-c) block map with quadrature moments", QUAD_ERROR
        if activation in mehler.ACTIVATIONS and norm == "rmsnorm" and placement == "post":
            method += (f"; at sigma_w^2 <= {mehler.Q_MAX}: Mehler's power series of the block map at the fixed q, "
                       "iterated as a polynomial (igbsym/mehler.py)")
    else:
        method = (f"{L}-fold composition of the closed-form block map in (c, 1-c) (nested form printed for "
                  f"L <= {L_EXACT})")
        error = "rounding only: relative error <= 1e-13 * L"
    method += "; stops at a fixed point of the block map (later layers repeat it)"
    if kind == "odd":
        method += "; 0 exactly at sigma_b = 0 (odd phi, symmetric data)"
    return NumericRoute(
        lambda a, sigma_w, sigma_b=0.0, B=np.inf: np_path(L, activation, norm, placement, a, sigma_w, B, where,
                                                          sigma_b)[-1],
        lambda a, sigma_w, sigma_b=mpmath.mpf(0), B=mpmath.inf: mp_gamma(L, activation, norm, placement, a, sigma_w,
                                                                          B, where, sigma_b),
        method, error, sp.Symbol("c_L") / (1 - sp.Symbol("c_L")))


def _kernel(L, activation, norm, placement, a, sigma_w, B, where="depth.gamma", N=np.inf, sigma_b=0.0):
    if N != np.inf:
        return _width_case(L, activation, norm, placement, N).numpy(a=a, sigma_w=sigma_w)
    return np_path(L, activation, norm, placement, a, sigma_w, B, where, sigma_b)[-1]


def _corr_kernel(activation, c, a):
    """k_s(c) without cancellation: for c >= 0, c + r(sin t − t c)/π (t = arccos c); for c < 0, with
    u = arccos(−c) = π − t, c(1 − r) + r(sin u − u cos u)/π (→ 0 smoothly as c → −1 for ReLU)."""
    s = acts.get(activation).slope_at(a)
    c, s = np.broadcast_arrays(np.asarray(c, float), np.asarray(s, float))
    r = O.slope_ratio(s)
    t = np.arccos(np.clip(c, -1, 1))
    u = np.arccos(np.clip(-c, -1, 1))
    pos = c + r * (np.sin(t) - t * c) / np.pi
    h = np.hypot(1.0, s)
    neg = c * (2 * (s / h) / h) + r * O.sin_minus_tcos(u) / np.pi   # 1 − r = 2s/(1 + s²), no cancellation near r = 1
    return np.where(c >= 0, pos, neg)


def corr_map_expr(c, s):
    """k_s(c) = spec.arccos_map(c, s) written without cancellation for the mpmath route: c(1 − r) with
    1 − r = 2s/(1 + s²) exactly, plus r(√(1 − c²) + c(π − arccos c))/π (the form c + r(...) loses every digit of
    k_s(−1) = −2s/(1 + s²) for large s)."""
    r = (1 - s) ** 2 / (1 + s**2)
    return 2 * s * c / (1 + s**2) + r * (sp.sqrt(1 - c**2) + c * (sp.pi - sp.acos(c))) / sp.pi


DISPLAY = (r"\frac{c_L}{1-c_L},\; (q_1, c_1) = \left(\sigma_w^2 + \sigma_b^2, "
           r"\frac{\sigma_b^2}{\sigma_w^2 + \sigma_b^2}\right),\; "
           r"(q_{l+1}, c_{l+1}) = \left(\sigma_w^2 E[\phi(u)^2] + \sigma_b^2,\ \frac{\sigma_w^2 "
           r"E[\phi(u)\phi(u')] + \sigma_b^2}{\sigma_w^2 E[\phi(u)^2] + \sigma_b^2}\right),\;"
           r"(u, u') \sim \mathcal{N}\left(0, q_l\begin{pmatrix}1 & c_l\\ c_l & 1\end{pmatrix}\right)"
           r"\quad\text{(norm placements: see summary)}")
L_PARAM = Param("L", "integer", "number of hidden layers", structural=True, minimum=1, maximum=L_MAX)
ACT, A, SW = P.ACTIVATION, P.LEAKY_A, P.SIGMA_W_PARAM
sb_ = sp.Symbol("sigma_b", nonnegative=True)
SB_PARAM = Param("sigma_b", "nonnegative", "bias sd: every Dense (the readout too) adds B ~ N(0, sigma_b^2), the "
                 "mean-field convention Y = W phi(Y) + B; default 0 (no biases)", default=0.0, used_when=bias_used,
                 used_text="with norm=none, an activation other than srelu and N = inf only")
SB_UNUSED = Condition(sp.Eq(sb_, 0), "sigma_b = 0 (biases enter with norm=none, an activation other than srelu and "
                                     "N = inf only)", applies=lambda case: not bias_used(case))
SB_RANGE = Condition(sp.Le(sb_, 10**15 * sw_), "sigma_b <= 1e15 sigma_w (gamma_1 ~ 2 sigma_b^2/sigma_w^2 <= 1e30; "
                                               "beyond, the mpmath reference of the exact forms loses the arccos of "
                                               "c_1 = 1 - sigma_w^2/(sigma_b^2 + sigma_w^2))", applies=bias_used)
B_PARAM = Param("B", "integer", "BatchNorm batch size (training-mode batch statistics); inf = full batch",
                default=float("inf"), minimum=2, allow_inf=True)
B_USED = dataclasses.replace(B_PARAM, used_when=lambda case: (case.get("norm") == "batchnorm"
                                                              and case.get("placement", "pre") == "pre"),
                             used_text="with norm=batchnorm placement=pre only")
B_FULL = Condition(sp.Eq(sp.Symbol("B", integer=True), sp.oo, evaluate=False),   # B is integer: kept unevaluated
                   "B = inf (full batch) for activations other than relu and the odd ones: the mini-batch law "
                   f"({BN_FORM}) covers relu only", applies=lambda case: _needs_full_batch(case.get("activation")))


N_PARAM, N_FINITE = P.width_param(
    "width.gamma", finite_supported, f"norm none, or layernorm/rmsnorm placement post, and L <= {finite_L_MAX}")
FINITE_REL = 1e-6     # width.gamma's stated accuracy (igbsym.engine.finite.FINITE_ERROR)


def _needs_full_batch(activation) -> bool:
    """A norm='batchnorm' case whose mini-batch law is not known (see spec.Act._bn_minibatch)."""
    return activation not in ("relu",) + ODD
DEPTH_ACCURACY = Accuracy(1e-11, "smooth activations (sigmoid, gelu, silu): the quadrature moments' stated bound, "
                                  "1e-11 per layer (spec.QUAD_ERROR; measured <= 6e-16 against nested mpmath), "
                                  "amplified by 1/(1 - rho) at a fixed point of contraction rho (measured <= 1e-13 at "
                                  "L = 1e5); closed-form activations: rounding only (measured 1.3e-14 at L = 1e5)")
DEPTH_N_ACCURACY = dataclasses.replace(
    DEPTH_ACCURACY, reason=DEPTH_ACCURACY.reason + "; finite N: width.gamma's route, relative error <= 1e-6 (central "
    "differences and nested quadrature, igbsym.engine.finite)",
    per_case=lambda case: FINITE_REL if case.get("N", np.inf) != np.inf else DEPTH_ACCURACY.relative)
ZERO_NOTE = "0 for every activation, width-limit exact; odd activations give 0 for every norm (data symmetric)"
DEPTH_NOTE = ("The papers leave the recursion numeric (App. F.1); here it is the arc-cosine map for (leaky) ReLU: "
              "gamma_L ~ 2 (1-a)^4 L^2 / (9 pi^2 (1+a^2)^2) as L -> inf (derivations/depth.py). SReLU (App. G.3) "
              "is IGB-free for one hidden layer only: its fixed shift no longer centres deeper layers")

register(ClosedForm(
    "depth.gamma", "gamma at the output of an L-hidden-layer MLP (infinite width, N(0, I) data, Kaiming weights, "
                   "biases N(0, sigma_b^2) in every Dense, default 0) with an optional norm before (pre) or after "
                   "(post) each activation; with biases gamma_L = q_ab/(q - q_ab) of the readout, c = gamma/(1 + "
                   "gamma) its correlation (meanfield.*).",
    (L_PARAM, ACT, P.NORM, P.PLACEMENT, A, SW, SB_PARAM, B_USED, N_PARAM),
    Provenance(IGB, "App. F.1-F.2 (depth), App. G; norm-placement-bn-ln.txt Thms E.1, E.2, F.2, F.3", DEPTH_NOTE
               + ". Finite N: width.gamma (Roberts-Yaida-Hanin chs. 4-5; README 'Finite width')"),
    builder=case, kernel=lambda L, activation, norm, placement, a, sigma_w, sigma_b=0.0, B=np.inf, N=np.inf: _kernel(
        L, activation, norm, placement, a, sigma_w, B, N=N, sigma_b=sigma_b), display=DISPLAY,
    accuracy=DEPTH_N_ACCURACY,
    conditions=(Condition(B_FULL.relation, B_FULL.text + " (norm=batchnorm, placement=pre)",
                          applies=lambda case: case.get("norm") == "batchnorm" and case.get("placement", "pre") == "pre"
                          and _needs_full_batch(case.get("activation"))), N_FINITE, SB_UNUSED, SB_RANGE)))
register(ClosedForm(
    "depth.corr_map", "One hidden (leaky) ReLU layer maps the input correlation c of two independent inputs to "
                      "E[phi(u)phi(u')]/E[phi(u)^2]: the normalised degree-1 arc-cosine kernel.",
    (Param("c", "real", "correlation of the pre-activations of two independent inputs, c = gamma/(1+gamma)"),
     Param("activation", "choice", "positively homogeneous activation", choices=tuple(_SLOPE)), A),
    Provenance(IGB, "App. F.1, Eqs. 137-141 in closed form; igb-talk-slides.txt (c = gamma/(1+gamma))",
               "Cho & Saul (2009) arc-cosine kernel of degree 1 (ReLU), generalised to slope a"),
    builder=lambda activation: corr_map_expr(sp.Symbol("c", real=True), _SLOPE[activation]), kernel=_corr_kernel,
    conditions=(Condition(sp.Le(sp.Abs(sp.Symbol("c", real=True)), 1), "-1 <= c <= 1"),)))

_PLACEMENT_FORMS = {
    ("batchnorm", "pre"): ("bn_pre", "Thm E.1 (E.1.1 full batch, E.1.2 mini-batch; value bn.gamma_canonical(B))",
                           "BN + phi: constant in depth, equal to one hidden layer with unit-variance pre-activations; "
                           "training-mode BN (batch statistics), affine weight 1 and bias 0 at init; eval mode at init "
                           "is the identity (running stats 0, 1) and gives the no-norm law"),
    ("batchnorm", "post"): ("bn_post", "Thm E.2", "phi + BN: 0 at every depth (each node is centred over the data); "
                                                  "training-mode BN, bias 0 at init; any activation, any batch size"),
    ("layernorm", "pre"): ("ln_pre", "Thm F.2",
                           "LN + phi: the no-norm law with the pre-activation variance reset to 1 at every layer; for "
                           "(leaky) ReLU exactly the no-norm law (positive homogeneity: LN divides by a positive "
                           "per-sample std, Lemma F.1 is needed only for alpha > 0)"),
    ("layernorm", "post"): ("ln_post", "Thm F.3", "phi + LN: 0 at every depth (layer-1 nodes are identically "
                                                   "distributed, so subtracting the layer mean centres every node)"),
    ("rmsnorm", "pre"): ("rms_pre", "Sec. 4.1.3", "RMSNorm + phi: equal to LN + phi at init (the layer mean of the "
                                                  "pre-activations vanishes)"),
    ("rmsnorm", "post"): ("rms_post", "Sec. 4.1.3 (claim fails)",
                          "phi + RMSNorm: NOT equal to phi + LN: the layer mean of phi(h) is E[phi] != 0 for ReLU, "
                          "RMSNorm does not remove it, and gamma follows the no-norm depth law (grows like L^2)"),
}
F2_NOTE = ("Thm F.2 holds for positively homogeneous activations only (LN resets q to 1; GELU/SiLU/sigmoid differ from "
           "the no-norm law); Eqs. 92-93 multiply by (sigma-hat^(1))^2 where LN divides, and the factor changes with "
           "depth; " + DEPTH_NOTE)
RMS_NOTE = ("Sec. 4.1.3 claims LN = RMSNorm at init in general: true before phi, false after phi (RMSNorm keeps the "
            "layer mean E[phi] > 0 of ReLU outputs, so gamma grows like the no-norm law, not 0 as for phi + LN)")
_NOTES = {"bn_pre": DEPTH_NOTE, "bn_post": ZERO_NOTE, "ln_post": ZERO_NOTE, "ln_pre": F2_NOTE, "rms_pre": RMS_NOTE,
          "rms_post": RMS_NOTE}
for (_norm, _pl), (_short, _where, _summary) in _PLACEMENT_FORMS.items():
    _params = (L_PARAM, ACT, A, SW) + ((B_PARAM,) if _norm == "batchnorm" else ())
    register(ClosedForm(
        f"depth.gamma_{_short}", f"gamma after L hidden layers, {_summary}.", _params,
        Provenance(NORM, _where, _NOTES[_short]),
        builder=(lambda n, p, w: lambda L, activation: case(L, activation, n, p, w))(
            _norm, _pl, f"depth.gamma_{_short}"),
        kernel=(lambda n, p, w: lambda L, activation, a, sigma_w, B=np.inf: _kernel(
            L, activation, n, p, a, sigma_w, B, w))(_norm, _pl, f"depth.gamma_{_short}"),
        display=DISPLAY, accuracy=DEPTH_ACCURACY, conditions=(B_FULL,) if (_norm, _pl) == ("batchnorm", "pre") else ()))
