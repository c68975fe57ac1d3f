"""The Kronecker product kron(A, B) is not modelled in Coq (MathComp 1.15 has none): every theorem holding one — in
its statement, a step, a hypothesis — is refused on its own with the construct named ("the Kronecker product"), never
written as a file coqc would reject, and the other theorems of the same export are exported; each kron_* rule is in
RULES_NOT_MODELLED with that name (tests/test_coq.py's coverage test counts it as not modelled).
"""

from __future__ import annotations

from pathlib import Path

from derive.cli import main
from derive.export.coq import RULE_TRANSLATIONS, RULES_NOT_MODELLED, export_certificates

ROOT = Path(__file__).resolve().parents[1]
KRON_RULES = ["kron_mixed", "kron_transpose", "kron_inverse", "kron_sum", "kron_scale", "kron_identity"]
REASON = ("is not modelled in Coq (MathComp 1.15 has no Kronecker product; its rules kron_* are not exported)")


def _checked(theorem, hypotheses, lhs, rhs, steps) -> dict:
    from derive.certificates.format import FORMAT
    from derive.kernel import Chain, Proof, Step, check, proof_to_data

    claim = Chain("main", lhs, rhs, tuple(Step(e, r) for e, r in steps))
    proof = Proof(theorem, theorem, theorem, tuple(hypotheses), (), (), claim)
    check(proof)
    return {"format": FORMAT, **proof_to_data(proof)}


def test_every_kron_rule_is_named_not_modelled():
    from derive.kernel.axioms import AXIOMS

    assert set(KRON_RULES) == {rule for rule in AXIOMS if rule.startswith("kron_")}
    for rule in KRON_RULES:
        assert RULES_NOT_MODELLED[rule] == "the Kronecker product"
        assert rule not in RULE_TRANSLATIONS


def test_a_kron_theorem_is_refused_with_the_construct_named_and_the_others_exported():
    from sympy import Q, S, Symbol
    from sympy.matrices.expressions import MatrixSymbol

    from derive.kernel import Hypothesis
    from derive.kernel.terms import kron, transpose

    n, k = Symbol("n", integer=True, positive=True), Symbol("k", integer=True, positive=True)
    a, b = MatrixSymbol("A", n, n), MatrixSymbol("B", k, k)
    swapped = kron(transpose(a), transpose(b))
    statement = _checked("kron_transpose_example", [], transpose(kron(a, b)), swapped,
                         [(swapped, "kron_transpose")])
    m = MatrixSymbol("M", n * k, n * k)  # kron only in a hypothesis: M = A ⊗ B, so Mᵀ = Aᵀ ⊗ Bᵀ
    hypothesis = _checked("kron_hypothesis_example", [Hypothesis("M_kron", m, kron(a, b))], transpose(m),
                          swapped, [(transpose(kron(a, b)), "hyp:M_kron"), (swapped, "kron_transpose")])
    symmetric = _checked("plain_example", [Hypothesis("A_symmetric", Q.symmetric(a), S.true)], transpose(a), a,
                         [(a, "transpose_symmetric")])
    export = export_certificates([statement, hypothesis, symmetric])
    assert export.exported == ["plain_example"]
    assert set(export.skipped) == {"kron_transpose_example", "kron_hypothesis_example"}
    assert export.skipped["kron_transpose_example"] == f"the Kronecker product kron(A, B) {REASON}"
    reason = export.skipped["kron_hypothesis_example"]
    assert reason.startswith("the Kronecker product kron(") and reason.endswith(REASON), reason
    assert not any("kron" in name for name in export.files)


def test_every_theorem_of_the_kron_file_is_refused_with_the_construct_named(tmp_path, capsys):
    """tests/data/user_kron_codegen.py (five Kronecker theorems): each refused, named; no theorem file; status 4."""
    status = main(["export", "coq", "--library", str(ROOT / "tests" / "data" / "user_kron_codegen.py"),
                   "--record", str(tmp_path / "record"), "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert status == 4, out
    for tid in ("kron_mixed_product", "kron_inverse_solve", "kron_transpose_sum", "kron_scaled_weights",
                "kron_identity_factor"):
        assert f"{tid:30} not exported: the Kronecker product kron(" in out, out
    assert out.count(REASON) == 5, out
    assert sorted(p.name for p in (tmp_path / "out").glob("*.v")) == ["OlsPrelude.v"]
