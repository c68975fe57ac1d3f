# %% [markdown]
# # 03 — Training a linear transformer reaches OLS
#
# **What is trained.** The model predicts $\hat Y = X\,\Gamma\,X^\top Y$ with $\Gamma = w_v P\, W_Q W_K^\top$
# (query, key, value and output weights of one linear-attention layer) for $J = 64$ prompts at once. The data follow
# $y = 2x + \varepsilon$ on $n = 32$ points with an intercept; the prompts share $X$ and differ in the noise
# $\varepsilon$. Full-batch gradient descent minimises $\tfrac{1}{2nJ}\|Y - \hat Y\|^2$. Because the prompts
# differ in $\varepsilon$, the unique optimum is $\Gamma = (X^\top X)^{-1}$ (`preconditioned_gd`, the converse), so
# training should reach OLS.
#
# **What is measured**, per epoch: the loss above the OLS loss, the relative error of the learned slow memory
# $\|w_v P\,W_Q W_K^\top - (X^\top X)^{-1}\|_F / \|(X^\top X)^{-1}\|_F$, and the gap to OLS
# $\|\hat Y - HY\| / \|HY\|$ on the first prompt. Headline: the gap falls below $10^{-3}$ within 1000 epochs.

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
from IPython.display import Math, display
from sympy import Matrix, MatrixSymbol, lambdify, latex, symbols

from derive.experiments import TrainingConfig, train, training_gradients
from derive.experiments.figures import training_figure

# %%
config = TrainingConfig()  # seed 0
result = train(config)
history = result["history"]
print(config)
for key in ("learning_rate", "ols_loss", "final_loss", "epochs_to_tolerance", "final_relative_gap",
            "final_precision_error"):
    print(f"{key:22} {result[key]}")

# %% [markdown]
# The loss itself is almost flat: most of it is the noise no predictor removes (the OLS loss), so the first panel
# shows what training changes, the excess loss over OLS. The figure is drawn by
# `derive.experiments.figures.training_figure`, the same code `derive reproduce` uses for `training.png`.

# %%
print(f"loss: {history['loss'][0]:.6f} at epoch 1, {result['final_loss']:.6f} at the end; "
      f"OLS loss {result['ols_loss']:.6f}")
training_figure(result)

# %% [markdown]
# ## The gradients are derived symbolically
#
# `training_gradients(p)` writes the loss with explicit $p\times p$ weight matrices and lets SymPy differentiate it,
# then compiles loss and gradient with `lambdify` (with common-subexpression elimination). The loss depends on the
# data only through $S = X^\top X$, $M = X^\top Y\,Y^\top X$ and $s_{yy} = \operatorname{tr} Y^\top Y$:
#
# $$\mathcal L = \frac{\text{scale}}{2}\Big(s_{yy} - 2\operatorname{tr}(\Gamma M)
#   + \operatorname{tr}(\Gamma^\top S\,\Gamma M)\Big),
# \qquad \Gamma = w_v P\, W_Q W_K^\top,\quad \text{scale} = \tfrac{1}{nJ}.$$
#
# Below, the same derivation is written out for display: for $p = 1$ the loss and one gradient component are short
# enough to read; for $p = 2$ (the model trained above) the symbolic component is evaluated and compared with the
# compiled gradient and with a finite difference.

# %%
def symbolic_loss(p):
    """The loss of training_gradients(p), as a SymPy expression in explicit weights."""
    W_Q = Matrix(p, p, symbols(f"q0:{p * p}"))
    W_K = Matrix(p, p, symbols(f"k0:{p * p}"))
    w_v, P, s_yy, scale = symbols("w_v P s_yy scale")
    S, M = MatrixSymbol("S", p, p), MatrixSymbol("M", p, p)
    S_e, M_e = S.as_explicit(), M.as_explicit()
    A = w_v * P * W_Q * W_K.T  # the effective preconditioner Γ
    loss = scale * (s_yy - 2 * (A * M_e).trace() + (A.T * S_e * A * M_e).trace()) / 2
    return loss, [*W_Q, *W_K, w_v, P], (S, M, s_yy, scale)


loss_1, theta_1, _ = symbolic_loss(1)
w_v = theta_1[-2]
display(Math(r"p = 1:\quad \mathcal L = " + latex(loss_1)))
display(Math(r"\frac{\partial \mathcal L}{\partial w_v} = " + latex(loss_1.diff(w_v).expand())))

# %%
loss_2, theta_2, (S_sym, M_sym, s_yy, scale) = symbolic_loss(2)
component = loss_2.diff(theta_2[-2])  # ∂L/∂w_v for p = 2
print(f"p = 2: ∂L/∂w_v has {component.count_ops()} operations before cse")
dwv = lambdify((theta_2, S_sym, M_sym, s_yy, scale), component, modules="numpy")

rng = np.random.default_rng(1)
Xd, Yd = rng.normal(size=(10, 2)), rng.normal(size=(10, 3))
S_num, XtY = Xd.T @ Xd, Xd.T @ Yd
M_num, syy_num, scale_num = XtY @ XtY.T, float(np.sum(Yd * Yd)), 1 / 30
theta = rng.normal(size=10)
_, compiled = training_gradients(2)(theta, S_num, M_num, syy_num, scale_num)


def numeric_loss(t):
    A = t[8] * t[9] * t[:4].reshape(2, 2) @ t[4:8].reshape(2, 2).T
    return 0.5 * scale_num * float(np.sum((Yd - Xd @ A @ XtY) ** 2))


h = 1e-6
finite = (numeric_loss(theta + h * np.eye(10)[8]) - numeric_loss(theta - h * np.eye(10)[8])) / (2 * h)
symbolic = float(dwv(theta, S_num, M_num, syy_num, scale_num))
print(f"∂L/∂w_v: symbolic {symbolic:.10f}  compiled {float(compiled[8]):.10f}  finite difference {finite:.10f}")
assert abs(symbolic - float(compiled[8])) <= 1e-10 * max(1.0, abs(symbolic))
assert abs(symbolic - finite) <= 1e-6 * max(1.0, abs(symbolic))

# %% [markdown]
# ## Headline numbers

# %%
print(f"gap ≤ {config.tolerance:g} at epoch {result['epochs_to_tolerance']}; "
      f"final gap {result['final_relative_gap']:.2e}; final slow-memory error {result['final_precision_error']:.2e}")
assert result["epochs_to_tolerance"] is not None and result["epochs_to_tolerance"] <= 1000
assert result["final_relative_gap"] <= 1e-3
assert abs(result["final_loss"] - result["ols_loss"]) <= 1e-6 * result["ols_loss"]  # the OLS loss is reached
