"""The layer engine: one walk over a spec's ops for every family that iterates layers (depth, resnet, moments,
predict), with pluggable exact shortcuts (``routes``: arc-cosine, srelu's shift, Mehler; ``tails``: fixed point,
geometric and affine tails; ``fixed``: Steffensen's fixed point) so that depth costs nothing."""
from .paths import biased, chi_last, chi_path, layer_gammas, periodic, readout_gammas, states
from .walk import points, walk

__all__ = ["biased", "chi_last", "chi_path", "layer_gammas", "periodic", "readout_gammas", "states", "points", "walk"]
