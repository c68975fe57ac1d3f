"""Chunkwise linear attention, the delta rule and least squares on every prefix (issue 42, generated code): the
generated NumPy module against float64 token-by-token recurrences and per-prefix lstsq loops written here, and the
array-API module (NumPy through array_api_compat, PyTorch, JAX where installed) against the NumPy module."""

import numpy as np
import pytest

from derive.generated import ols_attention as oa


def _rel(a, b):
    return float(np.linalg.norm(np.asarray(a, dtype=np.float64) - b) / np.linalg.norm(b))


def _recurrence(Q, K, V, beta=None, decay=None, state=None):
    """o_t = S_t q_t, token by token in float64: S_t = γ_t S_{t−1}(I − β_t k_t k_tᵀ) + β_t v_t k_tᵀ with β (the delta
    rule), else S_t = γ_t S_{t−1} + v_t k_tᵀ; S_{−1} = state or 0. Returns (O, S_T)."""
    steps, dk, dv = Q.shape[:-1], Q.shape[-1], V.shape[-1]
    gamma = np.ones(steps) if decay is None else np.broadcast_to(np.asarray(decay, dtype=np.float64), steps)
    S = np.zeros(steps[:-1] + (dv, dk)) if state is None else np.array(state, dtype=np.float64)
    O = np.empty(steps + (dv,))
    for t in range(steps[-1]):
        q, k, v, g = Q[..., t, :], K[..., t, :], V[..., t, :], gamma[..., t, None, None]
        if beta is None:
            S = g * S + v[..., :, None] * k[..., None, :]
        else:
            b = np.broadcast_to(np.asarray(beta, dtype=np.float64), steps)[..., t, None, None]
            Sk = np.einsum("...ij,...j->...i", S, k)
            S = g * (S - b * Sk[..., :, None] * k[..., None, :]) + b * v[..., :, None] * k[..., None, :]
        O[..., t, :] = np.einsum("...ij,...j->...i", S, q)
    return O, S


def _data(seed, lead, T, dk, dv, unit_keys):
    rng = np.random.default_rng(seed)
    Q, K = rng.standard_normal((2,) + lead + (T, dk))
    V = rng.standard_normal(lead + (T, dv))
    if unit_keys:  # DeltaNet's L2-normalised keys: each I − β k kᵀ has norm at most 1
        K /= np.linalg.norm(K, axis=-1, keepdims=True)
    return rng, Q, K, V


def _call(delta, Q, K, V, beta, **kw):
    if delta:
        return oa.delta_rule_attention(Q, K, V, beta, **kw)
    return oa.causal_linear_attention(Q, K, V, **kw)


# --- against the recurrence --------------------------------------------------------------


@pytest.mark.parametrize("delta", [False, True], ids=["linear", "delta"])
@pytest.mark.parametrize("gates", ["none", "scalar", "per_step"])
def test_random_data_matches_the_recurrence_to_1e_12(delta, gates):
    rng, Q, K, V = _data(1, (2, 3), 1024, 16, 12, unit_keys=delta)
    beta = rng.uniform(0.05, 1.0, (2, 3, 1024))
    decay = {"none": None, "scalar": 0.97, "per_step": rng.uniform(0.8, 1.0, (2, 3, 1024))}[gates]
    state = rng.standard_normal((2, 3, 12, 16))
    O, S = _call(delta, Q, K, V, beta, decay=decay, state=state, return_state=True)
    O_ref, S_ref = _recurrence(Q, K, V, beta if delta else None, decay, state)
    assert O.shape == (2, 3, 1024, 12) and S.shape == (2, 3, 12, 16) and O.dtype == np.float64
    assert _rel(O, O_ref) <= 1e-12 and _rel(S, S_ref) <= 1e-12


