"""The Schur-complement inverse of a 2×2 block matrix (issue 29): rules, judgment, mutants, round trip, LaTeX.

``block_inverse_schur`` rewrites [[A, B], [C, D]]⁻¹ by the complement S = D − C A⁻¹ B of A (A, S invertible);
``block_inverse_schur_mirror`` by T = A − B D⁻¹ C of D (D, T invertible).  The invertibility judgment of a 2×2
block matrix follows the same determinant identity.  Each is checked on explicit rational matrices, and every
proof whose side condition is dropped or altered must be refused by ``check``.
"""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sympy import Matrix, Q, Rational, S, Symbol, eye, zeros
from sympy.matrices.expressions import (
    BlockMatrix,
    Identity,
    Inverse,
    MatAdd,
    MatMul,
    MatrixSymbol,
    Transpose,
    ZeroMatrix,
)

from derive.authoring import checked, load_library
from derive.certificates import certificate_text
from derive.kernel import AXIOMS, Chain, Hypothesis, Proof, ProofError, Step, check, invertible, theorem_context
from derive.kernel.terms import add, block, blocks_of, canon, factors_of, inv, mul, transpose

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"

p, q = Symbol("p", integer=True, positive=True), Symbol("q", integer=True, positive=True)
A, B = MatrixSymbol("A", p, p), MatrixSymbol("B", p, q)
C, D = MatrixSymbol("C", q, p), MatrixSymbol("D", q, q)
GRID = block([[A, B], [C, D]])
SCHUR = add(D, mul(-1, C, inv(A), B))  # S = D − C A⁻¹ B
MIRROR = add(A, mul(-1, B, inv(D), C))  # T = A − B D⁻¹ C


def pred(name: str, predicate, matrix) -> Hypothesis:
    return Hypothesis(name, predicate(matrix), S.true)


A_INV, S_INV = pred("A_inv", Q.invertible, A), pred("S_inv", Q.invertible, SCHUR)
D_INV, T_INV = pred("D_inv", Q.invertible, D), pred("T_inv", Q.invertible, MIRROR)


def schur_form(a, b, c, s):
    ai, si = inv(a), inv(s)
    return block([[add(ai, mul(ai, b, si, c, ai)), mul(-1, ai, b, si)], [mul(-1, si, c, ai), si]])


def mirror_form(b, c, d, t):
    di, ti = inv(d), inv(t)
    return block([[ti, mul(-1, ti, b, di)], [mul(-1, di, c, ti), add(di, mul(di, c, ti, b, di))]])


SCHUR_RESULT = schur_form(A, B, C, SCHUR)
MIRROR_RESULT = mirror_form(B, C, D, MIRROR)


def one_step(rule: str, lhs, rhs, hypotheses, theorem: str = "schur_step") -> Proof:
    return Proof(theorem, "t", "s", tuple(hypotheses), (), (), Chain("main", lhs, rhs, (Step(rhs, rule),)))


def refused(proof: Proof) -> bool:
    try:
        check(proof)
    except ProofError:
        return True
    return False


# --- an exact evaluator for the terms of this file ------------------------------------------------------


def evaluate(term, env: dict, dims: dict) -> Matrix:
    """The explicit rational matrix ``term`` denotes (symbols valued by ``env``, dimensions by ``dims``)."""
    def size(d) -> int:
        return int(d.subs(dims)) if hasattr(d, "subs") else int(d)

    if isinstance(term, MatrixSymbol):
        return env[term.name]
    if isinstance(term, Identity):
        return eye(size(term.shape[0]))
    if isinstance(term, ZeroMatrix):
        return zeros(size(term.shape[0]), size(term.shape[1]))
    if isinstance(term, Transpose):
        return evaluate(term.args[0], env, dims).T
    if isinstance(term, Inverse):
        return evaluate(term.args[0], env, dims).inv()
    if isinstance(term, MatMul):
        coeff, mats = factors_of(term)
        out = evaluate(mats[0], env, dims)
        for m in mats[1:]:
            out = out * evaluate(m, env, dims)
        return Rational(coeff) * out
    if isinstance(term, MatAdd):
        parts = [evaluate(a, env, dims) for a in term.args]
        return sum(parts[1:], parts[0])
    if isinstance(term, BlockMatrix):
        return Matrix.vstack(*[Matrix.hstack(*[evaluate(b, env, dims) for b in row]) for row in blocks_of(term)])
    raise TypeError(type(term).__name__)


