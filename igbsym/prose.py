"""Prose with ASCII mathematics ("X ~ N(0, sigma^2)", "B >= 3", "sqrt(B/(B-2))") turned into LaTeX text with
inline math, so summaries, conditions, provenance notes and derivation text typeset like a paper's appendix.

The rule: a *math run* is a maximal stretch of math-capable tokens (numbers, operators, brackets, symbol names,
greek letters, known functions, subscripted names) that contains at least one *strong* token (a relation or
operator, a greek letter, a subscript, a function call); it is set in ``$...$``. Everything else is escaped text.
A string that already contains ``$`` or a backslash is taken to be LaTeX and passed through unchanged.
"""
from __future__ import annotations

import re

GREEK = {name: "\\" + name for name in (
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi pi rho sigma tau upsilon phi chi "
    "psi omega Gamma Delta Theta Lambda Xi Pi Sigma Phi Psi Omega").split()}
GREEK.update({"eps": r"\varepsilon", "lam": r"\lambda", "oo": r"\infty", "inf": r"\infty", "infinity": r"\infty"})
FUNCTIONS = {"sqrt": r"\sqrt", "exp": r"\exp", "log": r"\log", "ln": r"\ln", "sin": r"\sin", "cos": r"\cos",
             "tan": r"\tan", "tanh": r"\tanh", "arccos": r"\arccos", "acos": r"\arccos", "arcsin": r"\arcsin",
             "max": r"\max", "min": r"\min", "det": r"\det", "lim": r"\lim", "sum": r"\sum", "prod": r"\prod",
             "int": r"\int", "Var": r"\operatorname{Var}", "Cov": r"\operatorname{Cov}", "E": r"\mathbb{E}",
             "tr": r"\operatorname{tr}", "sign": r"\operatorname{sign}", "erf": r"\operatorname{erf}",
             "Beta": r"\mathrm{Beta}", "ReLU": r"\mathrm{ReLU}", "GELU": r"\mathrm{GELU}", "SiLU": r"\mathrm{SiLU}",
             "binom": r"\operatorname{binom}", "DF": r"\mathrm{DF}", "TV": r"\mathrm{TV}", "P": "P",
             "hat": None, "N": r"\mathcal{N}", "O": "O", "Gamma": r"\Gamma", "Phi": r"\Phi"}
CALL_ONLY = {"N", "O", "P", "Beta", "ReLU", "GELU", "SiLU", "binom", "DF", "TV", "erf", "sign", "tr", "det", "max",
             "min", "sum", "prod", "int", "lim", "exp", "tanh", "sin", "cos", "tan", "Gamma"}
NOT_MATH_ALONE = {"a", "A", "I"}          # English words that are also symbols: math only next to an operator
OPS = {"<=": r"\le", ">=": r"\ge", "!=": r"\ne", "->": r"\to", "=d": r"\overset{d}{=}", "==": "=", "+-": r"\pm",
       "~": r"\sim", "*": r"\,", "·": r"\cdot", "×": r"\times", "..": r"\ldots", "|": "|", "=": "=", "<": "<",
       ">": ">", "+": "+", "-": "-", "/": "/", "^": "^", "≈": r"\approx", "≤": r"\le", "≥": r"\ge", "≠": r"\ne",
       "→": r"\to", "∞": r"\infty", "±": r"\pm"}
