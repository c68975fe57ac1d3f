"""Symbols, hypotheses and the facts several theorems use, each proved once and cited as ``thm:ID``."""

from __future__ import annotations

from sympy import Q, Rational
from sympy.matrices.expressions import Identity, MatrixSymbol

from derive.authoring import ProofBuilder, dim, orthogonal, predicate, theorem
from derive.authoring.constructions import spectral_factor
from derive.kernel import Definition, Hypothesis, Proof
from derive.kernel.terms import inv, mul, transpose

n, p, m, k = dim("n"), dim("p"), dim("m"), dim("k")
X = MatrixSymbol("X", n, p)  # design matrix, one example per row
Y = MatrixSymbol("Y", n, k)  # targets, one example per row
X_q = MatrixSymbol("X_q", m, p)  # queries, one per row
V = MatrixSymbol("V", p, p)  # eigenvectors of XᵀX
Lam = MatrixSymbol("Lambda", p, p)  # eigenvalues of XᵀX
L = MatrixSymbol("L", p, p)  # the spectral factor V Λ^{-1/2}
I_p = Identity(p)
half = Rational(1, 2)

#: How the article reads the symbols the whole library shares.
GLOSSARY = {
    "X": "design matrix, one example $x_i^{\\top}$ per row",
    "Y": "targets, one row $y_i^{\\top}$ per example",
    "X_q": "queries, one per row",
    "V": "orthogonal matrix of the eigenvectors of $X^{\\top}X$",
    "Lambda": "diagonal matrix of the eigenvalues of $X^{\\top}X$",
    "L": "spectral factor $V\\Lambda^{-1/2}$",
    "n": "number of examples (rows of $X$ and $Y$)",
    "p": "number of features (columns of $X$)",
    "k": "number of target columns (columns of $Y$)",
    "m": "number of queries (rows of $X_q$)",
}

#: XᵀX = V Λ Vᵀ with V orthogonal and Λ diagonal with positive entries.
SPECTRAL_HYPOTHESES = [
    Hypothesis("gram_spectral", mul(transpose(X), X), mul(V, Lam, transpose(V))),
    *orthogonal("V", V),
    predicate("Lambda_diagonal", Q.diagonal, Lam),
    predicate("Lambda_positive", Q.positive_definite, Lam),
]

#: L = V Λ^{-1/2}.
SPECTRAL_DEFINITION = Definition("L", L, spectral_factor(V, Lam))

_d = dim("d")
_U = MatrixSymbol("U", _d, _d)


def cite_orthogonal(U) -> tuple:
    """The instance that cites :func:`orthogonal_inverse` or :func:`orthogonal_transpose_inverse` for ``U``."""
    return ((_d, U.shape[0]), (_U, U))


#: What the theorem means for transformers (printed after its proof in the article).
MEANING_ORTHOGONAL_INVERSE = (
    r"An orthogonal matrix is undone by its transpose: no inversion is ever computed. This is the step that "
    r"lets the eigenvectors $V$ of $X^{\top}X$ pass through the inverse in "
    r"Theorem~\ref{thm:spectral_precision}, and the reason a rotation of the query--key space costs nothing "
    r"(Theorem~\ref{thm:gauge_invariance})."
)


@theorem(meaning=MEANING_ORTHOGONAL_INVERSE, glossary={"U": "an orthogonal matrix", "d": "size of a square matrix"})
def orthogonal_inverse() -> Proof:
    (rows,) = orthogonal("U", _U)[1:]
    b = ProofBuilder("orthogonal_inverse", "The inverse of an orthogonal matrix is its transpose",
                     "A square matrix U with U Uᵀ = I is invertible and U⁻¹ = Uᵀ.", [rows], [])
    I = Identity(_d)
    (b.main(inv(_U))
     .to(mul(inv(_U), I), "identity_mul")
     .rw("hyp:U_orthonormal_rows", at=I)
     .rw("inverse_cancel", at=mul(inv(_U), _U))
     .rw("identity_mul")
     .qed(transpose(_U)))
    return b.proof()


#: What the theorem means for transformers (printed after its proof in the article).
MEANING_ORTHOGONAL_TRANSPOSE_INVERSE = (
    r"The same fact from the other side: orthonormal columns make $U^{\top}$ invertible with inverse $U$. "
    r"Together with Theorem~\ref{thm:orthogonal_inverse} it is all the linear algebra of orthogonality the "
    r"spectral theorems need."
)


@theorem(meaning=MEANING_ORTHOGONAL_TRANSPOSE_INVERSE,
         glossary={"U": "an orthogonal matrix", "d": "size of a square matrix"})
def orthogonal_transpose_inverse() -> Proof:
    (columns,) = orthogonal("U", _U)[:1]
    b = ProofBuilder("orthogonal_transpose_inverse", "The inverse of the transpose of an orthogonal matrix",
                     "A square matrix U with Uᵀ U = I has (Uᵀ)⁻¹ = U.", [columns], [])
    I = Identity(_d)
    (b.main(inv(transpose(_U)))
     .to(mul(inv(transpose(_U)), I), "identity_mul")
     .rw("hyp:U_orthonormal_columns", at=I)
     .rw("inverse_cancel", at=mul(inv(transpose(_U)), transpose(_U)))
     .rw("identity_mul")
     .qed(_U))
    return b.proof()


#: What the theorem means for transformers (printed after its proof in the article).
MEANING_SPECTRAL_PRECISION = (
    r"The precision matrix $(X^{\top}X)^{-1}$ splits into a factor and its transpose, $LL^{\top}$ with $L = "
    r"V\Lambda^{-1/2}$. In attention, $L$ is the weight applied to queries and to keys alike, and the product "
    r"$LL^{\top}$ is the \emph{slow memory}: it depends on the design only, not on the targets or the queries, "
    r"so it can sit in a layer's weights."
)


@theorem(meaning=MEANING_SPECTRAL_PRECISION, glossary=GLOSSARY)
def spectral_precision() -> Proof:
    b = ProofBuilder(
        "spectral_precision",
        "The spectral factor factors the precision",
        "If XᵀX = VΛVᵀ with V orthogonal and Λ diagonal with positive entries, and L = VΛ^{-1/2}, then "
        "(XᵀX)⁻¹ = L Lᵀ: the slow memory is the precision matrix.",
        SPECTRAL_HYPOTHESES,
        [SPECTRAL_DEFINITION],
    )
    b.cite("orthogonal_transpose_inverse")
    b.cite("orthogonal_inverse")
    b.main(inv(mul(transpose(X), X))).auto(mul(L, transpose(L)))
    return b.proof()
