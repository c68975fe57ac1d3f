"""NIST StRD linear least-squares sets: the data, design matrices, the log relative error, the exact ceiling.

One place for what the tests, ``benchmarks/bench_numeric.py`` and notebook 06 all need. The seven
public-domain sets ship with the package (``derive/data/nist_strd_lls.json``); :func:`load_datasets`
reads them, or another file in the same format: ``{"source": ..., "datasets": [...]}``, each set with
``name``, ``x`` (one list of predictors per observation), ``y``, ``intercept``, an optional
``polynomial_degree`` (then the design holds the powers x, x², …, of the single predictor) and
``certified["beta"]``.
"""

from __future__ import annotations

import json
import os
from decimal import Decimal, localcontext
from fractions import Fraction
from importlib import resources

import numpy as np

LRE_CAP = 15.0
CONSTRUCTIONS = {  # ways to round the powers x^k of a polynomial design to float64
    "x**k": "each power by Python's float pow",
    "np.vander": "numpy.vander: repeated float multiplication",
    "rounded": "the exact decimal power, rounded to float64 once",
}
_PRECISION = 400  # decimal digits: every power in the NIST sets is exact at this precision
DATA_FILE = "nist_strd_lls.json"  # in the package derive.data


def load_document(path: str | os.PathLike | None = None) -> dict:
    """The whole data file as a dict (``source`` and ``datasets``): the packaged file, or ``path``."""
    if path is None:
        text = resources.files("derive.data").joinpath(DATA_FILE).read_text(encoding="utf-8")
    else:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    document = json.loads(text)
    if not isinstance(document, dict) or not isinstance(document.get("datasets"), list):
        raise ValueError(f"{path or DATA_FILE}: not a NIST StRD file (expected an object with a 'datasets' list)")
    return document


def load_datasets(path: str | os.PathLike | None = None) -> list[dict]:
    """The NIST StRD sets (each a dict as described above), from the packaged file or from ``path``."""
    return load_document(path)["datasets"]


def _predictors(x: object) -> list[float]:
    return [float(v) for v in (x if isinstance(x, (list, tuple)) else [x])]


def _exact_row(dataset: dict, x: object) -> list[Decimal]:
    """The predictors (or powers of x) of one observation, exactly, as decimals (no intercept)."""
    values = [Decimal(repr(v)) for v in _predictors(x)]
    degree = dataset.get("polynomial_degree")
    with localcontext() as context:
        context.prec = _PRECISION
        return [values[0] ** k for k in range(1, degree + 1)] if degree else values


def design(dataset: dict, construction: str = "x**k") -> tuple[np.ndarray, np.ndarray]:
    """X (n×p: intercept, then the predictors or powers of x) and y, in float64."""
    if construction not in CONSTRUCTIONS:
        raise ValueError(f"construction must be one of {tuple(CONSTRUCTIONS)}, not {construction!r}")
    degree = dataset.get("polynomial_degree")
    rows = []
    for x in dataset["x"]:
        values = _predictors(x)
        if not degree:
            row = values
        elif construction == "x**k":
            row = [values[0] ** k for k in range(1, degree + 1)]
        elif construction == "np.vander":
            row = [float(v) for v in np.vander(values[:1], degree + 1, increasing=True)[0, 1:]]
        else:
            row = [float(v) for v in _exact_row(dataset, x)]
        rows.append(([1.0] if dataset["intercept"] else []) + row)
    return np.array(rows, dtype=np.float64), np.array(dataset["y"], dtype=np.float64)


def design_text(dataset: dict) -> tuple[list[list[str]], list[str]]:
    """X and y as exact decimal strings (powers computed exactly), for the mpmath module."""
    rows = [(["1"] if dataset["intercept"] else []) + [str(v) for v in _exact_row(dataset, x)]
            for x in dataset["x"]]
    return rows, [repr(float(v)) for v in dataset["y"]]


def lre(got: object, certified: object) -> float:
    """NIST's log relative error, the minimum over coefficients of -log10(|q-c|/|c|) (|q-c| when c = 0),
    clipped to [0, 15]; an estimate of the wrong shape or with a non-finite entry scores 0."""
    got, certified = np.asarray(got, dtype=float).ravel(), np.asarray(certified, dtype=float).ravel()
    if got.shape != certified.shape or not np.all(np.isfinite(got)):
        return 0.0
    err = np.abs(got - certified) / np.where(certified != 0, np.abs(certified), 1.0)
    with np.errstate(divide="ignore"):
        digits = np.where(err > 0, -np.log10(np.where(err > 0, err, 1.0)), LRE_CAP)
    return float(np.min(np.clip(digits, 0.0, LRE_CAP)))


def exact_least_squares(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The least-squares solution of the float64 data exactly as given, in rational arithmetic, rounded once.

    What it still misses of the certified values is the data's own rounding, so a floating-point solver
    that lands closer does so by luck. Gauss-Jordan on the exact normal equations; X of full column rank.
    """
    rows = [[Fraction(float(v)) for v in row] for row in np.asarray(X)]
    b = [Fraction(float(v)) for v in np.asarray(y).ravel()]
    p = len(rows[0])
    system = [[sum(r[i] * r[j] for r in rows) for j in range(p)] + [sum(r[i] * v for r, v in zip(rows, b, strict=True))]
              for i in range(p)]
    for col in range(p):
        pivot = next((r for r in range(col, p) if system[r][col] != 0), None)
        if pivot is None:
            raise ValueError("X is rank-deficient: the least-squares solution is not unique")
        system[col], system[pivot] = system[pivot], system[col]
        for r in range(p):
            if r != col and system[r][col] != 0:
                factor = system[r][col] / system[col][col]
                system[r] = [a - factor * c for a, c in zip(system[r], system[col], strict=True)]
    return np.array([float(system[i][p] / system[i][i]) for i in range(p)])
