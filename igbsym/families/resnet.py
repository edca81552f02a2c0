"""Residual MLPs x_{l+1} = x_l + α·F_l(x_l): γ after L blocks and the one-block correlation map.

New theory (no seed paper has it; igb-initial-guessing-bias.txt App. I.2 measures IGB in ResNets): the trunk state
(q, c, e = 1 − c, m) of igbsym/spec.py maps through a block by igbsym/ops/residual.py's law, derived in
derivations/resnet.py. Architecture: N(0, I) data → Dense(σ_w) embedding → L blocks → Dense(σ_w) readout, He-type
weights N(0, σ_w²/fan_in); biases N(0, σ_b²) in every Dense (embedding, branches, readout; default 0: none), the
convention of depth.gamma: γ = q_ab/(q − q_ab) of the readout's pre-activations, (σ_w² c q + σ_b²)/(σ_w² e q) on the
trunk state (a bias is zero-mean and independent of the trunk, so the block law keeps its form). Block order
'linear-first': F = Dense → [norm if pre] → φ → [norm if post] (the branch ends in φ: its layer mean m_F = E φ feeds
the trunk mean); 'linear-last': F = [norm] → φ → Dense (He et al. 2016's pre-activation ResNet; the trunk stays
Gaussian with zero mean).
"""
from __future__ import annotations

import mpmath
import numpy as np
import sympy as sp

from .. import activations as acts
from ..errors import NumericalError
import dataclasses

from .. import params as P
from ..params import L_NESTED, RANGE, bias_used
from ..form import Accuracy, ClosedForm, Condition, NumericRoute, Param, Provenance
from .. import registry
from ..engine.finite import L_MAX_RESIDUAL as finite_L_MAX
from ..registry import register
from .. import engine
from ..engine import readout_gammas, states as trunk_states
from ..ops import SHIFT_CANCEL, Act, Dense, Residual, State, compose
from ..spec import BLOCKS, NORMS, resnet_ops, residual_block

SOURCE = "moments-well-behaved-vs-pathological.txt"
L_EXACT = 1          # closed form registered for one block (no norm); deeper nests are long and slow to simplify
L_MAX = 10000       # the recursion costs O(L) (no fixed point to stop at for linear-last blocks)
NESTED_ACTS = tuple(n for n, act in acts.ACTIVATIONS.items() if act.smooth and not act.odd)   # odd phi: gamma = 0
ODD_NESTED = tuple(n for n, act in acts.ACTIVATIONS.items() if act.smooth and act.odd and not Act(n).closed_form)

alpha_ = sp.Symbol("alpha", nonnegative=True)
a_ = sp.Symbol("a", real=True)
sw_ = sp.Symbol("sigma_w", positive=True)
sb_ = sp.Symbol("sigma_b", nonnegative=True)
c_ = sp.Symbol("c", real=True)
m_ = sp.Symbol("m", real=True)

L_PARAM = Param("L", "integer", "number of residual blocks", structural=True, minimum=1, maximum=L_MAX)
ACT = P.ACTIVATION
ALPHA = Param("alpha", "nonnegative", "branch scale: x + alpha F(x)")
NORM = Param("norm", "choice", "normalisation inside the branch", choices=NORMS, default="none")
PLACEMENT = dataclasses.replace(
    P.PLACEMENT, doc="norm before (pre) or after (post) the activation (linear-first blocks)",
    used_when=lambda case: case.get("norm", "none") != "none" and case.get("order", "linear-first") == "linear-first",
    used_text="with a norm in linear-first blocks only")
ORDER = Param("order", "choice", "branch order: linear-first = Dense, [norm], phi; linear-last = [norm], phi, Dense",
              choices=BLOCKS, default="linear-first")
A, SW = P.LEAKY_A, P.SIGMA_W_PARAM

ROUTE_ERROR = ("composition of the block maps: rounding only for relu/leaky_relu/identity/srelu (relative error <= "
               "1e-13 L), the quadrature error of igbsym/spec.py per block for smooth activations")


