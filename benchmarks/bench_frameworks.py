"""The generated array-API and Dask modules against the frameworks' own least-squares solvers.

Batches of prompts (B problems of n × p, float64), Gaussian and uncentred (an intercept column and features of
mean 50): ``ols_attention_xp.py`` jitted in JAX against ``jax.jit(jax.vmap(jnp.linalg.lstsq))`` and a jitted
Cholesky solve (``cho_factor``/``cho_solve`` of XᵀX); in PyTorch (one thread: ``torch.set_num_threads(1)``, and
the NumPy module's numerics and NumPy's BLAS on one thread too) against ``torch.linalg.lstsq`` and
``torch.linalg.cholesky`` + ``torch.cholesky_solve``: the xp module's default call (route "auto" on CPU tensors
is the NumPy module's) and its array-API code (``HOST_NUMERICS = False``, what runs traced, differentiated or on
a GPU), eager JAX likewise. Beside every time, the
accuracy: the optimality error ‖Xᵀ(Xβ − y)‖ / (‖X‖²‖β‖ + ‖X‖‖y‖) (Frobenius norms, residuals in long double),
median and maximum over the problems. Then tall data chunked by rows: ``ols_attention_dask.py`` against
``dask.array.linalg.lstsq``, with each run's peak resident memory (a fresh process per run).

    python benchmarks/bench_frameworks.py [--batch 4096] [--n 64] [--p 8] [--tall 2000000] [--repeats 5]
        [--lazy 20000000 --lazy-p 32 --lazy-rows 250000 --lazy-repeats 3]
    python benchmarks/bench_frameworks.py --interleaved 21   # issue 43's rows: each solver against its lstsq,
                                                             # interleaved rounds, the range of the ratios

With ``--lazy N`` an N × p problem (intercept + features of mean 50) is generated chunk by chunk inside the
Dask graph and never persisted, so each pass over it makes the chunks again; its peak resident memory (the
``ru_maxrss`` of a fresh process per run) shows what memory the solver needs. Times there are medians.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def generate(out: Path) -> None:
    from derive.cli import main

    assert main(["codegen", "--backend", "all", "--out", str(out)]) == 0


def load(out: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, out / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def problems(kind: str, B: int, n: int, p: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(B, n, p))
    if kind == "uncentred":
        X[..., 0] = 1.0
        X[..., 1:] += 50.0
    y = X @ rng.normal(size=(B, p, 1)) + rng.normal(size=(B, n, 1))
    return X, y[..., 0]


def optimality(X, y, beta) -> tuple[float, float]:
    """(median, max) over problems of ‖Xᵀ(Xβ − y)‖ / (‖X‖²‖β‖ + ‖X‖‖y‖), residuals in long double."""
    Xl, yl, bl = (np.asarray(a, dtype=np.longdouble) for a in (X, y, beta))
    r = np.einsum("bij,bj->bi", Xl, bl) - yl
    g = np.linalg.norm(np.einsum("bij,bi->bj", Xl, r).astype(np.float64), axis=-1)
    nx = np.linalg.norm(X, axis=(-2, -1))
    scale = nx**2 * np.linalg.norm(np.asarray(beta, dtype=np.float64), axis=-1) + nx * np.linalg.norm(y, axis=-1)
    e = g / scale
    return float(np.median(e)), float(e.max())


def best_time(run, repeats: int) -> float:
    """The median of ``repeats`` timed runs after a warm-up (the median, not the minimum: shared machines)."""
    run()  # compile / warm up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def bench_jax(ox, kinds, B, n, p, repeats):
    import jax
    import jax.numpy as jnp
    from jax.scipy.linalg import cho_factor, cho_solve

    jax.config.update("jax_enable_x64", True)
    ours = jax.jit(lambda X, y: ox.coefficients(X, y))
    once = jax.jit(lambda X, y: ox.coefficients(X, y, refine=1))
    eager = ox.coefficients  # not traced: route "auto" on the CPU is the NumPy module's
    lstsq = jax.jit(jax.vmap(lambda X, y: jnp.linalg.lstsq(X, y)[0]))
    chol = jax.jit(jax.vmap(lambda X, y: cho_solve(cho_factor(X.T @ X, lower=True), X.T @ y)))
    rows = []
    for kind in kinds:
        X, y = problems(kind, B, n, p)
        jX, jy = jnp.asarray(X), jnp.asarray(y)
        for name, f in (("xp module (jit)", ours), ("xp module, refine=1 (jit)", once), ("jit(vmap(lstsq))", lstsq),
                        ("jit(vmap(cho_solve))", chol), ("xp module, eager (CPU: the NumPy module's auto)", eager)):
            seconds = best_time(lambda f=f, a=jX, b=jy: f(a, b).block_until_ready(), repeats)
            rows.append({"framework": "jax", "data": kind, "solver": name, "ms": 1e3 * seconds,
                         "optimality": optimality(X, y, np.asarray(f(jX, jy)))})
    return rows


def array_code(f):
    """``f`` with the xp module's array-API code on CPU arrays too (``HOST_NUMERICS = False``)."""

    def run(*args, **keywords):
        ox = sys.modules["ols_attention_xp"]
        ox.HOST_NUMERICS = False
        try:
            return f(*args, **keywords)
        finally:
            ox.HOST_NUMERICS = True

    return run


