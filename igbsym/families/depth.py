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
"""
from __future__ import annotations

import mpmath
import numpy as np
import sympy as sp

from .. import activations as acts
from ..errors import InputError
from ..gaussian import _nodes
from ..form import ClosedForm, Condition, NumericRoute, Param, Provenance
from ..registry import get, register

IGB = "igb-initial-guessing-bias.txt"
NORM = "norm-placement-bn-ln.txt"
NORMS = ("none", "batchnorm", "layernorm", "rmsnorm")
PLACEMENTS = ("pre", "post")
L_EXACT = 4          # up to this depth the registered case is the nested closed form, beyond it the iteration
L_MAX = 100000
BN_FORM = "bn.gamma_canonical"

q_, c_ = sp.Symbol("q", positive=True), sp.Symbol("c", real=True)
a_, sw_ = sp.Symbol("a", real=True), sp.Symbol("sigma_w", positive=True)
_SLOPE = {"relu": sp.S.Zero, "leaky_relu": a_, "identity": sp.S.One}   # positively homogeneous: φ(x) = x⁺ − s x⁻
ODD = tuple(n for n, act in acts.ACTIVATIONS.items() if act.odd)
SMOOTH = tuple(n for n in acts.names() if n not in _SLOPE and n not in ODD and n != "srelu")


# --- one-step moments (P, S, M) at (q, c) -------------------------------------------------------------
def arccos_map(c, s):
    """k_s(c) = E[φ(u)φ(u')]/E[φ(u)²] for φ(x) = max(x, 0) + s·min(x, 0), corr(u, u') = c (SymPy)."""
    r = (1 - s) ** 2 / (1 + s**2)
    return c + r * (sp.sqrt(1 - c**2) - c * sp.acos(c)) / sp.pi


def sym_moments(activation: str, q=q_, c=c_, sigma1=sw_):
    """(P, S, M) as SymPy expressions for the closed-form activations (homogeneous ones and srelu).

    srelu subtracts σ₁/√(2π), the ReLU mean of the first layer's N(0, σ₁²) input to φ (σ₁ = σ_w, or 1 after a
    norm placed before φ): exact centring in layer 1 only (igb.gamma's and validation/simulate.py's convention).
    """
    if activation == "srelu":
        p, s, m = sym_moments("relu", q, c)
        k = sigma1 / sp.sqrt(2 * sp.pi)
        return p - 2 * k * m + k**2, s - 2 * k * m + k**2, m - k
    sl = _SLOPE[activation]
    s = q * (1 + sl**2) / 2
    return s * arccos_map(c, sl), s, (1 - sl) * sp.sqrt(q) / sp.sqrt(2 * sp.pi)


def _pre(norm, placement, q, c):
    """The state the activation sees: a norm before φ rescales to unit second moment (BN also centres)."""
    if placement == "post" or norm == "none":
        return q, c
    return (sp.S.One, c) if norm in ("layernorm", "rmsnorm") else (sp.S.One, sp.S.Zero)


def sym_step(activation, norm, placement, q, c):
    """One block (q, c) → (q', c') in SymPy (closed-form activations)."""
    pre_norm = norm != "none" and placement == "pre"
    p, s, m = sym_moments(activation, *_pre(norm, placement, q, c), sigma1=sp.S.One if pre_norm else sw_)
    if placement == "pre" or norm == "none":
        return sw_**2 * s, p / s
    if norm == "layernorm":
        return sw_**2, (p - m**2) / (s - m**2)
    return (sw_**2, p / s) if norm == "rmsnorm" else (sw_**2, sp.S.Zero)


# --- numeric moments for activations with no closed form: quadrature over (centre, noise) -----------------
QUAD_ERROR = ("composite 8-point Gauss-Legendre on z in [-13, 13] with panels <= min(0.25, 0.4 scale/sd) for "
              "E[phi], E[phi^2] and for both levels of P = E_mu[(E_xi phi(mu+xi))^2]: relative error <= 1e-11 "
              "per layer for q <= 100 (tests compare with nested mpmath quadrature)")


def _gauss(g, sd, scale=1.0):
    """E[g(sd·Z)] by composite 8-point Gauss–Legendre on z ∈ [−13, 13], panels <= min(0.25, 0.4·scale/sd);
    ``scale`` is the distance over which g varies (1 for the smooth activations: poles at distance >= π)."""
    z, w = _nodes(min(0.25, 0.4 * scale / max(sd, 1e-300)))
    return g(sd * z) @ w


def _np_point(f, q, c, a):
    """(P, S, M) at one parameter point; the inner mean E_ξ φ(μ + ξ) varies on the scale max(sd(ξ), 1) in μ."""
    m = _gauss(lambda x: f(x, a, 0.0), np.sqrt(q))
    s = _gauss(lambda x: f(x, a, 0.0) ** 2, np.sqrt(q))
    if c <= 0:
        return m * m, s, m
    sd = np.sqrt((1 - c) * q)
    p = _gauss(lambda mu: _gauss(lambda x: f(mu[:, None] + x, a, 0.0), sd) ** 2, np.sqrt(c * q), max(sd, 1.0))
    return p, s, m


def np_moments(activation, q, c, a):
    """(P, S, M) by quadrature: P = E_μ[(E_ξ φ(μ + ξ))²], μ ~ N(0, cq), ξ ~ N(0, (1 − c)q)."""
    f = acts.get(activation).numpy
    q, c, a = np.broadcast_arrays(*(np.asarray(v, float) for v in (q, c, a)))
    out = np.array([_np_point(f, *v) for v in zip(q.ravel(), np.clip(c, 0, 1).ravel(), a.ravel())])
    return tuple(out[:, k].reshape(q.shape) for k in range(3))


def _mp_gauss(f, sd):
    """E[f(sd·Z)] by Gauss–Legendre quadrature in z on [−∞, −8, −3, 0, 3, 8, ∞] (smooth integrands)."""
    dens = 1 / mpmath.sqrt(2 * mpmath.pi)
    return mpmath.quad(lambda z: f(sd * z) * dens * mpmath.exp(-z * z / 2),
                       [-mpmath.inf, -8, -3, 0, 3, 8, mpmath.inf], method="gauss-legendre")


def mp_moments(activation, q, c, a):
    """(P, S, M) with nested mpmath quadrature at the working precision (the reference route)."""
    f = acts.get(activation).mp
    m = _mp_gauss(lambda x: f(x, a, 0), mpmath.sqrt(q))
    s = _mp_gauss(lambda x: f(x, a, 0) ** 2, mpmath.sqrt(q))
    if c == 0:
        return m * m, s, m
    noise = mpmath.sqrt((1 - c) * q)
    p = _mp_gauss(lambda mu: _mp_gauss(lambda x: f(mu + x, a, 0), noise) ** 2, mpmath.sqrt(c * q))
    return p, s, m


# --- the iteration -------------------------------------------------------------------------------------
def _kind(activation, norm, placement):
    if activation in ODD or (norm in ("batchnorm", "layernorm") and placement == "post"):
        return "zero"
    if norm == "batchnorm":
        return "bn_pre"
    return "homogeneous" if activation in _SLOPE else ("srelu" if activation == "srelu" else "smooth")


def _sin_minus_tcos(t):
    """sin t − t cos t, with its Taylor series for small t (no cancellation)."""
    t2 = t * t
    series = t * t2 * (1 / 3 - t2 * (1 / 30 - t2 * (1 / 840 - t2 * (1 / 45360 - t2 / 3991680))))
    return np.where(t < 0.1, series, np.sin(t) - t * np.cos(t))


def _homogeneous_path(L, slope, c0=0.0):
    """c_l for l = 1..L of c' = k_slope(c), iterated in ε = 1 − c (stable as c → 1)."""
    r = (1 - slope) ** 2 / (1 + slope**2)
    eps = np.asarray(1.0 - c0 + 0 * r, float)
    out = []
    for _ in range(L):
        t = 2 * np.arcsin(np.sqrt(np.clip(eps / 2, 0.0, 1.0)))
        eps = np.maximum(eps - r * _sin_minus_tcos(t) / np.pi, 0.0)
        out.append(eps)
    return out


