"""Definedness that follows (issue 41, item 3).

- c·M is invertible when M = A₁⋯A_r is and c ≠ 0, whatever the shapes of M's factors (σ²XᵀX from XᵀX), inside
  products and inverses, after unfolding (XᵀΣ⁻¹X with Σ = σ²I); ``inverse_product`` takes the coefficient alone
  out, (cM)⁻¹ = c⁻¹M⁻¹, and ``.auto`` uses it;
- a scalar fact Q.nonzero(c) (σ ≠ 0 for a σ of unknown sign, 1 + xᵀPx ≠ 0) narrows the sign of c itself, up to a
  rational factor, and nothing that merely contains c;
- when definedness fails, the message says which hypothesis would make it follow.

Each rule: shown on explicit matrices, refused without its premise, and — put back without its side condition by
``derive.fuzz.unsound`` — accepting a false statement, which the fuzzer finds.
"""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from sympy import Identity, Matrix, MatrixSymbol, Q, Rational, S, Trace, eye, srepr, zeros

from derive import dim, index, scalar
from derive.authoring.registry import checked, load_library
from derive.certificates import certificate_text
from derive.certificates.format import CertificateError, verify_certificate
from derive.fuzz import run
from derive.fuzz.unsound import reverted
from derive.kernel import AXIOMS, Chain, Definition, Hypothesis, Proof, ProofError, Step, check, rewrites
from derive.kernel.checking import theorem_context
from derive.kernel.judgments import NONZERO, invertible, sign
from derive.kernel.terms import add, canon, inv, mul, transpose
from derive.witness import check_instances

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
n, p = dim("n"), dim("p")
t = index("t")
X, y, Sigma = MatrixSymbol("X", n, p), MatrixSymbol("y", n, 1), MatrixSymbol("Sigma", n, n)
A = MatrixSymbol("A", p, p)
G = mul(transpose(X), X)
sigma, lam = scalar("sigma", positive=True), scalar("lam", positive=True)
s, mu = scalar("s"), scalar("mu")  # of unknown sign


def pred(name, predicate, subject) -> Hypothesis:
    return Hypothesis(name, predicate(subject), S.true)


GRAM = pred("gram", Q.invertible, G)


def context(*hypotheses):
    return theorem_context(Proof("ctx", "t", "t", tuple(hypotheses), (), (), Chain("main", Identity(1),
                                                                                  Identity(1), ())))


def cancel(matrix, hypotheses=(), name="cancel") -> Proof:
    """D⁻¹D = I for D := M, in one ``inverse_cancel``: it checks exactly when M is judged invertible (D a symbol, so
    that no coefficient of M is moved out of the product)."""
    size = matrix.shape[0]
    D = MatrixSymbol("D", size, size)
    return Proof(name, "t", "t", tuple(hypotheses), (Definition("D", D, matrix),), (),
                 Chain("main", mul(inv(D), D), Identity(size), (Step(Identity(size), "inverse_cancel"),)))


def accepted(proof: Proof) -> bool:
    try:
        check(proof)
    except ProofError:
        return False
    return True


def rational(rng, rows, cols) -> Matrix:
    return Matrix(rows, cols, lambda i, j: Rational(rng.randint(-4, 4), rng.randint(1, 3)))


@pytest.fixture(scope="module")
def demo():
    """The theorems of tests/data/user_scaled.py, checked (unregistered after this module: tests/conftest.py)."""
    return {theorem_id: checked(theorem_id) for theorem_id in load_library(str(DATA / "user_scaled.py"))}


# --- c·M invertible from M invertible and c ≠ 0 -----------------------------------------------------------------


def test_a_scaled_product_is_invertible_on_explicit_matrices():
    """det(cM) = cᵏ det M: σ²XᵀX is invertible exactly when XᵀX is and σ ≠ 0 (σ = 0, or X of rank < p, singular)."""
    rng = random.Random(41)
    for rows, cols, c in ((4, 2, Rational(3, 2)), (5, 3, Rational(-2, 3)), (3, 3, 7)):
        x = rational(rng, rows, cols)
        while (x.T * x).det() == 0:
            x = rational(rng, rows, cols)
        assert (c * x.T * x).det() == c ** cols * (x.T * x).det() != 0
        assert ((c * x.T * x).inv() - (x.T * x).inv() / c) == zeros(cols, cols)  # (cM)⁻¹ = c⁻¹M⁻¹
    assert (0 * x.T * x).det() == 0
    rank_one = Matrix([[1, 2], [2, 4], [3, 6]])
    assert (5 * rank_one.T * rank_one).det() == 0


