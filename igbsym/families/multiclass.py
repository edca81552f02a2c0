"""Multiclass IGB: the law of the class fractions (G_1, ..., G_C) of an untrained C-class network (registration).

Paper: igb-initial-guessing-bias.txt App. H (Eqs. 189-192) and App. I.1.2-I.1.3 (CIFAR-10/100).

Model (derived in derivations/multiclass.py; every assumption is in ``MODEL``): given the weights, the C output
means mu_c are i.i.d. N(0, V_W) over the weight ensemble and the outputs over the data are independent
N(mu_c, V_chi) around them (infinite width; the class outputs uncorrelated over the data). With u_c = mu_c/sqrt(V_chi)
~ N(0, gamma), gamma = V_W/V_chi (the binary law's gamma), the fraction of the data put in class c is

    G_c = P_x(argmax = c | W) = integral phi(z) prod_{c' != c} Phi(z + u_c - u_c') dz.

C = 2 gives G_0 = Phi((u_0 - u_1)/sqrt 2) = Phi(sqrt(gamma) Z): the igb law exactly. No closed form exists for
C >= 3; each numeric route says how it is computed and how accurate it is, in igbsym/multiclass_numerics/:

* ``moments``: var and max_fraction at D = inf (2-d quadrature of ``power``, relative 1e-12);
* ``three`` (C = 3, deterministic) and ``chamber`` (max_fraction_cdf at C = 4, D = inf, deterministic);
* C >= 4, the randomised-QMC law of one G_c: ``nets`` (base points), ``products`` (prod_j Phi(w - u_j), exact or
  binned), ``tables`` (one (gamma, C): rows, inversion, deterministic error parts), ``law`` (cdf, pdf, law_bound);
* ``functionals``: p_empty, n_empty, entropy (any D) as functionals of that law;
* ``vectors``: whole fraction vectors and their counts at finite D (max_fraction, max_fraction_cdf);
  ``dominant``: the max_fraction / max_fraction_cdf routes by case;
* ``binary`` (C = 2 closed forms and 1-d rules), ``paper`` (the paper's construction, an erratum), ``bounds`` (the
  stated relative error of every value), ``common`` (seeds, replicate arithmetic, mpmath peaked integrals).
"""
from __future__ import annotations

import math

import mpmath
import numpy as np
import sympy as sp

from ..errors import InputError, NumericalError
from ..form import Accuracy, ClosedForm, Condition, NumericRoute, Param, Provenance
from ..functions import Phi, PhiInv, mp_ncdf, mp_ncdf_inv
from ..multiclass_numerics.binary import binary_entropy_mp, binary_max_cdf_mp, binary_max_mp
from ..multiclass_numerics.bounds import (cdf_relative_bound, entropy_relative_bound, max_fraction_cdf_relative_bound,
                                          max_fraction_relative_bound, p_empty_bound_each, pdf_relative_bound)
from ..multiclass_numerics.common import C_MAX
from ..multiclass_numerics.dominant import max_fraction_cdf_numpy, max_fraction_numpy
from ..multiclass_numerics.functionals import (entropy_numpy, p_empty_mp, p_empty_numpy, p_empty_relative_bound,
                                               p_empty_upper)
from ..multiclass_numerics.law import cdf_numpy, pdf_numpy
from ..multiclass_numerics.moments import VAR_ERROR, VAR_REL, var_mp, var_numpy
from ..multiclass_numerics.paper import PAPER_ERROR, paper_approx_mp, paper_approx_numpy
from ..registry import register

IGB = "igb-initial-guessing-bias.txt"

MODEL = ("model: (i) given W the C output means are i.i.d. N(0, V_W) over the weights (infinite width: a sum of many "
         "independent terms); (ii) given W the outputs over the data are independent N(mu_c, V_chi) with one common "
         "V_chi (infinite width: class outputs uncorrelated over the data); (iii) i.i.d. data; gamma = V_W/V_chi")

