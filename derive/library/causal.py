"""Causal linear attention with a Sherman–Morrison slow memory is recursive least squares, on every prefix."""

from __future__ import annotations

from sympy.matrices.expressions import Identity, ZeroMatrix

from derive.authoring import ProofBuilder, family, index, theorem
from derive.kernel import Proof
from derive.kernel.terms import add, block, inv, mul, transpose
from derive.routes import Term

from .base import GLOSSARY, I_p, X_q, k, p
from .ridge import lam, ridge_gram


def sherman_morrison_step(P, x):
    """P − P x (1 + xᵀPx)⁻¹ xᵀ P: the slow memory after writing x (Sherman–Morrison with A⁻¹ = P)."""
    return add(P, mul(-1, P, x, inv(add(Identity(1), mul(transpose(x), P, x))), transpose(x), P))

t = index("t")
x, y = family("x", (p, 1)), family("y", (k, 1))
X = family("X", lambda s: (s, p)).recurrence(ZeroMatrix(0, p), lambda s: block([[X[s]], [transpose(x[s + 1])]]))
Y = family("Y", lambda s: (s, k)).recurrence(ZeroMatrix(0, k), lambda s: block([[Y[s]], [transpose(y[s + 1])]]))
P = family("P", (p, p)).recurrence(mul(1 / lam, I_p), lambda s: sherman_morrison_step(P[s], x[s + 1]))
S = family("S", (p, k)).recurrence(ZeroMatrix(p, k), lambda s: add(S[s], mul(x[s + 1], transpose(y[s + 1]))))

#: The generated streaming update: one Sherman–Morrison step of the slow memory, from the recurrence.
UPDATES = [Term("slow_memory_update", definition="P", names={"P": "P", "x": "x", "lambda": "ridge"}),
           Term("fast_memory_update", definition="S", names={"S": "S", "x": "x", "y": "y"})]


#: What the theorem means for transformers (printed after its proof in the article).
MEANING_CAUSAL_ONLINE_LS = (
    r"Causal (masked) linear attention whose slow memory is updated token by token with Sherman--Morrison "
    r"is recursive least squares: on every prefix it gives exactly the ridge solution of that prefix. A "
    r"recurrent linear-attention layer with this state update is an exact online regression solver (the "
    r"Mesa layer's rule)."
)


@theorem(meaning=MEANING_CAUSAL_ONLINE_LS, glossary={
    **GLOSSARY,
    "x": "the example that arrives at each time step", "y": "its target",
    "X": "the examples seen so far, one per row ($X_0$ is empty)", "Y": "their targets",
    "P": "slow memory, $P_0 = \\lambda^{-1}I$, updated by Sherman–Morrison",
    "S": "fast memory $\\sum_{i \\le t} x_i y_i^{\\top}$",
    "lambda": "ridge penalty, $\\lambda > 0$", "t": "time step (length of the prefix)",
})
def causal_online_ls() -> Proof:
    b = ProofBuilder(
        "causal_online_ls",
        "Causal linear attention is recursive least squares",
        "Let examples x_t, targets y_t arrive one at a time; X_t and Y_t stack the first t of them (X_0, Y_0 empty). "
        "A causal linear-attention layer keeps a fast memory S_t = S_{t−1} + x_t y_tᵀ (S_0 = 0) and a slow memory "
        "updated by Sherman–Morrison, P_t = P_{t−1} − P_{t−1}x_t(1 + x_tᵀP_{t−1}x_t)⁻¹x_tᵀP_{t−1}, P_0 = λ⁻¹I. For "
        "every prefix t, P_t = (X_tᵀX_t + λI)⁻¹ and S_t = X_tᵀY_t, so the layer's output X_q P_t S_t is the ridge "
        "prediction from the first t examples: recursive least squares is a recurrent linear-attention layer.",
        families=[x, y, X, Y, P, S],
    )
    b.cite("sherman_morrison")
    # about 3 s alone: the bound only guards against a runaway search, never against a slow machine
    b.induction("slow_memory", t, P[t], inv(ridge_gram(X[t]))).auto()
    b.induction("fast_memory", t, S[t], mul(transpose(X[t]), Y[t])).auto()
    b.main(mul(X_q, P[t], S[t])).auto(mul(X_q, inv(ridge_gram(X[t])), transpose(X[t]), Y[t]))
    return b.proof()
