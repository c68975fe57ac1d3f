"""The one gate into the kernel: every object :func:`check` receives is validated by exact type, once, here.

Part of the trusted core.  :func:`validated` walks a :class:`Proof` — ids, names, rule names, texts,
hypotheses, definitions, chains, steps, instances, terms, symbols, dimensions, predicates and cited
theorems — accepting only objects whose type is *exactly* one the kernel knows (never a subclass, which
could redefine equality, hashing or printing), and rebuilds each from its validated parts.  The kernel
then works on its own fresh copy: nothing the caller holds is shared with the theorem it gets back.
"""

from __future__ import annotations

import re

import sympy
from sympy import Basic, ImmutableDenseMatrix, Rational, S, Symbol
from sympy.assumptions.assume import AppliedPredicate
from sympy.core.symbol import Str
from sympy.logic.boolalg import BooleanTrue
from sympy.matrices.expressions import (
    BlockMatrix,
    Identity,
    Inverse,
    MatAdd,
    MatMul,
    MatPow,
    MatrixSymbol,
    Trace,
    Transpose,
    ZeroMatrix,
)

from .budget import charge
from .proof import PREDICATES, SCALAR_PREDICATES, Chain, Definition, Family, Hypothesis, Induction, Proof, Step
from .scalars import (
    MAX_EXPONENT,
    MAX_EXPONENT_TERMS,
    SCALAR_ASSUMPTIONS,
    index_exponent,
    index_power,
    scalar_kind,
)
from .terms import (
    MAX_DIMENSION_NODES,
    MAX_SHAPE_DOUBLING,
    TRIL_OFFSETS,
    Diag,
    FamilyMatrix,
    Kron,
    Ones,
    TermError,
    Tril,
    index_kind,
    require_index,
    shown,
)

__all__ = ["IDENTIFIER", "ValidationError", "dimension_symbol", "identifier", "rule_name", "term", "validated"]

#: Ids, names of hypotheses, definitions and chains: ASCII identifiers of at most 100 characters.
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}\Z")
_RULE_PREFIXES = ("hyp", "def", "lemma", "thm", "base", "step")
MAX_TEXT = 20_000  # characters of a title or a statement in words
MAX_TERM_NODES = 200_000  # nodes of one term: far above any real proof, small enough to walk at once

_DIMENSION_ASSUMPTIONS = {"integer": True, "positive": True}
_INDEX_ASSUMPTIONS = {"integer": True, "nonnegative": True}


class ValidationError(TermError):
    """An object that is not exactly what the kernel accepts; the message names it."""


def identifier(value, what: str) -> str:
    """``value`` if it is a plain ``str`` and an ASCII identifier, else ValidationError."""
    if type(value) is not str:
        raise ValidationError(f"{what} must be a str, not {type(value).__name__}")
    if not IDENTIFIER.match(value):
        raise ValidationError(f"{what} {_shown(value)} is not an identifier (ASCII letters, digits and _)")
    return value


def rule_name(value) -> str:
    """An axiom's name or ``hyp:``/``def:``/``lemma:``/``thm:`` followed by an identifier."""
    if type(value) is not str:
        raise ValidationError(f"a rule name must be a str, not {type(value).__name__}")
    prefix, colon, rest = value.partition(":")
    if colon and prefix in _RULE_PREFIXES and IDENTIFIER.match(rest):
        return value
    if not colon and IDENTIFIER.match(value):
        return value
    raise ValidationError(f"rule name {_shown(value)} is neither an axiom's name nor {'/'.join(_RULE_PREFIXES)}"
                          ":IDENTIFIER")


