"""Issue 30: the array-API module's Gram route ("auto", "cholesky") on PyTorch reads values back to the host once per
call (every read makes the host wait for a GPU): the finite checks, the Cholesky pivots and the result's check are
combined into one read, and each still raises its own ValueError, in the order the separate checks had. Counted
here on CPU tensors, where the reads are the same Python calls as on a GPU."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("array_api_compat")


@pytest.fixture(scope="module")
def ox():
    from derive.generated import ols_attention_xp

    return ols_attention_xp


@pytest.fixture
def reads(monkeypatch):
    """The number of reads of tensor values by the host: bool(), .item(), float(), int() of a tensor, and
    torch.linalg.cholesky (which tests its result on the host; cholesky_ex does not)."""
    count = {"reads": 0}

    def counted(name):
        original = getattr(torch.Tensor, name)

        def wrapper(self, *args, **kwargs):
            count["reads"] += 1
            return original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, wrapper)

    for name in ("__bool__", "item", "__float__", "__int__", "tolist"):
        counted(name)
    cholesky = torch.linalg.cholesky

    def checked_cholesky(*args, **kwargs):
        count["reads"] += 1
        return cholesky(*args, **kwargs)

    monkeypatch.setattr(torch.linalg, "cholesky", checked_cholesky)
    return count


@pytest.fixture
def array_api_code(ox, monkeypatch):
    """The array-API code itself (on a GPU it always runs; on CPU tensors "auto" would be the NumPy module's)."""
    monkeypatch.setattr(ox, "HOST_NUMERICS", False)
    return ox


def batch(seed=0, b=64, n=32, p=6, dtype=torch.float64):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((b, n, p))
    X[..., 0] = 1.0
    return torch.tensor(X, dtype=dtype), torch.tensor(rng.standard_normal((b, n)), dtype=dtype)


@pytest.mark.parametrize("route", ["auto", "cholesky"])
def test_one_host_read_per_batched_solve(array_api_code, reads, route):
    X, y = batch()
    beta = array_api_code.coefficients(X, y, route=route, check_finite=True)
    assert reads["reads"] == 1, reads  # four before: X's and Y's finite checks, the Cholesky test, the result's
    want = np.stack([np.linalg.lstsq(a, b, rcond=None)[0] for a, b in zip(X.numpy(), y.numpy(), strict=True)])
    np.testing.assert_allclose(beta.numpy(), want, rtol=1e-9, atol=1e-12)


def test_each_failing_check_still_names_its_cause(array_api_code, monkeypatch):
    from functools import partial

    monkeypatch.setattr(array_api_code, "coefficients", partial(array_api_code.coefficients, check_finite=True))
    X, y = batch()
    bad = X.clone()
    bad[3, 5, 2] = float("nan")
    with pytest.raises(ValueError, match="X contains NaN or infinity"):
        array_api_code.coefficients(bad, y)
    bad_y = y.clone()
    bad_y[1, 0] = float("inf")
    with pytest.raises(ValueError, match="Y contains NaN or infinity"):
        array_api_code.coefficients(X, bad_y)
    both = bad_y.clone()
    with pytest.raises(ValueError, match="X contains NaN"):  # X is checked first, as before
        array_api_code.coefficients(bad, both)
    deficient = X.clone()
    deficient[7, :, 3] = deficient[7, :, 1] + deficient[7, :, 2]  # one problem of the batch is rank-deficient
    with pytest.raises(ValueError, match=r"route='qr' where X has full column rank.*route='svd'"):
        array_api_code.coefficients(deficient, y)
    zero = X.clone()
    zero[2, :, 4] = 0.0  # a zero column: XᵀX has no Cholesky factor
    with pytest.raises(ValueError, match="not positive definite"):
        array_api_code.coefficients(zero, y)


def test_float32_ill_conditioned_refusal_points_to_qr_which_then_works(array_api_code):
    """Uncentred float32 data (cond of the scaled X near 1e3, κ² eps₃₂ near 1): "auto" refuses, naming route "qr"
    first, and route "qr" then gives about lstsq's accuracy."""
    rng = np.random.default_rng(5)
    x = rng.uniform(1000.0, 1001.0, (8, 200))
    X = np.stack([np.ones_like(x), x, x**2 / 1000.0], axis=-1)
    y = X @ np.array([1.0, -2.0, 1.5]) + 1e-3 * rng.standard_normal((8, 200))
    X32, y32 = torch.tensor(X, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)
    with pytest.raises(ValueError, match="route='qr'"):
        array_api_code.coefficients(X32, y32, check_finite=True)
    got = array_api_code.coefficients(X32, y32, route="qr").double().numpy()
    X64 = X32.double().numpy()
    want = np.stack([np.linalg.lstsq(a, b, rcond=None)[0] for a, b in zip(X64, y32.double().numpy(), strict=True)])
    lstsq32 = torch.linalg.lstsq(X32, y32[..., None]).solution[..., 0].double().numpy()
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err <= max(10 * np.abs(lstsq32 - want).max() / np.abs(want).max(), 1e-6), err


def test_the_default_route_reads_nothing_and_solves_rank_deficient_prompts(array_api_code, reads):
    """Issue 43: route "auto" on concrete PyTorch tensors (the array-API code, as on a GPU) with the default
    check_finite reads no value back to the host: the Cholesky factors by cholesky_ex with ``info`` kept on the
    device, the rank-deficient problems found by masks and given their minimum-norm solution without a loop, and
    NaN in one problem's data shows as NaN in that problem's β only."""
    X, y = batch(seed=3, b=48, n=40, p=6)
    X[5, :, 4] = X[5, :, 1]  # rank-deficient: equal columns
    X[9, :, 5] = 0.0  # a zero column: no Cholesky factor (info > 0)
    X[11, :, 3] = X[11, :, 1] + X[11, :, 2]
    X[13, :, 2] = 1.0  # a second constant column beside the intercept
    beta = array_api_code.coefficients(X, y)
    assert reads["reads"] == 0, reads
    Xn, yn = X.numpy(), y.numpy()
    want = np.stack([np.linalg.pinv(a) @ b for a, b in zip(Xn, yn, strict=True)])
    err = np.abs(beta.numpy() - want).max(axis=-1) / np.abs(want).max(axis=-1)
    assert err.max() <= 1e-9, (err.max(), np.argsort(err)[-4:])
    for b in range(len(Xn)):  # full rank: within 10 times lstsq's error against the pseudo-inverse's
        if b not in (5, 9, 11, 13):
            lstsq = np.linalg.lstsq(Xn[b], yn[b], rcond=None)[0]
            assert err[b] <= max(10 * np.abs(lstsq - want[b]).max() / np.abs(want[b]).max(), 1e-14)
    bad = X.clone()
    bad[2, 7, 1] = float("nan")
    out = array_api_code.coefficients(bad, y)
    assert reads["reads"] == 0, reads
    assert torch.isnan(out[2]).all() and torch.isfinite(torch.cat([out[:2], out[3:]])).all()
    np.testing.assert_allclose(out[3:].numpy(), beta[3:].numpy(), rtol=0, atol=0)
