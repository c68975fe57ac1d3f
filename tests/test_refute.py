"""Verified counterexamples (issue 41 item 1): a claim that cannot be proved is refuted with exact values, or said to
be true on the instances tried, or to have hypotheses no instance satisfied; never made a theorem.

Every counterexample is checked here again with SymPy's own matrix arithmetic, written in the test: the hypotheses
hold at the values, and the two sides differ."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from sympy import Identity, ImmutableMatrix, Integer, Matrix, MatrixSymbol, Q, Rational, eye

from derive import Hypothesis, ProofBuilder, ProofError, add, dim, inv, mul, predicate, scalar, transpose
from derive.authoring.registry import statement
from derive.kernel import Chain, Proof
from derive.refute import KINDS, Verdict, confirm, refute, refute_all, statement_chains

ROOT = Path(__file__).resolve().parents[1]
n, p, k = dim("n"), dim("p"), dim("k")
A, B, U = MatrixSymbol("A", n, n), MatrixSymbol("B", n, n), MatrixSymbol("U", n, n)
X, Y, W = MatrixSymbol("X", n, p), MatrixSymbol("Y", n, k), MatrixSymbol("W", n, n)
lam = scalar("lambda", positive=True)
INVERTIBLE = [predicate("A_invertible", Q.invertible, A), predicate("B_invertible", Q.invertible, B)]


def stated(hypotheses, lhs, rhs, definitions=(), name="t") -> Proof:
    """A statement skeleton: hypotheses, definitions, the claim lhs = rhs (no steps)."""
    return Proof(name, name, name, tuple(hypotheses), tuple(definitions), (), Chain("main", lhs, rhs, ()))


def ridge(c):
    return mul(inv(add(mul(transpose(X), X), mul(c, Identity(p)))), transpose(X), Y)


def is_positive_definite(M: Matrix) -> bool:  # xᵀMx > 0 for x ≠ 0 (no symmetry asked): M + Mᵀ's leading minors
    S = M + M.T
    return all(S[:i, :i].det() > 0 for i in range(1, S.rows + 1))


def inverse_of_sum(v):
    a, b = v[A], v[B]
    assert a.det() != 0 and b.det() != 0 and (a + b).det() != 0  # the three hypotheses
    return (a + b).inv(), a.inv() + b.inv()


def square_orthogonal(v):
    u = v[U]
    assert u.T * u == eye(u.rows)  # UᵀU = I
    return u, eye(u.rows)


def ridge_wrong_lambda(v):
    x, y, c = v[X], v[Y], v[lam]
    assert c > 0
    gram = x.T * x
    return (gram + c * eye(gram.rows)).inv() * x.T * y, (gram + 2 * c * eye(gram.rows)).inv() * x.T * y


def gls_without_its_hypothesis(v):  # weighted least squares is OLS only when W = I (or for special X)
    w, x, y = v[W], v[X], v[Y]
    assert is_positive_definite(w)
    return (x.T * w * x).inv() * x.T * w * y, (x.T * x).inv() * x.T * y


#: False near-misses: (statement, the test's own evaluation of both sides (asserting the hypotheses), the smallest
#: dimensions at which the claim is false).
FALSE = {
    "inverse_of_sum": (stated([*INVERTIBLE, predicate("sum_invertible", Q.invertible, add(A, B))],
                              inv(add(A, B)), add(inv(A), inv(B))), inverse_of_sum, {n: 1}),
    "orthogonal_is_identity": (stated([Hypothesis("U_orthogonal", mul(transpose(U), U), Identity(n))], U,
                                      Identity(n)), square_orthogonal, {n: 1}),
    "ridge_wrong_lambda": (stated([], ridge(lam), ridge(2 * lam)), ridge_wrong_lambda, {n: 1, p: 1, k: 1}),
    "gls_without_its_hypothesis": (stated([predicate("W_positive_definite", Q.positive_definite, W),
                                           predicate("gram", Q.invertible, mul(transpose(X), X))],
                                          mul(inv(mul(transpose(X), W, X)), transpose(X), W, Y),
                                          mul(inv(mul(transpose(X), X)), transpose(X), Y)),
                                   gls_without_its_hypothesis, {n: 2, p: 1, k: 1}),
}


@pytest.mark.parametrize("name", sorted(FALSE))
def test_a_false_near_miss_gets_a_counterexample_the_test_confirms_on_its_own(name):
    statement_, sides, smallest = FALSE[name]
    verdict = refute(statement_)
    assert verdict.kind == "false" and verdict.is_false
    lhs, rhs = sides(verdict.values)  # the hypotheses hold (asserted in ``sides``), by SymPy's arithmetic
    assert lhs != rhs and (lhs, rhs) == (verdict.lhs_value, verdict.rhs_value)
    i, j = verdict.entry
    assert lhs[i, j] != rhs[i, j] and all(lhs[a, b] == rhs[a, b] for a in range(lhs.rows) for b in range(lhs.cols)
                                          if (a, b) < (i, j))
    assert {s: verdict.values[s] for s in smallest} == smallest  # shrunk to the smallest sizes
    for value in verdict.values.values():
        assert isinstance(value, (Integer, Rational, ImmutableMatrix))
        assert not isinstance(value, ImmutableMatrix) or all(e.is_Rational for e in value)
    assert confirm(statement_, verdict.values)


def test_a_counterexample_is_shrunk_to_simple_entries():
    verdict = refute(FALSE["inverse_of_sum"][0])
    assert verdict.values[A] == Matrix([[1]]) and verdict.values[B] == Matrix([[1]])
    assert (verdict.lhs_value, verdict.rhs_value) == (Matrix([[Rational(1, 2)]]), Matrix([[2]]))
    ridge_ = refute(FALSE["ridge_wrong_lambda"][0])
    assert ridge_.values[lam] == 1 and ridge_.values[X] == Matrix([[1]]) and ridge_.values[Y] == Matrix([[1]])


def test_the_verdict_prints_sizes_values_sides_the_entry_the_hypotheses_and_the_seed():
    text = str(refute(FALSE["inverse_of_sum"][0], seed=3))
    for part in ("FALSE", "n = 1", "A = [1]", "B = [1]", "lhs  (A + B)**(-1) = [1/2]", "rhs  A**(-1) + B**(-1) = [2]",
                 "entry (0, 0)", "sum_invertible: invertible(A + B)", "seed 3"):
        assert part in text, (part, text)


def test_a_notebook_shows_the_verdict_as_a_table_with_every_text_escaped():
    table = refute(FALSE["inverse_of_sum"][0], seed=3)._repr_html_()
    assert table.startswith("<table>") and table.count("<tr>") >= 6
    for part in ("claim", "FALSE", "<th style=\"text-align:left\">A</th>", "[1/2]", "entry (0, 0)"):
        assert part in table, (part, table)
    true = refute(FALSE["inverse_of_sum"][0], seed=3)
    hostile = Verdict(**{**true.__dict__, "theorem": "<script>alert(1)</script>", "kind": "true_on_instances"})
    shown = hostile._repr_html_()
    assert "<script>" not in shown and "&lt;script&gt;" in shown


def test_the_search_is_deterministic_and_the_seed_replays_it():
    gls = FALSE["gls_without_its_hypothesis"][0]
    first, again = refute(gls, seed=5), refute(gls, seed=5)
    assert first == again and first.seed == 5


def test_definitions_are_computed_and_reported():
    H = MatrixSymbol("H", n, n)
    from derive import Definition

    hat = Definition("hat", H, mul(X, inv(mul(transpose(X), X)), transpose(X)))
    verdict = refute(stated([predicate("gram", Q.invertible, mul(transpose(X), X))], H, Identity(n), [hat]))
    assert verdict.kind == "false" and verdict.values[n] == 2 and verdict.values[p] == 1  # H = I when n = p
    x = verdict.values[X]
    assert verdict.values[H] == x * (x.T * x).inv() * x.T != eye(2)


def true_statements():
    C = MatrixSymbol("C", n, n)
    yield "transpose_of_product", stated([], transpose(mul(A, B)), mul(transpose(B), transpose(A)))
    yield "inverse_of_product", stated(INVERTIBLE, inv(mul(A, B)), mul(inv(B), inv(A)))
    yield "orthogonal_rows", stated([Hypothesis("U_orthogonal", mul(transpose(U), U), Identity(n))],
                                    mul(U, transpose(U)), Identity(n))
    yield "ridge_push_through", stated([], ridge(lam), mul(transpose(X), inv(add(mul(X, transpose(X)),
                                                                                   mul(lam, Identity(n)))), Y))
    yield "three_factors", stated([], mul(A, add(B, C)), add(mul(A, B), mul(A, C)))
    for theorem_id in ("sherman_morrison", "kernel_ridge_push_through"):
        yield theorem_id, statement(theorem_id)


@pytest.mark.parametrize("name", [name for name, _ in true_statements()])
def test_a_true_identity_never_gets_a_counterexample(name):
    stated_ = dict(true_statements())[name]
    verdicts = refute_all(stated_, budget=60)
    assert list(verdicts) == statement_chains(stated_)
    for verdict in verdicts.values():
        assert verdict.kind == "true_on_instances" and verdict.compared > 10, verdict
        assert verdict.summary().startswith("no counterexample: true on ")


def test_contradictory_hypotheses_are_never_satisfied():
    verdict = refute(stated([Hypothesis("one", A, Identity(n)), Hypothesis("two", A, mul(2, Identity(n)))], A,
                            Identity(n)), budget=40)
    assert verdict.kind == "hypotheses_unsatisfied" and verdict.satisfied == 0 and verdict.instances == 40
    assert "hypotheses were never satisfied" in verdict.summary() and "two" in verdict.unsatisfied


def test_confirm_re_evaluates_without_the_sampler():
    statement_ = FALSE["inverse_of_sum"][0]
    one = {n: 1, A: Matrix([[1]]), B: Matrix([[1]])}
    assert confirm(statement_, one)
    assert confirm(statement_, {"n": 1, "A": [[1]], "B": [[1]]})  # by names, nested lists
    assert not confirm(statement_, {n: 1, A: Matrix([[1]]), B: Matrix([[-1]])})  # A + B singular: a hypothesis fails
    assert not confirm(statement_, {n: 1, A: Matrix([[0]]), B: Matrix([[1]])})  # A singular
    orthogonal = FALSE["orthogonal_is_identity"][0]
    assert not confirm(orthogonal, {n: 1, U: Matrix([[1]])})  # the sides agree: no counterexample
    assert not confirm(orthogonal, {n: 1, U: Matrix([[2]])})  # UᵀU = 4
    assert confirm(orthogonal, {n: 2, U: Matrix([[0, 1], [1, 0]])})
    assert not confirm(orthogonal, {n: 2, U: Matrix([[1]])})  # the wrong shape


def test_verdict_kinds_and_json():
    assert KINDS == ("false", "true_on_instances", "hypotheses_unsatisfied")
    data = refute(FALSE["ridge_wrong_lambda"][0]).to_json()
    assert json.loads(json.dumps(data)) == data
    assert data["kind"] == "false" and data["values"]["X"] == [["1"]] and data["values"]["lambda"] == "1"
    assert data["lhs_value"] == [["1/2"]] and data["rhs_value"] == [["1/3"]] and data["entry"] == [0, 0]


# --- the builder: a chain that cannot be closed ---------------------------------------------------------------


def test_a_failing_auto_carries_a_confirmed_counterexample():
    b = ProofBuilder("inverse_of_sum", "t", "t", [*INVERTIBLE, predicate("sum_invertible", Q.invertible, add(A, B))])
    with pytest.raises(ProofError) as info:
        b.main(inv(add(A, B))).auto(add(inv(A), inv(B)))
    verdict = info.value.counterexample
    assert isinstance(verdict, Verdict) and verdict.kind == "false" and verdict.chain == "main"
    assert verdict.values[A] == Matrix([[1]]) and verdict.values[n] == 1
    assert confirm(FALSE["inverse_of_sum"][0], verdict.values)
    message = str(info.value)
    assert "auto found no chain" in message and "FALSE: counterexample at n = 1: A = [1], B = [1]" in message
    assert "\n" not in message and info.value.rule == "auto"


def test_a_failing_lemma_is_refuted_with_its_local_hypotheses():
    b = ProofBuilder("local", "t", "t", [])
    with pytest.raises(ProofError) as info:
        b.lemma("orthogonal_is_identity", U, [Hypothesis("U_orthogonal", mul(transpose(U), U), Identity(n))]).auto(
            Identity(n))
    verdict = info.value.counterexample
    assert verdict.kind == "false" and verdict.chain == "orthogonal_is_identity"
    assert verdict.values[U] == Matrix([[-1]]) and verdict.hypotheses[0][0] == "U_orthogonal"


def test_a_true_claim_auto_cannot_prove_in_its_budget_is_not_proved_but_true_on_instances():
    b = ProofBuilder("push_through", "t", "t", [])
    with pytest.raises(ProofError, match="within the work budget") as info:
        b.main(ridge(lam)).auto(mul(transpose(X), inv(add(mul(X, transpose(X)), mul(lam, Identity(n)))), Y),
                                budget=1000)
    verdict = info.value.counterexample
    assert verdict.kind == "true_on_instances" and verdict.compared > 10
    assert "; not proved; no counterexample: true on " in str(info.value)


def test_a_hand_written_chain_that_ends_elsewhere_is_refuted_too():
    b = ProofBuilder("commute", "t", "t", [])
    with pytest.raises(ProofError, match="the chain ends at A\\*B, not at B\\*A; FALSE: counterexample at n = 2"):
        b.main(mul(A, B)).qed(mul(B, A))


def test_a_failing_induction_is_refuted_as_its_claim_for_every_index():
    from sympy import ZeroMatrix

    from derive import family, index

    G, t = MatrixSymbol("G", p, p), index("t")
    S = family("S", (p, p))  # S[0] = 0, S[t + 1] = I + G S[t]: I + G + ... + G^(t-1), not t I
    S.recurrence(ZeroMatrix(p, p), lambda s: add(Identity(p), mul(G, S[s])))
    b = ProofBuilder("wrong_induction", "t", "t", families=[S])
    with pytest.raises(ProofError) as info:
        b.induction("closed_form", t, S[t], mul(t, Identity(p))).auto()
    verdict = info.value.counterexample
    assert verdict.kind == "false" and verdict.chain == "closed_form"
    assert verdict.values[t] == 2 and verdict.values[p] == 1  # S[1] = I = 1 I: t = 2 is the smallest
    g = verdict.values[G]
    assert verdict.lhs_value == eye(1) + g and verdict.rhs_value == 2 * eye(1) != eye(1) + g


def test_family_members_are_shown_with_their_index_in_every_output():
    """Free family members (k[1], k[2], ...) are named with their index in the summary, the printed verdict, the
    notebook table and the JSON (whose keys were all "k": every member but the last was lost)."""
    from sympy import ZeroMatrix

    from derive import family, index

    t = index("t")
    kk = family("k", (p, 1))
    S = family("S", (p, p))  # S[t + 1] = S[t] + k[t+1] k[t+1]^T: a sum of outer products, claimed k k^T twice
    S.recurrence(ZeroMatrix(p, p), lambda s: add(S[s], mul(kk[s + 1], transpose(kk[s + 1]))))
    b = ProofBuilder("wrong_members", "t", "t", families=[kk, S])
    with pytest.raises(ProofError) as info:
        b.induction("closed_form", t, S[t], mul(t, kk[t], transpose(kk[t]))).auto()
    verdict = info.value.counterexample
    assert verdict.kind == "false"
    members = [key for key in verdict.values if str(key).startswith("k[")]
    assert len(members) >= 2
    data = verdict.to_json()["values"]
    for member in members:
        assert str(member) in verdict.summary() and str(member) in str(verdict) and str(member) in data
        assert str(member) in verdict._repr_html_()


def test_derive_refute_off_turns_it_off(monkeypatch):
    monkeypatch.setenv("DERIVE_REFUTE", "off")
    b = ProofBuilder("commute", "t", "t", [])
    with pytest.raises(ProofError) as info:
        b.main(mul(A, B)).auto(mul(B, A))
    assert info.value.counterexample is None and "counterexample" not in str(info.value)


def test_the_refuter_never_imports_the_kernels_judgments_axioms_or_checker():
    tree = ast.parse((ROOT / "derive" / "refute.py").read_text())
    imported = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert not any(part in name for name in imported for part in ("judgments", "axioms", "checking"))


# --- the command line -----------------------------------------------------------------------------------------

WRONG = '''
from sympy import Identity, MatrixSymbol

from derive import ProofBuilder, add, dim, inv, mul, scalar, theorem, transpose

n, p, k = dim("n"), dim("p"), dim("k")
X, Y = MatrixSymbol("X", n, p), MatrixSymbol("Y", n, k)
lam = scalar("lambda", positive=True)


def ridge(c):
    return mul(inv(add(mul(transpose(X), X), mul(c, Identity(p)))), transpose(X), Y)


@theorem()
def ridge_wrong_lambda():
    b = ProofBuilder("ridge_wrong_lambda", "Ridge with the wrong λ", "(XᵀX + λI)⁻¹XᵀY = (XᵀX + 2λI)⁻¹XᵀY")
    b.main(ridge(lam)).auto(ridge(2 * lam))
    return b.proof()
'''


@pytest.fixture
def wrong_library(tmp_path) -> Path:
    path = tmp_path / "wrong.py"
    path.write_text(WRONG)
    return path


def test_derive_refute_finds_the_counterexample_and_exits_1(wrong_library, capsys):
    from derive.cli import main

    assert main(["refute", "--library", str(wrong_library)]) == 1
    out = capsys.readouterr().out
    assert "ridge_wrong_lambda/main" in out and "FALSE: a counterexample at p = 1, n = 1, k = 1" in out
    assert "lambda = 1" in out and "X = [1]" in out and "1/2 ≠ 1/3" in out and "1 false" in out
    assert main(["refute", "--library", str(wrong_library), "--json"]) == 1
    (row,) = json.loads(capsys.readouterr().out)
    (chain,) = row["chains"]
    assert row["id"] == "ridge_wrong_lambda" and chain["kind"] == "false"
    assert chain["values"] == {"p": "1", "n": "1", "k": "1", "lambda": "1", "X": [["1"]], "Y": [["1"]]}


def test_derive_refute_on_true_theorems_exits_0(capsys):
    from derive.cli import main

    assert main(["refute", "sherman_morrison", "--budget", "40"]) == 0
    out = capsys.readouterr().out
    assert "sherman_morrison/main: no counterexample: true on " in out and "0 false" in out


def test_derive_prove_json_carries_the_counterexample_of_a_failed_theorem(wrong_library, tmp_path, capsys):
    from derive.cli import main

    assert main(["prove", "--library", str(wrong_library), "--record", str(tmp_path / "records"), "--json"]) == 1
    (row,) = json.loads(capsys.readouterr().out)
    assert row["status"] == "failed" and "FALSE: counterexample at p = 1, n = 1, k = 1" in row["error"]
    assert row["counterexample"]["kind"] == "false" and row["counterexample"]["values"]["X"] == [["1"]]
    assert main(["prove", "sherman_morrison", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["status"] == "verified" and "counterexample" not in row
