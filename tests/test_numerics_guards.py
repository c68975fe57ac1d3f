"""No silent wrong number in the generated numeric code (issue 27, items 14-17): ridge at every scale of X and λ on
every route, the Dask module on rank-deficient and extreme-scale data, the array-API module's hash gate, and
uniform finite checks (NaN, bad weights, bad ridge) across NumPy, PyTorch and JAX."""

from __future__ import annotations

import importlib.util
import sys
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("array_api_compat")

from derive.cli import main  # noqa: E402

ROUTES = ("auto", "eigh", "cholesky", "svd", "qr")
X_SCALES = (1e-15, 1e-10, 1.0, 1e10, 1e15)
RIDGES = (1e-30, 1e-10, 1.0, 1e10, 1e30)


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("guards")
    assert main(["codegen", "--backend", "all", "--out", str(out)]) == 0
    return out, _load(out / "ols_attention.py", "guards_np"), _load(out / "ols_attention_xp.py", "guards_xp")


def _frameworks():
    """(name, to-array) for NumPy, PyTorch and JAX (float64), those installed."""
    found = [("numpy", np.asarray)]
    try:
        import torch

        found.append(("torch", torch.from_numpy))
    except ImportError:
        pass
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        found.append(("jax", jax.numpy.asarray))
    except ImportError:
        pass
    return found


FRAMEWORKS = _frameworks()


def _exact_ridge(X, Y, lam):
    """(XᵀX + λI)⁻¹XᵀY of the float64 data and λ exactly (fractions), rounded once to float64."""
    X = [[Fraction(v) for v in row] for row in X.tolist()]
    Y = [[Fraction(v) for v in row] for row in Y.tolist()]
    n, p, k = len(X), len(X[0]), len(Y[0])
    A = [[sum(X[r][i] * X[r][j] for r in range(n)) + (Fraction(lam) if i == j else 0) for j in range(p)]
         + [sum(X[r][i] * Y[r][t] for r in range(n)) for t in range(k)] for i in range(p)]
    for c in range(p):  # Gauss-Jordan: XᵀX + λI is positive definite, no pivoting needed
        pivot = A[c][c]
        A[c] = [v / pivot for v in A[c]]
        for r in range(p):
            if r != c and A[r][c]:
                f = A[r][c]
                A[r] = [a - f * b for a, b in zip(A[r], A[c], strict=True)]
    return np.array([[float(A[i][p + t]) for t in range(k)] for i in range(p)])


@pytest.fixture(scope="module")
def ridge_cases():
    """(X, Y, λ, exact) over X scaled 1e-15..1e15 and λ 1e-30..1e30, a tall and a wide problem."""
    rng = np.random.default_rng(27)
    cases = []
    for n, p in ((25, 4), (3, 5)):
        X0, Y0 = rng.standard_normal((n, p)), rng.standard_normal((n, 2))
        for scale in X_SCALES:
            for lam in RIDGES:
                X = X0 * scale
                cases.append((X, Y0, lam, _exact_ridge(X, Y0, lam)))
    return cases


def _relative(a, b):
    return float(np.abs(np.asarray(a, dtype=np.float64) - b).max() / np.abs(b).max())


def _worst(solve, cases, routes=ROUTES):
    """The largest relative error per route; "eigh" and "cholesky" (Gram routes) may warn instead of being accurate
    (XᵀX + λI of a wide X with λ far under ‖X‖² is singular in float64), never be inaccurate in silence."""
    worst = {}
    for X, Y, lam, exact in cases:
        for route in routes:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    beta = solve(X, Y, route, lam)
                except ValueError as exc:  # a Gram route may refuse a singular XᵀX + λI, by name
                    if route in ("cholesky", "eigh") and "positive definite" in str(exc):
                        continue
                    raise
            if route in ("cholesky", "eigh") and any(w.category.__name__ == "AccuracyWarning" for w in caught):
                continue
            error = _relative(beta, exact)
            if error > worst.get(route, (0.0,))[0]:
                worst[route] = (error, X.shape, float(np.abs(X).max()), lam)
    return worst


