"""OLS as single-layer linear attention, array API (NumPy, PyTorch, JAX, CuPy): the fixed numerics.

Validation, column scaling, factorizations, refinement and the public functions, written against the Python
array API standard through ``array_api_compat.array_namespace``: the same code runs on NumPy, PyTorch, JAX and
CuPy arrays (and on ``array_api_strict``, which holds only what the standard defines). Like the NumPy module, the
matrix products themselves are not here: each route calls a function printed by ``derive codegen`` from a
kernel-checked lemma, looked up by name in ``PRINTED`` (arguments as in ``PRINTED_PARAMETERS``); the printed
functions use only operators (``@``, ``.mT``, indexing) and this module's ``_solve_triangular``.

Shapes (leading batch dimensions "..." are allowed, must agree exactly, and never broadcast):
    X        (..., n, p)          design, one example per row, n >= 1, p >= 1
    Y        (..., n) or (..., n, k)  targets; a vector Y gives vector results
    X_query  (..., m, p) or (..., p)  queries; a single query gives a single prediction

Arrays only: every argument must be an array of one namespace (NumPy, PyTorch, JAX, CuPy, ...), of a real
floating dtype; integers, complex numbers, Python lists and arrays of two namespaces raise TypeError. The
arithmetic is in the arguments' common floating dtype (``result_type``: float32 in, float32 out, residuals of the
refinement included) and on their device; nothing is copied to the host.

Traceable: no route branches in Python on array values (a masked choice is ``xp.where``; a batch-level shortcut is
``jax.lax.cond`` under JAX tracing, _branch), the number of refinement steps is bounded, and shapes are all that
the code inspects. So the functions work under ``jax.jit``, ``jax.vmap``, ``torch.compile``, ``torch.vmap`` and are
differentiable (``jax.grad``, ``torch.autograd``). Checks of values (NaN or infinity in the data, a result that is
not finite because X is rank-deficient) run only where the values are concrete: not under
``jax.jit``/``jax.vmap``/``jax.grad`` tracing nor inside ``torch.compile``, where shapes and dtypes are still checked
and a failure shows as NaN in the result.

PyTorch (issue 43): route "auto" with the default ``check_finite=None`` reads nothing back to the host (no wait for
a GPU, nothing that breaks a CUDA graph), on concrete tensors of any device, under ``torch.compile`` and under
``torch.vmap``; CPU tensors run the very same code, so that ``tests/test_xp_sync.py`` counts the host
synchronisations (none) without a GPU. The factors come from ``torch.linalg.cholesky_ex`` with its ``info`` kept on
the device and solves from ``torch.linalg.solve_triangular`` (``torch.linalg.cholesky``, ``cholesky_solve``,
``eigh`` and ``svd`` test their solver's status on the host); the problems whose factor failed or whose pivots
say XᵀX is numerically singular get the minimum-norm solution, computed for the whole stack and chosen by
``where`` (no loop, no read: _lazy_solution), and NaN or infinity in a problem's data gives NaN in that problem's
β. With ``check_finite=True`` (and for route "cholesky") the finite checks, the Cholesky pivots and the result's
check are combined into one value read once, and only where it says that one failed are they read one by one to
name it (four reads, each a wait for a GPU, before issue 30; counted in ``tests/test_xp_host_reads.py``).

Columns are scaled by powers of two (``2.0 ** -k`` with an integral k: exact where the namespace's power is, as
in NumPy and PyTorch); β follows exactly from the scaled problem's solution. Routes "eigh", "svd", "qr" and the
attention parameters scale X and Y to a largest entry near 1 (a pass and a scaled copy); "auto" and "cholesky"
scale inside XᵀX only, from its diagonal (no copy of X), so there the squared column norms of X and XᵀY must fit
the dtype (about 1e±308 in float64, 1e±38 in float32): data beyond give ValueError (concrete) or NaN (traced).

Routes (each evaluates a kernel-checked identity on the column-scaled data):
    "auto"      Cholesky of the column-scaled XᵀX = CCᵀ (gauge_invariance, lemma cholesky_route), then up to
                ``refine`` (REFINEMENT_STEPS, 2) preconditioned gradient steps β ← β + C⁻ᵀC⁻¹Xᵀ(Y − Xβ)
                (preconditioned_gd) with the residuals in the input precision. Each step shrinks the error that
                forming XᵀX causes by about κ² eps (κ the condition number of the column-scaled X), so where κ² eps
                is well under 1 the answer is in the accuracy class of a backward-stable solver (lstsq). A problem
                with an intercept column (constant and nonzero on its first rows) is centred first (issue 43, as
                scikit-learn does and the NumPy module's stacks: X' = XT, the other columns less the mean of their
                first rows, β = Tγ), so that uncentred data are as well conditioned as centred; the steps are
                taken where the Cholesky pivots estimate κ² eps (times the spread of the coefficients' scales) over
                about 500 eps (_refinement_needed): under ``jax.jit`` a stack takes them only where one of its
                problems needs them (``jax.lax.cond``), PyTorch always takes them (a test would be a read). Under
                JAX tracing the factorizations of up to 8 columns are written out entry by entry (XLA fuses them;
                its batched LAPACK calls were a third of a jitted batch of prompts). Less robust than the NumPy
                module's "auto", which measures κ² and switches to Householder QR or the SVD for hard ones (its
                "exact" route is the exact solution, rounded once): here κ² eps near or over 1 (cond(X) over about
                1e7 in float64, 3e3 in float32, once columns are scaled and centred) leaves an inaccurate answer,
                and a rank-deficient X gives ValueError (concrete NumPy-like values), NaN (traced by JAX) or, on
                PyTorch by default, the minimum-norm solution (see PyTorch above) — use "svd" elsewhere. On
                concrete CPU arrays "auto" is the NumPy module's instead (see "On the CPU" below).
    "cholesky"  the same without refinement: error about κ² eps, as the NumPy module's "cholesky".
    "eigh"      X_q L Lᵀ XᵀY with L = VΛ^{-1/2}, XᵀX = VΛVᵀ (ols_is_linear_attention, lemma gram_route);
                eigenvalues under p·eps·λ_max are dropped (minimum norm, pseudo_inverse). Error about κ² eps.
    "svd"       X_q V S⁻¹ UᵀY with X = USVᵀ (gauge_invariance, lemma svd_route): backward stable, and the
                minimum-norm solution where X is rank-deficient (singular values under max(n, p)·eps·s_max are
                dropped, as numpy.linalg.pinv does).
    "qr"        X_q R⁻¹ QᵀY with X = QR (gauge_invariance, lemma qr_route): backward stable; needs full rank.
The standard has no triangular solve: ``_solve_triangular`` uses the namespace's own where it has one
(``torch.linalg.solve_triangular``, ``jax.lax.linalg.triangular_solve``; traced by JAX, up to 8 columns,
substitution entry by entry) and ``xp.linalg.solve`` otherwise.

On the CPU: route "auto" (with the default ``refine`` and ``check_finite``) on concrete float32/float64 arrays of
NumPy, PyTorch or JAX in CPU memory is the NumPy module's "auto", bit for bit: ``derive codegen --backend xp``
writes that module, ``ols_attention.py``, beside this one, and this module runs it only where its SHA-256 is the
one recorded at this module's end (an edited or foreign file is not run: the array-API code serves), and runs
exactly the bytes it hashed, compiled afresh into a new module object (no import of the path, so no bytecode
cache in ``__pycache__`` runs in their place, and no second read of a file that may have changed). The arrays
are read in place (``Tensor.numpy()``, ``numpy.asarray``) and β comes back in their namespace and dtype. Eager
PyTorch and JAX on the CPU make each small product of a batch a call of its own; the NumPy module's packed,
threaded numerics are several times faster there and about lstsq's accuracy (they measure κ²,
take Householder QR where the Gram route cannot serve, and give the minimum-norm solution with a
RankDeficientWarning where X is rank-deficient, as route "svd" does, where the array-API code raises). The
exact least-squares solution of the float64 data, rounded once, is the NumPy module's route "exact" (the accuracy
reference; rational arithmetic, up to 64 columns).
Everything traced or differentiated keeps the array-API code: ``jax.jit``, ``jax.vmap``,
``jax.grad``, ``torch.compile``, ``torch.func``, ``torch.vmap``, and PyTorch tensors that require grad; so do
other devices, other routes and dtypes, and ``HOST_NUMERICS = False``. Its answers agree with the NumPy module's
to about cond(X) eps where κ² eps is well under 1.

Sequences (issue 42), as in the NumPy module and traceable: causal_linear_attention and delta_rule_attention
(chunkwise-parallel linear attention, decayed and delta-rule) and prefix_predictions (least squares on every
prefix); the same algorithms in array-API operations, in the arguments' dtype and on their device.
"""

from __future__ import annotations

import hashlib
import math
import numbers
import sys
import threading
import types
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from array_api_compat import (
    array_namespace,
    device,
    is_jax_namespace,
    is_lazy_array,
    is_numpy_namespace,
    is_torch_namespace,
)

__all__ = ["ROUTES", "REFINEMENT_STEPS", "RankDeficientWarning", "coefficients", "predict", "attention_parameters",
           "attention_scores", "RecursiveLeastSquares", "multi_layer_predict", "causal_linear_attention",
           "delta_rule_attention", "prefix_predictions"]

ROUTES = ("auto", "cholesky", "eigh", "svd", "qr")

#: Preconditioned gradient steps of the "auto" route (fixed, so the computation traces to one graph).
REFINEMENT_STEPS = 2

#: Checked theorems these fixed numerics rest on (beyond the printed functions' own), and what for.
RELIES_ON = {
    "pseudo_inverse": "rank-deficient X (routes eigh, svd; auto on PyTorch): the minimum-norm solution",
    "preconditioned_gd": "refinement of the Cholesky route by preconditioned gradient steps",
}

Array = Any  # an array of some array-API namespace


# --- functions printed from checked lemmas ----------------------------------------------

#: The printed functions this code calls, by name, and the arguments it passes them (in order).
PRINTED_PARAMETERS: dict[str, tuple[str, ...]] = {
    "eigh": ("V", "lam", "XtY"),  # β̂ from XᵀX = VΛVᵀ, Λ as the vector lam
    "cholesky": ("C", "XtY"),  # β̂ from XᵀX = CCᵀ
    "svd": ("U", "s", "V", "Y"),  # β̂ from X = USVᵀ, S as the vector s
    "qr": ("Q", "R", "Y"),  # β̂ from X = QR
    "P": ("L", "X", "Y"),  # the construction's output projection
    "scores": ("X_query", "L", "X"),  # the attention score matrix
    # issue 42: a chunk of causal linear attention and of the delta rule, without decay, from the state carried in
    "chunk_outputs": ("Q", "K", "V", "state"),  # Q Sᵀ + tril(Q Kᵀ) V
    "chunk_state": ("K", "V", "state"),  # S + Vᵀ K
    "delta_chunk_outputs": ("Q", "K", "U", "W", "state"),  # Q Sᵀ + tril(Q Kᵀ)(U − W Sᵀ)
    "delta_chunk_state": ("K", "U", "W", "state"),  # S + (U − W Sᵀ)ᵀ K
}

#: Name -> printed function; the generated module fills it at its end.
PRINTED: dict[str, Callable[..., Array]] = {}

#: Run route "auto" on concrete CPU arrays of NumPy, PyTorch and JAX through the NumPy module beside this file
#: (see "On the CPU" in the module docstring); False keeps every call on the array-API code.
HOST_NUMERICS = True

#: SHA-256 of the NumPy module generated with this one (``ols_attention.py``); the generated module sets it at its
#: end. Empty (this package's own copy): no host numerics.
HOST_MODULE_SHA256 = ""
HOST_MODULE_FILE = "ols_attention.py"


def _printed(name: str) -> Callable[..., Array]:
    """The printed function ``name``; ``LookupError`` when the printed section is missing."""
    try:
        return PRINTED[name]
    except KeyError:
        raise LookupError(f"no printed function {name!r}: this module's printed section is missing (generate "
                          f"the standalone module with `derive codegen --backend xp`)") from None


# --- solves the standard lacks ----------------------------------------------------------


def _solve_triangular(T, B, lower, transpose):
    """op(T)⁻¹B for triangular T (..., p, p) and B (..., p, k): op(T) = Tᵀ with ``transpose``, else T; ``lower``
    says whether op(T) is lower triangular."""
    xp = array_namespace(T, B)
    if _unrolled(xp, T):
        return _jax_written_out()["solve"](T, B, lower, transpose)
    if transpose:
        T = T.mT
    if is_torch_namespace(xp):
        return sys.modules["torch"].linalg.solve_triangular(T, B, upper=not lower)
    if is_jax_namespace(xp):
        from jax.lax.linalg import triangular_solve

        return triangular_solve(T, B, left_side=True, lower=lower)
    return xp.linalg.solve(T, B)  # the standard: an LU solve of the triangular matrix (backward stable)


#: Under JAX tracing (jax.jit, vmap, grad), Cholesky factors and triangular solves of at most this many columns are
#: written out entry by entry (_unrolled): XLA fuses them into loops over the stack, where its batched LAPACK calls
#: cost about 0.2 µs per matrix each (a third of a jitted batch of 4,096 prompts of 64 × 8, issue 43). Beyond 8
#: columns the written-out code costs more to compile than it saves (4.7 s for route "auto" at 16 columns, 0.2 s
#: with LAPACK; 1.9 s at 8).
_UNROLLED_COLUMNS = 8


