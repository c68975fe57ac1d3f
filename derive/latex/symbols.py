"""The symbols of checked theorems, their LaTeX macros, and the ``--symbols`` file that renames them.

Every matrix symbol, dimension, index, scalar and family of the theorems a document holds gets one macro,
``\\ols`` and the symbol's name without underscores (``X_q`` -> ``\\olsXq``, ``Lambda`` -> ``\\olsLambda``,
``n`` -> ``\\olsn``, ``lambda`` -> ``\\olslambda``); the fragments print the macros, and the package
(:mod:`.package`) defines them.  A family's macro is its letter: the member ``x[t + 1]`` prints as
``\\olsx_{\\olst+1}`` (a family ``X_q`` as ``\\olsXq_{q,\\olst}``, its macro being ``X``).

A symbols file maps the package's symbols to a paper's own notation, one ``NAME = LATEX`` per line
(``#`` starts a comment line).  It is parsed as text, never evaluated: :func:`read_symbols` checks each
line (a known name, balanced braces, no ``#`` or ``%``, one line, at most 200 characters) and raises
:class:`SymbolsError` naming the file, the line and the problem.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from pathlib import Path

from sympy import Basic, Symbol
from sympy.matrices.expressions import MatrixSymbol

from ..kernel import Family, Theorem
from ..kernel.scalars import scalar_kind
from ..kernel.terms import FamilyMatrix, index_kind

__all__ = ["MACRO_PREFIX", "SymbolsError", "family_macros", "family_member", "macro_table", "parse_symbols",
           "read_symbols", "theorem_dimensions", "theorem_families", "theorem_scalars", "theorem_symbols"]

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
    terms += [t for f in proof.families if f.is_defined for t in (f.base, f.step)]
    return terms


def _every_term(theorem: Theorem) -> list[Basic]:
    """The statement's terms and every step's expression (what the proof prints)."""
    proof = theorem.proof
    terms = _statement_terms(theorem) + [t for c in proof.lemmas for h in c.hypotheses for t in (h.lhs, h.rhs)]
    return terms + [step.expr for chain in (*proof.lemmas, proof.claim) for step in chain.steps]


def family_member(family: Family) -> FamilyMatrix:
    """The member of a family at its bound index (``x_s``): how the notation table shows the family."""
    return FamilyMatrix(family.name, family.index, family.rows, family.cols)


def theorem_families(theorem: Theorem) -> dict[str, Family]:
    """The families a theorem declares, by name, in the order of the declaration."""
    return {f.name: f for f in theorem.proof.families}


_MEMO: dict[tuple, dict] = {}  # (function, theorem digest, argument) -> result: checked theorems never change


def _memoised(function):
    """``function(theorem, *args)`` computed once per theorem content (its digest); a fresh dict each call."""
    @functools.wraps(function)
    def wrapper(theorem: Theorem, *args, **kwargs):
        key = (function.__name__, getattr(theorem, "digest", None), args, tuple(sorted(kwargs.items())))
        if key[1] is None:
            return function(theorem, *args, **kwargs)
        if key not in _MEMO:
            _MEMO[key] = function(theorem, *args, **kwargs)
        return dict(_MEMO[key])

    return wrapper


@_memoised
def theorem_scalars(theorem: Theorem) -> dict[str, Symbol]:
    """The scalar symbols (``derive.scalar``) of a theorem's statement and proof, by name, sorted."""
    found: dict[str, Symbol] = {}
    for term in _every_term(theorem):
        for sym in term.free_symbols:
            if isinstance(sym, Symbol) and scalar_kind(sym) is not None:
                found.setdefault(str(sym.name), sym)
    return dict(sorted(found.items()))


@_memoised
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


@_memoised
def theorem_dimensions(theorem: Theorem) -> dict[str, Symbol]:
    """The dimension and index symbols (``n``, ``p``, ``t``) of a theorem's matrices and families, by name, sorted."""
    dims: dict[str, Symbol] = {}
    for sym in theorem_symbols(theorem, bound_too=True).values():
        for d in (*sym.rows.free_symbols, *sym.cols.free_symbols):
            dims.setdefault(str(d.name), d)
    proof = theorem.proof
    found = set()  # sizes of I and 0 in the steps, indices of family members, induction variables
    for term in [step.expr for chain in (*proof.lemmas, proof.claim) for step in chain.steps]:
        found |= term.free_symbols
    for term in [proof.claim.lhs, proof.claim.rhs, *(t for c in proof.lemmas for t in (c.lhs, c.rhs))]:
        found |= term.free_symbols
    found |= {lemma.variable for lemma in proof.lemmas if hasattr(lemma, "variable")}
    for family in proof.families:  # the index a declaration binds is not one of the theorem's symbols
        parts = (family.rows, family.cols, *((family.base, family.step) if family.is_defined else ()))
        found |= set().union(*(part.free_symbols for part in parts)) - {family.index}
    for d in found:
        if isinstance(d, Symbol) and index_kind(d) is not None:
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


def family_macros(theorems: Iterable[Theorem]) -> set[str]:
    """The names of the families of ``theorems`` that have a macro (their letter).

    A family named like another symbol of the same document (a family ``k`` of keys beside the dimension
    ``k``) has none, so each macro means one thing: it prints its plain letter.
    """
    theorems = list(theorems)
    others = set()
    for theorem in theorems:
        others |= set(theorem_symbols(theorem, bound_too=True)) | set(theorem_dimensions(theorem))
        others |= set(theorem_scalars(theorem))
    return {name for t in theorems for name in theorem_families(t) if name not in others}


def macro_table(theorems: Iterable[Theorem]) -> dict[str, str]:
    """Symbol name -> its macro (``\\olsXq``) for every matrix symbol, dimension, index, scalar and family of
    ``theorems``, by name.

    Names that differ only in underscores or other characters (``X_q``, ``Xq``) get distinct macros:
    the first in sorted order keeps the plain one, the others a suffix ``Alt``, ``AltAlt``, ...
    """
    theorems = list(theorems)
    names: set[str] = set(family_macros(theorems))
    for theorem in theorems:
        names.update(theorem_symbols(theorem, bound_too=True))
        names.update(theorem_dimensions(theorem))
        names.update(theorem_scalars(theorem))
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

