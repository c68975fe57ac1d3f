"""Write the six notebooks of notebooks/ with nbformat v4: stripped, deterministic cell ids."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "notebooks")

SETUP = r'''import sys
from pathlib import Path

# The repository root: the first folder above the working directory that holds derive/kernel/__init__.py.
ROOT = next((p for p in (Path.cwd(), *Path.cwd().parents) if (p / "derive" / "kernel" / "__init__.py").is_file()), None)
try:
    import derive
except ImportError:  # not installed: import the package from this checkout
    if ROOT is None:
        raise RuntimeError("run this notebook from the ols-transformer checkout, or pip install it") from None
    sys.path.insert(0, str(ROOT))
    import derive
print(f"derive {derive.__version__} from {Path(derive.__file__).parent}")'''


def notebook(name: str, cells: list[tuple[str, str]]) -> None:
    nb = new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    md = code = 0
    for kind, source in cells:
        source = source.strip("\n")
        if kind == "md":
            md += 1
            nb.cells.append(new_markdown_cell(source, id=f"m{md:02d}"))
        else:
            code += 1
            nb.cells.append(new_code_cell(source, id=f"c{code:02d}"))
    nbformat.validate(nb)
    OUT.mkdir(exist_ok=True)
    with open(OUT / name, "w", encoding="utf-8", newline="\n") as handle:
        nbformat.write(nb, handle)


# --- 01 ---------------------------------------------------------------------------------

notebook("01_ols_is_attention.ipynb", [
    ("md", r'''
# 01 — OLS is single-layer linear attention

**What is proved.** Let $X$ be an $n\times p$ design matrix of full column rank, $Y$ the $n\times k$ targets and
$X_q$ an $m\times p$ matrix of queries. Write the Gram matrix spectrally, $X^\top X = V\Lambda V^\top$ with $V$
orthogonal and $\Lambda$ diagonal with positive entries, and set $L = V\Lambda^{-1/2}$. Then

$$X_q (X^\top X)^{-1} X^\top Y = (X_q L)(X L)^\top Y,$$

i.e. the OLS predictions are one forward pass of linear attention (no softmax) with queries $X_q L$, keys $X L$
and values $Y$.

This notebook

1. builds both sides as symbolic matrix terms with `derive.authoring.constructions`;
2. has the proof kernel (`derive.kernel.check`) check the theorem `ols_is_linear_attention`;
3. shows every checked proof step as LaTeX, with the rule the kernel verified beside it;
4. generates the NumPy module from the checked theorems (`derive.codegen`) and **measures** it against
   `numpy.linalg.lstsq` on random data.
'''),
    ("code", SETUP),
    ("code", r'''
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
'''),
    ("md", r'''
## The two sides, as symbolic terms

Dimensions are positive-integer symbols, matrices are SymPy `MatrixSymbol`s; `derive.latex.math` prints a term in
the paper's notation.
'''),
    ("code", r'''
n, p, m, k = dim("n"), dim("p"), dim("m"), dim("k")
X, Y, X_q = MatrixSymbol("X", n, p), MatrixSymbol("Y", n, k), MatrixSymbol("X_q", m, p)
V, Lam, L = MatrixSymbol("V", p, p), MatrixSymbol("Lambda", p, p), MatrixSymbol("L", p, p)

ols = ols_predictions(X_q, X, Y)  # X_q (XᵀX)⁻¹ XᵀY
attention = linear_attention(mul(X_q, L), mul(X, L), Y)  # queries X_q L, keys X L, values Y

display(Math(r"\text{OLS predictions:}\quad " + math(ols)))
display(Math(r"\text{linear attention:}\quad " + math(attention)))
display(Math(math(L) + " := " + math(spectral_factor(V, Lam))))
'''),
    ("md", r'''
## The kernel checks the proof

`build` returns the proof as plain data (untrusted); only `check` turns it into a `Theorem`, after verifying that
each step rewrites the previous expression at exactly one position by the rule it names. The checked claim is
exactly the pair of terms built above. A proof with one wrong rule is rejected.
'''),
    ("code", r'''
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
'''),
    ("md", r'''
## Every proof step

Chain by chain (lemmas first, then the claim): each line is one kernel step, `derive.latex.math(step.expr)`,
with the rule it applies: a matrix-algebra axiom, `hyp:` a hypothesis, `def:` a definition, `lemma:` an earlier
lemma of the same proof.
'''),
    ("code", r'''
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
'''),
    ("md", r'''
## The theorem

A checked theorem shows itself as mathematics (`Theorem._repr_latex_`): hypotheses, definitions, claim. Below it,
the LaTeX that `derive latex` writes for the article (`derive.latex.theorem_latex`).
'''),
    ("code", r'''
theorem
'''),
    ("code", r'''
print(theorem_latex(theorem))
'''),
    ("md", r'''
## Code generated from the checked theorems

`derive.codegen.numpy_module` prints the right-hand sides of checked route lemmas (e.g. `gram_route`:
$X_q (X^\top X)^{-1}X^\top Y = X_q L L^\top X^\top Y$) as NumPy, folding products right to left so that no
$n\times n$ or $m\times n$ matrix is formed. The module is written to a temporary directory and imported.
'''),
    ("code", r'''
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
'''),
    ("md", r'''
## Measured: the generated `predict` against `numpy.linalg.lstsq`

Random data (seed 0): $n = 200$, $p = 6$, $k = 3$ targets, $m = 10$ queries. For every route of the module the
largest elementwise relative difference to `lstsq` must be below $10^{-10}$. The attention view is checked too:
the score matrix $(X_q L)(X L)^\top$ applied to $Y$, and the paper's weights $W_Q = W_K = W_V = L$.
'''),
    ("code", r'''
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
'''),
])


# --- 02 ---------------------------------------------------------------------------------

notebook("02_gauge_and_gradient_descent.ipynb", [
    ("md", r'''
# 02 — Gauge freedom, preconditioned gradient descent, slow and fast memory

Three checked theorems and their numerical counterparts:

* **`gauge_invariance`** — attention depends on $W_Q, W_K$ only through $W_Q W_K^\top$:
  $(X_q W_Q)(X W_K)^\top Y = X_q (W_Q W_K^\top) X^\top Y$. So *any* factor $L$ with $L L^\top = (X^\top X)^{-1}$
  gives OLS: eigendecomposition ($L = V\Lambda^{-1/2}$), SVD ($L = V S^{-1}$, then $X L = U$), QR ($L = R^{-1}$,
  then $X L = Q$), Cholesky ($X^\top X = C C^\top$, $L = C^{-\top}$).
* **`preconditioned_gd`** — with $W_Q W_K^\top = \Gamma$, linear attention is one step of $\Gamma$-preconditioned
  gradient descent on $\tfrac12\|Y - X\beta\|^2$ from $\beta_0 = 0$; the step is OLS if and only if
  $\Gamma = (X^\top X)^{-1}$.
* **`slow_fast_memory`** — the prediction is $X_q M S$ with the slow memory $M = L L^\top$ (weights) and the fast
  memory $S = X^\top Y = \sum_i x_i y_i^\top$, written one example at a time: $S_t = S_{t-1} + x_t y_t^\top$.

**Measured:** the four factors on random data (all must satisfy $LL^\top = (X^\top X)^{-1}$ and reproduce OLS to
$10^{-10}$), one GD step with the right and with wrong preconditioners, and the rank-one writes.
'''),
    ("code", SETUP),
    ("code", r'''
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
'''),
    ("md", r'''
## Gauge invariance

The kernel checks the theorem, including one lemma per factorisation (the routes of the generated code).
'''),
    ("code", r'''
gauge = check(build("gauge_invariance"))
display(gauge)
for name in ("any_factor", "svd_whitens", "svd_precision", "qr_whitens", "qr_precision", "cholesky_route"):
    show_lemma(gauge, name)
'''),
    ("md", r'''
Numerically: a correlated random design (seed 0), $n = 80$, $p = 5$, $k = 2$, $m = 6$ queries. Each factor is built
from its own decomposition; we measure $\|LL^\top - (X^\top X)^{-1}\|/\|(X^\top X)^{-1}\|$ and the relative
difference of $(X_q L)(X L)^\top Y$ to the `lstsq` predictions.
'''),
    ("code", r'''
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
'''),
    ("md", r'''
## One step of preconditioned gradient descent

The gradient of $\tfrac12\|Y - X\beta\|^2$ is $X^\top(X\beta - Y)$; one step from $\beta_0 = 0$ with preconditioner
$\Gamma$ gives $\beta_1 = \Gamma X^\top Y$, and predicting with it is linear attention with $W_Q W_K^\top = \Gamma$.
The lemma `ols_only_if` is the converse: if the step is OLS for every target, then $\Gamma = (X^\top X)^{-1}$.
'''),
    ("code", r'''
gd = check(build("preconditioned_gd"))
display(gd)
show_lemma(gd, "ols_if")
show_lemma(gd, "ols_only_if")
'''),
    ("code", r'''
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
while relative(beta, beta_ols) > 1e-10 and steps < 1_000_000:
    beta, steps = beta - eta * X.T @ (X @ beta - Y), steps + 1
assert relative(beta, beta_ols) <= 1e-10
print(f"plain GD with step 1/λ_max reaches OLS to 1e-10 after {steps} steps")
'''),
    ("md", r'''
## Slow and fast memory

The weights hold the slow memory $M = LL^\top$ (it depends on neither the query nor $Y$); attention accumulates
the fast memory $S = X^\top Y$ by one rank-one write per example.
'''),
    ("code", r'''
memory = check(build("slow_fast_memory"))
display(memory)
show_lemma(memory, "rank_one_write")
'''),
    ("code", r'''
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
'''),
])


# --- 03 ---------------------------------------------------------------------------------

notebook("03_training_reaches_ols.ipynb", [
    ("md", r'''
# 03 — Training a linear transformer reaches OLS

**What is trained.** The model predicts $\hat Y = X\,\Gamma\,X^\top Y$ with $\Gamma = w_v P\, W_Q W_K^\top$
(query, key, value and output weights of one linear-attention layer) for $J = 64$ prompts at once. The data follow
$y = 2x + \varepsilon$ on $n = 32$ points with an intercept; the prompts share $X$ and differ in the noise
$\varepsilon$. Full-batch gradient descent minimises $\tfrac{1}{2nJ}\|Y - \hat Y\|^2$. Because the prompts
differ in $\varepsilon$, the unique optimum is $\Gamma = (X^\top X)^{-1}$ (`preconditioned_gd`, the converse), so
training should reach OLS.

**What is measured**, per epoch: the loss, the relative error of the learned slow memory
$\|w_v P\,W_Q W_K^\top - (X^\top X)^{-1}\|_F / \|(X^\top X)^{-1}\|_F$, and the gap to OLS
$\|\hat Y - HY\| / \|HY\|$ on the first prompt. Headline: the gap falls below $10^{-3}$ within 1000 epochs.
'''),
    ("code", SETUP),
    ("code", r'''
%matplotlib inline
import matplotlib.pyplot as plt
import numpy as np
from IPython.display import Math, display
from sympy import Matrix, MatrixSymbol, lambdify, latex, symbols

from derive.experiments import TrainingConfig, train, training_gradients
'''),
    ("code", r'''
config = TrainingConfig()  # seed 0
result = train(config)
history = result["history"]
print(config)
for key in ("learning_rate", "ols_loss", "final_loss", "epochs_to_tolerance", "final_relative_gap",
            "final_precision_error"):
    print(f"{key:22} {result[key]}")
'''),
    ("code", r'''
epochs = history["epoch"]
fig, axes = plt.subplots(1, 3, figsize=(14, 4))
axes[0].semilogy(epochs, history["loss"], label="linear transformer")
axes[0].axhline(result["ols_loss"], color="k", ls="--", label="OLS loss")
axes[0].set(xlabel="epoch", ylabel="training loss  ‖Y − Ŷ‖² / (2nJ)", title="Loss")
axes[1].semilogy(epochs, history["precision_error"], color="C1", label=r"relative error of $w_vP\,W_QW_K^\top$")
axes[1].set(xlabel="epoch", ylabel=r"$\|w_vP\,W_QW_K^\top-(X^\top X)^{-1}\|_F\,/\,\|(X^\top X)^{-1}\|_F$",
            title="Slow memory vs precision matrix")
axes[2].semilogy(epochs, history["prediction_gap"], color="C2", label="relative gap to OLS")
axes[2].axhline(config.tolerance, color="k", ls=":", label=f"tolerance {config.tolerance:g}")
axes[2].axvline(result["epochs_to_tolerance"], color="C3", ls="--",
                label=f"reached at epoch {result['epochs_to_tolerance']}")
axes[2].set(xlabel="epoch", ylabel=r"$\|\hat Y - HY\| / \|HY\|$", title="Prediction gap")
for ax in axes:
    ax.grid(alpha=0.3)
    ax.legend()
fig.tight_layout()
plt.show()
'''),
    ("md", r'''
## The gradients are derived symbolically

`training_gradients(p)` writes the loss with explicit $p\times p$ weight matrices and lets SymPy differentiate it,
then compiles loss and gradient with `lambdify` (with common-subexpression elimination). The loss depends on the
data only through $S = X^\top X$, $M = X^\top Y\,Y^\top X$ and $s_{yy} = \operatorname{tr} Y^\top Y$:

$$\mathcal L = \frac{\text{scale}}{2}\Big(s_{yy} - 2\operatorname{tr}(\Gamma M) + \operatorname{tr}(\Gamma^\top S\,\Gamma M)\Big),
\qquad \Gamma = w_v P\, W_Q W_K^\top,\quad \text{scale} = \tfrac{1}{nJ}.$$

Below, the same derivation is written out for display: for $p = 1$ the loss and one gradient component are short
enough to read; for $p = 2$ (the model trained above) the symbolic component is evaluated and compared with the
compiled gradient and with a finite difference.
'''),
    ("code", r'''
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
'''),
    ("code", r'''
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
'''),
    ("md", r'''
## Headline numbers
'''),
    ("code", r'''
print(f"gap ≤ {config.tolerance:g} at epoch {result['epochs_to_tolerance']}; "
      f"final gap {result['final_relative_gap']:.2e}; final slow-memory error {result['final_precision_error']:.2e}")
assert result["epochs_to_tolerance"] is not None and result["epochs_to_tolerance"] <= 1000
assert result["final_relative_gap"] <= 1e-3
assert abs(result["final_loss"] - result["ols_loss"]) <= 1e-6 * result["ols_loss"]  # the OLS loss is reached
'''),
])


# --- 04 ---------------------------------------------------------------------------------

notebook("04_hopfield_energy.ipynb", [
    ("md", r'''
# 04 — Hopfield energies: linear attention is the classical update, softmax the modern one

Store patterns $x_1, \dots, x_N \in \{\pm 1\}^d$ as the rows of $X$ and retrieve from a noisy query $\xi$.

* **Classical (quadratic) energy** $E(\xi) = -\tfrac12\,\xi^\top X^\top X\,\xi$. Its update follows
  $-\nabla E = X^\top (X\xi)$: **linear attention** with query $\xi$ and keys = values = the stored patterns
  (scores $X\xi$, no normalisation). Its capacity grows at most linearly in $d$ (the classical estimate is
  about $0.14\,d$ patterns; the strict criterion below gives even fewer).
* **Modern (log-sum-exp) energy** $E(\xi) = -\beta^{-1}\log\sum_i \exp(\beta\, x_i^\top\xi) + \tfrac12\,\xi^\top\xi$.
  The concave–convex step sets $\nabla(\tfrac12\xi^\top\xi) = -\nabla(-\mathrm{lse})$, i.e.
  $\xi \leftarrow X^\top \operatorname{softmax}(\beta X\xi)$: **softmax attention**. Its capacity grows
  exponentially in $d$.

Both update rules are derived by SymPy from the energies (`derive.experiments.hopfield_updates`, shown here for 3
patterns in 2 dimensions). **Measured:** the share of noisy queries (10% of the signs flipped) that one update maps
exactly back onto the stored pattern, against the number of stored random patterns, for $d = 8, 16, 24$; the
capacity is the largest count up to which retrieval succeeds for at least 99% of the queries.
'''),
    ("code", SETUP),
    ("code", r'''
%matplotlib inline
import time

import matplotlib.pyplot as plt
from IPython.display import Math, display
from sympy import Matrix, latex, simplify, symbols

from derive.experiments import hopfield_capacity, hopfield_updates
'''),
    ("code", r'''
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
'''),
    ("md", r'''
## Capacity: linear against softmax attention

Kept quick for the notebook: $d \in \{8, 16, 24\}$, up to 4096 stored patterns (a grid of powers of $\sqrt 2$),
200 noisy queries per point, $\beta = 1$, seed 0.
'''),
    ("code", r'''
start = time.perf_counter()
capacity = hopfield_capacity(dims=(8, 16, 24), max_patterns=4096)
print(f"ran in {time.perf_counter() - start:.1f} s")
for kind in ("linear", "softmax"):
    print(f"{kind:8} capacity by dimension: {capacity['capacity'][kind]}")
'''),
    ("code", r'''
titles = {"linear": "Linear attention (classical energy)", "softmax": "Softmax attention (modern energy)"}
fig, axes = plt.subplots(1, 2, figsize=(12, 4), sharey=True)
for kind, ax in zip(("linear", "softmax"), axes, strict=True):
    for d in capacity["dims"]:
        counts, rates = capacity["curves"][kind][d]
        ax.semilogx(counts, rates, marker=".", label=f"d = {d}")
    ax.axhline(capacity["threshold"], color="k", ls=":", lw=0.8, label=f"threshold {capacity['threshold']:g}")
    ax.set(xlabel="stored patterns N", ylabel="retrieval success (share of queries)", title=titles[kind])
    ax.grid(alpha=0.3)
    ax.legend()
fig.tight_layout()
plt.show()

dims = capacity["dims"]
fig, ax = plt.subplots(figsize=(6, 4))
ax.semilogy(dims, [capacity["capacity"]["linear"][d] for d in dims], marker="o", label="linear attention")
ax.semilogy(dims, [capacity["capacity"]["softmax"][d] for d in dims], marker="s", label="softmax attention")
ax.set(xlabel="pattern dimension d", ylabel="capacity (patterns at ≥ 99% success)",
       title="Capacity: linear vs exponential growth")
ax.grid(alpha=0.3)
ax.legend()
fig.tight_layout()
plt.show()
'''),
    ("code", r'''
linear, softmax = capacity["capacity"]["linear"], capacity["capacity"]["softmax"]
print(f"d = 24: softmax capacity {softmax[24]} vs linear {linear[24]} ({softmax[24] / linear[24]:.0f}×)"
      + (" (a lower bound: the grid ended)" if capacity["softmax_capacity_is_lower_bound"] else ""))
assert softmax[24] >= 50 * linear[24]
assert all(linear[d] <= d for d in dims)  # classical: at most a fraction of d
'''),
])


# --- 05 ---------------------------------------------------------------------------------

notebook("05_distribution_shift.ipynb", [
    ("md", r'''
# 05 — Distribution shift: frozen weights against refitting

A trained OLS transformer holds the slow memory $\Gamma \approx (X^\top X)^{-1}$ *of its training distribution*
in its weights. With training covariance $I$ that is the population precision $\Gamma = (nI)^{-1}$. At test time
the prompts drift: $x \sim \mathcal N(0, \Sigma_s)$ with $\Sigma_s = R\,\operatorname{diag}(e^{s u})R^\top$, $u$
spread over $[-1, 1]$ and a fixed rotation $R$; $y = x^\top w + \varepsilon$ with a fresh $w \sim \mathcal N(0, I)$
per prompt and noise $\sigma = 0.1$.

Three predictors (`derive.experiments.distribution_shift`):

* **frozen weights** — one forward pass $X_q\,\Gamma X^\top Y$ with the frozen $\Gamma$;
* **frozen weights, two GD steps** — a second preconditioned step with the same $\Gamma$;
* **refitting** — $\Gamma = (X^\top X)^{-1}$ recomputed per prompt, i.e. OLS (what the attention form computes when
  the slow memory matches the prompt).

**Measured:** mean squared prediction error against the noise-free truth, for shifts $s$ from 0 to 3
(500 prompts per shift, seed 0). For Gaussian designs the refit error is independent of $\Sigma_s$:
$\sigma^2\,\mathbb E[x_q^\top (X^\top X)^{-1} x_q] = \sigma^2 p/(n - p - 1)$, the noise floor.
'''),
    ("code", SETUP),
    ("code", r'''
%matplotlib inline
import matplotlib.pyplot as plt
import numpy as np

from derive.experiments import distribution_shift
'''),
    ("code", r'''
shift = distribution_shift(prompts=500)
floor = shift["noise"] ** 2 * shift["p"] / (shift["n"] - shift["p"] - 1)
print(f"p = {shift['p']}, n = {shift['n']}, prompts = {shift['prompts']}, noise floor σ²p/(n−p−1) = {floor:.2e}")
print(f"{'shift':>6} {'frozen':>12} {'two steps':>12} {'refit':>12}")
for row in zip(shift["shifts"], shift["fixed_mse"], shift["two_step_mse"], shift["refit_mse"], strict=True):
    print("{:6.2f} {:12.3e} {:12.3e} {:12.3e}".format(*row))
'''),
    ("code", r'''
fig, ax = plt.subplots(figsize=(7, 4.5))
ax.semilogy(shift["shifts"], shift["fixed_mse"], marker="o", label="frozen weights (one pass)")
ax.semilogy(shift["shifts"], shift["two_step_mse"], marker="^", label="frozen weights, two GD steps")
ax.semilogy(shift["shifts"], shift["refit_mse"], marker="s", label="refit (OLS per prompt)")
ax.axhline(floor, color="k", ls=":", label=r"noise floor $\sigma^2 p/(n-p-1)$")
ax.set(xlabel="covariance shift s (log-eigenvalue spread)", ylabel="prediction MSE vs noise-free truth",
       title="Distribution shift")
ax.grid(alpha=0.3)
ax.legend()
fig.tight_layout()
plt.show()
'''),
    ("md", r'''
The frozen $\Gamma$ is only right on average for the training distribution, so even at $s = 0$ it is worse than
refitting, and its error grows steadily with the shift. A second GD step with the frozen $\Gamma$ helps while
$\Gamma X^\top X$ is close to $I$, but multiplies the error by $I - \Gamma X^\top X$, whose eigenvalues
$\approx 1 - e^{s u}$ exceed 1 in magnitude once $e^{s u} > 2$: at large shifts the extra step diverges. Refitting
stays at the noise floor for every shift.
'''),
    ("code", r'''
fixed, refit = np.array(shift["fixed_mse"]), np.array(shift["refit_mse"])
assert np.all(np.diff(fixed) > 0), "the frozen-weight error must grow with the shift"
assert fixed[-1] > 100 * fixed[0]
assert refit.max() < 2 * refit.min() and refit.max() < 0.01  # refitting stays at the noise floor
assert np.all(np.abs(refit / floor - 1) < 0.2)  # ... which is σ²p/(n−p−1)
print(f"frozen: ×{fixed[-1] / fixed[0]:.0f} from s = 0 to s = {shift['shifts'][-1]}; "
      f"refit within {100 * np.max(np.abs(refit / floor - 1)):.0f}% of the noise floor")
'''),
])


# --- 06 ---------------------------------------------------------------------------------

notebook("06_nist_accuracy.ipynb", [
    ("md", r'''
# 06 — Accuracy on the NIST StRD linear least-squares problems

The NIST Statistical Reference Datasets (StRD) give certified OLS coefficients to 15 significant digits for
problems from easy (Norris, NoInt1/2) to severely ill-conditioned (Longley, Wampler 1–5 polynomial fits, Pontius).
Accuracy is the **log relative error** (LRE), the number of correct significant digits,

$$\mathrm{LRE} = \min_j\Big(-\log_{10}\frac{|\hat\beta_j - \beta_j|}{|\beta_j|}\Big)\ \text{clipped to } [0, 15],$$

($|\hat\beta_j - \beta_j|$ alone when $\beta_j = 0$), computed by `derive.experiments.nist.lre`, the same function the tests and the benchmark use.

**Measured** for: `numpy.linalg.lstsq`; SciPy's `gelsy` and `gelsd`; the normal equations
$(X^\top X)^{-1}X^\top y$ by `numpy.linalg.solve`; the generated NumPy module's routes `auto`, `eigh`, `svd`, `qr`
(code printed from the checked theorems); and the generated mpmath module on the data as decimal strings at 50
digits. Headline: the generated `auto` route is at least as accurate as `gelsy` on every set, and mpmath gives at
least 13.5 digits everywhere.

The data file lies beside the checkout: `../shared/data/nist_strd_lls.json` relative to the repository root.
'''),
    ("code", SETUP),
    ("code", r'''
%matplotlib inline
import importlib.util
import json
import tempfile

import matplotlib.pyplot as plt
import numpy as np
import scipy.linalg
from IPython.display import Markdown, display

from derive.codegen import REQUIRED_THEOREMS, mpmath_module, numpy_module
from derive.experiments.nist import design, design_text, lre  # the same helpers as the tests and the benchmark
from derive.kernel import check
from derive.library import build
'''),
    ("code", r'''
if ROOT is None:
    raise RuntimeError("run this notebook from inside the ols-transformer checkout (its data path is relative)")
NIST = (ROOT / ".." / "shared" / "data" / "nist_strd_lls.json").resolve()
if not NIST.is_file():
    raise FileNotFoundError(f"{NIST} is missing: the NIST StRD data must lie beside the checkout")
data = json.loads(NIST.read_text(encoding="utf-8"))
datasets = data["datasets"]
print(data["source"])
for dataset in datasets:
    print(f"  {dataset['name']:9} {dataset['difficulty']:8} n = {len(dataset['y']):3}  {dataset['model']}")
'''),
    ("code", r'''
def load(name, source, folder):
    path = Path(folder) / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


theorems = {theorem_id: check(build(theorem_id)) for theorem_id in REQUIRED_THEOREMS}
with tempfile.TemporaryDirectory() as tmp:
    ols_attention = load("ols_attention", numpy_module(theorems), tmp)
    ols_attention_mp = load("ols_attention_mp", mpmath_module(theorems), tmp)
'''),
    ("code", r'''
def normal_equations(X, y):
    try:
        return np.linalg.solve(X.T @ X, X.T @ y)
    except np.linalg.LinAlgError:  # XᵀX singular in floating point: no digits
        return np.full(X.shape[1], np.nan)


def mpmath_50_digits(dataset):
    X_text, y_text = design_text(dataset)
    beta = ols_attention_mp.coefficients(X_text, y_text, dps=50)
    return [float(beta[i, 0]) for i in range(beta.rows)]


methods = {
    "numpy lstsq": lambda X, y, d: np.linalg.lstsq(X, y, rcond=None)[0],
    "scipy gelsy": lambda X, y, d: scipy.linalg.lstsq(X, y, lapack_driver="gelsy")[0],
    "scipy gelsd": lambda X, y, d: scipy.linalg.lstsq(X, y, lapack_driver="gelsd")[0],
    "normal equations": lambda X, y, d: normal_equations(X, y),
    **{f"generated {route}": (lambda X, y, d, route=route: ols_attention.coefficients(X, y, route=route))
       for route in ("auto", "eigh", "svd", "qr")},
    "generated mpmath (dps=50)": lambda X, y, d: mpmath_50_digits(d),
}

table = {}
for dataset in datasets:
    X, y = design(dataset)
    certified = dataset["certified"]["beta"]
    with np.errstate(all="ignore"):
        table[dataset["name"]] = {name: lre(method(X, y, dataset), certified) for name, method in methods.items()}

header = "| set | " + " | ".join(methods) + " |\n|---|" + "---:|" * len(methods) + "\n"
rows = "".join(f"| {name} | " + " | ".join(f"{table[name][m]:.1f}" for m in methods) + " |\n" for name in table)
display(Markdown("**LRE (correct significant digits; 15 = all certified digits)**\n\n" + header + rows))
'''),
    ("code", r'''
names = list(table)
width = 0.8 / len(methods)
fig, ax = plt.subplots(figsize=(13, 4.8))
for index, method in enumerate(methods):
    offsets = np.arange(len(names)) + (index - (len(methods) - 1) / 2) * width
    ax.bar(offsets, [table[name][method] for name in names], width, label=method)
ax.set_xticks(np.arange(len(names)), names)
ax.set(xlabel="NIST StRD data set", ylabel="LRE (correct significant digits)", ylim=(0, 16),
       title="Accuracy of the OLS coefficients on the NIST StRD linear least-squares problems")
ax.grid(axis="y", alpha=0.3)
ax.legend(ncol=1, fontsize=8, bbox_to_anchor=(1.01, 1), loc="upper left")
fig.tight_layout()
plt.show()
'''),
    ("md", r'''
For problems of this size the generated `auto` route works on $X$ itself: it scales the columns by exact powers
of two, solves by QR and refines with exactly rounded residuals, so it keeps (almost) all certified digits even
on Longley and Wampler. The bare `eigh` route works with the Gram matrix, whose condition number is the square of
that of $X$ (printed below): on Pontius and Longley the smallest eigenvalue of $X^\top X$ falls under the rank
tolerance, so the route returns the minimum-norm (pseudo-inverse) solution of a numerically rank-deficient
problem, with no correct digits; on Wampler 1–2, $\operatorname{cond}(X)^2 \approx 4\cdot 10^{13}$ leaves about
two. `auto` takes the Gram route only for large, well-conditioned problems.
'''),
    ("code", r'''
for dataset in datasets:
    X, _ = design(dataset)
    eigh = table[dataset["name"]]["generated eigh"]
    print(f"{dataset['name']:9} cond(X) = {np.linalg.cond(X):8.1e}   generated eigh: LRE {eigh:4.1f}")

for name, row in table.items():
    assert row["generated auto"] >= row["scipy gelsy"], (name, row["generated auto"], row["scipy gelsy"])
    assert row["generated mpmath (dps=50)"] >= 13.5, (name, row["generated mpmath (dps=50)"])
print("generated auto ≥ gelsy on every set; minimum digits:",
      {m: round(min(row[m] for row in table.values()), 1) for m in ("generated auto", "scipy gelsy",
                                                                      "generated mpmath (dps=50)")})
'''),
])
