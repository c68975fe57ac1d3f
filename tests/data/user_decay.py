"""A user's theorem file for decayed (gated) linear attention with a constant decay γ (issue 41 item 4, issue 42).

Written with the public authoring API only, each chain proved by ``.auto`` alone (an induction's ``.auto()``
proves its base and its step).  The recurrent form of RetNet-style retention, with the state handed over from an
earlier call (S_0 = S₀, any d×p matrix),

    S_{t+1} = γ S_t + v_{t+1} k_{t+1}ᵀ,

is equal for every t to a closed form built with families:

* ``decayed_prefix_sum`` — S_t = γ^t S₀ + V_tᵀ W_t, where V_t stacks the values v_1ᵀ, …, v_tᵀ (V_0 is
  0×d) and W_t the *decayed* keys, W_{s+1} = [γ W_s; k_{s+1}ᵀ], whose row i is γ^{t−i} k_iᵀ: so V_tᵀ W_t is
  Σ_{i≤t} γ^{t−i} v_i k_iᵀ.  γ is any real number (0 included: γ^0 = 1 and γ^{t+1} = γ·γ^t hold there too); no
  negative power occurs, so nothing is asked of γ.
* ``decayed_attention_factored`` — the *factored* form the chunkwise kernels use: with K̃_t stacking
  γ^{−i} k_iᵀ (K̃_{s+1} = [K̃_s; γ^{−(s+1)} k_{s+1}ᵀ]), W_t = γ^t K̃_t and S_t = γ^t (S₀ + V_tᵀ K̃_t), i.e.
  Σ_{i≤t} γ^{t−i} v_i k_iᵀ = γ^t Σ_{i≤t} γ^{−i} v_i k_iᵀ.  The negative powers γ^{−(s+1)} divide by γ, so γ is
  declared positive (a decay in (0, 1]); with a γ of unknown sign the kernel refuses the recurrence of K̃.

The index exponent t of γ^t is an index symbol (``derive.index``); the kernel's coefficient normal form knows
γ^{t+1} = γ·γ^t and γ^a γ^b = γ^{a+b} (``docs/kernel.md``).
"""

from sympy import MatrixSymbol, ZeroMatrix

from derive import ProofBuilder, add, block, dim, family, index, mul, scalar, theorem, transpose

p, d = dim("p"), dim("d")  # the widths of the keys and of the values
t = index("t")
q = MatrixSymbol("q", p, 1)  # a query
S0 = MatrixSymbol("S_0", d, p)  # the state handed over from an earlier call


def _families(gamma):
    """The keys k_s and values v_s (free), the value prefix V, the decayed key prefix W and the state S."""
    kf, vf = family("k", (p, 1)), family("v", (d, 1))
    V = family("V", lambda s: (s, d)).recurrence(ZeroMatrix(0, d), lambda s: block([[V[s]], [transpose(vf[s + 1])]]))
    W = family("W", lambda s: (s, p)).recurrence(ZeroMatrix(0, p),
                                                 lambda s: block([[mul(gamma, W[s])], [transpose(kf[s + 1])]]))
    S = family("S", (d, p)).recurrence(S0, lambda s: add(mul(gamma, S[s]), mul(vf[s + 1], transpose(kf[s + 1]))))
    return kf, vf, V, W, S


@theorem(glossary={"k": "the key of step s, one column", "v": "the value of step s, one column",
                   "V": "the values so far, one per row", "W": "the decayed keys so far: row i is γ^{t−i} k_iᵀ",
                   "S": "the state of the recurrence", "S_0": "the state handed over from an earlier call",
                   "gamma": "the decay", "q": "a query, one column"})
def decayed_prefix_sum():
    gamma = scalar("gamma")
    kf, vf, V, W, S = _families(gamma)
    b = ProofBuilder(
        "decayed_prefix_sum", "Decayed linear attention: the recurrence is a decayed prefix sum",
        "The state S_t = γS_{t−1} + v_tk_tᵀ from S_0 = S₀ is γ^tS₀ + V_tᵀW_t = γ^tS₀ + Σ_{i≤t} γ^{t−i}v_ik_iᵀ for "
        "every t (W_t stacks the decayed keys γ^{t−i}k_iᵀ), for any real decay γ; so the output S_tq is "
        "γ^tS₀q + V_tᵀW_tq.",
        families=[kf, vf, V, W, S],
    )
    closed = add(mul(gamma ** t, S0), mul(transpose(V[t]), W[t]))
    b.induction("state_closed_form", t, S[t], closed).auto()
    b.main(mul(S[t], q)).auto(add(mul(gamma ** t, S0, q), mul(transpose(V[t]), W[t], q)))
    return b.proof()


@theorem(glossary={"k": "the key of step s, one column", "v": "the value of step s, one column",
                   "V": "the values so far, one per row", "W": "the decayed keys so far: row i is γ^{t−i} k_iᵀ",
                   "K": "the keys so far scaled by γ^{−i}: row i is γ^{−i} k_iᵀ",
                   "S": "the state of the recurrence", "S_0": "the state handed over from an earlier call",
                   "gamma": "the decay, positive", "q": "a query, one column"})
def decayed_attention_factored():
    gamma = scalar("gamma", positive=True)
    kf, vf, V, W, S = _families(gamma)
    K = family("K", lambda s: (s, p)).recurrence(
        ZeroMatrix(0, p), lambda s: block([[K[s]], [mul(gamma ** (-(s + 1)), transpose(kf[s + 1]))]]))
    b = ProofBuilder(
        "decayed_attention_factored", "Decayed linear attention in factored form",
        "For a positive decay γ, the decayed keys are W_t = γ^tK_t with K_t stacking γ^{−i}k_iᵀ, and the state "
        "S_t = γS_{t−1} + v_tk_tᵀ from S_0 = S₀ is γ^t(S₀ + V_tᵀK_t): Σ_{i≤t} γ^{t−i}v_ik_iᵀ = "
        "γ^tΣ_{i≤t} γ^{−i}v_ik_iᵀ, the factored form of chunkwise retention (it divides by γ^i).",
        families=[kf, vf, V, W, K, S],
    )
    b.induction("decayed_keys_factored", t, W[t], mul(gamma ** t, K[t])).auto()
    b.induction("state_factored", t, S[t], add(mul(gamma ** t, S0), mul(gamma ** t, transpose(V[t]), K[t]))).auto()
    b.main(mul(S[t], q)).auto(mul(gamma ** t, add(S0, mul(transpose(V[t]), K[t])), q))
    return b.proof()
