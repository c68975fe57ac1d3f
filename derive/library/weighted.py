"""Weighted least squares as linear attention: whiten the tokens by W^{1/2}, then attend."""

from __future__ import annotations

from sympy import Q, Rational
from sympy.matrices.expressions import MatrixSymbol

from derive.authoring import ProofBuilder, orthogonal, predicate, theorem
from derive.authoring.constructions import linear_attention, spectral_factor
from derive.kernel import Definition, Hypothesis, Proof
from derive.kernel.terms import inv, mul, power, transpose
from derive.routes import Term

from .base import GLOSSARY, V, X, X_q, Y, k, n, p

W = MatrixSymbol("W", n, n)  # the weights, one per example, on the diagonal
Lam_W = MatrixSymbol("Lambda_W", p, p)
L_W = MatrixSymbol("L_W", p, p)
K_W, Y_W = MatrixSymbol("K_W", n, p), MatrixSymbol("Y_W", n, k)
half = Rational(1, 2)

#: The whitened tokens the generated weighted route solves by ordinary least squares (W held as its diagonal).
WHITENED = [Term("whitened_design", definition="K_W", names={"X": "X", "W": "w"}, diagonal=("W",)),
            Term("whitened_targets", definition="Y_W", names={"Y": "Y", "W": "w"}, diagonal=("W",))]


def weighted_predictions(X_q, X, Y, W):
    """X_q (XᵀWX)⁻¹ XᵀWY."""
    return mul(X_q, inv(mul(transpose(X), W, X)), transpose(X), W, Y)


_U, _S = MatrixSymbol("U", n, p), MatrixSymbol("S", p, p)  # X = W^{-1/2} U S Vᵀ: XᵀWX = V S² Vᵀ


#: What the theorem means for transformers (printed after its proof in the article).
MEANING_WEIGHTED_LS_IS_ATTENTION = (
    r"Weighting examples is whitening tokens: scaling each context token by $\sqrt{w_i}$ and using the "
    r"spectral factor of $X^{\top}WX$ turns weighted least squares into plain linear attention. Per-token "
    r"importance (or a noise model) lives in the tokens, not in the attention rule."
)


@theorem(meaning=MEANING_WEIGHTED_LS_IS_ATTENTION, sampling={
    "U": "orthogonal", "S": "diagonal_positive", "X": mul(power(W, -half), _U, _S, transpose(V)),
    "Lambda_W": mul(_S, _S)}, glossary={
    **GLOSSARY,
    "W": "diagonal matrix of positive weights, one per example",
    "V": "orthogonal matrix of the eigenvectors of $X^{\\top}WX$",
    "Lambda_W": "diagonal matrix of the eigenvalues of $X^{\\top}WX$",
    "L_W": "spectral factor $V\\Lambda_W^{-1/2}$ of $X^{\\top}WX$",
    "K_W": "whitened design $W^{1/2}X$",
    "Y_W": "whitened targets $W^{1/2}Y$",
})
def weighted_ls_is_attention() -> Proof:
    b = ProofBuilder(
        "weighted_ls_is_attention",
        "Weighted least squares is linear attention on whitened tokens",
        "If W is diagonal with positive entries, XᵀWX = VΛ_WVᵀ with V orthogonal and Λ_W diagonal with positive "
        "entries, and L_W = VΛ_W^{-1/2}, then the weighted least-squares predictions are linear attention with "
        "queries X_q L_W, keys W^{1/2}X L_W and values W^{1/2}Y: X_q(XᵀWX)⁻¹XᵀWY = (X_q L_W)(K_W L_W)ᵀ Y_W with "
        "K_W = W^{1/2}X and Y_W = W^{1/2}Y; that is, ordinary least squares on the whitened tokens.",
        [predicate("W_diagonal", Q.diagonal, W), predicate("W_positive", Q.positive_definite, W),
         Hypothesis("weighted_gram_spectral", mul(transpose(X), W, X), mul(V, Lam_W, transpose(V))),
         *orthogonal("V", V)[:1],  # VᵀV = I: V is square, so orthogonal; the proof needs no more
         predicate("Lambda_W_diagonal", Q.diagonal, Lam_W),
         predicate("Lambda_W_positive", Q.positive_definite, Lam_W)],
        [Definition("L_W", L_W, spectral_factor(V, Lam_W)), Definition("K_W", K_W, mul(power(W, half), X)),
         Definition("Y_W", Y_W, mul(power(W, half), Y))],
    )
    b.lemma("whitened_gram", mul(transpose(K_W), K_W)).auto(mul(transpose(X), W, X))
    b.lemma("weighted_precision", inv(mul(transpose(X), W, X))).auto(mul(L_W, transpose(L_W)))
    b.lemma("whitened_is_ols", mul(X_q, inv(mul(transpose(K_W), K_W)), transpose(K_W), Y_W)).auto(
        weighted_predictions(X_q, X, Y, W))
    b.main(weighted_predictions(X_q, X, Y, W)).auto(linear_attention(mul(X_q, L_W), mul(K_W, L_W), Y_W))
    return b.proof()
