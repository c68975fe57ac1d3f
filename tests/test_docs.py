"""The documentation site (docs/): the tutorial runs, every page is in the table of contents, and Sphinx
builds the site with warnings as errors.

The tutorial (``docs/tutorial.md``, a MyST-NB text notebook) is executed here cell by cell in a Jupyter
kernel on this interpreter, in a temporary folder, exactly as the Sphinx build executes it; its hidden
cells assert what the commands print. The full Sphinx build needs the ``docs`` extra
(``pip install ".[docs]"``) and is skipped without it; ``.ci/run`` installs the extra and runs the same
build itself after the tests, so CI never skips it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
TUTORIAL = DOCS / "tutorial.md"
CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(?P<body>.*?)^```[ \t]*$", re.S | re.M)


def tutorial_cells() -> list[tuple[str, list[str]]]:
    """The tutorial's code cells in order: (source, tags)."""
    cells = []
    for match in CELL.finditer(TUTORIAL.read_text(encoding="utf-8")):
        lines = match.group("body").splitlines()
        tags: list[str] = []
        while lines and lines[0].startswith(":"):  # cell options, `:key: value`, then a blank line
            key, _, value = lines.pop(0)[1:].partition(":")
            if key.strip() == "tags":
                tags = [t.strip() for t in value.strip().strip("[]").split(",") if t.strip()]
        if lines and not lines[0].strip():
            lines.pop(0)
        cells.append(("\n".join(lines), tags))
    return cells


def test_tutorial_has_code_and_checks():
    cells = tutorial_cells()
    sources = "\n".join(source for source, _ in cells)
    assert len(cells) >= 15
    assert any("remove-cell" in tags for _, tags in cells)  # hidden cells assert what the page shows
    for command in ("derive prove --library my_theorems.py", "derive check certs/", "derive latex --library",
                    "derive codegen --library", ".auto(", "ProofError"):
        assert command in sources, command
    front = TUTORIAL.read_text(encoding="utf-8").split("---", 2)[1]
    assert "execution_mode: force" in front and "file_format: mystnb" in front


def _kernel_manager(tmp_path: Path):
    """A Jupyter kernel on this interpreter (as in tests/test_notebooks.py)."""
    pytest.importorskip("ipykernel")
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager

    spec_dir = tmp_path / "kernels" / "python3"
    spec_dir.mkdir(parents=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Python 3 (pytest)", "language": "python"}
    (spec_dir / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
    return AsyncKernelManager(kernel_name="python3",
                              kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(spec_dir.parent)]))


def _with_scripts_on_path(monkeypatch) -> None:
    """The tutorial's shell cells run `derive`: the one installed beside this interpreter (as docs/conf.py does)."""
    monkeypatch.setenv("PATH", os.pathsep.join([sysconfig.get_path("scripts"), os.environ.get("PATH", "")]))


def test_tutorial_runs(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    from nbclient.util import run_sync

    _with_scripts_on_path(monkeypatch)
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source, _ in tutorial_cells()]
    work = tmp_path / "work"
    work.mkdir()
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                     km=_kernel_manager(tmp_path), resources={"metadata": {"path": str(work)}})
    run_sync(client.async_execute)()  # raises CellExecutionError, naming the cell, if any cell fails
    assert (work / "my_theorems.py").is_file()
    assert {p.name for p in (work / "certs").iterdir()} >= {"ols_through_qr.json", "hat_idempotent.json"}
    assert (work / "tex" / "hat_idempotent.tex").is_file() and (work / "code" / "ols_attention.py").is_file()
    text = "".join(output.get("text", "") for cell in notebook.cells for output in cell.outputs)
    assert "2/2 theorems verified" in text
    assert "verified theorem ols_through_qr" in text and "verified theorem hat_idempotent" in text
    assert "hat_is_identity/main" in text and "REJECTED" in text


def _toctree_entries(page: Path) -> list[str]:
    entries = []
    for block in re.findall(r"^```\{toctree\}\n(.*?)^```", page.read_text(encoding="utf-8"), re.S | re.M):
        entries += [line.strip() for line in block.splitlines() if line.strip() and not line.startswith(":")]
    return entries


def test_every_page_is_in_the_table_of_contents():
    """Sphinx warns about a page outside every toctree (an error in CI); say which one before the build does."""
    listed = set(_toctree_entries(DOCS / "index.md"))
    pages = {p.stem for p in DOCS.glob("*.md")} - {"index"}
    assert pages <= listed, f"docs pages missing from the toctree of docs/index.md: {sorted(pages - listed)}"
    assert "notebooks/*" in _toctree_entries(DOCS / "notebooks.md")


def test_ci_builds_the_docs_with_warnings_as_errors():
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    build = [line for line in lines if line.startswith("sphinx-build")]
    assert build and "-W" in build[0].split() and "--keep-going" in build[0].split()
    assert build[0].split()[-2:] == ["docs", "build/docs"]
    installs = [i for i, line in enumerate(lines) if ".[docs]" in line]
    tests = [i for i, line in enumerate(lines) if "pytest" in line]
    assert installs and tests and tests[0] < installs[0] < lines.index(build[0])


@pytest.mark.skipif(not all(importlib.util.find_spec(m) for m in ("sphinx", "myst_nb", "ipykernel")),
                    reason='the docs extra is not installed (pip install ".[docs]"); .ci/run builds the docs itself')
@pytest.mark.slow
def test_docs_build_without_warnings(tmp_path, monkeypatch):
    _with_scripts_on_path(monkeypatch)
    out = tmp_path / "html"
    run = subprocess.run([sys.executable, "-m", "sphinx", "-T", "-W", "--keep-going", "-b", "html", str(DOCS),
                          str(out)], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-8000:]
    api = (out / "api.html").read_text(encoding="utf-8")
    for name in ("derive.ProofBuilder", "derive.ChainBuilder.auto", "derive.check", "derive.theorem",
                 "derive.certificates.verify_certificate"):
        assert f'id="{name}"' in api, name
    assert "inverse_cancel" in (out / "kernel.html").read_text(encoding="utf-8")  # the rule table
    assert "ols-transformer-certificate/2" in (out / "certificates.html").read_text(encoding="utf-8")
    rendered = sorted(p.name for p in (out / "notebooks").glob("*.html"))
    assert rendered == sorted(p.with_suffix(".html").name for p in (ROOT / "notebooks").glob("*.ipynb"))
    tutorial = (out / "tutorial.html").read_text(encoding="utf-8")
    assert "2/2 theorems verified" in tutorial and "hat_is_identity/main" in tutorial  # executed, not just shown


def _worked_examples() -> list[str]:
    """The Python blocks of docs/authoring.md's section on scalars, blocks and families."""
    text = (DOCS / "authoring.md").read_text(encoding="utf-8")
    section = text.split("## The language of the extensions", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)


def test_the_worked_examples_of_the_extensions_prove_what_they_say(tmp_path):
    """Ridge with λ, Sherman–Morrison, a block split, an induction over layers: each runs as printed and
    its last line prints the theorem the kernel made."""
    examples = _worked_examples()
    assert len(examples) == 4
    for number, source in enumerate(examples):
        script = tmp_path / f"example_{number}.py"
        script.write_text(source, encoding="utf-8")
        run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
        assert re.fullmatch(r"Theorem\('\w+', steps=\d+\)\n", run.stdout), run.stdout
