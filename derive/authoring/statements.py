"""Stating hypotheses: dimension symbols, predicate hypotheses, orthogonality."""

from __future__ import annotations

from sympy import Basic, S, Symbol
from sympy.assumptions.assume import Predicate
from sympy.matrices.expressions import Identity, MatrixExpr

from ..kernel import PREDICATES, SCALAR_PREDICATES, Family, Hypothesis
from ..kernel.terms import FamilyMatrix, mul, transpose

__all__ = ["MatrixFamily", "dim", "family", "index", "orthogonal", "predicate", "scalar"]


def dim(name: str) -> Symbol:
    """A dimension: a positive-integer symbol (``n = dim("n")``)."""
    if not isinstance(name, str) or not name:
        raise ValueError("a dimension needs a non-empty name")
    return Symbol(name, integer=True, positive=True)


def index(name: str) -> Symbol:
    """An index: a natural-number symbol (0, 1, 2, ...) for layers, time steps or prefixes (``t = index("t")``).

    It may be used as a dimension (the prefix X_t has t rows; X_0 is an empty matrix) and to index a family
    of matrices; a lemma may be proved for every value of it by induction (:meth:`ProofBuilder.induction`).
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"an index needs an identifier as its name, not {name!r}")
    return Symbol(name, integer=True, nonnegative=True)


class MatrixFamily:
    """A family of matrices F[0], F[1], ...: ``F[t]``, ``F[t + 1]``, ``F[0]`` are its members (kernel terms).

    Made by :func:`family`.  Free (any sequence of matrices of the given shapes) until :meth:`recurrence`
    defines it by a value at 0 and a step.  Pass it to :class:`ProofBuilder` (``families=[...]``), which puts
    its declaration in the proof.
    """

    def __init__(self, name: str, shape, bound: str = "s"):
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"a family needs an identifier as its name, not {name!r}")
        self.name = name
        self.bound = index(bound)
        rows, cols = shape(self.bound) if callable(shape) else shape
        self.rows, self.cols = _dimension(rows), _dimension(cols)
        self.base = self._step = None

    def __getitem__(self, position) -> FamilyMatrix:
        position = _dimension(position)
        return FamilyMatrix(self.name, position, self.rows.xreplace({self.bound: position}),
                            self.cols.xreplace({self.bound: position}))

    def recurrence(self, base: MatrixExpr, step) -> MatrixFamily:
        """Define the family: F[0] = ``base``, F[s + 1] = ``step(s)`` (a term that may use F[s]); returns it.

        Steps cite the two equations as ``base:NAME`` and ``step:NAME`` (with the instance ``(s, e)`` for
        F[e + 1]).
        """
        self.base, self._step = base, step
        return self

    @property
    def step(self) -> MatrixExpr | None:
        """F[s + 1] in terms of the bound index s (a step given as a function is called now, so it may name the
        family it defines: ``X.recurrence(base, lambda s: block([[X[s]], [x[s + 1].T]]))``)."""
        return self._step(self.bound) if callable(self._step) else self._step

    @property
    def declaration(self) -> Family:
        """The kernel's declaration of this family."""
        return Family(self.name, self.bound, self.rows, self.cols, self.base, self.step)

    def __repr__(self) -> str:
        return f"MatrixFamily({self.name!r})"


def _dimension(value) -> Basic:
    """An int or a SymPy expression as a SymPy expression (never text: nothing here parses strings)."""
    if isinstance(value, bool) or not isinstance(value, (int, Basic)):
        raise TypeError(f"a dimension or an index must be an int or a SymPy expression, not {type(value).__name__}")
    return S(value) if isinstance(value, int) else value


def family(name: str, shape, bound: str = "s") -> MatrixFamily:
    """A family of matrices; ``shape`` is (rows, cols), or a function of the index giving them.

    ``x = family("x", (p, 1))`` is a sequence of vectors x[1], x[2], ...; ``X = family("X", lambda s: (s, p))``
    has s rows at index s (X[0] is empty); ``X.recurrence(base, step)`` defines it.  ``bound`` names the index
    symbol the declaration binds (``s`` unless given).
    """
    return MatrixFamily(name, shape, bound)


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

    ``pred`` is one of ``Q.invertible``, ``Q.positive_definite``, ``Q.symmetric``, ``Q.diagonal`` — or, for a scalar
    (a scalar symbol, tr of a 1×1 matrix, a rational function of them), ``Q.nonzero``: the scalar fact c ≠ 0
    (``predicate("sigma_nonzero", Q.nonzero, sigma)``; issue 41).
    """
    known = {**PREDICATES, **SCALAR_PREDICATES}
    if not any(pred == p for p in known.values()):
        raise ValueError(f"{pred} is not a predicate the kernel knows (use Q.{', Q.'.join(known)})")
    return Hypothesis(name, pred(matrix), S.true)


def orthogonal(name: str, U: MatrixExpr) -> list[Hypothesis]:
    """``UᵀU = I`` (``NAME_orthonormal_columns``) and, for square U, ``UUᵀ = I`` (``NAME_orthonormal_rows``)."""
    rows, cols = U.shape
    out = [Hypothesis(f"{name}_orthonormal_columns", mul(transpose(U), U), Identity(cols))]
    if rows == cols:
        out.append(Hypothesis(f"{name}_orthonormal_rows", mul(U, transpose(U)), Identity(rows)))
    return out
