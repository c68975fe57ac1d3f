"""The witness's checks: bind a sample, verify the hypotheses, evaluate every step.

Three checks:

* :func:`check_instances` — random rational instances, for several shapes, that satisfy every
  hypothesis of the chain being checked (verified exactly, so a bad sample cannot pass silently);
  claim sides and every step must evaluate to the same matrix.
* :func:`check_identity` — the same sampler run with symbolic parameters (a Cayley-transform
  orthogonal matrix of symbols, Λ = diag(s_i²), free symbolic matrices) in concrete dimensions, so each
  chain's claim is checked as an identity of rational functions over ``QQ(params)``; a chain whose rational
  functions grow past a term limit is checked at random large-integer points instead (Schwartz–Zippel).
* :func:`check_gradient` — the gradient formula ∇_β ½‖Y − Xβ‖²_F = Xᵀ(Xβ − Y), which
  :func:`derive.constructions.gd_step_from_zero` takes as given, by SymPy differentiation.

Samples come from :func:`derive.witness.sampler.sampler_for`: the generic sampler with the theorem's
sampling hints.  A step citing a checked theorem (``thm:ID``) is checked like any other: both
expressions are evaluated and compared.

Scalar symbols are fixed before sampling: positive rationals for positive ones, non-zero rationals for real
ones, and, on one extra *degenerate* sample per shape, 0 for real ones (with singular diagonal and symmetric
matrices where no hypothesis excludes them): a claim stated for every real λ must hold at λ = 0 where it is
defined there; where the hypotheses or the claim are undefined on such a sample, it is skipped (counted in
the report).  An induction lemma is checked as two chains, its base at 0 and its step at variable + 1, whose
hypothesis IH (the claim at variable) is evaluated on the sample: for a true claim it always holds, so where
it does not, the claim itself is refuted.  When no sample satisfies the hypotheses, the witness tries larger
dimensions, then says that it cannot sample, which dimensions it tried and how to give hints.
"""

from __future__ import annotations

import dataclasses
import functools
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import sympy
from sympy import QQ, Matrix, Symbol
from sympy.assumptions import Q
from sympy.assumptions.assume import AppliedPredicate
from sympy.logic.boolalg import BooleanTrue
from sympy.matrices.expressions import MatrixSymbol
from sympy.polys.matrices import DomainMatrix

from ..kernel import Chain, Hypothesis, Induction, Proof, Step
from ..kernel.scalars import scalar_kind
from ..kernel.terms import FamilyMatrix, index_kind
from .evaluate import (
    SYMBOLIC_TERM_LIMIT,
    RecurrenceUndefined,
    SymbolicTooLarge,
    UndefinedValue,
    WitnessError,
    _Arith,
    _coefficient,
    _Ctx,
    _det,
    _dim,
    _equal,
    _eval,
    _FunctionArith,
    _is_diagonal,
    _positive_rational,
    _rational,
    _RationalArith,
    _shape_of,
    _to_domain,
    symbolic_term_limit,
)
from .sampler import (
    INDEX,
    KINDS,
    SHAPES,
    Sample,
    Sampler,
    Source,
    _random_source,
    _symbol_source,
    _Symbols,
    _symbols,
    chains_of,
    reflection_pattern,
    sampler_for,
)

__all__ = ["QUICK_IDENTITY_DIMS", "GradientReport", "IdentityReport", "InstanceReport", "check_gradient",
           "check_identity", "check_instances", "identity_shape", "witness_all"]


# --- binding a sample to a proof -----------------------------------------------------


def _member_of(name: str, table: _Symbols) -> tuple[str, int] | None:
    """(family, index) for a sample's name ``x[2]`` of a member of a free family of the proof."""
    family, bracket, rest = name.partition("[")
    if not bracket or not rest.endswith("]") or not rest[:-1].isdigit() or family not in table.families:
        return None
    return family, int(rest[:-1])


def _bind(proof: Proof, table: _Symbols, sample: Sample, arith: _Arith, chain: str,
          scalars: Mapping[Symbol, Any]) -> _Ctx:
    """The sample as a context: names resolved to the proof's symbols (definitions not yet evaluated)."""

    def fail(reason: str):
        raise WitnessError(f"sampler bug: {reason}", proof.theorem, chain)

    dims: dict[Symbol, int] = {}
    for name, value in sample.dims.items():
        if name not in table.dims or name in table.bound:
            fail(f"dimension {name} is not a free dimension of the theorem")
        is_index = index_kind(table.dims[name]) == "index"
        if int(value) < (0 if is_index else 1):
            fail(f"{'index' if is_index else 'dimension'} {name} = {value} is not "
                 f"{'a natural number' if is_index else 'positive'}")
        dims[table.dims[name]] = int(value)
    env: dict[MatrixSymbol, DomainMatrix] = {}
    members: dict[tuple[str, int], DomainMatrix] = {}
    for name, value in sample.values.items():
        member = _member_of(name, table)
        if member is not None:
            family = table.families[member[0]]
            if family.is_defined:
                fail(f"{member[0]} is defined by a recurrence; the witness computes {name} from it")
            sym = FamilyMatrix(family.name, member[1], family.rows.xreplace({family.index: member[1]}),
                               family.cols.xreplace({family.index: member[1]}))
        elif name not in table.matrices or name in table.bound:
            fail(f"{name} is not a free matrix symbol of the theorem")
        elif name in table.defined:
            fail(f"{name} is defined by the theorem; the witness computes it from its definition")
        else:
            sym = table.matrices[name]
        try:
            converted = _to_domain(value, arith.domain, name)
            expected = _shape_of(sym, dims)
        except WitnessError as exc:
            fail(exc.reason)
        if converted.shape != expected:
            fail(f"{name} has shape {converted.shape}, not {expected}")
        if member is not None:
            members[member] = converted
        else:
            env[sym] = converted
    return _Ctx(arith, env, dims, scalars=dict(scalars), families=dict(table.families), members=members)


