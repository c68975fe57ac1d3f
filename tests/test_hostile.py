"""``derive check`` on hostile files: bounded time and memory, one line, never a traceback.

Each case runs the real command in a subprocess limited to 2 GB of address space and 15 s. A fuzzer
mutates certificate fields in-process (``HOSTILE_FUZZ=N`` for N mutants instead of the default).
"""

from __future__ import annotations

import copy
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sympy import Identity, Inverse, MatMul, MatrixSymbol, Symbol, srepr

from derive.authoring import checked
from derive.certificates import CertificateError, certificate_text, verify_certificate
from derive.library import LIBRARY

LIMIT_BYTES = 2 * 1024**3
LIMIT_SECONDS = 15
p = Symbol("p", integer=True, positive=True)
A = MatrixSymbol("A", p, p)


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_BYTES, LIMIT_BYTES))


def check_file(path: Path, *options: str, codes=(1, 2), cpu: bool = False) -> subprocess.CompletedProcess:
    """Run ``derive check`` on ``path``: done within 15 s of wall time (``cpu``: of the command's CPU time,
    for a file that the outer guard, which counts CPU seconds, ends on a loaded machine)."""
    start, used = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run([sys.executable, "-m", "derive", "check", *options, str(path)], capture_output=True,
                            text=True, timeout=(10 if cpu else 1) * LIMIT_SECONDS + 5, preexec_fn=_limits)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_seconds = after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime
    elapsed = cpu_seconds if cpu else time.monotonic() - start
    assert elapsed < LIMIT_SECONDS, f"{path.name}: {elapsed:.1f} s"
    assert "Traceback" not in result.stdout + result.stderr, result.stderr[-2000:]
    assert result.returncode in codes, result.stdout
    assert len(result.stdout.strip().splitlines()) == 1, result.stdout
    return result


@pytest.fixture(scope="module")
def base() -> dict:
    return json.loads(certificate_text(checked("orthogonal_inverse")))


def write(tmp_path: Path, data, name: str = "hostile.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_devices_and_links_to_them_are_read_with_a_bound(tmp_path):
    link = tmp_path / "zero.json"
    link.symlink_to("/dev/zero")
    for path in (Path("/dev/zero"), link):
        assert "larger than" in check_file(path).stdout
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)  # no writer: the read ends at once instead of waiting
    check_file(fifo)


def test_an_explicit_size_block_is_read_as_one_block_never_expanded_entry_by_entry(tmp_path, base):
    data = copy.deepcopy(base)
    block = "MatrixSymbol(Str('A'), Integer(100000), Integer(100000))"
    grid = f"BlockMatrix(ImmutableDenseMatrix([[{block}]]))"
    data["claim"]["lhs"] = grid
    assert "statement differs" in check_file(write(tmp_path, data)).stdout
    # not a library id: the kernel itself reads the 10⁵×10⁵ block (10¹⁰ entries, were SymPy to expand it)
    data["theorem"], data["hypotheses"], data["definitions"], data["lemmas"] = "hostile", [], [], []
    data.pop("sha256")
    data["claim"] = {"lhs": grid, "rhs": block}
    data["steps"] = [{"expr": grid, "rule": "transpose_sum"}]
    assert "main step 1 (rule transpose_sum)" in check_file(write(tmp_path, data, "kernel.json")).stdout


def test_huge_numbers_and_long_dimension_sums_are_refused(tmp_path, base):
    big = ", ".join(f"Rational(1, {10**39 + k})" for k in range(2000))
    data = copy.deepcopy(base)
    data["claim"]["lhs"] = f"MatrixSymbol(Str('A'), Add({big}), Integer(1))"
    check_file(write(tmp_path, data, "rationals.json"))
    terms = " , ".join(f"Symbol('n{k}', integer=True, positive=True)" for k in range(40))
    dim = f"Mul(Add({terms}), Add({terms}), Add({terms}))"
    data["claim"]["lhs"] = f"MatrixSymbol(Str('A'), {dim}, {dim})"
    check_file(write(tmp_path, data, "dims.json"))
    assert "digits" in check_file(write(tmp_path, '{"format": ' + "7" * 5000 + "}", "int.json")).stdout


