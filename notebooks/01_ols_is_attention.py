# %% [markdown]
# # 01 — OLS is single-layer linear attention
#
# **What is proved.** Let $X$ be an $n\times p$ design matrix of full column rank, $Y$ the $n\times k$ targets and
# $X_q$ an $m\times p$ matrix of queries. Write the Gram matrix spectrally, $X^\top X = V\Lambda V^\top$ with $V$
# orthogonal and $\Lambda$ diagonal with positive entries, and set $L = V\Lambda^{-1/2}$. Then
#
# $$X_q (X^\top X)^{-1} X^\top Y = (X_q L)(X L)^\top Y,$$
#
# i.e. the OLS predictions are one forward pass of linear attention (no softmax) with queries $X_q L$, keys $X L$
# and values $Y$.
#
# This notebook
#
# 1. builds both sides as symbolic matrix terms with `derive.authoring.constructions`;
# 2. has the proof kernel (`derive.kernel.check`) check the theorem `ols_is_linear_attention`;
# 3. shows every checked proof step as LaTeX, with the rule the kernel verified beside it;
# 4. generates the NumPy module from the checked theorems (`derive.codegen`) and **measures** it against
#    `numpy.linalg.lstsq` on random data.

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
import dataclasses
import importlib.util
import tempfile

import numpy as np
from IPython.display import Markdown, Math, display
from sympy.matrices.expressions import MatrixSymbol

from derive.authoring.constructions import dim, linear_attention, ols_predictions, spectral_factor
from derive.codegen import REQUIRED_THEOREMS, numpy_module
from derive.kernel import ProofError, check
from derive.kernel.terms import mul
from derive.latex import math, theorem_latex
from derive.library import build

# %% [markdown]
# ## The two sides, as symbolic terms
#
# Dimensions are positive-integer symbols, matrices are SymPy `MatrixSymbol`s; `derive.latex.math` prints a term in
# the paper's notation.

# %%
n, p, m, k = dim("n"), dim("p"), dim("m"), dim("k")
X, Y, X_q = MatrixSymbol("X", n, p), MatrixSymbol("Y", n, k), MatrixSymbol("X_q", m, p)
V, Lam, L = MatrixSymbol("V", p, p), MatrixSymbol("Lambda", p, p), MatrixSymbol("L", p, p)

ols = ols_predictions(X_q, X, Y)  # X_q (XᵀX)⁻¹ XᵀY
attention = linear_attention(mul(X_q, L), mul(X, L), Y)  # queries X_q L, keys X L, values Y

display(Math(r"\text{OLS predictions:}\quad " + math(ols)))
display(Math(r"\text{linear attention:}\quad " + math(attention)))
display(Math(math(L) + " := " + math(spectral_factor(V, Lam))))

# %% [markdown]
# ## The kernel checks the proof
#
# `build` returns the proof as plain data (untrusted); only `check` turns it into a `Theorem`, after verifying that
# each step rewrites the previous expression at exactly one position by the rule it names. The checked claim is
# exactly the pair of terms built above. A proof with one wrong rule is rejected.

# %%
proof = build("ols_is_linear_attention")
theorem = check(proof)
assert theorem.proof.claim.lhs == ols and theorem.proof.claim.rhs == attention
assert any(d.symbol == L and d.rhs == spectral_factor(V, Lam) for d in theorem.proof.definitions)
print(f"{theorem.id}: {len(proof.lemmas)} lemmas + claim, {theorem.steps} steps, "
      f"checked in {theorem.seconds * 1000:.0f} ms; digest {theorem.digest[:16]}…")

# Soundness in action: cite the wrong rule in the last step of the claim.
steps = list(proof.claim.steps)
steps[-1] = dataclasses.replace(steps[-1], rule="inverse_cancel")
broken = dataclasses.replace(proof, claim=dataclasses.replace(proof.claim, steps=tuple(steps)))
try:
    check(broken)
except ProofError as error:
    print("rejected:", error)
else:
    raise AssertionError("the kernel accepted a wrong step")


# %% [markdown]
# ## Every proof step
#
# Chain by chain (lemmas first, then the claim): each line is one kernel step, `derive.latex.math(step.expr)`,
# with the rule it applies: a matrix-algebra axiom, `hyp:` a hypothesis, `def:` a definition, `lemma:` an earlier
# lemma of the same proof.

# %%
def rule_tex(rule: str) -> str:
    return r"\mathsf{" + rule.replace("_", r"\_").replace(":", r"{:}\,") + "}"


