"""An independent second witness: exact re-evaluation of every proof on concrete values.

Nothing here uses the kernel's judgments (no ``canon``, no rules, no definedness search): the
witness reads the proof's plain data (hypotheses, definitions, chains, steps) and evaluates every
expression with exact rational arithmetic.  A step the kernel accepted but that is false as
mathematics shows up here as two consecutive expressions with different values.

Three checks:

* :func:`check_instances` — random rational instances, for several shapes, that satisfy every
  hypothesis of the chain being checked (verified exactly, so a bad sampler cannot pass silently);
  claim sides and every step must evaluate to the same matrix.
* :func:`check_identity` — the same samplers run with symbolic parameters (a Cayley-transform
  orthogonal matrix of symbols, Λ = diag(s_i²), free symbolic matrices) in concrete dimensions, so each
  chain's claim is checked as an identity of rational functions over ``QQ(params)``.
* :func:`check_gradient` — the gradient formula ∇_β ½‖Y − Xβ‖²_F = Xᵀ(Xβ − Y), which
  :func:`derive.constructions.gd_step_from_zero` takes as given, by SymPy differentiation.

Values are :class:`~sympy.polys.matrices.DomainMatrix` over ``QQ`` (instances) or over a field of
rational functions (identities); both are exact, and the same evaluator and samplers serve both.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import sympy
from sympy import QQ, ZZ, Basic, Integer, Matrix, MatrixBase, Rational, Symbol
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
from sympy.polys.matrices import DomainMatrix
from sympy.polys.matrices.exceptions import DMNonInvertibleMatrixError

from ..kernel import Chain, Hypothesis, Proof, Step
from ..kernel.terms import blocks_of

__all__ = [
    "SAMPLERS",
    "SHAPES",
    "GradientReport",
    "IdentityReport",
    "InstanceReport",
    "QUICK_IDENTITY_DIMS",
    "Sample",
    "Sampler",
    "Source",
    "WitnessError",
    "cayley",
    "check_gradient",
    "check_identity",
    "check_instances",
    "evaluate",
    "free",
    "identity_shape",
    "mul",
    "orthogonal",
    "stiefel",
    "witness_all",
]


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

    def extend(self, env: Mapping[MatrixSymbol, DomainMatrix], dims: Mapping[Symbol, int]) -> _Ctx:
        return _Ctx(self.arith, {**self.env, **env}, {**self.dims, **dims})


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


# --- samples: where values come from -------------------------------------------------


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
    """A sampler's output: dimension values and matrix values, by the names the proof uses."""

    dims: dict[str, int]
    values: dict[str, DomainMatrix]


#: A sampler: (source, shape, chain name) -> values satisfying the hypotheses of that chain.
Sampler = Callable[[Source, Mapping[str, int], str], Sample]


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


def _spectral(src: Source, n: int, p: int) -> tuple[DomainMatrix, DomainMatrix, DomainMatrix, list]:
    """X = U Λ^{1/2} Vᵀ with UᵀU = I, so XᵀX = V Λ Vᵀ exactly; Λ = diag(r_i²) has rational roots."""
    V = orthogonal(src, p)
    roots = [src.positive() for _ in range(p)]
    U = stiefel(src, n, p)
    X = mul(U, _diag(src, roots), V.transpose())
    return X, V, _diag(src, [r * r for r in roots]), roots


def _pick(shape: Mapping[str, int], *names: str) -> dict[str, int]:
    return {name: int(shape[name]) for name in names}


def _sample_ols(src: Source, shape: Mapping[str, int], chain: str) -> Sample:
    dims = _pick(shape, "n", "p", "k", "m")
    X, V, Lam, _ = _spectral(src, dims["n"], dims["p"])
    Y, X_q = free(src, dims["n"], dims["k"]), free(src, dims["m"], dims["p"])
    return Sample(dims, {"X": X, "V": V, "Lambda": Lam, "Y": Y, "X_q": X_q})