def _unrolled(xp, A) -> bool:
    """Whether the small factorizations of A's stack are written out entry by entry (traced JAX, few columns)."""
    jax = sys.modules.get("jax")
    return (is_jax_namespace(xp) and A.shape[-1] <= _UNROLLED_COLUMNS and jax is not None
            and isinstance(A, jax.core.Tracer))


_WRITTEN_OUT: dict[str, Callable[..., Array]] = {}


def _jax_written_out() -> dict[str, Callable[..., Array]]:
    """The written-out Cholesky factor and triangular solve (_unrolled) as JAX functions whose derivatives are
    those of JAX's own (``jax.custom_jvp``): the written-out code itself is never differentiated, whose derivative
    took seconds to compile (11 s for the gradient of route "auto" at 8 columns, against 0.4 s)."""
    if not _WRITTEN_OUT:
        import functools

        jax = sys.modules["jax"]
        from jax.lax.linalg import cholesky, triangular_solve

        @jax.custom_jvp
        def factor(G):
            return _unrolled_cholesky(jax.numpy, G)

        @factor.defjvp
        def factor_jvp(primals, tangents):
            return factor(*primals), jax.jvp(cholesky, primals, tangents)[1]

        @functools.partial(jax.custom_jvp, nondiff_argnums=(2, 3))
        def solve(T, B, lower, transpose):
            return _substitution(jax.numpy, T, B, lower, transpose)

        @solve.defjvp
        def solve_jvp(lower, transpose, primals, tangents):
            def lapack(T, B):
                return triangular_solve(T.mT if transpose else T, B, left_side=True, lower=lower)

            return solve(*primals, lower, transpose), jax.jvp(lapack, primals, tangents)[1]

        _WRITTEN_OUT.update(cholesky=factor, solve=solve)
    return _WRITTEN_OUT


def _entries_first(xp, A):
    """A (..., r, c) as (r, c, ...): each entry of the stack's matrices a contiguous array over the stack."""
    nd = A.ndim
    return xp.permute_dims(A, (nd - 2, nd - 1) + tuple(range(nd - 2)))


def _entries_last(xp, A):
    """The inverse of _entries_first: (r, c, ...) as (..., r, c)."""
    nd = A.ndim
    return xp.permute_dims(A, tuple(range(2, nd)) + (0, 1))


def _substitution(xp, T, B, lower, transpose):
    """op(T)⁻¹B by forward or back substitution, entry by entry over the stack (see _UNROLLED_COLUMNS)."""
    p = T.shape[-1]
    T = _entries_first(xp, T)
    B = _entries_first(xp, B)  # (p, k, ...)

    def entry(i, j):  # op(T)[i, j], one per problem
        return T[j, i, ...] if transpose else T[i, j, ...]

    x = [None] * p
    for i in range(p) if lower else range(p - 1, -1, -1):
        s = B[i, ...]
        for j in range(i) if lower else range(i + 1, p):
            s = s - entry(i, j) * x[j]
        x[i] = s / entry(i, i)
    return _entries_last(xp, xp.stack(x, axis=0))


def _fold(xp, a, largest):
    """max (``largest``) or min over the last axis (NaN where any is NaN); traced by JAX with few entries, a fold of
    ``xp.maximum`` or ``xp.minimum`` over them (fused by XLA, where a reduction of 8 entries per problem cost it a
    third of a millisecond per batch)."""
    if not _unrolled(xp, a):
        return xp.max(a, axis=-1) if largest else xp.min(a, axis=-1)
    pick = xp.maximum if largest else xp.minimum
    out = a[..., 0]
    for i in range(1, a.shape[-1]):
        out = pick(out, a[..., i])
    return out


def _largest(xp, a):
    """max over the last axis (_fold)."""
    return _fold(xp, a, True)


def _smallest(xp, a):
    """min over the last axis (_fold)."""
    return _fold(xp, a, False)


def _unrolled_cholesky(xp, G):
    """The lower Cholesky factor of each G of a stack, entry by entry (see _UNROLLED_COLUMNS): NaN where G is not
    positive definite, as JAX's own."""
    p = G.shape[-1]
    G = _entries_first(xp, G)
    L = [[None] * p for _ in range(p)]
    for j in range(p):
        s = G[j, j, ...]
        for k in range(j):
            s = s - L[j][k] * L[j][k]
        L[j][j] = xp.sqrt(s)
        for i in range(j + 1, p):
            s = G[i, j, ...]
            for k in range(j):
                s = s - L[i][k] * L[j][k]
            L[i][j] = s / L[j][j]
    zero = xp.zeros_like(L[0][0])
    return _entries_last(xp, xp.stack([xp.stack([L[i][j] if j <= i else zero for j in range(p)], axis=0)
                                       for i in range(p)], axis=0))


def _general_solve(A, B):
    """A⁻¹B for a general square A (printed for a lemma whose inverse is not triangular)."""
    return array_namespace(A, B).linalg.solve(A, B)


def _plus_identity(A, c):
    """A + cI for a stack of square matrices (a printed sum with a multiple of I); c a number or one per problem."""
    xp = array_namespace(A)
    eye = xp.eye(A.shape[-1], dtype=A.dtype, device=device(A))
    if isinstance(c, (int, float)):
        return A + c * eye
    return A + xp.astype(c, A.dtype)[..., None, None] * eye


def _eye_like(xp, A):
    """The identity of A's last dimension, in A's dtype and on its device."""
    return xp.eye(A.shape[-1], dtype=A.dtype, device=device(A))


# --- validation -----------------------------------------------------------------------


def _namespace(**arrays):
    try:
        return array_namespace(*arrays.values())
    except TypeError as exc:
        names = ", ".join(arrays)
        raise TypeError(f"{names} must be arrays of one array-API namespace (NumPy, PyTorch, JAX, CuPy; not "
                        f"Python lists or a mix of libraries): {exc}") from None


def _check_array(xp, name, a, min_ndim):
    if not xp.isdtype(a.dtype, "real floating"):
        raise TypeError(f"{name} must hold real floating-point numbers, not dtype {a.dtype} (convert it, e.g. "
                        f"xp.astype({name}, xp.float64))")
    if a.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimension(s), got shape {tuple(a.shape)}")
    if any(d == 0 for d in a.shape):
        raise ValueError(f"{name} is empty (shape {tuple(a.shape)})")


def _concrete(*arrays) -> bool:
    """Whether the values can be read: not while JAX traces (jit, vmap, grad), inside torch.compile nor under
    torch.vmap."""
    torch = sys.modules.get("torch")
    if torch is not None:
        if torch.compiler.is_compiling():
            return False
        batched = getattr(getattr(torch._C, "_functorch", None), "is_batchedtensor", None)  # under torch.vmap
        if batched is not None and any(isinstance(a, torch.Tensor) and batched(a) for a in arrays):
            return False
    jax = sys.modules.get("jax")
    if jax is not None:
        if any(isinstance(a, jax.core.Tracer) for a in arrays):
            return False
        # array_api_compat calls every JAX array lazy; an eager one (not a tracer) can be read, as NumPy's and
        # PyTorch's are: NaN in it is named as it is there, not returned as a NaN answer
        arrays = [a for a in arrays if not isinstance(a, jax.Array)]
    return not any(is_lazy_array(a) for a in arrays)


def _false(flag) -> bool:
    """Whether a 0-d boolean array is False, where it can be read: never for a JAX tracer (an eager array closed
    over inside jax.jit or jax.grad is concrete, but what is computed from it there is traced)."""
    jax = sys.modules.get("jax")
    if jax is not None and isinstance(flag, jax.core.Tracer):
        return False
    return not bool(flag)


def _all_finite(xp, a):
    """xp.all(xp.isfinite(a)), a 0-d array or a bool; an eager JAX array in CPU memory is read through NumPy (in
    place), since each eager JAX operation costs more than the check itself."""
    jax = sys.modules.get("jax")
    if (jax is not None and isinstance(a, jax.Array) and not isinstance(a, jax.core.Tracer)
            and all(d.platform == "cpu" for d in a.devices())):
        import numpy

        return bool(numpy.isfinite(numpy.asarray(a)).all())
    return xp.all(xp.isfinite(a))


def _require_finite(xp, **named):
    """ValueError naming the first argument with NaN or infinity (only where the values are concrete)."""
    for name, a in named.items():
        if a is not None and _concrete(a) and _false(_all_finite(xp, a)):
            raise ValueError(f"{name} contains NaN or infinity")


def _validate(X, Y, X_query, route, check_finite=True, pass_over=False, ridge=None, weights=None):
    """(xp, X, Y as (..., n, k), X_query as (..., m, p) or None, vector_y, vector_q), in the common dtype; with
    ``weights``, X and Y are the weighted rows √w X, √w Y."""
    if route not in ROUTES:
        raise ValueError(f"route must be one of {ROUTES}, not {route!r}")
    given = {"X": X, "Y": Y} if X_query is None else {"X": X, "Y": Y, "X_query": X_query}
    if weights is not None:
        given["weights"] = weights
    xp = _namespace(**given)
    _check_array(xp, "X", X, 2)
    _check_array(xp, "Y", Y, 1)
    batch, n, p = tuple(X.shape[:-2]), X.shape[-2], X.shape[-1]
    vector_y = Y.ndim == X.ndim - 1
    Y2 = Y[..., None] if vector_y else Y
    if Y2.ndim != X.ndim or tuple(Y2.shape[:-2]) != batch or Y2.shape[-2] != n:
        raise ValueError(f"Y must have shape {batch + (n,)} or {batch + (n, 'k')} to match X of shape "
                         f"{tuple(X.shape)}, got {tuple(Y.shape)}")
    vector_q, Q = False, None
    if X_query is not None:
        _check_array(xp, "X_query", X_query, 1)
        vector_q = X_query.ndim == X.ndim - 1
        Q = X_query[..., None, :] if vector_q else X_query
        if Q.ndim != X.ndim or tuple(Q.shape[:-2]) != batch or Q.shape[-1] != p:
            raise ValueError(f"X_query must have shape {batch + ('m', p)} or {batch + (p,)} to match X of shape "
                             f"{tuple(X.shape)}, got {tuple(X_query.shape)}")
    if weights is not None:
        _check_array(xp, "weights", weights, 1)
        if tuple(weights.shape) != tuple(X.shape[:-1]):
            raise ValueError(f"weights must have shape {tuple(X.shape[:-1])} (one per row of X), got "
                             f"{tuple(weights.shape)}")
    if route in ("auto", "cholesky", "qr") and n < p and ridge is None:
        raise ValueError(f"route {route!r} needs n >= p (X of shape {tuple(X.shape)} cannot have full column "
                         "rank): use route='svd' for the minimum-norm solution")
    dtype = xp.result_type(*given.values())
    X, Y2 = xp.astype(X, dtype, copy=False), xp.astype(Y2, dtype, copy=False)
    Q = None if Q is None else xp.astype(Q, dtype, copy=False)
    if check_finite is None:  # the default: checked, except where route "auto" reads nothing (_no_reads)
        check_finite = not _no_reads(xp, route, None, X, Y2)
    if check_finite:  # the Gram routes of coefficients/predict read NaN off XᵀX and XᵀY (p×p, p×k) instead
        gram = route in ("auto", "cholesky") and not pass_over
        _require_finite(xp, X=None if gram else X, Y=None if gram else Y2, X_query=Q)
    if weights is not None:
        root = _root_weights(xp, xp.astype(weights, dtype, copy=False))[..., None]
        X, Y2 = X * root, Y2 * root
    return xp, X, Y2, Q, vector_y, vector_q


def _ridge_value(ridge):
    """λ as a float: None (no ridge) or a positive finite real number, else a TypeError or ValueError naming it
    (as the NumPy module's; a Python number, so that it fixes the traced computation)."""
    if ridge is None:
        return None
    if isinstance(ridge, bool) or type(ridge).__name__ == "bool_" or not isinstance(ridge, numbers.Real):
        raise TypeError(f"ridge must be a positive real number, not {type(ridge).__name__}")
    try:
        value = float(ridge)
    except OverflowError:  # an integer (or Fraction) beyond the float range, 10**400
        raise ValueError(f"ridge is too large for a float ({type(ridge).__name__} over 1.8e308): it must be a "
                         f"positive finite real number") from None
    if math.isnan(value):
        raise ValueError("ridge is NaN: it must be a positive real number")
    if math.isinf(value):
        raise ValueError("ridge is infinite: it must be a positive finite real number")
    if value <= 0:
        raise ValueError(f"ridge must be positive, got {value!r} (leave it out, ridge=None, for OLS)")
    return value


def _root_weights(xp, w):
    """√w; where values are concrete a ValueError naming what is wrong with the weights (NaN, zero or negative,
    infinite), and traced a weight that is not positive and finite gives NaN (a masked choice, no branch)."""
    if _concrete(w) and _false(xp.all(xp.isfinite(w) & (w > 0))):
        if bool(xp.any(xp.isnan(w))):
            raise ValueError("weights contain NaN")
        bad = int(xp.sum(xp.astype(w <= 0, xp.int64)))
        if bad:
            raise ValueError(f"weights must be positive: {bad} of them are zero or negative (drop those rows "
                             f"instead of giving them weight 0)")
        if bool(xp.any(xp.isinf(w))):
            raise ValueError("weights contain infinity")
    good = (w > 0) & (w < math.inf)
    safe = xp.where(good, w, xp.ones_like(w))
    return xp.where(good, xp.sqrt(safe), xp.full_like(w, math.nan))