def _define(proof: Proof, ctx: _Ctx, chain: str) -> None:
    """Definitions, evaluated from their right-hand sides in order."""
    for d in proof.definitions:
        try:
            ctx.env[d.symbol] = _eval(d.rhs, ctx)
        except RecurrenceUndefined:
            raise
        except WitnessError as exc:
            raise WitnessError(f"definition {d.name}: {exc.reason}", proof.theorem, chain) from None


def _scalar_values(table: _Symbols, rng: random.Random, zeros: Iterable[Symbol] = (), *,
                   points: bool = False) -> dict[Symbol, Any]:
    """Values of the theorem's scalar symbols for one instance: positive rationals for positive ones, non-zero
    rationals for real ones, 0 for those in ``zeros`` (draws nothing when the theorem has no scalar); with
    ``points``, the large random integers of an identity checked at random points (:func:`_point_source`)."""
    zeros = set(zeros)
    out = {}
    for sym in table.scalars.values():
        positive = scalar_kind(sym) == "positive"
        if points:
            value = _point_value(rng, positive)
        else:
            value = _positive_rational(rng) if positive else _rational(rng)
        out[sym] = QQ(0) if sym in zeros else value
    return _solve_scalar_equations(table, out, QQ)


def _solve_scalar_equations(table: _Symbols, values: dict, domain) -> dict:
    """Each scalar hypothesis λ = r (issue 29): λ takes r's value on the other scalars (in ``domain``: rational
    numbers, or the symbolic run's rational functions).  An r with matrices or dimensions in it is left alone:
    the hypothesis check then says the witness cannot sample it."""
    pending = dict(table.scalar_equations)
    for _ in range(len(pending)):
        for symbol, rhs in list(pending.items()):
            given = {s: domain.to_sympy(v) for s, v in values.items() if s != symbol}
            value = rhs.xreplace(given)
            allowed = set().union(*(v.free_symbols for v in given.values()))
            if value.free_symbols - allowed or value.has(sympy.Trace):
                continue
            values[symbol] = domain.from_sympy(value)
            del pending[symbol]
    return values


# --- hypotheses ----------------------------------------------------------------------

_PREDICATES = {"positive_definite": Q.positive_definite, "invertible": Q.invertible,
               "diagonal": Q.diagonal, "symmetric": Q.symmetric}


@dataclass
class _Tally:
    hypotheses: int = 0
    steps: int = 0
    instances: int = 0
    unproved_signs: int = 0  # (identities) inequalities checked at sample points only
    degenerate: int = 0  # degenerate instances checked
    degenerate_steps: int = 0  # steps checked on degenerate instances (not counted in ``steps``)
    skipped: int = 0  # degenerate instances at which the statement is undefined
    parameters: int = 0  # (identities at random points) the most parameters one point drew

    def add(self, other: _Tally) -> None:
        for f in fields(self):
            combine = max if f.name == "parameters" else int.__add__
            setattr(self, f.name, combine(getattr(self, f.name), getattr(other, f.name)))


class _Skip(Exception):
    """A degenerate sample at which the hypotheses or the claim are undefined or false: it proves nothing."""


def _predicate_holds(name: str, value: DomainMatrix, ctx: _Ctx, rng: random.Random, tally: _Tally) -> str | None:
    """None if the predicate holds of the value, else why not."""
    rows, cols = value.shape
    if rows != cols:
        return f"it is applied to a non-square {rows}x{cols} matrix"
    if name == "diagonal":
        return None if _is_diagonal(value) else "an off-diagonal entry is non-zero"
    if name == "symmetric":
        return None if _equal(value, value.transpose()) else "the matrix is not symmetric"
    if name == "invertible":
        return None if _det(value) else "the determinant is zero"
    if name == "positive_definite":  # xᵀAx > 0 for x ≠ 0, no symmetry: the symmetric part A + Aᵀ is
        doubled = value + value.transpose()
        for size in range(1, rows + 1):
            sign, proved = ctx.arith.sign(_det(doubled[:size, :size]), rng)
            tally.unproved_signs += not proved
            if sign <= 0:
                return f"the leading principal minor of order {size} is not positive"
        return None
    return f"the witness does not know the predicate {name}"


def _bind_bound(h: Hypothesis, ctx: _Ctx, rng: random.Random) -> _Ctx:
    """A random instantiation of a hypothesis's bound symbols (sizes 1..3, indices 0..3, random rational
    matrices)."""
    dims = {v: rng.randint(0 if index_kind(v) == "index" else 1, 3) for v in h.forall if isinstance(v, Symbol)}
    all_dims = {**ctx.dims, **dims}
    env = {}
    for v in h.forall:
        if isinstance(v, MatrixSymbol):
            rows, cols = _shape_of(v, all_dims)
            random_rows = [[_rational(rng) for _ in range(cols)] for _ in range(rows)]
            env[v] = DomainMatrix(random_rows, (rows, cols), QQ).convert_to(ctx.arith.domain).to_dense()
    return ctx.extend(env, dims)


def _hypothesis_holds(h: Hypothesis, ctx: _Ctx, rng: random.Random, tally: _Tally) -> str | None:
    if isinstance(h.lhs, AppliedPredicate):
        if h.forall or not isinstance(h.rhs, BooleanTrue) or len(h.lhs.arguments) != 1:
            return "a predicate hypothesis must read Q.<predicate>(M) = true"
        if h.lhs.function == Q.nonzero:  # issue 41: a scalar fact c ≠ 0
            return None if _coefficient(h.lhs.arguments[0], ctx) != ctx.arith.domain.zero else "it is zero"
        name = next((k for k, v in _PREDICATES.items() if h.lhs.function == v), None)
        if name is None:
            return f"unknown predicate {h.lhs.function}"
        return _predicate_holds(name, _eval(h.lhs.arguments[0], ctx), ctx, rng, tally)
    if type(h.lhs) is Symbol:  # a scalar hypothesis λ = r (issue 29)
        return None if _coefficient(h.lhs, ctx) == _coefficient(h.rhs, ctx) else "the two sides differ"
    if not h.forall:
        return None if _equal(_eval(h.lhs, ctx), _eval(h.rhs, ctx)) else "the two sides differ"
    for trial in range(3):
        inner = _bind_bound(h, ctx, rng)
        if not _equal(_eval(h.lhs, inner), _eval(h.rhs, inner)):
            return f"the two sides differ at random instantiation {trial + 1} of {[str(v) for v in h.forall]}"
    return None


