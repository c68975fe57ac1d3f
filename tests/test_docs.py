"""The documentation site (docs/): the tutorial runs, every page is in the table of contents, and Sphinx
builds the site with warnings as errors, with every notebook executed (outputs and figures), the article's PDF
downloadable, the installation, estimator and changelog pages, and the repository linked.

The tutorial (``docs/tutorial.md``, a MyST-NB text notebook) is executed here cell by cell in a Jupyter
kernel on this interpreter, in a temporary folder, exactly as the Sphinx build executes it; its hidden
cells assert what the commands print. The full Sphinx build needs the ``docs`` extra
(``pip install ".[docs]"``) and is skipped without it; ``.ci/run`` installs the extra before the slow tier,
so CI runs it, into ``build/docs`` (``DERIVE_DOCS_OUT``), and then runs its own ``sphinx-build`` there, which finds
the site built and rebuilds only what changed (the notebooks are cached per version of the package in
``build/.jupyter_cache/`` too). What the site gathers at configuration time (the PDF, the
repository's address, the cache folder) is ``docs/sitefiles.py``, tested here without a build too.
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
    assert "file_format: mystnb" in front  # executed by the build (cached per version of the package, as every page)
    assert "execution_mode" not in front


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


@pytest.mark.slow  # 10 s of a Jupyter kernel; the README's run keeps under 5 minutes (the docs build executes it too)
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
    assert (work / "code" / "my_theorems_numpy.py").is_file()  # the library's own module holds its route
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
    # the docs extra is there for the slow tier (this file's build and its checks run in CI) ...
    slow = [i for i, line in enumerate(lines) if re.search(r"\bpytest -m slow\b", line)]
    assert slow and installs[0] < slow[0], "install the docs extra before `pytest -m slow`"
    # ... and derive build wrote the PDF before the site is built, which copies it (docs/sitefiles.py)
    derive_build = [i for i, line in enumerate(lines) if re.search(r"\bderive build\b", line)]
    assert derive_build and derive_build[0] < min(slow[0], lines.index(build[0]))


def _sitefiles():
    sys.path.insert(0, str(DOCS))
    try:
        import sitefiles
    finally:
        sys.path.remove(str(DOCS))
    return sitefiles


def test_the_new_pages_are_in_the_table_of_contents():
    """Installation and the estimator guide among the guides, the article among the reference, the changelog
    (the repository's CHANGELOG.md, included) at the end."""
    entries = _toctree_entries(DOCS / "index.md")
    for page in ("installation", "estimator", "article", "changelog"):
        assert page in entries and (DOCS / f"{page}.md").is_file(), page
    assert "```{include} ../CHANGELOG.md" in (DOCS / "changelog.md").read_text(encoding="utf-8")
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert changelog.startswith("# Changelog\n") and "## Unreleased" in changelog
    for issue in (2, 3, 9, 19, 27, 40):  # milestones from the first to the latest
        assert f"(issue {issue})" in changelog, issue


def test_the_installation_page_names_every_extra():
    """Every extra of pyproject.toml is in the installation page's table, and the system packages CI installs
    for TeX and Coq are named there."""
    tomllib = pytest.importorskip("tomllib")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    page = (DOCS / "installation.md").read_text(encoding="utf-8")
    table = {m.group(1) for m in re.finditer(r"^\| `([\w-]+)` \|", page, re.M)}
    assert table == set(extras), sorted(set(extras) ^ table)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for package in ("texlive-latex-base", "texlive-latex-recommended", "latexmk", "poppler-utils", "coq",
                    "libcoq-mathcomp-algebra", "libcoq-mathcomp-real-closed"):
        assert package in page and package in ci, package


@pytest.mark.parametrize(("remote", "url"), [
    ("https://github.com/owner/ols-transformer.git", "https://github.com/owner/ols-transformer"),
    ("git@github.com:owner/ols-transformer.git", "https://github.com/owner/ols-transformer"),
    ("ssh://git@gitlab.example.org/group/ols-transformer", "https://gitlab.example.org/group/ols-transformer"),
    ("https://user:token@github.com/owner/ols-transformer/", "https://github.com/owner/ols-transformer"),
    ("/srv/git/ols-transformer", None),
    ("file:///srv/git/ols-transformer", None),
    ("../ols-transformer", None),
    ("https://github.com", None),
])
def test_the_repository_address_is_a_web_address_without_credentials(remote, url):
    assert _sitefiles()._web_url(remote) == url


def test_the_repository_address_comes_from_pyproject_first(tmp_path):
    sitefiles = _sitefiles()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n[project.urls]\n'
                                             'Homepage = "https://example.org/home"\n'
                                             'Repository = "https://example.org/code/x.git"\n', encoding="utf-8")
    assert sitefiles.repository_url(tmp_path) == "https://example.org/code/x"
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n', encoding="utf-8")
    assert sitefiles.repository_url(tmp_path) is None  # no urls, no .git: nothing is made up


