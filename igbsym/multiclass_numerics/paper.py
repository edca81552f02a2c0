"""multiclass.paper_approx: the paper's App. H construction as printed (class c against the largest of the other
C - 1 means, Eqs. 189-192 + the binary law), an erratum (it violates sum_c G_c = 1; at gamma -> 0 it puts every G_c at
1/2 instead of 1/C). A deterministic 40-node Gumbel-Gauss rule for the maximum (maxpool's rule) for gamma >= 0.1, a
log-space trapezoid rule around the integrand's peak below and for small values (_paper_log_space)."""
from __future__ import annotations

import mpmath
import numpy as np
from scipy import special

from ..extreme import gumbel_gauss_rule, quantile_at_gumbel
from ..functions import mp_log_ncdf, mp_ncdf_inv
from ..numerics import row_dot
from .common import SQ2PI, mp_log_concave_integral, mp_mills, probit
from .products import inverse_mills


def paper_approx_numpy(g, gamma, C):
    """P(Phi((u_c - M)/sqrt 2) <= g), M the largest of C - 1 i.i.d. N(0, gamma): E_M[Phi(M/s + sqrt(2) x/s)]."""
    g, gamma, C = np.broadcast_arrays(np.asarray(g, float), np.asarray(gamma, float), np.asarray(C, float))
    x = probit(g)
    nodes, weights = gumbel_gauss_rule()
    regular = (gamma > 0) & np.isfinite(gamma) & (g > 0) & (g < 1)
    s = np.sqrt(np.where(regular, gamma, 1.0))
    m = quantile_at_gumbel(nodes, (C - 1)[..., None])              # the max of C - 1 standard normals
    out = row_dot(special.ndtr(m + (np.sqrt(2) * np.where(regular, x, 0.0) / s)[..., None]), weights)
    small = regular & ((gamma < PAPER_RULE_MIN) | (out < PAPER_LOG_BELOW))   # the rule's error is absolute: a small
    if small.any():                                                            # value takes the log-space route
        out = np.array(out, dtype=float)
        out[small] = _paper_log_space(np.sqrt(2) * x[small] / s[small], C[small] - 1)
    out = np.where(np.isinf(gamma), 1 - 1 / C, out)
    out = np.where(gamma == 0, np.where(g < 0.5, 0.0, 1.0), out)
    return np.where(g <= 0, 0.0, np.where(g >= 1, 1.0, np.clip(out, 0.0, 1.0)))   # a probability (rule rounding)


PAPER_ERROR = 1e-7      # relative: the rule's absolute 1e-9 on the values >= PAPER_LOG_BELOW it returns
PAPER_LOG_BELOW = 1e-2  # values below this come from the log-space route (relative; the rule said 4.3e-183 for
                        # 4.9e-149 at g = 1e-16, gamma = 0.1)
PAPER_RULE_MIN = 0.1    # below this gamma the fixed 40-node rule misses the peak (1.2e-69 for 2.8e-66 at 0.0019)
_PAPER_T = 0.1 * np.arange(-400, 401)   # trapezoid nodes in units of the peak width (+- 40 widths)


def _paper_log_space(shift, k):
    """int k phi(m) Phi(m)^(k-1) Phi(m + shift) dm (flat arrays) by the trapezoid rule in log space around the mode
    m0 of the log-concave integrand (vectorised bisection of its decreasing derivative -m + (k-1) lam(m) +
    lam(m + shift), lam the inverse Mills ratio), step 0.1 w over m0 +- 40 w, w = 1/sqrt(-L''(m0)) <= 1: the log drops
    >= 50 at 10 w and at least linearly beyond (log-concavity), so the cut is < e^-300 relative and the step resolves
    the analytic peak to rounding. Full relative accuracy at every size of the value (what gamma < PAPER_RULE_MIN
    needs: there the peak sits far in the upper tail of the maximum); 0 where the log of the peak is below -800."""
    far_below = shift < -100            # value <= k Phi(-50)^2-ish < e^-2400: 0 in double
    shift = np.clip(shift, -100.0, 100.0)  # above 100: Phi(m + shift) = 1 wherever the weight of m is not 0

    def dlog(m):
        return -m + (k - 1) * inverse_mills(m) + inverse_mills(m + shift)
    lo = np.full(shift.shape, -1.0)
    hi = np.maximum(-shift, 0.0) + np.sqrt(2 * np.log(np.maximum(k, 1))) + 10
    for _ in range(200):
        mid = (lo + hi) / 2
        up = dlog(mid) > 0
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    m0 = (lo + hi) / 2
    w = 1 / np.sqrt(np.maximum(1.0, (dlog(m0 - 1e-4) - dlog(m0 + 1e-4)) / 2e-4))
    m = m0[:, None] + w[:, None] * _PAPER_T[None, :]
    log_f = -m * m / 2 + (k - 1)[:, None] * special.log_ndtr(m) + special.log_ndtr(m + shift[:, None])
    top = log_f[:, 400]      # below -800 the value is < e^-790, 0 in double (and m0 +- w may not even be resolved)
    value = k * np.exp(top) * (np.exp(log_f - top[:, None]).sum(-1) * 0.1 * w) / SQ2PI
    return np.where(far_below | (top < -800), 0.0, np.minimum(value, 1.0))   # a probability (rounding: 1 + 1e-15)


def paper_approx_mp(g, gamma, C):
    k = int(C) - 1
    if g <= 0 or g >= 1:
        return mpmath.mpf(0) if g <= 0 else mpmath.mpf(1)
    shift = mpmath.sqrt(2) * mp_ncdf_inv(g) / mpmath.sqrt(gamma)
    return k * mp_log_concave_integral(lambda m: -m * m / 2 + (k - 1) * mp_log_ncdf(m) + mp_log_ncdf(m + shift),
                                       lambda m: -m + (k - 1) * mp_mills(m) + mp_mills(m + shift)) / mpmath.sqrt(
                                           2 * mpmath.pi)
