"""Sphinx configuration: MyST Markdown pages, MyST-NB notebooks, autodoc for the public API.

Build (what ``.ci/run`` runs; warnings are errors)::

    python -m pip install ".[docs]"
    sphinx-build -T -W --keep-going -b html docs build/docs

Two pages are written at configuration time, into paths ignored by git: ``theorems.md``, the theorem index,
from the certificates in ``proofs/certificates/`` (:mod:`derive.latex.theorem_page`), and
``_generated/code/ols_attention.py``, the generated NumPy module, for the API reference.  Formulas render with
the MathJax copy of ``sphinx-mathjax-offline`` (in the ``docs`` extra), so the site loads no script from the
network.

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
    # MathJax from the docs extra, copied into _static/mathjax: formulas render offline, no script from a CDN
    "sphinx-mathjax-offline",
]

source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
exclude_patterns = ["_build", "_generated", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints"]
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
nb_merge_streams = True  # with the exact merge of docs/nbstreams.py: output lines are never cut mid-token

sys.path.insert(0, str(DOCS))
import nbstreams  # noqa: E402

nbstreams.install()

# -- autodoc ------------------------------------------------------------------------------

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_default_options: dict[str, object] = {}
napoleon_google_docstring = False
napoleon_numpy_docstring = True

# -- HTML ---------------------------------------------------------------------------------

html_theme = "furo"  # a wide content column: code and proof lines are not clipped
html_title = "ols-transformer"
html_static_path = ["_static"]
html_css_files = ["outputs.css"]
html_theme_options = {"sidebar_hide_name": False}
pygments_style = "default"


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


# -- the theorem index, from the committed certificates ----------------------------------

THEOREM_PAGE = DOCS / "theorems.md"  # ignored by git: written here at every build


def _theorem_page() -> None:
    """``docs/theorems.md``: every certificate of ``proofs/certificates`` re-checked and stated, with its Coq
    file and LaTeX fragment (``derive.latex.theorem_page``; no proof is searched for)."""
    from derive.latex.theorem_page import theorem_page

    theorem_page(ROOT / "proofs" / "certificates", THEOREM_PAGE, coq=ROOT / "proofs" / "coq",
                 latex_out=DOCS / "_generated" / "latex")


_theorem_page()


# -- the generated NumPy module, for its API reference ------------------------------------

GENERATED_CODE = DOCS / "_generated" / "code"  # ignored by git: ols_attention.py, as `derive codegen` writes it


def _generated_module() -> None:
    """``docs/_generated/code/ols_attention.py`` from freshly checked theorems (rewritten only when it changes),
    importable by autodoc as ``ols_attention``."""
    from derive.codegen import numpy_module
    from derive.pipeline import codegen_theorems, prove

    records = prove(codegen_theorems())
    failed = [r.get("error", r["id"]) for r in records if "theorem" not in r]
    if failed:
        raise RuntimeError("the generated module's theorems do not check: " + "; ".join(failed))
    text = numpy_module({r["id"]: r["theorem"] for r in records})
    target = GENERATED_CODE / "ols_attention.py"
    if not target.is_file() or target.read_text(encoding="utf-8") != text:
        GENERATED_CODE.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


_generated_module()
sys.path.insert(0, str(GENERATED_CODE))
