"""The law table of one (gamma, C) (IGB paper App. H, C >= 4) and its deterministic error parts.

Given the others, G_c is an increasing function of u_c, so P(G_c <= g) = E[Phi(u*(g)/s)], u* its root
(Rao-Blackwellised over u_c). LawTable holds per row G_hat(u) on a u grid (trapezoid rule, < 1e-10) and inverts it by
cubic Hermite interpolation in probit space (det_error); centred tables integrate the others' common mode in closed
form (s^2 = gamma C/(C - 1)) and cross-fit control variates over the scrambles (LawTable.controlled: 1e3 ... 1e9
less variance). Error bound (law.law_bound): T_FACTOR times the between-scramble SE, plus det_error of the value
(relative to the nearer tail), plus the rows whose root falls below their u grid, plus what G_hat's error (eta and
the trapezoid's) can move the cdf by (Deterministic.g_hat), plus the radial rule's error (LawTable.radial_error, from
the half rule on the first scramble). The density (LawTable.density_bounded) has its own bound the same way."""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy import special

from .common import ESS_MIN, K_SCRAMBLES, SQ2PI, T_FACTOR, probit, scramble_se

G_TRAPEZOID = 5e-13   # relative error of G_hat from the trapezoid in w (_step) and rounding: measured <= 1.3e-13
#                       against the grid of half the step (C = 4 ... 100, gamma = 1e-3 ... 1e3, G = 1e-45 ... 1)
H_CUT = 9.6e-18       # >= Phi(-8.5) >= H below the core (law_grid), which G_hat omits: G - G_hat in [0, H_CUT]
#                       (measured: log G_hat moves by 2e-5 at G ~ 1e-20, 7e-10 at G ~ 1e-10 with the step)
RADIAL_SAFETY = 2.0   # radial_error: the engine at C = 3 (64 radial nodes) against the exact law, gamma = 0.1,
#                       g = 1e-6: the full rule is off by 1.6e-5 relative, the half rule (32 nodes) by 9e-10, 16
#                       nodes by 1.5e-9, 128 by 1e5: the difference was 0.998 of the cdf's error there, and 0.9999997
#                       of the density's at gamma = 0.01, g = 4.5e-5
DENSITY_GRID = 2.0    # a row density's Hermite error <= DENSITY_GRID det_relative of its value (measured <= 1.03x)
DENSITY_G_HAT = 2.0   # the slope part of what G_hat's error moves a row density by, <= DENSITY_G_HAT e |f| (measured
#                       <= 0.98 e |f| beyond the rows' |f(hi) - f(lo)|: C = 10 ... 1000, gamma = 1e-3 ... 300, 15 g)
TAYLOR_SAFETY = 1.01  # a row's density over the g interval is <= 1.01x its value at g (LawTable.g_interval) ...
TAYLOR_LOCAL = 1e-3   # ... where its width is <= TAYLOR_LOCAL min(g, 1 - g): measured, the two roots' values
#                       differ by <= (1 + 2.2e-5) x the density's width (the excess: rounding; 14 tables, 200 g each,
#                       half-widths e = 2e-9 ... 1e-6); the two-sided width is itself 2x the one-sided error


class Deterministic(NamedTuple):
    """The deterministic parts of a law value's stated bound ([n_g] each; LawTable.bounded): ``grid`` det_error of the
    value (the u grid and the Hermite inversion); ``clip`` the rows whose root falls below their u grid; ``g_hat``
    what the error of G_hat itself moves the value by: G_hat/G is in [e^-e, e^e] with e = eta (the binning
    remainder, binned_log_cdf_of_max, |log H_hat - log H| <= eta, C >= BINNED_FROM; the kernels are >= 0) +
    G_TRAPEZOID, and G - G_hat in [0, H_CUT], so each row's exact root at g is the table's root at some g' in
    LawTable.g_interval, which moves its value by <= the interval's width x the row's density there, taken as
    TAYLOR_SAFETY x its density at g where the interval is small against g and 1 - g (TAYLOR_LOCAL), else the
    values at its two ends (LawTable.two_roots; tests check the one against the other; near g = 1 G_hat's error is a
    large part of 1 - g, near g = H_CUT all of g); ``radial`` the radial rule's error (LawTable.radial_error)."""
    grid: np.ndarray
    clip: np.ndarray
    g_hat: np.ndarray
    radial: np.ndarray

    def total(self) -> np.ndarray:
        return self.grid + self.clip + self.g_hat + self.radial


