"""The trusted kernel: checks equational proofs about matrix expressions.

A proof is a chain ``claim.lhs = e1 = e2 = ... = claim.rhs``.  Each step names one rule,
and the kernel checks that the rule, applied at exactly one position of the previous
expression (a sub-term, or a run of adjacent factors of a product), gives the next one,
in either direction.  Rules are the matrix-algebra axioms in :data:`AXIOMS`, the
hypotheses (``hyp:NAME``), the definitions (``def:NAME``) and lemmas proved earlier in the
same proof (``lemma:NAME``).  Every expression of every chain must be *defined*: shapes
conform, and every inverse or non-integer power is of a matrix the kernel can show
invertible or positive definite from the hypotheses.  Only :func:`check` makes a
:class:`Theorem`.

Semantics: a theorem says that for all values of its symbols (real matrices of any sizes
the dimension symbols allow) that satisfy the hypotheses and definitions, both sides of
the claim are defined and equal.  Definitions introduce fresh symbols only, so they never
constrain the others.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from sympy import Basic, Rational, Symbol, srepr
from sympy.assumptions import Q
from sympy.assumptions.assume import AppliedPredicate
from sympy.logic.boolalg import BooleanTrue
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

from .terms import (
    MATRIX_NODES,
    TermError,
    add,
    block,
    blocks_of,
    canon,
    children,
    dims_equal,
    exponent_form,
    factors_of,
    inv,
    mul,
    power,
    rebuild,
    shape,
)

__all__ = [
    "AXIOMS",
    "PREDICATES",
    "Chain",
    "Definition",
    "Hypothesis",
    "Proof",
    "ProofError",
    "Step",
    "Theorem",
    "check",
]

#: Predicate hypotheses the kernel understands, written ``Q.<name>(M)`` = true.
PREDICATES = {"positive_definite": Q.positive_definite, "invertible": Q.invertible,
              "diagonal": Q.diagonal, "symmetric": Q.symmetric}
_SEARCH_DEPTH = 4  # how far judgments follow hypothesis equations (any bound is sound)


# --- proofs (plain data, untrusted until checked) ------------------------------------


@dataclass(frozen=True)
class Hypothesis:
    """``lhs = rhs``; a predicate hypothesis has lhs ``Q.<pred>(M)`` and rhs ``true``.

    ``forall`` lists symbols (matrix or dimension) bound by this hypothesis alone: a step
    citing it instantiates them (``Step.instance``).
    """

    name: str
    lhs: Basic
    rhs: Basic
    forall: tuple[Basic, ...] = ()

    @property
    def is_predicate(self) -> bool:
        return isinstance(self.lhs, AppliedPredicate)


@dataclass(frozen=True)
class Definition:
    """``symbol := rhs`` for a fresh matrix symbol."""

    name: str
    symbol: MatrixSymbol
    rhs: Basic


@dataclass(frozen=True)
class Step:
    """One rewrite: ``expr`` follows from the previous expression by ``rule``."""

    expr: Basic
    rule: str
    instance: tuple[tuple[Basic, Basic], ...] = ()


@dataclass(frozen=True)
class Chain:
    """A claim ``lhs = rhs`` with its chain of steps; ``hypotheses`` are local to it."""

    name: str
    lhs: Basic
    rhs: Basic
    steps: tuple[Step, ...]
    hypotheses: tuple[Hypothesis, ...] = ()


@dataclass(frozen=True)
class Proof:
    """A theorem's statement and proof: lemmas first (each may be cited later), then the claim."""

    theorem: str
    title: str
    statement: str
    hypotheses: tuple[Hypothesis, ...]
    definitions: tuple[Definition, ...]
    lemmas: tuple[Chain, ...]
    claim: Chain


class ProofError(ValueError):
    """A proof does not check; names the theorem, the chain, the step and the rule."""

    def __init__(self, theorem: str, chain: str, step: int | None, rule: str | None, reason: str):
        self.theorem, self.chain, self.step, self.rule, self.reason = theorem, chain, step, rule, reason
        where = f"{theorem}/{chain}"
        if step is not None:
            where += f" step {step}"
        if rule is not None:
            where += f" (rule {rule})"
        super().__init__(f"{where}: {reason}")


_KERNEL_TOKEN = object()


