"""Issue 43: the array-API module's default route on PyTorch (what runs on a GPU) makes no host synchronisation per
batched call, full-rank and rank-deficient batches alike, and still gives the least-squares answer: lstsq's on full
rank, the minimum-norm solution where a prompt is rank-deficient (where ``torch.linalg.lstsq``'s gels is silently
wrong on a GPU), with no loop over the prompts.

Counted on CPU tensors, so that no test needs a GPU: every read of a tensor's value by the host goes through
``aten::_local_scalar_dense`` (``item``, ``bool``, and PyTorch's own checks of a solver's status, as inside
``torch.linalg.cholesky``, ``eigh``, ``svd`` and ``cholesky_solve``), which ``torch.profiler`` records wherever it is
called from, and so do the operations whose result's size depends on values (``nonzero``, boolean masks); the
Python-level reads (``bool``, ``item``, ``float``, ``tolist``, ``numpy``, ``cpu``) are patched and counted as well.
The device of the tensors changes none of these calls."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("array_api_compat")
from torch.profiler import ProfilerActivity, profile  # noqa: E402

#: Profiled operations that make the host wait for a GPU: a read of a value, or a result whose size depends on values.
SYNCING = ("aten::_local_scalar_dense", "aten::nonzero", "aten::masked_select", "aten::unique", "aten::_unique2",
           "aten::masked_scatter", "aten::repeat_interleave")
#: Python-level reads of a tensor's value by the host.
READS = ("__bool__", "item", "__float__", "__int__", "__index__", "tolist", "numpy", "cpu")


@pytest.fixture(scope="module")
def ox():
    from derive.generated import ols_attention_xp

    return ols_attention_xp


@pytest.fixture
def array_api_code(ox, monkeypatch):
    """The array-API code itself (on a GPU it always runs; on CPU tensors "auto" would be the NumPy module's)."""
    monkeypatch.setattr(ox, "HOST_NUMERICS", False)
    return ox


@pytest.fixture
def syncs():
    """``count(f)``: (f(), the host synchronisations made while f ran, by name)."""

    def count(f):
        reads = []

        def counted(name):
            original = getattr(torch.Tensor, name)

            def wrapper(self, *args, **kwargs):
                reads.append(name)
                return original(self, *args, **kwargs)

            return wrapper

        with pytest.MonkeyPatch.context() as patch:
            for name in READS:
                patch.setattr(torch.Tensor, name, counted(name))
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                result = f()
        return result, [event.name for event in prof.events() if event.name in SYNCING] + reads

    return count


def batch(seed=0, b=48, n=40, p=6, uncentred=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((b, n, p))
    X[..., 0] = 1.0
    if uncentred:
        X[..., 1:] += 50.0
    return X, rng.standard_normal((b, n)), rng.standard_normal((b, 3, p))


def deficient(X):
    """X with rank-deficient prompts among full-rank ones: equal columns, a zero column, a sum of two columns, a
    second constant column beside the intercept, a multiple of the intercept; their indices."""
    X = X.copy()
    X[5, :, 4] = X[5, :, 1]
    X[9, :, 5] = 0.0
    X[11, :, 3] = X[11, :, 1] + X[11, :, 2]
    X[13, :, 2] = 1.0
    X[17, :, 1] = 3.0 * X[17, :, 0]
    X[19, :, 2] = X[19, :, 3] = X[19, :, 5]  # rank 4 of 6
    return X, (5, 9, 11, 13, 17, 19)


def relative(got, want):
    return np.abs(got - want).max(axis=-1) / np.abs(want).max(axis=-1)


def exact(X, y):
    """The exact least-squares solution of the float64 data, rounded once (the NumPy module's route "exact")."""
    from derive.generated import ols_attention

    return ols_attention.coefficients(X, y, route="exact")


def lstsq_error(X, y, want):
    """numpy.linalg.lstsq's error against ``want``, per prompt."""
    return relative(np.stack([np.linalg.lstsq(a, b, rcond=None)[0] for a, b in zip(X, y, strict=True)]), want)


def test_the_counter_sees_a_solver_that_checks_its_status_on_the_host(syncs):
    """Not vacuous: torch.linalg.eigh and cholesky test their solver's status on the host (a GPU waits), the _ex
    factor does not; a Python bool of a tensor is a read too."""
    A = torch.eye(3, dtype=torch.float64).expand(4, 3, 3)
    assert syncs(lambda: torch.linalg.eigh(A))[1]
    assert syncs(lambda: torch.linalg.cholesky(A))[1]
    assert syncs(lambda: bool(A.sum() > 0))[1]
    assert not syncs(lambda: torch.linalg.cholesky_ex(A))[1]


@pytest.mark.parametrize("uncentred", [False, True])
def test_the_default_route_makes_no_sync_on_full_rank_prompts(array_api_code, syncs, uncentred):
    X, y, Q = batch(seed=1, uncentred=uncentred)
    tX, ty, tQ = (torch.tensor(a) for a in (X, y, Q))
    beta, seen = syncs(lambda: array_api_code.coefficients(tX, ty))
    assert seen == []
    want = exact(X, y)
    err, err_lstsq = relative(beta.numpy(), want), lstsq_error(X, y, want)
    assert err.max() <= 10 * err_lstsq.max(), (err.max(), err_lstsq.max())
    out, seen = syncs(lambda: array_api_code.predict(tX, ty, tQ))
    assert seen == []
    np.testing.assert_allclose(out.numpy(), np.einsum("bmp,bp->bm", Q, want), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("uncentred", [False, True])
def test_rank_deficient_prompts_get_the_minimum_norm_solution_with_no_sync(array_api_code, syncs, uncentred):
    X, y, _ = batch(seed=2, uncentred=uncentred)
    X, bad = deficient(X)
    beta, seen = syncs(lambda: array_api_code.coefficients(torch.tensor(X), torch.tensor(y)))
    assert seen == []
    want = np.stack([np.linalg.pinv(a) @ b for a, b in zip(X, y, strict=True)])
    err = relative(beta.numpy(), want)
    assert err[list(bad)].max() <= 1e-10, err[list(bad)]
    full = [b for b in range(len(X)) if b not in bad]
    want = exact(X[full], y[full])
    assert relative(beta.numpy()[full], want).max() <= 10 * lstsq_error(X[full], y[full], want).max()


def test_a_stack_of_only_rank_deficient_prompts_and_a_vector_of_targets(array_api_code, syncs):
    """Every prompt deficient (each its own kind), targets (..., n, k): still no sync, still minimum norm."""
    X, _, _ = batch(seed=3)
    X, bad = deficient(X)
    X = X[list(bad)]
    Y = np.random.default_rng(4).standard_normal((len(X), X.shape[1], 2))
    beta, seen = syncs(lambda: array_api_code.coefficients(torch.tensor(X), torch.tensor(Y)))
    assert seen == []
    want = np.stack([np.linalg.pinv(a) @ b for a, b in zip(X, Y, strict=True)])
    np.testing.assert_allclose(beta.numpy(), want, rtol=0, atol=1e-10 * np.abs(want).max())


def test_nan_in_one_prompt_is_nan_in_its_answer_only(array_api_code, syncs):
    X, y, _ = batch(seed=5)
    tX, ty = torch.tensor(X), torch.tensor(y)
    clean = array_api_code.coefficients(tX, ty)
    for row, value in ((7, float("nan")), (30, float("nan")), (30, float("inf"))):  # in the rows sampled or not
        bad = tX.clone()
        bad[2, row, 1] = value
        out, seen = syncs(lambda bad=bad: array_api_code.coefficients(bad, ty))
        assert seen == []
        assert torch.isnan(out[2]).all() and torch.isfinite(torch.cat([out[:2], out[3:]])).all()
        torch.testing.assert_close(torch.cat([out[:2], out[3:]]), torch.cat([clean[:2], clean[3:]]), rtol=0, atol=0)
    bad_y = ty.clone()
    bad_y[4, 30] = float("nan")
    out = array_api_code.coefficients(tX, bad_y)
    assert torch.isnan(out[4]).all() and torch.isfinite(torch.cat([out[:4], out[5:]])).all()


def test_float32_and_a_gradient_make_no_sync(array_api_code, syncs):
    """float32 keeps its dtype; a gradient (forward and backward) reads nothing either, and is that of X⁺y."""
    X, y, _ = batch(seed=6)
    X, bad = deficient(X)
    beta, seen = syncs(lambda: array_api_code.coefficients(torch.tensor(X, dtype=torch.float32),
                                                             torch.tensor(y, dtype=torch.float32)))
    assert seen == [] and beta.dtype == torch.float32
    want = np.stack([np.linalg.pinv(a) @ b for a, b in zip(X, y, strict=True)])
    assert relative(beta.double().numpy(), want).max() <= 1e-3
    tX, ty = torch.tensor(X, requires_grad=True), torch.tensor(y, requires_grad=True)
    beta, seen = syncs(lambda: array_api_code.coefficients(tX, ty))
    assert seen == [] and beta.requires_grad
    assert relative(beta.detach().numpy(), want).max() <= 1e-10
    _, seen = syncs(lambda: beta.sum().backward())
    assert seen == []
    assert torch.isfinite(tX.grad).all()  # the rank-deficient prompts' too
    # β = X⁺y, so the gradient of Σβ with respect to y is X⁺ᵀ1, rank-deficient prompts included
    ones = np.ones(X.shape[-1])
    np.testing.assert_allclose(ty.grad.numpy(), np.stack([np.linalg.pinv(a).T @ ones for a in X]), rtol=1e-9,
                               atol=1e-9)


def test_check_finite_true_reads_once(array_api_code, syncs):
    """Asking for the checks (ValueError naming a bad input) costs one combined read, not one per check."""
    X, y, _ = batch(seed=7)
    _, seen = syncs(lambda: array_api_code.coefficients(torch.tensor(X), torch.tensor(y), check_finite=True))
    assert seen.count("aten::_local_scalar_dense") == 1
