"""Issue 30: ``coefficients`` against the peer a user would pick, on the data classes users have; time as a ratio to
the peer timed interleaved with it (median of --repeats), error against an accurate reference beside every time.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_peers.py [--repeats 7]

References: OLS, the module's own small-problem answer (exactly refined: the least-squares solution of the float64
data); ridge, the normal (p <= n) or dual (p > n) system refined with residuals in long double.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def ridge_reference(X, y, lam):
    wide = np.longdouble
    Xw, yw = X.astype(wide), y.astype(wide)
    n, p = X.shape
    if p > n:
        K = X @ X.T + lam * np.eye(n)
        a = np.linalg.solve(K, y)
        for _ in range(5):
            r = yw - Xw @ (Xw.T @ a.astype(wide)) - wide(lam) * a
            a = a + np.linalg.solve(K, r.astype(float))
        return (Xw.T @ a.astype(wide)).astype(float)
    G = X.T @ X + lam * np.eye(p)
    b = np.linalg.solve(G, X.T @ y)
    for _ in range(5):
        g = Xw.T @ (yw - Xw @ b.astype(wide)) - wide(lam) * b
        b = b + np.linalg.solve(G, g.astype(float))
    return b


def cases(rng):
    def gaussian(n, p):
        return rng.standard_normal((n, p)), rng.standard_normal(n)

    X, y = gaussian(1000, 10)
    yield "OLS Gaussian 1000 × 10", X, y, None
    X = rng.standard_normal((20, 3)) + 100.0
    X[:, 0] = 1.0
    yield "OLS uncentred 20 × 3", X, X @ rng.standard_normal(3) + rng.standard_normal(20), None
    X, y = gaussian(1000, 10)
    X[:, -1] = X[:, 0] + 7e-7 * rng.standard_normal(1000)
    yield "OLS near-collinear 1000 × 10", X, y, None
    X, y = gaussian(1000, 65)
    X[:, -1] = X[:, 1] - X[:, 2]
    yield "OLS rank-deficient 1000 × 65 (rank 64)", X, y, None
    X, y = gaussian(200, 2000)
    yield "ridge p > n 200 × 2000, λ = 1e-8", X, y, 1e-8
    X, y = gaussian(2000, 50)
    yield "ridge 2000 × 50, λ = 1", X, y, 1.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    import scipy.linalg as sl  # noqa: PLC0415
    from bench_rls import generated_module  # noqa: PLC0415
    from sklearn.linear_model import LinearRegression, Ridge  # noqa: PLC0415

    oa = generated_module()
    rng = np.random.default_rng(30)
    print("| data | solver | error | ms (median, range) | time / coefficients |")
    print("| --- | --- | --- | --- | --- |")
    for name, X, y, lam in cases(rng):
        if lam is None:
            solvers = {"coefficients": lambda X=X, y=y: oa.coefficients(X, y),
                       "numpy lstsq": lambda X=X, y=y: np.linalg.lstsq(X, y, rcond=None)[0],
                       "scipy lstsq gelsy": lambda X=X, y=y: sl.lstsq(X, y, lapack_driver="gelsy")[0],
                       "LinearRegression": lambda X=X, y=y: LinearRegression(fit_intercept=False).fit(X, y).coef_}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ref = oa.coefficients(X, y) if X.shape[1] < 65 else np.linalg.pinv(X) @ y
        else:
            solvers = {"coefficients": lambda X=X, y=y, lam=lam: oa.coefficients(X, y, ridge=lam)}
            for solver in ("auto", "cholesky", "svd"):
                solvers[f"Ridge({solver})"] = (lambda X=X, y=y, lam=lam, s=solver:
                                               Ridge(alpha=lam, fit_intercept=False, solver=s).fit(X, y).coef_)
            if X.shape[0] >= X.shape[1]:
                solvers["scipy solve pos"] = (lambda X=X, y=y, lam=lam: sl.solve(
                    X.T @ X + lam * np.eye(X.shape[1]), X.T @ y, assume_a="pos"))
            ref = ridge_reference(X, y, lam)
        times = {k: [] for k in solvers}
        results = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(args.repeats):
                for k, f in solvers.items():
                    t = time.perf_counter()
                    results[k] = f()
                    times[k].append(time.perf_counter() - t)
        base = float(np.median(times["coefficients"]))
        for k in solvers:
            err = np.max(np.abs(results[k] - ref)) / np.max(np.abs(ref))
            med = float(np.median(times[k]))
            print(f"| {name} | {k} | {err:.1e} | {1e3 * med:.2f} ({1e3 * min(times[k]):.2f}–"
                  f"{1e3 * max(times[k]):.2f}) | {med / base:.2f} |", flush=True)


if __name__ == "__main__":
    main()
