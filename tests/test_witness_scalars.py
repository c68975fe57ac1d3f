"""The witness with scalar coefficients: derive.scalar symbols, 1×1 matrices read as scalars, zero where allowed.

Scalars are sampled (positive rationals for positive ones, non-zero rationals for real ones) and, for real
ones, set to 0 on extra degenerate samples: a claim stated for every real η must hold at η = 0 where it is
defined there.  As identities, scalars are parameters of the field of rational functions.  True ridge-type
identities pass; wrong coefficients, a claim false only at 0 and a step that needs Λ invertible are refuted.
"""

from __future__ import annotations

import dataclasses

import pytest
from sympy import Matrix, Q, Rational, Trace, eye
from sympy.matrices.expressions import Identity, MatMul, MatrixSymbol

import derive
from derive import Hypothesis, ProofBuilder, add, dim, inv, mul, predicate, scalar, transpose
from derive.authoring import orthogonal as orthonormal
from derive.kernel import Chain, Proof, Step
from derive.witness import WitnessError, check_identity, check_instances, evaluate, witness_all

n, p = dim("n"), dim("p")
lam = scalar("lam", positive=True)
eta = scalar("eta")
X = MatrixSymbol("X", n, p)
A, B = MatrixSymbol("A", n, p), MatrixSymbol("B", n, p)
M = MatrixSymbol("M", p, p)
u, v = MatrixSymbol("u", p, 1), MatrixSymbol("v", p, 1)
V, Lam = MatrixSymbol("V", p, p), MatrixSymbol("Lambda", p, p)
I_p = Identity(p)


def hand_made(name: str, hypotheses, lhs, rhs, steps=()) -> Proof:
    """A proof the kernel need not accept: the witness evaluates it all the same."""
    return Proof(name, name, "", tuple(hypotheses), (), (), Chain("main", lhs, rhs, tuple(steps)))


def refuted(proof: Proof, **kwargs) -> WitnessError:
    with pytest.raises(WitnessError) as info:
        check_instances(proof, **kwargs)
    assert not info.value.cannot_sample
    return info.value


def with_step(proof: Proof, index: int, expr) -> Proof:
    steps = list(proof.claim.steps)
    steps[index - 1] = dataclasses.replace(steps[index - 1], expr=expr)
    return dataclasses.replace(proof, claim=dataclasses.replace(proof.claim, steps=tuple(steps)))


# --- the evaluator ---------------------------------------------------------------------------


def test_coefficients_with_scalar_symbols_and_trace_atoms_evaluate_exactly():
    a = Matrix([[1, 2], [3, 4], [5, 7]])
    value = evaluate(add(mul(transpose(X), X), mul(lam, I_p)), {X: a}, {n: 3, p: 2}, {lam: Rational(3, 2)})
    assert value == a.T * a + Rational(3, 2) * eye(2)
    assert evaluate(mul(1 / (eta + 1), X), {X: a}, {n: 3, p: 2}, {eta: 2}) == a / 3
    s = MatrixSymbol("s", 1, 1)
    scaled = mul(s, M)  # a 1×1 factor beside a p×p one is the scalar it holds
    assert isinstance(scaled, MatMul) and Trace(s) in scaled.args
    m = Matrix([[1, 2], [0, 3]])
    assert evaluate(scaled, {s: Matrix([[5]]), M: m}, {p: 2}) == 5 * m
    with pytest.raises(WitnessError, match="divides by eta = 0"):
        evaluate(mul(1 / eta, X), {X: a}, {n: 3, p: 2}, {eta: 0})
    with pytest.raises(WitnessError, match="positive"):
        evaluate(mul(lam, X), {X: a}, {n: 3, p: 2}, {lam: -1})


def sherman_morrison_forms():
    """A⁻¹ − A⁻¹u(1 + vᵀA⁻¹u)⁻¹vᵀA⁻¹, with the 1×1 inverse in the middle and in front as a scalar."""
    s = inv(add(Identity(1), mul(transpose(v), inv(M), u)))
    middle = add(inv(M), mul(-1, inv(M), u, s, transpose(v), inv(M)))
    front = add(inv(M), mul(-1, s, inv(M), u, transpose(v), inv(M)))
    return middle, front, inv(add(M, mul(u, transpose(v))))


