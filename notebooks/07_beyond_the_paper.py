# %% [markdown]
# # 07 — Beyond the paper: ridge, streaming least squares, k layers
#
# The library proves more than the paper's single-layer OLS identity, and the generated NumPy module computes
# it (`docs/codegen.md`, "Beyond OLS"); `derive prove` checks each theorem named here:
#
# * **ridge** $(X^\top X + \lambda I)^{-1}X^\top Y$ (`ridge_is_linear_attention`), and its dual, token form
#   $X^\top(XX^\top + \lambda I)^{-1}Y$ (`kernel_ridge_push_through`): `coefficients(X, Y, ridge=λ)`;
# * **streaming** least squares, causal linear attention with a slow and a fast memory (`causal_online_ls`):
#   `RecursiveLeastSquares`, kept in square-root (QR) form;
# * **k layers** of linear attention are k preconditioned gradient steps (`multi_layer_gd`):
#   `multi_layer_predict(X, Y, X_query, layers=k, step=Γ)`, with
#   $\hat\beta - \beta_k = (I - \Gamma X^\top X)^k\hat\beta$.
#
# **Measured** below: the ridge path across $\lambda$ (primal and dual routes agree), streaming against batch
# (square root against Sherman–Morrison), and the k-layer error against the rate the theorem predicts.

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
import importlib.util
import tempfile

import matplotlib.pyplot as plt
import numpy as np

from derive.codegen import REQUIRED_THEOREMS, numpy_module
from derive.kernel import check
from derive.library import build

