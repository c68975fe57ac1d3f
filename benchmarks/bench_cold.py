"""Why a batch is slower right after other Python work: one pass over a stack of prompts, timed on consecutive calls.

The realistic-batch benchmark (part (f) of ``bench_numeric.py``) times each ``auto`` call right after a loop of
lstsq and also back to back. This diagnostic times the refinement's pass over X (the residuals and Xᵀr, a block
of problems at a time) on three consecutive calls after the loop, after the loop and a full read of X, and in
steady state, to show whether the slow first milliseconds come from X's place in the cache or from elsewhere.

Usage: python benchmarks/bench_cold.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_numeric import generate  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        oa, _ = generate(Path(tmp))
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(1)
    except ImportError:
        print("threadpoolctl is not installed: BLAS keeps its own thread count")
    B, n, p = 4096, 64, 8
    rng = np.random.default_rng(5)
    X = rng.standard_normal((B, n, p))
    X[..., 1:] += 50.0
    X[..., 0] = 1.0
    Y, beta = rng.standard_normal((B, n, 1)), rng.standard_normal((B, p, 1))

    def loop() -> None:
        for b in range(B):
            np.linalg.lstsq(X[b], Y[b], rcond=None)

    times: dict[str, list[float]] = {}

    def timed(name: str) -> None:
        start = time.perf_counter()
        oa._gradient(X, Y, beta)
        times.setdefault(name, []).append((time.perf_counter() - start) * 1e3)

    for _ in range(args.rounds):
        loop()
        for call in ("1st call after the loop", "2nd call", "3rd call"):
            timed(call)
        loop()
        X.sum()
        timed("after the loop and a full read of X")
        for _ in range(10):
            oa._gradient(X, Y, beta)
        timed("steady state (after 10 calls)")
    print(f"One pass over a 4,096 × 64 × 8 stack (16 MiB): residuals and Xᵀr, median of {args.rounds} rounds, ms")
    print()
    print("| when | ms |")
    print("| --- | --- |")
    for name, values in times.items():
        print(f"| {name} | {statistics.median(values):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
