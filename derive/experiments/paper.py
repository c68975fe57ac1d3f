"""The paper's experiments, reproduced headless: training reaches OLS, Hopfield capacity, distribution shift.

Every experiment takes a seed and returns plain numbers; ``reproduce`` runs them all, draws the
figures with matplotlib's Agg backend and writes ``summary.json`` (deterministic for a seed).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

__all__ = [
    "TrainingConfig",
    "train",
    "training_gradients",
    "training_loss_expression",
    "hopfield_updates",
    "hopfield_capacity",
    "distribution_shift",
    "reproduce",
]


# --- progress -----------------------------------------------------------------------


def progress(items: Iterable, label: str, total: int, enabled: bool = True) -> Iterable:
    """A one-line progress bar on stderr (no dependency); silent when disabled."""
    start, shown = time.perf_counter(), -1
    live = enabled and sys.stderr.isatty()  # logs get one line at the end, not every redraw
    for index, item in enumerate(items, start=1):
        yield item
        done = int(30 * index / total)
        if live and done != shown:
            shown = done
            sys.stderr.write(f"\r{label:24} [{'#' * done}{'.' * (30 - done)}] {index}/{total} "
                             f"{time.perf_counter() - start:5.1f} s")
            sys.stderr.flush()
    if enabled:
        sys.stderr.write(f"{'' if live else label + ' '}done in {time.perf_counter() - start:.1f} s\n"
                         if not live else "\n")


# --- 03: training a linear transformer reaches OLS ------------------------------------


@dataclass(frozen=True)
class TrainingConfig:
    """y = 2x + ε on n points with an intercept; J prompts share X and differ in ε."""

    n: int = 32
    prompts: int = 64
    noise: float = 0.5
    slope: float = 2.0
    epochs: int = 1000
    step: float = 1.5  # as a fraction of 1/(curvature bound)
    tolerance: float = 1e-3
    seed: int = 0


def training_loss_expression(p: int) -> tuple:
    """(loss, parameters, gradient) as SymPy expressions for the linear transformer with p features.

    The model predicts Ŷ = X (w_v P) W_Q W_Kᵀ XᵀY for all prompts (columns of Y) at once. The loss
    ½‖Y − Ŷ‖²/(nJ) depends on the data only through the slow memory S = XᵀX, the fast memory
    M = XᵀY YᵀX and tr(YᵀY), so the derivation is exact and independent of n and J.
    """
    from sympy import Matrix, MatrixSymbol, symbols

    W_Q = Matrix(p, p, symbols(f"q0:{p * p}"))
    W_K = Matrix(p, p, symbols(f"k0:{p * p}"))
    w_v, P, syy, scale = symbols("w_v P s_yy scale")
    S, M = MatrixSymbol("S", p, p).as_explicit(), MatrixSymbol("M", p, p).as_explicit()
    A = w_v * P * W_Q * W_K.T  # the effective preconditioner Γ
    loss = scale * (syy - 2 * (A * M).trace() + (A.T * S * A * M).trace()) / 2
    theta = [*W_Q, *W_K, w_v, P]
    return loss, theta, [loss.diff(t) for t in theta]


@lru_cache(maxsize=4)
def training_gradients(p: int) -> Callable:
    """Loss and gradients compiled from :func:`training_loss_expression` with ``lambdify`` and ``cse``.

    Returns f(theta, S, M, syy, scale) -> (loss, gradient list), theta = (W_Q, W_K, w_v, P) flattened.
    """
    from sympy import MatrixSymbol, lambdify, symbols

    loss, theta, gradient = training_loss_expression(p)
    syy, scale = symbols("s_yy scale")
    return lambdify((theta, MatrixSymbol("S", p, p), MatrixSymbol("M", p, p), syy, scale), [loss, gradient],
                    modules="numpy", cse=True)


def _effective_preconditioner(theta: np.ndarray, p: int) -> np.ndarray:
    W_Q, W_K = theta[: p * p].reshape(p, p), theta[p * p : 2 * p * p].reshape(p, p)
    return theta[-2] * theta[-1] * W_Q @ W_K.T


def train(config: TrainingConfig = TrainingConfig(), show_progress: bool = False) -> dict:
    """Full-batch gradient descent on (W_Q, W_K, W_V, P); per-epoch loss, precision error and prediction gap.

    The gap is ‖Ŷ − HY‖/‖HY‖ on the first prompt (the y = 2x + ε data set); the precision error is
    ‖w_v P W_Q W_Kᵀ − (XᵀX)⁻¹‖_F / ‖(XᵀX)⁻¹‖_F. Training on prompts that differ in ε makes Γ = (XᵀX)⁻¹
    the unique optimum (preconditioned_gd, the converse).
    """
    rng = np.random.default_rng(config.seed)
    x = rng.uniform(-1.0, 1.0, config.n)
    X = np.column_stack([np.ones(config.n), x])
    p = X.shape[1]
    Y = config.slope * x[:, None] + config.noise * rng.normal(size=(config.n, config.prompts))
    S = X.T @ X
    XtY = X.T @ Y
    M = XtY @ XtY.T
    scale = 1.0 / (config.n * config.prompts)
    precision = np.linalg.inv(S)
    ols = X @ (precision @ XtY[:, 0])
    ols_loss = 0.5 * scale * float(np.sum((Y - X @ precision @ XtY) ** 2))
    w0 = config.n ** -0.5  # W_Q W_Kᵀ starts at the scale of (XᵀX)⁻¹
    theta = np.concatenate([(w0 * (np.eye(p) + 0.1 * rng.normal(size=(p, p)))).ravel(),
                            (w0 * (np.eye(p) + 0.1 * rng.normal(size=(p, p)))).ravel(), [1.0, 1.0]])
    curvature = np.linalg.eigvalsh(S)[-1] * np.linalg.eigvalsh(M)[-1] * scale * w0 ** 2 * 3
    lr = config.step / curvature
    f = training_gradients(p)
    history = {"epoch": [], "loss": [], "precision_error": [], "prediction_gap": []}
    for epoch in progress(range(1, config.epochs + 1), "training", config.epochs, show_progress):
        _, gradient = f(theta, S, M, float(np.sum(Y * Y)), scale)
        theta = theta - lr * np.asarray(gradient, dtype=float)
        gamma = _effective_preconditioner(theta, p)
        loss = 0.5 * scale * float(np.sum((Y - X @ gamma @ XtY) ** 2))
        history["epoch"].append(epoch)
        history["loss"].append(loss)
        history["precision_error"].append(float(np.linalg.norm(gamma - precision) / np.linalg.norm(precision)))
        history["prediction_gap"].append(float(np.linalg.norm(X @ gamma @ XtY[:, 0] - ols) / np.linalg.norm(ols)))
    reached = [e for e, g in zip(history["epoch"], history["prediction_gap"], strict=True) if g <= config.tolerance]
    return {
        "config": asdict(config),
        "learning_rate": lr,
        "ols_loss": ols_loss,
        "epochs_to_tolerance": reached[0] if reached else None,
        "final_relative_gap": history["prediction_gap"][-1],
        "final_precision_error": history["precision_error"][-1],
        "final_loss": history["loss"][-1],
        "final_preconditioner": _effective_preconditioner(theta, p).tolist(),
        "precision": precision.tolist(),
        "history": history,
    }


# --- 04: Hopfield energies -------------------------------------------------------------


def hopfield_updates(patterns: int = 3, dim: int = 2) -> dict:
    """Both update rules derived by SymPy from their energies, in concrete sizes, and checked.

    Classical (quadratic) energy E(ξ) = −½ ξᵀXᵀXξ: the update follows −∇E = Xᵀ(Xξ), which is linear
    attention with query ξ and keys = values = the stored patterns. Modern energy
    E(ξ) = −β⁻¹ log Σᵢ exp(β xᵢᵀξ) + ½ξᵀξ: the concave-convex step sets ∇(½ξᵀξ) = −∇(−lse), giving
    ξ ← Xᵀ softmax(βXξ), softmax attention.
    """
    from sympy import Matrix, exp, log, simplify, symbols

    X = Matrix(patterns, dim, symbols(f"x0:{patterns * dim}"))
    xi = Matrix(dim, 1, symbols(f"xi0:{dim}"))
    beta = symbols("beta", positive=True)
    classical = -(xi.T * X.T * X * xi)[0, 0] / 2
    classical_update = Matrix([-classical.diff(v) for v in xi])
    assert simplify(classical_update - X.T * (X * xi)) == Matrix.zeros(dim, 1)
    scores = X * xi
    lse = log(sum(exp(beta * s) for s in scores)) / beta
    concave = Matrix([lse.diff(v) for v in xi])  # −∇ of the concave part −lse
    weights = Matrix([exp(beta * s) for s in scores]) / sum(exp(beta * s) for s in scores)
    assert simplify(concave - X.T * weights) == Matrix.zeros(dim, 1)
    return {"classical_energy": classical, "classical_update": classical_update,
            "modern_energy": -lse + (xi.T * xi)[0, 0] / 2, "modern_update": concave, "softmax": weights}


def _retrieval_rate(dim: int, count: int, kind: str, trials: int, flip: float, beta: float,
                    rng: np.random.Generator) -> float:
    """Share of noisy queries that one update maps back exactly onto their stored pattern."""
    X = rng.choice([-1.0, 1.0], size=(count, dim))
    target = rng.integers(0, count, trials)
    queries = X[target].copy()
    flips = max(1, int(round(flip * dim)))
    for row in queries:
        row[rng.choice(dim, flips, replace=False)] *= -1
    scores = queries @ X.T
    if kind == "linear":  # sign(Xᵀ(Xξ)): linear attention
        out = scores @ X
    else:  # sign(Xᵀ softmax(βXξ)): softmax attention
        scores = beta * (scores - scores.max(axis=1, keepdims=True))
        weights = np.exp(scores)
        out = (weights / weights.sum(axis=1, keepdims=True)) @ X
    return float(np.mean(np.all(np.sign(out) == X[target], axis=1)))


def hopfield_capacity(dims=(8, 16, 24, 32), max_patterns: int = 65536, trials: int = 200, flip: float = 0.1,
                      beta: float = 1.0, threshold: float = 0.99, seed: int = 0, show_progress: bool = False) -> dict:
    """Retrieval success against the number of stored random ±1 patterns, linear vs softmax attention.

    A capacity is the largest count on the grid (powers of √2) up to which every count is retrieved with
    success ≥ threshold; a capacity equal to ``max_patterns`` is a lower bound.
    """
    grid = sorted({int(round(2 ** (i / 2))) for i in range(0, 2 * int(np.log2(max_patterns)) + 1)})
    curves: dict[str, dict[int, list]] = {"linear": {}, "softmax": {}}
    capacity: dict[str, dict[int, int]] = {"linear": {}, "softmax": {}}
    jobs = [(kind, d) for kind in curves for d in dims]
    for kind, d in progress(jobs, "hopfield capacity", len(jobs), show_progress):
        rng = np.random.default_rng([seed, d, kind == "softmax"])
        rates, best, failed = [], 0, False
        for count in grid:
            rate = _retrieval_rate(d, count, kind, trials, flip, beta, rng)
            rates.append(rate)
            if rate >= threshold and not failed:
                best = count
            failed = failed or rate < threshold
            if failed and rate == 0.0:
                break
        curves[kind][d] = [grid[: len(rates)], rates]
        capacity[kind][d] = best
    largest = max(dims)
    return {"grid": grid, "dims": list(dims), "curves": curves, "capacity": capacity,
            "linear_capacity": capacity["linear"][largest], "softmax_capacity": capacity["softmax"][largest],
            "softmax_capacity_is_lower_bound": capacity["softmax"][largest] == grid[-1],
            "trials": trials, "flip_fraction": flip, "beta": beta, "threshold": threshold}


# --- 05: distribution shift -------------------------------------------------------------


def distribution_shift(shifts=(0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0), p: int = 4, n: int = 32, prompts: int = 2000,
                       queries: int = 16, noise: float = 0.1, seed: int = 0, show_progress: bool = False) -> dict:
    """Frozen OLS-transformer weights vs refitting, on prompts whose covariance drifts away from training.

    Training covariance I: the frozen slow memory is the population precision Γ = (n I)⁻¹ (what the
    weights hold after training on that distribution). Prompts at shift s draw x ~ N(0, Σ_s),
    Σ_s = R diag(exp(s·u)) Rᵀ with u spread over [−1, 1] and a fixed rotation R; y = xᵀw + ε with a fresh
    w ~ N(0, I) per prompt. Errors are mean squared prediction errors against the noise-free truth.
    """
    rng = np.random.default_rng(seed)
    R = np.linalg.qr(rng.normal(size=(p, p)))[0]
    u = np.linspace(-1.0, 1.0, p)
    frozen = np.eye(p) / n
    fixed_mse, refit_mse, gd_refit_mse = [], [], []
    for s in progress(shifts, "distribution shift", len(shifts), show_progress):
        root = R @ np.diag(np.exp(s * u / 2))
        X = rng.normal(size=(prompts, n, p)) @ root.T
        Xq = rng.normal(size=(prompts, queries, p)) @ root.T
        w = rng.normal(size=(prompts, p, 1))
        Y = X @ w + noise * rng.normal(size=(prompts, n, 1))
        truth = Xq @ w
        XtY = np.swapaxes(X, 1, 2) @ Y
        fixed = Xq @ (frozen @ XtY)  # one forward pass with the frozen weights
        refit = Xq @ np.linalg.solve(np.swapaxes(X, 1, 2) @ X, XtY)  # weights refit per prompt: OLS
        fixed_mse.append(float(np.mean((fixed - truth) ** 2)))
        refit_mse.append(float(np.mean((refit - truth) ** 2)))
        beta = frozen @ XtY  # a second preconditioned step with the frozen Γ
        beta = beta + frozen @ (np.swapaxes(X, 1, 2) @ (Y - X @ beta))
        gd_refit_mse.append(float(np.mean((Xq @ beta - truth) ** 2)))
    return {"shifts": list(shifts), "fixed_mse": fixed_mse, "refit_mse": refit_mse,
            "two_step_mse": gd_refit_mse, "p": p, "n": n, "prompts": prompts, "noise": noise}


# --- figures and the reproduce command -----------------------------------------------------


def _save(fig, path: Path) -> Path:
    """Lay out, write without a timestamp (byte-stable PNGs) and close."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)
    return path


