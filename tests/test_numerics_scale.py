"""No silent wrong number at any scale (issue 14, items 11-13): the numerics on data far from 1, on ill-conditioned
data through the Gram routes, and on inputs that used to be misread.

Like test_numerics.py, these call the package modules with plain reference versions of the printed functions;
the last test runs the generated module itself.  Accuracy is judged against the exact least-squares solution of
the float64 data (rational arithmetic) where that is affordable, else against the β the data were made from.
"""

from __future__ import annotations

import re
import warnings

import mpmath
import numpy as np
import pytest
from test_numerics import MPMATH_REFERENCE, NUMPY_REFERENCE

from derive.cli import main
from derive.codegen import numerics_mpmath as nm
from derive.codegen import numerics_numpy as nn
from derive.experiments.nist import exact_least_squares


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


def relative_error(got, want):
    got, want = np.asarray(got), np.asarray(want)
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


def problem(n, p, scale, seed=0):
    """X (n × p) of entries about ``scale`` and an O(1) β, with Y = Xβ."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) * scale
    beta = rng.uniform(0.5, 2.0, p) * rng.choice([-1.0, 1.0], p)
    return X, X @ beta, beta


SCALES = [1e-300, 1e-290, 1e-250, 1e-170, 1e-100, 1e100, 1e150, 1e160, 1e200, 1e300]
SHAPES = [(20, 3), (100_000, 5), (50, 1), (5_000, 1), (5, 5), (1, 1), (40, 8)]  # small, tall, one column, square


# --- item 11: the default route at every scale ---------------------------------------------------


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("n, p", SHAPES)
def test_auto_solves_data_at_every_scale(scale, n, p):
    X, y, beta = problem(n, p, scale)
    got = nn.coefficients(X, y)
    assert relative_error(got, beta) <= 1e-12, (scale, n, p)  # β = O(1) here: the data are Xβ, rounded
    if n * p <= 400:  # affordable in rational arithmetic: the least-squares solution of the data as given
        assert relative_error(got, exact_least_squares(X, y)) <= 1e-14
    Q = X[:3]
    np.testing.assert_allclose(nn.predict(X, y, Q), Q @ beta, rtol=1e-11)


@pytest.mark.parametrize("x_scale, y_scale", [(1.0, 1e-290), (1.0, 1e290), (1e-150, 1e150), (1e150, 1e-150),
                                              (1e-290, 1e-5), (1e100, 1e-190), (1e-200, 1e-300)])
@pytest.mark.parametrize("n, p", [(20, 3), (100_000, 5), (5_000, 1), (4, 4)])
def test_auto_solves_targets_scaled_apart_from_x(x_scale, y_scale, n, p):
    """β itself is tiny or huge (but a normal float): Y is scaled too, and β follows both scales exactly."""
    X, y, beta = problem(n, p, 1.0, seed=1)
    ratio = y_scale / x_scale
    got = nn.coefficients(X * x_scale, y * y_scale)
    assert relative_error(got / ratio, beta) <= 1e-12, (x_scale, y_scale)
    np.testing.assert_allclose(nn.predict(X * x_scale, y * y_scale, X[:2] * x_scale), y[:2] * y_scale, rtol=1e-11)


@pytest.mark.parametrize("route", nn.ROUTES)
@pytest.mark.parametrize("n", [2, 30, 100_000])
def test_columns_scaled_far_apart_lose_no_coefficient(route, n):
    """Columns about 1e-150 and 1e150: XᵀX under- and overflows, and on X itself the small column falls under the
    rank tolerance of the SVD and QR routes, which then dropped its coefficient. Every route scales columns first."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((n, 2)) * [1e-150, 1e150]
    beta = np.array([3e150, -2e-150])  # each column's share of y about 1
    y = X @ beta
    got = nn.coefficients(X, y, route=route)
    assert relative_error(got[0], beta[0]) <= 1e-10 and relative_error(got[1], beta[1]) <= 1e-10, (route, got)
    np.testing.assert_allclose(nn.predict(X, y, X[:2], route=route), y[:2], rtol=1e-10)
    L, _, _, P = nn.attention_parameters(X, y, route=route)
    assert relative_error(L @ P, beta) <= 1e-9
    np.testing.assert_allclose(nn.attention_scores(X, X[:2], route=route) @ y, y[:2], rtol=1e-9)


