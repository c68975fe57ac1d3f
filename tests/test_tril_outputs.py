"""The causal mask in every output (issue 41 item 4): ``derive.tril(A)`` and ``derive.tril(A, -1)`` printed in LaTeX
and plain text, judged by the witness and the refuter, and printed by ``derive codegen`` in every backend's module
(``tests/data/user_tril_codegen.py``), the printed functions agreeing with exact evaluation on random data.

The kernel's side (the rules, definedness, certificates) is ``tests/test_tril.py``; the Coq export is
``tests/test_coq_tril.py``.
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
from sympy import Matrix, MatrixSymbol, Rational

from derive import ProofBuilder, ProofError, add, block, check, dim, mul, scalar, transpose, tril
from derive.kernel import Chain
from derive.kernel.terms import Tril
from derive.latex import RULE_TEXT, article_latex, rule_text, theorem_latex
from derive.latex.article import TRIL_CONVENTION
from derive.latex.printer import PaperLatexPrinter, math
from derive.plaintext import plain
from derive.refute import confirm, refute
from derive.witness import check_instances
from derive.witness.evaluate import evaluate

DATA = Path(__file__).resolve().parent / "data"
ROOT = Path(__file__).resolve().parents[1]
BACKENDS = ("numpy", "mpmath", "xp", "dask")

c, C, d, e, t = dim("c"), dim("C"), dim("d"), dim("e"), dim("t")
Q_a, Q_b = MatrixSymbol("Q_a", c, d), MatrixSymbol("Q_b", C, d)
K_a, K_b = MatrixSymbol("K_a", c, d), MatrixSymbol("K_b", C, d)
V_a, V_b = MatrixSymbol("V_a", c, e), MatrixSymbol("V_b", C, e)
Q, K, V = MatrixSymbol("Q", t, d), MatrixSymbol("K", t, d), MatrixSymbol("V", t, e)
A = MatrixSymbol("A", t, t)
gamma = scalar("gamma")


def _chunkwise(k: int = 0, second: int | None = None):
    """(lhs, rhs) of chunkwise causal attention with the mask tril(·, k); ``second`` the offset of the second chunk's
    own mask on the right side (a near-miss where it differs from k)."""
    lhs = mul(tril(mul(block([[Q_a], [Q_b]]), transpose(block([[K_a], [K_b]]))), k), block([[V_a], [V_b]]))
    second = k if second is None else second
    rhs = block([[mul(tril(mul(Q_a, transpose(K_a)), k), V_a)],
                 [add(mul(Q_b, transpose(K_a), V_a), mul(tril(mul(Q_b, transpose(K_b)), second), V_b))]])
    return lhs, rhs


@pytest.fixture(scope="module")
def chunk_theorem():
    lhs, rhs = _chunkwise()
    b = ProofBuilder("chunkwise_outputs", "Chunkwise causal attention", "A mask per chunk.", [])
    b.main(lhs).auto(rhs)
    return check(b.proof())


# --- LaTeX ------------------------------------------------------------------------------------------------------


def test_latex_of_the_mask_and_the_strict_mask():
    assert math(tril(A)) == r"\operatorname{tril}(A)"
    assert math(tril(A, -1)) == r"\operatorname{tril}_{-1}(A)"
    assert math(mul(tril(mul(Q, transpose(K))), V)) == r"\operatorname{tril}(Q K^{\top}) V"
    assert math(mul(gamma, tril(mul(Q, transpose(K)), -1), V)) == r"\gamma \operatorname{tril}_{-1}(Q K^{\top}) V"
    assert math(transpose(tril(A))) == r"\operatorname{tril}(A)^{\top}"  # a function's value: no extra parentheses
    assert math(mul(transpose(V), tril(A, -1))) == r"V^{\top} \operatorname{tril}_{-1}(A)"
    assert math(tril(add(A, mul(2, transpose(A))), -1)) == r"\operatorname{tril}_{-1}(2 A^{\top} + A)"
    assert math(tril(block([[A, A], [A, A]]))) == \
        r"\operatorname{tril}\left(\begin{bmatrix}A & A \\ A & A\end{bmatrix}\right)"
    assert math(tril(MatrixSymbol("Lambda", t, t))) == r"\operatorname{tril}(\Lambda)"  # escaped by the printer


def test_latex_of_the_mask_in_a_display_may_break_inside_its_parentheses():
    lhs, _ = _chunkwise()
    printer = PaperLatexPrinter({"breaks": r"\olsbreak"})
    text = printer.doprint_breakable(lhs)
    assert text == (r"\operatorname{tril}\olsparen{\begin{bmatrix}Q_{a} \\ Q_{b}\end{bmatrix} \olsbreak "
                    r"\begin{bmatrix}K_{a} \\ K_{b}\end{bmatrix}^{\top}} \olsbreak \begin{bmatrix}V_{a} \\ "
                    r"V_{b}\end{bmatrix}")
    assert PaperLatexPrinter({"breaks": r"\olsbreak"}).doprint_breakable(lhs) == text  # deterministic


def test_the_rules_of_the_mask_read_as_words():
    for rule in ("tril_block", "tril_scalar", "tril_sum", "tril_scale", "tril_diagonal", "tril_diag_scale"):
        assert RULE_TEXT[rule].startswith("causal mask of") and rule_text(rule) == RULE_TEXT[rule]


def test_a_theorem_with_the_mask_prints_and_the_article_explains_tril_once(chunk_theorem):
    fragment = theorem_latex(chunk_theorem, macros=False)
    assert r"\operatorname{tril}\left(\begin{bmatrix}Q_{a} \\ Q_{b}\end{bmatrix}" in fragment
    assert r"\operatorname{tril}(Q_{a} K_{a}^{\top}) V_{a}" in fragment
    assert "(causal mask of a block matrix)" in fragment and "Tril" not in fragment
    article = article_latex([chunk_theorem])
    assert article.count(TRIL_CONVENTION) == 1 and r"\operatorname{tril}_{-1}(A)" in TRIL_CONVENTION
    assert article_latex([chunk_theorem]) == article  # deterministic


def test_an_article_without_the_mask_does_not_mention_it():
    b = ProofBuilder("no_mask", "No mask", "QKᵀ transposed.", [])
    b.main(transpose(mul(Q, transpose(K)))).auto(mul(K, transpose(Q)))
    article = article_latex([check(b.proof())])
    assert TRIL_CONVENTION not in article and r"\operatorname{tril}" not in article


# --- plain text -------------------------------------------------------------------------------------------------


def test_plain_text_of_the_mask():
    assert plain(tril(A)) == "tril(A)"
    assert plain(tril(A, -1)) == "tril(A, -1)"
    assert plain(mul(tril(mul(Q, transpose(K))), V)) == "tril(QKᵀ)V"
    assert plain(mul(gamma, tril(mul(Q, transpose(K)), -1), V)) == "γ·tril(QKᵀ, -1)V"
    assert plain(transpose(tril(A))) == "tril(A)ᵀ"
    assert plain(mul(transpose(V), tril(A, -1))) == "Vᵀ·tril(A, -1)"  # never Vᵀtril: a name would run on
    lhs, rhs = _chunkwise()
    assert plain(lhs) == "tril([Qₐ; Q_b][Kₐ; K_b]ᵀ)[Vₐ; V_b]"
    assert plain(rhs) == "[tril(QₐKₐᵀ)Vₐ; tril(Q_b·K_bᵀ)·V_b + Q_b·KₐᵀVₐ]"


# --- the witness and the refuter ----------------------------------------------------------------------------------


def test_the_witness_evaluates_every_step_of_the_chunkwise_proof(chunk_theorem):
    report = check_instances(chunk_theorem.proof, trials=2)
    assert report.instances > 0 and report.steps > 0


def test_the_refuter_finds_no_counterexample_to_the_true_identity(chunk_theorem):
    assert refute(chunk_theorem.proof, budget=40).kind == "true_on_instances"


def test_a_strict_mask_on_the_second_chunk_is_refuted(chunk_theorem):
    lhs, wrong = _chunkwise(0, second=-1)  # the second chunk loses its diagonal: false
    statement = dataclasses.replace(chunk_theorem.proof, claim=Chain("main", lhs, wrong, ()))
    verdict = refute(statement)
    assert verdict.kind == "false" and confirm(statement, verdict.values)
    i, j = verdict.entry
    assert verdict.lhs_value[i, j] != verdict.rhs_value[i, j]
    b = ProofBuilder("chunkwise_near_miss", "A near-miss", "The strict mask on the second chunk.", [])
    with pytest.raises(ProofError) as caught:  # as a researcher meets it: .auto says it is false
        b.main(lhs).auto(wrong)
    assert caught.value.counterexample is not None and caught.value.counterexample.kind == "false"


def test_the_refute_command_judges_a_library_with_the_mask(tmp_path):
    shutil.copy(DATA / "user_tril_codegen.py", tmp_path / "user_tril_codegen.py")
    result = subprocess.run([sys.executable, "-m", "derive", "refute", "--library", "user_tril_codegen.py",
                             "--budget", "20"], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "chunkwise_strict/main: no counterexample" in result.stdout and "0 false" in result.stdout


# --- codegen ------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def library(user_library_modules):
    """The library's theorems (checked) and its module for each backend, written to a folder (conftest)."""
    return user_library_modules("user_tril_codegen")


