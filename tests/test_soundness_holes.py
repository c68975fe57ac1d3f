"""False theorems the kernel once accepted (issue 27, items 1-4 and 13), each refused now.

For each hole: the false theorem as a ``Proof`` (refused by ``check``, with a message naming what is wrong),
the same as a certificate (refused by ``derive check`` in a fresh process), explicit matrices showing that the
statement is false, and the nearby true statements that must still check.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
import sympy
from sympy import Identity, Integer, MatMul, MatrixSymbol, Q, Rational, ZeroMatrix, sqrt

from derive import add, check, dim, index, inv, mul, power, predicate, transpose
from derive.certificates import FORMAT, certificate_text
from derive.kernel import Chain, Definition, Family, Hypothesis, Induction, Proof, ProofError, Step
from derive.kernel.checking import induction_chains
from derive.kernel.judgments import Context, positive_definite
from derive.kernel.proof import proof_to_data
from derive.kernel.terms import FamilyMatrix
from derive.library import LIBRARY

ROOT = Path(__file__).resolve().parents[1]
n, m = dim("n"), dim("m")
s, t, u = index("s"), index("t"), index("u")
I = Identity(n)


def derive_check(tmp_path: Path, proof: Proof) -> subprocess.CompletedProcess:
    """``derive check`` in a fresh process on the certificate of ``proof`` (checked or not)."""
    path = tmp_path / f"{proof.theorem}.json"
    path.write_text(json.dumps({"format": FORMAT, **proof_to_data(proof)}, indent=1))
    return subprocess.run([sys.executable, "-m", "derive", "check", str(path)], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


def refused_by_derive_check(tmp_path: Path, proof: Proof, reason: str) -> None:
    result = derive_check(tmp_path, proof)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "REJECTED" in result.stdout and reason in result.stdout, result.stdout


# --- 1. instances of a forall hypothesis are terms like any other ----------------------------------------

M, N, B = MatrixSymbol("M", n, n), MatrixSymbol("N", n, n), MatrixSymbol("B", n, 1)


def quadratic_form_proof(instance) -> Proof:
    """From "for all B (n×1): BᵀMB = BᵀNB", M = N, by instantiating B with ``instance``."""
    quad = Hypothesis("quad", mul(transpose(B), M, B), mul(transpose(B), N, B), (B,))
    steps = (Step(mul(I, M), "identity_mul"), Step(mul(I, M, I), "identity_mul"),
             Step(mul(transpose(I), M, I), "transpose_symmetric"),
             Step(mul(transpose(I), N, I), "hyp:quad", ((B, instance),)),
             Step(mul(I, N, I), "transpose_symmetric"), Step(mul(N, I), "identity_mul"), Step(N, "identity_mul"))
    return Proof("quadratic_forms", "t", "s", (quad,), (), (), Chain("main", M, N, steps))


NOT_A_COLUMN = MatMul(Identity(n), Identity(1), evaluate=False)  # SymPy says n×1; its normal form is I_n


def test_the_hypothesis_holds_and_the_claim_fails_for_explicit_matrices():
    rotation, zero = sympy.Matrix([[0, 1], [-1, 0]]), sympy.zeros(2, 2)
    x, y = sympy.symbols("x y")
    b = sympy.Matrix([x, y])
    assert sympy.expand((b.T * rotation * b)[0, 0]) == 0 == (b.T * zero * b)[0, 0]  # for all B
    assert rotation != zero  # but M ≠ N


def test_a_forall_instance_whose_normal_form_changes_its_shape_is_refused(tmp_path):
    proof = quadratic_form_proof(NOT_A_COLUMN)
    with pytest.raises(ProofError, match=r"step 4 \(rule hyp:quad\): instance of B: shapes do not conform"):
        check(proof)
    refused_by_derive_check(tmp_path, proof, "instance of B")


def test_forall_instances_must_be_defined():
    X = MatrixSymbol("X", n, n)
    b = MatrixSymbol("b", n, 1)
    with pytest.raises(ProofError, match=r"instance of B: cannot show that X is invertible"):
        check(quadratic_form_proof(mul(inv(X), b)))
    with pytest.raises(ProofError, match=r"instance of B: the two sides have different shapes"):
        check(quadratic_form_proof(MatrixSymbol("b", n, n)))


def test_a_genuine_column_instance_still_rewrites():
    """B := b for a column b proves bᵀMb = bᵀNb (the hypothesis at b), which is true."""
    b = MatrixSymbol("b", n, 1)
    quad = Hypothesis("quad", mul(transpose(B), M, B), mul(transpose(B), N, B), (B,))
    claim = Chain("main", mul(transpose(b), M, b), mul(transpose(b), N, b),
                  (Step(mul(transpose(b), N, b), "hyp:quad", ((B, b),)),))
    check(Proof("at_b", "t", "s", (quad,), (), (), claim))


def test_a_theorem_citation_instance_whose_normal_form_changes_its_shape_is_refused():
    """The same instance given to a cited theorem (``thm:``): refused by name."""
    b = MatrixSymbol("b", n, 1)
    lemma = check(Proof("transpose_twice", "t", "s", (), (), (),
                        Chain("main", transpose(transpose(b)), b, (Step(b, "transpose_transpose"),))))
    c = MatrixSymbol("c", n, 1)
    ok = Proof("cites", "t", "s", (), (), (), Chain("main", transpose(transpose(c)), c,
                                                    (Step(c, "thm:transpose_twice", ((b, c),)),)), (lemma,))
    check(ok)
    bad = dataclasses.replace(ok, claim=Chain("main", transpose(transpose(I)), I,
                                              (Step(I, "thm:transpose_twice", ((b, NOT_A_COLUMN),)),)))
    with pytest.raises(ProofError, match=r"instance of b: shapes do not conform"):
        check(bad)


def test_the_kernel_never_trusts_a_shape_its_normal_form_does_not_keep(monkeypatch):
    """The general guard: were the normal form ever to change a term's shape, the term is refused."""
    import derive.kernel.judgments as judgments

    b = MatrixSymbol("b", n, 1)
    monkeypatch.setattr(judgments, "canon", lambda term: Identity(n) if term == b else term)
    with pytest.raises(ProofError, match=r"b is n×1 as written but its normal form I is n×n"):
        check(Proof("shape", "t", "s", (), (), (), Chain("main", b, b, ())))


