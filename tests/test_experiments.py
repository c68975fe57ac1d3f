"""The paper's experiments: headline numbers, so a regression fails here rather than a plot changing."""

from __future__ import annotations

import json
import os
import stat

import numpy as np
import pytest

import derive
from derive.cli import main
from derive.experiments import (
    QUICK_CAPACITY,
    CapacityConfig,
    TrainingConfig,
    distribution_shift,
    hopfield_capacity,
    hopfield_updates,
    linear_fit,
    train,
    training_gradients,
)
from derive.experiments.paper import _t_quantile


def test_symbolic_gradients_match_finite_differences():
    f = training_gradients(2)
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(10, 2)), rng.normal(size=(10, 3))
    S, XtY = X.T @ X, X.T @ Y
    M, syy, scale = XtY @ XtY.T, float(np.sum(Y * Y)), 1 / 30
    theta = rng.normal(size=10)

    def loss(t):
        A = t[8] * t[9] * t[:4].reshape(2, 2) @ t[4:8].reshape(2, 2).T
        return 0.5 * scale * float(np.sum((Y - X @ A @ XtY) ** 2))

    value, gradient = f(theta, S, M, syy, scale)
    assert value == pytest.approx(loss(theta), rel=1e-12)
    h = 1e-6
    numeric = [(loss(theta + h * e) - loss(theta - h * e)) / (2 * h) for e in np.eye(10)]
    np.testing.assert_allclose(np.asarray(gradient, float), numeric, rtol=1e-6, atol=1e-9)


def test_training_reaches_ols_within_1000_epochs():
    result = train(TrainingConfig())
    assert result["epochs_to_tolerance"] is not None and result["epochs_to_tolerance"] <= 1000
    assert result["final_relative_gap"] <= 1e-3
    assert result["final_precision_error"] <= 1e-2  # the slow memory approaches (XᵀX)⁻¹
    assert result["final_loss"] == pytest.approx(result["ols_loss"], rel=1e-6)
    gaps = result["history"]["prediction_gap"]
    assert gaps[-1] < gaps[10] < gaps[0]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_training_converges_for_other_seeds(seed):
    assert train(TrainingConfig(seed=seed))["epochs_to_tolerance"] <= 1000


def test_training_is_deterministic():
    a, b = train(TrainingConfig(epochs=50)), train(TrainingConfig(epochs=50))
    assert a["history"] == b["history"]


def test_hopfield_update_rules_are_derived():
    updates = hopfield_updates()
    assert updates["classical_update"].shape == (2, 1)
    assert updates["modern_update"].shape == (2, 1)


@pytest.fixture(scope="module")
def capacity():
    return hopfield_capacity(QUICK_CAPACITY)  # linear d = 8…128, softmax d = 8…32, 3 repeats: about 2 s


def test_linear_capacity_grows_with_d(capacity):
    linear = capacity["linear"]
    assert max(linear["dims"]) >= 128
    assert linear["fit"]["slope_ci"][0] > 0  # growth, with 95% confidence
    assert linear["mean"][128] >= 2.5 * linear["mean"][8]
    assert all(m <= 0.25 * d + 1 for d, m in linear["mean"].items())  # a small multiple of d at most
    assert len(linear["capacity"][128]) == QUICK_CAPACITY.repeats


def test_softmax_capacity_grows_exponentially(capacity):
    softmax, linear = capacity["softmax"], capacity["linear"]
    assert softmax["fit"]["model"].startswith("log2")
    assert softmax["fit"]["slope_ci"][0] > 0.1  # doublings per dimension
    assert softmax["mean"][32] >= 50 * linear["mean"][32]
    assert softmax["lower_bounds"] == 0


def test_capacity_is_deterministic():
    config = CapacityConfig(linear_dims=(8, 16, 32), softmax_dims=(8, 16), repeats=2, trials=50, max_patterns=256)
    assert hopfield_capacity(config) == hopfield_capacity(config)


def test_linear_fit_slope_and_confidence():
    exact = linear_fit([1, 2, 3, 4], [3, 5, 7, 9])
    assert exact["slope"] == pytest.approx(2) and exact["intercept"] == pytest.approx(1)
    assert exact["slope_ci"] == pytest.approx([2, 2]) and exact["r_squared"] == pytest.approx(1)
    rng = np.random.default_rng(0)
    x = np.repeat(np.arange(1.0, 6.0), 3)
    y = 0.5 * x + rng.normal(size=x.size)
    fit = linear_fit(x, y)
    slope, intercept = np.polyfit(x, y, 1)
    assert fit["slope"] == pytest.approx(slope) and fit["intercept"] == pytest.approx(intercept)
    t = 2.1603686564610127  # Student's t, 97.5% quantile, 13 degrees of freedom
    assert fit["slope_ci"] == pytest.approx([slope - t * fit["slope_stderr"], slope + t * fit["slope_stderr"]])
    assert _t_quantile(0.975, 10) == pytest.approx(2.2281388519649385, rel=1e-9)
    with pytest.raises(ValueError, match="at least 3 points"):
        linear_fit([1, 1, 1], [1, 2, 3])


