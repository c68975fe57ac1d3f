"""LaTeX for checked theorems: paper notation, one proof line per kernel step.

:class:`PaperLatexPrinter` subclasses SymPy's ``LatexPrinter`` to write what a paper would
(X^{\\top}, \\Lambda^{-1/2}, bmatrix blocks, I and 0 without decoration); the functions below
turn a :class:`~derive.kernel.Theorem` — never an unchecked proof — into a theorem environment
with its proof as ``align*`` chains, and assemble a standalone article.
"""

from __future__ import annotations

from collections.abc import Sequence

from sympy import Basic, Rational
from sympy.matrices.expressions import BlockMatrix, MatrixSymbol
from sympy.printing.latex import LatexPrinter

from ..kernel import AXIOMS, Chain, Hypothesis, Theorem
from ..kernel.terms import blocks_of

__all__ = ["PaperLatexPrinter", "math", "theorem_latex", "theorem_display", "article_latex", "RULE_TEXT", "GLOSSARY"]

#: How each axiom is named beside a proof line.
RULE_TEXT = {
    "transpose_product": "transpose of a product",
    "transpose_transpose": r"$(A^{\top})^{\top} = A$",
    "transpose_sum": "transpose of a sum",
    "transpose_symmetric": "symmetric matrix",
    "transpose_inverse": r"$(A^{-1})^{\top} = (A^{\top})^{-1}$",
    "transpose_zero": "transpose of zero",
    "inverse_product": "inverse of a product",
    "inverse_inverse": r"$(A^{-1})^{-1} = A$",
    "inverse_cancel": r"$A^{-1} A = A A^{-1} = I$",
    "power_combine": r"$A^{a} A^{b} = A^{a+b}$",
    "identity_mul": r"$A I = I A = A$",
    "zero_mul": "product with zero",
    "zero_add": r"$A + 0 = A$",
    "distribute": "distributivity",
    "block_multiply": "block multiplication",
    "block_transpose": "block transpose",
    "block_single": "a single block",
}
assert set(RULE_TEXT) == set(AXIOMS), "every axiom needs a description"

#: What the library's symbols stand for (the notation table).
GLOSSARY = {
    "X": "design matrix, one example $x_i^{\\top}$ per row",
    "Y": "targets, one row $y_i^{\\top}$ per example",
    "X_q": "queries, one per row",
    "V": "orthogonal matrix (eigenvectors of $X^{\\top}X$, or right singular vectors)",
    "Lambda": "diagonal matrix of the eigenvalues of $X^{\\top}X$",
    "L": "spectral factor $V\\Lambda^{-1/2}$",
    "W_Q": "query weights",
    "W_K": "key weights",
    "W_V": "value weights",
    "W_FFN": "feed-forward weights",
    "P": "output projection",
    "H": "hat matrix $X(X^{\\top}X)^{-1}X^{\\top}$",
    "Z": "context tokens $z_i^{\\top} = [x_i^{\\top}\\; y_i^{\\top}]$ as rows",
    "Z_q": "query tokens $[x_q^{\\top}\\; 0]$ as rows",
    "U": "left singular vectors of $X$",
    "S": "singular values of $X$ (slow-fast theorem: the fast memory $X^{\\top}Y$)",
    "Q": "orthonormal factor of $X = QR$",
    "R": "triangular factor of $X = QR$",
    "G": "any factor with $GG^{\\top} = (X^{\\top}X)^{-1}$",
    "L_svd": "factor $VS^{-1}$ from the SVD",
    "L_qr": "factor $R^{-1}$ from the QR decomposition",
    "Gamma": "preconditioner $W_Q W_K^{\\top}$",
    "A": "any query matrix",
    "T": "any target matrix",
    "M": "slow memory $LL^{\\top}$",
    "X_prev": "the first $n-1$ rows of $X$",
    "Y_prev": "the first $n-1$ rows of $Y$",
    "x_t": "the newest example",
    "y_t": "the newest target",
}

_GREEK = {"alpha", "beta", "gamma", "delta", "epsilon", "lambda", "mu", "sigma", "theta", "omega", "phi", "psi",
          "Gamma", "Delta", "Lambda", "Sigma", "Theta", "Omega", "Phi", "Psi"}


