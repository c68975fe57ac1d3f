"""Terms of the kernel: SymPy matrix expressions built without SymPy's own rewriting.

Part of the trusted core.  Every term the kernel looks at is a tree of a few SymPy
matrix-expression classes (the *node types* below).  SymPy's constructors sometimes
simplify on their own; the constructors here never do, so what a proof records is what
the kernel checks.  Terms are compared modulo a small, obviously sound normal form
(:func:`canon`): associativity of products and sums, commutativity of sums, and
arithmetic on scalar coefficients (rational functions of scalar symbols, :mod:`.scalars`).
Everything else is a named rule in the kernel.

A product's coefficient may hold a 1×1 matrix read as a scalar, ``Trace(m)``: :func:`mul` puts a
literally 1×1 factor there when it does not conform with a neighbour as a matrix (``s A`` for a 1×1
``s`` and a p×p ``A`` is the scalar multiple s·A); where it conforms (``u s vᵀ``) it stays a factor,
and the rule ``scalar_matrix`` moves it between the two.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence

import sympy
from sympy import Basic, Expr, ImmutableDenseMatrix, Integer, Rational, S
from sympy.core.sorting import default_sort_key
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
from sympy.printing.precedence import PRECEDENCE, precedence
from sympy.printing.str import StrPrinter

from .budget import charge, metered_cache
from .budget import current as current_meter
from .scalars import CoefficientError, canon_coefficient, is_number, is_one_by_one, require_coefficient

__all__ = [
    "Diag",
    "Tril",
    "Kron",
    "FamilyMatrix",
    "Ones",
    "MAX_INDEX",
    "TermError",
    "index_kind",
    "require_index",
    "MATRIX_NODES",
    "MAX_DIMENSION_NODES",
    "MAX_SHAPE_DOUBLING",
    "shape_doubling_edges",
    "shape_doubling",
    "require_shape_doubling",
    "require_exact_types",
    "shown",
    "add",
    "block",
    "blocks_of",
    "canon",
    "canonical",
    "diag",
    "tril",
    "kron",
    "dims_equal",
    "factors_of",
    "inv",
    "is_scalar",
    "mul",
    "ones",
    "power",
    "same",
    "shape",
    "transpose",
    "exponent_form",
]


class TermError(ValueError):
    """A term is malformed: unknown node, non-conforming shapes, or a bad scalar."""


class FamilyMatrix(MatrixExpr):
    """``F[e]``: the member at index ``e`` (a natural number) of the family of matrices named ``F``.

    A family is declared in a proof (:class:`derive.kernel.Family`) with the shape of its members as a
    function of the index (the prefix X_t has t rows); it is either free (any sequence of matrices) or
    defined by a recurrence (a value at 0 and a step from e to e + 1).  Like a matrix symbol it is a leaf
    of the term; the node carries its shape so that SymPy can work with it.
    """

    def __new__(cls, name, index, rows, cols):
        from sympy.core.symbol import Str

        name = Str(name) if isinstance(name, str) else name
        return Basic.__new__(cls, name, sympy.sympify(index), sympy.sympify(rows), sympy.sympify(cols))

    @property
    def name(self) -> str:
        return self.args[0].name

    @property
    def index(self) -> Expr:
        return self.args[1]

    @property
    def shape(self):
        return self.args[2], self.args[3]

    def _sympystr(self, printer):
        return f"{self.name}[{printer._print(self.index)}]"


class Ones(MatrixExpr):
    """``1ₙ``: the n×1 vector of ones (issue 41), a leaf like an identity.  ``1ₙᵀ1ₙ = n`` is the axiom ``ones_inner``;
    1ₙ1ₙᵀ is the n×n matrix of ones (no rule rewrites it)."""

    def __new__(cls, size):
        return Basic.__new__(cls, sympy.sympify(size))

    @property
    def size(self) -> Expr:
        return self.args[0]

    @property
    def shape(self):
        return self.args[0], S.One

    def _sympystr(self, printer):
        return f"ones({printer._print(self.args[0])})"


class Diag(MatrixExpr):
    """``diag(v)``: the k×k diagonal matrix whose diagonal is the column vector v (k×1; issue 41).  Diagonal and
    symmetric; invertible where every entry of v is non-zero (a ``Q.invertible(diag(v))`` hypothesis says so, or
    v = c·1ₖ with c ≠ 0).  Its shape asks v's shape once (no shape doubling)."""

    def __new__(cls, vector):
        return Basic.__new__(cls, vector)

    @property
    def vector(self) -> MatrixExpr:
        return self.args[0]

    @property
    def shape(self):
        rows = self.args[0].shape[0]
        return rows, rows

    def _sympystr(self, printer):
        return f"diag({printer._print(self.args[0])})"


