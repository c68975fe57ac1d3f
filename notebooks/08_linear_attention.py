# %% [markdown]
# # 08 — Linear attention in chunks, the delta rule, and in-context regression
#
# Modern linear-attention layers (RetNet, Mamba-2, DeltaNet, Gated DeltaNet) are trained chunk by chunk: inside a
# chunk the causal mask is applied to a small block of scores, and a state carries what came before. The library
# proves these chunk identities for every length (`derive/library/linear_attention.py`; the documentation's page
# `docs/linear_attention.md` states them all); the generated NumPy module computes them.
#
# Here:
#
# 1. the chunk identity $\operatorname{tril}(QK^\top)V = [\operatorname{tril}(Q_aK_a^\top)V_a;\;
#    Q_bS_c^\top + \operatorname{tril}(Q_bK_b^\top)V_b]$ stated with `derive.tril` and proved by `.auto`, with
#    its LaTeX; then a near-miss (the chunk's own mask made strict) refuted by a counterexample;
# 2. the library's seven theorems on linear attention, checked by the kernel;
# 3. `causal_linear_attention` and `delta_rule_attention` against a token-by-token loop;
# 4. the in-context-learning curve: the error of the least-squares baseline `prefix_predictions` against the number
#    of examples, beside a single-layer linear-attention model trained by gradient descent on random regression
#    tasks.

# %%
import sys
from pathlib import Path

# The repository root: the first folder above the working directory that holds derive/kernel/__init__.py.
ROOT = next((p for p in (Path.cwd(), *Path.cwd().parents) if (p / "derive" / "kernel" / "__init__.py").is_file()), None)
try:
    import derive
except ImportError:  # not installed: import the package from this checkout
    if ROOT is None:
        raise RuntimeError("derive is not installed: python -m pip install '.[notebooks]' in the checkout, "
                           "or start Jupyter inside the checkout") from None
    sys.path.insert(0, str(ROOT))
    import derive
print(f"derive {derive.__version__} from {Path(derive.__file__).parent}")

# %%
# %matplotlib inline
import time

import matplotlib.pyplot as plt
import numpy as np
from IPython.display import display
from sympy import MatrixSymbol

from derive import Hypothesis, ProofBuilder, ProofError, add, block, check, dim, mul, transpose, tril
from derive.generated.ols_attention import causal_linear_attention, delta_rule_attention, prefix_predictions
from derive.latex import theorem_latex
from derive.library import build

# %% [markdown]
# ## 1. The chunk identity, proved
#
# A prefix of $c$ tokens and a chunk of $C$ tokens after it: $Q = [Q_a; Q_b]$, $K = [K_a; K_b]$,
# $V = [V_a; V_b]$, and the state the prefix hands on, $S_c = V_a^\top K_a$ ($d_v \times d_k$). The dimensions are
# symbols, so the proof holds for every length of prefix and chunk. `.auto` finds the chain: block products, the
# kernel's rule `tril_block` (the mask of a block matrix with square diagonal blocks keeps the blocks below the
# diagonal whole and zeroes those above), and the hypothesis.

# %%
c, C, d_k, d_v = dim("c"), dim("C"), dim("d_k"), dim("d_v")
Q_a, Q_b = MatrixSymbol("Q_a", c, d_k), MatrixSymbol("Q_b", C, d_k)
K_a, K_b = MatrixSymbol("K_a", c, d_k), MatrixSymbol("K_b", C, d_k)
V_a, V_b = MatrixSymbol("V_a", c, d_v), MatrixSymbol("V_b", C, d_v)
S_c = MatrixSymbol("S_c", d_v, d_k)
Q, K, V = block([[Q_a], [Q_b]]), block([[K_a], [K_b]]), block([[V_a], [V_b]])