class PaperLatexPrinter(LatexPrinter):
    """SymPy's LaTeX printer with the notation of a paper.

    Settings beyond SymPy's: ``matrix_style`` — ``"plain"`` (X), ``"bold"`` (\\mathbf{X},
    \\boldsymbol{\\Lambda}) or ``"upright"`` (\\mathrm{X}); ``symbol_names`` maps a symbol's name
    to the LaTeX to print (SymPy's own setting, keyed by name here); names ending in ``_hat``
    get a hat (``beta_hat`` -> \\hat{\\beta}); ``dimensions`` adds sizes to I and 0.
    """

    _default_settings = {**LatexPrinter._default_settings, "matrix_style": "plain", "dimensions": False}

    def __init__(self, settings: dict | None = None):
        settings = dict(settings or {})
        self._names = dict(settings.pop("symbol_names", {}) or {})
        super().__init__(settings)
        if self._settings["matrix_style"] not in ("plain", "bold", "upright"):
            raise ValueError("matrix_style must be 'plain', 'bold' or 'upright'")

    # symbols --------------------------------------------------------------------------
    def symbol_latex(self, name: str) -> str:
        if name in self._names:
            return self._names[name]
        hat = name.endswith("_hat")
        base, _, sub = (name[:-4] if hat else name).partition("_")
        core = f"\\{base}" if base in _GREEK else base
        style = self._settings["matrix_style"]
        if style == "bold":
            core = f"\\boldsymbol{{{core}}}" if base in _GREEK else f"\\mathbf{{{core}}}"
        elif style == "upright" and base not in _GREEK:
            core = f"\\mathrm{{{core}}}"
        if hat:
            core = f"\\hat{{{core}}}"
        if sub:
            sub = sub if len(sub) == 1 else f"\\mathrm{{{sub}}}" if sub.isalpha() else sub
            core = f"{core}_{{{sub}}}"
        return core

    def _print_MatrixSymbol(self, expr):
        return self.symbol_latex(str(expr.name))

    # structure ------------------------------------------------------------------------
    def _wrap(self, expr) -> str:
        """Parenthesise anything that is not a bare symbol (stretchy parentheses around blocks only)."""
        text = self._print(expr)
        if isinstance(expr, (MatrixSymbol, BlockMatrix)) or expr.is_Identity or expr.is_ZeroMatrix:
            return text
        if "bmatrix" in text:
            return f"\\left({text}\\right)"
        return f"({text})"

    def _print_Transpose(self, expr):
        return f"{self._wrap(expr.arg)}^{{\\top}}"

    def _print_Inverse(self, expr):
        return f"{self._wrap(expr.arg)}^{{-1}}"

    def _print_MatPow(self, expr):
        exponent = expr.exp
        if isinstance(exponent, Rational) and exponent.q != 1:
            power = f"{exponent.p}/{exponent.q}"
        else:
            power = self._print(exponent)
        return f"{self._wrap(expr.base)}^{{{power}}}"

    def _print_Identity(self, expr):
        return f"I_{{{self._print(expr.rows)}}}" if self._settings["dimensions"] else "I"

    def _print_ZeroMatrix(self, expr):
        if self._settings["dimensions"]:
            return f"0_{{{self._print(expr.rows)} \\times {self._print(expr.cols)}}}"
        return "0"

    def _print_BlockMatrix(self, expr):
        rows = [" & ".join(self._print(b) for b in row) for row in blocks_of(expr)]
        return "\\begin{bmatrix}" + " \\\\ ".join(rows) + "\\end{bmatrix}"

    def _print_MatMul(self, expr):
        coeff = Rational(1)
        parts: list[str] = []
        previous_zero = False
        for arg in expr.args:
            if isinstance(arg, Rational):
                coeff *= arg
                continue
            text = self._wrap(arg) if arg.is_MatAdd else self._print(arg)
            if parts and (arg.is_ZeroMatrix or previous_zero):
                parts.append("\\cdot")  # 0 0 would read as the number 00
            parts.append(text)
            previous_zero = bool(arg.is_ZeroMatrix)
        body = " ".join(parts)
        if coeff == 1:
            return body
        if coeff == -1:
            return f"-{body}"
        return f"{self._print(coeff)} {body}"

    def _print_MatAdd(self, expr):
        texts = [self._print(term) for term in expr.args]
        texts.sort(key=lambda t: t.startswith("-"))  # as written by hand: A - B, not -B + A
        out = ""
        for index, text in enumerate(texts):
            if index and not text.startswith("-"):
                out += " + "
            elif index:
                out += " - "
                text = text[1:]
            out += text
        return out


def math(expr: Basic, **settings) -> str:
    """LaTeX of a kernel term in paper notation."""
    return PaperLatexPrinter(settings).doprint(expr)


# --- theorems -----------------------------------------------------------------------


def _label(theorem_id: str, lemma: str | None = None) -> str:
    return f"thm:{theorem_id}" if lemma is None else f"lem:{theorem_id}:{lemma}"


