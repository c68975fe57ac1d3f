"""The paper's experiments, reproduced headless: training reaches OLS, Hopfield capacity, distribution shift.

Every experiment takes a seed and returns plain numbers; ``reproduce`` runs them all, draws the
figures with :mod:`derive.experiments.figures` (the notebooks draw theirs with it too) and writes
``summary.json`` with its provenance (deterministic for a seed). Every file is written atomically.
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
    "CapacityConfig",
    "QUICK_CAPACITY",
    "hopfield_capacity",
    "linear_fit",
    "distribution_shift",
    "MissingDependency",
    "provenance",
    "reproduce",
    "require_matplotlib",
]


# --- progress -----------------------------------------------------------------------


#: Where stderr is not a terminal (a log, CI, a pipe), a progress line at most this often (seconds), besides one as
#: each stage starts and ends: a full ``derive reproduce`` runs about two minutes and must not look stuck.
LOG_EVERY = 10.0


def progress(items: Iterable, label: str, total: int, enabled: bool = True) -> Iterable:
    """A one-line progress bar on stderr (no dependency); silent when disabled.  Where stderr is not a terminal,
    plain lines instead of redraws: one as the stage starts, one every :data:`LOG_EVERY` seconds with how far it
    got, and one when it is done."""
    start, shown = time.perf_counter(), -1
    live = enabled and sys.stderr.isatty()  # a terminal: one line redrawn; a log: a line now and then
    logged = start
    if enabled and not live:
        sys.stderr.write(f"{label}: {total} steps ...\n")
        sys.stderr.flush()
    for index, item in enumerate(items, start=1):
        yield item
        done = int(30 * index / total)
        now = time.perf_counter()
        if live and done != shown:
            shown = done
            sys.stderr.write(f"\r{label:24} [{'#' * done}{'.' * (30 - done)}] {index}/{total} "
                             f"{now - start:5.1f} s")
            sys.stderr.flush()
        elif enabled and not live and now - logged >= LOG_EVERY and index < total:
            logged = now
            sys.stderr.write(f"{label}: {index}/{total} ({100 * index // total}%), {now - start:.1f} s\n")
            sys.stderr.flush()
    if enabled:
        sys.stderr.write(f"{'' if live else label + ' '}done in {time.perf_counter() - start:.1f} s\n"
                         if not live else "\n")
        sys.stderr.flush()


def stage(label: str, enabled: bool = True) -> None:
    """One line on stderr as a stage without steps of its own starts (where progress is shown)."""
    if enabled:
        sys.stderr.write(f"{label} ...\n")
        sys.stderr.flush()


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
    hits = 0
    chunk = max(1, 2**22 // count)  # queries per block: the trials × count scores stay below 32 MiB
    for start in range(0, trials, chunk):
        scores = queries[start : start + chunk] @ X.T
        if kind == "linear":  # sign(Xᵀ(Xξ)): linear attention
            out = scores @ X
        else:  # sign(Xᵀ softmax(βXξ)): softmax attention
            weights = np.exp(beta * (scores - scores.max(axis=1, keepdims=True)))
            out = (weights / weights.sum(axis=1, keepdims=True)) @ X
        hits += int(np.sum(np.all(np.sign(out) == X[target[start : start + chunk]], axis=1)))
    return hits / trials


def _t_quantile(probability: float, df: int) -> float:
    """Student's t quantile (for confidence intervals without SciPy): bisection on mpmath's incomplete beta."""
    from mpmath import betainc, mpf

    def cdf(t: float):  # P(T <= t) for t >= 0
        x = df / (df + t * t)
        return 1 - betainc(mpf(df) / 2, mpf(1) / 2, 0, x, regularized=True) / 2

    lo, hi = 0.0, 1000.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < probability else (lo, mid)
    return (lo + hi) / 2


def linear_fit(x, y, confidence: float = 0.95) -> dict:
    """Least-squares line y ≈ intercept + slope·x with the slope's standard error and confidence interval."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = len(x)
    if n < 3 or np.ptp(x) == 0:
        raise ValueError("a line with a confidence interval needs at least 3 points at 2 or more x values")
    xm, ym = x.mean(), y.mean()
    sxx = float(np.sum((x - xm) ** 2))
    slope = float(np.sum((x - xm) * (y - ym)) / sxx)
    intercept = float(ym - slope * xm)
    residual = y - intercept - slope * x
    se = float(np.sqrt(np.sum(residual**2) / (n - 2) / sxx))
    t = _t_quantile(0.5 + confidence / 2, n - 2)
    total = float(np.sum((y - ym) ** 2))
    return {"slope": slope, "intercept": intercept, "slope_stderr": se,
            "slope_ci": [slope - t * se, slope + t * se], "confidence": confidence, "points": n,
            "r_squared": 1 - float(np.sum(residual**2)) / total if total > 0 else 1.0}