class Theorem:
    """A checked theorem.  Only :func:`check` can make one."""

    __slots__ = ("id", "title", "statement", "proof", "digest", "seconds")

    def __init__(self, token: object, proof: Proof, digest: str, seconds: float):
        if token is not _KERNEL_TOKEN:
            raise TypeError("theorems are made by derive.kernel.check only")
        object.__setattr__(self, "id", proof.theorem)
        object.__setattr__(self, "title", proof.title)
        object.__setattr__(self, "statement", proof.statement)
        object.__setattr__(self, "proof", proof)
        object.__setattr__(self, "digest", digest)
        object.__setattr__(self, "seconds", seconds)

    def __setattr__(self, name, value):
        raise AttributeError("theorems are immutable")

    def __delattr__(self, name):
        raise AttributeError("theorems are immutable")

    @property
    def steps(self) -> int:
        return sum(len(c.steps) for c in (*self.proof.lemmas, self.proof.claim))

    def __repr__(self) -> str:
        return f"Theorem({self.id!r}, steps={self.steps})"

    def _repr_latex_(self) -> str:  # Jupyter shows checked theorems as mathematics
        from .latex import theorem_display

        return theorem_display(self)


# --- the context a chain is checked in ------------------------------------------------


@dataclass
class _Context:
    equations: list[tuple[Basic, Basic]] = field(default_factory=list)  # hypotheses and definitions
    predicates: dict[str, list[Basic]] = field(default_factory=lambda: {k: [] for k in PREDICATES})
    rules: dict[str, tuple[Basic, Basic, tuple[Basic, ...]]] = field(default_factory=dict)

    def has(self, predicate: str, term: Basic) -> bool:
        return any(term == t for t in self.predicates[predicate])

    def equal_terms(self, term: Basic) -> Iterator[Basic]:
        for lhs, rhs in self.equations:
            if lhs == term:
                yield rhs
            elif rhs == term:
                yield lhs


def _square(term) -> bool:
    rows, cols = shape(term)
    return dims_equal(rows, cols)


def _is_integer(q: Rational) -> bool:
    return q.q == 1


def positive_definite(term, ctx: _Context, depth: int = 0) -> bool:
    """Symmetric positive definite, shown from the hypotheses (sound, not complete)."""
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


def invertible(term, ctx: _Context, depth: int = 0) -> bool:
    """Square and invertible, shown from the hypotheses (sound, not complete)."""
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


def symmetric(term, ctx: _Context, depth: int = 0) -> bool:
    """Equal to its transpose, shown from the hypotheses (sound, not complete).

    Symmetry is not inferred from positive definiteness, so a proof that needs Λᵀ = Λ must
    assume it (Λ diagonal or symmetric): every hypothesis a library proof states is needed.
    """
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


def check_defined(term, ctx: _Context) -> None:
    """Raise TermError unless ``term`` — as written, before any normal form — is well formed and defined.

    Checking the raw term matters: the normal form drops factors (0·A = 0, A¹ = A), which must not
    hide an undefined or ill-shaped sub-term.
    """
    if not isinstance(term, MATRIX_NODES):
        raise TermError(f"{type(term).__name__} is not a matrix term the kernel knows")
    if isinstance(term, MatMul):
        kids = [a for a in term.args if not isinstance(a, Rational)]
        if not kids or any(not isinstance(a, MATRIX_NODES) for a in kids):
            raise TermError("a product may hold rational coefficients and matrices only")
    else:
        kids = children(term)
    for child in kids:
        check_defined(child, ctx)
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


def defined_canon(term, ctx: _Context):
    """Check ``term`` as written, then return its normal form (checked too)."""
    check_defined(term, ctx)
    out = canon(term)
    check_defined(out, ctx)
    return out


# --- the axioms ---------------------------------------------------------------------
# Each axiom maps a term (a node, or a run of two or more adjacent factors of a product)
# to the terms it may be rewritten to.  Each is an identity of real matrices under the
# side conditions it checks; definedness of both sides is checked separately.

Rule = Callable[[Basic, _Context], list[Basic]]


def _transpose_product(t, ctx):
    if isinstance(t, Transpose) and isinstance(t.args[0], MatMul):
        coeff, mats = factors_of(t.args[0])
        return [mul(coeff, [Transpose(m) for m in reversed(mats)])]
    return []


def _transpose_transpose(t, ctx):
    if isinstance(t, Transpose) and isinstance(t.args[0], Transpose):
        return [t.args[0].args[0]]
    return []


