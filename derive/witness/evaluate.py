"""Exact evaluation of kernel terms: the witness's arithmetic and its evaluator.

Nothing here uses the kernel's judgments (no ``canon``, no rules, no definedness search): a term is a
tree of SymPy matrix-expression nodes, and its value is computed node by node with exact arithmetic.
Values are :class:`~sympy.polys.matrices.DomainMatrix` over ``QQ`` (instances) or over a field of
rational functions (identities); both are exact, and the same evaluator serves both.

Beyond matrix symbols the evaluator knows scalar coefficients (rational functions of scalar symbols and of
``Trace(m)``, a 1×1 matrix read as the scalar it holds), index symbols (natural numbers; a dimension that
an index makes 0 gives an empty matrix) and families of matrices: a free family's members come from the
sample, a member of a family defined by a recurrence is computed from its base by the recurrence.  A value
that does not exist on the sample (a singular inverse, a division by zero) raises :class:`UndefinedValue`,
so the checks can tell a sample at which the statement is undefined from a refutation.
"""

from __future__ import annotations

import contextlib
import contextvars
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sympy
from sympy import QQ, Add, Basic, Integer, Matrix, MatrixBase, Mul, Pow, Rational, Symbol
from sympy.matrices.expressions import (
    BlockMatrix,
    Identity,
    Inverse,
    MatAdd,
    MatMul,
    MatPow,
    MatrixExpr,
    MatrixSymbol,
    Trace,
    Transpose,
    ZeroMatrix,
)
from sympy.polys.matrices import DomainMatrix
from sympy.polys.matrices.exceptions import DMNonInvertibleMatrixError

from ..kernel.proof import Family
from ..kernel.scalars import scalar_kind, size_kind
from ..kernel.terms import Diag, FamilyMatrix, Kron, Ones, Tril, blocks_of, index_kind

__all__ = ["SYMBOLIC_TERM_LIMIT", "SymbolicTooLarge", "UndefinedValue", "WitnessError", "evaluate", "mul",
           "symbolic_term_limit"]


class WitnessError(ValueError):
    """The witness refutes something: a step, a claim, a sample's hypothesis, or cannot evaluate a term.

    ``theorem``, ``chain``, ``step`` (1-based, as the kernel counts) and ``rule`` say where, when known.  A
    failure to sample says "cannot sample" in its reason (``derive prove --witness`` then reports that the
    witness cannot check the proof, not that it refutes it), and may name the ``hypothesis`` it could not
    satisfy and the ``dims`` it tried (dimension name -> value).
    """

    def __init__(self, reason: str, theorem: str | None = None, chain: str | None = None,
                 step: int | None = None, rule: str | None = None, *, hypothesis: str | None = None,
                 dims: Mapping[str, int] | None = None):
        self.reason, self.theorem, self.chain, self.step, self.rule = reason, theorem, chain, step, rule
        self.hypothesis, self.dims = hypothesis, dict(dims) if dims is not None else None
        where = "/".join(x for x in (theorem, chain) if x)
        if step is not None:
            where += f" step {step}"
        if rule is not None:
            where += f" (rule {rule})"
        super().__init__(f"{where}: {reason}" if where else reason)

    @property
    def cannot_sample(self) -> bool:
        """The witness could not produce a sample satisfying the hypotheses (it refutes nothing)."""
        return "cannot sample" in self.reason


class UndefinedValue(WitnessError):
    """A term has no value on this sample: a singular inverse, a division by zero, a root of a negative number.

    Not a refutation by itself: where the statement is undefined at a sample (λ = 0 in (λI)⁻¹), the sample is
    skipped, and a member of a recurrence that is undefined on a sample makes the sample unusable.
    """


class RecurrenceUndefined(UndefinedValue):
    """A member of a family defined by a recurrence is undefined on this sample (a sampling failure)."""


# --- exact arithmetic of a domain ----------------------------------------------------


