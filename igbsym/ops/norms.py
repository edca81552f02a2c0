"""Normalisation ops without affine part: LayerNorm, RMSNorm (per sample over the layer) and BatchNorm (per unit
over the data, training mode).

Width-limit maps (norm-placement-bn-ln.txt Thms E.1, E.2, F.2, F.3, Sec. 4.1.3): LayerNorm centres by the layer
mean m and scales, (q, c, e, m) → (1, (cq − m²)/(q − m²), eq/(q − m²), 0); RMSNorm scales only, (1, c, e, m/√q);
full-batch BatchNorm centres and scales each unit over the data, (1, 0, 1, 0); with mini-batches of B the units are
not Gaussian (the next activation takes its γ from ``bn.gamma_canonical``). Noise factors (Labatie 2019):
1/(q − m²), 1/q and 1/(eq). All three are scale-invariant (degree 0).
Dataset kernel (per example a, over the layer's units: mean μ_a = mean_p m(a, p), second moment s_a = mean_p
k(a, a; p, p), both deterministic at infinite width by the law of large numbers over units): LayerNorm
k' = (k − μ_b m_a − μ_a m_b + μ_a μ_b)/(σ_a σ_b), σ_a² = s_a − μ_a², m' = (m − μ)/σ; RMSNorm k' = k/√(s_a s_b),
m' = m/√s. torch's ε (1e-5 added to σ²) is left out: a relative effect ε/σ². BatchNorm in training mode divides a
unit by its spread over the batch, a random variable shared by all points: no per-pair map, but an exact map of the
whole dataset's kernel (``igbsym.ops.bn_kernel``) in the probe's batches of B consecutive rows: each batch's block,
and each pair of batches' block (two random normalisers, a 2-d integral).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import mpmath
import numpy as np
import sympy as sp

from .base import Op, State, fail, is_zero, sqrt
from .bn_kernel import dataset_moments
from .datakernel import Kernel, require_flat


def _gaussian_units(s: State, name: str) -> None:
    if s.bn_batch is not None:
        fail(f"{name} after a mini-batch BatchNorm has no width-limit map (the units are not Gaussian)")


@dataclass(frozen=True)
class _SampleNorm(Op):
    """A per-sample normalisation over the layer without affine part: the torch module of the same name."""

    stage = "norm"
    degree = 0

    def torch(self, n, device=None, dtype=None):
        from torch import nn
        return getattr(nn, type(self).__name__)(n, elementwise_affine=False, device=device, dtype=dtype)


@dataclass(frozen=True)
class LayerNorm(_SampleNorm):
    """nn.LayerNorm without affine part: subtract the per-sample layer mean (→ m), divide by the layer std."""

    keeps_share = "centred"

    def _map(self, s):
        _gaussian_units(s, "LayerNorm")
        v = s.q - s.m**2
        src = s.pool_src and dataclasses.replace(s.pool_src, shift=s.pool_src.shift + s.m * s.pool_src.scale,
                                                 scale=s.pool_src.scale * sqrt(v))
        return State(1 + 0 * v, s.spread * s.q / v, s.e * s.q / v, 0 * v, s.gaussian, None, src)

    sym = numpy = mp = _map

    def empirical(self, t):
        """Per sample over the N units (biased layer variance, as torch): (1, 1, (G_ab − m_a m_b)/(σ_a σ_b), 0, 0)
        with σ_a² = G_aa − m_a²."""
        t = np.asarray(t, float)
        va, vb = t[:, 0] - t[:, 3] ** 2, t[:, 1] - t[:, 4] ** 2
        one, zero = np.ones(len(t)), np.zeros(len(t))
        return np.stack([one, one, (t[:, 2] - t[:, 3] * t[:, 4]) / np.sqrt(va * vb), zero, zero], axis=1)

    def noise(self, s, backend="numpy"):
        return 1 / (s.q - s.m**2)

    def kernel(self, s: Kernel) -> Kernel:
        mu_a, s_a, mu_b, s_b = s.layer_moments()
        var_a, var_b = s_a - mu_a**2, s_b - mu_b**2
        if (var_a <= 0).any() or (var_b <= 0).any():
            fail("LayerNorm: an example's units are constant (layer variance 0); allowed: data whose examples are "
                 "not constant")
        sd_a, sd_b = np.sqrt(var_a), np.sqrt(var_b)

        def centred(k, ma, mb, mua, mub, sa, sb):
            return (k - mub * ma[..., :, None] - mua * mb[..., None, :] + mua * mub) / (sa * sb)
        return s.replace(k=centred(s.k, s.ma, s.mb, mu_a, mu_b, sd_a, sd_b),
                         ka=centred(s.ka, s.ma, s.ma, mu_a, mu_a, sd_a, sd_a),
                         kb=centred(s.kb, s.mb, s.mb, mu_b, mu_b, sd_b, sd_b),
                         ma=(s.ma - mu_a[..., 0]) / sd_a[..., 0], mb=(s.mb - mu_b[..., 0]) / sd_b[..., 0])


@dataclass(frozen=True)
class RMSNorm(_SampleNorm):
    """nn.RMSNorm without affine part: divide by the per-sample root mean square (→ √q); keeps the mean."""

    keeps_share = True

    def _map(self, s):
        _gaussian_units(s, "RMSNorm")
        r = sqrt(s.q)
        src = s.pool_src and dataclasses.replace(s.pool_src, scale=s.pool_src.scale * r)
        return State(1 + 0 * s.q, s.c, s.e, s.m / r, s.gaussian, None, src, s.d)

    sym = numpy = mp = _map

    def empirical(self, t):
        """Per sample over the N units: (1, 1, G_ab/√(G_aa G_bb), m_a/√G_aa, m_b/√G_bb)."""
        t = np.asarray(t, float)
        one = np.ones(len(t))
        return np.stack([one, one, t[:, 2] / np.sqrt(t[:, 0] * t[:, 1]), t[:, 3] / np.sqrt(t[:, 0]),
                         t[:, 4] / np.sqrt(t[:, 1])], axis=1)

    def noise(self, s, backend="numpy"):
        return 1 / s.q

    def kernel(self, s: Kernel) -> Kernel:
        _, s_a, _, s_b = s.layer_moments()
        if (s_a <= 0).any() or (s_b <= 0).any():
            fail("RMSNorm: an example's units are all 0; allowed: data whose examples are not zero")
        ra, rb = np.sqrt(s_a), np.sqrt(s_b)
        return s.replace(k=s.k / (ra * rb), ka=s.ka / (ra * ra), kb=s.kb / (rb * rb), ma=s.ma / ra[..., 0],
                         mb=s.mb / rb[..., 0])


@dataclass(frozen=True)
class BatchNorm(Op):
    """nn.BatchNorm1d in training mode without affine part; B None/'full' = full batch, else mini-batches of B."""

    B: object = None
    stage = "norm"
    degree = 0
    whole_data = True

    def __post_init__(self):
        if self.B == "full" or (self.B is not None and not isinstance(self.B, sp.Basic)
                                and np.all(np.isinf(np.asarray(self.B, float)))):
            object.__setattr__(self, "B", None)

    def _map(self, s, one, zero):
        _gaussian_units(s, "BatchNorm")
        return State(one, zero, one, zero, self.B is None, self.B)

    def sym(self, s):
        return self._map(s, sp.S.One, sp.S.Zero)

    def numpy(self, s):
        shape = np.broadcast(np.asarray(s.q), np.asarray(s.c)).shape
        return self._map(s, np.ones(shape), np.zeros(shape))

    def mp(self, s):
        return self._map(s, mpmath.mpf(1), mpmath.mpf(0))

    def torch(self, n, device=None, dtype=None):
        from torch import nn
        return nn.BatchNorm1d(n, affine=False, track_running_stats=False, device=device, dtype=dtype)

    def batched(self, h, take):
        """Per init, over consecutive mini-batches of B rows (one module call for all inits and batches)."""
        n_init, n, width = h.shape
        b = int(self.B)
        y = h.reshape(n_init, n // b, b, width).permute(2, 0, 1, 3).reshape(b, -1)
        y = self.torch(y.shape[1], h.device, h.dtype)(y)
        return y.reshape(b, n_init, n // b, width).permute(1, 2, 0, 3).reshape(n_init, n, width)

    def noise(self, s, backend="numpy"):
        """1/(eq): every unit has the data variance eq (Gaussian units, or no centre spread)."""
        if self.B is not None:
            fail("sensitivity: mini-batch BatchNorm has no width-limit noise map (use full batch)")
        if not s.gaussian and not is_zero(s.c):
            fail("sensitivity: BatchNorm on units with unequal data variances (after an activation with a centre "
                 "spread) has no width-limit noise map")
        return 1 / (s.e * s.q)

    @property
    def rows(self):
        return self.B

    def _batch_kernel(self, s: Kernel) -> np.ndarray:
        """The pre-BatchNorm kernel of the whole dataset [D, D] (refusals in one line)."""
        require_flat(s, "BatchNorm (training mode)")
        if not s.gaussian:
            fail("BatchNorm (training mode): its input units are not Gaussian (a Dense must come before it; "
                 "BatchNorm after an activation has no kernel map here)")
        if not s.whole:
            fail("BatchNorm (training mode) needs the whole dataset's kernel (every pair: no --pairs)")
        return s.k[:, :, 0, 0]

    @staticmethod
    def _moments(s: Kernel, second: np.ndarray, mean) -> Kernel:
        d = np.diagonal(second)
        k = second[:, :, None, None]
        ma = np.zeros((1, 1, 1)) if mean is None else mean[:, None, None]
        mb = ma if mean is None else mean[None, :, None]
        return s.replace(k=k, ka=d[:, None, None, None], kb=d[None, :, None, None], ma=ma, mb=mb, gaussian=False,
                         source=None)

    def kernel(self, s: Kernel) -> Kernel:
        """E[y_a y_b] of the BatchNorm outputs (``bn_kernel``); the Gaussian input is kept for an activation."""
        second, _ = dataset_moments(self._batch_kernel(s), self.B, 1.0)
        out = self._moments(s, second, None)
        return out.replace(source=(s, self, out.k))

    def activation_kernel(self, s: Kernel, act) -> Kernel:
        """E[φ(y_a)φ(y_b)] and E φ(y_a) after this BatchNorm, from its Gaussian input ``s``: exact for
        φ = x⁺ − slope·x⁻ (``bn_kernel``), and srelu (relu minus a constant)."""
        if not act.closed_form:
            fail(f"activation {act.name} after a train-mode BatchNorm over a dataset has no kernel map; allowed: "
                 "the positively homogeneous ones (relu, leaky_relu, identity, abs) and srelu")
        second, mean = dataset_moments(self._batch_kernel(s), self.B, float(act.slope))
        if act.name == "srelu":
            kap = float(act.shift_value("numpy"))
            second = second - kap * (mean[:, None] + mean[None, :]) + kap * kap
            mean = mean - kap
        return self._moments(s, second, mean)

    def full_batch(self, n_data):
        return BatchNorm(n_data) if self.B is None else self