def bench_torch(ox, kinds, B, n, p, repeats):
    import os

    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)
    os.environ["OLS_ATTENTION_NUM_THREADS"] = "1"  # the NumPy module's numerics on one thread too
    limits = threadpool_limits(1)  # and NumPy's BLAS
    ours = lambda X, y: ox.coefficients(X, y)  # noqa: E731
    arrays = array_code(ours)
    once = lambda X, y: ox.coefficients(X, y, refine=1)  # noqa: E731
    lstsq = lambda X, y: torch.linalg.lstsq(X, y[..., None]).solution[..., 0]  # noqa: E731

    def chol(X, y):
        C = torch.linalg.cholesky(X.mT @ X)
        return torch.cholesky_solve((X.mT @ y[..., None]), C)[..., 0]

    compiled = torch.compile(ours)
    rows = []
    for kind in kinds:
        X, y = problems(kind, B, n, p)
        tX, ty = torch.tensor(X), torch.tensor(y)
        for name, f in (("xp module (CPU: the NumPy module's auto)", ours),
                        ("xp module, array-API code", arrays), ("xp module, refine=1", once),
                        ("xp module (torch.compile)", compiled),
                        ("xp module, refine=0 (= route 'cholesky')", lambda X, y: ox.coefficients(X, y, refine=0)),
                        ("torch.linalg.lstsq", lstsq), ("cholesky + cholesky_solve", chol)):
            seconds = best_time(lambda f=f, a=tX, b=ty: f(a, b), repeats)
            rows.append({"framework": "torch (1 thread)", "data": kind, "solver": name, "ms": 1e3 * seconds,
                         "optimality": optimality(X, y, f(tX, ty).numpy())})
    limits.restore_original_limits()
    os.environ.pop("OLS_ATTENTION_NUM_THREADS")
    return rows