def _rational_root(c: Any, b: int) -> Any | None:
    """The non-negative b-th root of a non-negative rational, if it is rational."""
    if c == 0:
        return QQ(0)
    if c < 0:
        return None
    num, exact_num = sympy.integer_nthroot(int(c.numerator), b)
    den, exact_den = sympy.integer_nthroot(int(c.denominator), b)
    return QQ(num, den) if exact_num and exact_den else None


class _Arith:
    """Exact scalar questions the evaluator and the hypothesis checks ask of a domain."""

    def __init__(self, domain):
        self.domain = domain

    def root(self, x, b: int):
        """Principal b-th root of a positive element, or None when it is not exact or not provably positive."""
        raise NotImplementedError

    def sign(self, x, rng: random.Random) -> tuple[int, bool]:
        """(sign, proved): sign of x for all parameter values, or at sample points when not provable."""
        raise NotImplementedError


class _RationalArith(_Arith):
    def __init__(self):
        super().__init__(QQ)

    def root(self, x, b: int):
        return _rational_root(x, b)

    def sign(self, x, rng: random.Random) -> tuple[int, bool]:
        return (x > 0) - (x < 0), True


class _FunctionArith(_Arith):
    """Rational functions of parameters; symbols declared positive are positive, the others real."""

    POINTS = 5  # sample points for a sign the syntactic test cannot prove

    def __init__(self, domain):
        super().__init__(domain)
        self.positive_gens = {i for i, s in enumerate(domain.symbols) if s.is_positive}

    def _monomial_root(self, poly, b: int):
        terms = poly.terms()
        if len(terms) != 1:
            return None
        monom, coeff = terms[0]
        c = _rational_root(coeff, b)
        if c is None or any(e % b for e in monom):
            return None
        if any(e and i not in self.positive_gens for i, e in enumerate(monom)):
            return None  # a real (not positive) symbol: the principal root need not be a rational function
        return poly.ring.from_dict({tuple(e // b for e in monom): poly.ring.domain.convert_from(c, QQ)})

    def _poly_root(self, poly, b: int):
        """The b-th root of a perfect b-th power of a polynomial (square-free factors with multiplicities
        divisible by b) that is evidently positive for all parameters, else None."""
        root = self._monomial_root(poly, b)
        if root is not None:
            return root
        coeff, factors = poly.sqf_list()
        c = _rational_root(QQ.convert(coeff) if coeff > 0 else -QQ.convert(coeff), b)
        if c is None or any(mult % b for _, mult in factors) or (coeff < 0 and b % 2 == 0):
            return None
        out = poly.ring.from_dict({(0,) * poly.ring.ngens: poly.ring.domain.convert_from(c, QQ)})
        if coeff < 0:
            out = -out
        for factor, mult in factors:
            out *= factor ** (mult // b)
        sign = self._evident_sign(out)
        if sign is None:
            return None
        return out if sign > 0 or b % 2 else -out

    def root(self, x, b: int):
        if not x:
            return x
        num, den = self._poly_root(x.numer, b), self._poly_root(x.denom, b)
        if num is None or den is None:
            return None
        return x.field(num) / x.field(den)

    def _evident_sign(self, poly) -> int | None:
        """+1/-1 if every term has that sign for all parameters and one term never vanishes."""
        if not poly:
            return 0
        for sgn in (1, -1):
            ok, strict = True, False
            for monom, coeff in poly.terms():
                if sgn * coeff <= 0 or any(e % 2 and i not in self.positive_gens for i, e in enumerate(monom)):
                    ok = False
                    break
                strict = strict or all(e == 0 or i in self.positive_gens for i, e in enumerate(monom))
            if ok and strict:
                return sgn
        return None

    def sign(self, x, rng: random.Random) -> tuple[int, bool]:
        """The sign for generic parameters: a point where the function vanishes (a determinant of a product of
        random factors may, on a variety of measure zero) says nothing about it and is drawn again."""
        num, den = self._evident_sign(x.numer), self._evident_sign(x.denom)
        if num is not None and den is not None:
            return num * den, True
        if not x:
            return 0, True
        signs: set[int] = set()
        gens, points, tries = self.domain.symbols, 0, 0
        while points < self.POINTS and tries < 4 * self.POINTS:
            tries += 1
            point = [_positive_rational(rng) if i in self.positive_gens else _rational(rng) for i in range(len(gens))]
            d = _poly_at(x.denom, point)
            v = _poly_at(x.numer, point) / d if d else QQ(0)
            if v == 0:
                continue
            signs.add((v > 0) - (v < 0))
            points += 1
        return (signs.pop() if len(signs) == 1 else 0), False


def _poly_at(poly, point: Sequence[Any]):
    """Exact value of a polynomial at a rational point."""
    total = QQ.zero
    for monom, coeff in poly.terms():
        term = QQ(int(coeff.numerator), int(coeff.denominator))
        for value, e in zip(point, monom, strict=True):
            term *= value**e
        total += term
    return total


def _rational(rng: random.Random):
    """A small non-zero rational (zero entries would weaken a test)."""
    return QQ(rng.choice((-5, -4, -3, -2, -1, 1, 2, 3, 4, 5)), rng.randint(1, 4))


def _positive_rational(rng: random.Random):
    return QQ(rng.randint(1, 6), rng.randint(1, 4))


# --- exact matrix operations --------------------------------------------------------
# Over QQ, DomainMatrix's own operations are fast.  Over a field of rational functions they cancel a
# gcd after every scalar operation, which makes a 3×3 inverse take many seconds; here a matrix is split
# into (polynomial matrix) / (one polynomial), multiplied or inverted fraction-free, and each result
# entry is cancelled once.  Both routes are exact.


def _is_function_field(domain) -> bool:
    return bool(getattr(domain, "is_FractionField", False))


class SymbolicTooLarge(Exception):
    """A rational-function computation grew past :data:`SYMBOLIC_TERM_LIMIT` polynomial terms (its gcd cancellations
    would take minutes): the identity check then evaluates that chain at random points (Schwartz–Zippel).  Not a
    :class:`WitnessError`: it says nothing about the proof."""


#: The most polynomial terms one fraction-free matrix operation may hold over a field of rational functions before
#: :class:`SymbolicTooLarge` (a count of terms, not seconds: the route taken is the same on any machine and load).
#: Every library theorem's identity checks stay far below it; see docs/kernel.md, "The second witness".
SYMBOLIC_TERM_LIMIT = 4_000
_term_limit: contextvars.ContextVar[int | None] = contextvars.ContextVar("witness_term_limit", default=None)


@contextlib.contextmanager
def symbolic_term_limit(limit: int | None) -> Iterator[None]:
    """Within the block, fraction-free operations over rational functions raise :class:`SymbolicTooLarge` past
    ``limit`` polynomial terms (None: no limit)."""
    token = _term_limit.set(limit)
    try:
        yield
    finally:
        _term_limit.reset(token)


def _meter(*polys_or_matrices) -> None:
    """Count the polynomial terms of a fraction-free operation's operands or result against the limit."""
    limit = _term_limit.get()
    if limit is None:
        return
    size = 0
    for x in polys_or_matrices:
        if isinstance(x, DomainMatrix):
            size += sum(len(e) for row in x.to_list() for e in row)
        else:
            size += len(x)
    if size > limit:
        raise SymbolicTooLarge(f"{size} polynomial terms (limit {limit})")


def _split(a: DomainMatrix) -> tuple[DomainMatrix, Any]:
    """a = N / d with N a matrix of polynomials and d the lcm of the entries' denominators."""
    ring = a.domain.get_ring()
    rows = a.to_list()
    _meter(*(e.denom for row in rows for e in row))  # the lcm below takes gcds of the denominators
    d = ring.one
    for row in rows:
        for e in row:
            if e.denom != d:
                d = d.lcm(e.denom)
    return DomainMatrix([[e.numer * d.exquo(e.denom) for e in row] for row in rows], a.shape, ring), d


def _join(numer: DomainMatrix, d, domain) -> DomainMatrix:
    _meter(numer, d)
    rows = [[domain.field((x, d)) for x in row] for row in numer.to_list()]
    return DomainMatrix(rows, numer.shape, domain)


def _matmul(a: DomainMatrix, b: DomainMatrix) -> DomainMatrix:
    if not _is_function_field(a.domain):
        return a * b
    (na, da), (nb, db) = _split(a), _split(b)
    _meter(na, nb)
    return _join(na * nb, da * db, a.domain)


def mul(*mats: DomainMatrix) -> DomainMatrix:
    """Exact product of conforming matrices (fraction-free over a field of rational functions)."""
    out = mats[0]
    for m in mats[1:]:
        out = _matmul(out, m)
    return out


def _det(a: DomainMatrix):
    if not _is_function_field(a.domain):
        return a.det()
    n, d = _split(a)
    _meter(n, n)
    det, power = n.det(), d ** a.shape[0]
    _meter(det, power)  # before the gcd that cancels them
    return a.domain.field((det, power))


def _adj_det(n: DomainMatrix) -> tuple[DomainMatrix, Any]:
    """(adjugate, determinant) of a square matrix of polynomials.  SymPy's characteristic-polynomial route
    fails on some nilpotent polynomial matrices (the zero matrix among them); cofactors then do it."""
    try:
        return n.adj_det()
    except TypeError:
        ring = n.domain
        adjugate = n.to_Matrix().adjugate()
        rows = [[ring.from_sympy(adjugate[i, j]) for j in range(n.shape[1])] for i in range(n.shape[0])]
        return DomainMatrix(rows, n.shape, ring), n.det()


def _inv(a: DomainMatrix) -> DomainMatrix:
    """Exact inverse; raises DMNonInvertibleMatrixError when singular."""
    if not _is_function_field(a.domain):
        return a.inv()
    n, d = _split(a)
    _meter(n, n)
    adj, det = _adj_det(n)
    if not det:
        raise DMNonInvertibleMatrixError("singular")
    return _join(adj * d, det, a.domain)


# --- the evaluator -------------------------------------------------------------------

#: A member of a family at a concrete index: (family name, index).
Member = tuple[str, int]


@dataclass
class _Ctx:
    """Values of the symbols of one sample, and a cache of evaluated sub-terms.

    ``scalars`` holds the values of scalar symbols (sampled rationals, or generators of the field of rational
    functions); ``members`` the members of free families the sample gives and the members of defined families
    computed so far (shared with contexts made by :meth:`extend`).
    """

    arith: _Arith
    env: dict[MatrixSymbol, DomainMatrix]
    dims: dict[Symbol, int]
    cache: dict[Basic, DomainMatrix] = field(default_factory=dict)
    parent: _Ctx | None = None  # sub-terms free of the symbols bound here are evaluated (and cached) there
    local: frozenset = frozenset()
    scalars: dict[Symbol, Any] = field(default_factory=dict)
    families: dict[str, Family] = field(default_factory=dict)
    members: dict[Member, DomainMatrix] = field(default_factory=dict)

    def extend(self, env: Mapping[MatrixSymbol, DomainMatrix], dims: Mapping[Symbol, int]) -> _Ctx:
        return _Ctx(self.arith, {**self.env, **env}, {**self.dims, **dims}, parent=self,
                    local=frozenset(env) | frozenset(dims), scalars=self.scalars, families=self.families,
                    members=self.members)

    @property
    def root(self) -> _Ctx:
        ctx = self
        while ctx.parent is not None:
            ctx = ctx.parent
        return ctx


def _may_be_empty(expr) -> bool:
    """A dimension may be 0 when it is literally 0 or mentions an index symbol (X_t has t rows; X_0 is empty)."""
    expr = sympy.sympify(expr)
    return expr == 0 or any(index_kind(s) == "index" for s in expr.free_symbols)


def _dim(expr, dims: Mapping[Symbol, int]) -> int:
    value = sympy.sympify(expr).xreplace({s: Integer(v) for s, v in dims.items()})
    if not value.is_Integer:
        raise WitnessError(f"dimension {expr} is not determined by the sample (dims {dict(dims)})")
    if value < 0:
        raise WitnessError(f"dimension {expr} evaluates to {value} < 0")
    if value == 0 and not _may_be_empty(expr):
        raise WitnessError(f"dimension {expr} evaluates to 0, but only an index symbol may make a matrix empty")
    return int(value)


def _index(expr, dims: Mapping[Symbol, int]) -> int:
    """The natural number a family member's index stands for on the sample."""
    value = sympy.sympify(expr).xreplace({s: Integer(v) for s, v in dims.items()})
    if not value.is_Integer or value < 0:
        raise WitnessError(f"the index {expr} is not a natural number on the sample (dims {dict(dims)})")
    return int(value)


def _shape_of(term, dims) -> tuple[int, int]:
    return _dim(term.shape[0], dims), _dim(term.shape[1], dims)


def _equal(a: DomainMatrix, b: DomainMatrix) -> bool:
    return a.shape == b.shape and (a - b).is_zero_matrix


def _entries(a: DomainMatrix) -> list[list[Any]]:
    return a.to_list()


def _is_diagonal(a: DomainMatrix) -> bool:
    rows = _entries(a)
    size = len(rows)
    return a.shape[0] == a.shape[1] and all(not rows[i][j] for i in range(size) for j in range(size) if i != j)


def _inverse(a: DomainMatrix, what) -> DomainMatrix:
    if a.shape[0] != a.shape[1]:
        raise WitnessError(f"inverse of a non-square {a.shape[0]}x{a.shape[1]} matrix {what}")
    try:
        return _inv(a)
    except DMNonInvertibleMatrixError:
        raise UndefinedValue(f"{what} is singular on this sample, so its inverse is undefined") from None


def _power(base: DomainMatrix, q: Rational, ctx: _Ctx, what) -> DomainMatrix:
    size = base.shape[0]
    if base.shape[1] != size:
        raise WitnessError(f"power of a non-square matrix {what}")
    a, b = int(q.p), int(q.q)
    if b == 1:
        if a < 0:
            base, a = _inverse(base, what), -a
        out = DomainMatrix.eye(size, base.domain).to_dense()
        for _ in range(a):
            out = _matmul(out, base)
        return out
    if not _is_diagonal(base):
        raise WitnessError(f"cannot evaluate the non-integer power {q} of the non-diagonal matrix {what} exactly")
    diagonal = []
    for i, x in enumerate(_entries(base)):
        r = ctx.arith.root(x[i], b)
        if r is None:
            raise WitnessError(f"entry {x[i]} of {what} is not positive with an exact {b}-th root (power {q})")
        if a < 0 and not r:
            raise UndefinedValue(f"{what} has a zero diagonal entry; power {q} is undefined")
        diagonal.append(r**a if a >= 0 else base.domain.one / r ** (-a))
    return DomainMatrix.diag(diagonal, base.domain).to_dense()


def _coefficient(c: Basic, ctx: _Ctx):
    """Exact value of a product's coefficient: rational numbers, scalar symbols, Trace of a 1×1 term, +, ×,
    integer powers.  A negative power of zero is a division by zero: :class:`UndefinedValue`."""
    K = ctx.arith.domain
    if isinstance(c, Rational):
        return K.convert_from(QQ(int(c.p), int(c.q)), QQ)
    if type(c) is Symbol and size_kind(c) is not None:  # a dimension or index symbol: the integer it stands for
        if c not in ctx.dims:
            raise WitnessError(f"the sample gives no value for the dimension {c}")
        return K.convert_from(QQ(int(ctx.dims[c])), QQ)
    if type(c) is Symbol:
        if scalar_kind(c) is None:
            raise WitnessError(f"{c} in a coefficient is not a scalar symbol")
        if c not in ctx.scalars:
            raise WitnessError(f"the sample gives no value for the scalar {c}")
        return ctx.scalars[c]
    if isinstance(c, Trace):
        (matrix,) = c.args
        value = _eval(matrix, ctx)
        if value.shape != (1, 1):
            raise WitnessError(f"Trace({matrix}) in a coefficient reads a {value.shape} matrix, not a 1x1 one")
        return _entries(value)[0][0]
    if isinstance(c, Add):
        out = K.zero
        for arg in c.args:
            out += _coefficient(arg, ctx)
        return out
    if isinstance(c, Mul):
        out = K.one
        for arg in c.args:
            out *= _coefficient(arg, ctx)
        return out
    if isinstance(c, Pow):
        base, exponent = c.args
        if not isinstance(exponent, Rational) and exponent.free_symbols and \
                all(type(s) is Symbol and index_kind(s) == "index" for s in exponent.free_symbols):
            exponent = _index_exponent_value(exponent, ctx)  # γ^t (issue 41): t's value on the sample
        if not (isinstance(exponent, Rational) and exponent.q == 1):
            raise WitnessError(f"the power {c} in a coefficient has a non-integer exponent")
        value, e = _coefficient(base, ctx), int(exponent)
        if e < 0:
            if not value:
                raise UndefinedValue(f"the coefficient {c} divides by {base} = 0 on this sample")
            return K.one / value ** (-e)
        return value**e
    raise WitnessError(f"{type(c).__name__} is not allowed in a coefficient")


def _index_exponent_value(exponent: Basic, ctx: _Ctx) -> Integer:
    """The integer an exponent in index symbols (γ^t, γ^{t+1}, γ^{−t}; issue 41) stands for on the sample: each index
    symbol takes its value (an index is a natural number), and the result may be negative."""
    for s in exponent.free_symbols:
        if s not in ctx.dims:
            raise WitnessError(f"the sample gives no value for the index {s} of the exponent {exponent}")
        if int(ctx.dims[s]) < 0:
            raise WitnessError(f"the index {s} is {ctx.dims[s]} on the sample, not a natural number")
    value = exponent.xreplace({s: Integer(int(ctx.dims[s])) for s in exponent.free_symbols})
    if not value.is_Integer:
        raise WitnessError(f"the exponent {exponent} is not an integer on the sample")
    return value


def _member(term: FamilyMatrix, ctx: _Ctx) -> DomainMatrix:
    """F[e]: a free family's member from the sample, a defined family's computed by its recurrence from F[0]."""
    root = ctx.root
    name, e = term.name, _index(term.index, ctx.dims)
    known = root.members.get((name, e))
    if known is not None:
        return known
    family = root.families.get(name)
    if family is None:
        raise WitnessError(f"the family {name} of {term} is not declared")
    if not family.is_defined:
        raise WitnessError(f"the sample gives no value for {name}[{e}]")
    start = max((i + 1 for (n, i) in root.members if n == name and i < e), default=0)
    value = None
    for i in range(start, e + 1):
        definition = family.base if i == 0 else family.step.xreplace({family.index: Integer(i - 1)})
        try:
            value = _eval(definition, root)
        except RecurrenceUndefined:
            raise
        except UndefinedValue as exc:
            raise RecurrenceUndefined(f"{name}[{i}] is undefined on this sample: {exc.reason}") from None
        shape = (family.rows.xreplace({family.index: Integer(i)}), family.cols.xreplace({family.index: Integer(i)}))
        expected = (_dim(shape[0], root.dims), _dim(shape[1], root.dims))
        if value.shape != expected:
            raise WitnessError(f"{name}[{i}] evaluated to shape {value.shape}, but the family says {expected}")
        root.members[(name, i)] = value
    return value


def _eval(term: Basic, ctx: _Ctx) -> DomainMatrix:
    """Value of a kernel term; results are cached per sample (steps share most sub-terms)."""
    hit = ctx.cache.get(term)
    if hit is not None:
        return hit
    if ctx.parent is not None and not (term.atoms(MatrixSymbol, Symbol) & ctx.local):
        return _eval(term, ctx.parent)
    value = _eval_node(term, ctx)
    expected = _shape_of(term, ctx.dims)
    if value.shape != expected:
        raise WitnessError(f"{term} evaluated to shape {value.shape}, but its symbolic shape is {expected}")
    ctx.cache[term] = value
    return value


def _eval_node(term: Basic, ctx: _Ctx) -> DomainMatrix:
    K = ctx.arith.domain
    if isinstance(term, MatrixSymbol):
        if term not in ctx.env:
            raise WitnessError(f"the sample gives no value for {term.name}")
        return ctx.env[term]
    if isinstance(term, FamilyMatrix):
        return _member(term, ctx)
    if isinstance(term, Identity):
        return DomainMatrix.eye(_dim(term.shape[0], ctx.dims), K).to_dense()
    if isinstance(term, ZeroMatrix):
        return DomainMatrix.zeros(_shape_of(term, ctx.dims), K).to_dense()
    if isinstance(term, Ones):  # issue 41: 1ₙ, every entry one
        rows = _dim(term.shape[0], ctx.dims)
        return DomainMatrix([[K.one] for _ in range(rows)], (rows, 1), K).to_dense()
    if isinstance(term, Diag):  # issue 41: diag(v) of a column v
        vector = _eval(term.args[0], ctx)
        if vector.shape[1] != 1:
            raise WitnessError(f"diag takes a column vector, not a {vector.shape[0]}×{vector.shape[1]} matrix")
        rows = vector.shape[0]
        entries = vector.to_dense().to_list()
        grid = [[entries[i][0] if i == j else K.zero for j in range(rows)] for i in range(rows)]
        return DomainMatrix(grid, (rows, rows), K).to_dense()
    if isinstance(term, Kron):  # issue 41: A ⊗ B, block (i, j) is a_ij·B
        first, second = (_eval(f, ctx) for f in term.args)
        (r1, c1), (r2, c2) = first.shape, second.shape
        left, right = first.to_dense().to_list(), second.to_dense().to_list()
        grid = [[left[i // r2][j // c2] * right[i % r2][j % c2] for j in range(c1 * c2)] for i in range(r1 * r2)]
        return DomainMatrix(grid, (r1 * r2, c1 * c2), K).to_dense()
    if isinstance(term, Tril):  # issues 41, 42: the causal mask, entries above (or on, for -1) the diagonal zeroed
        matrix = _eval(term.args[0], ctx)
        rows, cols = matrix.shape
        if rows != cols:
            raise WitnessError(f"tril takes a square matrix, not a {rows}×{cols} one")
        entries, last = matrix.to_dense().to_list(), int(term.args[1])  # keep j ≤ i + offset
        grid = [[entries[i][j] if j <= i + last else K.zero for j in range(rows)] for i in range(rows)]
        return DomainMatrix(grid, (rows, rows), K).to_dense()
    if isinstance(term, Transpose):
        return _eval(term.args[0], ctx).transpose()
    if isinstance(term, Inverse):  # before MatPow: Inverse is a MatPow
        return _inverse(_eval(term.args[0], ctx), term.args[0])
    if isinstance(term, MatPow):
        q = term.args[1]
        if not isinstance(q, Rational):
            raise WitnessError(f"the exponent {q} of {term} is not rational")
        return _power(_eval(term.args[0], ctx), q, ctx, term.args[0])
    if isinstance(term, MatMul):
        scalars, out = [], None
        for arg in term.args:
            if not isinstance(arg, MatrixExpr):
                scalars.append(arg)
                continue
            value = _eval(arg, ctx)
            if out is not None and out.shape[1] != value.shape[0]:
                raise WitnessError(f"shapes {out.shape} and {value.shape} do not conform in {term}")
            out = value if out is None else _matmul(out, value)
        if out is None:
            raise WitnessError(f"the product {term} has no matrix factor")
        coeff = K.one
        for c in scalars:
            coeff *= _coefficient(c, ctx)
        return out if coeff == K.one else out * coeff
    if isinstance(term, MatAdd):
        values = [_eval(arg, ctx) for arg in term.args]
        out = values[0]
        for value in values[1:]:
            if value.shape != out.shape:
                raise WitnessError(f"shapes {out.shape} and {value.shape} differ in the sum {term}")
            out = out + value
        return out
    if isinstance(term, BlockMatrix):
        grid = [[_eval(b, ctx) for b in row] for row in blocks_of(term)]
        for row in grid:
            if any(b.shape[0] != row[0].shape[0] for b in row):
                raise WitnessError(f"blocks in one block row of {term} have different heights")
        for j in range(len(grid[0])):
            if any(row[j].shape[1] != grid[0][j].shape[1] for row in grid):
                raise WitnessError(f"blocks in one block column of {term} have different widths")
        rows = [DomainMatrix.hstack(*row) if len(row) > 1 else row[0] for row in grid]
        return DomainMatrix.vstack(*rows) if len(rows) > 1 else rows[0]
    raise WitnessError(f"{type(term).__name__} is not a kernel term node")


def _to_domain(value, domain, name: str) -> DomainMatrix:
    if isinstance(value, DomainMatrix):
        return value.convert_to(domain).to_dense()
    if isinstance(value, MatrixBase):
        if domain == QQ and not all(sympy.sympify(e).is_Rational for e in value):
            raise WitnessError(f"the value of {name} has non-rational entries")
        rows = [[domain.from_sympy(sympy.sympify(value[i, j])) for j in range(value.cols)] for i in range(value.rows)]
        return DomainMatrix(rows, value.shape, domain)
    raise WitnessError(f"the value of {name} is a {type(value).__name__}, not a matrix")


def evaluate(term: Basic, env: Mapping[MatrixSymbol | FamilyMatrix, Any], dims: Mapping[Symbol, int],
             scalars: Mapping[Symbol, Any] | None = None, families: Sequence[Family] = ()) -> Matrix:
    """Exact value of a kernel term, given rational matrices for its symbols and ints for its dimensions.

    ``env`` may also give members of free families (``x[2]``, at a concrete index); ``scalars`` gives
    rational values of scalar symbols; ``families`` declares the families whose members the term uses (members
    of a family defined by a recurrence are computed by it).  Dimensions that an index symbol makes 0 give
    empty matrices.  Non-integer powers are evaluated for diagonal matrices whose entries have exact rational
    roots only; anything else that is not exact raises :class:`WitnessError`.
    """
    arith = _RationalArith()
    ctx = _Ctx(arith, {}, dict(dims), families={f.name: f for f in families})
    for sym, value in (scalars or {}).items():
        number = sympy.sympify(value)
        if not number.is_Rational:
            raise WitnessError(f"the value of the scalar {sym} is not a rational number")
        if scalar_kind(sym) == "positive" and number <= 0:
            raise WitnessError(f"the scalar {sym} is positive, but its value is {number}")
        ctx.scalars[sym] = QQ(int(number.p), int(number.q))
    for sym, value in env.items():
        label = str(sym) if isinstance(sym, FamilyMatrix) else sym.name
        converted = _to_domain(value, QQ, label)
        if converted.shape != _shape_of(sym, dims):
            raise WitnessError(f"the value of {label} has shape {converted.shape}, not {_shape_of(sym, dims)}")
        if isinstance(sym, FamilyMatrix):
            ctx.members[(sym.name, _index(sym.index, dims))] = converted
        else:
            ctx.env[sym] = converted
    return _eval(term, ctx).to_Matrix()
