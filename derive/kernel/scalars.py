"""Scalar coefficients: rational functions of scalar symbols and of 1×1 matrices read as scalars.

Part of the trusted core.  A product's coefficient is a SymPy scalar expression built from rational
numbers, scalar symbols (real, or positive by declaration), dimension and index symbols (the integers they
stand for) and ``Trace(m)`` for a 1×1 matrix term ``m``
(the 1×1 matrix read as the scalar it holds), with +, × and integer powers, and (issue 41) *index powers*
γ^e of a scalar symbol γ with an exponent e = k₁t₁ + … + c linear in index symbols (γ^t, γ^{t+1}, γ^{−t}).  Its
normal form is computed exactly by polynomial arithmetic over the rationals: numerator and denominator coprime
polynomials in those atoms, the denominator monic, both expanded.  An index power is read as γ^c·∏(γ^{tᵢ})^{kᵢ}, each
γ^{tᵢ} one more atom (so γ^{t+1} = γ·γ^t, γ^a·γ^b = γ^{a+b} and γ^t/γ^t = 1 are the normal form's; γ^0 = 1 is
SymPy's, when an index is instantiated).  Two coefficients are equal as rational functions exactly when their
normal forms are equal.  Nothing here judges signs; :mod:`.judgments` does, with the context (γ^e with a
possibly negative e needs γ ≠ 0).
"""

from __future__ import annotations

import operator
from fractions import Fraction

import sympy
import sympy.polys.rings
from sympy import Add, Basic, Expr, Integer, Mul, Pow, Rational, S, Symbol
from sympy.core.sorting import default_sort_key
from sympy.matrices.expressions import Trace

from .budget import charge, metered_cache

__all__ = ["COEFFICIENT_TYPES", "MAX_EXPONENT", "MAX_EXPONENT_TERMS", "CoefficientError", "atoms_of",
           "canon_coefficient", "index_exponent", "index_power", "is_number", "is_one_by_one", "is_scalar_symbol",
           "may_be_negative", "require_coefficient", "scalar_kind", "size_kind"]

#: The assumptions a scalar symbol is made with (``derive.scalar``): real, or positive.
SCALAR_ASSUMPTIONS = {"real": {"real": True}, "positive": {"positive": True}}
MAX_EXPONENT = 64  # integer powers in a coefficient: |exponent| at most this
MAX_EXPONENT_TERMS = 4  # index symbols in one index exponent (γ^(t + s) has two); |kᵢ|, |c| ≤ MAX_EXPONENT
MAX_COEFFICIENT_NODES = 400  # nodes of one coefficient expression
MAX_EXPANDED_TERMS = 20_000  # estimated terms of its numerator and denominator once over a common denominator
AS_EXPR_UNITS = 100  # units per term of turning a polynomial into a SymPy expression
MAX_GCD_UNITS = 2_000_000  # estimated cost of one gcd of the common factors of numerator and denominator

_RATIONAL_TYPES = frozenset({Rational, Integer, type(S.One), type(S.Zero), type(S.NegativeOne), type(S.Half)})
#: Exactly these node types may occur in a coefficient (the matrix inside a Trace is a kernel term).
COEFFICIENT_TYPES = _RATIONAL_TYPES | {Symbol, Add, Mul, Pow, Trace}


class CoefficientError(ValueError):
    """A coefficient is not a rational function the kernel accepts; the message says why."""


def scalar_kind(symbol: Basic) -> str | None:
    """``"real"`` or ``"positive"`` for a scalar symbol, None for anything else (a dimension, say)."""
    if type(symbol) is not Symbol:
        return None
    given = getattr(symbol, "_assumptions_orig", None)
    if type(given) is not dict:
        return None
    return next((kind for kind, assumed in SCALAR_ASSUMPTIONS.items() if given == assumed), None)


def is_scalar_symbol(symbol: Basic) -> bool:
    return scalar_kind(symbol) is not None


