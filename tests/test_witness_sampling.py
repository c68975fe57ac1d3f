"""The witness's sampler on block hypotheses, and what it says when no sample satisfies the hypotheses.

Two heads on orthogonal feature blocks, X = [X₁ X₂] with X₁ᵀX₂ = 0 and XᵀX positive definite, need
n ≥ p₁ + p₂: the sampler solves X₁ᵀX₂ = 0 generically (not X₂ = 0) and grows n when it is free.  When the
dimensions cannot meet it (n = p + 1 rows for 2p columns, or n fixed by a hint), the witness says that it
cannot sample, names the hypothesis and the dimensions it tried, and how to give hints; it never says that
two sides differ, and `derive prove --witness` reports that it cannot check the proof (not that it refutes it).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sympy import Q, Rational, sign
from sympy.matrices.expressions import Identity, MatrixSymbol, ZeroMatrix

from derive import Hypothesis, block, dim, inv, mul, predicate, transpose
from derive.kernel import Chain, Proof
from derive.kernel.terms import power
from derive.witness import SHAPES, WitnessError, check_identity, check_instances, generic_sampler, sampler_for
from derive.witness.sampler import _random_source

n, p, p1, p2, k = dim("n"), dim("p"), dim("p1"), dim("p2"), dim("k")


def two_heads(rows, first, second, theorem: str = "two_heads") -> Proof:
    """(XᵀX)⁻¹XᵀY is the two heads' least squares stacked, for X = [X₁ X₂] with X₁ᵀX₂ = 0."""
    X = MatrixSymbol("X", rows, first + second)
    X1, X2, Y = MatrixSymbol("X1", rows, first), MatrixSymbol("X2", rows, second), MatrixSymbol("Y", rows, k)
    hypotheses = (Hypothesis("blocks", X, block([[X1, X2]])),
                  Hypothesis("orthogonal_blocks", mul(transpose(X1), X2), ZeroMatrix(first, second)),
                  predicate("X_full_rank", Q.positive_definite, mul(transpose(X), X)))
    heads = block([[mul(inv(mul(transpose(X1), X1)), transpose(X1), Y)],
                   [mul(inv(mul(transpose(X2), X2)), transpose(X2), Y)]])
    claim = Chain("main", mul(inv(mul(transpose(X), X)), transpose(X), Y), heads, ())
    return Proof(theorem, "Two heads", "", hypotheses, (), (), claim)


def recording(sampler, log: list):
    def wrapped(src, shape, chain):
        sample = sampler(src, shape, chain)
        log.append(sample)
        return sample

    return wrapped


def test_orthogonal_feature_blocks_are_sampled_generically_with_enough_rows():
    proof = two_heads(n, p1, p2)
    log: list = []
    report = check_instances(proof, trials=2, sampler=recording(sampler_for(proof), log))
    assert report.instances == len(SHAPES) * 2 and report.hypotheses == 3 * report.instances
    assert all(sample.dims["n"] >= sample.dims["p1"] + sample.dims["p2"] for sample in log)
    assert (log[2].dims["p1"], log[2].dims["p2"]) == (2, 3)  # the second shape: p1, p2 = 2, 3 (not named)
    assert log[2].dims["n"] > SHAPES[1]["n"]  # n = 4 there: grown to p1 + p2 = 5
    assert all(not sample.values["X2"].is_zero_matrix for sample in log)  # X₁ᵀX₂ = 0 solved by a generic X₂


def test_a_wrong_head_is_refuted():
    proof = two_heads(n, p1, p2)
    X2, Y = MatrixSymbol("X2", n, p2), MatrixSymbol("Y", n, k)
    X1 = MatrixSymbol("X1", n, p1)
    wrong = block([[mul(inv(mul(transpose(X1), X1)), transpose(X1), Y)], [mul(transpose(X2), Y)]])
    bad = Proof(proof.theorem, "", "", proof.hypotheses, (), (), Chain("main", proof.claim.lhs, wrong, ()))
    with pytest.raises(WitnessError) as info:
        check_instances(bad)
    assert "right-hand side" in info.value.reason and not info.value.cannot_sample


def cannot_sample(proof: Proof, **kwargs) -> str:
    with pytest.raises(WitnessError) as info:
        check_instances(proof, **kwargs)
    error = info.value
    assert error.cannot_sample and error.hypothesis == "X_full_rank"
    message = str(error)
    assert "\n" not in message and "differ" not in message and "sampler bug" not in message
    assert "sampling={" in message  # how to give hints
    return message


