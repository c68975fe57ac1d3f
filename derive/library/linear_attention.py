"""Modern linear attention (issue 42): the causal mask of any length is the recurrence, its chunkwise form, the delta
rule's WY/UT form and its chunk with a carried state, and recursive least squares as a delta rule."""

from __future__ import annotations

from sympy import MatrixSymbol, Q, Trace
from sympy.matrices.expressions import Identity, ZeroMatrix

from derive.authoring import ProofBuilder, dim, family, index, predicate, scalar, theorem
from derive.kernel import Definition, Hypothesis, Proof
from derive.kernel.terms import add, block, inv, mul, transpose, tril
from derive.routes import Route

t = index("t")
d_v, d_k = dim("d_v"), dim("d_k")
c, C = dim("c"), dim("C")
v, kk, q = family("v", (d_v, 1)), family("k", (d_k, 1)), family("q", (d_k, 1))
S = family("S", (d_v, d_k)).recurrence(ZeroMatrix(d_v, d_k), lambda s: add(S[s], mul(v[s + 1], transpose(kk[s + 1]))))
V = family("V", lambda s: (s, d_v)).recurrence(ZeroMatrix(0, d_v), lambda s: block([[V[s]], [transpose(v[s + 1])]]))
K = family("K", lambda s: (s, d_k)).recurrence(ZeroMatrix(0, d_k), lambda s: block([[K[s]], [transpose(kk[s + 1])]]))
Qs = family("Q", lambda s: (s, d_k)).recurrence(ZeroMatrix(0, d_k), lambda s: block([[Qs[s]], [transpose(q[s + 1])]]))
O = family("O", lambda s: (s, d_v)).recurrence(
    ZeroMatrix(0, d_v), lambda s: block([[O[s]], [transpose(mul(S[s + 1], q[s + 1]))]]))

# one chunk of C tokens after a prefix of c tokens
Q_a, Q_b = MatrixSymbol("Q_a", c, d_k), MatrixSymbol("Q_b", C, d_k)
K_a, K_b = MatrixSymbol("K_a", c, d_k), MatrixSymbol("K_b", C, d_k)
V_a, V_b = MatrixSymbol("V_a", c, d_v), MatrixSymbol("V_b", C, d_v)
S_c = MatrixSymbol("S_c", d_v, d_k)
Q_all, K_all, V_all = block([[Q_a], [Q_b]]), block([[K_a], [K_b]]), block([[V_a], [V_b]])

#: What the theorem means for transformers (printed after its proof in the article).
MEANING_CHUNKWISE_LINEAR_ATTENTION = (
    r"Causal linear attention computed with the mask, $\operatorname{tril}(QK^{\top})V$, and computed as a "
    r"recurrence, $o_t = S_t q_t$ with $S_t = S_{t-1} + v_t k_t^{\top}$, are the same function of every prefix. "
    r"Split the tokens into a prefix and a chunk: the chunk's outputs are its queries applied to the state carried "
    r"from the prefix plus the chunk's own masked attention, and the state after the chunk is the carried state "
    r"plus $V_{\mathrm{chunk}}^{\top}K_{\mathrm{chunk}}$. This is the chunkwise-parallel form that linear-attention "
    r"kernels run, with no condition on the chunk's length or the prefix's."
)


#: The printed chunk functions (issue 42): a chunk's outputs and the state it hands on, from the checked lemmas.
CHUNK_ROUTES = [Route("chunk_outputs", "chunk_outputs", {"Q_b": "Q", "K_b": "K", "V_b": "V", "S_c": "state"}),
                Route("chunk_state", "carried_state", {"K_b": "K", "V_b": "V", "S_c": "state"})]


