"""The relative error each multiclass value states (issue 27): Accuracy.per_value, ClosedForm.relative_bound,
``igbsym eval --bound``, and the density's own bound (_Table.density_bounded), each checked against references
independent of the route under test, with the stated bound itself as the tolerance.

* The randomised QMC engine run at C = 2 (plain and centred tables) against the igb law's closed density, and at
  C = 3 against three.law (a deterministic 1-d integral, relative 1e-10).
* C = 4 above g = 1/2: at most one fraction exceeds 1/2, so P(max_c G_c <= g) = 1 - 4 (1 - F(g)) and the density of
  one fraction is a quarter of the dominant fraction's, which the ordered-gaps route gives deterministically: the
  radius's density at the root of G_top = g along each ray over dG_top/drho there (chamber's rules; the difference
  of its fine and coarse rule is the reference's own error).
* The deterministic parts against refinements of what they bound: the u grid at half the step, the binned
  products against the exact ones on the same rows.
The law tables' scrambles are fixed, so each comparison is deterministic; a 99.99 % bound fails by chance with
probability <= 1e-4 per value (Hypothesis: 25 / 400 values per test under ci / thorough).
"""
import functools
import json
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import special

import igbsym
from igbsym.multiclass_numerics import bounds, common, dominant, law, moments, nets, paper, products, tables, vectors
from igbsym.multiclass_numerics import chamber, three

get = igbsym.get
PER_VALUE = {"multiclass.cdf": bounds.cdf_relative_bound, "multiclass.pdf": bounds.pdf_relative_bound,
             "multiclass.p_empty": bounds.p_empty_bound_each, "multiclass.n_empty": bounds.p_empty_bound_each,
             "multiclass.max_fraction": bounds.max_fraction_relative_bound,
             "multiclass.max_fraction_cdf": bounds.max_fraction_cdf_relative_bound,
             "multiclass.entropy": bounds.entropy_relative_bound}


# --- the density's bound --------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def small_table(gamma: float, C: int, centred: bool) -> "tables.LawTable":
    """The engine's table on 2^11 points per scramble (points_log2 patched around the build, the base points' cache
    cleared on both sides): the bound's parts are those of the production tables, on half the rows (2^11, not 2^10:
    the centred tables' effective row count is ~430 there, above the 300 below which no digit is claimed)."""
    log2 = nets.points_log2
    nets.points_log2 = lambda C: 11
    nets.other_means.cache_clear()
    try:
        return law.build_table(gamma, C, centred)
    finally:
        nets.points_log2 = log2
        nets.other_means.cache_clear()


XS = st.lists(st.floats(-6, 6), min_size=12, max_size=12)     # one pass over the rows per draw


