"""The papers' notation for every registered form, and the readable display form of each case.

``NOTATION`` maps a form name to its :class:`Notation`: the mathematical symbol (the left-hand side with its
arguments, e.g. ``f_{G_0}(g; \\gamma)``) and optional display rules. Adding a form is adding one line::

    "family.quantity": N(r"\\gamma_{K}(<activation>)"),

``<param>`` in a symbol is replaced by the notation of that structural parameter's value (``VALUES``), or by the
general letter (``GENERAL``) when no value is given. The dotted name stays as a margin label in the document.

Display forms: :func:`display` returns, for one structural case, an expression that *equals* the registered
one (collected, factored, with ``\\sqrt{2\\pi}`` kept whole); tests/test_latex.py proves every display equal to
the registered expression with SymPy. A display is never a second formula.
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from .activations import ACTIVATIONS as ENTRIES

SQRT_2PI = sp.Symbol("sqrt_2pi", positive=True)   # printed \sqrt{2\pi}; substitute sqrt(2*pi) to compare
SQRT_2 = sp.Symbol("sqrt_2", positive=True)       # printed \sqrt{2}: lets σ/(√2 √ln k) stay as written

ACTIVATIONS = {name: act.tex for name, act in ENTRIES.items()}   # LaTeX names, from the entries
VALUES = {
    "activation": ACTIVATIONS,
    "estimator": {"proxy": r"\tilde B", "canonical": "z"},
    "rule": {"threshold": r"\mathrm{thr}", "binomial": r"\mathrm{bin}"},
    "norm": {"none": "", "batchnorm": r"\mathrm{BN}", "layernorm": r"\mathrm{LN}", "rmsnorm": r"\mathrm{RMS}"},
    "placement": {"pre": "pre", "post": "post", "before": r"\mathrm{before}", "after": r"\mathrm{after}"},
    "order": {"linear-first": r"\mathrm{lin\text{-}first}", "linear-last": r"\mathrm{lin\text{-}last}"},
    "architecture": {"vanilla": r"\mathrm{FF}", "bn_feedforward": r"\mathrm{BN\text{-}FF}",
                     "resnet": r"\mathrm{Res}", "bn_resnet": r"\mathrm{BN\text{-}Res}"},
}
GENERAL = {"activation": r"\phi", "estimator": r"\tilde B", "rule": "", "norm": "", "placement": "", "n": "n",
           "L": "L", "order": "", "architecture": r"\mathcal{A}"}
PAPERS = {
    "igb-initial-guessing-bias.txt": "Initial Guessing Bias",
    "igb-talk-slides.txt": "IGB talk slides",
    "norm-placement-bn-ln.txt": "Where You Place the Norm Matters",
    "kurtosis-vanishing-empirical-variance.txt": "Vanishing Empirical Variance",
    "moments-well-behaved-vs-pathological.txt": "Moments: well-behaved vs pathological",
}


@dataclass(frozen=True)
class Notation:
    """symbol: LaTeX of the left-hand side (``<param>`` fields); suffix: printed after the right-hand side and
    not part of the checked expression (e.g. ``+ O(B^{-2})`` of an expansion); general: LaTeX right-hand side
    of the general statement when the form's cases are numeric routes (replaces the form's own ``display``; a
    tuple is printed one line per item); extra: registered exact values printed as their own equations."""

    symbol: str
    suffix: str = ""
    general: str | tuple | None = None
    extra: object = None   # callable() -> [(LaTeX left-hand side, registered SymPy value)] printed after the cases


N = Notation


def _maxpool_exact(which: str):
    """The registered exact moments of a max-pooled unit (EXACT_MOMENTS of the family) as equations."""
    def rows():
        from .extreme import EXACT_MOMENTS, exact_mean, exact_var
        out = []
        for act in EXACT_MOMENTS:
            for kk in sorted(EXACT_MOMENTS[act]):
                value = exact_mean(act, kk) if which == "mean" else exact_var(act, kk)
                head = _E if which == "mean" else _V
                out.append((r"%s[M_{%d}^{%s}]" % (head, kk, ACTIVATIONS[act]), value))
        return out
    return rows

_E, _V = r"\mathbb{E}", r"\operatorname{Var}"
_GAMMA_REC = (r"\frac{c_L}{1-c_L}", r"(q_{l+1}, c_{l+1}) = \Big(\sigma_w^2\,\mathbb{E}[\phi(u)^2],\ "
              r"\frac{\mathbb{E}[\phi(u)\phi(u')]}{\mathbb{E}[\phi(u)^2]}\Big),\quad (q_1, c_1) = (\sigma_w^2, 0),"
              r"\quad (u, u') \sim \mathcal{N}\Big(0, q_l \begin{pmatrix} 1 & c_l \\ c_l & 1\end{pmatrix}\Big)")

_GAMMA_REC_BIAS = (r"\frac{c_L}{1-c_L}", r"(q_{l+1}, c_{l+1}) = \Big(\sigma_w^2\,\mathbb{E}[\phi(u)^2] + \sigma_b^2,\ "
                   r"\frac{\sigma_w^2\,\mathbb{E}[\phi(u)\phi(u')] + \sigma_b^2}{\sigma_w^2\,\mathbb{E}[\phi(u)^2] + "
                   r"\sigma_b^2}\Big)", r"(q_1, c_1) = \Big(\sigma_w^2 + \sigma_b^2, \frac{\sigma_b^2}{\sigma_w^2 + "
                   r"\sigma_b^2}\Big),\quad (u, u') \sim \mathcal{N}\Big(0, q_l \begin{pmatrix} 1 & c_l \\ c_l & 1"
                   r"\end{pmatrix}\Big)")

NOTATION = {
    "activation.mean": N(_E + r"\left[<activation>(X)\right]"),
    "activation.var": N(_V + r"\left[<activation>(X)\right]"),
    "bn.cdf": N(r"F_{\tilde B}(b; B)"),
    "bn.cdf_canonical": N(r"F_{z}(b; B)"),
    "bn.gamma": N(r"\gamma_{\mathrm{BN}}(B)"),
    "bn.gamma_canonical": N(r"\gamma^{z}_{\mathrm{BN}}(B)"),
    "bn.gamma_large_B": N(r"\gamma^{<estimator>}_{\mathrm{BN}}(B)", suffix=r" + O(B^{-2})"),
    "bn.gamma_relu_bn": N(r"\gamma_{\mathrm{ReLU}+\mathrm{BN}}(B)"),
    "bn.kurtosis": N(r"\kappa[\tilde B]"),
    "bn.kurtosis_canonical": N(r"\kappa[z]"),
    "bn.pdf": N(r"f_{\tilde B}(b; B)"),
    "bn.pdf_canonical": N(r"f_{z}(b; B)"),
    "bn.pdf_large_B": N(r"f_{<estimator>}(b; B)", suffix=r" + O(B^{-2})"),
    "bn.relu_mean": N(_E + r"\left[\mathrm{ReLU}(\tilde B)\right]"),
    "bn.relu_mean_canonical": N(_E + r"\left[\mathrm{ReLU}(z)\right]"),
    "bn.relu_var": N(_V + r"\left[\mathrm{ReLU}(\tilde B)\right]"),
    "bn.relu_var_canonical": N(_V + r"\left[\mathrm{ReLU}(z)\right]"),
    "bn.support_canonical": N(r"\max |z|"),
    "bn.tv_proxy": N(r"d_{\mathrm{TV}}(f_{\tilde B}, f_z)"),
    "bn.var": N(_V + r"[\tilde B]"),
    "bn.var_canonical": N(_V + r"[z]"),
    "depth.corr_map": N(r"\mathcal{C}_{<activation>}(c)"),
    "depth.gamma": N(r"\gamma_{<L>}(<activation>)", general=_GAMMA_REC_BIAS),
    "depth.gamma_bn_post": N(r"\gamma_{<L>}^{<activation>+\mathrm{BN}}", general=_GAMMA_REC),
    "depth.gamma_bn_pre": N(r"\gamma_{<L>}^{\mathrm{BN}+<activation>}", general=_GAMMA_REC),
    "depth.gamma_ln_post": N(r"\gamma_{<L>}^{<activation>+\mathrm{LN}}", general=_GAMMA_REC),
    "depth.gamma_ln_pre": N(r"\gamma_{<L>}^{\mathrm{LN}+<activation>}", general=_GAMMA_REC),
    "depth.gamma_rms_post": N(r"\gamma_{<L>}^{<activation>+\mathrm{RMS}}", general=_GAMMA_REC),
    "depth.gamma_rms_pre": N(r"\gamma_{<L>}^{\mathrm{RMS}+<activation>}", general=_GAMMA_REC),
    "igb.cdf": N(r"F_{G_0}(g; \gamma)"),
    "igb.corr": N(r"c(\gamma)"),
    "igb.gamma": N(r"\gamma(<activation>)"),
    "igb.logpdf": N(r"\ln f_{G_0}(g; \gamma)"),
    "igb.p_outside": N(r"P\left(G_0 \notin [q, 1-q]\right)"),
    "igb.pdf": N(r"f_{G_0}(g; \gamma)"),
    "igb.quantile": N(r"F_{G_0}^{-1}(p; \gamma)"),
    "kurtosis.after": N(r"\kappa_L"),
    "kurtosis.c_after": N(r"c_L = \operatorname{Cov}[y_i^2, y_j^2]"),
    "kurtosis.df": N(r"\mathrm{DF}_n"),
    "kurtosis.lambda_max": N(r"\lambda_{\max}(A)"),
    "kurtosis.matrix": N(r"A"),
    "kurtosis.p_nonzero": N(r"P\left(y^{(L)} \neq 0\right)"),
    "kurtosis.p_small_var": N(r"P\left(S_n^2 < \varepsilon\,\sigma^2\right)"),
    "kurtosis.var_s2": N(_V + r"[S_n^2]"),
    "leaky.m2": N(_E + r"\left[\phi_a(x)^2\right]"),
    "leaky.m4": N(_E + r"\left[\phi_a(x)^4\right]"),
    "leaky.mean": N(_E + r"\left[\phi_a(X)\right]"),
    "leaky.var": N(_V + r"\left[\phi_a(X)\right]"),
    "maxpool.cdf": N(r"F_{M_k^{<activation>}}(x)"),
    "maxpool.extreme_mass": N(r"P_{<rule>}\left(\hat G_0 \in \{0, 1\};\ <activation>\right)"),
    "maxpool.gamma": N(r"\gamma_k(<activation>)", general=(r"\frac{\mathbb{E}[M_k]^2}{\operatorname{Var}[M_k]}",
                                             r"\gamma_k \sim \frac{24}{\pi^2}\ln^2 k \quad (k \to \infty)")),
    "maxpool.gumbel_loc": N(r"a_k"),
    "maxpool.gumbel_scale": N(r"b_k"),
    "maxpool.mean": N(_E + r"[M_k^{<activation>}]", extra=_maxpool_exact("mean"),
                      general=r"\int x \,\mathrm{d}\,\Phi\left(\frac{x}{\sigma}\right)^{k}"),
    "maxpool.pdf": N(r"f_{M_k^{<activation>}}(x)"),
    "maxpool.var": N(_V + r"[M_k^{<activation>}]", extra=_maxpool_exact("var"),
                     general=r"\mathbb{E}[M_k^2] - \mathbb{E}[M_k]^2"),
    "meanfield.bn_grad_rate": N(r"\lambda^{\mathrm{BN}}_{<activation>}(<B>)"),
    "meanfield.c_star": N(r"c^*_{<activation>}(\sigma_w, \sigma_b)"),
    "meanfield.chi_1": N(r"\chi_1^{<activation>}(\sigma_w, \sigma_b)"),
    "meanfield.chi_c": N(r"\chi_c^{<activation>}(\sigma_w, \sigma_b)"),
    "meanfield.eoc_sigma_w": N(r"\sigma_w^{\mathrm{EOC}}(<activation>; \sigma_b)"),
    "meanfield.gamma_eoc_growth": N(r"C_{<activation>}(\sigma_b)", general=(
        r"\lim_{L\to\infty} \gamma_L / L^{p}\ \text{at}\ \sigma_w = \sigma_w^{\mathrm{EOC}}(\sigma_b)",
        r"p = 2:\ C = \frac{8 r^{2}}{9 \pi^{2}},\ r = \frac{(1 - a)^{2}}{1 + a^{2}}\ (\phi_a)",
        r"p = 1:\ C = \tfrac{1}{2} \sigma_w^{2} q^* \mathbb{E}\left[\phi''(\sqrt{q^*} Z)^{2}\right]\ "
        r"(\mathrm{erf}, \tanh)")),
    "meanfield.gamma_inf": N(r"\gamma_\infty^{<activation>}(\sigma_w, \sigma_b)"),
    "meanfield.norm_c_star": N(r"c^*_{<activation>,<norm>,<placement>}(\sigma_w, \sigma_b)"),
    "meanfield.norm_chi_1": N(r"\chi_1^{<activation>,<norm>,<placement>}(\sigma_w, \sigma_b)"),
    "meanfield.norm_eoc": N(r"\left(\sigma_b/\sigma_w\right)^{\mathrm{EOC}}_{<activation>,<norm>,<placement>}"
                            r"(\sigma_b)"),
    "meanfield.norm_gamma_inf": N(r"\gamma_\infty^{<activation>,<norm>,<placement>}(\sigma_w, \sigma_b)"),
    "meanfield.phase": N(r"\operatorname{sign}\ln\chi_1^{<activation>}(\sigma_w, \sigma_b)"),
    "meanfield.q_star": N(r"q^*_{<activation>}(\sigma_w, \sigma_b)"),
    "meanfield.xi_c": N(r"\xi_c^{<activation>}(\sigma_w, \sigma_b)"),
    "meanfield.xi_q": N(r"\xi_q^{<activation>}(\sigma_w, \sigma_b)"),
    "moments.bn_feedforward_rate": N(r"\log\frac{\chi_{l+1}}{\chi_l}\Big|_{\mathrm{BN\text{-}FF},\,<activation>}"),
    "moments.bn_resnet_exponent": N(r"\beta_{\mathrm{BN\text{-}Res}}(<activation>)"),
    "moments.centred_ratio": N(r"\frac{\mu_{2,c}}{\mu_2}(\gamma)"),
    "moments.sensitivity": N(r"\chi_{<L>}^{<architecture>}(<activation>)"),
    "multiclass.cdf": N(r"F_{G_c}(g; \gamma, C)"),
    "multiclass.entropy": N(_E + r"\left[H(G_1, \ldots, G_C)\right]"),
    "multiclass.max_fraction": N(_E + r"\left[G_{(1)}\right]"),
    "multiclass.max_fraction_cdf": N(r"F_{G_{(1)}}(g; \gamma, C)"),
    "multiclass.mean": N(_E + r"\left[G_c\right]"),
    "multiclass.n_empty": N(_E + r"\left[\#\{c: N_c = 0\}\right]"),
    "multiclass.p_empty": N(r"P\left(N_c = 0\right)"),
    "multiclass.paper_approx": N(r"F^{\mathrm{App.\,H}}_{G_c}(g; \gamma, C)"),
    "multiclass.pdf": N(r"f_{G_c}(g; \gamma, C)"),
    "multiclass.var": N(_V + r"\left[G_c\right]"),
    "nngp.erf_kernel": N(_E + r"\left[\operatorname{erf}(u)\operatorname{erf}(v)\right]"),
    "nngp.gamma": N(r"\gamma_{\mathcal{D}}"),
    "nngp.gamma_population": N(r"\gamma^{\mathrm{pop}}_{\mathcal{D}}"),
    "nngp.relu_kernel": N(r"J(\rho)"),
    "resnet.corr_map": N(r"c_{l+1}(c_l, m_l)"),
    "resnet.gamma": N(r"\gamma^{\mathrm{res}}_{<L>}"),
    "rectified.mean": N(_E + r"\left[\mathrm{ReLU}(X)\right]"),
    "rectified.moment": N(_E + r"\left[\mathrm{ReLU}(X)^{<n>}\right]",
                          general=(r"T_n \quad (n \ge 1;\ n = 0 \mapsto 1)",
                                   r"T_n = \mu T_{n-1} + (n-1)\sigma^2 T_{n-2},\quad "
                                   r"T_0 = \Phi\left(\frac{\mu}{\sigma}\right),\quad T_1 = \mu\,\Phi\left("
                                   r"\frac{\mu}{\sigma}\right) + \frac{\sigma}{\sqrt{2\pi}}\,e^{-\mu^2/2\sigma^2}")),
    "rectified.scaled_mean": N(_E + r"\left[\mathrm{ReLU}(\alpha X)\right]"),
    "rectified.scaled_var": N(_V + r"\left[\mathrm{ReLU}(\alpha X)\right]"),
    "rectified.var": N(_V + r"\left[\mathrm{ReLU}(X)\right]"),
    "width.coefficient": N(r"a_{<L>}(<activation>)"),
    "width.gamma": N(r"\gamma_{<L>}(<activation>; N)"),
    "width.resnet_gamma": N(r"\gamma^{\mathrm{res}}_{<L>}(<activation>; N)"),
}


def notation(name: str) -> Notation:
    """The notation of a registered form; a missing entry is an error that says what to add."""
    try:
        return NOTATION[name]
    except KeyError:
        raise KeyError(f"no notation for {name}: add a line  \"{name}\": N(r\"<LaTeX symbol>\"),  to NOTATION in "
                       f"igbsym/notation.py") from None


def symbol(form, **structural) -> str:
    """LaTeX of the form's symbol (left-hand side) for a structural case (general letters where absent)."""
    out = notation(form.name).symbol
    for p in form.structural_params:
        if p.name in structural:
            value = structural[p.name]
            text = VALUES.get(p.name, {}).get(value, str(value))
        else:
            text = GENERAL.get(p.name, p.name)
        out = out.replace(f"<{p.name}>", text)
    return out


def paper(name: str) -> str:
    """The title of a paper file in shared/papers (the file name when unknown)."""
    return PAPERS.get(name, name)


# --- display forms ---------------------------------------------------------------------------------------------
def keep_sqrt_2pi(expr):
    """Rewrite √π (and the √2 that travels with it) as √(2π)/√2: σ/√(2π) prints as a person writes it."""
    return expr.subs({sp.pi ** sp.Rational(3, 2): sp.pi * SQRT_2PI / sp.sqrt(2), sp.sqrt(sp.pi): SQRT_2PI / sp.sqrt(2)})


def undisplay(expr):
    """A display expression back in plain SymPy (for the equality proof)."""
    return expr.subs({SQRT_2PI: sp.sqrt(2 * sp.pi), SQRT_2: sp.sqrt(2)}) if isinstance(expr, sp.Basic) else expr
