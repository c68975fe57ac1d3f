"""Proof automation: find the chain of rewrites between two expressions; the kernel re-checks it.

Nothing here is trusted.  :func:`close` proposes steps (each an axiom, hypothesis, definition, lemma or
cited theorem applied at one position, exactly what a hand-written ``rw`` records) and the kernel checks
them from scratch later like any other chain.  The search, in order:

1. A short breadth-first search over every rule in both directions, from both sides, bounded to a few
   dozen terms: it finds the chains of two or three steps, shortest first.
2. *Directed normalisation* of both sides, the left one stopping where it meets the right one's path:
   cited theorems and lemmas first, then hypotheses (towards I or 0, eliminating a symbol, else as
   written), then the simplifying axioms (transposes pushed inward, inverses of products of square
   invertible factors split, A⁻¹A cancelled, integer powers expanded and cancelling powers combined,
   identities and zeros dropped, like terms collected, distribution, block products), then definitions.
   Inverses that the equations give a one-sided inverse of (UᵀU = I gives U⁻¹ = Uᵀ for square U) and
   arguments of inverses that normalise only as a whole (XᵀX = RᵀR) become small lemmas proved first.
   It runs under several strategies (see :func:`_strategies`): equations that bring in only symbols the
   other side does not speak about waiting, or not, and each equation's orientation flipped in turn.
3. A bounded breadth-first search from the two normal forms until they meet or the work budget runs out.
4. Both sides multiplied through by a square invertible K whose inverse occurs in them (:func:`_multiply_through`):
   a matrix next to a rational function of itself, (XᵀX + λI)⁻¹XᵀX = I − λ(XᵀX + λI)⁻¹.

When all of this finds nothing from the left side, it runs from the right side and the chain is read backwards
(:func:`close`), so A = B is proved exactly when B = A is.

The search is bounded by counted work, never by a clock (:func:`default_budget`): every rewrite tried,
judgment asked and term normalised is charged to the kernel's meter (:mod:`derive.kernel.budget`), so the
same statement gives the same chain, or the same refusal, on any machine at any load.  A wall-clock
``timeout`` is only an optional outer guard; when it fires the search is *interrupted*, which is no verdict.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from sympy import Basic, Symbol
from sympy.core.sorting import default_sort_key
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

from ..kernel import ProofError, Step
from ..kernel import budget as work
from ..kernel.axioms import AXIOMS, equation_rule, scalar_equation_rule
from ..kernel.checking import (
    _statement_symbols,
    is_scalar_hypothesis,
    one_step,
    resolve_rule,
    rewrites,
    scalar_hypothesis_holds,
)
from ..kernel.hints import explained
from ..kernel.judgments import OutOfTime, check_defined, defined_canon
from ..kernel.scalars import canon_coefficient
from ..kernel.terms import (
    MATRIX_NODES,
    MAX_SHAPE_DOUBLING,
    FamilyMatrix,
    Kron,
    Ones,
    TermError,
    Tril,
    add,
    canon,
    children,
    exponent_form,
    factors_of,
    inv,
    mul,
    power,
    rebuild,
    require_index,
    shape,
    shape_doubling,
    subterms,
)

__all__ = ["close", "normal_form"]

MAX_STEPS = 400  # steps of one normalisation: a safety net, far above what a real chain needs
MAX_SEARCH_TERMS = 3000  # terms the fallback search visits before it gives up
SHORT_SEARCH_TERMS = 40  # the first, short search: finds chains of two or three steps directly
SEARCH_SIZE_SLACK = 12  # the fallback search visits terms at most this many nodes larger than its start
#: Block matrices nested in block matrices along one path of a term the search may hold, beyond what its statement
#: nests (issue 41): ``block_single`` read backwards wraps A into [[A]] again and again, and SymPy asks the top-left
#: block's shape twice at each level, outside the work budget (ridge as OLS on [X; μI] ran for minutes there).
MAX_BLOCK_NESTING = 2

# --- the work budget of a search (units of kernel work, derive.kernel.budget; never seconds) -------------

#: The default budget of one ``.auto`` call: ``AUTO_BASE_UNITS + AUTO_UNITS_PER_NODE × n``, where n counts the
#: nodes of both sides and of the chain's equations (hypotheses, definitions, lemmas), what the search rewrites.
AUTO_BASE_UNITS = 5_000_000
AUTO_UNITS_PER_NODE = 40_000
SECOND_CHANCE_UNITS = 200_000  # the plain search run when the kernel refuses a found chain (see _validated)
NEAREST_STEP_UNITS = 50_000  # looking for a hand step to suggest, once the search has failed


def default_budget(chain, rhs: Basic) -> int:
    """The work budget of ``.auto`` from ``chain``'s current expression to ``rhs`` (see AUTO_BASE_UNITS): far
    above what the library's and the tests' searches use, so the verdict never sits near the edge."""
    nodes = size(canon(chain.current)) + size(canon(rhs))
    for rule in chain.ctx.rules.values():
        lhs, rhs_, _ = _plain(rule)
        if lhs is not None:
            nodes += size(lhs) + size(rhs_)
    return AUTO_BASE_UNITS + AUTO_UNITS_PER_NODE * nodes


class AutoInterrupted(ProofError):
    """The outer wall-clock guard of ``.auto`` (``timeout``) fired: the search was *interrupted*, which says
    nothing about the statement (unlike "no chain found within the work budget")."""


class _GuardFired(Exception):  # noqa: N818 - not an error: the search is stopped from outside
    """Raised by :meth:`Engine.tick` when the wall-clock guard has passed; turned into AutoInterrupted by close."""


@dataclass(frozen=True)
class Move:
    """One proposed step: the whole expression after it, and the rule (with instance) that gives it.

    A move with ``steps`` is several kernel steps taken together (``expr`` is where the last one ends); the
    normaliser records them one by one.
    """

    expr: Basic
    rule: str
    instance: tuple = ()
    steps: tuple = ()


class _Failed(Exception):
    """A candidate rule cannot be used here (the kernel's reason is not needed)."""


def size(term: Basic) -> int:
    return sum(1 for _ in subterms(term))


@functools.lru_cache(maxsize=8192)
def block_nesting(term: Basic) -> int:
    """The most block matrices along one path of ``term`` (0 for a term without blocks); asks SymPy no shape."""
    own = 1 if isinstance(term, BlockMatrix) else 0
    return own + max((block_nesting(child) for child in children(term)), default=0)


@functools.lru_cache(maxsize=8192)
def _shape_doubling(term: Basic) -> int:
    return shape_doubling(term)


# --- rewrite sources ------------------------------------------------------------------------------


class Source:
    """Something that proposes moves from an expression."""

    def moves(self, engine: Engine, expr: Basic) -> Iterator[Move]:  # pragma: no cover - interface
        raise NotImplementedError


#: Node types an axiom needs somewhere in a term to apply at all (a cheap filter before trying it).
NEEDS: dict[str, tuple[type, ...]] = {
    "transpose_product": (Transpose,), "transpose_transpose": (Transpose,), "transpose_sum": (Transpose,),
    "transpose_symmetric": (Transpose,), "transpose_inverse": (Transpose,), "transpose_zero": (Transpose,),
    "inverse_product": (Inverse,), "inverse_inverse": (Inverse,), "inverse_cancel": (Inverse,),
    "identity_mul": (Identity,), "zero_mul": (ZeroMatrix,), "zero_add": (ZeroMatrix,),
    "collect": (MatAdd,), "distribute": (MatAdd,), "block_multiply": (BlockMatrix,),
    "block_transpose": (BlockMatrix,), "block_single": (BlockMatrix,), "block_flatten": (BlockMatrix,),
    "inverse_identity": (Inverse,),
    "block_add": (BlockMatrix,), "block_scale": (BlockMatrix,), "block_identity": (BlockMatrix,),
    "block_zero": (BlockMatrix,), "block_inverse_diagonal": (BlockMatrix,), "scalar_matrix": (MatMul,),
    "block_inverse_schur": (BlockMatrix,), "block_inverse_schur_mirror": (BlockMatrix,),
    "ones_inner": (Ones,),  # issue 41: 1ₙᵀ1ₙ = n
    **dict.fromkeys(("tril_block", "tril_scalar", "tril_sum", "tril_scale", "tril_diagonal", "tril_diag_scale"),
                    (Tril,)),  # issues 41, 42: the causal mask
    **dict.fromkeys(("kron_mixed", "kron_transpose", "kron_inverse", "kron_sum", "kron_scale", "kron_identity"),
                    (Kron,)),  # issue 41: the Kronecker product
}


class RuleSource(Source):
    """A kernel rule (axiom or equation).  ``side``: only rewrites of this sub-term (an oriented equation);
    ``accept(matched, result)``: a further filter (a directed use of an axiom)."""

    def __init__(self, name: str, fn, side: Basic | None = None, accept: Callable | None = None, instance=()):
        self.name, self.fn, self.side, self.accept, self.instance = name, fn, side, accept, tuple(instance)
        self.symbols = frozenset() if side is None else frozenset(side.atoms(MatrixSymbol))
        self.parts = frozenset() if side is None else frozenset(
            children(side) if isinstance(side, (MatMul, MatAdd)) else [side])

    def moves(self, engine: Engine, expr: Basic) -> Iterator[Move]:
        if self.name in NEEDS and not _has_node(expr, NEEDS[self.name]):
            return
        if not self.symbols <= _symbols(expr) or not self.parts <= _subterm_set(expr):
            return  # the side (or a factor of it) occurs nowhere in the term
        for matched, result in _safe(rewrites(expr, self.fn, engine.ctx)):
            if self.side is not None and matched != self.side:
                continue
            if self.accept is not None and not self.accept(matched, result):
                continue
            yield Move(result, self.name, self.instance)


class CheckedSource(Source):
    """Moves built by replacing one node, kept only when the kernel's rule relates the two terms."""

    def __init__(self, name: str, propose: Callable[[Basic], Basic | None]):
        self.name, self.propose = name, propose

    def moves(self, engine: Engine, expr: Basic) -> Iterator[Move]:
        for path, node in _positions(expr):
            new = self.propose(node)
            if new is None:
                continue
            try:
                candidate = canon(_replace_at(expr, path, new))
            except TermError:
                continue
            if one_step(expr, candidate, AXIOMS[self.name], engine.ctx):
                yield Move(candidate, self.name)


class CitedSource(Source):
    """A cited theorem's claim, instantiated by matching one side against a sub-term."""

    def __init__(self, theorem, reverse: bool = False):
        self.theorem, self.reverse = theorem, reverse
        claim = theorem.proof.claim
        self.pattern = canon(claim.rhs if reverse else claim.lhs)
        self.variables = _statement_symbols(theorem.proof)

    def moves(self, engine: Engine, expr: Basic) -> Iterator[Move]:
        rule = f"thm:{self.theorem.id}"
        tried = set()
        for candidate in _subterms_and_runs(expr):
            binding = _match(self.pattern, candidate, self.variables, {})
            if binding is None:
                continue
            instance = _instance(binding)
            if instance in tried:
                continue
            tried.add(instance)
            key = (rule, instance, len(engine.ctx.equations))
            if key not in engine.cite_cache and not _equations_hold(self.theorem, binding, engine.ctx):
                engine.cite_cache[key] = None  # a quick look first: the kernel's refusal costs more to word
            if key not in engine.cite_cache:  # the kernel's verdict on this instance, asked once
                try:
                    engine.cite_cache[key] = resolve_rule(Step(expr, rule, instance), engine.ctx, _refuse)
                except _Failed:
                    engine.cite_cache[key] = None
            fn = engine.cite_cache[key]
            if fn is None:
                continue
            side = canon(fn.rhs if self.reverse else fn.lhs)
            yield from RuleSource(rule, fn, side=side, instance=instance).moves(engine, expr)


@functools.lru_cache(maxsize=4096)
def _symbols(term: Basic) -> frozenset:
    return frozenset(term.atoms(MatrixSymbol))


@functools.lru_cache(maxsize=4096)
def _subterm_set(term: Basic) -> frozenset:
    return frozenset(subterms(term))


@functools.lru_cache(maxsize=4096)
def _node_types(term: Basic) -> frozenset:
    return frozenset(type(node) for node in subterms(term))


def _has_node(term: Basic, kinds: tuple[type, ...]) -> bool:
    """``term`` has a node of one of ``kinds`` (Inverse counts as a power: it subclasses MatPow)."""
    return any(issubclass(kind, wanted) for kind in _node_types(term) for wanted in kinds)


def _safe(results: Iterator) -> Iterator:
    """The rewrites until SymPy refuses to build one (say a block of blocks): the rest are not proposed."""
    try:
        yield from results
    except OutOfTime:
        raise
    except (TermError, ValueError, TypeError):
        return


def _equations_hold(theorem, binding: dict, ctx) -> bool:
    """The cited theorem's equation hypotheses, instantiated, are among the chain's equations (or trivial).

    Only a filter before asking the kernel, which decides (and also checks the predicate hypotheses).
    """
    dims = {v: t for v, t in binding.items() if isinstance(v, Symbol)}
    mats = {v.xreplace(dims): t for v, t in binding.items() if isinstance(v, MatrixSymbol)}
    known = {(a, b) for a, b in ctx.equations} | {(b, a) for a, b in ctx.equations}
    for h in theorem.proof.hypotheses:
        if is_scalar_hypothesis(h):
            if not scalar_hypothesis_holds(h, dims, mats, ctx):
                return False
            continue
        if h.is_predicate:
            continue
        try:
            lhs, rhs = (canon(side.xreplace(dims).xreplace(mats)) for side in (h.lhs, h.rhs))
        except (TermError, ValueError, TypeError):
            return False
        if lhs != rhs and (lhs, rhs) not in known:
            return False
    return True


def _refuse(reason: str):
    raise _Failed(reason)


def _instance(binding: dict) -> tuple:
    """A step's instance from a match: dimensions first, then matrices, each in a fixed order."""
    pairs = [(var, value) for var, value in binding.items() if var != value]
    pairs.sort(key=lambda pair: (not isinstance(pair[0], Symbol), str(pair[0])))
    return tuple(pairs)


def _match(pattern: Basic, term: Basic, variables: set, binding: dict) -> dict | None:
    """Bindings of the pattern's variables (matrix and dimension symbols) that make it ``term``, or None.

    Syntactic, on normal forms; the kernel decides whether the instance is allowed.
    """
    if isinstance(pattern, MatrixSymbol) and pattern in variables:
        if not isinstance(term, MATRIX_NODES):
            return None
        if pattern in binding:
            return binding if binding[pattern] == term else None
        out = _match_shape(pattern, term, variables, binding)
        return None if out is None else {**out, pattern: term}
    if type(pattern) is not type(term):
        return None
    if isinstance(pattern, MatrixSymbol):
        return binding if pattern == term else None
    if isinstance(pattern, (Identity, ZeroMatrix)):
        return _match_shape(pattern, term, variables, binding)
    if isinstance(pattern, MatPow) and not isinstance(pattern, Inverse) and pattern.args[1] != term.args[1]:
        return None
    if isinstance(pattern, MatMul) and factors_of(pattern)[0] != factors_of(term)[0]:
        return None
    if isinstance(pattern, BlockMatrix) and pattern.blockshape != term.blockshape:
        return None
    left, right = children(pattern), children(term)
    if isinstance(pattern, MatAdd):  # a sum matches in any order: its normal-form order depends on the instance
        return _match_sum(left, right, variables, binding)
    if len(left) != len(right):
        return None
    out = binding
    for a, b in zip(left, right, strict=True):
        out = _match(a, b, variables, out)
        if out is None:
            return None
    return out


def _match_sum(patterns: list, terms: list, variables: set, binding: dict) -> dict | None:
    """A sum pattern against a sum: term by term in some order, or — with one bare variable among the
    pattern's terms — the other terms matched and the variable bound to the sum of what is left
    ((A + uvᵀ)⁻¹ against (λI + xxᵀ + XᵀX)⁻¹ binds A to λI + XᵀX)."""
    if len(patterns) == len(terms):
        out = _match_terms(patterns, terms, variables, binding)
        if out is not None:
            return out
    free = [q for q in patterns if isinstance(q, MatrixSymbol) and q in variables and q not in binding]
    if len(free) != 1 or len(terms) <= len(patterns):
        return None
    rest_patterns = [q for q in patterns if q is not free[0]]
    for chosen in itertools.permutations(range(len(terms)), len(rest_patterns)):
        out = _match_terms(rest_patterns, [terms[i] for i in chosen], variables, binding)
        if out is None:
            continue
        leftover = [term for i, term in enumerate(terms) if i not in chosen]
        try:
            return _match(free[0], add(leftover), variables, out)
        except TermError:
            return None
    return None


def _match_terms(patterns: list, terms: list, variables: set, binding: dict) -> dict | None:
    """Bindings that match the patterns to the terms one to one, in some order (backtracking; sums are small)."""
    if not patterns:
        return binding
    first, rest = patterns[0], patterns[1:]
    for i, term in enumerate(terms):
        out = _match(first, term, variables, binding)
        if out is not None:
            out = _match_terms(rest, terms[:i] + terms[i + 1 :], variables, out)
            if out is not None:
                return out
    return None


def _match_shape(pattern: Basic, term: Basic, variables: set, binding: dict) -> dict | None:
    """Bindings that make the pattern's dimensions the term's."""
    out: dict | None = binding
    for dim, value in zip(pattern.shape, term.shape, strict=True):
        out = _match_dim(dim, value, variables, out)
        if out is None:
            return None
    return out


def _match_dim(dim: Basic, value: Basic, variables: set, binding: dict) -> dict | None:
    if isinstance(dim, Symbol) and dim in variables:
        if dim in binding:
            return binding if binding[dim] == value else None
        return {**binding, dim: value}
    return binding if dim.xreplace(binding) == value else None


def _positions(term: Basic, path: tuple = ()) -> Iterator[tuple[tuple, Basic]]:
    yield path, term
    for index, child in enumerate(children(term)):
        yield from _positions(child, (*path, index))


def _replace_at(term: Basic, path: tuple, new: Basic) -> Basic:
    if not path:
        return new
    kids = children(term)
    kids[path[0]] = _replace_at(kids[path[0]], path[1:], new)
    return rebuild(term, kids)


def _subterms_and_runs(term: Basic) -> Iterator[Basic]:
    """Every sub-term and every run of two or more adjacent factors of every product."""
    for node in subterms(term):
        yield node
        if isinstance(node, MatMul):
            _, mats = factors_of(node)
            for i, j in itertools.combinations(range(len(mats) + 1), 2):
                if 2 <= j - i < len(mats):
                    yield mul(mats[i:j])


# --- directed uses of axioms ----------------------------------------------------------------------


def _combine_reduces(matched: Basic, result: Basic) -> bool:
    """power_combine only where it cancels or joins roots (integer powers are kept expanded)."""
    _, mats = factors_of(matched)
    (_, a), (_, b) = exponent_form(mats[0]), exponent_form(mats[1])
    return a.q != 1 or b.q != 1 or (a > 0) != (b > 0)


def _expand_power(node: Basic) -> Basic | None:
    """A^n = A^(n-1) A and A^-n = A^-(n-1) A⁻¹ for integers n ≥ 2 (power_combine read backwards)."""
    if isinstance(node, MatPow) and not isinstance(node, Inverse):
        base, q = node.args[0], node.args[1]
        if q.q == 1 and q >= 2:
            return mul(power(base, q - 1), base)
        if q.q == 1 and q <= -2:
            return mul(power(base, q + 1), inv(base))
    return None


def _monic_denominator(node: Basic) -> Basic | None:
    """(cI + S)⁻¹ = (c(I + S/c))⁻¹ for a literally 1×1 sum with an identity term cI, c ≠ 1 (``distribute`` read
    backwards; ``inverse_product`` then takes 1/c out): scalar denominators are written with the identity's
    coefficient 1, so (γ + xᵀPx)⁻¹ and (1/γ)(1 + xᵀPx/γ)⁻¹ meet (issue 29: recursive least squares with a
    forgetting factor against Sherman–Morrison).  Only 1×1 sums, so matrix resolvents (XᵀX + λI)⁻¹ keep their
    form."""
    if not isinstance(node, Inverse) or not isinstance(node.args[0], MatAdd):
        return None
    total = node.args[0]
    if shape(total) != (1, 1):
        return None
    for i, term in enumerate(total.args):
        coeff, mats = factors_of(term)
        if len(mats) == 1 and isinstance(mats[0], Identity) and coeff != 1:
            rest = [mul(1 / coeff, a) for j, a in enumerate(total.args) if j != i]
            return Inverse(mul(coeff, add(mats[0], *rest)))
    return None


def _directed_axioms() -> list[Source]:
    """The axioms in the order the normaliser tries them: cancellations first, expansions last."""
    plain = ["transpose_transpose", "transpose_zero", "transpose_symmetric", "transpose_product",
             "transpose_sum", "transpose_inverse", "block_transpose", "inverse_inverse", "inverse_identity",
             "inverse_cancel", "identity_mul", "zero_mul", "zero_add", "collect", "block_single", "block_flatten",
             "block_zero",
             "block_identity", "block_inverse_diagonal", "inverse_product", "ones_inner",
             "tril_diagonal", "tril_scalar", "tril_scale", "tril_diag_scale", "tril_sum",
             "kron_identity", "kron_scale", "kron_transpose", "kron_inverse", "kron_mixed", "kron_sum"]
    out: list[Source] = [_Unscalarise()] + [RuleSource(name, AXIOMS[name]) for name in plain]
    out.append(CheckedSource("distribute", _monic_denominator))
    out.append(RuleSource("power_combine", AXIOMS["power_combine"], accept=_combine_reduces))
    out.append(CheckedSource("power_combine", _expand_power))
    out.append(_FactorToCancel())
    out += [RuleSource(name, AXIOMS[name]) for name in ("block_scale", "block_add", "block_multiply", "tril_block",
                                                         "distribute")]
    out.append(RuleSource("block_inverse_schur", AXIOMS["block_inverse_schur"], accept=_not_block_diagonal))
    return out


def _not_block_diagonal(matched: Basic, result: Basic) -> bool:
    """The Schur-complement inverse, directed, only where ``block_inverse_diagonal`` does not apply (issue 29)."""
    grid = matched.args[0] if isinstance(matched, Inverse) else None
    return isinstance(grid, BlockMatrix) and any(not isinstance(b, ZeroMatrix) for b in (grid.blocks[0, 1],
                                                                                         grid.blocks[1, 0]))


def _all_axioms() -> list[Source]:
    return [RuleSource(name, fn) for name, fn in AXIOMS.items()] + [CheckedSource("power_combine", _expand_power)]


# --- equations and their orientation --------------------------------------------------------------


@dataclass(frozen=True)
class Equation:
    """A rule that is an equation: ``lhs`` rewrites to ``rhs`` in the chosen orientation."""

    name: str
    lhs: Basic
    rhs: Basic
    definition: bool = False

    def flipped(self) -> Equation:
        return Equation(self.name, self.rhs, self.lhs, self.definition)

    def source(self) -> RuleSource:
        return RuleSource(self.name, equation_rule(self.lhs, self.rhs), side=self.lhs)


def _oriented(name: str, lhs: Basic, rhs: Basic) -> Equation:
    """Definitions unfold and lemmas run as proved; other equations go towards I or 0, else eliminate a symbol
    that the other side does not hold, else run as written."""
    if name.startswith("def:"):
        return Equation(name, lhs, rhs, definition=True)
    if name.startswith("lemma:"):
        return Equation(name, lhs, rhs)
    for a, b in ((lhs, rhs), (rhs, lhs)):
        if isinstance(b, (Identity, ZeroMatrix)) and not isinstance(a, (Identity, ZeroMatrix)):
            return Equation(name, a, b)
    for a, b in ((lhs, rhs), (rhs, lhs)):
        if isinstance(a, MatrixSymbol) and a not in b.atoms(MatrixSymbol):
            return Equation(name, a, b)
    return Equation(name, lhs, rhs)


# --- the engine -----------------------------------------------------------------------------------


class Engine:
    """Normalises and searches in one chain's context, proving small lemmas on the way when needed."""

    def __init__(self, chain, limit: int, guard: float | None = None):
        # ``limit``: the count of this thread's work meter (work.current().used) where the search stops;
        # ``guard``: a time.monotonic() value past which it is interrupted (None: no clock is ever read)
        self.chain, self.ctx, self.limit, self.guard = chain, chain.ctx, limit, guard
        for theorem in chain.builder.cites:  # cited after this chain was opened
            self.ctx.citations.setdefault(theorem.id, theorem)
        equations = [
            _oriented(name, canon(lhs), canon(rhs))
            for name, (lhs, rhs, bound) in ((n, _plain(e)) for n, e in self.ctx.rules.items())
            if lhs is not None and not bound and canon(lhs) != canon(rhs)
        ]
        # lemmas in an order of their own (by what they say), so the result does not depend on the order in
        # which earlier chains proved them; hypotheses and definitions keep the statement's order
        lemmas = sorted((e for e in equations if e.name.startswith("lemma:")),
                        key=lambda e: (default_sort_key(e.lhs), default_sort_key(e.rhs)))
        self.equations = [e for e in equations if not e.name.startswith("lemma:")] + lemmas
        self.flips: set[str] = set()
        self.goal: set | None = None  # symbols the other side speaks about (see sources)
        self.goal_all = False  # defer lemmas off the goal too, not only hypotheses
        self.inverse_lemmas: dict[Basic, tuple[str, Basic]] = {}  # M -> (lemma, N) with M⁻¹ = N
        self.argument_lemma: dict[Basic, tuple[str, Basic] | None] = {}  # A -> (lemma, nf(A)), or None
        self.refused_inverses: set[Basic] = set()
        self.defined_memo: dict = {}
        self.best: tuple | None = None  # the first pair of normal forms, for the error message
        self.cite_cache: dict = {}
        self.zero_lemmas: dict[Basic, str | None] = {}
        self.tried: list[str] = []  # what was tried, for the message when nothing works
        self.nesting = MAX_BLOCK_NESTING  # block nesting a held term may have (see admissible)
        self.allow(*(side for e in self.equations for side in (e.lhs, e.rhs)))

    # -- bookkeeping
    def tick(self) -> None:
        if work.current().used > self.limit:
            raise OutOfTime("auto ran past its work budget")
        if self.guard is not None and time.monotonic() > self.guard:
            raise _GuardFired()

    def allow(self, *terms: Basic) -> None:
        """The terms the search starts from (sides, equations) may nest blocks as deep as they do."""
        self.nesting = max([self.nesting] + [block_nesting(t) for t in terms])

    def admissible(self, term: Basic) -> bool:
        """A term the search may hold and ask SymPy about: blocks nested at most ``nesting`` deep and the kernel's
        bound on shape doubling (:data:`MAX_SHAPE_DOUBLING`).  Both are counted on the term's nodes, before any
        shape is asked, so a refused candidate costs only its construction (issue 41)."""
        return block_nesting(term) <= self.nesting and _shape_doubling(term) <= MAX_SHAPE_DOUBLING

    def defined(self, term: Basic) -> bool:
        """``term`` is admissible and the kernel shows it defined (remembered): every term the search keeps."""
        if not self.admissible(term):
            return False
        key = (term, len(self.ctx.equations))
        if key not in self.defined_memo:
            try:
                check_defined(term, self.ctx)
                self.defined_memo[key] = True
            except OutOfTime:
                raise
            except TermError:
                self.defined_memo[key] = False
        return self.defined_memo[key]

    def sources(self) -> list[Source]:
        """In order of preference: cited theorems and lemmas (big steps), hypotheses, the axioms, and only then
        definitions, the latest first (so a chain meets the other side before unfolding everything).

        Equations that would bring in only symbols the other side does not speak about (``goal``) wait until
        nothing else applies: with two factorisations of X, the one the other side uses goes first.
        """
        hidden = getattr(self.chain.builder, "_hidden_lemmas", frozenset())  # see _without_lemmas
        eqs = [e.flipped() if e.name in self.flips else e for e in self.equations if e.name not in hidden]
        deferred = [e for e in eqs if self.goal is not None and _off_goal(e, self.goal)
                    and (self.goal_all or not e.name.startswith(("lemma:", "def:")))]
        eqs = [e for e in eqs if e not in deferred]
        cited = [CitedSource(t) for t in self.ctx.citations.values() if not _binds(t)]
        lemmas = [e.source() for e in eqs if e.name.startswith("lemma:")]
        # β₀ := 0, and block weights (W_Q := [[Γ], [0]]): unfolded early, so block products meet blocks
        constant = [e for e in eqs if e.definition and isinstance(e.rhs, (Identity, ZeroMatrix, BlockMatrix))]
        hypotheses = [e.source() for e in eqs if not e.name.startswith(("lemma:", "def:"))] + [
            e.source() for e in constant]
        definitions = [e.source() for e in reversed(eqs) if e.name.startswith("def:") and e not in constant]
        hypotheses += _scalar_hypotheses(self.ctx)
        return (cited + lemmas + hypotheses + [_TransposedZero()] + _directed_axioms() + definitions
                + [e.source() for e in deferred] + [_UnfoldFamilies(), _InverseTactic()])

    def goal_of(self, term: Basic) -> set:
        """The matrix symbols of ``term`` and of the definitions of its symbols, transitively."""
        definitions = {e.lhs: e.rhs for e in self.equations if e.definition}
        out: set = set()
        todo = list(term.atoms(MatrixSymbol))
        while todo:
            symbol = todo.pop()
            if symbol not in out:
                out.add(symbol)
                if symbol in definitions:
                    todo += list(definitions[symbol].atoms(MatrixSymbol))
        return out

    def add_equation(self, name: str, lhs: Basic, rhs: Basic) -> None:
        """A lemma proved on the way: a rule of this chain, oriented as proved, and an equation for the judgments."""
        self.ctx.rules[f"lemma:{name}"] = (lhs, rhs, ())
        self.ctx.equations.append((lhs, rhs))
        self.ctx.memo.clear()
        self.equations.append(Equation(f"lemma:{name}", lhs, rhs))

    # -- normalisation
    def first_move(self, expr: Basic, sources: list[Source], seen: set) -> Move | None:
        for source in sources:
            for move in source.moves(self, expr):
                self.tick()
                if move.expr != expr and move.expr not in seen and self.defined(move.expr):
                    return move
        return None

    def normalise(self, expr: Basic, stop: dict | None = None) -> tuple[Basic, list[Move]]:
        """Apply directed moves until none applies, or until reaching a term of ``stop``."""
        steps: list[Move] = []
        seen = {expr}
        bound = 4 * size(expr) + 60  # a runaway orientation stops here
        while len(steps) < MAX_STEPS and size(expr) <= bound and not (stop and expr in stop):
            move = self.first_move(expr, self.sources(), seen)
            if move is None:
                break
            for step in move.steps or (move,):
                steps.append(step)
                seen.add(step.expr)
            expr = move.expr
        return expr, steps

    # -- lemmas proved on the way
    def argument_lemmas(self, expr: Basic) -> list[Move]:
        """Inverses and powers whose argument normalises to something else: a lemma arg = nf(arg), and the
        argument rewritten in one step.  This is what the chain cannot do in place when an intermediate
        inverse is not defined, say (XᵀX)⁻¹ before the lemma XᵀX = RᵀR shows XᵀX invertible."""
        moves: list[Move] = []
        for node in list(subterms(expr)):
            if not isinstance(node, (Inverse, MatPow)) or isinstance(node.args[0], MatrixSymbol):
                continue
            arg = node.args[0]
            if arg not in self.argument_lemma:
                self.argument_lemma[arg] = self.prove_lemma(arg)
            lemma = self.argument_lemma[arg]
            if lemma is None:
                continue
            rule = RuleSource(f"lemma:{lemma[0]}", equation_rule(arg, lemma[1]), side=arg)
            move = self.first_move(expr, [rule], {expr})
            if move is not None:
                moves.append(move)
                expr = move.expr
        return moves

    def _known(self, lhs: Basic) -> tuple[str, Basic] | None:
        """A lemma of this proof (say one an earlier chain's automation proved) rewriting ``lhs``."""
        for rule, (a, b, bound) in ((n, _plain(e)) for n, e in self.ctx.rules.items()):
            if rule.startswith("lemma:") and not bound and a == lhs:
                return rule[6:], b
        return None

    def prove_lemma(self, lhs: Basic) -> tuple[str, Basic] | None:
        known = self._known(lhs)
        if known is not None:
            return known
        chain = self.chain.builder.lemma(self._fresh_name(), lhs)
        sub = Engine(chain, self.limit, self.guard)
        sub.flips, sub.goal = set(self.flips), self.goal
        sub.allow(lhs)
        sub.nesting = max(sub.nesting, self.nesting)
        nf, steps = sub.normalise(lhs)
        if nf == lhs or not steps or _refused_step(chain, steps) is not None:
            return None
        for move in steps:
            chain._record(move.expr, move.rule, move.instance)
        chain.qed()
        self.add_equation(chain.name, lhs, nf)
        return chain.name, nf

    def transposed_zero_lemma(self, flipped: Basic, product: Basic, zero: Basic, rule: str) -> str | None:
        """A lemma flipped = 0 from the hypothesis ``rule``: product = 0, where flipped is productᵀ written with
        the transposes pushed in: flipped = (factors' transposes restored) = productᵀ = 0ᵀ = 0."""
        if flipped in self.zero_lemmas:
            return self.zero_lemmas[flipped]
        self.zero_lemmas[flipped] = None
        chain = self.chain.builder.lemma(self._fresh_name("transposed_zero"), flipped)
        try:
            _, mats = factors_of(flipped)
            current = list(mats)
            for i, m in enumerate(mats):  # G (from Gᵀ in the product) back to (Gᵀ)ᵀ
                if not isinstance(m, Transpose):
                    current[i] = Transpose(Transpose(m))
                    chain.to(mul(current), "transpose_transpose")
            chain.to(Transpose(product), "transpose_product")
            chain.rw(rule, at=product)
            chain.rw("transpose_zero")
            if chain.current != ZeroMatrix(*shape(flipped)):
                return None
            chain.qed()
        except (ProofError, TermError):
            return None
        self.add_equation(chain.name, flipped, chain.current)
        self.zero_lemmas[flipped] = chain.name
        return chain.name

    def inverse_lemma(self, m: Basic) -> tuple[str, Basic] | None:
        """A lemma M⁻¹ = N from an equation M N = I or N M = I of the theorem (M square): M⁻¹ = M⁻¹(M N) = N."""
        if m in self.inverse_lemmas or m in self.refused_inverses:
            return self.inverse_lemmas.get(m)
        self.refused_inverses.add(m)
        known = self._known(inv(m))
        if known is not None and not known[1].has(inv(m)):
            self.inverse_lemmas[m] = known
            self.equations.append(Equation(f"lemma:{known[0]}", inv(m), known[1]))
            return known
        for rule, (lhs, rhs, bound) in [(n, _plain(e)) for n, e in self.ctx.rules.items()]:
            if lhs is None or bound:
                continue
            for product, unit in ((canon(lhs), canon(rhs)), (canon(rhs), canon(lhs))):
                if not isinstance(unit, Identity) or not isinstance(product, MatMul) or factors_of(product)[0] != 1:
                    continue
                mats = factors_of(product)[1]
                for k in range(1, len(mats)):
                    for mine, other, m_first in ((mats[:k], mats[k:], True), (mats[k:], mats[:k], False)):
                        if mul(mine) != m:
                            continue
                        try:
                            name = self._prove_inverse(m, mul(other), unit, rule, m_first)
                        except (ProofError, TermError):
                            continue
                        self.inverse_lemmas[m] = (name, mul(other))
                        self.add_equation(name, inv(m), mul(other))
                        return self.inverse_lemmas[m]
        return None

    def _prove_inverse(self, m: Basic, other: Basic, unit: Basic, rule: str, m_first: bool) -> str:
        chain = self.chain.builder.lemma(self._fresh_name(_inverse_name(m)), inv(m))
        if rule not in chain.ctx.rules:
            raise TermError("the equation is local to this chain")
        if m_first:  # M⁻¹ = M⁻¹ I = M⁻¹ (M N) = I N = N
            chain.to(mul(inv(m), unit), "identity_mul").rw(rule, at=unit)
            chain.rw("inverse_cancel", at=mul(inv(m), m)).rw("identity_mul")
        else:  # M⁻¹ = I M⁻¹ = (N M) M⁻¹ = N I = N
            chain.to(mul(unit, inv(m)), "identity_mul").rw(rule, at=unit)
            chain.rw("inverse_cancel", at=mul(m, inv(m))).rw("identity_mul")
        if chain.current != canon(other):
            raise TermError("the one-sided inverse did not come out")
        chain.qed()
        return chain.name

    def _fresh_name(self, stem: str | None = None) -> str:
        """``stem`` if free, else the chain's name (or ``stem``) with the first free number."""
        taken = {c.name for c in self.chain.builder.lemmas} | {self.chain.name}
        taken |= {name.split(":", 1)[1] for name in self.ctx.rules}
        if stem is not None and stem not in taken:
            return stem
        stem = stem or self.chain.name
        return next(f"{stem}_{i}" for i in itertools.count(1) if f"{stem}_{i}" not in taken)

    # -- the fallback search
    def search(self, left: Basic, right: Basic, max_terms: int = MAX_SEARCH_TERMS) -> list[Move] | None:
        """Breadth-first from both ends until they meet: the moves from ``left`` to ``right`` (a shortest
        chain), or None once ``max_terms`` terms are visited."""
        cited = [t for t in self.ctx.citations.values() if not _binds(t)]
        sources = ([e.source() for e in self.equations] + [e.flipped().source() for e in self.equations]
                   + [CitedSource(t) for t in cited] + [CitedSource(t, reverse=True) for t in cited]
                   + _all_axioms())
        limit = max(size(left), size(right)) + SEARCH_SIZE_SLACK
        parents: list[dict] = [{left: None}, {right: None}]
        frontiers = [[left], [right]]
        while frontiers[0] or frontiers[1]:
            side = 0 if frontiers[0] and (len(frontiers[0]) <= len(frontiers[1]) or not frontiers[1]) else 1
            next_frontier = []
            for expr in frontiers[side]:
                for source in sources:
                    for move in source.moves(self, expr):
                        self.tick()
                        if move.expr in parents[side] or size(move.expr) > limit or not self.defined(move.expr):
                            continue
                        parents[side][move.expr] = (expr, move)
                        if len(parents[0]) + len(parents[1]) > max_terms:
                            return None
                        if move.expr in parents[1 - side]:
                            return _join(parents, move.expr)
                        next_frontier.append(move.expr)
            frontiers[side] = next_frontier
        return None


class _Unscalarise(Source):
    """A 1×1 matrix read as a scalar, tr(m), back into its product where it conforms (``scalar_matrix``
    read backwards): −tr(s)·A⁻¹u vᵀA⁻¹ becomes −A⁻¹u s vᵀA⁻¹, where matrix algebra can work on s."""

    def moves(self, engine: Engine, expr: Basic) -> Iterator[Move]:
        for path, node in _positions(expr):
            if not isinstance(node, MatMul):
                continue
            coeff, mats = factors_of(node)
            for atom in sorted(coeff.atoms(Trace), key=default_sort_key):
                matrix = atom.args[0]
                try:
                    rest = canon_coefficient(coeff / atom, canon)
                except (TermError, ValueError):
                    continue
                if atom in rest.atoms(Trace) or atom in rest.free_symbols:
                    continue
                for i in range(len(mats) + 1):
                    left = i == 0 or _literal_one(shape(mats[i - 1])[1])
                    right = i == len(mats) or _literal_one(shape(mats[i])[0])
                    if not (left and right) or (i == 0 and not _literal_one(shape(mats[0])[0])) or (
                            i == len(mats) and not _literal_one(shape(mats[-1])[1])):
                        continue
                    try:
                        new = MatMul(*([rest] if rest != 1 else []), *mats[:i], matrix, *mats[i:], evaluate=False)
                        candidate = canon(_replace_at(expr, path, new))
                    except (TermError, ValueError, TypeError):
                        continue
                    if one_step(expr, candidate, AXIOMS["scalar_matrix"], engine.ctx):
                        yield Move(candidate, "scalar_matrix")
                        return


def _literal_one(dim) -> bool:
    return dim == 1 and dim.is_Integer


class _FactorToCancel(Source):
    """A group of terms of a sum that factors as c·L·K·K⁻¹·R (or c·L·K⁻¹·K·R), rewritten so: the reverse of
    distribution, taken only where it makes an inverse cancel (so it cannot undo ``distribute`` forever).

    (A + uvᵀ)(A⁻¹ − A⁻¹u s vᵀA⁻¹) distributes to I + uvᵀA⁻¹ − u s vᵀA⁻¹ − u vᵀA⁻¹u s vᵀA⁻¹ with
    s = (1 + vᵀA⁻¹u)⁻¹; the last two terms are −u (1 + vᵀA⁻¹u) s vᵀA⁻¹ = −u vᵀA⁻¹.  Terms missing the middle
    factor get an identity first (``identity_mul``), then one ``distribute`` read backwards makes K K⁻¹.
    """

    def moves(self, engine: Engine, expr: Basic) -> Iterator[Move]:
        for path, node in _positions(expr):
            if isinstance(node, MatAdd) and _has_node(node, (Inverse,)):
                move = _factor_group(engine, expr, path, node)
                if move is not None:
                    yield move
                    return


def _factor_group(engine: Engine, expr: Basic, path: tuple, total: MatAdd) -> Move | None:
    terms = [factors_of(t) for t in total.args]
    for side in ("left", "right"):
        for _, mats in terms:
            for j, factor in enumerate(mats):
                if not (isinstance(factor, Inverse) and isinstance(factor.args[0], MatAdd)):
                    continue
                group = _cancelling_group(terms, factor, mats[j + 1 :] if side == "left" else mats[:j], side)
                if group is not None:
                    move = _group_moves(engine, expr, path, total, group, factor, side)
                    if move is not None:
                        return move
    return None


def _cancelling_group(terms: list, inverse: Basic, fixed: list, side: str):
    """Members (term index, coefficient, varying part, inserted factor) whose varying parts sum to c·K next to
    K⁻¹, with the common run ``outer`` beyond them: (members, c, outer, fixed), or None.

    A term one factor Z short of the outer run joins with Z Z⁻¹ inserted (varying part Z⁻¹) when K has a term
    Z⁻¹: in Woodbury, −U S⁻¹VA⁻¹ − UCVA⁻¹U S⁻¹VA⁻¹ with S = C⁻¹ + VA⁻¹U is −UC(C⁻¹ + VA⁻¹U)S⁻¹VA⁻¹.
    """
    K = inverse.args[0]
    wanted = {}
    for coeff, mats in (factors_of(t) for t in K.args):
        wanted[mul(mats)] = coeff
    candidates = []
    for index, (coeff, mats) in enumerate(terms):
        for j, factor in enumerate(mats):
            if factor != inverse:
                continue
            if side == "left" and list(mats[j + 1 :]) == list(fixed):
                candidates.append((index, coeff, list(mats[:j])))
            elif side == "right" and list(mats[:j]) == list(fixed):
                candidates.append((index, coeff, list(mats[j + 1 :])))
    if len(candidates) < len(K.args):
        return None
    identity = Identity(shape(K)[0])
    longest = min(len(parts) for _, _, parts in candidates)
    for outer_length in range(longest, -1, -1):  # outer runs the first candidate ends with, nothing inserted
        first = candidates[0][2]
        outer = first[:outer_length] if side == "left" else first[len(first) - outer_length :]
        found = _group_for(candidates, wanted, outer, side, identity, insert=False)
        if found is not None:
            return found[0], found[1], outer, fixed
    tried = set()  # then one factor longer than some term, which gets Z Z⁻¹
    for outer_length in range(max(len(parts) for _, _, parts in candidates), 0, -1):
        for _, _, first in candidates:
            if len(first) < outer_length:
                continue
            outer = first[:outer_length] if side == "left" else first[len(first) - outer_length :]
            if tuple(outer) in tried:
                continue
            tried.add(tuple(outer))
            found = _group_for(candidates, wanted, outer, side, identity, insert=True)
            if found is not None:
                return found[0], found[1], outer, fixed
    return None


def _group_for(candidates: list, wanted: dict, outer: list, side: str, identity: Basic, insert: bool):
    """(members, ratio) of the candidates that share ``outer`` and cover every term of K, or None."""
    outer_length = len(outer)
    members, ratio, covered = [], None, []
    for index, coeff, parts in candidates:
        inserted = None
        mine = parts[:outer_length] if side == "left" else parts[len(parts) - outer_length :]
        if mine == outer:
            varying = parts[outer_length:] if side == "left" else parts[: len(parts) - outer_length]
            key = mul(varying) if varying else identity
        elif insert and outer_length and len(parts) == outer_length - 1 and (
                parts == (outer[:-1] if side == "left" else outer[1:])):
            inserted = outer[-1] if side == "left" else outer[0]
            if not _square(inserted):
                continue
            varying = [inv(inserted)]
            key = canon(inv(inserted))
        else:
            continue
        if key not in wanted or key in covered:
            continue
        try:
            this = canon_coefficient(coeff / wanted[key], canon)
        except (TermError, ValueError, ZeroDivisionError):
            continue
        if ratio is None:
            ratio = this
        if this != ratio:
            continue
        members.append((index, coeff, varying, inserted))
        covered.append(key)
    if len(covered) == len(wanted):
        return members, ratio
    return None


def _square(term: Basic) -> bool:
    rows, cols = shape(term)
    return rows == cols


def _group_moves(engine: Engine, expr: Basic, path: tuple, total: MatAdd, group, inverse: Basic,
                 side: str) -> Move | None:
    members, ratio, outer, fixed = group
    K = inverse.args[0]
    args = list(total.args)
    steps: list[Move] = []
    current = expr
    for index, coeff, varying, inserted in members:  # an identity where the varying part is empty, or Z Z⁻¹
        if varying and inserted is None:
            continue
        size_of = shape(K)[0] if inserted is None else shape(inserted)[0]
        identity = Identity(size_of)
        short = outer if inserted is None else (outer[:-1] if side == "left" else outer[1:])
        stages = [([identity], "identity_mul")]
        if inserted is not None:
            stages.append(([inserted, inv(inserted)] if side == "left" else [inv(inserted), inserted],
                           "inverse_cancel"))
        for middle, rule in stages:
            parts = [*short, *middle, inverse, *fixed] if side == "left" else [*fixed, inverse, *middle, *short]
            args[index] = mul(coeff, parts)
            try:
                after = canon(_replace_at(expr, path, add(args)))
            except TermError:
                return None
            if after == current or not engine.defined(after) or not one_step(current, after, AXIOMS[rule],
                                                                              engine.ctx):
                return None
            steps.append(Move(after, rule))
            current = after
    taken = {index for index, _, _, _ in members}
    rest = [a for i, a in enumerate(args) if i not in taken]
    factored = mul(ratio, [*outer, K, inverse, *fixed] if side == "left" else [*fixed, inverse, K, *outer])
    try:
        after = canon(_replace_at(expr, path, add(rest, factored) if rest else factored))
    except TermError:
        return None
    if not one_step(current, after, AXIOMS["distribute"], engine.ctx) or not engine.defined(after):
        return None
    steps.append(Move(after, "distribute"))
    return Move(after, "distribute", steps=tuple(steps))


class _TransposedZero(Source):
    """A product whose transpose a hypothesis equates to zero (X₂ᵀX₁ from X₁ᵀX₂ = 0): a lemma proved on the
    spot (the product is (X₁ᵀX₂)ᵀ = 0ᵀ = 0), then the rewrite."""

    def moves(self, engine: Engine, expr: Basic) -> Iterator[Move]:
        for rule, (lhs, rhs, bound) in [(n, _plain(e)) for n, e in engine.ctx.rules.items()]:
            if lhs is None or bound or not rule.startswith("hyp:"):
                continue
            for product, zero in ((canon(lhs), canon(rhs)), (canon(rhs), canon(lhs))):
                if not isinstance(zero, ZeroMatrix) or not isinstance(product, MatMul):
                    continue
                coeff, mats = factors_of(product)
                if coeff != 1:
                    continue
                flipped = mul([m.args[0] if isinstance(m, Transpose) else Transpose(m) for m in reversed(mats)])
                if flipped == product or flipped not in set(_subterms_and_runs(expr)):
                    continue
                lemma = engine.transposed_zero_lemma(flipped, product, zero, rule)
                if lemma is not None:
                    yield from RuleSource(f"lemma:{lemma}", equation_rule(flipped, ZeroMatrix(*shape(flipped))),
                                          side=flipped).moves(engine, expr)


class _UnfoldFamilies(Source):
    """Members of recurrences unfolded: F[0] by ``base:F``, F[e + 1] by ``step:F`` at e (like definitions)."""

    def moves(self, engine: Engine, expr: Basic) -> Iterator[Move]:
        for node in sorted(expr.atoms(FamilyMatrix), key=default_sort_key, reverse=True):
            family = engine.ctx.families.get(node.name)
            if family is None or not family.is_defined:
                continue
            if node.index == 0:
                rule, instance = f"base:{node.name}", ()
            else:
                try:
                    require_index(node.index - 1)
                except TermError:
                    continue
                rule, instance = f"step:{node.name}", ((family.index, node.index - 1),)
            try:
                fn = resolve_rule(Step(expr, rule, instance), engine.ctx, _refuse)
            except _Failed:
                continue
            yield from RuleSource(rule, fn, side=canon(fn.lhs), instance=instance).moves(engine, expr)


class _InverseTactic(Source):
    """Inverses with a one-sided inverse among the equations: M⁻¹ → N by a lemma proved on the spot."""

    def moves(self, engine: Engine, expr: Basic) -> Iterator[Move]:
        for node in list(subterms(expr)):
            if isinstance(node, Inverse) and node.args[0] not in engine.inverse_lemmas:
                lemma = engine.inverse_lemma(node.args[0])
                if lemma is not None:
                    yield from RuleSource(f"lemma:{lemma[0]}", equation_rule(node, lemma[1]), side=node).moves(
                        engine, expr)


def _inverse_name(m: Basic) -> str | None:
    """``V_inverse`` for V⁻¹, ``V_transpose_inverse`` for (Vᵀ)⁻¹; None for anything else."""
    if isinstance(m, MatrixSymbol):
        return f"{m.name}_inverse"
    if isinstance(m, Transpose) and isinstance(m.args[0], MatrixSymbol):
        return f"{m.args[0].name}_transpose_inverse"
    return None


def _off_goal(equation: Equation, goal: set) -> bool:
    """The equation brings in symbols, none of which the goal speaks about."""
    new = equation.rhs.atoms(MatrixSymbol) - equation.lhs.atoms(MatrixSymbol)
    return bool(new) and not new & goal


def _plain(entry: tuple) -> tuple:
    """(lhs, rhs, bound variables) of a rule entry; an induction lemma (whose variable may stand for itself) is
    used as a plain equation."""
    lhs, rhs, bound = entry[:3]
    return (lhs, rhs, ()) if len(entry) > 3 and entry[3] else (lhs, rhs, bound)


def _binds(theorem) -> bool:
    return any(h.forall for h in theorem.proof.hypotheses)


def _join(parents: list[dict], meet: Basic) -> list[Move]:
    """The moves from the left start to ``meet``, then from ``meet`` back to the right start."""
    forward: list[Move] = []
    node = meet
    while parents[0][node] is not None:
        before, move = parents[0][node]
        forward.append(move)
        node = before
    forward.reverse()
    node = meet
    while parents[1][node] is not None:
        before, move = parents[1][node]
        forward.append(Move(before, move.rule, move.instance))  # the same rule, read backwards
        node = before
    return forward


def _reverse(start: Basic, steps: list[Move]) -> list[Move]:
    """Moves ``start → e1 → … → ek`` read from ``ek`` back to ``start`` (each rule works both ways)."""
    exprs = [start] + [m.expr for m in steps]
    return [Move(exprs[i - 1], steps[i - 1].rule, steps[i - 1].instance) for i in range(len(steps), 0, -1)]


def first_difference(a: Basic, b: Basic) -> tuple[Basic, Basic]:
    """The outermost sub-terms where two terms first differ (left to right)."""
    if type(a) is not type(b) or isinstance(a, (MatrixSymbol, Identity, ZeroMatrix)):
        return a, b
    left, right = children(a), children(b)
    if len(left) != len(right) or (isinstance(a, MatMul) and factors_of(a)[0] != factors_of(b)[0]):
        return a, b
    if isinstance(a, MatPow) and not isinstance(a, Inverse) and a.args[1] != b.args[1]:
        return a, b
    for x, y in zip(left, right, strict=True):
        if x != y:
            return first_difference(x, y)
    return a, b


def normal_form(chain, expr: Basic, budget: int | None = None) -> Basic:
    """The normal form the directed normaliser gives ``expr`` in ``chain``'s context (no lemmas recorded), within
    ``budget`` units of work (default: :func:`default_budget` of ``expr`` to itself)."""
    budget = _positive_units(budget, "budget") or default_budget(chain, expr)
    engine = Engine(chain, work.current().used + budget)
    start = canon(expr)
    engine.allow(start)
    return engine.normalise(start)[0]


def _positive_units(value, name: str) -> int | None:
    """``value`` as a budget in units of work: None, or a positive whole number (else ValueError naming it)."""
    if value is None:
        return None
    if type(value) is not int or value <= 0:
        raise ValueError(f"{name} must be a positive whole number of work units, not {value!r}")
    return value


# --- closing a chain --------------------------------------------------------------------------------


#: The most normal forms one search remembers (see :func:`_remembering`); past it the memo starts afresh.
MAX_REMEMBERED = 200_000


@contextlib.contextmanager
def _remembering():
    """Let the kernel's ``canon`` remember normal forms for the length of one search, as it does inside a check.

    A remembered normal form charges again the units it cost (:func:`derive.kernel.terms.canon`), so the work
    counted, and with it every verdict, is what it was without the memo; only the time changes.  The search
    rebuilds and re-normalises the same sub-terms at every position it tries, and SymPy recomputes their shapes
    each time (issue 41: a Kalman covariance form spent 55 s of CPU in its 6.7 million units; 5 s with the memo).
    """
    meter = work.current()
    if meter.memo is not None:  # inside a check, or an outer search: its memo serves
        yield
        return
    meter.memo = _BoundedMemo()
    try:
        yield
    finally:
        meter.memo = None


class _BoundedMemo(dict):
    """A dict that starts afresh past :data:`MAX_REMEMBERED` entries (memory stays bounded; counts unchanged)."""

    def __setitem__(self, key, value) -> None:
        if len(self) >= MAX_REMEMBERED:
            self.clear()
        super().__setitem__(key, value)


def close(chain, rhs: Basic, timeout: float | None = None, both_ways: bool = True, budget: int | None = None):
    """Find steps from ``chain.current`` to ``rhs``, record them, and close the chain (see the module doc).

    ``budget`` (units of kernel work; default :func:`default_budget`) bounds the whole search, both ways and
    the lemmas it proves on the way: past it, "no chain found within the work budget of N units", at the same
    point on any machine.  ``timeout`` (seconds, optional) is only an outer wall-clock guard: when it fires the
    search stops with :class:`AutoInterrupted` ("interrupted"), which is no verdict on the statement.

    When the search from the left side finds nothing (within the budget), the search from the right side runs
    in the budget left and its chain is read backwards, so that A = B is proved exactly when B = A is
    (``both_ways``; the lemmas the automation proves for itself search one way only).
    """
    if timeout is not None and (not isinstance(timeout, (int, float)) or isinstance(timeout, bool)
                                or not 0 < timeout < float("inf")):
        raise ValueError(f"timeout must be None or a positive number of seconds, not {timeout!r}")
    budget = _positive_units(budget, "budget")
    try:
        target = canon(rhs)
    except TermError as exc:
        chain._fail(f"auto: the right-hand side is not a matrix term: {exc}", "auto")
    budget = budget or default_budget(chain, target)
    guard = None if timeout is None else time.monotonic() + timeout
    snapshot = _snapshot(chain)
    try:
        with _remembering():
            return _close(chain, target, work.current().used + budget, guard, both_ways, snapshot, budget)
    except _GuardFired:
        _restore(chain, snapshot)
        raise AutoInterrupted(chain.builder.theorem, chain.name, len(chain.steps) + 1, "auto",
                              f"auto: interrupted: the search for a chain to {_show(target)} ran past its "
                              f"wall-clock guard of {timeout:g} s; not searched to the end, so this is no "
                              f"verdict (the work budget is {budget} units)") from None


def _close(chain, target: Basic, limit: int, guard: float | None, both_ways: bool, snapshot: tuple, units: int):
    """:func:`close` once its arguments are checked: the search stops where the work meter passes ``limit``
    (``units`` is the budget that gave it, for the message)."""
    engine = Engine(chain, limit, guard)
    saved_deadline = chain.ctx.deadline
    chain.ctx.deadline = engine.limit
    try:
        moves = _find(engine, chain.current, target)
    except OutOfTime:
        known = "" if engine.best is None else f": {_differ(engine.best[0], engine.best[1])}"
        _restore(chain, snapshot)  # the lemmas of a search cut short are dropped (and judgments cut short with it)
        chain._fail(f"auto found no chain to {_show(target)} within the work budget of "
                    f"{units} units{known}", "auto")
    except ProofError as forward:
        if not both_ways:
            raise
        try:
            moves = _backwards(chain, target, engine.limit, guard, snapshot, forward)
        except ProofError:
            moves = _without_lemmas(chain, target, engine.limit, guard, snapshot, forward)
    finally:
        chain.ctx.deadline = saved_deadline
    moves = _validated(engine, chain, moves, target)
    for move in moves:
        chain._record(move.expr, move.rule, move.instance)
    return chain.qed(target)


def _snapshot(chain) -> tuple:
    """What a failed search may have added: the proof's lemmas and the chain's rules and equations."""
    builder = chain.builder
    return (list(builder.lemmas), dict(builder.lemma_rules), dict(chain.ctx.rules), list(chain.ctx.equations))


def _restore(chain, snapshot: tuple) -> None:
    builder = chain.builder
    lemmas, lemma_rules, rules, equations = snapshot
    builder.lemmas[:] = lemmas
    builder.lemma_rules.clear()
    builder.lemma_rules.update(lemma_rules)
    chain.ctx.rules.clear()
    chain.ctx.rules.update(rules)
    chain.ctx.equations[:] = equations
    chain.ctx.memo.clear()


def _backwards(chain, target: Basic, limit: int, guard: float | None, snapshot: tuple,
               forward: ProofError) -> list[Move]:
    """The moves from ``chain.current`` to ``target`` found by searching from ``target``, read backwards; the
    forward search's error (re-raised) when this finds nothing either.  Lemmas of the failed forward search
    are dropped first."""
    _restore(chain, snapshot)
    start = chain.current
    engine = Engine(chain, limit, guard)
    chain.ctx.deadline = limit
    try:
        moves = _find(engine, target, start)
    except (OutOfTime, ProofError):
        _restore(chain, snapshot)
        chain.ctx.memo.clear()
        raise forward from None
    return _reverse(target, moves)


def _without_lemmas(chain, target: Basic, limit: int, guard: float | None, snapshot: tuple,
                    forward: ProofError) -> list[Move]:
    """The search once more, in the budget left, with the proof's earlier lemmas kept for the judgments but not
    used as rewrites; ``forward`` (re-raised) when there are none or this finds nothing either.

    A lemma is a big step the search prefers, and it can lead away: with the Sherman–Morrison downdate as a
    lemma, the leave-one-out coefficients' left side was expanded before the inverse could be cleared by
    multiplying through, and the claim that ``.auto`` proves without the lemma failed with it (issue 41)."""
    _restore(chain, snapshot)
    builder = chain.builder
    hidden = frozenset(name for name in chain.ctx.rules if name.startswith("lemma:"))
    if not hidden or getattr(builder, "_hidden_lemmas", None) is not None:
        raise forward from None  # no lemma to leave out, or a search already without them
    engine = Engine(chain, limit, guard)
    chain.ctx.deadline = limit
    builder._hidden_lemmas = hidden  # the lemmas the search proves on the way stay usable
    try:
        return _find(engine, chain.current, target)
    except (OutOfTime, ProofError):
        _restore(chain, snapshot)
        raise forward from None
    finally:
        builder._hidden_lemmas = None


# --- what the automation hands back, re-checked ----------------------------------------------------


def _refused_step(chain, moves: list[Move], target: Basic | None = None) -> tuple[int, Move | None, str] | None:
    """None when the kernel's own single-step check (as :func:`derive.kernel.check` runs it on a chain) accepts
    every move from ``chain.current`` in turn, ending at ``target`` if given; else (index, move, the kernel's
    reason) of the first refused one."""
    current = canon(chain.current)
    for index, move in enumerate(moves, start=1):
        step = Step(move.expr, move.rule, tuple(move.instance))
        try:
            after = defined_canon(step.expr, chain.ctx)
            rule = resolve_rule(step, chain.ctx, _refuse)
            if after == current:
                return index, move, "the step does not change the expression"
            if not one_step(current, after, rule, chain.ctx):
                return index, move, "the rule does not rewrite the previous expression into this one"
        except OutOfTime:
            raise
        except _Failed as exc:
            return index, move, str(exc)
        except (TermError, ProofError, ValueError, TypeError, AttributeError, KeyError, IndexError) as exc:
            return index, move, f"{type(exc).__name__}: {' '.join(str(exc).split())}"
        current = after
    if target is not None and current != target:
        return len(moves), None, f"the chain ends at {_show(current)}, not at {_show(target)}"
    return None


def _validated(engine: Engine, chain, moves: list[Move], target: Basic) -> list[Move]:
    """The moves, once the kernel's single-step check accepts each; else a plain search (every move a rewrite
    the kernel computed), checked the same way; else an error that says the automation failed, not the user."""
    refused = _refused_step(chain, moves, target)
    if refused is None:
        return moves
    index, move, reason = refused
    engine.limit = max(engine.limit, work.current().used + SECOND_CHANCE_UNITS)  # a short second chance
    saved_deadline, chain.ctx.deadline = chain.ctx.deadline, engine.limit
    try:
        again = engine.search(chain.current, target)
    except OutOfTime:
        again = None
    finally:
        chain.ctx.deadline = saved_deadline
    if again is not None and _refused_step(chain, again, target) is None:
        return again
    rule = "" if move is None else f" (rule {move.rule})"
    chain._fail(f"auto: the automation failed: the chain it found to {_show(target)} has a step the kernel refuses "
                f"(its step {index}{rule}: {reason}); this is a fault of the automation, not of your statement: "
                "write the steps by hand with .rw/.to, or report it", "auto")
    raise AssertionError("unreachable")


def _subject_lemmas(engine: Engine) -> None:
    """Lemmas S = nf(S) for the subjects S of the predicate hypotheses (issue 29: definedness that follows).

    A hypothesis such as "X₂ᵀM₁X₂ is invertible" with M₁ := I − X₁(X₁ᵀX₁)⁻¹X₁ᵀ speaks about a term the kernel's
    judgments meet only in normal form (the Schur complement X₂ᵀX₂ − X₂ᵀX₁(X₁ᵀX₁)⁻¹X₁ᵀX₂ of X₁ᵀX₁ in XᵀX).  The
    lemma S = nf(S) is an equation the judgments follow, so the normal form inherits the predicate.  Only asked
    when a side is not defined; each lemma is an ordinary chain the kernel checks."""
    for name in sorted(engine.ctx.predicates):
        for subject in list(engine.ctx.predicates[name]):
            if isinstance(subject, MatrixSymbol) or subject in engine.argument_lemma:
                continue
            engine.argument_lemma[subject] = engine.prove_lemma(subject)


def _prepare(engine: Engine, term: Basic, label: str) -> tuple[Basic, list[Move]]:
    """``term`` must be defined; arguments of inverses that normalise to something invertible may make it so,
    and so may the normal forms of the predicate hypotheses' subjects (:func:`_subject_lemmas`)."""
    moves = [] if engine.defined(term) else engine.argument_lemmas(term)
    if not engine.defined(term):  # only where the arguments' lemmas alone do not make it defined
        _subject_lemmas(engine)
        moves = moves + engine.argument_lemmas(moves[-1].expr if moves else term)
    if not engine.defined(term):
        try:
            check_defined(term, engine.ctx)
        except TermError as exc:
            engine.chain._fail(f"auto: {label} {_show(term)} is not defined: {explained(exc, engine.ctx)}", "auto")
    return (moves[-1].expr if moves else term), moves


def _normalise_fully(engine: Engine, start: Basic) -> tuple[Basic, list[Move]]:
    """Normalise, then prove argument lemmas for inverses still in the way, and normalise again (a few rounds)."""
    nf, steps = engine.normalise(start)
    for _ in range(3):
        extra = engine.argument_lemmas(nf)
        if not extra:
            break
        nf, more = engine.normalise(extra[-1].expr)
        steps += extra + more
    return nf, steps


def _find(engine: Engine, start: Basic, target: Basic) -> list[Move]:
    engine.allow(start, target)
    start, prefix = _prepare(engine, start, "the left-hand side")
    right_start, suffix_moves = _prepare(engine, target, "the right-hand side")
    suffix = _reverse(target, suffix_moves)
    best = None
    short = engine.search(start, right_start, SHORT_SEARCH_TERMS)  # a direct chain of a few steps
    if short is not None:
        return prefix + short + suffix
    for use_goal, flips in _strategies(engine):
        engine.flips, engine.goal_all = flips, use_goal == "all"
        engine.goal = engine.goal_of(start) if use_goal else None
        right_nf, right_steps = engine.normalise(right_start)
        path = _path(right_start, right_steps)
        engine.goal = engine.goal_of(right_start) if use_goal else None
        left_nf, left_steps = engine.normalise(start, stop=path)  # stops where it meets the right side's path
        if left_nf not in path:  # inverses whose arguments normalise only as a whole
            left_nf, more_left = _normalise_fully(engine, left_nf)
            engine.goal = engine.goal_of(start) if use_goal else None
            right_nf, more_right = _normalise_fully(engine, right_nf)
            left_steps, right_steps = left_steps + more_left, right_steps + more_right
            path = _path(right_start, right_steps)
        if left_nf in path:
            return prefix + left_steps + _reverse(right_start, right_steps[: path[left_nf]]) + suffix
        if best is None:
            best = engine.best = (left_nf, right_nf, left_steps, right_steps)
    left_nf, right_nf, left_steps, right_steps = best
    engine.flips, engine.goal, engine.goal_all = set(), None, False
    if getattr(engine.chain.builder, "_through_lemma", False):  # a lemma of multiplying through: normal forms only
        engine.chain._fail(f"auto found no chain: {_differ(left_nf, right_nf)}", "auto")
    flipped = _flip_scalars(engine, left_nf, right_nf)
    if flipped is not None:
        return prefix + left_steps + flipped + _reverse(right_start, right_steps) + suffix
    crossed = _cross_multiply(engine, left_nf, right_nf)
    if crossed is not None:
        return prefix + left_steps + crossed + _reverse(right_start, right_steps) + suffix
    middle = engine.search(left_nf, right_nf)
    if middle is not None:
        return prefix + left_steps + middle + _reverse(right_start, right_steps) + suffix
    through = _multiply_through(engine, left_nf, right_nf)
    if through is not None:
        return prefix + left_steps + through + _reverse(right_start, right_steps) + suffix
    engine.chain._fail(f"auto found no chain: {_differ(left_nf, right_nf)}; {_tried(engine)}"
                       f"{_nearest_step(engine, left_nf, right_nf)}", "auto")
    raise AssertionError("unreachable")


def _scalar_hypotheses(ctx) -> list[Source]:
    """The scalar hypotheses λ = r (issue 29), directed: λ rewritten into r in a product's coefficient, so both
    sides of a claim speak about r only (ridge as OLS on [X; μI] with λ = μ²: λI becomes μ²I).  Never r back into
    λ, which would undo it.  In the order of their names (the result does not depend on the statement's order)."""
    return [RuleSource(name, scalar_equation_rule(symbol, value), accept=_scalar_eliminated(symbol))
            for name, (symbol, value) in sorted(ctx.scalar_equations.items())]


def _scalar_eliminated(symbol: Basic) -> Callable:
    return lambda matched, result: not result.has(symbol) or result.count(symbol) < matched.count(symbol)


def _literally_scalar(term: Basic) -> bool:
    """Literally 1×1 (its shape is 1×1 as written): ``transpose_scalar`` may turn it into its transpose."""
    rows, cols = shape(term)
    return rows == 1 and cols == 1


def _flip_scalars(engine: Engine, left: Basic, right: Basic) -> list[Move] | None:
    """Moves from ``left`` to ``right`` through Mᵀ = M for literally 1×1 M (issue 29: yᵀXΓx_q = x_qᵀΓᵀXᵀy).

    A 1×1 side written one way and its transpose written the other normalise apart, because the normaliser
    pushes transposes inward and never turns a product around.  Either the whole left side, or each of its
    1×1 summands that the right side does not have as it stands, is replaced by its transpose
    (``transpose_scalar``) and normalised again; the moves are kept when they reach ``right``."""
    if not _literally_scalar(left) or left == right:
        return None
    candidates = [((), left)]
    if isinstance(left, MatAdd):
        wanted = set(right.args) if isinstance(right, MatAdd) else {right}
        candidates += [((i,), a) for i, a in enumerate(left.args) if a not in wanted]
    for path, part in candidates:
        engine.tick()
        flipped = canon(_replace_at(left, path, Transpose(part)))
        if flipped == left:
            continue
        first = Move(flipped, "transpose_scalar")
        try:
            if not engine.defined(flipped) or not one_step(left, flipped, AXIOMS["transpose_scalar"], engine.ctx):
                continue
        except (TermError, ValueError, TypeError):
            continue
        nf, steps = engine.normalise(flipped)
        if nf == right:
            engine.tried.append("a 1×1 side turned into its transpose")
            return [first, *steps]
    return None


def _tried(engine: Engine) -> str:
    strategies = sum(1 for _ in _strategies(engine))
    return (f"it tried directed normalisation of both sides under {strategies} orientations of the equations, "
            f"inverses cleared by cross-multiplication where one side has an inverse at an end, a search of "
            f"up to {MAX_SEARCH_TERMS} terms, and both sides multiplied through by an invertible K whose inverse "
            f"occurs (K L = K R, L K = R K, K L K = K R K)")


def _nearest_step(engine: Engine, left: Basic, right: Basic) -> str:
    """A hand step from the left normal form that brings it closest to the right one (a hint), or ""."""
    target = collections.Counter(subterms(right))
    here = collections.Counter(subterms(left))
    best, best_distance = None, sum(((here - target) + (target - here)).values())
    stop = work.current().used + NEAREST_STEP_UNITS
    sources = [e.source() for e in engine.equations] + [e.flipped().source() for e in engine.equations]
    sources += _all_axioms()
    for source in sources:
        try:
            for move in source.moves(engine, left):
                if work.current().used > stop:
                    break
                found = collections.Counter(subterms(move.expr))
                distance = sum(((found - target) + (target - found)).values())
                if distance < best_distance and engine.defined(move.expr):
                    best, best_distance = move, distance
        except (OutOfTime, TermError):
            break
    if best is None:
        return ""
    return f"; the nearest hand step: .rw({best.rule!r}) gives {_show(best.expr)}"


MAX_CROSS_DEPTH = 2  # cross-multiplications nested inside the lemmas of one another


def _one_level_deeper(tactic):
    """A tactic that proves a lemma by ``.auto`` in turn: None at MAX_CROSS_DEPTH nested levels (counted on the
    builder, shared by every such tactic), else the tactic one level deeper."""

    @functools.wraps(tactic)
    def nested(engine: Engine, left: Basic, right: Basic) -> list[Move] | None:
        builder = engine.chain.builder
        depth = getattr(builder, "_cross_depth", 0)
        if depth >= MAX_CROSS_DEPTH:
            return None
        builder._cross_depth = depth + 1
        try:
            return tactic(engine, left, right)
        finally:
            builder._cross_depth = depth

    return nested


@_one_level_deeper
def _cross_multiply(engine: Engine, left: Basic, right: Basic) -> list[Move] | None:
    """Clear an inverse at an end of one side by multiplying it into the other: the moves from ``left`` to
    ``right``, or None.

    P⁻¹ L' = R follows from the lemma L' = P R (left = P⁻¹(P R) = (P⁻¹P) R = R); L = R' Q⁻¹ from L Q = R'
    (left = L (Q Q⁻¹) = (L Q) Q⁻¹ = R' Q⁻¹); and the same with the sides exchanged.  So (A + uvᵀ)⁻¹ = R
    needs (A + uvᵀ) R = I, and (XᵀX + λI)⁻¹Xᵀ = Xᵀ(XXᵀ + λI)⁻¹ needs Xᵀ(XXᵀ + λI) = (XᵀX + λI)Xᵀ; each lemma
    is proved by ``.auto`` in turn.
    """
    stripped = _strip_common_factors(engine, left, right)
    if stripped is not None:
        engine.tried.append("a lemma for the factors between the common outer ones")
        return stripped
    for a, b, flipped in ((left, right, False), (right, left, True)):
        for end in ("first", "last"):
            moves = _clear_inverse(engine, a, b, end)
            if moves is not None:
                engine.tried.append(f"cross-multiplication by the {end} factor of {_show(a)}")
                return _reverse(a, moves) if flipped else moves
    return None


def _strip_common_factors(engine: Engine, left: Basic, right: Basic) -> list[Move] | None:
    """A F₁ B = A F₂ B from the lemma F₁ = F₂ when the sides share outer factors A and B: X_q K⁻¹ XᵀY =
    X_q V S⁻¹ Vᵀ XᵀY needs K⁻¹ = V S⁻¹ Vᵀ, which cross-multiplication then proves."""
    (left_coeff, a), (right_coeff, b) = factors_of(left), factors_of(right)
    if left_coeff != right_coeff or len(a) < 2 or len(b) < 2:
        return None
    prefix = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    suffix = next((i for i, (x, y) in enumerate(zip(reversed(a), reversed(b), strict=False)) if x != y),
                  min(len(a), len(b)))
    suffix = min(suffix, len(a) - prefix, len(b) - prefix)
    middle_a, middle_b = a[prefix : len(a) - suffix], b[prefix : len(b) - suffix]
    if not (prefix or suffix) or not middle_a or not middle_b:
        return None
    name = _prove_equation(engine, mul(middle_a), mul(middle_b))
    if name is None:
        return None
    return [Move(right, f"lemma:{name}")]


def _clear_inverse(engine: Engine, a: Basic, b: Basic, end: str) -> list[Move] | None:
    """Moves from ``a`` to ``b`` clearing the inverse at ``end`` of ``a`` (see :func:`_cross_multiply`)."""
    coeff, mats = factors_of(a)
    if coeff != 1:
        return None
    inverse = mats[0] if end == "first" else mats[-1]
    if not isinstance(inverse, Inverse) or b.has(inverse):
        return None
    P = inverse.args[0]
    rest = mats[1:] if end == "first" else mats[:-1]
    identity = Identity(shape(P)[0])
    rest_term = mul(rest) if rest else identity
    lemma_rhs = canon(mul(P, b) if end == "first" else mul(b, P))
    name = _prove_equation(engine, canon(rest_term), lemma_rhs)
    if name is None:
        return None
    moves: list[Move] = []
    if not rest:  # P⁻¹ → P⁻¹ I (or I P⁻¹): the identity the lemma I = P b rewrites
        moves.append(Move(mul(inverse, identity) if end == "first" else mul(identity, inverse), "identity_mul"))
    # P⁻¹ L' → P⁻¹ (P b) → I b → b, or L' P⁻¹ → (b P) P⁻¹ → b I → b
    current = canon(mul(inverse, lemma_rhs) if end == "first" else mul(lemma_rhs, inverse))
    moves.append(Move(current, f"lemma:{name}"))
    moves += _finish(engine, current, b, ("inverse_cancel", "identity_mul"))
    return moves if moves[-1].expr == b else None


def _finish(engine: Engine, start: Basic, goal: Basic, rules: tuple[str, ...]) -> list[Move]:
    """Apply the named axioms (in order of preference) until ``goal`` is reached or nothing applies."""
    moves, current = [], start
    for _ in range(8):
        if current == goal:
            break
        for name in rules:
            found = next((r for _, r in _safe(rewrites(current, AXIOMS[name], engine.ctx))
                          if r != current and engine.defined(r)), None)
            if found is not None:
                moves.append(Move(found, name))
                current = found
                break
        else:
            break
    return moves


def _prove_equation(engine: Engine, lhs: Basic, rhs: Basic) -> str | None:
    """A lemma ``lhs = rhs`` proved by ``.auto`` in the work budget left, or None (nothing recorded then)."""
    known = engine._known(lhs)
    if known is not None and known[1] == rhs:
        return known[0]
    left = engine.limit - work.current().used
    if left <= 0:
        return None
    chain = engine.chain.builder.lemma(engine._fresh_name("cross"), lhs)
    builder = engine.chain.builder
    saved, saved_rules = list(builder.lemmas), dict(builder.lemma_rules)
    try:
        _close(chain, canon(rhs), engine.limit, engine.guard, False, _snapshot(chain), left)
    except ProofError:
        builder.lemmas[:] = saved  # lemmas a failed attempt proved are dropped with it
        builder.lemma_rules.clear()
        builder.lemma_rules.update(saved_rules)
        return None
    engine.add_equation(chain.name, lhs, rhs)
    return chain.name


def _differ(left_nf: Basic, right_nf: Basic) -> str:
    a, b = first_difference(left_nf, right_nf)
    return (f"the left side normalises to {_show(left_nf)} and the right side to {_show(right_nf)}; "
            f"they first differ at {_show(a)} versus {_show(b)}")


def _show(term: Basic) -> str:
    """A term on one line (SymPy prints block matrices over several)."""
    return " ".join(str(term).split())


def _path(start: Basic, steps: list[Move]) -> dict:
    """Each term a normalisation passes through, with the number of steps that reach it (first visit)."""
    out = {start: 0}
    for index, move in enumerate(steps, start=1):
        out.setdefault(move.expr, index)
    return out


def _strategies(engine: Engine) -> Iterator[tuple[str | None, set]]:
    """(which equations off the goal wait, equations flipped): hypotheses off the goal wait (with X = UΣVᵀ
    and X = QR, the factorisation the other side speaks about goes first); then nothing waits; then lemmas
    off the goal wait too; then each equation that may go either way is flipped in turn."""
    yield "hypotheses", set()
    yield None, set()
    yield "all", set()
    for equation in list(engine.equations):
        if not equation.definition and not isinstance(equation.rhs, (Identity, ZeroMatrix)):
            yield "all", {equation.name}


# --- multiplying both sides through by an invertible factor ----------------------------------------

MAX_THROUGH_FACTORS = 3  # inverse arguments tried as the factor K, by size


@_one_level_deeper
def _multiply_through(engine: Engine, left: Basic, right: Basic) -> list[Move] | None:
    """L = R from the lemma K L = K R (or L K = R K, or K L K = K R K) for a square invertible K whose inverse
    occurs in L or R: L = I L = K⁻¹ K L = K⁻¹ K R = I R = R.  The lemma is proved by ``.auto``, where K meets
    its inverse and cancels, or distributes.

    This is how a matrix is put next to a rational function of itself: (XᵀX + λI)⁻¹XᵀX = I − λ(XᵀX + λI)⁻¹
    needs (XᵀX + λI)(XᵀX + λI)⁻¹XᵀX = XᵀX = (XᵀX + λI) − λI (the zero inserted by ``collect``), and XᵀX
    commutes with (XᵀX + λI)⁻¹ since both sides times K on each side are (XᵀX)² + λXᵀX.  The factors come
    from both sides together, in an order of their own, so the result does not depend on which side is
    written first.
    """
    for K in _through_factors(engine, left, right):
        for where in ("left", "right", "both"):
            moves = _through(engine, left, right, K, where)
            if moves is not None:
                engine.tried.append(f"both sides multiplied by {_show(K)} on the {where}")
                return moves
    return None


def _through_factors(engine: Engine, left: Basic, right: Basic) -> list[Basic]:
    """The square invertible arguments of the inverses of either side, smallest first, in a fixed order."""
    found = {node.args[0] for side in (left, right) for node in subterms(side) if isinstance(node, Inverse)}
    usable = [K for K in found if shape(K)[0] == shape(K)[1] and engine.defined(inv(K))]
    usable.sort(key=lambda K: (size(K), default_sort_key(K)))
    return usable[:MAX_THROUGH_FACTORS]


def _through(engine: Engine, left: Basic, right: Basic, K: Basic, where: str) -> list[Move] | None:
    """The moves L → I L → K⁻¹ K L → K⁻¹ (K R) → … → R (and the mirror images), or None."""
    n = shape(K)[0]
    if where != "right" and shape(left)[0] != n or where != "left" and shape(left)[1] != n:
        return None
    identity, inverse = Identity(n), inv(K)
    try:
        pre = [K] if where != "right" else []
        post = [K] if where != "left" else []
        lemma_lhs, lemma_rhs = canon(mul(*pre, left, *post)), canon(mul(*pre, right, *post))
        opened: list[Move] = []
        current = left
        if pre:
            opened += [Move(canon(mul(identity, current)), "identity_mul"),
                       Move(canon(mul(inverse, K, current)), "inverse_cancel")]
            current = opened[-1].expr
        if post:
            body = mul(K, left) if pre else left
            with_identity = canon(mul(*([inverse] if pre else []), body, identity))
            opened += [Move(with_identity, "identity_mul"),
                       Move(canon(mul(*([inverse] if pre else []), body, K, inverse)), "inverse_cancel")]
        after = canon(mul(*([inverse] if pre else []), lemma_rhs, *([inverse] if post else [])))
    except TermError:
        return None
    if lemma_lhs == lemma_rhs or not _moves_ok(engine, left, opened):
        return None
    if not (engine.defined(lemma_lhs) and engine.defined(lemma_rhs)):
        return None
    if engine.normalise(lemma_lhs)[0] != engine.normalise(lemma_rhs)[0]:
        return None  # a quick look first: the lemma is proved only where both sides normalise alike
    builder = engine.chain.builder
    builder._through_lemma = True  # the lemma's sides meet by normalisation, or not at all: failures stay cheap
    try:
        name = _prove_equation(engine, lemma_lhs, lemma_rhs)
    finally:
        builder._through_lemma = False
    if name is None:
        return None
    moves = [*opened, Move(after, f"lemma:{name}")]
    moves += _finish(engine, after, right, ("inverse_cancel", "identity_mul"))
    if moves[-1].expr != right or not _moves_ok(engine, left, moves):
        return None
    return moves


def _moves_ok(engine: Engine, start: Basic, moves: list[Move]) -> bool:
    """Every move one step of its rule from the one before (the kernel's single-step check), each defined."""
    current = start
    for move in moves:
        try:
            rule = resolve_rule(Step(move.expr, move.rule, tuple(move.instance)), engine.ctx, _refuse)
            if move.expr == current or not engine.defined(move.expr):
                return False
            if not one_step(current, move.expr, rule, engine.ctx):
                return False
        except _Failed:
            return False
        current = move.expr
    return True
