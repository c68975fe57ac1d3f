"""Proof automation: ``ChainBuilder.auto`` proves true identities (the kernel re-checks every step) and ends
false or undefined ones in a ProofError, never in a theorem."""

from __future__ import annotations

import pytest
from sympy import Identity, MatrixSymbol, Q, Rational, ZeroMatrix

from derive import (
    Definition,
    Hypothesis,
    ProofBuilder,
    ProofError,
    Theorem,
    add,
    block,
    check,
    dim,
    inv,
    mul,
    power,
    predicate,
    transpose,
)
from derive.authoring.auto import first_difference, normal_form
from derive.kernel.axioms import AXIOMS
from derive.kernel.terms import canon

n, p, k, m = dim("n"), dim("p"), dim("k"), dim("m")
X, Y, X_q = MatrixSymbol("X", n, p), MatrixSymbol("Y", n, k), MatrixSymbol("X_q", m, p)
A, B = MatrixSymbol("A", p, p), MatrixSymbol("B", p, p)
An, Bpm, Cmk = MatrixSymbol("A", n, p), MatrixSymbol("B", p, m), MatrixSymbol("C", m, k)
Qf, R = MatrixSymbol("Q", n, p), MatrixSymbol("R", p, p)
U, S, V = MatrixSymbol("U", n, p), MatrixSymbol("S", p, p), MatrixSymbol("V", p, p)
H, G = MatrixSymbol("H", n, n), MatrixSymbol("Gamma", p, p)
P1, P2, K1, K2 = MatrixSymbol("P1", p, p), MatrixSymbol("P2", p, p), MatrixSymbol("K1", k, k), MatrixSymbol("K2", k, k)
beta0 = MatrixSymbol("beta0", p, k)
gram = mul(transpose(X), X)
I_n, I_p = Identity(n), Identity(p)
half = Rational(1, 2)

QR = [Hypothesis("qr", X, mul(Qf, R)), Hypothesis("Q_orthonormal", mul(transpose(Qf), Qf), I_p),
      predicate("R_invertible", Q.invertible, R)]
HAT = ([predicate("gram_invertible", Q.invertible, gram)], [Definition("H", H, mul(X, inv(gram), transpose(X)))])
SVD = [Hypothesis("svd", X, mul(U, S, transpose(V))), Hypothesis("U_orthonormal", mul(transpose(U), U), I_p),
       Hypothesis("V_orthonormal", mul(transpose(V), V), I_p), predicate("S_diagonal", Q.diagonal, S),
       predicate("S_positive", Q.positive_definite, S)]
INVERTIBLE = [predicate("A_invertible", Q.invertible, A), predicate("B_invertible", Q.invertible, B)]
residual = add(I_n, mul(-1, H))


def block_diagonal(a, b):
    return block([[a, ZeroMatrix(a.shape[0], b.shape[1])], [ZeroMatrix(b.shape[0], a.shape[1]), b]])


