"""Sphinx configuration: MyST Markdown pages, MyST-NB notebooks, autodoc for the public API.

Build (what ``.ci/run`` runs; warnings are errors)::

    python -m pip install ".[docs]"
    sphinx-build -T -W --keep-going -b html docs build/docs

Pages written at configuration time, into paths ignored by git: ``theorems.md``, the theorem index, from the
certificates in ``proofs/certificates/`` (:mod:`derive.latex.theorem_page`); ``_generated/code/ols_attention.py``,
the generated NumPy module, for the API reference; and two fragments the pages include (``docs/sitefiles.py``):
``_generated/article.md``, the link to the article's PDF (copied from ``build/latex/`` where ``derive build``
wrote it, else compiled by ``derive latex --pdf`` where a TeX engine is installed, else a note saying how to
build it), and ``_generated/repository.md`` / ``_generated/clone.md``, the repository's address
(``[project.urls]`` of ``pyproject.toml``, else the clone's ``origin`` remote), which every page's footer
links too.  Formulas render with the MathJax copy of ``sphinx-mathjax-offline`` (in the ``docs`` extra), so the
site loads no script from the network.

The notebooks live in ``notebooks/`` at the top of the repository; :func:`_copy_notebooks` copies them into
``docs/notebooks/`` (ignored by git; only files whose content changed are rewritten, so incremental builds stay
incremental).  They are executed during the build, with their outputs and figures shown, through MyST-NB's
cache (jupyter-cache, ``nb_execution_mode = "cache"``) in ``build/.jupyter_cache/<version>/``, where the
version is a digest of the package's files: a notebook runs again when its code or the package changed, never
otherwise, and the build ``.ci/run`` runs after the test suite's build reuses what that one executed.  The
pages written as MyST-NB text notebooks, the tutorial (``tutorial.md``) and the estimator guide
(``estimator.md``), are executed and cached the same way, each in a temporary folder (the tutorial writes
files).  An error in any cell fails the build (``-T`` prints the cell and its traceback).  The kernels, and the
``derive`` commands the tutorial runs, import ``derive`` from this checkout (``PYTHONPATH``), as autodoc does.
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
# The notebooks' kernels (and the commands the tutorial runs) import derive from this checkout, as autodoc does:
# the pages show what this version of the package computes, installed or not.
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)

sys.path.insert(0, str(DOCS))
import nbstreams  # noqa: E402
import sitefiles  # noqa: E402

PACKAGE_DIGEST = sitefiles.package_digest(ROOT)
REPOSITORY = sitefiles.repository_url(ROOT)  # None where neither pyproject.toml nor the clone names one

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

# -- MyST-NB: every notebook page executed (cached per version of the package) ------------

nb_execution_mode = "cache"
nb_execution_cache_path = str(sitefiles.notebook_cache(ROOT / "build" / ".jupyter_cache", PACKAGE_DIGEST))
nb_execution_raise_on_error = True  # a failing cell fails the build
nb_execution_show_tb = True  # ... and the log shows the traceback
nb_execution_timeout = 300
nb_execution_in_temp = True  # a page writes its files into a temporary folder, not into docs/
nb_merge_streams = True  # with the exact merge of docs/nbstreams.py: output lines are never cut mid-token

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
html_theme_options: dict[str, object] = {"sidebar_hide_name": False}
# The repository, linked from every page's footer (furo's footer icons); the pages that name it include
# _generated/repository.md.
REPOSITORY_ICON = (  # Octicons "repo" (MIT), drawn in the text colour
    '<svg stroke="currentColor" fill="currentColor" stroke-width="0" viewBox="0 0 16 16" aria-hidden="true">'
    '<path fill-rule="evenodd" d="M2 2.5A2.5 2.5 0 0 1 4.5 0h8.75a.75.75 0 0 1 .75.75v12.5a.75.75 0 0 1-.75.75h-2.5'
    'a.75.75 0 1 1 0-1.5h1.75v-2h-8a1 1 0 0 0-.714 1.7.75.75 0 0 1-1.072 1.05A2.495 2.495 0 0 1 2 11.5v-9zm10.5-1V9h-8'
    'c-.356 0-.694.074-1 .208V2.5a1 1 0 0 1 1-1h8zM5 12.25v3.25a.25.25 0 0 0 .4.2l1.45-1.087a.25.25 0 0 1 .3 0L8.6 15.7'
    'a.25.25 0 0 0 .4-.2v-3.25a.25.25 0 0 0-.25-.25h-3.5a.25.25 0 0 0-.25.25z"></path></svg>')
if REPOSITORY:
    html_theme_options["footer_icons"] = [
        {"name": "Repository", "url": REPOSITORY, "html": REPOSITORY_ICON, "class": ""},
    ]
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


# -- the article's PDF and the repository's address, as fragments the pages include -------

GENERATED = DOCS / "_generated"  # ignored by git
ARTICLE = sitefiles.article_pdf(ROOT, GENERATED / "article", PACKAGE_DIGEST)

BUILD_THE_PDF = """\
```bash
sudo apt-get install texlive-latex-base texlive-latex-recommended latexmk   # Debian/Ubuntu: a TeX engine
python -m pip install . && derive build        # writes build/latex/ols_transformer.pdf
sphinx-build -T -W --keep-going -b html docs build/docs   # the site then links it here
```
"""


def _write_if_changed(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def _article_fragment() -> str:
    if ARTICLE.pdf is None:
        return ("```{note}\nThis copy of the site was built without the PDF: " + ARTICLE.detail + ". With TeX "
                "installed, `derive build` compiles it (or `derive latex --out DIR --pdf`), and the next build of "
                "the site links it here:\n```\n\n" + BUILD_THE_PDF)
    size = ARTICLE.pdf.stat().st_size
    how = ("as `derive build` wrote it (`" + ARTICLE.detail + "`), copied when the site was built"
           if ARTICLE.origin == "derive build" else
           "written by `derive latex --pdf` from this version of the package, " + ARTICLE.detail)
    return ("{download}`Download the article (PDF, " + f"{size / 1024:,.0f} kB" + ") </_generated/article/"
            + sitefiles.ARTICLE_PDF + ">` — " + how + ".\n")


def _repository_fragments() -> tuple[str, str]:
    if REPOSITORY is None:
        said = ("The address of the repository is not recorded in the checkout this site was built from "
                "(`[project.urls]` in `pyproject.toml`, or the clone's `origin` remote).\n")
        return said, "```bash\ngit clone REPOSITORY_URL\ncd ols-transformer\n```\n"
    folder = REPOSITORY.rstrip("/").rsplit("/", 1)[-1]
    said = f"The source code, its history and its issues: [{REPOSITORY.split('://', 1)[1]}]({REPOSITORY}).\n"
    return said, f"```bash\ngit clone {REPOSITORY}\ncd {folder}\n```\n"


_write_if_changed(GENERATED / "article.md", _article_fragment())
_repository_said, _repository_clone = _repository_fragments()
_write_if_changed(GENERATED / "repository.md", _repository_said)
_write_if_changed(GENERATED / "clone.md", _repository_clone)