def _transpose_sum(t, ctx):
    if isinstance(t, Transpose) and isinstance(t.args[0], MatAdd):
        return [add([Transpose(a) for a in t.args[0].args])]
    return []


def _transpose_symmetric(t, ctx):
    if isinstance(t, Transpose) and symmetric(t.args[0], ctx):
        return [t.args[0]]
    return []


def _transpose_inverse(t, ctx):
    if isinstance(t, Transpose) and isinstance(t.args[0], Inverse):
        return [inv(Transpose(t.args[0].args[0]))]
    return []


def _transpose_zero(t, ctx):
    if isinstance(t, Transpose) and isinstance(t.args[0], ZeroMatrix):
        rows, cols = shape(t.args[0])
        return [ZeroMatrix(cols, rows)]
    return []


def _inverse_product(t, ctx):
    if isinstance(t, Inverse) and isinstance(t.args[0], MatMul):
        coeff, mats = factors_of(t.args[0])
        if coeff != 0 and all(_square(m) and invertible(m, ctx) for m in mats):
            return [mul(1 / coeff, [inv(m) for m in reversed(mats)])]
    return []


def _inverse_inverse(t, ctx):
    if isinstance(t, Inverse) and isinstance(t.args[0], Inverse):
        return [t.args[0].args[0]]
    return []


def _inverse_cancel(t, ctx):
    """A⁻¹ A = I and A A⁻¹ = I, where A may be a run of several factors."""
    coeff, mats = factors_of(t)
    if coeff != 1 or len(mats) < 2:
        return []
    out = []
    if isinstance(mats[0], Inverse) and mats[0].args[0] == canon(mul(mats[1:])):
        out.append(Identity(shape(mats[0])[0]))
    if isinstance(mats[-1], Inverse) and mats[-1].args[0] == canon(mul(mats[:-1])):
        out.append(Identity(shape(mats[-1])[0]))
    return out


def _power_combine(t, ctx):
    """A^a A^b = A^(a+b) for two adjacent factors with the same base (A = A^1, A⁻¹ = A^-1)."""
    coeff, mats = factors_of(t)
    if coeff != 1 or len(mats) != 2:
        return []
    (base1, a), (base2, b) = exponent_form(mats[0]), exponent_form(mats[1])
    if base1 != base2 or not _square(base1):
        return []
    if not (_is_integer(a) and _is_integer(b)) and not positive_definite(base1, ctx):
        return []
    if (a < 0 or b < 0 or a + b < 0) and not invertible(base1, ctx):
        return []
    return [power(base1, a + b)]


def _identity_mul(t, ctx):
    coeff, mats = factors_of(t)
    if not isinstance(t, MatMul) or len(mats) < 2:
        return []
    return [mul(coeff, mats[:i], mats[i + 1 :]) for i, m in enumerate(mats) if isinstance(m, Identity)]


def _zero_mul(t, ctx):
    coeff, mats = factors_of(t)
    if isinstance(t, MatMul) and any(isinstance(m, ZeroMatrix) for m in mats):
        return [ZeroMatrix(*shape(t))]
    return []


def _zero_add(t, ctx):
    if not isinstance(t, MatAdd):
        return []
    keep = [a for a in t.args if not isinstance(a, ZeroMatrix)]
    if len(keep) == len(t.args):
        return []
    return [add(keep) if keep else ZeroMatrix(*shape(t))]


def _distribute(t, ctx):
    """A (B + C) D = A B D + A C D, for each sum among the factors."""
    coeff, mats = factors_of(t)
    if not isinstance(t, MatMul):
        return []
    return [
        add([mul(coeff, mats[:i], term, mats[i + 1 :]) for term in m.args])
        for i, m in enumerate(mats)
        if isinstance(m, MatAdd)
    ]


def _block_multiply(t, ctx):
    """Product of two block matrices with conforming partitions (a plain matrix is one block)."""
    coeff, mats = factors_of(t)
    if coeff != 1 or len(mats) != 2 or not any(isinstance(m, BlockMatrix) for m in mats):
        return []
    left, right = (blocks_of(m) if isinstance(m, BlockMatrix) else [[m]] for m in mats)
    inner_left = [shape(b)[1] for b in left[0]]
    inner_right = [shape(row[0])[0] for row in right]
    if len(inner_left) != len(inner_right) or not all(map(dims_equal, inner_left, inner_right)):
        return []
    product = [
        [add([mul(left[i][r], right[r][j]) for r in range(len(inner_left))]) for j in range(len(right[0]))]
        for i in range(len(left))
    ]
    return [block(product)]


