"""Trust holes found by an adversarial review, each closed; every test here failed before its fix.

In-process forgeries (a forged or altered ``Theorem``, subclasses of the kernel's types at every entry
point), hypotheses in any order, and certificates of user theorems that must pass ``derive check``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading

import pytest
from sympy import Identity, MatrixSymbol, Q, S, Symbol, ZeroMatrix
from sympy.assumptions.assume import AppliedPredicate

from derive import Chain, Definition, Hypothesis, Proof, ProofBuilder, ProofError, Step, check, dim, predicate
from derive.authoring import checked, registry
from derive.certificates import certificate_text, verify_certificate
from derive.kernel import Theorem, is_issued
from derive.kernel.proof import _KERNEL_TOKEN
from derive.kernel.terms import add, inv, mul, power, transpose

n, p = dim("n"), dim("p")
X = MatrixSymbol("X", n, p)
A = MatrixSymbol("A", p, p)
C = MatrixSymbol("C", n, p)
ZERO = ZeroMatrix(n, p)


def _false_theorem_proof() -> Proof:
    """"X = 0" for every X: false, so no theorem may ever state it."""
    return Proof("x_is_zero", "X = 0", "X = 0", (), (), (), Chain("main", X, ZERO, ()))


def _citing(theorem) -> Proof:
    return Proof("uses_it", "t", "s", (), (), (), Chain("main", X, ZERO, (Step(ZERO, "thm:x_is_zero"),)), (theorem,))


# --- 1. forged theorems ------------------------------------------------------------------------------


def test_a_theorem_made_by_object_new_proves_nothing():
    forged = object.__new__(Theorem)
    fake = _false_theorem_proof()
    for name, value in (("id", "x_is_zero"), ("title", "t"), ("statement", "s"), ("proof", fake),
                        ("digest", "0" * 64), ("seconds", 0.0)):
        object.__setattr__(forged, name, value)
    assert type(forged) is Theorem and not is_issued(forged)
    with pytest.raises(ProofError, match="checked theorems only"):
        check(_citing(forged))


def test_a_theorem_made_with_the_kernels_token_is_not_recorded():
    from derive.kernel.proof import digest

    fake = _false_theorem_proof()
    forged = Theorem(_KERNEL_TOKEN, fake, digest(fake), 0.0)  # the token is reachable in Python
    with pytest.raises(ProofError, match="checked theorems only"):
        check(_citing(forged))


def test_a_genuine_theorem_whose_proof_is_swapped_afterwards_is_refused():
    genuine = check(Proof("x_is_x", "t", "s", (), (), (), Chain("main", X, X, ())))
    assert is_issued(genuine)
    object.__setattr__(genuine, "proof", _false_theorem_proof())  # bypasses the immutability
    object.__setattr__(genuine, "id", "x_is_zero")
    assert not is_issued(genuine)
    with pytest.raises(ProofError, match="checked theorems only"):
        check(_citing(genuine))
    with pytest.raises(Exception, match="checked"):
        certificate_text(genuine)


# --- 2. subclasses at every entry point ----------------------------------------------------------------


class _EqualsX(MatrixSymbol):
    """Compares equal to X: as a definition's symbol, "define S = 0" would rewrite X."""

    def __eq__(self, other):
        return other == X or MatrixSymbol.__eq__(self, other)

    __hash__ = MatrixSymbol.__hash__


def test_a_symbol_subclass_as_a_definitions_symbol_is_refused():
    sneaky = _EqualsX("S", n, p)
    proof = Proof("define_zero", "t", "s", (), (Definition("S", sneaky, ZERO),), (),
                  Chain("main", X, ZERO, (Step(ZERO, "def:S"),)))
    with pytest.raises(ProofError, match="exactly a MatrixSymbol"):
        check(proof)


class _Lying(MatrixSymbol):
    """Reports another shape than the one it was built with."""

    @property
    def shape(self):
        return (Symbol("q", integer=True, positive=True), self.args[2])