def test_distribution_shift_hurts_frozen_weights_not_refitting():
    result = distribution_shift(prompts=300)
    fixed, refit = result["fixed_mse"], result["refit_mse"]
    assert all(a < b for a, b in zip(fixed[1:], fixed[2:], strict=False))  # worse as the shift grows
    assert fixed[-1] > 100 * fixed[0]
    assert max(refit) < 2 * min(refit) and max(refit) < 0.01  # refitting stays at the noise floor
    assert fixed[0] > refit[0]


@pytest.mark.slow
def test_reproduce_writes_figures_and_summary(tmp_path):
    pytest.importorskip("matplotlib")
    old = os.umask(0o022)
    try:
        assert main(["reproduce", "--out", str(tmp_path), "--quick", "--quiet"]) == 0
    finally:
        os.umask(old)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["training"]["epochs_to_tolerance"] <= 1000
    assert summary["training"]["final_relative_gap"] <= 1e-3
    linear, softmax = summary["hopfield"]["linear"], summary["hopfield"]["softmax"]
    assert max(linear["dims"]) >= 128 and linear["fit"]["slope_ci"][0] > 0
    assert softmax["fit"]["slope_ci"][0] > 0
    assert len(summary["shift"]["shifts"]) == len(summary["shift"]["fixed_mse"])
    provenance = summary["provenance"]
    assert provenance["versions"]["ols-transformer"] == derive.__version__
    assert provenance["versions"]["numpy"] == np.__version__
    assert set(provenance["versions"]) >= {"python", "sympy", "matplotlib"}
    assert provenance["seeds"] == {"training": 0, "hopfield": 0, "shift": 0} and provenance["quick"] is True
    assert summary["figures"] == ["training.png", "hopfield_success.png", "hopfield_capacity.png",
                                  "distribution_shift.png", "beyond_the_paper.png"]
    beyond = summary["beyond"]
    assert all(problem["primal_agreement"] < 1e-10 for problem in beyond["ridge"])
    assert beyond["streaming"]["square_root"] < 1e-11 and beyond["layers"]["one_layer_exact"] < 1e-10
    for name in [*summary["figures"], "summary.json"]:
        path = tmp_path / name
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, name  # world-readable, as open() would make it
    for name in summary["figures"]:
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(tmp_path.glob(".*"))  # no temporary files left
    again = tmp_path / "again"
    assert main(["reproduce", "--out", str(again), "--quick", "--quiet"]) == 0
    for name in [*summary["figures"], "summary.json"]:  # byte-identical
        assert (again / name).read_bytes() == (tmp_path / name).read_bytes(), name


def test_training_figure_shows_the_excess_loss_on_a_log_scale():
    pytest.importorskip("matplotlib")
    from derive.experiments.figures import training_figure

    result = train(TrainingConfig(epochs=50))
    loss_axes = training_figure(result).axes[0]
    assert loss_axes.get_yscale() == "log" and "OLS" in loss_axes.get_ylabel()
    (line,) = loss_axes.get_lines()
    np.testing.assert_allclose(line.get_ydata(), np.array(result["history"]["loss"]) - result["ols_loss"])


@pytest.mark.slow
def test_reproduce_names_the_output_it_cannot_write(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    (tmp_path / "summary.json").mkdir()  # in the way of the summary, even for root
    assert main(["reproduce", "--out", str(tmp_path), "--quick", "--quiet"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"cannot write {tmp_path / 'summary.json'}:" in err and ".tmp" not in err
    assert not list(tmp_path.glob(".*"))


def test_beyond_the_paper_measures_what_the_theorems_predict():
    """k layers converge at the rate of the spectrum of I − ΓXᵀX (multi_layer_gd's closed form); the ridge path
    shrinks and tends to OLS or the minimum-norm solution; streaming stays at batch accuracy."""
    from derive.experiments.beyond import layers_convergence, ridge_path, streaming_vs_batch

    layers = layers_convergence(seed=3)
    ks = np.asarray(layers["layers"])
    for run in layers["runs"]:
        errors = np.asarray(run["errors"])
        assert run["rho"] < 1 and errors[-1] < errors[0]
        bound = 2 * errors[0] * run["rho"] ** ks * np.sqrt(run["cond"]) + 1e-12
        assert (errors <= bound).all(), (run["label"], errors, bound)
    assert layers["one_layer_exact"] < 1e-10
    ridge = ridge_path(seed=3)
    for problem in ridge["problems"]:
        assert problem["primal_agreement"] < 1e-10 and problem["limit_gap"] < 1e-3
        assert (np.diff(problem["norms"]) <= 1e-12).all()  # ridge shrinks: ‖β(λ)‖ decreases with λ
    stream = streaming_vs_batch(seed=3, rows=3000)
    assert stream["rows"][-1] == 3000 and max(stream["square_root"]) < 1e-11
