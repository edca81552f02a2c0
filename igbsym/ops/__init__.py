"""Architecture ops: one class per op, each carrying all of its maps (the protocol is in ``igbsym.ops.base``).

Adding an op is adding one module here that subclasses ``Op`` and exporting it below.
"""
from .act import (SHIFT_CANCEL, Act, arccos_kernel, arccos_map, erf_kernel, mp_sin_minus_tcos, relu_kernel,
                  sin_minus_tcos, slope_ratio)
from .base import E_MIN, Op, PoolSource, State, check_state, compose, degree, input_state
from .conv import Conv2d
from .datakernel import Kernel
from .dense import SIGMA_W, Dense
from .norms import BatchNorm, LayerNorm, RMSNorm
from .pool import MaxPool
from .residual import Residual
from .spatial import AvgPool2d, Flatten, GlobalAvgPool

NORM_OPS = {"batchnorm": BatchNorm, "layernorm": LayerNorm, "rmsnorm": RMSNorm}

__all__ = ["SHIFT_CANCEL", "Act", "arccos_map", "mp_sin_minus_tcos", "sin_minus_tcos", "slope_ratio", "E_MIN", "Op",
           "PoolSource", "State", "check_state", "compose", "degree", "input_state", "SIGMA_W", "Dense", "BatchNorm",
           "LayerNorm", "RMSNorm", "MaxPool", "Residual", "NORM_OPS", "Conv2d", "Kernel", "AvgPool2d", "Flatten",
           "GlobalAvgPool", "arccos_kernel", "erf_kernel", "relu_kernel"]
