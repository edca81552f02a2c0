"""The ordered-gaps route of max_fraction_cdf at D = inf (igbsym/multiclass_numerics/chamber.py; issue 27) against
independent references, each at the route's own stated bound.

* C = 2: the igb closed form erf(Phi^-1(g)/sqrt(2 gamma)); C = 3: three.max_cdf (a different 1-d reduction, relative
  1e-10). The route is written for any C, so these run the same code as C = 4.
* C = 4: the one-class law at g >= 1/2 (exactly 1 - C (1 - F(g)), F from the randomised law tables with their
  99.99 % bound), the law tables' lower-tail route (max_cdf_replicates, 99.99 %): false failure <= 1e-4 per value
  (the tables' scrambles are fixed, so CI is deterministic), and plain Monte Carlo of max_c G_c with its binomial
  standard error (z <= 5: false failure <= 6e-7 per comparison; fixed seed).
* Pieces: the simplex rule and the gaps' density integrate to 1 (no root: the constant and the Gram matrix), and
  G_top against mpmath quadrature at 30 digits within G_ERROR.
"""
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

import igbsym
from igbsym.multiclass_numerics import chamber, common, dominant, three, vectors

SLOW = pytest.mark.slow      # a neighbour of the cases kept in the CI budget (run them with -m slow)

get = igbsym.get
STATED = 1e-6      # the relative accuracy the form states for C = 4 (multiclass._VEC_ACC) ...


def stated(g, C):
    """... max(STATED, 1e-12/(C g - 1)): near g = 1/C the root's G_top - g cancels (G_top(0) = 1/C)."""
    return max(STATED, 1e-12 / (C * g - 1))
GAMMAS = st.floats(-3, 3).map(lambda e: 10.0 ** e)


@pytest.mark.parametrize("C", [2, 3, 4, 5])
def test_the_gaps_density_integrates_to_one(C):
    """sum of the rule's weights = int over the simplex of the gaps' density integrated over the whole radius = 1:
    checks log_gap_constant, gap_form and simplex_rule together (a wrong constant or Jacobian moves it at once). The
    coarse rule integrates the smooth weight q^-(C-1)/2 less well (3e-11 at C = 3): its error is part of what the
    fine-coarse difference states."""
    for rule, tol in ((chamber.FINE, 1e-12), (chamber.COARSE, 1e-9)):
        _, _, weight, _ = chamber._setup(C, ((rule[0],) * (C - 2), rule[1]))
        assert abs(weight.sum() - 1) < tol, (C, rule, weight.sum() - 1)


def test_top_fraction_against_mpmath():
    """G_top, 1 - G_top and the rho-derivative against mpmath.quad at 30 digits, within G_ERROR (relative) on random
    rays, from G_top near 1/4 to 1 - G_top ~ 6e-14 (the complement keeps its digits: the roots above g = 1/2 use it;
    g <= 1 - 2^-53, so 1 - G_top matters down to ~1e-16, which the v grid keeps, V_LOW)."""
    rng = np.random.default_rng(3)
    cum = np.cumsum(rng.exponential(size=(8, 3)), 1) * np.array([[0.01], [0.1], [1], [3], [10], [0.5], [30], [30]])
    rho = np.array([1.0, 3.0, 0.7, 0.2, 0.05, 2.0, 0.3, 0.3])
    G, Q, dG = chamber.top_fraction(cum, rho)
    mpmath.mp.dps = 30

    def phi(v):
        return mpmath.exp(-v * v / 2) / mpmath.sqrt(2 * mpmath.pi)
    for i in range(cum.shape[0]):
        a = [mpmath.mpf(float(x)) * mpmath.mpf(float(rho[i])) for x in cum[i]]
        c = [mpmath.mpf(float(x)) for x in cum[i]]

        def f(v):
            return phi(v) * mpmath.fprod(mpmath.ncdf(v + x) for x in a)

        def q(v):
            return phi(v) * (1 - mpmath.fprod(mpmath.ncdf(v + x) for x in a))

        def df(v):
            return f(v) * mpmath.fsum(cj * phi(v + x) / mpmath.ncdf(v + x) for cj, x in zip(c, a))
        cuts = [-mpmath.inf, -8, 0, 8, mpmath.inf]
        ref, qref, dref = (float(mpmath.quad(h, cuts)) for h in (f, q, df))
        assert abs(G[i] - ref) <= chamber.G_ERROR * ref, (i, G[i], ref)
        assert abs(Q[i] - qref) <= chamber.G_ERROR * qref, (i, Q[i], qref)
        assert abs(dG[i] - dref) <= 1e-12 * dref, (i, dG[i], dref)
    assert Q.min() < 1e-13            # the far upper end is among the rays


