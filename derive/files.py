"""Writing outputs: atomically (a temporary file, then a rename) and with the user's umask."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["pyproject_urls", "write_atomic"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: str | os.PathLike, text: str | bytes) -> None:
    """Write ``text`` to ``path`` via a temporary file and a rename: never a half-written file.

    The file gets the permissions a plain ``open(path, "w")`` would give (``0666`` less the umask;
    ``mkstemp`` alone would leave it ``0600``).
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        if isinstance(text, bytes):
            with os.fdopen(fd, "wb") as handle:
                handle.write(text)
        else:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
                handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def pyproject_urls(pyproject: str | os.PathLike) -> dict[str, str]:
    """``[project.urls]`` of the ``pyproject.toml`` at ``pyproject``, the keys in lower case; {} where the file
    cannot be read or has none (the estimator's documentation link, the docs site's repository link)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10: tomli where installed (Sphinx depends on it there)
        try:
            import tomli as tomllib
        except ImportError:
            return {}
    try:
        data = tomllib.loads(Path(pyproject).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    urls = data.get("project", {}).get("urls", {})
    if not isinstance(urls, dict):
        return {}
    return {str(k).strip().lower(): str(v).strip() for k, v in urls.items() if isinstance(v, str)}