def _equation(h: Hypothesis, printer: PaperLatexPrinter) -> str:
    if h.is_predicate:
        matrix, name = _predicate(h, printer)
        return f"${matrix}$ is {name}"
    text = f"${printer.doprint(h.lhs)} = {printer.doprint(h.rhs)}$"
    if h.forall:
        bound = ", ".join(printer.doprint(v) for v in h.forall if isinstance(v, MatrixSymbol))
        text = f"for every ${bound}$: {text}"
    return text


def _rule_text(step, theorem: Theorem, printer: PaperLatexPrinter) -> str:
    rule = step.rule
    if rule in RULE_TEXT:
        return RULE_TEXT[rule]
    kind, _, name = rule.partition(":")
    proof = theorem.proof
    if kind == "thm":
        return f"Theorem~\\ref{{{_label(name)}}}"
    if kind == "lemma":
        return f"Lemma~\\ref{{{_label(theorem.id, name)}}}"
    if kind == "def":
        definition = next(d for d in proof.definitions if d.name == name)
        return f"definition of ${printer.doprint(definition.symbol)}$"
    hyps = list(proof.hypotheses) + [h for c in proof.lemmas for h in c.hypotheses]
    h = next(h for h in hyps if h.name == name)
    if not step.instance:
        return f"by {_equation(h, printer)}"
    pairs = ", ".join(f"{printer.doprint(v)} = {printer.doprint(t)}" for v, t in step.instance
                      if isinstance(v, MatrixSymbol))
    return f"by the hypothesis, with ${pairs}$"


_WIDE_LINE = 260  # characters of LaTeX beyond which a chain line would overflow the page


def _chain_latex(chain: Chain, theorem: Theorem, printer: PaperLatexPrinter) -> str:
    if not chain.steps:
        return f"\\[ {printer.doprint(chain.lhs)} = {printer.doprint(chain.rhs)} \\]"
    exprs = [printer.doprint(step.expr) for step in chain.steps]
    lhs = printer.doprint(chain.lhs)
    wide = max(len(e) for e in exprs) + len(lhs) > _WIDE_LINE  # then the left side gets a line of its own
    lines = [f"  & {lhs}"] if wide else []
    for index, (step, expr) in enumerate(zip(chain.steps, exprs, strict=True)):
        left = lhs if index == 0 and not wide else ""
        tag = _rule_text(step, theorem, printer)
        lines.append(f"  {left} &{'{}' if wide else ''}= {expr} \\tag*{{\\small({tag})}}")
    return "\\begin{align*}\n" + " \\\\\n".join(lines) + "\n\\end{align*}"


def _shapes(theorem: Theorem, printer: PaperLatexPrinter) -> str:
    proof = theorem.proof
    bound = {v for h in proof.hypotheses for v in h.forall}
    bound |= {v for c in proof.lemmas for h in c.hypotheses for v in h.forall}
    terms = [proof.claim.lhs, proof.claim.rhs] + [t for h in proof.hypotheses for t in (h.lhs, h.rhs)]
    terms += [t for d in proof.definitions for t in (d.symbol, d.rhs)]
    terms += [t for c in proof.lemmas for t in (c.lhs, c.rhs)]
    seen: dict[str, MatrixSymbol] = {}
    for term in terms:
        for sym in sorted(term.atoms(MatrixSymbol), key=lambda s: str(s.name)):
            if sym not in bound:
                seen.setdefault(str(sym.name), sym)
    items = [f"${printer.doprint(s)} \\in \\mathbb{{R}}^{{{printer.doprint(s.rows)} \\times "
             f"{printer.doprint(s.cols)}}}$" for s in seen.values()]
    return ", ".join(items)


def _checked(theorem: Theorem, settings: dict) -> tuple[PaperLatexPrinter, object]:
    """The printer and proof of a theorem the kernel checked; anything else is refused."""
    if not isinstance(theorem, Theorem):
        raise TypeError("LaTeX is generated from checked theorems only (derive.kernel.check)")
    return PaperLatexPrinter(settings), theorem.proof


def _predicate(h: Hypothesis, printer: PaperLatexPrinter) -> tuple[str, str]:
    """(matrix, predicate in words) of a predicate hypothesis."""
    return printer.doprint(h.lhs.arguments[0]), h.lhs.function.name.replace("_", " ")