@theorem(meaning=MEANING_CHUNKWISE_LINEAR_ATTENTION, routes=CHUNK_ROUTES, glossary={
    "v": "the value at each time step", "k": "its key", "q": "the query at each time step",
    "S": "the state $\\sum_{i \\le t} v_i k_i^{\\top}$, $S_0 = 0$",
    "V": "the values so far, one per row", "K": "the keys so far, one per row", "Q": "the queries so far, one per row",
    "O": "the outputs of the recurrence so far, row $i$ is $(S_i q_i)^{\\top}$",
    "Q_a": "the queries of the prefix", "K_a": "the keys of the prefix", "V_a": "the values of the prefix",
    "Q_b": "the queries of the chunk", "K_b": "the keys of the chunk", "V_b": "the values of the chunk",
    "S_c": "the state carried from the prefix, $V_a^{\\top}K_a$",
    "d_v": "width of a value", "d_k": "width of a key and a query", "t": "time step (length of the prefix)",
    "c": "length of the prefix", "C": "length of the chunk",
})
def chunkwise_linear_attention() -> Proof:
    b = ProofBuilder(
        "chunkwise_linear_attention",
        "Chunkwise causal linear attention is the recurrence",
        "Let tokens (q_t, k_t, v_t) arrive one at a time and Q_t, K_t, V_t stack the first t of them as rows. The "
        "recurrence S_t = S_{t−1} + v_t k_tᵀ (S_0 = 0), o_t = S_t q_t, and the masked form tril(Q_tK_tᵀ)V_t give the "
        "same outputs for every t: tril(Q_tK_tᵀ)V_t = O_t, whose row i is (S_i q_i)ᵀ. For a prefix of any length c "
        "and a chunk of any length C after it, with Q = [Q_a; Q_b], K = [K_a; K_b], V = [V_a; V_b] and the carried "
        "state S_c = V_aᵀK_a, the state after the chunk is VᵀK = S_c + V_bᵀK_b, the chunk's rows of the outputs are "
        "[0 I]tril(QKᵀ)V = Q_bS_cᵀ + tril(Q_bK_bᵀ)V_b, and tril(QKᵀ)V = [tril(Q_aK_aᵀ)V_a; Q_bS_cᵀ + "
        "tril(Q_bK_bᵀ)V_b]: the chunk's outputs are its queries on the carried state plus its own masked attention.",
        [Hypothesis("carried_state_of_the_prefix", S_c, mul(transpose(V_a), K_a))],
        families=[v, kk, q, S, V, K, Qs, O],
    )
    b.induction("memory_sum", t, S[t], mul(transpose(V[t]), K[t])).auto()
    b.induction("masked_is_recurrent", t, mul(tril(mul(Qs[t], transpose(K[t]))), V[t]), O[t]).auto()
    b.lemma("carried_state", mul(transpose(V_all), K_all)).auto(add(S_c, mul(transpose(V_b), K_b)))
    chunk_part = add(mul(Q_b, transpose(S_c)), mul(tril(mul(Q_b, transpose(K_b))), V_b))
    b.lemma("chunk_outputs", mul(block([[ZeroMatrix(C, c), Identity(C)]]), tril(mul(Q_all, transpose(K_all))),
                                 V_all)).auto(chunk_part)
    b.main(mul(tril(mul(Q_all, transpose(K_all))), V_all)).auto(
        block([[mul(tril(mul(Q_a, transpose(K_a))), V_a)], [chunk_part]]))
    return b.proof()


# --- the delta rule (DeltaNet): S_t = S_{t−1}(I − β_t k_t k_tᵀ) + β_t v_t k_tᵀ, from an initial state S_0 ------------
# β_t is the 1×1 matrix b_t (a per-step write strength); k b kᵀ and v b kᵀ conform as products.

b_ = family("b", (1, 1))
S_0 = MatrixSymbol("S_0", d_v, d_k)


def _erase(s):
    """I − k_{s+1} β_{s+1} k_{s+1}ᵀ: the delta rule's erase factor at step s + 1."""
    return add(Identity(d_k), mul(-1, kk[s + 1], b_[s + 1], transpose(kk[s + 1])))


P = family("P", (d_k, d_k)).recurrence(Identity(d_k), lambda s: mul(P[s], _erase(s)))
D = family("D", (d_v, d_k)).recurrence(
    S_0, lambda s: add(mul(D[s], _erase(s)), mul(v[s + 1], b_[s + 1], transpose(kk[s + 1]))))
