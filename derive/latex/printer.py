"""Paper notation for kernel terms.

:class:`PaperLatexPrinter` subclasses SymPy's ``LatexPrinter`` to write what a paper would
(X^{\\top}, \\Lambda^{-1/2}, bmatrix blocks, I and 0 without decoration); :func:`math` prints one term.
Scalar coefficients print as a paper writes them (``\\frac{1}{\\lambda} X``, ``(\\lambda + 1) X``,
``A - \\eta B``), the terms of a sum in the order a paper writes them (``X^{\\top} X + \\lambda I``: the
kernel's order, a multiple of the identity last, a negative term after the positive ones), a 1×1 matrix read
as a scalar as that matrix (``(1 + v^{\\top} A^{-1} u)^{-1} A``), the 1×1 identity as ``1``, the member
``x[t + 1]`` of a family as ``x_{t+1}``, the causal mask ``tril(A)`` as ``\\operatorname{tril}(A)``, its strict
form ``tril(A, -1)`` as ``\\operatorname{tril}_{-1}(A)``, and the Kronecker product ``kron(A, B)`` as
``A \\otimes B`` (in parentheses as a factor of a product, of another Kronecker product, or under a transpose,
an inverse or a power: ``(A \\otimes B)^{\\top}``).
Theorems, proofs and the article are in :mod:`derive.latex.article`.
"""

from __future__ import annotations

from sympy import Add, Basic, Mul, Pow, Rational, S, Symbol, fraction, powsimp
from sympy.matrices.expressions import (
    BlockMatrix,
    Identity,
    Inverse,
    MatrixExpr,
    MatrixSymbol,
    Trace,
    Transpose,
    ZeroMatrix,
)
from sympy.printing.latex import LatexPrinter

from ..kernel.scalars import scalar_kind
from ..kernel.terms import Diag, FamilyMatrix, Kron, Ones, Tril, blocks_of

__all__ = ["ABBREVIATIONS", "PaperLatexPrinter", "math"]

_GREEK = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu", "nu",
          "xi", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi", "omega",
          "Gamma", "Delta", "Theta", "Lambda", "Xi", "Pi", "Sigma", "Upsilon", "Phi", "Psi", "Omega"}

#: Short names of scalar symbols read as the Greek letter they abbreviate (``lam`` prints as ``\lambda``).
ABBREVIATIONS = {"lam": "lambda", "gam": "gamma", "sig": "sigma", "eps": "epsilon", "alph": "alpha", "kap": "kappa"}


#: Matrix names read as a symbol, not as letters: ``ones_n`` is the all-ones vector :math:`\\mathbf{1}_n`.
_SPECIAL_LETTERS = {"ones": "\\mathbf{1}", "zeros": "\\mathbf{0}"}


def _one(dim) -> bool:
    return dim == 1


def _is_one_by_one(expr) -> bool:
    return all(_one(d) for d in expr.shape)


