"""The product H(w) = prod_j Phi(w - u_j) over the other means and the trapezoid grid of the law tables (IGB paper
App. H, C >= 4): G_c given the others is int phi(w - u_c) H(w) dw. Exact products below C = BINNED_FROM
(cdf_of_max, core_cdf); from there the others are binned on a lattice and log H is a 5th-order Taylor expansion in
the bins' exact moments, one matrix product (binned_log_cdf_of_max; remainder eta <= 1.5e-8 at C = 1000, computed per
table). The grid (law_grid) and its step (_step: the trapezoid error ~exp(-pi^2 b/h) below 2e-11)."""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import special

from .common import SQ2PI

H_Z = 0.2               # largest trapezoid step in the data-noise variable (see _step)


def _step(C: int) -> float:
    """Trapezoid step for integrals against prod_j Phi(w - u_j) over <= C classes. That product is (up to) the CDF
    of a maximum of C normals, Gumbel-like with scale b = 1/sqrt(2 ln C), whose Fourier transform decays only like
    exp(-pi b |omega|/2): the trapezoid error is ~exp(-pi^2 b/h); h = 0.4 b keeps it below 2e-11."""
    return min(H_Z, 0.4 / math.sqrt(2 * math.log(max(C, 2))))


def cdf_of_max(w: np.ndarray, u: np.ndarray, block: int = 64) -> np.ndarray:
    """H[s, k] = prod_j Phi(w[s, k] - u[s, j]) (the CDF of max_j (u_j + eps_j)) for rows u[s, :] in descending order.
    A factor with w - u_j > 8.3 is 1 in double precision, so whole blocks of small u_j are skipped where they are."""
    H = np.ones(w.shape)
    lead = w - u[:, :1]
    for j0 in range(0, u.shape[1], block):
        uj = u[:, j0:j0 + block]
        cols = np.nonzero((lead - (uj[:, :1] - u[:, :1]) < 8.3).any(0))[0]
        if cols.size == 0:
            break
        a, b = cols[0], cols[-1] + 1
        H[:, a:b] *= special.ndtr(w[:, a:b, None] - uj[:, None, :]).prod(-1)
    return H


def grid_offsets(C: int, below: float, above: float) -> tuple:
    """(h, offsets w - max u) of the trapezoid grid for C classes: from max - below to max + sqrt(2 ln C) + above."""
    h = _step(C)
    top = math.sqrt(2 * math.log(max(C, 2))) + above
    return h, -below + h * np.arange(int(math.ceil((top + below) / h)) + 1)


@lru_cache(maxsize=32)
def law_grid(C: int):
    """The law tables' grid for the C - 1 other classes: w offsets [-20.5, x + 17.5] (x = sqrt(2 ln(C-1))) of step h,
    of which H is computed on the core [-8.5, x + 8.5] (H <= Phi(w - max) < 1e-17 below, 1 - H < 1e-17 above); u
    offsets [-12, x + 9] of step h / U_REFINE; the kernels h phi(w - u) and h (w - u) phi(w - u) for G and dG/du."""
    h, rel = grid_offsets(C - 1, 20.5, 17.5)
    x = rel[-1] - 17.5
    core = (int(np.searchsorted(rel, -8.5)), int(np.searchsorted(rel, x + 8.5)))
    ui = (int(np.searchsorted(rel, -12.0)), int(np.searchsorted(rel, x + 9.0)))
    rel_u = rel[ui[0]] + h / U_REFINE * np.arange(U_REFINE * (ui[1] - ui[0] - 1) + 1)
    d = rel[None, :] - rel_u[:, None]
    ker = np.exp(-d * d / 2) / SQ2PI * h
    return rel, core, rel_u, ker.T.copy(), (d * ker).T.copy()


U_REFINE = 2   # the u grid (G_hat, its inversion) at h / 2: the cubic Hermite root's error falls 16x (det_relative)


def core_cdf(u: np.ndarray, w: np.ndarray) -> np.ndarray:
    """H on the core grid w [rows, n] (see law_grid) by the exact product: every 8th point first; where all rows are
    < 1e-18 (below) or > 1 - 1e-17 (above) H is monotone, so it is set to 0 / 1 there and computed only in between."""
    H = np.zeros(w.shape)
    coarse = np.arange(0, w.shape[1], 8)
    hc = cdf_of_max(w[:, coarse], u)
    low = np.nonzero((hc <= 1e-18).all(0))[0]
    high = np.nonzero((hc >= 1 - 1e-17).all(0))[0]
    a = coarse[low[-1]] if low.size else 0
    b = coarse[high[0]] + 1 if high.size else w.shape[1]
    H[:, b:] = 1.0
    H[:, a:b] = cdf_of_max(w[:, a:b], u)
    return H


TAYLOR_ORDER = 5         # p: per bin the exact moments sum_j e_j^n, n <= p, of the offsets e_j from the bin centre
D_CUT = 17.5             # others more than D_CUT below the top are dropped: w - u_j >= -8.5 + D_CUT = 9 on the core
LOG_PHI_9 = 1.2e-19      # >= |log Phi(x)| for x >= 9 (= Phi(-9)/Phi(9) (1 + 1e-18) = 1.13e-19): per dropped other
D6_SUP = 0.4456          # >= sup_x |d^6/dx^6 log Phi(x)| (0.445478 at x = 1.949; tests check it on a fine grid)
BINNED_FROM = 10         # the binned route for C >= BINNED_FROM; below it saves nothing (measured: equal at C = 8)