gamma_s = sp.Symbol("gamma", nonnegative=True)
C_s = sp.Symbol("C", integer=True)
g_s = sp.Symbol("g", nonnegative=True)
D_s = sp.Symbol("D", integer=True)
z_s, u_s = sp.Symbol("z", real=True), sp.Symbol("u", real=True)

GAMMA = Param("gamma", "nonnegative", "IGB strength Var_W(mu)/Var_chi(O) (0 and inf are the exact limits)",
              allow_inf=True)
C_PARAM = Param("C", "integer", "number of classes", minimum=2, maximum=C_MAX)
G_PARAM = Param("g", "nonnegative", "class fraction, 0 <= g <= 1")
G_OPEN = Param("g", "positive", "class fraction, 0 < g < 1")
D_MAX = 10**9            # largest finite dataset size (NumPy's multinomial draws counts up to 2^63)
D_PARAM = Param("D", "integer", "dataset size (number of data points)", minimum=1, maximum=D_MAX)
D_INF = Param("D", "integer", "dataset size (inf = the population fraction)", default=math.inf, minimum=1,
              maximum=D_MAX, allow_inf=True)
G_AT_MOST_1 = Condition(sp.Le(g_s, 1), "g <= 1 (a fraction)")
G_BELOW_1 = Condition(sp.Lt(G_OPEN.symbol(), 1), "g < 1 (the density lives on 0 < g < 1; g = 1 is an atom at "
                                                  "gamma = inf)")


def _var_limit(gamma, C):
    if gamma == 0:
        return 0
    if gamma == mpmath.inf:
        return (1 - mpmath.mpf(1) / C) / C
    return None


def _p_empty_limit(gamma, C, D):
    if gamma == 0:
        return (1 - mpmath.mpf(1) / C) ** D
    if gamma == mpmath.inf:
        return 1 - mpmath.mpf(1) / C
    return None


def _paper_limit(g, gamma, C):
    if g == 0 or g == 1:
        return g
    if gamma == 0:
        return 0 if g < 0.5 else 1
    if gamma == mpmath.inf:
        return 1 - mpmath.mpf(1) / C
    return None


# ============================================================================ registration
LAW = Provenance(IGB, "App. H (multi-class extension; exact law derived in derivations/multiclass.py)", MODEL)
_G_DEF = sp.Integral(sp.exp(-z_s**2 / 2) / sp.sqrt(2 * sp.pi) * sp.Product(Phi(z_s + u_s - sp.Symbol("u_j")),
                                                                         (sp.Symbol("j"), 1, C_s - 1)),
                     (z_s, -sp.oo, sp.oo))
MC_ERROR = ("randomised QMC over the other C-1 means, 16 scrambles: at gamma up to 2 ... 10 (is_centred) the others' "
            "common mode in closed form and the centred others in polar form, the radius by its chi law's Gauss rule "
            "and the direction by a rotated product rule (C = 4, 5) or by importance-sampled Sobol directions with "
            "cross-fitted control variates (the symmetric power sums of degree <= 14, exact means); above, plain "
            "Sobol nets (2^12 ... 2^7 points, importance-sampled largest mean); for C >= 10 the product over the "
            "others by binned 5th-order Taylor expansions with a computed remainder): |error| <= law_bound = 5.24 x "
            "(SE between the scrambles) + det_error (2e-9 + 7e-10 z/s of the nearer tail) + clip + what G_hat's "
            "error moves the value by + 2 x the radial rule's half-rule difference (computed) at 99.99 % (Student "
            "t, 15 dof); relative: law_relative_bound = b/(F_hat - b), the form's per-value accuracy (see "
            "multiclass.cdf); inf where no digit is claimed (the far lower tail); C = 3 relative 1e-10 "
            "(deterministic), C = 2 and gamma in {0, inf} exact")


_E, _Gc = sp.Function("E"), sp.Symbol("G_c")
_T1S, _T2S = sp.symbols("T_1 T_2", real=True)


