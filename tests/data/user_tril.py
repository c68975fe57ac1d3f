"""A user's theorem file for the causal mask tril(A, k) (issues 41 and 42), public authoring API only.

- chunkwise causal linear attention: for queries, keys and values split into a chunk of c rows and one of C rows,
  tril(QKᵀ)V is, chunk by chunk, the masked attention inside the chunk plus the unmasked attention to the earlier
  chunk (the kernel's ``tril_block``), and the same with the strict mask tril(·, -1);
- a 1×1 attention score is its own mask (``tril_scalar``), and its strict mask is 0;
- the mask of a sum and of a scaled matrix (``tril_sum``, ``tril_scale``), and of I (``tril_diagonal``);
- a decay diag(g) on the rows of the scores passes through the mask (``tril_diag_scale``);
- DeltaNet's unit lower triangular T = I + β·tril(KKᵀ, -1) is invertible (determinant 1), so T⁻¹T = I, and a
  row-scaled T = I + diag(b)·tril(KKᵀ, -1) too.
Each chain is proved by ``.auto``; ``tests/test_coq_tril.py`` exports each theorem and compiles it with coqc.
"""

from sympy import Identity, MatrixSymbol, ZeroMatrix

from derive import Definition, ProofBuilder, add, block, diag, dim, inv, mul, scalar, theorem, transpose, tril

c, C, d, e = dim("c"), dim("C"), dim("d"), dim("e")
Qa, Qb = MatrixSymbol("Q_a", c, d), MatrixSymbol("Q_b", C, d)
Ka, Kb = MatrixSymbol("K_a", c, d), MatrixSymbol("K_b", C, d)
Va, Vb = MatrixSymbol("V_a", c, e), MatrixSymbol("V_b", C, e)
Q, K, V = block([[Qa], [Qb]]), block([[Ka], [Kb]]), block([[Va], [Vb]])
CHUNKS = {"Q_a": "the queries of the first chunk", "Q_b": "the queries of the second chunk",
          "K_a": "the keys of the first chunk", "K_b": "the keys of the second chunk",
          "V_a": "the values of the first chunk", "V_b": "the values of the second chunk"}


def _chunkwise(offset: int):
    inside = [tril(mul(Qa, transpose(Ka)), offset), tril(mul(Qb, transpose(Kb)), offset)]
    return block([[mul(inside[0], Va)], [add(mul(Qb, transpose(Ka), Va), mul(inside[1], Vb))]])


@theorem(glossary=CHUNKS)
def tril_chunkwise_attention():
    b = ProofBuilder("tril_chunkwise_attention", "Chunkwise causal linear attention",
                     "For Q = [Q_a; Q_b], K = [K_a; K_b], V = [V_a; V_b] (chunks of c and C rows), "
                     "tril(QKᵀ)V = [tril(Q_aK_aᵀ)V_a; Q_bK_aᵀV_a + tril(Q_bK_bᵀ)V_b].")
    b.main(mul(tril(mul(Q, transpose(K))), V)).auto(_chunkwise(0))
    return b.proof()


@theorem(glossary=CHUNKS)
def tril_chunkwise_strict():
    b = ProofBuilder("tril_chunkwise_strict", "Chunkwise strictly causal linear attention",
                     "For Q = [Q_a; Q_b], K = [K_a; K_b], V = [V_a; V_b] (chunks of c and C rows), "
                     "tril(QKᵀ, -1)V = [tril(Q_aK_aᵀ, -1)V_a; Q_bK_aᵀV_a + tril(Q_bK_bᵀ, -1)V_b].")
    b.main(mul(tril(mul(Q, transpose(K)), -1), V)).auto(_chunkwise(-1))
    return b.proof()


q, k = MatrixSymbol("q", d, 1), MatrixSymbol("k", d, 1)


@theorem(glossary={"q": "a query", "k": "a key"})
def tril_one_score():
    b = ProofBuilder("tril_one_score", "A single score is causal", "For columns q, k: tril(qᵀk) = qᵀk.")
    b.main(tril(mul(transpose(q), k))).auto(mul(transpose(q), k))
    return b.proof()


@theorem(glossary={"q": "a query", "k": "a key"})
def tril_one_score_strict():
    b = ProofBuilder("tril_one_score_strict", "A single score has no strictly earlier entry",
                     "For columns q, k: tril(qᵀk, -1) = 0.")
    b.main(tril(mul(transpose(q), k), -1)).auto(ZeroMatrix(1, 1))
    return b.proof()


n = dim("n")
A, B = MatrixSymbol("A", n, n), MatrixSymbol("B", n, n)
X, Y = MatrixSymbol("X", n, d), MatrixSymbol("Y", n, d)
beta = scalar("beta", positive=True)
gamma = scalar("gamma")


@theorem(glossary={"beta": "a step size", "gamma": "a scalar"})
def tril_sum_and_scale():
    b = ProofBuilder("tril_sum_and_scale", "The mask is linear",
                     "tril(βA − γB + I) = β·tril(A) − γ·tril(B) + I.")
    b.main(tril(add(mul(beta, A), mul(-1, gamma, B), Identity(n)))).auto(
        add(mul(beta, tril(A)), mul(-1, gamma, tril(B)), Identity(n)))
    return b.proof()


