"""``theory(model, data)``: the infinite-width IGB of an architecture on a given dataset, in one call.

The NNGP / CNN-GP kernel of the network over the data (``igbsym.nngp.walk``: one map per op, Lee et al. 2018,
Novak et al. 2019) gives γ in both conventions, the per-layer γ-like ratio the probe measures per module, and the
law of the class fractions by sampling the output GP (``igbsym.nngp.law``). The model is an ``igbsym.spec.Spec``
(its output Dense is the readout) or a sequence of ops ending in the readout Dense; a torch ``nn.Module`` or a
built-in model name is translated into ops by ``igbsym.validation.translate`` (torch stays out of this package).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from ..spec import Spec
from .law import Law, gamma_estimand, gamma_population, sample
from .walk import Summary, Walk, samples_entries, walk


@dataclass
class DataTheory:
    """γ (the probe's estimand M_off/(T − M_off)) ± its pair-sampling SE, γ with the dataset as the population, the
    per-op ratios (``layers``: name, op, ratio, ratio_population), the output kernel [D, D] (None under pair
    sampling), the class-fraction law (``law``), notes."""

    gamma: float
    gamma_se: float
    gamma_population: float
    n_data: int
    layers: list
    kernel: np.ndarray | None
    law: Law | None
    notes: list = field(default_factory=list)

    def to_dict(self, kernel: bool = False) -> dict:
        out = dict(gamma=self.gamma, gamma_se=self.gamma_se, gamma_population=self.gamma_population,
                   n_data=self.n_data, layers=self.layers, law=None if self.law is None else self.law.to_dict(),
                   notes=self.notes)
        if kernel and self.kernel is not None:
            out["kernel"] = self.kernel.tolist()
        return out

    def summary(self) -> str:
        se = f" ± {self.gamma_se:.2g} (pair sampling)" if self.gamma_se else ""
        lines = [f"gamma_inf = {self.gamma:.6g}{se}  (infinite width, this dataset; the estimand of igbsym probe's "
                 f"gamma_hat, D = {self.n_data})",
                 f"gamma with the dataset as the population = {self.gamma_population:.6g}  (= gamma_inf + (1 + "
                 f"gamma_inf)/(D - 1))"]
        if self.law is not None:
            s, c = self.law.summary, self.law.classes
            lines += [f"law of G0 (GP sampling, {self.law.n_draws} draws, rank {self.law.rank}, truncation bias <= "
                      f"{self.law.bias_bound:.1g}): quantiles 5/25/50/75/95% = "
                      + " / ".join(f"{s[k]:.4g}" for k in s if k.startswith("q"))
                      + f"; sd {s['sd_G0']:.4g}",
                      f"P(G0 < 0.1 or G0 > 0.9) = {s['p_outside_0.1_0.9']:.4g} ± {s['p_outside_0.1_0.9_se']:.1g}; "
                      f"E max_c G_c = {s['max_fraction']:.4g} ± {s['max_fraction_se']:.1g} ({c} classes); "
                      f"E empty classes = {s['expected_empty_classes']:.4g} ± {s['expected_empty_classes_se']:.1g}"]
        lines.append("per-op gamma-like ratio (the probe's per-module statistic at infinite width):")
        lines += [f"  {r['name']:<28} {r['ratio']:.6g}" for r in self.layers]
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def _ops(model) -> tuple:
    if isinstance(model, Spec):
        return model.all_ops()
    ops = tuple(model)
    if not ops:
        raise InputError("theory: the model has no ops")
    return ops




def _layers(w: Walk, ops) -> list:
    """Per op, its γ-like ratio; NaN for ops on the data alone (before any weights: the same in every init)."""
    out, drawn = [], False
    for s, op in zip(w.summaries, ops):
        drawn = drawn or op.draws_weights
        try:
            r, rp = (s.ratio(), s.ratio_population(w.n_data)) if drawn else (math.nan, math.nan)
        except (ArithmeticError, ZeroDivisionError):
            r = rp = math.nan           # units constant over the data (e.g. a layer of zero means): no ratio
        out.append(dict(name=s.name, ratio=r, ratio_population=rp))
    return out


DRAWS = {2: 100000}        # GP draws for the law: 10^5 with two classes (one field), 5000 with C fields (C x the cost)
DRAWS_MULTI = 5000


def theory(model, data, *, classes: int | None = None, names=None, n_draws: int | None = None, seed: int = 0,
           pairs: int | None = None, with_law: bool = True) -> DataTheory:
    """The infinite-width IGB of ``model`` (Spec or ops) on ``data`` [D, ...] (module docstring). ``classes``: the
    C of the class-fraction law (default: the spec's n_classes, else 2); ``pairs``: estimate from that many sampled
    pairs instead of the full kernel (no law then); ``n_draws``: GP draws for the law (default ``DRAWS``)."""
    ops = _ops(model)
    C = classes if classes is not None else (model.n_classes if isinstance(model, Spec) else 2)
    if not (isinstance(C, (int, np.integer)) and C >= 2):
        raise InputError(f"classes must be an integer >= 2, got {C!r}")
    notes = []
    if pairs is not None and samples_entries(ops):
        w, gamma, se = _replicated(ops, data, names, pairs, seed)
        T, M_off = float(w.summaries[-1].T.sum()), float(w.summaries[-1].M_off.sum())
        notes += w.notes
    else:
        w = walk(ops, data, names=names, pairs=pairs, seed=seed)
        out = w.summaries[-1]
        T, M_off = float(out.T.sum()), float(out.M_off.sum())
        gamma = gamma_estimand(T, M_off)
        se = T / (T - M_off) ** 2 * out.off_se
        if pairs is not None:
            notes.append(f"{pairs} sampled pairs: gamma's SE is the pair sampling's; the law of G needs the full "
                         "kernel")
    M = T / w.n_data + (1 - 1 / w.n_data) * M_off
    law = None
    if w.kernel is not None and with_law:
        law = sample(w.kernel, n_draws or DRAWS.get(C, DRAWS_MULTI), C, seed)
    return DataTheory(gamma, se, gamma_population(T, M), w.n_data, _layers(w, ops), w.kernel, law, notes)


REPLICAS = 16     # the fewest independent QMC point sets of a sampled kernel map under pair sampling (t, 15 dof)
PAIRS_PER_REPLICA = 250   # above 16 × 250 pairs, more replicas: the point set's error (CNN-A on digits: 0.6 per
                          # set) does not shrink with the pairs of one set, and T from the pairs' own points leaves
                          # little pair-sampling noise (20000 pairs as 16 sets: SE 0.155, the same as 3200 pairs)


def _replicated(ops, data, names, pairs: int, seed: int):
    """A walk whose ops sample kernel entries (MaxPool2d's QMC): one point set serves every pair of a walk, so its
    error does not shrink with the pairs (CNN-A on digits, 3000 pairs, four point sets: γ 21.76, 21.38, 21.30, 20.34
    against a pair SE of 0.68). R = max(``REPLICAS``, pairs/``PAIRS_PER_REPLICA``) walks of pairs/R pairs, each with
    its own point sets and pairs and T from its pairs' own points (``walk(own_diag=True)``: the point-set error is
    common to T and M_off there); γ the ratio of the pooled means, SE by the delta method over the replicas (R − 1
    degrees of freedom). Returns (the replicas' mean Walk, γ, SE)."""
    if pairs < 2 * REPLICAS:
        raise InputError(f"pairs = {pairs} is too few for a QMC kernel map; allowed: >= {2 * REPLICAS} ({REPLICAS} "
                         "replicas of >= 2 pairs)")
    R = max(REPLICAS, pairs // PAIRS_PER_REPLICA)
    walks = [walk(replica(ops, r), data, names=names, pairs=pairs // R, seed=[seed, r], own_diag=True)
             for r in range(R)]
    t = np.array([w.summaries[-1].T.sum() for w in walks])
    m = np.array([w.summaries[-1].M_off.sum() for w in walks])
    gamma = gamma_estimand(float(t.mean()), float(m.mean()))
    den = t.mean() - m.mean()
    se = float(np.std(m - gamma * (t - m), ddof=1) / np.sqrt(R) / den)
    mean = [Summary(s.name, np.mean([w.summaries[i].T for w in walks], 0),
                    np.mean([w.summaries[i].M_off for w in walks], 0), np.mean([w.summaries[i].mbar for w in walks], 0),
                    float(np.std([w.summaries[i].M_off.sum() for w in walks], ddof=1) / np.sqrt(R)))
            for i, s in enumerate(walks[0].summaries)]
    note = (f"{R * (pairs // R)} sampled pairs in {R} replicas of independent QMC point sets: gamma's SE is their "
            "spread (pair sampling and the QMC error); the law of G needs the full kernel")
    return Walk(mean, None, walks[0].n_data, R * (pairs // R), [note]), gamma, se


def replica(ops, r: int) -> tuple:
    """The ops with replica r's independent QMC point sets (``Op.replica`` of every op that samples its entries)."""
    for op in ops:
        if not op.sampled_kernel and samples_entries(op.children):
            raise InputError(f"{type(op).__name__}: a QMC kernel map (MaxPool2d) inside a composite op has no "
                             "independent replicas, so its error would go unstated; allowed: MaxPool2d outside "
                             "residual blocks")
    return tuple(op.replica(r) if op.sampled_kernel else op for op in ops)