def _augmented(xp, X, Y, lam):
    """[√λ I; X] and [0; Y]: their least-squares solution is the ridge solution (XᵀX + λI)⁻¹XᵀY
    (ridge_is_linear_attention), their Gram matrix XᵀX + λI; the shapes fix the traced computation. The rows √λ I
    go first: Householder QR then touches X's rows only by reflections whose products with X are small against
    X, so the error is relative to X's own scale (with √λ I last, λ large against ‖X‖² loses X's digits)."""
    batch, p, k = tuple(X.shape[:-2]), X.shape[-1], Y.shape[-1]
    place = {"dtype": X.dtype, "device": device(X)}
    root = xp.broadcast_to(math.sqrt(lam) * xp.eye(p, **place), batch + (p, p))
    return xp.concat([root, X], axis=-2), xp.concat([xp.zeros(batch + (p, k), **place), Y], axis=-2)


def _powers_of_two(t):
    """2^t for an integer-valued float array t, as two factors that stay in range where 2^t itself does not."""
    half = t // 2
    return 2.0**half, 2.0 ** (t - half)


def _ridge_svd(xp, X, Y, lam):
    """V (S + λS⁻¹)⁻¹ UᵀY = V S(S² + λ)⁻¹ UᵀY from the SVD X = USVᵀ of X itself (the svd route's printed function
    with S + λS⁻¹ for S; ridge_route with XᵀX = VS²Vᵀ): the error is relative to X's scale for every λ, where the
    SVD of [X; √λ I] perturbs X by eps √λ. X is scaled by one power of two 2^c per problem (ridge is not invariant
    under scaling columns apart), Y by columns, and λ 2^-2c = m 2^e is applied as 2^-q (S 2^-q + m 2^(e-q) S⁻¹)⁻¹
    with q = max(e, 0), so that neither S² nor λ 2^-2c leaves the float range; a zero singular value gives 0."""
    top = xp.max(xp.abs(X), axis=(-2, -1), keepdims=True)  # (..., 1, 1)
    positive = top > 0
    c = xp.floor(xp.log2(xp.where(positive, top, xp.ones_like(top))))
    c = xp.where(positive, c, xp.zeros_like(c))
    low, high = _powers_of_two(-c)
    Xu = X * low * high
    sy, inv_sy = _column_scales(xp, Y)
    Yu = Y * sy
    m, e_lam = math.frexp(lam)
    e = e_lam - 2.0 * c
    q = xp.where(e > 0, e, xp.zeros_like(e))
    U, s, Vh = xp.linalg.svd(Xu, full_matrices=False)
    q_s, e_s = q[..., 0], (e - q)[..., 0]  # (..., 1): against s (..., r)
    nonzero = s > 0
    safe = xp.where(nonzero, s, xp.ones_like(s))
    shrink, shrink2 = _powers_of_two(-q_s)
    tiny, tiny2 = _powers_of_two(e_s)
    s = safe * shrink * shrink2 + (m / safe) * tiny * tiny2  # S + λS⁻¹, scaled: the printed function inverts it
    s = xp.where(nonzero, s, xp.full_like(s, math.inf))
    V, Y = Vh.mT, Yu
    beta_u = _printed("svd")(U, s, V, Y)
    back, back2 = _powers_of_two(-(c + q))
    return beta_u * back * back2 * inv_sy


def _require_finite_result(xp, result, what, hint):
    if _concrete(result) and _false(_all_finite(xp, result)):
        raise ValueError(f"{what} is not finite: {hint}")


# --- column scaling by powers of two --------------------------------------------------


def _column_scales(xp, A):
    """(s, 1/s), each (..., 1, c): s = 2^-k with 2^k near the largest |entry| of each column (1 for a zero column).

    k is an integer-valued float; the maximum is read through ``where`` twice so that no infinite log2 (of a
    zero column) reaches a gradient."""
    m = xp.max(xp.abs(A), axis=-2, keepdims=True)
    positive = m > 0
    k = xp.floor(xp.log2(xp.where(positive, m, xp.ones_like(m))))
    top = math.floor(math.log2(xp.finfo(A.dtype).max)) - 1  # 2^±k stays a normal number of the dtype
    k = xp.clip(xp.where(positive, k, xp.zeros_like(k)), -top, top)
    return 2.0 ** (-k), 2.0**k


def _scaled(xp, X, Y):
    sx, inv_sx = _column_scales(xp, X)
    sy, inv_sy = _column_scales(xp, Y)
    return X * sx, Y * sy, sx, inv_sx, inv_sy


def _unscale_beta(beta_s, sx, inv_sy):
    """β = diag(2^-kx) β_s 2^ky: X = X_s diag(2^kx) and Y = Y_s diag(2^ky)."""
    return sx.mT * beta_s * inv_sy


# --- routes on the column-scaled data --------------------------------------------------


def _linalg_error(exc: Exception) -> bool:
    return "LinAlgError" in {c.__name__ for c in type(exc).__mro__} or "positive-definite" in str(exc)


_NOT_POSITIVE_DEFINITE = ("XᵀX is not positive definite once the columns of X are scaled: X is rank-deficient or too "
                          "ill-conditioned for the Cholesky route; use route='qr' where X has full column rank "
                          "(backward stable, also in float32) or route='svd' where it is rank-deficient (the "
                          "minimum-norm solution)")
_NOT_FINITE_HINT = ("X is rank-deficient or too ill-conditioned for this route (or the solution overflows); use "
                    "route='qr' where X has full column rank, route='svd' where it is rank-deficient")


def _cholesky(xp, G):
    if _unrolled(xp, G):
        return _jax_written_out()["cholesky"](G)
    try:
        return xp.linalg.cholesky(G)
    except Exception as exc:  # NumPy, array_api_strict and PyTorch raise their own LinAlgError; JAX gives NaN
        if _linalg_error(exc):
            raise ValueError(_NOT_POSITIVE_DEFINITE) from None
        raise


def _deferred_checks(xp, *arrays) -> bool:
    """Whether the checks of the Gram route wait for one combined read at the end (``_read_checks``): concrete
    PyTorch tensors, where every read of a value (``bool``, ``.item()``, and ``torch.linalg.cholesky``'s own test
    of its result) makes the host wait for the device; one read instead of four per call."""
    return is_torch_namespace(xp) and _concrete(*arrays)


def _branch(xp, flag, then, otherwise):
    """``then()`` where the 0-d boolean ``flag`` holds, else ``otherwise()``: a shortcut that answers as well as
    ``then`` wherever the flag is False. Traced by JAX it is ``jax.lax.cond`` (under jax.jit the branch not taken
    does not run; nothing is read on the host); concrete arrays of other namespaces read the flag, except PyTorch
    (a read makes the host wait for a GPU) and whatever is traced there (torch.compile, torch.vmap): those always
    take ``then``."""
    jax = sys.modules.get("jax")
    if jax is not None and isinstance(flag, jax.core.Tracer):
        return jax.lax.cond(flag, then, otherwise)
    if is_torch_namespace(xp) or not _concrete(flag):
        return then()
    return then() if bool(flag) else otherwise()


#: Route "auto" centres a problem by the mean of its first rows, at most this many (no pass over X; _centring).
_SAMPLE_ROWS = 8


def _intercept(xp, X):
    """Per problem: (level, rows), ``level`` (..., p) marking the columns that are constant and nonzero on the
    first rows of X, ``rows`` those rows (at most _SAMPLE_ROWS)."""
    rows = X[..., :min(X.shape[-2], _SAMPLE_ROWS), :]
    top = rows[..., 0, :]
    return xp.all(rows == top[..., None, :], axis=-2) & (top != 0), rows


def _centring(xp, X, level, rows, Y):
    """(e_k, t, q, c) per problem (issue 43), with T = I − e_k tᵀ: e_k (..., p) the first column of ``level`` (the
    intercept, one-hot as floats; 0 where none is level), t = s / c with c its first entry and s the mean of
    ``rows`` (s_k = 0; t = 0 where none is level), q (..., k) the mean of Y's first rows over c (0 where none).
    X' = XT is X with u sᵀ taken off, u = x_k / c (the ones vector where column k is constant): columns centred to
    within about their spread over the square root of the rows sampled, whatever their offsets, with no pass over
    X; Y' = Y − x_k qᵀ likewise. XT = X' and x_k qᵀ = X e_k qᵀ hold for every X (T is a function of X, u is X's
    own column), so β = Tγ + e_k qᵀ for γ the solution of (X', Y'), gradients included, and a column that is level
    on the first rows only costs conditioning, never the answer."""
    p = X.shape[-1]
    has = xp.any(level, axis=-1)
    index = xp.argmax(xp.astype(level, X.dtype), axis=-1)  # the first True (argmax's first occurrence)
    first = xp.astype((xp.arange(p, device=device(X)) == index[..., None]) & has[..., None], X.dtype)
    top = rows[..., 0, :]
    c = xp.sum(first * top, axis=-1) + xp.astype(~has, X.dtype)
    shift = xp.mean(rows, axis=-2) * (1 - first) * xp.astype(has, X.dtype)[..., None]
    targets = xp.mean(Y[..., :rows.shape[-2], :], axis=-2) * xp.astype(has, Y.dtype)[..., None]
    return first, shift / c[..., None], targets / c[..., None], c


def _route_cholesky(xp, X, Y, steps, check_finite, pending=None, lazy=False):
    """β on the data as given, from the Cholesky factor of the Gram matrix of X, centred first where a problem has
    an intercept column (issue 43, as the NumPy module's _auto_stack_intercept): γ the solution of X' = XT
    (_centring), β = Tγ. The entries of X' are rounded differences x − u s_j, within eps of themselves (a
    componentwise backward error), so X' is about as well conditioned as the centred data whatever the offsets
    (and the refinement steps that uncentred data needed are left out, _refinement_needed). Where no problem of a
    stack has a level column, the centring is skipped (_branch). With ``lazy`` (PyTorch, _no_reads): (β,
    deficient), nothing read."""
    level, rows = _intercept(xp, X)

    def centred():
        first, t, q, c = _centring(xp, X, level, rows, Y)
        column = X @ first[..., None]  # x_k (..., n, 1)
        shifted = X - column * t[..., None, :]  # X − u sᵀ, u the intercept column over c
        # the targets less x_k qᵀ: a residual of centred size, so that the refinement steps' rounding is too (on Y
        # as given it rounds at eps |Y|, and the intercept's mᵀγ magnifies the slopes' share of it)
        targets = Y - column * q[..., None, :]
        return _gram_solve(xp, shifted, targets, steps, check_finite, pending, lazy,
                           lambda v, error=None, shift=True, compensated=True: _uncentre(
                               xp, first, t, c, v, error, q if shift else None, compensated),
                           lambda v: _magnified(xp, first, t, q, v))

    def as_given(v, error=None, shift=True, compensated=True):
        return v

    return _branch(xp, xp.any(level), centred,
                   lambda: _gram_solve(xp, X, Y, steps, check_finite, pending, lazy, as_given))


def _magnified(xp, first, t, q, v):
    """Per problem, Σ_j |t_j v_j| / max|β| (the largest over targets): how much the intercept β_k = v_k − tᵀv + q
    (_uncentre) magnifies the relative errors of the centred answer v (the NumPy module's
    _intercept_amplification)."""
    intercept = xp.sum(first[..., :, None] * v, axis=-2) - xp.sum(t[..., :, None] * v, axis=-2) + q
    top = xp.maximum(xp.max(xp.abs(v), axis=(-2, -1)), xp.max(xp.abs(intercept), axis=-1))
    return xp.max(xp.sum(xp.abs(t[..., :, None] * v), axis=-2), axis=-1) / top


def _uncentre(xp, first, t, c, v, error=None, q=None, compensated=True):
    """β = Tv + e_k qᵀ, β_k = v_k − tᵀv + q (_centring; ``first`` is e_k, 0 where a problem has no intercept; q: the
    targets' shift x_k qᵀ, None for the null space's vectors), with the roundings of the shifts taken back where x_k =
    c·1: each row of X less fl(c t_j) = c t_j − e_j (e exact by _two_prod) is X T̃ for t̃ = t − e / c, and of Y less
    fl(c q) = c q − e_q, a shift of q − e_q / c (each e_j γ_j / c is eps |t_j γ_j| of the intercept, which _dot2 is
    there to keep); tᵀv to about eps² (_dot2): the intercept β_k = v_k − tᵀv is the difference of terms |t_j v_j| that
    may be thousands of times larger than itself (offsets of 10³ against an intercept of 1), where a float64 sum would
    leave their rounding in it. ``error``: v's own rounding (the last refinement step's correction less what v kept of
    it, exact), added to β_k through tᵀerror, so that β_k is that of v + error: each v_j rounded at eps |v_j| would come
    back |t_j| times larger in it (the NumPy module's _intercept_step). Not ``compensated``: Tv + e_k qᵀ in the input
    precision (the rank-deficient problems' basic solutions and null directions, held to pinv's accuracy)."""
    if not compensated:
        shifted = xp.sum(t[..., :, None] * v, axis=-2)
        if q is not None:
            shifted = shifted - q
        return v - first[..., :, None] * shifted[..., None, :]
    hi, lo = _dot2(xp, t, v)
    _, e = _two_prod(xp, c[..., None], t)
    lo = lo - xp.sum(e[..., :, None] * v, axis=-2) / c[..., None]
    if error is not None:
        lo = lo + xp.sum((t - first)[..., :, None] * error, axis=-2)
    intercept = (xp.sum(first[..., :, None] * v, axis=-2) - hi) - lo  # v_k exactly: first is one-hot or 0
    if q is not None:
        _, e = _two_prod(xp, c[..., None], q)
        intercept = intercept + (q - e / c[..., None])
    return v * (1 - first)[..., :, None] + first[..., :, None] * intercept[..., None, :]