# --- 14: ridge at every scale ----------------------------------------------------------------------


def test_numpy_module_ridge_is_accurate_at_every_scale(generated, ridge_cases):
    _, oa, _ = generated
    worst = _worst(lambda X, Y, route, lam: oa.coefficients(X, Y, route=route, ridge=lam), ridge_cases)
    assert not {r: w for r, w in worst.items() if w[0] >= 1e-13}, worst


@pytest.mark.parametrize("name, convert", FRAMEWORKS, ids=[f[0] for f in FRAMEWORKS])
def test_xp_module_ridge_is_accurate_at_every_scale(generated, ridge_cases, name, convert):
    _, _, ox = generated
    worst = _worst(lambda X, Y, route, lam: np.asarray(ox.coefficients(convert(X), convert(Y), route=route,
                                                                       ridge=lam)), ridge_cases)
    assert not {r: w for r, w in worst.items() if w[0] >= 1e-13}, worst


def test_xp_ridge_svd_under_jax_jit_and_grad(generated):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    _, oa, ox = generated
    rng = np.random.default_rng(5)
    X, y = rng.standard_normal((20, 3)) * 1e-10, rng.standard_normal(20)
    expected = oa.coefficients(X, y, ridge=1.0)
    traced = jax.jit(lambda a, b: ox.coefficients(a, b, route="svd", ridge=1.0))(X, y)
    assert _relative(traced, expected) < 1e-13
    grad = jax.grad(lambda a: ox.coefficients(a, jax.numpy.asarray(y), route="svd", ridge=1.0).sum())(X)
    assert np.isfinite(np.asarray(grad)).all()
    assert _relative(grad, np.broadcast_to(y[:, None], X.shape)) < 1e-9  # d/dX of 1ᵀXᵀy/λ, λ ≫ ‖X‖²


def test_estimator_ridge_is_accurate_at_every_scale(ridge_cases):
    pytest.importorskip("sklearn")
    from derive.sklearn import OLSAttentionRegressor

    def solve(X, Y, route, lam):
        return OLSAttentionRegressor(route=route, ridge=lam, fit_intercept=False).fit(X, Y).coef_.T

    worst = _worst(solve, [c for c in ridge_cases if c[0].shape[0] > c[0].shape[1]])
    assert not {r: w for r, w in worst.items() if w[0] >= 1e-13}, worst


# --- 17: uniform finite checks and ridge validation ------------------------------------------------


def _bad_data(seed=17):
    rng = np.random.default_rng(seed)
    X, y, Q = rng.standard_normal((20, 3)), rng.standard_normal(20), rng.standard_normal((2, 3))
    return X, y, Q


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("name, convert", FRAMEWORKS, ids=[f[0] for f in FRAMEWORKS])
def test_concrete_nan_is_named_on_every_route_and_framework(generated, name, convert, route):
    _, _, ox = generated
    X, y, Q = _bad_data()
    for bad in (np.nan, np.inf):
        Xb, yb, Qb = X.copy(), y.copy(), Q.copy()
        Xb[3, 1] = yb[5] = Qb[1, 2] = bad
        with pytest.raises(ValueError, match=r"^X contains NaN or infinity"):
            ox.coefficients(convert(Xb), convert(y), route=route)
        with pytest.raises(ValueError, match=r"^Y contains NaN or infinity"):
            ox.coefficients(convert(X), convert(yb), route=route)
        with pytest.raises(ValueError, match=r"^X_query contains NaN or infinity"):
            ox.predict(convert(X), convert(y), convert(Qb), route=route)
        with pytest.raises(ValueError, match=r"^X contains NaN or infinity"):
            ox.coefficients(convert(Xb), convert(y), route=route, ridge=0.5)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("name, convert", FRAMEWORKS, ids=[f[0] for f in FRAMEWORKS])
