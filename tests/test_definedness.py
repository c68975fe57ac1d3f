"""Definedness that follows from what is known (issue 29, item 2).

Each extension of the judgments is tested three ways: accepted on the example it is for, shown true on explicit
matrices (exact rational arithmetic), and refused once its premise is dropped or forged.

- unfolding: X_w := L⁻¹X with Σ = LLᵀ makes X_wᵀX_w invertible when XᵀΣ⁻¹X is;
- Woodbury's capacitance: A + UCV is invertible when A, C and C⁻¹ + VA⁻¹U are;
- inductive facts: a recurrence whose base and step keep a predicate has it at every index;
- hypotheses about defined symbols, with definitions still judged before them (and the message that names it);
- lemmas proved earlier count for a claim's definedness, later ones never.
"""

from __future__ import annotations

import importlib.util
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sympy import Identity, Integer, Matrix, MatrixSymbol, Q, Rational, S, eye, zeros

from derive import dim, index
from derive.kernel import Chain, Definition, Family, Hypothesis, Proof, ProofError, Step, check
from derive.kernel.checking import theorem_context
from derive.kernel.judgments import invertible, positive_definite, symmetric
from derive.kernel.terms import FamilyMatrix, add, inv, mul, transpose

DATA = Path(__file__).parent / "data"
n, p, k = dim("n"), dim("p"), dim("k")
s, t = index("s"), index("t")
X, L, Sigma = MatrixSymbol("X", n, p), MatrixSymbol("L", n, n), MatrixSymbol("Sigma", n, n)
X_w = MatrixSymbol("X_w", n, p)
A, C = MatrixSymbol("A", n, n), MatrixSymbol("C", k, k)
U, V = MatrixSymbol("U", n, k), MatrixSymbol("V", k, n)


def pred(name, predicate, term) -> Hypothesis:
    return Hypothesis(name, predicate(term), S.true)


def cancel_proof(matrix, hypotheses=(), definitions=(), families=(), lemmas=(), name="defined") -> Proof:
    """The claim M⁻¹M = I (one inverse_cancel): it checks exactly when M is judged invertible."""
    claim = Chain("main", mul(inv(matrix), matrix), Identity(matrix.shape[0]),
                  (Step(Identity(matrix.shape[0]), "inverse_cancel"),))
    return Proof(name, "t", "t", tuple(hypotheses), tuple(definitions), tuple(lemmas), claim, (), tuple(families))


def accepted(proof: Proof) -> bool:
    try:
        check(proof)
    except ProofError:
        return False
    return True


def rational_matrix(rng: random.Random, rows: int, cols: int) -> Matrix:
    return Matrix(rows, cols, lambda i, j: Rational(rng.randint(-4, 4), rng.randint(1, 3)))


# --- unfolding a definition and the equations of a symbol -------------------------------------------------------

GRAM_W = mul(transpose(X_w), X_w)
GLS_GRAM = mul(transpose(X), inv(Sigma), X)


def whitening(cholesky=None, definition=None, drop=()) -> dict:
    hypotheses = [Hypothesis("cholesky", Sigma, mul(L, transpose(L))) if cholesky is None else cholesky,
                  pred("L_invertible", Q.invertible, L), pred("gls_gram_invertible", Q.invertible, GLS_GRAM)]
    hypotheses = [h for h in hypotheses if h.name not in drop]
    return {"hypotheses": hypotheses,
            "definitions": [definition or Definition("X_w", X_w, mul(inv(L), X))]}


def test_the_whitened_gram_matrix_is_invertible_by_unfolding_the_definition():
    assert accepted(cancel_proof(GRAM_W, **whitening()))
    # the equation may be stated either way round
    assert accepted(cancel_proof(GRAM_W, **whitening(Hypothesis("cholesky", mul(L, transpose(L)), Sigma))))


