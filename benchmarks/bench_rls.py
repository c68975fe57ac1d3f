"""Streaming least squares (issue 21): RecursiveLeastSquares of the generated NumPy module.

The module is regenerated with ``derive codegen`` into a temporary directory and imported. One stream of
``--rows`` rows (default 10⁶) of p features, columns scaled from 1 to ``--spread`` (cond(X) about that),
y = Xβ + noise, is fed to ``RecursiveLeastSquares`` in chunks of ``--chunk`` rows with ``--singles`` single rows
spread through it; its coefficients are then compared with the batch ridge solution ``coefficients(X, y,
ridge=λ)`` of all rows (relative error, max norm), and with those of OLS (λ = 0, ``ridge=None``). Costs per
row: a chunked update, a single-row update, and a batch refit of all rows so far (what a non-streaming user
pays for every new chunk). For contrast, the covariance form of RLS (Sherman–Morrison on P = (XᵀX + λI)⁻¹,
the textbook update) on the first ``--sm-rows`` rows, one row at a time.

    python benchmarks/bench_rls.py [--rows N] [--p P] [--chunk C] [--singles S] [--ridge L] [--spread K]
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def generated_module():
    out = Path(tempfile.mkdtemp(prefix="bench_rls_"))
    subprocess.run([sys.executable, "-m", "derive", "codegen", "--out", str(out), "--backend", "numpy"], check=True,
                   capture_output=True)
    spec = importlib.util.spec_from_file_location("ols_attention", out / "ols_attention.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def relative(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())


def stream(oa, X, y, ridge, chunk, singles):
    """Feed X, y: chunks of ``chunk`` rows, with ``singles`` single rows spread evenly; (rls, seconds in chunked
    updates, chunked rows, seconds in single-row updates)."""
    rls = oa.RecursiveLeastSquares(X.shape[1], ridge=ridge)
    n = len(X)
    single_at = set(np.linspace(0, n - 1, singles, dtype=int).tolist()) if singles else set()
    t_chunk = t_single = 0.0
    rows_chunked = 0
    start = 0
    while start < n:
        if start in single_at:
            t = time.perf_counter()
            rls.update(X[start], y[start])
            t_single += time.perf_counter() - t
            start += 1
            continue
        stop = min(start + chunk, n)
        nxt = [i for i in range(start, stop) if i in single_at] if single_at else []
        stop = nxt[0] if nxt else stop
        t = time.perf_counter()
        rls.update(X[start:stop], y[start:stop])
        t_chunk += time.perf_counter() - t
        rows_chunked += stop - start
        start = stop
    return rls, t_chunk, rows_chunked, t_single


def sherman_morrison(X, y, ridge):
    """The covariance form: P = (XᵀX + λI)⁻¹ updated by Sherman–Morrison, one row at a time."""
    p = X.shape[1]
    P, beta = np.eye(p) / ridge, np.zeros(p)
    for x, target in zip(X, y, strict=True):
        Px = P @ x
        gain = Px / (1.0 + x @ Px)
        beta = beta + gain * (target - x @ beta)
        P = P - np.outer(gain, Px)
    return beta


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--p", type=int, default=20)
    parser.add_argument("--chunk", type=int, default=1000)
    parser.add_argument("--singles", type=int, default=1000, help="single-row updates spread through the stream")
    parser.add_argument("--ridge", type=float, default=1e-3)
    parser.add_argument("--spread", type=float, default=1e3, help="column scales from 1 to this")
    parser.add_argument("--sm-rows", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    oa = generated_module()
    rng = np.random.default_rng(args.seed)
    scales = np.logspace(0, np.log10(args.spread), args.p)
    X = rng.standard_normal((args.rows, args.p)) * scales
    y = X @ rng.standard_normal(args.p) + rng.standard_normal(args.rows)
    warm = oa.RecursiveLeastSquares(args.p, ridge=1.0)  # first calls load LAPACK paths: not timed
    warm.update(X[:2000], y[:2000])
    warm.update(X[0], y[0])
    oa.coefficients(X[:2000], y[:2000], ridge=1.0)
    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()}, numpy {np.__version__}")
    print(f"# {args.rows} rows × p = {args.p}, column scales 1 … {args.spread:g}, chunks of {args.chunk}, "
          f"{args.singles} single rows, ridge λ = {args.ridge:g}")
    print("| λ | relative error vs batch | chunked update, µs/row | single-row update, µs/row | batch refit of all "
          "rows, s | batch, µs/row |")
    print("| --- | --- | --- | --- | --- | --- |")
    for ridge in (args.ridge, None):
        rls, t_chunk, rows_chunked, t_single = stream(oa, X, y, ridge, args.chunk, args.singles)
        t_batch = math.inf
        for _ in range(3):  # the best of three: the machine is shared
            t = time.perf_counter()
            batch = oa.coefficients(X, y, ridge=ridge)
            t_batch = min(t_batch, time.perf_counter() - t)
        error = relative(rls.coefficients, batch)
        single = f"{1e6 * t_single / args.singles:.1f}" if args.singles else "—"
        print(f"| {ridge if ridge is not None else 'None (OLS)'} | {error:.1e} | {1e6 * t_chunk / rows_chunked:.2f} "
              f"| {single} | {t_batch:.3f} | {1e6 * t_batch / args.rows:.2f} |")
    m = min(args.sm_rows, args.rows)
    t = time.perf_counter()
    rls, *_ = stream(oa, X[:m], y[:m], args.ridge, 1, 0)
    t_sqrt = time.perf_counter() - t
    reference = oa.coefficients(X[:m], y[:m], ridge=args.ridge)
    t = time.perf_counter()
    sm = sherman_morrison(X[:m], y[:m], args.ridge)
    t_sm = time.perf_counter() - t
    print(f"\n# the first {m} rows one at a time, λ = {args.ridge:g}: relative error vs batch, square-root form "
          f"(this module) {relative(rls.coefficients, reference):.1e} ({1e6 * t_sqrt / m:.1f} µs/row); "
          f"covariance form (Sherman–Morrison on P) "
          f"{relative(sm, reference):.1e} ({1e6 * t_sm / m:.1f} µs/row)")


if __name__ == "__main__":
    main()
