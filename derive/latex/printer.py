"""Paper notation for kernel terms.

:class:`PaperLatexPrinter` subclasses SymPy's ``LatexPrinter`` to write what a paper would
(X^{\\top}, \\Lambda^{-1/2}, bmatrix blocks, I and 0 without decoration); :func:`math` prints one term.
Theorems, proofs and the article are in :mod:`derive.latex.article`.
"""

from __future__ import annotations

from sympy import Basic, Rational
from sympy.matrices.expressions import BlockMatrix, MatrixSymbol
from sympy.printing.latex import LatexPrinter

from ..kernel.terms import blocks_of

__all__ = ["PaperLatexPrinter", "math"]

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
