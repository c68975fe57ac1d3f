"""Issue 43: stacks of problems far from the origin, the NumPy module and the array-API code (jitted in JAX, or
eager on array_api_strict arrays where JAX is missing; PyTorch's path with no host reads where PyTorch is installed)
against numpy.linalg.lstsq, each problem's error against its
exact least-squares solution (route "exact").

    PYTHONPATH=. python benchmarks/bench_stack_accuracy.py [--seed 11] [--intercepts 1,0.37,3]

One stack of 300 problems for every offset (10, 50, 100, 10³, 10⁴, of either sign), spread (0.1, 1, 10) and
intercept value (a column of that constant in a random place): 10–100 rows, 3–12 columns, targets a model with
noise 0.01, 1 or 100. Prints, per module, how many problems are beyond 10× lstsq's error and over 1e-13 of their
largest coefficient (the issue's bound, as ``bench_uncentred_accuracy.py`` counts it), and the worst error over
that bound.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

OFFSETS = (10.0, 50.0, 100.0, 1e3, 1e4)
SPREADS = (0.1, 1.0, 10.0)
FLOOR = 1e-13


def stacks(rng, intercepts, batch=300):
    """(X, Y) for every offset, spread and intercept value."""
    for offset in OFFSETS:
        for spread in SPREADS:
            for c in intercepts:
                n = int(rng.integers(10, 100))
                p = int(rng.integers(3, min(n - 1, 12) + 1))
                X = rng.normal(size=(batch, n, p)) * spread + offset * rng.choice([1, -1])
                X[..., int(rng.integers(0, p))] = c
                Y = X @ rng.normal(size=(batch, p, 1)) + rng.choice([0.01, 1.0, 100.0]) * rng.normal(size=(batch, n, 1))
                yield X, Y


def solvers(ox):
    """name: function of (X, Y) -> β as a NumPy array, for the array-API code: jitted in JAX (array_api_strict where
    JAX is missing), and PyTorch's path with nothing read on the host (the GPU design, here on CPU) where PyTorch
    is installed."""
    found = {}
    try:
        import jax  # noqa: PLC0415
    except ImportError:
        import array_api_strict as xs  # noqa: PLC0415

        found["array-API code (array_api_strict)"] = lambda X, Y: np.asarray(ox.coefficients(xs.asarray(X),
                                                                                              xs.asarray(Y)))
    else:
        jax.config.update("jax_enable_x64", True)
        jitted = jax.jit(lambda X, Y: ox.coefficients(X, Y))
        found["array-API code (jax.jit)"] = lambda X, Y: np.asarray(jitted(jax.numpy.asarray(X),
                                                                           jax.numpy.asarray(Y)))
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        return found

    def lazy(X, Y):
        ox.HOST_NUMERICS = False  # the array-API code on CPU tensors too (by default they go to the NumPy module)
        try:
            return ox.coefficients(torch.from_numpy(X), torch.from_numpy(Y)).numpy()
        finally:
            ox.HOST_NUMERICS = True

    found["array-API code (PyTorch, no host reads)"] = lazy
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--intercepts", default="1,0.37,3", help="the intercept columns' values, comma-separated")
    args = parser.parse_args()
    intercepts = tuple(float(value) for value in args.intercepts.split(","))
    from bench_frameworks import generate, load  # noqa: PLC0415

    out = Path(tempfile.mkdtemp())
    generate(out)
    oa, ox = load(out, "ols_attention"), load(out, "ols_attention_xp")
    modules = {"NumPy module": oa.coefficients, **solvers(ox)}
    beyond, worst, total = dict.fromkeys(modules, 0), dict.fromkeys(modules, 0.0), 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for X, Y in stacks(np.random.default_rng(args.seed), intercepts):
            exact = oa.coefficients(X, Y, route="exact")
            lstsq = np.stack([np.linalg.lstsq(a, b, rcond=None)[0] for a, b in zip(X, Y, strict=True)])
            scale = np.abs(exact).max(axis=(1, 2))
            bound = np.maximum(10 * np.abs(lstsq - exact).max(axis=(1, 2)) / scale, FLOOR)
            for module, solve in modules.items():
                error = np.abs(solve(X, Y) - exact).max(axis=(1, 2)) / scale
                beyond[module] += int((error > bound).sum())
                worst[module] = max(worst[module], float((error / bound).max()))
            total += len(X)
    print(f"{total} problems (intercepts {', '.join(map(str, intercepts))}; seed {args.seed})")
    print("| module | beyond 10× lstsq's error | worst error over that bound |")
    print("| --- | ---: | ---: |")
    for module in modules:
        print(f"| {module} | {beyond[module]} | {worst[module]:.2f} |")


if __name__ == "__main__":
    main()
