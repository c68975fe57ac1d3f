"""Issue 30: route "auto" is fast and as accurate as lstsq on the data classes below (uncentred data: a strict xfail
at the end); route "exact" refines to the least-squares solution of the float64 data; rank deficiency is said
(RankDeficientWarning); ridge by one Cholesky solve where well-conditioned; the estimator's sample_weight equals
scikit-learn's. Correctness only, never speed."""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest

from derive.experiments.nist import exact_least_squares

EPS = np.finfo(float).eps
FLOOR = 1e-13  # the smallest error bound asked of "auto", whatever lstsq's own error happens to be


@pytest.fixture(scope="module")
def oa():
    from derive.generated import ols_attention

    return ols_attention


def relative(got, want):
    return float(np.max(np.abs(np.asarray(got) - want)) / np.max(np.abs(want)))


def fraction_solve(A, b):
    """A⁻¹b for a square nonsingular A of Fractions (Gauss-Jordan with a nonzero pivot), exactly."""
    n = len(A)
    M = [list(A[i]) + [b[i]] for i in range(n)]
    for c in range(n):
        r = next(i for i in range(c, n) if M[i][c] != 0)
        M[c], M[r] = M[r], M[c]
        M[c] = [v / M[c][c] for v in M[c]]
        for i in range(n):
            if i != c and M[i][c]:
                f = M[i][c]
                M[i] = [a - f * v for a, v in zip(M[i], M[c], strict=True)]
    return [M[i][n] for i in range(n)]


def exact_minimum_norm(Z, W, y):
    """The minimum-norm least-squares solution of X = Z W (Z n×r, W r×p, both of full rank r, small integers so that
    X is exact in float64): X⁺y = Wᵀ(WWᵀ)⁻¹(ZᵀZ)⁻¹Zᵀy, in Fractions, rounded once."""
    Zf = [[Fraction(int(v)) for v in row] for row in Z]
    Wf = [[Fraction(int(v)) for v in row] for row in W]
    yf = [Fraction(v) for v in y.tolist()]
    n, r, p = len(Zf), len(Wf), len(Wf[0])
    ZtZ = [[sum(Zf[t][i] * Zf[t][j] for t in range(n)) for j in range(r)] for i in range(r)]
    Zty = [sum(Zf[t][i] * yf[t] for t in range(n)) for i in range(r)]
    u = fraction_solve(ZtZ, Zty)
    WWt = [[sum(Wf[i][t] * Wf[j][t] for t in range(p)) for j in range(r)] for i in range(r)]
    v = fraction_solve(WWt, u)
    return np.array([float(sum(Wf[i][j] * v[i] for i in range(r))) for j in range(p)])


def data_class(name, rng):
    """(X, y, exact β) of one data class; exact: the least-squares (minimum-norm) solution of the float64 data."""
    if name == "gaussian":
        X = rng.standard_normal((500, 8))
    elif name == "uncentred":
        X = rng.standard_normal((20, 3)) + 100.0
        X[:, 0] = 1.0
    elif name == "near-collinear":
        X = rng.standard_normal((300, 6))
        X[:, -1] = X[:, 0] + 1e-7 * rng.standard_normal(300)
    elif name == "polynomial":  # uncentred powers: cond about 1e6 once the columns are scaled
        x = rng.uniform(1.0, 3.0, 60)
        X = np.column_stack([x**j for j in range(6)])
    if name in ("rank-deficient", "wide"):
        n, r, p = (40, 4, 6) if name == "rank-deficient" else (5, 5, 8)
        Z, W = rng.integers(-3, 4, (n, r)), rng.integers(-3, 4, (r, p))
        while np.linalg.matrix_rank(Z) < r or np.linalg.matrix_rank(W) < r:
            Z, W = rng.integers(-3, 4, (n, r)), rng.integers(-3, 4, (r, p))
        X = (Z @ W).astype(float)
        y = rng.standard_normal(n)
        return X, y, exact_minimum_norm(Z, W, y)
    y = X @ rng.standard_normal(X.shape[1]) + rng.standard_normal(X.shape[0])
    return X, y, exact_least_squares(X, y)


CLASSES = ["gaussian", "uncentred", "near-collinear", "polynomial", "rank-deficient", "wide"]


