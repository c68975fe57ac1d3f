"""Generated numeric code: regenerated from checked theorems in every run, then used on data."""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import shutil
import subprocess
import sys
import warnings
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest

from derive.authoring.registry import checked
from derive.cli import main
from derive.codegen import (
    REQUIRED_THEOREMS,
    CodegenError,
    Term,
    generate,
    mpmath_module,
    numerics_mpmath,
    numerics_numpy,
    numpy_module,
    registered_printed,
    required_theorems,
    term_expression,
)
from derive.experiments.nist import CONSTRUCTIONS, design, design_text, exact_least_squares, load_datasets, lre
from derive.kernel import check
from derive.library import LIBRARY


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("code")
    assert main(["codegen", "--out", str(out)]) == 0
    modules = {}
    for name in ("ols_attention", "ols_attention_mp"):
        spec = importlib.util.spec_from_file_location(f"generated_{name}", out / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules[name] = module
    return out, modules["ols_attention"], modules["ols_attention_mp"]


@pytest.fixture(scope="module")
def theorems():
    return {t: checked(t) for t in REQUIRED_THEOREMS}  # as this process checked them: not the same work twice


def test_generation_is_deterministic_and_names_its_theorems(generated, theorems, tmp_path):
    out, _, _ = generated
    assert main(["codegen", "--backend", "numpy", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "ols_attention.py").read_bytes() == (out / "ols_attention.py").read_bytes()
    assert not (tmp_path / "ols_attention_mp.py").exists()
    text = (out / "ols_attention.py").read_text()
    for theorem_id, theorem in theorems.items():
        assert f"{theorem_id}" in text and theorem.digest in text
    for name in ("ols_attention.py", "ols_attention_mp.py"):
        assert "matrix_power" not in (out / name).read_text()


def test_generator_refuses_unchecked_input(theorems):
    unchecked = dict(theorems)
    unchecked["gauge_invariance"] = LIBRARY["gauge_invariance"]()  # a Proof, not a Theorem
    with pytest.raises(CodegenError, match="checked theorems only"):
        numpy_module(unchecked)
    with pytest.raises(CodegenError):
        mpmath_module({k: v for k, v in theorems.items() if k != "pseudo_inverse"})


def test_header_names_each_printed_function_and_the_fixed_numerics(generated, theorems):
    out, oa, om = generated
    declared = registered_printed()
    for module, numerics in ((oa, numerics_numpy), (om, numerics_mpmath)):
        header = module.__doc__
        for name in numerics.PRINTED_PARAMETERS:
            item = declared[name]
            assert f"{item.function}" in header and f"{item.theorem}, {item.source}" in header
            assert theorems[item.theorem].digest in header
            assert module.PRINTED[name] is getattr(module, item.function)
        assert numerics.__name__ in header
        for theorem_id in numerics.RELIES_ON:
            assert f"{theorem_id}:" in header and theorems[theorem_id].digest in header
    assert "gram_route" in oa._eigh_beta.__doc__ and "definition P" in oa._P.__doc__


def test_declarations_give_the_printed_functions_and_the_required_theorems():
    declared = registered_printed()
    assert {name: d.theorem for name, d in declared.items()} == {
        "eigh": "ols_is_linear_attention", "scores": "ols_is_linear_attention", "P": "paper_construction",
        "cholesky": "gauge_invariance", "svd": "gauge_invariance", "qr": "gauge_invariance",
        "ridge_spectral": "ridge_is_linear_attention", "ridge_dual": "kernel_ridge_push_through",
        "chunk_outputs": "chunkwise_linear_attention", "chunk_state": "chunkwise_linear_attention",
        "delta_chunk_outputs": "delta_rule_chunkwise", "delta_chunk_state": "delta_rule_chunkwise"}
    assert set(REQUIRED_THEOREMS) == {"ols_is_linear_attention", "gauge_invariance", "paper_construction",
                                      "pseudo_inverse", "preconditioned_gd", "ridge_is_linear_attention",
                                      "kernel_ridge_push_through", "chunkwise_linear_attention",
                                      "delta_rule_chunkwise"}
    assert "preconditioned_gd" not in required_theorems(["mpmath"])  # the mpmath numerics do not refine
    assert "kernel_ridge_push_through" not in required_theorems(["mpmath"])  # its route is public there
    assert tuple(REQUIRED_THEOREMS) == required_theorems() and len(REQUIRED_THEOREMS) == 9


@pytest.mark.parametrize("backend, numerics", [("ols_attention", numerics_numpy),
                                               ("ols_attention_mp", numerics_mpmath)])
def test_generated_file_is_header_numerics_source_and_printed_functions(generated, backend, numerics):
    text = (generated[0] / f"{backend}.py").read_text()
    source = Path(numerics.__file__).read_text(encoding="utf-8")
    tree = ast.parse(source)
    body = "\n".join(source.splitlines()[tree.body[0].end_lineno:]).strip("\n")
    assert body in text  # the package module's source, verbatim after its docstring
    fixed, printed = text.split(body)
    assert printed.lstrip().startswith("# --- printed from checked lemmas")
    assert '"""' in fixed and not fixed.count("def ")  # the header is the docstring alone
    generated_tree = ast.parse(text)
    imported = {a.name.split(".")[0] for n in ast.walk(generated_tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(generated_tree) if isinstance(n, ast.ImportFrom)}
    allowed = {"numpy" if numerics is numerics_numpy else "mpmath", "__future__"}
    assert imported - allowed <= set(sys.stdlib_module_names) and "derive" not in imported


def test_generated_files_pass_ruff(generated):
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed")
    root = Path(__file__).resolve().parents[1]
    result = subprocess.run([ruff, "check", "--config", str(root / "pyproject.toml"), "ols_attention.py",
                             "ols_attention_mp.py"], cwd=generated[0], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_package_numerics_with_the_printed_functions_are_the_generated_module(generated, monkeypatch):
    _, oa, om = generated
    monkeypatch.setattr(numerics_numpy, "PRINTED", dict(oa.PRINTED))
    monkeypatch.setattr(numerics_mpmath, "PRINTED", dict(om.PRINTED))
    rng = np.random.default_rng(11)
    X, Y, Q = rng.normal(size=(3, 30, 4)), rng.normal(size=(3, 30)), rng.normal(size=(3, 2, 4))
    for route in oa.ROUTES:
        np.testing.assert_array_equal(numerics_numpy.predict(X, Y, Q, route=route), oa.predict(X, Y, Q, route=route))
        if route not in numerics_mpmath.ROUTES:  # "exact": NumPy's accuracy reference (mpmath's "auto" is exact)
            continue
        rows = [[str(v) for v in row] for row in X[0]]
        assert numerics_mpmath.coefficients(rows, list(Y[0]), route=route, dps=30) == \
            om.coefficients(rows, list(Y[0]), route=route, dps=30)


def test_printed_functions_evaluate_their_lemmas(generated):
    _, oa, om = generated
    rng = np.random.default_rng(12)
    X, Y, Xq = rng.normal(size=(2, 20, 3)), rng.normal(size=(2, 20, 2)), rng.normal(size=(2, 4, 3))
    G, XtY = np.swapaxes(X, -1, -2) @ X, np.swapaxes(X, -1, -2) @ Y
    want = np.linalg.solve(G, XtY)
    lam, V = np.linalg.eigh(G)
    U, s, Vt = np.linalg.svd(X, full_matrices=False)
    Q, R = np.linalg.qr(X)
    for got in (oa._eigh_beta(V, lam, XtY), oa._cholesky_beta(np.linalg.cholesky(G), XtY),
                oa._svd_beta(U, s, np.swapaxes(Vt, -1, -2), Y), oa._qr_beta(Q, R, Y)):
        np.testing.assert_allclose(got, want, rtol=1e-10)
    L = V / np.sqrt(lam)[..., None, :]
    np.testing.assert_allclose(oa._P(L, X, Y), np.swapaxes(L, -1, -2) @ XtY, rtol=1e-12)
    np.testing.assert_allclose(oa._scores(Xq, L, X) @ Y, Xq @ want, rtol=1e-10)
    with mpmath.mp.workdps(30):
        Xm, Ym = mpmath.matrix(X[0].tolist()), mpmath.matrix(Y[0].tolist())
        Lm = mpmath.matrix(L[0].tolist())
        assert om._P(Lm, Xm, Ym) == Lm.T * (Xm.T * Ym)  # right to left


def test_printed_ridge_routes_evaluate_their_lemmas(generated):
    """Scalars and multiples of I print: Λ + λI as a shifted vector, XXᵀ + λI as a matrix plus λ on its diagonal."""
    _, oa, om = generated
    rng = np.random.default_rng(13)
    X, Y, ridge = rng.normal(size=(2, 7, 10)), rng.normal(size=(2, 7, 2)), 0.37
    Xt = np.swapaxes(X, -1, -2)
    want = np.linalg.solve(Xt @ X + ridge * np.eye(10), Xt @ Y)  # p > n: XᵀX alone is singular
    lam, V = np.linalg.eigh(Xt @ X)
    np.testing.assert_allclose(oa._ridge_spectral_beta(V, lam, ridge, Xt @ Y), want, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(oa._ridge_dual_beta(X, ridge, Y), want, rtol=1e-9, atol=1e-12)
    assert "ridge" not in om.__all__ and {"ridge_spectral", "ridge_dual"} <= set(om.__all__)  # public in mpmath
    with mpmath.mp.workdps(40):
        got = om.ridge_dual(X[0].tolist(), Y[0].tolist(), "0.37")
        np.testing.assert_allclose(np.array(got.tolist(), dtype=float), want[0], rtol=1e-12, atol=1e-14)
        got = om.ridge_spectral(V[0].tolist(), lam[0].tolist(), 0.37, (Xt @ Y)[0].tolist())
        np.testing.assert_allclose(np.array(got.tolist(), dtype=float), want[0], rtol=1e-9, atol=1e-12)
        with pytest.raises(TypeError, match="ridge"):
            om.ridge_dual(X[0].tolist(), Y[0].tolist(), [1.0])


def test_generator_refuses_what_it_cannot_print(theorems, monkeypatch):
    declared = registered_printed()
    monkeypatch.setattr(generate, "registered_printed", lambda: {k: v for k, v in declared.items() if k != "qr"})
    with pytest.raises(CodegenError, match="calls printed functions no registered theorem declares: qr"):
        numpy_module(theorems)
    renamed = dataclasses.replace(declared["qr"], names={**declared["qr"].names, "R": "R_factor"})
    monkeypatch.setattr(generate, "registered_printed", lambda: {**declared, "qr": renamed})
    with pytest.raises(CodegenError, match="needs R_factor, which derive.codegen.numerics_numpy does not pass"):
        numpy_module(theorems)
    monkeypatch.setattr(generate, "registered_printed", lambda: declared)
    monkeypatch.setitem(numerics_numpy.PRINTED_PARAMETERS, "qr", ("R", "Q", "Y"))
    with pytest.raises(CodegenError, match="calls printed function 'qr' with"):
        numpy_module(theorems)


def test_terms_are_checked():
    with pytest.raises(CodegenError, match="either definition="):
        Term("W", definition="P", lemma="main", values="Y")
    with pytest.raises(CodegenError, match="either definition="):
        Term("W", lemma="main")
    with pytest.raises(CodegenError, match="identifier"):
        Term("not a name", definition="P")
    theorem = check(LIBRARY["ols_is_linear_attention"]())
    with pytest.raises(CodegenError, match="not of the form W X"):
        term_expression(theorem, Term("scores", lemma="main", values="X"))
    with pytest.raises(CodegenError, match="no definition Z"):
        term_expression(theorem, Term("Z", definition="Z"))
    with pytest.raises(CodegenError, match="checked theorems only"):
        term_expression(LIBRARY["ols_is_linear_attention"](), Term("P", definition="P"))


def test_predictions_are_evaluated_right_to_left(generated):
    text = (generated[0] / "ols_attention.py").read_text()
    assert "beta = (L @ (np.swapaxes(L, -1, -2) @ XtY))" in text  # L (Lᵀ (XᵀY)): no n×n or m×n matrix


@pytest.mark.parametrize("route", ["auto", "eigh", "cholesky", "svd", "qr"])
def test_routes_agree_with_lstsq(generated, route):
    _, oa, _ = generated
    rng = np.random.default_rng(1)
    X, Y, Q = rng.normal(size=(40, 5)), rng.normal(size=(40, 3)), rng.normal(size=(6, 5))
    beta = np.linalg.lstsq(X, Y, rcond=None)[0]
    np.testing.assert_allclose(oa.coefficients(X, Y, route=route), beta, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(oa.predict(X, Y, Q, route=route), Q @ beta, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(oa.coefficients(X, Y[:, 0], route=route), beta[:, 0], rtol=1e-10, atol=1e-12)
    assert oa.predict(X, Y[:, 0], Q[0], route=route).shape == ()
    assert oa.predict(X, Y, Q[0], route=route).shape == (3,)
    W_Q, W_K, W_V, P = oa.attention_parameters(X, Y, route=route)
    np.testing.assert_allclose(W_Q @ W_K.T, np.linalg.inv(X.T @ X), rtol=1e-9)
    np.testing.assert_allclose(X @ W_V @ P, X @ beta, rtol=1e-9, atol=1e-12)  # X L P = H Y


def test_batches_of_prompts(generated):
    _, oa, _ = generated
    rng = np.random.default_rng(2)
    X, Y, Q = rng.normal(size=(7, 3, 20, 4)), rng.normal(size=(7, 3, 20)), rng.normal(size=(7, 3, 2, 4))
    want = np.stack([[np.linalg.lstsq(X[i, j], Y[i, j], rcond=None)[0] for j in range(3)] for i in range(7)])
    for route in ("auto", "eigh", "cholesky", "svd", "qr"):
        np.testing.assert_allclose(oa.coefficients(X, Y, route=route), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(oa.predict(X, Y, Q), np.einsum("abmp,abp->abm", Q, want), rtol=1e-10, atol=1e-12)
    big = rng.normal(size=(2000, 30, 4)), rng.normal(size=(2000, 30))  # the large-data (Gram) path of auto
    want = np.stack([np.linalg.lstsq(a, b, rcond=None)[0] for a, b in zip(*big, strict=True)])
    np.testing.assert_allclose(oa.coefficients(*big), want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("zero_column", [False, True])  # True: the stacked Cholesky fails, the spectrum decides
def test_auto_routes_each_problem_of_a_batch_on_its_own(generated, monkeypatch, zero_column):
    """One hard prompt takes the slow route alone; the others stay on the Gram route."""
    _, oa, _ = generated
    rng = np.random.default_rng(5)
    X, Y = rng.normal(size=(300, 40, 5)), rng.normal(size=(300, 40))
    X[3, :, 4] = X[3, :, 0] - X[3, :, 1]  # rank-deficient: the minimum-norm solution
    X[7, :, 4] = X[7, :, 0] + 1e-9 * rng.normal(size=40)  # ill-conditioned: QR
    X[9, :, 4] = X[9, :, 0] + 1e-4 * rng.normal(size=40)  # moderately conditioned: the Gram route, refined
    hard = [3, 7, 9]
    if zero_column:
        X[11, :, 2] = 0.0  # XᵀX singular outright: no Cholesky factor of the whole stack exists
        hard.append(11)
    slow, refined = [], []
    qr_or_svd, refine_gram = oa._qr_or_svd, oa._refine_gram
    monkeypatch.setattr(oa, "_qr_or_svd", lambda X, *rest: slow.append(X.shape) or qr_or_svd(X, *rest))
    monkeypatch.setattr(oa, "_refine_gram",
                        lambda X, *rest, **options: refined.append(X.shape) or refine_gram(X, *rest, **options))
    monkeypatch.setattr(oa.np.linalg, "eigvalsh", lambda *a: pytest.fail("a whole-batch eigenvalue pass"))
    with warnings.catch_warnings():  # "auto": QR not refined for the hard ones; within 10 times lstsq's error
        warnings.simplefilter("ignore", oa.RankDeficientWarning)
        fast = oa.coefficients(X, Y)
    assert slow == [(len(hard) - 1, 40, 5)] and refined == [(1, 40, 5)]
    monkeypatch.undo()
    easy = [b for b in range(300) if b not in hard]
    want = np.stack([np.linalg.lstsq(X[b], Y[b], rcond=None)[0] for b in easy])
    np.testing.assert_allclose(fast[easy], want, rtol=1e-10, atol=1e-12)
    for b in (b for b in hard if b not in (7, 9)):  # the rank-deficient prompts
        np.testing.assert_allclose(fast[b], np.linalg.pinv(X[b]) @ Y[b], rtol=1e-8, atol=1e-12)
    for b in (7, 9):
        exact = exact_least_squares(X[b], Y[b])
        lstsq = np.linalg.lstsq(X[b], Y[b], rcond=None)[0]
        assert np.max(np.abs(fast[b] - exact)) <= max(10 * np.max(np.abs(lstsq - exact)), 1e-13 * np.abs(exact).max())
    # route "exact" (issue 40): every prompt of the stack exactly, rounded once, as it is alone; prompt 3 has full
    # rank only by rounding (X0 − X1 rounds), which it says
    with pytest.warns(oa.RankDeficientWarning, match="full rank only through rounding in 1 of 300 problems"):
        got = oa.coefficients(X, Y, route="exact")
    for b in (0, 1, 7, 9, 299):
        assert np.array_equal(got[b], exact_least_squares(X[b], Y[b])), b


def test_auto_on_many_hard_prompts_refines_them_together(generated):
    """A stack of 1,000 hard prompts (cond about 1e9): route "exact" solves each exactly (rational arithmetic),
    rounded once; "auto" takes QR for all of them, within 10 times lstsq's error."""
    _, oa, _ = generated
    rng = np.random.default_rng(6)
    X, Y = rng.normal(size=(1000, 64, 8)), rng.normal(size=(1000, 64))
    X[:, :, 7] = X[:, :, 0] + 1e-9 * rng.normal(size=(1000, 64))  # cond(X) about 1e9 in every prompt
    got = oa.coefficients(X, Y, route="exact")
    fast = oa.coefficients(X, Y)
    for b in range(0, 1000, 250):
        exact = exact_least_squares(X[b], Y[b])
        assert np.array_equal(got[b], exact), b
        lstsq = np.linalg.lstsq(X[b], Y[b], rcond=None)[0]
        assert np.max(np.abs(fast[b] - exact)) <= 10 * np.max(np.abs(lstsq - exact)), b


def test_auto_on_a_tall_narrow_problem_forms_no_n_by_n_matrix(generated):
    """150,000 × 2 is small enough for exactly rounded refinement, and far too big for an n×n identity."""
    _, oa, _ = generated
    rng = np.random.default_rng(7)
    X = np.column_stack([np.ones(150_000), rng.normal(size=150_000)])
    y = X @ np.array([1.0, 2.0]) + rng.normal(size=150_000)
    np.testing.assert_allclose(oa.coefficients(X, y), np.linalg.lstsq(X, y, rcond=None)[0], rtol=1e-12)


def test_attention_scores_for_teaching(generated):
    _, oa, _ = generated
    rng = np.random.default_rng(3)
    X, Y, Q = rng.normal(size=(25, 3)), rng.normal(size=25), rng.normal(size=(4, 3))
    scores = oa.attention_scores(X, Q)
    assert scores.shape == (4, 25)
    np.testing.assert_allclose(scores @ Y, oa.predict(X, Y, Q), rtol=1e-10)


@pytest.mark.parametrize("route", ["auto", "eigh", "cholesky", "svd", "qr"])
def test_rank_deficient_gives_the_minimum_norm_solution(generated, route):
    _, oa, _ = generated
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 5))
    X[:, 4] = X[:, 0] - 2 * X[:, 1]
    X[:, 3] = 0.5 * X[:, 2]
    Y = rng.normal(size=(30, 2))
    want = np.linalg.pinv(X) @ Y
    with warnings.catch_warnings(record=True) as caught:  # "auto" says so (its class lives in the loaded module)
        warnings.simplefilter("always")
        got = oa.coefficients(X, Y, route=route)
    said = [str(w.message) for w in caught if w.category.__name__ == "RankDeficientWarning"]
    assert (said and "numerical rank 3 of 5 columns" in said[0]) if route == "auto" else not said
    assert np.linalg.norm(got - want) <= 1e-8 * np.linalg.norm(want)
    wide = rng.normal(size=(3, 6))  # more columns than rows
    assert np.linalg.norm(oa.coefficients(wide, Y[:3], route=route) - np.linalg.pinv(wide) @ Y[:3]) < 1e-8


@pytest.mark.parametrize("bad, error, message", [
    (dict(X=[[1.0, np.nan], [2.0, 3.0]]), ValueError, "X contains NaN"),
    (dict(Y=[1.0, np.inf]), ValueError, "Y contains NaN"),
    (dict(X=[["a", "b"], ["c", "d"]]), TypeError, "X must hold real numbers"),
    (dict(X=[[1 + 1j, 0], [0, 1]]), TypeError, "complex"),
    (dict(X=[1.0, 2.0]), ValueError, "at least 2 dimension"),
    (dict(X=np.zeros((0, 2)), Y=np.zeros(0)), ValueError, "empty"),
    (dict(Y=[1.0, 2.0, 3.0]), ValueError, "Y must have shape"),
    (dict(Y=np.ones((2, 2, 1))), ValueError, "Y must have shape"),
    (dict(route="fast"), ValueError, "route must be one of"),
    (dict(X="text"), TypeError, "numeric array"),
])
def test_bad_input_is_named(generated, bad, error, message):
    _, oa, _ = generated
    args = {"X": [[1.0, 0.0], [0.0, 1.0]], "Y": [1.0, 2.0], **bad}
    route = args.pop("route", "auto")
    with pytest.raises(error, match=message):
        oa.coefficients(args["X"], args["Y"], route=route)


def test_queries_must_match(generated):
    _, oa, _ = generated
    X, Y = np.eye(3), np.ones(3)
    with pytest.raises(ValueError, match="X_query must have shape"):
        oa.predict(X, Y, np.ones((2, 4)))
    with pytest.raises(ValueError, match="X_query must have shape"):
        oa.predict(np.ones((2, 3, 3)), np.ones((2, 3)), np.ones((3, 1, 3)))  # batch sizes differ: no broadcasting
    with pytest.raises(ValueError, match="X_query contains NaN"):
        oa.predict(X, Y, [[np.nan, 0, 0]])


@pytest.fixture(scope="module")
def nist():
    return load_datasets()  # the NIST StRD sets shipped with the package


def test_nist_accuracy_at_least_gelsy(generated, nist):
    scipy_linalg = pytest.importorskip("scipy.linalg")
    _, oa, _ = generated
    for dataset in nist:
        X, y = design(dataset)
        certified = dataset["certified"]["beta"]
        gelsy = lre(scipy_linalg.lstsq(X, y, lapack_driver="gelsy")[0], certified)
        ours = lre(oa.coefficients(X, y), certified)
        via_predict = lre(oa.predict(X, y, np.eye(X.shape[1])), certified)
        assert ours >= gelsy and via_predict >= gelsy, (dataset["name"], ours, via_predict, gelsy)


def test_nist_auto_is_the_exact_least_squares_solution_bit_for_bit(generated, nist):
    """The promise of route "exact" (issue 12; "auto" until issue 30): the least-squares solution of the float64 data
    as given, on every set and every way of rounding the polynomial designs, through coefficients and predict."""
    _, oa, _ = generated
    for dataset in nist:
        for construction in CONSTRUCTIONS:
            X, y = design(dataset, construction)
            exact = exact_least_squares(X, y)
            assert np.array_equal(oa.coefficients(X, y, route="exact"), exact), (dataset["name"], construction)
            assert np.array_equal(oa.predict(X, y, np.eye(X.shape[1]), route="exact"), exact), (dataset["name"],
                                                                                                 construction)


def test_generated_examples_run(generated):
    """The Examples sections of the public functions' docstrings, run as doctests in the generated modules."""
    import doctest

    _, oa, om = generated
    for module in (oa, om):
        result = doctest.testmod(module, verbose=False, report=False)
        assert result.attempted >= 6 and result.failed == 0, module.__name__


def test_nist_mpmath_decimal_strings(generated, nist):
    _, _, om = generated
    for dataset in nist:
        X, y = design_text(dataset)
        beta = om.coefficients(X, y, dps=50)
        assert lre([float(beta[i, 0]) for i in range(beta.rows)], dataset["certified"]["beta"]) >= 13.5


def test_mpmath_accepts_exact_types_and_validates(generated):
    _, _, om = generated
    X = [[1, Fraction(1, 3)], [Decimal("1"), "0.5"], [mpmath.mpf(1), 2.0]]
    y = ["1", Fraction(2, 3), Decimal("0.25")]
    beta = om.coefficients(X, y, dps=40)
    want = np.linalg.lstsq(np.array([[1, 1 / 3], [1, 0.5], [1, 2.0]]), np.array([1, 2 / 3, 0.25]), rcond=None)[0]
    np.testing.assert_allclose([float(beta[i, 0]) for i in range(2)], want, rtol=1e-12)
    assert om.predict(X, y, [[1, 1]], dps=30).rows == 1
    W_Q, _, _, P = om.attention_parameters(X, y, dps=30)
    assert W_Q.rows == 2 and P.rows == 2
    for route in om.ROUTES:
        b = om.coefficients(X, y, route=route, dps=30)
        np.testing.assert_allclose([float(b[i, 0]) for i in range(2)], want, rtol=1e-12)
    with pytest.raises(ValueError, match="not a decimal number"):
        om.coefficients([["1", "x"], ["2", "3"]], ["1", "2"])
    with pytest.raises(ValueError, match="NaN or infinity"):
        om.coefficients([["1", "nan"], ["2", "3"]], ["1", "2"])
    with pytest.raises(ValueError, match="rows"):
        om.coefficients([["1", "2"], ["2", "3"]], ["1", "2", "3"])
    with pytest.raises(TypeError, match="not a number"):
        om.coefficients([[1, object()], [2, 3]], [1, 2])


def test_codegen_command_errors(tmp_path, capsys):
    target = tmp_path / "file"
    target.write_text("x")
    assert main(["codegen", "--out", str(target)]) == 2
    assert "not a directory" in capsys.readouterr().err
    assert target.read_text() == "x"


def test_generated_code_runs_in_a_fresh_interpreter(generated):
    out = generated[0]
    code = "import numpy as np, ols_attention as m; print(m.coefficients(np.eye(2), [1.0, 2.0]).tolist())"
    result = subprocess.run([sys.executable, "-c", code], cwd=out, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[1.0, 2.0]"


# --- issue 41: a 1×1 inverse as a coefficient, and the printer's bounds ----------------------------------------------


def _normalised_attention_term():
    """(1ᵀKq)⁻¹ VᵀKq as the kernel builds it: the 1×1 inverse is read as a scalar, Trace((1ᵀKq)⁻¹), the coefficient."""
    from sympy import MatrixSymbol, Trace

    from derive import dim, inv, mul, transpose

    n, d, dv = dim("n"), dim("d"), dim("d_v")
    K, q, V, one = (MatrixSymbol("K", n, d), MatrixSymbol("q", d, 1), MatrixSymbol("V", n, dv),
                    MatrixSymbol("one", n, 1))
    term = mul(inv(mul(transpose(one), K, q)), transpose(V), K, q)
    assert term.args[0].atoms(Trace)  # the coefficient holds the 1×1 matrix, and the tail K q inside it
    return term


def test_shared_tails_are_cut_inside_a_1x1_coefficient_and_the_sharing_ends():
    """The tail K q of VᵀKq recurs inside the coefficient (1ᵀKq)⁻¹: it is shared once, both products read it,
    and the sharing stops (it named fresh tails K q forever, since the one inside the coefficient was counted and
    never cut)."""
    from derive.codegen.generate import _share_suffixes, _Work

    work = _Work(10_000)
    shared = _share_suffixes({"r": _normalised_attention_term()}, work=work)
    assert list(shared) == ["u0", "r"] and str(shared["u0"]) == "K*q"
    assert "K*q" not in str(shared["r"]) and str(shared["r"]).count("u0") == 2
    assert work.used < 1_000


def test_a_tail_counted_where_it_cannot_be_cut_is_an_error_not_a_loop(monkeypatch):
    """Were a counted tail never cut (the bug of issue 41, brought back by a cut that does not descend), the
    sharing names the lack of progress instead of looping."""
    from derive.codegen import generate as g

    monkeypatch.setattr(g, "_rebuild", lambda term, f, work: term)
    with pytest.raises(CodegenError, match="made no progress"):
        g._share_suffixes({"r": _normalised_attention_term()}, work=g._Work(100_000))


def test_the_printer_refuses_a_term_past_its_bounds(monkeypatch):
    """A term of more than MAX_TERM_NODES nodes, or one whose printing takes more than MAX_WORK steps, is a
    CodegenError (named by codegen, which prints the other routes), not an unbounded computation."""
    from sympy import MatrixSymbol

    from derive import add, dim, mul
    from derive.codegen import generate as g
    from derive.routes import Term as PrintedTerm

    p = dim("p")
    A = [MatrixSymbol(f"A{i}", p, p) for i in range(30)]
    route = PrintedTerm("wide", definition="S", names={})
    wide = add(*[mul(A[i % 30], A[(7 * i + 1) % 30], A[(13 * i + 2) % 30]) for i in range(1500)])
    with pytest.raises(CodegenError, match="more than 4,000 nodes"):
        g.print_assignments({"S": wide}, g.FactoringNumPyPrinter(route))
    narrow = add(*[mul(A[i % 30], A[(7 * i + 1) % 30], A[(13 * i + 2) % 30]) for i in range(40)])
    assert g.print_assignments({"S": narrow}, g.FactoringNumPyPrinter(route))[-1].startswith("S = ")
    monkeypatch.setattr(g, "MAX_WORK", 100)
    with pytest.raises(CodegenError, match="more than 100 steps"):
        g.print_assignments({"S": narrow}, g.FactoringNumPyPrinter(route))
    assert g.print_assignments({"S": A[0]}, g.FactoringNumPyPrinter(route)) == ["S = A0"]