def random_matrix(rng: random.Random, rows: int, cols: int) -> Matrix:
    return Matrix(rows, cols, lambda i, j: Rational(rng.randint(-9, 9), rng.randint(1, 4)))


def random_instance(rng: random.Random, p_: int, q_: int) -> dict:
    """Random rational blocks with A, D, S and T invertible (redrawn until they are)."""
    while True:
        env = {"A": random_matrix(rng, p_, p_), "B": random_matrix(rng, p_, q_), "C": random_matrix(rng, q_, p_),
               "D": random_matrix(rng, q_, q_)}
        if env["A"].det() != 0 and env["D"].det() != 0:
            s = env["D"] - env["C"] * env["A"].inv() * env["B"]
            t = env["A"] - env["B"] * env["D"].inv() * env["C"]
            if s.det() != 0 and t.det() != 0:
                return env


def rewrites_to(rule: str, term, hypotheses) -> list:
    from derive.kernel import rewrites

    ctx = theorem_context(Proof("ctx", "t", "s", tuple(hypotheses), (), (), Chain("main", Identity(1), Identity(1),
                                                                                   ())))
    return [r for _, r in rewrites(canon(term), AXIOMS[rule], ctx)], ctx


# --- the rules on explicit matrices --------------------------------------------------------------------


@pytest.mark.parametrize("rule, hypotheses, expected", [
    ("block_inverse_schur", (A_INV, S_INV), SCHUR_RESULT),
    ("block_inverse_schur_mirror", (D_INV, T_INV), MIRROR_RESULT),
])
def test_the_rule_gives_the_inverse_on_random_rational_matrices(rule, hypotheses, expected):
    results, ctx = rewrites_to(rule, inv(GRID), hypotheses)
    assert results == [canon(expected)]
    rng = random.Random(29)
    for p_, q_ in ((1, 1), (2, 1), (1, 3), (2, 3), (3, 2)):
        for _ in range(3):
            env = random_instance(rng, p_, q_)
            dims = {p: p_, q: q_}
            grid = evaluate(GRID, env, dims)
            got = evaluate(results[0], env, dims)
            assert got == grid.inv() and got * grid == eye(p_ + q_)


def test_the_rule_would_be_wrong_with_a_wrong_complement():
    """The oracle of these tests can fail: the formula with S = D − B A⁻¹ C (p = q) is not the inverse."""
    b2, c2 = MatrixSymbol("B", p, p), MatrixSymbol("C", p, p)
    wrong = schur_form(A, b2, c2, add(MatrixSymbol("D", p, p), mul(-1, b2, inv(A), c2)))
    env = random_instance(random.Random(1), 2, 2)
    grid = evaluate(block([[A, b2], [c2, MatrixSymbol("D", p, p)]]), env, {p: 2})
    assert evaluate(wrong, env, {p: 2}) != grid.inv()


def test_the_judgment_shows_a_block_matrix_invertible_by_either_complement():
    for hypotheses in ((A_INV, S_INV), (D_INV, T_INV)):
        _, ctx = rewrites_to("block_inverse_schur", GRID, hypotheses)
        assert invertible(GRID, ctx)
    # (S invertible cannot be stated without A invertible: S holds A⁻¹; likewise T and D)
    for hypotheses in ((A_INV,), (D_INV,), (A_INV, D_INV), ()):
        _, ctx = rewrites_to("block_inverse_schur", GRID, hypotheses)
        assert not invertible(GRID, ctx), hypotheses
    # a complement that is singular by its form: [[A, v], [wᵀ, wᵀA⁻¹v]] has S = wᵀA⁻¹v − wᵀA⁻¹v = 0
    v, w = MatrixSymbol("v", p, 1), MatrixSymbol("w", p, 1)
    singular = block([[A, v], [transpose(w), mul(transpose(w), inv(A), v)]])
    _, ctx = rewrites_to("block_inverse_schur", singular, (A_INV,))
    assert not invertible(singular, ctx)
    env = {"A": eye(2) * 2, "v": Matrix([1, 2]), "w": Matrix([3, -1])}
    assert evaluate(singular, env, {p: 2}).det() == 0  # it really is singular


