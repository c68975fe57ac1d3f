"""A scikit-learn regressor that fits by the generated NumPy module: OLS (or ridge) as linear attention.

:class:`OLSAttentionRegressor` runs the code ``derive codegen --backend numpy`` writes (``ols_attention.py``),
generated from the checked theorems and shipped in the package (:mod:`derive.generated`, pinned byte for byte by a
test that regenerates it): nothing is proved at import or fit time, and a joblib worker pays only the import.
Importing this module imports scikit-learn; nothing else in the package does.
"""

from __future__ import annotations

import math
import numbers
from types import ModuleType

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

__all__ = ["OLSAttentionRegressor", "generated_numpy"]


def generated_numpy() -> ModuleType:
    """The generated NumPy module (``ols_attention.py``) shipped in the package (:mod:`derive.generated`)."""
    from .generated import ols_attention

    return ols_attention


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
        infinite, too large for a float) is a ValueError naming ``ridge``.

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
    """

    def __init__(self, route: str = "auto", fit_intercept: bool = True, ridge: float | None = None):
        self.route = route
        self.fit_intercept = fit_intercept
        self.ridge = ridge

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True  # several target columns are fitted together, as one Y
        return tags

    def _check_params(self):
        if self.route not in ("auto", "exact", "eigh", "cholesky", "svd", "qr"):
            raise ValueError(f"route must be one of 'auto', 'exact', 'eigh', 'cholesky', 'svd', 'qr', not "
                             f"{self.route!r}")
        if self.ridge is None:
            return
        try:  # float() of a huge integer (10**400) raises OverflowError: it is not a finite float either
            value = float(self.ridge) if isinstance(self.ridge, numbers.Real) else math.nan
        except OverflowError:
            value = math.inf
        if isinstance(self.ridge, (bool, np.bool_)) or not (math.isfinite(value) and value >= 0):
            raise ValueError(f"ridge must be None or a finite number >= 0, not {self.ridge!r}")

    def fit(self, X, y, sample_weight=None):
        """Fit the coefficients and the attention parameters.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
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
        X, y = validate_data(self, X, y, y_numeric=True, multi_output=True, dtype=[np.float64, np.float32])
        X = np.asarray(X, dtype=np.float64)  # no copy of float64 data
        y = np.asarray(y, dtype=np.float64)
        vector = y.ndim == 1
        Y = y[:, None] if vector else y
        root = None
        if sample_weight is not None:
            weights = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
            root = np.sqrt(weights)[:, None]
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
        ridge = float(self.ridge) if self.ridge else None
        found = self._fit_gram(X, Y, ridge) if self.route == "auto" else None
        if found is None:
            beta, L, P = self._fit_module(X, Y, ridge)
        else:
            beta, L, P = found
        intercept = y_mean - x_mean @ beta
        self.coef_ = beta[:, 0] if vector else beta.T
        self.intercept_ = float(intercept[0]) if vector else intercept
        self.query_key_ = L
        self.output_projection_ = P[:, 0] if vector else P
        return self

    _GRAM_TRUST = 1e-9  # route "auto": the Cholesky factor of XᵀX + λI where its cond eps is at most this
    _GRAM_REFINE = 1e-14  # ... and one refinement step where it is over this (as the module's ridge)
    _RIDGE_REFINED = 1e-2  # with a ridge, up to this: the module's refinement steps (the corrected semi-normal
    # equations, as its coefficients(..., ridge=λ) take them: within the augmented problem's perturbation bound)

    @staticmethod
    def _fit_gram(X, Y, ridge):
        """(β, L, P) from one Cholesky factorization XᵀX + λI = CCᵀ (the generated module's printed cholesky route,
        β = C⁻ᵀC⁻¹XᵀY, then, where cond eps is over _GRAM_REFINE, one refinement step
        β += C⁻ᵀC⁻¹(Xᵀ(Y − Xβ) − λβ), which leaves about a backward
        stable solver's error; with a ridge and cond eps over _GRAM_TRUST, up to _RIDGE_REFINED, the module's
        refinement steps, which stop where they settle: issue 30, Ridge's speed on near-collinear data), L = C⁻ᵀ and
        P = LᵀXᵀY; None where the squares leave [2^-500, 2^500], anything is not finite, cond(XᵀX + λI) eps, from
        its eigenvalues, is over _GRAM_TRUST (_RIDGE_REFINED with a ridge), or the steps do not settle: the
        module's routes then."""
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
            risk = w[-1] / w[0] * np.finfo(np.float64).eps if w[0] > 0 else np.inf
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
        X : array-like of shape (n_samples, n_features)
            The queries.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_targets)
            The predictions.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        return np.asarray(X, dtype=np.float64) @ self.coef_.T + self.intercept_