W = family("W", lambda s: (s, d_k)).recurrence(ZeroMatrix(0, d_k), lambda s: block(
    [[W[s]], [transpose(mul(add(kk[s + 1], mul(-1, transpose(W[s]), K[s], kk[s + 1])), b_[s + 1]))]]))
U = family("U", lambda s: (s, d_v)).recurrence(ZeroMatrix(0, d_v), lambda s: block(
    [[U[s]], [transpose(mul(add(v[s + 1], mul(-1, transpose(U[s]), K[s], kk[s + 1])), b_[s + 1]))]]))
O_D = family("O", lambda s: (s, d_v)).recurrence(
    ZeroMatrix(0, d_v), lambda s: block([[O_D[s]], [transpose(mul(D[s + 1], q[s + 1]))]]))

DELTA_GLOSSARY = {
    "v": "the value at each time step", "k": "its key", "q": "the query at each time step",
    "b": "the write strength $\\beta_t$ at each step (a $1 \\times 1$ matrix)",
    "S_0": "the initial state (carried from earlier chunks)",
    "P": "the product $\\prod_{i \\le t}(I - \\beta_i k_i k_i^{\\top})$, $P_0 = I$",
    "D": "the delta-rule state, $D_0 = S_0$", "K": "the keys so far, one per row",
    "Q": "the queries so far, one per row", "W": "the WY keys, row $t$ is $w_t^{\\top}$",
    "U": "the UT values, row $t$ is $u_t^{\\top}$", "O": "the outputs so far, row $i$ is $(D_i q_i)^{\\top}$",
    "d_v": "width of a value", "d_k": "width of a key and a query", "t": "time step",
}

MEANING_DELTA_RULE_WY = (
    r"The delta rule's state after $t$ writes is the initial state times a product of $t$ rank-one erasures, "
    r"plus what was written. The WY representation replaces the product by one low-rank correction, "
    r"$\prod_{i \le t}(I - \beta_i k_i k_i^{\top}) = I - W_t^{\top}K_t$, whose rows $w_t$ follow a recursion that "
    r"needs only the earlier rows, and the UT transform does the same for the values. This is what makes "
    r"DeltaNet trainable in parallel over a chunk, here checked for every length."
)


@theorem(meaning=MEANING_DELTA_RULE_WY, glossary=DELTA_GLOSSARY)
def delta_rule_wy() -> Proof:
    b = ProofBuilder(
        "delta_rule_wy",
        "The delta rule in WY form",
        "Let keys k_t, values v_t and write strengths β_t arrive one at a time, K_t stacking the first t keys as "
        "rows. The product P_t = P_{t−1}(I − β_t k_t k_tᵀ) (P_0 = I) is I − W_tᵀK_t for every t, where W_t stacks "
        "w_i = β_i(k_i − W_{i−1}ᵀK_{i−1}k_i). The delta-rule state D_t = D_{t−1}(I − β_t k_t k_tᵀ) + β_t v_t k_tᵀ "
        "from D_0 = S_0 is S_0P_t + U_tᵀK_t, where U_t stacks u_i = β_i(v_i − U_{i−1}ᵀK_{i−1}k_i); so "
        "D_t = S_0 + (U_t − W_tS_0ᵀ)ᵀK_t.",
        families=[v, kk, b_, P, D, K, W, U],
    )
    b.induction("wy", t, P[t], add(Identity(d_k), mul(-1, transpose(W[t]), K[t]))).auto()
    b.induction("ut", t, D[t], add(mul(S_0, P[t]), mul(transpose(U[t]), K[t]))).auto()
    b.main(D[t]).auto(add(S_0, mul(transpose(add(U[t], mul(-1, W[t], transpose(S_0)))), K[t])))
    return b.proof()


MEANING_DELTA_RULE_CHUNKWISE = (
    r"A chunk of DeltaNet is computed in parallel: its outputs are the queries on the state carried into the chunk "
    r"plus masked attention over the chunk's UT values corrected by the carried state, "
    r"$O = QS_0^{\top} + \operatorname{tril}(QK^{\top})(U - WS_0^{\top})$, and the state handed to the next chunk "
    r"is $S_0 + (U - WS_0^{\top})^{\top}K$. Both equal the token-by-token recurrence for every chunk length, "
    r"whatever the initial state."
)