def _sample_paper(src: Source, shape: Mapping[str, int], chain: str) -> Sample:
    dims = _pick(shape, "n", "p", "k")
    X, V, Lam, _ = _spectral(src, dims["n"], dims["p"])
    return Sample(dims, {"X": X, "V": V, "Lambda": Lam, "Y": free(src, dims["n"], dims["k"])})


def _sample_gauge(src: Source, shape: Mapping[str, int], chain: str) -> Sample:
    """X = U S Vᵀ is at once an SVD and (Q = U, R = S Vᵀ) a QR factorisation; with W orthogonal,
    G = V S⁻¹ W factors the precision (G Gᵀ = V S⁻² Vᵀ) and C = V S W the Gram matrix (C Cᵀ = XᵀX)."""
    dims = _pick(shape, "n", "p", "k", "m", "d")
    n, p, d = dims["n"], dims["p"], dims["d"]
    U, V, W = stiefel(src, n, p), orthogonal(src, p), orthogonal(src, p)
    s = [src.positive() for _ in range(p)]
    S, S_inv = _diag(src, s), _diag(src, [src.domain.one / x for x in s])
    X, R = mul(U, S, V.transpose()), mul(S, V.transpose())
    values = {"X": X, "U": U, "S": S, "V": V, "Q": U, "R": R, "G": mul(V, S_inv, W), "C": mul(V, S, W),
              "Y": free(src, n, dims["k"]), "X_q": free(src, dims["m"], p), "W_Q": free(src, p, d),
              "W_K": free(src, p, d)}
    return Sample(dims, values)


def _sample_gd(src: Source, shape: Mapping[str, int], chain: str) -> Sample:
    """Γ = W_Q W_Kᵀ; for the OLS lemmas W_Q = W_K = V Λ^{-1/2} (d = p), so Γ = (XᵀX)⁻¹."""
    dims = _pick(shape, "n", "p", "k", "m", "d")
    n, p = dims["n"], dims["p"]
    if chain in ("ols_if", "ols_only_if"):
        dims["d"] = p
        X, V, _, roots = _spectral(src, n, p)
        W_Q = W_K = mul(V, _diag(src, [src.domain.one / r for r in roots]))
    else:
        X, W_Q, W_K = free(src, n, p), free(src, p, dims["d"]), free(src, p, dims["d"])
    values = {"X": X, "W_Q": W_Q, "W_K": W_K, "Gamma": mul(W_Q, W_K.transpose()),
              "Y": free(src, n, dims["k"]), "X_q": free(src, dims["m"], p)}
    return Sample(dims, values)


def _sample_memory(src: Source, shape: Mapping[str, int], chain: str) -> Sample:
    """The spectral sample, with X_prev, x_t, Y_prev, y_t read off the rows of X and Y."""
    sample = _sample_ols(src, shape, chain)
    X, Y, n = sample.values["X"], sample.values["Y"], sample.dims["n"]
    rows = {"X_prev": X[: n - 1, :], "x_t": X[n - 1 :, :].transpose(),
            "Y_prev": Y[: n - 1, :], "y_t": Y[n - 1 :, :].transpose()}
    return Sample(sample.dims, {**sample.values, **rows})


def _sample_pseudo_inverse(src: Source, shape: Mapping[str, int], chain: str) -> Sample:
    """Rank r: X = U_r Λ_r^{1/2} V_rᵀ with orthonormal columns in U_r (n×r) and V_r (p×r)."""
    dims = _pick(shape, "n", "p", "k", "r")
    n, p, r = dims["n"], dims["p"], dims["r"]
    if not r <= min(n, p):
        raise WitnessError(f"rank r = {r} exceeds min(n, p) = {min(n, p)}")
    U, V = stiefel(src, n, r), stiefel(src, p, r)
    roots = [src.positive() for _ in range(r)]
    X = mul(U, _diag(src, roots), V.transpose())
    values = {"X": X, "U_r": U, "V_r": V, "Lambda_r": _diag(src, [x * x for x in roots]), "Y": free(src, n, dims["k"])}
    return Sample(dims, values)


