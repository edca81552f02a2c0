"""Functionals of the law of one G_c (IGB paper App. H, App. I.1.3): multiclass.p_empty, n_empty and entropy.

E psi(G_c) = psi(1) - int psi'(g) F(g) dg (law_functional) over the law tables, with per-scramble replicates, so
their relative bounds are stated as the law's (p_empty_relative_bound, entropy_se). p_empty on a centred table
radially tilts the centred others (radial_tilt: the rare empty class is carried by spread others; one
cross-entropy step on a pilot scramble picks the scale of the radial rule, the likelihood ratio is exact).
Entropy at finite D: each count is binomial(D, G_c), so E H(K/D) = C E psi_D(G_c) with the kernel
psi_D(g) = E h(K/D) (observed.py): the same functional as at D = inf with psi_D for -g log g. C = 2: binary.py;
C = 3: three.py (deterministic)."""
from __future__ import annotations

import math

import mpmath
import numpy as np
from scipy import special

from ..errors import NumericalError
from ..functions import mp_log_ncdf
from ..gauss import composite_gauss_kronrod, composite_gauss_legendre
from . import three
from .binary import binary_entropy, p_empty_binary
from .common import (ESS_MIN, SQ2PI, broadcast_flat, mp_log_concave_integral, mp_mills, probit, qmc_estimate, relative,
                     scramble_se)
from .law import law_table
from .moments import VAR_REL, var_numpy
from .observed import entropy_kernel
from .tables import CHUNK, ROW_Z_MIN, LawTable
from .three import THREE_ERROR

SUPPORT_Z = 10.0         # above the support every row's P(G_c <= g | others) is within Phi(-10) = 7.6e-24 of 1
SUPPORT_PANELS = 24      # Gauss-Kronrod panels (7-15 nodes) uniform in probit g over the support (16: the 7-node
#                          check stated 3e-7 relative in Var G_c at (C, gamma) = (4, 0.01), 24: 1e-8, the floor)
T_MAX = 50.0             # p_empty: the t = -D log(1 - g) rule stops at T_MAX (beyond: <= e^-50, in the bound) ...
T_CAP = 720.0            # ... or further, up to T_CAP (e^-720 = 2e-313), where the value is a rare event
T_NEGLIGIBLE = 1e-8      # the cut e^-t_max (in the bound) is left where it is below this fraction of the rest
T_STEP = 4.0             # t panels of p_empty: the 7-node check rule's error on e^-t over 4 is ~7e-11 relative (step 2
#                          gave the same bounds at 1.6-1.7x the cost: (0.01, 4, 1e4) 38 s -> 23 s)


def support(tab: LawTable) -> tuple:
    """(g_lo, g_hi) such that below g_lo every row's P(G_c <= g | others) is <= Phi(-ROW_Z_MIN) or its root lies under
    the row's u grid (clip, G_hat < 1e-17 there), and above g_hi it is >= 1 - Phi(-SUPPORT_Z): the grid values at or
    below u = -ROW_Z_MIN s (above u = SUPPORT_Z s), the smallest (largest) over the rows."""
    h = tab.rel_u[1] - tab.rel_u[0]
    base, n_u = tab.top + tab.rel_u[0], tab.P.shape[1]
    r = np.arange(tab.top.size)
    i_lo = np.clip(np.floor((np.maximum(-ROW_Z_MIN * tab.s, base) - base) / h).astype(int), 0, n_u - 1)
    i_hi = np.clip(np.ceil((np.minimum(SUPPORT_Z * tab.s, tab.top + tab.rel_u[-1]) - base) / h).astype(int), 0,
                   n_u - 1)
    return float(special.ndtr(tab.P[r, i_lo].min())), float(special.ndtr(tab.P[r, i_hi].max()))


