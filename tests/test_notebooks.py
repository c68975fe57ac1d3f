"""The notebooks run top to bottom without an error (their asserts check the headline numbers) from a copy
of the package with nothing beside it, each showing at least one figure, and are committed stripped: no outputs,
no execution counts, no widget state. Their source of truth is the jupytext percent-format .py beside each .ipynb
(``notebooks/sync.py``). The documentation build executes them as well, in the checkout, to show their outputs
(``docs/conf.py``: cached per version of the package, so the site's second build in ``.ci/run`` reuses them);
``tests/test_docs.py`` checks what the site shows."""

from __future__ import annotations

import gc
import importlib.util
import json
import shutil
import sys
import time
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = (
    "01_ols_is_attention.ipynb",
    "02_gauge_and_gradient_descent.ipynb",
    "03_training_reaches_ols.ipynb",
    "04_hopfield_energy.ipynb",
    "05_distribution_shift.ipynb",
    "06_nist_accuracy.ipynb",
    "07_beyond_the_paper.ipynb",
    "08_linear_attention.ipynb",
)
# every notebook draws at least one figure (matplotlib); the docs show it (tests/test_docs.py)
NEEDS = {name: ("matplotlib",) for name in NOTEBOOKS} | {"06_nist_accuracy.ipynb": ("matplotlib", "scipy", "mpmath")}


def _sync():
    spec = importlib.util.spec_from_file_location("notebook_sync", NOTEBOOK_DIR / "sync.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _project_copy(tmp_path: Path) -> Path:
    """The package and the notebooks copied to tmp_path/copy/ols-transformer: nothing else beside them."""
    project = tmp_path / "copy" / "ols-transformer"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints")
    shutil.copytree(ROOT / "derive", project / "derive", ignore=ignore)
    shutil.copytree(NOTEBOOK_DIR, project / "notebooks", ignore=ignore)
    return project


def _kernel_manager(tmp_path: Path, project: Path):
    """A kernel manager for a kernel on this interpreter (sys.executable) that imports ``derive`` from ``project``.

    With ipykernel importable here, a temporary kernel spec named python3 points at sys.executable, so the
    notebooks run with pytest's interpreter and packages, and its PYTHONPATH puts the copy of the package first.
    Without it, an installed python3 kernel spec is used; only if there is none either is the test skipped.
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
            "display_name": "Python 3 (pytest)", "language": "python", "env": {"PYTHONPATH": str(project)}}
    (spec_dir / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
    specs = KernelSpecManager(kernel_dirs=[str(spec_dir.parent)])
    return AsyncKernelManager(kernel_name="python3", kernel_spec_manager=specs)


@pytest.fixture(autouse=True)
def _collect_sockets():
    """After each test, collect what the kernel client left (ZeroMQ sockets that nbclient does not close), so
    that no unclosed socket is collected, with a ResourceWarning that this suite's filters make an error, during
    some later, unrelated test."""
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


@pytest.mark.slow
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs(name, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    from nbclient.util import run_sync
    for module in NEEDS.get(name, ()):
        pytest.importorskip(module)
    project = _project_copy(tmp_path)
    nb = nbformat.read(project / "notebooks" / name, as_version=4)
    km = _kernel_manager(tmp_path, project)
    client = nbclient.NotebookClient(nb, km=km, kernel_name="python3", timeout=600,
                                     resources={"metadata": {"path": str(project / "notebooks")}})
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
    if importlib.util.find_spec("ipykernel") is not None:  # our kernel spec: derive came from the copy
        setup = "".join(o.get("text", "") for o in nb.cells[1].outputs)
        assert str(project / "derive") in setup, setup
    # every notebook shows a figure (those of derive.experiments.figures, or one of its own)
    assert any("image/png" in o.get("data", {}) for cell in nb.cells if cell.cell_type == "code"
               for o in cell.outputs), f"{name} shows no figure"
    print(f"{name}: executed in {time.perf_counter() - start:.1f} s")


def test_every_notebook_is_executed_here():
    found = sorted(p.name for p in NOTEBOOK_DIR.glob("*.ipynb"))
    assert found == sorted(NOTEBOOKS), "add new notebooks to NOTEBOOKS so that the suite executes them"


def test_every_notebook_has_a_jupytext_source():
    sources = sorted(p.name for p in _sync().sources())
    assert sources == sorted(name.replace(".ipynb", ".py") for name in NOTEBOOKS)
    for source in sources:
        assert (NOTEBOOK_DIR / source).read_text(encoding="utf-8").startswith("# %% [markdown]\n"), source


def test_committed_notebooks_match_their_sources():
    pytest.importorskip("jupytext")
    pytest.importorskip("nbformat")
    stale = _sync().stale()
    assert not stale, f"out of date: {[p.name for p in stale]}; run python notebooks/sync.py"


def test_sync_is_deterministic(tmp_path):
    pytest.importorskip("jupytext")
    sync = _sync()
    source = NOTEBOOK_DIR / NOTEBOOKS[0].replace(".ipynb", ".py")
    assert sync.notebook_text(source) == sync.notebook_text(source)
    shutil.copy(source, tmp_path / source.name)
    assert sync.stale(tmp_path) == [tmp_path / NOTEBOOKS[0]]  # no .ipynb yet
    (tmp_path / NOTEBOOKS[0]).write_text(sync.notebook_text(source), encoding="utf-8")
    assert sync.stale(tmp_path) == []


def test_notebooks_need_nothing_outside_the_package():
    for source in _sync().sources():
        text = source.read_text(encoding="utf-8")
        assert "shared/" not in text and '"shared"' not in text, f"{source.name} reads data from outside the package"


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