def chunkwise(offset: int):
    """[tril(Q_aK_aᵀ)V_a; Q_bS_cᵀ + tril(Q_bK_bᵀ, offset)V_b]: offset 0 is the causal mask, −1 the strict one."""
    return block([[mul(tril(mul(Q_a, transpose(K_a))), V_a)],
                  [add(mul(Q_b, transpose(S_c)), mul(tril(mul(Q_b, transpose(K_b)), offset), V_b))]])


def chunk_builder(name: str) -> ProofBuilder:
    return ProofBuilder(name, "Causal linear attention, one chunk after a prefix",
                        "With S_c = V_aᵀK_a: tril(QKᵀ)V = [tril(Q_aK_aᵀ)V_a; Q_bS_cᵀ + tril(Q_bK_bᵀ)V_b].",
                        [Hypothesis("carried_state", S_c, mul(transpose(V_a), K_a))])


start = time.perf_counter()
b = chunk_builder("chunk_identity")
b.main(mul(tril(mul(Q, transpose(K))), V)).auto(chunkwise(0))
chunk_theorem = check(b.proof())
print(f"{chunk_theorem.id}: {chunk_theorem.steps} checked steps, found and checked in "
      f"{time.perf_counter() - start:.2f} s")
print("rules:", ", ".join(step.rule for step in chunk_theorem.proof.claim.steps))
display(chunk_theorem)

# %% [markdown]
# The LaTeX that `derive latex` writes for such a theorem (the macros are those of the package's `.sty`):

# %%
print(theorem_latex(chunk_theorem))

# %% [markdown]
# ### A near-miss, refuted
#
# Make the chunk's own mask strict, $\operatorname{tril}(Q_bK_b^\top, -1)$: a token no longer sees its own key.
# `.auto` finds no chain, and the error carries the refuter's verdict: exact rational values at which both sides
# differ, shrunk to the smallest sizes.

# %%
b = chunk_builder("chunk_identity_strict")
try:
    b.main(mul(tril(mul(Q, transpose(K))), V)).auto(chunkwise(-1))
except ProofError as error:
    verdict = error.counterexample
    print(verdict)
else:
    raise AssertionError("the strict mask was proved")
assert verdict.kind == "false"

# %% [markdown]
# ## 2. The library's theorems on linear attention
#
# Each is proved by `.auto` in `derive/library/linear_attention.py` (certificates in `proofs/certificates/`,
# Coq files in `proofs/coq/`); `build` returns the recorded proof and `check` re-checks every step in the kernel.

# %%
LIBRARY = {
    "chunkwise_linear_attention": "the mask is the recurrence; a chunk: queries on the carried state + own mask",
    "delta_rule_wy": "DeltaNet's product of erasures is I − WᵀK (WY), its state S₀ + (U − WS₀ᵀ)ᵀK (UT)",
    "delta_rule_chunkwise": "a DeltaNet chunk: O = QS₀ᵀ + tril(QKᵀ)(U − WS₀ᵀ), the state handed on",
    "decayed_linear_attention": "gates γ_t: decays as products of gates, never quotients",
    "gated_delta_rule": "Gated DeltaNet in WY form",
    "rls_is_delta_rule": "recursive least squares is a delta-rule write with the key Pᵀx",
    "causal_weighted_ridge": "MesaNet's decayed state is weighted ridge on every prefix",
}
start = time.perf_counter()
for name, what in LIBRARY.items():
    theorem = check(build(name))
    print(f"{name:27} {theorem.steps:4} steps  {what}")
print(f"all checked in {time.perf_counter() - start:.1f} s")

# %% [markdown]
# ## 3. The generated functions against a token loop
#
# `causal_linear_attention(Q, K, V, decay=γ, chunk=C, state=S, return_state=True)` and
# `delta_rule_attention(Q, K, V, β, ...)` compute $o_t = S_tq_t$ chunk by chunk. The reference below is the
# recurrence itself, one token at a time, in float64. The sequence is cut in two and the state handed over: two
# calls equal one.