def test_judgments_that_branch_on_every_equation_stay_cheap(tmp_path, base):
    data = copy.deepcopy(base)
    names = [MatrixSymbol(f"A{k}", p, p) for k in range(40)]
    data["hypotheses"] = [{"name": f"h{k}", "lhs": srepr(A), "rhs": srepr(A)} for k in range(40)]
    data["hypotheses"] += [{"name": f"e{k}", "lhs": srepr(names[k]), "rhs": srepr(names[(k + 1) % 40])}
                           for k in range(40)]
    data["definitions"], data["lemmas"], data["steps"] = [], [], []
    data["claim"] = {"lhs": srepr(Inverse(A)), "rhs": srepr(Inverse(A))}
    data["theorem"] = "hostile"  # not a library id: the kernel, not the statement comparison, must refuse it
    data.pop("sha256")
    assert "invertible" in check_file(write(tmp_path, data)).stdout


def test_a_long_product_with_one_step_is_checked_quickly(tmp_path, base):
    data = copy.deepcopy(base)
    long = MatMul(*[A] * 400, evaluate=False)
    middle = MatMul(*[A] * 200, Identity(p), *[A] * 200, evaluate=False)
    data["hypotheses"], data["definitions"], data["lemmas"] = [], [], []
    data["claim"] = {"lhs": srepr(long), "rhs": srepr(middle)}
    data["steps"] = [{"expr": srepr(middle), "rule": "inverse_cancel"}]
    data["theorem"] = "hostile"
    data.pop("sha256")
    assert "REJECTED" in check_file(write(tmp_path, data)).stdout


def test_a_product_too_long_to_print_is_one_line(tmp_path, base):
    data = copy.deepcopy(base)
    data["claim"]["lhs"] = "MatMul(" + ", ".join(["MatrixSymbol(Str('A'), Integer(2), Integer(2))"] * 20000) + ")"
    data["theorem"] = "hostile"
    check_file(write(tmp_path, data))


def test_not_utf8_and_not_json(tmp_path):
    bad = tmp_path / "bytes.json"
    bad.write_bytes(b"\xff\xfe\x00garbage")
    assert "UTF-8" in check_file(bad).stdout
    check_file(write(tmp_path, "{" * 100000, "deep.json"))


def _hostile(base: dict, **fields) -> dict:
    data = copy.deepcopy(base)
    data.update(fields)
    data["theorem"] = fields.get("theorem", "hostile")  # not a library id: no statement comparison first
    data.pop("sha256", None)
    return data


def test_three_thousand_bound_hypotheses_are_checked_in_near_linear_time(tmp_path, base):
    hyps = [{"name": f"h{i}", "lhs": srepr(MatrixSymbol(f"B{i}", p, p)), "rhs": srepr(Identity(p)),
             "forall": [srepr(MatrixSymbol(f"B{i}", p, p))]} for i in range(3000)]
    data = _hostile(base, hypotheses=base["hypotheses"] + hyps)
    data["claim"]["rhs"] = srepr(A)  # rejected at the very end, after every pass over the hypotheses
    result = check_file(write(tmp_path, data))
    assert "REJECTED" in result.stdout and "time budget" not in result.stdout


@pytest.mark.parametrize("pairs", [1000, 3000])
def test_collect_on_a_long_sum_of_pairs_is_near_linear(tmp_path, base, pairs):
    from sympy import MatAdd

    terms = [MatrixSymbol(f"A{i}", p, p) for i in range(pairs) for _ in range(2)]
    total = MatAdd(*terms, evaluate=False)
    collected = MatAdd(*[MatMul(2, MatrixSymbol(f"A{i}", p, p), evaluate=False) for i in range(pairs)],
                       evaluate=False)
    data = _hostile(base, hypotheses=[], definitions=[], lemmas=[], claim={"lhs": srepr(total), "rhs": srepr(total)},
                    steps=[{"expr": srepr(collected), "rule": "collect"}])
    result = check_file(write(tmp_path, data))
    assert "time budget" not in result.stdout


