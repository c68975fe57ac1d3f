"""Ridge regression as linear attention: the spectral factor of XᵀX + λI, for any X."""

from __future__ import annotations

from sympy import Q, Rational
from sympy.matrices.expressions import MatrixSymbol

from derive.authoring import ProofBuilder, orthogonal, predicate, scalar, theorem
from derive.authoring.constructions import linear_attention
from derive.kernel import Definition, Hypothesis, Proof
from derive.kernel.terms import add, inv, mul, power, transpose
from derive.routes import Route

from .base import GLOSSARY, I_p, V, X, X_q, Y, p

lam = scalar("lambda", positive=True)
Lam = MatrixSymbol("Lambda", p, p)
L_lambda = MatrixSymbol("L_lambda", p, p)


def ridge_gram(M, ridge=lam):
    """MᵀM + λI."""
    return add(mul(transpose(M), M), mul(ridge, I_p))


def ridge_predictions(X_q, X, Y, ridge=lam):
    """X_q (XᵀX + λI)⁻¹ XᵀY."""
    return mul(X_q, inv(ridge_gram(X, ridge)), transpose(X), Y)


#: The generated "ridge" route: X_q V (Λ + λI)⁻¹ Vᵀ XᵀY with Λ held as the vector of its diagonal.
RIDGE_ROUTE = Route("ridge", "ridge_route", {"X": "X", "Y": "Y", "X_q": "X_query", "V": "V", "Lambda": "lam",
                                             "lambda": "ridge"}, diagonal=("Lambda",), gram=True)


#: What the theorem means for transformers (printed after its proof in the article).
MEANING_RIDGE_IS_LINEAR_ATTENTION = (
    r"Ridge regression is single-layer linear attention for every design, with no rank condition: the "
    r"penalty only shifts the spectrum, so the query--key factor becomes $V(\Lambda + \lambda I)^{-1/2}$ "
    r"and the slow memory $(X^{\top}X + \lambda I)^{-1}$. A transformer whose weights hold a shifted "
    r"spectrum computes ridge predictions in one forward pass."
)


@theorem(meaning=MEANING_RIDGE_IS_LINEAR_ATTENTION, glossary={
    **GLOSSARY,
    "Lambda": "diagonal matrix of the eigenvalues of $X^{\\top}X$ (some may be zero)",
    "L_lambda": "ridge spectral factor $V(\\Lambda + \\lambda I)^{-1/2}$",
    "lambda": "ridge penalty, $\\lambda > 0$",
})
def ridge_is_linear_attention() -> Proof:
    shifted = add(Lam, mul(lam, I_p))
    b = ProofBuilder(
        "ridge_is_linear_attention",
        "Ridge regression is single-layer linear attention",
        "For any X (no rank condition) and λ > 0: if XᵀX = VΛVᵀ with V orthogonal and Λ diagonal, and "
        "L_λ = V(Λ + λI)^{-1/2}, then the ridge predictions are linear attention with queries X_q L_λ, keys "
        "X L_λ and values Y: X_q (XᵀX + λI)⁻¹XᵀY = (X_q L_λ)(X L_λ)ᵀ Y. The penalty moves every eigenvalue "
        "away from zero, so the slow memory L_λL_λᵀ = (XᵀX + λI)⁻¹ exists for every X.",
        [Hypothesis("gram_spectral", mul(transpose(X), X), mul(V, Lam, transpose(V))),
         *orthogonal("V", V), predicate("Lambda_diagonal", Q.diagonal, Lam)],
        [Definition("L_lambda", L_lambda, mul(V, power(shifted, Rational(-1, 2))))],
    )
    # what the generated "ridge" route evaluates
    b.lemma("ridge_route", ridge_predictions(X_q, X, Y)).auto(mul(X_q, V, inv(shifted), transpose(V), transpose(X), Y))
    b.lemma("ridge_precision", inv(ridge_gram(X))).auto(mul(L_lambda, transpose(L_lambda)))
    b.main(ridge_predictions(X_q, X, Y)).auto(linear_attention(mul(X_q, L_lambda), mul(X, L_lambda), Y))
    return b.proof()