# %%
def token_loop(Q, K, V, beta=None, decay=None, state=None):
    """o_t = S_t q_t with S_t = γ_t S_{t−1}(I − β_t k_t k_tᵀ) + β_t v_t k_tᵀ (β given), else γ_t S_{t−1} + v_t k_tᵀ."""
    T, dk, dv = Q.shape[0], Q.shape[1], V.shape[1]
    gamma = np.ones(T) if decay is None else np.broadcast_to(decay, (T,))
    S = np.zeros((dv, dk)) if state is None else state.copy()
    O = np.empty((T, dv))
    for t in range(T):
        q, k, v = Q[t], K[t], V[t]
        if beta is None:
            S = gamma[t] * S + np.outer(v, k)
        else:
            S = gamma[t] * (S - beta[t] * np.outer(S @ k, k)) + beta[t] * np.outer(v, k)
        O[t] = S @ q
    return O, S


def rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


rng = np.random.default_rng(0)
T, dk, dv = 500, 16, 8
Qs, Ks, Vs = rng.standard_normal((T, dk)), rng.standard_normal((T, dk)), rng.standard_normal((T, dv))
Ks_unit = Ks / np.linalg.norm(Ks, axis=1, keepdims=True)  # DeltaNet's L2-normalised keys
beta, gates = rng.uniform(0.1, 1.0, T), rng.uniform(0.9, 1.0, T)
S0 = rng.standard_normal((dv, dk))

cases = {
    "linear attention": (causal_linear_attention(Qs, Ks, Vs), token_loop(Qs, Ks, Vs)[0]),
    "decayed (per-step gates)": (causal_linear_attention(Qs, Ks, Vs, decay=gates, chunk=32),
                                 token_loop(Qs, Ks, Vs, decay=gates)[0]),
    "delta rule": (delta_rule_attention(Qs, Ks_unit, Vs, beta), token_loop(Qs, Ks_unit, Vs, beta=beta)[0]),
    "gated delta rule, state in": (delta_rule_attention(Qs, Ks_unit, Vs, beta, decay=gates, state=S0),
                                   token_loop(Qs, Ks_unit, Vs, beta=beta, decay=gates, state=S0)[0]),
}
for label, (O, O_loop) in cases.items():
    print(f"{label:28} relative error ‖O − O_loop‖ / ‖O_loop‖ = {rel(O, O_loop):.1e}")
    assert rel(O, O_loop) < 1e-12

# the state handed from one call to the next: the sequence in two calls equals one call
O1, S1 = delta_rule_attention(Qs[:300], Ks_unit[:300], Vs[:300], beta[:300], decay=gates[:300], return_state=True)
O2, S2 = delta_rule_attention(Qs[300:], Ks_unit[300:], Vs[300:], beta[300:], decay=gates[300:], state=S1,
                              return_state=True)
O_all, S_all = delta_rule_attention(Qs, Ks_unit, Vs, beta, decay=gates, return_state=True)
print(f"two calls vs one: outputs {rel(np.concatenate([O1, O2]), O_all):.1e}, final state {rel(S2, S_all):.1e}")
assert rel(np.concatenate([O1, O2]), O_all) < 1e-12 and rel(S2, S_all) < 1e-12

# %% [markdown]
# `rls_is_delta_rule` in numbers: a delta-rule write $S \leftarrow S + (y - Sx)(P^\top x)^\top$, with
# $P = (A + xx^\top)^{-1}$ the inverse of the Gram matrix after the example ($A_0 = \lambda I$), run token by token,
# predicts each $y_t$ from the examples before it exactly as ridge regression on every prefix does
# (`prefix_predictions(X, y, ridge=λ)`, computed by the package without any recursion).

# %%
n, p, lam = 60, 5, 0.5
X = rng.standard_normal((n, p))
y = X @ rng.standard_normal(p) + 0.1 * rng.standard_normal(n)
A, S = lam * np.eye(p), np.zeros((1, p))
delta_predictions = np.empty(n)
for t in range(n):
    x = X[t]
    delta_predictions[t] = (S @ x)[0]
    A = A + np.outer(x, x)
    P = np.linalg.inv(A)
    S = S + np.outer(y[t] - S @ x, P.T @ x)