# --- 2. a recurrence may not mention another index symbol ------------------------------------------------


def x(e):
    return FamilyMatrix("x", e, n, n)


def F(e):
    return FamilyMatrix("F", e, n, n)


def foreign_index_proof(step_index) -> Proof:
    """F[0] = x[0], F[s+1] = x[step_index + 1]; by induction on t, F[t] = x[t]."""
    families = (Family("x", s, n, n), Family("F", s, n, n, x(Integer(0)), x(step_index + 1)))
    lemma = Induction("L", t, F(t), x(t), (Step(x(Integer(0)), "base:F"),),
                      (Step(x(t + 1), "step:F", ((s, t),)),))
    return Proof("foreign_index", "t", "s", (), (), (lemma,), Chain("main", F(t), x(t), (Step(x(t), "lemma:L"),)),
                 (), families)


def test_the_recurrence_mentioning_t_gives_a_sequence_where_the_claim_fails():
    """With x_i = i·I and t fixed at 1: F₁ = x_{t+1} = x₂ = 2I, but the claim says F₁ = x₁ = I."""
    value_of_x = {i: i * sympy.eye(2) for i in range(4)}
    fixed_t = 1
    sequence = [value_of_x[0]]
    for _ in range(3):
        sequence.append(value_of_x[fixed_t + 1])
    assert sequence[fixed_t] != value_of_x[fixed_t]


def test_a_recurrence_that_mentions_another_index_symbol_is_refused(tmp_path):
    with pytest.raises(ProofError, match="family F's step mentions the index symbol t"):
        check(foreign_index_proof(t))
    refused_by_derive_check(tmp_path, foreign_index_proof(t), "family F's step mentions the index symbol t")
    check(foreign_index_proof(s))  # the true recurrence F[s+1] = x[s+1] proves F[t] = x[t]


def test_a_base_or_a_shape_that_mentions_an_index_symbol_is_refused():
    proof = foreign_index_proof(s)
    x_family, f_family = proof.families
    with pytest.raises(ProofError, match="family F's base value mentions the index symbol s"):
        check(dataclasses.replace(proof, families=(x_family, dataclasses.replace(f_family, base=x(s)))))
    v = Family("v", s, t, Integer(1))  # a free family whose members have t rows, t not its index
    with pytest.raises(ProofError, match="family v's shape mentions the index symbol t"):
        check(dataclasses.replace(proof, families=(*proof.families, v)))


