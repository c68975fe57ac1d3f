"""Certificates: a checked theorem written as JSON, and re-checked from scratch when read.

The format is documented in ``docs/certificates.md``.  Reading never evaluates text: every
expression goes through :func:`derive.certificates.parse_srepr`.  A certificate stands on its
own: it carries the theorems it cites (``dependencies``, each a certificate of its own, in
dependency order), and each is re-checked by the kernel before what cites it.  A certificate whose
id names a library theorem is accepted only if its statement is the library's, so a proof of an
altered claim fails.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ..files import write_atomic
from ..kernel import (
    Chain,
    CheckInterrupted,
    Definition,
    Family,
    Hypothesis,
    Induction,
    Proof,
    ProofError,
    Step,
    Theorem,
    check,
    check_stated,
    is_issued,
    proof_to_data,
)
from ..kernel.validation import IDENTIFIER, ValidationError, rule_name
from .srepr_parser import OutOfTime, ParseError, parse_srepr

__all__ = ["FORMAT", "CertificateError", "CertificateInterrupted", "CertificateUnreadable", "certificate_text",
           "read_certificate", "same_statement", "verify_certificate", "write_atomic", "statement_of"]

FORMAT = "ols-transformer-certificate/2"
READABLE = (FORMAT, "ols-transformer-certificate/1")  # /1 had no citations
MAX_BYTES = 20_000_000


class CertificateError(ValueError):
    """A certificate cannot be read or does not check; the message says what is wrong."""


class CertificateInterrupted(CertificateError):
    """The outer time guard fired: the certificate was *not checked* (no verdict on it either way)."""


def _certificate_data(theorem: Theorem) -> dict:
    return {"format": FORMAT, **proof_to_data(theorem.proof), "sha256": theorem.digest}


def dependencies(theorem: Theorem) -> list[Theorem]:
    """The theorems ``theorem`` cites, directly or not, each once, every one after those it cites."""
    out: dict[str, Theorem] = {}

    def visit(t: Theorem) -> None:
        for cited in t.proof.cites:
            if cited.id not in out:
                visit(cited)
                out[cited.id] = cited

    visit(theorem)
    return list(out.values())


def certificate_text(theorem: Theorem) -> str:
    """The certificate of a checked theorem, with the theorems it cites: deterministic JSON, one final newline.

    Raises CertificateError for anything but a theorem the kernel made, unchanged since.
    """
    deps = dependencies(theorem) if type(theorem) is Theorem else []
    for item in (theorem, *deps):
        if not is_issued(item):
            raise CertificateError("a certificate is written for theorems checked by derive.kernel.check only "
                                   "(this object was not, or was changed since)")
    data = _certificate_data(theorem)
    if deps:
        data["dependencies"] = [_certificate_data(t) for t in deps]
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


# --- reading ------------------------------------------------------------------------


def _field(obj: dict, key: str, kind: type, where: str):
    if not isinstance(obj, dict):
        raise CertificateError(f"{where} must be a JSON object")
    if key not in obj:
        raise CertificateError(f"{where} has no {key!r}")
    value = obj[key]
    if not isinstance(value, kind):
        raise CertificateError(f"{where}.{key} must be a {kind.__name__}")
    return value


class _Deadline:
    """The outer time guard of one verification: reading, parsing and checking alike.  It decides no verdict
    (the kernel's work budget does): past it, the certificate is not checked."""

    def __init__(self, limit: float | None, started: float | None = None):
        self.limit = limit
        self.at = None if limit is None else (time.process_time() if started is None else started) + limit

    def left(self) -> float | None:
        return None if self.at is None else max(self.at - time.process_time(), 0.0)

    def passed(self) -> CertificateInterrupted:
        return CertificateInterrupted(f"interrupted: not checked within the time limit of {self.limit:g} s")


_NO_DEADLINE = _Deadline(None)


def _expr(text, where: str, deadline: _Deadline = _NO_DEADLINE):
    try:
        return parse_srepr(text, deadline.at)
    except OutOfTime:
        raise deadline.passed() from None
    except ParseError as exc:
        raise CertificateError(f"{where}: {exc}") from None


def _hypothesis(obj, where: str, deadline: _Deadline = _NO_DEADLINE) -> Hypothesis:
    forall = obj.get("forall", []) if isinstance(obj, dict) else []
    if not isinstance(forall, list):
        raise CertificateError(f"{where}.forall must be a list")
    return Hypothesis(
        _field(obj, "name", str, where),
        _expr(_field(obj, "lhs", str, where), f"{where}.lhs", deadline),
        _expr(_field(obj, "rhs", str, where), f"{where}.rhs", deadline),
        tuple(_expr(v, f"{where}.forall[{i}]", deadline) for i, v in enumerate(forall)),
    )


def _steps(items, where: str, deadline: _Deadline = _NO_DEADLINE) -> tuple[Step, ...]:
    steps = []
    for i, item in enumerate(items):
        at = f"{where}[{i}]"
        instance = item.get("instance", []) if isinstance(item, dict) else []
        if not isinstance(instance, list) or not all(isinstance(p, list) and len(p) == 2 for p in instance):
            raise CertificateError(f"{at}.instance must be a list of [variable, term] pairs")
        steps.append(Step(
            _expr(_field(item, "expr", str, at), f"{at}.expr", deadline),
            _field(item, "rule", str, at),
            tuple((_expr(v, f"{at}.instance", deadline), _expr(t, f"{at}.instance", deadline)) for v, t in instance),
        ))
    return tuple(steps)


def _lemma(obj, where: str, deadline: _Deadline = _NO_DEADLINE) -> Chain | Induction:
    """A lemma: a chain, or an induction (``induction``: its variable; ``base`` and ``step``: its chains)."""
    if isinstance(obj, dict) and "induction" in obj:
        claim = _field(obj, "claim", dict, where)
        return Induction(
            _field(obj, "name", str, where),
            _expr(_field(obj, "induction", str, where), f"{where}.induction", deadline),
            _expr(_field(claim, "lhs", str, f"{where}.claim"), f"{where}.claim.lhs", deadline),
            _expr(_field(claim, "rhs", str, f"{where}.claim"), f"{where}.claim.rhs", deadline),
            _steps(_field(obj, "base", list, where), f"{where}.base", deadline),
            _steps(_field(obj, "step", list, where), f"{where}.step", deadline),
        )
    return _chain(obj, where, deadline=deadline)


def _family(obj, where: str, deadline: _Deadline = _NO_DEADLINE) -> Family:
    base = obj.get("base") if isinstance(obj, dict) else None
    parts = [_expr(_field(obj, key, str, where), f"{where}.{key}", deadline) for key in ("index", "rows", "cols")]
    recurrence = (None, None)
    if base is not None:
        recurrence = tuple(_expr(_field(obj, key, str, where), f"{where}.{key}", deadline) for key in ("base", "step"))
    return Family(_field(obj, "name", str, where), *parts, *recurrence)


def _chain(obj, where: str, main: bool = False, deadline: _Deadline = _NO_DEADLINE) -> Chain:
    """A lemma (with its name and local hypotheses) or, with ``main``, the top-level claim."""
    claim = _field(obj, "claim", dict, where)
    hyps = [] if main else obj.get("hypotheses", [])
    if not isinstance(hyps, list):
        raise CertificateError(f"{where}.hypotheses must be a list")
    return Chain(
        "main" if main else _field(obj, "name", str, where),
        _expr(_field(claim, "lhs", str, f"{where}.claim"), f"{where}.claim.lhs", deadline),
        _expr(_field(claim, "rhs", str, f"{where}.claim"), f"{where}.claim.rhs", deadline),
        _steps(_field(obj, "steps", list, where), f"{where}.steps", deadline),
        tuple(_hypothesis(h, f"{where}.hypotheses[{i}]", deadline) for i, h in enumerate(hyps)),
    )


def _citations(data: dict, known: dict[str, Theorem]) -> tuple[Theorem, ...]:
    """The checked theorems the certificate's ``cites`` names, matched by id and sha256."""
    cites = data.get("cites", [])
    if not isinstance(cites, list):
        raise CertificateError("cites must be a list")
    out = []
    for i, item in enumerate(cites):
        theorem_id = _field(item, "theorem", str, f"cites[{i}]")
        digest = _field(item, "sha256", str, f"cites[{i}]")
        theorem = known.get(theorem_id)
        if theorem is None:
            raise CertificateError(f"cites theorem {theorem_id!r}, which is not checked before it "
                                   "(not among the certificate's dependencies, nor a library theorem)")
        if theorem.digest != digest:
            raise CertificateError(f"cites theorem {theorem_id!r} with sha256 {digest[:12]}…, but the checked "
                                   f"{theorem_id} has sha256 {theorem.digest[:12]}…")
        out.append(theorem)
    return tuple(out)


def proof_from_data(data: dict, known: dict[str, Theorem] | None = None,
                    deadline: _Deadline = _NO_DEADLINE) -> Proof:
    """Rebuild a :class:`Proof` from certificate JSON, parsing every expression safely.

    ``known`` maps ids to checked theorems the proof may cite (matched by sha256); ``deadline`` bounds the
    parsing.  Ids, names and rule names must be identifiers (refused here, before anything is built).
    """
    if not isinstance(data, dict):
        raise CertificateError("a certificate must be a JSON object")
    if data.get("format") not in READABLE:
        raise CertificateError(f"unknown certificate format {data.get('format')!r} (expected {FORMAT!r})")
    definitions = []
    for i, d in enumerate(_field(data, "definitions", list, "certificate")):
        where = f"definitions[{i}]"
        definitions.append(Definition(_field(d, "name", str, where),
                                      _expr(_field(d, "lhs", str, where), f"{where}.lhs", deadline),
                                      _expr(_field(d, "rhs", str, where), f"{where}.rhs", deadline)))
    _names_are_identifiers(data)
    return Proof(
        _field(data, "theorem", str, "certificate"),
        _field(data, "title", str, "certificate"),
        _field(data, "statement", str, "certificate"),
        tuple(_hypothesis(h, f"hypotheses[{i}]", deadline)
              for i, h in enumerate(_field(data, "hypotheses", list, "certificate"))),
        tuple(definitions),
        tuple(_lemma(c, f"lemmas[{i}]", deadline)
              for i, c in enumerate(_field(data, "lemmas", list, "certificate"))),
        _chain(data, "certificate", main=True, deadline=deadline),
        _citations(data, known or {}),
        tuple(_family(f, f"families[{i}]", deadline) for i, f in enumerate(_families(data))),
    )


def _families(data: dict) -> list:
    families = data.get("families", [])
    if not isinstance(families, list):
        raise CertificateError("families must be a list")
    return families


def _names_are_identifiers(data: dict) -> None:
    """The theorem id, every name and every rule name is an identifier: text a certificate prints can then
    neither add a line to the output nor repaint it.  (Fields of the wrong type are reported by the reader.)"""

    def name(value, where: str) -> None:
        if isinstance(value, str) and not IDENTIFIER.match(value):
            raise CertificateError(f"{where} {ascii(value[:60])} is not an identifier (ASCII letters, digits and _)")

    def items(value) -> list:
        return [(i, item) for i, item in enumerate(value) if isinstance(item, dict)] if isinstance(value, list) else []

    name(data.get("theorem"), "the theorem id")
    for key in ("hypotheses", "definitions", "lemmas", "families"):
        for i, item in items(data.get(key)):
            name(item.get("name"), f"{key}[{i}].name")
            for j, h in items(item.get("hypotheses")):
                name(h.get("name"), f"{key}[{i}].hypotheses[{j}].name")
    chains = [("steps", data.get("steps"))] + [(f"lemmas[{i}].{part}", c.get(part))
                                               for i, c in items(data.get("lemmas"))
                                               for part in ("steps", "base", "step")]
    for where, steps in chains:
        for j, item in items(steps):
            if isinstance(item.get("rule"), str):
                try:
                    rule_name(item["rule"])
                except ValidationError as exc:
                    raise CertificateError(f"{where}[{j}].rule: {exc}") from None
    for i, item in items(data.get("cites")):
        name(item.get("theorem"), f"cites[{i}].theorem")


class CertificateUnreadable(CertificateError):
    """The file itself cannot be read as a certificate (missing, a directory, no permission, not UTF-8 text, not
    JSON): a usage or I/O problem (``derive check``: exit 2, "cannot read"), not a certificate that fails to check
    (a JSON value that is not a valid certificate is rejected: exit 1)."""


def _read_bounded(path: Path) -> bytes:
    """At most ``MAX_BYTES`` + 1 bytes of any file: regular, device (``/dev/zero``) or pipe alike."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)  # a FIFO with no writer must not block the open
    fd = os.open(path, flags)
    try:
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        chunks, size = [], 0
        while size <= MAX_BYTES:
            chunk = os.read(fd, min(1 << 20, MAX_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _no_big_integers(text: str) -> int:
    if len(text.lstrip("-")) > 20:
        raise CertificateError(f"a JSON number of {len(text)} digits (certificates hold their numbers in strings)")
    return int(text)


def read_certificate(path) -> dict:
    """Load certificate JSON, reading at most ``MAX_BYTES`` of any file; errors name the file and the problem."""
    path = Path(path)
    try:
        if path.is_dir():
            raise CertificateUnreadable(f"{path}: is a directory")
        data = _read_bounded(path)
    except FileNotFoundError:
        raise CertificateUnreadable(f"{path}: no such file") from None
    except IsADirectoryError:
        raise CertificateUnreadable(f"{path}: is a directory") from None
    except PermissionError:
        raise CertificateUnreadable(f"{path}: permission denied") from None
    except OSError as exc:
        raise CertificateUnreadable(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if len(data) > MAX_BYTES:
        raise CertificateError(f"{path}: larger than {MAX_BYTES} bytes")
    try:
        return json.loads(data.decode("utf-8"), parse_int=_no_big_integers)
    except UnicodeDecodeError:
        raise CertificateUnreadable(f"{path}: not UTF-8 text, so not a certificate") from None
    except json.JSONDecodeError as exc:
        raise CertificateUnreadable(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}), so not a "
                                    "certificate") from None
    except RecursionError:
        raise CertificateError(f"{path}: JSON nested too deeply") from None
    except CertificateError as exc:
        raise CertificateError(f"{path}: {exc}") from None
    except ValueError as exc:
        raise CertificateError(f"{path}: not valid JSON ({exc})") from None


def statement_of(proof: Proof) -> dict:
    """What a theorem says (everything but the proof steps and citations), for comparing with the library.  The
    steps are never printed (a certificate of megabytes of steps was printed whole to compare its statement)."""
    return proof_to_data(proof, steps=False)


def same_statement(proof: Proof, expected: dict) -> bool:
    """``statement_of(proof) == expected``, in time bounded by the size of ``expected`` (a statement the caller
    trusts: the library's, a reference's): every node of a term prints as one character at least, so a statement
    with more nodes than ``expected`` has characters differs from it, and is not printed to find that out."""
    room = len(json.dumps(expected))
    for term in _statement_terms(proof):
        room -= _nodes(term, room + 1)
        if room < 0:
            return False
    return statement_of(proof) == expected


def _statement_terms(proof: Proof) -> list:
    """The terms :func:`statement_of` prints."""
    out = []
    hypotheses = [*proof.hypotheses, *(h for c in proof.lemmas for h in c.hypotheses)]
    for h in hypotheses:
        out += [h.lhs, h.rhs, *h.forall]
    for d in proof.definitions:
        out += [d.symbol, d.rhs]
    for c in (*proof.lemmas, proof.claim):
        out += [c.lhs, c.rhs] + ([c.variable] if isinstance(c, Induction) else [])
    for f in proof.families:
        out += [f.index, f.rows, f.cols] + ([f.base, f.step] if f.base is not None else [])
    return out


def _nodes(term, cap: int) -> int:
    """The nodes of ``term``, counted up to ``cap``."""
    count, stack = 0, [term]
    while stack and count < cap:
        node = stack.pop()
        count += 1
        stack += getattr(node, "args", ())
    return count


def _library_statement(expected, where: str, deadline: _Deadline) -> Proof:
    """The library's statement of a theorem as a proof without steps: parsed from its data (``statement_of``'s
    form, as ``derive/data/statements.json`` ships it), or built by the library's builder."""
    if not isinstance(expected, dict):
        return expected()
    data = {**expected, "format": FORMAT, "steps": [], "cites": [],
            "lemmas": [{**c, **({"base": [], "step": []} if "induction" in c else {"steps": []})}
                       for c in expected.get("lemmas", []) if isinstance(c, dict)]}
    try:
        return proof_from_data(data, {}, deadline)
    except CertificateError as exc:
        raise CertificateError(f"{where}the library's statement cannot be read: {exc}") from None