def test_the_whitened_gram_matrix_on_explicit_matrices():
    """X_wᵀX_w = XᵀΣ⁻¹X exactly; with the premise dropped (X = 0) it is singular."""
    rng = random.Random(29)
    for size, cols in ((3, 2), (4, 3)):
        lower = Matrix(size, size, lambda i, j: rng.randint(1, 4) if i == j else (rng.randint(-3, 3) if i > j else 0))
        x = rational_matrix(rng, size, cols)
        sigma = lower * lower.T
        whitened = lower.inv() * x
        assert whitened.T * whitened == x.T * sigma.inv() * x
        assert (x.T * sigma.inv() * x).det() != 0
    zero = zeros(size, cols)
    assert ((lower.inv() * zero).T * (lower.inv() * zero)).det() == 0


@pytest.mark.parametrize("mutation", ["no_gram_hypothesis", "no_L_invertible", "Sigma_is_LtL", "X_w_is_LX",
                                      "X_w_is_inverse_transpose"])
def test_unfolding_refuses_without_its_premise_or_with_a_forged_one(mutation):
    forged = {
        "no_gram_hypothesis": whitening(drop=("gls_gram_invertible",)),
        "no_L_invertible": whitening(drop=("L_invertible",)),
        "Sigma_is_LtL": whitening(Hypothesis("cholesky", Sigma, mul(transpose(L), L))),
        "X_w_is_LX": whitening(definition=Definition("X_w", X_w, mul(L, X))),
        "X_w_is_inverse_transpose": whitening(definition=Definition("X_w", X_w, mul(inv(transpose(L)), X))),
    }[mutation]
    assert not accepted(cancel_proof(GRAM_W, **forged))


# --- Woodbury's capacitance -------------------------------------------------------------------------------------

UPDATE = add(A, mul(U, C, V))
CAPACITANCE = add(inv(C), mul(V, inv(A), U))


def woodbury_hypotheses(capacitance=CAPACITANCE, drop=()):
    out = [pred("A_invertible", Q.invertible, A), pred("C_invertible", Q.invertible, C),
           pred("capacitance_invertible", Q.invertible, capacitance)]
    return [h for h in out if h.name not in drop]


def test_a_woodbury_update_is_invertible_by_its_capacitance():
    assert accepted(cancel_proof(UPDATE, woodbury_hypotheses()))
    minus = add(A, mul(-1, U, C, V))  # A − UCV: the capacitance is C⁻¹ − VA⁻¹U
    assert accepted(cancel_proof(minus, woodbury_hypotheses(add(inv(C), mul(-1, V, inv(A), U)))))
    twice = add(A, mul(2, U, C, V))
    assert accepted(cancel_proof(twice, woodbury_hypotheses(add(inv(C), mul(2, V, inv(A), U)))))


def test_woodbury_capacitance_on_explicit_matrices():
    """det(A + cUCV) = det A · det C · det(C⁻¹ + cVA⁻¹U); A = I, U = V = I, C = −I: A, C invertible, A + UCV = 0
    and the capacitance −I + I = 0 (so the premise on the capacitance cannot be dropped)."""
    rng = random.Random(7)
    for size, inner, c in ((3, 2, 1), (4, 2, -1), (3, 1, Rational(2, 3))):
        a, cc = rational_matrix(rng, size, size) + 5 * eye(size), rational_matrix(rng, inner, inner) + 3 * eye(inner)
        u, v = rational_matrix(rng, size, inner), rational_matrix(rng, inner, size)
        assert (a + c * u * cc * v).det() == a.det() * cc.det() * (cc.inv() + c * v * a.inv() * u).det()
    one = eye(2)
    assert (one + one * (-one) * one).det() == 0 and ((-one).inv() + one * one.inv() * one).det() == 0


@pytest.mark.parametrize("mutation", ["no_A", "no_C", "no_capacitance", "C_not_inverted", "wrong_sign",
                                      "A_transposed", "update_negated", "coefficient_forgotten"])
