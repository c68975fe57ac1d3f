"""A user's theorem file (public authoring API only) whose statements are defined only by judgments of issue 29.

GLS by whitening: with Σ = LLᵀ and X_w := L⁻¹X, Y_w := L⁻¹Y, the whitened Gram matrix X_wᵀX_w is invertible
because it unfolds to XᵀΣ⁻¹X, which is invertible by hypothesis (no lemma needed for the claim to be defined).
Woodbury: A + UCV is invertible when A, C and the capacitance C⁻¹ + VA⁻¹U are (the statement (A + UCV)⁻¹(A + UCV)
= I is defined only by that judgment).  The identity (A + UCV)⁻¹ = A⁻¹ − A⁻¹U(C⁻¹ + VA⁻¹U)⁻¹VA⁻¹ itself is not
here: ``.auto()`` finds no chain for it (nor for (A + UCV)(A⁻¹ − …) = I) within its search.
"""

from sympy import Identity, MatrixSymbol, Q

from derive import Definition, Hypothesis, ProofBuilder, add, dim, inv, mul, predicate, theorem, transpose

n, p, k, m = dim("n"), dim("p"), dim("k"), dim("m")
X, Y, L, Sigma = MatrixSymbol("X", n, p), MatrixSymbol("Y", n, k), MatrixSymbol("L", n, n), MatrixSymbol("Sigma", n, n)
X_w, Y_w = MatrixSymbol("X_w", n, p), MatrixSymbol("Y_w", n, k)


def gls_gram():
    """XᵀΣ⁻¹X."""
    return mul(transpose(X), inv(Sigma), X)


@theorem(glossary={"L": "a square root of the covariance, $\\Sigma = LL^{\\top}$",
                   "X_w": "whitened regressors $L^{-1}X$", "Y_w": "whitened responses $L^{-1}Y$"})
def gls_by_whitening():
    b = ProofBuilder(
        "gls_by_whitening", "GLS is OLS on whitened data",
        "If Σ = LLᵀ with L invertible and XᵀΣ⁻¹X invertible, then with X_w = L⁻¹X and Y_w = L⁻¹Y, "
        "(X_wᵀX_w)⁻¹X_wᵀY_w = (XᵀΣ⁻¹X)⁻¹XᵀΣ⁻¹Y.",
        [Hypothesis("cholesky", Sigma, mul(L, transpose(L))),
         predicate("L_invertible", Q.invertible, L),
         predicate("gls_gram_invertible", Q.invertible, gls_gram())],
        [Definition("X_w", X_w, mul(inv(L), X)), Definition("Y_w", Y_w, mul(inv(L), Y))],
    )
    b.main(mul(inv(mul(transpose(X_w), X_w)), transpose(X_w), Y_w)).auto(
        mul(inv(gls_gram()), transpose(X), inv(Sigma), Y))
    return b.proof()


A, U, C, V = MatrixSymbol("A", n, n), MatrixSymbol("U", n, k), MatrixSymbol("C", k, k), MatrixSymbol("V", k, n)


def capacitance():
    """C⁻¹ + VA⁻¹U."""
    return add(inv(C), mul(V, inv(A), U))


@theorem(glossary={"C": "an invertible core", "U": "a tall factor", "V": "a wide factor"})
def woodbury_invertible():
    b = ProofBuilder(
        "woodbury_invertible", "A Woodbury update is invertible",
        "If A, C and the capacitance C⁻¹ + VA⁻¹U are invertible, then A + UCV is invertible: "
        "(A + UCV)⁻¹(A + UCV) = I.",
        [predicate("A_invertible", Q.invertible, A), predicate("C_invertible", Q.invertible, C),
         predicate("capacitance_invertible", Q.invertible, capacitance())],
    )
    update = add(A, mul(U, C, V))
    b.main(mul(inv(update), update)).rw("inverse_cancel").qed(Identity(n))
    return b.proof()