def _per_value(text: str, bound) -> Accuracy:
    """The form's accuracy, stated per value by ``bound`` (Accuracy.per_value: the relative error of each value the
    route returns, at 99.99 % where the route samples, inf where no digit is claimed); ``text`` says how each route
    makes it and what it measured."""
    return Accuracy(math.inf, text, per_value=bound)


_LAW_TEXT = ("C = 2 the igb closed form (relative 1e-12); C = 3 deterministic, relative 1e-10 (a 1-d integral over "
             "q = (d2 - d3)/2 of Phi(-p*(q)/sigma_p), multiclass_numerics/three.py); C >= 4 randomised QMC over the "
             "other means with spherical-radial rows and control variates, at 99.99 % (Student t over 16 "
             "scrambles) plus the computed deterministic parts; exact at gamma in {0, inf}. ")
_CDF_ACC = _per_value(_LAW_TEXT + "C >= 4: cdf_relative_bound = law_relative_bound, measured max over g in "
                      "[1/(2C), 2/C], C in {4, 5, 10, 30, 100, 1e3, 1e4}: <= 1.2e-7 at gamma in [0.01, 0.3], "
                      "<= 6.5e-8 at gamma = 1 up to C = 10 and 4.3e-7 ... 1.1e-5 above, 2e-9 (C = 4) ... 3.3e-5 "
                      "(C = 1e3) and 7.8e-5 (C = 1e4) at gamma = 3, 2.4e-7 ... 1.4e-5 at gamma = 10, <= 2.8e-6 at "
                      "gamma >= 100, 3e-7 ... 1.3e-6 at gamma = 1e-3 (there those g are tail values); inf in the far "
                      "lower tail", cdf_relative_bound)
_PDF_ACC = _per_value(_LAW_TEXT + "C >= 4: pdf_relative_bound, the density of the same rows with its own bound "
                      "(LawTable.density_bounded: T x SE, the Hermite slope's error, what G_hat's error moves it by, "
                      "the radial rule's; inf where a row off its grid or too few rows carry it), measured max over "
                      "g in [0.3/C, 2/C], C in {4, 5, 10, 30, 100, 1e3, 1e4}: <= 2.4e-6 at gamma <= 0.1 (the "
                      "Hermite part; tail values down to 1e-142), 7.7e-9 (C = 4) ... 2.4e-6 (C = 30) ... 8.6e-5 "
                      "(C = 1e4) at gamma = 1, 1.7e-8 (C = 4) ... 7.1e-5 (C = 100), 4.1e-4 (C = 1e3), 2.8e-3 "
                      "(C = 1e4) at gamma = 3, 6.5e-6 ... 1e-4 up to C = 100 and 5.7e-4 ... 2.7e-3 above at gamma "
                      "in [10, 100]", pdf_relative_bound)
