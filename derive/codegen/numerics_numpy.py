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
rounded, as said below; route "exact" in integers, exactly, rounded once at the end). Results are float32 when
every array argument is float32 (or float16), else float64. A result outside the float range raises ValueError
naming it; it is never returned as NaN, infinity or a silent 0 (nor as a subnormal group that keeps fewer than
half its bits: under 2^-1048, 2^-138 for float32).

Scale: any finite data are solved, from subnormal entries to about 1e308. Every column of X and of Y is scaled by
a power of two to a largest entry near 1 (exact, "column-scaled"); where X has full rank the least-squares
solution is related exactly, β = β_s 2^(ky - kx), and where X is rank-deficient the minimum-norm solution is that
of X scaled by one power of two per problem (it is not invariant under scaling columns apart). "auto" scales
only problems whose squared column norms (of X: XᵀX's diagonal, of Y) leave [2^-500, 2^500]; in that range the
data are solved as given (the scaling then is only implicit, in the condition estimates).

Routes (each evaluates a kernel-checked identity, on the column-scaled data):
    "eigh"  X_q L Lᵀ XᵀY with L = VΛ^{-1/2}, XᵀX = VΛVᵀ (ols_is_linear_attention, lemma gram_route)
    "svd"   X_q V S⁻¹ UᵀY with X = USVᵀ (gauge_invariance, lemma svd_route)
    "qr"    X_q R⁻¹ QᵀY with X = QR (gauge_invariance, lemma qr_route)
    "cholesky"  X_q C⁻ᵀ C⁻¹ XᵀY with XᵀX = CCᵀ (gauge_invariance, lemma cholesky_route)
            "eigh" and "cholesky" form XᵀX, whose condition is the square of X's: use them where X is
            well-conditioned once its columns are scaled (cond(X)² eps far under 1e-6), to see those identities
            at work or for speed. They warn (AccuracyWarning, a UserWarning and a RuntimeWarning) where they
            cannot give the least-squares solution:
            where their answer is truncated (XᵀX lost dimensions that X has: the warning names the rank used and
            X's, and the condition estimate), and where cond(X)² eps, their error to first order, is over 1e-6.
            "svd" and "qr" are backward stable (error about cond(X) eps); on rank-deficient X they give the
            minimum-norm solution, and warn where that drops columns that are independent once scaled.
    "auto"  the default, fast, about lstsq's accuracy at about its cost (issue 30; uncentred data included: see
            coefficients). Columns are scaled by powers of two (exactly); XᵀX and XᵀY are formed
            once (BLAS) and their Cholesky factor gives a condition estimate κ² of the scaled X.
            - One small problem (n·p·k <= 400,000): the Cholesky answer where the estimate puts the error
              that conditioning causes (κ² eps times the largest scaled coefficient, to first order) under
              1e-12 of every coefficient's size (the rounding of the sums in XᵀY, which every solver shares, is
              not counted; an estimate, not a bound); else, for κ² eps < 1e-6, at most three preconditioned
              gradient steps with float64 gradients (the corrected semi-normal equations: about a backward
              stable solver's error), centred where a column lies mostly along the ones vector (√w for weighted
              rows: _centring, _centred_gradient); else one LAPACK call, numpy.linalg.lstsq (gelsd: X⁺Y from the SVD,
              singular values under max(n, p) eps of the largest dropped), whose numerical rank and singular
              values name a RankDeficientWarning where X is rank-deficient (with the condition estimate); only
              where that rank may depend on the columns' scales, Householder QR of [X D⁻¹ Y] (one LAPACK
              factorization, Q never formed) decides: β = D⁻¹R⁻¹QᵀY where the column-scaled R has full rank,
              else the minimum-norm solution from the SVD of the p×p RD. One column with n·k <= 64: xᵀY / xᵀx
              with both sums exact (in Python integers) and the quotient correctly rounded. Data whose squared
              column norms leave [2^-500, 2^500] are solved column-scaled: the Cholesky answer where trusted,
              else preconditioned gradient steps (preconditioned_gd) until β stops moving, the gradients in
              extended precision (where long double is wider than double) and then, up to 1,024 products,
              exact in Python integers; if they do not settle, "qr" with Björck's refinement of the augmented
              system, every sum exactly rounded up to 1,024 products (in extended precision above).
            - One large problem: κ² from the eigenvalues of the scaled p×p Gram matrix. κ² eps < 1e-2:
              "cholesky", refined where κ² eps > 1e-13 by preconditioned gradient steps (preconditioned_gd)
              whose residuals are float64 BLAS products over row blocks, until the next correction would
              be under eps or κ eps, or the corrections stop shrinking; where κ² eps > 1e-8 a last step
              with the gradient Xᵀ(Y − Xβ) in extended precision (long double), since float64 gradients
              leave an error of about κ² eps |X|ᵀ|r| (13 times lstsq's on 400,000 × 64 with a near-collinear
              pair). Else R of [X Y] in row blocks of 1,024 (Householder least squares, Q never formed),
              β = R⁻¹QᵀY, then one corrected semi-normal step with an extended-precision gradient; or, when
              R is rank-deficient, the minimum-norm solution from the SVD of R (pseudo_inverse) and the
              RankDeficientWarning. Measured against the exact solution of the float64 data at cond 1e8,
              p = 16: 1e-12 against lstsq's 5e-10 (1e6 rows), 4e-12 against 2e-10 (1e5); 12-17 times faster
              than lstsq on tall data. Without a type wider than double (long double is double on some
              platforms) the extended steps are skipped: backward stable, about lstsq's error (up to 10
              times). Extra memory: one row block.
            - A batch: each problem on its own, from its Cholesky pivots: "cholesky" (refined in
              float64 where κ² eps > 1e-13), or, for the few problems with κ² eps >= 1e-6 or no
              Cholesky factor, "qr" without refinement, or "svd" and the warning when rank-deficient. X is
              read a block of problems (about 1 MiB) at a time, every product over a block made while it is
              in cache. Many small problems (p <= 32, at least 128 of them) are factored and solved across
              the stack: a few vector operations per column for all problems at once, instead of one
              LAPACK call per problem; a failing pivot marks only its own problem. Otherwise LAPACK
              factors the stack, and when it fails the factorization across the stack marks the
              failing problems. The blocks are shared among threads (NumPy makes a product over a stack
              of small matrices in one thread): as many as the CPUs this process may use (at most 8), or
              OLS_ATTENTION_NUM_THREADS, else OMP_NUM_THREADS, where set; the results are the same bit for
              bit whatever the number. Problems with an intercept column (exactly constant) are centred first
              (issue 43, _auto_stack_intercept): the other columns and Y less their means, each block while it
              is in cache, the intercept recovered after; the Gram route is then trusted on uncentred data
              where it needed refinement, and the problems it leaves are solved on X as given.
    "exact" the least-squares solution of the float64 data exactly as given, rounded once (issue 40): every
            coefficient is the float64 nearest (ties to even) to the exact rational solution, for one problem
            and for every problem of a stack; float32 results are rounded once to float32 from the exact value,
            and predict rounds X_q β from the exact β and the queries, once. Every float is an integer times a
            power of two: XᵀX and XᵀY (XᵀWX, XᵀWY with weights; + λI with ridge, λ as the float given) are
            formed exactly as integers (limbs of 20 bits, whose products float64 matrix products sum exactly
            over blocks of rows), the normal equations solved by fraction-free Gaussian elimination (Bareiss)
            on integers, and the quotient rounded once. The rank is X's exact rank: where X (with weights √W X)
            is exactly rank-deficient, the exact minimum-norm solution (pseudo_inverse); data rank-deficient only
            to rounding (a column equal to a combination of others up to rounding) have full rank, and their
            exact solution, however large, is returned with a RankDeficientWarning (where the exact pivots'
            condition estimate is over lstsq's rank tolerance; "svd" or "auto" give the numerical minimum norm).
            Cost: the exact sums about 9 times the float64 product XᵀX (more where a column's entries span many
            binades), then O(p³) operations on integers of about p·(2·53 + log₂ n) bits: 0.2 ms at 11 × 2,
            0.6 ms at 1,000 × 8, 0.1 s at 100,000 × 20, 0.5 s at 2,000 × 64, single-threaded. At most 64
            columns (the elimination grows as p³ on ever longer integers: 3–6 s at p = 96, 11–22 s at 128): more
            raise ValueError.
On rank-deficient X every route returns the minimum-norm solution (pseudo_inverse): eigenvalues
and singular values under the rank tolerance are dropped, as numpy.linalg.pinv does ("exact": the exact rank).

Sequences (issue 42; fixed numerics, evaluated chunk identities stated in their docstrings):
    causal_linear_attention  o_t = S_t q_t, S_t = γ_t S_{t−1} + v_t k_tᵀ, chunkwise-parallel (RetNet, Mamba-2)
    delta_rule_attention     S_t = γ_t S_{t−1}(I − β_t k_t k_tᵀ) + β_t v_t k_tᵀ, the WY form per chunk (DeltaNet)
    prefix_predictions       least squares on every prefix of a sequence of examples, all at once: the
                             in-context-learning baseline (minimum norm on rank-deficient prefixes, or ridge)
"""

from __future__ import annotations

import collections
import math
import operator
import os
import sys
import threading
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import numpy.typing as npt

__all__ = ["ROUTES", "AccuracyWarning", "RankDeficientWarning", "coefficients", "predict", "attention_parameters",
           "attention_scores", "RecursiveLeastSquares", "multi_layer_predict", "causal_linear_attention",
           "delta_rule_attention", "prefix_predictions"]

ROUTES = ("auto", "exact", "eigh", "cholesky", "svd", "qr")
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
    "ridge_spectral": ("V", "lam", "ridge", "XtY"),  # ridge β̂ from XᵀX = VΛVᵀ, Λ as the vector lam
    "ridge_dual": ("X", "ridge", "Y"),  # ridge β̂ by the n×n token solve (attention over tokens)
    # issue 42: a chunk of causal linear attention and of the delta rule, without decay, from the state carried in
    "chunk_outputs": ("Q", "K", "V", "state"),  # Q Sᵀ + tril(Q Kᵀ) V
    "chunk_state": ("K", "V", "state"),  # S + Vᵀ K
    "delta_chunk_outputs": ("Q", "K", "U", "W", "state"),  # Q Sᵀ + tril(Q Kᵀ)(U − W Sᵀ)
    "delta_chunk_state": ("K", "U", "W", "state"),  # S + (U − W Sᵀ)ᵀ K
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
    if type(value) is np.ndarray and value.dtype.kind == "f" and value.ndim >= min_ndim and value.size:
        return value  # the usual case, decided without the checks below (a subclass takes them)
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a numeric array, not {type(value).__name__}")
    if isinstance(value, np.ma.MaskedArray):  # np.asarray would drop the mask and solve with the masked values
        raise TypeError(f"{name} is a masked array, whose mask would be ignored: drop the masked rows, or pass "
                        f"{name}.filled(value) to say what the masked entries are")
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
    for array in arrays:
        if array.dtype.kind != "f" or array.dtype.itemsize > 4:
            return False
    return True


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
    X = X if X.dtype == np.float64 else X.astype(np.float64)
    Y2 = Y2 if Y2.dtype == np.float64 else Y2.astype(np.float64)
    return X, Y2, Q, vector_y, vector_q, dtype


def _result(array, dtype, what="the least-squares solution", axes=(-2,)):
    """``array`` in ``dtype``; a ValueError naming ``what``, never NaN, infinity or a silent 0, where it does not fit:
    an overflow, or (float32) a group along ``axes`` whose largest entry keeps fewer than half its bits."""
    if not (all(map(math.isfinite, array.ravel().tolist())) if array.size <= 64 else np.isfinite(array).all()):
        raise ValueError(f"{what} does not fit in float64 (overflow); rescale X or Y")
    if dtype is np.float64:
        return array
    if np.abs(array).max() > np.finfo(np.float32).max:
        raise ValueError(f"{what} does not fit in float32 (overflow); pass float64 data")
    _require_kept_bits(array, array.astype(dtype), _TINY_FLOAT32, what, "float32", axes)
    return array.astype(dtype)


_TINY_RESULT = 2.0**-1048  # results all under this (subnormal) keep fewer than half of float64's 53 bits ...
_TINY_FLOAT32 = 2.0**-138  # ... and of float32's 24


def _require_kept_bits(exact, rounded, tiny, what, kind, axes):
    """A ValueError where a group of results (along ``axes``) with a nonzero value has underflowed: its largest
    ``rounded`` entry is under ``tiny``, so the group keeps fewer than half its bits (or is 0)."""
    top = np.abs(rounded).max(axis=axes)
    if (top < tiny).any() and ((top < tiny) & (np.abs(exact).max(axis=axes) > 0)).any():
        raise _underflow(what, kind, tiny)


def _underflow(what, kind, tiny):
    return ValueError(f"{what} does not fit in {kind} (underflow: under {tiny:.1e}, too few of its bits are left); "
                      f"rescale X or Y")


# --- exact scaling by powers of two --------------------------------------------------------


def _require_finite(*named):
    for name, array in named:
        if not np.isfinite(array).all():
            raise ValueError(f"{name} contains NaN or infinity")


_SAFE_LOW, _SAFE_HIGH = 2.0**-500, 2.0**500  # squared column norms of X and Y in this range: no product of the
# Gram route or its refinement under- or overflows enough to matter, and the data are solved as given (no copy);
# outside it (or for NaN and infinity, which the scaling then names) the columns are scaled first
_XTY_LOW, _XTY_HIGH = 2.0**-500, 2.0**500  # one small problem: every column of XᵀY has its largest entry in this
# range (with XᵀX's diagonal in the range above), else its data are scaled: a smaller one may have underflowed, and
# within both ranges |β| >= |XᵀY| / |XᵀX| stays a normal float


def _max_abs_exponents(A):
    """Per column of each matrix of A (..., rows, columns): the k with max |column| = m 2^k, m in [0.5, 1), as
    integers (0 for a column of zeros): exact for every finite float, subnormal ones included. Read a block of
    rows (of problems, for a stack) of about _BLOCK_BYTES at a time: the extra memory is one block."""
    if A.size <= 1 << 14:  # small: NumPy's own reduction has the least overhead
        return np.frexp(np.abs(A).max(axis=-2))[1]
    if A.ndim > 2:  # a stack: blocks of whole problems
        step = max(1, _BLOCK_BYTES // max(1, A[0].nbytes))
        return np.concatenate([np.frexp(_column_maxima(np.abs(A[i : i + step])))[1] for i in range(0, len(A), step)])
    step = _block_rows(A.shape[-1])
    top = _column_maxima(np.abs(A[:step]))
    for start in range(step, A.shape[0], step):
        np.maximum(top, _column_maxima(np.abs(A[start : start + step])), out=top)
    return np.frexp(top)[1]


def _column_maxima(B):
    """max over rows of B (..., rows, columns), B non-negative and contiguous. NumPy reduces across rows slowly
    where the columns are few (a short inner loop): one matrix is read with groups of rows as one wide row, ten
    times faster; a stack is halved, row block against row block, until one row is left, four times faster."""
    rows, p = B.shape[-2:]
    if B.ndim > 2:
        while rows > 1:
            half = rows // 2
            top = np.maximum(B[..., :half, :], B[..., half : 2 * half, :])
            if rows % 2:
                np.maximum(top[..., :1, :], B[..., 2 * half :, :], out=top[..., :1, :])
            B, rows = top, half
        return B[..., 0, :]
    group = max(1, 256 // p)
    head = rows // group * group
    if not head:
        return B.max(axis=-2)
    top = B[:head].reshape(rows // group, group * p).max(axis=0).reshape(group, p).max(axis=0)
    return top if head == rows else np.maximum(top, B[head:].max(axis=0))


def _times_power_of_two(A, k):
    """A 2^k (k integers, broadcast against A): exact where the result is a normal float. One multiplication by
    an exact power of two (much faster than np.ldexp), two where 2^k itself is outside the float range."""
    if np.abs(k).max(initial=0) < 1000:
        return A * np.ldexp(1.0, k)
    half = k // 2
    return A * np.ldexp(1.0, half) * np.ldexp(1.0, k - half)


def _scaled(X, Y):
    """(X 2^-kx, Y 2^-ky, kx, ky): every column of X and of Y scaled by a power of two to a largest entry in
    [0.5, 1), kx (..., p) and ky (..., k) the exponents. Exact (but for entries under 2^-1074 of their column's
    largest, which vanish), and the least-squares solution is related exactly: β = β_s 2^(ky - kx) where X has
    full rank (``_shift``). NaN and infinity in the data are named here."""
    _require_finite(("X", X), ("Y", Y))
    kx, ky = _max_abs_exponents(X), _max_abs_exponents(Y)
    return _times_power_of_two(X, -kx[..., None, :]), _times_power_of_two(Y, -ky[..., None, :]), kx, ky


def _shift(kx, ky):
    """The exponents taking β_s of the column-scaled problem to β: ky_t - kx_j for coefficient j and target t."""
    return ky[..., None, :] - kx[..., :, None]


def _unscale(values, shift, what, axes=(-2,)):
    """values 2^shift, exact where the results are normal floats; a ValueError naming ``what`` where they do not
    fit float64 (an overflow, or a group along ``axes`` underflowing: see ``_require_kept_bits``)."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.ldexp(values, shift)
    if not np.isfinite(out).all():
        raise ValueError(f"{what} does not fit in float64 (overflow); rescale X or Y")
    _require_kept_bits(values, out, _TINY_RESULT, what, "float64", axes)
    return out


def _needs_scaling(A, squares):
    """Per matrix of A (..., rows, columns): whether a column's squared norm (``squares``, (..., columns), as computed)
    is outside [_SAFE_LOW, _SAFE_HIGH] (NaN included). A zero square is read as a column of zeros only where the data
    say so: elsewhere the squares underflowed."""
    if _SAFE_LOW <= squares.min() and squares.max() <= _SAFE_HIGH:  # the usual case, in two passes (NaN fails)
        return np.zeros(squares.shape[:-1], dtype=bool)
    outside = ~((squares >= _SAFE_LOW) & (squares <= _SAFE_HIGH))
    zero = squares == 0
    if zero.any():
        outside[zero] = (np.moveaxis(A, -1, -2)[zero] != 0).any(axis=-1)  # those columns' entries, gathered
    return outside.any(axis=-1)


def _column_squares(A):
    """The squared norm of every column of every matrix of A (..., rows, columns), as float64 computes them."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.einsum("...ij,...ij->...j", A, A)


# --- routes (their products are the printed functions) ----------------------------------


def _gram(X, Y, packed=False):
    """G = XᵀX and the fast memory XᵀY, from one read of X. ``packed`` (a stack factored across it, see
    ``_across``): G as its packed lower triangles (``_Across``, not yet factored), the layout the factorization
    across the stack works in. Nothing is checked: overflows are silent, and callers test the diagonal of G
    (``_needs_scaling``), which NaN or infinity in X always reaches."""
    with np.errstate(over="ignore", invalid="ignore"):
        if X.ndim > 2:
            return _stack_gram(X, Y, packed)
        return X.T @ X, _fast_memory(X, Y)


_STACK_BLOCK_BYTES = 1 << 20  # a stack is read this many bytes of X at a time: every product over a block is
# made while the block is in cache, and the blocks' temporaries are small enough for the allocator to reuse


def _stack_blocks(X):
    """Slices of a stack of X, each about _STACK_BLOCK_BYTES of data."""
    step = max(1, _STACK_BLOCK_BYTES // max(1, X[0].nbytes))
    return [slice(start, start + step) for start in range(0, len(X), step)]


_SCRATCH = threading.local()  # each thread's work arrays of a stack's blocks, kept between calls ...
_SCRATCH_BYTES = 2 * _STACK_BLOCK_BYTES  # ... up to this size each (a block's size or a little over: about 1 MB
# a thread is kept): a fresh array of a block's size costs page faults on every call where the allocator returns
# freed memory to the system (as glibc does after PyTorch or JAX is imported: 300 faults, 2 ms of a 6 ms batch)


def _scratch(name, shape):
    """A float64 work array of ``shape`` for the calling thread, its contents undefined: a view of the thread's
    array ``name``, reused from call to call (grown when too small) where it is at most _SCRATCH_BYTES."""
    size = math.prod(shape)
    if 8 * size > _SCRATCH_BYTES:
        return np.empty(shape)
    flat = getattr(_SCRATCH, name, None)
    if flat is None or len(flat) < size:
        flat = np.empty(size)
        setattr(_SCRATCH, name, flat)
    return flat[:size].reshape(shape)


_THREADS_VARIABLE = "OLS_ATTENTION_NUM_THREADS"
_DEFAULT_THREADS = 8  # at most this many by default: each block holds the GIL for a tenth of its time or so


def _threads():
    """How many threads share the blocks of a stack: ``OLS_ATTENTION_NUM_THREADS`` if set, else
    ``OMP_NUM_THREADS`` (the usual limit, which BLAS honours too) if set to a number, else the CPUs this process
    may run on, at most _DEFAULT_THREADS."""
    value = os.environ.get(_THREADS_VARIABLE, "").strip()
    if value:
        if not (value.isdecimal() and int(value) >= 1):
            raise ValueError(f"{_THREADS_VARIABLE} must be a whole number of threads, at least 1, not {value!r}")
        return int(value)
    value = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()  # OpenMP allows a nested list "4,2"
    if value.isdecimal() and int(value) >= 1:
        return int(value)
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return min(cpus, _DEFAULT_THREADS)


_EXECUTORS: dict[tuple[int, int], ThreadPoolExecutor] = {}  # by (process, size): a forked child makes its own
_EXECUTORS_LOCK = threading.Lock()


def _executor(size):
    key = (os.getpid(), size)
    with _EXECUTORS_LOCK:
        if key not in _EXECUTORS:
            _EXECUTORS[key] = ThreadPoolExecutor(size, thread_name_prefix="ols_attention")
        return _EXECUTORS[key]


def _each_block(work, blocks):
    """``work(block)`` for every block, the blocks shared among ``_threads()`` threads, each taking the next block
    when it is done with one (so a thread slowed by other work does fewer). NumPy makes a product over a stack
    of small matrices in one thread, one BLAS call per matrix, with the GIL released, so blocks run in
    parallel; each block writes only its own slices with the same calls whichever thread runs it, so the
    results are the same bit for bit. A pool thread that has not started when the blocks run out (it is busy
    with other callers' work) is not waited for."""
    threads = min(_threads(), len(blocks))
    if threads <= 1:
        for block in blocks:
            work(block)
        return
    state = np.geterr()  # NumPy's error state is per thread: the workers take the caller's
    remaining = collections.deque(blocks)  # popleft is atomic: each block is taken once

    def drain():
        with np.errstate(**state):
            while True:
                try:
                    block = remaining.popleft()
                except IndexError:
                    return
                work(block)

    executor = _executor(threads - 1)
    helpers = [executor.submit(drain) for _ in range(threads - 1)]
    try:
        drain()
    finally:  # on an error the others stop after their current block; every helper is done before this returns
        remaining.clear()
        errors = []
        for helper in helpers:
            if not helper.cancel():  # a helper that never started has nothing left to do
                try:
                    helper.result()
                except BaseException as error:  # re-raised below, after every wait
                    errors.append(error)
        if errors:
            raise errors[0]


def _stack_gram(X, Y, packed):
    """For a stack: XᵀX, or its lower triangles packed entry-major (``_Across``, not yet factored) if ``packed``
    (one batch axis), and XᵀY, both from one read of X, a block of problems (along the first axis) at a time."""
    p = X.shape[-1]
    G = _Across(np.empty((p * (p + 1) // 2, len(X))), p) if packed else np.empty(X.shape[:-2] + (p, p))
    YtX = np.empty(Y.shape[:-2] + (Y.shape[-1], p))  # (..., k, p): (YᵀX)ᵀ, one product not two
    # packed: the lower triangle column after column (entry (i, j) of XᵀX at i·p + j). XᵀX itself, which NumPy
    # makes by syrk: 20–50% faster than gemm of Xᵀ and X with its columns reversed (the same sums) for the small
    # products of a stack (NumPy 2, OpenBLAS 0.3.31)
    index = _packed_index(p)

    def work(block):
        _block_products(X[block], Y[block], G, YtX, block, index)

    _each_block(work, _stack_blocks(X))
    return G, YtX.swapaxes(-1, -2)


def _block_products(part, targets, G, YtX, block, index):
    """A block's products, written to its slices: partᵀpart into G (packed entry-major, ``_Across``, by the
    positions ``index`` of _packed_index, or a stack) and targetsᵀpart into YtX, while the block is in cache."""
    p = part.shape[-1]
    if isinstance(G, _Across):
        product = np.matmul(part.swapaxes(-1, -2), part, out=_scratch("product", (len(part), p, p)))
        np.copyto(G.packed[:, block], np.take(product.reshape(-1, p * p), index, axis=1).T)
    else:
        np.matmul(part.swapaxes(-1, -2), part, out=G[block])
    np.matmul(targets.swapaxes(-1, -2), part, out=YtX[block])


def _fast_memory(X, Y):
    """XᵀY; for one tall X summed over row blocks, which keeps the rounding error of these long sums (the
    largest error of the Gram route on well-conditioned data) about ten times smaller than one BLAS call's."""
    step = _block_rows(X.shape[-1] + Y.shape[-1])
    if X.shape[0] <= 2 * step:
        return (Y.T @ X).T  # (YᵀX)ᵀ: NumPy then makes one product, not two
    parts = [X[i : i + step].T @ Y[i : i + step] for i in range(0, X.shape[0], step)]
    return np.sum(parts, axis=0)


def _plus_identity(A, c):
    """A + cI for a stack of square matrices (a printed sum with a multiple of I)."""
    return A + np.asarray(c, dtype=A.dtype)[..., None, None] * np.eye(A.shape[-1], dtype=A.dtype)


_FEW_PROBLEMS = 256  # _solve_triangular: up to this many problems, a row's step is a stacked matmul


def _solve_triangular(T, B, lower, transpose):
    """op(T)⁻¹ B by substitution, vectorised over the batch (op(T) = Tᵀ if transpose); one LAPACK solve for a
    single problem. Tiny single problems may come as lists of rows (Python floats) and then stay lists; a stack
    of small factors may come entry-major (``_Across``)."""
    if isinstance(T, list):
        return _substitute(T, B, lower, transpose)
    if isinstance(T, _Across):
        return _substitute_across(T, B, lower, transpose)
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
    few = math.prod(out.shape[:-2]) <= _FEW_PROBLEMS
    for i in order:
        done = slice(0, i) if lower else slice(i + 1, p)
        if few:  # one small product per problem beats einsum's loop over few problems, not over many
            acc = B[..., i, :] - (A[..., i:i + 1, done] @ out[..., done, :])[..., 0, :]
        else:
            acc = B[..., i, :] - np.einsum("...j,...jk->...k", A[..., i, done], out[..., done, :])
        out[..., i, :] = acc / A[..., i, i][..., None]
    return out


def _substitute(a, b, lower, transpose=False):
    """op(a)⁻¹ b for a triangular a (op(a) = aᵀ if transpose), on lists of Python floats: for tiny systems,
    faster than a LAPACK call through NumPy. b is a list of rows, or one column as a flat list (the result then
    too). Only the triangle op(a) uses is read, so a lower factor may come as ragged rows (row i holding its
    first i + 1 entries)."""
    p = len(a)
    order = range(p) if lower else range(p - 1, -1, -1)
    if not isinstance(b[0], list):  # one column: plain floats, no loop over columns
        x = list(b)
        for i in order:
            acc = x[i]
            if transpose:
                for t in range(i) if lower else range(i + 1, p):
                    acc -= a[t][i] * x[t]
            else:
                row = a[i]
                for t in range(i) if lower else range(i + 1, p):
                    acc -= row[t] * x[t]
            x[i] = acc / a[i][i]
        return x
    out = [list(row) for row in b]  # solved in place, one row at a time
    for i in order:
        target, pivot = out[i], a[i][i]
        for t in range(i) if lower else range(i + 1, p):
            coefficient, known = (a[t][i] if transpose else a[i][t]), out[t]
            for j, value in enumerate(known):
                target[j] -= coefficient * value
        for j, value in enumerate(target):
            target[j] = value / pivot
    return out


def _eigh_factors(G, size):
    """G = VΛVᵀ; eigenvalues under the rank tolerance become +inf, so Λ^{-1/2} is 0 there (pseudo_inverse)."""
    lam, V = np.linalg.eigh(G)
    tol = lam[..., -1:] * size * _EPS
    return np.where(lam > tol, lam, np.inf), V


def _scaled_gram(X, Y):
    """(G, XᵀY, kx, ky) of the column-scaled problem X 2^-kx, Y 2^-ky (``_scaled``). Where every squared column norm
    is in the safe range, G and XᵀY are formed from the data and scaled after (exactly, with kx from the norms:
    no copy of X); elsewhere from the scaled data."""
    G, XtY = _gram(X, Y)
    diagonal = np.diagonal(G, axis1=-2, axis2=-1)
    if not (_needs_scaling(X, diagonal).any() or _needs_scaling(Y, _column_squares(Y)).any()):
        kx = np.frexp(np.sqrt(diagonal))[1]
        ky = np.zeros(Y.shape[:-2] + Y.shape[-1:], dtype=kx.dtype)
        d = np.ldexp(1.0, -kx)  # |kx| <= 250 here: exact powers of two, and so are their products
        return G * (d[..., :, None] * d[..., None, :]), XtY * d[..., :, None], kx, ky
    Xs, Ys, kx, ky = _scaled(X, Y)
    G, XtY = _gram(Xs, Ys)
    return G, XtY, kx, ky


def _full_rank_or_minimum_norm(X, Y, beta_s, deficient, kx, ky, minimum_norm):
    """β = β_s 2^(ky - kx) for the problems whose column-scaled X has full rank (β_s solves the scaled problem);
    ``minimum_norm(X, Y)`` of the data as given for the others (``deficient``, per problem), since the minimum-norm
    solution changes when columns are scaled apart. One problem (X 2-D) comes with 0-d masks."""
    if not deficient.any():
        return _unscale(beta_s, _shift(kx, ky), "the least-squares solution")
    beta = np.empty(beta_s.shape)
    full = ~deficient
    if full.any():
        beta[full] = _unscale(beta_s[full], _shift(kx[full], ky[full]), "the least-squares solution")
    beta[deficient] = minimum_norm(X[deficient], Y[deficient])
    return beta


def _uniformly_scaled(X, Y):
    """(X 2^-c, Y 2^-ky, kx, ky) with one exponent c per matrix of X (kx: c for every column), Y by columns: the
    scaling under which the minimum-norm solution is related exactly (β = β_u 2^(ky - c))."""
    _require_finite(("X", X), ("Y", Y))
    kx = _max_abs_exponents(X)
    kx = np.broadcast_to(kx.max(axis=-1, keepdims=True), kx.shape)
    ky = _max_abs_exponents(Y)
    return _times_power_of_two(X, -kx[..., None, :]), _times_power_of_two(Y, -ky[..., None, :]), kx, ky


def _minimum_norm(X, Y, route="svd", warn=False):
    """The minimum-norm least-squares solution (pseudo_inverse) from the SVD of X scaled by one power of two per
    problem; warns where that drops dimensions X has once its columns are scaled (``_warn_truncated``), and with
    ``warn`` where X is rank-deficient (a RankDeficientWarning: rank and condition estimate, route "auto")."""
    Xu, Yu, kx, ky = _uniformly_scaled(X, Y)
    U, s, V = _svd_factors(Xu)
    if warn:
        used = np.isfinite(s).sum(axis=-1)
        short = used < min(X.shape[-2:])
        if short.any():
            where, worst = _where(short, whole=False)
            w = np.unravel_index(int(np.argmin(np.where(short, used, X.shape[-1] + 1))), short.shape)
            values = np.linalg.svd(Xu[w], compute_uv=False)  # that problem's singular values, none dropped
            cond = float(values[0] / values[-1]) if values[-1] > 0 else math.inf
            _warn_rank(int(used[w]), X.shape[-1], cond, where, worst)
    _warn_truncated(route, X, np.isfinite(s).sum(axis=-1))
    return _unscale(_svd_solve(U, s, V, Yu), _shift(kx, ky), "the least-squares solution")


def _svd_solve(U, s, V, Y):
    return _printed("svd")(U, s, V, Y)


def _qr_solve(Q, R, Y):
    return _printed("qr")(Q, R, Y)


def _eigh_minimum_norm(X, Y, route="eigh"):
    """As _minimum_norm, by the eigh identity (gram_route with pseudo_inverse): eigenvalues of XᵀX under the rank
    tolerance dropped, which on an ill-conditioned X drops dimensions X has (then it warns)."""
    Xu, Yu, kx, ky = _uniformly_scaled(X, Y)
    G, XtY = _gram(Xu, Yu)
    lam, V = _eigh_factors(G, max(X.shape[-2:]))
    _warn_truncated(route, X, np.isfinite(lam).sum(axis=-1))
    return _unscale(_printed("eigh")(V, lam, XtY), _shift(kx, ky), "the least-squares solution")


class AccuracyWarning(UserWarning, RuntimeWarning):
    """A route could not give the least-squares solution of the data: "eigh" or "cholesky" truncated the answer or
    lose digits to cond(X)², or a minimum-norm answer dropped columns independent once scaled. Both a UserWarning
    and a RuntimeWarning, so that a filter for either catches it."""


def _warn(message):
    """warnings.warn(message, AccuracyWarning), attributed to the first caller outside this module."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame, level = frame.f_back, level + 1
    warnings.warn(message, AccuracyWarning, stacklevel=level)


def _where(mask, whole=True):
    """How a warning counts the problems of ``mask`` (of the whole stack, or of a part of it), and how it says that
    the figures are the worst problem's: both empty for one problem."""
    if mask.ndim == 0 or mask.size == 1 and not whole:
        return "", ""
    return f" in {int(mask.sum())}{f' of {mask.size}' if whole else ''} problems", " (the worst of them)"


def _warn_truncated(route, X, used):
    """Warn where an answer used fewer dimensions (``used``, per problem) than X has once its columns are scaled
    (its numerical rank from the SVD): the answer is then truncated, not the least-squares solution. That happens
    on the Gram routes when X is full-rank but so ill-conditioned that XᵀX loses its smallest eigenvalues, and
    on a rank-deficient X whose columns' scales differ so much that some fall under the rank tolerance of X."""
    if (used == min(X.shape[-2:])).all():  # no rank is higher
        return
    s = np.linalg.svd(_times_power_of_two(X, -_max_abs_exponents(X)[..., None, :]), compute_uv=False)
    rank = (s > s[..., :1] * max(X.shape[-2:]) * _EPS).sum(axis=-1)
    truncated = used < rank
    if not truncated.any():
        return
    cond = s[..., 0] / np.take_along_axis(s, np.maximum(rank - 1, 0)[..., None], axis=-1)[..., 0]
    w = np.unravel_index(int(np.argmax(np.where(truncated, cond, -1.0))), truncated.shape)
    if route in ("eigh", "cholesky"):
        why = ("XᵀX, whose condition is the square of X's, lost its smallest eigenvalues in float64; route='auto' "
               "gives the least-squares solution (and 'qr' or 'svd' one to their accuracy)")
    else:
        why = ("X is rank-deficient and its columns' scales differ so much that the minimum-norm solution of X as "
               "given drops columns that are independent once scaled; rescale those columns, or drop dependent ones")
    where, worst = _where(truncated, whole=False)
    _warn(f"route {route!r} truncated the answer{where}: it used rank {int(used[w])} where X (its columns scaled) has "
          f"rank {int(rank[w])}, condition estimate {float(cond[w]):.1e}{worst}: {why}")


def _warn_inaccurate(route, cond2):
    """Warn where a Gram route's error to first order, cond(X D⁻¹)² eps (``cond2`` per problem, D the column
    scales; not finite where the problem was rank-deficient, which _warn_truncated judges), exceeds _GRAM_RISK."""
    risky = np.isfinite(cond2) & (cond2 * _EPS > _GRAM_RISK)
    if risky.any():
        c2 = float(np.max(np.where(risky, cond2, -1.0)))
        where, worst = _where(risky)
        _warn(f"route {route!r}{where}: condition estimate cond(X)² = {c2:.1e}{worst}, its columns scaled, "
              f"so its error may reach cond² eps = {c2 * _EPS:.0e} of the coefficients; route='auto' gives the "
              f"least-squares solution to full accuracy")


def _route_eigh(X, Y, route="eigh"):
    G, XtY, kx, ky = _scaled_gram(X, Y)
    lam, V = _eigh_factors(G, max(X.shape[-2:]))
    deficient = np.isinf(lam).any(axis=-1)
    _warn_inaccurate(route, np.where(deficient, np.inf, lam[..., -1] / lam[..., 0]))
    return _full_rank_or_minimum_norm(X, Y, _printed("eigh")(V, lam, XtY), deficient, kx, ky,
                                      lambda X, Y: _eigh_minimum_norm(X, Y, route))


def _cholesky_solve(C, XtY):
    return _printed("cholesky")(C, XtY)


def _cholesky_factors(G, size):
    """(C, deficient, cond²) for G = CCᵀ (any batch shape): C the identity where G has no numerical factor or a
    pivot falls under the rank tolerance (``deficient``), cond² the pivot estimate (``_pivot_estimate``)."""
    stack = G.reshape((-1,) + G.shape[-2:])
    C, relative = _cholesky_each(stack)
    deficient = _rank_deficient(C, size) | ~(relative > 0).all(axis=0)
    C[deficient] = np.eye(G.shape[-1])
    return C.reshape(G.shape), deficient.reshape(G.shape[:-2]), _pivot_estimate(relative).reshape(G.shape[:-2])


def _route_cholesky(X, Y):
    G, XtY, kx, ky = _scaled_gram(X, Y)
    C, deficient, cond2 = _cholesky_factors(G, max(X.shape[-2:]))
    _warn_inaccurate("cholesky", np.where(deficient, np.inf, cond2))
    return _full_rank_or_minimum_norm(X, Y, _cholesky_solve(C, XtY), deficient, kx, ky,
                                      lambda X, Y: _route_eigh(X, Y, "cholesky"))  # minimum norm (pseudo_inverse)


def _rank_deficient(C, size):
    """Per problem: a Cholesky pivot under the rank tolerance of the Gram matrix."""
    pivots = np.diagonal(C, axis1=-2, axis2=-1) ** 2
    return (pivots <= pivots.max(axis=-1, keepdims=True) * size * _EPS).any(axis=-1)


def _svd_factors(X):
    """X = USVᵀ; singular values under the rank tolerance become +inf, so S⁻¹ is 0 there."""
    U, s, Vt = np.linalg.svd(X, full_matrices=False)
    tol = s[..., :1] * max(X.shape[-2:]) * _EPS
    return U, np.where(s > tol, s, np.inf), np.swapaxes(Vt, -1, -2)


def _route_svd(X, Y):
    """The svd route on the column-scaled data, so that no column falls under the rank tolerance for its scale."""
    Xs, Ys, kx, ky = _scaled(X, Y)
    U, s, V = _svd_factors(Xs)
    deficient = np.isinf(s).any(axis=-1) | (X.shape[-2] < X.shape[-1])
    return _full_rank_or_minimum_norm(X, Y, _svd_solve(U, s, V, Ys), deficient, kx, ky, _minimum_norm)


def _qr_each(X):
    """X = QR for every problem of a stack, and which of them are rank-deficient (R numerically singular, or
    fewer rows than columns): for those the SVD gives the minimum-norm solution."""
    Q, R = np.linalg.qr(X)
    d = np.abs(np.diagonal(R, axis1=-2, axis2=-1))
    deficient = (d <= d.max(axis=-1, keepdims=True) * max(X.shape[-2:]) * _EPS).any(axis=-1)
    return Q, R, deficient | (X.shape[-2] < X.shape[-1])


def _route_qr(X, Y):
    """The qr route on the column-scaled data (as _route_svd); the SVD where X is rank-deficient."""
    if X.shape[-2] < X.shape[-1]:
        return _minimum_norm(X, Y, "qr")
    Xs, Ys, kx, ky = _scaled(X, Y)
    Q, R, deficient = _qr_each(Xs)
    if deficient.any():
        R = np.where(deficient[..., None, None], np.eye(R.shape[-1]), R)  # replaced below: no division by 0
    return _full_rank_or_minimum_norm(X, Y, _qr_solve(Q, R, Ys), deficient, kx, ky,
                                      lambda X, Y: _minimum_norm(X, Y, "qr"))


# --- auto: exact scaling, condition estimates, refinement ----------------------------------

_SPLIT = 134217729.0  # 2**27 + 1: Dekker's splitter
_EXACT_LIMIT = 400_000  # one problem with up to this many products is small (its refinement is affordable)
_FSUM_LIMIT = 1_024  # up to this many products, refinement sums are exactly rounded (math.fsum); above, in
# extended precision (long double): exactly rounded sums cost a Python call per row (about 120 times lstsq at
# 1,000 × 10), and the NIST StRD sets (at most 902 products) stay bit for bit
_BLOCK_BYTES = 1 << 22  # row blocks of about 4 MiB: a block's residual is reused while it is in cache


def _split(a):
    """a = high + low exactly with 26 significant bits in ``high`` and in ``low`` (Dekker's splitting): a product
    of two 26-bit numbers, or of a 26-bit and a 27-bit one, is exact in float64."""
    c = _SPLIT * a
    high = c - (c - a)
    return high, a - high


def _two_prod(a, b):
    """Elementwise a*b = p + e exactly (Dekker's product; arrays or Python floats)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _dot2(a, b):
    """Σ a_i b_i of two lists of floats as an unevaluated sum hi + lo, to about eps² of Σ|a_i b_i| (every product
    split exactly by _two_prod, the terms summed by math.fsum): tiny problems' accurate dot product."""
    terms = [term for x, y in zip(a, b, strict=True) for term in _two_prod(x, y)]
    hi = math.fsum(terms)
    terms.append(-hi)
    return hi, math.fsum(terms)


def _sum2(A):
    """The sum of A over its first axis as an unevaluated sum (hi, lo), to about 4 n² log₂(n) eps² of max|A| (Rump,
    Ogita and Oishi's extraction): A = high + rest exactly, every ``high`` a multiple of ulp(σ)/2 for one power of
    two σ over 2n max|A|, so that their sum (under σ) is exact in any order; the rests, each under ulp(σ), are
    summed in float64. The summed axis first and A in C order: every reduction is n elementwise operations on
    whole rows (a short contiguous summed axis costs NumPy a loop per row instead, 20 times slower)."""
    A = np.ascontiguousarray(A)
    top = np.abs(A).max(axis=0)
    sigma = np.ldexp(1.0, np.frexp(top)[1] + A.shape[0].bit_length())  # a power of two over 2 n max|A|
    high = (sigma + A) - sigma
    first = high.sum(axis=0)
    small = (A - high).sum(axis=0)
    hi = first + small
    return hi, (first - hi) + small


def _dot2_stack(m, beta):
    """mᵀβ (m (..., p), β (..., p, k)) as an unevaluated sum (hi, lo) of shape (..., k), to about eps² (every
    product split exactly by _two_prod, the 2p terms summed by _sum2): the terms laid out (2p, ..., k), so that
    every pass is an elementwise operation on whole rows. mβ of a stack's centred gradients (_centred_gradient)
    and of the intercept's correction (_auto_stack_intercept)."""
    m, beta = np.ascontiguousarray(np.moveaxis(m, -1, 0)), np.ascontiguousarray(np.moveaxis(beta, -2, 0))
    products, errors = _two_prod(m[..., None], beta)  # C order like their arguments (a ufunc keeps the layout)
    return _sum2(np.concatenate((products, errors), axis=0))


def _centring(X, squares, u=None):
    """(Xc, m, v) with X = Xc + v mᵀ exactly where a column of some problem lies mostly along the direction u (the
    ones vector where ``u`` is None; √w for weighted rows): its coefficient on u takes at least half its squared
    norm (uncentred data, an intercept column); else None. m (shape (..., p)) holds the coefficients of X's
    columns on v, and Xc = X − v mᵀ is small and exact for those columns (Sterbenz: entries within a factor 2 of
    the product). v is u itself for the ones vector, with m the column means; else u and m are rounded to 26
    bits (_split), so that v mᵀ is exact: X less a direction within 2⁻²⁶ of u's."""
    if X.ndim == 2:  # one problem: the test and the coefficients on Python floats (NumPy's scalar calls cost more)
        n = len(X)
        v = None if u is None else _split(u)[0]
        # the column sums as a product with the ones vector: a BLAS call, not a strided reduction
        along = (np.ones(n) if v is None else v[:, 0]).dot(X).tolist()
        length = n if v is None else float(v[:, 0].dot(v[:, 0]))
        columns = squares.tolist() if isinstance(squares, np.ndarray) else squares
        if not any(a * a >= 0.5 * length * q for a, q in zip(along, columns, strict=True)):
            return None
        m = [a / length for a in along]
        if v is None:
            m = np.array(m)
            return X - m, m, None
        m = np.array([_split(a)[0] for a in m])  # 26 bits
        product = v * m
        return np.subtract(X, product, out=product), m, v
    if u is None:  # the column sums as a product with the ones vector: a BLAS call, not a strided reduction
        along, length = np.ones(X.shape[-2]) @ X, X.shape[-2]
    else:
        u = _split(u)[0]
        along, length = (np.swapaxes(u, -1, -2) @ X)[..., 0, :], (u * u).sum(axis=-2)
    if not (along * along >= (0.5 * length) * squares).any():
        return None
    m = along / length
    if u is None:
        return X - m[..., None, :], m, None
    m = _split(m)[0]
    product = u * m[..., None, :]
    return np.subtract(X, product, out=product), m, u


def _centred_gradient(Xc, m, v, Y, beta):
    """Xᵀ(Y − Xβ) with X = Xc + v mᵀ (_centring): the residual Y − Xcβ − v(mβ) with mβ to about eps² (_dot2,
    _two_prod, _sum2: its rounding would shift every entry of r alike, and m Σr would add them up) and, for a
    26-bit v, its product with mβ's leading 26 bits (exact) and with the rest (2⁻²⁶ of mβ, rounded at eps of
    itself); then Xcᵀr + m vᵀr. On uncentred
    data float64 products Xᵀ(Y − Xβ) round at eps |X||β| in the residual, the mean's share, which Xc and m keep
    apart: the residual then rounds at eps(|r| + |Xc||β|) (issue 30: auto up to 1,000 times lstsq's error
    without them, on an intercept column and columns sharing an offset)."""
    if Xc.ndim == 2:  # one problem: Python's exact sums cost less than the vectorised extraction
        means = m.tolist()
        sums = [_dot2(means, column) for column in beta.T.tolist()]
        if v is None:
            residual = (Y - np.array([h for h, _ in sums])) - Xc.dot(beta)
            residual -= np.array([t for _, t in sums])
            along = residual.sum(axis=0)
        else:  # v times the leading 26 bits of mβ is exact; the rest, 2⁻²⁶ of it, rounds at eps of itself
            high = [_split(h)[0] for h, _ in sums]
            residual = (Y - v * np.array(high)) - Xc.dot(beta)
            residual -= v * np.array([(h - g) + t for (h, t), g in zip(sums, high, strict=True)])
            along = v[:, 0].dot(residual)
        return Xc.T.dot(residual) + np.multiply.outer(m, along)
    hi, lo = _dot2_stack(m, beta)
    hi, lo = hi[..., None, :], lo[..., None, :]
    if v is None:
        residual = (Y - hi) - Xc @ beta
        residual -= lo
    else:  # v times the leading 26 bits of mβ is exact; the rest, 2⁻²⁶ of it, rounds at eps of itself
        high = _split(hi)[0]
        residual = (Y - v * high) - Xc @ beta
        residual -= v * ((hi - high) + lo)
    # the component along v: float64 sums, whose rounding (about eps Σ|r|) is that of the residual's own entries
    along = residual.sum(axis=-2) if v is None else (np.swapaxes(v, -1, -2) @ residual)[..., 0, :]
    return np.swapaxes(Xc, -1, -2) @ residual + m[..., :, None] * along[..., None, :]


def _row_sums(*parts):
    """Exactly rounded sums along the last axis of the concatenated parts."""
    return np.array(list(map(math.fsum, np.concatenate(parts, axis=-1).tolist())))


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
    """Xᵀ(Y − Xβ) in float64 BLAS products, a block of rows (one tall X) or of problems (a stack) at a time: the
    extra memory is one block, and both products over a block are made while it is in cache."""
    if X.ndim > 2:
        out = np.empty(Y.shape[:1] + Y.shape[2:] + X.shape[2:])  # (batch, k, p): (RᵀX)ᵀ, one product not two

        def work(block):
            residual = X[block] @ beta[block]
            np.subtract(Y[block], residual, out=residual)
            np.matmul(residual.swapaxes(-1, -2), X[block], out=out[block])

        _each_block(work, _stack_blocks(X))
        return out.swapaxes(-1, -2)
    step = _block_rows(X.shape[-1] + Y.shape[-1])
    if X.shape[0] <= step:
        return X.T @ (Y - X @ beta)
    parts = []
    for start in range(0, X.shape[0], step):
        block = X[start : start + step]
        parts.append(block.T @ (Y[start : start + step] - block @ beta))
    return np.sum(parts, axis=0)


_SPLIT_BITS = 20  # _gradient_split: X's high part has about this many bits below its column's scale


def _grid_split(A, grid, out=None):
    """A = high + low exactly, ``high`` A rounded to a multiple of ``grid`` (powers of two, broadcast against A;
    |A| must be under grid·2⁵¹): σ = 1.5·2⁵²·grid puts A + σ in one binade whose ulp is the grid. ``out``: two
    arrays of A's shape to write high and low into (reused block after block: no page faults)."""
    sigma = 1.5 * 2.0**52 * grid
    high, low = (np.empty(A.shape), np.empty(A.shape)) if out is None else out
    np.add(A, sigma, out=high)
    high -= sigma
    np.subtract(A, high, out=low)
    return high, low


def _gradient_split(X, Y, beta, d):
    """Xᵀ(Y − Xβ) of one tall X, about as accurate as in extended precision, from float64 BLAS products: X, β and
    the residual are split into high parts on common grids and exact low parts (_grid_split), so that the
    products of the high parts are exact in any order (Ogita, Rump and Oishi's error-free splitting, with the
    grids chosen so that every partial sum fits in 53 bits), and only the small products of low parts round.
    ``d``: powers of two at or above half of X's column norms (|x_ij| ≤ 2d_j), so that X D⁻¹ has one grid.
    Per row block: the residual Y − X_hβ_h − (Xβ_l + X_lβ_h), with X_hβ_h exact, and then X_hᵀr_h exact (summed
    across blocks with TwoSum) plus X_hᵀr_l + X_lᵀr. Its error, about eps |X|ᵀ|r| from rounding the residual to
    float64 (float64 products round it at eps |X||β|, far more where |r| ≪ |X||β|), is what bounds the accuracy
    of refinement at cond(X) well over 1e4 (about 6 float64 passes over X; the long double products of the same
    gradient cost about 4 times that; tests/test_numerics_fast.py checks it against the exact gradient)."""
    n, p = X.shape
    step = _block_rows(2 * (p + Y.shape[-1]))
    bits_beta = 52 - _SPLIT_BITS - max(1, (p - 1).bit_length())  # p products of 2^(_SPLIT_BITS+1+bits) units
    bits_r = 52 - _SPLIT_BITS - max(1, (min(step, n) - 1).bit_length())  # a block's sums over its rows likewise
    scaled = beta * d[:, None]  # D β: one grid for every column of X D⁻¹
    top = np.abs(scaled).max(axis=0, keepdims=True)
    high, _ = _grid_split(scaled, np.ldexp(1.0, np.frexp(np.where(top > 0, top, 1.0))[1] - bits_beta))
    beta_h = high / d[:, None]
    beta_l = beta - beta_h  # both exact
    grid = d * 2.0**-_SPLIT_BITS  # X's blocks split into two buffers, reused block after block
    buffers = np.empty((2, min(step, n), p))
    hi, lo = np.zeros(beta.shape), np.zeros(beta.shape)
    for start in range(0, n, step):
        block, Yb = X[start : start + step], Y[start : start + step]
        Xh, Xl = _grid_split(block, grid, (buffers[0, : len(block)], buffers[1, : len(block)]))
        r = (Yb - Xh @ beta_h) - (block @ beta_l + Xl @ beta_h)
        top = np.abs(r).max(axis=0, keepdims=True)
        rh, rl = _grid_split(r, np.ldexp(1.0, np.frexp(np.where(top > 0, top, 1.0))[1] - bits_r))
        exact = Xh.T @ rh
        total = hi + exact  # TwoSum: hi + lo carries the exact parts' sum to about eps²
        back = total - hi
        lo += (hi - (total - back)) + (exact - back)
        hi = total
        lo += Xh.T @ rl + Xl.T @ r
    return hi + lo

def _largest(A):
    """max |A| of each problem of a stack (fast across many small problems), or of one problem."""
    if A.ndim == 2:
        return np.abs(A).max()
    return np.abs(np.ascontiguousarray(A.reshape(-1, A.shape[-2] * A.shape[-1]).T)).max(axis=0)


def _refine_gram(X, Y, beta, C, d=None, rate=1.0, floor=_EPS, active=None, steps=12, centre=False, u=None):
    """Preconditioned gradient steps β ← β + D⁻¹(CCᵀ)⁻¹D⁻¹Xᵀ(Y − Xβ) (preconditioned_gd, with CCᵀ ≈ D⁻¹XᵀXD⁻¹),
    the residuals and gradients float64 BLAS products. Stops when the next correction would be under eps of β
    or under ``floor`` (the corrections shrink geometrically; callers pass κ eps, the forward error of a
    backward stable solver), or when the correction stopped halving (the rounding of the residual is then all
    that is left). X may hold a batch; D (the column scaling, powers of two)
    defaults to I; ``rate`` bounds how much each correction shrinks the error (from the condition estimate);
    ``active`` (a mask over the batch) names the problems refined, the others keep β (a refined subset
    without copying X). ``centre``: where columns lie mostly along u (the ones vector for None, √w for weighted
    rows), the gradients are _centred_gradient's (a copy of X, centred).
    """
    centred = _centring(X, np.einsum("...ij,...ij->...j", X, X), u) if centre else None
    if centred is not None:  # the centred gradient's rounding is far under κ eps: on to the rounding of β
        floor = _EPS
    previous = np.inf
    for _ in range(steps):
        gradient = _gradient(X, Y, beta) if centred is None else _centred_gradient(*centred, Y, beta)
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


def _qr_or_svd(X, Y, exact=True, u=None):
    """A stack of problems the Gram route cannot take: QR of the column-scaled data (``_scaled``) with refinement, or,
    where X is rank-deficient, the minimum-norm solution of X itself (_minimum_norm: it is not invariant under
    scaling columns apart). Refinement sums are exactly rounded when the refined problems hold few products together
    (_FSUM_LIMIT), else in extended precision; without ``exact`` (route "auto") the QR answer is not refined and a
    RankDeficientWarning names the rank-deficient problems, and where columns lie mostly along u (_centring: the
    ones vector for None, √w for weighted rows) one step of the corrected semi-normal equations with the centred
    gradient (RᵀR = XᵀX to QR's accuracy) takes the QR answer near the solution of the data as given: plain QR
    was up to 700 times lstsq's error on an intercept column and columns sharing an offset of 1e4 (issue 30).
    NaN and infinity in the data are named here."""
    Xs, Ys, kx, ky = _scaled(X, Y)
    Q, R, deficient = _qr_each(Xs)
    beta = np.empty(X.shape[:-2] + (X.shape[-1], Y.shape[-1]))
    if deficient.any():
        beta[deficient] = _minimum_norm(X[deficient], Y[deficient], "auto", warn=not exact)
    full = np.flatnonzero(~deficient)
    shift = _shift(kx, ky)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflowing solution is named by _unscale
        if not exact:
            if len(full):
                beta_s = _qr_solve(Q[full], R[full], Ys[full])
                Xf = Xs[full]
                centred = _centring(Xf, np.einsum("...ij,...ij->...j", Xf, Xf), None if u is None else u[full])
                if centred is not None:
                    g = _centred_gradient(*centred, Ys[full], beta_s)
                    z = _solve_triangular(R[full], g, lower=True, transpose=True)
                    beta_s = beta_s + _solve_triangular(R[full], z, lower=False, transpose=False)
                beta[full] = _unscale(beta_s, shift[full], "the least-squares solution")
        elif X[0].size * Y.shape[-1] * len(full) <= _FSUM_LIMIT:
            for i in full:
                beta_s = _solve_qr_refined(Xs[i], Ys[i], Q[i], R[i], True)
                beta[i] = _unscale(beta_s, shift[i], "the least-squares solution")
        elif len(full):
            beta_s = _solve_qr_refined(Xs[full], Ys[full], Q[full], R[full], False)
            beta[full] = _unscale(beta_s, shift[full], "the least-squares solution")
    return beta


class _Across:
    """Lower triangular factors of a stack of problems, packed entry-major: row ``start(j) + i - j`` of
    ``packed`` (i >= j) is entry (i, j) of every problem's factor, one vector over the stack, and each column's
    entries are consecutive rows. Factoring and solving then cost a few vector operations per column across
    the whole stack, where LAPACK costs one call per problem: for small p the calls cost more than the
    arithmetic. ``_solve_triangular`` accepts it wherever it accepts a stack of factors."""

    __slots__ = ("packed", "p")

    def __init__(self, packed, p):
        self.packed, self.p = packed, p

    def start(self, j):
        """The row of ``packed`` holding entry (j, j)."""
        return j * self.p - j * (j - 1) // 2

    def column(self, j, first=None):
        """Entries (first.., j) of every factor (first defaults to j), as a view (rows, batch)."""
        offset = self.start(j) - j
        return self.packed[offset + (j if first is None else first) : offset + self.p]

    def row(self, i):
        """Entries (i, 0..i-1) of every factor, as a copy (i, batch)."""
        return self.packed[[self.start(t) + i - t for t in range(i)]]

    def diagonal(self):
        """Entries (j, j) of every factor, (p, batch)."""
        return self.packed[[self.start(j) for j in range(self.p)]]

    def __getitem__(self, index):
        return _Across(self.packed[:, index], self.p)

    def dense(self):
        """The factors as a stack (batch, p, p)."""
        out = np.zeros((self.packed.shape[1], self.p, self.p))
        for j in range(self.p):
            out[:, j:, j] = self.column(j).T
        return out


_ACROSS_COLUMNS = 32  # stacks of problems with up to this many columns are factored across the stack ...
_ACROSS_BATCH = 128  # ... when they hold at least this many problems (measured: fewer favour LAPACK's calls)


def _across(batch, p):
    """Whether a stack of ``batch`` problems with p columns is factored across the stack."""
    return p <= _ACROSS_COLUMNS and batch >= _ACROSS_BATCH


def _cholesky_each(G):
    """Cholesky factors of a stack, and per problem and column the squared pivot relative to the diagonal of G,
    (p, batch): not positive (or NaN) where that problem has no factor, which is then the identity and must not
    be used.

    Packed lower triangles (``_Across``, from ``_gram`` for small problems) are factored across the stack, in
    place. Otherwise LAPACK factors the whole stack in one call; when any problem has no factor that call fails
    as a whole, and the stack is factored across instead, which marks the failing problems: one failing problem
    never sends the stack down a slower route.
    """
    if isinstance(G, _Across):
        return _cholesky_across(G)
    diagonal = np.diagonal(G, axis1=-2, axis2=-1).T
    if (diagonal > 0).all():
        try:
            C = np.linalg.cholesky(G)
        except np.linalg.LinAlgError:
            pass
        else:
            return C, np.diagonal(C, axis1=-2, axis2=-1).T ** 2 / diagonal
    C, relative = _cholesky_across(_pack(G))
    return C.dense(), relative


def _packed_index(p):
    """The flat positions (i·p + j) of the lower triangle of a p×p matrix, column after column: the order in which
    a stack's matrices are packed entry-major (``_Across``)."""
    return [i * p + j for j in range(p) for i in range(j, p)]


def _pack(G):
    """The lower triangles of a stack (batch, p, p), packed entry-major (``_Across``)."""
    batch, p = len(G), G.shape[-1]
    index = _packed_index(p)
    return _Across(np.ascontiguousarray(np.take(G.reshape(batch, p * p), index, axis=1).T), p)


def _cholesky_across(G):
    """Lower Cholesky factors of the packed lower triangles G (``_Across``), in place, one column at a time for
    all problems at once; and per problem and column the squared pivot relative to the diagonal of G,
    (p, batch): not positive (or NaN) where that problem has no factor. A failing pivot spoils only its own
    problem, which is given the identity as its factor (harmless where it is not used)."""
    p = G.p
    relative = np.empty((p, G.packed.shape[1]))
    with np.errstate(invalid="ignore", divide="ignore"):  # a failing problem's NaN stays in its own entries
        for j in range(p):
            column = G.column(j)
            diagonal = column[0].copy()
            for t in range(j):  # left-looking: subtract the known columns' contributions
                known = G.column(t, j)
                column -= known * known[0]
            np.divide(column[0], diagonal, out=relative[j])
            np.sqrt(column[0], out=column[0])
            column[1:] /= column[0]
        failing = ~(relative > 0).all(axis=0)
    if failing.any():  # the identity, packed column after column
        G.packed[:, failing] = np.array([1.0 if i == j else 0.0 for j in range(p) for i in range(j, p)])[:, None]
    return G, relative


def _substitute_across(C, B, lower, transpose):
    """op(C)⁻¹ B for packed lower factors C (``_Across``) and B (batch, p, k), op(C) = Cᵀ if transpose; a few
    vector operations per row across the stack."""
    if lower == transpose:
        raise ValueError("an entry-major factor is lower triangular: solve with C (lower) or Cᵀ (upper)")
    p = C.p
    x = np.array(np.moveaxis(B, 0, -1), order="C")  # (p, k, batch), a copy solved in place one row at a time
    for i in range(p) if lower else range(p - 1, -1, -1):
        if lower and i:
            x[i] -= np.einsum("tb,tkb->kb", C.row(i), x[:i])
        elif not lower and i < p - 1:
            x[i] -= np.einsum("tb,tkb->kb", C.column(i, i + 1), x[i + 1 :])  # Cᵀ's row i is C's column i
        x[i] /= C.column(i)[0]
    return np.moveaxis(x, -1, 0)  # (batch, p, k), entry-major underneath: the next solve copies it cheaply


def _pivot_estimate(relative):
    """An estimate of cond(X D⁻¹)² per problem (D the column norms) from the squared Cholesky pivots of XᵀX
    relative to its diagonal, (p, batch), times p to err on the safe side; +inf where a pivot is not positive."""
    with np.errstate(divide="ignore", invalid="ignore"):
        cond2 = len(relative) * relative.max(axis=0) / relative.min(axis=0)
    return np.where((relative > 0).all(axis=0) & np.isfinite(cond2), cond2, np.inf)


def _cholesky_estimate(G):
    """Cholesky factors of every G in a stack, per problem an estimate of cond(X D⁻¹)² (+inf where G has no
    numerical Cholesky factor: that problem's factor is then the identity and must not be used)."""
    C, relative = _cholesky_each(G)
    return C, _pivot_estimate(relative)


_TRUST = 2.5e-14  # a small problem keeps the Cholesky answer when every coefficient's estimated error is under this
_GRAM_RISK = 1e-6  # a batch's problem takes the Gram route when its estimated cond(X D⁻¹)² eps is under this ...
_REFINE_RISK = 1e-13  # ... refined by preconditioned gradient steps when it is over this
_SPLIT_GRADIENT_RISK = 1e-8  # ... and over this, its last step has an error-free split gradient (_gradient_split)
_LARGE_GRAM_RISK = 1e-2  # one large problem: its exact cond(X D⁻¹)² eps under this takes the refined Gram route


def _trusted(columns, squares, risk):
    """Whether every coefficient's estimated error, risk·max|Dβ| (D the column norms), is under _TRUST·|Dβ|;
    ``columns`` are those of β (an iterable of sequences of floats)."""
    norms = [math.sqrt(v) for v in squares]
    for column in columns:
        scaled = [abs(b) * d for b, d in zip(column, norms, strict=True)]
        # the sum of these non-negative numbers is finite only when every one is (NaN and infinity propagate)
        if not (math.isfinite(sum(scaled)) and risk * max(scaled) <= _TRUST * min(scaled)):
            return False
    return True


def _auto_small_scaled(X, Y):
    """One small problem whose data must be scaled first (route "auto"): the Cholesky answer of the column-scaled
    data (``_scaled``) where trusted, else refined exactly (_small_gram),
    the QR path on the data as given where the Gram route does not settle (it scales them the same way)."""
    Xs, Ys, kx, ky = _scaled(X, Y)
    beta = _small_gram(Xs, Ys, Xs.T.dot(Xs), Xs.T.dot(Ys))
    if beta is None or beta is False:  # False: a column of zeros, or XᵀY tiny after all (the data are scaled)
        return _qr_or_svd(X[None], Y[None])[0]
    return _unscale(beta, _shift(kx, ky), "the least-squares solution")


def _small_gram(X, Y, G, XtY):
    """β of one small problem from the Cholesky factor of G = XᵀX: trusted, or refined exactly; False where G's
    diagonal or XᵀY are outside the safe range (_cholesky_tiny), None where G has no factor (numerically) or the
    refinement fails."""
    n, p = X.shape
    k = Y.shape[1]
    found = (_cholesky_tiny if p * p * k <= 64 else _cholesky_small)(G, XtY)
    if not found:
        return found
    beta, C, squares, risk = found
    if _trusted(beta.T.tolist(), squares, risk):
        return beta
    # extended-precision steps (None where long double is no wider than double) come close to the exact solution
    # at a tenth of the QR path's cost; where they are affordable, exact gradients finish, from there usually in
    # one step
    refined = _refine_wide(X, Y, beta, C)
    if n * p * k <= _INTEGER_LIMIT:
        refined = _refine_exactly(X, Y, beta if refined is None else refined, C)
    return refined


_INTEGER_LIMIT = 1_024  # products up to which gradients are exact (Python integers): the NIST StRD sets and the like


def _refine_exactly(X, Y, beta, C):
    """β refined by _settle with every gradient Xᵀ(Y − Xβ) exact (Python integers: each float is an integer times a
    power of two) and rounded once: the least-squares solution of the data as given, to the last bit or so.
    None where the steps do not settle or the data hold NaN or infinity (the QR path then names them)."""
    if not (np.isfinite(X).all() and np.isfinite(Y).all() and np.isfinite(beta).all()):
        return None
    n, p = X.shape
    x, x_scale = _integers(X.ravel().tolist())
    rows = [x[i * p : (i + 1) * p] for i in range(n)]
    columns = [x[j::p] for j in range(p)]
    targets = [_integers(column) for column in Y.T.tolist()]

    def gradient(beta):
        out = np.empty(beta.shape)
        for t, (y, y_scale) in enumerate(targets):
            b, b_scale = _integers(beta[:, t].tolist())
            # r = Y − Xβ = (y x_scale b_scale − y_scale Xb) / (y_scale x_scale b_scale), all integers
            lift = x_scale * b_scale
            residual = [yi * lift - y_scale * sum(map(operator.mul, row, b)) for yi, row in zip(y, rows, strict=True)]
            denominator = y_scale * lift * x_scale
            try:
                out[:, t] = [sum(map(operator.mul, column, residual)) / denominator for column in columns]
            except OverflowError:  # a gradient outside the float range: the QR path scales the data first
                return None
        return out

    return _settle(beta, C, gradient)


def _refine_wide(X, Y, beta, C):
    """β refined by _settle with the gradients in extended precision (long double, a 64-bit significand where the
    platform has one; else None and the QR path). Its error is set by that rounding, about 1e-19 of the largest
    scaled coefficient (a few ulps for coefficients of like size), at about a tenth of the QR path's cost."""
    if not _EXTENDED or not (np.isfinite(X).all() and np.isfinite(Y).all() and np.isfinite(beta).all()):
        return None
    Xw, Yw = X.astype(_WIDE), Y.astype(_WIDE)
    return _settle(beta, C, lambda beta: (Xw.T @ (Yw - Xw @ beta.astype(_WIDE))).astype(np.float64))


def _settle(beta, C, gradient, steps=8):
    """The preconditioned gradient steps β ← β + (CCᵀ)⁻¹ gradient(β) (preconditioned_gd) for one small problem,
    C its Cholesky factor (lists or an array). With CCᵀ ≈ XᵀX each step shrinks the error by about the estimated
    cond² eps. β once a correction is under eps of it, or once the corrections stop shrinking within 8 eps; None
    where they stop shrinking above that, where ``gradient`` gives None, or after ``steps`` steps."""
    previous = math.inf
    for _ in range(steps):
        g = gradient(beta)
        if g is None:
            return None
        delta = np.array(_cholesky_solve(C, g.tolist() if isinstance(C, list) else g))
        beta = beta + delta
        size = float(np.max(np.abs(delta) / np.maximum(np.abs(beta), 1e-300)))
        if size <= _EPS:
            return beta
        if size > previous / 2:  # stopped shrinking: down to the rounding of β itself, or not converging
            return beta if size <= 8 * _EPS else None
        previous = size
    return None


_EXTENDED = np.finfo(_WIDE).eps < _EPS  # long double is wider than double here (not on every platform)


_ONE_COLUMN_EXACT = 64  # one column, up to this many rows·targets: the exactly rounded quotient (a few lstsq calls)


def _one_column(X, Y):
    """One column x: β = xᵀY / xᵀx (the definition, with a 1×1 XᵀX) as the least-squares solution of the data as
    given: every float is an integer times a power of two, so both sums are exact in Python integers, and
    Python's division of integers rounds the quotient correctly. An x of zeros gives β = 0 (pseudo_inverse)."""
    x, columns = X[:, 0].tolist(), Y.T.tolist()
    if not (all(map(math.isfinite, x)) and all(math.isfinite(v) for column in columns for v in column)):
        _require_finite(("X", X), ("Y", Y))
    x, x_scale = _integers(x)
    square = sum(v * v for v in x)
    if square == 0:
        return np.zeros((1, Y.shape[1]))
    beta = []
    for column in columns:
        y, y_scale = _integers(column)
        # β = (xᵀy / (x_scale y_scale)) / (xᵀx / x_scale²): one division of exact integers, correctly rounded
        numerator = sum(a * b for a, b in zip(x, y, strict=True))
        try:
            beta.append(numerator * x_scale / (square * y_scale))
        except OverflowError:
            raise ValueError("the least-squares solution does not fit in float64 (overflow); rescale X or Y") from None
        if numerator and abs(beta[-1]) < _TINY_RESULT:
            raise _underflow("the least-squares solution", "float64", _TINY_RESULT)
    return np.array([beta])


def _integers(values):
    """Floats as integers over one common power of two: (integers, that power)."""
    ratios = [v.as_integer_ratio() for v in values]  # denominators are powers of two
    bits = max(denominator.bit_length() for _, denominator in ratios)
    return [numerator << (bits - denominator.bit_length()) for numerator, denominator in ratios], 1 << (bits - 1)


def _cholesky_tiny(G, XtY):
    """(β, C, diagonal of G, estimated cond(X D⁻¹)² eps) from the Cholesky factor C of G = XᵀX in Python floats;
    False where a diagonal entry of G or the largest entry of a column of XᵀY is outside the safe range (or NaN:
    the data must be scaled first); None where a pivot is not positive, or the estimate is _GRAM_RISK or more.
    NaN or infinity elsewhere in XᵀY reaches β,
    which the trust test then rejects. For tiny p, Python floats beat the overhead of LAPACK calls through NumPy;
    the factor is kept as ragged rows (row i holds its first i + 1 entries), which the printed solve reads.
    """
    targets = XtY.ravel().tolist() if XtY.shape[1] == 1 else XtY.tolist()
    if not _targets_in_range(targets):
        return False
    C: list[list[float]] = []
    squares = []
    low, high = math.inf, 0.0  # the extreme squared pivots relative to the diagonal
    for j, given in enumerate(G.tolist()):
        square = given[j]
        if not _SAFE_LOW <= square <= _SAFE_HIGH:  # also false for NaN
            return False
        row: list[float] = []
        for t, other in enumerate(C):
            acc = given[t]
            for s in range(t):
                acc -= row[s] * other[s]
            row.append(acc / other[t])
        pivot = square
        for v in row:
            pivot -= v * v
        if not pivot > 0:
            return None
        row.append(math.sqrt(pivot))
        C.append(row)
        squares.append(square)
        relative = pivot / square
        if relative < low:  # comparisons: cheaper than min() and max() calls
            low = relative
        if relative > high:
            high = relative
    risk = len(C) * _EPS * high / low  # about cond(X D⁻¹)² eps
    if risk >= _GRAM_RISK:
        return None
    if XtY.shape[1] == 1:  # one target: the solves run on a flat list
        return np.array(_cholesky_solve(C, targets))[:, None], C, squares, risk
    return np.array(_cholesky_solve(C, targets)), C, squares, risk


def _targets_in_range(targets):
    """Whether every column of XᵀY (a flat list for one target, else its rows) has its largest entry in
    [_XTY_LOW, _XTY_HIGH] (false for NaN): smaller ones may have underflowed."""
    if not isinstance(targets[0], list):
        top = max(map(abs, targets))
        return _XTY_LOW <= top <= _XTY_HIGH
    return all(_XTY_LOW <= max(map(abs, column)) <= _XTY_HIGH for column in zip(*targets, strict=True))


def _cholesky_small(G, XtY):
    """As _cholesky_tiny, with LAPACK's Cholesky factor and solves (and the diagonal as a list)."""
    squares = G.diagonal().tolist()
    # the sum of these positive numbers is finite only when every one is: NaN and infinity propagate
    if not (min(squares) >= _SAFE_LOW and math.isfinite(sum(squares)) and max(squares) <= _SAFE_HIGH
            and _targets_in_range(XtY.ravel().tolist() if XtY.shape[1] == 1 else XtY.tolist())):
        return False
    try:
        C = np.linalg.cholesky(G)  # the factor of X D⁻¹ is D⁻¹C exactly: the scaling need not be applied
    except np.linalg.LinAlgError:
        return None
    pivots = [c * c / v for c, v in zip(C.diagonal().tolist(), squares, strict=True)]
    risk = len(C) * _EPS * max(pivots) / min(pivots)
    if risk >= _GRAM_RISK:
        return None
    return _cholesky_solve(C, XtY), C, squares, risk


def _tsqr(X, Y=None):
    """R of X = QR, one row block at a time (Q is never formed; the extra memory is one block). With Y: the R of
    [X Y], whose first p rows are [R QᵀY] (the same reflections applied to Y, as Householder least squares does)."""
    width = X.shape[1] + (0 if Y is None else Y.shape[1])
    step = max(1024, 2 * width)  # small blocks: LAPACK's QR of a tall block is fastest in cache (3 times at p = 16)
    R = np.zeros((0, width))
    for start in range(0, X.shape[0], step):
        block = X[start : start + step] if Y is None else np.hstack([X[start : start + step], Y[start : start + step]])
        R = np.linalg.qr(np.concatenate([R, block]), mode="r")
    return R


def _auto_large(X, Y, warn=False):
    """One large problem: the refined Gram route where its exact scaled condition allows, else R of X = QR; on the
    column-scaled data (``_scaled``, a copy of X) where the squared column norms of X or Y leave the safe range.
    ``warn``: a RankDeficientWarning where the minimum-norm solution is returned (route "auto")."""
    if X.shape[0] < X.shape[1]:  # wide: rank-deficient, and the SVD of X is no larger than X
        return _wide_minimum_norm(X, Y) if warn else _minimum_norm(X, Y, "auto")
    G, XtY = _gram(X, Y)
    if _needs_scaling(X, np.diagonal(G)) or _needs_scaling(Y, _column_squares(Y)):
        Xs, Ys, kx, ky = _scaled(X, Y)
        beta = _large_gram(Xs, Ys, *_gram(Xs, Ys), minimum_norm=False)
        if beta is None:  # rank-deficient: the minimum norm is that of X as given
            return _minimum_norm(X, Y, "auto", warn=warn)
        return _unscale(beta, _shift(kx, ky), "the least-squares solution")
    return _large_gram(X, Y, G, XtY, warn=warn)


def _large_gram(X, Y, G, XtY, minimum_norm=True, warn=False):
    """β of one large problem from G = XᵀX and XᵀY (see _auto_large); where X is rank-deficient, the minimum-norm
    solution from the SVD of R, or None if not ``minimum_norm``."""
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
            floor = math.sqrt(risk * _EPS)  # κ eps: a backward stable solver's forward error
            if risk > _SPLIT_GRADIENT_RISK:  # a split step follows and multiplies the error left by under 10 κ² eps:
                floor = max(floor, math.sqrt(_EPS / risk) / 50)  # float64 steps to 1/(50 κ) leave under κ eps / 5
            beta = _refine_gram(X, Y, beta, C, d, rate=10 * risk, floor=floor)
            if risk <= _SPLIT_GRADIENT_RISK:
                return beta
            # float64 gradients leave β off by about cond² eps |X|ᵀ|r| (13 times lstsq's error on 400,000 × 64 with
            # a near-collinear pair, where |r| is large): one step with an error-free split gradient removes it
            # (the step multiplies the error by about κ² eps, under 1e-2 here; 1/100 of lstsq's error after it)
            return beta + _cholesky_solve(C, _gradient_split(X, Y, beta, d) / d[:, None]) / d[:, None]
    # Householder least squares in row blocks: R of [X Y] holds R and QᵀY, and β = R⁻¹QᵀY is backward stable
    # (lstsq's accuracy). Refining it by the semi-normal equations with float64 gradients Xᵀ(Y − Xβ) made it
    # worse: their rounding, about eps |X|ᵀ|r|, moves β by cond² eps |r| / (|X| |β|) (6–18 times lstsq's error
    # at cond 1e8 and 1e5–1e6 rows), a term the orthogonal solve does not have.
    p = X.shape[1]
    R_aug = _tsqr(X, Y)
    R, QtY = R_aug[:p, :p], R_aug[:p, p:]
    if len(R) < p:  # fewer rows than columns: rank-deficient (handled above for the wide X; kept for safety)
        R = np.vstack([R, np.zeros((p - len(R), p))])
    _, s, Vt = np.linalg.svd(R, full_matrices=False)
    if s[-1] > s[0] * max(X.shape) * _EPS:
        beta = _solve_triangular(R, QtY, lower=False, transpose=False)
        # then one step of the corrected semi-normal equations with an error-free split gradient: RᵀR = XᵀX to
        # the accuracy of a QR factorization, so the step multiplies the error by about κ eps, under 1/n here
        # (the rank test above); a backward stable start (error about κ eps) ends near (κ eps)², and the gradient's
        # own error (about eps |X|ᵀ|r|, the residual's rounding) stays far below lstsq's error (1e-12 against 5e-10
        # at cond 1e8, 1e6 × 16). The column norms of X are those of R.
        d = _power_of_two(np.sqrt(np.einsum("ij,ij->j", R, R)))
        return beta + _cholesky_solve(R.T, _gradient_split(X, Y, beta, d))
    if not minimum_norm:
        return None
    lam = np.where(s > s[0] * max(X.shape) * _EPS, s * s, np.inf)  # XᵀX = VΛVᵀ with Λ = S²: pseudo_inverse
    if warn:
        _warn_rank(int(np.isfinite(lam).sum()), p, float(s[0] / s[-1]) if s[-1] > 0 else math.inf)
    V = Vt.T
    return _printed("eigh")(V, lam, XtY)


def _auto_stack(X, Y, exact=True, u=None):
    """A stack of problems, each on its own route (_solve_stack); those whose squared column norms of X or Y leave
    the safe range are solved column-scaled, by themselves (_auto_stack_scaled), and the hard ones by QR."""
    if X.shape[-2] < X.shape[-1]:  # wide: every problem rank-deficient
        return _qr_or_svd(X, Y, exact)
    packed = _across(len(X), X.shape[-1])
    G, XtY = _gram(X, Y, packed)
    scale = _needs_scaling(X, G.diagonal().T if packed else np.diagonal(G, axis1=-2, axis2=-1))
    scale |= _needs_scaling(Y, _column_squares(Y))
    if scale.all():
        return _auto_stack_scaled(X, Y, exact)
    if scale.any():  # solved below; here a harmless identity
        if packed:
            G.packed[:, scale] = np.array([1.0 if i == j else 0.0 for j in range(G.p) for i in range(j, G.p)])[:, None]
        else:
            G[scale] = np.eye(X.shape[-1])
        XtY[scale] = 0.0
    beta, fast, *_ = _solve_stack(X, Y, G, XtY, usable=~scale if scale.any() else None, u=u)
    hard = ~fast & ~scale
    if hard.any():  # ill-conditioned or rank-deficient problems, by themselves
        beta[hard] = _qr_or_svd(X[hard], Y[hard], exact, None if u is None else u[hard])
    if scale.any():
        beta[scale] = _auto_stack_scaled(X[scale], Y[scale], exact)
    return beta


def _auto_stack_scaled(X, Y, exact=True):
    """A stack of problems whose data must be scaled first: _solve_stack on the column-scaled data (``_scaled``),
    the QR path on the data as given for the problems it leaves (it scales them the same way)."""
    Xs, Ys, kx, ky = _scaled(X, Y)
    beta_s, fast, *_ = _solve_stack(Xs, Ys, *_gram(Xs, Ys, _across(len(Xs), Xs.shape[-1])))
    if fast.all():
        return _unscale(beta_s, _shift(kx, ky), "the least-squares solution")
    beta = np.empty(beta_s.shape)
    if fast.any():
        beta[fast] = _unscale(beta_s[fast], _shift(kx[fast], ky[fast]), "the least-squares solution")
    beta[~fast] = _qr_or_svd(X[~fast], Y[~fast], exact)
    return beta


def _solve_stack(X, Y, G, XtY, usable=None, u=None):
    """(β, fast, C, risk) for a stack from G = XᵀX and XᵀY (X and Y themselves, or functions of a mask over the stack,
    None for all, that make those problems' X and Y: only refinement reads them): β from the Cholesky factors where the
    problem is ``fast`` (its pivot estimate under _GRAM_RISK, and ``usable``), refined in float64 where the estimate,
    times how much the columns' scales spread it over the coefficients, is over _REFINE_RISK; the other problems are
    left to the caller (β 0 or meaningless there). C: the Cholesky factors, risk: the estimates cond(X D⁻¹)² eps (for a
    caller's own correction step). The Cholesky factor of XᵀX is that of the column-scaled X times D exactly (D powers
    of two), so the scaling is implicit: only the estimate divides by the diagonal."""
    # the column norms of X, (p, batch...), read before the factoring (packed triangles are factored in place)
    d = np.sqrt(G.diagonal() if isinstance(G, _Across) else np.moveaxis(np.diagonal(G, axis1=-2, axis2=-1), -1, 0))
    C, cond2 = _cholesky_estimate(G)
    risk = cond2 * _EPS
    fast = risk < _GRAM_RISK
    if usable is not None:
        fast &= usable
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # unsafe factors: replaced by the caller
        beta = _cholesky_solve(C, XtY)  # where not fast, C is the identity or unsafe
        # the error of Dβ is about risk |Dβ| (D the column norms), so coefficient j's is risk |Dβ| / d_j: against
        # max|β| that is risk times max|Dβ| / (min d max|β|), over 1 where columns differ in scale (an intercept
        # beside uncentred columns: 100 times lstsq's error where the estimate alone kept the Cholesky answer)
        # (p, batch...): reduced over the leading axis, whole rows at a time (not a NumPy loop per problem)
        top = np.ascontiguousarray(np.moveaxis(np.abs(beta[..., 0]) if beta.shape[-1] == 1 else
                                               np.abs(beta).max(axis=-1), -1, 0))
        spread = (d * top).max(axis=0) / (d.min(axis=0) * top.max(axis=0))  # each coefficient's largest over targets
        # also where the spread is NaN (β = 0); a quarter of _REFINE_RISK: the estimate was 1.5 times short in sweeps
        refine = fast & ~(4 * risk * spread <= _REFINE_RISK)
    worst = float(risk[refine].max()) if refine.any() else 0.0
    rate, floor = 10 * worst, math.sqrt(worst * _EPS)
    if refine.sum() * 4 >= len(refine):  # most problems: refine in place, the others held fixed
        if not fast.all():
            beta[~fast] = 0.0
        # the problems set aside for scaling may overflow in their (discarded) gradients
        with np.errstate(**({} if usable is None else {"over": "ignore", "invalid": "ignore"})):
            beta = _refine_gram(X(None) if callable(X) else X, Y(None) if callable(Y) else Y, beta, C, rate=rate,
                                floor=floor, active=None if refine.all() else refine, centre=True, u=u)
    elif refine.any():
        beta[refine] = _refine_gram(X(refine) if callable(X) else X[refine], Y(refine) if callable(Y) else Y[refine],
                                    beta[refine], C[refine], rate=rate, floor=floor, centre=True,
                                    u=None if u is None else u[refine])
    return beta, fast, C, risk


# --- auto, the fast default (issue 30): backward stable at about lstsq's cost --------------------------------------

_FAST_STEPS = 3  # float64 refinement steps of the Gram answer at most; if they do not settle, Householder QR


class RankDeficientWarning(UserWarning, RuntimeWarning):
    """X is numerically rank-deficient (its numerical rank is under its number of columns and rows): the answer is
    the minimum-norm least-squares solution, as numpy.linalg.lstsq gives; the message names the numerical rank
    and the condition estimate. Route "exact" decides the rank exactly: where X is numerically rank-deficient
    but of full rank exactly (a column equal to a combination of others up to rounding) it warns so and returns
    the exact solution. Both a UserWarning and a RuntimeWarning, so that a filter for either catches it."""


def _warn_rank(rank, columns, cond, where="", worst=""):
    """warnings.warn(..., RankDeficientWarning), attributed to the first caller outside this module."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame, level = frame.f_back, level + 1
    warnings.warn(f"X is rank-deficient{where}: numerical rank {rank} of {columns} columns, condition estimate "
                  f"{cond:.1e}{worst} (singular values under max(n, p) eps of the largest dropped): the minimum-norm "
                  f"least-squares solution is returned, as numpy.linalg.lstsq gives", RankDeficientWarning,
                  stacklevel=level)


def _refine_fast(X, Y, beta, C, risk, squares, u=None):
    """The Gram answer refined by at most _FAST_STEPS preconditioned gradient steps (preconditioned_gd) with float64
    gradients Xᵀ(Y − Xβ) (the corrected semi-normal equations): with CCᵀ ≈ XᵀX each step shrinks the error by about
    the estimated cond² eps (``risk``, under _GRAM_RISK), down to the rounding of the gradient, about a backward
    stable solver's error (Björck). Stops when the next correction would be under κ eps or the corrections stop
    shrinking (the rounding is then all that is left); None where they are still over √eps of β after the last
    step or stopped shrinking there (the estimate was wrong: the caller takes the SVD), or β is not finite.
    Where columns lie mostly along the ones vector (or u, √w for weighted rows: _centring), the gradients are
    centred (_centred_gradient): their rounding is then far under κ eps, and the steps go on to β's own."""
    floor = max(math.sqrt(risk * _EPS), _EPS)  # κ eps: the forward error of a backward stable solver
    rate = 10 * risk
    flat = isinstance(C, list) and beta.shape[1] == 1  # tiny, one target: β and the steps as Python floats, 1-D
    if flat:
        b, y = beta[:, 0], Y[:, 0]
        values = b.tolist()
    previous = math.inf
    centred = _centring(X, squares, u)
    if centred is not None:
        floor = _EPS  # the centred gradient's rounding is far under κ eps: on to the rounding of β
        if flat and u is None:
            Xc, means = centred[0], centred[1].tolist()
        else:
            flat = False
    for _ in range(_FAST_STEPS):
        if flat and centred is not None:
            hi, lo = _dot2(means, values)
            r = (y - hi) - Xc.dot(b)
            r -= lo
            total = float(r.sum())
            g = [v + mj * total for v, mj in zip(Xc.T.dot(r).tolist(), means, strict=True)]
            step = _cholesky_solve(C, g)
            values = [v + d for v, d in zip(values, step, strict=True)]
            b = np.array(values)
            top = max(map(abs, values)) if math.isfinite(sum(values)) else math.nan
            moved = max(map(abs, step))
        elif flat:
            step = _cholesky_solve(C, X.T.dot(y - X.dot(b)).tolist())  # ndarray.dot: less overhead than @ here
            values = [v + d for v, d in zip(values, step, strict=True)]
            b = np.array(values)
            # Python's max skips a NaN that is not first: the sum is finite only where every value is
            top = max(map(abs, values)) if math.isfinite(sum(values)) else math.nan
            moved = max(map(abs, step))
        else:
            g = X.T.dot(Y - X.dot(beta)) if centred is None else _centred_gradient(*centred, Y, beta)
            delta = (np.array(_cholesky_solve(C, g.tolist())).reshape(beta.shape) if isinstance(C, list)
                     else _cholesky_solve(C, g))
            beta = beta + delta
            top, moved = float(np.abs(beta).max()), float(np.abs(delta).max())
        if not math.isfinite(top):  # NaN or infinity (the caller then takes the SVD, which names NaN in the data)
            return None
        size = moved / max(top, 1e-300)
        if not size <= math.sqrt(_EPS) and size > previous / 2:  # not converging (also NaN)
            return None
        following = size * (rate if previous == math.inf else min(rate, size / previous))
        if following <= floor or size > previous / 2:
            return b[:, None] if flat else beta
        previous = size
    if flat:
        beta = b[:, None]
    return beta if size <= math.sqrt(_EPS) * rate else None


def _householder(X, Y, squares=None):
    """One tall problem by Householder QR of [X D⁻¹ Y] (D the column norms as powers of two, exact): R and QᵀY from
    one LAPACK factorization, β = D⁻¹R⁻¹QᵀY, backward stable (lstsq's accuracy class, at about its cost). Where R
    is numerically singular, the minimum-norm solution (pseudo_inverse) of X as given from the SVD of the p×p R D
    (X = Q(RD): X⁺Y = (RD)⁺QᵀY), with a RankDeficientWarning naming the rank and the condition estimate.
    ``squares``: XᵀX's diagonal where the caller has it."""
    n, p = X.shape
    if squares is None:
        squares = np.einsum("ij,ij->j", X, X)
    d = np.ldexp(1.0, np.frexp(np.sqrt(np.where(squares > 0, squares, 1.0)))[1])  # exact powers of two
    A = np.empty((n, p + Y.shape[1]), order="F")  # LAPACK's order: the factorization then copies it once, fast
    np.divide(X, d, out=A[:, :p])
    A[:, p:] = Y
    h = np.linalg.qr(A, mode="raw")[0].T  # Householder vectors under the diagonal, R of [X D⁻¹ Y] on and above
    R, QtY = np.triu(h[:p, :p]), h[:p, p:]
    s = np.linalg.svd(R, compute_uv=False)
    tol = s[0] * max(n, p) * _EPS
    if s[-1] > tol:
        return _solve_triangular(R, QtY, lower=False, transpose=False) / d[:, None]
    U, s_x, Vt = np.linalg.svd(R * d, full_matrices=False)  # R of X as given: the minimum norm is that of X
    kept = s_x > s_x[0] * max(n, p) * _EPS
    _warn_rank(int(kept.sum()), p, float(s[0] / s[-1]) if s[-1] > 0 else math.inf)
    return _svd_solve(U, np.where(kept, s_x, np.inf), Vt.T, QtY)


_LSTSQ_LIMIT = 30_000  # one problem with n·p·(p + k) up to this: one lstsq call (below, _lstsq_small) ...
_LSTSQ_SPREAD = 256.0  # ... where its squared column norms are within this factor (norms within 16)


# NumPy 2's LAPACK gufunc behind numpy.linalg.lstsq (gelsd), called without the wrapper's conversions, errstate and
# copies: at 40 × 3 the wrapper costs a quarter of its 10 µs. None on a NumPy without it (then the wrapper serves).
_GELSD = getattr(getattr(np.linalg, "_umath_linalg", None), "lstsq", None)


def _lstsq_direct(X, Y):
    """numpy.linalg.lstsq(X, Y, rcond=None)'s (β, residuals, rank, s) for float64 X (n×p) and Y (n×k): its gufunc
    where this NumPy has it, inside the caller's errstate (over, invalid and divide ignored); the wrapper where the
    gufunc is missing or signals a LAPACK failure (rank -1 or singular values not finite: the wrapper then raises
    its LinAlgError)."""
    if _GELSD is not None:
        try:
            solved = _GELSD(X, Y, _EPS * max(X.shape), signature="ddd->ddid")
        except (TypeError, ValueError):  # another NumPy's signature: the wrapper
            solved = None
        if solved is not None and solved[2] >= 0 and math.isfinite(sum(solved[3].tolist())):
            return solved
    return np.linalg.lstsq(X, Y, rcond=None)


def _lstsq_small(X, Y, G, u=None):
    """One small tall problem (n·p·(p + k) <= _LSTSQ_LIMIT) by one numpy.linalg.lstsq call (_svd_least_squares:
    backward stable, the minimum-norm solution with a RankDeficientWarning where X is rank-deficient). Measured
    (issue 30, docs/benchmarks.md): at these sizes NumPy's per-call overhead dominates, so the Gram route's several
    calls (Gram, Cholesky, solves, trust test, refinement steps) cost up to 2–3 times one lstsq call where the
    answer is not trusted at once (several targets, near-collinear or rank-deficient X: then lstsq was called
    after them anyway); lstsq alone is lstsq's accuracy (backward stable) at lstsq's cost plus the checks here.
    Only for columns of like scale (norms within a factor 16): lstsq (gelsd) is not invariant under column scaling,
    and where columns differ in scale it loses digits of the small coefficients (NIST StRD Pontius, Norris,
    Wampler, Longley: fewer correct digits than gelsy), which the implicitly scaled Gram route keeps.
    None where a squared column norm of X or Y is outside [_SAFE_LOW, _SAFE_HIGH] (also NaN, infinity, a column of
    zeros): the Gram path then scales the data, or names what is wrong (LAPACK is never handed NaN: it prints to
    stderr); inside, β's scale |Y| / |X| is a normal float, so lstsq's answer cannot have silently under- or
    overflowed, and X has no column of zeros."""
    squares = G.diagonal()  # the squared column norms (G = XᵀX: the caller's, unchecked, in its errstate)
    columns = squares.tolist()
    sizes = columns + Y.T.dot(Y).diagonal().tolist()
    # the sum of these non-negative numbers is finite only when every one is (NaN and infinity propagate)
    if not (math.isfinite(sum(sizes)) and min(sizes) >= _SAFE_LOW and max(sizes) <= _SAFE_HIGH):
        return None
    if not max(columns) <= _LSTSQ_SPREAD * min(columns):  # columns scaled apart: lstsq (not scaling invariant)
        # would lose digits of the small coefficients (NIST Pontius: 6.3 where the Gram route has 13.3), but not
        # where an intercept and an offset are the only difference
        if not _scaled_apart_by_offsets(X, G, columns, u):
            return None
    solved = _lstsq_direct(X, Y)
    if solved[2] == X.shape[1]:  # full numerical rank: lstsq's answer
        return solved[0]
    return _svd_least_squares(X, Y, squares, solved)


def _scaled_apart_by_offsets(X, G, columns, u=None):
    """Whether X's columns differ in scale only by an intercept and a common offset: a column k lies along the
    direction u (the ones vector where ``u`` is None, √w for weighted rows; to 1e-9 by Cauchy–Schwarz) and the
    others less their components along u have squared norms within _LSTSQ_SPREAD of each other and of column k's.
    Then lstsq on X is as accurate as on the centred data (tested: issue 30's uncentred sweeps), where designs
    whose columns differ in scale of their own (NIST Pontius, Wampler, Longley, Norris) still take the Gram route.
    For the ones vector Python floats from XᵀX (its row k is c times the column sums), no pass over X."""
    n = len(X)
    if u is None:  # one loop on Python floats: at these sizes each comprehension costs a microsecond
        first, k = X[0].tolist(), -1
        for j, (c, q) in enumerate(zip(first, columns, strict=True)):
            if abs(n * c * c - q) <= 1e-9 * q:  # a constant column c: its squared norm is n c²
                if k >= 0:
                    return False
                k = j
        if k < 0:
            return False
        # |X_j − 1 x̄_j|² = |X_j|² − n x̄_j² with x̄_j from row k of XᵀX (c times the column sums), to a few digits
        # where it is over 1e-10 of |X_j|² (its rounding is under n eps |X_j|²); else from the centred columns
        scale, low, high, deep = n * first[k], columns[k], columns[k], False
        means = [v / scale for v in G[k].tolist()]
        for j, (q, v) in enumerate(zip(columns, means, strict=True)):
            square = q - n * v * v if j != k else q
            deep = deep or not square > 1e-10 * q
            low, high = min(low, square), max(high, square)
        if not deep:
            return high <= _LSTSQ_SPREAD * low
        centred = X - np.array(means)
        squares = np.einsum("ij,ij->j", centred, centred).tolist()
        squares[k] = columns[k]
        return min(squares) > 0 and max(squares) <= _LSTSQ_SPREAD * min(squares)
    along = u[:, 0].dot(X).tolist()  # uᵀX
    length = float(u[:, 0].dot(u[:, 0]))
    candidates = [j for j, (a, q) in enumerate(zip(along, columns, strict=True))
                  if abs(a * a - length * q) <= 1e-9 * length * q]  # Cauchy–Schwarz: column k along u
    if len(candidates) != 1:
        return False
    k = candidates[0]
    squares = [q - a * a / length for q, a in zip(columns, along, strict=True)]  # |X_j − u m_j|², m_j = uᵀX_j/|u|²
    squares[k] = columns[k]
    return (all(q > 1e-10 * whole for q, whole in zip(squares, columns, strict=True))
            and max(squares) <= _LSTSQ_SPREAD * min(squares))


def _auto_fast_small(X, Y, u=None):
    """One small problem, the fast default: the Cholesky answer where its estimate trusts every coefficient, else
    that answer refined in float64 (_refine_fast) where cond² eps is estimated under _GRAM_RISK, else Householder
    QR (_householder). Data outside the safe range of squares take _auto_small_scaled (column-scaled)."""
    n, p = X.shape
    k = Y.shape[1]
    if p == 1 and n * k <= _ONE_COLUMN_EXACT:
        return _one_column(X, Y)
    if n < p:  # wider than tall: the minimum-norm solution
        return _wide_minimum_norm(X, Y)
    # out of range: lstsq is not called, _auto_small_scaled scales; divide too for the LAPACK call (_lstsq_direct)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        G = X.T.dot(X)  # at these sizes one BLAS call beats einsum's for the squared column norms
        if n * p * (p + k) <= _LSTSQ_LIMIT:
            beta = _lstsq_small(X, Y, G, u)
            if beta is not None:
                return beta
        XtY = X.T.dot(Y)
    found = (_cholesky_tiny if p * p * k <= 64 else _cholesky_small)(G, XtY)
    if found is False:  # outside the safe range of squares, or NaN: _auto_small_scaled scales (and names NaN)
        return _auto_small_scaled(X, Y)
    if found is not None:
        beta, C, squares, risk = found
        # trusted needs risk max|Dβ| <= _TRUST min|Dβ|: never where risk > _TRUST (the usual reason not to trust)
        if risk <= _TRUST and _trusted(beta.T.tolist(), squares, risk):
            return beta
        refined = _refine_fast(X, Y, beta, C, risk, squares, u)
        if refined is not None and risk > _SMALL_SPLIT_RISK:  # float64 gradients leave about cond² eps |X|ᵀ|r|
            refined = _split_step(X, Y, refined, C)  # (NIST's Wampler4: 7.7 digits, gelsy 8.6): one split step
        if refined is not None and np.isfinite(refined).all():  # _refine_fast returns None for NaN and infinity
            return refined
    # X and Y are finite here: NaN or infinity in X reaches XᵀX's diagonal, in Y XᵀY, and both sent the data to the
    # scaled path above (found False), which names them
    return _svd_least_squares(X, Y, G.diagonal())


_SMALL_SPLIT_RISK = 1e-11  # a small problem refined in float64 takes one split step where its pivot estimate of
# cond² eps is over this (Wampler4's 7e-11; an intercept with features of mean 50, 5e-12, does not: a split step
# costs about 3 times such a problem's whole solve)
_SPLIT_CONTRACTION = 1e-3  # one split step after lstsq where the column-scaled cond² eps is under this (it
# multiplies the error by about that)


def _split_step(X, Y, beta, C=None):
    """β refined by one preconditioned gradient step (CCᵀ ≈ XᵀX, C a factor or its rows as lists; None: the
    Cholesky factor of the column-scaled XᵀX, and β as it is where that cond² eps is over _SPLIT_CONTRACTION)
    whose gradient is _gradient_split's: its error is the residual's own rounding, so the step ends near
    κ eps rather than at the cond² eps |X|ᵀ|r| of float64 gradients and of backward stable solvers alike
    (NIST's Wampler5: 9.6 digits of the certified values where float64 steps and gelsd give 5.9, gelsy 6.7)."""
    d = _power_of_two(np.sqrt(np.einsum("ij,ij->j", X, X)))
    if C is None:
        scaled = X / d
        G = scaled.T @ scaled
        values = np.linalg.eigvalsh(G)
        if not values[0] > values[-1] * _EPS / _SPLIT_CONTRACTION:
            return beta
        try:
            C = d[:, None] * np.linalg.cholesky(G)  # XᵀX = D G D
        except np.linalg.LinAlgError:
            return beta
    g = _gradient_split(X, Y, beta, d)
    if isinstance(C, list):
        return beta + np.array(_cholesky_solve(C, g.tolist())).reshape(beta.shape)
    return beta + _cholesky_solve(C, g)


def _full_rank_refined(X, Y, beta, s):
    """lstsq's answer β of a small full-rank problem that the Gram route could not serve (``s``: X's singular
    values, as lstsq gives them), with one split step (_split_step) where cond(X)² eps is over
    _SPLIT_GRADIENT_RISK: there lstsq's cond² eps |r| term shows (NIST's Wampler5). Not for the tiny problems that
    take lstsq at once (_lstsq_small, columns of like scale or apart only by an intercept and offsets), where
    per-call cost decides."""
    if not s[0] * s[0] * _EPS > _SPLIT_GRADIENT_RISK * s[-1] * s[-1]:
        return beta
    refined = _split_step(X, Y, beta)
    return refined if np.isfinite(refined).all() else beta


def _svd_least_squares(X, Y, squares, solved=None):
    """One small problem that the Gram answer cannot serve (ill-conditioned or rank-deficient): X⁺Y (pseudo_inverse)
    by one LAPACK call, numpy.linalg.lstsq (the SVD, gelsd: singular values under max(n, p) eps of the largest
    dropped), which also gives the numerical rank and the condition estimate that a RankDeficientWarning names;
    one call costs less than the several a factorization in Python takes (QR, then an SVD of R for the rank test,
    then a solve), and answers as lstsq does. Where X is rank-deficient only because its columns differ in scale
    (the column-scaled X may still have full rank), ``_householder`` decides on the column-scaled QR instead.
    ``solved``: lstsq's answer where the caller has it (_lstsq_small)."""
    beta, _, rank, s = np.linalg.lstsq(X, Y, rcond=None) if solved is None else solved
    n, p = X.shape
    if rank == p:
        return _full_rank_refined(X, Y, beta, s)
    # X = A D with A of unit columns (D the column norms): cond(A) <= cond(X) max(d) / min(d); Python floats, as
    # NumPy's scalar arithmetic costs more than the rest of this test at these sizes
    largest, smallest = float(s[0]), float(s[-1])
    columns = squares.tolist()
    if not smallest * math.sqrt(max(columns)) <= largest * math.sqrt(min(columns)) * max(n, p) * _EPS:
        return _householder(X, Y, squares)  # A may have full rank: the column-scaled QR decides
    _warn_rank(int(rank), p, largest / smallest if smallest > 0 else math.inf)
    return beta


def _wide_minimum_norm(X, Y):
    """One problem wider than tall (n < p), route "auto": X⁺Y (pseudo_inverse) by one LAPACK call, numpy.linalg.lstsq
    (gelsd, which scales data far from 1 itself), where X has full row rank (numerical rank n: then every column
    scaling has it too, and nothing is truncated); at 200 × 1000 about half the time of the SVD with its vectors.
    Else, or where the answer is not finite, ``_minimum_norm`` (the SVD of X: the RankDeficientWarning, and the
    AccuracyWarning where columns scaled apart fall under the tolerance)."""
    _require_finite(("X", X), ("Y", Y))
    with np.errstate(all="ignore"):
        beta, _, rank, _ = np.linalg.lstsq(X, Y, rcond=None)
    if rank == X.shape[0] and np.isfinite(beta).all():
        return beta
    return _minimum_norm(X, Y, "auto", warn=True)


def _route_fast(X, Y, u=None):
    """route="auto": one small problem by _auto_fast_small, one large one by _auto_large (its refined Gram route
    costs a few passes over X; QR by row blocks where ill-conditioned), a stack by _auto_stack with plain QR (no
    refinement) for its hard problems."""
    if X.ndim == 2:
        if X.size * Y.shape[-1] <= _EXACT_LIMIT:
            return _auto_fast_small(X, Y, u)
        return _auto_large(X, Y, warn=True)
    batch = X.shape[:-2]
    X, Y = X.reshape((-1,) + X.shape[-2:]), Y.reshape((-1,) + Y.shape[-2:])
    if u is None:
        beta = _auto_stack_intercept(X, Y)
    else:
        beta = _auto_stack(X, Y, exact=False, u=u.reshape((-1,) + u.shape[-2:]))
    return beta.reshape(batch + beta.shape[-2:])


def _intercept_gram(X, Y, packed):
    """For a stack (route "auto", no weights), from one read of X a block of problems at a time (_stack_gram): per
    problem the index k of an intercept column (exactly constant, not zero: X[:, k] = c·1), its c, and the column
    means m with m_k = 0 (k = 0, c = 1, m = 0 where a problem has none), the targets' means t (0 where none); and
    the Gram matrices G = X'ᵀX' and X'ᵀY' of X' = X − 1mᵀ, Y' = Y − 1tᵀ (each block centred while it is in cache;
    X' and Y' themselves are not kept). (Shifts from a few rows instead of the means cost no pass, but leave small
    problems less well centred: beyond 10× lstsq's error on the uncentred sweep's stacks.)"""
    batch, n, p = X.shape
    G = _Across(np.empty((p * (p + 1) // 2, batch)), p) if packed else np.empty((batch, p, p))
    YtX = np.empty((batch, Y.shape[-1], p))
    means, shifts = np.empty((batch, p)), np.empty((batch, Y.shape[-1]))  # every block writes its rows
    index = _packed_index(p)
    ones, middle = np.ones(n), n // 2
    tile = _centring_tile(n, p)

    first = X[:, 0, :]  # the candidate columns of the whole stack at once: three rows (a few calls, not per block)
    candidates = (first != 0) & (first == X[:, -1, :]) & (first == X[:, middle, :])
    found_all = candidates.any(axis=-1)  # each block narrows its own slice to the columns constant on every row
    k_all = candidates.argmax(axis=-1)
    c_all = first[np.arange(batch), k_all]
    common = int(k_all[0])
    same = bool((k_all == common).all())  # every problem's first candidate is the same column: read as a view

    def work(block):
        # few NumPy calls per block where every problem has its intercept in the same column (the usual stack):
        # at 256 problems a block, a call's own cost is a fifth of the block's arithmetic
        part, found = X[block], found_all[block]
        m, t = means[block], shifts[block]
        if found.any():  # the candidate column constant on every row: read once the means' product has brought
            # the block into cache (a strided read of the column from memory costs more than the streamed one)
            np.matmul(ones, part, out=m)
            column = part[:, :, common] if same else part[np.arange(len(part)), :, k_all[block]]
            found &= (column == column[:, :1]).all(axis=-1)  # a view of found_all: this block's slice
        if not found.any():  # none of these problems has an intercept column: X' = X, Y' = Y
            m[...], t[...] = 0.0, 0.0
            centred, targets = part, Y[block]
        else:
            m /= n
            if same:
                m[:, common] = 0.0
            else:
                m[np.arange(len(part)), k_all[block]] = 0.0
            whole = found.all()
            if not whole:
                m[~found] = 0.0
            centred = _scratch("centred", (len(part), n, p))
            targets = _scratch("targets", (len(part),) + Y.shape[1:])
            _subtract_means(part, m, centred, tile)
            np.matmul(ones, Y[block], out=t)
            t /= n
            if not whole:
                t[~found] = 0.0
            np.subtract(Y[block], t[:, None, :], out=targets)
        _block_products(centred, targets, G, YtX, block, index)

    _each_block(work, _stack_blocks(X))
    where, c = np.where(found_all, k_all, 0), np.where(found_all, c_all, 1.0)
    return G, YtX.swapaxes(-1, -2), means, where, c, shifts


def _intercept_amplification(m, k, c, gamma, shift):
    """Per problem of a centred stack (_auto_stack_intercept), Σ_j |m_j γ_j| / (|c| max|β|) (the largest over
    targets): how much the intercept β_k = γ_k − mᵀγ / c (``shift`` = β_k − γ_k) magnifies the relative errors of
    the Cholesky answer γ, each about risk |γ_j|, against max|β|. Measured on 13,500 problems (offsets 10 to 10⁴,
    the intercept 0.37 to 3, spreads 0.1 to 10): the intercept's error 0.06 risk times this by median, up to about
    twice it (an estimate, not a bound: the caller's threshold leaves margin)."""
    top = np.maximum(np.abs(gamma).max(axis=(-2, -1)), np.abs(gamma[np.arange(len(c)), k] + shift).max(axis=-1))
    terms = np.abs(m)[:, :, None] * np.abs(gamma)  # |m_j γ_j| (batch, p, k)
    return terms.sum(axis=1).max(axis=-1) / (np.abs(c) * top)


def _intercept_step(X, Y, m, t, rows, gamma, C, exact):
    """One preconditioned gradient step on the centred problems ``rows`` of a stack (X' = X − 1mᵀ, Y' = Y − 1tᵀ,
    CCᵀ = X'ᵀX', γ their answers): the correction δ to γ, its own error about risk times δ's. Added to γ it is
    rounded at eps |γ_j| per coefficient, which the intercept's mᵀγ / c would magnify (_intercept_amplification):
    the caller adds mᵀδ to mᵀγ unrounded. The residual Y' − X'γ rounds at eps of the centred data, no offset in
    it; where ``exact`` (per row: the magnification is over _REFINE_RISK / eps, so that even γ + δ to that rounding
    would leave the intercept over it, as with an intercept column of 0.01 beside offsets of 10), X'γ by Dekker's
    products summed to about eps² (_dot2_stack). X' and Y' are formed a block at a time in the thread's work
    arrays, as _intercept_gram's."""
    n, p = X.shape[1:]
    gradient = np.empty(gamma.shape)
    tile = _centring_tile(n, p)

    def work(block):
        chosen = rows[block]
        part = np.take(X, chosen, axis=0, out=_scratch("centred", (len(chosen), n, p)), mode="clip")
        _subtract_means(part, m[chosen], part, tile)
        targets = np.take(Y, chosen, axis=0, out=_scratch("targets", (len(chosen),) + Y.shape[1:]), mode="clip")
        targets -= t[chosen][:, None, :]
        fine = exact[block]
        if not fine.any():
            targets -= part @ gamma[block]
        else:
            targets[~fine] -= part[~fine] @ gamma[block][~fine]
            hi, lo = _dot2_stack(part[fine], gamma[block][fine][:, None])  # (problems, n, k)
            targets[fine] = (targets[fine] - hi) - lo
        np.matmul(part.swapaxes(-1, -2), targets, out=gradient[block])

    _each_block(work, _stack_blocks(X[: len(rows)]))  # blocks of as many problems as a block of X holds
    return _cholesky_solve(C, gradient)


def _centring_tile(n, p):
    """Rows per inner loop of _subtract_means: the fewest r dividing n with r·p ≥ 32 (n itself if none)."""
    return next((r for r in range(1, n + 1) if n % r == 0 and r * p >= 32), n)


def _subtract_means(part, m, out, tile):
    """out = part − 1mᵀ for a block (problems, n, p), r = ``tile`` rows at a time: the means tiled r times, a row
    of r·p entries broadcast over the n / r groups of rows (NumPy's inner loops then run over r·p entries, not p;
    the tile is r times smaller than the block)."""
    problems, n, p = part.shape
    shape = (problems, n // tile, tile * p)
    np.subtract(part.reshape(shape), np.tile(m, (1, tile))[:, None, :], out=out.reshape(shape))


def _auto_stack_intercept(X, Y):
    """A stack of problems (route "auto", no weights), those with an intercept column centred first (issue 43):
    with X[:, k] = c·1, X = X' + 1mᵀ where X' is X with every other column less its mean (m_k = 0), so that
    Xβ = X'γ for γ = β except γ_k = β_k + mᵀβ / c: the least-squares problem of X' (well-conditioned where the
    columns are, whatever their offsets) gives β_j = γ_j (j ≠ k) and β_k = γ_k − mᵀγ / c (a compensated sum).
    Each entry of X' is the rounded difference x − m_j, within eps of itself: a componentwise backward error of
    the centred problem, so the Gram route on X' is as accurate as on centred data (scikit-learn centres for an
    intercept likewise), where on X it needed centred refinement steps (the offset's share of the residual).
    X' is formed a block at a time while the Gram matrices are (_intercept_gram), and again only for the problems
    that are refined. Problems the Gram route leaves (ill-conditioned, rank-deficient: X' has the rank of X) are
    solved on X as given by QR or SVD (_qr_or_svd), so that a rank-deficient X gets its own minimum-norm solution;
    a problem without an intercept column has m = 0, X' = X: _auto_stack's Gram route."""
    if X.shape[-2] < max(3, X.shape[-1]):
        return _auto_stack(X, Y, exact=False)
    with np.errstate(over="ignore", invalid="ignore"):
        G, XtY, m, k, c, t = _intercept_gram(X, Y, _across(len(X), X.shape[-1]))
        scale = _needs_scaling(X, G.diagonal().T if isinstance(G, _Across) else np.diagonal(G, axis1=-2, axis2=-1))
        scale |= _needs_scaling(Y, _column_squares(Y))
    if scale.any() or not np.isfinite(m).all():  # out of the safe range (or NaN): the path that scales and names it
        return _auto_stack(X, Y, exact=False)

    def centred(mask):
        return X - m[:, None, :] if mask is None else X[mask] - m[mask][:, None, :]

    def centred_targets(mask):
        return Y - t[:, None, :] if mask is None else Y[mask] - t[mask][:, None, :]

    beta, fast, C, risk = _solve_stack(centred, centred_targets, G, XtY)
    if m.any() or t.any():  # else no problem has an intercept column off its means: X' = X, Y' = Y, β = γ
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # NaN or infinity only where not fast
            hi, lo = _dot2_stack(m, beta)  # (replaced below)
            shift = ((t - hi) - lo) / c[:, None]
            amplification = _intercept_amplification(m, k, c, beta, shift)
            sharp = fast & (risk * amplification > _REFINE_RISK)
        if sharp.any():  # one step on X' whose correction δ also enters mᵀ(γ + δ) unrounded (_intercept_step)
            delta = _intercept_step(X, Y, m, t, np.flatnonzero(sharp), beta[sharp], C[sharp],
                                    amplification[sharp] * _EPS > _REFINE_RISK)
            beta[sharp] += delta
            lo[sharp] += (m[sharp][:, :, None] * delta).sum(axis=1)  # mᵀδ, beside mᵀγ's low part
            with np.errstate(over="ignore", invalid="ignore"):
                shift[sharp] = ((t[sharp] - hi[sharp]) - lo[sharp]) / c[sharp][:, None]
        beta[np.arange(len(X)), k] += shift
    if not fast.all():  # ill-conditioned or rank-deficient: QR or SVD of X as given (its own minimum norm). The
        # Gram route on X itself is not tried again: X' is X less its offsets, of the same rank and conditioned at
        # least as well once its columns are scaled, so where X' fails X does (for a problem without an intercept
        # X' is X), and the second Gram pass cost half a batch's time where one problem of 256 was rank-deficient
        beta[~fast] = _qr_or_svd(X[~fast], Y[~fast], False)
    return beta


# --- route "exact": the least-squares solution of the float64 data in rational arithmetic (issue 40) ------------

_EXACT_COLUMNS = 64  # route "exact" solves p×p normal equations of integers exactly (Bareiss): O(p³) operations on
# integers of about p (2·53 + log₂ n) bits, about a second at p = 64; more columns raise ValueError
_LIMB = 20  # bits per limb: a product of two limbs is under 2^40, a sum of 2^13 of them exact in float64
_LIMB_MASK = np.uint64((1 << _LIMB) - 1)
_LIMB_BLOCK_BYTES = 1 << 24  # the limb arrays of a block of rows (and of problems) take about this much memory
_FAR = 1 << 40  # an exponent beyond every float's: the lowest bit of a column of zeros
_HALF27 = np.uint64((1 << 27) - 1)


def _float_parts(A):
    """(M, q, negative) with A = ±M 2^q exactly, elementwise: M the integer significand (uint64, under 2^53; 0 for
    zeros), q the exponent (int64, -1074 for subnormals), read from the bits of float64 A."""
    bits = np.ascontiguousarray(A, dtype=np.float64).view(np.uint64)
    biased = (bits >> np.uint64(52)).astype(np.int64) & 0x7FF
    M = (bits & np.uint64((1 << 52) - 1)) | ((biased != 0).astype(np.uint64) << np.uint64(52))
    return M, np.maximum(biased, 1) - 1075, (bits >> np.uint64(63)) != 0


def _lowest_bits(M, q):
    """The exponent of each entry's lowest set bit (_FAR for zeros)."""
    low = M & (~M + np.uint64(1))  # the lowest set bit of M, a power of two (exact as a float)
    return np.where(M != 0, q + np.frexp(low.astype(np.float64))[1] - 1, _FAR)


def _product_terms(w, a):
    """w·a exactly as four terms (M, q, negative) with M under 2^54, for parts w = (Mw, qw, -) (positive) and
    a = (Ma, qa, negative): both significands split in halves of 27 bits, whose products are exact in uint64."""
    (Mw, qw, _), (Ma, qa, negative) = w, a
    w1, w0, a1, a0 = Mw >> np.uint64(27), Mw & _HALF27, Ma >> np.uint64(27), Ma & _HALF27
    q = qw + qa
    return [(w1 * a1, q + 54, negative), (w1 * a0, q + 27, negative), (w0 * a1, q + 27, negative),
            (w0 * a0, q, negative)]


def _limbs(terms, base, count):
    """The integers Σ terms 2^-base of every column (base (batch, columns): an exponent at or under every set bit of
    the column) as signed limbs of _LIMB bits, float64 (batch, rows, Σ count): limb a of column c is bits
    [a·_LIMB, (a + 1)·_LIMB), and column c has count[c] of them."""
    batch, rows, columns = terms[0][0].shape
    width = int(count.max(initial=0))
    out = np.zeros((batch, rows, columns, width))
    for M, q, negative in terms:
        shift = q - base[:, None, :]  # the integer is M 2^shift (M's bits under -shift are 0 where shift < 0)
        for a in range(width):
            t = a * _LIMB - shift
            limb = np.where(t >= 0, M >> np.clip(t, 0, 63).astype(np.uint64),
                            M << np.clip(-t, 0, 63).astype(np.uint64)) & _LIMB_MASK
            value = limb.astype(np.float64)
            np.negative(value, out=value, where=negative)
            out[..., a] += value
    return out[..., np.arange(width)[None, :] < count[:, None]]


def _layout(low, top):
    """(base, count): base (batch, columns) the lowest set bit of each column (0 for zeros), count (columns,) the
    limbs that hold every problem's integers (from ``top``, a bound over the highest bit, exclusive)."""
    zero = low >= _FAR
    base = np.where(zero, 0, low)
    span = np.where(zero, 0, top - base).max(axis=0, initial=0)
    return base, -(-span // _LIMB)


def _exact_sums(X, Y, w=None):
    """XᵀWX and XᵀWY of a stack (batch, n, p), (batch, n, k) exactly, as Python integers: per problem (G, b) with
    G_jl 2^(e_j + e_l + ω) = (XᵀWX)_jl and b_jt 2^(e_j + f_t + ω) = (XᵀWY)_jt, and the exponents e (batch, p),
    f (batch, k), ω (batch,) (ω = 0 without weights w (batch, n)). Every float is an integer times a power of two:
    each column is an integer times 2^(its lowest set bit), split into signed limbs of _LIMB bits, and the limbs'
    products are summed by float64 matrix products over blocks of rows small enough for every sum to be exact
    (2^13 rows; 2^11 with weights, whose products w·x take four terms), then in int64 (Python integers past 2^21
    rows). Cost: about (limbs per column)² times the float64 product XᵀX, limbs per column ⌈(53 + the spread of
    its exponents) / 20⌉ (3 for columns of like magnitude), and (p + k)² limbs² Python additions per problem."""
    batch, n, p = X.shape
    k = Y.shape[-1]
    low = np.full((batch, p + k), _FAR)
    top = np.full((batch, p + k), -_FAR)
    w_low, w_top = np.full(batch, _FAR), np.full(batch, -_FAR)
    step = max(1, (1 << 20) // max(1, batch * (p + k)))  # rows read at a time: about 1M entries
    for start in range(0, n, step):
        M, q, _ = _float_parts(np.concatenate([X[:, start : start + step], Y[:, start : start + step]], axis=-1))
        np.minimum(low, _lowest_bits(M, q).min(axis=-2), out=low)
        np.maximum(top, np.where(M != 0, q + 53, -_FAR).max(axis=-2), out=top)
        if w is not None:
            Mw, qw, _ = _float_parts(w[:, start : start + step])
            np.minimum(w_low, _lowest_bits(Mw, qw).min(axis=-1), out=w_low)
            np.maximum(w_top, (qw + 53).max(axis=-1), out=w_top)
    base, count = _layout(low, top)
    if w is None:
        omega = np.zeros(batch, dtype=np.int64)
        left_base, left_count, terms = base, count, 1
    else:  # the columns of WX: integers times 2^(e_j + ω), ω the weights' lowest set bit
        omega = w_low
        left_base = base[:, :p] + omega[:, None]  # w·x < 2^(top of w + top of x): the limbs that hold it
        left_count = -(-np.where(low[:, :p] >= _FAR, 0, top[:, :p] + w_top[:, None] - left_base).max(axis=0) // _LIMB)
        terms = 4
    rows = (1 << (53 - 2 * _LIMB)) // terms  # |left limb| < terms·2^20, |right limb| < 2^20: exact sums
    width = int(left_count.sum()) + int(count.sum())
    chunk = max(1, _LIMB_BLOCK_BYTES // (8 * max(1, width) * min(n, rows)))  # problems at a time
    wide = n * terms >= 1 << 22  # int64 sums could overflow past this many rows: Python integers
    out = []
    for first in range(0, batch, chunk):
        part = slice(first, first + chunk)
        total = None
        for start in range(0, n, rows):
            block = slice(start, start + rows)
            right = _limbs([_float_parts(np.concatenate([X[part, block], Y[part, block]], axis=-1))], base[part],
                           count)
            if w is None:
                left = right
            else:
                left = _limbs(_product_terms(_float_parts(w[part, block, None]), _float_parts(X[part, block])),
                              left_base[part], left_count)
            sums = np.matmul(np.swapaxes(left, -1, -2), right).astype(np.int64)
            if wide:
                sums = sums.astype(object)
            total = sums if total is None else total + sums
        out.extend(_assemble(s, left_count, count, p, k) for s in total.tolist())
    return out, base[:, :p], base[:, p:], omega


def _assemble(sums, left_count, right_count, p, k):
    """(G, b) as Python integers from the limb products ``sums`` (lists): entry (c, d) is Σ_ab sums[c_a][d_b]
    2^(_LIMB (a + b)); G symmetric (its upper triangle summed)."""
    left = np.concatenate([[0], np.cumsum(left_count)]).tolist()
    right = np.concatenate([[0], np.cumsum(right_count)]).tolist()
    G = [[0] * p for _ in range(p)]
    b = [[0] * k for _ in range(p)]
    for c in range(p):
        limb_rows = sums[left[c] : left[c + 1]]
        for d in range(c, p + k):
            start, stop = right[d], right[d + 1]
            total = 0
            for a, row in enumerate(limb_rows):
                value = 0
                for v in reversed(row[start:stop]):  # Horner in the right column's limbs
                    value = (value << _LIMB) + v
                total += value << (_LIMB * a)
            if d < p:
                G[c][d] = G[d][c] = total
            else:
                b[c][d - p] = total
    return G, b


def _bareiss(G, B):
    """Fraction-free Gaussian elimination (Bareiss) of [G B], G a symmetric positive semidefinite p×p matrix of
    integers, with symmetric pivoting on the first nonzero diagonal entry: (rows, order, rank, det). Row i of
    ``rows`` (i < rank) is row order[i] of the eliminated system in the pivot order, its diagonal entry the
    leading principal minor of order i + 1 of G permuted, so every division is exact; det the last of them
    (1 for rank 0). The trailing block is symmetric at every step: only its upper triangle is computed. Where
    no diagonal entry is left nonzero, the trailing block is 0 (a positive semidefinite matrix with a zero
    diagonal is 0): rank is G's exact rank."""
    p = len(G)
    rows = [g[:] + r[:] for g, r in zip(G, B, strict=True)]
    order = list(range(p))
    width = len(rows[0]) if rows else 0
    previous = 1
    for i in range(p):
        j = next((j for j in range(i, p) if rows[j][j]), None)
        if j is None:
            return rows, order, i, previous
        if j != i:  # the same permutation of rows and of the first p columns: the system stays symmetric
            rows[i], rows[j] = rows[j], rows[i]
            for row in rows:
                row[i], row[j] = row[j], row[i]
            order[i], order[j] = order[j], order[i]
        pivot_row = rows[i]
        pivot = pivot_row[i]
        for r in range(i + 1, p):
            row = rows[r]
            factor = pivot_row[r]  # = row[i], by symmetry
            for c in range(r, width):
                row[c] = (row[c] * pivot - factor * pivot_row[c]) // previous
            for c in range(r + 1, p):
                rows[c][r] = row[c]
        previous = pivot
    return rows, order, p, previous


def _back_substitute(rows, rank, det, columns):
    """det·x for the triangular system of Bareiss's first ``rank`` rows, one solution per right-hand column in
    ``columns``: integers (Cramer's rule), so each division is exact. (rank × len(columns)) lists."""
    out = [[0] * len(columns) for _ in range(rank)]
    for t, c in enumerate(columns):
        for i in range(rank - 1, -1, -1):
            row = rows[i]
            value = det * row[c]
            for j in range(i + 1, rank):
                value -= row[j] * out[j][t]
            out[i][t] = value // row[i]
    return out


def _exact_solution(G, b, e, f, omega, ridge):
    """(numerators, denominator, shifts, cond2) with β_jt = numerators[j][t] 2^shifts[j][t] / denominator exactly:
    the least-squares solution (the minimum-norm one where X is exactly rank-deficient), or the ridge solution, of
    one problem from its exact sums (_exact_sums); cond2 an estimate of cond(X D⁻¹)² (D the column norms) where X
    has full rank, from the exact pivots (as _pivot_estimate), else 0."""
    p, k = len(G), len(b[0])
    if ridge is not None:  # (G + λ 2^-ω D⁻²) z = b with z_j = β_j 2^(e_j - f): λ = m 2^s, all scaled by 2^K
        m, s = _dyadic(ridge)
        K = max(0, max(omega + 2 * ej - s for ej in e))
        A = [[v << K for v in row] for row in G]
        for j in range(p):
            A[j][j] += m << (s - omega - 2 * e[j] + K)
        rows, _, _, det = _bareiss(A, [[v << K for v in row] for row in b])
        y = _back_substitute(rows, p, det, range(p, p + k))
        return y, det, [[ft - ej for ft in f] for ej in e], 0.0
    rows, order, rank, det = _bareiss(G, b)
    if rank == p:  # G z = b, z_j = β_j 2^(e_j - f_t); no pivoting took place (G is positive definite)
        y = _back_substitute(rows, p, det, range(p, p + k))
        # the squared Cholesky pivots are the ratios of successive leading minors; relative to G's diagonal
        minors = [1] + [rows[i][i] for i in range(p)]
        relative = [minors[i + 1] / (minors[i] * G[i][i]) for i in range(p)]
        cond2 = p * max(relative) / min(relative) if min(relative) > 0 else math.inf
        return y, det, [[ft - ej for ft in f] for ej in e], cond2
    # Exactly rank-deficient: the minimum norm is not invariant under scaling columns apart, so the integers are
    # brought to one exponent c = min e (G_u = 2^-2c-ω XᵀWX); with S = order[:rank] independent columns,
    # X = X_S C, C = G_SS⁻¹ G_S: and X⁺ = Cᵀ(CCᵀ)⁻¹(X_SᵀX_S)⁻¹X_Sᵀ, so β = G⁺b = Cᵀ(CCᵀ)⁻¹ G_SS⁻¹ b_S; with
    # C = [dI | V]/d and G_SS⁻¹ b_S = z/d (d = det G_SS, V and z integers from the back substitution), β = Cᵀ w
    # with (d²I + VVᵀ) w = z (pseudo_inverse)
    c = min(e)
    G = [[v << (e[i] - c + e[j] - c) for j, v in enumerate(row)] for i, row in enumerate(G)]
    b = [[v << (e[i] - c) for v in row] for i, row in enumerate(b)]
    rows, order, rank, d = _bareiss(G, b)
    if rank == 0:
        return [[0] * k for _ in range(p)], 1, [[0] * k for _ in range(p)], 0.0
    solved = _back_substitute(rows, rank, d, list(range(rank, p)) + list(range(p, p + k)))
    V, z = [row[: p - rank] for row in solved], [row[p - rank :] for row in solved]
    H = [[sum(map(operator.mul, V[i], V[j])) + (d * d if i == j else 0) for j in range(rank)] for i in range(rank)]
    h_rows, _, _, det = _bareiss(H, z)
    w = _back_substitute(h_rows, rank, det, range(rank, rank + k))
    numerators = [[0] * k for _ in range(p)]
    for i in range(rank):  # β in the pivot order: d w for the independent columns, Vᵀw for the others
        numerators[order[i]] = [d * v for v in w[i]]
    for j in range(p - rank):
        numerators[order[rank + j]] = [sum(V[i][j] * w[i][t] for i in range(rank)) for t in range(k)]
    return numerators, det, [[ft - c for ft in f] for _ in range(p)], 0.0


def _dyadic(value):
    """(m, s) with value = m 2^s, m an integer: every float is one."""
    numerator, denominator = value.as_integer_ratio()
    return numerator, 1 - denominator.bit_length()


_FORMATS = {53: (-1074, "float64"), 24: (-149, "float32")}  # significand bits: (lowest exponent, name)


def _rounded(numerator, denominator, shift, bits):
    """numerator 2^shift / denominator (> 0) rounded to nearest, ties to even, to ``bits`` significant bits with
    the subnormal range of float64 (53) or float32 (24): a float, inf where the rounded value is 2^1024 or more."""
    if numerator == 0:
        return 0.0
    if shift >= 0:
        numerator <<= shift
    else:
        denominator <<= -shift
    a = abs(numerator)
    e = a.bit_length() - denominator.bit_length()  # 2^(e-1) < a / denominator < 2^(e+1)
    if (a >= denominator << e) if e >= 0 else (a << -e >= denominator):
        e += 1  # now 2^(e-1) <= a / denominator < 2^e
    q = max(e - bits, _FORMATS[bits][0])  # the exponent of the last kept bit
    quotient, rest = divmod(a, denominator << q) if q >= 0 else divmod(a << -q, denominator)
    twice, divisor = 2 * rest, denominator << q if q >= 0 else denominator
    if twice > divisor or twice == divisor and quotient & 1:
        quotient += 1
    try:
        value = math.ldexp(quotient, q)
    except OverflowError:
        value = math.inf
    return -value if numerator < 0 else value


def _exact_solutions(X, Y, ridge=None, w=None):
    """The exact solutions (_exact_solution) of every problem of a stack X (batch, n, p), Y (batch, n, k), with
    weights w (batch, n) or None and λ a float or None."""
    p = X.shape[-1]
    if p > _EXACT_COLUMNS:
        raise ValueError(f"route 'exact' solves the normal equations in rational arithmetic, whose cost grows as p³ "
                         f"on integers of about p·(2·53 + log₂ n) bits: at most {_EXACT_COLUMNS} columns, and X has "
                         f"{p}; use route 'qr' or 'svd' (backward stable) or 'auto'")
    _require_finite(("X", X), ("Y", Y))
    sums, e, f, omega = _exact_sums(X, Y, w)
    e, f, omega = e.tolist(), f.tolist(), omega.tolist()
    solutions = [_exact_solution(G, b, e[i], f[i], omega[i], ridge) for i, (G, b) in enumerate(sums)]
    cond2 = np.array([solution[3] for solution in solutions])
    rounding = cond2 * (max(X.shape[-2:]) * _EPS) ** 2 >= 1  # numerically rank-deficient, as lstsq's tolerance
    if rounding.any():  # attributed to the first caller outside this module
        frame, level = sys._getframe(0), 1
        while frame is not None and frame.f_globals.get("__name__") == __name__:
            frame, level = frame.f_back, level + 1
        where, worst = _where(rounding if len(rounding) > 1 else rounding[0])
        warnings.warn(f"X has full rank only through rounding{where}: condition estimate "
                      f"{math.sqrt(float(cond2.max())):.1e}{worst} of its column-scaled columns, numerically "
                      f"rank-deficient, but of full rank exactly: route 'exact' returns the exact least-squares "
                      f"solution of these float64 data, which the near-dependence makes large; route 'auto' or "
                      f"'svd' gives the minimum-norm solution of the numerical rank", RankDeficientWarning,
                      stacklevel=level)
    return [solution[:3] for solution in solutions]


def _exact_rounded(values, bits, what, hint):
    """(…, k) groups of exact values as (numerators, denominator, shifts) rows, rounded (_rounded) into a float64
    array (batch, rows, k); a ValueError naming ``what`` where one overflows, or where a group (one problem's
    values of one target) has a nonzero value but its largest under 2^-1048 (2^-138 for float32: fewer than half
    its bits kept; _require_kept_bits)."""
    kind = _FORMATS[bits][1]
    tiny = _TINY_RESULT if bits == 53 else _TINY_FLOAT32
    out = np.array([[[_rounded(v, den, s, bits) for v, s in zip(row, shifts, strict=True)]
                     for row, shifts in zip(numerators, shift_rows, strict=True)]
                    for numerators, den, shift_rows in values]).reshape(len(values), -1, len(values[0][0][0]))
    if bits == 24 and np.isfinite(out).all() and np.abs(out).max() > np.finfo(np.float32).max:
        out[np.abs(out) > np.finfo(np.float32).max] = np.inf
    if not np.isfinite(out).all():
        raise ValueError(f"{what} does not fit in {kind} (overflow); {hint}")
    nonzero = np.array([[[v != 0 for v in row] for row in numerators] for numerators, _, _ in values], dtype=float)
    _require_kept_bits(nonzero.reshape(out.shape), out, tiny, what, kind, (-2,))
    return out


def _exact(X, Y, ridge=None, weights=None, bits=53):
    """Route "exact": β rounded once from the exact solution of the float64 data (float64 (..., p, k))."""
    batch, (n, p), k = X.shape[:-2], X.shape[-2:], Y.shape[-1]
    lam = _ridge_value(ridge)
    w = None if weights is None else _weights(weights, X).reshape(-1, n)
    solutions = _exact_solutions(X.reshape(-1, n, p), Y.reshape(-1, n, k), lam, w)
    hint = "rescale X or Y" if bits == 53 else "pass float64 data"
    return _exact_rounded(solutions, bits, "the least-squares solution", hint).reshape(batch + (p, k))


def _exact_predictions(X, Y, Q, ridge=None, weights=None, bits=53):
    """Route "exact" of predict: X_q β rounded once from the exact products with the exact solution β."""
    batch, (n, p), k, m = X.shape[:-2], X.shape[-2:], Y.shape[-1], Q.shape[-2]
    lam = _ridge_value(ridge)
    w = None if weights is None else _weights(weights, X).reshape(-1, n)
    solutions = _exact_solutions(X.reshape(-1, n, p), Y.reshape(-1, n, k), lam, w)
    M, q, negative = _float_parts(Q.reshape(-1, m, p))
    lowest = _lowest_bits(M, q)
    M = np.where(M != 0, M >> np.where(M != 0, lowest - q, 0).astype(np.uint64), 0)  # odd: M 2^lowest
    base = np.where((M == 0).all(axis=-2), 0, lowest.min(axis=-2))  # (batch, p)
    shift = np.where(M != 0, lowest - base[:, None, :], 0)
    predictions = []
    for (numerators, den, shifts), Mi, si, ni, gi in zip(solutions, M.tolist(), shift.tolist(), negative.tolist(),
                                                         base.tolist(), strict=True):
        # q_ij = Q_ij 2^g_j with Q_ij integers; Σ_j Q_ij N_jt 2^(g_j + s_jt) over one exponent per target
        rows = [[-(v << s) if neg else v << s for v, s, neg in zip(*entry, strict=True)]
                for entry in zip(Mi, si, ni, strict=True)]
        exponents = [[g + s for s in row] for g, row in zip(gi, shifts, strict=True)]
        lowest = [min(column) for column in zip(*exponents, strict=True)]
        vectors = [[numerators[j][t] << (exponents[j][t] - lowest[t]) for j in range(p)] for t in range(k)]
        predictions.append(([[sum(map(operator.mul, row, vector)) for vector in vectors] for row in rows], den,
                            [lowest] * m))
    hint = "rescale X_query or Y" if bits == 53 else "pass float64 data"
    return _exact_rounded(predictions, bits, "the prediction matrix X_query β̂", hint).reshape(batch + (m, k))


def _route_exact(X, Y):
    return _exact(X, Y)


_ROUTES = {"auto": _route_fast, "exact": _route_exact, "eigh": _route_eigh, "cholesky": _route_cholesky,
           "svd": _route_svd, "qr": _route_qr}


# --- ridge and weights ----------------------------------------------------------------------

_DUAL_RISK = 1e-10  # the dual route's first-order error bound (‖X‖_F² + λ) eps / λ must stay under this


def _ridge_value(ridge):
    """λ as a float: None (no ridge) or a positive finite real number, else a TypeError or ValueError naming it."""
    if ridge is None:
        return None
    if isinstance(ridge, (bool, np.bool_)) or not isinstance(ridge, (int, float, np.integer, np.floating)):
        raise TypeError(f"ridge must be a positive real number, not {type(ridge).__name__}")
    try:
        value = float(ridge)
    except OverflowError:  # an integer beyond the float range, 10**400
        raise ValueError(f"ridge is too large for a float ({type(ridge).__name__} over 1.8e308): it must be a "
                         f"positive finite real number") from None
    if math.isnan(value):
        raise ValueError("ridge is NaN: it must be a positive real number")
    if math.isinf(value):
        raise ValueError("ridge is infinite: it must be a positive finite real number")
    if value <= 0:
        raise ValueError(f"ridge must be positive, got {value!r} (leave it out, ridge=None, for OLS)")
    return value


def _root_weights(weights, X):
    """√w as float64 of shape X.shape[:-1] + (1,); a ValueError naming what is wrong with the weights."""
    return np.sqrt(_weights(weights, X))[..., None]


def _weights(weights, X):
    """The weights as float64 of shape X.shape[:-1]; a ValueError naming what is wrong with them."""
    w = _array("weights", weights, 1)
    if w.shape != X.shape[:-1]:
        raise ValueError(f"weights must have shape {X.shape[:-1]} (one per row of X), got {w.shape}")
    w = w if w.dtype == np.float64 else w.astype(np.float64)
    if w.size <= 32:  # Python floats: less overhead than NumPy's reductions
        values = w.ravel().tolist()
        usable = min(values) > 0 and math.isfinite(sum(values))  # NaN: the sum (min may skip it)
    else:
        usable = bool((w > 0).all()) and math.isfinite(w.sum())
    if not usable:  # the sum of positive weights is finite where all are (or it overflows: checked below)
        if np.isnan(w).any():
            raise ValueError("weights contain NaN")
        if not (w > 0).all():
            raise ValueError(f"weights must be positive: {int((w <= 0).sum())} of them are zero or negative "
                             f"(drop those rows instead of giving them weight 0)")
        if np.isinf(w).any():
            raise ValueError("weights contain infinity")
    return w


def _solve(X, Y, route, ridge, weights):
    """β̂ of OLS, weighted least squares (the whitened rows √w x_i, √w y_i) and/or ridge (the rows √λ I stacked on
    X; "svd" and, for p > n, "auto" from the SVD of X itself; for p > n "qr" from the n×n problem of Xᵀ's R, and
    "auto" first the dual route), by ``route``; unscaled float64 (..., p, k)."""
    if route == "exact":
        return _exact(X, Y, ridge, weights)
    lam = _ridge_value(ridge)
    if weights is None:
        return _solve_rows(X, Y, route, lam)
    root = _root_weights(weights, X)
    with np.errstate(over="ignore", invalid="ignore"):
        Xw, Yw = X * root, Y * root
    try:  # every route names NaN or infinity in what it is given (a ValueError): here that is the weighted rows
        return _solve_rows(Xw, Yw, route, lam, root)
    except ValueError:  # say which: the data, or the products with √w (which overflowed), else the route's reason
        _require_finite(("X", X), ("Y", Y))
        _require_finite(("the weighted rows √w X", Xw), ("the weighted targets √w Y", Yw))
        raise


def _solve_rows(X, Y, route, lam, u=None):
    """_solve for the rows as given (weights applied), λ a float or None."""
    if lam is None:
        return _route_fast(X, Y, u) if route == "auto" else _ROUTES[route](X, Y)
    n, p = X.shape[-2:]
    if route == "auto" and X.ndim == 2 and p <= n:
        _require_finite(("Y", Y))  # X is finite where its squares are: the Gram route checks them
        beta = _ridge_gram(X, Y, lam)
        if beta is not None:
            return beta
    _require_finite(("X", X), ("Y", Y))
    if route == "auto" and p > n:
        beta = _ridge_dual(X, Y, lam)
        if beta is not None:
            return beta
        return _ridge_svd(X, Y, lam)  # the SVD of the wide X itself (n²p); [√λ I; X] has cond ‖X‖/√λ here
    if route == "eigh":
        beta = _ridge_spectral(X, Y, lam)
        if beta is not None:
            return beta
    if route == "svd":
        return _ridge_svd(X, Y, lam)
    if route == "qr" and p > n:  # Xᵀ = QR, X = RᵀQᵀ: β = Q (RRᵀ + λI)⁻¹RY, the ridge solution of the n×n Rᵀ
        Q, R = np.linalg.qr(np.swapaxes(X, -1, -2))  # ([√λ I; X] itself has cond ‖X‖/√λ when p > n)
        return Q @ _solve(np.swapaxes(R, -1, -2), Y, route, lam, None)
    # The rows √λ I go first: Householder QR of [√λ I; X] then touches X's rows only by reflections whose
    # products with X are small against X (the top block stays diagonal), so its error is relative to X's own
    # scale; with √λ I last, a λ large against ‖X‖² loses the digits of X (λ = 1 on X of size 1e-10: 3e-8)
    root_lam = math.sqrt(lam)
    batch = X.shape[:-2]
    A = np.concatenate([np.broadcast_to(root_lam * np.eye(p), batch + (p, p)), X], axis=-2)
    B = np.concatenate([np.zeros(batch + (p, Y.shape[-1])), Y], axis=-2)
    return _ROUTES[route](A, B)


_RIDGE_REFINE = 1e-14  # route "auto", p <= n: refinement steps where cond(XᵀX + λI) eps may be over this ...
_RIDGE_CONVERGE = 1e-2  # ... where the first correction is under this of β ...
_RIDGE_SETTLED = 1e-6  # ... and the last gaining correction under this of β; else the augmented problem


def _ridge_gram(X, Y, ridge):
    """Ridge of one problem with p <= n, route "auto": (XᵀX + λI)⁻¹XᵀY (ridge_route) by one LAPACK solve of the p×p
    XᵀX + λI, as scikit-learn's Ridge(solver="cholesky") and scipy.linalg.solve(..., assume_a="pos") compute it (tiny
    problems, p²k <= 64: the Cholesky factor on Python floats, whose pivots estimate the condition). Where cond(XᵀX +
    λI) eps may be over _RIDGE_REFINE (bounded by (trace(XᵀX) + pλ) eps / λ, λ_min >= λ; for tiny problems the pivot
    estimate), refined by _ridge_refine: its answer is within the first-order perturbation bound of the augmented
    problem [√λ I; X] β = [0; Y], κ eps + κ² eps ‖residual‖ / (‖X‖ ‖β‖), at a Cholesky solve's cost (Householder QR
    often stays 10-200× under that bound; the steps' floor, the rounding of Xᵀ(Y − Xβ), is its κ² term). None where
    the squares leave the safe range, anything overflows, or the steps do not settle: the caller then solves the
    augmented problem by Householder QR, accurate at every scale."""
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        G = X.T @ X
        XtY = X.T @ Y
        squares = G.diagonal()  # also NaN or infinite where X is not finite (the caller has not checked it)
        if not (_SAFE_LOW <= squares.min() and squares.max() <= _SAFE_HIGH and np.isfinite(XtY).all()):
            return None
        top = np.abs(XtY).max(axis=0)
        if not (top.min() >= _XTY_LOW or (top == 0).all()) or not top.max() <= _XTY_HIGH:
            return None
        G.flat[:: G.shape[0] + 1] += ridge  # + λI, in place
        bound = float(G.trace()) / ridge * _EPS
        p, k = XtY.shape
        if bound > _RIDGE_REFINE and p * p * k <= 64:  # tiny: Python floats beat LAPACK calls through NumPy
            found = _cholesky_tiny(G, XtY)  # its pivots estimate cond(D⁻¹GD⁻¹) eps, D² G's diagonal: ``risk``
            if found:
                beta, C, _, risk = found
                if risk <= _RIDGE_REFINE:
                    return beta if np.isfinite(beta).all() else None
                beta = _ridge_refine(X, Y, ridge, lambda g: np.array(_cholesky_solve(C, g.tolist())), beta)
                return beta if beta is not None and np.isfinite(beta).all() else None
        # G is symmetric positive definite (λ > 0): one LAPACK solve, backward stable; the Cholesky factor's two
        # triangular solves would each be a general solve in NumPy (no triangular solve): 1,000 × 500 took 2.5×
        try:
            beta = np.linalg.solve(G, XtY)
            if bound > _RIDGE_REFINE:
                beta = _ridge_refine(X, Y, ridge, lambda g: np.linalg.solve(G, g), beta)
        except np.linalg.LinAlgError:
            return None
    return beta if beta is not None and np.isfinite(beta).all() else None


def _ridge_refine(X, Y, ridge, solve, beta, steps=6):
    """Refinement steps of the ridge normal equations G β = XᵀY (G = XᵀX + λI) after the first solution ``beta``, each
    step's residual Xᵀ(Y − Xβ) − λβ from X itself (the corrected semi-normal equations) and one ``solve`` with G (a
    LAPACK solve: the inverse would cost three solves' p³, and the usual case takes one step). The first correction's
    relative size r is about the first solution's error, cond(G) eps, and each step shrinks the error by about that
    factor. Over _RIDGE_CONVERGE the steps would converge slowly or not at all (None). The steps stop where the next
    correction is predicted (this one times the last gain, r for the first) under √(r eps) of β, about cond([√λ I; X])
    eps (cond(G) = cond([√λ I; X])²), the first term of the augmented problem's perturbation bound: one step where r is
    under eps^(1/3), the usual case; or where a correction gains less than a factor 4 (the rounding floor of the
    residual; the answer then stands where the last gaining correction was under _RIDGE_SETTLED of β). None where
    anything is not finite, or where the steps run out before the last correction is under _RIDGE_SETTLED."""
    gained = target = None
    for _ in range(steps):
        delta = solve(X.T @ (Y - X @ beta) - ridge * beta)
        size, top = float(np.abs(delta).max()), float(np.abs(beta).max())
        if not np.isfinite(size):
            return None
        if gained is None:
            if not size <= _RIDGE_CONVERGE * top:
                return None
            if size == 0:
                return beta
            target = max(4 * _EPS, math.sqrt(size / top * _EPS)) * top
        elif size > gained / 4:
            return beta if gained <= _RIDGE_SETTLED * top else None
        beta = beta + delta
        if size * size / (gained or top) <= target:
            return beta
        gained = size
    return beta if gained <= _RIDGE_SETTLED * float(np.abs(beta).max()) else None


def _ridge_svd(X, Y, ridge):
    """V (S + λS⁻¹)⁻¹ UᵀY = V S(S² + λ)⁻¹ UᵀY from the SVD X = USVᵀ of X itself (the svd route's printed function
    with S + λS⁻¹ for S; the ridge_route identity with XᵀX = VS²Vᵀ): its error is relative to X's scale for every
    λ, where the SVD of [X; √λ I] perturbs X by eps √λ. X is scaled by one power of two 2^c per problem (ridge is
    not invariant under scaling columns apart) and λ with it, λ 2^-2c = m 2^e; the filter S(S² + λ 2^-2c)⁻¹ is
    computed as 2^-q (S 2^-q + m 2^(e-q) S⁻¹)⁻¹, q = max(e, 0), so that neither S² nor λ 2^-2c overflows or
    underflows, and 2^-q joins the exact unscaling. A zero singular value has filter 0."""
    kx = _max_abs_exponents(X).max(axis=-1)  # (...,): the problem's largest |entry| is in [2^(c-1), 2^c)
    ky = _max_abs_exponents(Y)  # (..., k)
    Xu = _times_power_of_two(X, -kx[..., None, None])
    Yu = _times_power_of_two(Y, -ky[..., None, :])
    m, e = math.frexp(ridge)
    e = e - 2 * kx.astype(np.int64)
    q = np.maximum(e, 0)
    U, s, Vt = np.linalg.svd(Xu, full_matrices=False)
    positive = s > 0
    safe = np.where(positive, s, 1.0)
    with np.errstate(over="ignore", under="ignore"):
        inverse = np.ldexp(m / safe, (e - q)[..., None])  # λ 2^-2c-q / s, s >= 2^-1022 or so: m/s is finite
        s_eff = np.where(positive, np.ldexp(s, -q[..., None]) + inverse, np.inf)  # its inverse: the filter 2^q
    beta_u = _svd_solve(U, s_eff, np.swapaxes(Vt, -1, -2), Yu)
    shift = np.broadcast_to(ky[..., None, :] - (kx + q)[..., None, None], beta_u.shape)
    return _unscale(beta_u, shift, "the ridge solution")


def _ridge_dual(X, Y, ridge):
    """Xᵀ(XXᵀ + λI)⁻¹Y, printed from kernel_ridge_push_through (lemma dual_route): one n×n solve with the token
    Gram matrix; None where its first-order error bound (‖X‖_F² + λ) eps / λ is over _DUAL_RISK or anything
    overflows (the caller then solves the augmented problem)."""
    with np.errstate(over="ignore", invalid="ignore"):
        frobenius = (X * X).sum(axis=(-2, -1))
        if not np.isfinite(frobenius).all():
            return None
        if ((frobenius + ridge) * _EPS / ridge > _DUAL_RISK).any():
            return _ridge_dual_conditioned(X, Y, ridge)
        beta = _printed("ridge_dual")(X, ridge, Y)
    return beta if np.isfinite(beta).all() else None


def _ridge_dual_conditioned(X, Y, ridge):
    """The dual route Xᵀα, α = (XXᵀ + λI)⁻¹Y, where the a-priori bound fails because λ is tiny against ‖X‖²
    but XXᵀ itself is well-conditioned (p > n, full row rank: the usual case): the condition of K = XXᵀ + λI from
    its n eigenvalues, and where cond(K) eps is under _DUAL_RISK a solve with one refinement step of
    K α = Y (residual Y − X(Xᵀα) − λα in float64), as scikit-learn's Ridge does for p > n; else None (the
    caller takes the SVD of X). Issue 30: 200 × 2000, λ = 1e-8 took the SVD (0.2–4 s, 2.7e-13)."""
    with np.errstate(over="ignore", invalid="ignore", under="ignore", divide="ignore"):
        Xt = np.swapaxes(X, -1, -2)
        K = _plus_identity(X @ Xt, ridge)
        if not np.isfinite(K).all():
            return None
        beta = _ridge_dual_settled(X, Xt, K, Y, ridge)
        if beta is not None:
            return beta
        w = np.linalg.eigvalsh(K)
        low, high = w[..., 0], w[..., -1]
        if not (low > np.finfo(float).tiny / _EPS).all() or (high / low * _EPS > _DUAL_RISK).any():
            return None
        # K is symmetric positive definite with a known condition: one LAPACK solve each (the Cholesky factor's two
        # triangular solves would be two general solves here, twice the time)
        try:
            alpha = np.linalg.solve(K, Y)
            residual = Y - X @ (Xt @ alpha) - ridge * alpha
            alpha = alpha + np.linalg.solve(K, residual)
        except np.linalg.LinAlgError:
            return None
        beta = Xt @ alpha
    return beta if np.isfinite(beta).all() else None


def _ridge_dual_settled(X, Xt, K, Y, ridge):
    """Xᵀα with α = K⁻¹Y (K = XXᵀ + λI, finite) by one LAPACK solve and one refinement step (residual in float64),
    without the n eigenvalues of K, where the step's correction is under _DUAL_RISK of α in every problem: the
    correction is about the first solve's error, cond(K) eps |α|, so that is the case where cond(K) eps is about
    _DUAL_RISK or less (the usual one, XXᵀ of full rank), and the refined α is then as accurate as the
    eigenvalue test would have let through. None otherwise (the caller measures cond(K) from its eigenvalues)."""
    try:
        alpha = np.linalg.solve(K, Y)
        delta = np.linalg.solve(K, Y - X @ (Xt @ alpha) - ridge * alpha)
    except np.linalg.LinAlgError:
        return None
    size = np.abs(alpha).max(axis=(-2, -1))
    if not (np.abs(delta).max(axis=(-2, -1)) <= _DUAL_RISK * size).all() or not (size > 0).all():
        return None  # also where anything is NaN
    beta = Xt @ (alpha + delta)
    return beta if np.isfinite(beta).all() else None


def _ridge_spectral(X, Y, ridge):
    """V(Λ + λI)⁻¹VᵀXᵀY, printed from ridge_is_linear_attention (lemma ridge_route), from XᵀX = VΛVᵀ (rounded
    eigenvalues below 0 read as 0: XᵀX is positive semidefinite); warns where cond(XᵀX + λI) eps is over
    _GRAM_RISK. None where XᵀX or XᵀY overflows (the caller then solves the augmented problem)."""
    G, XtY = _gram(X, Y)
    if not (np.isfinite(G).all() and np.isfinite(XtY).all()):
        return None
    lam, V = np.linalg.eigh(G)
    lam = np.maximum(lam, 0.0)
    cond = (lam[..., -1] + ridge) / (lam[..., 0] + ridge)
    risky = cond * _EPS > _GRAM_RISK
    if risky.any():
        where, worst = _where(risky)
        _warn(f"route 'eigh' with ridge={ridge!r}{where}: cond(XᵀX + λI) = {float(np.max(cond)):.1e}{worst}, so its "
              f"error may reach {float(np.max(cond)) * _EPS:.0e} of the coefficients; route='auto' solves the "
              f"augmented least-squares problem to full accuracy")
    with np.errstate(over="ignore", invalid="ignore"):
        beta = _printed("ridge_spectral")(V, lam, ridge, XtY)
    return beta if np.isfinite(beta).all() else None


# --- public functions -------------------------------------------------------------------


def coefficients(X: npt.ArrayLike, Y: npt.ArrayLike, *, route: str = "auto", ridge: float | None = None,
                 weights: npt.ArrayLike | None = None) -> np.ndarray:
    """OLS coefficients β̂ = (XᵀX)⁻¹XᵀY, computed as attention: no n×n or m×n matrix is formed.

    With ``ridge=λ`` the ridge coefficients (XᵀX + λI)⁻¹XᵀY (ridge_is_linear_attention), defined for every X,
    rank-deficient or wider than tall; with ``weights=w`` the weighted least-squares coefficients
    (XᵀWX)⁻¹XᵀWY, W = diag(w): OLS of the whitened rows √w_i x_i, √w_i y_i (weighted_ls_is_attention). Both
    together minimise Σ w_i ‖y_i − x_i β‖² + λ‖β‖².

    Parameters
    ----------
    X : array_like, shape (..., n, p)
        The design, one example per row; leading dimensions are a batch of independent problems.
    Y : array_like, shape (..., n) or (..., n, k)
        The targets; the batch dimensions must equal those of ``X`` (nothing broadcasts).
    route : {"auto", "exact", "eigh", "cholesky", "svd", "qr"}, keyword-only
        Which checked identity evaluates β̂ (see ``ROUTES`` and the module docstring). ``"auto"`` (the default)
        is fast: the Cholesky answer where trusted, refined in float64 or Householder QR elsewhere, the minimum-norm
        solution with a RankDeficientWarning where X is rank-deficient. It is about as accurate as
        ``numpy.linalg.lstsq`` on Gaussian, near-collinear, rank-deficient, wide and uncentred data. Uncentred
        columns (an intercept column and columns sharing an offset) were its hard case (issue 30): float64 refinement
        stopped at the rounding of Y − Xβ, up to 1,000 times lstsq's error in about 1 problem in 13; its gradients
        are now centred. On 6,589 random uncentred problems of five kinds none was beyond 10 times lstsq's error
        (docs/benchmarks.md), measured against the "exact" route of then, which kept the same Cholesky answer as
        "auto" where its estimate trusted it; against the exact solution, a trusted answer can be further off (38
        times lstsq's error on one 2,639 × 4 problem of the tests' sweep: the trust test is an estimate, not a
        bound). ``"exact"`` is the least-squares solution of the float64 data as given, rounded once: every
        coefficient is the float64 (float32 for float32 data) nearest to the exact rational solution, for one
        problem or each problem of a stack. It solves the normal equations exactly in integers (every float is an
        integer times a power of two; fraction-free Gaussian elimination), O(n p²) for the exact sums and O(p³) on
        integers of about p·(2·53 + log₂ n) bits for the solve: 0.2 ms at 11 × 2, 0.1 s at 100,000 × 20, 0.5 s
        at 2,000 × 64; at most 64 columns (more raise ValueError). Its rank is the exact rank of the data: the
        exact minimum-norm solution where X is exactly rank-deficient, and the exact (possibly huge) solution, with
        a RankDeficientWarning, where X is rank-deficient only to rounding. Use it where the coefficients' own
        digits matter (certified values, ill-conditioned designs), not for prediction.
        ``"eigh"`` and ``"cholesky"`` form XᵀX, which squares the condition of X: use them only where X is
        well-conditioned once its columns are scaled; on ill-conditioned X their answer loses digits or is
        truncated, and they warn. ``"svd"`` and ``"qr"`` are backward stable.
    ridge : float, optional, keyword-only
        λ > 0: ridge regression. The route then solves the least-squares problem of the rows √λ I stacked on X
        (whose Gram matrix is XᵀX + λI: "eigh" evaluates V(Λ + λI)⁻¹VᵀXᵀY, lemma ridge_route; "svd" uses the
        SVD of X itself, V S(S² + λ)⁻¹UᵀY), accurate relative to X's own scale for every λ. With
        ``route="auto"`` and p <= n, one LAPACK solve of XᵀX + λI (scikit-learn's Ridge(solver="cholesky") at
        about its cost), refined with residuals from X itself where its condition, bounded by its trace over λ,
        times eps may be over 1e-14: one step in the usual case, more where the first is large, to within the
        perturbation bound of the augmented problem (a backward-stable solver's guarantee; on near-collinear X
        about scikit-learn's Ridge(solver="svd")'s error; ``"exact"`` is exact); where the steps would not
        converge (cond(XᵀX + λI) eps about 1e-2 or more), the augmented problem by Householder QR. With
        ``route="auto"`` and more columns than rows (p > n) the dual (token) route Xᵀ(XXᵀ + λI)⁻¹Y
        (kernel_ridge_push_through, lemma dual_route) is taken instead, an n×n Cholesky factorization with one
        step of refinement, where (‖X‖_F² + λ) eps / λ, a bound on its error to first order, is under 1e-10
        (else the SVD of X). ``"exact"`` is the exact solution of (XᵀX + λI) β = XᵀY (XᵀWX, XᵀWY with weights)
        for the data and the float λ as given, rounded once, for every shape up to 64 columns.
    weights : array_like, shape (..., n), optional, keyword-only
        Positive finite weights, one per row (per example) of every problem.

    Returns
    -------
    numpy.ndarray, shape (..., p) or (..., p, k)
        β̂; the minimum-norm solution where ``X`` is rank-deficient (without ``ridge``). float32 when every
        argument is float32 (or float16), else float64 (the arithmetic is float64 either way).

    Raises
    ------
    TypeError
        An argument is not a real numeric array (a masked array is refused: its mask would be ignored).
    ValueError
        A bad shape, an empty array, NaN or infinity in the data, an unknown route, or a solution outside the
        result's float range (an overflow, or an underflow that would leave it too few bits); a ridge that is not
        positive and finite (zero, negative, NaN); weights that are not positive and finite or not one per row;
        route ``"exact"`` with more than 64 columns.

    Warns
    -----
    AccuracyWarning
        (a UserWarning and a RuntimeWarning) Route ``"eigh"`` or ``"cholesky"`` truncated the answer (it names
        the rank it used, X's rank and the condition estimate) or its error to first order, cond(X)² eps, is over
        1e-6; a minimum-norm answer dropped columns that are independent once scaled.
    RankDeficientWarning
        (a UserWarning and a RuntimeWarning) Route ``"auto"``: X is numerically rank-deficient (rank under
        min(n, p)); the message names the numerical rank and the condition estimate; the answer is the
        minimum-norm least-squares solution, as ``numpy.linalg.lstsq`` gives. Route ``"exact"``: X is numerically
        rank-deficient but of full rank exactly; the answer is the exact solution.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    >>> beta = coefficients(X, [1.0, 2.0, 4.0])
    >>> np.allclose(beta, [5 / 6, 1.5])
    True
    >>> coefficients(X.astype(np.float32), np.float32([1, 2, 4])).dtype
    dtype('float32')
    >>> lam = 0.5
    >>> np.allclose(coefficients(X, [1.0, 2.0, 4.0], ridge=lam),
    ...             np.linalg.solve(X.T @ X + lam * np.eye(2), X.T @ [1.0, 2.0, 4.0]))
    True
    >>> w = np.array([1.0, 4.0, 1.0])
    >>> np.allclose(coefficients(X, [1.0, 2.0, 4.0], weights=w),
    ...             np.linalg.lstsq(X * np.sqrt(w)[:, None], np.sqrt(w) * [1.0, 2.0, 4.0], rcond=None)[0])
    True
    """
    X, Y, _, vector_y, _, dtype = _validate(X, Y, None, route)
    if route == "exact":  # rounded once from the exact solution: to float32 itself where the result is float32
        beta = _result(_exact(X, Y, ridge, weights, 24 if dtype is np.float32 else 53), dtype)
    else:
        beta = _result(_solve(X, Y, route, ridge, weights), dtype)
    return beta[..., 0] if vector_y else beta


def predict(X: npt.ArrayLike, Y: npt.ArrayLike, X_query: npt.ArrayLike, *, route: str = "auto",
            ridge: float | None = None, weights: npt.ArrayLike | None = None) -> np.ndarray:
    """Predictions X_q β̂, evaluated as X_q (L (Lᵀ (XᵀY))) right to left.

    Parameters
    ----------
    X : array_like, shape (..., n, p)
        The design (the keys), one example per row.
    Y : array_like, shape (..., n) or (..., n, k)
        The targets (the values).
    X_query : array_like, shape (..., m, p) or (..., p)
        The queries; a single query gives a single prediction per problem.
    route : {"auto", "exact", "eigh", "cholesky", "svd", "qr"}, keyword-only
        As in :func:`coefficients`.
    ridge : float, optional, keyword-only
        λ > 0: the ridge predictions X_q (XᵀX + λI)⁻¹XᵀY = (X_q Xᵀ)(XXᵀ + λI)⁻¹Y, as in :func:`coefficients`.
    weights : array_like, shape (..., n), optional, keyword-only
        Positive weights, one per row: the weighted least-squares predictions, as in :func:`coefficients`.

    Returns
    -------
    numpy.ndarray, shape (..., m[, k]), (...[, k]) for a single query
        The predictions; float32 when every argument is float32 (or float16), else float64.

    Raises
    ------
    TypeError
        An argument is not a real numeric array (or a masked array).
    ValueError
        As in :func:`coefficients`, or queries whose shape does not match ``X``, or predictions outside the float
        range.

    Warns
    -----
    AccuracyWarning
        As in :func:`coefficients`.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    >>> round(float(predict(X, [1.0, 2.0, 4.0], [1.0, 3.0])), 12)  # 5/6 + 3 · 3/2
    5.333333333333
    >>> round(float(predict(X, [1.0, 2.0, 4.0], [1.0, 3.0], ridge=1e-9)), 6)  # a tiny ridge: nearly OLS
    5.333333
    """
    X, Y, Q, vector_y, vector_q, dtype = _validate(X, Y, X_query, route)
    if route == "exact":  # X_q β exactly, rounded once
        out = _exact_predictions(X, Y, Q, ridge, weights, 24 if dtype is np.float32 else 53)
        out = _result(out, dtype, "the prediction matrix X_query β̂")
    else:
        beta = _result(_solve(X, Y, route, ridge, weights), np.float64)
        out = _result(_predictions(Q, beta), dtype, "the prediction matrix X_query β̂")
    if vector_y:
        out = out[..., 0]
    return out[..., 0, :] if vector_q and not vector_y else out[..., 0] if vector_q else out


def _predictions(Q, beta):
    """X_q β̂; a ValueError where the predictions do not fit float64: an overflow, or a group (one problem's
    predictions of one target) in which every product q_j β_j is under _TINY_RESULT but not all are 0."""
    with np.errstate(over="ignore", invalid="ignore"):  # named below
        out = Q @ beta
    if out.size <= 64:
        values = out.ravel().tolist()
        if all(map(math.isfinite, values)) and min(map(abs, values)) >= _TINY_RESULT:
            return out
    elif np.isfinite(out).all() and np.abs(out).min() >= _TINY_RESULT:
        return out
    if not np.isfinite(out).all():
        raise ValueError("the prediction matrix X_query β̂ does not fit in float64 (overflow); rescale X_query or Y")
    top_q, top_beta = np.abs(Q).max(axis=-2)[..., :, None], np.abs(beta)  # (..., p, 1) and (..., p, k)
    with np.errstate(divide="ignore"):  # log2 of 0 is -inf: no product there
        largest = (np.log2(top_q) + np.log2(top_beta)).max(axis=-2)  # the largest product's log2, per group
    if ((np.abs(out).max(axis=-2) < _TINY_RESULT) & (largest > -np.inf) & (largest < math.log2(_TINY_RESULT))).any():
        raise _underflow("the prediction matrix X_query β̂", "float64", _TINY_RESULT)
    return out


def _factor(X, route):
    """(L_s, X_s, kx): X_s = X 2^-kx with every column scaled by a power of two (``_max_abs_exponents``) and a factor
    L_s with L_s L_sᵀ = (X_sᵀX_s)⁻¹, so that L = 2^-kx L_s (by rows) has L Lᵀ = (XᵀX)⁻¹ and X L = X_s L_s. Where X is
    rank-deficient, the minimum-norm factor (L Lᵀ = (XᵀX)⁺ on the row space: pseudo_inverse) of X scaled by one
    power of two (kx then the same for every column), since the minimum norm changes when columns are scaled apart."""
    _require_finite(("X", X))
    kx = _max_abs_exponents(X)
    X_s = _times_power_of_two(X, -kx[..., None, :])
    L_s, deficient = _scaled_factor(X_s, route)
    if deficient.any():
        kx[deficient] = kx[deficient].max(axis=-1, keepdims=True)
        X_s[deficient] = _times_power_of_two(X[deficient], -kx[deficient][..., None, :])
        L_s[deficient] = _scaled_factor(X_s[deficient], route, minimum_norm=True)[0]
    return L_s, X_s, kx


def _scaled_factor(X, route, minimum_norm=False):
    """(L, deficient) for the route's factor of X (already scaled: see _factor): "auto" and "svd" V S⁻¹ from the
    SVD of X (the factor VΛ^{-1/2} of XᵀX = VΛVᵀ, computed without XᵀX, so as accurate as X allows), "eigh"
    VΛ^{-1/2}, "cholesky" C⁻ᵀ, "qr" R⁻¹; ``deficient`` per problem, where a factor of full rank was not found
    (the minimum-norm factor is then L: with ``minimum_norm``, checked for truncation by _warn_truncated)."""
    size = max(X.shape[-2:])
    if route in ("auto", "exact", "svd") or route == "qr" and (minimum_norm or X.shape[-2] < X.shape[-1]):
        _, s, V = _svd_factors(X)
        if minimum_norm:
            _warn_truncated(route, X, np.isfinite(s).sum(axis=-1))
        return V * (1 / s)[..., None, :], np.isinf(s).any(axis=-1) | (X.shape[-2] < X.shape[-1])
    if route == "qr":
        _, R, deficient = _qr_each(X)
        R = np.where(deficient[..., None, None], np.eye(R.shape[-1]), R)  # replaced by the caller
        return _solve_triangular(R, np.broadcast_to(np.eye(R.shape[-1]), R.shape), False, False), deficient
    G = np.swapaxes(X, -1, -2) @ X
    if route == "eigh" or minimum_norm:
        lam, V = _eigh_factors(G, size)
        deficient = np.isinf(lam).any(axis=-1)
        if minimum_norm:
            _warn_truncated(route, X, np.isfinite(lam).sum(axis=-1))
        else:
            _warn_inaccurate(route, np.where(deficient, np.inf, lam[..., -1] / lam[..., 0]))
        return V * (lam**-0.5)[..., None, :], deficient
    C, deficient, cond2 = _cholesky_factors(G, size)
    _warn_inaccurate(route, np.where(deficient, np.inf, cond2))
    identity = np.broadcast_to(np.eye(C.shape[-1]), C.shape)
    return np.swapaxes(_solve_triangular(C, identity, True, False), -1, -2), deficient


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
    route : {"auto", "exact", "eigh", "cholesky", "svd", "qr"}, keyword-only
        Which factor L, of the exactly column-scaled X (L = D⁻¹ L_s for X = X_s D): ``"auto"``, ``"exact"``, ``"svd"``
        V S⁻¹ from the SVD of X (the factor VΛ^{-1/2} of XᵀX = VΛVᵀ, without forming XᵀX, so as accurate as X
        allows), ``"eigh"`` VΛ^{-1/2}, ``"cholesky"`` C⁻ᵀ, ``"qr"`` R⁻¹; the Gram routes warn as in
        :func:`coefficients`. L is not unique (any LQ with Q orthogonal serves) and VS⁻¹ is irrational, so
        ``"exact"`` here computes nothing exactly: it names the SVD factor, as ``"svd"`` does.

    Returns
    -------
    W_Q, W_K, W_V : numpy.ndarray, shape (..., p, p)
        Three copies of L.
    P : numpy.ndarray, shape (..., p) or (..., p, k)
        The output projection LᵀXᵀY. All four float32 when every argument is float32 (or float16).

    Raises
    ------
    TypeError
        An argument is not a real numeric array (or a masked array).
    ValueError
        A bad shape, an empty array, NaN or infinity in the data, or an unknown route; L (about 1/X: beyond the
        float range for subnormal X) or P outside the float range.

    Warns
    -----
    AccuracyWarning
        As in :func:`coefficients`.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    >>> W_Q, W_K, W_V, P = attention_parameters(X, [1.0, 2.0, 4.0])
    >>> np.allclose(W_Q @ W_K.T, np.linalg.inv(X.T @ X)), np.allclose(X @ W_V @ P, X @ [5 / 6, 1.5])
    (True, True)
    """
    X, Y, _, vector_y, _, dtype = _validate(X, Y, None, route)
    _require_finite(("X", X), ("Y", Y))
    L, X, kx = _factor(X, route)  # L and X column-scaled: L Lᵀ = (XᵀX)⁻¹ with L 2^-kx and X 2^kx
    ky = _max_abs_exponents(Y)
    Y = _times_power_of_two(Y, -ky[..., None, :])
    P = _printed("P")(L, X, Y)  # LᵀXᵀY: the scales of the columns of X cancel
    named_L, named_P = "the attention factor W_Q = W_K = W_V = L (L Lᵀ = (XᵀX)⁻¹)", "the output projection P"
    L = _result(_unscale(L, -kx[..., :, None], named_L, (-2, -1)), dtype, named_L, (-2, -1))
    P = _result(_unscale(P, ky[..., None, :], named_P), dtype, named_P)
    return L, L.copy(), L.copy(), (P[..., 0] if vector_y else P)


def attention_scores(X: npt.ArrayLike, X_query: npt.ArrayLike, *, route: str = "auto") -> np.ndarray:
    """The m×n score matrix (X_q L)(X L)ᵀ, for teaching: :func:`predict` never forms it.

    Parameters
    ----------
    X : array_like, shape (..., n, p)
        The design (the keys).
    X_query : array_like, shape (..., m, p) or (..., p)
        The queries.
    route : {"auto", "exact", "eigh", "cholesky", "svd", "qr"}, keyword-only
        Which factor L, as in :func:`attention_parameters`.

    Returns
    -------
    numpy.ndarray, shape (..., m, n), or (..., n) for a single query
        The scores; scores @ Y are the predictions. float32 when both arguments are float32 (or float16).

    Raises
    ------
    TypeError
        An argument is not a real numeric array (or a masked array).
    ValueError
        A bad shape, an empty array, NaN or infinity in the data, or an unknown route. The scores themselves are
        dimensionless (computed from the column-scaled X), so in range for any X but queries far larger than X.

    Warns
    -----
    AccuracyWarning
        As in :func:`coefficients`.

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
    L, X, kx = _factor(X, route)  # L and X column-scaled: L Lᵀ = (XᵀX)⁻¹ with L 2^-kx and X 2^kx
    with np.errstate(over="ignore"):  # an overflow is named by _result
        X_query = _times_power_of_two(X_query, -kx[..., None, :])
    # (X_q L)(X L)ᵀ with the scaled factors: the scales of the columns cancel
    scores = _result(_printed("scores")(X_query, L, X), dtype, "the attention score matrix", (-2, -1))
    return scores[..., 0, :] if vector_q else scores


# --- streaming least squares and k layers -----------------------------------------------------


_RLS_BLOCK = 32  # single rows wait in a block of this many, triangularised together
_RLS_SAFE = 2.0**1000  # a single row whose squared norm is over this (or not finite) takes the checked path


class RecursiveLeastSquares:
    """Streaming OLS or ridge: causal linear attention with a square-root memory (causal_online_ls).

    The checked theorem causal_online_ls updates the slow memory P_t = (X_tᵀX_t + λI)⁻¹ by Sherman–Morrison and
    the fast memory S_t = X_tᵀY_t by a sum. Updating P itself loses accuracy over long streams (its rounding
    errors are amplified by cond(XᵀX)), so this class keeps the same information as a square root: upper
    triangles T = [R Z; 0 ·] with RᵀR = XᵀX + λI and Z = R⁻ᵀXᵀY over the rows so far (the square-root
    information filter; ridge enters as the first triangle, R = √λ I, Z = 0). A chunk of rows becomes the
    triangle of its own Householder QR factorization; single rows wait in a block of 32 (_RLS_BLOCK) that is
    triangularised when full. Triangles are merged as in a merge sort: the QR factorization of two stacked
    triangles [T₁; T₂] is the triangle of all their rows, and the newest is merged into the one below while it
    summarises at least as many rows, so at most about log₂(rows / 32) triangles are kept. Reading
    :attr:`coefficients` triangularises all of them and the waiting rows together (kept until the next update)
    and solves β = R⁻¹Z = (XᵀX + λI)⁻¹XᵀY. Every step is orthogonal (backward stable), and there is no
    refinement: the error is that of a backward stable solver (about lstsq's), growing with cond(X) like it.
    Prefer a batch solve (:func:`coefficients`) when all rows are at hand and accuracy matters at high
    condition: it refines with extended-precision gradients (1e-12 against lstsq's 5e-10 at cond 1e8 and 10⁶
    rows, ``docs/benchmarks.md``), which a stream that does not keep its rows cannot do.

    Accuracy: where each row updated the one triangle in turn (the textbook square-root recursion), the rounding
    errors of its t steps add up like a random walk, about √t eps of the state; merged like this, each row's
    data pass through about log₂(t) factorizations, each of rows of comparable size. Measured on streams of
    10⁵ rows, p = 16, against the exact least-squares solution (``tests/test_numerics_beyond.py``): as single
    rows, in chunks of 10 and of 1,000, 0.5-1.1× the error of numpy.linalg.lstsq on all rows at once, on
    Gaussian data (cond 1) and on an ill-conditioned stream (cond 1e8); one triangle updated by every row or
    chunk in turn was 52× (single rows), 17× (chunks of 10) on the Gaussian stream. An update of one row is a
    copy and a norm check, and one QR factorization of 32 rows (and on average about one merge) per 32 rows:
    measured 11× faster than one QR factorization per row (p = 16: 21 µs against 236 µs on a loaded machine).
    A chunk whose rows would take a column norm past 2^1022 is refused (ValueError, nothing kept); so is a
    single row that completes a block past it.

    Parameters
    ----------
    p : int
        Number of columns of X (features).
    k : int, default 1
        Number of targets. With k = 1 targets may come as a vector (one per row) and :attr:`coefficients` is a
        vector; with k > 1 targets are rows of k values and :attr:`coefficients` has shape (p, k).
    ridge : float or None, keyword-only
        λ > 0 for ridge regression, defined from the first row on; None (or leave it out) for OLS, which needs rows
        enough for XᵀX to be invertible before :attr:`coefficients` is read.

    Raises
    ------
    TypeError
        p or k not an integer, data not real numeric arrays.
    ValueError
        p or k under 1, a ridge that is not positive and finite; data of the wrong shape or not finite
        (:meth:`update`, which then changes nothing); the coefficients read while XᵀX is singular or too
        ill-conditioned to give them (OLS), or outside the float range.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.standard_normal((100, 3)), rng.standard_normal(100)
    >>> rls = RecursiveLeastSquares(3)
    >>> for i in range(0, 100, 20):
    ...     rls.update(X[i:i + 20], y[i:i + 20])
    >>> rls.update(X[0], y[0])  # one more row, given as a vector
    >>> X1, y1 = np.vstack([X, X[:1]]), np.append(y, y[0])
    >>> bool(np.allclose(rls.coefficients, np.linalg.lstsq(X1, y1, rcond=None)[0], rtol=1e-12))
    True
    >>> rls.rows, rls.predict([[1.0, 0.0, 0.0]]).shape
    (101, (1,))
    """

    def __init__(self, p: int, k: int = 1, *, ridge: float | None = None) -> None:
        for name, value in (("p", p), ("k", k)):
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"{name} must be an integer, not {type(value).__name__}")
            if value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        self.p, self.k = int(p), int(k)
        self.ridge = _ridge_value(ridge)
        size = self.p + self.k
        self._triangles = []  # [(T, rows summarised)], the oldest first, rows non-increasing
        if self.ridge is not None:
            ridge_rows = np.zeros((size, size))
            ridge_rows[:self.p, :self.p] = math.sqrt(self.ridge) * np.eye(self.p)
            self._triangles.append((ridge_rows, 0))
        self._pending = np.empty((_RLS_BLOCK, size))  # single rows [x y] not yet triangularised
        self._waiting = 0
        self._state = None  # the triangle of everything, while no update has come since it was formed
        self._kept = None  # the triangle of the kept triangles, while none has been pushed since
        self._norms = np.zeros(size)  # squared column norms of every row so far (ridge rows too), times 2^-1024
        if self.ridge is not None:
            self._norms[:self.p] = self.ridge * 2.0**-1024
        self.rows = 0

    def update(self, X_rows: npt.ArrayLike, Y_rows: npt.ArrayLike) -> None:
        """Add rows (one row as a vector of p, or a chunk (r, p)) and their targets (a number or r numbers for
        k = 1, or rows of k values). A chunk is triangularised by one QR factorization; single rows wait in a
        block of _RLS_BLOCK."""
        if (type(X_rows) is np.ndarray and X_rows.shape == (self.p,) and X_rows.dtype == np.float64
                and self.k == 1 and type(Y_rows) in (float, np.float64)):  # one row, the common streaming call
            row = self._pending[self._waiting]
            row[:self.p] = X_rows
            row[self.p] = Y_rows
            if row @ row <= _RLS_SAFE:  # every entry finite (NaN fails) and far from overflowing in a QR
                self._waited(1)
                return
        X = _array("X_rows", X_rows, 1)
        X = X[None, :] if X.ndim == 1 else X
        if X.ndim != 2 or X.shape[1] != self.p:
            raise ValueError(f"X_rows must have shape ({self.p},) or (r, {self.p}), got {np.shape(X_rows)}")
        Y = _array("Y_rows", Y_rows, 0)
        if self.k == 1 and Y.shape in ((), (len(X),)):  # one target per row, as numbers
            Y = Y.reshape(len(X), 1)
        elif len(X) == 1 and Y.shape == (self.k,):  # one row of k targets
            Y = Y[None, :]
        if Y.shape != (len(X), self.k):
            raise ValueError(f"Y_rows must hold {len(X)} row(s) of {self.k} target(s), got shape {np.shape(Y_rows)}")
        X, Y = X.astype(np.float64, copy=False), Y.astype(np.float64, copy=False)
        _require_finite(("X_rows", X), ("Y_rows", Y))
        rows = np.concatenate([X, Y], axis=1)
        if self._waiting + len(rows) <= _RLS_BLOCK and ((rows * rows).sum(axis=1) <= _RLS_SAFE).all():
            self._pending[self._waiting:self._waiting + len(rows)] = rows  # a few rows wait like single rows
            self._waited(len(rows))
            return
        triangle = self._triangle(rows)
        norms = self._grown(triangle)
        self._push(triangle, len(X))
        self._state, self._norms = None, norms
        self.rows += len(X)

    def _waited(self, count):
        """Count the ``count`` rows just written below the waiting ones; a full block becomes a triangle (where
        it would overflow, those rows are refused: ValueError, nothing kept)."""
        if self._waiting + count == _RLS_BLOCK:
            triangle = self._triangle(self._pending)
            norms = self._grown(triangle)
            self._push(triangle, _RLS_BLOCK)
            self._norms, self._waiting = norms, 0
        else:
            self._waiting += count
        self._state = None
        self.rows += count

    def _grown(self, triangle):
        """The squared column norms (times 2^-1024) with the rows of ``triangle`` (their QR triangle: the same
        column norms) added; ValueError where it overflowed or a column norm of all rows would pass 2^1022, so that
        no merge overflows (a triangle's entries are at most the column norms)."""
        if not np.isfinite(triangle).all():
            raise ValueError("the streamed data overflow float64 (their column norms): rescale X or Y")
        scaled = triangle * 2.0**-512
        norms = self._norms + np.einsum("ij,ij->j", scaled, scaled)
        if not (norms <= 2.0**1020).all():
            raise ValueError("the streamed data overflow float64 (their column norms): rescale X or Y")
        return norms

    def _triangle(self, rows):
        """The (p + k)-row upper triangle of the QR factorization of ``rows`` (zero rows below where fewer)."""
        with np.errstate(over="ignore", invalid="ignore"):
            T = np.linalg.qr(rows, mode="r")
        if len(T) < self.p + self.k:
            T = np.concatenate([T, np.zeros((self.p + self.k - len(T), self.p + self.k))], axis=0)
        return T

    def _push(self, triangle, rows):
        """Add a triangle; merge the newest into the one below while it summarises at least as many rows. A merge
        that overflows raises before anything is kept."""
        stack = list(self._triangles)
        while stack and stack[-1][1] <= rows:
            below, count = stack.pop()
            triangle = self._triangle(np.concatenate([below, triangle], axis=0))
            rows += count
        if not np.isfinite(triangle).all():
            raise ValueError("the streamed data overflow float64 (their squared norms): rescale X or Y")
        stack.append((triangle, rows))
        self._triangles, self._kept = stack, None

    def _combined(self):
        """The triangle of every row so far (and the ridge rows): the QR factorization of the kept triangles
        (cached until the next push) with the waiting rows below, cached until the next update. Never fed back
        into the kept triangles, so reading after every row adds no rounding to the stream."""
        if self._kept is None:  # changes once per block of single rows or chunk: reads in between reuse it
            if len(self._triangles) > 1:
                self._kept = self._triangle(np.concatenate([T for T, _ in self._triangles], axis=0))
            elif self._triangles:
                self._kept = self._triangles[0][0]
            else:
                self._kept = np.zeros((self.p + self.k, self.p + self.k))
        if self._state is None:
            pending = self._pending[:self._waiting]
            self._state = self._triangle(np.concatenate([self._kept, pending])) if self._waiting else self._kept
        return self._state

    @property
    def coefficients(self) -> np.ndarray:
        """β = R⁻¹Z = (XᵀX + λI)⁻¹XᵀY of every row so far: shape (p,) for k = 1, else (p, k)."""
        state = self._combined()
        R, Z = state[:self.p, :self.p], state[:self.p, self.p:]
        if self.ridge is None:
            if self.rows < self.p:
                raise ValueError(f"OLS needs at least p = {self.p} rows before its coefficients, got {self.rows} "
                                 f"(or give a ridge)")
            s = np.linalg.svd(R, compute_uv=False)  # those of X: the rank test of numpy.linalg.lstsq
            if not s[-1] > s[0] * max(self.rows, self.p) * _EPS:
                raise ValueError(f"XᵀX of the {self.rows} rows so far is singular (X is rank-deficient): no unique "
                                 f"OLS coefficients; give a ridge, or stream more rows")
        beta = _result(_solve_triangular(R, Z, False, False), np.float64, "the streamed coefficients")
        return beta[:, 0] if self.k == 1 else beta

    def predict(self, X_query: npt.ArrayLike) -> np.ndarray:
        """X_q β for queries (m, p) or one query (p,): shape (m,) / () for k = 1, else (m, k) / (k,)."""
        Q = _array("X_query", X_query, 1)
        single = Q.ndim == 1
        Q = Q[None, :] if single else Q
        if Q.ndim != 2 or Q.shape[1] != self.p:
            raise ValueError(f"X_query must have shape ({self.p},) or (m, {self.p}), got {np.shape(X_query)}")
        Q = Q.astype(np.float64, copy=False)
        _require_finite(("X_query", Q))
        beta = self.coefficients.reshape(self.p, self.k)
        out = _result(_predictions(Q, beta), np.float64, "the prediction matrix X_query β̂")
        out = out[0] if single else out
        return out[..., 0] if self.k == 1 else out


def multi_layer_predict(X: npt.ArrayLike, Y: npt.ArrayLike, X_query: npt.ArrayLike, *, layers: int,
                        step: float | npt.ArrayLike) -> np.ndarray:
    """The prediction of k layers of linear self-attention: X_q β_k, β_k after k preconditioned gradient steps.

    multi_layer_gd checks that k layers with W_Q = [Γ; 0], W_K = [I; 0], W_V = [0, 0; 0, −I] and residual
    connections leave −X_q β_k in the query's label slot, where β_0 = 0 and β_{t+1} = β_t + ΓXᵀ(Y − Xβ_t): k
    steps of gradient descent on ½‖Y − Xβ‖² preconditioned by Γ. This evaluates that recurrence (p×p and p×k
    products; no token matrix is formed). β_k = β̂ − (I − ΓXᵀX)^k β̂ for invertible XᵀX (β̂ the OLS
    coefficients), so the layers converge to OLS as fast as the powers of I − ΓXᵀX vanish: for Γ = (XᵀX)⁻¹ one
    layer is OLS, for Γ = ηI they converge when 0 < η < 2 / λ_max(XᵀX), at the rate max_i abs(1 − η λ_i).

    Parameters
    ----------
    X : array_like, shape (..., n, p)
        The context (keys), one example per row; leading dimensions are a batch.
    Y : array_like, shape (..., n) or (..., n, k)
        The targets (values).
    X_query : array_like, shape (..., m, p) or (..., p)
        The queries.
    layers : int, keyword-only
        k >= 0, the number of layers (0 layers predict 0).
    step : float or array_like of shape (p, p) or (..., p, p), keyword-only
        Γ = W_Q W_Kᵀ restricted to the features: a number η (Γ = ηI) or a p×p matrix.

    Returns
    -------
    numpy.ndarray, shape (..., m[, k]), (...[, k]) for a single query
        The predictions X_q β_k (float64).

    Raises
    ------
    TypeError
        An argument is not a real numeric array, or ``layers`` not an integer.
    ValueError
        Bad shapes, NaN or infinity, negative ``layers``; iterates that leave the float range (the steps diverge:
        Γ too large), named.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    >>> y, q = [1.0, 2.0, 4.0], [1.0, 3.0]
    >>> one = multi_layer_predict(X, y, q, layers=1, step=np.linalg.inv(X.T @ X))  # Γ = (XᵀX)⁻¹: OLS at once
    >>> round(float(one), 12)
    5.333333333333
    >>> round(float(multi_layer_predict(X, y, q, layers=500, step=0.1)), 9)  # small steps converge to it
    5.333333333
    """
    if isinstance(layers, (bool, np.bool_)) or not isinstance(layers, (int, np.integer)):
        raise TypeError(f"layers must be an integer, not {type(layers).__name__}")
    if layers < 0:
        raise ValueError(f"layers must be at least 0, got {layers}")
    X, Y, Q, vector_y, vector_q, _ = _validate(X, Y, X_query)
    _require_finite(("X", X), ("Y", Y))
    G = _array("step", step, 0).astype(np.float64, copy=False)
    p = X.shape[-1]
    if G.ndim == 0:
        G = float(G) * np.eye(p)
    elif G.ndim < 2 or G.shape[-2:] != (p, p) or G.shape[:-2] not in ((), X.shape[:-2]):
        raise ValueError(f"step must be a number or a {p}×{p} matrix (per problem), got shape {np.shape(step)}")
    _require_finite(("step", G))
    Xt = np.swapaxes(X, -1, -2)
    GXtY, GXtX = G @ (Xt @ Y), G @ (Xt @ X)
    beta = np.zeros(X.shape[:-2] + (p, Y.shape[-1]))
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(int(layers)):  # β_{t+1} = β_t + ΓXᵀY − ΓXᵀXβ_t
            beta = beta + (GXtY - GXtX @ beta)
    if not np.isfinite(beta).all():
        raise ValueError(f"the iterates β_t of {layers} layers overflow float64: the steps diverge (the step Γ is "
                         f"too large: I − ΓXᵀX must have spectral radius under 1)")
    out = _predictions(Q, beta)
    if vector_y:
        out = out[..., 0]
    return out[..., 0, :] if vector_q and not vector_y else out[..., 0] if vector_q else out


# --- causal linear attention, chunkwise, and least squares on every prefix (issue 42) -----------------
#
# Fixed numerics (nothing here is printed yet): the chunk identities they evaluate are stated in the docstrings,
# and tests/test_linear_attention_numerics.py checks them against the token-by-token recurrences in float64.

_CHUNK_WORK = 1 << 22  # problems of a batch are taken a group at a time, about this many float64 per array
_CHUNK_CACHE = 1 << 15  # a call on a group of chunks: temporaries of about this many float64 (256 KiB)
_WY_BLOCK = 8  # the WY solve: diagonal blocks of this many rows, each inverted by a finite product (N⁸ = 0)


def _count(name, value, least=1):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}")
    if value < least:
        raise ValueError(f"{name} must be at least {least}, got {value}")
    return int(value)


def _per_step(name, value, steps):
    """A scalar or an array that broadcasts to ``steps`` (the leading dimensions and T) without changing it: float64
    of that shape, finite; (array, given as an array)."""
    array = _array(name, value, 0)
    try:
        shape = np.broadcast_shapes(array.shape, steps)
    except ValueError:
        shape = None
    if shape != steps:
        raise ValueError(f"{name} must be a number or an array of shape {steps} (one per step, (..., T); it may "
                         f"broadcast to it), got shape {array.shape}")
    out = np.broadcast_to(array.astype(np.float64, copy=False), steps)
    _require_finite((name, out))
    return out, array


def _attention_inputs(Q, K, V, beta, decay, chunk, state, delta):
    """(Q, K, V as float64 (B, T, d), β and γ as float64 (B, T) or None, the scalar γ or None, S₀ (B, d_v, d_k) or
    None, chunk, leading shape, result dtype)."""
    chunk = _count("chunk", chunk)
    Q, K, V = _array("Q", Q, 2), _array("K", K, 2), _array("V", V, 2)
    if K.shape != Q.shape:
        raise ValueError(f"K must have the shape of Q, {Q.shape} (..., T, d_k), got {K.shape}")
    if V.ndim != Q.ndim or V.shape[:-1] != Q.shape[:-1]:
        raise ValueError(f"V must have shape {Q.shape[:-1] + ('d_v',)} to match Q of shape {Q.shape}, got {V.shape}")
    steps, (dk, dv) = Q.shape[:-1], (Q.shape[-1], V.shape[-1])
    given = [Q, K, V]
    for name, a in (("Q", Q), ("K", K), ("V", V)):
        _require_finite((name, a))
    B, T = math.prod(steps[:-1]), steps[-1]
    gates = {}
    for name, value in (("beta", beta), ("decay", decay)):
        if value is None:
            gates[name] = None
            continue
        array, original = _per_step(name, value, steps)
        if isinstance(value, (np.ndarray, np.generic)):
            given.append(original)
        gates[name] = array.reshape(B, T)
    if delta and gates["beta"] is None:
        raise ValueError("beta is required: one write strength per step, (..., T), or a number")
    scalar = None
    if decay is not None and np.ndim(decay) == 0:
        scalar = float(gates["decay"].flat[0])
    S0 = None
    if state is not None:
        S0 = _array("state", state, 2)
        if S0.shape != steps[:-1] + (dv, dk):
            raise ValueError(f"state must have shape {steps[:-1] + (dv, dk)} (..., d_v, d_k): the d_v×d_k state S "
                             f"with o_t = S_t q_t, got {S0.shape}")
        _require_finite(("state", S0))
        given.append(S0)
        S0 = S0.astype(np.float64, copy=False).reshape(B, dv, dk)
    dtype = np.float32 if _single(*given) else np.float64
    Q, K, V = (a.astype(np.float64, copy=False).reshape(B, T, a.shape[-1]) for a in (Q, K, V))
    return Q, K, V, gates["beta"], gates["decay"], scalar, S0, chunk, steps, dtype


def _chunk_decays(gamma):
    """Within each chunk (the last axis of γ, (..., C)): D[..., t, i] = γ_{i+1}⋯γ_t for i <= t (1 on the diagonal, 0
    above it) and e[..., t] = γ_0⋯γ_t. From cumulative sums b_t of log|γ| in the chunk, D = exp(b_t − b_i) is taken
    only where i <= t (masked before exp): no factored product γ^t / γ^i, which overflows and underflows where
    gates are small, and every factor is at most as large as a product of the recurrence itself. Gates that are 0
    or negative are counted apart, exactly (integers): a segment holding a 0 is 0, an odd number of negative gates
    flips its sign."""
    magnitude = np.abs(gamma)
    zero = magnitude == 0
    b = np.cumsum(np.log(np.where(zero, 1.0, magnitude)), axis=-1)
    C = gamma.shape[-1]
    keep = np.broadcast_to(np.tri(C, dtype=bool), gamma.shape + (C,))
    e_keep = None
    if zero.any():
        zeros = np.cumsum(zero, axis=-1)
        keep = keep & (zeros[..., :, None] == zeros[..., None, :])
        e_keep = zeros == 0
    D = np.zeros(gamma.shape + (C,))
    with np.errstate(over="ignore"):  # a product over the float range: the result's check names it
        np.exp(b[..., :, None] - b[..., None, :], out=D, where=keep)
        e = np.exp(b)
    if e_keep is not None:
        e = np.where(e_keep, e, 0.0)
    negative = gamma < 0
    if negative.any():
        signs = np.cumsum(negative, axis=-1)
        D = np.where((signs[..., :, None] - signs[..., None, :]) & 1, -D, D)
        e = np.where(signs & 1, -e, e)
    return D, e


def _unit_lower_solve(A, B, overwrite=False):
    """(I + A)⁻¹B for strictly lower triangular A (..., C, C) and B (..., C, n): forward substitution by blocks of
    _WY_BLOCK rows. The diagonal blocks I + N (N strictly lower, so N⁸ = 0) are inverted all at once by the finite
    product (I − N)(I + N²)(I + N⁴) = Σ_{j<8} (−N)^j; each block of rows is then one product with the rows solved
    before and one with its block's inverse, a few matrix products per block rather than one per row. Only the
    8 × 8 diagonal blocks are inverted, never I + A. With ``overwrite`` (B float64), B is solved in place."""
    X = B if overwrite else np.array(B, dtype=np.float64)
    C, b = A.shape[-1], _WY_BLOCK
    nb = -(-C // b)
    N = np.zeros(A.shape[:-2] + (nb, b, b))
    for k in range(nb):
        s, e = k * b, min(k * b + b, C)
        N[..., k, :e - s, :e - s] = A[..., s:e, s:e]
    N2 = N @ N
    inverse = (N2 @ N2) + np.eye(b)  # I + N⁴
    inverse = (N2 + np.eye(b)) @ inverse
    inverse -= N @ inverse  # (I − N)(I + N²)(I + N⁴)
    for k in range(nb):
        s, e = k * b, min(k * b + b, C)
        rows = X[..., s:e, :]
        if s:
            rows -= A[..., s:e, :s] @ X[..., :s, :]
        X[..., s:e, :] = inverse[..., k, :e - s, :e - s] @ rows
    return X


def _chunk_groups(K, V):
    """Slices of the chunk axis (axis 1 of K, V: (G, nc, C, d)) taken together: as many chunks as keep a call's
    temporaries within about _CHUNK_CACHE floats (in cache, and reused by the allocator rather than page-faulted
    afresh as whole-sequence temporaries are)."""
    G, nc, C, dk = K.shape
    size = max(1, _CHUNK_CACHE // (G * C * max(C, dk, V.shape[-1])))
    return [slice(s, min(s + size, nc)) for s in range(0, nc, size)]


def _linear_chunks(Q, K, V, state):
    """Outputs (G, nc, C, d_v) and final state of undecayed linear attention on chunks Q, K, V (G, nc, C, d) after
    the state S₀ (G, d_v, d_k), a cache-sized group of chunks at a time: what each chunk adds to the state,
    V_cᵀK_c, by the printed carried_state from S = 0 in one call on the group's stack; the state before each chunk
    as their running sum (carried_state, S_{c+1} = S_c + V_cᵀK_c, is linear in S: the only sequential part, one
    addition per chunk); then the outputs Q_c S_cᵀ + tril(Q_cK_cᵀ)V_c of the group by the printed chunk_outputs in
    one call on their stack."""
    O = np.empty(Q.shape[:-1] + (V.shape[-1],))
    stacks, carried = (Q, K, V), state
    for part in _chunk_groups(K, V):
        Q, K, V = (a[:, part] for a in stacks)
        state = 0.0
        added = _printed("chunk_state")(K, V, state)  # (G, chunks, d_v, d_k)
        state = np.empty_like(added)  # the state before each chunk of the group
        for c in range(added.shape[1]):
            state[:, c] = carried
            carried = carried + added[:, c]
        O[:, part] = _printed("chunk_outputs")(Q, K, V, state)
    return O, carried


def _wy(K, V, b, D, e):
    """The WY/UT form of a stack of chunks K (..., C, d_k), V (..., C, d_v) with write strengths b (..., C) and the
    decays D (..., C, C) and e (..., C) of _chunk_decays (D = tril(1), e = None undecayed): (U, W) with the chunk's
    writes δ_t = β_t (v_t − γ_t S_{t−1} k_t) equal to U − W S₀ᵀ, from (I + A)[U W] = [diag(β) V, diag(β e) K],
    A[t, i] = β_t γ_{i+1}⋯γ_t k_tᵀk_i for i < t (0 on and above the diagonal), by one unit-lower solve."""
    dk, dv = K.shape[-1], V.shape[-1]
    A = K @ K.swapaxes(-1, -2)
    A *= b[..., :, None]
    A *= D
    np.copyto(A, 0.0, where=_upper(A.shape[-1]))  # what np.tril(A, -1) keeps, in place
    UW = np.empty(V.shape[:-1] + (dv + dk,))  # [diag(β) V, diag(β e) K], solved in place (np.concatenate along
    np.multiply(b[..., None], V, out=UW[..., :dv])  # the last axis of a 4-d stack is ten times slower)
    np.multiply((b if e is None else b * e)[..., None], K, out=UW[..., dv:])
    UW = _unit_lower_solve(A, UW, overwrite=True)
    return UW[..., :dv], UW[..., dv:]


def _upper(C):
    """The C × C mask of the diagonal and above (what a strictly lower triangular matrix has as 0)."""
    return ~np.tri(C, k=-1, dtype=bool)


def _delta_chunks(Q, K, V, beta, state):
    """Outputs (G, nc, C, d_v) and final state of the undecayed delta rule on chunks Q, K (G, nc, C, d_k), V and
    write strengths β (G, nc, C) after the state S₀, a cache-sized group of chunks at a time: the group's UT values
    U and WY keys W (_wy); the state before each chunk by the printed claim of delta_rule_chunkwise
    (S_{c+1} = S_c + (U_c − W_cS_cᵀ)ᵀK_c, the only sequential part), then the outputs
    Q_cS_cᵀ + tril(Q_cK_cᵀ)(U_c − W_cS_cᵀ) of the group by its printed lemma chunk_outputs in one call."""
    O = np.empty(Q.shape[:-1] + (V.shape[-1],))
    stacks, D = (Q, K, V, beta), np.tri(K.shape[-2])
    for part in _chunk_groups(K, V):
        Qg, Kg, Vg, bg = (a[:, part] for a in stacks)
        Ug, Wg = _wy(Kg, Vg, bg, D, None)
        states = np.empty(Kg.shape[:2] + (Vg.shape[-1], Kg.shape[-1]))
        for c in range(Kg.shape[1]):
            states[:, c] = state
            K, U, W = Kg[:, c], Ug[:, c], Wg[:, c]
            state = _printed("delta_chunk_state")(K, U, W, state)
        (Q, K, U, W), final, state = (Qg, Kg, Ug, Wg), state, states
        O[:, part] = _printed("delta_chunk_outputs")(Q, K, U, W, state)
        state = final
    return O, state


def _decayed_chunks(Q, K, V, beta, gamma, decays, S):
    """Outputs (G, nc, C, d_v) and final state of decayed linear attention (β None) or the gated delta rule on
    chunks Q, K, V (G, nc, C, d) with gates γ (G, nc, C) after the state S (G, d_v, d_k), a cache-sized group of
    chunks at a time (see causal_linear_attention and delta_rule_attention); ``decays``: (D, e) of every chunk at
    once where they are all the same (a number as decay), else None and each group's from its gates."""
    G, dv = Q.shape[0], V.shape[-1]
    O = np.empty(Q.shape[:-1] + (dv,))
    for part in _chunk_groups(K, V):
        Qg, Kg, Vg = Q[:, part], K[:, part], V[:, part]
        D, e = decays if decays is not None else _chunk_decays(gamma[:, part])
        g = Kg.shape[1]
        last = np.broadcast_to(e[..., -1], (G, g))  # the decay of a whole chunk
        if beta is not None:  # the chunk's writes δ_t = β_t (v_t − γ_t S_{t−1} k_t) are U − W S₀ᵀ
            U, W = _wy(Kg, Vg, beta[:, part], D, e)
            values = np.empty_like(U)
        else:
            values = Vg  # S_t = γ_t S_{t−1} + v_t k_tᵀ
        Kw = Kg * D[..., -1, :, None]  # k_i γ_{i+1}⋯γ_{C−1}: the write's decay to the chunk's end
        if beta is None:
            dS = Vg.swapaxes(-1, -2) @ Kw  # what each chunk adds to the state
        states = np.empty((G, g, dv, Kg.shape[-1]))
        for c in range(g):  # the carried state: S ← (γ over the chunk) S + Σ_i (decay to the end) δ_i k_iᵀ
            states[:, c] = S
            decayed = last[:, c, None, None] * S
            if beta is None:
                S = decayed + dS[:, c]
            else:
                delta = U[:, c] - W[:, c] @ S.swapaxes(-1, -2)
                values[:, c] = delta
                S = decayed + delta.swapaxes(-1, -2) @ Kw[:, c]
        QK = Qg @ Kg.swapaxes(-1, -2)
        QK *= D  # (QKᵀ ⊙ D): the causal, decayed scores within each chunk
        out = QK @ values  # the intra-chunk part
        inter = Qg @ states.swapaxes(-1, -2)  # the carried state applied to the chunk's queries
        inter *= e[..., None]
        out += inter
        O[:, part] = out
    return O, S


def _attention_group(Q, K, V, beta, gamma, scalar, S, chunk):
    """Outputs (G, T, d_v) and final states (G, d_v, d_k) of G problems, chunk by chunk (see
    causal_linear_attention and delta_rule_attention)."""
    G, T, dk = Q.shape
    dv = V.shape[-1]
    C = min(chunk, T)
    nc = -(-T // C)
    pad = nc * C - T

    def chunks(a, fill=0.0):
        if pad:
            a = np.concatenate([a, np.full(a.shape[:1] + (pad,) + a.shape[2:], fill)], axis=1)
        return a.reshape((a.shape[0], nc, C) + a.shape[2:])

    Qc, Kc, Vc = chunks(Q), chunks(K), chunks(V)
    S = np.zeros((G, dv, dk)) if S is None else S.copy()
    if gamma is None and beta is None:  # no decay: chunkwise_linear_attention's printed lemmas
        O, S = _linear_chunks(Qc, Kc, Vc, S)
    elif gamma is None:  # no decay, the delta rule: delta_rule_chunkwise's printed lemmas
        O, S = _delta_chunks(Qc, Kc, Vc, chunks(beta), S)
    else:
        decays = None
        if scalar is not None and not pad:  # every chunk has the same decays: computed once
            decays = _chunk_decays(np.full((1, 1, C), scalar))
        # padded steps: γ = 1 and nothing written (β = 0, k = 0), S unchanged
        O, S = _decayed_chunks(Qc, Kc, Vc, None if beta is None else chunks(beta),
                               None if decays is not None else chunks(gamma, 1.0), decays, S)
    return O.reshape(G, nc * C, dv)[:, :T], S


def _attention(Q, K, V, beta, decay, chunk, state, return_state, delta):
    Q, K, V, beta, gamma, scalar, S0, chunk, steps, dtype = _attention_inputs(Q, K, V, beta, decay, chunk, state,
                                                                            delta)
    B, T, dk = Q.shape
    dv = V.shape[-1]
    C = min(chunk, T)
    per_problem = T * (C + 2 * (dk + dv)) + (-(-T // C)) * dv * dk
    group = max(1, _CHUNK_WORK // per_problem)
    O, S = np.empty((B, T, dv)), np.empty((B, dv, dk))
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is named by the checks of the results
        for g in range(0, B, group):
            part = slice(g, g + group)
            O[part], S[part] = _attention_group(Q[part], K[part], V[part], None if beta is None else beta[part],
                                                None if gamma is None else gamma[part], scalar,
                                                None if S0 is None else S0[part], chunk)
    O = _result(O.reshape(steps + (dv,)), dtype, "the attention output O", axes=(-2, -1))
    if not return_state:
        return O
    return O, _result(S.reshape(steps[:-1] + (dv, dk)), dtype, "the final state S_T", axes=(-2, -1))


def causal_linear_attention(Q, K, V, *, decay=None, chunk: int = 64, state=None, return_state: bool = False):
    """Causal (decayed) linear attention, chunkwise-parallel: o_t = S_t q_t with S_t = γ_t S_{t−1} + v_t k_tᵀ.

    Parameters
    ----------
    Q, K : array_like, shape (..., T, d_k)
        Queries and keys, one row per step (token); any leading batch and head dimensions, the same for Q, K, V.
    V : array_like, shape (..., T, d_v)
        Values.
    decay : None, number or array_like broadcasting to (..., T)
        γ_t: None for plain linear attention (γ = 1), a number for RetNet's constant decay, one gate per step
        (Mamba-2, GLA-style scalar gates). Any finite real gate: 0 and negative gates too, and gates as small as
        1e-30 per step (see below).
    chunk : int
        Tokens per chunk (default 64); any T, not only multiples of it. The result does not depend on it beyond
        rounding.
    state : None or array_like, shape (..., d_v, d_k)
        S_{−1}, the state carried in (0 when None): two calls with the state handed over equal one call.
    return_state : bool
        Also return S_T, the state after the last step (to hand to the next call).

    Returns
    -------
    O : ndarray, shape (..., T, d_v)
        o_t = S_t q_t. float32 where every array argument is float32, else float64; the arithmetic is float64.
    S : ndarray, shape (..., d_v, d_k)
        With ``return_state``: S_T.

    Each chunk of C steps after a prefix: O_chunk = (Q Kᵀ ⊙ D) V + diag(e) Q S₀ᵀ and the carried state
    S ← e_C S₀ + Vᵀ diag(d) K, where D[t, i] = γ_{i+1}⋯γ_t (i <= t, else 0), e_t = γ_0⋯γ_t within the chunk and
    d_i = D[C−1, i]. The decays come from differences of cumulative log-gates taken only for i <= t and masked
    before exp (segment sums): never a factored γ^t / γ^i, so the result is finite wherever the recurrence is.
    Cost per token about 4Cd + 4d² flops for d_k = d_v = d (the recurrence: 4d²), in matrix products; a Python
    step per chunk. Memory: a few (C × C) arrays per chunk, problems of a batch taken a group at a time.

    Raises
    ------
    TypeError, ValueError
        Shapes that do not fit, NaN or infinity in any argument, a chunk that is not a positive integer; a result
        outside the float range (overflow of the recurrence itself), named.

    Examples
    --------
    >>> import numpy as np
    >>> Q = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]); K = Q.copy(); V = np.array([[1.0], [2.0], [3.0]])
    >>> causal_linear_attention(Q, K, V).ravel().tolist()  # o_t = Σ_{i<=t} (k_i·q_t) v_i
    [1.0, 2.0, 9.0]
    >>> causal_linear_attention(Q, K, V, decay=0.5, chunk=2).ravel().tolist()  # 0.25·1 + 0.5·2 + 3·2
    [1.0, 2.0, 7.25]
    """
    return _attention(Q, K, V, None, decay, chunk, state, return_state, delta=False)


def delta_rule_attention(Q, K, V, beta, *, decay=None, chunk: int = 64, state=None, return_state: bool = False):
    """The (gated) delta rule, chunkwise: o_t = S_t q_t with S_t = γ_t S_{t−1}(I − β_t k_t k_tᵀ) + β_t v_t k_tᵀ.

    DeltaNet (decay None) and Gated DeltaNet (one gate per step). Q, K (..., T, d_k), V (..., T, d_v), ``beta``
    a number or (..., T) (in (0, 1] in DeltaNet; any finite value is computed as the recurrence would), the other
    arguments and the results as in :func:`causal_linear_attention`.

    Within a chunk the writes δ_t = β_t (v_t − γ_t S_{t−1} k_t), S_t = γ_t S_{t−1} + δ_t k_tᵀ, satisfy
    (I + A) Δ = diag(β) V − diag(β e) K S₀ᵀ with A[t, i] = β_t γ_{i+1}⋯γ_t k_tᵀk_i (i < t): so Δ = U − W S₀ᵀ
    with U, W from one unit-lower-triangular solve per chunk (the WY/UT form; forward substitution, no inverse
    formed), and then O_chunk = (Q Kᵀ ⊙ D) Δ + diag(e) Q S₀ᵀ, S ← e_C S₀ + Δᵀ diag(d) K. The decays as in
    causal_linear_attention (masked segment sums: gates down to 1e-30 and 0 give finite results). The solve is
    backward stable; its forward error grows with the conditioning of I + A, which stays small where the
    recurrence contracts (‖k_t‖ = 1, β_t in (0, 1], ``|γ_t| <= 1``: each step's I − β_t k_t k_tᵀ has norm at most 1).
    Cost per token about 8Cd + 6d² flops (the recurrence: 6d²).

    Examples
    --------
    >>> import numpy as np
    >>> K = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]); V = np.array([[1.0], [3.0], [5.0]])
    >>> delta_rule_attention(K, K, V, 1.0).ravel().tolist()  # β = 1: a key's value is overwritten
    [1.0, 3.0, 5.0]
    >>> delta_rule_attention(K, K, V, 0.5).ravel().tolist()
    [0.5, 1.75, 2.5]
    """
    return _attention(Q, K, V, beta, decay, chunk, state, return_state, delta=True)


_PREFIX_BLOCK = 64  # prefix_predictions: rows past the first p are taken this many (at least 2p) at a time
_PREFIX_COND = 1e10  # the fast path where the estimated cond of every prefix is under this (and 1% of lstsq's cutoff)


def _power_of_two_scale(A):
    """Per problem (A (B, n, c)): the integer k with max |A| = m 2^k, m in [0.5, 1) (0 for zeros)."""
    return np.frexp(np.abs(A).max(axis=(-2, -1)))[1]


def _stacked_qr_raw(A):
    """Householder QR of each matrix of a stack A (B, m, n), one LAPACK call (numpy.linalg.qr's raw mode): R in
    the upper triangle, LAPACK's reflectors below it (left there: the callers read R's triangle or mask)."""
    return np.linalg.qr(A, mode="raw")[0].swapaxes(-1, -2)


def _null_space_predictions(M, t, p):
    """Least-squares predictions of each row of M (B, r, p) past its first p from all the rows before it (the
    first p rows of full rank), with targets t (B, r, k), and (R, z) of all of M: R (B, p, p) with RᵀR = MᵀM and
    z = the first p entries of Qᵀt.

    The rows c_j of an orthonormal basis C of the null space of Mᵀ in staircase form (c_j supported on rows
    0..p+j) give the prediction of row p + j: c_j·M = 0 says x_{p+j} = −Σ_{s<p+j} (c_{j,s}/c_{j,p+j}) x_s, the
    weights of least norm (c_j is orthogonal to c_0..c_{j−1}, which span the null space of the earlier rows), so
    ŷ_{p+j} = −Σ_{s<p+j} c_{j,s} t_s / c_{j,p+j} (t_{p+j} − ŷ_{p+j} is the recursive residual, scaled). C = Ω Nᵀ
    from N, the last r − p columns of the complete Householder Q of M: Ωᵀ Nᵀ = [E L] with L lower triangular, the QL
    factorization of Nᵀ's last r − p columns applied to the whole of Nᵀ (c_{j,p+j} = L[j, j]), as one QR of Nᵀ with
    both axes reversed. Backward stable: each prediction's error is about that of a least-squares solve of its own
    prefix; summed directly, not as t − (residual), which cancels where ŷ is small beside t."""
    Q, R = np.linalg.qr(M, mode="complete")
    reversed_null_t = Q[..., ::-1, :p - 1:-1].swapaxes(-1, -2)  # Nᵀ (B, r − p, r), both axes reversed
    H = _stacked_qr_raw(reversed_null_t)
    C = H[..., ::-1, ::-1]  # (B, r − p, r), row j supported on 0..p+j (LAPACK's reflectors past it, masked below)
    r = M.shape[-2]
    before = np.arange(r) < (p + np.arange(r - p))[:, None]
    pivots = np.diagonal(H, axis1=-2, axis2=-1)[..., ::-1, None]
    z = Q[..., :, :p].swapaxes(-1, -2) @ t
    return -(np.where(before, C, 0.0) @ t) / pivots, R[..., :p, :], z


def _prefix_fast(X, Y, lam):
    """(predictions (B, T, k), estimated cond (B,)) of the scaled problems; lam (B,) or None."""
    B, T, p = X.shape
    k = Y.shape[-1]
    out = np.zeros((B, T, k))
    m = min(T, p)
    root = None if lam is None else np.sqrt(lam)[:, None, None]
    # rows 0..m−1: their prefixes have at most p rows: the minimum-norm (or ridge) interpolation, from the Cholesky
    # factor L of X₁X₁ᵀ (+ λI) as the R of a QR (X₁ = L Qᵀ): ŷ_t = L[t, :t] L[:t, :t]⁻¹ Y[:t], all t at once
    first = X[:, :m].swapaxes(-1, -2)
    if root is not None:
        first = np.concatenate([first, root * np.eye(m)], axis=-2)
    L = _stacked_qr_raw(first)[..., :m, :].swapaxes(-1, -2)  # only the lower triangle is read below
    right = np.empty((B, m, k + m))
    right[..., :k] = Y[:, :m]
    right[..., k:] = np.eye(m)
    solved = _solve_triangular(L, right, lower=True, transpose=False)
    out[:, :m] = (L * np.tri(m, m, -1)) @ solved[..., :k]
    size = np.sqrt(np.einsum("bij,bij->b", X, X) + (0.0 if lam is None else lam))
    cond = size * np.sqrt(np.einsum("bij,bij->b", solved[..., k:], solved[..., k:]))  # bounds every prefix's
    if T <= p:
        return out, cond
    # rows p..T−1: full-rank prefixes, by recursive residuals (_null_space_predictions), a block at a time; the
    # rows before a block are summarized by their R and Qᵀy (p rows): the first block has none (least squares: the
    # null space of X[:e]ᵀ) or those of [√λ I; X[:p]] (ridge)
    block = max(_PREFIX_BLOCK, 2 * p)
    end = min(T, p + block)
    if root is None:
        out[:, p:end], R, z = _null_space_predictions(X[:, :end], Y[:, :end], p)
    else:  # R and Qᵀy of [√λ I; X[:p]] (targets [0; Y[:p]]) from the R of the augmented matrix
        top = np.concatenate([root * np.eye(p), np.zeros((B, p, k))], axis=-1)
        augmented = np.linalg.qr(np.concatenate([top, np.concatenate([X[:, :p], Y[:, :p]], axis=-1)], axis=-2),
                                 mode="r")
        R, z, end = augmented[:, :p, :p], augmented[:, :p, p:], p
    while end < T:
        start, end = end, min(T, end + block)
        M = np.concatenate([R, X[:, start:end]], axis=-2)
        out[:, start:end], R, z = _null_space_predictions(M, np.concatenate([z, Y[:, start:end]], axis=-2), p)
    return out, cond


def _prefix_svd(X, Y, lam):
    """The predictions prefix by prefix from the SVD of each prefix: numpy.linalg.lstsq's minimum-norm solution
    (singular values under eps·max(t, p)·s_max dropped) or the ridge filter s / (s² + λ); lam (B,) or None."""
    B, T, p = X.shape
    out = np.zeros(Y.shape)
    for t in range(1, T):
        U, s, Vt = np.linalg.svd(X[:, :t], full_matrices=False)
        if lam is None:
            kept = s > _EPS * max(t, p) * s[..., :1]
            factor = np.where(kept, 1.0 / np.where(kept, s, 1.0), 0.0)
        else:
            factor = s / (s * s + lam[:, None])
        coefficients = (U.swapaxes(-1, -2) @ Y[:, :t]) * factor[..., None]
        out[:, t] = (X[:, t, None, :] @ Vt.swapaxes(-1, -2) @ coefficients)[:, 0]
    return out


def prefix_predictions(X, Y, *, ridge=None):
    """Least-squares predictions on every prefix: row t is the prediction of y_t from the examples before it.

    The least-squares baseline of in-context learning: ŷ_t = x_tᵀ β_t with β_t the least-squares solution of
    X[:t] β ≈ Y[:t] — the minimum-norm one (pseudo_inverse) while X[:t] is rank-deficient (t <= p among them),
    numpy.linalg.lstsq's answer prefix by prefix — and ŷ_0 = 0; with ``ridge`` λ,
    β_t = (X[:t]ᵀX[:t] + λI)⁻¹X[:t]ᵀY[:t]. All prefixes of all problems at once, with no per-prefix solve.

    Parameters
    ----------
    X : array_like, shape (..., T, p)
        The examples in order, one per row; any leading batch dimensions (prompts).
    Y : array_like, shape (..., T) or (..., T, k)
        Their targets; a vector Y gives vector results.
    ridge : None or positive float
        λ; None for least squares.

    Returns
    -------
    ndarray, shape of Y
        Row t: the prediction of y_t from rows 0..t−1. float32 where X and Y are float32, else float64.

    Method (causal_online_ls, pseudo_inverse): each problem is scaled by powers of two (exact; λ with X's square).
    Rows t < p: the prefixes have at most p rows, and with X[:p] = L Qᵀ (L lower triangular, from one QR; with
    ridge the Cholesky factor of X[:p]X[:p]ᵀ + λI, from the QR of [X[:p]ᵀ; √λ I]) the prediction is
    ŷ_t = L[t, :t] L[:t, :t]⁻¹ Y[:t]: every such row from one forward substitution (the minimum-norm
    interpolant). Rows t >= p: ŷ_t = −Σ_{s<t} c_s y_s / c_t with c the row of the staircase orthonormal basis of
    the null space of X[:e]ᵀ that ends at t (recursive residuals; a complete QR and one QL per block of rows,
    earlier rows summarized by their R and Qᵀy — with ridge, from the start, those of [√λ I; X[:p]]), so each
    prediction's rounding error is about that of a backward-stable solve of its own prefix, not of the worst prefix
    before it (an update of β from prefix to prefix, as in recursive least squares, carries the error of the
    interpolant at t = p, about cond(X[:p])² eps, into every later prediction). Cost O(T (p + b)²) per problem for
    blocks of b = max(64, 2p) rows, in a few batched LAPACK calls per block.

    Where a problem's first min(T, p) rows are so ill-conditioned that a prefix may be within a factor 100 of
    lstsq's rank cutoff (estimated cond(X[:t]) over 1e10, from ‖X‖ ‖L⁻¹‖), that problem is solved prefix by
    prefix from SVDs instead, with lstsq's cutoff (singular values under eps·max(t, p)·s_max dropped): rank-deficient
    prefixes (repeated or dependent examples) give lstsq's minimum-norm answer, never a silently wrong number.

    Raises
    ------
    TypeError, ValueError
        Shapes that do not fit, NaN or infinity in X or Y, a ridge that is not a positive finite number; a result
        outside the float range, named.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 1.0]]); y = np.array([1.0, 2.0, 3.0, 4.0])
    >>> prefix_predictions(X, y).round(12).tolist()  # 0, then minimum norm, then exact fits of y = x₁ + 2x₂
    [0.0, 0.0, 3.0, 4.0]
    >>> prefix_predictions(X, y, ridge=1.0).round(6).tolist()
    [0.0, 0.0, 1.5, 3.125]
    """
    lam = _ridge_value(ridge)
    X = _array("X", X, 2)
    Y = _array("Y", Y, 1)
    steps, p = X.shape[:-1], X.shape[-1]
    vector_y = Y.ndim == X.ndim - 1
    if (Y.shape if vector_y else Y.shape[:-1]) != steps:
        raise ValueError(f"Y must have shape {steps} or {steps + ('k',)} to match X of shape {X.shape}, got "
                         f"{Y.shape}")
    _require_finite(("X", X), ("Y", Y))
    dtype = np.float32 if _single(X, Y) else np.float64
    B, T = math.prod(steps[:-1]), steps[-1]
    Y2 = Y[..., None] if vector_y else Y
    k = Y2.shape[-1]
    Xs = X.astype(np.float64, copy=False).reshape(B, T, p)
    Ys = Y2.astype(np.float64, copy=False).reshape(B, T, k)
    ex, ey = _power_of_two_scale(Xs), _power_of_two_scale(Ys)  # exact: X·2^−ex and Y·2^−ey lie within [−1, 1]
    Xs, Ys = np.ldexp(Xs, -ex[:, None, None]), np.ldexp(Ys, -ey[:, None, None])
    lams = None
    if lam is not None:
        lams = np.ldexp(np.full(B, lam), -2 * ex)
        lams = np.minimum(lams, 2.0**1000)  # beyond: the predictions are 0 to within 2^−1000
        lams = np.where(lams > 0, lams, np.nextafter(0.0, 1.0))  # a λ negligible beside X: the fallback below
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        out, cond = _prefix_fast(Xs, Ys, lams)
        hard = ~(cond <= min(_PREFIX_COND, 0.01 / (_EPS * max(T, p))))  # NaN too
        if hard.any():
            out[hard] = _prefix_svd(Xs[hard], Ys[hard], None if lams is None else lams[hard])
        out = np.ldexp(out, ey[:, None, None])
    out = _result(out.reshape(steps + (k,)), dtype, "the prefix predictions", axes=(-2, -1))
    return out[..., 0] if vector_y else out