def _block_transpose(t, ctx):
    if isinstance(t, Transpose) and isinstance(t.args[0], BlockMatrix):
        grid = blocks_of(t.args[0])
        return [block([[Transpose(grid[i][j]) for i in range(len(grid))] for j in range(len(grid[0]))])]
    return []


def _block_single(t, ctx):
    if isinstance(t, BlockMatrix) and t.blockshape == (1, 1):
        return [blocks_of(t)[0][0]]
    return []


#: The matrix-algebra axioms, by the name a step cites.
AXIOMS: dict[str, Rule] = {
    "transpose_product": _transpose_product,  # (A B)ᵀ = Bᵀ Aᵀ
    "transpose_transpose": _transpose_transpose,  # (Aᵀ)ᵀ = A
    "transpose_sum": _transpose_sum,  # (A + B)ᵀ = Aᵀ + Bᵀ
    "transpose_symmetric": _transpose_symmetric,  # Aᵀ = A for symmetric A
    "transpose_inverse": _transpose_inverse,  # (A⁻¹)ᵀ = (Aᵀ)⁻¹
    "transpose_zero": _transpose_zero,  # 0ᵀ = 0
    "inverse_product": _inverse_product,  # (A B)⁻¹ = B⁻¹ A⁻¹, A and B square invertible
    "inverse_inverse": _inverse_inverse,  # (A⁻¹)⁻¹ = A
    "inverse_cancel": _inverse_cancel,  # A⁻¹ A = A A⁻¹ = I
    "power_combine": _power_combine,  # A^a A^b = A^(a+b)
    "identity_mul": _identity_mul,  # A I = I A = A
    "zero_mul": _zero_mul,  # A 0 = 0 A = 0
    "zero_add": _zero_add,  # A + 0 = A
    "distribute": _distribute,  # A (B + C) = A B + A C
    "block_multiply": _block_multiply,  # block product of conforming partitions
    "block_transpose": _block_transpose,  # [A B; C D]ᵀ = [Aᵀ Cᵀ; Bᵀ Dᵀ]
    "block_single": _block_single,  # [A] = A
}


def _equation_rule(lhs: Basic, rhs: Basic) -> Rule:
    lhs, rhs = canon(lhs), canon(rhs)

    def rule(t, ctx):
        return [rhs] if t == lhs else [lhs] if t == rhs else []

    return rule


# --- rewriting at one position ------------------------------------------------------


def rewrites(term: Basic, rule: Rule, ctx: _Context) -> Iterator[tuple[Basic, Basic]]:
    """(rewritten sub-term, whole result) for every one-position application of ``rule``."""
    for result in rule(term, ctx):
        yield term, canon(result)
    if isinstance(term, MatMul):  # runs of adjacent factors
        coeff, mats = factors_of(term)
        for i in range(len(mats)):
            for j in range(i + 2, len(mats) + 1):
                if j - i == len(mats) and coeff == 1:
                    continue  # the whole product is the node itself
                run = canon(mul(mats[i:j]))
                for result in rule(run, ctx):
                    yield run, canon(mul(coeff, mats[:i], result, mats[j:]))
    kids = children(term)
    for index, child in enumerate(kids):
        for matched, result in rewrites(child, rule, ctx):
            yield matched, canon(rebuild(term, kids[:index] + [result] + kids[index + 1 :]))


def one_step(before: Basic, after: Basic, rule: Rule, ctx: _Context) -> bool:
    """``rule`` rewrites ``before`` into ``after`` at one position, in either direction."""
    try:
        if any(r == after for _, r in rewrites(before, rule, ctx)):
            return True
        return any(r == before for _, r in rewrites(after, rule, ctx))
    except TermError:
        return False


# --- checking -----------------------------------------------------------------------


def _symbols_consistent(terms: list[Basic]) -> None:
    """One shape per matrix-symbol name, one set of assumptions per dimension-symbol name."""
    seen: dict[str, Basic] = {}
    for term in terms:
        for node in term.atoms(MatrixSymbol, Symbol):
            key = ("M:" if isinstance(node, MatrixSymbol) else "d:") + str(node.name)
            if seen.setdefault(key, node) != node:
                raise TermError(f"the name {node.name} is used for two different symbols")