@pytest.mark.parametrize("name", CLASSES)
def test_auto_is_as_accurate_as_lstsq_on_every_data_class(oa, name):
    rng = np.random.default_rng(30)
    for _ in range(3):
        X, y, exact = data_class(name, rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", oa.RankDeficientWarning)
            got = oa.coefficients(X, y)
        lstsq = np.linalg.lstsq(X, y, rcond=None)[0]
        assert relative(got, exact) <= max(10 * relative(lstsq, exact), FLOOR), (name, relative(got, exact))


@pytest.mark.parametrize("name", ["gaussian", "uncentred", "near-collinear", "polynomial"])
def test_batched_auto_is_as_accurate_as_lstsq(oa, name):
    rng = np.random.default_rng(31)
    problems = [data_class(name, rng) for _ in range(4)]
    X, Y = np.stack([p[0] for p in problems]), np.stack([p[1] for p in problems])
    got = oa.coefficients(X, Y)
    for i, (Xi, yi, exact) in enumerate(problems):
        lstsq = np.linalg.lstsq(Xi, yi, rcond=None)[0]
        assert relative(got[i], exact) <= max(10 * relative(lstsq, exact), FLOOR), (name, i)


def test_exact_route_is_the_least_squares_solution_of_the_data_bit_for_bit(oa):
    x = np.arange(36.0) * 20 + 0.25  # uncentred, with an intercept
    X = np.column_stack([np.ones(36), x])
    y = -0.25 + 1.002 * x + np.sin(x)
    exact = exact_least_squares(X, y)
    assert np.array_equal(oa.coefficients(X, y, route="exact"), exact)
    assert relative(oa.coefficients(X, y), exact) <= max(10 * relative(np.linalg.lstsq(X, y)[0], exact), FLOOR)
    assert "exact" in oa.ROUTES and "exact" in oa.coefficients.__doc__


def test_rank_deficiency_is_said_with_rank_and_condition(oa):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((50, 6))
    X[:, 5] = X[:, 1] - X[:, 2]
    y = rng.standard_normal(50)
    with pytest.warns(oa.RankDeficientWarning, match=r"numerical rank 5 of 6 columns, condition estimate [0-9.]+e\+"):
        got = oa.coefficients(X, y)
    np.testing.assert_allclose(got, np.linalg.pinv(X) @ y, rtol=1e-10, atol=1e-12)
    assert issubclass(oa.RankDeficientWarning, UserWarning) and issubclass(oa.RankDeficientWarning, RuntimeWarning)
    with pytest.warns(oa.RankDeficientWarning, match=r"numerical rank 5 of 6 columns"):
        stack = oa.coefficients(np.stack([X, rng.standard_normal((50, 6))]), np.stack([y, y]))
    np.testing.assert_allclose(stack[0], got, rtol=1e-10, atol=1e-12)
    big = rng.standard_normal((80_000, 6))  # a large problem (over 400,000 products)
    big[:, 5] = big[:, 0] + big[:, 3]
    with pytest.warns(oa.RankDeficientWarning, match="numerical rank 5 of 6"):
        oa.coefficients(big, big[:, 0])
    with warnings.catch_warnings():  # full rank: silent
        warnings.simplefilter("error")
        oa.coefficients(rng.standard_normal((50, 6)), y)
        oa.coefficients(rng.standard_normal((4, 7)), y[:4])  # wider than tall, full row rank: the minimum norm


def test_polynomial_features_rank_deficient_in_a_grid_search(oa):
    """The issue's case: degree-2 polynomial features with a dependent column; the minimum-norm answer, said."""
    rng = np.random.default_rng(8)
    Z = rng.standard_normal((400, 10))
    X = np.column_stack([Z, np.stack([Z[:, i] * Z[:, j] for i in range(10) for j in range(i, 10)], axis=1)])
    X = np.column_stack([X, X[:, 0] + X[:, 11]])  # 66 columns of rank 65
    y = rng.standard_normal(400)
    with pytest.warns(oa.RankDeficientWarning, match="numerical rank 65 of 66"):
        got = oa.coefficients(X, y)
    reference = np.linalg.lstsq(X, y, rcond=None)[0]
    assert relative(got, reference) <= 1e-9


def exact_ridge(X, y, lam):
    Xf = [[Fraction(v) for v in row] for row in X.tolist()]
    yf = [Fraction(v) for v in y.tolist()]
    n, p = len(Xf), len(Xf[0])
    A = [[sum(Xf[r][i] * Xf[r][j] for r in range(n)) + (Fraction(lam) if i == j else 0) for j in range(p)]
         for i in range(p)]
    return np.array([float(v) for v in fraction_solve(A, [sum(Xf[r][i] * yf[r] for r in range(n)) for i in range(p)])])


@pytest.mark.parametrize("lam", [1e-8, 1.0, 1e4])
def test_ridge_auto_is_accurate(oa, lam):
    rng = np.random.default_rng(9)
    X, y = rng.standard_normal((60, 5)), rng.standard_normal(60)
    assert relative(oa.coefficients(X, y, ridge=lam), exact_ridge(X, y, lam)) <= 1e-14
    X[:, 4] = X[:, 0] + 1e-9 * rng.standard_normal(60)  # XᵀX + λI ill-conditioned at small λ: the augmented QR
    exact = exact_ridge(X, y, lam)
    peer = np.linalg.solve(X.T @ X + lam * np.eye(5), X.T @ y)  # Ridge(solver="cholesky") and scipy's solve
    assert relative(oa.coefficients(X, y, ridge=lam), exact) <= max(10 * relative(peer, exact), FLOOR)
    assert relative(oa.coefficients(X, y, ridge=lam, route="exact"), exact) <= 1e-13
    W, v = rng.standard_normal((6, 40)), rng.standard_normal(6)  # p > n: the dual route
    assert relative(oa.coefficients(W, v, ridge=lam), exact_ridge(W, v, lam)) <= 1e-12


@pytest.mark.parametrize("lam", [1e-4, 1e-6, 1e-8, 1e-11])
def test_near_collinear_ridge_is_within_the_perturbation_bound(oa, lam):
    """cond(XᵀX + λI) eps from 1e-7 to over 1: the Cholesky peer loses up to all its digits; "auto" (refinement steps
    with residuals from X, or the augmented problem where they would not converge) stays within the first-order
    perturbation bound of the augmented problem A β = b, A = [√λ I; X], κ eps + κ² eps ‖b − Aβ‖ / (‖A‖ ‖β‖),
    κ = cond(A): the bound a backward-stable solver is guaranteed; and never behind the peer."""
    rng = np.random.default_rng(31)
    n, p = 300, 8
    X = rng.standard_normal((n, p)) * rng.uniform(0.2, 5.0, p)
    X[:, -1] = X[:, 0] + 1e-6 * rng.standard_normal(n)
    y = X @ rng.standard_normal(p) + rng.standard_normal(n)
    exact = exact_ridge(X, y, lam)
    A = np.vstack([np.sqrt(lam) * np.eye(p), X])
    s = np.linalg.svd(A, compute_uv=False)
    kappa = s[0] / s[-1]
    residual = np.linalg.norm(np.concatenate([-np.sqrt(lam) * exact, y - X @ exact]))
    bound = kappa * EPS + kappa**2 * EPS * residual / (s[0] * np.linalg.norm(exact))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        peer = np.linalg.solve(X.T @ X + lam * np.eye(p), X.T @ y)  # Ridge(solver="cholesky"), scipy's solve
    got = oa.coefficients(X, y, ridge=lam)
    assert relative(got, exact) <= bound
    assert relative(got, exact) <= max(relative(peer, exact), FLOOR)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("ridge", [None, 0.5])
def test_estimator_sample_weight_equals_sklearns(fit_intercept, ridge):
    pytest.importorskip("sklearn")
    from sklearn.linear_model import LinearRegression, Ridge

    from derive.sklearn import OLSAttentionRegressor

    rng = np.random.default_rng(12)
    X = rng.standard_normal((80, 5)) + 3.0
    y = X @ rng.standard_normal(5) + rng.standard_normal(80) + 2.0
    w = rng.uniform(0.1, 3.0, 80)
    w[:5] = 0.0  # zero weights drop their rows
    ours = OLSAttentionRegressor(ridge=ridge, fit_intercept=fit_intercept).fit(X, y, sample_weight=w)
    peer = (LinearRegression(fit_intercept=fit_intercept) if ridge is None
            else Ridge(alpha=ridge, fit_intercept=fit_intercept, solver="svd")).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(ours.coef_, peer.coef_, rtol=1e-10, atol=1e-10 * np.abs(peer.coef_).max())
    assert abs(ours.intercept_ - peer.intercept_) <= 1e-10 * max(1.0, abs(peer.intercept_))
    dropped = OLSAttentionRegressor(ridge=ridge, fit_intercept=fit_intercept).fit(X[5:], y[5:], sample_weight=w[5:])
    np.testing.assert_allclose(ours.coef_, dropped.coef_, rtol=1e-10, atol=1e-12)
    for route in ("exact", "qr"):  # the module's routes agree with the Gram fast path
        other = OLSAttentionRegressor(route=route, ridge=ridge, fit_intercept=fit_intercept).fit(X, y, sample_weight=w)
        np.testing.assert_allclose(other.coef_, peer.coef_, rtol=1e-10, atol=1e-10 * np.abs(peer.coef_).max())
    Xc = X - (np.average(X, axis=0, weights=w) if fit_intercept else 0.0)
    G = Xc.T @ (Xc * w[:, None]) + (ridge or 0.0) * np.eye(5)
    np.testing.assert_allclose(ours.query_key_ @ ours.query_key_.T, np.linalg.inv(G), rtol=1e-8)
    with pytest.raises(ValueError, match="[Nn]egative"):
        OLSAttentionRegressor().fit(X, y, sample_weight=-w)


def test_estimator_on_rank_deficient_features_says_so_and_matches_linear_regression():
    """The issue's grid-search case: polynomial features with a dependent column, fitted through R of [X y]."""
    pytest.importorskip("sklearn")
    from sklearn.linear_model import LinearRegression

    from derive.sklearn import OLSAttentionRegressor, generated_numpy

    rng = np.random.default_rng(21)
    Z = rng.standard_normal((300, 6))
    X = np.column_stack([Z, Z[:, 0] * Z[:, 1], Z[:, 2] ** 2, Z[:, 0] + Z[:, 3]])  # 9 columns of rank 8
    y = rng.standard_normal(300)
    with pytest.warns(generated_numpy().RankDeficientWarning, match="numerical rank 8 of 9 columns"):
        ours = OLSAttentionRegressor().fit(X, y)
    peer = LinearRegression().fit(X, y)
    np.testing.assert_allclose(ours.coef_, peer.coef_, rtol=1e-9, atol=1e-11)
    assert abs(ours.intercept_ - peer.intercept_) <= 1e-9 * max(1.0, abs(peer.intercept_))
    Xc = X - X.mean(axis=0)
    np.testing.assert_allclose(Xc @ ours.query_key_ @ ours.output_projection_, Xc @ peer.coef_, rtol=1e-8, atol=1e-10)
    for ridge in (1e-3, 10.0):  # ridge on the same data: XᵀX + λI is regular
        ridged = OLSAttentionRegressor(ridge=ridge).fit(X, y)
        G = Xc.T @ Xc + ridge * np.eye(9)
        np.testing.assert_allclose(ridged.coef_, np.linalg.solve(G, Xc.T @ (y - y.mean())), rtol=1e-8)
        np.testing.assert_allclose(ridged.query_key_ @ ridged.query_key_.T, np.linalg.inv(G), rtol=1e-7)


# --- the rank-deficient path of small problems: one LAPACK least-squares call (issue 30, held-back shapes) -----------


@pytest.mark.parametrize("n, p, r, k", [(300, 20, 15, 1), (120, 12, 7, 3), (40, 6, 5, 2)])
def test_small_rank_deficient_answer_is_lstsqs_minimum_norm_and_said(oa, n, p, r, k):
    """Random factors of rank r: the minimum-norm solution (pinv's, to rounding), warned with rank and condition."""
    rng = np.random.default_rng(n + p + r)
    X = rng.standard_normal((n, r)) @ rng.standard_normal((r, p))
    Y = rng.standard_normal((n, k))
    with pytest.warns(oa.RankDeficientWarning, match=rf"numerical rank {r} of {p} columns, condition estimate"):
        got = oa.coefficients(X, Y)
    want = np.linalg.pinv(X) @ Y
    assert relative(got, want) <= 1e-12
    with pytest.warns(oa.RankDeficientWarning, match=rf"numerical rank {r} of {p}"):  # a vector y: the same
        np.testing.assert_allclose(oa.coefficients(X, Y[:, 0]), got[:, 0], rtol=0, atol=1e-14 * np.abs(got).max())


def test_rank_that_depends_on_column_scales_is_decided_on_the_scaled_columns(oa):
    """Full rank once the columns are scaled, but a column 1e-60 times the others falls under lstsq's tolerance on X
    as given (and a near-collinear pair keeps the Gram answer out): the least-squares solution, no warning, where
    numpy.linalg.lstsq drops that column's coefficient."""
    rng = np.random.default_rng(44)
    X = rng.standard_normal((200, 5))
    X[:, 4] = X[:, 0] + 1e-6 * rng.standard_normal(200)  # cond about 1e6 once scaled: not the Gram answer
    X[:, 2] *= 1e-60
    beta = np.array([1.0, -2.0, 3e60, 0.5, 1.5])
    y = X @ beta + 1e-3 * rng.standard_normal(200)
    with warnings.catch_warnings():
        warnings.simplefilter("error", oa.RankDeficientWarning)
        got = oa.coefficients(X, y)
    exact = oa.coefficients(X, y, route="exact")
    assert np.all(np.abs(got - exact) <= 1e-8 * np.abs(exact)), (got, exact)
    assert abs(np.linalg.lstsq(X, y, rcond=None)[0][2]) < 1.0  # lstsq dropped it (and the test would not test)


def test_rank_deficient_with_columns_scaled_apart_is_the_minimum_norm_of_x_as_given(oa):
    """Rank-deficient once scaled too (a repeated column), columns 1e3 apart: the minimum norm of X as given, which
    differs from that of the column-scaled X scaled back."""
    rng = np.random.default_rng(45)
    X = rng.standard_normal((150, 6)) * np.array([1.0, 1e3, 1.0, 1e-3, 1.0, 1.0])
    X[:, 5] = X[:, 1] / 1e3 + X[:, 2]
    y = rng.standard_normal(150)
    with pytest.warns(oa.RankDeficientWarning, match="numerical rank 5 of 6"):
        got = oa.coefficients(X, y)
    assert relative(got, np.linalg.pinv(X) @ y) <= 1e-10


@pytest.mark.parametrize("n, p, k", [(50, 200, 1), (8, 30, 2), (3, 7, 1)])
def test_wide_full_row_rank_is_the_minimum_norm_without_a_warning(oa, n, p, k):
    """p > n, full row rank: X⁺Y (one LAPACK call), pinv's answer, and nothing said; a wide X of lower rank warns."""
    rng = np.random.default_rng(n * p)
    X, Y = rng.standard_normal((n, p)), rng.standard_normal((n, k))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = oa.coefficients(X, Y)
    assert relative(got, np.linalg.pinv(X) @ Y) <= 1e-12
    low = rng.standard_normal((n, n - 1)) @ rng.standard_normal((n - 1, p))  # rank n - 1 < n
    with pytest.warns(oa.RankDeficientWarning, match=rf"numerical rank {n - 1} of {p} columns"):
        got = oa.coefficients(low, Y)
    assert relative(got, np.linalg.pinv(low) @ Y) <= 1e-10


# --- small single problems (issue 30): lstsq's accuracy on the data classes where the Gram answer was trusted -----


def small_problem(kind, n, p, k, rng):
    """(X, Y) of one small problem: Gaussian, uncentred (N(0, 1) + 5, no intercept) or near-collinear (a column
    1e-6 from another)."""
    X = rng.standard_normal((n, p))
    if kind == "uncentred":
        X += 5.0
    elif kind == "near-collinear":
        X[:, -1] = X[:, 0] + 1e-6 * rng.standard_normal(n)
    return X, rng.standard_normal((n, k))


@pytest.mark.parametrize("kind", ["gaussian", "uncentred", "near-collinear"])
@pytest.mark.parametrize(("n", "p", "k"), [(10, 2, 1), (20, 3, 4), (50, 5, 1), (60, 6, 3)])
def test_small_auto_is_within_twice_lstsqs_error_of_the_exact_solution(oa, kind, n, p, k):
    rng = np.random.default_rng(3000 + 7 * n + p + k)
    for _ in range(3):
        X, Y = small_problem(kind, n, p, k, rng)
        exact = np.column_stack([exact_least_squares(X, Y[:, t]) for t in range(k)])
        got = oa.coefficients(X, Y)
        assert got.shape == (p, k)
        lstsq = np.linalg.lstsq(X, Y, rcond=None)[0]
        # a few ulps of floor: a solver at lstsq's accuracy may land a rounding or two off it
        assert relative(got, exact) <= max(2 * relative(lstsq, exact), 4 * EPS), (kind, relative(got, exact))
        one = oa.coefficients(X, Y[:, 0])  # one target as a vector
        lstsq_one = np.linalg.lstsq(X, Y[:, 0], rcond=None)[0]
        assert relative(one, exact[:, 0]) <= max(2 * relative(lstsq_one, exact[:, 0]), 4 * EPS), kind


def test_small_auto_names_nan_and_infinity_without_handing_them_to_lapack(oa, capfd):
    rng = np.random.default_rng(3001)
    X, Y = small_problem("gaussian", 20, 3, 2, rng)
    for bad in (np.nan, np.inf):
        Xb, Yb = X.copy(), Y.copy()
        Xb[4, 1] = bad
        Yb[7, 0] = bad
        with pytest.raises(ValueError, match="X contains NaN or infinity"):
            oa.coefficients(Xb, Y)
        with pytest.raises(ValueError, match="Y contains NaN or infinity"):
            oa.coefficients(X, Yb)
    assert capfd.readouterr().err == ""  # LAPACK prints "illegal value" to stderr when handed NaN


def test_small_auto_scales_data_far_from_one_like_the_gram_path(oa):
    rng = np.random.default_rng(3002)
    X, Y = small_problem("uncentred", 30, 4, 2, rng)
    exact = np.column_stack([exact_least_squares(X, Y[:, t]) for t in range(2)])  # unchanged by the scaling
    bound = max(10 * relative(np.linalg.lstsq(X, Y, rcond=None)[0], exact), FLOOR)
    for scale in (2.0**-300, 2.0**300):  # squared norms outside the safe range: the Gram path scales them
        assert relative(oa.coefficients(X * scale, Y * scale), exact) <= bound, scale
    X[:, 2] = 0.0  # a column of zeros: the Gram path's scaled route, the minimum-norm solution (its coefficient 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", oa.RankDeficientWarning)
        got = oa.coefficients(X, Y)
    assert np.all(got[2] == 0.0)
    want = np.linalg.lstsq(np.delete(X, 2, axis=1), Y, rcond=None)[0]
    assert relative(np.delete(got, 2, axis=0), want) <= 1e-13


def test_small_auto_keeps_the_digits_of_columns_scaled_apart(oa):
    """Columns of unlike scale (1, x, x² with x about 1e3, as NIST Pontius): every coefficient within 5e-13 of
    itself (measured: 9e-14 and 2.4e-13), where lstsq, not scaling invariant, is 2e-12 and 9e-13 off: such data
    stay on the (implicitly scaled) Gram route."""
    rng = np.random.default_rng(3003)
    for n in (12, 40):
        x = rng.uniform(500.0, 3000.0, n)
        X = np.column_stack([np.ones(n), x, x * x])
        y = 0.7 + 1e-3 * x + 1e-7 * x * x + 1e-4 * rng.standard_normal(n)
        exact = exact_least_squares(X, y)
        got = oa.coefficients(X, y)
        assert float(np.max(np.abs(got - exact) / np.abs(exact))) <= 5e-13, n


def test_direct_lapack_lstsq_is_numpys_lstsq_and_falls_back_to_it(oa, monkeypatch):
    """_lstsq_direct calls NumPy's gelsd gufunc without the wrapper (issue 30: a third of lstsq's time at 40 × 3):
    the same β, rank and singular values bit for bit, full rank or not, one or several targets; and the wrapper
    itself where the gufunc is missing, has another signature, or signals a LAPACK failure."""
    rng = np.random.default_rng(3003)
    problems = [(rng.standard_normal((40, 3)), rng.standard_normal((40, 1))),
                (rng.standard_normal((25, 6)), rng.standard_normal((25, 3))),
                (rng.standard_normal((30, 2)) @ rng.standard_normal((2, 5)), rng.standard_normal((30, 2)))]
    for X, Y in problems:
        want = np.linalg.lstsq(X, Y, rcond=None)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            got = oa._lstsq_direct(X, Y)
        assert np.array_equal(got[0], want[0]) and got[2] == want[2] and np.array_equal(got[3], want[3])
    X, Y = problems[0]
    want = np.linalg.lstsq(X, Y, rcond=None)[0]
    for stand_in in (None, lambda *a, **k: (_ for _ in ()).throw(TypeError("no signature")),
                     lambda *a, **k: (np.full((3, 1), np.nan), np.zeros(0), -1, np.full(3, np.nan))):
        monkeypatch.setattr(oa, "_GELSD", stand_in)
        assert np.array_equal(oa._lstsq_direct(X, Y)[0], want)
        assert np.array_equal(oa.coefficients(X, Y), want)  # the public path through it


def uncentred_problems(rng, count, sizes, intercept=True, batch=False):
    """(X, Y): columns sharing an offset of 100 to 10⁴ at a spread of 0.1 to 10, an intercept column or none,
    targets a model with noise (0.01 to 100) or pure noise; one problem or a stack of 2 to 12."""
    for t in range(count):
        n = int(rng.integers(*sizes))
        p = int(rng.integers(2, min(n - 1, 12) + 1))
        shape = ((int(rng.integers(2, 13)),) if batch else ()) + (n, p)
        X = rng.standard_normal(shape) * rng.choice([0.1, 1.0, 10.0]) + (100.0, 1000.0, 1e4)[t % 3]
        if intercept:
            X[..., 0] = 1.0
        noise = rng.choice([0.01, 1.0, 100.0]) * rng.standard_normal(shape[:-1] + (1,))
        yield X, (X @ rng.standard_normal(shape[:-2] + (p, 1)) + noise if t % 2 else noise)


@pytest.mark.parametrize("kind", ["intercept, small", "intercept, 300 to 5,000 rows", "no intercept",
                                  "weighted", "stacks"])
def test_auto_is_within_ten_times_lstsqs_error_on_every_uncentred_problem(oa, kind):
    """Issue 30: on uncentred data (columns sharing an offset, with or without an intercept column) auto's error
    against the exact solution of the float64 data is within 10× lstsq's, on every problem: tiny ones by lstsq where
    only an intercept and the offset set the columns apart, the others by a refinement whose gradients are centred
    (_centring, _centred_gradient; float64 gradients were beyond 10× in 1 problem in 13, up to 1,000×), batches'
    hard problems by QR with one such step, weighted rows centred along √w."""
    rng = np.random.default_rng(30)
    sizes = {"intercept, 300 to 5,000 rows": (300, 5000), "stacks": (8, 60)}.get(kind, (5, 300))
    problems = uncentred_problems(rng, 12 if kind == "stacks" else 30, sizes, intercept=kind != "no intercept",
                                  batch=kind == "stacks")
    beyond = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", oa.RankDeficientWarning)
        for X, Y in problems:
            w = rng.uniform(0.1, 10.0, X.shape[:-1]) if kind == "weighted" else None
            got = oa.coefficients(X, Y, weights=w)
            A, B = (X, Y) if w is None else (X * np.sqrt(w)[..., None], Y * np.sqrt(w)[..., None])
            # the reference one problem at a time (route "exact" solves a stack exactly too, since issue 40)
            exact = np.stack([oa.coefficients(a, b, route="exact") for a, b in
                              zip(A.reshape((-1,) + A.shape[-2:]), B.reshape((-1,) + B.shape[-2:]), strict=True)])
            for a, b, mine, want in zip(A.reshape((-1,) + A.shape[-2:]), B.reshape((-1,) + B.shape[-2:]),
                                        got.reshape((-1,) + got.shape[-2:]), exact, strict=True):
                lstsq = np.linalg.lstsq(a, b, rcond=None)[0]
                if relative(mine, want) > max(10 * relative(lstsq, want), FLOOR):
                    beyond.append((a.shape, relative(mine, want), relative(lstsq, want)))
    assert not beyond, beyond


def test_sum2_and_dot2_are_accurate_to_eps_squared(oa):
    """The exact sums behind the centred gradient: _sum2 (Rump–Ogita–Oishi extraction, along the first axis of one
    problem or a stack), _dot2_stack (mᵀβ of a stack: Dekker products, then _sum2) and _dot2 (Dekker products,
    math.fsum) against Fractions, on terms that cancel to 1e-16 of their size; float64 sums of the same terms are
    off by far more than the bound."""
    rng = np.random.default_rng(7)
    eps = np.finfo(float).eps
    for shape in ((1, 1), (5, 3), (300, 2), (2000, 4, 1)):
        big = rng.standard_normal(shape) * 1e8
        A = np.concatenate([big, -big, rng.standard_normal(shape)], axis=0)
        hi, lo = oa._sum2(A)
        n = A.shape[0]
        assert hi.shape == lo.shape == A.shape[1:]
        for index in np.ndindex(hi.shape):
            column = A[(slice(None), *index)]
            exact = sum(map(Fraction, column.tolist()))
            bound = 8 * n * n * max(np.log2(n), 1) * eps * eps * float(np.abs(column).max())
            assert abs(Fraction(float(hi[index])) + Fraction(float(lo[index])) - exact) <= bound
    for batch, p, k in ((1, 1, 1), (6, 9, 1), (3, 40, 2)):
        m = rng.standard_normal((batch, p)) * 50.0
        beta = rng.standard_normal((batch, p, k))
        beta[:, -1, :] = -np.einsum("bp,bpk->bk", m[:, :-1], beta[:, :-1, :]) / m[:, -1:]  # near cancellation
        hi, lo = oa._dot2_stack(m, beta)
        assert hi.shape == lo.shape == (batch, k)
        for b, j in np.ndindex(batch, k):
            exact = sum(Fraction(x) * Fraction(y) for x, y in zip(m[b].tolist(), beta[b, :, j].tolist(), strict=True))
            size = float(np.abs(m[b] * beta[b, :, j]).sum())
            bound = 32 * p * p * max(np.log2(2 * p), 1) * eps * eps * size
            assert abs(Fraction(float(hi[b, j])) + Fraction(float(lo[b, j])) - exact) <= bound
    a, b = (rng.standard_normal(12) * 1e4).tolist(), rng.standard_normal(12).tolist()
    b[-1] = -sum(x * y for x, y in zip(a[:-1], b[:-1], strict=True)) / a[-1]  # a near cancellation
    hi, lo = oa._dot2(a, b)
    exact = sum(Fraction(x) * Fraction(y) for x, y in zip(a, b, strict=True))
    size = sum(abs(x * y) for x, y in zip(a, b, strict=True))
    assert abs(Fraction(hi) + Fraction(lo) - exact) <= 4 * eps * eps * size
    assert abs(Fraction(sum(x * y for x, y in zip(a, b, strict=True))) - exact) > 4 * eps * eps * size


def test_split_and_centring_are_exact(oa):
    """_split gives two halves whose products with another 26-bit number are exact; _centring's X = Xc + v mᵀ holds
    exactly on uncentred columns, for the ones vector (column means) and for √w (26-bit direction and
    coefficients), and gives None on centred data."""
    rng = np.random.default_rng(8)
    a = rng.standard_normal(50) * 1e3
    high, low = oa._split(a)
    assert np.array_equal(high + low, a)
    u = oa._split(rng.uniform(0.3, 3.0, 50))[0]
    for x, y in ((u * high, (u, high)), (u * low, (u, low))):
        assert all(Fraction(p) == Fraction(s) * Fraction(t) for p, s, t in zip(x.tolist(), *(v.tolist() for v in y),
                                                                                 strict=True))
    X = rng.standard_normal((40, 4)) + 1e3
    X[:, 0] = 1.0
    squares = np.einsum("ij,ij->j", X, X)
    for direction in (None, np.sqrt(rng.uniform(0.1, 10.0, (40, 1)))):
        data = X if direction is None else X * direction
        Xc, m, v = oa._centring(data, np.einsum("ij,ij->j", data, data), direction)
        ones = np.ones((40, 1)) if v is None else v
        for i, j in np.ndindex(X.shape):
            assert Fraction(data[i, j]) == Fraction(Xc[i, j]) + Fraction(ones[i, 0]) * Fraction(m[j])
        assert np.abs(Xc[:, 1:]).max() < 1e-2 * np.abs(data[:, 1:]).max()
    centred = rng.standard_normal((40, 4))
    assert oa._centring(centred, np.einsum("ij,ij->j", centred, centred)) is None
    del squares


def test_centred_gradient_is_within_eps_of_the_exact_gradient(oa):
    """Xᵀ(Y − Xβ) on an intercept and columns sharing an offset of 1e4, one problem, a stack and weighted rows:
    _centred_gradient within 4 eps |X|ᵀ(|r| + |X − u mᵀ||β|) of the exact gradient (Fractions; u the ones vector or
    √w, m X's coefficients on u): the rounding of the centred residual, a bound float64 products (eps |X|ᵀ|X||β|)
    miss by 10⁴ here."""
    rng = np.random.default_rng(9)
    eps = np.finfo(float).eps
    n, p = 40, 4
    X = rng.standard_normal((2, n, p)) * 0.1 + 1e4
    X[..., 0] = 1.0
    Y = X @ rng.standard_normal((2, p, 1)) + 0.01 * rng.standard_normal((2, n, 1))
    beta = np.stack([np.linalg.lstsq(x, y, rcond=None)[0] for x, y in zip(X, Y, strict=True)])

    def check(data, targets, b, direction=None):
        centred = oa._centring(data, np.einsum("...ij,...ij->...j", data, data), direction)
        got = oa._centred_gradient(*centred, targets, b)
        plain = np.swapaxes(data, -1, -2) @ (targets - data @ b)
        for index in np.ndindex(data.shape[:-2]):
            x, y, g, f = data[index], targets[index], got[index], plain[index]
            r = [Fraction(y[i, 0]) - sum(Fraction(x[i, j]) * Fraction(b[index][j, 0]) for j in range(p))
                 for i in range(n)]
            along = np.ones((n, 1)) if direction is None else direction  # |X − u mᵀ||β| row by row (m: X on u)
            spread = np.abs(x - along @ (along.T @ x) / (along.T @ along)) @ np.abs(b[index][:, 0])
            for j in range(p):
                exact = sum(Fraction(x[i, j]) * r[i] for i in range(n))
                size = sum(abs(float(x[i, j])) * (abs(float(r[i])) + spread[i]) for i in range(n))
                assert abs(Fraction(g[j, 0]) - exact) <= 4 * eps * size
                assert abs(Fraction(f[j, 0]) - exact) > 400 * eps * size  # what the centring removes

    check(X[0], Y[0], beta[0])
    check(X, Y, beta)
    root = np.sqrt(rng.uniform(0.1, 10.0, (n, 1)))
    Xw, Yw = X[0] * root, Y[0] * root
    check(Xw, Yw, np.linalg.lstsq(Xw, Yw, rcond=None)[0], root)


def test_tiny_problems_scaled_apart_by_an_offset_take_lstsq(oa):
    """A tiny problem whose columns differ in scale only by an intercept and an offset (plain or weighted rows) is
    lstsq's answer bit for bit; one whose columns differ in scale of their own (x, x², NIST Pontius-like) is not
    sent there (lstsq loses its small coefficients' digits: the Gram route keeps them)."""
    rng = np.random.default_rng(10)
    X = rng.standard_normal((20, 3)) + 100.0
    X[:, 0] = 1.0
    Y = X @ rng.standard_normal((3, 1)) + rng.standard_normal((20, 1))
    G = X.T @ X
    assert oa._scaled_apart_by_offsets(X, G, G.diagonal().tolist())
    assert np.array_equal(oa.coefficients(X, Y), np.linalg.lstsq(X, Y, rcond=None)[0])
    root = np.sqrt(rng.uniform(0.1, 10.0, (20, 1)))
    Xw = X * root
    Gw = Xw.T @ Xw
    assert oa._scaled_apart_by_offsets(Xw, Gw, Gw.diagonal().tolist(), root)
    assert not oa._scaled_apart_by_offsets(Xw, Gw, Gw.diagonal().tolist())  # the ones vector is not its direction
    x = np.linspace(1e5, 3e6, 20)
    P = np.column_stack([np.ones(20), x, x * x])
    H = P.T @ P
    assert not oa._scaled_apart_by_offsets(P, H, H.diagonal().tolist())


def test_a_stack_refines_where_an_intercept_spreads_the_error(oa):
    """A stack of well-conditioned uncentred problems (an intercept beside columns of spread 30 around 100, the
    intercept's coefficient near 0): the pivot estimate alone (about 1e-14) kept their Cholesky answers, whose error
    D⁻¹ spreads onto that small coefficient (7 of 17 beyond 10× lstsq's); the spread max|Dβ| / (min d max|β|) now
    sends them to refinement."""
    rng = np.random.default_rng(6)
    X = rng.standard_normal((17, 57, 3)) * 30.0 + 100.0
    X[..., 0] = 1.0
    B = rng.standard_normal((17, 3, 1))
    B[:, 0] = 0.0
    Y = X @ B + 0.01 * rng.standard_normal((17, 57, 1))
    got = oa.coefficients(X, Y)
    for x, y, mine in zip(X, Y, got, strict=True):
        want = oa.coefficients(x, y, route="exact")
        assert relative(mine, want) <= max(10 * relative(np.linalg.lstsq(x, y, rcond=None)[0], want), FLOOR)


@pytest.mark.parametrize("targets", [1, 2])
def test_the_split_gradient_is_exact_to_far_under_float64_rounding(oa, targets):
    """_gradient_split (the last refinement step of tall ill-conditioned problems): Xᵀ(Y − Xβ) near the solution
    against the exact gradient of the float64 data (fractions), a zero column and large offsets included: within
    eps |X|ᵀ|r| (what rounding the residual to float64 alone costs), where float64 products, whose residual
    rounds at eps |X||β| ≫ eps |r|, are over 100 times further off."""
    rng = np.random.default_rng(7)
    n, p = 3000, 5
    X = rng.standard_normal((n, p)) + np.array([0.0, 300.0, -2.0, 0.0, 1e4])
    X[:, 3] = 0.0
    Y = X @ rng.standard_normal((p, targets)) + rng.standard_normal((n, targets))
    beta = np.linalg.lstsq(X, Y, rcond=None)[0]
    d = oa._power_of_two(np.sqrt(np.einsum("ij,ij->j", X, X)))
    got = oa._gradient_split(X, Y, beta, d)
    Xf = [[Fraction(v) for v in row] for row in X.tolist()]
    for k in range(targets):
        b = [Fraction(v) for v in beta[:, k].tolist()]
        r = [Fraction(y) - sum(x * c for x, c in zip(row, b, strict=True)) for row, y in zip(Xf, Y[:, k].tolist(),
                                                                                           strict=True)]
        exact = [float(sum(row[j] * r[i] for i, row in enumerate(Xf))) for j in range(p)]
        scale = np.abs(X).T @ np.abs(np.array([float(v) for v in r]))  # |X|ᵀ|r|: float64's rounding is eps times it
        error = np.abs(got[:, k] - exact)
        assert np.all(error <= np.finfo(float).eps * scale)
        assert np.abs(oa._gradient(X, Y, beta)[:, k] - exact).max() > 100 * error.max()
