"""The dataset-kernel state that ``Op.kernel`` maps (composed over a dataset by ``igbsym.nngp``): the
infinite-width second moments of one layer over a fixed dataset.

NNGP / CNN-GP construction (Lee et al. 2018, Eqs. 4–5; Novak et al. 2019, Sec. 2.2 and Eq. 7; Garriga-Alonso et
al. 2019, Sec. 3): at infinite width the units (channels) of a layer are i.i.d. over the weights, so a layer is
described by the kernel k(a, b; p, p') = E_W[h(x_a, p) h(x_b, p')] (one unit; p, p' spatial positions, P = H·W,
P = 1 for features) and the per-example means m(a, p) = E_W h(x_a, p). A layer's units are averages of their
channels' values in the width limit, so for the data themselves k is the channel average (1/C) Σ_c x_a[c, p]
x_b[c, p'] and m the channel mean. Every op maps this state (``Op.kernel``).

``Kernel`` holds a block of pairs in a broadcasting layout: ``k`` [A, B, P, P] the cross entries, ``ka`` [A, 1, P, P]
and ``kb`` [1, B, P, P] the rows' and columns' own kernels (a point with itself), ``ma`` [A, 1, P] and ``mb``
[1, B, P] their means. A grid tile of the D×D matrix has A rows and B columns; a list of n sampled pairs is the same
layout with ka, kb, ma, mb all [n, 1, ...]. ``flat``: the units are features (a Dense may follow; a Flatten makes an
image flat and keeps its positions, which the next Dense averages); ``gaussian``: the units are jointly Gaussian
with zero mean over the weights (Dense/Conv outputs, their norms and linear pools), which an activation needs.
``source``: (the Gaussian kernel before an elementwise activation, the Act op, this block's ``k``) as left by
``Act.kernel``: a max-pool needs the Gaussian units under φ (max_i φ(u_i) is a function of the Gaussian window); it
is current only while ``k`` is that same array (``current_source``), so any op that changes k drops it; a
train-mode BatchNorm leaves (its Gaussian input, itself, its ``k``) there too, for the activation after it.
``whole``: the block is the whole dataset, rows and columns in data order (a BatchNorm needs its batches).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..errors import InputError


@dataclass(frozen=True)
class Kernel:
    """A block of the dataset kernel (module docstring)."""

    k: np.ndarray
    ka: np.ndarray
    kb: np.ndarray
    ma: np.ndarray
    mb: np.ndarray
    hw: tuple = (1, 1)
    flat: bool = True
    gaussian: bool = False
    source: tuple | None = None
    whole: bool = False

    @property
    def P(self) -> int:
        return self.k.shape[-1]

    def replace(self, **kw) -> "Kernel":
        return dataclasses.replace(self, **kw)

    @property
    def va(self) -> np.ndarray:
        """The rows' second moments k(a, a; p, p) [A, 1, P]."""
        return np.diagonal(self.ka, axis1=-2, axis2=-1)

    @property
    def vb(self) -> np.ndarray:
        return np.diagonal(self.kb, axis1=-2, axis2=-1)

    def entrywise(self, fn) -> tuple:
        """(fn(k, va, vb), fn(ka, va, va), fn(kb, vb, vb)) with the variances broadcast against the position pair
        (va [..., P, 1], vb [..., 1, P]): a map of each entry from its own two variances (an activation)."""
        va, vb = self.va, self.vb
        return (fn(self.k, va[..., :, None], vb[..., None, :]), fn(self.ka, va[..., :, None], va[..., None, :]),
                fn(self.kb, vb[..., :, None], vb[..., None, :]))

    def layer_moments(self):
        """Per example, the layer's mean and second moment over its units (channels × positions): (μ_a, s_a, μ_b,
        s_b), each [..., 1, 1] for broadcasting against k (a norm over the whole layer, e.g. LayerNorm)."""
        def one(m, v):
            return m.mean(-1)[..., None, None], v.mean(-1)[..., None, None]
        return (*one(self.ma, self.va), *one(self.mb, self.vb))

    def current_source(self):
        """(Gaussian kernel before φ, the Act op) if this block is φ of that kernel (module docstring), else None."""
        if self.source is None or self.source[2] is not self.k:
            return None
        return self.source[:2]

    def spatial(self, what: str) -> tuple:
        if self.flat:
            raise InputError(f"{what} needs image units [C, H, W]; it follows a Flatten or a Dense")
        return self.hw


def require_flat(s: Kernel, what: str) -> None:
    if not s.flat:
        raise InputError(f"{what} needs feature units; an image layer [C, H, W] must be flattened first (Flatten, "
                         "or a global average pool then Flatten)")


def input_kernel(x: np.ndarray, a_idx, b_idx, flat: bool, pairs: bool = False, whole: bool = False) -> Kernel:
    """The data as a Kernel block: rows a_idx × columns b_idx (grid), or the zipped pairs (a_idx[i], b_idx[i]).

    x [D, d] (features) or [D, C, H, W] (an image); ``flat`` treats an image as its flattened features (a leading
    Flatten: (1/P) Σ_p of the channel average is x_a · x_b / (C P), the Dense's input kernel)."""
    x = np.asarray(x, float)
    if flat or x.ndim == 2:
        f = x.reshape(x.shape[0], -1)
        d = f.shape[1]
        fa, fb = f[a_idx], f[b_idx]
        if pairs:
            k = np.einsum("nd,nd->n", fa, fb)[:, None, None, None] / d
            ka = np.einsum("nd,nd->n", fa, fa)[:, None, None, None] / d
            kb = np.einsum("nd,nd->n", fb, fb)[:, None, None, None] / d
            ma, mb = fa.mean(1)[:, None, None], fb.mean(1)[:, None, None]
        else:
            k = (fa @ fb.T)[:, :, None, None] / d
            ka = np.einsum("nd,nd->n", fa, fa)[:, None, None, None] / d
            kb = np.einsum("nd,nd->n", fb, fb)[None, :, None, None] / d
            ma, mb = fa.mean(1)[:, None, None], fb.mean(1)[None, :, None]
        return Kernel(k, ka, kb, ma, mb, (1, 1), True, False, whole=whole)
    if x.ndim != 4:
        raise InputError(f"data for a convolutional model must be images [D, C, H, W], got shape {x.shape}")
    n, c, h, w = x.shape
    img = x.reshape(n, c, h * w)
    xa, xb = img[a_idx], img[b_idx]
    own = lambda z: np.einsum("ncp,ncq->npq", z, z) / c  # noqa: E731
    if pairs:
        k = np.einsum("ncp,ncq->npq", xa, xb)[:, None] / c
        ka, kb = own(xa)[:, None], own(xb)[:, None]
        ma, mb = xa.mean(1)[:, None], xb.mean(1)[:, None]
    else:
        k = np.einsum("acp,bcq->abpq", xa, xb) / c
        ka, kb = own(xa)[:, None], own(xb)[None]
        ma, mb = xa.mean(1)[:, None], xb.mean(1)[None]
    return Kernel(k, ka, kb, ma, mb, (h, w), False, False, whole=whole)
