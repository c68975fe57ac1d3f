"""The ``auto`` route of the NumPy numerics on the data users have (issue 12), and the public API's contract
(issue 13, item 7): float32 in and out, overflow as an error, documented signatures.

Like test_numerics.py, these call the package module with plain reference versions of the printed functions;
the generated module itself is tested in test_codegen.py.  Tests check correctness, never speed.
"""

from __future__ import annotations

import inspect
import tracemalloc
import warnings

import numpy as np
import pytest
from test_numerics import MPMATH_REFERENCE, NUMPY_REFERENCE

from derive.codegen import numerics_mpmath as nm
from derive.codegen import numerics_numpy as nn
from derive.experiments.nist import exact_least_squares


@pytest.fixture(autouse=True)
def printed(monkeypatch):
    monkeypatch.setattr(nn, "PRINTED", dict(NUMPY_REFERENCE))
    monkeypatch.setattr(nm, "PRINTED", dict(MPMATH_REFERENCE))


def wide_optimality(X, y, beta):
    """max |Xᵀ(y − Xβ)| with the products in extended precision (fast enough for large X)."""
    Xw = X.astype(np.longdouble)
    return float(np.max(np.abs(Xw.T @ (y.astype(np.longdouble) - Xw @ np.asarray(beta, np.longdouble)))))