@pytest.mark.parametrize("batch, n, p", [(512, 64, 8), (200, 20, 3), (40, 10, 40 // 10), (300, 6, 1),
                                         (150, 40, 36)])  # across the stack, LAPACK on the stack, few problems
def test_batches_with_a_scale_per_problem(batch, n, p):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((batch, n, p))
    X[..., 1:] += 10.0  # uncentred: the refinement runs too
    exponents = rng.uniform(-290, 150, batch)
    exponents[: batch // 4] = 0.0  # a quarter at ordinary scales, solved as before
    rng.shuffle(exponents)
    X *= (10.0**exponents)[:, None, None]
    beta = rng.uniform(0.5, 2.0, (batch, p))
    Y = np.einsum("bnp,bp->bn", X, beta)
    got = nn.coefficients(X, Y)
    errors = np.max(np.abs(got - beta) / np.abs(beta), axis=-1)
    assert errors.max() <= 1e-10, (int(errors.argmax()), float(errors.max()), exponents[errors.argmax()])
    for b in rng.choice(batch, 3, replace=False):  # the least-squares solution of the data as given
        assert relative_error(got[b], exact_least_squares(X[b], Y[b])) <= 1e-13
    Q = X[:, :2]
    np.testing.assert_allclose(nn.predict(X, Y, Q), np.einsum("bmp,bp->bm", Q, beta), rtol=1e-10)
    factor = 10.0 ** np.clip(rng.uniform(-150, 150, batch), -280 - exponents, 280 - exponents)  # Y stays in range
    got = nn.coefficients(X, Y * factor[:, None])  # β itself scaled per problem: from about 1e-300 to 1e300
    assert np.max(np.abs(got / factor[:, None] - beta) / beta) <= 1e-10


@pytest.mark.parametrize("scale", [1e-170, 1e-250, 1e160])
def test_whole_batch_at_one_extreme_scale(scale):
    """The issue's batch (512 × 64 × 8) with every prompt at one extreme scale: solved column-scaled as a stack."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((512, 64, 8)) * scale
    beta = rng.standard_normal((512, 8))
    Y = np.einsum("bnp,bp->bn", X, beta)
    got = nn.coefficients(X, Y)
    assert np.max(np.abs(got - beta)) <= 1e-11 * np.max(np.abs(beta))


@pytest.mark.parametrize("scale", [1e-310, 1e-316, 1e-320, 5e-324])
@pytest.mark.parametrize("n, p", [(20, 3), (5, 5), (3_000, 40), (70, 1)])
def test_subnormal_x_gives_the_least_squares_solution(scale, n, p):
    """Subnormal entries are exact binary numbers too: the answer is the least-squares solution of the data as
    given (no longer "-inf + inf in fsum"), in single problems and in batches."""
    X, y, beta = problem(n, p, scale, seed=5)
    got = nn.coefficients(X, y)
    if n * p <= 400:
        assert relative_error(got, exact_least_squares(X, y)) <= 1e-12  # auto's promise: 1e-12 of every coefficient
    if scale >= 1e-316:  # y = Xβ rounded to few bits: β itself only to those bits
        assert relative_error(got, beta) <= 1e-6
    with warnings.catch_warnings():  # X 2⁻³ of entries about 5e-324 rounds to zeros: rank-deficient, and said so
        warnings.simplefilter("ignore", nn.RankDeficientWarning)
        stack = nn.coefficients(np.stack([X, X * 2.0**-3]), np.stack([y, y * 2.0**-3]))
    np.testing.assert_allclose(stack[0], got, rtol=1e-12)


def test_solutions_outside_the_float_range_are_named_never_zero_or_infinity():
    X, y, _ = problem(20, 3, 1e200, seed=6)
    with pytest.raises(ValueError, match="least-squares solution does not fit in float64 .underflow"):
        nn.coefficients(X, y * 1e-300 * 1e-100)  # β about 1e-200 / 1e200: below every float
    with pytest.raises(ValueError, match="least-squares solution does not fit in float64 .overflow"):
        nn.coefficients(X * 1e-300, y * 1e100)  # β about 1e400
    with pytest.raises(ValueError, match="least-squares solution does not fit in float64 .underflow"):
        nn.coefficients(X * 1e-128, y * 1e-300 * 1e-153)  # X about 1e72, β about 1e-325: XᵀY about 1e-180
    Xb = np.stack([X, X])
    with pytest.raises(ValueError, match="does not fit in float64 .underflow"):
        nn.coefficients(Xb, np.stack([y, y * 1e-300 * 1e-100]))
    x = np.arange(1.0, 5.0)[:, None] * 1e200  # one column: the exactly rounded quotient
    with pytest.raises(ValueError, match="does not fit in float64 .underflow"):
        nn.coefficients(x, np.arange(1.0, 5.0) * 1e-300)


def test_scaling_building_blocks_are_exact():
    rng = np.random.default_rng(14)
    for shape in [(1, 1), (7, 3), (300, 1), (100_003, 5), (3, 70, 2), (5, 4, 513, 3), (2, 1, 300), (600, 64, 8)]:
        A = rng.standard_normal(shape) * 10.0 ** rng.integers(-320, 300, shape[-1])  # subnormal to huge columns
        A.flat[::7] = 0.0
        A[..., -1] = 0.0  # a column of zeros: exponent 0
        want = np.frexp(np.abs(A).max(axis=-2))[1]
        np.testing.assert_array_equal(nn._max_abs_exponents(A), want)
    x = np.array([5e-324, 1e-310, 1.7e308, 3.0, 2.0**-1000])
    k = np.array([1074, 1060, -1024, -1, 1050])
    np.testing.assert_array_equal(nn._times_power_of_two(x, k), np.ldexp(x, k))  # 2^k itself out of range
    np.testing.assert_array_equal(nn._times_power_of_two(x[3:], k[3:] // 10), np.ldexp(x[3:], k[3:] // 10))


# --- item 11: predict, attention_scores and attention_parameters ------------------------------------


@pytest.mark.parametrize("route", nn.ROUTES)
@pytest.mark.parametrize("scale", [1e-300, 1e-170, 1e150, 1e300])
def test_attention_functions_at_every_scale(route, scale):
    X, y, beta = problem(30, 3, scale, seed=7)
    Q = X[:4]
    np.testing.assert_allclose(nn.predict(X, y, Q, route=route), Q @ beta, rtol=1e-10)
    scores = nn.attention_scores(X, Q, route=route)  # dimensionless: always in range
    np.testing.assert_allclose(scores @ y, Q @ beta, rtol=1e-10)
    L, W_K, W_V, P = nn.attention_parameters(X, y, route=route)  # L about 1 / scale: representable here
    np.testing.assert_allclose((L * scale) @ (L * scale).T, np.linalg.inv((X / scale).T @ (X / scale)), rtol=1e-9)
    np.testing.assert_allclose(L @ P, beta, rtol=1e-10)
    np.testing.assert_allclose(X @ W_V @ P, y, rtol=1e-10)


def test_attention_parameters_outside_the_float_range_are_named():
    """L has L Lᵀ = (XᵀX)⁻¹, so L is about 1/X: beyond the float range for subnormal X. A named error then, while
    coefficients, predict and the (dimensionless) scores are still right."""
    X, y, beta = problem(20, 3, 1e-310, seed=8)
    with pytest.raises(ValueError, match=r"attention factor .* does not fit in float64 .overflow"):
        nn.attention_parameters(X, y)
    np.testing.assert_allclose(nn.attention_scores(X, X[:2]) @ y, y[:2], rtol=1e-9)
    np.testing.assert_allclose(nn.predict(X, y, X[:2]), y[:2], rtol=1e-9)
    with pytest.raises(ValueError, match=r"output projection P does not fit in float64 .overflow"):
        nn.attention_parameters(np.ones((20, 1)), np.full(20, 1.7e308))  # P = LᵀXᵀY = sum(Y) / √20: √20 · 1.7e308


def test_predictions_outside_the_float_range_are_named():
    X, y, beta = problem(20, 3, 1.0, seed=9)
    with pytest.raises(ValueError, match=r"prediction matrix X_query β̂ does not fit in float64 .underflow"):
        nn.predict(X, y * 1e-200, X[:2] * 1e-200)  # about 1e-400
    with pytest.raises(ValueError, match=r"prediction matrix X_query β̂ does not fit in float64 .overflow"):
        nn.predict(X, y * 1e200, X[:2] * 1e200)
    np.testing.assert_array_equal(nn.predict(X, y, np.zeros((2, 3))), [0.0, 0.0])  # exact zeros are right


# --- item 12: routes that truncate say so ------------------------------------------------------------


def ill_conditioned(n=50, seed=10):
    """Full rank, cond(X) about 1e9 after scaling columns: XᵀX (cond 1e18) cannot hold it in float64."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, n)
    X = np.column_stack([np.ones(n), t, t + 1e-9 * rng.standard_normal(n)])
    return X, X @ np.array([1.0, 1.5e10, -1.5e10]) + rng.standard_normal(n)


@pytest.mark.parametrize("route", ["eigh", "cholesky"])
def test_gram_routes_that_truncate_say_so(route):
    X, y = ill_conditioned()
    exact = exact_least_squares(X, y)
    with pytest.warns(nn.AccuracyWarning, match=rf"route '{route}' truncated the answer: it used rank 2 where X .* has "
                                            r"rank 3, condition estimate [0-9.]+e\+0?9"):
        truncated = nn.coefficients(X, y, route=route)
    assert relative_error(truncated, exact) > 0.5  # what the warning is for
    with pytest.warns(UserWarning, match="truncated"):  # AccuracyWarning is a UserWarning ...
        nn.attention_parameters(X, y, route=route)
    with pytest.warns(RuntimeWarning, match="in 2 problems"):  # ... and a RuntimeWarning
        nn.coefficients(np.stack([X, X, X[::-1] * 0 + np.eye(50, 3)]), np.stack([y, y, y]), route=route)
    assert relative_error(nn.coefficients(X, y, route="exact"), exact) <= 1e-15  # the least-squares solution
    assert relative_error(nn.coefficients(X, y), exact) <= 1e-5  # auto: backward stable, about cond eps
    for other in ("svd", "qr"):  # backward stable: about cond eps, 1e-7, and no warning
        assert relative_error(nn.coefficients(X, y, route=other), exact) <= 1e-5
    assert "truncat" in nn.coefficients.__doc__ and "ill-conditioned" in nn.coefficients.__doc__


@pytest.mark.parametrize("route", ["eigh", "cholesky"])
def test_gram_routes_warn_where_conditioning_costs_digits(route):
    X, y = ill_conditioned()
    X[:, 2] = X[:, 1] + 1e-5 * np.random.default_rng(11).standard_normal(50)  # cond about 1e6: no truncation
    with pytest.warns(nn.AccuracyWarning, match=rf"route '{route}': condition estimate cond\(X\)² = [0-9.]+e\+1[0-9]"):
        nn.coefficients(X, y, route=route)


@pytest.mark.parametrize("route", nn.ROUTES)
def test_no_warning_where_the_answer_is_right(route):
    """Well-conditioned data, and exactly rank-deficient data (the minimum-norm answer is the defined one)."""
    rng = np.random.default_rng(12)
    X, y = rng.standard_normal((30, 4)), rng.standard_normal(30)
    nn.coefficients(X, y, route=route)
    # X0 − X1 rounds: numerically rank-deficient, of full rank exactly; route "exact" decides the rank exactly, so it
    # is given a column that repeats one (its warning where the rank is full only by rounding: test_numerics_exact)
    X[:, 3] = X[:, 0] if route == "exact" else X[:, 0] - X[:, 1]
    with warnings.catch_warnings():  # route "auto" says that X is rank-deficient (RankDeficientWarning), only that
        if route == "auto":
            warnings.simplefilter("ignore", nn.RankDeficientWarning)
        got = nn.coefficients(X, y, route=route)
        np.testing.assert_allclose(got, np.linalg.pinv(X) @ y, rtol=1e-8, atol=1e-12)
        nn.coefficients(np.stack([X] * 3), np.stack([y] * 3), route=route)
    if route == "auto":
        with pytest.warns(nn.RankDeficientWarning, match=r"numerical rank 3 of 4 columns, condition estimate"):
            nn.coefficients(X, y)


# --- item 13: inputs that used to be misread ---------------------------------------------------------


@pytest.mark.parametrize("where", ["X", "Y", "X_query"])
def test_numpy_refuses_masked_arrays(where):
    args = {"X": np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]]), "Y": np.array([1.0, 2.0, 4.0]),
            "X_query": np.array([1.0, 3.0])}
    args[where] = np.ma.array(args[where], mask=np.zeros(args[where].shape, bool))
    with pytest.raises(TypeError, match=f"{where} is a masked array, whose mask would be ignored"):
        nn.predict(args["X"], args["Y"], args["X_query"])
    if where != "X_query":
        with pytest.raises(TypeError, match="masked array"):
            nn.coefficients(args["X"], args["Y"])
        with pytest.raises(TypeError, match="masked array"):
            nn.attention_parameters(args["X"], args["Y"])


