"""``igbsym predict``: γ per layer, the law of G0 and the regime of an architecture (an ``igbsym.spec.Spec``).

``predict(spec) -> Prediction`` is the Python API: γ and c = γ/(1+γ) after every layer of the spec (an MLP's hidden
layers, a residual net's blocks; the last is the output's), the regime and quantiles of f_G0 at the output. It reads
only ``spec.ops`` and walks them with the layer engine (``igbsym.engine.layer_gammas``: the same maps and shortcuts
as the forms ``depth.gamma`` and ``resnet.gamma``). ``architecture(**settings)`` is the thin parser from the CLI's
vocabulary (``igbsym predict --activation --depth --norm --placement --pool --batch-size --a --sigma-w
[--residual --alpha --order]``) into a spec; ``--classes C`` adds the multiclass summary (IGB paper App. H).
``--width N`` (``finite_width(res, N)``) adds, per layer, the finite-width prediction at width N (d_in = N): the 1/N
series γ_∞ + a_L/N of ``width.gamma`` with its remainder allowance where it covers the architecture and holds
(|a_L|/N <= γ_∞/2; igbsym.engine.finite.validity), and the exact chain's γ̂ ± SE (``igbsym.validation.chain``: every
width, depth and op, to ``--rel-se``) everywhere else.
"""
from __future__ import annotations

import importlib
import json
import math
from dataclasses import asdict, dataclass

import numpy as np

from . import activations as acts
from . import spec as S
from .engine import layer_gammas
from .engine.paths import biased
from .extreme import EXACT_MOMENTS
from .errors import InputError
from .files import writable_file
from .registry import get
from .engine import finite
from .families import width as W

QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
CHAIN_REL_SE = 0.01                  # predict --width: the exact chain's default relative SE at the output
CHAIN_MODULE = "igbsym.validation.estimate"   # the exact chain's entry, imported by name (torch)
CHAIN_L_MAX = 1000                   # predict --width: the deepest net the exact chain runs for
L_MAX = 100000
POOLED = tuple(EXACT_MOMENTS)        # activations whose max-of-k law igbsym.extreme knows
SOURCES = {False: "depth.gamma (infinite width, N(0, I) data, zero biases); igbsym show depth.gamma",
           True: "resnet.gamma (infinite width, N(0, I) data, zero biases); igbsym show resnet.gamma"}


@dataclass
class Prediction:
    """γ and c per layer (``layers``: dicts layer, gamma, c), the output γ, c, regime and f_G0 summary."""

    spec: S.Spec
    layers: list
    gamma: float
    c: float
    regime: str
    f_G0: dict
    source: str = SOURCES[False]

    @property
    def gammas(self) -> list:
        return [r["gamma"] for r in self.layers]

    def to_dict(self) -> dict:
        """What ``--json`` prints: the architecture's settings, the layers and the output summary."""
        args = self.spec.args or {}
        act, norm = args.get("activation"), S.norm_name(args.get("norm"))
        out = {"activation": act, "depth": len(self.layers), "norm": norm,
               "placement": args.get("placement") if norm != "none" else None, "pool": args.get("pool"),
               "batch_size": args.get("bn_batch"), "a": args.get("a") if act == "leaky_relu" else None,
               "sigma_w": args.get("sigma_w"), "sigma_b": args.get("sigma_b", 0.0)}
        if args.get("residual"):
            out.update(residual=True, alpha=args["alpha"], order=args["order"])
        out.update({k: v for k, v in asdict(self).items() if k != "spec"})
        return out