def test_bad_weights_are_named_as_weights(generated, name, convert, route):
    _, _, ox = generated
    X, y, _ = _bad_data()
    for bad, message in ((np.nan, "weights contain NaN"), (-1.0, "weights must be positive"),
                         (np.inf, "weights contain infinity")):
        w = np.ones(20)
        w[2] = bad
        with pytest.raises(ValueError, match=f"^{message}"):
            ox.coefficients(convert(X), convert(y), route=route, weights=convert(w))


def test_traced_jax_keeps_nan_in_nan_out(generated):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    _, _, ox = generated
    X, y, _ = _bad_data()
    X[3, 1] = np.nan
    for route in ROUTES:
        beta = jax.jit(lambda a, b, route=route: ox.coefficients(a, b, route=route))(X, y)
        assert np.isnan(np.asarray(beta)).all()


@pytest.mark.parametrize("ridge", [10**400, -(10**400), float("nan"), float("inf"), -1.0, 0.0])
def test_a_bad_ridge_is_a_value_error_naming_it(generated, ridge):
    _, oa, ox = generated
    X, y, Q = _bad_data()
    calls = [lambda: oa.coefficients(X, y, ridge=ridge), lambda: oa.predict(X, y, Q, ridge=ridge),
             lambda: oa.RecursiveLeastSquares(3, ridge=ridge), lambda: ox.RecursiveLeastSquares(3, ridge=ridge)]
    calls += [lambda c=c, r=r: ox.coefficients(c(X), c(y), ridge=ridge, route=r) for _, c in FRAMEWORKS
              for r in ("auto", "svd")]
    for call in calls:
        with pytest.raises(ValueError, match="ridge"):
            call()


@pytest.mark.parametrize("ridge", [10**400, float("nan"), float("inf"), -1.0, True, "1"])
def test_estimator_refuses_a_bad_ridge_by_name(ridge):
    pytest.importorskip("sklearn")
    from derive.sklearn import OLSAttentionRegressor

    X, y, _ = _bad_data()
    with pytest.raises(ValueError, match="The .ridge. parameter of OLSAttentionRegressor must be None or a"):
        OLSAttentionRegressor(ridge=ridge).fit(X, y)


# --- 16: the hash gate runs exactly the bytes it hashed --------------------------------------------


def test_hash_gate_runs_the_hashed_bytes_not_a_planted_pyc(generated, tmp_path):
    import builtins
    import importlib.util
    import marshal
    import os

    out, oa, _ = generated
    source = out / "ols_attention.py"
    (tmp_path / "ols_attention.py").write_bytes(source.read_bytes())
    (tmp_path / "ols_attention_xp.py").write_bytes((out / "ols_attention_xp.py").read_bytes())
    host = tmp_path / "ols_attention.py"
    # a .pyc whose header matches the source (size and modification time): an import of the path would run it
    evil = host.read_text() + "\nimport builtins\nbuiltins._ols_attention_planted = True\n"
    code = compile(evil, str(host), "exec")
    stat = os.stat(host)
    header = importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little") + (int(stat.st_mtime) & 0xFFFFFFFF).to_bytes(
        4, "little") + (stat.st_size & 0xFFFFFFFF).to_bytes(4, "little")
    cached = Path(importlib.util.cache_from_source(str(host)))
    cached.parent.mkdir()
    cached.write_bytes(header + marshal.dumps(code))
    spec = importlib.util.spec_from_file_location("plain_import_check", host)  # the planted file is live
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert getattr(builtins, "_ols_attention_planted", False)
    del builtins._ols_attention_planted

    ox = _load(tmp_path / "ols_attention_xp.py", "guards_xp_planted")
    X, y, _ = _bad_data()
    beta = ox.coefficients(X, y)
    assert not hasattr(builtins, "_ols_attention_planted")
    loaded = ox._HOST_LOADED[str(host)]
    assert loaded is not None and loaded.__file__ == str(host)  # the host path ran, from the source's bytes
    assert np.array_equal(beta, oa.coefficients(X, y))


