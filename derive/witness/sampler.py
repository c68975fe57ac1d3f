"""Where the witness's values come from: sources of parameters and the generic sampler.

The generic sampler reads a proof's hypotheses (global and chain-local) and builds values that satisfy
them by construction, with exact operations only:

* predicates on a symbol choose how it is drawn (its *kind*): ``UᵀU = I`` / ``UUᵀ = I`` orthogonal or with
  orthonormal columns (Cayley transforms; a square one is a rotation or a reflection, the Cayley transform
  times diag(−1, 1, …, 1), so both components of O(n) occur, U = ±1 when 1×1: see :meth:`Source.reflect`),
  ``Q.diagonal`` a diagonal of either sign, ``Q.diagonal`` + ``Q.positive_definite`` a positive diagonal
  (perfect powers when a fractional power or a Gram factor of it is needed), ``Q.positive_definite`` with
  ``Q.symmetric`` W D Wᵀ, ``Q.positive_definite`` alone W D Wᵀ + K with K skew-symmetric (xᵀAx > 0 without
  symmetry, the kernel's meaning; symmetric where a Gram equation or a root needs it), ``Q.symmetric``
  W D Wᵀ with D of any sign (indefinite), ``Q.invertible`` L U with a pivot diagonal of either sign (so
  det < 0 occurs, and the matrix is not symmetric);
* equations are solved for their unknown symbols in a sensible order: ``S = term`` (also ``Sᵀ``, ``S⁻¹``),
  Gram equations ``SᵀS = F₁…F_k`` whose right side is a palindrome such as V Λ Vᵀ or C Cᵀ
  (S = U Λ^{1/2} Vᵀ with U orthonormal columns, a rotation or a reflection when square, so det S takes
  both signs), block equations ``X = [X_prev; x_tᵀ]`` (slices), sums
  with one unknown term, and products with one unknown factor (exact pseudo-inverses), after cancelling
  common known outer factors and, for ``forall`` equations, the bound outer factors;
* what it cannot infer comes from the theorem's ``@theorem(sampling={...})`` hints (see
  :func:`parse_hints`): a symbol's value as a term in other symbols, a symbol's kind, a dimension.

Scalar symbols are not drawn here: the check fixes their values first (:attr:`Source.scalars`) and the
sampler reads them, so hypotheses such as C = XᵀX + λI are solved with them.  Dimensions the shapes do not
name take sizes 1, 2 and 3 over :data:`SHAPES` (see :data:`OTHER`).  Index symbols take the shape's
``index`` value (0, 1, 2, 3 over :data:`SHAPES`, so empty matrices occur); every member of a free
family that the proof needs at those values (directly, or through a recurrence) is a symbol of the plan,
named ``x[2]``, drawn or solved like any other.  A diagonal Λ that is only diagonal and sits in the middle of
a Gram equation XᵀX = VΛVᵀ is drawn non-negative (a valid eigenvalue matrix); on *degenerate* samples
(:attr:`Source.degenerate`) diagonal and symmetric matrices that may be singular get a zero eigenvalue, so
X is rank-deficient there.  Homogeneous equations X₁ᵀX₂ = 0 are solved generically (X₂ = (I − X₁X₁⁺)Z),
asking for the rows that make the solution full rank (n ≥ p₁ + p₂) when n is free.

Every hypothesis is verified exactly afterwards by :mod:`derive.witness.checks`.  A hypothesis the plan
does not ensure by construction carries a note (:attr:`Sample.notes`) that says why; when it then fails,
the witness reports, in one line, that it cannot sample that hypothesis and why.

The plan depends only on the proof, the hints and the dimensions, never on values, so the same sampler
runs on random rationals (instances) and on symbols (identities of rational functions).
"""

from __future__ import annotations

import functools
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
    ZeroMatrix,
)
from sympy.polys.matrices import DomainMatrix
from sympy.polys.matrices.exceptions import DMNonInvertibleMatrixError

from ..kernel import Chain, Family, Hypothesis, Induction, Proof
from ..kernel.scalars import scalar_kind
from ..kernel.terms import Diag, FamilyMatrix, blocks_of, index_kind
from .evaluate import (
    Member,
    UndefinedValue,
    WitnessError,
    _adj_det,
    _Arith,
    _coefficient,
    _Ctx,
    _eval,
    _FunctionArith,
    _inv,
    _is_function_field,
    _join,
    _matmul,
    _positive_rational,
    _rational,
    _RationalArith,
    _shape_of,
    _split,
    mul,
)

__all__ = ["INDEX", "KINDS", "OTHER", "SHAPES", "Sample", "Sampler", "Source", "cayley", "chains_of", "free",
           "generic_sampler", "hints_for", "orthogonal", "parse_hints", "reflection_pattern", "sampler_for",
           "stiefel"]


# --- sources of parameters -----------------------------------------------------------


