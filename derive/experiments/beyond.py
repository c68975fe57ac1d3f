"""Beyond the paper, measured: the ridge path, streaming against batch least squares, k layers against OLS.

Each experiment runs the generated NumPy module (printed from the checked theorems ``ridge_is_linear_attention``,
``kernel_ridge_push_through``, ``causal_online_ls`` and ``multi_layer_gd`` rest on) and returns plain numbers;
notebook 07 and ``derive reproduce`` both call them, and :func:`derive.experiments.figures.beyond_figure` draws
them. Deterministic for a seed.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

__all__ = ["beyond_the_paper", "generated_numpy_module", "layers_convergence", "ridge_path", "streaming_vs_batch"]


def generated_numpy_module() -> ModuleType:
    """The NumPy module ``derive codegen`` writes from the checked theorems, as shipped in :mod:`derive.generated`."""
    from ..generated import ols_attention

    return ols_attention


def _relative(a, b) -> float:
    return float(np.abs(np.asarray(a) - np.asarray(b)).max() / np.abs(np.asarray(b)).max())


def ridge_path(seed: int = 0, lams=None, shapes=((60, 8), (12, 40))) -> dict:
    """‖β(λ)‖ across λ for a tall and a wide problem (the wide one on the dual, token route), with the module's
    agreement with the primal formula (λ ≥ 1e-2) and the gap of the smallest λ to the λ → 0 limit (OLS, or the
    minimum-norm solution where p > n); λ on 41 points from 1e-6 to 1e4 unless given."""
    oa = generated_numpy_module()
    rng = np.random.default_rng(seed)
    lams = np.logspace(-6, 4, 41) if lams is None else np.asarray(lams, dtype=float)
    out = {"lams": lams.tolist(), "problems": []}
    for n, p in shapes:
        X, y = rng.standard_normal((n, p)), rng.standard_normal(n)
        path = np.array([oa.coefficients(X, y, ridge=lam) for lam in lams])
        big = lams >= 1e-2
        primal = np.array([np.linalg.solve(X.T @ X + lam * np.eye(p), X.T @ y) for lam in lams[big]])
        limit = oa.coefficients(X, y)
        out["problems"].append({"n": n, "p": p, "norms": np.linalg.norm(path, axis=1).tolist(),
                                "primal_agreement": _relative(path[big], primal),
                                "limit_gap": _relative(path[0], limit)})
    return out


def streaming_vs_batch(seed: int = 0, rows: int = 20_000, p: int = 10, ridge: float = 1e-3,
                       every: int = 1000) -> dict:
    """Rows streamed one at a time (cond(X) about 1e3): the module's square-root filter (RecursiveLeastSquares)
    and the textbook Sherman–Morrison recursion on P = (XᵀX + λI)⁻¹, each against the batch ridge solution."""
    oa = generated_numpy_module()
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, p)) * np.logspace(0, 3, p)
    y = X @ rng.standard_normal(p) + rng.standard_normal(rows)
    rls = oa.RecursiveLeastSquares(p, ridge=ridge)
    P, beta = np.eye(p) / ridge, np.zeros(p)
    marks, square_root, sherman_morrison = [], [], []
    for i in range(rows):
        rls.update(X[i], y[i])
        Px = P @ X[i]
        gain = Px / (1 + X[i] @ Px)
        beta, P = beta + gain * (y[i] - X[i] @ beta), P - np.outer(gain, Px)
        if (i + 1) % every == 0 or i + 1 == rows:
            batch = oa.coefficients(X[: i + 1], y[: i + 1], ridge=ridge)
            marks.append(i + 1)
            square_root.append(_relative(rls.coefficients, batch))
            sherman_morrison.append(_relative(beta, batch))
    return {"rows": marks, "square_root": square_root, "sherman_morrison": sherman_morrison, "p": p,
            "ridge": ridge}


def layers_convergence(seed: int = 0, n: int = 200, scales=(1.0, 1.5, 2.0, 3.0, 4.0), max_layers: int = 60,
                       every: int = 3) -> dict:
    """The k-layer output (``multi_layer_predict``) against OLS for two step matrices Γ, with the spectral radius
    ρ of I − ΓXᵀX that multi_layer_gd's closed form predicts as the rate, and Γ = (XᵀX)⁻¹ in one layer."""
    oa = generated_numpy_module()
    rng = np.random.default_rng(seed)
    scales = np.asarray(scales, dtype=float)
    p = len(scales)
    X = rng.standard_normal((n, p)) * scales
    y = X @ rng.standard_normal(p) + 0.1 * rng.standard_normal(n)
    Xq = rng.standard_normal((50, p)) * scales
    ols = oa.predict(X, y, Xq)
    G = X.T @ X
    eigs = np.linalg.eigvalsh(G)
    steps = {"η = 1/λ_max": np.eye(p) / eigs[-1], "Γ = (n Σ)⁻¹": np.diag(1 / (n * scales**2))}
    ks = list(range(0, max_layers + 1, every))
    runs = []
    for label, Gamma in steps.items():
        rho = float(np.abs(np.linalg.eigvals(np.eye(p) - Gamma @ G)).max())
        errors = [float(np.abs(oa.multi_layer_predict(X, y, Xq, layers=k, step=Gamma) - ols).max()) for k in ks]
        runs.append({"label": label, "rho": rho, "errors": errors, "cond": float(np.linalg.cond(Gamma @ G))})
    one = oa.multi_layer_predict(X, y, Xq, layers=1, step=np.linalg.inv(G))
    return {"layers": ks, "runs": runs, "one_layer_exact": _relative(one, ols)}


def beyond_the_paper(seed: int = 0, quick: bool = False) -> dict:
    """The three experiments of notebook 07, for ``derive reproduce``."""
    return {"ridge": ridge_path(seed), "streaming": streaming_vs_batch(seed, rows=5_000 if quick else 20_000),
            "layers": layers_convergence(seed)}