# --- proofs: the rules checked, and every mutant refused ----------------------------------------------------


def test_one_step_proofs_check_in_both_directions():
    for rule, hypotheses, result in (("block_inverse_schur", (A_INV, S_INV), SCHUR_RESULT),
                                     ("block_inverse_schur_mirror", (D_INV, T_INV), MIRROR_RESULT)):
        assert check(one_step(rule, inv(GRID), result, hypotheses)).steps == 1
        assert check(one_step(rule, result, inv(GRID), hypotheses)).steps == 1  # read right to left


def test_dropping_a_side_condition_is_refused():
    for rule, result, hypotheses in (("block_inverse_schur", SCHUR_RESULT, (A_INV, S_INV)),
                                     ("block_inverse_schur_mirror", MIRROR_RESULT, (D_INV, T_INV))):
        for kept in ((), hypotheses[:1], hypotheses[1:]):  # the last: the complement's hypothesis is undefined
            assert refused(one_step(rule, inv(GRID), result, kept)), (rule, kept)
        # the pivot invertible, the whole matrix invertible by hypothesis, the complement not shown invertible
        kept = (hypotheses[0], pred("grid_inv", Q.invertible, GRID))
        assert refused(one_step(rule, inv(GRID), result, kept)), (rule, kept)
    # the invertibility of the whole matrix by hypothesis is not enough: the rule itself demands A and S
    whole = pred("grid_inv", Q.invertible, GRID)
    assert refused(one_step("block_inverse_schur", inv(GRID), SCHUR_RESULT, (whole, S_INV)))
    assert refused(one_step("block_inverse_schur_mirror", inv(GRID), MIRROR_RESULT, (whole, T_INV)))
    # the other rule's side conditions do not justify this rule
    assert refused(one_step("block_inverse_schur", inv(GRID), SCHUR_RESULT, (D_INV, T_INV, A_INV)))
    assert refused(one_step("block_inverse_schur_mirror", inv(GRID), MIRROR_RESULT, (A_INV, S_INV, D_INV)))


def test_a_wrong_complement_is_refused():
    """S = D − B A⁻¹ C (blocks all p × p, so that it is defined), D + C A⁻¹ B, C A⁻¹ B − D: hypotheses about a
    wrong complement never justify the step, and a step to the formula with a wrong complement is refused."""
    b2, c2, d2 = MatrixSymbol("B", p, p), MatrixSymbol("C", p, p), MatrixSymbol("D", p, p)
    grid = block([[A, b2], [c2, d2]])
    right = add(d2, mul(-1, c2, inv(A), b2))
    for wrong in (add(d2, mul(-1, b2, inv(A), c2)), add(d2, mul(c2, inv(A), b2)), add(mul(c2, inv(A), b2),
                                                                                       mul(-1, d2))):
        hyps = (A_INV, pred("S_inv", Q.invertible, wrong))
        assert refused(one_step("block_inverse_schur", inv(grid), schur_form(A, b2, c2, wrong), hyps))
        assert refused(one_step("block_inverse_schur", inv(grid), schur_form(A, b2, c2, right), hyps))
        # with the right complement invertible too, the formula with the wrong one is still not what the rule gives
        both = (*hyps, pred("S_right", Q.invertible, right))
        assert refused(one_step("block_inverse_schur", inv(grid), schur_form(A, b2, c2, wrong), both))
        assert not refused(one_step("block_inverse_schur", inv(grid), schur_form(A, b2, c2, right), both))


