"""Slow and fast memory: the weights hold the precision, attention holds Σ x_i y_iᵀ."""

from __future__ import annotations

from sympy.matrices.expressions import MatrixSymbol

from derive.authoring import ProofBuilder, theorem
from derive.authoring.constructions import ols_predictions
from derive.kernel import Definition, Hypothesis, Proof
from derive.kernel.terms import add, block, mul, transpose

from .base import SPECTRAL_DEFINITION, SPECTRAL_HYPOTHESES, L, X, X_q, Y, k, n, p

#: What the theorem means for transformers (printed after its proof in the article).
MEANING_SLOW_FAST_MEMORY = (
    r"The prediction separates into a \emph{slow memory} $M = LL^{\top}$, fixed by the design and stored in "
    r"the weights, and a \emph{fast memory} $S = X^{\top}Y$, written one example at a time by rank-one updates "
    r"$S \leftarrow S + x_ty_t^{\top}$, the fast-weight view of linear attention of Schlag et "
    r"al.~\cite{schlag2021fastweights} and of the recurrent form of Katharopoulos et "
    r"al.~\cite{katharopoulos2020rnn}."
)


@theorem(meaning=MEANING_SLOW_FAST_MEMORY, glossary={
    "M": "slow memory $LL^{\\top}$",
    "S": "fast memory $X^{\\top}Y$",
    "X_prev": "the first $n-1$ rows of $X$",
    "Y_prev": "the first $n-1$ rows of $Y$",
    "x_t": "the newest example",
    "y_t": "the newest target",
})
def slow_fast_memory() -> Proof:
    M, S = MatrixSymbol("M", p, p), MatrixSymbol("S", p, k)
    X_prev, Y_prev = MatrixSymbol("X_prev", n - 1, p), MatrixSymbol("Y_prev", n - 1, k)
    x_t, y_t = MatrixSymbol("x_t", p, 1), MatrixSymbol("y_t", k, 1)
    b = ProofBuilder(
        "slow_fast_memory",
        "Slow and fast memory",
        "Under the spectral hypotheses, the OLS prediction factors as X_q (XᵀX)⁻¹XᵀY = X_q M S with the "
        "slow memory M = L Lᵀ (held in the weights; it does not depend on the query or on Y) and the fast "
        "memory S = XᵀY = Σ_i x_i y_iᵀ, written one example at a time: if X and Y gain a last row x_tᵀ, "
        "y_tᵀ, then S = X_prevᵀY_prev + x_t y_tᵀ (S_t = S_{t−1} + x_t y_tᵀ).",
        SPECTRAL_HYPOTHESES,
        [SPECTRAL_DEFINITION, Definition("M", M, mul(L, transpose(L))), Definition("S", S, mul(transpose(X), Y))],
    )
    (b.lemma("rank_one_write", S, [
        Hypothesis("X_appends_row", X, block([[X_prev], [transpose(x_t)]])),
        Hypothesis("Y_appends_row", Y, block([[Y_prev], [transpose(y_t)]])),
    ])
     .auto(add(mul(transpose(X_prev), Y_prev), mul(x_t, transpose(y_t)))))
    b.cite("spectral_precision")
    b.main(ols_predictions(X_q, X, Y)).auto(mul(X_q, M, S))
    return b.proof()
