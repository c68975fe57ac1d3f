# %% [markdown]
# # 02 — Gauge freedom, preconditioned gradient descent, slow and fast memory
#
# Three checked theorems and their numerical counterparts:
#
# * **`gauge_invariance`** — attention depends on $W_Q, W_K$ only through $W_Q W_K^\top$:
#   $(X_q W_Q)(X W_K)^\top Y = X_q (W_Q W_K^\top) X^\top Y$. So *any* factor $L$ with $L L^\top = (X^\top X)^{-1}$
#   gives OLS: eigendecomposition ($L = V\Lambda^{-1/2}$), SVD ($L = V S^{-1}$, then $X L = U$), QR ($L = R^{-1}$,
#   then $X L = Q$), Cholesky ($X^\top X = C C^\top$, $L = C^{-\top}$).
# * **`preconditioned_gd`** — with $W_Q W_K^\top = \Gamma$, linear attention is one step of $\Gamma$-preconditioned
#   gradient descent on $\tfrac12\|Y - X\beta\|^2$ from $\beta_0 = 0$; the step is OLS if and only if
#   $\Gamma = (X^\top X)^{-1}$.
# * **`slow_fast_memory`** — the prediction is $X_q M S$ with the slow memory $M = L L^\top$ (weights) and the fast
#   memory $S = X^\top Y = \sum_i x_i y_i^\top$, written one example at a time: $S_t = S_{t-1} + x_t y_t^\top$.
#
# **Measured:** the four factors on random data (all must satisfy $LL^\top = (X^\top X)^{-1}$ and reproduce OLS to
# $10^{-10}$), one GD step with the right and with wrong preconditioners, and the rank-one writes.

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
import numpy as np
from IPython.display import Math, display
from sympy.matrices.expressions import MatrixSymbol

from derive.kernel import check
from derive.latex import math
from derive.library import build


def show_lemma(theorem, name):
    """A lemma of a checked theorem as one displayed equation, with its local hypotheses."""
    chain = next(c for c in (*theorem.proof.lemmas, theorem.proof.claim) if c.name == name)
    condition = ", ".join(f"{math(h.lhs)} = {math(h.rhs)}" for h in chain.hypotheses)
    bound = ", ".join(math(v) for h in chain.hypotheses for v in h.forall if isinstance(v, MatrixSymbol))
    prefix = rf"\text{{if }} {condition}" if condition else ""
    prefix += rf"\text{{ for all }} {bound}" if bound else ""
    prefix += r":\quad " if prefix else ""
    display(Math(rf"\textsf{{{name.replace('_', ' ')}}}:\quad {prefix}{math(chain.lhs)} = {math(chain.rhs)}"))