def tall(kind, n, p, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    if kind == "uncentred":
        X[:, 1:] += 100.0
        X[:, 0] = 1.0
    elif kind == "collinear":
        X[:, -1] = X[:, 0] + 7e-7 * rng.standard_normal(n)
    elif kind == "hard":  # beyond the Gram route: R of X = QR in row blocks
        X[:, -1] = X[:, 0] + 1e-10 * rng.standard_normal(n)
    return X, X @ rng.standard_normal(p) + rng.standard_normal(n)


def spy(monkeypatch, name):
    calls = []
    original = getattr(nn, name)
    monkeypatch.setattr(nn, name, lambda *a, **k: calls.append(a[0].shape) or original(*a, **k))
    return calls


# --- small single problems -------------------------------------------------------------------


def test_small_well_conditioned_problems_take_the_cholesky_answer(monkeypatch):
    exact_path = spy(monkeypatch, "_qr_or_svd")
    rng = np.random.default_rng(1)
    for n, p in ((20, 3), (100, 5), (1000, 10)):
        X = rng.standard_normal((n, p))
        y = X @ np.linspace(1, 2, p) + rng.standard_normal(n)
        beta = nn.coefficients(X, y)
        exact = exact_least_squares(X, y)
        assert np.max(np.abs(beta - exact) / np.abs(exact)) <= 1e-12  # the promise: every coefficient to 1e-12
    assert exact_path == []


def test_small_problems_that_would_lose_digits_are_refined_exactly(monkeypatch):
    exact_path = spy(monkeypatch, "_qr_or_svd")
    x = np.arange(36.0) * 20 + 0.25  # uncentred, with an intercept: a small coefficient next to a large one
    X = np.column_stack([np.ones(36), x])
    y = -0.25 + 1.002 * x + np.sin(x)
    assert np.array_equal(nn.coefficients(X, y), exact_least_squares(X, y))  # bit for bit
    one = np.array([[4.0], [5.0], [6.0]])
    assert np.array_equal(nn.coefficients(one, [3.0, 4.0, 4.0]), [56 / 77])  # one column: xᵀy / xᵀx, rounded once
    assert len(exact_path) == 2


def test_trust_rule():
    beta = np.array([[1.0], [1e-3]])
    assert nn._trusted(beta, [1.0, 1.0], 1e-16)
    assert not nn._trusted(beta, [1.0, 1.0], 1e-14)  # 1e-14 · 1 > 1e-12 · 1e-3
    assert nn._trusted(beta, [1.0, 1e6], 1e-14)  # scaled: |Dβ| = (1, 1)
    assert not nn._trusted(np.array([[1.0], [0.0]]), [1.0, 1.0], 1e-16)  # an exact zero: refine
    assert not nn._trusted(np.array([[np.inf], [1.0]]), [1.0, 1.0], 1e-16)


def test_huge_solution_is_correct_or_an_error_never_nan():
    X = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0], [1.0, 3.5]])
    y = np.array([1.0, 2.0, 4.0, 3.0])
    want = exact_least_squares(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning either
        for scale in (1e300, 1e-300, 2.0**1000):
            got = nn.coefficients(X, y * scale)
            np.testing.assert_allclose(got, want * scale, rtol=1e-14)
        with pytest.raises(ValueError, match="does not fit in float64"):
            nn.coefficients(X * 1e-300, y * 1e300)  # |β| ≈ 1e600
        with pytest.raises(ValueError, match="does not fit in float32"):
            nn.coefficients((X * 1e-3).astype(np.float32), (y * 3e37).astype(np.float32))  # |β| ≈ 1e41


# --- float32 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("route", nn.ROUTES)
def test_float32_in_float32_out(route):
    rng = np.random.default_rng(2)
    X, Y, Q = rng.standard_normal((40, 3)), rng.standard_normal((40, 2)), rng.standard_normal((5, 3))
    X32, Y32, Q32 = X.astype(np.float32), Y.astype(np.float32), Q.astype(np.float32)
    beta = nn.coefficients(X32, Y32, route=route)
    assert beta.dtype == np.float32
    np.testing.assert_allclose(beta, nn.coefficients(X32.astype(np.float64), Y32.astype(np.float64), route=route),
                               rtol=1e-6)  # float64 arithmetic on the float32 values, rounded once
    assert nn.predict(X32, Y32, Q32, route=route).dtype == np.float32
    assert nn.predict(X32, Y32, Q, route=route).dtype == np.float64  # a float64 argument: float64 results
    assert nn.coefficients(X32, Y, route=route).dtype == np.float64
    assert nn.coefficients(X32.astype(np.float16), Y32, route=route).dtype == np.float32
    assert nn.coefficients(np.rint(X * 10).astype(int), Y, route=route).dtype == np.float64
    assert all(w.dtype == np.float32 for w in nn.attention_parameters(X32, Y32, route=route))
    assert nn.attention_scores(X32, Q32, route=route).dtype == np.float32


# --- one large problem ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["gaussian", "uncentred", "collinear", "hard"])
def test_large_problems_are_as_optimal_as_lstsq(kind, monkeypatch):
    tsqr = spy(monkeypatch, "_tsqr")
    X, y = tall(kind, 60_000, 8)  # 480,000 products: past the small-problem limit
    beta = nn.coefficients(X, y)
    lstsq = np.linalg.lstsq(X, y, rcond=None)[0]
    assert wide_optimality(X, y, beta) <= 10 * wide_optimality(X, y, lstsq)
    if kind != "hard":  # cond 1e10: there both are far from the exact solution (cond² eps |r| / (|X| |β|))
        assert np.max(np.abs(beta - lstsq)) <= 1e-6 * np.max(np.abs(lstsq))
    assert len(tsqr) == (kind == "hard")


def test_large_rank_deficient_problem_gives_the_minimum_norm_solution():
    X, y = tall("gaussian", 60_000, 8, seed=3)
    X[:, 7] = X[:, 1] - X[:, 2]
    np.testing.assert_allclose(nn.coefficients(X, y), np.linalg.pinv(X) @ y, rtol=1e-9, atol=1e-12)


def test_large_wide_problem_gives_the_minimum_norm_solution():
    rng = np.random.default_rng(9)
    X, y = rng.standard_normal((300, 2000)), rng.standard_normal(300)  # 600,000 products, more columns than rows
    np.testing.assert_allclose(nn.coefficients(X, y), np.linalg.pinv(X) @ y, rtol=1e-8, atol=1e-12)


def test_large_problem_works_in_row_blocks():
    X, y = tall("uncentred", 200_000, 16, seed=4)
    tracemalloc.start()
    try:
        nn.coefficients(X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= 0.05 * X.nbytes  # blocks of about 4 MiB; the data are 25.6 MB
    Y = y[:, None]
    np.testing.assert_allclose(nn._fast_memory(X, Y), X.T @ Y, rtol=1e-12)
    beta = np.linalg.lstsq(X, y, rcond=None)[0][:, None]
    np.testing.assert_allclose(nn._gradient(X, Y, beta), X.T @ (Y - X @ beta), atol=1e-6 * np.abs(X.T @ Y).max())
    R = nn._tsqr(X)
    np.testing.assert_allclose(R.T @ R, X.T @ X, rtol=1e-10)


# --- batches ---------------------------------------------------------------------------------


def test_a_failing_stacked_cholesky_costs_the_batch_no_eigenvalue_pass(monkeypatch):
    rng = np.random.default_rng(5)
    X = rng.standard_normal((512, 64, 8))
    X[..., 1:] += 50.0
    X[..., 0] = 1.0  # uncentred prompts with an intercept: the Gram route, refined
    Y = np.einsum("bnp,bp->bn", X, rng.standard_normal((512, 8))) + 0.1 * rng.standard_normal((512, 64))
    X[100, :, 7] = X[100, :, 1] + X[100, :, 2]  # rank-deficient: no Cholesky factor of the whole stack
    eig = spy(monkeypatch, "_eigh_factors")
    monkeypatch.setattr(np.linalg, "eigvalsh", lambda *a: pytest.fail("eigenvalue pass"))
    slow = spy(monkeypatch, "_qr_or_svd")
    got = nn.coefficients(X, Y)
    assert eig == [] and slow == [(1, 64, 8)]
    np.testing.assert_allclose(got[100], np.linalg.pinv(X[100]) @ Y[100], rtol=1e-8, atol=1e-10)
    for b in (0, 99, 101, 511):
        exact = exact_least_squares(X[b], Y[b])
        lstsq = np.linalg.lstsq(X[b], Y[b], rcond=None)[0]
        assert np.max(np.abs(got[b] - exact)) <= max(10 * np.max(np.abs(lstsq - exact)), 1e-14 * np.abs(exact).max())


def test_cholesky_each_finds_the_failing_problems(monkeypatch):
    rng = np.random.default_rng(6)
    X = rng.standard_normal((37, 10, 3))
    X[[4, 30], :, 2] = X[[4, 30], :, 0]  # exactly equal columns: a zero pivot
    X[11, :, 1] = 0.0
    G = np.swapaxes(X, -1, -2) @ X
    C, ok = nn._cholesky_each(G)
    failing = set(np.flatnonzero(~ok).tolist())
    assert 11 in failing and failing <= {4, 11, 30}  # a zero column always fails; rounding may leave a tiny pivot
    np.testing.assert_allclose(C[ok] @ np.swapaxes(C[ok], -1, -2), G[ok], rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(C[~ok], np.broadcast_to(np.eye(3), (len(failing), 3, 3)))
    keep = np.setdiff1d(np.arange(37), [4, 11, 30])
    across, fine = nn._cholesky_across(G[keep])  # the vectorised factorization agrees with LAPACK's
    assert fine.all()
    np.testing.assert_allclose(across, np.linalg.cholesky(G[keep]), rtol=1e-12, atol=1e-12)


# --- building blocks --------------------------------------------------------------------------


@pytest.mark.parametrize("p, k", [(3, 1), (4, 4), (9, 2)])  # the tiny Python path and the LAPACK path
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
def test_solve_triangular_single(p, k, lower, transpose):
    rng = np.random.default_rng(7)
    T = rng.normal(size=(p, p)) + 4 * np.eye(p)
    T = np.tril(T) if lower != transpose else np.triu(T)
    B = rng.normal(size=(p, k))
    got = nn._solve_triangular(T, B, lower=lower, transpose=transpose)
    np.testing.assert_allclose(got, np.linalg.solve(T.T if transpose else T, B), rtol=1e-12)


# --- the public API ---------------------------------------------------------------------------


@pytest.mark.parametrize("module, names", [(nn, ("coefficients", "predict", "attention_parameters",
                                                 "attention_scores")),
                                           (nm, ("coefficients", "predict", "attention_parameters"))])
def test_public_functions_are_documented_and_typed(module, names):
    for name in names:
        function = getattr(module, name)
        doc = inspect.getdoc(function)
        for section in ("Parameters\n----------", "Returns\n-------", "Raises\n------", "Examples\n--------"):
            assert section in doc, (name, section)
        signature = inspect.signature(function)
        assert signature.return_annotation is not inspect.Signature.empty
        for parameter in signature.parameters.values():
            assert parameter.annotation is not inspect.Parameter.empty, (name, parameter.name)
            if parameter.name in ("route", "dps"):
                assert parameter.kind is inspect.Parameter.KEYWORD_ONLY
        assert signature.parameters["route"].default == "auto"  # every function's default route is the same


@pytest.mark.parametrize("route", nn.ROUTES)
def test_attention_parameters_on_rank_deficient_x_give_the_minimum_norm_factor(route):
    rng = np.random.default_rng(8)
    X, Y = rng.standard_normal((30, 4)), rng.standard_normal(30)
    X[:, 3] = X[:, 0] + X[:, 1]
    W_Q, W_K, W_V, P = nn.attention_parameters(X, Y, route=route)
    np.testing.assert_allclose(W_Q @ W_K.T, np.linalg.pinv(X.T @ X), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(X @ W_V @ P, X @ np.linalg.pinv(X) @ Y, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(W_Q @ P, np.linalg.pinv(X) @ Y, rtol=1e-8, atol=1e-10)  # β̂ = L P, minimum norm
