"""Index powers γ^t in coefficients (issue 41 item 4) and decayed linear attention (issue 42), by induction.

- the coefficient normal form: γ^{t+1} = γ·γ^t, γ^a γ^b = γ^{a+b}, γ^t/γ^t = 1, γ^0 = 1 where t is instantiated;
- the side condition: γ^e with an exponent that may be negative (γ^{−t}, γ^{t−1}) needs γ shown non-zero (a positive
  scalar, a scalar hypothesis that narrows it, a scalar fact Q.nonzero(γ)); the signs of γ^e;
- the exact-type validation accepts exactly γ^(k·t + c) (γ a scalar symbol, t index symbols, integers of at most 64)
  and refuses forged variants (a float exponent, a dimension or scalar exponent, huge integers, t², a number base);
- ``tests/data/user_decay.py``: the recurrent state S_{t+1} = γS_t + v_{t+1}k_{t+1}ᵀ from a handed-over S₀ equals the
  closed form γ^tS₀ + V_tᵀW_t (any real γ) and the factored form γ^t(S₀ + V_tᵀK_t) (γ > 0), by ``.auto``;
- wrong proofs and forged certificates refused; the witness evaluates γ^t exactly; LaTeX prints \\gamma^{t}; the
  fuzzer writes index powers and finds the side condition dropped (``derive.fuzz.unsound``'s ``index_power``).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from sympy import Add, Float, Integer, Matrix, MatrixSymbol, Pow, Q, Rational, S, ZeroMatrix
from sympy.matrices.expressions import MatMul

from derive import Hypothesis, ProofBuilder, add, block, dim, family, index, mul, predicate, scalar, transpose
from derive.authoring.registry import checked, load_library
from derive.certificates import certificate_text
from derive.kernel import Chain, Family, Induction, Proof, ProofError, Step, check
from derive.kernel.checking import theorem_context
from derive.kernel.judgments import NONNEGATIVE, POSITIVE, UNKNOWN, sign
from derive.kernel.scalars import canon_coefficient, index_exponent
from derive.kernel.terms import FamilyMatrix, TermError, canon
from derive.witness.evaluate import UndefinedValue, evaluate

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
p, d = dim("p"), dim("d")
t, s = index("t"), index("s")
gamma, eta = scalar("gamma"), scalar("eta", positive=True)  # of unknown sign; positive
A = MatrixSymbol("A", p, p)


@pytest.fixture(scope="module")
def demo():
    """The two theorems of tests/data/user_decay.py, checked (unregistered after this module: tests/conftest.py)."""
    return {theorem_id: checked(theorem_id) for theorem_id in load_library(str(DATA / "user_decay.py"))}


def _proof(claim: Chain, hypotheses=(), families=(), lemmas=()) -> Proof:
    return Proof("decay", "t", "t", tuple(hypotheses), (), tuple(lemmas), claim, (), tuple(families))


def _chain(lhs, rhs, *steps) -> Chain:
    return Chain("main", lhs, rhs, tuple(steps))


# --- the normal form ----------------------------------------------------------------------------------------------


def test_the_normal_form_knows_the_algebra_of_index_powers():
    same = [
        (gamma * gamma**t, gamma**(t + 1)),  # γ^{t+1} = γ·γ^t
        (gamma**t * gamma**s, gamma**(t + s)),  # γ^a γ^b = γ^{a+b}
        (gamma**(2 * t) * gamma**(-t) * eta, gamma**t * eta),
        (gamma**(t + 1) / gamma, gamma**t),
        ((gamma**t + 1) ** 2, gamma**(2 * t) + 2 * gamma**t + 1),
        (gamma**t / (gamma * gamma**t + gamma**t), 1 / (gamma + 1)),
        (eta**(-t - 1) * eta**(t + 1), S.One),
    ]
    for a, b in same:
        assert canon_coefficient(a) == canon_coefficient(b), (a, b)
        assert canon(mul(a, A)) == canon(mul(b, A))
    for a, b in ((gamma**(t + 1), gamma**t), (gamma**t, gamma**s), (gamma**(2 * t), gamma**t * gamma),
                 (gamma**t, eta**t), (gamma**(-t), gamma**t)):
        assert canon_coefficient(a) != canon_coefficient(b), (a, b)
    for c in (gamma**(3 * t + 2), gamma**(t - 1), 1 / (gamma**t + 1), eta**(-t) * (eta + 1), gamma**s * gamma**t):
        once = canon_coefficient(c)
        assert canon_coefficient(once) == once  # the normal form is its own normal form


def test_gamma_to_the_zero_is_one_where_the_index_is_instantiated():
    term = mul(gamma**t, A)
    assert canon(term.xreplace({t: 0})) == A  # SymPy's γ**0 = 1 (0⁰ = 1 too), as the kernel's meaning has it
    assert canon(term.xreplace({t: t + 1})) == canon(mul(gamma, gamma**t, A))


def test_index_exponents_have_one_form():
    assert index_exponent(t) == (0, ((t, 1),))
    assert index_exponent(-t - 1) == (-1, ((t, -1),))
    assert index_exponent(2 * t + s + 3) == (3, ((s, 1), (t, 2)))
    n, lam = dim("n"), scalar("lam")
    for bad in (Integer(3), n, lam, t**2, t / 2, t + Rational(1, 2), t + 65, 65 * t, t + n,
                sum(index(x) for x in "abcde")):
        assert index_exponent(bad) is None, bad


# --- the side condition and the signs --------------------------------------------------------------------------


def _accepted(coefficient, hypotheses=()) -> bool:
    term = mul(coefficient, A)
    try:
        check(_proof(_chain(term, term), hypotheses))
    except ProofError:
        return False
    return True


def test_a_power_that_may_be_negative_needs_its_base_shown_non_zero():
    for natural in (gamma**t, gamma**(t + 1), gamma**(2 * t + 3), gamma**(t + s), 1 / (gamma**(2 * t) + 1)):
        assert _accepted(natural), natural  # 0⁰ = 1: defined for every real γ and natural t
    for negative in (gamma**(-t), gamma**(t - 1), gamma**(t - s), 1 / (gamma * gamma**t), 1 / (gamma**t + 1)):
        assert not _accepted(negative), negative  # γ may be 0 (or γ^t may be −1)
    for positive in (eta**(-t), eta**(t - 1), 1 / (eta**t + 1), eta**(-2 * t - 3)):
        assert _accepted(positive), positive
    with pytest.raises(ProofError, match="cannot show that gamma is not zero"):
        check(_proof(_chain(mul(gamma**(-t), A), mul(gamma**(-t), A))))


def test_a_scalar_hypothesis_or_fact_gives_gamma_non_zero():
    mu = scalar("mu")
    assert _accepted(gamma**(-t), [Hypothesis("gamma_def", gamma, mu**2 + 1)])
    assert not _accepted(gamma**(-t), [Hypothesis("gamma_def", gamma, mu**2)])  # μ may be 0
    assert _accepted(gamma**(-t), [predicate("gamma_nonzero", Q.nonzero, gamma)])


def test_signs_of_index_powers():
    ctx = theorem_context(_proof(_chain(A, A)))
    assert sign(eta**t, ctx) == POSITIVE and sign(eta**(-t), ctx) == POSITIVE
    assert sign(gamma**(2 * t), ctx) == NONNEGATIVE  # (γ²)^t, 0 at γ = 0 (t > 0)
    assert sign(gamma**(2 * t) + 1, ctx) == POSITIVE
    assert sign(gamma**t, ctx) == UNKNOWN
    assert 0 in sign(gamma**(t + 1), ctx) and 0 in sign(gamma**t, ctx)


def test_a_scalar_hypothesis_rewrites_inside_an_index_power():
    mu = scalar("mu")
    for value, target, ok in ((mu, mu**t, True), (mu**2, mu**(2 * t), True), (mu + 1, mu**t, False),
                              (Integer(2), gamma**t, False)):
        step = Step(mul(target, A), "hyp:gamma_def")
        proof = _proof(_chain(mul(gamma**t, A), mul(target, A), step), [Hypothesis("gamma_def", gamma, value)])
        if ok:
            check(proof)
        else:
            with pytest.raises(ProofError):
                check(proof)


# --- the exact-type validation ---------------------------------------------------------------------------------


FORGED = {
    "a float exponent": Pow(gamma, Float(1.5)),
    "a float in the exponent": Pow(gamma, Add(t, Float(0.5), evaluate=False), evaluate=False),
    "a dimension exponent": Pow(gamma, dim("n")),
    "a scalar exponent": Pow(gamma, scalar("lam")),
    "a huge constant": Pow(gamma, t + 100),
    "a huge multiple": Pow(gamma, 100 * t),
    "t squared": Pow(gamma, t**2),
    "t halved": Pow(gamma, t / 2),
    "a number base": Pow(Integer(2), t, evaluate=False),
    "a dimension base": Pow(dim("n"), t),
    "a sum base": Pow(gamma + 1, t),
    "five index symbols": Pow(gamma, sum(index(x) for x in "abcde")),
    "a big integer": Pow(gamma, Add(t, Integer(10**400), evaluate=False), evaluate=False),
}


@pytest.mark.parametrize("what", sorted(FORGED))
def test_forged_index_powers_are_refused(what):
    term = MatMul(FORGED[what], A, evaluate=False)
    with pytest.raises(ProofError):
        check(_proof(_chain(term, term)))


def test_an_index_symbol_subclass_in_an_exponent_is_refused():
    from sympy import Symbol

    class Sneaky(Symbol):
        pass

    fake = Sneaky("t", integer=True, nonnegative=True)
    term = MatMul(Pow(gamma, fake), A, evaluate=False)
    with pytest.raises(ProofError):
        check(_proof(_chain(term, term)))
    with pytest.raises(TermError):
        mul(Pow(2, t), A)


# --- the demonstration: decayed linear attention ----------------------------------------------------------------


def test_the_decay_theorems_are_proved_by_auto(demo):
    assert set(demo) == {"decayed_prefix_sum", "decayed_attention_factored"}
    closed = demo["decayed_prefix_sum"].proof
    assert [lemma.name for lemma in closed.lemmas] == ["state_closed_form"]
    assert isinstance(closed.lemmas[0], Induction) and closed.lemmas[0].step  # base and step found by .auto
    assert gamma in closed.lemmas[0].rhs.free_symbols and t in closed.lemmas[0].rhs.free_symbols
    factored = demo["decayed_attention_factored"].proof
    assert [lemma.name for lemma in factored.lemmas] == ["decayed_keys_factored", "state_factored"]
    keys = next(f for f in factored.families if f.name == "K")  # its step divides by γ^{s+1}: γ > 0 is needed
    assert any(node.exp == -keys.index for node in keys.step.atoms(Pow)), keys.step


S0 = MatrixSymbol("S_0", d, p)


def _families(g):
    """The families of tests/data/user_decay.py (keys, values, value prefix V, decayed key prefix W, state S)."""
    kf, vf = family("k", (p, 1)), family("v", (d, 1))
    V = family("V", lambda i: (i, d)).recurrence(ZeroMatrix(0, d), lambda i: block([[V[i]], [transpose(vf[i + 1])]]))
    W = family("W", lambda i: (i, p)).recurrence(ZeroMatrix(0, p),
                                                 lambda i: block([[mul(g, W[i])], [transpose(kf[i + 1])]]))
    S_ = family("S", (d, p)).recurrence(S0, lambda i: add(mul(g, S_[i]), mul(vf[i + 1], transpose(kf[i + 1]))))
    return kf, vf, V, W, S_


def test_the_closed_form_holds_on_explicit_matrices():
    """S_t from the recurrence equals Σ_{i≤t} γ^{t−i} v_i k_iᵀ + γ^t S₀ = γ^t S₀ + V_tᵀW_t, with exact rationals."""
    rng = random.Random(3)
    dk, dv, T = 2, 3, 5
    for g in (Rational(1, 2), Rational(-3, 2), Integer(0)):
        keys = [Matrix(dk, 1, lambda i, j: Rational(rng.randint(-4, 4), rng.randint(1, 3))) for _ in range(T + 1)]
        values = [Matrix(dv, 1, lambda i, j: Rational(rng.randint(-4, 4), rng.randint(1, 3))) for _ in range(T + 1)]
        S0 = Matrix(dv, dk, lambda i, j: Rational(rng.randint(-4, 4), 1))
        state = S0
        for step in range(1, T + 1):
            state = g * state + values[step] * keys[step].T
            closed = g**step * S0 + sum((g**(step - i) * values[i] * keys[i].T for i in range(1, step + 1)),
                                        Matrix.zeros(dv, dk))
            W = Matrix.vstack(*[g**(step - i) * keys[i].T for i in range(1, step + 1)])
            V = Matrix.vstack(*[values[i].T for i in range(1, step + 1)])
            assert state == closed == g**step * S0 + V.T * W


def test_the_factored_form_needs_gamma_non_zero():
    """With γ of unknown sign the recurrence K_{s+1} = [K_s; γ^{−(s+1)}k_{s+1}ᵀ] divides by γ: its members are not
    shown defined, and the claim about them is refused."""
    kf, vf, V, W, S_ = _families(gamma)
    K = family("K", lambda i: (i, p)).recurrence(
        ZeroMatrix(0, p), lambda i: block([[K[i]], [mul(gamma ** (-(i + 1)), transpose(kf[i + 1]))]]))
    with pytest.raises(ProofError, match="K.t . 1. is defined"):
        b = ProofBuilder("factored_any_gamma", "t", "t", families=[kf, vf, V, W, K, S_])
        b.induction("decayed_keys_factored", t, W[t], mul(gamma ** t, K[t])).auto()
        check(b.proof())


def test_wrong_closed_forms_are_refused_with_a_counterexample():
    kf, vf, V, W, S_ = _families(gamma)
    wrong = (
        add(mul(gamma ** (t + 1), S0), mul(transpose(V[t]), W[t])),  # one decay too many
        add(mul(gamma ** t, S0), mul(gamma, transpose(V[t]), W[t])),  # the new token decayed too
        add(S0, mul(transpose(V[t]), W[t])),  # S₀ not decayed
    )
    for rhs in wrong:
        b = ProofBuilder("wrong_decay", "t", "t", families=[kf, vf, V, W, S_])
        with pytest.raises(ProofError) as caught:
            b.induction("state_closed_form", t, S_[t], rhs).auto()
        assert caught.value.counterexample is not None, rhs


def test_a_step_with_a_wrong_power_is_refused():
    """The induction step .auto wrote for S_t = γ^tS₀ + V_tᵀW_t checks; with γ^{t+2} for γ^{t+1} in its last
    expression, or that expression at t + 1, it does not."""
    kf, vf, V, W, S_ = _families(gamma)
    b = ProofBuilder("decay_hand", "t", "t", families=[kf, vf, V, W, S_])
    b.induction("state_closed_form", t, S_[t], add(mul(gamma ** t, S0), mul(transpose(V[t]), W[t]))).auto()
    b.main(S_[t]).rw("lemma:state_closed_form").qed()
    proof = b.proof()
    check(proof)
    lemma = proof.lemmas[0]
    last = lemma.step[-1].expr
    two_more = mul(gamma**(t + 2), S0)
    for bad in (add(two_more, *[a for a in last.args if not a.has(S0)]), canon(last.xreplace({t: t + 1}))):
        assert canon(bad) != canon(last)
        steps = list(lemma.step)
        steps[-1] = Step(bad, steps[-1].rule, steps[-1].instance)
        mutant = Induction(lemma.name, t, lemma.lhs, lemma.rhs, lemma.base, tuple(steps))
        with pytest.raises(ProofError):
            check(Proof(proof.theorem, proof.title, proof.statement, proof.hypotheses, proof.definitions, (mutant,),
                        proof.claim, proof.cites, proof.families))


def test_the_induction_may_not_use_gamma_to_the_t_in_a_hypothesis():
    """A scalar hypothesis ν = γ^t speaks about t: induction on t is refused (the step would reuse it at t + 1)."""
    nu = scalar("nu")
    x = Family("x", s, p, p)
    F = Family("F", s, p, p, A, add(FamilyMatrix("F", s, p, p), FamilyMatrix("x", s + 1, p, p)))
    lemma = Induction("ind", t, FamilyMatrix("F", t, p, p), FamilyMatrix("F", t, p, p), (), ())
    proof = _proof(_chain(A, A), [Hypothesis("nu_def", nu, gamma**t)], [x, F], [lemma])
    with pytest.raises(ProofError, match="speaks about t"):
        check(proof)


def test_a_recurrence_may_use_only_its_own_index_in_an_exponent():
    own = Family("F", s, p, p, A, mul(gamma**s, FamilyMatrix("F", s, p, p)))
    foreign = Family("F", s, p, p, A, mul(gamma**t, FamilyMatrix("F", s, p, p)))
    check(_proof(_chain(A, A), families=[own]))
    with pytest.raises(ProofError, match="index symbol t"):
        check(_proof(_chain(A, A), families=[foreign]))


# --- witness, LaTeX, certificates, Coq ---------------------------------------------------------------------------


def test_the_witness_evaluates_index_powers_exactly():
    value = Matrix([[1, 2], [3, 4]])
    for t_value, g, expected in ((0, 0, 1), (3, 2, 8), (2, Rational(-1, 2), Rational(1, 4)), (1, 0, 0)):
        out = evaluate(mul(gamma**t, A), {A: value}, {p: 2, t: t_value}, {gamma: g})
        assert out == expected * value
    assert evaluate(mul(gamma**(-t), A), {A: value}, {p: 2, t: 0}, {gamma: 0}) == value  # γ^0 = 1
    assert evaluate(mul(gamma**(t - 1), A), {A: value}, {p: 2, t: 3}, {gamma: 3}) == 9 * value
    with pytest.raises(UndefinedValue):
        evaluate(mul(gamma**(-t), A), {A: value}, {p: 2, t: 2}, {gamma: 0})


def test_the_witness_confirms_the_decay_theorems(demo):
    from derive.witness import witness_all

    for theorem in demo.values():
        summary = witness_all(theorem.proof)
        assert summary["instances"] > 0 and summary["steps"] > 0


def test_latex_prints_index_powers():
    from derive.latex.printer import math

    assert math(mul(gamma**t, A)) == "\\gamma^{t} A"
    assert math(mul(gamma, gamma**t, A)) == "\\gamma^{t + 1} A"
    assert math(mul(gamma**(-t), A)) == "\\frac{1}{\\gamma^{t}} A"
    assert math(mul(gamma**t, gamma**s, A)) == "\\gamma^{s + t} A"


def test_certificates_of_the_decay_theorems_check_in_a_fresh_process(demo, tmp_path):
    paths = []
    for theorem in demo.values():
        path = tmp_path / f"{theorem.id}.json"
        path.write_text(certificate_text(theorem))
        paths.append(str(path))
    assert "Pow(Symbol('gamma', real=True), Symbol('t', integer=True, nonnegative=True))" in Path(paths[0]).read_text()
    result = subprocess.run([sys.executable, "-I", "-m", "derive", "check", *paths], capture_output=True, text=True,
                            timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count(": verified ") == 2


GAMMA_T = "Pow(Symbol('gamma', real=True), Symbol('t', integer=True, nonnegative=True))"
FORGED_TEXT = {
    "a float exponent": "Pow(Symbol('gamma', real=True), Float('1.5', precision=53))",
    "a dimension exponent": "Pow(Symbol('gamma', real=True), Symbol('t', integer=True, positive=True))",
    "a scalar exponent": "Pow(Symbol('gamma', real=True), Symbol('t', real=True))",
    "a huge exponent": "Pow(Symbol('gamma', real=True), Add(Symbol('t', integer=True, nonnegative=True), "
                       "Integer(1000)))",
    "one more power": "Pow(Symbol('gamma', real=True), Add(Symbol('t', integer=True, nonnegative=True), Integer(1)))",
    "a number base": "Pow(Integer(2), Symbol('t', integer=True, nonnegative=True))",
}


@pytest.mark.parametrize("what", sorted(FORGED_TEXT))
def test_a_forged_index_power_in_a_certificate_is_rejected(demo, tmp_path, what):
    from derive.certificates.format import CertificateError, verify_certificate

    text = certificate_text(demo["decayed_prefix_sum"])
    data = json.loads(text)
    claim = data["lemmas"][0]["claim"]
    assert GAMMA_T in claim["rhs"]
    claim["rhs"] = claim["rhs"].replace(GAMMA_T, FORGED_TEXT[what])
    with pytest.raises((CertificateError, ProofError)):
        verify_certificate(data)


def test_a_forged_certificate_is_rejected_by_check_in_a_fresh_process(demo, tmp_path):
    data = json.loads(certificate_text(demo["decayed_prefix_sum"]))
    claim = data["lemmas"][0]["claim"]
    claim["rhs"] = claim["rhs"].replace(GAMMA_T, FORGED_TEXT["one more power"])
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(data))
    result = subprocess.run([sys.executable, "-I", "-m", "derive", "check", str(path)], capture_output=True, text=True,
                            timeout=300, cwd=ROOT)
    assert result.returncode != 0 and "REJECTED" in result.stdout


def test_the_coq_export_translates_index_powers(demo):
    """γ^t, γ^(t+1), γ^(-t), γ^(t+s) are translated (the demo theorems are exported; tests/test_coq_user.py
    compiles them and checks that what the export does not model is named, never sent to coqc)."""
    from derive.export.coq import export_certificates

    export = export_certificates([json.loads(certificate_text(theorem)) for theorem in demo.values()])
    assert set(export.exported) == set(demo) and not export.skipped
    term = mul(gamma**(t + s), A)
    plain = check(_proof(_chain(term, term)))
    single = export_certificates([json.loads(certificate_text(plain))])
    assert single.exported == ["decay"] and not single.skipped


# --- the fuzzer ---------------------------------------------------------------------------------------------------


def test_the_fuzzer_writes_index_powers_and_finds_nothing():
    from derive.fuzz import run
    from derive.fuzz.generate import INDEX_POWER, generate, index_powers

    for c in index_powers(t):
        canon(mul(c, A))  # every coefficient the generator draws is a kernel term
    written = 0
    for number in range(20):
        try:
            proof = generate(random.Random(f"decay:{number}"), f"g{number}", frozenset({INDEX_POWER})).proof
        except Exception:  # noqa: BLE001 - a generator attempt that built nothing
            continue
        written += any(not isinstance(node.exp, Rational) for chain in (*proof.lemmas, proof.claim)
                       for step in getattr(chain, "steps", ()) for node in step.expr.atoms(Pow))
    assert written >= 3
    report = run(2, 25, mutants=2, samples=2, focus={INDEX_POWER})
    assert report.accepted >= 15 and not report.crashes and not report.findings, report.summary()


@pytest.mark.slow
def test_the_fuzzer_finds_the_side_condition_dropped():
    """``index_power`` put back (γ^{−t} taken as defined for every γ): the focused fuzzer finds a kernel-accepted
    chain with μ^{−t} that has no value at μ = 0, t ≥ 1."""
    from derive.fuzz import run
    from derive.fuzz.unsound import reverted

    with reverted("index_power"):
        report = run(1, 40, mutants=2, samples=2, focus={"index_power"}, stop_at="index_power")
    assert "index_power" in report.first, report.summary()
    finding = next(f for f in report.findings if "index_power" in f.refutation.tags)
    assert finding.refutation.kind == "undefined"
