"""Read SymPy ``srepr`` text without ``eval``, ``exec`` or ``sympify``.

Certificates carry expressions as ``srepr`` strings.  This parser accepts only the
constructors kernel terms are made of, bounds the nesting depth and the number of nodes
before building anything, and insists that the text is exactly what ``srepr`` prints for
the object it built, so SymPy cannot have silently rewritten what the certificate says.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from sympy import Add, Basic, ImmutableDenseMatrix, Integer, Mul, Pow, Rational, S, Symbol, preorder_traversal, srepr
from sympy.core.symbol import Str
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

from ..kernel import PREDICATES, SCALAR_PREDICATES
from ..kernel.scalars import MAX_COEFFICIENT_NODES, MAX_EXPONENT, CoefficientError, index_power, require_coefficient
from ..kernel.terms import (
    MAX_DIMENSION_NODES,
    MAX_SHAPE_DOUBLING,
    Diag,
    FamilyMatrix,
    Kron,
    Ones,
    Tril,
    shape_doubling_edges,
)
from ..kernel.validation import IDENTIFIER

__all__ = ["OutOfTime", "ParseError", "parse_srepr", "MAX_DEPTH", "MAX_NODES", "MAX_CHARS", "MAX_DIGITS",
           "MAX_EXPLICIT_DIM", "MAX_DIM_NODES"]

MAX_DEPTH = 200  # kernel terms nest a few dozen levels deep
MAX_NODES = 50_000
MAX_CHARS = 2_000_000
MAX_DIGITS = 20  # integers and the parts of rationals: exact arithmetic on them stays cheap
MAX_EXPLICIT_DIM = 1_000_000  # an explicit (integer) dimension of a matrix symbol, identity or zero
MAX_DIM_NODES = MAX_DIMENSION_NODES  # the kernel's own bound on a dimension expression (p + k, n - 1)
_NAME = IDENTIFIER  # the kernel's own rule for names: what it accepts in-process, a certificate must carry
_ASSUMPTIONS = {"integer", "positive", "nonnegative", "real", "commutative", "finite"}
# One regular expression finds every token at once (C speed); anything else is a "bad" token.
_TOKENS = re.compile(r"(-?\d{1,20})|('[^'\\]{0,200}')|([A-Za-z_][A-Za-z0-9_.]{0,80})|([()\[\],=])|(\S)")
_TICK_EVERY = 4096  # tokens or nodes between two looks at the clock


class ParseError(ValueError):
    """The text is not a kernel term in ``srepr`` form; the message says why."""


class OutOfTime(ParseError):
    """Parsing ran past the deadline it was given."""


@dataclass
class _Call:
    name: str
    args: list
    kwargs: dict


def _tick(deadline: float | None) -> None:
    if deadline is not None and time.process_time() > deadline:  # CPU seconds: the load of others does not count
        raise OutOfTime("parsing ran past the time budget")


def _tokens(text: str, deadline: float | None = None) -> list[tuple[str, str]]:
    """(kind, text) of every token: kinds num, str, name, p (punctuation)."""
    found = _TOKENS.findall(text)
    if len(found) > 4 * MAX_NODES:
        raise ParseError(f"expression has more than {MAX_NODES} nodes")
    _tick(deadline)
    out = []
    for number, string, name, punctuation, bad in found:
        if bad:
            raise ParseError(f"unexpected character {bad!r}")
        out.append(("num", number) if number else ("str", string) if string else ("name", name) if name
                   else ("p", punctuation))
    return out


class _Reader:
    """Recursive descent over tokens into plain calls, lists and atoms (nothing built yet)."""

    def __init__(self, tokens, deadline: float | None = None):
        self.tokens, self.pos, self.nodes, self.deadline = tokens, 0, 0, deadline
        self.count = len(tokens)

    def peek(self):
        return self.tokens[self.pos] if self.pos < self.count else (None, None)

    def take(self, value=None):
        if self.pos >= self.count:
            raise ParseError("unexpected end of expression")
        kind, tok = self.tokens[self.pos]
        if value is not None and tok != value:
            raise ParseError(f"expected {value!r}, found {tok!r}")
        self.pos += 1
        return kind, tok

    def value(self, depth: int):
        if depth > MAX_DEPTH:
            raise ParseError(f"expression nested deeper than {MAX_DEPTH} levels")
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ParseError(f"expression has more than {MAX_NODES} nodes")
        if not self.nodes % _TICK_EVERY:
            _tick(self.deadline)
        kind, tok = self.take()
        if kind == "num":
            return int(tok)
        if kind == "str":
            return tok[1:-1]
        if tok == "[":
            items = []
            if self.peek()[1] != "]":
                items.append(self.value(depth + 1))
                while self.peek()[1] == ",":
                    self.pos += 1
                    items.append(self.value(depth + 1))
            self.take("]")
            return items
        if kind != "name":
            raise ParseError(f"unexpected {tok!r}")
        if self.peek()[1] != "(":
            return _Call(tok, [], {}) if tok in ("true", "True", "False") or tok.startswith("Q.") else _bare(tok)
        self.pos += 1
        args, kwargs = [], {}
        tokens = self.tokens
        while self.peek()[1] != ")":
            if self.peek()[0] == "name" and self.pos + 1 < self.count and tokens[self.pos + 1][1] == "=":
                key = tokens[self.pos][1]
                self.pos += 2
                kwargs[key] = self.value(depth + 1)
            else:
                args.append(self.value(depth + 1))
            following = self.peek()[1]
            if following == ",":
                self.pos += 1
            elif following != ")":
                raise ParseError(f"expected ',' or ')', found {following!r}")
        self.pos += 1
        return _Call(tok, args, kwargs)


def _bare(name: str):
    raise ParseError(f"unknown name {name!r}")


def _dim(obj, what: str):
    if not isinstance(obj, Basic) or isinstance(obj, MatrixExpr) or not obj.is_integer:
        raise ParseError(f"{what} must be an integer dimension")
    if isinstance(obj, Integer) and abs(int(obj)) > MAX_EXPLICIT_DIM:
        raise ParseError(f"{what}: explicit dimension {obj} exceeds {MAX_EXPLICIT_DIM}")
    if sum(1 for _ in preorder_traversal(obj)) > MAX_DIM_NODES:
        raise ParseError(f"{what}: dimension expression has more than {MAX_DIM_NODES} nodes")
    return obj


def _matrix(obj, what: str):
    if not isinstance(obj, MatrixExpr):
        raise ParseError(f"{what} must be a matrix expression")
    return obj


def _arity(call: _Call, count: int) -> list:
    if call.kwargs or len(call.args) != count:
        raise ParseError(f"{call.name} takes {count} argument(s)")
    return call.args


def _build(node, depth: int = 0, doubled: dict | None = None):
    """Build SymPy objects from the whitelisted constructors only.

    ``doubled`` maps the id of each matrix built so far to (how often SymPy would ask one of its sub-terms' shape
    twice along a path, the matrix): a matrix over the kernel's bound is refused as soon as it is built, before any
    constructor above it asks its shape (``kernel.terms.MAX_SHAPE_DOUBLING``)."""
    doubled = {} if doubled is None else doubled
    if isinstance(node, list):
        return [_build(item, depth + 1, doubled) for item in node]
    if isinstance(node, (int, str)):
        return node
    name = node.name
    if name in ("true", "True"):
        return S.true
    if name == "False":
        raise ParseError("False is not a value a certificate may hold")
    if name.startswith("Q."):
        known = {**PREDICATES, **SCALAR_PREDICATES}  # issue 41: Q.nonzero(c), a scalar fact
        if name[2:] not in known:
            raise ParseError(f"unknown predicate {name}")
        return known[name[2:]]
    builder = _BUILDERS.get(name)
    if builder is None:
        raise ParseError(f"constructor {name!r} is not allowed in a certificate")
    args = [_build(a, depth + 1, doubled) for a in node.args]
    kwargs = {k: _build(v, depth + 1, doubled) for k, v in node.kwargs.items()}
    built = builder(_Call(name, args, kwargs))
    if isinstance(built, MatrixExpr):
        count = max((doubled.get(id(child), (0,))[0] + twice for child, twice in shape_doubling_edges(built)),
                    default=0)
        if count > MAX_SHAPE_DOUBLING:
            raise ParseError(f"a term nests products of one matrix factor or top-left blocks more than "
                             f"{MAX_SHAPE_DOUBLING} deep")
        doubled[id(built)] = (count, built)  # the matrix is kept, so its id is not reused during the parse
    return built


def _str(c):
    (text,) = _arity(c, 1)
    if not isinstance(text, str) or not _NAME.fullmatch(text):
        raise ParseError("Str must hold a plain name (an ASCII identifier of at most 100 characters)")
    return Str(text)


def _symbol(c):
    if len(c.args) != 1 or not isinstance(c.args[0], str) or not _NAME.fullmatch(c.args[0]):
        raise ParseError("Symbol takes one plain name (an ASCII identifier of at most 100 characters)")
    for key, value in c.kwargs.items():
        if key not in _ASSUMPTIONS or value is not S.true:
            raise ParseError(f"Symbol assumption {key}={value} is not allowed")
    return Symbol(c.args[0], **{k: True for k in c.kwargs})


def _integer(c):
    (value,) = _arity(c, 1)
    if not isinstance(value, int):
        raise ParseError("Integer takes an integer literal")
    return Integer(value)


def _rational(c):
    num, den = _arity(c, 2)
    if not (isinstance(num, int) and isinstance(den, int)) or den <= 0:
        raise ParseError("Rational takes two integer literals, the second positive")
    return Rational(num, den)


def _scalar_op(op):
    """Add and Mul occur in dimensions (p + k) and in coefficients (λ + 1): bounded before SymPy combines them."""

    def build(c):
        if c.kwargs or not 2 <= len(c.args) <= MAX_COEFFICIENT_NODES:
            raise ParseError(f"{c.name} takes two to {MAX_COEFFICIENT_NODES} scalar arguments")
        for a in c.args:
            if not isinstance(a, Basic) or isinstance(a, MatrixExpr):
                raise ParseError(f"{c.name} takes scalar arguments")
            if not isinstance(a, (Rational, Symbol, Add, Mul, Pow, Trace)):
                raise ParseError(f"{c.name} takes numbers, symbols, sums, products, powers and 1×1 traces only")
        if sum(sum(1 for _ in preorder_traversal(a)) for a in c.args) > MAX_COEFFICIENT_NODES:
            raise ParseError(f"{c.name}: more than {MAX_COEFFICIENT_NODES} nodes in a scalar expression")
        return op(*c.args)

    return build


def _pow(c):
    base, exponent = _arity(c, 2)
    if not isinstance(base, Basic) or isinstance(base, MatrixExpr) or not isinstance(base, (Symbol, Add, Mul, Trace)):
        raise ParseError("Pow takes a scalar base (a symbol, a sum, a product or a 1×1 trace)")
    if isinstance(exponent, (Symbol, Add, Mul)):  # issue 41: γ^(k·t + c), the kernel's index power exactly
        built = Pow(base, exponent)
        if index_power(built) is None:
            raise ParseError(f"Pow with a symbolic exponent takes a scalar symbol to an index exponent k·t + c "
                             f"(index symbols, integers of at most {MAX_EXPONENT} in size)")
        return built
    if not isinstance(exponent, Integer) or abs(int(exponent)) > MAX_EXPONENT:
        raise ParseError(f"Pow takes an integer exponent of at most {MAX_EXPONENT} in size")
    return Pow(base, exponent)


def _family_matrix(c):
    name, index, rows, cols = _arity(c, 4)
    if not isinstance(name, Str):
        raise ParseError("FamilyMatrix's name must be a Str")
    return FamilyMatrix(name, _dim(index, "a family member's index"), _dim(rows, "rows"), _dim(cols, "cols"))


def _trace(c):
    (matrix,) = _arity(c, 1)
    matrix = _matrix(matrix, "Trace's argument")
    if matrix.shape != (Integer(1), Integer(1)):
        raise ParseError("Trace reads a 1×1 matrix as a scalar; its argument must be 1×1")
    return Trace(matrix)


def _matrix_symbol(c):
    name, rows, cols = _arity(c, 3)
    if not isinstance(name, Str):
        raise ParseError("MatrixSymbol's name must be a Str")
    return MatrixSymbol(name, _dim(rows, "rows"), _dim(cols, "cols"))


def _matmul(c):
    if c.kwargs or not c.args:
        raise ParseError("MatMul takes factors")
    for a in c.args:
        if isinstance(a, MatrixExpr):
            continue
        if not isinstance(a, (Rational, Symbol, Add, Mul, Pow, Trace)):
            raise ParseError("MatMul takes matrices and scalar coefficients")
        try:
            require_coefficient(a, lambda matrix: None)  # the matrices in a Trace were built by this parser
        except CoefficientError as exc:
            raise ParseError(f"MatMul's coefficient: {exc}") from None
    return MatMul(*c.args, evaluate=False)


def _matadd(c):
    if c.kwargs or not c.args:
        raise ParseError("MatAdd takes terms")
    return MatAdd(*[_matrix(a, "a MatAdd term") for a in c.args], evaluate=False)


def _inverse(c):
    matrix, exponent = _arity(c, 2)
    if exponent != -1:
        raise ParseError("Inverse takes exponent -1")
    return Inverse(_matrix(matrix, "Inverse's argument"))


def _matpow(c):
    matrix, exponent = _arity(c, 2)
    if not isinstance(exponent, Rational):
        raise ParseError("MatPow takes a rational exponent")
    return MatPow(_matrix(matrix, "MatPow's base"), exponent)


def _dense(c):
    (rows,) = _arity(c, 1)
    if not isinstance(rows, list) or not rows or not all(isinstance(r, list) and r for r in rows):
        raise ParseError("ImmutableDenseMatrix takes a list of non-empty rows")
    if any(len(r) != len(rows[0]) for r in rows):
        raise ParseError("ImmutableDenseMatrix rows differ in length")
    blocks = [[_matrix(b, "a block") for b in r] for r in rows]
    if any(isinstance(b, ImmutableDenseMatrix) for r in blocks for b in r):
        raise ParseError("a block must be a matrix term, not a grid of blocks (nest a BlockMatrix instead)")
    # evaluate=False, as BlockMatrix builds its grid: a block of explicit size (a 1×1 slot, a vector of one token)
    # stays one block, never expanded entry by entry, and a nested block matrix stays a block
    return ImmutableDenseMatrix(blocks, evaluate=False)


def _block(c):
    (grid,) = _arity(c, 1)
    if not isinstance(grid, ImmutableDenseMatrix):
        raise ParseError("BlockMatrix takes an ImmutableDenseMatrix of blocks")
    return BlockMatrix(grid)


def _applied(c):
    predicate, matrix = _arity(c, 2)
    if predicate in SCALAR_PREDICATES.values():  # issue 41: Q.nonzero(c) of a coefficient c
        if not isinstance(matrix, (Symbol, Add, Mul, Pow, Trace)):
            raise ParseError("a scalar fact takes a scalar (a symbol, a sum, a product, a power or a 1×1 trace)")
        try:
            require_coefficient(matrix, lambda m: None)  # the matrices in a Trace were built by this parser
        except CoefficientError as exc:
            raise ParseError(f"a scalar fact's subject: {exc}") from None
        return predicate(matrix)
    if predicate not in PREDICATES.values():
        raise ParseError("AppliedPredicate takes a known predicate")
    return predicate(_matrix(matrix, "a predicate's argument"))


def _ones(c):
    """1ₙ (issue 41): the ones vector of a dimension's length."""
    (size,) = _arity(c, 1)
    return Ones(_dim(size, "a ones vector's length"))


