"""Finite width (issue 28): γ of an MLP of width N to first order in 1/N, and the 1/N coefficient a_L.

Model of widths (the simulator's, validation/simulate.py): data x ~ N(0, I_d) with d_in = N, every hidden layer N
units, zero biases, weights N(0, σ_w²/fan_in), a fresh Gaussian output Linear; γ the ratio of expectations
E[Var_W μ_c]/E[Var_χ O_c] that the estimators' Σa/Σb target. Then γ_L(N) = γ_L(∞) + a_L/N + O(1/N²). The engine
(igbsym.engine.finite) splits a into the data's part and each hidden layer's part, so uneven widths are
a_in/d_in + Σ_l a_l/N_l (``igbsym.engine.finite.layer_series`` with the ratios); the forms take d_in = N_l = N.

Derivation (derivations/finite_width.py; Roberts, Yaida & Hanin, *The Principles of Deep Learning Theory*,
chs. 4–5): the two-point empirical kernel of a random pair of data points, its mean and its O(1/N) covariance
through every op by the delta method. Exact cases: a_1 = 0 for one hidden (leaky) ReLU / abs / identity layer
without norm (the per-unit ratio (E φ)²/Var φ does not depend on the row norm ‖w‖, derived in SymPy); γ = 0 at every
width for odd φ without norm or with an RMSNorm (every unit an odd function of symmetric data). LayerNorm after φ
has γ_∞ = 0 but a > 0: its per-sample centring leaves Σ_i (E_x y_i)² > 0 at finite N (ReLU, L = 1:
a_1 = 1/(2(π − 1)), the form's own value). Validity: the series is stated where |a_L|/N <= γ_∞/2, with an O(1/N²)
remainder allowance |a/N|·max(1e-6, 2|a/N|/γ_∞) (``igbsym.engine.finite.validity``); a_L grows geometrically with
depth for GELU/SiLU, so the condition fails early (GELU, L = 8: a ≈ −80, γ_∞ ≈ 1.6: N >= 100).

Forms ``width.coefficient`` (a_L) and ``width.gamma`` (γ_∞ + a_L/N): a family of their own (the registry maps one
module to a family); ``depth.gamma`` stays the N = ∞ form (a structural N in it would put finite-width walks into
every registry-wide case of its 500 structural cases); ``depth.gamma`` at N = ∞ is what ``width.gamma`` adds to.
"""
from __future__ import annotations

from functools import lru_cache

import mpmath
import numpy as np
import sympy as sp

from .. import activations as acts
from .. import ops as O
from .. import spec as S
from ..engine import finite
from ..errors import InputError, NumericalError
from ..form import Accuracy, ClosedForm, NumericRoute, Param, Provenance
from ..registry import register
from . import depth as D

RYH = "roberts-yaida-hanin (The Principles of Deep Learning Theory, 2022)"
L_MAX_FINITE = finite.L_MAX      # the series has long stopped holding there for every activation (README)
NORMS = ("none", "layernorm", "rmsnorm")
ERROR = finite.FINITE_ERROR


def _homogeneous(activation) -> bool:
    return acts.get(activation).slope is not None and activation != "srelu"


@lru_cache(maxsize=None)
def _odd_plus_constant(activation) -> bool:
    """φ(x) + φ(−x) = 2φ(0) on a grid to rounding (sigmoid = 1/2 + tanh(x/2)/2): φ − φ(0) is odd."""
    f = acts.get(activation).numpy
    x = np.linspace(-20, 20, 401)
    return bool(np.allclose(f(x, 0.01, 0.0) + f(-x, 0.01, 0.0), 2 * f(np.zeros(1), 0.01, 0.0), rtol=0, atol=1e-14))


def _odd_zero(activation, norm) -> bool:
    """γ = 0 at every width: odd φ with any norm after it (units odd in x; LayerNorm and RMSNorm keep them odd), and
    φ = constant + odd (sigmoid) with LayerNorm after it: the per-sample centring removes the constant, so the
    normalised units are odd in x (the delta-method walk left ~1e-7 of difference noise there: domain seed)."""
    return acts.get(activation).odd or (norm == "layernorm" and _odd_plus_constant(activation))


