"""Verified counterexamples: is a statement that could not be proved false, or only not proved?

:func:`refute` takes a statement — a theorem's hypotheses, definitions and one chain's claim lhs = rhs (the main
claim or a lemma, with the lemma's local hypotheses), as a :class:`~derive.Proof` skeleton or a registry
:class:`~derive.authoring.registry.Statement` — and looks for exact rational values of its symbols at which every
hypothesis holds and the two sides differ.  Its :class:`Verdict` is one of

* ``"false"`` — a counterexample, shrunk to small sizes and simple entries, and confirmed by :func:`confirm`;
* ``"true_on_instances"`` — no counterexample; the claim held on every instance tried where both sides are
  defined (not a proof: the statement is *not proved*);
* ``"hypotheses_unsatisfied"`` — no instance tried satisfied every hypothesis (contradictory hypotheses, or
  ones neither the witness's sampler nor small random values can meet).

Nothing here is trusted and nothing here makes a theorem: this module never calls the kernel's judgments,
axioms or checker.  Values come from the independent witness's generic sampler
(:func:`derive.witness.sampler.generic_sampler`, which solves UᵀU = I, X = QR, Gram equations, definitions,
predicates, scalar hypotheses λ = r, ...) fed with small numbers first (0, ±1, ±2, ±1/2, 3), then random
rationals, at the smallest dimensions first (1, 2, 3; an index 0, 1, 2, 3); where it cannot plan a sample,
every free matrix is drawn entry by entry.  Every candidate is judged by exact evaluation alone
(:func:`derive.witness.evaluate.evaluate`): definitions computed, every hypothesis verified at the values
(invertibility by a non-zero determinant, positive definiteness — xᵀAx > 0 without symmetry, the kernel's meaning
— by the leading principal minors of A + Aᵀ, symmetry and diagonality entry by entry, equations entry by entry),
then both sides evaluated and compared.  A counterexample is shrunk like QuickCheck's: smaller dimensions first,
then simpler sampler parameters (replayed through the sampler, so constructed hypotheses stay true), then simpler
entries of the free matrices (each shrink judged again from scratch), and is returned only after :func:`confirm`,
which re-evaluates everything at the final values without the sampler, says it is one.

A hypothesis with bound symbols (``forall``) cannot be verified at finitely many values: it is checked at
:data:`FORALL_TRIALS` random instantiations of its bound symbols (the verdict says so).

The search is bounded by a count of instances (``budget``), so the same statement and ``seed`` give the same
verdict on any machine; ``time_limit`` (CPU seconds) is an outer guard only, and a verdict it cut short says so.
"""

from __future__ import annotations

import html
import math
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from itertools import product
from typing import Any

import sympy
from sympy import QQ, Basic, ImmutableMatrix, Integer, Rational, Symbol
from sympy.assumptions import Q
from sympy.assumptions.assume import AppliedPredicate
from sympy.matrices.expressions import Identity, MatMul, MatrixSymbol
from sympy.polys.matrices import DomainMatrix

from .kernel import Chain, Hypothesis, Induction, Proof
from .kernel.scalars import scalar_kind
from .kernel.terms import FamilyMatrix, index_kind
from .witness.evaluate import WitnessError, evaluate

__all__ = ["DEFAULT_BUDGET", "FORALL_TRIALS", "KINDS", "Verdict", "confirm", "refute", "refute_all",
           "statement_chains"]

#: The three verdicts.
KINDS = ("false", "true_on_instances", "hypotheses_unsatisfied")

#: Instances tried by default (each: one sample from the sampler, judged exactly).
DEFAULT_BUDGET = 120

#: Random instantiations at which a hypothesis with bound symbols (``forall``) is checked.
FORALL_TRIALS = 4

#: Small numbers tried first, for free parameters and for positive ones.
SMALL = tuple(Fraction(v) for v in (1, -1, 0, 2, -2, Fraction(1, 2), -1, 1, Fraction(-1, 2), 3))
SMALL_POSITIVE = tuple(Fraction(v) for v in (1, 2, Fraction(1, 2), 1, 3))

#: Largest value a dimension takes in the search (an index takes 0 to this).
MAX_DIM = 3

#: Judgements the shrinker may spend, at most, on one counterexample.
SHRINK_JUDGEMENTS = 400


# --- the statement --------------------------------------------------------------------------------------------


def statement_chains(statement) -> list[str]:
    """The names of the chains of a statement whose claims :func:`refute` can judge: its lemmas (an induction lemma
    as its claim for every value of its index) and ``"main"``."""
    proof = _as_proof(statement)
    return [c.name for c in proof.lemmas] + ["main"]


def _as_proof(statement) -> Proof:
    proof = getattr(statement, "proof", statement)
    if not isinstance(proof, Proof):
        raise TypeError(f"refute takes a Proof or a registry Statement, not {type(statement).__name__}")
    return proof