def _all_terms(proof: Proof) -> list[Basic]:
    out: list[Basic] = []
    for h in proof.hypotheses:
        out += [h.lhs, h.rhs, *h.forall]
    for d in proof.definitions:
        out += [d.symbol, d.rhs]
    for c in (*proof.lemmas, proof.claim):
        out += [c.lhs, c.rhs]
        for h in c.hypotheses:
            out += [h.lhs, h.rhs, *h.forall]
        for s in c.steps:
            out.append(s.expr)
            for var, val in s.instance:
                out += [var, val]
    return out


def _add_hypothesis(h: Hypothesis, ctx: _Context, fail) -> None:
    if h.is_predicate:
        if h.forall or not isinstance(h.rhs, BooleanTrue):
            fail(f"predicate hypothesis {h.name} must read Q.<predicate>(M) = true")
        name = next((k for k, v in PREDICATES.items() if h.lhs.function == v), None)
        if name is None or len(h.lhs.arguments) != 1:
            fail(f"hypothesis {h.name} uses a predicate the kernel does not know")
        subject = _defined(h.lhs.arguments[0], ctx, fail)
        if not _square(subject):
            fail(f"hypothesis {h.name} applies {name} to a non-square matrix")
        ctx.predicates[name].append(subject)
    else:
        lhs, rhs = _defined(h.lhs, ctx, fail), _defined(h.rhs, ctx, fail)
        _same_shape(lhs, rhs, fail, f"hypothesis {h.name}")
        if not h.forall:
            ctx.equations.append((lhs, rhs))
    _register(f"hyp:{h.name}", (canon(h.lhs) if not h.is_predicate else None, h.rhs, h.forall), ctx, fail)


def _register(rule: str, entry, ctx: _Context, fail) -> None:
    if rule in ctx.rules:
        fail(f"two hypotheses, definitions or lemmas are named {rule.split(':', 1)[1]}")
    ctx.rules[rule] = entry


def _defined(term, ctx, fail):
    """The normal form of a term checked as written; ``fail`` with the reason otherwise."""
    try:
        return defined_canon(term, ctx)
    except TermError as exc:
        fail(str(exc))


def _same_shape(a, b, fail, what) -> None:
    (r1, c1), (r2, c2) = shape(a), shape(b)
    if not (dims_equal(r1, r2) and dims_equal(c1, c2)):
        fail(f"{what}: the two sides have different shapes")


def _instantiate(entry, step: Step, fail) -> Rule:
    lhs, rhs, forall = entry
    if lhs is None:
        fail("a predicate hypothesis is not a rewrite rule")
    if not forall:
        if step.instance:
            fail("this rule binds no variables, but the step instantiates some")
        return _equation_rule(lhs, rhs)
    given = dict(step.instance)
    if len(given) != len(step.instance) or set(given) != set(forall):
        fail("the step must instantiate exactly the variables the hypothesis binds")
    dim_map = {v: t for v, t in given.items() if isinstance(v, Symbol)}
    for v, t in dim_map.items():
        if not isinstance(t, Basic) or t.is_integer is not True or t.is_positive is not True or not all(
            isinstance(s, Symbol) and s.is_integer and s.is_positive for s in t.free_symbols
        ):
            fail(f"dimension {v} instantiated with {t}, which is not a positive integer dimension")
    mat_map = {}
    try:
        for v, t in given.items():
            if isinstance(v, MatrixSymbol):
                if not isinstance(t, MATRIX_NODES):
                    fail(f"{v.name} instantiated with something that is not a matrix term")
                target = v.xreplace(dim_map)
                _same_shape(target, t, fail, f"instance of {v.name}")
                mat_map[target] = canon(t)
        lhs_i = canon(lhs.xreplace(dim_map).xreplace(mat_map))
        rhs_i = canon(rhs.xreplace(dim_map).xreplace(mat_map))
    except (TermError, ValueError, TypeError) as exc:
        fail(f"cannot instantiate the hypothesis: {exc}")
    return _equation_rule(lhs_i, rhs_i)


