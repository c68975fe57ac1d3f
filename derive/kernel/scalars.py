"""Scalar coefficients: rational functions of scalar symbols and of 1×1 matrices read as scalars.

Part of the trusted core.  A product's coefficient is a SymPy scalar expression built from rational
numbers, scalar symbols (real, or positive by declaration) and ``Trace(m)`` for a 1×1 matrix term ``m``
(the 1×1 matrix read as the scalar it holds), with +, × and integer powers.  Its normal form is computed
exactly by polynomial arithmetic over the rationals: numerator and denominator coprime polynomials in those
atoms, the denominator monic, both expanded.  Two coefficients are equal as rational functions exactly
when their normal forms are equal.  Nothing here judges signs; :mod:`.judgments` does, with the context.
"""

from __future__ import annotations

import functools

import sympy
from sympy import Add, Basic, Expr, Integer, Mul, Poly, Pow, Rational, S, Symbol
from sympy.core.sorting import default_sort_key
from sympy.matrices.expressions import Trace

__all__ = ["COEFFICIENT_TYPES", "MAX_EXPONENT", "CoefficientError", "atoms_of", "canon_coefficient",
           "is_number", "is_one_by_one", "is_scalar_symbol", "require_coefficient", "scalar_kind"]

#: The assumptions a scalar symbol is made with (``derive.scalar``): real, or positive.
SCALAR_ASSUMPTIONS = {"real": {"real": True}, "positive": {"positive": True}}
MAX_EXPONENT = 64  # integer powers in a coefficient: |exponent| at most this
MAX_COEFFICIENT_NODES = 400  # nodes of one coefficient expression
MAX_EXPANDED_TERMS = 20_000  # estimated terms of its numerator and denominator once over a common denominator

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


def is_number(c: Basic) -> bool:
    """A rational number (the coefficients the kernel had before scalar symbols)."""
    return type(c) in _RATIONAL_TYPES


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
            if not is_scalar_symbol(node):
                raise CoefficientError(f"{node} is not a scalar symbol (make one with derive.scalar)")
        elif kind is Trace:
            (matrix,) = node.args
            if not is_one_by_one(matrix):
                raise CoefficientError("only a 1×1 matrix may be read as a scalar")
            require_matrix(matrix)
        elif kind is Pow:
            base, exponent = node.args
            if type(exponent) not in _RATIONAL_TYPES or exponent.q != 1 or abs(exponent) > MAX_EXPONENT:
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
        n, d = _expanded_size(c.args[0])
        k = int(c.args[1])
        n, d = (n, d) if k >= 0 else (d, n)
        return min(n ** abs(k), cap) if n > 1 else 1, min(d ** abs(k), cap) if d > 1 else 1
    return 1, 1


def atoms_of(c: Basic) -> set[Basic]:
    """The scalar symbols and Trace atoms of a coefficient."""
    out: set[Basic] = set()
    stack = [c]
    while stack:
        node = stack.pop()
        if type(node) is Symbol or type(node) is Trace:
            out.add(node)
        elif type(node) in (Add, Mul, Pow):
            stack += list(node.args)
    return out


@functools.lru_cache(maxsize=16384)
def canon_coefficient(c: Basic, canon_matrix=None) -> Expr:
    """The normal form of a coefficient (``canon_matrix`` brings the matrices inside Trace atoms to theirs).

    Numerator and denominator are coprime polynomials over the rationals in the coefficient's atoms (sorted
    by SymPy's default sort key), expanded, the denominator monic; a rational number stays itself.
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
    # the Trace atoms stand aside as placeholders while SymPy brings c over a common denominator: together()
    # rebuilds what it walks through, and would rewrite a Trace's matrix (Trace((μI)ᵀ) into Trace(μI)), leaving
    # an atom no generator names
    placeholders = {g: sympy.Dummy(f"trace{i}") for i, g in enumerate(generators) if type(g) is Trace}
    if placeholders:
        c = c.xreplace(placeholders)
        generators = [placeholders.get(g, g) for g in generators]
    numerator, denominator = sympy.fraction(sympy.together(c))
    p = Poly(numerator, *generators, domain="QQ")
    q = Poly(denominator, *generators, domain="QQ")
    if q.is_zero:
        raise CoefficientError("a coefficient divides by zero")
    g = p.gcd(q)
    if not g.is_one:
        p, q = p.exquo(g), q.exquo(g)
    lead = q.LC()
    p, q = p.quo_ground(lead), q.monic()
    if p.is_zero:
        return S.Zero
    back = {v: k for k, v in placeholders.items()}
    top = p.as_expr().xreplace(back)
    if q.is_one:
        return top
    return Mul(top, Pow(q.as_expr().xreplace(back), -1))