class PaperLatexPrinter(LatexPrinter):
    """SymPy's LaTeX printer with the notation of a paper.

    Settings beyond SymPy's: ``matrix_style`` — ``"plain"`` (X), ``"bold"`` (\\mathbf{X},
    \\boldsymbol{\\Lambda}) or ``"upright"`` (\\mathrm{X}); ``symbol_names`` maps a symbol's name
    to the LaTeX to print (SymPy's own setting, keyed by name here); names ending in ``_hat``
    get a hat (``beta_hat`` -> \\hat{\\beta}); ``dimensions`` adds sizes to I and 0; ``breaks`` — LaTeX put
    between the factors of the outermost products (of the term, or of the terms of an outermost sum), where
    a long display may break (``\\olsbreak`` in the fragments), or ``None``.  With ``breaks``, a display's
    block matrices print as ``\\olsblocks`` (blocks that narrow and break when the matrix is wider than the
    line) and parentheses around them as ``\\olsparen`` (whose content may break): both defined by the package.
    ``symbol_names`` also applies to dimension and scalar symbols (``n``, ``lambda``); ``family_names`` maps a
    family's name to the LaTeX of its letter (the member ``x[t]`` prints as that letter with the subscript t).
    """

    _default_settings = {**LatexPrinter._default_settings, "matrix_style": "plain", "dimensions": False,
                         "breaks": None}

    def __init__(self, settings: dict | None = None):
        settings = dict(settings or {})
        self._names = dict(settings.pop("symbol_names", {}) or {})
        self._family_names = dict(settings.pop("family_names", {}) or {})
        super().__init__(settings)
        self._outer = False
        self._breaking = False  # printing a display (doprint_breakable): blocks and parentheses may break
        self._deep = False  # inside a block that may narrow or \olsparen: products break at every depth
        if self._settings["matrix_style"] not in ("plain", "bold", "upright"):
            raise ValueError("matrix_style must be 'plain', 'bold' or 'upright'")

    # symbols --------------------------------------------------------------------------
    def symbol_parts(self, name: str) -> tuple[str, str]:
        """(the styled letter, the subscript or "") of a matrix symbol's name, as the paper writes them."""
        hat = name.endswith("_hat")
        base, _, sub = (name[:-4] if hat else name).partition("_")
        core = f"\\{base}" if base in _GREEK else _SPECIAL_LETTERS.get(base, base)
        style = self._settings["matrix_style"]
        if style == "bold":
            core = f"\\boldsymbol{{{core}}}" if base in _GREEK else f"\\mathbf{{{core}}}"
        elif style == "upright" and base not in _GREEK:
            core = f"\\mathrm{{{core}}}"
        if hat:
            core = f"\\hat{{{core}}}"
        if sub in _GREEK or sub in ABBREVIATIONS:  # L_lambda: L with the subscript lambda
            sub = f"\\{ABBREVIATIONS.get(sub, sub)}"
        elif sub:
            sub = sub if len(sub) == 1 else f"\\mathrm{{{sub}}}" if sub.isalpha() else sub
        return core, sub

    def symbol_latex(self, name: str) -> str:
        if name in self._names:
            return self._names[name]
        core, sub = self.symbol_parts(name)
        return f"{core}_{{{sub}}}" if sub else core

    def _print_MatrixSymbol(self, expr):
        return self.symbol_latex(str(expr.name))

    def scalar_latex(self, name: str) -> str:
        """A scalar symbol: SymPy's Greek letters and subscripts, short names spelled out (``lam`` -> \\lambda)."""
        if name in self._names:
            return self._names[name]
        hat = name.endswith("_hat")
        base, sep, sub = (name[:-4] if hat else name).partition("_")
        text = super()._print_Symbol(Symbol(ABBREVIATIONS.get(base, base) + sep + sub))
        return f"\\hat{{{text}}}" if hat else text

    def _print_Symbol(self, expr, style="plain"):
        if str(expr.name) in self._names:
            return self._names[str(expr.name)]
        if scalar_kind(expr) is not None:
            return self.scalar_latex(str(expr.name))
        return super()._print_Symbol(expr, style=style)

    def dimension(self, dim) -> str:
        """A dimension as a factor of ``n \\times p``: a sum or difference in parentheses."""
        text = self._print(dim)
        return f"({text})" if dim.is_Add else text

    # families -------------------------------------------------------------------------
    def index_latex(self, index) -> str:
        """A family's index as a subscript: ``0``, ``t``, ``t+1`` (no spaces, as papers write x_{t+1})."""
        index = S(index)
        if index.is_Add:
            number, rest = index.as_coeff_Add()
            return f"{self._print(rest)}{'+' if number > 0 else '-'}{abs(number)}"
        return self._print(index)

    def family_latex(self, name: str, index=None) -> str:
        """The family ``name`` (its letter), or its member at ``index``: ``x_{t+1}``, ``X_{q,t}``."""
        core, sub = self.symbol_parts(name)
        core = self._family_names.get(name, core)
        parts = [part for part in (sub, None if index is None else self.index_latex(index)) if part]
        return f"{core}_{{{','.join(parts)}}}" if parts else core

    def _print_FamilyMatrix(self, expr):
        return self.family_latex(expr.name, expr.index)

    # breaking -------------------------------------------------------------------------
    def _print(self, expr, **kwargs):
        if self._outer and not self._deep and not (getattr(expr, "is_MatAdd", False)
                                                   or getattr(expr, "is_MatMul", False)):
            self._outer = False  # no breaks inside parentheses, transposes, blocks
            try:
                return super()._print(expr, **kwargs)
            finally:
                self._outer = True
        return super()._print(expr, **kwargs)

    def _outermost(self, expr, deep: bool = False) -> str:
        """``expr`` printed with breaks between the factors of its outermost products (a display's own level), or
        of all its products (``deep``: the content of a narrowing block or of \\olsparen, where room is short)."""
        saved = self._outer, self._deep
        self._outer, self._deep = True, deep
        try:
            return self._print(expr)
        finally:
            self._outer, self._deep = saved

    def doprint_breakable(self, expr) -> str:
        """Like ``doprint``, with the ``breaks`` setting between the outermost factors (and blocks that adapt)."""
        self._outer = self._breaking = self._settings["breaks"] is not None
        try:
            return self.doprint(expr)
        finally:
            self._outer = self._breaking = False

    # structure ------------------------------------------------------------------------
    def _wrap(self, expr) -> str:
        """Parenthesise anything that is not a bare symbol (stretchy parentheses around blocks only)."""
        if isinstance(expr, (MatrixSymbol, FamilyMatrix, BlockMatrix, Ones, Diag, Tril)) or expr.is_Identity \
                or expr.is_ZeroMatrix:
            return self._print(expr)
        return self._parenthesised(expr)

    def _parenthesised(self, expr) -> str:
        """``expr`` in parentheses: stretchy around blocks, and whose content may break in a display."""
        if self._breaking and expr.atoms(BlockMatrix):  # blocks inside: parentheses whose content may break
            return f"\\olsparen{{{self._outermost(expr, deep=True)}}}"
        text = self._print(expr)
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
        if _is_one_by_one(expr):
            return "1"  # the 1×1 identity is the number 1
        return f"I_{{{self._print(expr.rows)}}}" if self._settings["dimensions"] else "I"

    def _print_ZeroMatrix(self, expr):
        if self._settings["dimensions"] and not _is_one_by_one(expr):
            return f"0_{{{self._print(expr.rows)} \\times {self._print(expr.cols)}}}"
        return "0"

    def _print_Ones(self, expr):
        """The ones vector 1ₙ (issue 41), with its length."""
        return f"\\mathbf{{1}}_{{{self.dimension(expr.args[0])}}}"

    def _print_Diag(self, expr):
        """diag(v) (issue 41)."""
        return f"\\operatorname{{diag}}({self._print(expr.args[0])})"

    def _print_Tril(self, expr):
        """The causal mask (issues 41, 42): ``\\operatorname{tril}(A)`` keeps the diagonal and what is below it,
        ``\\operatorname{tril}_{-1}(A)`` what is strictly below it; the argument always in parentheses."""
        name = "\\operatorname{tril}" if expr.args[1] == 0 else "\\operatorname{tril}_{-1}"
        return name + self._parenthesised(expr.args[0])

    def _print_Kron(self, expr):
        """The Kronecker product (issue 41): ``A \\otimes B``, a factor that is a product, a sum or a Kronecker
        product itself in parentheses (``(A C) \\otimes B``, ``A \\otimes (B \\otimes C)``); a transpose, an
        inverse or a power of a symbol binds tighter (``A^{\\top} \\otimes B^{-1}``)."""
        return " \\otimes ".join(self._kron_factor(factor) for factor in expr.args)

    def _kron_factor(self, factor) -> str:
        if factor.is_MatMul or factor.is_MatAdd or isinstance(factor, Kron):
            return self._parenthesised(factor)
        return self._print(factor)

    def _print_BlockMatrix(self, expr):
        grid = blocks_of(expr)
        if not self._breaking or getattr(self, "_in_blocks", False):  # \olsblocks does not nest: inner grids plain
            rows = [" & ".join(self._print(b) for b in row) for row in grid]
            return "\\begin{bmatrix}" + " \\\\ ".join(rows) + "\\end{bmatrix}"
        # a display: the blocks of columns that hold more than a symbol may narrow and break (\olsblocks)
        wide = [j for j in range(len(grid[0])) if not all(_simple(row[j]) for row in grid)]
        outer, self._outer = self._outer, False
        self._in_blocks = True
        try:
            rows = [" & ".join(f"\\olscell{{{self._outermost(b, deep=True)}}}" if j in wide else self._print(b)
                               for j, b in enumerate(row)) for row in grid]
        finally:
            self._outer = outer
            self._in_blocks = False
        body = " \\\\ ".join(rows)
        if not wide:
            return "\\begin{bmatrix}" + body + "\\end{bmatrix}"
        return f"\\olsblocks{{{len(wide)}}}{{{body}}}"

    # scalars --------------------------------------------------------------------------
    def _print_Trace(self, expr):
        """A 1×1 matrix read as a scalar prints as that matrix, in parentheses when it is a product or a sum."""
        matrix = expr.arg
        saved = self._breaking, self._outer, self._deep
        self._breaking = self._outer = self._deep = False  # a scalar never breaks
        try:
            text = self._print(matrix)
        finally:
            self._breaking, self._outer, self._deep = saved
        return f"({text})" if matrix.is_MatMul or matrix.is_MatAdd or isinstance(matrix, Kron) else text

    def _scalar_atom(self, atom, alone: bool) -> str:
        if isinstance(atom, Trace) and alone:  # the whole numerator or denominator of a fraction
            saved = self._breaking, self._outer, self._deep
            self._breaking = self._outer = self._deep = False
            try:
                return self._print(atom.arg)
            finally:
                self._breaking, self._outer, self._deep = saved
        return self._print(atom)

    def _monomial(self, term, alone: bool) -> str:
        factors = term.as_ordered_factors() if isinstance(term, Mul) else [term]
        out = []
        for factor in factors:
            if isinstance(factor, Pow):
                base = factor.base
                text = self._scalar_atom(base, False)
                if isinstance(base, Trace) and not isinstance(base.arg, (MatrixSymbol, FamilyMatrix)) \
                        and not (base.arg.is_MatMul or base.arg.is_MatAdd or isinstance(base.arg, Kron)):
                    text = f"({text})"  # (u^T)^2 or ((1 + u)^{-1})^2: a power of a power
                out.append(f"{text}^{{{self._print(factor.exp)}}}")
            else:
                out.append(self._scalar_atom(factor, alone and len(factors) == 1))
        return " ".join(out)

    def _polynomial(self, poly, alone: bool = False) -> str:
        """A polynomial in scalar symbols and 1×1 matrices, its terms in SymPy's order (``\\lambda + 1``)."""
        terms = poly.as_ordered_terms() if isinstance(poly, Add) else [poly]
        terms.sort(key=lambda term: bool(term.as_coeff_Mul()[0] < 0))  # as written by hand: 1 - \lambda
        out = ""
        for index, term in enumerate(terms):
            number, monomial = term.as_coeff_Mul()
            negative = bool(number < 0)
            number = abs(number)
            if monomial == 1:
                text = self._print(number)
            else:
                text = self._monomial(monomial, alone and len(terms) == 1)
                if number != 1:
                    text = f"{self._print(number)} {text}"
            if index == 0:
                out = f"-{text}" if negative else text
            else:
                out += f" - {text}" if negative else f" + {text}"
        return out

    def coefficient_latex(self, coeff) -> tuple[bool, str]:
        """(negative, magnitude) of a product's scalar coefficient: ``\\frac{\\lambda}{2 (\\lambda + 1)}``,
        ``(\\lambda + 1)``, ``\\eta``, ``(1 + v^{\\top} A^{-1} u)^{-1}`` (a 1×1 matrix read as a scalar); powers of a
        scalar with index exponents combined as a paper writes them (``\\gamma^{t + 1}``, not
        ``\\gamma \\gamma^{t}``)."""
        if any(not isinstance(node.exp, Rational) for node in coeff.atoms(Pow)):
            coeff = powsimp(coeff, combine="exp")
        numerator, denominator = fraction(coeff)
        top_content, numerator = numerator.as_content_primitive()
        bottom_content, denominator = denominator.as_content_primitive()
        negative = _all_negative(numerator)
        if negative:
            numerator = -numerator
        if _all_negative(denominator):
            negative, denominator = not negative, -denominator
        ratio = Rational(top_content) / Rational(bottom_content)
        top, bottom = ratio.p, ratio.q
        if denominator == 1 and bottom == 1:
            text = self._polynomial(numerator)
            if isinstance(numerator, Add):
                text = f"({text})"
            return negative, text if top == 1 else f"{top} {text}"
        upper = str(top) if numerator == 1 else self._scaled(top, numerator)
        lower = str(bottom) if denominator == 1 else self._scaled(bottom, denominator)
        return negative, f"\\frac{{{upper}}}{{{lower}}}"

    def _scaled(self, number: int, poly) -> str:
        text = self._polynomial(poly, alone=number == 1)
        if number == 1:
            return text
        return f"{number} ({text})" if isinstance(poly, Add) else f"{number} {text}"

    def _print_MatMul(self, expr):
        outer, self._outer = self._outer, self._outer and self._deep
        try:
            return self._mat_mul(expr, outer)
        finally:
            self._outer = outer

    def _mat_mul(self, expr, outer: bool) -> str:
        coeff = S.One
        parts: list[str] = []
        previous_number = False
        for arg in expr.args:
            if not isinstance(arg, MatrixExpr):
                coeff *= arg
                continue
            text = self._wrap(arg) if arg.is_MatAdd or isinstance(arg, Kron) else self._print(arg)
            number = text in ("0", "1")  # a zero or a 1×1 identity: 0 0 would read as the number 00
            if parts and (number or previous_number):
                parts.append("\\cdot")
            elif parts and outer:
                parts.append(self._settings["breaks"])
            parts.append(text)
            previous_number = number
        body = " ".join(parts)
        if coeff == 1:
            return body
        if coeff == -1:
            return f"-{body}"
        if isinstance(coeff, Rational):
            negative, text = coeff < 0, self._print(abs(coeff))
        else:
            negative, text = self.coefficient_latex(coeff)
        joint = " \\cdot " if body[:1].isdigit() else " "
        return f"{'-' if negative else ''}{text}{joint}{body}"

    def _print_MatAdd(self, expr):
        texts = [self._print(term) for term in expr.args]  # terms of an outermost sum stay outermost
        # as written by hand (the kernel sorts a sum's terms, so the author's order is not kept): A - B, not
        # -B + A; a 1×1 identity first (1 + v^T u, the scalar it is); a multiple of a larger identity after the
        # other terms of its sign (X^T X + \lambda I, not \lambda I + X^T X; I - A stays as it is)
        order = sorted(range(len(texts)), key=lambda i: (texts[i].startswith("-"), texts[i] != "1",
                                                         _identity_multiple(expr.args[i])))
        out = ""
        for index, position in enumerate(order):
            text = texts[position]
            if index and not text.startswith("-"):
                out += " + "
            elif index:
                out += " - "
                text = text[1:]
            out += text
        return out


def _identity_multiple(term) -> bool:
    """``I``, ``\\lambda I`` or ``-2 I`` (an identity larger than 1×1, times a scalar): written last in a sum."""
    if term.is_MatMul:
        matrices = [a for a in term.args if isinstance(a, MatrixExpr)]
        term = matrices[0] if len(matrices) == 1 else term
    return bool(term.is_Identity) and not _is_one_by_one(term)


def _all_negative(poly) -> bool:
    """Every term of a polynomial is negative: ``-\\lambda - 1`` is written ``-(\\lambda + 1)``, ``1 - \\lambda``
    as it is."""
    terms = poly.args if isinstance(poly, Add) else (poly,)
    return all(bool(term.as_coeff_Mul()[0] < 0) for term in terms)


def _simple(block: Basic) -> bool:
    """A block that is a symbol, a family member, 0 or I, or the transpose or inverse of a symbol: never wide."""
    while isinstance(block, (Transpose, Inverse)):
        block = block.arg
    return isinstance(block, (MatrixSymbol, FamilyMatrix, Identity, ZeroMatrix))


def math(expr: Basic, **settings) -> str:
    """LaTeX of a kernel term in paper notation."""
    return PaperLatexPrinter(settings).doprint(expr)