def resolve_rule(step: Step, ctx: _Context, fail) -> Rule:
    """The rule a step cites: an axiom, or an (instantiated) hypothesis, definition or lemma."""
    if step.rule in AXIOMS:
        if step.instance:
            fail("axioms take no instance")
        return AXIOMS[step.rule]
    if step.rule in ctx.rules:
        return _instantiate(ctx.rules[step.rule], step, fail)
    fail("no such rule")


def chain_context(outer: _Context, chain: Chain, lemma_rules: dict, fail) -> _Context:
    """The context a chain is checked in: the theorem's, its local hypotheses, earlier lemmas."""
    ctx = _Context(list(outer.equations), {k: list(v) for k, v in outer.predicates.items()}, dict(outer.rules))
    for h in chain.hypotheses:
        _add_hypothesis(h, ctx, fail)
    for name, entry in lemma_rules.items():
        _register(name, entry, ctx, fail)
    return ctx


def _check_chain(theorem: str, chain: Chain, outer: _Context, lemma_rules: dict) -> None:
    def fail(reason, step=None, rule=None):
        raise ProofError(theorem, chain.name, step, rule, reason)

    ctx = chain_context(outer, chain, lemma_rules, fail)
    lhs, rhs = _defined(chain.lhs, ctx, fail), _defined(chain.rhs, ctx, fail)
    _same_shape(lhs, rhs, fail, "the claim")
    current = lhs
    for index, step in enumerate(chain.steps, start=1):
        try:
            after = defined_canon(step.expr, ctx)
        except TermError as exc:
            fail(str(exc), index, step.rule)
        rule = resolve_rule(step, ctx, lambda reason, at=index, name=step.rule: fail(reason, at, name))
        if not one_step(current, after, rule, ctx):
            fail("the rule does not rewrite the previous expression into this one", index, step.rule)
        current = after
    if current != rhs:
        fail("the chain does not end at the right-hand side of the claim", len(chain.steps) or None)


def _check_definitions(proof: Proof, ctx: _Context, fail) -> None:
    hypothesis_symbols = set()
    for h in proof.hypotheses:
        hypothesis_symbols |= h.lhs.atoms(MatrixSymbol) | h.rhs.atoms(MatrixSymbol)
    defined: set = set()
    used: set = set()  # symbols the earlier definitions already speak about
    for d in proof.definitions:
        sym = d.symbol
        if not isinstance(sym, MatrixSymbol):
            fail(f"definition {d.name} must define a matrix symbol")
        if sym in hypothesis_symbols or sym in defined or sym in used:
            fail(f"definition {d.name}: {sym.name} is not fresh")
        if sym in d.rhs.atoms(MatrixSymbol):
            fail(f"definition {d.name} is circular")
        used |= d.rhs.atoms(MatrixSymbol)
        rhs = _defined(d.rhs, ctx, fail)
        _same_shape(sym, rhs, fail, f"definition {d.name}")
        ctx.equations.append((sym, rhs))
        _register(f"def:{d.name}", (sym, rhs, ()), ctx, fail)
        defined.add(sym)
    for c in (*proof.lemmas, proof.claim):  # local hypotheses may not constrain defined symbols
        for h in c.hypotheses:
            if (h.lhs.atoms(MatrixSymbol) | h.rhs.atoms(MatrixSymbol)) & defined:
                fail(f"local hypothesis {h.name} constrains a defined symbol")


def _check_bound_variables(proof: Proof, fail) -> None:
    """Variables a hypothesis binds occur in that hypothesis only."""
    hyps = list(proof.hypotheses) + [h for c in (*proof.lemmas, proof.claim) for h in c.hypotheses]
    for h in hyps:
        if not h.forall:
            continue
        if not all(isinstance(v, (MatrixSymbol, Symbol)) for v in h.forall):
            fail(f"hypothesis {h.name} binds something that is not a symbol")
        names = {v.name for v in h.forall}
        outside = []
        for other in hyps:
            if other is not h:
                outside += [other.lhs, other.rhs]
        for d in proof.definitions:
            outside += [d.symbol, d.rhs]
        for c in (*proof.lemmas, proof.claim):
            outside += [c.lhs, c.rhs] + [s.expr for s in c.steps]
        for term in outside:
            if {a.name for a in term.atoms(MatrixSymbol, Symbol)} & names:
                fail(f"a variable bound by hypothesis {h.name} occurs outside it")
        bound_dims = {v for v in h.forall if isinstance(v, Symbol)}
        for m in h.lhs.atoms(MatrixSymbol) | h.rhs.atoms(MatrixSymbol):
            if m not in h.forall and (m.shape[0].free_symbols | m.shape[1].free_symbols) & bound_dims:
                fail(f"hypothesis {h.name}: {m.name} has a bound dimension but is not bound itself")
        for v in h.forall:
            if isinstance(v, Symbol) and not any(v in m.shape[0].free_symbols | m.shape[1].free_symbols
                                                 for m in h.forall if isinstance(m, MatrixSymbol)):
                fail(f"hypothesis {h.name} binds the dimension {v}, which no bound matrix uses")