#: The printed DeltaNet chunk functions (issue 42): a chunk's outputs from its UT values and WY keys, and the state it
#: hands on, each the members at t of a checked claim for every chunk length t.
DELTA_ROUTES = [Route("delta_chunk_outputs", "chunk_outputs", {"Q": "Q", "K": "K", "U": "U", "W": "W", "S_0": "state"}),
                Route("delta_chunk_state", "main", {"K": "K", "U": "U", "W": "W", "S_0": "state"})]


@theorem(meaning=MEANING_DELTA_RULE_CHUNKWISE, glossary=DELTA_GLOSSARY, routes=DELTA_ROUTES)
def delta_rule_chunkwise() -> Proof:
    b = ProofBuilder(
        "delta_rule_chunkwise",
        "The delta rule chunkwise, with a carried state",
        "With the delta-rule state D_t = D_{t−1}(I − β_t k_t k_tᵀ) + β_t v_t k_tᵀ from D_0 = S_0 and its outputs "
        "o_t = D_t q_t stacked as the rows of O_t, and W_t, U_t the WY keys and UT values of the chunk so far "
        "(w_i = β_i(k_i − W_{i−1}ᵀK_{i−1}k_i), u_i = β_i(v_i − U_{i−1}ᵀK_{i−1}k_i)): for every length t, "
        "O_t = Q_tS_0ᵀ + tril(Q_tK_tᵀ)(U_t − W_tS_0ᵀ), and the state handed on is D_t = S_0 + (U_t − W_tS_0ᵀ)ᵀK_t.",
        families=[v, kk, q, b_, P, D, K, Qs, W, U, O_D],
    )
    b.induction("wy", t, P[t], add(Identity(d_k), mul(-1, transpose(W[t]), K[t]))).auto()
    b.induction("ut", t, D[t], add(mul(S_0, P[t]), mul(transpose(U[t]), K[t]))).auto()
    corrected = add(U[t], mul(-1, W[t], transpose(S_0)))
    b.induction("chunk_outputs", t, O_D[t],
                add(mul(Qs[t], transpose(S_0)), mul(tril(mul(Qs[t], transpose(K[t]))), corrected))).auto()
    b.main(D[t]).auto(add(S_0, mul(transpose(corrected), K[t])))
    return b.proof()


# --- recursive least squares is the delta rule with the write key P_t x_t ------------------------------------------

p_, k_ = dim("p"), dim("k")
A_, B_ = MatrixSymbol("A", p_, p_), MatrixSymbol("B", k_, p_)
x_, y_ = MatrixSymbol("x", p_, 1), MatrixSymbol("y", k_, 1)
P_next = MatrixSymbol("P", p_, p_)
S_prev, S_next = MatrixSymbol("S", k_, p_), MatrixSymbol("S_next", k_, p_)
_gram_next = add(A_, mul(x_, transpose(x_)))

MEANING_RLS_IS_DELTA_RULE = (
    r"Recursive least squares is a delta rule: the least-squares (or ridge) solution after one more example is the "
    r"previous one plus the prediction error $y - Sx$ written with the key $P^{\top}x$ ($= Px$ for a symmetric Gram "
    r"matrix), where $P$ is the inverse of the new "
    r"Gram matrix. A delta-rule layer whose write key is preconditioned by the slow memory is an exact online "
    r"regression solver, and the plain delta rule is its approximation with $P$ replaced by $\beta I$."
)


