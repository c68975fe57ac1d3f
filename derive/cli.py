"""The ``derive`` command: list, prove and check the theorem library.

Exit codes: 0 success, 1 a proof or certificate failed, 2 a usage error (bad id, bad path).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .certificate import CertificateError, certificate_text, read_certificate, verify_certificate, write_atomic
from .kernel import ProofError, check

__all__ = ["main"]


class UsageError(Exception):
    """A mistake in how the command was called: reported in one line, exit code 2."""


def _library():
    from proofs import LIBRARY

    return LIBRARY


def _select(ids: list[str]) -> list[str]:
    library = _library()
    unknown = [i for i in ids if i not in library]
    if unknown:
        raise UsageError(f"unknown theorem id {unknown[0]!r} (known: {', '.join(library)})")
    return list(dict.fromkeys(ids)) or list(library)


def _output_dir(path: str) -> Path:
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out} exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create directory {out}: {exc.strerror}") from None
    return out


def prove(ids: list[str]) -> list[dict]:
    """Build and check each theorem; one record per theorem (``theorem`` set when verified)."""
    library = _library()
    records = []
    for theorem_id in ids:
        start = time.perf_counter()
        record = {"id": theorem_id, "status": "failed", "steps": 0, "seconds": 0.0}
        try:
            proof = library[theorem_id]()
            record["steps"] = sum(len(c.steps) for c in (*proof.lemmas, proof.claim))
            record["theorem"] = check(proof)
            record["status"] = "verified"
        except ProofError as exc:
            record["error"] = str(exc)
        record["seconds"] = round(time.perf_counter() - start, 3)
        records.append(record)
    return records


def _cmd_list(args) -> int:
    for theorem_id, build in _library().items():
        print(f"{theorem_id:26} {build().title}")
    return 0


def _cmd_prove(args) -> int:
    ids = _select(args.ids)
    out = _output_dir(args.certificates) if args.certificates else None
    records = prove(ids)
    if out is not None:
        for record in records:
            if "theorem" in record:
                write_atomic(out / f"{record['id']}.json", certificate_text(record["theorem"]))
    if args.json:
        rows = [{k: r[k] for k in ("id", "status", "steps", "seconds", "error") if k in r} for r in records]
        print(json.dumps(rows, indent=1))
    else:
        print(f"{'theorem':26} {'steps':>5}  {'verified':8} {'seconds':>7}")
        for r in records:
            print(f"{r['id']:26} {r['steps']:5d}  {'yes' if r['status'] == 'verified' else 'NO':8} {r['seconds']:7.3f}")
        for r in records:
            if "error" in r:
                print(f"FAILED {r['error']}", file=sys.stderr)
        verified = sum(r["status"] == "verified" for r in records)
        print(f"{verified}/{len(records)} theorems verified" + (f"; certificates in {out}" if out else ""))
    return 0 if all(r["status"] == "verified" for r in records) else 1


def _cmd_check(args) -> int:
    failed = 0
    for name in args.files:
        try:
            theorem = verify_certificate(read_certificate(name), _library())
        except CertificateError as exc:
            failed += 1
            print(f"{name}: REJECTED: {exc}")
            continue
        print(f"{name}: verified {theorem.id} ({theorem.steps} steps)")
    return 1 if failed else 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="derive", description="Machine-checked: OLS is single-layer linear attention.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the theorem ids").set_defaults(run=_cmd_list)
    p = sub.add_parser("prove", help="check theorems with the kernel")
    p.add_argument("ids", nargs="*", metavar="ID", help="theorem ids (default: all)")
    p.add_argument("--json", action="store_true", help="print a JSON array instead of a table")
    p.add_argument("--certificates", metavar="DIR", help="write DIR/<id>.json for each verified theorem")
    p.set_defaults(run=_cmd_prove)
    c = sub.add_parser("check", help="re-check certificate files from scratch")
    c.add_argument("files", nargs="+", metavar="FILE")
    c.set_defaults(run=_cmd_check)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return args.run(args)
    except UsageError as exc:
        print(f"derive: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"derive: error: {exc.filename or ''}: {exc.strerror}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
