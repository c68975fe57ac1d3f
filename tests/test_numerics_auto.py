"""The ``auto`` route of the NumPy numerics on the data users have (issue 12), and the public API's contract
(issue 13, item 7): float32 in and out, overflow as an error, documented signatures.

Like test_numerics.py, these call the package module with plain reference versions of the printed functions;
the generated module itself is tested in test_codegen.py.  Tests check correctness, never speed.
"""

from __future__ import annotations

import inspect
import math
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
    monkeypatch.setattr(nn, name, lambda *a, **k: calls.append(getattr(a[0], "shape", None)) or original(*a, **k))
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


def refined(X, Y):
    """auto's refined path for one small problem whose data leave the safe range (_auto_small_scaled: the Cholesky
    answer where trusted, else exact refinement, else QR with exactly rounded refinement), on data in range: the
    machinery route "exact" took until issue 40 (route "exact" is now rational: test_numerics_exact.py)."""
    Y = np.asarray(Y, dtype=float)
    beta = nn._auto_small_scaled(X, Y[:, None] if Y.ndim == 1 else Y)
    return beta[:, 0] if Y.ndim == 1 else beta


def test_small_problems_that_would_lose_digits_are_refined_exactly(monkeypatch):
    exact_path = spy(monkeypatch, "_qr_or_svd")
    integer_steps = spy(monkeypatch, "_refine_exactly")
    x = np.arange(36.0) * 20 + 0.25  # uncentred, with an intercept: a small coefficient next to a large one
    X = np.column_stack([np.ones(36), x])
    y = -0.25 + 1.002 * x + np.sin(x)
    exact = exact_least_squares(X, y)
    assert np.array_equal(refined(X, y), exact)  # bit for bit
    assert len(integer_steps) == 1 and exact_path == []  # the trust test rejected it; exact gradients sufficed
    rng = np.random.default_rng(16)
    steps = 0
    for trial in range(60):  # uncentred problems, many of which the trust test rejects
        n, p, k = int(rng.integers(4, 60)), int(rng.integers(2, 6)), int(rng.integers(1, 3))
        X = rng.standard_normal((n, p))
        X[:, 1:] += rng.integers(0, 200)
        X[:, 0] = 1.0
        Y = X @ rng.standard_normal((p, k)) * 10.0 ** rng.integers(-3, 3) + rng.standard_normal((n, k))
        want = np.column_stack([exact_least_squares(X, Y[:, j]) for j in range(k)])
        before = len(integer_steps)
        error = np.max(np.abs(refined(X, Y) - want) / np.abs(want))
        steps += len(integer_steps) > before
        limit = 4 * np.finfo(float).eps if len(integer_steps) > before else 1e-11  # refined: to the last bit
        assert error <= limit, (trial, error)
    assert steps >= 20  # the exact gradients carried many of them
    monkeypatch.setattr(nn, "_refine_wide", lambda *a: None)  # steps that do not converge: the QR path
    monkeypatch.setattr(nn, "_refine_exactly", lambda *a: None)
    X = np.column_stack([np.ones(36), x])
    assert np.array_equal(refined(X, y), exact) and len(exact_path) >= 1


def test_larger_small_problems_refine_in_extended_precision(monkeypatch):
    rng = np.random.default_rng(15)
    X = rng.standard_normal((1000, 10))
    y = X @ np.r_[np.ones(9), 1e-6] + 1e-9 * rng.standard_normal(1000)  # one coefficient far smaller than the others
    exact = exact_least_squares(X, y)
    lstsq = np.linalg.lstsq(X, y, rcond=None)[0]
    wide = spy(monkeypatch, "_refine_wide")
    beta = refined(X, y)  # 10,000 products: extended-precision steps
    assert len(wide) == 1
    assert np.max(np.abs(beta - exact)) <= 1e-18 * np.max(np.abs(exact))  # about 2^-64 of the largest
    assert np.max(np.abs(beta - exact) / np.abs(exact)) <= 1e-13  # the small coefficient too, to 1e-13
    sums = []
    original = nn._minus_products
    monkeypatch.setattr(nn, "_minus_products", lambda *a, **k: sums.append(a[3]) or original(*a, **k))
    monkeypatch.setattr(nn, "_refine_wide", lambda *a: None)  # no extended steps: the QR path
    beta = refined(X, y)
    assert sums and not any(sums)  # 10,000 products: past _FSUM_LIMIT, extended precision, not math.fsum per row
    assert np.max(np.abs(beta - exact) / np.abs(exact)) <= 1e-13
    assert np.max(np.abs(beta - exact)) <= np.max(np.abs(lstsq - exact))
    assert np.array_equal(nn.coefficients(X, y, route="exact"), exact)  # route "exact": exact, rounded once


