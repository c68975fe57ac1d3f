"""The ones vector and diag(v) (issue 41, item 4).

- ``derive.ones(n)`` is 1ₙ, the n×1 vector of ones, a leaf the kernel knows; 1ₙᵀ1ₙ = n is the axiom ``ones_inner``
  (side condition: the run is 1ₙᵀ then 1ₙ, of one length);
- ``derive.diag(v)`` is the diagonal matrix of a column v (side condition of its definedness: v is k×1 as written);
  it is diagonal and symmetric (so diag(v)ᵀ = diag(v) is ``transpose_symmetric``), invertible where every entry of v
  is shown non-zero — a hypothesis ``Q.invertible(diag(v))``, or v = c·1 with c ≠ 0 (``_diag_invertible``) — and
  positive definite by a hypothesis ``Q.positive_definite(diag(v))``.

Each: explicit matrices, refusals, the witness's evaluation, LaTeX, certificates (round trip in a fresh process,
tampered ones refused), exact-type validation (forged nodes refused), the slips of ``derive.fuzz.unsound`` accepting
a false statement, and the demo file ``tests/data/user_constructs.py`` proved by ``.auto``.
"""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
import sympy
from sympy import Identity, Matrix, MatrixSymbol, Q, Rational, S, Symbol, eye, ones, srepr

import derive
from derive import dim, index, scalar
from derive.authoring.registry import checked, load_library
from derive.certificates import certificate_text
from derive.certificates.format import CertificateError, verify_certificate
from derive.certificates.srepr_parser import ParseError, parse_srepr
from derive.fuzz import run
from derive.fuzz.unsound import reverted
from derive.kernel import AXIOMS, Chain, Definition, Hypothesis, Proof, ProofError, Step, check, rewrites
from derive.kernel.checking import theorem_context
from derive.kernel.judgments import check_defined, diagonal, invertible, positive_definite, symmetric
from derive.kernel.terms import Diag, Ones, TermError, add, canon, diag, inv, mul, power, transpose
from derive.latex.printer import math
from derive.witness import check_instances, evaluate

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
n, p = dim("n"), dim("p")
t = index("t")
lam, mu = scalar("lam", positive=True), scalar("mu")
v, w, X = MatrixSymbol("v", n, 1), MatrixSymbol("w", n, 1), MatrixSymbol("X", n, p)
one = derive.ones(n)


def pred(name, predicate, subject) -> Hypothesis:
    return Hypothesis(name, predicate(subject), S.true)


def context(*hypotheses):
    return theorem_context(Proof("ctx", "t", "t", tuple(hypotheses), (), (),
                                 Chain("main", Identity(1), Identity(1), ())))


def accepted(proof: Proof) -> bool:
    try:
        check(proof)
    except ProofError:
        return False
    return True


def chain_proof(lhs, steps, hypotheses=(), definitions=(), name="constructs") -> Proof:
    rhs = steps[-1].expr if steps else lhs
    return Proof(name, "t", "t", tuple(hypotheses), tuple(definitions), (), Chain("main", lhs, rhs, tuple(steps)))


@pytest.fixture(scope="module")
def demo():
    """The theorems of tests/data/user_constructs.py, checked (unregistered after this module)."""
    return {theorem_id: checked(theorem_id) for theorem_id in load_library(str(DATA / "user_constructs.py"))}


# --- the ones vector ----------------------------------------------------------------------------------------


def test_ones_is_a_public_constructor_of_a_leaf():
    assert type(one) is Ones and one.shape == (n, S.One) and derive.diag(v) == Diag(v)
    assert canon(one) is one and canon(transpose(one)) == transpose(one)
    assert one.free_symbols == {n}


def test_ones_inner_on_explicit_matrices():
    """1ₙᵀ1ₙ = n for n = 1, …, 4, as the witness evaluates it (and an empty sum, 0, for an index at 0: below)."""
    for size in range(1, 5):
        assert ones(size, 1).T * ones(size, 1) == Matrix([[size]])
        assert evaluate(mul(transpose(one), one), {}, {n: size}) == Matrix([[size]])
        assert evaluate(one, {}, {n: size}) == ones(size, 1)


def test_ones_inner_rewrites_exactly_the_inner_product_of_ones():
    ctx = context()
    assert [r for _, r in rewrites(canon(mul(transpose(one), one)), AXIOMS["ones_inner"], ctx)] == \
        [canon(mul(n, Identity(1)))]
    inside = canon(mul(one, transpose(one), one, transpose(one)))  # 1(1ᵀ1)1ᵀ = n·11ᵀ
    assert canon(mul(n, one, Identity(1), transpose(one))) in [r for _, r in rewrites(inside, AXIOMS["ones_inner"],
                                                                                         ctx)]
    for term in (mul(transpose(v), one), mul(one, transpose(one)), mul(transpose(one), v)):  # vᵀ1, 11ᵀ, 1ᵀv: no
        assert not list(rewrites(canon(term), AXIOMS["ones_inner"], ctx))
    ones_t = derive.ones(t)  # an index may be 0: 1₀ᵀ1₀ = 0 = 0·I₁
    assert [r for _, r in rewrites(canon(mul(transpose(ones_t), ones_t)), AXIOMS["ones_inner"], ctx)] == \
        [canon(mul(t, Identity(1)))]