_SPLIT = 134217729.0  # 2^27 + 1: Dekker's splitting of a float64 into two halves of 26 bits


def _two_prod(xp, a, b):
    """Elementwise a·b = p + e exactly (Dekker's product, with no fused multiply-add); e is 0 where a half
    overflows (beyond 2^995, where the product's own rounding is what is left)."""
    p = a * b
    ca, cb = _SPLIT * a, _SPLIT * b
    ah, bh = ca - (ca - a), cb - (cb - b)
    al, bl = a - ah, b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, xp.where(xp.isfinite(e), e, xp.zeros_like(e))


def _dot2(xp, a, B):
    """aᵀB over the next-to-last axis (a (..., p), B (..., p, m)) as an unevaluated sum (hi, lo) of shape (..., m),
    to about eps² of Σ|a_j B_jm| (every product split exactly by _two_prod, the 2p terms summed by _sum2)."""
    products, errors = _two_prod(xp, a[..., :, None], B)
    return _sum2(xp, xp.concat([products, errors], axis=-2))


def _sum2(xp, A):
    """The sum of A over its next-to-last axis as (hi, lo), to about n² eps² of max|A| (Rump, Ogita and Oishi's
    extraction, as the NumPy module's _sum2): A = high + rest exactly, every ``high`` a multiple of ulp(σ) for σ
    over 2n max|A|, so that their sum is exact in any order; the rests, each under ulp(σ), summed in the input
    precision. Where σ overflows (A near the largest float), the plain sum."""
    top = xp.max(xp.abs(A), axis=-2, keepdims=True)
    sigma = 2.0 ** (xp.ceil(xp.log2(xp.where(top > 0, top, xp.ones_like(top)))) + (A.shape[-2].bit_length() + 1))
    high = (sigma + A) - sigma
    first, small = xp.sum(high, axis=-2), xp.sum(A - high, axis=-2)
    hi = first + small
    lo = (first - hi) + small
    exact = xp.isfinite(hi) & xp.isfinite(lo)
    return xp.where(exact, hi, xp.sum(A, axis=-2)), xp.where(exact, lo, xp.zeros_like(lo))


#: Route "auto" takes its refinement steps where a problem's estimated cond(X D⁻¹)² (p times the spread of the
#: squared Cholesky pivots) times the spread of its coefficients' scales is over this: about the NumPy module's
#: _REFINE_RISK (1e-13) over 4 eps, so that the Cholesky answer it keeps is within a few times lstsq's error.
_REFINE_SPREAD = 113.0


def _refinement_needed(xp, C, G_s, squares, beta, magnified=None):
    """Per problem, (needed, sharp): ``needed`` whether the Cholesky answer ``beta`` (..., p, k) of the data as given
    may be off by more than a few times a backward-stable solver's error (the NumPy module's _solve_stack estimate;
    NaN: needed); ``sharp`` (all False without ``magnified``) whether a centred problem's intercept magnifies its
    error (_magnified) beyond the NumPy module's bound for its correction step (cond² eps times it over 1e-13:
    4 _REFINE_SPREAD), where one step, its last rounding kept for the intercept, is enough."""
    p = C.shape[-1]
    pivots = xp.linalg.diagonal(C) ** 2 / xp.linalg.diagonal(G_s)  # squared pivots over the diagonal
    cond2 = p * _largest(xp, pivots) / _smallest(xp, pivots)
    norms = xp.sqrt(squares)
    top = xp.max(xp.abs(beta), axis=-1)  # (..., p): each coefficient's largest over the targets
    spread = _largest(xp, norms * top) / (_smallest(xp, norms) * _largest(xp, top))
    needed = ~(cond2 * spread <= _REFINE_SPREAD)
    sharp = xp.zeros_like(needed) if magnified is None else ~(cond2 * magnified(beta) <= 4 * _REFINE_SPREAD)
    return needed, sharp


def _gram_solve(xp, X, Y, steps, check_finite, pending, lazy, uncentre, magnified=None):
    """β = uncentre(γ) for γ the solution of X (centred or not; ``uncentre(v, error, shift=False)`` for a direction of
    the null space, which takes no shift of the targets; ``compensated=False``: in the input precision): the columns
    scaled by powers of two inside XᵀX only, d from XᵀX's diagonal, so the Cholesky factor is that of the scaled X
    (exactly) and no scaled copy of X is made; then up to ``steps`` preconditioned gradient steps γ ← γ + C⁻ᵀC⁻¹Xᵀ(Y −
    Xγ) with the residual in the input precision, where _refinement_needed says any problem of the stack needs them
    (_branch: PyTorch always takes them). With ``pending`` (a list; PyTorch, ``_deferred_checks``) the checks are
    appended to it as (flag, message) pairs, in the order in which they would have been made, instead of reading the
    values here (``_read_checks`` reads them at once). With ``lazy``: (β, deficient), and the rank-deficient problems
    solved by _basic_solution and _minimum_norm, chosen by ``where``. ``magnified``: for a centred problem, how much its
    intercept magnifies γ's error (_magnified), which the test of the steps takes in too."""
    G = X.mT @ X
    XtY = X.mT @ Y
    squares = xp.linalg.diagonal(G)
    if check_finite and pending is not None:  # NaN or infinity in X reaches XᵀX's diagonal; in Y, XᵀY
        pending.append((xp.all(xp.isfinite(squares)), "X contains NaN or infinity"))
        pending.append((xp.all(xp.isfinite(XtY)), "Y contains NaN or infinity"))
    elif check_finite:
        _require_finite(xp, X=squares)
        _require_finite(xp, Y=XtY)
    positive = squares > 0
    k = xp.floor(xp.log2(xp.where(positive, squares, xp.ones_like(squares))) / 2)
    d = 2.0 ** (-xp.where(positive, k, xp.zeros_like(k)))  # (..., p)
    G_s = G * d[..., :, None] * d[..., None, :]
    size = max(X.shape[-2:])
    if lazy:  # PyTorch, nothing read (_no_reads): a failed factor's problem gets the identity, and is deficient;
        # a zero column a pivot of 1 (its coefficient 0, the problem deficient), so that no failed factor's garbage
        # reaches a gradient (where's 0 times an infinite derivative is NaN)
        zero = xp.astype(~positive, G_s.dtype)
        C, failed = _cholesky_ex(xp, G_s + zero[..., None, :] * _eye_like(xp, G_s))
        failed = failed | xp.any(~positive, axis=-1)
    elif pending is None:
        C = _cholesky(xp, G_s)
    else:  # the factor without a test of the device's result; a failed pivot is read with the other checks
        C, info = sys.modules["torch"].linalg.cholesky_ex(G_s)
        pending.append((xp.all(info == 0), _NOT_POSITIVE_DEFINITE))
    XtY = d[..., :, None] * XtY
    beta = _printed("cholesky")(C, XtY)
    if lazy:
        return _lazy_solution(xp, X, Y, d, G_s, XtY, C, beta, failed, steps, uncentre)

    def refined(count):
        b, error = beta, xp.zeros_like(beta)
        for _ in range(count):  # preconditioned gradient steps; the residual in the input precision
            XtY = d[..., :, None] * (X.mT @ (Y - X @ (d[..., :, None] * b)))
            b, error = _two_sum(b, _printed("cholesky")(C, XtY))
        return b, error  # the last correction's rounding, exact: for the intercept (_uncentre)

    error = xp.zeros_like(beta)
    if steps:
        needed, sharp = _refinement_needed(xp, C, G_s, squares, d[..., :, None] * beta, magnified)
        beta, error = _branch(xp, xp.any(needed), lambda: refined(steps),
                              lambda: _branch(xp, xp.any(sharp), lambda: refined(1), lambda: (beta, error)))
    return uncentre(d[..., :, None] * _mark_deficient(xp, C, beta, size), d[..., :, None] * error)


def _two_sum(a, b):
    """(s, e) with s = fl(a + b) and a + b = s + e exactly (Knuth's TwoSum, in any order of magnitude)."""
    s = a + b
    v = s - a
    return s, (a - (s - v)) + (b - v)


def _read_checks(xp, pending):
    """One read of the device for every pending check (all of them combined by ``&``); only where one failed are
    they read one by one, to raise the first failing one's ValueError, as the checks made in turn would."""
    if not pending:
        return
    combined = pending[0][0]
    for flag, _ in pending[1:]:
        combined = combined & flag
    if bool(combined):
        return
    for flag, message in pending:
        if not bool(flag):
            raise ValueError(message)


def _deficient(xp, C, size):
    """Per problem, whether its Cholesky pivots say κ² eps >= size eps (XᵀX numerically singular: a factor of a
    rank-deficient X can succeed with a tiny pivot and give a large, wrong β)."""
    pivots = xp.abs(xp.linalg.diagonal(C))
    low, high = _smallest(xp, pivots), _largest(xp, pivots)
    return (low / high) ** 2 <= size * xp.finfo(C.dtype).eps


def _mark_deficient(xp, C, beta, size):
    """β, NaN for each problem that _deficient finds numerically singular."""
    return xp.where(_deficient(xp, C, size)[..., None, None], xp.full_like(beta, math.nan), beta)


# --- the rank-deficient problems of a stack, with nothing read (issue 43) ---------------------------------------

#: A column of a problem that _deficient finds singular is taken as dependent on the columns before it where the
#: squared pivot of the Cholesky factor of XᵀX + τI (columns scaled, τ = 4 max(n, p) eps) is under this many τ:
#: about τ(1 + ‖c‖²) for a column that is X_I c exactly, at least its residual's share of its norm² otherwise.
_DEPENDENT = 1e4


def _cholesky_ex(xp, G):
    """(C, failed): PyTorch's Cholesky factors without a test on the host; a failed factor is the identity."""
    C, info = sys.modules["torch"].linalg.cholesky_ex(G)
    failed = info != 0
    return xp.where(failed[..., None, None], _eye_like(xp, G), C), failed


def _cholesky_solve(C, B):
    """(CCᵀ)⁻¹B by two triangular solves (``torch.cholesky_solve`` tests its result on the host)."""
    return _solve_triangular(C, _solve_triangular(C, B, lower=True, transpose=False), lower=False, transpose=True)


def _basic_solution(xp, G_s, XtY_s, size):
    """The basic solutions of the column-scaled problems, on the columns that are independent of those before them,
    and a basis of the null space of X: (C̃, keep, β_b, N_s, usable). ``keep`` (..., p) marks the columns kept (the
    others, _DEPENDENT, are dropped in order, as a Cholesky factorization with a zero for a dependent column's
    pivot drops them); C̃ is the Cholesky factor of XᵀX with the dropped columns and rows replaced by those of I;
    column j of N_s (..., p, p) is e_j − c_j for a dropped column j = X_I c_j (0 for a kept one), so X N_s = 0;
    ``usable`` (...) says where a column was dropped, C̃ is a sound factor and the data are finite (else the
    problem's answer is NaN)."""
    eye = _eye_like(xp, G_s)
    tau = 4 * size * xp.finfo(G_s.dtype).eps
    R, _ = _cholesky_ex(xp, G_s + tau * eye)
    keep = xp.linalg.diagonal(R) ** 2 > _DEPENDENT * tau  # NaN: dropped
    both = keep[..., :, None] & keep[..., None, :]
    dropped = xp.astype(~keep, G_s.dtype)
    C, failed = _cholesky_ex(xp, xp.where(both, G_s, xp.zeros_like(G_s)) + dropped[..., None, :] * eye)
    beta = _cholesky_solve(C, xp.where(keep[..., :, None], XtY_s, xp.zeros_like(XtY_s)))
    rhs = xp.where(keep[..., :, None] & ~keep[..., None, :], G_s, xp.zeros_like(G_s))
    null = dropped[..., None, :] * eye - _cholesky_solve(C, rhs)
    finite = xp.all(xp.isfinite(G_s), axis=(-2, -1)) & xp.all(xp.isfinite(XtY_s), axis=(-2, -1))
    usable = ~failed & ~_deficient(xp, C, size) & xp.any(~keep, axis=-1) & finite
    return C, keep, beta, null, usable


def _minimum_norm(xp, beta, null):
    """β less its projection on the span of the columns of ``null`` (..., p, p; zero columns allowed): the
    minimum-norm solution where β solves the least-squares problem and ``null`` spans X's null space
    (pseudo_inverse: X⁺Y is the solution orthogonal to it). The columns normalised first, the projection from the
    normal equations of that small problem and once more from its residual."""
    squares = xp.sum(null * null, axis=-2)  # (..., p)
    used = (squares > 0) & (squares < math.inf)
    # no square root of 0 (nor division by it) even where unused: its gradient, times where's 0, would be NaN
    N = null / xp.sqrt(xp.where(used, squares, xp.ones_like(squares)))[..., None, :]
    eye = _eye_like(xp, N)
    A, _ = _cholesky_ex(xp, N.mT @ N + xp.astype(~used, N.dtype)[..., None, :] * eye)
    for _ in range(2):
        beta = beta - N @ _cholesky_solve(A, N.mT @ beta)
    return beta