def _check_one(data: dict, known: dict[str, Theorem], library, where: str, deadline: _Deadline,
               work_limit: int | None = None, whose: dict[str, str] | None = None) -> Theorem:
    if deadline.left() == 0.0:
        raise deadline.passed()
    proof = proof_from_data(data, known, deadline)
    stated = None
    if library is not None and proof.theorem in library:  # the cheap comparison first, for a message that says why
        expected = library[proof.theorem]  # a statement (a dict, as statement_of gives) or a builder of the proof
        if not same_statement(proof, expected if isinstance(expected, dict) else statement_of(expected())):
            source = (whose or {}).get(proof.theorem, "the library")
            raise CertificateError(f"{where}the statement differs from {source}'s statement of {proof.theorem}")
        stated = _library_statement(expected, where, deadline)
    left = deadline.left()
    if left == 0.0:
        raise deadline.passed()
    try:  # a library theorem's statement is the library's, the certificate supplies its steps (the kernel decides)
        theorem = (check(proof, work_limit=work_limit, time_limit=left) if stated is None
                   else check_stated(stated, proof, work_limit=work_limit, time_limit=left))
    except CheckInterrupted:
        raise deadline.passed() from None
    except ProofError as exc:
        raise CertificateError(f"{where}proof rejected: {exc}") from None
    except RecursionError:
        raise CertificateError(f"{where}proof rejected: expression nested too deeply") from None
    if "sha256" in data and data["sha256"] != theorem.digest:
        raise CertificateError(f"{where}the sha256 field does not match the certificate's content")
    return theorem