#: Theorem id -> sampler (read-only).  Each sampler satisfies every hypothesis of every chain of its theorem.
SAMPLERS: Mapping[str, Sampler] = MappingProxyType({
    "ols_is_linear_attention": _sample_ols,
    "paper_construction": _sample_paper,
    "icl_token_form": _sample_ols,
    "gauge_invariance": _sample_gauge,
    "preconditioned_gd": _sample_gd,
    "slow_fast_memory": _sample_memory,
    "pseudo_inverse": _sample_pseudo_inverse,
})

#: Shapes the instance check runs (every sampler picks the dimensions its theorem uses).
SHAPES: tuple[Mapping[str, int], ...] = tuple(MappingProxyType(shape) for shape in (
    {"n": 3, "p": 1, "k": 1, "m": 1, "d": 1, "r": 1},
    {"n": 4, "p": 2, "k": 1, "m": 3, "d": 3, "r": 1},
    {"n": 5, "p": 3, "k": 2, "m": 2, "d": 2, "r": 2},
    {"n": 6, "p": 3, "k": 1, "m": 2, "d": 4, "r": 3},
))


# --- binding a sample to a proof -----------------------------------------------------


def _proof_terms(proof: Proof) -> Iterable[Basic]:
    for h in proof.hypotheses:
        yield from (h.lhs, h.rhs, *h.forall)
    for d in proof.definitions:
        yield from (d.symbol, d.rhs)
    for c in (*proof.lemmas, proof.claim):
        yield from (c.lhs, c.rhs)
        for h in c.hypotheses:
            yield from (h.lhs, h.rhs, *h.forall)
        for s in c.steps:
            yield s.expr
            for var, val in s.instance:
                yield from (var, val)


@dataclass(frozen=True)
class _Symbols:
    matrices: dict[str, MatrixSymbol]
    dims: dict[str, Symbol]
    bound: frozenset[str]
    defined: frozenset[str]


def _symbols(proof: Proof) -> _Symbols:
    matrices: dict[str, MatrixSymbol] = {}
    dims: dict[str, Symbol] = {}
    for term in _proof_terms(proof):
        for node in term.atoms(MatrixSymbol, Symbol):
            table = matrices if isinstance(node, MatrixSymbol) else dims
            if table.setdefault(str(node.name), node) != node:
                raise WitnessError(f"the name {node.name} is used for two different symbols", proof.theorem)
    hyps = [*proof.hypotheses, *(h for c in (*proof.lemmas, proof.claim) for h in c.hypotheses)]
    bound = frozenset(str(v.name) for h in hyps for v in h.forall)
    defined = frozenset(str(d.symbol.name) for d in proof.definitions)
    return _Symbols(matrices, dims, bound, defined)


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
                      tally: _Tally) -> None:
    """Every hypothesis holds on the sample; a sample that violates one is a sampler bug, never skipped."""
    for h in hyps:
        try:
            why = _hypothesis_holds(h, ctx, rng, tally)
        except WitnessError as exc:
            why = exc.reason
        if why is not None:
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
    _check_hypotheses(proof, chain, [h for h in hyps if not _mentions(h, table.defined)], ctx, rng, tally)
    _define(proof, ctx, chain)
    _check_hypotheses(proof, chain, [h for h in hyps if _mentions(h, table.defined)], ctx, rng, tally)
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
        if step.instance:
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
    if sampler is not None:
        return sampler
    if proof.theorem not in SAMPLERS:
        raise WitnessError("no sampler for this theorem", proof.theorem)
    return SAMPLERS[proof.theorem]


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
        from ..library import build  # the library depends on derive, so import it late

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
        key = _fingerprint(sampler(_random_source(random.Random(seed), kinds), shape, chain.name), kinds)
        ctx = groups.get(key)
        if ctx is None:
            src = _symbol_source(kinds)
            ctx = _sampled_context(proof, table, sampler(src, shape, chain.name), _FunctionArith(src.domain),
                                   chain.name, proof.hypotheses, rng, tally)
            groups[key] = ctx
            parameters = max(parameters, len(kinds))
        _check_hypotheses(proof, chain.name, chain.hypotheses, ctx, rng, tally)
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