_VEC_ACC = _per_value("D = inf: exact where C = 2 (closed form) or gamma in {0, inf}, relative <= 1e-10 at C = 3 (1-d "
                      "integral 3 E_q[(Phi(-q/s_p) - Phi(p*/s_p))_+], multiclass_numerics/three.max_cdf), C = 4 "
                      "relative <= max(1e-6, 1e-12/(4 g - 1)) deterministic, in both tails (the ordered gaps, radius "
                      "in closed form, simplex rule: multiclass_numerics/chamber.py; measured <= 7.7e-9 at 70 random "
                      "points, gamma in [1e-3, 1e3], and <= 2.7e-7 at 25 with 1 - g in [3e-16, 1e-4]), C >= 5 "
                      "C E[(Phi(u*/s) - Phi(u_top/s))_+] over the randomised QMC law tables at 99.99 % (2e-6 ... "
                      "5.6e-2 measured down to the 1 % quantile, up to 0.24 at the 0.1 %, inf in the far lower "
                      "tail), and at g >= 1/2 where the law's table is centred exactly 1 - C (1 - F(g)) (4e-11 ... "
                      "3.5e-5 measured, 5e-9 ... 3e-7 at gamma = 1, C <= 10); finite D: P(max_c K_c <= k), k the "
                      "largest count with k/D <= g, K multinomial(D, G): C = 2 exact (binomial cdf difference over "
                      "the igb law, relative <= 1e-10), C >= 3 randomised QMC over the law tables' nets of fraction "
                      "vectors with the leading pair's split integrated exactly, 16 count draws per vector, "
                      "T x the SE over the 16 scrambles (max_fraction_cdf_se; the net enlarged until the relative SE "
                      "is <= 1e-4 or 2^m C reaches 2^17; relative SE measured at the 50 / 95 % quantiles: 1.3e-4 / "
                      "3.4e-5 at (gamma, C, D) = (0.467, 3, 400), 2.8e-4 / 1.0e-4 at (0.467, 10, 400), 1.2e-3 / "
                      "2.7e-4 at (0.467, 100, 300), 3.5e-3 / 4.9e-4 at (0.1, 1e3, 1e4), 5.5e-2 at the median at "
                      "(1, 1e4, 1e5); 1e-3 ... 2e-2 at the 1 ... 5 % quantiles; inf where a scramble saw no draw in "
                      "the event); where gamma D <= 30, D <= 10 C and D <= 1000 (exact_count_cdf) P(max_c K_c <= k "
                      "| G) exact per vector instead (multiclass_numerics/counts.py, relative 2e-12; relative SE "
                      "measured at the 1 ... 99 % quantiles 5e-6 ... 1.9e-3 / 2e-7 ... 2.5e-5 at 32 (gamma, C, D) "
                      "points, where drawn counts gave 3.7e-4 ... 1.2e-2 / 8.8e-6 ... 1.4e-4, e.g. 1.5e-4 ... 4.6e-7 "
                      "at (0.01, 100, 100), and the rare event of every class getting one point, ~1e-43, where it "
                      "read 0); exact 0 where C k < D and 1 where k >= D", max_fraction_cdf_relative_bound)
_EMPTY_ACC = _per_value("C >= 4: a functional of the randomised QMC law (spherical-radial rows, radially tilted for "
                        "rare events), p_empty_relative_bound at 99.99 % (2e-7 ... 2e-6 measured at C in [4, 1000], "
                        "5e-6 ... 7e-6 for values down to 1.7e-184 at gamma = 0.01; inf where no digit is "
                        "resolved); C = 3: relative <= 1e-10, deterministic 2-d log-space quadrature around the "
                        "integrand's peak (rare events included: relative precision down to 1e-300, "
                        "multiclass_numerics/three.py); C = 2: relative <= 2e-9; exact at gamma in {0, inf}",
                        p_empty_bound_each)
_MAX_ACC = _per_value("D = inf: relative <= 1e-12 (exact 2-d quadrature C E[Phi_2(X, Y; r)^(C-1)], "
                      "multiclass_numerics/power.py); finite D, C = 2: exact (binomial closed form integrated over "
                      "the igb law, relative <= 1e-10); finite D, C >= 3: T x the SE over the scrambles of the exact "
                      "D = inf value + the mean of (max_c K_c - K_top)/D (the count noise overtaking the leading "
                      "class) over the randomised QMC nets of the means (16 scrambles, the largest mean "
                      "importance-sampled) and 64 multinomial draws per vector, less control variates of exact mean "
                      "0 (overtaking), the net enlarged until the relative SE (max_fraction_se) is <= 1e-4 or 2^m C "
                      "reaches 2^17 per scramble (relative SE measured 7e-6 ... 9.5e-5 at 15 points with C from 3 to "
                      "1e4 and D from 20 to 1e5, e.g. 7.5e-5 at (gamma, C, D) = (0.467, 100, 300), 7.1e-5 at "
                      "(0.1, 1e3, 1e4)); where gamma D <= 10 and D <= 3 C or gamma D <= 3 and D <= 10 C "
                      "(exact_count_mean) the mean of E[max_c K_c | G]/D instead, exact per vector "
                      "(multiclass_numerics/counts.py, relative 2e-12), over the same nets (relative SE 3.1e-6 ... "
                      "8.3e-5 at 26 points, e.g. 8.3e-5 at (0.01, 100, 100), 3.2e-5 at (0.1, 100, 100), 7.2e-5 at "
                      "(0.01, 1e3, 1e3), where drawn counts gave 4.6e-4, 2.5e-4, 7.2e-4)", max_fraction_relative_bound)
