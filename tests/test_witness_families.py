"""The witness with families of matrices, recurrences, induction and index symbols (empty prefixes).

Index symbols take the values 0, 1, 2, 3 over the instance shapes, so X_0 (an empty matrix) occurs; members
of free families are drawn, members of defined families are computed by their recurrences; an induction is
checked as its base chain at 0 and its step chain at t + 1, with IH (the claim at t) evaluated on the sample.
The fast-weight theorem of tests/test_induction.py passes; an off-by-one recurrence is refuted.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest
from sympy import Matrix, zeros
from sympy.matrices.expressions import Identity, MatrixSymbol, ZeroMatrix

from derive import Hypothesis, add, block, dim, family, index, inv, mul, transpose
from derive.kernel import Chain, Proof, Step
from derive.witness import SHAPES, WitnessError, check_identity, check_instances, evaluate, sampler_for, witness_all

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_induction import fast_weight_families, fast_weight_proof  # noqa: E402

d, k, p = dim("d"), dim("k"), dim("p")
t = index("t")


def recording(sampler, log: list):
    def wrapped(src, shape, chain):
        sample = sampler(src, shape, chain)
        log.append((chain, dict(sample.dims), {name: value.shape for name, value in sample.values.items()}))
        return sample

    return wrapped


def test_the_fast_weight_theorem_passes_the_witness():
    proof = fast_weight_proof()
    report = check_instances(proof, trials=2)
    assert report.chains == 3  # memory_sum_base, memory_sum_step, main
    assert report.steps == sum(len(c.steps) for c in (*proof.lemmas, proof.claim)) * len(SHAPES) * 2
    for size in (1, 2, 3):
        identity = check_identity(proof.theorem, size, proof=proof, steps=True)
        assert identity.steps == sum(len(c.steps) for c in (*proof.lemmas, proof.claim))
    summary = witness_all(proof)
    assert summary["instances"] == 3 * len(SHAPES) and [item["p"] for item in summary["identities"]] == [1, 2]


def test_instances_sample_the_index_at_zero_and_draw_the_members_the_recurrences_need():
    proof = fast_weight_proof()
    log: list = []
    check_instances(proof, sampler=recording(sampler_for(proof), log))
    steps = [(dims["t"], shapes) for chain, dims, shapes in log if chain == "memory_sum_step"]
    assert [value for value, _ in steps] == [0, 1, 2, 3]
    t_value, shapes = steps[2]  # the step from t = 2 to 3 needs v[1..3] and k[1..3], nothing else
    assert sorted(name for name in shapes if name.startswith(("v[", "k["))) == \
        ["k[1]", "k[2]", "k[3]", "v[1]", "v[2]", "v[3]"]


def test_empty_matrices_evaluate():
    v, kk, S, V, K = fast_weight_families()
    families = [f.declaration for f in (v, kk, S, V, K)]
    dims = {d: 2, k: 3, t: 0}
    assert evaluate(V[t], {}, dims, families=families).shape == (0, 2)
    assert evaluate(mul(transpose(V[t]), K[t]), {}, dims, families=families) == zeros(2, 3)  # empty inner dimension
    assert evaluate(inv(Identity(t)), {}, dims).shape == (0, 0)
    one = {**dims, t: 1}
    members = {v[1]: Matrix([1, 2]), kk[1]: Matrix([3, 4, 5])}
    assert evaluate(S[t], members, one, families=families) == Matrix([1, 2]) * Matrix([[3, 4, 5]])
    with pytest.raises(WitnessError, match="no value for v\\[2\\]"):
        evaluate(S[t + 1], members, one, families=families)
    X = MatrixSymbol("X", d, d)
    with pytest.raises(WitnessError, match="only an index symbol may make a matrix empty"):
        evaluate(X, {X: zeros(0, 0)}, {d: 0})


def off_by_one() -> Proof:
    """The fast-weight proof with S[s + 1] = S[s] + v[s + 1] k[s]ᵀ: its steps as before, its claim false."""
    return dataclasses.replace(fast_weight_proof(),
                               families=tuple(f.declaration for f in fast_weight_families(off_by_one=True)))


def test_an_off_by_one_recurrence_is_refuted_naming_the_chain_and_step():
    error = None
    with pytest.raises(WitnessError) as info:
        check_instances(off_by_one())
    error = info.value
    assert (error.theorem, error.chain, error.step, error.rule) == ("fast_weights", "memory_sum_step", 1, "step:S")
    assert not error.cannot_sample
    with pytest.raises(WitnessError, match="memory_sum_step"):
        check_identity("fast_weights", 2, proof=off_by_one(), steps=True)


def test_a_false_induction_claim_is_refuted_through_its_hypothesis():
    """At t = 2 the claim S[t] = V[t]ᵀK[t] of the off-by-one recurrence is already false: IH refutes it."""
    with pytest.raises(WitnessError) as info:
        check_instances(off_by_one(), shapes=[SHAPES[2]])
    error = info.value
    assert error.chain == "memory_sum_step" and error.rule == "hyp:IH"
    assert "the induction claim memory_sum is false" in error.reason and "t = 2" in error.reason
    assert not error.cannot_sample


def test_hypotheses_about_members_of_a_free_family_are_sampled():
    """x[t]ᵀx[t] = 1 (a unit vector at the sampled t) is met by construction: x[t]x[t]ᵀx[t] = x[t]."""
    x = family("x", (p, 1))
    unit = Hypothesis("unit", mul(transpose(x[t]), x[t]), Identity(1))
    claim = Chain("main", mul(x[t], transpose(x[t]), x[t]), x[t], (Step(x[t], "hyp:unit"),))
    proof = Proof("unit_member", "", "", (unit,), (), (), claim, families=(x.declaration,))
    assert check_instances(proof, trials=2).hypotheses == len(SHAPES) * 2
    check_identity(proof.theorem, 2, proof=proof, steps=True)
    wrong = dataclasses.replace(proof, claim=Chain("main", mul(x[t], transpose(x[t]), x[t]), mul(2, x[t]),
                                                   (Step(mul(2, x[t]), "hyp:unit"),)))
    with pytest.raises(WitnessError, match="differs"):
        check_instances(wrong)


def test_a_recurrence_undefined_on_the_sample_is_a_sampling_failure_not_a_refutation():
    """F[0] = 0, F[s + 1] = F[s]⁻¹: F[1] is undefined on every sample, so the witness cannot check F[t] = F[t]."""
    F = family("F", (p, p)).recurrence(ZeroMatrix(p, p), lambda s: inv(F[s]))
    proof = Proof("undefined_recurrence", "", "", (), (), (), Chain("main", F[t], F[t], ()), families=(F.declaration,))
    assert check_instances(proof, shapes=SHAPES[:1]).instances == 1  # F[0] = 0 is fine
    with pytest.raises(WitnessError) as info:
        check_instances(proof, shapes=SHAPES[1:2])
    error = info.value
    assert error.cannot_sample and "F[1] is undefined on this sample" in error.reason
    assert "differ" not in error.reason and "sampling=" in error.reason


def test_a_defined_family_given_by_a_sampler_is_a_sampler_bug():
    proof = fast_weight_proof()

    def bad(src, shape, chain):
        sample = sampler_for(proof)(src, shape, chain)
        return dataclasses.replace(sample, values={**sample.values, "S[0]": sample.values["v[1]"]})

    with pytest.raises(WitnessError, match="sampler bug: S is defined by a recurrence"):
        check_instances(proof, sampler=bad, shapes=SHAPES[1:2])


def test_a_step_that_unfolds_a_recurrence_at_the_wrong_index_is_refuted():
    v, kk, S, V, K = fast_weight_families()
    wrong = add(S[t], mul(v[t], transpose(kk[t])))  # S[t + 1] unfolded with v[t], k[t]
    claim = Chain("main", S[t + 1], wrong, (Step(wrong, "step:S", ((S.bound, t),)),))
    proof = Proof("unfold", "", "", (), (), (), claim, families=tuple(f.declaration for f in (v, kk, S, V, K)))
    with pytest.raises(WitnessError) as info:
        check_instances(proof, shapes=SHAPES[1:2])
    assert (info.value.step, info.value.rule) == (1, "step:S")
    right = add(S[t], mul(v[t + 1], transpose(kk[t + 1])))
    good = dataclasses.replace(proof, claim=Chain("main", S[t + 1], right, (Step(right, "step:S", ((S.bound, t),)),)))
    assert check_instances(good).steps == len(SHAPES)
    check_identity("unfold", 1, proof=good, steps=True)
    assert block([[V[t]], [transpose(v[t + 1])]]).shape == V[t + 1].shape