#: True identities, each (hypotheses, definitions, lhs, rhs).
TRUE = {
    "transpose_of_three": ([], [], transpose(mul(An, Bpm, Cmk)), mul(transpose(Cmk), transpose(Bpm), transpose(An))),
    "inverse_transpose_symmetric": ([predicate("A_symmetric", Q.symmetric, A), INVERTIBLE[0]], [],
                                    transpose(inv(A)), inv(A)),
    "inverse_of_transpose": (INVERTIBLE[:1], [], inv(transpose(A)), transpose(inv(A))),
    "inverse_of_product": (INVERTIBLE, [], inv(mul(A, B)), mul(inv(B), inv(A))),
    "ols_through_qr": (QR, [], mul(X_q, inv(gram), transpose(X), Y), mul(X_q, inv(R), transpose(Qf), Y)),
    "coefficients_through_qr": (QR, [], mul(inv(gram), transpose(X), Y), mul(inv(R), transpose(Qf), Y)),
    "qr_stated_backwards": ([Hypothesis("qr", mul(Qf, R), X), *QR[1:]], [], mul(inv(gram), transpose(X), Y),
                            mul(inv(R), transpose(Qf), Y)),
    "hat_idempotent": (*HAT, mul(H, H), H),
    "hat_squared": (*HAT, power(H, 2), H),
    "hat_symmetric": (*HAT, transpose(H), H),
    "hat_as_hypothesis": ([HAT[0][0], Hypothesis("H_is_hat", H, mul(X, inv(gram), transpose(X)))], [],
                          mul(H, H), H),
    "residual_annihilates_X": (*HAT, mul(residual, X), ZeroMatrix(n, p)),
    "residual_idempotent": (*HAT, mul(residual, residual), residual),
    "residual_orthogonal_to_fit": (*HAT, mul(residual, H), ZeroMatrix(n, n)),
    "svd_route": (SVD, [], mul(X_q, inv(gram), transpose(X), Y), mul(X_q, V, inv(S), transpose(U), Y)),
    "svd_precision": (SVD, [], inv(gram), mul(V, power(S, -2), transpose(V))),
    "block_diagonal_product": ([], [], mul(block_diagonal(P1, K1), block_diagonal(P2, K2)),
                               block_diagonal(mul(P1, P2), mul(K1, K2))),
    "gradient_step_from_zero": ([], [Definition("beta0", beta0, ZeroMatrix(p, k))],
                                add(beta0, mul(-1, G, transpose(X), add(mul(X, beta0), mul(-1, Y)))),
                                mul(G, transpose(X), Y)),
    "half_step_from_zero": ([], [], add(ZeroMatrix(p, k), mul(-half, transpose(X), add(mul(X, ZeroMatrix(p, k)),
                                                                                       mul(-1, Y)))),
                            mul(half, transpose(X), Y)),
}

#: False or undefined claims: each must end in a ProofError.
FALSE = {
    "products_commute": (INVERTIBLE, [], mul(A, B), mul(B, A)),
    "transpose_keeps_order": ([], [], transpose(mul(A, B)), mul(transpose(A), transpose(B))),
    "inverse_of_sum": ([*INVERTIBLE, predicate("sum_invertible", Q.invertible, add(A, B))], [],
                       inv(add(A, B)), add(inv(A), inv(B))),
    "hat_is_identity": (*HAT, H, I_n),
    "hat_twice_is_double": (*HAT, mul(H, H), mul(2, H)),
    "orthonormal_columns_are_rows": ([Hypothesis("U_orthonormal", mul(transpose(U), U), I_p)], [],
                                     mul(U, transpose(U)), I_n),
    "root_of_symmetric": ([predicate("A_symmetric", Q.symmetric, A)], [],
                          mul(power(A, half), power(A, half)), A),
    "inverse_of_non_square": ([], [], inv(mul(An, Bpm)), mul(inv(Bpm), inv(An))),
    "qr_without_orthonormality": ([QR[0], QR[2], HAT[0][0]], [], mul(X_q, inv(gram), transpose(X), Y),
                                  mul(X_q, inv(R), transpose(Qf), Y)),
    "conjugation_is_identity": (INVERTIBLE[:1], [], mul(A, B, inv(A)), B),
}


def prove(name: str, hypotheses, definitions, lhs, rhs, **options) -> Theorem:
    b = ProofBuilder(name, name, name, hypotheses, definitions)
    b.main(lhs).auto(rhs, **options)
    return check(b.proof())


@pytest.mark.parametrize("name", sorted(TRUE))
def test_auto_proves_true_identities(name):
    hypotheses, definitions, lhs, rhs = TRUE[name]
    theorem = prove(name, hypotheses, definitions, lhs, rhs)
    assert (theorem.proof.claim.lhs, theorem.proof.claim.rhs) == (canon(lhs), canon(rhs))
    for chain in (*theorem.proof.lemmas, theorem.proof.claim):
        for step in chain.steps:  # every step names a real rule, as a hand-written one does
            assert step.rule in AXIOMS or step.rule.split(":")[0] in {"hyp", "def", "lemma", "thm"}, step.rule


@pytest.mark.parametrize("name", sorted(FALSE))
def test_auto_never_proves_false_or_undefined_claims(name):
    hypotheses, definitions, lhs, rhs = FALSE[name]
    with pytest.raises(ProofError) as info:
        prove(name, hypotheses, definitions, lhs, rhs)
    reason = info.value.reason
    assert "\n" not in str(info.value)
    assert "normalises to" in reason or "is not defined" in reason or "within" in reason, reason


