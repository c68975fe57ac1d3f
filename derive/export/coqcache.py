"""Compiled Coq files cached by content, so the same development is compiled once per machine.

``derive build``, ``derive export coq`` and the tests compile the same generated files again and again (the
prelude alone loads MathComp for seconds each time).  A file's **key** is the SHA-256 of everything its
compiled form depends on: the coqc version and installation (``coqc --version``, ``coqc -where`` and the
bytes of Coq's ``Init/Prelude.vo`` and MathComp's ``all_algebra.vo``, which carry the digests of what they
load), the flags, the file's name and text, and the keys of the files it imports.  A file coqc accepted is
stored as ``<key>.vo`` with coqc's output (``<key>.out``, where ``Print Assumptions`` says what the proof rests
on); the same key later gives back the same ``.vo`` and output without running coqc.  Files coqc rejects are
never stored: they are compiled every time.

The cache is an optimisation only: any error reading or writing it falls back to compiling.  It lives in
``$DERIVE_COQ_CACHE`` (``off`` switches it off), else ``$XDG_CACHE_HOME/derive/coq``, else
``~/.cache/derive/coq``.  Entries are written once (a temporary file, then a hard link that fails if the entry
exists), so processes that compile the same file at once all use the first entry written: a ``.vo`` compiled
against one prelude is never loaded beside another.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["CoqCache", "cache_folder"]

#: Files whose bytes identify the Coq and MathComp installation (relative to ``coqc -where``).
_FINGERPRINT = ("theories/Init/Prelude.vo", "user-contrib/mathcomp/algebra/all_algebra.vo")


def cache_folder() -> Path | None:
    """Where compiled files are cached (see the module doc), or None when ``DERIVE_COQ_CACHE=off``."""
    value = os.environ.get("DERIVE_COQ_CACHE", "")
    if value == "off":
        return None
    if value:
        return Path(value)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "derive" / "coq"


@functools.lru_cache(maxsize=8)
def _installation(coqc: str) -> str | None:
    """A fingerprint of the Coq installation ``coqc`` runs (None when it cannot be read: no caching)."""
    try:
        version = subprocess.run([coqc, "--version"], capture_output=True, text=True, timeout=60).stdout
        where = subprocess.run([coqc, "-where"], capture_output=True, text=True, timeout=60).stdout.strip()
        digest = hashlib.sha256(f"{coqc}\n{version}\n{where}\n".encode())
        for name in _FINGERPRINT:
            path = Path(where) / name
            digest.update(name.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"absent") + b"\0")
    except (OSError, subprocess.SubprocessError):
        return None
    return digest.hexdigest()


class CoqCache:
    """The cache for one coqc and set of flags (:meth:`open`); keys by :meth:`key`."""

    def __init__(self, folder: Path, installation: str, flags: list[str]):
        self.folder = folder
        self.base = hashlib.sha256(installation.encode() + b"\0" + "\0".join(flags).encode()).hexdigest()

    @classmethod
    def open(cls, coqc: str, flags: list[str]) -> CoqCache | None:
        """The cache for ``coqc`` with ``flags``, or None (switched off, or the installation unreadable)."""
        folder = cache_folder()
        installation = _installation(coqc) if folder is not None else None
        return None if folder is None or installation is None else cls(folder, installation, flags)

    def key(self, name: str, text: str, imports: list[str]) -> str:
        """The key of file ``name`` with ``text`` importing the files whose keys are ``imports`` (in order)."""
        blob = "\0".join([self.base, name, text, *imports])
        return hashlib.sha256(blob.encode()).hexdigest()

    def fetch(self, key: str, vo: Path) -> str | None:
        """Copy the cached ``.vo`` of ``key`` to ``vo`` and return coqc's output then; None when not cached."""
        try:
            output = (self.folder / f"{key}.out").read_text(encoding="utf-8")
            shutil.copyfile(self.folder / f"{key}.vo", vo)
        except (OSError, UnicodeDecodeError):
            return None
        return output

    def store(self, key: str, vo: Path, output: str) -> None:
        """Keep ``vo`` (just compiled, with coqc's ``output``) under ``key``; when another process stored the key
        first, ``vo`` is replaced by that entry, so what imports it next is compiled against the stored one."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            _write_once(self.folder / f"{key}.out", output.encode())
            _write_once(self.folder / f"{key}.vo", vo.read_bytes())
            stored = self.folder / f"{key}.vo"
            if stored.read_bytes() != vo.read_bytes():
                shutil.copyfile(stored, vo)
        except OSError:
            return


def _write_once(path: Path, data: bytes) -> None:
    """Write ``path`` unless it exists: a complete temporary file, then a hard link (atomic, never overwrites)."""
    if path.exists():
        return
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass
    finally:
        os.unlink(temporary)