theorems = {theorem_id: check(build(theorem_id)) for theorem_id in REQUIRED_THEOREMS}
with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "ols_attention.py"
    path.write_text(numpy_module(theorems), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("ols_attention", path)
    oa = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(oa)
print(", ".join(name for name in oa.__all__))

# %% [markdown]
# ## Ridge across $\lambda$
#
# A tall problem (n = 60, p = 8) and a wide one (n = 12, p = 40, where OLS has no unique answer). For the wide
# one `auto` takes the dual route, an n×n Cholesky factor of $XX^\top + \lambda I$; the primal formula, solved
# here directly, must agree. As $\lambda \to 0$ the tall path tends to OLS and the wide one to the minimum-norm
# solution; as $\lambda$ grows, $\|\beta(\lambda)\|$ shrinks to 0.

# %%
rng = np.random.default_rng(0)
lams = np.logspace(-6, 4, 41)
fig, ax = plt.subplots(figsize=(6, 3.5))
for n, p in ((60, 8), (12, 40)):
    X, y = rng.standard_normal((n, p)), rng.standard_normal(n)
    path_ = np.array([oa.coefficients(X, y, ridge=lam) for lam in lams])
    primal = np.array([np.linalg.solve(X.T @ X + lam * np.eye(p), X.T @ y) for lam in lams[lams >= 1e-2]])
    agree = np.abs(path_[lams >= 1e-2] - primal).max() / np.abs(primal).max()
    limit = oa.coefficients(X, y)  # OLS, or the minimum-norm solution where p > n
    gap = np.abs(path_[0] - limit).max() / np.abs(limit).max()
    print(f"n = {n}, p = {p}: primal formula vs module (λ ≥ 1e-2) {agree:.1e}; λ = 1e-6 vs λ → 0 limit {gap:.1e}")
    assert agree < 1e-10 and gap < 1e-3
    norms = np.linalg.norm(path_, axis=1)
    assert (np.diff(norms) <= 1e-12).all()  # ridge shrinks: ‖β(λ)‖ decreases with λ
    ax.loglog(lams, norms, label=f"n = {n}, p = {p}")
ax.set_xlabel("λ")
ax.set_ylabel("‖β(λ)‖")
ax.legend()
ax.set_title("The ridge path")
plt.show()

# %% [markdown]
# ## Streaming against batch
#
# 20,000 rows with cond(X) about 1e3, streamed one at a time: the module's square-root filter (QR of
# $[R\;Z;\;x^\top\;y]$ per update) against the textbook recursion on $P = (X^\top X + \lambda I)^{-1}$ by
# Sherman–Morrison, which `causal_online_ls` checks symbolically. Both are exact in exact arithmetic; in floating
# point, updating $P$ amplifies each rounding by the conditioning, the square root does not.
# (`benchmarks/bench_rls.py` runs the same on 10⁶ rows.)

# %%
n, p, lam = 20_000, 10, 1e-3
X = rng.standard_normal((n, p)) * np.logspace(0, 3, p)
y = X @ rng.standard_normal(p) + rng.standard_normal(n)
rls = oa.RecursiveLeastSquares(p, ridge=lam)
P, beta = np.eye(p) / lam, np.zeros(p)
marks, err_sqrt, err_sm = [], [], []
for i in range(n):
    rls.update(X[i], y[i])
    Px = P @ X[i]
    gain = Px / (1 + X[i] @ Px)
    beta, P = beta + gain * (y[i] - X[i] @ beta), P - np.outer(gain, Px)
    if (i + 1) % 1000 == 0:
        batch = oa.coefficients(X[:i + 1], y[:i + 1], ridge=lam)
        marks.append(i + 1)
        err_sqrt.append(np.abs(rls.coefficients - batch).max() / np.abs(batch).max())
        err_sm.append(np.abs(beta - batch).max() / np.abs(batch).max())
print(f"after {n} rows: square root {err_sqrt[-1]:.1e}, Sherman–Morrison {err_sm[-1]:.1e} (relative to batch)")
assert max(err_sqrt) < 1e-11
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.semilogy(marks, err_sqrt, "o-", label="square root (RecursiveLeastSquares)")
ax.semilogy(marks, err_sm, "s-", label="covariance form (Sherman–Morrison)")
ax.set_xlabel("rows streamed")
ax.set_ylabel("relative error vs batch")
ax.legend()
plt.show()

# %% [markdown]
# ## k layers converge at the rate of the spectrum of $I - \Gamma X^\top X$
#
# With $\Gamma = \eta I$, $\eta = 1/\lambda_{\max}(X^\top X)$, the error of $k$ layers is
# $(I - \eta X^\top X)^k\hat\beta$: it decays like $\rho^k$, $\rho = 1 - \lambda_{\min}/\lambda_{\max}$. A better
# preconditioner — here the inverse of the population covariance, what a trained model could hold in its weights —
# makes $\rho$ small; $\Gamma = (X^\top X)^{-1}$ needs one layer.

# %%
n, p = 200, 5
scales = np.array([1.0, 1.5, 2.0, 3.0, 4.0])
X = rng.standard_normal((n, p)) * scales
y = X @ rng.standard_normal(p) + 0.1 * rng.standard_normal(n)
Xq = rng.standard_normal((50, p)) * scales
ols = oa.predict(X, y, Xq)
G = X.T @ X
eigs = np.linalg.eigvalsh(G)
steps = {"η = 1/λ_max": 1 / eigs[-1], "Γ = (n Σ)⁻¹": np.diag(1 / (n * scales**2))}
ks = np.arange(0, 61, 3)
fig, ax = plt.subplots(figsize=(6, 3.5))
for label, step in steps.items():
    Gamma = step * np.eye(p) if np.ndim(step) == 0 else step
    rho = np.abs(np.linalg.eigvals(np.eye(p) - Gamma @ G)).max()
    errors = [np.abs(oa.multi_layer_predict(X, y, Xq, layers=int(k), step=step) - ols).max() for k in ks]
    print(f"{label}: spectral radius of I − ΓXᵀX {rho:.3f}; error after 30 layers {errors[10]:.1e}")
    assert errors[10] <= 2 * errors[0] * rho**30 * np.sqrt(np.linalg.cond(Gamma @ G)) + 1e-12
    ax.semilogy(ks, errors, "o", label=f"{label}, measured")
    ax.semilogy(ks, errors[0] * rho**ks, "-", label=f"{label}, ρ^k = {rho:.2f}^k")
one = oa.multi_layer_predict(X, y, Xq, layers=1, step=np.linalg.inv(G))
print(f"Γ = (XᵀX)⁻¹, one layer: {np.abs(one - ols).max():.1e} from OLS")
assert np.abs(one - ols).max() < 1e-10 * np.abs(ols).max()
ax.set_xlabel("layers k")
ax.set_ylabel("max |prediction − OLS|")
ax.legend(fontsize=7)
plt.show()
