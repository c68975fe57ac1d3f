"""The ``derive`` command: list, prove, refute, check, latex, codegen, reproduce and build.

Every command that works on theorems takes ``--library MODULE_OR_FILE`` (repeatable): the theorems a
user's module registers with ``@theorem`` are treated exactly like the built-in ones.  Installed
packages register through the entry-point group ``ols_transformer.theorems``.

Exit codes: 0 success, 1 a proof or certificate failed (``derive refute``: a counterexample was found), 2 a
usage error (bad id, bad path, a library that cannot be loaded, a missing optional dependency, a mistyped command
or option, answered with the closest one; ``derive check``: a file that cannot be read, missing or not JSON;
``derive refute``: a theorem whose statement cannot be built), 3 an output that cannot be written (the message
names the file or directory), 4 an incomplete run with no failure: ``derive check`` stopped by its outer
time guard before a verdict on some certificate (``interrupted: not checked``; none rejected, none
unreadable), ``derive export`` refused some theorems (each listed with its reason; the others were
written), or ``derive codegen`` could not print some routes or terms (each listed with its reason; the modules
were written with the others), 141 the reader of the output went away (``derive list | head -1``; quiet).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from . import __version__, pipeline
from .certificates import CertificateError, CertificateInterrupted, read_certificate, verify_certificate
from .pipeline import ARTICLE, PipelineError, UserInputError

__all__ = ["ARTICLE", "main", "prove", "statement_lines"]

prove = pipeline.prove  # kept importable from here


class UsageError(Exception):
    """A mistake in how the command was called: reported in one line, exit code 2."""


class CannotWrite(Exception):
    """An output that cannot be written: reported in one line naming the target, exit code 3."""


EXIT_CANNOT_WRITE = 3
EXIT_NOT_EXPORTED = 4  # derive export: some theorems refused (listed), the others written
EXIT_INTERRUPTED = 4  # derive check: a certificate not checked within --time-limit (no verdict)
EXIT_NOT_PRINTED = 4  # derive codegen: some routes or terms not printed (listed), the others written
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a writer whose reader went away


def _library():
    """Theorem id -> function building its proof, for every registered theorem (built-in and loaded)."""
    from .authoring.registry import build, entries

    return {theorem_id: (lambda i=theorem_id: build(i)) for theorem_id in entries()}


def _load_libraries(specs: list[str] | None, record: str | None = None) -> None:
    """Load installed packages' theorems (entry points), then each ``--library``, in order; the theorems of each
    ``--library`` are recorded and replayed beside its module (or in ``record``: ``--record DIR``)."""
    from .authoring.registry import LibraryError, load_entry_points, load_library
    from .records import attach

    if record is not None and not specs:
        raise UsageError("--record DIR names where the proofs of a --library are recorded: give --library too")
    if record is not None and Path(record).exists() and not Path(record).is_dir():
        raise UsageError(f"--record {record} exists and is not a directory")
    try:
        load_entry_points()
        for spec in specs or ():
            ids = load_library(spec)
            if not ids:
                raise UsageError(f"library {spec} registers no theorem (decorate proof functions with @theorem)")
            _LOADED.extend(i for i in ids if i not in _LOADED)
            attach(ids, record)
    except LibraryError as exc:
        raise UsageError(str(exc)) from None


def _select(ids: list[str]) -> list[str]:
    """The ids asked for; by default the theorems of the ``--library`` modules, or else every theorem."""
    library = _library()
    unknown = [i for i in ids if i not in library]
    if unknown:
        raise UsageError(f"unknown theorem id {unknown[0]!r} (known: {', '.join(library)})")
    return list(dict.fromkeys(ids)) or list(_LOADED) or list(library)


_LOADED: list[str] = []  # ids the --library modules registered, in order


def _output_dir(path: str) -> Path:
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out} exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CannotWrite(f"cannot create directory {out}: {exc.strerror}") from None
    return out


def _failures(records: list[dict]) -> None:
    for r in records:
        if "error" in r:
            print(f"FAILED {r['error']}", file=sys.stderr)


def _front(args):
    """A user's article (issue 44): with ``--library`` (or ``--title``, ``--author``, ``--abstract``), its title,
    authors and abstract, from the options or else from the first library module's docstring (first line the
    title, the rest the abstract); ``None`` for the package's own article."""
    from .authoring.registry import entries
    from .latex import front_from_docstring

    if not (args.library or args.title is not None or args.author or args.abstract is not None):
        return None
    abstract = None
    if args.abstract is not None:
        try:
            abstract = Path(args.abstract).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            raise UsageError(f"--abstract {args.abstract} cannot be read: {reason}") from None
    doc, stem = None, "Theorems"
    if _LOADED:
        module = sys.modules.get(entries()[_LOADED[0]].module)
        doc = getattr(module, "__doc__", None)
        spec = args.library[0] if args.library else ""
        stem = f"Theorems of {Path(spec).stem if spec.endswith('.py') else spec}" if spec else stem
    return front_from_docstring(doc, args.title, args.author or (), abstract, default_title=stem)


