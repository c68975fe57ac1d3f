"""OLS as single-layer linear attention, NumPy: the fixed numerics.

Validation, factorizations, condition estimates, refinement, route choice and the public functions.
The matrix products themselves are not here: each route calls a function printed by ``derive codegen``
from a kernel-checked lemma, looked up by name in ``PRINTED`` (arguments as in ``PRINTED_PARAMETERS``).
The generated module ends with those functions and registers them; without them (this source imported
on its own) a route raises ``LookupError``.

Shapes (leading batch dimensions "..." are allowed, must agree exactly, and never broadcast):
    X        (..., n, p)          design, one example per row, n >= 1, p >= 1
    Y        (..., n) or (..., n, k)  targets; a vector Y gives vector results
    X_query  (..., m, p) or (..., p)  queries; a single query gives a single prediction

Routes (each evaluates a kernel-checked identity):
    "eigh"  X_q L Lᵀ XᵀY with L = VΛ^{-1/2}, XᵀX = VΛVᵀ (ols_is_linear_attention, lemma gram_route)
    "svd"   X_q V S⁻¹ UᵀY with X = USVᵀ (gauge_invariance, lemma svd_route)
    "qr"    X_q R⁻¹ QᵀY with X = QR (gauge_invariance, lemma qr_route)
    "cholesky"  X_q C⁻ᵀ C⁻¹ XᵀY with XᵀX = CCᵀ (gauge_invariance, lemma cholesky_route)
    "auto"  columns scaled by powers of two (exact). A single small problem (<= 400,000 products): "qr" with
            Björck's refinement of the augmented system, every sum exactly rounded, which converges to
            the least-squares solution of the data as given. Large problems and batches: the Gram
            matrices, with a cheap condition estimate per problem from the pivots of their Cholesky
            factors; each problem with cond(X)² eps < 1e-6 takes the "cholesky" route (refined by
            preconditioned gradient steps, preconditioned_gd, in extended precision when
            cond(X)² eps > 1e-13), each other one "qr" with Björck's refinement, or "svd" when it is
            rank-deficient. One hard problem never sends a whole batch down the slow route.
On rank-deficient X every route returns the minimum-norm solution (pseudo_inverse): eigenvalues
and singular values under the rank tolerance are dropped, as numpy.linalg.pinv does.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

__all__ = ["ROUTES", "coefficients", "predict", "attention_parameters", "attention_scores"]

ROUTES = ("auto", "eigh", "cholesky", "svd", "qr")
_EPS = np.finfo(np.float64).eps
_WIDE = np.longdouble  # residuals of the refinement are accumulated in extended precision

#: Checked theorems these fixed numerics rest on (beyond the printed functions' own), and what for.
RELIES_ON = {
    "pseudo_inverse": "rank-deficient X: the minimum-norm solution, from the factors with dropped values",
    "preconditioned_gd": "refinement of the Gram route by preconditioned gradient steps",
}


# --- functions printed from checked lemmas ----------------------------------------------

#: The printed functions this code calls, by name, and the arguments it passes them (in order).
PRINTED_PARAMETERS: dict[str, tuple[str, ...]] = {
    "eigh": ("V", "lam", "XtY"),  # β̂ from XᵀX = VΛVᵀ, Λ as the vector lam
    "cholesky": ("C", "XtY"),  # β̂ from XᵀX = CCᵀ
    "svd": ("U", "s", "V", "Y"),  # β̂ from X = USVᵀ, S as the vector s
    "qr": ("Q", "R", "Y"),  # β̂ from X = QR
    "P": ("L", "X", "Y"),  # the construction's output projection
    "scores": ("X_query", "L", "X"),  # the attention score matrix
}

#: Name -> printed function; the generated module fills it at its end.
PRINTED: dict[str, Callable[..., np.ndarray]] = {}


def _printed(name: str) -> Callable[..., np.ndarray]:
    """The printed function ``name``; ``LookupError`` when the printed section is missing."""
    try:
        return PRINTED[name]
    except KeyError:
        raise LookupError(f"no printed function {name!r}: this module's printed section is missing (generate "
                          f"the standalone module with `derive codegen`)") from None


# --- validation -----------------------------------------------------------------------


def _array(name, value, min_ndim):
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a numeric array, not {type(value).__name__}")
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a numeric array ({exc})") from None
    if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
        raise TypeError(f"{name} must hold real numbers, not values of dtype {array.dtype}")
    if np.iscomplexobj(array):
        raise TypeError(f"{name} must be real, not complex")
    if array.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimension(s), got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"{name} is empty (shape {array.shape})")
    return array.astype(np.float64, copy=False)  # finiteness is checked where the route first reads the data


def _validate(X, Y, X_query=None, route="auto"):
    if route not in ROUTES:
        raise ValueError(f"route must be one of {ROUTES}, not {route!r}")
    X = _array("X", X, 2)
    Y = _array("Y", Y, 1)
    batch, (n, p) = X.shape[:-2], X.shape[-2:]
    vector_y = Y.ndim == X.ndim - 1
    Y2 = Y[..., None] if vector_y else Y
    if Y2.ndim != X.ndim or Y2.shape[:-2] != batch or Y2.shape[-2] != n:
        raise ValueError(f"Y must have shape {batch + (n,)} or {batch + (n, 'k')} to match X of shape "
                         f"{X.shape}, got {Y.shape}")
    Q = None
    vector_q = False
    if X_query is not None:
        Q = _array("X_query", X_query, 1)
        vector_q = Q.ndim == X.ndim - 1
        Q = Q[..., None, :] if vector_q else Q
        if Q.ndim != X.ndim or Q.shape[:-2] != batch or Q.shape[-1] != p:
            raise ValueError(f"X_query must have shape {batch + ('m', p)} or {batch + (p,)} to match X of "
                             f"shape {X.shape}, got {np.shape(X_query)}")
        _require_finite(("X_query", Q))
    return X, Y2, Q, vector_y, vector_q


# --- routes (their products are the printed functions) ----------------------------------


def _require_finite(*named):
    for name, array in named:
        if not np.isfinite(array).all():
            raise ValueError(f"{name} contains NaN or infinity")


_GRAM_LIMIT = np.finfo(np.float64).max / 4  # diagonal entries under this: no sum in XᵀX can overflow


def _gram(X, Y):
    """G = XᵀX and the fast memory XᵀY. X is read once: a NaN or infinity in X always reaches the diagonal of G."""
    _require_finite(("Y", Y))
    G = np.swapaxes(X, -1, -2) @ X
    XtY = np.swapaxes(np.swapaxes(Y, -1, -2) @ X, -1, -2)  # (YᵀX)ᵀ: one small product per problem, not two
    if not (np.all(np.diagonal(G, axis1=-2, axis2=-1) <= _GRAM_LIMIT) and np.isfinite(XtY).all()):
        _require_finite(("X", X))
        raise ValueError("X or Y is too large: XᵀX or XᵀY overflows float64")
    return G, XtY


def _solve_triangular(T, B, lower, transpose):
    """op(T)⁻¹ B by substitution, vectorised over the batch (op(T) = Tᵀ if transpose)."""
    A = np.swapaxes(T, -1, -2) if transpose else T
    p = A.shape[-1]
    out = np.empty(np.broadcast_shapes(A.shape[:-2], B.shape[:-2]) + B.shape[-2:])
    order = range(p) if lower else range(p - 1, -1, -1)
    for i in order:
        done = slice(0, i) if lower else slice(i + 1, p)
        acc = B[..., i, :] - np.einsum("...j,...jk->...k", A[..., i, done], out[..., done, :])
        out[..., i, :] = acc / A[..., i, i][..., None]
    return out


def _eigh_factors(G, size):
    """G = VΛVᵀ; eigenvalues under the rank tolerance become +inf, so Λ^{-1/2} is 0 there (pseudo_inverse)."""
    lam, V = np.linalg.eigh(G)
    tol = lam[..., -1:] * size * _EPS
    return np.where(lam > tol, lam, np.inf), V


def _scaled_gram(G, XtY, size):
    """G and XᵀY of X D⁻¹, D the column norms rounded to powers of two (exact), when X has full rank.

    Scaling changes nothing in exact arithmetic but much in floating point on badly scaled data; the
    minimum-norm solution of a rank-deficient X is not scale-invariant, so then D = I.
    """
    d = _power_of_two(np.sqrt(np.diagonal(G, axis1=-2, axis2=-1)))
    Gs = G / d[..., :, None] / d[..., None, :]
    if np.isfinite(_eigh_factors(Gs, size)[0]).all():
        return Gs, XtY / d[..., :, None], d
    return G, XtY, np.ones_like(d)


def _eigh_solve(G, XtY, size):
    G, XtY, d = _scaled_gram(G, XtY, size)
    lam, V = _eigh_factors(G, size)
    beta = _printed("eigh")(V, lam, XtY)
    return beta / d[..., :, None]


def _route_eigh(X, Y):
    return _eigh_solve(*_gram(X, Y), max(X.shape[-2:]))


def _cholesky_solve(C, XtY):
    return _printed("cholesky")(C, XtY)


def _route_cholesky(X, Y):
    G, XtY = _gram(X, Y)
    try:
        C = np.linalg.cholesky(G)
    except np.linalg.LinAlgError:
        C = None
    if C is None or _rank_deficient(C, max(X.shape[-2:])):
        return _eigh_solve(G, XtY, max(X.shape[-2:]))  # the minimum-norm solution (pseudo_inverse)
    return _cholesky_solve(C, XtY)


def _rank_deficient(C, size):
    """A Cholesky pivot under the rank tolerance of the Gram matrix."""
    pivots = np.diagonal(C, axis1=-2, axis2=-1) ** 2
    return bool((pivots <= pivots.max(axis=-1, keepdims=True) * size * _EPS).any())


def _svd_factors(X):
    """X = USVᵀ; singular values under the rank tolerance become +inf, so S⁻¹ is 0 there."""
    U, s, Vt = np.linalg.svd(X, full_matrices=False)
    tol = s[..., :1] * max(X.shape[-2:]) * _EPS
    return U, np.where(s > tol, s, np.inf), np.swapaxes(Vt, -1, -2)


def _route_svd(X, Y):
    _require_finite(("X", X), ("Y", Y))
    U, s, V = _svd_factors(X)
    return _printed("svd")(U, s, V, Y)


def _qr_each(X):
    """X = QR for every problem of a stack, and which of them are rank-deficient (R numerically singular, or
    fewer rows than columns): for those the SVD gives the minimum-norm solution."""
    Q, R = np.linalg.qr(X)
    d = np.abs(np.diagonal(R, axis1=-2, axis2=-1))
    deficient = (d <= d.max(axis=-1, keepdims=True) * max(X.shape[-2:]) * _EPS).any(axis=-1)
    return Q, R, deficient | (X.shape[-2] < X.shape[-1])


def _qr_factors(X):
    """X = QR, or None when any problem is rank-deficient."""
    Q, R, deficient = _qr_each(X)
    return None if deficient.any() else (Q, R)


def _route_qr(X, Y):
    _require_finite(("X", X), ("Y", Y))
    factors = _qr_factors(X)
    if factors is None:
        return _route_svd(X, Y)
    Q, R = factors
    return _printed("qr")(Q, R, Y)


# --- auto: condition estimate, exact scaling, refinement ---------------------------------

_SPLIT = 134217729.0  # 2**27 + 1: Dekker's splitter
_EXACT_LIMIT = 400_000  # up to this many products, refinement sums are exactly rounded (math.fsum)


def _two_prod(a, b):
    """Elementwise a*b = p + e exactly (Dekker's product)."""
    p = a * b
    c = _SPLIT * a
    ah = c - (c - a)
    al = a - ah
    c = _SPLIT * b
    bh = c - (c - b)
    bl = b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _row_sums(*parts):
    """Exactly rounded sums along the last axis of the concatenated parts."""
    terms = np.concatenate(parts, axis=-1)
    return np.fromiter((math.fsum(row) for row in terms), np.float64, len(terms))


def _minus_products(X, B, C, exact, D=None):
    """C − X B (− D) with every sum exactly rounded (exact; X 2-D) or in extended precision (stacks too)."""
    if not exact:
        out = C.astype(_WIDE) - X.astype(_WIDE) @ B.astype(_WIDE)
        return (out if D is None else out - D.astype(_WIDE)).astype(np.float64)
    out = np.empty(C.shape)
    for j in range(C.shape[-1]):
        p, e = _two_prod(X, B[:, j][None, :])
        rest = () if D is None else (-D[:, j : j + 1],)
        out[:, j] = _row_sums(C[:, j : j + 1], -p, -e, *rest)
    return out


def _refine_gram(X, Y, beta, C, steps=6):
    """Preconditioned gradient steps β ← β + (CCᵀ)⁻¹ Xᵀ(Y − Xβ) (preconditioned_gd, Γ ≈ (XᵀX)⁻¹), residuals in
    extended precision; X may hold a batch."""
    Xt = np.swapaxes(X, -1, -2)
    for _ in range(steps):
        residual = _minus_products(X, beta, Y, False)
        gradient = -_minus_products(Xt, residual, np.zeros(beta.shape), False)
        delta = _cholesky_solve(C, gradient)
        beta = beta + delta
        if np.all(np.abs(delta) <= _EPS * np.abs(beta)):
            break
    return beta


def _solve_qr_refined(X, Y, Q, R, exact, steps=10):
    """QR solve, then Björck's refinement of [I X; Xᵀ 0][r; β] = [Y; 0] with accurate residuals: the fixed point
    is the least-squares solution of the data exactly as given. X may be a stack unless exact."""
    Qt, Xt = np.swapaxes(Q, -1, -2), np.swapaxes(X, -1, -2)
    beta = _solve_triangular(R, Qt @ Y, lower=False, transpose=False)
    r = _minus_products(X, beta, Y, exact)
    for _ in range(steps):
        f = _minus_products(X, beta, Y, exact, r)  # Y − Xβ − r
        g = _minus_products(Xt, r, np.zeros(beta.shape), exact)  # −Xᵀr
        a = _solve_triangular(R, g, lower=True, transpose=True)
        c = Qt @ f - a
        delta = _solve_triangular(R, c, lower=False, transpose=False)
        beta = beta + delta
        r = r + (f - Q @ c)
        if np.all(np.abs(delta) <= _EPS * np.abs(beta)):
            break
    return beta


def _power_of_two(norms):
    return np.where(norms > 0, np.exp2(np.round(np.log2(np.where(norms > 0, norms, 1.0)))), 1.0)


def _qr_or_svd(X, Y):
    """A stack of problems the Gram route cannot take: exactly scaled QR with refinement, or, where X is
    rank-deficient, the minimum-norm solution of X itself (pseudo_inverse; it is not scale-invariant).
    Refinement sums are exactly rounded when the refined problems hold few products together."""
    d = _power_of_two(np.sqrt(np.sum(X * X, axis=-2)))
    Xs = X / d[..., None, :]  # X D⁻¹ with D a power of two: exact, and β = D⁻¹ β_s exactly
    Q, R, deficient = _qr_each(Xs)
    beta = np.empty(X.shape[:-2] + (X.shape[-1], Y.shape[-1]))
    if deficient.any():
        beta[deficient] = _route_svd(X[deficient], Y[deficient])
    full = np.flatnonzero(~deficient)
    if X[0].size * Y.shape[-1] * len(full) <= _EXACT_LIMIT:
        for i in full:
            beta[i] = _solve_qr_refined(Xs[i], Y[i], Q[i], R[i], True) / d[i][:, None]
    elif len(full):
        beta[full] = _solve_qr_refined(Xs[full], Y[full], Q[full], R[full], False) / d[full][..., :, None]
    return beta


def _cholesky_estimate(G):
    """Cholesky factors of every G in a stack and, per problem, an estimate of cond(X D⁻¹)² (D the column norms):
    the spread of the squared pivots of the scaled factor. +inf where G is not numerically positive definite
    (that problem's factor is then the identity and must not be used)."""
    squares = np.diagonal(G, axis1=-2, axis2=-1)  # column norms squared
    squares = np.where(squares > 0, squares, 1.0)
    try:
        C = np.linalg.cholesky(G)
    except np.linalg.LinAlgError:  # some problem is not positive definite: find it from the scaled spectrum
        norms = np.sqrt(squares)
        lam = np.linalg.eigvalsh(G / norms[..., :, None] / norms[..., None, :])
        ok = lam[..., 0] > lam[..., -1] * _EPS / _GRAM_RISK  # these factor safely; the rest go to QR or SVD
        C = np.broadcast_to(np.eye(G.shape[-1]), G.shape).copy()
        try:
            C[ok] = np.linalg.cholesky(G[ok])
        except np.linalg.LinAlgError:  # rounding beat the margin: let every problem take the careful route
            ok[...] = False
        return C, np.where(ok, lam[..., -1] / np.where(ok, lam[..., 0], 1.0), np.inf)
    pivots = np.diagonal(C, axis1=-2, axis2=-1) ** 2 / squares
    return C, pivots.max(axis=-1) / pivots.min(axis=-1)


_GRAM_RISK = 1e-6  # the Gram route when cond(X D⁻¹)² eps is under this ...
_REFINE_RISK = 1e-13  # ... refined by preconditioned gradient steps when it is over this


def _route_auto(X, Y):
    if X.ndim == 2 and X.size * Y.shape[-1] <= _EXACT_LIMIT:  # one small problem: QR, exactly rounded refinement
        _require_finite(("X", X), ("Y", Y))
        return _qr_or_svd(X[None], Y[None])[0]
    batch = X.shape[:-2]
    X, Y = X.reshape((-1,) + X.shape[-2:]), Y.reshape((-1,) + Y.shape[-2:])  # a stack of problems
    G, XtY = _gram(X, Y)
    C, cond2 = _cholesky_estimate(G)
    if not batch:  # one large problem: the exact condition number of the scaled Gram matrix is cheap too
        norms = np.sqrt(np.diagonal(G[0]))
        lam = np.linalg.eigvalsh(G[0] / norms[:, None] / norms[None, :]) if np.all(norms > 0) else [0.0, 1.0]
        cond2 = np.maximum(cond2, lam[-1] / max(lam[0], lam[-1] * _EPS))
    risk = cond2 * _EPS
    fast = risk < _GRAM_RISK
    if fast.all():
        beta = _cholesky_solve(C, XtY)
    else:
        beta = np.empty(XtY.shape)
        beta[fast] = _cholesky_solve(C[fast], XtY[fast])
    refine = fast & (risk > _REFINE_RISK)
    if refine.any():
        beta[refine] = _refine_gram(X[refine], Y[refine], beta[refine], C[refine])
    if not fast.all():  # ill-conditioned or rank-deficient problems, by themselves
        beta[~fast] = _qr_or_svd(X[~fast], Y[~fast])
    return beta.reshape(batch + beta.shape[-2:])


_ROUTES = {"auto": _route_auto, "eigh": _route_eigh, "cholesky": _route_cholesky, "svd": _route_svd,
           "qr": _route_qr}


# --- public functions -------------------------------------------------------------------


def coefficients(X: npt.ArrayLike, Y: npt.ArrayLike, *, route: str = "auto") -> np.ndarray:
    """OLS coefficients β̂ (..., p) or (..., p, k), computed as attention: no n×n or m×n matrix is formed.

    ``route`` is one of ``ROUTES``; ``TypeError`` or ``ValueError`` name a bad argument.
    """
    X, Y, _, vector_y, _ = _validate(X, Y, None, route)
    beta = _ROUTES[route](X, Y)
    return beta[..., 0] if vector_y else beta


def predict(X: npt.ArrayLike, Y: npt.ArrayLike, X_query: npt.ArrayLike, *, route: str = "auto") -> np.ndarray:
    """Predictions X_query β̂, evaluated as X_q (L (Lᵀ (XᵀY))) right to left: shape (..., m[, k])."""
    X, Y, Q, vector_y, vector_q = _validate(X, Y, X_query, route)
    out = Q @ _ROUTES[route](X, Y)
    if vector_y:
        out = out[..., 0]
    return out[..., 0, :] if vector_q and not vector_y else out[..., 0] if vector_q else out


def _factor(X, route):
    """A factor L with L Lᵀ = (XᵀX)⁻¹ (restricted to the row space when X is rank-deficient)."""
    _require_finite(("X", X))
    if route in ("auto", "eigh"):
        G, _, d = _scaled_gram(np.swapaxes(X, -1, -2) @ X, X[..., :1, :1], max(X.shape[-2:]))
        lam, V = _eigh_factors(G, max(X.shape[-2:]))
        return V * (lam ** -0.5)[..., None, :] / d[..., :, None]  # L = D⁻¹ L_s: L Lᵀ = (XᵀX)⁻¹
    if route == "cholesky":
        C = np.linalg.cholesky(np.swapaxes(X, -1, -2) @ X)
        return np.swapaxes(_solve_triangular(C, np.broadcast_to(np.eye(C.shape[-1]), C.shape), True, False), -1, -2)
    if route == "svd":
        _, s, V = _svd_factors(X)
        return V * (1 / s)[..., None, :]
    factors = _qr_factors(X)
    if factors is None:
        return _factor(X, "svd")
    _, R = factors
    return _solve_triangular(R, np.broadcast_to(np.eye(R.shape[-1]), R.shape), lower=False, transpose=False)


def attention_parameters(X: npt.ArrayLike, Y: npt.ArrayLike, *,
                         route: str = "eigh") -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(W_Q, W_K, W_V, P) of the paper's construction: W_Q = W_K = W_V = L, P = LᵀXᵀY (paper_construction).

    X L P is then the fitted values H Y; any route's L satisfies L Lᵀ = (XᵀX)⁻¹ (gauge_invariance).
    """
    X, Y, _, vector_y, _ = _validate(X, Y, None, route)
    L = _factor(X, route)
    P = _printed("P")(L, X, Y)
    return L, L.copy(), L.copy(), (P[..., 0] if vector_y else P)


def attention_scores(X: npt.ArrayLike, X_query: npt.ArrayLike, *, route: str = "eigh") -> np.ndarray:
    """The m×n score matrix (X_q L)(X L)ᵀ, for teaching: predict never forms it."""
    X, _, X_query, _, vector_q = _validate(X, np.zeros(np.shape(X)[:-1]), X_query, route)
    L = _factor(X, route)
    scores = _printed("scores")(X_query, L, X)
    return scores[..., 0, :] if vector_q else scores
