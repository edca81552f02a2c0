"""``igbsym phase --activation A [--depth L] [--json] [--plot FILE]``: the mean-field phase diagram of IGB (issue 48).

A grid over (σ_w², σ_b²) of log10 γ_∞ = log10(c*/(1 − c*)) (meanfield.gamma_inf: finite in the chaotic phase, +inf
in the ordered one), or with ``--depth L`` of log10 γ_L of the readout after L hidden layers of an MLP with biases
fed two independent N(0, I) inputs (the mean-field trajectory of igbsym.engine.meanfield; σ_b → 0 is depth.gamma),
with the edge of chaos σ_w²(σ_b²) (meanfield.eoc_sigma_w). ``--json`` prints the grid (null where γ is infinite or q*
diverges); ``--plot`` writes a heat map (matplotlib Agg) with the EOC curve and labelled axes and colour bar.
``--norm layernorm|rmsnorm [--placement before|after]``: the same grid of log10 γ_∞ for LayerNorm / RMSNorm before
or after φ (meanfield.norm_gamma_inf) with the edge of chaos σ_w² = σ_b²/ρ² (meanfield.norm_eoc; none where the
case is ordered at every σ_b > 0). ``--norm batchnorm [--batch B]``: no diagram -- one line stating that no
(σ_w, σ_b) reaches the edge of chaos with BatchNorm and the gradient-explosion rate λ (meanfield.bn_grad_rate), exit 0.
Bad input: one line on stderr, exit 2 (igbsym.cli).
"""
from __future__ import annotations

import json
import math

import numpy as np

from . import registry
from .engine import meanfield as MF
from .errors import InputError
from .files import writable_file


def grid(activation: str, n: int, sw2_max: float, sb2_max: float, depth=None, a: float = 0.01,
         check_only=False) -> dict:
    """The phase diagram as a dict of lists (``--json``'s content); ``check_only``: the checked axes only, no q
    limit (a norm before φ fixes q = 1)."""
    if activation not in MF.ACTIVATIONS:
        raise InputError(f"phase: --activation {activation!r} is not allowed; allowed: {', '.join(MF.ACTIVATIONS)}")
    if not (2 <= n <= 2000):
        raise InputError(f"phase: --grid {n} is out of range; allowed: an integer 2..2000")
    for opt, v in (("--sw2-max", sw2_max), ("--sb2-max", sb2_max)):
        if not (math.isfinite(v) and v > 0):
            raise InputError(f"phase: {opt} {v!r} is not allowed; allowed: a real number > 0")
    limit = MF.Q_MAX_SERIES if activation in MF.QUADRATURE else MF.Q_MAX_MP
    if not check_only and activation not in MF.HOMOGENEOUS and sw2_max + sb2_max > limit:
        raise InputError(f"phase: --sw2-max + --sb2-max = {sw2_max + sb2_max:g} is out of range for {activation}; "
                         f"allowed: <= {limit:g} (the routes' range in q)")
    sw2 = np.linspace(sw2_max / n, sw2_max, n)
    sb2 = np.linspace(sb2_max / n, sb2_max, n)
    if check_only:
        return {"activation": activation, "depth": None, "quantity": "log10 gamma_inf", "sigma_w2": sw2.tolist(),
                "sigma_b2": sb2.tolist()}
    SW, SB = np.meshgrid(np.sqrt(sw2), np.sqrt(sb2))         # rows: sigma_b^2, columns: sigma_w^2
    kw = dict(a=a) if activation == "leaky_relu" else {}
    if depth is None:
        if activation in MF.HOMOGENEOUS:                      # never chaotic: c* = 1 where q* is finite
            log_g = np.full(SW.shape, np.inf)
        else:
            st = MF.state_np(activation, a, SW, SB)
            e = st["e"]
            with np.errstate(divide="ignore"):
                log_g = np.where(e > 0, np.log10(st["c"]) - np.log10(np.where(e > 0, e, 1.0)), np.inf)
        quantity = "log10 gamma_inf"
    else:
        _, e = MF.trajectory(activation, a, SW, SB, depth + 1)[-1]
        with np.errstate(divide="ignore"):
            log_g = np.log10(1 - e) - np.log10(e)
        quantity = f"log10 gamma_L, L = {depth}"
    eoc = registry.get("meanfield.eoc_sigma_w").numpy(activation=activation, sigma_b=np.sqrt(sb2), **kw) ** 2
    return {"activation": activation, "depth": depth, "quantity": quantity, "sigma_w2": sw2.tolist(),
            "sigma_b2": sb2.tolist(), "values": [[None if not np.isfinite(v) else float(v) for v in row]
                                                 for row in log_g],
            "eoc_sigma_w2": np.broadcast_to(eoc, sb2.shape).tolist(),
            "note": "values[i][j] at (sigma_w2[j], sigma_b2[i]); null: gamma infinite (ordered phase, c* = 1) or "
                    "q* divergent"}


