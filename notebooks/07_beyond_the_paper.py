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
import numpy as np

from derive.experiments.beyond import generated_numpy_module, layers_convergence, ridge_path, streaming_vs_batch
from derive.experiments.figures import beyond_figure

# the module `derive codegen` writes, generated here from freshly checked theorems
oa = generated_numpy_module()
print(", ".join(name for name in oa.__all__))

# %% [markdown]
# ## Ridge across $\lambda$
#
# A tall problem (n = 60, p = 8) and a wide one (n = 12, p = 40, where OLS has no unique answer). For the wide
# one `auto` takes the dual route, the n×n solve with $XX^\top + \lambda I$ printed from
# `kernel_ridge_push_through`; the primal formula, solved directly, must agree. As $\lambda \to 0$ the tall path
# tends to OLS and the wide one to the minimum-norm solution; as $\lambda$ grows, $\|\beta(\lambda)\|$ shrinks
# to 0.

# %%
ridge = ridge_path(seed=0)
for problem in ridge["problems"]:
    print(f"n = {problem['n']}, p = {problem['p']}: primal formula vs module (λ ≥ 1e-2) "
          f"{problem['primal_agreement']:.1e}; λ = 1e-6 vs the λ → 0 limit {problem['limit_gap']:.1e}")
    assert problem["primal_agreement"] < 1e-10 and problem["limit_gap"] < 1e-3
    assert (np.diff(problem["norms"]) <= 1e-12).all()  # ridge shrinks: ‖β(λ)‖ decreases with λ

# %% [markdown]
# ## Streaming against batch
#
# 20,000 rows with cond(X) about 1e3, streamed one at a time: the module's square-root filter (QR of
# $[R\;Z;\;x^\top\;y]$ per update) against the textbook recursion on $P = (X^\top X + \lambda I)^{-1}$ by
# Sherman–Morrison, which `causal_online_ls` checks symbolically. Both are exact in exact arithmetic; in floating
# point, updating $P$ amplifies each rounding by the conditioning, the square root does not.
# (`benchmarks/bench_rls.py` runs the same on 10⁶ rows.)

# %%
stream = streaming_vs_batch(seed=0, rows=20_000)
print(f"after {stream['rows'][-1]} rows: square root {stream['square_root'][-1]:.1e}, "
      f"Sherman–Morrison {stream['sherman_morrison'][-1]:.1e} (relative to batch)")
assert max(stream["square_root"]) < 1e-11

# %% [markdown]
# ## k layers converge at the rate of the spectrum of $I - \Gamma X^\top X$
#
# With $\Gamma = \eta I$, $\eta = 1/\lambda_{\max}(X^\top X)$, the error of $k$ layers is
# $(I - \eta X^\top X)^k\hat\beta$: it decays like $\rho^k$, $\rho = 1 - \lambda_{\min}/\lambda_{\max}$. A better
# preconditioner — here the inverse of the population covariance, what a trained model could hold in its weights —
# makes $\rho$ small; $\Gamma = (X^\top X)^{-1}$ needs one layer.

# %%
layers = layers_convergence(seed=0)
ks = np.asarray(layers["layers"])
for run in layers["runs"]:
    errors = np.asarray(run["errors"])
    print(f"{run['label']}: spectral radius of I − ΓXᵀX {run['rho']:.3f}; error after {ks[10]} layers "
          f"{errors[10]:.1e}")
    assert (errors <= 2 * errors[0] * run["rho"] ** ks * np.sqrt(run["cond"]) + 1e-12).all()
print(f"Γ = (XᵀX)⁻¹, one layer: {layers['one_layer_exact']:.1e} from OLS (relative)")
assert layers["one_layer_exact"] < 1e-10

# %% [markdown]
# The three panels, as `derive reproduce` draws them (`beyond_the_paper.png`):

# %%
beyond_figure({"ridge": ridge, "streaming": stream, "layers": layers})