def theorem_latex(theorem: Theorem, **settings) -> str:
    """A theorem environment (statement from the checked data) and its proof, one line per step."""
    printer, proof = _checked(theorem, settings)
    out = [f"\\begin{{theorem}}[{theorem.title}]\\label{{{_label(theorem.id)}}}"]
    out.append(f"Let {_shapes(theorem, printer)}.")
    if proof.hypotheses:
        out.append("Assume " + "; ".join(_equation(h, printer) for h in proof.hypotheses) + ".")
    if proof.definitions:
        defs = ", ".join(f"${printer.doprint(d.symbol)} = {printer.doprint(d.rhs)}$" for d in proof.definitions)
        out.append(f"Define {defs}.")
    out.append(f"Then\n\\[ {printer.doprint(proof.claim.lhs)} = {printer.doprint(proof.claim.rhs)}. \\]")
    out.append("\\end{theorem}\n")
    out.append("\\begin{proof}")
    for lemma in proof.lemmas:
        header = f"\\begin{{lemma}}\\label{{{_label(theorem.id, lemma.name)}}}"
        if lemma.hypotheses:
            header += " If " + " and ".join(_equation(h, printer) for h in lemma.hypotheses) + ", then"
        out.append(header)
        out.append(f"\\[ {printer.doprint(lemma.lhs)} = {printer.doprint(lemma.rhs)}. \\]")
        out.append("\\end{lemma}")
        out.append(_chain_latex(lemma, theorem, printer))
    out.append("For the claim:" if proof.lemmas else "")
    out.append(_chain_latex(proof.claim, theorem, printer))
    out.append("\\end{proof}\n")
    return "\n".join(line for line in out if line)


def theorem_display(theorem: Theorem, **settings) -> str:
    """Math-mode summary for Jupyter (MathJax has no theorem environments): hypotheses, then the claim."""
    printer, proof = _checked(theorem, settings)
    lines = [f"&\\textbf{{{theorem.title}}}\\ (\\text{{{len(proof.lemmas)} lemmas, {theorem.steps} checked steps}})"]
    for h in proof.hypotheses:
        if h.is_predicate:
            matrix, name = _predicate(h, printer)
            lines.append(f"&{matrix}\\ \\text{{{name}}}")
        else:
            lines.append(f"&{printer.doprint(h.lhs)} = {printer.doprint(h.rhs)}")
    for d in proof.definitions:
        lines.append(f"&{printer.doprint(d.symbol)} := {printer.doprint(d.rhs)}")
    lines.append(f"&\\implies {printer.doprint(proof.claim.lhs)} = {printer.doprint(proof.claim.rhs)}")
    return "$$\\begin{aligned}" + " \\\\ ".join(lines) + "\\end{aligned}$$"


PREAMBLE = r"""\documentclass[11pt]{article}
\usepackage[a4paper,margin=2cm]{geometry}
\usepackage{amsmath,amssymb,amsthm}
\allowdisplaybreaks
\newtheorem{theorem}{Theorem}
\newtheorem{lemma}{Lemma}[theorem]
\title{Ordinary least squares is single-layer linear attention\\\large machine-checked theorems}
\author{generated by \texttt{derive} from kernel-checked proofs}
\date{}
"""


def _notation(theorems: Sequence[Theorem], printer: PaperLatexPrinter) -> str:
    names: dict[str, MatrixSymbol] = {}
    for theorem in theorems:
        proof = theorem.proof
        for term in [proof.claim.lhs, *(d.symbol for d in proof.definitions), *(h.lhs for h in proof.hypotheses)]:
            for sym in term.atoms(MatrixSymbol):
                names.setdefault(str(sym.name), sym)
    rows = [f"${printer.doprint(names[n])}$ & {GLOSSARY.get(n, '')} \\\\" for n in sorted(names, key=str.lower)]
    return "\n".join([
        "\\section*{Notation}",
        "Products are matrix products; $A^{\\top}$ is the transpose, $I$ an identity and $0$ a zero matrix "
        "of the size the context needs. The OLS estimator is $\\hat{\\beta} = (X^{\\top}X)^{-1}X^{\\top}Y$, "
        "its predictions at queries $X_{q}$ are $X_{q}\\hat{\\beta}$, and $\\hat{Y} = HY$. "
        "Each proof line names the rule the kernel checked for that step.",
        "\\begin{center}\\begin{tabular}{ll}",
        *rows,
        "\\end{tabular}\\end{center}",
    ])


def article_latex(theorems: Sequence[Theorem], **settings) -> str:
    """A standalone article: notation, then every theorem with its proof."""
    printer = PaperLatexPrinter(settings)
    body = [PREAMBLE, "\\begin{document}", "\\maketitle", _notation(theorems, printer)]
    for theorem in theorems:
        body.append(f"\\section{{{theorem.title}}}")
        body.append(theorem_latex(theorem, **settings))
    body.append("\\end{document}")
    return "\n\n".join(body) + "\n"