def _mlp_series(L, activation, norm, a, sigma_w, r_in=1.0, r=None, where="width", refine=False):
    """[(γ_∞, correction)] per hidden layer of the MLP with a norm after φ (engine.finite.layer_series with the width
    ratios r_in = N/d_in, r_l = N/N_l), with the exact cases set exactly: odd φ (``_odd_zero``) 0 everywhere; one
    homogeneous layer without norm a correction of 0 at any widths (derivations/width.py; the differences leave
    ~1e-8); LayerNorm γ_∞ = 0 (Thm F.3; the walk leaves ~1e-17). Homogeneous φ at σ_w = 1 (nothing depends on it)."""
    if _odd_zero(activation, norm):
        return [(0.0, 0.0)] * L
    if _homogeneous(activation):
        sigma_w = 1.0
    ops = D.block(activation, norm, "post", a, sigma_w)
    out = finite.layer_series((O.Dense(None, sigma_w),), ops, L, r_in, r, where=where, refine=refine)
    if _homogeneous(activation) and norm == "none":
        out[0] = (out[0][0], 0.0)
    if norm == "layernorm":
        out = [(0.0, coef) for _, coef in out]
    return out


@lru_cache(maxsize=4096)
def series(L, activation, norm, a, sigma_w, refine=False):
    """((γ_∞, a_l) for l = 1..L) at one point, every width N (``_mlp_series``)."""
    return tuple(_mlp_series(L, activation, norm, a, sigma_w, where="width.coefficient", refine=refine))


@lru_cache(maxsize=1024)
def resnet_series(L, activation, alpha, a=0.01, sigma_w=2 ** 0.5, refine=False):
    """((γ_∞, a_l) for blocks l = 1..L) of a residual MLP x + α φ(W x) (linear-first, no norm; a Dense embedding of
    gain σ_w; d_in = N): the trunk's five averages through the block (igbsym.engine.finite); γ_∞ is resnet.gamma.
    Odd φ: 0 at every width (odd maps of symmetric data)."""
    if acts.get(activation).odd:
        return tuple((0.0, 0.0) for _ in range(L))
    ops = S.resnet_ops(L, activation, alpha, a=a, sigma_w=sigma_w)
    return tuple(finite.layer_series(ops[:1], ops[1:2], L, where="width.resnet_gamma", refine=refine))


def uneven(activation, norm, a, sigma_w, d_in, widths):
    """[(γ_∞, δ_l)] per hidden layer of an MLP with input dimension d_in and hidden widths N_1..N_L: the first-order
    correction δ = a_in/d_in + Σ_l a_l/N_l (the engine's ratios at a formal N = 1; ``_mlp_series``)."""
    return _mlp_series(len(widths), activation, norm, a, sigma_w, 1 / d_in, [1 / w for w in widths])


def _points(fn, L, activation, norm, a, sigma_w, refine=False):
    a, sigma_w = np.broadcast_arrays(np.asarray(a, float), np.asarray(sigma_w, float))
    out = np.empty(a.shape)
    for i in np.ndindex(a.shape):
        out[i] = fn(series(L, activation, norm, float(a[i]), float(sigma_w[i]), refine)[-1])
    return out


def coefficient(L, activation, norm="none", a=0.01, sigma_w=np.sqrt(2.0)):
    """a_L (NumPy, broadcast over a and σ_w)."""
    return _points(lambda pair: pair[1], L, activation, norm, a, sigma_w)


def gamma_width(L, N, activation, norm="none", a=0.01, sigma_w=np.sqrt(2.0), refine=False):
    """γ_∞ + a_L/N (NumPy, broadcast over N, a, σ_w); ``refine``: the mpmath route's finer discretisation."""
    N, a, sigma_w = np.broadcast_arrays(np.asarray(N, float), np.asarray(a, float), np.asarray(sigma_w, float))
    g = _points(lambda pair: pair[0], L, activation, norm, a, sigma_w, refine)
    c = _points(lambda pair: pair[1], L, activation, norm, a, sigma_w, refine)
    outside(g, c, N, f"width.gamma (L = {L}, activation = {activation}, norm = {norm})")
    return g + c / N


