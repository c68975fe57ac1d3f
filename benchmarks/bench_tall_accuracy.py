"""Tall ill-conditioned single problems (issue 32): ``coefficients`` (route auto) against numpy.linalg.lstsq, error
against the exact least-squares solution of the float64 data, time as a ratio to lstsq timed interleaved with it
(median of --repeats).

    PYTHONPATH=. python benchmarks/bench_tall_accuracy.py [--repeats 7]

Data: X = G diag(s) Vᵀ, p = 16, s from 1 to 1e-8, y = Xβ + 1e-6 noise (10⁵ and 10⁶ rows); and 400,000 × 64
Gaussian with the last column the first plus 7e-7 noise, y = Xβ + N(0, 1) (``bench_numeric.tall_class``).
The reference is ``bench_rls_accuracy.exact`` (residual and Xᵀr exactly rounded).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    from bench_numeric import tall_class  # noqa: PLC0415
    from bench_rls import generated_module  # noqa: PLC0415
    from bench_rls_accuracy import exact, spectrum  # noqa: PLC0415

    oa = generated_module()
    cases = [("cond 1e8, 100,000 × 16", lambda: spectrum(100_000, 16, 1e8)),
             ("cond 1e8, 1,000,000 × 16", lambda: spectrum(1_000_000, 16, 1e8)),
             ("near-collinear pair, 400,000 × 64", lambda: tall_class("collinear", 400_000, 64, 7))]
    print("| data | coefficients error | lstsq error | coefficients ms (median, range) | lstsq ms | time ratio |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, make in cases:
        X, y = make()
        solvers = {"auto": lambda X=X, y=y: oa.coefficients(X, y),
                   "lstsq": lambda X=X, y=y: np.linalg.lstsq(X, y, rcond=None)[0]}
        times = {k: [] for k in solvers}
        results = {}
        for _ in range(args.repeats):
            for k, f in solvers.items():
                t = time.perf_counter()
                results[k] = f()
                times[k].append(time.perf_counter() - t)
        ref = exact(oa, X, y, results["lstsq"])
        err = {k: np.max(np.abs(v - ref)) / np.max(np.abs(ref)) for k, v in results.items()}
        med = {k: 1e3 * float(np.median(v)) for k, v in times.items()}
        print(f"| {name} | {err['auto']:.1e} | {err['lstsq']:.1e} | {med['auto']:.0f} "
              f"({1e3 * min(times['auto']):.0f}–{1e3 * max(times['auto']):.0f}) | {med['lstsq']:.0f} "
              f"({1e3 * min(times['lstsq']):.0f}–{1e3 * max(times['lstsq']):.0f}) | {med['auto'] / med['lstsq']:.2f} |",
              flush=True)


if __name__ == "__main__":
    main()