@pytest.mark.parametrize("delta", [False, True], ids=["linear", "delta"])
@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_any_chunk_and_any_length(delta, chunk):
    """T = 203 is no multiple of 7 or 64 (nor shorter than 64 chunks); chunk 1 is the recurrence step by step."""
    rng, Q, K, V = _data(2, (3,), 203, 8, 5, unit_keys=delta)
    beta, decay = rng.uniform(0.05, 1.0, (3, 203)), rng.uniform(0.5, 1.0, (3, 203))
    O = _call(delta, Q, K, V, beta, decay=decay, chunk=chunk)
    assert _rel(O, _recurrence(Q, K, V, beta if delta else None, decay)[0]) <= 1e-12
    short = _call(delta, Q[:, :5], K[:, :5], V[:, :5], beta[:, :5], decay=decay[:, :5], chunk=chunk)  # T < chunk
    assert _rel(short, _recurrence(Q[:, :5], K[:, :5], V[:, :5], beta[:, :5] if delta else None,
                                   decay[:, :5])[0]) <= 1e-12


@pytest.mark.parametrize("delta", [False, True], ids=["linear", "delta"])
def test_small_gates_down_to_1e_6_within_1e_10_where_the_factored_form_overflows(delta):
    rng, Q, K, V = _data(3, (2, 2), 512, 16, 16, unit_keys=delta)
    beta = rng.uniform(0.05, 1.0, (2, 2, 512))
    decay = np.exp(rng.uniform(np.log(1e-6), 0.0, (2, 2, 512)))  # gates spread over [1e-6, 1] ...
    decay[0] = np.exp(rng.uniform(np.log(1e-6), np.log(1e-5), (2, 512)))  # ... and all small in one problem
    # the factored chunk form (γ_0⋯γ_t) / (γ_0⋯γ_i) is out of float64's range within one chunk of 64 here
    with np.errstate(under="ignore", over="ignore", divide="ignore"):
        assert np.isinf(1 / np.cumprod(decay[..., :64], axis=-1)).any()
    for chunk in (7, 64):
        O = _call(delta, Q, K, V, beta, decay=decay, chunk=chunk)
        assert _rel(O, _recurrence(Q, K, V, beta if delta else None, decay)[0]) <= 1e-10


@pytest.mark.parametrize("delta", [False, True], ids=["linear", "delta"])
def test_gates_of_1e_30_zero_and_negative_stay_finite_and_right(delta):
    rng, Q, K, V = _data(4, (2,), 300, 8, 6, unit_keys=delta)
    beta = rng.uniform(0.05, 1.0, (2, 300))
    for decay in (np.full((2, 300), 1e-30), 1e-30, np.where(rng.random((2, 300)) < 0.1, 0.0, 0.95),
                  rng.uniform(-1.0, 1.0, (2, 300))):
        O, S = _call(delta, Q, K, V, beta, decay=decay, return_state=True)
        assert np.isfinite(O).all() and np.isfinite(S).all()
        O_ref, S_ref = _recurrence(Q, K, V, beta if delta else None, decay)
        assert _rel(O, O_ref) <= 1e-12 and _rel(S, S_ref) <= 1e-12


@pytest.mark.parametrize("delta", [False, True], ids=["linear", "delta"])
@pytest.mark.parametrize("split", [1, 64, 100, 255])
def test_two_calls_with_the_state_handed_over_equal_one_call(delta, split):
    rng, Q, K, V = _data(5, (2, 2), 256, 8, 4, unit_keys=delta)
    beta, decay = rng.uniform(0.05, 1.0, (2, 2, 256)), rng.uniform(0.7, 1.0, (2, 2, 256))
    state = rng.standard_normal((2, 2, 4, 8))
    whole, S = _call(delta, Q, K, V, beta, decay=decay, state=state, return_state=True)
    a, b = slice(None, split), slice(split, None)
    first, S1 = _call(delta, Q[..., a, :], K[..., a, :], V[..., a, :], beta[..., a], decay=decay[..., a], chunk=64,
                      state=state, return_state=True)
    second, S2 = _call(delta, Q[..., b, :], K[..., b, :], V[..., b, :], beta[..., b], decay=decay[..., b], chunk=7,
                       state=S1, return_state=True)
    assert _rel(np.concatenate([first, second], axis=-2), whole) <= 1e-13 and _rel(S2, S) <= 1e-13


