"""The in-context token form: tokens z_i = [x_i; y_i], a query token [x_q; 0], block weights."""

from __future__ import annotations

from sympy.matrices.expressions import MatrixSymbol, ZeroMatrix

from derive.authoring import ProofBuilder, theorem
from derive.authoring.constructions import linear_attention, ols_predictions, query_tokens, token_weights, tokens
from derive.kernel import Definition, Proof
from derive.kernel.terms import block, mul

from .base import SPECTRAL_DEFINITION, SPECTRAL_HYPOTHESES, L, X, X_q, Y, k, m, n, p

#: What the theorem means for transformers (printed after its proof in the article).
MEANING_ICL_TOKEN_FORM = (
    r"In the in-context learning setting of von Oswald et al.~\cite{vonoswald2023icl} and Aky\"urek et "
    r"al.~\cite{akyurek2023icl}, a prompt is a sequence of tokens $[x_i; y_i]$ followed by a query token "
    r"$[x_q; 0]$. With block weights that read features and write labels, one linear-attention layer writes "
    r"the OLS prediction $x_q^{\top}\hat{\beta}$ into the query's empty label slot: the regression is solved "
    r"in context, from the prompt alone, by fixed weights."
)


@theorem(meaning=MEANING_ICL_TOKEN_FORM, glossary={
    "Z": "context tokens $z_i^{\\top} = [x_i^{\\top}\\; y_i^{\\top}]$ as rows",
    "Z_q": "query tokens $[x_q^{\\top}\\; 0]$ as rows",
    "W_Q": "query weights",
    "W_K": "key weights",
    "W_V": "value weights",
})
def icl_token_form() -> Proof:
    Z, Z_q = MatrixSymbol("Z", n, p + k), MatrixSymbol("Z_q", m, p + k)
    W_Q, W_K, W_V = (MatrixSymbol(name, p + k, p + k) for name in ("W_Q", "W_K", "W_V"))
    context, queries = tokens(X, Y), query_tokens(X_q, k)
    w_qk, w_v = token_weights(L, p, k), token_weights(None, p, k, read_labels=True)
    b = ProofBuilder(
        "icl_token_form",
        "In-context regression in the token form",
        "Under the spectral hypotheses, with context tokens z_i = [x_i; y_i] (the rows of Z = [X Y]), "
        "query tokens [x_q; 0] (the rows of Z_q = [X_q 0]) and block weights W_Q = W_K = [[L, 0], [0, 0]], "
        "W_V = [[0, 0], [0, I]], linear attention writes the OLS prediction x_qᵀβ̂ into the label slot "
        "of each query token: (Z_q W_Q)(Z W_K)ᵀ(Z W_V) = [0  X_q(XᵀX)⁻¹XᵀY].",
        SPECTRAL_HYPOTHESES,
        [
            SPECTRAL_DEFINITION,
            Definition("Z", Z, context),
            Definition("Z_q", Z_q, queries),
            Definition("W_Q", W_Q, w_qk),
            Definition("W_K", W_K, w_qk),
            Definition("W_V", W_V, w_v),
        ],
    )
    b.cite("spectral_precision")
    b.main(linear_attention(mul(Z_q, W_Q), mul(Z, W_K), mul(Z, W_V))).auto(
        block([[ZeroMatrix(m, p), ols_predictions(X_q, X, Y)]]))
    return b.proof()
