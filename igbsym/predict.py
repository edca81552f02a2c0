"""``igbsym predict``: γ per layer, the law of G0 and the regime of an architecture (an ``igbsym.spec.Spec``).

``predict(spec) -> Prediction`` is the Python API: γ and c = γ/(1+γ) after every hidden layer (at the next
layer's pre-activations, the output last), the regime and quantiles of f_G0 at the output. For an MLP built by
``NetSpec`` it is ``depth.gamma(L=l, ...)`` for l = 1..L (the same composed maps, with the fixed-point stop that
makes any depth cheap); other specs compose their ops' maps (igbsym/spec.py). BatchNorm's mini-batch value comes
from ``bn.gamma_canonical`` and max-pooling from ``maxpool.mean`` / ``maxpool.var``, looked up at run time.
The CLI (``igbsym predict --activation --depth --norm --placement --pool --batch-size --a --sigma-w --json
--plot``) builds the NetSpec and prints the Prediction. ``--residual --alpha A [--order linear-first|linear-last]``
predicts a residual MLP instead (igbsym/residual.py: ``--depth`` blocks x + A·F(x)); γ is then given after every
block (``resnet.gamma``). ``--classes C`` adds the multiclass summary of the output (IGB paper App. H;
``multiclass.*``: class-fraction sd, dominant class, entropy, empty classes).
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass

import numpy as np

from . import activations as acts
from . import spec as S
from .errors import InputError
from .families import depth
from .registry import get

QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
KAIMING = S.SIGMA_W


@dataclass
class Prediction:
    """γ and c per hidden layer (``layers``: dicts layer, gamma, c), the output γ, c, regime and f_G0 summary."""

    spec: S.Spec
    layers: list
    gamma: float
    c: float
    regime: str
    f_G0: dict
    source: str = "depth.gamma (infinite width, N(0, I) data, zero biases); igbsym show depth.gamma"

    @property
    def gammas(self) -> list:
        return [r["gamma"] for r in self.layers]

    def to_dict(self) -> dict:
        """What ``--json`` prints: the MLP's keyword values, the layers and the output summary."""
        mlp = self.spec.mlp or {}
        act = mlp.get("activation")
        out = {"activation": act, "depth": len(self.layers), "norm": mlp.get("norm") or "none",
               "placement": mlp.get("placement") if mlp.get("norm") else None, "pool": mlp.get("pool"),
               "batch_size": mlp.get("bn_batch"), "a": mlp.get("a") if act == "leaky_relu" else None,
               "sigma_w": mlp.get("sigma_w")}
        if mlp.get("residual"):
            out.update(residual=True, alpha=mlp["alpha"], order=mlp["order"])
        out.update({k: v for k, v in asdict(self).items() if k != "spec"})
        return out


def predict(spec: S.Spec) -> Prediction:
    """γ per hidden layer of ``spec`` and the law of G0 at its output (module docstring)."""
    if not isinstance(spec, S.Spec):
        raise InputError(f"predict: spec must be an igbsym.spec.Spec (e.g. NetSpec(...)), got {type(spec).__name__}")
    mlp = spec.mlp
    try:
        if mlp is not None and mlp.get("residual"):
            from .residual import trunk_states
            gammas = [s.c / s.e for s in trunk_states(spec.ops)[1:]]
        elif mlp is not None and not (mlp["pool"] and mlp["pool"] > 1):
            bn = mlp["bn_batch"] if mlp["norm"] == "batchnorm" and mlp["bn_batch"] not in (None, "full") else np.inf
            gammas = depth.np_path(len(mlp["widths"]), mlp["activation"], mlp["norm"] or "none", mlp["placement"],
                                   mlp["a"], mlp["sigma_w"], bn, where="predict")
        else:
            gammas = spec.gammas("numpy")
    except InputError as exc:
        msg = str(exc)
        if mlp is not None and mlp["pool"] and mlp["pool"] > 1 and "--pool" not in msg:
            msg = f"--pool {mlp['pool']}: {msg}"
        raise InputError(msg if msg.startswith("predict") else f"predict: {msg}") from None
    gammas = [float(g) for g in gammas]
    g_out = gammas[-1]
    from .law import regime
    quant = get("igb.quantile")
    summary = {f"q{int(100 * p):02d}": float(quant.numpy(p=p, gamma=g_out)) for p in QUANTILES}
    summary["p_outside_0.1_0.9"] = float(get("igb.p_outside").numpy(gamma=g_out, q=0.1))
    cs = np.atleast_1d(get("igb.corr").numpy(gamma=np.array(gammas)))
    layers = [{"layer": i + 1, "gamma": g, "c": float(c)} for i, (g, c) in enumerate(zip(gammas, cs))]
    if mlp is not None and mlp.get("residual"):
        return Prediction(spec, layers, g_out, float(cs[-1]), regime(g_out), summary,
                          "resnet.gamma (infinite width, N(0, I) data, zero biases); igbsym show resnet.gamma")
    return Prediction(spec, layers, g_out, float(cs[-1]), regime(g_out), summary)


