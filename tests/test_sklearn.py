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
    with pytest.raises(ValueError, match="'ridge' parameter"):  # InvalidParameterError is a ValueError
        OLSAttentionRegressor(ridge=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="'route' parameter"):
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


# --- issue 44 item 4: the estimator without rough edges ------------------------------------------------------


@pytest.mark.parametrize("params, name", [
    ({"ridge": -1.0}, "ridge"), ({"ridge": float("nan")}, "ridge"), ({"ridge": float("inf")}, "ridge"),
    ({"ridge": True}, "ridge"), ({"ridge": 10**400}, "ridge"), ({"ridge": "1"}, "ridge"),
    ({"route": "lstsq"}, "route"), ({"fit_intercept": "yes"}, "fit_intercept"),
])
def test_bad_parameters_raise_sklearns_invalid_parameter_error(params, name):
    from sklearn.utils._param_validation import InvalidParameterError

    X, y = load_diabetes(return_X_y=True)
    with pytest.raises(InvalidParameterError, match=f"The '{name}' parameter of OLSAttentionRegressor must be"):
        OLSAttentionRegressor(**params).fit(X, y)
    assert set(OLSAttentionRegressor._parameter_constraints) == set(OLSAttentionRegressor().get_params())


def _sparse_problem(seed: int = 44, offset: float = 0.0):
    sparse = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(seed)
    A = sparse.random(400, 15, density=0.15, random_state=seed, format="csr")
    if offset:  # every entry stored, offset + u: centring XᵀX after forming it would cancel its digits
        A = sparse.csr_matrix(offset + A.toarray())
    y = A @ rng.standard_normal(15) + 0.1 * rng.standard_normal(400) + 3.0
    return sparse, A, y, rng.uniform(0.0, 2.0, 400)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("ridge", [None, 0.5])
@pytest.mark.parametrize("weighted", [False, True])
def test_sparse_x_is_fitted_as_the_dense_x(fit_intercept, ridge, weighted):
    """A sparse X is accepted where LinearRegression and Ridge accept it (CSR, CSC, COO), and fitted as its dense
    copy is: route "auto" from the sparse Gram matrix, centred and weighted without densifying X."""
    sparse, A, y, w = _sparse_problem()
    weights = w if weighted else None
    reference = (Ridge(alpha=ridge, fit_intercept=fit_intercept, solver="svd") if ridge
                 else LinearRegression(fit_intercept=fit_intercept)).fit(A.toarray(), y, sample_weight=weights)
    dense = OLSAttentionRegressor(fit_intercept=fit_intercept, ridge=ridge).fit(A.toarray(), y, sample_weight=weights)
    for X in (A, A.tocsc(), A.tocoo(), sparse.csr_array(A)):
        ours = OLSAttentionRegressor(fit_intercept=fit_intercept, ridge=ridge).fit(X, y, sample_weight=weights)
        np.testing.assert_allclose(ours.coef_, reference.coef_, rtol=1e-10, atol=1e-12)
        assert abs(ours.intercept_ - reference.intercept_) <= 1e-10 * max(1.0, abs(reference.intercept_))
        np.testing.assert_allclose(ours.predict(X), dense.predict(A.toarray()), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(ours.query_key_ @ ours.output_projection_, ours.coef_, rtol=1e-9, atol=1e-12)


def test_sparse_x_without_densifying_it_and_the_dense_routes(monkeypatch):
    sparse, A, y, _ = _sparse_problem()
    monkeypatch.setattr(OLSAttentionRegressor, "_densified", lambda X, why: pytest.fail("densified a well-posed X"))
    model = OLSAttentionRegressor().fit(A, np.column_stack([y, -y]))  # several targets too
    assert model.coef_.shape == (2, 15) and model.predict(A).shape == (400, 2)
    monkeypatch.undo()
    # another route works on X itself (a dense copy); so does "auto" where the centred Gram matrix lost digits
    densified, dense_copy = [], OLSAttentionRegressor._densified
    monkeypatch.setattr(OLSAttentionRegressor, "_densified",
                        staticmethod(lambda X, why: densified.append(why) or dense_copy(X, why)))
    shifted = _sparse_problem(offset=1e6)[1]  # entries 1e6 + u: centring after forming XᵀX cancels 12 digits
    for route, X in (("qr", A), ("auto", shifted)):
        ours = OLSAttentionRegressor(route=route).fit(X, y)
        theirs = LinearRegression().fit(X.toarray(), y)
        np.testing.assert_allclose(ours.predict(X), theirs.predict(X.toarray()), rtol=1e-8)
    assert len(densified) == 2 and "ill-conditioned" in densified[1]


def test_a_sparse_x_too_large_to_densify_is_refused_with_the_reason(monkeypatch):
    import derive.sklearn as module

    _, A, y, _ = _sparse_problem()
    monkeypatch.setattr(module, "SPARSE_DENSE_BYTES", 1000)
    OLSAttentionRegressor().fit(A, y)  # the Gram route needs no dense copy
    said = r"sparse 400×15 matrix and route='svd' works on X itself: its dense copy \(48,000 bytes\).*_DENSE_BYTES"
    with pytest.raises(ValueError, match=said):
        OLSAttentionRegressor(route="svd").fit(A, y)


def test_the_html_repr_links_the_documentation(monkeypatch):
    """The ``?`` link of the estimator's HTML representation: the estimator page of the documentation the
    package's [project.urls] names (Documentation), else the project's address; no link where none is recorded."""
    import derive.sklearn as module

    monkeypatch.setattr(module, "_project_urls", lambda: {"documentation": "https://docs.example.org/ols/"})
    html = OLSAttentionRegressor()._repr_html_()
    assert 'href="https://docs.example.org/ols/estimator.html"' in html
    monkeypatch.setattr(module, "_project_urls", lambda: {"repository": "https://example.org/ols-transformer"})
    assert OLSAttentionRegressor()._get_doc_link() == "https://example.org/ols-transformer"
    monkeypatch.setattr(module, "_project_urls", lambda: {"documentation": "javascript:alert(1)"})
    assert OLSAttentionRegressor()._get_doc_link() == "" and "javascript" not in OLSAttentionRegressor()._repr_html_()
    monkeypatch.undo()
    assert module.documentation_url() in ("", OLSAttentionRegressor()._get_doc_link())


def test_the_readme_and_the_docstring_say_the_same_of_the_code_it_runs():
    """The estimator runs the shipped generated module; nothing is proved at import or fit time (issue 44)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    import derive.sklearn

    text = (root / "README.md").read_text(encoding="utf-8")
    paragraph = " ".join(text.split("`derive.sklearn.OLSAttentionRegressor(", 1)[1].split("\n\n", 1)[0].split())
    docstring = " ".join(derive.sklearn.__doc__.split())
    for said in (paragraph, docstring):
        assert "nothing is proved at import or fit time" in said
    assert "derive.generated.ols_attention" in paragraph and "on first use" not in paragraph
