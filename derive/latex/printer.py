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
    get a hat (``beta_hat`` -> \\hat{\\beta}); ``dimensions`` adds sizes to I and 0; ``breaks`` — LaTeX put
    between the factors of the outermost products (of the term, or of the terms of an outermost sum), where
    a long display may break (``\\olsbreak`` in the fragments), or ``None``.
    ``symbol_names`` also applies to dimension symbols (``n``, ``p``).
    """

    _default_settings = {**LatexPrinter._default_settings, "matrix_style": "plain", "dimensions": False,
                         "breaks": None}

    def __init__(self, settings: dict | None = None):
        settings = dict(settings or {})
        self._names = dict(settings.pop("symbol_names", {}) or {})
        super().__init__(settings)
        self._outer = False
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

    def _print_Symbol(self, expr, style="plain"):
        if str(expr.name) in self._names:
            return self._names[str(expr.name)]
        return super()._print_Symbol(expr, style=style)

    def dimension(self, dim) -> str:
        """A dimension as a factor of ``n \\times p``: a sum or difference in parentheses."""
        text = self._print(dim)
        return f"({text})" if dim.is_Add else text

    def _print(self, expr, **kwargs):
        if self._outer and not (getattr(expr, "is_MatAdd", False) or getattr(expr, "is_MatMul", False)):
            self._outer = False  # no breaks inside parentheses, transposes, blocks
            try:
                return super()._print(expr, **kwargs)
            finally:
                self._outer = True
        return super()._print(expr, **kwargs)

    def doprint_breakable(self, expr) -> str:
        """Like ``doprint``, with the ``breaks`` setting between the outermost factors."""
        self._outer = self._settings["breaks"] is not None
        try:
            return self.doprint(expr)
        finally:
            self._outer = False

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
        outer, self._outer = self._outer, False
        try:
            return self._mat_mul(expr, outer)
        finally:
            self._outer = outer

    def _mat_mul(self, expr, outer: bool) -> str:
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
            elif parts and outer:
                parts.append(self._settings["breaks"])
            parts.append(text)
            previous_zero = bool(arg.is_ZeroMatrix)
        body = " ".join(parts)
        if coeff == 1:
            return body
        if coeff == -1:
            return f"-{body}"
        return f"{self._print(coeff)} {body}"

    def _print_MatAdd(self, expr):
        texts = [self._print(term) for term in expr.args]  # terms of an outermost sum stay outermost
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
