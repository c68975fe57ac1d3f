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

Precision: the arithmetic is float64 (refinement residuals in float64, in extended precision or exactly
rounded, as said below). Results are float32 when every array argument is float32 (or float16), else float64. A
solution outside the float range raises ValueError; it is never returned as NaN or infinity.

Routes (each evaluates a kernel-checked identity):
    "eigh"  X_q L Lᵀ XᵀY with L = VΛ^{-1/2}, XᵀX = VΛVᵀ (ols_is_linear_attention, lemma gram_route)
    "svd"   X_q V S⁻¹ UᵀY with X = USVᵀ (gauge_invariance, lemma svd_route)
    "qr"    X_q R⁻¹ QᵀY with X = QR (gauge_invariance, lemma qr_route)
    "cholesky"  X_q C⁻ᵀ C⁻¹ XᵀY with XᵀX = CCᵀ (gauge_invariance, lemma cholesky_route)
    "auto"  the least-squares solution of the data as given, paying for accuracy only where the data need
            it. Columns are scaled by powers of two (exactly); XᵀX and XᵀY are formed once (BLAS) and
            their Cholesky factor gives a condition estimate κ² of the scaled X.
            - One small problem (n·p·k <= 400,000): the "cholesky" route when the estimate bounds the
              error of every coefficient by 1e-12 of its size (and p > 1 or n·k > 4096); otherwise "qr"
              with Björck's refinement of the augmented system, every sum exactly rounded, which
              converges to the least-squares solution of the data as given (bit for bit on the NIST
              StRD sets).
            - One large problem: κ² from the eigenvalues of the scaled p×p Gram matrix. κ² eps < 1e-2:
              "cholesky", refined where κ² eps > 1e-13 by preconditioned gradient steps (preconditioned_gd)
              whose residuals are float64 BLAS products over row blocks, until the next correction would
              be under eps or κ eps, or the corrections stop shrinking. Else R of
              X = QR in row blocks (Q never formed) and the same refinement preconditioned by RᵀR
              (corrected semi-normal equations), or, when R is rank-deficient, the minimum-norm
              solution from the SVD of R (pseudo_inverse). Extra memory: one row block.
            - A batch: each problem on its own, from its Cholesky pivots: "cholesky" (refined in
              float64 where κ² eps > 1e-13), or, for the few problems with κ² eps >= 1e-6 or no
              Cholesky factor, "qr" with refinement, or "svd" when rank-deficient. When the stacked
              LAPACK Cholesky fails, a Cholesky vectorised across the problems marks the failing ones.
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
_WIDE = np.longdouble  # residuals of the refinement of hard problems in a batch: extended precision

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
    kind = array.dtype.kind
    if kind not in "biuf":
        if kind == "c":
            raise TypeError(f"{name} must be real, not complex")
        raise TypeError(f"{name} must hold real numbers, not values of dtype {array.dtype}")
    if array.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimension(s), got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"{name} is empty (shape {array.shape})")
    return array


def _single(*arrays):
    """Whether every array is float32 or float16: the results are then float32."""
    return all(a.dtype.kind == "f" and a.dtype.itemsize <= 4 for a in arrays)


def _validate(X, Y, X_query=None, route="auto"):
    """(X, Y as (..., n, k), X_query as (..., m, p) or None, vector_y, vector_q, result dtype); float64 arrays."""
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
    given = (X, Y)
    if X_query is not None:
        Q = _array("X_query", X_query, 1)
        given += (Q,)
        vector_q = Q.ndim == X.ndim - 1
        Q = Q[..., None, :] if vector_q else Q
        if Q.ndim != X.ndim or Q.shape[:-2] != batch or Q.shape[-1] != p:
            raise ValueError(f"X_query must have shape {batch + ('m', p)} or {batch + (p,)} to match X of "
                             f"shape {X.shape}, got {np.shape(X_query)}")
        Q = Q.astype(np.float64, copy=False)
        _require_finite(("X_query", Q))
    dtype = np.float32 if _single(*given) else np.float64
    # finiteness of X and Y is checked where the route first reads the data
    return X.astype(np.float64, copy=False), Y2.astype(np.float64, copy=False), Q, vector_y, vector_q, dtype


