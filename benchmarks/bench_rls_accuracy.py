"""Streaming accuracy (issue 32): ``RecursiveLeastSquares`` over long streams against the exact least-squares
solution of the float64 data, beside numpy.linalg.lstsq and the batch ``coefficients`` on all rows, and
statsmodels ``RecursiveLS`` (on fewer rows: it keeps a state per row and is slow).

    PYTHONPATH=. python benchmarks/bench_rls_accuracy.py [--rows 1000000] [--sm-rows 100000] [--chunk 1000]

Data: X = G diag(s) Vᵀ (G Gaussian, s from 1 to 1/cond, V a random rotation), p = 16, y = Xβ + 1e-6 noise.
The exact reference refines lstsq's answer with residuals and Xᵀr exactly rounded (Dekker products, math.fsum).
Error: max |β − β_exact| / max |β_exact|.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def spectrum(n: int, p: int, cond: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((n, p))
    V = np.linalg.qr(rng.standard_normal((p, p)))[0]
    X = G * np.logspace(0, -math.log10(cond), p) @ V.T
    return X, X @ rng.standard_normal(p) + 1e-6 * rng.standard_normal(n)


def exact(oa, X: np.ndarray, y: np.ndarray, start: np.ndarray, steps: int = 3) -> np.ndarray:
    beta = np.array(start, dtype=float).ravel()
    R = np.linalg.qr(X, mode="r")
    for _ in range(steps):
        p, e = oa._two_prod(X, beta[None, :])
        rows = np.concatenate([y[:, None], -p, -e], axis=1).tolist()
        high = [math.fsum(r) for r in rows]
        low = np.array([math.fsum(r + [-h]) for r, h in zip(rows, high, strict=True)])
        high = np.array(high)
        g = np.array([math.fsum(np.concatenate([*oa._two_prod(X[:, j], high), *oa._two_prod(X[:, j], low)]).tolist())
                      for j in range(X.shape[1])])
        beta = beta + np.linalg.solve(R, np.linalg.solve(R.T, g))
    return beta


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--sm-rows", type=int, default=100_000)
    parser.add_argument("--chunk", type=int, default=1_000)
    args = parser.parse_args()
    from bench_rls import generated_module  # noqa: PLC0415

    oa = generated_module()
    try:
        from statsmodels.regression.recursive_ls import RecursiveLS  # noqa: PLC0415
    except ImportError:
        RecursiveLS = None
    print("| cond | rows | RecursiveLeastSquares (chunks) | lstsq | coefficients (batch) | statsmodels RecursiveLS |")
    print("| --- | --- | --- | --- | --- | --- |")
    for cond in (1e3, 1e8):
        for n in (args.sm_rows, args.rows):
            X, y = spectrum(n, 16, cond)
            rls = oa.RecursiveLeastSquares(16)
            t = time.perf_counter()
            for start in range(0, n, args.chunk):
                rls.update(X[start : start + args.chunk], y[start : start + args.chunk])
            b_rls = rls.coefficients
            t_rls = time.perf_counter() - t
            b_lstsq = np.linalg.lstsq(X, y, rcond=None)[0]
            b_batch = oa.coefficients(X, y)
            ref = exact(oa, X, y, b_lstsq)

            def err(b, ref=ref):
                return f"{np.max(np.abs(np.ravel(b) - ref)) / np.max(np.abs(ref)):.1e}"

            sm = "—"
            if RecursiveLS is not None and n <= args.sm_rows:
                t = time.perf_counter()
                b_sm = RecursiveLS(y, X).fit().params
                sm = f"{err(b_sm)} ({time.perf_counter() - t:.1f} s)"
            print(f"| {cond:.0e} | {n:,} | {err(b_rls)} ({t_rls:.1f} s) | {err(b_lstsq)} | {err(b_batch)} | {sm} |",
                  flush=True)


if __name__ == "__main__":
    main()