def _check_hypotheses(proof: Proof, chain: str, hyps: Iterable[Hypothesis], ctx: _Ctx, rng: random.Random,
                      tally: _Tally, notes: Mapping[str, str] | None = None, *, lenient: bool = False,
                      dims: Mapping[str, int] | None = None, unmet: Sequence[str] = ()) -> None:
    """Every hypothesis holds on the sample; a sample that violates one is never skipped, unless ``lenient``
    (a degenerate sample: it is then skipped, as the statement says nothing there).

    A hypothesis the sampler did not ensure by construction (it has a note) is reported as one the
    witness cannot sample, with the note's reason; any other violation is a sampler bug.  A member of a
    recurrence that is undefined on the sample is a sampling failure (:class:`RecurrenceUndefined`).
    """
    for h in hyps:
        try:
            why = _hypothesis_holds(h, ctx, rng, tally)
        except RecurrenceUndefined:
            raise
        except WitnessError as exc:
            why = exc.reason
        if why is not None:
            if lenient:
                raise _Skip(f"hypothesis {h.name} does not hold: {why}")
            note = (notes or {}).get(h.name)
            if note is not None:  # a sampling failure, never reported as sides that differ
                why = "the values drawn do not satisfy it" if why.startswith("the two sides differ") else why
                needed = f"; the sampler needed {'; '.join(unmet)}" if unmet else ""
                raise WitnessError(f"cannot sample hypothesis {h.name}: {note} (on the sample: {why}){needed}",
                                   proof.theorem, chain, hypothesis=h.name, dims=dims)
            raise WitnessError(f"sampler bug: the sample violates hypothesis {h.name}: {why}", proof.theorem, chain)
        tally.hypotheses += 1


def _mentions(h: Hypothesis, names: frozenset[str]) -> bool:
    return any(str(s.name) in names for s in h.lhs.atoms(MatrixSymbol) | h.rhs.atoms(MatrixSymbol))


def _sampled_context(proof: Proof, table: _Symbols, sample: Sample, arith: _Arith, chain: str,
                     hyps: Sequence[Hypothesis], rng: random.Random, tally: _Tally,
                     scalars: Mapping[Symbol, Any] | None = None, *, lenient: bool = False) -> _Ctx:
    """Bind a sample, verify the hypotheses, evaluate the definitions.

    Hypotheses cannot mention defined symbols (the kernel requires definitions to be fresh), so they are
    checked first: a sampler bug is then reported as the hypothesis it breaks, not as a definition that
    happens to be undefined on the bad sample.  Any that do mention one are checked after the definitions.
    """
    ctx = _bind(proof, table, sample, arith, chain, scalars or {})
    notes = sample.notes
    first = [h for h in hyps if not _mentions(h, table.defined)]
    _check_hypotheses(proof, chain, first, ctx, rng, tally, notes, lenient=lenient, dims=sample.dims,
                      unmet=sample.unmet)
    try:
        _define(proof, ctx, chain)
    except WitnessError as exc:
        if lenient:
            raise _Skip(exc.reason) from None
        raise
    later = [h for h in hyps if _mentions(h, table.defined)]
    _check_hypotheses(proof, chain, later, ctx, rng, tally, notes, lenient=lenient, dims=sample.dims,
                      unmet=sample.unmet)
    return ctx


def _check_instance_step(proof: Proof, chain: Chain, index: int, step: Step, ctx: _Ctx) -> None:
    """A step that instantiates a forall-hypothesis: the instance is well-shaped and the equation holds."""

    def fail(reason: str):
        raise WitnessError(reason, proof.theorem, chain.name, index, step.rule)

    name = step.rule.removeprefix("hyp:")
    h = next((h for h in (*proof.hypotheses, *chain.hypotheses) if h.name == name and step.rule.startswith("hyp:")),
             None)
    if h is None or not h.forall:
        fail("the step instantiates variables, but its rule is not a hypothesis that binds any")
    given = dict(step.instance)
    if len(given) != len(step.instance) or set(given) != set(h.forall):
        fail("the instance does not bind exactly the hypothesis's variables")
    try:
        dims = {v: _dim(t, ctx.dims) for v, t in given.items() if isinstance(v, Symbol)}
        all_dims = {**ctx.dims, **dims}
        env = {}
        for v, t in given.items():
            if isinstance(v, MatrixSymbol):
                env[v] = _eval(t, ctx)
                if env[v].shape != _shape_of(v, all_dims):
                    fail(f"{v.name} is instantiated with a {env[v].shape} matrix, but must be {_shape_of(v, all_dims)}")
        inner = ctx.extend(env, dims)
        if not _equal(_eval(h.lhs, inner), _eval(h.rhs, inner)):
            fail(f"the instantiated hypothesis {h.name} is false on this sample")
    except WitnessError as exc:
        if exc.chain is not None:
            raise
        fail(exc.reason)


#: Rules whose instance binds something other than a hypothesis's variables: a cited theorem's symbols, a
#: recurrence's index (``step:F``), an induction lemma's variable.  Both expressions are compared all the same.
_OTHER_INSTANCES = ("thm:", "step:", "lemma:")