def _cmd_latex(args) -> int:
    ids = _select(args.ids)
    front = _front(args)  # an unreadable --abstract is a usage error before anything is proved or written
    out = _output_dir(args.out)
    records = pipeline.prove(ids)
    _failures(records)
    theorems = [r["theorem"] for r in records if "theorem" in r]
    if theorems:
        article = pipeline.write_latex(theorems, out, args.style, args.symbols, front=front)
        print(f"wrote {out / 'olstransformer.sty'}, the theorem fragments and {article}")
        if args.pdf:
            print(pipeline.pdf(article))
    return 0 if len(theorems) == len(records) else 1


def _cmd_build(args) -> int:
    out = _output_dir(args.out)
    for sub in ("certificates", "latex", "code"):
        _output_dir(str(out / sub))

    def progress(index: int, total: int, record: dict) -> None:
        status = "verified" if "theorem" in record else "FAILED"
        how = "searched" if record.get("searched") else "replayed"
        print(f"[{index}/{total}] {record['id']:30} {status} ({record['steps']} steps, {record['seconds']:.2f} s, "
              f"{how})", flush=True)

    def report(line: str) -> None:
        print(line, flush=True)

    result = pipeline.build(out, list(_library()), style=args.style, symbols=args.symbols, make_pdf=not args.no_pdf,
                            progress=progress, report=report, witness=args.witness, coq=not args.no_coq,
                            figures=not args.no_figures)
    _failures(result.records)
    print(result.summary())
    return 0 if result.verified == len(result.records) else 1


def _cmd_codegen(args) -> int:
    """The package's modules, and each ``--library``'s own (``<stem>_<backend>.py``); every route and term that
    cannot be printed is named on stderr with its reason.  Exit 0 when every declared route and term was printed,
    1 when a proof failed (its routes are among those named), else 4 when some were not printed (the modules hold
    the others)."""
    out = _output_dir(args.out)
    records = pipeline.prove(pipeline.codegen_theorems())
    _failures(records)
    backends = list(pipeline.BACKENDS) if args.backend == "all" else [args.backend]
    unprinted: list[str] = []
    for path in pipeline.write_code(records, out, backends, unprinted):
        print(f"wrote {path}")
    for line in unprinted:
        print(line, file=sys.stderr)
    failed = [r["id"] for r in records if "error" in r]
    if unprinted or failed:
        said = f"{len(unprinted)} declared {'route or term' if len(unprinted) == 1 else 'routes or terms'} not printed"
        why = f"; {len(failed)} proof{'s' if len(failed) != 1 else ''} failed ({', '.join(failed)})" if failed else ""
        print(f"derive codegen: {said} (each named above){why}; the modules written hold the others",
              file=sys.stderr)
    if failed:
        return 1  # a proof the kernel refused: its routes are left out (named above)
    return EXIT_NOT_PRINTED if unprinted else 0


def _cmd_reproduce(args) -> int:
    from .experiments.paper import MissingDependency, reproduce, require_matplotlib

    try:
        require_matplotlib()  # before anything is computed
    except MissingDependency as exc:
        raise UsageError(str(exc)) from None
    out = _output_dir(args.out)
    start = time.perf_counter()
    summary = reproduce(out, show_progress=not args.quiet, quick=args.quick)
    t, h = summary["training"], summary["hopfield"]
    print(f"training: gap <= {t['config']['tolerance']:g} at epoch {t['epochs_to_tolerance']}, "
          f"final gap {t['final_relative_gap']:.2e}")
    for kind, unit in (("linear", "patterns"), ("softmax", "doublings")):
        part, fit = h[kind], h[kind]["fit"]
        line = (f"hopfield, {kind} attention: capacity {', '.join(f'{m:g}' for m in part['mean'].values())} "
                f"(means) for d = {', '.join(map(str, part['dims']))}")
        if fit is not None:
            lo, hi = fit["slope_ci"]
            line += (f"; {'slope' if kind == 'linear' else 'log2 slope'} {fit['slope']:.4g} {unit} per dimension "
                     f"(95% CI {lo:.4g} to {hi:.4g})")
        if part["lower_bounds"]:
            line += f"; {part['lower_bounds']} lower bounds (the grid ended) left out of the fit"
        print(line)
    b = summary["beyond"]
    print(f"beyond the paper: streaming {b['streaming']['rows']} rows, square root {b['streaming']['square_root']:.1e} "
          f"and Sherman-Morrison {b['streaming']['sherman_morrison']:.1e} from batch ridge; one layer with "
          f"Γ = (XᵀX)⁻¹ is OLS to {b['layers']['one_layer_exact']:.1e}")
    print(f"wrote {len(summary['figures'])} figures and {out / 'summary.json'} in {time.perf_counter() - start:.1f} s")
    return 0


def _cmd_list(args) -> int:
    from .authoring.registry import statement

    failed = 0
    for theorem_id in _library():
        try:
            title = statement(theorem_id).title  # the statement only: no chain runs, nothing is searched
        except Exception as exc:  # a user's proof function that raises: say so, keep listing
            failed += 1
            title = f"(cannot build: {type(exc).__name__}: {exc})"
        print(f"{theorem_id:30} {title}")
    return 1 if failed else 0