def test_when_the_rows_cannot_grow_the_witness_says_it_cannot_sample_and_what_it_tried():
    """X₁, X₂ are (p + 1) × p: p + 1 ≥ 2p holds for p = 1 only."""
    proof = two_heads(p + 1, p, p, "two_heads_tight")
    assert check_instances(proof, shapes=SHAPES[:1]).instances == 1  # p = 1 can be sampled
    message = cannot_sample(proof)
    assert message.startswith("two_heads_tight/main: cannot sample hypothesis X_full_rank:")
    assert "tried p = 2, 3, 4" in message
    assert "needed p + 1 ≥ 2*p" in message and "orthogonal_blocks" in message
    with pytest.raises(WitnessError, match="cannot sample hypothesis X_full_rank") as info:
        check_identity(proof.theorem, 2, proof=proof)
    assert "tried p = " in str(info.value) and "differ" not in str(info.value)


def test_when_a_hint_fixes_the_rows_the_witness_names_them():
    proof = two_heads(n, p1, p2, "two_heads_fixed")
    message = cannot_sample(proof, sampler=generic_sampler(proof, {"n": 3}))
    assert "with n = 3" in message and "p1 = 3" in message and "n ≥ p1 + p2" in message
    assert check_instances(proof, sampler=generic_sampler(proof, {"n": 5})).instances == len(SHAPES)


def test_derive_prove_reports_that_the_witness_cannot_check_the_proof(tmp_path: Path):
    (tmp_path / "heads.py").write_text(textwrap.dedent("""\
        from sympy import MatrixSymbol, Q, ZeroMatrix
        from derive import Hypothesis, ProofBuilder, block, dim, mul, predicate, theorem, transpose

        p = dim("p")
        X, X1, X2 = MatrixSymbol("X", p + 1, 2 * p), MatrixSymbol("X1", p + 1, p), MatrixSymbol("X2", p + 1, p)


        @theorem
        def two_heads_gram():
            hypotheses = [Hypothesis("blocks", X, block([[X1, X2]])),
                          Hypothesis("orthogonal_blocks", mul(transpose(X1), X2), ZeroMatrix(p, p)),
                          predicate("X_full_rank", Q.positive_definite, mul(transpose(X), X))]
            b = ProofBuilder("two_heads_gram", "Two heads", "", hypotheses)
            b.main(mul(transpose(X), X)).rw("hyp:blocks", nth=0).rw("hyp:blocks").qed()
            return b.proof()
        """))
    result = subprocess.run([sys.executable, "-m", "derive", "prove", "--library", "heads.py", "--witness",
                             "two_heads_gram"], capture_output=True, text=True, cwd=tmp_path, env=dict(os.environ))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    (starting, progress, line) = result.stderr.strip().splitlines()  # a line as it starts and as it is done, then why
    assert starting == "derive: [1/1] two_heads_gram: proving and witnessing ..."  # named before the wait
    assert progress.startswith("derive: [1/1] two_heads_gram: FAILED: ") and "cannot sample" in progress
    assert "two_heads_gram: the witness cannot check the proof:" in line and "refutes" not in line
    assert "cannot sample hypothesis X_full_rank" in line and "tried p = 2, 3, 4" in line and "sampling={" in line


def test_a_planning_failure_names_the_dimensions_and_hints():
    """UᵀU = I for a p × (p + 1) matrix U: orthonormal columns need more rows than columns, whatever p is."""
    U = MatrixSymbol("U", p, p + 1)
    orthonormal = Hypothesis("U_orthonormal_columns", mul(transpose(U), U), Identity(p + 1))
    proof = Proof("wide_orthonormal", "", "", (orthonormal,), (), (), Chain("main", U, U, ()))
    with pytest.raises(WitnessError) as info:
        check_instances(proof, shapes=SHAPES[:1])
    message = str(info.value)
    assert info.value.cannot_sample and "differ" not in message
    assert "tried p = 1, 2, 3" in message and "sampling={" in message


def test_an_equation_the_sampler_cannot_construct_is_a_sampling_failure_not_a_refutation():
    """Weighted least squares without its hints: XᵀWX = VΛVᵀ holds only if the values drawn happen to satisfy
    it; the witness says it cannot sample it, names the dimensions tried and the hints, and no sides differ."""
    from derive.library import build

    proof = build("weighted_ls_is_attention")
    with pytest.raises(WitnessError) as info:
        check_instances(proof, sampler=generic_sampler(proof, {}))
    message = str(info.value)
    assert info.value.cannot_sample and info.value.hypothesis == "weighted_gram_spectral"
    assert "cannot sample hypothesis weighted_gram_spectral" in message
    assert "tried n = 3, p = 1" in message and "@theorem(sampling={...})" in message
    assert "differ" not in message and "sampler bug" not in message
    check_instances(proof)  # with the theorem's hints it samples