@theorem(meaning=MEANING_RLS_IS_DELTA_RULE, glossary={
    "A": "the Gram matrix so far, $X^{\\top}X$ or $X^{\\top}X + \\lambda I$ (invertible)",
    "B": "the fast memory so far, $Y^{\\top}X$", "x": "the new example", "y": "its target",
    "P": "the slow memory $(A + xx^{\\top})^{-1}$ after the new example",
    "S": "the solution so far, $BA^{-1}$ (a state, $k \\times p$)", "S_next": "the solution with the new example",
    "p": "number of features", "k": "number of targets",
})
def rls_is_delta_rule() -> Proof:
    b = ProofBuilder(
        "rls_is_delta_rule",
        "Recursive least squares is the delta rule",
        "Let A be an invertible Gram matrix (XᵀX, or XᵀX + λI for ridge) and B = YᵀX the fast memory, so S = BA⁻¹ "
        "is the least-squares solution as a state (k × p). After one more example (x, y) with A + xxᵀ invertible, the "
        "solution is S_next = (B + yxᵀ)P with P = (A + xxᵀ)⁻¹. Then S_next = S + (y − Sx)xᵀP: one delta-rule write "
        "of the value y with the key x and the write key Pᵀx (Px for a symmetric A).",
        [predicate("gram_invertible", Q.invertible, A_), predicate("next_gram_invertible", Q.invertible, _gram_next)],
        [Definition("P", P_next, inv(_gram_next)), Definition("S", S_prev, mul(B_, inv(A_))),
         Definition("S_next", S_next, mul(add(B_, mul(y_, transpose(x_))), P_next))],
    )
    b.main(S_next).auto(add(S_prev, mul(add(y_, mul(-1, S_prev, x_)), transpose(x_), P_next)))
    return b.proof()


# --- decays: a per-step gate g_t (a 1×1 matrix, read as the scalar tr g_t), as in RetNet (constant) and Mamba-2 ------


g_ = family("g", (1, 1))
Gam = family("Gamma", (d_k, d_k)).recurrence(Identity(d_k), lambda s: mul(Trace(g_[s + 1]), Gam[s]))
S_g = family("S", (d_v, d_k)).recurrence(
    S_0, lambda s: add(mul(Trace(g_[s + 1]), S_g[s]), mul(v[s + 1], transpose(kk[s + 1]))))
K_g = family("K", lambda s: (s, d_k)).recurrence(  # the keys so far, each decayed by the gates after it
    ZeroMatrix(0, d_k), lambda s: block([[mul(Trace(g_[s + 1]), K_g[s])], [transpose(kk[s + 1])]]))
Q_g = family("Q", lambda s: (s, d_k)).recurrence(  # the queries so far, each decayed by the gates up to it
    ZeroMatrix(0, d_k), lambda s: block([[Q_g[s]], [mul(transpose(q[s + 1]), transpose(Gam[s + 1]))]]))
A_g = family("A", lambda s: (s, s)).recurrence(  # the decayed causal scores: row s + 1 from the decayed keys
    ZeroMatrix(0, 0), lambda s: block([[A_g[s], ZeroMatrix(s, 1)],
                                       [mul(Trace(g_[s + 1]), transpose(q[s + 1]), transpose(K_g[s])),
                                        mul(transpose(q[s + 1]), kk[s + 1])]]))
O_g = family("O", lambda s: (s, d_v)).recurrence(
    ZeroMatrix(0, d_v), lambda s: block([[O_g[s]], [transpose(mul(S_g[s + 1], q[s + 1]))]]))

DECAY_GLOSSARY = {
    "v": "the value at each time step", "k": "its key", "q": "the query at each time step",
    "g": "the gate $\\gamma_t$ at each step (a $1 \\times 1$ matrix; RetNet's constant, Mamba-2's per step)",
    "S_0": "the state carried into the chunk", "S": "the decayed state, $S_0$ at the start",
    "Gamma": "the product of the gates so far times $I$, $\\Gamma_0 = I$",
    "V": "the values so far, one per row", "K": "the keys so far, each decayed by the gates after it",
    "Q": "the queries so far, each decayed by the gates up to it",
    "A": "the decayed causal scores $(q_i^{\\top}k_j\\prod_{j < l \\le i}\\gamma_l)_{j \\le i}$",
    "O": "the outputs so far, row $i$ is $(S_i q_i)^{\\top}$",
    "d_v": "width of a value", "d_k": "width of a key and a query", "t": "time step",
}