class Source:
    """Where a sampler's free parameters come from: random rationals (instances) or symbols (identities).

    Samplers build everything from :meth:`param` and :meth:`positive` with exact matrix operations over
    :attr:`domain`, and never branch on a value, so the same sampler serves both uses.  ``symbolic`` is
    true on symbolic runs (and their dry runs): helpers then pick cheaper parametrisations where the
    general one makes rational-function arithmetic take minutes.

    ``scalars`` holds the values of the theorem's scalar symbols (by symbol), fixed by the check before
    sampling: rationals, or generators of the field of rational functions.  ``degenerate`` marks an instance
    sample at the boundary of what the hypotheses allow (real scalars at 0, singular diagonal or symmetric
    matrices where no hypothesis excludes them); the check skips it where the statement is undefined.
    """

    def __init__(self, domain, draw: Callable[[bool], Any], symbolic: bool = False,
                 scalars: Mapping[Symbol, Any] | None = None, degenerate: bool = False,
                 reflections: int | Callable[[], bool] = 0):
        self.domain = domain
        self.symbolic = symbolic
        self._draw = draw
        self.scalars = dict(scalars or {})
        self.degenerate = degenerate
        self._reflections = reflections
        self._orthogonal_drawn = 0

    def scalar(self, symbol: Symbol):
        """The value of a scalar symbol of the theorem on this sample."""
        if symbol not in self.scalars:
            raise WitnessError(f"the check gives no value for the scalar {symbol}")
        return self.scalars[symbol]

    def param(self):
        """A free real parameter (non-zero when random)."""
        return self._draw(False)

    def positive(self):
        """A positive parameter."""
        return self._draw(True)

    def reflect(self) -> bool:
        """Whether the next square orthogonal matrix drawn is a reflection (determinant −1), not a rotation.

        ``reflections`` says it: bit k of an integer for the k-th such matrix of the sample (see
        :func:`reflection_pattern`), or a function asked each time (random instances drawn outside the checks).
        A rational parametrisation of orthogonal matrices has a constant determinant, so each sample is of one
        component of O(n) per matrix; the checks choose the components so that every one is reached.
        """
        k, self._orthogonal_drawn = self._orthogonal_drawn, self._orthogonal_drawn + 1
        if callable(self._reflections):
            return bool(self._reflections())
        return bool(self._reflections >> k & 1)


def _random_source(rng: random.Random, kinds: list[bool] | None = None, scalars: Mapping[Symbol, Any] | None = None,
                   degenerate: bool = False, reflections: int | None = None) -> Source:
    """Random rationals; with ``kinds``, a dry run of a symbolic run that records what is drawn.  Square orthogonal
    matrices are reflections where ``reflections`` says (see :meth:`Source.reflect`), or at random (None)."""

    def draw(positive: bool):
        if kinds is not None:
            kinds.append(positive)
        return _positive_rational(rng) if positive else _rational(rng)

    flips = (lambda: rng.random() < 0.5) if reflections is None else reflections
    return Source(QQ, draw, symbolic=kinds is not None, scalars=scalars, degenerate=degenerate, reflections=flips)


def reflection_pattern(index: int, offset: int = 0) -> int:
    """Which square orthogonal matrices of the ``index``-th sample are reflections (bit k for the k-th, see
    :meth:`Source.reflect`): over any four consecutive indices the first orthogonal matrix alternates between
    the two components of O(n), and the first three take every pair of components; ``offset`` (random bits)
    is XORed in, so which sample starts where depends on it, and the fourth and later ones follow its bits."""
    low = (index & 1) | (index & 2) | (((index ^ (index >> 1)) & 1) << 2)
    return offset ^ low


def _symbol_source(kinds: Sequence[bool], scalars: Sequence[Symbol] = (), reflections: int = 0) -> Source:
    """A source handing out the generators of ZZ(λ, …, a_0, …, s_0, …): the theorem's scalar symbols (real or
    positive, as declared), then parameters in the order a dry run drew them; square orthogonal matrices are
    reflections where ``reflections`` says (as on the dry run)."""
    taken = {str(s.name) for s in scalars}
    names, counts = [], {False: 0, True: 0}
    for positive in kinds:
        index = counts[positive]
        name = f"{'s' if positive else 'a'}{index}"
        while name in taken:  # a scalar of the theorem has that name
            name += "_"
        names.append(Symbol(name, positive=True) if positive else Symbol(name, real=True))
        counts[positive] += 1
    domain = ZZ.frac_field(*(list(scalars) + names or [Symbol("unused", real=True)]))
    gens = iter(domain.gens[len(scalars):])
    expected = iter(kinds)

    def draw(positive: bool):
        if next(expected, None) is not positive:
            raise WitnessError("the sampler drew different parameters on its symbolic run (it must not branch)")
        return next(gens)

    values = dict(zip(scalars, domain.gens[:len(scalars)], strict=True))
    return Source(domain, draw, symbolic=True, scalars=values, reflections=reflections)


@dataclass(frozen=True)
class Sample:
    """A sampler's output: dimension values and matrix values, by the names the proof uses.

    ``notes`` maps the name of each hypothesis the sampler does not ensure by construction to why not
    (it is still verified; a failure is then reported as a hypothesis the witness cannot sample).
    ``unmet`` lists dimension requirements the sampler could not meet (n ≥ p₁ + p₂ for a full-rank
    solution when n is fixed), which such a report then names.  Members of free families are named ``x[2]``.
    """

    dims: dict[str, int]
    values: dict[str, DomainMatrix]
    notes: Mapping[str, str] = field(default_factory=dict)
    unmet: tuple[str, ...] = ()


#: A sampler: (source, shape, chain name) -> values satisfying the hypotheses of that chain.
Sampler = Callable[[Source, Mapping[str, int], str], Sample]

#: The key of a shape that gives every index symbol it does not name its value (0 makes prefixes X_t empty).
INDEX = "index"

#: The key of a shape that gives the dimensions it does not name their sizes: the j-th such dimension of a theorem
#: (in order of first appearance) is 1 + (other − 1 + j) mod 3, so each takes 1, 2 and 3 over :data:`SHAPES` and
#: two of them differ on every shape.
OTHER = "other"

#: Shapes the instance check runs (dimension names a theorem does not use are ignored; others take sizes from
#: ``other``, or 2 where a shape has no ``other``; index symbols take the ``index`` value unless named).
SHAPES: tuple[Mapping[str, int], ...] = tuple(MappingProxyType(shape) for shape in (
    {"n": 3, "p": 1, "k": 1, "m": 1, "d": 1, "r": 1, INDEX: 0, OTHER: 1},
    {"n": 4, "p": 2, "k": 1, "m": 3, "d": 3, "r": 1, INDEX: 1, OTHER: 2},
    {"n": 5, "p": 3, "k": 2, "m": 2, "d": 2, "r": 2, INDEX: 2, OTHER: 3},
    {"n": 6, "p": 3, "k": 1, "m": 2, "d": 4, "r": 3, INDEX: 3, OTHER: 2},
))

