"""γ̂ to a target precision with the fastest valid estimator (issue 47; the API contract):
``estimate_gamma(spec, rel_se=0.01, data=None, seed=0) -> GammaEstimate``.

Candidates, each valid where stated:
- ``exact-chain`` (``validation.chain``): an MLP or residual net of ``igbsym.ops`` on fresh N(0, I) data (``data``
  None), Gaussian weights; a few points per chain with every weight matrix integrated out exactly;
- ``rao-blackwell`` (``validation.simulate`` + ``estimators.rao_blackwell_units``): real torch networks, the output
  weights integrated out; on ``data`` (a [D, d_in] tensor shared by the inits: γ̂ is conditional on it) or on fresh
  Gaussian data per init (``FRESH_POINTS`` points each); any weight law.
A pilot of each valid candidate (``PILOT``; with the estimator free, the chain with 2, 4 and 8 points,
``chain.POINTS_TRIED``: more points average more pairs per draw of the weights at P² the cost; the choice then
depends on the machine's timings, a named estimator is reproducible) measures its CPU seconds and relative variance;
the one with the smallest predicted CPU time to the target, seconds/unit × units needed (units needed =
relative variance / rel_se²), runs on from its pilot in rounds (each sized from the SE so far, ×1.1: ``stats.grow``,
the rule ``igbsym probe --rel-se`` and sweeps share) until the relative SE is at most ``rel_se``. Reported: value,
SE, units used, the estimator and why, CPU seconds (pilots included). γ = 0 exactly (odd φ on symmetric data) has
no relative SE: from the first round (the pilot included) whose γ̂ is within 2 SE of 0 the target is the absolute SE
``rel_se`` (``stats.absolute_target``, one way; stated in the result).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from igbsym.errors import InputError, NumericalError

from .chain import POINTS_TRIED, applies, run_chains
from .estimators import penultimate, rao_blackwell_units
from .stats import Estimate, absolute_target, check_rel_se, grow, next_round, ratio_estimate

PILOT = {"exact-chain": 256, "rao-blackwell": 8}   # units per pilot
FRESH_POINTS = 128                                  # fresh Gaussian points per init of the simulator route
MAX_UNITS = {"exact-chain": 1 << 24, "rao-blackwell": 1 << 16}


@dataclass
class GammaEstimate:
    """γ̂ ± SE at the output (``gamma``), per hidden layer where the estimator gives it (``layers``)."""

    gamma: Estimate
    estimator: str
    units: int
    seconds: float
    reason: str
    layers: list = field(default_factory=list)
    target: str = "relative"

    @property
    def value(self):
        return self.gamma.value

    @property
    def se(self):
        return self.gamma.se

    def to_dict(self) -> dict:
        return dict(gamma=self.gamma.value, se=self.gamma.se, estimator=self.estimator, units=self.units,
                    seconds=self.seconds, reason=self.reason, target=self.target,
                    layers=[dict(gamma=e.value, se=e.se) for e in self.layers])


class _Route:
    """Units (a, b) [n, layers] in rounds: ``more(n)`` appends n units, ``run_to(n)`` runs to n in all."""

    def __init__(self, name, spec, data, seed, n_data=None, points=None):
        self.name, self.spec, self.data, self.seed, self.n_data, self.points = name, spec, data, seed, n_data, points
        self.a = self.b = None
        self.seconds = 0.0

    def more(self, n):
        t0 = time.process_time()
        first = 0 if self.a is None else self.a.shape[0]
        if self.name == "exact-chain":
            a, b, _ = run_chains(self.spec, n, self.seed, first, self.points, self.n_data)
        else:
            a, b = _rb_units(self.spec, n, self.data, self.seed, first)
        self.a = a if self.a is None else np.vstack([self.a, a])
        self.b = b if self.b is None else np.vstack([self.b, b])
        self.seconds += time.process_time() - t0

    def run_to(self, n):
        """Units 0 … n − 1 in all (``stats.grow``)."""
        have = 0 if self.a is None else self.a.shape[0]
        if n > have:
            self.more(n - have)

    def estimate(self, col=-1) -> Estimate:
        est = ratio_estimate(self.a[:, col], self.b[:, col])
        est.method = f"{self.name}/delta"
        return est


def _rb_units(spec, n, data, seed, first):
    from .simulate import simulate
    res = simulate(spec, n, n_data=None if data is not None else FRESH_POINTS, seed=seed, data=data,
                   fresh_data=data is None, layer_stats="penultimate", first_init=first, dtype=torch.float64)
    st = penultimate(res)
    a, b = rao_blackwell_units(st.mean, st.var.sum(1), res.n_data)
    return a[:, None], b[:, None]


def candidates(spec, data) -> dict:
    """estimator -> None (valid) or why not."""
    out = {"exact-chain": applies(spec) if data is None else "a dataset is given (the chain draws fresh Gaussian "
                                                               "points)"}
    out["rao-blackwell"] = ("residual nets are simulated by the chain (no dataset) or igbsym probe"
                            if any(op.children for op in spec.ops) else None)
    return out


def estimate_gamma(spec, rel_se: float = 0.01, data=None, seed: int = 0, progress=None,
                   estimator: str | None = None, n_data: int | None = None,
                   abs_se: float | None = None) -> GammaEstimate:
    """γ̂ of ``spec`` (an ``igbsym.spec.Spec`` with finite widths) to relative SE ``rel_se`` (module docstring);
    ``estimator``: run that one (no pilot of the others), e.g. 'exact-chain' for its per-layer values; ``n_data``:
    with BatchNorm, the dataset size whose within-batch pairs the chain counts (None: infinitely many points);
    ``abs_se``: an absolute target SE instead of ``rel_se`` (a γ that may be tiny: the sweep's judged column)."""
    rel_se = check_rel_se(rel_se, "estimate_gamma")
    if abs_se is not None:
        if isinstance(abs_se, bool) or not isinstance(abs_se, (int, float, np.floating)) or not 0 < abs_se < np.inf:
            raise InputError(f"estimate_gamma: abs_se = {abs_se!r} is not allowed; allowed: a number > 0")
        rel_se = float(abs_se)
    if spec.d_in is None or any(w is None for w in spec.widths):
        raise InputError("estimate_gamma: the spec needs a finite d_in and finite widths (N = inf: igbsym predict)")
    if data is not None and not (isinstance(data, torch.Tensor) and data.dim() == 2 and data.shape[1] == spec.d_in):
        raise InputError(f"estimate_gamma: data must be a [D, d_in = {spec.d_in}] tensor")
    valid = candidates(spec, data)
    if estimator is not None:
        if estimator not in valid:
            raise InputError(f"estimate_gamma: unknown estimator {estimator!r}; allowed: {', '.join(valid)}")
        valid = {estimator: valid[estimator]}
    if all(v is not None for v in valid.values()):
        raise InputError("estimate_gamma: no estimator applies: " + "; ".join(f"{k}: {v}" for k, v in valid.items()))
    t0 = time.process_time()
    routes, cost = {}, {}
    for name, why in valid.items():
        if why is None:
            # the point counts are chosen by timing only when the estimator is free; a named one is reproducible
            for points in (POINTS_TRIED if name == "exact-chain" and spec.batch == 1 and estimator is None
                           else (None,)):
                r = _Route(name, spec, data, seed, n_data, points)
                r.more(PILOT[name])
                pilot = r.estimate()
                rel = next_round(pilot, PILOT[name], rel_se, MAX_UNITS[name],
                                 abs_se is not None or absolute_target(pilot)).achieved
                need = max(PILOT[name], PILOT[name] * (rel / rel_se) ** 2)
                key = name if points is None else f"{name} ({points} points)"
                routes[key], cost[key] = r, r.seconds / PILOT[name] * need
    pick = min(cost, key=cost.get)
    r, best = routes[pick], routes[pick].name
    reason = "; ".join([f"{k}: predicted {v:.3g} CPU s" for k, v in cost.items()]
                       + [f"{k}: {v}" for k, v in valid.items() if v is not None])
    est, p = grow(r.run_to, r.estimate, rel_se, r.a.shape[0], MAX_UNITS[best],
                  progress=None if progress is None else lambda p: progress(best, p.n, p.achieved), strict=True,
                  absolute=abs_se is not None or None)
    if not p.met:
        raise NumericalError(f"estimate_gamma: {best} at {p.target} SE {p.achieved:.3g} after {p.n} units needs "
                             f"{p.need} for {rel_se:g}, more than {MAX_UNITS[best]}")
    layers = [r.estimate(j) for j in range(r.a.shape[1])] if best == "exact-chain" else []
    return GammaEstimate(est, best, r.a.shape[0], time.process_time() - t0, reason, layers, p.target)
