"""OLS as single-layer linear attention, Dask (tall data chunked by rows): the fixed numerics.

X (n, p) and Y (n,) or (n, k) are Dask arrays chunked by rows (NumPy arrays are wrapped); n may be far larger
than memory, p and k are small. The big products are tree reductions over the row chunks, the small p×p solve
runs in NumPy on the machine that calls, like the NumPy module's: nothing n×n, nor n×p on one machine, is formed.
Like the NumPy module, the solves themselves are not here: each route calls a function printed by ``derive
codegen`` from a kernel-checked lemma, looked up by name in ``PRINTED`` (arguments as in ``PRINTED_PARAMETERS``).

Routes:
    "auto"      "cholesky" where the condition estimate allows it (κ² eps < 1e-2, κ the condition number of the
                column-scaled X from the eigenvalues of its p×p Gram matrix), else "tsqr".
    "cholesky"  XᵀX and XᵀY in one pass over the data (per-chunk products summed by a tree reduction), the
                columns scaled by powers of two (exactly, in the p×p matrices), CCᵀ = the scaled XᵀX and
                β̂ = C⁻ᵀC⁻¹XᵀY (gauge_invariance, lemma cholesky_route); where κ² eps > 1e-13, preconditioned
                gradient steps β ← β + C⁻ᵀC⁻¹Xᵀ(Y − Xβ) (preconditioned_gd), each one more pass over the data,
                until the correction is under eps of β (at most 4). Raises ValueError where XᵀX is not positive
                definite (rank-deficient X). Where a squared column norm leaves [2^-500, 2^500] the columns of X
                and Y are scaled by powers of two first (one more pass), so nothing underflows or overflows.
    "tsqr"      X = QR by dask.array.linalg.tsqr (a tree of small QR factorizations) on the column-scaled data
                and β̂ = R⁻¹QᵀY (gauge_invariance, lemma qr_route): backward stable, for ill-conditioned X. A
                rank-deficient X (R's singular values under max(n, p) eps of the largest) gets the minimum-norm
                solution from the SVD of R (pseudo_inverse), as the NumPy module gives: that of X scaled by one
                power of two, with a RankDeficientWarning naming the numerical rank and the condition estimate.
Results are NumPy arrays (β̂ is p×k); :func:`predict` returns a Dask array for Dask queries. The computation
runs on whatever scheduler is active: the default threads, or a ``dask.distributed`` client.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import dask
import dask.array as da
import numpy as np

__all__ = ["ROUTES", "RankDeficientWarning", "coefficients", "predict"]

ROUTES = ("auto", "cholesky", "tsqr")
_EPS = np.finfo(np.float64).eps

#: Checked theorems these fixed numerics rest on (beyond the printed functions' own), and what for.
RELIES_ON = {
    "preconditioned_gd": "refinement of the Cholesky route by preconditioned gradient steps",
    "pseudo_inverse": "rank-deficient X: the minimum-norm solution, from the SVD of tsqr's R with dropped values",
}


# --- functions printed from checked lemmas ----------------------------------------------

#: The printed functions this code calls, by name, and the arguments it passes them (in order).
PRINTED_PARAMETERS: dict[str, tuple[str, ...]] = {
    "cholesky": ("C", "XtY"),  # β̂ from XᵀX = CCᵀ
    "qr": ("Q", "R", "Y"),  # β̂ from X = QR
}

#: Name -> printed function; the generated module fills it at its end.
PRINTED: dict[str, Callable[..., np.ndarray]] = {}


def _printed(name: str) -> Callable[..., np.ndarray]:
    """The printed function ``name``; ``LookupError`` when the printed section is missing."""
    try:
        return PRINTED[name]
    except KeyError:
        raise LookupError(f"no printed function {name!r}: this module's printed section is missing (generate "
                          f"the standalone module with `derive codegen --backend dask`)") from None


def _solve_triangular(T, B, lower, transpose):
    """T⁻¹B (Tᵀ⁻¹B with ``transpose``) for a small triangular T; Dask operands are computed first (together)."""
    if isinstance(T, da.Array) or isinstance(B, da.Array):
        T, B = dask.compute(T, B)
    T = np.swapaxes(T, -1, -2) if transpose else T
    return np.linalg.solve(T, B)  # p×p: an LU solve of the triangular matrix (backward stable)


# --- validation -----------------------------------------------------------------------


def _plus_identity(A, c):
    """A + cI for a small square matrix (a printed sum with a multiple of I)."""
    A = np.asarray(A, dtype=float)
    return A + np.asarray(c, dtype=A.dtype)[..., None, None] * np.eye(A.shape[-1], dtype=A.dtype)


def _dask(name, value, ndim):
    array = value if isinstance(value, da.Array) else da.asarray(np.asarray(value))
    if array.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, not values of dtype {array.dtype}")
    if array.ndim not in ndim:
        raise ValueError(f"{name} must have {' or '.join(map(str, ndim))} dimension(s), got shape {array.shape}")
    if any(d == 0 for d in array.shape):
        raise ValueError(f"{name} is empty (shape {array.shape})")
    return array.astype(np.float64)


def _validate(X, Y, route):
    """(X as (n, p), Y as (n, k), vector_y): float64 Dask arrays, X in one column chunk, Y chunked like X."""
    if route not in ROUTES:
        raise ValueError(f"route must be one of {ROUTES}, not {route!r}")
    X, Y = _dask("X", X, (2,)), _dask("Y", Y, (1, 2))
    vector_y = Y.ndim == 1
    Y = Y[:, None] if vector_y else Y
    if Y.shape[0] != X.shape[0]:
        raise ValueError(f"Y must have shape ({X.shape[0]},) or ({X.shape[0]}, k) to match X of shape {X.shape}, "
                         f"got {Y.shape}")
    if X.shape[0] < X.shape[1]:
        raise ValueError(f"X of shape {X.shape} has fewer rows than columns: it cannot have full column rank")
    X = X.rechunk({1: -1})
    Y = Y.rechunk((X.chunks[0], -1))
    return X, Y, vector_y


# --- routes ---------------------------------------------------------------------------

_SAFE_LOW, _SAFE_HIGH = 2.0**-500, 2.0**500  # squared column norms outside: the data are scaled first
_SUBNORMAL_RISK = 2.0**-960  # a column of tsqr's R (or of QᵀY) all under this, zero excluded: scaled first


def _exponents(top):
    """k per column with max |column| = m 2^k, m in [0.5, 1) (0 for a column of zeros): exact."""
    return np.frexp(top)[1]


def _column_maxima(X, Y):
    """max |X| and max |Y| per column (one pass); ValueError naming NaN or infinity in X or Y."""
    top_x, top_y = dask.compute(abs(X).max(axis=0), abs(Y).max(axis=0))
    for name, top in (("X", top_x), ("Y", top_y)):
        if not np.isfinite(top).all():
            raise ValueError(f"{name} contains NaN or infinity")
    return top_x, top_y


def _unscale(beta_s, shift):
    """β_s 2^shift, exact where it is a normal float; ValueError where it leaves float64."""
    with np.errstate(over="ignore"):
        beta = np.ldexp(beta_s, shift)
    if not np.isfinite(beta).all():
        raise ValueError("the least-squares solution does not fit in float64 (overflow); rescale X or Y")
    return beta


def _products(X, Y):
    """(XᵀX, XᵀY, kx, ky, top_x) from one pass over the data (per-chunk products summed by a tree reduction).
    Only where a product is not finite or a squared column norm leaves [2^-500, 2^500] (zero included) are the
    column maxima read (one more pass: NaN or infinity named, zero columns found), and where the squares leave
    that range the columns of X and Y are scaled by powers of two (exactly: X 2^-kx, Y 2^-ky) and the products
    formed again from the scaled data, so that none underflows to a few bits (a column of size 1e-160 lost about
    10 digits in XᵀX) or overflows (1e160). Else kx = ky = 0 and top_x is None (no zero column)."""
    p, k = X.shape[1], Y.shape[1]
    with np.errstate(over="ignore", invalid="ignore"):
        G, XtY = dask.compute(X.T @ X, X.T @ Y)
    squares = np.diag(G)
    if (np.isfinite(G).all() and np.isfinite(XtY).all() and squares.min() >= _SAFE_LOW
            and squares.max() <= _SAFE_HIGH):
        return G, XtY, np.zeros(p, dtype=int), np.zeros(k, dtype=int), None
    top_x, top_y = _column_maxima(X, Y)
    kx, ky = _exponents(top_x), _exponents(top_y)
    Xs, Ys = X * np.ldexp(1.0, -kx), Y * np.ldexp(1.0, -ky)
    G, XtY = dask.compute(Xs.T @ Xs, Xs.T @ Ys)
    return G, XtY, kx, ky, top_x


def _scales(G):
    """d = 2^-k per column: the scaled Gram matrix d G d has a diagonal in [1/4, 1) (exact scaling)."""
    diagonal = np.diag(G)
    if (diagonal <= 0).any():
        raise ValueError("X has a column of zeros: it is rank-deficient")
    return np.ldexp(1.0, -np.frexp(np.sqrt(diagonal))[1])


def _factor(G_s, size):
    """(C, κ² eps) of the scaled Gram matrix; C is None where it is not positive definite or numerically singular
    (its smallest eigenvalue at most ``size`` eps of its largest: a factor may then succeed on a rank-deficient X,
    depending on the rounding of the sums, and give a large, wrong β)."""
    lam = np.linalg.eigvalsh(G_s)
    if lam[0] <= lam[-1] * size * _EPS:
        return None, np.inf
    risk = lam[-1] / lam[0] * _EPS
    try:
        return np.linalg.cholesky(G_s), risk
    except np.linalg.LinAlgError:
        return None, np.inf


def _route_cholesky(X, Y, G, XtY, C, d, risk, steps=4):
    XtY = d[:, None] * XtY
    beta = _printed("cholesky")(C, XtY)
    if risk <= 1e-13:
        return d[:, None] * beta
    for _ in range(steps):  # preconditioned gradient steps, one pass over the data each
        XtY = d[:, None] * (X.T @ (Y - X @ (d[:, None] * beta))).compute()
        delta = _printed("cholesky")(C, XtY)
        beta = beta + delta
        if np.abs(delta).max() <= _EPS * np.abs(beta).max():
            break
    return d[:, None] * beta


class RankDeficientWarning(UserWarning, RuntimeWarning):
    """X is numerically rank-deficient: the answer is the minimum-norm least-squares solution (as numpy.linalg.lstsq
    and the NumPy module's "auto" give); the message names the numerical rank and the condition estimate."""


def _route_tsqr(X, Y):
    """β̂ = R⁻¹QᵀY from X = QR by tsqr (R and QᵀY in one pass). QR commutes with scaling columns by powers of two
    (the R of X D is R D), so the rank is judged on R with its columns scaled to norms in [0.5, 1), as the NumPy
    module judges the column-scaled X. Where R or QᵀY is not finite the data are checked for NaN and infinity
    and, where it was an overflow, the columns of X and Y are scaled by powers of two first (β = 2^-kx β_s 2^ky).
    Where X is rank-deficient (a singular value under max(n, p) eps of the largest: the numpy.linalg.lstsq and
    NumPy module tolerance) the minimum-norm solution from the SVD of the R of X scaled by one power of two
    (pseudo_inverse), as the NumPy module gives: the least-squares solutions of X are those of Rβ = QᵀY, and the
    minimum-norm one is not invariant under scaling columns apart."""
    n, p = X.shape
    kx, ky = np.zeros(p, dtype=int), np.zeros(Y.shape[1], dtype=int)
    with np.errstate(over="ignore", invalid="ignore"):
        Q, R = da.linalg.tsqr(X)
        R, QtY = dask.compute(R, Q.T @ Y)
    tops = np.concatenate([np.abs(R).max(axis=0), np.abs(QtY).max(axis=0)])
    if not (np.isfinite(tops).all() and ((tops == 0) | (tops >= _SUBNORMAL_RISK)).all()):
        # NaN or infinity named; else an overflow, or columns near the subnormal range: scale the columns
        top_x, top_y = _column_maxima(X, Y)
        kx, ky = _exponents(top_x), _exponents(top_y)
        Xs, Ys = X * np.ldexp(1.0, -kx), Y * np.ldexp(1.0, -ky)
        Q, R = da.linalg.tsqr(Xs)
        R, QtY = dask.compute(R, Q.T @ Ys)
    ex = np.frexp(np.abs(R).max(axis=0))[1]  # column j of R is at most 2^ex_j (0 for a zero column)
    s = np.linalg.svd(R * np.ldexp(1.0, -ex), compute_uv=False)  # the column-scaled X's: its rank
    if s[-1] > s[0] * max(n, p) * _EPS:  # full rank: the printed R⁻¹QᵀY, QᵀY computed beside R (Q here is I)
        Q, Y = np.eye(p), QtY
        return _unscale(_printed("qr")(Q, R, Y), ky[None, :] - kx[:, None])
    c = int((kx + ex).max())
    R_u = R * np.ldexp(1.0, kx - c)[None, :]  # the R of X 2^-c (exact but for underflow far under the tolerance)
    U, s, Vt = np.linalg.svd(R_u)
    kept = s > s[0] * max(n, p) * _EPS
    warnings.warn(f"X is rank-deficient: numerical rank {int(kept.sum())} of {p} columns, condition estimate "
                  f"{(s[0] / s[-1] if s[-1] > 0 else np.inf):.1e} (singular values under max(n, p) eps of the largest "
                  f"dropped): the minimum-norm least-squares solution is returned", RankDeficientWarning, stacklevel=4)
    beta_u = Vt[kept].T @ ((U[:, kept].T @ QtY) / s[kept][:, None])
    return _unscale(beta_u, np.broadcast_to(ky[None, :] - c, beta_u.shape))


def _beta(X, Y, route):
    if route == "tsqr":
        return _route_tsqr(X, Y)
    G, XtY, kx, ky, top_x = _products(X, Y)
    if top_x is not None and (top_x == 0).any():
        if route == "cholesky":
            raise ValueError("X has a column of zeros: it is rank-deficient (route='tsqr' or 'auto' give the "
                             "minimum-norm solution)")
        return _route_tsqr(X, Y)
    d = _scales(G)
    C, risk = _factor(d[:, None] * G * d[None, :], max(X.shape))
    if route == "auto" and (C is None or risk >= 1e-2):
        return _route_tsqr(X, Y)
    if C is None:
        raise ValueError("XᵀX is not positive definite once the columns of X are scaled: X is rank-deficient or "
                         "too ill-conditioned for the Cholesky route; use route='tsqr' (the minimum-norm solution "
                         "where X is rank-deficient)")
    if kx.any() or ky.any():
        X, Y = X * np.ldexp(1.0, -kx), Y * np.ldexp(1.0, -ky)
    return _unscale(_route_cholesky(X, Y, G, XtY, C, d, risk), ky[None, :] - kx[:, None])


# --- public functions --------------------------------------------------------------------


def coefficients(X, Y, *, route: str = "auto") -> np.ndarray:
    """OLS coefficients β̂ = (XᵀX)⁻¹XᵀY of tall data chunked by rows.

    Parameters
    ----------
    X : dask.array.Array or array_like, shape (n, p)
        The design, one example per row, chunked by rows (a chunk has all p columns; it is rechunked otherwise).
    Y : dask.array.Array or array_like, shape (n,) or (n, k)
        The targets; rechunked to X's row chunks.
    route : {"auto", "cholesky", "tsqr"}, keyword-only
        ``"cholesky"``: one pass for XᵀX and XᵀY, refined by further passes where the condition needs it;
        ``"tsqr"``: Dask's tall-and-skinny QR, backward stable; ``"auto"`` picks from the condition estimate.

    Returns
    -------
    numpy.ndarray, shape (p,) or (p, k)
        β̂, float64.

    Raises
    ------
    TypeError
        An argument does not hold real numbers.
    ValueError
        A bad shape, an empty array, fewer rows than columns, an unknown route, NaN or infinity in the data, a
        solution outside float64, or a rank-deficient X on route "cholesky" ("auto" and "tsqr" give the
        minimum-norm solution there).

    Examples
    --------
    >>> import dask.array as da, numpy as np
    >>> X = da.from_array(np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]]), chunks=(2, 2))
    >>> bool(np.allclose(coefficients(X, da.from_array(np.array([1.0, 2.0, 4.0]), chunks=2)), [5 / 6, 1.5]))
    True
    """
    X, Y, vector_y = _validate(X, Y, route)
    beta = _beta(X, Y, route)
    return beta[:, 0] if vector_y else beta


def predict(X, Y, X_query, *, route: str = "auto"):
    """Predictions X_q β̂ (β̂ as in :func:`coefficients`).

    Parameters
    ----------
    X : dask.array.Array or array_like, shape (n, p)
        The design (the keys).
    Y : dask.array.Array or array_like, shape (n,) or (n, k)
        The targets (the values).
    X_query : dask.array.Array or array_like, shape (m, p) or (p,)
        The queries.
    route : {"auto", "cholesky", "tsqr"}, keyword-only
        As in :func:`coefficients`.

    Returns
    -------
    dask.array.Array or numpy.ndarray, shape (m[, k]) or ([k]) for a single query
        The predictions: a Dask array for Dask queries, else a NumPy array.

    Raises
    ------
    TypeError
        As in :func:`coefficients`.
    ValueError
        As in :func:`coefficients`, or queries whose shape does not match ``X``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    >>> round(float(predict(X, [1.0, 2.0, 4.0], [1.0, 3.0])), 12)  # 5/6 + 3 · 3/2
    5.333333333333
    """
    beta = coefficients(X, Y, route=route)
    lazy = isinstance(X_query, da.Array)
    Q = X_query if lazy else np.asarray(X_query)
    if Q.dtype.kind not in "biuf":
        raise TypeError(f"X_query must hold real numbers, not values of dtype {Q.dtype}")
    if Q.ndim not in (1, 2) or Q.shape[-1] != beta.shape[0]:
        raise ValueError(f"X_query must have shape (m, {beta.shape[0]}) or ({beta.shape[0]},), got {Q.shape}")
    return Q.astype(np.float64) @ beta
