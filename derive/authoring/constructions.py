"""The symbolic objects of the theory: OLS, linear attention, the token form, the spectral factor.

Every function returns a SymPy matrix expression in the kernel's normal form, with symbolic
dimensions, so the same objects serve the proofs, the LaTeX printer and the code generator.
"""

from __future__ import annotations

from sympy import Rational
from sympy.matrices.expressions import Identity, MatrixSymbol, ZeroMatrix

from ..kernel.terms import add, block, inv, mul, power, transpose
from .statements import dim

__all__ = [
    "dim",
    "ols_coefficients",
    "hat_matrix",
    "ols_predictions",
    "linear_attention",
    "attention_layer",
    "spectral_factor",
    "tokens",
    "query_tokens",
    "token_weights",
    "gd_step_from_zero",
]


def ols_coefficients(X: MatrixSymbol, Y) -> object:
    """β̂ = (XᵀX)⁻¹ Xᵀ Y."""
    return mul(inv(mul(transpose(X), X)), transpose(X), Y)


def hat_matrix(X) -> object:
    """H = X (XᵀX)⁻¹ Xᵀ."""
    return mul(X, inv(mul(transpose(X), X)), transpose(X))


def ols_predictions(X_q, X, Y) -> object:
    """X_q β̂."""
    return mul(X_q, ols_coefficients(X, Y))


def linear_attention(Q, K, V) -> object:
    """Attn(Q, K, V) = Q Kᵀ V (no softmax)."""
    return mul(Q, transpose(K), V)


def attention_layer(X_q, X, Y, W_Q, W_K, W_V, W_FFN=None, P=None) -> object:
    """One linear-attention layer: projections, attention, FFN and output projection (if given)."""
    out = linear_attention(mul(X_q, W_Q), mul(X, W_K), mul(Y, W_V))
    for weight in (W_FFN, P):
        if weight is not None:
            out = mul(out, weight)
    return out


def spectral_factor(V, Lam) -> object:
    """L = V Λ^{-1/2}, so that L Lᵀ = (V Λ Vᵀ)⁻¹."""
    return mul(V, power(Lam, Rational(-1, 2)))


def tokens(X, Y) -> object:
    """Context tokens as rows: z_i = [x_i; y_i], so Z = [X  Y]."""
    return block([[X, Y]])


def query_tokens(X_q, k) -> object:
    """Query tokens [x_q; 0] as rows: Z_q = [X_q  0]."""
    return block([[X_q, ZeroMatrix(X_q.shape[0], k)]])


def token_weights(A, p, k, *, read_labels: bool = False) -> object:
    """Block weights on (p+k)-dim tokens: [[A, 0], [0, 0]] (A is p×p), or [[0, 0], [0, I_k]]."""
    if read_labels:
        return block([[ZeroMatrix(p, p), ZeroMatrix(p, k)], [ZeroMatrix(k, p), Identity(k)]])
    return block([[A, ZeroMatrix(p, k)], [ZeroMatrix(k, p), ZeroMatrix(k, k)]])


def gd_step_from_zero(X, Y, Gamma, start=None) -> object:
    """β₁ = β₀ − Γ Xᵀ(X β₀ − Y) at β₀ = 0: one preconditioned gradient step on ½‖Y − Xβ‖².

    ``start`` is a symbol a definition sets to 0 (the theorem then reads β₀, not a zero block); default 0.
    """
    p, k = X.shape[1], Y.shape[1]
    beta0 = ZeroMatrix(p, k) if start is None else start
    residual = add(mul(X, beta0), mul(-1, Y))
    return add(beta0, mul(-1, Gamma, transpose(X), residual))
