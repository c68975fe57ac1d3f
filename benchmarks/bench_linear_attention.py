"""Chunkwise linear attention, the delta rule and least squares on every prefix (issue 42), on one CPU core.

In one process (OMP/OpenBLAS/MKL threads set to 1 before NumPy loads), with the shipped generated NumPy module
``derive.generated.ols_attention``:

1. ``causal_linear_attention`` and ``delta_rule_attention`` at T = 4,096, d_k = d_v = 64 (one sequence) against a
   NumPy token-by-token loop of the same recurrence (rank-one updates, S_t = γ_t S_{t−1} + v_t k_tᵀ, or
   S_t = γ_t S_{t−1}(I − β_t k_t k_tᵀ) + β_t v_t k_tᵀ, o_t = S_t q_t): time of each (best of ``--repeats``), the
   ratio, and the relative error ‖O − O_loop‖ / ‖O_loop‖ beside it; for chunk 64 (the default) and the fastest of
   chunks 16, 32, 64, 128. Keys are L2-normalised, β in [0.1, 1], gates in [0.9, 1] (and, for "small gates",
   log-uniform in [1e-6, 1e-5], where the factored form γ^t / γ^i overflows within a chunk).
2. ``prefix_predictions`` against a loop of ``numpy.linalg.lstsq`` over prefixes (64 prompts, 41 points, p = 20,
   y = x·w + 0.1·noise): the time of each, the ratio, and the relative difference of the two; and, on
   ``--exact`` prompts, each one's error against the predictions in 50-digit arithmetic (mpmath).

3. With ``--against OLD.py`` (a generated NumPy module of another commit, e.g. ``git show
   REV:derive/generated/ols_attention.py > /tmp/old.py``): the attention cases at chunks 64 and 32 for the shipped
   module, OLD.py and the token loop, interleaved (each once per round in a new random order after a
   ``gc.collect()``, ``--repeats`` rounds): medians, the ratios, and the shipped module's error; then the same at
   chunk 64 on a batch of 4 × 8 heads of T / 4 steps (the loop runs the sequences one after the other).

    OMP_NUM_THREADS=1 python benchmarks/bench_linear_attention.py [--repeats R] [--exact N] [--quick]
    OMP_NUM_THREADS=1 python benchmarks/bench_linear_attention.py --against /tmp/old.py --repeats 9
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"  # one core, set before NumPy loads its BLAS

import argparse  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from derive.generated import ols_attention as oa  # noqa: E402


def timed(run, repeats):
    """(best seconds, median seconds, last result) of ``repeats`` calls."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times), result


