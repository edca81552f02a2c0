"""The dominant class fraction max_c G_c (IGB paper App. H, the sorted frequencies): multiclass.max_fraction and
multiclass.max_fraction_cdf, each route by case.

D = inf: E max_c G_c by the 2-d quadrature (moments.max_fraction_exact); its law C = 2 in closed form, C = 3 by
three.max_cdf, C = 4 deterministic on the ordered gaps (chamber.py: relative max(1e-6, 1e-12/(4 g - 1)), both tails),
C >= 5 C E[(Phi(u*/s) - Phi(u_top/s))_+] over the law tables (max_cdf_replicates), exactly 1 - C (1 - F(g)) at
g >= 1/2 on a centred table. Finite D: binary.py at C = 2, the fraction vectors of vectors.py from C = 3."""
from __future__ import annotations

import math

import numpy as np
from scipy import special

from . import chamber, three
from .binary import max_cdf_binary, max_fraction_binary
from .common import ESS_MIN, K_SCRAMBLES, broadcast_flat, probit, relative, replicate_bound
from .law import is_centred, law_table
from .moments import by_gamma, max_fraction_exact
from .tables import det_error
from .three import THREE_ERROR
from .vectors import count_level, max_fraction_sampled, sampled_at_levels


def max_fraction_numpy(gamma, C, D):
    shape, (gm, cc, dd) = broadcast_flat(gamma, C, D)
    out = np.empty(gm.shape)
    inf = np.isinf(dd)
    if inf.any():
        out[inf] = by_gamma(max_fraction_exact, gm[inf], cc[inf])
    for i in np.nonzero(~inf)[0]:
        out[i] = max_fraction_se(float(gm[i]), int(cc[i]), float(dd[i]))[0]
    return out.reshape(shape)


def max_fraction_se(gamma: float, C: int, D: float) -> tuple:
    """(E max_c K_c/D, its standard error) at dataset size D (App. H, the dominant class; counts K multinomial(D, G)
    given the weights). D = inf: max_fraction_exact (relative 1e-12, SE 0); C = 2: exact (max_fraction_binary, SE 0);
    gamma = inf: 1 (one class takes every point). Else max_fraction_sampled: the exact D = inf value plus a sampled
    count-noise correction, its SE stated (relative SE <= MAX_REL_SE where measured, not everywhere)."""
    if math.isinf(D) or math.isinf(gamma):
        return float(max_fraction_exact(gamma, C)[0]), 0.0
    if int(C) == 2 and gamma > 0:
        return float(max_fraction_binary(gamma, int(D))), 0.0
    return max_fraction_sampled(gamma, int(C), D)


def max_fraction_cdf_se(g, gamma: float, C: int, D: int) -> np.ndarray:
    """The stated standard error of multiclass.max_fraction_cdf at finite D, in the value's units (its relative SE
    is SE / value): C >= 3 the scramble SE of max_cdf_sampled (inf where no digit is resolved); 0 where the route is
    exact (C = 2, gamma = inf, C k < D, k >= D)."""
    g = np.atleast_1d(np.asarray(g, float))
    if int(C) == 2 or math.isinf(gamma):
        return np.zeros(g.shape)
    return sampled_at_levels(g, gamma, C, D)[1]


def _max_cdf_finite(g: np.ndarray, gamma: float, C: int, D: int) -> np.ndarray:
    """P(max_c K_c/D <= g) at finite D for the g of one (gamma, C, D): gamma = inf 1{g >= 1} (one class takes every
    point), C = 2 max_cdf_binary, else max_cdf_sampled at the distinct count levels."""
    if math.isinf(gamma):
        return (count_level(g, D) >= D).astype(float)
    if C == 2:
        return max_cdf_binary(count_level(g, D), gamma, D)
    return sampled_at_levels(g, gamma, C, D)[0]


def max_fraction_cdf_numpy(g, gamma, C, D):
    shape, (gg, gm, cc, dd) = broadcast_flat(g, gamma, C, D)
    out = np.empty(gg.shape)
    finite = ~np.isinf(dd)
    for key in set(zip(gm[finite], cc[finite], dd[finite])):
        at = finite & (gm == key[0]) & (cc == key[1]) & (dd == key[2])
        out[at] = _max_cdf_finite(gg[at], float(key[0]), int(key[1]), int(key[2]))
    if (~finite).any():
        out[~finite] = _max_cdf_population(gm[~finite], cc[~finite], gg[~finite])
    return out.reshape(shape)


CHAMBER_C = (4,)   # C where max_fraction_cdf at D = inf is the deterministic ordered-gaps integral (chamber.py)


