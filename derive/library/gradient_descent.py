"""Linear attention as one step of preconditioned gradient descent on least squares."""

from __future__ import annotations

from sympy.matrices.expressions import MatrixSymbol, ZeroMatrix

from derive.authoring import ProofBuilder, dim, theorem
from derive.authoring.constructions import gd_step_from_zero, linear_attention, ols_predictions
from derive.kernel import Definition, Hypothesis, Proof
from derive.kernel.terms import inv, mul, transpose

from .base import I_p, X, X_q, Y, k, n, p
from .gauge import GRAM_INVERTIBLE

#: What the theorem means for transformers (printed after its proof in the article).
MEANING_PRECONDITIONED_GD = (
    r"Linear attention is one step of gradient descent from zero, preconditioned by $\Gamma = W_QW_K^{\top}$, "
    r"as in von Oswald et al.~\cite{vonoswald2023icl}. The step lands on the OLS solution exactly when "
    r"$\Gamma$ is the precision $(X^{\top}X)^{-1}$, and only then (if it gives OLS for every target): a layer "
    r"that solves regression in one step must hold the inverse Gram matrix in its weights."
)


@theorem(meaning=MEANING_PRECONDITIONED_GD, glossary={
    "Gamma": "preconditioner $W_Q W_K^{\\top}$",
    "beta_0": "starting point of gradient descent, $\\beta_0 = 0$",
    "A": "any query matrix",
    "T": "any target matrix",
    "W_Q": "query weights",
    "W_K": "key weights",
    "d": "dimension of the attention scores (columns of $W_Q$ and $W_K$)",
    "r": "number of rows of the query matrix $A$",
    "s": "number of columns of the target matrix $T$",
})
def preconditioned_gd() -> Proof:
    d, r, s = dim("d"), dim("r"), dim("s")
    W_Q, W_K = MatrixSymbol("W_Q", p, d), MatrixSymbol("W_K", p, d)
    Gamma = MatrixSymbol("Gamma", p, p)
    A, T = MatrixSymbol("A", r, p), MatrixSymbol("T", n, s)  # any queries, any targets
    precision = inv(mul(transpose(X), X))
    beta_0 = MatrixSymbol("beta_0", p, k)
    step = mul(X_q, gd_step_from_zero(X, Y, Gamma, start=beta_0))
    b = ProofBuilder(
        "preconditioned_gd",
        "Linear attention is one step of preconditioned gradient descent",
        "With W_Q W_Kᵀ = Γ, linear attention (X_q W_Q)(X W_K)ᵀ Y predicts with β₁ = β₀ − Γ Xᵀ(Xβ₀ − Y) at "
        "β₀ = 0: one step of gradient descent on ½‖Y − Xβ‖² preconditioned by Γ.  The step equals OLS "
        "when Γ = (XᵀX)⁻¹; conversely, if it equals OLS for every Y (at every query), then Γ = (XᵀX)⁻¹.",
        [GRAM_INVERTIBLE, Hypothesis("preconditioner", mul(W_Q, transpose(W_K)), Gamma)],
        [Definition("beta_0", beta_0, ZeroMatrix(p, k))],
    )
    b.lemma("ols_if", step, [Hypothesis("Gamma_is_precision", Gamma, precision)]).auto(ols_predictions(X_q, X, Y))
    every_target = Hypothesis("step_is_ols", mul(A, Gamma, transpose(X), T), mul(A, precision, transpose(X), T),
                              forall=(A, T, r, s))
    instance = ((A, I_p), (T, X), (r, p), (s, p))
    (b.lemma("ols_only_if", Gamma, [every_target])
     .to(mul(I_p, Gamma), "identity_mul")
     .to(mul(I_p, Gamma, I_p), "identity_mul")
     .to(mul(I_p, Gamma, transpose(X), X, precision), "inverse_cancel")
     .rw("hyp:step_is_ols", at=mul(I_p, Gamma, transpose(X), X), instance=instance)
     .rw("inverse_cancel", at=mul(precision, transpose(X), X))
     .rw("identity_mul").rw("identity_mul")
     .qed(precision))
    b.main(step).auto(linear_attention(mul(X_q, W_Q), mul(X, W_K), Y))
    return b.proof()
