"""The chunk functions printed from the checked linear-attention lemmas (issue 42).

``chunkwise_linear_attention`` (lemmas ``chunk_outputs`` and ``carried_state``) and ``delta_rule_chunkwise`` (its
induction ``chunk_outputs`` and its claim, members at the chunk length t read as the arrays of that step) declare
routes; the generated modules' ``causal_linear_attention`` and ``delta_rule_attention`` call them for every chunk
when there is no decay.  Here: they are called (a spy counts the calls and a wrong function changes the result),
they agree with a token-by-token recurrence, and a route whose members are not all at one index is refused, named.
"""

from __future__ import annotations

import numpy as np
import pytest
from sympy.matrices.expressions import ZeroMatrix

from derive.authoring import ProofBuilder, dim, family, index
from derive.codegen import CodegenError, Route
from derive.codegen.generate import route_expression
from derive.generated import ols_attention as oa
from derive.kernel import check
from derive.kernel.terms import add, block, mul, transpose


def _recurrence(Q, K, V, beta=None):
    dk, dv = Q.shape[-1], V.shape[-1]
    S, out = np.zeros((dv, dk)), []
    for q, k, v, b in zip(Q, K, V, [None] * len(Q) if beta is None else beta, strict=True):
        S = S + np.outer(v, k) if b is None else S - b * np.outer(S @ k, k) + b * np.outer(v, k)
        out.append(S @ q)
    return np.array(out), S


@pytest.fixture
def spy(monkeypatch):
    calls: dict[str, int] = {}
    for name in ("chunk_outputs", "chunk_state", "delta_chunk_outputs", "delta_chunk_state"):
        real = oa.PRINTED[name]

        def counted(*args, _real=real, _name=name):  # the chunks a call covers: (G, C, d) one, (G, nc, C, d) nc
            chunks = args[1].shape[1] if args[1].ndim == 4 else 1
            calls[_name] = calls.get(_name, 0) + chunks
            return _real(*args)

        monkeypatch.setitem(oa.PRINTED, name, counted)
    return calls


@pytest.mark.parametrize("delta", [False, True])
def test_each_chunk_is_computed_by_the_printed_functions(spy, delta):
    rng = np.random.default_rng(42)
    T, d, chunk = 37, 5, 8  # 5 chunks, the last one short
    Q, K, V = rng.standard_normal((T, d)), rng.standard_normal((T, d)) / np.sqrt(d), rng.standard_normal((T, 3))
    beta = rng.uniform(0.1, 0.9, T)
    if delta:
        O, S = oa.delta_rule_attention(Q, K, V, beta, chunk=chunk, return_state=True)
        want, want_S = _recurrence(Q, K, V, beta)
    else:
        O, S = oa.causal_linear_attention(Q, K, V, chunk=chunk, return_state=True)
        want, want_S = _recurrence(Q, K, V)
    prefix = "delta_" if delta else ""
    assert spy == {f"{prefix}chunk_outputs": 5, f"{prefix}chunk_state": 5}  # every chunk by both printed functions
    assert np.abs(O - want).max() <= 1e-12 * np.abs(want).max()
    assert np.abs(S - want_S).max() <= 1e-12 * np.abs(want_S).max()


def test_a_wrong_printed_function_changes_the_result(monkeypatch):
    rng = np.random.default_rng(1)
    Q, K, V = rng.standard_normal((3, 10, 4))
    right = oa.causal_linear_attention(Q, K, V, chunk=4)
    monkeypatch.setitem(oa.PRINTED, "chunk_state", lambda K, V, state: state + K.swapaxes(-1, -2) @ V)  # Kᵀ V: wrong
    assert not np.allclose(oa.causal_linear_attention(Q, K, V, chunk=4), right)


def test_the_printed_chunk_functions_name_their_lemmas():
    assert "chunkwise_linear_attention, lemma chunk_outputs" in oa._chunk_outputs_beta.__doc__
    assert "delta_rule_chunkwise, lemma main" in oa._delta_chunk_state_beta.__doc__
    assert "β̂" not in oa._chunk_outputs_beta.__doc__  # not a least-squares coefficient


def test_a_route_with_members_at_another_index_is_refused():
    t, d = index("t"), dim("d")
    k = family("k", (d, 1))
    S = family("S", (d, d)).recurrence(ZeroMatrix(d, d), lambda s: add(S[s], mul(k[s + 1], transpose(k[s + 1]))))
    K = family("K", lambda s: (s, d)).recurrence(ZeroMatrix(0, d), lambda s: block([[K[s]], [transpose(k[s + 1])]]))
    b = ProofBuilder("memory_next", "A memory one step on", "S_{t+1} = S_t + k_{t+1}k_{t+1}ᵀ.", families=[k, S, K])
    b.induction("memory", t, S[t], mul(transpose(K[t]), K[t])).auto()
    b.main(S[t + 1]).auto(add(S[t], mul(k[t + 1], transpose(k[t + 1]))))
    theorem = check(b.proof())
    side = route_expression(theorem, Route("memory", "memory"))  # members at the induction's t: arrays K
    assert {str(m.name) for m in side.free_symbols if hasattr(m, "name")} >= {"K"}
    with pytest.raises(CodegenError, match="several indices"):
        route_expression(theorem, Route("next", "main"))