def test_the_mask_is_printed_in_each_backends_idiom(library):
    _, _, texts = library
    assert "np.tril(Q_a @ t0) @ V_a" in texts["numpy"] and "np.tril(Q_a @ t0, -1) @ V_a" in texts["numpy"]
    assert "causal_scores = np.tril((gamma)*(Q @ np.swapaxes(K, -1, -2)), -1)" in texts["numpy"]
    assert "np.tril(" in texts["dask"]  # NumPy-printed, on the arguments made NumPy arrays
    assert "_printed_tril(Q @ K.mT, -1)" in texts["xp"] and "return array_namespace(A).tril(A, k=k)" in texts["xp"]
    assert "_printed_tril(" in texts["mpmath"] and "out = A.copy()" in texts["mpmath"]
    for text in texts.values():
        assert "Tril(" not in text.split('"""', 2)[2]  # the docstring writes tril(...), the code never Tril


def test_the_library_modules_pass_ruff(library):
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed")
    work, _, _ = library
    files = [f"user_tril_codegen_{backend}.py" for backend in BACKENDS]
    result = subprocess.run([ruff, "check", "--config", str(ROOT / "pyproject.toml"), *files], capture_output=True,
                            text=True, cwd=work)
    assert result.returncode == 0, result.stdout + result.stderr