shown = 0
for chain in (*theorem.proof.lemmas, theorem.proof.claim):
    kind = "Claim" if chain is theorem.proof.claim else "Lemma"
    display(Markdown(f"**{kind} `{chain.name}`** — {len(chain.steps)} steps"))
    lines = []
    for index, step in enumerate(chain.steps):
        left = math(chain.lhs) if index == 0 else ""
        lines.append(f"{left} &= {math(step.expr)} && {rule_tex(step.rule)}")
    display(Math(r"\begin{aligned}" + r" \\ ".join(lines) + r"\end{aligned}"))
    assert chain.steps[-1].expr == chain.rhs
    shown += len(chain.steps)
assert shown == theorem.steps

# %% [markdown]
# ## The theorem
#
# A checked theorem shows itself as mathematics (`Theorem._repr_latex_`): hypotheses, definitions, claim. Below it,
# the LaTeX that `derive latex` writes for the article (`derive.latex.theorem_latex`).

# %%
display(theorem)

# %%
print(theorem_latex(theorem))

# %% [markdown]
# ## Code generated from the checked theorems
#
# `derive.codegen.numpy_module` prints the right-hand sides of checked route lemmas (e.g. `gram_route`:
# $X_q (X^\top X)^{-1}X^\top Y = X_q L L^\top X^\top Y$) as NumPy, folding products right to left so that no
# $n\times n$ or $m\times n$ matrix is formed. The module is written to a temporary directory and imported.

# %%
theorems = {theorem_id: check(build(theorem_id)) for theorem_id in REQUIRED_THEOREMS}
source = numpy_module(theorems)
with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "ols_attention.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("ols_attention", path)
    ols_attention = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ols_attention)

print(ols_attention.__doc__)
print("\n".join(line for line in source.splitlines() if line.strip().startswith("beta = ")))

# %% [markdown]
# ## Measured: the generated `predict` against `numpy.linalg.lstsq`
#
# Random data (seed 0): $n = 200$, $p = 6$, $k = 3$ targets, $m = 10$ queries. For every route of the module the
# largest elementwise relative difference to `lstsq` must be below $10^{-10}$. The attention view is checked too:
# the score matrix $(X_q L)(X L)^\top$ applied to $Y$, and the paper's weights $W_Q = W_K = W_V = L$.

# %%
rng = np.random.default_rng(0)
X_num, Y_num, Xq_num = rng.normal(size=(200, 6)), rng.normal(size=(200, 3)), rng.normal(size=(10, 6))
reference = Xq_num @ np.linalg.lstsq(X_num, Y_num, rcond=None)[0]

worst = {}
for route in ols_attention.ROUTES:
    got = ols_attention.predict(X_num, Y_num, Xq_num, route=route)
    worst[route] = float(np.max(np.abs(got - reference) / np.abs(reference)))
    print(f"route {route:9} max relative difference to lstsq: {worst[route]:.2e}")
    assert worst[route] < 1e-10, route

scores = ols_attention.attention_scores(X_num, Xq_num)  # (X_q L)(X L)ᵀ: m × n, for teaching only
W_Q, W_K, W_V, P = ols_attention.attention_parameters(X_num, Y_num)
np.testing.assert_allclose(scores @ Y_num, reference, rtol=1e-10)
np.testing.assert_allclose((Xq_num @ W_Q) @ (X_num @ W_K).T @ Y_num, reference, rtol=1e-10)
np.testing.assert_allclose(W_Q @ W_K.T, np.linalg.inv(X_num.T @ X_num), rtol=1e-10)
print("scores shape", scores.shape, "— attention with W_Q W_Kᵀ = (XᵀX)⁻¹ reproduces OLS")

# %% [markdown]
# ## The attention weights of OLS
#
# Row $i$ of the score matrix $(X_q L)(X L)^\top$ holds the weights with which query $i$ reads the values $y_j$ of the
# $n = 200$ training tokens: its prediction is $\sum_j s_{ij}\, y_j$, the OLS prediction. Linear attention has no
# softmax, so the weights need not be positive nor sum to one (the colour scale is symmetric about zero).

# %%
# %matplotlib inline
from matplotlib.figure import Figure

fig = Figure(figsize=(10, 3.2), dpi=110)
ax = fig.subplots()
bound = float(np.abs(scores).max())
image = ax.imshow(scores, aspect="auto", cmap="RdBu_r", vmin=-bound, vmax=bound, interpolation="nearest")
fig.colorbar(image, ax=ax, label="score $s_{ij}$")
ax.set(xlabel="training token $j$", ylabel="query $i$",
       title=r"OLS as attention: the scores $(X_qL)(XL)^\top$ of 10 queries over 200 tokens")
fig.tight_layout()
display(fig)