class LawTable:
    """One (gamma, C): per point of the RQMC nets (rows), G_hat(u) = P(u + eps > max others | others) and dG_hat/du on
    the u grid top + rel_u around the others' maximum ``top`` (G_hat increases in u); inverted in probit space
    p = Phi^-1(G_hat). ``centred`` (is_centred): the others are centred on their own mean m. G_c depends on u_c - m and
    the centred others only, and u_c - m ~ N(0, s^2), s^2 = gamma C/(C - 1), is independent of the centred others
    (Gaussian), so the common mode integrates in closed form: P(G_c <= g | centred others) = Phi(u*(g)/s); plain,
    s^2 = gamma. ``weight``: the rows' weights, summing to 1 per scramble (importance weights; on centred tables
    times the spherical-radial rule's, ``group`` radial nodes per direction)."""

    def __init__(self, gamma: float, C: int, top: np.ndarray, rel_u: np.ndarray, G: np.ndarray, dG: np.ndarray,
                 weight: np.ndarray, eta: float = 0.0, centred: bool = True, radius2: np.ndarray | None = None,
                 group: int = 1, check=None, features: np.ndarray | None = None):
        self.s = math.sqrt(gamma * C / (C - 1) if centred else gamma)    # the sd of u_c (- the others' mean)
        # probit G_hat, nondecreasing along each row: G increases in u, and rounding near G = 1 must not unsort the
        # stacked search keys of ``rows`` (an unsorted key made a value depend on the other g values in its call)
        self.C, self.top, self.rel_u, self.P = C, top, rel_u, np.maximum.accumulate(probit(G), axis=1)
        self.dudp = np.exp(-self.P * self.P / 2) / SQ2PI / np.maximum(dG, 1e-300)    # du/dp at the grid points
        self.weight = weight
        self.eta = eta        # |log H_hat - log H| <= eta at every grid point of every row (binned_log_cdf_of_max)
        self.centred = centred
        self.radius2 = radius2    # centred: |xi - mean xi|^2 of each row's others (standard units, after any tilt)
        self.group = group        # contiguous rows per QMC direction (centred: the radial nodes; plain: 1)
        self.check = check        # centred: builds the first scramble's table on the half radial rule (radial_error)
        self.cv = None if features is None else self._cross_fit(features)
        self.memos: dict = {}   # (name, args) -> what this table computed once (functionals, pilot tilts)

    def memo(self, key: tuple, compute):
        """compute(), once per table and key: a form's value, its bound and its SE all come from the same pass
        (p_empty costs 2-30 s, its tilt pilot up to 2 s)."""
        if key not in self.memos:
            self.memos[key] = compute()
        return self.memos[key]

    def functional(self, key: tuple, compute) -> tuple:
        """compute() = (per-scramble replicates, deterministic bound) of a law functional, memoised (read-only
        replicates)."""
        def frozen():
            reps, det = compute()
            reps.setflags(write=False)
            return reps, det
        return self.memo(key, frozen)

    def first_scramble(self) -> "LawTable":
        """The same table restricted to the rows of the first scramble (a pilot: 1/K_SCRAMBLES of the cost), sharing
        its arrays, with its own memos and neither half rule nor control variates."""
        n = self.top.size // K_SCRAMBLES
        view = object.__new__(LawTable)
        view.__dict__.update(self.__dict__, memos={}, check=None, cv=None, top=self.top[:n], P=self.P[:n],
                             dudp=self.dudp[:n], weight=self.weight[:n] * K_SCRAMBLES,
                             radius2=None if self.radius2 is None else self.radius2[:n])
        return view

    def rows(self, g: np.ndarray) -> tuple:
        """Per row [rows, n_g]: (P(G_c <= g | others) = Phi(u*(g)/s), its g-derivative, the clip error, 1 where the
        root is off the row's grid else 0, u*/s clipped to the grid). u*(g) = G_hat^-1(g) by cubic Hermite
        interpolation of u(p) between the two grid points that bracket g (relative error of the cdf <= det_relative,
        measured). Where u* lies below the grid or below -ROW_Z_MIN s the truth is in [0, Phi(lo/s)]: the value is the
        midpoint and the half-width the clip error (computed, part of law_bound); above 8.5 s the value is 1 in
        double. Off the grid (below it or above its end) the derivative is 0 and the row's true density unknown
        (density_bounded claims no digit where such a row carries weight)."""
        t = probit(np.clip(g, 1e-300, 1 - 1e-16))
        n, n_u = self.P.shape
        r = np.arange(n)[:, None]
        key = (self.P + _ROW_KEY * r).ravel()           # rows stacked: probit G_hat increases along each row
        i = np.searchsorted(key, (t[None, :] + _ROW_KEY * r).ravel()).reshape(n, -1) - n_u * r
        i = np.clip(i, 1, n_u - 1)                      # P[i-1] < p(g) <= P[i]
        flat, P, dudp = i + n_u * r, self.P.ravel(), self.dudp.ravel()   # flat gathers: 2x faster than [r, i]
        p0, p1 = P.take(flat - 1), P.take(flat)
        u0, u1 = self.top[:, None] + self.rel_u.take(i - 1), self.top[:, None] + self.rel_u.take(i)
        dp = np.maximum(p1 - p0, 1e-300)
        m0, m1 = dudp.take(flat - 1) * dp, dudp.take(flat) * dp
        x = np.clip((t[None, :] - p0) / dp, 0.0, 1.0)
        root = u0 + x * (x * (x * (2 * u0 - 2 * u1 + m0 + m1) + (3 * u1 - 3 * u0 - 2 * m0 - m1)) + m0)
        slope = (x * (x * 3 * (2 * u0 - 2 * u1 + m0 + m1) + 2 * (3 * u1 - 3 * u0 - 2 * m0 - m1)) + m0) / dp   # du/dp
        lo = np.maximum(-ROW_Z_MIN * self.s, self.top + self.rel_u[0])[:, None]
        end = (self.top + self.rel_u[-1])[:, None]
        z = np.clip(root, lo, np.minimum(8.5 * self.s, end)) / self.s   # Phi(8.5) is 1 in double
        on_grid = (root > lo) & (root < end)
        zd = np.clip(root, lo, end) / self.s
        dens = np.where(on_grid, np.exp((t * t)[None, :] / 2 - zd * zd / 2) / self.s * slope, 0.0)   # dPhi(z)/dg
        F = special.ndtr(z)
        clip = np.where(root <= lo, F / 2, 0.0)          # the truth is in [0, Phi(lo/s)]: report the midpoint
        return F - clip, dens, clip, (~on_grid).astype(float), zd

    def replicates(self, g: np.ndarray, node_weights: np.ndarray | None = None, controlled: bool = True) -> tuple:
        """(F [K, n_g], f [K, n_g], clip [n_g], ess): per-scramble means of P(G_c <= g | centred others) and of its
        g-derivative (less their control variates unless ``controlled`` is False, ``controlled``), the weighted mean
        clip error of ``rows``, and the effective number of rows carrying each value (scramble_sums)."""
        (F, f, clip), ess = self.scramble_sums(np.atleast_1d(np.asarray(g, float)), lambda x, *rows: rows[:3],
                                               node_weights, controlled=2 if controlled else 0)
        return F, f, clip.mean(0), ess

    def positive_ratio(self) -> np.ndarray | None:
        """Per row |m_d| (its direction's), the factor by which the row weights w |m| bound the controlled estimate's
        from above in absolute value; None (all 1) where there are no control variates. The controlled mean is linear
        in the direction values, sum_d (w_d m_d / K) V_d with m_d = 1 - sum_(k != scramble of d) Sx_k . P_k
        (X_d - xbar_k) / (K - 1), so errors |e_d| <= b_d of the rows move it by <= sum_d (w_d |m_d| / K) b_d: the
        deterministic bounds (det_error, clip, binning remainder) are those of the positive weights w |m| (|m| ~ 1;
        their sum, the mass, slightly above 1)."""
        if self.cv is None:
            return None

        def ratio():
            X, Sx, xbar, P = self.cv
            K = X.shape[0]
            A = np.einsum("kfg,kg->kf", P, Sx)
            c = (np.einsum("kmf,f->km", X, A.sum(0)) - np.einsum("kmf,kf->km", X, A) - (A * xbar).sum()
                 + (A * xbar).sum(1)[:, None]) / (K - 1)
            return np.repeat(np.abs(1 - c).ravel(), self.group)
        return self.memo(("positive ratio",), ratio)

    def mass(self) -> float:
        """The mean over the scrambles of the positive weights' sums (w |m|, positive_ratio; 1 on untilted tables
        without control variates): the Jensen factor of det_error on a weighted mean."""
        ratio = self.positive_ratio()
        return float((self.weight if ratio is None else self.weight * ratio).sum() / K_SCRAMBLES)

    def bounded(self, g: np.ndarray, node_weights: np.ndarray | None = None) -> tuple:
        """(F [K, n_g], f [K, n_g], ess, Deterministic [n_g] each): replicates and the deterministic parts of the
        values' bound from the same pass over the rows (each row's value, density and clip error summed under both
        the estimate's weights and the positive ones, positive_ratio): det_error of the positive-weight mean times the
        mass (Jensen on normalised weights), the clip error, the binning remainder and the radial rule's error."""
        g, ratio = np.atleast_1d(np.asarray(g, float)), self.positive_ratio()

        def per_row(x, F, f, clip, *_):
            parts = (F, np.abs(f), clip)
            return (F, f) + (parts if ratio is None else tuple(v * ratio[:, None] for v in parts))
        (F, f, Fp, slope, clip), ess = self.scramble_sums(g, per_row, node_weights, controlled=2)
        lo, hi = self.g_interval(g)
        width = hi - lo                                   # where the exact root's g lies
        g_hat = TAYLOR_SAFETY * width * slope.mean(0)  # slope: the positive-weight mean of the rows' |density|
        far = width > TAYLOR_LOCAL * np.minimum(g, 1 - g)
        if far.any():
            g_hat[far] = self.two_roots(g[far])
        mass = self.mass()
        return F, f, ess, Deterministic(mass * det_error(np.abs(Fp.mean(0)) / mass, self.s), clip.mean(0), g_hat,
                                        mass * self.radial_error(g))

    def g_interval(self, g: np.ndarray) -> tuple:
        """(lo, hi) [n_g]: G_hat/G is in [e^-e, e^e] (e = eta + G_TRAPEZOID) and G - G_hat in [0, H_CUT] (the part
        below the core) on the whole u grid, so each row's exact root at g is the table's root at some g' in
        [lo, hi] = [g e^-e - H_CUT, g e^e] (lo <= 0: anywhere below, the value in [0, the value at hi])."""
        e = self.eta + G_TRAPEZOID
        return g * math.exp(-e) - H_CUT, g * math.exp(e)

    def two_roots(self, g: np.ndarray) -> np.ndarray:
        """The bound on what G_hat's error moves the value at g by (Deterministic.g_hat) from the two roots: the
        positive-weight means of the rows' values at the ends of g_interval, whose difference bounds it (0 for the
        lower end where it is <= 0). Used where the interval is not small against g and 1 - g (TAYLOR_LOCAL),
        elsewhere the density at g bounds it."""
        lo, hi = self.g_interval(np.asarray(g, float))
        ratio = self.positive_ratio()

        def per_row(x, F, f, clip, *_):
            return (F if ratio is None else F * ratio[:, None],)
        up, down, inside = self.scramble_sums(hi, per_row)[0][0].mean(0), np.zeros(lo.shape), lo > 0
        if inside.any():          # the lower end's pass only where it lies above 0
            down[inside] = self.scramble_sums(lo[inside], per_row)[0][0].mean(0)
        return np.abs(up - down)

    def _cross_fit(self, features: np.ndarray) -> tuple:
        """The directions' parts of the cross-fitted control variates (``controlled``): X = features / their SD
        [K, M, f], per scramble Sx = sum_d w_d X_d, and for each scramble k the pooled mean of X and the pseudo-
        inverse of its pooled covariance over the other K - 1 scrambles."""
        K = features.shape[0]
        w = self.weight.reshape(K, features.shape[1], self.group).sum(2)             # [K, M] direction weights
        X = features / np.sqrt(np.einsum("km,kmf->f", w, features ** 2) / K)
        Sx, Sxx = np.einsum("km,kmf->kf", w, X), np.einsum("km,kmf,kmg->kfg", w, X, X)
        xbar = (Sx.sum(0) - Sx) / (K - 1)
        cov = (Sxx.sum(0) - Sxx) / (K - 1) - xbar[:, :, None] * xbar[:, None, :]
        return X, Sx, xbar, np.linalg.pinv(cov, rcond=1e-10, hermitian=True)

    def controlled(self, v: np.ndarray, sums: np.ndarray) -> np.ndarray:
        """Per-scramble sums [K, n] of the row values v [rows, n] less their control variates: the even symmetric
        power sums of the direction (spherical.power_features, exact means), whose part that varies with the
        direction removes 1e3 ... 1e9 of the variance over the directions at C = 10 ... 100 (measured out of sample;
        G_c is a symmetric function of the others, smooth in their direction). Cross-fitted: scramble k's
        coefficients beta_k are the regression of the direction values on X over the other K - 1 scrambles, which are
        independent of scramble k, so each replicate stays unbiased: sums_k - beta_k . Sx_k. Per column of v, in the
        same order whatever the other columns (array call = scalar call)."""
        if self.cv is None:
            return sums
        X, Sx, xbar, P = self.cv
        K, M, _ = X.shape
        out = np.empty(sums.shape)
        for j in range(v.shape[1]):
            c = sums[:, j].mean()         # beta is blind to a constant shift of V: shifted, the sums cancel less
            wv = (self.weight * (np.ascontiguousarray(v[:, j]) - c)).reshape(K, M, self.group).sum(2)   # w_d (V_d - c)
            Sxy = np.einsum("kmf,km->kf", X, wv)
            ybar = (sums[:, j].sum() - sums[:, j]) / (K - 1) - c
            cxy = (Sxy.sum(0) - Sxy) / (K - 1) - xbar * ybar[:, None]
            beta = np.einsum("kfg,kg->kf", P, cxy)
            out[:, j] = sums[:, j] - (beta * Sx).sum(1)
        return out

    def scramble_sums(self, g: np.ndarray, per_row, node_weights: np.ndarray | None = None,
                      controlled: int = 0) -> tuple:
        """The one pass over the rows: per_row(g_chunk, *rows(g_chunk)) gives per-row arrays [rows, n_chunk]; returns
        (their per-scramble weighted sums, each [K, n_g], ess): ess [n_g] = (sum w v_r)^2 / sum (w v_r)^2 of the first
        array v — or, given ``node_weights`` [n_g], the ess of the rows' weighted sums sum_g node_weights v_r(g) (a
        functional). The first ``controlled`` arrays' sums are less their control variates (``controlled``). The g
        values go in chunks of CHUNK (memory ~ rows x chunk)."""
        # [K, n_g] views of [n_g, K] arrays: a mean over the scrambles runs along memory, in the same order whatever
        # the other g values (array call = scalar call, bit for bit)
        sums, ess, total = None, np.empty(g.size), np.zeros(self.top.size)
        for a in range(0, g.size, CHUNK):
            x = g[a:a + CHUNK]
            values = per_row(x, *self.rows(x))
            if sums is None:
                sums = [np.empty((g.size, K_SCRAMBLES)).T for _ in values]
            for i, (out, v) in enumerate(zip(sums, values)):
                out[:, a:a + CHUNK] = _per_scramble(v, self.weight)
                if i < controlled:
                    out[:, a:a + CHUNK] = self.controlled(v, out[:, a:a + CHUNK])
            ess[a:a + CHUNK] = _ess(self.by_direction(self.weight[:, None] * values[0]))
            if node_weights is not None:
                total += values[0] @ node_weights[a:a + CHUNK]
        if node_weights is not None:
            ess = float(_ess(self.by_direction((self.weight * total)[:, None]))[0])
        return sums, ess

    def by_direction(self, x: np.ndarray) -> np.ndarray:
        """Row values x [rows, n] summed over each direction's radial nodes [directions, n]: the ESS counts the QMC
        directions, the independent draws (a direction's radii are one quadrature, not |group| samples)."""
        return x if self.group == 1 else x.reshape(-1, self.group, x.shape[1]).sum(1)

    def radial_error(self, g: np.ndarray, which: int = 0) -> np.ndarray:
        """The radial rule's stated error at g [n_g] of the value (``which`` 0) or of the density (1): RADIAL_SAFETY x
        |first scramble on the full rule - the same directions on the half rule|. In the bulk a Gauss rule's error
        falls geometrically in its nodes, so the difference measures the half rule's error, which bounds the full
        rule's (measured 1e-10 vs 1e-9 ... 2.5e-5 relative in the far tail, radial_nodes); in the far lower tail the
        outermost nodes of the larger rule carry rows of value ~1 with weights far above the value, and there the
        half rule is the more accurate one, so the difference is the full rule's error itself (the safety factor).
        0 on plain tables."""
        if self.check is None:
            return np.zeros(np.shape(g))
        half = self.memo(("half rule",), self.check)
        return RADIAL_SAFETY * np.abs(half.replicates(g)[which].mean(0)
                                      - self.first_scramble().replicates(g)[which].mean(0))

    def density_bounded(self, g: np.ndarray) -> tuple:
        """(f [K, n_g], the stated bound [n_g], Deterministic [n_g] each) of the density at g (App. H, the law of one
        fraction): T_FACTOR x the scramble SE of the controlled density plus its deterministic parts, summed per row
        under the positive weights (positive_ratio): ``grid`` the Hermite slope's error, DENSITY_GRID x det_relative_z
        of the row's root x its |density| (measured against the u grid of half the step, tests); ``g_hat`` what
        G_hat's own error moves it by: each row's exact density at g is its table density at some g' in g_interval
        times dg'/dg, so the rows' |f(hi) - f(lo)| plus DENSITY_G_HAT e |f| for the slope (e = eta + G_TRAPEZOID;
        measured, binned against exact products on the same rows); ``radial`` the radial rule's error (radial_error).
        inf (no digit) where the interval reaches 0, where a row whose root is off its grid carries weight (its
        density is unknown: rows) or where fewer than ESS_MIN effective rows carry the density."""
        g, ratio = np.atleast_1d(np.asarray(g, float)), self.positive_ratio()
        positive = self.weight if ratio is None else self.weight * ratio

        def per_row(x, F, f, clip, outside, z):
            parts = (DENSITY_GRID * det_relative_z(z, self.s) * np.abs(f), np.abs(f), outside)
            return (f,) + (parts if ratio is None else tuple(v * ratio[:, None] for v in parts))
        (f, grid, size, off), ess = self.scramble_sums(g, per_row, controlled=1)
        lo, hi = self.g_interval(g)
        shift = np.zeros(g.size)
        for a in range(0, g.size, CHUNK):
            ends = self.rows(hi[a:a + CHUNK])[1] - self.rows(np.maximum(lo[a:a + CHUNK], 1e-300))[1]
            shift[a:a + CHUNK] = positive @ np.abs(ends) / K_SCRAMBLES
        parts = Deterministic(grid.mean(0), np.zeros(g.size),
                              shift + DENSITY_G_HAT * (self.eta + G_TRAPEZOID) * size.mean(0),
                              self.mass() * self.radial_error(g, 1))
        unresolved = (ess < ESS_MIN) | (off.mean(0) > 0) | (lo <= 0)
        return f, np.where(unresolved, np.inf, T_FACTOR * scramble_se(f) + parts.total()), parts