def _cmd_prove(args) -> int:
    ids = _select(args.ids)
    out = _output_dir(args.certificates) if args.certificates else None
    records = pipeline.prove(ids, witness=args.witness, search=args.search,
                             progress=_witness_progress if args.witness else None,
                             starting=_witness_starting if args.witness else None)
    if out is not None:
        pipeline.write_certificates(records, out)
    if args.json:
        rows = [{k: r[k] for k in ("id", "status", "steps", "seconds", "witness", "error") if k in r}
                for r in records]
        for row, r in zip(rows, records, strict=True):
            if r["status"] != "verified":  # the verdict on the chain that could not be closed (derive refute)
                verdict = r.get("counterexample")
                row["counterexample"] = None if verdict is None else verdict.to_json()
        print(json.dumps(rows, indent=1))
    else:
        print(f"{'theorem':30} {'steps':>5}  {'verified':8} {'seconds':>7}")
        for r in records:
            extra = ""
            if "witness" in r:
                w = r["witness"]
                extra = f"  witness: {w['instances']} instances, identities p = " + ", ".join(
                    str(i["p"]) for i in w["identities"])
            print(f"{r['id']:30} {r['steps']:5d}  {'yes' if r['status'] == 'verified' else 'NO':8} "
                  f"{r['seconds']:7.3f}{extra}")
        _failures(records)
        print(_proved_summary(records) + (f"; certificates in {out}" if out else ""))
    _record_problems()
    return 0 if all(r["status"] == "verified" for r in records) else 1


def _proved_summary(records: list[dict]) -> str:
    """The line ``derive prove`` ends with: how many theorems were verified, how many of those were replayed from
    their records and how many searched, and the theorems not proved, named (a failed search is neither: "0/1
    theorems verified; 1 not proved: mine (why: its FAILED line)")."""
    verified = [r for r in records if r["status"] == "verified"]
    failed = [r["id"] for r in records if r["status"] != "verified"]
    searched = sum(bool(r.get("searched")) for r in verified)
    line = f"{len(verified)}/{len(records)} theorems verified"
    if verified:
        line += f"; {len(verified) - searched} replayed from their records, {searched} searched"
    if failed:
        named = ", ".join(failed[:5]) + (f" and {len(failed) - 5} more" if len(failed) > 5 else "")
        line += f"; {len(failed)} not proved: {named} (why: {'its' if len(failed) == 1 else 'each'} FAILED line)"
    return line


def _cmd_refute(args) -> int:
    """Look for a counterexample to the claim of every chain of each theorem's statement (derive.refute): exit 1
    when one is found (and confirmed), 0 when none is."""
    from .authoring.registry import statement
    from .refute import refute, statement_chains

    ids = _select(args.ids)
    budget = _positive("--budget", args.budget, int)
    results, unreadable = [], 0
    for theorem_id in ids:
        try:
            stated = statement(theorem_id)  # the statement only: no chain runs, nothing is searched
        except Exception as exc:  # a user's proof function that raises: say so, go on
            unreadable += 1
            results.append({"id": theorem_id, "error": f"cannot state: {type(exc).__name__}: {exc}"})
            continue
        verdicts = [refute(stated, chain, seed=args.seed, budget=budget) for chain in statement_chains(stated)]
        results.append({"id": theorem_id, "verdicts": verdicts})
    found = sum(v.is_false for r in results for v in r.get("verdicts", ()))
    if args.json:
        print(json.dumps([{"id": r["id"], "error": r["error"]} if "error" in r else
                          {"id": r["id"], "chains": [v.to_json() for v in r["verdicts"]]} for r in results], indent=1))
    else:
        for r in results:
            if "error" in r:
                print(f"{r['id']}: {_one_line(r['error'])}")
                continue
            for v in r["verdicts"]:
                print(str(v) if v.is_false else f"{r['id']}/{v.chain}: {v.summary()}")
        chains = sum(len(r.get("verdicts", ())) for r in results)
        unsatisfied = sum(v.kind == "hypotheses_unsatisfied" for r in results for v in r.get("verdicts", ()))
        print(f"{chains} chain{'s' * (chains != 1)} of {len(results) - unreadable} theorem"
              f"{'s' * (len(results) - unreadable != 1)}: {found} false (counterexample), "
              f"{chains - found - unsatisfied} not refuted (true on the instances tried), {unsatisfied} with "
              f"hypotheses never satisfied" + (f"; {unreadable} theorems could not be stated" if unreadable else ""))
    return 1 if found else 2 if unreadable else 0


def _witness_starting(index: int, total: int, theorem_id: str) -> None:
    """One line on stderr as each theorem's proof and witness start: a theorem whose witness takes a while (a
    user's block theorem) is named before the wait, not only after it."""
    print(f"derive: [{index}/{total}] {theorem_id}: proving and witnessing ...", file=sys.stderr, flush=True)


def _witness_progress(index: int, total: int, record: dict) -> None:
    """One line on stderr as each theorem's proof and witness are done: ``derive prove --witness`` takes seconds
    to minutes per theorem, and the table comes only at the end."""
    if "witness" in record:
        w = record["witness"]
        verdict = (f"witness: {w['instances']} instances, identities p = "
                   + ", ".join(str(i["p"]) for i in w["identities"]))
        at_points = sum(i.get("points", 0) for i in w["identities"])
        if at_points:
            verdict += f" ({at_points} chain checks at random points)"
    else:
        verdict = "FAILED: " + _one_line(record.get("error", "not verified"))
    print(f"derive: [{index}/{total}] {record['id']}: {verdict} ({record['seconds']:.1f} s)", file=sys.stderr,
          flush=True)