gap = rel(delta_predictions, prefix_predictions(X, y, ridge=lam))
print(f"delta rule with the key Pᵀx vs prefix_predictions(ridge={lam}): {gap:.1e}")
assert gap < 1e-10

# %% [markdown]
# ## 4. In-context learning: least squares against a trained linear-attention layer
#
# **Tasks.** Each prompt is a regression task: $w \sim N(0, I_p)$, $p = 10$; examples $x_t \sim N(0, I_p)$,
# $y_t = w^\top x_t + \sigma\varepsilon_t$ with $\sigma = 0.1$; $T = 40$ examples. The model sees
# $(x_0, y_0), \dots, (x_{t-1}, y_{t-1})$ and $x_t$ and predicts $y_t$; the curve is the mean squared error of that
# prediction against $t$, the number of examples in context.
#
# **Baseline.** `prefix_predictions(X, y)`: least squares on every prefix (minimum norm while $t \le p$), all
# prefixes of all prompts at once. With `ridge=σ²` it is the posterior mean under this prior (the Bayes-optimal
# predictor here).
#
# **Model.** One linear-attention layer with the keys and values of the *previous* token,
# $k_t = x_{t-1}$, $v_t = y_{t-1}$ ($k_0 = 0$), and the query $q_t = \Gamma x_t / t$:
# `causal_linear_attention(Q, K, V)` gives $\hat y_t = \tfrac1t\sum_{i<t} y_i\,x_i^\top\Gamma x_t$. This is
# one step of preconditioned gradient descent from $w = 0$ on the prefix's least-squares loss, with the trained
# matrix $\Gamma$ ($p \times p$) as the preconditioner. $\Gamma$ starts at 0 and is trained by plain gradient
# descent (the gradient written out in NumPy) on the mean squared error over all positions, on fresh random tasks
# at every step. The loss is quadratic in $\Gamma$, so training is short.
#
# **What to expect.** One step of gradient descent is not least squares: with a single $\Gamma$ for every prefix
# length, the model is worse than least squares once $t$ exceeds $p$, and its error levels off. For comparison, the
# dotted line is the best one-step GD *for each* $t$ separately, $\Gamma = \gamma_t I$ with
# $\gamma_t = t / (t + p + 1 + \sigma^2)$, whose error is $\sigma^2 + p(p + 1 + \sigma^2)/(t + p + 1 + \sigma^2)$
# for Gaussian data (exact expectation). Least squares interpolates at $t = p$, where its error spikes (the
# interpolation peak: $X$ is square and the noise is amplified by $(X^\top X)^{-1}$); ridge has no spike.

# %%
p, T, sigma = 10, 40, 0.1
positions = np.arange(T)  # t: the number of examples in context


def regression_tasks(rng, prompts):
    X = rng.standard_normal((prompts, T, p))
    w = rng.standard_normal((prompts, p))
    y = np.einsum("btp,bp->bt", X, w) + sigma * rng.standard_normal((prompts, T))
    return X, y


def attention_inputs(Gamma, X, y):
    """Keys and values of the previous token (k_0 = 0, v_0 = 0), queries Γx_t / t."""
    K = np.concatenate([np.zeros_like(X[:, :1]), X[:, :-1]], axis=1)
    V = np.concatenate([np.zeros_like(y[:, :1]), y[:, :-1]], axis=1)[..., None]
    Qry = (X @ Gamma.T) / np.maximum(positions, 1)[:, None]
    return Qry, K, V


def model(Gamma, X, y):
    return causal_linear_attention(*attention_inputs(Gamma, X, y))[..., 0]


def prefix_means(X, y):
    """h_t = (1/t) Σ_{i<t} y_i x_i (h_0 = 0): the model is ŷ_t = h_tᵀ Γ x_t, linear in Γ."""
    h = np.cumsum(y[..., None] * X, axis=1)
    h = np.concatenate([np.zeros_like(h[:, :1]), h[:, :-1]], axis=1)
    return h / np.maximum(positions, 1)[:, None]


