"""The richer scalar language of issue 29, item 4.

- ``transpose_scalar``: Mᵀ = M for a literally 1×1 M (the column-token form yᵀXΓx_q = x_qᵀΓᵀXᵀy);
- dimension and index symbols in a coefficient: 1/n for a dimension n (positive), t for an index (only ≥ 0);
- scalar hypotheses λ = r: ``hyp:NAME`` rewrites λ into r in one product's coefficient, and the sign judgment
  narrows λ's sign by r's (λ = μ², μ > 0 gives λ > 0);
- causal attention over all positions at once, stated with prefix families (no mask operator).

Each: explicit matrices showing the identity true, wrong proofs and hostile inputs refused, certificates checked
in a fresh process, LaTeX, the Coq export (translated or refused in one line), and the fuzzer.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
import sympy
from sympy import Identity, Matrix, MatrixSymbol, Q, Rational, Symbol, Trace, Transpose, ZeroMatrix

from derive import Definition, Hypothesis, ProofBuilder, dim, index, inv, mul, predicate, scalar, transpose
from derive.authoring.registry import checked, load_library
from derive.certificates import certificate_text
from derive.kernel import AXIOMS, Chain, Proof, ProofError, Step, check
from derive.kernel import axioms as kernel_axioms
from derive.kernel import judgments as kernel_judgments
from derive.kernel.checking import theorem_context
from derive.kernel.judgments import NONNEGATIVE, POSITIVE, UNKNOWN, invertible, sign
from derive.kernel.terms import add, block, canon
from derive.witness.evaluate import evaluate

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
n, p, k = dim("n"), dim("p"), dim("k")
t = index("t")
X, Y = MatrixSymbol("X", n, p), MatrixSymbol("Y", n, k)
A = MatrixSymbol("A", p, p)
lam, mu = scalar("lambda"), scalar("mu", positive=True)


@pytest.fixture(scope="module")
def demo():
    """The three theorems of tests/data/user_scalars.py, checked (unregistered after this module: tests/conftest.py)."""
    return {theorem_id: checked(theorem_id) for theorem_id in load_library(str(DATA / "user_scalars.py"))}


def _rational(rng: random.Random, rows: int, cols: int) -> Matrix:
    return Matrix(rows, cols, lambda i, j: Rational(rng.randint(-5, 5), rng.randint(1, 3)))


def _proof(claim: Chain, hypotheses=(), definitions=(), lemmas=(), cites=()) -> Proof:
    return Proof("scalars", "t", "t", tuple(hypotheses), tuple(definitions), tuple(lemmas), claim, tuple(cites))


def _refused(proof: Proof, *words: str) -> str:
    with pytest.raises(ProofError) as info:
        check(proof)
    text = str(info.value)
    assert all(w in text for w in words), text
    return text


# --- transpose_scalar -------------------------------------------------------------------------------------------


def test_the_column_token_form_holds_on_explicit_matrices(demo):
    """yᵀXΓx_q = x_qᵀΓᵀXᵀy on numbers (n = 4, p = 3), and the kernel's theorem states exactly that."""
    theorem = demo["lsa_column_token_prediction"]
    claim = theorem.proof.claim
    rng = random.Random(29)
    y, gamma, x_q = (MatrixSymbol(name, *shape) for name, shape in (("y", (n, 1)), ("Gamma", (p, p)),
                                                                     ("x_q", (p, 1))))
    for _ in range(3):
        env = {y: _rational(rng, 4, 1), X: _rational(rng, 4, 3), gamma: _rational(rng, 3, 3), x_q: _rational(rng, 3, 1)}
        left, right = (evaluate(side, env, {n: 4, p: 3}) for side in (claim.lhs, claim.rhs))
        assert left == right and left.shape == (1, 1)
        assert left == (env[y].T * env[X] * env[gamma] * env[x_q])  # the prediction itself, not a trivial value
        assert env[gamma] != env[gamma].T  # Γ is not symmetric: only the 1×1 transpose makes the sides equal
    assert "transpose_scalar" in [s.rule for s in claim.steps]


