"""The fuzzer's oracle: does a claim the kernel accepted hold on exact instances of its hypotheses?

Independent of the kernel's judgments, axioms and checker (an import contract in ``pyproject.toml`` pins
this): it reads a proof's plain data, draws values for its symbols that satisfy the hypotheses *by their
documented meaning*, and evaluates every expression with the witness's exact evaluator.

* ``Q.positive_definite`` alone means xᵀAx > 0 for every x ≠ 0, so A is drawn **non-symmetric** (RᵀR + I plus
  a skew part), and often *adversarial*: conjugated blocks C with C³ = −I (trace 1, determinant 1) or
  C⁴ = −4I, positive definite themselves but with powers that are not.  With ``Q.symmetric`` it is RᵀR + I,
  with ``Q.diagonal`` (or under a non-integer power, which the evaluator takes of diagonal matrices only)
  a positive diagonal of perfect powers.
* ``Q.invertible``, ``Q.symmetric``, ``Q.diagonal`` by their meaning; an equation ``S = term`` for a symbol
  S that the term does not mention by evaluating the term; ``UᵀU = I`` / ``UUᵀ = I`` by Cayley transforms (a tall U:
  their first columns); ``F M Fᵀ = N`` for an orthogonal F by M = Fᵀ N F;
  the ``forall`` hypotheses the generator writes by what they mean (``∀b: bᵀMb = bᵀNb`` holds exactly when
  M − N is skew, so M = N + K with K skew and non-zero; ``∀Y: Y C = C Y`` when C = cI).
* Definitions are evaluated in the order their values depend on each other, recurrences through them; a
  definition whose value depends on itself (through a family's recurrence) has no value: a refutation of
  the kernel's promise that definitions never constrain the other symbols.

Every hypothesis is then verified on the numbers (a ``forall`` on random instantiations); a sample that
fails one is dropped, never counted as a refutation.  On a good sample, a chain whose consecutive
expressions differ, or an expression with no value (a singular inverse, shapes that do not conform), is a
refutation: the kernel said every expression is defined and every step an equality.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import sympy
from sympy import Basic, Integer, Matrix, Poly, Pow, Rational, Symbol, Trace, eye, zeros
from sympy.matrices.expressions import (
    BlockMatrix,
    Identity,
    Inverse,
    MatMul,
    MatPow,
    MatrixSymbol,
    Transpose,
    ZeroMatrix,
)

from ..kernel.proof import Chain, Hypothesis, Induction, Proof
from ..kernel.scalars import scalar_kind
from ..kernel.terms import Diag, FamilyMatrix, Kron, Tril, canon, factors_of, index_kind, mul
from ..witness.evaluate import UndefinedValue, WitnessError, _coefficient, _Ctx, _eval, _RationalArith

__all__ = ["Refutation", "Verdict", "judge", "replay", "sample_proof"]

MAX_MEMBER = 9  # free families get values at 0..MAX_MEMBER
INDEX_VALUES = (0, 1, 2, 3)  # values of a free index symbol (the induction variable t)
# A positive definite 2x2 block C (xᵀCx > 0: its symmetric part is positive definite) with C³ = −I, and one
# with C⁴ = −4I: their powers are not positive definite, and C³ + I, C⁴ + 4I are singular.
CUBE_ROOT_OF_MINUS_ONE = Matrix([[Rational(1, 2), -1], [Rational(3, 4), Rational(1, 2)]])
FOURTH_ROOT_OF_MINUS_FOUR = Matrix([[1, -1], [1, 1]])


class CannotSample(Exception):
    """The hypotheses are not of a form this oracle can satisfy (a mutant's altered hypothesis, say)."""


@dataclass
class Sample:
    dims: dict[Symbol, int]
    scalars: dict[Symbol, Rational]
    env: dict[MatrixSymbol, Matrix]
    members: dict[tuple[str, int], Matrix]
    adversarial: set[str] = field(default_factory=set)  # positive definite symbols given a C³ = −I block

    def to_data(self) -> dict:
        def mat(m: Matrix) -> list:
            return [[str(m[i, j]) for j in range(m.cols)] for i in range(m.rows)]

        return {"dims": {s.name: v for s, v in self.dims.items()},
                "scalars": {s.name: str(v) for s, v in self.scalars.items()},
                "matrices": {s.name: mat(v) for s, v in self.env.items()},
                "members": {f"{name}[{e}]": mat(v) for (name, e), v in self.members.items()},
                "adversarial": sorted(self.adversarial),
                # the shapes too: an empty matrix (X_0 is 0×p) has no rows to show its columns
                "shapes": {**{s.name: list(v.shape) for s, v in self.env.items()},
                           **{f"{name}[{e}]": list(v.shape) for (name, e), v in self.members.items()}}}


@dataclass
class Refutation:
    kind: str  # "claim", "undefined", "circular"
    chain: str
    message: str
    step: int | None = None
    index_values: dict[str, int] = field(default_factory=dict)
    sample: Sample | None = None
    tags: set[str] = field(default_factory=set)

    def describe(self) -> str:
        where = self.chain + (f" step {self.step}" if self.step is not None else "")
        at = f" at {self.index_values}" if self.index_values else ""
        return f"[{self.kind}] {where}{at}: {self.message}"


@dataclass
class Verdict:
    checks: int = 0  # expressions compared on good samples
    samples: int = 0  # good samples
    dropped: int = 0  # samples that failed a hypothesis or could not be drawn
    unevaluable: int = 0  # expressions the exact evaluator cannot evaluate (non-diagonal roots)
    refutation: Refutation | None = None


# --- reading the proof ----------------------------------------------------------------------------


def _chains(proof: Proof) -> list:
    return [*proof.lemmas, proof.claim]


def _terms(proof: Proof) -> list[Basic]:
    out: list[Basic] = []
    for h in proof.hypotheses:
        out += [h.lhs.arguments[0]] if h.is_predicate else [h.lhs, h.rhs]
    for d in proof.definitions:
        out += [d.symbol, d.rhs]
    for f in proof.families:
        if f.is_defined:
            out += [f.base, f.step]
    for c in _chains(proof):
        out += [c.lhs, c.rhs]
        for s in c.steps:
            out.append(s.expr)
            out += [v for _, v in s.instance if isinstance(v, Basic)]
    return out


def _bound(proof: Proof) -> set:
    out = set()
    for h in proof.hypotheses:
        out |= set(h.forall)
    for c in _chains(proof):
        for h in getattr(c, "hypotheses", ()):
            out |= set(h.forall)
    return out


def _root_degrees(terms: list[Basic]) -> dict[MatrixSymbol, int]:
    """Symbols under a non-integer power, with the denominators their diagonal entries need roots of."""
    out: dict[MatrixSymbol, int] = {}
    for term in terms:
        for node in term.atoms(MatPow):
            q = node.args[1]
            if isinstance(q, Rational) and q.q != 1:
                for sym in node.args[0].atoms(MatrixSymbol):
                    out[sym] = sympy.ilcm(out.get(sym, 1), int(q.q))
    return out


def _skew_pattern(h: Hypothesis):
    """∀b: bᵀ M b = bᵀ N b with M, N symbols: (M, N)."""
    if not h.forall or h.is_predicate:
        return None
    sides = []
    for side in (h.lhs, h.rhs):
        if not (isinstance(side, MatMul) and len(side.args) == 3):
            return None
        left, middle, right = side.args
        if not (left == Transpose(right) and right in h.forall and isinstance(middle, MatrixSymbol)):
            return None
        sides.append(middle)
    return tuple(sides) if sides[0] != sides[1] else None


def _commute_pattern(h: Hypothesis):
    """∀Y: Y C = C Y with C a symbol: C."""
    if not h.forall or h.is_predicate:
        return None
    if isinstance(h.lhs, MatMul) and isinstance(h.rhs, MatMul) and len(h.lhs.args) == len(h.rhs.args) == 2:
        y, c = h.lhs.args
        if h.rhs.args == (c, y) and y in h.forall and isinstance(c, MatrixSymbol) and c not in h.forall:
            return c
    return None


def _congruence_pattern(h: Hypothesis, proof: Proof):
    """F M Fᵀ = N for symbols F (square, with FᵀF = I among the hypotheses) and M that N does not mention:
    (M, Fᵀ N F), the value M has once F and N have theirs."""
    if h.forall or h.is_predicate or not isinstance(h.lhs, MatMul) or len(h.lhs.args) != 3:
        return None
    f, m, ft = h.lhs.args
    if not (isinstance(f, MatrixSymbol) and isinstance(m, MatrixSymbol) and ft == Transpose(f)) or \
            m in h.rhs.atoms(MatrixSymbol) or f.shape[0] != f.shape[1]:
        return None
    if not any(_orthogonality(g) == (f, "columns") for g in proof.hypotheses):
        return None
    return m, MatMul(Transpose(f), h.rhs, f)


def _orthogonality(h: Hypothesis):
    """UᵀU = I or UUᵀ = I for a symbol U: (U, "columns" | "rows")."""
    if h.forall or h.is_predicate or not isinstance(h.rhs, Identity) or not isinstance(h.lhs, MatMul):
        return None
    if len(h.lhs.args) != 2:
        return None
    a, b = h.lhs.args
    if isinstance(a, Transpose) and a.args[0] == b and isinstance(b, MatrixSymbol):
        return b, "columns"
    if isinstance(b, Transpose) and b.args[0] == a and isinstance(a, MatrixSymbol):
        return a, "rows"
    return None


# --- drawing values -------------------------------------------------------------------------------


def _entry(rng: random.Random) -> Rational:
    return Rational(rng.randint(-4, 4), rng.choice((1, 1, 1, 2, 3)))


def _free(rng, r, c) -> Matrix:
    return Matrix(r, c, lambda i, j: _entry(rng))


def _skew(rng, k) -> Matrix:
    m = _free(rng, k, k)
    return m - m.T


def _orthogonal(rng, k) -> Matrix:
    """A rotation (Cayley: I + S is invertible for skew S) or, half the time, a reflection (its first row negated):
    both components of O(k), so U = −1 is drawn when k = 1 (issue 40: rotations alone let UᵀU = I ⇒ U = I pass)."""
    s = _skew(rng, k)
    q = (eye(k) - s) * (eye(k) + s).inv()
    if rng.random() < 0.5:
        q[0, :] = -q[0, :]
    return q


def _invertible(rng, k) -> Matrix:
    while True:
        m = _free(rng, k, k)
        if m.det() != 0:
            return m


def _positive(rng) -> Rational:
    return Rational(rng.randint(1, 5), rng.choice((1, 2, 3)))


def _draw(rng, kinds: set, r: int, c: int, root: int, adversarial_ok: bool,
          exponents: frozenset = frozenset()) -> tuple[Matrix, bool]:
    """A value of the shape r×c with the predicates ``kinds``; and whether it is an adversarial one (its blocks
    chosen by the integer ``exponents`` the proof raises the symbol to: C³ = −I for 3, C⁴ = −4I for 4)."""
    if "entries_positive" in kinds:  # issue 41: v with Q.positive_definite(diag(v)): every entry positive
        return Matrix(r, c, lambda i, j: _positive(rng)), False
    if "entries_nonzero" in kinds:  # issue 41: v with Q.invertible(diag(v)): every entry non-zero
        return Matrix(r, c, lambda i, j: _positive(rng) * rng.choice((-1, 1))), False
    if "orth_columns" in kinds or "orth_rows" in kinds:
        big = max(r, c)
        q = _orthogonal(rng, big)
        value = q[:, :c] if r >= c else q[:r, :]
        return value, False
    if r != c:
        return _free(rng, r, c), False
    k = r
    if "positive_definite" in kinds:
        if "diagonal" in kinds or root > 1:
            return sympy.diag(*[_positive(rng) ** root for _ in range(k)]) if k else zeros(0, 0), False
        g = _free(rng, k, k)
        if "symmetric" in kinds:
            return g.T * g + eye(k), False
        if adversarial_ok and k >= 2 and rng.random() < (0.8 if exponents & {2, 3, 4, -2, -3, -4} else 0.4):
            blocks = [CUBE_ROOT_OF_MINUS_ONE, FOURTH_ROOT_OF_MINUS_FOUR]
            if exponents & {3, -3} and not exponents & {4, -4}:
                blocks = blocks[:1]
            elif exponents & {4, -4} and not exponents & {3, -3}:
                blocks = blocks[1:]
            parts = [blocks[i % len(blocks)] for i in range(k // 2)] + ([Matrix([[_positive(rng)]])] if k % 2 else [])
            q = _orthogonal(rng, k)
            return q * sympy.diag(*parts) * q.T, True
        return g.T * g + eye(k) + _skew(rng, k), False
    if "diagonal" in kinds:
        return sympy.diag(*[rng.choice((-3, -2, -1, 1, 2, 3, Rational(1, 2))) for _ in range(k)]), False
    if "symmetric" in kinds:
        g = _free(rng, k, k)
        return g + g.T, False
    if "invertible" in kinds:
        return _invertible(rng, k), False
    return _free(rng, k, k), False


def _dim_value(expr, dims: dict) -> int:
    value = sympy.sympify(expr).xreplace({s: Integer(v) for s, v in dims.items()})
    if not value.is_Integer or value < 0:
        raise CannotSample(f"dimension {expr} is not determined")
    return int(value)


def _mentions_matrices(h: Hypothesis) -> bool:
    """A scalar hypothesis λ = r whose r reads matrices (tr(vᵀv) + 1, tr(s), tr(I)): solved once the matrices have
    values."""
    return bool(h.rhs.atoms(Trace))


def _solve_scalar_hypotheses(proof: Proof, scalars: dict, dims: dict, matrices: Sample | None = None) -> None:
    """λ = r (issue 29): λ takes the value of r on the other scalars and the dimensions, each λ once the scalars r
    reads have theirs; one declared positive must come out positive (else the sample cannot satisfy the hypotheses:
    CannotSample).

    Called twice: before the matrices are drawn (``matrices`` None), for the hypotheses whose r reads no matrix (an
    equation S = term may need their λ); then with the sample's matrices and family members, for all of them
    (issue 40: r of a cited theorem's λ = r may read its matrix symbols, tr(vᵀv) + 1 or tr(s), and a citing proof
    assumes λ = r with the instance's matrices put in; the oracle satisfies λ = r whatever the matrices are)."""
    pending = [h for h in proof.hypotheses if type(h.lhs) is Symbol]
    while pending:
        unsolved = {h.lhs for h in pending}
        ready = [h for h in pending if (matrices is not None or not _mentions_matrices(h)) and
                 not {s for s in h.rhs.atoms(Symbol) if scalar_kind(s) is not None} & (unsolved - {h.lhs})]
        if not ready:
            break
        for h in ready:
            if matrices is None:
                value = h.rhs.xreplace({**{k: v for k, v in scalars.items() if k != h.lhs},
                                        **{k: Integer(v) for k, v in dims.items()}})
            else:
                try:
                    value = _exact_coefficient(h.rhs, proof, Sample(dims, scalars, matrices.env, matrices.members))
                except WitnessError as exc:
                    raise CannotSample(f"{h.name}: {exc}") from None
            if not isinstance(value, Rational):
                raise CannotSample(f"{h.name} gives {h.lhs} no rational value")
            if scalar_kind(h.lhs) == "positive" and value <= 0:
                raise CannotSample(f"{h.lhs} must be positive, but {h.name} gives {value}")
            scalars[h.lhs] = value
            pending.remove(h)
    if pending and matrices is not None:
        raise CannotSample("the scalar hypotheses " + ", ".join(h.name for h in pending) + " cannot be solved")


def _exact_coefficient(c: Basic, proof: Proof, sample: Sample) -> Rational:
    """The exact value of a coefficient (traces of 1×1 matrices included) on a sample."""
    ctx = _context(proof, sample, {})
    return ctx.arith.domain.to_sympy(_coefficient(c, ctx))


def sample_proof(proof: Proof, rng: random.Random, *, adversarial: bool = True) -> Sample:
    """Values for every free symbol of ``proof`` that satisfy its hypotheses (checked afterwards by :func:`judge`)."""
    terms = _terms(proof)
    bound = _bound(proof)
    defined = {d.symbol for d in proof.definitions}
    symbols = {m for t in terms for m in t.atoms(MatrixSymbol)} - defined - bound
    dim_symbols = {s for t in terms for s in t.atoms(Symbol) if index_kind(s) == "dimension"}
    for h in proof.hypotheses:
        dim_symbols -= {v for v in h.forall if isinstance(v, Symbol)}
    for f in proof.families:
        dim_symbols |= {s for s in (f.rows.free_symbols | f.cols.free_symbols) if index_kind(s) == "dimension"}
    dims = {s: rng.choice((1, 2, 2, 3, 4)) for s in sorted(dim_symbols, key=str)}
    scalars = {}
    bases = _index_power_bases(terms)
    for s in sorted({s for t in terms for s in t.atoms(Symbol)}, key=str):  # sorted: sets follow the hash seed
        kind = scalar_kind(s)
        if kind == "positive":
            scalars[s] = _positive(rng)
        elif kind == "real" and s in bases:  # issue 41: γ^t at γ = 0 is 0 (t > 0) or 1 (t = 0); γ^(−t) has no value
            scalars[s] = Rational(rng.choice((0, 0, -2, -1, 1, 2)), rng.choice((1, 2)))
        elif kind == "real":
            scalars[s] = Rational(rng.choice((-3, -2, -1, 1, 2, 3)), rng.choice((1, 2)))
    _solve_scalar_hypotheses(proof, scalars, dims)
    kinds: dict[MatrixSymbol, set] = {}
    solved: dict[MatrixSymbol, tuple] = {}
    for h in proof.hypotheses:
        if type(h.lhs) is Symbol:  # a scalar hypothesis λ = r: solved above
            continue
        if h.is_predicate:
            arg = h.lhs.arguments[0]
            name = next((k for k in ("positive_definite", "invertible", "symmetric", "diagonal")
                         if h.lhs.function == getattr(sympy.Q, k)), None)
            if isinstance(arg, MatrixSymbol) and name:
                kinds.setdefault(arg, set()).add(name)
            elif type(arg) is Diag and isinstance(arg.args[0], MatrixSymbol) and name in _DIAG_ENTRIES:
                kinds.setdefault(arg.args[0], set()).add(_DIAG_ENTRIES[name])  # issue 41: diag(v) by v's entries
            continue
        orth = _orthogonality(h)
        if orth:
            kinds.setdefault(orth[0], set()).add(f"orth_{orth[1]}")
            continue
        skew = _skew_pattern(h)
        if skew:
            solved.setdefault(skew[0], ("skew", skew[1]))
            continue
        congruent = _congruence_pattern(h, proof)
        if congruent is not None and congruent[0] not in solved:
            solved[congruent[0]] = ("term", congruent[1])
            continue
        commuting = _commute_pattern(h)
        if commuting is not None:
            solved.setdefault(commuting, ("scalar",))
            continue
        if h.forall:
            continue
        for side, other in ((h.lhs, h.rhs), (h.rhs, h.lhs)):
            if isinstance(side, MatrixSymbol) and side not in other.atoms(MatrixSymbol) and side not in solved \
                    and not other.atoms(FamilyMatrix):
                solved[side] = ("term", other)
                break
    roots = _root_degrees(terms)
    exponents: dict = {}
    for term in terms:
        for node in term.atoms(MatPow):
            if isinstance(node.args[0], MatrixSymbol):
                exponents[node.args[0]] = exponents.get(node.args[0], frozenset()) | {node.args[1]}
    env: dict[MatrixSymbol, Matrix] = {}
    adversarial_names: set[str] = set()
    pending = sorted(symbols, key=lambda m: m.name)
    progress = True
    while pending and progress:
        progress = False
        for sym in list(pending):
            r, c = _dim_value(sym.shape[0], dims), _dim_value(sym.shape[1], dims)
            how = solved.get(sym)
            if how is None:
                value, adv = _draw(rng, kinds.get(sym, set()), r, c, int(roots.get(sym, 1)), adversarial,
                                   exponents.get(sym, frozenset()))
                if adv:
                    adversarial_names.add(sym.name)
            elif how[0] == "skew":
                if how[1] not in env:
                    continue
                value = env[how[1]] + _skew(rng, r)
            elif how[0] == "scalar":
                value = _positive(rng) * eye(r)
            else:
                needs = how[1].atoms(MatrixSymbol) - set(env)
                if needs - symbols:
                    raise CannotSample(f"{sym.name} is given by a term in symbols without values")
                if needs:
                    continue
                try:
                    value = _value(how[1], proof, Sample(dims, scalars, env, {}), {})
                except WitnessError as exc:
                    raise CannotSample(f"{sym.name}: {exc}") from None
            env[sym] = value
            pending.remove(sym)
            progress = True
    if pending:
        raise CannotSample("the equations for " + ", ".join(m.name for m in pending) + " depend on each other")
    members: dict[tuple[str, int], Matrix] = {}
    for f in proof.families:
        if not f.is_defined:
            for e in range(MAX_MEMBER + 1):
                at = {**dims, f.index: e}
                members[(f.name, e)] = _free(rng, _dim_value(f.rows, at), _dim_value(f.cols, at))
    _solve_scalar_hypotheses(proof, scalars, dims, Sample(dims, scalars, env, members))  # those that read matrices
    return Sample(dims, scalars, env, members, adversarial_names)


# --- evaluating -----------------------------------------------------------------------------------


def _context(proof: Proof, sample: Sample, extra_dims: dict) -> _Ctx:
    arith = _RationalArith()
    domain = arith.domain
    ctx = _Ctx(arith, {}, {**sample.dims, **extra_dims}, families={f.name: f for f in proof.families})
    for sym, value in sample.scalars.items():
        ctx.scalars[sym] = domain.convert_from(sympy.QQ(int(value.p), int(value.q)), sympy.QQ)
    for sym, value in sample.env.items():
        ctx.env[sym] = _domain(value)
    for key, value in sample.members.items():
        ctx.members[key] = _domain(value)
    return ctx


def _domain(value: Matrix):
    from sympy.polys.matrices import DomainMatrix

    return DomainMatrix.from_Matrix(value).convert_to(sympy.QQ).to_dense()


def _value(term: Basic, proof: Proof, sample: Sample, extra_dims: dict, ctx: _Ctx | None = None) -> Matrix:
    ctx = ctx or _context(proof, sample, extra_dims)
    return _eval(term, ctx).to_Matrix()


def _definition_order(proof: Proof) -> tuple[list, list[str] | None]:
    """Definitions in an order in which each one's value is known before it is used; or a cycle of names."""
    families = {f.name: f for f in proof.families}
    defined = {d.symbol: d for d in proof.definitions}

    def needs(term: Basic, seen_families: set) -> set:
        out = term.atoms(MatrixSymbol) & set(defined)
        for member in term.atoms(FamilyMatrix):
            f = families.get(member.name)
            if f is not None and f.is_defined and f.name not in seen_families:
                seen_families.add(f.name)
                out |= needs(f.base, seen_families) | needs(f.step, seen_families)
        return out

    deps = {sym: needs(d.rhs, set()) for sym, d in defined.items()}
    order, state = [], {}

    def visit(sym, path):
        if state.get(sym) == "done":
            return None
        if state.get(sym) == "active":
            return [*path[path.index(sym):], sym]
        state[sym] = "active"
        for other in sorted(deps[sym], key=lambda m: m.name):
            cycle = visit(other, [*path, sym])
            if cycle:
                return cycle
        state[sym] = "done"
        order.append(defined[sym])
        return None

    for sym in sorted(defined, key=lambda m: m.name):
        cycle = visit(sym, [])
        if cycle:
            return [], [m.name for m in cycle]
    return order, None


#: issue 41: the kind of v that a predicate of diag(v) asks for (diagonal and symmetric hold of every diag(v)).
_DIAG_ENTRIES = {"invertible": "entries_nonzero", "positive_definite": "entries_positive"}


def _holds(h: Hypothesis, proof: Proof, sample: Sample, ctx: _Ctx, rng: random.Random) -> bool:
    if type(h.lhs) is Symbol:  # a scalar hypothesis λ = r, on the numbers
        return _coefficient(h.lhs, ctx) == _coefficient(h.rhs, ctx)
    if h.is_predicate and h.lhs.function == sympy.Q.nonzero:  # issue 41: a scalar fact c ≠ 0, on the numbers
        return _coefficient(h.lhs.arguments[0], ctx) != 0
    if h.is_predicate:
        value = _eval(h.lhs.arguments[0], ctx).to_Matrix()
        if value.rows != value.cols:
            return False
        name = h.lhs.function
        if name == sympy.Q.symmetric:
            return value == value.T
        if name == sympy.Q.diagonal:
            return value.is_diagonal()
        if name == sympy.Q.invertible:
            return value.det() != 0
        if name == sympy.Q.positive_definite:
            sym_part = (value + value.T) / 2
            return all(sym_part[:k, :k].det() > 0 for k in range(1, value.rows + 1))
        return False
    if not h.forall:
        return _eval(h.lhs, ctx).to_Matrix() == _eval(h.rhs, ctx).to_Matrix()
    for _ in range(3):  # a forall hypothesis on random instantiations of its variables
        dims = {v: rng.choice((1, 2, 3)) for v in h.forall if isinstance(v, Symbol)}
        inner = ctx.extend({}, dims)
        env = {}
        for v in h.forall:
            if isinstance(v, MatrixSymbol):
                env[v] = _domain(_free(rng, _dim_value(v.shape[0], inner.dims), _dim_value(v.shape[1], inner.dims)))
        inner = ctx.extend(env, dims)
        if _eval(h.lhs, inner).to_Matrix() != _eval(h.rhs, inner).to_Matrix():
            return False
    return True


def _free_indices(proof: Proof) -> list[Symbol]:
    out = set()
    for c in _chains(proof):
        for term in (c.lhs, c.rhs, *(s.expr for s in c.steps)):
            out |= {s for s in term.free_symbols if index_kind(s) == "index"}
        if isinstance(c, Induction):
            out.add(c.variable)
    return sorted(out, key=str)


def _foreign_index(proof: Proof) -> bool:
    return any(f.is_defined and any(index_kind(s) == "index" and s != f.index
                                    for s in f.base.free_symbols | f.step.free_symbols) for f in proof.families)


def _pd_power(proof: Proof, sample: Sample) -> bool:
    return any(isinstance(node.args[0], MatrixSymbol) and node.args[0].name in sample.adversarial
               for term in _terms(proof) for node in term.atoms(MatPow))


def _schur(proof: Proof) -> bool:
    """An inverse of a 2×2 block matrix whose off-diagonal blocks are not both zero (issue 29's Schur rules)."""
    for term in _terms(proof):
        for node in term.atoms(Inverse):
            grid = node.args[0]
            if isinstance(grid, BlockMatrix) and grid.blockshape == (2, 2) and not (
                    isinstance(grid.blocks[0, 1], ZeroMatrix) and isinstance(grid.blocks[1, 0], ZeroMatrix)):
                return True
    return False


def _negative_congruence(proof: Proof) -> bool:
    """An inverse of a sum with a term c·F M Fᵀ, c a negative number (the ``psd_congruence`` slip)."""
    for term in _terms(proof):
        for node in term.atoms(Inverse):
            for product in node.args[0].atoms(MatMul):
                coeff = product.args[0]
                mats = [a for a in product.args if not isinstance(a, sympy.Expr) or isinstance(a, sympy.MatrixExpr)]
                if coeff.is_number and coeff.is_negative and len(mats) >= 3 and _transposes(mats[0], mats[-1]):
                    return True
    return False


def _transposes(a: Basic, b: Basic) -> bool:
    return (isinstance(b, Transpose) and b.args[0] == a) or (isinstance(a, Transpose) and a.args[0] == b)


def _tall_orthonormal_gram(proof: Proof) -> bool:
    """An inverse of a term with U Uᵀ for a non-square U with UᵀU = I (the ``one_sided`` slip)."""
    tall = {o[0] for h in proof.hypotheses if (o := _orthogonality(h)) and o[0].shape[0] != o[0].shape[1]}
    return any(product.args[-2:] == (u, Transpose(u)) for term in _terms(proof) for node in term.atoms(Inverse)
               for product in node.args[0].atoms(MatMul) for u in tall)


def _index_power_bases(terms: list) -> set:
    """The scalar symbols γ of the index powers γ^(k·t + c) in ``terms`` (issue 41)."""
    return {node.args[0] for term in terms for node in term.atoms(Pow) if not isinstance(node.args[1], Rational)}


def _zero_index_power(proof: Proof, sample: Sample) -> bool:
    """An index power whose exponent may be negative (γ^(−t), γ^(t − 1)) with γ = 0 on the sample (the ``index_power``
    slip: such a power taken as defined for every γ)."""
    for term in _terms(proof):
        for node in term.atoms(Pow):
            base, exponent = node.args
            if isinstance(exponent, Rational) or sample.scalars.get(base) != 0:
                continue
            if any(coefficient < 0 for coefficient in Poly(exponent, *sorted(exponent.free_symbols, key=str)).coeffs()):
                return True
    return False


def _coefficients(proof: Proof) -> list[Basic]:
    """Every coefficient of every product of the proof's terms (issue 41's tags look at them)."""
    out = []
    for term in _terms(proof):
        for product in term.atoms(MatMul):
            out += [a for a in product.args if not isinstance(a, sympy.MatrixExpr)]
    return out


def _scalar_value(c: Basic, proof: Proof, sample: Sample, extra: dict):
    """The value of the coefficient ``c`` on the sample (the index symbols at ``extra``), or None without one."""
    try:
        value = _value(MatMul(c, Identity(1), evaluate=False), proof, sample, extra)
    except Exception:  # noqa: BLE001 - a tag is a hint; what has no value here is not this tag's case
        return None
    return value[0, 0]


def _zero_coefficient_inverse(proof: Proof, sample: Sample, extra: dict) -> bool:
    """An inverse of c·M whose coefficient c is 0 on the sample (the ``scaled_invertible`` slip: c·M taken as
    invertible whenever M is)."""
    for term in _terms(proof):
        for node in term.atoms(Inverse):
            inner = node.args[0]
            if isinstance(inner, MatMul) and not isinstance(inner.args[0], sympy.MatrixExpr) and \
                    _scalar_value(inner.args[0], proof, sample, extra) == 0:
                return True
    return False


def _zero_divisor_with_fact(proof: Proof, sample: Sample, extra: dict) -> bool:
    """A scalar fact Q.nonzero(c) among the hypotheses, and a coefficient that divides by a scalar that is 0 on the
    sample (the ``scalar_fact`` slip: the fact read as making every scalar that contains c non-zero)."""
    if not any(h.is_predicate and h.lhs.function == sympy.Q.nonzero for h in proof.hypotheses):
        return False
    for c in _coefficients(proof):
        for node in sympy.preorder_traversal(c):
            if isinstance(node, Pow) and isinstance(node.args[1], Rational) and node.args[1] < 0 and \
                    _scalar_value(node.args[0], proof, sample, extra) == 0:
                return True
    return False


def _singular_diag(proof: Proof, sample: Sample, extra: dict) -> bool:
    """An inverse or a negative power of diag(v) with an entry 0 on the sample (the ``diag_invertible`` slip)."""
    for term in _terms(proof):
        for node in term.atoms(MatPow):
            if type(node.args[0]) is Diag and node.args[1] < 0:
                try:
                    vector = _value(node.args[0].args[0], proof, sample, extra)
                except Exception:  # noqa: BLE001 - no value: not this tag's case
                    continue
                if any(x == 0 for x in vector):
                    return True
    return False


def _diag_of_a_matrix(proof: Proof) -> bool:
    """diag(M) of an M that is not a column (the ``diag_column`` slip: diag of any matrix taken as defined)."""
    return any(node.args[0].shape[1] != 1 for term in _terms(proof) for node in term.atoms(Diag))


def _ones_inner_step(proof: Proof) -> bool:
    """A step citing ``ones_inner`` (the ``ones_inner`` slip: x 1ₙ read as 1ₙᵀ1ₙ for any row x)."""
    return any(s.rule == "ones_inner" for c in _chains(proof)
               for s in ((*c.base, *c.step) if isinstance(c, Induction) else c.steps))


def _zero_scalar(proof: Proof, sample: Sample) -> bool:
    """A scalar of a hypothesis λ = r that is 0 on the sample (the ``sign_narrowing`` slip)."""
    return any(type(h.lhs) is Symbol and sample.scalars.get(h.lhs) == 0 for h in proof.hypotheses)


def _scalar_instance(proof: Proof) -> bool:
    """A step cites a theorem at an instance that changes a matrix symbol which the right side r of the theorem's
    scalar hypothesis λ = r reads (the ``scalar_instance`` slip: r checked as it is, not at the instance)."""
    cited = {th.id: th.proof for th in proof.cites}
    for c in _chains(proof):
        for s in c.steps:
            theirs = cited.get(s.rule[4:]) if s.rule.startswith("thm:") else None
            if theirs is None:
                continue
            read = {m for h in theirs.hypotheses if type(h.lhs) is Symbol for m in h.rhs.atoms(MatrixSymbol)}
            if any(v in read and t != v for v, t in s.instance):
                return True
    return False


def _instance_broken(proof: Proof, sample: Sample, extra: dict) -> bool:
    """A step instantiates a variable with a term that has no value of the variable's shape on the sample."""
    for c in _chains(proof):
        for s in c.steps:
            if not s.instance or s.rule.startswith(("step:", "lemma:")):
                continue
            dims = {**extra, **{v: _dim_value(t, {**sample.dims, **extra}) for v, t in s.instance
                                if isinstance(v, Symbol) and index_kind(v) == "dimension"}}
            for v, t in s.instance:
                if not isinstance(v, MatrixSymbol):
                    continue
                try:
                    value = _value(t, proof, sample, dims)
                    at = {**sample.dims, **dims}
                    want = (_dim_value(v.shape[0], at), _dim_value(v.shape[1], at))
                except (WitnessError, CannotSample):
                    return True
                if value.shape != want:
                    return True
    return False


# --- the causal mask's tags (issues 41, 42): each the mark of one slip of derive.fuzz.unsound ------------------------


def _step_pairs(proof: Proof, rule: str) -> list[tuple[Basic, Basic]]:
    """(expression before, expression after) of every step citing ``rule`` (an induction's steps left out)."""
    out = []
    for c in _chains(proof):
        if isinstance(c, Induction):
            continue
        exprs = [c.lhs, *(s.expr for s in c.steps)]
        out += [(exprs[i], s.expr) for i, s in enumerate(c.steps) if s.rule == rule]
    return out


def _rewritten_trils(before: Basic, after: Basic) -> tuple[set, set]:
    """The trils of a step that are on one side only: (before's, after's)."""
    a, b = before.atoms(Tril), after.atoms(Tril)
    return a - b, b - a


def _is_diagonal_node(m: Basic) -> bool:
    return type(m) in (Diag, Identity)


def _tril_block_pairs(proof: Proof):
    """(grid of a tril, its tril's offset, the grid it is split into) for the steps citing tril_block: a grid on one
    side whose diagonal blocks are trils of the tril'd grid's diagonal blocks (their offsets aside)."""
    for before, after in _step_pairs(proof, "tril_block"):
        for one, other in ((before, after), (after, before)):
            for node in one.atoms(Tril):
                if type(node.args[0]) is not BlockMatrix:
                    continue
                grid = node.args[0].blocks.tolist()
                size = len(grid)
                for split in other.atoms(BlockMatrix):
                    rows = split.blocks.tolist()
                    if len(rows) == size and len(rows[0]) == len(grid[0]) == size and \
                            all(type(rows[i][i]) is Tril and rows[i][i].args[0] == grid[i][i] for i in range(size)):
                        yield grid, node.args[1], rows


def _tril_grid_above_kept(proof: Proof) -> bool:
    """A step citing tril_block whose split grid has a block below the diagonal blocks other than the tril'd grid's,
    or one above them that is not 0 (the ``tril_above`` slip: the blocks above kept, those below dropped)."""
    for grid, _, rows in _tril_block_pairs(proof):
        size = len(grid)
        if any(rows[i][j] != grid[i][j] for i in range(size) for j in range(i)) or \
                any(type(rows[i][j]) is not ZeroMatrix for i in range(size) for j in range(i + 1, size)):
            return True
    return False


def _tril_grid_offset_dropped(proof: Proof) -> bool:
    """A step citing tril_block that splits a strict tril(grid, -1) into a grid with trils that keep their diagonal
    (the ``tril_block_offset`` slip: the offset not passed on to the diagonal blocks)."""
    return any(rows[i][i].args[1] != offset for grid, offset, rows in _tril_block_pairs(proof)
               for i in range(len(grid)))


def _strict_scalar_tril(proof: Proof) -> bool:
    """A step citing tril_scalar that rewrites tril(a, -1) of a 1×1 a (the ``tril_scalar`` slip: tril(a, -1) = a)."""
    return any(x.args[1] != 0 and x.args[0].shape == (1, 1)
               for before, after in _step_pairs(proof, "tril_scalar") for side in _rewritten_trils(before, after)
               for x in side)


def _tril_of_non_diagonal(proof: Proof) -> bool:
    """A step citing tril_diagonal that rewrites a tril of something other than I, 0 or diag(v) (the
    ``tril_symmetric`` slip: tril(S) = S for a symmetric S)."""
    return any(type(x.args[0]) not in (Identity, ZeroMatrix, Diag)
               for before, after in _step_pairs(proof, "tril_diagonal") for side in _rewritten_trils(before, after)
               for x in side)


def _tril_non_diagonal_factor(proof: Proof) -> bool:
    """A step citing tril_diag_scale that moves a factor other than diag(v) (or I) out of a tril (the
    ``tril_diag_scale`` slip: tril(B A) = B tril(A) for any B)."""
    for before, after in _step_pairs(proof, "tril_diag_scale"):
        gone, new = _rewritten_trils(before, after)
        trils = gone | new
        for big in trils:
            _, outer = factors_of(big.args[0])
            for small in trils:
                if small is big or small.args[1] != big.args[1]:
                    continue
                _, inner = factors_of(small.args[0])
                if len(outer) == len(inner) + 1 and ((outer[1:] == inner and not _is_diagonal_node(outer[0])) or
                                                     (outer[:-1] == inner and not _is_diagonal_node(outer[-1]))):
                    return True
    return False


def _inverse_with_non_strict_tril(proof: Proof) -> bool:
    """An inverse (or negative power) of I + Σ c·D tril(A) E with a tril that keeps its diagonal (the
    ``unit_lower_triangular`` slip: such a sum judged unit lower triangular)."""
    for term in _terms(proof):
        for node in term.atoms(MatPow):
            inner = node.args[0]
            if node.args[1] >= 0 or type(inner) is not sympy.MatAdd or \
                    not any(type(part) is Identity for part in inner.args):
                continue
            if any(type(m) is Tril and m.args[1] == 0 for part in inner.args for m in factors_of(part)[1]):
                return True
    return False


def _tril_of_non_square(proof: Proof, sample: Sample, extra: dict) -> bool:
    """A tril of a matrix that is not square on the sample (the ``tril_square`` slip: tril of any matrix defined)."""
    at = {**sample.dims, **extra}
    for term in _terms(proof):
        for node in term.atoms(Tril):
            rows, cols = node.args[0].shape
            try:
                if _dim_value(rows, at) != _dim_value(cols, at):
                    return True
            except CannotSample:
                if rows != cols:
                    return True
    return False


# --- the Kronecker product's tags (issue 41): each the mark of one slip of derive.fuzz.unsound --------------------


def _rewritten_as(proof: Proof, rule: str, node_type, wrong) -> bool:
    """A step citing ``rule`` whose two sides are one node of ``node_type`` on one side replaced by ``wrong(node)``
    (the slip's reading, None where it has none) and put in normal form: the step the slip takes."""
    for before, after in _step_pairs(proof, rule):
        for one, other in ((before, after), (after, before)):
            for node in one.atoms(node_type):
                try:
                    bad = wrong(node)
                    if bad is not None and canon(one.xreplace({node: bad})) == other:
                        return True
                except Exception:  # noqa: BLE001 - a reading that cannot be built is not the slip's step
                    continue
    return False


def _kron_swapped(node):
    """(A ⊗ B)ᵀ read as Bᵀ ⊗ Aᵀ (the ``kron_transpose`` slip); None where that is the right reading too."""
    if type(node.args[0]) is not Kron or node.args[0].args[0] == node.args[0].args[1]:
        return None
    a, b = node.args[0].args
    return Kron(Transpose(b), Transpose(a))


def _kron_one_coefficient(node):
    """cA ⊗ dB read as c(A ⊗ B) (the ``kron_scale`` slip); None where d = 1."""
    (c, left), (d, right) = factors_of(node.args[0]), factors_of(node.args[1])
    if d == 1:
        return None
    return mul(c, Kron(mul(left), mul(right)))


def _inverse_of_singular_kron(proof: Proof, sample: Sample, extra: dict) -> bool:
    """An inverse (or negative power) of A ⊗ B with a factor singular on the sample (the ``kron_judgment`` slip:
    A ⊗ B invertible when one factor is)."""
    nodes = {node.args[0] for term in _terms(proof) for node in term.atoms(MatPow)
             if type(node.args[0]) is Kron and node.args[1] < 0}
    if not nodes:
        return False
    ctx = _context(proof, sample, extra)
    try:
        for d in _definition_order(proof)[0]:
            ctx.env[d.symbol] = _eval(d.rhs, ctx)
    except Exception:  # noqa: BLE001 - the tag reads what it can
        return False
    for node in nodes:
        for factor in node.args:
            try:
                value = _eval(factor, ctx).to_Matrix()
            except Exception:  # noqa: BLE001
                continue
            if value.rows != value.cols or value.det() == 0:
                return True
    return False


def _tags(proof: Proof, sample: Sample, extra: dict) -> set[str]:
    tags = set()
    if _instance_broken(proof, sample, extra):
        tags.add("instance")
    if _foreign_index(proof):
        tags.add("recurrence_index")
    if _pd_power(proof, sample):
        tags.add("pd_power")
    if _schur(proof):
        tags.add("schur")
    if _negative_congruence(proof):
        tags.add("psd_congruence")
    if _tall_orthonormal_gram(proof):
        tags.add("one_sided")
    if _zero_scalar(proof, sample):
        tags.add("sign_narrowing")
    if _scalar_instance(proof):
        tags.add("scalar_instance")
    if _zero_coefficient_inverse(proof, sample, extra):
        tags.add("scaled_invertible")
    if _zero_divisor_with_fact(proof, sample, extra):
        tags.add("scalar_fact")
    if _singular_diag(proof, sample, extra):
        tags.add("diag_invertible")
    if _ones_inner_step(proof):
        tags.add("ones_inner")
    if _diag_of_a_matrix(proof):
        tags.add("diag_column")
    if _zero_index_power(proof, sample):
        tags.add("index_power")
    if _tril_grid_above_kept(proof):
        tags.add("tril_above")
    if _tril_grid_offset_dropped(proof):
        tags.add("tril_block_offset")
    if _strict_scalar_tril(proof):
        tags.add("tril_scalar")
    if _tril_of_non_diagonal(proof):
        tags.add("tril_symmetric")
    if _tril_non_diagonal_factor(proof):
        tags.add("tril_diag_scale")
    if _inverse_with_non_strict_tril(proof):
        tags.add("unit_lower_triangular")
    if _tril_of_non_square(proof, sample, extra):
        tags.add("tril_square")
    if _rewritten_as(proof, "kron_transpose", Transpose, _kron_swapped):
        tags.add("kron_transpose")
    if _rewritten_as(proof, "kron_scale", Kron, _kron_one_coefficient):
        tags.add("kron_scale")
    if _inverse_of_singular_kron(proof, sample, extra):
        tags.add("kron_judgment")
    return tags


def _text(term: Basic) -> str:
    """``str(term)``, or its ``srepr`` where SymPy's printer gives up (it simplifies, and (I − I)⁻¹ raises)."""
    try:
        return str(term)
    except Exception:  # noqa: BLE001 - printing is a convenience; the refutation stands
        return sympy.srepr(term)


_UNEVALUABLE = ("non-integer power", "exact ", "is not positive with an exact")


def _check_chain(chain, proof, sample, ctx, verdict: Verdict, values: dict, steps: bool) -> Refutation | None:
    exprs = [(chain.lhs, None)] + ([(s.expr, i) for i, s in enumerate(chain.steps, start=1)] if steps else []) \
        + [(chain.rhs, len(chain.steps) or None)]
    previous = None
    for term, step in exprs:
        try:
            value = _eval(term, ctx).to_Matrix()
        except UndefinedValue as exc:
            return Refutation("undefined", chain.name, f"{_text(term)} has no value: {exc.reason}", step, values)
        except WitnessError as exc:
            if any(word in exc.reason for word in _UNEVALUABLE):
                verdict.unevaluable += 1
                return None
            return Refutation("undefined", chain.name, f"{_text(term)} is not well formed: {exc.reason}", step, values)
        verdict.checks += 1
        if previous is not None and previous[1] != value:
            return Refutation("claim", chain.name, f"{_text(previous[0])} = {previous[1].tolist()} but {_text(term)} = "
                              f"{value.tolist()}", step, values)
        previous = (term, value)
    return None


def judge(proof: Proof, rng: random.Random, samples: int = 3) -> Verdict:
    """Evaluate every chain of an accepted ``proof`` on ``samples`` instances of its hypotheses."""
    verdict = Verdict()
    order, cycle = _definition_order(proof)
    if cycle:
        verdict.refutation = Refutation(
            "circular", "definitions", "the value of " + " -> ".join(cycle) + " depends on itself (through the "
            "recurrences it uses): the definitions constrain the other symbols", tags={"circular_definition"})
        return verdict
    indices = _free_indices(proof)
    for _ in range(samples):
        try:
            sample = sample_proof(proof, rng)
        except (CannotSample, WitnessError, ValueError, ZeroDivisionError):
            verdict.dropped += 1
            continue
        good = True
        for values in _index_assignments(indices, rng):
            extra = {s: v for s, v in values.items()}
            ctx = _context(proof, sample, extra)
            try:
                for d in order:
                    ctx.env[d.symbol] = _eval(d.rhs, ctx)
                if not all(_holds(h, proof, sample, ctx, rng) for h in proof.hypotheses):
                    good = False
                    break
            except (WitnessError, CannotSample, ValueError, ZeroDivisionError):
                good = False
                break
            named = {s.name: v for s, v in values.items()}
            for chain in _chains(proof):
                if isinstance(chain, Induction):
                    chain_steps = False
                    as_chain = Chain(chain.name, chain.lhs, chain.rhs, ())
                    refutation = _check_chain(as_chain, proof, sample, ctx, verdict, named, chain_steps)
                elif chain.hypotheses:
                    continue  # a conditional lemma: its local hypotheses are not sampled
                else:
                    refutation = _check_chain(chain, proof, sample, ctx, verdict, named, True)
                if refutation is not None:
                    refutation.sample = sample
                    refutation.tags = _tags(proof, sample, extra)
                    verdict.refutation = refutation
                    verdict.samples += 1
                    return verdict
        if good:
            verdict.samples += 1
        else:
            verdict.dropped += 1
    return verdict


def _index_assignments(indices: list[Symbol], rng: random.Random) -> list[dict]:
    if not indices:
        return [{}]
    out = []
    for value in INDEX_VALUES:
        out.append({s: (value if k == 0 else rng.choice(INDEX_VALUES)) for k, s in enumerate(indices)})
    return out


def replay(proof: Proof, data: dict) -> str:
    """Re-evaluate a recorded refutation (``refutation.json``) on its recorded sample; a line that says what differs."""
    shapes = (data.get("sample") or {}).get("shapes", {})

    def mat(rows, name=None):
        if rows:
            return Matrix([[Rational(x) for x in row] for row in rows])
        return zeros(*shapes.get(name, (0, 0)))

    symbols = {m.name: m for t in _terms(proof) for m in t.atoms(MatrixSymbol)}
    plain = {s.name: s for t in _terms(proof) for s in t.atoms(Symbol)}  # shapes' symbols included
    for f in proof.families:
        plain[f.index.name] = f.index
    order, cycle = _definition_order(proof)
    if cycle:
        return "[circular] definitions: the value of " + " -> ".join(cycle) + " depends on itself"
    raw = data["sample"]
    dims = {plain[k]: v for k, v in raw["dims"].items() if k in plain}
    scalars = {plain[k]: Rational(v) for k, v in raw["scalars"].items() if k in plain}
    env = {symbols[k]: mat(v, k) for k, v in raw["matrices"].items() if k in symbols}
    members = {}
    for key, v in raw["members"].items():
        name, e = key[:-1].split("[")
        members[(name, int(e))] = mat(v, key)
    sample = Sample(dims, scalars, env, members, set(raw.get("adversarial", ())))
    extra = {plain[k]: v for k, v in data.get("index_values", {}).items() if k in plain}
    ctx = _context(proof, sample, extra)
    for d in order:
        ctx.env[d.symbol] = _eval(d.rhs, ctx)
    chain = next(c for c in _chains(proof) if c.name == data["chain"])
    as_chain = Chain(chain.name, chain.lhs, chain.rhs, () if isinstance(chain, Induction) else chain.steps)
    found = _check_chain(as_chain, proof, sample, ctx, Verdict(), data.get("index_values", {}),
                         not isinstance(chain, Induction))
    return found.describe() if found else "no refutation on the recorded sample"


def to_json_ready(refutation: Refutation) -> dict[str, Any]:
    return {"kind": refutation.kind, "chain": refutation.chain, "step": refutation.step,
            "message": refutation.message, "index_values": refutation.index_values,
            "tags": sorted(refutation.tags),
            "sample": refutation.sample.to_data() if refutation.sample else None}
