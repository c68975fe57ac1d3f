"""The witness's checks: bind a sample, verify the hypotheses, evaluate every step.

Three checks:

* :func:`check_instances` — random rational instances, for several shapes, that satisfy every
  hypothesis of the chain being checked (verified exactly, so a bad sample cannot pass silently);
  claim sides and every step must evaluate to the same matrix.
* :func:`check_identity` — the same sampler run with symbolic parameters (a Cayley-transform
  orthogonal matrix of symbols, Λ = diag(s_i²), free symbolic matrices) in concrete dimensions, so each
  chain's claim is checked as an identity of rational functions over ``QQ(params)``.
* :func:`check_gradient` — the gradient formula ∇_β ½‖Y − Xβ‖²_F = Xᵀ(Xβ − Y), which
  :func:`derive.constructions.gd_step_from_zero` takes as given, by SymPy differentiation.

Samples come from :func:`derive.witness.sampler.sampler_for`: the generic sampler with the theorem's
sampling hints.  A step citing a checked theorem (``thm:ID``) is checked like any other: both
expressions are evaluated and compared.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sympy
from sympy import QQ, Matrix, Symbol
from sympy.assumptions import Q
from sympy.assumptions.assume import AppliedPredicate
from sympy.logic.boolalg import BooleanTrue
from sympy.matrices.expressions import MatrixSymbol
from sympy.polys.matrices import DomainMatrix

from ..kernel import Chain, Hypothesis, Proof, Step
from .evaluate import (
    WitnessError,
    _Arith,
    _Ctx,
    _det,
    _dim,
    _equal,
    _eval,
    _FunctionArith,
    _is_diagonal,
    _rational,
    _RationalArith,
    _shape_of,
    _to_domain,
)
from .sampler import SHAPES, Sample, Sampler, _random_source, _symbol_source, _Symbols, _symbols, sampler_for

__all__ = ["QUICK_IDENTITY_DIMS", "GradientReport", "IdentityReport", "InstanceReport", "check_gradient",
           "check_identity", "check_instances", "identity_shape", "witness_all"]


# --- binding a sample to a proof -----------------------------------------------------


def _bind(proof: Proof, table: _Symbols, sample: Sample, arith: _Arith, chain: str) -> _Ctx:
    """The sample as a context: names resolved to the proof's symbols (definitions not yet evaluated)."""

    def fail(reason: str):
        raise WitnessError(f"sampler bug: {reason}", proof.theorem, chain)

    dims: dict[Symbol, int] = {}
    for name, value in sample.dims.items():
        if name not in table.dims or name in table.bound:
            fail(f"dimension {name} is not a free dimension of the theorem")
        if int(value) < 1:
            fail(f"dimension {name} = {value} is not positive")
        dims[table.dims[name]] = int(value)
    env: dict[MatrixSymbol, DomainMatrix] = {}
    for name, value in sample.values.items():
        if name not in table.matrices or name in table.bound:
            fail(f"{name} is not a free matrix symbol of the theorem")
        if name in table.defined:
            fail(f"{name} is defined by the theorem; the witness computes it from its definition")
        sym = table.matrices[name]
        try:
            env[sym] = _to_domain(value, arith.domain, name)
            expected = _shape_of(sym, dims)
        except WitnessError as exc:
            fail(exc.reason)
        if env[sym].shape != expected:
            fail(f"{name} has shape {env[sym].shape}, not {expected}")
    return _Ctx(arith, env, dims)


def _define(proof: Proof, ctx: _Ctx, chain: str) -> None:
    """Definitions, evaluated from their right-hand sides in order."""
    for d in proof.definitions:
        try:
            ctx.env[d.symbol] = _eval(d.rhs, ctx)
        except WitnessError as exc:
            raise WitnessError(f"definition {d.name}: {exc.reason}", proof.theorem, chain) from None


# --- hypotheses ----------------------------------------------------------------------

_PREDICATES = {"positive_definite": Q.positive_definite, "invertible": Q.invertible,
               "diagonal": Q.diagonal, "symmetric": Q.symmetric}


@dataclass
class _Tally:
    hypotheses: int = 0
    steps: int = 0
    instances: int = 0
    unproved_signs: int = 0  # (identities) inequalities checked at sample points only


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
    if name == "positive_definite":
        if not _equal(value, value.transpose()):
            return "the matrix is not symmetric"
        for size in range(1, rows + 1):
            sign, proved = ctx.arith.sign(_det(value[:size, :size]), rng)
            tally.unproved_signs += not proved
            if sign <= 0:
                return f"the leading principal minor of order {size} is not positive"
        return None
    return f"the witness does not know the predicate {name}"