start = time.perf_counter()
train_rng = np.random.default_rng(1)
Gamma = np.zeros((p, p))
learning_rate, steps, prompts = 0.05, 600, 256
losses = []
for _ in range(steps):
    X, y = regression_tasks(train_rng, prompts)
    h = prefix_means(X, y)
    residual = np.einsum("btp,pq,btq->bt", h, Gamma, X) - y
    gradient = 2 * np.einsum("bt,btp,btq->pq", residual, h, X) / residual.size
    Gamma -= learning_rate * gradient
    losses.append(float(np.mean(residual**2)))
off_diagonal = np.abs(Gamma - np.diag(np.diag(Gamma))).max()
print(f"trained in {time.perf_counter() - start:.1f} s: loss {losses[0]:.2f} -> {losses[-1]:.2f}; "
      f"Γ ≈ {np.trace(Gamma) / p:.3f}·I (largest off-diagonal entry {off_diagonal:.3f})")

# the trained model, evaluated by the generated causal_linear_attention, is the formula it was trained with
X, y = regression_tasks(np.random.default_rng(2), 4000)
predictions = model(Gamma, X, y)
assert np.allclose(predictions, np.einsum("btp,pq,btq->bt", prefix_means(X, y), Gamma, X), rtol=1e-10, atol=1e-12)

errors = {
    "least squares (prefix_predictions)": np.mean((prefix_predictions(X, y) - y) ** 2, axis=0),
    f"ridge, λ = σ² (prefix_predictions(ridge={sigma**2:g}))": np.mean(
        (prefix_predictions(X, y, ridge=sigma**2) - y) ** 2, axis=0),
    "trained linear attention (one layer)": np.mean((predictions - y) ** 2, axis=0),
}
one_step_best = sigma**2 + p * (p + 1 + sigma**2) / (positions + p + 1 + sigma**2)
for t in (1, 5, p, p + 5, 20, T - 1):
    print(f"t = {t:2}: " + ", ".join(f"{label.split(' (')[0].split(',')[0]} {e[t]:.3g}" for label, e in errors.items())
          + f", best one-step GD {one_step_best[t]:.3g}")

# %% [markdown]
# The headline numbers, checked: least squares reaches the noise floor (its expected error past $t = p + 1$ is
# $\sigma^2(1 + p/(t - p - 1))$); the trained layer learns from the context (its error falls well below that of
# predicting 0, $p + \sigma^2$) but stays above the best one-step GD at each $t$, and above least squares once
# $t > p + 1$.

# %%
ls, ridge_errors, trained = errors.values()
late = positions >= p + 2
assert abs(ls[-1] / (sigma**2 * (1 + p / (T - 1 - p - 1))) - 1) < 0.15
assert trained[-1] < 0.5 * (p + sigma**2)
assert (trained[1:] > 0.9 * one_step_best[1:]).all()
assert (trained[late] > ls[late]).all() and (ridge_errors <= ls * 1.05).all()

fig, ax = plt.subplots(figsize=(7, 4.2))
for (label, e), style in zip(errors.items(), ("o-", "s--", "^-"), strict=True):
    ax.plot(positions[1:], e[1:], style, ms=3.5, label=label)
ax.plot(positions[1:], one_step_best[1:], ":", color="0.3", label="best one-step GD for each t (theory)")
ax.axhline(sigma**2, color="0.6", lw=0.8)
ax.text(1, sigma**2 * 1.15, "noise σ²", ha="left", va="bottom", color="0.4", fontsize=8)
ax.axvline(p, color="0.8", lw=0.8, zorder=0)
ax.set_yscale("log")
ax.set_xlabel("number of examples in context, t")
ax.set_ylabel("mean squared error of ŷ_t")
ax.set_title(f"In-context linear regression (p = {p}, σ = {sigma}, {X.shape[0]} prompts)")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
