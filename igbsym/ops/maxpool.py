"""MaxPool2d: nn.MaxPool2d(k, stride, padding) over image units [C, H, W], and its dataset-kernel map (issue 46).

Dataset kernel. At infinite width the channels are i.i.d., and one channel's window of units at two data points is
the image of a jointly Gaussian vector: the units are φ(u) for the Gaussian pre-activations u of the layer before
the activation (``Kernel.current_source``; or u itself where the input is Gaussian), and max_i φ(u_i) over a window.
So k'(a, b; p, p') = E[g_a(p) g_b(p')], g(p) = max_{i ∈ W(p)} φ(u_i), over the 2P-dimensional Gaussian of the two
points' position fields (covariance [[k_aa, k_ab], [k_ba, k_bb]] over positions), and the map carries the post-pool
mean m'(a, p) = E g_a(p) (the max of Gaussians has a non-zero mean: k' is the uncentred kernel, as the residual map
carries it). torch pads with −∞: a window holds only the real positions it covers (W(p) is clipped; its index list is
filled up with a repeated unit, which does not change a max). The output is not Gaussian (gaussian=False).

Routes, by window size w = |W(p)| and φ:
- w = 1 everywhere: the units pass (the map gathers the input kernel).
- w <= 2 and φ = identity (a Gaussian input): exact. max(u₁, u₂) = (s + |d|)/2 with s = u₁ + u₂, d = u₁ − u₂, so
  E[g_a g_b] = (E[s_a s_b] + E|d_a||d_b|)/4 (E[s_a |d_b|] = 0: (u, v) → (−u, −v) leaves the law and flips the sign)
  and E g = E|d|/2 = σ_d/√(2π) (Clark 1961: the mean of the max of two Gaussians); E|X||Y| is the arc-cosine
  kernel of |x| (``act.arccos_kernel`` with slope −1). Relative error <= 1e-14 (rounding of a closed form).
- otherwise: randomised quasi-Monte Carlo. A scrambled Sobol point set of ``draws`` points in 2P dimensions (seed
  ``seed``), mapped to N(0, I) by Φ⁻¹, is pushed through the Cholesky factor of each pair's joint covariance (a
  relative 1e-6 of the largest variance added to its diagonal where positions have no variance: a bias <= 1e-6
  relative), then φ and the window maxima; k' = (1/M) G_a G_bᵀ, m' = mean G. Float32 fields (rounding 1e-7 ≪ the
  sampling error). Every value is unbiased (each Sobol point is marginally uniform); its error is the sampling
  error of the point set, of relative size ~ RQMC_REL/√(draws/1024) per entry (measured: tests/test_maxpool_kernel.py
  and bench/bench_maxpool_kernel.py). One seed gives every tile the same point set (common random numbers: a pair
  and the points' own kernels share their errors, which cancel in T − M_off), so the error of γ_∞ is estimated by
  independent seeds (``replicas``: γ_∞ ± SE over R walks). The nonlinear maps after a pool turn the per-entry
  variance into a bias of second order (relative ~ (RQMC_REL)²/ (draws/1024)), below the replicate SE.
The i.i.d. limit (ka = σ² I, k_ab = 0) is the ``maxpool`` family's max of k i.i.d. units (tests).
Width-limit State map: none (the i.i.d. N(0, I) state has no positions; ``MaxPool`` is the 1-d pool of that state).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import special
from scipy.stats import qmc

from ..errors import NumericalError
from .act import arccos_kernel
from .base import Op, fail
from .conv import no_noise_map, no_state_map, out_size
from .datakernel import Kernel

DRAWS = 1024           # Sobol points per map (a power of 2)
JITTER = 1e-6          # relative diagonal added before a Cholesky factor (positions without variance; the
                       # float32 rounding of the sampled kernels)
CHUNK_BYTES = 1 << 25  # float32 bytes of sampled fields per chunk of pairs
RQMC_REL = 0.02        # the measured relative sampling error per entry at 1024 points (stated, module docstring)


def windows(h: int, w: int, k: int, stride: int, padding: int) -> np.ndarray:
    """[P', k²] the flat input positions of each output window (clipped to the image as torch's −∞ padding is;
    filled up with the window's first unit)."""
    ho, wo = out_size(h, k, stride, padding), out_size(w, k, stride, padding)
    out = np.empty((ho * wo, k * k), int)
    for i in range(ho):
        rows = [r for r in range(i * stride - padding, i * stride - padding + k) if 0 <= r < h]
        for j in range(wo):
            cols = [c for c in range(j * stride - padding, j * stride - padding + k) if 0 <= c < w]
            if not rows or not cols:
                fail(f"MaxPool2d(k={k}, padding={padding}): a window covers only padding; allowed: padding <= k/2")
            cell = [r * w + c for r in rows for c in cols]
            out[i * wo + j] = cell + [cell[0]] * (k * k - len(cell))
    return out


@lru_cache(maxsize=16)
def normal_points(dim: int, draws: int, seed: int) -> np.ndarray:
    """[dim, draws] float32: a scrambled Sobol set mapped to N(0, 1) by Φ⁻¹ (clipped off 0 and 1)."""
    u = qmc.Sobol(dim, scramble=True, seed=seed).random(draws)
    return special.ndtri(np.clip(u, 1e-16, 1 - 1e-16)).T.astype(np.float32).copy()


def factor(cov: np.ndarray, scale=None) -> np.ndarray:
    """Batched square roots R Rᵀ = cov + JITTER·scale·I of symmetric matrices [..., n, n] (scale: the largest
    variance, or the given [..., 1, 1]): the Cholesky factor, or where a matrix of the chunk is not positive
    definite (a Schur complement of sampled kernels, indefinite by their sampling error), U √max(λ, 0) of its
    eigendecomposition: the nearest PSD covariance (a change of the order of the error already in the input)."""
    if scale is None:
        scale = np.diagonal(cov, axis1=-2, axis2=-1).max(-1)[..., None, None]
    cov = cov + JITTER * np.maximum(scale, 1e-300) * np.eye(cov.shape[-1])
    return _root(cov)


def _root(cov):
    """Cholesky where the whole chunk is positive definite; else halves, down to eigendecompositions of 8."""
    try:
        return np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        if len(cov) > 8:
            half = len(cov) // 2
            return np.concatenate([_root(cov[:half]), _root(cov[half:])])
    lam, U = np.linalg.eigh((cov + np.swapaxes(cov, -1, -2)) / 2)
    if not np.isfinite(lam).all():
        raise NumericalError("MaxPool2d: a window covariance has NaN/inf entries")
    return U * np.sqrt(np.maximum(lam, 0.0))[..., None, :]


def separable_max(hw, k: int, stride: int, padding: int):
    """f [n, H·W, M] -> [n, H'·W', M]: the max over each k×k window (torch's −∞ padding), rows then columns, by
    strided slices (a k×k max is the max over rows of the max over columns)."""
    h, w = hw
    ho, wo = out_size(h, k, stride, padding), out_size(w, k, stride, padding)

    def along(x, axis, n_out):
        if padding:
            pad = [(0, 0)] * x.ndim
            pad[axis] = (padding, padding)
            x = np.pad(x, pad, constant_values=-np.inf)
        sl = [slice(None)] * x.ndim
        out = None
        for off in range(k):
            sl[axis] = slice(off, off + stride * (n_out - 1) + 1, stride)
            out = x[tuple(sl)].copy() if out is None else np.maximum(out, x[tuple(sl)], out=out)
        return out

    def pool(f):
        x = f.reshape(f.shape[0], h, w, f.shape[-1])
        x = along(along(x, 2, wo), 1, ho)
        return x.reshape(f.shape[0], ho * wo, f.shape[-1])
    return pool


def joint_factor(A, K, B):
    """Factors (L_a, C, L_c) of the pair covariance [[A, K], [Kᵀ, B]] = L Lᵀ, L = [[L_a, 0], [C, L_c]]: L_a is the
    point's own factor (so the pair's sampled a-field is exactly its own: the estimated joint kernel is a Gram
    matrix, PSD), C = (L_a⁻¹ K)ᵀ, L_c the factor of the Schur complement B − C Cᵀ (jitter scaled by B)."""
    La = factor(A)
    C = np.linalg.solve(La, K).transpose(0, 2, 1)
    S = B - C @ C.transpose(0, 2, 1)
    return La, C, factor(S, np.diagonal(B, axis1=-2, axis2=-1).max(-1)[:, None, None])


@dataclass(frozen=True)
class MaxPool2d(Op):
    """nn.MaxPool2d(k, stride, padding) (stride None: k); ``draws``/``seed``: the QMC point set (module docstring)."""

    k: int = 2
    stride: int | None = None
    padding: int = 0
    draws: int = DRAWS
    seed: int = 0
    stage = "pool"
    spatial = True
    sampled_kernel = True
    sym = numpy = mp = no_state_map
    noise = no_noise_map

    def __post_init__(self):
        if not (isinstance(self.k, int) and self.k >= 1):
            fail(f"MaxPool2d: k must be an integer >= 1, got {self.k!r}")
        if not (isinstance(self.padding, int) and 0 <= 2 * self.padding <= self.k):
            fail(f"MaxPool2d: padding must be an integer in [0, k/2], got {self.padding!r}")
        if not (isinstance(self.draws, int) and self.draws >= 2 and self.draws & (self.draws - 1) == 0):
            fail(f"MaxPool2d: draws must be a power of 2 >= 2, got {self.draws!r}")

    def replica(self, r: int) -> "MaxPool2d":
        """The op with an independent QMC point set (replicate r of a walk)."""
        return dataclasses.replace(self, seed=self.seed + 7919 * (r + 1))

    def torch(self, n, device=None, dtype=None):
        from torch import nn
        return nn.MaxPool2d(self.k, self.stride, self.padding)

    def kernel(self, s: Kernel) -> Kernel:
        h, w = s.spatial("MaxPool2d")
        st = self.k if self.stride is None else self.stride
        idx = windows(h, w, self.k, st, self.padding)
        hw = (out_size(h, self.k, st, self.padding), out_size(w, self.k, st, self.padding))
        width = max(len(set(row)) for row in idx.tolist())
        src = s.current_source()
        if width == 1:
            return _gathered(s, idx[:, 0], hw)
        if src is None and not s.gaussian:
            fail("MaxPool2d: its input units are neither Gaussian nor an activation of Gaussian units (a Conv2d, or "
                 "Conv2d -> activation, must come before it)")
        gauss, act = (s, None) if src is None else src
        if act is None and width <= 2:
            return _exact_two(gauss, idx[:, :2], hw)
        return self._sampled(gauss, act, idx, hw)

    def _sampled(self, g: Kernel, act, idx, hw) -> Kernel:
        """The QMC route (module docstring) over every pair of the block and the points' own kernels."""
        P = g.P
        z = normal_points(2 * P, self.draws, self.seed)
        phi = (lambda x: x) if act is None else act.apply_np

        pool = separable_max(g.hw, self.k, self.k if self.stride is None else self.stride, self.padding)

        def pooled(f):                                        # [n, P, M] -> [n, P', M]
            return pool(phi(f))

        def gram(Ga, Gb):                    # float32 products: rounding ~1e-6 relative, far below the QMC error
            return np.matmul(Ga, Gb.transpose(0, 2, 1)).astype(float) / self.draws

        def sample(L, zz):                   # [n, P, m] @ [m, M]: one GEMM over the stacked rows
            return (L.reshape(-1, L.shape[-1]) @ zz).reshape(L.shape[:-1] + (self.draws,))

        def own(kk):                     # a point with itself: its P-dimensional field
            flat = kk.reshape((-1, P, P))
            G = [pooled(sample(factor(flat[lo:lo + per]).astype(np.float32), z[:P])) for lo in range(0, len(flat), per)]
            Q = idx.shape[0]
            return (np.concatenate([gram(g_, g_) for g_ in G]).reshape(kk.shape[:-2] + (Q, Q)),
                    np.concatenate([g_.mean(-1) for g_ in G]).astype(float).reshape(kk.shape[:-2] + (Q,)))
        per = max(1, CHUNK_BYTES // (8 * P * self.draws))
        ka, ma = own(g.ka)
        kb, mb = own(g.kb)
        lead = np.broadcast_shapes(g.k.shape[:-2], g.ka.shape[:-2], g.kb.shape[:-2])
        K, A, B = (np.broadcast_to(x, lead + (P, P)).reshape((-1, P, P)) for x in (g.k, g.ka, g.kb))
        Q = idx.shape[0]
        own_b = np.broadcast_to(kb, lead + (Q, Q)).reshape((-1, Q, Q))
        out = []
        for lo in range(0, K.shape[0], per):
            sl = slice(lo, lo + per)
            La, C, Lc = joint_factor(A[sl], K[sl], B[sl])
            Ga = pooled(sample(La.astype(np.float32), z[:P]))      # exactly a's own sample (its own kernel)
            Gb = pooled(sample(np.concatenate([C, Lc], 2).astype(np.float32), z))
            # control variate: b's own kernel replaces the pair sample's estimate of it (mean-zero correction), so
            # k_aa + k_bb − 2 k_ab is the pair's own precise E[(g_a − g_b)²]: the point differences γ rests on
            out.append(gram(Ga, Gb) + (own_b[sl] - gram(Gb, Gb)) / 2)
        return Kernel(np.concatenate(out).reshape(lead + out[0].shape[1:]), ka, kb, ma, mb, hw, False, False)


def _gathered(s: Kernel, pos: np.ndarray, hw) -> Kernel:
    """Windows of one unit: the units pass (positions ``pos`` kept)."""
    def sub(kk):
        return kk[..., pos, :][..., :, pos]
    pick = lambda m: np.broadcast_to(m, m.shape[:-1] + (s.P,))[..., pos]  # noqa: E731
    return s.replace(k=sub(s.k), ka=sub(s.ka), kb=sub(s.kb), ma=pick(s.ma), mb=pick(s.mb), hw=hw, source=None)


def _exact_two(s: Kernel, pairs: np.ndarray, hw) -> Kernel:
    """Windows of two Gaussian units (module docstring): (E[s_a s_b] + E|d_a||d_b|)/4 and E g = σ_d/√(2π)."""
    i, j = pairs[:, 0], pairs[:, 1]

    def sums(kk, sign):                                   # E[(u_i ± u_j)(v_i' ± v_j')] over output position pairs
        def at(x, y):
            return kk[..., x, :][..., :, y]
        return at(i, i) + sign * at(i, j) + sign * at(j, i) + at(j, j)

    def one(kk, dvar_r, dvar_c):
        return (sums(kk, 1.0) + arccos_kernel(sums(kk, -1.0), dvar_r, dvar_c, -1.0)) / 4

    def dvar(kk):                                          # Var(u_i − u_j) per output position [..., P']
        return np.maximum(np.diagonal(sums(kk, -1.0), axis1=-2, axis2=-1), 0.0)
    da, db = dvar(s.ka), dvar(s.kb)
    k = one(s.k, da[..., :, None], db[..., None, :])
    ka = one(s.ka, da[..., :, None], da[..., None, :])
    kb = one(s.kb, db[..., :, None], db[..., None, :])
    return Kernel(k, ka, kb, np.sqrt(da / (2 * np.pi)), np.sqrt(db / (2 * np.pi)), hw, False, False)
