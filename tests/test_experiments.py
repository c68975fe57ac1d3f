"""The paper's experiments: headline numbers, so a regression fails here rather than a plot changing."""

from __future__ import annotations

import json

import numpy as np
import pytest

from derive.cli import main
from derive.experiments import (
    TrainingConfig,
    distribution_shift,
    hopfield_capacity,
    hopfield_updates,
    train,
    training_gradients,
)


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


def test_capacity_linear_vs_exponential():
    result = hopfield_capacity(dims=(8, 16, 24), max_patterns=4096, trials=200)
    linear, softmax = result["capacity"]["linear"], result["capacity"]["softmax"]
    assert all(linear[d] <= 0.25 * d for d in (8, 16, 24))  # classical: a small multiple of d at most
    assert softmax[24] >= 50 * linear[24]
    assert softmax[24] >= 16 * softmax[16] >= 16  # growth faster than linear in d
    assert result["linear_capacity"] == linear[24] and result["softmax_capacity"] == softmax[24]


def test_distribution_shift_hurts_frozen_weights_not_refitting():
    result = distribution_shift(prompts=300)
    fixed, refit = result["fixed_mse"], result["refit_mse"]
    assert all(a < b for a, b in zip(fixed[1:], fixed[2:], strict=False))  # worse as the shift grows
    assert fixed[-1] > 100 * fixed[0]
    assert max(refit) < 2 * min(refit) and max(refit) < 0.01  # refitting stays at the noise floor
    assert fixed[0] > refit[0]


def test_reproduce_writes_figures_and_summary(tmp_path):
    pytest.importorskip("matplotlib")
    assert main(["reproduce", "--out", str(tmp_path), "--quick", "--quiet"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["training"]["epochs_to_tolerance"] <= 1000
    assert summary["training"]["final_relative_gap"] <= 1e-3
    assert summary["hopfield"]["softmax_capacity"] > summary["hopfield"]["linear_capacity"]
    assert len(summary["shift"]["shifts"]) == len(summary["shift"]["fixed_mse"])
    for name in summary["figures"]:
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    again = tmp_path / "again"
    assert main(["reproduce", "--out", str(again), "--quick", "--quiet"]) == 0
    assert (again / "summary.json").read_text() == (tmp_path / "summary.json").read_text()
