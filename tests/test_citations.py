"""Theorems cite theorems (``thm:ID``): the kernel instantiates the cited claim and checks its hypotheses.

Soundness first: wrong instances, unmet hypotheses, unknown ids, forged citations and cycles are refused.
"""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest
from sympy import Identity, MatrixSymbol, Q, S

from derive import Hypothesis, ProofBuilder, ProofError, check, dim, inv, mul, predicate, theorem, transpose
from derive.authoring import checked, registry
from derive.certificates import CertificateError, certificate_text, verify_certificate
from derive.kernel import Chain, Proof, Step, Theorem
from derive.library import LIBRARY

p, d = dim("p"), dim("d")
A, B = MatrixSymbol("A", p, p), MatrixSymbol("B", p, p)
U = MatrixSymbol("U", d, d)  # the symbol orthogonal_inverse is stated for
INSTANCE = ((d, p), (U, A))


def cite_proof(hypotheses, steps, lhs, rhs, cites=None, name="citing") -> Proof:
    cites = (checked("orthogonal_inverse"),) if cites is None else cites
    return Proof(name, "t", "s", tuple(hypotheses), (), (), Chain("main", lhs, rhs, tuple(steps)), tuple(cites))


ROWS = Hypothesis("A_rows", mul(A, transpose(A)), Identity(p))
COLUMNS = Hypothesis("A_columns", mul(transpose(A), A), Identity(p))


def test_a_citation_with_its_hypotheses_met_checks():
    theorem = check(cite_proof([ROWS], [Step(transpose(A), "thm:orthogonal_inverse", INSTANCE)], inv(A), transpose(A)))
    assert theorem.proof.cites[0].id == "orthogonal_inverse"


def test_an_unmet_hypothesis_is_refused():
    # only AᵀA = I: for a square A it would imply AAᵀ = I, but the kernel does not know that, and must not guess
    with pytest.raises(ProofError, match="hypothesis U_orthonormal_rows of theorem orthogonal_inverse does not hold"):
        check(cite_proof([COLUMNS, predicate("A_invertible", Q.invertible, A)],
                         [Step(transpose(A), "thm:orthogonal_inverse", INSTANCE)], inv(A), transpose(A)))


def test_a_wrong_instance_is_refused():
    hyps = [ROWS, predicate("B_invertible", Q.invertible, B)]
    with pytest.raises(ProofError, match="does not hold"):  # B is not known to be orthogonal
        check(cite_proof(hyps, [Step(transpose(B), "thm:orthogonal_inverse", ((d, p), (U, B)))], inv(B), transpose(B)))
    with pytest.raises(ProofError, match="does not rewrite"):  # instance for A, step about B
        check(cite_proof(hyps, [Step(transpose(B), "thm:orthogonal_inverse", INSTANCE)], inv(B), transpose(B)))
    with pytest.raises(ProofError, match="not a symbol of theorem orthogonal_inverse"):
        check(cite_proof([ROWS], [Step(transpose(A), "thm:orthogonal_inverse", ((d, p), (A, A)))], inv(A),
                         transpose(A)))
    with pytest.raises(ProofError, match="shape"):  # U is d×d, A is p×p: the dimension must be instantiated
        check(cite_proof([ROWS], [Step(transpose(A), "thm:orthogonal_inverse", ((U, A),))], inv(A), transpose(A)))
    with pytest.raises(ProofError, match="positive integer dimension"):
        check(cite_proof([ROWS], [Step(transpose(A), "thm:orthogonal_inverse", ((d, p - 1), (U, A)))], inv(A),
                         transpose(A)))


def test_an_unknown_or_uncited_theorem_is_refused():
    step = Step(transpose(A), "thm:orthogonal_inverse", INSTANCE)
    with pytest.raises(ProofError, match="not among the theorems this proof cites"):
        check(cite_proof([ROWS], [step], inv(A), transpose(A), cites=()))
    with pytest.raises(ProofError, match="not among the theorems this proof cites"):
        check(cite_proof([ROWS], [dataclasses.replace(step, rule="thm:no_such")], inv(A), transpose(A)))


