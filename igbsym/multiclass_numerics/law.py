"""The law of one class fraction G_c (IGB paper App. H): multiclass.cdf and multiclass.pdf, and their stated bounds.

C = 2: the igb law Phi(sqrt(gamma) Z) in closed form; C = 3: the deterministic 1-d integral of three.py (relative
THREE_ERROR); C >= 4: the randomised-QMC law tables (tables.LawTable on the base points of nets.py), centred or plain
as is_centred says (the measured crossover of the stated bound), memoised (law_table). law_bound / law_relative_bound
give the bound of each value at 99.99 %. Measured (is_centred) at g in [1/(2C), 2/C]: <= 1e-7 relative for gamma in
[0.01, 0.3] at every C in [4, 10^4] and up to gamma = 10 at C = 4; 3e-7 ... 1e-6 at gamma = 1e-3; at gamma = 1
<= 5e-8 up to C = 10, 4e-7 ... 1e-5 above; 1e-6 ... 8e-5 at gamma = 3; the plain tables' 1e-7 ... 1e-5 at gamma = 10
and <= 3e-6 beyond."""
from __future__ import annotations

import math

import numpy as np
from scipy import special

from . import three
from .common import C_MAX, K_SCRAMBLES, broadcast_flat, probit, relative, replicate_bound, scramble_se
from .nets import SPHERE_RULES, other_means, radial_nodes, radial_rows
from .products import BINNED_FROM, binned_log_cdf_of_max, core_cdf, law_grid
from .spherical import power_feature_means, power_features
from .tables import LawTable
from .three import THREE_ERROR

_MEMO = 4                # law tables kept (up to ~120 MB each at 2^16 rows)


CENTRE_GAMMA = ((3, 0.5), (4, 10.0), (19, 5.0), (30, 4.0), (2000, 3.0), (C_MAX, 2.0))   # (up to C, centre at gamma <=)


def is_centred(gamma: float, C: int) -> bool:
    """Whether the table of (gamma, C) centres the others (spherical-radial rows, LawTable) rather than sampling them
    plainly. Both are unbiased; the thresholds are the measured crossovers of the stated relative bound of the cdf at
    g in [0.2/C, 2/C] (max over g): centred, <= 3e-7 at gamma = 0.1 for every C in [4, 10^4] (plain: 1e-3 ... 1e-4),
    at gamma = 3 1.4e-6 ... 1.6e-5 up to C = 30 (plain 1.7e-5 ... 4e-5); plain wins from gamma = 30 at C = 4 (2.8e-6
    vs 7.3e-6), 10 at C = 5, 5 ... 6 at C = 9 ... 20, 4 ... 5 at C = 30, 3 ... 4 at C = 100 and 1000 (with the
    degree-14 control variates: at C = 10, gamma = 5, 5.4e-6 against 2.0e-5; at C = 1000, gamma = 3, 3.3e-5 against
    4.9e-5): the centred rows' integrand has structure at r ~ 1/sqrt(gamma), in the radius and the direction alike. C
    = 2 has no centred dimension (plain); C = 3 (the engine's test bed: multiclass.cdf is deterministic there) keeps
    0.5."""
    return C >= 3 and gamma <= next(limit for top, limit in CENTRE_GAMMA if C <= top)


