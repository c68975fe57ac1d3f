"""OLS as single-layer linear attention, mpmath: the fixed numerics.

Validation, factorizations, route choice and the public functions. The matrix products themselves are
not here: each route calls a function printed by ``derive codegen`` from a kernel-checked lemma, looked
up by name in ``PRINTED`` (arguments as in ``PRINTED_PARAMETERS``). The generated module ends with those
functions and registers them; without them (this source imported on its own) a route raises
``LookupError``.

Exact decimal data solved to the working precision: entries may be mpmath numbers, decimal strings,
decimal.Decimal, fractions.Fraction, int or float; every function takes ``dps`` (decimal digits,
default 50) and returns an ``mpmath.matrix``. Shapes: X n×p (a list of rows), Y a list of n values or
n×k rows, X_query m×p rows. Routes as in the NumPy module ("auto" takes "eigh" when cond(X)² is far
below 10^dps, otherwise "qr"); on rank-deficient X the minimum-norm solution (pseudo_inverse). The
default route of every function is "auto".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal
from fractions import Fraction
from numbers import Complex, Integral, Real

import mpmath
from mpmath import mp

__all__ = ["ROUTES", "coefficients", "predict", "attention_parameters"]

ROUTES = ("auto", "eigh", "cholesky", "svd", "qr")

#: Checked theorems these fixed numerics rest on (beyond the printed functions' own), and what for.
RELIES_ON = {
    "pseudo_inverse": "rank-deficient X: the minimum-norm solution, from the factors with dropped values",
}


# --- functions printed from checked lemmas ----------------------------------------------

#: The printed functions this code calls, by name, and the arguments it passes them (in order).
PRINTED_PARAMETERS: dict[str, tuple[str, ...]] = {
    "eigh": ("V", "lam", "XtY"),  # β̂ from XᵀX = VΛVᵀ, Λ as the list lam
    "cholesky": ("C", "XtY"),  # β̂ from XᵀX = CCᵀ
    "svd": ("U", "s", "V", "Y"),  # β̂ from X = USVᵀ, S as the list s
    "qr": ("Q", "R", "Y"),  # β̂ from X = QR
    "P": ("L", "X", "Y"),  # the construction's output projection
}

#: Name -> printed function; the generated module fills it at its end.
PRINTED: dict[str, Callable[..., mpmath.matrix]] = {}


def _printed(name: str) -> Callable[..., mpmath.matrix]:
    """The printed function ``name``; ``LookupError`` when the printed section is missing."""
    try:
        return PRINTED[name]
    except KeyError:
        raise LookupError(f"no printed function {name!r}: this module's printed section is missing (generate "
                          f"the standalone module with `derive codegen`)") from None


# --- validation -------------------------------------------------------------------------


def _working_precision(dps):
    """``mp.workdps(dps)`` for a whole number of decimal digits, at least 1 (0 or fewer would give zeros)."""
    if isinstance(dps, bool) or not isinstance(dps, Integral):
        raise TypeError(f"dps must be a whole number of decimal digits, not {dps!r}")
    if dps < 1:
        raise ValueError(f"dps must be at least 1 decimal digit, not {dps}")
    return mp.workdps(int(dps))


def _masked(value):
    """Whether ``value`` is a NumPy masked array or masked entry (told by its type's module: numpy is not imported)."""
    return type(value).__module__.startswith("numpy.ma")


def _number(name, value):
    if isinstance(value, bool) or type(value).__name__ == "bool" and type(value).__module__ == "numpy":
        raise TypeError(f"{name} holds a bool, not a number")
    if _masked(value):
        raise TypeError(f"{name} holds a masked entry: the mask would be ignored; drop it or fill it")
    if isinstance(value, Complex) and not isinstance(value, Real):  # Python and NumPy complex numbers
        raise TypeError(f"{name} holds {type(value).__name__}, not a number this solves: complex numbers are refused "
                        f"({value!r}), only real ones are solved")
    if isinstance(value, mpmath.mpf):
        result = mp.mpf(value)
    elif isinstance(value, str):
        try:
            result = mp.mpf(value.strip())
        except (ValueError, TypeError):
            raise ValueError(f"{name} holds {value!r}, which is not a decimal number") from None
    elif isinstance(value, Decimal):
        result = mp.mpf(str(value))
    elif isinstance(value, Fraction):
        result = mp.mpf(value.numerator) / value.denominator
    elif isinstance(value, (Integral, float)) or type(value).__module__ == "numpy":
        try:
            result = mp.mpf(int(value)) if isinstance(value, Integral) else mp.mpf(float(value))
        except TypeError:
            raise TypeError(f"{name} holds {type(value).__name__}, not a real number") from None
    else:
        raise TypeError(f"{name} holds {type(value).__name__}, not a number")
    if not mp.isfinite(result):
        raise ValueError(f"{name} contains NaN or infinity")
    return result


def _refuse_text_and_masks(name, value):
    """A string would be read digit by digit, a masked array without its mask: both are refused."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a list of numbers or of rows, not a string ({value!r})")
    if _masked(value):
        raise TypeError(f"{name} is a masked array, whose mask would be ignored: drop the masked rows, or pass "
                        f"{name}.filled(value)")
    dtype = getattr(value, "dtype", None)
    if getattr(dtype, "kind", None) == "c":  # a complex NumPy array, refused as a whole
        raise TypeError(f"{name} must be real, not complex (dtype {dtype})")


def _rows(name, value):
    _refuse_text_and_masks(name, value)
    try:
        rows = list(value)
    except TypeError:
        raise TypeError(f"{name} must be a list of rows") from None
    for row in rows:
        if isinstance(row, (str, bytes)):  # it would be read digit by digit
            raise TypeError(f"{name} must be a list of rows of numbers, not of strings ({row!r})")
    try:
        rows = [list(row) for row in rows]
    except TypeError:
        raise TypeError(f"{name} must be a list of rows") from None
    if not rows or not rows[0]:
        raise ValueError(f"{name} is empty")
    if any(len(row) != len(rows[0]) for row in rows):
        raise ValueError(f"{name} has rows of different lengths")
    return mp.matrix([[_number(name, v) for v in row] for row in rows])


def _validate(X, Y, X_query=None, route="auto"):
    if route not in ROUTES:
        raise ValueError(f"route must be one of {ROUTES}, not {route!r}")
    if isinstance(X, mpmath.matrix):
        X = X.tolist()
    X = _rows("X", X)
    if isinstance(Y, mpmath.matrix):
        Y = Y.tolist()
    _refuse_text_and_masks("Y", Y)
    try:
        items = list(Y)
    except TypeError:
        raise TypeError("Y must be a list of numbers or of rows") from None
    vector_y = bool(items) and not isinstance(items[0], (list, tuple))
    Y = _rows("Y", [[v] for v in items] if vector_y else items)
    if Y.rows != X.rows:
        raise ValueError(f"X has {X.rows} rows but Y has {Y.rows}")
    Q = None
    if X_query is not None:
        if isinstance(X_query, mpmath.matrix):
            X_query = X_query.tolist()
        Q = _rows("X_query", X_query)
        if Q.cols != X.cols:
            raise ValueError(f"X_query has {Q.cols} columns but X has {X.cols}")
    return X, Y, Q


def _matrix_argument(name, value):
    """A matrix argument of a public route function (a user's theorem's) as an ``mpmath.matrix``, read like the
    data of :func:`coefficients`: an mpmath matrix as it is, a list of rows (or a 2-D NumPy array) as rows, a list
    of numbers as a column (a vector: a diagonal held as its entries, or one target)."""
    if isinstance(value, mpmath.matrix):
        return value
    _refuse_text_and_masks(name, value)
    try:
        items = list(value)
    except TypeError:
        raise TypeError(f"{name} must be a list of rows or of numbers, or an mpmath matrix") from None
    if items and (isinstance(items[0], (list, tuple)) or getattr(items[0], "ndim", 0) >= 1):
        return _rows(name, items)
    return _rows(name, [[v] for v in items])


def _ridge_and_weights(X, Y, ridge, weights):
    """X and Y with the rows scaled by √w and the rows √λ I (and 0) appended: their least-squares solution is
    the weighted ridge solution (XᵀWX + λI)⁻¹XᵀWY (weighted_ls_is_attention, ridge_is_linear_attention)."""
    if weights is not None:
        if isinstance(weights, mpmath.matrix):
            weights = [weights[i] for i in range(len(weights))]
        _refuse_text_and_masks("weights", weights)
        try:
            w = [_number("weights", v) for v in weights]
        except TypeError:
            raise TypeError("weights must be a list of numbers, one per row of X") from None
        if len(w) != X.rows:
            raise ValueError(f"weights must hold one number per row of X ({X.rows}), got {len(w)}")
        if any(v <= 0 for v in w):
            raise ValueError(f"weights must be positive: {sum(v <= 0 for v in w)} of them are zero or negative")
        root = [mp.sqrt(v) for v in w]
        X, Y = _scale_rows(root, X), _scale_rows(root, Y)
    if ridge is not None:
        if isinstance(ridge, bool):
            raise TypeError("ridge must be a positive real number, not bool")
        try:
            lam = _number("ridge", ridge)
        except ValueError as exc:
            raise ValueError(f"ridge must be a positive real number ({exc})") from None
        if lam <= 0:
            raise ValueError(f"ridge must be positive, got {mpmath.nstr(lam, 10)} (leave it out, ridge=None, for OLS)")
        root = mp.sqrt(lam)
        p = X.cols
        X = mp.matrix([[X[i, j] for j in range(p)] for i in range(X.rows)]
                      + [[root if i == j else mp.zero for j in range(p)] for i in range(p)])
        Y = mp.matrix([[Y[i, j] for j in range(Y.cols)] for i in range(Y.rows)] + [[mp.zero] * Y.cols] * p)
    return X, Y


# --- factorizations and routes (their products are the printed functions) ---------------


def _scale_rows(d, B):
    return mp.matrix([[d[i] * B[i, j] for j in range(B.cols)] for i in range(B.rows)])


def _scale_columns(A, d):
    return mp.matrix([[A[i, j] * d[j] for j in range(A.cols)] for i in range(A.rows)])


def _vector_power(d, num, den):
    """Entrywise power of a diagonal's entries; dropped (zero-rank) entries stay 0."""
    return [mp.mpf(0) if v == mp.inf else v ** (mp.mpf(num) / den) for v in d]


def _tolerance(largest, shape):
    return largest * max(shape) * mp.eps * 16


def _solve_triangular(T, B, lower, transpose):
    """op(T)⁻¹ B by substitution (op(T) = Tᵀ if transpose)."""
    A = T.T if transpose else T
    p = A.rows
    out = mp.matrix(p, B.cols)
    order = range(p) if lower else range(p - 1, -1, -1)
    for k in range(B.cols):
        for i in order:
            known = range(i) if lower else range(i + 1, p)
            out[i, k] = (B[i, k] - mp.fsum(A[i, j] * out[j, k] for j in known)) / A[i, i]
    return out


def _eigh_factors(X):
    lam, V = mp.eigsy(X.T * X)
    lam = [lam[i] for i in range(lam.rows)]
    tol = _tolerance(max(lam), (X.rows, X.cols))
    return [v if v > tol else mp.inf for v in lam], V


def _route_eigh(X, Y):
    lam, V = _eigh_factors(X)
    XtY = X.T * Y
    return _printed("eigh")(V, lam, XtY)


def _route_cholesky(X, Y):
    try:
        C = mp.cholesky(X.T * X)
    except (ValueError, ZeroDivisionError):
        return _route_eigh(X, Y)  # not numerically positive definite: rank-deficient
    XtY = X.T * Y
    return _printed("cholesky")(C, XtY)


def _svd_factors(X):
    U, S, Vt = mp.svd_r(X, full_matrices=False)
    s = [S[i] for i in range(S.rows)]
    tol = _tolerance(max(s), (X.rows, X.cols))
    return U, [v if v > tol else mp.inf for v in s], Vt.T


def _route_svd(X, Y):
    U, s, V = _svd_factors(X)
    return _printed("svd")(U, s, V, Y)


def _route_qr(X, Y):
    if X.rows < X.cols:
        return _route_svd(X, Y)
    Q, R = mp.qr(X, mode="skinny")
    d = [abs(R[i, i]) for i in range(R.rows)]
    if min(d) <= _tolerance(max(d), (X.rows, X.cols)):
        return _route_svd(X, Y)
    return _printed("qr")(Q, R, Y)


def _route_auto(X, Y):
    lam, _ = _eigh_factors(X)
    finite = [v for v in lam if v != mp.inf]
    if len(finite) < len(lam):
        return _route_svd(X, Y)
    if max(finite) / min(finite) < mp.mpf(10) ** (mp.dps // 2):
        return _route_eigh(X, Y)
    return _route_qr(X, Y)


# --- public functions -------------------------------------------------------------------

_ROUTES = {"auto": _route_auto, "eigh": _route_eigh, "cholesky": _route_cholesky, "svd": _route_svd,
           "qr": _route_qr}


Matrix = Sequence[Sequence[object]] | mpmath.matrix
Vector = Sequence[object] | mpmath.matrix


def coefficients(X: Matrix, Y: Vector | Matrix, *, route: str = "auto", dps: int = 50, ridge: object = None,
                 weights: Vector | None = None) -> mpmath.matrix:
    """OLS coefficients β̂ = (XᵀX)⁻¹XᵀY at ``dps`` decimal digits.

    With ``ridge=λ`` the ridge coefficients (XᵀX + λI)⁻¹XᵀY, with ``weights=w`` those of weighted least squares,
    (XᵀWX)⁻¹XᵀWY; both: the minimiser of Σ w_i ‖y_i − x_i β‖² + λ‖β‖². They are the least-squares solution of
    the rows √w_i x_i with the rows √λ I appended, solved by ``route``.

    Parameters
    ----------
    X : list of n rows of p numbers, or mpmath.matrix
        The design. Entries may be mpmath numbers, decimal strings, ``Decimal``, ``Fraction``, int or float;
        decimal strings are read exactly to the working precision.
    Y : list of n numbers, list of n rows of k numbers, or mpmath.matrix
        The targets.
    route : {"auto", "eigh", "cholesky", "svd", "qr"}, keyword-only
        Which checked identity evaluates β̂ (``"auto"``: "eigh" when cond(X)² is far below 10^dps, else "qr";
        "svd" when X is rank-deficient).
    dps : int, keyword-only
        Decimal digits of the working precision (default 50).
    ridge : number, optional, keyword-only
        λ > 0 (any real number :func:`coefficients` reads as data: a decimal string, ``Fraction``, float, ...).
    weights : list of n numbers, optional, keyword-only
        Positive weights, one per row.

    Returns
    -------
    mpmath.matrix, p × k (k = 1 for a list of numbers)
        β̂; the minimum-norm solution where ``X`` is rank-deficient (pseudo_inverse).

    Raises
    ------
    TypeError
        An entry is not a real number (a bool, a complex number, a masked entry), an argument is not a list of
        rows (a string, which would be read digit by digit; a masked array, whose mask would be ignored), or
        ``dps`` is not a whole number.
    ValueError
        An entry is not a decimal number, NaN or infinite; rows of different lengths; mismatched shapes; an
        empty argument; an unknown route; ``dps`` under 1; a ridge that is not positive, weights that are not
        positive or not one per row.

    Examples
    --------
    >>> beta = coefficients([["1", "0"], ["1", "1"], ["1", "2"]], ["1", "2", "4"], dps=30)
    >>> [mpmath.nstr(v, 10) for v in beta]
    ['0.8333333333', '1.5']
    >>> beta = coefficients([[1, 0], [1, 1], [1, 2]], [1, 2, 4], ridge="0.5", weights=[1, 4, 1], dps=30)
    >>> [mpmath.nstr(v, 10) for v in beta]  # (XᵀWX + λI)⁻¹XᵀWY
    ['0.7532467532', '1.350649351']
    """
    with _working_precision(dps):
        X, Y, _ = _validate(X, Y, None, route)
        X, Y = _ridge_and_weights(X, Y, ridge, weights)
        return _ROUTES[route](X, Y)


def predict(X: Matrix, Y: Vector | Matrix, X_query: Matrix, *, route: str = "auto", dps: int = 50,
            ridge: object = None, weights: Vector | None = None) -> mpmath.matrix:
    """Predictions X_q β̂, evaluated right to left, at ``dps`` decimal digits.

    Parameters
    ----------
    X, Y : as in :func:`coefficients`
        The design and the targets.
    X_query : list of m rows of p numbers, or mpmath.matrix
        The queries.
    route : {"auto", "eigh", "cholesky", "svd", "qr"}, keyword-only
        As in :func:`coefficients`.
    dps : int, keyword-only
        Decimal digits of the working precision (default 50).
    ridge, weights : optional, keyword-only
        As in :func:`coefficients`: ridge or weighted least-squares predictions.

    Returns
    -------
    mpmath.matrix, m × k
        The predictions.

    Raises
    ------
    TypeError, ValueError
        As in :func:`coefficients`, or queries with a number of columns other than X's.

    Examples
    --------
    >>> yhat = predict([["1", "0"], ["1", "1"], ["1", "2"]], ["1", "2", "4"], [["1", "3"]], dps=30)
    >>> mpmath.nstr(yhat[0, 0], 12)
    '5.33333333333'
    """
    with _working_precision(dps):
        X, Y, Q = _validate(X, Y, X_query, route)
        X, Y = _ridge_and_weights(X, Y, ridge, weights)
        return Q * _ROUTES[route](X, Y)


def _factor(X, route):
    """A factor L with L Lᵀ = (XᵀX)⁻¹ on the row space of X (gauge_invariance, pseudo_inverse)."""
    if route in ("auto", "eigh"):
        lam, V = _eigh_factors(X)
        return _scale_columns(V, _vector_power(lam, -1, 2))
    if route == "qr" and X.rows >= X.cols:
        _, R = mp.qr(X, mode="skinny")
        d = [abs(R[i, i]) for i in range(R.rows)]
        if min(d) > _tolerance(max(d), (X.rows, X.cols)):
            return _solve_triangular(R, mp.eye(R.rows), lower=False, transpose=False)
    _, s, V = _svd_factors(X)
    return _scale_columns(V, _vector_power(s, -1, 1))


def _attention_parameters(X, Y, route):
    L = _factor(X, route)
    P = _printed("P")(L, X, Y)
    return L, L.copy(), L.copy(), P


def attention_parameters(X: Matrix, Y: Vector | Matrix, *, route: str = "auto",
                         dps: int = 50) -> tuple[mpmath.matrix, mpmath.matrix, mpmath.matrix, mpmath.matrix]:
    """(W_Q, W_K, W_V, P) with W_Q = W_K = W_V = L, L Lᵀ = (XᵀX)⁻¹, and P = LᵀXᵀY (paper_construction).

    Parameters
    ----------
    X, Y : as in :func:`coefficients`
        The design and the targets.
    route : {"auto", "eigh", "cholesky", "svd", "qr"}, keyword-only
        Which factor L: ``"auto"`` and ``"eigh"`` VΛ^{-1/2}, ``"qr"`` R⁻¹, ``"cholesky"`` and ``"svd"`` VS⁻¹ (the
        same gauge class: gauge_invariance). On a rank-deficient X every route gives the minimum-norm factor
        with L Lᵀ = (XᵀX)⁺ (pseudo_inverse).
    dps : int, keyword-only
        Decimal digits of the working precision (default 50).

    Returns
    -------
    W_Q, W_K, W_V : mpmath.matrix, p × p
        Three copies of L.
    P : mpmath.matrix, p × k
        The output projection.

    Raises
    ------
    TypeError, ValueError
        As in :func:`coefficients`.

    Examples
    --------
    >>> W_Q, W_K, W_V, P = attention_parameters([["1", "0"], ["1", "1"], ["1", "2"]], ["1", "2", "4"], dps=30)
    >>> X = mpmath.matrix([[1, 0], [1, 1], [1, 2]])
    >>> bool(mpmath.mnorm(W_Q * W_K.T - mpmath.inverse(X.T * X), 1) < 1e-12)
    True
    """
    with _working_precision(dps):
        X, Y, _ = _validate(X, Y, None, route)
        return _attention_parameters(X, Y, route)