def bench_interleaved(ox, kinds, B, n, p, rounds, seed=0):
    """Issue 43's rows: each solver against its peer timed in the same process, interleaved (every solver once per
    round, in a new random order, after a gc.collect()), one thread everywhere; per pair the median of each and
    the range of the per-round ratios peer / ours. The NumPy module (``ols_attention.py``, beside the xp module)
    against a loop of numpy.linalg.lstsq, jitted JAX against jit(vmap(lstsq)), PyTorch (the default call, and the
    array-API code that runs on a GPU: ``HOST_NUMERICS = False``) against torch.linalg.lstsq."""
    import gc
    import os
    import random

    import jax
    import jax.numpy as jnp
    import torch
    from threadpoolctl import threadpool_limits

    jax.config.update("jax_enable_x64", True)
    torch.set_num_threads(1)
    os.environ["OLS_ATTENTION_NUM_THREADS"] = "1"
    limits = threadpool_limits(1)
    oa = sys.modules.get("ols_attention") or load(Path(ox.__file__).parent, "ols_attention")
    jit_ours = jax.jit(lambda X, y: ox.coefficients(X, y))
    jit_lstsq = jax.jit(jax.vmap(lambda X, y: jnp.linalg.lstsq(X, y)[0]))
    arrays = array_code(lambda X, y: ox.coefficients(X, y))
    rng = random.Random(seed)

    def solvers(X, y):
        jX, jy, tX, ty = jnp.asarray(X), jnp.asarray(y), torch.tensor(X), torch.tensor(y)
        return {
            "numpy": (lambda: oa.coefficients(X, y),
                      lambda: np.stack([np.linalg.lstsq(a, b, rcond=None)[0] for a, b in zip(X, y, strict=True)]),
                      "NumPy module auto", "loop of numpy.linalg.lstsq"),
            "jax": (lambda: jit_ours(jX, jy).block_until_ready(), lambda: jit_lstsq(jX, jy).block_until_ready(),
                    "xp module (jit)", "jit(vmap(lstsq))"),
            "torch (1 thread)": (lambda: ox.coefficients(tX, ty),
                                 lambda: torch.linalg.lstsq(tX, ty[..., None]).solution[..., 0],
                                 "xp module (default call)", "torch.linalg.lstsq"),
            "torch, array-API code (1 thread)": (lambda: arrays(tX, ty),
                                                 lambda: torch.linalg.lstsq(tX, ty[..., None]).solution[..., 0],
                                                 "xp module, array-API code (the GPU design: no host sync)",
                                                 "torch.linalg.lstsq"),
        }

    rows = []
    for kind in kinds:
        X, y = problems(kind, B, n, p)
        pairs = solvers(X, y)
        times = {(name, which): [] for name in pairs for which in (0, 1)}
        for pair in pairs.values():
            pair[0](), pair[1]()  # compile / warm up
        for _ in range(rounds):
            order = list(times)
            rng.shuffle(order)
            for name, which in order:
                gc.collect()
                start = time.perf_counter()
                pairs[name][which]()
                times[name, which].append(time.perf_counter() - start)
        for name, (ours, peer, label, peer_label) in pairs.items():
            mine, theirs = np.array(times[name, 0]), np.array(times[name, 1])
            ratios = theirs / mine
            beta_ours, beta_peer = (np.asarray(f()) for f in (ours, peer))
            rows.append({"framework": name, "data": kind, "ours": label, "peer": peer_label,
                         "ms": (1e3 * np.median(mine), 1e3 * np.median(theirs)),
                         "ratio": (float(ratios.min()), float(np.median(ratios)), float(ratios.max())),
                         "optimality": (optimality(X, y, beta_ours), optimality(X, y, beta_peer))})
    limits.restore_original_limits()
    os.environ.pop("OLS_ATTENTION_NUM_THREADS")
    print(f"| framework | data | ours / peer | ms (medians of {rounds} interleaved rounds) | peer / ours per round: "
          "min, median, max | optimality error (median / max), ours; peer |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        (om, ox_), (pm, px) = r["optimality"]
        print(f"| {r['framework']} | {r['data']} | {r['ours']} / {r['peer']} | {r['ms'][0]:.1f} / {r['ms'][1]:.1f} | "
              f"{r['ratio'][0]:.1f}×, {r['ratio'][1]:.1f}×, {r['ratio'][2]:.1f}× | "
              f"{om:.1e} / {ox_:.1e}; {pm:.1e} / {px:.1e} |")
    return rows


DASK_RUN = """
import json, resource, sys, time
sys.path.insert(0, {out!r})
import numpy as np, dask, dask.array as da
import ols_attention_dask as od
N, p, solver = {N}, 16, {solver!r}
X = da.random.default_rng(0).normal(size=(N, p), chunks=(250_000, p))
X = da.concatenate([da.ones((N, 1), chunks=(250_000, 1)), X[:, 1:] + 50.0], axis=1).rechunk({{1: -1}})
y = X @ np.linspace(1, 2, p) + da.random.default_rng(1).normal(size=N, chunks=250_000)
X, y = dask.persist(X, y)
start = time.perf_counter()
if solver == "lstsq":
    beta = da.linalg.lstsq(X, y)[0].compute()
else:
    beta = od.coefficients(X, y, route=solver)
seconds = time.perf_counter() - start
g = (X.T @ (X @ beta - y)).compute()
nx = float(da.sqrt((X * X).sum()).compute())
e = float(np.linalg.norm(g) / (nx**2 * np.linalg.norm(beta) + nx * float(da.linalg.norm(y).compute())))
print(json.dumps({{"seconds": seconds, "optimality": e,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


LAZY_RUN = """
import json, resource, sys, time
sys.path.insert(0, {out!r})
import numpy as np, dask, dask.array as da
import ols_attention_dask as od
N, p, rows, solver = {N}, {p}, {rows}, {solver!r}
truth = np.linspace(1, 2, p)

def block(block_id=None):  # rows of [X y], made when a pass needs them and dropped after: never all in memory
    size = min(rows, N - block_id[0] * rows)
    rng = np.random.default_rng([7, block_id[0]])
    Z = np.empty((size, p + 1))
    Z[:, 0] = 1.0
    Z[:, 1:p] = rng.standard_normal((size, p - 1)) + 50.0
    Z[:, p] = Z[:, :p] @ truth + rng.standard_normal(size)
    return Z

chunks = (tuple([rows] * (N // rows) + ([N % rows] if N % rows else [])), (p + 1,))
Z = da.map_blocks(block, chunks=chunks, dtype=np.float64)
X, y = Z[:, :p], Z[:, p]
start = time.perf_counter()
if solver == "lstsq":
    beta = da.linalg.lstsq(X, y)[0].compute()
else:
    beta = od.coefficients(X, y, route=solver)
seconds = time.perf_counter() - start
g, xx, yy = dask.compute(X.T @ (X @ beta - y), (X * X).sum(), (y * y).sum())  # one more pass, for the accuracy
nx = float(np.sqrt(xx))
e = float(np.linalg.norm(g) / (nx**2 * np.linalg.norm(beta) + nx * float(np.sqrt(yy))))
print(json.dumps({{"seconds": seconds, "optimality": e,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def bench_dask_lazy(out: Path, N: int, p: int, rows: int, repeats: int, solvers=("auto", "lstsq")):
    """N × p generated chunk by chunk inside the graph (never persisted): time, accuracy and peak RSS per run."""
    results = []
    for solver in solvers:
        runs = []
        for _ in range(repeats):
            done = subprocess.run([sys.executable, "-c", LAZY_RUN.format(out=str(out), N=N, p=p, rows=rows,
                                                                         solver=solver)],
                                  capture_output=True, text=True)
            if done.returncode:
                runs.append({"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"})
                break
            runs.append(json.loads(done.stdout))
        good = [r for r in runs if "error" not in r]
        name = "dask.array.linalg.lstsq" if solver == "lstsq" else f"dask module, route={solver!r}"
        if not good:
            print(f"{name}: {runs[-1]['error']}", file=sys.stderr)
            continue
        results.append({"framework": "dask (lazy)", "data": f"uncentred {N} x {p}, chunks of {rows} rows",
                        "solver": name, "ms": 1e3 * float(np.median([r["seconds"] for r in good])),
                        "optimality": (float(np.median([r["optimality"] for r in good])),
                                       max(r["optimality"] for r in good)),
                        "peak_rss_mib": max(r["peak_rss_mib"] for r in good), "runs": len(good)})
    return results


def bench_dask(out: Path, N: int, repeats: int):
    rows = []
    for solver in ("auto", "cholesky", "tsqr", "lstsq"):
        runs = [json.loads(subprocess.run([sys.executable, "-c", DASK_RUN.format(out=str(out), N=N, solver=solver)],
                                          capture_output=True, text=True, check=True).stdout)
                for _ in range(max(1, repeats // 2))]
        best = min(runs, key=lambda r: r["seconds"])
        name = "dask.array.linalg.lstsq" if solver == "lstsq" else f"dask module, route={solver!r}"
        rows.append({"framework": "dask", "data": f"uncentred {N} x 16", "solver": name, "ms": 1e3 * best["seconds"],
                     "optimality": (best["optimality"], best["optimality"]), "peak_rss_mib": best["peak_rss_mib"]})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--n", type=int, default=64)
    parser.add_argument("--p", type=int, default=8)
    parser.add_argument("--tall", type=int, default=2_000_000, help="rows of the Dask problem (0: skip)")
    parser.add_argument("--lazy", type=int, default=0, help="rows of the lazy Dask problem, made chunk by chunk "
                        "(0: skip; the issue's is 20000000)")
    parser.add_argument("--lazy-p", type=int, default=32)
    parser.add_argument("--lazy-rows", type=int, default=250_000, help="rows per chunk of the lazy problem")
    parser.add_argument("--lazy-repeats", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", choices=("jax", "torch", "dask"), action="append")
    parser.add_argument("--interleaved", type=int, default=0, metavar="ROUNDS",
                        help="issue 43's rows only: NumPy, JAX and PyTorch each against its lstsq, interleaved")
    args = parser.parse_args()
    only = set(args.only or ("jax", "torch", "dask"))
    out = Path(tempfile.mkdtemp())
    generate(out)
    ox = load(out, "ols_attention_xp")
    kinds = ("gaussian", "uncentred")
    if args.interleaved:
        load(out, "ols_attention")
        bench_interleaved(ox, kinds, args.batch, args.n, args.p, args.interleaved)
        return
    rows = []
    if "jax" in only:
        rows += bench_jax(ox, kinds, args.batch, args.n, args.p, args.repeats)
    if "torch" in only:
        rows += bench_torch(ox, kinds, args.batch, args.n, args.p, args.repeats)
    if "dask" in only and args.tall:
        rows += bench_dask(out, args.tall, args.repeats)
    if "dask" in only and args.lazy:
        rows += bench_dask_lazy(out, args.lazy, args.lazy_p, args.lazy_rows, args.lazy_repeats)
    print("| framework | data | solver | ms | optimality error, median / max | vs the lstsq's ms |")
    print("| --- | --- | --- | --- | --- | --- |")
    for row in rows:
        peers = [r for r in rows if r["framework"] == row["framework"] and r["data"] == row["data"]
                 and "lstsq" in r["solver"]]
        ratio = peers[-1]["ms"] / row["ms"] if peers else float("nan")
        extra = f" (peak RSS {row['peak_rss_mib']:.0f} MiB)" if "peak_rss_mib" in row else ""
        print(f"| {row['framework']} | {row['data']} | {row['solver']}{extra} | {row['ms']:.1f} | "
              f"{row['optimality'][0]:.1e} / {row['optimality'][1]:.1e} | {ratio:.2f}× |")


if __name__ == "__main__":
    main()
