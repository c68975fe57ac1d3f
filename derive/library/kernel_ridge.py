"""Kernel ridge by push-through: attention over features equals attention over tokens."""

from __future__ import annotations

from sympy.matrices.expressions import Identity

from derive.authoring import ProofBuilder, theorem
from derive.kernel import Proof
from derive.kernel.terms import add, inv, mul, transpose
from derive.routes import Route

from .base import GLOSSARY, X, X_q, Y
from .ridge import lam, ridge_gram, ridge_predictions

#: The generated dual route: X_q Xᵀ (XXᵀ + λI)⁻¹ Y, an n×n solve (attention over the tokens) for p > n.
DUAL_ROUTE = Route("ridge_dual", "dual_route", {"X": "X", "Y": "Y", "X_q": "X_query", "lambda": "ridge"})


def token_gram(M, ridge=lam):
    """MMᵀ + λI: the kernel (Gram) matrix of the tokens, regularised."""
    return add(mul(M, transpose(M)), mul(ridge, Identity(M.shape[0])))


#: What the theorem means for transformers (printed after its proof in the article).
MEANING_KERNEL_RIDGE_PUSH_THROUGH = (
    r"Attention over features (a $p \times p$ slow memory) and attention over tokens (an $n \times n$ one) "
    r"give the same ridge predictions. The token form is kernel ridge regression with the linear kernel "
    r"$X_q X^{\top}$: the score matrix of linear attention is a kernel matrix, and the dual route is the "
    r"cheaper one when there are more features than tokens."
)


@theorem(meaning=MEANING_KERNEL_RIDGE_PUSH_THROUGH, glossary={**GLOSSARY, "lambda": "ridge penalty, $\\lambda > 0$"})
def kernel_ridge_push_through() -> Proof:
    b = ProofBuilder(
        "kernel_ridge_push_through",
        "Kernel ridge: attention over features is attention over tokens",
        "For any X and λ > 0, (XᵀX + λI)⁻¹Xᵀ = Xᵀ(XXᵀ + λI)⁻¹ (push-through). So primal ridge, attention over the "
        "p features, equals dual kernel ridge, attention over the n tokens with the linear kernel XXᵀ: "
        "X_q (XᵀX + λI)⁻¹XᵀY = (X_q Xᵀ)(XXᵀ + λI)⁻¹ Y.",
    )
    b.lemma("push_through", mul(inv(ridge_gram(X)), transpose(X))).auto(mul(transpose(X), inv(token_gram(X))))
    # what the generated dual route evaluates
    b.lemma("dual_route", ridge_predictions(X_q, X, Y)).auto(mul(X_q, transpose(X), inv(token_gram(X)), Y))
    b.main(ridge_predictions(X_q, X, Y)).auto(mul(mul(X_q, transpose(X)), inv(token_gram(X)), Y))
    return b.proof()
