"""Stating hypotheses: dimension symbols, predicate hypotheses, orthogonality."""

from __future__ import annotations

from sympy import S, Symbol
from sympy.assumptions.assume import Predicate
from sympy.matrices.expressions import Identity, MatrixExpr

from ..kernel import PREDICATES, Hypothesis
from ..kernel.terms import mul, transpose

__all__ = ["dim", "orthogonal", "predicate", "scalar"]


def dim(name: str) -> Symbol:
    """A dimension: a positive-integer symbol (``n = dim("n")``)."""
    if not isinstance(name, str) or not name:
        raise ValueError("a dimension needs a non-empty name")
    return Symbol(name, integer=True, positive=True)


def scalar(name: str, positive: bool = False) -> Symbol:
    """A real scalar symbol, positive by declaration if ``positive`` (``lam = scalar("lambda", positive=True)``).

    Usable as a coefficient anywhere a number is: ``mul(lam, Identity(p))``, ``mul(1 / lam, A)``,
    ``add(mul(transpose(X), X), mul(lam, Identity(p)))``.  The kernel divides only by scalars it can show
    non-zero: positive ones, positive constants, and sums and products of those.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"a scalar needs an identifier as its name, not {name!r}")
    if not isinstance(positive, bool):
        raise TypeError("positive must be True or False")
    return Symbol(name, positive=True) if positive else Symbol(name, real=True)


def predicate(name: str, pred: Predicate, matrix: MatrixExpr) -> Hypothesis:
    """The hypothesis ``pred(matrix)``, e.g. ``predicate("A_invertible", Q.invertible, A)``.

    ``pred`` is one of ``Q.invertible``, ``Q.positive_definite``, ``Q.symmetric``, ``Q.diagonal``.
    """
    if not any(pred == known for known in PREDICATES.values()):
        raise ValueError(f"{pred} is not a predicate the kernel knows (use Q.{', Q.'.join(PREDICATES)})")
    return Hypothesis(name, pred(matrix), S.true)


def orthogonal(name: str, U: MatrixExpr) -> list[Hypothesis]:
    """``UᵀU = I`` (``NAME_orthonormal_columns``) and, for square U, ``UUᵀ = I`` (``NAME_orthonormal_rows``)."""
    rows, cols = U.shape
    out = [Hypothesis(f"{name}_orthonormal_columns", mul(transpose(U), U), Identity(cols))]
    if rows == cols:
        out.append(Hypothesis(f"{name}_orthonormal_rows", mul(U, transpose(U)), Identity(rows)))
    return out
