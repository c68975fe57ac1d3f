"""Judgments: when a term is defined (shapes conform, inverses and roots are justified).

Part of the trusted core.  Each judgment is sound and deliberately incomplete: it says yes only
when the hypotheses (or the shape of the term) show the property; any bound on the search is sound.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from sympy import Basic, Rational, Symbol
from sympy.matrices.expressions import (
    BlockMatrix,
    Identity,
    Inverse,
    MatAdd,
    MatMul,
    MatPow,
    MatrixSymbol,
    Transpose,
    ZeroMatrix,
)

from .proof import PREDICATES
from .terms import (
    MATRIX_NODES,
    TermError,
    blocks_of,
    canon,
    canonical,
    children,
    dims_equal,
    factors_of,
    require_exact_types,
    shape,
)

__all__ = ["Context", "OutOfTime", "check_defined", "defined_canon", "invertible", "positive_definite", "symmetric"]

_SEARCH_DEPTH = 4  # how far judgments follow hypothesis equations (any bound is sound)


class OutOfTime(TermError):
    """The check ran past its time budget."""


@dataclass
class Context:
    """What a chain may use: equations (hypotheses, definitions), predicate facts and citable rules.

    ``memo`` caches judgments per (judgment, term, depth) for the current equations and predicates (lists
    only grow, so their lengths identify the state); ``deadline`` (a ``time.monotonic()`` value) bounds
    the whole check.
    """

    equations: list[tuple[Basic, Basic]] = field(default_factory=list)  # hypotheses and definitions
    predicates: dict[str, list[Basic]] = field(default_factory=lambda: {k: [] for k in PREDICATES})
    rules: dict[str, tuple[Basic, Basic, tuple[Basic, ...]]] = field(default_factory=dict)
    citations: dict = field(default_factory=dict)  # theorem id -> checked Theorem a step may cite as thm:ID
    deadline: float | None = None
    memo: dict = field(default_factory=dict)

    def has(self, predicate: str, term: Basic) -> bool:
        return any(term == t for t in self.predicates[predicate])

    def equal_terms(self, term: Basic) -> Iterator[Basic]:
        """Terms an equation equates to ``term``, each once."""
        seen = {term}
        for lhs, rhs in self.equations:
            other = rhs if lhs == term else lhs if rhs == term else None
            if other is not None and other not in seen:
                seen.add(other)
                yield other

    def tick(self) -> None:
        """Raise :class:`OutOfTime` once the deadline has passed."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise OutOfTime("the check ran past its time budget")

    def remembered(self, name: str, term: Basic, depth: int, judge) -> bool:
        """``judge()``, memoised; ``term`` is in normal form (the judgments canonicalise what they are asked)."""
        self.tick()
        key = (name, term, depth, len(self.equations), sum(len(v) for v in self.predicates.values()))
        if key not in self.memo:
            self.memo[key] = False  # while in progress (a cycle through equations): not shown, which is sound
            self.memo[key] = judge()
        return self.memo[key]


def _square(term) -> bool:
    rows, cols = shape(term)
    return dims_equal(rows, cols)


def _is_integer(q: Rational) -> bool:
    return q.q == 1


def positive_definite(term, ctx: Context, depth: int = 0) -> bool:
    """Symmetric positive definite, shown from the hypotheses (sound, not complete)."""
    term = canonical(term)  # hypotheses are looked up by normal form, whatever order a sum was written in
    return ctx.remembered("positive_definite", term, depth, lambda: _positive_definite(term, ctx, depth))


def _positive_definite(term, ctx: Context, depth: int) -> bool:
    if depth > _SEARCH_DEPTH or not _square(term):
        return False
    if isinstance(term, Identity) or ctx.has("positive_definite", term):
        return True
    if isinstance(term, (Inverse, MatPow)):
        return positive_definite(term.args[0], ctx, depth + 1)
    if isinstance(term, MatMul):
        coeff, mats = factors_of(term)
        if coeff > 0 and len(mats) == 2 and mats[0] == Transpose(mats[1]):
            return _square(mats[1]) and invertible(mats[1], ctx, depth + 1)  # Bᵀ B, B invertible
    return any(positive_definite(t, ctx, depth + 1) for t in ctx.equal_terms(term))


def invertible(term, ctx: Context, depth: int = 0) -> bool:
    """Square and invertible, shown from the hypotheses (sound, not complete)."""
    term = canonical(term)  # hypotheses are looked up by normal form, whatever order a sum was written in
    return ctx.remembered("invertible", term, depth, lambda: _invertible(term, ctx, depth))


