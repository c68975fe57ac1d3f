"""A scikit-learn regressor that fits by the generated NumPy module: OLS (or ridge) as linear attention.

:class:`OLSAttentionRegressor` runs the code ``derive codegen --backend numpy`` writes (``ols_attention.py``),
generated from the checked theorems and shipped in the package (:mod:`derive.generated`, pinned byte for byte by a
test that regenerates it): nothing is proved at import or fit time, and a joblib worker pays only the import.
Importing this module imports scikit-learn (the ``sklearn`` extra; without it the import raises an ``ImportError``
that says what to install); nothing else in the package does.
"""

from __future__ import annotations

import math
from numbers import Real
from types import ModuleType

import numpy as np

try:
    from scipy import sparse as _sparse
    from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
    from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions
    from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data
except ImportError as _missing:  # scikit-learn absent (a ModuleNotFoundError, as pytest.importorskip expects) or old
    _kind = ModuleNotFoundError if isinstance(_missing, ModuleNotFoundError) else ImportError
    raise _kind(
        "derive.sklearn needs scikit-learn 1.6 or later, the package's `sklearn` extra "
        f"({_missing}): python -m pip install \"scikit-learn>=1.6\", or from a checkout of the package "
        "python -m pip install \".[sklearn]\"", name=_missing.name) from _missing

__all__ = ["OLSAttentionRegressor", "documentation_url", "generated_numpy"]

ROUTES = ("auto", "exact", "eigh", "cholesky", "svd", "qr")
#: The largest dense copy of a sparse X the estimator makes (bytes): a sparse X is fitted from its sparse Gram
#: matrix where that is well-conditioned (route "auto"); otherwise, and for the other routes, which work on X
#: itself, X is densified, up to this size (a larger one is a ``ValueError`` that says so).
SPARSE_DENSE_BYTES = 2**30


def generated_numpy() -> ModuleType:
    """The generated NumPy module (``ols_attention.py``) shipped in the package (:mod:`derive.generated`)."""
    from .generated import ols_attention

    return ols_attention


#: The keys of ``[project.urls]`` that name the documentation (first found wins); its page ``estimator.html`` is the
#: estimator's user guide (``docs/estimator.md``).  Else the project's own address (the first of ``_HOME_KEYS``).
_DOCS_KEYS = ("documentation", "docs")
_HOME_KEYS = ("homepage", "home", "repository", "source", "source code", "code")


def documentation_url() -> str:
    """Where the estimator's documentation is: ``<Documentation>/estimator.html`` for the ``Documentation`` address of
    the package's ``[project.urls]`` (installed metadata, else ``pyproject.toml`` of the checkout this module is
    in), else the project's own address (Homepage, Repository, ...), else ``""`` where neither records one (the
    HTML representation then shows no link rather than a made-up one).  The link of the estimator's HTML
    representation in a notebook (scikit-learn's ``?`` icon)."""
    urls = _project_urls()
    for key in _DOCS_KEYS:
        if urls.get(key, "").startswith(("https://", "http://")):
            return urls[key].rstrip("/") + "/estimator.html"
    for key in _HOME_KEYS:
        if urls.get(key, "").startswith(("https://", "http://")):
            return urls[key]
    return ""


def _project_urls() -> dict[str, str]:
    """``[project.urls]`` of the package, the keys in lower case: from the installed metadata (``Project-URL``),
    else from ``pyproject.toml`` beside the package (a checkout: :func:`derive.files.pyproject_urls`)."""
    from importlib import metadata
    from pathlib import Path

    urls: dict[str, str] = {}
    try:
        for entry in metadata.metadata("ols-transformer").get_all("Project-URL") or ():
            key, _, url = entry.partition(",")
            urls.setdefault(key.strip().lower(), url.strip())
    except metadata.PackageNotFoundError:
        pass
    if urls:
        return urls
    from .files import pyproject_urls

    return pyproject_urls(Path(__file__).resolve().parents[1] / "pyproject.toml")