def test_induction_refuses_a_family_whose_recurrence_speaks_about_its_variable():
    """The induction rule's own guard, behind the declaration's: called on the proof as it stands."""
    proof = foreign_index_proof(t)
    with pytest.raises(ProofError, match=r"induction on t: family F's shape or recurrence speaks about t"):
        induction_chains(proof, proof.lemmas[0])


# --- 3. definitions and recurrences form an acyclic graph ------------------------------------------------

D = MatrixSymbol("D", n, n)


def G(e):
    return FamilyMatrix("G", e, n, n)


def cyclic_proof() -> Proof:
    """D := G[1] with G[0] = 0, G[u+1] = D + I: then D + I = G[1] = D."""
    families = (Family("G", u, n, n, ZeroMatrix(n, n), add(D, I)),)
    steps = (Step(G(Integer(1)), "step:G", ((u, Integer(0)),)), Step(D, "def:dd"))
    return Proof("cycle", "t", "s", (), (Definition("dd", D, G(Integer(1))),), (),
                 Chain("main", add(D, I), D, steps), (), families)


def test_no_matrix_satisfies_the_cyclic_definition():
    for value in (sympy.zeros(2, 2), sympy.Matrix([[1, 2], [3, 4]]), -sympy.eye(2)):
        member_one = value + sympy.eye(2)  # G[1] by the recurrence
        assert member_one != value  # so D = G[1] fails for every D


