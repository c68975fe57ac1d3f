"""Causal linear attention is a fast-weight memory; the delta rule is a gradient step on it."""

from __future__ import annotations

from sympy.matrices.expressions import ZeroMatrix

from derive.authoring import ProofBuilder, dim, family, index, scalar, theorem
from derive.kernel import Proof
from derive.kernel.terms import add, block, mul, transpose

t = index("t")
d_v, d_k = dim("d_v"), dim("d_k")
eta = scalar("beta", positive=True)
v, kk, q = family("v", (d_v, 1)), family("k", (d_k, 1)), family("q", (d_k, 1))
S = family("S", (d_v, d_k)).recurrence(ZeroMatrix(d_v, d_k), lambda s: add(S[s], mul(v[s + 1], transpose(kk[s + 1]))))
V = family("V", lambda s: (s, d_v)).recurrence(ZeroMatrix(0, d_v), lambda s: block([[V[s]], [transpose(v[s + 1])]]))
K = family("K", lambda s: (s, d_k)).recurrence(ZeroMatrix(0, d_k), lambda s: block([[K[s]], [transpose(kk[s + 1])]]))
D = family("D", (d_v, d_k)).recurrence(
    ZeroMatrix(d_v, d_k), lambda s: add(D[s], mul(eta, add(v[s + 1], mul(-1, D[s], kk[s + 1])), transpose(kk[s + 1]))))


def gradient(memory, key, value):
    """(S k − v) kᵀ: the gradient of ½‖v − S k‖² in S."""
    return mul(add(mul(memory, key), mul(-1, value)), transpose(key))


#: What the theorem means for transformers (printed after its proof in the article).
MEANING_FAST_WEIGHT_DELTA_RULE = (
    r"Causal linear attention is a fast-weight memory: the state $S_t$ is the sum of the outer products "
    r"$v_i k_i^{\top}$ written so far and the output is $S_t q_t$. The delta rule replaces pure writing by "
    r"one gradient step on the error of recalling $v_t$ from $k_t$, which is what fast-weight programmers "
    r"and DeltaNet do."
)


@theorem(meaning=MEANING_FAST_WEIGHT_DELTA_RULE, glossary={
    "v": "the value written at each time step", "k": "its key", "q": "the query at each time step",
    "S": "fast-weight memory, $S_0 = 0$", "V": "the values so far, one per row", "K": "the keys so far, one per row",
    "D": "fast weights written by the delta rule, $D_0 = 0$", "beta": "learning rate of the delta rule",
    "d_v": "width of a value", "d_k": "width of a key", "t": "time step",
})
def fast_weight_delta_rule() -> Proof:
    b = ProofBuilder(
        "fast_weight_delta_rule",
        "Causal linear attention is a fast-weight memory",
        "Causal linear attention writes each value with its key into a fast-weight memory, S_t = S_{t−1} + v_t k_tᵀ "
        "(S_0 = 0), and reads it with the query, o_t = S_t q_t. For every t, S_t = Σ_{i≤t} v_i k_iᵀ = V_tᵀK_t "
        "(V_t, K_t stack the values and keys so far), so o_t = V_tᵀ(K_t q_t) is attention of q_t over the prefix. "
        "The delta rule D_t = D_{t−1} + β(v_t − D_{t−1}k_t)k_tᵀ is one gradient step on ½‖v_t − D k_t‖² at "
        "D = D_{t−1}, whose gradient is (D k_t − v_t)k_tᵀ: D_t = D_{t−1} − β (D_{t−1}k_t − v_t)k_tᵀ.",
        families=[v, kk, q, S, V, K, D],
    )
    b.induction("memory_sum", t, S[t], mul(transpose(V[t]), K[t])).auto()
    b.lemma("delta_rule_is_gradient_step", D[t + 1]).auto(
        add(D[t], mul(-1, eta, gradient(D[t], kk[t + 1], v[t + 1]))))
    b.main(mul(S[t], q[t])).auto(mul(transpose(V[t]), mul(K[t], q[t])))
    return b.proof()
