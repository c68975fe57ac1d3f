"""docs/frameworks.md: its code runs as written, and the training loops it shows learn.

Each ```python block of the page is run, unchanged, in a fresh interpreter in a folder that holds the generated
``ols_attention_xp.py`` (the page's ```bash block says how it is made; the test makes it the same way), with a
few lines appended that check what the page claims: the loss of the in-context predictions falls as the feature
map is trained by gradient descent through the checked layer."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("array_api_compat")

from derive.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "frameworks.md"
BLOCK = re.compile(r"^```(?P<lang>\w+)\n(?P<body>.*?)^```[ \t]*$", re.S | re.M)


def blocks(lang: str) -> list[str]:
    return [m.group("body") for m in BLOCK.finditer(PAGE.read_text(encoding="utf-8")) if m.group("lang") == lang]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("frameworks")
    (command,) = [line.split("#")[0].split() for line in blocks("bash")[0].splitlines() if "derive codegen" in line]
    assert command[:4] == ["derive", "codegen", "--backend", "xp"] and command[4:] == ["--out", "."]
    assert main(["codegen", "--backend", "xp", "--out", str(out)]) == 0
    assert (out / "ols_attention_xp.py").exists()
    return out


def run(code: str, folder: Path, check: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code + "\n" + check], cwd=folder, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_page_has_a_torch_and_a_jax_training_loop():
    python = blocks("python")
    assert len(python) == 2
    assert "import torch" in python[0] and "loss.backward()" in python[0] and "ols.predict" in python[0]
    assert "import jax" in python[1] and "jax.value_and_grad" in python[1] and "ols.predict" in python[1]


@pytest.mark.slow
def test_the_pytorch_loop_runs_and_learns(folder):
    pytest.importorskip("torch")
    result = run(blocks("python")[0], folder,
                 "import json; print(json.dumps({'first': first, 'last': last, 'steps': len(losses)}))")
    assert result["steps"] == 100
    assert result["last"] < 0.6 * result["first"], result


@pytest.mark.slow
def test_the_jax_loop_runs_and_learns(folder):
    pytest.importorskip("jax")
    result = run(blocks("python")[1], folder,
                 "import json; print(json.dumps({'first': sum(jax_losses[:10]) / 10, "
                 "'last': sum(jax_losses[-10:]) / 10, 'steps': len(jax_losses)}))")
    assert result["steps"] == 200
    assert result["last"] < 0.9 * result["first"], result