def test_the_centring_matrix_on_explicit_matrices():
    for size in (1, 2, 4):
        centring = eye(size) - ones(size, size) / size
        assert centring * centring == centring and centring * ones(size, 1) == sympy.zeros(size, 1)


def test_a_ones_vector_of_a_size_that_is_not_a_dimension_is_refused():
    with pytest.raises(TermError, match="dimension"):
        check_defined(Ones(lam), context())
    with pytest.raises(TermError, match="dimension"):
        check_defined(Ones(n - 5), context())


# --- diag(v) ------------------------------------------------------------------------------------------------


def test_diag_judgments():
    ctx = context()
    d = diag(v)
    assert diagonal(d, ctx) and symmetric(d, ctx)
    assert diagonal(inv(diag(mul(2, one))), ctx) and diagonal(power(d, 2), ctx)
    assert not invertible(d, ctx) and not positive_definite(d, ctx)
    assert invertible(d, context(pred("v_nonzero", Q.invertible, d)))
    assert positive_definite(d, context(pred("v_positive", Q.positive_definite, d)))
    assert invertible(diag(one), ctx) and invertible(diag(mul(-3, one)), ctx) and invertible(diag(mul(lam, one)), ctx)
    assert not invertible(diag(mul(mu, one)), ctx) and not invertible(diag(mul(t, one)), ctx)
    assert invertible(diag(mul(mu, one)), context(pred("mu_nonzero", Q.nonzero, mu)))
    assert [r for _, r in rewrites(canon(transpose(d)), AXIOMS["transpose_symmetric"], ctx)] == [d]


def test_diag_on_explicit_matrices():
    """diag(v) is diagonal and symmetric; invertible exactly when every entry is non-zero; diag(c·1) = cI."""
    rng = random.Random(41)
    for size in (1, 3, 4):
        entries = [Rational(rng.choice((-3, -1, 1, 2)), rng.randint(1, 3)) for _ in range(size)]
        value = evaluate(diag(v), {v: Matrix(entries)}, {n: size})
        assert value == sympy.diag(*entries) and value.T == value and value.det() != 0
        assert evaluate(diag(mul(lam, one)), {}, {n: size}, {lam: Rational(3, 2)}) == Rational(3, 2) * eye(size)
    assert sympy.diag(1, 0, 2).det() == 0  # one entry 0: singular (so invertibility needs its premise)


@pytest.mark.parametrize("argument", [MatrixSymbol("A", n, n), transpose(MatrixSymbol("u", n, 1)),
                                      MatrixSymbol("C", n, p)])
def test_diag_of_anything_but_a_column_is_refused(argument):
    with pytest.raises(TermError, match="column"):
        check_defined(Diag(argument), context())


def test_diag_of_a_symbolic_width_that_might_be_one_is_refused():
    with pytest.raises(TermError, match="column"):
        check_defined(Diag(MatrixSymbol("u", n, p)), context())


# --- the demo file -------------------------------------------------------------------------------------------


def test_the_demo_theorems_are_proved_by_auto_and_witnessed(demo):
    assert set(demo) == {"centring_idempotent", "centring_annihilates_ones", "hc0_sandwich_symmetric",
                         "weighted_is_gls", "constant_diagonal_inverse"}
    rules = {step.rule for theorem in demo.values() for step in theorem.proof.claim.steps}
    assert {"ones_inner", "transpose_symmetric"} <= rules
    for theorem in demo.values():
        assert check_instances(theorem.proof, trials=1).instances > 0


def test_the_hc0_sandwich_is_symmetric_on_explicit_matrices():
    rng = random.Random(3)
    x = Matrix(5, 2, lambda i, j: Rational(rng.randint(-3, 3), rng.randint(1, 2)))
    e = Matrix(5, 1, lambda i, j: Rational(rng.randint(-3, 3), 1))
    bread = (x.T * x).inv()
    sandwich = bread * x.T * sympy.diag(*e) * x * bread
    assert sandwich.T == sandwich


def test_latex():
    centring = add(Identity(n), mul(-1 / n, one, transpose(one)))
    assert math(centring) == r"I - \frac{1}{n} \mathbf{1}_{n} \mathbf{1}_{n}^{\top}"
    assert math(mul(transpose(one), inv(diag(v)), one)) == \
        r"\mathbf{1}_{n}^{\top} \operatorname{diag}(v)^{-1} \mathbf{1}_{n}"


