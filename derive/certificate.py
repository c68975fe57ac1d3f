"""Certificates: a checked theorem written as JSON, and re-checked from scratch when read.

The format is documented in ``docs/certificates.md``.  Reading never evaluates text: every
expression goes through :func:`derive.srepr_parser.parse_srepr`.  A certificate is accepted
only if the kernel checks its proof *and* its statement (hypotheses, definitions, claims)
is the library's statement of the theorem it names, so a proof of an altered claim fails.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from .kernel import Chain, Definition, Hypothesis, Proof, ProofError, Step, Theorem, check, proof_to_data
from .srepr_parser import ParseError, parse_srepr

__all__ = ["FORMAT", "CertificateError", "certificate_text", "read_certificate", "verify_certificate",
           "write_atomic", "statement_of"]

FORMAT = "ols-transformer-certificate/1"
MAX_BYTES = 20_000_000


class CertificateError(ValueError):
    """A certificate cannot be read or does not check; the message says what is wrong."""


def certificate_text(theorem: Theorem) -> str:
    """The certificate of a checked theorem: deterministic JSON, one trailing newline."""
    data = {"format": FORMAT, **proof_to_data(theorem.proof), "sha256": theorem.digest}
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file and a rename: never a half-written file."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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


def _expr(text, where: str):
    try:
        return parse_srepr(text)
    except ParseError as exc:
        raise CertificateError(f"{where}: {exc}") from None


def _hypothesis(obj, where: str) -> Hypothesis:
    forall = obj.get("forall", []) if isinstance(obj, dict) else []
    if not isinstance(forall, list):
        raise CertificateError(f"{where}.forall must be a list")
    return Hypothesis(
        _field(obj, "name", str, where),
        _expr(_field(obj, "lhs", str, where), f"{where}.lhs"),
        _expr(_field(obj, "rhs", str, where), f"{where}.rhs"),
        tuple(_expr(v, f"{where}.forall[{i}]") for i, v in enumerate(forall)),
    )


def _steps(items, where: str) -> tuple[Step, ...]:
    steps = []
    for i, item in enumerate(items):
        at = f"{where}[{i}]"
        instance = item.get("instance", []) if isinstance(item, dict) else []
        if not isinstance(instance, list) or not all(isinstance(p, list) and len(p) == 2 for p in instance):
            raise CertificateError(f"{at}.instance must be a list of [variable, term] pairs")
        steps.append(Step(
            _expr(_field(item, "expr", str, at), f"{at}.expr"),
            _field(item, "rule", str, at),
            tuple((_expr(v, f"{at}.instance"), _expr(t, f"{at}.instance")) for v, t in instance),
        ))
    return tuple(steps)


def _chain(obj, where: str, main: bool = False) -> Chain:
    """A lemma (with its name and local hypotheses) or, with ``main``, the top-level claim."""
    claim = _field(obj, "claim", dict, where)
    hyps = [] if main else obj.get("hypotheses", [])
    if not isinstance(hyps, list):
        raise CertificateError(f"{where}.hypotheses must be a list")
    return Chain(
        "main" if main else _field(obj, "name", str, where),
        _expr(_field(claim, "lhs", str, f"{where}.claim"), f"{where}.claim.lhs"),
        _expr(_field(claim, "rhs", str, f"{where}.claim"), f"{where}.claim.rhs"),
        _steps(_field(obj, "steps", list, where), f"{where}.steps"),
        tuple(_hypothesis(h, f"{where}.hypotheses[{i}]") for i, h in enumerate(hyps)),
    )


def proof_from_data(data: dict) -> Proof:
    """Rebuild a :class:`Proof` from certificate JSON, parsing every expression safely."""
    if not isinstance(data, dict):
        raise CertificateError("a certificate must be a JSON object")
    if data.get("format") != FORMAT:
        raise CertificateError(f"unknown certificate format {data.get('format')!r} (expected {FORMAT!r})")
    definitions = []
    for i, d in enumerate(_field(data, "definitions", list, "certificate")):
        where = f"definitions[{i}]"
        definitions.append(Definition(_field(d, "name", str, where),
                                      _expr(_field(d, "lhs", str, where), f"{where}.lhs"),
                                      _expr(_field(d, "rhs", str, where), f"{where}.rhs")))
    return Proof(
        _field(data, "theorem", str, "certificate"),
        _field(data, "title", str, "certificate"),
        _field(data, "statement", str, "certificate"),
        tuple(_hypothesis(h, f"hypotheses[{i}]")
              for i, h in enumerate(_field(data, "hypotheses", list, "certificate"))),
        tuple(definitions),
        tuple(_chain(c, f"lemmas[{i}]") for i, c in enumerate(_field(data, "lemmas", list, "certificate"))),
        _chain(data, "certificate", main=True),
    )


def read_certificate(path) -> dict:
    """Load certificate JSON with a size bound; errors name the file and the problem."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise CertificateError(f"{path}: larger than {MAX_BYTES} bytes")
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except FileNotFoundError:
        raise CertificateError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise CertificateError(f"{path}: is a directory") from None
    except PermissionError:
        raise CertificateError(f"{path}: permission denied") from None
    except UnicodeDecodeError:
        raise CertificateError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise CertificateError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise CertificateError(f"{path}: JSON nested too deeply") from None


def statement_of(proof: Proof) -> dict:
    """What a theorem says (everything but the proof steps), for comparing with the library."""
    data = proof_to_data(proof)
    for chain in data["lemmas"]:
        chain.pop("steps")
    data.pop("steps")
    return data


def verify_certificate(data: dict, library: dict | None = None) -> Theorem:
    """Re-check a certificate from scratch; return the theorem or raise CertificateError.

    ``library`` maps theorem ids to proof builders; the certificate's statement must equal
    the library's statement of that id.
    """
    proof = proof_from_data(data)
    try:
        theorem = check(proof)
    except ProofError as exc:
        raise CertificateError(f"proof rejected: {exc}") from None
    except RecursionError:
        raise CertificateError("proof rejected: expression nested too deeply") from None
    if "sha256" in data and data["sha256"] != theorem.digest:
        raise CertificateError("the sha256 field does not match the certificate's content")
    if library is not None:
        if proof.theorem not in library:
            raise CertificateError(f"unknown theorem id {proof.theorem!r}")
        if statement_of(proof) != statement_of(library[proof.theorem]()):
            raise CertificateError(f"the statement differs from the library's statement of {proof.theorem}")
    return theorem