def _shift_cancels(ops, states) -> bool:
    """True iff some block's srelu sees an input second moment q_φ within 1/64 of 1 (not set to 1 by a norm):
    its mean E φ = (√q_φ − 1)/√(2π) is then a difference of nearly equal doubles, and q_φ, a product of rounded
    block moments, is known to a few ulp only: such a point goes to the mpmath route."""
    for op, s in zip(ops[1:], states):
        head = op.block[:[b.elementwise for b in op.block].index(True)]
        if head and head[-1].degree == 0:     # a norm right before φ: q_φ = 1 exactly
            continue
        q = compose(head, s, "numpy")[-1].q if head else s.q
        if SHIFT_CANCEL * abs(np.sqrt(float(q)) - 1) < 1:   # E φ = (√q_φ − 1)/√(2π): shift/|E φ| > 64
            return True
    return False


def _biased(L, activation, norm, placement, order, alpha, a, sigma_w, sigma_b, backend):
    """γ_L with biases σ_b > 0 in every Dense (the readout's too): engine.readout_gammas on the same ops."""
    ops = resnet_ops(L, activation, alpha, norm, placement, order, a, sigma_w, sigma_b=sigma_b)
    return readout_gammas(ops[:1], ops[1:2], L, Dense(None, sigma_w, sigma_b), backend, "resnet.gamma", last=True)[-1]


def _gamma_np(L, activation, norm, placement, order):
    def fn(alpha, a, sigma_w, sigma_b=0.0):
        alpha, a, sigma_w, sigma_b = np.broadcast_arrays(*(np.asarray(v, float) for v in (alpha, a, sigma_w,
                                                                                           sigma_b)))
        out = np.empty(alpha.shape)
        for idx in np.ndindex(alpha.shape):
            if sigma_b[idx] > 0:
                out[idx] = float(_biased(L, activation, norm, placement, order, *(float(v[idx]) for v in (
                    alpha, a, sigma_w, sigma_b)), "numpy"))
                continue
            ops = resnet_ops(L, activation, float(alpha[idx]), norm, placement, order, float(a[idx]),
                             float(sigma_w[idx]))
            if activation != "srelu":
                out[idx] = float(engine.walk(ops[:1], ops[1:2], L, "numpy", "resnet.gamma", last=True)[-1])
                continue
            states = trunk_states(ops)
            if _shift_cancels(ops, states):
                with mpmath.workdps(40):
                    g = _gamma_mp(L, activation, norm, placement, order)(
                        *(mpmath.mpf(float(v[idx])) for v in (alpha, a, sigma_w)))
                if not abs(g) < 1e300:
                    raise NumericalError(f"resnet.gamma: gamma = {mpmath.nstr(g, 5)} exceeds the double range")
                out[idx] = float(g)
            else:
                out[idx] = float(states[-1].c) / float(states[-1].e)
        return out
    return fn


def _gamma_mp(L, activation, norm, placement, order):
    def fn(alpha, a, sigma_w, sigma_b=mpmath.mpf(0)):
        if sigma_b > 0:
            return _biased(L, activation, norm, placement, order, alpha, a, sigma_w, sigma_b, "mpmath")
        if acts.get(activation).odd:        # odd φ without bias: 0 exactly (gamma_case)
            return mpmath.mpf(0)
        ops = resnet_ops(L, activation, alpha, norm, placement, order, a, sigma_w)
        return engine.walk(ops[:1], ops[1:2], L, "mpmath", "resnet.gamma", last=True)[-1]
    return fn


def finite_supported(case) -> bool:
    """A resnet.gamma case with a finite-width form (width.resnet_gamma): linear-first blocks without norm,
    L <= igbsym.engine.finite.L_MAX_RESIDUAL (8)."""
    return case.get("norm", "none") == "none" and case.get("order", "linear-first") == "linear-first" \
        and case.get("L", 1) <= finite_L_MAX