# --- dimension and index symbols in a coefficient (issue 29): 1/n for a dimension n ----------------------
#: The assumptions of a dimension symbol (``derive.dim``: a positive integer) and of an index symbol
#: (``derive.index``: a natural number, which may be 0).  Both may stand in a coefficient as the number they are.
SIZE_ASSUMPTIONS = {"dimension": {"integer": True, "positive": True}, "index": {"integer": True, "nonnegative": True}}


def size_kind(symbol: Basic) -> str | None:
    """``"dimension"`` (positive) or ``"index"`` (may be 0) for a size symbol in a coefficient, None otherwise."""
    if type(symbol) is not Symbol:
        return None
    given = getattr(symbol, "_assumptions_orig", None)
    if type(given) is not dict:
        return None
    return next((kind for kind, assumed in SIZE_ASSUMPTIONS.items() if given == assumed), None)


def is_number(c: Basic) -> bool:
    """A rational number (the coefficients the kernel had before scalar symbols)."""
    return type(c) in _RATIONAL_TYPES


def index_exponent(e: Basic) -> tuple[int, tuple[tuple[Symbol, int], ...]] | None:
    """``(c, ((t₁, k₁), ...))`` when ``e`` is an *index exponent* k₁t₁ + … + c — index symbols tᵢ (``derive.index``,
    distinct, at most :data:`MAX_EXPONENT_TERMS`, sorted by name) with non-zero integer kᵢ and an integer c, each of
    size at most :data:`MAX_EXPONENT` — written as SymPy builds it (t, 2t, t + 1, −t − 1, t + s); None otherwise (a
    number, a dimension or scalar symbol, t², t/2, a float)."""
    kind = type(e)
    parts = e.args if kind is Add else (e,) if kind in (Symbol, Mul) else None
    if parts is None or type(parts) is not tuple or not 1 <= len(parts) <= MAX_EXPONENT_TERMS + 1:
        return None
    constant, terms = 0, {}
    for part in parts:
        if type(part) in _RATIONAL_TYPES:
            if kind is not Add or part.q != 1 or constant or not part:
                return None
            constant = int(part.p)
            continue
        if type(part) is Mul:
            if len(part.args) != 2:
                return None
            k, symbol = part.args
            if type(k) not in _RATIONAL_TYPES or k.q != 1 or not k:
                return None
            k = int(k.p)
        else:
            k, symbol = 1, part
        if size_kind(symbol) != "index" or symbol in terms:
            return None
        terms[symbol] = k
    if not terms or len(terms) > MAX_EXPONENT_TERMS or abs(constant) > MAX_EXPONENT or \
            any(abs(k) > MAX_EXPONENT for k in terms.values()):
        return None
    return constant, tuple(sorted(terms.items(), key=lambda item: item[0].name))


def index_power(c: Basic) -> tuple[Symbol, int, tuple[tuple[Symbol, int], ...]] | None:
    """``(γ, c, ((t, k), ...))`` for an index power γ^(Σ kt + c) of a scalar symbol γ (``derive.scalar``), else None."""
    if type(c) is not Pow:
        return None
    base, exponent = c.args
    form = index_exponent(exponent)
    if form is None or not is_scalar_symbol(base):
        return None
    return base, form[0], form[1]


def may_be_negative(constant: int, terms: tuple) -> bool:
    """An index exponent Σ kt + c may be negative for some natural numbers t (its power is then a division)."""
    return constant < 0 or any(k < 0 for _, k in terms)


def is_one_by_one(term: Basic) -> bool:
    """A matrix term whose shape is literally 1×1: it may be read as a scalar."""
    shape = getattr(term, "shape", None)
    return shape is not None and all(type(d) is type(S.One) for d in shape)