@dataclass(frozen=True)
class CapacityConfig:
    """The Hopfield capacity experiment: dimensions per rule, repeats, queries per count, the criterion."""

    linear_dims: tuple[int, ...] = (8, 16, 32, 64, 128, 256, 512)
    softmax_dims: tuple[int, ...] = (8, 16, 24, 32, 40)
    repeats: int = 5
    trials: int = 1000
    max_patterns: int = 65536
    flip: float = 0.125  # d/8 signs flipped: the same share for every d on the grids above
    beta: float = 1.0
    threshold: float = 0.99
    seed: int = 0


QUICK_CAPACITY = CapacityConfig(linear_dims=(8, 16, 32, 64, 128), softmax_dims=(8, 16, 24, 32), repeats=3,
                                trials=300, max_patterns=4096)


def hopfield_capacity(config: CapacityConfig = CapacityConfig(), show_progress: bool = False) -> dict:
    """Retrieval success against the number of stored random ±1 patterns, linear vs softmax attention.

    A capacity is the largest count on the grid (every integer up to 13, then steps of 2^(1/8) ≈ 9%) up to
    which every count is retrieved exactly (all d signs) for at least ``threshold`` of the noisy queries;
    one equal to ``max_patterns`` is a lower bound. Each dimension is measured ``repeats`` times with
    independent patterns. Fits: linear capacity = a + b·d (b in patterns per dimension), and
    log2(softmax capacity) = a + b·d (b in doublings per dimension; lower bounds left out), each with a
    confidence interval for b (``fit`` is None with fewer than 3 points or a single d). The success curves
    are those of the first repeat.
    """
    c = config
    grid = sorted({int(round(2 ** (i / 8))) for i in range(0, 8 * int(np.log2(c.max_patterns)) + 1)})
    result: dict = {"grid_max": grid[-1], "config": asdict(c)}
    jobs = [(kind, d, r) for kind, dims in (("linear", c.linear_dims), ("softmax", c.softmax_dims))
            for d in dims for r in range(c.repeats)]
    measured: dict[str, dict] = {"linear": {}, "softmax": {}}
    for kind, d, repeat in progress(jobs, "hopfield capacity", len(jobs), show_progress):
        rng = np.random.default_rng([c.seed, d, kind == "softmax", repeat])
        rates, best, failed = [], 0, False
        for count in grid:
            rate = _retrieval_rate(d, count, kind, c.trials, c.flip, c.beta, rng)
            rates.append(rate)
            if rate >= c.threshold and not failed:
                best = count
            failed = failed or rate < c.threshold
            if failed and (repeat > 0 or rate == 0.0 or count >= 4 * max(best, 1)):
                break  # the first repeat goes on to draw the success curve (down to 0 or 4× the capacity)
        entry = measured[kind].setdefault(d, {"capacity": [], "curve": None})
        entry["capacity"].append(best)
        if repeat == 0:
            entry["curve"] = [grid[: len(rates)], rates]
    for kind in ("linear", "softmax"):
        dims = list(measured[kind])
        caps = {d: measured[kind][d]["capacity"] for d in dims}
        points = [(d, v) for d in dims for v in caps[d] if v < grid[-1]]  # lower bounds left out
        xs = [d for d, _ in points]
        ys = [v if kind == "linear" else float(np.log2(v)) for _, v in points]
        result[kind] = {
            "dims": dims,
            "capacity": caps,
            "mean": {d: float(np.mean(caps[d])) for d in dims},
            "lower_bounds": sum(v >= grid[-1] for d in dims for v in caps[d]),
            "curves": {d: measured[kind][d]["curve"] for d in dims},
            "fit": None,  # fewer than 3 points or a single dimension: no line
        }
        if len(xs) >= 3 and len(set(xs)) >= 2:
            model = "capacity = intercept + slope * d" if kind == "linear" else "log2(capacity) = intercept + slope * d"
            result[kind]["fit"] = linear_fit(xs, ys) | {"model": model}
    return result


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


# --- the reproduce command -------------------------------------------------------------------