def test_a_definition_and_a_recurrence_in_a_cycle_are_refused(tmp_path):
    reason = "definitions and recurrences refer to each other in a cycle: definition dd (D) -> family G -> " \
             "definition dd (D)"
    with pytest.raises(ProofError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        check(cyclic_proof())
    refused_by_derive_check(tmp_path, cyclic_proof(), reason)


def test_a_longer_cycle_through_two_families_is_named():
    E = MatrixSymbol("E", n, n)
    families = (Family("G", u, n, n, ZeroMatrix(n, n), add(D, I)), Family("H", u, n, n, E, E))
    proof = Proof("cycle2", "t", "s", (), (Definition("dd", D, FamilyMatrix("H", Integer(2), n, n)),
                                          Definition("ee", E, G(Integer(1)))), (),
                  Chain("main", D, D, ()), (), families)
    with pytest.raises(ProofError, match="cycle: definition dd \\(D\\) -> family H -> definition ee \\(E\\) -> "
                                         "family G -> definition dd \\(D\\)"):
        check(proof)


def test_definitions_and_recurrences_that_refer_to_each_other_without_a_cycle_check():
    E, Z = MatrixSymbol("E", n, n), MatrixSymbol("Z", n, n)
    families = (Family("G", u, n, n, ZeroMatrix(n, n), add(G(u), E)),)
    proof = Proof("acyclic", "t", "s", (), (Definition("ee", E, add(Z, I)), Definition("dd", D, G(Integer(1)))),
                  (), Chain("main", D, add(ZeroMatrix(n, n), E), (Step(G(Integer(1)), "def:dd"),
                                                                  Step(add(G(Integer(0)), E), "step:G",
                                                                       ((u, Integer(0)),)),
                                                                  Step(add(ZeroMatrix(n, n), E), "base:G"))),
                  (), families)
    check(proof)


# --- 4. positive definite means xᵀAx > 0, without symmetry ----------------------------------------------

A = MatrixSymbol("A", n, n)
W, V = MatrixSymbol("W", n, m), MatrixSymbol("V", n, m)
ROTATION_60 = sympy.Matrix([[Rational(1, 2), -sqrt(3) / 2], [sqrt(3) / 2, Rational(1, 2)]])


def cube_proof(*extra) -> Proof:
    """(A³ + I)W = (A³ + I)V, A positive definite: so W = V (by inverting A³ + I)."""
    C = add(power(A, 3), I)
    hyps = (predicate("A_pd", Q.positive_definite, A), *extra, Hypothesis("h", mul(C, W), mul(C, V)))
    steps = (Step(mul(I, W), "identity_mul"), Step(mul(inv(C), C, W), "inverse_cancel"),
             Step(mul(inv(C), C, V), "hyp:h"), Step(mul(I, V), "inverse_cancel"), Step(V, "identity_mul"))
    return Proof("cube", "t", "s", hyps, (), (), Chain("main", W, V, steps))


def test_a_rotation_by_60_degrees_is_positive_definite_and_its_cube_plus_one_is_singular():
    a, b = sympy.symbols("a b", real=True)
    v = sympy.Matrix([a, b])
    assert sympy.simplify((v.T * ROTATION_60 * v)[0, 0] - (a**2 + b**2) / 2) == 0  # xᵀAx = |x|²/2 > 0
    assert sympy.simplify(ROTATION_60**3 + sympy.eye(2)) == sympy.zeros(2, 2)
    assert sympy.simplify((v.T * ROTATION_60**2 * v)[0, 0] + (a**2 + b**2) / 2) == 0  # A² is not PD
    inverse = ROTATION_60.inv()  # but A⁻¹ is: xᵀA⁻¹x = yᵀAy for x = Ay
    assert sympy.simplify((v.T * inverse * v)[0, 0] - (a**2 + b**2) / 2) == 0


def test_a_power_of_a_positive_definite_matrix_is_not_taken_as_positive_definite(tmp_path):
    with pytest.raises(ProofError, match=r"cannot show that I \+ A\*\*3 is invertible"):
        check(cube_proof())
    refused_by_derive_check(tmp_path, cube_proof(), "cannot show that I + A**3 is invertible")
    check(cube_proof(predicate("A_sym", Q.symmetric, A)))  # true for a symmetric positive definite A


def test_powers_and_inverses_under_the_kernels_meaning():
    from derive.kernel.judgments import diagonal

    ctx = Context()
    ctx.predicates["positive_definite"].append(A)
    assert positive_definite(inv(A), ctx) and positive_definite(transpose(A), ctx)
    assert not positive_definite(power(A, 2), ctx) and not positive_definite(power(A, -2), ctx)
    assert not diagonal(A, ctx)
    ctx.predicates["symmetric"].append(A)
    assert positive_definite(power(A, 2), ctx) and positive_definite(power(A, -3), ctx)
    assert not positive_definite(power(A, Rational(1, 2)), ctx)  # not diagonal: no non-integer power
    ctx.predicates["diagonal"].append(A)
    assert positive_definite(power(A, Rational(1, 2)), ctx) and diagonal(power(A, Rational(-1, 2)), ctx)
    assert diagonal(add(A, mul(3, I)), ctx) and not diagonal(mul(MatrixSymbol("K", n, n), A), ctx)


def test_a_non_integer_power_needs_a_diagonal_base():
    root = power(A, Rational(1, 2))
    proof = Proof("root", "t", "s", (predicate("A_pd", Q.positive_definite, A),), (), (),
                  Chain("main", mul(root, root), A, (Step(A, "power_combine"),)))
    with pytest.raises(ProofError, match=r"cannot show that A is diagonal and positive definite, needed for the "
                                         r"non-integer power 1/2"):
        check(proof)
    check(dataclasses.replace(proof, hypotheses=(*proof.hypotheses, predicate("A_diag", Q.diagonal, A))))


@pytest.mark.parametrize("theorem, hypothesis", [("weighted_ls_is_attention", "W_diagonal"),
                                                 ("pseudo_inverse", "Lambda_r_diagonal")])
def test_a_library_theorem_without_its_diagonal_hypothesis_is_refused(theorem, hypothesis):
    proof = LIBRARY[theorem]()
    check(proof)
    kept = tuple(h for h in proof.hypotheses if h.name != hypothesis)
    assert len(kept) == len(proof.hypotheses) - 1
    with pytest.raises(ProofError, match="diagonal and positive definite"):
        check(dataclasses.replace(proof, hypotheses=kept))


# --- 13. derive check prints the recurrences and the signs of scalars ------------------------------------


def test_derive_check_prints_recurrences_and_signs_of_scalars(tmp_path):
    from derive import scalar

    lam, c = scalar("lam", positive=True), scalar("c", positive=False)
    E = MatrixSymbol("E", n, n)
    families = (Family("x", s, n, Integer(1)), Family("G", u, n, n, mul(lam, I), add(G(u), mul(c, E))))
    proof = Proof("printed", "Printed", "G_1 = lam I + c E", (), (), (),
                  Chain("main", G(Integer(1)), add(mul(lam, I), mul(c, E)),
                        (Step(add(G(Integer(0)), mul(c, E)), "step:G", ((u, Integer(0)),)),
                         Step(add(mul(lam, I), mul(c, E)), "base:G"))), (), families)
    theorem = check(proof)
    path = tmp_path / "printed.json"
    path.write_text(certificate_text(theorem))
    result = subprocess.run([sys.executable, "-m", "derive", "check", str(path)], capture_output=True, text=True,
                            timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert "    family  G[0] = lam·I" in lines, result.stdout  # the package's notation (issue 44)
    assert "    family  G[u + 1] = cE + G[u]" in lines, result.stdout
    assert "    family  x[s] (n×1): any sequence, for every s ≥ 0" in lines, result.stdout
    assert "    scalar  c (real, of unknown sign)" in lines and "    scalar  lam > 0" in lines, result.stdout
    assert lines.index("    family  G[0] = lam·I") < lines.index("    then    G[1] = cE + lam·I")


# --- 4'. the witness samples positive definite matrices under the same meaning ----------------------------


def _sampled(proof: Proof, name: str) -> list:
    from derive.witness import check_instances, sampler_for

    log: list = []
    sampler = sampler_for(proof)

    def recording(src, shape, chain):
        sample = sampler(src, shape, chain)
        log.append(sample)
        return sample

    check_instances(proof, trials=2, sampler=recording)
    return [sample.values[name].to_Matrix() for sample in log if name in sample.values]


def test_the_witness_draws_a_matrix_that_is_only_positive_definite_non_symmetric():
    W = MatrixSymbol("W", n, n)
    proof = Proof("pd_only", "t", "s", (predicate("A_pd", Q.positive_definite, A),), (), (),
                  Chain("main", W, W, ()))
    values = [a for a in _sampled(proof, "A") if a.shape[0] >= 2]
    assert values and all(a != a.T for a in values)  # not symmetric ...
    for a in values:  # ... yet xᵀAx > 0: the symmetric part is positive definite (its leading minors)
        part = a + a.T
        assert all(part[:k, :k].det() > 0 for k in range(1, a.shape[0] + 1))
    symmetric_too = dataclasses.replace(proof, hypotheses=(*proof.hypotheses, predicate("A_sym", Q.symmetric, A)))
    assert all(a == a.T for a in _sampled(symmetric_too, "A"))


def test_the_witness_refutes_a_step_that_takes_a_positive_definite_matrix_as_symmetric():
    from derive.witness import WitnessError, check_instances

    proof = Proof("pd_symmetric", "t", "s", (predicate("A_pd", Q.positive_definite, A),), (), (),
                  Chain("main", transpose(A), A, (Step(A, "transpose_symmetric"),)))
    with pytest.raises(ProofError, match="cannot show that A is symmetric|does not rewrite"):
        check(proof)  # the kernel refuses it ...
    with pytest.raises(WitnessError, match="differ"):
        check_instances(proof, trials=1)  # ... and so does the witness, on a non-symmetric sample


def test_the_softmax_normaliser_is_sampled_non_symmetric_and_its_theorem_still_checks():
    proof = LIBRARY["softmax_nadaraya_watson"]()
    values = [d for d in _sampled(proof, "D") if d.shape[0] >= 2]
    assert values and any(d != d.T for d in values)


def test_a_step_whose_normal_form_changes_its_shape_is_refused():
    """F[s+1] := I_n·I_1 (n×1 to SymPy, I_n in normal form) for a family of columns: refused by name."""
    column = Family("c", s, n, Integer(1), ZeroMatrix(n, 1), NOT_A_COLUMN)
    with pytest.raises(ProofError, match=r"family c's step \(in normal form\): the two sides have different shapes"):
        check(Proof("steps", "t", "s", (), (), (), Chain("main", I, I, ()), (), (column,)))


def test_a_long_acyclic_chain_of_definitions_and_recurrences_is_checked_without_deep_recursion():
    """D0 := F1[1], F1's step uses D1, D1 := F2[1], ...: a path 1,200 nodes deep through the graph."""
    count = 600
    symbols = [MatrixSymbol(f"D{i}", n, n) for i in range(count + 1)]
    families = tuple(Family(f"F{i}", u, n, n, ZeroMatrix(n, n), add(FamilyMatrix(f"F{i}", u, n, n), symbols[i]))
                     for i in range(1, count + 1))
    definitions = tuple(Definition(f"d{i}", symbols[i], FamilyMatrix(f"F{i + 1}", Integer(1), n, n))
                        for i in range(count)) + (Definition(f"d{count}", symbols[count], I),)
    check(Proof("chain", "t", "s", (), definitions, (), Chain("main", symbols[0], symbols[0], ()), (), families))