def _rational_data(rng: random.Random, sizes: dict) -> tuple[dict, dict]:
    """Random rational matrices for every symbol of the library (by its name), and the dimensions."""
    dims = {c: sizes["c"], C: sizes["C"], d: sizes["d"], e: sizes["e"], t: sizes["c"] + sizes["C"]}

    def draw(rows, cols):
        return Matrix(rows, cols, lambda i, j: Rational(rng.randint(-9, 9), rng.randint(1, 4)))

    values = {s: draw(*(dims[x] for x in s.shape)) for s in (Q_a, Q_b, K_a, K_b, V_a, V_b, Q, K, V)}
    return values, dims


def _printed(theorems: dict, name: str):
    """(the declaration, the exact term it prints)."""
    from derive.codegen.generate import declared_printed, printed_assignments

    declared = next(x for x in declared_printed() if x.name == name)
    return declared, list(printed_assignments(theorems[declared.theorem], declared).values())[-1]


EXPECTED = ("causal_attention", "chunkwise_attention", "chunkwise_strict_attention", "causal_scores", "scaled_causal")


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_printed_functions_agree_with_exact_evaluation(library, backend, load_module):
    np = pytest.importorskip("numpy")
    if backend == "mpmath":
        pytest.importorskip("mpmath")
    if backend == "xp":
        pytest.importorskip("array_api_compat")
    from derive.authoring.registry import load_library, scoped_registrations

    work, theorems, _ = library
    module = load_module(work / f"user_tril_codegen_{backend}.py", f"user_tril_codegen_{backend}_exact")
    rng = random.Random(f"tril/{backend}")
    g = Rational(-3, 2)
    with scoped_registrations():  # the declarations, to find the term each function prints
        load_library(str(work / "user_tril_codegen.py"))
        printed = {name: _printed(theorems, name) for name in EXPECTED}
    for sizes in ({"c": 1, "C": 1, "d": 1, "e": 1}, {"c": 2, "C": 3, "d": 2, "e": 2}, {"c": 4, "C": 3, "d": 3, "e": 1}):
        values, dims = _rational_data(rng, sizes)
        for name, (_declared, term) in printed.items():
            exact = evaluate(term, {s: v for s, v in values.items() if s in term.free_symbols}, dims, {gamma: g})
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
            assert got.shape == want.shape and np.allclose(got, want, rtol=1e-12, atol=1e-12), (backend, name, sizes)


