"""Rank-deficient X: the attention form over the positive eigenvalues gives the minimum-norm solution."""

from __future__ import annotations

from sympy import Q, Rational
from sympy.matrices.expressions import MatrixSymbol

from derive.authoring import ProofBuilder, dim, orthogonal, predicate, theorem
from derive.authoring.constructions import spectral_factor
from derive.kernel import Definition, Hypothesis, Proof
from derive.kernel.terms import inv, mul, power, transpose

from .base import X, Y, n, p

#: What the theorem means for transformers (printed after its proof in the article).
MEANING_PSEUDO_INVERSE = (
    r"Full rank is not needed: when $X$ has rank $r < p$, the factor built from the $r$ positive eigenvalues "
    r"gives the minimum-norm least-squares solution, the one of the Moore--Penrose pseudo-inverse. An "
    r"attention layer whose query--key factor ignores the null directions of the design still computes the "
    r"canonical regression answer."
)


@theorem(meaning=MEANING_PSEUDO_INVERSE, glossary={
    "U_r": "left singular vectors of $X$ for its $r$ positive singular values",
    "V_r": "right singular vectors of $X$ for its $r$ positive singular values",
    "Lambda_r": "diagonal matrix of the positive eigenvalues of $X^{\\top}X$",
    "L": "factor $V_r\\Lambda_r^{-1/2}$ over the positive eigenvalues",
    "beta": "the attention-form coefficients $LL^{\\top}X^{\\top}Y$",
    "W": "weights that write $\\beta = X^{\\top}W$ in the row space of $X$",
    "r": "rank of $X$: the number of positive eigenvalues of $X^{\\top}X$",
})
def pseudo_inverse() -> Proof:
    r = dim("r")
    U, V_r, Lam_r = MatrixSymbol("U_r", n, r), MatrixSymbol("V_r", p, r), MatrixSymbol("Lambda_r", r, r)
    L, beta, W = MatrixSymbol("L", p, r), MatrixSymbol("beta", p, Y.shape[1]), MatrixSymbol("W", n, Y.shape[1])
    half = Rational(1, 2)
    root, inv_root = power(Lam_r, half), power(Lam_r, -half)
    b = ProofBuilder(
        "pseudo_inverse",
        "Rank-deficient data: the minimum-norm solution",
        "Let X have rank r with thin SVD X = U_r Λ_r^{1/2} V_rᵀ (U_rᵀU_r = V_rᵀV_r = I, Λ_r diagonal with the "
        "positive eigenvalues of XᵀX), so XᵀX = V_r Λ_r V_rᵀ. With L = V_r Λ_r^{-1/2} the attention form "
        "β = L Lᵀ XᵀY solves the normal equations XᵀX β = XᵀY and lies in the row space of X (β = XᵀW with "
        "W = U_r Λ_r^{-1} U_rᵀ Y); a least-squares solution in the row space is the minimum-norm one, X⁺Y, "
        "and indeed β = V_r Λ_r^{-1/2} U_rᵀ Y.",
        [
            predicate("Lambda_r_diagonal", Q.diagonal, Lam_r),
            predicate("Lambda_r_positive", Q.positive_definite, Lam_r),
            Hypothesis("thin_svd", X, mul(U, root, transpose(V_r))),
            *orthogonal("U_r", U),
            *orthogonal("V_r", V_r),
        ],
        [
            Definition("L", L, spectral_factor(V_r, Lam_r)),
            Definition("beta", beta, mul(L, transpose(L), transpose(X), Y)),
            Definition("W", W, mul(U, inv(Lam_r), transpose(U), Y)),
        ],
    )
    b.lemma("pinv_formula", beta).auto(mul(V_r, inv_root, transpose(U), Y))
    b.lemma("normal_equations", mul(transpose(X), X, beta)).auto(mul(transpose(X), Y))
    b.main(beta).auto(mul(transpose(X), W))
    return b.proof()
