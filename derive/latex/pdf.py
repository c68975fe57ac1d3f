"""Compile the generated article with a real TeX engine, when one is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["TexError", "tex_engine", "compile_pdf"]


class TexError(RuntimeError):
    """The TeX engine reported errors; the message carries the first lines of them."""


def tex_engine() -> str | None:
    """``latexmk`` if present, else ``pdflatex``, else None."""
    for name in ("latexmk", "pdflatex"):
        if shutil.which(name):
            return name
    return None


def compile_pdf(tex: Path, timeout: float = 300) -> Path:
    """Build ``tex`` into a PDF beside it; raise TexError with the log's errors if it fails.

    SOURCE_DATE_EPOCH is fixed so the same input gives the same PDF.
    """
    engine = tex_engine()
    if engine is None:
        raise FileNotFoundError("no TeX engine (latexmk or pdflatex) on this machine")
    tex = Path(tex).resolve()
    env = {**os.environ, "SOURCE_DATE_EPOCH": "0", "FORCE_SOURCE_DATE": "1"}
    flags = ["-interaction=nonstopmode", "-halt-on-error"]
    if engine == "latexmk":
        commands = [["latexmk", "-pdf", "-quiet", *flags, tex.name]]
    else:
        commands = [["pdflatex", *flags, tex.name]] * 2  # twice, for references
    for command in commands:
        result = subprocess.run(command, cwd=tex.parent, env=env, capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            log = tex.with_suffix(".log")
            text = log.read_text(errors="replace") if log.exists() else result.stdout
            errors = [line for line in text.splitlines() if line.startswith("!")][:5]
            raise TexError(f"{engine} failed on {tex.name}: " + ("; ".join(errors) or "see the log"))
    return tex.with_suffix(".pdf")
