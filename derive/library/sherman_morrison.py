"""The Sherman–Morrison formula: the inverse after a rank-one update, the step of recursive least squares."""

from __future__ import annotations

from sympy import Q
from sympy.matrices.expressions import Identity, MatrixSymbol

from derive.authoring import ProofBuilder, predicate, theorem
from derive.kernel import Proof
from derive.kernel.terms import add, inv, mul, transpose

from .base import p

A = MatrixSymbol("A", p, p)
u, v = MatrixSymbol("u", p, 1), MatrixSymbol("v", p, 1)


def denominator(A, u, v):
    """1 + vᵀA⁻¹u, a 1×1 matrix."""
    return add(Identity(1), mul(transpose(v), inv(A), u))


def rank_one_inverse(A, u, v):
    """A⁻¹ − A⁻¹u (1 + vᵀA⁻¹u)⁻¹ vᵀA⁻¹."""
    return add(inv(A), mul(-1, inv(A), u, inv(denominator(A, u, v)), transpose(v), inv(A)))


#: What the theorem means for transformers (printed after its proof in the article).
MEANING_SHERMAN_MORRISON = (
    r"A rank-one change of the slow memory needs no new inversion: the precision after one more token is "
    r"the old precision minus a rank-one correction, scaled by the $1 \times 1$ number $1 + "
    r"v^{\top}A^{-1}u$. This is the update that makes a recurrent attention layer exact for least squares "
    r"(Theorem on causal attention below)."
)


@theorem(meaning=MEANING_SHERMAN_MORRISON,
         glossary={"A": "an invertible matrix", "u": "a column vector", "v": "a column vector"})
def sherman_morrison() -> Proof:
    b = ProofBuilder(
        "sherman_morrison",
        "The Sherman–Morrison formula",
        "If A is invertible and 1 + vᵀA⁻¹u ≠ 0, then A + uvᵀ is invertible and "
        "(A + uvᵀ)⁻¹ = A⁻¹ − A⁻¹u (1 + vᵀA⁻¹u)⁻¹ vᵀA⁻¹: a rank-one write to the fast memory updates the slow "
        "memory by a rank-one correction, with no new inverse of a p×p matrix.",
        [predicate("A_invertible", Q.invertible, A),
         predicate("denominator_invertible", Q.invertible, denominator(A, u, v))],
    )
    b.main(inv(add(A, mul(u, transpose(v))))).auto(rank_one_inverse(A, u, v))
    return b.proof()