def test_woodbury_refuses_without_its_premise_or_with_a_forged_capacitance(mutation):
    term, hypotheses = UPDATE, None
    if mutation in ("no_A", "no_C", "no_capacitance"):
        hypotheses = woodbury_hypotheses(drop=({"no_A": "A_invertible", "no_C": "C_invertible",
                                                "no_capacitance": "capacitance_invertible"}[mutation],))
    elif mutation == "C_not_inverted":
        hypotheses = woodbury_hypotheses(add(C, mul(V, inv(A), U)))
    elif mutation == "wrong_sign":
        hypotheses = woodbury_hypotheses(add(inv(C), mul(-1, V, inv(A), U)))
    elif mutation == "A_transposed":
        hypotheses = woodbury_hypotheses(add(inv(C), mul(V, inv(transpose(A)), U)))
    elif mutation == "update_negated":
        term, hypotheses = add(A, mul(-1, U, C, V)), woodbury_hypotheses()
    else:
        term, hypotheses = add(A, mul(3, U, C, V)), woodbury_hypotheses()
    assert not accepted(cancel_proof(term, hypotheses))


# --- recurrences whose members keep a predicate (induction on the index) ----------------------------------------

x = lambda e: FamilyMatrix("x", e, p, Integer(1))  # noqa: E731
F = lambda e: FamilyMatrix("F", e, p, p)  # noqa: E731
Ap = MatrixSymbol("A", p, p)


def accumulating(base=None, step=None, hypotheses=()) -> dict:
    """F[0] = base (I), F[s + 1] = F[s] + x[s + 1] x[s + 1]ᵀ (positive definite at every s when the base is)."""
    base = Identity(p) if base is None else base
    step = add(F(s), mul(x(s + 1), transpose(x(s + 1)))) if step is None else step
    families = [Family("x", s, p, Integer(1)), Family("F", s, p, p, base, step)]
    return {"families": families, "hypotheses": list(hypotheses)}


def test_a_recurrence_that_keeps_positive_definiteness_gives_invertible_members():
    for e in (t, t + 1, 0, 3):
        assert accepted(cancel_proof(F(e), **accumulating()))
    assert accepted(cancel_proof(F(t), **accumulating(Ap, hypotheses=[pred("A_pd", Q.positive_definite, Ap)])))


def test_the_inductive_facts_are_the_largest_invariant_set():
    """F[0] = A positive definite (not symmetric), F[s + 1] = F[s]²: invertible at every index, but positive
    definiteness is not kept (a rotation by 60° is positive definite, its square is not), nor symmetry."""
    proof = cancel_proof(F(t), **accumulating(Ap, mul(F(s), F(s)), [pred("A_pd", Q.positive_definite, Ap)]))
    assert accepted(proof)
    ctx = theorem_context(proof)
    assert invertible(F(t), ctx) and not positive_definite(F(t), ctx) and not symmetric(F(t), ctx)
    rotation = Matrix([[Rational(1, 2), -1], [Rational(3, 4), Rational(1, 2)]])  # xᵀRx = |x|²/2 - x₁x₂/4 > 0
    square = rotation * rotation
    assert (rotation + rotation.T).is_positive_definite and not (square + square.T).is_positive_definite


def test_the_accumulated_gram_on_explicit_matrices():
    rng = random.Random(3)
    member = eye(3)
    for _ in range(4):
        column = rational_matrix(rng, 3, 1)
        member = member + column * column.T
        assert member.is_positive_definite
    assert (zeros(3, 3) + column * column.T).det() == 0  # from a zero base: singular


@pytest.mark.parametrize("mutation", ["zero_base", "singular_base", "subtracted", "fact_at_the_own_index"])
def test_inductive_facts_refuse_a_bad_base_or_step(mutation):
    hypothesis_at_s = [Hypothesis("x_pd", Q.positive_definite(mul(x(s + 1), transpose(x(s + 1)))), S.true)]
    parts = {
        "zero_base": accumulating(mul(0, Identity(p))),
        "singular_base": accumulating(Ap),
        "subtracted": accumulating(step=add(F(s), mul(-1, x(s + 1), transpose(x(s + 1))))),
        # a fact about x at the recurrence's own index s holds at that s only, not at every index
        "fact_at_the_own_index": accumulating(step=mul(x(s + 1), transpose(x(s + 1))), hypotheses=hypothesis_at_s),
    }[mutation]
    assert not accepted(cancel_proof(F(t), **parts))


