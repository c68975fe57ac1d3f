"""The witness on user theorems with block matrices and several lemmas (issue 28, item 7), in seconds.

The partitioned-regression (Frisch–Waugh–Lovell), GLS-by-whitening, Woodbury and scalar-language files are
witnessed in full (instances and identities for p = 1, 2): the rational functions of the Schur chains at p = 2
grow past the witness's term limit, so those chains are checked at random points (Schwartz–Zippel, exact
rationals), which takes seconds where the gcds took more than ten minutes.  The witness must not become weaker:
false block identities (a Schur complement with the wrong sign, blocks multiplied in the wrong order, the wrong
block of the inverse, a false Woodbury formula) are refuted by the instances and by the identity check, on the
symbolic route and on the random-point route alike.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from sympy import Identity, MatrixSymbol, Q, ZeroMatrix

from derive import Definition, add, block, dim, inv, mul, predicate, transpose
from derive.authoring import checked, load_library
from derive.kernel import Chain, Proof, Step
from derive.witness import WitnessError, check_identity, check_instances, witness_all
from derive.witness.evaluate import SYMBOLIC_TERM_LIMIT

DATA = Path(__file__).parent / "data"
USER_FILES = ("user_partitioned.py", "user_definedness.py", "user_scalars.py")


@pytest.fixture(scope="module")
def user_proofs() -> dict[str, Proof]:  # unregistered after this module (tests/conftest.py)
    return {theorem_id: checked(theorem_id).proof
            for name in USER_FILES for theorem_id in load_library(str(DATA / name))}


@pytest.mark.parametrize("name", USER_FILES)
def test_every_theorem_of_the_user_files_is_confirmed(user_proofs, name):
    ids = [i for i in user_proofs if i in load_library(str(DATA / name))]
    assert ids
    for theorem_id in ids:
        summary = witness_all(user_proofs[theorem_id])  # raises WitnessError on any refutation
        assert summary["theorem"] == theorem_id and summary["instances"] > 0 and summary["steps"] > 0
        assert [item["p"] for item in summary["identities"]] == [1, 2]
        assert all(item["parameters"] > 0 for item in summary["identities"])
        # the Schur chains at p = 2 grow past the term limit and are checked at random points; everything else
        # (p = 1, and the other files' theorems) keeps the exact rational functions
        at_points = [item.get("points", 0) for item in summary["identities"]]
        assert at_points == ([0, 3] if theorem_id == "partitioned_regression" else [0, 0]), theorem_id


@pytest.mark.slow  # about 5 s of CPU on top of the test above
def test_every_step_of_the_schur_chains_at_random_points(user_proofs):
    proof = user_proofs["partitioned_regression"]
    report = check_identity(proof.theorem, 2, proof=proof, steps=True)
    assert report.points == report.chains == 3 and report.parameters > 0
    assert report.steps == sum(len(c.steps) for c in (*proof.lemmas, proof.claim))  # each counted once
    assert report.hypotheses >= 2 * len(proof.hypotheses)  # verified at each point


def test_the_random_point_route_is_deterministic_and_counts_its_parameters(user_proofs):
    proof = user_proofs["woodbury"]
    first, second = (check_identity(proof.theorem, 2, proof=proof, steps=True, term_limit=0) for _ in range(2))
    assert first.points == first.chains == 2  # a limit of 0 sends every chain to random points
    assert dataclasses.replace(first, seconds=0) == dataclasses.replace(second, seconds=0)
    assert first.parameters > 0 and first.steps == sum(len(c.steps) for c in (*proof.lemmas, proof.claim))


# --- false block identities are refuted ---------------------------------------------------------------------

p, q = dim("p"), dim("q")
A, B = MatrixSymbol("A", p, p), MatrixSymbol("B", p, q)
C, D = MatrixSymbol("C", q, p), MatrixSymbol("D", q, q)
SCHUR = add(D, mul(-1, C, inv(A), B))  # S = D − C A⁻¹ B


def schur_form(s, *, sign: int = -1, wrong_order: bool = False):
    """The block inverse by the Schur complement s of A (``sign`` of the off-diagonal blocks; ``wrong_order``
    multiplies the top-left correction's factors in a wrong, shape-correct order)."""
    ai, si = inv(A), inv(s)
    corner = mul(B, si, C, ai, ai) if wrong_order else mul(ai, B, si, C, ai)
    return block([[add(ai, corner), mul(sign, ai, B, si)], [mul(sign, si, C, ai), si]])


def block_inverse(rhs, complement=SCHUR) -> Proof:
    """(A B; C D)⁻¹ = rhs in one step, with A and the complement invertible (the witness never asks the kernel)."""
    hypotheses = (predicate("A_invertible", Q.invertible, A), predicate("S_invertible", Q.invertible, complement))
    grid = inv(block([[A, B], [C, D]]))
    chain = Chain("main", grid, rhs, (Step(rhs, "block_inverse_schur"),))
    return Proof("schur_step", "t", "s", hypotheses, (), (), chain)


def refuted_everywhere(proof: Proof) -> None:
    """Refuted by the instances, by the identity check as ``derive prove --witness`` runs it (rational functions up
    to the term limit, then random points) and by every step at random points only."""
    with pytest.raises(WitnessError, match="differs"):
        check_instances(proof)
    with pytest.raises(WitnessError, match="not an identity"):
        check_identity(proof.theorem, 2, proof=proof)
    with pytest.raises(WitnessError, match="differs"):
        check_identity(proof.theorem, 2, proof=proof, steps=True, term_limit=0)


def test_the_true_block_inverse_is_confirmed():
    proof = block_inverse(schur_form(SCHUR))
    assert check_instances(proof).instances > 0
    for limit in (SYMBOLIC_TERM_LIMIT, 0):
        assert check_identity(proof.theorem, 2, proof=proof, steps=True, term_limit=limit).steps == 1


@pytest.mark.parametrize("rhs", [
    schur_form(SCHUR, sign=1),  # off-diagonal blocks with the wrong sign
    schur_form(add(D, mul(C, inv(A), B))),  # the complement D + CA⁻¹B
    schur_form(SCHUR, wrong_order=True),  # BS⁻¹CA⁻¹A⁻¹ for A⁻¹BS⁻¹CA⁻¹
], ids=["wrong sign", "wrong complement", "wrong order"])
def test_false_block_inverses_are_refuted(rhs):
    refuted_everywhere(block_inverse(rhs))


def replace_claim(proof: Proof, rhs) -> Proof:
    return dataclasses.replace(proof, claim=dataclasses.replace(proof.claim, rhs=rhs))


@pytest.mark.slow  # about 10 s of CPU: three identities at p = 2 (the instances refute each at once)
def test_false_partitioned_regressions_are_refuted(user_proofs):
    proof = user_proofs["partitioned_regression"]
    n = dim("n")
    X1, X2, Y = MatrixSymbol("X_1", n, p), MatrixSymbol("X_2", n, q), MatrixSymbol("Y", n, 1)
    X, M1 = MatrixSymbol("X", n, p + q), MatrixSymbol("M_1", n, n)
    rhs = mul(inv(mul(transpose(X2), M1, X2)), transpose(X2), M1, Y)
    first_rows = block([[Identity(q), ZeroMatrix(q, p)]])  # the first q rows for the last q: the wrong block
    wrong_block = dataclasses.replace(proof, claim=dataclasses.replace(
        proof.claim, lhs=mul(first_rows, inv(mul(transpose(X), X)), transpose(X), Y)))
    gram1 = mul(transpose(X1), X1)
    wrong_sign = add(Identity(n), mul(X1, inv(gram1), transpose(X1)))  # M₁ = I + X₁(X₁ᵀX₁)⁻¹X₁ᵀ
    wrong_residual = replace_claim(proof, mul(inv(mul(transpose(X2), wrong_sign, X2)), transpose(X2), M1, Y))
    swapped = dataclasses.replace(proof, definitions=(Definition("X", X, block([[X2, X1]])), proof.definitions[1]))
    for bad in (wrong_block, wrong_residual, swapped):
        with pytest.raises(WitnessError, match="differs"):
            check_instances(bad)
        with pytest.raises(WitnessError):
            check_identity(proof.theorem, 2, proof=bad)  # at random points (past the term limit)
    assert rhs == proof.claim.rhs  # the false variants above differ from the true claim in one place each


def test_false_woodbury_identities_are_refuted(user_proofs):
    proof = user_proofs["woodbury"]
    n, k = dim("n"), dim("k")
    A_, U, C_, V = MatrixSymbol("A", n, n), MatrixSymbol("U", n, k), MatrixSymbol("C", k, k), MatrixSymbol("V", k, n)
    A_inv = inv(A_)
    for capacitance, sign in ((add(inv(C_), mul(V, A_inv, U)), 1),  # + A⁻¹U(C⁻¹ + VA⁻¹U)⁻¹VA⁻¹
                              (add(C_, mul(V, A_inv, U)), -1)):  # C for C⁻¹ in the capacitance
        bad = replace_claim(proof, add(A_inv, mul(sign, A_inv, U, inv(capacitance), V, A_inv)))
        with pytest.raises(WitnessError, match="differs"):
            check_instances(bad)
        for limit in (SYMBOLIC_TERM_LIMIT, 0):  # Woodbury at p = 2 stays below the limit: both routes
            with pytest.raises(WitnessError, match="not an identity"):
                check_identity(proof.theorem, 2, proof=bad, term_limit=limit)


@pytest.mark.slow  # the witness at a larger size: about 3 s of CPU
def test_multi_layer_gd_at_p_3_in_seconds_at_random_points():
    """The identity the slow tier skips at p = 3 (minutes of rational functions) runs at random points."""
    proof = checked("multi_layer_gd").proof
    report = check_identity(proof.theorem, 3, proof=proof)
    assert report.points > 0 and report.parameters > 0
