"""Deep depth.gamma routes against the plain layer walk, measured as ratios in one run (issue 17).

For GELU/SiLU with RMSNorm after phi the block map at a fixed q = sigma_w^2 is iterated as Mehler's polynomial
(igbsym/mehler.py) for sigma_w^2 <= 0.01, and elsewhere stops at a fixed point found by Steffensen's iteration or
takes a geometric tail. The baseline is the plain composition of spec's NumPy maps, one nested quadrature a layer
(what depth.path did in these regimes before). Each row: L layers, the route's time (its first call, before any
cache holds its coefficients or moments), the walk's time,
their ratio and the route's relative difference from the walk (the walk carries its own rounding, ~1e-13). The
machine may be loaded: only the ratios within one run are meaningful.
Run: python bench/bench_depth.py [--layers L]
"""
import argparse

import igbsym
from igbsym import mehler
from igbsym import gauss, ops as O
from igbsym.families import depth as D
from timing import best_of

CASES = [("gelu", "rmsnorm", "post", 1e-3), ("silu", "rmsnorm", "post", 0.05), ("gelu", "rmsnorm", "post", 2.0),
         ("silu", "layernorm", "pre", 0.5), ("sigmoid", "rmsnorm", "post", 6.0)]


def walk(act, norm, placement, sw, L):
    ops = D.block(act, norm, placement, 0.01, sw)
    state = O.Dense(None, sw).map(O.input_state("numpy"), "numpy")
    for _ in range(L):
        for op in ops:
            state = op.map(state, "numpy")
    return float(state.c) / float(state.e)


def cold():
    """Empty the memo caches, so neither timing reuses the other's moments (the walk repeated the route's states)."""
    gauss.clear_caches()
    mehler.coefficients.cache_clear()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=1000, help="depth L (default 1000)")
    L = ap.parse_args().layers
    form = igbsym.get("depth.gamma")
    print(f"{'case':36} {'route s':>9} {'walk s':>9} {'walk/route':>11} {'rel diff':>9}")
    for act, norm, placement, sw in CASES:
        def route():
            return float(form.numpy(L=L, activation=act, norm=norm, placement=placement, sigma_w=sw))
        cold()
        t_route = best_of(route, 1)      # first call: cold caches
        cold()
        t_walk = best_of(lambda: walk(act, norm, placement, sw, L), 1)
        value, ref = route(), walk(act, norm, placement, sw, L)
        print(f"{act} + {norm} {placement}, sigma_w = {sw:<8g} {t_route:9.3f} {t_walk:9.2f} {t_walk / t_route:11.0f} "
              f"{abs(value - ref) / abs(ref):9.1e}")


if __name__ == "__main__":
    main()
