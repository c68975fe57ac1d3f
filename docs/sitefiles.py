"""What the site gathers at configuration time besides its pages: the repository's address, the article's PDF
and the folder where the executed notebooks are cached.

``docs/conf.py`` calls these functions; ``tests/test_docs.py`` calls them too, to know what the built site must
show.  Nothing here runs a shell: the one program started is ``python -m derive latex`` (with an argument list),
and only where no PDF exists and a TeX engine does.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

__all__ = ["ARTICLE_PDF", "Article", "article_pdf", "package_digest", "notebook_cache", "repository_url"]

ARTICLE_PDF = "ols_transformer.pdf"  # derive.pipeline.ARTICLE, compiled
URL_KEYS = ("repository", "source", "source code", "code", "homepage")  # [project.urls], in this order


# -- the repository's address -------------------------------------------------------------


def _web_url(url: str) -> str | None:
    """A browsable https address for a git remote or project URL; None for a local path or anything else.

    ``git@host:owner/name.git`` and ``ssh://git@host/owner/name`` become ``https://host/owner/name``; a user name
    or token in the address is dropped (a CI clone's remote may carry one); ``.git`` and a final slash are
    removed."""
    url = url.strip()
    scp = re.fullmatch(r"[\w.-]+@([\w.-]+):(?!/)(.+)", url)  # git@github.com:owner/name.git
    if scp:
        url = f"https://{scp.group(1)}/{scp.group(2)}"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https", "ssh", "git") or not parts.hostname:
        return None
    path = re.sub(r"\.git$", "", parts.path.rstrip("/")).rstrip("/")
    if not path.strip("/"):
        return None
    host = parts.hostname + (f":{parts.port}" if parts.port and parts.scheme in ("http", "https") else "")
    return urlunsplit(("https", host, path, "", ""))


def _pyproject_urls(root: Path) -> dict[str, str]:
    from derive.files import pyproject_urls

    return pyproject_urls(root / "pyproject.toml")


def _git_origin(root: Path) -> str | None:
    if not (root / ".git").exists() or shutil.which("git") is None:
        return None
    try:
        run = subprocess.run(["git", "-C", str(root), "config", "--get", "remote.origin.url"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if run.returncode != 0:
        return None
    return run.stdout.strip() or None


def repository_url(root: Path) -> str | None:
    """The repository's web address: ``[project.urls]`` of ``pyproject.toml`` (Repository, Source, ..., Homepage),
    else the clone's ``origin`` remote where it is a web or ssh address; None where neither names one."""
    urls = _pyproject_urls(root)
    for key in URL_KEYS:
        found = _web_url(urls.get(key, ""))
        if found:
            return found
    origin = _git_origin(root)
    return _web_url(origin) if origin else None


# -- the package's digest: what the executed notebooks and the built article depend on -------


def package_digest(root: Path) -> str:
    """SHA-256 over the package's files (``derive/``, names and bytes, caches left out): outputs computed from
    one version of the package are never shown for another."""
    digest = hashlib.sha256()
    package = root / "derive"
    for path in sorted(package.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo"):
            digest.update(path.relative_to(package).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def notebook_cache(base: Path, digest: str, keep: int = 3) -> Path:
    """``base/<digest>``: the jupyter-cache of the executed notebooks for this version of the package (a cache
    never serves outputs of one version to another).  Of the other versions' caches the ``keep`` - 1 most
    recently used stay (a build of another checkout state may be running on them); older ones are removed."""
    base.mkdir(parents=True, exist_ok=True)
    folder = base / digest[:16]
    folder.mkdir(exist_ok=True)
    os.utime(folder)
    others = [p for p in base.iterdir() if p.is_dir() and p != folder and re.fullmatch(r"[0-9a-f]{16}", p.name)]
    others.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for old in others[max(keep - 1, 0):]:
        shutil.rmtree(old, ignore_errors=True)
    return folder


# -- the article's PDF -------------------------------------------------------------------------


@dataclass(frozen=True)
class Article:
    """Where the site's copy of the PDF is (None without one) and how it was made, or why there is none."""

    pdf: Path | None
    origin: str  # "derive build", "derive latex" (at this build), or "none"
    detail: str


def _tex_engine() -> str | None:
    return next((name for name in ("latexmk", "pdflatex") if shutil.which(name)), None)


def _copy(source: Path, target: Path) -> None:
    """Copy only when the bytes differ, so that an incremental build copies nothing."""
    target.parent.mkdir(parents=True, exist_ok=True)
    data = source.read_bytes()
    if not target.is_file() or target.read_bytes() != data:
        tmp = target.with_suffix(".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, target)


def article_pdf(root: Path, folder: Path, digest: str) -> Article:
    """The article's PDF for the site, in ``folder``.

    1. ``build/latex/ols_transformer.pdf``, where ``derive build`` wrote it (``.ci/run`` runs ``derive build``
       before the docs), is copied.
    2. Else, with a TeX engine on PATH, ``python -m derive latex --out folder/latex --pdf`` builds it from this
       checkout (once per version of the package: ``folder/latex/digest`` records the version it was built from).
    3. Else there is none, and the page says how to build it.
    A failing ``derive latex`` raises RuntimeError with its output's end (the docs build reports it).
    """
    target = folder / ARTICLE_PDF
    built = root / "build" / "latex" / ARTICLE_PDF
    if built.is_file():
        _copy(built, target)
        return Article(target, "derive build", str(built.relative_to(root)))
    engine = _tex_engine()
    if engine is None:
        if target.exists():
            target.unlink()
        return Article(None, "none", "no TeX engine (latexmk or pdflatex) on PATH")
    latex = folder / "latex"
    stamp = latex / "digest"
    pdf = latex / ARTICLE_PDF
    if not (pdf.is_file() and stamp.is_file() and stamp.read_text(encoding="utf-8").strip() == digest):
        latex.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
        run = subprocess.run([sys.executable, "-m", "derive", "latex", "--out", str(latex), "--pdf"], cwd=root,
                             env=env, capture_output=True, text=True, timeout=900)
        if run.returncode != 0 or not pdf.is_file():
            raise RuntimeError(f"`derive latex --pdf` failed (exit {run.returncode}): "
                               + (run.stdout + run.stderr)[-2000:])
        stamp.write_text(digest + "\n", encoding="utf-8")
    _copy(pdf, target)
    return Article(target, "derive latex", f"compiled by {engine} when the site was built")
