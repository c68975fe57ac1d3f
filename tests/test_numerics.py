"""The fixed numerics of the generated modules, called directly from the package.

``derive.codegen.numerics_numpy`` and ``numerics_mpmath`` are ordinary modules; the functions printed from
checked lemmas are absent when they are imported on their own, so these tests register hand-written
reference versions of them (what each checked lemma says, written plainly) in ``PRINTED``.  That the printed
functions themselves agree with these references is tested in test_codegen.py.
"""

from __future__ import annotations

import ast
import math
import sys
import warnings
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest
from mpmath import mp

from derive.codegen import numerics_mpmath as nm
from derive.codegen import numerics_numpy as nn
from derive.experiments.nist import exact_least_squares


def swap(A):
    return np.swapaxes(A, -1, -2)


def optimality_error(X, Y, beta):
    """max |Xᵀ(Y − Xβ)| computed exactly (rational arithmetic): how far β is from satisfying the normal equations."""
    X, Y, beta = (np.asarray(a, dtype=np.float64) for a in (X, Y, beta))
    Y, beta = Y.reshape(len(Y), -1), beta.reshape(X.shape[1], -1)
    Xf = [[Fraction(v) for v in row] for row in X]
    worst = Fraction(0)
    for j in range(Y.shape[1]):
        bj = [Fraction(v) for v in beta[:, j]]
        r = [Fraction(Y[i, j]) - sum(a * b for a, b in zip(Xf[i], bj, strict=True)) for i in range(len(Xf))]
        for c in range(X.shape[1]):
            worst = max(worst, abs(sum(Xf[i][c] * r[i] for i in range(len(Xf)))))
    return float(worst)


#: What the checked lemmas say, written plainly (NumPy).
NUMPY_REFERENCE = {
    "eigh": lambda V, lam, XtY: V @ ((1 / lam)[..., :, None] * (swap(V) @ XtY)),  # V Λ⁻¹ Vᵀ XᵀY
    "cholesky": lambda C, XtY: nn._solve_triangular(C, nn._solve_triangular(C, XtY, True, False), False, True),
    "svd": lambda U, s, V, Y: V @ ((1 / s)[..., :, None] * (swap(U) @ Y)),  # V S⁻¹ Uᵀ Y
    "qr": lambda Q, R, Y: nn._solve_triangular(R, swap(Q) @ Y, False, False),  # R⁻¹ Qᵀ Y
    "P": lambda L, X, Y: swap(L) @ swap(X) @ Y,  # Lᵀ Xᵀ Y
    "scores": lambda X_query, L, X: X_query @ L @ swap(X @ L),  # (X_q L)(X L)ᵀ
    # V (Λ + λI)⁻¹ Vᵀ XᵀY
    "ridge_spectral": lambda V, lam, ridge, XtY: V @ ((1 / (lam + ridge))[..., :, None] * (swap(V) @ XtY)),
    # Xᵀ (XXᵀ + λI)⁻¹ Y
    "ridge_dual": lambda X, ridge, Y: swap(X) @ np.linalg.solve(X @ swap(X) + ridge * np.eye(X.shape[-2]), Y),
}


def _mp_inverse_diagonal(d):
    return [mp.mpf(0) if v == mp.inf else 1 / v for v in d]


#: The same for mpmath matrices.
MPMATH_REFERENCE = {
    "eigh": lambda V, lam, XtY: V * nm._scale_rows(_mp_inverse_diagonal(lam), V.T * XtY),
    "cholesky": lambda C, XtY: nm._solve_triangular(C, nm._solve_triangular(C, XtY, True, False), False, True),
    "svd": lambda U, s, V, Y: V * nm._scale_rows(_mp_inverse_diagonal(s), U.T * Y),
    "qr": lambda Q, R, Y: nm._solve_triangular(R, Q.T * Y, False, False),
    "P": lambda L, X, Y: L.T * (X.T * Y),
}