def test_forged_citations_are_refused():
    real = checked("orthogonal_inverse")
    step = Step(transpose(A), "thm:orthogonal_inverse", INSTANCE)
    with pytest.raises(ProofError, match="checked theorems only"):
        check(cite_proof([ROWS], [step], inv(A), transpose(A), cites=(real.proof,)))

    class Fake(Theorem):  # a subclass cannot be made either: the constructor wants the kernel's token
        pass

    with pytest.raises(TypeError):
        Fake(object(), real.proof, real.digest, 0.0)
    with pytest.raises(ProofError, match="cites itself"):
        check(cite_proof([ROWS], [step], inv(A), transpose(A), name="orthogonal_inverse"))
    with pytest.raises(ProofError, match="cited twice"):
        check(cite_proof([ROWS], [step], inv(A), transpose(A), cites=(real, real)))


def test_a_false_claim_cannot_be_reached_through_a_citation():
    # (AB)ᵀ = AᵀBᵀ is false; citing a true theorem in either direction cannot produce it
    bad = Proof("bad", "t", "s", (ROWS,), (), (),
                Chain("main", transpose(mul(A, B)), mul(transpose(A), transpose(B)),
                      (Step(mul(transpose(A), transpose(B)), "thm:orthogonal_inverse", INSTANCE),)),
                (checked("orthogonal_inverse"),))
    with pytest.raises(ProofError):
        check(bad)


def test_the_builder_cites_registered_theorems_and_detects_cycles(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(registry, "_CHECKED", dict(registry._CHECKED))
    x = MatrixSymbol("x", p, p)

    def chain_of(name, other):
        def build():
            b = ProofBuilder(name, name, "", [Hypothesis("h", x, transpose(x))], [])
            b.main(x).rw(f"thm:{other}")
            return b.proof()
        build.__name__ = name
        return build

    theorem(chain_of("cycle_a", "cycle_b"))
    theorem(chain_of("cycle_b", "cycle_a"))
    with pytest.raises(ProofError, match="cycle: cycle_a -> cycle_b -> cycle_a"):
        checked("cycle_a")


def test_registering_two_theorems_under_one_id_is_an_error(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))

    def orthogonal_inverse():
        raise AssertionError("never built")

    with pytest.raises(registry.LibraryError, match="registered twice"):
        theorem(orthogonal_inverse)


# --- certificates carry what they cite ------------------------------------------------------


@pytest.fixture(scope="module")
def spectral():
    return json.loads(certificate_text(checked("spectral_precision")))


def test_a_certificate_carries_its_dependencies(spectral):
    assert [c["theorem"] for c in spectral["cites"]] == ["orthogonal_transpose_inverse", "orthogonal_inverse"]
    assert [dep["theorem"] for dep in spectral["dependencies"]] == ["orthogonal_transpose_inverse",
                                                                     "orthogonal_inverse"]
    assert verify_certificate(spectral).digest == checked("spectral_precision").digest  # no library needed


def test_a_certificate_whose_dependencies_are_altered_is_rejected(spectral):
    missing = copy.deepcopy(spectral)
    missing["dependencies"].pop()
    with pytest.raises(CertificateError, match="not checked before it"):
        verify_certificate(missing, LIBRARY)
    wrong_digest = copy.deepcopy(spectral)
    wrong_digest["cites"][0]["sha256"] = "0" * 64
    with pytest.raises(CertificateError, match="sha256"):
        verify_certificate(wrong_digest, LIBRARY)
    altered = copy.deepcopy(spectral)  # a dependency whose claim changed: the library's statement differs
    altered["dependencies"][1]["claim"]["rhs"] = altered["dependencies"][1]["claim"]["lhs"]
    with pytest.raises(CertificateError, match="dependencies\\[1\\]"):
        verify_certificate(altered, LIBRARY)
    reordered = copy.deepcopy(spectral)  # a dependency citing one carried after it (the order breaks cycles)
    reordered["dependencies"] = [spectral["dependencies"][1], spectral["dependencies"][0]]
    verify_certificate(reordered, LIBRARY)  # independent dependencies: any order checks
    cyclic = copy.deepcopy(spectral)
    cyclic["dependencies"] = [spectral]  # it carries itself
    with pytest.raises(CertificateError):
        verify_certificate(cyclic, LIBRARY)