@pytest.mark.slow  # 10 s of parsing and refusing 20 MB: the README's run keeps under 5 minutes
def test_twenty_megabytes_of_distinct_expressions_end_within_the_time_guard(tmp_path, base):
    """Reading 20 MB of terms is linear work, but more than the guard allows: the file is not checked (exit 4),
    within the guard (CPU seconds), and never reported as rejected for it (or rejected, where the machine is
    fast)."""
    lemmas, size = [], 0
    while size < 19_000_000:
        k = len(lemmas)
        factors = [MatrixSymbol(f"A{k}_{i}", p, p) for i in range(400)]
        lhs, rhs = (srepr(MatMul(*f, evaluate=False)) for f in (factors, factors[::-1]))
        lemmas.append({"name": f"l{k}", "claim": {"lhs": lhs, "rhs": rhs}, "steps": []})
        size += len(lhs) + len(rhs)
    result = check_file(write(tmp_path, _hostile(base, lemmas=lemmas)), "--time-limit", "8", codes=(1, 4), cpu=True)
    if result.returncode == 4:
        assert result.stdout.endswith(": interrupted: not checked within the time limit of 8 s\n"), result.stdout
    else:
        assert "REJECTED" in result.stdout and "does not end at the right-hand side" in result.stdout


@pytest.mark.parametrize(("field", "value"), [
    ("theorem", "x\ud800"),
    ("theorem", "evil\n/tmp/x.json: verified library theorem ols_is_linear_attention"),
    ("rule", "\ud800"),
    ("rule", "hyp:a\u001b[2K\u001b[1Gcerts/x.json: verified"),
    ("lemma", "l\u001b[32m verified"),
])
def test_names_from_a_file_are_identifiers_and_everything_printed_is_escaped(tmp_path, base, field, value):
    data = copy.deepcopy(base)
    data.pop("sha256")
    if field == "theorem":
        data["theorem"] = value
    elif field == "rule":
        data["steps"][0]["rule"] = value
    else:
        data["lemmas"] = [{"name": value, "claim": data["claim"], "steps": []}]
    result = check_file(write(tmp_path, json.dumps(data).replace("\\\\", "\\")))
    assert "REJECTED" in result.stdout and ("not an identifier" in result.stdout or "IDENTIFIER" in result.stdout)
    assert result.stdout.strip().isprintable() and "\x1b" not in result.stdout


