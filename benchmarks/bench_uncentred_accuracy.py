"""Issue 30: route "auto" against numpy.linalg.lstsq on random uncentred problems, each error against the exact
least-squares solution of the float64 data (route "exact").

    PYTHONPATH=. python benchmarks/bench_uncentred_accuracy.py [--problems 600] [--seed 1]

Kinds: an intercept column and columns sharing an offset (n 5–300, then 300–5,000 rows), columns sharing an offset
without an intercept, the same with weights 0.1–10 (against lstsq of the √w rows), and stacks of 2 to 12 problems
(8 to 60 rows), and 36 stacks of 300 problems (10 to 100 rows, p 3–12), one for every offset, spread and
intercept value (0.37, 1 or 3, in a random column); every problem of a stack is counted. Offsets 10 to 10⁴,
columns' spread 0.1, 1 or 10, p 2–12.
Targets: a model with noise (0.01, 1 or 100) or pure noise. Prints, per kind and offset, the ratio of auto's error to
lstsq's: median, 95th percentile, maximum, and how many problems are beyond 10 (the issue's bound; errors under
1e-13 of the largest coefficient count as within it).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

OFFSETS = (10.0, 100.0, 1000.0, 1e4)
KINDS = {  # name: (rows, intercept, weighted, problems per stack: None for single problems)
    "intercept, 5–300 rows": ((5, 300), True, False, None),
    "intercept, 300–5,000 rows": ((300, 5000), True, False, None),
    "no intercept, 5–300 rows": ((5, 300), False, False, None),
    "weighted, 20–3,000 rows": ((20, 3000), True, True, None),
    "stacks, 8–60 rows": ((8, 60), True, False, (2, 13)),
    "stacks of 300, 10–100 rows": ((10, 100), True, False, (300, 301)),
}
LARGE = 256  # stacks of at least this many problems: one stack per offset, spread and intercept (36 stacks)
INTERCEPTS = (1.0, 0.37, 3.0)  # large stacks: β_k = γ_k − mᵀγ / c magnifies the centred answer's errors by |m|/|c|
FLOOR = 1e-13


def problems(rng, count, rows, intercept, weighted, stacked):
    """(offset, X, Y, w or None)."""
    if stacked is not None and stacked[0] >= LARGE:
        yield from large_stacks(rng, rows, stacked)
        return
    for t in range(count):
        n = int(rng.integers(*rows))
        p = int(rng.integers(2, min(n - 1, 12) + 1))
        shape = ((int(rng.integers(*stacked)),) if stacked else ()) + (n, p)
        offset = OFFSETS[t % len(OFFSETS)]
        X = rng.standard_normal(shape) * rng.choice([0.1, 1.0, 10.0]) + offset
        if intercept:
            X[..., 0] = 1.0
        noise = rng.choice([0.01, 1.0, 100.0]) * rng.standard_normal(shape[:-1] + (1,))
        Y = X @ rng.standard_normal(shape[:-2] + (p, 1)) + noise if t % 2 else noise
        yield offset, X, Y, (rng.uniform(0.1, 10.0, n) if weighted else None)


def large_stacks(rng, rows, stacked):
    """(offset, X, Y, None) for every offset (either sign), spread and intercept value: a stack of problems with the
    intercept column in one random place and a model with noise 0.01, 1 or 100 as targets."""
    for offset in OFFSETS:
        for spread in (0.1, 1.0, 10.0):
            for c in INTERCEPTS:
                n = int(rng.integers(*rows))
                p = int(rng.integers(3, min(n - 1, 12) + 1))
                shape = (int(rng.integers(*stacked)), n, p)
                X = rng.standard_normal(shape) * spread + offset * rng.choice([1, -1])
                X[..., int(rng.integers(0, p))] = c
                noise = rng.choice([0.01, 1.0, 100.0]) * rng.standard_normal(shape[:-1] + (1,))
                yield offset, X, X @ rng.standard_normal((shape[0], p, 1)) + noise, None


def relative(got, want):
    return float(np.abs(got - want).max() / np.abs(want).max())


def ratios(oa, rng, count, kind):
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for offset, X, Y, w in problems(rng, count, *KINDS[kind]):
            ours = oa.coefficients(X, Y, weights=w)
            A, B = (X, Y) if w is None else (X * np.sqrt(w)[:, None], Y * np.sqrt(w)[:, None])
            # the reference: route "exact", the exact solution rounded once, one problem at a time (docs/codegen.md)
            exact = np.stack([oa.coefficients(a, b, route="exact") for a, b in
                              zip(A.reshape((-1,) + A.shape[-2:]), B.reshape((-1,) + B.shape[-2:]), strict=True)])
            for a, b, mine, want in zip(A.reshape((-1,) + A.shape[-2:]), B.reshape((-1,) + B.shape[-2:]),
                                        ours.reshape((-1,) + ours.shape[-2:]),
                                        exact, strict=True):
                lstsq = relative(np.linalg.lstsq(a, b, rcond=None)[0], want)
                error = relative(mine, want)
                out.setdefault(offset, []).append((error / max(lstsq, 1e-16), error > max(10 * lstsq, FLOOR)))
    return {offset: np.array(values) for offset, values in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--problems", type=int, default=600, help="per kind")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    from bench_rls import generated_module  # noqa: PLC0415

    oa = generated_module()
    print("| kind | offset | problems | median | 95th percentile | maximum | beyond 10× |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for kind in KINDS:
        found = ratios(oa, np.random.default_rng(args.seed), args.problems, kind)
        for offset, r in sorted(found.items()):
            print(f"| {kind} | {offset:g} | {len(r)} | {np.median(r[:, 0]):.2f} | {np.quantile(r[:, 0], 0.95):.1f} | "
                  f"{r[:, 0].max():.0f} | {int(r[:, 1].sum())} |")


if __name__ == "__main__":
    main()