def law_functional(tab: LawTable, psi, dpsi, below, above, g_top: float = 1.0, breaks=()) -> tuple:
    """(per-scramble E[psi(G_c)] [K_SCRAMBLES], deterministic error bound, per-scramble integral -int psi' F over the
    rule [K_SCRAMBLES], the value less psi(g_end) without its cancellation) for a psi of bounded variation on [0, 1]:
    E psi(G) = psi(1) - int_0^1 psi'(g) F(g) dg (integration by parts against the law F of one G_c, App. H), so the
    functional inherits the law's randomised-QMC replicates. Over the support [g_lo, g_hi] (support), cut at g_top:
    SUPPORT_PANELS panels uniform in probit g plus the caller's ``breaks`` (probits), the 15-point Gauss-Kronrod rule
    on each; above min(g_hi, g_top) F is taken as 1, i.e. the term psi(g_end). Bound: the law's deterministic parts
    (Deterministic) integrated against |psi'|, F_hat(g_lo) x below(g_lo) (= int_0^g_lo |psi'|, F <= F(g_lo) there),
    (1 - F_hat(g_end)) x above(g_end) (= int_g_end^1 |psi'|) and the rule's own error, stated as its difference from
    the 7-point Gauss rule on the same values (the lower rule's error bounds the higher's: the rules converge
    geometrically on the smooth F); inf where fewer than ESS_MIN effective rows carry the functional (a rare event
    the rows do not reach: no digit claimed)."""
    g_lo, g_hi = support(tab)
    g_end = min(g_hi, g_top)
    if not g_lo < g_end:
        g_end = g_lo
    p_lo, p_end = probit(g_lo), probit(g_end)
    edges = np.unique(np.concatenate([np.linspace(p_lo, p_end, SUPPORT_PANELS + 1),
                                      [b for b in breaks if p_lo < b < p_end]]))
    p, wk, wg = composite_gauss_kronrod(edges) if edges.size > 1 else (np.zeros(0),) * 3
    g, dg = special.ndtr(p), np.exp(-p * p / 2) / SQ2PI                            # dg = phi(p) dp
    d = dpsi(g)
    dw, n = d * wk * dg, g.size
    F, _, ess, parts = tab.bounded(np.concatenate([g, [g_lo, g_end]]), node_weights=np.concatenate([dw, [0, 0]]))
    integral = -(F[:, :n] @ dw)
    check = -(F[:, :n] @ (d * wg * dg))
    row_det = parts.total()
    Fm = F.mean(0)
    det = np.abs(dw) @ row_det[:n] + abs(float(integral.mean() - check.mean()))
    det += (Fm[-2] + row_det[-2]) * below(g_lo) + (max(1 - Fm[-1], 0.0) + row_det[-1]) * above(g_end)
    return psi(g_end) + integral, float(det) if ess >= ESS_MIN else math.inf, integral


def _t_breaks(D: int, t_max: float) -> np.ndarray:
    """p_empty's breakpoints (probits of g = 1 - e^(-t/D)): log t uniform (step 2) from e^-25 to 1, then t uniform
    (step T_STEP) to t_max, so each panel sees e^-t vary by at most e^T_STEP."""
    t = np.concatenate([np.exp(np.arange(-25.0, 0.0, 2.0)), np.arange(1.0, t_max + 1, T_STEP)])
    return probit(-np.expm1(-t / D))


def p_empty_replicates(gamma: float, C: int, D: int) -> tuple:
    """(per-scramble P(class c gets no point of D) [K_SCRAMBLES], deterministic bound) at C >= 4: E[(1 - G_c)^D] =
    int_0^1 D (1 - g)^(D-1) F(g) dg by law_functional on the t breakpoints up to t_max, where F is taken as 1 (the
    term e^-t_max, its error <= e^-t_max in the bound) (App. I.1.3, the empty classes). t_max starts at T_MAX; where
    e^-t_max is not below T_NEGLIGIBLE x the rest (the part below t_max, a rare event) it moves to where it is
    (at least doubling, at most T_CAP). Mean = multiclass.p_empty, SD/sqrt(K) its standard error."""
    D, tab = int(D), law_table(gamma, C)
    if tab.centred:
        tilt = tab.memo(("tilt", D), lambda: radial_tilt(tab, D))
        if abs(tilt - 1) > TILT_MIN:
            tab = law_table(gamma, C, True, tilt)
    return tab.functional(("p_empty", D), lambda: _p_empty_functional(tab, D))