def _bind_bound(h: Hypothesis, ctx: _Ctx, rng: random.Random) -> _Ctx:
    """A random instantiation of a hypothesis's bound symbols (sizes 1..3, random rational matrices)."""
    dims = {v: rng.randint(1, 3) for v in h.forall if isinstance(v, Symbol)}
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
        name = next((k for k, v in _PREDICATES.items() if h.lhs.function == v), None)
        if name is None:
            return f"unknown predicate {h.lhs.function}"
        return _predicate_holds(name, _eval(h.lhs.arguments[0], ctx), ctx, rng, tally)
    if not h.forall:
        return None if _equal(_eval(h.lhs, ctx), _eval(h.rhs, ctx)) else "the two sides differ"
    for trial in range(3):
        inner = _bind_bound(h, ctx, rng)
        if not _equal(_eval(h.lhs, inner), _eval(h.rhs, inner)):
            return f"the two sides differ at random instantiation {trial + 1} of {[str(v) for v in h.forall]}"
    return None


def _check_hypotheses(proof: Proof, chain: str, hyps: Iterable[Hypothesis], ctx: _Ctx, rng: random.Random,
                      tally: _Tally, notes: Mapping[str, str] | None = None) -> None:
    """Every hypothesis holds on the sample; a sample that violates one is never skipped.

    A hypothesis the sampler did not ensure by construction (it has a note) is reported as one the
    witness cannot sample, with the note's reason; any other violation is a sampler bug.
    """
    for h in hyps:
        try:
            why = _hypothesis_holds(h, ctx, rng, tally)
        except WitnessError as exc:
            why = exc.reason
        if why is not None:
            note = (notes or {}).get(h.name)
            if note is not None:
                raise WitnessError(f"cannot sample hypothesis {h.name}: {note} (on the sample: {why})",
                                   proof.theorem, chain)
            raise WitnessError(f"sampler bug: the sample violates hypothesis {h.name}: {why}", proof.theorem, chain)
        tally.hypotheses += 1


def _mentions(h: Hypothesis, names: frozenset[str]) -> bool:
    return any(str(s.name) in names for s in h.lhs.atoms(MatrixSymbol) | h.rhs.atoms(MatrixSymbol))


def _sampled_context(proof: Proof, table: _Symbols, sample: Sample, arith: _Arith, chain: str,
                     hyps: Sequence[Hypothesis], rng: random.Random, tally: _Tally) -> _Ctx:
    """Bind a sample, verify the hypotheses, evaluate the definitions.

    Hypotheses cannot mention defined symbols (the kernel requires definitions to be fresh), so they are
    checked first: a sampler bug is then reported as the hypothesis it breaks, not as a definition that
    happens to be undefined on the bad sample.  Any that do mention one are checked after the definitions.
    """
    ctx = _bind(proof, table, sample, arith, chain)
    notes = sample.notes
    _check_hypotheses(proof, chain, [h for h in hyps if not _mentions(h, table.defined)], ctx, rng, tally, notes)
    _define(proof, ctx, chain)
    _check_hypotheses(proof, chain, [h for h in hyps if _mentions(h, table.defined)], ctx, rng, tally, notes)
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


def _check_chain(proof: Proof, chain: Chain, ctx: _Ctx, tally: _Tally) -> None:
    """Claim lhs, every step and the claim rhs must all have the same value."""

    def value(term, index, rule):
        try:
            return _eval(term, ctx)
        except WitnessError as exc:
            raise WitnessError(f"cannot evaluate: {exc.reason}", proof.theorem, chain.name, index, rule) from None

    previous = value(chain.lhs, None, None)
    for index, step in enumerate(chain.steps, start=1):
        if step.instance and not step.rule.startswith("thm:"):  # a cited theorem's own symbols: nothing to bind
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


# --- the instance check --------------------------------------------------------------


@dataclass(frozen=True)
class InstanceReport:
    """What :func:`check_instances` checked."""

    theorem: str
    chains: int
    instances: int  # (chain, shape, trial) samples, each with all hypotheses and steps checked
    hypotheses: int
    steps: int
    seconds: float


def _sampler_for(proof: Proof, sampler: Sampler | None) -> Sampler:
    return sampler if sampler is not None else sampler_for(proof)