def test_a_symbol_subclass_in_an_instance_is_refused():
    d = dim("d")
    U = MatrixSymbol("U", d, d)
    lying = _Lying("U", d, d)
    proof = Proof("lies", "t", "s", (Hypothesis("U_rows", mul(U, transpose(U)), Identity(d)),), (), (),
                  Chain("main", inv(A), transpose(A), (Step(transpose(A), "thm:orthogonal_inverse",
                                                            ((d, p), (lying, A))),)),
                  (checked("orthogonal_inverse"),))
    with pytest.raises(ProofError, match="not a symbol"):
        check(proof)


class _Disguised(AppliedPredicate):
    """Prints as Q.symmetric, but its predicate is positive definiteness."""

    def __str__(self):
        return f"Q.symmetric({self.args[1]})"


def test_a_predicate_subclass_is_refused():
    half = power(A, S.Half)
    disguised = _Disguised(Q.positive_definite, A)
    proof = Proof("root_of_symmetric", "t", "s", (Hypothesis("A_symmetric", disguised, S.true),), (), (),
                  Chain("main", mul(half, half), A, (Step(A, "power_combine"),)))
    with pytest.raises(ProofError, match="AppliedPredicate"):
        check(proof)
    honest = Proof("root_of_symmetric", "t", "s", (predicate("A_symmetric", Q.symmetric, A),), (), (),
                   Chain("main", mul(half, half), A, (Step(A, "power_combine"),)))
    with pytest.raises(ProofError, match="positive definite"):
        check(honest)


@pytest.mark.parametrize(("bad", "message"), [
    (lambda proof: Proof(type("Id", (str,), {})("evil"), *_fields(proof)[1:]), "must be a str"),
    (lambda proof: Proof(proof.theorem, proof.title, proof.statement, proof.hypotheses, proof.definitions,
                         proof.lemmas, Chain("main", X, X, (Step(X, type("R", (str,), {})("identity_mul")),))),
     "must be a str"),
    (lambda proof: Proof("a\nb", *_fields(proof)[1:]), "not an identifier"),
    (lambda proof: Proof("a\x1b[32m", *_fields(proof)[1:]), "not an identifier"),
    (lambda proof: Proof("\ud800", *_fields(proof)[1:]), "not an identifier"),
    (lambda proof: Proof("ok", "\ud800", *_fields(proof)[2:]), "lone surrogate"),
])
def test_str_subclasses_and_non_identifiers_are_refused(bad, message):
    proof = Proof("x_is_x", "t", "s", (), (), (), Chain("main", X, X, ()))
    with pytest.raises(ProofError, match=message) as caught:
        check(bad(proof))
    assert str(caught.value).isprintable()


def _fields(proof: Proof) -> tuple:
    return (proof.theorem, proof.title, proof.statement, proof.hypotheses, proof.definitions, proof.lemmas,
            proof.claim, proof.cites)


# --- 4 and 5. certificates of what prove accepts; hypotheses in any order ----------------------------------


def _sum_inverse_theorem(auto: bool) -> Proof:
    """(CᵀC + A)⁻¹(CᵀC + A) = I under "CᵀC + A invertible", the sum written in another order than SymPy's."""
    total = add(mul(transpose(C), C), A)
    from sympy.matrices.expressions import MatAdd

    written = MatAdd(A, mul(transpose(C), C), evaluate=False)  # as a user may build it
    b = ProofBuilder("sum_inverse", "A sum times its inverse", "s",
                     [predicate("sum_invertible", Q.invertible, written)])
    chain = b.main(mul(inv(total), total))
    chain.auto(Identity(p)) if auto else chain.rw("inverse_cancel").qed(Identity(p))
    return b.proof()


@pytest.mark.parametrize("auto", [False, True])
def test_the_certificate_of_a_sum_inside_an_inverse_checks(auto):
    theorem = check(_sum_inverse_theorem(auto))
    data = json.loads(certificate_text(theorem))
    assert verify_certificate(data).digest == theorem.digest


def test_the_order_of_hypotheses_does_not_matter():
    W_Q, W_K = MatrixSymbol("W_Q", p, p), MatrixSymbol("W_K", p, p)
    gram = mul(transpose(X), X)
    hypotheses = [Hypothesis("precision", mul(W_Q, transpose(W_K)), inv(gram)),
                  predicate("gram_invertible", Q.invertible, gram)]
    for ordered in (hypotheses, hypotheses[::-1]):
        proof = Proof("ordered", "t", "s", tuple(ordered), (), (),
                      Chain("main", mul(W_Q, transpose(W_K), gram), Identity(p),
                            (Step(mul(inv(gram), gram), "hyp:precision"), Step(Identity(p), "inverse_cancel"))))
        assert check(proof).id == "ordered"


