"""Beyond the paper's OLS, in the NumPy numerics: ridge and weighted least squares (``ridge=``, ``weights=``),
streaming least squares (``RecursiveLeastSquares``) and k layers of linear attention (``multi_layer_predict``)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from test_numerics import MPMATH_REFERENCE, NUMPY_REFERENCE
from test_numerics_fast import fraction_solve
from test_user_library import ROUTE_FILE, run

from derive.codegen import numerics_mpmath as nm
from derive.codegen import numerics_numpy as nn


@pytest.fixture(autouse=True)
def printed(monkeypatch):
    monkeypatch.setattr(nn, "PRINTED", dict(NUMPY_REFERENCE))
    monkeypatch.setattr(nm, "PRINTED", dict(MPMATH_REFERENCE))


def relative(a, b):
    return float(np.abs(np.asarray(a) - np.asarray(b)).max() / np.abs(np.asarray(b)).max())


def ridge_exact(X, Y, lam, w=None):
    """(XᵀWX + λI)⁻¹XᵀWY in long double, as a reference."""
    X, Y = np.asarray(X, np.longdouble), np.asarray(Y, np.longdouble)
    w = np.ones(len(X), np.longdouble) if w is None else np.asarray(w, np.longdouble)
    G = X.T @ (w[:, None] * X) + lam * np.eye(X.shape[1])
    return np.linalg.solve(G.astype(float), (X.T @ (w[:, None] * Y.reshape(len(X), -1))).astype(float))


# --- ridge ------------------------------------------------------------------------------------


@pytest.mark.parametrize("n, p", [(60, 6), (12, 40), (30, 30), (1, 5)])
@pytest.mark.parametrize("lam", [1e-3, 1.0, 250.0])
def test_ridge_agrees_with_scikit_learn(n, p, lam):
    sklearn = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(n * 100 + p)
    X, Y = rng.standard_normal((n, p)), rng.standard_normal((n, 3))
    reference = sklearn.Ridge(alpha=lam, fit_intercept=False, solver="svd").fit(X, Y).coef_.T
    assert relative(nn.coefficients(X, Y, ridge=lam), reference) < 1e-8
    assert relative(nn.coefficients(X, Y[:, 0], ridge=lam), reference[:, 0]) < 1e-8
    Q = rng.standard_normal((4, p))
    assert relative(nn.predict(X, Y, Q, ridge=lam), Q @ reference) < 1e-8


def test_ridge_on_rank_deficient_x_agrees_with_scikit_learn():
    sklearn = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(3)
    X = rng.standard_normal((40, 4))
    X = np.c_[X, X[:, 0] - 2 * X[:, 1], np.zeros(40)]  # a dependent column and a column of zeros
    y = rng.standard_normal(40)
    for lam in (1e-6, 0.1, 10.0):
        reference = sklearn.Ridge(alpha=lam, fit_intercept=False, solver="svd").fit(X, y).coef_
        beta = nn.coefficients(X, y, ridge=lam)
        # at λ = 1e-6 scikit-learn's SVD answer is itself 9.4e-9 from the exact ridge solution (the dependent
        # column's singular value, about eps |X|, over λ): compare with the exact one, and with scikit-learn to
        # within its own error
        exact = exact_ridge_solution(X, y, lam)
        assert relative(beta, exact) < 1e-8
        assert relative(beta, reference) < 1e-8 + relative(reference, exact)
        assert beta[-1] == 0.0


def exact_ridge_solution(X, y, lam):
    """(XᵀX + λI)⁻¹Xᵀy of the float64 data and λ as given, in Fractions (Gauss-Jordan), rounded once."""
    from fractions import Fraction

    rows = [[Fraction(v) for v in row] for row in X.tolist()]
    b = [Fraction(v) for v in y.tolist()]
    p = len(rows[0])
    gram = [[sum(r[i] * r[j] for r in rows) + (Fraction(lam) if i == j else 0) for j in range(p)] for i in range(p)]
    moment = [sum(r[i] * v for r, v in zip(rows, b, strict=True)) for i in range(p)]
    return np.array([float(v) for v in fraction_solve(gram, moment)])


@pytest.mark.parametrize("route", nn.ROUTES)
def test_every_route_solves_ridge(route):
    rng = np.random.default_rng(4)
    X, Y = rng.standard_normal((50, 5)), rng.standard_normal((50, 2))
    assert relative(nn.coefficients(X, Y, ridge=0.7, route=route), ridge_exact(X, Y, 0.7)) < 1e-12


def test_the_dual_route_is_the_token_formula_and_falls_back_when_ill_conditioned():
    rng = np.random.default_rng(5)
    X, Y, Q = rng.standard_normal((8, 30)), rng.standard_normal((8, 2)), rng.standard_normal((3, 30))
    lam = 0.3
    dual = (Q @ X.T) @ np.linalg.solve(X @ X.T + lam * np.eye(8), Y)  # (X_q Xᵀ)(XXᵀ + λI)⁻¹Y
    assert nn._ridge_dual(X, Y, lam) is not None
    assert relative(nn.predict(X, Y, Q, ridge=lam), dual) < 1e-12
    tiny = 1e-14  # (‖X‖_F² + λ) eps / λ far over 1e-10, but XXᵀ + λI itself well-conditioned: the dual route
    A, B = np.vstack([X, np.sqrt(tiny) * np.eye(30)]), np.vstack([Y, np.zeros((30, 2))])
    assert relative(nn._ridge_dual(X, Y, tiny), np.linalg.lstsq(A, B, rcond=None)[0]) < 1e-12
    X[1], Y[1] = X[0], Y[0]  # XXᵀ singular: cond(XXᵀ + λI) eps far over 1e-10, the SVD of X instead
    A, B = np.vstack([X, np.sqrt(tiny) * np.eye(30)]), np.vstack([Y, np.zeros((30, 2))])
    assert nn._ridge_dual(X, Y, tiny) is None
    assert relative(nn.coefficients(X, Y, ridge=tiny), np.linalg.lstsq(A, B, rcond=None)[0]) < 1e-8


def test_wide_ridge_with_tiny_lambda_takes_the_dual_cholesky_route(monkeypatch):
    # issue 30: 200 × 2000, λ = 1e-8 took the SVD of X (n²p, 10–100 times scikit-learn's Ridge); XXᵀ + λI is
    # well-conditioned there, so its Cholesky solve with one refinement step gives Ridge's accuracy
    rng = np.random.default_rng(8)
    X, y = rng.standard_normal((100, 1000)), rng.standard_normal(100)
    lam = 1e-8
    svd = []
    monkeypatch.setattr(nn, "_ridge_svd", lambda *a, f=nn._ridge_svd: svd.append(1) or f(*a))
    beta = nn.coefficients(X, y, ridge=lam)
    assert not svd
    wide = np.longdouble  # reference: the dual system refined with long double residuals
    K = X @ X.T + lam * np.eye(100)
    alpha = np.linalg.solve(K, y)
    for _ in range(4):
        r = y.astype(wide) - X.astype(wide) @ (X.T.astype(wide) @ alpha.astype(wide)) - wide(lam) * alpha
        alpha = alpha + np.linalg.solve(K, r.astype(float))
    exact = (X.T.astype(wide) @ alpha.astype(wide)).astype(float)
    assert relative(beta, exact) < 4e-15


def test_ridge_in_a_batch_is_each_problem_on_its_own():
    rng = np.random.default_rng(6)
    for n, p in ((20, 4), (5, 9)):
        X, y = rng.standard_normal((7, n, p)), rng.standard_normal((7, n))
        batch = nn.coefficients(X, y, ridge=2.0)
        assert batch.shape == (7, p)
        for i in range(7):
            assert relative(batch[i], nn.coefficients(X[i], y[i], ridge=2.0)) < 1e-13


def test_ridge_keeps_float32_and_scale():
    rng = np.random.default_rng(7)
    X, y = rng.standard_normal((30, 3)), rng.standard_normal(30)
    assert nn.coefficients(X.astype(np.float32), y.astype(np.float32), ridge=1.0).dtype == np.float32
    # X 2^-500, λ 2^-1000: the same problem scaled, β scaled by 2^500
    beta = nn.coefficients(X * 2.0**-500, y, ridge=2.0**-1000)
    assert relative(beta * 2.0**-500, nn.coefficients(X, y, ridge=1.0)) < 1e-12


@pytest.mark.parametrize("bad, message", [(0.0, "positive"), (-1.0, "positive"), (float("nan"), "NaN"),
                                          (float("inf"), "infinite")])
def test_a_bad_ridge_is_named(bad, message):
    X, y = np.eye(3), np.ones(3)
    with pytest.raises(ValueError, match=f"ridge.*{message}|{message}.*ridge"):
        nn.coefficients(X, y, ridge=bad)
    with pytest.raises(ValueError, match="ridge"):
        nn.predict(X, y, X, ridge=bad)
    with pytest.raises(TypeError, match="ridge"):
        nn.coefficients(X, y, ridge="1")


# --- weights ----------------------------------------------------------------------------------


def test_weighted_least_squares_is_ols_of_the_whitened_rows():
    rng = np.random.default_rng(8)
    X, Y, Q = rng.standard_normal((80, 5)), rng.standard_normal((80, 2)), rng.standard_normal((3, 5))
    w = rng.uniform(0.01, 50.0, 80)
    root = np.sqrt(w)[:, None]
    reference = np.linalg.lstsq(X * root, Y * root, rcond=None)[0]
    for route in nn.ROUTES:
        assert relative(nn.coefficients(X, Y, weights=w, route=route), reference) < 1e-10
    assert relative(nn.predict(X, Y, Q, weights=w), Q @ reference) < 1e-10
    assert relative(nn.coefficients(X, Y[:, 1], weights=list(w)), reference[:, 1]) < 1e-10
    assert np.array_equal(nn.coefficients(X, Y, weights=np.ones(80)), nn.coefficients(X, Y))


def test_weights_in_a_batch_and_with_ridge():
    rng = np.random.default_rng(9)
    X, y, w = rng.standard_normal((4, 25, 3)), rng.standard_normal((4, 25)), rng.uniform(0.5, 2.0, (4, 25))
    batch = nn.coefficients(X, y, weights=w)
    for i in range(4):
        root = np.sqrt(w[i])
        assert relative(batch[i], np.linalg.lstsq(X[i] * root[:, None], y[i] * root, rcond=None)[0]) < 1e-10
    both = nn.coefficients(X[0], y[0], weights=w[0], ridge=0.5)  # Σ w_i (y_i − x_i β)² + λ‖β‖²
    assert relative(both, ridge_exact(X[0], y[0], 0.5, w[0])[:, 0]) < 1e-12


@pytest.mark.parametrize("w, message", [([1.0, -1.0, 2.0], "positive"), ([1.0, 0.0, 2.0], "positive"),
                                        ([1.0, np.nan, 2.0], "NaN"), ([1.0, np.inf, 2.0], "infinity"),
                                        ([1.0, 2.0], "shape"), ([[1.0, 1.0, 1.0]], "shape")])
def test_bad_weights_are_named(w, message):
    X, y = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]]), [1.0, 2.0, 4.0]
    with pytest.raises(ValueError, match=f"weights.*{message}|{message}.*weights"):
        nn.coefficients(X, y, weights=w)
    with pytest.raises(ValueError, match="weights"):
        nn.predict(X, y, [1.0, 1.0], weights=w)


# --- streaming least squares ------------------------------------------------------------------


def test_streaming_equals_batch_ridge_after_any_number_of_updates():
    rng = np.random.default_rng(10)
    X, Y = rng.standard_normal((4000, 7)) * [1, 1, 1, 10, 0.1, 1, 3], rng.standard_normal((4000, 2))
    rls = nn.RecursiveLeastSquares(7, 2, ridge=0.25)
    assert rls.coefficients.shape == (7, 2) and not rls.coefficients.any()  # nothing seen: β = 0
    done = 0
    for size in (1, 1, 3, 500, 1, 1000, 7, 1500):
        if size == 1:
            rls.update(X[done], Y[done])  # one row as vectors
        else:
            rls.update(X[done:done + size], Y[done:done + size])
        done += size
        assert rls.rows == done
        assert relative(rls.coefficients, ridge_exact(X[:done], Y[:done], 0.25)) < 1e-8
    rls.update(X[done:], Y[done:])
    batch = nn.coefficients(X, Y, ridge=0.25)
    assert relative(rls.coefficients, batch) < 1e-8
    Q = rng.standard_normal((5, 7))
    assert relative(rls.predict(Q), nn.predict(X, Y, Q, ridge=0.25)) < 1e-8
    assert rls.predict(Q[0]).shape == (2,)


def test_streaming_ols_needs_rows_enough_and_full_rank():
    rng = np.random.default_rng(11)
    X, y = rng.standard_normal((3000, 5)), rng.standard_normal(3000)
    rls = nn.RecursiveLeastSquares(5)
    with pytest.raises(ValueError, match="at least p = 5 rows"):
        _ = rls.coefficients
    rls.update(X[:3], y[:3])
    with pytest.raises(ValueError, match="got 3"):
        rls.predict(X[:2])
    for i in range(3, 3000, 250):
        rls.update(X[i:i + 250], y[i:i + 250])
    assert relative(rls.coefficients, np.linalg.lstsq(X, y, rcond=None)[0]) < 1e-8
    assert rls.coefficients.shape == (5,) and rls.predict(X[0]).shape == ()
    deficient = nn.RecursiveLeastSquares(3)
    deficient.update(np.c_[X[:, :2], X[:, 0] + X[:, 1]], y)
    with pytest.raises(ValueError, match="singular"):
        _ = deficient.coefficients
    ridge = nn.RecursiveLeastSquares(3, ridge=1e-3)
    ridge.update(np.c_[X[:, :2], X[:, 0] + X[:, 1]], y)
    assert relative(ridge.coefficients, ridge_exact(np.c_[X[:, :2], X[:, 0] + X[:, 1]], y, 1e-3)[:, 0]) < 1e-8


def test_streaming_refuses_bad_input_by_name():
    with pytest.raises(ValueError, match="p must be at least 1"):
        nn.RecursiveLeastSquares(0)
    with pytest.raises(TypeError, match="k must be an integer"):
        nn.RecursiveLeastSquares(3, 1.5)
    with pytest.raises(ValueError, match="ridge"):
        nn.RecursiveLeastSquares(3, ridge=-1.0)
    rls = nn.RecursiveLeastSquares(3, 2, ridge=1.0)
    with pytest.raises(ValueError, match="X_rows must have shape"):
        rls.update(np.ones((2, 4)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="Y_rows must hold 2 row"):
        rls.update(np.ones((2, 3)), np.ones(2))
    with pytest.raises(ValueError, match="X_rows contains NaN"):
        rls.update([np.nan, 1.0, 1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="X_query"):
        rls.predict(np.ones((2, 2)))
    assert rls.rows == 0  # nothing refused was counted
    with pytest.raises(ValueError, match="overflow"):
        rls.update(np.full((2, 3), 1.5e308), np.ones((2, 2)))  # column norms over the float range


def _long_streams():
    """(name, X, y) of 10⁵ rows, p = 16: Gaussian (cond 1) and ill-conditioned (cond 1e8, correlated columns)."""
    rng = np.random.default_rng(32)
    G = rng.standard_normal((100_000, 16))
    U, _ = np.linalg.qr(rng.standard_normal((16, 16)))
    streams = []
    for name, X in (("gaussian", G), ("ill-conditioned", G @ (U * np.logspace(0, -8, 16)).T)):
        streams.append((name, X, X @ rng.standard_normal(16) + rng.standard_normal(100_000)))
    return streams


@pytest.mark.parametrize("how", ["single rows", "chunks of 10", "chunks of 1000"])
def test_streaming_over_long_streams_is_within_10x_of_lstsq(how):
    """Against the exact least-squares solution (the module's "auto", refined to the data as given): the streamed
    coefficients after 10⁵ rows are within 10× the error of numpy.linalg.lstsq on all rows at once (the textbook
    row-by-row square-root recursion is 70× on the Gaussian stream: its roundings add up over 10⁵ steps)."""
    for name, X, y in _long_streams():
        exact = nn.coefficients(X, y)
        floor = relative(np.linalg.lstsq(X, y, rcond=None)[0], exact)
        rls = nn.RecursiveLeastSquares(16)
        if how == "single rows":
            for i in range(len(X)):
                rls.update(X[i], y[i])
        else:
            size = int(how.split()[-1])
            for i in range(0, len(X), size):
                rls.update(X[i:i + size], y[i:i + size])
        assert rls.rows == len(X)
        assert relative(rls.coefficients, exact) <= 10 * floor, (name, relative(rls.coefficients, exact), floor)


def test_streaming_single_rows_wait_in_blocks_but_reads_see_every_row():
    rng = np.random.default_rng(33)
    X, y = rng.standard_normal((300, 4)), rng.standard_normal(300)
    rls = nn.RecursiveLeastSquares(4, ridge=0.5)
    for i in range(300):  # read after every row: each read sees the rows so far, blocks or not
        rls.update(X[i], float(y[i]))
        if i % 37 == 0 or i > 290:
            assert relative(rls.coefficients, ridge_exact(X[:i + 1], y[:i + 1], 0.5)[:, 0]) < 1e-12
    bad = X[0].copy()
    bad[2] = np.nan
    with pytest.raises(ValueError, match="X_rows contains NaN"):
        rls.update(bad, 1.0)
    with pytest.raises(ValueError, match="Y_rows contains NaN"):
        rls.update(X[0], float("nan"))
    assert rls.rows == 300  # nothing refused was counted or kept
    assert relative(rls.coefficients, ridge_exact(X, y, 0.5)[:, 0]) < 1e-12
    huge = nn.RecursiveLeastSquares(2)  # rows with entries near the float range take the checked path
    for row in ([1e300, 1.0], [1.0, 1e300], [2e300, 3.0]):
        huge.update(np.array(row), 1.0)
    assert np.isfinite(huge.coefficients).all()
    with pytest.raises(ValueError, match="overflow"):
        huge.update(np.array([1.5e308, 1.5e308]), 1.0)
    assert huge.rows == 3


def test_streaming_small_chunks_fill_blocks_and_keep_few_triangles():
    rng = np.random.default_rng(34)
    X, Y = rng.standard_normal((5000, 6)), rng.standard_normal((5000, 2))
    rls = nn.RecursiveLeastSquares(6, 2)
    done, sizes = 0, [1, 2, 3, 5, 7, 11, 31, 32, 33]
    while done < len(X):
        size = sizes[done % len(sizes)]
        rls.update(X[done:done + size], Y[done:done + size])
        done = min(done + size, len(X))
        assert len(rls._triangles) <= 2 * np.log2(max(done, 2)) + 2  # merged, not one triangle per update
    assert rls.rows == len(X)
    assert relative(rls.coefficients, np.linalg.lstsq(X, Y, rcond=None)[0]) < 1e-12
    one_by_one = nn.RecursiveLeastSquares(6, 2)
    for i in range(64):  # one-row chunks wait like single rows: two full blocks, merged into one triangle
        one_by_one.update(X[i:i + 1], Y[i:i + 1])
    assert one_by_one._waiting == 0 and [count for _, count in one_by_one._triangles] == [64]


# --- k layers ---------------------------------------------------------------------------------


def test_layers_are_explicit_gradient_steps():
    rng = np.random.default_rng(12)
    X, Y, Q = rng.standard_normal((30, 4)), rng.standard_normal((30, 2)), rng.standard_normal((5, 4))
    A = rng.standard_normal((4, 4))
    for step in (0.01, 0.02 * (A @ A.T + np.eye(4))):
        G = step * np.eye(4) if np.ndim(step) == 0 else step
        beta = np.zeros((4, 2))
        assert not nn.multi_layer_predict(X, Y, Q, layers=0, step=step).any()  # no layer: β_0 = 0
        for k in range(6):
            if k:
                assert relative(nn.multi_layer_predict(X, Y, Q, layers=k, step=step), Q @ beta) < 1e-12
            beta = beta - G @ X.T @ (X @ beta - Y)  # one step of gradient descent on ½‖Y − Xβ‖²


def test_layers_converge_to_ols_at_the_rate_of_the_spectrum():
    rng = np.random.default_rng(13)
    X, y, Q = rng.standard_normal((40, 3)), rng.standard_normal(40), rng.standard_normal((2, 3))
    ols = nn.predict(X, y, Q)
    assert relative(nn.multi_layer_predict(X, y, Q, layers=1, step=np.linalg.inv(X.T @ X)), ols) < 1e-12
    lam = np.linalg.eigvalsh(X.T @ X)
    eta = 1 / lam[-1]
    rate = 1 - eta * lam[0]  # spectral radius of I − ηXᵀX
    errors = [relative(nn.multi_layer_predict(X, y, Q, layers=k, step=eta), ols) for k in (10, 20, 400)]
    assert errors[2] < 1e-12
    assert errors[1] / errors[0] < 1.1 * rate**10  # contracts at (most) the rate of the slowest eigen-direction
    batch = nn.multi_layer_predict(np.stack([X, X]), np.stack([y, 2 * y]), np.stack([Q, Q]), layers=400, step=eta)
    assert relative(batch[1], 2 * ols) < 1e-12


def test_diverging_layers_and_bad_arguments_are_named():
    X, y = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]]), [1.0, 2.0, 4.0]
    with pytest.raises(ValueError, match="diverge"):
        nn.multi_layer_predict(X, y, [1.0, 1.0], layers=2000, step=1.0)
    with pytest.raises(ValueError, match="layers must be at least 0"):
        nn.multi_layer_predict(X, y, [1.0, 1.0], layers=-1, step=0.1)
    with pytest.raises(TypeError, match="layers must be an integer"):
        nn.multi_layer_predict(X, y, [1.0, 1.0], layers=2.0, step=0.1)
    with pytest.raises(ValueError, match="step must be"):
        nn.multi_layer_predict(X, y, [1.0, 1.0], layers=2, step=np.eye(3))
    with pytest.raises(ValueError, match="step contains NaN"):
        nn.multi_layer_predict(X, y, [1.0, 1.0], layers=2, step=np.nan)


# --- mpmath -----------------------------------------------------------------------------------


@pytest.mark.parametrize("route", nm.ROUTES)
def test_mpmath_ridge_and_weights_agree_with_numpy(route):
    rng = np.random.default_rng(14)
    X, Y, Q = rng.standard_normal((9, 3)), rng.standard_normal((9, 2)), rng.standard_normal((2, 3))
    w = rng.uniform(0.5, 2.0, 9)
    for ridge, weights in ((0.5, None), (None, w), (0.5, w)):
        options = {"ridge": ridge, "weights": None if weights is None else list(weights)}
        beta = np.array(nm.coefficients(X.tolist(), Y.tolist(), route=route, **options).tolist(), dtype=float)
        assert relative(beta, nn.coefficients(X, Y, ridge=ridge, weights=weights)) < 1e-13
        yhat = np.array(nm.predict(X.tolist(), Y.tolist(), Q.tolist(), route=route, **options).tolist(), dtype=float)
        assert relative(yhat, Q @ nn.coefficients(X, Y, ridge=ridge, weights=weights)) < 1e-13
    wide = rng.standard_normal((3, 6))  # p > n: ridge is still defined
    beta = np.array(nm.coefficients(wide.tolist(), [1, 2, 3], ridge="0.25", route=route).tolist(), dtype=float)
    assert relative(beta[:, 0], nn.coefficients(wide, np.array([1.0, 2.0, 3.0]), ridge=0.25)) < 1e-13


@pytest.mark.parametrize("options, error, message", [({"ridge": 0}, ValueError, "ridge must be positive"),
                                                     ({"ridge": "-1"}, ValueError, "ridge must be positive"),
                                                     ({"ridge": "nan"}, ValueError, "ridge"),
                                                     ({"ridge": True}, TypeError, "ridge"),
                                                     ({"weights": [1, 0, 1]}, ValueError, "weights must be positive"),
                                                     ({"weights": [1, 1]}, ValueError, "one number per row"),
                                                     ({"weights": "111"}, TypeError, "weights")])
def test_mpmath_bad_ridge_and_weights_are_named(options, error, message):
    with pytest.raises(error, match=message):
        nm.coefficients([[1, 0], [1, 1], [1, 2]], [1, 2, 4], **options)


def test_mpmath_route_functions_of_a_users_theorem_accept_lists(tmp_path):
    """The public function printed for a user's route reads lists of numbers, as coefficients does."""
    (tmp_path / "routes.py").write_text(ROUTE_FILE.replace("NAME", "qr_coefficients"))
    result = run(tmp_path, "codegen", "--library", "routes.py", "--out", "code")
    assert result.returncode == 0, result.stderr
    check = ("import sys; sys.path.insert(0, 'code'); import numpy as np, mpmath, routes_mpmath as om\n"
             "rng = np.random.default_rng(2); X = rng.standard_normal((12, 3)); y = rng.standard_normal(12)\n"
             "Q, R = np.linalg.qr(X)\n"
             "expected = np.linalg.lstsq(X, y, rcond=None)[0]\n"
             "for args in ((Q.tolist(), R.tolist(), y.tolist()), (Q, R, y),\n"
             "             tuple(mpmath.matrix(a.tolist()) for a in (Q, R, y))):\n"
             "    beta = om.qr_coefficients(*args)\n"
             "    assert (beta.rows, beta.cols) == (3, 1), (beta.rows, beta.cols)\n"
             "    assert max(abs(float(beta[i, 0]) - expected[i]) for i in range(3)) < 1e-12, beta\n"
             "try:\n"
             "    om.qr_coefficients('abc', R.tolist(), y.tolist())\n"
             "except TypeError as exc:\n"
             "    print('refused:', exc)\n")
    used = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, cwd=tmp_path)
    assert used.returncode == 0, used.stderr
    assert "refused: Q must be a list of numbers or of rows, not a string" in used.stdout