def require_coefficient(c: Basic, require_matrix) -> None:
    """Raise CoefficientError unless ``c`` is a coefficient of exactly the allowed node types.

    ``require_matrix(m)`` checks the 1×1 matrix inside each Trace (the caller's term check).
    """
    nodes = 0
    stack = [c]
    while stack:
        node = stack.pop()
        nodes += 1
        if nodes > MAX_COEFFICIENT_NODES:
            raise CoefficientError(f"a coefficient has more than {MAX_COEFFICIENT_NODES} nodes")
        kind = type(node)
        if kind not in COEFFICIENT_TYPES:
            raise CoefficientError(f"{kind.__name__} is not allowed in a coefficient")
        if kind is Symbol:
            if not is_scalar_symbol(node) and size_kind(node) is None:
                raise CoefficientError(f"{node} is not a scalar symbol (derive.scalar) nor a dimension or index "
                                       "symbol (derive.dim, derive.index)")
        elif kind is Trace:
            (matrix,) = node.args
            if not is_one_by_one(matrix):
                raise CoefficientError("only a 1×1 matrix may be read as a scalar")
            require_matrix(matrix)
        elif kind is Pow:
            base, exponent = node.args
            if type(exponent) not in _RATIONAL_TYPES:  # issue 41: γ^(k·t + c), γ a scalar symbol, t an index
                if index_power(node) is None:
                    raise CoefficientError(f"a power with a symbolic exponent must be γ^(k·t + c): a scalar symbol "
                                           f"(derive.scalar) to an index symbol (derive.index) times an integer plus "
                                           f"an integer, each of at most {MAX_EXPONENT} in size")
                continue
            if exponent.q != 1 or abs(exponent) > MAX_EXPONENT:
                raise CoefficientError(f"a coefficient's powers must be integers of at most {MAX_EXPONENT} in size")
            stack.append(base)
        elif kind in (Add, Mul):
            stack += list(node.args)
    numerator, denominator = _expanded_size(c)
    if max(numerator, denominator) > MAX_EXPANDED_TERMS:
        raise CoefficientError("a coefficient is too large to bring to its normal form")


