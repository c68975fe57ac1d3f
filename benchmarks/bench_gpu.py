"""The array-API module (``derive/generated/ols_attention_xp.py``) on a GPU, against the frameworks' own solvers.

On a GPU the xp module runs its array-API code (the NumPy host path serves only CPU arrays). Compared, in the same
process, each as the median of ``--repeats`` timed runs after a warm-up (the device synchronised around each):

* PyTorch (CUDA): the xp module's routes "auto" (Cholesky of the column-scaled XᵀX plus two preconditioned
  refinement steps), "qr" and "svd", against ``torch.linalg.lstsq`` (the only CUDA driver, ``gels``: QR, full rank)
  and ``torch.linalg.cholesky`` + ``torch.cholesky_solve`` of XᵀX;
* JAX (GPU): ``jax.jit`` of the xp module's "auto" against ``jax.jit(jax.vmap(jnp.linalg.lstsq))`` (SVD) and a jitted
  Cholesky solve.

Data: batches of prompts (B problems of n × p) and one tall problem (N × p), Gaussian and uncentred (an intercept
column and features of mean 50), float64 and float32. Beside every time, the optimality error
‖Xᵀ(Xβ − y)‖ / (‖X‖²‖β‖ + ‖X‖‖y‖) computed on the host in long double, median and maximum over the problems.

    python benchmarks/bench_gpu.py [--batch 4096] [--n 64] [--p 8] [--tall 4000000] [--tall-p 32] [--repeats 7]
        [--json FILE]

Prints a Markdown table (and writes the rows as JSON with ``--json``). Needs a CUDA device; exits 3 without one.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

import numpy as np
from bench_frameworks import optimality as framework_optimality
from bench_frameworks import problems

ROOT = Path(__file__).resolve().parents[1]


def load_xp():
    """The shipped generated module, loaded from its file (no install needed)."""
    path = ROOT / "derive" / "generated" / "ols_attention_xp.py"
    spec = importlib.util.spec_from_file_location("ols_attention_xp", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["ols_attention_xp"] = module
    spec.loader.exec_module(module)
    return module


def optimality(X, y, beta) -> tuple[float, float]:
    """bench_frameworks' optimality error (median, max); NaN where a solver returned a non-finite β."""
    beta = np.asarray(beta, dtype=np.float64)
    if not np.all(np.isfinite(beta)):
        return float("nan"), float("nan")
    return framework_optimality(X, y, beta)