@dataclass
class _Problem:
    """One chain's statement, ready to judge: the hypotheses (global and local), definitions, families, the claim."""

    proof: Proof  # reduced: the chain's claim is the proof's claim, no lemmas, no steps, no citations
    chain: Chain
    hypotheses: tuple[Hypothesis, ...]
    dims: dict[str, Symbol]  # free dimensions and indices, in order of appearance
    matrices: dict[str, MatrixSymbol]  # free matrix symbols (neither defined nor bound)
    defined: dict[str, MatrixSymbol]
    scalars: dict[str, Symbol]
    families: dict[str, Any]
    table: Any = None  # the witness sampler's symbol table


def _problem(statement, chain: str | None) -> _Problem:
    from .witness.sampler import _symbols

    proof = _as_proof(statement)
    name = chain or "main"
    if name in ("main", proof.claim.name):
        target = proof.claim
        claim = Chain(target.name, target.lhs, target.rhs, (), tuple(target.hypotheses))
    else:
        found = [c for c in proof.lemmas if c.name == name]
        if not found:
            known = ", ".join(statement_chains(proof))
            raise KeyError(f"{proof.theorem} has no chain {name!r} (its chains: {known})")
        target = found[0]
        # an induction lemma states lhs = rhs for every value of its index: the index is a free symbol here
        local = () if isinstance(target, Induction) else tuple(target.hypotheses)
        claim = Chain(name, target.lhs, target.rhs, (), local)
    reduced = Proof(proof.theorem, proof.title, proof.statement, tuple(proof.hypotheses), tuple(proof.definitions),
                    (), claim, (), tuple(proof.families))
    table = _symbols(reduced)
    dims = {n: s for n, s in table.dims.items() if n not in table.bound}
    matrices = {n: s for n, s in table.matrices.items() if n not in table.bound and n not in table.defined}
    defined = {n: s for n, s in table.matrices.items() if n in table.defined}
    return _Problem(reduced, claim, (*reduced.hypotheses, *claim.hypotheses), dims, matrices, defined,
                    dict(table.scalars), dict(table.families), table)


# --- judging values exactly (no sampler) --------------------------------------------------------------------


@dataclass
class _Judgement:
    status: str  # "unsatisfied", "undefined", "equal", "differ"
    reason: str = ""
    defined: dict = field(default_factory=dict)  # values of the defined symbols
    lhs: DomainMatrix | None = None
    rhs: DomainMatrix | None = None


def _dm(value) -> DomainMatrix:
    """A value as a dense DomainMatrix over QQ (from a sympy Matrix or a DomainMatrix)."""
    if isinstance(value, DomainMatrix):
        return value.convert_to(QQ).to_dense()
    matrix = sympy.Matrix(value)
    if not all(sympy.sympify(e).is_Rational for e in matrix):
        raise WitnessError("a value has non-rational entries")
    return DomainMatrix.from_Matrix(matrix).convert_to(QQ).to_dense()


def _evaluate(term: Basic, env: Mapping, dims: Mapping[Symbol, int], scalars: Mapping[Symbol, Rational],
              families: Sequence) -> DomainMatrix:
    return _dm(evaluate(term, env, dims, scalars, families))


def _leading_minors_positive(m: DomainMatrix) -> bool:
    doubled = m + m.transpose()  # xᵀAx = ½ xᵀ(A + Aᵀ)x: positive for x ≠ 0 iff A + Aᵀ is positive definite
    size = m.shape[0]
    return all(doubled[:k, :k].det() > 0 for k in range(1, size + 1))


def _predicate(name, m: DomainMatrix) -> str | None:
    """None when the predicate holds of ``m`` exactly, else why not."""
    rows, cols = m.shape
    if rows != cols:
        return f"it is applied to a {rows}x{cols} matrix"
    entries = m.to_list()
    if name == Q.invertible:
        return None if m.det() != 0 else "the determinant is 0"
    if name == Q.symmetric:
        return None if m == m.transpose() else "the matrix is not symmetric"
    if name == Q.diagonal:
        off = any(entries[i][j] != 0 for i in range(rows) for j in range(cols) if i != j)
        return "an off-diagonal entry is not 0" if off else None
    if name == Q.positive_definite:
        return None if _leading_minors_positive(m) else "a leading principal minor of A + Aᵀ is not positive"
    return f"the predicate {name} is not known here"


def _bound_instance(h: Hypothesis, env: Mapping, dims: Mapping[Symbol, int], rng: random.Random):
    inner_dims = dict(dims)
    for v in h.forall:
        if isinstance(v, Symbol):
            inner_dims[v] = rng.randint(0 if index_kind(v) == "index" else 1, MAX_DIM)
    inner = dict(env)
    for v in h.forall:
        if isinstance(v, MatrixSymbol):
            rows, cols = (int(sympy.sympify(s).xreplace({k: Integer(x) for k, x in inner_dims.items()}))
                          for s in v.shape)
            inner[v] = DomainMatrix([[QQ(rng.randint(-9, 9), rng.randint(1, 4)) for _ in range(cols)]
                                     for _ in range(rows)], (rows, cols), QQ)
    return inner, inner_dims