MEANING_DECAYED_LINEAR_ATTENTION = (
    r"With a decay, linear attention keeps $S_t = \gamma_t S_{t-1} + v_t k_t^{\top}$ (RetNet with a constant "
    r"$\gamma$, Mamba-2 and gated linear attention with a gate per step). Inside a chunk the state is the carried "
    r"state decayed by the product of the gates plus the chunk's values against its keys decayed by the gates after "
    r"them, and the outputs are the decayed queries on the carried state plus the decayed causal scores on the "
    r"values. Every decay here is a product of gates, never a quotient: the form needs no gate to be non-zero and "
    r"cannot overflow the way the factored form $\gamma^{i}/\gamma^{j}$ does when gates are small."
)


# the factored form with one constant decay γ ≠ 0 (RetNet): queries scaled by γ^i, keys by γ^{−i}
gamma = scalar("gamma")
S_c1 = family("S_gamma", (d_v, d_k)).recurrence(
    ZeroMatrix(d_v, d_k), lambda s: add(mul(gamma, S_c1[s]), mul(v[s + 1], transpose(kk[s + 1]))))
O_c1 = family("O_gamma", lambda s: (s, d_v)).recurrence(
    ZeroMatrix(0, d_v), lambda s: block([[O_c1[s]], [transpose(mul(S_c1[s + 1], q[s + 1]))]]))
Q_c1 = family("Q_gamma", lambda s: (s, d_k)).recurrence(
    ZeroMatrix(0, d_k), lambda s: block([[Q_c1[s]], [mul(gamma ** (s + 1), transpose(q[s + 1]))]]))
K_c1 = family("K_gamma", lambda s: (s, d_k)).recurrence(
    ZeroMatrix(0, d_k), lambda s: block([[K_c1[s]], [mul(gamma ** (-(s + 1)), transpose(kk[s + 1]))]]))


@theorem(meaning=MEANING_DECAYED_LINEAR_ATTENTION, glossary={
    **DECAY_GLOSSARY, "gamma": "a constant decay (RetNet), $\\gamma \\ne 0$ for the factored form",
    "S_gamma": "the state with the constant decay, $S_t = \\gamma S_{t-1} + v_tk_t^{\\top}$ from 0",
    "O_gamma": "its outputs, row $i$ is $(S_i q_i)^{\\top}$",
    "Q_gamma": "the queries scaled by $\\gamma^{i}$", "K_gamma": "the keys scaled by $\\gamma^{-i}$",
})
def decayed_linear_attention() -> Proof:
    b = ProofBuilder(
        "decayed_linear_attention",
        "Decayed linear attention chunkwise, without dividing by a gate",
        "Let S_t = γ_t S_{t−1} + v_t k_tᵀ from a carried state S_0, with gates γ_t (RetNet: one constant; Mamba-2: "
        "one per step) and outputs o_t = S_t q_t stacked as the rows of O_t. Let Γ_t = γ_1⋯γ_t I, K_t stack the keys "
        "each multiplied by the gates after it, Q_t the queries each multiplied by the gates up to it, and A_t the "
        "decayed causal scores, row i being γ_i times row i − 1's keys and q_iᵀk_i on the diagonal. For every "
        "length t, S_t = S_0Γ_t + V_tᵀK_t and O_t = Q_tS_0ᵀ + A_tV_t; no gate needs to be non-zero. Separately, the "
        "factored form for one constant decay γ ≠ 0 (S_t = γS_{t−1} + v_tk_tᵀ from 0): with the queries scaled by "
        "γ^i and the keys by γ^{−i}, S_t = γ^tV_tᵀK^γ_t and the outputs are tril(Q^γ_t(K^γ_t)ᵀ)V_t.",
        [predicate("decay_nonzero", Q.nonzero, gamma)],
        families=[v, kk, q, g_, Gam, S_g, V, K_g, Q_g, A_g, O_g, S_c1, O_c1, Q_c1, K_c1],
    )
    b.induction("decayed_state", t, S_g[t], add(mul(S_0, Gam[t]), mul(transpose(V[t]), K_g[t]))).auto()
    b.induction("decayed_outputs", t, O_g[t], add(mul(Q_g[t], transpose(S_0)), mul(A_g[t], V[t]))).auto()
    b.induction("factored_state", t, S_c1[t], mul(gamma ** t, transpose(V[t]), K_c1[t])).auto()
    b.induction("factored_mask", t, mul(tril(mul(Q_c1[t], transpose(K_c1[t]))), V[t]), O_c1[t]).auto()
    b.main(mul(S_g[t], q[t])).auto(add(mul(S_0, Gam[t], q[t]), mul(transpose(V[t]), K_g[t], q[t])))
    return b.proof()