@pytest.mark.parametrize("function", ["coefficients", "predict", "attention_parameters", "attention_scores"])
@pytest.mark.parametrize("route", nn.ROUTES)
def test_numpy_names_nan_and_infinity_where_they_are(function, route):
    X = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]]) * 1e200  # XᵀX overflows too: still named as NaN
    for bad in (np.nan, np.inf):
        Y = np.array([1.0, bad, 4.0])
        Xb = X.copy()
        Xb[1, 1] = bad
        Q = np.array([1.0, bad])
        call = {"coefficients": lambda X, Y, Q: nn.coefficients(X, Y, route=route),
                "predict": lambda X, Y, Q: nn.predict(X, Y, Q, route=route),
                "attention_parameters": lambda X, Y, Q: nn.attention_parameters(X, Y, route=route),
                "attention_scores": lambda X, Y, Q: nn.attention_scores(X, Q, route=route)}[function]
        if function != "attention_scores":
            with pytest.raises(ValueError, match="^Y contains NaN or infinity$"):
                call(X, Y, np.ones(2))
        with pytest.raises(ValueError, match="^X contains NaN or infinity$"):
            call(Xb, np.ones(3), np.ones(2))
        if function in ("predict", "attention_scores"):
            with pytest.raises(ValueError, match="^X_query contains NaN or infinity$"):
                call(X, np.ones(3), Q)


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