def _lazy_solution(xp, X, Y, d, G_s, XtY_s, C, beta, failed, steps, uncentre):
    """(β, deficient) with nothing read (_no_reads): the Cholesky answer refined; where a problem is deficient
    (its factor failed, _deficient, or β is not finite), the minimum-norm solution: the basic solution
    (_basic_solution), refined in the same passes over X as the others (its gradient restricted to the kept
    columns), less its part in the null space (_minimum_norm), in the coordinates of X as given; NaN where its
    columns kept are still singular (no usable basic solution)."""
    size = max(X.shape[-2:])
    C_b, keep, beta_b, null, usable = _basic_solution(xp, G_s, XtY_s, size)
    k = Y.shape[-1]
    both = xp.concat([Y, Y], axis=-1)
    error = xp.zeros_like(beta)
    for _ in range(steps):  # one pass over X for both answers
        g = d[..., :, None] * (X.mT @ (both - X @ (d[..., :, None] * xp.concat([beta, beta_b], axis=-1))))
        XtY = g[..., :k]
        beta, error = _two_sum(beta, _printed("cholesky")(C, XtY))  # the last rounding, for _uncentre
        beta_b = beta_b + _cholesky_solve(C_b, xp.where(keep[..., :, None], g[..., k:], xp.zeros_like(beta_b)))
    beta = uncentre(d[..., :, None] * beta, d[..., :, None] * error)
    deficient = failed | _deficient(xp, C, size) | ~xp.all(xp.isfinite(beta), axis=(-2, -1))
    minimum = _minimum_norm(xp, uncentre(d[..., :, None] * beta_b, compensated=False),
                            uncentre(d[..., :, None] * null, shift=False, compensated=False))
    minimum = xp.where(usable[..., None, None], minimum, xp.full_like(minimum, math.nan))
    return xp.where(deficient[..., None, None], minimum, beta), deficient


def _tolerance(xp, values, size):
    """Values under ``size`` eps times the largest become +inf, so their inverse is 0 (pseudo_inverse)."""
    eps = xp.finfo(values.dtype).eps
    top = xp.max(values, axis=-1, keepdims=True)
    return xp.where(values > top * (size * eps), values, xp.full_like(values, math.inf))


def _route_eigh(xp, X, Y):
    lam, V = xp.linalg.eigh(X.mT @ X)
    lam = _tolerance(xp, lam, max(X.shape[-2:]))
    XtY = X.mT @ Y
    return _printed("eigh")(V, lam, XtY)


def _svd_factors(xp, X):
    U, s, Vh = xp.linalg.svd(X, full_matrices=False)
    return U, _tolerance(xp, s, max(X.shape[-2:])), Vh.mT


def _route_svd(xp, X, Y):
    U, s, V = _svd_factors(xp, X)
    return _printed("svd")(U, s, V, Y)


def _route_qr(xp, X, Y):
    Q, R = xp.linalg.qr(X)
    return _printed("qr")(Q, R, Y)


def _no_reads(xp, route, check_finite, X, Y) -> bool:
    """Whether route "auto" runs without reading a value on the host (issue 43): PyTorch tensors with the default
    ``check_finite`` (None), where every read makes the host wait for a GPU (and breaks a CUDA graph or a
    torch.compile graph): concrete, traced by torch.compile or mapped by torch.vmap. NaN or infinity in a
    problem's data then shows as NaN in that problem's β, and rank-deficient problems get their minimum-norm
    solution (_lazy_solution), with no read and no loop over the problems."""
    return route == "auto" and check_finite is None and is_torch_namespace(xp)


def _beta(xp, X, Y, route, refine=REFINEMENT_STEPS, check_finite=True):
    """β of the data as given (X, Y validated, (..., n, k)): the route on the column-scaled data, unscaled."""
    if route in ("auto", "cholesky"):
        if _no_reads(xp, route, check_finite, X, Y):
            return _route_cholesky(xp, X, Y, refine, False, None, lazy=True)[0]
        pending = [] if _deferred_checks(xp, X, Y) else None
        beta = _route_cholesky(xp, X, Y, refine if route == "auto" else 0, check_finite is not False, pending)
        if pending is None:
            _require_finite_result(xp, beta, "the least-squares solution", _NOT_FINITE_HINT)
        else:
            pending.append((xp.all(xp.isfinite(beta)), f"the least-squares solution is not finite: {_NOT_FINITE_HINT}"))
            _read_checks(xp, pending)
        return beta
    X_s, Y_s, sx, _, inv_sy = _scaled(xp, X, Y)
    if route == "eigh":
        beta_s = _route_eigh(xp, X_s, Y_s)
    elif route == "svd":
        beta_s = _route_svd(xp, X_s, Y_s)
    else:
        beta_s = _route_qr(xp, X_s, Y_s)
    beta = _unscale_beta(beta_s, sx, inv_sy)
    _require_finite_result(xp, beta, "the least-squares solution",
                           "X is rank-deficient (or the solution overflows); use route='svd'")
    return beta


# --- concrete arrays in CPU memory: the NumPy module's "auto" ------------------------------


class RankDeficientWarning(UserWarning, RuntimeWarning):
    """On the CPU, route "auto" (the NumPy module's): X is numerically rank-deficient, and the answer is the
    minimum-norm least-squares solution; the message names the numerical rank and the condition estimate."""


_HOST_LOCK = threading.Lock()
_HOST_LOADED: dict[str, Any] = {}  # path -> the loaded NumPy module, or None where it is absent or not ours


def _host_module():
    """The NumPy module generated with this one, loaded once from ``HOST_MODULE_FILE`` beside this file; None
    where there is none or its SHA-256 is not ``HOST_MODULE_SHA256`` (edited, or from another generation)."""
    if not HOST_MODULE_SHA256:
        return None
    path = Path(__file__).with_name(HOST_MODULE_FILE)
    key = str(path)
    with _HOST_LOCK:
        if key not in _HOST_LOADED:
            _HOST_LOADED[key] = None
            try:
                text = path.read_bytes()
            except OSError:
                return None
            if hashlib.sha256(text).hexdigest() != HOST_MODULE_SHA256:
                return None
            # Run exactly the bytes hashed: compiled here and executed into a fresh module object. Importing the
            # path instead would read the file again (it may have changed since) and would run a __pycache__
            # .pyc whose header matches the source's size and time in place of the source itself.
            name = f"_ols_attention_host_{hashlib.sha256(key.encode()).hexdigest()[:12]}"
            module = types.ModuleType(name)
            module.__file__ = key
            sys.modules[name] = module  # its classes name it as their module
            try:
                exec(compile(text, key, "exec", dont_inherit=True), module.__dict__)
            except ImportError:  # NumPy itself missing: the array-API code serves
                del sys.modules[name]
                return None
            _HOST_LOADED[key] = module
        return _HOST_LOADED[key]


def _host_views(xp, *arrays):
    """NumPy views (no copy) of concrete float32/float64 CPU arrays of NumPy, PyTorch or JAX, or None where any is
    not one: on another device, traced (jit, vmap, grad, torch.compile, torch.func), or recording a gradient."""
    if any(a.dtype not in (xp.float32, xp.float64) for a in arrays):
        return None
    if is_jax_namespace(xp):  # array_api_compat calls every JAX array lazy; only tracers are
        jax = sys.modules["jax"]
        if any(isinstance(a, jax.core.Tracer) or any(d.platform != "cpu" for d in a.devices()) for a in arrays):
            return None
        import numpy

        return tuple(numpy.asarray(a) for a in arrays)
    if not _concrete(*arrays):
        return None
    if is_numpy_namespace(xp):
        return arrays
    if is_torch_namespace(xp):
        torch = sys.modules["torch"]
        if any(type(a) is not torch.Tensor or a.requires_grad for a in arrays):
            return None
        try:  # refused (RuntimeError, TypeError) on another device, for torch.func's wrapped tensors, a neg bit
            return tuple(a.numpy() for a in arrays)
        except (RuntimeError, TypeError):
            return None
    return None


def _hosted(xp, route, refine, *arrays) -> bool:
    """Whether route "auto" with ``refine`` on these arrays is the NumPy module's (_host_solve)."""
    return (HOST_NUMERICS and route == "auto" and refine == REFINEMENT_STEPS and _host_views(xp, *arrays) is not None
            and _host_module() is not None)


def _host_solve(xp, X, Y, route, refine, check_finite, lam):
    """β from the NumPy module's "auto" for route "auto" with the default ``refine`` and ``check_finite`` on
    concrete CPU arrays it can read in place; else None (the array-API code serves)."""
    if check_finite is False or not _hosted(xp, route, refine, X, Y):
        return None
    views = _host_views(xp, X, Y)
    host = _host_module()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        beta = host.coefficients(*views, ridge=lam)
    for found in caught:  # the host module's classes live in a module made at run time: said as this module's own
        category = RankDeficientWarning if found.category.__name__ == "RankDeficientWarning" else found.category
        if category.__module__.startswith("_ols_attention_host_"):
            category = RuntimeWarning
        warnings.warn(str(found.message), category, stacklevel=4)
    return xp.asarray(beta, device=device(X))


def _solve(xp, X, Y, route, refine, check_finite, lam):
    """β of OLS (weighted rows already applied) or, with λ, of ridge: the route on the augmented problem
    [√λ I; X] ("svd": the SVD of X itself; p > n: the n×n problem of the R of Xᵀ = QR)."""
    beta = _host_solve(xp, X, Y, route, refine, check_finite, lam)
    if beta is not None:
        return beta
    if lam is not None and route == "svd":
        beta = _ridge_svd(xp, X, Y, lam)
        _require_finite_result(xp, beta, "the ridge solution", "it overflows; rescale X or Y")
        return beta
    if lam is not None and X.shape[-2] < X.shape[-1]:  # Xᵀ = QR, X = RᵀQᵀ: β = Q (RRᵀ + λI)⁻¹RY, the ridge
        Q, R = xp.linalg.qr(X.mT)  # solution of the n×n Rᵀ ([√λ I; X] itself has cond ‖X‖/√λ when p > n)
        return Q @ _solve(xp, R.mT, Y, route, refine, check_finite, lam)
    if lam is not None:
        X, Y = _augmented(xp, X, Y, lam)
    return _beta(xp, X, Y, route, refine, check_finite)


# --- public functions --------------------------------------------------------------------


def coefficients(X: Array, Y: Array, *, route: str = "auto", refine: int = REFINEMENT_STEPS,
                 check_finite: bool | None = None, ridge: float | None = None, weights: Array | None = None) -> Array:
    """OLS coefficients β̂ = (XᵀX)⁻¹XᵀY, computed as attention: no n×n or m×n matrix is formed.

    Parameters
    ----------
    X : array, shape (..., n, p)
        The design, one example per row, an array of a real floating dtype of any array-API namespace; leading
        dimensions are a batch of independent problems.
    Y : array, shape (..., n) or (..., n, k)
        The targets, of the same namespace; the batch dimensions must equal those of ``X`` (nothing broadcasts).
    route : {"auto", "cholesky", "eigh", "svd", "qr"}, keyword-only
        Which checked identity evaluates β̂ (see the module docstring). ``"auto"``: Cholesky of the column-scaled
        Gram matrix and two refinement steps, accurate where cond(X)² eps is well under 1 once columns are
        scaled; ``"svd"`` for ill-conditioned or rank-deficient X (minimum norm).
    refine : int, keyword-only
        The most refinement steps of route ``"auto"`` (a Python int: it bounds the traced computation), taken
        where the Cholesky pivots say the answer needs them (on PyTorch always). With the default, concrete CPU
        arrays get the NumPy module's ``"auto"`` (the module docstring, "On the CPU"), which refines until β
        stops moving; another value keeps the array-API code.
    check_finite : bool or None, keyword-only
        Check the data for NaN and infinity (only where the values are concrete: never under tracing); the
        routes "auto" and "cholesky" read it off XᵀX's diagonal and XᵀY, which costs no pass over the data.
        None (the default) is True, except for route "auto" on PyTorch tensors running the array-API code (a
        GPU, a gradient, torch.compile, torch.vmap, ``HOST_NUMERICS = False``): there nothing is read back to the
        host (no wait for the device, issue 43), NaN or infinity in a problem's data gives NaN in that problem's
        β, and a rank-deficient problem gets its minimum-norm solution (found from the Cholesky factor's
        ``info`` and pivots, solved for the stack by masks: no loop, no read); True reads once and raises
        ValueError.
    ridge : float, optional, keyword-only
        λ > 0 (a Python number): the ridge coefficients (XᵀX + λI)⁻¹XᵀY (ridge_is_linear_attention), every
        coefficient penalised (add no intercept column you do not want shrunk). The route solves the
        least-squares problem of the rows √λ I stacked on X (its Gram matrix is XᵀX + λI; "svd": the SVD of X
        itself, V S(S² + λ)⁻¹UᵀY), accurate relative to X's own scale for every λ, so every route works for any
        X, rank-deficient or wider than tall (p > n: the n×n problem of the R of Xᵀ = QR). Unlike the NumPy
        module's "auto" there is no dual (n×n token) route for p > n. Zero, negative, NaN or
        infinite λ: ValueError; not a real number: TypeError.
    weights : array, shape (..., n), optional, keyword-only
        Positive finite weights, one per row of every problem, of the same namespace and a real floating dtype:
        the weighted least-squares coefficients, argmin Σ w_i ‖y_i − x_i β‖² (+ λ‖β‖²), solved as OLS of the
        rows √w_i x_i, √w_i y_i. Their shape must be exactly X.shape[:-1] (nothing broadcasts). Where values are
        concrete, NaN, zero, negative or infinite weights raise ValueError naming them; while traced they give
        NaN.

    Returns
    -------
    array, shape (..., p) or (..., p, k)
        β̂ in the arguments' common floating dtype, on their device.

    Raises
    ------
    TypeError
        An argument is not an array of a real floating dtype, or the arguments mix namespaces.
    ValueError
        A bad shape, an empty array, an unknown route, n < p for a route that needs full rank (without a ridge);
        where values are concrete, NaN or infinity in the data or a result that is not finite (rank-deficient
        X; on the CPU and on PyTorch by default, route "auto" gives the minimum-norm solution instead); a ridge
        that is not positive and finite; weights not one per row or (concrete) not positive and finite.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    >>> beta = coefficients(X, np.array([1.0, 2.0, 4.0]))
    >>> bool(np.allclose(beta, [5 / 6, 1.5]))
    True
    >>> coefficients(X.astype(np.float32), np.float32([1, 2, 4])).dtype
    dtype('float32')
    >>> lam = 0.5
    >>> bool(np.allclose(coefficients(X, np.array([1.0, 2.0, 4.0]), ridge=lam),
    ...                  np.linalg.solve(X.T @ X + lam * np.eye(2), X.T @ [1.0, 2.0, 4.0])))
    True
    >>> w = np.array([1.0, 2.0, 3.0])
    >>> bool(np.allclose(coefficients(X, np.array([1.0, 2.0, 4.0]), weights=w),
    ...                  np.linalg.solve(X.T @ (w[:, None] * X), X.T @ (w * [1.0, 2.0, 4.0]))))
    True
    """
    lam = _ridge_value(ridge)
    xp, X, Y, _, vector_y, _ = _validate(X, Y, None, route, check_finite, ridge=lam, weights=weights)
    beta = _solve(xp, X, Y, route, refine, check_finite, lam)
    return beta[..., 0] if vector_y else beta