CHUNK = 16        # g values per pass over the rows
_ROW_KEY = 100.0   # row offset of the stacked probit keys (probits lie in [-38.5, 8.3]; rounding ~1e-9 at 2^16 rows)


def _ess(x: np.ndarray) -> np.ndarray:
    """Effective number of rows per column of the weighted row values x [rows, n]: (sum x)^2 / sum x^2 (summed along
    memory per column). Measured on the engine at C = 2 against the exact law: the stated bound failed (by up to 2.6x)
    only where this was < 25, in the far lower tail (tests/test_multiclass.py), hence ESS_MIN."""
    xt = np.ascontiguousarray(x.T)
    scale = np.abs(xt).max(1, keepdims=True)
    xt = xt / np.where(scale > 0, scale, 1.0)         # scale-free; unscaled, x^2 of rows ~1e-160 underflowed to 0
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.nan_to_num(xt.sum(1) ** 2 / (xt * xt).sum(1), nan=0.0)


def _per_scramble(values: np.ndarray, w: np.ndarray) -> np.ndarray:
    """[K, n_g]: sum over each scramble's rows of w * values [rows, n_g] (w: weights normalised per scramble), each
    sum over contiguous memory, so a column is summed in the same order whatever the other columns are (array call =
    scalar call, bit for bit)."""
    per_g = np.ascontiguousarray((values * w[:, None]).T).reshape(values.shape[1], K_SCRAMBLES, -1)
    return per_g.sum(-1).T


