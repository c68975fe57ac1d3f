"""The witness's sampler on block hypotheses, and what it says when no sample satisfies the hypotheses.

Two heads on orthogonal feature blocks, X = [X₁ X₂] with X₁ᵀX₂ = 0 and XᵀX positive definite, need
n ≥ p₁ + p₂: the sampler solves X₁ᵀX₂ = 0 generically (not X₂ = 0) and grows n when it is free.  When the
dimensions cannot meet it (n = p + 1 rows for 2p columns, or n fixed by a hint), the witness says that it
cannot sample, names the hypothesis and the dimensions it tried, and how to give hints; it never says that
two sides differ, and `derive prove --witness` reports that it cannot check the proof (not that it refutes it).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sympy import Q
from sympy.matrices.expressions import Identity, MatrixSymbol, ZeroMatrix

from derive import Hypothesis, block, dim, inv, mul, predicate, transpose
from derive.kernel import Chain, Proof
from derive.witness import SHAPES, WitnessError, check_identity, check_instances, generic_sampler, sampler_for

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
    assert log[0].dims["n"] > SHAPES[0]["n"]  # n = 3 in the first shape: grown to p1 + p2 = 4
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