@pytest.fixture
def numpy_printed(monkeypatch):
    monkeypatch.setattr(nn, "PRINTED", dict(NUMPY_REFERENCE))
    return nn


@pytest.fixture
def mpmath_printed(monkeypatch):
    monkeypatch.setattr(nm, "PRINTED", dict(MPMATH_REFERENCE))
    return nm


ROUTES = ["auto", "eigh", "cholesky", "svd", "qr"]


# --- the modules on their own -----------------------------------------------------------


@pytest.mark.parametrize("module", [nn, nm])
def test_numerics_import_only_their_backend_and_the_standard_library(module):
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    backend = "numpy" if module is nn else "mpmath"
    assert imported - {backend, "__future__"} <= set(sys.stdlib_module_names)
    assert ast.get_docstring(tree)


@pytest.mark.parametrize("module", [nn, nm])
def test_without_the_printed_section_a_route_says_what_is_missing(module):
    assert module.PRINTED == {}  # nothing registers printed functions in the package module
    X, Y = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], [1.0, 2.0, 3.0]
    with pytest.raises(LookupError, match="printed section is missing.*derive codegen"):
        module.coefficients(X, Y, route="eigh")


@pytest.mark.parametrize("module", [nn, nm])
def test_every_printed_call_passes_the_declared_parameters(module):
    """The generator checks this too; here it is read straight from the source."""
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    calls = [(ast.literal_eval(node.func.args[0]), tuple(a.id for a in node.args)) for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Call)
             and getattr(node.func.func, "id", None) == "_printed"]
    assert {name for name, _ in calls} == set(module.PRINTED_PARAMETERS)
    for name, args in calls:
        assert args == module.PRINTED_PARAMETERS[name]


# --- NumPy: validation ----------------------------------------------------------------------


@pytest.mark.parametrize("bad, error, message", [
    (dict(X=[[1.0, np.nan], [2.0, 3.0]]), ValueError, "X contains NaN"),
    (dict(Y=[1.0, np.inf]), ValueError, "Y contains NaN"),
    (dict(X=[["a", "b"], ["c", "d"]]), TypeError, "X must hold real numbers"),
    (dict(X=[[1 + 1j, 0], [0, 1]]), TypeError, "complex"),
    (dict(X=[1.0, 2.0]), ValueError, "at least 2 dimension"),
    (dict(X=np.zeros((0, 2)), Y=np.zeros(0)), ValueError, "empty"),
    (dict(Y=[1.0, 2.0, 3.0]), ValueError, "Y must have shape"),
    (dict(route="fast"), ValueError, "route must be one of"),
    (dict(X=b"bytes"), TypeError, "numeric array"),
])
@pytest.mark.parametrize("route", ["eigh", "cholesky", "auto"])
def test_numpy_bad_input_is_named(numpy_printed, bad, error, message, route):
    args = {"X": [[1.0, 0.0], [0.0, 1.0]], "Y": [1.0, 2.0], "route": route, **bad}
    with pytest.raises(error, match=message):
        nn.coefficients(args["X"], args["Y"], route=args["route"])


@pytest.mark.parametrize("route", ROUTES)
def test_numpy_data_whose_gram_matrix_overflows_are_solved_scaled(numpy_printed, route):
    """XᵀX of one problem overflows (it used to be refused as too large): its columns are scaled first, exactly."""
    X, Y = np.eye(3)[None].repeat(500, axis=0), np.ones((500, 3))  # a batch: auto takes the Gram route too
    X[7, 0, 0] = 1e200
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning either
        beta = nn.coefficients(X, Y, route=route)
    np.testing.assert_allclose(beta[7], [1e-200, 1.0, 1.0], rtol=1e-14)
    np.testing.assert_allclose(beta[[0, 499]], np.ones((2, 3)), rtol=1e-14)