def test_sherman_morrison_with_the_one_by_one_inverse_in_the_middle_or_in_front():
    middle, front, target = sherman_morrison_forms()
    assert front.atoms(Trace) and not middle.atoms(Trace)  # in front, the 1×1 inverse is a coefficient
    env = {M: Matrix([[2, 1], [0, 3]]), u: Matrix([1, -2]), v: Matrix([3, 1])}
    expected = evaluate(target, env, {p: 2})
    assert evaluate(middle, env, {p: 2}) == expected == evaluate(front, env, {p: 2})
    proof = hand_made("sherman_morrison", [predicate("M_invertible", Q.invertible, M)], target, middle,
                      [Step(front, "scalar_matrix")])
    assert check_instances(proof, trials=2).steps == 8
    for size in (1, 2, 3):
        assert check_identity(proof.theorem, size, proof=proof, steps=True).steps == 1
    wrong_sign = add(inv(M), mul(1, inv(add(Identity(1), mul(transpose(v), inv(M), u))), inv(M), u, transpose(v),
                                 inv(M)))
    error = refuted(with_step(proof, 1, wrong_sign))
    assert (error.chain, error.step, error.rule) == ("main", 1, "scalar_matrix")


# --- true ridge-type identities pass ---------------------------------------------------------


def kernel_ridge_proofs() -> list[Proof]:
    gram = add(mul(transpose(X), X), mul(lam, I_p))
    inverse = ProofBuilder("ridge_inverse", "XᵀX + λI times its inverse", "")
    inverse.main(mul(gram, inv(gram))).auto(I_p)
    scaled = ProofBuilder("scaled_identity_inverse", "(λI)⁻¹ = λ⁻¹I", "")
    scaled.main(inv(mul(lam, I_p))).auto(mul(1 / lam, I_p))
    return [inverse.proof(), scaled.proof()]


@pytest.mark.parametrize("index", [0, 1], ids=["gram_times_inverse", "scaled_identity"])
def test_kernel_proved_ridge_identities_pass_the_witness(index):
    proof = kernel_ridge_proofs()[index]
    assert derive.check(proof).id == proof.theorem
    summary = witness_all(proof)
    assert summary["instances"] > 0 and summary["steps"] > 0
    assert [item["p"] for item in summary["identities"]] == [1, 2]
    assert summary["identities"][0]["parameters"] >= 1  # λ is a parameter of the rational functions


def push_through() -> Proof:
    """(XᵀX + λI)⁻¹Xᵀ = Xᵀ(XXᵀ + λI)⁻¹, step by step."""
    gram, outer = add(mul(transpose(X), X), mul(lam, I_p)), add(mul(X, transpose(X)), mul(lam, Identity(n)))
    steps = [
        Step(mul(inv(gram), transpose(X), outer, inv(outer)), "inverse_cancel"),
        Step(mul(inv(gram), add(mul(transpose(X), X, transpose(X)), mul(lam, transpose(X))), inv(outer)),
             "distribute"),
        Step(mul(inv(gram), gram, transpose(X), inv(outer)), "distribute"),
        Step(mul(transpose(X), inv(outer)), "inverse_cancel"),
    ]
    return hand_made("push_through", [], mul(inv(gram), transpose(X)), mul(transpose(X), inv(outer)), steps)


def test_push_through_passes_and_a_sign_or_scale_error_in_a_coefficient_is_refuted():
    proof = push_through()
    report = check_instances(proof, trials=2)
    assert report.steps == 4 * report.instances and report.degenerate == 0  # λ > 0: never sampled at 0
    for size in (1, 2):
        check_identity(proof.theorem, size, proof=proof, steps=True)
    outer = add(mul(X, transpose(X)), mul(lam, Identity(n)))
    gram = add(mul(transpose(X), X), mul(lam, I_p))
    for coefficient in (-lam, 2 * lam, lam**2):
        bad = with_step(proof, 2, mul(inv(gram), add(mul(transpose(X), X, transpose(X)),
                                                     mul(coefficient, transpose(X))), inv(outer)))
        error = refuted(bad)
        assert (error.chain, error.step, error.rule) == ("main", 2, "distribute")
        with pytest.raises(WitnessError, match="differs"):
            check_identity(bad.theorem, 2, proof=bad, steps=True)
    wrong = hand_made("scaled_wrong", [], inv(mul(lam, I_p)), mul(-1 / lam, I_p))
    assert "right-hand side" in refuted(wrong).reason


