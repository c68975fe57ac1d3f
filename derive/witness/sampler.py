"""Where the witness's values come from: sources of parameters and the generic sampler.

The generic sampler reads a proof's hypotheses (global and chain-local) and builds values that satisfy
them by construction, with exact operations only:

* predicates on a symbol choose how it is drawn (its *kind*): ``UᵀU = I`` / ``UUᵀ = I`` orthogonal or with
  orthonormal columns (Cayley transforms), ``Q.diagonal`` + ``Q.positive_definite`` a positive diagonal
  (perfect powers when a fractional power or a Gram factor of it is needed), ``Q.positive_definite``
  W D Wᵀ, ``Q.symmetric`` W D Wᵀ with D of any sign, ``Q.invertible`` L U with a positive pivot diagonal;
* equations are solved for their unknown symbols in a sensible order: ``S = term`` (also ``Sᵀ``, ``S⁻¹``),
  Gram equations ``SᵀS = F₁…F_k`` whose right side is a palindrome such as V Λ Vᵀ or C Cᵀ
  (S = U Λ^{1/2} Vᵀ with U orthonormal columns), block equations ``X = [X_prev; x_tᵀ]`` (slices), sums
  with one unknown term, and products with one unknown factor (exact pseudo-inverses), after cancelling
  common known outer factors and, for ``forall`` equations, the bound outer factors;
* what it cannot infer comes from the theorem's ``@theorem(sampling={...})`` hints (see
  :func:`parse_hints`): a symbol's value as a term in other symbols, a symbol's kind, a dimension.

Every hypothesis is verified exactly afterwards by :mod:`derive.witness.checks`.  A hypothesis the plan
does not ensure by construction carries a note (:attr:`Sample.notes`) that says why; when it then fails,
the witness reports, in one line, that it cannot sample that hypothesis and why.

The plan depends only on the proof, the hints and the dimensions, never on values, so the same sampler
runs on random rationals (instances) and on symbols (identities of rational functions).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import sympy
from sympy import QQ, ZZ, Basic, Rational, Symbol
from sympy.assumptions import Q
from sympy.assumptions.assume import AppliedPredicate
from sympy.matrices.expressions import (
    BlockMatrix,
    Identity,
    Inverse,
    MatAdd,
    MatMul,
    MatPow,
    MatrixExpr,
    MatrixSymbol,
    Transpose,
)
from sympy.polys.matrices import DomainMatrix
from sympy.polys.matrices.exceptions import DMNonInvertibleMatrixError

from ..kernel import Hypothesis, Proof
from ..kernel.terms import blocks_of
from .evaluate import (
    WitnessError,
    _Arith,
    _Ctx,
    _eval,
    _FunctionArith,
    _inv,
    _matmul,
    _positive_rational,
    _rational,
    _RationalArith,
    _shape_of,
    mul,
)

__all__ = ["KINDS", "SHAPES", "Sample", "Sampler", "Source", "cayley", "free", "generic_sampler", "hints_for",
           "orthogonal", "parse_hints", "sampler_for", "stiefel"]


# --- sources of parameters -----------------------------------------------------------


class Source:
    """Where a sampler's free parameters come from: random rationals (instances) or symbols (identities).

    Samplers build everything from :meth:`param` and :meth:`positive` with exact matrix operations over
    :attr:`domain`, and never branch on a value, so the same sampler serves both uses.  ``symbolic`` is
    true on symbolic runs (and their dry runs): helpers then pick cheaper parametrisations where the
    general one makes rational-function arithmetic take minutes.
    """

    def __init__(self, domain, draw: Callable[[bool], Any], symbolic: bool = False):
        self.domain = domain
        self.symbolic = symbolic
        self._draw = draw

    def param(self):
        """A free real parameter (non-zero when random)."""
        return self._draw(False)

    def positive(self):
        """A positive parameter."""
        return self._draw(True)


def _random_source(rng: random.Random, kinds: list[bool] | None = None) -> Source:
    """Random rationals; with ``kinds``, a dry run of a symbolic run that records what is drawn."""

    def draw(positive: bool):
        if kinds is not None:
            kinds.append(positive)
        return _positive_rational(rng) if positive else _rational(rng)

    return Source(QQ, draw, symbolic=kinds is not None)


def _symbol_source(kinds: Sequence[bool]) -> Source:
    """A source handing out the generators of ZZ(a_0, …, s_0, …) in the order a dry run drew them."""
    names, counts = [], {False: 0, True: 0}
    for positive in kinds:
        index = counts[positive]
        names.append(Symbol(f"s{index}", positive=True) if positive else Symbol(f"a{index}", real=True))
        counts[positive] += 1
    domain = ZZ.frac_field(*(names or [Symbol("unused", real=True)]))
    gens = iter(domain.gens)
    expected = iter(kinds)

    def draw(positive: bool):
        if next(expected, None) is not positive:
            raise WitnessError("the sampler drew different parameters on its symbolic run (it must not branch)")
        return next(gens)

    return Source(domain, draw, symbolic=True)


@dataclass(frozen=True)
class Sample:
    """A sampler's output: dimension values and matrix values, by the names the proof uses.

    ``notes`` maps the name of each hypothesis the sampler does not ensure by construction to why not
    (it is still verified; a failure is then reported as a hypothesis the witness cannot sample).
    """

    dims: dict[str, int]
    values: dict[str, DomainMatrix]
    notes: Mapping[str, str] = field(default_factory=dict)


#: A sampler: (source, shape, chain name) -> values satisfying the hypotheses of that chain.
Sampler = Callable[[Source, Mapping[str, int], str], Sample]

#: Shapes the instance check runs (dimension names a theorem does not use are ignored; others default to 2).
SHAPES: tuple[Mapping[str, int], ...] = tuple(MappingProxyType(shape) for shape in (
    {"n": 3, "p": 1, "k": 1, "m": 1, "d": 1, "r": 1},
    {"n": 4, "p": 2, "k": 1, "m": 3, "d": 3, "r": 1},
    {"n": 5, "p": 3, "k": 2, "m": 2, "d": 2, "r": 2},
    {"n": 6, "p": 3, "k": 1, "m": 2, "d": 4, "r": 3},
))

#: The value of a dimension that the shape does not give.
DEFAULT_DIM = 2


# --- exact building blocks -----------------------------------------------------------


def free(src: Source, rows: int, cols: int) -> DomainMatrix:
    """A matrix of free parameters."""
    return DomainMatrix([[src.param() for _ in range(cols)] for _ in range(rows)], (rows, cols), src.domain)


def _diag(src: Source, entries: Sequence[Any]) -> DomainMatrix:
    return DomainMatrix.diag(list(entries), src.domain).to_dense()


def cayley(A: DomainMatrix) -> DomainMatrix:
    """(I − A)(I + A)⁻¹: orthogonal for skew-symmetric A, rational when A is (I + A is always invertible)."""
    eye = DomainMatrix.eye(A.shape[0], A.domain).to_dense()
    return mul(eye - A, _inv(eye + A))


def _skew(src: Source, size: int, bordered: bool = False) -> DomainMatrix:
    """A skew-symmetric matrix of parameters (with ``bordered``, only its last column and row)."""
    zero = src.domain.zero
    rows = [[zero] * size for _ in range(size)]
    for i in range(size):
        for j in range(i + 1, size):
            if not bordered or j == size - 1:
                rows[i][j] = src.param()
                rows[j][i] = -rows[i][j]
    return DomainMatrix(rows, (size, size), src.domain)


def orthogonal(src: Source, size: int) -> DomainMatrix:
    """A rational orthogonal matrix: the Cayley transform of a skew-symmetric matrix of parameters."""
    return cayley(_skew(src, size))


def stiefel(src: Source, rows: int, cols: int) -> DomainMatrix:
    """A rows×cols matrix with orthonormal columns: the first columns of a Cayley orthogonal matrix.

    On symbolic runs with more than three rows the skew matrix is bordered (only its last column and row
    are parameters: a rotation taking e_rows to any unit vector).  The general 4×4 Cayley transform makes
    each identity check for p = 3 take 10–20 s instead of about 1 s.
    """
    return cayley(_skew(src, rows, bordered=src.symbolic and rows > 3))[:, :cols]


def _invertible(src: Source, size: int) -> DomainMatrix:
    """L U with L unit lower triangular and U upper triangular with positive diagonal: never singular."""
    one, zero = src.domain.one, src.domain.zero
    lower = [[src.param() if j < i else (one if i == j else zero) for j in range(size)] for i in range(size)]
    upper = [[zero] * size for _ in range(size)]
    for i in range(size):
        upper[i][i] = src.positive()
        for j in range(i + 1, size):
            upper[i][j] = src.param()
    return mul(DomainMatrix(lower, (size, size), src.domain), DomainMatrix(upper, (size, size), src.domain))


def _right_inverse(a: DomainMatrix) -> DomainMatrix:
    """A matrix Z with a Z = I when a (rows ≤ cols) has full row rank: aᵀ (a aᵀ)⁻¹."""
    return mul(a.transpose(), _inv(mul(a, a.transpose())))


def _left_inverse(a: DomainMatrix) -> DomainMatrix:
    """A matrix Z with Z a = I when a (rows ≥ cols) has full column rank: (aᵀ a)⁻¹ aᵀ."""
    return mul(_inv(mul(a.transpose(), a)), a.transpose())


def _solve_left(a: DomainMatrix) -> DomainMatrix:
    """Z such that Z (a b) = b for a·X = b: an inverse of ``a`` from the left (exact when a solution exists)."""
    rows, cols = a.shape
    if rows == cols:
        return _inv(a)
    return _right_inverse(a) if rows < cols else _left_inverse(a)


def _solve_right(a: DomainMatrix) -> DomainMatrix:
    """Z such that (b a) Z = b for X·a = b: an inverse of ``a`` from the right (exact when a solution exists)."""
    rows, cols = a.shape
    if rows == cols:
        return _inv(a)
    return _left_inverse(a) if rows > cols else _right_inverse(a)


# --- the proof's symbols -------------------------------------------------------------


def _proof_terms(proof: Proof) -> Iterable[Basic]:
    """Every term of the proof, in order.  The variables a ``thm:`` step instantiates belong to the cited
    theorem (only the terms they are instantiated with are this proof's)."""
    for h in proof.hypotheses:
        yield from (h.lhs, h.rhs, *h.forall)
    for d in proof.definitions:
        yield from (d.symbol, d.rhs)
    for c in (*proof.lemmas, proof.claim):
        for h in c.hypotheses:
            yield from (h.lhs, h.rhs, *h.forall)
        yield from (c.lhs, c.rhs)
        for s in c.steps:
            yield s.expr
            for var, val in s.instance:
                if not s.rule.startswith("thm:"):
                    yield var
                yield val


@dataclass(frozen=True)
class _Symbols:
    matrices: dict[str, MatrixSymbol]  # in order of first appearance
    dims: dict[str, Symbol]
    bound: frozenset[str]
    defined: frozenset[str]

    @property
    def free_matrices(self) -> list[str]:
        return [name for name in self.matrices if name not in self.bound and name not in self.defined]

    @property
    def free_dims(self) -> list[str]:
        return [name for name in self.dims if name not in self.bound]


def _ordered_atoms(term: Basic, types) -> list:
    seen: dict = {}
    for node in sympy.preorder_traversal(term):
        if isinstance(node, types):
            seen.setdefault(node, None)
    return list(seen)


def _symbols(proof: Proof) -> _Symbols:
    matrices: dict[str, MatrixSymbol] = {}
    dims: dict[str, Symbol] = {}
    for term in _proof_terms(proof):
        for node in _ordered_atoms(term, (MatrixSymbol, Symbol)):
            table = matrices if isinstance(node, MatrixSymbol) else dims
            if table.setdefault(str(node.name), node) != node:
                raise WitnessError(f"the name {node.name} is used for two different symbols", proof.theorem)
    hyps = [*proof.hypotheses, *(h for c in (*proof.lemmas, proof.claim) for h in c.hypotheses)]
    bound = frozenset(str(v.name) for h in hyps for v in h.forall)
    defined = frozenset(str(d.symbol.name) for d in proof.definitions)
    return _Symbols(matrices, dims, bound, defined)


def _names(term: Basic, skip: frozenset[str] = frozenset()) -> list[str]:
    """Names of the matrix symbols of a term, in order of appearance."""
    return [str(s.name) for s in _ordered_atoms(term, MatrixSymbol) if str(s.name) not in skip]


# --- sampling hints ------------------------------------------------------------------

#: How the generic sampler can draw a symbol (a kind hint names one of these).
KINDS = ("free", "orthogonal", "diagonal", "diagonal_positive", "positive_definite", "symmetric", "invertible")


@dataclass(frozen=True)
class Hints:
    """Parsed sampling hints: values (name -> term), kinds (name -> kind), dims (name -> expression)."""

    values: dict[str, MatrixExpr]
    kinds: dict[str, str]
    dims: dict[str, Any]
    auxiliary: dict[str, MatrixSymbol]  # symbols the hints introduce, not the theorem's


def parse_hints(hints: Mapping[Any, Any], proof: Proof) -> Hints:
    """Validate a theorem's ``sampling`` hints against its proof.

    The format is one flat mapping; a key is a symbol's name (or the symbol itself) and the value says:

    * a matrix term: the symbol's value, evaluated by the witness from other symbols' values, e.g.
      ``{"Q": U, "R": mul(S, transpose(V))}``;
    * a string from :data:`KINDS`: how to draw the symbol, overriding what its predicates suggest;
    * an integer or an expression in dimension symbols: the value of that dimension, e.g. ``{"d": p}``.

    Matrix symbols that occur in value terms but not in the theorem are *auxiliary*: the witness draws
    them too (free, unless a kind hint names them: ``{"C": mul(V, S, W), "W": "orthogonal"}``).
    """
    table = _symbols(proof)
    values: dict[str, MatrixExpr] = {}
    kinds: dict[str, str] = {}
    dims: dict[str, Any] = {}

    def fail(reason: str):
        raise WitnessError(f"sampling hint: {reason}", proof.theorem)

    for key, value in hints.items():
        name = key if isinstance(key, str) else str(getattr(key, "name", key))
        if name in table.bound or name in table.defined:
            fail(f"{name} is {'bound by a hypothesis' if name in table.bound else 'defined by the theorem'}; "
                 "it cannot be given a value")
        if isinstance(value, str):
            if value not in KINDS:
                fail(f"{name}: unknown kind {value!r} (one of {', '.join(KINDS)})")
            kinds[name] = value
        elif isinstance(value, MatrixExpr):
            if name in table.matrices and table.matrices[name].shape != value.shape:
                fail(f"{name} has shape {table.matrices[name].shape}, but its hint {value} has shape {value.shape}")
            values[name] = value
        elif isinstance(value, (int, sympy.Expr)) and not isinstance(value, bool):
            dims[name] = sympy.sympify(value)
        else:
            fail(f"{name}: a hint is a matrix term, a kind or a dimension, not {type(value).__name__}")
    auxiliary: dict[str, MatrixSymbol] = {}
    for name, term in values.items():
        for sym in _ordered_atoms(term, MatrixSymbol):
            sname = str(sym.name)
            if sname in table.defined or sname in table.bound:
                fail(f"the hint for {name} mentions {sname}, which the theorem "
                     f"{'defines' if sname in table.defined else 'binds'}")
            known = table.matrices.get(sname, auxiliary.get(sname))
            if known is not None and known != sym:
                fail(f"the hint for {name} uses {sname} with shape {sym.shape}, not {known.shape}")
            if sname not in table.matrices:
                auxiliary[sname] = sym
        if name not in table.matrices and name not in auxiliary:
            auxiliary[name] = MatrixSymbol(name, *term.shape)
    for name in kinds:
        if name not in table.matrices and name not in auxiliary:
            fail(f"a kind is given for {name}, which is neither the theorem's symbol nor used by a hint")
    return Hints(values, kinds, dims, auxiliary)


def hints_for(proof: Proof) -> Mapping[Any, Any]:
    """The sampling hints registered with the theorem ``proof.theorem`` (none for an unregistered proof)."""
    from ..authoring.registry import entry  # the registry imports the library, which imports derive: late

    try:
        return entry(proof.theorem).sampling
    except KeyError:
        return {}


# --- the plan ------------------------------------------------------------------------


class _Replan(Exception):
    """A dimension must grow for the plan to be exact (e.g. orthonormal columns need rows ≥ cols)."""

    def __init__(self, name: str, value: int):
        super().__init__(name, value)
        self.name, self.value = name, value


class _CannotSample(Exception):
    def __init__(self, hypothesis: str, reason: str):
        super().__init__(hypothesis, reason)
        self.hypothesis, self.reason = hypothesis, reason


@dataclass
class _Equation:
    name: str
    lhs: Basic
    rhs: Basic
    names: list[str]  # its unknown-able matrix symbols


# A step of the plan: the symbols it assigns, and how (given the executor).
_Action = tuple[tuple[str, ...], Callable[["_Executor"], None]]

_FACTORED_KINDS = ("diagonal_positive", "positive_definite")  # kinds whose Gram factor the sampler knows


def _is_transpose_pair(a: Basic, b: Basic) -> bool:
    return a == Transpose(b) or b == Transpose(a)


def _factors(term: Basic) -> tuple[Rational, list[Basic]]:
    if not isinstance(term, MatMul):
        return Rational(1), [term]
    coeff, out = Rational(1), []
    for arg in term.args:
        if isinstance(arg, Rational):
            coeff *= arg
        else:
            c, fs = _factors(arg)
            coeff *= c
            out.extend(fs)
    return coeff, out


def _lone(term: Basic) -> tuple[str, str | None] | None:
    """(symbol name, post-operation) if the term is S, Sᵀ or S⁻¹ for a matrix symbol S."""
    if isinstance(term, MatrixSymbol):
        return str(term.name), None
    if isinstance(term, Transpose) and isinstance(term.args[0], MatrixSymbol):
        return str(term.args[0].name), "T"
    if isinstance(term, Inverse) and isinstance(term.args[0], MatrixSymbol):
        return str(term.args[0].name), "inv"
    return None


def _pred_name(h: Hypothesis) -> str | None:
    known = {"positive_definite": Q.positive_definite, "invertible": Q.invertible, "diagonal": Q.diagonal,
             "symmetric": Q.symmetric}
    return next((k for k, v in known.items() if h.lhs.function == v), None)


def _orth_side(h: Hypothesis) -> tuple[str, str] | None:
    """(name, "cols" | "rows") if h reads SᵀS = I or SSᵀ = I."""
    for a, b in ((h.lhs, h.rhs), (h.rhs, h.lhs)):
        side = _gram_symbol(a) if isinstance(b, Identity) else None
        if side is not None:
            return side
    return None


#: What each kind guarantees of the predicates.
_ENSURES = {
    "free": set(),
    "orthogonal": set(),
    "diagonal": {"diagonal", "symmetric", "invertible"},
    "diagonal_positive": {"diagonal", "symmetric", "invertible", "positive_definite"},
    "positive_definite": {"symmetric", "invertible", "positive_definite"},
    "symmetric": {"symmetric", "invertible"},
    "invertible": {"invertible"},
}


def _kind_of(preds: set[str]) -> str:
    if "cols" in preds or "rows" in preds:
        return "orthogonal"
    if "diagonal" in preds:
        return "diagonal_positive" if "positive_definite" in preds else "diagonal"
    for kind in ("positive_definite", "symmetric", "invertible"):
        if kind in preds:
            return kind
    return "free"


class _Planner:
    """Orders how each symbol gets its value, for one chain in given dimensions (no values involved)."""

    def __init__(self, proof: Proof, table: _Symbols, hints: Hints, hyps: Sequence[Hypothesis],
                 dims: dict[str, int], roots: dict[str, int]):
        self.proof, self.table, self.hints, self.hyps = proof, table, hints, list(hyps)
        self.dims, self.roots = dims, dict(roots)
        self.shapes: dict[str, MatrixSymbol] = {**table.matrices, **hints.auxiliary}
        self.order = [*table.free_matrices, *(n for n in hints.auxiliary if n not in table.matrices)]
        self.known: set[str] = set()
        self.origin: dict[str, str] = {}
        self.kinds: dict[str, str] = {}
        self.actions: list[_Action] = []
        self.ensured: set[str] = set()
        self.notes: dict[str, str] = {}
        self.factor_of: dict[str, str] = {}  # symbol -> kind whose Gram factor is known
        self.inexact: set[str] = set()  # equations solved by least squares: exact only if a solution exists

    # -- dimensions --

    def size(self, expr) -> int:
        return _shape_dim(expr, self.dims, self.proof.theorem)

    def require(self, big, small, why: str, hypothesis: str, strict: bool = True) -> None:
        """Dimension ``big`` must be ≥ ``small``: grow ``big`` when it is a free dimension, else give up
        (or, unless ``strict``, go on and let the verification decide)."""
        b, s = self.size(big), self.size(small)
        if b >= s:
            return
        if isinstance(big, Symbol) and str(big.name) in self.dims and str(big.name) not in self.hints.dims:
            raise _Replan(str(big.name), s)
        if strict:
            raise _CannotSample(hypothesis, f"{why} needs {big} ≥ {small}, but {big} = {b} < {small} = {s}")

    # -- the plan --

    def plan(self) -> None:
        self._kinds()
        pending = self._equations()
        while True:
            if self._hint_step() or self._equation_step(pending):
                continue
            remaining = [n for n in self.order if n not in self.known and n not in self.hints.values]
            if not remaining:
                break
            self._draw(self._pick(remaining, pending))
        missing = [n for n in self.order if n not in self.known]
        if missing:
            name = missing[0]
            raise _CannotSample("", f"the sampling hint for {name} needs "
                                    f"{', '.join(x for x in _names(self.hints.values[name]) if x not in self.known)}, "
                                    "which never get a value (the hints refer to each other in a cycle)")
        for eq in pending:
            self._unsolved(eq)

    def _kinds(self) -> None:
        preds: dict[str, dict[str, str]] = {}
        self.kind_hyps: dict[str, set[str]] = {}
        for h in self.hyps:
            if h.forall:
                continue
            if isinstance(h.lhs, AppliedPredicate):
                arg = h.lhs.arguments[0] if len(h.lhs.arguments) == 1 else None
                pred = _pred_name(h)
                if isinstance(arg, MatrixSymbol) and pred is not None:
                    preds.setdefault(str(arg.name), {})[pred] = h.name
                    self.kind_hyps.setdefault(str(arg.name), set()).add(h.name)
                else:
                    self.notes[h.name] = (f"the sampler does not construct {h.lhs}: it holds only if the values "
                                          "drawn for its symbols happen to satisfy it")
                continue
            side = _orth_side(h)
            if side is not None and side[0] in self.order:
                preds.setdefault(side[0], {})[side[1]] = h.name
                self.kind_hyps.setdefault(side[0], set()).add(h.name)
        for name in self.order:
            given = preds.get(name, {})
            kind = self.hints.kinds.get(name) or _kind_of(set(given))
            self.kinds[name] = kind
            if name in self.hints.values:
                for hyp in given.values():
                    self.notes[hyp] = f"{name} is given by the theorem's sampling hint {self.hints.values[name]}"
                continue
            rows, cols = self.shapes[name].shape
            ensured = set(_ENSURES[kind])
            if kind == "orthogonal":
                r, c = self.size(rows), self.size(cols)
                if "cols" in given:
                    self.require(rows, cols, f"{name}ᵀ{name} = I", given["cols"])
                if "rows" in given:
                    self.require(cols, rows, f"{name}{name}ᵀ = I", given["rows"])
                ensured = {"cols"} if r > c else {"rows"} if r < c else {"cols", "rows"}
            for pred, hyp in given.items():
                if pred in ensured:
                    self.ensured.add(hyp)
                else:
                    self.notes[hyp] = f"{name} is drawn as {kind.replace('_', ' ')}, which need not satisfy it"

    def _equations(self) -> list[_Equation]:
        out = []
        for h in self.hyps:
            if isinstance(h.lhs, AppliedPredicate) or any(h.name in s for s in self.kind_hyps.values()):
                continue
            lhs, rhs = h.lhs, h.rhs
            if h.forall:
                bound = frozenset(str(v.name) for v in h.forall)
                lhs, rhs = _strip_bound(lhs, rhs, bound)
                left_over = {str(x.name) for x in (*_ordered_atoms(lhs, (MatrixSymbol, Symbol)),
                                                    *_ordered_atoms(rhs, (MatrixSymbol, Symbol)))}
                if left_over & bound:
                    self.notes[h.name] = ("it holds for all values of its bound symbols, which the sampler cannot "
                                          "strip from both sides")
                    continue
            names = [n for n in dict.fromkeys(_names(lhs) + _names(rhs)) if n in self.order]
            out.append(_Equation(h.name, lhs, rhs, names))
        return out

    def _assign(self, names: Sequence[str], run: Callable[[_Executor], None], origin: str) -> None:
        self.actions.append((tuple(names), run))
        for name in names:
            self.known.add(name)
            self.origin[name] = origin

    def _hint_step(self) -> bool:
        for name in self.order:
            term = self.hints.values.get(name)
            if name in self.known or term is None or not set(_names(term)) <= self.known:
                continue
            sym = self.shapes[name]
            self._assign([name], lambda ex, sym=sym, term=term: ex.set(sym, ex.value(term)),
                         "the sampling hint")
            return True
        return False

    def _equation_step(self, pending: list[_Equation]) -> bool:
        for eq in list(pending):
            unknown = [n for n in eq.names if n not in self.known]
            if not unknown:
                pending.remove(eq)
                self._unsolved(eq)
                continue
            if any(n in self.hints.values for n in unknown):
                continue  # a symbol with a hinted value gets that value, never one solved for
            for pattern, known_side in ((eq.lhs, eq.rhs), (eq.rhs, eq.lhs)):
                if not set(_names(known_side)) & set(unknown) and self._solve(eq, pattern, known_side, unknown):
                    pending.remove(eq)
                    if eq.name not in self.inexact:
                        self.ensured.add(eq.name)
                        self.notes.pop(eq.name, None)
                    return True
        return False

    def _unsolved(self, eq: _Equation) -> None:
        if eq.name in self.ensured or eq.name in self.notes:
            return
        fixed = {}
        for name in eq.names:
            fixed.setdefault(self.origin.get(name, "?"), []).append(name)
        how = "; ".join(f"{', '.join(names)} from {origin}" for origin, names in fixed.items())
        self.notes[eq.name] = f"the sampler solves no equation for it: its symbols are fixed elsewhere ({how})"

    def _targets(self, pending: list[_Equation]) -> set[str]:
        """Unknowns an equation could solve for: those standing alone, in a Gram product or as a block."""
        out = set()
        for eq in pending:
            for side in (eq.lhs, eq.rhs):
                lone = _lone(side)
                if lone:
                    out.add(lone[0])
                elif isinstance(side, BlockMatrix):
                    out.update(x[0] for row in blocks_of(side) for b in row for x in [_lone(b)] if x)
                elif _gram_symbol(side):
                    out.add(_gram_symbol(side)[0])
        return out

    def _pick(self, remaining: list[str], pending: list[_Equation]) -> str:
        targets = self._targets(pending)
        for wanted in ((False, False), (True, False), (False, True), (True, True)):
            for name in remaining:
                if ((self.kinds[name] == "free") == wanted[0]) and ((name in targets) == wanted[1]):
                    return name
        return remaining[0]

    def _draw(self, name: str) -> None:
        kind, sym = self.kinds[name], self.shapes[name]
        if kind in _FACTORED_KINDS:
            self.factor_of[name] = kind
        roots = self.roots
        self._assign([name], lambda ex: ex.draw(sym, kind, roots.get(name, 1)), f"drawing it {kind.replace('_', ' ')}")

    # -- solving one equation --

    def _solve(self, eq: _Equation, pattern: Basic, known: Basic, unknown: list[str]) -> bool:
        lone = _lone(pattern)
        if lone and lone[0] in unknown:
            name, post = lone
            sym = self.shapes[name]
            self._assign([name], lambda ex: ex.set(sym, ex.post(ex.value(known), post, eq.name)),
                         f"hypothesis {eq.name}")
            return True
        if isinstance(pattern, BlockMatrix):
            return self._solve_block(eq, pattern, known, unknown)
        gram = _gram_symbol(pattern)
        if gram and gram[0] in unknown and len(unknown) == 1:
            return self._solve_gram(eq, gram, known)
        if isinstance(pattern, MatAdd):
            return self._solve_sum(eq, pattern, known, unknown)
        if isinstance(pattern, MatMul) and len(unknown) == 1:
            return self._solve_product(eq, pattern, known, unknown[0])
        return False

    def _solve_block(self, eq, pattern: BlockMatrix, known: Basic, unknown: list[str]) -> bool:
        grid = blocks_of(pattern)
        cells, seen = [], set()
        for i, row in enumerate(grid):
            for j, b in enumerate(row):
                lone = _lone(b)
                names = set(_names(b)) & set(unknown)
                if not names:
                    continue
                if not lone or lone[1] == "inv" or lone[0] in seen:
                    return False
                seen.add(lone[0])
                cells.append((i, j, lone[0], lone[1]))
        if seen != set(unknown):
            return False
        heights = [self.size(row[0].shape[0]) for row in grid]
        widths = [self.size(b.shape[1]) for b in grid[0]]
        syms = {name: self.shapes[name] for _, _, name, _ in cells}

        def run(ex: _Executor) -> None:
            value = ex.value(known)
            for i, j, name, post in cells:
                r0, c0 = sum(heights[:i]), sum(widths[:j])
                piece = value[r0:r0 + heights[i], c0:c0 + widths[j]]
                ex.set(syms[name], piece.transpose() if post == "T" else piece)

        self._assign([c[2] for c in cells], run, f"hypothesis {eq.name}")
        return True

    def _solve_sum(self, eq, pattern: MatAdd, known: Basic, unknown: list[str]) -> bool:
        if len(unknown) != 1:
            return False
        terms = list(pattern.args)
        hits = [t for t in terms if set(_names(t)) & set(unknown)]
        if len(hits) != 1 or not _lone(hits[0]) or _lone(hits[0])[1] == "inv":
            return False
        name, post = _lone(hits[0])
        rest = [t for t in terms if t is not hits[0]]
        sym = self.shapes[name]

        def run(ex: _Executor) -> None:
            value = ex.value(known)
            for t in rest:
                value = value - ex.value(t)
            ex.set(sym, ex.post(value, post, eq.name))

        self._assign([name], run, f"hypothesis {eq.name}")
        return True

    def _solve_gram(self, eq, gram: tuple[str, str], known: Basic) -> bool:
        name, side = gram
        recipe = self._gram_recipe(known)
        if recipe is None:
            self.notes.setdefault(eq.name, f"no rational factor F with FᵀF = {known} is known (the sampler factors "
                                           "palindromic products such as V D Vᵀ or C Cᵀ, and symbols it draws "
                                           "positive definite)")
            return False
        coeff, mid, tail, size = recipe
        sym = self.shapes[name]
        rows, cols = sym.shape
        outer = rows if side == "cols" else cols
        if self.size(outer) < size:  # S = U F needs U with orthonormal columns, outer × size
            self.notes.setdefault(eq.name, f"the factor F with FᵀF = {known} the sampler knows has {size} rows, "
                                           f"more than {name} allows ({outer} = {self.size(outer)})")
            return False
        if mid is not None:
            self.roots[mid] = _lcm(self.roots.get(mid, 1), 2)

        def run(ex: _Executor) -> None:
            F = ex.gram_factor(coeff, mid, tail, size)
            U = stiefel(ex.src, self.size(outer), size)
            ex.set(sym, mul(U, F) if side == "cols" else mul(F.transpose(), U.transpose()))

        self._assign([name], run, f"hypothesis {eq.name}")
        return True

    def _gram_recipe(self, known: Basic):
        """(√c, middle symbol, tail factors, rows of F) with F = √c · factor(middle) · tail and FᵀF = known."""
        if isinstance(known, MatrixSymbol) and str(known.name) in self.factor_of:
            return Rational(1), str(known.name), [], self.size(known.shape[0])
        if isinstance(known, Identity):
            return Rational(1), None, [], self.size(known.shape[0])
        if not isinstance(known, MatMul):
            return None
        coeff, fs = _factors(known)
        root = sympy.sqrt(coeff)
        if not (root.is_Rational and root > 0):
            return None
        k = len(fs)
        if not all(_is_transpose_pair(fs[i], fs[k - 1 - i]) for i in range(k // 2)):
            return None
        tail = fs[(k + 1) // 2:]
        mid = None
        if k % 2:
            middle = fs[k // 2]
            if isinstance(middle, MatrixSymbol) and str(middle.name) in self.factor_of:
                mid = str(middle.name)
            elif not isinstance(middle, Identity):
                return None
            size = self.size(middle.shape[0])
        else:
            size = self.size(tail[0].shape[0])
        return Rational(root), mid, tail, size

    def _solve_product(self, eq, pattern: MatMul, known: Basic, name: str) -> bool:
        coeff, fs = _factors(pattern)
        hits = [i for i, f in enumerate(fs) if name in _names(f)]
        if len(hits) != 1 or not _lone(fs[hits[0]]) or _lone(fs[hits[0]])[1] == "inv":
            return False
        index = hits[0]
        post = _lone(fs[index])[1]
        kcoeff, kfs = _factors(known)
        left, right = fs[:index], fs[index + 1:]
        while left and kfs and left[0] == kfs[0] and len(kfs) > 1:  # cancel equal known outer factors
            left, kfs = left[1:], kfs[1:]
        while right and kfs and right[-1] == kfs[-1] and len(kfs) > 1:
            right, kfs = right[:-1], kfs[:-1]
        known_names = set(_names(known))
        for part, is_left in ((left, True), (right, False)):
            if not part:
                continue
            part_names = {n for f in part for n in _names(f)}
            rows, cols = part[0].shape[0], part[-1].shape[1]
            big, small = (cols, rows) if is_left else (rows, cols)
            if part_names and all(self.origin.get(n) == "drawing it free" for n in part_names) \
                    and not part_names & known_names:
                # the neighbours were drawn for this equation: make them full rank where it is always solvable
                self.require(big, small, f"solving for {name}", eq.name, strict=False)
            if self.size(big) < self.size(small):
                self.inexact.add(eq.name)
                self.notes[eq.name] = (f"{name} is solved from it by a least-squares inverse of "
                                       f"{MatMul(*part, evaluate=False) if len(part) > 1 else part[0]}, "
                                       "exact only when a solution exists")
        sym = self.shapes[name]
        scale = kcoeff / coeff

        def run(ex: _Executor) -> None:
            value = ex.product(kfs)
            if scale != 1:
                value = value * ex.src.domain.convert_from(QQ(int(scale.p), int(scale.q)), QQ)
            if left:
                value = mul(_solve_left(ex.product(left)), value)
            if right:
                value = mul(value, _solve_right(ex.product(right)))
            ex.set(sym, ex.post(value, post, eq.name))

        self._assign([name], run, f"hypothesis {eq.name}")
        return True


def _strip_bound(lhs: Basic, rhs: Basic, bound: frozenset[str]) -> tuple[Basic, Basic]:
    """A M B = A N B for all A, B: strip equal bound outer factors (it then reads M = N)."""
    lc, lf = _factors(lhs)
    rc, rf = _factors(rhs)

    def is_bound(f) -> bool:
        lone = _lone(f)
        return bool(lone) and lone[1] != "inv" and lone[0] in bound

    changed = True
    while changed and len(lf) > 1 and len(rf) > 1:
        changed = False
        if lf[0] == rf[0] and is_bound(lf[0]):
            lf, rf, changed = lf[1:], rf[1:], True
        elif lf[-1] == rf[-1] and is_bound(lf[-1]):
            lf, rf, changed = lf[:-1], rf[:-1], True

    def rebuild(c, fs):
        return fs[0] if c == 1 and len(fs) == 1 else MatMul(*([c] if c != 1 else []), *fs, evaluate=False)

    return rebuild(lc, lf), rebuild(rc, rf)


def _gram_symbol(term: Basic) -> tuple[str, str] | None:
    """(name, "cols") for SᵀS, (name, "rows") for SSᵀ."""
    if isinstance(term, MatMul) and len(term.args) == 2:
        x, y = term.args
        if isinstance(y, MatrixSymbol) and x == Transpose(y):
            return str(y.name), "cols"
        if isinstance(x, MatrixSymbol) and y == Transpose(x):
            return str(x.name), "rows"
    return None


def _lcm(a: int, b: int) -> int:
    return a * b // math.gcd(a, b)


def _shape_dim(expr, dims: Mapping[str, int], theorem: str) -> int:
    value = sympy.sympify(expr).xreplace({s: sympy.Integer(dims[str(s.name)]) for s in
                                          sympy.sympify(expr).free_symbols if str(s.name) in dims})
    if not value.is_Integer:
        raise WitnessError(f"dimension {expr} is not determined by the sample (dims {dict(dims)})", theorem)
    return int(value)


# --- executing a plan ----------------------------------------------------------------


class _Executor:
    """Runs a plan's actions with one source: draws, evaluates terms, solves."""

    def __init__(self, src: Source, planner: _Planner, dim_symbols: dict[Symbol, int]):
        arith: _Arith = _FunctionArith(src.domain) if src.domain != QQ else _RationalArith()
        self.src, self.planner = src, planner
        self.ctx = _Ctx(arith, {}, dim_symbols)
        self.factors: dict[str, DomainMatrix] = {}

    def value(self, term: Basic) -> DomainMatrix:
        return _eval(term, self.ctx)

    def product(self, factors: Sequence[Basic]) -> DomainMatrix:
        out = self.value(factors[0])
        for f in factors[1:]:
            out = _matmul(out, self.value(f))
        return out

    def post(self, value: DomainMatrix, op: str | None, hypothesis: str) -> DomainMatrix:
        if op == "T":
            return value.transpose()
        if op == "inv":
            try:
                return _inv(value)
            except DMNonInvertibleMatrixError:
                raise _CannotSample(hypothesis, "its other side is singular, so it defines no inverse") from None
        return value

    def set(self, sym: MatrixSymbol, value: DomainMatrix) -> None:
        expected = _shape_of(sym, self.ctx.dims)
        if value.shape != expected:
            raise WitnessError(f"the sampler made {sym.name} of shape {value.shape}, not {expected}")
        self.ctx.env[sym] = value

    def gram_factor(self, coeff: Rational, mid: str | None, tail: Sequence[Basic], size: int) -> DomainMatrix:
        K = self.src.domain
        out = self.factors[mid] if mid is not None else DomainMatrix.eye(size, K).to_dense()
        if tail:
            out = _matmul(out, self.product(tail))
        return out if coeff == 1 else out * K.convert_from(QQ(int(coeff.p), int(coeff.q)), QQ)

    def draw(self, sym: MatrixSymbol, kind: str, degree: int) -> None:
        src = self.src
        rows, cols = _shape_of(sym, self.ctx.dims)
        name = str(sym.name)
        if kind == "orthogonal":
            value = (orthogonal(src, rows) if rows == cols else stiefel(src, rows, cols) if rows > cols
                     else stiefel(src, cols, rows).transpose())
        elif kind == "free" or rows != cols:
            value = free(src, rows, cols)
        elif kind == "diagonal":
            value = _diag(src, [src.param() for _ in range(rows)])
        elif kind in _FACTORED_KINDS:
            half = [src.positive() ** max(1, degree // 2) for _ in range(rows)] if degree % 2 == 0 else None
            entries = [h * h for h in half] if half else [src.positive() ** degree for _ in range(rows)]
            if kind == "diagonal_positive":
                value = _diag(src, entries)
                if half:
                    self.factors[name] = _diag(src, half)
            else:
                W = orthogonal(src, rows)
                value = mul(W, _diag(src, entries), W.transpose())
                if half:
                    self.factors[name] = mul(_diag(src, half), W.transpose())
        elif kind == "symmetric":
            W = orthogonal(src, rows)
            value = mul(W, _diag(src, [src.param() for _ in range(rows)]), W.transpose())
        elif kind == "invertible":
            value = _invertible(src, rows)
        else:  # pragma: no cover - kinds are validated
            raise WitnessError(f"unknown kind {kind}")
        self.set(sym, value)


# --- the generic sampler -------------------------------------------------------------


def _fractional_roots(proof: Proof, hints: Hints) -> dict[str, int]:
    """Symbol -> lcm of the denominators of the fractional powers taken of it anywhere in the proof."""
    roots: dict[str, int] = {}
    for term in (*_proof_terms(proof), *hints.values.values()):
        for node in _ordered_atoms(term, MatPow):
            base, q = node.args
            if isinstance(base, MatrixSymbol) and isinstance(q, Rational) and q.q != 1:
                roots[str(base.name)] = _lcm(roots.get(str(base.name), 1), int(q.q))
    return roots


def generic_sampler(proof: Proof, hints: Mapping[Any, Any] | None = None) -> Sampler:
    """A sampler for ``proof`` built from its hypotheses and the theorem's sampling hints (see
    :func:`parse_hints`).  Raises :class:`WitnessError` naming the theorem, the chain and the hypothesis
    when it cannot plan a sample."""
    table = _symbols(proof)
    parsed = parse_hints(hints or {}, proof)
    roots = _fractional_roots(proof, parsed)
    chains = {c.name: c for c in (*proof.lemmas, proof.claim)}
    aux_dims = {str(s.name): s for sym in parsed.auxiliary.values()
                for s in (*sympy.sympify(sym.shape[0]).free_symbols, *sympy.sympify(sym.shape[1]).free_symbols)}
    dim_symbols = {**aux_dims, **table.dims}
    dim_names = [n for n in dict.fromkeys([*table.free_dims, *aux_dims])]
    plans: dict[tuple, _Planner] = {}

    def plan_for(shape: Mapping[str, int], chain: str) -> _Planner:
        dims = {name: int(shape.get(name, DEFAULT_DIM)) for name in dim_names}
        for name, expr in parsed.dims.items():
            dims[name] = _shape_dim(expr, dims, proof.theorem)
        key = (chain, tuple(sorted(dims.items())))
        if key in plans:
            return plans[key]
        hyps = (*proof.hypotheses, *(chains[chain].hypotheses if chain in chains else ()))
        for _ in range(4 * len(dims) + 4):
            planner = _Planner(proof, table, parsed, hyps, dims, roots)
            try:
                planner.plan()
            except _Replan as grow:
                dims = {**dims, grow.name: grow.value}
                continue
            except _CannotSample as exc:
                which = f"hypothesis {exc.hypothesis}" if exc.hypothesis else "a hypothesis"
                raise WitnessError(f"cannot sample {which}: {exc.reason}", proof.theorem, chain) from None
            plans[key] = planner
            return planner
        raise WitnessError("cannot sample: the dimensions the hypotheses need do not settle", proof.theorem, chain)

    def sampler(src: Source, shape: Mapping[str, int], chain: str) -> Sample:
        planner = plan_for(shape, chain)
        ex = _Executor(src, planner, {dim_symbols[n]: v for n, v in planner.dims.items() if n in dim_symbols})
        for names, run in planner.actions:
            try:
                run(ex)
            except _CannotSample as exc:
                raise WitnessError(f"cannot sample hypothesis {exc.hypothesis}: {exc.reason}", proof.theorem,
                                   chain) from None
            except WitnessError as exc:
                raise WitnessError(f"cannot sample {', '.join(names)}: {exc.reason}", proof.theorem, chain) from None
        values = {name: ex.ctx.env[table.matrices[name]] for name in table.free_matrices}
        dims = {name: planner.dims[name] for name in table.free_dims}
        return Sample(dims, values, MappingProxyType(dict(planner.notes)))

    return sampler


def sampler_for(proof: Proof) -> Sampler:
    """The generic sampler with the hints registered for ``proof.theorem`` (none if it is not registered)."""
    return generic_sampler(proof, hints_for(proof))
