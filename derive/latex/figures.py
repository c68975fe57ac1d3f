"""The experiments' figures in the package's article (issue 44): an "Experiments" section, when they were drawn.

``derive reproduce --out DIR`` runs the package's experiments (:mod:`derive.experiments.paper`) and writes PNG
figures with ``DIR/summary.json``.  The article includes them only when they exist: :func:`collect_figures`
looks for them in ``figures/`` beside the article (``build/latex/figures``) and beside the article's folder
(``build/figures``: ``derive reproduce --out build/figures``), copies them into the article's own ``figures/``
so that the LaTeX folder compiles on its own, and :func:`experiments_latex` writes the section, each figure with
a caption; numbers in a caption come from the ``summary.json`` of the run that drew the figures, and say nothing
where it is missing.  Without figures the article has no such section and compiles all the same.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["FIGURES", "Figures", "collect_figures", "experiments_latex"]

#: The figures ``derive reproduce`` draws (file name -> caption, LaTeX), in the order the article shows them.
#: Each is as wide as the text, but for those in :data:`WIDTHS`.
FIGURES = {
    "training.png": (
        "Training one linear-attention layer by gradient descent on in-context regression prompts: per epoch, the "
        "loss above the OLS loss, the distance of the slow memory $w_vP\\,W_QW_K^{\\top}$ from $(X^{\\top}X)^{-1}$ "
        "and the gap of the layer's predictions to the OLS predictions."),
    "hopfield_success.png": (
        "Retrieval by one update of linear attention (the classical Hopfield energy) and of softmax attention "
        "(the modern energy), from queries with some signs flipped: the share of queries retrieved against the "
        "number of stored patterns, one curve per dimension $d$."),
    "hopfield_capacity.png": (
        "Capacity of linear and softmax attention (the most patterns retrieved with every sign right) against the "
        "dimension $d$, with a linear fit for linear attention and a fit of $\\log_2$ of the capacity for "
        "softmax attention."),
    "distribution_shift.png": (
        "Prediction error under a shift of the covariance of the data: weights frozen after fitting on one "
        "covariance (one pass, and two gradient steps) against refitting the slow memory on each prompt."),
    "beyond_the_paper.png": (
        "Beyond the paper: the ridge path across $\\lambda$, streaming least squares against the batch ridge "
        "solution, and $k$ attention layers (gradient steps) converging to OLS at the rate $\\rho^k$ of the "
        "spectral radius of $I - \\Gamma X^{\\top}X$."),
}

#: The width of a figure drawn narrower than the others, as a share of the text width.
WIDTHS = {"distribution_shift.png": 0.6}

#: Where the article's figures go, relative to the article (its folder's ``figures/``).
FOLDER = "figures"


@dataclass(frozen=True)
class Figures:
    """The figures an article includes: their paths as ``\\includegraphics`` reads them (relative to the article),
    and the ``summary.json`` of the run that drew them (empty when there is none)."""

    paths: tuple[str, ...]
    summary: Mapping = field(default_factory=dict)


def _summary(folder: Path) -> dict:
    try:
        data = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def collect_figures(out: Path) -> Figures | None:
    """The experiments' figures for the article written in ``out``: from ``out/figures`` where any is there, else
    from ``out/../figures`` (copied into ``out/figures``, atomically); None where neither holds one."""
    from ..files import write_atomic

    out = Path(out)
    for folder in (out / FOLDER, out.parent / FOLDER):
        found = [name for name in FIGURES if (folder / name).is_file()]
        if not found:
            continue
        if folder.resolve() != (out / FOLDER).resolve():
            (out / FOLDER).mkdir(parents=True, exist_ok=True)
            for name in found:
                write_atomic(out / FOLDER / name, (folder / name).read_bytes())
            if (folder / "summary.json").is_file():
                write_atomic(out / FOLDER / "summary.json", (folder / "summary.json").read_bytes())
        return Figures(tuple(f"{FOLDER}/{name}" for name in found), _summary(folder))
    return None


def _label(path: str) -> str:
    return "fig:" + Path(path).stem.replace("_", "-")


def _number(value, digits: int) -> str | None:
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _run_details(name: str, summary: Mapping) -> str:
    """What the run recorded for one figure, in a sentence (empty when the summary does not say)."""
    try:
        if name == "training.png":
            epoch, tolerance = summary["training"]["epochs_to_tolerance"], summary["training"]["config"]["tolerance"]
            if _number(tolerance, 1) is not None and isinstance(epoch, int) and not isinstance(epoch, bool):
                return f" In this run the gap fell below ${tolerance:g}$ at epoch {epoch}."
            if _number(tolerance, 1) is not None and epoch is None:
                return f" In this run the gap did not fall below ${tolerance:g}$."
        if name == "hopfield_capacity.png":
            linear, softmax = summary["hopfield"]["linear"]["fit"], summary["hopfield"]["softmax"]["fit"]
            a, b = _number(linear["slope"], 3), _number(softmax["slope"], 2)
            if a and b:
                return (f" In this run the fitted slopes are {a} patterns per dimension (linear attention) and "
                        f"{b} doublings per dimension (softmax attention).")
    except (KeyError, TypeError):
        pass
    return ""


def experiments_latex(figures: Figures) -> str:
    """The article's "Experiments" section: what the figures are for, and each figure with its caption."""
    paths = list(figures.paths)
    summary = figures.summary or {}
    quick = bool((summary.get("provenance") or {}).get("quick")) if isinstance(summary, Mapping) else False
    refs = _refs([_label(p) for p in paths])
    run = "the run of \\texttt{derive reproduce} that drew them"
    if quick:
        run += " (a quick run: fewer patterns and prompts than the full one)"
    text = [
        "\\section{Experiments}\\label{sec:experiments}",
        "The theorems are identities of matrix algebra: they say what a layer with given weights computes, not "
        "whether training finds those weights or how a computation in floating point behaves. The package's "
        f"experiments address such questions numerically; {refs} {'is' if len(paths) == 1 else 'are'} from "
        f"{run}.",
    ]
    for path in paths:
        name = Path(path).name
        caption = FIGURES.get(name, "") + _run_details(name, summary)
        text.append("\n".join([
            "\\begin{figure}[htbp]",
            "\\centering",
            f"\\includegraphics[width={WIDTHS.get(name, '')}\\textwidth]{{{path}}}",
            f"\\caption{{{caption}}}\\label{{{_label(path)}}}",
            "\\end{figure}",
        ]))
    return "\n\n".join(text)


def _refs(labels: Sequence[str]) -> str:
    refs = [f"\\ref{{{label}}}" for label in labels]
    if len(refs) == 1:
        return f"Figure~{refs[0]}"
    return "Figures~" + ", ".join(refs[:-1]) + f" and {refs[-1]}"