def predict(spec: S.Spec) -> Prediction:
    """γ per layer of ``spec`` and the law of G0 at its output (module docstring)."""
    if not isinstance(spec, S.Spec):
        raise InputError(f"predict: spec must be an igbsym.spec.Spec (e.g. NetSpec(...)), got {type(spec).__name__}")
    try:
        gammas = [float(g) for g in layer_gammas(spec.all_ops(), where="predict")]
    except InputError as exc:
        msg = str(exc)
        raise InputError(msg if msg.startswith("predict") else f"predict: {msg}") from None
    g_out = gammas[-1]
    from .law import regime
    quant = get("igb.quantile")
    summary = {f"q{int(100 * p):02d}": float(quant.numpy(p=p, gamma=g_out)) for p in QUANTILES}
    summary["p_outside_0.1_0.9"] = float(get("igb.p_outside").numpy(gamma=g_out, q=0.1))
    cs = np.atleast_1d(get("igb.corr").numpy(gamma=np.array(gammas)))
    layers = [{"layer": i + 1, "gamma": g, "c": float(c)} for i, (g, c) in enumerate(zip(gammas, cs))]
    residual = any(op.children for op in spec.ops)
    source = SOURCES[residual]
    if biased(spec.all_ops()):
        source = source.replace("zero biases", "biases N(0, sigma_b^2) in every Dense")
    return Prediction(spec, layers, g_out, float(cs[-1]), regime(g_out), summary, source)


def architecture(activation="relu", depth=1, norm="none", placement="pre", a=0.01, sigma_w=None, batch_size=None,
                 pool=None, residual=False, alpha=None, order="linear-first", sigma_b=None) -> S.Spec:
    """The infinite-width spec of the CLI's settings (one line per refused setting, naming what is allowed)."""
    if activation not in acts.names():
        raise InputError(f"predict: unknown activation {activation!r}; allowed: {', '.join(acts.names())}")
    if not isinstance(depth, int) or not 1 <= depth <= L_MAX:
        raise InputError(f"predict: --depth {depth} is not allowed; allowed: an integer 1..{L_MAX}")
    if norm not in S.NORMS:
        raise InputError(f"predict: unknown norm {norm!r}; allowed: {', '.join(S.NORMS)}")
    if placement not in S.PLACEMENTS:
        raise InputError(f"predict: unknown placement {placement!r}; allowed: pre (norm before the activation), "
                         "post (after)")
    sw = S.SIGMA_W if sigma_w is None else sigma_w
    if not (math.isfinite(sw) and sw > 0) or not math.isfinite(a):
        raise InputError(f"predict: --sigma-w {sw:g} / --a {a:g} not allowed; allowed: --sigma-w a finite number "
                         "> 0, --a finite")
    if sigma_b is not None and not (math.isfinite(sigma_b) and sigma_b >= 0):
        raise InputError(f"predict: --sigma-b {sigma_b:g} is not allowed; allowed: a finite number >= 0")
    if sigma_b and (norm != "none" or pool is not None or activation == "srelu"):
        raise InputError("predict: --sigma-b (biases in every Dense) is modelled without --norm, --pool and srelu "
                         "(depth.gamma's and resnet.gamma's sigma_b); allowed: --sigma-b 0 there")
    if residual:
        alpha = 1.0 if alpha is None else alpha
        if not (math.isfinite(alpha) and alpha >= 0):
            raise InputError(f"predict: --alpha {alpha:g} is not allowed; allowed: a finite number >= 0")
        if pool is not None or batch_size is not None:
            raise InputError("predict: --residual takes no --pool or --batch-size (residual blocks use full-batch BN)")
        sb = sigma_b or 0.0
        ops = S.resnet_ops(depth, activation, alpha, norm, placement, order, a, sw, sigma_b=sb)
        args = dict(widths=(None,) * (depth + 1), activation=activation, a=a, sigma_w=sw, pool=None, norm=norm,
                    placement=placement, bn_batch=None, residual=True, alpha=alpha, order=order,
                    **({"sigma_b": sb} if sb else {}))
        return S.Spec(None, ops, sigma_out=sw, args=args, sigma_b_out=sb)
    if alpha is not None:
        raise InputError("predict: --alpha is the residual branch scale; it needs --residual")
    if norm == "batchnorm" and batch_size is None:
        raise InputError("predict: --norm batchnorm needs --batch-size B (BN uses mini-batch statistics; give the "
                         "dataset size for full batch)")
    if batch_size is not None and (norm != "batchnorm" or batch_size < 2):
        raise InputError(f"predict: --batch-size {batch_size} is not allowed; allowed: an integer >= 2, with "
                         "--norm batchnorm only")
    if pool is not None and pool < 1:
        raise InputError(f"predict: --pool {pool} is not allowed; allowed: a max-pool kernel >= 1")
    if pool is not None and pool > 1 and activation not in POOLED:
        raise InputError(f"predict: --pool {pool} after {activation}: the max-of-k law is known after "
                         f"{', '.join(POOLED)} only")
    if pool is not None and pool > 1 and depth > 1:
        raise InputError("predict: --pool is predicted for --depth 1 only (deeper pooled nets need the k-node centre "
                         "integral)")
    try:
        return S.NetSpec(None, (None,) * depth, activation, a, sigma_w=sw, pool=pool, norm=norm,
                         placement=placement, bn_batch=batch_size, sigma_b=sigma_b or 0.0)
    except InputError as exc:
        raise InputError(f"predict: {exc}") from None