def norm_grid(activation: str, norm: str, placement: str, n: int, sw2_max: float, sb2_max: float,
              a: float = 0.01) -> dict:
    """``phase --norm layernorm|rmsnorm``: log10 γ_∞ over the grid (meanfield.norm_gamma_inf) and the edge of chaos
    (meanfield.norm_eoc), null where the case has none."""
    res = grid(activation, n, sw2_max, sb2_max, None, a, check_only=placement == "before")
    SW, SB = np.meshgrid(np.sqrt(res["sigma_w2"]), np.sqrt(res["sigma_b2"]))
    kw = dict(activation=activation, norm=norm, placement=placement) | (dict(a=a) if activation == "leaky_relu"
                                                                         else {})
    with np.errstate(divide="ignore"):
        log_g = np.log10(registry.get("meanfield.norm_gamma_inf").numpy(**kw, sigma_w=SW, sigma_b=SB))
    sb = np.sqrt(res["sigma_b2"])
    try:
        ratio = registry.get("meanfield.norm_eoc").numpy(**kw, sigma_b=sb)
        eoc = np.broadcast_to(sb**2 / ratio**2, sb.shape).tolist()
    except InputError as exc:
        if "an edge of chaos at sigma_b > 0" not in str(exc):
            raise
        eoc = [None] * sb.size
    return res | {"norm": norm, "placement": placement, "values": [[None if not np.isfinite(v) else float(v)
                                                                    for v in row] for row in log_g],
                  "eoc_sigma_w2": eoc}


