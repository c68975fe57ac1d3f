"""The witness on every built-in theorem: each one, with its families, scalars, blocks and induction lemmas, is
re-evaluated exactly on sampled instances and as identities (p = 1), and `derive prove --witness` accepts all.

Also the sampler's shifted square roots: for the ridge factor (Λ + λI)^(-1/2) it draws Λ with entries h² such
that h² + λ is a square too, so the definition has an exact value (at random and symbolically)."""

from __future__ import annotations

import pytest
from sympy import Q, Rational
from sympy.matrices.expressions import Identity, MatrixSymbol

from derive import Hypothesis, dim, mul, predicate, scalar
from derive.kernel import Chain, Definition, Proof, Step
from derive.kernel.terms import add, power, transpose
from derive.library import THEOREM_IDS, build
from derive.witness import WitnessError, check_identity, check_instances, witness_all


@pytest.mark.parametrize("theorem_id", THEOREM_IDS)
def test_witness_checks_every_library_theorem(theorem_id: str):
    proof = build(theorem_id)
    summary = witness_all(proof, identity_dims=(1,))
    assert summary["theorem"] == theorem_id
    assert summary["instances"] >= 4 and summary["steps"] > 0 and summary["hypotheses"] >= 0
    assert [r["p"] for r in summary["identities"]] == [1]


def test_the_library_has_its_theorems_with_families_and_scalars():
    assert len(THEOREM_IDS) >= 27  # the paper's, seven extensions, and issue 42's linear attention
    assert sum(bool(build(tid).families) for tid in THEOREM_IDS) >= 3


n, p = dim("n"), dim("p")
lam = scalar("lambda", positive=True)
X, V, Lam = MatrixSymbol("X", n, p), MatrixSymbol("V", p, p), MatrixSymbol("Lambda", p, p)
L = MatrixSymbol("L", p, p)


def ridge_factor(claim_rhs) -> Proof:
    """L = V(Λ + λI)^(-1/2) with XᵀX = VΛVᵀ, V orthogonal, Λ diagonal; the claim L Lᵀ = ``claim_rhs`` in one
    step (the witness checks the claim's value, not the kernel's rule)."""
    shifted = add(Lam, mul(lam, Identity(p)))
    hyps = (Hypothesis("gram", mul(transpose(X), X), mul(V, Lam, transpose(V))),
            Hypothesis("V_cols", mul(transpose(V), V), Identity(p)),
            Hypothesis("V_rows", mul(V, transpose(V)), Identity(p)),
            predicate("Lambda_diagonal", Q.diagonal, Lam))
    defs = (Definition("L", L, mul(V, power(shifted, Rational(-1, 2)))),)
    claim = Chain("main", mul(L, transpose(L)), claim_rhs, (Step(claim_rhs, "auto"),))
    return Proof("ridge_factor", "ridge factor", "", hyps, defs, (), claim)


def test_shifted_square_roots_are_exact_at_random_and_symbolically():
    shifted = add(Lam, mul(lam, Identity(p)))
    right = ridge_factor(mul(V, power(shifted, -1), transpose(V)))
    assert check_instances(right, trials=2).instances >= 8
    assert check_identity(right.theorem, 2, proof=right).chains == 1
    wrong = ridge_factor(mul(V, power(add(Lam, mul(2 * lam, Identity(p))), -1), transpose(V)))
    with pytest.raises(WitnessError, match="differ"):
        check_instances(wrong)