_STEP = {}


def _step_fn(activation, norm, placement, module):
    """The closed-form block map (q, c, a, σ_w) → (q', c') lambdified for ``numpy`` or ``mpmath`` (cached)."""
    key = (activation, norm, placement, module)
    if key not in _STEP:
        qn, cn = sym_step(activation, norm, placement, q_, c_)
        _STEP[key] = sp.lambdify((q_, c_, a_, sw_), [qn, cn], modules=module)
    return _STEP[key]


def np_path(L, activation, norm, placement, a, sigma_w, B=np.inf):
    """γ after hidden layers 1..L (a list of arrays broadcast over a, σ_w, B)."""
    kind = _kind(activation, norm, placement)
    a, sigma_w, B = np.broadcast_arrays(*(np.asarray(v, float) for v in (a, sigma_w, B)))
    if kind == "zero":
        return [np.zeros(a.shape)] * L
    if kind == "bn_pre":
        return [_bn_np(activation, a, B)] * L
    if kind == "homogeneous":
        slope = {"relu": 0.0, "identity": 1.0}.get(activation, a)
        return [(1 - e) / e for e in _homogeneous_path(L, slope)]
    q, c, out = sigma_w**2, np.zeros(a.shape), []
    for _ in range(L):
        if kind == "srelu":
            q, c = (np.asarray(v, float) for v in _step_fn(activation, norm, placement, "numpy")(q, c, a, sigma_w))
        else:
            q, c = _np_smooth_step(activation, norm, placement, q, c, a, sigma_w)
        out.append(c / (1 - c))
    return out