def test_the_notebook_cache_is_per_version_and_keeps_a_few(tmp_path):
    sitefiles = _sitefiles()
    base = tmp_path / "cache"
    folders = [sitefiles.notebook_cache(base, f"{i:016x}" + "0" * 48, keep=3) for i in range(5)]
    assert folders[-1] == base / f"{4:016x}" and folders[-1].is_dir()
    assert sorted(p.name for p in base.iterdir()) == [f"{i:016x}" for i in (2, 3, 4)]
    assert sitefiles.notebook_cache(base, f"{3:016x}" + "0" * 48) == base / f"{3:016x}"  # reused, not emptied
    digest = sitefiles.package_digest(ROOT)  # the version: a digest of the package's files
    assert re.fullmatch(r"[0-9a-f]{64}", digest) and digest == sitefiles.package_digest(ROOT)
    assert any(line.strip() in ("build/", "/build/") for line in (ROOT / ".gitignore").read_text().splitlines())


def test_the_article_is_copied_from_derive_build_else_explained(tmp_path, monkeypatch):
    """build/latex/ols_transformer.pdf is copied as it is; without it and without TeX there is no PDF (and no
    link), and a stale copy is removed."""
    sitefiles = _sitefiles()
    root, site = tmp_path / "checkout", tmp_path / "site"
    built = root / "build" / "latex" / sitefiles.ARTICLE_PDF
    built.parent.mkdir(parents=True)
    built.write_bytes(b"%PDF-1.5 the article")
    article = sitefiles.article_pdf(root, site, "0" * 64)
    assert article.origin == "derive build" and article.pdf == site / sitefiles.ARTICLE_PDF
    assert article.pdf.read_bytes() == b"%PDF-1.5 the article"
    built.unlink()
    monkeypatch.setattr(sitefiles.shutil, "which", lambda name: None)  # no latexmk, no pdflatex
    article = sitefiles.article_pdf(root, site, "0" * 64)
    assert article.pdf is None and article.origin == "none" and "no TeX engine" in article.detail
    assert not (site / sitefiles.ARTICLE_PDF).exists()


DOCS_EXTRA = ("sphinx", "myst_nb", "ipykernel", "furo", "sphinx-mathjax-offline", "sklearn")


@pytest.mark.skipif(not all(importlib.util.find_spec(m) for m in DOCS_EXTRA),
                    reason='the docs extra is not installed (pip install ".[docs]"); .ci/run builds the docs itself')
@pytest.mark.slow
def test_docs_build_without_warnings(tmp_path, monkeypatch):
    _with_scripts_on_path(monkeypatch)
    # .ci/run sets DERIVE_DOCS_OUT=build/docs, so that its own sphinx-build after the slow tier finds the site
    # built (Sphinx rebuilds only what changed): the site is built once in CI, not twice
    out = ROOT / os.environ["DERIVE_DOCS_OUT"] if os.environ.get("DERIVE_DOCS_OUT") else tmp_path / "html"
    run = subprocess.run([sys.executable, "-m", "sphinx", "-T", "-W", "--keep-going", "-b", "html", str(DOCS),
                          str(out)], capture_output=True, text=True, cwd=ROOT, timeout=1200)
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
    _the_site_is_complete_and_offline(out)
    _tutorial_outputs_are_whole(out)
    _every_notebook_page_shows_outputs_and_figures(out)
    _the_estimator_guide_was_executed(out)
    _the_new_pages_are_built_and_listed(out)
    _the_article_is_reachable(out)
    _the_repository_is_linked(out)