def test_per_head_decay_broadcasts_and_a_scalar_beta_is_one_per_step():
    rng, Q, K, V = _data(6, (2, 3), 100, 8, 8, unit_keys=True)
    per_head = np.array([[0.9], [0.95], [0.99]])  # (H, 1): RetNet's γ per head, broadcast over batch and T
    O = oa.causal_linear_attention(Q, K, V, decay=per_head, chunk=16)
    assert _rel(O, _recurrence(Q, K, V, decay=np.broadcast_to(per_head, (2, 3, 100)))[0]) <= 1e-12
    O = oa.delta_rule_attention(Q, K, V, 0.5, decay=per_head, chunk=16)
    assert _rel(O, _recurrence(Q, K, V, np.full((2, 3, 100), 0.5), np.broadcast_to(per_head, (2, 3, 100)))[0]) <= 1e-12


def test_float32_in_float32_out_and_two_dimensional_inputs():
    rng, Q, K, V = _data(7, (), 50, 4, 3, unit_keys=True)
    O = oa.delta_rule_attention(Q.astype(np.float32), K.astype(np.float32), V.astype(np.float32), 0.5)
    assert O.dtype == np.float32 and O.shape == (50, 3)
    assert _rel(O, _recurrence(Q.astype(np.float32).astype(np.float64), K.astype(np.float32).astype(np.float64),
                               V.astype(np.float32).astype(np.float64), 0.5)[0]) <= 1e-6
    assert oa.causal_linear_attention(Q, K, V, decay=np.float32(0.5)).dtype == np.float64


def test_a_batch_taken_a_group_at_a_time_gives_the_same_answers(monkeypatch):
    rng, Q, K, V = _data(15, (5, 2), 70, 4, 3, unit_keys=True)
    beta, decay = rng.uniform(0.05, 1.0, (5, 2, 70)), rng.uniform(0.5, 1.0, (5, 2, 70))
    whole = [_call(delta, Q, K, V, beta, decay=decay, chunk=16, return_state=True) for delta in (False, True)]
    monkeypatch.setattr(oa, "_CHUNK_WORK", 1)  # one problem at a time
    for delta, (O, S) in zip((False, True), whole, strict=True):
        O1, S1 = _call(delta, Q, K, V, beta, decay=decay, chunk=16, return_state=True)
        assert np.array_equal(O1, O) and np.array_equal(S1, S)


def test_one_step_one_feature_and_long_sequences():
    assert oa.prefix_predictions(np.ones((1, 3)), np.ones(1)).tolist() == [0.0]
    assert np.allclose(oa.prefix_predictions(np.ones((5, 1)), np.arange(5.0)), [0, 0, 0.5, 1, 1.5], atol=1e-15)
    O, S = oa.causal_linear_attention(np.ones((1, 2)), np.ones((1, 2)), np.ones((1, 3)), decay=0.0,
                                      return_state=True)
    assert O.tolist() == [[2.0, 2.0, 2.0]] and S.tolist() == [[1.0, 1.0]] * 3
    rng = np.random.default_rng(16)
    X = rng.standard_normal((2, 3000, 6))  # 46 blocks of rows past p, each summarized for the next
    y = X @ rng.standard_normal(6) + 0.1 * rng.standard_normal((2, 3000))
    out = oa.prefix_predictions(X, y)
    for t in (5, 6, 7, 70, 71, 1500, 2999):
        expected = [X[b, t] @ np.linalg.lstsq(X[b, :t], y[b, :t], rcond=None)[0] for b in range(2)]
        assert np.allclose(out[:, t], expected, rtol=1e-12, atol=1e-12), t


# --- prefix_predictions against a per-prefix lstsq loop ------------------------------------------


def _lstsq_loop(X, Y, ridge=None):
    """Row t: x_tᵀ β_t with β_t = numpy.linalg.lstsq(X[:t], Y[:t]) (minimum norm), or ridge by the augmented
    least-squares problem [X[:t]; √λ I] β ≈ [Y[:t]; 0]; 0 at t = 0."""
    X = np.asarray(X, dtype=np.float64)
    Y2 = np.asarray(Y, dtype=np.float64)
    Y2 = Y2[..., None] if Y2.ndim == X.ndim - 1 else Y2
    lead, (T, p), k = X.shape[:-2], X.shape[-2:], Y2.shape[-1]
    Xf, Yf = X.reshape((-1, T, p)), Y2.reshape((-1, T, k))
    out = np.zeros(Yf.shape)
    for b in range(Xf.shape[0]):
        for t in range(1, T):
            A, y = Xf[b, :t], Yf[b, :t]
            if ridge is not None:
                A, y = np.vstack([A, np.sqrt(ridge) * np.eye(p)]), np.vstack([y, np.zeros((p, k))])
            out[b, t] = Xf[b, t] @ np.linalg.lstsq(A, y, rcond=None)[0]
    out = out.reshape(lead + (T, k))
    return out[..., 0] if np.ndim(Y) == X.ndim - 1 else out


