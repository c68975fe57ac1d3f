"""Issue 30, open: route "auto" against numpy.linalg.lstsq on random uncentred problems (an intercept column and
columns sharing an offset), each error against the exact least-squares solution of the float64 data (route "exact").

    PYTHONPATH=. python benchmarks/bench_uncentred_accuracy.py [--problems 600] [--seed 1]

Prints, per offset, the ratio of auto's error to lstsq's: median, 95th percentile, maximum, and how many problems are
beyond 10 (the issue's bound). Targets: a model with noise (0.01, 1 or 100) or pure noise.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def problems(rng, count, offsets=(10.0, 100.0, 1000.0, 1e4)):
    """(offset, X, Y): n from 5 to 300, p from 2 to 12, an intercept column, Y a model with noise or pure noise."""
    for t in range(count):
        n = int(rng.integers(5, 300))
        p = int(rng.integers(2, min(n - 1, 12) + 1))
        offset = offsets[t % len(offsets)]
        X = rng.standard_normal((n, p)) + offset
        X[:, 0] = 1.0
        if t % 2:
            Y = X @ rng.standard_normal((p, 1)) + rng.choice([0.01, 1.0, 100.0]) * rng.standard_normal((n, 1))
        else:
            Y = rng.standard_normal((n, 1))
        yield offset, X, Y


def ratios(oa, rng, count):
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for offset, X, Y in problems(rng, count):
            exact = oa.coefficients(X, Y, route="exact")
            scale = np.abs(exact).max()
            ours = np.abs(oa.coefficients(X, Y) - exact).max() / scale
            lstsq = np.abs(np.linalg.lstsq(X, Y, rcond=None)[0] - exact).max() / scale
            out.setdefault(offset, []).append(ours / max(lstsq, 1e-16))
    return {offset: np.array(values) for offset, values in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--problems", type=int, default=600)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    from bench_rls import generated_module  # noqa: PLC0415

    found = ratios(generated_module(), np.random.default_rng(args.seed), args.problems)
    print("| offset | problems | median | 95th percentile | maximum | beyond 10× |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for offset, r in sorted(found.items()):
        print(f"| {offset:g} | {len(r)} | {np.median(r):.2f} | {np.quantile(r, 0.95):.1f} | {r.max():.0f} | "
              f"{int((r > 10).sum())} |")


if __name__ == "__main__":
    main()