def relative(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


# %% [markdown]
# ## Gauge invariance
#
# The kernel checks the theorem, including one lemma per factorisation (the routes of the generated code).

# %%
gauge = check(build("gauge_invariance"))
display(gauge)
for name in ("any_factor", "svd_whitens", "svd_precision", "qr_whitens", "qr_precision", "cholesky_route"):
    show_lemma(gauge, name)

# %% [markdown]
# Numerically: a correlated random design (seed 0), $n = 80$, $p = 5$, $k = 2$, $m = 6$ queries. Each factor is built
# from its own decomposition; we measure $\|LL^\top - (X^\top X)^{-1}\|/\|(X^\top X)^{-1}\|$ and the relative
# difference of $(X_q L)(X L)^\top Y$ to the `lstsq` predictions.

# %%
rng = np.random.default_rng(0)
n, p, k, m = 80, 5, 2, 6
X = rng.normal(size=(n, p)) @ rng.normal(size=(p, p))  # correlated columns
Y = rng.normal(size=(n, k))
X_q = rng.normal(size=(m, p))
gram = X.T @ X
precision = np.linalg.inv(gram)
beta_ols = np.linalg.lstsq(X, Y, rcond=None)[0]
reference = X_q @ beta_ols
print(f"cond(XᵀX) = {np.linalg.cond(gram):.1e}")

lam, V = np.linalg.eigh(gram)  # XᵀX = V Λ Vᵀ
U, s, Vt = np.linalg.svd(X, full_matrices=False)  # X = U S Vᵀ
Q, R = np.linalg.qr(X)  # X = Q R
C = np.linalg.cholesky(gram)  # XᵀX = C Cᵀ, C lower triangular
factors = {
    "eigh      L = V Λ^(-1/2)": V / np.sqrt(lam),
    "svd       L = V S⁻¹": Vt.T / s,
    "qr        L = R⁻¹": np.linalg.solve(R, np.eye(p)),
    "cholesky  L = C⁻ᵀ": np.linalg.solve(C, np.eye(p)).T,
}
np.testing.assert_allclose(X @ factors["svd       L = V S⁻¹"], U, atol=1e-12)  # X L = U
np.testing.assert_allclose(X @ factors["qr        L = R⁻¹"], Q, atol=1e-12)  # X L = Q

print(f"{'factor':26} {'‖LLᵀ−(XᵀX)⁻¹‖ rel':>20} {'prediction vs lstsq':>22}")
for name, L in factors.items():
    precision_error = relative(L @ L.T, precision)
    prediction_error = relative((X_q @ L) @ (X @ L).T @ Y, reference)
    print(f"{name:26} {precision_error:20.1e} {prediction_error:22.1e}")
    assert precision_error < 1e-10 and prediction_error < 1e-10, name

# The factors themselves differ; only L Lᵀ is fixed (the gauge).
L_eigh, L_qr = factors["eigh      L = V Λ^(-1/2)"], factors["qr        L = R⁻¹"]
assert relative(L_eigh, L_qr) > 0.1
# Any W_Q = L A, W_K = L A⁻ᵀ (A invertible) has the same W_Q W_Kᵀ, hence the same predictions.
A = rng.normal(size=(p, p))
W_Q, W_K = L_eigh @ A, L_eigh @ np.linalg.inv(A).T
assert relative((X_q @ W_Q) @ (X @ W_K).T @ Y, reference) < 1e-10
print(f"W_Q = L A, W_K = L A⁻ᵀ: W_Q differs from W_K by {relative(W_Q, W_K):.2f} (relative), same predictions")

# %% [markdown]
# ## One step of preconditioned gradient descent
#
# The gradient of $\tfrac12\|Y - X\beta\|^2$ is $X^\top(X\beta - Y)$; one step from $\beta_0 = 0$ with preconditioner
# $\Gamma$ gives $\beta_1 = \Gamma X^\top Y$, and predicting with it is linear attention with $W_Q W_K^\top = \Gamma$.
# The lemma `ols_only_if` is the converse: if the step is OLS for every target, then $\Gamma = (X^\top X)^{-1}$.

# %%
gd = check(build("preconditioned_gd"))
display(gd)
show_lemma(gd, "ols_if")
show_lemma(gd, "ols_only_if")


# %%
def gd_step_from_zero(Gamma):
    beta0 = np.zeros((p, k))
    return beta0 - Gamma @ (X.T @ (X @ beta0 - Y))  # β₁ = β₀ − Γ Xᵀ(Xβ₀ − Y)


beta_1 = gd_step_from_zero(precision)
assert relative(beta_1, beta_ols) < 1e-10
W_Q = W_K = L_qr  # any factor: W_Q W_Kᵀ = (XᵀX)⁻¹
assert relative((X_q @ W_Q) @ (X @ W_K).T @ Y, X_q @ beta_1) < 1e-10
print(f"Γ = (XᵀX)⁻¹: one step is OLS (relative difference {relative(beta_1, beta_ols):.1e})")

wrong = {
    "Γ = I / λ_max (plain GD)": np.eye(p) / np.linalg.eigvalsh(gram)[-1],
    "Γ = diag(XᵀX)⁻¹ (Jacobi)": np.diag(1 / np.diag(gram)),
    "Γ = 1.01 (XᵀX)⁻¹": 1.01 * precision,
}
for name, Gamma in wrong.items():
    gap = relative(X_q @ gd_step_from_zero(Gamma), reference)
    print(f"{name:26} one step misses OLS by {gap:.2e} (relative)")
    assert gap > 1e-3, name

# Plain gradient descent needs many steps for what the right preconditioner does in one.
eta, beta, steps = 1 / np.linalg.eigvalsh(gram)[-1], np.zeros((p, k)), 0
history = [relative(beta, beta_ols)]  # the relative distance to OLS after each step
while history[-1] > 1e-10 and steps < 1_000_000:
    beta, steps = beta - eta * X.T @ (X @ beta - Y), steps + 1
    history.append(relative(beta, beta_ols))
assert relative(beta, beta_ols) <= 1e-10
print(f"plain GD with step 1/λ_max reaches OLS to 1e-10 after {steps} steps")

# %% [markdown]
# The same comparison as a figure: the relative distance $\|\beta_t - \hat\beta\| / \|\hat\beta\|$ of plain gradient
# descent after each step (both axes logarithmic), and where one step from zero lands with each preconditioner
# $\Gamma$ above; the right one, $\Gamma = (X^\top X)^{-1}$, lands on OLS to rounding.

# %%
# %matplotlib inline
from matplotlib.figure import Figure

fig = Figure(figsize=(10, 3.8), dpi=110)
ax = fig.subplots()
ax.loglog(range(1, len(history)), history[1:], color="C0", label=r"plain GD, step $1/\lambda_{\max}$")
one_step = {**wrong, "Γ = (XᵀX)⁻¹": precision}
for (name, Gamma), marker in zip(one_step.items(), "osD*", strict=True):
    distance = max(relative(gd_step_from_zero(Gamma), beta_ols), np.finfo(float).eps / 4)  # log scale: never 0
    ax.loglog([1], [distance], marker, markersize=9, markerfacecolor="none", markeredgewidth=1.5,
              label=f"one step, {name}")
ax.axhline(1e-10, color="k", ls=":", lw=1, label="$10^{-10}$")
ax.set(xlabel=r"gradient steps from $\beta_0 = 0$", ylabel=r"$\|\beta_t - \hat\beta\| \,/\, \|\hat\beta\|$",
       title=f"One preconditioned step against {steps:,} plain ones")
ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.02, 0.5))
fig.tight_layout()
display(fig)