def test_numpy_validate_shapes():
    X, Y, Q, vector_y, vector_q, dtype = nn._validate(np.ones((2, 5, 3)), np.ones((2, 5)), np.ones((2, 3)))
    assert (X.shape, Y.shape, Q.shape, vector_y, vector_q) == ((2, 5, 3), (2, 5, 1), (2, 1, 3), True, True)
    assert X.dtype == np.float64 and dtype == np.float64
    single = nn._validate(np.ones((5, 3), np.float32), np.ones(5, np.float32))
    assert single[0].dtype == np.float64 and single[-1] == np.float32  # float64 arithmetic, float32 results
    assert nn._validate(np.ones((5, 3), np.float32), np.ones(5))[-1] == np.float64
    with pytest.raises(ValueError, match="X_query must have shape"):
        nn._validate(np.ones((2, 5, 3)), np.ones((2, 5)), np.ones((3, 1, 3)))  # no broadcasting of batches
    assert nn._validate([[True, False], [False, True]], [1, 2])[0].dtype == np.float64


# --- NumPy: building blocks ---------------------------------------------------------------------


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
def test_solve_triangular_batched(lower, transpose):
    rng = np.random.default_rng(0)
    T = rng.normal(size=(3, 5, 5)) + 5 * np.eye(5)
    T = np.tril(T) if lower != transpose else np.triu(T)  # ``lower`` describes op(T), the matrix solved
    B = rng.normal(size=(3, 5, 2))
    got = nn._solve_triangular(T, B, lower=lower, transpose=transpose)
    want = np.linalg.solve(swap(T) if transpose else T, B)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_two_prod_is_exact():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=100) * 1e3, rng.normal(size=100) / 7
    p, e = nn._two_prod(a, b)
    for x, y, hi, lo in zip(a, b, p, e, strict=True):
        assert Fraction(hi) + Fraction(lo) == Fraction(x) * Fraction(y)


def test_row_sums_are_exactly_rounded():
    terms = np.array([[1e16, 1.0, -1e16, 1.0], [0.1, 0.2, 0.3, -0.6]])
    np.testing.assert_array_equal(nn._row_sums(terms), [2.0, math.fsum([0.1, 0.2, 0.3, -0.6])])
    np.testing.assert_array_equal(nn._row_sums(terms[:, :2], terms[:, 2:]), nn._row_sums(terms))


@pytest.mark.parametrize("exact", [True, False])
def test_minus_products(exact):
    rng = np.random.default_rng(2)
    X, B, C, D = rng.normal(size=(6, 4)), rng.normal(size=(4, 2)), rng.normal(size=(6, 2)), rng.normal(size=(6, 2))
    got = nn._minus_products(X, B, C, exact, D)
    for i in range(6):
        for j in range(2):
            want = Fraction(C[i, j]) - sum(Fraction(X[i, t]) * Fraction(B[t, j]) for t in range(4)) - Fraction(D[i, j])
            if exact:
                assert got[i, j] == float(want)  # exactly rounded
            else:
                assert abs(got[i, j] - float(want)) <= 4 * nn._EPS * float(abs(want)) + 1e-300


def test_power_of_two_scaling_is_exact():
    norms = np.array([3.0, 0.0, 1e-300, 1e300, 1.0])
    d = nn._power_of_two(norms)
    assert np.all(np.log2(d) == np.round(np.log2(d))) and d[1] == 1.0
    assert np.all((d / 2 <= norms + (norms == 0)) & (norms <= 2 * d))


def test_gram_and_eigh_factors_drop_the_null_space():
    X = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    X[:, 2] = X[:, 0] + X[:, 1]  # rank 2
    G, XtY = nn._gram(X, np.ones((4, 1)))
    np.testing.assert_array_equal(G, X.T @ X)
    np.testing.assert_array_equal(XtY, X.T @ np.ones((4, 1)))
    lam, V = nn._eigh_factors(G, 4)
    assert np.isinf(lam).sum() == 1 and np.isfinite(lam).sum() == 2  # Λ^{-1/2} is 0 on the null space