TILT_MIN = 0.05       # p_empty on a centred table: tilt the others radially where the pilot asks for more than 5 %
TILT_RANGE = (0.5, 4.0)


def radial_tilt(tab: LawTable, D: int) -> float:
    """The radial tilt lambda of the centred others for p_empty(D) (App. H): one cross-entropy step on the first
    scramble's rows of the untilted table. The rare event {G_c <~ 1/D} is carried by rows whose centred others are
    spread (log G_c is concave in them), so the rows' contributions c_r = w_r int |psi'| P(G_c <= g | others) dg
    (psi = (1 - g)^D; 2-node panels on the t rule to T_CAP) weight their radii: lambda^2 = sum c_r |xi_c|^2 /
    ((C - 2) sum c_r), the scale of the Gaussian family closest to the rows that carry the value. Rounded to 0.01
    (tables are shared between nearby D) and clipped to TILT_RANGE; 1 where the pilot sees no contribution."""
    if tab.C < 3:                 # no centred others to spread (C - 2 = 0 dimensions)
        return 1.0
    pilot = tab.first_scramble()
    g_lo, g_hi = support(pilot)
    g_end = min(g_hi, -math.expm1(-T_CAP / D))
    if not g_lo < g_end:
        return 1.0
    p_lo, p_end = probit(g_lo), probit(g_end)
    edges = np.unique(np.concatenate([np.linspace(p_lo, p_end, SUPPORT_PANELS + 1),
                                      [b for b in _t_breaks(D, T_CAP) if p_lo < b < p_end]]))
    p, w = composite_gauss_legendre(edges, 2)
    g = special.ndtr(p)
    node = w * np.exp(-p * p / 2) / SQ2PI * D * np.exp((D - 1) * np.log1p(-g))     # |psi'(g)| dg
    c = np.zeros(pilot.top.size)
    for a in range(0, g.size, CHUNK):
        c += pilot.rows(g[a:a + CHUNK])[0] @ node[a:a + CHUNK]
    c *= pilot.weight
    if not c.sum() > 0:
        return 1.0
    return float(np.clip(round(math.sqrt((c @ pilot.radius2) / ((tab.C - 2) * c.sum())), 2), *TILT_RANGE))


def _p_empty_functional(tab: LawTable, D: int) -> tuple:
    """p_empty_replicates on one table (the t_max loop)."""
    t_max = T_MAX
    while True:
        reps, det, integral = law_functional(
            tab, lambda g: np.exp(D * np.log1p(-g)), lambda g: -D * np.exp((D - 1) * np.log1p(-g)),
            lambda g: -math.expm1(D * math.log1p(-g)), lambda g: math.exp(D * math.log1p(-g)),
            -math.expm1(-t_max / D), _t_breaks(D, t_max))
        rest = float(integral.mean())      # the part below t_max (<= the value), free of e^-t_max's cancellation
        if t_max >= T_CAP or math.exp(-t_max) <= T_NEGLIGIBLE * rest:
            return reps, det
        t_max = T_CAP if rest <= 0 else min(T_CAP, max(2 * t_max, 2 - math.log(T_NEGLIGIBLE * rest)))