def build_table(gamma: float, C: int, centred: bool, tilt: float = 1.0) -> LawTable:
    """The law table of one (gamma, C) on the base points u = sqrt(gamma) xi. Plain: the others of other_means (Gumbel
    importance-sampled top, weights self-normalised per scramble). Centred (LawTable): the centred others of
    radial_rows, directions by randomised QMC and radii by the Gauss rule of their chi law, so the radius the
    bulk of the law depends on (G_c is quadratic in the centred others at small gamma) is integrated, not sampled;
    from C = 6 the directions carry their power-sum control variates (LawTable.controlled); the table's radial_error
    compares the first scramble with the half rule. ``tilt`` (centred only; radial_tilt):
    the radii are scaled to tilt r, whose likelihood ratio is exact, tilt^(C-2) exp(-(tilt^2 - 1) r^2/2) (mean 1)."""
    if not centred:
        if tilt != 1.0:
            raise ValueError("build_table: a radial tilt needs the centred table")
        base, weight = other_means(C)
        return _rows_table(gamma, C, base.reshape(-1, C - 1), (weight / weight.sum(1, keepdims=True)).reshape(-1))
    n = radial_nodes(C)

    def check() -> LawTable:            # the first scramble's directions on the half rule
        xi, weight, group, _ = radial_rows(C, n // 2, tilt, 1)
        return _rows_table(gamma, C, xi, weight * K_SCRAMBLES, group)
    xi, weight, group, theta = radial_rows(C, n, tilt)
    features = None if C in SPHERE_RULES or C < 6 else power_features(theta) - power_feature_means(C - 1)
    return _rows_table(gamma, C, xi, weight, group, check, features)


def _rows_table(gamma: float, C: int, xi: np.ndarray, weight: np.ndarray, group: int | None = None,
                check=None, features: np.ndarray | None = None) -> LawTable:
    """A law table on the rows xi [rows, C - 1] (standard units, descending) with weights summing to 1 per scramble
    (K_SCRAMBLES of them): plain (group None) or centred, ``group`` contiguous rows (radial nodes) per direction,
    ``features`` [K, directions, f] the directions' control variates less their exact means (LawTable.controlled)."""
    rel, (c0, c1), rel_u, ker, dker = law_grid(C)
    kernels = np.concatenate([ker, dker], 1)
    core, above = kernels[c0:c1], kernels[c1:].sum(0)       # H = 0 below the core and 1 above it (see law_grid)
    u = math.sqrt(gamma) * xi
    eta = 0.0
    if C >= BINNED_FROM:
        log_h, eta_rows = binned_log_cdf_of_max(u, C)
        H, eta = np.exp(log_h), float(eta_rows.max())
    else:
        H = core_cdf(u, u[:, :1] + rel[None, c0:c1])
    both = H @ core + above
    G, dG = np.clip(both[:, :ker.shape[1]], 1e-300, 1 - 1e-16), both[:, ker.shape[1]:]
    centred = group is not None
    return LawTable(gamma, C, u[:, 0].copy(), rel_u, G, dG, weight, eta, centred, (xi * xi).sum(1) if centred else None,
                  group or 1, check, features)


_TABLES: dict = {}


def law_table(gamma: float, C: int, centred: bool | None = None, tilt: float = 1.0) -> LawTable:
    """The law table of (gamma, C), centred as is_centred says unless ``centred`` is given, radially tilted by ``tilt``
    (centred tables); built on first use, the last _MEMO kept."""
    key = (float(gamma), int(C), is_centred(gamma, C) if centred is None else bool(centred), float(tilt))
    if key not in _TABLES:
        _TABLES[key] = build_table(*key)
        while len(_TABLES) > _MEMO:
            _TABLES.pop(next(iter(_TABLES)))
    return _TABLES[key]


def law_replicates(g, gamma: float, C: int) -> tuple:
    """Per-scramble (F_k(g), f_k(g)) [K_SCRAMBLES, n_g] at one 0 < gamma < inf, C >= 3: P(G_c <= g) and its density.
    Their means are multiclass.cdf / pdf; their SD/sqrt(K) the randomised-QMC standard error."""
    g = np.atleast_1d(np.asarray(g, float))
    return law_table(gamma, C).replicates(g)[:2]


def law_se(g, gamma: float, C: int) -> tuple:
    """(cdf, its standard error over the K_SCRAMBLES scrambles) at g (scalar gamma, C >= 3); the stated error bound
    at CONFIDENCE is T_FACTOR * SE plus the deterministic parts (law_bound)."""
    F, _ = law_replicates(g, gamma, C)
    return F.mean(0), scramble_se(F)


def law_bound(g, gamma: float, C: int) -> np.ndarray:
    """The stated error bound of multiclass.cdf at g: T_FACTOR x SE (Student t, K - 1 dof, 99.99 % two-sided) plus
    the deterministic parts: det_error of the value (grid + Hermite inversion), the clip error of the rows whose root
    lies below the u grid (computed), what G_hat's error (its trapezoid and, for C >= BINNED_FROM, the Taylor
    remainder of the binned products) moves the value by (Deterministic.g_hat, computed), and the radial rule's
    error; inf (no claim) where fewer than ESS_MIN effective rows carry the value (the far lower tail: the
    between-scramble spread does not measure the error there). C = 3: the deterministic
    route's relative bound, THREE_ERROR x the value (multiclass_numerics/three.py)."""
    g = np.atleast_1d(np.asarray(g, float))
    if int(C) == 3:
        return THREE_ERROR * cdf_numpy(g, gamma, 3)
    return table_bound(law_table(gamma, C), g)[1]


def table_bound(tab: LawTable, g: np.ndarray) -> tuple:
    """(per-scramble F [K, n_g], the stated bound [n_g]) of one law table at g: law_bound's C >= 4 part, on any table
    (the engine run at C = 2 or 3 in the tests)."""
    F, _, ess, det = tab.bounded(g)
    return F, replicate_bound(F, det.total(), ess)


def law_relative_bound(g, gamma: float, C: int) -> np.ndarray:
    """A true relative error bound of multiclass.cdf at g (App. H, the law of one fraction), at the confidence of
    law_bound: |F_hat - F| <= b implies |F_hat - F|/F <= b/(F_hat - b) where F_hat > b, and inf where F_hat <= b (no
    correct digit can be claimed there). C = 3: THREE_ERROR."""
    g = np.atleast_1d(np.asarray(g, float))
    return relative(cdf_numpy(g, gamma, C), law_bound(g, gamma, C))


def _by_pair(fn, g, gamma, C, side: int | None = None):
    """Evaluate fn(g_values, table) per distinct (gamma, C) with C >= 4 and 0 < gamma < inf (one table at a time).
    C = 3 is deterministic: element ``side`` of three.law (0: cdf, 2: density) per g value (one
    call per value: array call = scalar call). Returns (shape, flat g, flat gamma, flat C, out with those filled)."""
    shape, (gm, cc, gg) = broadcast_flat(gamma, C, g)
    out = np.zeros(gg.shape)
    live = (cc >= 3) & (gm > 0) & np.isfinite(gm)
    for i in np.nonzero(live & (cc == 3) & (gg > 0) & (gg < 1))[0]:
        if side == 0 and gm[i] > three.LAW_GAMMA_MAX:
            out[i] = 2 / 3       # the interior mass is O(gamma^-1/2) < 1e-152: the gamma = inf value in double
        else:
            out[i] = three.law(np.clip(gg[i:i + 1], 1e-300, 1 - 1e-16), float(gm[i]))[side][0]
    live &= cc >= 4
    for c in np.unique(cc[live]):
        at_c = live & (cc == c)
        for gamma_ in np.unique(gm[at_c]):
            sel = at_c & (gm == gamma_)
            out[sel] = fn(gg[sel], law_table(gamma_, c))
    return shape, gg, gm, cc, out


def cdf_numpy(g, gamma, C):
    shape, gg, gm, cc, out = _by_pair(_monotone_cdf, g, gamma, C, side=0)
    out = np.clip(out, 0.0, 1.0)         # three.law at C = 3 can round to 1 + 2^-52 (gamma = 0.125, g = 0.99)
    s = np.sqrt(np.where(np.isfinite(gm) & (gm > 0), gm, 1.0))
    out = np.where(cc == 2, special.ndtr(probit(gg) / s), out)
    out = np.where(gm == 0, np.where(gg < 1 / cc, 0.0, 1.0), np.where(np.isinf(gm), 1 - 1 / cc, out))
    return np.where(gg <= 0, 0.0, np.where(gg >= 1, 1.0, out)).reshape(shape)


def _monotone_cdf(x, tab):
    """The mean over the scrambles at the g values x of one (gamma, C), made monotone in g (running maximum in sorted
    g) and clipped to [0, 1]: every row is monotone up to its cubic Hermite inversion (not shape-preserving), so
    neighbouring values can cross by up to that error; each value stays within the bound of the (monotone) truth
    after this projection."""
    order = np.argsort(x)
    vals = tab.replicates(np.clip(x[order], 1e-300, 1 - 1e-16))[0].mean(0)
    out = np.empty(x.shape)
    out[order] = np.clip(np.maximum.accumulate(vals), 0.0, 1.0)
    return out


def pdf_numpy(g, gamma, C):
    shape, gg, gm, cc, out = _by_pair(lambda x, tab: tab.replicates(x)[1].mean(0), g, gamma, C, side=2)
    x = probit(gg)
    binary = np.exp(-0.5 * np.log(gm) + (1 - 1 / gm) * x * x / 2)
    return np.where(cc == 2, binary, np.maximum(out, 0.0)).reshape(shape)   # a Hermite slope can dip below 0
