"""Theory on the user's own data: the infinite-width (NNGP / CNN-GP) IGB law of a network on a fixed dataset.

- ``walk``: composes the ops' kernel maps (``Op.kernel`` on ``igbsym.ops.datakernel.Kernel``) over the data;
- ``law``: γ in both conventions and the law of the class fractions from the output kernel;
- ``theory``: one call from (spec or ops, data) to a ``DataTheory`` result.
"""
from .law import Law, gamma_estimand, gamma_population, kernel_means, sample
from .theory import DataTheory, theory
from .walk import Summary, Walk, walk

__all__ = ["Law", "gamma_estimand", "gamma_population", "kernel_means", "sample", "DataTheory", "theory", "Summary",
           "Walk", "walk"]