def _check_chain(proof: Proof, chain: Chain, ctx: _Ctx, tally: _Tally) -> None:
    """Claim lhs, every step and the claim rhs must all have the same value."""

    def value(term, index, rule):
        try:
            return _eval(term, ctx)
        except WitnessError as exc:
            raise WitnessError(f"cannot evaluate: {exc.reason}", proof.theorem, chain.name, index, rule) from None

    previous = value(chain.lhs, None, None)
    for index, step in enumerate(chain.steps, start=1):
        if step.instance and not step.rule.startswith(_OTHER_INSTANCES):
            _check_instance_step(proof, chain, index, step, ctx)
        current = value(step.expr, index, step.rule)
        if not _equal(previous, current):
            raise WitnessError("this step's expression differs in value from the previous one", proof.theorem,
                               chain.name, index, step.rule)
        tally.steps += 1
        previous = current
    rhs = value(chain.rhs, None, None)
    if not _equal(previous, rhs):
        raise WitnessError("the chain's last expression differs in value from the claim's right-hand side",
                           proof.theorem, chain.name, len(chain.steps) or None, None)


def _recurrences(chain: Chain, ctx: _Ctx) -> None:
    """Compute the members of defined families the chain names, from their recurrences: one undefined on the
    sample (a singular inverse on the way) makes the sample unusable (:class:`RecurrenceUndefined`), which is a
    sampling failure, not a refutation."""
    nodes: dict[FamilyMatrix, None] = {}
    for term in (chain.lhs, chain.rhs, *(s.expr for s in chain.steps)):
        nodes.update(dict.fromkeys(term.atoms(FamilyMatrix)))
    for node in nodes:
        family = ctx.families.get(node.name)
        if family is not None and family.is_defined:
            try:
                _eval(node, ctx)
            except RecurrenceUndefined:
                raise
            except WitnessError:
                pass  # not a sampling matter: the chain's check reports it where it occurs


def _induction_hypothesis(proof: Proof, chain: Chain, induction: Induction | None, ctx: _Ctx,
                          identity: bool = False) -> None:
    """The step chain's hypothesis IH, the claim at the variable, on the sample: it holds whenever the claim is
    true, so where it does not, the claim itself is refuted.  Undefined there: a sampling failure."""
    if induction is None or not chain.name.endswith("_step"):
        return
    t = induction.variable
    try:
        lhs, rhs = _eval(induction.lhs, ctx), _eval(induction.rhs, ctx)
    except UndefinedValue as exc:
        raise RecurrenceUndefined(f"the claim {induction.name} at {t} (hyp:IH) is undefined on this sample: "
                                  f"{exc.reason}", proof.theorem, chain.name) from None
    if not _equal(lhs, rhs):
        at = "as an identity of rational functions" if identity else "on this sample"
        value = ctx.dims.get(t)
        where = f"{t} = {value}" if value is not None else str(t)
        raise WitnessError(f"the induction claim {induction.name} is false: {induction.lhs} = {induction.rhs} fails "
                           f"at {where} {at} (hyp:IH, the claim at {t}, does not hold), so no chain can prove it",
                           proof.theorem, chain.name, None, "hyp:IH")


# --- sampling, with retries, larger dimensions and diagnostics --------------------------

#: Draws of one sample before a value that is undefined on every draw (a recurrence, a solve) is a failure.
ATTEMPTS = 3
#: How much a dimension grows when no sample satisfies the hypotheses (each alone, one value at a time).
GROWTH = (1, 2)

_HINT = ("to help it, give hints with @theorem(sampling={...}): a symbol's value as a term in other symbols "
         f"(\"X\": mul(U, S)), its kind ({', '.join(KINDS)}), or a dimension's value (\"n\": 4)")


def _format_tried(tried: Sequence[Mapping[str, int]]) -> str:
    """``n = 3, 4, 5 with p1 = 2, p2 = 2`` (or one assignment per try when several dimensions changed)."""
    unique: list[dict[str, int]] = []
    for dims in tried:
        if dict(dims) not in unique:
            unique.append(dict(dims))
    if not unique or not unique[0]:
        return "no dimensions"
    names = list(dict.fromkeys(name for dims in unique for name in dims))
    varying = [n for n in names if len({dims.get(n) for dims in unique}) > 1]
    fixed = ", ".join(f"{n} = {unique[0][n]}" for n in names if n not in varying and n in unique[0])
    if len(varying) == 1:
        (name,) = varying
        values = ", ".join(str(dims[name]) for dims in unique if name in dims)
        return f"{name} = {values}" + (f" with {fixed}" if fixed else "")
    if not varying:
        return fixed
    tries = "; ".join(", ".join(f"{n} = {dims[n]}" for n in varying if n in dims) for dims in unique)
    return f"{tries}" + (f" (with {fixed})" if fixed else "")


def _growable(proof: Proof, table: _Symbols, exc: WitnessError, chain: Chain) -> list[str]:
    """Free dimensions worth growing after ``exc``: those of the hypothesis it names (all, if it names none)."""
    dims = [n for n in table.free_dims if index_kind(table.dims[n]) == "dimension"]
    h = next((h for h in (*proof.hypotheses, *chain.hypotheses) if h.name == exc.hypothesis), None)
    if h is None:
        return dims
    terms = [*h.lhs.atoms(MatrixSymbol, FamilyMatrix), *h.rhs.atoms(MatrixSymbol, FamilyMatrix)] \
        if not isinstance(h.lhs, AppliedPredicate) else list(h.lhs.arguments[0].atoms(MatrixSymbol, FamilyMatrix))
    used = {str(s.name) for m in terms for d in m.shape for s in sympy.sympify(d).free_symbols}
    return [n for n in dims if n in used] or dims


def _grown(attempt: Callable[[Mapping[str, int]], Any], shape: Mapping[str, int], proof: Proof, table: _Symbols,
           chain: Chain) -> Any:
    """``attempt(shape)``; when it cannot sample, the same with each dimension of the failing hypothesis grown,
    and if none works, the first failure with the dimensions tried and how to give hints."""
    try:
        return attempt(shape)
    except WitnessError as exc:
        if not exc.cannot_sample:
            raise
        first = exc
    tried = [first.dims] if first.dims else []
    start = first.dims or {}
    for name in _growable(proof, table, first, chain):
        base = start.get(name, shape.get(name))
        if base is None:
            continue
        for extra in GROWTH:
            try:
                return attempt({**shape, name: int(base) + extra})
            except WitnessError as again:
                if not again.cannot_sample:
                    raise
                if again.dims:
                    tried.append(again.dims)
    raise WitnessError(f"{first.reason}; tried {_format_tried(tried)}; {_HINT}", first.theorem, first.chain,
                       hypothesis=first.hypothesis, dims=first.dims)


