"""The layer engine's mpmath and deep routes, as times in one run (issue 25).

Rows: depth.gamma on the mpmath route (GELU + LayerNorm before phi at 50 digits, L = 300 and 1e5: the walk stops at
the fixed point found by Steffensen's iteration once rho^rest |c - c*| is below the precision, so L = 1e5 costs
less than L = 300, which must walk its layers); resnet.gamma and moments.sensitivity beyond their former depth
cap L <= 12 (resnet: a nested quadrature per block, no fixed point; moments vanilla: chi's stationary tail). Caches
are emptied before every row. The machine may be loaded: compare rows within one run.
Run: python bench/bench_engine.py
"""
import time

import mpmath

import igbsym
from igbsym import gauss, mehler

ROWS = [
    ("depth.gamma", "mp", 50, dict(L=300, activation="gelu", norm="layernorm", placement="pre")),
    ("depth.gamma", "mp", 50, dict(L=10**5, activation="gelu", norm="layernorm", placement="pre")),
    ("resnet.gamma", "numpy", None, dict(L=12, activation="gelu", norm="layernorm", alpha=1.0)),
    ("resnet.gamma", "numpy", None, dict(L=100, activation="gelu", norm="layernorm", alpha=1.0)),
    ("resnet.gamma", "mp", 30, dict(L=12, activation="gelu", norm="layernorm", alpha=1.0)),
    ("resnet.gamma", "mp", 30, dict(L=100, activation="gelu", norm="layernorm", alpha=1.0)),
    ("moments.sensitivity", "numpy", None, dict(L=12, architecture="vanilla", activation="gelu")),
    ("moments.sensitivity", "numpy", None, dict(L=100, architecture="vanilla", activation="gelu")),
    ("moments.sensitivity", "mp", 30, dict(L=100, architecture="vanilla", activation="gelu")),
    ("moments.sensitivity", "mp", 30, dict(L=10**4, architecture="bn_feedforward", activation="relu")),
]


def main():
    print(f"{'form':20} {'route':6} {'case':55} {'value':>24} {'seconds':>8}")
    for name, route, dps, kw in ROWS:
        gauss.clear_caches()
        mehler.coefficients.cache_clear()
        form = igbsym.get(name)
        t0 = time.process_time()
        value = form.mp(dps, **kw) if route == "mp" else form.numpy(**kw)
        seconds = time.process_time() - t0
        case = " ".join(f"{k}={v}" for k, v in kw.items())
        shown = mpmath.nstr(value, 15) if route == "mp" else f"{float(value):.15g}"
        print(f"{name:20} {route + (str(dps) if dps else ''):6} {case:55} {shown:>24} {seconds:8.2f}")


if __name__ == "__main__":
    main()