def predict(X: Array, Y: Array, X_query: Array, *, route: str = "auto", refine: int = REFINEMENT_STEPS,
            check_finite: bool | None = None, ridge: float | None = None, weights: Array | None = None) -> Array:
    """Predictions X_q β̂ (β̂ as in :func:`coefficients`).

    Parameters
    ----------
    X : array, shape (..., n, p)
        The design (the keys), one example per row.
    Y : array, shape (..., n) or (..., n, k)
        The targets (the values).
    X_query : array, shape (..., m, p) or (..., p)
        The queries; a single query gives a single prediction per problem.
    route : {"auto", "cholesky", "eigh", "svd", "qr"}, keyword-only
        As in :func:`coefficients`.
    refine : int, keyword-only
        As in :func:`coefficients`.
    check_finite : bool, keyword-only
        As in :func:`coefficients`.
    ridge : float, optional, keyword-only
        λ > 0: the ridge predictions X_q (XᵀX + λI)⁻¹XᵀY, as in :func:`coefficients`.
    weights : array, shape (..., n), optional, keyword-only
        Positive weights, one per row: the weighted least-squares predictions, as in :func:`coefficients`.

    Returns
    -------
    array, shape (..., m[, k]), (...[, k]) for a single query
        The predictions, in the arguments' common floating dtype.

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
    >>> round(float(predict(X, np.array([1.0, 2.0, 4.0]), np.array([1.0, 3.0]))), 12)  # 5/6 + 3 · 3/2
    5.333333333333
    """
    lam = _ridge_value(ridge)
    xp, X, Y, Q, vector_y, vector_q = _validate(X, Y, X_query, route, check_finite, ridge=lam, weights=weights)
    if check_finite is None and _no_reads(xp, route, None, X, Y) and _hosted(xp, route, refine, X, Y, Q):
        _require_finite(xp, X_query=Q)  # the NumPy module serves (it reads X and Y): the queries named as well
    out = Q @ _solve(xp, X, Y, route, refine, check_finite, lam)
    if vector_y:
        out = out[..., 0]
    return out[..., 0, :] if vector_q and not vector_y else out[..., 0] if vector_q else out


def _identity(xp, like):
    eye = xp.eye(like.shape[-1], dtype=like.dtype, device=getattr(like, "device", None))
    return xp.broadcast_to(eye, like.shape)


def _factor(xp, X, route):
    """(L_s, X_s, sx): X_s = X sx (columns scaled by powers of two) and L_s L_sᵀ = (X_sᵀX_s)⁻¹ (minimum norm for
    "auto", "svd", "eigh"); L = diag(sx) L_s has L Lᵀ = (XᵀX)⁻¹."""
    sx, _ = _column_scales(xp, X)
    X = X * sx
    if route in ("auto", "svd"):
        _, s, V = _svd_factors(xp, X)
        L = V * (1 / s)[..., None, :]
    elif route == "eigh":
        lam, V = xp.linalg.eigh(X.mT @ X)
        L = V * (_tolerance(xp, lam, max(X.shape[-2:])) ** -0.5)[..., None, :]
    elif route == "cholesky":
        C = _cholesky(xp, X.mT @ X)
        L = _mark_deficient(xp, C, _solve_triangular(C, _identity(xp, C), True, False).mT, max(X.shape[-2:]))
    else:
        _, R = xp.linalg.qr(X)
        L = _solve_triangular(R, _identity(xp, R), False, False)
    return L, X, sx


def attention_parameters(X: Array, Y: Array, *, route: str = "auto",
                         check_finite: bool = True) -> tuple[Array, Array, Array, Array]:
    """(W_Q, W_K, W_V, P) of the paper's construction: W_Q = W_K = W_V = L, P = LᵀXᵀY (paper_construction).

    X L P is then the fitted values H Y; every route's L satisfies L Lᵀ = (XᵀX)⁻¹ (gauge_invariance); "auto",
    "svd" and "eigh" give the minimum-norm factor, L Lᵀ = (XᵀX)⁺, on a rank-deficient X (pseudo_inverse).

    Parameters
    ----------
    X : array, shape (..., n, p)
        The design, one example per row.
    Y : array, shape (..., n) or (..., n, k)
        The targets.
    route : {"auto", "cholesky", "eigh", "svd", "qr"}, keyword-only
        Which factor L, of the column-scaled X (L = diag(2^-kx) L_s): ``"auto"`` and ``"svd"`` V S⁻¹ from the SVD
        of X (without forming XᵀX), ``"eigh"`` VΛ^{-1/2}, ``"cholesky"`` C⁻ᵀ, ``"qr"`` R⁻¹.
    check_finite : bool, keyword-only
        As in :func:`coefficients`.

    Returns
    -------
    W_Q, W_K, W_V : array, shape (..., p, p)
        Three copies of L.
    P : array, shape (..., p) or (..., p, k)
        The output projection LᵀXᵀY.

    Raises
    ------
    TypeError
        As in :func:`coefficients`.
    ValueError
        As in :func:`coefficients`.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    >>> W_Q, W_K, W_V, P = attention_parameters(X, np.array([1.0, 2.0, 4.0]))
    >>> bool(np.allclose(W_Q @ W_K.T, np.linalg.inv(X.T @ X))), bool(np.allclose(X @ W_V @ P, X @ [5 / 6, 1.5]))
    (True, True)
    """
    xp, X, Y, _, vector_y, _ = _validate(X, Y, None, route, check_finite, pass_over=True)
    L, X, sx = _factor(xp, X, route)
    sy, inv_sy = _column_scales(xp, Y)
    Y = Y * sy
    P = _printed("P")(L, X, Y) * inv_sy  # LᵀXᵀY: the scales of the columns of X cancel
    L = sx.mT * L
    _require_finite_result(xp, L, "the attention factor L", "X is rank-deficient; use route='svd'")
    P = P[..., 0] if vector_y else P
    return L, L * 1, L * 1, P  # three arrays (a product keeps the autograd graph, as a copy would not)


def attention_scores(X: Array, X_query: Array, *, route: str = "auto", check_finite: bool = True) -> Array:
    """The m×n score matrix (X_q L)(X L)ᵀ, for teaching: :func:`predict` never forms it.

    Parameters
    ----------
    X : array, shape (..., n, p)
        The design (the keys).
    X_query : array, shape (..., m, p) or (..., p)
        The queries.
    route : {"auto", "cholesky", "eigh", "svd", "qr"}, keyword-only
        Which factor L, as in :func:`attention_parameters`.
    check_finite : bool, keyword-only
        As in :func:`coefficients`.

    Returns
    -------
    array, shape (..., m, n), or (..., n) for a single query
        The scores; scores @ Y are the predictions.

    Raises
    ------
    TypeError
        As in :func:`coefficients`.
    ValueError
        As in :func:`coefficients`.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    >>> scores = attention_scores(X, np.array([1.0, 3.0]))
    >>> scores.shape, bool(np.isclose(scores @ [1.0, 2.0, 4.0], 5 / 6 + 4.5))
    ((3,), True)
    """
    xp = _namespace(X=X, X_query=X_query)
    _check_array(xp, "X", X, 2)
    xp, X, _, X_query, _, vector_q = _validate(X, xp.zeros_like(X[..., 0]), X_query, route, check_finite,
                                                pass_over=True)
    L, X, sx = _factor(xp, X, route)
    X_query = X_query * sx  # (X_q L)(X L)ᵀ with the scaled factors: the scales of the columns cancel
    scores = _printed("scores")(X_query, L, X)
    _require_finite_result(xp, scores, "the attention score matrix", "X is rank-deficient; use route='svd'")
    return scores[..., 0, :] if vector_q else scores


# --- streaming least squares and k layers -----------------------------------------------------


