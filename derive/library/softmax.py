"""Softmax attention is the Nadaraya–Watson estimator; the modern Hopfield update is one softmax-attention step.

The exponential kernel is the one construct the kernel cannot define: a matrix E named in the statement,
whose entries are exp(qᵢᵀkⱼ/τ) by the glossary, with positive row sums held in a diagonal D (hypotheses
D·1 = E·1, D diagonal, D positive definite).  What is checked is everything that follows from those
hypotheses; that E is the exponential of the scores is the reading of the symbols, not a checked fact.
"""

from __future__ import annotations

from sympy import Q
from sympy.matrices.expressions import Identity, MatrixSymbol

from derive.authoring import ProofBuilder, dim, predicate, theorem
from derive.kernel import Definition, Hypothesis, Proof
from derive.kernel.terms import inv, mul, transpose

from .base import m, n

d, N = dim("d"), dim("N")
E, D = MatrixSymbol("E", m, n), MatrixSymbol("D", m, m)
ones_n, ones_m = MatrixSymbol("ones_n", n, 1), MatrixSymbol("ones_m", m, 1)
V, c = MatrixSymbol("V", n, d), MatrixSymbol("c", d, 1)
A, O = MatrixSymbol("A", m, n), MatrixSymbol("O", m, d)


#: What the theorem means for transformers (printed after its proof in the article).
MEANING_SOFTMAX_NADARAYA_WATSON = (
    r"Softmax attention is the Nadaraya--Watson kernel smoother with the exponential kernel: each output "
    r"is a weighted mean of the values, the weights the row-normalised kernel. Linear attention replaces "
    r"that kernel by the linear one and the normalisation by the slow memory $(X^{\top}X)^{-1}$; the "
    r"exponential itself is a named matrix with positive entries here, not something the kernel evaluates."
)


#: What the theorem means for transformers (printed after its proof in the article).
MEANING_HOPFIELD_IS_ATTENTION = (
    r"The update of the modern Hopfield network is one softmax-attention step with the stored patterns as "
    r"keys and values and the state as query: the paper's progression from linear to exponential capacity "
    r"runs through the same attention rule, with the kernel as the only change."
)


@theorem(meaning=MEANING_SOFTMAX_NADARAYA_WATSON, glossary={
    "E": "exponential kernel of the scores, $E_{ij} = \\exp(q_i^{\\top}k_j/\\tau) > 0$",
    "D": "row normalisation: the diagonal of the row sums of $E$", "ones_n": "the vector of $n$ ones",
    "ones_m": "the vector of $m$ ones", "V": "values, one per key", "c": "a constant value",
    "A": "softmax weights $D^{-1}E$", "O": "softmax attention output $AV$", "d": "width of a value",
})
def softmax_nadaraya_watson() -> Proof:
    b = ProofBuilder(
        "softmax_nadaraya_watson",
        "Softmax attention is the Nadaraya–Watson estimator",
        "Let E hold the exponential kernel of the scores (E_ij = exp(q_iᵀk_j/τ), all positive) and D the diagonal of "
        "its row sums (the proof needs only D·1 = E·1 and D positive definite, so it holds for any such D). "
        "Softmax attention O = D⁻¹E V is the Nadaraya–Watson "
        "estimator with that kernel: each output row is the kernel-weighted average of the values, because the "
        "weights A = D⁻¹E sum to one in every row, A·1 = 1; in particular constant values are reproduced: if V = 1cᵀ "
        "then O = 1cᵀ.",
        [predicate("D_positive", Q.positive_definite, D), Hypothesis("row_sums", mul(D, ones_m), mul(E, ones_n))],
        [Definition("A", A, mul(inv(D), E)), Definition("O", O, mul(A, V))],
    )
    b.lemma("constants_reproduced", O, [Hypothesis("constant_values", V, mul(ones_n, transpose(c)))]).auto(
        mul(ones_m, transpose(c)))
    b.main(mul(A, ones_n)).auto(ones_m)
    return b.proof()


X = MatrixSymbol("X", d, N)
xi, E_xi, D_xi = MatrixSymbol("xi", d, 1), MatrixSymbol("E", 1, N), MatrixSymbol("D", 1, 1)
ones_N = MatrixSymbol("ones_N", N, 1)
p_xi, xi_new = MatrixSymbol("p", N, 1), MatrixSymbol("xi_new", d, 1)


@theorem(meaning=MEANING_HOPFIELD_IS_ATTENTION, glossary={
    "X": "stored patterns, one per column", "xi": "the state (the query)",
    "E": "exponential kernel $\\exp(\\beta\\,\\xi^{\\top}X)$ of the state against the patterns",
    "D": "its sum $E\\mathbf{1}$", "ones_N": "the vector of $N$ ones", "p": "softmax of $\\beta X^{\\top}\\xi$",
    "xi_new": "the updated state", "N": "number of stored patterns", "d": "width of a pattern",
})
def hopfield_is_attention() -> Proof:
    b = ProofBuilder(
        "hopfield_is_attention",
        "The modern Hopfield update is one softmax-attention step",
        "Let X hold N stored patterns as columns and ξ the state; E = exp(βξᵀX) (entrywise, positive) and D = E·1 its "
        "sum (positive). The modern Hopfield update ξ_new = X softmax(βXᵀξ) = X p with p = (D⁻¹E)ᵀ is one step of "
        "softmax attention with query ξ and the patterns as keys and values: ξ_newᵀ = D⁻¹E Xᵀ; and the "
        "probabilities p sum to one.",
        [Hypothesis("sum", D_xi, mul(E_xi, ones_N)), predicate("D_positive", Q.positive_definite, D_xi)],
        [Definition("p", p_xi, transpose(mul(inv(D_xi), E_xi))), Definition("xi_new", xi_new, mul(X, p_xi))],
    )
    b.lemma("probabilities_sum_to_one", mul(transpose(ones_N), p_xi)).auto(Identity(1))
    b.main(transpose(xi_new)).auto(mul(inv(D_xi), E_xi, transpose(X)))
    return b.proof()