@pytest.mark.parametrize("ridge", [None, 1e-3, 1.0])
@pytest.mark.parametrize("shape", [(16, 41, 20, 1), (4, 15, 20, 2), (3, 230, 6, 3), (2, 150, 40, 1)],
                         ids=["icl", "t_le_p", "tall", "blocks"])
def test_prefix_predictions_match_a_per_prefix_lstsq_loop(shape, ridge):
    B, T, p, k = shape
    rng = np.random.default_rng(8)
    X = rng.standard_normal((B, T, p))
    Y = X @ rng.standard_normal((B, p, k)) + 0.1 * rng.standard_normal((B, T, k))
    out = oa.prefix_predictions(X, Y, ridge=ridge)
    assert out.shape == (B, T, k) and (out[:, 0] == 0).all()
    assert _rel(out, _lstsq_loop(X, Y, ridge)) <= 1e-10


def test_prefix_predictions_minimum_norm_on_rank_deficient_prefixes():
    """Prefixes with t <= p rows, repeated examples, examples in a subspace, a zero example: lstsq's minimum-norm
    answer (pinv semantics), prefix by prefix."""
    rng = np.random.default_rng(9)
    X = rng.standard_normal((5, 30, 6))
    X[0, 3] = X[0, 1]  # a repeated example among the first p
    X[1, 4] = 2 * X[1, 0] - X[1, 2]  # a dependent one
    X[2] = rng.standard_normal((30, 2)) @ rng.standard_normal((2, 6))  # rank 2 throughout
    X[3, 0] = 0.0  # nothing to learn from the first example
    Y = rng.standard_normal((5, 30, 2))
    out = oa.prefix_predictions(X, Y)
    reference = _lstsq_loop(X, Y)
    for b in range(5):
        assert _rel(out[b], reference[b]) <= 1e-10, b
    pinv = [X[4, t] @ np.linalg.pinv(X[4, :t]) @ Y[4, :t] for t in range(1, 30)]
    assert _rel(out[4, 1:], np.array(pinv)) <= 1e-10


def test_prefix_predictions_are_accurate_after_an_ill_conditioned_start():
    """Nearly repeated examples among the first p: the later, well-conditioned prefixes keep lstsq's accuracy (an
    update of β from prefix to prefix would carry the interpolant's error, κ² eps, into every later row)."""
    rng = np.random.default_rng(10)
    X = rng.standard_normal((6, 80, 10))
    X[:, 9] = X[:, 8] + 1e-6 * rng.standard_normal((6, 10))
    Y = X @ rng.standard_normal((6, 10, 1)) + 0.1 * rng.standard_normal((6, 80, 1))
    late = slice(15, None)
    assert _rel(oa.prefix_predictions(X, Y)[:, late], _lstsq_loop(X, Y)[:, late]) <= 1e-12


def test_prefix_predictions_vector_y_scale_and_float32():
    rng = np.random.default_rng(11)
    X, y = rng.standard_normal((3, 25, 4)), rng.standard_normal((3, 25))
    out = oa.prefix_predictions(X, y)
    assert out.shape == (3, 25) and _rel(out, _lstsq_loop(X, y)) <= 1e-10
    huge = oa.prefix_predictions(X * 2.0**900, y * 2.0**-900)  # exact power-of-two scaling inside
    assert _rel(huge * 2.0**900, out) <= 1e-12
    ridge = oa.prefix_predictions(X * 1e150, y, ridge=1e300)  # λ with X's scale
    assert _rel(ridge, oa.prefix_predictions(X, y, ridge=1.0)) <= 1e-10
    single = oa.prefix_predictions(X.astype(np.float32), y.astype(np.float32))
    assert single.dtype == np.float32 and _rel(single, out) <= 1e-4


# --- named errors -------------------------------------------------------------------------------