#: The value of a dimension that the shape does not give (without ``other``), and of an index when the shape
#: gives none.
DEFAULT_DIM = 2
DEFAULT_INDEX = 1


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


def _rotation(src: Source, size: int) -> DomainMatrix:
    """A rational rotation (determinant +1): the Cayley transform of a skew-symmetric matrix of parameters.
    Enough where only W D Wᵀ is used (a reflection S gives the same W S D S Wᵀ = W D Wᵀ)."""
    return cayley(_skew(src, size))


def _reflected(src: Source, rotation: DomainMatrix) -> DomainMatrix:
    """The rotation, or, where :meth:`Source.reflect` says so, the rotation with its first column negated: a
    reflection (determinant −1), so that both components of O(n) are reached (U = −1 when 1×1)."""
    if not src.reflect():
        return rotation
    size = rotation.shape[0]
    signs = [-src.domain.one, *[src.domain.one] * (size - 1)]
    return mul(rotation, DomainMatrix.diag(signs, src.domain).to_dense()) if size else rotation


def orthogonal(src: Source, size: int) -> DomainMatrix:
    """A rational orthogonal matrix: the Cayley transform of a skew-symmetric matrix of parameters (a rotation),
    times diag(−1, 1, …, 1) where the source says it is a reflection (:meth:`Source.reflect`)."""
    return _reflected(src, cayley(_skew(src, size)))


def stiefel(src: Source, rows: int, cols: int) -> DomainMatrix:
    """A rows×cols matrix with orthonormal columns: the first columns of a Cayley orthogonal matrix (for a square
    one, a rotation or a reflection as :func:`orthogonal`; with fewer columns than rows, the set is connected and
    the first columns of rotations reach it).

    On symbolic runs with more than three rows the skew matrix is bordered (only its last column and row
    are parameters: a rotation taking e_rows to any unit vector).  The general 4×4 Cayley transform makes
    each identity check for p = 3 take 10–20 s instead of about 1 s.
    """
    rotation = cayley(_skew(src, rows, bordered=src.symbolic and rows > 3))
    return _reflected(src, rotation) if rows == cols else rotation[:, :cols]


def _invertible(src: Source, size: int) -> DomainMatrix:
    """L U with L unit lower triangular and U upper triangular with a non-zero diagonal of either sign: never
    singular, and its determinant and leading minors take both signs (A = −2 when 1×1)."""
    one, zero = src.domain.one, src.domain.zero
    lower = [[src.param() if j < i else (one if i == j else zero) for j in range(size)] for i in range(size)]
    upper = [[zero] * size for _ in range(size)]
    for i in range(size):
        upper[i][i] = src.param()
        for j in range(i + 1, size):
            upper[i][j] = src.param()
    return mul(DomainMatrix(lower, (size, size), src.domain), DomainMatrix(upper, (size, size), src.domain))


def _right_inverse(a: DomainMatrix) -> DomainMatrix:
    """A matrix Z with a Z = I when a (rows ≤ cols) has full row rank: aᵀ (a aᵀ)⁻¹."""
    return mul(a.transpose(), _inv(mul(a, a.transpose())))


def _left_inverse(a: DomainMatrix) -> DomainMatrix:
    """A matrix Z with Z a = I when a (rows ≥ cols) has full column rank: (aᵀ a)⁻¹ aᵀ."""
    return mul(_inv(mul(a.transpose(), a)), a.transpose())


def _null_basis(a: DomainMatrix) -> DomainMatrix:
    """Columns spanning the null space of a wide ``a`` = [A B] (rows < cols, A square and invertible): the
    polynomial basis [−adj(A) B; det(A) I], as a A adj(A) = det(A) I.  Polynomial entries keep symbolic runs
    fast (a projector I − a⁺a would put det(a aᵀ) in every denominator)."""
    rows, cols = a.shape
    square, rest = a[:, :rows], a[:, rows:]
    if rows == 0:
        return DomainMatrix.eye(cols, a.domain).to_dense()
    if _is_function_field(a.domain):
        numer, d = _split(square)
        adjugate, det = _adj_det(numer)
        adjugate = _join(adjugate, d ** (rows - 1), a.domain)
        det = a.domain.field((det, d**rows))
    else:
        adjugate, det = square.adj_det()
    top = mul(adjugate, rest) * (-a.domain.one)
    return DomainMatrix.vstack(top, DomainMatrix.eye(cols - rows, a.domain).to_dense() * det)


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


def chains_of(proof: Proof) -> tuple[tuple[Chain, Induction | None], ...]:
    """Every chain the witness checks, in order, with the induction it belongs to (None for a plain chain).

    An induction lemma is two chains, as the kernel reads it: ``NAME_base``, the claim at variable = 0, and
    ``NAME_step``, the claim at variable + 1 with the hypothesis ``IH``, the claim at variable.
    """
    out: list[tuple[Chain, Induction | None]] = []
    for c in proof.lemmas:
        if isinstance(c, Induction):
            t = c.variable
            at = lambda value, c=c, t=t: (c.lhs.xreplace({t: value}), c.rhs.xreplace({t: value}))  # noqa: E731
            out.append((Chain(f"{c.name}_base", *at(sympy.S.Zero), c.base), c))
            out.append((Chain(f"{c.name}_step", *at(t + 1), c.step, (Hypothesis("IH", c.lhs, c.rhs),)), c))
        else:
            out.append((c, None))
    out.append((proof.claim, None))
    return tuple(out)


def _family_terms(proof: Proof) -> Iterable[Basic]:
    for f in proof.families:
        yield from (f.rows, f.cols)
        if f.is_defined:
            yield from (f.base, f.step)