_ENT_ACC = _per_value("C E[psi(G_c)] over the law of one G_c, psi = -g log g (D = inf) or psi_D(g) = E h(K/D), K ~ "
                      "binomial(D, g) (finite D: the observed entropy; no vector is sampled, multiclass_numerics/"
                      "observed.py, relative 1e-14): C >= 4 a functional of the randomised QMC law, "
                      "entropy_relative_bound at 99.99 % (T x SE + the functional's deterministic bound; the SE "
                      "with that bound, entropy_se, measured relative 5e-9 ... 2e-6 at C <= 100, 2e-5 ... 5e-5 at "
                      "C = 1e3, 1e4); C = 3 relative <= 1e-10 (2-d quadrature over the law of G_1, "
                      "multiclass_numerics/three.py); C = 2 relative <= 1e-12 (1-d rule over the igb law); gamma in "
                      "{0, inf} exact", entropy_relative_bound)


def _route(np_fn, mp_fn, method, error, defining=None):
    return lambda: NumericRoute(np_fn, mp_fn, method, error, defining)


def _mp_binary_cdf(g, gamma, C):
    if int(C) != 2:
        raise NumericalError("multiclass.cdf: no mpmath reference for C >= 3 (randomised QMC route; "
                             "law_bound gives its error bound)")
    return mp_ncdf(mp_ncdf_inv(g) / mpmath.sqrt(gamma))


def _mp_binary_pdf(g, gamma, C):
    if int(C) != 2:
        raise NumericalError("multiclass.pdf: no mpmath reference for C >= 3 (randomised QMC route)")
    x = mp_ncdf_inv(g)
    return mpmath.exp((1 - 1 / gamma) * x * x / 2) / mpmath.sqrt(gamma)


def _cdf_limit(g, gamma, C):
    if g == 0 or g == 1:
        return g
    if gamma == 0:
        return 0 if g < mpmath.mpf(1) / C else 1
    if gamma == mpmath.inf:
        return 1 - mpmath.mpf(1) / C
    return None


register(ClosedForm(
    "multiclass.mean", "E[G_c] = 1/C: by exchangeability of the classes and sum_c G_c = 1.", (C_PARAM,), LAW,
    expr=1 / C_s))
register(ClosedForm(
    "multiclass.var", "Var[G_c] of one class fraction: E[Phi_2(T1, T2; gamma/(1+gamma))^(C-1)] - 1/C^2.",
    (GAMMA, C_PARAM), Provenance(IGB, "App. H (exact second moment; the paper gives none)", MODEL),
    accuracy=Accuracy(VAR_REL, "2-d Gauss-Legendre quadrature (no closed form for C >= 3); " + VAR_ERROR),
    builder=_route(var_numpy, var_mp, "2-d quadrature of E[Phi_2(T1,T2;rho)^(C-1)] - 1/C^2 in the Gumbel variables "
                   "of (T1, T2), the excess over 1/C^2 formed pointwise",
                   VAR_ERROR, _E(sp.Function("Phi_2")(_T1S, _T2S, gamma_s / (1 + gamma_s)) ** (C_s - 1)) - 1 / C_s**2),
    limit=_var_limit,
    display=r"E\left[\Phi_2\left(T_1, T_2; \tfrac{\gamma}{1+\gamma}\right)^{C-1}\right] - \frac{1}{C^2}"))