# --- certificates and the one gate ---------------------------------------------------------------------------


def test_the_demo_certificates_check_in_a_fresh_process(demo, tmp_path):
    for theorem_id, theorem in demo.items():
        data = json.loads(certificate_text(theorem))
        assert verify_certificate(data).digest == theorem.digest
        (tmp_path / f"{theorem_id}.json").write_text(json.dumps(data))
    done = subprocess.run([sys.executable, "-m", "derive", "check", *map(str, sorted(tmp_path.glob("*.json")))],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 certificates: 5 verified" in done.stdout


def _tampered(data: dict, old: str, new: str) -> dict:
    out = copy.deepcopy(data)
    out.pop("sha256")
    text = json.dumps(out).replace(json.dumps(old)[1:-1], json.dumps(new)[1:-1])
    assert text != json.dumps(out), old
    return json.loads(text)


def test_tampered_certificates_of_the_new_constructs_are_refused(demo):
    centring = json.loads(certificate_text(demo["centring_idempotent"]))
    size = srepr(n)
    # the ones vector of another length in the definition of C (1ₙ1ₚᵀ: shapes no longer fit)
    other = _tampered(centring, f"Ones({size}), Transpose(Ones({size}))", f"Ones({size}), Transpose(Ones({srepr(p)}))")
    with pytest.raises(CertificateError):
        verify_certificate(other)
    # C := I − (2/n)11ᵀ: the claim C² = C is then false, and no chain proves it
    false = _tampered(centring, "Pow(Symbol('n', integer=True, positive=True), Integer(-1))",
                      "Mul(Integer(2), Pow(Symbol('n', integer=True, positive=True), Integer(-1)))")
    with pytest.raises(CertificateError):
        verify_certificate(false)
    weighted = json.loads(certificate_text(demo["weighted_is_gls"]))
    dropped = copy.deepcopy(weighted)
    dropped.pop("sha256")
    dropped["hypotheses"] = [h for h in dropped["hypotheses"] if "Diag" not in h["lhs"] or "MatMul" in h["lhs"]]
    with pytest.raises(CertificateError, match="invertible"):
        verify_certificate(dropped)
    # diag of another vector in the hypothesis: diag(w) is then not known invertible
    swapped = _tampered(weighted, "AppliedPredicate(Q.invertible, Diag(MatrixSymbol(Str('w')",
                        "AppliedPredicate(Q.invertible, Diag(MatrixSymbol(Str('y')")
    with pytest.raises(CertificateError):
        verify_certificate(swapped)


@pytest.mark.parametrize("text", [
    "Ones(Symbol('lam', positive=True))",
    "Ones(Integer(2), Integer(1))",
    "Diag(MatrixSymbol(Str('v'), Integer(2), Integer(1)), Integer(1))",
    "Diag(Symbol('n', integer=True, positive=True))",
    "AppliedPredicate(Q.nonzero, MatrixSymbol(Str('A'), Integer(2), Integer(2)))",
])
def test_the_certificate_parser_refuses_malformed_constructs(text):
    with pytest.raises(ParseError):
        parse_srepr(text)


def test_the_certificate_parser_reads_the_constructs_back():
    for term in (one, transpose(one), Diag(v), Diag(mul(lam, one)), Q.nonzero(lam - 1)):
        assert parse_srepr(srepr(term)) == term


class _Ones(Ones):
    """A forged ones vector: claims a shape it does not have."""

    @property
    def shape(self):
        return S(2), S.One


class _Diag(Diag):
    """A forged diag: equal to anything."""

    def __eq__(self, other):
        return True

    __hash__ = Diag.__hash__


@pytest.mark.parametrize("forged", [_Ones(n), _Diag(v)])
def test_a_subclass_of_a_new_node_is_refused_at_the_gate(forged):
    proof = chain_proof(mul(transpose(forged), forged) if forged.shape[1] == 1 else forged, [])
    with pytest.raises(ProofError, match="not a matrix term the kernel knows"):
        check(proof)


def test_a_malformed_diag_or_ones_built_by_hand_is_refused():
    from sympy import Basic

    two = Basic.__new__(Diag, v, v)  # two arguments
    with pytest.raises(ProofError):
        check(chain_proof(two, []))
    bad = Basic.__new__(Ones, lam)
    with pytest.raises(ProofError):
        check(chain_proof(mul(transpose(bad), bad), []))


# --- wrong proofs and the slips ------------------------------------------------------------------------------

FALSE = {
    # vᵀ1ₙ is the sum of v's entries, not n
    "ones_inner": chain_proof(mul(transpose(v), one), [Step(mul(n, Identity(1)), "ones_inner")], name="ones"),
    # diag of a square matrix has no value
    "diag_column": chain_proof(transpose(Diag(MatrixSymbol("A", n, n))), [Step(Diag(MatrixSymbol("A", n, n)),
                                                                               "transpose_symmetric")], name="column"),
    # diag(t·1)⁻¹ has no value at t = 0
    "diag_invertible": chain_proof(
        mul(inv(MatrixSymbol("D", n, n)), MatrixSymbol("D", n, n)), [Step(Identity(n), "inverse_cancel")],
        definitions=[Definition("D", MatrixSymbol("D", n, n), diag(mul(t, one)))], name="diag"),
}


@pytest.mark.parametrize("hole", sorted(FALSE))
def test_without_its_side_condition_the_rule_accepts_a_false_statement(hole):
    assert not accepted(FALSE[hole])
    with reverted(hole):
        assert accepted(FALSE[hole])
    assert not accepted(FALSE[hole])


def test_the_false_statements_are_false_on_explicit_values():
    assert (Matrix([1, 2]).T * ones(2, 1))[0, 0] == 3 != 2  # vᵀ1 = 3, n = 2
    assert sympy.diag(0, 0).det() == 0  # diag(t·1) at t = 0


@pytest.mark.slow
@pytest.mark.parametrize("hole", ["ones_inner", "diag_invertible", "diag_column"])
def test_the_fuzzer_finds_the_slip_when_it_is_put_back(hole, tmp_path):
    from tests.test_fuzz import HOLE_SEEDS

    with reverted(hole):
        report = run(HOLE_SEEDS[hole], 12, mutants=2, samples=2, focus={hole}, stop_at=hole, out=tmp_path)
    assert hole in report.first, report.summary()


def test_wrong_proofs_with_the_new_constructs_are_refused():
    ctx_hyps = [pred("gram", Q.invertible, mul(transpose(X), X))]
    # 11ᵀ is not n·I
    assert not accepted(chain_proof(mul(one, transpose(one)), [Step(mul(n, Identity(n)), "ones_inner")]))
    # diag(v)⁻¹ without every entry non-zero
    assert not accepted(chain_proof(mul(inv(diag(v)), diag(v)), [Step(Identity(n), "inverse_cancel")]))
    # diag(v) diag(w) = diag(w) diag(v) is true, but no rule gives it: refused, not assumed
    assert not accepted(chain_proof(mul(diag(v), diag(w)), [Step(mul(diag(w), diag(v)), "transpose_symmetric")]))
    # diag(v)ᵀ = diag(w)
    assert not accepted(chain_proof(transpose(diag(v)), [Step(diag(w), "transpose_symmetric")], ctx_hyps))
    # 1ᵀ1 = (n + 1)
    assert not accepted(chain_proof(mul(transpose(one), one), [Step(mul(n + 1, Identity(1)), "ones_inner")]))
    assert accepted(chain_proof(mul(transpose(one), one), [Step(mul(n, Identity(1)), "ones_inner")]))


def test_an_index_sized_ones_vector_is_empty_at_zero():
    tt = Symbol("tt", integer=True, nonnegative=True)
    assert accepted(chain_proof(mul(transpose(derive.ones(tt)), derive.ones(tt)),
                                [Step(mul(tt, Identity(1)), "ones_inner")]))
    assert evaluate(mul(transpose(derive.ones(tt)), derive.ones(tt)), {}, {tt: 0}) == sympy.zeros(1, 1)


def test_false_near_misses_with_the_constructs_get_a_verified_counterexample():
    """A wrong centring coefficient, diag(w)⁻¹ read as diag(w), and σ² kept inside an inverse: .auto refuses each and
    the refuter (issue 41, item 1) evaluates the new constructs to give a counterexample."""
    from derive import Definition as Def
    from derive import ProofBuilder

    C, y = MatrixSymbol("C", n, n), MatrixSymbol("y", n, 1)
    sigma = scalar("sigma", positive=True)
    gram = mul(transpose(X), X)
    wrong = ProofBuilder("wrong_centring", "t", "t", [], [Def("C", C, add(Identity(n), mul(-2, 1 / n, one,
                                                                                           transpose(one))))])
    inverse = ProofBuilder("wrong_diag", "t", "t", [pred("w", Q.invertible, diag(w))])
    scaled = ProofBuilder("wrong_scale", "t", "t", [pred("g", Q.invertible, gram)])
    for chain, rhs in ((wrong.main(mul(C, C)), C), (inverse.main(mul(inv(diag(w)), y)), mul(diag(w), y)),
                       (scaled.main(mul(inv(mul(sigma ** 2, gram)), transpose(X), y)),
                        mul(sigma ** 2, inv(gram), transpose(X), y))):
        with pytest.raises(ProofError) as info:
            chain.auto(rhs)
        verdict = info.value.counterexample
        assert verdict is not None and verdict.is_false, str(info.value)