# --- both components of O(n), and the other kinds' full sets (issue 40, item 6) ----------------------------
# A sampler that reaches only part of what the hypotheses allow lets a false statement that holds on that part
# pass every check: rotations only (det U = +1) let UᵀU = I₁ ⇒ U = I₁ pass, as U = 1 is the only 1×1 rotation.

q, q2 = dim("q"), dim("q2")  # dimensions the shapes do not name


def orthogonal_claim(size, rhs_of=lambda U: None, theorem: str = "orthogonal_is_identity") -> Proof:
    """UᵀU = I (and UUᵀ = I) for a ``size`` × ``size`` U, claiming U = ``rhs_of(U)`` (U = I by default)."""
    U = MatrixSymbol("U", size, size)
    hypotheses = (Hypothesis("U_columns", mul(transpose(U), U), Identity(size)),
                  Hypothesis("U_rows", mul(U, transpose(U)), Identity(size)))
    rhs = rhs_of(U)
    return Proof(theorem, "", "", hypotheses, (), (), Chain("main", U, Identity(size) if rhs is None else rhs, ()))


def refuted(proof: Proof) -> WitnessError:
    with pytest.raises(WitnessError) as info:
        check_instances(proof)
    assert not info.value.cannot_sample and "differ" in info.value.reason
    return info.value


@pytest.mark.parametrize("size", [1, 2])
def test_an_orthogonal_matrix_is_not_the_identity(size):
    """UᵀU = I ⇒ U = I is false: U = −1 (1×1), a reflection or a rotation (2×2)."""
    refuted(orthogonal_claim(size))


def test_two_by_two_orthogonal_matrices_do_not_commute():
    """2×2 rotations commute; a rotation and a reflection (or two reflections) in general do not."""
    U, V = MatrixSymbol("U", 2, 2), MatrixSymbol("V", 2, 2)
    hypotheses = (Hypothesis("U_columns", mul(transpose(U), U), Identity(2)),
                  Hypothesis("V_columns", mul(transpose(V), V), Identity(2)))
    refuted(Proof("orthogonal_commute", "", "", hypotheses, (), (), Chain("main", mul(U, V), mul(V, U), ())))


def determinants(proof: Proof, name: str, seeds=range(4), **kwargs) -> set:
    """The determinants of ``name`` on every instance the witness draws over ``seeds``."""
    log: list = []
    for seed in seeds:
        check_instances(proof, seed=seed, sampler=recording(sampler_for(proof), log), **kwargs)
    return {sample.values[name].to_Matrix().det() for sample in log}


@pytest.mark.parametrize("size", [1, 2, p, q])
def test_orthogonal_samples_reach_rotations_and_reflections(size):
    """Over the witness's instances, UᵀU = I gives det U = +1 and det U = −1, for every seed (the first
    orthogonal symbol alternates between the shapes), and so do the generic sampler's random draws."""
    proof = orthogonal_claim(size, rhs_of=lambda U: U, theorem="orthogonal_sampled")
    for seed in range(6):
        assert determinants(proof, "U", seeds=[seed]) == {1, -1}
    sampler = sampler_for(proof)
    dets = {sampler(_random_source(random.Random(seed)), SHAPES[1], "main").values["U"].to_Matrix().det()
            for seed in range(16)}
    assert dets == {1, -1}
    if size == 1:
        values = {sampler(_random_source(random.Random(seed)), SHAPES[0], "main").values["U"].to_Matrix()[0, 0]
                  for seed in range(16)}
        assert values == {1, -1}


def test_two_orthogonal_symbols_reach_every_pair_of_components():
    U, V = MatrixSymbol("U", 2, 2), MatrixSymbol("V", 2, 2)
    hypotheses = (Hypothesis("U_columns", mul(transpose(U), U), Identity(2)),
                  Hypothesis("V_columns", mul(transpose(V), V), Identity(2)))
    proof = Proof("two_orthogonal", "", "", hypotheses, (), (), Chain("main", mul(U, V), mul(U, V), ()))
    log: list = []
    check_instances(proof, sampler=recording(sampler_for(proof), log))
    pairs = {(s.values["U"].to_Matrix().det(), s.values["V"].to_Matrix().det()) for s in log}
    assert pairs == {(1, 1), (1, -1), (-1, 1), (-1, -1)}


