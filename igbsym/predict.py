"""``igbsym predict``: γ per layer, the law of G0 and the regime for an MLP architecture.

The architecture is L hidden blocks ``Linear(no bias) → [norm if pre] → φ → [norm if post] → [MaxPool1d(K)]`` and a
linear output layer (validation/simulate.py's NetSpec). γ after hidden layer l is ``depth.gamma(L=l, ...)``
(igbsym/families/depth.py); BatchNorm's mini-batch value comes from ``bn.gamma_canonical`` and max-pooling from
``maxpool.gamma`` / ``maxpool.mean`` / ``maxpool.var``, looked up at run time.
"""
from __future__ import annotations

import json
import math

import numpy as np

from . import activations as acts
from .errors import InputError
from .families import depth
from .registry import get

QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
KAIMING = math.sqrt(2.0)


def _validate(args):
    if args.activation not in acts.names():
        raise InputError(f"predict: unknown activation {args.activation!r}; allowed: {', '.join(acts.names())}")
    if args.depth is None or args.depth < 1 or args.depth > depth.L_MAX:
        raise InputError(f"predict: --depth {args.depth} is not allowed; allowed: an integer 1..{depth.L_MAX}")
    if args.norm not in depth.NORMS:
        raise InputError(f"predict: unknown norm {args.norm!r}; allowed: {', '.join(depth.NORMS)}")
    if args.placement not in depth.PLACEMENTS:
        raise InputError(f"predict: unknown placement {args.placement!r}; allowed: pre (norm before the activation), "
                         "post (after)")
    if args.norm == "batchnorm" and args.batch_size is None:
        raise InputError("predict: --norm batchnorm needs --batch-size B (BN uses mini-batch statistics; give the "
                         "dataset size for full batch)")
    if args.batch_size is not None and (args.norm != "batchnorm" or args.batch_size < 2):
        raise InputError(f"predict: --batch-size {args.batch_size} is not allowed; allowed: an integer >= 2, with "
                         "--norm batchnorm only")
    if args.pool is not None and args.pool < 1:
        raise InputError(f"predict: --pool {args.pool} is not allowed; allowed: a max-pool kernel >= 1")
    sw = KAIMING if args.sigma_w is None else args.sigma_w
    if not (math.isfinite(sw) and sw > 0) or not math.isfinite(args.a):
        raise InputError("predict: --sigma-w must be a finite number > 0 and --a finite")
    return sw


def _pooled(args, sw):
    """γ of one hidden layer followed by MaxPool1d(K) (layer-1 units are identically distributed)."""
    k, act, n, pl = args.pool, args.activation, args.norm, args.placement
    if args.depth > 1 or n == "batchnorm":
        raise InputError("predict: --pool is predicted for --depth 1 without batchnorm only (deeper pooled nets need "
                         "the k-node centre integral; mini-batch BN units are not Gaussian)")
    try:
        if n == "layernorm" and pl == "post":     # LN centres the units by their common mean, then the max is taken
            m = float(get("activation.mean").numpy(activation=act, sigma=sw, a=args.a))
            mean = float(get("maxpool.mean").numpy(k=k, sigma=sw, activation=act))
            return [(mean - m) ** 2 / float(get("maxpool.var").numpy(k=k, sigma=sw, activation=act))]
        return [float(get("maxpool.gamma").numpy(k=k, activation=act))]   # scale-free for identity / relu
    except InputError as exc:
        raise InputError(f"predict: --pool {k}: {exc}") from None


def predict(args) -> dict:
    """The prediction as a dict (what ``--json`` prints)."""
    sw = _validate(args)
    B = float(args.batch_size) if args.batch_size is not None else math.inf
    if args.pool is not None and args.pool > 1:
        gammas = _pooled(args, sw)
    else:
        path = depth.np_path(args.depth, args.activation, args.norm, args.placement, args.a, sw, B)
        gammas = [float(g) for g in path]
    g_out = gammas[-1]
    from .law import regime
    quant = get("igb.quantile")
    summary = {f"q{int(100 * p):02d}": float(quant.numpy(p=p, gamma=g_out)) for p in QUANTILES}
    summary["p_outside_0.1_0.9"] = float(get("igb.p_outside").numpy(gamma=g_out, q=0.1))
    corr = get("igb.corr")
    return {
        "activation": args.activation, "depth": args.depth, "norm": args.norm,
        "placement": args.placement if args.norm != "none" else None, "pool": args.pool,
        "batch_size": args.batch_size, "a": args.a if args.activation == "leaky_relu" else None, "sigma_w": sw,
        "layers": [{"layer": i + 1, "gamma": g, "c": float(corr.numpy(gamma=g))} for i, g in enumerate(gammas)],
        "gamma": g_out, "c": float(corr.numpy(gamma=g_out)), "regime": regime(g_out), "f_G0": summary,
        "source": "depth.gamma (infinite width, N(0, I) data, zero biases); igbsym show depth.gamma",
    }


def _text(res: dict) -> str:
    arch = (f"activation={res['activation']} depth={res['depth']} norm={res['norm']}"
            + (f" placement={res['placement']}" if res["placement"] else "")
            + (f" pool={res['pool']}" if res["pool"] else "")
            + (f" batch_size={res['batch_size']}" if res["batch_size"] else "")
            + (f" a={res['a']}" if res["a"] is not None else "") + f" sigma_w={res['sigma_w']:.4g}")
    lines = [f"igbsym predict: {arch}", "  layer        gamma            c"]
    lines += [f"  {r['layer']:5d}  {r['gamma']:11.6g}  {r['c']:11.6g}" for r in res["layers"]]
    s = res["f_G0"]
    lines += [f"output: gamma = {res['gamma']:.6g}, c = gamma/(1+gamma) = {res['c']:.6g}, regime: {res['regime']}",
              "f_G0: quantiles 5/25/50/75/95% = " + " / ".join(f"{s[k]:.4g}" for k in s if k.startswith("q"))
              + f"; P(G0 < 0.1 or G0 > 0.9) = {s['p_outside_0.1_0.9']:.4g}"]
    return "\n".join(lines)


def plot(res: dict, path: str) -> None:
    """f_G0 of the output (and of one hidden layer, dotted) beside γ per layer."""
    import matplotlib
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


def run(args) -> None:
    res = predict(args)
    print(json.dumps(res, indent=2) if args.json else _text(res))
    if args.plot:
        plot(res, args.plot)
        if not args.json:
            print(f"wrote {args.plot}")
