"""Judgments: when a term is defined (shapes conform, inverses and roots are justified).

Part of the trusted core.  Each judgment is sound and deliberately incomplete: it says yes only
when the hypotheses (or the shape of the term) show the property; any bound on the search is sound.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from sympy import Add, Basic, Mul, Pow, Rational, Symbol
from sympy.matrices.expressions import (
    BlockMatrix,
    Identity,
    Inverse,
    MatAdd,
    MatMul,
    MatPow,
    MatrixSymbol,
    Trace,
    Transpose,
    ZeroMatrix,
)

from .budget import GuardFired, WorkExceeded, charge, current
from .proof import PREDICATES
from .scalars import (
    CoefficientError,
    canon_coefficient,
    index_power,
    is_number,
    may_be_negative,
    scalar_kind,
    size_kind,
)
from .terms import (
    MATRIX_NODES,
    Diag,
    FamilyMatrix,
    Kron,
    Ones,
    TermError,
    Tril,
    add,
    blocks_of,
    canon,
    canonical,
    children,
    dims_equal,
    factors_of,
    index_kind,
    mul,
    power,
    rebuild,
    require_exact_types,
    require_index,
    require_shape_doubling,
    shape,
    shown,
)

__all__ = ["Context", "NotShown", "OutOfTime", "check_defined", "defined_canon", "diagonal", "invertible",
           "nonnegative", "nonzero", "positive", "positive_definite", "positive_power_base", "positive_semidefinite",
           "schur_blocks", "schur_complement", "sign", "symmetric"]

_SEARCH_DEPTH = 4  # how many equations a judgment follows (sub-terms are free; any bound is sound)


class OutOfTime(TermError):
    """A search ran past its work budget (``Context.deadline``, in units of work)."""


class NotShown(TermError):
    """Definedness needs a judgment that was not shown (``judgment``: "invertible" or "nonzero", of ``subject``, a
    matrix term or a scalar).  ``derive.kernel.hints.explained`` adds which hypothesis would make it follow (issue
    41); the message itself is cheap, so a search that meets many undefined candidates pays nothing for the hint."""

    def __init__(self, message: str, judgment: str, subject):
        super().__init__(message)
        self.judgment, self.subject = judgment, subject


class FamilyFacts(dict):
    """Recurrence name -> the predicates every defined member has (by induction on the index), found when a
    judgment first asks, by ``prove`` (set by ``checking.theorem_context``: judged in the theorem's own context,
    never under a chain's local hypotheses) and shared by every chain of the theorem."""

    prove = None

    def of(self, name: str) -> frozenset:
        if name not in self:
            self[name] = frozenset()  # while in progress: nothing (sound)
            if self.prove is not None:
                self[name] = self.prove(name)
        return self[name]


@dataclass
class Context:
    """What a chain may use: equations (hypotheses, definitions), predicate facts and citable rules.

    ``memo`` caches judgments per (judgment, term, depth) for the current equations and predicates (lists
    only grow, so their lengths identify the state); ``deadline`` bounds a proof *search* (``.auto``) in units
    of work, never seconds: past that count of this thread's meter (``budget.current().used``) the judgments
    raise :class:`OutOfTime`, at the same point on any machine.  ``check`` leaves it None (its own budget is
    the meter's limit).
    """

    equations: list[tuple[Basic, Basic]] = field(default_factory=list)  # hypotheses and definitions
    predicates: dict[str, list[Basic]] = field(default_factory=lambda: {k: [] for k in PREDICATES})
    rules: dict[str, tuple[Basic, Basic, tuple[Basic, ...]]] = field(default_factory=dict)
    citations: dict = field(default_factory=dict)  # theorem id -> checked Theorem a step may cite as thm:ID
    deadline: int | None = None  # a count of work units (budget.current().used), not a time
    memo: dict = field(default_factory=dict)
    families: dict = field(default_factory=dict)  # family name -> its declaration (derive.kernel.Family)
    total_families: set = field(default_factory=set)  # recurrences whose every member is defined
    scalar_equations: dict = field(default_factory=dict)  # hyp:NAME -> (scalar symbol λ, coefficient r): λ = r
    family_facts: FamilyFacts = field(default_factory=lambda: FamilyFacts())  # shared by a theorem's chains
    #: scalar facts (issue 41): a key of a coefficient (:func:`_fact_keys`) -> the signs a ``Q.nonzero(c)`` hypothesis
    #: leaves it (NONZERO)
    scalar_facts: dict = field(default_factory=dict)

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
        """Charge one unit of work (:mod:`.budget`); raise :class:`OutOfTime` once the meter passes ``deadline``."""
        charge()
        if self.deadline is not None and current().used > self.deadline:
            raise OutOfTime("the search ran past its work budget")

    def remembered(self, name: str, term: Basic, depth: int, judge) -> bool:
        """``judge()``, memoised; ``term`` is in normal form (the judgments canonicalise what they are asked)."""
        self.tick()
        key = (name, term, depth, len(self.equations), sum(len(v) for v in self.predicates.values()),
               len(self.scalar_facts))
        if key not in self.memo:
            self.memo[key] = False  # while in progress (a cycle through equations): not shown, which is sound
            self.memo[key] = judge()
        return self.memo[key]


def _square(term) -> bool:
    rows, cols = shape(term)
    return dims_equal(rows, cols)


def _is_integer(q: Rational) -> bool:
    return q.q == 1


# --- signs of scalar coefficients ---------------------------------------------------------------
# A sign is the set of signs (-1, 0, +1) a scalar may take; the smaller the set, the more is known.

POSITIVE, NEGATIVE, ZERO = frozenset({1}), frozenset({-1}), frozenset({0})
NONNEGATIVE, NONZERO, UNKNOWN = frozenset({0, 1}), frozenset({-1, 1}), frozenset({-1, 0, 1})


def sign(c: Basic, ctx: Context, depth: int = 0) -> frozenset:
    """The signs the scalar ``c`` can take where the context's hypotheses hold (sound, not complete).

    Rational numbers by value; a scalar symbol is positive by declaration, else of unknown sign; a 1×1
    matrix read as a scalar, tr(m), is positive, non-negative or non-zero when m is positive definite,
    positive semidefinite or invertible; sums, products and integer powers by the rules of signs; narrowed by a
    scalar fact ``Q.nonzero(c)`` about c itself (issue 41: :func:`_scalar_fact`).
    """
    ctx.tick()
    out = _signs(c, ctx, depth)
    if ctx.scalar_facts and len(out) > 1:
        fact = _scalar_fact(c, ctx)
        if fact is not None:
            out = (out & fact) or out  # empty: the hypotheses contradict each other; what is known is kept
    return out


# --- scalar facts (issue 41): Q.nonzero(c) for a coefficient c -------------------------------------------------


def _fact_keys(c: Basic, canon_matrix) -> tuple:
    """The keys a scalar fact about ``c`` is filed under, and looked up by: c's normal form without its rational
    factor (2σ² − 2 and σ² − 1, 2σ and σ are one key), and the key of −c (1 − σ² and σ² − 1).  A number has
    none (a fact about a number says nothing).  ``canon_matrix`` brings the matrices inside traces to normal form."""
    if is_number(c):
        return ()
    try:
        value = canon_coefficient(c, canon_matrix)
    except (CoefficientError, TermError, ValueError, TypeError, ArithmeticError):
        return ()
    if is_number(value):
        return ()
    out = []
    for signed in (value, -value):
        if type(signed) is Add:
            signed = signed.as_content_primitive()[1]
        elif type(signed) is Mul:
            signed = signed.as_coeff_Mul()[1]
        if signed not in out:
            out.append(signed)
    return tuple(out)


def _scalar_fact(c: Basic, ctx: Context) -> frozenset | None:
    """The signs a scalar fact gives ``c`` itself: Q.nonzero(c′) with c′ a non-zero rational multiple of c (c's
    normal form up to a rational factor).  Never a fact about a part of c, nor about a scalar c merely contains:
    σ ≠ 0 says nothing about σ − 1 (the ``scalar_fact`` slip of ``derive.fuzz.unsound`` reads it so)."""
    keys = _fact_keys(c, canonical)
    return ctx.scalar_facts.get(keys[0]) if keys else None


def _signs(c: Basic, ctx: Context, depth: int) -> frozenset:
    """The signs of ``c`` by its form (:func:`sign` narrows them by the scalar facts)."""
    kind = type(c)
    if is_number(c):
        return POSITIVE if c > 0 else NEGATIVE if c < 0 else ZERO
    if kind is Symbol:
        return _symbol_sign(c, ctx, depth)
    if kind is Trace:
        m = c.args[0]
        if positive_definite(m, ctx, depth):
            return POSITIVE
        if positive_semidefinite(m, ctx, depth):
            return NONNEGATIVE
        return NONZERO if invertible(m, ctx, depth) else UNKNOWN
    if kind is Mul:
        out = POSITIVE
        for arg in c.args:
            part = sign(arg, ctx, depth)
            out = frozenset(a * b for a in out for b in part)
        return out
    if kind is Add:
        parts = [sign(arg, ctx, depth) for arg in c.args]
        for side in (1, -1):
            if all(part <= {0, side} for part in parts):
                return frozenset({side}) if any(part == {side} for part in parts) else frozenset({0, side})
        return UNKNOWN
    if kind is Pow and index_power(c) is not None:
        # γ^(Σ kt + c) for natural numbers t (issue 41): positive for γ > 0; for γ = 0, 0 or 1 (0⁰ = 1), or 0 when
        # c > 0, and never 0 where the exponent may be negative (the power is then defined only for γ ≠ 0); for
        # γ < 0 the sign of (−1)^c when every k is even, else either sign
        base, constant, terms = index_power(c)
        out: set = set()
        for a in sign(base, ctx, depth):
            if a > 0:
                out.add(1)
            elif a == 0:
                if not may_be_negative(constant, terms):
                    out |= {0} if constant > 0 else {0, 1}
            else:
                out |= {(-1) ** (constant % 2)} if all(k % 2 == 0 for _, k in terms) else {-1, 1}
        return frozenset(out) or UNKNOWN
    if kind is Pow:
        base, exponent = c.args
        if not is_number(exponent):
            return UNKNOWN
        part = sign(base, ctx, depth) - ({0} if exponent < 0 else set())
        return frozenset(a ** abs(int(exponent)) if a else 0 for a in part) or UNKNOWN
    return UNKNOWN


def _symbol_sign(c: Symbol, ctx: Context, depth: int) -> frozenset:
    """A scalar symbol: positive by declaration, else unknown; a dimension symbol (derive.dim) positive, an index
    symbol (derive.index) non-negative (it may be 0); narrowed by each scalar hypothesis λ = r, whose r has the
    sign λ has wherever the hypotheses hold (followed at most ``_SEARCH_DEPTH`` deep: λ = μ², μ > 0 gives λ > 0)."""
    out = POSITIVE if scalar_kind(c) == "positive" else \
        {"dimension": POSITIVE, "index": NONNEGATIVE}.get(size_kind(c), UNKNOWN)
    if depth < _SEARCH_DEPTH:
        for symbol, value in ctx.scalar_equations.values():
            if symbol == c and len(out) > 1:
                out = _narrowed_sign(out, value, ctx, depth)
    return out


def _narrowed_sign(declared: frozenset, value: Basic, ctx: Context, depth: int) -> frozenset:
    """The sign of λ narrowed by a hypothesis λ = r: λ takes r's signs, all of them (0 included when r may be 0).
    An empty intersection means the hypotheses contradict each other; then what is declared is kept."""
    return (declared & sign(value, ctx, depth + 1)) or declared


def positive(c: Basic, ctx: Context) -> bool:
    return sign(c, ctx) == POSITIVE


def nonnegative(c: Basic, ctx: Context) -> bool:
    return sign(c, ctx) <= NONNEGATIVE


def nonzero(c: Basic, ctx: Context) -> bool:
    return 0 not in sign(c, ctx)


# --- matrices ----------------------------------------------------------------------------------


def _transposes(a: Basic, b: Basic) -> bool:
    """``a`` is ``bᵀ`` or ``b`` is ``aᵀ`` (as written in normal form)."""
    return a == Transpose(b) or b == Transpose(a)


def _congruence(mats: list) -> Basic | None:
    """The middle factor M of a product F M Fᵀ (F a run of factors, Fᵀ its transpose read backwards)."""
    if len(mats) % 2 == 0:
        return None
    half = len(mats) // 2
    outer, middle, inner = mats[:half], mats[half], mats[half + 1:]
    if all(_transposes(a, b) for a, b in zip(outer, reversed(inner), strict=True)):
        return middle
    return None


def _block_diagonal(term) -> list | None:
    """The diagonal blocks of a square block matrix whose off-diagonal blocks are zero (and conform), else None."""
    if not isinstance(term, BlockMatrix) or term.blockshape[0] != term.blockshape[1]:
        return None
    grid = blocks_of(term)
    for i, row in enumerate(grid):
        for j, block in enumerate(row):
            if i != j and not isinstance(block, ZeroMatrix):
                return None
    diagonal = [grid[i][i] for i in range(len(grid))]
    return diagonal if all(_square(b) for b in diagonal) else None


def positive_definite(term, ctx: Context, depth: int = 0) -> bool:
    """xᵀAx > 0 for every x ≠ 0, shown from the hypotheses (sound, not complete)."""
    term = canonical(term)  # hypotheses are looked up by normal form, whatever order a sum was written in
    return ctx.remembered("positive_definite", term, depth, lambda: _positive_definite(term, ctx, depth))


def _positive_definite(term, ctx: Context, depth: int) -> bool:
    if depth > _SEARCH_DEPTH or not _square(term):
        return False
    if isinstance(term, Identity) or ctx.has("positive_definite", term):
        return True
    if isinstance(term, (Inverse, Transpose)):  # x = Ay: xᵀA⁻¹x = yᵀAᵀy = yᵀAy; xᵀAᵀx = xᵀAx
        return positive_definite(term.args[0], ctx, depth)
    if isinstance(term, MatPow):
        base, q = term.args
        if not positive_definite(base, ctx, depth):
            return False
        if _is_integer(q):  # A^k, |k| ≥ 2: only for A symmetric (a rotation by 60° is PD, its cube is -I)
            return symmetric(base, ctx, depth)
        return diagonal(base, ctx, depth)  # A^q is defined (entrywise) for a diagonal PD A only
    if isinstance(term, MatMul):
        coeff, mats = factors_of(term)
        if positive(coeff, ctx):
            if len(mats) == 1:
                return positive_definite(mats[0], ctx, depth)  # c·M, c > 0
            if len(mats) == 2 and mats[0] == Transpose(mats[1]):
                return _square(mats[1]) and invertible(mats[1], ctx, depth)  # Bᵀ B, B invertible
            middle = _congruence(mats)
            if middle is not None and all(_square(m) and invertible(m, ctx, depth) for m in mats):
                return positive_definite(middle, ctx, depth)  # F M Fᵀ, F square invertible
    if isinstance(term, MatAdd):  # positive semidefinite terms, one of them positive definite
        if all(positive_semidefinite(a, ctx, depth) for a in term.args):
            return any(positive_definite(a, ctx, depth) for a in term.args)
    blocks = _block_diagonal(term)
    if blocks is not None:
        return all(positive_definite(b, ctx, depth) for b in blocks)
    if any(positive_definite(t, ctx, depth + 1) for t in ctx.equal_terms(term)):
        return True
    if _family_fact("positive_definite", term, ctx):
        return True
    return _by_unfolding(("positive_definite",), term, ctx, depth, positive_definite)


def positive_semidefinite(term, ctx: Context, depth: int = 0) -> bool:
    """xᵀAx ≥ 0 for every x, shown from the hypotheses (sound, not complete)."""
    term = canonical(term)
    return ctx.remembered("positive_semidefinite", term, depth,
                          lambda: _positive_semidefinite(term, ctx, depth))


def _positive_semidefinite(term, ctx: Context, depth: int) -> bool:
    if depth > _SEARCH_DEPTH or not _square(term):
        return False
    if isinstance(term, ZeroMatrix) or positive_definite(term, ctx, depth):
        return True
    if isinstance(term, Transpose):
        return positive_semidefinite(term.args[0], ctx, depth)
    if isinstance(term, MatMul):
        coeff, mats = factors_of(term)
        if len(mats) > 2:
            verdict = _semidefinite_congruence(coeff, mats, ctx, depth)
            if verdict is not None:
                return verdict
        elif nonnegative(coeff, ctx):
            if len(mats) == 1:
                return positive_semidefinite(mats[0], ctx, depth)  # c·M, c ≥ 0
            if len(mats) == 2 and _transposes(mats[0], mats[1]):
                return True  # Bᵀ B or B Bᵀ
    if isinstance(term, MatAdd):
        return all(positive_semidefinite(a, ctx, depth) for a in term.args)
    diagonal = _block_diagonal(term)
    if diagonal is not None:
        return all(positive_semidefinite(b, ctx, depth) for b in diagonal)
    if any(positive_semidefinite(t, ctx, depth + 1) for t in ctx.equal_terms(term)):
        return True
    return _congruent_to_semidefinite(term, ctx, depth)


def _semidefinite_congruence(coeff, mats: list, ctx: Context, depth: int) -> bool | None:
    """c·F M Fᵀ (F any run of factors) is positive semidefinite when c ≥ 0 and M is: xᵀ(cFMFᵀ)x = c·yᵀMy with
    y = Fᵀx.  None when the product is not such a congruence with c ≥ 0 (the caller then tries other ways)."""
    if not nonnegative(coeff, ctx):
        return None
    middle = _congruence(mats)
    if middle is None:
        return None
    return positive_semidefinite(middle, ctx, depth)  # F M Fᵀ, any F


def _congruent_to_semidefinite(term, ctx: Context, depth: int) -> bool:
    """M with an equation N = F M Fᵀ, F a run of square invertible factors and N positive semidefinite:
    M = F⁻¹ N F⁻ᵀ is positive semidefinite (Λ from XᵀX = VΛVᵀ with V orthogonal)."""
    for lhs, rhs in ctx.equations:
        for product, other in ((lhs, rhs), (rhs, lhs)):
            if not isinstance(product, MatMul) or factors_of(product)[0] != 1:
                continue
            mats = factors_of(product)[1]
            if len(mats) > 1 and _congruence(mats) == term:
                outer = mats[: len(mats) // 2] + mats[len(mats) // 2 + 1 :]  # every factor but the middle one
                if all(_square(m) and invertible(m, ctx, depth + 1) for m in outer) and \
                        positive_semidefinite(other, ctx, depth + 1):
                    return True
    return False


def invertible(term, ctx: Context, depth: int = 0) -> bool:
    """Square and invertible, shown from the hypotheses (sound, not complete)."""
    term = canonical(term)
    return ctx.remembered("invertible", term, depth, lambda: _invertible(term, ctx, depth))


def _invertible(term, ctx: Context, depth: int) -> bool:
    if depth > _SEARCH_DEPTH or not _square(term):
        return False
    if isinstance(term, Identity) or ctx.has("invertible", term):
        return True
    if positive_definite(term, ctx, depth):
        return True
    if isinstance(term, (Transpose, Inverse, MatPow)):
        return invertible(term.args[0], ctx, depth)
    if isinstance(term, MatMul):
        coeff, mats = factors_of(term)
        if nonzero(coeff, ctx) and all(_square(m) and invertible(m, ctx, depth) for m in mats):
            return True
        if _scaled_invertible(coeff, mats, ctx, depth):
            return True
    if type(term) is Diag and _diag_invertible(term, ctx, depth):
        return True
    if type(term) is MatAdd and unit_lower_triangular(term):
        return True
    if type(term) is Kron and all(_square(f) and invertible(f, ctx, depth) for f in term.args):
        return True  # (A ⊗ B)⁻¹ = A⁻¹ ⊗ B⁻¹
    diagonal = _block_diagonal(term)
    if diagonal is not None and all(invertible(b, ctx, depth) for b in diagonal):
        return True
    if isinstance(term, MatAdd) and _low_rank_update_invertible(term, ctx, depth):
        return True
    if type(term) is BlockMatrix and _schur_invertible(term, ctx, depth):
        return True
    if _one_sided_inverse(term, ctx):
        return True
    if any(invertible(t, ctx, depth + 1) for t in ctx.equal_terms(term)):
        return True
    if _family_fact("invertible", term, ctx):
        return True
    return _by_unfolding(("invertible",), term, ctx, depth, invertible)


def _scaled_invertible(coeff, mats: list, ctx: Context, depth: int) -> bool:
    """c·M is invertible when c ≠ 0 and M = A₁⋯A_r is (issue 41): det(cM) = cᵏ det M for M of size k.  M's factors
    need not be square (σ²XᵀX from XᵀX invertible and σ ≠ 0); c = 1 is M itself, judged as such."""
    if coeff == 1 or not mats:
        return False
    return nonzero(coeff, ctx) and invertible(mul(mats), ctx, depth)


def _diag_invertible(term: Diag, ctx: Context, depth: int) -> bool:
    """diag(v) is invertible when every entry of v is shown non-zero (issue 41): v = c·1ₖ with c ≠ 0 (1ₖ itself:
    c = 1).  A hypothesis Q.invertible(diag(v)) — every entry of v non-zero — is looked up like any other."""
    coeff, mats = factors_of(term.args[0])
    return len(mats) == 1 and type(mats[0]) is Ones and nonzero(coeff, ctx)


def unit_lower_triangular(term) -> bool:
    """I + Σ cᵢ·Dᵢ tril(Aᵢ, -1) Eᵢ (issue 42): the identity plus strictly lower parts, each scaled and multiplied by
    diagonal matrices (diag(v) or I) on either side, is unit lower triangular, so its determinant is 1.  Exactly one
    term is an identity; every other holds exactly one factor tril(·, -1), the rest diag(·) or I."""
    identities = 0
    for part in term.args:
        if type(part) is Identity:
            identities += 1
            continue
        _, mats = factors_of(part)
        strict = [m for m in mats if type(m) is Tril and m.args[1] != 0]
        if len(strict) != 1 or not all(m is strict[0] or type(m) in (Diag, Identity) for m in mats):
            return False
    return identities == 1


def _one_sided_inverse(term, ctx: Context) -> bool:
    """A square matrix with a one-sided inverse is invertible: ``term`` (square, checked by the caller) is the first
    or the last factor of a product that an equation equates to I (A B = I with A square gives det A ≠ 0)."""
    for lhs, rhs in ctx.equations:
        for product, unit in ((lhs, rhs), (rhs, lhs)):
            if isinstance(unit, Identity) and isinstance(product, MatMul) and factors_of(product)[0] == 1:
                _, mats = factors_of(product)
                if term in (mats[0], mats[-1]):
                    return True
    return False


def _low_rank_update_invertible(term: MatAdd, ctx: Context, depth: int) -> bool:
    """A + c U V is invertible when A is and I + c V A⁻¹ U is (det(A + cUV) = det A · det(I + cVA⁻¹U)): the
    invertibility half of the Sherman–Morrison–Woodbury formula.  One term of the sum is the update c U V,
    split between any two of its factors; the other terms are A."""
    if depth > _SEARCH_DEPTH:
        return False
    for position, update in enumerate(term.args):
        coeff, mats = factors_of(update)
        if len(mats) < 2:
            continue
        rest = [a for i, a in enumerate(term.args) if i != position]
        base = rest[0] if len(rest) == 1 else MatAdd(*rest, evaluate=False)
        if not invertible(base, ctx, depth + 1):
            continue
        for split in range(1, len(mats)):
            left, right = mats[:split], mats[split:]
            inner = shape(left[-1])[1]
            left_term = left[0] if len(left) == 1 else MatMul(*left, evaluate=False)
            right_term = right[0] if len(right) == 1 else MatMul(*right, evaluate=False)
            small = MatAdd(Identity(inner), MatMul(coeff, right_term, Inverse(base), left_term, evaluate=False),
                           evaluate=False)
            if invertible(small, ctx, depth + 1):
                return True
        if _capacitance_invertible(base, coeff, mats, ctx, depth):
            return True
    return False


def _capacitance_invertible(base, coeff, mats: list, ctx: Context, depth: int) -> bool:
    """Woodbury's capacitance (issue 29): A + c U C V is invertible when A, C and C⁻¹ + c V A⁻¹ U are, since
    det(A + cUCV) = det A · det C · det(C⁻¹ + cVA⁻¹U) (Sylvester: det(I + cCVA⁻¹U) = det C · det(C⁻¹ + cVA⁻¹U)).
    C is one square factor of the update with at least one factor on each side; ``base`` (A) is shown invertible."""
    for middle in range(1, len(mats) - 1):
        capacitance = mats[middle]
        if not _square(capacitance) or not invertible(capacitance, ctx, depth + 1):
            continue
        left, right = mats[:middle], mats[middle + 1:]
        small = MatAdd(Inverse(capacitance), MatMul(coeff, *right, Inverse(base), *left, evaluate=False),
                       evaluate=False)
        if invertible(small, ctx, depth + 1):
            return True
    return False


# --- the Schur complement of a 2×2 block matrix (issue 29) -------------------------------------


def schur_blocks(term: Basic) -> tuple[Basic, Basic, Basic, Basic] | None:
    """(A, B, C, D) of a 2×2 block matrix [[A, B], [C, D]] whose diagonal blocks A and D are square and whose
    blocks conform (B has A's rows and D's columns, C has D's rows and A's columns); else None."""
    if type(term) is not BlockMatrix or term.blockshape != (2, 2):
        return None
    (a, b), (c, d) = blocks_of(term)
    if not (_square(a) and _square(d)):
        return None
    (rows_a, cols_a), (rows_b, cols_b), (rows_c, cols_c), (rows_d, cols_d) = (shape(x) for x in (a, b, c, d))
    if not (dims_equal(rows_b, rows_a) and dims_equal(cols_b, cols_d) and dims_equal(rows_c, rows_d)
            and dims_equal(cols_c, cols_a)):
        return None
    return a, b, c, d


def schur_complement(a: Basic, b: Basic, c: Basic, d: Basic) -> Basic:
    """D − C A⁻¹ B, the Schur complement of the block A in [[A, B], [C, D]] (of D: ``schur_complement(d, c, b, a)``,
    A − B D⁻¹ C).  Only meaningful once A is shown invertible."""
    return add(d, mul(-1, c, Inverse(a), b))


def _schur_invertible(term: BlockMatrix, ctx: Context, depth: int) -> bool:
    """[[A, B], [C, D]] (A, D square) is invertible when A is and S = D − C A⁻¹ B is, or D is and T = A − B D⁻¹ C
    is: det [[A, B], [C, D]] = det A · det S = det D · det T.  S and T are new terms, judged one level deeper."""
    if depth >= _SEARCH_DEPTH:
        return False
    parts = schur_blocks(term)
    if parts is None:
        return False
    a, b, c, d = parts
    for pivot, other in ((a, (a, b, c, d)), (d, (d, c, b, a))):
        ctx.tick()  # forming a complement is work, charged like a judgment
        if not invertible(pivot, ctx, depth):
            continue
        try:
            complement = schur_complement(*other)
        except TermError:
            continue
        if invertible(complement, ctx, depth + 1):
            return True
    return False


def diagonal(term, ctx: Context, depth: int = 0) -> bool:
    """Square with zero entries off the diagonal, shown from the hypotheses (sound, not complete): I, a square 0,
    a ``Q.diagonal`` hypothesis; transposes, inverses and powers of diagonal matrices; c·D₁⋯D_r for square
    diagonal Dᵢ; sums of diagonal matrices; block-diagonal matrices of diagonal blocks; a term equal by an
    equation to a diagonal one."""
    term = canonical(term)
    return ctx.remembered("diagonal", term, depth, lambda: _diagonal(term, ctx, depth))


def _diagonal(term, ctx: Context, depth: int) -> bool:
    if depth > _SEARCH_DEPTH or not _square(term):
        return False
    if isinstance(term, (Identity, ZeroMatrix, Diag)) or ctx.has("diagonal", term):
        return True  # diag(v) of a column v (its definedness): diagonal by construction
    if type(term) is Kron and all(_square(f) and diagonal(f, ctx, depth) for f in term.args):
        return True
    if isinstance(term, (Inverse, MatPow, Transpose)):
        return diagonal(term.args[0], ctx, depth)
    if isinstance(term, MatMul):
        _, mats = factors_of(term)
        if all(_square(m) and diagonal(m, ctx, depth) for m in mats):
            return True
    if isinstance(term, MatAdd):
        return all(diagonal(a, ctx, depth) for a in term.args)
    blocks = _block_diagonal(term)
    if blocks is not None:
        return all(diagonal(b, ctx, depth) for b in blocks)
    if any(diagonal(t, ctx, depth + 1) for t in ctx.equal_terms(term)):
        return True
    if _family_fact("diagonal", term, ctx):
        return True
    return _by_unfolding(("diagonal",), term, ctx, depth, diagonal)


def positive_power_base(term, ctx: Context) -> bool:
    """A matrix whose non-integer powers are defined: diagonal and positive definite (then A^q is the entrywise
    power of its positive diagonal, again diagonal and positive definite)."""
    return diagonal(term, ctx) and positive_definite(term, ctx)


def symmetric(term, ctx: Context, depth: int = 0) -> bool:
    """Equal to its transpose, shown from the hypotheses (sound, not complete).

    Symmetry is not inferred from positive (semi)definiteness, which here means xᵀAx > 0 (≥ 0) and holds for
    some matrices that are not symmetric; a proof that needs Λᵀ = Λ must assume it (Λ diagonal or symmetric).
    """
    term = canonical(term)
    return ctx.remembered("symmetric", term, depth, lambda: _symmetric(term, ctx, depth))


def _symmetric(term, ctx: Context, depth: int) -> bool:
    if depth > _SEARCH_DEPTH or not _square(term):
        return False
    if isinstance(term, (Identity, ZeroMatrix, Diag)) or ctx.has("symmetric", term) or ctx.has("diagonal", term):
        return True  # diag(v) is diagonal, so its own transpose
    if type(term) is Kron and all(_square(f) and symmetric(f, ctx, depth) for f in term.args):
        return True  # (A ⊗ B)ᵀ = Aᵀ ⊗ Bᵀ
    if isinstance(term, (Inverse, MatPow, Transpose)):
        return symmetric(term.args[0], ctx, depth)
    if isinstance(term, MatMul):
        _, mats = factors_of(term)  # a real coefficient keeps symmetry
        if len(mats) == 1:
            return symmetric(mats[0], ctx, depth)
        if len(mats) == 2 and _transposes(mats[0], mats[1]):
            return True  # Bᵀ B or B Bᵀ
        middle = _congruence(mats)
        if middle is not None:
            return symmetric(middle, ctx, depth)  # F M Fᵀ
    if isinstance(term, MatAdd):
        return all(symmetric(a, ctx, depth) for a in term.args)
    diagonal = _block_diagonal(term)
    if diagonal is not None:
        return all(symmetric(b, ctx, depth) for b in diagonal)
    if any(symmetric(t, ctx, depth + 1) for t in ctx.equal_terms(term)):
        return True
    if _family_fact("symmetric", term, ctx) or _family_fact("diagonal", term, ctx):
        return True
    return _by_unfolding(("symmetric", "diagonal"), term, ctx, depth, symmetric)


# --- definedness that follows from what is known (issue 29) --------------------------------------------------
# A judgment that fails on a term as it stands tries the term *unfolded*: each matrix symbol (or family member)
# that an equation of the context — a definition, a hypothesis, a lemma proved earlier — equates to a term not
# containing it is replaced by that term (either side of the equation; at most _UNFOLD_ROUNDS rounds), transposes
# are pushed to the leaves ((cAB)ᵀ = cBᵀAᵀ, (A + B)ᵀ = Aᵀ + Bᵀ, (Aᵀ)ᵀ = A, (A⁻¹)ᵀ = (Aᵀ)⁻¹, (Aᵏ)ᵀ = (Aᵀ)ᵏ, Iᵀ = I),
# and the inverse of a product of square factors each shown invertible, with a coefficient shown non-zero, is split
# ((cAB)⁻¹ = c⁻¹B⁻¹A⁻¹).  Each rewrite is an identity wherever the term is defined, so the unfolded term is the same
# matrix; it is then compared, in normal form, with the unfolded predicate facts and equation sides, and judged.

_UNFOLD_ROUNDS = 3


def _family_fact(predicate: str, term, ctx: Context) -> bool:
    """A member of a recurrence whose every defined member has ``predicate`` (proved by induction on its index when
    the recurrence was declared: see ``checking._inductive_facts``)."""
    if type(term) is not FamilyMatrix:
        return False
    family = ctx.families.get(term.name)
    return family is not None and family.is_defined and predicate in ctx.family_facts.of(term.name)


def _substitutions(ctx: Context) -> dict:
    """Leaf -> term, from the equations whose one side is a matrix symbol or family member not in the other."""
    key = ("substitutions", len(ctx.equations))
    found = ctx.memo.get(key)
    if found is None:
        found = {}
        for lhs, rhs in ctx.equations:
            for leaf, value in ((lhs, rhs), (rhs, lhs)):
                if type(leaf) in (MatrixSymbol, FamilyMatrix) and leaf not in found and not value.has(leaf):
                    found[leaf] = value
                    break
        ctx.memo[key] = found
    return found


def _pushed(term, ctx: Context, depth: int):
    """``term`` with transposes pushed to the leaves and inverses of invertible products split (the same matrix)."""
    ctx.tick()
    kind = type(term)
    if kind is Transpose:
        inner = term.args[0]
        inner_kind = type(inner)
        if inner_kind is Transpose:
            return _pushed(inner.args[0], ctx, depth)
        if inner_kind is MatMul:
            coeff, mats = factors_of(inner)
            return mul(coeff, [_pushed(Transpose(m), ctx, depth) for m in reversed(mats)])
        if inner_kind is MatAdd:
            return add([_pushed(Transpose(a), ctx, depth) for a in inner.args])
        if inner_kind is Inverse:
            return Inverse(_pushed(Transpose(inner.args[0]), ctx, depth))
        if inner_kind is MatPow and _is_integer(inner.args[1]):
            return power(_pushed(Transpose(inner.args[0]), ctx, depth), inner.args[1])
        if inner_kind in (Identity, Diag):  # Iᵀ = I, diag(v)ᵀ = diag(v)
            return _pushed(inner, ctx, depth)
        return Transpose(_pushed(inner, ctx, depth))
    if kind is Inverse:
        inner = _pushed(term.args[0], ctx, depth)
        if type(inner) is Identity:
            return inner
        if type(inner) is MatMul:
            coeff, mats = factors_of(inner)
            if nonzero(coeff, ctx) and all(_square(m) and invertible(m, ctx, depth + 1) for m in mats):
                return mul(1 / coeff, [_pushed(Inverse(m), ctx, depth) for m in reversed(mats)])
        return Inverse(inner)
    if kind is MatMul:  # identity factors dropped (A I = A): Xᵀ(σ²I)⁻¹X unfolds to σ⁻²XᵀX
        coeff, mats = factors_of(rebuild(term, [_pushed(c, ctx, depth) for c in children(term)]))
        return mul(coeff, [m for m in mats if type(m) is not Identity] or mats[:1])
    if kind in (MatAdd, MatPow, BlockMatrix, Diag, Tril, Kron):
        return rebuild(term, [_pushed(c, ctx, depth) for c in children(term)])
    return term


def _state(ctx: Context) -> tuple:
    return len(ctx.equations), sum(len(v) for v in ctx.predicates.values()), len(ctx.scalar_facts)


def _unfolded(term, ctx: Context, depth: int):
    """The unfolded normal form of ``term`` (memoised per term and state of the context; the judgments it asks,
    to split an inverse, are one level deeper than the first caller's), or None."""
    key = ("unfolded", term, _state(ctx))
    if key in ctx.memo:
        return ctx.memo[key]
    ctx.memo[key] = None  # while in progress: a cycle through the judgments unfolds nothing
    ctx.tick()
    out = term
    try:
        table = _substitutions(ctx)
        if table:
            for _ in range(_UNFOLD_ROUNDS):
                if not (out.atoms(MatrixSymbol, FamilyMatrix) & table.keys()):
                    break
                out = out.xreplace(table)
                # substituted terms nest deeper: refused where SymPy's shape of them would take exponential time
                require_shape_doubling(out, "an unfolding")
        out = canonical(_pushed(canonical(out), ctx, depth))
    except (OutOfTime, WorkExceeded, GuardFired):
        raise
    except Exception:  # noqa: BLE001 - a term SymPy or the normal form refuses (CoercionFailed too): not unfolded
        out = None
    ctx.memo[key] = out
    return out


def _unfolded_facts(predicates: tuple, ctx: Context, depth: int) -> set:
    """The predicate facts ``predicates`` of the context, unfolded (memoised per state)."""
    key = ("unfolded facts", predicates, _state(ctx))
    if key not in ctx.memo:
        ctx.memo[key] = set()  # while in progress
        ctx.memo[key] = {_unfolded(fact, ctx, depth) for name in predicates for fact in ctx.predicates[name]}
    return ctx.memo[key]


def _unfolded_equations(ctx: Context, depth: int) -> dict:
    """Unfolded side of an equation -> the other sides it is equated to (memoised per state)."""
    key = ("unfolded equations", _state(ctx))
    if key not in ctx.memo:
        ctx.memo[key] = {}  # while in progress
        table: dict = {}
        for lhs, rhs in ctx.equations:
            for this, other in ((lhs, rhs), (rhs, lhs)):
                unfolded = _unfolded(this, ctx, depth)
                if unfolded is not None and other not in table.setdefault(unfolded, []):
                    table[unfolded].append(other)
        ctx.memo[key] = table
    return ctx.memo[key]


def _by_unfolding(predicates: tuple, term, ctx: Context, depth: int, judge) -> bool:
    """``term`` unfolded is a predicate fact unfolded, or a side of an equation unfolded whose other side has the
    property, or itself has it (one level deeper)."""
    if depth >= _SEARCH_DEPTH:
        return False
    unfolded = _unfolded(term, ctx, depth)
    if unfolded is None:
        return False
    if unfolded in _unfolded_facts(predicates, ctx, depth):
        return True
    if any(other != term and judge(other, ctx, depth + 1)
           for other in _unfolded_equations(ctx, depth).get(unfolded, ())):
        return True
    return unfolded != term and judge(unfolded, ctx, depth + 1)


_MAX_UNFOLDING = 64  # members a definedness judgment unfolds a recurrence through (F[5] → F[4] → ...)


def _require_member(term: FamilyMatrix, ctx: Context, depth: int = 0) -> None:
    """A member of a declared family, of the declared shape, and — for a recurrence — defined."""
    family = ctx.families.get(term.name)
    if family is None:
        raise TermError(f"{term.name}[...] is a member of a family the proof does not declare")
    rows, cols = (d.xreplace({family.index: term.index}) for d in (family.rows, family.cols))
    if not (dims_equal(rows, term.shape[0]) and dims_equal(cols, term.shape[1])):
        raise TermError(f"{term} has shape {term.shape}, but the family {term.name} says {(rows, cols)}")
    if family.is_defined and not member_defined(term, ctx, depth):
        raise TermError(f"cannot show that {term} is defined (its recurrence is not shown defined that far)")


def member_defined(term: FamilyMatrix, ctx: Context, depth: int = 0) -> bool:
    """F[e] for a recurrence F is defined: F is total (its step is defined for any defined F[s]), or F[e]
    occurs in a side of an equation of the context (a hypothesis such as the induction hypothesis, a lemma),
    or F[e] is F[0] with the base value defined, or F[e' + 1] with the step at e' defined (at most
    ``_MAX_UNFOLDING`` members deep)."""
    return ctx.remembered("member_defined", term, depth, lambda: _member_defined(term, ctx, depth))


def _member_defined(term: FamilyMatrix, ctx: Context, depth: int) -> bool:
    if depth > _MAX_UNFOLDING:
        return False
    if term.name in ctx.total_families:
        return True
    if any(side.has(term) for equation in ctx.equations for side in equation):
        return True  # a sub-term of a side of a hypothesis, definition or lemma: defined where they hold
    family = ctx.families[term.name]
    try:
        if term.index == 0:
            _check_defined(family.base, ctx, depth + 1)
            return True
        previous = term.index - 1
        require_index(previous)
        _check_defined(family.step.xreplace({family.index: previous}), ctx, depth + 1)
        return True
    except TermError:
        return False


def require_coefficient_defined(c: Basic, ctx: Context) -> None:
    """A scalar (a coefficient, or the right side of a scalar hypothesis) is defined; TermError otherwise."""
    _require_coefficient_defined(c, ctx)


def _require_coefficient_defined(c: Basic, ctx: Context) -> None:
    """Every matrix read as a scalar is defined, and every division is by a scalar shown non-zero."""
    stack = [c]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is Trace:
            _check_defined(node.args[0], ctx)
        elif kind is Pow and not is_number(node.args[1]):
            _index_power_defined(node, ctx)
        elif kind is Pow:
            base, exponent = node.args
            if exponent < 0 and not nonzero(base, ctx):
                raise NotShown(f"cannot show that {shown(base)} is not zero, needed to divide by it", "nonzero", base)
            stack.append(base)
        elif kind in (Add, Mul):
            stack += list(node.args)


def _index_power_defined(c: Pow, ctx: Context) -> bool:
    """γ^(Σ kt + c) (issue 41) is defined for every natural t when every k and c are ≥ 0 (0⁰ = 1); an exponent that
    may be negative (γ^(−t), γ^(t − 1)) divides by a power of γ, so γ must be shown non-zero.  True, or TermError."""
    power = index_power(c)
    if power is None:
        raise TermError(f"{shown(c)} is not a power the kernel knows")
    base, constant, terms = power
    if may_be_negative(constant, terms) and not nonzero(base, ctx):
        raise TermError(f"cannot show that {shown(base)} is not zero, needed for the power {shown(c)} (its exponent "
                        f"may be negative)")
    return True


def _require_column(vector) -> None:
    """diag(v) is defined for a column v only (issue 41): k×1 as written, the 1 literally 1 (not a dimension that
    might be 1: diag of an n×p matrix has no meaning)."""
    cols = shape(vector)[1]
    if not (is_number(cols) and cols == 1):
        raise TermError(f"diag takes a column vector (k×1), not {shown(vector)} of shape {shape(vector)}")


def check_defined(term, ctx: Context) -> None:
    """Raise TermError unless ``term`` — as written, before any normal form — is well formed and defined.

    Checking the raw term matters: the normal form drops factors (0·A = 0, A¹ = A), which must not
    hide an undefined or ill-shaped sub-term.  Every node must have exactly a kernel type.
    """
    require_exact_types(term)
    _check_defined(term, ctx)


def _check_defined(term, ctx: Context, depth: int = 0) -> None:
    ctx.tick()
    if not isinstance(term, MATRIX_NODES):
        raise TermError(f"{type(term).__name__} is not a matrix term the kernel knows")
    if isinstance(term, MatMul):
        kids = [a for a in term.args if isinstance(a, MATRIX_NODES)]
        if not kids:
            raise TermError("a product needs a matrix factor")
        for arg in term.args:
            if not isinstance(arg, MATRIX_NODES):
                _require_coefficient_defined(arg, ctx)
    else:
        kids = children(term)
    for child in kids:
        _check_defined(child, ctx, depth)
    if isinstance(term, (MatrixSymbol, FamilyMatrix, Identity, ZeroMatrix, Ones)):
        for dim in term.shape:
            if dim.is_integer is not True or dim.is_nonnegative is not True or not all(
                index_kind(s) is not None for s in dim.free_symbols
            ):
                raise TermError(f"dimension {dim} must be a non-negative integer built from dimension and index "
                                "symbols")
        if isinstance(term, FamilyMatrix):
            _require_member(term, ctx, depth)
    elif isinstance(term, Inverse):
        if not invertible(term.args[0], ctx):
            raise NotShown(f"cannot show that {shown(term.args[0])} is invertible", "invertible", term.args[0])
    elif isinstance(term, Diag):
        _require_column(term.args[0])
    elif isinstance(term, Tril):
        if not _square(term.args[0]):
            raise TermError(f"tril takes a square matrix, not {shown(term.args[0])} of shape {shape(term.args[0])}")
    elif isinstance(term, MatPow):
        q = term.args[1]
        if not isinstance(q, Rational):
            raise TermError(f"bad exponent {q}")
        if not _square(term.args[0]):
            raise TermError(f"power of a non-square matrix {shown(term.args[0])}")
        if not _is_integer(q) and not positive_power_base(term.args[0], ctx):
            raise TermError(f"cannot show that {shown(term.args[0])} is diagonal and positive definite, needed for the "
                            f"non-integer power {q}")
        if q < 0 and not invertible(term.args[0], ctx):
            raise NotShown(f"cannot show that {shown(term.args[0])} is invertible, needed for power {q}", "invertible",
                           term.args[0])
    elif isinstance(term, MatMul):
        for left, right in zip(kids[:-1], kids[1:], strict=True):
            if not dims_equal(shape(left)[1], shape(right)[0]):
                raise TermError(f"shapes do not conform in the product {shown(left)} * {shown(right)}")
    elif isinstance(term, MatAdd):
        first = shape(term.args[0])
        for other in term.args[1:]:
            if not (dims_equal(first[0], shape(other)[0]) and dims_equal(first[1], shape(other)[1])):
                raise TermError(f"shapes differ in the sum {shown(term)}")
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
    (r1, c1), (r2, c2) = shape(term), shape(out)
    if not (dims_equal(r1, r2) and dims_equal(c1, c2)):  # never trust a shape the normal form does not keep
        raise TermError(f"{shown(term)} is {r1}×{c1} as written but its normal form {shown(out)} is {r2}×{c2}")
    return out