def _proof_terms(proof: Proof, families: bool = True) -> Iterable[Basic]:
    """Every term of the proof, in order (the families' declarations last, unless ``families`` is false).  Only
    the variables of a hypothesis a ``hyp:`` step instantiates are this proof's: those of a ``thm:`` step belong
    to the cited theorem, and a ``step:F`` or ``lemma:`` step instantiates a recurrence's or an induction's
    index."""
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
                if s.rule.startswith("hyp:"):
                    yield var
                yield val
    if families:
        yield from _family_terms(proof)


@dataclass(frozen=True)
class _Symbols:
    matrices: dict[str, MatrixSymbol]  # in order of first appearance
    dims: dict[str, Symbol]  # dimensions and indices
    bound: frozenset[str]
    defined: frozenset[str]
    scalars: dict[str, Symbol] = field(default_factory=dict)
    families: dict[str, Family] = field(default_factory=dict)
    scalar_equations: dict = field(default_factory=dict)  # λ -> r for each scalar hypothesis λ = r (issue 29)

    @property
    def free_matrices(self) -> list[str]:
        return [name for name in self.matrices if name not in self.bound and name not in self.defined]

    @property
    def free_dims(self) -> list[str]:
        return [name for name in self.dims if name not in self.bound]

    @property
    def real_scalars(self) -> list[Symbol]:
        """Scalar symbols that may be 0 (not declared positive)."""
        return [s for s in self.scalars.values() if scalar_kind(s) == "real"]


def _ordered_atoms(term: Basic, types) -> list:
    return list(_ordered_atoms_of(term, types))


@functools.lru_cache(maxsize=8192)
def _ordered_atoms_of(term: Basic, types) -> tuple:
    """The distinct sub-terms of ``types`` in ``term``, in preorder (remembered: the sampler asks it of the same
    terms for every instance and dimension)."""
    seen: dict = {}
    for node in sympy.preorder_traversal(term):
        if isinstance(node, types):
            seen.setdefault(node, None)
    return tuple(seen)


def _symbols(proof: Proof) -> _Symbols:
    matrices: dict[str, MatrixSymbol] = {}
    dims: dict[str, Symbol] = {}
    scalars: dict[str, Symbol] = {}
    outside: set[str] = set()  # symbols that occur outside the families' declarations
    for inside, terms in ((False, _proof_terms(proof, families=False)), (True, _family_terms(proof))):
        for term in terms:
            for node in _ordered_atoms(term, (MatrixSymbol, Symbol)):
                table = matrices if isinstance(node, MatrixSymbol) else scalars if scalar_kind(node) else dims
                if table.setdefault(str(node.name), node) != node:
                    raise WitnessError(f"the name {node.name} is used for two different symbols", proof.theorem)
                if not inside:
                    outside.add(str(node.name))
    hyps = [*proof.hypotheses, *(h for c in (*proof.lemmas, proof.claim) for h in c.hypotheses)]
    bound = {str(v.name) for h in hyps for v in h.forall}
    bound |= {str(f.index.name) for f in proof.families if str(f.index.name) not in outside}
    defined = frozenset(str(d.symbol.name) for d in proof.definitions)
    equations = {h.lhs: h.rhs for h in proof.hypotheses if type(h.lhs) is Symbol}
    return _Symbols(matrices, dims, frozenset(bound), defined, scalars, {f.name: f for f in proof.families},
                    equations)


def _names(term: Basic, skip: frozenset[str] = frozenset()) -> list[str]:
    """Names of the matrix symbols of a term, in order of appearance."""
    return [str(s.name) for s in _ordered_atoms(term, MatrixSymbol) if str(s.name) not in skip]


# --- sampling hints ------------------------------------------------------------------

#: How the generic sampler can draw a symbol (a kind hint names one of these).
KINDS = ("free", "orthogonal", "diagonal", "diagonal_positive", "diagonal_nonnegative", "positive_definite",
         "positive_definite_nonsymmetric",
         "symmetric", "invertible", "entries_nonzero", "entries_positive")


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


# --- members of families ----------------------------------------------------------


def _index_at(expr: Basic, dims: Mapping[Symbol, int]) -> int | None:
    """The natural number an index stands for at these index values (None if it is not determined)."""
    value = sympy.sympify(expr).xreplace({s: sympy.Integer(v) for s, v in dims.items()})
    return int(value) if value.is_Integer and value >= 0 else None


def member_name(member: Member) -> str:
    """How a sample names a member of a free family: ``x[2]``."""
    return f"{member[0]}[{member[1]}]"


def _needed_members(proof: Proof, table: _Symbols, dims: Mapping[Symbol, int]) -> list[Member]:
    """Members of free families the proof needs at these index values, in order of first appearance: those its
    terms name, and those the recurrences of defined families use on the way to the members the terms name."""
    needed: dict[Member, None] = {}
    unrolled: set[Member] = set()

    def visit(term: Basic) -> None:
        for node in _ordered_atoms(term, FamilyMatrix):
            family, e = table.families.get(node.name), _index_at(node.index, dims)
            if family is None or e is None:
                continue
            if not family.is_defined:
                needed.setdefault((node.name, e), None)
                continue
            for i in range(e + 1):
                if (node.name, i) not in unrolled:
                    unrolled.add((node.name, i))
                    visit(family.base if i == 0 else family.step.xreplace({family.index: sympy.Integer(i - 1)}))

    for term in _proof_terms(proof, families=False):
        visit(term)
    for chain, induction in chains_of(proof):
        if induction is not None:
            visit(chain.lhs)
            visit(chain.rhs)
    return list(needed)


def _member_symbol(family: Family, e: int) -> MatrixSymbol:
    """The member F[e] of a free family as a matrix symbol of the plan, named ``F[e]``."""
    at = {family.index: sympy.Integer(e)}
    return MatrixSymbol(member_name((family.name, e)), family.rows.xreplace(at), family.cols.xreplace(at))