def test_a_wrong_result_is_refused():
    ai, si = inv(A), inv(SCHUR)
    wrong_results = [
        block([[add(ai, mul(ai, B, si, C, ai)), mul(ai, B, si)], [mul(-1, si, C, ai), si]]),  # a sign dropped
        block([[ai, mul(-1, ai, B, si)], [mul(-1, si, C, ai), si]]),  # the correction term dropped
        block([[add(ai, mul(ai, B, si, C, ai)), mul(-1, ai, B, si)], [mul(-1, si, C, ai), add(si, mul(si, C, ai,
                                                                                                   B, si))]]),
        block([[add(ai, mul(ai, B, si, C, ai)), mul(-1, ai, B, si)], [mul(-1, si, C, ai), inv(D)]]),
        MIRROR_RESULT,  # the mirror's formula, justified by the wrong rule
    ]
    hyps = (A_INV, S_INV, D_INV, T_INV)
    for wrong in wrong_results:
        assert refused(one_step("block_inverse_schur", inv(GRID), wrong, hyps)), wrong


def test_non_square_pivots_three_by_three_grids_and_wrong_partitions_are_refused():
    # A p × q (not square): the grid [[A, B], [C, D]] is (p + q) × (p + q) but A⁻¹ means nothing
    a, b, c, d = MatrixSymbol("A", p, q), MatrixSymbol("B", p, p), MatrixSymbol("C", q, q), MatrixSymbol("D", q, p)
    grid = block([[a, b], [c, d]])
    hyps = (pred("grid_inv", Q.invertible, grid),)
    results, ctx = rewrites_to("block_inverse_schur", inv(grid), hyps)
    assert results == [] and rewrites_to("block_inverse_schur_mirror", inv(grid), hyps)[0] == []
    # a 3 × 3 grid of invertible blocks is not a 2 × 2 one
    m = [[MatrixSymbol(f"M{i}{j}", p, p) for j in range(3)] for i in range(3)]
    grid3 = block(m)
    hyps3 = tuple(pred(f"M{i}{i}_inv", Q.invertible, m[i][i]) for i in range(3)) + (pred("g", Q.invertible, grid3),)
    assert rewrites_to("block_inverse_schur", inv(grid3), hyps3)[0] == []
    assert rewrites_to("block_inverse_schur_mirror", inv(grid3), hyps3)[0] == []
    # the result written for the other partition ((q | p) instead of (p | q)) is refused, and so is a grid whose
    # block rows do not conform
    swapped = block([[D, C], [B, A]])
    assert refused(one_step("block_inverse_schur", inv(GRID), schur_form(D, C, B, add(A, mul(-1, B, inv(D), C))),
                            (A_INV, S_INV, D_INV, T_INV)))
    assert refused(one_step("block_inverse_schur", inv(swapped), SCHUR_RESULT, (A_INV, S_INV, D_INV, T_INV)))
    bad = block([[A, MatrixSymbol("B2", q, q)], [C, D]])  # B2 has q rows where A has p
    assert refused(one_step("block_inverse_schur", inv(bad), SCHUR_RESULT, (A_INV, S_INV)))


def test_a_block_diagonal_matrix_is_no_special_case():
    """With zero off-diagonal blocks the Schur form is the block-diagonal inverse, after the zeros are dropped."""
    zb, zc = ZeroMatrix(p, q), ZeroMatrix(q, p)
    grid = block([[A, zb], [zc, D]])
    s = add(D, mul(-1, zc, inv(A), zb))
    proof = one_step("block_inverse_schur", inv(grid), schur_form(A, zb, zc, s), (A_INV, D_INV))
    assert refused(proof)  # S = D − 0 A⁻¹ 0 is not shown invertible by D alone (the kernel has no such rule)
    proof = one_step("block_inverse_schur", inv(grid), schur_form(A, zb, zc, s),
                     (A_INV, pred("s", Q.invertible, s)))
    assert check(proof).steps == 1


# --- the demonstration: partitioned regression ----------------------------------------------------------------


@pytest.fixture(scope="module")
def partitioned():  # unregistered after this module (tests/conftest.py)
    return [checked(theorem_id) for theorem_id in load_library(str(DATA / "user_partitioned.py"))]