def _np_smooth_step(activation, norm, placement, q, c, a, sigma_w):
    qi, ci = (float(v) if isinstance(v, sp.Basic) else v for v in _pre(norm, placement, q, c))
    return _post(norm, placement, *np_moments(activation, qi, ci, a), sigma_w)


def _post(norm, placement, p, s, m, sigma_w):
    if placement == "pre" or norm == "none":
        return sigma_w**2 * s, p / s
    if norm == "layernorm":
        return sigma_w**2 + 0 * s, (p - m * m) / (s - m * m)
    return sigma_w**2 + 0 * s, p / s


def mp_gamma(L, activation, norm, placement, a, sigma_w, B):
    """γ_L at the working mpmath precision (the reference route; iteration of the exact step)."""
    kind = _kind(activation, norm, placement)
    if kind == "zero":
        return mpmath.mpf(0)
    if kind == "bn_pre":
        return _bn_mp(activation, a, B)
    q, c = sigma_w**2, mpmath.mpf(0)
    for _ in range(L):
        if kind == "smooth":
            qi, ci = (mpmath.mpf(int(v)) if isinstance(v, sp.Basic) else v for v in _pre(norm, placement, q, c))
            q, c = _post(norm, placement, *mp_moments(activation, qi, ci, a), sigma_w)
        else:
            q, c = _step_fn(activation, norm, placement, "mpmath")(q, c, a, sigma_w)
    return c / (1 - c)


# --- BatchNorm before φ: constant in depth (Thm E.1); the mini-batch value comes from the BN family ----------
def _bn_form(activation):
    try:
        form = get(BN_FORM)
    except InputError:
        raise InputError(f"BatchNorm with a finite batch size needs the form {BN_FORM} (BatchNorm family), which is "
                         "not registered; use B=inf (full batch)") from None
    names = {p.name for p in form.params}
    if "activation" not in names and activation != "relu":
        raise InputError(f"{BN_FORM} covers relu only; activation={activation} with a finite batch size B has no "
                         "prediction (use B=inf)")
    return form, ({"activation": activation} if "activation" in names else {})


def _bn_np(activation, a, B):
    full = get("igb.gamma").numpy(activation=activation, sigma_w=1.0, a=a)
    finite = np.isfinite(B)
    if not finite.any():
        return np.asarray(full, float)
    form, extra = _bn_form(activation)
    out = np.array(np.broadcast_to(full, B.shape), float)
    out[finite] = form.numpy(B=B[finite], **extra)
    return out


def _bn_mp(activation, a, B):
    if mpmath.isinf(B):
        return get("igb.gamma").mp(mpmath.mp.dps, activation=activation, sigma_w=1, a=a)
    form, extra = _bn_form(activation)
    return form.mp(mpmath.mp.dps, B=B, **extra)


# --- the registered cases ----------------------------------------------------------------------------------
def exact_gamma(L, activation, norm, placement):
    """The nested closed form of γ_L (SymPy) for the closed-form activations."""
    q, c = sw_**2, sp.S.Zero
    for _ in range(L):
        q, c = sym_step(activation, norm, placement, q, c)
    return sp.simplify(c / (1 - c)) if L == 1 else c / (1 - c)


