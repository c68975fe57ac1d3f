"""The Kronecker product in every output (issue 41): ``derive.kron(A, B)`` printed in LaTeX (``A \\otimes B``) and plain
text (``A ⊗ B``) with its parentheses, its six rules read as words beside proof lines, judged by the witness and the
refuter, and printed by ``derive codegen`` in every backend's module (``tests/data/user_kron_codegen.py``), the
printed functions agreeing with exact evaluation on random data.

The kernel's side (the rules on explicit matrices) is ``tests/test_rules.py``.
"""

from __future__ import annotations

import dataclasses
import inspect
import random
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from sympy import Identity, Matrix, MatrixSymbol, Q, Rational

from derive import (
    ProofBuilder,
    ProofError,
    add,
    block,
    check,
    dim,
    inv,
    kron,
    mul,
    power,
    predicate,
    scalar,
    transpose,
    tril,
)
from derive.kernel import Chain
from derive.kernel.terms import Kron
from derive.latex import RULE_TEXT, article_latex, rule_text, theorem_latex
from derive.latex.article import KRON_CONVENTION
from derive.latex.printer import PaperLatexPrinter, math
from derive.plaintext import plain
from derive.refute import confirm, refute
from derive.witness import check_instances
from derive.witness.evaluate import evaluate

DATA = Path(__file__).resolve().parent / "data"
ROOT = Path(__file__).resolve().parents[1]
BACKENDS = ("numpy", "mpmath", "xp", "dask")
RULES = ("kron_mixed", "kron_transpose", "kron_inverse", "kron_sum", "kron_scale", "kron_identity")

m, n, p, q = dim("m"), dim("n"), dim("p"), dim("q")
A, B = MatrixSymbol("A", m, m), MatrixSymbol("B", n, n)
C, D = MatrixSymbol("C", m, p), MatrixSymbol("D", n, q)
M, N = MatrixSymbol("M", m, m), MatrixSymbol("N", n, n)
W = MatrixSymbol("W_Q", m, m)
gamma = scalar("gamma")


def _invertible(theorem_id: str) -> ProofBuilder:
    return ProofBuilder(theorem_id, "Solving with a Kronecker product", "A solve factor by factor.",
                        [predicate("A_inv", Q.invertible, A), predicate("B_inv", Q.invertible, B)])


@pytest.fixture(scope="module")
def solve_theorem():
    b = _invertible("kron_solve_outputs")
    b.main(mul(inv(kron(A, B)), kron(C, D))).auto(kron(mul(inv(A), C), mul(inv(B), D)))
    return check(b.proof())


@pytest.fixture(scope="module")
def inverse_theorem():
    b = _invertible("kron_inverse_outputs")
    b.main(inv(kron(A, B))).auto(kron(inv(A), inv(B)))
    return check(b.proof())


# --- LaTeX ------------------------------------------------------------------------------------------------------


def test_latex_of_the_kronecker_product_and_its_parentheses():
    assert math(kron(A, B)) == r"A \otimes B"
    assert math(transpose(kron(A, B))) == r"(A \otimes B)^{\top}"
    assert math(inv(kron(A, B))) == r"(A \otimes B)^{-1}"
    assert math(power(kron(A, B), 2)) == r"(A \otimes B)^{2}"
    assert math(mul(kron(A, B), kron(M, N))) == r"(A \otimes B) (M \otimes N)"
    assert math(kron(mul(A, M), mul(B, N))) == r"(A M) \otimes (B N)"
    assert math(add(kron(A, B), kron(M, N))) == r"A \otimes B + M \otimes N"  # binds more tightly than a sum
    assert math(kron(add(A, M), B)) == r"(A + M) \otimes B"
    assert math(kron(A, kron(B, N))) == r"A \otimes (B \otimes N)"
    assert math(kron(kron(A, B), N)) == r"(A \otimes B) \otimes N"
    assert math(mul(2, kron(A, B))) == r"2 (A \otimes B)"
    assert math(mul(-1, kron(A, B))) == r"-(A \otimes B)"
    assert math(mul(gamma, kron(A, B))) == r"\gamma (A \otimes B)"
    assert math(kron(mul(gamma, A), B)) == r"(\gamma A) \otimes B"
    assert math(kron(transpose(A), inv(B))) == r"A^{\top} \otimes B^{-1}"  # postfixes bind tighter
    assert math(kron(tril(A), B)) == r"\operatorname{tril}(A) \otimes B"
    assert math(mul(W, kron(A, B))) == r"W_{Q} (A \otimes B)"
    assert math(kron(block([[A, A], [A, A]]), B)) == r"\begin{bmatrix}A & A \\ A & A\end{bmatrix} \otimes B"
    assert math(kron(MatrixSymbol("Lambda", m, m), B)) == r"\Lambda \otimes B"


