"""Gauge freedom: only W_Q W_Kᵀ matters, so any factor L with L Lᵀ = (XᵀX)⁻¹ gives OLS."""

from __future__ import annotations

from sympy import Q
from sympy.matrices.expressions import MatrixSymbol

from derive.authoring import ProofBuilder, dim, orthogonal, predicate, theorem
from derive.authoring.constructions import linear_attention, ols_predictions
from derive.kernel import Definition, Hypothesis, Proof
from derive.kernel.terms import inv, mul, transpose
from derive.routes import Route

from .base import X, X_q, Y, n, p

GRAM_INVERTIBLE = predicate("X_full_column_rank", Q.positive_definite, mul(transpose(X), X))
_NAMES = {"X": "X", "Y": "Y", "X_q": "X_query"}

#: The generated "cholesky", "svd" and "qr" routes evaluate the lemmas of the same names.
ROUTES = [
    Route("cholesky", "cholesky_route", {**_NAMES, "C": "C"}, lower=("C",), gram=True),
    Route("svd", "svd_route", {**_NAMES, "U": "U", "Sigma": "s", "V": "V"}, diagonal=("Sigma",)),
    Route("qr", "qr_route", {**_NAMES, "Q": "Q", "R": "R"}, upper=("R",)),
]


#: What the theorem means for transformers (printed after its proof in the article).
MEANING_GAUGE_INVARIANCE = (
    r"Only the product $W_QW_K^{\top}$ is identifiable: rotating the query and key weights by the same "
    r"orthogonal matrix changes nothing. Any square root $G$ of the precision, $GG^{\top} = (X^{\top}X)^{-1}$, "
    r"gives OLS, so the factor can come from the eigendecomposition, the SVD or the QR decomposition of $X$; "
    r"the generated code uses this freedom to pick the most accurate route."
)


# X = U S Vᵀ is also a QR factorisation; W is any orthogonal matrix
@theorem(meaning=MEANING_GAUGE_INVARIANCE, routes=ROUTES, sampling={
    "Q": MatrixSymbol("U", n, p),
    "R": mul(MatrixSymbol("Sigma", p, p), transpose(MatrixSymbol("V", p, p))),
    "C": mul(MatrixSymbol("V", p, p), MatrixSymbol("Sigma", p, p), MatrixSymbol("W", p, p)),
    "G": mul(MatrixSymbol("V", p, p), inv(MatrixSymbol("Sigma", p, p)), MatrixSymbol("W", p, p)),
    "W": "orthogonal",
}, glossary={
    "U": "left singular vectors of $X$",
    "Sigma": "diagonal matrix of the singular values of $X$",
    "V": "right singular vectors of $X$",
    "Q": "orthonormal factor of $X = QR$",
    "R": "triangular factor of $X = QR$",
    "C": "Cholesky factor of $X^{\\top}X = CC^{\\top}$",
    "G": "any factor with $GG^{\\top} = (X^{\\top}X)^{-1}$",
    "L_svd": "factor $V\\Sigma^{-1}$ from the SVD",
    "L_qr": "factor $R^{-1}$ from the QR decomposition",
    "W_Q": "query weights",
    "W_K": "key weights",
    "d": "dimension of the attention scores (columns of $W_Q$ and $W_K$)",
})
def gauge_invariance() -> Proof:
    d = dim("d")
    W_Q, W_K = MatrixSymbol("W_Q", p, d), MatrixSymbol("W_K", p, d)
    U, S, V = MatrixSymbol("U", n, p), MatrixSymbol("Sigma", p, p), MatrixSymbol("V", p, p)
    Qf, R = MatrixSymbol("Q", n, p), MatrixSymbol("R", p, p)
    G = MatrixSymbol("G", p, p)  # an arbitrary factor of the precision
    C = MatrixSymbol("C", p, p)  # Cholesky factor of XᵀX
    L_svd, L_qr = MatrixSymbol("L_svd", p, p), MatrixSymbol("L_qr", p, p)
    gram, precision = mul(transpose(X), X), inv(mul(transpose(X), X))
    b = ProofBuilder(
        "gauge_invariance",
        "Gauge invariance of the query-key product",
        "Linear attention depends on W_Q and W_K only through W_Q W_Kᵀ: (X_q W_Q)(X W_K)ᵀ Y = "
        "X_q (W_Q W_Kᵀ) Xᵀ Y.  Hence any G with G Gᵀ = (XᵀX)⁻¹ gives OLS, in particular "
        "L = V Σ⁻¹ from the SVD X = U Σ Vᵀ (where X L = U), L = R⁻¹ from X = Q R (where X L = Q) and "
        "L = C⁻ᵀ from the Cholesky factorisation XᵀX = C Cᵀ.",
        [
            Hypothesis("svd", X, mul(U, S, transpose(V))),
            *orthogonal("U", U),
            *orthogonal("V", V),
            predicate("Sigma_diagonal", Q.diagonal, S),
            predicate("Sigma_positive", Q.positive_definite, S),
            Hypothesis("qr", X, mul(Qf, R)),
            *orthogonal("Q", Qf),
            predicate("R_invertible", Q.invertible, R),
            predicate("C_invertible", Q.invertible, C),  # X has full column rank: XᵀX = CCᵀ is invertible
            Hypothesis("cholesky", gram, mul(C, transpose(C))),
        ],
        [Definition("L_svd", L_svd, mul(V, inv(S))), Definition("L_qr", L_qr, inv(R))],
    )
    b.lemma("any_factor", linear_attention(mul(X_q, G), mul(X, G), Y),
            [Hypothesis("G_factors_precision", mul(G, transpose(G)), precision)]).auto(ols_predictions(X_q, X, Y))
    b.cite("orthogonal_inverse")
    b.cite("orthogonal_transpose_inverse")

    # SVD route
    b.lemma("svd_whitens", mul(X, L_svd)).auto(U)
    b.lemma("svd_gram", gram).auto(mul(V, S, S, transpose(V)))
    b.lemma("svd_precision", precision).auto(mul(L_svd, transpose(L_svd)))
    b.lemma("svd_ols", linear_attention(mul(X_q, L_svd), mul(X, L_svd), Y)).auto(ols_predictions(X_q, X, Y))
    # what the generated "svd" route evaluates
    b.lemma("svd_route", ols_predictions(X_q, X, Y)).auto(mul(X_q, V, inv(S), transpose(U), Y))

    # QR route
    b.lemma("qr_whitens", mul(X, L_qr)).auto(Qf)
    b.lemma("qr_gram", gram).auto(mul(transpose(R), R))
    b.lemma("qr_precision", precision).auto(mul(L_qr, transpose(L_qr)))
    b.lemma("qr_ols", linear_attention(mul(X_q, L_qr), mul(X, L_qr), Y)).auto(ols_predictions(X_q, X, Y))
    # what the generated "qr" route evaluates
    b.lemma("qr_route", ols_predictions(X_q, X, Y)).auto(mul(X_q, inv(R), transpose(Qf), Y))

    # Cholesky route: L = C⁻ᵀ, so L Lᵀ = (C Cᵀ)⁻¹ = (XᵀX)⁻¹; what the generated "cholesky" route evaluates
    b.lemma("cholesky_route", ols_predictions(X_q, X, Y)).auto(mul(X_q, inv(transpose(C)), inv(C), transpose(X), Y))

    b.main(linear_attention(mul(X_q, W_Q), mul(X, W_K), Y)).auto(mul(X_q, mul(W_Q, transpose(W_K)), transpose(X), Y))
    return b.proof()