def case(L, activation, norm, placement):
    kind = _kind(activation, norm, placement)
    if kind == "zero":
        return sp.S.Zero
    if kind in ("homogeneous", "srelu") and L <= L_EXACT:
        return exact_gamma(L, activation, norm, placement)
    if kind == "bn_pre":
        method, error = ("constant in depth (Thm E.1): E[phi(Z)]^2/Var[phi(Z)], Z ~ N(0,1), for B = inf; "
                         f"{BN_FORM}(B) for finite B"), "that of igb.gamma / " + BN_FORM
    elif kind == "smooth":
        method, error = f"{L}-fold iteration of the (q, c) block map with quadrature moments", QUAD_ERROR
    else:
        method = f"{L}-fold iteration of the closed-form block map (nested form printed for L <= {L_EXACT})"
        error = "rounding only: relative error <= 1e-13 * L"
    return NumericRoute(
        lambda a, sigma_w, B=np.inf: np_path(L, activation, norm, placement, a, sigma_w, B)[-1],
        lambda a, sigma_w, B=mpmath.inf: mp_gamma(L, activation, norm, placement, a, sigma_w, B),
        method, error, sp.Symbol("c_L") / (1 - sp.Symbol("c_L")))


def _kernel(L, activation, norm, placement, a, sigma_w, B):
    return np_path(L, activation, norm, placement, a, sigma_w, B)[-1]


DISPLAY = (r"\frac{c_L}{1-c_L},\; (q_1, c_1) = (\sigma_w^2, 0),\; "
           r"(q_{l+1}, c_{l+1}) = \left(\sigma_w^2 E[\phi(u)^2],\ \frac{E[\phi(u)\phi(u')]}{E[\phi(u)^2]}\right),\;"
           r"(u, u') \sim \mathcal{N}\left(0, q_l\begin{pmatrix}1 & c_l\\ c_l & 1\end{pmatrix}\right)"
           r"\quad\text{(norm placements: see summary)}")
L_PARAM = Param("L", "integer", "number of hidden layers", structural=True, minimum=1, maximum=L_MAX)
ACT = Param("activation", "choice", "activation function", choices=acts.names())
A = Param("a", "real", "leaky slope, used by leaky_relu only", default=0.01)
SW = Param("sigma_w", "positive", "Kaiming gain: weights N(0, sigma_w^2/fan_in)", default=1.0)
B_PARAM = Param("B", "positive", "BatchNorm batch size (training-mode batch statistics); inf = full batch",
                default=float("inf"), allow_inf=True)
ZERO_NOTE = "0 for every activation, width-limit exact; odd activations give 0 for every norm (data symmetric)"
DEPTH_NOTE = ("The papers leave the recursion numeric (App. F.1); here it is the arc-cosine map for (leaky) ReLU: "
              "gamma_L ~ 2 (1-a)^4 L^2 / (9 pi^2 (1+a^2)^2) as L -> inf (derivations/depth.py). SReLU (App. G.3) "
              "is IGB-free for one hidden layer only: its fixed shift no longer centres deeper layers")

register(ClosedForm(
    "depth.gamma", "gamma at the output of an L-hidden-layer MLP (infinite width, N(0, I) data, zero biases, "
                   "Kaiming weights) with an optional norm before (pre) or after (post) each activation.",
    (L_PARAM, ACT, Param("norm", "choice", "normalisation layer", choices=NORMS, default="none"),
     Param("placement", "choice", "norm before (pre) or after (post) the activation", choices=PLACEMENTS,
           default="pre"), A, SW, B_PARAM),
    Provenance(IGB, "App. F.1-F.2 (depth), App. G; norm-placement-bn-ln.txt Thms E.1, E.2, F.2, F.3", DEPTH_NOTE),
    builder=case, kernel=_kernel, display=DISPLAY))
register(ClosedForm(
    "depth.corr_map", "One hidden (leaky) ReLU layer maps the input correlation c of two independent inputs to "
                      "E[phi(u)phi(u')]/E[phi(u)^2]: the normalised degree-1 arc-cosine kernel.",
    (Param("c", "real", "correlation of the pre-activations of two independent inputs, c = gamma/(1+gamma)"),
     Param("activation", "choice", "positively homogeneous activation", choices=tuple(_SLOPE)), A),
    Provenance(IGB, "App. F.1, Eqs. 137-141 in closed form; igb-talk-slides.txt (c = gamma/(1+gamma))",
               "Cho & Saul (2009) arc-cosine kernel of degree 1 (ReLU), generalised to slope a"),
    builder=lambda activation: arccos_map(sp.Symbol("c", real=True), _SLOPE[activation]),
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
        builder=(lambda n, p: lambda L, activation: case(L, activation, n, p))(_norm, _pl),
        kernel=(lambda n, p: lambda L, activation, a, sigma_w, B=np.inf: _kernel(L, activation, n, p, a, sigma_w, B))(
            _norm, _pl), display=DISPLAY))