def test_latex_of_the_kronecker_product_in_a_display():
    printer = PaperLatexPrinter({"breaks": r"\olsbreak"})
    text = printer.doprint_breakable(mul(kron(block([[A, A], [A, A]]), B), kron(M, N)))
    assert text == (r"\olsparen{\begin{bmatrix}A & A \\ A & A\end{bmatrix} \otimes B} \olsbreak (M \otimes N)")
    assert PaperLatexPrinter({"breaks": r"\olsbreak"}).doprint_breakable(
        mul(kron(block([[A, A], [A, A]]), B), kron(M, N))) == text  # deterministic


def test_the_rules_of_the_kronecker_product_read_as_words():
    for rule in RULES:
        assert "Kronecker product" in RULE_TEXT[rule] and rule_text(rule) == RULE_TEXT[rule]
        assert "kron" not in RULE_TEXT[rule]


def test_a_theorem_with_the_kronecker_product_prints_and_the_article_explains_it_once(solve_theorem):
    fragment = theorem_latex(solve_theorem, macros=False)
    assert r"\[ (A \otimes B)^{-1} (C \otimes D) = (A^{-1} C) \otimes (B^{-1} D). \]" in fragment
    assert (r"(A \otimes B)^{-1} (C \otimes D) &= (A^{-1} \otimes B^{-1}) (C \otimes D) "
            r"\tag*{\small(inverse of a Kronecker product)}") in fragment
    assert r"&= (A^{-1} C) \otimes (B^{-1} D) \tag*{\small(mixed product of Kronecker products)}" in fragment
    assert r"\operatorname{Kron}" not in fragment and "kron(" not in fragment
    article = article_latex([solve_theorem])
    assert article.count(KRON_CONVENTION) == 1 and r"A \otimes B" in KRON_CONVENTION
    assert article_latex([solve_theorem]) == article  # deterministic


def test_an_article_without_the_kronecker_product_does_not_mention_it():
    b = ProofBuilder("no_kron", "No Kronecker product", "AB transposed.", [])
    b.main(transpose(mul(A, W))).auto(mul(transpose(W), transpose(A)))
    article = article_latex([check(b.proof())])
    assert KRON_CONVENTION not in article and r"\otimes" not in article


# --- plain text -------------------------------------------------------------------------------------------------


def test_plain_text_of_the_kronecker_product():
    assert plain(kron(A, B)) == "A ⊗ B"
    assert plain(transpose(kron(A, B))) == "(A ⊗ B)ᵀ"
    assert plain(inv(kron(A, B))) == "(A ⊗ B)⁻¹"
    assert plain(power(kron(A, B), 2)) == "(A ⊗ B)²"
    assert plain(mul(kron(A, B), kron(M, N))) == "(A ⊗ B)(M ⊗ N)"
    assert plain(kron(mul(A, M), mul(B, N))) == "(AM) ⊗ (BN)"
    assert plain(add(kron(A, B), kron(M, N))) == "A ⊗ B + M ⊗ N"
    assert plain(kron(add(A, M), B)) == "(A + M) ⊗ B"
    assert plain(kron(A, kron(B, N))) == "A ⊗ (B ⊗ N)"
    assert plain(kron(kron(A, B), N)) == "(A ⊗ B) ⊗ N"
    assert plain(mul(2, kron(A, B))) == "2(A ⊗ B)"
    assert plain(mul(-1, kron(A, B))) == "-(A ⊗ B)"
    assert plain(kron(mul(gamma, A), B)) == "(γA) ⊗ B"
    assert plain(kron(transpose(A), inv(B))) == "Aᵀ ⊗ B⁻¹"
    assert plain(kron(tril(A), B)) == "tril(A) ⊗ B"
    assert plain(mul(A, transpose(kron(A, B)))) == "A(A ⊗ B)ᵀ"
    assert plain(mul(W, kron(A, B))) == "W_Q·(A ⊗ B)"  # a longer name: ·, as for any parenthesised factor
    assert plain(kron(block([[A, A], [A, A]]), B)) == "[A, A; A, A] ⊗ B"
    assert plain(kron(A, B), raw=True) == "A ⊗ B"
    long = kron(kron(kron(A, B), kron(A, B)), kron(A, B))
    assert plain(long, limit=10) == "((A ⊗ B) …" and len(plain(long, limit=10)) <= 10