# --- 15: Dask on rank-deficient and extreme-scale data -----------------------------------------------


@pytest.fixture(scope="module")
def od(generated):
    pytest.importorskip("dask.array")
    return _load(generated[0] / "ols_attention_dask.py", "guards_dask")


def test_dask_rank_deficient_x_gives_the_numpy_modules_minimum_norm_solution(generated, od):
    da = pytest.importorskip("dask.array")
    _, oa, _ = generated
    rng = np.random.default_rng(15)
    X = rng.standard_normal((2_000, 4))
    Y = rng.standard_normal((2_000, 2))
    for Xd in (np.c_[X, X[:, 0] + 2 * X[:, 1]], np.c_[X[:, :2], np.zeros(2_000), X[:, 2:]], np.c_[X, X * 1e-200]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = oa.coefficients(Xd, Y)
        assert np.abs(expected).max() < 1.0  # the minimum-norm solution: no coefficient of 1e12
        for route in ("auto", "tsqr"):
            with pytest.warns(od.RankDeficientWarning, match=r"numerical rank \d of \d columns, condition estimate"):
                beta = od.coefficients(da.from_array(Xd, chunks=(500, -1)), da.from_array(Y, chunks=(500, -1)),
                                       route=route)
            assert _relative(beta, expected) < 1e-12, route
        with pytest.raises(ValueError, match="rank-deficient"):
            od.coefficients(da.from_array(Xd, chunks=(500, -1)), Y, route="cholesky")


@pytest.mark.parametrize("scale", [1e-300, 1e-160, 1e160, 1e300])
def test_dask_is_accurate_on_columns_at_the_ends_of_the_float_range(od, scale):
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(16)
    X = rng.standard_normal((4_000, 4))
    X[:, 0] = 1.0
    y = X @ np.array([1.0, 2.0, 3.0, 4.0]) + rng.standard_normal(4_000)
    expected = np.linalg.lstsq(X, y, rcond=None)[0]
    Xs = X.copy()
    Xs[:, 2] *= scale
    for route in od.ROUTES:
        beta = od.coefficients(da.from_array(Xs, chunks=(1_000, -1)), da.from_array(y, chunks=1_000), route=route)
        beta[2] *= scale
        assert _relative(beta, expected) < 1e-13, route
        big = od.coefficients(da.from_array(X, chunks=(1_000, -1)), da.from_array(y * scale, chunks=1_000),
                              route=route)  # targets at the ends of the range too
        assert _relative(big / scale, expected) < 1e-13, route


def test_dask_names_nan_and_an_overflowing_solution(od):
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(18)
    X, y = rng.standard_normal((1_000, 3)), rng.standard_normal(1_000)
    for route in od.ROUTES:
        Xb = X.copy()
        Xb[7, 1] = np.nan
        with pytest.raises(ValueError, match="^X contains NaN or infinity"):
            od.coefficients(da.from_array(Xb, chunks=(250, -1)), y, route=route)
        with pytest.raises(ValueError, match="does not fit in float64"):
            od.coefficients(da.from_array(X * 1e-300, chunks=(250, -1)), y * 1e300, route=route)


def test_dask_cholesky_names_a_duplicate_column_whatever_the_rounding_of_the_sums(od):
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(2)
    for chunks in (300, 500, 1_000):
        X, y = rng.normal(size=(1_000, 3)), rng.normal(size=1_000)
        Xd = da.from_array(X, chunks=(chunks, 3))
        with pytest.raises(ValueError, match="rank-deficient"):
            od.coefficients(da.concatenate([Xd, Xd[:, :1]], axis=1), y, route="cholesky")
