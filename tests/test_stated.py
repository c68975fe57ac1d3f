"""The kernel's ``check_stated``: a statement from the source, steps from a record or certificate (issue 40 item 3).

Each test hands the kernel a source statement and steps from somewhere else — the right ones, then ones that were
recorded for another statement — and checks that what comes back states exactly the source's statement, or that the
check fails."""

from __future__ import annotations

import dataclasses

import pytest
from sympy import Identity, MatrixSymbol, ZeroMatrix

from derive import Hypothesis, ProofBuilder, dim, index, mul, transpose
from derive.certificates import statement_of
from derive.kernel import Chain, Induction, Proof, ProofError, Step, check, check_stated

p = dim("p")
A, B = MatrixSymbol("A", p, p), MatrixSymbol("B", p, p)
A_ZERO = Hypothesis("A_zero", A, ZeroMatrix(p, p))


def _proof(lemma_hypotheses=(A_ZERO,), hypotheses=(), title="T") -> Proof:
    b = ProofBuilder("stated_demo", title, "words", list(hypotheses))
    b.lemma("doubling", 2 * A, hypotheses=list(lemma_hypotheses)).auto(A)
    b.lemma("twice", transpose(transpose(B))).auto(B)
    b.main(mul(transpose(transpose(B)), Identity(p))).auto(B)
    return b.proof()


def _dropped(proof: Proof) -> Proof:
    """The statement with the doubling lemma's local hypothesis deleted (as an edit in a helper module does)."""
    return dataclasses.replace(proof, lemmas=(_with_local(proof.lemmas[0], ()), *proof.lemmas[1:]))


def _bare(proof: Proof) -> Proof:
    strip = {Chain: lambda c: dataclasses.replace(c, steps=()),
             Induction: lambda c: dataclasses.replace(c, base=(), step=())}
    return dataclasses.replace(proof, lemmas=tuple(strip[type(c)](c) for c in proof.lemmas),
                               claim=strip[Chain](proof.claim), cites=())


def test_the_right_steps_give_the_same_theorem():
    proof = _proof()
    assert check_stated(_bare(proof), proof).digest == check(proof).digest


def test_the_statement_is_the_sources_whatever_the_record_says():
    source, record = _proof(), _proof(title="a title the source does not have")
    theorem = check_stated(_bare(source), record)
    assert theorem.title == "T" and statement_of(theorem.proof) == statement_of(check(source).proof)


def test_a_lemma_recorded_under_a_hypothesis_the_source_dropped_is_refused():
    """The stale record of item 3: 2A = A recorded under A = 0; the source states 2A = A with no hypothesis."""
    record = _proof()
    with pytest.raises(ProofError, match="doubling"):
        check_stated(_dropped(_bare(record)), record)


def test_a_hypothesis_only_the_record_has_is_not_assumed():
    """The record assumes A = 0 for the whole theorem; the source assumes nothing."""
    record = _proof(lemma_hypotheses=(), hypotheses=(A_ZERO,))
    assert check(record).proof.hypotheses == (A_ZERO,)  # a proof of 2A = A under A = 0
    with pytest.raises(ProofError, match="doubling"):
        check_stated(_bare(_dropped(_proof())), record)


def _with_local(chain: Chain, hypotheses) -> Chain:
    return dataclasses.replace(chain, hypotheses=tuple(hypotheses))


def test_a_claim_the_record_changed_is_the_sources():
    proof = _proof()
    other = dataclasses.replace(proof, claim=dataclasses.replace(proof.claim, rhs=transpose(transpose(B))))
    stated = _bare(other)  # the source now claims (Bᵀᵀ)I = Bᵀᵀ: the recorded chain ends at B, not there
    with pytest.raises(ProofError, match="does not end at the right-hand side"):
        check_stated(stated, proof)


def test_a_stated_lemma_the_steps_do_not_prove_is_named():
    proof = _proof()
    with pytest.raises(ProofError, match="prove no lemma twice"):
        check_stated(_bare(proof), dataclasses.replace(proof, lemmas=proof.lemmas[:1]))


def test_a_lemma_of_another_kind_is_refused():
    proof = _proof()
    t = index("t")
    induction = Induction("twice", t, transpose(transpose(B)), B, (), ())
    stated = dataclasses.replace(_bare(proof), lemmas=(_bare(proof).lemmas[0], induction))
    with pytest.raises(ProofError, match="stated as an induction"):
        check_stated(stated, proof)


def test_steps_of_another_theorem_are_refused():
    proof = _proof()
    with pytest.raises(ProofError, match="steps are of theorem"):
        check_stated(_bare(proof), dataclasses.replace(proof, theorem="other"))


def test_a_lemma_found_on_the_way_with_local_hypotheses_proves_nothing_for_the_claim():
    """An extra lemma of the record (as .auto finds them) is proved like any other; one with local hypotheses is no
    rewrite rule, so a record cannot smuggle an assumption into the claim through it."""
    source = _bare(_proof())
    smuggled = Chain("smuggled", B, ZeroMatrix(p, p), (Step(ZeroMatrix(p, p), "hyp:B_zero"),),
                     (Hypothesis("B_zero", B, ZeroMatrix(p, p)),))
    claim = Chain("main", mul(transpose(transpose(B)), Identity(p)), B, (Step(ZeroMatrix(p, p), "lemma:smuggled"),))
    record = dataclasses.replace(source, lemmas=(smuggled, *source.lemmas), claim=claim)
    with pytest.raises(ProofError):
        check_stated(source, record)


@pytest.mark.parametrize("statement, steps", [
    ("not a proof", None), (None, "not a proof"), ("subclass", None), (None, "subclass")])
def test_forged_inputs_are_refused(statement, steps):
    proof = _proof()

    class Sub(Proof):
        pass

    def value(kind, default):
        if kind is None:
            return default
        if kind == "subclass":
            return Sub(*(getattr(default, f.name) for f in dataclasses.fields(Proof)))
        return kind

    with pytest.raises(ProofError):
        check_stated(value(statement, _bare(proof)), value(steps, proof))