def test_one_column_is_the_exactly_rounded_quotient(monkeypatch):
    quotient = spy(monkeypatch, "_one_column")
    one = np.array([[4.0], [5.0], [6.0]])
    assert np.array_equal(nn.coefficients(one, [3.0, 4.0, 4.0]), [56 / 77])  # xᵀy / xᵀx, rounded once
    rng = np.random.default_rng(11)
    for trial in range(200):
        n, k = int(rng.integers(1, 33)), int(rng.integers(1, 3))
        x = rng.standard_normal((n, 1)) * 10.0 ** rng.integers(-150, 150)
        if trial % 3 == 0:
            x = np.abs(x) + np.abs(x).max() * rng.integers(1, 1000)  # uncentred: xᵀy and xᵀx cancel nothing
        Y = rng.standard_normal((n, k)) * 10.0 ** rng.integers(-150, 150)
        want = np.column_stack([exact_least_squares(x, Y[:, j]) for j in range(k)])
        assert np.array_equal(nn.coefficients(x, Y), want), trial  # bit for bit, at any scale
    big = one * 2.0**700  # xᵀx overflows float64; the scaled quotient does not
    assert np.array_equal(nn.coefficients(big, [3.0, 4.0, 4.0]), [56 / 77 / 2.0**700])
    assert np.array_equal(nn.coefficients(np.zeros((3, 1)), [1.0, 2.0, 3.0]), [0.0])  # minimum norm
    with pytest.raises(ValueError, match="Y contains NaN"):
        nn.coefficients(one, [3.0, np.nan, 4.0])
    with pytest.raises(ValueError, match="X contains NaN"):
        nn.coefficients(one * [[np.inf]], [3.0, 4.0, 4.0])
    assert len(quotient) == 205
    assert nn.coefficients(np.ones((200, 1)), np.arange(200.0)) == pytest.approx(99.5, rel=1e-15)  # past 64: Gram


@pytest.mark.parametrize("p", [2, 3, 7])  # the tiny path in Python floats
def test_tiny_path_names_bad_values(p):
    rng = np.random.default_rng(12)
    X, y = rng.standard_normal((20, p)), rng.standard_normal(20)
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match="Y contains NaN or infinity"):
            nn.coefficients(X, np.where(np.arange(20) == 7, bad, y))
        with pytest.raises(ValueError, match="X contains NaN or infinity"):
            nn.coefficients(np.where(np.arange(20)[:, None] == 3, bad, X), y)


def test_trust_rule():
    beta = [[1.0, 1e-3]]  # the columns of β
    assert nn._trusted(beta, [1.0, 1.0], nn._TRUST * 1e-4)
    assert not nn._trusted(beta, [1.0, 1.0], nn._TRUST * 1e-2)  # _TRUST 1e-2 · 1 > _TRUST · 1e-3
    assert nn._trusted(beta, [1.0, 1e6], nn._TRUST * 1e-2)  # scaled: |Dβ| = (1, 1)
    assert not nn._trusted([[1.0, 0.0]], [1.0, 1.0], 1e-16)  # an exact zero: refine
    for bad in (np.inf, -np.inf, np.nan):
        assert not nn._trusted([[1.0, bad]], [1.0, 1.0], 1e-16)
        assert not nn._trusted([[bad, 1.0]], [1.0, 1.0], 1e-16)  # in either position (max/min ignore NaN order)
    assert not nn._trusted([[1.0, 1.0], [1.0, 1e-9]], [1.0, 1.0], 1e-16)  # every column must pass


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


