"""A claim SymPy evaluated away is refused, never certified as I = I.

Written with SymPy's own operators, ``(X.T*X).I*X.T*X`` is I before the kernel sees it: "(XᵀX)⁻¹XᵀX = I for
every X" was certified as I = I in 0 steps, and the article printed that title over "Then I = I".  A claim (or a
hypothesis) whose two sides are one term is refused at once, with a message that says so and how to keep the
form: the package's constructors.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sympy import Identity, MatrixSymbol, Q

from derive import Chain, Hypothesis, Proof, ProofBuilder, ProofError, add, check, dim, inv, mul, predicate, transpose
from derive.authoring import registry

n, p = dim("n"), dim("p")
X = MatrixSymbol("X", n, p)
A, B = MatrixSymbol("A", p, p), MatrixSymbol("B", p, p)
TITLE = "(XᵀX)⁻¹XᵀX = I for every X"
ROOT = Path(__file__).resolve().parent.parent


def _refused(build) -> str:
    b = ProofBuilder("gram_cancel", TITLE, "s")
    with pytest.raises(ProofError) as caught:
        build(b)
    message = str(caught.value)
    assert message.startswith("gram_cancel/statement: ") and "\n" not in message
    return message


def test_a_claim_sympy_cancelled_is_refused_by_hand_and_by_auto():
    lhs = (X.T * X).I * X.T * X  # SymPy's operators: this is already I
    assert lhs == Identity(p)
    for build in (lambda b: b.main(lhs).qed(Identity(p)), lambda b: b.main(lhs).auto(Identity(p)),
                  lambda b: b.main(lhs).qed()):
        message = _refused(build)
        assert "the same term as given, I = I" in message and "states nothing" in message
        assert "SymPy's own operators" in message and "derive.mul" in message and "derive.inv" in message


def test_sides_equal_in_normal_form_are_refused_too():
    message = _refused(lambda b: b.main(add(A, B)).auto(add(B, A)))
    assert "A + B = A + B" in message and "states nothing" in message
    message = _refused(lambda b: b.main(A).to(transpose(transpose(A)), "transpose_transpose")
                       .rw("transpose_transpose").qed(A))
    assert "A = A" in message  # a chain that comes back to where it started states nothing either


def test_the_same_claim_written_with_the_packages_constructors_is_proved():
    gram = mul(transpose(X), X)
    b = ProofBuilder("gram_cancel", TITLE, "s", [predicate("gram_invertible", Q.invertible, gram)])
    b.main(mul(inv(gram), transpose(X), X)).auto(Identity(p))
    theorem = check(b.proof())
    assert theorem.proof.claim.lhs != theorem.proof.claim.rhs and theorem.proof.claim.steps


def test_a_hypothesis_sympy_evaluated_is_refused():
    with pytest.raises(ProofError, match="hypothesis gram_inverse: its two sides are the same term, I = I: it "
                                         "assumes nothing.  SymPy's own operators"):
        ProofBuilder("h", "t", "s", [Hypothesis("gram_inverse", X.T * X * (X.T * X).I, Identity(p))])


def test_a_registered_proof_built_by_hand_with_a_trivial_claim_is_refused(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry.entries()))

    @registry.theorem
    def gram_by_hand() -> Proof:
        lhs = (X.T * X).I * X.T * X
        return Proof("gram_by_hand", TITLE, "s", (), (), (), Chain("main", lhs, Identity(p), ()))

    with pytest.raises(ProofError, match="gram_by_hand/statement: the claim's two sides are the same term as given"):
        registry.build("gram_by_hand")


def test_prove_refuses_it_in_one_line_without_a_traceback(tmp_path):
    (tmp_path / "lib.py").write_text(textwrap.dedent(f'''
        from sympy import Identity, MatrixSymbol
        from derive import ProofBuilder, dim, theorem

        @theorem
        def gram_cancel():
            n, p = dim("n"), dim("p")
            X = MatrixSymbol("X", n, p)
            b = ProofBuilder("gram_cancel", "{TITLE}", "s")
            b.main((X.T*X).I*X.T*X).auto(Identity(p))
            return b.proof()
    '''))
    result = subprocess.run([sys.executable, "-m", "derive", "prove", "--library", str(tmp_path / "lib.py"),
                             "gram_cancel"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 1 and "Traceback" not in result.stderr + result.stdout
    assert "gram_cancel/statement: the claim's two sides are the same term as given, I = I" in result.stderr
