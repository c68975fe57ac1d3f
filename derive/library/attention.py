"""OLS as one forward pass of single-layer linear attention, and the paper's construction."""

from __future__ import annotations

from sympy.matrices.expressions import MatrixSymbol

from derive.authoring import ProofBuilder, theorem
from derive.authoring.constructions import attention_layer, hat_matrix, linear_attention, ols_predictions
from derive.kernel import Definition, Proof
from derive.kernel.terms import mul, transpose
from derive.routes import Route, Term

from .base import GLOSSARY, SPECTRAL_DEFINITION, SPECTRAL_HYPOTHESES, I_p, L, X, X_q, Y, k, n, p

#: The generated "eigh" route evaluates lemma gram_route: X_q L Lᵀ (XᵀY), Λ held as the vector of its diagonal.
EIGH_ROUTE = Route("eigh", "gram_route", {"X": "X", "Y": "Y", "X_q": "X_query", "L": "L", "V": "V", "Lambda": "lam"},
                   diagonal=("Lambda",), gram=True)
#: The generated score matrix (X_q L)(X L)ᵀ: the claim's right side without its values Y.
SCORES = Term("scores", lemma="main", values="Y")


#: What the theorem means for transformers (printed after its proof in the article).
MEANING_OLS_IS_LINEAR_ATTENTION = (
    r"This is the main theorem of Tan and Zhao~\cite{tan2026ols} (and the factorisation of Goulet "
    r"Coulombe~\cite{gouletcoulombe2025ols}): the OLS prediction at a query is a linear-attention read-out. "
    r"The query $x_q$ and each training example $x_i$ are mapped by the same matrix $L$; their inner products "
    r"$x_q^{\top}LL^{\top}x_i$ are unnormalised attention scores, and the prediction is the score-weighted sum "
    r"of the targets $y_i$, in one forward pass, with no iteration and no softmax."
)


@theorem(meaning=MEANING_OLS_IS_LINEAR_ATTENTION, glossary=GLOSSARY, routes=[EIGH_ROUTE, SCORES])
def ols_is_linear_attention() -> Proof:
    b = ProofBuilder(
        "ols_is_linear_attention",
        "OLS is single-layer linear attention",
        "If XᵀX = VΛVᵀ with V orthogonal and Λ diagonal with positive entries, and L = VΛ^{-1/2}, "
        "then the OLS predictions at queries X_q equal linear attention with queries X_q L, "
        "keys X L and values Y: X_q (XᵀX)⁻¹XᵀY = (X_q L)(X L)ᵀ Y.",
        SPECTRAL_HYPOTHESES,
        [SPECTRAL_DEFINITION],
    )
    b.cite("spectral_precision")
    # what the generated "eigh" route evaluates
    b.lemma("gram_route", ols_predictions(X_q, X, Y)).auto(mul(X_q, L, transpose(L), transpose(X), Y))
    b.main(ols_predictions(X_q, X, Y)).auto(linear_attention(mul(X_q, L), mul(X, L), Y))
    return b.proof()


#: What the theorem means for transformers (printed after its proof in the article).
MEANING_PAPER_CONSTRUCTION = (
    r"The construction of Tan and Zhao~\cite{tan2026ols} with every weight named: query, key and value weights "
    r"all equal to $L$, an identity feed-forward layer and the output projection $P = L^{\top}X^{\top}Y$ make "
    r"one layer output the fitted values $HY$. On the way, the attention output $XL$ has orthonormal columns: "
    r"the layer first whitens the design, then projects onto its column space."
)


@theorem(meaning=MEANING_PAPER_CONSTRUCTION, routes=[Term("P", definition="P")], glossary={
    **GLOSSARY,
    "W_Q": "query weights",
    "W_K": "key weights",
    "W_V": "value weights",
    "W_FFN": "feed-forward weights",
    "P": "output projection",
    "H": "hat matrix $X(X^{\\top}X)^{-1}X^{\\top}$",
})
def paper_construction() -> Proof:
    W_Q, W_K, W_V = (MatrixSymbol(name, p, p) for name in ("W_Q", "W_K", "W_V"))
    W_FFN, P, H = MatrixSymbol("W_FFN", p, p), MatrixSymbol("P", p, k), MatrixSymbol("H", n, n)
    b = ProofBuilder(
        "paper_construction",
        "One layer computes the hat matrix",
        "Under the spectral hypotheses, with W_Q = W_K = W_V = L, W_FFN = I and output projection "
        "P = LᵀXᵀY, the layer's output on X is (XW_Q)(XW_K)ᵀ(XW_V) W_FFN P = H Y with "
        "H = X(XᵀX)⁻¹Xᵀ; the attention output is X L, whose columns are orthonormal.",
        SPECTRAL_HYPOTHESES,
        [
            SPECTRAL_DEFINITION,
            Definition("W_Q", W_Q, L),
            Definition("W_K", W_K, L),
            Definition("W_V", W_V, L),
            Definition("W_FFN", W_FFN, I_p),
            Definition("P", P, mul(transpose(L), transpose(X), Y)),
            Definition("H", H, hat_matrix(X)),
        ],
    )
    b.cite("spectral_precision")
    b.lemma("orthonormal_columns", mul(transpose(mul(X, L)), X, L)).auto(I_p)
    b.lemma("attention_output", attention_layer(X, X, X, W_Q, W_K, W_V)).auto(mul(X, L))
    b.main(attention_layer(X, X, X, W_Q, W_K, W_V, W_FFN, P)).auto(mul(H, Y))
    return b.proof()