STRONG_OPS = set(OPS) - {"-", ".."}
UNICODE_TEXT = {"—": "---", "–": "--", "’": "'", "‘": "`", "“": "``", "”": "''", "…": r"\ldots{}"}
UNICODE_MATH = {"γ": r"\gamma", "σ": r"\sigma", "κ": r"\kappa", "π": r"\pi", "μ": r"\mu", "α": r"\alpha",
                "φ": r"\phi", "Φ": r"\Phi", "λ": r"\lambda", "θ": r"\theta", "ε": r"\varepsilon", "√": r"\surd",
                "²": "^2", "³": "^3", "⁴": "^4", "∈": r"\in", "∑": r"\sum", "∫": r"\int", "≡": r"\equiv"}

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<abbr>\b(?:e\.g|i\.e|cf|vs|resp|etc|iid|iff|w\.r\.t)\.?(?![A-Za-z]))
  | (?P<code>(?:[\w-]+/)*[\w-]+\.(?:py|txt|tex|json)\b|[a-z][a-z_0-9]+(?:\.[A-Za-z_][A-Za-z_0-9]+)+|--[a-z][a-z-]+
              |[a-z]+=['"][^'"]*['"])
  | (?P<ref>(?<=App\.\s)[A-H]\b(?!\.\d)                                # App. G
           |\b(?:[A-H]\.\d+(?:\.\d+)*)(?:-[A-H]?\.?\d+(?:\.\d+)*)?)         # App. E.1.2, Thm E.1, G.2-G.3
  | (?P<cross>\d+x\d+\b)                                                 # 2x2
  | (?P<num>\d+(?:\.\d+)?(?:e[-+]?\d+)?)
  | (?P<ident>[A-Za-z]+\d?(?![A-Za-z0-9])(?:_(?:\{[^{}]*\}|\([^()]*\)|[A-Za-z0-9]+|[+\-]))?
              (?:\^\([^()]*\))?(?:_(?:[A-Za-z0-9]+))?~?)
  | (?P<op><=|>=|!=|->|=d(?![A-Za-z])|==|\+-|\.\.|[=<>~+\-*/^|·×≈≤≥≠→∞±])
  | (?P<open>[(\[{])
  | (?P<close>[)\]}])
  | (?P<other>.)