def spec_from_args(args) -> S.Spec:
    """The spec of ``igbsym predict``'s parsed arguments."""
    return architecture(args.activation, args.depth, args.norm, args.placement, args.a, args.sigma_w,
                        args.batch_size, args.pool, getattr(args, "residual", False), getattr(args, "alpha", None),
                        getattr(args, "order", "linear-first"), getattr(args, "sigma_b", None))


def finite_width(res: dict, N, rel_se: float = CHAIN_REL_SE, seed: int = 0) -> list:
    """Per layer of a predicted architecture (``Prediction.to_dict()``) at width N (d_in = N): the 1/N series of
    ``width.gamma`` where it covers the architecture (γ_∞ + a_L/N, its remainder allowance, whether it holds) and
    the exact chain's γ̂ ± SE (``igbsym.validation.chain``, to relative SE ``rel_se`` at the output; needs torch).
    ``gamma_N`` is the series where it holds, else the chain (``route``); never a value outside the series'
    condition. One-line InputError for a bad N, or where neither route applies."""
    N = W.check_width(N, "predict --width")
    series, why = _series_rows(res, N)
    chain, chain_why = _chain_layers(res, N, rel_se, seed)
    if series is None and chain is None:
        raise InputError(f"predict --width: {why}; the exact chain: {chain_why}")
    rows = []
    for l in range(res["depth"]):
        row = {"layer": l + 1, "gamma_inf": res["layers"][l]["gamma"]}
        s = series[l] if series is not None else None
        if s is not None:
            row.update(a=s["a"], gamma_series=s["gamma_N"], remainder=s["remainder"], series=s["series"])
        else:
            row.update(a=None, gamma_series=None, remainder=None, series=f"none ({why})")
        row.update(chain=chain[l].value if chain else None, chain_se=chain[l].se if chain else None)
        holds = s is not None and s["series"] == "holds"
        row["gamma_N"] = s["gamma_N"] if holds else (chain[l].value if chain else None)
        row["route"] = "series" if holds else ("exact chain" if chain else f"none (exact chain: {chain_why})")
        rows.append(row)
    return rows


def _series_rows(res: dict, N):
    """(the 1/N series rows, None) or (None, why it does not cover the architecture)."""
    norm = res["norm"]
    a = res["a"] if res["a"] is not None else 0.01
    if res["depth"] > W.L_MAX_FINITE:
        return None, f"the 1/N series is tabulated to depth {W.L_MAX_FINITE}"
    if res.get("sigma_b"):
        return None, "the 1/N series has no biases"
    if res.get("residual"):
        if norm != "none" or res["order"] != "linear-first":
            return None, "the series covers residual blocks x + alpha phi(W x) only"
        pairs = W.resnet_series(res["depth"], res["activation"], float(res["alpha"]), float(a), float(res["sigma_w"]))
        return _width_rows(pairs, N), None
    if res.get("pool") or norm == "batchnorm" or (norm != "none" and res["placement"] == "pre"):
        return None, "the series covers MLPs with no norm or LayerNorm/RMSNorm after the activation"
    try:
        pairs = W.series(res["depth"], res["activation"], norm, float(a), float(res["sigma_w"]))
    except InputError as exc:
        return None, str(exc)
    return _width_rows(pairs, N), None