def p_empty_numpy(gamma, C, D):
    shape, (gm, cc, dd) = broadcast_flat(gamma, C, D)
    out = np.empty(gm.shape)
    for i, (gamma_, C_, D_) in enumerate(zip(gm, cc.astype(int), dd.astype(int))):
        if gamma_ == 0:
            out[i] = math.exp(D_ * math.log1p(-1 / C_))      # (1 - 1/C)^D: the power amplifies 1 - 1/C's rounding
        elif math.isinf(gamma_):
            out[i] = 1 - 1 / C_
        elif C_ == 2:
            out[i] = p_empty_binary(gamma_, D_)
        elif C_ == 3:
            out[i] = three.p_empty(gamma_, D_)      # deterministic, relative THREE_ERROR, rare events included
        elif D_ <= 2:
            out[i] = p_empty_by_moments(gamma_, C_, D_)
        else:
            out[i] = min(max(float(p_empty_replicates(gamma_, C_, D_)[0].mean()), 0.0), 1.0)
    return out.reshape(shape)


def p_empty_by_moments(gamma: float, C: int, D: int) -> float:
    """E[(1 - G_c)^D] for D <= 2 from the first two moments: 1 - 1/C (E G_c = 1/C) and (1 - 1/C)^2 + Var G_c (the
    2-d quadrature, relative VAR_REL; a sum of positive terms), C >= 3."""
    return (1 - 1 / C) if D == 1 else (1 - 1 / C) ** 2 + float(var_numpy(gamma, C))


def p_empty_relative_bound(gamma: float, C: int, D: int) -> float:
    """A true relative error bound of multiclass.p_empty (App. H, E[(1 - G_c)^D]) at the confidence of law_bound:
    C >= 4: b = T_FACTOR x SE (over the scrambles) + the deterministic bound of law_functional, so
    |p_hat - p|/p <= b/(p_hat - b) where p_hat > b, inf otherwise (no digit claimed); D <= 2 VAR_REL
    (p_empty_by_moments). C = 3: THREE_ERROR; C = 2: 2e-9 (deterministic routes)."""
    if int(C) == 3:
        return THREE_ERROR
    if int(C) == 2 or gamma == 0 or math.isinf(gamma):
        return 2e-9
    if int(D) <= 2:
        return VAR_REL
    return float(relative(*qmc_estimate(*p_empty_replicates(gamma, int(C), int(D)))))


def p_empty_se(gamma: float, C: int, D: int) -> float:
    """The standard error of multiclass.p_empty: over the scrambles plus the deterministic bound at C >= 4 (the law's
    randomised QMC), and the (relative THREE_ERROR / 2e-9) deterministic error at C <= 3."""
    if int(C) <= 3 or gamma == 0 or math.isinf(gamma) or int(D) <= 2:
        return float(p_empty_relative_bound(gamma, C, D) * p_empty_numpy(gamma, C, D))
    reps, det = p_empty_replicates(gamma, int(C), int(D))
    return float(scramble_se(reps)) + det


def p_empty_upper(gamma: float, C: int, D: int) -> float:
    """p_hat + b (C >= 4): a true upper bound of p_empty at the confidence of law_bound, where no digit is resolved."""
    return min(1.0, sum(qmc_estimate(*p_empty_replicates(gamma, int(C), int(D)))))


def p_empty_mp(gamma, C, D):
    if int(C) != 2:
        raise NumericalError("multiclass.p_empty: no mpmath reference for C >= 3 (randomised QMC route; its standard "
                             "error is multiclass.p_empty_se)")
    s, D = mpmath.sqrt(gamma), int(D)
    return mp_log_concave_integral(lambda z: -z * z / 2 + D * mp_log_ncdf(-s * z),
                                   lambda z: -z - D * s * mp_mills(-s * z)) / mpmath.sqrt(2 * mpmath.pi)


