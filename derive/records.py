"""Recorded proofs: search while authoring, replay when using.

``.auto`` searches for chains; once a theorem's proof is found, its certificate is the record, and later runs
*replay* it: the recorded proof is read back (through the certificate parser, never ``eval``) and the kernel
checks it as always.  A theorem is searched again only when there is no record, when the source file that
defines it changed, when its statement (:func:`derive.authoring.registry.statement`) is no longer the
recorded one, or when the kernel rejects the recorded proof; ``derive prove --search`` forces a search.

Where the record lives:

* the built-in library: ``proofs/certificates/`` of the checkout (``<id>.json``, the certificates the tests
  pin byte for byte, and ``SOURCES``: one line per theorem, its id, the SHA-256 of the file that defines it
  and that file's name); an installed package ships a copy in ``derive/data/records/`` (read only);
* a user's library (``--library FILE``): a folder beside the module, ``<stem>.proofs/``, or the folder given
  by ``--record DIR``, laid out the same way.

Records are written atomically (a temporary file, then a rename).  ``DERIVE_RECORDS=read`` replays without
ever writing, ``DERIVE_RECORDS=off`` searches every time (the store is then not installed).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from pathlib import Path

from .authoring import registry
from .authoring.registry import Statement, TheoremEntry
from .certificates.format import CertificateError, certificate_text, proof_from_data, read_certificate, statement_of
from .files import write_atomic
from .kernel import ProofError, Theorem, check_stated

__all__ = ["LIBRARY_RECORD", "PACKAGED_RECORD", "SOURCES", "STATEMENT_DATA", "FolderStore", "attach", "builtin_record",
           "install", "library_statements", "regenerate", "replay_proof", "source_digest",
           "sources_text", "statement_data_text", "store"]

PACKAGE = Path(__file__).resolve().parent
#: The built-in library's record, in a checkout (absent from an installed package: see PACKAGED_RECORD).
LIBRARY_RECORD = PACKAGE.parent / "proofs" / "certificates"
#: The same record as an installed package ships it (copied from the checkout's by setup.py's build_py);
#: replayed, never written (an installed package's files are not the user's to change).
PACKAGED_RECORD = PACKAGE / "data" / "records"
#: The statements of the built-in theorems, shipped in the package for ``derive check``.
STATEMENT_DATA = PACKAGE / "data" / "statements.json"
SOURCES = "SOURCES"
_BUILTIN = "derive.library"


def source_digest(item: TheoremEntry) -> tuple[str, str] | None:
    """SHA-256 of the file that defines the theorem, and its name (None when it has no file)."""
    module = sys.modules.get(item.module)
    name = getattr(module, "__file__", None)
    if not name:
        return None
    try:
        return hashlib.sha256(Path(name).read_bytes()).hexdigest(), Path(name).name
    except OSError:
        return None


class FolderStore:
    """Records in folders: the built-in library's, and one per attached user module (see the module doc)."""

    def __init__(self, builtin: Path | None = None, write: bool = True, builtin_write: bool = True):
        self.builtin = builtin
        self.write = write
        self.builtin_write = builtin_write  # False for the record an installed package ships
        self.folders: dict[str, Path] = {}  # user module name -> its record folder
        self.replayed: set[str] = set()
        self.problems: list[str] = []  # records that could not be written, one line each
        self._lock = threading.Lock()

    def folder(self, item: TheoremEntry) -> Path | None:
        if item.module == _BUILTIN or item.module.startswith(_BUILTIN + "."):
            return self.builtin
        return self.folders.get(item.module)

    def _sources(self, folder: Path) -> dict[str, str]:
        return {theorem_id: line.split()[1] for theorem_id, line in self._source_lines(folder).items()}

    def replay(self, item: TheoremEntry, statement: Statement) -> Theorem | None:
        folder = self.folder(item)
        source = source_digest(item)
        if folder is None or source is None or self._sources(folder).get(item.id) != source[0]:
            return None
        try:
            data = read_certificate(folder / f"{item.id}.json")
        except CertificateError:
            return None
        theorem = replay_proof(statement, data)
        if theorem is None:
            return None
        with self._lock:
            self.replayed.add(item.id)
        try:  # a record whose words differ from the source's (its steps fit): brought up to date
            stale = (folder / f"{item.id}.json").read_text(encoding="utf-8") != certificate_text(theorem)
        except (OSError, UnicodeDecodeError):
            stale = False
        if stale:
            self.record(item, statement, theorem)
        return theorem

    def record(self, item: TheoremEntry, statement: Statement, theorem: Theorem) -> None:
        folder = self.folder(item)
        source = source_digest(item)
        if not self.write or folder is None or source is None or (folder == self.builtin and not self.builtin_write):
            return
        with self._lock:
            try:
                folder.mkdir(parents=True, exist_ok=True)
                write_atomic(folder / f"{item.id}.json", certificate_text(theorem))
                lines = self._source_lines(folder)
                lines[item.id] = f"{item.id} {source[0]} {source[1]}"
                write_atomic(folder / SOURCES, "".join(f"{lines[k]}\n" for k in sorted(lines)))
            except OSError as exc:
                self.problems.append(f"could not record {item.id} in {folder}: {exc.strerror or exc}")

    def _source_lines(self, folder: Path) -> dict[str, str]:
        try:
            lines = (folder / SOURCES).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return {}
        return {line.split()[0]: line for line in lines if len(line.split()) >= 2}


