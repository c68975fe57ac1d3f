"""Kernel terms in the package's plain-text notation: ``XᵀX = VΛVᵀ``, ``(XᵀX + λI)⁻¹``, ``Λ^(-1/2)``.

What ``derive check`` prints of the statement a certificate proves: SymPy's syntax (``X.T*X = V*Lambda*V.T``) is for
programs; a reader checks a certificate against the notation of the theorem they meant.  The notation:

* products by juxtaposition (``VΛVᵀ``) between one-letter names, parenthesised factors and decorated ones, and by
  ``·`` next to a longer name or a number (``W_Q·Xᵀ``, ``2·0``), so that a product never reads as a name;
* ``ᵀ``, ``⁻¹`` and integer powers as superscripts (``A²``, ``A⁻²``), other powers as ``^(…)`` (``Λ^(-1/2)``,
  ``γ^(t + 1)``); ``I``, ``0``, ``1ₙ`` (the ones vector), ``diag(v)``, the causal mask ``tril(A)`` and its strict
  form ``tril(A, -1)``, blocks ``[A, B; C, D]``, the member of a family ``G[t + 1]``, and a 1×1 matrix read as a
  scalar as that matrix (``(uᵀv)``);
* the Kronecker product as ``A ⊗ B``, in parentheses as a factor of a product, of another Kronecker product, or the
  base of ``ᵀ``, ``⁻¹`` or a power (``(A ⊗ B)(C ⊗ D)``, ``(AC) ⊗ B``, ``(A ⊗ B)ᵀ``), bare as a term of a sum;
* a name that is a Greek letter's (``Lambda``, ``lambda``) as that letter, a name ending in ``_hat`` with a hat
  (``β̂``), a subscript of digits or of one letter Unicode has as a subscript as one (``x_t`` -> ``xₜ``), any other as
  it is (``X_q``, ``W_sum``).  :func:`display_names` keeps every name of a statement apart: names that would print
  alike print as they are.

Printing is bounded: at most ``budget`` nodes and ``MAX_DEPTH`` levels (the rest is ``…``), in time linear in what
is shown, so a hostile certificate cannot make its own display costly.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from sympy import Add, Basic, Integer, Mul, Pow, Rational, Symbol
from sympy.matrices.expressions import (
    BlockMatrix,
    Identity,
    Inverse,
    MatAdd,
    MatMul,
    MatPow,
    MatrixExpr,
    MatrixSymbol,
    Trace,
    Transpose,
    ZeroMatrix,
)
from sympy.printing.str import StrPrinter

from .kernel.terms import Diag, FamilyMatrix, Kron, Ones, Tril, blocks_of

__all__ = ["MAX_DEPTH", "display_name", "display_names", "plain"]

#: The deepest nesting printed (then ``…``): well inside Python's recursion limit whatever the term.
MAX_DEPTH = 120

_GREEK = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu", "nu",
          "xi", "omicron", "pi", "rho", "final", "sigma", "tau", "upsilon", "phi", "chi", "psi", "omega"]
GREEK = {name: chr(0x3B1 + i) for i, name in enumerate(_GREEK) if name != "final"}
GREEK.update({name.capitalize(): chr(0x391 + i) for i, name in enumerate(_GREEK) if name != "final"})
_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
_SUBSCRIPTS = dict(zip("0123456789aehijklmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ", strict=True))
_DECORATIONS = set("".join(_SUBSCRIPTS.values())) | set("⁰¹²³⁴⁵⁶⁷⁸⁹⁻ᵀ")


def display_name(name: str) -> str:
    """A symbol's name as the notation writes it: ``Lambda`` -> ``Λ``, ``beta_hat`` -> ``β̂``, ``x_t`` -> ``xₜ``,
    ``L_lambda`` -> ``L_λ``, ``X_q`` as it is."""
    hat = name.endswith("_hat") and len(name) > 4
    base, sep, sub = (name[:-4] if hat else name).partition("_")
    base = GREEK.get(base, base)
    if hat:
        base += "\u0302"  # combining circumflex: β̂
    if not sep:
        return base
    sub = GREEK.get(sub, sub)
    if (sub.isdigit() or len(sub) == 1) and all(ch in _SUBSCRIPTS for ch in sub):  # xₜ, X₁₂; not Wₛᵤₘ
        return base + "".join(_SUBSCRIPTS[ch] for ch in sub)
    return f"{base}_{sub}"


def display_names(names: Iterable[str]) -> dict[str, str]:
    """Each name's display (:func:`display_name`), except where two names would print alike (``lambda`` and ``λ``,
    ``x_1`` and ``x₁``): those print as they are, so that what is shown names one symbol."""
    names = set(names)
    shown = {name: display_name(name) for name in names}
    count: dict[str, int] = {}
    for text in shown.values():
        count[text] = count.get(text, 0) + 1
    clash = {text for text, n in count.items() if n > 1} | (set(shown.values()) & names)
    return {name: name if text in clash and text != name else text for name, text in shown.items()}


def _one_letter(text: str) -> bool:
    """A name of one letter, with a hat or Unicode subscripts at most: may stand next to another without ``·``."""
    core = [ch for ch in text if not unicodedata.combining(ch) and ch not in _DECORATIONS]
    return len(core) == 1 and core[0].isalpha()


class PlainPrinter(StrPrinter):
    """The notation of the module's docstring, stopping after ``budget`` nodes or :data:`MAX_DEPTH` levels."""

    def __init__(self, budget: int, names: dict[str, str] | None = None, raw: bool = False):
        super().__init__()
        self.budget = budget
        self.depth = 0
        self.names = names or {}
        self.raw = raw

    def _print(self, expr, **kwargs) -> str:
        self.budget -= 1
        if self.budget < 0 or self.depth >= MAX_DEPTH:
            return "…"
        self.depth += 1
        try:
            if type(expr) is Kron:  # before SymPy's printmethod, Kron's own _sympystr (kron(A, B))
                return self._print_Kron(expr)
            return super()._print(expr, **kwargs)
        finally:
            self.depth -= 1

    def name(self, name: str) -> str:
        if name in self.names:
            return self.names[name]
        return name if self.raw else display_name(name)

    # leaves -------------------------------------------------------------------------------
    def _print_MatrixSymbol(self, expr) -> str:
        return self.name(str(expr.name))

    def _print_Symbol(self, expr) -> str:
        return self.name(str(expr.name))

    _print_Dummy = _print_Symbol

    def _print_FamilyMatrix(self, expr) -> str:
        return f"{self.name(expr.name)}[{self._print(expr.index)}]"

    def _print_Identity(self, expr) -> str:
        return "1" if expr.rows == 1 and expr.cols == 1 else "I"

    def _print_ZeroMatrix(self, expr) -> str:
        return "0"

    def _print_Ones(self, expr) -> str:
        size = self._print(expr.args[0])
        return "1" + ("".join(_SUBSCRIPTS[ch] for ch in size) if all(ch in _SUBSCRIPTS for ch in size)
                      else f"_({size})")

    def _print_Diag(self, expr) -> str:
        return f"diag({self._print(expr.args[0])})"

    def _print_Tril(self, expr) -> str:
        """The causal mask (issues 41, 42): ``tril(A)``, the strictly lower part ``tril(A, -1)``."""
        return f"tril({self._print(expr.args[0])}{'' if expr.args[1] == 0 else ', -1'})"

    def _print_Kron(self, expr) -> str:
        """The Kronecker product (issue 41): ``A ⊗ B``; a factor that is a product, a sum or a Kronecker product in
        parentheses (``(AC) ⊗ B``, ``A ⊗ (B ⊗ C)``), a transpose, inverse or power as it is (``Aᵀ ⊗ B⁻¹``)."""
        out = []
        for factor in expr.args:
            if self.budget <= 0:
                out.append("…")
                break
            postfix = isinstance(factor, (Transpose, Inverse, MatPow))
            text = self._print(factor)
            out.append(text if self._atomic(factor) or postfix else f"({text})")
        return " ⊗ ".join(out)

    def _print_BlockMatrix(self, expr) -> str:
        rows = []
        for row in blocks_of(expr):
            if self.budget <= 0:
                rows.append("…")
                break
            rows.append(", ".join(self._print(block) for block in row))
        return "[" + "; ".join(rows) + "]"

    def _print_Trace(self, expr) -> str:
        """A 1×1 matrix read as a scalar: that matrix (in parentheses as a factor or a base: ``(uᵀv)⁻¹``)."""
        return self._print(expr.arg)

    def _print_Integer(self, expr) -> str:
        return str(expr.p)

    def _print_Rational(self, expr) -> str:
        return f"{expr.p}/{expr.q}"

    # structure ----------------------------------------------------------------------------
    @staticmethod
    def _atomic(expr) -> bool:
        """Printed without parentheses as the base of ᵀ, ⁻¹ or a power."""
        if isinstance(expr, (MatrixSymbol, FamilyMatrix, Identity, ZeroMatrix, Ones, Diag, Tril, BlockMatrix, Symbol)):
            return True
        if isinstance(expr, Integer) or (isinstance(expr, Rational) and expr.q == 1):
            return expr >= 0
        return isinstance(expr, Trace) and not isinstance(expr.arg, (MatMul, MatAdd, Kron))

    def _base(self, expr) -> str:
        """The base of a postfix or of √: atomic, or parenthesised (a transpose of a transpose too: (Aᵀ)ᵀ)."""
        return self._print(expr) if self._atomic(expr) else f"({self._print(expr)})"

    def _power(self, base, exponent) -> str:
        if isinstance(exponent, Integer):
            return self._base(base) + ("" if exponent == 1 else str(exponent.p).translate(_SUPERSCRIPT))
        text = self._print(exponent)
        return f"{self._base(base)}^{text if isinstance(exponent, Symbol) else f'({text})'}"

    def _print_Transpose(self, expr) -> str:
        return self._base(expr.arg) + "ᵀ"

    def _print_Inverse(self, expr) -> str:
        return self._base(expr.arg) + "⁻¹"

    def _print_MatPow(self, expr) -> str:
        return self._power(expr.base, expr.exp)

    def _print_Pow(self, expr) -> str:
        if expr.exp == Rational(1, 2):
            return "√" + self._base(expr.base)
        return self._power(expr.base, expr.exp)

    # products -----------------------------------------------------------------------------
    def _left_free(self, expr) -> bool:
        """May stand right after another factor without ``·`` (it begins with a one-letter name or a bracket)."""
        for _ in range(MAX_DEPTH):
            if isinstance(expr, (Transpose, Inverse)):
                expr = expr.arg
            elif isinstance(expr, (MatPow, Pow)):
                expr = expr.base
            else:
                break
            if not self._atomic(expr):
                return True  # (…)ᵀ
        if isinstance(expr, (MatrixSymbol, FamilyMatrix, Symbol)):
            return _one_letter(self.name(str(expr.name)))
        return isinstance(expr, (Identity, BlockMatrix, MatMul, MatAdd, Kron, Add, Mul, Trace))

    def _right_free(self, expr) -> bool:
        """May have another factor right after it without ``·`` (it ends with a one-letter name, a superscript or a
        bracket)."""
        if isinstance(expr, (MatrixSymbol, Symbol)):
            return _one_letter(self.name(str(expr.name)))
        return True  # a number: 2X (a digit next to a digit gets · all the same)

    def _product(self, factors: list) -> str:
        out, previous = "", None
        for factor in factors:
            if self.budget <= 0:
                return out + "·…"
            postfix = isinstance(factor, (Transpose, Inverse, MatPow, Pow))
            text = self._print(factor) if self._atomic(factor) or postfix else f"({self._print(factor)})"
            if previous is not None:
                joined = (self._right_free(previous) and self._left_free(factor)
                          and not (out[-1:].isdigit() and text[:1].isdigit()))
                out += "" if joined else "·"
            out += text
            previous = factor
        return out

    def _print_MatMul(self, expr) -> str:
        args = list(expr.args)
        scalars = [a for a in args if not isinstance(a, MatrixExpr)]
        matrices = [a for a in args if isinstance(a, MatrixExpr)]
        sign, factors = self._signed(scalars)
        if matrices:
            factors = [*factors, *matrices]
        return sign + (self._product(factors) if factors else "1")

    def _print_Mul(self, expr) -> str:
        sign, factors = self._signed(list(expr.args))
        return sign + (self._product(factors) if factors else "1")

    @staticmethod
    def _signed(scalars: list) -> tuple[str, list]:
        """("-" or "", the factors without a leading -1 or the sign of a leading number)."""
        if scalars and isinstance(scalars[0], Rational) and scalars[0] < 0:
            first = -scalars[0]
            return "-", ([] if first == 1 else [first]) + scalars[1:]
        if scalars and scalars[0] == 1:
            return "", scalars[1:]
        return "", scalars

    # sums ---------------------------------------------------------------------------------
    def _print_MatAdd(self, expr) -> str:
        terms = list(expr.args)
        if isinstance(expr, Add):  # a number last, as written by hand: u + 1, not 1 + u
            terms = [t for t in terms if not t.is_Number] + [t for t in terms if t.is_Number]
        out = ""
        for index, term in enumerate(terms):
            if self.budget <= 0:
                return out + " + …"
            text = self._print(term)
            if isinstance(term, (MatAdd, Add)):
                text = f"({text})"
            if index == 0:
                out = text
            elif text.startswith("-"):
                out += " - " + text[1:]
            else:
                out += " + " + text
        return out

    _print_Add = _print_MatAdd


def plain(term: Basic, limit: int = 240, names: dict[str, str] | None = None, raw: bool = False) -> str:
    """``term`` in the notation of this module, at most ``limit`` characters (cut short: ``…``), printed in time
    linear in them; ``names``: the display of each symbol's name (:func:`display_names`), any other name as
    :func:`display_name` writes it, or as it is (``raw``)."""
    text = PlainPrinter(limit + 1, names, raw).doprint(term)
    return text if len(text) <= limit else text[: limit - 1] + "…"
