"""The main job as a pipeline: prove → certificates → LaTeX → code → PDF, each step a function.

``derive build`` runs :func:`build`; the other commands run single steps.  Nothing here is trusted: every
theorem comes from :func:`derive.kernel.check` through the registry, and each writer refuses anything else.
Errors are :class:`PipelineError` (a step failed: exit status 1) or :class:`UserInputError` (the caller's
input is wrong: exit status 2); writes are atomic.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .certificates import certificate_text
from .codegen import REQUIRED_THEOREMS, CodegenError, mpmath_module, numpy_module
from .codegen.generate import (
    dask_module,
    declared_printed,
    library_display,
    library_file,
    library_module,
    user_libraries,
    xp_module,
)
from .files import write_atomic
from .kernel import ProofError
from .latex import TexError, article_latex, compile_pdf, tex_engine, theorem_latex

__all__ = ["ARTICLE", "BACKENDS", "BuildResult", "PipelineError", "UserInputError", "build", "codegen_theorems",
           "library_files", "pdf", "prove", "write_certificates", "write_code", "write_latex"]

ARTICLE = "ols_transformer.tex"

#: Code backend -> (file name, generator from checked theorems).
BACKENDS = {"numpy": ("ols_attention.py", numpy_module), "mpmath": ("ols_attention_mp.py", mpmath_module),
            "xp": ("ols_attention_xp.py", xp_module), "dask": ("ols_attention_dask.py", dask_module)}


class PipelineError(Exception):
    """A step of the job failed after reporting what it could (exit status 1)."""


class UserInputError(Exception):
    """Something the user gave cannot be used (a symbols file, a route a theorem file declares): exit status 2."""


def prove(ids: Sequence[str], witness: bool = False, search: bool = False,
          progress: Callable[[int, int, dict], None] | None = None,
          starting: Callable[[int, int, str], None] | None = None) -> list[dict]:
    """Check each theorem; one record per theorem (``theorem`` set when verified, ``searched`` when its proof was
    found, or failed to be found, by running its function rather than replayed from its record:
    :mod:`derive.records`).

    With ``search``, every theorem asked for is searched again (``derive prove --search``) and its record
    rewritten.  With ``witness``, every verified proof is also re-evaluated by the independent exact witness.
    ``progress``, when given, is called with (index, total, record) as each theorem is done, and ``starting``
    with (index, total, theorem id) as each one starts (a long witness is then never silent).  A theorem whose
    chain could not be closed (a :class:`ProofError` from the builder) gets ``counterexample``: the
    :class:`derive.refute.Verdict` on that chain's claim that the builder attached to the error, or None.
    """
    from .authoring.registry import checked, searched

    records = []
    for theorem_id in ids:
        if starting is not None:
            starting(len(records) + 1, len(ids), theorem_id)
        start = time.perf_counter()
        record = {"id": theorem_id, "status": "failed", "steps": 0, "seconds": 0.0}
        try:
            theorem = checked(theorem_id, search=search)
            record["searched"] = searched(theorem_id)
            proof = theorem.proof
            record["steps"] = theorem.steps
            record["theorem"] = theorem
            record["status"] = "verified"
            if witness:
                from .witness import WitnessError, witness_all

                try:
                    record["witness"] = witness_all(proof)
                except WitnessError as exc:
                    record["status"] = "failed"
                    verdict = "cannot check" if "cannot sample" in exc.reason else "refutes"
                    record["error"] = f"{theorem_id}: the witness {verdict} the proof: {exc}"
                    del record["theorem"]
        except ProofError as exc:
            record["error"] = str(exc)
            # the verdict on the chain that could not be closed (derive.refute), when the builder attached one
            record["counterexample"] = getattr(exc, "counterexample", None)
        except Exception as exc:  # a user's proof function that raises: report it, no traceback
            record["error"] = f"{theorem_id}: building the proof raised {type(exc).__name__}: {exc}"
        if "searched" not in record:
            record["searched"] = True  # no record replayed it: the theorem's function ran (its search failed)
        record["seconds"] = round(time.perf_counter() - start, 3)
        records.append(record)
        if progress is not None:
            progress(len(records), len(ids), record)
    return records


def write_certificates(records: list[dict], out: Path) -> int:
    """``out/<id>.json`` for every verified record; how many were written."""
    written = 0
    for record in records:
        if "theorem" in record:
            write_atomic(out / f"{record['id']}.json", certificate_text(record["theorem"]))
            written += 1
    return written


def coq_status(theorems: list) -> dict[str, dict[str, str]]:
    """For the article's table: theorem id -> {"coq": "exported" or why it is not} (the export, not coqc).

    The export is a function of the certificates, so its outcome is remembered by the theorems' ids and digests:
    writing the LaTeX again in the same process (the tests, ``derive build``) does not export everything again.
    """
    import json

    from .export.coq import export_certificates

    key = tuple((t.id, t.digest) for t in theorems)
    if key not in _COQ_STATUS:
        export = export_certificates([json.loads(certificate_text(t)) for t in theorems])
        status = {tid: {"coq": "exported"} for tid in export.exported}
        status.update({tid: {"coq": reason} for tid, reason in export.skipped.items()})
        if len(_COQ_STATUS) >= 8:
            _COQ_STATUS.pop(next(iter(_COQ_STATUS)))  # the oldest
        _COQ_STATUS[key] = status
    return {tid: dict(row) for tid, row in _COQ_STATUS[key].items()}  # a copy: the caller may add columns


_COQ_STATUS: dict[tuple, dict[str, dict[str, str]]] = {}  # (id, digest) of each theorem -> coq_status's answer


def write_latex(theorems: list, out: Path, style: str = "plain", symbols: str | None = None,
                results: dict | None = None, front=None) -> Path:
    """The package, one fragment per theorem (and per theorem they cite), the article and ``references.bib``;
    returns the article's path.

    ``symbols`` is a ``--symbols`` file mapping the package's symbols to the paper's own LaTeX: read and
    checked before anything is written (a bad file is a :class:`UserInputError`).  ``results`` is the
    article's table of results per theorem id (``{"coq": ..., "witness": ...}``); by default the Coq column
    says which theorems export (:func:`coq_status`).  ``front`` (:class:`derive.latex.Front`) makes the article a
    user's: their title, authors and abstract, none of the package's prose.  The package's article includes the
    experiments' figures where ``derive reproduce`` drew them, in ``out/figures`` or ``out/../figures``
    (:func:`derive.latex.figures.collect_figures`).
    """
    from .latex import PACKAGE, SymbolsError, article_theorems, macro_table, package_latex, read_symbols
    from .latex.article import descriptions, resolved_glossaries
    from .latex.bibliography import BIB_FILE, bib_text
    from .latex.figures import collect_figures

    ordered = article_theorems(theorems)  # the cited theorems too: their labels resolve in a paper
    table = macro_table(ordered)
    try:
        mapping = read_symbols(symbols, table) if symbols else {}
    except SymbolsError as exc:
        raise UserInputError(str(exc)) from None
    glossaries = resolved_glossaries()
    write_atomic(out / f"{PACKAGE}.sty", package_latex(ordered, style, mapping, descriptions(ordered, glossaries)))
    for theorem in ordered:
        write_atomic(out / f"{theorem.id}.tex", theorem_latex(theorem, symbol_names=table) + "\n")
    if results is None:
        results = coq_status(ordered)
    article = out / ARTICLE
    write_atomic(out / BIB_FILE, bib_text())
    figures = collect_figures(out) if front is None else None  # the experiments' figures, where they were drawn
    write_atomic(article, article_latex(theorems, matrix_style=style, results=results, front=front,
                                        figures=figures))
    return article


def pdf(article: Path) -> str:
    """Compile when a TeX engine is present; a one-line account either way."""
    if tex_engine() is None:
        return f"no TeX engine (latexmk or pdflatex) found: wrote {article} without a PDF"
    try:
        return f"PDF: {compile_pdf(article)}"
    except TexError as exc:
        raise PipelineError(str(exc)) from None


def codegen_theorems() -> list[str]:
    """The theorems code generation rests on: those it requires and those declaring the other routes (a user
    library's too)."""
    ids = list(REQUIRED_THEOREMS)
    ids += [d.theorem for d in declared_printed() if d.theorem not in ids]
    return list(dict.fromkeys(ids))


#: What every module ``derive codegen`` writes says near its top; a file at a user module's path without it is
#: not overwritten (it is not a module that codegen wrote: the library itself, say, with ``--out`` its folder).
GENERATED_MARK = "Generated by `derive codegen`"


def library_files(backends: Sequence[str]) -> dict[str, dict[str, str]]:
    """Each user library that declares routes or terms (a registry module) -> backend -> the file name of its
    module (``<stem>_<backend>.py``); a :class:`UserInputError` where two would share a file, or one would take
    the name of a package module."""
    taken = {name: "the package" for name, _ in BACKENDS.values()}
    out: dict[str, dict[str, str]] = {}
    for library in user_libraries():
        out[library] = {}
        for backend in backends:
            name = library_file(library, backend)
            if name in taken:
                raise UserInputError(f"the module {name} of the library {library_display(library)} would replace "
                                     f"that of {taken[name]}: rename the library's file or module")
            taken[name] = f"the library {library_display(library)}"
            out[library][backend] = name
    return out


def _check_target(path: Path, library: str) -> None:
    """A user module may replace a module codegen wrote, never another file (nor the library's own source)."""
    import sys

    source = getattr(sys.modules.get(library), "__file__", None)
    same = source is not None and path.exists() and path.resolve() == Path(source).resolve()
    if same or (path.is_file() and GENERATED_MARK not in path.read_text(encoding="utf-8", errors="replace")[:4000]):
        raise UserInputError(f"refusing to overwrite {path}: it is not a module that derive codegen wrote (the "
                             f"module of {library_display(library)} goes there; give another --out)")


def write_code(records: list[dict], out: Path, backends: Sequence[str],
               unprinted: list[str] | None = None) -> list[Path]:
    """Generated modules from the checked theorems (all the ones codegen rests on must be checked).

    The package's modules (``ols_attention.py``, ...) hold the built-in theorems' routes and terms only, so they
    are the same whatever library is loaded; each user library that declares routes or terms gets modules of its
    own, ``<stem>_<backend>.py`` beside them (:func:`library_files`), holding its functions and the helpers they
    call.  Every module is written (atomically) with the routes and terms that can be printed; each one that
    cannot is named in its module's header and, when ``unprinted`` is given, appended to it as one line (theorem,
    route or term, reason; the backends where it is left out when not all of them)."""
    theorems = {r["id"]: r["theorem"] for r in records if "theorem" in r}
    missing = [t for t in REQUIRED_THEOREMS if t not in theorems]
    if missing:
        raise PipelineError(f"code is generated from checked theorems only; not checked: {', '.join(missing)}")
    requested = list(dict.fromkeys(backends))
    files = library_files(requested)
    for library, names in files.items():
        for name in names.values():
            _check_target(out / name, library)
    written = []
    if "xp" in backends and "numpy" not in backends:  # the xp module runs "auto" on the CPU through it
        backends = ["numpy", *backends]
    left_out: dict = {}
    for backend in backends:
        name, generate = BACKENDS[backend]
        found: list = []
        try:
            text = generate(theorems, found)
        except CodegenError as exc:  # a route the numerics call cannot be printed: the declaration's to fix
            raise UserInputError(str(exc)) from None
        for item in found:
            left_out.setdefault(item, []).append(backend)
        write_atomic(out / name, text)
        written.append(out / name)
    for library, names in files.items():
        for backend, name in names.items():
            found = []
            try:
                text = library_module(theorems, backend, library, found)
            except CodegenError as exc:
                raise UserInputError(str(exc)) from None
            for item in found:
                left_out.setdefault(item, []).append(backend)
            write_atomic(out / name, text)
            written.append(out / name)
    if unprinted is not None:
        unprinted.extend(item.line(() if len(where) == len(requested) else where) for item, where in left_out.items())
    return written


@dataclass
class BuildResult:
    """What :func:`build` did: one record per theorem, and where everything went."""

    records: list[dict]
    certificates: Path
    article: Path
    code: list[Path]
    pdf: str
    written: int = 0
    extra: list[str] = field(default_factory=list)

    @property
    def verified(self) -> int:
        return sum("theorem" in r for r in self.records)

    def summary(self) -> str:
        """The one line ``derive build`` ends with."""
        return (f"{self.verified}/{len(self.records)} theorems verified; {self.written} certificates in "
                f"{self.certificates}; LaTeX in {self.article}; code in {self.code[0].parent}; {self.pdf}"
                + "".join(f"; {line}" for line in self.extra))


def build(out: Path, ids: Sequence[str], style: str = "plain", symbols: str | None = None, make_pdf: bool = True,
          progress: Callable[[int, int, dict], None] | None = None,
          report: Callable[[str], None] | None = None, witness: bool = False, coq: bool = True,
          figures: bool = True) -> BuildResult:
    """The main job: prove every theorem, then write certificates, LaTeX, generated code, the PDF (if asked) and
    the Coq development, compiled with coqc when it is on PATH (not with ``coq`` False: ``derive build --no-coq``;
    the .v files are written all the same, and the article's table says "exported", not "accepted").

    ``progress`` is called after each theorem; ``report`` with one line as each later stage starts and ends
    (certificates, LaTeX, code, PDF, Coq and every coqc verdict), so nothing runs silently.  With ``witness``,
    every proof is also re-evaluated by the independent witness (a refutation fails the theorem, as in
    :func:`prove`), and the article's table of results says so.  With ``figures`` (``derive build`` unless
    ``--no-figures``) the experiments run in their quick form (``derive reproduce --quick``, a few seconds) into
    ``out/figures``, and the article shows them in its Experiments section, its captions saying the run was quick;
    where matplotlib is missing, a line says so and the article has no such section.  The output folders
    ``out/certificates``, ``out/latex`` and ``out/code`` must exist.
    """
    say = report or (lambda line: None)
    certs, tex, code = out / "certificates", out / "latex", out / "code"
    records = []
    for index, theorem_id in enumerate(ids, start=1):
        (record,) = prove([theorem_id], witness=witness)
        records.append(record)
        if progress is not None:
            progress(index, len(ids), record)
    started = time.perf_counter()
    written = write_certificates(records, certs)
    say(f"certificates: {written} written to {certs} ({time.perf_counter() - started:.1f} s)")
    theorems = [r["theorem"] for r in records if "theorem" in r]
    status: dict[str, dict[str, str]] = {}
    coq_lines = write_coq(records, out / "coq", compile_=coq, status=status, report=say)
    if not coq:
        coq_lines.append("coqc not run (--no-coq)")
        say(coq_lines[-1])
    for record in records:
        if "witness" in record:
            instances = record["witness"]["instances"]
            status.setdefault(record["id"], {})["witness"] = str(instances)
    if figures:
        draw_figures(out / "figures", say)
    say(f"LaTeX: writing the package, {len(theorems)} theorem fragments and the article to {tex} ...")
    started = time.perf_counter()
    article = write_latex(theorems, tex, style, symbols, results=status)
    say(f"LaTeX: wrote {article} ({time.perf_counter() - started:.1f} s)")
    started = time.perf_counter()
    paths = write_code(records, code, list(BACKENDS))
    say(f"code: wrote {', '.join(p.name for p in paths)} to {code} ({time.perf_counter() - started:.1f} s)")
    if make_pdf:
        say("PDF: compiling the article ..." if tex_engine() is not None else "PDF: no TeX engine found")
        started = time.perf_counter()
        account = pdf(article)
        say(f"{account} ({time.perf_counter() - started:.1f} s)")
    else:
        account = "PDF skipped (--no-pdf)"
    return BuildResult(records, certs, article, paths, account, written, extra=coq_lines)


def draw_figures(out: Path, say: Callable[[str], None]) -> bool:
    """The experiments' figures for the article, from their quick run (``derive reproduce --quick``) into ``out``;
    False, with a line that says why, where matplotlib is missing."""
    from .experiments.paper import MissingDependency, reproduce, require_matplotlib

    try:
        require_matplotlib()
    except MissingDependency as exc:
        say(f"figures: not drawn, so the article has no Experiments section: {exc}")
        return False
    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    summary = reproduce(out, show_progress=False, quick=True)
    say(f"figures: the quick run of the experiments drew {len(summary['figures'])} figures in {out} "
        f"({time.perf_counter() - started:.1f} s)")
    return True


def write_coq(records: list[dict], out: Path, compile_: bool = True, status: dict | None = None,
              report: Callable[[str], None] | None = None) -> list[str]:
    """The Coq development of the verified theorems in ``out``; compiled per theorem when coqc is on PATH.

    Returns the lines to report (what was exported, and each theorem's coqc verdict); ``report`` is told the
    theorems that could not be exported, each with the reason, and every coqc verdict as it comes.
    ``status``, when given, receives each theorem's Coq state for the article: ``{"coq": "exported" |
    "checked" | why not}``.
    """
    import json

    from .export.coq import compile_export, coq_states, coqc, export_certificates, write_export

    say = report or (lambda line: None)
    data = [json.loads(certificate_text(r["theorem"])) for r in records if "theorem" in r]
    export = export_certificates(data)
    write_export(export, out)
    lines = [f"Coq: {len(export.exported)} theorems exported to {out}, {len(export.skipped)} not exported"
             + (f" ({', '.join(export.skipped)})" if export.skipped else "")]
    say(lines[0])
    for theorem_id, reason in export.skipped.items():
        say(f"Coq: not exported: {theorem_id}: {reason}")
    if status is not None:
        status.update({tid: {"coq": "exported"} for tid in export.exported})
        status.update({tid: {"coq": reason} for tid, reason in export.skipped.items()})
    if compile_ and coqc() is not None and export.exported:
        say(f"coqc: compiling the prelude and {len(export.exported)} theorems ...")
        started = time.perf_counter()
        done: list[str] = []

        def verdict(theorem_id: str, result: str) -> None:
            done.append(theorem_id)
            say(f"coqc [{len(done)}/{len(export.exported)}] {theorem_id}: "
                + ("accepted, closed under the global context" if result == "ok" else result))

        results = compile_export(out, export.exported, on_result=verdict)
        if status is not None:  # "checked" only where coqc accepted the file; "rejected: ..." where it refused it
            status.update(coq_states(export, results))
        failed = {k: v for k, v in results.items() if v != "ok"}
        lines.append(f"coqc: {len(results) - len(failed)}/{len(results)} accepted"
                     + "".join(f"; {k}: {v}" for k, v in failed.items()))
        say(f"{lines[-1]} ({time.perf_counter() - started:.1f} s)")
        if failed:
            raise PipelineError("coqc rejected exported theorems: " + "; ".join(f"{k}: {v}" for k, v in failed.items()))
    elif compile_ and export.exported:
        lines.append("coqc not found: Coq files written, not compiled")
        say(lines[-1])
    return lines