def _result(array, dtype):
    """The result in ``dtype``; a ValueError, not NaN or infinity, when it does not fit."""
    if not np.isfinite(array).all():
        raise ValueError("the least-squares solution does not fit in float64 (overflow); rescale X or Y")
    if dtype == np.float64:
        return array
    if np.abs(array).max() > np.finfo(np.float32).max:
        raise ValueError("the result does not fit in float32 (overflow); pass float64 data")
    return array.astype(dtype)


# --- routes (their products are the printed functions) ----------------------------------


def _require_finite(*named):
    for name, array in named:
        if not np.isfinite(array).all():
            raise ValueError(f"{name} contains NaN or infinity")


_GRAM_LIMIT = np.finfo(np.float64).max / 4  # diagonal entries under this: no sum in XᵀX can overflow


def _gram(X, Y):
    """G = XᵀX and the fast memory XᵀY. X is read once: a NaN or infinity in X always reaches the diagonal of G."""
    if not np.isfinite(Y).all():
        raise ValueError("Y contains NaN or infinity")
    G = X.swapaxes(-1, -2) @ X
    XtY = _fast_memory(X, Y)
    if not ((G.diagonal(0, -2, -1) <= _GRAM_LIMIT).all() and np.isfinite(XtY).all()):
        _require_finite(("X", X))
        raise ValueError("X or Y is too large: XᵀX or XᵀY overflows float64")
    return G, XtY


def _fast_memory(X, Y):
    """XᵀY; for one tall X summed over row blocks, which keeps the rounding error of these long sums (the
    largest error of the Gram route on well-conditioned data) about ten times smaller than one BLAS call's."""
    step = _block_rows(X.shape[-1] + Y.shape[-1])
    if X.ndim > 2 or X.shape[0] <= 2 * step:
        return (Y.swapaxes(-1, -2) @ X).swapaxes(-1, -2)  # (YᵀX)ᵀ: one small product per problem, not two
    parts = [X[i : i + step].T @ Y[i : i + step] for i in range(0, X.shape[0], step)]
    return np.sum(parts, axis=0)


def _solve_triangular(T, B, lower, transpose):
    """op(T)⁻¹ B by substitution, vectorised over the batch (op(T) = Tᵀ if transpose); one LAPACK solve for a
    single problem. Tiny single problems may come as lists of rows (Python floats) and then stay lists."""
    if isinstance(T, list):
        return _substitute([list(row) for row in zip(*T, strict=True)] if transpose else T, B, lower)
    A = T.swapaxes(-1, -2) if transpose else T
    p = A.shape[-1]
    if A.ndim == 2 and B.ndim == 2:
        if p * p * B.shape[1] <= 64:  # tiny: Python floats beat the overhead of a LAPACK call
            a = A.tolist()
            if all(a[i][i] for i in range(p)):
                return np.array(_substitute(a, B.tolist(), lower))
        return np.linalg.solve(A, B)  # backward stable; one call instead of p Python steps
    out = np.empty(np.broadcast_shapes(A.shape[:-2], B.shape[:-2]) + B.shape[-2:])
    order = range(p) if lower else range(p - 1, -1, -1)
    for i in order:
        done = slice(0, i) if lower else slice(i + 1, p)
        acc = B[..., i, :] - np.einsum("...j,...jk->...k", A[..., i, done], out[..., done, :])
        out[..., i, :] = acc / A[..., i, i][..., None]
    return out


def _substitute(a, b, lower):
    """a⁻¹ b for a triangular a, on lists of rows (Python floats: for tiny systems, faster than a LAPACK call)."""
    p, k = len(a), len(b[0])
    out = [[0.0] * k for _ in range(p)]
    for i in range(p) if lower else range(p - 1, -1, -1):
        row, known = a[i], range(i) if lower else range(i + 1, p)
        for j in range(k):
            acc = b[i][j]
            for t in known:
                acc -= row[t] * out[t][j]
            out[i][j] = acc / row[i]
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