def _hypothesis_fails(h: Hypothesis, env: Mapping, dims: Mapping[Symbol, int], scalars: Mapping[Symbol, Rational],
                      families: Sequence) -> str | None:
    """None when the hypothesis holds exactly at the values (a ``forall`` one: at :data:`FORALL_TRIALS` random
    instantiations of its bound symbols), else why not."""
    try:
        if isinstance(h.lhs, AppliedPredicate):
            if len(h.lhs.arguments) != 1:
                return "a predicate of more than one matrix"
            if h.lhs.function == Q.nonzero:  # issue 41: a scalar fact c ≠ 0, c read as the 1×1 matrix c·I₁
                value = _evaluate(MatMul(h.lhs.arguments[0], Identity(1), evaluate=False), env, dims, scalars,
                                  families)
                return None if value.to_list()[0][0] != 0 else f"{h.lhs.arguments[0]} is 0"
            return _predicate(h.lhs.function, _evaluate(h.lhs.arguments[0], env, dims, scalars, families))
        if type(h.lhs) is Symbol:  # a scalar hypothesis λ = r
            given = {**scalars, **{s: Integer(v) for s, v in dims.items()}}
            left, right = sympy.sympify(h.lhs).xreplace(given), sympy.sympify(h.rhs).xreplace(given)
            if not (left.is_Rational and right.is_Rational):
                return "its sides are not numbers at these values"
            return None if left == right else f"{left} ≠ {right}"
        if not h.forall:
            left = _evaluate(h.lhs, env, dims, scalars, families)
            right = _evaluate(h.rhs, env, dims, scalars, families)
            return None if left.shape == right.shape and left == right else "the two sides differ"
        rng = random.Random(f"forall/{h.name}")
        for trial in range(FORALL_TRIALS):
            inner, inner_dims = _bound_instance(h, env, dims, rng)
            left = _evaluate(h.lhs, inner, inner_dims, scalars, families)
            right = _evaluate(h.rhs, inner, inner_dims, scalars, families)
            if left.shape != right.shape or left != right:
                return f"the two sides differ at random instantiation {trial + 1} of its bound symbols"
        return None
    except WitnessError as exc:
        return f"not defined at these values: {exc.reason}"
    except (ArithmeticError, ValueError, TypeError) as exc:
        return f"cannot be evaluated at these values: {exc}"


def _judge(problem: _Problem, dims: Mapping[Symbol, int], scalars: Mapping[Symbol, Rational],
           env: Mapping) -> _Judgement:
    """Exact evaluation at the values alone: definitions, every hypothesis, both sides."""
    families = tuple(problem.proof.families)
    full = {k: _dm(v) for k, v in env.items()}
    defined, undefined = {}, None
    for d in problem.proof.definitions:
        try:
            full[d.symbol] = defined[d.symbol] = _evaluate(d.rhs, full, dims, scalars, families)
        except (WitnessError, ArithmeticError, ValueError, TypeError) as exc:
            undefined = f"definition {d.name} is not defined at these values: {getattr(exc, 'reason', exc)}"
            break
    for h in problem.hypotheses:
        why = _hypothesis_fails(h, full, dims, scalars, families)
        if why is not None:
            return _Judgement("unsatisfied", f"hypothesis {h.name}: {why}", defined)
    if undefined is not None:
        return _Judgement("undefined", undefined, defined)
    sides = []
    for side, term in (("left", problem.chain.lhs), ("right", problem.chain.rhs)):
        try:
            sides.append(_evaluate(term, full, dims, scalars, families))
        except (WitnessError, ArithmeticError, ValueError, TypeError) as exc:
            return _Judgement("undefined", f"the {side} side is not defined: {getattr(exc, 'reason', exc)}",
                              defined)
    lhs, rhs = sides
    if lhs.shape != rhs.shape:
        return _Judgement("undefined", f"the sides have shapes {lhs.shape} and {rhs.shape}", defined, lhs, rhs)
    return _Judgement("equal" if lhs == rhs else "differ", "", defined, lhs, rhs)


def _split_values(problem: _Problem, values: Mapping) -> tuple[dict, dict, dict]:
    """(dims, scalars, env of the free matrices and family members) from a values mapping keyed by symbols or
    names; the values of defined symbols are left out (they are computed)."""
    by_name = {}
    for key, value in values.items():
        by_name[key if isinstance(key, str) else str(key) if isinstance(key, FamilyMatrix) else str(key.name)] = \
            (key, value)
    dims = {}
    for name, sym in problem.dims.items():
        if name not in by_name:
            raise KeyError(f"no value for the dimension {name}")
        dims[sym] = int(by_name[name][1])
    scalars = {}
    for name, sym in problem.scalars.items():
        if name not in by_name:
            raise KeyError(f"no value for the scalar {name}")
        scalars[sym] = Rational(by_name[name][1])
    env = {}
    for name, sym in problem.matrices.items():
        if name not in by_name:
            raise KeyError(f"no value for the matrix {name}")
        env[sym] = by_name[name][1]
    for key, value in by_name.values():
        if isinstance(key, FamilyMatrix):
            env[key] = value
    return dims, scalars, env