def double_double_solution(X, y, start, steps=3):
    """The least-squares solution of the float64 data: refinement from ``start`` with the residual and Xᵀr exactly
    rounded (Dekker's products, math.fsum), preconditioned by R of X = QR (each step shrinks the error by κ eps)."""
    def products(a, b):
        return nn._two_prod(a, b)

    beta = np.array(start, dtype=float).ravel()
    R = np.linalg.qr(X, mode="r")
    for _ in range(steps):
        p, e = products(X, beta[None, :])
        rows = np.concatenate([y[:, None], -p, -e], axis=1).tolist()
        high = [math.fsum(row) for row in rows]
        low = np.array([math.fsum(row + [-h]) for row, h in zip(rows, high, strict=True)])
        high = np.array(high)
        g = np.array([math.fsum(np.concatenate([*products(X[:, j], high), *products(X[:, j], low)]).tolist())
                      for j in range(X.shape[1])])
        beta = beta + np.linalg.solve(R, np.linalg.solve(R.T, g))
    return beta


def spectrum(n, p, cond, seed=0):
    """X = G diag(s) Vᵀ with s from 1 to 1/cond (issue 32), y = Xβ + 1e-6 noise."""
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((n, p))
    V = np.linalg.qr(rng.standard_normal((p, p)))[0]
    X = G * np.logspace(0, -math.log10(cond), p) @ V.T
    return X, X @ rng.standard_normal(p) + 1e-6 * rng.standard_normal(n)


@pytest.mark.parametrize("case", ["cond 1e8", "near-collinear pair, large residual"])
def test_tall_ill_conditioned_problems_are_within_three_times_lstsq_error(case):
    # issue 32: the QR path (cond 1e8) and the refined Gram path (cond about 1e6) lost 6–18 times lstsq's accuracy
    # to the rounding of float64 gradients Xᵀ(Y − Xβ); against the exact solution of the float64 data
    X, y = spectrum(100_000, 16, 1e8) if case == "cond 1e8" else tall("collinear", 40_000, 16, seed=5)
    lstsq = np.linalg.lstsq(X, y, rcond=None)[0]
    exact = double_double_solution(X, y, lstsq)
    def error(beta):
        return np.max(np.abs(beta - exact)) / np.max(np.abs(exact))
    assert error(nn.coefficients(X, y)) <= 3 * error(lstsq)
    assert error(nn.coefficients(X, y[:, None])[:, 0]) <= 3 * error(lstsq)


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


