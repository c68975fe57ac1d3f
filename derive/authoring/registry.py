"""The theorem registry: ``@theorem`` functions, user libraries and entry points.

A theorem is a zero-argument function returning a :class:`~derive.kernel.Proof`, registered with
:func:`theorem`; registration order is presentation order.  The theorem's module carries what
the outputs need (glossary entries for the article, witness sampling hints, codegen routes), passed
to the decorator, so adding a theorem touches one file.  Built-in theorems live in
:mod:`derive.library`; a user's module or ``.py`` file is loaded with :func:`load_library` (the CLI's
``--library``), and installed packages register through the entry-point group
``ols_transformer.theorems``.  Nothing here is trusted: :func:`checked` hands the proof to the kernel.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import json
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

from sympy import Basic

from .. import _hooks
from ..kernel import Chain, Proof, ProofError, Theorem, check, proof_to_data
from .builder import StepsNeeded, _same_term, statement_only, trivial_claim

__all__ = ["ENTRY_POINT_GROUP", "LibraryError", "RecordStore", "Statement", "TheoremEntry", "build", "checked",
           "entries", "entry", "load_entry_points", "load_library", "record_store", "scoped_registrations", "searched",
           "stated", "statement", "theorem", "use_record_store"]

ENTRY_POINT_GROUP = "ols_transformer.theorems"


class LibraryError(ValueError):
    """A theorem library cannot be loaded or registers something invalid; the message says what."""


@dataclass(frozen=True)
class TheoremEntry:
    """A registered theorem: how to build its proof and what its outputs need.

    ``glossary`` maps a matrix symbol's name to how the article reads it; ``sampling`` holds hints
    for the witness's sampler (see :mod:`derive.witness`); ``routes`` are codegen routes whose
    printed code evaluates one of this theorem's checked lemmas (see :mod:`derive.codegen`).
    """

    id: str
    build: Callable[[], Proof]
    module: str
    glossary: Mapping[str, str] = field(default_factory=dict)
    sampling: Mapping[str, Any] = field(default_factory=dict)
    routes: tuple = ()
    meaning: str = ""


@dataclass(frozen=True)
class Statement:
    """What a registered theorem states, found without running a chain or a search (:func:`statement`).

    ``data`` is the JSON-ready statement: ``theorem``, ``title``, ``statement`` (words), ``hypotheses``,
    ``definitions``, ``families`` (when any), ``lemmas`` (the chains the theorem's function opens itself:
    name, claim and local hypotheses, no steps), ``claim`` and ``cites`` (the ids it cites); expressions are
    ``srepr`` strings.  ``sha256`` is the SHA-256 of its canonical JSON.  Lemmas that ``.auto`` proves on
    the way are not part of it: they are found by the search.  ``proof`` is the same statement as the source
    builds it (chains without steps): what a replay hands the kernel as the statement
    (:func:`derive.kernel.stated.check_stated`), whatever a record says.
    """

    id: str
    title: str
    data: Mapping[str, Any]
    sha256: str
    proof: Proof | None = field(default=None, compare=False, repr=False)


class RecordStore(Protocol):
    """Where checked proofs are recorded and replayed from (installed by :func:`use_record_store`).

    ``replay`` returns the recorded proof of ``item``, checked by the kernel, when the record exists, was
    made from the same source and states ``statement`` — else None; ``record`` keeps a proof found by search.
    """

    def replay(self, item: TheoremEntry, statement: Statement) -> Theorem | None: ...

    def record(self, item: TheoremEntry, statement: Statement, theorem: Theorem) -> None: ...


_REGISTRY: dict[str, TheoremEntry] = {}
_CHECKED: dict[str, Theorem] = {}
_STATEMENTS: dict[str, Statement] = {}
_SEARCHED: set[str] = set()  # ids whose cached theorem came from a search in this process
_UNSET = object()
_STORE: list = [_UNSET]  # the RecordStore, None for none, _UNSET until first needed (then _hooks makes it)
_LOCK = threading.RLock()  # guards _REGISTRY and _CHECKED: several threads may build theorems at once


class _InProgress(threading.local):
    """The theorems this thread is checking, innermost last: a cycle is a repeat within one thread's stack."""

    def __init__(self):
        self.ids: list[str] = []