def test_partitioned_regression_is_checked_and_uses_the_schur_rule(partitioned):
    (theorem,) = partitioned
    rules = [s.rule for c in (*theorem.proof.lemmas, theorem.proof.claim) for s in c.steps]
    assert "block_inverse_schur" in rules
    # dropping either hypothesis leaves (XᵀX)⁻¹ undefined
    for name in ("gram1_invertible", "schur_invertible"):
        kept = tuple(h for h in theorem.proof.hypotheses if h.name != name)
        assert refused(dataclasses.replace(theorem.proof, hypotheses=kept)), name


def test_partitioned_regression_holds_on_numbers(partitioned):
    """β̂ = (XᵀX)⁻¹XᵀY computed on random data: its last q entries are (X₂ᵀM₁X₂)⁻¹X₂ᵀM₁Y."""
    rng = random.Random(5)
    n_, p_, q_ = 7, 2, 3
    x1, x2, y = random_matrix(rng, n_, p_), random_matrix(rng, n_, q_), random_matrix(rng, n_, 1)
    x = Matrix.hstack(x1, x2)
    beta = (x.T * x).inv() * x.T * y
    m1 = eye(n_) - x1 * (x1.T * x1).inv() * x1.T
    assert beta[p_:, :] == (x2.T * m1 * x2).inv() * x2.T * m1 * y


