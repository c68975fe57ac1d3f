"""The causal mask in the kernel (issues 41 and 42): ``derive.tril(A)`` = A ⊙ M, Mᵢⱼ = [j ≤ i], and the strictly
lower ``derive.tril(A, -1)``.

The identities of the six rules are checked on explicit matrices in ``tests/test_rules.py`` (CASES and the random
sweep).  Here: each rule's side condition refuses what it must (mutation: the rule with its condition dropped would
rewrite to a false identity, shown false on explicit matrices), the definedness of tril, the unit-lower-triangular
judgment, the validated certificate form, and a researcher's chunkwise statement end to end (proof, fresh check,
counterexample to a near-miss).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from sympy import Basic, Matrix, MatrixSymbol, Q, S, Symbol, sympify
from sympy.matrices.expressions import Identity, ZeroMatrix

from derive import ProofBuilder, ProofError, add, block, diag, dim, inv, mul, transpose, tril
from derive.kernel import AXIOMS, Chain, Hypothesis, Proof, check, check_defined, invertible, one_step, rewrites
from derive.kernel.judgments import unit_lower_triangular
from derive.kernel.terms import TermError, Tril, canon
from derive.kernel.validation import ValidationError
from derive.kernel.validation import term as validated_term

p, q = Symbol("p", integer=True, positive=True), Symbol("q", integer=True, positive=True)
A, B = MatrixSymbol("A", p, p), MatrixSymbol("B", p, p)
K, J, R = MatrixSymbol("K", p, q), MatrixSymbol("J", q, p), MatrixSymbol("R", q, q)
Rect = MatrixSymbol("Rect", p, q)
u = MatrixSymbol("u", p, 1)
n = Symbol("n", integer=True, positive=True)
N = MatrixSymbol("N", n, n)


def _ctx(*hypotheses):
    from derive.kernel import theorem_context

    proof = Proof("t", "t", "t", tuple(hypotheses), (), (), Chain("main", Identity(2), Identity(2), ()))
    return theorem_context(proof)


def _results(term, rule, ctx=None):
    ctx = ctx or _ctx()
    return [r for _, r in rewrites(canon(term), AXIOMS[rule], ctx)]


def _masked(full: Matrix, offset: int) -> Matrix:
    return Matrix(full.rows, full.cols, lambda i, j: full[i, j] if j <= i + offset else 0)


# --- definedness and the validated form ----------------------------------------------------


def test_tril_of_a_non_square_matrix_is_not_defined():
    with pytest.raises(TermError, match="tril takes a square matrix"):
        check_defined(Tril(Rect), _ctx())
    check_defined(Tril(mul(Rect, transpose(Rect)), -1), _ctx())  # square: defined


def test_tril_offset_is_zero_or_minus_one_only():
    for bad in (1, -2, 0.0, True, "0"):
        with pytest.raises(TermError):
            tril(A, bad)
    with pytest.raises(TermError):
        tril("A")


def test_validation_rebuilds_tril_and_refuses_other_offsets():
    assert validated_term(Tril(A, -1)) == Tril(A, -1)
    assert validated_term(Tril(A)) == Tril(A)
    for offset in (1, S.Half, -2):
        with pytest.raises(TermError):
            Tril(A, offset)
        forged = Basic.__new__(Tril, A, sympify(offset))  # past the constructor, as a hostile object would be
        with pytest.raises(ValidationError, match="offset"):
            validated_term(forged)
    with pytest.raises(ValidationError):
        validated_term(Basic.__new__(Tril, A))


# --- side conditions: each refusal is a false identity avoided ------------------------------------


def test_tril_block_refuses_a_grid_whose_diagonal_blocks_are_not_square():
    ctx = _ctx()
    assert _results(Tril(block([[A, K], [J, R]])), "tril_block", ctx)
    # (p + q)×(q + p) is square, so tril is defined, but the diagonal blocks X1 (p×q) and X4 (q×p) are not
    skew = block([[MatrixSymbol("X1", p, q), MatrixSymbol("X2", p, p)],
                  [MatrixSymbol("X3", q, q), MatrixSymbol("X4", q, p)]])
    check_defined(Tril(skew), ctx)
    assert not _results(Tril(skew), "tril_block", ctx)
    # what the dropped condition would give is false: at p = 1, q = 2 the blockwise form keeps the entry (0, 1) of
    # X1 (its "diagonal" block's own lower part) and zeroes X3's entry (1, 2)... against the real mask
    full = Matrix(3, 3, lambda i, j: 10 * i + j + 1)
    x1, x2, x3, x4 = full[0:1, 0:2], full[0:1, 2:3], full[1:3, 0:2], full[1:3, 2:3]
    blockwise = Matrix.vstack(Matrix.hstack(_masked_rect(x1), Matrix.zeros(1, 1)),
                              Matrix.hstack(x3, _masked_rect(x4)))
    assert x2.shape == (1, 1)
    assert blockwise != _masked(full, 0)


def _masked_rect(m: Matrix) -> Matrix:
    return Matrix(m.rows, m.cols, lambda i, j: m[i, j] if j <= i else 0)


def test_tril_block_sends_blocks_above_to_zero_and_keeps_those_below():
    (result,) = _results(Tril(block([[A, K], [J, R]]), -1), "tril_block")
    assert result == canon(block([[Tril(A, -1), ZeroMatrix(p, q)], [J, Tril(R, -1)]]))
    mutated = canon(block([[Tril(A, -1), K], [ZeroMatrix(q, p), Tril(R, -1)]]))  # the upper triangle kept instead
    assert not one_step(canon(Tril(block([[A, K], [J, R]]), -1)), mutated, AXIOMS["tril_block"], _ctx())


def test_tril_scalar_needs_a_literal_one_by_one():
    assert _results(Tril(MatrixSymbol("s", 1, 1), -1), "tril_scalar") == [ZeroMatrix(1, 1)]
    assert not _results(Tril(N), "tril_scalar")  # n×n: n might be 1, but need not be
    assert not one_step(canon(Tril(MatrixSymbol("s", 1, 1), -1)), MatrixSymbol("s", 1, 1), AXIOMS["tril_scalar"],
                        _ctx())  # the strict mask of a 1×1 is 0, not the entry


def test_tril_diagonal_refuses_a_symmetric_or_general_matrix():
    Sy = MatrixSymbol("Sy", p, p)
    ctx = _ctx(Hypothesis("sym", Q.symmetric(Sy), S.true))
    assert not _results(Tril(Sy), "tril_diagonal", ctx)
    assert not _results(Tril(A, -1), "tril_diagonal", ctx)
    assert _results(Tril(diag(u), -1), "tril_diagonal", ctx) == [ZeroMatrix(p, p)]
    # and a symmetric matrix's strict mask is not zero
    assert _masked(Matrix([[1, 2], [2, 1]]), -1) != Matrix.zeros(2, 2)


def test_tril_diag_scale_takes_out_only_a_diagonal_factor():
    assert _results(Tril(mul(diag(u), A)), "tril_diag_scale") == [canon(mul(diag(u), Tril(A)))]
    assert not _results(Tril(mul(B, A)), "tril_diag_scale")  # B is not diagonal: tril(BA) ≠ B tril(A)
    a, b = Matrix([[1, 2], [3, 4]]), Matrix([[1, 1], [0, 1]])
    assert _masked(b * a, 0) != b * _masked(a, 0)


def test_tril_scale_and_sum_are_entrywise():
    lam = Symbol("lam", real=True)
    assert _results(Tril(mul(lam, A, B)), "tril_scale") == [canon(mul(lam, Tril(mul(A, B))))]
    assert not _results(Tril(mul(A, B)), "tril_scale")  # nothing to take out
    (summed,) = _results(Tril(add(A, B), -1), "tril_sum")
    assert summed == canon(add(Tril(A, -1), Tril(B, -1)))


# --- the unit-lower-triangular judgment ----------------------------------------------------------


def test_unit_lower_triangular_is_invertible():
    beta = Symbol("beta", real=True)
    ctx = _ctx()
    term = canon(add(Identity(p), mul(beta, diag(u), Tril(mul(A, transpose(A)), -1))))
    assert unit_lower_triangular(term) and invertible(term, ctx)
    check_defined(inv(term), ctx)
    two = canon(add(Identity(p), Tril(A, -1), mul(-2, Tril(B, -1), diag(u))))
    assert invertible(two, ctx)


@pytest.mark.parametrize("term", [
    add(Identity(p), Tril(A)),  # the diagonal kept: 1 + a could be 0
    add(Identity(p), Tril(A, -1), Identity(p)),  # 2I + L: still invertible, but not the shape the judgment reads
    add(Identity(p), mul(Tril(A, -1), B)),  # L B is not strictly lower
    add(Identity(p), mul(Tril(A, -1), Tril(B, -1))),  # two strict factors: not the judgment's form
    add(Identity(p), A),
], ids=["diagonal_kept", "two_identities", "times_general", "two_strict", "general"])
def test_unit_lower_triangular_refuses_other_sums(term):
    assert not unit_lower_triangular(canon(term))


def test_the_refused_non_strict_sum_can_be_singular():
    a = Matrix([[-1, 0], [5, 2]])
    assert (Matrix.eye(2) + _masked(a, 0)).det() == 0  # I + tril(A) singular: the judgment must not accept it
    assert (Matrix.eye(2) + _masked(a, -1)).det() == 1  # I + tril(A, -1): determinant 1 for every A


# --- a researcher's statement end to end -----------------------------------------------------------


def _chunk(second_mask: int = 0) -> Proof:
    c, C, d, e = dim("c"), dim("C"), dim("d"), dim("e")
    Qa, Qb = MatrixSymbol("Q_a", c, d), MatrixSymbol("Q_b", C, d)
    Ka, Kb = MatrixSymbol("K_a", c, d), MatrixSymbol("K_b", C, d)
    Va, Vb = MatrixSymbol("V_a", c, e), MatrixSymbol("V_b", C, e)
    Qm, Km, Vm = block([[Qa], [Qb]]), block([[Ka], [Kb]]), block([[Va], [Vb]])
    lhs = mul(tril(mul(Qm, transpose(Km))), Vm)
    rhs = block([[mul(tril(mul(Qa, transpose(Ka))), Va)],
                 [add(mul(Qb, transpose(Ka), Va), mul(tril(mul(Qb, transpose(Kb)), second_mask), Vb))]])
    b = ProofBuilder("chunk", "Chunkwise causal linear attention",
                     "The causal outputs of a chunk are its queries on the carried state plus its own masked part.")
    b.main(lhs).auto(rhs)
    return b.proof()


def test_chunkwise_statement_proves_and_checks_in_a_fresh_process(tmp_path):
    from derive.certificates import certificate_text

    proof = _chunk()
    theorem = check(proof)
    assert theorem.proof.theorem == "chunk"
    path = tmp_path / "chunk.json"
    path.write_text(certificate_text(theorem))
    out = subprocess.run([sys.executable, "-m", "derive", "check", str(path)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    data = json.loads(path.read_text())
    assert "Tril(" in json.dumps(data)


def test_a_wrong_mask_gets_a_confirmed_counterexample():
    with pytest.raises(ProofError) as caught:
        _chunk(second_mask=-1)
    found = caught.value.counterexample
    assert found is not None and "FALSE" in str(caught.value)
    values = found.values
    assert any(getattr(k, "name", "") == "V_b" for k in values)