def _record_problems() -> None:
    """Say which found proofs could not be recorded (a read-only folder): the next run searches them again."""
    from .records import store

    current = store()
    for line in current.problems if current is not None else ():
        print(f"derive: note: {line}", file=sys.stderr)


#: What ``derive check`` prints of a statement, whatever its size, in a time bounded by these: at most
#: ``STATEMENT_LINES`` lines of scalars, families, hypotheses and definitions (then how many more there are), terms of
#: at most ``LINE_CHARACTERS`` characters (cut short: ``…``) in the package's notation (``XᵀX = VΛVᵀ``:
#: :mod:`derive.plaintext`, node by node, in time linear in what is shown), and the symbols looked for in at most
#: ``SCALAR_NODES`` nodes (a 40 KB statement nested deep took SymPy's printer minutes).
STATEMENT_LINES = 60
LINE_CHARACTERS = 240
SCALAR_NODES = 200_000


def statement_lines(theorem) -> list[str]:
    """The statement a theorem proves, in the package's notation (:mod:`derive.plaintext`): the sign assumption of
    every scalar symbol, every family with its recurrence (base and step), hypotheses (with their quantifiers),
    definitions, claim; bounded in size and in the time it takes to print (:data:`STATEMENT_LINES`)."""
    from .kernel.terms import FamilyMatrix

    proof = theorem.proof
    sstr, scalars = _statement_printer(proof)
    said = ([f"  scalar  {sstr(s)}" + (" > 0" if positive else " (real, of unknown sign)") for s, positive in scalars]
            if scalars is not None else ["  scalar  … (the statement is too large to list its scalar symbols)"])
    body = [lambda line=line: [line] for line in said]

    def family(f) -> list[str]:
        member = lambda e: FamilyMatrix(f.name, e, f.rows.xreplace({f.index: e}),  # noqa: E731
                                        f.cols.xreplace({f.index: e}))
        if f.is_defined:
            return [f"  family  {sstr(member(0))} = {sstr(f.base)}",
                    f"  family  {sstr(member(f.index + 1))} = {sstr(f.step)}"]
        return [f"  family  {sstr(member(f.index))} ({sstr(f.rows)}×{sstr(f.cols)}): any sequence, for "
                f"every {sstr(f.index)} ≥ 0"]

    def hypothesis(h) -> list[str]:
        text = (f"{h.lhs.function.name.replace('_', ' ')}({sstr(h.lhs.arguments[0])})" if h.is_predicate
                else f"{sstr(h.lhs)} = {sstr(h.rhs)}")
        if h.forall:
            text = f"(for all {', '.join(sstr(v) for v in h.forall)}: {text})"
        return [f"  assume  {text}"]

    body += [lambda f=f: family(f) for f in proof.families]
    body += [lambda h=h: hypothesis(h) for h in proof.hypotheses]
    body += [lambda d=d: [f"  define  {sstr(d.symbol)} := {sstr(d.rhs)}"] for d in proof.definitions]
    lines = [f"{theorem.title}"]
    for done, part in enumerate(body):
        if len(lines) > STATEMENT_LINES:
            lines.append(f"  …       {len(body) - done} more scalars, families, hypotheses and definitions")
            break
        lines += part()
    lines.append(f"  then    {sstr(proof.claim.lhs)} = {sstr(proof.claim.rhs)}")
    return lines


def claim_line(theorem) -> str:
    """The claim a theorem proves, on one line in the package's notation, and how many assumptions it rests on
    (what ``derive check`` prints of each of several certificates; ``--full``: :func:`statement_lines`)."""
    proof = theorem.proof
    sstr, _ = _statement_printer(proof)
    assumptions = len(proof.hypotheses) + len(proof.definitions) + sum(f.is_defined for f in proof.families)
    given = f"  (under {assumptions} assumption{'s' * (assumptions != 1)}: --full lists them)" if assumptions else ""
    return f"  proves  {sstr(proof.claim.lhs)} = {sstr(proof.claim.rhs)}{given}"


def _statement_printer(proof):
    """(a function printing a term of ``proof``'s statement in the package's notation, its names kept apart; the
    scalar symbols with whether each is positive, or None for a statement too large to list them)."""
    from .plaintext import display_names, plain

    terms = [proof.claim.lhs, proof.claim.rhs]
    for h in proof.hypotheses:
        terms += [h.lhs.arguments[0]] if h.is_predicate else [h.lhs, h.rhs]
    terms += [side for d in proof.definitions for side in (d.symbol, d.rhs)]
    terms += [part for f in proof.families if f.is_defined for part in (f.base, f.step)]
    found = _symbols(terms)
    if found is None:  # too large to list its symbols: every name as it is, so that no two print alike
        return (lambda term: plain(term, LINE_CHARACTERS, raw=True)), None
    scalars, names = found
    shown = display_names([*names, *(f.name for f in proof.families)])
    return (lambda term: plain(term, LINE_CHARACTERS, shown)), scalars