#: The offsets a ``Tril`` may hold, by exact type: 0 (diagonal kept) and -1 (strictly lower).
TRIL_OFFSETS = (type(S.Zero), type(S.NegativeOne))


class Tril(MatrixExpr):
    """``tril(A)``: the lower-triangular part of a square A, the diagonal kept (A ⊙ M for the causal mask M,
    Mᵢⱼ = 1 for j ≤ i); ``tril(A, -1)`` the strictly lower part (Mᵢⱼ = 1 for j < i).  Issues 41 and 42: a causal
    mask of any size.  The offset is the Integer 0 or -1 (NumPy's ``k``); the shape is A's (asked once)."""

    def __new__(cls, matrix, offset=0):
        if type(offset) not in (int, *TRIL_OFFSETS) or offset not in (0, -1):
            raise TermError(f"tril's offset is 0 (diagonal kept) or -1 (strictly lower), not {offset!r}")
        return Basic.__new__(cls, matrix, sympy.Integer(offset))

    @property
    def matrix(self) -> MatrixExpr:
        return self.args[0]

    @property
    def strict(self) -> bool:
        return self.args[1] != 0

    @property
    def shape(self):
        return self.args[0].shape

    def _sympystr(self, printer):
        strict = ", -1" if self.args[1] != 0 else ""
        return f"tril({printer._print(self.args[0])}{strict})"


class Kron(MatrixExpr):
    """``A ⊗ B``: the Kronecker product (issue 41), of shape (rows(A)·rows(B)) × (cols(A)·cols(B)); block (i, j) is
    Aᵢⱼ·B.  Its shape asks each factor's once (no shape doubling)."""

    def __new__(cls, left, right):
        return Basic.__new__(cls, left, right)

    @property
    def shape(self):
        (r1, c1), (r2, c2) = self.args[0].shape, self.args[1].shape
        return r1 * r2, c1 * c2

    def _sympystr(self, printer):
        return f"kron({printer._print(self.args[0])}, {printer._print(self.args[1])})"


#: The only matrix node types a kernel term may contain.
MATRIX_NODES = (MatrixSymbol, FamilyMatrix, Identity, ZeroMatrix, Transpose, Inverse, MatPow, MatMul, MatAdd,
                BlockMatrix, Ones, Diag, Tril, Kron)


#: Exactly these types (no subclasses) may occur: a subclass could redefine equality.
_MATRIX_TYPES = frozenset(MATRIX_NODES)
_NUMBER_TYPES = frozenset({sympy.Rational, sympy.Integer, type(sympy.S.One), type(sympy.S.Zero),
                           type(sympy.S.NegativeOne), type(sympy.S.Half)})
_DIMENSION_TYPES = _NUMBER_TYPES - {sympy.Rational, type(sympy.S.Half)} | {sympy.Symbol, sympy.Add, sympy.Mul}
MAX_DIMENSION_NODES = 24  # nodes of one dimension expression (p + k, n - 1): comparing them stays cheap


MAX_INDEX = 64  # a family's index: at most this plus an index symbol (F[t + 1], F[0], F[3])

#: How often, along any path of a term, SymPy may be made to compute one sub-term's shape twice: the only matrix
#: factor of a product (its rows, then its columns) and the top-left block of a block matrix (the first block row's
#: height, then the first block column's width).  A term's shape costs up to 2 ** this many look-ups, outside the
#: work budget, so a term nested deeper in those places is refused (red team: ``2·(2·(⋯(2·A)))`` or ``[[[[⋯A⋯]]]]``
#: sixty deep, a certificate of 10 KB, kept ``derive check`` busy for hours).  The library needs 2.
MAX_SHAPE_DOUBLING = 8


