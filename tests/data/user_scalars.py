"""A user's theorem file for the richer scalar language of issue 29 (public authoring API only).

Three theorems: the one-layer linear-self-attention prediction in column-token form (the transpose of a
1×1 matrix), the sample-covariance scaling with a 1/n coefficient (a dimension as a positive scalar), and
ridge regression as ordinary least squares on rows augmented by μI, with the scalar hypothesis λ = μ².
"""

from sympy import Identity, MatrixSymbol, Q, Transpose, ZeroMatrix

from derive import (
    Definition,
    Hypothesis,
    ProofBuilder,
    block,
    dim,
    inv,
    mul,
    predicate,
    scalar,
    theorem,
    transpose,
)

n, p, k = dim("n"), dim("p"), dim("k")
X, Y = MatrixSymbol("X", n, p), MatrixSymbol("Y", n, k)
gram = mul(transpose(X), X)


@theorem(glossary={"y": "targets of the context, one column", "Gamma": "the layer's preconditioner",
                   "x_q": "the query token, one column"})
def lsa_column_token_prediction():
    y, Gamma, x_q = MatrixSymbol("y", n, 1), MatrixSymbol("Gamma", p, p), MatrixSymbol("x_q", p, 1)
    b = ProofBuilder(
        "lsa_column_token_prediction", "The linear-attention prediction in column-token form",
        "The prediction yᵀXΓx_q is a 1×1 matrix, hence its own transpose: yᵀXΓx_q = x_qᵀΓᵀXᵀy.",
    )
    prediction = mul(transpose(y), X, Gamma, x_q)
    (b.main(prediction)
     .to(Transpose(prediction), "transpose_scalar")
     .rw("transpose_product")
     .rw("transpose_transpose")
     .qed(mul(transpose(x_q), transpose(Gamma), transpose(X), y)))
    return b.proof()


@theorem(glossary={"G": "the Gram matrix $X^{\\top}X$"})
def sample_covariance_scaling():
    G = MatrixSymbol("G", p, p)
    b = ProofBuilder(
        "sample_covariance_scaling", "Least squares from sample moments",
        "With G = XᵀX invertible, the sample moments (1/n)XᵀX and (1/n)XᵀY give the OLS coefficients: "
        "((1/n)G)⁻¹(1/n)XᵀY = (XᵀX)⁻¹XᵀY.",
        [predicate("gram_invertible", Q.invertible, gram)],
        [Definition("G", G, gram)],
    )
    (b.main(mul(inv(mul(1 / n, G)), 1 / n, transpose(X), Y))
     .rw("inverse_product")
     .rw("def:G", at=G)
     .qed(mul(inv(gram), transpose(X), Y)))
    return b.proof()


@theorem(glossary={"mu": "square root of the ridge penalty"})
def ridge_as_augmented_ols():
    lam, mu = scalar("lambda"), scalar("mu", positive=True)
    B = block([[X], [mul(mu, Identity(p))]])
    b = ProofBuilder(
        "ridge_as_augmented_ols", "Ridge regression is least squares on augmented rows",
        "With λ = μ² (μ > 0), least squares on the rows of X augmented by μI, with targets Y augmented by 0, "
        "is ridge regression: ([X; μI]ᵀ[X; μI])⁻¹[X; μI]ᵀ[Y; 0] = (XᵀX + λI)⁻¹XᵀY.",
        [Hypothesis("lambda_mu", lam, mu ** 2)],
    )
    ridge_gram = mul(lam, Identity(p)) + gram
    (b.lemma("augmented_gram", mul(transpose(B), B))
     .rw("block_transpose")
     .rw("block_multiply")
     .rw("block_single")
     .rw("transpose_product")
     .rw("transpose_symmetric", at=transpose(Identity(p)))
     .rw("identity_mul")
     .to(ridge_gram, "hyp:lambda_mu")
     .qed())
    targets = block([[Y], [ZeroMatrix(p, k)]])
    (b.main(mul(inv(mul(transpose(B), B)), transpose(B), targets))
     .rw("lemma:augmented_gram")
     .rw("block_transpose")
     .rw("block_multiply", at=mul(block([[transpose(X), transpose(mul(mu, Identity(p)))]]), targets))
     .rw("zero_mul")
     .rw("zero_add")
     .rw("block_single")
     .qed(mul(inv(ridge_gram), transpose(X), Y)))
    return b.proof()