def test_bad_inputs_give_named_errors():
    Q = np.ones((2, 5, 3))
    V = np.ones((2, 5, 4))
    with pytest.raises(ValueError, match="K must have the shape of Q"):
        oa.causal_linear_attention(Q, np.ones((2, 5, 2)), V)
    with pytest.raises(ValueError, match="V must have shape"):
        oa.causal_linear_attention(Q, Q, np.ones((2, 6, 4)))
    with pytest.raises(ValueError, match="decay must be a number or an array of shape"):
        oa.causal_linear_attention(Q, Q, V, decay=np.ones(4))
    with pytest.raises(ValueError, match="beta must be a number or an array of shape"):
        oa.delta_rule_attention(Q, Q, V, np.ones((2, 6)))
    with pytest.raises(ValueError, match="beta is required"):
        oa.delta_rule_attention(Q, Q, V, None)
    with pytest.raises(ValueError, match="state must have shape"):
        oa.causal_linear_attention(Q, Q, V, state=np.ones((2, 3, 4)))
    for chunk, error in ((0, ValueError), (2.5, TypeError), (True, TypeError)):
        with pytest.raises(error, match="chunk"):
            oa.causal_linear_attention(Q, Q, V, chunk=chunk)
    bad = Q.copy()
    bad[1, 2, 0] = np.nan
    with pytest.raises(ValueError, match="Q contains NaN or infinity"):
        oa.causal_linear_attention(bad, Q, V)
    with pytest.raises(ValueError, match="decay contains NaN or infinity"):
        oa.causal_linear_attention(Q, Q, V, decay=np.inf)
    with pytest.raises(ValueError, match="beta contains NaN or infinity"):
        oa.delta_rule_attention(Q, Q, V, np.nan)
    with pytest.raises(TypeError, match="Q must be real"):
        oa.causal_linear_attention(Q + 0j, Q, V)
    with pytest.raises(ValueError, match="the attention output O does not fit"):
        oa.causal_linear_attention(Q * 1e200, Q * 1e200, V * 1e200)
    X, y = np.ones((2, 6, 3)), np.ones((2, 6))
    with pytest.raises(ValueError, match="Y must have shape"):
        oa.prefix_predictions(X, np.ones((2, 5)))
    with pytest.raises(ValueError, match="X contains NaN or infinity"):
        oa.prefix_predictions(np.full((2, 6, 3), np.inf), y)
    with pytest.raises(ValueError, match="Y contains NaN or infinity"):
        oa.prefix_predictions(X, np.full((2, 6), np.nan))
    for ridge, error in ((0.0, ValueError), (-1.0, ValueError), (np.nan, ValueError), (True, TypeError),
                         ("1", TypeError)):
        with pytest.raises(error, match="ridge"):
            oa.prefix_predictions(X, y, ridge=ridge)


# --- the array-API module: NumPy through array_api_compat, PyTorch, JAX ----------------------------


@pytest.fixture(scope="module")
def ox():
    pytest.importorskip("array_api_compat")
    from derive.generated import ols_attention_xp

    return ols_attention_xp


def _convert(framework):
    if framework == "torch":
        import torch

        return lambda a: torch.as_tensor(np.asarray(a))
    if framework == "jax":
        import jax

        jax.config.update("jax_enable_x64", True)
        return lambda a: jax.numpy.asarray(a)
    if framework == "array_api_strict":  # only what the standard defines
        import array_api_strict

        return lambda a: array_api_strict.asarray(np.asarray(a))
    return np.asarray