# --- 3. derive check runs no code but the package's own ---------------------------------------------------


PATCH = textwrap.dedent("""
    import derive.kernel.checking as checking
    checking.check = lambda proof, **kw: (_ for _ in ()).throw(SystemExit("patched"))
    import derive.certificates.format as fmt
    fmt.check = checking.check
    import sys
    print("USER CODE RAN", file=sys.stderr)
""")


def test_check_loads_no_library_and_no_entry_point(tmp_path):
    user = tmp_path / "evil.py"
    user.write_text(PATCH)
    cert = tmp_path / "cert.json"
    cert.write_text(certificate_text(checked("orthogonal_inverse")))
    result = subprocess.run([sys.executable, "-m", "derive", "check", "--library", str(user), str(cert)],
                            capture_output=True, text=True, timeout=120)
    assert "USER CODE RAN" not in result.stderr and result.returncode == 2
    assert "runs no code" in result.stderr
    dist = tmp_path / "site" / "evil_theorems-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: evil-theorems\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[ols_transformer.theorems]\nevil = evil_module\n")
    (tmp_path / "site" / "evil_module.py").write_text(PATCH)
    env = {"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"}
    listed = subprocess.run([sys.executable, "-m", "derive", "list"], capture_output=True, text=True, timeout=120,
                            env=env)
    assert "USER CODE RAN" in listed.stderr  # the entry point is installed and other commands load it
    result = subprocess.run([sys.executable, "-m", "derive", "check", str(cert)], capture_output=True, text=True,
                            timeout=120, env=env)
    assert "USER CODE RAN" not in result.stderr, result.stderr
    assert result.returncode == 0 and "verified library theorem orthogonal_inverse" in result.stdout


# --- 10. the registry under threads ----------------------------------------------------------------------------


