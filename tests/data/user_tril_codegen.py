"""A user's theorem file with the causal mask for ``derive codegen`` (issues 41, 42; tests/test_tril_outputs.py).

- ``chunkwise_causal``: causal linear attention over two chunks of queries, keys and values,
  tril(QKᵀ)V = [tril(QₐKₐᵀ)Vₐ; Q_b·KₐᵀVₐ + tril(Q_b·K_bᵀ)·V_b]: the route ``causal_attention`` prints the left side
  (the whole mask), ``chunkwise_attention`` the right (a mask per chunk, the rest a plain product);
- ``chunkwise_strict``: the same with the strictly lower mask tril(·, -1) (the route ``chunkwise_strict_attention``);
- ``scaled_causal_scores``: γ·tril(QKᵀ, -1)V = tril(γQKᵀ, -1)V, with the term ``causal_scores`` (the weights
  tril(γQKᵀ, -1) of V) and the route ``scaled_causal`` (the left side, γ an argument).
"""

from sympy import MatrixSymbol

from derive import ProofBuilder, add, block, dim, mul, scalar, theorem, transpose, tril
from derive.routes import Route, Term

c, C, d, e, t = dim("c"), dim("C"), dim("d"), dim("e"), dim("t")
Q_a, Q_b = MatrixSymbol("Q_a", c, d), MatrixSymbol("Q_b", C, d)
K_a, K_b = MatrixSymbol("K_a", c, d), MatrixSymbol("K_b", C, d)
V_a, V_b = MatrixSymbol("V_a", c, e), MatrixSymbol("V_b", C, e)
Q, K, V = MatrixSymbol("Q", t, d), MatrixSymbol("K", t, d), MatrixSymbol("V", t, e)
gamma = scalar("gamma")


def _chunkwise(theorem_id: str, title: str, k: int):
    stacked = mul(block([[Q_a], [Q_b]]), transpose(block([[K_a], [K_b]])))
    lhs = mul(tril(stacked, k), block([[V_a], [V_b]]))
    rhs = block([[mul(tril(mul(Q_a, transpose(K_a)), k), V_a)],
                 [add(mul(Q_b, transpose(K_a), V_a), mul(tril(mul(Q_b, transpose(K_b)), k), V_b))]])
    b = ProofBuilder(theorem_id, title, "Causal linear attention over two chunks: a mask per chunk, the earlier "
                     "chunk's keys and values in full.", [])
    b.main(lhs).auto(rhs)
    return b.proof()


@theorem(routes=[Route("causal_attention", "main", side="lhs"), Route("chunkwise_attention", "main")])
def chunkwise_causal():
    return _chunkwise("chunkwise_causal", "Chunkwise causal linear attention", 0)


@theorem(routes=[Route("chunkwise_strict_attention", "main")])
def chunkwise_strict():
    return _chunkwise("chunkwise_strict", "Chunkwise strictly causal linear attention", -1)


@theorem(routes=[Term("causal_scores", lemma="main", values="V", names={}),
                 Route("scaled_causal", "main", side="lhs")])
def scaled_causal_scores():
    b = ProofBuilder("scaled_causal_scores", "A scale inside the strictly causal mask",
                     "γ·tril(QKᵀ, -1)V = tril(γQKᵀ, -1)V.", [])
    b.main(mul(gamma, tril(mul(Q, transpose(K)), -1), V)).auto(mul(tril(mul(gamma, Q, transpose(K)), -1), V))
    return b.proof()