def test_a_user_theorem_citing_the_library_round_trips():
    x = MatrixSymbol("X", p, p)
    b = ProofBuilder("user_orthogonal", "user", "", [Hypothesis("X_rows", mul(x, transpose(x)), Identity(p))], [])
    b.main(inv(x)).rw("thm:orthogonal_inverse", instance=((d, p), (U, x))).qed(transpose(x))
    theorem_ = check(b.proof())
    data = json.loads(certificate_text(theorem_))
    assert verify_certificate(data).id == "user_orthogonal"
    data["claim"]["rhs"] = data["claim"]["lhs"]  # X⁻¹ = X⁻¹, but the chain ends at Xᵀ
    data.pop("sha256")
    with pytest.raises(CertificateError, match="proof rejected"):
        verify_certificate(data)


def test_predicate_rejects_an_unknown_predicate():
    with pytest.raises(ValueError, match="not a predicate the kernel knows"):
        predicate("bad", Q.nonsingular if hasattr(Q, "nonsingular") else Q.real, A)
    assert predicate("ok", Q.invertible, A).rhs == S.true


def test_a_theorem_keeps_its_own_copy_of_the_proof():
    hypotheses = [ROWS]
    proof = Proof("copy", "t", "s", hypotheses, (), (),
                  Chain("main", inv(A), transpose(A), [Step(transpose(A), "thm:orthogonal_inverse", INSTANCE)]),
                  [checked("orthogonal_inverse")])
    theorem_ = check(proof)
    hypotheses.clear()  # the caller's list, emptied after checking
    assert theorem_.proof.hypotheses == (ROWS,)
    assert isinstance(theorem_.proof.claim.steps, tuple) and isinstance(theorem_.proof.cites, tuple)


# --- earlier lemmas serve the definedness judgments ---------------------------------------------


def _qr_proof():
    from derive.authoring import orthogonal

    n_, k_, m_ = dim("n"), dim("k"), dim("m")
    X, Y, Xq = MatrixSymbol("X", n_, p), MatrixSymbol("Y", n_, k_), MatrixSymbol("X_q", m_, p)
    Qf, R = MatrixSymbol("Q", n_, p), MatrixSymbol("R", p, p)
    gram = mul(transpose(X), X)
    b = ProofBuilder("qr_ols", "t", "", [Hypothesis("qr", X, mul(Qf, R)), orthogonal("Q", Qf)[0],
                                        predicate("R_invertible", Q.invertible, R)])
    (b.lemma("gram", gram).rw("hyp:qr", nth=0).rw("hyp:qr").rw("transpose_product")
     .rw("hyp:Q_orthonormal_columns").rw("identity_mul").qed(mul(transpose(R), R)))
    (b.main(mul(Xq, inv(gram), transpose(X), Y)).rw("lemma:gram").rw("inverse_product").rw("hyp:qr", at=X)
     .rw("transpose_product").rw("inverse_cancel").rw("identity_mul").qed(mul(Xq, inv(R), transpose(Qf), Y)))
    return b.proof()


def test_a_proved_lemma_shows_a_term_invertible_without_an_extra_hypothesis():
    proof = _qr_proof()
    theorem_ = check(proof)  # XᵀX = RᵀR (proved) and R invertible: XᵀX invertible
    assert [h.name for h in theorem_.proof.hypotheses] == ["qr", "Q_orthonormal_columns", "R_invertible"]
    with pytest.raises(ProofError, match="main: cannot show that X.T\\*X is invertible"):
        check(dataclasses.replace(proof, lemmas=()))  # without the lemma nothing shows it


def test_a_builder_step_whose_result_is_undefined_says_why():
    x = MatrixSymbol("x", p, p)
    b = ProofBuilder("why", "t", "", [], [])
    chain = b.main(mul(x, transpose(x)))
    with pytest.raises(ProofError, match="is not defined: cannot show that x is invertible"):
        chain.to(mul(x, inv(x), x, transpose(x)), "inverse_cancel")