register(ClosedForm(
    "multiclass.cdf", "P(G_c <= g): the law of the fraction of the data put in one class c of C.",
    (G_PARAM, GAMMA, C_PARAM), LAW, conditions=(G_AT_MOST_1,),
    accuracy=_CDF_ACC,
    builder=_route(cdf_numpy, _mp_binary_cdf, "randomised QMC over the other means (exact igb.cdf at C = 2)",
                   MC_ERROR, sp.Function("P")(sp.Le(_G_DEF, g_s))), limit=_cdf_limit,
    display=r"P\left(\int \phi(z) \prod_{c' \neq c} \Phi(z + u_c - u_{c'})\,dz \le g\right),\ "
            r"u \sim N(0, \gamma I_C)"))
register(ClosedForm(
    "multiclass.pdf", "Density of one class fraction G_c (0 < gamma < inf; C = 2 is igb.pdf).",
    (G_OPEN, Param("gamma", "positive", "IGB strength"), C_PARAM), LAW, conditions=(G_BELOW_1,),
    accuracy=_PDF_ACC,
    builder=_route(pdf_numpy, _mp_binary_pdf, "randomised QMC (density of the Rao-Blackwellised cdf); "
                   "exact igb.pdf at C = 2", MC_ERROR.replace("law_bound", "T x SE of law_replicates' densities"),
                   sp.Derivative(sp.Function("P")(sp.Le(_G_DEF, g_s)), g_s)),
    display=r"\frac{d}{dg} P(G_c \le g)"))
register(ClosedForm(
    "multiclass.p_empty", "P(a class receives no point of a dataset of D points) = E[(1 - G_c)^D] (the CIFAR-100 "
    "peak at 0, App. I.1.3).", (GAMMA, C_PARAM, D_PARAM),
    Provenance(IGB, "App. I.1.3 (peak at 0 for CIFAR-100)", MODEL + "; data points assigned independently given W"),
    accuracy=_EMPTY_ACC,
    builder=_route(p_empty_numpy, p_empty_mp, "int_0^1 D (1 - g)^(D-1) F(g) dg against the randomised QMC cdf F "
                   "(law_functional); exact igb law at C = 2", MC_ERROR.replace("law_relative_bound",
                                                                               "p_empty_relative_bound"),
                   _E((1 - _Gc) ** D_s)),
    limit=_p_empty_limit,
    display=r"E\left[(1 - G_c)^D\right] = \int_0^1 D (1 - g)^{D-1} F_{G_c}(g)\, dg"))
register(ClosedForm(
    "multiclass.n_empty", "Expected number of classes with no point of a dataset of D points: C E[(1 - G_c)^D].",
    (GAMMA, C_PARAM, D_PARAM), Provenance(IGB, "App. I.1.3", MODEL),
    accuracy=_EMPTY_ACC,
    builder=_route(lambda gamma, C, D: C * p_empty_numpy(gamma, C, D),
                   lambda gamma, C, D: C * p_empty_mp(gamma, C, D), "C times multiclass.p_empty", MC_ERROR + " (x C)",
                   C_s * _E((1 - _Gc) ** D_s)),
    limit=lambda gamma, C, D: None if (lim := _p_empty_limit(gamma, C, D)) is None else C * lim,
    display=r"C\,E\left[(1 - G_c)^D\right]"))
register(ClosedForm(
    "multiclass.max_fraction", "E[max_c G_c]: mean fraction of the dominant class (the sorted frequencies of App. H), "
    "as measured on D data points (D = inf: the population value).", (GAMMA, C_PARAM, D_INF),
    Provenance(IGB, "App. H (sorted frequencies G_(1))", MODEL),
    accuracy=_MAX_ACC,
    builder=_route(max_fraction_numpy, binary_max_mp, "D = inf: C E[Phi_2(X, Y; r)^(C-1)] (2-d quadrature); finite "
                   "D: + the sampled count-noise correction over exact fraction vectors (C = 2: exact)",
                   "D = inf relative <= 1e-12; finite D, C >= 3: standard error stated by max_fraction_se (relative, "
                   "over the scrambles of the randomised QMC means)",
                   _E(sp.Function("max_c")(_Gc))),
    limit=lambda gamma, C, D: (1 / mpmath.mpf(C) if gamma == 0 and D == mpmath.inf else
                               (1 if gamma == mpmath.inf else None)),
    display=r"E\left[\max_c G_c\right]"))
