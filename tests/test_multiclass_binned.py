"""The binned product over the other means in the multiclass law tables (issue 13, the cdf bench): for C >=
BINNED_FROM, log H(w) = sum_j log Phi(w - u_j) is a 5th-order Taylor expansion around lattice bin centres with the
exact moments of each bin, and the stated remainder eta (D6_SUP/6! sum_j |e_j|^6) enters law_bound through
Deterministic.g_hat. Checked here against independent routes:

* the derivative polynomials of log Phi (log_phi_derivatives) against mpmath's numerical derivatives at 40 digits;
* the constant D6_SUP against the sixth derivative on a fine grid plus the grid's Lipschitz margin (seventh derivative);
* log H against the exact product of normal cdfs (_cdf_of_max, the route kept for C < BINNED_FROM) at
  C in {3, 10, 100, 1000} and gamma over six decades: within eta (+ the two routes' rounding), eta within its a-priori
  bound, and eta not loose (the largest error reaches half of it: a mutation of a moment or of the table fails);
* whole law tables, binned vs exact products on the same base points: the cdf difference within the stated
  binning remainder (Deterministic.g_hat), and that bound, taken from the rows' density at g, against its
  definition, the values at the two roots g e^-eta and g e^eta;
* array call = scalar call, and a cdf at C = 300 that is monotone in [0, 1].
All deterministic (fixed base points), no tolerance from the code under test."""
import math

import mpmath
import numpy as np
import pytest
from scipy import special

import igbsym
from igbsym.multiclass_numerics import common, law, nets, products, tables

SLOW = pytest.mark.slow      # a neighbour of the cases kept in the CI budget (run them with -m slow)

EPS = np.finfo(float).eps
GAMMAS = (1e-3, 0.03, 1.0, 10.0, 1e3)


def exact_log_h(u, C):
    rel, (c0, c1) = products.law_grid(C)[:2]
    H = products.cdf_of_max(u[:, :1] + rel[None, c0:c1], u)
    return np.log(np.where(H > 1e-300, H, np.nan))


def test_log_phi_derivatives_match_mpmath():
    mpmath.mp.dps = 40
    try:
        for x in (-8.5, -3.0, -0.7, 0.0, 1.231, 1.949, 4.0, 9.0, 25.0):
            got = products.log_phi_derivatives(np.array([x]), 6)[:, 0]
            ref = [float(mpmath.diff(lambda t: mpmath.log(mpmath.ncdf(t)), x, n)) for n in range(7)]
            assert np.all(np.abs(got - ref) <= 1e-8 + 1e-12 * np.abs(ref)), (x, got - ref)
    finally:
        mpmath.mp.dps = 15


def test_remainder_constant_bounds_the_sixth_derivative():
    """Taylor points x = w - u lie in [-8.5, 40] (core w >= top - 8.5; bins dropped below D_CUT keep x <= 8.5 + 3.7 +
    D_CUT + h); beyond 40, |f^(6)| ~ phi(x) x^5 < 1e-340. Grid maximum + (step/2) max |f^(7)| bounds the supremum."""
    x = np.linspace(-8.5, 40.0, 485_001)
    f = products.log_phi_derivatives(x, 7)
    sup6 = np.abs(f[6]).max() + (x[1] - x[0]) / 2 * np.abs(f[7]).max()
    assert sup6 <= products.D6_SUP
    assert np.abs(f[6]).max() >= 0.999 * products.D6_SUP          # and it is the supremum (not a loose constant)


@pytest.mark.parametrize("C", [3, 10, 100, pytest.param(1000, marks=SLOW)])
def test_binned_log_products_within_eta_of_the_exact_product(C):
    xi = nets.other_means(C)[0].reshape(-1, C - 1)[:1024]        # the route is per row: 1024 rows suffice
    rel = products.law_grid(C)[0]
    h = rel[1] - rel[0]
    a_priori = products.D6_SUP / 720 * (C - 1) * (h / 2) ** 6 + products.LOG_PHI_9 * (C - 1)
    largest_err = largest_eta = 0.0
    for gamma in GAMMAS:
        u = math.sqrt(gamma) * xi
        log_h, eta = products.binned_log_cdf_of_max(u, C)
        ref = exact_log_h(u, C)
        ok = np.isfinite(ref)
        err = np.abs(log_h - ref)
        rounding = 64 * EPS * (C + np.abs(ref))            # the exact product's C factors, the sum's terms
        assert np.all((err <= eta[:, None] + rounding)[ok]), (gamma, np.max((err - eta[:, None])[ok]))
        assert np.all(eta <= a_priori) and a_priori <= 2e-8, (gamma, eta.max(), a_priori)
        largest_err, largest_eta = max(largest_err, err[ok].max()), max(largest_eta, eta.max())
    assert largest_err >= 0.5 * largest_eta, (largest_err, largest_eta)


@pytest.mark.parametrize("C", [10, 100, 1000])
def test_law_tables_binned_vs_exact_products_within_their_g_hat_bound(C, monkeypatch):
    """Same base points, the two product routes: G_hat/G within e^(+-eta) where the exact route computes G (it sets
    H < 1e-18 to 0, so its G below 1e-15 is not the reference), and the cdf within Deterministic.g_hat (what G_hat's
    error moves it by). The comparison is per row, so the tables are built on 16 x 2^5 points (points_log2 patched;
    the base points' cache cleared around it)."""
    g = np.array([1e-6, 1e-3, 0.01, 0.05, 1 / C, 0.2, 0.5, 0.9, 0.999])
    monkeypatch.setattr(nets, "points_log2", lambda C: 5)
    nets.other_means.cache_clear()
    try:
        _binned_vs_exact_tables(C, g, monkeypatch)
    finally:
        nets.other_means.cache_clear()