def test_rank_deficiency_detectors():
    rng = np.random.default_rng(3)
    full = rng.normal(size=(2, 8, 3))
    deficient = full.copy()
    deficient[1, :, 2] = deficient[1, :, 0] - deficient[1, :, 1]
    _, _, flags = nn._qr_each(deficient)
    assert flags.tolist() == [False, True]
    assert nn._qr_each(rng.normal(size=(2, 5)))[2]  # fewer rows than columns
    C = np.linalg.cholesky(swap(full) @ full)
    assert nn._rank_deficient(C, 8).tolist() == [False, False]  # per problem
    C[1, 2, 2] = 1e-10
    assert nn._rank_deficient(C, 8).tolist() == [False, True]
    s = nn._svd_factors(deficient[1])[1]
    assert np.isinf(s[-1]) and np.isfinite(s[:-1]).all()


@pytest.mark.parametrize("packed", [False, True])  # LAPACK's factors, or the factorization across the stack
@pytest.mark.parametrize("singular", [False, True])  # True: the stacked Cholesky fails, the spectrum decides
def test_condition_estimate(singular, packed):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(4, 50, 4))
    X[1, :, 3] = X[1, :, 0] + 1e-3 * rng.normal(size=50)  # cond(X)² about 1e6
    X[2] *= np.array([1e6, 1.0, 1e-6, 1.0])  # badly scaled columns: the estimate is of the scaled problem
    X[3, :, 3] = X[3, :, 0] + 1e-7 * rng.normal(size=50)  # cond(X)² about 1e14
    if singular:
        X[3, :, 2] = 0.0  # a zero column: not positive definite
    G = swap(X) @ X
    C, cond2 = nn._cholesky_estimate(nn._pack(G) if packed else G)
    C = C.dense() if packed else C
    for b in (0, 1, 2):
        Xs = X[b] / np.linalg.norm(X[b], axis=0)
        exact = np.linalg.cond(Xs) ** 2
        assert exact / 100 <= cond2[b] <= exact * 100, (b, cond2[b], exact)
        np.testing.assert_allclose(C[b] @ C[b].T, X[b].T @ X[b], rtol=1e-9)
    assert cond2[0] < 1e3 and cond2[2] < 1e3 and 1e4 < cond2[1] < 1e8
    assert np.isinf(cond2[3]) if singular else cond2[3] * nn._EPS > nn._GRAM_RISK


def test_refinement_by_preconditioned_gradient_steps(numpy_printed):
    rng = np.random.default_rng(5)
    X, Y = rng.normal(size=(60, 4)), rng.normal(size=(60, 1))
    X[:, 3] = X[:, 0] + 1e-5 * rng.normal(size=60)
    exact = exact_least_squares(X, Y[:, 0])[:, None]
    C = np.linalg.cholesky(X.T @ X)
    start = exact * (1 + 1e-6)  # a rough solution
    lstsq = np.linalg.lstsq(X, Y, rcond=None)[0]
    for stack in (True, False):  # a batch, and one problem (in row blocks when it is tall)
        refined = nn._refine_gram(X[None], Y[None], start[None], C[None])[0] if stack else \
            nn._refine_gram(X, Y, start, C)
        # float64 residuals: the accuracy class of a backward stable solver such as lstsq, from 1e-6 off
        assert np.max(np.abs(refined - exact)) <= 10 * np.max(np.abs(lstsq - exact))
        assert optimality_error(X, Y, refined) <= 10 * optimality_error(X, Y, lstsq)


@pytest.mark.parametrize("exact_sums", [True, False])
def test_qr_refinement_reaches_the_least_squares_solution(exact_sums):
    rng = np.random.default_rng(6)
    X, Y = rng.normal(size=(40, 5)), rng.normal(size=(40, 1))
    X[:, 4] = X[:, 0] + 1e-9 * rng.normal(size=40)  # cond(X) about 1e9
    Q, R = np.linalg.qr(X)
    beta = nn._solve_qr_refined(X, Y, Q, R, exact_sums)
    exact = exact_least_squares(X, Y[:, 0])
    tolerance = 1e-14 if exact_sums else 1e-9  # exactly rounded sums, or extended precision (on this machine)
    assert np.max(np.abs(beta[:, 0] - exact)) <= tolerance * np.max(np.abs(exact))


