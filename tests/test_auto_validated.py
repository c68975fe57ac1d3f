"""``.auto`` hands back only chains the kernel accepts.

Blocks of explicit size (a 1×1 slot, one token) and grids nested in grids made ``.auto`` raise SymPy's
"Matrix with symbolic shape cannot be represented explicitly" (the kernel's block constructor let SymPy expand
blocks); and whatever the automation finds is re-checked step by step with the kernel's own single-step check
before it is recorded: a step the kernel would refuse is searched around, or reported as the automation's
failure, never as a fault of the user's statement.
"""

from __future__ import annotations

import json

import pytest
from sympy import BlockMatrix, Identity, MatrixSymbol, ZeroMatrix

from derive import ProofBuilder, ProofError, add, check, dim, mul, transpose
from derive.authoring import auto
from derive.authoring.auto import Move
from derive.certificates import certificate_text, verify_certificate

p = dim("p")
w, x = MatrixSymbol("w", p, 1), MatrixSymbol("x", p, 1)
a = MatrixSymbol("a", 1, 1)
inner = BlockMatrix([[transpose(x), a]])  # one token and a 1×1 label slot

CASES = {
    "slot": (mul(Identity(1), BlockMatrix([[transpose(w), ZeroMatrix(1, 1)]])),
             BlockMatrix([[transpose(w), ZeroMatrix(1, 1)]])),
    "one_by_one_gram": (mul(BlockMatrix([[a, transpose(w)]]), BlockMatrix([[a], [w]])),
                        add(mul(a, a), mul(transpose(w), w))),
    "nested_transpose": (transpose(BlockMatrix([[inner, ZeroMatrix(1, 1)]])),
                         BlockMatrix([[transpose(inner)], [ZeroMatrix(1, 1)]])),
    "nested_identity": (mul(Identity(1), BlockMatrix([[inner, a]])), BlockMatrix([[inner, a]])),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_auto_over_blocks_of_explicit_size_gives_a_chain_check_accepts(name):
    lhs, rhs = CASES[name]
    b = ProofBuilder(name, "t", "s")
    b.main(lhs).auto(rhs)
    theorem = check(b.proof())
    assert verify_certificate(json.loads(certificate_text(theorem))).digest == theorem.digest


def _bogus_find(engine, start, target):
    """A chain of one step the kernel refuses: the target reached at once by a rule that does not give it."""
    return [Move(target, "transpose_sum")]


def test_a_refused_step_found_by_the_automation_is_searched_around(monkeypatch):
    monkeypatch.setattr(auto, "_find", _bogus_find)
    lhs, rhs = CASES["slot"]
    b = ProofBuilder("searched", "t", "s")
    b.main(lhs).auto(rhs)
    assert [step.rule for step in b.claim.steps] == ["identity_mul"]  # I₁ [wᵀ 0] = [wᵀ 0], found by the search
    check(b.proof())


def test_a_refused_step_the_search_cannot_mend_is_the_automations_failure(monkeypatch):
    monkeypatch.setattr(auto, "_find", _bogus_find)
    monkeypatch.setattr(auto.Engine, "search", lambda self, left, right, max_terms=0: None)
    lhs, rhs = CASES["slot"]
    b = ProofBuilder("blamed", "t", "s")
    with pytest.raises(ProofError) as caught:
        b.main(lhs).auto(rhs)
    message = str(caught.value)
    assert "main step 1 (rule auto)" in message and "the automation failed" in message
    assert "not of your statement" in message and "its step 1 (rule transpose_sum)" in message
    assert "/statement:" not in message and "\n" not in message