def plot(res: dict, path) -> None:
    try:
        import matplotlib
    except ModuleNotFoundError:
        raise InputError("phase: --plot needs matplotlib; install the validation extra: "
                         "pip install 'igbsym[validation]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    vals = np.array([[np.nan if v is None else v for v in row] for row in res["values"]])
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    ax.set_facecolor("0.8")
    extent = (res["sigma_w2"][0], res["sigma_w2"][-1], res["sigma_b2"][0], res["sigma_b2"][-1])
    im = ax.imshow(np.ma.masked_invalid(vals), origin="lower", aspect="auto", extent=extent, cmap="viridis")
    if None not in res["eoc_sigma_w2"]:
        ax.plot(res["eoc_sigma_w2"], res["sigma_b2"], "w--", lw=2, label=r"edge of chaos $\chi_1 = 1$")
    ax.set_xlim(extent[:2])
    ax.set_xlabel(r"$\sigma_w^2$")
    ax.set_ylabel(r"$\sigma_b^2$")
    norm = f", {res['norm']} {res['placement']} phi" if "norm" in res else ""
    ax.set_title(f"{res['activation']}{norm}: " + (r"$\log_{10}\gamma_\infty$ (grey: ordered, $\gamma_\infty = \infty$)"
                                              if res["depth"] is None else r"$\log_{10}\gamma_L$, L = %d"
                                              % res["depth"]))
    fig.colorbar(im, ax=ax, label=r"$\log_{10}\gamma_\infty$" if res["depth"] is None else r"$\log_{10}\gamma_L$")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", fontsize=8)
    try:
        fig.savefig(path, dpi=110, bbox_inches="tight")
    except OSError as exc:
        raise InputError(f"phase --plot: cannot write {str(path)!r} ({exc.strerror or exc}); allowed: a writable "
                         f"file path") from None
    finally:
        plt.close(fig)


def batchnorm_line(activation: str, B=math.inf, a: float = 0.01) -> dict:
    """``phase --norm batchnorm``: no diagram (BN removes sigma_w and sigma_b), the rate of meanfield.bn_grad_rate."""
    form = registry.get("meanfield.bn_grad_rate")
    kw = dict(activation=activation, B=B) | (dict(a=a) if activation == "leaky_relu" else {})
    try:
        form.check(**kw)
        lam = float(form.numpy(**kw))
    except InputError as exc:
        raise InputError(f"phase --norm batchnorm: {exc}") from None
    batch = "B = inf" if B == math.inf else f"B = {B}"
    if lam == 1:    # the identity at B = inf: phi affine, the Poincare equality
        line = (f"{activation} with BatchNorm ({batch}): lambda = 1 at every (sigma_w, sigma_b) -- phi is affine "
                "(Poincare equality), the only case without gradient explosion (meanfield.bn_grad_rate)")
    else:
        line = (f"{activation} with BatchNorm ({batch}): no edge of chaos -- BN removes sigma_w and sigma_b, and the "
                f"mean squared gradient grows by lambda = {lam:.6g} > 1 per layer at every (sigma_w, sigma_b) "
                "(meanfield.bn_grad_rate" + ("; Gaussian Poincare: E phi'^2 >= Var phi)" if B == math.inf else ")"))
    return {"activation": activation, "norm": "batchnorm", "B": None if B == math.inf else B, "lambda": lam,
            "edge_of_chaos": lam == 1, "line": line}


def _run_batchnorm(args) -> int:
    for opt, given, default in (("--depth", args.depth, None), ("--plot", args.plot, None),
                                ("--grid", args.grid, 100), ("--sw2-max", args.sw2_max, 4.0),
                                ("--sb2-max", args.sb2_max, 0.5)):
        if given != default:
            raise InputError(f"phase --norm batchnorm: {opt} has no effect (with BatchNorm there is no phase diagram: "
                             "sigma_w and sigma_b cancel); leave it out")
    res = batchnorm_line(args.activation, args.batch, args.a)
    print(json.dumps(res) if args.json else res["line"])
    return 0


def _refuse_norm_options(args, norm) -> None:
    """One line for an option the chosen norm does not take (exit 2 through igbsym.cli)."""
    if norm in ("layernorm", "rmsnorm") and args.depth is not None:
        raise InputError(f"phase --norm {norm}: --depth is not available (the diagram is of gamma_inf); leave it out")
    if norm not in ("layernorm", "rmsnorm") and args.placement is not None:
        raise InputError("phase: --placement needs --norm layernorm or rmsnorm (leave it out)")
    if norm != "batchnorm" and getattr(args, "batch", math.inf) != math.inf:
        raise InputError("phase: --batch needs --norm batchnorm (leave it out)")


def run(args) -> int:
    norm = getattr(args, "norm", "none")
    if norm == "batchnorm":
        if getattr(args, "placement", None) is not None:
            raise InputError("phase: --placement needs --norm layernorm or rmsnorm (leave it out)")
        return _run_batchnorm(args)
    _refuse_norm_options(args, norm)
    target = writable_file(args.plot, "phase --plot") if args.plot else None
    if norm in ("layernorm", "rmsnorm"):
        res = norm_grid(args.activation, norm, args.placement or "before", args.grid, args.sw2_max, args.sb2_max,
                        args.a)
    else:
        res = grid(args.activation, args.grid, args.sw2_max, args.sb2_max, args.depth, args.a)
    if target is not None:
        plot(res, target)
    if args.json:
        print(json.dumps(res))
    else:
        finite = [v for row in res["values"] for v in row if v is not None]
        eoc = res["eoc_sigma_w2"]
        where = f" with {res['norm']} {res['placement']} phi" if "norm" in res else ""
        edge = "no edge of chaos at sigma_b > 0" if eoc[0] is None else \
            f"edge of chaos sigma_w^2 = {eoc[0]:.4g} .. {eoc[-1]:.4g}"
        print(f"{res['activation']}{where}: {res['quantity']} on a {args.grid}x{args.grid} grid, sigma_w^2 <= "
              f"{args.sw2_max:g}, sigma_b^2 <= {args.sb2_max:g}; {edge}; "
              + (f"finite values {min(finite):.3g} .. {max(finite):.3g}" if finite
                 else "no finite value (ordered everywhere)"))
        if target is not None:
            print(f"wrote {args.plot}")
    return 0