def digest(proof: Proof) -> str:
    """SHA-256 of the proof's canonical text (what certificates are hashed by)."""
    blob = json.dumps(proof_to_data(proof), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def proof_to_data(proof: Proof) -> dict:
    """The JSON-ready form of a proof (expressions as ``srepr`` strings)."""

    def hyp(h: Hypothesis) -> dict:
        out = {"name": h.name, "lhs": srepr(h.lhs), "rhs": srepr(h.rhs)}
        if h.forall:
            out["forall"] = [srepr(v) for v in h.forall]
        return out

    def chain(c: Chain) -> dict:
        steps = []
        for s in c.steps:
            item = {"expr": srepr(s.expr), "rule": s.rule}
            if s.instance:
                item["instance"] = [[srepr(v), srepr(t)] for v, t in s.instance]
            steps.append(item)
        out = {"name": c.name, "claim": {"lhs": srepr(c.lhs), "rhs": srepr(c.rhs)}, "steps": steps}
        if c.hypotheses:
            out["hypotheses"] = [hyp(h) for h in c.hypotheses]
        return out

    main = chain(proof.claim)
    return {
        "theorem": proof.theorem,
        "title": proof.title,
        "statement": proof.statement,
        "hypotheses": [hyp(h) for h in proof.hypotheses],
        "definitions": [{"name": d.name, "lhs": srepr(d.symbol), "rhs": srepr(d.rhs)} for d in proof.definitions],
        "lemmas": [chain(c) for c in proof.lemmas],
        "claim": main["claim"],
        "steps": main["steps"],
    }


def theorem_context(proof: Proof) -> _Context:
    """The context of a theorem's statement: hypotheses and definitions, checked."""

    def fail(reason):
        raise ProofError(proof.theorem, "statement", None, None, reason)

    if proof.claim.hypotheses:
        fail("the main claim takes the theorem's hypotheses only")
    try:
        _symbols_consistent(_all_terms(proof))
        _check_bound_variables(proof, fail)
        ctx = _Context()
        for h in proof.hypotheses:
            _add_hypothesis(h, ctx, fail)
        _check_definitions(proof, ctx, fail)
    except TermError as exc:
        fail(str(exc))
    names = [c.name for c in (*proof.lemmas, proof.claim)]
    if len(set(names)) != len(names):
        fail("two chains of the proof have the same name")
    return ctx


def lemma_rule(lemma: Chain):
    """The rewrite rule a checked lemma becomes (None for a lemma with local hypotheses)."""
    return None if lemma.hypotheses else (canon(lemma.lhs), canon(lemma.rhs), ())


def check(proof: Proof) -> Theorem:
    """Check every chain of ``proof``; return the theorem or raise :class:`ProofError`."""
    try:
        return _check(proof)
    except RecursionError:
        raise ProofError(proof.theorem, "statement", None, None, "a term is nested too deeply") from None
    except (ValueError, TypeError) as exc:  # SymPy refusing a malformed term
        if isinstance(exc, ProofError):
            raise
        raise ProofError(proof.theorem, "statement", None, None, f"malformed term: {exc}") from None


def _check(proof: Proof) -> Theorem:
    start = time.perf_counter()
    ctx = theorem_context(proof)
    lemma_rules: dict = {}
    for index, chain in enumerate((*proof.lemmas, proof.claim)):
        try:
            _check_chain(proof.theorem, chain, ctx, lemma_rules)
        except TermError as exc:
            raise ProofError(proof.theorem, chain.name, None, None, str(exc)) from None
        if index < len(proof.lemmas) and lemma_rule(chain) is not None:
            lemma_rules[f"lemma:{chain.name}"] = lemma_rule(chain)
    return Theorem(_KERNEL_TOKEN, proof, digest(proof), time.perf_counter() - start)