def test_transpose_scalar_refuses_what_is_not_literally_one_by_one():
    ctx = theorem_context(_proof(Chain("main", Identity(1), Identity(1), ())))
    rule = AXIOMS["transpose_scalar"]
    v = MatrixSymbol("v", p, 1)
    m = dim("m")
    assert rule(transpose(A), ctx) == []  # p×p
    assert rule(transpose(v), ctx) == []  # p×1
    assert rule(transpose(MatrixSymbol("s", m, m)), ctx) == []  # m×m: m might be 1, but is not literally
    assert rule(transpose(MatrixSymbol("s", 1, 1)), ctx) == [MatrixSymbol("s", 1, 1)]
    # a wrong proof: Aᵀ = A for a p×p A by transpose_scalar
    _refused(_proof(Chain("main", transpose(A), A, (Step(A, "transpose_scalar"),))), "does not rewrite")
    # and vᵀ w read as its transpose at the wrong place: (vᵀ)ᵀ w is not a rewrite of vᵀw
    w = MatrixSymbol("w", p, 1)
    _refused(_proof(Chain("main", mul(transpose(v), w), mul(v, w),
                          (Step(mul(transpose(transpose(v)), w), "transpose_scalar"),))))


def test_transpose_scalar_dropped_side_condition_is_refuted_by_the_oracle():
    """With the 1×1 condition dropped, the kernel would accept Aᵀ = A; the fuzzer's exact oracle refutes it."""
    from derive.fuzz.oracle import judge

    proof = _proof(Chain("main", transpose(A), A, (Step(A, "transpose_scalar"),)))
    _refused(proof)
    with _patched(kernel_axioms.AXIOMS, "transpose_scalar",
                  lambda term, ctx: [term.args[0]] if isinstance(term, Transpose) else []):
        accepted = check(proof)
    assert judge(accepted.proof, random.Random(0), samples=3).refutation is not None


@contextmanager
def _patched(table: dict, key: str, value):
    old = table[key]
    value.runs = getattr(old, "runs", None)
    table[key] = value
    try:
        yield
    finally:
        table[key] = old


# --- dimension and index symbols as coefficients ----------------------------------------------------------------


def test_the_sample_moments_theorem_holds_on_explicit_matrices(demo):
    theorem = demo["sample_covariance_scaling"]
    claim = theorem.proof.claim
    G = MatrixSymbol("G", p, p)
    rng = random.Random(3)
    for size in (3, 5):
        x = _rational(rng, size, 2)
        while (x.T * x).det() == 0:
            x = _rational(rng, size, 2)
        env = {X: x, Y: _rational(rng, size, 1), G: x.T * x}
        dims = {n: size, p: 2, k: 1}
        left, right = (evaluate(side, env, dims) for side in (claim.lhs, claim.rhs))
        assert left == right == (x.T * x).inv() * x.T * env[Y]
        assert evaluate(mul(1 / n, transpose(X), X), env, dims) == (x.T * x) / size  # n is the number it stands for


def test_signs_of_dimension_and_index_symbols():
    ctx = theorem_context(_proof(Chain("main", Identity(1), Identity(1), ())))
    assert sign(n, ctx) == POSITIVE and sign(1 / n, ctx) == POSITIVE and sign(p / (n + 1), ctx) == POSITIVE
    assert sign(t, ctx) == NONNEGATIVE  # an index may be 0 (X_0 is empty)
    assert sign(t + 1, ctx) == POSITIVE and sign(-t, ctx) == frozenset({-1, 0})
    assert invertible(mul(n, A), ctx) is False  # A itself is not known invertible
    assert invertible(mul(n, Identity(p)), ctx) and invertible(mul(t + 1, Identity(p)), ctx)
    assert not invertible(mul(t, Identity(p)), ctx)  # tI is singular at t = 0