def median_time(run, sync, repeats: int) -> float:
    run()
    sync()
    times = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        run()
        sync()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def bench_torch(ox, cases, repeats, device="cuda"):
    import torch

    dev = torch.device(device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def lstsq(X, y):
        return torch.linalg.lstsq(X, y[..., None]).solution[..., 0]

    def chol(X, y):
        C = torch.linalg.cholesky(X.mT @ X)
        return torch.cholesky_solve(X.mT @ y[..., None], C)[..., 0]

    solvers = (("xp module, auto", lambda X, y: ox.coefficients(X, y)),
               ("xp module, qr", lambda X, y: ox.coefficients(X, y, route="qr")),
               ("xp module, svd", lambda X, y: ox.coefficients(X, y, route="svd")),
               ("torch.linalg.lstsq (gels)", lstsq),
               ("torch cholesky + cholesky_solve", chol))
    rows = []
    for label, X, y in cases:
        for dtype in (torch.float64, torch.float32):
            tX, ty = torch.tensor(X, dtype=dtype, device=dev), torch.tensor(y, dtype=dtype, device=dev)
            for name, f in solvers:
                try:
                    seconds = median_time(lambda f=f, a=tX, b=ty: f(a, b), sync, repeats)
                    beta = f(tX, ty).double().cpu().numpy()
                    acc = optimality(X, y, beta)
                except Exception as exc:  # a solver that fails on a case is reported, not hidden
                    rows.append({"framework": f"torch {device}", "data": label, "dtype": str(dtype).split(".")[-1],
                                 "solver": name, "ms": None, "error": f"{type(exc).__name__}: {exc}"[:120]})
                    continue
                rows.append({"framework": f"torch {device}", "data": label, "dtype": str(dtype).split(".")[-1],
                             "solver": name, "ms": 1e3 * seconds, "optimality": acc})
            if device == "cuda":
                torch.cuda.empty_cache()
    return rows


def bench_jax(ox, cases, repeats):
    import jax
    import jax.numpy as jnp
    from jax.scipy.linalg import cho_factor, cho_solve

    jax.config.update("jax_enable_x64", True)
    gpu = jax.devices("gpu")[0]
    ours = jax.jit(lambda X, y: ox.coefficients(X, y))
    lstsq = jax.jit(jax.vmap(lambda X, y: jnp.linalg.lstsq(X, y)[0]))
    chol = jax.jit(jax.vmap(lambda X, y: cho_solve(cho_factor(X.T @ X, lower=True), X.T @ y)))
    rows = []
    for label, X, y in cases:
        for dtype in (jnp.float64, jnp.float32):
            jX = jax.device_put(jnp.asarray(X, dtype=dtype), gpu)
            jy = jax.device_put(jnp.asarray(y, dtype=dtype), gpu)
            for name, f in (("xp module, auto (jit)", ours), ("jit(vmap(lstsq))", lstsq),
                            ("jit(vmap(cho_solve))", chol)):
                try:
                    seconds = median_time(lambda f=f, a=jX, b=jy: f(a, b).block_until_ready(), lambda: None, repeats)
                    acc = optimality(X, y, np.asarray(f(jX, jy), dtype=np.float64))
                except Exception as exc:
                    rows.append({"framework": "jax gpu", "data": label, "dtype": jnp.dtype(dtype).name,
                                 "solver": name, "ms": None, "error": f"{type(exc).__name__}: {exc}"[:120]})
                    continue
                rows.append({"framework": "jax gpu", "data": label, "dtype": jnp.dtype(dtype).name,
                             "solver": name, "ms": 1e3 * seconds, "optimality": acc})
    return rows


def table(rows) -> str:
    lines = ["| framework | data | dtype | solver | ms | optimality median / max |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if r.get("ms") is None:
            lines.append(f"| {r['framework']} | {r['data']} | {r['dtype']} | {r['solver']} | failed | "
                         f"{r['error']} |")
        else:
            med, mx = r["optimality"]
            lines.append(f"| {r['framework']} | {r['data']} | {r['dtype']} | {r['solver']} | {r['ms']:.3g} | "
                         f"{med:.1e} / {mx:.1e} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--n", type=int, default=64)
    parser.add_argument("--p", type=int, default=8)
    parser.add_argument("--tall", type=int, default=4_000_000)
    parser.add_argument("--tall-p", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--skip-jax", action="store_true")
    parser.add_argument("--device", default="cuda", help="cpu: a dry run of the script where no GPU is")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("no PyTorch", file=sys.stderr)
        return 3
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 3
    ox = load_xp()
    cases = []
    for kind in ("gaussian", "uncentred"):
        X, y = problems(kind, args.batch, args.n, args.p)
        cases.append((f"{kind}, {args.batch} × {args.n} × {args.p}", X, y))
        X, y = problems(kind, 1, args.tall, args.tall_p, seed=1)
        cases.append((f"{kind}, 1 × {args.tall} × {args.tall_p}", X, y))
    rows = bench_torch(ox, cases, args.repeats, args.device)
    name = torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu"
    print(f"device: {name}; torch {torch.__version__}", flush=True)
    print(table(rows), flush=True)
    if not args.skip_jax:
        try:
            jrows = bench_jax(ox, cases, args.repeats)
        except Exception as exc:  # JAX without a GPU backend: reported, the PyTorch rows stand
            print(f"JAX on the GPU not measured: {type(exc).__name__}: {exc}"[:300], flush=True)
            jrows = []
        if jrows:
            import jax

            print(f"\njax {jax.__version__}", flush=True)
            print(table(jrows), flush=True)
        rows += jrows
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