@given(gamma=GAMMAS, x=st.floats(1e-6, 1 - 1e-6))
def test_two_classes_is_the_igb_closed_form(gamma, x):
    """C = 2: max(G, 1 - G) <= g iff |Z| <= Phi^-1(g)/sqrt(gamma): erf(Phi^-1(g)/sqrt(2 gamma))."""
    g = 0.5 + x / 2
    value, bound = chamber.max_cdf(g, gamma, 2)
    exact = float(special.erf(special.ndtri(g) / math.sqrt(2 * gamma)))
    assert abs(value - exact) <= bound + 1e-15 * exact, (value, exact, bound)


@given(gamma=GAMMAS, x=st.floats(1e-6, 1 - 1e-6))
def test_three_classes_is_the_exact_three_class_law(gamma, x):
    """C = 3 against three.max_cdf (another reduction: p, q of the differences; relative THREE_ERROR): within the
    route's stated bound plus the reference's, and the stated bound is within the accuracy the form states."""
    g = 1 / 3 + x * 2 / 3
    value, bound = chamber.max_cdf(g, gamma, 3)
    exact = three.max_cdf(g, gamma)
    assert abs(value - exact) <= bound + three.THREE_ERROR * exact + 1e-300, (value, exact, bound)
    assert bound <= stated(g, 3) * value, (g, gamma, bound / value)


@pytest.mark.parametrize("g", [1 / 3, 0.5, 0.5 + 1e-6])
def test_three_classes_at_the_tie_thresholds(g):
    """At g = 1/k (k tied classes share 1/k each) the integrand saturates non-analytically on a face: the graded rule
    still meets the exact law within its bound at gamma = 1e3, where the features are finest."""
    value, bound = chamber.max_cdf(g, 1e3, 3)
    exact = three.max_cdf(g, 1e3)
    assert abs(value - exact) <= bound + three.THREE_ERROR * exact, (value, exact, bound)


@pytest.mark.parametrize("gamma", [0.1, 1.0, pytest.param(10.0, marks=SLOW)])
def test_four_classes_above_one_half_is_the_one_class_law(gamma):
    """g >= 1/2: P(max_c G_c <= g) = 1 - 4 (1 - F(g)) exactly (at most one fraction exceeds 1/2), F from the law
    tables (centred, rotated sphere rule) with their 99.99 % bound: within the sum of the two bounds."""
    g = np.array([0.5, 0.55, 0.7, 0.9, 0.99, 1 - 1e-9])
    F, det, ess = dominant._max_cdf_upper(g, gamma, 4)
    law, law_bound = F.mean(0), common.replicate_bound(F, det, ess)
    for x, ref, b in zip(g, law, law_bound):
        value, bound = chamber.max_cdf(float(x), gamma, 4)
        assert abs(value - ref) <= bound + b, (x, value, ref, bound, b)