register(ClosedForm(
    "multiclass.max_fraction_cdf", "P(max_c G_c <= g): the law of the dominant class fraction (at dataset size D).",
    (G_PARAM, GAMMA, C_PARAM, D_INF), Provenance(IGB, "App. H (sorted frequencies G_(1))", MODEL),
    conditions=(G_AT_MOST_1,),
    accuracy=_VEC_ACC,
    builder=_route(max_fraction_cdf_numpy, binary_max_cdf_mp, "D = inf: C E[(Phi(u*/s) - Phi(u_top/s))_+] over the "
                   "law tables (C = 4: P((C - 1)/2, rho*^2 q/2) over the ordered gaps' simplex, rho* the root of "
                   "G_top = g along each ray; C = 3: 1-d quadrature; C = 2: erf(erfinv(2g - 1)/sqrt(gamma))); "
                   "finite D: P(max_c K_c <= k) over randomised QMC fraction vectors, the leading pair's split exact "
                   "(C = 2: exact)",
                   "D = inf relative bound max_cdf_relative_bound; finite D, C >= 3: standard error stated by "
                   "max_fraction_cdf_se (relative, over the scrambles of the randomised QMC means)",
                   sp.Function("P")(sp.Le(sp.Function("max_c")(_Gc), g_s))),
    display=r"P\left(\max_c G_c \le g\right)"))
register(ClosedForm(
    "multiclass.entropy", "E[-sum_c G_c log G_c] (nats): how prejudiced a C-class net is (log C: none; 0: total).",
    (GAMMA, C_PARAM, D_INF), Provenance(IGB, "App. H", MODEL),
    accuracy=_ENT_ACC,
    builder=_route(entropy_numpy, binary_entropy_mp, "C E[psi(G_c)] over the law of one G_c, psi = -g log g "
                   "(D = inf) or the binomial kernel psi_D (finite D); C = 2 a 1-d rule over the igb law, C = 3 "
                   "quadrature, C >= 4 law_functional of the randomised QMC law", "deterministic at C <= 3 (relative "
                   "1e-12 at C = 2, 1e-10 at C = 3); C >= 4 standard error stated by entropy_se (relative)",
                   _E(-sp.Sum(_Gc * sp.log(_Gc), (sp.Symbol("c"), 1, C_s)))),
    limit=lambda gamma, C, D: (mpmath.log(C) if gamma == 0 and D == mpmath.inf else
                               (0 if gamma == mpmath.inf else None)),
    display=r"E\left[-\sum_c G_c \log G_c\right]"))
PAPER_NOTE = ("ERRATUM: the construction compares class c with the largest of the other C-1 means only, i.e. "
              "G_c ~ Phi((u_c - max_{c'} u_c')/sqrt 2); it ignores the other C-2 classes, so it violates sum_c G_c = 1 "
              "(E G_c != 1/C; at gamma -> 0 every G_c -> 1/2 instead of 1/C); its error against the exact law is "
              "tabulated in derivations/multiclass.py and the README")
