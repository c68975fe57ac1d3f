"""The array-API module (``derive/generated/ols_attention_xp.py``) on a GPU, against the frameworks' own solvers.

On a GPU the xp module runs its array-API code (the NumPy host path serves only CPU arrays). Compared, in the same
process, each as the median of ``--repeats`` timed runs after a warm-up (the device synchronised around each):

* PyTorch (CUDA): the xp module's routes "auto" (Cholesky of the column-scaled XᵀX, centred where a prompt has an
  intercept, plus two preconditioned refinement steps; no host synchronisation, issue 43), "qr" and "svd", and
  "auto" as one CUDA graph (captured once per shape, replayed per call) and under
  ``torch.compile(mode="reduce-overhead")``, against ``torch.linalg.lstsq`` (the only CUDA driver, ``gels``: QR,
  full rank) and ``torch.linalg.cholesky`` + ``torch.cholesky_solve`` of XᵀX; beside each, the host
  synchronisations one call makes (torch.profiler);
* JAX (GPU): ``jax.jit`` of the xp module's "auto" against ``jax.jit(jax.vmap(jnp.linalg.lstsq))`` (SVD) and a jitted
  Cholesky solve.

Data: batches of prompts (B problems of n × p) and one tall problem (N × p), Gaussian and uncentred (an intercept
column and features of mean 50), and (PyTorch) a batch of rank-deficient prompts (uncentred, a repeated column),
float64 and float32. Beside every time, the optimality error ‖Xᵀ(Xβ − y)‖ / (‖X‖²‖β‖ + ‖X‖‖y‖) computed on the
host in long double, median and maximum over the problems; on the rank-deficient prompts, the largest relative
error against the minimum-norm solution (numpy.linalg.pinv on the host).

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


def host_syncs(f, device) -> int:
    """The host synchronisations one call of ``f`` makes: reads of a value (``aten::_local_scalar_dense``: item, bool,
    PyTorch's own checks of a solver's status) and, on CUDA, the runtime's synchronising calls (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as prof:
        f()
    syncing = {"aten::_local_scalar_dense", "cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
               "cudaMemcpy"}
    return sum(1 for event in prof.events() if event.name in syncing)


def cuda_graphed(f, X, y):
    """``f`` captured once in a CUDA graph for the shapes of X and y, then replayed per call (the inputs copied into
    the captured ones, the output cloned): one launch instead of one per operation. Possible only where ``f`` makes
    no host synchronisation (the xp module's default route on PyTorch, issue 43)."""
    import torch

    static_X, static_y = X.clone(), y.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on a side stream before capture, as torch.cuda.graphs asks
        for _ in range(3):
            f(static_X, static_y)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = f(static_X, static_y)

    def run(X, y):
        static_X.copy_(X)
        static_y.copy_(y)
        graph.replay()
        return out.clone()

    return run


def bench_torch(ox, cases, repeats, device="cuda"):
    import numpy as np
    import torch

    dev = torch.device(device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def lstsq(X, y):
        return torch.linalg.lstsq(X, y[..., None]).solution[..., 0]

    def chol(X, y):
        C = torch.linalg.cholesky(X.mT @ X)
        return torch.cholesky_solve(X.mT @ y[..., None], C)[..., 0]

    def auto(X, y):
        return ox.coefficients(X, y)

    solvers = [("xp module, auto", lambda X, y: auto),
               ("xp module, qr", lambda X, y: lambda X, y: ox.coefficients(X, y, route="qr")),
               ("xp module, svd", lambda X, y: lambda X, y: ox.coefficients(X, y, route="svd")),
               ("torch.linalg.lstsq (gels)", lambda X, y: lstsq),
               ("torch cholesky + cholesky_solve", lambda X, y: chol)]
    if device == "cuda":  # the launches of a call in one: possible since auto makes no host synchronisation
        solvers += [("xp module, auto (one CUDA graph)", lambda X, y: cuda_graphed(auto, X, y)),
                    ("xp module, auto (torch.compile, reduce-overhead)",
                     lambda X, y: torch.compile(auto, mode="reduce-overhead"))]
    rows = []
    for label, X, y in cases:
        deficient = "deficient" in label
        if deficient:  # the minimum-norm solution of each prompt, on the host in float64
            want = np.stack([np.linalg.pinv(a) @ b for a, b in zip(X, y, strict=True)])
        for dtype in (torch.float64, torch.float32):
            tX, ty = torch.tensor(X, dtype=dtype, device=dev), torch.tensor(y, dtype=dtype, device=dev)
            for name, make in solvers:
                row = {"framework": f"torch {device}", "data": label, "dtype": str(dtype).split(".")[-1],
                       "solver": name}
                try:
                    f = make(tX, ty)
                    seconds = median_time(lambda f=f, a=tX, b=ty: f(a, b), sync, repeats)
                    beta = f(tX, ty).double().cpu().numpy()
                    row.update(ms=1e3 * seconds, optimality=optimality(X, y, beta),
                               syncs=host_syncs(lambda f=f, a=tX, b=ty: f(a, b), device))
                    if deficient:
                        err = np.abs(beta - want).max(axis=-1) / np.abs(want).max(axis=-1)
                        row["minimum_norm_error"] = float(np.max(err)) if np.all(np.isfinite(beta)) else float("nan")
                except Exception as exc:  # a solver that fails on a case is reported, not hidden
                    row.update(ms=None, error=f"{type(exc).__name__}: {exc}"[:120])
                rows.append(row)
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
    lines = ["| framework | data | dtype | solver | ms | optimality median / max | host syncs per call | "
             "error vs the minimum-norm solution (max) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if r.get("ms") is None:
            lines.append(f"| {r['framework']} | {r['data']} | {r['dtype']} | {r['solver']} | failed | "
                         f"{r['error']} | | |")
        else:
            med, mx = r["optimality"]
            minimum = f"{r['minimum_norm_error']:.1e}" if "minimum_norm_error" in r else ""
            lines.append(f"| {r['framework']} | {r['data']} | {r['dtype']} | {r['solver']} | {r['ms']:.3g} | "
                         f"{med:.1e} / {mx:.1e} | {r.get('syncs', '')} | {minimum} |")
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
    X, y = problems("uncentred", args.batch, args.n, args.p, seed=2)
    X[..., -1] = X[..., 1]  # every prompt rank p − 1: gels is silently wrong there, auto gives the minimum norm
    cases.append((f"uncentred, rank-deficient (a repeated column), {args.batch} × {args.n} × {args.p}", X, y))
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
