"""Numeric benchmarks of the generated code (issues 4 and 12): NIST accuracy, tall data, batches, data classes.

The NumPy and mpmath modules are regenerated with ``derive codegen`` into a temporary directory
on every run, imported, and compared in the same process with named baselines.  Timings
interleave the methods (the order rotates each round) and time every method right next to its
baseline, so machine noise hits both alike; the tables give the median of the paired ratios and
the ratio of the minimums.  On a loaded machine, ``--threads 1`` avoids oversubscribed BLAS threads.

    python benchmarks/bench_numeric.py [--quick] [--nist PATH ...] [--repeats N] [--batch B] [--threads T]
                                       [--parts abcdefg]

(a) NIST StRD linear sets: log relative error (LRE, digits) of the coefficients, with the exact least-squares
    solution of the float64 data (rational arithmetic) as the ceiling for any solver of that data, and the
    polynomial sets built three ways to show how much the rounding of the design decides.
(b) Tall data: time of predict as a ratio to a bare ``X.T @ X``, and the difference to lstsq.
(c) Batched in-context regression: speed-up over a Python loop of numpy.linalg.lstsq, next to the speed-up
    of the stacked products alone (a floor for any Gram-based method) and a batch with one hard prompt.
(d) Small single problems, Gaussian, across the 400,000-product threshold of ``auto``: time as a ratio to
    numpy.linalg.lstsq, next to gelsy and a bare ``X.T @ X``.
(e) Tall data classes users have (Gaussian; uncentred features of mean 100 with an intercept; one
    near-collinear pair): time as a ratio to ``X.T @ X``, the optimality error |Xᵀ(y − Xβ)| computed in
    extended precision relative to lstsq's, and the extra peak memory of one call in a fresh process.
(f) Realistic batches: prompts with an intercept and uncentred features, with one rank-deficient prompt,
    with one prompt of cond 1e8: speed-up over a loop of lstsq.
(g) Extreme scales: auto on data scaled from 1e-300 to 1e300 (XᵀX under- or overflows), subnormal data, columns
    scaled 1e-150 and 1e150, and batches with a scale per prompt: the largest relative error against the β the
    data were made from, and the time as a ratio to lstsq (or its loop) and to the same data at scale 1.

Baselines come from scipy, scikit-learn and statsmodels (``pip install ".[bench]"``); a missing
one is reported as skipped.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import importlib.util
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the checkout's derive package, also when it is not installed
    sys.path.insert(0, str(ROOT))

from derive.experiments.nist import (  # noqa: E402
    CONSTRUCTIONS,
    DATA_FILE,
    LRE_CAP,
    design,
    design_text,
    exact_least_squares,
    load_datasets,
    lre,
)

PACKAGED = "derive/data/" + DATA_FILE  # the NIST StRD sets shipped with the package (public domain)
CEILING = "exact LS of the float64 data (rational arithmetic)"
ROUTES = ("auto", "eigh", "cholesky", "svd", "qr")

Solver = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (X, y) -> coefficients, y and result 1-D


@dataclass(frozen=True)
class Sizes:
    """Problem sizes of parts (b) and (c)."""

    tall_n: int = 400_000
    tall_p: int = 64
    queries: int = 1_000
    batch: int = 4_096
    batch_n: int = 64
    batch_p: int = 8
    repeats: int = 5


QUICK = Sizes(tall_n=40_000, batch=1_024, repeats=3)
SEED = 20240604


# --- the generated modules --------------------------------------------------------------


def generate(out: Path) -> tuple[ModuleType, ModuleType]:
    """Run ``derive codegen --out out`` in a fresh interpreter and import the two modules it writes."""
    subprocess.run([sys.executable, "-m", "derive", "codegen", "--out", str(out)], cwd=ROOT, check=True,
                   capture_output=True, text=True)
    modules = []
    for name in ("ols_attention", "ols_attention_mp"):
        spec = importlib.util.spec_from_file_location(f"bench_generated_{name}", out / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules.append(module)
    return modules[0], modules[1]


def _optional(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


# --- baselines --------------------------------------------------------------------------


@dataclass
class SympyOLS:
    """``lambdify`` of derive.constructions.ols_coefficients on MatrixSymbols of the data's sizes."""

    cache: dict[tuple[int, int], Callable] = field(default_factory=dict)

    def prepare(self, n: int, p: int) -> Callable:
        """The lambdified function for an n×p design (built once per shape, outside any timing)."""
        if (n, p) not in self.cache:
            from sympy import MatrixSymbol, lambdify

            from derive.authoring.constructions import ols_coefficients

            X, y = MatrixSymbol("X", n, p), MatrixSymbol("y", n, 1)
            self.cache[(n, p)] = lambdify([X, y], ols_coefficients(X, y), modules="numpy")
        return self.cache[(n, p)]

    def __call__(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.asarray(self.prepare(*X.shape)(X, y[:, None]))[:, 0]


def baselines(notes: list[str]) -> dict[str, Solver]:
    """The named baseline solvers; those whose package is missing are left out with a note."""
    out: dict[str, Solver] = {
        "numpy.linalg.lstsq": lambda X, y: np.linalg.lstsq(X, y, rcond=None)[0],
    }
    scipy_linalg = _optional("scipy.linalg")
    if scipy_linalg is not None:
        out["scipy lstsq gelsd"] = lambda X, y: scipy_linalg.lstsq(X, y, lapack_driver="gelsd")[0]
        out["scipy lstsq gelsy"] = lambda X, y: scipy_linalg.lstsq(X, y, lapack_driver="gelsy")[0]
    else:
        notes.append("scipy is not installed: its lstsq drivers are skipped")
    out["normal equations (solve XᵀX)"] = lambda X, y: np.linalg.solve(X.T @ X, X.T @ y)
    linear_model = _optional("statsmodels.regression.linear_model")
    if linear_model is not None:
        out["statsmodels OLS (pinv)"] = lambda X, y: np.asarray(linear_model.OLS(y, X).fit().params)
    else:
        notes.append("statsmodels is not installed: skipped")
    sklearn_linear = _optional("sklearn.linear_model")
    if sklearn_linear is not None:
        out["sklearn LinearRegression"] = \
            lambda X, y: sklearn_linear.LinearRegression(fit_intercept=False).fit(X, y).coef_
    else:
        notes.append("scikit-learn is not installed: skipped")
    out["SymPy lambdify"] = SympyOLS()
    return out


# --- helpers ----------------------------------------------------------------------------


@dataclass
class Timing:
    """Paired wall times: each sample of a method is taken right next to a sample of the baseline."""

    method: list[float] = field(default_factory=list)
    baseline: list[float] = field(default_factory=list)

    def median(self) -> float:
        """Median time of the method, in seconds."""
        return statistics.median(self.method)

    def ratio(self) -> float:
        """Median over the pairs of method time / baseline time."""
        return statistics.median(m / b for m, b in zip(self.method, self.baseline, strict=True))

    def ratio_of_minimums(self) -> float:
        """Fastest method time / fastest baseline time."""
        return min(self.method) / min(self.baseline)


def _wall(task: Callable[[], object]) -> float:
    start = time.perf_counter()
    task()
    return time.perf_counter() - start


def paired(tasks: dict[str, Callable[[], object]], baseline: str, repeats: int) -> dict[str, Timing]:
    """``repeats`` rounds over the tasks, in an order that rotates each round; every task is timed next to the
    baseline (before it in one round, after it in the next), so both see the same machine load."""
    names = list(tasks)
    timings = {name: Timing() for name in names}
    for r in range(repeats):
        shift = r % len(names)
        for i, name in enumerate(names[shift:] + names[:shift]):
            if name == baseline:
                t = _wall(tasks[name])
                timings[name].method.append(t)
                timings[name].baseline.append(t)
            elif (r + i) % 2:
                timings[name].baseline.append(_wall(tasks[baseline]))
                timings[name].method.append(_wall(tasks[name]))
            else:
                timings[name].method.append(_wall(tasks[name]))
                timings[name].baseline.append(_wall(tasks[baseline]))
    return timings


def table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _factor(value: float) -> str:
    """A speed-up factor: one decimal, or three significant digits below 1."""
    return f"{value:.1f}" if value >= 1 else f"{value:.3g}"


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


# --- (a) NIST accuracy ------------------------------------------------------------------


def nist_accuracy(paths: list[Path | str], oa: ModuleType, om: ModuleType, solvers: dict[str, Solver]) -> str:
    """LRE of every method's coefficients on every NIST set in ``paths``."""
    datasets = []
    for path in paths:
        datasets += load_datasets() if path == PACKAGED else load_datasets(path)
    methods: dict[str, Callable[[dict], np.ndarray]] = {}
    for name, solve in solvers.items():
        methods[name] = lambda d, solve=solve: solve(d["X"], d["y"])
    for route in ROUTES:
        methods[f"generated coefficients, route={route}"] = \
            lambda d, route=route: oa.coefficients(d["X"], d["y"], route=route)
    methods["generated predict(X, y, I)"] = lambda d: oa.predict(d["X"], d["y"], np.eye(d["X"].shape[1]))

    def mp_solve(d: dict) -> np.ndarray:
        beta = om.coefficients(d["X_text"], d["y_text"], dps=50)
        return np.array([float(beta[i, 0]) for i in range(beta.rows)])

    methods["generated mpmath, dps=50, decimal strings"] = mp_solve
    methods[CEILING] = lambda d: exact_least_squares(d["X"], d["y"])
    scores: dict[str, list[float | None]] = {name: [] for name in methods}
    failures: list[str] = []
    for dataset in datasets:
        (X, y), (X_text, y_text) = design(dataset), design_text(dataset)
        data = {"X": X, "y": y, "X_text": X_text, "y_text": y_text}
        certified = np.array(dataset["certified"]["beta"], dtype=float)
        for name, method in methods.items():
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    scores[name].append(lre(method(data), certified))
            except Exception as exc:  # a failing baseline is a result, not a crash
                scores[name].append(None)
                failures.append(f"{name} on {dataset['name']}: {type(exc).__name__}: {exc}")
    names = [d["name"] for d in datasets]
    shapes = [f"{d['name']} ({len(d['x'])}×{len(d['certified']['beta'])})" for d in datasets]
    rows = []
    for name, values in scores.items():
        cells = ["fail" if v is None else f"{v:.1f}" for v in values]
        finite = [v if v is not None else 0.0 for v in values]
        rows.append([name, *cells, f"{min(finite):.1f}"])
    lines = ["### (a) Accuracy on the NIST StRD linear sets", "",
             f"LRE = digits agreeing with the certified coefficients (minimum over coefficients, capped at "
             f"{LRE_CAP:.0f}; 0 = no digit). Files: {', '.join(str(p) for p in paths)}.", "",
             table(["method", *shapes, "min"], rows), ""]
    gelsy = scores.get("scipy lstsq gelsy")
    if gelsy is not None:
        for name in ("generated coefficients, route=auto", "generated predict(X, y, I)"):
            behind = [n for n, ours, ref in zip(names, scores[name], gelsy, strict=True)
                      if ours is None or (ref is not None and ours < ref)]
            answer = "yes" if not behind else "no, not on " + ", ".join(behind)
            lines.append(f"- {name} >= gelsy on every set: {answer}")
    same = [dataset["name"] for dataset in datasets
            if np.array_equal(oa.coefficients(*design(dataset)), exact_least_squares(*design(dataset)))]
    lines.append(f"- generated coefficients, route=auto equals the exact LS of the float64 data bit for bit on "
                 f"{len(same)} of {len(datasets)} sets" + ("" if len(same) == len(datasets) else
                                                          f" (not on {', '.join(sorted(set(names) - set(same)))})"))
    lines += [f"- failed: {f}" for f in failures]
    return "\n".join(lines + ["", construction_study(datasets, oa, solvers)])


def construction_study(datasets: list[dict], oa: ModuleType, solvers: dict[str, Solver]) -> str:
    """How far the way the powers x^k are rounded to float64 moves each method on the polynomial sets.

    The exact least-squares solution of the float64 data is the most an accurate solver can reach; a method
    above it got there by rounding errors that happen to cancel part of the data's own."""
    polynomial = [d for d in datasets if (d.get("polynomial_degree") or 0) >= 2]
    methods = {"exact LS of the float64 data": exact_least_squares,
               "generated coefficients, route=auto": oa.coefficients}
    if "scipy lstsq gelsy" in solvers:
        methods["scipy lstsq gelsy"] = solvers["scipy lstsq gelsy"]
    rows, at_ceiling, lucky = [], True, []
    for dataset in polynomial:
        certified = np.array(dataset["certified"]["beta"], dtype=float)
        built: dict[bytes, tuple[list[str], np.ndarray, np.ndarray]] = {}  # identical designs share a row
        for construction in CONSTRUCTIONS:
            X, y = design(dataset, construction)
            built.setdefault(X.tobytes(), ([], X, y))[0].append(construction)
        for names, X, y in built.values():
            scores = []
            for solve in methods.values():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    scores.append(lre(solve(X, y), certified))
            label = "all three (the same bits)" if len(names) == len(CONSTRUCTIONS) else ", ".join(names)
            rows.append([dataset["name"], label, *(f"{v:.2f}" for v in scores)])
            at_ceiling &= abs(scores[1] - scores[0]) < 0.005
            if len(scores) > 2 and scores[2] > scores[0] + 0.005:
                lucky.append(f"{dataset['name']} ({label})")
    legend = "; ".join(f"{name}: {text}" for name, text in CONSTRUCTIONS.items())
    return "\n".join(["#### Polynomial sets: the rounding of the design decides the last digits", "",
                      f"LRE (two decimals) of the same data built three ways ({legend}).", "",
                      table(["set", "x^k built by", *methods], rows), "",
                      f"- auto reaches the exact LS of the float64 data on every row: {'yes' if at_ceiling else 'no'}",
                      f"- gelsy above that ceiling (possible only by luck): {', '.join(lucky) or 'nowhere'}"])


# --- (b) tall data ----------------------------------------------------------------------


def tall_data(sizes: Sizes, oa: ModuleType, solvers: dict[str, Solver]) -> str:
    """Time of predict on n×p data as a ratio to ``X.T @ X``, and the difference to lstsq's predictions."""
    n, p, m = sizes.tall_n, sizes.tall_p, sizes.queries
    rng = np.random.default_rng(SEED)
    X = rng.standard_normal((n, p))
    y = X @ rng.standard_normal(p) + rng.standard_normal(n)
    Q = rng.standard_normal((m, p))
    if "SymPy lambdify" in solvers:
        solvers["SymPy lambdify"].prepare(n, p)  # build the function once, outside the timing
    baseline = "X.T @ X (baseline)"
    tasks: dict[str, Callable[[], object]] = {baseline: lambda: X.T @ X}
    for name, solve in solvers.items():
        tasks[name] = lambda solve=solve: Q @ solve(X, y)
    for route in ROUTES:
        tasks[f"generated predict, route={route}"] = lambda route=route: oa.predict(X, y, Q, route=route)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        predictions = {name: np.asarray(task()) for name, task in tasks.items()}  # also the warm-up round
        timings = paired(tasks, baseline, sizes.repeats)
    reference = predictions["numpy.linalg.lstsq"]
    rows, auto = [], None
    for name, timing in timings.items():
        if name == baseline:
            diff = "–"
        else:
            rel = float(np.max(np.abs(predictions[name] - reference)) / np.max(np.abs(reference)))
            diff = f"{rel:.1e}"
            if name == "generated predict, route=auto":
                auto = (timing.ratio(), timing.ratio_of_minimums(), rel)
        rows.append([name, f"{timing.median() * 1e3:.1f}", f"{timing.ratio():.2f}", f"{timing.ratio_of_minimums():.2f}",
                     diff])
    lines = ["### (b) Tall data", "",
             f"n = {n:,}, p = {p}, k = 1, {m:,} queries, Gaussian (seed {SEED}); one warm-up round, then "
             f"{sizes.repeats} rounds in rotating order, each method timed next to the baseline. "
             f"Every method predicts X_query β̂; relative difference = "
             f"max |Δŷ| / max |ŷ_lstsq| against numpy.linalg.lstsq. The mpmath module is left out (hours at this "
             f"size).", "",
             table(["method", "median ms", "ratio to X.T@X (median of pairs)", "ratio of minimums",
                    "rel. diff. to lstsq"], rows), ""]
    if auto is not None:
        ratio, ratio_min, rel = auto
        lines.append(f"- generated predict (auto) within 3x of X.T@X: {verdict(ratio <= 3)} "
                     f"({ratio:.2f}x median of pairs, {ratio_min:.2f}x minimums)")
        lines.append(f"- generated predict (auto) within 1e-9 relative of lstsq: {verdict(rel <= 1e-9)} ({rel:.1e})")
    return "\n".join(lines)


# --- (c) batched in-context regression --------------------------------------------------


def batched(sizes: Sizes, oa: ModuleType) -> str:
    """The generated ``coefficients`` on a whole batch of prompts vs a Python loop of numpy.linalg.lstsq; with the
    cost of the stacked products every Gram method needs (a floor for it), and a batch with one hard prompt."""
    B, n, p = sizes.batch, sizes.batch_n, sizes.batch_p
    rng = np.random.default_rng(SEED + 1)
    X = rng.standard_normal((B, n, p))
    Y = np.einsum("bnp,bp->bn", X, rng.standard_normal((B, p))) + 0.1 * rng.standard_normal((B, n))
    hard = X.copy()  # one prompt with cond(X) about 1e8: the Gram route cannot take it
    hard[B // 2, :, -1] = hard[B // 2, :, 0] + 1e-8 * rng.standard_normal(n)
    Xt = np.swapaxes(X, -1, -2)
    baseline = "loop of numpy.linalg.lstsq (baseline)"
    with_hard = "generated coefficients, route=auto, one prompt with cond 1e8"
    tasks: dict[str, Callable[[], object]] = {
        baseline: lambda: np.stack([np.linalg.lstsq(X[b], Y[b], rcond=None)[0] for b in range(B)]),
        "floor: stacked XᵀX alone (no solve)": lambda: Xt @ X,
        "floor: stacked XᵀX and XᵀY alone (no solve)": lambda: (Xt @ X, Xt @ Y[..., None]),
        "batched normal equations (np.linalg.solve)": lambda: np.linalg.solve(Xt @ X, (Xt @ Y[..., None]))[..., 0],
    }
    for route in ROUTES:
        tasks[f"generated coefficients, route={route}"] = lambda route=route: oa.coefficients(X, Y, route=route)
    tasks[with_hard] = lambda: oa.coefficients(hard, Y)
    results = {name: task() for name, task in tasks.items()}  # also the warm-up round
    timings = paired(tasks, baseline, sizes.repeats)
    references = {baseline: results[baseline],
                  with_hard: np.stack([np.linalg.lstsq(hard[b], Y[b], rcond=None)[0] for b in range(B)])}
    rows, auto = [], None
    for name, timing in timings.items():
        speedup, speedup_min = 1 / timing.ratio(), 1 / timing.ratio_of_minimums()
        if name == "generated coefficients, route=auto":
            auto = (speedup, speedup_min)
        if name == baseline or name.startswith("floor"):
            diff = "–"
        else:
            delta = np.asarray(results[name]) - references.get(name, references[baseline])
            if name == with_hard:
                delta = np.delete(delta, B // 2, axis=0)
            diff = f"{float(np.max(np.abs(delta))):.1e}"
        rows.append([name, f"{timing.median() * 1e3:.1f}", _factor(speedup), _factor(speedup_min), diff])
    lines = ["### (c) Batched in-context regression", "",
             f"B = {B:,} prompts of n = {n}, p = {p}, k = 1 (X.size·k = {B * n * p:,}), Gaussian (seed {SEED + 1}); "
             f"one warm-up round, then {sizes.repeats} rounds in rotating order, each method timed next to the "
             f"baseline. Speed-up = baseline time / method time; max abs diff = largest |Δβ̂| against the lstsq "
             f"loop (for the batch with a hard prompt: over its other prompts; on the hard one lstsq itself is "
             f"the less accurate). The floors compute only the stacked products that any Gram-based method needs, "
             f"so no such method written in NumPy beats their speed-up here.", "",
             table(["method", "median ms", "speed-up (median of pairs)", "speed-up (minimums)", "max abs diff"],
                   rows), ""]
    if auto is not None:
        lines.append(f"- generated coefficients (auto) >= 30x the lstsq loop: {verdict(auto[0] >= 30)} "
                     f"({_factor(auto[0])}x median of pairs, {_factor(auto[1])}x minimums)")
    return "\n".join(lines)


# --- (d) small single problems ----------------------------------------------------------


SMALL_SHAPES = ((20, 1), (20, 3), (100, 5), (1_000, 10), (10_000, 8), (50_000, 8), (50_001, 8))
THRESHOLD = 400_000  # auto's limit for exactly rounded refinement of one problem (n·p·k products)


def _gaussian_problem(rng: np.random.Generator, n: int, p: int) -> tuple[np.ndarray, np.ndarray]:
    X = rng.standard_normal((n, p))
    return X, X @ rng.standard_normal(p) + rng.standard_normal(n)


def small_problems(sizes: Sizes, oa: ModuleType, solvers: dict[str, Solver]) -> str:
    """auto on single Gaussian problems of growing size, as ratios to lstsq timed next to it."""
    rng = np.random.default_rng(SEED + 3)
    baseline = "numpy.linalg.lstsq"
    peers = {name: solvers[name] for name in ("scipy lstsq gelsy",) if name in solvers}
    rows, small_ok = [], []
    for n, p in SMALL_SHAPES[: 5 if sizes.tall_n < 400_000 else None]:
        X, y = _gaussian_problem(rng, n, p)
        repeats = max(sizes.repeats * 4, int(2e7 / (n * p * 50 + 1e4)))  # more rounds for the noisy tiny ones
        tasks: dict[str, Callable[[], object]] = {baseline: lambda X=X, y=y: solvers[baseline](X, y),
                                                  "X.T @ X": lambda X=X: X.T @ X,
                                                  "auto": lambda X=X, y=y: oa.coefficients(X, y)}
        for name, solve in peers.items():
            tasks[name] = lambda X=X, y=y, solve=solve: solve(X, y)
        for task in tasks.values():
            task()  # warm-up
        timings = paired(tasks, baseline, min(repeats, 400))
        auto = timings["auto"]
        side = "≤" if n * p <= THRESHOLD else ">"
        rows.append([f"{n:,} × {p} ({side} {THRESHOLD:,} products)", f"{timings[baseline].median() * 1e6:.0f}",
                     f"{auto.median() * 1e6:.0f}", f"{auto.ratio():.2f}", f"{auto.ratio_of_minimums():.2f}",
                     *(f"{timings[name].ratio():.2f}" for name in peers), f"{timings['X.T @ X'].ratio():.2f}"])
        if n * p <= 10_000:
            small_ok.append(auto.ratio() <= 2 or p == 1)  # the target is 20 × 3 to 1,000 × 10
    lines = ["### (d) Small single problems (Gaussian, well-conditioned)", "",
             f"X Gaussian n × p, y = Xβ + noise (seed {SEED + 3}); each shape timed in paired rounds (up to 400 for "
             f"the tiny ones), every method next to numpy.linalg.lstsq. Ratios are time / lstsq time "
             f"(median of pairs; for auto also the ratio of the minimums).", "",
             table(["n × p", "lstsq µs (median)", "auto µs (median)", "auto / lstsq", "auto / lstsq (minimums)",
                    *(f"{name} / lstsq" for name in peers), "X.T@X / lstsq"], rows), "",
             f"- auto ≤ 2x lstsq from 20 × 3 to 1,000 × 10: {verdict(all(small_ok))}", "",
             small_accuracy(oa, 1000)]
    return "\n".join(lines)


def small_accuracy(oa: ModuleType, count: int) -> str:
    """How often auto's answer on random small problems is further than 1e-12 (relative, per coefficient) from
    the exact least-squares solution of the float64 data, next to lstsq's error on the same problems."""
    rng = np.random.default_rng(SEED + 6)
    worst: dict[str, list[float]] = {"auto": [], "numpy.linalg.lstsq": []}
    seconds = dict.fromkeys(worst, 0.0)
    for trial in range(count):
        p, k = int(rng.integers(2, 9)), int(rng.integers(1, 4))
        n = int(rng.integers(p + 1, 200))
        X = rng.standard_normal((n, p))
        if trial % 4 == 0:  # a quarter uncentred, with an intercept
            X[:, 1:] += rng.integers(1, 100)
            X[:, 0] = 1.0
        Y = X @ rng.standard_normal((p, k)) + rng.standard_normal((n, k))
        exact = np.column_stack([exact_least_squares(X, Y[:, j]) for j in range(k)])
        solvers = {"auto": oa.coefficients, "numpy.linalg.lstsq": lambda X, Y: np.linalg.lstsq(X, Y, rcond=None)[0]}
        for name, solve in solvers.items():
            start = time.perf_counter()
            beta = solve(X, Y)
            seconds[name] += time.perf_counter() - start
            worst[name].append(float(np.max(np.abs(beta - exact) / np.abs(exact))))
    auto, lstsq = np.array(worst["auto"]), np.array(worst["numpy.linalg.lstsq"])
    over = auto > 1e-12
    return "\n".join([
        f"Accuracy on {count} random small problems (n < 200, p 2–8, k 1–3, a quarter uncentred with an intercept; "
        f"seed {SEED + 6}), largest relative error of a coefficient against the exact least-squares solution of "
        f"the float64 data:", "",
        table(["method", "median", "largest", "problems over 1e-12", "total time / lstsq's"],
              [[name, f"{np.median(v):.1e}", f"{v.max():.1e}", f"{int((v > 1e-12).sum())}",
                f"{seconds[name] / seconds['numpy.linalg.lstsq']:.2f}"]
               for name, v in (("auto", auto), ("numpy.linalg.lstsq", lstsq))]),
        "", "- where auto is over 1e-12 (its estimate is first-order), lstsq's error on the same problems: "
            + (", ".join(f"{e:.1e}" for e in lstsq[over]) if over.any() else "none over")])


# --- (e) tall data classes --------------------------------------------------------------


def tall_class(kind: str, n: int, p: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Tall data of one class, built in place (no temporary copies of X): "gaussian"; "uncentred": an
    intercept column and features of mean 100; "collinear": the last column the first plus 7e-7 noise."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    if kind == "uncentred":
        X[:, 1:] += 100.0
        X[:, 0] = 1.0
    elif kind == "collinear":
        X[:, -1] = X[:, 0] + 7e-7 * rng.standard_normal(n)
    y = X @ rng.standard_normal(p)
    y += rng.standard_normal(n)
    return X, y


TALL_CLASSES = {"gaussian": "Gaussian", "uncentred": "uncentred, mean 100, with an intercept",
                "collinear": "one near-collinear pair"}


def optimality_error(X: np.ndarray, y: np.ndarray, beta: np.ndarray) -> float:
    """|Xᵀ(y − Xβ)|∞ / (|X|_F (|X|_F |β|₂ + |y|₂)), the products in extended precision (np.longdouble), by row
    blocks: how far β is from satisfying the normal equations of the data as given."""
    wide = np.longdouble
    b = np.asarray(beta, dtype=np.float64).astype(wide)
    g = np.zeros(X.shape[1], dtype=wide)
    for start in range(0, X.shape[0], 65_536):
        block = X[start : start + 65_536].astype(wide)
        g += block.T @ (y[start : start + 65_536].astype(wide) - block @ b)
    norm = float(np.linalg.norm(X))
    return float(np.max(np.abs(g))) / (norm * (norm * float(np.linalg.norm(beta)) + float(np.linalg.norm(y))))


_MEMORY_SCRIPT = """
import resource, sys, importlib.util
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from bench_numeric import tall_class
import numpy as np
X, y = tall_class(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
if sys.argv[6] == "auto":
    spec = importlib.util.spec_from_file_location("ols_attention", sys.argv[7])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    task = lambda: module.coefficients(X, y)
elif sys.argv[6] == "lstsq":
    task = lambda: np.linalg.lstsq(X, y, rcond=None)
else:
    task = lambda: X.T @ X
status = Path("/proc/self/status")
def kib(field):
    return next(int(line.split()[1]) for line in status.read_text().splitlines() if line.startswith(field))
try:  # reset the high-water mark, so the peak is the call's own
    Path("/proc/self/clear_refs").write_text("5")
    before = kib("VmRSS:")
    task()
    peak = kib("VmHWM:")
except OSError:  # no /proc: the process-wide peak (counts what building the data needed too)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    task()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((peak - before) * 1024 / X.nbytes)
"""


def extra_memory(kind: str, n: int, p: int, method: str, module_path: Path, threads: int | None) -> float:
    """Peak memory of one call beyond what the process held before it (Linux: the resident high-water mark,
    reset just before the call, minus the resident size then), in units of X's size, measured in a fresh
    interpreter so nothing earlier in this run counts."""
    env = dict(os.environ)
    if threads is not None:
        env.update(OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    out = subprocess.run([sys.executable, "-c", _MEMORY_SCRIPT, str(Path(__file__).resolve().parent), kind, str(n),
                          str(p), str(SEED + 4), method, str(module_path)], capture_output=True, text=True, env=env,
                         check=True).stdout
    return float(out.strip().splitlines()[-1])


def tall_classes(sizes: Sizes, oa: ModuleType, solvers: dict[str, Solver], memory_n: int, module_path: Path,
                 threads: int | None) -> str:
    """auto on the tall data classes, as ratios to X.T @ X timed next to it, with its optimality error."""
    n, p = sizes.tall_n, sizes.tall_p
    baseline = "X.T @ X (baseline)"
    peers = {name: solvers[name] for name in ("numpy.linalg.lstsq", "scipy lstsq gelsy") if name in solvers}
    rows, verdicts = [], []
    for kind, label in TALL_CLASSES.items():
        X, y = tall_class(kind, n, p, SEED + 4)
        cond = float(np.linalg.cond(X / np.linalg.norm(X, axis=0)))
        tasks: dict[str, Callable[[], object]] = {baseline: lambda X=X: X.T @ X,
                                                  "auto": lambda X=X, y=y: oa.coefficients(X, y)}
        for name, solve in peers.items():
            tasks[name] = lambda X=X, y=y, solve=solve: solve(X, y)
        results = {name: task() for name, task in tasks.items()}  # also the warm-up round
        timings = paired(tasks, baseline, sizes.repeats)
        opt = {name: optimality_error(X, y, results[name]) for name in ("auto", *peers)}
        reference = opt.get("numpy.linalg.lstsq", float("nan"))
        auto = timings["auto"]
        rows.append([label, f"{cond:.1e}", f"{timings[baseline].median() * 1e3:.0f}", f"{auto.median() * 1e3:.0f}",
                     f"{auto.ratio():.2f}", f"{auto.ratio_of_minimums():.2f}",
                     *(f"{timings[name].ratio():.1f}" for name in peers), f"{opt['auto']:.1e}",
                     *(f"{opt[name]:.1e}" for name in peers), f"{opt['auto'] / reference:.2f}"])
        limit = 1.5 if kind == "gaussian" else 3.0
        verdicts.append(f"- {label}: auto ≤ {limit}x X.T@X: {verdict(auto.ratio() <= limit)} ({auto.ratio():.2f}x); "
                        f"optimality error ≤ 10x lstsq's: {verdict(opt['auto'] <= 10 * reference)} "
                        f"({opt['auto'] / reference:.2f}x)")
        del X, y, results
    memory_rows = []
    for method in ("auto", "numpy.linalg.lstsq", "X.T @ X"):
        key = {"numpy.linalg.lstsq": "lstsq", "X.T @ X": "gram"}.get(method, method)
        memory_rows.append([method, f"{extra_memory('uncentred', memory_n, p, key, module_path, threads):.3f}"])
    auto_memory = float(memory_rows[0][1])
    lines = ["### (e) Tall data classes", "",
             f"n = {n:,}, p = {p}, k = 1 (seed {SEED + 4}); cond = condition number of X with unit column norms. "
             f"One warm-up round, then {sizes.repeats} rounds in rotating order, each method next to the baseline. "
             f"Optimality error = |Xᵀ(y − Xβ)|∞ / (|X|_F (|X|_F |β|₂ + |y|₂)) with the products in extended "
             f"precision.", "",
             table(["data", "cond", "X.T@X ms", "auto ms", "auto / X.T@X", "auto / X.T@X (minimums)",
                    *(f"{name} / X.T@X" for name in peers), "optimality error, auto",
                    *(f"optimality error, {name}" for name in peers), "auto / lstsq optimality error"], rows), "",
             *verdicts, "",
             f"Extra peak memory of one call on the uncentred class at n = {memory_n:,}, p = {p} (data "
             f"{memory_n * p * 8 / 2**20:,.0f} MiB): the resident high-water mark during the call minus the resident "
             f"size before it, in a fresh interpreter, in units of the data's size:",
             "", table(["method", "extra peak / data"], memory_rows), "",
             f"- auto's extra peak memory ≤ 0.25x the data: {verdict(auto_memory <= 0.25)} ({auto_memory:.3f}x)"]
    return "\n".join(lines)


# --- (f) realistic batches -----------------------------------------------------------------


def _one_thread(function: Callable[..., object], *args: object) -> object:
    """``function(*args)`` with the generated module's own threads turned off (OLS_ATTENTION_NUM_THREADS=1)."""
    before = os.environ.get("OLS_ATTENTION_NUM_THREADS")
    os.environ["OLS_ATTENTION_NUM_THREADS"] = "1"
    try:
        return function(*args)
    finally:
        if before is None:
            del os.environ["OLS_ATTENTION_NUM_THREADS"]
        else:
            os.environ["OLS_ATTENTION_NUM_THREADS"] = before


def realistic_batches(sizes: Sizes, oa: ModuleType) -> str:
    """auto on batches of prompts with an intercept and uncentred features, against a loop of lstsq."""
    B, n, p = sizes.batch, sizes.batch_n, sizes.batch_p
    rng = np.random.default_rng(SEED + 5)
    gaussian = rng.standard_normal((B, n, p))
    uncentred = gaussian.copy()
    uncentred[..., 1:] += 50.0
    uncentred[..., 0] = 1.0
    Y = np.einsum("bnp,bp->bn", uncentred, rng.standard_normal((B, p))) + 0.1 * rng.standard_normal((B, n))
    deficient = uncentred.copy()
    deficient[B // 3, :, -1] = deficient[B // 3, :, 1]  # rank p − 1: no Cholesky factor of the whole stack
    hard = uncentred.copy()
    hard[B // 2, :, -1] = hard[B // 2, :, 1] + 1e-8 * rng.standard_normal(n)
    batches = {"Gaussian features, no intercept": gaussian, "uncentred (mean 50) with an intercept": uncentred,
               "uncentred, one rank-deficient prompt": deficient, "uncentred, one prompt with cond 1e8": hard}
    rows, verdicts = [], []
    for label, X in batches.items():
        baseline = "loop"
        tasks: dict[str, Callable[[], object]] = {
            baseline: lambda X=X: np.stack([np.linalg.lstsq(X[b], Y[b], rcond=None)[0] for b in range(B)]),
            "auto": lambda X=X: oa.coefficients(X, Y),
            "auto, one thread": lambda X=X: _one_thread(oa.coefficients, X, Y)}
        results = {name: task() for name, task in tasks.items()}
        timings = {}
        for name in ("auto", "auto, one thread"):  # separately: each call right after a loop, never after auto
            timings.update(paired({baseline: tasks[baseline], name: tasks[name]}, baseline, sizes.repeats))
        auto = timings["auto"]
        again = {name: min(_wall(task) for _ in range(sizes.repeats)) for name, task in tasks.items()}
        scale = np.maximum(np.abs(results[baseline]).max(axis=-1, keepdims=True), 1e-300)
        delta = float(np.median(np.abs(results["auto"] - results[baseline]) / scale))
        assert np.array_equal(results["auto"], results["auto, one thread"])  # threads never change the bits
        rows.append([label, f"{timings[baseline].median() * 1e3:.1f}", f"{auto.median() * 1e3:.1f}",
                     _factor(1 / auto.ratio()), _factor(1 / auto.ratio_of_minimums()),
                     f"{again['auto'] * 1e3:.1f}", _factor(again[baseline] / again["auto"]),
                     _factor(1 / timings["auto, one thread"].ratio()), f"{delta:.1e}"])
        if label.startswith("uncentred") and "cond" not in label:
            verdicts.append(f"- {label}: ≥ 10x the loop: paired {verdict(1 / auto.ratio() >= 10)} "
                            f"({_factor(1 / auto.ratio())}x), back to back "
                            f"{verdict(again[baseline] / again['auto'] >= 10)} "
                            f"({_factor(again[baseline] / again['auto'])}x)")
    lines = ["### (f) Realistic batches", "",
             f"B = {B:,} prompts of n = {n}, p = {p}, k = 1 (seed {SEED + 5}); the uncentred prompts have an intercept "
             f"column and features of mean 50. One warm-up round, then {sizes.repeats} rounds in rotating order "
             f"(paired: each auto call right after a loop, as a call after other Python work sees it), then "
             f"each method {sizes.repeats} times back to back (its fastest run: data and clock warm). Speed-up = "
             f"loop time / auto time; the last column is the median over coefficients of |Δβ| / max|β| against "
             f"the loop. auto shares its passes over X among {oa._threads()} threads (the CPUs this process may "
             f"use, at most 8, unless OLS_ATTENTION_NUM_THREADS or OMP_NUM_THREADS says otherwise); "
             f"'one thread' is auto with OLS_ATTENTION_NUM_THREADS=1, "
             f"paired like auto in rounds of its own (the same bits: checked).", "",
             table(["batch", "loop of lstsq ms", "auto ms", "speed-up (median of pairs)", "speed-up (minimums)",
                    "auto ms back to back", "speed-up back to back", "speed-up one thread (median of pairs)",
                    "median rel. diff."], rows), "",
             *verdicts]
    return "\n".join(lines)


# --- (g) extreme scales -----------------------------------------------------------------

EXTREME_SCALES = (1e-300, 1e-170, 1.0, 1e150, 1e300)


def _scaled_case(label: str, X: np.ndarray, beta: np.ndarray, oa: ModuleType, reference: Callable[[], object],
                 at_one: float | None, repeats: int) -> tuple[list[str], float]:
    """One row of (g): auto's and the reference's largest relative error against β, and auto's time as a ratio
    to the reference (paired) and to ``at_one`` (auto's median time on the same data at scale 1)."""
    Y = np.einsum("...np,...p->...n", X, beta)
    tasks: dict[str, Callable[[], object]] = {"reference": lambda: reference(X, Y),
                                              "auto": lambda: oa.coefficients(X, Y)}
    results = {name: np.asarray(task()) for name, task in tasks.items()}
    timing = paired(tasks, "reference", repeats)["auto"]
    errors = [float(np.max(np.abs(results[name] - beta) / np.abs(beta))) for name in ("auto", "reference")]
    row = [label, f"{errors[0]:.1e}", f"{errors[1]:.1e}", f"{timing.median() * 1e3:.2f}", f"{timing.ratio():.2f}",
           "–" if at_one is None else f"{timing.median() / at_one:.2f}"]
    return row, timing.median()


def extreme_scales(sizes: Sizes, oa: ModuleType) -> str:
    """auto where XᵀX leaves the float range: accuracy against the β the data were made from, and cost."""
    rng = np.random.default_rng(SEED + 7)
    repeats = max(sizes.repeats, 5)

    def lstsq(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return np.linalg.lstsq(X, Y, rcond=None)[0]

    def loop(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return np.stack([np.linalg.lstsq(X[b], Y[b], rcond=None)[0] for b in range(len(X))])

    B, n, p = 512, sizes.batch_n, sizes.batch_p
    cases = {"20 × 3": ((20, 3), lstsq), "100,000 × 5": ((100_000, 5), lstsq),
             f"batch {B} × {n} × {p}, uncentred": ((B, n, p), loop)}
    rows = []
    for label, (shape, reference) in cases.items():
        X = rng.standard_normal(shape)
        if len(shape) == 3:
            X[..., 1:] += 50.0
            X[..., 0] = 1.0
        beta = rng.uniform(0.5, 2.0, shape[:-2] + shape[-1:])
        at_one = None
        for scale in (1.0, *(s for s in EXTREME_SCALES if s != 1.0)):
            row, median = _scaled_case(f"{label}, scale {scale:.0e}", X * scale, beta, oa, reference, at_one, repeats)
            at_one = at_one or median
            rows.append(row)
        if len(shape) == 3:  # every prompt at its own scale: a quarter ordinary, the others from 1e-290 to 1e150
            exponents = rng.uniform(-290, 150, B)
            exponents[: B // 4] = 0.0
            mixed = X * 10.0 ** exponents[:, None, None]
            row, _ = _scaled_case(f"{label}, a scale per prompt (1e-290 to 1e150)", mixed, beta, oa, reference, at_one,
                                  repeats)
            rows.append(row)
    X = rng.standard_normal((20, 3))
    rows.append(_scaled_case("20 × 3, subnormal (scale 1e-310)", X * 1e-310, np.array([1.0, -2.0, 0.5]), oa, lstsq,
                             None, repeats)[0])
    columns = rng.standard_normal((1_000, 2)) * [1e-150, 1e150]
    wild = np.array([3e150, -2e-150])
    rows.append(_scaled_case("1,000 × 2, columns 1e-150 and 1e150", columns, wild, oa, lstsq, None, repeats)[0])
    routes = []
    for route in ("svd", "qr", "eigh", "cholesky"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = oa.coefficients(columns, columns @ wild, route=route)
        routes.append(f"{route} {float(np.max(np.abs(got - wild) / np.abs(wild))):.1e}")
    return "\n".join([
        "### (g) Extreme scales", "",
        f"X Gaussian (the batch uncentred, mean 50, with an intercept), Y = Xβ with β uniform on [0.5, 2] (seed "
        f"{SEED + 7}), X scaled as said: at 1e-170 and below XᵀX underflows, at 1e160 and above it overflows. "
        f"Error = largest |Δβ_j| / |β_j| against that β (the data are Xβ rounded, so about eps cond(X) is the floor "
        f"for any solver). Time: auto's median ms, paired with the reference (numpy.linalg.lstsq, or its loop for the "
        f"batch) in {repeats} rounds, and auto's time over its own time on the same data at scale 1 (the cost of "
        f"the scaling).", "",
        table(["data", "auto error", "lstsq error", "auto ms", "auto / lstsq", "auto / auto at scale 1"], rows), "",
        f"- the same columns scaled 1e-150 and 1e150 through the other routes (error against β): {', '.join(routes)}",
    ])


# --- main -------------------------------------------------------------------------------


def _loadavg() -> str:
    path = Path("/proc/loadavg")
    return path.read_text().split()[0] if path.exists() else "?"


def _checkout() -> str:
    """The checkout's commit, and whether the code generator's inputs have uncommitted changes."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                                check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "derive", "proofs"], cwd=ROOT, capture_output=True,
                               text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return f"{commit}" + (" with uncommitted changes under derive/ or proofs/" if dirty else "")


def machine() -> str:
    """Facts about this machine and the library versions, as Markdown bullet points."""
    model = "unknown"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    versions = [f"numpy {np.__version__}"]
    for name in ("scipy", "sklearn", "statsmodels", "sympy", "mpmath"):
        module = _optional(name)
        versions.append(f"{name} {getattr(module, '__version__', '?')}" if module else f"{name} (not installed)")
    blas = "unknown"
    threadpoolctl = _optional("threadpoolctl")
    if threadpoolctl is not None:
        info = [i for i in threadpoolctl.threadpool_info() if i.get("user_api") == "blas"]
        blas = ", ".join(f"{i['internal_api']} {i.get('version')} ({i['num_threads']} threads)" for i in info) or blas
    elif os.environ.get("OPENBLAS_NUM_THREADS"):
        blas = f"numpy's BLAS with OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}"
    return "\n".join([
        f"- date (UTC): {datetime.now(timezone.utc):%Y-%m-%d %H:%M}",
        f"- nproc: {os.cpu_count()}; CPU: {model}; Python {platform.python_version()} on {platform.system()}",
        f"- {', '.join(versions)}",
        f"- BLAS: {blas}",
        f"- checkout: {_checkout()}",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller (b) and (c): well under a minute")
    parser.add_argument("--nist", type=Path, action="append", default=[],
                        help="another NIST file in the format of derive/data/nist_strd_lls.json (repeatable)")
    parser.add_argument("--repeats", type=int, default=None, help="timed repetitions (default 5, quick 3)")
    parser.add_argument("--batch", type=int, default=None, help="number of prompts in (c) (default 4096, quick 1024)")
    parser.add_argument("--threads", type=int, default=None,
                        help="limit BLAS threads (needs threadpoolctl); default: leave the libraries' own setting")
    parser.add_argument("--parts", default="abcdefg", help="which parts to run (letters a-g, default all)")
    parser.add_argument("--memory-n", type=int, default=None,
                        help="rows of the memory measurement in (e) (default 1,000,000, quick 100,000)")
    args = parser.parse_args(argv)
    if not set(args.parts) <= set("abcdefg"):
        parser.error("--parts takes letters among abcdefg")
    sizes = QUICK if args.quick else Sizes()
    if args.repeats is not None:
        sizes = dataclasses.replace(sizes, repeats=max(1, args.repeats))
    if args.batch is not None:
        sizes = dataclasses.replace(sizes, batch=max(1, args.batch))
    threadpoolctl = _optional("threadpoolctl")
    variables = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
    if args.threads is not None and threadpoolctl is None and os.environ.get(variables[0]) != str(args.threads):
        # no threadpoolctl: start again with the BLAS thread count in the environment, read when numpy loads
        os.execve(sys.executable, [sys.executable, str(Path(__file__).resolve()), *(sys.argv[1:] if argv is None
                                                                                   else argv)],
                  {**os.environ, **dict.fromkeys(variables, str(args.threads))})
    paths = [PACKAGED, *args.nist]
    notes: list[str] = []
    start = time.perf_counter()
    solvers = baselines(notes)
    limits: contextlib.AbstractContextManager = contextlib.nullcontext()
    if args.threads is not None and threadpoolctl is not None:  # after the imports above: every BLAS loaded
        limits = threadpoolctl.threadpool_limits(limits=args.threads, user_api="blas")
    load = _loadavg()
    with tempfile.TemporaryDirectory(prefix="bench_numeric_") as tmp, limits:
        oa, om = generate(Path(tmp))
        facts = machine()
        memory_n = args.memory_n or (100_000 if args.quick else 1_000_000)
        runs = {"a": lambda: nist_accuracy(paths, oa, om, solvers) if paths else "### (a) skipped: no NIST file",
                "b": lambda: tall_data(sizes, oa, solvers), "c": lambda: batched(sizes, oa),
                "d": lambda: small_problems(sizes, oa, solvers),
                "e": lambda: tall_classes(sizes, oa, solvers, memory_n, Path(tmp) / "ols_attention.py", args.threads),
                "f": lambda: realistic_batches(sizes, oa), "g": lambda: extreme_scales(sizes, oa)}
        parts = [run() for letter, run in runs.items() if letter in args.parts]
    given = sys.argv[1:] if argv is None else argv
    command = "python benchmarks/bench_numeric.py" + "".join(f" {shlex.quote(a)}" for a in given)
    print(f"Command: `{command}` (modules regenerated by `derive codegen` into a temporary directory)\n")
    print(facts)
    print(f"- load average (1 min) before / after the run: {load} / {_loadavg()}\n")
    for note in notes:
        print(f"- note: {note}")
    for part in parts:
        print(part + "\n")
    print(f"Total run time: {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