P_g = family("P", (d_k, d_k)).recurrence(Identity(d_k), lambda s: mul(Trace(g_[s + 1]), P_g[s], _erase(s)))
D_g = family("D", (d_v, d_k)).recurrence(
    S_0, lambda s: add(mul(Trace(g_[s + 1]), D_g[s], _erase(s)), mul(v[s + 1], b_[s + 1], transpose(kk[s + 1]))))
W_g = family("W", lambda s: (s, d_k)).recurrence(ZeroMatrix(0, d_k), lambda s: block(
    [[mul(Trace(g_[s + 1]), W_g[s])],
     [transpose(mul(add(mul(Gam[s + 1], kk[s + 1]), mul(-1, Trace(g_[s + 1]), transpose(W_g[s]), K[s], kk[s + 1])),
                    b_[s + 1]))]]))
U_g = family("U", lambda s: (s, d_v)).recurrence(ZeroMatrix(0, d_v), lambda s: block(
    [[mul(Trace(g_[s + 1]), U_g[s])],
     [transpose(mul(add(v[s + 1], mul(-1, Trace(g_[s + 1]), transpose(U_g[s]), K[s], kk[s + 1])), b_[s + 1]))]]))

MEANING_GATED_DELTA_RULE = (
    r"Gated DeltaNet decays the state before each delta-rule write, $S_t = \gamma_t S_{t-1}(I - \beta_t k_t "
    r"k_t^{\top}) + \beta_t v_t k_t^{\top}$. Its WY and UT forms keep the same shape as without the gate: the decayed "
    r"product of erasures is $\Gamma_t - W_t^{\top}K_t$ and the state is $S_0\Gamma_t + (U_t - W_tS_0^{\top})^{\top}"
    r"K_t$, the earlier rows of $W$ and $U$ decayed by each new gate, with no division by a gate."
)


@theorem(meaning=MEANING_GATED_DELTA_RULE, glossary={
    **DELTA_GLOSSARY, "g": DECAY_GLOSSARY["g"], "Gamma": DECAY_GLOSSARY["Gamma"],
    "P": "the decayed product $\\prod_{i \\le t}\\gamma_i(I - \\beta_i k_i k_i^{\\top})$, $P_0 = I$",
    "D": "the gated delta-rule state, $D_0 = S_0$",
    "W": "the gated WY keys (earlier rows decayed by each new gate)",
    "U": "the gated UT values (earlier rows decayed by each new gate)",
})
def gated_delta_rule() -> Proof:
    b = ProofBuilder(
        "gated_delta_rule",
        "The gated delta rule in WY form",
        "Let D_t = γ_t D_{t−1}(I − β_t k_t k_tᵀ) + β_t v_t k_tᵀ from D_0 = S_0 (Gated DeltaNet), Γ_t = γ_1⋯γ_t I, and "
        "P_t = γ_t P_{t−1}(I − β_t k_t k_tᵀ) from P_0 = I. With W_t = [γ_tW_{t−1}; w_tᵀ], w_t = β_t(Γ_tk_t − "
        "γ_tW_{t−1}ᵀK_{t−1}k_t) and U_t = [γ_tU_{t−1}; u_tᵀ], u_t = β_t(v_t − γ_tU_{t−1}ᵀK_{t−1}k_t): for every t, "
        "P_t = Γ_t − W_tᵀK_t, D_t = S_0P_t + U_tᵀK_t, and so D_t = S_0Γ_t + (U_t − W_tS_0ᵀ)ᵀK_t.",
        families=[v, kk, g_, b_, Gam, P_g, D_g, K, W_g, U_g],
    )
    b.induction("gated_wy", t, P_g[t], add(Gam[t], mul(-1, transpose(W_g[t]), K[t]))).auto()
    b.induction("gated_ut", t, D_g[t], add(mul(S_0, P_g[t]), mul(transpose(U_g[t]), K[t]))).auto()
    b.main(D_g[t]).auto(add(mul(S_0, Gam[t]), mul(transpose(add(U_g[t], mul(-1, W_g[t], transpose(S_0)))), K[t])))
    return b.proof()