def test_a_step_defined_only_by_a_fact_at_its_own_index_is_not_total():
    """F[s + 1] = x[s]⁻¹ with x[s] invertible for the one s the hypothesis names: F[t + 1] is not defined for
    every t (before issue 29 the recurrence was judged total)."""
    xs = lambda e: FamilyMatrix("x", e, p, p)  # noqa: E731
    families = (Family("x", s, p, p), Family("F", s, p, p, Identity(p), inv(xs(s))))
    claim = Chain("main", add(F(t + 1), F(t + 1)), mul(2, F(t + 1)), (Step(mul(2, F(t + 1)), "collect"),))
    proof = Proof("hole", "t", "t", (pred("x_inv", Q.invertible, xs(s)),), (), (), claim, (), families)
    with pytest.raises(ProofError, match="not shown defined"):
        check(proof)


# --- hypotheses about defined symbols ---------------------------------------------------------------------------


def test_a_hypothesis_may_speak_about_a_defined_symbol():
    hypotheses = [pred("L_invertible", Q.invertible, L), pred("whitened_gram", Q.invertible, GRAM_W)]
    assert accepted(cancel_proof(GRAM_W, hypotheses, [Definition("X_w", X_w, mul(inv(L), X))]))


def test_a_definition_is_judged_before_the_hypotheses_about_defined_symbols():
    """D := A⁻¹ with A = Dᵀ and D invertible: A would be invertible only through hypotheses about D itself, so
    the definition would constrain A; it is refused, naming what is not shown."""
    D = MatrixSymbol("D", p, p)
    hypotheses = [Hypothesis("A_is_Dt", Ap, transpose(D)), pred("D_invertible", Q.invertible, D)]
    with pytest.raises(ProofError, match="cannot show that A is invertible"):
        check(cancel_proof(D, hypotheses, [Definition("D", D, inv(Ap))]))
    assert accepted(cancel_proof(D, hypotheses + [pred("A_invertible", Q.invertible, Ap)],
                                 [Definition("D", D, inv(Ap))]))


def test_definitions_stay_fresh_and_the_message_names_the_reason():
    D, E = MatrixSymbol("D", p, p), MatrixSymbol("E", p, p)
    twice = [Definition("D", D, Identity(p)), Definition("D_again", D, mul(2, Identity(p)))]
    with pytest.raises(ProofError, match="defined twice"):
        check(cancel_proof(D, (), twice))
    used = [Definition("E", E, mul(2, D)), Definition("D", D, Identity(p))]
    with pytest.raises(ProofError, match="used by an earlier definition"):
        check(cancel_proof(E, (), used))
    local = Hypothesis("D_is_I", D, Identity(p))
    lemma = Chain("lemma", mul(D, D), D, (Step(D, "hyp:D_is_I"),), (local,))
    with pytest.raises(ProofError, match="constrains a defined symbol"):
        check(cancel_proof(D, (), [Definition("D", D, mul(2, Identity(p)))], lemmas=[lemma]))


def test_a_hypothesis_about_a_defined_symbol_proves_nothing_false():
    """X_w = X by hypothesis does not make L⁻¹X = X a theorem without it: dropping the hypothesis refuses."""
    definition = Definition("X_w", X_w, mul(inv(L), X))
    chain = Chain("main", mul(inv(L), X), X, (Step(X_w, "def:X_w"), Step(X, "hyp:same")))
    base = [pred("L_invertible", Q.invertible, L)]
    with_it = Proof("vacuous", "t", "t", (*base, Hypothesis("same", X_w, X)), (definition,), (), chain, (), ())
    assert accepted(with_it)
    without = Proof("vacuous", "t", "t", tuple(base), (definition,), (), chain, (), ())
    assert not accepted(without)


# --- lemmas proved earlier count for a claim's definedness, later ones never --------------------------------------