_IN_PROGRESS = _InProgress()


def theorem(fn: Callable[[], Proof] | None = None, *, id: str | None = None,
            glossary: Mapping[str, str] | None = None, sampling: Mapping[str, Any] | None = None,
            routes: Sequence = (), meaning: str = ""):
    """Register a zero-argument function that returns a :class:`~derive.kernel.Proof`.

    Use as ``@theorem`` or ``@theorem(glossary={...}, routes=[...])``.  The theorem's id is ``id`` or
    the function's name, and the proof it builds must carry that id.  The function is returned
    unchanged.  Registration order is presentation order (the article, ``derive list``).

    Parameters
    ----------
    fn
        The function, when the decorator is used bare (``@theorem``).
    id
        The theorem's id, when it is not the function's name; a Python identifier.
    glossary
        How each matrix symbol reads in the article's notation table, by symbol name (LaTeX text):
        ``{"Q": "orthonormal factor of $X = QR$"}``.
    sampling
        Hints for the independent witness's sampler, only for what it cannot infer from the hypotheses:
        a symbol's value as a term in other symbols, its kind (``"orthogonal"``, ``"diagonal_positive"``,
        ...), or a dimension's value.
    meaning
        What the theorem means for transformers, a short paragraph of LaTeX text that the article prints
        after the proof (``""``: none).
    routes
        Code-generation declarations, :class:`derive.codegen.Route` or :class:`derive.codegen.Term`: a
        checked lemma or definition of this theorem that the generated modules print.

    Raises
    ------
    LibraryError
        The id is not an identifier, or another function already registered it.
    """

    def register(func: Callable[[], Proof]) -> Callable[[], Proof]:
        if not callable(func):
            raise LibraryError(f"@theorem expects a function, not {type(func).__name__}")
        theorem_id = id or func.__name__
        if not isinstance(meaning, str):
            raise LibraryError(f"theorem {theorem_id}: meaning must be a string of LaTeX text")
        if not isinstance(theorem_id, str) or not theorem_id.isidentifier():
            raise LibraryError(f"theorem id {theorem_id!r} must be a Python identifier")
        new = TheoremEntry(theorem_id, func, getattr(func, "__module__", "?"),
                           MappingProxyType(dict(glossary or {})), MappingProxyType(dict(sampling or {})),
                           tuple(routes), meaning.strip())
        with _LOCK:
            old = _REGISTRY.get(theorem_id)
            if old is not None and _qualname(old.build) != _qualname(func):
                raise LibraryError(f"theorem id {theorem_id!r} is registered twice ({_qualname(old.build)} and "
                                   f"{_qualname(func)})")
            if old is not None:
                _CHECKED.pop(theorem_id, None)  # the same module loaded again: its proof may have changed
                _STATEMENTS.pop(theorem_id, None)
                _SEARCHED.discard(theorem_id)
            _REGISTRY[theorem_id] = new
        return func

    return register(fn) if fn is not None else register


def _qualname(func: Callable) -> str:
    return f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', repr(func))}"


def _builtin() -> None:
    importlib.import_module("derive.library")  # registers the built-in theorems, in order


def entries() -> dict[str, TheoremEntry]:
    """Every registered theorem by id, built-in ones first, then user libraries in load order."""
    _builtin()
    with _LOCK:
        return dict(_REGISTRY)


def entry(theorem_id: str) -> TheoremEntry:
    """The registered theorem ``theorem_id``; ``KeyError`` if there is none."""
    _builtin()
    with _LOCK:
        return _REGISTRY[theorem_id]


def build(theorem_id: str) -> Proof:
    """The (unchecked) proof of a registered theorem."""
    item = entry(theorem_id)
    proof = item.build()
    if not isinstance(proof, Proof):
        raise ProofError(theorem_id, "statement", None, None,
                         f"{_qualname(item.build)} returned {type(proof).__name__}, not a Proof")
    if proof.theorem != theorem_id:
        raise ProofError(theorem_id, "statement", None, None,
                         f"{_qualname(item.build)} builds a proof of {proof.theorem!r}, not of {theorem_id!r}")
    claim = proof.claim
    if isinstance(claim, Chain) and isinstance(claim.lhs, Basic) and _same_term(claim.lhs, claim.rhs):
        raise ProofError(theorem_id, "statement", None, None, trivial_claim(claim.lhs, claim.rhs, claim.lhs))
    return proof


