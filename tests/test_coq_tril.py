"""Issue 41 item 5 for the causal mask (issue 42): every theorem of a user file with tril(A, k) that the kernel accepts
is exported and accepted by coqc (``tests/data/user_tril.py``: chunkwise causal attention by ``tril_block``, strict
masks, 1×1 scores, sums, scalings, a diagonal, decays diag(g) through the mask, DeltaNet's unit lower triangular
I + β·tril(KKᵀ, -1) inverted), or is refused with the construct that is not modelled named; the prelude's mask is
NumPy's ``tril`` entry by entry; and a forged tril step or a non-strict "unit lower triangular" inverse, exported
unchecked, is rejected by coqc.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from derive.cli import main
from derive.export.coq import (
    JUDGMENT_TRANSLATIONS,
    PRELUDE,
    RULE_TRANSLATIONS,
    RULES_NOT_MODELLED,
    compile_export,
    export_certificates,
    write_export,
)

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "tests" / "data" / "user_tril.py"
needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is installed by .ci/run")
ACCEPTED = "coqc: accepted, closed under the global context"
TRIL_RULES = ["tril_block", "tril_scalar", "tril_sum", "tril_scale", "tril_diagonal", "tril_diag_scale"]

#: the theorems of tests/data/user_tril.py, in the file's order
TRIL_THEOREMS = [
    "tril_chunkwise_attention", "tril_chunkwise_strict", "tril_one_score", "tril_one_score_strict",
    "tril_sum_and_scale", "tril_strict_sum", "tril_strict_drops_diagonal", "tril_blocks_reassembled",
    "tril_decayed_scores", "tril_decayed_scaled_strict", "tril_unit_lower_inverse", "tril_unit_lower_defined",
    "tril_unit_lower_three_terms", "tril_unit_lower_row_scaled",
]


def _export(tmp_path: Path, library: Path, *extra: str) -> list[str]:
    return ["export", "coq", "--library", str(library), "--record", str(tmp_path / "record"),
            "--out", str(tmp_path / "out"), *extra]


def test_every_tril_rule_and_the_unit_lower_judgment_have_a_coq_translation():
    from derive.export.coq import _ident
    from derive.kernel.axioms import AXIOMS

    assert set(TRIL_RULES) == {rule for rule in AXIOMS if rule.startswith("tril_")}
    assert set(TRIL_RULES) <= set(RULE_TRANSLATIONS)
    assert not set(TRIL_RULES) & set(RULES_NOT_MODELLED)
    assert JUDGMENT_TRANSLATIONS["unit_lower_triangular"] == "_unit_lower"
    for name in ("trilk", "tril_mx", "stril_mx", "strict_lower", "unit_lower"):  # a user's symbol never shadows them
        assert _ident(name) == f"m_{name}"


def test_every_theorem_of_the_tril_file_is_exported(tmp_path, capsys):
    status = main(_export(tmp_path, LIBRARY))
    out = capsys.readouterr().out
    assert status == 0 and "not exported" not in out, out
    exported = [line.split()[0] for line in out.splitlines() if line.endswith(" exported")]
    assert exported == TRIL_THEOREMS, out
    files = {p.name: p.read_text() for p in (tmp_path / "out").glob("*.v")}
    assert set(files) == {f"{PRELUDE}.v", *(f"{tid}.v" for tid in TRIL_THEOREMS)}
    chunkwise = files["tril_chunkwise_attention.v"]
    assert ("Theorem tril_chunkwise_attention : (tril_mx ((col_mx Q_a Q_b) *m (col_mx K_a K_b)^T)) *m "
            "(col_mx V_a V_b) = col_mx ((tril_mx (Q_a *m K_a^T)) *m V_a) (Q_b *m K_a^T *m V_a + "
            "(tril_mx (Q_b *m K_b^T)) *m V_b).") in chunkwise
    assert "by rewrite trilk_block" in chunkwise
    assert "stril_mx (Q_a *m K_a^T)" in files["tril_chunkwise_strict.v"]  # tril(·, -1)
    assert "by rewrite !trilk_add" in files["tril_sum_and_scale.v"]
    assert "?trilk_diag_mul ?mulmxA ?trilk_mul_diag" in files["tril_decayed_scores.v"]
    inverse = files["tril_unit_lower_inverse.v"]
    assert ("Lemma tril_unit_lower_inverse_defined : (beta *: (stril_mx (K *m K^T)) + (1%:M : 'M[R]_(n)) "
            "\\in unitmx).") in inverse
    assert ("(unit_lower_unit (unit_lower_addl (strict_lower_scale beta (strict_lower_stril (K *m K^T))) "
            "(@unit_lower_one R n)))") in inverse
    for name, text in files.items():
        for word in ("Admitted", "admit", "Axiom", "Parameter", "Conjecture"):
            assert word not in text, f"{name} uses {word}"


def test_the_export_of_the_tril_file_is_deterministic(tmp_path, capsys):
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
        assert main(_export(folder, LIBRARY)) == 0
    capsys.readouterr()
    assert {p.name: p.read_text() for p in (first / "out").glob("*.v")} == \
        {p.name: p.read_text() for p in (second / "out").glob("*.v")}


@needs_coq
@pytest.mark.slow
def test_every_theorem_of_the_tril_file_is_accepted_by_coq(tmp_path, capsys):
    status = main(_export(tmp_path, LIBRARY, "--compile"))
    out = capsys.readouterr().out
    assert status == 0, out
    for tid in TRIL_THEOREMS:
        assert f"{tid:30} {ACCEPTED}" in out, out


_THREE_CHUNKS = '''
from sympy import MatrixSymbol, ZeroMatrix
from derive import ProofBuilder, block, dim, theorem, tril

a, b, c = dim("a"), dim("b"), dim("c")
sizes = {"A": a, "B": b, "C": c}
M = {(i, j): MatrixSymbol(f"M_{i}{j}", sizes[i], sizes[j]) for i in "ABC" for j in "ABC"}


@theorem
def tril_three_chunks():
    grid = block([[M[i, j] for j in "ABC"] for i in "ABC"])
    masked = block([[tril(M[i, j]) if i == j else M[i, j] if i > j else ZeroMatrix(sizes[i], sizes[j])
                     for j in "ABC"] for i in "ABC"])
    pb = ProofBuilder("tril_three_chunks", "Three chunks", "tril of a 3 x 3 grid of blocks, blockwise.")
    pb.main(tril(grid)).auto(masked)
    return pb.proof()


@theorem
def tril_two_chunks():
    grid = block([[M[i, j] for j in "AB"] for i in "AB"])
    masked = block([[tril(M["A", "A"]), ZeroMatrix(a, b)], [M["B", "A"], tril(M["B", "B"])]])
    pb = ProofBuilder("tril_two_chunks", "Two chunks", "tril of a 2 x 2 grid of blocks, blockwise.")
    pb.main(tril(grid)).auto(masked)
    return pb.proof()
'''


def test_a_mask_of_more_than_two_by_two_blocks_is_refused_with_the_construct_named(tmp_path, capsys):
    """The kernel's tril_block holds for any k × k grid; MathComp's block_mx is 2 × 2: the 3 × 3 theorem is refused
    on its own with the construct named (exit status 4), the 2 × 2 one exported."""
    library = tmp_path / "three_chunks.py"
    library.write_text(_THREE_CHUNKS)
    status = main(_export(tmp_path, library))
    out = capsys.readouterr().out
    assert status == 4, out
    assert "tril_two_chunks                exported" in out
    assert ("tril_three_chunks              not exported: a block matrix of more than 2 × 2 blocks is not exported "
            "(MathComp's block_mx, row_mx and col_mx are 2 × 2, 1 × 2 and 2 × 1)") in out


@needs_coq
@pytest.mark.slow
def test_the_prelude_mask_is_numpys_tril_and_proves_no_false_statement(tmp_path):
    """`tril_mx` keeps the diagonal and what is below it, `stril_mx` only what is below (NumPy's tril(A) and
    tril(A, -1), entry by entry); the lemmas the exporter uses prove the kernel's rules (a 2 × 2 block, a unit lower
    triangular sum with the identity first, its determinant 1) and not a false variant (the upper block kept, the
    mask taken as strictly lower, a full matrix taken as unit lower triangular)."""
    export = export_certificates([])
    (tmp_path / f"{PRELUDE}.v").write_text(export.files[f"{PRELUDE}.v"])
    (tmp_path / "mask.v").write_text(textwrap.dedent("""\
        From mathcomp Require Import all_ssreflect all_algebra.
        From OLS Require Import OlsPrelude.
        Import GRing.Theory Num.Theory.
        Local Open Scope ring_scope.
        Section Mask.
        Variable R : realFieldType.
        Variables (m n : nat) (A : 'M[R]_m) (B : 'M[R]_(m, n)) (C : 'M[R]_(n, m)) (D E F : 'M[R]_n).
        Variables (d : 'rV[R]_n) (beta : R).
        Lemma tril_keeps_the_diagonal : tril_mx (1%:M : 'M[R]_2) ord0 ord0 = 1.
        Proof. by rewrite !mxE. Qed.
        Lemma stril_drops_the_diagonal : stril_mx (1%:M : 'M[R]_2) ord0 ord0 = 0.
        Proof. by rewrite !mxE. Qed.
        Lemma tril_drops_the_upper : tril_mx (const_mx 1 : 'M[R]_2) ord0 ord_max = 0.
        Proof. by rewrite !mxE. Qed.
        Lemma stril_keeps_the_lower : stril_mx (const_mx 1 : 'M[R]_2) ord_max ord0 = 1.
        Proof. by rewrite !mxE. Qed.
        Lemma block_masked : tril_mx (block_mx A B C D) = block_mx (tril_mx A) 0 C (tril_mx D).
        Proof. by rewrite trilk_block. Qed.
        Lemma block_strict : stril_mx (block_mx A B C D) = block_mx (stril_mx A) 0 C (stril_mx D).
        Proof. by rewrite trilk_block. Qed.
        Lemma identity_first : 1%:M + beta *: (diag_mx d *m stril_mx E *m diag_mx d) - stril_mx F \\in unitmx.
        Proof.
        exact: (unit_lower_unit (unit_lower_addr (unit_lower_addr (@unit_lower_one R n) (strict_lower_scale beta
          (strict_lower_mulr (strict_lower_mull (diag_mx_is_diag d) (strict_lower_stril E)) (diag_mx_is_diag d))))
          (strict_lower_opp (strict_lower_stril F)))).
        Qed.
        Lemma determinant_one : \\det (1%:M + stril_mx E) = 1.
        Proof. exact/unit_lower_det/unit_lower_addr/strict_lower_stril/unit_lower_one. Qed.
        Lemma one_plus_strict : 1%:M + beta *: stril_mx E \\in unitmx.
        Proof. exact/unit_one_strict_lower/strict_lower_scale/strict_lower_stril. Qed.
        Lemma upper_kept : tril_mx (block_mx A B C D) = block_mx (tril_mx A) B C (tril_mx D).
        Proof. Fail by rewrite trilk_block. Abort.
        Lemma strict_of_the_mask : strict_lower (tril_mx E).
        Proof. Fail exact: strict_lower_stril E. Abort.
        Lemma the_mask_is_not_strict : ~ strict_lower (tril_mx (1%:M : 'M[R]_1)).
        Proof. by move/(_ ord0 ord0 (leqnn 0)); rewrite !mxE /= => /eqP; rewrite oner_eq0. Qed.
        Lemma a_full_matrix_is_not_unit_lower : ~ unit_lower (const_mx 1 : 'M[R]_2).
        Proof. by move/(_ ord0 ord_max isT); rewrite !mxE /= => /eqP; rewrite oner_eq0. Qed.
        End Mask.
        """))
    for name in (PRELUDE, "mask"):
        done = subprocess.run(["coqc", "-Q", ".", "OLS", "-w", "-notation-overridden,-ambiguous-paths", f"{name}.v"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr  # `Fail ...` compiles only where the tactic fails


def _forged(theorem, lhs, rhs, rule) -> dict:
    """The certificate data of a one-step proof as written (not checked: what --unchecked exports)."""
    from derive.certificates.format import FORMAT
    from derive.kernel import Chain, Proof, Step, proof_to_data

    claim = Chain("main", lhs, rhs, (Step(rhs, rule),))
    return {"format": FORMAT, **proof_to_data(Proof(theorem, theorem, theorem, (), (), (), claim))}


def _wrong_tril_steps() -> dict:
    """theorem -> certificate data of a wrong tril step, each refused by the kernel."""
    from sympy import Identity, MatrixSymbol, Symbol, ZeroMatrix

    from derive.kernel.terms import add, block, diag, inv, mul, transpose, tril

    c, big, n, d = (Symbol(name, integer=True, positive=True) for name in ("c", "C", "n", "d"))
    beta = Symbol("beta", positive=True)
    p, r, j, upper = (MatrixSymbol("P", c, c), MatrixSymbol("R", big, big), MatrixSymbol("J", big, c),
                      MatrixSymbol("L", c, big))
    a, b_, x, y = MatrixSymbol("A", n, n), MatrixSymbol("B", n, n), MatrixSymbol("X", n, d), MatrixSymbol("Y", n, d)
    q, k, w = MatrixSymbol("q", d, 1), MatrixSymbol("k", d, 1), MatrixSymbol("w", n, 1)
    grid = block([[p, upper], [j, r]])
    score, gram = mul(transpose(q), k), mul(x, transpose(y))
    not_strict = add(Identity(n), mul(beta, tril(a)))
    return {
        "wrong_tril_block_upper": _forged("wrong_tril_block_upper", tril(grid),
                                          block([[tril(p), upper], [j, tril(r)]]), "tril_block"),
        "wrong_tril_block_offset": _forged("wrong_tril_block_offset", tril(grid, -1),
                                           block([[tril(p), ZeroMatrix(c, big)], [j, tril(r)]]), "tril_block"),
        "wrong_tril_scalar": _forged("wrong_tril_scalar", tril(score, -1), score, "tril_scalar"),
        "wrong_tril_diagonal": _forged("wrong_tril_diagonal", tril(diag(w), -1), diag(w), "tril_diagonal"),
        "wrong_tril_diag_scale": _forged("wrong_tril_diag_scale", tril(mul(gram, diag(w))),
                                         mul(diag(w), tril(gram)), "tril_diag_scale"),
        "wrong_tril_sum": _forged("wrong_tril_sum", tril(add(a, b_)), add(tril(a), b_), "tril_sum"),
        "wrong_tril_scale": _forged("wrong_tril_scale", tril(mul(beta, a), -1), mul(beta, tril(a)), "tril_scale"),
        # I + β·tril(A) is not unit lower triangular (its diagonal is 1 + βaᵢᵢ): no inverse to cancel
        "wrong_unit_lower": _forged("wrong_unit_lower", mul(inv(not_strict), not_strict), Identity(n),
                                    "inverse_cancel"),
    }


def test_the_kernel_refuses_each_forged_tril_step():
    from derive.certificates.format import proof_from_data
    from derive.kernel import ProofError, check

    for tid, data in _wrong_tril_steps().items():
        with pytest.raises(ProofError, match=tid):
            check(proof_from_data(data))


@needs_coq
@pytest.mark.slow
def test_coq_rejects_forged_tril_steps(tmp_path):
    """Exported unchecked (the export writes what it cannot justify as an obligation for Coq), each forged step —
    the upper block kept, the strict offset lost, tril(a, -1) = a, the strict mask of a diagonal kept, a decay moved
    to the other side, a sum half masked, a strict mask lost in a scaling, the inverse of I + β·tril(A) cancelled —
    is rejected by coqc."""
    wrong = _wrong_tril_steps()
    export = export_certificates(list(wrong.values()), unchecked=True)
    assert export.exported == list(wrong), export.skipped
    write_export(export, tmp_path)
    verdicts = compile_export(tmp_path, export.exported)
    assert all(verdict != "ok" and "prelude" not in verdict for verdict in verdicts.values()), verdicts


@needs_coq
@pytest.mark.slow
def test_coq_rejects_the_chunkwise_identity_with_its_strict_masks_dropped(tmp_path):
    """The strict chunkwise identity as the kernel proved it, its claim (and last step) changed to keep the diagonal
    inside each chunk, tril(QKᵀ, -1)V = [tril(Q_aK_aᵀ)V_a; ...], a false statement: exported unchecked, rejected by
    coqc; the certificate as proved, exported unchecked, accepted."""
    from derive.authoring.registry import checked, load_library
    from derive.certificates import certificate_text

    assert "tril_chunkwise_strict" in load_library(str(LIBRARY))
    data = json.loads(certificate_text(checked("tril_chunkwise_strict")))
    forged = copy.deepcopy(data)
    forged["theorem"] = "tril_chunkwise_forged"
    for part in (forged["claim"], forged["steps"][-1]):
        key = "rhs" if part is forged["claim"] else "expr"
        assert part[key].count("Integer(-1)") == 2
        part[key] = part[key].replace("Integer(-1)", "Integer(0)")
    export = export_certificates([data, forged], unchecked=True)
    assert export.exported == ["tril_chunkwise_strict", "tril_chunkwise_forged"], export.skipped
    assert "Theorem tril_chunkwise_forged : (stril_mx " in export.files["tril_chunkwise_forged.v"]
    assert "col_mx ((tril_mx (Q_a *m K_a^T)) *m V_a)" in export.files["tril_chunkwise_forged.v"]
    write_export(export, tmp_path / "coq")
    verdicts = compile_export(tmp_path / "coq", export.exported)
    assert verdicts["tril_chunkwise_strict"] == "ok", verdicts
    assert verdicts["tril_chunkwise_forged"] != "ok", verdicts


# --- block_flatten (issue 42): a grid of block rows (or columns) is the flattened grid ------------------------------


def _checked(theorem, lhs, rhs, steps) -> dict:
    from derive.certificates.format import FORMAT
    from derive.kernel import Chain, Proof, Step, check, proof_to_data

    claim = Chain("main", lhs, rhs, tuple(Step(e, r) for e, r in steps))
    proof = Proof(theorem, theorem, theorem, (), (), (), claim)
    check(proof)
    return {"format": FORMAT, **proof_to_data(proof)}


def _flatten_theorems() -> dict:
    """theorem -> (certificate data of a block_flatten proof the kernel accepts, a line its Coq file holds)."""
    from sympy import MatrixSymbol, Symbol

    from derive.kernel.terms import block, mul, transpose, tril

    n, k, d = (Symbol(name, integer=True, positive=True) for name in ("n", "k", "d"))
    a, b, c, e = (MatrixSymbol("A", n, n), MatrixSymbol("B", n, k), MatrixSymbol("C", k, n),
                  MatrixSymbol("D", k, k))
    q_a, q_b, x = MatrixSymbol("Q_a", n, d), MatrixSymbol("Q_b", k, d), MatrixSymbol("X", n + k, d)
    flat = block([[a, b], [c, e]])
    rows = block([[block([[a, b]])], [block([[c, e]])]])
    columns = block([[block([[a], [c]]), block([[b], [e]])]])
    # Q Qᵀ of stacked Q = [Q_a; Q_b] by block_multiply gives a column of block rows: flattened, then masked
    scores = block([[mul(q_a, transpose(q_a)), mul(q_a, transpose(q_b))],
                    [mul(q_b, transpose(q_a)), mul(q_b, transpose(q_b))]])
    stacked = block([[block([[mul(q_a, transpose(q_a)), mul(q_a, transpose(q_b))]])],
                     [block([[mul(q_b, transpose(q_a)), mul(q_b, transpose(q_b))]])]])
    return {
        "flatten_rows": (_checked("flatten_rows", rows, flat, [(flat, "block_flatten")]),
                         "have rule_ : col_mx (row_mx A B) (row_mx C D) = block_mx A B C D := erefl."),
        "flatten_columns": (_checked("flatten_columns", columns, flat, [(flat, "block_flatten")]),
                            "by rewrite block_mxEh"),
        "unflatten_rows": (_checked("unflatten_rows", mul(flat, x), mul(rows, x), [(mul(rows, x), "block_flatten")]),
                           "Theorem unflatten_rows : (block_mx A B C D) *m X = (col_mx (row_mx A B) (row_mx C D))"),
        "unflatten_columns": (_checked("unflatten_columns", tril(flat), tril(columns),
                                       [(tril(columns), "block_flatten")]), "by rewrite block_mxEh"),
        "flatten_scores": (_checked("flatten_scores", tril(stacked), tril(scores),
                                    [(tril(scores), "block_flatten")]), "= tril_mx (block_mx (Q_a *m Q_a^T)"),
    }


def test_block_flatten_is_exported_in_both_directions():
    theorems = _flatten_theorems()
    assert "block_flatten" in RULE_TRANSLATIONS and "block_flatten" not in RULES_NOT_MODELLED
    export = export_certificates([data for data, _ in theorems.values()])
    assert export.skipped == {}, export.skipped
    for tid, (_, line) in theorems.items():
        assert line in export.files[f"{tid}.v"], (tid, export.files[f"{tid}.v"])


@needs_coq
def test_coq_accepts_block_flatten_and_rejects_a_wrong_flatten(tmp_path):
    """Each block_flatten theorem compiles; a flatten with the off-diagonal blocks swapped (B and C, both n × n so
    the types agree), exported unchecked, is rejected."""
    from sympy import MatrixSymbol, Symbol

    from derive.kernel.terms import block

    theorems = _flatten_theorems()
    n = Symbol("n", integer=True, positive=True)
    a, b, c, d = (MatrixSymbol(name, n, n) for name in "ABCD")
    wrong = _forged("wrong_flatten", block([[block([[a, b]])], [block([[c, d]])]]), block([[a, c], [b, d]]),
                    "block_flatten")
    export = export_certificates([*(data for data, _ in theorems.values()), wrong], unchecked=True)
    assert export.exported == [*theorems, "wrong_flatten"], export.skipped
    write_export(export, tmp_path / "coq")
    verdicts = compile_export(tmp_path / "coq", export.exported)
    assert all(verdicts[tid] == "ok" for tid in theorems), verdicts
    assert verdicts["wrong_flatten"] != "ok", verdicts


def test_block_flatten_of_more_than_two_block_rows_is_refused_with_the_construct_named():
    from sympy import MatrixSymbol, Symbol

    from derive.kernel.terms import block

    n = Symbol("n", integer=True, positive=True)
    m = {(i, j): MatrixSymbol(f"M_{i}{j}", n, n) for i in range(3) for j in range(2)}
    flat = block([[m[i, 0], m[i, 1]] for i in range(3)])
    rows = block([[block([[m[i, 0], m[i, 1]]])] for i in range(3)])
    export = export_certificates([_checked("flatten_three_rows", rows, flat, [(flat, "block_flatten")])])
    assert export.exported == []
    assert export.skipped["flatten_three_rows"] == (
        "a block matrix of more than 2 × 2 blocks is not exported (MathComp's block_mx, row_mx and col_mx are "
        "2 × 2, 1 × 2 and 2 × 1)")