def confirm(statement, values: Mapping, chain: str | None = None) -> bool:
    """Whether ``values`` refute the claim of ``chain`` (default the main claim) of ``statement``, by exact
    evaluation at the values alone (no sampler): the definitions computed from them (and equal to the values given
    for defined symbols, if any), every hypothesis true, both sides defined and different.

    ``values`` maps each dimension and index (a SymPy ``Symbol`` or its name) to an integer, each scalar to a
    rational, and each free matrix symbol (a ``MatrixSymbol`` or its name; family members as ``FamilyMatrix``) to a
    matrix of rationals (a SymPy matrix, nested lists, or a ``DomainMatrix``)."""
    problem = _problem(statement, chain)
    try:
        dims, scalars, env = _split_values(problem, values)
        judgement = _judge(problem, dims, scalars, env)
    except (KeyError, WitnessError, ArithmeticError, ValueError, TypeError):
        return False
    if judgement.status != "differ":
        return False
    named = {(k if isinstance(k, str) else str(getattr(k, "name", k))): v for k, v in values.items()}
    for sym, value in judgement.defined.items():  # a value given for a defined symbol must be its definition's
        if sym.name in named and _dm(named[sym.name]) != value:
            return False
    return True


# --- drawing instances ----------------------------------------------------------------------------------------


def _fraction(x) -> Fraction:
    return Fraction(int(x.numerator), int(x.denominator))


class _Draws:
    """The numbers one instance draws, recorded (or replayed: the shrinker changes some and samples again)."""

    def __init__(self, rng: random.Random, tier: str, replay: Sequence[tuple[str, Fraction]] | None = None):
        self.rng, self.tier = rng, tier
        self.replay = list(replay) if replay is not None else None
        self.taken: list[tuple[str, Fraction]] = []

    def fresh(self, kind: str) -> Fraction:
        if self.tier == "small":
            return self.rng.choice(SMALL_POSITIVE if kind == "positive" else SMALL)
        if kind == "positive":
            return Fraction(self.rng.randint(1, 12), self.rng.randint(1, 6))
        if kind == "flip":
            return Fraction(self.rng.random() < 0.5)
        return Fraction(self.rng.choice((-1, 1)) * self.rng.randint(0, 12), self.rng.randint(1, 6))

    def take(self, kind: str) -> Fraction:
        position = len(self.taken)
        if self.replay is not None and position < len(self.replay) and self.replay[position][0] == kind:
            value = self.replay[position][1]
        elif kind == "flip":
            value = Fraction(self.rng.random() < 0.5)
        else:
            value = self.fresh(kind)
        self.taken.append((kind, value))
        return value

    def qq(self, kind: str):
        value = self.take(kind)
        return QQ(value.numerator, value.denominator)


@dataclass
class _Candidate:
    """An instance: its values (free ones only; definitions are computed when it is judged) and the draws that
    made them (replayed to shrink)."""

    dims: dict[Symbol, int]
    scalars: dict[Symbol, Rational]
    env: dict  # MatrixSymbol / FamilyMatrix -> DomainMatrix
    shape: dict[str, int]
    tier: str
    draws: list[tuple[str, Fraction]]
    how: str  # "sampler" or "free"


def _scalar_values(problem: _Problem, draws: _Draws) -> dict[Symbol, Any]:
    from .witness.checks import _solve_scalar_equations

    values = {}
    for sym in problem.scalars.values():
        values[sym] = draws.qq("positive" if scalar_kind(sym) == "positive" else "real")
    return _solve_scalar_equations(problem.table, values, QQ)


def _member_key(problem: _Problem, name: str) -> FamilyMatrix | None:
    family_name, bracket, rest = name.partition("[")
    if not bracket or family_name not in problem.families or not rest[:-1].isdigit():
        return None
    family, index = problem.families[family_name], int(rest[:-1])
    return FamilyMatrix(family.name, index, family.rows.xreplace({family.index: index}),
                        family.cols.xreplace({family.index: index}))


def _sampled(problem: _Problem, sampler, shape: Mapping[str, int], draws: _Draws) -> _Candidate | str:
    """An instance from the witness's generic sampler (hypotheses solved where it can), or why there is none."""
    from .witness.sampler import Source

    scalars = _scalar_values(problem, draws)
    source = Source(QQ, lambda positive: draws.qq("positive" if positive else "real"), scalars=scalars,
                    reflections=lambda: bool(draws.take("flip")))
    try:
        sample = sampler(source, shape, problem.chain.name)
    except (WitnessError, ArithmeticError, ValueError, TypeError, ZeroDivisionError) as exc:
        return f"the sampler: {getattr(exc, 'reason', exc)}"
    dims = {problem.dims[n]: int(v) for n, v in sample.dims.items() if n in problem.dims}
    env = {}
    for name, value in sample.values.items():
        key = problem.matrices.get(name) or _member_key(problem, name)
        if key is None:
            continue
        env[key] = value.convert_to(QQ).to_dense()
    return _Candidate(dims, {s: Rational(v.numerator, v.denominator) for s, v in scalars.items()}, env,
                      dict(shape), draws.tier, draws.taken, "sampler")


