"""Families of matrices, recurrences and induction over an index: what the kernel accepts and what it refuses.

The running example is the fast-weight memory: S₀ = 0, S_{t+1} = S_t + v_{t+1} k_{t+1}ᵀ equals V_tᵀK_t, the
Gram product of the stacked values and keys (V₀, K₀ empty), for every t.  Mutants — a wrong base, a step
that assumes the claim at t + 1, an off-by-one in a recurrence, a family that cites itself ahead, a
hypothesis about a defined family — are refused.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from sympy import Identity, MatrixSymbol, ZeroMatrix

from derive import (
    Hypothesis,
    ProofBuilder,
    ProofError,
    add,
    block,
    check,
    dim,
    family,
    index,
    mul,
    transpose,
)
from derive.certificates import certificate_text, verify_certificate
from derive.kernel import Chain, Family, Induction, Proof, Step
from derive.kernel.terms import FamilyMatrix, inv

d, k, p = dim("d"), dim("k"), dim("p")
t = index("t")


def fast_weight_families(off_by_one: bool = False):
    v, kk = family("v", (d, 1)), family("k", (k, 1))
    S = family("S", (d, k))
    S.recurrence(ZeroMatrix(d, k), lambda s: add(S[s], mul(v[s + 1], transpose(kk[s + (0 if off_by_one else 1)]))))
    V = family("V", lambda s: (s, d)).recurrence(ZeroMatrix(0, d), lambda s: block([[V[s]], [transpose(v[s + 1])]]))
    K = family("K", lambda s: (s, k)).recurrence(ZeroMatrix(0, k), lambda s: block([[K[s]], [transpose(kk[s + 1])]]))
    return v, kk, S, V, K


def fast_weight_proof(off_by_one: bool = False) -> Proof:
    v, kk, S, V, K = fast_weight_families(off_by_one)
    b = ProofBuilder("fast_weights", "Fast weights", "S_t = V_tᵀ K_t", families=[v, kk, S, V, K])
    b.induction("memory_sum", t, S[t], mul(transpose(V[t]), K[t])).auto()
    b.main(S[t]).auto(mul(transpose(V[t]), K[t]))
    return b.proof()


def test_the_fast_weight_memory_is_proved_by_induction_and_round_trips():
    theorem = check(fast_weight_proof())
    (lemma,) = theorem.proof.lemmas
    assert isinstance(lemma, Induction) and lemma.variable == t and lemma.base and lemma.step
    assert any(step.rule == "hyp:IH" for step in lemma.step)  # the step uses the claim at t
    again = verify_certificate(json.loads(certificate_text(theorem)))
    assert again.digest == theorem.digest


def test_an_off_by_one_recurrence_does_not_prove_the_claim():
    with pytest.raises(ProofError):
        fast_weight_proof(off_by_one=True)


def _replace_lemma(proof: Proof, **changes) -> Proof:
    (lemma,) = proof.lemmas
    return dataclasses.replace(proof, lemmas=(dataclasses.replace(lemma, **changes),))


def test_a_wrong_base_is_refused():
    proof = fast_weight_proof()
    (lemma,) = proof.lemmas
    # the base chain proved at 1 instead of 0: replay the step chain as the base
    with pytest.raises(ProofError, match="memory_sum_base"):
        check(_replace_lemma(proof, base=lemma.step))
    with pytest.raises(ProofError, match="memory_sum_base"):
        check(_replace_lemma(proof, base=()))


def test_a_step_that_assumes_the_claim_at_t_plus_one_is_refused():
    proof = fast_weight_proof()
    (lemma,) = proof.lemmas
    v, kk, S, V, K = fast_weight_families()
    claim_next = (S[t + 1], mul(transpose(V[t + 1]), K[t + 1]))
    cheat = (Step(claim_next[1], "hyp:IH"),)  # S[t+1] = V[t+1]ᵀK[t+1] in one step: only if IH were at t + 1
    with pytest.raises(ProofError, match="memory_sum_step"):
        check(_replace_lemma(proof, step=cheat))
    # and an induction whose claim is read at t + 1 by its own hypothesis cannot be built either
    with pytest.raises(ProofError):
        check(_replace_lemma(proof, lhs=claim_next[0], rhs=claim_next[1]))


def test_induction_on_a_variable_a_hypothesis_speaks_about_is_refused():
    A = MatrixSymbol("A", p, p)
    x = family("x", (p, p))
    proof = Proof("bad", "t", "s", (Hypothesis("x_t_is_A", x[t], A),), (), (
        Induction("all_A", t, x[t], A, (), (Step(A, "hyp:IH"),)),), Chain("main", A, A, ()),
        families=(x.declaration,))
    with pytest.raises(ProofError, match="speaks about t"):
        check(proof)


def test_a_family_defined_by_a_recurrence_is_fresh_and_refers_only_backwards():
    A = MatrixSymbol("A", p, p)
    F = family("F", (p, p)).recurrence(A, lambda s: mul(A, F[s]))
    hyp = Hypothesis("F_zero_is_I", F[0], Identity(p))  # would contradict F[0] = A
    with pytest.raises(ProofError, match="no hypothesis may speak about it"):
        check(Proof("bad", "t", "s", (hyp,), (), (), Chain("main", A, A, ()), families=(F.declaration,)))
    G = family("G", (p, p))
    G.recurrence(A, lambda s: G[s + 1])  # G[s+1] = G[s+1]: defines nothing
    with pytest.raises(ProofError, match="only at the index"):
        check(Proof("bad", "t", "s", (), (), (), Chain("main", A, A, ()), families=(G.declaration,)))
    H, J = family("H", (p, p)), family("J", (p, p))
    H.recurrence(A, lambda s: J[s])
    J.recurrence(A, lambda s: H[s])  # H and J use each other: a cycle, named
    with pytest.raises(ProofError, match="cycle: family H -> family J -> family H"):
        check(Proof("bad", "t", "s", (), (), (), Chain("main", A, A, ()), families=(H.declaration, J.declaration)))
    K = family("K", (p, p))
    K.recurrence(A, lambda s: mul(A, K[s]))  # H uses K before K is declared (no cycle)
    H2 = family("H", (p, p)).recurrence(A, lambda s: K[s])
    with pytest.raises(ProofError, match="not declared before it"):
        check(Proof("bad", "t", "s", (), (), (), Chain("main", A, A, ()), families=(H2.declaration, K.declaration)))


def test_members_must_have_the_declared_shape_and_the_family_must_be_declared():
    A = MatrixSymbol("A", p, p)
    x = family("x", (p, 1))
    wrong = FamilyMatrix("x", t, p, p)  # x[t] is p×1, not p×p
    with pytest.raises(ProofError, match="the family x says"):
        check(Proof("bad", "t", "s", (), (), (), Chain("main", wrong, wrong, ()), families=(x.declaration,)))
    with pytest.raises(ProofError, match="does not declare"):
        check(Proof("bad", "t", "s", (), (), (), Chain("main", x[t], x[t], ())))
    assert check(Proof("good", "t", "s", (), (), (), Chain("main", A, A, ()))).id == "good"


def test_a_recurrence_that_is_not_total_is_defined_only_as_far_as_shown():
    """P₀ = I, P_{s+1} = (P_s)⁻¹: defined only where each P_s is shown invertible."""
    P = family("P", (p, p)).recurrence(Identity(p), lambda s: inv(P[s]))
    proof = Proof("partial", "t", "s", (), (), (), Chain("main", P[t], P[t], ()), families=(P.declaration,))
    with pytest.raises(ProofError, match="cannot show that P\\[t\\] is defined"):
        check(proof)
    near = Proof("partial", "t", "s", (), (), (), Chain("main", P[1], P[1], ()), families=(P.declaration,))
    assert check(near).id == "partial"  # P₁ = I⁻¹ is defined: the kernel unfolds the recurrence


def test_a_size_that_depends_on_the_variable_must_be_a_family():
    M = MatrixSymbol("M", t, p)
    proof = Proof("bad", "t", "s", (), (), (Induction("m", t, mul(transpose(M), M), mul(transpose(M), M), (), ()),),
                  Chain("main", Identity(p), Identity(p), ()))
    with pytest.raises(ProofError, match="make it a family"):
        check(proof)


def test_the_family_declaration_is_part_of_the_statement_a_certificate_carries():
    theorem = check(fast_weight_proof())
    data = json.loads(certificate_text(theorem))
    assert [f["name"] for f in data["families"]] == ["v", "k", "S", "V", "K"]
    data["families"][2]["step"] = data["families"][2]["step"].replace("Integer(1)", "Integer(2)", 1)
    data.pop("sha256")
    with pytest.raises(Exception):  # noqa: B017 - a CertificateError: parse or proof rejected, either refuses
        verify_certificate(data)
    assert isinstance(Family("x", t, p, 1), Family)