def _concrete(term: Basic, dims: Mapping[Symbol, int], members: Mapping[Member, MatrixSymbol]) -> Basic:
    """``term`` with the members of free families at determined indices replaced by the plan's symbols."""
    mapping = {}
    for node in term.atoms(FamilyMatrix):
        e = _index_at(node.index, dims)
        if e is not None and (node.name, e) in members:
            mapping[node] = members[(node.name, e)]
    return term.xreplace(mapping) if mapping else term


@dataclass
class _Equation:
    name: str
    lhs: Basic
    rhs: Basic
    names: list[str]  # its unknown-able matrix symbols


# A step of the plan: the symbols it assigns, and how (given the executor).
_Action = tuple[tuple[str, ...], Callable[["_Executor"], None]]

_FACTORED_KINDS = ("diagonal_positive", "diagonal_nonnegative", "positive_definite")  # Gram factor known
_MAY_BE_SINGULAR = ("diagonal", "diagonal_nonnegative", "symmetric")  # singular on degenerate samples if allowed


def _is_transpose_pair(a: Basic, b: Basic) -> bool:
    return a == Transpose(b) or b == Transpose(a)


def _factors(term: Basic) -> tuple[Basic, list[Basic]]:
    """(coefficient, matrix factors): the coefficient is a rational number or a scalar expression."""
    if not isinstance(term, MatMul):
        return Rational(1), [term]
    coeff, out = Rational(1), []
    for arg in term.args:
        if not isinstance(arg, MatrixExpr):
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
    "diagonal_nonnegative": {"diagonal", "symmetric"},
    "positive_definite": {"symmetric", "invertible", "positive_definite"},
    "positive_definite_nonsymmetric": {"invertible", "positive_definite"},
    "symmetric": {"symmetric", "invertible"},
    "invertible": {"invertible"},
    # issue 41: a vector v whose diag(v) a hypothesis calls invertible (every entry non-zero) or positive definite
    "entries_nonzero": set(),
    "entries_positive": set(),
}

#: issue 41: the kind of v that makes a predicate of diag(v) hold (diagonal and symmetric hold of any diag(v)).
_DIAG_ENTRIES = {"invertible": "entries_nonzero", "positive_definite": "entries_positive"}


def _kind_of(preds: set[str]) -> str:
    if "cols" in preds or "rows" in preds:
        return "orthogonal"
    if "diagonal" in preds:
        return "diagonal_positive" if "positive_definite" in preds else "diagonal"
    if "positive_definite" in preds and "symmetric" not in preds:
        return "positive_definite_nonsymmetric"  # xᵀAx > 0 only, the kernel's meaning: S + K, K skew-symmetric
    for kind in ("positive_definite", "symmetric", "invertible"):
        if kind in preds:
            return kind
    return "free"