def spec_from_args(args) -> S.Spec:
    """The NetSpec of the CLI arguments (infinite widths), after the CLI's own checks."""
    if args.activation not in acts.names():
        raise InputError(f"predict: unknown activation {args.activation!r}; allowed: {', '.join(acts.names())}")
    if args.depth is None or args.depth < 1 or args.depth > depth.L_MAX:
        raise InputError(f"predict: --depth {args.depth} is not allowed; allowed: an integer 1..{depth.L_MAX}")
    if args.norm not in depth.NORMS:
        raise InputError(f"predict: unknown norm {args.norm!r}; allowed: {', '.join(depth.NORMS)}")
    if args.placement not in depth.PLACEMENTS:
        raise InputError(f"predict: unknown placement {args.placement!r}; allowed: pre (norm before the activation), "
                         "post (after)")
    if getattr(args, "residual", False):
        return _residual_spec(args)
    if args.norm == "batchnorm" and args.batch_size is None:
        raise InputError("predict: --norm batchnorm needs --batch-size B (BN uses mini-batch statistics; give the "
                         "dataset size for full batch)")
    if args.batch_size is not None and (args.norm != "batchnorm" or args.batch_size < 2):
        raise InputError(f"predict: --batch-size {args.batch_size} is not allowed; allowed: an integer >= 2, with "
                         "--norm batchnorm only")
    if args.pool is not None and args.pool < 1:
        raise InputError(f"predict: --pool {args.pool} is not allowed; allowed: a max-pool kernel >= 1")
    if args.pool is not None and args.pool > 1 and args.depth > 1:
        raise InputError("predict: --pool is predicted for --depth 1 only (deeper pooled nets need the k-node centre "
                         "integral)")
    sw = KAIMING if args.sigma_w is None else args.sigma_w
    if not (math.isfinite(sw) and sw > 0) or not math.isfinite(args.a):
        raise InputError(f"predict: --sigma-w {sw:g} / --a {args.a:g} not allowed; allowed: --sigma-w a finite number "
                         "> 0, --a finite")
    if getattr(args, "alpha", None) is not None:
        raise InputError("predict: --alpha is the residual branch scale; it needs --residual")
    try:
        return S.NetSpec(None, (None,) * args.depth, args.activation, args.a, sigma_w=sw, pool=args.pool,
                         norm=None if args.norm == "none" else args.norm, placement=args.placement,
                         bn_batch=args.batch_size)
    except InputError as exc:
        raise InputError(f"predict: {exc}") from None


def _residual_spec(args) -> S.Spec:
    """``--residual``: an embedding Dense then ``--depth`` blocks x + alpha·F(x) (igbsym/residual.py)."""
    from .residual import resnet_ops
    alpha = 1.0 if args.alpha is None else args.alpha
    sw = KAIMING if args.sigma_w is None else args.sigma_w
    if not (math.isfinite(sw) and sw > 0) or not math.isfinite(args.a):
        raise InputError(f"predict: --sigma-w {sw:g} / --a {args.a:g} not allowed; allowed: --sigma-w a finite number "
                         "> 0, --a finite")
    if not (math.isfinite(alpha) and alpha >= 0):
        raise InputError(f"predict: --alpha {alpha:g} is not allowed; allowed: a finite number >= 0")
    if args.pool is not None or args.batch_size is not None:
        raise InputError("predict: --residual takes no --pool or --batch-size (residual blocks use full-batch BN)")
    ops = resnet_ops(args.depth, args.activation, alpha, args.norm, args.placement, args.order, args.a, sw)
    mlp = dict(widths=(None,) * (args.depth + 1), activation=args.activation, a=args.a, sigma_w=sw, pool=None,
               norm=None if args.norm == "none" else args.norm, placement=args.placement, bn_batch=None,
               residual=True, alpha=alpha, order=args.order)
    return S.Spec(None, ops, sigma_out=sw, mlp=mlp)


def _text(res: dict) -> str:
    arch = (f"activation={res['activation']} depth={res['depth']} norm={res['norm']}"
            + (f" placement={res['placement']}" if res["placement"] else "")
            + (f" pool={res['pool']}" if res["pool"] else "")
            + (f" batch_size={res['batch_size']}" if res["batch_size"] else "")
            + (f" a={res['a']}" if res["a"] is not None else "") + f" sigma_w={res['sigma_w']:.4g}"
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
        raise InputError("predict: --plot needs matplotlib; install the validation extra: pip install 'igbsym[validation]'") from None
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
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _multiclass_text(m: dict) -> str:
    return (f"{m['classes']} classes (igbsym show multiclass.var): one class fraction G_c has mean {m['mean_fraction']:.4g}"
            f" and sd {m['sd_fraction']:.4g}; E max_c G_c = {m['max_fraction']:.4g} (1/C = {m['max_fraction_uniform']:.4g}"
            f" without IGB); E entropy = {m['entropy']:.4g} nats (max {m['entropy_max']:.4g}); with D = "
            f"{m['dataset_size']} points P(a class gets none) = {m['p_empty']:.4g}, E empty classes = "
            f"{m['expected_empty_classes']:.4g}; the paper's App. H construction gives E G_c = "
            f"{m['paper_approx_mean']:.4g}")


def run(args) -> None:
    if args.classes is not None and (args.classes < 2):
        raise InputError(f"predict: --classes {args.classes} is not allowed; allowed: an integer >= 2")
    res = predict(spec_from_args(args)).to_dict()
    if args.classes is not None:
        from .families.multiclass import multiclass_summary
        res["multiclass"] = multiclass_summary(res["gamma"], args.classes)
    if args.plot:
        plot(res, args.plot)
    text = _text(res) + ("\n" + _multiclass_text(res["multiclass"]) if args.classes is not None else "")
    print(json.dumps(res, indent=2) if args.json else text)
    if args.plot and not args.json:
        print(f"wrote {args.plot}")