def test_plain_text_of_a_proof_line(solve_theorem):
    step = solve_theorem.proof.claim.steps[0]
    assert step.rule == "kron_inverse" and plain(step.expr) == "(A⁻¹ ⊗ B⁻¹)(C ⊗ D)"


# --- the witness and the refuter ----------------------------------------------------------------------------------


def test_the_witness_evaluates_every_step(solve_theorem, inverse_theorem):
    for theorem in (solve_theorem, inverse_theorem):
        report = check_instances(theorem.proof, trials=2)
        assert report.instances > 0 and report.steps > 0


def test_the_refuter_accepts_the_true_inverse(inverse_theorem):
    assert refute(inverse_theorem.proof, budget=40).kind == "true_on_instances"


@pytest.mark.parametrize("wrong", ["swapped_inverse", "swapped_transpose"])
def test_a_swapped_kronecker_product_is_refuted(inverse_theorem, wrong):
    if wrong == "swapped_inverse":  # (A ⊗ B)⁻¹ = B⁻¹ ⊗ A⁻¹: the factors the wrong way round
        lhs, rhs = inv(kron(A, B)), kron(inv(B), inv(A))
    else:  # (C ⊗ D)ᵀ = Dᵀ ⊗ Cᵀ
        lhs, rhs = transpose(kron(C, D)), kron(transpose(D), transpose(C))
    statement = dataclasses.replace(inverse_theorem.proof, claim=Chain("main", lhs, rhs, ()))
    verdict = refute(statement)
    assert verdict.kind == "false" and confirm(statement, verdict.values)
    i, j = verdict.entry
    assert verdict.lhs_value[i, j] != verdict.rhs_value[i, j]


def test_auto_names_the_swapped_inverse_false():
    b = _invertible("kron_near_miss")
    with pytest.raises(ProofError) as caught:  # as a researcher meets it
        b.main(inv(kron(A, B))).auto(kron(inv(B), inv(A)))
    assert caught.value.counterexample is not None and caught.value.counterexample.kind == "false"


