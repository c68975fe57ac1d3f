"""The documentation's theorem index: every certified theorem as a MyST Markdown section, from certificates.

:func:`theorem_page` reads a folder of certificates (``proofs/certificates/*.json``), re-checks each one with
the kernel (:func:`derive.certificates.verify_certificate`, each theorem once, the theorems it cites first),
and prints every checked theorem as the article states it (sizes, hypotheses, definitions, claim; plain
LaTeX for MathJax), with its informal statement, what it means (from its module's
``@theorem(meaning=...)`` where the library registers it), the theorems it cites (linked), its certificate's
SHA-256, its Coq status (``proofs/coq/<id>.v`` exported, or the reason given in ``proofs/README.md``) and
links to its LaTeX fragment and its Coq file.  No proof is searched for or built: the page costs one kernel
check per certificate.  The Sphinx configuration (``docs/conf.py``) writes it at build time.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..kernel import Theorem
from .article import _definitions, _equation, _let, _printer, theorem_latex
from .bibliography import references
from .package import package_latex
from .symbols import macro_table

__all__ = ["CheckedCertificate", "checked_certificates", "markdown_text", "theorem_page"]


@dataclass(frozen=True)
class CheckedCertificate:
    """A certificate the kernel re-checked: its theorem, and its file."""

    theorem: Theorem
    path: Path


def checked_certificates(folder: Path) -> list[CheckedCertificate]:
    """Every ``*.json`` certificate of ``folder``, re-checked, each after the theorems it cites.

    Raises :class:`derive.certificates.CertificateError` for a certificate that does not check, or that cites a
    theorem no certificate of the folder proves.
    """
    from ..certificates import CertificateError, verify_certificate

    pending = {}
    for path in sorted(Path(folder).glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        pending[data["theorem"]] = (path, data)
    known: dict[str, Theorem] = {}
    out: list[CheckedCertificate] = []
    while pending:
        ready = [tid for tid, (_, data) in pending.items()
                 if all(c["theorem"] in known for c in data.get("cites", []))]
        if not ready:
            raise CertificateError(f"{', '.join(sorted(pending))}: cite theorems no certificate here proves")
        for tid in ready:
            path, data = pending.pop(tid)
            own = {k: v for k, v in data.items() if k != "dependencies"}  # its citations are checked already
            theorem = verify_certificate(own, cited=known)
            known[tid] = theorem
            out.append(CheckedCertificate(theorem, path))
    return out


_CITE = re.compile(r"\\cite\{([^}]*)\}")
_REF = re.compile(r"(Theorems?)?~?\\ref\{thm:(\w+)\}")
_ACCENT = {'"': "\u0308", "'": "\u0301", "`": "\u0300", "^": "\u0302", "~": "\u0303", "c": "\u0327", "v": "\u030c",
           "=": "\u0304"}


def _cite_text(keys: str, before: str = "") -> str:
    """``(Tan and Zhao 2026)``; ``(2026)`` right after the authors' names (``Tan and Zhao~\\cite{...}``)."""
    known = references()
    parts = []
    for key in (k.strip() for k in keys.split(",")):
        entry = known.get(key)
        if entry is None:
            parts.append(key)
            continue
        authors = [a.strip() for a in re.split(r"\s+and\s+", entry["author"])]
        surnames = [a.split(",")[0].strip() for a in authors]
        who = surnames[0] + (" et al." if len(surnames) > 2 or surnames[-1] == "others" else
                             f" and {surnames[1]}" if len(surnames) == 2 else "")
        named = _plain(before).rstrip("~\u00a0 ").endswith(_plain(who).removesuffix(" et al.")) or \
            _plain(before).rstrip("~\u00a0 ").endswith(_plain(who))
        parts.append(entry["year"] if named else f"{_plain(who)} {entry['year']}")
    return "(" + "; ".join(parts) + ")"


def _plain(text: str) -> str:
    """BibTeX/LaTeX accents and braces as Unicode text (``Aky{\\"u}rek`` -> ``Akyürek``)."""
    import unicodedata

    def accent(match: re.Match) -> str:
        return unicodedata.normalize("NFC", match.group(2) + _ACCENT[match.group(1)])

    text = re.sub(r"\\([\"'`^~cv=])\{?\\?([A-Za-z])\}?", accent, text)
    return text.replace("{", "").replace("}", "")


def markdown_text(latex: str, numbers: Mapping[str, int]) -> str:
    """A paragraph of LaTeX text (a theorem's meaning) as MyST Markdown: math kept, ``\\ref{thm:ID}`` a link to
    the theorem's section (its id in code where the page lacks it), ``\\cite`` as author and year, ``\\emph``
    as emphasis, dashes and ties as Unicode."""
    pieces = re.split(r"(\$[^$]*\$)", latex)
    out = []
    for index, piece in enumerate(pieces):
        if index % 2:
            out.append(piece)
            continue

        def ref(match: re.Match) -> str:
            tid = match.group(2)
            if tid in numbers:
                return f"[Theorem {numbers[tid]}](#thm-{tid.replace('_', '-')})"
            return f"`{tid}`"

        piece = _REF.sub(ref, piece)
        piece = _CITE.sub(lambda m: _cite_text(m.group(1), m.string[:m.start()]), piece)
        piece = re.sub(r"\\emph\{([^}]*)\}", r"*\1*", piece)
        piece = piece.replace("---", "\u2014").replace("--", "\u2013").replace("~", "\u00a0")
        out.append(_plain(piece))
    return "".join(out)


def _coq_status(theorem_id: str, coq: Path, reasons: Mapping[str, str], here: Path) -> str:
    path = coq / f"{theorem_id}.v"
    if path.is_file():
        return f"exported to Coq/MathComp: {{download}}`{theorem_id}.v <{_relative(path, here)}>`"
    reason = reasons.get(theorem_id)
    return f"not exported to Coq ({reason})" if reason else "not exported to Coq"


