"""Symbols, hypotheses and lemmas shared by the theorem families."""

from __future__ import annotations

from sympy import Q, Rational, S
from sympy.matrices.expressions import Identity, MatrixSymbol

from derive.constructions import dim, spectral_factor
from derive.kernel import Definition, Hypothesis
from derive.tactics import ProofBuilder
from derive.terms import inv, mul, power, transpose

n, p, m, k = dim("n"), dim("p"), dim("m"), dim("k")
X = MatrixSymbol("X", n, p)  # design matrix, one example per row
Y = MatrixSymbol("Y", n, k)  # targets, one example per row
X_q = MatrixSymbol("X_q", m, p)  # queries, one per row
V = MatrixSymbol("V", p, p)  # eigenvectors of XᵀX
Lam = MatrixSymbol("Lambda", p, p)  # eigenvalues of XᵀX
L = MatrixSymbol("L", p, p)  # the spectral factor V Λ^{-1/2}
I_p = Identity(p)
half = Rational(1, 2)


def predicate(name: str, pred, matrix) -> Hypothesis:
    return Hypothesis(name, pred(matrix), S.true)


def orthogonal(name: str, U) -> list[Hypothesis]:
    """UᵀU = I and, for square U, U Uᵀ = I."""
    rows, cols = U.shape
    out = [Hypothesis(f"{name}_orthonormal_columns", mul(transpose(U), U), Identity(cols))]
    if rows == cols:
        out.append(Hypothesis(f"{name}_orthonormal_rows", mul(U, transpose(U)), Identity(rows)))
    return out


#: XᵀX = V Λ Vᵀ with V orthogonal and Λ diagonal with positive entries.
SPECTRAL_HYPOTHESES = [
    Hypothesis("gram_spectral", mul(transpose(X), X), mul(V, Lam, transpose(V))),
    *orthogonal("V", V),
    predicate("Lambda_diagonal", Q.diagonal, Lam),
    predicate("Lambda_positive", Q.positive_definite, Lam),
]

#: L = V Λ^{-1/2}.
SPECTRAL_DEFINITION = Definition("L", L, spectral_factor(V, Lam))


def inverse_of_orthogonal(b: ProofBuilder, U, name: str):
    """Lemmas U⁻¹ = Uᵀ (from U Uᵀ = I) and (Uᵀ)⁻¹ = U (from Uᵀ U = I) for a square U."""
    I = Identity(U.shape[0])
    (b.lemma(f"{name}_inverse", inv(U))
     .to(mul(inv(U), I), "identity_mul")
     .rw(f"hyp:{name}_orthonormal_rows", at=I)
     .rw("inverse_cancel", at=mul(inv(U), U))
     .rw("identity_mul")
     .qed(transpose(U)))
    (b.lemma(f"{name}_transpose_inverse", inv(transpose(U)))
     .to(mul(inv(transpose(U)), I), "identity_mul")
     .rw(f"hyp:{name}_orthonormal_columns", at=I)
     .rw("inverse_cancel", at=mul(inv(transpose(U)), transpose(U)))
     .rw("identity_mul")
     .qed(U))


def spectral_precision(b: ProofBuilder):
    """Lemma ``precision``: (XᵀX)⁻¹ = L Lᵀ (the slow memory is the precision matrix)."""
    inverse_of_orthogonal(b, V, "V")
    root = power(Lam, -half)
    (b.lemma("precision", inv(mul(transpose(X), X)))
     .rw("hyp:gram_spectral")
     .rw("inverse_product")
     .rw("lemma:V_transpose_inverse")
     .rw("lemma:V_inverse")
     .to(mul(V, root, root, transpose(V)), "power_combine")
     .to(mul(V, root, transpose(root), transpose(V)), "transpose_symmetric")
     .to(mul(V, root, transpose(mul(V, root))), "transpose_product")
     .rw("def:L", at=mul(V, root))
     .rw("def:L", at=mul(V, root))
     .qed(mul(L, transpose(L))))