def _diag(c):
    """diag(v) (issue 41) of a matrix term (the kernel checks that it is a column)."""
    (vector,) = _arity(c, 1)
    return Diag(_matrix(vector, "diag's argument"))


def _tril(c):
    """tril(A, k) (issues 41, 42) of a matrix term, k the Integer 0 or -1 (the kernel checks that A is square)."""
    matrix, offset = _arity(c, 2)
    if not (isinstance(offset, Integer) and int(offset) in (0, -1)):
        raise ParseError("tril's offset is Integer(0) or Integer(-1)")
    return Tril(_matrix(matrix, "tril's argument"), offset)


def _kron(c):
    """A ⊗ B (issue 41) of two matrix terms."""
    left, right = _arity(c, 2)
    return Kron(_matrix(left, "kron's left factor"), _matrix(right, "kron's right factor"))


_BUILDERS = {
    "Str": _str,
    "Symbol": _symbol,
    "Integer": _integer,
    "Rational": _rational,
    "Add": _scalar_op(Add),
    "Mul": _scalar_op(Mul),
    "Pow": _pow,
    "Trace": _trace,
    "FamilyMatrix": _family_matrix,
    "MatrixSymbol": _matrix_symbol,
    "Identity": lambda c: Identity(_dim(_arity(c, 1)[0], "Identity's size")),
    "ZeroMatrix": lambda c: ZeroMatrix(*(_dim(d, "ZeroMatrix's size") for d in _arity(c, 2))),
    "Transpose": lambda c: Transpose(_matrix(_arity(c, 1)[0], "Transpose's argument")),
    "Inverse": _inverse,
    "MatPow": _matpow,
    "MatMul": _matmul,
    "MatAdd": _matadd,
    "ImmutableDenseMatrix": _dense,
    "BlockMatrix": _block,
    "AppliedPredicate": _applied,
    "Ones": _ones,
    "Diag": _diag,
    "Tril": _tril,
    "Kron": _kron,
}