def check_instances(proof: Proof, trials: int = 1, seed: int = 0, *, sampler: Sampler | None = None,
                    shapes: Sequence[Mapping[str, int]] = SHAPES) -> InstanceReport:
    """Evaluate every chain of ``proof`` exactly on random instances satisfying its hypotheses.

    For each chain (lemmas, then the main claim), shape and trial: draw a sample, verify every global
    and local hypothesis on it (a failure is a sampler bug and raises), check steps that instantiate a
    forall-hypothesis, and require the claim sides and every step to evaluate to the same matrix.
    Deterministic in ``seed``.
    """
    start = time.perf_counter()
    sampler = _sampler_for(proof, sampler)
    table = _symbols(proof)
    tally = _Tally()
    chains = (*proof.lemmas, proof.claim)
    for chain in chains:
        for shape_index, shape in enumerate(shapes):
            for trial in range(trials):
                rng = random.Random(f"{seed}/{proof.theorem}/{chain.name}/{shape_index}/{trial}")
                sample = sampler(_random_source(rng), shape, chain.name)
                ctx = _sampled_context(proof, table, sample, _RationalArith(), chain.name,
                                       (*proof.hypotheses, *chain.hypotheses), rng, tally)
                _check_chain(proof, chain, ctx, tally)
                tally.instances += 1
    return InstanceReport(proof.theorem, len(chains), tally.instances, tally.hypotheses, tally.steps,
                          time.perf_counter() - start)


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


def identity_shape(p: int) -> dict[str, int]:
    """The concrete dimensions of the identity checks (n = p + 1, k = m = 1, d = 2, rank r = max(1, p − 1))."""
    return {"n": p + 1, "p": p, "k": 1, "m": 1, "d": 2, "r": max(1, p - 1)}


def _fingerprint(sample: Sample, kinds: Sequence[bool]) -> tuple:
    values = tuple((name, v.shape, tuple(map(tuple, v.to_list()))) for name, v in sorted(sample.values.items()))
    return tuple(kinds), tuple(sorted(sample.dims.items())), values


def check_identity(theorem_id: str, p: int, *, steps: bool = False, seed: int = 0,
                   proof: Proof | None = None, sampler: Sampler | None = None) -> IdentityReport:
    """Check each chain's claim of a theorem as an identity of rational functions in dimension ``p``.

    The theorem's sampler runs once on random numbers (a dry run, to learn which parameters it draws) and
    then on symbols: Cayley transforms of symbolic skew matrices, Λ = diag(s_i²) with s_i > 0, free
    symbolic matrices.  Every hypothesis, global and local, must hold identically (inequalities: by a sign
    test on the rational function, or at random points where that test is inconclusive), and lhs − rhs
    must be the zero rational function.  With ``steps``, every step is compared as well.  Chains whose
    dry runs drew the same sample share one symbolic sample (whose hypotheses are checked for each).
    """
    start = time.perf_counter()
    if proof is None:
        from ..authoring.registry import build  # the registry imports the library, which imports derive: late

        proof = build(theorem_id)
    elif proof.theorem != theorem_id:
        raise WitnessError(f"the proof given is of {proof.theorem}, not {theorem_id}")
    sampler = _sampler_for(proof, sampler)
    table = _symbols(proof)
    shape = identity_shape(p)
    tally = _Tally()
    groups: dict[tuple, _Ctx] = {}
    parameters = 0
    chains = (*proof.lemmas, proof.claim)
    for chain in chains:
        rng = random.Random(f"{seed}/identity/{proof.theorem}/{chain.name}/{p}")
        kinds: list[bool] = []
        dry = sampler(_random_source(random.Random(seed), kinds), shape, chain.name)
        key = _fingerprint(dry, kinds)
        ctx = groups.get(key)
        if ctx is None:
            src = _symbol_source(kinds)
            ctx = _sampled_context(proof, table, sampler(src, shape, chain.name), _FunctionArith(src.domain),
                                   chain.name, proof.hypotheses, rng, tally)
            groups[key] = ctx
            parameters = max(parameters, len(kinds))
        _check_hypotheses(proof, chain.name, chain.hypotheses, ctx, rng, tally, dry.notes)
        if steps:
            _check_chain(proof, chain, ctx, tally)
        elif not _equal(_eval(chain.lhs, ctx), _eval(chain.rhs, ctx)):
            raise WitnessError(f"the claim is not an identity of rational functions for p = {p}", proof.theorem,
                               chain.name)
    return IdentityReport(proof.theorem, p, len(chains), parameters, tally.hypotheses, tally.unproved_signs,
                          tally.steps, time.perf_counter() - start)


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
        "identities": [{"p": r.p, "chains": r.chains, "parameters": r.parameters, "sign_points": r.sign_points}
                       for r in ids],
    }
    if proof.theorem == "preconditioned_gd":
        summary["gradient"] = [list(s) for p in identity_dims for s in check_gradient(p).shapes]
    summary["seconds"] = round(time.perf_counter() - start, 3)
    return summary