DET_REL = 2e-9     # relative error floor of the cubic Hermite inversion of G_hat on its u grid (step h / U_REFINE) ...
DET_U = 7e-10      # ... plus DET_U z/s: the root's error in u moves Phi(u*/s) by ~ z/s relative (det_relative)


def det_relative(F, s: float):
    """Stated relative error of a row value (or a weighted mean of rows) F = Phi(u*/s) in the lower tail from the u
    grid and the cubic Hermite inversion: DET_REL + DET_U max(1, -Phi^-1(F))/s. Measured against the grid of half
    the step (C = 4, 6, 10, 30, 100, exact products, gamma in [1e-3, 1e3], g in [1e-14, 1 - 1e-13], F down to 1e-13
    and 1 - F down to 1e-13, beyond 4 ulp of rounding and twice what G_hat's own error moves the value by,
    Deterministic.g_hat): relative error <= 6.0e-10 where z/s is small and (relative error) s/z <= 2.2e-10, 3x
    margins (on the u grid of step h, before U_REFINE: 8.4e-9 and 5.1e-9)."""
    return det_relative_z(special.ndtri(np.clip(np.asarray(F, float), 1e-300, 1.0)), s)


def det_relative_z(z, s: float):
    """det_relative in terms of the root z = u*/s: DET_REL + DET_U max(1, |z|)/s (the root's error du moves
    Phi(z) and phi(z) by ~ |z| du/s relative), for either tail: 1 - Phi(z) rounds to 0 from z ~ 8.3, the root does
    not (the density's upper tail, LawTable.density_bounded)."""
    return DET_REL + DET_U * np.maximum(1.0, np.abs(z)) / s


def det_error(F, s: float):
    """Stated absolute error of a row value (or a weighted mean of rows) F = Phi(u*/s) from the grid and the
    inversion: det_relative of the nearer tail t = min(F, 1 - F) times t, plus rounding (4 ulp: 2^-50 F). The root's
    error du moves Phi(u*/s) by phi(u*/s) du/s, small against both tails alike (measured on both sides, det_relative).
    For a mean of rows: t is concave in F and t max(1, -Phi^-1(t)) concave and
    nondecreasing in t, so the mean's term bounds the rows' weighted sum (Jensen)."""
    F = np.asarray(F, float)
    t = np.clip(np.minimum(F, 1 - F), 0.0, None)
    return det_relative(t, s) * t + np.abs(F) * 2.0 ** -50


ROW_Z_MIN = 37.0         # rows carry P(G_c <= g | others) = Phi(u*/s) down to Phi(-37) = 5.7e-300 (below: clip)
