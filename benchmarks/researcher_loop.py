"""A researcher's loop on new identities and near-misses (issue 41), measured.

    python benchmarks/researcher_loop.py [--json OUT] [--jobs N] [--timeout S] [--no-coq] [--no-codegen]
                                         [--no-attempt] [--only NAME ...]

For each true identity of ``tests/data/researcher_identities.py``:

- ``auto``: the theorem's function run in a fresh process (``DERIVE_RECORDS=off``, so ``.auto`` searches), then
  the kernel's check; whether it proved, and the CPU time of each (``time.process_time``);
- ``refute``: :func:`derive.refute.refute_all` on its statement: a counterexample here is a false alarm (must be 0);
  any one reported is evaluated independently too;
- ``check``: ``derive prove --library FILE --certificates DIR --search`` writes the certificates, then
  ``derive check DIR/<id>.json`` in a fresh process per theorem;
- ``coq``: ``derive export coq --library FILE --compile``, per theorem: compiled, rejected (the first line of coqc's
  error) or not exported (why);
- ``codegen``: ``derive codegen --library FILE --backend all``: exit status, time, the routes it names as not
  printed; each declared route found in the generated NumPy module is called at random inputs and compared with
  an exact evaluation of the route's right-hand side.

For each near-miss of ``tests/data/researcher_near_misses.py``:

- ``refute``: the verdict of :func:`derive.refute.refute` on the bare statement and its CPU time;
- ``independent``: the counterexample's ``.values`` substituted into the statement as written (hypotheses,
  definitions, families, both sides) and evaluated with plain SymPy matrices, by :func:`independent_check` here,
  which shares nothing with :mod:`derive.refute` or :mod:`derive.witness`: the hypotheses must hold and the sides
  must differ;
- ``attempt``: ``.auto`` asked for a proof, as a researcher would: the ``ProofError``'s ``counterexample`` (its kind,
  CPU time, and the same independent check).

Every measurement runs in a subprocess with a timeout (``--timeout``, 120 s by default), so nothing hangs: a
timeout is reported as such.  Prints a table per part and totals; ``--json OUT`` writes every row.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IDENTITIES = ROOT / "tests" / "data" / "researcher_identities.py"
NEAR_MISSES = ROOT / "tests" / "data" / "researcher_near_misses.py"
TIMEOUT = 120.0


# --- the independent evaluation (plain SymPy matrices; nothing from derive.refute or derive.witness) -----------


class Undefined(ArithmeticError):
    """A term is not defined at the values (a singular inverse, a shape mismatch)."""


class Unsupported(TypeError):
    """A term this evaluator does not know how to read."""


class _Evaluator:
    """Exact values of terms at given values: dimensions and indices (Integer), scalars (Rational), matrices
    (SymPy ``Matrix`` of rationals) by name, free family members by (name, index); definitions and families with
    recurrences computed here."""

    def __init__(self, values, definitions=(), families=()):
        from sympy import Integer, Matrix, MatrixSymbol, Rational, Symbol

        self.dims, self.scalars, self.matrices, self.members = {}, {}, {}, {}
        for key, value in values.items():
            if type(key).__name__ == "FamilyMatrix":
                self.members[(key.name, int(key.index))] = Matrix(value)
            elif isinstance(key, MatrixSymbol):
                self.matrices[key.name] = Matrix(value)
            elif isinstance(key, Symbol):
                if key.is_integer:
                    self.dims[key] = Integer(value)
                else:
                    self.scalars[key] = Rational(value)
        self.numbers = {**self.dims, **self.scalars}
        self.families = {f.name: f for f in families}
        self.cache: dict = {}
        self.definitions = {d.symbol.name: d.rhs for d in definitions}
        self.defined: dict = {}  # the defined symbols computed so far (on first use)

    def define_all(self) -> None:
        """Compute every definition that can be computed at the values (those that cannot are left out)."""
        for name in self.definitions:
            try:
                self.matrix_named(name)
            except (Undefined, Unsupported):
                pass

    def matrix_named(self, name: str):
        if name not in self.defined:
            self.defined[name] = self.matrix(self.definitions[name])
        return self.defined[name]

    def integer(self, expr) -> int:
        from sympy import sympify

        value = sympify(expr).xreplace(self.numbers)
        if not value.is_Integer:
            raise Unsupported(f"{expr} is not an integer at these values")
        return int(value)

    def scalar(self, expr):
        """A scalar expression (numbers, scalar symbols, dimensions, traces of 1×1 terms) as a Rational."""
        from sympy import Rational, Symbol, Trace
        from sympy.matrices.expressions import MatrixExpr

        if expr.is_Number:
            return Rational(expr)
        if isinstance(expr, Symbol):
            if expr in self.numbers:
                return self.numbers[expr]
            raise Unsupported(f"no value for the scalar {expr}")
        if isinstance(expr, Trace):
            return self.matrix(expr.arg).trace()
        if isinstance(expr, MatrixExpr):
            raise Unsupported(f"{expr} is a matrix where a scalar is expected")
        args = [self.scalar(a) for a in expr.args]
        if expr.is_Pow and args[0] == 0 and args[1] < 0:
            raise Undefined(f"{expr}: division by 0")
        value = expr.func(*args)
        if not value.is_Rational:
            raise Unsupported(f"{expr} is not rational at these values ({value})")
        return value

    def matrix(self, expr):
        from sympy import (
            BlockMatrix,
            Identity,
            Inverse,
            MatAdd,
            MatMul,
            MatPow,
            Matrix,
            MatrixSymbol,
            Transpose,
            ZeroMatrix,
            zeros,
        )
        from sympy.matrices.expressions import MatrixExpr

        if isinstance(expr, MatrixSymbol):
            if expr.name in self.definitions:
                return self.matrix_named(expr.name)
            if expr.name in self.matrices:
                return self.matrices[expr.name]
            raise Unsupported(f"no value for the matrix {expr.name}")
        if type(expr).__name__ == "FamilyMatrix":
            return self.member(expr.name, self.integer(expr.index))
        if isinstance(expr, Identity):
            size = self.integer(expr.rows)
            return Matrix.eye(size)
        if isinstance(expr, ZeroMatrix):
            return zeros(self.integer(expr.rows), self.integer(expr.cols))
        if isinstance(expr, MatMul):
            coefficient, product = 1, None
            for arg in expr.args:
                if not isinstance(arg, MatrixExpr):
                    coefficient *= self.scalar(arg)
                    continue
                value = self.matrix(arg)
                if product is None:
                    product = value
                elif product.cols == value.rows:
                    product = product * value
                elif product.shape == (1, 1):  # a 1×1 matrix read as the number it holds
                    product = product[0, 0] * value
                elif value.shape == (1, 1):
                    product = product * value[0, 0]
                else:
                    raise Undefined(f"shapes {product.shape} and {value.shape} do not multiply in {expr}")
            return coefficient * product
        if isinstance(expr, MatAdd):
            values = [self.matrix(a) for a in expr.args]
            if len({v.shape for v in values}) != 1:
                raise Undefined(f"a sum of terms of shapes {[v.shape for v in values]}")
            total = values[0]
            for v in values[1:]:
                total = total + v
            return total
        if isinstance(expr, Inverse):
            value = self.matrix(expr.arg)
            if value.rows != value.cols or value.det() == 0:
                raise Undefined(f"{expr.arg} is not invertible at these values")
            return value.inv()
        if isinstance(expr, Transpose):
            return self.matrix(expr.arg).T
        if isinstance(expr, MatPow):
            base, exponent = self.matrix(expr.base), self.scalar(expr.exp)
            if not exponent.is_Integer or base.rows != base.cols:
                raise Unsupported(f"the power {expr}")
            if exponent < 0 and base.det() == 0:
                raise Undefined(f"{expr.base} is not invertible at these values")
            return base ** int(exponent)
        if isinstance(expr, BlockMatrix):
            grid = expr.blocks
            rows = []
            for i in range(grid.rows):
                row = [self.matrix(grid[i, j]) for j in range(grid.cols)]
                if len({b.rows for b in row}) != 1:
                    raise Undefined(f"a block row of blocks with {[b.rows for b in row]} rows")
                rows.append(Matrix.hstack(*row))
            if len({r.cols for r in rows}) != 1:
                raise Undefined("block rows of different widths")
            return Matrix.vstack(*rows)
        raise Unsupported(f"a term of kind {type(expr).__name__}: {expr}")

    def member(self, name: str, position: int):
        key = (name, position)
        if key in self.cache:
            return self.cache[key]
        family = self.families.get(name)
        if family is not None and family.base is not None:
            if position == 0:
                value = self.matrix(family.base)
            else:
                value = self.matrix(family.step.xreplace({family.index: position - 1}))
        elif key in self.members:
            value = self.members[key]
        else:
            raise Unsupported(f"no value for the family member {name}[{position}]")
        self.cache[key] = value
        return value


def _predicate_fails(evaluator: _Evaluator, predicate) -> str | None:
    from sympy import Q

    value = evaluator.matrix(predicate.arguments[0])
    if value.rows != value.cols:
        return f"applied to a {value.rows}x{value.cols} matrix"
    function = predicate.function
    if function == Q.invertible:
        return None if value.det() != 0 else "singular"
    if function == Q.symmetric:
        return None if value == value.T else "not symmetric"
    if function == Q.diagonal:
        return None if value.is_diagonal() else "not diagonal"
    if function == Q.positive_definite:  # xᵀAx > 0 for x ≠ 0, without symmetry: the symmetric part is
        part = (value + value.T) / 2
        return None if part.is_positive_definite else "not positive definite (xᵀAx > 0 fails for some x)"
    return f"unknown predicate {function}"


def independent_check(statement, values, lhs=None, rhs=None) -> dict:
    """Evaluate ``statement`` (a Proof skeleton or a registry Statement: hypotheses, definitions, families, claim)
    at ``values`` (a counterexample's ``.values``) with plain SymPy matrices.  ``lhs``/``rhs``: the claim's sides as
    the user wrote them (default: the statement's claim).  Returns ``{"confirmed": hypotheses hold and the sides
    differ, "hypotheses_hold", "failed" (names of hypotheses that fail, with why), "differ", "definitions_agree"
    (the reported values of defined symbols equal those computed here), "reason"}``."""
    from sympy import Matrix, MatrixSymbol, Symbol
    from sympy.assumptions.assume import AppliedPredicate

    proof = getattr(statement, "proof", statement)
    out = {"confirmed": False, "hypotheses_hold": False, "failed": [], "differ": False, "definitions_agree": None,
           "reason": ""}
    try:
        evaluator = _Evaluator(values, proof.definitions, proof.families)
    except (Undefined, Unsupported, ValueError) as exc:
        out["reason"] = f"definitions: {exc}"
        return out
    evaluator.define_all()
    reported = {k.name: Matrix(v) for k, v in values.items() if isinstance(k, MatrixSymbol)}
    out["definitions_agree"] = all(reported[name] == value for name, value in evaluator.defined.items()
                                   if name in reported)
    for h in (*proof.hypotheses, *proof.claim.hypotheses):
        try:
            if h.forall:
                out["failed"].append(f"{h.name}: has bound symbols (not checked here)")
            elif isinstance(h.lhs, AppliedPredicate):
                why = _predicate_fails(evaluator, h.lhs)
                if why:
                    out["failed"].append(f"{h.name}: {why}")
            elif isinstance(h.lhs, Symbol):  # a scalar hypothesis λ = r
                if evaluator.scalar(h.lhs) != evaluator.scalar(h.rhs):
                    out["failed"].append(f"{h.name}: {evaluator.scalar(h.lhs)} ≠ {evaluator.scalar(h.rhs)}")
            else:
                left, right = evaluator.matrix(h.lhs), evaluator.matrix(h.rhs)
                if left.shape != right.shape or left != right:
                    out["failed"].append(f"{h.name}: the sides differ")
        except (Undefined, Unsupported, ValueError) as exc:
            out["failed"].append(f"{h.name}: {exc}")
    out["hypotheses_hold"] = not out["failed"]
    try:
        left = evaluator.matrix(proof.claim.lhs if lhs is None else lhs)
        right = evaluator.matrix(proof.claim.rhs if rhs is None else rhs)
    except (Undefined, Unsupported, ValueError) as exc:
        out["reason"] = f"a side is not evaluated: {exc}"
        return out
    out["differ"] = left.shape != right.shape or left != right
    out["lhs"], out["rhs"] = str(left.tolist()), str(right.tolist())
    out["confirmed"] = out["hypotheses_hold"] and out["differ"]
    if not out["confirmed"]:
        out["reason"] = "; ".join(out["failed"]) or "the sides are equal at these values"
    return out


# --- loading the two files ----------------------------------------------------------------------------------


def load_near_misses():
    """The near-miss module (registers nothing)."""
    spec = importlib.util.spec_from_file_location("researcher_near_misses", NEAR_MISSES)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def identity_ids() -> list[str]:
    """The theorem ids of the identities file, in its order (read from its source: no import)."""
    return re.findall(r"^@theorem(?:\(.*?\))?\s*\ndef (\w+)\(", IDENTITIES.read_text(), flags=re.S | re.M)


def _first_line(text: str, limit: int = 300) -> str:
    text = (text or "").strip()
    return (text.splitlines() or [""])[0][:limit]


# --- workers (each in a fresh process) ----------------------------------------------------------------------


def _worker_identity(theorem_id: str) -> dict:
    from derive import ProofError, check
    from derive.authoring import registry
    from derive.refute import refute_all

    registry.load_library(str(IDENTITIES))
    row: dict = {"id": theorem_id}
    start = time.process_time()
    try:
        proof = registry.entry(theorem_id).build()
        row["auto_cpu"] = time.process_time() - start
        start = time.process_time()
        check(proof)
        row["check_cpu"] = time.process_time() - start
        row["auto"] = True
    except ProofError as exc:
        row["auto_cpu"] = time.process_time() - start
        row["auto"] = False
        row["error"] = " ".join(str(exc).split())[:900]
        verdict = getattr(exc, "counterexample", None)
        row["error_verdict"] = verdict.kind if verdict is not None else None
    start = time.process_time()
    statement = registry.statement(theorem_id)
    verdicts = refute_all(statement)
    row["refute_cpu"] = time.process_time() - start
    row["refute"] = {name: v.kind for name, v in verdicts.items()}
    row["refute_compared"] = {name: v.compared for name, v in verdicts.items()}  # instances where both sides held
    row["false_alarms"] = []
    for name, verdict in verdicts.items():
        if verdict.is_false:
            claim = next((c for c in (*statement.proof.lemmas, statement.proof.claim) if c.name == name), None)
            check_ = independent_check(statement, verdict.values,
                                       getattr(claim, "lhs", None), getattr(claim, "rhs", None))
            row["false_alarms"].append({"chain": name, "summary": verdict.summary()[:600],
                                        "independent": check_["confirmed"], "reason": check_["reason"]})
    return row


def _worker_near_miss(name: str, attempt: bool) -> dict:
    from derive import ProofError
    from derive.refute import refute

    module = load_near_misses()
    row: dict = {"name": name, "slip": module.SLIPS[name][0], "misses": module.SLIPS[name][1]}
    statement = module.NEAR_MISSES[name]()
    lhs, rhs = module.AS_WRITTEN[name]
    start = time.process_time()
    verdict = refute(statement)
    row["refute_cpu"] = time.process_time() - start
    row["verdict"] = verdict.kind
    row["summary"] = verdict.summary()[:700]
    if verdict.is_false:
        check_ = independent_check(statement, verdict.values, lhs, rhs)
        row["independent"] = check_["confirmed"]
        row["independent_reason"] = check_["reason"]
        row["definitions_agree"] = check_["definitions_agree"]
        row["sizes"] = {str(k): int(v) for k, v in verdict.values.items()
                        if getattr(k, "is_integer", False) and type(k).__name__ == "Symbol"}
    if attempt:
        start = time.process_time()
        try:
            module.NEAR_MISSES[name](attempt=True)
            row["attempt"] = "PROVED (a false statement was proved!)"
        except ProofError as exc:
            found = getattr(exc, "counterexample", None)
            row["attempt"] = found.kind if found is not None else "no verdict"
            row["attempt_message"] = " ".join(str(exc).split())[-400:]
            if found is not None and found.is_false:
                row["attempt_independent"] = independent_check(statement, found.values, lhs, rhs)["confirmed"]
        row["attempt_cpu"] = time.process_time() - start
    return row


def _run_worker(kind: str, name: str, timeout: float, attempt: bool = True) -> dict:
    env = {**os.environ, "DERIVE_RECORDS": "off", "PYTHONHASHSEED": "0"}
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", kind, name]
    if kind == "near_miss" and not attempt:
        command.append("--no-attempt")
    start = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"id" if kind == "identity" else "name": name, "timeout": True, "wall": time.monotonic() - start}
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"id" if kind == "identity" else "name": name, "crashed": True, "rc": done.returncode,
                "stderr": done.stderr.strip()[-800:], "wall": time.monotonic() - start}
    row = json.loads(lines[-1])
    row["wall"] = time.monotonic() - start
    return row


# --- the commands: prove/check, coq, codegen ----------------------------------------------------------------


def _derive(args: list[str], timeout: float, cwd: Path) -> tuple[int | str, str, float]:
    start = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-m", "derive", *args], capture_output=True, text=True,
                              timeout=timeout, cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)})
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return "timeout", out, time.monotonic() - start
    return done.returncode, done.stdout + done.stderr, time.monotonic() - start


def certificates_and_check(work: Path, ids: list[str], timeout: float, jobs: int) -> dict:
    """``derive prove --certificates`` once, then ``derive check`` per certificate, each in a fresh process."""
    certs, record = work / "certs", work / "record"
    rc, out, wall = _derive(["prove", "--library", str(IDENTITIES), "--certificates", str(certs), "--record",
                             str(record), "--search", "--json"], 4 * timeout, work)
    rows: dict = {"prove_rc": rc, "prove_wall": wall, "per": {}}
    try:
        start = out.index("[")
        for row in json.JSONDecoder().raw_decode(out[start:])[0]:
            rows["per"][row["id"]] = {"prove": row["status"], "prove_seconds": row.get("seconds")}
    except ValueError:
        rows["prove_output"] = out[-1500:]

    def check_one(theorem_id: str) -> tuple[str, dict]:
        path = certs / f"{theorem_id}.json"
        if not path.exists():
            return theorem_id, {"check": "no certificate"}
        rc_, out_, wall_ = _derive(["check", str(path)], timeout, work)
        status = "ok" if rc_ == 0 else ("timeout" if rc_ == "timeout" else f"rc {rc_}: {_first_line(out_)}")
        return theorem_id, {"check": status, "check_wall": wall_}

    with ThreadPoolExecutor(jobs) as pool:
        for theorem_id, result in pool.map(check_one, ids):
            rows["per"].setdefault(theorem_id, {}).update(result)
    return rows


def coq(work: Path, timeout: float) -> dict:
    rc, out, wall = _derive(["export", "coq", "--library", str(IDENTITIES), "--record", str(work / "record"),
                             "--out", str(work / "coq"), "--compile"], timeout, work)
    per: dict = {}
    for line in out.splitlines():
        match = re.match(r"^(\w+)\s+(coqc: .*|not exported: .*|exported)$", line)
        if not match:
            continue
        theorem_id, what = match.groups()
        if what.startswith("coqc: accepted"):
            per[theorem_id] = {"coq": "compiled"}
        elif what.startswith("coqc:"):
            per[theorem_id] = {"coq": "rejected", "coq_error": what[len("coqc: "):]}
        elif what.startswith("not exported"):
            per[theorem_id] = {"coq": "not exported", "coq_error": what[len("not exported: "):]}
        else:
            per.setdefault(theorem_id, {"coq": "exported, not compiled"})
    return {"rc": rc, "wall": wall, "per": per, "tail": out[-1500:] if rc not in (0, 1) else ""}


def _route_inputs(statement, names: list[str], route_names: dict, rng: random.Random, dims_value):
    """Values for the generated function's parameters ``names``: random rationals honouring the statement's
    symmetric and positive-definite predicates; each dimension ``dims_value(symbol)``.  Returns (values for the
    evaluator, arguments)."""
    from sympy import Matrix, MatrixSymbol, Q, Rational, Symbol
    from sympy.assumptions.assume import AppliedPredicate

    proof = statement.proof
    symbols: dict = {}

    def collect(expr):
        for node in getattr(expr, "atoms", lambda *a: ())(MatrixSymbol, Symbol):
            symbols.setdefault(node.name, node)

    for h in proof.hypotheses:
        collect(h.lhs.arguments[0] if isinstance(h.lhs, AppliedPredicate) else h.lhs)
        collect(h.rhs)
    for d in proof.definitions:
        collect(d.rhs)
    collect(proof.claim.lhs)
    collect(proof.claim.rhs)
    for lemma in proof.lemmas:
        collect(lemma.lhs)
        collect(lemma.rhs)
    kinds = {}
    for h in proof.hypotheses:
        if isinstance(h.lhs, AppliedPredicate) and isinstance(h.lhs.arguments[0], MatrixSymbol):
            kinds.setdefault(h.lhs.arguments[0].name, set()).add(h.lhs.function)
    dims = sorted({s for m in symbols.values() if isinstance(m, MatrixSymbol) for e in m.shape
                   for s in getattr(e, "free_symbols", ())}, key=str)
    dims += sorted({s for s in symbols.values() if isinstance(s, Symbol) and s.is_integer and s not in dims}, key=str)
    values: dict = {s: dims_value(s) for s in dims}
    by_python = {python: symbol for symbol, python in route_names.items()}
    arguments = {}
    for name in names:
        symbol = symbols.get(by_python.get(name, name))
        if symbol is None:
            raise Unsupported(f"parameter {name} names no symbol of the statement")
        if isinstance(symbol, MatrixSymbol):
            rows, cols = (int(e.xreplace(values)) for e in symbol.shape)
            value = Matrix(rows, cols, lambda i, j: Rational(rng.randint(-9, 9), rng.randint(1, 4)))
            wanted = kinds.get(symbol.name, set())
            if Q.positive_definite in wanted or Q.symmetric in wanted:
                value = value * value.T + Matrix.eye(rows)
            values[symbol] = value
            arguments[name] = [[float(e) for e in value.row(i)] for i in range(rows)]
        else:
            value = Rational(rng.randint(1, 9), rng.randint(1, 4))
            values[symbol] = value
            arguments[name] = float(value)
    return values, arguments


def routes_agree(module_path: Path) -> dict:
    """Call every route function of the generated NumPy module at random inputs and compare with the exact value of
    the route's right-hand side (the statement's chain, definitions computed here)."""
    import numpy as np

    from derive.authoring import registry

    registry.load_library(str(IDENTITIES))
    spec = importlib.util.spec_from_file_location("researcher_generated", module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    results = {}
    for theorem_id in identity_ids():
        for route in registry.entry(theorem_id).routes:
            function = getattr(module, route.name, None)
            if function is None:
                results[route.name] = {"theorem": theorem_id, "agrees": None, "why": "not in the module"}
                continue
            statement = registry.statement(theorem_id)
            chain = next(c for c in (*statement.proof.lemmas, statement.proof.claim) if c.name == route.lemma)
            side = chain.lhs if getattr(route, "side", "rhs") == "lhs" else chain.rhs
            try:
                names = list(inspect.signature(function).parameters)
                rng = random.Random(route.name)
                for attempt in range(30):  # sizes 3 first, then random sizes until the side is defined
                    sizes = (lambda _: 3) if attempt == 0 else (lambda _, r=rng: r.randint(1, 5))
                    values, arguments = _route_inputs(statement, names, dict(route.names), rng, sizes)
                    try:
                        exact = _Evaluator(values, statement.proof.definitions,
                                           statement.proof.families).matrix(side)
                        break
                    except Undefined:
                        continue
                else:
                    raise Undefined("no defined instance in 30 draws")
                printed = np.asarray(function(**{k: np.asarray(v) for k, v in arguments.items()}), dtype=float)
                expected = np.array(exact.tolist(), dtype=float)
                error = float(np.max(np.abs(printed.reshape(expected.shape) - expected)) /
                              max(1.0, float(np.max(np.abs(expected)))))
                results[route.name] = {"theorem": theorem_id, "agrees": error < 1e-8, "relative_error": error}
            except Exception as exc:  # a route that cannot be called or compared is reported, not fatal
                results[route.name] = {"theorem": theorem_id, "agrees": None, "why": f"{type(exc).__name__}: {exc}"}
    return results


def codegen(work: Path, timeout: float) -> dict:
    out_dir = work / "code"
    rc, out, wall = _derive(["codegen", "--library", str(IDENTITIES), "--record", str(work / "record"), "--out",
                             str(out_dir), "--backend", "all"], timeout, work)
    result = {"rc": rc, "wall": wall,
              "not_printed": [ln.strip() for ln in out.splitlines() if "not printed" in ln],
              "errors": [ln.strip() for ln in out.splitlines() if ln.startswith("derive: error")],
              "written": sorted(p.name for p in out_dir.glob("*.py")) if out_dir.exists() else []}
    numpy_module = out_dir / f"{IDENTITIES.stem}_numpy.py"
    if numpy_module.exists():
        command = [sys.executable, str(Path(__file__).resolve()), "--worker", "routes", str(numpy_module)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
            lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
            result["routes"] = json.loads(lines[-1]) if lines else {"error": done.stderr[-800:]}
        except subprocess.TimeoutExpired:
            result["routes"] = {"error": "timeout"}
    return result


# --- the report ---------------------------------------------------------------------------------------------


def _cpu(value) -> str:
    return "   —  " if value is None else f"{value:6.2f}"


def report(identities: list[dict], near: list[dict], checks: dict, coq_: dict, code: dict) -> dict:
    print("\nTrue identities (tests/data/researcher_identities.py)")
    print(f"{'theorem':42s} {'auto':>5s} {'cpu s':>6s} {'check':>6s} {'refute':>7s}  {'coq':14s} detail"
          "   (refute: ok(N) = no counterexample, both sides compared on N instances at least)")
    totals = {"identities": len(identities), "auto": 0, "auto_under_10s": 0, "check_ok": 0, "false_alarms": 0,
              "coq_compiled": 0, "coq_rejected": 0, "coq_not_exported": 0, "timeouts": 0}
    for row in identities:
        theorem_id = row["id"]
        per_check = checks.get("per", {}).get(theorem_id, {})
        per_coq = coq_.get("per", {}).get(theorem_id, {"coq": "not exported" if not row.get("auto") else "—",
                                                       "coq_error": "not proved" if not row.get("auto") else ""})
        if row.get("timeout") or row.get("crashed"):
            totals["timeouts"] += 1
            print(f"{theorem_id:42s} {'TIMEOUT' if row.get('timeout') else 'CRASH':>5s}  {row.get('stderr', '')[:200]}")
            continue
        proved = row.get("auto")
        totals["auto"] += bool(proved)
        totals["auto_under_10s"] += bool(proved) and row["auto_cpu"] < 10
        totals["check_ok"] += per_check.get("check") == "ok"
        totals["false_alarms"] += len(row.get("false_alarms", []))
        coq_state = per_coq.get("coq", "—")
        totals["coq_compiled"] += coq_state == "compiled"
        totals["coq_rejected"] += coq_state == "rejected"
        totals["coq_not_exported"] += coq_state == "not exported"
        compared = min((row.get("refute_compared") or {"": 0}).values())
        refuted = "FALSE!" if row.get("false_alarms") else f"ok({compared})"
        detail = per_coq.get("coq_error", "")
        if not proved:
            detail = f"auto: {row.get('error', '')[:160]} | {detail}"
        print(f"{theorem_id:42s} {'yes' if proved else 'NO':>5s} {_cpu(row.get('auto_cpu'))} "
              f"{'ok' if per_check.get('check') == 'ok' else 'NO':>6s} {refuted:>7s}  {coq_state:14s} {detail[:200]}")
    print("\nNear-misses (tests/data/researcher_near_misses.py)")
    print(f"{'near-miss':36s} {'verdict':>9s} {'cpu s':>6s} {'indep.':>6s} {'attempt':>9s} {'cpu s':>6s}  sizes / slip")
    totals.update(near_misses=len(near), near_false=0, near_confirmed=0, near_under_10s=0, attempt_false=0,
                  attempt_confirmed=0, attempt_under_60s=0)
    for row in near:
        if row.get("timeout") or row.get("crashed"):
            totals["timeouts"] += 1
            print(f"{row['name']:36s} {'TIMEOUT' if row.get('timeout') else 'CRASH':>9s} {row.get('stderr', '')[:200]}")
            continue
        is_false = row["verdict"] == "false"
        totals["near_false"] += is_false
        totals["near_confirmed"] += bool(row.get("independent"))
        totals["near_under_10s"] += is_false and bool(row.get("independent")) and row["refute_cpu"] < 10
        attempt = row.get("attempt", "—")
        totals["attempt_false"] += attempt == "false"
        totals["attempt_confirmed"] += bool(row.get("attempt_independent"))
        totals["attempt_under_60s"] += row.get("attempt_cpu") is not None and row["attempt_cpu"] < 60
        independent = {True: "yes", False: "NO", None: "—"}[row.get("independent")]
        sizes = ", ".join(f"{k}={v}" for k, v in row.get("sizes", {}).items())
        print(f"{row['name']:36s} {row['verdict']:>9s} {_cpu(row['refute_cpu'])} {independent:>6s} "
              f"{attempt[:9]:>9s} {_cpu(row.get('attempt_cpu'))}  {sizes} | {row['slip'][:60]}")
    print("\nderive codegen --backend all:", f"exit {code.get('rc')}", f"{code.get('wall', 0):.1f} s wall",
          "; ".join(code.get("errors", [])))
    for line in code.get("not_printed", []):
        print("   ", line[:200])
    for name, result in (code.get("routes") or {}).items():
        print(f"    route {name:28s} {result}")
    print(f"derive export coq --compile: exit {coq_.get('rc')}, {coq_.get('wall', 0):.1f} s wall")
    print(f"derive prove --certificates: exit {checks.get('prove_rc')}, {checks.get('prove_wall', 0):.1f} s wall")
    routes = code.get("routes") or {}
    totals["routes_agree"] = sum(1 for r in routes.values() if isinstance(r, dict) and r.get("agrees"))
    totals["routes_declared"] = len(routes)
    print("\nTotals:", json.dumps(totals))
    return totals


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="OUT", help="write every row and the totals to OUT")
    parser.add_argument("--jobs", type=int, default=max(1, min(4, (os.cpu_count() or 2) - 1)))
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds per subprocess (default 120)")
    parser.add_argument("--no-coq", action="store_true")
    parser.add_argument("--no-codegen", action="store_true")
    parser.add_argument("--no-attempt", action="store_true", help="do not ask .auto to prove the near-misses")
    parser.add_argument("--only", nargs="*", help="only these theorem ids and near-miss names")
    parser.add_argument("--worker", nargs=2, metavar=("KIND", "NAME"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        kind, name = args.worker
        if kind == "identity":
            row = _worker_identity(name)
        elif kind == "near_miss":
            row = _worker_near_miss(name, attempt=not args.no_attempt)
        else:
            row = routes_agree(Path(name))
        print(json.dumps(row, default=str))
        return 0
    ids = [i for i in identity_ids() if not args.only or i in args.only]
    names = [n for n in load_near_misses().NEAR_MISSES if not args.only or n in args.only]
    with tempfile.TemporaryDirectory(prefix="researcher_loop_") as tmp, ThreadPoolExecutor(args.jobs) as pool:
        work = Path(tmp)
        identity_rows = list(pool.map(lambda i: _run_worker("identity", i, args.timeout), ids))
        near_rows = list(pool.map(lambda n: _run_worker("near_miss", n, args.timeout, not args.no_attempt), names))
        checks = certificates_and_check(work, ids, args.timeout, args.jobs) if ids else {}
        coq_ = coq(work, 5 * args.timeout) if ids and not args.no_coq else {}
        code = codegen(work, args.timeout) if ids and not args.no_codegen else {}
    totals = report(identity_rows, near_rows, checks, coq_, code)
    if args.json:
        Path(args.json).write_text(json.dumps({"identities": identity_rows, "near_misses": near_rows,
                                               "checks": checks, "coq": coq_, "codegen": code, "totals": totals},
                                              indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
