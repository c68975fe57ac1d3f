"""A user's theorem file (public authoring API only) whose statements are defined only by judgments of issue 29.

GLS by whitening: with Σ = LLᵀ and X_w := L⁻¹X, Y_w := L⁻¹Y, the whitened Gram matrix X_wᵀX_w is invertible
because it unfolds to XᵀΣ⁻¹X, which is invertible by hypothesis (no lemma needed for the claim to be defined).
Woodbury: A + UCV is invertible when A, C and the capacitance C⁻¹ + VA⁻¹U are (the statement (A + UCV)⁻¹(A + UCV)
= I is defined only by that judgment), and the Woodbury identity (A + UCV)⁻¹ = A⁻¹ − A⁻¹U(C⁻¹ + VA⁻¹U)⁻¹VA⁻¹,
through the lemma (A + UCV)(A⁻¹ − A⁻¹U(C⁻¹ + VA⁻¹U)⁻¹VA⁻¹) = I (written step by step: ``.auto()`` finds no chain
for either within its search).
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


@theorem(glossary={"C": "an invertible core", "U": "a tall factor", "V": "a wide factor"})
def woodbury():
    I, I_k, A_inv, K = Identity(n), Identity(k), inv(A), capacitance()
    update = add(A, mul(U, C, V))
    inverse = add(A_inv, mul(-1, A_inv, U, inv(K), V, A_inv))
    b = ProofBuilder(
        "woodbury", "The Woodbury identity",
        "If A, C and C⁻¹ + VA⁻¹U are invertible, then (A + UCV)⁻¹ = A⁻¹ − A⁻¹U(C⁻¹ + VA⁻¹U)⁻¹VA⁻¹.",
        [predicate("A_invertible", Q.invertible, A), predicate("C_invertible", Q.invertible, C),
         predicate("capacitance_invertible", Q.invertible, K)],
    )
    # (A + UCV) W = I − UK⁻¹VA⁻¹ + UCVA⁻¹ − UCVA⁻¹UK⁻¹VA⁻¹, and UK⁻¹ + UCVA⁻¹UK⁻¹ = UC(C⁻¹ + VA⁻¹U)K⁻¹ = UC
    chain = b.lemma("right_inverse", mul(update, inverse))
    chain.rw("distribute").rw("distribute").rw("distribute").rw("inverse_cancel").rw("inverse_cancel").rw("identity_mul")
    rest = [mul(U, C, V, A_inv), mul(-1, U, C, V, A_inv, U, inv(K), V, A_inv)]
    chain.to(add(I, mul(-1, U, I_k, inv(K), V, A_inv), *rest), "identity_mul")
    chain.to(add(I, mul(-1, U, C, inv(C), inv(K), V, A_inv), *rest), "inverse_cancel")
    chain.to(add(I, mul(-1, U, C, K, inv(K), V, A_inv), rest[0]), "distribute")
    chain.rw("inverse_cancel").rw("identity_mul").rw("collect").auto(I)
    main = b.main(inv(update))
    main.to(mul(inv(update), I), "identity_mul").to(mul(inv(update), update, inverse), "lemma:right_inverse")
    main.rw("inverse_cancel").auto(inverse)
    return b.proof()
