"""The symbols of checked theorems, their LaTeX macros, and the ``--symbols`` file that renames them.

Every matrix symbol and every dimension of the theorems a document holds gets one macro, ``\\ols`` and the
symbol's name without underscores (``X_q`` -> ``\\olsXq``, ``Lambda`` -> ``\\olsLambda``, ``n`` ->
``\\olsn``); the fragments print the macros, and the package (:mod:`.package`) defines them.

A symbols file maps the package's symbols to a paper's own notation, one ``NAME = LATEX`` per line
(``#`` starts a comment line).  It is parsed as text, never evaluated: :func:`read_symbols` checks each
line (a known name, balanced braces, no ``#`` or ``%``, one line, at most 200 characters) and raises
:class:`SymbolsError` naming the file, the line and the problem.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from sympy import Basic, Symbol
from sympy.matrices.expressions import MatrixSymbol

from ..kernel import Theorem

__all__ = ["MACRO_PREFIX", "SymbolsError", "macro_table", "parse_symbols", "read_symbols", "theorem_dimensions",
           "theorem_symbols"]

MACRO_PREFIX = "ols"
MAX_SYMBOLS_BYTES = 64 * 1024
MAX_VALUE = 200
_DIGITS = ("Zero", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")


def _statement_terms(theorem: Theorem) -> list[Basic]:
    proof = theorem.proof
    terms = [proof.claim.lhs, proof.claim.rhs] + [t for h in proof.hypotheses for t in (h.lhs, h.rhs)]
    terms += [t for d in proof.definitions for t in (d.symbol, d.rhs)]
    terms += [t for c in proof.lemmas for t in (c.lhs, c.rhs)]
    return terms


def theorem_symbols(theorem: Theorem, bound_too: bool = False) -> dict[str, MatrixSymbol]:
    """The matrix symbols of a theorem's statement and lemmas by name, in order of appearance.

    ``bound_too`` adds the symbols that hypotheses bind (``for every A``) and those of lemma hypotheses.
    """
    proof = theorem.proof
    hyps = [*proof.hypotheses, *(h for c in proof.lemmas for h in c.hypotheses)]
    bound = set() if bound_too else {v for h in hyps for v in h.forall}
    terms = _statement_terms(theorem)
    if bound_too:
        terms += [t for h in hyps for t in (h.lhs, h.rhs)]
    seen: dict[str, MatrixSymbol] = {}
    for term in terms:
        for sym in sorted(term.atoms(MatrixSymbol), key=lambda s: str(s.name)):
            if sym not in bound:
                seen.setdefault(str(sym.name), sym)
    return seen


def theorem_dimensions(theorem: Theorem) -> dict[str, Symbol]:
    """The dimension symbols (``n``, ``p``) of a theorem's matrices, by name, sorted."""
    dims: dict[str, Symbol] = {}
    for sym in theorem_symbols(theorem, bound_too=True).values():
        for d in (*sym.rows.free_symbols, *sym.cols.free_symbols):
            dims.setdefault(str(d.name), d)
    for chain in (*theorem.proof.lemmas, theorem.proof.claim):  # sizes of I and 0 in the steps
        for step in chain.steps:
            for d in step.expr.free_symbols:
                if isinstance(d, Symbol):
                    dims.setdefault(str(d.name), d)
    return dict(sorted(dims.items()))


def _base(name: str) -> str:
    out = []
    for ch in name:
        if ch.isascii() and ch.isalpha():
            out.append(ch)
        elif ch.isdigit() and ch.isascii():
            out.append(_DIGITS[int(ch)])
    return "".join(out) or "Symbol"


def macro_table(theorems: Iterable[Theorem]) -> dict[str, str]:
    """Symbol name -> its macro (``\\olsXq``) for every matrix symbol and dimension of ``theorems``, by name.

    Names that differ only in underscores or other characters (``X_q``, ``Xq``) get distinct macros:
    the first in sorted order keeps the plain one, the others a suffix ``Alt``, ``AltAlt``, ...
    """
    names: set[str] = set()
    for theorem in theorems:
        names.update(theorem_symbols(theorem, bound_too=True))
        names.update(theorem_dimensions(theorem))
    table: dict[str, str] = {}
    used: set[str] = set()
    for name in sorted(names):
        macro = MACRO_PREFIX + _base(name)
        while macro in used:
            macro += "Alt"
        used.add(macro)
        table[name] = "\\" + macro
    return table


class SymbolsError(ValueError):
    """A symbols file that cannot be used; the message names the file, the line and the problem."""


def _check_value(value: str) -> str | None:
    """Why ``value`` cannot be a symbol's LaTeX, or None."""
    if not value:
        return "no LaTeX after '='"
    if len(value) > MAX_VALUE:
        return f"the LaTeX is longer than {MAX_VALUE} characters"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        return "a control character in the LaTeX"
    depth, index = 0, 0
    while index < len(value):
        ch = value[index]
        if ch == "\\":
            index += 2  # an escaped character (\{, \}, \%) or the start of a control word
            continue
        if ch in "#%":
            return f"an unescaped {ch!r} in the LaTeX"
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth < 0:
                return "a '}' without its '{'"
        index += 1
    if value.endswith("\\") and not value.endswith("\\\\"):
        return "the LaTeX ends with a lone backslash"
    if depth:
        return "a '{' without its '}'"
    return None


def parse_symbols(text: str, known: Iterable[str], source: str = "<symbols>") -> dict[str, str]:
    """``NAME = LATEX`` lines -> {name: latex}; every name must be in ``known``."""
    known = set(known)
    out: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{source}:{number}"
        name, sep, value = line.partition("=")
        name, value = name.strip(), value.strip()
        if not sep:
            raise SymbolsError(f"{where}: expected NAME = LATEX, got {line[:60]!r}")
        if not _NAME.match(name):
            raise SymbolsError(f"{where}: {name[:60]!r} is not a symbol name (letters, digits, underscores)")
        if name not in known:
            listed = ", ".join(sorted(known)[:40])
            raise SymbolsError(f"{where}: unknown symbol {name!r} (the theorems' symbols: {listed})")
        if name in out:
            raise SymbolsError(f"{where}: {name!r} is mapped twice")
        problem = _check_value(value)
        if problem:
            raise SymbolsError(f"{where}: {problem}")
        out[name] = value
    return out


def read_symbols(path: str | Path, known: Iterable[str]) -> dict[str, str]:
    """Read and check a symbols file (see :func:`parse_symbols`); SymbolsError says why it cannot be used."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_SYMBOLS_BYTES + 1)
    except OSError as exc:
        raise SymbolsError(f"{path}: cannot read the symbols file: {exc.strerror or exc}") from None
    if len(data) > MAX_SYMBOLS_BYTES:
        raise SymbolsError(f"{path}: the symbols file is larger than {MAX_SYMBOLS_BYTES // 1024} KiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SymbolsError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    return parse_symbols(text, known, str(path))