def test_an_earlier_lemma_counts_for_the_claim_and_a_later_one_never():
    Qf, R, Xp = MatrixSymbol("Q", n, p), MatrixSymbol("R", p, p), MatrixSymbol("X", n, p)
    gram = mul(transpose(Xp), Xp)
    hypotheses = (Hypothesis("qr", Xp, mul(Qf, R)), Hypothesis("orth", mul(transpose(Qf), Qf), Identity(p)),
                  pred("R_invertible", Q.invertible, R))
    lemma = Chain("gram", gram, mul(transpose(R), R),
                  (Step(mul(transpose(mul(Qf, R)), Xp), "hyp:qr"), Step(mul(transpose(mul(Qf, R)), Qf, R), "hyp:qr"),
                   Step(mul(transpose(R), transpose(Qf), Qf, R), "transpose_product"),
                   Step(mul(transpose(R), Identity(p), R), "hyp:orth"), Step(mul(transpose(R), R), "identity_mul")))
    uses = Chain("uses", mul(inv(gram), gram), Identity(p), (Step(Identity(p), "inverse_cancel"),))
    assert accepted(cancel_proof(gram, hypotheses, lemmas=[lemma]))
    assert not accepted(cancel_proof(gram, hypotheses))
    assert accepted(cancel_proof(gram, hypotheses, lemmas=[lemma, uses]))
    with pytest.raises(ProofError, match="uses"):
        check(cancel_proof(gram, hypotheses, lemmas=[uses, lemma]))


# --- the demo file ----------------------------------------------------------------------------------------------