def inverse_mills(x):
    """lam(x) = phi(x)/Phi(x) = (log Phi)'(x), through log_ndtr (no underflow of Phi in the lower tail)."""
    return np.exp(-x * x / 2 - special.log_ndtr(x)) / SQ2PI


def log_phi_derivatives(x: np.ndarray, n: int) -> np.ndarray:
    """[n + 1, len(x)]: f^(k)(x) for f = log Phi, k = 0..n. f' = lam = phi/Phi (the inverse Mills ratio of -x) and
    lam' = -lam (x + lam), so f^(k) = P_k(x, lam) with P_1 = lam, P_(k+1) = dP_k/dx - lam (x + lam) dP_k/dlam
    (coefficient arrays c[a, b] of x^a lam^b; derivations/multiclass.py checks them by SymPy). f and lam from
    log_ndtr (no underflow). For x >= -8.6 (all this module uses) the polynomials lose < 1e-8 absolute to
    cancellation (k <= 6; measured against mpmath), which the moments they multiply (<= (h/2)^k/k! each) make
    < 1e-17 in log H."""
    x = np.asarray(x, float)
    lam = inverse_mills(x)
    out, c = [special.log_ndtr(x), lam], np.array([[0.0, 1.0]])
    for _ in range(n - 1):
        nx, nl = c.shape
        nxt = np.zeros((nx + 1, nl + 1))
        nxt[:nx - 1, :nl] += c[1:] * np.arange(1, nx)[:, None]         # d/dx x^a lam^b
        dl = c * np.arange(nl)[None, :]                                  # b x^a lam^(b-1) times -(x lam + lam^2)
        nxt[1:, :nl] -= dl
        nxt[:nx, 1:] -= dl
        c = nxt
        out.append(np.polynomial.polynomial.polyval2d(x, lam, c))
    return np.array(out[:n + 1])


@lru_cache(maxsize=8)
def _taylor_table(C: int) -> np.ndarray:
    """B [K + 1, p + 1, n_core]: (-1)^n/n! f^(n)(rel_i + k h) for the bins k = 0..K (centre k h below the top other
    mean, K h >= D_CUT), the Taylor orders n <= p and the core grid offsets rel_i (law_grid)."""
    rel, (c0, c1) = law_grid(C)[:2]
    h = rel[1] - rel[0]
    k = np.arange(math.ceil(D_CUT / h) + 2)
    x = rel[None, c0:c1] + h * k[:, None]
    f = log_phi_derivatives(x.ravel(), TAYLOR_ORDER).reshape((TAYLOR_ORDER + 1,) + x.shape)
    sign = np.array([(-1) ** n / math.factorial(n) for n in range(TAYLOR_ORDER + 1)])
    return np.ascontiguousarray((f * sign[:, None, None]).transpose(1, 0, 2))


def binned_log_cdf_of_max(u: np.ndarray, C: int) -> tuple:
    """(log H [rows, n_core], eta [rows]) for H[s, i] = prod_j Phi(w_i - u[s, j]) on the core grid w = u[s, 0] +
    rel[c0:c1] (law_grid, step h) of rows u[s, :] (descending, C - 1 others), with |log H - exact| <= eta[s] at every
    w (plus floating-point rounding, relative ~1e-15 of the terms summed).

    The others are put in bins of width h on a lattice hanging from the top (centres u_0 - k h), so every (bin, w)
    pair sits at x = w - centre = rel_i + k h, a point of one shared lattice. With the exact moments
    M_n[k] = sum_(j in k) e_j^n (e_j = u_j - centre, |e_j| <= h/2), sum_(j in k) log Phi(x - e_j) =
    sum_(n <= p) M_n[k] (-1)^n f^(n)(x)/n! + R_k, |R_k| <= D6_SUP/6! sum_(j in k) |e_j|^6 (Lagrange, p = 5), so log H
    is one matrix product moments [rows, bins x orders] @ _taylor_table. Others more than D_CUT below the top add
    |log Phi| <= LOG_PHI_9 each and are dropped. eta = D6_SUP/720 sum_j |e_j|^6 + LOG_PHI_9 (number dropped)
    <= D6_SUP/720 (C - 1) (h/2)^6 (4e-9 at C = 10, 1.5e-8 at C = 1000, 6.4e-8 at C = 10^4)."""
    rel = law_grid(C)[0]
    h = rel[1] - rel[0]
    table = _taylor_table(C)
    d = u[:, :1] - u                                       # >= 0: depth below the top
    keep = d <= D_CUT
    k = np.rint(d / h)
    e = (k * h - d)[keep]                                  # u_j - centre, |e| <= h/2
    k = k[keep].astype(np.int64)
    n_bins = int(k.max()) + 1                              # bins 0..n_bins-1 (the others sit in a prefix)
    row = np.nonzero(keep)[0]
    idx = row * n_bins + k
    size = u.shape[0] * n_bins
    moments, power = [np.bincount(idx, minlength=size).astype(float)], np.ones(e.shape)
    for _ in range(TAYLOR_ORDER):
        power *= e
        moments.append(np.bincount(idx, power, minlength=size))
    A = np.stack(moments, -1).reshape(u.shape[0], -1)      # [rows, bins x orders]
    log_h = A @ table[:n_bins].reshape(A.shape[1], -1)
    eta = D6_SUP / 720 * np.bincount(row, power * e, minlength=u.shape[0])    # e^6 = |e|^6
    return log_h, eta + LOG_PHI_9 * (~keep).sum(1)