@settings(max_examples=max(2, settings().max_examples // 8))      # 3 under ci, 50 under thorough
@given(gamma=st.sampled_from([0.03, 3.0]), centred=st.booleans(), xs=XS)
def test_density_bound_holds_against_the_two_class_density(gamma, centred, xs):
    """The engine at C = 2 (one other mean; centred, every row is the exact law) against igb.pdf, g = Phi(x): the
    density within its stated bound (inf where no digit is claimed), and a bound that claims digits in the bulk."""
    g = np.clip(special.ndtr(np.array(xs)), 1e-300, 1 - 1e-16)
    f, bound, _ = small_table(gamma, 2, centred).density_bounded(g)
    exact = get("igb.pdf").numpy(g=g, gamma=gamma)
    rel = common.relative(np.maximum(f.mean(0), 0.0), bound)     # what the pdf states: no digit below 2.2e-308
    ok = np.isinf(rel) | (np.abs(f.mean(0) - exact) <= bound)
    assert np.all(ok), (gamma, centred, g[~ok], f.mean(0)[~ok], exact[~ok], bound[~ok])
    bulk = np.abs(xs) <= 2 * math.sqrt(gamma)
    assert np.all(bound[bulk] <= 1e-2 * exact[bulk]), (gamma, g[bulk], bound[bulk], exact[bulk])


@settings(max_examples=max(2, settings().max_examples // 8))      # 3 under ci, 50 under thorough
@given(gamma=st.sampled_from([0.01, 0.3, 20.0]), xs=XS)
def test_density_bound_holds_against_the_three_class_law(gamma, xs):
    """The engine at C = 3 (centred tables at gamma <= 0.5, plain above) against three.law's density (relative
    THREE_ERROR): within the stated bound + that error."""
    g = np.clip(special.ndtr(np.array(xs)), 1e-300, 1 - 1e-16)
    f, bound, _ = small_table(gamma, 3, law.is_centred(gamma, 3)).density_bounded(g)
    exact = three.law(g, gamma)[2]
    rel = common.relative(np.maximum(f.mean(0), 0.0), bound)     # what the pdf states: no digit below 2.2e-308
    ok = np.isinf(rel) | (np.abs(f.mean(0) - exact) <= bound + three.THREE_ERROR * exact)
    assert np.all(ok), (gamma, g[~ok], f.mean(0)[~ok], exact[~ok], bound[~ok])


def chamber_density(g: float, gamma: float, rule: tuple) -> float:
    """d/dg P(max_c G_c <= g) at C = 4 on one of chamber's rules: per ray the radius's density at rho* times
    d rho*/dg = 1 / (dG_top/drho)."""
    cum, q, weight, reach = chamber._setup(4, rule)
    rho, slope = chamber.ray_roots(math.sqrt(gamma) * cum, g, reach)
    live = np.isfinite(rho) & (slope > 0)
    t = rho[live] ** 2 * q[live] / 2
    a = 1.5
    density = np.exp((a - 1) * np.log(t) - t - math.lgamma(a)) * rho[live] * q[live] / slope[live]
    return float(weight[live] @ density)


@settings(max_examples=max(1, settings().max_examples // 12))     # 2 under ci, 33 under thorough (~6 s each)
@given(e=st.floats(-2, 2), x=st.floats(0.51, 0.995))
def test_four_class_density_above_one_half_against_the_ordered_gaps(e, x):
    """C = 4, g > 1/2: multiclass.pdf = (1/4) d/dg P(max_c G_c <= g) (the events G_c > g are disjoint), the
    reference from chamber's fine rule with |fine - coarse| as its error: within the pdf's stated bound, where the
    rays resolve the mass above g (their radius stops where 1 - P((C - 1)/2, rho^2 q/2) = SATURATED)."""
    gamma, g = 10.0 ** e, x
    assume(1 - chamber.max_cdf(g, gamma, 4)[0] > 1e-12)     # the rays reach 1 - P = SATURATED (1e-18) only
    rules = [(chamber.gradings(g, gamma, 4, depth), points) for depth, points in (chamber.FINE, chamber.COARSE)]
    fine, coarse = (chamber_density(g, gamma, rule) / 4 for rule in rules)
    value = float(get("multiclass.pdf").numpy(g=g, gamma=gamma, C=4))
    rel = float(get("multiclass.pdf").relative_bound(g=g, gamma=gamma, C=4))
    assert abs(value - fine) <= rel * fine + abs(fine - coarse), (gamma, g, value, fine, coarse, rel)
    assert rel < 1e-3, (gamma, g, rel)


@pytest.mark.parametrize("gamma,C", [(1e-3, 10), (0.01, 3), (30.0, 4), (1.0, 6), (0.3, 7), (3.0, 10), (1.0, 100)])
def test_density_grid_part_covers_the_half_step_grid(gamma, C, monkeypatch):
    """The density's Hermite part (Deterministic.grid of density_bounded: DENSITY_GRID x det_relative per row) plus
    its G_hat part against the same rows on the u grid of half the step (the Hermite slope's error falls ~8x), on
    g where the value runs from 1e-250 to 1 - 1e-9; the comparison is per row, so on small nets (2^8 points per
    scramble: points_log2 patched, the base points' cache cleared around it)."""
    def table():
        products.law_grid.cache_clear()
        products._taylor_table.cache_clear()
        return law.build_table(gamma, C, law.is_centred(gamma, C))
    monkeypatch.setattr(nets, "points_log2", lambda C: 8)
    nets.other_means.cache_clear()
    try:
        coarse = table()
        g = np.geomspace(1e-9 / C, 0.999, 120)
        F = coarse.replicates(g)[0].mean(0)
        g = g[(F > 1e-250) & (F < 1 - 1e-9)]
        fc, _, parts = coarse.density_bounded(g)
        step = products._step
        monkeypatch.setattr(products, "_step", lambda c: step(c) / 2)
        ff = table().replicates(g)[1].mean(0)
    finally:
        monkeypatch.undo()
        products.law_grid.cache_clear()
        products._taylor_table.cache_clear()
        nets.other_means.cache_clear()
    err = np.abs(fc.mean(0) - ff)
    assert np.all(err <= parts.grid + parts.g_hat), (gamma, C, np.max(err / (parts.grid + parts.g_hat)))


@pytest.mark.parametrize("C,gammas", [(10, (1e-3, 3.0)), (100, (0.3, 300.0)), (1000, (1e-3, 300.0))])
def test_density_g_hat_part_covers_binned_against_exact_products(C, gammas, monkeypatch):
    """Same rows, the two product routes (binned: |log H_hat - log H| <= eta): the densities within the G_hat part
    of the binned table's density bound (the rows' |f(hi) - f(lo)| over g_interval + DENSITY_G_HAT e |f|), on 16 x
    2^6 rows per table, g from 1e-8 to 1 - 1e-6."""
    g = np.array([1e-8, 1e-4, 0.01, 0.1, 0.5, 0.9, 0.999, 1 - 1e-6])
    monkeypatch.setattr(nets, "points_log2", lambda C: 6)
    nets.other_means.cache_clear()
    try:
        for gamma in gammas:
            binned = law.build_table(gamma, C, law.is_centred(gamma, C))
            with monkeypatch.context() as m:
                m.setattr(law, "BINNED_FROM", common.C_MAX + 1)
                exact = law.build_table(gamma, C, law.is_centred(gamma, C))
            fb, _, parts = binned.density_bounded(g)
            fe = exact.replicates(g)[1].mean(0)
            diff = np.abs(fb.mean(0) - fe)
            assert np.all(diff <= parts.g_hat + 1e-13 * fe), (gamma, diff / np.maximum(parts.g_hat, 1e-300))
    finally:
        nets.other_means.cache_clear()


def test_radial_part_covers_the_far_tail_where_the_half_rule_is_the_more_accurate():
    """The engine at C = 3, gamma = 0.1, g = 1e-6 (values ~1e-45): the 64-node radial rule is off by 1.6e-5 and the
    32-node half rule by ~1e-9, so the half rule's difference is the full rule's error itself (0.998 of it); the
    stated radial part (RADIAL_SAFETY x that difference) covers it with room, for the value and the density."""
    g = np.array([1e-6])
    tab = law.law_table(0.1, 3)
    exact_F, exact_f = (float(x[0]) for x in three.law(g, 0.1)[::2])
    F, _, _, parts = tab.bounded(g)
    f, _, dparts = tab.density_bounded(g)
    error, difference = abs(F.mean(0)[0] - exact_F), parts.radial[0] / tables.RADIAL_SAFETY
    assert 0.9 <= error / difference <= 1.0 and error <= parts.radial[0] / 1.8
    assert abs(f.mean(0)[0] - exact_f) <= dparts.radial[0] / 1.8


@pytest.mark.parametrize("C", [2, 3])
def test_density_counts_rows_whose_root_is_above_eight_and_a_half_sd(C):
    """gamma = 0.01, g = 0.9 (the upper tail of a narrow law, density ~1e-36 at C = 2): every row's root lies above
    8.5 s, where Phi is 1 in double, but inside its u grid, so the density is the rows' own (it read 0 when their
    roots were capped at 8.5 s) and within its stated bound, with digits, of the exact density (igb.pdf at C = 2,
    three.law at C = 3)."""
    g = np.array([0.9])
    f, bound, _ = law.build_table(0.01, C, True).density_bounded(g)
    exact = float(get("igb.pdf").numpy(g=0.9, gamma=0.01) if C == 2 else three.law(g, 0.01)[2][0])
    assert 0 < exact < 1e-20 and abs(f.mean(0)[0] - exact) <= bound[0] + three.THREE_ERROR * exact
    assert bound[0] <= 1e-6 * exact


# --- the finite-D forms and the C >= 5 route at random points, against exact identities -------------------------
@settings(max_examples=max(1, settings().max_examples // 8))      # 3 under ci, 50 under thorough
@given(e=st.floats(-2, 2), C=st.integers(3, 16))      # the counts route costs ~1 s per unit of C at gamma = 300
def test_finite_d_forms_of_two_points_within_their_stated_bounds(e, C):
    """D = 2 (two data points): max_c K_c <= 1 iff they land in distinct classes, so P(max_c K_c <= 1) =
    1 - C E[G_c^2] and E max_c K_c/2 = (1 + C E[G_c^2])/2, with E[G_c^2] = Var + 1/C^2 from the exact 2-d route
    (relative 1e-12): each form within its own stated relative bound (99.99 %: false failure <= 1e-4 per value) of
    the identity, whatever route the rule picks (counts exact per vector or drawn). (The entropy at finite D, the
    same law functional at every D, is held to three.entropy in tests/test_multiclass_observed.py.)"""
    gamma = 10.0 ** e
    collide = C * (float(get("multiclass.var").numpy(gamma=gamma, C=C)) + 1 / C**2)
    for name, kw, exact in (("multiclass.max_fraction_cdf", dict(g=0.5), 1 - collide),
                            ("multiclass.max_fraction", {}, (1 + collide) / 2)):
        form = get(name)
        value = float(form.numpy(**kw, gamma=gamma, C=C, D=2))
        rel = float(form.relative_bound(**kw, gamma=gamma, C=C, D=2))
        assert abs(value - exact) <= rel * exact + 1e-12 * exact, (name, gamma, C, value, exact, rel)
        assert rel < 1e-2, (name, gamma, C, rel)


@settings(max_examples=max(1, settings().max_examples // 12))     # 2 under ci, 33 under thorough
@given(gamma=st.sampled_from([0.1, 1.0, 10.0]), x=st.floats(0.02, 0.98))
def test_the_c_five_route_run_at_four_classes_within_its_bound_of_the_ordered_gaps(gamma, x):
    """The law tables' route that max_fraction_cdf takes from C = 5 (max_cdf_replicates: the bracket below 1/2, the
    one-class law above) run at C = 4, at random g away from the tie thresholds 1/3 and 1/2, against chamber.max_cdf
    (deterministic, its own stated bound): within the sum of the two bounds."""
    g = 0.25 + 0.75 * x
    assume(min(abs(g - 1 / 3), abs(g - 0.5)) > 0.01)             # chamber takes 20 ... 36 s at a tie threshold
    F, det, ess = dominant.max_cdf_replicates(np.array([g]), gamma, 4)
    value, bound = F.mean(0)[0], common.replicate_bound(F, det, ess)[0]
    ref, ref_bound = chamber.max_cdf(g, gamma, 4)
    assert abs(value - ref) <= bound + ref_bound, (gamma, g, value, ref, bound, ref_bound)


# --- the per-value statement of every form ----------------------------------------------------------------------
POINTS = {"multiclass.cdf": [dict(g=0.1, gamma=1.0, C=10), dict(g=0.3, gamma=0.5, C=3), dict(g=0.3, gamma=2.0, C=2),
                             dict(g=0.2, gamma=0.0, C=4), dict(g=np.array([0.05, 0.2]), gamma=1.0, C=10)],
          "multiclass.pdf": [dict(g=0.1, gamma=1.0, C=10), dict(g=0.3, gamma=0.5, C=3), dict(g=0.4, gamma=2.0, C=2)],
          "multiclass.p_empty": [dict(gamma=0.3, C=3, D=30), dict(gamma=0.1, C=3, D=1000), dict(gamma=1.0, C=6, D=2)],
          "multiclass.n_empty": [dict(gamma=0.1, C=3, D=1000), dict(gamma=1.0, C=6, D=2)],
          "multiclass.max_fraction": [dict(gamma=1.0, C=10), dict(gamma=0.1, C=4, D=20), dict(gamma=1.0, C=2, D=20)],
          "multiclass.max_fraction_cdf": [dict(g=0.15, gamma=1.0, C=10), dict(g=0.1, gamma=1.0, C=10),
                                          dict(g=0.4, gamma=1.0, C=4), dict(g=0.4, gamma=1.0, C=3, D=3),
                                          dict(g=0.6, gamma=1.0, C=2)],
          "multiclass.entropy": [dict(gamma=0.3, C=3), dict(gamma=1.0, C=3, D=50)]}
# (The functionals at C >= 4 take 10 ... 40 s a point; their per-value bounds are held to references in
# tests/test_multiclass.py and tests/test_multiclass_radial.py.)


@pytest.mark.parametrize("name", sorted(PER_VALUE))
def test_every_multiclass_form_states_its_relative_error_per_value(name):
    """The form's relative_bound is its per-value function (shaped as the value, a number >= 0 or inf), equal to the
    family's function of the same route (the tests above and tests/test_multiclass*.py hold each route to it)."""
    form = get(name)
    assert form.accuracy.per_value is PER_VALUE[name] and math.isinf(form.accuracy.relative)
    for point in POINTS[name]:
        value, bound = form.numpy(**point), form.relative_bound(**point)
        assert np.shape(bound) == np.shape(value)
        assert np.all((bound >= 0) & ~np.isnan(bound)), (point, bound)
        full = {p.name: point.get(p.name, p.default) for p in form.params}
        assert np.array_equal(bound, PER_VALUE[name](**full)), point
    assert name != "multiclass.cdf" or float(form.relative_bound(g=0.1, gamma=1.0, C=10)) < 1e-6


def test_constant_and_per_value_forms_alike_answer_relative_bound():
    assert get("igb.gamma").relative_bound(activation="relu") == get("igb.gamma").accuracy.relative
    assert get("multiclass.var").relative_bound(gamma=1.0, C=10) == moments.VAR_REL
    assert get("multiclass.paper_approx").relative_bound(g=0.3, gamma=1.0, C=10) == paper.PAPER_ERROR


def test_p_empty_of_one_and_two_points_is_exact_from_the_moments():
    """D <= 2: E[(1 - G)] = 1 - 1/C, E[(1 - G)^2] = (1 - 1/C)^2 + Var G_c (relative VAR_REL), against the mean over
    exact fraction vectors (independent Monte Carlo, 5 SE: false failure <= 6e-7 per comparison)."""
    for gamma, C in ((0.3, 4), (3.0, 30)):
        assert float(get("multiclass.p_empty").numpy(gamma=gamma, C=C, D=1)) == 1 - 1 / C
        value = float(get("multiclass.p_empty").numpy(gamma=gamma, C=C, D=2))
        direct = ((1 - vectors.vector_samples(gamma, C, seed=5)) ** 2).ravel()
        assert abs(value - direct.mean()) <= 5 * direct.std(ddof=1) / math.sqrt(direct.size / C), (gamma, C)
        assert float(get("multiclass.p_empty").relative_bound(gamma=gamma, C=C, D=2)) == moments.VAR_REL


def test_cli_eval_bound_prints_the_stated_relative_error(capsys):
    from igbsym.cli import main

    def run(*args):
        code = main(list(args))
        out = capsys.readouterr()
        return code, out.out.strip().splitlines(), out.err.strip().splitlines()
    code, (value, line), _ = run("eval", "multiclass.cdf", "g=0.1", "gamma=1", "C=10", "--bound")
    bound = float(get("multiclass.cdf").relative_bound(g=0.1, gamma=1.0, C=10))
    assert code in (0, None) and float(value) == float(get("multiclass.cdf").numpy(g=0.1, gamma=1.0, C=10))
    assert line == f"relative error <= {bound:.3g}"
    data = json.loads(run("eval", "multiclass.cdf", "g=0.1", "gamma=1", "C=10", "--bound", "--json")[1][0])
    assert data["relative_bound"] == bound
    lines = run("eval", "multiclass.cdf", "g=1e-13", "gamma=0.01", "C=10", "--bound")[1]
    assert lines[1] == "relative error: no digit claimed"        # the far lower tail (~1e-300): no digit resolved
    assert run("eval", "igb.gamma", "activation=relu", "--bound")[1][1] == "relative error <= 1e-12"
    bad = subprocess.run([sys.executable, "-m", "igbsym", "eval", "multiclass.cdf", "g=0.1", "gamma=1", "C=10",
                          "--bound", "--dps", "20"], capture_output=True, text=True)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "--bound" in bad.stderr