def _symbols(terms) -> tuple[list, set[str]] | None:
    """(the scalar symbols of ``terms``, sorted by name, each with whether it is positive; the names of every symbol
    and family), or None when the terms have more than :data:`SCALAR_NODES` nodes."""
    from sympy import MatrixSymbol, Symbol

    from .kernel.scalars import scalar_kind
    from .kernel.terms import FamilyMatrix

    found, names, stack, nodes = set(), set(), list(terms), 0
    while stack:
        node = stack.pop()
        nodes += 1
        if nodes > SCALAR_NODES:
            return None
        if type(node) is Symbol:
            names.add(node.name)
            if scalar_kind(node) is not None:
                found.add(node)
        elif isinstance(node, (MatrixSymbol, FamilyMatrix)):
            names.add(str(node.name))
        stack += getattr(node, "args", ())
    return [(s, scalar_kind(s) == "positive") for s in sorted(found, key=lambda v: v.name)], names


def _builtin_library() -> dict:
    """Theorem id -> its statement, for the built-in theorems only: the statement data shipped in the package
    (``derive/data/statements.json``, generated from the checked theorems and pinned by a test), so comparing
    runs no proof code."""
    from .records import STATEMENT_DATA

    return json.loads(STATEMENT_DATA.read_text(encoding="utf-8"))


def _reference(path: str, library: dict, time_limit: float, work_limit: int | None) -> dict:
    """The statement a ``--reference`` certificate proves (checked first), for comparing others with it."""
    from .certificates import CertificateUnreadable, statement_of

    try:
        theorem = verify_certificate(read_certificate(path), library, time_limit=time_limit, work_limit=work_limit)
    except CertificateUnreadable as exc:
        raise UsageError(f"--reference: {safe_text(str(exc))}") from None
    except CertificateError as exc:
        raise UsageError(f"--reference {safe_text(path)} does not check: {_one_line(str(exc))}") from None
    return statement_of(theorem.proof)


def _cmd_export(args) -> int:
    from .export.coq import compile_export, coqc, export_certificates, write_export

    out = _output_dir(args.out)
    if args.unchecked:
        if args.ids:
            raise UsageError("give theorem ids or --unchecked certificates, not both")
        data = []
        for name in args.unchecked:
            try:
                data.append(read_certificate(name))
            except CertificateError as exc:
                raise UserInputError(f"{name}: {exc}") from None
    else:
        records = pipeline.prove(_select(args.ids))
        _failures(records)
        data = [json.loads(pipeline.certificate_text(r["theorem"])) for r in records if "theorem" in r]
    export = export_certificates(data, unchecked=bool(args.unchecked))
    write_export(export, out)
    for tid in export.exported:
        print(f"{tid:30} exported")
    for tid, reason in export.skipped.items():
        print(f"{tid:30} not exported: {reason}")
    refused = EXIT_NOT_EXPORTED if export.skipped else 0
    if export.skipped:
        print(f"{len(export.skipped)} of {len(export.skipped) + len(export.exported)} theorems not exported: "
              + ", ".join(export.skipped))
    if not args.compile:
        return refused
    if coqc() is None:
        raise UsageError("--compile needs coqc on PATH")
    results = compile_export(out, export.exported)
    for tid, verdict in results.items():
        print(f"{tid:30} coqc: {'accepted, closed under the global context' if verdict == 'ok' else verdict}")
    return refused if all(v == "ok" for v in results.values()) else 1


def _cmd_check(args) -> int:
    from .certificates import CertificateUnreadable, same_statement

    if args.library:
        raise UsageError("derive check runs no code but the package's own: it loads no --library and no entry "
                         "point. To require a theorem of your library, pass --reference CERT, a certificate of it "
                         "you trust (derive prove --library ... --certificates DIR writes one)")
    library = _builtin_library()
    if args.expect is not None and args.expect not in library:
        raise UsageError(f"--expect {safe_text(args.expect)}: no built-in theorem has that id (derive check loads "
                         "no library); for a theorem of your own library pass --reference CERT instead")
    time_limit = _positive("--time-limit", args.time_limit, float)
    work_limit = None if args.work_limit is None else _positive("--work-limit", args.work_limit, int)
    expected = _reference(args.reference, library, time_limit, work_limit) if args.reference else None
    statements, whose = library, {}  # a library theorem's statement is the library's; a certificate, its steps
    if expected is not None:  # and the reference's statement is the one checked, with each certificate's steps
        statements = {**library, expected["theorem"]: expected}
        whose = {expected["theorem"]: "the --reference certificate"}
    rejected = unreadable = interrupted = 0
    full = args.full or len(args.files) == 1  # one file: its whole statement; several: one claim line each
    for name in args.files:
        shown = safe_text(name)
        started = time.process_time()  # the guard (CPU seconds) covers reading and parsing the file too
        try:
            theorem = verify_certificate(read_certificate(name), statements, expect=args.expect,
                                         time_limit=time_limit, started=started, work_limit=work_limit,
                                         whose=whose)
            if expected is not None and not same_statement(theorem.proof, expected):
                raise CertificateError(f"it proves {theorem.id}, whose statement is not the one the --reference "
                                       f"certificate states ({expected['theorem']})")
        except CertificateUnreadable as exc:
            unreadable += 1
            print(f"{shown}: CANNOT READ: {_one_line(str(exc))}")
            continue
        except CertificateInterrupted as exc:  # no verdict: the machine was too slow or too busy, not the file
            interrupted += 1
            print(f"{shown}: {_one_line(str(exc))}")
            continue
        except CertificateError as exc:
            rejected += 1
            print(f"{shown}: REJECTED: {_one_line(str(exc))}")
            continue
        except (RecursionError, MemoryError) as exc:
            rejected += 1
            print(f"{shown}: REJECTED: the certificate is too large to check ({type(exc).__name__})")
            continue
        except Exception as exc:  # whatever a hostile file provokes: one line, never a traceback
            rejected += 1
            print(f"{shown}: REJECTED: {type(exc).__name__}: {_one_line(str(exc))}")
            continue
        cites = f"; cites {', '.join(t.id for t in theorem.proof.cites)}" if theorem.proof.cites else ""
        where = "library theorem" if theorem.id in library else "theorem"
        print(f"{shown}: verified {where} {theorem.id} ({theorem.steps} steps{cites})")
        if full:
            for line in statement_lines(theorem):
                print(f"  {_one_line(line)}")
        else:  # several files: the claim on one line (--full: the whole statement of each)
            print(f"  {_one_line(claim_line(theorem))}")
    if len(args.files) > 1:
        verified = len(args.files) - rejected - unreadable - interrupted
        parts = [f"{verified} verified"] + [f"{count} {what}" for count, what in (
            (rejected, "rejected"), (unreadable, "cannot be read"),
            (interrupted, "not checked (past --time-limit)")) if count]
        print(f"{len(args.files)} certificates: {', '.join(parts)}")
    return 1 if rejected else 2 if unreadable else EXIT_INTERRUPTED if interrupted else 0