def test_the_judgment_takes_a_non_zero_coefficient_out():
    ctx = context(GRAM)
    assert invertible(mul(sigma ** 2, G), ctx) and invertible(mul(1 / n, G), ctx) and invertible(mul(-3, G), ctx)
    assert not invertible(mul(s ** 2, G), ctx)  # s of unknown sign: s² may be 0
    assert not invertible(mul(t, G), ctx)  # an index may be 0
    assert not invertible(mul(sigma ** 2, G), context())  # XᵀX not known invertible
    assert invertible(mul(s ** 2, G), context(GRAM, pred("s_nonzero", Q.nonzero, s)))
    assert not invertible(mul(s ** 2, G), context(pred("s_nonzero", Q.nonzero, s)))


def test_inside_products_inverses_and_after_unfolding():
    """(σ²XᵀX)⁻¹ inside a product and an inverse; Xᵀ(σ²I)X with the identity dropped; XᵀΣ⁻¹X with Σ = σ²I (it
    unfolds to σ⁻²XᵀX); the same with s² for s ≠ 0 a scalar fact, refused without it."""
    spherical = Hypothesis("spherical", Sigma, mul(sigma ** 2, Identity(n)))
    assert accepted(cancel(mul(transpose(X), mul(sigma ** 2, Identity(n)), X), [GRAM]))
    assert accepted(cancel(mul(transpose(X), inv(Sigma), X), [spherical, GRAM]))
    assert accepted(cancel(inv(mul(sigma ** 2, G)), [GRAM]))
    scaled = Hypothesis("scaled", Sigma, mul(s ** 2, Identity(n)))
    assert not accepted(cancel(mul(transpose(X), inv(Sigma), X), [scaled, GRAM]))
    assert accepted(cancel(mul(transpose(X), inv(Sigma), X), [scaled, GRAM, pred("s_nonzero", Q.nonzero, s)]))
    assert not accepted(cancel(mul(transpose(X), inv(Sigma), X), [spherical]))


def test_inverse_product_takes_the_coefficient_out_of_a_product_of_non_square_factors():
    ctx = context(GRAM)
    term = canon(inv(mul(sigma ** 2, G)))
    results = [r for _, r in rewrites(term, AXIOMS["inverse_product"], ctx)]
    assert results == [canon(mul(sigma ** -2, inv(G)))]
    assert not list(rewrites(term, AXIOMS["inverse_product"], context()))  # XᵀX not shown invertible
    unknown = canon(inv(mul(s ** 2, G)))
    assert not list(rewrites(unknown, AXIOMS["inverse_product"], ctx))  # s² not shown non-zero
    # square invertible factors: the full split, as before (one result)
    square = canon(inv(mul(2, A, A)))
    assert [r for _, r in rewrites(square, AXIOMS["inverse_product"], context(pred("A", Q.invertible, A)))] == \
        [canon(mul(Rational(1, 2), inv(A), inv(A)))]


def test_inverse_product_without_its_side_condition_still_proves_nothing_false(monkeypatch):
    """The coefficient taken out without c ≠ 0 or M invertible: every expression of a chain must be defined, and
    c⁻¹M⁻¹ is defined exactly where the side condition holds, so the definedness check refuses what the rule lets
    through (the side condition is kept as a second line of defence)."""
    def unconditional(term, ctx):
        if type(term).__name__ == "Inverse" and type(term.args[0]).__name__ == "MatMul":
            coeff, mats = term.args[0].args[0], term.args[0].args[1:]
            return [mul(1 / coeff, inv(mul(*mats)))]
        return []

    unconditional.runs = AXIOMS["inverse_product"].runs
    monkeypatch.setitem(AXIOMS, "inverse_product", unconditional)
    claim = Chain("main", mul(inv(mul(t, G)), transpose(X), y), mul(1 / t, inv(G), transpose(X), y),
                  (Step(mul(1 / t, inv(G), transpose(X), y), "inverse_product"),))
    with pytest.raises(ProofError, match="invertible|not zero"):
        check(Proof("no_side_condition", "t", "t", (GRAM,), (), (), claim))