def test_the_refute_command_judges_a_library_with_the_kronecker_product(tmp_path):
    shutil.copy(DATA / "user_kron_codegen.py", tmp_path / "user_kron_codegen.py")
    result = subprocess.run([sys.executable, "-m", "derive", "refute", "--library", "user_kron_codegen.py",
                             "--budget", "20"], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "kron_inverse_solve/main: no counterexample" in result.stdout and "0 false" in result.stdout


# --- codegen ------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def library(user_library_modules):
    """The library's theorems (checked) and its module for each backend, written to a folder (conftest)."""
    return user_library_modules("user_kron_codegen")


def test_the_kronecker_product_is_printed_in_each_backends_idiom(library):
    _, _, texts = library
    numpy = texts["numpy"]
    assert "kron_product = (_printed_kron(A, B) @ _printed_kron(C, D))" in numpy
    assert "kron_of_products = _printed_kron(A @ C, B @ D)" in numpy
    assert "kron_solve = np.linalg.solve(_printed_kron(S, T), _printed_kron(E, F))" in numpy
    assert "kron_factored_solve = _printed_kron(np.linalg.solve(S, E), np.linalg.solve(T, F))" in numpy
    assert "kron_weights = _printed_kron((gamma)*A, B)" in numpy
    assert 'kron_with_identity = (_printed_kron(("I", E.shape[-2], 1), T) @ _printed_kron(E, F))' in numpy
    assert "return np.kron(A, B)" in numpy  # single matrices: NumPy's own
    assert texts["dask"].count("def _printed_kron(A, B):") == 1  # NumPy-printed, on the arguments made NumPy arrays
    assert "_general_solve(_printed_kron(S, T), _printed_kron(E, F))" in texts["xp"]
    assert "xp = array_namespace(array)" in texts["xp"] and "np." not in texts["xp"].split("def _printed_kron", 1)[1]
    assert "_lu_solve(_printed_kron(S, T), _printed_kron(E, F))" in texts["mpmath"]
    assert "out = mpmath.zeros(A.rows * B.rows, A.cols * B.cols)" in texts["mpmath"]
    assert '_printed_kron(("I", E.rows, 1), T)' in texts["mpmath"]
    for text in texts.values():
        assert "Kron(" not in text.split('"""', 2)[2]  # the docstring writes kron(...), the code never Kron


def test_the_library_modules_pass_ruff(library):
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed")
    work, _, _ = library
    files = [f"user_kron_codegen_{backend}.py" for backend in BACKENDS]
    result = subprocess.run([ruff, "check", "--config", str(ROOT / "pyproject.toml"), *files], capture_output=True,
                            text=True, cwd=work)
    assert result.returncode == 0, result.stdout + result.stderr


def _rational_data(rng: random.Random, theorems: dict, sizes: dict) -> tuple[dict, dict]:
    """Random rational matrices for every matrix symbol of the library's theorems (S and T invertible), and the
    dimensions (by their names in ``sizes``)."""
    symbols = {}
    for theorem in theorems.values():
        claim = theorem.proof.claim
        for symbol in (claim.lhs.atoms(MatrixSymbol) | claim.rhs.atoms(MatrixSymbol)):
            symbols[str(symbol.name)] = symbol
    dims = {size: sizes[str(size)] for symbol in symbols.values() for x in symbol.shape for size in x.free_symbols}

    def draw(rows, cols):
        return Matrix(rows, cols, lambda i, j: Rational(rng.randint(-9, 9), rng.randint(1, 4)))

    values = {}
    for name in sorted(symbols):
        symbol = symbols[name]
        rows, cols = (int(x.xreplace(dims)) for x in symbol.shape)
        value = draw(rows, cols)
        while name in ("S", "T") and value.det() == 0:
            value = draw(rows, cols)
        values[symbol] = value
    return values, dims


def _printed(theorems: dict, name: str):
    """(the declaration, the exact term it prints)."""
    from derive.codegen.generate import declared_printed, printed_assignments

    declared = next(x for x in declared_printed() if x.name == name)
    return declared, list(printed_assignments(theorems[declared.theorem], declared).values())[-1]


EXPECTED = ("kron_product", "kron_of_products", "kron_solve", "kron_factored_solve", "kron_transposed",
            "kron_transposed_terms", "kron_weights", "kron_with_identity", "kron_without_identity")
SIZES = ({"m": 1, "n": 1, "p": 1, "q": 1, "r": 1, "s": 1}, {"m": 2, "n": 3, "p": 3, "q": 2, "r": 2, "s": 1},
         {"m": 3, "n": 2, "p": 1, "q": 2, "r": 3, "s": 2})


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_printed_functions_agree_with_exact_evaluation(library, backend, load_module):
    np = pytest.importorskip("numpy")
    if backend == "mpmath":
        pytest.importorskip("mpmath")
    if backend == "xp":
        pytest.importorskip("array_api_compat")
    from derive.authoring.registry import load_library, scoped_registrations

    work, theorems, _ = library
    module = load_module(work / f"user_kron_codegen_{backend}.py", f"user_kron_codegen_{backend}_exact")
    rng = random.Random(f"kron/{backend}")
    g = Rational(-3, 2)
    with scoped_registrations():  # the declarations, to find the term each function prints
        load_library(str(work / "user_kron_codegen.py"))
        printed = {name: _printed(theorems, name) for name in EXPECTED}
    for sizes in SIZES:
        values, dims = _rational_data(rng, theorems, sizes)
        for name, (_declared, term) in printed.items():
            exact = evaluate(term, {s: v for s, v in values.items() if s in term.free_symbols}, dims,
                             {s: g for s in term.free_symbols if str(s) == "gamma"})
            function = getattr(module, name)
            by_name = {**{str(s.name): v for s, v in values.items()}, "gamma": g}
            args = [by_name[p] for p in inspect.signature(function).parameters]
            if backend == "mpmath":  # exact inputs: lists of rows of fractions, a fraction
                got = function(*[[[Fraction(int(x.p), int(x.q)) for x in a.row(i)] for i in range(a.rows)]
                                 if isinstance(a, Matrix) else Fraction(int(a.p), int(a.q)) for a in args])
                got = np.array([[float(got[i, j]) for j in range(got.cols)] for i in range(got.rows)])
            else:
                got = np.asarray(function(*[np.array(a.tolist(), dtype=float) if isinstance(a, Matrix) else float(a)
                                            for a in args]))
            want = np.array(exact.tolist(), dtype=float)
            assert got.shape == want.shape and np.allclose(got, want, rtol=1e-9, atol=1e-9), (backend, name, sizes)


def test_the_numpy_functions_take_a_stack_of_problems(library, load_module):
    np = pytest.importorskip("numpy")
    work, _, _ = library
    module = load_module(work / "user_kron_codegen_numpy.py", "user_kron_codegen_numpy_stack")
    rng = np.random.default_rng(41)
    As, Bs = rng.standard_normal((4, 2, 3)), rng.standard_normal((4, 3, 2))
    Cs, Ds = rng.standard_normal((4, 3, 2)), rng.standard_normal((2, 1))  # D one matrix, broadcast over the stack
    for name in ("kron_product", "kron_of_products"):
        got = getattr(module, name)(As, Bs, Cs, Ds)
        assert got.shape == (4, 6, 2)  # np.kron on the stacks would make a 16 × 36 × 4 array
        for k in range(4):
            want = np.kron(As[k], Bs[k]) @ np.kron(Cs[k], Ds)
            assert np.allclose(got[k], want, rtol=1e-12, atol=1e-12), name


@pytest.mark.parametrize("namespace", ["numpy", "array_api_strict", "torch"])
def test_the_xp_functions_run_on_array_api_namespaces(library, namespace, load_module):
    np = pytest.importorskip("numpy")
    pytest.importorskip("array_api_compat")
    xp = pytest.importorskip(namespace)
    work, _, _ = library
    module = load_module(work / "user_kron_codegen_xp.py", f"user_kron_codegen_xp_{namespace}")
    rng = np.random.default_rng(7)
    S, T = rng.standard_normal((3, 2, 2)) + 3 * np.eye(2), rng.standard_normal((3, 3, 3)) + 3 * np.eye(3)
    E, F = rng.standard_normal((3, 2, 2)), rng.standard_normal((3, 3, 1))
    for name in ("kron_solve", "kron_factored_solve"):
        got = np.asarray(getattr(module, name)(*(xp.asarray(a) for a in (E, F, S, T))))
        assert got.shape == (3, 6, 2)
        for k in range(3):
            want = np.linalg.solve(np.kron(S[k], T[k]), np.kron(E[k], F[k]))
            assert np.allclose(got[k], want, rtol=1e-10, atol=1e-10), (namespace, name)
    for name in ("kron_with_identity", "kron_without_identity"):  # the identity made in the arrays' namespace
        got = np.asarray(getattr(module, name)(*(xp.asarray(a) for a in (E, F, T))))
        for k in range(3):
            assert np.allclose(got[k], np.kron(E[k], T[k] @ F[k]), rtol=1e-12, atol=1e-12), (namespace, name)


def test_a_kronecker_product_with_a_diagonal_held_as_a_vector_is_named_not_printed():
    from derive.codegen import CodegenError
    from derive.codegen.generate import BatchedNumPyPrinter
    from derive.routes import Route

    printer = BatchedNumPyPrinter(Route("r", "main", diagonal=("A",)))
    with pytest.raises(CodegenError, match="Kronecker product with A, a diagonal held as a vector"):
        printer.doprint(Kron(A, B))
    assert BatchedNumPyPrinter(Route("r", "main")).doprint(kron(A, transpose(B))) == \
        "_printed_kron(A, np.swapaxes(B, -1, -2))"


def test_a_kronecker_product_of_two_identities_is_named_not_printed():
    from derive.codegen import CodegenError
    from derive.codegen.generate import BatchedNumPyPrinter
    from derive.routes import Route

    with pytest.raises(CodegenError, match="Kronecker product of two multiples of I"):
        BatchedNumPyPrinter(Route("r", "main")).doprint(Kron(Identity(m), Identity(n)))