class RecursiveLeastSquares:
    """Streaming OLS or ridge: causal linear attention with a square-root memory (causal_online_ls).

    As the NumPy module's: an upper-triangular R with RᵀR = X_tᵀX_t + λI and Z = R⁻ᵀX_tᵀY_t, replaced at each
    :meth:`update` by the triangle of the QR factorization of [R Z; X_rows Y_rows] (the square-root information
    filter: backward stable), and β = R⁻¹Z = (XᵀX + λI)⁻¹XᵀY. The state lives in the namespace, dtype and device
    of the first update's arrays (later updates must match them); it is an ordinary Python object (eager).

    Parameters
    ----------
    p : int
        Number of columns of X (features).
    k : int, default 1
        Number of targets; with k = 1 targets may come one per row and :attr:`coefficients` is a vector.
    ridge : float or None, keyword-only
        λ > 0 for ridge regression; None for OLS, which needs rows enough for XᵀX to be invertible.

    Raises
    ------
    TypeError
        p or k not an integer; data not arrays of a real floating dtype, or of another namespace or dtype than
        the first update's.
    ValueError
        p or k under 1, a ridge that is not positive and finite; data of the wrong shape or (concrete) not
        finite; the coefficients read before any row, or (OLS) while XᵀX is singular.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.standard_normal((100, 3)), rng.standard_normal(100)
    >>> rls = RecursiveLeastSquares(3)
    >>> for i in range(0, 100, 20):
    ...     rls.update(X[i:i + 20], y[i:i + 20])
    >>> bool(np.allclose(rls.coefficients, np.linalg.lstsq(X, y, rcond=None)[0], rtol=1e-12))
    True
    """

    def __init__(self, p: int, k: int = 1, *, ridge: float | None = None) -> None:
        for name, value in (("p", p), ("k", k)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise TypeError(f"{name} must be an integer, not {type(value).__name__}")
            if value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        self.p, self.k = int(p), int(k)
        self.ridge = _ridge_value(ridge)
        self._state = None  # [R Z; 0 ·], made at the first update in its arrays' namespace
        self.rows = 0

    def update(self, X_rows: Array, Y_rows: Array) -> None:
        """Add rows (one row as a vector of p, or a chunk (r, p)) and their targets (r numbers for k = 1, or rows
        of k values): one QR factorization of the (p + k + r)-row stack [R Z; X_rows Y_rows]."""
        xp = _namespace(X_rows=X_rows, Y_rows=Y_rows)
        _check_array(xp, "X_rows", X_rows, 1)
        _check_array(xp, "Y_rows", Y_rows, 0)
        X = X_rows[None, :] if X_rows.ndim == 1 else X_rows
        if X.ndim != 2 or X.shape[1] != self.p:
            raise ValueError(f"X_rows must have shape ({self.p},) or (r, {self.p}), got {tuple(X_rows.shape)}")
        r, Y = X.shape[0], Y_rows
        if self.k == 1 and tuple(Y.shape) in ((), (r,)):
            Y = xp.reshape(Y, (r, 1))
        elif r == 1 and tuple(Y.shape) == (self.k,):
            Y = Y[None, :]
        if tuple(Y.shape) != (r, self.k):
            raise ValueError(f"Y_rows must hold {r} row(s) of {self.k} target(s), got shape {tuple(Y_rows.shape)}")
        dtype = xp.result_type(X, Y)
        X, Y = xp.astype(X, dtype, copy=False), xp.astype(Y, dtype, copy=False)
        _require_finite(xp, X_rows=X, Y_rows=Y)
        if self._state is None:
            size = self.p + self.k
            eye = xp.eye(size, dtype=dtype, device=device(X))
            scale = math.sqrt(self.ridge) if self.ridge is not None else 0.0
            mask = xp.reshape(xp.arange(size, device=device(X)) < self.p, (1, size))
            self._state = xp.where(mask & mask.mT, eye * scale, xp.zeros_like(eye))
        elif array_namespace(self._state) is not xp or self._state.dtype != dtype:
            raise TypeError(f"the rows must be arrays of the first update's namespace and dtype "
                            f"({self._state.dtype}), got {dtype}")
        stacked = xp.concat([self._state, xp.concat([X, Y], axis=1)], axis=0)
        _, state = xp.linalg.qr(stacked)
        if _concrete(state) and _false(xp.all(xp.isfinite(state))):
            raise ValueError("the streamed data overflow the dtype (their squared norms): rescale X or Y")
        self._state = state
        self.rows += r

    @property
    def coefficients(self) -> Array:
        """β = R⁻¹Z = (XᵀX + λI)⁻¹XᵀY of every row so far: shape (p,) for k = 1, else (p, k)."""
        if self._state is None:
            raise ValueError("no rows streamed yet: the coefficients' namespace and dtype come from the first "
                             "update")
        xp = array_namespace(self._state)
        R, Z = self._state[:self.p, :self.p], self._state[:self.p, self.p:]
        if self.ridge is None:
            if self.rows < self.p:
                raise ValueError(f"OLS needs at least p = {self.p} rows before its coefficients, got {self.rows} "
                                 f"(or give a ridge)")
            if _concrete(R):
                s = xp.linalg.svdvals(R)  # those of X: the rank test of numpy.linalg.lstsq
                if _false(s[-1] > s[0] * (max(self.rows, self.p) * xp.finfo(R.dtype).eps)):
                    raise ValueError(f"XᵀX of the {self.rows} rows so far is singular (X is rank-deficient): no "
                                     f"unique OLS coefficients; give a ridge, or stream more rows")
        beta = _solve_triangular(R, Z, False, False)
        _require_finite_result(xp, beta, "the streamed coefficients", "they overflow the dtype")
        return beta[:, 0] if self.k == 1 else beta

    def predict(self, X_query: Array) -> Array:
        """X_q β for queries (m, p) or one query (p,): shape (m,) / () for k = 1, else (m, k) / (k,)."""
        beta = self.coefficients
        xp = _namespace(X_query=X_query, coefficients=beta)
        _check_array(xp, "X_query", X_query, 1)
        if X_query.shape[-1] != self.p or X_query.ndim > 2:
            raise ValueError(f"X_query must have shape ({self.p},) or (m, {self.p}), got {tuple(X_query.shape)}")
        _require_finite(xp, X_query=X_query)
        return xp.astype(X_query, beta.dtype, copy=False) @ beta


def multi_layer_predict(X: Array, Y: Array, X_query: Array, *, layers: int, step: float | Array,
                        check_finite: bool = True) -> Array:
    """The prediction of k layers of linear self-attention: X_q β_k, β_k after k preconditioned gradient steps.

    As the NumPy module's (multi_layer_gd): β_0 = 0 and β_{t+1} = β_t + ΓXᵀ(Y − Xβ_t), evaluated with p×p and
    p×k products; ``layers`` is a Python int, so the loop unrolls into a fixed traced computation.

    Parameters
    ----------
    X : array, shape (..., n, p)
        The context (keys), one example per row; leading dimensions are a batch.
    Y : array, shape (..., n) or (..., n, k)
        The targets (values).
    X_query : array, shape (..., m, p) or (..., p)
        The queries.
    layers : int, keyword-only
        k >= 0, the number of layers (0 layers predict 0).
    step : float or array of shape (p, p) or (..., p, p), keyword-only
        Γ = W_Q W_Kᵀ restricted to the features: a Python number η (Γ = ηI) or a p×p matrix of the same namespace.
    check_finite : bool, keyword-only
        As in :func:`coefficients`.

    Returns
    -------
    array, shape (..., m[, k]), (...[, k]) for a single query
        The predictions X_q β_k, in the arguments' common floating dtype.

    Raises
    ------
    TypeError
        An argument is not an array of a real floating dtype (``step``: or a real number), ``layers`` not an int.
    ValueError
        Bad shapes, negative ``layers``; where values are concrete, NaN or infinity, or iterates that leave the
        float range (the steps diverge: Γ too large).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    >>> y, q = np.array([1.0, 2.0, 4.0]), np.array([1.0, 3.0])
    >>> round(float(multi_layer_predict(X, y, q, layers=1, step=np.linalg.inv(X.T @ X))), 12)
    5.333333333333
    """
    if isinstance(layers, bool) or not isinstance(layers, numbers.Integral):
        raise TypeError(f"layers must be an integer, not {type(layers).__name__}")
    if layers < 0:
        raise ValueError(f"layers must be at least 0, got {layers}")
    xp, X, Y, Q, vector_y, vector_q = _validate(X, Y, X_query, "svd", check_finite)
    p = X.shape[-1]
    if isinstance(step, numbers.Real) and not isinstance(step, bool):
        G = float(step) * _identity(xp, X.mT @ X)
    else:
        xp_step = _namespace(X=X, step=step)
        _check_array(xp_step, "step", step, 2)
        if tuple(step.shape[-2:]) != (p, p) or tuple(step.shape[:-2]) not in ((), tuple(X.shape[:-2])):
            raise ValueError(f"step must be a number or a {p}×{p} matrix (per problem), got shape "
                             f"{tuple(step.shape)}")
        G = xp.astype(step, X.dtype, copy=False)
    if check_finite:
        _require_finite(xp, step=G)
    GXtY, GXtX = G @ (X.mT @ Y), G @ (X.mT @ X)
    beta = GXtY * 0
    for _ in range(int(layers)):  # β_{t+1} = β_t + ΓXᵀY − ΓXᵀXβ_t
        beta = beta + (GXtY - GXtX @ beta)
    _require_finite_result(xp, beta, f"the iterates β_t of {layers} layers",
                           "the steps diverge (the step Γ is too large: I − ΓXᵀX must have spectral radius under 1)")
    out = Q @ beta
    if vector_y:
        out = out[..., 0]
    return out[..., 0, :] if vector_q and not vector_y else out[..., 0] if vector_q else out


# --- causal linear attention, chunkwise, and least squares on every prefix (issue 42) -----------------
#
# The NumPy module's algorithms (see its docstrings) in array-API operations: no branch on values, Python loops over
# chunks and blocks only (fixed by the shapes), so they trace under jax.jit and torch.compile and differentiate.


def _steps_array(xp, name, value, steps, dtype, place):
    """A number or an array broadcasting to ``steps`` (leading dimensions and T), as an array of that shape."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        raise TypeError(f"{name} must be a number or an array, not {type(value).__name__}")
    if isinstance(value, numbers.Real):
        return xp.full(steps, float(value), **place)
    _check_array(xp, name, value, 0)
    shape = tuple(value.shape)
    fits = len(shape) <= len(steps) and all(a in (1, b) for a, b in zip(shape[::-1], steps[::-1], strict=False))
    if not fits:
        raise ValueError(f"{name} must be a number or an array of shape {steps} (one per step, (..., T); it may "
                         f"broadcast to it), got shape {shape}")
    return xp.broadcast_to(xp.astype(value, dtype, copy=False), steps)


def _xp_chunk_decays(xp, gamma):
    """D[..., t, i] = γ_{i+1}⋯γ_t (i <= t, else 0) and e[..., t] = γ_0⋯γ_t within each chunk (the last axis): the
    NumPy module's _chunk_decays with masks instead of branches (exp of −inf where i > t or the segment holds a 0;
    signs from counts of negative gates)."""
    magnitude = xp.abs(gamma)
    zero = magnitude == 0
    b = xp.cumulative_sum(xp.log(xp.where(zero, xp.ones_like(magnitude), magnitude)), axis=-1)
    zeros = xp.cumulative_sum(xp.astype(zero, gamma.dtype), axis=-1)  # small integers, exact
    negatives = xp.cumulative_sum(xp.astype(gamma < 0, gamma.dtype), axis=-1)
    C = gamma.shape[-1]
    index = xp.arange(C, device=device(gamma))
    keep = (index[:, None] >= index[None, :]) & (zeros[..., :, None] == zeros[..., None, :])
    M = b[..., :, None] - b[..., None, :]
    D = xp.exp(xp.where(keep, M, xp.full_like(M, -math.inf)))
    odd = xp.remainder(negatives[..., :, None] - negatives[..., None, :], 2.0) == 1.0
    D = xp.where(odd, -D, D)
    e = xp.exp(xp.where(zeros == 0, b, xp.full_like(b, -math.inf)))
    e = xp.where(xp.remainder(negatives, 2.0) == 1.0, -e, e)
    return D, e


def _chunk_step(Q, K, V, state):
    """A chunk's outputs and the state it hands on (no decay): the functions printed from chunkwise_linear_attention's
    lemmas chunk_outputs and carried_state."""
    return _printed("chunk_outputs")(Q, K, V, state), _printed("chunk_state")(K, V, state)


def _delta_chunk_step(Q, K, U, W, state):
    """A DeltaNet chunk's outputs and the state it hands on (no decay), from its UT values U and WY keys W: the
    functions printed from delta_rule_chunkwise (its lemma chunk_outputs and its claim)."""
    return _printed("delta_chunk_outputs")(Q, K, U, W, state), _printed("delta_chunk_state")(K, U, W, state)


def _xp_attention(Q, K, V, beta, decay, chunk, state, return_state, delta):
    if isinstance(chunk, bool) or not isinstance(chunk, numbers.Integral):
        raise TypeError(f"chunk must be an integer, not {type(chunk).__name__}")
    if chunk < 1:
        raise ValueError(f"chunk must be at least 1, got {chunk}")
    arrays = {"Q": Q, "K": K, "V": V}
    for name, value in (("beta", beta), ("decay", decay), ("state", state)):
        if value is not None and not isinstance(value, numbers.Real):
            arrays[name] = value
    xp = _namespace(**arrays)
    for name in ("Q", "K", "V"):
        _check_array(xp, name, arrays[name], 2)
    if tuple(K.shape) != tuple(Q.shape):
        raise ValueError(f"K must have the shape of Q, {tuple(Q.shape)} (..., T, d_k), got {tuple(K.shape)}")
    if V.ndim != Q.ndim or tuple(V.shape[:-1]) != tuple(Q.shape[:-1]):
        raise ValueError(f"V must have shape {tuple(Q.shape[:-1]) + ('d_v',)} to match Q of shape "
                         f"{tuple(Q.shape)}, got {tuple(V.shape)}")
    if delta and beta is None:
        raise ValueError("beta is required: one write strength per step, (..., T), or a number")
    steps, dk, dv = tuple(Q.shape[:-1]), Q.shape[-1], V.shape[-1]
    dtype = xp.result_type(*arrays.values())
    place = {"dtype": dtype, "device": device(Q)}
    gates = {name: None if value is None else _steps_array(xp, name, value, steps, dtype, place)
             for name, value in (("beta", beta), ("decay", decay))}
    if state is not None:
        if isinstance(state, numbers.Real):
            raise TypeError(f"state must be an array of shape {steps[:-1] + (dv, dk)}, not a number")
        _check_array(xp, "state", state, 2)
        if tuple(state.shape) != steps[:-1] + (dv, dk):
            raise ValueError(f"state must have shape {steps[:-1] + (dv, dk)} (..., d_v, d_k): the d_v×d_k state S "
                             f"with o_t = S_t q_t, got {tuple(state.shape)}")
    _require_finite(xp, Q=Q, K=K, V=V, beta=gates["beta"], decay=gates["decay"], state=state)
    B, T = math.prod(steps[:-1]), steps[-1]
    C = min(chunk, T)
    nc = -(-T // C)
    pad = nc * C - T

    def chunks(a, fill=0.0):
        a = xp.reshape(xp.astype(a, dtype, copy=False), (B, T) + tuple(a.shape[len(steps):]))
        if pad:
            a = xp.concat([a, xp.full((B, pad) + tuple(a.shape[2:]), fill, **place)], axis=1)
        return xp.reshape(a, (B, nc, C) + tuple(a.shape[2:]))

    Qc, Kc, Vc = chunks(Q), chunks(K), chunks(V)
    index = xp.arange(C, device=device(Q))
    if gates["decay"] is None:
        D, e, last = xp.astype(index[:, None] >= index[None, :], dtype), None, None
    else:
        D, e = _xp_chunk_decays(xp, chunks(gates["decay"], 1.0))  # padded steps: γ = 1, nothing written
        last = e[..., -1]
    S = xp.zeros((B, dv, dk), **place) if state is None else xp.reshape(xp.astype(state, dtype), (B, dv, dk))
    if e is None:  # no decay: each chunk by the functions printed from chunkwise_linear_attention and
        outputs = []  # delta_rule_chunkwise, the state handed from chunk to chunk
        if delta:
            U, W = _xp_wy(xp, Kc, Vc, chunks(gates["beta"]), D, None, C, dv, place)
        for c in range(nc):
            if not delta:
                out, S = _chunk_step(Qc[:, c, ...], Kc[:, c, ...], Vc[:, c, ...], S)
            else:
                out, S = _delta_chunk_step(Qc[:, c, ...], Kc[:, c, ...], U[:, c, ...], W[:, c, ...], S)
            outputs.append(out)
        return _xp_attention_result(xp, xp.stack(outputs, axis=1), S, B, nc, C, T, steps, dv, dk, return_state)
    QK = (Qc @ Kc.mT) * D
    Kw = Kc if e is None else Kc * D[..., -1, :, None]
    states, writes = [], []
    if not delta:
        dS = Vc.mT @ Kw
        for c in range(nc):
            states.append(S)
            S = (S if last is None else last[:, c, None, None] * S) + dS[:, c, ...]
        values = Vc
    else:
        U, W = _xp_wy(xp, Kc, Vc, chunks(gates["beta"]), D, e, C, dv, place)
        for c in range(nc):
            states.append(S)
            write = U[:, c, ...] - W[:, c, ...] @ S.mT
            writes.append(write)
            S = (S if last is None else last[:, c, None, None] * S) + write.mT @ Kw[:, c, ...]
        values = xp.stack(writes, axis=1)
    inter = Qc @ xp.stack(states, axis=1).mT
    O = QK @ values + (inter if e is None else e[..., None] * inter)
    return _xp_attention_result(xp, O, S, B, nc, C, T, steps, dv, dk, return_state)


def _xp_wy(xp, Kc, Vc, b, D, e, C, dv, place):
    """The chunks' UT values U and WY keys W (writes δ = U − W S₀ᵀ) from one unit-lower-triangular solve each."""
    A = xp.tril((Kc @ Kc.mT) * b[..., :, None] * D, k=-1)
    scaled_k = b if e is None else b * e
    rhs = xp.concat([b[..., None] * Vc, scaled_k[..., None] * Kc], axis=-1)
    UW = _solve_triangular(A + xp.eye(C, **place), rhs, lower=True, transpose=False)  # unit lower triangular
    return UW[..., :dv], UW[..., dv:]