lam = scalar("lambda", positive=True)
R_m = family("R", (d_k, d_k)).recurrence(
    mul(lam, Identity(d_k)), lambda s: add(mul(Trace(g_[s + 1]), R_m[s]), mul(kk[s + 1], transpose(kk[s + 1]))))
M_m = family("M", (d_v, d_k)).recurrence(
    ZeroMatrix(d_v, d_k), lambda s: add(mul(Trace(g_[s + 1]), M_m[s]), mul(v[s + 1], transpose(kk[s + 1]))))
K_w = family("K_w", lambda s: (s, d_k)).recurrence(  # D_tK_t: the keys weighted by the gates after them
    ZeroMatrix(0, d_k), lambda s: block([[mul(Trace(g_[s + 1]), K_w[s])], [transpose(kk[s + 1])]]))

MEANING_CAUSAL_WEIGHTED_RIDGE = (
    r"MesaNet's layer keeps a decayed Gram matrix $R_t = \gamma_t R_{t-1} + k_t k_t^{\top}$ ($R_0 = \lambda I$) and a "
    r"decayed memory $M_t = \gamma_t M_{t-1} + v_t k_t^{\top}$, and reads out $M_t R_t^{-1} q_t$. Both are the "
    r"weighted least-squares quantities of the prefix with the products of later gates as weights: "
    r"$M_t = V_t^{\top}D_tK_t$ and $R_t = K_t^{\top}D_tK_t + \lambda\Gamma_t$, so the layer computes, on every prefix, "
    r"exact weighted ridge regression with a decaying penalty."
)


@theorem(meaning=MEANING_CAUSAL_WEIGHTED_RIDGE, glossary={
    "v": "the value at each time step", "k": "its key", "g": DECAY_GLOSSARY["g"], "Gamma": DECAY_GLOSSARY["Gamma"],
    "R": "the decayed Gram matrix, $R_0 = \\lambda I$", "M": "the decayed memory, $M_0 = 0$",
    "K": "the keys so far, one per row", "V": "the values so far, one per row",
    "K_w": "the keys so far, each weighted by the product of the gates after it ($D_tK_t$)",
    "lambda": "ridge penalty, $\\lambda > 0$", "d_v": "width of a value", "d_k": "width of a key", "t": "time step",
})
def causal_weighted_ridge() -> Proof:
    b = ProofBuilder(
        "causal_weighted_ridge",
        "Decayed causal ridge is weighted ridge on every prefix",
        "Let R_t = γ_tR_{t−1} + k_tk_tᵀ from R_0 = λI (λ > 0) and M_t = γ_tM_{t−1} + v_tk_tᵀ from M_0 = 0, the "
        "state of a MesaNet layer with gates γ_t, and let D_t be the diagonal matrix of the products of the gates "
        "after each step (D_tK_t stacks the keys so weighted). For every prefix t, M_t = V_tᵀD_tK_t and "
        "R_t = K_tᵀD_tK_t + λΓ_t, Γ_t = γ_1⋯γ_t I: the cross-moment and the Gram matrix of weighted ridge "
        "regression with the decay as weights, so M_tR_t = V_tᵀD_tK_t(K_tᵀD_tK_t + λΓ_t).",
        families=[v, kk, g_, Gam, R_m, M_m, K, V, K_w],
    )
    b.induction("decayed_gram", t, R_m[t], add(mul(lam, Gam[t]), mul(transpose(K_w[t]), K[t]))).auto()
    b.induction("decayed_memory", t, M_m[t], mul(transpose(V[t]), K_w[t])).auto()
    b.main(mul(M_m[t], R_m[t])).auto(
        mul(transpose(V[t]), K_w[t], add(mul(transpose(K_w[t]), K[t]), mul(lam, Gam[t]))))
    return b.proof()