# --- the generated module itself ----------------------------------------------------------------------


def test_generated_module_at_extreme_scales(tmp_path):
    """The standalone ols_attention.py, with its printed functions: the issue's examples."""
    import importlib.util

    assert main(["codegen", "--backend", "numpy", "--out", str(tmp_path)]) == 0
    spec = importlib.util.spec_from_file_location("generated_scale", tmp_path / "ols_attention.py")
    oa = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(oa)
    X, y, beta = problem(100_000, 5, 1e-170, seed=13)  # returned 0 on the default route
    assert relative_error(oa.coefficients(X, y), beta) <= 1e-12
    assert relative_error(oa.predict(X, y, X[:3]), y[:3]) <= 1e-12
    X, y, beta = problem(20, 5, 1e-310, seed=13)  # raised "-inf + inf in fsum"
    assert relative_error(oa.coefficients(X, y), exact_least_squares(X, y)) <= 1e-14
    X, y, beta = problem(1_000, 5, 1e200, seed=13)  # "XᵀX overflows"
    assert relative_error(oa.coefficients(X, y), beta) <= 1e-12
    Xill, yill = ill_conditioned()
    with pytest.warns(oa.AccuracyWarning, match=re.escape("route 'eigh' truncated")):
        oa.coefficients(Xill, yill, route="eigh")
    with pytest.raises(TypeError, match="masked array"):
        oa.coefficients(np.ma.array(X), y)