""", re.VERBOSE)
_PAIRS = {")": "(", "]": "[", "}": "{"}


def _tokens(text: str) -> list:
    out = []
    for m in _TOKEN.finditer(text):
        kind, tok = m.lastgroup, m.group()
        if kind == "ident" and re.fullmatch(r"([A-Za-z]{2,})_([A-Za-z]{2,})", tok):
            base, sub = tok.split("_")
            if base not in GREEK and base not in FUNCTIONS and sub not in ("max", "min", "hat"):
                kind = "code"
        out.append((kind, tok))
    return out


def _ident_parts(tok: str):
    """Split ``kappa_w`` / ``t_{B-2}`` / ``W^(l)_ij`` / ``B~`` into (base, sub, sup, tilde)."""
    tilde = tok.endswith("~")
    tok = tok.rstrip("~")
    m = re.fullmatch(r"([A-Za-z]+\d?)(?:_(\{[^{}]*\}|\([^()]*\)|[A-Za-z0-9]+|[+\-]))?(?:\^(\([^()]*\)))?"
                     r"(?:_([A-Za-z0-9]+))?", tok)
    base, sub, sup, sub2 = m.groups()
    if sub2 and not sub:
        sub = sub2
    if sub and sub[0] in "{(":
        sub = sub[1:-1]
    return base, sub, sup, tilde


def _is_math_ident(tok: str, nxt: str | None) -> bool:
    base, sub, sup, tilde = _ident_parts(tok)
    if sub is not None or sup is not None or tilde:
        return True
    if base in GREEK or re.fullmatch(r"[A-Za-z]\d|(?:sigma|kappa|mu|lam)\d", base):
        return True
    if base in FUNCTIONS:
        return base not in CALL_ONLY or nxt in ("(", "[")
    return len(base) == 1 or re.fullmatch(r"d[a-z]|[a-z][A-Z]", base) is not None


def _is_strong(kind: str, tok: str, nxt: str | None) -> bool:
    if kind == "op":
        return tok in STRONG_OPS
    if kind == "ident":
        base, sub, sup, tilde = _ident_parts(tok)
        return (sub is not None or sup is not None or tilde or base in GREEK or len(base) > 1
                or (base not in NOT_MATH_ALONE and nxt == "("))
    return False


def _base_latex(base: str) -> str:
    if base in GREEK:
        return GREEK[base]
    if base in FUNCTIONS and FUNCTIONS[base]:
        return FUNCTIONS[base]
    m = re.fullmatch(r"([A-Za-z]+?)(\d+)", base)
    if m and len(base) > 1:
        if m.group(1) == "sigma" and m.group(2) == "2":
            return r"{\sigma^{2}}"
        return _base_latex(m.group(1)) + "_{%s}" % m.group(2)
    if re.fullmatch(r"[a-z][A-Z]", base):  # aX: a product of a scalar and a variable
        return base[0] + " " + base[1]
    if re.fullmatch(r"d[a-z]", base):
        return r"\,\mathrm{d}" + base[1]
    return base if len(base) == 1 else r"\mathrm{%s}" % base


def _ident_latex(tok: str) -> str:
    base, sub, sup, tilde = _ident_parts(tok)
    out = _base_latex(base)
    if tilde:
        out = r"\tilde{%s}" % out
    if sub == "hat":
        return r"\hat{%s}" % out
    if sup is not None:
        out += "^{%s}" % (math(sup) if re.fullmatch(r"\([A-Za-z0-9]+\)", sup) else math(sup[1:-1]))
    if sub is not None:
        out += "_{%s}" % _sub_latex(sub)
    return out


def _sub_latex(sub: str) -> str:
    if sub in GREEK:
        return GREEK[sub]
    if sub in ("max", "min"):
        return "\\" + sub
    return sub if re.fullmatch(r"[A-Za-z0-9]+", sub) else math(sub)


def math(text: str) -> str:
    """LaTeX (math mode) of an ASCII mathematical expression such as ``sqrt(B/(B-2)) T``."""
    toks = _tokens(text.replace("**", "^"))
    out, i = [], 0
    while i < len(toks):
        kind, tok = toks[i]
        nxt = next((t for k, t in toks[i + 1:] if k != "ws"), None)
        if kind == "ws":
            out.append(" ")
        elif kind == "ident" and tok == "sqrt":
            arg, i = _group(toks, i + 1)
            out.append(r"\sqrt{%s}" % math(arg))
            continue
        elif kind == "op" and tok == "^":
            arg, i = _group(toks, i + 1, sup=True)
            out.append("^{%s}" % math(arg))
            continue
        elif kind == "ident":
            out.append(_ident_latex(tok) + (" " if nxt and nxt[0].isalnum() else ""))
        elif kind == "op":
            out.append(OPS[tok] if tok in ("=", "<", ">", "+", "-", "/", "|") else " %s " % OPS[tok])
        elif kind in ("open", "close"):
            out.append({"{": r"\{", "}": r"\}"}.get(tok, tok))
        elif kind == "num":
            m = re.fullmatch(r"(\d+(?:\.\d+)?)e\+?(-?\d+)", tok)
            if m and float(m.group(1)) == 0:
                out.append("0")
            elif m:
                out.append(("10^{%s}" if m.group(1) == "1" else m.group(1) + r"\cdot 10^{%s}") % m.group(2))
            else:
                out.append(tok)
        elif kind == "cross":
            out.append(tok.replace("x", r"\times "))
        elif kind == "ref":
            out.append(r"\text{%s}" % tok)
        elif tok == ",":
            out.append(", ")
        else:
            out.append(UNICODE_MATH.get(tok, r"\text{%s}" % escape(tok) if tok.strip() else tok))
        i += 1
    return re.sub(r" +", " ", "".join(out)).strip()


def _group(toks: list, i: int, sup: bool = False):
    """The argument after ``sqrt`` or ``^``: a bracketed group (brackets dropped when they only group), a signed
    token, or one token. Returns (ASCII text, next index)."""
    while i < len(toks) and toks[i][0] == "ws" and not sup:
        i += 1
    if i >= len(toks):
        return "", i
    kind, tok = toks[i]
    if kind == "open" and tok in "({":
        depth, j = 0, i
        while j < len(toks):
            depth += toks[j][0] == "open"
            depth -= toks[j][0] == "close"
            if depth == 0:
                break
            j += 1
        inner = "".join(t for _, t in toks[i + 1:j])
        keep = sup and tok == "(" and re.fullmatch(r"[A-Za-z0-9]+", inner) is not None  # y^(L): paper notation
        return ("(" + inner + ")" if keep else inner), j + 1
    if kind == "op" and tok in "-+" and i + 1 < len(toks):
        return tok + toks[i + 1][1], i + 2
    return tok, i + 1


def escape(text: str) -> str:
    """Escape prose for LaTeX text mode (unicode punctuation mapped to TeX ligatures)."""
    for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("$", r"\$"), ("#", r"\#"),
                 ("_", r"\_"), ("{", r"\{"), ("}", r"\}"), ("~", r"\textasciitilde{}"), ("^", r"\^{}"),
                 ("<", r"\textless{}"), (">", r"\textgreater{}"), ("|", r"\textbar{}")):
        text = text.replace(a, b)
    for a, b in UNICODE_TEXT.items():
        text = text.replace(a, b)
    return "".join("$%s$" % UNICODE_MATH[ch] if ch in UNICODE_MATH else ch for ch in text)


def prose(text: str) -> str:
    """LaTeX text of a prose string whose mathematics is written in ASCII (see the module docstring)."""
    if "$" in text or "\\" in text:
        return text
    toks = _tokens(text.replace("**", "^"))
    capable = []
    depth = 0
    for i, (kind, tok) in enumerate(toks):
        nxt = next((t for k, t in toks[i + 1:] if k != "ws"), None)
        nxt_raw = toks[i + 1][1] if i + 1 < len(toks) else None
        ok = kind in ("ws", "num", "op", "open", "close", "cross") or (
            kind == "ident" and _is_math_ident(tok, nxt_raw if tok in ("N", "P", "O") else nxt)) or (
            kind == "other" and tok in UNICODE_MATH)
        if kind == "other" and tok == "," and depth > 0:
            ok = True
        depth += kind == "open"
        depth -= kind == "close" and depth > 0
        prev = toks[i - 1][0] if i else None
        minus = (kind == "op" and tok == "-" and prev in ("ident", "close", "num") and nxt_raw is not None
                 and toks[i + 1][0] in ("ident", "num", "open") and not prev == toks[i + 1][0] == "num")
        capable.append((ok, _is_strong(kind, tok, nxt_raw) or (kind == "num" and (nxt == "^" or "e" in tok)) or minus
                        or kind == "cross"))
    out, i = [], 0
    while i < len(toks):
        if not capable[i][0] or toks[i][0] == "ws":
            out.append(_text_token(toks, i))
            i += 1
            continue
        j = i
        while j < len(toks) and capable[j][0]:
            j += 1
        out.append(_run(toks[i:j], capable[i:j]))
        i = j
    return "".join(out)


def _text_token(toks: list, i: int) -> str:
    kind, tok = toks[i]
    if kind == "code":
        return r"\texttt{%s}" % escape(tok).replace("-", "-{}")
    if kind == "op" and tok == "-" and 0 < i < len(toks) - 1 and toks[i - 1][0] == toks[i + 1][0] == "num":
        return "--"
    return escape(tok)


def _run(toks: list, flags: list) -> str:
    """Typeset one candidate run: unmatched brackets and trailing blanks go back to text; math if strong."""
    stack, bad = [], set()
    for k, (kind, tok) in enumerate(toks):
        if kind == "open":
            stack.append(k)
        elif kind == "close":
            if stack and toks[stack[-1]][1] == _PAIRS[tok]:
                stack.pop()
            else:
                bad.add(k)
    bad |= set(stack)
    pieces, cur = [], []
    for k, tk in enumerate(toks):
        if k in bad:
            pieces.append(cur)
            pieces.append([("text", tk[1], flags[k])])
            cur = []
        else:
            cur.append((*tk, flags[k]))
    pieces.append(cur)
    out = []
    for piece in pieces:
        if piece and piece[0][0] == "text":
            out.append(escape(piece[0][1]))
            continue
        lead = trail = ""
        while piece and piece[0][0] == "ws":
            lead += piece.pop(0)[1]
        while piece and (piece[-1][0] == "ws" or (piece[-1][0] == "op" and piece[-1][1] in "-~")):
            trail = piece.pop()[1] + trail
        body = "".join(t for _, t, _ in piece)
        strong = any(f[2][1] for f in piece) or (
            any(k == "open" for k, _, _ in piece)
            and any(k == "ident" and t not in NOT_MATH_ALONE for k, t, _ in piece))
        single = len([p for p in piece if p[0] != "ws"]) == 1
        if not piece:
            out.append(escape(lead + trail))
        elif strong or (single and piece[0][0] == "ident" and piece[0][1] not in NOT_MATH_ALONE):
            out.append(escape(lead) + "$" + math(body) + "$" + escape(trail))
        else:
            out.append(escape(lead) + "".join(_text_token([(k, t) for k, t, _ in piece], n)
                                              for n in range(len(piece))) + escape(trail))
    return "".join(out)