def test_an_index_symbol_is_not_a_positive_coefficient():
    """Division by an index symbol is refused (t may be 0), and so is (tI)⁻¹; by t + 1 it is allowed."""
    _refused(_proof(Chain("main", mul(1 / t, A), mul(1 / t, A), (Step(mul(1 / t, A), "identity_mul"),))),
             "not zero")
    _refused(_proof(Chain("main", inv(mul(t, Identity(p))), inv(mul(t, Identity(p))), ())), "invertible")
    b = ProofBuilder("scalars", "t", "t")
    b.main(inv(mul(t + 1, Identity(p)))).rw("inverse_product").rw("inverse_identity").qed()
    theorem = check(b.proof())
    assert theorem.proof.claim.rhs == mul(1 / (t + 1), Identity(p))


def test_an_index_sign_made_positive_is_refuted_by_the_oracle():
    """Drop the side condition (call an index symbol positive) and the kernel accepts (1/t)(A + B) = (1/t)A + (1/t)B,
    which has no value at t = 0: the oracle refutes it."""
    from derive.fuzz.oracle import judge

    B = MatrixSymbol("B", p, p)
    after = add(mul(1 / t, A), mul(1 / t, B))
    proof = _proof(Chain("main", mul(1 / t, add(A, B)), after, (Step(after, "distribute"),)))
    _refused(proof, "not zero")
    old = kernel_judgments._symbol_sign
    kernel_judgments._symbol_sign = lambda c, ctx, depth: POSITIVE if c == t else old(c, ctx, depth)
    try:
        accepted = check(proof)
    finally:
        kernel_judgments._symbol_sign = old
    assert judge(accepted.proof, random.Random(0), samples=2).refutation is not None


def test_a_wrong_scaling_is_refused():
    G = MatrixSymbol("G", p, p)
    hyps = [predicate("gram_invertible", Q.invertible, mul(transpose(X), X))]
    defs = [Definition("G", G, mul(transpose(X), X))]
    lhs = mul(inv(mul(1 / n, G)), transpose(X), Y)
    for wrong in (mul(1 / n, inv(G), transpose(X), Y), mul(n ** 2, inv(G), transpose(X), Y)):
        _refused(_proof(Chain("main", lhs, wrong, (Step(wrong, "inverse_product"),)), hyps, defs))
    right = mul(n, inv(G), transpose(X), Y)
    assert check(_proof(Chain("main", lhs, right, (Step(right, "inverse_product"),)), hyps, defs))


def test_hostile_symbols_in_a_coefficient_are_refused():
    class Sneaky(Symbol):
        pass

    for bad in (Symbol("n", integer=True), Symbol("n", integer=True, positive=True, even=True),
                Sneaky("n", integer=True, positive=True), Symbol("z", nonnegative=True)):
        term = sympy.MatMul(bad, A, evaluate=False)
        _refused(_proof(Chain("main", term, term, ())))


# --- scalar hypotheses ------------------------------------------------------------------------------------------


def _augmented(mu_value: Rational, lam_value: Rational, rng: random.Random):
    x, y = _rational(rng, 4, 2), _rational(rng, 4, 1)
    env = {X: x, Y: y}
    return env, {n: 4, p: 2, k: 1}, {mu: mu_value, lam: lam_value}


def test_ridge_as_augmented_least_squares_holds_on_explicit_matrices(demo):
    claim = demo["ridge_as_augmented_ols"].proof.claim
    rng = random.Random(5)
    env, dims, scalars = _augmented(Rational(3, 2), Rational(9, 4), rng)
    left, right = (evaluate(side, env, dims, scalars) for side in (claim.lhs, claim.rhs))
    x, y = env[X], env[Y]
    assert left == right == (x.T * x + Rational(9, 4) * sympy.eye(2)).inv() * x.T * y
    # without λ = μ² the two sides differ: the hypothesis is what the proof uses
    env, dims, scalars = _augmented(Rational(3, 2), Rational(1, 1), rng)
    assert evaluate(claim.lhs, env, dims, scalars) != evaluate(claim.rhs, env, dims, scalars)