def test_qr_or_svd_takes_the_minimum_norm_solution_where_deficient(numpy_printed):
    rng = np.random.default_rng(7)
    X, Y = rng.normal(size=(3, 20, 4)), rng.normal(size=(3, 20, 1))
    X[1, :, 3] = 2 * X[1, :, 2]
    beta = nn._qr_or_svd(X, Y)
    for b in range(3):
        np.testing.assert_allclose(beta[b], np.linalg.pinv(X[b]) @ Y[b], rtol=1e-9, atol=1e-12)


# --- NumPy: the public functions, with reference printed functions -------------------------------


@pytest.mark.parametrize("route", ROUTES)
def test_numpy_routes_and_rank_deficiency(numpy_printed, route):
    rng = np.random.default_rng(8)
    X, Y, Q = rng.normal(size=(30, 4)), rng.normal(size=(30, 2)), rng.normal(size=(3, 4))
    want = np.linalg.lstsq(X, Y, rcond=None)[0]
    np.testing.assert_allclose(nn.coefficients(X, Y, route=route), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(nn.predict(X, Y, Q, route=route), Q @ want, rtol=1e-10, atol=1e-12)
    W_Q, W_K, W_V, P = nn.attention_parameters(X, Y, route=route)
    np.testing.assert_allclose(W_Q @ W_K.T, np.linalg.inv(X.T @ X), rtol=1e-9)
    np.testing.assert_allclose(X @ W_V @ P, X @ want, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(nn.attention_scores(X, Q, route=route) @ Y, Q @ want, rtol=1e-9, atol=1e-12)
    X[:, 3] = X[:, 0] - X[:, 1]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = nn.coefficients(X, Y, route=route)
    said = [w for w in caught if issubclass(w.category, nn.RankDeficientWarning)]
    assert bool(said) == (route == "auto")  # "auto" says that X is rank-deficient
    assert np.linalg.norm(got - np.linalg.pinv(X) @ Y) <= 1e-8 * np.linalg.norm(got)


def test_numpy_batched_auto_uses_each_problems_route(numpy_printed):
    rng = np.random.default_rng(9)
    X, Y = rng.normal(size=(200, 30, 3)), rng.normal(size=(200, 30))
    X[5, :, 2] = X[5, :, 1]  # rank-deficient
    with pytest.warns(nn.RankDeficientWarning, match="numerical rank 2 of 3 columns"):
        got = nn.coefficients(X, Y)
    for b in (0, 5, 199):
        np.testing.assert_allclose(got[b], np.linalg.pinv(X[b]) @ Y[b], rtol=1e-9, atol=1e-12)


# --- mpmath ---------------------------------------------------------------------------------------


def test_mpmath_numbers_and_rows():
    with mp.workdps(30):
        assert nm._number("X", "0.1") == mp.mpf("0.1")
        assert nm._number("X", Fraction(1, 3)) == mp.mpf(1) / 3
        assert nm._number("X", np.float64(0.5)) == mp.mpf("0.5")
        for bad, error, message in [(True, TypeError, "bool"), ("x", ValueError, "not a decimal number"),
                                    ("inf", ValueError, "NaN or infinity"), (object(), TypeError, "not a number"),
                                    (1j, TypeError, "not a number")]:
            with pytest.raises(error, match=message):
                nm._number("X", bad)
        with pytest.raises(ValueError, match="different lengths"):
            nm._rows("X", [[1, 2], [3]])
        with pytest.raises(ValueError, match="empty"):
            nm._rows("X", [])
        with pytest.raises(TypeError, match="list of rows"):
            nm._rows("X", 3)
        with pytest.raises(ValueError, match="route must be one of"):
            nm._validate([[1]], [1], route="fast")
        with pytest.raises(ValueError, match="columns"):
            nm._validate([[1, 2]], [1], [[1]])
        X, Y, Q = nm._validate(mp.matrix([[1, 2], [3, 4]]), [5, 6], [[1, 1]])
        assert (X.rows, X.cols, Y.rows, Y.cols, Q.rows) == (2, 2, 2, 1, 1)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
def test_mpmath_solve_triangular(lower, transpose):
    with mp.workdps(40):
        T = mp.matrix([[4, 0, 0], [1, 3, 0], [2, -1, 5]])
        T = T if lower != transpose else T.T  # ``lower`` describes op(T), the matrix solved
        B = mp.matrix([[1, 2], [3, 4], [5, 6]])
        got = nm._solve_triangular(T, B, lower=lower, transpose=transpose)
        residual = (T.T if transpose else T) * got - B
        assert mp.mnorm(residual, 1) < mp.mpf(10) ** -35


def test_mpmath_helpers():
    with mp.workdps(30):
        assert nm._vector_power([mp.mpf(4), mp.inf], -1, 2) == [mp.mpf("0.5"), 0]
        B = mp.matrix([[1, 2], [3, 4]])
        assert nm._scale_rows([2, 3], B) == mp.matrix([[2, 4], [9, 12]])
        assert nm._scale_columns(B, [2, 3]) == mp.matrix([[2, 6], [6, 12]])
        lam, _ = nm._eigh_factors(mp.matrix([[1, 1], [1, 1], [1, 1]]))
        assert sorted(lam, key=lambda v: v == mp.inf)[-1] == mp.inf  # rank 1: one eigenvalue dropped


@pytest.mark.parametrize("route", ROUTES)
def test_mpmath_routes_and_rank_deficiency(mpmath_printed, route):
    X = [["1", "0.5"], ["1", "1.5"], ["1", "3"], ["1", "4.25"]]
    y = ["1", "2", "2.5", "4"]
    want = np.linalg.lstsq(np.array(X, float), np.array(y, float), rcond=None)[0]
    beta = nm.coefficients(X, y, route=route, dps=40)
    np.testing.assert_allclose([float(beta[i, 0]) for i in range(2)], want, rtol=1e-13)
    assert nm.predict(X, y, [[1, 2]], route=route, dps=30).rows == 1
    W_Q, W_K, _, P = nm.attention_parameters(X, y, route=route, dps=30)
    with mp.workdps(30):
        Xm = mp.matrix(X)
        assert mp.mnorm(W_Q * W_K.T - mp.inverse(Xm.T * Xm), 1) < mp.mpf(10) ** -25
        assert P.rows == 2
    deficient = [["1", "2"], ["2", "4"], ["3", "6"]]
    got = nm.coefficients(deficient, ["1", "2", "2"], route=route, dps=40)
    want = np.linalg.pinv(np.array(deficient, float)) @ np.array([1.0, 2.0, 2.0])
    np.testing.assert_allclose([float(got[i, 0]) for i in range(2)], want, rtol=1e-12)


def test_mpmath_auto_chooses_by_condition(mpmath_printed, monkeypatch):
    taken = []
    for name in ("_route_eigh", "_route_qr", "_route_svd"):
        original = getattr(nm, name)
        monkeypatch.setattr(nm, name, lambda X, Y, _n=name, _f=original: taken.append(_n) or _f(X, Y))
    nm.coefficients([[1, 0], [0, 1], [1, 1]], [1, 2, 3], dps=30)
    nm.coefficients([[1, 1], [1, "1.000000001"], [1, 1]], [1, 2, 3], dps=30)
    nm.coefficients([[1, 2], [2, 4]], [1, 2], dps=30)
    assert taken[0] == "_route_eigh" and "_route_qr" in taken[1:-1] and taken[-1] == "_route_svd"
    assert isinstance(nm.coefficients([[1]], [2], dps=20), mpmath.matrix)