def _xp_attention_result(xp, O, S, B, nc, C, T, steps, dv, dk, return_state):
    """The chunks' outputs (B, nc, C, d_v) as (..., T, d_v), and the final state, each checked finite."""
    O = xp.reshape(xp.reshape(O, (B, nc * C, dv))[:, :T, :], steps + (dv,))
    hint = "the recurrence leaves the float range (gates or values too large)"
    _require_finite_result(xp, O, "the attention output O", hint)
    if not return_state:
        return O
    S = xp.reshape(S, steps[:-1] + (dv, dk))
    _require_finite_result(xp, S, "the final state S_T", hint)
    return O, S


def causal_linear_attention(Q: Array, K: Array, V: Array, *, decay: float | Array | None = None, chunk: int = 64,
                            state: Array | None = None, return_state: bool = False):
    """Causal (decayed) linear attention, chunkwise-parallel: o_t = S_t q_t with S_t = γ_t S_{t−1} + v_t k_tᵀ.

    As the NumPy module's ``causal_linear_attention`` (shapes (..., T, d_k), (..., T, d_v); ``decay`` None, a
    number or (..., T); ``state`` (..., d_v, d_k); masked segment sums of log-gates, so gates down to 1e-30 and 0 give
    finite results), in array-API operations: the arithmetic in the arguments' common dtype and on their device;
    traceable (jax.jit, torch.compile) and differentiable. NaN or infinity in the arguments, or an output out of
    range, is named where values are concrete (NaN in the result where traced).

    Examples
    --------
    >>> import numpy as np
    >>> Q = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]); V = np.array([[1.0], [2.0], [3.0]])
    >>> causal_linear_attention(Q, Q, V, decay=0.5, chunk=2).ravel().tolist()
    [1.0, 2.0, 7.25]
    """
    return _xp_attention(Q, K, V, None, decay, chunk, state, return_state, delta=False)


def delta_rule_attention(Q: Array, K: Array, V: Array, beta: float | Array, *, decay: float | Array | None = None,
                         chunk: int = 64, state: Array | None = None, return_state: bool = False):
    """The (gated) delta rule, chunkwise: o_t = S_t q_t with S_t = γ_t S_{t−1}(I − β_t k_t k_tᵀ) + β_t v_t k_tᵀ.

    As the NumPy module's ``delta_rule_attention`` (the WY form: one unit-lower-triangular solve per chunk —
    ``torch.linalg.solve_triangular``, ``jax.lax.linalg.triangular_solve``, else the namespace's solve — never an
    inverse), in array-API operations, traceable and differentiable, as :func:`causal_linear_attention`.

    Examples
    --------
    >>> import numpy as np
    >>> K = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]); V = np.array([[1.0], [3.0], [5.0]])
    >>> delta_rule_attention(K, K, V, 0.5).ravel().tolist()
    [0.5, 1.75, 2.5]
    """
    return _xp_attention(Q, K, V, beta, decay, chunk, state, return_state, delta=True)


_PREFIX_BLOCK = 64  # as the NumPy module's: rows past the first p this many (at least 2p) at a time
_PREFIX_COND = 1e10  # the fast path where every prefix's estimated cond is under this (and 1% of the rank cutoff)


def _xp_null_space_predictions(xp, M, t, p):
    """The NumPy module's _null_space_predictions: the prediction of each row of M past its first p as
    −Σ_{s<p+j} c_{j,s} t_s / c_{j,p+j}, from the staircase basis C = Ω Nᵀ of the null space of Mᵀ (complete QR of M,
    QL of the square block), and M's R and Qᵀt (first p rows)."""
    Q, R = xp.linalg.qr(M, mode="complete")
    null = Q[..., :, p:]
    reversed_q, reversed_r = xp.linalg.qr(xp.flip(null[..., p:, :].mT, axis=(-2, -1)))
    omega_t, L = xp.flip(reversed_q, axis=(-2, -1)), xp.flip(reversed_r, axis=(-2, -1))
    C = omega_t.mT @ null.mT
    r = M.shape[-2]
    index = xp.arange(r, device=device(M))
    before = index[None, :] < (p + index[:r - p])[:, None]
    pivots = xp.linalg.diagonal(L)[..., None]
    z = Q[..., :, :p].mT @ t
    return -((C * xp.astype(before, C.dtype)) @ t) / pivots, R[..., :p, :], z


def _xp_prefix_fast(xp, X, Y, lam):
    """(predictions, estimated cond per problem) of the scaled problems (B, T, p), (B, T, k); lam (B,) or None."""
    B, T, p = X.shape
    k = Y.shape[-1]
    place = {"dtype": X.dtype, "device": device(X)}
    m = min(T, p)
    root = None if lam is None else xp.sqrt(lam)[:, None, None]
    first = X[:, :m, :].mT
    if root is not None:
        first = xp.concat([first, root * xp.eye(m, **place)], axis=-2)
    L = xp.linalg.qr(first)[1][..., :m, :].mT
    identity = xp.eye(m, **place)
    zero = xp.linalg.diagonal(L) == 0  # an exactly dependent row: 1 in its place (the solve of some namespaces
    # raises), and the problem marked for the SVD path
    pivoted = L + identity * xp.astype(zero, L.dtype)[..., None, :]
    rhs = xp.concat([Y[:, :m, :], xp.broadcast_to(identity, (B, m, m))], axis=-1)
    failed = False
    try:
        solved = _solve_triangular(pivoted, rhs, lower=True, transpose=False)
    except Exception as exc:  # a namespace whose solve (LU) raises on a numerically singular L: the SVD path
        if not _linalg_error(exc):
            raise
        solved, failed = xp.zeros_like(rhs), True
    parts = [xp.tril(L, k=-1) @ solved[..., :k]]
    inverse = solved[..., k:]
    size = xp.sum(X * X, axis=(-2, -1)) + (0.0 if lam is None else lam)
    cond = xp.sqrt(size) * xp.sqrt(xp.sum(inverse * inverse, axis=(-2, -1)))
    cond = xp.where(xp.any(zero, axis=-1), xp.full_like(cond, math.inf), cond)
    if failed:
        cond = xp.full_like(cond, math.inf)
    if T > p:
        block = max(_PREFIX_BLOCK, 2 * p)
        end = min(T, p + block)
        if root is None:
            pred, R, z = _xp_null_space_predictions(xp, X[:, :end, :], Y[:, :end, :], p)
            parts.append(pred)
        else:  # R and Qᵀy of [√λ I; X[:p]] (targets [0; Y[:p]]), from the R of the augmented matrix
            top = xp.concat([root * xp.eye(p, **place), xp.zeros((B, p, k), **place)], axis=-1)
            augmented = xp.linalg.qr(xp.concat([top, xp.concat([X[:, :p, :], Y[:, :p, :]], axis=-1)], axis=-2))[1]
            R, z, end = augmented[:, :p, :p], augmented[:, :p, p:], p
        while end < T:
            start, end = end, min(T, end + block)
            M = xp.concat([R, X[:, start:end, :]], axis=-2)
            pred, R, z = _xp_null_space_predictions(xp, M, xp.concat([z, Y[:, start:end, :]], axis=-2), p)
            parts.append(pred)
    return xp.concat(parts, axis=1), cond


def _xp_prefix_svd(xp, X, Y, lam):
    """Prefix by prefix from SVDs (lstsq's cutoff eps·max(t, p)·s_max; with ridge the filter s / (s² + λ))."""
    B, T, p = X.shape
    eps = xp.finfo(X.dtype).eps
    rows = [xp.zeros((B, 1, Y.shape[-1]), dtype=X.dtype, device=device(X))]
    for t in range(1, T):
        U, s, Vh = xp.linalg.svd(X[:, :t, :], full_matrices=False)
        if lam is None:
            kept = s > eps * max(t, p) * s[..., :1]
            factor = xp.where(kept, 1.0 / xp.where(kept, s, xp.ones_like(s)), xp.zeros_like(s))
        else:
            factor = s / (s * s + lam[:, None])
        coefficients = (U.mT @ Y[:, :t, :]) * factor[..., None]
        rows.append(X[:, t:t + 1, :] @ (Vh.mT @ coefficients))
    return xp.concat(rows, axis=1)


def prefix_predictions(X: Array, Y: Array, *, ridge: float | None = None) -> Array:
    """Least-squares predictions on every prefix: row t is the prediction of y_t from the examples before it.

    As the NumPy module's ``prefix_predictions`` (X (..., T, p), Y (..., T) or (..., T, k); the minimum-norm
    solution on rank-deficient prefixes, 0 at t = 0; ``ridge`` λ), in array-API operations on the arguments'
    device and in their common dtype: the interpolation rows from one QR and a triangular solve, the rows past p by
    recursive residuals (complete QR and QL per block), each problem scaled by powers of two. No per-prefix
    ``lstsq``: on GPUs it is also right where ``torch.linalg.lstsq`` (QR without pivoting) is wrong, on rank-deficient
    prefixes. Where a problem's first rows are too ill-conditioned for that (estimated cond over 1e10, or 1% of
    lstsq's cutoff eps·max(T, p) in the dtype), it is solved prefix by prefix from SVDs with lstsq's cutoff where
    values are concrete; traced (jax.jit, torch.compile), those problems' predictions are NaN.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 1.0]]); y = np.array([1.0, 2.0, 3.0, 4.0])
    >>> [round(float(v), 12) for v in prefix_predictions(X, y)]
    [0.0, 0.0, 3.0, 4.0]
    """
    lam = _ridge_value(ridge)
    xp = _namespace(X=X, Y=Y)
    _check_array(xp, "X", X, 2)
    _check_array(xp, "Y", Y, 1)
    steps, p = tuple(X.shape[:-1]), X.shape[-1]
    vector_y = Y.ndim == X.ndim - 1
    if (tuple(Y.shape) if vector_y else tuple(Y.shape[:-1])) != steps:
        raise ValueError(f"Y must have shape {steps} or {steps + ('k',)} to match X of shape {tuple(X.shape)}, got "
                         f"{tuple(Y.shape)}")
    _require_finite(xp, X=X, Y=Y)
    dtype = xp.result_type(X, Y)
    B, T = math.prod(steps[:-1]), steps[-1]
    Y2 = Y[..., None] if vector_y else Y
    k = Y2.shape[-1]
    Xs = xp.reshape(xp.astype(X, dtype, copy=False), (B, T, p))
    Ys = xp.reshape(xp.astype(Y2, dtype, copy=False), (B, T, k))
    exponents = []
    for A in (Xs, Ys):  # per problem 2^c near max |A|: exact scaling, X's with λ by its square
        top = xp.max(xp.abs(A), axis=(-2, -1))
        positive = top > 0
        c = xp.floor(xp.log2(xp.where(positive, top, xp.ones_like(top))))
        exponents.append(xp.where(positive, c, xp.zeros_like(c)))
    cx, cy = exponents
    low, high = _powers_of_two(-cx)
    Xs = Xs * (low * high)[:, None, None]
    low, high = _powers_of_two(-cy)
    Ys = Ys * (low * high)[:, None, None]
    lams = None
    if lam is not None:
        low, high = _powers_of_two(-2.0 * cx)
        tiny = xp.finfo(dtype).smallest_normal
        lams = xp.clip(lam * low * high, tiny, 2.0 ** (math.floor(math.log2(xp.finfo(dtype).max)) // 2))
    out, cond = _xp_prefix_fast(xp, Xs, Ys, lams)
    limit = min(_PREFIX_COND, 0.01 / (xp.finfo(dtype).eps * max(T, p)))
    hard = ~(cond <= limit)
    if _concrete(out, cond):
        if not _false(xp.any(hard)):
            out = xp.where(hard[:, None, None], _xp_prefix_svd(xp, Xs, Ys, lams), out)
    else:
        out = xp.where(hard[:, None, None], xp.full_like(out, math.nan), out)
    low, high = _powers_of_two(cy)
    out = xp.reshape(out * (low * high)[:, None, None], steps + (k,))
    _require_finite_result(xp, out, "the prefix predictions", "they leave the float range; rescale X or Y")
    return out[..., 0] if vector_y else out