def _width_case(L, activation, N):
    """resnet.gamma at finite N: width.resnet_gamma's value (looked up in the registry at evaluation time: the width
    family builds on this one)."""
    return registry.delegate(
        "width.resnet_gamma", dict(L=L, N=N, activation=activation),
        "width.resnet_gamma: resnet.gamma + a_L/N (the delta method on the trunk's five averages)",
        "that of width.resnet_gamma (1e-6 relative)", sp.Symbol("gamma_L") + sp.Symbol("a_L") / sp.Symbol("N"),
        ignore=("sigma_b",))


def gamma_case(L, activation, norm="none", placement="pre", order="linear-first", N=np.inf):
    """Exact form for closed-form activations, no norm and L <= L_EXACT (with σ_b where ``bias_used``); else the
    composed numeric route (the SymPy backend of the same maps gives any nested case on demand). Odd φ (identity,
    tanh, erf) at σ_b = 0: 0 exactly at every L: Dense, odd φ, the norms (LN, RMSNorm and full-batch BN commute with
    h → −h) and x + αF(x) are odd maps, so each output node is an odd function of the symmetric data and its centre
    E_x f(x) vanishes (igb-initial-guessing-bias.txt App. G.2); a bias, shared by the data, breaks the symmetry."""
    if N != np.inf:
        return _width_case(L, activation, N)
    odd = acts.get(activation).odd
    if odd and norm != "none":                      # biases enter without a norm only (SB_UNUSED)
        return sp.S.Zero
    closed = Act(activation).closed_form
    if closed and L <= L_EXACT and norm == "none":
        sb = sb_ if bias_used(dict(activation=activation, norm=norm)) else 0
        s = trunk_states(resnet_ops(L, activation, alpha_, norm, placement, order, a_, sw_, sigma_b=sb), "sympy")[-1]
        r = Dense(None, sw_, sb).sym(s)             # the readout (keeps c/e without a bias)
        return sp.simplify(r.c / r.e)
    return NumericRoute(_gamma_np(L, activation, norm, placement, order),
                        _gamma_mp(L, activation, norm, placement, order),
                        f"{L}-fold composition of the residual block map (igbsym/ops/residual.py)"
                        + ("; 0 exactly at sigma_b = 0 (odd phi, symmetric data)" if odd else ""), ROUTE_ERROR,
                        sp.Symbol("c_L") / (1 - sp.Symbol("c_L")))


def _nested_per_block(case) -> bool:
    """A case whose branch φ is smooth and not odd and does not follow a full-batch BatchNorm (which resets the
    branch to (1, 0, 1, 0): then φ's moments are 1-d and cached): every block needs the nested quadrature."""
    return case.get("activation") in NESTED_ACTS and case.get("norm", "none") != "batchnorm"


SB_PARAM = Param("sigma_b", "nonnegative", "bias sd: every Dense (embedding, branches, readout) adds B ~ N(0, "
                 "sigma_b^2), depth.gamma's convention; default 0 (no biases)", default=0.0, used_when=bias_used,
                 used_text="with norm=none, an activation other than srelu and N = inf only")
SB_UNUSED = Condition(sp.Eq(sb_, 0), "sigma_b = 0 (biases enter with norm=none, an activation other than srelu and "
                                     "N = inf only; width.resnet_gamma has no biases)",
                      applies=lambda case: not bias_used(case))
SB_RANGE = Condition(sp.Le(sb_, 10**15 * sw_), "sigma_b <= 1e15 sigma_w (as depth.gamma: gamma_1 ~ sigma_b^2/"
                                               "sigma_w^2 stays within 1e30)", applies=bias_used)
L_BIAS_ODD = 4       # tanh, erf with biases: the 50-digit nested quadrature costs 1-30 s a block (30 s near c = 1)
BIAS_NESTED = Condition(sp.Or(sp.Le(L_PARAM.symbol(), L_BIAS_ODD), sp.Eq(sb_, 0)),
                        f"L <= {L_BIAS_ODD} for {', '.join(ODD_NESTED)} with sigma_b > 0 (a bias gives the trunk a "
                        "correlation: a nested quadrature per block, up to 30 s at 50 digits)",
                        applies=lambda case: case.get("activation") in ODD_NESTED and bias_used(case))