def vector_route(exact, sampled, gamma, C, D, *more):
    """Evaluate per point: ``exact(gamma, *more)`` (vectorised) where C = 2 and D = inf (G_0 = Phi(sqrt(gamma) Z), the
    igb law, gives closed forms), else the Monte Carlo ``sampled(gamma, C, D, *more)`` over fraction vectors."""
    shape, (gm, cc, dd, *rest) = broadcast_flat(gamma, C, D, *more)
    binary = (cc == 2) & np.isinf(dd)
    out = np.empty(gm.shape)
    out[binary] = exact(gm[binary], *[r[binary] for r in rest])
    for i in np.nonzero(~binary)[0]:
        out[i] = sampled(gm[i], int(cc[i]), dd[i], *[r[i] for r in rest])
    return out.reshape(shape)


def entropy_law(gamma: float, C: int, D: float = math.inf) -> tuple:
    """(per-scramble entropy C E[psi(G_c)] [K_SCRAMBLES], deterministic bound) at C >= 4, from the law of one G_c
    (law_functional): a functional of the randomised QMC law, not of sampled fraction vectors. D = inf:
    psi(g) = -g log g; finite D: psi_D(g) = E h(K/D), K ~ binomial(D, g) (observed.entropy_kernel), the observed
    entropy being a sum of one-class terms whose counts are binomial(D, G_c). The tails of int |psi'| use concavity
    (psi_D is concave, psi_D(0) = psi_D(1) = 0, psi_D <= h <= 1/e): int_0^g |psi'| = psi(g) where psi'(g) >= 0, else
    <= 2/e (and symmetrically above)."""
    tab = law_table(gamma, C)
    if math.isinf(D):
        def psi(g):
            return -special.xlogy(g, g)

        def below(g):      # int_0^g |1 + log x| dx = -g log g for g <= 1/e (bounded by 1/e + g beyond)
            return -g * math.log(g) if 0 < g <= math.exp(-1) else (g + math.exp(-1) if g > 0 else 0.0)
        parts = (psi, lambda g: -(1 + np.log(g)), below, lambda g: (1 - g) * (1 + abs(math.log(g))))
    else:
        D = int(D)

        def kernel(g):
            return entropy_kernel(g, 1 - np.asarray(g, float), D)

        def tail(rising):
            def bound(g):
                value, slope = (float(x) for x in kernel(g))
                return value if (slope >= 0) == rising else 2 / math.e
            return bound
        parts = (lambda g: kernel(g)[0], lambda g: kernel(g)[1], tail(True), tail(False))
    return tab.functional(("entropy", D), lambda: tuple(C * x for x in law_functional(tab, *parts)[:2]))


def entropy_numpy(gamma, C, D):
    return vector_route(binary_entropy, lambda gm, cc, dd: entropy_se(gm, cc, dd)[0], gamma, C, D)


def entropy_se(gamma: float, C: int, D: float) -> tuple:
    """(E entropy of the observed fractions K_c/D, its standard error) (App. H; D = inf: of G). No vector is sampled:
    E H(K/D) = C E psi_D(G_c) over the law of one G_c (observed.py). C = 2: binary_entropy (deterministic);
    C = 3: three.entropy (relative THREE_ERROR); C >= 4: entropy_law (randomised QMC law: SE over the scrambles, its
    deterministic bound added to it); gamma = 0: C psi_D(1/C) (G = 1/C), gamma = inf: 0. The SE is 0 on the
    deterministic routes; relative SE = SE/value."""
    C, finite = int(C), math.isfinite(D)
    if gamma == 0:
        value = C * float(entropy_kernel(1 / C, 1 - 1 / C, int(D))[0]) if finite else math.log(C)
        return value, 0.0
    if math.isinf(gamma) or (finite and D < 2):
        return 0.0, 0.0
    se = 0.0
    if C == 2:
        value = float(binary_entropy(np.array([gamma]), D)[0])
    elif C == 3:
        value = three.entropy(gamma, D)
    else:
        reps, det = entropy_law(gamma, C, D)
        value, se = float(reps.mean()), float(scramble_se(reps)) + det
    return min(max(value, 0.0), math.log(C)), se