def _relative(path: Path, here: Path) -> str:
    return Path(os.path.relpath(path.resolve(), here.resolve())).as_posix()


def _coq_reasons(proofs_readme: Path) -> dict[str, str]:
    if not proofs_readme.is_file():
        return {}
    text = proofs_readme.read_text(encoding="utf-8")
    return dict(re.findall(r"^\* `(\w+)`: (.+)$", text, re.M))


def _section(item: CheckedCertificate, number: int, numbers: Mapping[str, int], meanings: Mapping[str, str],
             coq: str, latex_link: str) -> str:
    theorem = item.theorem
    proof = theorem.proof
    printer = _printer([theorem], False, {})
    anchor = f"thm-{theorem.id.replace('_', '-')}"
    lines = [f"({anchor})=", f"## {number}. {theorem.title}", ""]
    cites = ", ".join(f"[{c.id}](#thm-{c.id.replace('_', '-')})" if c.id in numbers else f"`{c.id}`"
                      for c in proof.cites)
    lines += [f"`{theorem.id}` · {theorem.steps} kernel steps · certificate SHA-256 `{theorem.digest}` · "
              f"{coq} · LaTeX: {latex_link}" + (f" · cites {cites}" if cites else ""), ""]
    let = _let(theorem, printer)
    if let:
        lines += [let, ""]
    if proof.hypotheses:
        lines += ["**Assume**", ""] + [f"- {_equation(h, printer)}" for h in proof.hypotheses] + [""]
    definitions = _definitions(theorem, printer)
    if definitions:
        lines += ["**Define**", ""] + [f"- {d.text}" for d in definitions] + [""]
    lines += ["**Then**", "", "$$", f"{printer.doprint(proof.claim.lhs)} = {printer.doprint(proof.claim.rhs)}",
              "$$", ""]
    lines += [f"*In words.* {proof.statement}", ""]
    if meanings.get(theorem.id):
        lines += [f"*What it means.* {markdown_text(meanings[theorem.id], numbers)}", ""]
    return "\n".join(lines)


def theorem_page(certificates: Path, page: Path, coq: Path | None = None, latex_out: Path | None = None,
                 meanings: Mapping[str, str] | None = None) -> str:
    """The MyST page (written to ``page``) indexing every theorem of the certificates folder; returns its text.

    ``coq`` is the folder of exported ``.v`` files (``proofs/coq``; its ``../README.md`` gives the reasons a
    theorem is not exported); ``latex_out`` a folder that receives each theorem's LaTeX fragment and the
    ``.sty`` they need (linked from the page); ``meanings`` each theorem's "What it means" paragraph (LaTeX
    text; by default the registered theorems').  Only files whose content changes are rewritten, so an
    incremental Sphinx build stays incremental.
    """
    from ..files import write_atomic

    if meanings is None:
        from ..authoring.registry import entries

        meanings = {tid: item.meaning for tid, item in entries().items() if item.meaning}
        order = list(entries())
    else:
        order = []
    items = checked_certificates(certificates)
    rank = {tid: i for i, tid in enumerate(order)}
    items.sort(key=lambda item: (rank.get(item.theorem.id, len(rank)), item.theorem.id))
    numbers = {item.theorem.id: i for i, item in enumerate(items, start=1)}
    here = Path(page).parent
    reasons = _coq_reasons(Path(coq).parent / "README.md") if coq else {}
    links: dict[str, str] = {}
    if latex_out is not None:
        latex_out = Path(latex_out)
        theorems = [item.theorem for item in items]
        table = macro_table(theorems)
        _write_if_changed(latex_out / "olstransformer.sty", package_latex(theorems), write_atomic)
        for item in items:
            target = latex_out / f"{item.theorem.id}.tex"
            _write_if_changed(target, theorem_latex(item.theorem, symbol_names=table) + "\n", write_atomic)
            links[item.theorem.id] = f"{{download}}`{item.theorem.id}.tex <{_relative(target, here)}>`"
    head = [
        "# The theorems",
        "",
        f"Every theorem of the library, {len(items)} in all, as the kernel checked it: this page is generated when "
        "the site is built, from the certificates in `proofs/certificates/` (each re-checked by the kernel first; "
        "no proof is searched for). Each section gives the theorem's statement, the theorems it cites, the "
        "SHA-256 of its certificate (`derive check proofs/certificates/ID.json` re-checks it), whether it is "
        "exported to Coq/MathComp (`proofs/README.md`) and its LaTeX fragment (`derive latex` writes the same "
        "file; it needs the package "
        + (f"{{download}}`olstransformer.sty <{_relative(latex_out / 'olstransformer.sty', here)}>`"
           if latex_out is not None else "`olstransformer.sty`")
        + "). The article (`derive build`) prints the proofs.",
        "",
        "| # | theorem | id | steps |",
        "| --- | --- | --- | --- |",
    ]
    head += [f"| {numbers[i.theorem.id]} | [{i.theorem.title}](#thm-{i.theorem.id.replace('_', '-')}) | "
             f"`{i.theorem.id}` | {i.theorem.steps} |" for i in items]
    body = [_section(item, numbers[item.theorem.id], numbers, meanings,
                     _coq_status(item.theorem.id, Path(coq), reasons, here) if coq else "Coq: not given",
                     links.get(item.theorem.id, "not written")) for item in items]
    text = "\n".join(head) + "\n\n" + "\n".join(body)
    _write_if_changed(Path(page), text, write_atomic)
    return text


def _write_if_changed(path: Path, text: str, write) -> None:
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(path, text)