def ridge_spectral(extra_steps=()) -> Proof:
    """XᵀX = VΛVᵀ with V orthogonal and Λ only diagonal: (XᵀX + λI)⁻¹ = V(Λ + λI)⁻¹Vᵀ for every X."""
    hypotheses = [Hypothesis("gram", mul(transpose(X), X), mul(V, Lam, transpose(V))), *orthonormal("V", V),
                  predicate("Lambda_diagonal", Q.diagonal, Lam)]
    shifted = add(Lam, mul(lam, I_p))
    steps = [
        Step(inv(add(mul(V, Lam, transpose(V)), mul(lam, I_p))), "hyp:gram"),
        Step(inv(add(mul(V, Lam, transpose(V)), mul(lam, V, transpose(V)))), "hyp:V_orthonormal_rows"),
        Step(inv(mul(V, shifted, transpose(V))), "distribute"),
        *extra_steps,
        Step(mul(V, inv(shifted), transpose(V)), "inverse_product"),
    ]
    return hand_made("ridge_spectral", hypotheses, inv(add(mul(transpose(X), X), mul(lam, I_p))),
                     mul(V, inv(shifted), transpose(V)), steps)


def test_ridge_with_an_only_diagonal_lambda_samples_rank_deficient_x():
    proof = ridge_spectral()
    report = check_instances(proof, trials=2)
    assert report.degenerate > 0 and report.skipped == 0  # Λ with a zero eigenvalue: X is rank-deficient there
    for size in (1, 2):
        check_identity(proof.theorem, size, proof=proof, steps=True)
    # a step through Λ⁻¹ holds for invertible Λ only: the rank-deficient samples refute it
    shifted = add(Lam, mul(lam, I_p))
    through_inverse = Step(mul(V, inv(Lam), Lam, inv(shifted), transpose(V)), "inverse_cancel")
    error = refuted(ridge_spectral([through_inverse]))
    assert error.step == 4 and "singular" in error.reason and "degenerate sample" in error.reason


# --- zero where allowed ----------------------------------------------------------------------


def test_a_real_scalar_sampled_at_zero_refutes_a_claim_false_only_at_zero():
    """ηA = ηB gives A = B for η ≠ 0 only: as rational functions (η ≠ 0) and on non-zero η the step holds."""
    proof = hand_made("cancel_eta", [Hypothesis("scaled", mul(eta, A), mul(eta, B))], A, B, [Step(B, "hyp:scaled")])
    assert check_identity(proof.theorem, 2, proof=proof, steps=True).steps == 1
    error = refuted(proof)
    assert (error.chain, error.step) == ("main", 1) and "eta = 0" in error.reason
    positive = hand_made("cancel_lam", [Hypothesis("scaled", mul(lam, A), mul(lam, B))], A, B, [Step(B, "hyp:scaled")])
    assert check_instances(positive).degenerate == 0  # a positive scalar is never 0


def test_a_statement_undefined_at_zero_skips_that_sample_and_holds_elsewhere():
    proof = hand_made("inverse_eta", [], inv(mul(eta, I_p)), mul(1 / eta, I_p))
    report = check_instances(proof, trials=2)
    assert report.instances == 2 * 4 and report.skipped == 4 and report.degenerate == 0
    check_identity(proof.theorem, 2, proof=proof)
    wrong = hand_made("inverse_eta_wrong", [], inv(mul(eta, I_p)), mul(eta, I_p))
    assert "right-hand side" in refuted(wrong).reason


def test_a_claim_for_every_real_scalar_is_checked_at_zero_where_defined():
    """(XᵀX + ηI)(XᵀX + ηI)⁻¹ = I is defined at η = 0 for full-rank X: that sample is checked, not skipped."""
    gram = add(mul(transpose(X), X), mul(eta, I_p))
    proof = hand_made("shifted_gram", [predicate("shifted_gram_invertible", Q.invertible, gram)],
                      mul(gram, inv(gram)), I_p, [Step(I_p, "inverse_cancel")])
    report = check_instances(proof)
    assert report.degenerate == 4 and report.skipped == 0
    bad = hand_made("shifted_gram_wrong", proof.hypotheses, mul(gram, inv(gram)), add(I_p, mul(eta, I_p)),
                    [Step(add(I_p, mul(eta, I_p)), "inverse_cancel")])
    assert refuted(bad).step == 1