def _max_cdf_population(gamma, C, g):
    """P(max_c G_c <= g) at D = inf per point: C = 2 erf(Phi^-1(g)/sqrt(2 gamma)) (max(G, 1 - G) <= g <=>
    |Z| <= Phi^-1(g)/s), C = 3 three.max_cdf, C = 4 chamber.max_cdf (both deterministic), C >= 5
    max_cdf_replicates (projected onto [0, 1]: never farther from the truth); gamma in {0, inf} exact."""
    out = np.empty(g.shape)
    for i in range(g.size):
        gm, cc, gg = float(gamma[i]), int(C[i]), float(g[i])
        if gm == 0 or math.isinf(gm):
            out[i] = float(gg >= 1 / cc) if gm == 0 else float(gg >= 1)
        elif cc == 2:
            out[i] = 0.0 if gg < 0.5 else special.erf(probit(gg) / (math.sqrt(gm) * math.sqrt(2)))
        elif cc == 3:
            out[i] = three.max_cdf(gg, gm)
        elif cc in CHAMBER_C:
            out[i] = chamber.max_cdf(gg, gm, cc)[0]
        else:
            value = float(max_cdf_replicates(np.array([gg]), gm, cc)[0].mean(0)[0]) if gg > 1 / cc else 0.0
            out[i] = min(max(value, 0.0), 1.0)
    return out


def max_cdf_replicates(g: np.ndarray, gamma: float, C: int) -> tuple:
    """(per-scramble P(max_c G_c <= g) [K, n_g], deterministic bound [n_g], ess [n_g]) at D = inf from the law tables
    (App. H, the dominant class). max_c G_c is the G of the largest mean (G_c increases in u_c), the classes are
    exchangeable and {argmax u = c} disjoint, so P(max_c G_c <= g) = C P(G_1 <= g, u_1 > max others) =
    C E[(Phi(u*(g)/s) - Phi(u_top/s))_+] given the others (u_1 in (u_top, u*(g)]): the same Rao-Blackwellised rows
    as the cdf, on the plain (uncentred) table: its rows depend on u_top mostly, which the nets' best coordinate and
    the importance sampling drive (centred, the bound was up to 100x wider where the value is near 1, at gamma <=
    0.1, and 0.1 relative at C = 10 with the radius integrated up to its kink). Deterministic bound:
    C E[det_error(Phi(u*/s))] over the rows where the bracket is positive (the root's relative error).
    Where g >= 1/2 and the law's table is centred (is_centred), _max_cdf_upper (exactly 1 - C (1 - F(g))) unless
    fewer than ESS_MIN effective rows carry 1 - F there."""
    g = np.atleast_1d(np.asarray(g, float))
    F, det, ess = np.empty((K_SCRAMBLES, g.size)), np.empty(g.size), np.empty(g.size)
    upper = (g >= 0.5) & is_centred(gamma, C)
    if upper.any():
        F[:, upper], det[upper], ess[upper] = _max_cdf_upper(g[upper], gamma, C)
        upper[upper] = ess[upper] >= ESS_MIN
    if not upper.all():
        tab = law_table(gamma, C, centred=False)
        lead = special.ndtr(tab.top / tab.s)[:, None]

        def bracket(x, Fr, fr, clip, *_):
            raw = Fr + clip                                  # Phi(u*/s) (clipped rows: root below u_top, 0 here)
            term = C * np.maximum(raw - lead, 0.0)
            return term, C * det_error(raw, tab.s) * (term > 0)
        (F[:, ~upper], det_rows), ess[~upper] = tab.scramble_sums(g[~upper], bracket)
        det[~upper] = det_rows.mean(0)
    return F, det, ess


def _max_cdf_upper(g: np.ndarray, gamma: float, C: int) -> tuple:
    """max_cdf_replicates at g >= 1/2: the fractions sum to 1, so at most one class has G_c > g, the events
    {G_c > g} are disjoint and P(max_c G_c <= g) = 1 - C (1 - P(G_1 <= g)) exactly: the law of one fraction with its
    control variates and its whole deterministic bound (LawTable.bounded), times C. Measured against the plain route
    at gamma = 1, C = 4, 10, 100, g in [0.5, 0.95]: relative bounds 4e-11 ... 6e-6 against 1.6e-6 ... 1.4e-4. ess:
    the effective rows of 1 - F (those of F count every row near g = 1, where few carry its complement)."""
    tab = law_table(gamma, C)
    F, _, _, det = tab.bounded(g)
    _, ess = tab.scramble_sums(g, lambda x, Fr, *_: (1 - Fr,))
    return 1 - C * (1 - F), C * det.total(), ess


def max_cdf_relative_bound(g, gamma: float, C: int) -> np.ndarray:
    """A true relative error bound of multiclass.max_fraction_cdf at D = inf, 0 < gamma < inf, C >= 3. C >= 5
    (99.99 %, as law_bound): b = T_FACTOR x SE + the deterministic bound, inf where fewer than ESS_MIN effective rows
    carry the value; relative b/(F_hat - b). C = 4: chamber.max_cdf's deterministic bound, relative the same way.
    C = 3: THREE_ERROR."""
    g = np.atleast_1d(np.asarray(g, float))
    if int(C) == 3:
        return np.full(g.shape, THREE_ERROR)
    if int(C) in CHAMBER_C:
        value, bound = np.array([chamber.max_cdf(float(x), float(gamma), int(C)) for x in g]).T
        return np.where(g <= 1 / int(C), 0.0, relative(value, bound))      # exactly 0 at g <= 1/C
    F, det, ess = max_cdf_replicates(g, gamma, int(C))
    return relative(F.mean(0), replicate_bound(F, det, ess))