def _every_notebook_page_shows_outputs_and_figures(out: Path) -> None:
    """Each notebook page: at least one cell output and at least one image, a PNG file of the site."""
    pages = sorted((out / "notebooks").glob("*.html"))
    assert len(pages) == len(list((ROOT / "notebooks").glob("*.ipynb"))) >= 7
    for page in pages:
        html = page.read_text(encoding="utf-8")
        assert html.count('<div class="cell_output docutils container">') >= 1, f"{page.name}: no output"
        images = re.findall(r'<img[^>]+src="([^"]+)"', html)
        assert images, f"{page.name}: no figure"
        for src in images:
            image = (page.parent / src).resolve()
            assert image.is_file() and image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", (page.name, src)
            assert out.resolve() in image.parents, (page.name, src)


def _the_estimator_guide_was_executed(out: Path) -> None:
    page = (out / "estimator.html").read_text(encoding="utf-8")
    assert page.count('<div class="cell_output docutils container">') >= 4
    for printed in ("largest difference to LinearRegression", "best:", "two targets: coef_"):
        assert printed in page, printed
    assert "assert np.allclose" not in _text(page)  # the checking cells are removed from the page (tags: remove-cell)


def _the_new_pages_are_built_and_listed(out: Path) -> None:
    """The installation, estimator, article and changelog pages exist and every page's navigation lists them."""
    for page in ("installation", "estimator", "article", "changelog"):
        assert (out / f"{page}.html").is_file(), page
    for html_page in (out / "index.html", out / "notebooks" / "01_ols_is_attention.html"):
        html = html_page.read_text(encoding="utf-8")
        prefix = "../" if html_page.parent != out else ""
        for page in ("installation", "estimator", "article", "changelog"):
            assert f'href="{prefix}{page}.html"' in html, (html_page.name, page)
    changelog = (out / "changelog.html").read_text(encoding="utf-8")
    assert "Unreleased" in changelog and "(issue 2)" in changelog
    installation = _text((out / "installation.html").read_text(encoding="utf-8"))
    assert "python -m pip install ." in installation and "libcoq-mathcomp-algebra" in installation


def _the_article_is_reachable(out: Path) -> None:
    """Where a PDF could be had (derive build wrote one, or TeX is installed), the article page and the index
    lead to it, and the link is a PDF file of the site; else the page says how to build it and links nothing."""
    sitefiles = _sitefiles()
    page = (out / "article.html").read_text(encoding="utf-8")
    assert 'href="article.html"' in (out / "index.html").read_text(encoding="utf-8")
    links = re.findall(r'<a[^>]+href="([^"]+\.pdf)"', page)
    if (ROOT / "build" / "latex" / sitefiles.ARTICLE_PDF).is_file() or sitefiles._tex_engine() is not None:
        assert links, "the article page has no link to the PDF"
        for href in links:
            pdf = (out / href).resolve()
            assert out.resolve() in pdf.parents and pdf.is_file(), href
            assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 50_000, href
    else:
        assert not links and "built without the PDF" in _text(page) and "derive build" in _text(page)


def _the_repository_is_linked(out: Path) -> None:
    """Every page links the repository (the footer); the home and installation pages name it."""
    url = _sitefiles().repository_url(ROOT)
    if url is None:  # neither pyproject.toml nor the clone names one: the site says so, and links nothing made up
        installation = _text((out / "installation.html").read_text(encoding="utf-8"))
        assert "The address of the repository is not recorded" in installation
        assert "git clone REPOSITORY_URL" in installation
        return
    for page in out.rglob("*.html"):
        if page.relative_to(out).parts[0].startswith("_"):  # _static, _sources: not pages of the site
            continue
        assert f'href="{url}"' in page.read_text(encoding="utf-8"), page.relative_to(out)
    assert f"git clone {url}" in _text((out / "installation.html").read_text(encoding="utf-8"))


def _text(page: str) -> str:
    """A page's text: tags removed (highlighted code is split into spans), entities decoded."""
    import html

    return html.unescape(re.sub(r"<[^>]+>", "", page))