def test_cholesky_each_finds_the_failing_problems():
    rng = np.random.default_rng(6)
    X = rng.standard_normal((37, 10, 3))
    X[[4, 30], :, 2] = X[[4, 30], :, 0]  # exactly equal columns: a zero pivot
    X[11, :, 1] = 0.0
    G = np.swapaxes(X, -1, -2) @ X
    for C, relative in (nn._cholesky_each(G), nn._cholesky_each(nn._pack(G))):  # LAPACK fails: across the stack
        C = C.dense() if isinstance(C, nn._Across) else C
        ok = (relative > 0).all(axis=0)
        failing = set(np.flatnonzero(~ok).tolist())
        assert 11 in failing and failing <= {4, 11, 30}  # a zero column always fails; rounding may leave a tiny pivot
        np.testing.assert_allclose(C[ok] @ np.swapaxes(C[ok], -1, -2), G[ok], rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(C[~ok], np.broadcast_to(np.eye(3), (len(failing), 3, 3)))
        np.testing.assert_allclose(relative[:, ok], np.diagonal(C[ok], axis1=1, axis2=2).T ** 2
                                   / np.diagonal(G[ok], axis1=1, axis2=2).T, rtol=1e-12)
    keep = np.setdiff1d(np.arange(37), [4, 11, 30])
    across, relative = nn._cholesky_across(nn._pack(G[keep]))  # the factorization across agrees with LAPACK's
    assert (relative > 0).all()
    np.testing.assert_allclose(across.dense(), np.linalg.cholesky(G[keep]), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("p, k", [(1, 1), (2, 3), (8, 1), (13, 2)])
def test_factors_across_the_stack(p, k):
    rng = np.random.default_rng(13)
    X, Y = rng.standard_normal((50, 3 * p, p)), rng.standard_normal((50, 3 * p, k))
    G = np.swapaxes(X, -1, -2) @ X
    packed, XtY = nn._stack_gram(X, Y, packed=True)  # from blocks of X: the same sums as one product
    np.testing.assert_allclose(packed.dense(), np.tril(G), rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(XtY, np.swapaxes(X, -1, -2) @ Y, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(packed.diagonal().T, np.diagonal(G, axis1=1, axis2=2), rtol=1e-14)
    C, _ = nn._cholesky_across(packed)
    L = np.linalg.cholesky(G)
    np.testing.assert_allclose(C.dense(), L, rtol=1e-12, atol=1e-12)
    for i in range(p):
        np.testing.assert_array_equal(C.row(i).T, C.dense()[:, i, :i])
        np.testing.assert_array_equal(C.column(i).T, C.dense()[:, i:, i])
    np.testing.assert_allclose(nn._solve_triangular(C, Y[:, :p], lower=True, transpose=False),
                               np.linalg.solve(L, Y[:, :p]), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(nn._solve_triangular(C, Y[:, :p], lower=False, transpose=True),
                               np.linalg.solve(np.swapaxes(L, -1, -2), Y[:, :p]), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(C[[3, 1]].dense(), C.dense()[[3, 1]])
    with pytest.raises(ValueError, match="lower triangular"):
        nn._solve_triangular(C, Y[:, :p], lower=True, transpose=True)


def test_stacks_factored_across_agree_with_lapack(monkeypatch):
    rng = np.random.default_rng(14)
    X = rng.standard_normal((300, 40, 6))
    X[..., 1:] += 30.0
    X[..., 0] = 1.0  # uncentred with an intercept: refined
    X[7, :, 5] = X[7, :, 1]  # rank-deficient
    X[8, :, 5] = X[8, :, 1] + 1e-9 * rng.standard_normal(40)  # beyond the Gram route
    Y = rng.standard_normal((300, 40, 2))
    across = spy(monkeypatch, "_cholesky_across")
    again = spy(monkeypatch, "_qr_or_svd")
    got = nn.coefficients(X, Y)
    # the whole stack (centred: issue 43) factored across once; the two problems that the Gram route leaves are
    # solved by QR or SVD on X as given (their own minimum norm), with no second Gram pass
    assert again == [(2, 40, 6)] and len(across) == 1
    monkeypatch.setattr(nn, "_across", lambda batch, p: False)
    lapack = nn.coefficients(X, Y)
    assert len(across) == 2  # LAPACK failed on the rank-deficient problem: factored across to mark it
    np.testing.assert_allclose(got, lapack, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got[7], np.linalg.pinv(X[7]) @ Y[7], rtol=1e-8, atol=1e-10)
    for b in (0, 8, 299):
        exact = np.column_stack([exact_least_squares(X[b], Y[b, :, j]) for j in range(2)])
        lstsq = np.linalg.lstsq(X[b], Y[b], rcond=None)[0]
        assert np.max(np.abs(got[b] - exact)) <= max(10 * np.max(np.abs(lstsq - exact)), 1e-14 * np.abs(exact).max())
    Y[200, 3, 1] = np.nan
    with pytest.raises(ValueError, match="Y contains NaN"):
        nn.coefficients(X, Y)


def threads_sharing(compute=lambda: None):
    """How many threads ``_each_block`` used on 12 blocks of 10 ms each (each calls ``compute``); at the top level,
    so that a forked child can run it."""
    import threading
    import time

    seen = set()

    def work(block):
        compute()
        time.sleep(0.01)
        seen.add(threading.get_ident())

    nn._each_block(work, list(range(12)))
    return len(seen)


@pytest.mark.parametrize("packed", [True, False])  # factored across the stack, or by LAPACK
def test_threads_share_a_stack_with_the_same_results_bit_for_bit(monkeypatch, packed):
    rng = np.random.default_rng(15)
    X = rng.standard_normal((300, 30, 5))
    X[..., 1:] += 40.0
    X[..., 0] = 1.0  # uncentred: centred a block at a time (issue 43)
    X[17, :, 4] = X[17, :, 2]  # rank-deficient
    Y = rng.standard_normal((300, 30, 2))
    monkeypatch.setattr(nn, "_STACK_BLOCK_BYTES", 8 * 30 * 5 * 7)  # 7 problems a block: 43 blocks
    monkeypatch.setattr(nn, "_across", lambda batch, p: packed)
    results, shared = [], []
    real = nn._each_block

    def counting(work, blocks):
        shared.append((len(blocks), nn._threads()))
        return real(work, blocks)

    monkeypatch.setattr(nn, "_each_block", counting)
    for threads in ("1", "2", "5"):
        monkeypatch.setenv("OLS_ATTENTION_NUM_THREADS", threads)
        results.append(nn.coefficients(X, Y))
    for other in results[1:]:
        np.testing.assert_array_equal(other, results[0])
    # 43 blocks of the whole stack; the rank-deficient problem is solved by QR or SVD, with no second Gram pass
    assert {threads for _, threads in shared} == {1, 2, 5} and {count for count, _ in shared} == {43}
    np.testing.assert_allclose(results[0][17], np.linalg.pinv(X[17]) @ Y[17], rtol=1e-8, atol=1e-10)


def test_work_arrays_reused_between_calls_never_reach_a_result(monkeypatch):
    """A stack's blocks are centred and multiplied in each thread's work arrays, kept from call to call
    (_scratch): a result never shares their memory, a later call (of another shape, from another thread, at the
    same time) leaves an earlier result unchanged, and an array too large to keep is not kept."""
    import threading

    rng = np.random.default_rng(43)

    def stack(batch, n, p):
        X = rng.standard_normal((batch, n, p)) + 30.0
        X[..., 0] = 1.0  # an intercept column: the centred blocks go through the work arrays
        return X, rng.standard_normal((batch, n, 2))

    problems = [stack(400, 20, 6), stack(90, 50, 3), stack(700, 9, 4), stack(400, 20, 6)]
    alone = [nn.coefficients(X, Y) for X, Y in problems]
    for (X, Y), beta in zip(problems, alone, strict=True):  # each against its own float64 reference
        reference = np.stack([np.linalg.lstsq(a, b, rcond=None)[0] for a, b in zip(X, Y, strict=True)])
        np.testing.assert_allclose(beta, reference, rtol=1e-9, atol=1e-11)
    kept = [beta.copy() for beta in alone]
    monkeypatch.setenv("OLS_ATTENTION_NUM_THREADS", "3")
    together, barrier = [None] * 8, threading.Barrier(8)

    def solve(i):
        barrier.wait()
        together[i] = nn.coefficients(*problems[i % 4])

    threads = [threading.Thread(target=solve, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i, beta in enumerate(together):
        np.testing.assert_array_equal(beta, alone[i % 4])
    for beta, copy in zip(alone, kept, strict=True):  # the later calls wrote into the work arrays, not here
        np.testing.assert_array_equal(beta, copy)
    scratch = [getattr(nn._SCRATCH, name) for name in ("centred", "targets", "product") if hasattr(nn._SCRATCH, name)]
    assert scratch and not any(np.shares_memory(beta, work) for beta in alone + together for work in scratch)
    monkeypatch.setattr(nn, "_SCRATCH_BYTES", 64)
    large = nn._scratch("large_test_array", (10, 10))
    assert large.shape == (10, 10) and not hasattr(nn._SCRATCH, "large_test_array")


def test_the_number_of_threads_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv("OLS_ATTENTION_NUM_THREADS", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "3,2")  # OpenMP's nested form: the outer count
    assert nn._threads() == 3
    monkeypatch.setenv("OLS_ATTENTION_NUM_THREADS", "2")  # ours first
    assert nn._threads() == 2
    monkeypatch.setenv("OMP_NUM_THREADS", "many")  # not ours: ignored
    monkeypatch.delenv("OLS_ATTENTION_NUM_THREADS")
    assert 1 <= nn._threads() <= nn._DEFAULT_THREADS
    monkeypatch.delenv("OMP_NUM_THREADS")
    monkeypatch.setattr(nn.os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    assert nn._threads() == nn._DEFAULT_THREADS  # a big machine: capped (the GIL bounds the gain)
    monkeypatch.setenv("OLS_ATTENTION_NUM_THREADS", "12")
    assert nn._threads() == 12  # asked for: given
    monkeypatch.delenv("OLS_ATTENTION_NUM_THREADS")
    for wrong in ("0", "-2", "two", "1.5"):
        monkeypatch.setenv("OLS_ATTENTION_NUM_THREADS", wrong)
        with pytest.raises(ValueError, match=f"OLS_ATTENTION_NUM_THREADS must be a whole number.*{wrong!r}"):
            nn.coefficients(np.ones((200, 4, 2)), np.ones((200, 4)))


def test_threads_keep_the_error_state_and_pass_errors_on(monkeypatch):
    monkeypatch.setenv("OLS_ATTENTION_NUM_THREADS", "2")
    monkeypatch.setattr(nn, "_STACK_BLOCK_BYTES", 8 * 6 * 3 * 4)
    X = np.random.default_rng(17).standard_normal((200, 6, 3))
    X[150, 2, 1] = 1e200  # its square overflows in a worker's block: no warning, and that problem is solved scaled
    Y = np.ones((200, 6))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        beta = nn.coefficients(X, Y)
    np.testing.assert_allclose(beta[150], exact_least_squares(X[150], Y[150]), rtol=1e-12)
    Y[150] *= 1e300  # now the solution itself is beyond the float range: a named error, still no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="does not fit in float64"):
            nn.coefficients(X * 1e-100, Y)
    done = []

    def work(block):
        if block == 5:
            raise ArithmeticError("block 5")
        done.append(block)

    with pytest.raises(ArithmeticError, match="block 5"):  # from whichever thread took block 5
        nn._each_block(work, list(range(40)))
    assert 5 not in done and len(done) == len(set(done))  # each block taken once
    with warnings.catch_warnings():  # every thread overflows under the caller's error state: no warning
        warnings.simplefilter("error")
        with np.errstate(over="ignore"):
            assert threads_sharing(lambda: np.float64(1e300) * 1e300) == 2
        with np.errstate(over="raise"), pytest.raises(FloatingPointError):
            threads_sharing(lambda: np.float64(1e300) * 1e300)


def test_a_busy_pool_is_not_waited_for(monkeypatch):
    import threading

    monkeypatch.setenv("OLS_ATTENTION_NUM_THREADS", "2")
    release = threading.Event()
    nn._executor(1).submit(release.wait, 30)  # another caller's work holds the pool's only thread
    done, callers = [], set()

    def work(block):
        done.append(block)
        callers.add(threading.get_ident())

    runner = threading.Thread(target=nn._each_block, args=(work, list(range(6))))
    runner.start()
    runner.join(10)
    finished = not runner.is_alive()
    release.set()
    assert finished and sorted(done) == list(range(6)) and callers == {runner.ident}


def test_threads_in_a_forked_child(monkeypatch):
    multiprocessing = pytest.importorskip("multiprocessing")
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork on this platform")
    monkeypatch.setenv("OLS_ATTENTION_NUM_THREADS", "2")
    monkeypatch.setattr(nn, "_STACK_BLOCK_BYTES", 8 * 10 * 3 * 16)
    rng = np.random.default_rng(16)
    X, Y = rng.standard_normal((256, 10, 3)), rng.standard_normal((256, 10))
    expected = nn.coefficients(X, Y)  # the parent's pool exists now; a forked child must not wait on it
    with multiprocessing.get_context("fork").Pool(1) as pool:
        got = pool.apply_async(nn.coefficients, (X, Y)).get(timeout=60)
        threads = pool.apply_async(threads_sharing).get(timeout=60)
    np.testing.assert_array_equal(got, expected)
    assert threads == 2  # the child has a pool of its own: the parent's threads do not exist there


# --- building blocks --------------------------------------------------------------------------


@pytest.mark.parametrize("p, k", [(3, 1), (4, 4), (9, 2)])  # the tiny Python path and the LAPACK path
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
def test_solve_triangular_single(p, k, lower, transpose):
    rng = np.random.default_rng(7)
    T = rng.normal(size=(p, p)) + 4 * np.eye(p)
    T = np.tril(T) if lower != transpose else np.triu(T)
    B = rng.normal(size=(p, k))
    want = np.linalg.solve(T.T if transpose else T, B)
    np.testing.assert_allclose(nn._solve_triangular(T, B, lower=lower, transpose=transpose), want, rtol=1e-12)
    rows = T.tolist()  # lists of rows, as the tiny path passes them
    np.testing.assert_allclose(nn._solve_triangular(rows, B.tolist(), lower, transpose), want, rtol=1e-12)
    if k == 1:  # one column as a flat list
        np.testing.assert_allclose(nn._solve_triangular(rows, B[:, 0].tolist(), lower, transpose), want[:, 0],
                                   rtol=1e-12)
    if not transpose and lower or transpose and not lower:  # a lower factor given as ragged rows
        ragged = [row[: i + 1] for i, row in enumerate(T.tolist())]
        np.testing.assert_allclose(nn._solve_triangular(ragged, B.tolist(), lower, transpose), want, rtol=1e-12)


@pytest.mark.parametrize("batch", [5, nn._FEW_PROBLEMS + 1])  # a stacked matmul per row; einsum per row
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
def test_solve_triangular_stacked(batch, lower, transpose):
    """Stacks take substitution row by row whichever the row's product; only the triangle op(T) uses is read
    (prefix_predictions leaves LAPACK's reflectors in the other one)."""
    rng = np.random.default_rng(8)
    p, k = 6, 3
    T = rng.normal(size=(batch, p, p)) + 4 * np.eye(p)
    used = np.tril(T) if lower != transpose else np.triu(T)
    B = rng.normal(size=(batch, p, k))
    want = np.linalg.solve(used.swapaxes(-1, -2) if transpose else used, B)
    got = nn._solve_triangular(T, B, lower=lower, transpose=transpose)  # the other triangle holds garbage
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-13)


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


@pytest.mark.parametrize("seed", [0, 1])
def test_stacks_far_from_the_origin_keep_lstsq_accuracy(seed):
    """Two failures of the stack route found by a sweep, each within 10 times lstsq's error (or 1e-13) against the
    exact solution now. (1) An intercept column beside features of offset 100: the intercept β_k = γ_k − mᵀγ / c
    magnifies the centred answer's errors by |m|/|c| (here 100, times 7 columns); one step on the centred data,
    its correction added to mᵀγ unrounded, where that magnification times the estimate is over the refinement's
    bound. (2) A
    column near a constant (1000 ± 0.001) beside columns of mean −1: the refinement test read the column norms
    from the Cholesky factor, which packed stacks are factored into in place (the square root of the spread)."""
    rng = np.random.default_rng(seed)
    B, n = 1024, 64
    X1 = rng.standard_normal((B, n, 8)) * 10 + 100
    X1[..., 0] = 1.0
    X2 = rng.standard_normal((B, n, 4)) - 1
    X2[..., 3] = 1000 + 1e-3 * rng.standard_normal((B, n))
    for X in (X1, X2):
        Y = X @ rng.standard_normal((B, X.shape[-1], 1)) + rng.standard_normal((B, n, 1))
        got, exact = nn.coefficients(X, Y), nn.coefficients(X, Y, route="exact")
        lstsq = np.stack([np.linalg.lstsq(a, b, rcond=None)[0] for a, b in zip(X, Y, strict=True)])
        scale = np.abs(exact).max(axis=(1, 2))
        ours, theirs = np.abs(got - exact).max(axis=(1, 2)) / scale, np.abs(lstsq - exact).max(axis=(1, 2)) / scale
        worst = np.argmax(ours / np.maximum(10 * theirs, 1e-13))
        assert ours[worst] <= max(10 * theirs[worst], 1e-13), (X.shape, worst, ours[worst], theirs[worst])


def test_an_intercept_of_a_tenth_far_from_the_origin_gets_an_exact_residual():
    """Where the intercept magnifies γ's error beyond 1e-13 / eps (an intercept column of 0.1 beside features around
    50 of spread 10: Σ|m_j γ_j| / (|c| max|β|) in the thousands), even γ + δ to the rounding of a float64 residual
    would leave it over the bound: the step's residual is formed to about eps² (_dot2_stack). The 12th stack of
    ``bench_stack_accuracy.py --intercepts 0.01,0.1`` (seed 11), made as it makes it; problem 255 was at 1.1 times
    the bound with a float64 residual."""
    rng = np.random.default_rng(11)
    for offset in (10.0, 50.0):
        for spread in (0.1, 1.0, 10.0):
            for c in (0.01, 0.1):
                n = int(rng.integers(10, 100))
                p = int(rng.integers(3, min(n - 1, 12) + 1))
                X = rng.normal(size=(300, n, p)) * spread + offset * rng.choice([1, -1])
                X[..., int(rng.integers(0, p))] = c
                Y = X @ rng.normal(size=(300, p, 1)) + rng.choice([0.01, 1.0, 100.0]) * rng.normal(size=(300, n, 1))
    got, exact = nn.coefficients(X, Y), nn.coefficients(X, Y, route="exact")  # the last: offset 50, spread 10, 0.1
    lstsq = np.stack([np.linalg.lstsq(a, b, rcond=None)[0] for a, b in zip(X, Y, strict=True)])
    scale = np.abs(exact).max(axis=(1, 2))
    ours, theirs = np.abs(got - exact).max(axis=(1, 2)) / scale, np.abs(lstsq - exact).max(axis=(1, 2)) / scale
    worst = np.argmax(ours / np.maximum(10 * theirs, 1e-13))
    assert ours[worst] <= max(10 * theirs[worst], 1e-13), (worst, ours[worst], theirs[worst])


def test_stacks_with_an_intercept_are_centred_first_at_lstsq_accuracy(monkeypatch):
    """Issue 43: problems of a stack with an intercept column (anywhere, any nonzero constant) are solved as the
    centred problem plus one scalar, with no refinement pass, within 10 times lstsq's error against the exact
    solution; problems without one (columns sharing an offset) and a rank-deficient one keep their routes."""
    rng = np.random.default_rng(43)
    B, n, p = 160, 30, 5
    X = rng.standard_normal((B, n, p)) * rng.choice([0.1, 1.0, 10.0], (B, 1, 1)) + rng.choice([10.0, 1e3, 1e4],
                                                                                                (B, 1, 1))
    where = rng.integers(0, p, B)
    X[np.arange(B), :, where] = rng.choice([1.0, 0.5, 3.0], B)[:, None]
    for b in range(150, B):  # no intercept: the refined route
        X[b, :, where[b]] += rng.standard_normal(n) * 1e-3
    X[7, :, (where[7] + 1) % p] = X[7, :, (where[7] + 2) % p]  # rank-deficient
    Y = X @ rng.standard_normal((B, p, 2)) + rng.choice([0.01, 1.0], (B, 1, 1)) * rng.standard_normal((B, n, 2))
    refined = spy(monkeypatch, "_refine_gram")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nn.RankDeficientWarning)
        got = nn.coefficients(X, Y)
    # the problems without an intercept, and a few of the others (whose columns' scales spread the Cholesky
    # answer's error over the coefficients): never a refinement pass over the stack
    assert sum(shape[0] for shape in refined if shape is not None) <= 10 + (B - 10) // 10
    np.testing.assert_allclose(got[7], np.linalg.pinv(X[7]) @ Y[7], rtol=1e-6, atol=1e-9)
    for b in list(range(1, 150, 7)) + [150, 155, 159]:  # (not 7)
        exact = np.column_stack([exact_least_squares(X[b], Y[b, :, j]) for j in range(2)])
        lstsq = np.linalg.lstsq(X[b], Y[b], rcond=None)[0]
        err = np.abs(got[b] - exact).max()
        assert err <= max(10 * np.abs(lstsq - exact).max(), 1e-13 * np.abs(exact).max()), (b, err)
