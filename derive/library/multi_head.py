"""Multi-head linear attention on a block split of the features; orthogonal blocks give OLS."""

from __future__ import annotations

from sympy import Q
from sympy.matrices.expressions import Identity, MatrixSymbol, ZeroMatrix

from derive.authoring import ProofBuilder, dim, orthogonal, predicate, theorem
from derive.authoring.constructions import linear_attention, ols_predictions, spectral_factor
from derive.kernel import Definition, Hypothesis, Proof
from derive.kernel.terms import add, block, mul, transpose

from .base import Y, k, m, n

p1, p2, d = dim("p_1"), dim("p_2"), dim("d")
X, X_q = MatrixSymbol("X", n, p1 + p2), MatrixSymbol("X_q", m, p1 + p2)
X1, X2 = MatrixSymbol("X_1", n, p1), MatrixSymbol("X_2", n, p2)
Q1, Q2 = MatrixSymbol("X_q1", m, p1), MatrixSymbol("X_q2", m, p2)
V1, V2 = MatrixSymbol("V_1", p1, p1), MatrixSymbol("V_2", p2, p2)
Lam1, Lam2 = MatrixSymbol("Lambda_1", p1, p1), MatrixSymbol("Lambda_2", p2, p2)
L1, L2 = MatrixSymbol("L_1", p1, p1), MatrixSymbol("L_2", p2, p2)
H1, H2 = MatrixSymbol("H_1", m, k), MatrixSymbol("H_2", m, k)
W_O, W_O1, W_O2 = MatrixSymbol("W_O", k + k, d), MatrixSymbol("W_O1", k, d), MatrixSymbol("W_O2", k, d)
W_sum = MatrixSymbol("W_sum", k + k, k)


def _spectral(name: str, Xi, Vi, Lami) -> list[Hypothesis]:
    """XᵢᵀXᵢ = VᵢΛᵢVᵢᵀ with VᵢᵀVᵢ = I (Vᵢ is square, so this makes it orthogonal; the proof needs no more)."""
    return [Hypothesis(f"gram_{name}_spectral", mul(transpose(Xi), Xi), mul(Vi, Lami, transpose(Vi))),
            *orthogonal(f"V_{name}", Vi)[:1], predicate(f"Lambda_{name}_diagonal", Q.diagonal, Lami),
            predicate(f"Lambda_{name}_positive", Q.positive_definite, Lami)]


_U = MatrixSymbol("U", n, p1 + p2)  # orthonormal columns: X_i = U E_i S_i V_iᵀ are orthogonal blocks
_S1, _S2 = MatrixSymbol("S_1", p1, p1), MatrixSymbol("S_2", p2, p2)
_E1 = block([[Identity(p1)], [ZeroMatrix(p2, p1)]])
_E2 = block([[ZeroMatrix(p1, p2)], [Identity(p2)]])


#: What the theorem means for transformers (printed after its proof in the article).
MEANING_MULTI_HEAD_ATTENTION = (
    r"Multi-head attention with a concatenation and an output projection is the sum of its heads. When the "
    r"heads see orthogonal blocks of features, each head can hold the spectral factor of its own block, "
    r"and their sum is OLS on all the features: heads split the slow memory block by block."
)


@theorem(meaning=MEANING_MULTI_HEAD_ATTENTION, sampling={
    "n": p1 + p2 + 1, "U": "orthogonal", "S_1": "diagonal_positive", "S_2": "diagonal_positive",
    "X_1": mul(_U, _E1, _S1, transpose(V1)), "X_2": mul(_U, _E2, _S2, transpose(V2)),
    "Lambda_1": mul(_S1, _S1), "Lambda_2": mul(_S2, _S2)}, glossary={
    "X": "design matrix, its features split into two blocks", "X_1": "first block of features",
    "X_2": "second block of features", "X_q": "queries, split like $X$", "X_q1": "queries' first block",
    "X_q2": "queries' second block", "V_1": "eigenvectors of $X_1^{\\top}X_1$",
    "V_2": "eigenvectors of $X_2^{\\top}X_2$",
    "Lambda_1": "eigenvalues of $X_1^{\\top}X_1$", "Lambda_2": "eigenvalues of $X_2^{\\top}X_2$",
    "L_1": "spectral factor of head 1", "L_2": "spectral factor of head 2", "H_1": "output of head 1",
    "H_2": "output of head 2", "W_O": "output projection, split by heads", "W_O1": "rows of $W_O$ for head 1",
    "W_O2": "rows of $W_O$ for head 2", "W_sum": "output projection that adds the heads",
    "p_1": "features in the first block", "p_2": "features in the second block", "d": "output width",
})
def multi_head_attention() -> Proof:
    b = ProofBuilder(
        "multi_head_attention",
        "Two attention heads on orthogonal feature blocks are OLS",
        "Split the features into blocks, X = [X₁ X₂] and X_q = [X_q1 X_q2], and let head i attend with the "
        "spectral factor L_i = V_iΛ_i^{-1/2} of X_iᵀX_i = V_iΛ_iV_iᵀ: H_i = (X_qi L_i)(X_i L_i)ᵀ Y. The multi-head "
        "output, concatenation then W_O = [W_O1; W_O2], is the sum of the heads: [H₁ H₂] W_O = H₁W_O1 + H₂W_O2. "
        "When X₁ᵀX₂ = 0, the heads added (W_O = [I; I]) give OLS on X: X_q(XᵀX)⁻¹XᵀY = [H₁ H₂][I; I].",
        [Hypothesis("features_split", X, block([[X1, X2]])), Hypothesis("queries_split", X_q, block([[Q1, Q2]])),
         Hypothesis("blocks_orthogonal", mul(transpose(X1), X2), ZeroMatrix(p1, p2)),
         *_spectral("1", X1, V1, Lam1), *_spectral("2", X2, V2, Lam2)],
        [Definition("L_1", L1, spectral_factor(V1, Lam1)), Definition("L_2", L2, spectral_factor(V2, Lam2)),
         Definition("H_1", H1, linear_attention(mul(Q1, L1), mul(X1, L1), Y)),
         Definition("H_2", H2, linear_attention(mul(Q2, L2), mul(X2, L2), Y)),
         Definition("W_O", W_O, block([[W_O1], [W_O2]])),
         Definition("W_sum", W_sum, block([[Identity(k)], [Identity(k)]]))],
    )
    b.lemma("concatenate_then_project", mul(block([[H1, H2]]), W_O)).auto(add(mul(H1, W_O1), mul(H2, W_O2)))
    b.lemma("heads_are_ols", ols_predictions(X_q, X, Y)).auto(add(H1, H2))
    b.main(ols_predictions(X_q, X, Y)).auto(mul(block([[H1, H2]]), W_sum))
    return b.proof()