# %% [markdown]
# ## Slow and fast memory
#
# The weights hold the slow memory $M = LL^\top$ (it depends on neither the query nor $Y$); attention accumulates
# the fast memory $S = X^\top Y$ by one rank-one write per example.

# %%
memory = check(build("slow_fast_memory"))
display(memory)
show_lemma(memory, "rank_one_write")

# %%
M = L_eigh @ L_eigh.T  # slow memory, fixed
S = np.zeros((p, k))  # fast memory, written one example at a time
for x_t, y_t in zip(X, Y, strict=True):
    S = S + np.outer(x_t, y_t)  # S_t = S_{t−1} + x_t y_tᵀ
print(f"after {n} rank-one writes: ‖S − XᵀY‖/‖XᵀY‖ = {relative(S, X.T @ Y):.1e}")
np.testing.assert_allclose(S, X.T @ Y, rtol=1e-12, atol=1e-12)

prediction = X_q @ M @ S
print(f"X_q M S vs lstsq: {relative(prediction, reference):.1e}")
assert relative(prediction, reference) < 1e-10

# New targets on the same inputs: only the fast memory changes.
Y_new = rng.normal(size=(n, k))
assert relative(X_q @ M @ (X.T @ Y_new), X_q @ np.linalg.lstsq(X, Y_new, rcond=None)[0]) < 1e-10