def outside(g, c, N, where):
    """One line where the 1/N series of a point does not hold (|a_L|/N > γ_∞/2, ``finite.validity``): a form never
    returns a value outside its stated condition; the exact chain answers there (README 'Finite width')."""
    for i in np.ndindex(np.shape(g)):
        gi, ci, Ni = float(np.asarray(g)[i]), float(np.asarray(c)[i]), float(np.asarray(N)[i])
        if ci != 0 and not finite.validity(gi, ci, Ni)[0]:   # a_L = 0: no 1/N term (alpha = 0, one ReLU layer)
            raise NumericalError(
                f"{where}: the 1/N series does not hold at N = {Ni:g} (|a_L|/N = {abs(ci) / Ni:.3g} > gamma_inf/2 = "
                f"{gi / 2:.3g}); allowed: N >= {2 * abs(ci) / gi if gi > 0 else 2 * finite.ZERO_REL:.3g}, or the "
                "exact chain at any width: igbsym predict --width N (igbsym.validation.estimate_gamma)")


def check_width(N, where="width"):
    """N: an integer >= 1 (one line otherwise)."""
    if isinstance(N, bool) or not isinstance(N, (int, np.integer)) or N < 1:
        raise InputError(f"{where}: N = {N!r} is not allowed; allowed: an integer width >= 1")
    return int(N)


L_PARAM = Param("L", "integer", "number of hidden layers", structural=True, minimum=1, maximum=L_MAX_FINITE)
NORM_PARAM = Param("norm", "choice", "normalisation after each activation (finite width: none, LayerNorm or "
                                     "RMSNorm after phi)", choices=NORMS, default="none")
PLACEMENT = Param("placement", "choice", "norm after the activation (the only placement with a finite-width map)",
                  choices=("post",), default="post", used_when=lambda case: case.get("norm", "none") != "none",
                  used_text="with a norm only")
N_PARAM = Param("N", "integer", "width of every hidden layer and dimension of the data", minimum=1)
A_DISPLAY = (r"a_L = \lim_{N\to\infty} N\left(\gamma_L(N) - \gamma_L(\infty)\right),\quad "
             r"\gamma_L(N) = \frac{E[\hat G_{ab}]}{E[\hat G_{aa} - \hat G_{ab}]},\quad "
             r"\hat G_{ab} = \frac{1}{N}\sum_{i=1}^{N} y_i(x_a)\, y_i(x_b)")
G_DISPLAY = r"\gamma_L(N) = \gamma_L(\infty) + \frac{a_L}{N} + O(N^{-2})"
VALID = ("the series holds where |a_L|/N <= gamma_L(inf)/2; O(1/N^2) remainder allowance "
         "|a_L/N| max(1e-6, 2|a_L/N|/gamma_L(inf)) (igbsym.engine.finite.validity)")
ACCURACY = Accuracy(1e-6, "Richardson-combined central differences of the ops' kernel maps and nested quadrature "
                          "of the one-unit fourth moments: <= 5e-8 relative measured against the refined route (half "
                          "step, half panel) and 8e-9 against the exact 1/(2(pi-1)) of ReLU + LayerNorm at L = 1; "
                          "stated 1e-6. The mpmath route is that refined double recursion, not a full-precision "
                          "reference")
NOTE = ("d_in = N = every hidden width; the output Linear fresh Gaussian; ratio of expectations over inits. " + VALID
        + ". Odd activations: 0 at every width (symmetric data).")


def _mp(fn):
    def route(**kw):
        return mpmath.mpf(float(fn(**{k: float(v) for k, v in kw.items()})))
    return route


def _coef_case(L, activation, norm, placement="post"):
    if _odd_zero(activation, norm):
        return sp.S.Zero
    if _homogeneous(activation) and norm == "none" and L == 1:
        return sp.S.Zero
    return NumericRoute(
        lambda a, sigma_w: coefficient(L, activation, norm, a, sigma_w),
        _mp(lambda a, sigma_w: _points(lambda pair: pair[1], L, activation, norm, a, sigma_w, refine=True)),
        "delta method through the layers on the two-point empirical kernel (igbsym.engine.finite)",
        ACCURACY.reason, sp.Symbol("a_L"))


def _gamma_case(L, activation, norm, placement="post"):
    if _odd_zero(activation, norm):
        return sp.S.Zero
    return NumericRoute(
        lambda N, a, sigma_w: gamma_width(L, N, activation, norm, a, sigma_w),
        _mp(lambda N, a, sigma_w: gamma_width(L, N, activation, norm, a, sigma_w, refine=True)),
        "depth.gamma + width.coefficient / N", ACCURACY.reason,
        sp.Symbol("gamma_L") + sp.Symbol("a_L") / sp.Symbol("N"))