# --- auto: exact scaling, condition estimates, refinement ----------------------------------

_SPLIT = 134217729.0  # 2**27 + 1: Dekker's splitter
_EXACT_LIMIT = 400_000  # up to this many products, refinement sums are exactly rounded (math.fsum)
_BLOCK_BYTES = 1 << 22  # row blocks of about 4 MiB: a block's residual is reused while it is in cache


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


def _block_rows(width):
    return max(64, _BLOCK_BYTES // (8 * max(width, 1)))


def _gradient(X, Y, beta):
    """Xᵀ(Y − Xβ) in float64 BLAS products; a single tall X in row blocks, so the extra memory is one block."""
    if X.ndim > 2:
        residual = X @ beta
        np.subtract(Y, residual, out=residual)  # in place: one allocation fewer (it shows on stacks of small X)
        return X.swapaxes(-1, -2) @ residual
    step = _block_rows(X.shape[-1] + Y.shape[-1])
    if X.shape[0] <= step:
        return X.T @ (Y - X @ beta)
    parts = []
    for start in range(0, X.shape[0], step):
        block = X[start : start + step]
        parts.append(block.T @ (Y[start : start + step] - block @ beta))
    return np.sum(parts, axis=0)


def _largest(A):
    """max |A| of each problem of a stack (fast across many small problems), or of one problem."""
    if A.ndim == 2:
        return np.abs(A).max()
    return np.abs(np.ascontiguousarray(A.reshape(-1, A.shape[-2] * A.shape[-1]).T)).max(axis=0)


def _refine_gram(X, Y, beta, C, d=None, rate=1.0, floor=_EPS, active=None, steps=12):
    """Preconditioned gradient steps β ← β + D⁻¹(CCᵀ)⁻¹D⁻¹Xᵀ(Y − Xβ) (preconditioned_gd, with CCᵀ ≈ D⁻¹XᵀXD⁻¹),
    the residuals and gradients float64 BLAS products. Stops when the next correction would be under eps of β
    or under ``floor`` (the corrections shrink geometrically; callers pass κ eps, the forward error of a
    backward stable solver), or when the correction stopped halving (the rounding of the residual is then all
    that is left). X may hold a batch; D (the column scaling, powers of two)
    defaults to I; ``rate`` bounds how much each correction shrinks the error (from the condition estimate);
    ``active`` (a mask over the batch) names the problems refined, the others keep β (a refined subset
    without copying X).
    """
    previous = np.inf
    for _ in range(steps):
        gradient = _gradient(X, Y, beta)
        if d is None:
            delta = _cholesky_solve(C, gradient)
        else:
            delta = _cholesky_solve(C, gradient / d[..., :, None]) / d[..., :, None]
        if active is not None:
            delta[~active] = 0.0
        beta = beta + delta
        change = _largest(delta) / np.maximum(_largest(beta), np.finfo(float).tiny)
        size = float(change.max())
        following = size * (rate if previous == np.inf else min(rate, size / previous))  # the next correction
        if following <= max(_EPS, floor) or size > previous / 2:
            break
        previous = size
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


def _target_scale(Y):
    """A power of two e per problem and column bringing Y near 1 when its entries are huge or tiny (so no
    product in the exactly rounded refinement overflows); 1 otherwise, leaving the data untouched."""
    top = np.max(np.abs(Y), axis=-2, keepdims=True)
    extreme = (top > 2.0**400) | ((top < 2.0**-400) & (top > 0))
    return np.where(extreme, _power_of_two(top), 1.0)


def _qr_or_svd(X, Y):
    """A stack of problems the Gram route cannot take: exactly scaled QR with refinement, or, where X is
    rank-deficient, the minimum-norm solution of X itself (pseudo_inverse; it is not scale-invariant).
    Refinement sums are exactly rounded when the refined problems hold few products together."""
    d = _power_of_two(np.sqrt(np.sum(X * X, axis=-2)))
    Xs = X / d[..., None, :]  # X D⁻¹ with D a power of two: exact, and β = D⁻¹ β_s exactly
    e = _target_scale(Y)
    Ys = Y / e  # exact unless Y holds entries 2^400 times smaller than its largest
    Q, R, deficient = _qr_each(Xs)
    beta = np.empty(X.shape[:-2] + (X.shape[-1], Y.shape[-1]))
    if deficient.any():
        beta[deficient] = _route_svd(X[deficient], Y[deficient])
    full = np.flatnonzero(~deficient)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflowing solution is reported by _result
        if X[0].size * Y.shape[-1] * len(full) <= _EXACT_LIMIT:
            for i in full:
                beta[i] = _solve_qr_refined(Xs[i], Ys[i], Q[i], R[i], True) / d[i][:, None] * e[i]
        elif len(full):
            beta[full] = (_solve_qr_refined(Xs[full], Ys[full], Q[full], R[full], False) / d[full][..., :, None]
                          * e[full])
    return beta


def _cholesky_each(G):
    """Cholesky factors of a stack, and which problems have one (elsewhere the factor is the identity).

    LAPACK factors the whole stack in one call; when any problem has no factor that call fails as a whole,
    and the stack is factored again by a Cholesky vectorised across the problems (one pass, about twice the
    LAPACK call's time), which marks the failing problems instead of failing: one failing problem never
    sends the stack down a slower route.
    """
    ok = np.all(np.diagonal(G, axis1=-2, axis2=-1) > 0, axis=-1)
    if ok.all():
        try:
            return np.linalg.cholesky(G), ok
        except np.linalg.LinAlgError:
            pass
    eye = np.eye(G.shape[-1])
    C, factored = _cholesky_across(np.where(ok[:, None, None], G, eye))
    ok &= factored
    C[~ok] = eye
    return C, ok


def _cholesky_across(G):
    """Lower Cholesky factors of a stack of small matrices, one column at a time for all problems at once; a
    problem whose pivot is not positive is marked (its factor continues with pivot 1 and is not used)."""
    C = np.zeros_like(G)
    ok = np.ones(len(G), bool)
    for j in range(G.shape[-1]):
        row = C[:, j, :j]
        pivot = G[:, j, j] - np.einsum("bk,bk->b", row, row)
        positive = pivot > 0
        ok &= positive
        d = np.sqrt(np.where(positive, pivot, 1.0))
        C[:, j, j] = d
        if j + 1 < G.shape[-1]:
            C[:, j + 1 :, j] = (G[:, j + 1 :, j] - np.einsum("bik,bk->bi", C[:, j + 1 :, :j], row)) / d[:, None]
    return C, ok


def _pivot_estimate(C, G):
    """An estimate of cond(X D⁻¹)² per problem (D the column norms) from the squared Cholesky pivots of XᵀX
    relative to its diagonal, times p to err on the safe side."""
    pivots = np.diagonal(C, axis1=-2, axis2=-1) ** 2 / np.diagonal(G, axis1=-2, axis2=-1)
    pivots = np.ascontiguousarray(np.moveaxis(pivots, -1, 0))  # reduce across rows: fast for many small problems
    return G.shape[-1] * pivots.max(axis=0) / pivots.min(axis=0)


def _cholesky_estimate(G):
    """Cholesky factors of every G in a stack, per problem an estimate of cond(X D⁻¹)² (+inf where G has no
    numerical Cholesky factor: that problem's factor is then the identity and must not be used)."""
    C, ok = _cholesky_each(G)
    if ok.all():
        return C, _pivot_estimate(C, G)
    with np.errstate(divide="ignore", invalid="ignore"):
        cond2 = _pivot_estimate(C, np.where(ok[:, None, None], G, np.eye(G.shape[-1])))
    return C, np.where(ok & np.isfinite(cond2), cond2, np.inf)


_TRUST = 1e-12  # a small problem keeps the Cholesky answer when every coefficient's estimated error is under this
_GRAM_RISK = 1e-6  # a batch's problem takes the Gram route when its estimated cond(X D⁻¹)² eps is under this ...
_REFINE_RISK = 1e-13  # ... refined by preconditioned gradient steps when it is over this
_LARGE_GRAM_RISK = 1e-2  # one large problem: its exact cond(X D⁻¹)² eps under this takes the refined Gram route


def _trusted(beta, squares, risk):
    """Whether every coefficient's estimated error, risk·max|Dβ| (D the column norms), is under _TRUST·|Dβ|."""
    norms = [math.sqrt(v) for v in squares]
    for column in zip(*beta, strict=True) if isinstance(beta, list) else beta.T.tolist():
        scaled = [abs(b) * d for b, d in zip(column, norms, strict=True)]
        top = max(scaled)
        if not (math.isfinite(top) and risk * top <= _TRUST * min(scaled)):
            return False
    return True


def _cholesky_lists(G):
    """The lower Cholesky factor of a tiny G given as lists of rows, in Python floats; None when a pivot is not
    positive. (For p <= 4 this is cheaper than the overhead of one LAPACK call through NumPy.)"""
    p = len(G)
    C = [[0.0] * p for _ in range(p)]
    for j in range(p):
        row = C[j]
        pivot = G[j][j]
        for t in range(j):
            pivot -= row[t] * row[t]
        if not pivot > 0:
            return None
        row[j] = d = math.sqrt(pivot)
        for i in range(j + 1, p):
            other = C[i]
            acc = G[i][j]
            for t in range(j):
                acc -= other[t] * row[t]
            other[j] = acc / d
    return C


def _auto_small(X, Y):
    """One small problem: the Cholesky answer if the estimate trusts every coefficient, else exact refinement."""
    n, p = X.shape
    _require_finite(("Y", Y))
    G = X.T @ X  # NaN or infinity in X reaches its diagonal
    XtY = X.T @ Y
    squares = G.diagonal().tolist()
    cheap = p == 1 and n * Y.shape[1] <= 4096  # one column: C⁻ᵀC⁻¹ divides twice by √(xᵀx); exact costs little
    if n >= p and not cheap and min(squares) > 0 and max(squares) <= _GRAM_LIMIT:
        tiny = p * p * Y.shape[1] <= 64  # then Python floats, start to end
        if tiny:
            C = _cholesky_lists(G.tolist())
        else:
            try:
                C = np.linalg.cholesky(G)  # the factor of X D⁻¹ is D⁻¹C exactly: the scaling need not be applied
            except np.linalg.LinAlgError:
                C = None
        if C is not None:
            diagonal = [C[i][i] for i in range(p)] if tiny else C.diagonal().tolist()
            pivots = [c * c / v for c, v in zip(diagonal, squares, strict=True)]
            risk = p * _EPS * max(pivots) / min(pivots)  # about cond(X D⁻¹)² eps
            if risk < _GRAM_RISK:
                beta = _cholesky_solve(C, XtY.tolist() if tiny else XtY)
                if _trusted(beta, squares, risk):
                    return np.array(beta) if tiny else beta
    _gram(X, Y)  # names NaN, infinity or overflow in the data
    _require_finite(("X", X))
    return _qr_or_svd(X[None], Y[None])[0]


def _tsqr(X):
    """R of X = QR, one row block at a time (Q is never formed; the extra memory is one block)."""
    step = _block_rows(X.shape[1])
    R = np.zeros((0, X.shape[1]))
    for start in range(0, X.shape[0], step):
        R = np.linalg.qr(np.concatenate([R, X[start : start + step]]), mode="r")
    return R


def _auto_large(X, Y):
    """One large problem: the refined Gram route where its exact scaled condition allows, else R of X = QR."""
    if X.shape[0] < X.shape[1]:  # wide: rank-deficient, and the SVD of X is no larger than X
        return _route_svd(X, Y)
    G, XtY = _gram(X, Y)
    d = _power_of_two(np.sqrt(np.diagonal(G)))
    Gs = G / d[:, None] / d[None, :]
    lam = np.linalg.eigvalsh(Gs)
    risk = lam[-1] / lam[0] * _EPS if lam[0] > 0 else np.inf
    if risk < _LARGE_GRAM_RISK:
        try:
            C = np.linalg.cholesky(Gs)
        except np.linalg.LinAlgError:
            C = None
        if C is not None:
            beta = _cholesky_solve(C, XtY / d[:, None]) / d[:, None]
            if risk <= _REFINE_RISK:
                return beta
            return _refine_gram(X, Y, beta, C, d, rate=10 * risk, floor=math.sqrt(risk * _EPS))
    R = _tsqr(X)  # corrected semi-normal equations: RᵀR = XᵀX with the accuracy of a QR factorization
    _, s, Vt = np.linalg.svd(R, full_matrices=False)
    if s[-1] > s[0] * max(X.shape) * _EPS:
        C = R.T
        kappa = s[0] / s[-1] * _EPS  # RᵀR = XᵀX to the accuracy of a QR factorization: contraction about κ eps
        return _refine_gram(X, Y, _cholesky_solve(C, XtY), C, rate=min(1.0, 10 * kappa), floor=kappa)
    lam = np.where(s > s[0] * max(X.shape) * _EPS, s * s, np.inf)  # XᵀX = VΛVᵀ with Λ = S²: pseudo_inverse
    V = Vt.T
    return _printed("eigh")(V, lam, XtY)


def _auto_stack(X, Y):
    """A stack of problems, each on its own route. The Cholesky factor of XᵀX is that of the column-scaled X
    times D exactly (D powers of two), so the scaling is implicit: only the estimate divides by the diagonal."""
    G, XtY = _gram(X, Y)
    C, cond2 = _cholesky_estimate(G)
    risk = cond2 * _EPS
    fast = risk < _GRAM_RISK
    if X.shape[-2] < X.shape[-1]:
        fast[...] = False
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # unsafe factors: replaced below
        beta = _cholesky_solve(C, XtY)  # where not fast, C is the identity or unsafe: replaced below
    refine = fast & (risk > _REFINE_RISK)
    worst = float(risk[refine].max()) if refine.any() else 0.0
    rate, floor = 10 * worst, math.sqrt(worst * _EPS)
    if refine.sum() * 4 >= len(refine):  # most problems: refine in place, the others held fixed
        if not fast.all():
            beta[~fast] = 0.0
        beta = _refine_gram(X, Y, beta, C, rate=rate, floor=floor, active=None if refine.all() else refine)
    elif refine.any():
        beta[refine] = _refine_gram(X[refine], Y[refine], beta[refine], C[refine], rate=rate, floor=floor)
    if not fast.all():  # ill-conditioned or rank-deficient problems, by themselves
        beta[~fast] = _qr_or_svd(X[~fast], Y[~fast])
    return beta


def _route_auto(X, Y):
    if X.ndim == 2:
        if X.size * Y.shape[-1] <= _EXACT_LIMIT:
            return _auto_small(X, Y)
        return _auto_large(X, Y)
    batch = X.shape[:-2]
    beta = _auto_stack(X.reshape((-1,) + X.shape[-2:]), Y.reshape((-1,) + Y.shape[-2:]))
    return beta.reshape(batch + beta.shape[-2:])


_ROUTES = {"auto": _route_auto, "eigh": _route_eigh, "cholesky": _route_cholesky, "svd": _route_svd,
           "qr": _route_qr}


# --- public functions -------------------------------------------------------------------


def coefficients(X: npt.ArrayLike, Y: npt.ArrayLike, *, route: str = "auto") -> np.ndarray:
    """OLS coefficients β̂ = (XᵀX)⁻¹XᵀY, computed as attention: no n×n or m×n matrix is formed.

    Parameters
    ----------
    X : array_like, shape (..., n, p)
        The design, one example per row; leading dimensions are a batch of independent problems.
    Y : array_like, shape (..., n) or (..., n, k)
        The targets; the batch dimensions must equal those of ``X`` (nothing broadcasts).
    route : {"auto", "eigh", "cholesky", "svd", "qr"}, keyword-only
        Which checked identity evaluates β̂ (see ``ROUTES`` and the module docstring). ``"auto"`` gives the
        least-squares solution of the data as given, refining only where the data need it.

    Returns
    -------
    numpy.ndarray, shape (..., p) or (..., p, k)
        β̂; the minimum-norm solution where ``X`` is rank-deficient. float32 when every argument is float32 (or
        float16), else float64 (the arithmetic is float64 either way).

    Raises
    ------
    TypeError
        An argument is not a real numeric array.
    ValueError
        A bad shape, an empty array, NaN or infinity in the data, an unknown route, data whose XᵀX overflows,
        or a solution that does not fit in the result's float type.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    >>> beta = coefficients(X, [1.0, 2.0, 4.0])
    >>> np.allclose(beta, [5 / 6, 1.5])
    True
    >>> coefficients(X.astype(np.float32), np.float32([1, 2, 4])).dtype
    dtype('float32')
    """
    X, Y, _, vector_y, _, dtype = _validate(X, Y, None, route)
    beta = _result(_ROUTES[route](X, Y), dtype)
    return beta[..., 0] if vector_y else beta


def predict(X: npt.ArrayLike, Y: npt.ArrayLike, X_query: npt.ArrayLike, *, route: str = "auto") -> np.ndarray:
    """Predictions X_q β̂, evaluated as X_q (L (Lᵀ (XᵀY))) right to left.

    Parameters
    ----------
    X : array_like, shape (..., n, p)
        The design (the keys), one example per row.
    Y : array_like, shape (..., n) or (..., n, k)
        The targets (the values).
    X_query : array_like, shape (..., m, p) or (..., p)
        The queries; a single query gives a single prediction per problem.
    route : {"auto", "eigh", "cholesky", "svd", "qr"}, keyword-only
        As in :func:`coefficients`.

    Returns
    -------
    numpy.ndarray, shape (..., m[, k]), (...[, k]) for a single query
        The predictions; float32 when every argument is float32 (or float16), else float64.

    Raises
    ------
    TypeError
        An argument is not a real numeric array.
    ValueError
        As in :func:`coefficients`, or queries whose shape does not match ``X``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    >>> round(float(predict(X, [1.0, 2.0, 4.0], [1.0, 3.0])), 12)  # 5/6 + 3 · 3/2
    5.333333333333
    """
    X, Y, Q, vector_y, vector_q, dtype = _validate(X, Y, X_query, route)
    out = _result(Q @ _ROUTES[route](X, Y), dtype)
    if vector_y:
        out = out[..., 0]
    return out[..., 0, :] if vector_q and not vector_y else out[..., 0] if vector_q else out


def _factor(X, route):
    """A factor L with L Lᵀ = (XᵀX)⁻¹, or L Lᵀ = (XᵀX)⁺ on the row space when X is rank-deficient."""
    _require_finite(("X", X))
    if route in ("auto", "eigh"):
        G, _, d = _scaled_gram(np.swapaxes(X, -1, -2) @ X, X[..., :1, :1], max(X.shape[-2:]))
        lam, V = _eigh_factors(G, max(X.shape[-2:]))
        return V * (lam ** -0.5)[..., None, :] / d[..., :, None]  # L = D⁻¹ L_s: L Lᵀ = (XᵀX)⁻¹
    if route == "cholesky":
        G = np.swapaxes(X, -1, -2) @ X
        try:
            C = np.linalg.cholesky(G)
        except np.linalg.LinAlgError:
            C = None
        if C is None or _rank_deficient(C, max(X.shape[-2:])):
            return _factor(X, "eigh")  # the minimum-norm factor (pseudo_inverse)
        identity = np.broadcast_to(np.eye(C.shape[-1]), C.shape)
        return np.swapaxes(_solve_triangular(C, identity, True, False), -1, -2)
    if route == "svd":
        _, s, V = _svd_factors(X)
        return V * (1 / s)[..., None, :]
    factors = _qr_factors(X)
    if factors is None:
        return _factor(X, "svd")
    _, R = factors
    return _solve_triangular(R, np.broadcast_to(np.eye(R.shape[-1]), R.shape), lower=False, transpose=False)


def attention_parameters(X: npt.ArrayLike, Y: npt.ArrayLike, *,
                         route: str = "auto") -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(W_Q, W_K, W_V, P) of the paper's construction: W_Q = W_K = W_V = L, P = LᵀXᵀY (paper_construction).

    X L P is then the fitted values H Y; every route's L satisfies L Lᵀ = (XᵀX)⁻¹ (gauge_invariance). On a
    rank-deficient X every route gives the minimum-norm factor, L Lᵀ = (XᵀX)⁺ (pseudo_inverse).

    Parameters
    ----------
    X : array_like, shape (..., n, p)
        The design, one example per row.
    Y : array_like, shape (..., n) or (..., n, k)
        The targets.
    route : {"auto", "eigh", "cholesky", "svd", "qr"}, keyword-only
        Which factor L: ``"auto"`` and ``"eigh"`` V Λ^{-1/2} of the exactly column-scaled Gram matrix,
        ``"cholesky"`` C⁻ᵀ, ``"svd"`` V S⁻¹, ``"qr"`` R⁻¹.

    Returns
    -------
    W_Q, W_K, W_V : numpy.ndarray, shape (..., p, p)
        Three copies of L.
    P : numpy.ndarray, shape (..., p) or (..., p, k)
        The output projection LᵀXᵀY. All four float32 when every argument is float32 (or float16).

    Raises
    ------
    TypeError
        An argument is not a real numeric array.
    ValueError
        A bad shape, an empty array, NaN or infinity in the data, or an unknown route.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    >>> W_Q, W_K, W_V, P = attention_parameters(X, [1.0, 2.0, 4.0])
    >>> np.allclose(W_Q @ W_K.T, np.linalg.inv(X.T @ X)), np.allclose(X @ W_V @ P, X @ [5 / 6, 1.5])
    (True, True)
    """
    X, Y, _, vector_y, _, dtype = _validate(X, Y, None, route)
    L = _factor(X, route)
    P = _printed("P")(L, X, Y)
    L, P = _result(L, dtype), _result(P, dtype)
    return L, L.copy(), L.copy(), (P[..., 0] if vector_y else P)


def attention_scores(X: npt.ArrayLike, X_query: npt.ArrayLike, *, route: str = "auto") -> np.ndarray:
    """The m×n score matrix (X_q L)(X L)ᵀ, for teaching: :func:`predict` never forms it.

    Parameters
    ----------
    X : array_like, shape (..., n, p)
        The design (the keys).
    X_query : array_like, shape (..., m, p) or (..., p)
        The queries.
    route : {"auto", "eigh", "cholesky", "svd", "qr"}, keyword-only
        Which factor L, as in :func:`attention_parameters`.

    Returns
    -------
    numpy.ndarray, shape (..., m, n), or (..., n) for a single query
        The scores; scores @ Y are the predictions. float32 when both arguments are float32 (or float16).

    Raises
    ------
    TypeError
        An argument is not a real numeric array.
    ValueError
        A bad shape, an empty array, NaN or infinity in the data, or an unknown route.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    >>> scores = attention_scores(X, [1.0, 3.0])
    >>> scores.shape, bool(np.isclose(scores @ [1.0, 2.0, 4.0], 5 / 6 + 4.5))
    ((3,), True)
    """
    X = _array("X", X, 2)
    X, _, X_query, _, vector_q, dtype = _validate(X, np.zeros(X.shape[:-1], X.dtype), X_query, route)
    L = _factor(X, route)
    scores = _result(_printed("scores")(X_query, L, X), dtype)
    return scores[..., 0, :] if vector_q else scores