@theorem(glossary={"beta": "a step size"})
def tril_strict_sum():
    b = ProofBuilder("tril_strict_sum", "The strict mask is linear, and drops the diagonal",
                     "tril(XYᵀ + βI, -1) = tril(XYᵀ, -1).")
    b.main(tril(add(mul(X, transpose(Y)), mul(beta, Identity(n))), -1)).auto(tril(mul(X, transpose(Y)), -1))
    return b.proof()


g, w = MatrixSymbol("g", n, 1), MatrixSymbol("w", n, 1)


@theorem(glossary={"g": "a diagonal"})
def tril_strict_drops_diagonal():
    b = ProofBuilder("tril_strict_drops_diagonal", "The strict mask drops a diagonal",
                     "tril(diag(g) + XYᵀ, -1) = tril(XYᵀ, -1), and tril(diag(g)) = diag(g).")
    b.main(add(tril(add(diag(g), mul(X, transpose(Y))), -1), tril(diag(g)))).auto(
        add(tril(mul(X, transpose(Y)), -1), diag(g)))
    return b.proof()


P, R = MatrixSymbol("P", c, c), MatrixSymbol("R", C, C)
J, L = MatrixSymbol("J", C, c), MatrixSymbol("L", c, C)


@theorem(glossary={"P": "the first diagonal block", "R": "the second diagonal block", "J": "the block below",
                   "L": "the block above"})
def tril_blocks_reassembled():
    b = ProofBuilder("tril_blocks_reassembled", "Masked blocks reassemble",
                     "[[tril(P), 0], [J, tril(R)]] = tril([[P, L], [J, R]]) for square P and R.")
    b.main(block([[tril(P), ZeroMatrix(c, C)], [J, tril(R)]])).auto(tril(block([[P, L], [J, R]])))
    return b.proof()


@theorem(glossary={"g": "the decays, one per row", "w": "the weights, one per column"})
def tril_decayed_scores():
    b = ProofBuilder("tril_decayed_scores", "A row decay passes through the mask",
                     "tril(diag(g)XYᵀdiag(w)) = diag(g)·tril(XYᵀ)·diag(w).")
    b.main(tril(mul(diag(g), X, transpose(Y), diag(w)))).auto(
        mul(diag(g), tril(mul(X, transpose(Y))), diag(w)))
    return b.proof()


@theorem(glossary={"g": "the decays, one per row", "beta": "a step size"})
def tril_decayed_scaled_strict():
    b = ProofBuilder("tril_decayed_scaled_strict", "A scaled row decay passes through the strict mask",
                     "tril(β·diag(g)XYᵀ, -1) = β·diag(g)·tril(XYᵀ, -1).")
    b.main(tril(mul(beta, diag(g), X, transpose(Y)), -1)).auto(
        mul(beta, diag(g), tril(mul(X, transpose(Y)), -1)))
    return b.proof()


Kt = MatrixSymbol("K", n, d)
U = MatrixSymbol("U", n, e)


@theorem(glossary={"K": "the keys, one per row", "U": "the right-hand sides", "beta": "the learning rate"})
def tril_unit_lower_inverse():
    T = add(Identity(n), mul(beta, tril(mul(Kt, transpose(Kt)), -1)))
    b = ProofBuilder("tril_unit_lower_inverse", "DeltaNet's triangular system is solvable",
                     "T = I + β·tril(KKᵀ, -1) is unit lower triangular, so invertible: T⁻¹TU = U.")
    b.main(mul(inv(T), T, U)).auto(U)
    return b.proof()


Tm = MatrixSymbol("T", n, n)


@theorem(glossary={"K": "the keys, one per row", "T": "DeltaNet's triangular matrix", "beta": "the learning rate"})
def tril_unit_lower_defined():
    b = ProofBuilder("tril_unit_lower_defined", "The triangular system through a definition",
                     "With T := I + β·tril(KKᵀ, -1): T⁻¹T = I.", [],
                     [Definition("T", Tm, add(Identity(n), mul(beta, tril(mul(Kt, transpose(Kt)), -1))))])
    b.main(mul(inv(Tm), Tm)).auto(Identity(n))
    return b.proof()


bv = MatrixSymbol("b", n, 1)


@theorem(glossary={"A": "a matrix", "B": "a matrix", "g": "the decays, one per row", "w": "the weights, one per "
                   "column", "beta": "a step size"})
def tril_unit_lower_three_terms():
    T = add(Identity(n), mul(beta, tril(A, -1)), mul(-1, diag(g), tril(B, -1), diag(w)),
            mul(2, tril(mul(A, B), -1), diag(w)))
    b = ProofBuilder("tril_unit_lower_three_terms", "A sum of masked, scaled terms is unit lower triangular",
                     "T = I + β·tril(A, -1) − diag(g)tril(B, -1)diag(w) + 2·tril(AB, -1)diag(w) is invertible: "
                     "T⁻¹T = I.")
    b.main(mul(inv(T), T)).auto(Identity(n))
    return b.proof()


@theorem(glossary={"K": "the keys, one per row", "b": "the learning rates, one per row"})
def tril_unit_lower_row_scaled():
    T = add(Identity(n), mul(-1, diag(bv), tril(mul(Kt, transpose(Kt)), -1)))
    b = ProofBuilder("tril_unit_lower_row_scaled", "A row-scaled triangular system is solvable",
                     "T = I − diag(b)·tril(KKᵀ, -1) is unit lower triangular, so invertible: TT⁻¹ = I.")
    b.main(mul(T, inv(T))).auto(Identity(n))
    return b.proof()