def _chain_layers(res: dict, N, rel_se, seed):
    """(per-layer γ̂ ± SE of the exact chain at width N, None) or (None, why not)."""
    if res["depth"] > CHAIN_L_MAX:
        return None, f"depth at most {CHAIN_L_MAX} (its cost grows linearly: about 10 s per 100 layers at N = 256)"
    try:      # by name, as the CLI dispatches: the core never imports validation/ (docs/ARCHITECTURE.md)
        estimate_gamma = getattr(importlib.import_module(CHAIN_MODULE), "estimate_gamma")
    except ModuleNotFoundError as exc:
        return None, f"needs {exc.name} (pip install 'igbsym[validation]')"
    sw = float(res["sigma_w"])
    a = res["a"] if res["a"] is not None else 0.01
    if res.get("residual"):
        sb = res.get("sigma_b") or 0.0
        spec = S.Spec(N, S.resnet_ops(res["depth"], res["activation"], float(res["alpha"]), res["norm"],
                                      res["placement"] or "pre", res["order"], a, sw, width=N, sigma_b=sb),
                      sigma_out=sw, sigma_b_out=sb)
    else:
        spec = S.NetSpec(N, (N,) * res["depth"], res["activation"], a, sigma_w=sw, pool=res.get("pool"),
                         norm=res["norm"], placement=res["placement"] or "pre", bn_batch=res.get("batch_size"),
                         sigma_b=res.get("sigma_b") or 0.0)
    est = estimate_gamma(spec, rel_se, seed=seed, estimator="exact-chain")
    layers = est.layers[1:] if res.get("residual") else est.layers    # a residual net's first is its embedding
    return layers, None


def _width_rows(pairs, N) -> list:
    out = []
    for l, (g, coef) in enumerate(pairs, 1):
        holds, rem = finite.validity(g, coef, N)
        out.append({"layer": l, "gamma_inf": g, "a": coef, "gamma_N": g + coef / N, "remainder": rem,
                    "series": "holds" if holds else "outside series"})
    return out


def _width_text(rows: list, N: int) -> str:
    lines = [f"finite width N = {N} (d_in = N): gamma_N is the 1/N series gamma_inf + a_L/N (width.gamma) where it "
             "holds (|a_L|/N <= gamma_inf/2), else the exact chain (igbsym.validation.chain) +- its SE:",
             "  layer    gamma_inf      gamma_N       series          a_L  +-remainder     chain +- SE         route"]
    f = lambda v, spec: "-" if v is None else format(v, spec)      # noqa: E731
    for r in rows:
        chain = "-" if r["chain"] is None else f"{r['chain']:.5g} +- {r['chain_se']:.2g}"
        lines.append(f"  {r['layer']:5d}  {r['gamma_inf']:11.6g}  {f(r['gamma_N'], '11.6g'):>11}  "
                     f"{f(r['gamma_series'], '11.6g'):>11}  {f(r['a'], '11.5g'):>11}  {f(r['remainder'], '11.3g'):>11}"
                     f"  {chain:>17}  {r['route']}" + ("" if r["series"] in ("holds",) else f"; series: {r['series']}"))
    return "\n".join(lines)


def _text(res: dict) -> str:
    arch = (f"activation={res['activation']} depth={res['depth']} norm={res['norm']}"
            + (f" placement={res['placement']}" if res["placement"] else "")
            + (f" pool={res['pool']}" if res["pool"] else "")
            + (f" batch_size={res['batch_size']}" if res["batch_size"] else "")
            + (f" a={res['a']}" if res["a"] is not None else "") + f" sigma_w={res['sigma_w']:.4g}"
            + (f" sigma_b={res['sigma_b']:.4g}" if res.get("sigma_b") else "")
            + (f" residual alpha={res['alpha']:g} order={res['order']}" if res.get("residual") else ""))
    lines = [f"igbsym predict: {arch}", f"  {'block' if res.get('residual') else 'layer'}        gamma            c"]
    lines += [f"  {r['layer']:5d}  {r['gamma']:11.6g}  {r['c']:11.6g}" for r in res["layers"]]
    s = res["f_G0"]
    lines += [f"output: gamma = {res['gamma']:.6g}, c = gamma/(1+gamma) = {res['c']:.6g}, regime: {res['regime']}",
              "f_G0: quantiles 5/25/50/75/95% = " + " / ".join(f"{s[k]:.4g}" for k in s if k.startswith("q"))
              + f"; P(G0 < 0.1 or G0 > 0.9) = {s['p_outside_0.1_0.9']:.4g}"]
    return "\n".join(lines)


