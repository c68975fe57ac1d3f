"""The NIST helpers shared by the tests, the benchmark and notebook 06."""

from __future__ import annotations

import math

import numpy as np
import pytest

from derive.experiments.nist import CONSTRUCTIONS, design, design_text, exact_least_squares, lre

CUBIC = {"x": [[0.1], [2.0], [-1.5], [3.0]], "y": [1.0, 2.0, 0.5, 4.0], "intercept": True, "polynomial_degree": 3}


def test_lre_counts_agreeing_digits():
    assert lre([1.0, 2.0], [1.0, 2.0]) == 15.0
    assert lre([1.001, 2.0], [1.0, 2.0]) == pytest.approx(3.0)
    assert lre([1e-7, 2.0], [0.0, 2.0]) == pytest.approx(7.0)  # absolute error where the certified value is 0
    assert lre([50.0, 2.0], [1.0, 2.0]) == 0.0  # clipped: no digit
    assert lre([math.nan, 2.0], [1.0, 2.0]) == 0.0
    assert lre([1.0], [1.0, 2.0]) == 0.0  # wrong shape: no score


def test_design_builds_intercept_and_powers():
    X, y = design(CUBIC)
    assert X.shape == (4, 4) and y.shape == (4,)
    np.testing.assert_array_equal(X[:, 0], 1.0)
    np.testing.assert_allclose(X[:, 3], np.array([0.1, 2.0, -1.5, 3.0]) ** 3)
    plain = design({"x": [[1.0, 2.0], [3.0, 4.0]], "y": [1.0, 2.0], "intercept": False})[0]
    np.testing.assert_array_equal(plain, [[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(ValueError, match="construction must be one of"):
        design(CUBIC, "powers")


def test_constructions_round_differently_only_where_powers_are_inexact():
    built = {name: design(CUBIC, name)[0] for name in CONSTRUCTIONS}
    assert built["rounded"][0, 3] == 0.001  # 0.1³ = 0.001 exactly, then rounded once
    assert built["x**k"][0, 3] != 0.001  # 0.1 is not exact in binary: its float cube is not the nearest to 0.001
    for name in CONSTRUCTIONS:
        np.testing.assert_array_equal(built[name][1:], built["rounded"][1:])  # 2, -1.5, 3: exact powers


def test_design_text_is_exact():
    rows, y = design_text(CUBIC)
    assert rows[0] == ["1", "0.1", "0.01", "0.001"] and rows[2][3] == "-3.375"
    assert y == ["1.0", "2.0", "0.5", "4.0"]


def test_exact_least_squares():
    X, y = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]]), np.array([1.0, 2.0, 4.0])
    np.testing.assert_array_equal(exact_least_squares(X, y), [5 / 6, 1.5])  # (XᵀX)⁻¹Xᵀy = (5/6, 3/2)
    with pytest.raises(ValueError, match="rank-deficient"):
        exact_least_squares(np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]]), y)