register(ClosedForm(
    "width.coefficient", "The 1/N coefficient a_L of gamma at the output of an L-hidden-layer MLP of width N "
                               "(d_in = N): gamma_L(N) = gamma_L(inf) + a_L/N + O(1/N^2); " + VALID + ".",
    (L_PARAM, D.ACT, NORM_PARAM, PLACEMENT, D.A, D.SW),
    Provenance(RYH, "chs. 4-5 (the four-point vertex); igb-initial-guessing-bias.txt App. F.1 (the state)", NOTE),
    builder=_coef_case, display=A_DISPLAY, accuracy=ACCURACY))
register(ClosedForm(
    "width.gamma", "gamma at the output of an L-hidden-layer MLP of finite width N (d_in = N), to first order "
                         "in 1/N: depth.gamma + width.coefficient / N; " + VALID + ".",
    (L_PARAM, N_PARAM, D.ACT, NORM_PARAM, PLACEMENT, D.A, D.SW),
    Provenance(RYH, "chs. 4-5; igb-initial-guessing-bias.txt App. F.1", NOTE),
    builder=_gamma_case, display=G_DISPLAY, accuracy=ACCURACY))


# --------------------------------------------------------------------------------------------- residual nets
ALPHA = Param("alpha", "nonnegative", "branch scale: x + alpha phi(W x)")
L_RES = Param("L", "integer", "number of residual blocks", structural=True, minimum=1, maximum=finite.L_MAX_RESIDUAL)
R_DISPLAY = (r"\gamma_L(N) = \gamma_L(\infty) + \frac{a_L}{N} + O(N^{-2}),\quad x_{l} = x_{l-1} + "
             r"\alpha\,\phi(W_l x_{l-1}),\quad a_L = \lim_{N\to\infty} N\left(\gamma_L(N) - \gamma_L(\infty)\right)")


def resnet_gamma(L, N, activation, alpha, a=0.01, sigma_w=np.sqrt(2.0), which="gamma", refine=False):
    """γ_∞ + a_L/N of the residual MLP (``resnet_series``; NumPy, broadcast over N, α, a, σ_w); ``which``:
    'gamma' (that sum) or 'coefficient' (a_L); ``refine``: the mpmath route's finer discretisation."""
    N, alpha, a, sigma_w = np.broadcast_arrays(*(np.asarray(v, float) for v in (N, alpha, a, sigma_w)))
    out = np.empty(N.shape)
    for i in np.ndindex(N.shape):
        g, c = resnet_series(L, activation, float(alpha[i]), float(a[i]), float(sigma_w[i]), refine)[-1]
        if which != "coefficient":
            outside(np.float64(g), np.float64(c), np.float64(N[i]), f"width.resnet_gamma (L = {L}, activation = "
                    f"{activation}, alpha = {float(alpha[i]):g})")
        out[i] = c if which == "coefficient" else g + c / N[i]
    return out


def _resnet_case(L, activation):
    if acts.get(activation).odd:
        return sp.S.Zero
    return NumericRoute(
        lambda N, alpha, a, sigma_w: resnet_gamma(L, N, activation, alpha, a, sigma_w),
        _mp(lambda N, alpha, a, sigma_w: resnet_gamma(L, N, activation, alpha, a, sigma_w, refine=True)),
        "resnet.gamma + a_L/N: the trunk's five averages through x + alpha phi(W x) by the delta method "
        "(igbsym.engine.finite)", ACCURACY.reason, sp.Symbol("gamma_L") + sp.Symbol("a_L") / sp.Symbol("N"))


register(ClosedForm(
    "width.resnet_gamma", "gamma of a linear readout after L residual blocks x + alpha phi(W x) (linear-first, no "
                          "norm, a Dense embedding of gain sigma_w, d_in = N = every width) to first order in 1/N: "
                          "resnet.gamma + a_L/N; " + VALID + ".",
    (L_RES, N_PARAM, D.ACT, ALPHA, D.A, D.SW),
    Provenance(RYH, "chs. 4-5; moments-well-behaved-vs-pathological.txt Secs. 6-7 (the residual block)",
               "d_in = N = every width; the skip path adds the trunk unit's own values, so the block's one-unit "
               "covariance E_i[A(x_i) C A(x_i)^T] needs only the trunk's second moments (engine/finite.py). " + VALID),
    builder=_resnet_case, display=R_DISPLAY, accuracy=ACCURACY))