def test_threads_building_theorems_at_once_see_no_false_cycle(monkeypatch):
    import inspect
    import re

    from derive.library import LIBRARY

    monkeypatch.setattr(registry, "_CHECKED", {})
    errors: list[str] = []
    barrier = threading.Barrier(6)
    # the theorems whose proofs cite others, and those they cite: where one thread's citation is another thread's
    # theorem in progress (the rest of the library adds checking time, not citations)
    cited = {theorem_id: re.findall(r"\.cite\(\"(\w+)\"\)", inspect.getsource(registry.entry(theorem_id).build))
             for theorem_id in LIBRARY}
    citing = {theorem_id for theorem_id, names in cited.items() if names}
    ids = [theorem_id for theorem_id in LIBRARY
           if theorem_id in citing or any(theorem_id in names for names in cited.values())]
    assert len(citing) >= 5 and len(ids) > len(citing)

    def work(ids):
        barrier.wait()
        for theorem_id in ids:
            try:
                registry.checked(theorem_id)
            except ProofError as exc:
                errors.append(str(exc))

    threads = [threading.Thread(target=work, args=(ids[i::2] + ids,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


# --- 9. quantifiers are printed ------------------------------------------------------------------------------


def test_a_bound_hypothesis_is_printed_with_its_quantifier():
    from derive.cli import statement_lines
    from derive.latex import theorem_latex

    B, Cp = MatrixSymbol("B", p, p), MatrixSymbol("C", p, p)
    every = Hypothesis("all_identity", B, Identity(p), forall=(B,))
    theorem = check(Proof("every_matrix", "Every matrix is I", "s", (every,), (), (),
                          Chain("main", Cp, Identity(p), (Step(Identity(p), "hyp:all_identity", ((B, Cp),)),))))
    lines = statement_lines(theorem)
    assert any("for all B: B = I" in line for line in lines), lines
    assert "for every $B$" in theorem_latex(theorem, macros=False)


SUBCLASS_LIBRARY = textwrap.dedent("""
    from sympy import MatrixSymbol, ZeroMatrix
    from derive import Chain, Definition, Proof, Step, dim, theorem

    n, p = dim("n"), dim("p")
    X = MatrixSymbol("X", n, p)

    class EqualsX(MatrixSymbol):
        def __eq__(self, other):
            return other == X or MatrixSymbol.__eq__(self, other)
        __hash__ = MatrixSymbol.__hash__

    @theorem
    def x_is_zero():
        zero = ZeroMatrix(n, p)
        return Proof("x_is_zero", "X = 0", "s", (), (Definition("S", EqualsX("S", n, p), zero),), (),
                     Chain("main", X, zero, (Step(zero, "def:S"),)))
""")


def test_prove_and_latex_refuse_a_subclass_from_a_users_library(tmp_path):
    (tmp_path / "evil.py").write_text(SUBCLASS_LIBRARY)
    for command in (["prove"], ["latex", "--out", str(tmp_path / "tex")]):
        result = subprocess.run([sys.executable, "-m", "derive", *command, "--library", str(tmp_path / "evil.py")],
                                capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert result.returncode == 1 and "exactly a MatrixSymbol" in result.stderr, result.stdout + result.stderr
        assert "1/1 theorems verified" not in result.stdout
    assert not (tmp_path / "tex" / "x_is_zero.tex").exists()


def test_a_term_sympy_refuses_to_rebuild_is_a_statement_error_naming_the_term():
    """Terms made past SymPy's own checks (a product of misaligned explicit matrices, the inverse of a 2×3
    matrix) are refused by the kernel's validation with a message naming the node and SymPy's reason."""
    from sympy import Basic, Inverse, MatMul

    E = MatrixSymbol("E", 2, 3)
    for bad, node in ((Basic.__new__(MatMul, E, E), "MatMul"), (Basic.__new__(Inverse, E, S.NegativeOne), "Inverse")):
        with pytest.raises(ProofError, match=f"statement: SymPy refuses the {node} .*E") as caught:
            check(Proof("bad", "t", "s", (), (), (), Chain("main", mul(A, A), mul(A, A), (Step(bad, "identity_mul"),))))
        assert "\n" not in str(caught.value)


def test_a_trace_that_sympy_would_rewrite_inside_a_coefficient_is_a_proper_verdict():
    """tr((μI₁)ᵀ + Mᵀ) as a coefficient: bringing it to its normal form rebuilt the trace's matrix (SymPy turns
    (μI₁)ᵀ into μI₁), leaving a polynomial atom no generator named; the kernel raised CoercionFailed, a traceback
    out of check and out of ``.auto``.  Now the step gets a verdict and the equal forms are one."""
    from sympy import Integer, Trace

    from derive import scalar

    mu, M = scalar("mu"), MatrixSymbol("M", 1, 1)
    trace = Trace(add(transpose(mul(mu, Identity(1))), transpose(M)))
    term = mul(trace, A)
    with pytest.raises(ProofError, match="main step 1 \\(rule transpose_sum\\)"):
        check(Proof("t", "t", "s", (), (), (), Chain("main", term, add(term, term), (Step(add(term, term),
                                                                                         "transpose_sum"),))))
    assert mul(Integer(2), trace, A) == mul(trace, Integer(2), A) and mul(trace, mul(trace, A)) == mul(trace**2, A)
    b = ProofBuilder("t", "t", "s")
    b.main(mul(Identity(p), term, Identity(p))).auto(term)
    assert check(b.proof()).proof.claim.rhs == term


def test_a_sympy_error_while_checking_a_step_names_the_step_not_the_statement(monkeypatch):
    """SymPy refusing a term met while checking a step was reported as "statement: malformed term", as if the
    statement were at fault; it names the chain, the step and the rule."""
    from derive.kernel import checking

    def refusing(*args, **kwargs):
        raise ValueError("Matrix with symbolic shape cannot be represented explicitly.")

    monkeypatch.setattr(checking, "one_step", refusing)
    proof = Proof("t", "t", "s", (), (), (), Chain("main", mul(Identity(p), A), A, (Step(A, "identity_mul"),)))
    with pytest.raises(ProofError, match=r"t/main step 1 \(rule identity_mul\): SymPy refuses a term of this step "
                                         r"\(ValueError: Matrix with symbolic shape"):
        check(proof)
