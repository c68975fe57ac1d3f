"""No silent wrong number at any scale (issue 14, items 11-13): the numerics on data far from 1, on ill-conditioned
data through the Gram routes, and on inputs that used to be misread.

Like test_numerics.py, these call the package modules with plain reference versions of the printed functions;
the last test runs the generated module itself.  Accuracy is judged against the exact least-squares solution of
the float64 data (rational arithmetic) where that is affordable, else against the β the data were made from.
"""

from __future__ import annotations

import warnings

import mpmath
import numpy as np
import pytest
from test_numerics import MPMATH_REFERENCE, NUMPY_REFERENCE

from derive.codegen import numerics_mpmath as nm
from derive.codegen import numerics_numpy as nn


@pytest.fixture(autouse=True)
def printed(monkeypatch):
    monkeypatch.setattr(nn, "PRINTED", dict(NUMPY_REFERENCE))
    monkeypatch.setattr(nm, "PRINTED", dict(MPMATH_REFERENCE))


@pytest.fixture(autouse=True)
def no_warnings():
    """A right answer comes without a RuntimeWarning (an overflow in a product, say); tests that expect one say so."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# --- item 13: inputs that used to be misread ---------------------------------------------------------


@pytest.mark.parametrize("dps, error, message", [(0, ValueError, "at least 1"), (-5, ValueError, "at least 1"),
                                                 (2.5, TypeError, "a whole number"),
                                                 (True, TypeError, "a whole number"),
                                                 ("30", TypeError, "a whole number")])
def test_mpmath_refuses_precisions_that_are_not_a_positive_whole_number(dps, error, message):
    X, y = [["1", "0"], ["1", "1"], ["1", "2"]], ["1", "2", "4"]
    for call in (lambda: nm.coefficients(X, y, dps=dps), lambda: nm.predict(X, y, [["1", "1"]], dps=dps),
                 lambda: nm.attention_parameters(X, y, dps=dps)):
        with pytest.raises(error, match=f"dps must be {message}"):
            call()
    assert float(nm.coefficients(X, y, dps=1)[1, 0]) == pytest.approx(1.5, rel=0.1)  # one digit is allowed


def test_mpmath_refuses_text_complex_and_masked_input():
    X, y = [[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]], [1.0, 2.0, 4.0]
    with pytest.raises(TypeError, match="X must be a list of numbers or of rows, not a string"):
        nm.coefficients("123", y)  # was three rows of one digit each
    with pytest.raises(TypeError, match="X must be a list of rows of numbers, not of strings"):
        nm.coefficients(["10", "11", "12"], y)  # was rows of digits
    with pytest.raises(TypeError, match="Y must be a list of numbers or of rows, not a string"):
        nm.coefficients(X, "124")
    with pytest.raises(TypeError, match="X_query must be a list of numbers or of rows, not a string"):
        nm.predict(X, y, "13")
    with pytest.raises(TypeError, match="X must be real, not complex"):
        nm.coefficients(np.array(X) + 0j, y)  # was cast with a ComplexWarning
    with pytest.raises(TypeError, match="Y must be real, not complex"):
        nm.coefficients(X, np.array(y) + 1j)
    with pytest.raises(TypeError, match="X holds complex128, .* complex numbers are refused"):
        nm.coefficients([[1.0, 0.0], [1.0, np.complex128(1.0)], [1.0, 2.0]], y)
    with pytest.raises(TypeError, match="X is a masked array, whose mask would be ignored"):
        nm.coefficients(np.ma.array(X, mask=[[0, 0], [1, 0], [0, 0]]), y)
    with pytest.raises(TypeError, match="Y is a masked array"):
        nm.coefficients(X, np.ma.array(y))
    with pytest.raises(TypeError, match="X holds a bool"):
        nm.coefficients([[1.0, 0.0], [1.0, np.True_], [1.0, 2.0]], y)
    got = nm.coefficients(np.array(X), np.array([1, 2, 4]), dps=30)  # NumPy floats and integers are fine
    assert [mpmath.nstr(v, 10) for v in got] == ["0.8333333333", "1.5"]