class _CentredSparse:
    """The centred, weighted design diag(r)(A − 1 mᵀ) of a sparse A, never formed: S = diag(r) A is kept sparse and
    the rank-one correction applied in every product (``X @ B``, ``X.T @ R``, and ``X.T @ X``, the dense p×p Gram
    matrix SᵀS − (rᵀr) m mᵀ, which holds because m is the r²-weighted column mean of A, or 0 without an
    intercept).  ``inflation``: how much larger the uncentred Gram's diagonal is than the centred one's, the factor
    by which forming SᵀS − (rᵀr) m mᵀ can lose accuracy (1 without an intercept)."""

    def __init__(self, S, root, mean):
        self.S, self.root, self.mean = S, root, mean
        self.shape = S.shape
        self.T = _CentredSparseT(self)
        raw = np.asarray((S.T @ S).toarray(), dtype=np.float64)
        self.gram = raw - float(root @ root) * np.outer(mean, mean)
        diagonal = self.gram.diagonal()
        with np.errstate(divide="ignore", invalid="ignore"):
            self.inflation = float(np.max(raw.diagonal() / diagonal)) if diagonal.size and (diagonal > 0).all() \
                else math.inf
        if not self.mean.any():
            self.inflation = 1.0

    def __matmul__(self, B):
        return np.asarray(self.S @ B) - np.outer(self.root, self.mean @ B).reshape(self.shape[0], *B.shape[1:])


class _CentredSparseT:
    def __init__(self, design: _CentredSparse):
        self.design = design

    def __matmul__(self, R):
        d = self.design
        if R is d:
            return d.gram.copy()
        return np.asarray(d.S.T @ R) - np.outer(d.mean, d.root @ R).reshape(d.shape[1], *R.shape[1:])