def _may_be_singular(proof: Proof) -> bool:
    """Whether a diagonal or symmetric matrix may be singular: no hypothesis makes it invertible."""
    preds: dict[Any, set] = {}
    for h in (*proof.hypotheses, *(h for c, _ in chains_of(proof) for h in c.hypotheses)):
        if isinstance(h.lhs, AppliedPredicate) and len(h.lhs.arguments) == 1:
            name = next((k for k, v in _PREDICATES.items() if h.lhs.function == v), None)
            preds.setdefault(h.lhs.arguments[0], set()).add(name)
    return any(p & {"diagonal", "symmetric"} and not p & {"invertible", "positive_definite"} for p in preds.values())


def _degenerate_variants(table: _Symbols, singular: bool, shape_index: int) -> list[tuple[list[Symbol], bool]]:
    """The degenerate samples of a shape, as (real scalars at 0, singular matrices): the scalars at 0 (all of
    them, or one at a time on odd shapes), singular matrices, and both at once."""
    real = table.real_scalars
    zeros = real if len(real) <= 1 or shape_index % 2 == 0 else [real[(shape_index // 2) % len(real)]]
    out = [(zeros, False)] if zeros else []
    if singular:
        out.append(([], True))
        if zeros:
            out.append((zeros, True))
    return out


# --- the instance check --------------------------------------------------------------


@dataclass(frozen=True)
class InstanceReport:
    """What :func:`check_instances` checked."""

    theorem: str
    chains: int
    instances: int  # (chain, shape, trial) samples, each with all hypotheses and steps checked
    hypotheses: int
    steps: int  # steps checked on the ``instances`` (each chain's steps once per instance)
    seconds: float
    degenerate: int = 0  # degenerate samples (real scalars at 0, singular matrices) checked in addition
    skipped: int = 0  # degenerate samples at which the hypotheses or the claim are undefined
    degenerate_steps: int = 0  # steps checked on the degenerate samples


def _sampler_for(proof: Proof, sampler: Sampler | None) -> Sampler:
    return sampler if sampler is not None else sampler_for(proof)


def _instance(proof: Proof, table: _Symbols, sampler: Sampler, chain: Chain, induction: Induction | None,
              label: str, tally: _Tally, shape: Mapping[str, int], zeros: Sequence[Symbol] = (),
              singular: bool = False, lenient: bool = False, points: bool = False,
              reflections: int | None = None) -> tuple[_Ctx, random.Random]:
    """One sample for ``chain`` satisfying its hypotheses, with IH defined on it.  A draw on which a value is
    undefined (a recurrence, a solve) or a hypothesis the sampler does not construct fails is drawn again, up to
    :data:`ATTEMPTS` times, before the witness says it cannot sample.  With ``points``, the parameters are the
    large random integers of an identity checked at random points (:func:`_identity_at_points`).  Square
    orthogonal matrices are reflections where ``reflections`` says (:func:`reflection_pattern`; random bits
    drawn from the label when None)."""
    hyps = (*proof.hypotheses, *(h for h in chain.hypotheses if induction is None))
    failure: WitnessError | None = None
    dims: Mapping[str, int] | None = None
    if reflections is None:
        reflections = random.Random(f"{label}/reflections").getrandbits(64)
    for attempt in range(ATTEMPTS):
        rng = random.Random(label if attempt == 0 else f"{label}/again {attempt}")
        scalars = _scalar_values(table, rng, zeros, points=points)
        scratch = _Tally()
        try:
            source = (_point_source(rng, scalars, scratch, reflections) if points
                      else _random_source(rng, scalars=scalars, degenerate=singular, reflections=reflections))
            sample = sampler(source, shape, chain.name)
            dims = sample.dims
            arith = _PointArith() if points else _RationalArith()
            ctx = _sampled_context(proof, table, sample, arith, chain.name, hyps, rng, scratch, scalars,
                                   lenient=lenient)
            _recurrences(chain, ctx)
            _induction_hypothesis(proof, chain, induction, ctx, identity=points)
        except UndefinedValue as exc:
            failure = exc
            continue
        except WitnessError as exc:
            if not exc.cannot_sample or exc.hypothesis is None:
                raise
            failure = exc  # a hypothesis that holds only if the values drawn happen to satisfy it: draw again
            continue
        tally.add(scratch)
        return ctx, rng
    if isinstance(failure, UndefinedValue):
        reason = failure.reason if failure.cannot_sample else f"cannot sample: {failure.reason}"
        raise WitnessError(f"{reason} (on each of {ATTEMPTS} draws)", proof.theorem, chain.name,
                           dims=failure.dims or dims)
    raise failure


def _degenerate_instance(proof: Proof, table: _Symbols, sampler: Sampler, chain: Chain, induction: Induction | None,
                         label: str, tally: _Tally, shape: Mapping[str, int], zeros: Sequence[Symbol],
                         singular: bool) -> None:
    """A degenerate sample: skipped where the statement is undefined or the hypotheses fail, else checked like
    any other (a refutation says which scalars were 0)."""
    where = ", ".join([*(f"{s} = 0" for s in zeros), *(["singular diagonal and symmetric matrices where no "
                                                         "hypothesis excludes them"] if singular else [])])
    try:
        try:
            ctx, _ = _instance(proof, table, sampler, chain, induction, label, _Tally(), shape, zeros, singular,
                               lenient=True)
        except WitnessError as exc:
            if exc.cannot_sample:
                raise _Skip(exc.reason) from None
            raise
        try:
            _eval(chain.lhs, ctx)
            _eval(chain.rhs, ctx)
        except UndefinedValue as exc:
            raise _Skip(exc.reason) from None
    except _Skip:
        tally.skipped += 1
        return
    scratch = _Tally()
    try:
        _check_chain(proof, chain, ctx, scratch)
    except WitnessError as exc:
        raise WitnessError(f"{exc.reason} (on a degenerate sample: {where})", exc.theorem, exc.chain, exc.step,
                           exc.rule) from None
    tally.degenerate += 1
    tally.degenerate_steps += scratch.steps


def check_instances(proof: Proof, trials: int = 1, seed: int = 0, *, sampler: Sampler | None = None,
                    shapes: Sequence[Mapping[str, int]] = SHAPES) -> InstanceReport:
    """Evaluate every chain of ``proof`` exactly on random instances satisfying its hypotheses.

    For each chain (lemmas, then the main claim; an induction as its base and step chains), shape and trial:
    draw a sample, verify every global and local hypothesis on it (a failure is a sampler bug and raises),
    check steps that instantiate a forall-hypothesis, and require the claim sides and every step to evaluate
    to the same matrix.  Where the theorem has real scalars (or matrices that may be singular), one more,
    degenerate sample per shape sets them to 0 (see the module docstring).  Deterministic in ``seed``.
    """
    start = time.perf_counter()
    sampler = _sampler_for(proof, sampler)
    table = _symbols(proof)
    tally = _Tally()
    chains = chains_of(proof)
    singular = _may_be_singular(proof)
    for chain, induction in chains:
        # which square orthogonal matrices are reflections: the first alternates over the shapes (both
        # components of O(n) on every run), the first three take every pair of components
        offset = random.Random(f"{seed}/{proof.theorem}/{chain.name}/reflections").getrandbits(64)
        for shape_index, shape in enumerate(shapes):
            for trial in range(trials):
                label = f"{seed}/{proof.theorem}/{chain.name}/{shape_index}/{trial}"
                reflections = reflection_pattern(shape_index * trials + trial, offset)
                attempt = functools.partial(_instance, proof, table, sampler, chain, induction, label, tally,
                                            reflections=reflections)
                ctx, _ = _grown(attempt, shape, proof, table, chain)
                _check_chain(proof, chain, ctx, tally)
                tally.instances += 1
            for variant, (zeros, singular_draws) in enumerate(_degenerate_variants(table, singular, shape_index)):
                label = f"{seed}/{proof.theorem}/{chain.name}/{shape_index}/degenerate {variant}"
                _degenerate_instance(proof, table, sampler, chain, induction, label, tally, shape, zeros,
                                     singular_draws)
    return InstanceReport(proof.theorem, len(chains), tally.instances, tally.hypotheses, tally.steps,
                          time.perf_counter() - start, tally.degenerate, tally.skipped, tally.degenerate_steps)


# --- identities at random points (Schwartz–Zippel) -------------------------------------
# A chain whose rational functions grow past the term limit (SymbolicTooLarge) is checked at IDENTITY_POINTS
# random points instead: the generic sampler draws every parameter as an independent uniform integer of
# POINT_BITS bits (non-zero; positive ones positive), and everything is evaluated exactly over QQ.  If lhs − rhs
# is not the zero rational function, its numerator is a non-zero polynomial of some degree D in the parameters,
# and by the Schwartz–Zippel lemma it vanishes at such a point with probability at most D / 2**POINT_BITS (for
# the sizes the witness runs, D is in the thousands at most: below 1e-15 per point, 1e-30 for two).  A claim
# that differs at a point is refuted for certain (the point satisfies every hypothesis, verified exactly).

#: Independent random points per chain checked at points.
IDENTITY_POINTS = 2
#: Bits of the random integers drawn as parameters at those points.
POINT_BITS = 64


def _point_value(rng: random.Random, positive: bool):
    """A uniform non-zero integer of :data:`POINT_BITS` bits, as a rational (positive when ``positive``)."""
    value = rng.randint(1, 2**POINT_BITS)
    return QQ(value if positive or rng.random() < 0.5 else -value)


def _point_source(rng: random.Random, scalars: Mapping[Symbol, Any], tally: _Tally, reflections: int = 0) -> Source:
    """Parameters for a random point: the sampler's general parametrisation (as for instances), at large
    integers (their number, with the scalars', is counted in ``tally.parameters``); square orthogonal matrices
    are reflections where ``reflections`` says, as on the symbolic run the point stands for."""
    tally.parameters = len(scalars)

    def draw(positive: bool):
        tally.parameters += 1
        return _point_value(rng, positive)

    return Source(QQ, draw, symbolic=False, scalars=scalars, reflections=reflections)


class _PointArith(_RationalArith):
    """Exact rationals at a random point: a sign there is not a sign for all parameters, so every inequality
    checked is counted as a sign point (as the symbolic route counts those it cannot prove)."""

    def sign(self, x, rng: random.Random) -> tuple[int, bool]:
        return (x > 0) - (x < 0), False


def _identity_at_points(proof: Proof, table: _Symbols, sampler: Sampler, chain: Chain, induction: Induction | None,
                        p: int, steps: bool, seed: int, tally: _Tally) -> None:
    """The chain's claim (with ``steps``, every step) at :data:`IDENTITY_POINTS` random points satisfying the
    hypotheses, for a chain too large for rational-function arithmetic."""
    for point in range(IDENTITY_POINTS):
        label = f"{seed}/points/{proof.theorem}/{chain.name}/{p}/{point}"
        attempt = functools.partial(_instance, proof, table, sampler, chain, induction, label, tally, points=True,
                                    reflections=_identity_reflections(p, seed))
        ctx, _ = _grown(attempt, identity_shape(p), proof, table, chain)
        if steps:  # each step is counted once, as on the symbolic route
            _check_chain(proof, chain, ctx, tally if point == 0 else _Tally())
        elif not _equal(_eval(chain.lhs, ctx), _eval(chain.rhs, ctx)):
            raise WitnessError(f"the claim is not an identity of rational functions for p = {p} (it fails at a "
                               "random point satisfying the hypotheses)", proof.theorem, chain.name)


# --- identities of rational functions ------------------------------------------------


@dataclass(frozen=True)
class IdentityReport:
    """What :func:`check_identity` checked, in dimension ``p`` (see :func:`identity_shape`)."""

    theorem: str
    p: int
    chains: int
    parameters: int  # symbols of the largest parametrisation
    hypotheses: int  # hypotheses verified identically (equations, diagonal, symmetric, det ≠ 0)
    sign_points: int  # inequalities (positive minors) not provable by the sign test, checked at sample points
    steps: int  # steps checked as identities (when ``steps=True``)
    seconds: float
    points: int = 0  # chains too large for rational functions, checked at random points instead


def _identity_reflections(p: int, seed: int) -> int:
    """Which square orthogonal matrices are reflections on the identity checks in dimension ``p``.  A rational
    parametrisation has a constant determinant, so each run covers one component of O(n) per matrix: the first
    orthogonal matrix is a reflection for odd p + seed and a rotation otherwise (p = 1 and p = 2 take both), the
    same for every chain (so chains still share a symbolic sample)."""
    return reflection_pattern(p + seed)


def identity_shape(p: int) -> dict[str, int]:
    """The concrete dimensions of the identity checks (n = p + 1, k = m = 1, d = 2, rank r = max(1, p − 1), and
    index symbols p − 1, so p = 1 checks empty prefixes)."""
    return {"n": p + 1, "p": p, "k": 1, "m": 1, "d": 2, "r": max(1, p - 1), INDEX: p - 1}


def _fingerprint(sample: Sample, kinds: Sequence[bool]) -> tuple:
    values = tuple((name, v.shape, tuple(map(tuple, v.to_list()))) for name, v in sorted(sample.values.items()))
    return tuple(kinds), tuple(sorted(sample.dims.items())), values


def _dry_run(proof: Proof, table: _Symbols, sampler: Sampler, shape: Mapping[str, int], chain: Chain,
             seed: int, reflections: int = 0) -> tuple[Sample, list[bool], Mapping[str, int]]:
    """The sampler on random numbers, recording which parameters it draws (a draw on which a value is
    undefined is drawn again), with the reflections of the symbolic run."""
    failure: UndefinedValue | None = None
    for attempt in range(ATTEMPTS):
        kinds: list[bool] = []
        scalars = _scalar_values(table, random.Random(f"{seed}/scalars/{attempt}"))
        rng = random.Random(seed if attempt == 0 else f"{seed}/again {attempt}")
        try:
            source = _random_source(rng, kinds, scalars=scalars, reflections=reflections)
            return sampler(source, shape, chain.name), kinds, shape
        except UndefinedValue as exc:
            failure = exc
    raise WitnessError(f"cannot sample: {failure.reason} (on each of {ATTEMPTS} draws)", proof.theorem, chain.name)


def check_identity(theorem_id: str, p: int, *, steps: bool = False, seed: int = 0,
                   proof: Proof | None = None, sampler: Sampler | None = None,
                   term_limit: int | None = SYMBOLIC_TERM_LIMIT) -> IdentityReport:
    """Check each chain's claim of a theorem as an identity of rational functions in dimension ``p``.

    The theorem's sampler runs once on random numbers (a dry run, to learn which parameters it draws) and
    then on symbols: Cayley transforms of symbolic skew matrices, Λ = diag(s_i²) with s_i > 0, free
    symbolic matrices; the theorem's scalar symbols are symbols too (positive ones positive).  Every
    hypothesis, global and local, must hold identically (inequalities: by a sign test on the rational
    function, or at random points where that test is inconclusive), and lhs − rhs must be the zero rational
    function.  With ``steps``, every step is compared as well.  Chains whose dry runs drew the same sample
    share one symbolic sample (whose hypotheses are checked for each).  An induction's step chain also needs
    its IH, the claim at the variable, to hold identically.

    A chain whose rational functions grow past ``term_limit`` polynomial terms in one operation (None: no
    limit) is checked at random points instead (:func:`_identity_at_points`; counted in ``points``): the
    limit counts terms, not seconds, so which chains take that route is the same on every machine.
    """
    start = time.perf_counter()
    if proof is None:
        from ..authoring.registry import build  # the registry imports the library, which imports derive: late

        proof = build(theorem_id)
    elif proof.theorem != theorem_id:
        raise WitnessError(f"the proof given is of {proof.theorem}, not {theorem_id}")
    sampler = _sampler_for(proof, sampler)
    table = _symbols(proof)
    scalars = list(table.scalars.values())
    tally = _Tally()
    groups: dict[tuple, _Ctx] = {}
    parameters = 0
    chains = chains_of(proof)
    reflections = _identity_reflections(p, seed)

    def symbolic(chain: Chain, induction: Induction | None, rng: random.Random, shape: Mapping[str, int]) -> _Ctx:
        nonlocal parameters
        dry, kinds, shape = _dry_run(proof, table, sampler, shape, chain, seed, reflections)
        if dry.unmet:  # the sampler could not meet a requirement: judge the hypotheses on the numbers first,
            # which says "cannot sample" at once where the symbolic test (determinants of rational functions)
            # could take minutes to find the same
            hyps = (*proof.hypotheses, *(chain.hypotheses if induction is None else ()))
            _sampled_context(proof, table, dry, _RationalArith(), chain.name, hyps, random.Random(seed), _Tally(),
                             _scalar_values(table, random.Random(f"{seed}/scalars/0")))
        key = _fingerprint(dry, kinds)
        scratch = _Tally()
        ctx = groups.get(key)
        if ctx is None:
            src = _symbol_source(kinds, scalars, reflections)
            _solve_scalar_equations(table, src.scalars, src.domain)
            ctx = _sampled_context(proof, table, sampler(src, shape, chain.name), _FunctionArith(src.domain),
                                   chain.name, proof.hypotheses, rng, scratch, src.scalars)
            groups[key] = ctx
            parameters = max(parameters, len(kinds) + len(scalars))
        local = chain.hypotheses if induction is None else ()
        _check_hypotheses(proof, chain.name, local, ctx, rng, scratch, dry.notes, dims=dry.dims, unmet=dry.unmet)
        try:
            _recurrences(chain, ctx)
            _induction_hypothesis(proof, chain, induction, ctx, identity=True)
        except RecurrenceUndefined as exc:
            raise WitnessError(f"cannot sample: {exc.reason} (as rational functions)", proof.theorem, chain.name,
                               dims=dry.dims) from None
        tally.add(scratch)
        return ctx

    points = 0
    for chain, induction in chains:
        rng = random.Random(f"{seed}/identity/{proof.theorem}/{chain.name}/{p}")
        attempt = functools.partial(symbolic, chain, induction, rng)
        before = dataclasses.replace(tally)
        try:
            with symbolic_term_limit(term_limit):
                ctx = _grown(attempt, identity_shape(p), proof, table, chain)
                if steps:
                    _check_chain(proof, chain, ctx, tally)
                elif not _equal(_eval(chain.lhs, ctx), _eval(chain.rhs, ctx)):
                    raise WitnessError(f"the claim is not an identity of rational functions for p = {p}",
                                       proof.theorem, chain.name)
        except SymbolicTooLarge:
            tally = before  # what the abandoned symbolic run counted is not reported
            points += 1
            _identity_at_points(proof, table, sampler, chain, induction, p, steps, seed, tally)
    return IdentityReport(proof.theorem, p, len(chains), max(parameters, tally.parameters), tally.hypotheses,
                          tally.unproved_signs, tally.steps, time.perf_counter() - start, points)


# --- the gradient formula ------------------------------------------------------------


@dataclass(frozen=True)
class GradientReport:
    """What :func:`check_gradient` checked."""

    p: int
    shapes: tuple[tuple[int, int, int], ...]  # (n, p, k)
    seconds: float


def _symbol_matrix(name: str, rows: int, cols: int) -> Matrix:
    return Matrix(rows, cols, lambda i, j: Symbol(f"{name}_{i}{j}", real=True))


def _gradient(loss: sympy.Expr, B: Matrix) -> Matrix:
    """The matrix of partial derivatives ∂loss/∂B_ij."""
    return Matrix(B.rows, B.cols, lambda i, j: sympy.diff(loss, B[i, j]))


def check_gradient(p: int, ks: Sequence[int] = (1, 2)) -> GradientReport:
    """∇_β ½‖Y − Xβ‖²_F = Xᵀ(Xβ − Y) by differentiation, and gd_step_from_zero is 0 − Γ ∇(0).

    The kernel has no calculus: :func:`derive.constructions.gd_step_from_zero` writes the gradient as
    Xᵀ(Xβ − Y).  Here the loss is differentiated entry by entry in dimensions n = p + 1, k in ``ks``, with
    symbolic X, Y, β, Γ, and the construction's term is evaluated exactly and compared with β₀ − Γ∇ at 0.
    """
    from ..authoring.constructions import dim, gd_step_from_zero

    start = time.perf_counter()
    shapes = []
    for k in ks:
        n = p + 1
        X, Y, B, G = (_symbol_matrix("x", n, p), _symbol_matrix("y", n, k), _symbol_matrix("b", p, k),
                      _symbol_matrix("g", p, p))
        residual = Y - X * B
        loss = sum(e**2 for e in residual) / 2
        grad = _gradient(loss, B)
        formula = X.T * (X * B - Y)
        if not (grad - formula).expand().is_zero_matrix:
            raise WitnessError(f"the gradient of ½‖Y − Xβ‖² is not Xᵀ(Xβ − Y) for n={n}, p={p}, k={k}")
        n_, p_, k_ = dim("n"), dim("p"), dim("k")
        Xs, Ys, Gs = MatrixSymbol("X", n_, p_), MatrixSymbol("Y", n_, k_), MatrixSymbol("Gamma", p_, p_)
        params = [*X, *Y, *G]
        domain = QQ.frac_field(*params)
        ctx = _Ctx(_FunctionArith(domain), {Xs: _to_domain(X, domain, "X"), Ys: _to_domain(Y, domain, "Y"),
                                            Gs: _to_domain(G, domain, "Gamma")}, {n_: n, p_: p, k_: k})
        step = _eval(gd_step_from_zero(Xs, Ys, Gs), ctx)
        expected = -G * grad.subs({b: 0 for b in B})
        if not _equal(step, _to_domain(expected, domain, "expected")):
            raise WitnessError(f"gd_step_from_zero is not 0 − Γ∇f(0) for n={n}, p={p}, k={k}")
        shapes.append((n, p, k))
    return GradientReport(p, tuple(shapes), time.perf_counter() - start)


# --- everything for one theorem ------------------------------------------------------

#: Identity dimensions checked by :func:`witness_all` (p = 3 is left to the tests: it takes longer).
QUICK_IDENTITY_DIMS = (1, 2)


def witness_all(proof: Proof, *, trials: int = 1, seed: int = 0,
                identity_dims: Sequence[int] = QUICK_IDENTITY_DIMS) -> dict[str, Any]:
    """Run the witness on one theorem: instances, identities in ``identity_dims``, and (for the
    gradient-descent theorem) the gradient formula.  Returns a short JSON-ready summary; raises
    :class:`WitnessError` on any failure."""
    start = time.perf_counter()
    inst = check_instances(proof, trials=trials, seed=seed)
    ids = [check_identity(proof.theorem, p, seed=seed, proof=proof) for p in identity_dims]
    summary: dict[str, Any] = {
        "theorem": proof.theorem,
        "instances": inst.instances,
        "hypotheses": inst.hypotheses,
        "steps": inst.steps,
        "identities": [{"p": r.p, "chains": r.chains, "parameters": r.parameters, "sign_points": r.sign_points,
                        **({"points": r.points} if r.points else {})} for r in ids],
    }
    if proof.theorem == "preconditioned_gd":
        summary["gradient"] = [list(s) for p in identity_dims for s in check_gradient(p).shapes]
    summary["seconds"] = round(time.perf_counter() - start, 3)
    return summary