def _expanded_size(c: Basic) -> tuple[int, int]:
    """Upper bounds on the terms of the numerator and denominator over a common denominator."""
    cap = 10 * MAX_EXPANDED_TERMS
    kind = type(c)
    if kind in (Add, Mul):
        parts = [_expanded_size(a) for a in c.args]
        if kind is Mul:
            num = den = 1
            for n, d in parts:
                num, den = min(num * n, cap), min(den * d, cap)
            return num, den
        den = 1
        for _, d in parts:
            den = min(den * d, cap)
        num = 0
        for n, d in parts:
            num = min(num + n * max(den // max(d, 1), 1), cap)
        return num, den
    if kind is Pow:
        if type(c.args[1]) not in _RATIONAL_TYPES:  # an index power: one monomial
            return 1, 1
        n, d = _expanded_size(c.args[0])
        k = int(c.args[1])
        n, d = (n, d) if k >= 0 else (d, n)
        return min(n ** abs(k), cap) if n > 1 else 1, min(d ** abs(k), cap) if d > 1 else 1
    return 1, 1


def atoms_of(c: Basic) -> set[Basic]:
    """The scalar symbols and Trace atoms of a coefficient; an index power γ^(Σ kt + c) gives γ and each γ^t."""
    out: set[Basic] = set()
    stack = [c]
    while stack:
        node = stack.pop()
        if type(node) is Symbol or type(node) is Trace:
            out.add(node)
        elif type(node) is Pow and type(node.args[1]) not in _RATIONAL_TYPES:
            power = index_power(node)
            if power is None:
                raise CoefficientError(f"{node} is not a power the kernel knows")
            base, _, terms = power
            out |= {base} | {_index_atom(base, symbol) for symbol, _ in terms}
        elif type(node) in (Add, Mul, Pow):
            stack += list(node.args)
    return out


def _index_atom(base: Symbol, symbol: Symbol) -> Basic:
    """γ^t, the atom an index power is read in: γ^(Σ kt + c) = γ^c·∏ (γ^t)^k."""
    return Pow(base, symbol)


@metered_cache(maxsize=16384)
def canon_coefficient(c: Basic, canon_matrix=None) -> Expr:
    """The normal form of a coefficient (``canon_matrix`` brings the matrices inside Trace atoms to theirs).

    Numerator and denominator are coprime polynomials over the rationals in the coefficient's atoms (sorted
    by SymPy's default sort key), expanded, the denominator monic (its leading coefficient, in the
    lexicographic order of the atoms, is 1); a rational number stays itself.  Every monomial operation is
    charged to the work budget (:mod:`.budget`), and a gcd too large to compute is refused.
    """
    if is_number(c):
        return Rational(c)
    if canon_matrix is not None:
        traces = {t: Trace(canon_matrix(t.args[0])) for t in atoms_of(c) if type(t) is Trace}
        if any(k != v for k, v in traces.items()):
            c = c.xreplace(traces)
    generators = sorted(atoms_of(c), key=default_sort_key)
    if not generators:
        return Rational(c)
    numerator, denominator = _expanded_size(c)
    if max(numerator, denominator) > MAX_EXPANDED_TERMS:
        raise CoefficientError("a coefficient is too large to bring to its normal form")
    p, q = _rational_function(c, {g: i for i, g in enumerate(generators)}, len(generators))
    if not q:
        raise CoefficientError("a coefficient divides by zero")
    if not p:
        return S.Zero
    if any(any(m) for m in q):  # a denominator that is not a number: cancel the common factor
        g = _gcd(p, q, len(generators))
        if len(g) > 1 or any(any(m) for m in g):
            p, q = _exquo(p, g, generators), _exquo(q, g, generators)
    lead = q[max(q)]  # the leading coefficient in the lexicographic order of the generators
    p = {m: v / lead for m, v in p.items()}
    q = {m: v / lead for m, v in q.items()}
    top = _as_expr(p, generators)
    if len(q) == 1 and not any(next(iter(q))):
        return top
    return Mul(top, Pow(_as_expr(q, generators), -1))


# --- exact sparse polynomial arithmetic, charged per monomial operation ----------------------------------
# A polynomial is a dict {exponent tuple: Fraction}, no zero values; a rational function a pair of them.

_ONE_TERM = Fraction(1)


def _constant(value: Fraction, n: int) -> dict:
    return {(0,) * n: value} if value else {}


def _width(a: dict) -> int:
    """Units one monomial operation costs: exponent tuples are added entry by entry."""
    return 1 + len(next(iter(a))) // 32 if a else 1


def _add(a: dict, b: dict) -> dict:
    charge(len(a) + len(b))
    out = dict(a)
    for m, v in b.items():
        s = out.get(m, 0) + v
        if s:
            out[m] = s
        else:
            out.pop(m, None)
    return out


def _mul(a: dict, b: dict) -> dict:
    charge(len(a) * len(b) * _width(a) + 1)
    if len(a) * len(b) > 10 * MAX_EXPANDED_TERMS:
        raise CoefficientError("a coefficient is too large to bring to its normal form")
    out: dict = {}
    for m1, v1 in a.items():
        for m2, v2 in b.items():
            m = tuple(map(operator.add, m1, m2))
            s = out.get(m, 0) + v1 * v2
            if s:
                out[m] = s
            else:
                del out[m]
    return out


def _power(a: dict, k: int, n: int) -> dict:
    out = _constant(_ONE_TERM, n)
    for _ in range(k):
        out = _mul(out, a)
    return out


def _rational_function(c: Basic, index: dict, n: int) -> tuple[dict, dict]:
    """(numerator, denominator) of ``c``; equal denominators of a sum's terms are kept, others multiplied."""
    kind = type(c)
    if kind in _RATIONAL_TYPES:
        return _constant(Fraction(int(c.p), int(c.q)), n), _constant(_ONE_TERM, n)
    if kind is Symbol or kind is Trace:
        exponents = [0] * n
        exponents[index[c]] = 1
        return {tuple(exponents): _ONE_TERM}, _constant(_ONE_TERM, n)
    if kind is Pow and type(c.args[1]) not in _RATIONAL_TYPES:  # γ^(Σ kt + c) = γ^c·∏ (γ^t)^k: one monomial
        power = index_power(c)
        if power is None:
            raise CoefficientError(f"{c} is not a power the kernel knows")
        base, constant, terms = power
        top, bottom = [0] * n, [0] * n
        for atom, k in ((base, constant), *((_index_atom(base, symbol), k) for symbol, k in terms)):
            (top if k > 0 else bottom)[index[atom]] += abs(k)
        return {tuple(top): _ONE_TERM}, {tuple(bottom): _ONE_TERM}
    if kind is Pow:
        p, q = _rational_function(c.args[0], index, n)
        k = int(c.args[1])
        if k < 0:
            if not p:
                raise CoefficientError("a coefficient divides by zero")
            p, q, k = q, p, -k
        return _power(p, k, n), _power(q, k, n)
    if kind not in (Add, Mul):
        raise CoefficientError(f"{kind.__name__} is not allowed in a coefficient")
    parts = [_rational_function(a, index, n) for a in c.args]
    p, q = parts[0]
    for p2, q2 in parts[1:]:
        if kind is Mul:
            p, q = _mul(p, p2), _mul(q, q2)
        elif q == q2:
            p = _add(p, p2)
        else:
            p, q = _add(_mul(p, q2), _mul(p2, q)), _mul(q, q2)
    return p, q


def _gcd(p: dict, q: dict, n: int) -> dict:
    """A greatest common divisor of ``p`` and ``q`` (up to a constant factor).

    It lies in the variables both have, and divides each coefficient of ``p`` and of ``q`` read as
    polynomials in the others: so it is the gcd of those coefficients, a smaller problem, computed by
    SymPy's sparse polynomials after charging an estimate of its cost (one too large is refused).
    """
    charge((len(p) + len(q)) * n)
    in_p = {i for m in p for i in range(n) if m[i]}
    in_q = {i for m in q for i in range(n) if m[i]}
    shared = sorted(in_p & in_q)
    inner = set(shared)
    if not shared:
        return _constant(_ONE_TERM, n)
    parts: list[dict] = []
    for poly in (p, q):
        groups: dict = {}
        for m, v in poly.items():
            outer = tuple(e for i, e in enumerate(m) if i not in inner)
            groups.setdefault(outer, {})[tuple(m[i] for i in shared)] = v
        parts += groups.values()
    parts.sort(key=lambda part: (len(part), sorted(part.items())))
    ring, *_ = sympy.polys.rings.ring([Symbol(f"x{i}") for i in range(len(shared))], sympy.QQ)
    g = ring.from_dict({m: sympy.QQ(v.numerator, v.denominator) for m, v in parts[0].items()})
    for part in parts[1:]:
        if g.is_ground:
            break
        degree = max(sum(m) for m in part) + max(sum(m) for m in g.keys())
        cost = (len(g) + len(part)) * len(shared) * (degree + 1)
        if cost > MAX_GCD_UNITS:
            raise CoefficientError("a coefficient is too large to bring to its normal form (its common factors)")
        charge(cost)
        g = g.gcd(ring.from_dict({m: sympy.QQ(v.numerator, v.denominator) for m, v in part.items()}))
    out: dict = {}
    for m, v in g.items():
        exponents = [0] * n
        for i, e in zip(shared, m, strict=True):
            exponents[i] = e
        out[tuple(exponents)] = Fraction(int(v.numerator), int(v.denominator))
    return out


def _exquo(p: dict, g: dict, generators: list) -> dict:
    """``p / g``, exactly (``g`` divides ``p``)."""
    charge(len(p) * len(g) * _width(p) + 1)
    ring, *_ = sympy.polys.rings.ring([Symbol(f"x{i}") for i in range(len(generators))], sympy.QQ)
    to_ring = lambda a: ring.from_dict({m: sympy.QQ(v.numerator, v.denominator) for m, v in a.items()})  # noqa: E731
    out = to_ring(p).exquo(to_ring(g))
    return {m: Fraction(int(v.numerator), int(v.denominator)) for m, v in out.items()}


def _as_expr(p: dict, generators: list) -> Expr:
    charge(len(p) * (AS_EXPR_UNITS + len(generators)))  # SymPy builds and sorts a term in ~100 µs
    return Add(*[Mul(Rational(v.numerator, v.denominator),
                     *[Pow(g, e) for g, e in zip(generators, m, strict=True) if e]) for m, v in sorted(p.items())])
