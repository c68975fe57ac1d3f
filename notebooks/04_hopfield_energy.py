# %% [markdown]
# # 04 — Hopfield energies: linear attention is the classical update, softmax the modern one
#
# Store patterns $x_1, \dots, x_N \in \{\pm 1\}^d$ as the rows of $X$ and retrieve from a noisy query $\xi$.
#
# * **Classical (quadratic) energy** $E(\xi) = -\tfrac12\,\xi^\top X^\top X\,\xi$. Its update follows
#   $-\nabla E = X^\top (X\xi)$: **linear attention** with query $\xi$ and keys = values = the stored patterns
#   (scores $X\xi$, no normalisation). Its capacity grows slowly with $d$: for the strict criterion below (every
#   sign right after one update) the classical estimate is about $d/(2\ln d)$ patterns, close to linear.
# * **Modern (log-sum-exp) energy** $E(\xi) = -\beta^{-1}\log\sum_i \exp(\beta\, x_i^\top\xi) + \tfrac12\,\xi^\top\xi$.
#   The concave–convex step sets $\nabla(\tfrac12\xi^\top\xi) = -\nabla(-\mathrm{lse})$, i.e.
#   $\xi \leftarrow X^\top \operatorname{softmax}(\beta X\xi)$: **softmax attention**. Its capacity grows
#   exponentially in $d$.
#
# Both update rules are derived by SymPy from the energies (`derive.experiments.hopfield_updates`, shown here for 3
# patterns in 2 dimensions). **Measured:** the share of noisy queries ($d/8$ of the signs flipped) that one update
# maps exactly back onto the stored pattern, against the number of stored random patterns; the capacity is the
# largest count up to which retrieval succeeds for at least 99% of the queries, measured several times per $d$ with
# independent patterns. A straight line is fitted to the linear capacity against $d$, and a straight line to
# $\log_2$ of the softmax capacity (exponential growth), each with a 95% confidence interval for its slope.

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

from IPython.display import Math, display
from sympy import Matrix, latex, simplify, symbols

from derive.experiments import QUICK_CAPACITY, hopfield_capacity, hopfield_updates
from derive.experiments.figures import capacity_figure, hopfield_figure

# %%
updates = hopfield_updates(patterns=3, dim=2)
X = Matrix(3, 2, symbols("x0:6"))  # the same symbols hopfield_updates uses
xi = Matrix(2, 1, symbols("xi0:2"))

display(Math(r"E_{\text{classical}}(\xi) = " + latex(updates["classical_energy"])))
display(Math(r"-\nabla E_{\text{classical}} = " + latex(updates["classical_update"].expand()) + r" = X^\top (X\xi)"))
display(Math(r"E_{\text{modern}}(\xi) = " + latex(updates["modern_energy"])))
display(Math(r"\xi^{\text{new}} = \nabla\,\mathrm{lse} = " + latex(updates["modern_update"])))
display(Math(r"\operatorname{softmax}(\beta X\xi) = " + latex(updates["softmax"])))

# The derivations agree with the attention forms (hopfield_updates asserts this too).
assert simplify(updates["classical_update"] - X.T * (X * xi)) == Matrix.zeros(2, 1)  # linear attention
assert simplify(updates["modern_update"] - X.T * updates["softmax"]) == Matrix.zeros(2, 1)  # softmax attention

# %% [markdown]
# ## Capacity: linear against softmax attention
#
# Kept quick for the notebook (`QUICK_CAPACITY`, a few seconds): linear attention for $d$ from 8 to 128,
# softmax attention for $d$ from 8 to 32, 3 repeats, 300 queries per count, up to 4096 patterns, $\beta = 1$,
# seed 0. `derive reproduce` runs the full `CapacityConfig()`: linear up to $d = 512$, softmax up to $d = 40$,
# 5 repeats, 1000 queries. The figures come from `derive.experiments.figures`, the code `derive reproduce` uses.

# %%
start = time.perf_counter()
capacity = hopfield_capacity(QUICK_CAPACITY)
print(f"ran in {time.perf_counter() - start:.1f} s")
for kind in ("linear", "softmax"):
    print(f"{kind:8} capacity by dimension (each repeat): {capacity[kind]['capacity']}")

# %%
hopfield_figure(capacity)

# %%
capacity_figure(capacity)

# %%
linear, softmax = capacity["linear"], capacity["softmax"]
lo, hi = linear["fit"]["slope_ci"]
print(f"linear attention: capacity ≈ {linear['fit']['slope']:.3f}·d + {linear['fit']['intercept']:.2f} "
      f"(slope 95% CI {lo:.3f} to {hi:.3f} patterns per dimension, R² = {linear['fit']['r_squared']:.2f})")
lo2, hi2 = softmax["fit"]["slope_ci"]
print(f"softmax attention: log2 capacity ≈ {softmax['fit']['slope']:.2f}·d {softmax['fit']['intercept']:+.2f} "
      f"(slope 95% CI {lo2:.2f} to {hi2:.2f} doublings per dimension)")
d = max(softmax["dims"])
print(f"d = {d}: softmax capacity {softmax['mean'][d]:.0f} vs linear {linear['mean'][d]:.1f} (means over repeats)")
assert lo > 0, "the linear capacity must grow with d"
assert lo2 > 0, "the softmax capacity must grow exponentially with d"
assert softmax["mean"][d] >= 50 * linear["mean"][d]
assert linear["mean"][max(linear["dims"])] >= 2 * linear["mean"][min(linear["dims"])]
assert softmax["lower_bounds"] == 0  # no capacity reached the end of the grid: the fit uses every repeat