def statement(theorem_id: str) -> Statement:
    """What the registered theorem ``theorem_id`` states, without running any chain or search (cached).

    The theorem's function runs under :func:`derive.authoring.builder.statement_only`: chains are closed at
    the right-hand sides they name, citations are recorded, nothing is checked.  A chain that ends with
    ``.qed()`` and no right-hand side is known only from its steps: then the proof is built in full (its
    ``.auto`` calls search) and its statement taken from that.
    """
    with _LOCK:
        if theorem_id in _STATEMENTS:
            return _STATEMENTS[theorem_id]
    try:
        proof, cited = _built(theorem_id)
    except StepsNeeded:
        full = build(theorem_id)
        proof, cited = _without_steps(full), [t.id for t in full.cites]
    result = stated(proof, cited)
    with _LOCK:
        return _STATEMENTS.setdefault(theorem_id, result)


def stated(proof: Proof, cited: Sequence[str] = ()) -> Statement:
    """The :class:`Statement` of a proof as its source builds it (steps, if any, are dropped); ``cited``: the ids
    its builders cite."""
    data = proof_to_data(proof, steps=False)
    data["cites"] = list(cited)
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return Statement(proof.theorem, proof.title, MappingProxyType(data), hashlib.sha256(text.encode()).hexdigest(),
                     _without_steps(proof))


def _built(theorem_id: str) -> tuple[Proof, list[str]]:
    """The theorem's proof built in statement_only() mode, and the ids its builders cited."""
    with statement_only() as made:
        proof = build(theorem_id)
    return proof, list(dict.fromkeys(i for b in made if b.theorem == theorem_id for i in b.cited_ids))


def _without_steps(proof: Proof) -> Proof:
    """The statement skeleton of a built proof: the lemmas its function opened itself, no steps."""
    from dataclasses import replace

    from ..kernel import Induction

    def bare(chain):
        if isinstance(chain, Induction):
            return replace(chain, base=(), step=())
        return replace(chain, steps=())

    return replace(proof, lemmas=tuple(bare(c) for c in proof.lemmas), claim=bare(proof.claim), cites=())


def use_record_store(store: RecordStore | None) -> RecordStore | None:
    """Install the store that :func:`checked` replays recorded proofs from (None: always search); the old one."""
    with _LOCK:
        old, _STORE[0] = _STORE[0], store
        return old


def record_store() -> RecordStore | None:
    """The installed :class:`RecordStore`, or None (the package's default, :mod:`derive.records`, is made on first
    use)."""
    with _LOCK:
        if _STORE[0] is _UNSET:
            factory = _hooks.record_store_factory
            _STORE[0] = None
            store = factory() if factory is not None else None
            if _STORE[0] is None:
                _STORE[0] = store
        return _STORE[0]


def searched(theorem_id: str) -> bool:
    """Whether this process found the proof of ``theorem_id`` by running its function (a search), not a replay."""
    with _LOCK:
        return theorem_id in _SEARCHED


def checked(theorem_id: str, search: bool = False) -> Theorem:
    """The kernel-checked theorem ``theorem_id`` (checked once per process; citations are checked first).

    The proof is the recorded one when the installed :class:`RecordStore` has a record made from the same
    source that states the same (:func:`statement`) and the kernel accepts it: a replay, no search.  Else,
    or with ``search``, the theorem's function builds the proof (its ``.auto`` calls search), the kernel checks
    it, and the store records it.

    Raises :class:`~derive.kernel.ProofError` when the proof does not check or the citations form a cycle.
    """
    with _LOCK:
        if theorem_id in _CHECKED and (not search or theorem_id in _SEARCHED):
            return _CHECKED[theorem_id]
    stack = _IN_PROGRESS.ids
    if theorem_id in stack:
        cycle = " -> ".join([*stack[stack.index(theorem_id):], theorem_id])
        raise ProofError(theorem_id, "statement", None, None, f"theorems cite each other in a cycle: {cycle}")
    stack.append(theorem_id)
    try:
        store, result = record_store(), None
        if store is not None and not search:
            try:
                stated = statement(theorem_id)
            except Exception:  # the function fails even to state the theorem: the search below reports it
                stated = None
            result = None if stated is None else store.replay(entry(theorem_id), stated)
        if result is None:
            result = check(build(theorem_id))
            with _LOCK:
                _SEARCHED.add(theorem_id)
                _CHECKED.pop(theorem_id, None)
            if store is not None:
                store.record(entry(theorem_id), statement(theorem_id), result)
    finally:
        stack.pop()
    with _LOCK:
        return _CHECKED.setdefault(theorem_id, result)  # another thread may have checked it meanwhile