class OLSAttentionRegressor(RegressorMixin, BaseEstimator):
    """Least squares (or ridge) fitted as single-layer linear attention by the generated NumPy module.

    Parameters
    ----------
    route : {"auto", "exact", "eigh", "cholesky", "svd", "qr"}, default="auto"
        The route of the generated module's ``coefficients``. ``"auto"``: where XᵀX + λI (of the centred, weighted
        data) is well-conditioned (cond eps <= 1e-9, from its eigenvalues), one Cholesky factorization of it
        gives β (the cholesky route, then, where cond eps > 1e-14, one refinement step with the residual) and
        the attention factor L = C⁻ᵀ, at the cost of scikit-learn's ``Ridge(solver="cholesky")``: one pass of XᵀX;
        elsewhere the module's backward stable ``"auto"`` route. ``"exact"``: the least-squares solution of the
        float64 data as given, each coefficient the float nearest the exact rational solution (from XᵀX and XᵀY
        formed exactly; at most 64 features, more raise a ``ValueError``; milliseconds to seconds).
    fit_intercept : bool, default=True
        Fit an intercept: X and y are centred (column means) before the fit, as ``LinearRegression`` does.
    ridge : float or None, default=None
        λ ≥ 0 of ridge regression, β = (XᵀX + λI)⁻¹XᵀY on the centred data (the intercept is not penalised):
        the generated module's ``coefficients(..., ridge=λ)`` (ridge_is_linear_attention), accurate relative to
        X's own scale for every λ and route; the attention parameters are those of the least-squares problem of
        √λ I stacked on X and zeros on Y. ``None`` or 0: ordinary least squares. Anything else (negative, NaN,
        infinite, too large for a float, a bool) is scikit-learn's ``InvalidParameterError`` (a ``ValueError``)
        naming ``ridge``, raised by ``fit``, as is a ``route`` not listed above or a ``fit_intercept`` that is not
        a bool (``_parameter_constraints``).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,) or (n_targets, n_features)
        The coefficients, as in ``LinearRegression``.
    intercept_ : float or ndarray of shape (n_targets,)
        The intercept (0.0 when ``fit_intercept=False``).
    query_key_ : ndarray of shape (n_features, n_features)
        The attention factor L = W_Q = W_K = W_V with L Lᵀ = (XᵀX + λI)⁻¹ (the minimum-norm factor where that
        is singular), of the centred data.
    output_projection_ : ndarray of shape (n_features,) or (n_features, n_targets)
        P = Lᵀ XᵀY: then X L P are the fitted values of the centred data, and ``coef_`` is (L P)ᵀ.
    n_features_in_ : int
        The number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape ``(n_features_in_,)``
        The feature names, where X had them (a DataFrame).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [1.0], [2.0]])
    >>> model = OLSAttentionRegressor().fit(X, [1.0, 2.0, 4.0])
    >>> bool(np.allclose(model.coef_, [1.5])), round(float(model.intercept_), 12)
    (True, 0.833333333333)

    Notes
    -----
    ``X`` may be a SciPy sparse matrix or array, as for ``LinearRegression``: with ``route="auto"`` it is fitted
    from its sparse Gram matrix XᵀX (centred and weighted without forming the dense centred X) where that is
    well-conditioned; otherwise, and for the other routes, which work on X itself, from a dense copy of X, up to
    :data:`SPARSE_DENSE_BYTES` (1 GiB; a larger one is a ``ValueError`` that says so).
    """

    #: What scikit-learn checks of the parameters when ``fit`` is called (its ``InvalidParameterError``); a ridge that
    #: is a bool or too large for a float is refused by :meth:`_check_params` with the same error.
    _parameter_constraints: dict = {
        "route": [StrOptions(set(ROUTES))],
        "fit_intercept": ["boolean"],
        "ridge": [None, Interval(Real, 0, None, closed="left")],
    }

    #: The HTML representation's documentation link (scikit-learn's ``?`` icon): :func:`documentation_url`.
    _doc_link_module = "derive"

    @property
    def _doc_link_template(self) -> str:
        return documentation_url().replace("{", "{{").replace("}", "}}")  # a template: the address as it is

    def __init__(self, route: str = "auto", fit_intercept: bool = True, ridge: float | None = None):
        self.route = route
        self.fit_intercept = fit_intercept
        self.ridge = ridge

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True  # several target columns are fitted together, as one Y
        tags.input_tags.sparse = True  # as LinearRegression: CSR, CSC and COO (others are converted)
        return tags

    def _check_params(self):
        """What the constraints do not say: ``ridge`` is not a bool, and is finite as a float (10**400 is not)."""
        if self.ridge is None:
            return
        try:  # float() of a huge integer (10**400) raises OverflowError: it is not a finite float either
            value = float(self.ridge)
        except OverflowError:
            value = math.inf
        if isinstance(self.ridge, (bool, np.bool_)) or not (math.isfinite(value) and value >= 0):
            got = repr(self.ridge)
            raise InvalidParameterError(
                f"The 'ridge' parameter of {type(self).__name__} must be None or a finite float >= 0 (not a bool). "
                f"Got {got if len(got) <= 40 else got[:39] + '…'} instead.")

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the coefficients and the attention parameters.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The design.
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            The targets.
        sample_weight : array-like of shape (n_samples,) or float, default=None
            Non-negative weights, one per sample: minimises Σ w_i ‖y_i − x_i β − b‖² (+ λ‖β‖²), as
            ``LinearRegression`` and ``Ridge`` do with ``sample_weight`` (weighted means for the intercept, the
            rows then scaled by √w_i; a weight of 0 drops its row).

        Returns
        -------
        self : OLSAttentionRegressor
            The fitted estimator.
        """
        self._check_params()
        X, y = validate_data(self, X, y, accept_sparse=("csr", "csc", "coo"), y_numeric=True, multi_output=True,
                             dtype=[np.float64, np.float32])
        y = np.asarray(y, dtype=np.float64)
        vector = y.ndim == 1
        Y = y[:, None] if vector else y
        root = None
        if sample_weight is not None:
            weights = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
            root = np.sqrt(weights)[:, None]
        ridge = float(self.ridge) if self.ridge else None
        if _sparse.issparse(X):
            found = self._fit_sparse(X.astype(np.float64, copy=False), Y, root, ridge) if self.route == "auto" else None
            if found is not None:
                return self._fitted(vector, *found)
            X = self._densified(X, "its centred XᵀX is too ill-conditioned for the Gram route of route='auto'"
                                if self.route == "auto" else f"route={self.route!r} works on X itself")
        X = np.asarray(X, dtype=np.float64)  # no copy of float64 data
        if self.fit_intercept:
            w = None if root is None else root[:, 0] ** 2
            x_mean, y_mean = np.average(X, axis=0, weights=w), np.average(Y, axis=0, weights=w)
            X, Y = X - x_mean, Y - y_mean  # the one copy of X, as LinearRegression and Ridge make
            if root is not None:
                X *= root
                Y *= root
        else:
            x_mean, y_mean = np.zeros(X.shape[1]), np.zeros(Y.shape[1])
            if root is not None:
                X, Y = X * root, Y * root
        found = self._fit_gram(X, Y, ridge) if self.route == "auto" else None
        if found is None:
            beta, L, P = self._fit_module(X, Y, ridge)
        else:
            beta, L, P = found
        return self._fitted(vector, beta, L, P, x_mean, y_mean)

    def _fitted(self, vector: bool, beta, L, P, x_mean, y_mean):
        intercept = y_mean - x_mean @ beta
        self.coef_ = beta[:, 0] if vector else beta.T
        self.intercept_ = float(intercept[0]) if vector else intercept
        self.query_key_ = L
        self.output_projection_ = P[:, 0] if vector else P
        return self

    def _fit_sparse(self, A, Y, root, ridge):
        """(β, L, P, x̄, ȳ) of a sparse A by the Gram route (:meth:`_fit_gram`) on the centred, weighted design
        :class:`_CentredSparse`, never densified; None where that route declines (the dense routes then)."""
        n = A.shape[0]
        r = np.ones(n) if root is None else root[:, 0]
        if self.fit_intercept:
            w = r * r
            total = float(w.sum())
            if not total > 0:
                return None
            x_mean = np.asarray(A.T @ w, dtype=np.float64).ravel() / total
            y_mean = np.average(Y, axis=0, weights=w)
        else:
            x_mean, y_mean = np.zeros(A.shape[1]), np.zeros(Y.shape[1])
        S = A if root is None else _sparse.diags(r) @ A
        design = _CentredSparse(S, r, x_mean)
        Yc = (Y - y_mean) * r[:, None]
        found = self._fit_gram(design, Yc, ridge, inflation=design.inflation)
        return None if found is None else (*found, x_mean, y_mean)

    @staticmethod
    def _densified(X, why: str):
        """A dense float64 copy of the sparse X (needed because ``why``), refused past :data:`SPARSE_DENSE_BYTES`."""
        size = X.shape[0] * X.shape[1] * 8
        if size > SPARSE_DENSE_BYTES:
            raise ValueError(
                f"X is a sparse {X.shape[0]}×{X.shape[1]} matrix and {why}: its dense copy ({size:,} bytes) would be "
                f"over the {SPARSE_DENSE_BYTES:,} bytes this estimator makes (derive.sklearn.SPARSE_DENSE_BYTES); "
                "pass a dense X, or route='auto' with a ridge")
        return X.toarray().astype(np.float64, copy=False)

    _GRAM_TRUST = 1e-9  # route "auto": the Cholesky factor of XᵀX + λI where its cond eps is at most this
    _GRAM_REFINE = 1e-14  # ... and one refinement step where it is over this (as the module's ridge)
    _RIDGE_REFINED = 1e-2  # with a ridge, up to this: the module's refinement steps (the corrected semi-normal
    # equations, as its coefficients(..., ridge=λ) take them: within the augmented problem's perturbation bound)

    @staticmethod
    def _fit_gram(X, Y, ridge, inflation: float = 1.0):
        """(β, L, P) from one Cholesky factorization XᵀX + λI = CCᵀ (the generated module's printed cholesky route,
        β = C⁻ᵀC⁻¹XᵀY, then, where cond eps is over _GRAM_REFINE, one refinement step
        β += C⁻ᵀC⁻¹(Xᵀ(Y − Xβ) − λβ), which leaves about a backward
        stable solver's error; with a ridge and cond eps over _GRAM_TRUST, up to _RIDGE_REFINED, the module's
        refinement steps, which stop where they settle: issue 30, Ridge's speed on near-collinear data), L = C⁻ᵀ and
        P = LᵀXᵀY; None where the squares leave [2^-500, 2^500], anything is not finite, cond(XᵀX + λI) eps, from
        its eigenvalues, is over _GRAM_TRUST (_RIDGE_REFINED with a ridge), or the steps do not settle: the
        module's routes then.  ``inflation`` multiplies the risk (a sparse X's Gram matrix, centred after it was
        formed: :class:`_CentredSparse`)."""
        module = generated_numpy()
        with np.errstate(over="ignore", invalid="ignore", under="ignore", divide="ignore"):
            G = X.T @ X
            XtY = X.T @ Y
            squares = G.diagonal()
            top = np.abs(XtY).max(axis=0)
            if not (2.0**-500 <= squares.min() and squares.max() <= 2.0**500 and np.isfinite(XtY).all()
                    and top.max() <= 2.0**500 and (top.min() >= 2.0**-500 or not top.any())):
                return None
            if ridge:
                G[np.diag_indices_from(G)] += ridge
            w = np.linalg.eigvalsh(G)
            risk = w[-1] / w[0] * np.finfo(np.float64).eps * inflation if w[0] > 0 else np.inf
            limit = OLSAttentionRegressor._RIDGE_REFINED if ridge else OLSAttentionRegressor._GRAM_TRUST
            if not risk <= limit:
                return None
            try:
                C = np.linalg.cholesky(G)
            except np.linalg.LinAlgError:
                return None
            solve = module.PRINTED["cholesky"]  # β̂ from XᵀX + λI = CCᵀ (cholesky_route)
            beta = solve(C, XtY)
            if risk > OLSAttentionRegressor._GRAM_TRUST:  # a ridge: the module's steps (None where unsettled)
                beta = module._ridge_refine(X, Y, ridge, lambda g: solve(C, g), beta)
                if beta is None:
                    return None
            elif risk > OLSAttentionRegressor._GRAM_REFINE:
                gradient = X.T @ (Y - X @ beta)  # two passes over X: only where the step can change a digit
                if ridge:
                    gradient -= ridge * beta
                beta = beta + solve(C, gradient)
            L = np.linalg.solve(C, np.eye(len(C))).T  # C⁻ᵀ: L Lᵀ = (CCᵀ)⁻¹ = (XᵀX + λI)⁻¹
            P = L.T @ XtY
        if not (np.isfinite(beta).all() and np.isfinite(L).all() and np.isfinite(P).all()):
            return None
        return beta, L, P

    def _fit_module(self, X, Y, ridge):
        """(β, L, P) by the generated module's route: the coefficients, and the attention parameters, which depend on
        the data only through XᵀX and XᵀY: those of the small problem of T = R[:, :p], U = R[:, p:] for R of
        [X Y] = QR (TᵀT = XᵀX and TᵀU = XᵀY exactly, at most p + k rows: one Householder QR instead of the SVD of
        X), for ridge of [√λ I; T] and [0; U] (the least-squares problem [√λ I; X] β = [0; Y])."""
        module = generated_numpy()
        p = X.shape[1]
        R = np.linalg.qr(np.hstack([X, Y]), mode="r")
        T, U = R[:, :p], R[:, p:]
        # (XᵀX + λI)⁻¹XᵀY by the module's ridge=, accurate relative to X's own scale for every λ on every route;
        # "auto" from T β = U (Householder least squares: the same solutions, the minimum-norm one included, since
        # TᵀT = XᵀX and TᵀU = XᵀY), the other routes from the data themselves
        beta = module.coefficients(*((T, U) if self.route == "auto" else (X, Y)), route=self.route, ridge=ridge)
        if ridge:
            T = np.vstack([np.sqrt(ridge) * np.eye(p), T])
            U = np.vstack([np.zeros((p, U.shape[1])), U])
        L, _, _, P = module.attention_parameters(T, U, route=self.route)
        return beta, L, P

    def predict(self, X):
        """Predictions X β + intercept.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The queries.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_targets)
            The predictions.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, accept_sparse=("csr", "csc", "coo"), dtype=[np.float64, np.float32])
        if _sparse.issparse(X):
            return np.asarray(X.astype(np.float64, copy=False) @ self.coef_.T) + self.intercept_
        return np.asarray(X, dtype=np.float64) @ self.coef_.T + self.intercept_