def _text(value, what: str) -> str:
    if type(value) is not str:
        raise ValidationError(f"{what} must be a str, not {type(value).__name__}")
    if len(value) > MAX_TEXT:
        raise ValidationError(f"{what} is longer than {MAX_TEXT} characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(f"{what} is not valid text (a lone surrogate)") from None
    return value


def _shown(value: str) -> str:
    """A name as it may be shown in a message: escaped, cut short."""
    return ascii(value[:60] + ("…" if len(value) > 60 else ""))


def _int(value, what: str) -> int:
    if type(value) is not int:
        raise ValidationError(f"{what} must be an int")
    return value


# --- scalars and dimensions --------------------------------------------------------------

_NUMBER_TYPES = {sympy.Integer, type(S.One), type(S.Zero), type(S.NegativeOne)}
_RATIONAL_TYPES = _NUMBER_TYPES | {Rational, type(S.Half)}


def rational(value) -> Rational:
    """A SymPy rational number of an exact type, rebuilt."""
    if type(value) not in _RATIONAL_TYPES:
        raise ValidationError(f"{type(value).__name__} is not a rational number the kernel knows")
    return Rational(_int(value.p, "a numerator"), _int(value.q, "a denominator"))


def dimension_symbol(value) -> Symbol:
    """A dimension (a ``Symbol``, exactly, assumed a positive integer: ``derive.dim``) or an index (assumed a
    non-negative integer: ``derive.index``), with a plain name, rebuilt."""
    if type(value) is not Symbol:
        raise ValidationError(f"{type(value).__name__} is not a dimension symbol")
    name = value.name
    if type(name) is not str or not IDENTIFIER.match(name):
        raise ValidationError("a dimension symbol needs an identifier as its name")
    assumptions = getattr(value, "_assumptions_orig", None)
    if type(assumptions) is not dict or assumptions not in (_DIMENSION_ASSUMPTIONS, _INDEX_ASSUMPTIONS):
        raise ValidationError(f"dimension {name} must be assumed exactly integer and positive (or, for an index, "
                              "integer and non-negative)")
    return Symbol(name, **assumptions)


def index_symbol(value) -> Symbol:
    """An index symbol (``derive.index``), rebuilt."""
    symbol = dimension_symbol(value)
    if index_kind(symbol) != "index":
        raise ValidationError(f"{symbol} is not an index symbol (derive.index)")
    return symbol


def index(value) -> Basic:
    """An index of a family member: a natural number, an index symbol, or one plus a number; rebuilt."""
    rebuilt = dimension(value)
    try:
        require_index(rebuilt)
    except TermError as exc:
        raise ValidationError(str(exc)) from None
    return rebuilt


def dimension(value, budget: list[int] | None = None) -> Basic:
    """A dimension expression (integers, dimension symbols, sums and products of them), rebuilt."""
    budget = [MAX_DIMENSION_NODES] if budget is None else budget
    budget[0] -= 1
    if budget[0] < 0:
        raise ValidationError(f"a dimension expression has more than {MAX_DIMENSION_NODES} nodes")
    kind = type(value)
    if kind in _NUMBER_TYPES:
        return rational(value)
    if kind is Symbol:
        return dimension_symbol(value)
    if kind in (sympy.Add, sympy.Mul):
        args = _args(value)
        if len(args) < 2:
            raise ValidationError(f"a dimension {kind.__name__} needs two or more arguments")
        return kind(*[dimension(a, budget) for a in args])
    raise ValidationError(f"{kind.__name__} is not allowed in a dimension")


def _args(value) -> tuple:
    args = value.args
    if type(args) is not tuple:
        raise ValidationError(f"the arguments of a {type(value).__name__} must be a tuple")
    return args


# --- matrix terms -------------------------------------------------------------------------


def term(value, budget: list[int] | None = None) -> Basic:
    """A matrix term of the kernel's node types only (exactly), rebuilt without SymPy's own rewriting."""
    budget = [MAX_TERM_NODES] if budget is None else budget
    return _term(value, budget)


def _term(value, budget: list[int], doubled: int = 0) -> Basic:
    """``doubled``: how many of the nodes above ``value`` make SymPy ask its shape twice (the only matrix factor of a
    product, the top-left block of a block matrix; :data:`terms.MAX_SHAPE_DOUBLING`)."""
    try:
        budget[0] -= 1
        charge()  # a unit a node: the time guard of check is looked at while a large proof is read
        if budget[0] < 0:
            raise ValidationError(f"a term has more than {MAX_TERM_NODES} nodes")
        if doubled > MAX_SHAPE_DOUBLING:
            raise ValidationError(f"a term nests products of one matrix factor or top-left blocks more than "
                                  f"{MAX_SHAPE_DOUBLING} deep (SymPy's shape of it would take 2**depth steps)")
        kind = type(value)
        if kind is MatrixSymbol:
            name, rows, cols = _args(value) if len(_args(value)) == 3 else (None, None, None)
            if type(name) is not Str or type(name.name) is not str or not IDENTIFIER.match(name.name):
                raise ValidationError("a matrix symbol needs an identifier as its name")
            return MatrixSymbol(Str(name.name), dimension(rows), dimension(cols))
        if kind is FamilyMatrix:
            name, position, rows, cols = _exactly(value, 4)
            if type(name) is not Str or type(name.name) is not str or not IDENTIFIER.match(name.name):
                raise ValidationError("a family needs an identifier as its name")
            return FamilyMatrix(Str(name.name), index(position), dimension(rows), dimension(cols))
        if kind is Identity:
            (size,) = _exactly(value, 1)
            return Identity(dimension(size))
        if kind is ZeroMatrix:
            rows, cols = _exactly(value, 2)
            return ZeroMatrix(dimension(rows), dimension(cols))
        if kind is Ones:  # issue 41: the ones vector 1ₙ
            (size,) = _exactly(value, 1)
            return Ones(dimension(size))
        if kind is Diag:  # issue 41: diag(v); its shape asks v's once (no doubling)
            (vector,) = _exactly(value, 1)
            return Diag(_term(vector, budget, doubled))
        if kind is Kron:  # issue 41: A ⊗ B; its shape asks each factor's once (no doubling)
            left, right = _exactly(value, 2)
            return Kron(_term(left, budget, doubled), _term(right, budget, doubled))
        if kind is Tril:  # issues 41 and 42: tril(A) and tril(A, -1); its shape asks A's once (no doubling)
            matrix, offset = _exactly(value, 2)
            if type(offset) not in TRIL_OFFSETS:
                raise ValidationError("tril's offset is the Integer 0 or -1")
            return Tril(_term(matrix, budget, doubled), offset)
        if kind is Transpose:
            (arg,) = _exactly(value, 1)
            return Transpose(_term(arg, budget, doubled))
        if kind is Inverse:
            arg, exponent = _exactly(value, 2)
            if type(exponent) is not type(S.NegativeOne):
                raise ValidationError("an Inverse holds the exponent -1")
            return Inverse(_term(arg, budget, doubled))
        if kind is MatPow:
            base, exponent = _exactly(value, 2)
            return MatPow(_term(base, budget, doubled), rational(exponent))
        if kind is MatMul:
            args = _args(value)
            if not args:
                raise ValidationError("a product needs factors")
            inner = doubled + (sum(type(a) in _MATRIX_TYPES for a in args) == 1)  # one factor: its shape asked twice
            rebuilt = [_term(a, budget, inner) if type(a) in _MATRIX_TYPES else _coefficient(a, budget) for a in args]
            out = MatMul(*rebuilt, evaluate=False)
            if out.args != tuple(rebuilt):
                raise ValidationError("SymPy changed a product while rebuilding it")
            return out
        if kind is MatAdd:
            args = _args(value)
            if not args:
                raise ValidationError("a sum needs terms")
            rebuilt = [_term(a, budget, doubled) for a in args]
            out = MatAdd(*rebuilt, evaluate=False)
            if out.args != tuple(rebuilt):
                raise ValidationError("SymPy changed a sum while rebuilding it")
            return out
        if kind is BlockMatrix:
            (grid,) = _exactly(value, 1)
            if type(grid) is not ImmutableDenseMatrix:
                raise ValidationError("a block matrix holds an ImmutableDenseMatrix of blocks")
            rows, cols = grid.shape
            if type(rows) is not int or type(cols) is not int or rows < 1 or cols < 1:
                raise ValidationError("a block matrix needs a non-empty grid of blocks")
            blocks = [[_term(grid[i, j], budget, doubled + (i == j == 0)) for j in range(cols)] for i in range(rows)]
            # evaluate=False: blocks of explicit size and nested block matrices stay blocks (as BlockMatrix builds them)
            return BlockMatrix(ImmutableDenseMatrix(blocks, evaluate=False))
        raise ValidationError(f"{kind.__name__} is not a matrix term the kernel knows")
    except ValidationError:
        raise
    except (ValueError, TypeError, AttributeError, KeyError, IndexError) as exc:  # SymPy refusing the parts
        raise ValidationError(f"SymPy refuses the {type(value).__name__} {_term_shown(value)}: "
                              f"{' '.join(str(exc).split())}") from None


def _term_shown(value) -> str:
    """A term as a message may show it: on one line, cut short, escaped (never raising)."""
    for show in (lambda v: shown(v, 120), sympy.srepr):  # shown: never SymPy's printer on a large or deep term
        try:
            return _shown(" ".join(show(value).split()))
        except Exception:  # noqa: BLE001, S112 - a malformed object may not print: try the next way
            continue
    return "(a term that cannot be printed)"


_MATRIX_TYPES = frozenset({MatrixSymbol, FamilyMatrix, Identity, ZeroMatrix, Transpose, Inverse, MatPow, MatMul,
                           MatAdd, BlockMatrix, Ones, Diag, Tril, Kron})


def scalar_symbol(value) -> Symbol:
    """A scalar symbol (``derive.scalar``): a ``Symbol`` assumed exactly real, or exactly positive, rebuilt."""
    if type(value) is not Symbol:
        raise ValidationError(f"{type(value).__name__} is not a scalar symbol")
    name = value.name
    if type(name) is not str or not IDENTIFIER.match(name):
        raise ValidationError("a scalar symbol needs an identifier as its name")
    kind = scalar_kind(value)
    if kind is None:
        raise ValidationError(f"{name} is not a scalar symbol (assumed exactly real, or exactly positive)")
    return Symbol(name, **SCALAR_ASSUMPTIONS[kind])


def _coefficient(value, budget: list[int]) -> Basic:
    """A product's coefficient (rational numbers, scalar symbols, +, ×, integer powers, 1×1 Trace), rebuilt."""
    budget[0] -= 1
    charge()
    if budget[0] < 0:
        raise ValidationError(f"a term has more than {MAX_TERM_NODES} nodes")
    kind = type(value)
    if kind in _RATIONAL_TYPES:
        return rational(value)
    if kind is Symbol:
        return _coefficient_symbol(value)
    if kind in (sympy.Add, sympy.Mul):
        args = _args(value)
        if len(args) < 2:
            raise ValidationError(f"a coefficient's {kind.__name__} needs two or more arguments")
        return kind(*[_coefficient(a, budget) for a in args])
    if kind is sympy.Pow:
        base, exponent = _exactly(value, 2)
        if type(exponent) not in _RATIONAL_TYPES:  # issue 41: γ^(k·t + c), exactly
            return _index_power(base, exponent, budget)
        return sympy.Pow(_coefficient(base, budget), rational(exponent))
    if kind is Trace:
        (matrix,) = _exactly(value, 1)
        return Trace(_term(matrix, budget))
    raise ValidationError(f"{kind.__name__} is not allowed in a coefficient")


def _index_power(base, exponent, budget: list[int]) -> Basic:
    """γ^(k₁t₁ + … + c) (issue 41): a scalar symbol γ to an index exponent — index symbols (``derive.index``) times
    integers, plus an integer, each of at most ``MAX_EXPONENT`` in size (:func:`scalars.index_exponent`) — rebuilt;
    anything else (a float, a dimension or scalar symbol, t², t/2, a huge number) is refused."""
    what = "an index power γ^(k·t + c) (a scalar symbol to an index symbol times an integer plus an integer)"
    base = scalar_symbol(base)
    exponent = _index_exponent(exponent, what, budget)
    if index_exponent(exponent) is None:
        raise ValidationError(f"{what}: exponent {_term_shown(exponent)} is not one (at most {MAX_EXPONENT_TERMS} "
                              f"index symbols, integers of at most {MAX_EXPONENT} in size)")
    out = sympy.Pow(base, exponent)
    if index_power(out) is None:
        raise ValidationError(f"{what}: SymPy changed it while rebuilding it")
    return out


def _index_exponent(value, what: str, budget: list[int], depth: int = 0) -> Basic:
    """The exponent of an index power, rebuilt from exactly an index symbol, an integer, a product of the two or a
    sum of those (the form is checked by the caller)."""
    budget[0] -= 1
    charge()
    if budget[0] < 0:
        raise ValidationError(f"a term has more than {MAX_TERM_NODES} nodes")
    kind = type(value)
    if kind in _NUMBER_TYPES:
        number = rational(value)
        if abs(number) > MAX_EXPONENT:
            raise ValidationError(f"{what}: an integer of more than {MAX_EXPONENT} in size")
        return number
    if kind is Symbol:
        return index_symbol(value)
    if depth < 2 and kind in (sympy.Add, sympy.Mul):
        args = _args(value)
        if not 2 <= len(args) <= MAX_EXPONENT_TERMS + 1:
            raise ValidationError(f"{what}: a {kind.__name__} of {len(args)} arguments in its exponent")
        return kind(*[_index_exponent(a, what, budget, depth + 1) for a in args])
    raise ValidationError(f"{what}: {kind.__name__} is not allowed in its exponent")


def _coefficient_symbol(value) -> Symbol:
    """A symbol in a coefficient: a scalar symbol, or a dimension or index symbol standing for its integer
    (1/n for a dimension n; an index may be 0, so the sign judgment never calls it positive)."""
    if type(value) is Symbol and type(getattr(value, "_assumptions_orig", None)) is dict \
            and value._assumptions_orig in (_DIMENSION_ASSUMPTIONS, _INDEX_ASSUMPTIONS):
        return dimension_symbol(value)
    return scalar_symbol(value)


def _exactly(value, count: int) -> tuple:
    args = _args(value)
    if len(args) != count:
        raise ValidationError(f"a {type(value).__name__} takes {count} argument(s)")
    return args


def symbol(value) -> Basic:
    """A matrix, dimension or index symbol (what ``forall`` binds and instances map), rebuilt."""
    if type(value) is MatrixSymbol:
        return term(value)
    if type(value) is Symbol:
        return dimension_symbol(value)
    raise ValidationError(f"{type(value).__name__} is not a symbol")


def _instance_value(variable: Basic, value) -> Basic:
    return dimension(value) if type(variable) is Symbol else term(value)


# --- proof data ----------------------------------------------------------------------------


def _sequence(value, what: str) -> tuple:
    if type(value) not in (tuple, list):
        raise ValidationError(f"{what} must be a tuple or a list, not {type(value).__name__}")
    return tuple(value)


def _predicate(value) -> AppliedPredicate:
    if type(value) is not AppliedPredicate:
        raise ValidationError(f"a predicate hypothesis must be an AppliedPredicate, not {type(value).__name__}")
    args = _args(value)
    if len(args) != 2:
        raise ValidationError("a predicate hypothesis applies one predicate to one matrix")
    function, subject = args
    scalar = next((p for p in SCALAR_PREDICATES.values() if function is p), None)
    if scalar is not None:  # issue 41: Q.nonzero(c) for a coefficient c
        if type(subject) in _MATRIX_TYPES:
            raise ValidationError("a scalar fact Q.nonzero(c) is about a scalar, not a matrix")
        rebuilt = _coefficient(subject, [MAX_TERM_NODES])
        if type(rebuilt) in _RATIONAL_TYPES:
            raise ValidationError("a scalar fact about a number says nothing (it is true or false as written)")
        return AppliedPredicate(scalar, rebuilt)
    known = next((p for p in PREDICATES.values() if function is p), None)
    if known is None:
        raise ValidationError("a predicate hypothesis uses a predicate the kernel does not know")
    return AppliedPredicate(known, term(subject))


def hypothesis(value) -> Hypothesis:
    if type(value) is not Hypothesis:
        raise ValidationError(f"a hypothesis must be a derive.kernel.Hypothesis, not {type(value).__name__}")
    name = identifier(value.name, "a hypothesis's name")
    forall = tuple(symbol(v) for v in _sequence(value.forall, f"hypothesis {name}'s forall"))
    if type(value.lhs) is AppliedPredicate or isinstance(value.lhs, AppliedPredicate):
        if type(value.rhs) is not BooleanTrue:
            raise ValidationError(f"predicate hypothesis {name} must read Q.<predicate>(M) = true")
        return Hypothesis(name, _predicate(value.lhs), S.true, forall)
    if isinstance(value.lhs, Symbol):  # a subclass too, to be refused by name below
        return _scalar_hypothesis(value, name, forall)
    return Hypothesis(name, term(value.lhs), term(value.rhs), forall)


def _scalar_hypothesis(value: Hypothesis, name: str, forall: tuple) -> Hypothesis:
    """λ = r (issue 29): a scalar symbol, exactly, and a coefficient, rebuilt; nothing bound."""
    if forall:
        raise ValidationError(f"scalar hypothesis {name} binds no variables")
    if type(value.rhs) in _MATRIX_TYPES:
        raise ValidationError(f"scalar hypothesis {name}: its right side must be a scalar, not a matrix")
    return Hypothesis(name, scalar_symbol(value.lhs), _coefficient(value.rhs, [MAX_TERM_NODES]), ())


def definition(value) -> Definition:
    if type(value) is not Definition:
        raise ValidationError(f"a definition must be a derive.kernel.Definition, not {type(value).__name__}")
    name = identifier(value.name, "a definition's name")
    if type(value.symbol) is not MatrixSymbol:
        raise ValidationError(f"definition {name} must define a matrix symbol (exactly a MatrixSymbol)")
    return Definition(name, term(value.symbol), term(value.rhs))


def step(value) -> Step:
    if type(value) is not Step:
        raise ValidationError(f"a step must be a derive.kernel.Step, not {type(value).__name__}")
    pairs = []
    for pair in _sequence(value.instance, "a step's instance"):
        pair = _sequence(pair, "an instance pair")
        if len(pair) != 2:
            raise ValidationError("an instance is a sequence of (symbol, value) pairs")
        variable = symbol(pair[0])
        pairs.append((variable, _instance_value(variable, pair[1])))
    return Step(term(value.expr), rule_name(value.rule), tuple(pairs))


def chain(value) -> Chain:
    if type(value) is not Chain:
        raise ValidationError(f"a chain must be a derive.kernel.Chain, not {type(value).__name__}")
    name = identifier(value.name, "a chain's name")
    return Chain(name, term(value.lhs), term(value.rhs),
                 tuple(step(s) for s in _sequence(value.steps, f"chain {name}'s steps")),
                 tuple(hypothesis(h) for h in _sequence(value.hypotheses, f"chain {name}'s hypotheses")))


def family(value) -> Family:
    if type(value) is not Family:
        raise ValidationError(f"a family must be a derive.kernel.Family, not {type(value).__name__}")
    name = identifier(value.name, "a family's name")
    variable = index_symbol(value.index)
    defined = value.base is not None or value.step is not None
    return Family(name, variable, dimension(value.rows), dimension(value.cols),
                  term(value.base) if defined else None, term(value.step) if defined else None)


def lemma(value) -> Chain | Induction:
    if type(value) is Chain:
        return chain(value)
    if type(value) is not Induction:
        raise ValidationError(f"a lemma must be a derive.kernel.Chain or Induction, not {type(value).__name__}")
    name = identifier(value.name, "a lemma's name")
    return Induction(name, index_symbol(value.variable), term(value.lhs), term(value.rhs),
                     tuple(step(s) for s in _sequence(value.base, f"induction {name}'s base")),
                     tuple(step(s) for s in _sequence(value.step, f"induction {name}'s step")))


def validated(proof, issued) -> Proof:
    """A fresh copy of ``proof`` made of exactly-typed, rebuilt parts; ``issued(theorem)`` vouches for each
    cited theorem (it must be one the kernel made and still holds unchanged)."""
    if type(proof) is not Proof:
        raise ValidationError(f"check takes a derive.kernel.Proof, not {type(proof).__name__}")
    theorem_id = identifier(proof.theorem, "a theorem id")
    cites = []
    for cited in _sequence(proof.cites, "cites"):
        cites.append(issued(cited))
    return Proof(theorem_id, _text(proof.title, "the title"), _text(proof.statement, "the statement"),
                 tuple(hypothesis(h) for h in _sequence(proof.hypotheses, "the hypotheses")),
                 tuple(definition(d) for d in _sequence(proof.definitions, "the definitions")),
                 tuple(lemma(c) for c in _sequence(proof.lemmas, "the lemmas")),
                 chain(proof.claim), tuple(cites),
                 tuple(family(f) for f in _sequence(proof.families, "the families")))