def test_the_numpy_functions_take_a_stack_of_problems(library, load_module):
    np = pytest.importorskip("numpy")
    work, _, _ = library
    module = load_module(work / "user_tril_codegen_numpy.py", "user_tril_codegen_numpy_stack")
    rng = np.random.default_rng(42)
    Qs, Ks, Vs = rng.standard_normal((3, 7, 4)), rng.standard_normal((3, 7, 4)), rng.standard_normal((3, 7, 2))
    want = np.tril(Qs @ np.swapaxes(Ks, -1, -2)) @ Vs
    # the first chunk is the first 3 tokens; the arguments are (K_a, K_b, Q_a, Q_b, V_a, V_b), by name
    got = module.causal_attention(Ks[:, :3], Ks[:, 3:], Qs[:, :3], Qs[:, 3:], Vs[:, :3], Vs[:, 3:])
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12)
    chunked = module.chunkwise_attention(Ks[:, :3], Ks[:, 3:], Qs[:, :3], Qs[:, 3:], Vs[:, :3], Vs[:, 3:])
    assert np.allclose(chunked, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("namespace", ["numpy", "array_api_strict"])
def test_the_xp_functions_run_on_array_api_namespaces(library, namespace, load_module):
    np = pytest.importorskip("numpy")
    pytest.importorskip("array_api_compat")
    xp = pytest.importorskip(namespace)
    work, _, _ = library
    module = load_module(work / "user_tril_codegen_xp.py", f"user_tril_codegen_xp_{namespace}")
    rng = np.random.default_rng(7)
    Qn, Kn, Vn = rng.standard_normal((5, 3)), rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    want = 0.5 * np.tril(Qn @ Kn.T, -1) @ Vn
    got = module.scaled_causal(xp.asarray(Kn), xp.asarray(Qn), xp.asarray(Vn), 0.5)
    assert np.allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


def test_a_mask_of_a_diagonal_held_as_a_vector_is_named_not_printed():
    from derive.codegen import CodegenError
    from derive.codegen.generate import BatchedNumPyPrinter
    from derive.routes import Route

    printer = BatchedNumPyPrinter(Route("r", "main", diagonal=("A",)))
    with pytest.raises(CodegenError, match="causal mask of A, a diagonal held as a vector"):
        printer.doprint(Tril(A, 0))
    assert BatchedNumPyPrinter(Route("r", "main")).doprint(tril(A, -1)) == "np.tril(A, -1)"