# --- the targets: GLS with Σ = σ²I, the Bayesian posterior, proved by .auto ----------------------------------


def test_the_demo_theorems_are_proved_by_auto_and_witnessed(demo):
    assert set(demo) == {"gls_spherical_is_ols", "gls_scaled_is_ols", "scaled_gram_inverse", "bayesian_posterior_mean",
                         "scalar_fact_denominator"}
    for theorem in demo.values():
        assert theorem.steps >= 1
        report = check_instances(theorem.proof, trials=1)
        assert report.instances > 0
    rules = {step.rule for theorem in demo.values() for step in theorem.proof.claim.steps}
    assert "inverse_product" in rules


def test_gls_spherical_on_explicit_matrices():
    """(XᵀΣ⁻¹X)⁻¹XᵀΣ⁻¹Y = (XᵀX)⁻¹XᵀY for Σ = σ²I: the claim of gls_spherical_is_ols, on numbers."""
    rng = random.Random(7)
    x, yy = rational(rng, 5, 2), rational(rng, 5, 3)
    for scale in (Rational(1, 2), 3):
        cov = scale ** 2 * eye(5)
        assert (x.T * cov.inv() * x).inv() * x.T * cov.inv() * yy == (x.T * x).inv() * x.T * yy


def test_the_demo_certificates_check_in_a_fresh_process(demo, tmp_path):
    for theorem_id, theorem in demo.items():
        data = json.loads(certificate_text(theorem))
        assert verify_certificate(data).digest == theorem.digest
        (tmp_path / f"{theorem_id}.json").write_text(json.dumps(data))
    done = subprocess.run([sys.executable, "-m", "derive", "check", *map(str, sorted(tmp_path.glob("*.json")))],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 certificates: 5 verified" in done.stdout


def test_a_certificate_without_its_scalar_fact_or_with_another_is_refused(demo):
    data = json.loads(certificate_text(demo["gls_scaled_is_ols"]))
    data.pop("sha256")
    dropped = copy.deepcopy(data)
    dropped["hypotheses"] = [h for h in dropped["hypotheses"] if "nonzero" not in h["lhs"]]
    with pytest.raises(CertificateError, match="not zero|invertible"):
        verify_certificate(dropped)
    other = copy.deepcopy(data)
    for h in other["hypotheses"]:
        if "nonzero" in h["lhs"]:
            h["lhs"] = srepr(Q.nonzero(s + 1))
    assert other != data
    with pytest.raises(CertificateError, match="not zero|invertible"):
        verify_certificate(other)


# --- scalar facts -------------------------------------------------------------------------------------------


def test_a_scalar_fact_narrows_its_subject_up_to_a_rational_factor_and_nothing_else():
    ctx = context(pred("f", Q.nonzero, 2 * s - 2))
    assert sign(s - 1, ctx) == NONZERO and sign(1 - s, ctx) == NONZERO and sign(3 * s - 3, ctx) == NONZERO
    assert 0 in sign(s, ctx) and 0 in sign(s - 2, ctx)
    ctx = context(pred("f", Q.nonzero, mu))
    assert sign(mu, ctx) == NONZERO and 0 in sign(mu + lam, ctx) and 0 in sign(mu - 1, ctx)
    x, P = MatrixSymbol("x", p, 1), MatrixSymbol("P", p, p)
    quadratic = Trace(mul(transpose(x), P, x)) + 1
    assert sign(quadratic, context(pred("f", Q.nonzero, quadratic))) == NONZERO


@pytest.mark.parametrize("subject, reason", [
    (A, "not a matrix"), (S(2), "number"), (1 / mu, "not zero"),
])
def test_a_scalar_fact_about_a_matrix_a_number_or_an_undefined_scalar_is_refused(subject, reason):
    proof = cancel(mul(2, A), [Hypothesis("f", Q.nonzero(subject), S.true), pred("A", Q.invertible, A)])
    with pytest.raises(ProofError, match=reason):
        check(proof)


def test_a_cited_theorem_with_a_scalar_fact_needs_it_to_hold():
    """A theorem under s ≠ 0 is cited only where s ≠ 0 is shown (a fact, or s's own sign), even when its claim would
    be defined without it."""
    cited = check(Proof("cited", "t", "t", (pred("s_nonzero", Q.nonzero, s),), (), (),
                        Chain("main", add(A, A), mul(2, A), (Step(mul(2, A), "collect"),))))
    B = MatrixSymbol("B", p, p)
    claim = Chain("main", add(B, B), mul(2, B), (Step(mul(2, B), "thm:cited", ((A, B),)),))
    with pytest.raises(ProofError, match="scalar fact s_nonzero of theorem cited does not hold"):
        check(Proof("citing", "t", "t", (), (), (), claim, (cited,)))
    assert check(Proof("citing", "t", "t", (pred("s_nonzero", Q.nonzero, s),), (), (), claim, (cited,)))
    assert check(Proof("citing", "t", "t", (pred("s_nonzero", Q.nonzero, 2 * s),), (), (), claim, (cited,)))


# --- which hypothesis would make it follow ------------------------------------------------------------------


def test_the_message_says_which_hypothesis_would_make_it_follow():
    spherical = Hypothesis("spherical", Sigma, mul(sigma ** 2, Identity(n)))
    with pytest.raises(ProofError) as info:
        check(cancel(mul(transpose(X), inv(Sigma), X), [spherical]))
    assert "is invertible if X.T*X is invertible and sigma ≠ 0; assume Q.invertible(X.T*X)" in str(info.value)
    with pytest.raises(ProofError) as info:
        check(cancel(mul(s ** 2, G), [GRAM]))
    assert "s**2*X.T*X is invertible if X.T*X is invertible and s ≠ 0; assume Q.nonzero(s)" in str(info.value)
    with pytest.raises(ProofError) as info:
        check(cancel(mul(1 / mu, A), [pred("A", Q.invertible, A)]))
    assert "cannot show that mu is not zero" in str(info.value) and "assume Q.nonzero(mu)" in str(info.value)


# --- each rule without its side condition accepts a false statement, and the fuzzer finds it ------------------

FALSE = {
    # (t·XᵀX)⁻¹ is undefined at t = 0
    "scaled_invertible": cancel(mul(t, G), [GRAM], "scaled"),
    # μ ≠ 0 says nothing about λ + μ: 1/(λ + μ) is undefined at μ = −λ
    "scalar_fact": Proof("fact", "t", "t", (pred("f", Q.nonzero, mu),), (), (),
                         Chain("main", add(mul(1 / (lam + mu), A), mul(1 / (lam + mu), A)), mul(2 / (lam + mu), A),
                               (Step(mul(2 / (lam + mu), A), "collect"),))),
}


@pytest.mark.parametrize("hole", sorted(FALSE))
def test_without_its_side_condition_the_rule_accepts_a_false_statement(hole):
    assert not accepted(FALSE[hole])
    with reverted(hole):
        assert accepted(FALSE[hole])
    assert not accepted(FALSE[hole])  # put back as it was


def test_the_false_statements_are_false_on_explicit_values():
    x = Matrix([[1, 0], [0, 1], [1, 1]])
    assert (0 * x.T * x).det() == 0  # t = 0: t·XᵀX is singular
    assert Rational(2) + Rational(-2) == 0  # λ = 2, μ = −2: 1/(λ + μ) has no value


@pytest.mark.parametrize("hole", ["scaled_invertible", "scalar_fact"])
def test_the_fuzzer_finds_the_slip_when_it_is_put_back(hole, tmp_path):
    from tests.test_fuzz import HOLE_SEEDS

    with reverted(hole):
        report = run(HOLE_SEEDS[hole], 12, mutants=2, samples=2, focus={hole}, stop_at=hole, out=tmp_path)
    assert hole in report.first, report.summary()