def verify_certificate(data: dict, library: dict | None = None, *, expect: str | None = None,
                       cited: dict[str, Theorem] | None = None, time_limit: float | None = None,
                       started: float | None = None, work_limit: int | None = None,
                       whose: dict[str, str] | None = None) -> Theorem:
    """Re-check a certificate from scratch; return the theorem or raise CertificateError.

    The certificate's dependencies are checked first, in order, each citing only earlier ones.
    ``library`` maps theorem ids to statements (dicts, as :func:`statement_of` gives) or proof builders: a
    certificate (or dependency) whose id is in it must state the library's statement.  ``expect`` requires the
    certificate to prove that library theorem.  ``cited`` supplies checked theorems a certificate without
    dependencies may cite (matched by sha256).  ``work_limit`` (units of kernel work) bounds the check of each
    proof, the certificate's and each dependency's; by default each gets the kernel's default budget for its size
    (``derive.kernel.check``): a proof over it is rejected, on any machine alike.  ``time_limit`` (seconds) is
    only an outer guard on the whole verification, dependencies included, in CPU seconds of this process (other
    programs' load does not count), counted from ``started`` (a ``time.process_time()`` value: when the file
    began to be read) or from
    now: past it, :class:`CertificateInterrupted` (not checked).  ``whose`` names where a statement of
    ``library`` comes from, by theorem id, for the message of a certificate that states something else (default:
    "the library").  The statement checked is always ``library``'s, the certificate supplies the steps
    (:func:`derive.kernel.check_stated`).
    """
    deadline = _Deadline(time_limit, started)
    if not isinstance(data, dict):
        raise CertificateError("a certificate must be a JSON object")
    if expect is not None and (library is None or expect not in library):
        raise CertificateError(f"--expect {expect}: no library theorem has that id")
    if expect is not None and data.get("theorem") != expect:
        raise CertificateError(f"the certificate proves {data.get('theorem')!r}, not {expect!r}")
    known: dict[str, Theorem] = dict(cited or {})
    deps = data.get("dependencies", [])
    if not isinstance(deps, list):
        raise CertificateError("dependencies must be a list")
    for i, dep in enumerate(deps):
        theorem = _check_one(dep, {**known}, library, f"dependencies[{i}]: ", deadline, work_limit, whose)
        if theorem.id == data.get("theorem"):
            raise CertificateError(f"dependencies[{i}]: the certificate depends on its own theorem {theorem.id}")
        if theorem.id in known and known[theorem.id].digest != theorem.digest:
            raise CertificateError(f"dependencies[{i}]: theorem {theorem.id} is carried twice")
        known[theorem.id] = theorem
    return _check_one(data, known, library, "", deadline, work_limit, whose)