def _scalar_proof(rhs_claim, step_rule="hyp:lam_mu", hypothesis=None, mu_symbol=mu, instance=()) -> Proof:
    hypothesis = hypothesis if hypothesis is not None else Hypothesis("lam_mu", lam, mu_symbol ** 2)
    return _proof(Chain("main", mul(lam, A), rhs_claim, (Step(rhs_claim, step_rule, instance),)), [hypothesis])


def test_a_scalar_hypothesis_rewrites_a_coefficient_both_ways():
    assert check(_scalar_proof(mul(mu ** 2, A)))
    back = _proof(Chain("main", mul(mu ** 2 + 1, A), mul(lam + 1, A), (Step(mul(lam + 1, A), "hyp:lam_mu"),)),
                  [Hypothesis("lam_mu", lam, mu ** 2)])
    assert check(back)
    v = MatrixSymbol("v", p, 1)  # inside a 1×1 matrix read as a scalar, too
    inner = mul(Trace(mul(lam, transpose(v), v)), A)
    after = mul(Trace(mul(mu ** 2, transpose(v), v)), A)
    assert check(_proof(Chain("main", inner, after, (Step(after, "hyp:lam_mu"),)),
                        [Hypothesis("lam_mu", lam, mu ** 2)]))


def test_a_misused_scalar_hypothesis_is_refused():
    _refused(_scalar_proof(mul(mu ** 3, A)), "does not rewrite")  # a wrong right side
    _refused(_scalar_proof(mul(mu, A)), "does not rewrite")
    _refused(_scalar_proof(mul(mu ** 2, A), step_rule="hyp:other"), "no such rule")
    _refused(_scalar_proof(mul(mu ** 2, A), instance=((n, p),)), "binds no variables")
    # where λ does not occur, nothing is rewritten
    _refused(_proof(Chain("main", mul(2, A), mul(mu ** 2, A), (Step(mul(mu ** 2, A), "hyp:lam_mu"),)),
                    [Hypothesis("lam_mu", lam, mu ** 2)]))
    # dropped hypothesis
    _refused(_proof(Chain("main", mul(lam, A), mul(mu ** 2, A), (Step(mul(mu ** 2, A), "hyp:lam_mu"),))))


@pytest.mark.parametrize("hypothesis, words", [
    (Hypothesis("h", mu ** 2, lam), "is not a matrix term"),  # the left side must be one scalar symbol
    (Hypothesis("h", n, sympy.Integer(2)), "scalar symbol"),  # a dimension is not a scalar to assume
    (Hypothesis("h", lam, lam + 1), "both sides"),
    (Hypothesis("h", lam, A), "not a matrix"),
    (Hypothesis("h", lam, mu ** 2, (MatrixSymbol("B", p, p),)), "binds no variables"),
    (Hypothesis("h", lam, 1 / scalar("nu")), "not zero"),  # ν of unknown sign: 1/ν is not shown defined
    (Hypothesis("h", lam, Trace(inv(mul(transpose(MatrixSymbol("v", p, 1)), MatrixSymbol("v", p, 1))))),
     "invertible"),
    (Hypothesis("h", lam, sympy.Float(2.5)), "Float"),
])
def test_malformed_scalar_hypotheses_are_refused(hypothesis, words):
    _refused(_proof(Chain("main", mul(2, A), mul(2, A), ()), [hypothesis]), words)


def test_a_subclass_as_the_scalar_of_a_hypothesis_is_refused():
    class Sneaky(Symbol):
        pass

    _refused(_proof(Chain("main", mul(2, A), mul(2, A), ()), [Hypothesis("h", Sneaky("lambda", real=True), mu ** 2)]),
             "scalar symbol")