register(ClosedForm(
    "multiclass.paper_approx", "The paper's App. H construction as printed: P(Phi((u_c - M_{C-1})/sqrt 2) <= g), "
    "M_{C-1} the largest of the other C-1 means (Eqs. 189-192 + the binary law).", (G_PARAM, GAMMA, C_PARAM),
    Provenance(IGB, "App. H, Eqs. 189-192 (with App. C.1 Eq. 82)", PAPER_NOTE), conditions=(G_AT_MOST_1,),
    accuracy=Accuracy(PAPER_ERROR, "the 40-node Gumbel-Gauss rule for gamma >= 0.1 (absolute error <= 1e-9, on "
                      "values >= 1e-2 only), the log-space trapezoid around the peak below gamma = 0.1 and wherever "
                      "the value is < 1e-2 (relative, measured <= 2e-13); measured against mpmath at 150 random "
                      "(g, gamma, C), gamma in [1e-3, 1e3], C in [2, 1e4]: <= 1.5e-10 relative"),
    builder=_route(paper_approx_numpy, paper_approx_mp, "40-node Gumbel-Gauss rule for the maximum (maxpool); a "
                   "log-space trapezoid for values < 1e-2 and gamma < 0.1",
                   "relative <= 1e-7 (absolute <= 1e-9 on values >= 1e-2), tested against mpmath",
                   sp.Integral(Phi(sp.Symbol("m") + sp.sqrt(2) * PhiInv(g_s) / sp.sqrt(gamma_s))
                               * sp.Derivative(Phi(sp.Symbol("m")) ** (C_s - 1), sp.Symbol("m")),
                               (sp.Symbol("m"), -sp.oo, sp.oo))),
    limit=_paper_limit,
    display=r"\int \Phi\left(m + \tfrac{\sqrt{2}\,\Phi^{-1}(g)}{\sqrt{\gamma}}\right) d\,\Phi(m)^{C-1}"))


# ============================================================================ the summary `predict --classes` prints
SUMMARY_D = 10_000


def multiclass_summary(gamma: float, C: int, D: int = SUMMARY_D) -> dict:
    """What ``igbsym predict --classes C`` prints for an architecture of IGB strength gamma (one line per key).

    Keys: classes, gamma, mean_fraction (1/C), sd_fraction, p_empty and expected_empty_classes at dataset size D,
    p_empty_relative_bound (None where the C >= 4 randomised QMC route resolves no digit) and p_empty_upper (a true
    upper bound),
    max_fraction (E of the dominant class fraction, population), max_fraction_uniform (1/C, no IGB), entropy
    (E entropy, nats) and entropy_max (log C), paper_approx_mean (the paper's App. H construction: its E G_c)."""
    from ..registry import get
    if isinstance(C, bool) or not float(C).is_integer() or C < 2 or C > C_MAX:
        raise InputError(f"multiclass summary: C={C!r} is not allowed; allowed: an integer 2 <= C <= {C_MAX}")
    C = int(C)
    GAMMA.check_array("multiclass summary", gamma)
    D_PARAM.check_scalar("multiclass summary", D)
    gamma = float(gamma)
    pts = np.linspace(0.0005, 0.9995, 1000)
    paper = get("multiclass.paper_approx").numpy(g=pts, gamma=gamma, C=C)
    paper_mean = float(1 - np.mean(paper)) if 0 < gamma < math.inf else (0.5 if gamma == 0 else 1 / C)
    return {
        "classes": C, "gamma": gamma, "dataset_size": int(D),
        "mean_fraction": 1 / C,
        "sd_fraction": math.sqrt(float(get("multiclass.var").numpy(gamma=gamma, C=C))),
        "p_empty": (p_empty := float(get("multiclass.p_empty").numpy(gamma=gamma, C=C, D=D))),
        "p_empty_relative_bound": None if math.isinf(rb := p_empty_relative_bound(gamma, C, D)) else rb,
        "p_empty_upper": p_empty * (1 + rb) if math.isfinite(rb) else p_empty_upper(gamma, C, D),
        "expected_empty_classes": float(get("multiclass.n_empty").numpy(gamma=gamma, C=C, D=D)),
        "max_fraction": float(get("multiclass.max_fraction").numpy(gamma=gamma, C=C)),
        "max_fraction_uniform": 1 / C,
        "entropy": float(get("multiclass.entropy").numpy(gamma=gamma, C=C)),
        "entropy_max": math.log(C),
        "paper_approx_mean": paper_mean,
    }