def _the_site_is_complete_and_offline(out: Path) -> None:
    """Every library theorem on the theorem page, figures shown, the generated API documented, and no script
    loaded from the network (MathJax is served from the site itself)."""
    from derive.library import THEOREM_IDS

    theorems = (out / "theorems.html").read_text(encoding="utf-8")
    for theorem_id in THEOREM_IDS:
        certificate = json.loads((ROOT / "proofs" / "certificates" / f"{theorem_id}.json").read_text())
        assert f'id="thm-{theorem_id.replace("_", "-")}"' in theorems, theorem_id
        assert certificate["sha256"] in theorems, theorem_id
    assert theorems.count("What it means.") == len(THEOREM_IDS) and "math notranslate" in theorems
    figures = (out / "figures.html").read_text(encoding="utf-8")
    images = re.findall(r'<img[^>]+src="([^"]+)"', figures)
    written = {"training.png", "hopfield_success.png", "hopfield_capacity.png", "distribution_shift.png",
               "beyond_the_paper.png"}
    assert {Path(src).name for src in images} >= written
    assert all((out / src).is_file() and (out / src).stat().st_size > 10_000 for src in images)
    api = (out / "api.html").read_text(encoding="utf-8")
    for name in ("ols_attention.coefficients", "ols_attention.predict", "ols_attention.attention_parameters",
                 "ols_attention.RecursiveLeastSquares", "ols_attention.multi_layer_predict",
                 "derive.sklearn.OLSAttentionRegressor"):
        assert f'id="{name}"' in api, name
    assert (out / "_static" / "mathjax" / "tex-chtml.js").is_file()
    for page in out.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        remote = re.findall(r'<script[^>]*\ssrc="((?:https?:)?//[^"]*)"', html)
        assert not remote, f"{page.relative_to(out)} loads scripts from the network: {remote}"
        assert not re.findall(r'<link[^>]*href="(?:https?:)?//[^"]*\.(?:js|css)"', html), page
    assert 'src="_static/mathjax/tex-chtml.js' in (out / "index.html").read_text(encoding="utf-8")


def test_stream_chunks_merge_into_the_text_that_was_printed():
    """A %%bash cell's output arrives in 100-byte chunks: merged, it is the printed text, not cut mid-token."""
    nbformat = pytest.importorskip("nbformat")
    sys.path.insert(0, str(DOCS))
    try:
        from nbstreams import merge_streams
    finally:
        sys.path.remove(str(DOCS))
    printed = "\\begin{theorem}[{OLS}] \\olsbreak X is invertible\nsecond line\n" * 5
    chunks = [printed[i:i + 100] for i in range(0, len(printed), 100)]
    outputs = [nbformat.NotebookNode(output_type="stream", name="stdout", text=chunk) for chunk in chunks]
    outputs.insert(2, nbformat.NotebookNode(output_type="stream", name="stderr", text="a warning\n"))
    merged = merge_streams(outputs)
    assert [(o["name"], o["text"]) for o in merged] == [("stdout", printed), ("stderr", "a warning\n")]
    progress = merge_streams([nbformat.NotebookNode(output_type="stream", name="stdout", text="10%\r100%\n")])
    assert progress[0]["text"] == "100%\n"


def _tutorial_outputs_are_whole(out: Path) -> None:
    """The tutorial's outputs hold the lines the commands printed: LaTeX copied from the page compiles."""
    import html as html_lib

    page = (out / "tutorial.html").read_text(encoding="utf-8")
    blocks = re.findall(r'<div class="cell_output docutils container">(.*?)</div>\s*</div>', page, re.S)
    text = html_lib.unescape(re.sub(r"<[^>]+>", "", "\n".join(blocks)))
    assert "\\olsbreak" in text and "\\begin{theorem}" in text
    for line in text.splitlines():
        assert not re.search(r"\\ols[a-z]*$", line) or re.search(r"\\ols(break|next|sep)$", line), line
    assert not re.search(r"\\(olsb|olsbr|olsbre|olsbrea)\n", text)


def test_the_committed_figures_are_what_reproduce_writes():
    """docs/figures.md shows every figure of `derive reproduce`, each committed in docs/figures/."""
    from derive.experiments import paper

    source = Path(paper.__file__).read_text(encoding="utf-8")
    drawn = set(re.findall(r'"(\w+\.png)": figures\.', source))
    page = (DOCS / "figures.md").read_text(encoding="utf-8")
    shown = set(re.findall(r"\]\(figures/(\w+\.png)\)", page))
    assert drawn and shown == drawn
    for name in drawn:
        assert (DOCS / "figures" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    summary = json.loads((DOCS / "figures" / "summary.json").read_text(encoding="utf-8"))
    assert set(summary["figures"]) == drawn and summary["provenance"]["quick"] is False  # the full run


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