N_PARAM, N_FINITE = P.width_param("width.resnet_gamma", finite_supported,
                                  f"norm none, order linear-first and L <= {finite_L_MAX}")
NESTED_DEPTH = Condition(sp.Le(L_PARAM.symbol(), L_NESTED),
                         f"L <= {L_NESTED} for {', '.join(NESTED_ACTS)} without batchnorm (each block is a nested "
                         "quadrature, at 30 and 50 digits ~1 s; the trunk has no fixed point to stop at)",
                         applies=_nested_per_block)

register(ClosedForm(
    "resnet.gamma", "gamma of a linear readout after L residual blocks x + alpha F(x) (infinite width, N(0, I) "
                    "data, Dense embedding, biases N(0, sigma_b^2) in every Dense, default 0): the trunk's centred "
                    "and shared second moments add.",
    (L_PARAM, ACT, NORM, PLACEMENT, ORDER, ALPHA, A, SW, SB_PARAM, N_PARAM),
    Provenance(SOURCE, "Secs. 6-7 (residual nets; no formula in the seeds)",
               "new: derivations/resnet.py derives the block law from x' = x + alpha F(x) with a fresh Dense in F; "
               "finite N: width.resnet_gamma (Roberts-Yaida-Hanin chs. 4-5)"),
    builder=gamma_case, conditions=RANGE + (NESTED_DEPTH, N_FINITE, SB_UNUSED, SB_RANGE, BIAS_NESTED),
    accuracy=Accuracy(1e-12, "finite N: width.resnet_gamma's route, relative error <= 1e-6 (central differences and "
                             "nested quadrature, igbsym.engine.finite); N = inf: 1e-12",
                      per_case=lambda case: 1e-6 if case.get("N", np.inf) != np.inf else 1e-12),
    # the closed form (L = 1, no norm) printed and used by mp, but NumPy composes the maps: the lambdified nest has
    # srelu's (σ_w² − 1) cancellation with no way to flag it
    kernel=lambda L, activation, norm, placement, order, alpha, a, sigma_w, sigma_b=0.0, N=np.inf: (
        _width_case(L, activation, N).numpy(alpha=alpha, a=a, sigma_w=sigma_w) if N != np.inf
        else _gamma_np(L, activation, norm, placement, order)(alpha, a, sigma_w, sigma_b))))


def corr_map_expr(activation):
    """c' after one linear-first block without norm, from the trunk state q = 1, c, e = 1 − c, mean m (SymPy)."""
    block = residual_block(activation, "none", "pre", "linear-first", a_, sw_)
    out = Residual(alpha_, block).sym(State(sp.S.One, c_, 1 - c_, m_, False))
    return sp.simplify(out.c)


register(ClosedForm(
    "resnet.corr_map", "One linear-first residual block (Dense, phi; no norm) maps the trunk's shared fraction c and "
                       "layer mean m (in units of sqrt(q)) to the next c: the arc-cosine map plus the skip path.",
    (Param("c", "real", "shared fraction c = gamma/(1+gamma) of the trunk"),
     Param("m", "real", "trunk layer mean E[x_i] in units of sqrt(E[x_i^2])"),
     Param("activation", "choice", "positively homogeneous activation", choices=acts.homogeneous_names()),
     ALPHA, A, SW),
    Provenance(SOURCE, "Sec. 6 (residual propagation; no formula in the seeds)",
               "new: derivations/resnet.py; homogeneity makes the map independent of q once m is in units of sqrt(q)"),
    builder=corr_map_expr,
    conditions=(Condition(sp.Le(sp.Abs(c_), 1), "-1 <= c <= 1"),
                Condition(sp.Le(sp.Abs(m_), 1), "-1 <= m <= 1 (E[x_i]^2 <= E[x_i^2]; beyond, the map has a pole, "
                                               "e.g. near m = -1.88 for alpha sigma_w = 1)")) + RANGE))
