"""Exact evaluation of kernel terms: the witness's arithmetic and its evaluator.

Nothing here uses the kernel's judgments (no ``canon``, no rules, no definedness search): a term is a
tree of SymPy matrix-expression nodes, and its value is computed node by node with exact arithmetic.
Values are :class:`~sympy.polys.matrices.DomainMatrix` over ``QQ`` (instances) or over a field of
rational functions (identities); both are exact, and the same evaluator serves both.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sympy
from sympy import QQ, Basic, Integer, Matrix, MatrixBase, Rational, Symbol
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
from sympy.polys.matrices import DomainMatrix
from sympy.polys.matrices.exceptions import DMNonInvertibleMatrixError

from ..kernel.terms import blocks_of

__all__ = ["WitnessError", "evaluate", "mul"]


class WitnessError(ValueError):
    """The witness refutes something: a step, a claim, a sample's hypothesis, or cannot evaluate a term.

    ``theorem``, ``chain``, ``step`` (1-based, as the kernel counts) and ``rule`` say where, when known.
    """

    def __init__(self, reason: str, theorem: str | None = None, chain: str | None = None,
                 step: int | None = None, rule: str | None = None):
        self.reason, self.theorem, self.chain, self.step, self.rule = reason, theorem, chain, step, rule
        where = "/".join(x for x in (theorem, chain) if x)
        if step is not None:
            where += f" step {step}"
        if rule is not None:
            where += f" (rule {rule})"
        super().__init__(f"{where}: {reason}" if where else reason)


# --- exact arithmetic of a domain ----------------------------------------------------


def _rational_root(c: Any, b: int) -> Any | None:
    """The positive b-th root of a positive rational, if it is rational."""
    if c <= 0:
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

    def root(self, x, b: int):
        num, den = self._monomial_root(x.numer, b), self._monomial_root(x.denom, b)
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
        num, den = self._evident_sign(x.numer), self._evident_sign(x.denom)
        if num is not None and den is not None:
            return num * den, True
        signs: set[int] = set()
        gens, points, tries = self.domain.symbols, 0, 0
        while points < self.POINTS and tries < 4 * self.POINTS:
            tries += 1
            point = [_positive_rational(rng) if i in self.positive_gens else _rational(rng) for i in range(len(gens))]
            d = _poly_at(x.denom, point)
            if d == 0:
                continue
            v = _poly_at(x.numer, point) / d
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


def _split(a: DomainMatrix) -> tuple[DomainMatrix, Any]:
    """a = N / d with N a matrix of polynomials and d the lcm of the entries' denominators."""
    ring = a.domain.get_ring()
    rows = a.to_list()
    d = ring.one
    for row in rows:
        for e in row:
            if e.denom != d:
                d = d.lcm(e.denom)
    return DomainMatrix([[e.numer * d.exquo(e.denom) for e in row] for row in rows], a.shape, ring), d


def _join(numer: DomainMatrix, d, domain) -> DomainMatrix:
    rows = [[domain.field((x, d)) for x in row] for row in numer.to_list()]
    return DomainMatrix(rows, numer.shape, domain)


def _matmul(a: DomainMatrix, b: DomainMatrix) -> DomainMatrix:
    if not _is_function_field(a.domain):
        return a * b
    (na, da), (nb, db) = _split(a), _split(b)
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
    return a.domain.field((n.det(), d ** a.shape[0]))


def _inv(a: DomainMatrix) -> DomainMatrix:
    """Exact inverse; raises DMNonInvertibleMatrixError when singular."""
    if not _is_function_field(a.domain):
        return a.inv()
    n, d = _split(a)
    adj, det = n.adj_det()
    if not det:
        raise DMNonInvertibleMatrixError("singular")
    return _join(adj * d, det, a.domain)


# --- the evaluator -------------------------------------------------------------------


@dataclass
class _Ctx:
    """Values of the symbols of one sample, and a cache of evaluated sub-terms."""

    arith: _Arith
    env: dict[MatrixSymbol, DomainMatrix]
    dims: dict[Symbol, int]
    cache: dict[Basic, DomainMatrix] = field(default_factory=dict)
    parent: _Ctx | None = None  # sub-terms free of the symbols bound here are evaluated (and cached) there
    local: frozenset = frozenset()

    def extend(self, env: Mapping[MatrixSymbol, DomainMatrix], dims: Mapping[Symbol, int]) -> _Ctx:
        return _Ctx(self.arith, {**self.env, **env}, {**self.dims, **dims}, parent=self,
                    local=frozenset(env) | frozenset(dims))


def _dim(expr, dims: Mapping[Symbol, int]) -> int:
    value = sympy.sympify(expr).xreplace({s: Integer(v) for s, v in dims.items()})
    if not value.is_Integer:
        raise WitnessError(f"dimension {expr} is not determined by the sample (dims {dict(dims)})")
    if value < 1:
        raise WitnessError(f"dimension {expr} evaluates to {value} < 1")
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
        raise WitnessError(f"{what} is singular on this sample, so its inverse is undefined") from None


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
            raise WitnessError(f"{what} has a zero diagonal entry; power {q} is undefined")
        diagonal.append(r**a if a >= 0 else base.domain.one / r ** (-a))
    return DomainMatrix.diag(diagonal, base.domain).to_dense()


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
    if isinstance(term, Identity):
        return DomainMatrix.eye(_dim(term.shape[0], ctx.dims), K).to_dense()
    if isinstance(term, ZeroMatrix):
        return DomainMatrix.zeros(_shape_of(term, ctx.dims), K).to_dense()
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
        coeff, out = Rational(1), None
        for arg in term.args:
            if isinstance(arg, Rational):
                coeff *= arg
                continue
            value = _eval(arg, ctx)
            if out is not None and out.shape[1] != value.shape[0]:
                raise WitnessError(f"shapes {out.shape} and {value.shape} do not conform in {term}")
            out = value if out is None else _matmul(out, value)
        if out is None:
            raise WitnessError(f"the product {term} has no matrix factor")
        return out if coeff == 1 else out * K.convert_from(QQ(int(coeff.p), int(coeff.q)), QQ)
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


def evaluate(term: Basic, env: Mapping[MatrixSymbol, Any], dims: Mapping[Symbol, int]) -> Matrix:
    """Exact value of a kernel term, given rational matrices for its symbols and ints for its dimensions.

    Non-integer powers are evaluated for diagonal matrices whose entries have exact rational roots only;
    anything else that is not exact raises :class:`WitnessError`.
    """
    arith = _RationalArith()
    values = {}
    for sym, value in env.items():
        values[sym] = _to_domain(value, QQ, sym.name)
        if values[sym].shape != _shape_of(sym, dims):
            raise WitnessError(f"the value of {sym.name} has shape {values[sym].shape}, not {_shape_of(sym, dims)}")
    return _eval(term, _Ctx(arith, values, dict(dims))).to_Matrix()