def _free(problem: _Problem, shape: Mapping[str, int], draws: _Draws) -> _Candidate | str:
    """An instance with every free matrix drawn entry by entry (for hypotheses the sampler cannot plan)."""
    if problem.families:
        return "free draws do not cover families"
    scalars = _scalar_values(problem, draws)
    dims = {sym: int(shape[name]) for name, sym in problem.dims.items()}
    given = {s: Integer(v) for s, v in dims.items()}
    env = {}
    for sym in problem.matrices.values():
        rows, cols = (sympy.sympify(s).xreplace(given) for s in sym.shape)
        if not (rows.is_Integer and cols.is_Integer) or rows < 0 or cols < 0:
            return f"the shape of {sym.name} is not determined"
        env[sym] = DomainMatrix([[draws.qq("real") for _ in range(int(cols))] for _ in range(int(rows))],
                                (int(rows), int(cols)), QQ)
    return _Candidate(dims, {s: Rational(v.numerator, v.denominator) for s, v in scalars.items()}, env,
                      dict(shape), draws.tier, draws.taken, "free")


def _sampler(problem: _Problem):
    """The witness's generic sampler for the statement (with the theorem's sampling hints when they apply), or
    None when it cannot be built."""
    from .witness.sampler import generic_sampler, hints_for

    for hints in (_hints(hints_for, problem.proof), None):
        try:
            return generic_sampler(problem.proof, hints)
        except (WitnessError, KeyError, ValueError, TypeError):
            continue
    return None


def _hints(hints_for, proof: Proof):
    try:
        return hints_for(proof)
    except Exception:  # a registry that cannot be read: no hints
        return None


def _shapes(problem: _Problem) -> list[dict[str, int]]:
    """Dimension values, smallest first (by total, then by largest): every dimension 1..MAX_DIM, an index
    0..MAX_DIM."""
    names = list(problem.dims)
    ranges = [range(0 if index_kind(problem.dims[n]) == "index" else 1, MAX_DIM + 1) for n in names]
    combos = sorted(product(*ranges), key=lambda c: (sum(c), max(c, default=0), c))
    return [dict(zip(names, c, strict=True)) for c in combos[:64]]


def _schedule(shapes: list[dict[str, int]]) -> Iterator[tuple[dict[str, int], str, str]]:
    """(shape, tier, how) for each instance, in order: every shape (smallest first) with small numbers twice, then
    random rationals, one free draw of small numbers; then again with more random rationals, for ever."""
    first = (("small", "sampler"), ("small", "sampler"), ("random", "sampler"), ("small", "free"))
    later = (("small", "sampler"), ("random", "sampler"), ("random", "sampler"), ("random", "free"))
    rounds = 0
    while True:
        for shape in shapes:
            for tier, how in first if rounds == 0 else later:
                yield shape, tier, how
        rounds += 1


def _instance(problem: _Problem, sampler, shape, tier: str, how: str, rng: random.Random,
              replay=None) -> _Candidate | str:
    draws = _Draws(rng, tier, replay)
    if how == "sampler" and sampler is not None:
        got = _sampled(problem, sampler, shape, draws)
        if isinstance(got, _Candidate):
            return got
        draws = _Draws(rng, tier, replay)  # the sampler cannot plan this: draw every matrix
    return _free(problem, shape, draws)


# --- shrinking ------------------------------------------------------------------------------------------------


def _size(x: Fraction) -> tuple[int, int, int]:
    return (0, 0, 0) if x == 0 else (x.denominator, abs(x.numerator), x < 0)