MATPLOTLIB_MISSING = ("reproduce draws its figures with matplotlib, which is not installed: python -m pip install "
                      "'matplotlib>=3.7' (or, in the checkout: python -m pip install '.[notebooks]')")


class MissingDependency(RuntimeError):
    """An optional package the experiment needs is not installed (the message says how to install it)."""


def require_matplotlib() -> None:
    """Raise :class:`MissingDependency` (one line, with an install command) when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise MissingDependency(MATPLOTLIB_MISSING) from None


def provenance(seeds: dict[str, int], quick: bool) -> dict:
    """What produced a summary: package, interpreter and library versions, seeds, mode (no clock time)."""
    import platform

    import sympy

    from .. import __version__

    versions = {"ols-transformer": __version__, "python": platform.python_version(), "numpy": np.__version__,
                "sympy": sympy.__version__}
    for name in ("mpmath", "matplotlib"):
        try:
            versions[name] = __import__(name).__version__
        except ImportError:
            versions[name] = None
    return {"versions": versions, "implementation": platform.python_implementation(), "machine": platform.machine(),
            "seeds": seeds, "quick": quick}


def _write(path: Path, data: str | bytes) -> Path:
    """Write atomically; an error names ``path`` itself (not the temporary file beside it)."""
    from ..files import write_atomic

    try:
        write_atomic(path, data)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    return path


def _hopfield_summary(hopfield: dict) -> dict:
    def part(kind: str) -> dict:
        p = hopfield[kind]
        return {"dims": p["dims"], "capacity": {str(d): c for d, c in p["capacity"].items()},
                "mean": {str(d): m for d, m in p["mean"].items()}, "lower_bounds": p["lower_bounds"],
                "fit": p["fit"]}

    return {"config": hopfield["config"], "grid_max": hopfield["grid_max"], "linear": part("linear"),
            "softmax": part("softmax")}


def _beyond_summary(beyond: dict) -> dict:
    stream, layers = beyond["streaming"], beyond["layers"]
    return {"ridge": [{k: v for k, v in problem.items() if k != "norms"} for problem in beyond["ridge"]["problems"]],
            "streaming": {"rows": stream["rows"][-1], "square_root": stream["square_root"][-1],
                          "sherman_morrison": stream["sherman_morrison"][-1]},
            "layers": {"rates": {run["label"]: run["rho"] for run in layers["runs"]},
                       "one_layer_exact": layers["one_layer_exact"]}}


def reproduce(out: Path, show_progress: bool = True, quick: bool = False) -> dict:
    """Run the experiments of notebooks 03–05 and 07, write the figures and ``summary.json``; return the summary.

    Needs matplotlib (checked before anything is computed). Every file is written atomically.
    """
    require_matplotlib()
    from . import figures
    from .beyond import beyond_the_paper

    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(out)) from None
    config = TrainingConfig()
    capacity = QUICK_CAPACITY if quick else CapacityConfig()
    shift_seed = 0
    training = train(config, show_progress=show_progress)
    hopfield = hopfield_capacity(capacity, show_progress=show_progress)
    shift = distribution_shift(prompts=300 if quick else 2000, seed=shift_seed, show_progress=show_progress)
    stage("beyond the paper: streaming ridge, square-root and Sherman-Morrison updates, layers", show_progress)
    started = time.perf_counter()
    beyond = beyond_the_paper(seed=0, quick=quick)
    if show_progress:
        sys.stderr.write(f"beyond the paper done in {time.perf_counter() - started:.1f} s\n")
    stage("figures: drawing and writing the PNG files", show_progress)
    drawn = {"training.png": figures.training_figure(training),
             "hopfield_success.png": figures.hopfield_figure(hopfield),
             "hopfield_capacity.png": figures.capacity_figure(hopfield),
             "distribution_shift.png": figures.shift_figure(shift),
             "beyond_the_paper.png": figures.beyond_figure(beyond)}
    paths = [_write(out / name, figures.png(fig)) for name, fig in drawn.items()]
    summary = {
        "training": {k: v for k, v in training.items() if k != "history"},
        "hopfield": _hopfield_summary(hopfield),
        "shift": shift,
        "beyond": _beyond_summary(beyond),
        "figures": [p.name for p in paths],
        "provenance": provenance({"training": config.seed, "hopfield": capacity.seed, "shift": shift_seed}, quick),
    }
    _write(out / "summary.json", json.dumps(summary, indent=1, sort_keys=True) + "\n")
    return summary