def test_the_identity_check_reaches_reflections_too():
    """The symbolic check is over one component per run (a rational parametrisation has a constant
    determinant): p = 1 and p = 2 take different ones, so U = I₁ is refuted there as well."""
    proof = orthogonal_claim(1)
    with pytest.raises(WitnessError, match="not an identity"):
        for p_ in (1, 2):
            check_identity(proof.theorem, p_, proof=proof)


def gram_one_by_one(claim_rhs) -> Proof:
    """XᵀX = VΛVᵀ for 1×1 X, V, Λ (V orthogonal, Λ diagonal): X = ±Λ^(1/2)Vᵀ, either sign."""
    X1, V1, L1 = MatrixSymbol("X", 1, 1), MatrixSymbol("V", 1, 1), MatrixSymbol("Lambda", 1, 1)
    hypotheses = (Hypothesis("gram", mul(transpose(X1), X1), mul(V1, L1, transpose(V1))),
                  Hypothesis("V_columns", mul(transpose(V1), V1), Identity(1)),
                  Hypothesis("V_rows", mul(V1, transpose(V1)), Identity(1)),
                  predicate("Lambda_diagonal", Q.diagonal, L1))
    rhs = claim_rhs(X1, V1, L1)
    return Proof("gram_sign", "", "", hypotheses, (), (), Chain("main", X1, rhs, ()))


def test_a_gram_equation_is_solved_with_both_signs():
    """XᵀX = VΛVᵀ does not fix the sign of det X det V: X = Λ^(1/2)Vᵀ is false (X = −Λ^(1/2)Vᵀ is a solution),
    and a square X solved from a Gram equation has det X · det V of both signs."""
    refuted(gram_one_by_one(lambda X1, V1, L1: mul(power(L1, Rational(1, 2)), transpose(V1))))
    X2, V2, L2 = MatrixSymbol("X", p, p), MatrixSymbol("V", p, p), MatrixSymbol("Lambda", p, p)
    hypotheses = (Hypothesis("gram", mul(transpose(X2), X2), mul(V2, L2, transpose(V2))),
                  Hypothesis("V_columns", mul(transpose(V2), V2), Identity(p)),
                  Hypothesis("V_rows", mul(V2, transpose(V2)), Identity(p)),
                  predicate("Lambda_positive", Q.positive_definite, L2), predicate("Lambda_diagonal", Q.diagonal, L2))
    proof = Proof("gram_square", "", "", hypotheses, (), (), Chain("main", X2, X2, ()))
    log: list = []
    for seed in range(3):
        check_instances(proof, seed=seed, sampler=recording(sampler_for(proof), log))
    signs = {sign(s.values["X"].to_Matrix().det() * s.values["V"].to_Matrix().det()) for s in log}
    assert signs == {1, -1}


def invertible_claim(size, rhs_of) -> Proof:
    A = MatrixSymbol("A", size, size)
    return Proof("invertible_claim", "", "", (predicate("A_invertible", Q.invertible, A),), (), (),
                 Chain("main", A, rhs_of(A), ()))


def test_an_invertible_matrix_may_have_a_negative_determinant():
    """Q.invertible allows det A < 0 (A = −2 when 1×1): (A A)^(1/2) = A is false, and the samples of an
    invertible A have determinants of both signs, non-symmetric ones among them."""
    refuted(invertible_claim(1, lambda A: power(mul(A, A), Rational(1, 2))))
    proof = invertible_claim(p, lambda A: A)
    log: list = []
    for seed in range(3):
        check_instances(proof, seed=seed, sampler=recording(sampler_for(proof), log))
    assert {sign(s.values["A"].to_Matrix().det()) for s in log} == {1, -1}
    assert any(s.values["A"].to_Matrix()[0, 0] < 0 for s in log)  # not only positive leading minors
    assert any(s.values["A"] != s.values["A"].transpose() for s in log)


def test_a_dimension_the_shapes_do_not_name_takes_several_sizes():
    """A dimension the shapes do not name is not always 2: it is 1 on some shape and 3 on another, so
    q·X = 2·X (true at q = 2 only) is refuted, and two such dimensions differ on some shape."""
    Xq = MatrixSymbol("X", q, q)
    refuted(Proof("size_two", "", "", (), (), (), Chain("main", mul(q, Xq), mul(2, Xq), ())))
    Z = MatrixSymbol("Z", q, q2)
    proof = Proof("two_sizes", "", "", (), (), (), Chain("main", Z, Z, ()))
    log: list = []
    check_instances(proof, sampler=recording(sampler_for(proof), log))
    assert {s.dims["q"] for s in log} == {1, 2, 3} and {s.dims["q2"] for s in log} == {1, 2, 3}
    assert any(s.dims["q"] != s.dims["q2"] for s in log)