def test_the_sign_judgment_follows_a_scalar_hypothesis():
    real_mu = scalar("mu")
    for mu_symbol, expected in ((mu, POSITIVE), (real_mu, NONNEGATIVE)):
        ctx = theorem_context(_proof(Chain("main", Identity(1), Identity(1), ()),
                                     [Hypothesis("lam_mu", lam, mu_symbol ** 2)]))
        assert sign(lam, ctx) == expected
        assert invertible(mul(lam, Identity(p)), ctx) == (expected == POSITIVE)
    ctx = theorem_context(_proof(Chain("main", Identity(1), Identity(1), ())))
    assert sign(lam, ctx) == UNKNOWN


def test_the_ridge_proof_needs_mu_positive_and_the_hypothesis(demo):
    """Mutants of the ridge proof: μ of unknown sign (then λ = μ² may be 0 and XᵀX + λI singular), the scalar
    hypothesis dropped, or λ = μ³ instead: each refused."""
    proof = demo["ridge_as_augmented_ols"].proof
    real_mu = scalar("mu")
    swapped = _replace_symbol(proof, mu, real_mu)
    _refused(swapped, "invertible")
    _refused(Proof(proof.theorem, proof.title, proof.statement, (), proof.definitions, proof.lemmas, proof.claim,
                   proof.cites))
    cubed = Hypothesis("lambda_mu", lam, mu ** 3)
    _refused(Proof(proof.theorem, proof.title, proof.statement, (cubed,), proof.definitions, proof.lemmas,
                   proof.claim, proof.cites), "does not rewrite")


def _replace_symbol(proof: Proof, old, new) -> Proof:
    swap = lambda term: term.xreplace({old: new})  # noqa: E731
    lemmas = tuple(Chain(c.name, swap(c.lhs), swap(c.rhs), tuple(Step(swap(s.expr), s.rule) for s in c.steps))
                   for c in proof.lemmas)
    c = proof.claim
    claim = Chain(c.name, swap(c.lhs), swap(c.rhs), tuple(Step(swap(s.expr), s.rule) for s in c.steps))
    hyps = tuple(Hypothesis(h.name, swap(h.lhs), swap(h.rhs)) for h in proof.hypotheses)
    return Proof(proof.theorem, proof.title, proof.statement, hyps, proof.definitions, lemmas, claim, proof.cites)


def test_a_theorem_with_a_scalar_hypothesis_is_cited_only_where_the_hypothesis_holds(demo):
    """Cited where the citing proof assumes the same λ = μ² (a lemma by ``.auto`` shows the instance's Gram matrix
    invertible); refused, naming the scalar hypothesis, where it assumes nothing or λ = 2μ² (issue 29)."""
    ridge = demo["ridge_as_augmented_ols"]
    Z = MatrixSymbol("Z", n, p)
    augmented = block([[Z], [mul(mu, Identity(p))]])
    lhs, rhs = (side.xreplace({X: Z}) for side in (ridge.proof.claim.lhs, ridge.proof.claim.rhs))
    for hypotheses, holds in (([Hypothesis("lambda_mu", lam, mu ** 2)], True), ([], False),
                              ([Hypothesis("lambda_mu", lam, 2 * mu ** 2)], False)):
        b = ProofBuilder("cites_ridge", "t", "t", hypotheses)
        b.cite(ridge)
        b.lemma("augmented_gram", mul(transpose(augmented), augmented)).auto(
            add(mul(transpose(Z), Z), mul(mu ** 2, Identity(p))))  # true whatever λ is
        if holds:
            b.main(lhs).rw("thm:ridge_as_augmented_ols", instance=((X, Z),)).qed(rhs)
            assert check(b.proof()).proof.claim.steps[0].rule == "thm:ridge_as_augmented_ols"
        else:
            with pytest.raises(ProofError, match="scalar hypothesis lambda_mu of theorem ridge_as_augmented_ols "
                                                 "does not hold here"):
                b.main(lhs).rw("thm:ridge_as_augmented_ols", instance=((X, Z),))