def shape_doubling_edges(term: Basic) -> list[tuple[Basic, bool]]:
    """The matrix children of a built ``term``, each with whether SymPy asks its shape twice for ``term``'s shape
    (see :data:`MAX_SHAPE_DOUBLING`)."""
    if isinstance(term, MatMul):
        mats = [a for a in term.args if isinstance(a, MatrixExpr)]
        return [(m, len(mats) == 1) for m in mats]
    if isinstance(term, BlockMatrix):
        grid = term.blocks
        return [(grid[i, j], i == j == 0) for i in range(grid.shape[0]) for j in range(grid.shape[1])]
    return [(a, False) for a in term.args if isinstance(a, MatrixExpr)]


def shape_doubling(term: Basic) -> int:
    """The most nodes along one path of ``term`` that make SymPy ask a sub-term's shape twice (the matrices read as
    scalars in its coefficients counted as terms of their own), in one pass over its distinct sub-terms."""
    known: dict = {}  # id -> (value, sub-term): the sub-term is kept, so its id stays its own during the pass
    stack = [(term, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in known:
            continue
        edges = shape_doubling_edges(node)
        traces = [t.args[0] for a in node.args if not isinstance(a, MatrixExpr) and isinstance(a, Basic)
                  for t in _outer_traces(a)] if isinstance(node, MatMul) else []
        if not ready:
            stack.append((node, True))
            stack += [(child, False) for child, _ in edges if id(child) not in known]
            stack += [(inner, False) for inner in traces if id(inner) not in known]
            continue
        value = max((known[id(child)][0] + twice for child, twice in edges), default=0)
        value = max([value] + [known[id(inner)][0] for inner in traces])
        known[id(node)] = (value, node)
    return known[id(term)][0]


def _outer_traces(coefficient: Basic) -> list[Trace]:
    """The traces of a coefficient that no other trace of it holds: the matrix inside one is a term of its own, whose
    traces are its products' (``atoms`` would walk each inner matrix again, for every product it is a coefficient of:
    an instance of A in k products of tr(A)·B walked the instance k times)."""
    out, stack = [], [coefficient]
    while stack:
        node = stack.pop()
        if isinstance(node, Trace):
            out.append(node)
        elif isinstance(node, Basic) and not isinstance(node, MatrixExpr):  # a matrix here is refused later
            stack += node.args
    return out


def require_shape_doubling(term: Basic, what: str) -> None:
    """Raise TermError when ``term`` (built by substituting terms into terms) nests more than
    :data:`MAX_SHAPE_DOUBLING` deep in the places where SymPy computes a shape twice."""
    if shape_doubling(term) > MAX_SHAPE_DOUBLING:
        raise TermError(f"{what} nests products of one matrix factor or top-left blocks more than "
                        f"{MAX_SHAPE_DOUBLING} deep (SymPy's shape of it would take 2**depth steps)")


def index_kind(symbol: Basic) -> str | None:
    """``"dimension"`` (a positive integer), ``"index"`` (a natural number, may be 0) or None."""
    if type(symbol) is not sympy.Symbol:
        return None
    given = getattr(symbol, "_assumptions_orig", None)
    if given == {"integer": True, "positive": True}:
        return "dimension"
    if given == {"integer": True, "nonnegative": True}:
        return "index"
    return None


def require_index(e: Basic) -> None:
    """Raise TermError unless ``e`` is a natural number a family may be indexed by: a number, an index
    symbol, or an index symbol plus a number (at most ``MAX_INDEX``)."""
    kind = type(e)
    if kind in _NUMBER_TYPES and e.q == 1 and 0 <= e <= MAX_INDEX:
        return
    if kind is sympy.Symbol and index_kind(e) == "index":
        return
    if kind is sympy.Add and len(e.args) == 2:
        number, symbol = sorted(e.args, key=lambda a: type(a) is sympy.Symbol)
        if type(number) in _NUMBER_TYPES and number.q == 1 and 0 < number <= MAX_INDEX \
                and index_kind(symbol) == "index":
            return
    raise TermError(f"{e} is not an index (a natural number: 0, 1, ..., t, t + 1, ... for an index symbol t)")


def _require_dimension(dim: Basic) -> None:
    nodes = 0
    for node in sympy.preorder_traversal(dim):
        nodes += 1
        if type(node) not in _DIMENSION_TYPES:
            raise TermError(f"{type(node).__name__} is not allowed in a dimension")
        if nodes > MAX_DIMENSION_NODES:
            raise TermError(f"a dimension expression has more than {MAX_DIMENSION_NODES} nodes")
        if type(node) is sympy.Symbol and (type(node.name) is not str or index_kind(node) is None):
            raise TermError("a dimension symbol needs a plain name and must be made by derive.dim or derive.index")


#: Nodes walked between two charges of a walk that charges a unit a node (:func:`require_exact_types`).
CHARGE_EVERY = 256


def require_exact_types(term: Basic) -> None:
    """Raise TermError unless every node of ``term`` has exactly a kernel type (no subclass, nothing else).

    The walk visits every occurrence of every sub-term (an instance substituted for a symbol the cited claim names k
    times is walked k times) and charges a unit of work for each (:mod:`.budget`)."""
    from sympy.core.symbol import Str

    stack = [term]
    walked = 0
    while stack:
        node = stack.pop()
        walked += 1
        if walked == CHARGE_EVERY:
            charge(walked)
            walked = 0
        kind = type(node)
        if kind not in _MATRIX_TYPES:
            raise TermError(f"{kind.__name__} is not a matrix term the kernel knows")
        if kind is MatrixSymbol:
            if type(node.args[0]) is not Str or type(node.args[0].name) is not str:
                raise TermError("a matrix symbol needs a plain name")
            dims = node.args[1:]
        elif kind is FamilyMatrix:
            if len(node.args) != 4 or type(node.args[0]) is not Str or type(node.args[0].name) is not str:
                raise TermError("a family member needs a plain name, an index and a shape")
            require_index(node.args[1])
            dims = node.args[2:]
        elif kind in (Identity, ZeroMatrix):
            dims = node.args
        elif kind is Ones:
            if len(node.args) != 1:
                raise TermError("a ones vector takes one size")
            dims = node.args
        elif kind is Diag:
            if len(node.args) != 1:
                raise TermError("diag takes one column vector")
            dims = ()
            stack.append(node.args[0])
        elif kind is Tril:
            if len(node.args) != 2 or type(node.args[1]) not in TRIL_OFFSETS:
                raise TermError("tril takes a square matrix and the offset 0 or -1")
            dims = ()
            stack.append(node.args[0])
        elif kind is Kron:
            if len(node.args) != 2:
                raise TermError("a Kronecker product takes two matrices")
            dims = ()
            stack += list(node.args)
        else:
            dims = ()
            if kind is MatPow or kind is Inverse:
                if type(node.args[1]) not in _NUMBER_TYPES:
                    raise TermError("matrix powers must have rational exponents")
                stack.append(node.args[0])
            elif kind is MatMul:
                for arg in node.args:
                    if type(arg) in _MATRIX_TYPES:
                        stack.append(arg)
                    else:
                        _require_coefficient(arg)
            elif kind is BlockMatrix:
                if type(node.args[0]) is not ImmutableDenseMatrix:
                    raise TermError("a block matrix holds an ImmutableDenseMatrix of blocks")
                stack += list(node.args[0])
            else:
                stack += list(node.args)
        for dim in dims:
            _require_dimension(dim)
    if walked:
        charge(walked)


def _require_coefficient(c: Basic) -> None:
    try:
        require_coefficient(c, require_exact_types)
    except CoefficientError as exc:
        raise TermError(str(exc)) from None


def is_scalar(obj: Basic) -> bool:
    """A coefficient of a product: a rational number or a scalar expression (never a matrix)."""
    return isinstance(obj, Expr) and not isinstance(obj, MatrixExpr)


@functools.lru_cache(maxsize=8192)
def dims_equal(a: Expr, b: Expr) -> bool:
    """Two dimension expressions (polynomials in positive-integer symbols) are equal (cached: checks repeat them)."""
    if a == b:
        return True
    return sympy.expand(sympy.sympify(a) - sympy.sympify(b)) == 0


def shape(term: Basic) -> tuple[Expr, Expr]:
    """Shape of a matrix term (rows, cols) as SymPy expressions."""
    if not isinstance(term, MatrixExpr):
        raise TermError(f"expected a matrix term, got {type(term).__name__}")
    return term.shape


# --- constructors that never rewrite ------------------------------------------------


def transpose(a: MatrixExpr) -> MatrixExpr:
    return Transpose(a)


def inv(a: MatrixExpr) -> MatrixExpr:
    return Inverse(a)


def ones(size) -> Ones:
    """The n×1 vector of ones 1ₙ (``size``: a dimension, an index symbol or a natural number)."""
    if isinstance(size, bool) or not isinstance(size, (int, Basic)):
        raise TermError(f"the size of a ones vector must be an int or a dimension, not {type(size).__name__}")
    return Ones(size)


def diag(vector: MatrixExpr) -> Diag:
    """diag(v): the diagonal matrix whose diagonal is the column vector ``vector`` (k×1)."""
    if not isinstance(vector, MatrixExpr):
        raise TermError(f"diag takes a column vector (a matrix term), not {type(vector).__name__}")
    return Diag(vector)


def kron(left: MatrixExpr, right: MatrixExpr) -> Kron:
    """A ⊗ B: the Kronecker product of two matrix terms (block (i, j) is Aᵢⱼ·B)."""
    for side in (left, right):
        if not isinstance(side, MatrixExpr):
            raise TermError(f"kron takes two matrix terms, not {type(side).__name__}")
    return Kron(left, right)


def tril(matrix: MatrixExpr, k: int = 0) -> Tril:
    """tril(A, k): the lower-triangular part of the square matrix ``matrix`` — A ⊙ M for the causal mask M — with
    the diagonal (k = 0) or strictly below it (k = -1), as NumPy's ``tril``."""
    if not isinstance(matrix, MatrixExpr):
        raise TermError(f"tril takes a square matrix (a matrix term), not {type(matrix).__name__}")
    if type(k) is not int or k not in (0, -1):
        raise TermError(f"tril's offset is 0 (diagonal kept) or -1 (strictly lower), not {k!r}")
    return Tril(matrix, k)


def power(a: MatrixExpr, exponent) -> MatrixExpr:
    """``a**exponent`` in the normal form used by the kernel (A^1 = A, A^-1 = Inverse(A))."""
    q = Rational(exponent)
    if q == 0:
        return Identity(shape(a)[0])
    if q == 1:
        return a
    if q == -1:
        return Inverse(a)
    return MatPow(a, q)


def exponent_form(term: MatrixExpr) -> tuple[MatrixExpr, Rational]:
    """Split a factor into (base, rational exponent): A -> (A, 1), A^-1 -> (A, -1)."""
    if isinstance(term, Inverse):
        return term.args[0], Rational(-1)
    if isinstance(term, MatPow):
        return term.args[0], Rational(term.args[1])
    return term, Rational(1)


def factors_of(term: MatrixExpr) -> tuple[Expr, list[MatrixExpr]]:
    """(coefficient, matrix factors) of a canonical term; a non-product is one factor."""
    if isinstance(term, MatMul):
        coeff = S.One
        mats = []
        for arg in term.args:
            if is_scalar(arg):
                coeff *= arg
            else:
                mats.append(arg)
        return coeff, mats
    return S.One, [term]


def _literally_one(dim) -> bool:
    return type(dim) is type(S.One)


def _scalarised(mats: list, coeff: Expr) -> tuple[list, Expr]:
    """Literally 1×1 factors that do not conform with a neighbour as matrices, moved into the coefficient.

    ``s A`` with s 1×1 and A p×p is the scalar multiple tr(s)·A; I₁ and 0₁ₓ₁ there are 1 and 0.  Where a
    1×1 factor conforms (``u s vᵀ``, or a product of 1×1 matrices only) it stays a factor.
    """
    changed = True
    while changed and len(mats) > 1:
        changed = False
        for i, factor in enumerate(mats):
            if not is_one_by_one(factor):
                continue
            left = i == 0 or _literally_one(shape(mats[i - 1])[1])
            right = i == len(mats) - 1 or _literally_one(shape(mats[i + 1])[0])
            if left and right:
                continue
            value = S.One if isinstance(factor, Identity) else S.Zero if isinstance(factor, ZeroMatrix) \
                else Trace(factor)
            coeff *= value
            mats = mats[:i] + mats[i + 1 :]
            changed = True
            break
    return mats, coeff


def mul(*parts) -> MatrixExpr:
    """Product in canonical form: flattened, scalars collected in front as one coefficient in normal form.

    Parts may be matrices, integers, rational numbers and scalar expressions (``derive.scalar`` symbols,
    ``1 / lam``, ``lam + 1``).  A literally 1×1 matrix that does not conform with its neighbours as a
    matrix factor is read as a scalar (see the module docstring).
    """
    coeff: Expr = S.One
    mats: list[MatrixExpr] = []
    stack = list(parts)
    flat: list = []
    while stack:
        item = stack.pop(0)
        if isinstance(item, (list, tuple)):
            stack[0:0] = list(item)
        elif isinstance(item, MatMul):
            stack[0:0] = list(item.args)
        else:
            flat.append(item)
    for item in flat:
        if isinstance(item, bool):
            raise TermError("a product may hold scalars and matrices only, not a bool")
        if isinstance(item, int):
            coeff *= Integer(item)
        elif isinstance(item, MATRIX_NODES):
            mats.append(item)
        elif is_scalar(item):
            coeff *= item
        else:
            raise TermError(f"a product may hold scalars and matrices only, not {type(item).__name__}")
    if not mats:
        raise TermError("a product needs at least one matrix factor")
    charge(len(mats))
    mats, coeff = _scalarised(mats, coeff)
    try:
        if not is_number(coeff):
            require_coefficient(coeff, require_exact_types)
        coeff = canon_coefficient(coeff, canon) if not is_number(coeff) else Rational(coeff)
    except (CoefficientError, sympy.PolynomialError, sympy.polys.polyerrors.PolificationFailed) as exc:
        raise TermError(f"a coefficient that cannot be normalised: {exc}") from None
    if coeff == 0:
        rows, _ = shape(mats[0])
        _, cols = shape(mats[-1])
        return ZeroMatrix(rows, cols)
    if coeff == 1 and len(mats) == 1:
        return mats[0]
    args = ([coeff] if coeff != 1 else []) + mats
    out = MatMul(*args, evaluate=False)
    if tuple(out.args) != tuple(args):  # SymPy rewrote something: refuse rather than guess
        raise TermError("SymPy changed a product while building it")
    return out


def add(*parts) -> MatrixExpr:
    """Sum in canonical form: flattened and sorted (addition is associative and commutative)."""
    terms: list[MatrixExpr] = []
    stack = list(parts)
    while stack:
        item = stack.pop(0)
        if isinstance(item, (list, tuple)):
            stack[0:0] = list(item)
        elif isinstance(item, MatAdd):
            stack[0:0] = list(item.args)
        elif isinstance(item, MATRIX_NODES):
            terms.append(item)
        else:
            raise TermError(f"a sum may hold matrices only, not {type(item).__name__}")
    if not terms:
        raise TermError("a sum needs at least one term")
    charge(len(terms))
    if len(terms) == 1:
        return terms[0]
    terms.sort(key=default_sort_key)
    out = MatAdd(*terms, evaluate=False)
    if tuple(out.args) != tuple(terms):
        raise TermError("SymPy changed a sum while building it")
    return out


def block(rows: Sequence[Sequence[MatrixExpr]]) -> BlockMatrix:
    """Block matrix from a list of block rows (no collapsing of single blocks)."""
    rows = [list(r) for r in rows]
    if not rows or not rows[0] or any(len(r) != len(rows[0]) for r in rows):
        raise TermError("a block matrix needs a non-empty rectangular grid of blocks")
    # evaluate=False: SymPy would otherwise expand a block of explicit size entry by entry (MatrixSymbol("y", 1, 1)
    # into y[0, 0]) and refuse a nested block matrix of symbolic size
    return BlockMatrix(ImmutableDenseMatrix(rows, evaluate=False))


def blocks_of(term: BlockMatrix) -> list[list[MatrixExpr]]:
    grid = term.blocks
    return [[grid[i, j] for j in range(grid.shape[1])] for i in range(grid.shape[0])]


# --- the normal form ----------------------------------------------------------------


def canon(term: Basic) -> MatrixExpr:
    """Normal form modulo associativity, commutativity of +, and scalar arithmetic (one unit of work a node).

    Inside a check the normal forms are remembered for that check only (its terms are the kernel's validated
    copies, of exact types), and a remembered one charges again the units it cost: the count is the same as
    without the memo.
    """
    meter = current_meter()
    memo = meter.memo
    if memo is None:
        return _canon(term)
    hit = memo.get(term)
    if hit is not None:
        charge(hit[1])
        return hit[0]
    before = meter.used
    out = _canon(term)
    memo[term] = (out, meter.used - before)
    return out


def _canon(term: Basic) -> MatrixExpr:
    charge()
    if isinstance(term, (MatrixSymbol, FamilyMatrix, Identity, ZeroMatrix, Ones)):
        return term
    if isinstance(term, Diag):
        return Diag(canon(term.args[0]))
    if isinstance(term, Tril):
        return Tril(canon(term.args[0]), term.args[1])
    if isinstance(term, Kron):
        return Kron(canon(term.args[0]), canon(term.args[1]))
    if isinstance(term, Transpose):
        return Transpose(canon(term.args[0]))
    if isinstance(term, Inverse):  # before MatPow: Inverse subclasses MatPow
        return Inverse(canon(term.args[0]))
    if isinstance(term, MatPow):
        exponent = term.args[1]
        if not isinstance(exponent, Rational):
            raise TermError("matrix powers must have rational exponents")
        return power(canon(term.args[0]), exponent)
    if isinstance(term, MatMul):
        return mul(*[a if is_scalar(a) else canon(a) for a in term.args])  # mul normalises the coefficient
    if isinstance(term, MatAdd):
        return add(*[canon(a) for a in term.args])
    if isinstance(term, BlockMatrix):
        return block([[canon(b) for b in row] for row in blocks_of(term)])
    raise TermError(f"{type(term).__name__} is not a matrix term the kernel knows")


@metered_cache(maxsize=65536)
def canonical(term: Basic) -> MatrixExpr:
    """:func:`canon`, remembered (terms are immutable and hashable): judgments ask it of the same terms often."""
    return canon(term)


def same(a: Basic, b: Basic) -> bool:
    """Equal as kernel terms (equal normal forms)."""
    return canon(a) == canon(b)


def children(term: MatrixExpr) -> list[MatrixExpr]:
    """Matrix sub-terms in a fixed order (scalars and shapes are not children)."""
    if isinstance(term, (Transpose, Inverse, Diag, Tril)):
        return [term.args[0]]
    if isinstance(term, Kron):
        return [term.args[0], term.args[1]]
    if isinstance(term, MatPow):
        return [term.args[0]]
    if isinstance(term, MatMul):
        return factors_of(term)[1]
    if isinstance(term, MatAdd):
        return list(term.args)
    if isinstance(term, BlockMatrix):
        return [b for row in blocks_of(term) for b in row]
    return []


def rebuild(term: MatrixExpr, new_children: list[MatrixExpr]) -> MatrixExpr:
    """``term`` with its children replaced (inverse of :func:`children`)."""
    if isinstance(term, Transpose):
        return Transpose(new_children[0])
    if isinstance(term, Inverse):
        return Inverse(new_children[0])
    if isinstance(term, Diag):
        return Diag(new_children[0])
    if isinstance(term, Tril):
        return Tril(new_children[0], term.args[1])
    if isinstance(term, Kron):
        return Kron(new_children[0], new_children[1])
    if isinstance(term, MatPow):
        return power(new_children[0], term.args[1])
    if isinstance(term, MatMul):
        return mul(factors_of(term)[0], new_children)
    if isinstance(term, MatAdd):
        return add(new_children)
    if isinstance(term, BlockMatrix):
        cols = term.blockshape[1]
        return block([new_children[i : i + cols] for i in range(0, len(new_children), cols)])
    return term


def subterms(term: MatrixExpr) -> Iterable[MatrixExpr]:
    """Every sub-term, the term itself first (pre-order)."""
    yield term
    for child in children(term):
        yield from subterms(child)


# --- terms in messages ----------------------------------------------------------------------

#: The characters of a term a message shows; a longer one is cut (``…``).
MAX_SHOWN = 300
#: A term with at most this many nodes (matrices, and scalars in coefficients; not their sizes), nested at most
#: ``SMALL_DEPTH`` deep, is shown as SymPy prints it (``sstr``); SymPy's printer takes time cubic in the nesting
#: (B + B·C·(⋯) ninety deep, 21 KB of certificate, took half a minute to print), so a larger one is printed here,
#: node by node, in time linear in what is shown.
SMALL_NODES = 40
SMALL_DEPTH = 8


def shown(term, limit: int = MAX_SHOWN, *, exact: bool = True) -> str:
    """``term`` as a message shows it: ``sstr(term)`` for a small term (``exact``), else at most ``limit`` characters
    printed in time linear in them (a hostile term must not make its own refusal costly)."""
    if exact and _small(term):
        text = sympy.sstr(term)
    else:
        text = _Shown(limit + 1).doprint(term)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _small(term) -> bool:
    stack, nodes = [(term, 0)], 0
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if nodes > SMALL_NODES or depth > SMALL_DEPTH:
            return False
        if isinstance(node, (MatrixSymbol, FamilyMatrix, Identity, ZeroMatrix, Ones)) or not isinstance(node, Basic):
            continue
        kids = node.args[0] if isinstance(node, BlockMatrix) else node.args
        stack += [(kid, depth + 1) for kid in kids]
    return True


class _Shown(StrPrinter):
    """SymPy's string printer without its costly parts (products put into SymPy's normal form to find their sign,
    sums sorted) and stopping after ``budget`` nodes (the rest is ``…``)."""

    def __init__(self, budget: int):
        super().__init__()
        self.budget = budget

    def _print(self, expr, **kwargs) -> str:
        self.budget -= 1
        if self.budget < 0:
            return "…"
        return super()._print(expr, **kwargs)

    def parenthesize(self, item, level, strict=False) -> str:
        own = self._precedence(item)
        return f"({self._print(item)})" if own < level or (not strict and own <= level) else self._print(item)

    @staticmethod
    def _precedence(item) -> int:
        if isinstance(item, (MatAdd, sympy.Add)):
            return PRECEDENCE["Add"]
        if isinstance(item, (MatMul, sympy.Mul)):
            first = item.args[0] if item.args else None
            negative = isinstance(first, Rational) and first < 0
            return PRECEDENCE["Add"] if negative else PRECEDENCE["Mul"]
        return precedence(item)

    def _joined(self, parts, level, sep) -> str:
        out = []
        for part in parts:
            if self.budget <= 0:
                out.append("…")
                break
            out.append(self.parenthesize(part, level))
        return sep.join(out)

    def _print_MatMul(self, expr) -> str:
        args, sign = list(expr.args), ""
        if args and isinstance(args[0], Rational) and args[0] < 0:
            sign, args[0] = "-", -args[0]
            if args[0] == 1 and len(args) > 1:
                args = args[1:]
        return sign + self._joined(args, PRECEDENCE["Mul"], "*")

    _print_Mul = _print_MatMul

    def _print_MatAdd(self, expr) -> str:
        out = []
        for term in expr.args:  # as StrPrinter._print_Add does, in the order of the arguments
            if self.budget <= 0:
                out += ["+", "…"]
                break
            text, sign = self._print(term), "+"
            if text.startswith("-") and not isinstance(term, (MatAdd, sympy.Add)):
                text, sign = text[1:], "-"
            nested = self._precedence(term) < PRECEDENCE["Add"] or isinstance(term, (MatAdd, sympy.Add))
            out += [sign, f"({text})" if nested else text]
        sign = out.pop(0) if out else "+"
        return ("" if sign == "+" else sign) + " ".join(out)

    _print_Add = _print_MatAdd