def test_a_file_name_with_a_newline_or_escape_is_printed_escaped(tmp_path, base):
    path = tmp_path / "a\nb\x1b[31m.json"
    path.write_text(json.dumps(base))
    result = subprocess.run([sys.executable, "-m", "derive", "check", str(path)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0 and result.stdout.splitlines()[0].endswith("(4 steps)")
    assert "\x1b" not in result.stdout and "a\\nb" in result.stdout


# --- a fuzzer over certificate fields ------------------------------------------------------

FUZZ = int(os.environ.get("HOSTILE_FUZZ", "150"))
_FRAGMENTS = ["Integer(0)", "Integer(-1)", "Rational(1, 2)", "MatrixSymbol(Str('X'), Integer(0), Integer(3))",
              "Identity(Integer(100000000))", "ZeroMatrix(Integer(2), Integer(3))", "Str('__import__')",
              "Symbol('p', integer=True, positive=True)", "MatPow(MatrixSymbol(Str('A'), Integer(2), Integer(2)), "
              "Rational(1, 3))", "Inverse(ZeroMatrix(Integer(2), Integer(2)), Integer(-1))", "true", "Q.invertible",
              "BlockMatrix(ImmutableDenseMatrix([[Identity(Integer(2))]]))"]


def _mutate(rng: random.Random, data):
    """One random change somewhere in the JSON tree."""
    if isinstance(data, dict) and data:
        key = rng.choice(sorted(data))
        action = rng.random()
        if action < 0.1:
            del data[key]
        elif action < 0.2:
            data[key] = rng.choice([None, 0, -1, 10**30, [], {}, "", "x" * 1000, True])
        else:
            data[key] = _mutate(rng, data[key])
        return data
    if isinstance(data, list) and data:
        index = rng.randrange(len(data))
        action = rng.random()
        if action < 0.15:
            data.pop(index)
        elif action < 0.3:
            data.insert(index, copy.deepcopy(data[index]))
        elif action < 0.4:
            data.reverse()
        else:
            data[index] = _mutate(rng, data[index])
        return data
    if isinstance(data, str):
        action = rng.random()
        if action < 0.3 and "(" in data:
            cut = rng.randrange(len(data))
            return data[:cut] + rng.choice(_FRAGMENTS) + data[cut:]
        if action < 0.5:
            return rng.choice(_FRAGMENTS)
        if action < 0.7:
            digits = [c for c in data if c.isdigit()]
            return data.replace(rng.choice(digits), str(rng.randrange(10)), 1) if digits else data + "1"
        if action < 0.85:
            return data.replace("Transpose", "Inverse", 1) if "Transpose" in data else data[::-1]
        return data[: rng.randrange(len(data) + 1)]
    return rng.choice([None, 1, "", [], {}])


def test_fuzzed_certificates_end_in_a_theorem_of_the_same_statement_or_a_certificate_error():
    rng = random.Random(20261123)
    sources = {tid: json.loads(certificate_text(checked(tid))) for tid in ("orthogonal_inverse", "spectral_precision",
                                                                           "preconditioned_gd", "slow_fast_memory")}
    accepted = 0
    for trial in range(FUZZ):
        tid = rng.choice(sorted(sources))
        mutant = copy.deepcopy(sources[tid])
        for _ in range(rng.randint(1, 3)):
            mutant = _mutate(rng, mutant)
        start = time.monotonic()
        try:
            theorem = verify_certificate(mutant, LIBRARY, time_limit=5)
        except CertificateError:
            continue
        finally:
            assert time.monotonic() - start < 10, f"trial {trial} took too long"
        accepted += 1
        if theorem.id in LIBRARY:  # a library id must state the library's theorem
            assert theorem.digest == checked(theorem.id).digest or theorem.proof.claim == checked(
                theorem.id).proof.claim, f"trial {trial}: accepted an altered statement of {theorem.id}"
    assert accepted < FUZZ  # the mutations do change things


# --- inside one Python process ------------------------------------------------------------


def test_a_subclass_of_a_kernel_node_type_is_refused():
    from derive import Chain, Proof, ProofError, check, mul
    from derive.kernel import Step

    class Anything(MatrixSymbol):  # equal to everything: would make AB = BA "follow" from any rule
        def __eq__(self, other):
            return True

        __hash__ = MatrixSymbol.__hash__

    B = MatrixSymbol("B", p, p)
    evil = Anything("E", p, p)
    for lhs, rhs, expr in ((mul(A, B), mul(B, A), mul(B, A)), (mul(A, evil), mul(evil, A), mul(evil, A))):
        proof = Proof("commute", "t", "s", (), (), (), Chain("main", lhs, rhs, (Step(expr, "identity_mul"),)))
        with pytest.raises(ProofError):
            check(proof)
    with pytest.raises(ProofError, match="Anything is not a matrix term"):
        check(Proof("evil", "t", "s", (), (), (), Chain("main", evil, evil, ())))


def test_check_takes_a_time_limit():
    from derive import ProofError, check
    from derive.kernel import CheckInterrupted
    from derive.library import build

    with pytest.raises(CheckInterrupted, match="interrupted: not checked within the time limit of 1e-09 s") as info:
        check(build("icl_token_form"), time_limit=1e-9)
    assert isinstance(info.value, ProofError)  # every way a check ends without a theorem is a ProofError
    assert check(build("icl_token_form"), time_limit=60).id == "icl_token_form"