def _binned_vs_exact_tables(C, g, monkeypatch):
    for gamma in (1e-3, 0.03, 1.0, 30.0):
        binned = law.build_table(gamma, C, law.is_centred(gamma, C))
        with monkeypatch.context() as m:
            m.setattr(law, "BINNED_FROM", common.C_MAX + 1)
            exact = law.build_table(gamma, C, law.is_centred(gamma, C))
        assert exact.eta == 0 and 0 < binned.eta <= 2e-8
        G_binned, G_exact = special.ndtr(binned.P), special.ndtr(exact.P)      # the tables keep probit G
        seen = G_exact > 1e-15
        assert np.all(np.abs(np.log(G_binned) - np.log(G_exact))[seen] <= binned.eta + 1e-13), gamma
        diff = np.abs(binned.replicates(g)[0].mean(0) - exact.replicates(g)[0].mean(0))
        bound = binned.bounded(g)[3].g_hat      # control variates: on the positive weights |w m| (positive_ratio)
        assert np.all(diff <= bound + 1e-14), (gamma, diff, bound)
        assert np.all(bound <= 1e-6)


@pytest.mark.parametrize("C, gamma", [(10, 1.0), (30, 3.0), (100, 30.0), (1000, 1.0)])
def test_taylor_density_rule_covers_the_two_roots(C, gamma, monkeypatch):
    """Deterministic.g_hat, TAYLOR_SAFETY x 2 sinh(e) g x the rows' density at g where [g e^-e, g e^e] is small
    against 1 - g (e = eta + G_TRAPEZOID), bounds its definition, the difference of the values at the two roots,
    up to 4 ulp of rounding of the values: at the table's eta and at 1e-6, 15x the largest eta (a wider
    interval, over which the density varies more), up to g = 1 - 1e-9 (there the g nearest 1 take the two roots,
    TAYLOR_LOCAL: the density at g does not bound the interval where it is not small against 1 - g). Not loose:
    where the difference is resolved the stated remainder is at most TAYLOR_SAFETY x it (a mutation of the factor
    or of the density fails; one of TAYLOR_LOCAL fails the first assertion). Controlled (C = 10, 30, 1000) and
    plain (C = 100, gamma = 30) tables on 16 x 2^8 points."""
    monkeypatch.setattr(nets, "points_log2", lambda C: 8)
    nets.other_means.cache_clear()
    try:
        tab = law.build_table(gamma, C, law.is_centred(gamma, C))
    finally:
        nets.other_means.cache_clear()
    g = special.ndtr(np.linspace(-30.0, 6.0, 45))
    for eta in (tab.eta, 1e-6):
        tab.eta = eta
        F, _, _, parts = tab.bounded(g)
        two = tab.two_roots(g)
        F = F.mean(0)
        assert np.all(two <= parts.g_hat + 2.0 ** -50), (eta, two, parts.g_hat)    # 4 ulp of the values (<= 1)
        resolved = two > np.maximum(1e-12 * np.minimum(F, 1 - F), 1e3 * EPS * np.abs(F)) + 1e-300   # >> rounding
        assert resolved.sum() >= 5
        assert np.all(parts.g_hat[resolved] <= tables.TAYLOR_SAFETY * two[resolved] * (1 + 1e-2)), eta


def test_rows_near_one_do_not_depend_on_the_other_g(monkeypatch):
    """Regression: rounding near G_hat = 1 left probit G_hat decreasing by an ulp here and there along a row, which
    unsorted the stacked search keys of _Table.rows, so a row's value at g = 1 - 1e-16 moved by up to 7e-5 with the
    other g values of the call (numpy's searchsorted uses its previous answer as a hint). The rows are now the
    same alone and beside other g (plain table, C = 100, gamma = 30, 16 x 2^8 points)."""
    monkeypatch.setattr(nets, "points_log2", lambda C: 8)
    nets.other_means.cache_clear()
    try:
        tab = law.build_table(30.0, 100, False)
    finally:
        nets.other_means.cache_clear()
    assert np.all(np.diff(tab.P, axis=1) >= 0)
    top = np.array([1 - 1e-16])
    alone = tab.rows(top)[0][:, 0]
    for other in (0.5, 1e-3, 1 - 1e-9):
        assert np.array_equal(tab.rows(np.array([1 - 1e-16, other]))[0][:, 0], alone), other


@pytest.mark.parametrize("C", [3, 12, pytest.param(150, marks=SLOW)])
def test_array_call_equals_scalar_calls(C, monkeypatch):
    gammas = np.array([2e-3, 0.3, 1.0, 7.0, 400.0])
    g = np.array([0.3 / C, 1 / C, 2.5 / C])
    cdf = igbsym.get("multiclass.cdf")
    monkeypatch.setattr(law, "_TABLES", {})
    together = cdf.numpy(g=g[:, None], gamma=gammas[None, :], C=C)
    for j, gamma in enumerate(gammas):
        law._TABLES.clear()
        for i, gg in enumerate(g):
            assert float(cdf.numpy(g=gg, gamma=gamma, C=C)) == together[i, j], (gamma, gg)


def test_cdf_at_many_classes_is_monotone_in_unit_interval():
    grid = np.linspace(0, 1, 401)
    for gamma in (0.01, 1.0, 100.0):
        F = igbsym.get("multiclass.cdf").numpy(g=grid, gamma=gamma, C=300)
        assert np.all((F >= 0) & (F <= 1)) and np.all(np.diff(F) >= 0) and F[0] == 0 and F[-1] == 1
        assert np.all(law.law_bound(grid[1:-1], gamma, 300) <= 0.05)
