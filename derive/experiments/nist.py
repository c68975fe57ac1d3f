"""NIST StRD linear least-squares sets: design matrices, the log relative error, and the exact ceiling.

One place for what the tests, ``benchmarks/bench_numeric.py`` and notebook 06 all need. A data file
follows ``shared/data/nist_strd_lls.json``: ``{"datasets": [...]}``, each set with ``x`` (one list of
predictors per observation), ``y``, ``intercept``, an optional ``polynomial_degree`` (then the design
holds the powers x, x², …, of the single predictor) and ``certified["beta"]``.
"""

from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np

LRE_CAP = 15.0
CONSTRUCTIONS = {  # ways to round the powers x^k of a polynomial design to float64
    "x**k": "each power by Python's float pow",
    "np.vander": "numpy.vander: repeated float multiplication",
    "rounded": "the exact decimal power, rounded to float64 once",
}
_PRECISION = 400  # decimal digits: every power in the NIST sets is exact at this precision


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