def test_failure_shows_both_normal_forms_and_where_they_differ():
    with pytest.raises(ProofError) as info:
        prove("commute", INVERTIBLE, [], mul(A, B), mul(B, A))
    assert "normalises to A*B" in info.value.reason and "B*A" in info.value.reason
    assert "first differ at A versus B" in info.value.reason
    assert info.value.rule == "auto" and info.value.chain == "main"


def test_an_undefined_side_says_why():
    with pytest.raises(ProofError, match="cannot show that A is diagonal and positive definite"):
        prove("root", [predicate("A_symmetric", Q.symmetric, A)], [], mul(power(A, half), power(A, half)), A)


def test_ols_through_qr_needs_no_invertibility_hypothesis_on_the_gram_matrix():
    """The automation proves XᵀX = RᵀR as a lemma first, which makes (XᵀX)⁻¹ defined for the kernel."""
    theorem = prove("qr", QR, [], mul(X_q, inv(gram), transpose(X), Y), mul(X_q, inv(R), transpose(Qf), Y))
    assert not any(h.is_predicate and h.lhs.arguments[0] == gram for h in theorem.proof.hypotheses)
    assert [(c.lhs, c.rhs) for c in theorem.proof.lemmas] == [(gram, mul(transpose(R), R))]


def test_a_lemma_closed_by_auto_serves_the_main_chain():
    b = ProofBuilder("two_chains", "t", "t", *HAT)
    b.lemma("fit", mul(H, X)).auto(X)
    b.main(mul(H, H, X)).auto(X)
    theorem = check(b.proof())
    assert any(step.rule == "lemma:fit" for step in theorem.proof.claim.steps)


def test_auto_uses_cited_theorems_with_an_instance_it_finds():
    W = MatrixSymbol("W", p, p)
    b = ProofBuilder("cites", "t", "t", [Hypothesis("W_rows", mul(W, transpose(W)), I_p)])
    b.cite("orthogonal_inverse")
    b.main(mul(inv(W), B)).auto(mul(transpose(W), B))
    theorem = check(b.proof())
    assert [s.rule for s in theorem.proof.claim.steps] == ["thm:orthogonal_inverse"]
    assert dict(theorem.proof.claim.steps[0].instance)[MatrixSymbol("U", dim("d"), dim("d"))] == W


def test_auto_is_deterministic():
    first = prove("svd", *TRUE["svd_route"])
    second = prove("svd", *TRUE["svd_route"])
    assert first.digest == second.digest


def test_a_tiny_budget_ends_in_a_proof_error_naming_it():
    with pytest.raises(ProofError, match="within the work budget of 100 units"):
        prove("svd", *TRUE["svd_route"], budget=100)


def test_a_tiny_timeout_interrupts_and_says_so():
    """The wall-clock guard is no verdict: its error says "interrupted", never "no chain"."""
    from derive.authoring.auto import AutoInterrupted

    with pytest.raises(AutoInterrupted, match="interrupted") as error:
        prove("svd", *TRUE["svd_route"], timeout=1e-9)
    assert "no chain" not in str(error.value)


@pytest.mark.parametrize("timeout", [0, -1, "10", True])
def test_timeout_must_be_a_positive_number(timeout):
    with pytest.raises(ValueError, match="timeout"):
        prove("t", [], [], transpose(transpose(A)), A, timeout=timeout)


def test_a_budget_that_runs_out_leaves_the_builder_usable():
    b = ProofBuilder("budget", "t", "t", *HAT)
    with pytest.raises(ProofError):
        b.lemma("first", mul(H, H)).auto(H, timeout=1e-9)
    with pytest.raises(ProofError):
        b.lemma("second", mul(H, H)).auto(H, budget=1)
    b.main(mul(H, H)).auto(H)
    assert isinstance(check(b.proof()), Theorem)


def test_normal_form_and_first_difference():
    b = ProofBuilder("nf", "t", "t", *HAT)
    chain = b.main(mul(H, H))
    assert normal_form(chain, mul(H, H)) == normal_form(chain, H)
    assert first_difference(mul(A, B), mul(A, A)) == (B, A)
    assert first_difference(transpose(A), B) == (transpose(A), B)
