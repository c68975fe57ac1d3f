"""The figures of the experiments, drawn in one place for the notebooks and for ``derive reproduce``.

Each function takes the plain result of an experiment (``train``, ``hopfield_capacity``,
``distribution_shift``, the NIST table of notebook 06) and returns a :class:`matplotlib.figure.Figure`
built without pyplot: no global state, no GUI backend. A notebook displays the figure it returns
(``%matplotlib inline``); :func:`png` renders it to byte-stable PNG data (no timestamp) for a file.
"""

from __future__ import annotations

import io

import numpy as np

__all__ = ["beyond_figure", "capacity_figure", "hopfield_figure", "nist_figure", "png", "shift_figure",
           "training_figure"]

DPI = 110


def _figure(width: float, height: float, panels: int = 1, **subplots):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI)
    return fig, fig.subplots(1, panels, **subplots)


def _finish(fig):
    fig.tight_layout()
    return fig


def png(fig) -> bytes:
    """The figure as PNG bytes, identical for identical figures (the ``Software`` stamp is left out)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def training_figure(training: dict):
    """Three panels per epoch, log scale: the loss above the OLS loss, the slow-memory error, the gap to OLS.

    The loss itself is dominated by the noise that no predictor removes (the OLS loss), so its curve is
    flat; what training changes is the excess loss − loss(OLS), shown here.
    """
    h = training["history"]
    excess = np.maximum(np.asarray(h["loss"]) - training["ols_loss"], np.finfo(float).tiny)
    fig, axes = _figure(13, 3.8, 3)
    axes[0].semilogy(h["epoch"], excess, label="linear transformer")
    axes[0].set(xlabel="epoch", ylabel="training loss − OLS loss", title="Excess loss over OLS")
    axes[1].semilogy(h["epoch"], h["precision_error"], color="C1")
    axes[1].set(xlabel="epoch", ylabel=r"$\|w_vP\,W_QW_K^\top-(X^\top X)^{-1}\|_F\,/\,\|(X^\top X)^{-1}\|_F$",
                title="Slow memory vs precision")
    axes[2].semilogy(h["epoch"], h["prediction_gap"], color="C2", label="relative gap to OLS")
    tolerance = training["config"]["tolerance"]
    axes[2].axhline(tolerance, color="k", ls=":", label=f"tolerance {tolerance:g}")
    if training["epochs_to_tolerance"]:
        axes[2].axvline(training["epochs_to_tolerance"], color="C3", ls="--",
                        label=f"reached at epoch {training['epochs_to_tolerance']}")
    axes[2].set(xlabel="epoch", ylabel=r"$\|\hat Y-HY\|/\|HY\|$", title="Prediction gap")
    for ax in axes:
        ax.grid(alpha=0.3)
    axes[2].legend()
    return _finish(fig)


TITLES = {"linear": "Linear attention (classical energy)", "softmax": "Softmax attention (modern energy)"}


def hopfield_figure(hopfield: dict):
    """Retrieval success against the number of stored patterns, one curve per dimension (first repeat)."""
    fig, axes = _figure(12, 4, 2, sharey=True)
    threshold = hopfield["config"]["threshold"]
    for kind, ax in zip(("linear", "softmax"), axes, strict=True):
        for d, (counts, rates) in hopfield[kind]["curves"].items():
            ax.semilogx(counts, rates, marker=".", ms=3, label=f"d = {d}")
        ax.axhline(threshold, color="k", ls=":", lw=0.8, label=f"threshold {threshold:g}")
        ax.set(xlabel="stored patterns N", ylabel="retrieval success (share of queries)", title=TITLES[kind])
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return _finish(fig)


def capacity_figure(hopfield: dict):
    """Capacity against d: linear attention on linear axes, softmax attention on a log scale, with the fits."""
    fig, axes = _figure(12, 4, 2)
    for kind, ax in zip(("linear", "softmax"), axes, strict=True):
        part = hopfield[kind]
        fit = part["fit"]
        dims = np.asarray(part["dims"], dtype=float)
        xs = [d for d in part["dims"] for _ in part["capacity"][d]]
        ys = [v for d in part["dims"] for v in part["capacity"][d]]
        ax.plot(xs, ys, "o", color="C0" if kind == "linear" else "C1", alpha=0.35, label="each repeat")
        ax.plot(dims, [part["mean"][d] for d in part["dims"]], "s", color="k", ms=4, label="mean")
        grid = np.linspace(dims.min(), dims.max(), 100)
        if kind == "linear":
            ax.set(ylabel="capacity (patterns)")
        else:
            ax.set_yscale("log")
            ax.set(ylabel="capacity (patterns, log scale)")
        if fit is not None:
            line = fit["intercept"] + fit["slope"] * grid
            lo, hi = fit["slope_ci"]
            if kind == "linear":
                label = f"fit: {fit['slope']:.3f} d + {fit['intercept']:.2f}  (slope 95% CI {lo:.3f}–{hi:.3f})"
                ax.plot(grid, line, color="C3", label=label)
            else:
                label = f"fit: 2^({fit['slope']:.2f} d {fit['intercept']:+.1f})  (slope 95% CI {lo:.2f}–{hi:.2f})"
                ax.plot(grid, 2.0**line, color="C3", label=label)
        threshold = hopfield["config"]["threshold"]
        ax.set(xlabel="pattern dimension d", title=f"{TITLES[kind]}: capacity at ≥ {threshold:.0%} success")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return _finish(fig)


def shift_figure(shift: dict, floor: float | None = None):
    """Prediction error against the covariance shift: frozen weights, two frozen steps, refitting."""
    fig, ax = _figure(6.5, 4.2)
    ax.semilogy(shift["shifts"], shift["fixed_mse"], marker="o", label="frozen weights (one pass)")
    ax.semilogy(shift["shifts"], shift["two_step_mse"], marker="^", label="frozen weights, two GD steps")
    ax.semilogy(shift["shifts"], shift["refit_mse"], marker="s", label="refit (OLS per prompt)")
    if floor is not None:
        ax.axhline(floor, color="k", ls=":", label=r"noise floor $\sigma^2 p/(n-p-1)$")
    ax.set(xlabel="covariance shift s (log-eigenvalue spread)", ylabel="prediction MSE vs noise-free truth",
           title="Distribution shift")
    ax.grid(alpha=0.3)
    ax.legend()
    return _finish(fig)


def nist_figure(table: dict[str, dict[str, float]]):
    """LRE per NIST data set (rows of ``table``) and method (its columns), as grouped bars."""
    names = list(table)
    methods = list(next(iter(table.values())))
    width = 0.8 / len(methods)
    fig, ax = _figure(13, 4.8)
    for index, method in enumerate(methods):
        offsets = np.arange(len(names)) + (index - (len(methods) - 1) / 2) * width
        ax.bar(offsets, [table[name][method] for name in names], width, label=method)
    ax.set_xticks(np.arange(len(names)), names)
    ax.set(xlabel="NIST StRD data set", ylabel="LRE (correct significant digits)", ylim=(0, 16),
           title="Accuracy of the OLS coefficients on the NIST StRD linear least-squares problems")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(ncol=1, fontsize=8, bbox_to_anchor=(1.01, 1), loc="upper left")
    return _finish(fig)


def beyond_figure(beyond: dict):
    """Beyond the paper (:func:`derive.experiments.beyond.beyond_the_paper`): the ridge path, streaming against
    batch, and k layers against OLS at the rate ρ^k of the spectrum of I − ΓXᵀX."""
    fig, axes = _figure(15, 4, 3)
    ridge, stream, layers = beyond["ridge"], beyond["streaming"], beyond["layers"]
    for problem in ridge["problems"]:
        axes[0].loglog(ridge["lams"], problem["norms"], label=f"n = {problem['n']}, p = {problem['p']}")
    axes[0].set(xlabel="λ", ylabel="‖β(λ)‖", title="Ridge as attention: the path")
    axes[1].semilogy(stream["rows"], stream["square_root"], "o-", label="square root (RecursiveLeastSquares)")
    axes[1].semilogy(stream["rows"], stream["sherman_morrison"], "s-", label="covariance form (Sherman–Morrison)")
    axes[1].set(xlabel="rows streamed", ylabel="relative error vs batch ridge", title="Streaming least squares")
    ks = np.asarray(layers["layers"])
    for run in layers["runs"]:
        line, = axes[2].semilogy(ks, run["errors"], "o", label=f"{run['label']}, measured")
        axes[2].semilogy(ks, run["errors"][0] * run["rho"] ** ks, "-", color=line.get_color(),
                         label=f"{run['label']}, ρ^k, ρ = {run['rho']:.2f}")
    floor = min(min(e for e in run["errors"] if e > 0) for run in layers["runs"]) / 10
    axes[2].set(xlabel="layers k", ylabel="max |prediction − OLS|", title="k layers = k gradient steps",
                ylim=(floor, None))
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return _finish(fig)