def load_demo():
    spec = importlib.util.spec_from_file_location("user_definedness_demo", DATA / "user_definedness.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_demo_theorems_check():
    module = load_demo()
    for name in ("gls_by_whitening", "woodbury_invertible", "woodbury"):
        assert check(getattr(module, name)()).id == name


# --- the Coq export ---------------------------------------------------------------------------------------------

HYPOTHESIS_ABOUT_A_DEFINED_SYMBOL = '''
from sympy import MatrixSymbol, Q
from derive import Definition, ProofBuilder, dim, inv, mul, predicate, theorem, transpose
n, p = dim("n"), dim("p")
X, L, X_w = MatrixSymbol("X", n, p), MatrixSymbol("L", n, n), MatrixSymbol("X_w", n, p)


@theorem
def whitened_cancel():
    gram = mul(transpose(X_w), X_w)
    b = ProofBuilder("whitened_cancel", "Cancelling a whitened Gram matrix", "(X_wᵀX_w)⁻¹X_wᵀX_wX_wᵀ = X_wᵀ.",
                     [predicate("L_invertible", Q.invertible, L), predicate("whitened_gram", Q.invertible, gram)],
                     [Definition("X_w", X_w, mul(inv(L), X))])
    b.main(mul(inv(gram), gram, transpose(X_w))).rw("inverse_cancel").rw("identity_mul").qed(transpose(X_w))
    return b.proof()
'''


def _export(tmp_path, library: Path, ids: list[str], capsys, compile_: bool = False) -> tuple[int, str, Path]:
    from derive.cli import main

    out = tmp_path / "coq"
    args = ["export", "coq", *ids, "--out", str(out), "--library", str(library), "--record", str(tmp_path / "rec")]
    status = main(args + (["--compile"] if compile_ else []))
    return status, capsys.readouterr().out, out


def _export_demo(tmp_path, compile_: bool) -> str:
    """`derive export coq` of the demo in a fresh process (this one may have registered its theorems already)."""
    done = subprocess.run([sys.executable, "-m", "derive", "export", "coq", "gls_by_whitening", "woodbury_invertible",
                           "woodbury", "--out", str(tmp_path / "coq"), "--library", str(DATA / "user_definedness.py"),
                           "--record", str(tmp_path / "rec"), *(["--compile"] if compile_ else [])],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    return done.stdout + done.stderr


def test_the_coq_export_models_the_capacitance_and_the_unfolding(tmp_path):
    """Woodbury's capacitance (unit_capacitance_eq) and, issue 29 item 6, X_wᵀX_w invertible through the definition
    X_w := L⁻¹X and the equation Σ = LLᵀ: the same rewrites in Coq, carried by unit_eq to XᵀΣ⁻¹X."""
    out = _export_demo(tmp_path, compile_=False)
    for name in ("gls_by_whitening", "woodbury_invertible", "woodbury"):
        assert f"{name:30} exported" in out, out
    assert "unit_capacitance_eq" in (tmp_path / "coq" / "woodbury_invertible.v").read_text()
    assert "(unit_eq (ltac:(rewrite /X_w cholesky" in (tmp_path / "coq" / "gls_by_whitening.v").read_text()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is installed by .ci/run")
def test_coq_accepts_the_woodbury_theorems(tmp_path):
    """Their `_defined` lemma proves A + UCV invertible by the prelude's `unit_capacitance`; GLS by whitening's, X_wᵀX_w
    invertible by unfolding."""
    out = _export_demo(tmp_path, compile_=True)
    for name in ("gls_by_whitening", "woodbury_invertible", "woodbury"):
        assert f"{name:30} coqc: accepted, closed under the global context" in out, out


def test_the_coq_export_states_a_hypothesis_about_a_defined_symbol_after_the_definition(tmp_path, capsys):
    library = tmp_path / "whitened.py"
    library.write_text(HYPOTHESIS_ABOUT_A_DEFINED_SYMBOL)
    status, out, folder = _export(tmp_path, library, ["whitened_cancel"], capsys)
    text = (folder / "whitened_cancel.v").read_text()
    assert status == 0 and "whitened_cancel                exported" in out, out
    assert text.index("Definition X_w ") < text.index("Hypothesis whitened_gram ") < text.index("Lemma "), text


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is installed by .ci/run")
def test_coq_accepts_a_hypothesis_about_a_defined_symbol(tmp_path, capsys):
    library = tmp_path / "whitened.py"
    library.write_text(HYPOTHESIS_ABOUT_A_DEFINED_SYMBOL.replace("whitened_cancel", "whitened_cancel_coq"))
    status, out, _ = _export(tmp_path, library, ["whitened_cancel_coq"], capsys, compile_=True)
    assert status == 0 and "coqc: accepted, closed under the global context" in out, out


@pytest.mark.slow
def test_the_demo_passes_the_witness_and_its_certificates_check_in_a_fresh_process(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    certs = tmp_path / "certs"
    ids = ["gls_by_whitening", "woodbury_invertible", "woodbury"]
    library = str(DATA / "user_definedness.py")
    proved = subprocess.run([sys.executable, "-m", "derive", "prove", *ids, "--library", library,
                             "--record", str(tmp_path / "r"), "--witness", "--certificates", str(certs)],
                            capture_output=True, text=True, timeout=900, env=env)
    assert proved.returncode == 0 and "3/3 theorems verified" in proved.stdout, proved.stdout + proved.stderr
    checked = subprocess.run([sys.executable, "-m", "derive", "check", *sorted(map(str, certs.glob("*.json")))],
                             capture_output=True, text=True, timeout=600, env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr


# --- the fuzzer writes the new constructs -----------------------------------------------------------------------


@pytest.mark.slow  # the default fuzzer run (tests/test_fuzz.py) covers every rule and judgment
def test_the_fuzzer_writes_inverses_that_only_the_new_judgments_justify_and_the_oracle_confirms_them():
    """Over the generator's proofs: (X_wᵀX_w)⁻¹, (A + UCV)⁻¹ and Pd[e]⁻¹ occur in chains the kernel accepts, and the
    exact oracle refutes none of them."""
    from sympy import preorder_traversal
    from sympy.matrices.expressions import Inverse

    from derive.fuzz.generate import Skip, generate
    from derive.fuzz.oracle import judge

    wanted = {"Xw": 0, "Cc": 0, "Pd": 0}
    # the stream "lang6" writes all three within 12 proofs; "lang" (the first tried) needed 112 (90 s of the slow tier)
    for number in range(120):
        try:
            proof = generate(random.Random(f"lang6:{number}"), f"g{number}").proof
        except Skip:
            continue
        terms = [step.expr for chain in (*proof.lemmas, proof.claim) for step in getattr(chain, "steps", ())]
        names = {leaf.name for term in terms for node in preorder_traversal(term) if type(node) is Inverse
                 for leaf in node.args[0].atoms(MatrixSymbol, FamilyMatrix)}
        hits = [key for key in wanted if key in names]
        if not hits or not accepted(proof):
            continue
        verdict = judge(proof, random.Random(number), samples=2)
        assert verdict.refutation is None, (number, verdict.refutation)
        for key in hits:
            wanted[key] += 1
        if all(wanted.values()):
            break
    assert all(wanted.values()), wanted