def _simpler(x: Fraction, positive: bool) -> list[Fraction]:
    """Simpler numbers than ``x`` to try in its place (0, ±1, ±2, ±1/2, its rounding), simplest first."""
    options = [Fraction(v) for v in (0, 1, -1, 2, -2, Fraction(1, 2), Fraction(-1, 2))]
    options += [Fraction(round(x)), Fraction(math.trunc(x)), Fraction(x.numerator // 2 or 1, x.denominator)]
    out = []
    for c in options:
        if positive and c <= 0:
            continue
        if _size(c) < _size(x) and c not in out:
            out.append(c)
    return sorted(out, key=_size)


def _weight(c: _Candidate) -> tuple:
    entries = 0
    for value in c.env.values():
        for row in value.to_list():
            for e in row:
                entries += 0 if e == 0 else abs(int(e.numerator)) + int(e.denominator)
    scalars = sum(0 if v == 0 else abs(int(v.p)) + int(v.q) for v in c.scalars.values())
    return (sum(c.dims.values()), entries + scalars)


class _Shrinker:
    def __init__(self, problem: _Problem, sampler, seed_text: str, deadline: Callable[[], bool]):
        self.problem, self.sampler, self.seed_text, self.deadline = problem, sampler, seed_text, deadline
        self.judged = 0

    def is_counterexample(self, c: _Candidate | str) -> bool:
        if isinstance(c, str) or self.judged >= SHRINK_JUDGEMENTS or self.deadline():
            return False
        self.judged += 1
        return _judge(self.problem, c.dims, c.scalars, c.env).status == "differ"

    def smaller_shapes(self, best: _Candidate, shapes: list[dict[str, int]]) -> _Candidate:
        """Try every shape smaller than the counterexample's dimensions, a few draws each."""
        total = sum(best.dims.values())
        for k, shape in enumerate(shapes):
            if sum(shape.values()) >= total:
                break
            for trial, (tier, how) in enumerate((("small", "sampler"), ("random", "sampler"), ("small", "sampler"),
                                                  ("small", "free"), ("random", "sampler"), ("random", "free"))):
                rng = random.Random(f"{self.seed_text}/shrink/{k}/{trial}")
                c = _instance(self.problem, self.sampler, shape, tier, how, rng)
                if self.is_counterexample(c):
                    return self.smaller_shapes(c, shapes)
        return best

    def draws(self, best: _Candidate) -> _Candidate:
        """Replay the counterexample's draws with one number made simpler at a time (the sampler keeps what it
        constructs true)."""
        if any(kind != "flip" and value < 0 for kind, value in best.draws):  # every sign positive at once
            replay = [(kind, abs(value) if kind != "flip" else value) for kind, value in best.draws]
            c = _instance(self.problem, self.sampler, best.shape, best.tier, best.how,
                          random.Random(f"{self.seed_text}/replay"), replay)
            if isinstance(c, _Candidate) and _weight(c) <= _weight(best) and self.is_counterexample(c):
                best = c
        improved = True
        while improved and not self.deadline() and self.judged < SHRINK_JUDGEMENTS:
            improved = False
            for position, (kind, value) in enumerate(best.draws):
                if kind == "flip":
                    continue
                for simpler in _simpler(value, kind == "positive"):
                    replay = list(best.draws)
                    replay[position] = (kind, simpler)
                    rng = random.Random(f"{self.seed_text}/replay")
                    c = _instance(self.problem, self.sampler, best.shape, best.tier, best.how, rng, replay)
                    if isinstance(c, _Candidate) and _weight(c) < _weight(best) and self.is_counterexample(c):
                        best, improved = c, True
                        break
        return best

    def entries(self, best: _Candidate) -> _Candidate:
        """Make entries of the free matrices and scalars simpler one at a time, judged again from scratch."""
        improved = True
        while improved and not self.deadline() and self.judged < SHRINK_JUDGEMENTS:
            improved = False
            for sym in list(best.scalars):
                value = _fraction(best.scalars[sym])
                for simpler in _simpler(value, scalar_kind(sym) == "positive"):
                    c = replace(best, scalars={**best.scalars, sym: Rational(simpler.numerator, simpler.denominator)})
                    if self.is_counterexample(c):
                        best, improved = c, True
                        break
            for key in list(best.env):
                value = best.env[key]
                rows, cols = value.shape
                for i in range(rows):
                    for j in range(cols):
                        entry = _fraction(value.to_list()[i][j])
                        for simpler in _simpler(entry, False):
                            changed = value.to_list()
                            changed[i][j] = QQ(simpler.numerator, simpler.denominator)
                            new = DomainMatrix(changed, value.shape, QQ)
                            c = replace(best, env={**best.env, key: new})
                            if self.is_counterexample(c):
                                best, value, improved = c, new, True
                                break
        return best


# --- the verdict ----------------------------------------------------------------------------------------------


def _show_number(x) -> str:
    return str(sympy.Rational(x))


def _show_matrix(m: ImmutableMatrix) -> str:
    rows = [[_show_number(e) for e in m.row(i)] for i in range(m.rows)]
    if m.rows == 1 and m.cols == 1:
        return f"[{rows[0][0]}]"
    return "[" + ", ".join("[" + ", ".join(r) + "]" for r in rows) + "]"


def _hypothesis_text(h: Hypothesis) -> str:
    if isinstance(h.lhs, AppliedPredicate):
        text = f"{h.lhs.function.name.replace('_', ' ')}({h.lhs.arguments[0]})"
    else:
        text = f"{h.lhs} = {h.rhs}"
    return f"(for all {', '.join(map(str, h.forall))}: {text})" if h.forall else text


def _symbol_name(key) -> str:
    """How a value's symbol is shown: a family member with its index (k[2]), a matrix or scalar by its name."""
    if isinstance(key, FamilyMatrix):
        return str(key)
    return str(getattr(key, "name", key))


@dataclass(frozen=True)
class Verdict:
    """What :func:`refute` found for one chain's claim.

    ``kind`` is one of :data:`KINDS`.  For ``"false"``: ``values`` maps every dimension (``Symbol`` ->
    ``Integer``), scalar (``Symbol`` -> ``Rational``) and matrix symbol of the statement, definitions included
    (``MatrixSymbol`` -> ``ImmutableMatrix`` of rationals; free family members by ``FamilyMatrix``), to the
    counterexample's values; ``lhs_value`` and ``rhs_value`` are the two sides there and ``entry`` the first
    (row, column), counted from 0, where they differ.  ``instances`` counts the instances tried, ``satisfied`` those
    that satisfied every hypothesis and ``compared`` those where both sides were defined too (and equal, unless the
    verdict is ``"false"``).  ``seed`` replays the search: ``refute(statement, chain, seed=seed, budget=budget)``.
    """

    kind: str
    theorem: str
    chain: str
    lhs: Basic
    rhs: Basic
    hypotheses: tuple[tuple[str, str], ...]  # (name, text) of every hypothesis of the chain
    seed: int
    budget: int
    instances: int
    satisfied: int
    compared: int
    values: Mapping = field(default_factory=dict)
    lhs_value: ImmutableMatrix | None = None
    rhs_value: ImmutableMatrix | None = None
    entry: tuple[int, int] | None = None
    found_at: int | None = None  # the instance that found the counterexample (before shrinking)
    unsatisfied: str = ""  # (no instance satisfied the hypotheses) the most frequent reason
    stopped: bool = False  # cut short by the time guard: fewer instances than the budget
    forall: bool = False  # some hypothesis has bound symbols: checked at random instantiations only

    @property
    def is_false(self) -> bool:
        return self.kind == "false"

    def _dims_text(self) -> str:
        dims = [(k, v) for k, v in self.values.items() if isinstance(k, Symbol) and not scalar_kind(k)]
        return ", ".join(f"{k} = {v}" for k, v in dims)

    def summary(self) -> str:
        """The verdict in one line."""
        if self.kind == "false":
            where = self._dims_text()
            matrices = [f"{_symbol_name(k)} = {_show_matrix(v)}" for k, v in self.values.items()
                        if isinstance(v, ImmutableMatrix)]
            scalars = [f"{k} = {v}" for k, v in self.values.items() if isinstance(k, Symbol) and scalar_kind(k)]
            i, j = self.entry
            return (f"FALSE: counterexample{' at ' + where if where else ''}: " + ", ".join([*scalars, *matrices])
                    + f"; lhs = {_show_matrix(self.lhs_value)}, rhs = {_show_matrix(self.rhs_value)} (entry ({i}, {j})"
                    + f": {self.lhs_value[i, j]} ≠ {self.rhs_value[i, j]}; seed {self.seed})")
        cut = f", cut short by the time guard after {self.instances} instances" if self.stopped else ""
        if self.kind == "hypotheses_unsatisfied":
            return (f"no counterexample: the hypotheses were never satisfied on the {self.instances} instances "
                    f"tried{cut}" + (f" ({self.unsatisfied})" if self.unsatisfied else ""))
        undefined = self.satisfied - self.compared
        return (f"no counterexample: true on {self.compared} instances"
                + (f" ({undefined} more satisfied the hypotheses where a side is undefined)" if undefined else "")
                + f" of {self.instances} tried{cut}")

    def __str__(self) -> str:
        head = f"{self.theorem}/{self.chain}: {self.lhs} = {self.rhs}"
        if self.kind != "false":
            return f"{head}\n  {self.summary()} (seed {self.seed}, budget {self.budget})"
        lines = [head, f"  FALSE: a counterexample{' at ' + self._dims_text() if self._dims_text() else ''} "
                       f"(seed {self.seed}: found on instance {self.found_at + 1} of the search, then shrunk)"]
        if self.hypotheses:
            lines.append("  hypotheses, each verified exactly at these values"
                         + (" (those with 'for all' at random instantiations)" if self.forall else "") + ":")
            lines += [f"    {name}: {text}" for name, text in self.hypotheses]
        else:
            lines.append("  no hypotheses")
        lines.append("  values:")
        for key, value in self.values.items():
            if isinstance(value, ImmutableMatrix):
                lines.append(f"    {_symbol_name(key)} = {_show_matrix(value)}")
            elif isinstance(key, Symbol) and scalar_kind(key):
                lines.append(f"    {key} = {value}")
        i, j = self.entry
        lines += [f"  lhs  {self.lhs} = {_show_matrix(self.lhs_value)}",
                  f"  rhs  {self.rhs} = {_show_matrix(self.rhs_value)}",
                  f"  they differ first at entry ({i}, {j}) (row, column from 0): {self.lhs_value[i, j]} ≠ "
                  f"{self.rhs_value[i, j]}"]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """A notebook shows the verdict as a small table: the claim, the verdict, and for a counterexample the value
        of every symbol and both sides (every text escaped)."""
        def cell(text) -> str:
            return html.escape(str(text), quote=True)

        rows = [("claim", f"{self.theorem}/{self.chain}: {self.lhs} = {self.rhs}"), ("verdict", self.summary())]
        if self.kind == "false":
            rows += [(_symbol_name(key), _show_matrix(value) if isinstance(value, ImmutableMatrix)
                      else value) for key, value in self.values.items()]
            i, j = self.entry
            rows += [("lhs", _show_matrix(self.lhs_value)), ("rhs", _show_matrix(self.rhs_value)),
                     ("first difference", f"entry ({i}, {j}): {self.lhs_value[i, j]} ≠ {self.rhs_value[i, j]}")]
        body = "".join(f"<tr><th style=\"text-align:left\">{cell(k)}</th><td style=\"text-align:left\">"
                       f"<code>{cell(v)}</code></td></tr>" for k, v in rows)
        return f"<table>{body}</table>"

    def to_json(self) -> dict:
        """The verdict as JSON-ready data: numbers as strings, matrices as nested lists of strings."""

        def value(v):
            if isinstance(v, ImmutableMatrix):
                return [[_show_number(e) for e in v.row(i)] for i in range(v.rows)]
            return str(v)

        out: dict[str, Any] = {"kind": self.kind, "theorem": self.theorem, "chain": self.chain,
                               "claim": f"{self.lhs} = {self.rhs}", "summary": self.summary(), "seed": self.seed,
                               "budget": self.budget, "instances": self.instances, "satisfied": self.satisfied,
                               "compared": self.compared, "stopped": self.stopped}
        if self.kind == "false":
            out.update(values={_symbol_name(k): value(v) for k, v in self.values.items()},
                       lhs_value=value(self.lhs_value), rhs_value=value(self.rhs_value), entry=list(self.entry),
                       hypotheses=[name for name, _ in self.hypotheses])
        elif self.unsatisfied:
            out["unsatisfied"] = self.unsatisfied
        return out


def _to_matrix(m: DomainMatrix) -> ImmutableMatrix:
    return ImmutableMatrix(m.to_Matrix())


def _verdict_values(problem: _Problem, c: _Candidate, judgement: _Judgement) -> dict:
    values: dict = {sym: Integer(c.dims[sym]) for sym in problem.dims.values() if sym in c.dims}
    values.update({sym: c.scalars[sym] for sym in problem.scalars.values() if sym in c.scalars})
    for sym in problem.matrices.values():
        if sym in c.env:
            values[sym] = _to_matrix(c.env[sym])
    for key, value in c.env.items():
        if isinstance(key, FamilyMatrix):
            values[key] = _to_matrix(value)
    for sym, value in judgement.defined.items():
        values[sym] = _to_matrix(value)
    return values


# --- the search -----------------------------------------------------------------------------------------------


def refute(statement, chain: str | None = None, *, seed: int = 0, budget: int = DEFAULT_BUDGET,
           time_limit: float | None = None, shrink: bool = True) -> Verdict:
    """Look for a counterexample to the claim of ``chain`` (default: the main claim) of ``statement`` (a
    :class:`~derive.Proof`, steps ignored, or a registry ``Statement``): at most ``budget`` instances, the smallest
    dimensions and simplest numbers first; deterministic in ``seed``.  ``time_limit`` (CPU seconds) is an outer
    guard.  A counterexample is shrunk (with ``shrink``) and confirmed by :func:`confirm` before it is returned."""
    problem = _problem(statement, chain)
    name = problem.chain.name
    started = time.process_time()

    def out_of_time() -> bool:
        return time_limit is not None and time.process_time() - started > time_limit

    sampler = _sampler(problem)
    shapes = _shapes(problem)
    seed_text = f"{seed}/{problem.proof.theorem}/{name}"
    tried = satisfied = compared = 0
    reasons: dict[str, int] = {}
    found: tuple[int, _Candidate] | None = None
    stopped = False
    for k, (shape, tier, how) in enumerate(_schedule(shapes)):
        if k >= budget:
            break
        if out_of_time():
            stopped = True
            break
        c = _instance(problem, sampler, shape, tier, how, random.Random(f"{seed_text}/{k}"))
        tried += 1
        if isinstance(c, str):
            reasons[c] = reasons.get(c, 0) + 1
            continue
        judgement = _judge(problem, c.dims, c.scalars, c.env)
        if judgement.status == "unsatisfied":
            reasons[judgement.reason] = reasons.get(judgement.reason, 0) + 1
            continue
        satisfied += 1
        if judgement.status == "undefined":
            continue
        compared += 1
        if judgement.status == "differ":
            found = (k, c)
            break
    hypotheses = tuple((h.name, _hypothesis_text(h)) for h in problem.hypotheses)
    common = dict(theorem=problem.proof.theorem, chain=name, lhs=problem.chain.lhs, rhs=problem.chain.rhs,
                  hypotheses=hypotheses, seed=seed, budget=budget, instances=tried, satisfied=satisfied,
                  forall=any(h.forall for h in problem.hypotheses))
    if found is not None:
        k, best = found
        if shrink:
            shrinker = _Shrinker(problem, sampler, seed_text,
                                 lambda: time_limit is not None and time.process_time() - started > 2 * time_limit)
            best = shrinker.smaller_shapes(best, shapes)
            best = shrinker.draws(best)
            best = shrinker.entries(best)
        judgement = _judge(problem, best.dims, best.scalars, best.env)
        values = _verdict_values(problem, best, judgement)
        if judgement.status == "differ" and confirm(problem.proof, values, name):
            lhs, rhs = _to_matrix(judgement.lhs), _to_matrix(judgement.rhs)
            entry = next((i, j) for i in range(lhs.rows) for j in range(lhs.cols) if lhs[i, j] != rhs[i, j])
            return Verdict("false", **common, compared=compared, values=values, lhs_value=lhs, rhs_value=rhs,
                           entry=entry, found_at=k, stopped=stopped)
        compared -= 1  # never: a candidate the confirmation does not bear out is not reported
    if satisfied == 0:
        reason = max(reasons, key=reasons.get) if reasons else ""
        return Verdict("hypotheses_unsatisfied", **common, compared=compared, unsatisfied=reason, stopped=stopped)
    return Verdict("true_on_instances", **common, compared=compared, stopped=stopped)


def refute_all(statement, *, seed: int = 0, budget: int = DEFAULT_BUDGET,
               time_limit: float | None = None) -> dict[str, Verdict]:
    """:func:`refute` for every chain of the statement (its lemmas, then ``"main"``), by chain name."""
    return {name: refute(statement, name, seed=seed, budget=budget, time_limit=time_limit)
            for name in statement_chains(statement)}