def plot(res: dict, path: str) -> None:
    """f_G0 of the output (and of one hidden layer, dotted) beside γ per layer."""
    try:
        import matplotlib
    except ModuleNotFoundError:
        raise InputError("predict: --plot needs matplotlib; install the validation extra: "
                         "pip install 'igbsym[validation]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.8))
    g = np.linspace(1e-4, 1 - 1e-4, 2001)
    pdf = get("igb.pdf")
    for gam, style, label in ((res["layers"][0]["gamma"], ":", "1 hidden layer"), (res["gamma"], "-", "output")):
        if gam == 0:
            ax.axvline(0.5, ls=style, color="k", label=f"{label}: point mass at 1/2 (gamma = 0)")
        else:
            ax.plot(g, pdf.numpy(g=g, gamma=gam), style, label=f"{label}: gamma = {gam:.3g}")
    ax.set(xlabel="G0 (fraction guessed as class 0)", ylabel="density", ylim=(0, 4), title="f_G0")
    ax.legend(fontsize=8)
    layers = [r["layer"] for r in res["layers"]]
    bx.plot(layers, [r["gamma"] for r in res["layers"]], "o-")
    bx.set(xlabel="hidden layer l", ylabel="gamma after layer l", title=f"{res['activation']}, norm={res['norm']}"
           + (f" ({res['placement']})" if res["placement"] else ""))
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110)
    except OSError as exc:
        raise InputError(f"predict --plot: cannot write {str(path)!r} ({exc.strerror or exc}); allowed: a writable "
                         "file path") from None
    finally:
        plt.close(fig)


def _p_empty_text(m: dict) -> str:
    """'= p (relative error <= r)', or '<= upper (not resolved ...)' where the C >= 4 route resolves no digit."""
    if m.get("p_empty_relative_bound") is None:
        return f"<= {m['p_empty_upper']:.2g} (not resolved by the randomised QMC route at C >= 4)"
    return f"= {m['p_empty']:.4g} (relative error <= {m['p_empty_relative_bound']:.1g})"


def _multiclass_text(m: dict) -> str:
    return (f"{m['classes']} classes (igbsym show multiclass.var): one class fraction G_c has mean "
            f"{m['mean_fraction']:.4g} and sd {m['sd_fraction']:.4g}; E max_c G_c = {m['max_fraction']:.4g} "
            f"(1/C = {m['max_fraction_uniform']:.4g}"
            f" without IGB); E entropy = {m['entropy']:.4g} nats (max {m['entropy_max']:.4g}); with D = "
            f"{m['dataset_size']} points P(a class gets none) {_p_empty_text(m)}, E empty classes = "
            f"{m['expected_empty_classes']:.4g}; the paper's App. H construction gives E G_c = "
            f"{m['paper_approx_mean']:.4g}")


def run(args) -> None:
    if args.classes is not None and (args.classes < 2):
        raise InputError(f"predict: --classes {args.classes} is not allowed; allowed: an integer >= 2")
    target = writable_file(args.plot, "predict --plot") if args.plot else None
    res = predict(spec_from_args(args)).to_dict()
    width = getattr(args, "width", None)
    if width is not None:
        rel_se = getattr(args, "rel_se", None) or CHAIN_REL_SE
        if not 0 < rel_se < 1:
            raise InputError(f"predict: --rel-se {rel_se:g} is not allowed; allowed: a number in (0, 1)")
        res["finite_width"] = {"N": width, "rel_se": rel_se, "layers": finite_width(res, width, rel_se)}
    if args.classes is not None:
        from .families.multiclass import multiclass_summary
        res["multiclass"] = multiclass_summary(res["gamma"], args.classes)
    if target is not None:
        plot(res, target)
    text = _text(res) + ("\n" + _multiclass_text(res["multiclass"]) if args.classes is not None else "")
    if width is not None:
        text += "\n" + _width_text(res["finite_width"]["layers"], width)
    print(json.dumps(res, indent=2) if args.json else text)
    if args.plot and not args.json:
        print(f"wrote {args.plot}")