@pytest.mark.parametrize("framework", ["numpy", "array_api_strict", "torch", "jax"])
def test_xp_module_gives_the_numpy_modules_answers(ox, framework):
    if framework != "numpy":
        pytest.importorskip(framework)
    conv = _convert(framework)
    rng, Q, K, V = _data(12, (2, 2), 150, 8, 6, unit_keys=True)
    beta, decay = rng.uniform(0.05, 1.0, (2, 2, 150)), rng.uniform(1e-6, 1.0, (2, 2, 150))
    decay[0, 0, ::7] = 0.0
    state = rng.standard_normal((2, 2, 6, 8))
    for delta in (False, True):
        kw = {"decay": conv(decay), "chunk": 16, "state": conv(state), "return_state": True}
        args = (conv(Q), conv(K), conv(V)) + ((conv(beta),) if delta else ())
        O, S = (ox.delta_rule_attention if delta else ox.causal_linear_attention)(*args, **kw)
        O_ref, S_ref = _call(delta, Q, K, V, beta, decay=decay, chunk=16, state=state, return_state=True)
        assert _rel(np.asarray(O), O_ref) <= 1e-12 and _rel(np.asarray(S), S_ref) <= 1e-12
        plain = (ox.delta_rule_attention if delta else ox.causal_linear_attention)(*args, decay=0.9, chunk=64)
        assert _rel(np.asarray(plain), _call(delta, Q, K, V, beta, decay=0.9)) <= 1e-12
    X = rng.standard_normal((3, 14, 5))  # small: eager JAX compiles each prefix's SVD anew
    Y = X @ rng.standard_normal((3, 5, 2)) + 0.1 * rng.standard_normal((3, 14, 2))
    X[1, 4] = X[1, 2]  # a repeated example: the SVD path with lstsq's cutoff
    for ridge in (None, 0.5):
        out = ox.prefix_predictions(conv(X), conv(Y), ridge=ridge)
        assert _rel(np.asarray(out), oa.prefix_predictions(X, Y, ridge=ridge)) <= 1e-10
    with pytest.raises(ValueError, match="beta must be a number or an array of shape"):
        ox.delta_rule_attention(conv(Q), conv(K), conv(V), conv(beta[..., :5]))
    with pytest.raises(ValueError, match="X contains NaN or infinity"):
        ox.prefix_predictions(conv(np.full((2, 5, 3), np.nan)), conv(np.ones((2, 5))))


def test_xp_module_under_jax_jit_and_grad():
    pytest.importorskip("array_api_compat")
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    from derive.generated import ols_attention_xp as ox

    jnp = jax.numpy
    rng, Q, K, V = _data(13, (2,), 80, 6, 4, unit_keys=True)
    beta, decay = rng.uniform(0.05, 1.0, (2, 80)), np.where(rng.random((2, 80)) < 0.1, 0.0, 0.9)
    run = jax.jit(lambda q, k, v, b, g: ox.delta_rule_attention(q, k, v, b, decay=g, chunk=16))
    O = run(*(jnp.asarray(a) for a in (Q, K, V, beta, decay)))
    assert _rel(np.asarray(O), _recurrence(Q, K, V, beta, decay)[0]) <= 1e-12
    grad = jax.grad(lambda g: jnp.sum(ox.delta_rule_attention(jnp.asarray(Q), jnp.asarray(K), jnp.asarray(V),
                                                              jnp.asarray(beta), decay=g) ** 2))(jnp.asarray(decay))
    assert bool(jnp.all(jnp.isfinite(grad)))  # zero gates too: exp of −inf, no log 0 reaches the gradient
    X, Y = rng.standard_normal((3, 30, 8)), rng.standard_normal((3, 30))
    traced = jax.jit(ox.prefix_predictions)(jnp.asarray(X), jnp.asarray(Y))
    assert _rel(np.asarray(traced), _lstsq_loop(X, Y)) <= 1e-10
    X[1, 3] = X[1, 1]  # traced, a problem for the SVD path is NaN (named where values are concrete)
    traced = np.asarray(jax.jit(ox.prefix_predictions)(jnp.asarray(X), jnp.asarray(Y)))
    assert np.isnan(traced[1]).all() and np.isfinite(traced[[0, 2]]).all()


def test_xp_module_torch_float32_and_autograd():
    pytest.importorskip("array_api_compat")
    torch = pytest.importorskip("torch")
    from derive.generated import ols_attention_xp as ox

    rng, Q, K, V = _data(14, (2,), 70, 6, 4, unit_keys=True)
    q = torch.tensor(Q, dtype=torch.float32, requires_grad=True)
    O = ox.delta_rule_attention(q, torch.tensor(K, dtype=torch.float32), torch.tensor(V, dtype=torch.float32), 0.5,
                                decay=torch.full((2, 70), 0.9), chunk=16)
    assert O.dtype == torch.float32
    assert _rel(O.detach().numpy(), _recurrence(Q, K, V, 0.5, 0.9)[0]) <= 1e-5
    O.pow(2).sum().backward()
    assert q.grad is not None and bool(torch.isfinite(q.grad).all())
