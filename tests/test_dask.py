"""The Dask module ``ols_attention_dask.py`` (``derive codegen --backend dask``): tall data chunked by rows."""

from __future__ import annotations

import ast
import doctest
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

da = pytest.importorskip("dask.array")

from derive.cli import main  # noqa: E402
from derive.codegen import numerics_dask  # noqa: E402


@pytest.fixture(scope="module")
def od(tmp_path_factory):
    out = tmp_path_factory.mktemp("dask")
    assert main(["codegen", "--backend", "dask", "--out", str(out)]) == 0
    spec = importlib.util.spec_from_file_location("generated_dask", out / "ols_attention_dask.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["generated_dask"] = module  # dask.distributed pickles functions by module name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tall():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400_000, 16))
    X[:, 0] = 1.0
    X[:, 1:] += 50.0  # uncentred: cond(X) about 1e3
    Y = X @ rng.normal(size=(16, 2)) + rng.normal(size=(400_000, 2))
    return X, Y, np.linalg.lstsq(X, Y, rcond=None)[0]


def _relative(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


def test_generated_file_is_the_numerics_and_two_printed_functions(od):
    source = Path(numerics_dask.__file__).read_text(encoding="utf-8")
    body = "\n".join(source.splitlines()[ast.parse(source).body[0].end_lineno:]).strip("\n")
    text = Path(od.__file__).read_text()
    assert body in text and set(od.PRINTED) == {"cholesky", "qr"}
    assert "def eigh(" not in text  # the routes other backends call are not public functions here
    failures, tried = doctest.testmod(od, verbose=False)
    assert tried >= 3 and failures == 0


@pytest.mark.parametrize("route", ["auto", "cholesky", "tsqr"])
def test_tall_data_match_lstsq(od, tall, route):
    X, Y, reference = tall
    Xd, Yd = da.from_array(X, chunks=(50_000, 16)), da.from_array(Y, chunks=(40_000, 2))
    beta = od.coefficients(Xd, Yd, route=route)
    assert isinstance(beta, np.ndarray) and beta.shape == (16, 2)
    assert _relative(beta, reference) <= 1e-9
    assert _relative(od.coefficients(Xd, Yd[:, 0], route=route), reference[:, 0]) <= 1e-9


def test_ill_conditioned_data_take_tsqr(od, monkeypatch):
    rng = np.random.default_rng(1)
    t = rng.uniform(size=20_000)
    X = np.vander(t, 13, increasing=True)  # cond about 1e10: κ² eps over 1e-2 once columns are scaled
    y = np.sin(6 * t)
    best = np.linalg.norm(X @ np.linalg.lstsq(X, y, rcond=None)[0] - y)
    Xd, yd = da.from_array(X, chunks=(5_000, 13)), da.from_array(y, chunks=5_000)
    calls = []
    monkeypatch.setattr(od, "_route_tsqr", lambda X, Y, f=od._route_tsqr: calls.append(1) or f(X, Y))
    for route in ("auto", "tsqr"):  # the least-squares residual, which a backward-stable solver reaches
        assert np.linalg.norm(X @ od.coefficients(Xd, yd, route=route) - y) <= best * (1 + 1e-6)
    assert len(calls) == 2


def test_predict_and_validation(od):
    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(1_000, 3)), rng.normal(size=1_000)
    Xd = da.from_array(X, chunks=(300, 3))
    Q = rng.normal(size=(5, 3))
    beta = np.linalg.lstsq(X, y, rcond=None)[0]
    lazy = od.predict(Xd, y, da.from_array(Q))
    assert isinstance(lazy, da.Array)
    np.testing.assert_allclose(lazy.compute(), Q @ beta, rtol=1e-10)
    np.testing.assert_allclose(od.predict(X, y, Q[0]), Q[0] @ beta, rtol=1e-10)
    with pytest.raises(ValueError, match="Y must have shape"):
        od.coefficients(Xd, y[:-1])
    with pytest.raises(ValueError, match="NaN"):
        od.coefficients(da.where(Xd > 3, np.nan, Xd), y)
    with pytest.raises(ValueError, match="rank-deficient|positive definite"):
        od.coefficients(da.concatenate([Xd, Xd[:, :1]], axis=1), y, route="cholesky")
    with pytest.raises(ValueError, match="route must be"):
        od.coefficients(Xd, y, route="svd")
    with pytest.raises(TypeError, match="real numbers"):
        od.coefficients(Xd, np.array(["a"] * 1_000))
    with pytest.raises(ValueError, match="X_query must have shape"):
        od.predict(Xd, y, Q[:, :2])


@pytest.mark.slow
def test_distributed_local_cluster(od, tall):
    distributed = pytest.importorskip("distributed")
    X, Y, reference = tall
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as \
            cluster, distributed.Client(cluster):
        Xd, Yd = da.from_array(X, chunks=(50_000, 16)), da.from_array(Y, chunks=(50_000, 2))
        for route in ("cholesky", "tsqr"):
            assert _relative(od.coefficients(Xd, Yd, route=route), reference) <= 1e-9
