"""Normalised attention, (1ᵀKq)⁻¹ VᵀKq: a 1×1 inverse used as a coefficient (issue 41, ``derive codegen`` tests in
tests/test_user_library.py).

- ``normalised_attention``: VᵀKq (1ᵀKq)⁻¹ = (1ᵀKq)⁻¹ VᵀKq for an invertible 1ᵀKq; the route prints the right
  side, whose coefficient is the 1×1 matrix (1ᵀKq)⁻¹ read as a scalar (``derive codegen`` looped forever on it,
  naming fresh shared tails K q inside the coefficient it never cut), and so is the left side, the 1×1 inverse a
  solve on the right (``normalised_attention_solve``);
- ``wide_sum``: a definition whose right side is a sum of 1,500 products, past the printer's bound on the size of
  one route's terms (``MAX_TERM_NODES``): codegen names its term ``wide`` and prints the rest (the term
  ``narrow`` of the same theorem too).
"""

from sympy import MatrixSymbol, Q

from derive import Definition, ProofBuilder, add, dim, inv, mul, predicate, theorem, transpose
from derive.routes import Route, Term

n, d, dv, p = dim("n"), dim("d"), dim("d_v"), dim("p")
K, q, V = MatrixSymbol("K", n, d), MatrixSymbol("q", d, 1), MatrixSymbol("V", n, dv)
one = MatrixSymbol("one", n, 1)  # the ones vector, passed as an argument
normaliser = mul(transpose(one), K, q)  # 1ᵀKq, 1×1
NAMES = {"K": "K", "q": "q", "V": "V", "one": "one"}


@theorem(routes=[Route("normalised_attention", "main", NAMES), Route("normalised_attention_solve", "solve", NAMES)])
def normalised_attention():
    b = ProofBuilder("normalised_attention", "Normalised linear attention",
                     "If 1ᵀKq is invertible, VᵀKq (1ᵀKq)⁻¹ = (1ᵀKq)⁻¹ VᵀKq: the output normalised by the sum of "
                     "the scores, a 1×1 matrix read as a scalar.",
                     [predicate("normaliser_invertible", Q.invertible, normaliser)])
    b.lemma("solve", mul(inv(normaliser), transpose(V), K, q)).auto(mul(transpose(V), K, q, inv(normaliser)))
    b.main(mul(transpose(V), K, q, inv(normaliser))).auto(mul(inv(normaliser), transpose(V), K, q))
    return b.proof()


A = [MatrixSymbol(f"A{i}", p, p) for i in range(30)]
WIDE = add(*[mul(A[i % 30], A[(7 * i + 1) % 30], A[(13 * i + 2) % 30]) for i in range(1500)])


@theorem(routes=[Term("wide", definition="S"), Term("narrow", definition="N")])
def wide_sum():
    S, N = MatrixSymbol("S", p, p), MatrixSymbol("N", p, p)
    b = ProofBuilder("wide_sum", "A wide sum", "S = Σ A_i A_j A_k (1,500 products) and N = A₀A₁; then N = A₀A₁.",
                     [], [Definition("S", S, WIDE), Definition("N", N, mul(A[0], A[1]))])
    b.main(N).rw("def:N").qed(mul(A[0], A[1]))
    return b.proof()