@contextlib.contextmanager
def scoped_registrations() -> Iterator[None]:
    """Theorems registered inside the block (``load_library``, entry points, ``@theorem``) are unregistered when it
    ends, with what this process remembered about them (checked theorems, statements, the modules that
    registered them), so that what runs next sees what a fresh process would: ``derive.cli.main`` called twice
    in one process behaves like two commands.  The built-in library is registered first and never taken away."""
    _builtin()
    with _LOCK:
        before = set(_REGISTRY)
    try:
        yield
    finally:
        with _LOCK:
            added = [i for i in _REGISTRY if i not in before]
            modules = {_REGISTRY[i].module for i in added}
            for theorem_id in added:
                del _REGISTRY[theorem_id]
                _CHECKED.pop(theorem_id, None)
                _STATEMENTS.pop(theorem_id, None)
                _SEARCHED.discard(theorem_id)
        for name in modules:  # imported again by the next load, which registers its theorems again
            sys.modules.pop(name, None)


def load_library(spec: str) -> list[str]:
    """Import a theorem library, a dotted module name or a path to a ``.py`` file; the ids it registered.

    Raises :class:`LibraryError` with a one-line reason when it cannot be loaded.
    """
    _builtin()
    before = set(_REGISTRY)
    path = Path(spec)
    if spec.endswith(".py") or path.exists():
        _load_file(path)
    else:
        if not all(part.isidentifier() for part in spec.split(".")):
            raise LibraryError(f"library {spec!r} is neither a .py file nor a dotted module name")
        try:
            importlib.import_module(spec)
        except ModuleNotFoundError as exc:
            if exc.name and spec.startswith(exc.name):
                raise LibraryError(f"library {spec!r}: no module named {exc.name!r}") from None
            raise LibraryError(f"library {spec!r}: {exc}") from None
        except LibraryError:
            raise
        except Exception as exc:  # the user's module raised while loading: name it, no traceback
            raise LibraryError(f"library {spec!r} raised {type(exc).__name__}: {exc}") from None
    added = [i for i in _REGISTRY if i not in before]
    return added or [e.id for e in _REGISTRY.values() if e.module == _module_name(path, spec)]


def _module_name(path: Path, spec: str) -> str:
    if spec.endswith(".py") or path.exists():
        digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
        return f"_derive_user_library_{path.stem}_{digest}"
    return spec


def _load_file(path: Path) -> None:
    if not path.is_file():
        raise LibraryError(f"library {path}: no such file")
    if path.suffix != ".py":
        raise LibraryError(f"library {path}: not a .py file")
    name = _module_name(path, str(path))
    if name in sys.modules:
        return
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise LibraryError(f"library {path}: cannot be imported")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except LibraryError:
        sys.modules.pop(name, None)
        raise
    except SyntaxError as exc:
        sys.modules.pop(name, None)
        raise LibraryError(f"library {path}: syntax error at line {exc.lineno}: {exc.msg}") from None
    except Exception as exc:
        sys.modules.pop(name, None)
        raise LibraryError(f"library {path} raised {type(exc).__name__}: {exc}") from None


def load_entry_points() -> list[str]:
    """Load every installed package's theorems (entry-point group ``ols_transformer.theorems``)."""
    from importlib.metadata import entry_points

    _builtin()
    before = set(_REGISTRY)
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name):
        try:
            point.load()
        except Exception as exc:
            raise LibraryError(f"entry point {point.name} ({point.value}) raised {type(exc).__name__}: {exc}") \
                from None
    return [i for i in _REGISTRY if i not in before]
