"""Architecture ops: one class per op, each carrying all of its maps (the protocol is in ``igbsym.ops.base``).

Adding an op is adding one module here with an ``Op`` subclass: every module of this package is imported and its
public ``Op`` subclasses are exported from ``igbsym.ops`` (``OPS`` lists them by name).
"""
import importlib
import pkgutil

from .act import (SHIFT_CANCEL, arccos_kernel, arccos_loss, arccos_map, erf_kernel, mp_sin_minus_tcos, relu_kernel,
                  sin_minus_tcos, slope_ratio)
from .base import E_MIN, Op, PoolSource, State, check_state, compose, degree, input_state
from .datakernel import Kernel
from .dense import SIGMA_W
from .norms import BatchNorm, LayerNorm, RMSNorm

OPS = {}
for _mod in pkgutil.iter_modules(__path__):
    for _name, _obj in vars(importlib.import_module(f"{__name__}.{_mod.name}")).items():
        if isinstance(_obj, type) and issubclass(_obj, Op) and _obj is not Op and not _name.startswith("_"):
            OPS[_name] = _obj
globals().update(OPS)
NORM_OPS = {"batchnorm": BatchNorm, "layernorm": LayerNorm, "rmsnorm": RMSNorm}

__all__ = ["SHIFT_CANCEL", "arccos_kernel", "arccos_loss", "arccos_map", "erf_kernel", "mp_sin_minus_tcos",
           "relu_kernel", "sin_minus_tcos", "slope_ratio", "E_MIN", "Op", "PoolSource", "State", "check_state",
           "compose", "degree", "input_state", "Kernel", "SIGMA_W", "NORM_OPS", "OPS", *OPS]