# --- certificates, LaTeX, Coq -----------------------------------------------------------------------------------


def test_certificates_of_the_new_constructs_check_in_a_fresh_process(demo, tmp_path):
    paths = []
    for theorem in demo.values():
        path = tmp_path / f"{theorem.id}.json"
        path.write_text(certificate_text(theorem))
        paths.append(str(path))
    data = json.loads(Path(paths[-1]).read_text())
    assert data["hypotheses"][0]["lhs"] == "Symbol('lambda', real=True)"
    result = subprocess.run([sys.executable, "-m", "derive", "check", "--full", *paths], capture_output=True,
                            text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count(": verified ") == 3
    assert "assume  λ = μ²" in result.stdout and "scalar  μ > 0" in result.stdout  # the notation (issue 44)


def test_a_certificate_with_a_changed_scalar_hypothesis_is_rejected(demo, tmp_path):
    text = certificate_text(demo["ridge_as_augmented_ols"])
    data = json.loads(text)
    data["hypotheses"][0]["rhs"] = "Pow(Symbol('mu', positive=True), Integer(3))"
    path = tmp_path / "ridge.json"
    path.write_text(json.dumps(data))
    result = subprocess.run([sys.executable, "-m", "derive", "check", str(path)], capture_output=True, text=True,
                            timeout=300, cwd=ROOT)
    assert result.returncode != 0 and "REJECTED" in result.stdout


def test_latex_prints_the_new_constructs(demo):
    from derive.latex.article import theorem_latex

    lsa, moments, ridge = (theorem_latex(demo[i]) for i in ("lsa_column_token_prediction", "sample_covariance_scaling",
                                                           "ridge_as_augmented_ols"))
    assert "a 1-by-1 matrix is its own transpose" in lsa
    assert "\\frac{1}{\\olsn}" in moments
    assert "Assume $\\olslambda = \\olsmu^{2}$" in ridge and "by $\\olslambda = \\olsmu^{2}$" in ridge


def test_the_coq_export_translates_or_refuses_in_one_line(demo, tmp_path):
    """Issue 29 item 6: all three are exported: the 1×1 transpose, 1/n (n%:R with (0 < n)%N), λ = μ² (a Coq
    hypothesis, cited by rewriting)."""
    from derive.export.coq import export_certificates, write_export

    certificates = [json.loads(certificate_text(theorem)) for theorem in demo.values()]
    export = export_certificates(certificates)
    assert sorted(export.exported) == sorted(demo), export.skipped
    assert "Hypothesis lambda_mu : lambda = (mu ^+ 2)." in export.files["ridge_as_augmented_ols.v"]
    assert "Hypothesis n_dim_positive : (0 < n)%N." in export.files["sample_covariance_scaling.v"]
    if shutil.which("coqc") is None:
        pytest.skip("coqc is not installed: the translations are not compiled here")
    write_export(export, tmp_path)
    for name in ("OlsPrelude", "lsa_column_token_prediction", "sample_covariance_scaling", "ridge_as_augmented_ols"):
        result = subprocess.run(["coqc", "-Q", ".", "OLS", f"{name}.v"], cwd=tmp_path, capture_output=True,
                                text=True, timeout=600)
        assert result.returncode == 0, result.stdout + result.stderr


# --- causal attention over all positions ------------------------------------------------------------------------


def test_the_causal_mask_is_attention_over_each_prefix():
    """(M ⊙ QKᵀ)V with M the lower-triangular ones has row t equal to q_tᵀ K_tᵀ V_t (K_t, V_t the first t rows):
    the family statement o_t = V_tᵀ(K_t q_t) of ``fast_weight_delta_rule``, for every t, is causal attention
    over all positions at once."""
    rng = random.Random(11)
    T, d = 5, 3
    Qm, Km, Vm = (_rational(rng, T, d) for _ in range(3))
    mask = Matrix(T, T, lambda i, j: 1 if j <= i else 0)
    masked = mask.multiply_elementwise(Qm * Km.T) * Vm
    for row in range(T):
        prefix = row + 1
        o_t = Vm[:prefix, :].T * (Km[:prefix, :] * Qm[row, :].T)
        assert masked[row, :] == o_t.T
    assert masked != (Qm * Km.T) * Vm  # the mask matters
    theorem = checked("fast_weight_delta_rule")
    assert "V_tᵀ(K_t q_t)" in theorem.proof.statement


# --- the fuzzer -------------------------------------------------------------------------------------------------


@pytest.mark.slow  # the default fuzzer run (tests/test_fuzz.py) covers every rule and judgment
def test_the_fuzzer_writes_the_new_constructs_and_finds_nothing():
    from derive.fuzz import run
    from derive.fuzz.generate import Skip, generate, mutate

    seen: set[str] = set()
    mutations: list[str] = []
    wanted = {"nu_def", "hyp:nu_def", "transpose_scalar", "nu", "n", "t"}
    for number in range(300):  # until every construct was written (the other generators share the random stream)
        if wanted <= seen and any(m.startswith("scalar hypothesis nu") for m in mutations) \
                and any("transpose_scalar on a larger term" in m for m in mutations):
            break
        try:
            generated = generate(random.Random(f"scalars:{number}"), f"g{number}")
        except Skip:
            continue
        proof = generated.proof
        seen |= {h.name for h in proof.hypotheses}
        for chain in (*proof.lemmas, proof.claim):
            for step in chain.steps:
                seen.add(step.rule)
                seen |= {str(s) for s in step.expr.free_symbols}
        rng = random.Random(number)
        for _ in range(6):
            made = mutate(proof, generated.world, rng)
            if made is not None:
                mutations.append(made[1])
    assert wanted <= seen
    assert any(m.startswith("scalar hypothesis nu") for m in mutations)
    assert any("transpose_scalar on a larger term" in m for m in mutations)
    report = run(29, 40, mutants=2, samples=2)
    assert report.accepted >= 30 and not report.crashes and not report.findings, report.summary()


def test_generated_scalar_terms_are_kernel_terms():
    """The fuzzer's coefficients with n, t and nu are accepted by the kernel's own node check."""
    from derive.fuzz.generate import NU_VALUES, SIZE_COEFFICIENTS

    for c in (*SIZE_COEFFICIENTS, *NU_VALUES):
        assert canon(mul(c, A)).shape == (p, p)
    assert block([[A]]).shape == (p, p) and ZeroMatrix(p, p).shape == (p, p)


def test_a_scalar_hypothesis_is_checked_under_the_full_instance():
    """Issue 40 item 1: T (λ = tr(s) ⊢ λI₁ = s) cited at s := u in a proof that assumes only λ = tr(s) would give
    u = s for any 1×1 u, s (false at s = [1], u = [2], λ = 1).  The cited λ = tr(s) is checked at the step's full
    instance, λ = tr(u), which the citing proof does not assume; assuming λ = tr(u) instead, the citation holds."""
    s, u = MatrixSymbol("s", 1, 1), MatrixSymbol("u", 1, 1)
    b = ProofBuilder("scalar_trace", "t", "t", [Hypothesis("lam_tr", lam, Trace(s))])
    b.main(mul(lam, Identity(1))).auto(s)
    cited = check(b.proof())
    for assumed, holds in ((Trace(s), False), (Trace(u), True)):
        citing = _proof(Chain("main", mul(lam, Identity(1)), u, (Step(u, "thm:scalar_trace", ((s, u),)),)),
                        hypotheses=(Hypothesis("lam_tr", lam, assumed),), cites=(cited,))
        if holds:
            assert check(citing).proof.claim.rhs == u
        else:
            _refused(citing, "scalar hypothesis lam_tr of theorem scalar_trace does not hold here: lambda = Trace(u)")