def _positive(option: str, text: str, kind: type) -> float | int:
    """The value of a limit option: a positive finite number (``kind`` int: a positive whole number)."""
    try:
        value = kind(text)
    except ValueError:
        value = None
    if value is None or not (0 < value < float("inf")):
        what = "a positive finite number of seconds" if kind is float else "a positive whole number of units"
        raise UsageError(f"{option} must be {what}, not {safe_text(text)!r}")
    return value


def safe_text(text: str) -> str:
    """``text`` with every character that is not printable escaped: a file cannot add a line to the output,
    repaint it with terminal escapes, or stop it with text that cannot be encoded."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def _one_line(text: str, limit: int = 500) -> str:
    """A message on one line, escaped, cut to ``limit`` characters (a hostile term can be very long)."""
    text = safe_text(" ".join(text.splitlines()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Parser(argparse.ArgumentParser):
    """argparse's parser, saying "did you mean" for a mistyped choice: a subcommand (``derive prvoe``), a
    ``--backend``, a ``--style``, an ``export`` target."""

    def _check_value(self, action, value):
        if action.choices is not None and value not in action.choices:
            names = [str(choice) for choice in action.choices]
            close = difflib.get_close_matches(str(value), names, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise argparse.ArgumentError(action, f"invalid choice: {safe_text(str(value))!r}{hint} (choose from "
                                                 f"{', '.join(map(repr, names))})")
        super()._check_value(action, value)


#: The commands whose positional list may also follow their options (``derive export coq --out D --compile ID``,
#: ``derive check a.json --expect ID b.json``), and the argument that collects it.
_TRAILING = {"prove": "ids", "refute": "ids", "latex": "ids", "export": "ids", "check": "files"}


def _parse(argv: list[str] | None) -> argparse.Namespace:
    """The command line, its positional ids (or files) anywhere among the options: argparse stops a list at the
    first option after it (and fills ``nargs="*"`` before one: ``export coq --out D ID`` left ID over), so what it
    leaves over that is not an option is added to the list; an option it does not know is an error that suggests
    the closest one."""
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    if not extra:
        return args
    commands = parser._commands  # the subparsers by name
    target = commands.get(args.command, parser)
    unknown = [word for word in extra if word.startswith("-") and word != "-"]
    if unknown or args.command not in _TRAILING:
        first = (unknown or extra)[0]
        close = difflib.get_close_matches(first.split("=", 1)[0], list(target._option_string_actions), n=1) \
            if first.startswith("-") else []
        target.error(f"unrecognized arguments: {safe_text(' '.join(extra))}"
                     + (f" (did you mean {close[0]}?)" if close else ""))
    getattr(args, _TRAILING[args.command]).extend(extra)
    return args


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="derive", description="Machine-checked: OLS is single-layer linear attention.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    parser._commands = sub.choices
    listing = sub.add_parser("list", help="list the theorem ids")
    listing.set_defaults(run=_cmd_list)
    p = sub.add_parser("prove", help="check theorems with the kernel")
    p.add_argument("ids", nargs="*", metavar="ID", help="theorem ids (default: all)")
    p.add_argument("--json", action="store_true", help="print a JSON array instead of a table")
    p.add_argument("--certificates", metavar="DIR", help="write DIR/<id>.json for each verified theorem")
    p.add_argument("--witness", action="store_true",
                   help="also re-evaluate every step exactly on random instances and as identities (p = 1, 2; "
                        "chains too large for rational functions at random points)")
    p.add_argument("--search", action="store_true",
                   help="search every proof again (.auto) instead of replaying the recorded one, and record it")
    p.set_defaults(run=_cmd_prove)
    f = sub.add_parser("refute", help="look for a counterexample to each chain's claim (exit 1: one was found)")
    f.add_argument("ids", nargs="*", metavar="ID", help="theorem ids (default: those of --library, else all)")
    f.add_argument("--json", action="store_true", help="print a JSON array instead of text")
    f.add_argument("--seed", type=int, default=0, help="the search's seed (a verdict prints the one that replays it)")
    f.add_argument("--budget", default="120", metavar="N", help="instances tried per chain (default: 120)")
    f.add_argument("--library", action="append", metavar="MODULE_OR_FILE",
                   help="also load the theorems this module or .py file registers with @theorem (repeatable); "
                        "Python code that runs with your rights: load only code you trust")
    f.set_defaults(run=_cmd_refute)
    c = sub.add_parser("check", help="re-check certificate files from scratch and print what each proves")
    c.add_argument("files", nargs="+", metavar="FILE",
                   help="certificate files (.json, as derive prove --certificates or derive build writes them); "
                        "exit 0 all verified, 1 one rejected, 2 one cannot be read (missing, not JSON), 4 one not "
                        "checked within --time-limit")
    c.add_argument("--full", action="store_true",
                   help="print every certificate's whole statement (scalars, families, hypotheses, definitions, "
                        "claim; the default for one file), not only its claim")
    c.add_argument("--expect", metavar="ID", help="require each certificate to prove the built-in theorem ID")
    c.add_argument("--reference", metavar="CERT",
                   help="require each certificate to state what the certificate CERT (checked first) states: for "
                        "theorems of your own library, which derive check does not load")
    c.add_argument("--time-limit", default="12", metavar="SECONDS",
                   help="outer guard on the CPU time for each certificate, its dependencies included: past it "
                        "the certificate is not checked (exit 4), never rejected (default: 12, so any file is answered "
                        "within about 15 s)")
    c.add_argument("--work-limit", metavar="UNITS",
                   help="work budget of the kernel for each proof, in units of kernel work: past it the proof is "
                        "rejected, on any machine alike (default: proportional to the proof's size, "
                        "docs/kernel.md)")
    c.set_defaults(run=_cmd_check)
    styles = ("plain", "bold", "upright")
    t = sub.add_parser("latex", help="write LaTeX for checked theorems")
    t.add_argument("ids", nargs="*", metavar="ID", help="theorem ids (default: all)")
    t.add_argument("--out", required=True, metavar="DIR", help="directory for <id>.tex and " + ARTICLE)
    t.add_argument("--pdf", action="store_true", help="compile the article when a TeX engine is present")
    t.add_argument("--style", choices=styles, default="plain", help="matrix symbols: plain, bold or upright")
    t.add_argument("--symbols", metavar="FILE",
                   help="NAME = LATEX lines mapping the package's symbols to your own macros (docs/latex.md)")
    t.add_argument("--title", metavar="TEXT",
                   help="the article's title (plain text); with --library the article is yours, with none of the "
                        "package's prose (default: the first line of the first --library module's docstring)")
    t.add_argument("--author", action="append", metavar="NAME",
                   help="an author of the article (plain text; repeatable, in order)")
    t.add_argument("--abstract", metavar="FILE",
                   help="a UTF-8 file holding the article's abstract, plain text (every character means itself; "
                        "a blank line starts a paragraph); default: the rest of the first --library module's "
                        "docstring")
    t.set_defaults(run=_cmd_latex)
    g = sub.add_parser("codegen",
                       help="write NumPy, mpmath, array-API and Dask modules generated from checked theorems "
                            "(exit 4: some declared routes or terms not printed, each named; the others written)")
    g.add_argument("--backend", choices=(*pipeline.BACKENDS, "all"), default="all",
                   help="which module to write: numpy (ols_attention.py, float64 NumPy), mpmath (ols_attention_mp.py, "
                        "arbitrary precision), xp (ols_attention_xp.py, the array API: JAX, PyTorch, CuPy), dask "
                        "(ols_attention_dask.py, out-of-core tall X) or all (default: all)")
    g.add_argument("--out", required=True, metavar="DIR",
                   help="directory for ols_attention.py, ols_attention_mp.py, ols_attention_xp.py, "
                        "ols_attention_dask.py, and each --library's own modules, <library>_<backend>.py "
                        "(my_theorems_numpy.py for my_theorems.py)")
    g.add_argument("--strict", action="store_true",
                   help="kept for old scripts: codegen always exits with status 4 when a declared route or term "
                        "cannot be printed (it is named; the modules are written with the others)")
    g.set_defaults(run=_cmd_codegen)
    r = sub.add_parser("reproduce", help="run the paper's experiments headless: figures and summary.json")
    r.add_argument("--out", required=True, metavar="DIR")
    r.add_argument("--quick", action="store_true", help="smaller Hopfield and shift runs (for tests)")
    r.add_argument("--quiet", action="store_true",
                   help="no progress on stderr (a bar on a terminal; elsewhere a line as each stage starts and ends "
                        "and one every 10 s)")
    r.set_defaults(run=_cmd_reproduce)
    x = sub.add_parser("export", help="export checked proofs to another proof checker (coq)")
    x.add_argument("target", choices=("coq",), help="the proof checker (coq: Coq/MathComp)")
    x.add_argument("ids", nargs="*", metavar="ID", help="theorem ids (default: all)")
    x.add_argument("--out", required=True, metavar="DIR", help="directory for the .v files and _CoqProject")
    x.add_argument("--unchecked", nargs="+", metavar="CERT", help="export these certificate files as they are, "
                   "without the kernel's check (Coq checks them on its own)")
    x.add_argument("--compile", action="store_true", help="compile with coqc and report per theorem")
    x.set_defaults(run=_cmd_export)
    b = sub.add_parser("build", help="the main job: prove everything, write certificates, LaTeX, code, the PDF and "
                                     "the Coq files, compiled by coqc when it is on PATH (--no-coq: not compiled)",
                       description="Prove every theorem, then write DIR/certificates, DIR/latex (and the PDF when a "
                                   "TeX engine is installed), DIR/code, DIR/figures (the experiments' quick run, "
                                   "shown in the article) and DIR/coq, the Coq development, compiled with coqc "
                                   "when it is on PATH: most of a build's time where Coq is installed (--no-coq "
                                   "skips it).")
    b.add_argument("--out", default="build", metavar="DIR",
                   help="output directory (default: build). derive build writes only its five folders there, "
                        "certificates/, latex/, code/, coq/ and figures/: pip's build/lib and build/bdist.* (written "
                        "by python -m pip install . in a checkout) and the docs' build/docs sit beside them, untouched")
    b.add_argument("--no-coq", action="store_true",
                   help="do not compile the Coq development with coqc (the .v files are still written to DIR/coq; "
                        "derive export coq --compile compiles them later); the article then says \"exported\"")
    b.add_argument("--no-figures", action="store_true",
                   help="do not run the experiments' quick form (derive reproduce --quick, a few seconds) for the "
                        "article's figures; the article then has no Experiments section")
    b.add_argument("--witness", action="store_true",
                   help="also re-evaluate every proof with the independent witness (about a minute more); the "
                        "article's table of results reports it")
    b.add_argument("--no-pdf", action="store_true", help="do not compile the PDF")
    b.add_argument("--style", choices=styles, default="plain", help="matrix symbols: plain, bold or upright")
    b.add_argument("--symbols", metavar="FILE", help="as for latex: your macros for the package's symbols")
    b.set_defaults(run=_cmd_build)
    for command in (listing, p, t, g, x, b):
        command.add_argument("--library", action="append", metavar="MODULE_OR_FILE",
                             help="also load the theorems this module or .py file registers with @theorem "
                                  "(repeatable). A library, like an installed entry point, is Python code that runs "
                                  "with your rights: load only code you trust")
        command.add_argument("--record", metavar="DIR",
                             help="record the proofs of the --library theorems in DIR and replay them from there "
                                  "(default: <module>.proofs/ beside each library module)")
    c.add_argument("--library", action="append", metavar="MODULE_OR_FILE", help=argparse.SUPPRESS)
    return parser


_TEMPORARY = re.compile(r"^\.(?P<name>.+)\.[^.]+\.tmp$")  # write_atomic's temporary file beside its target


def _target(exc: OSError) -> str:
    """The file an output error is about: the target of an atomic write, never its temporary file."""
    name = exc.filename2 if exc.filename2 is not None else exc.filename
    if name is None:
        return "an output"
    path = Path(os.fsdecode(name))
    match = _TEMPORARY.match(path.name)
    return str(path.with_name(match["name"]) if match else path)


def _run(argv: list[str] | None) -> int:
    args = _parse(argv)
    with _one_command():
        return _dispatch(args)


@contextlib.contextmanager
def _one_command() -> Iterator[None]:
    """What one command loads is gone after it (its ``--library`` theorems and their cached checks, the record
    folders attached for them, the notes about records, the ids it selected), so that ``main`` called in-process
    leaves no global state behind: a later ``derive latex`` lists the built-in library, as in a fresh process."""
    from .authoring.registry import scoped_registrations
    from .records import store

    current = store()
    folders = None if current is None else dict(current.folders)
    problems = None if current is None else len(current.problems)
    try:
        with scoped_registrations():
            yield
    finally:
        _LOADED.clear()
        if current is not None:
            current.folders.clear()
            current.folders.update(folders)
            del current.problems[problems:]


def _dispatch(args) -> int:
    try:
        if hasattr(args, "library") and args.command != "check":  # check runs no code but the package's own
            _load_libraries(args.library, getattr(args, "record", None))
        return args.run(args)
    except (UsageError, UserInputError) as exc:
        print(f"derive: error: {exc}", file=sys.stderr)
        return 2
    except PipelineError as exc:
        print(f"derive: {exc}", file=sys.stderr)
        return 1
    except CannotWrite as exc:
        print(f"derive: error: {exc}", file=sys.stderr)
        return EXIT_CANNOT_WRITE
    except BrokenPipeError:
        raise
    except OSError as exc:  # an output that cannot be written (inputs report their own errors)
        print(f"derive: error: cannot write {_target(exc)}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_CANNOT_WRITE


def _drop_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush does not report the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a file (captured): nothing to flush at exit
        pass


def main(argv: list[str] | None = None) -> int:
    """Run the command; the exit status (see the module's docstring)."""
    try:
        try:
            return _run(argv)
        finally:
            sys.stdout.flush()  # here, not at exit: a reader that went away is seen while it can be handled
    except BrokenPipeError:  # derive list | head -1: stop quietly, like any Unix tool
        _drop_stdout()
        return EXIT_BROKEN_PIPE


if __name__ == "__main__":
    sys.exit(main())