def relative(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def token_loop(Q, K, V, beta=None, decay=None):
    """The recurrence one token at a time, as a NumPy user writes it (rank-one updates, no d×d products)."""
    T, dk = Q.shape
    S = np.zeros((V.shape[1], dk))
    O = np.empty((T, V.shape[1]))
    for t in range(T):
        k = K[t]
        if decay is not None:
            S *= decay[t]
        if beta is None:
            S += np.outer(V[t], k)
        else:
            S += np.outer(beta[t] * (V[t] - S @ k), k)
        O[t] = S @ Q[t]
    return O


def attention(args):
    rng = np.random.default_rng(0)
    T, d = (1024, 32) if args.quick else (4096, 64)
    Q, K, V = rng.standard_normal((3, T, d))
    K /= np.linalg.norm(K, axis=1, keepdims=True)
    beta = rng.uniform(0.1, 1.0, T)
    gates = rng.uniform(0.9, 1.0, T)
    small = np.exp(rng.uniform(np.log(1e-6), np.log(1e-5), T))
    cases = [("linear attention", None, None), ("decayed (per-step gates)", None, gates),
             ("delta rule", beta, None), ("gated delta rule", beta, gates),
             ("gated delta rule, small gates", beta, small)]
    print(f"## Attention: T = {T}, d_k = d_v = {d}, one sequence, one core (best of {args.repeats})\n")
    print("| case | token loop | chunk 64 | ratio | rel. error | best chunk | time | ratio | rel. error |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, b, g in cases:
        loop_best, _, reference = timed(lambda b=b, g=g: token_loop(Q, K, V, b, g), max(2, args.repeats // 3))

        def run(chunk, b=b, g=g):
            if b is None:
                return oa.causal_linear_attention(Q, K, V, decay=g, chunk=chunk)
            return oa.delta_rule_attention(Q, K, V, b, decay=g, chunk=chunk)

        runs = {chunk: timed(lambda chunk=chunk: run(chunk), args.repeats) for chunk in (16, 32, 64, 128)}
        best_chunk = min(runs, key=lambda c: runs[c][0])
        default, best = runs[64], runs[best_chunk]
        print(f"| {name} | {loop_best * 1e3:.1f} ms | {default[0] * 1e3:.2f} ms | {loop_best / default[0]:.1f}× "
              f"| {relative(default[2], reference):.1e} | {best_chunk} | {best[0] * 1e3:.2f} ms "
              f"| {loop_best / best[0]:.1f}× | {relative(best[2], reference):.1e} |")
    print()


def against(args):
    """The shipped module against ``args.against`` and the token loop, interleaved (medians of the rounds)."""
    import importlib.util
    import random

    spec = importlib.util.spec_from_file_location("ols_attention_against", args.against)
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    T, d = (1024, 32) if args.quick else (4096, 64)
    order = random.Random(0)
    for heads in ((), (4, 8)):  # one sequence; then a batch of 4 × 8 heads of a quarter of the length (chunk 64)
        rng = np.random.default_rng(0)
        steps = heads + (T // 4 if heads else T,)
        Q, K, V = rng.standard_normal((3, *steps, d))
        K /= np.linalg.norm(K, axis=-1, keepdims=True)
        beta, gates = rng.uniform(0.1, 1.0, steps), rng.uniform(0.9, 1.0, steps)
        print(f"## Against {args.against}: (..., T, d) = {steps + (d,)}, interleaved, medians of {args.repeats} "
              "rounds\n")
        _against_cases(args, old, order, Q, K, V, beta, gates, (64,) if heads else (64, 32))


def _against_cases(args, old, order, Q, K, V, beta, gates, chunks):
    import gc

    cases = [("linear attention", None, None), ("decayed (per-step gates)", None, gates),
             ("delta rule", beta, None), ("gated delta rule", beta, gates)]
    print("| case | chunk | token loop | old (vs loop) | shipped (vs loop) | old / shipped | shipped's rel. error |")
    print("|---|---|---|---|---|---|---|")
    for name, b, g in cases:
        for chunk in chunks:
            def call(module, b=b, g=g, chunk=chunk):
                if b is None:
                    return module.causal_linear_attention(Q, K, V, decay=g, chunk=chunk)
                return module.delta_rule_attention(Q, K, V, b, decay=g, chunk=chunk)

            runs = {"old": lambda call=call: call(old), "new": lambda call=call: call(oa),
                    "loop": (lambda b=b, g=g: token_loop(Q, K, V, b, g)) if Q.ndim == 2 else
                    (lambda b=b, g=g: _loops(Q, K, V, b, g))}
            times = {key: [] for key in runs}
            for _ in range(args.repeats):
                keys = list(runs)
                order.shuffle(keys)
                for key in keys:
                    gc.collect()
                    start = time.perf_counter()
                    runs[key]()
                    times[key].append(time.perf_counter() - start)
            m = {key: statistics.median(value) * 1e3 for key, value in times.items()}
            error = relative(runs["new"](), runs["loop"]())
            print(f"| {name} | {chunk} | {m['loop']:.1f} ms | {m['old']:.2f} ms ({m['loop'] / m['old']:.1f}×) | "
                  f"{m['new']:.2f} ms ({m['loop'] / m['new']:.1f}×) | {m['old'] / m['new']:.2f}× | {error:.1e} |")
    print()


def _loops(Q, K, V, beta, decay):
    """The token loop on each sequence of a batch (..., T, d), one after the other."""
    flat = [a.reshape(-1, *a.shape[-2:]) for a in (Q, K, V)]
    gates = [None if a is None else a.reshape(-1, a.shape[-1]) for a in (beta, decay)]
    out = [token_loop(q, k, v, None if gates[0] is None else gates[0][i], None if gates[1] is None else gates[1][i])
           for i, (q, k, v) in enumerate(zip(*flat, strict=True))]
    return np.stack(out).reshape(V.shape)


def lstsq_loop(X, Y):
    out = np.zeros(Y.shape)
    for b in range(X.shape[0]):
        for t in range(1, X.shape[1]):
            out[b, t] = X[b, t] @ np.linalg.lstsq(X[b, :t], Y[b, :t], rcond=None)[0]
    return out


def exact_prefixes(X, y):
    """Predictions of each prefix in 50-digit arithmetic: minimum norm X[:t]ᵀ(X[:t]X[:t]ᵀ)⁻¹y for t <= p, else
    the normal equations (exact enough at 50 digits for these conditions)."""
    import mpmath as mp

    mp.mp.dps = 50
    T, p = X.shape
    Xm, ym = mp.matrix(X.tolist()), mp.matrix(y.tolist())
    out = np.zeros(T)
    for t in range(1, T):
        A, b = Xm[:t, :], ym[:t, :]
        beta = A.T * mp.lu_solve(A * A.T, b) if t <= p else mp.lu_solve(A.T * A, A.T * b)
        out[t] = float((Xm[t, :] * beta)[0, 0])
    return out


def prefixes(args):
    rng = np.random.default_rng(1)
    B, T, p = 64, 41, 20
    X = rng.standard_normal((B, T, p))
    y = np.einsum("btp,bp->bt", X, rng.standard_normal((B, p))) + 0.1 * rng.standard_normal((B, T))
    loop_best, _, reference = timed(lambda: lstsq_loop(X, y[..., None])[..., 0], max(2, args.repeats // 3))
    fast_best, fast_median, out = timed(lambda: oa.prefix_predictions(X, y), args.repeats)
    ridge_best, _, ridge = timed(lambda: oa.prefix_predictions(X, y, ridge=0.1), args.repeats)
    print(f"## prefix_predictions: {B} prompts, {T} points, p = {p}, one core (best of {args.repeats})\n")
    print("| | per-prefix lstsq loop | prefix_predictions | ratio | rel. difference |")
    print("|---|---|---|---|---|")
    print(f"| least squares | {loop_best * 1e3:.1f} ms | {fast_best * 1e3:.2f} ms (median "
          f"{fast_median * 1e3:.2f}) | {loop_best / fast_best:.0f}× | {relative(out, reference):.1e} |")
    print(f"| ridge λ = 0.1 | | {ridge_best * 1e3:.2f} ms | | |")
    if args.exact:
        exact = np.array([exact_prefixes(X[b], y[b]) for b in range(args.exact)])
        print(f"\nAgainst 50-digit predictions on the first {args.exact} prompts (relative error, all rows):"
              f" prefix_predictions {relative(out[:args.exact], exact):.1e}, lstsq loop "
              f"{relative(reference[:args.exact], exact):.1e}.")
    print()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--exact", type=int, default=4, help="prompts checked in 50-digit arithmetic (0: none)")
    parser.add_argument("--quick", action="store_true", help="T = 1,024, d = 32 (a smoke run)")
    parser.add_argument("--against", metavar="OLD.py", help="a generated NumPy module to time the shipped one against")
    args = parser.parse_args()
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, NumPy "
          f"{np.__version__}, os.cpu_count() = {os.cpu_count()}, threads 1\n")
    if args.against:
        against(args)
        return
    attention(args)
    prefixes(args)


if __name__ == "__main__":
    main()
