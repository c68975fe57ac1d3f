"""Sphinx configuration: MyST Markdown pages, MyST-NB notebooks, autodoc for the public API.

Build (what ``.ci/run`` runs; warnings are errors)::

    python -m pip install ".[docs]"
    sphinx-build -T -W --keep-going -b html docs build/docs

The notebooks live in ``notebooks/`` at the top of the repository.  They are rendered, not executed
(their code runs in ``tests/test_notebooks.py``): before reading the sources, :func:`_copy_notebooks`
copies them into ``docs/notebooks/`` (ignored by git; only files whose content changed are rewritten, so
incremental builds stay incremental).  The tutorial (``tutorial.md``) is the one page that is executed:
its code cells run in a Jupyter kernel during the build, and an error in any cell fails the build.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))  # autodoc imports the checkout's derive, installed or not
# The tutorial's shell cells run `derive`: find the one installed beside this interpreter first (the kernel
# that executes the tutorial inherits this environment), even when its venv is not activated.
os.environ["PATH"] = os.pathsep.join([sysconfig.get_path("scripts"), os.environ.get("PATH", "")])

# -- project ------------------------------------------------------------------------------

project = "ols-transformer"
author = "ols-transformer contributors"
copyright = "ols-transformer contributors"
try:
    from derive import __version__ as release
except ImportError:  # pragma: no cover - autodoc would fail loudly anyway
    release = "0.1.0"
version = release

extensions = [
    "myst_nb",  # MyST Markdown (it loads myst_parser) and notebooks
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
]

source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints"]
nitpicky = False
suppress_warnings: list[str] = []

# -- MyST ---------------------------------------------------------------------------------

myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3  # `#section` links inside and between pages

# -- MyST-NB: notebooks are rendered as committed; the tutorial opts in to execution -------

nb_execution_mode = "off"
nb_execution_raise_on_error = True  # a failing cell of an executed page fails the build
nb_execution_show_tb = True  # ... and the log shows the traceback
nb_execution_timeout = 300
nb_execution_in_temp = True  # the tutorial writes its files into a temporary folder, not into docs/
nb_merge_streams = True

# -- autodoc ------------------------------------------------------------------------------

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_default_options: dict[str, object] = {}
napoleon_google_docstring = False
napoleon_numpy_docstring = True

# -- HTML ---------------------------------------------------------------------------------

html_theme = "alabaster"
html_title = "ols-transformer"
html_static_path: list[str] = []
html_theme_options = {"description": "OLS is single-layer linear attention, machine-checked",
                      "fixed_sidebar": False}


# -- the notebooks, rendered from notebooks/ ----------------------------------------------

NOTEBOOK_SOURCE = ROOT / "notebooks"
NOTEBOOK_COPY = DOCS / "notebooks"


def _copy_notebooks() -> None:
    """Mirror ``notebooks/*.ipynb`` into ``docs/notebooks/`` (rewrite only what changed, drop what is gone)."""
    NOTEBOOK_COPY.mkdir(exist_ok=True)
    wanted = {path.name: path for path in sorted(NOTEBOOK_SOURCE.glob("*.ipynb"))}
    for stale in NOTEBOOK_COPY.iterdir():
        if stale.name not in wanted:
            if stale.is_dir():
                shutil.rmtree(stale)
            else:
                stale.unlink()
    for name, source in wanted.items():
        target = NOTEBOOK_COPY / name
        data = source.read_bytes()
        if not target.is_file() or target.read_bytes() != data:
            target.write_bytes(data)


_copy_notebooks()  # at configuration time, before Sphinx lists the source files