@pytest.mark.parametrize("gamma", [pytest.param(0.1, marks=SLOW), 1.0])
def test_four_classes_lower_tail_against_the_law_tables(gamma):
    """Below 1/2, at the 0.1 ... 10 % quantiles of max_c G_c: the law tables' bracket route (max_cdf_replicates,
    99.99 % bound, 5e-4 ... 3e-2 relative there) agrees within the sum of the bounds."""
    g = np.quantile(vectors.vector_samples(gamma, 4).max(1), [0.001, 0.01, 0.1, 0.3])
    F, det, ess = dominant.max_cdf_replicates(g, gamma, 4)
    tables, table_bound = F.mean(0), common.replicate_bound(F, det, ess)
    for x, ref, b in zip(g, tables, table_bound):
        value, bound = chamber.max_cdf(float(x), gamma, 4)
        assert abs(value - ref) <= bound + b, (x, value, ref, bound, b)
        assert bound <= stated(x, 4) * value


def test_four_classes_against_monte_carlo():
    """Plain Monte Carlo of max_c G_c over 2e5 exact fraction vectors (fraction_vectors, its own trapezoid) at
    gamma = 1: the empirical cdf at five levels within 5 binomial SE of the route's value."""
    rng = np.random.default_rng(11)
    top = np.concatenate([vectors.fraction_vectors(rng.standard_normal((20_000, 4))).max(1) for _ in range(10)])
    for g in (0.28, 0.32, 1 / 3 + 0.01, 0.45, 0.6):
        value, _ = chamber.max_cdf(g, 1.0, 4)
        se = math.sqrt(value * (1 - value) / top.size)
        assert abs(np.mean(top <= g) - value) <= 5 * se, (g, np.mean(top <= g), value, se)


@settings(max_examples=max(1, settings().max_examples // 3))      # 8 under ci, 133 under thorough (~0.5 s each)
@given(gamma=GAMMAS, x=st.floats(0.001, 0.999))
def test_the_form_at_four_classes_is_the_chamber_route_with_its_stated_bound(gamma, x):
    """multiclass.max_fraction_cdf at C = 4, D = inf is chamber.max_cdf's value, and max_cdf_relative_bound (the
    accuracy the form states) is its bound, within the stated accuracy."""
    g = 0.25 + 0.75 * x
    value = float(get("multiclass.max_fraction_cdf").numpy(g=g, gamma=gamma, C=4))
    exact, bound = chamber.max_cdf(g, gamma, 4)
    assert value == exact
    rel = float(dominant.max_cdf_relative_bound(g, gamma, 4)[0])
    assert rel <= stated(g, 4) and (value == 0 or abs(rel - bound / (value - bound)) <= 1e-12 * rel)
    assert float(dominant.max_cdf_relative_bound(0.25, gamma, 4)[0]) == 0.0
    assert float(get("multiclass.max_fraction_cdf").numpy(g=0.25, gamma=gamma, C=4)) == 0.0


@pytest.mark.parametrize("gamma, tail", [(60.6, 7.6e-11), (5.6, 6.6e-6), (95.6, 1.9e-14)])
def test_four_classes_near_one_states_its_accuracy(gamma, tail):
    """g -> 1: the roots solve on 1 - G_top (its own relative precision), and the stated bound stays within the
    form's accuracy at the points where it was largest (2.7e-7 at 1 - g = 7.6e-11, gamma = 60.6)."""
    value, bound = chamber.max_cdf(1 - tail, gamma, 4)
    assert 0 < value < 1 and bound <= STATED * value, (value, bound / value)


def test_four_classes_just_above_a_tie_threshold(monkeypatch):
    """At gamma = 1e3, g = 1/2 + 1e-9 the saturation's features are ~1e-9 / sqrt(gamma) wide: the stated bound holds
    against the same rule graded 20 levels deeper (self-convergence; with the grading capped at 12 extra levels the
    bound was untrue there, 1.8e-7 against 2.7e-8)."""
    g, gamma = 0.5 + 1e-9, 1e3
    value, bound = chamber.max_cdf(g, gamma, 4)
    monkeypatch.setattr(chamber, "MAX_EXTRA", chamber.MAX_EXTRA + 20)
    deeper = chamber._value(g, gamma, 4, (chamber.gradings(g, gamma, 4, chamber.FINE[0] + 20), chamber.FINE[1]))[0]
    assert abs(value - deeper) <= bound and bound <= STATED * value, (value, deeper, bound)
