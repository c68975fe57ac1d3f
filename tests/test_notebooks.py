"""The notebooks run top to bottom without an error (their asserts check the headline numbers), and are
committed stripped: no outputs, no execution counts, no widget state."""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path

import pytest

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = (
    "01_ols_is_attention.ipynb",
    "02_gauge_and_gradient_descent.ipynb",
    "03_training_reaches_ols.ipynb",
    "04_hopfield_energy.ipynb",
    "05_distribution_shift.ipynb",
    "06_nist_accuracy.ipynb",
)
NIST = NOTEBOOK_DIR.parents[1] / "shared" / "data" / "nist_strd_lls.json"
NEEDS = {"03_training_reaches_ols.ipynb": ("matplotlib",), "04_hopfield_energy.ipynb": ("matplotlib",),
         "05_distribution_shift.ipynb": ("matplotlib",), "06_nist_accuracy.ipynb": ("matplotlib", "scipy", "mpmath")}


def _kernel_manager(tmp_path: Path):
    """A kernel manager for a kernel on this interpreter (sys.executable).

    With ipykernel importable here, a temporary kernel spec named python3 points at sys.executable, so the
    notebooks run with pytest's interpreter and packages. Without it, an installed python3 kernel spec is
    used; only if there is none either is the test skipped.
    """
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
    from jupyter_client.manager import AsyncKernelManager

    if importlib.util.find_spec("ipykernel") is None:
        try:
            KernelSpecManager().get_kernel_spec("python3")
        except NoSuchKernel:
            pytest.skip("no Jupyter kernel: ipykernel is not importable and no python3 kernel spec is installed")
        return AsyncKernelManager(kernel_name="python3")
    spec_dir = tmp_path / "kernels" / "python3"
    spec_dir.mkdir(parents=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Python 3 (pytest)", "language": "python"}
    (spec_dir / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
    specs = KernelSpecManager(kernel_dirs=[str(spec_dir.parent)])
    return AsyncKernelManager(kernel_name="python3", kernel_spec_manager=specs)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs(name, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    from nbclient.util import run_sync
    for module in NEEDS.get(name, ()):
        pytest.importorskip(module)
    if name.startswith("06") and not NIST.is_file():
        pytest.skip("shared/data/nist_strd_lls.json is not beside the checkout")
    nb = nbformat.read(NOTEBOOK_DIR / name, as_version=4)
    km = _kernel_manager(tmp_path)
    client = nbclient.NotebookClient(nb, km=km, kernel_name="python3", timeout=600,
                                     resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    start = time.perf_counter()
    try:
        client.execute()  # raises CellExecutionError, naming the cell, on any error (failed asserts included)
    finally:  # a kernel manager passed in is not shut down by nbclient
        if km.has_kernel:
            run_sync(km.shutdown_kernel)(now=True)
    errors = [output for cell in nb.cells if cell.cell_type == "code" for output in cell.outputs
              if output.output_type == "error"]
    assert not errors, errors
    assert all(cell.execution_count is not None for cell in nb.cells if cell.cell_type == "code")
    print(f"{name}: executed in {time.perf_counter() - start:.1f} s")


def test_every_notebook_is_executed_here():
    found = sorted(p.name for p in NOTEBOOK_DIR.glob("*.ipynb"))
    assert found == sorted(NOTEBOOKS), "add new notebooks to NOTEBOOKS so that the suite executes them"


@pytest.mark.parametrize("path", sorted(NOTEBOOK_DIR.glob("*.ipynb")), ids=lambda p: p.name)
def test_notebook_is_committed_stripped(path):
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["nbformat"] == 4 and data["nbformat_minor"] >= 5
    assert "widgets" not in data["metadata"]
    assert data["metadata"]["kernelspec"]["name"] == "python3"
    ids = [cell["id"] for cell in data["cells"]]
    assert len(ids) == len(set(ids)), "cell ids must be unique"
    for cell in data["cells"]:
        assert "widgets" not in cell.get("metadata", {}) and "execution" not in cell.get("metadata", {}), cell["id"]
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [], f"{path.name} cell {cell['id']} has outputs"
            assert cell["execution_count"] is None, f"{path.name} cell {cell['id']} has an execution count"
    nbformat = pytest.importorskip("nbformat")
    nbformat.validate(nbformat.reads(path.read_text(encoding="utf-8"), as_version=4))