def parse_srepr(text: str, deadline: float | None = None) -> Basic:
    """Parse one ``srepr`` string into the SymPy object it names, or raise :class:`ParseError`.

    ``deadline`` (a ``time.monotonic()`` value) bounds the work: past it, :class:`OutOfTime`.  The same text
    always gives the same (immutable) object, so a text seen before is not parsed again.
    """
    if not isinstance(text, str):
        raise ParseError("an expression must be a string")
    if len(text) > MAX_CHARS:
        raise ParseError(f"expression longer than {MAX_CHARS} characters")
    _tick(deadline)
    return _parse_cached(text, deadline)


def _parse_cached(text: str, deadline: float | None) -> Basic:
    cached = _CACHE.get(text)
    if cached is not None:
        return cached
    result = _parse(text, deadline)
    if len(text) <= _CACHED_CHARS:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.clear()
        _CACHE[text] = result
    return result


_CACHE: dict[str, Basic] = {}
_CACHE_SIZE = 20_000  # texts remembered (cleared when full)
_CACHED_CHARS = 1_000_000


def _parse(text: str, deadline: float | None) -> Basic:
    reader = _Reader(_tokens(text, deadline), deadline)
    tree = reader.value(0)
    if reader.pos != len(reader.tokens):
        raise ParseError(f"unexpected {reader.peek()[1]!r} after the expression")
    _tick(deadline)
    try:
        obj = _build(tree)
    except ParseError:
        raise
    except (TypeError, ValueError, AttributeError) as exc:  # SymPy refused the arguments
        raise ParseError(f"malformed expression: {exc}") from None
    if not isinstance(obj, Basic):
        raise ParseError("the text is not an expression")
    _tick(deadline)
    try:
        printed = srepr(obj)
    except (RecursionError, ValueError, TypeError) as exc:
        raise ParseError(f"the expression cannot be printed back ({type(exc).__name__})") from None
    if printed != text.strip():
        raise ParseError("the text is not in canonical srepr form (SymPy would read it differently)")
    return obj