def _invertible(term, ctx: Context, depth: int) -> bool:
    if depth > _SEARCH_DEPTH or not _square(term):
        return False
    if isinstance(term, Identity) or ctx.has("invertible", term):
        return True
    if positive_definite(term, ctx, depth + 1):
        return True
    if isinstance(term, (Transpose, Inverse, MatPow)):
        return invertible(term.args[0], ctx, depth + 1)
    if isinstance(term, MatMul):
        coeff, mats = factors_of(term)
        if coeff != 0 and all(_square(m) and invertible(m, ctx, depth + 1) for m in mats):
            return True
    for lhs, rhs in ctx.equations:  # a square matrix with a one-sided inverse is invertible
        for product, unit in ((lhs, rhs), (rhs, lhs)):
            if isinstance(unit, Identity) and isinstance(product, MatMul):
                _, mats = factors_of(product)
                if term in (mats[0], mats[-1]):
                    return True
    return any(invertible(t, ctx, depth + 1) for t in ctx.equal_terms(term))


def symmetric(term, ctx: Context, depth: int = 0) -> bool:
    """Equal to its transpose, shown from the hypotheses (sound, not complete).

    Symmetry is not inferred from positive definiteness, so a proof that needs Λᵀ = Λ must
    assume it (Λ diagonal or symmetric): every hypothesis a library proof states is needed.
    """
    term = canonical(term)  # hypotheses are looked up by normal form, whatever order a sum was written in
    return ctx.remembered("symmetric", term, depth, lambda: _symmetric(term, ctx, depth))


def _symmetric(term, ctx: Context, depth: int) -> bool:
    if depth > _SEARCH_DEPTH or not _square(term):
        return False
    if isinstance(term, (Identity, ZeroMatrix)) or ctx.has("symmetric", term) or ctx.has("diagonal", term):
        return True
    if isinstance(term, (Inverse, MatPow)):
        return symmetric(term.args[0], ctx, depth + 1)
    if isinstance(term, MatMul):
        _, mats = factors_of(term)
        if len(mats) == 2 and mats[0] == Transpose(mats[1]):
            return True
    return any(symmetric(t, ctx, depth + 1) for t in ctx.equal_terms(term))


def check_defined(term, ctx: Context) -> None:
    """Raise TermError unless ``term`` — as written, before any normal form — is well formed and defined.

    Checking the raw term matters: the normal form drops factors (0·A = 0, A¹ = A), which must not
    hide an undefined or ill-shaped sub-term.  Every node must have exactly a kernel type.
    """
    require_exact_types(term)
    _check_defined(term, ctx)


def _check_defined(term, ctx: Context) -> None:
    ctx.tick()
    if not isinstance(term, MATRIX_NODES):
        raise TermError(f"{type(term).__name__} is not a matrix term the kernel knows")
    if isinstance(term, MatMul):
        kids = [a for a in term.args if not isinstance(a, Rational)]
        if not kids or any(not isinstance(a, MATRIX_NODES) for a in kids):
            raise TermError("a product may hold rational coefficients and matrices only")
    else:
        kids = children(term)
    for child in kids:
        _check_defined(child, ctx)
    if isinstance(term, (MatrixSymbol, Identity, ZeroMatrix)):
        for dim in term.shape:
            if dim.is_integer is not True or dim.is_nonnegative is not True or not all(
                isinstance(s, Symbol) and s.is_integer and s.is_positive for s in dim.free_symbols
            ):
                raise TermError(f"dimension {dim} must be a non-negative integer built from positive-integer symbols")
    elif isinstance(term, Inverse):
        if not invertible(term.args[0], ctx):
            raise TermError(f"cannot show that {term.args[0]} is invertible")
    elif isinstance(term, MatPow):
        q = term.args[1]
        if not isinstance(q, Rational):
            raise TermError(f"bad exponent {q}")
        if not _square(term.args[0]):
            raise TermError(f"power of a non-square matrix {term.args[0]}")
        if not _is_integer(q) and not positive_definite(term.args[0], ctx):
            raise TermError(f"cannot show that {term.args[0]} is positive definite, needed for power {q}")
        if q < 0 and not invertible(term.args[0], ctx):
            raise TermError(f"cannot show that {term.args[0]} is invertible, needed for power {q}")
    elif isinstance(term, MatMul):
        for left, right in zip(kids[:-1], kids[1:], strict=True):
            if not dims_equal(shape(left)[1], shape(right)[0]):
                raise TermError(f"shapes do not conform in the product {left} * {right}")
    elif isinstance(term, MatAdd):
        first = shape(term.args[0])
        for other in term.args[1:]:
            if not (dims_equal(first[0], shape(other)[0]) and dims_equal(first[1], shape(other)[1])):
                raise TermError(f"shapes differ in the sum {term}")
    elif isinstance(term, BlockMatrix):
        grid = blocks_of(term)
        for row in grid:
            for b in row[1:]:
                if not dims_equal(shape(b)[0], shape(row[0])[0]):
                    raise TermError("blocks in one block row must have the same number of rows")
        for j in range(len(grid[0])):
            for row in grid[1:]:
                if not dims_equal(shape(row[j])[1], shape(grid[0][j])[1]):
                    raise TermError("blocks in one block column must have the same number of columns")


def defined_canon(term, ctx: Context):
    """Check ``term`` as written, then return its normal form (checked too)."""
    check_defined(term, ctx)
    out = canon(term)
    check_defined(out, ctx)
    return out

