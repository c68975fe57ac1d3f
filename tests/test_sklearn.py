"""derive.sklearn.OLSAttentionRegressor: a scikit-learn estimator running the generated NumPy module."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

pytest.importorskip("sklearn")

from sklearn.datasets import load_diabetes  # noqa: E402
from sklearn.linear_model import LinearRegression, Ridge  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.utils.estimator_checks import check_estimator  # noqa: E402

from derive.sklearn import OLSAttentionRegressor, generated_numpy  # noqa: E402


def test_importing_derive_does_not_import_sklearn():
    import subprocess

    code = "import sys, derive, derive.codegen, derive.pipeline; print('sklearn' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


@pytest.mark.parametrize("params", [{}, {"ridge": 2.5}, {"fit_intercept": False, "route": "svd"}])
def test_passes_the_estimator_checks(params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(OLSAttentionRegressor(**params), on_fail=None)
    failed = [(r["check_name"], repr(r["exception"])) for r in results if r["status"] == "failed"]
    assert not failed and len(results) > 40


def test_matches_linear_regression_on_diabetes():
    X, y = load_diabetes(return_X_y=True)
    ours, theirs = OLSAttentionRegressor().fit(X, y), LinearRegression().fit(X, y)
    np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=1e-8, atol=1e-8 * np.abs(theirs.coef_).max())
    assert abs(ours.intercept_ - theirs.intercept_) <= 1e-8 * abs(theirs.intercept_)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=1e-8)
    assert ours.n_features_in_ == 10 and ours.query_key_.shape == (10, 10)
    # the attention parameters reproduce the fit: coef = (L P)ᵀ, and L Lᵀ = (XcᵀXc)⁻¹
    Xc = X - X.mean(axis=0)
    np.testing.assert_allclose(ours.query_key_ @ ours.output_projection_, ours.coef_, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(ours.query_key_ @ ours.query_key_.T, np.linalg.inv(Xc.T @ Xc), rtol=1e-7)
    Y = np.column_stack([y, -2 * y + 1])
    multi, reference = OLSAttentionRegressor().fit(X, Y), LinearRegression().fit(X, Y)
    assert multi.coef_.shape == (2, 10) and multi.intercept_.shape == (2,)
    np.testing.assert_allclose(multi.coef_, reference.coef_, rtol=1e-8)
    np.testing.assert_allclose(multi.intercept_, reference.intercept_, rtol=1e-8)


def test_ridge_matches_sklearns_ridge():
    X, y = load_diabetes(return_X_y=True)
    for alpha in (0.01, 1.0, 30.0):
        ours, theirs = OLSAttentionRegressor(ridge=alpha).fit(X, y), Ridge(alpha=alpha, solver="svd").fit(X, y)
        np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=1e-8, atol=1e-8 * np.abs(theirs.coef_).max())
        assert abs(ours.intercept_ - theirs.intercept_) <= 1e-8 * abs(theirs.intercept_)
    for alpha in (0.01, 30.0):  # without an intercept, every coefficient is penalised, as in Ridge
        ours = OLSAttentionRegressor(ridge=alpha, fit_intercept=False).fit(X, y)
        theirs = Ridge(alpha=alpha, fit_intercept=False, solver="svd").fit(X, y)
        np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=1e-8, atol=1e-8 * np.abs(theirs.coef_).max())
        assert ours.intercept_ == 0.0
    # the intercept is not penalised: a shift of y moves the intercept only
    shifted = OLSAttentionRegressor(ridge=30.0).fit(X, y + 1000.0)
    plain = OLSAttentionRegressor(ridge=30.0).fit(X, y)
    np.testing.assert_allclose(shifted.coef_, plain.coef_, rtol=1e-10, atol=1e-10 * np.abs(plain.coef_).max())
    assert abs(shifted.intercept_ - plain.intercept_ - 1000.0) <= 1e-8 * abs(shifted.intercept_)
    with pytest.raises(ValueError, match="ridge must be"):
        OLSAttentionRegressor(ridge=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="route must be"):
        OLSAttentionRegressor(route="lstsq").fit(X, y)


def test_ridge_on_near_collinear_features_is_refined_at_ridges_cost(monkeypatch):
    """cond(XᵀX + λI) eps from 1e-8 to 1e-3 (issue 30): the Gram route with the module's refinement steps, not the
    QR of [X y]; coefficients within 10× of Ridge(solver="cholesky")'s distance from Ridge(solver="svd"), and 100×
    closer where the Cholesky solve loses digits; the attention parameters of the same factor (L = C⁻ᵀ, CCᵀ =
    XᵀX + λI of the centred data)."""
    rng = np.random.default_rng(30)
    X = rng.standard_normal((3000, 12)) + 1.0
    X[:, -1] = X[:, 0] + 1e-6 * rng.standard_normal(3000)
    y = X @ rng.standard_normal(12) + rng.standard_normal(3000)
    monkeypatch.setattr(OLSAttentionRegressor, "_fit_module", lambda *a: pytest.fail("took the QR route"))
    for alpha in (1e-4, 1e-6, 1e-9):
        ours = OLSAttentionRegressor(ridge=alpha).fit(X, y)
        svd = Ridge(alpha=alpha, solver="svd").fit(X, y)
        cholesky = Ridge(alpha=alpha, solver="cholesky").fit(X, y)
        ours_off, cholesky_off = (np.abs(fit.coef_ - svd.coef_).max() for fit in (ours, cholesky))
        assert ours_off <= max(10 * cholesky_off, 1e-12 * np.abs(svd.coef_).max()), alpha  # issue 30's bound
        if alpha < 1e-5:  # cond eps over 1e-6: the Cholesky solve has lost digits that the steps win back
            assert ours_off <= cholesky_off / 100, alpha
        Xc = X - X.mean(axis=0)
        G = Xc.T @ Xc + alpha * np.eye(12)
        factor = np.linalg.inv(ours.query_key_).T  # L = C⁻ᵀ: C Cᵀ = XᵀX + λI, to rounding
        assert np.abs(factor @ factor.T - G).max() <= 1e-12 * np.abs(G).max(), alpha


def test_pipeline_and_grid_search():
    X, y = load_diabetes(return_X_y=True)
    pipe = make_pipeline(StandardScaler(), OLSAttentionRegressor())
    search = GridSearchCV(pipe, {"olsattentionregressor__ridge": [None, 1.0, 100.0],
                                 "olsattentionregressor__route": ["auto", "qr"]}, cv=3).fit(X, y)
    assert search.best_params_["olsattentionregressor__ridge"] in (None, 1.0, 100.0)
    assert 0.3 < search.best_score_ < 0.6  # diabetes: R² of a linear model is about 0.5
    reference = make_pipeline(StandardScaler(), LinearRegression()).fit(X, y)
    np.testing.assert_allclose(pipe.fit(X, y).predict(X), reference.predict(X), rtol=1e-8)


def test_runs_the_generated_module():
    module = generated_numpy()
    assert module is generated_numpy() and "_cholesky_beta" in vars(module) and module.PRINTED
    assert "Generated by `derive codegen`" in module.__doc__