def _figures(out: Path, training: dict, hopfield: dict, shift: dict) -> list[Path]:
    try:
        import matplotlib
    except ImportError:
        raise RuntimeError("the figures need matplotlib: pip install 'ols-transformer[notebooks]'") from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"figure.dpi": 110, "font.size": 10, "svg.hashsalt": "ols-transformer"})
    paths = []

    h = training["history"]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    axes[0].semilogy(h["epoch"], h["loss"], label="linear transformer")
    axes[0].axhline(training["ols_loss"], color="k", ls="--", label="OLS loss")
    axes[0].set(xlabel="epoch", ylabel="training loss (mean squared error / 2)", title="Loss")
    axes[1].semilogy(h["epoch"], h["precision_error"], color="C1")
    axes[1].set(xlabel="epoch", ylabel=r"$\|w_vP\,W_QW_K^\top-(X^\top X)^{-1}\|_F\,/\,\|(X^\top X)^{-1}\|_F$",
                title="Slow memory vs precision")
    axes[2].semilogy(h["epoch"], h["prediction_gap"], color="C2", label="relative gap to OLS")
    axes[2].axhline(training["config"]["tolerance"], color="k", ls=":", label="tolerance 1e-3")
    if training["epochs_to_tolerance"]:
        axes[2].axvline(training["epochs_to_tolerance"], color="C3", ls="--",
                        label=f"reached at epoch {training['epochs_to_tolerance']}")
    axes[2].set(xlabel="epoch", ylabel=r"$\|\hat Y-HY\|/\|HY\|$", title="Prediction gap")
    for ax in axes:
        ax.grid(alpha=0.3)
    axes[0].legend()
    axes[2].legend()
    paths.append(_save(fig, out / "training.png"))

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    titles = {"linear": "Linear attention (classical energy)", "softmax": "Softmax attention (modern energy)"}
    for kind, ax in zip(("linear", "softmax"), axes, strict=True):
        for d in hopfield["dims"]:
            counts, rates = hopfield["curves"][kind][d]
            ax.semilogx(counts, rates, marker=".", label=f"d = {d}")
        ax.axhline(hopfield["threshold"], color="k", ls=":", lw=0.8)
        ax.set(xlabel="stored patterns N", ylabel="retrieval success (share of queries)",
               title=titles[kind])
        ax.grid(alpha=0.3)
        ax.legend()
    paths.append(_save(fig, out / "hopfield_success.png"))

    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    dims = hopfield["dims"]
    ax.semilogy(dims, [hopfield["capacity"]["linear"][d] for d in dims], marker="o", label="linear attention")
    ax.semilogy(dims, [hopfield["capacity"]["softmax"][d] for d in dims], marker="s", label="softmax attention")
    ax.set(xlabel="pattern dimension d", ylabel="capacity (patterns at ≥ 99% success)",
           title="Capacity: linear vs exponential growth")
    ax.grid(alpha=0.3)
    ax.legend()
    paths.append(_save(fig, out / "hopfield_capacity.png"))

    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    ax.semilogy(shift["shifts"], shift["fixed_mse"], marker="o", label="frozen weights (one pass)")
    ax.semilogy(shift["shifts"], shift["two_step_mse"], marker="^", label="frozen weights, two GD steps")
    ax.semilogy(shift["shifts"], shift["refit_mse"], marker="s", label="refit (OLS per prompt)")
    ax.set(xlabel="covariance shift s (log-eigenvalue spread)", ylabel="prediction MSE vs noise-free truth",
           title="Distribution shift")
    ax.grid(alpha=0.3)
    ax.legend()
    paths.append(_save(fig, out / "distribution_shift.png"))
    return paths


def reproduce(out: Path, show_progress: bool = True, quick: bool = False) -> dict:
    """Run the experiments of notebooks 03–05, write the figures and ``summary.json``; return the summary."""
    from ..files import write_atomic

    out = Path(out)
    training = train(TrainingConfig(), show_progress=show_progress)
    hopfield = hopfield_capacity(dims=(8, 16, 24) if quick else (8, 16, 24, 32),
                                 max_patterns=4096 if quick else 65536, show_progress=show_progress)
    shift = distribution_shift(prompts=300 if quick else 2000, show_progress=show_progress)
    figures = _figures(out, training, hopfield, shift)
    summary = {
        "training": {k: v for k, v in training.items() if k != "history"},
        "hopfield": {k: hopfield[k] for k in ("linear_capacity", "softmax_capacity", "softmax_capacity_is_lower_bound",
                                              "dims", "trials", "flip_fraction", "beta", "threshold")}
        | {"capacity": {kind: {str(d): c for d, c in caps.items()} for kind, caps in hopfield["capacity"].items()}},
        "shift": shift,
        "figures": [p.name for p in figures],
    }
    write_atomic(out / "summary.json", json.dumps(summary, indent=1, sort_keys=True) + "\n")
    return summary