def test_certificates_pass_derive_check_in_a_fresh_process(partitioned, tmp_path):
    theorems = list(partitioned)
    theorems += [check(one_step("block_inverse_schur", inv(GRID), SCHUR_RESULT, (A_INV, S_INV), "schur_rule")),
                 check(one_step("block_inverse_schur_mirror", MIRROR_RESULT, inv(GRID), (D_INV, T_INV),
                                "schur_mirror_rule"))]
    paths = []
    for theorem in theorems:
        path = tmp_path / f"{theorem.id}.json"
        path.write_text(certificate_text(theorem))
        paths.append(str(path))
    result = subprocess.run([sys.executable, "-m", "derive", "check", "--time-limit", "120", *paths], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    verified = [line for line in result.stdout.splitlines() if ": verified " in line]
    assert result.returncode == 0 and len(verified) == len(theorems), result.stdout + result.stderr[-2000:]
    # the same certificate without the hypothesis "S invertible" (and without its digest) is rejected there
    data = json.loads((tmp_path / "schur_rule.json").read_text())
    data["hypotheses"] = [h for h in data["hypotheses"] if h["name"] != "S_inv"]
    del data["sha256"]
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(data))
    result = subprocess.run([sys.executable, "-m", "derive", "check", str(broken)], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode != 0 and "REJECTED" in result.stdout, result.stdout + result.stderr[-2000:]


def test_latex_of_a_proof_using_the_rule(partitioned):
    from derive.latex import theorem_latex

    text = theorem_latex(partitioned[0])
    assert "block inverse by the Schur complement" in text
    assert r"\begin{bmatrix}" in text


# --- the soundness fuzzer ---------------------------------------------------------------------------------------


# the slow tier: the default fuzzer run (tests/test_fuzz.py) focuses one proof in four on a rare area, Schur among
# them, and its coverage test asserts that both Schur rules are reached; this run focuses every proof on Schur
@pytest.mark.slow
@pytest.mark.parametrize("proofs", [pytest.param(6, id="6")])
def test_the_fuzzer_writes_schur_steps_and_refutes_nothing_on_this_kernel(proofs):
    """Focused on the Schur rules, the generator uses both (and inverts [[A, v], [−vᵀ, λI₁]]); the oracle refutes
    none of what the kernel accepts.  With the complement's check removed the fuzzer finds the hole
    (tests/test_fuzz.py::test_the_fuzzer_finds_the_hole_when_it_is_put_back[schur])."""
    from derive.fuzz import run
    from derive.fuzz.generate import Skip, generate

    rules = []
    for k in range(40):
        try:
            proof = generate(random.Random(f"schur9:{k}"), f"s{k}", frozenset({"schur"})).proof  # both by k = 18
        except Skip:
            continue
        rules += [s.rule for c in (*proof.lemmas, proof.claim) for s in getattr(c, "steps", ())]
        if {"block_inverse_schur", "block_inverse_schur_mirror"} <= set(rules):
            break
    assert {"block_inverse_schur", "block_inverse_schur_mirror"} <= set(rules)
    report = run(1, proofs, mutants=2, samples=2, focus={"schur"})  # a focused proof costs about 1.5 s
    assert report.accepted >= 0.6 * proofs and not report.crashes
    assert not report.findings, report.summary()


# --- Coq: the rules and the judgment exported to MathComp (OlsPrelude.v, Section Schur) ---------------------------

needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is installed by .ci/run")


def _rule_theorems():
    return [check(one_step("block_inverse_schur", inv(GRID), SCHUR_RESULT, (A_INV, S_INV), "schur_rule")),
            check(one_step("block_inverse_schur_mirror", MIRROR_RESULT, inv(GRID), (D_INV, T_INV),
                           "schur_mirror_rule"))]


@needs_coq
def test_coq_accepts_the_schur_rules_and_partitioned_regression(partitioned, tmp_path):
    from derive.export.coq import compile_export, export_certificates, write_export

    certificates = [json.loads(certificate_text(t)) for t in [*_rule_theorems(), *partitioned]]
    export = export_certificates(certificates)
    assert not export.skipped and len(export.exported) == 3
    text = export.files["partitioned_regression.v"]
    assert "inverse_block_schur" in text and "unit_block_schur" in text  # the rule, and (XᵀX)⁻¹ in _defined
    write_export(export, tmp_path)
    assert compile_export(tmp_path, list(export.exported)) == {name: "ok" for name in export.exported}


@needs_coq
def test_coq_rejects_a_schur_step_without_its_side_condition(tmp_path, capsys):
    """Exported without the kernel's check (--unchecked), a certificate whose complement is not assumed invertible
    (the hypothesis dropped) is refused by Coq itself: the prelude's lemma needs the `unitmx` fact."""
    from derive.cli import main

    data = json.loads(certificate_text(_rule_theorems()[0]))
    data["hypotheses"] = [h for h in data["hypotheses"] if h["name"] != "S_inv"]
    del data["sha256"]
    cert = tmp_path / "bad.json"
    cert.write_text(json.dumps(data))
    status = main(["export", "coq", "--unchecked", str(cert), "--out", str(tmp_path / "out"), "--compile"])
    out = capsys.readouterr().out
    assert f"{'schur_rule':30} exported" in out, out  # the export wrote it: the rejection is Coq's
    assert status == 1 and f"{'schur_rule':30} coqc: accepted" not in out, out


# --- the reverse direction in the builder; the work budget ---------------------------------------------------------


def test_the_builder_steps_right_to_left_with_to():
    from derive import ProofBuilder

    b = ProofBuilder("schur_backwards", "t", "s", [A_INV, S_INV])
    b.main(SCHUR_RESULT).to(inv(GRID), "block_inverse_schur").qed()
    theorem = check(b.proof())
    assert [s.rule for s in theorem.proof.claim.steps] == ["block_inverse_schur"]


def test_the_schur_judgment_is_charged_to_the_work_budget():
    """Nested grids [[M, B], [C, M]]: each level's judgment forms complements; the work counts, and a budget below
    it refuses the check at the same point every time."""
    from derive.kernel.budget import last_used

    grid, size = A, p
    for k in range(4):
        grid = block([[grid, MatrixSymbol(f"B{k}", size, size)], [MatrixSymbol(f"C{k}", size, size), grid]])
        size = 2 * size
    proof = Proof("nested", "t", "s", (A_INV,), (), (),
                  Chain("main", mul(inv(grid), grid), Identity(size), (Step(Identity(size), "inverse_cancel"),)))
    with pytest.raises(ProofError, match="invertible"):  # no complement is shown invertible
        check(proof)
    used = last_used()
    assert used > 1000
    with pytest.raises(ProofError, match="work budget"):
        check(proof, work_limit=used // 2)