class _Planner:
    """Orders how each symbol gets its value, for one chain in given dimensions (no values involved)."""

    def __init__(self, proof: Proof, table: _Symbols, hints: Hints, hyps: Sequence[Hypothesis],
                 dims: dict[str, int], roots: dict[str, int], members: Mapping[str, MatrixSymbol] | None = None):
        self.proof, self.table, self.hints, self.hyps = proof, table, hints, list(hyps)
        self.dims, self.roots = dims, dict(roots)
        self.shifts: dict[str, Basic] = {}  # symbol -> c where (M + c·I)^(1/2) is taken (see _shifted_roots)
        members = dict(members or {})
        self.shapes: dict[str, MatrixSymbol] = {**table.matrices, **hints.auxiliary, **members}
        self.order = [*table.free_matrices, *(n for n in hints.auxiliary if n not in table.matrices), *members]
        self.singular_ok: set[str] = set()  # symbols a degenerate sample may make singular
        self.unmet: list[str] = []  # requirements on dimensions it could not meet (and went on without)
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
        unmet = f"{big} ≥ {small} for {why} (hypothesis {hypothesis}), but {big} = {b} < {small} = {s}"
        if unmet not in self.unmet:
            self.unmet.append(unmet)

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
        entries: dict[str, str] = {}  # issue 41: v -> its kind, from predicates of diag(v)
        self.diag_hyps: dict[str, dict[str, str]] = {}
        for h in self.hyps:
            if h.forall:
                continue
            if isinstance(h.lhs, AppliedPredicate):
                arg = h.lhs.arguments[0] if len(h.lhs.arguments) == 1 else None
                pred = _pred_name(h)
                if type(arg) is Diag and isinstance(arg.args[0], MatrixSymbol) and pred is not None:
                    name = str(arg.args[0].name)  # issue 41: a predicate of diag(v) is one of v's entries
                    if pred in _DIAG_ENTRIES and entries.get(name) != "entries_positive":
                        entries[name] = _DIAG_ENTRIES[pred]
                    self.diag_hyps.setdefault(name, {})[h.name] = pred
                    continue
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
        for name, hyps in self.diag_hyps.items():  # issue 41: diag(v) of a v the plan does not draw
            if name not in self.order:
                for hyp in hyps:
                    self.notes[hyp] = f"{name} is not drawn by a kind, so diag({name}) need not satisfy it"
        middles = self._gram_middles()
        symmetric_by_equation = middles | self._gram_values()
        for name in self.order:
            given = preds.get(name, {})
            kind = self.hints.kinds.get(name) or entries.get(name) or _kind_of(set(given))
            for hyp, pred in self.diag_hyps.get(name, {}).items():  # issue 41: diag(v) by v's entries
                ensures = pred in ("diagonal", "symmetric") or (kind == "entries_positive" and pred in _DIAG_ENTRIES) \
                    or (kind == "entries_nonzero" and pred == "invertible")
                if ensures:
                    self.ensured.add(hyp)
                    self.kind_hyps.setdefault(name, set()).add(hyp)
                else:
                    self.notes[hyp] = f"{name} is drawn as {kind.replace('_', ' ')}, which need not satisfy it"
            if kind == "positive_definite_nonsymmetric" and (name in symmetric_by_equation
                                                              or self.roots.get(name, 1) > 1):
                kind = "positive_definite"  # an equation (XᵀX = VSVᵀ, XᵀX = S) or a root makes it symmetric
            if kind == "diagonal" and name not in self.hints.kinds and name in middles:
                # Λ in XᵀX = VΛVᵀ is an eigenvalue matrix: non-negative (positive where it must be invertible)
                kind = "diagonal_positive" if "invertible" in given else "diagonal_nonnegative"
            self.kinds[name] = kind
            if kind in _MAY_BE_SINGULAR and not {"invertible", "positive_definite"} & set(given):
                self.singular_ok.add(name)
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

    def _gram_values(self) -> set[str]:
        """Symbols S that a Gram equation SᵀS = ... or XᵀX = S equates to a Gram product (symmetric by it)."""
        out = set()
        for h in self.hyps:
            if isinstance(h.lhs, AppliedPredicate) or h.forall:
                continue
            for gram, other in ((h.lhs, h.rhs), (h.rhs, h.lhs)):
                if _gram_symbol(gram) and isinstance(other, MatrixSymbol):
                    out.add(str(other.name))
        return out

    def _gram_middles(self) -> set[str]:
        """Symbols M in the middle of the palindromic side of a Gram equation SᵀS = F M Fᵀ."""
        out = set()
        for h in self.hyps:
            if isinstance(h.lhs, AppliedPredicate) or h.forall:
                continue
            for gram, other in ((h.lhs, h.rhs), (h.rhs, h.lhs)):
                if not _gram_symbol(gram):
                    continue
                _, fs = _factors(other)
                k = len(fs)
                if k % 2 and isinstance(fs[k // 2], MatrixSymbol) and all(
                        _is_transpose_pair(fs[i], fs[k - 1 - i]) for i in range(k // 2)):
                    out.add(str(fs[k // 2].name))
        return out

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
                if lone and not (self.kinds.get(lone[0], "free") != "free" and self.kind_hyps.get(lone[0])):
                    out.add(lone[0])  # a symbol with a kind is drawn by it, not solved for (D = E·1, D > 0)
                elif isinstance(side, BlockMatrix):
                    out.update(x[0] for row in blocks_of(side) for b in row for x in [_lone(b)] if x)
                elif _gram_symbol(side):
                    out.add(_gram_symbol(side)[0])
        return out

    def _pick(self, remaining: list[str], pending: list[_Equation]) -> str:
        """The symbol to draw next: one no equation could solve for, drawn by a kind before a free one; among
        those an equation could solve for, a lone side (X in X = [X₁ X₂]) last, so the equations that
        constrain its parts (X₁ᵀX₂ = 0) are solved first."""
        targets = self._targets(pending)
        lone = {x[0] for eq in pending for side in (eq.lhs, eq.rhs) for x in [_lone(side)] if x}
        for wanted in ((False, False), (True, False), (False, True), (True, True)):
            candidates = [name for name in remaining
                          if ((self.kinds[name] == "free") == wanted[0]) and ((name in targets) == wanted[1])]
            if candidates:
                return next((name for name in candidates if name not in lone), candidates[0])
        return remaining[0]

    def _draw(self, name: str) -> None:
        kind, sym = self.kinds[name], self.shapes[name]
        if kind in _FACTORED_KINDS:
            self.factor_of[name] = kind
        roots, singular = self.roots, name in self.singular_ok
        self._assign([name], lambda ex: ex.draw(sym, kind, roots.get(name, 1), singular and ex.src.degenerate),
                     f"drawing it {kind.replace('_', ' ')}")

    # -- solving one equation --

    def _solve(self, eq: _Equation, pattern: Basic, known: Basic, unknown: list[str]) -> bool:
        lone = _lone(pattern)
        if lone and lone[0] in unknown:
            name, post = lone
            sym = self.shapes[name]
            for hyp in sorted(self.kind_hyps.get(name, ())):  # solved, not drawn by its kind: it may break them
                if hyp in self.ensured:
                    self.ensured.discard(hyp)
                    self.notes[hyp] = f"{name} is solved from hypothesis {eq.name}, which need not satisfy it"
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
        """c · L X R = K for one unknown factor X: X = L⁺ K R⁺ / c (exact pseudo-inverses), or, when K = 0 and
        L or R has a null space, a generic element of it, N_L Z N_Rᵀ for free Z (:func:`_null_basis`), so that
        X₁ᵀX₂ = 0 gives an X₂ as general as the equation allows rather than 0.  Where c is 0 on a sample, X is
        free when K is 0."""
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
        unknown_rows, unknown_cols = fs[index].shape
        homogeneous = len(kfs) == 1 and isinstance(kfs[0], ZeroMatrix)
        if homogeneous and left:  # L X = 0: (I − L⁺L) Z has full column rank when cols(L) − rows(L) ≥ cols(X)
            self.require(left[-1].shape[1], sympy.Add(left[0].shape[0], unknown_cols),
                         f"a full-rank solution {name}", eq.name, strict=False)
        if homogeneous and right:  # X R = 0: Z (I − R R⁺) has full row rank when rows(R) − cols(R) ≥ rows(X)
            self.require(right[0].shape[0], sympy.Add(right[-1].shape[1], unknown_rows),
                         f"a full-rank solution {name}", eq.name, strict=False)
        null_left = homogeneous and bool(left) and self.size(left[0].shape[0]) < self.size(left[-1].shape[1])
        null_right = homogeneous and bool(right) and self.size(right[0].shape[0]) > self.size(right[-1].shape[1])
        sym = self.shapes[name]
        size = (self.size(unknown_rows), self.size(unknown_cols))
        if null_left or null_right:  # the free matrix Z in X = N_L Z N_Rᵀ
            kernel = (self.size(left[-1].shape[1]) - self.size(left[0].shape[0]) if null_left else size[0],
                      self.size(right[0].shape[0]) - self.size(right[-1].shape[1]) if null_right else size[1])

        def run(ex: _Executor) -> None:
            c = ex.scalar(coeff)
            if not c:  # 0 · (…) = K: any value solves it when K = 0, none otherwise
                if ex.src.symbolic or not ex.value(known).is_zero_matrix:
                    raise UndefinedValue(f"hypothesis {eq.name} cannot be solved for {name}: its coefficient "
                                         f"{coeff} is 0 on this sample")
                ex.set(sym, ex.post(free(ex.src, *size), post, eq.name))
                return
            value = ex.product(kfs)
            scale = ex.scalar(kcoeff) / c
            if scale != ex.src.domain.one:
                value = value * scale
            if left:
                value = mul(_solve_left(ex.product(left)), value)
            if right:
                value = mul(value, _solve_right(ex.product(right)))
            if null_left or null_right:  # K = 0: the particular solution is 0
                value = free(ex.src, *kernel)
                if null_left:
                    value = mul(_null_basis(ex.product(left)), value)
                if null_right:
                    value = mul(value, _null_basis(ex.product(right).transpose()).transpose())
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

    def __init__(self, src: Source, planner: _Planner, dim_symbols: dict[Symbol, int],
                 members: Mapping[str, Member] | None = None):
        arith: _Arith = _FunctionArith(src.domain) if src.domain != QQ else _RationalArith()
        self.src, self.planner = src, planner
        self.ctx = _Ctx(arith, {}, dim_symbols, scalars=dict(src.scalars), families=dict(planner.table.families))
        self.members = dict(members or {})  # the plan's symbol name -> the member of a free family it stands for
        self.factors: dict[str, DomainMatrix] = {}

    def value(self, term: Basic) -> DomainMatrix:
        return _eval(term, self.ctx)

    def scalar(self, c: Basic):
        """The value of a coefficient (a number or a scalar expression) on this sample."""
        return _coefficient(sympy.sympify(c), self.ctx)

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
        member = self.members.get(str(sym.name))
        if member is not None:
            self.ctx.members[member] = value

    def gram_factor(self, coeff: Rational, mid: str | None, tail: Sequence[Basic], size: int) -> DomainMatrix:
        K = self.src.domain
        out = self.factors[mid] if mid is not None else DomainMatrix.eye(size, K).to_dense()
        if tail:
            out = _matmul(out, self.product(tail))
        return out if coeff == 1 else out * K.convert_from(QQ(int(coeff.p), int(coeff.q)), QQ)

    def draw(self, sym: MatrixSymbol, kind: str, degree: int, singular: bool = False) -> None:
        """Draw ``sym`` as ``kind``; with ``singular`` (a degenerate sample), a diagonal or symmetric matrix that
        may be singular gets a zero eigenvalue (its last)."""
        src = self.src
        rows, cols = _shape_of(sym, self.ctx.dims)
        name = str(sym.name)
        zero = src.domain.zero

        def degenerate(entries: list) -> list:
            return [*entries[:-1], zero] if singular and entries else entries

        if kind == "orthogonal":
            value = (orthogonal(src, rows) if rows == cols else stiefel(src, rows, cols) if rows > cols
                     else stiefel(src, cols, rows).transpose())
        elif kind in ("entries_nonzero", "entries_positive"):  # issue 41: v with diag(v) invertible / pd
            draw = src.positive if kind == "entries_positive" else src.param
            value = DomainMatrix([[draw() for _ in range(cols)] for _ in range(rows)], (rows, cols),
                                 src.domain).to_dense()
        elif kind == "free" or rows != cols:
            value = free(src, rows, cols)
        elif kind == "diagonal":
            value = _diag(src, degenerate([src.param() for _ in range(rows)]))
        elif kind in _FACTORED_KINDS:
            half = [src.positive() ** max(1, degree // 2) for _ in range(rows)] if degree % 2 == 0 else None
            shift = self.planner.shifts.get(name)
            if shift is not None and degree == 2 and kind != "positive_definite":
                c = self.scalar(shift)  # h = (c/t − t)/2: h² + c = ((c/t + t)/2)² is a square too
                half = [(c / t - t) / 2 for t in (src.positive() for _ in range(rows))] if c else half
            entries = [h * h for h in half] if half else [src.positive() ** degree for _ in range(rows)]
            if kind == "diagonal_nonnegative":
                half, entries = (degenerate(half) if half else None), degenerate(entries)
            if kind in ("diagonal_positive", "diagonal_nonnegative"):
                value = _diag(src, entries)
                if half:
                    self.factors[name] = _diag(src, half)
            else:
                W = _rotation(src, rows)
                value = mul(W, _diag(src, entries), W.transpose())
                if half:
                    self.factors[name] = mul(_diag(src, half), W.transpose())
        elif kind == "positive_definite_nonsymmetric":  # W D Wᵀ + K: xᵀAx = xᵀWDWᵀx > 0, A ≠ Aᵀ
            W = _rotation(src, rows)
            value = mul(W, _diag(src, [src.positive() for _ in range(rows)]), W.transpose()) + _skew(src, rows)
        elif kind == "symmetric":
            W = _rotation(src, rows)
            value = mul(W, _diag(src, degenerate([src.param() for _ in range(rows)])), W.transpose())
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


def _shifted_roots(proof: Proof, hints: Hints) -> dict[str, Basic]:
    """Symbol M -> c for square roots (M + c·I)^(k/2) of a shifted symbol (the ridge factor (Λ + λI)^(-1/2)):
    a diagonal M is then drawn with entries h² such that h² + c is a square too."""
    shifts: dict[str, Basic] = {}
    for term in (*_proof_terms(proof), *hints.values.values()):
        for node in _ordered_atoms(term, MatPow):
            base, q = node.args
            if not (isinstance(base, MatAdd) and isinstance(q, Rational) and q.q == 2 and len(base.args) == 2):
                continue
            sym = [a for a in base.args if isinstance(a, MatrixSymbol)]
            rest = [a for a in base.args if not isinstance(a, MatrixSymbol)]
            if len(sym) != 1 or len(rest) != 1:
                continue
            coeff, fs = _factors(rest[0])
            if len(fs) == 1 and isinstance(fs[0], Identity):
                shifts.setdefault(str(sym[0].name), coeff)
    return shifts


def _start_dims(shape: Mapping[str, int], names: Sequence[str], symbols: Mapping[str, Symbol]) -> dict[str, int]:
    """The shape's value of each dimension and index (the j-th dimension it does not name takes a size from its
    ``other`` value, see :data:`OTHER`, or 2 without one; an index it does not name takes the shape's ``index``
    value)."""
    out = {}
    unnamed = 0
    for name in names:
        if index_kind(symbols.get(name)) == "index":
            out[name] = int(shape.get(name, shape.get(INDEX, DEFAULT_INDEX)))
        elif name in shape or OTHER not in shape:
            out[name] = int(shape.get(name, DEFAULT_DIM))
        else:
            out[name] = 1 + (int(shape[OTHER]) - 1 + unnamed) % 3
            unnamed += 1
    return out


def generic_sampler(proof: Proof, hints: Mapping[Any, Any] | None = None) -> Sampler:
    """A sampler for ``proof`` built from its hypotheses and the theorem's sampling hints (see
    :func:`parse_hints`).  Raises :class:`WitnessError` naming the theorem, the chain and the hypothesis
    when it cannot plan a sample (with the dimensions it tried as ``dims``)."""
    table = _symbols(proof)
    parsed = parse_hints(hints or {}, proof)
    roots = _fractional_roots(proof, parsed)
    shifts = _shifted_roots(proof, parsed)
    # an induction's IH is the claim itself, which holds on every sample: it is checked, never sampled
    chains = {c.name: c for c, induction in chains_of(proof) if induction is None}
    aux_dims = {str(s.name): s for sym in parsed.auxiliary.values()
                for s in (*sympy.sympify(sym.shape[0]).free_symbols, *sympy.sympify(sym.shape[1]).free_symbols)}
    dim_symbols = {**aux_dims, **table.dims}
    dim_names = [n for n in dict.fromkeys([*table.free_dims, *aux_dims])]
    plans: dict[tuple, tuple[_Planner, dict[str, Member]]] = {}

    def plan_for(shape: Mapping[str, int], chain: str) -> tuple[_Planner, dict[str, Member]]:
        dims = _start_dims(shape, dim_names, dim_symbols)
        for name, expr in parsed.dims.items():
            dims[name] = _shape_dim(expr, dims, proof.theorem)
        key = (chain, tuple(sorted(dims.items())))
        if key in plans:
            return plans[key]
        hyps = (*proof.hypotheses, *(chains[chain].hypotheses if chain in chains else ()))
        start = dict(dims)
        for _ in range(4 * len(dims) + 4):
            values = {dim_symbols[n]: v for n, v in dims.items() if n in dim_symbols}
            members = {m: _member_symbol(table.families[m[0]], m[1]) for m in _needed_members(proof, table, values)}
            concrete = [Hypothesis(h.name, _concrete(h.lhs, values, members), _concrete(h.rhs, values, members),
                                   h.forall) for h in hyps]
            planner = _Planner(proof, table, parsed, concrete, dims, roots,
                               {str(sym.name): sym for sym in members.values()})
            planner.shifts = shifts
            try:
                planner.plan()
            except _Replan as grow:
                dims = {**dims, grow.name: grow.value}
                continue
            except _CannotSample as exc:
                which = f"hypothesis {exc.hypothesis}" if exc.hypothesis else "a hypothesis"
                raise WitnessError(f"cannot sample {which}: {exc.reason}", proof.theorem, chain,
                                   hypothesis=exc.hypothesis or None, dims=dims) from None
            plans[key] = planner, {str(sym.name): m for m, sym in members.items()}
            return plans[key]
        grown = ", ".join(f"{name} = {value}" for name, value in dims.items() if start.get(name) != value)
        raise WitnessError(f"cannot sample: the dimensions the hypotheses need do not settle (grown to {grown})",
                           proof.theorem, chain, dims=start)  # the dimensions this attempt started from

    def sampler(src: Source, shape: Mapping[str, int], chain: str) -> Sample:
        planner, members = plan_for(shape, chain)
        ex = _Executor(src, planner, {dim_symbols[n]: v for n, v in planner.dims.items() if n in dim_symbols},
                       members)
        for names, run in planner.actions:
            try:
                run(ex)
            except _CannotSample as exc:
                raise WitnessError(f"cannot sample hypothesis {exc.hypothesis}: {exc.reason}", proof.theorem,
                                   chain, hypothesis=exc.hypothesis, dims=planner.dims) from None
            except DMNonInvertibleMatrixError:
                raise UndefinedValue(f"cannot sample {', '.join(names)}: a matrix it is solved with is singular on "
                                     "this sample", proof.theorem, chain) from None
            except UndefinedValue as exc:
                raise UndefinedValue(f"cannot sample {', '.join(names)}: {exc.reason}", proof.theorem, chain) from None
            except WitnessError as exc:
                raise WitnessError(f"cannot sample {', '.join(names)}: {exc.reason}", proof.theorem, chain,
                                   dims=planner.dims) from None
        values = {name: ex.ctx.env[table.matrices[name]] for name in table.free_matrices}
        values.update({name: ex.ctx.env[planner.shapes[name]] for name in members})
        dims = {name: planner.dims[name] for name in table.free_dims}
        return Sample(dims, values, MappingProxyType(dict(planner.notes)), tuple(planner.unmet))

    return sampler


def sampler_for(proof: Proof) -> Sampler:
    """The generic sampler with the hints registered for ``proof.theorem`` (none if it is not registered)."""
    return generic_sampler(proof, hints_for(proof))