def replay_proof(statement: Statement, data, known: dict[str, Theorem] | None = None) -> Theorem | None:
    """The theorem ``statement`` states, proved by the steps of the record ``data`` (certificate JSON), or None when
    the record cannot be read or its steps do not prove that statement.  The record supplies steps only: the
    kernel checks ``statement``'s own statement (:func:`derive.kernel.check_stated`), whatever the record states.
    ``known``: the checked theorems the record may cite, by id (default: the registered theorems it names)."""
    if statement.proof is None or not isinstance(data, dict) or data.get("theorem") != statement.id:
        return None
    try:
        if known is None:
            cites = [c.get("theorem") for c in data.get("cites", []) if isinstance(c, dict)]
            known = {c: registry.checked(c) for c in cites if isinstance(c, str) and c in registry.entries()}
        proof = proof_from_data(data, known)
    except (CertificateError, ProofError):
        return None
    try:
        return check_stated(statement.proof, proof)
    except ProofError:
        return None


def install() -> FolderStore | None:
    """Install the default store in the registry (the registry asks for it on first use, through
    :mod:`derive._hooks`); ``DERIVE_RECORDS`` may switch it off.  The store, or None."""
    mode = os.environ.get("DERIVE_RECORDS", "write")
    if mode == "off":
        registry.use_record_store(None)
        return None
    builtin = builtin_record()
    made = FolderStore(builtin, write=mode != "read", builtin_write=builtin == LIBRARY_RECORD)
    registry.use_record_store(made)
    return made


def builtin_record() -> Path | None:
    """Where the built-in library's record is read: the checkout's ``proofs/certificates``, else the copy an
    installed package ships (``derive/data/records``), else None (every built-in theorem is searched)."""
    for folder in (LIBRARY_RECORD, PACKAGED_RECORD):
        if (folder / SOURCES).is_file():
            return folder
    return None


def store() -> FolderStore | None:
    """The installed store (None when records are off)."""
    current = registry.record_store()
    return current if isinstance(current, FolderStore) else None


def attach(theorem_ids, folder: str | Path | None = None) -> list[Path]:
    """Record and replay the theorems of the modules that registered ``theorem_ids`` (a user's library):
    in ``folder``, or beside each module in ``<stem>.proofs/``; the folders used."""
    current = store()
    if current is None:
        return []
    used = []
    for theorem_id in theorem_ids:
        item = registry.entry(theorem_id)
        if current.folder(item) is not None and item.module not in current.folders:
            continue  # a built-in theorem
        module = sys.modules.get(item.module)
        name = getattr(module, "__file__", None)
        if folder is not None:
            target = Path(folder)
        elif name:
            target = Path(name).resolve().parent / f"{Path(name).stem}.proofs"
        else:
            continue
        current.folders[item.module] = target
        used.append(target)
    return list(dict.fromkeys(used))


def library_statements() -> dict[str, dict]:
    """The statement of every built-in theorem as ``derive check`` compares it (checked, replayed if recorded)."""
    from .library import THEOREM_IDS

    return {theorem_id: statement_of(registry.checked(theorem_id).proof) for theorem_id in THEOREM_IDS}


def statement_data_text() -> str:
    """The text of ``derive/data/statements.json``: the built-in statements, in presentation order."""
    return json.dumps(library_statements(), indent=1, ensure_ascii=False) + "\n"


def sources_text() -> str:
    """The text of the built-in record's ``SOURCES`` for the library as it is now."""
    from .library import THEOREM_IDS

    lines = []
    for theorem_id in THEOREM_IDS:
        digest, name = source_digest(registry.entry(theorem_id))
        lines.append(f"{theorem_id} {digest} {name}")
    return "".join(f"{line}\n" for line in sorted(lines))


def regenerate() -> str:
    """Write the shipped statement data and the built-in record's ``SOURCES``; what was written, in one line.

    ``python -c "import derive.records as r; print(r.regenerate())"`` after changing a built-in theorem (the
    tests pin both files).
    """
    write_atomic(STATEMENT_DATA, statement_data_text())
    if LIBRARY_RECORD.is_dir():
        write_atomic(LIBRARY_RECORD / SOURCES, sources_text())
    return f"wrote {STATEMENT_DATA}" + (f" and {LIBRARY_RECORD / SOURCES}" if LIBRARY_RECORD.is_dir() else "")
