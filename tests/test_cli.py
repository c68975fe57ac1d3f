"""The ``derive`` command as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from derive.cli import main
from derive.library import THEOREM_IDS

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "derive", *args], capture_output=True, text=True, cwd=ROOT)


def test_list_names_every_theorem(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.splitlines()] == list(THEOREM_IDS)


def test_prove_all_prints_a_table(capsys):
    assert main(["prove"]) == 0
    out = capsys.readouterr().out
    for theorem_id in THEOREM_IDS:
        row = next(line for line in out.splitlines() if line.startswith(theorem_id + " "))
        assert row.split()[2] == "yes"
    assert f"{len(THEOREM_IDS)}/{len(THEOREM_IDS)} theorems verified" in out


def test_prove_json(capsys):
    assert main(["prove", "--json", "gauge_invariance", "preconditioned_gd"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in rows] == ["gauge_invariance", "preconditioned_gd"]
    for row in rows:
        assert set(row) == {"id", "status", "steps", "seconds"}
        assert row["status"] == "verified" and row["steps"] > 0 and row["seconds"] >= 0


def test_unknown_id_is_a_clear_error():
    result = run("prove", "ols_is_linear_attention", "no_such_theorem")
    assert result.returncode == 2
    assert "unknown theorem id 'no_such_theorem'" in result.stderr
    assert "Traceback" not in result.stderr


def test_python_m_and_console_script_agree():
    assert run("list").stdout == subprocess.run(
        [sys.executable, "-c", "import sys; from derive.cli import main; sys.exit(main(['list']))"],
        capture_output=True, text=True, cwd=ROOT).stdout


def test_certificates_written_and_checked(tmp_path):
    out = tmp_path / "certs"
    assert run("prove", "--certificates", str(out)).returncode == 0
    files = sorted(out.glob("*.json"))
    assert [f.stem for f in files] == sorted(THEOREM_IDS)
    assert not list(out.glob(".*"))  # no temporary files left behind
    result = run("check", *map(str, files))
    assert result.returncode == 0, result.stdout
    assert result.stdout.count(": verified library theorem") == len(THEOREM_IDS)
    lines = result.stdout.splitlines()  # issue 44: one claim line a file, in the notation, and a total
    total = len(THEOREM_IDS)
    assert len(lines) == 2 * total + 1 and lines[-1] == f"{total} certificates: {total} verified"
    assert "    proves  (XᵀX)⁻¹ = LLᵀ  (under 6 assumptions: --full lists them)" in lines, lines


def test_certificates_are_byte_identical_across_runs(tmp_path):
    for name in ("a", "b"):
        assert main(["prove", "--certificates", str(tmp_path / name), "icl_token_form"]) == 0
    assert (tmp_path / "a/icl_token_form.json").read_bytes() == (tmp_path / "b/icl_token_form.json").read_bytes()


def test_check_rejects_an_altered_certificate_and_names_the_step(tmp_path):
    assert main(["prove", "--certificates", str(tmp_path), "ols_is_linear_attention"]) == 0
    path = tmp_path / "ols_is_linear_attention.json"
    data = json.loads(path.read_text())
    data.pop("sha256")
    data["steps"][0]["rule"] = "transpose_sum"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    result = run("check", str(path), str(bad))
    assert result.returncode == 1
    assert f"{path}: verified" in result.stdout
    assert "bad.json: REJECTED" in result.stdout and "step 1 (rule transpose_sum)" in result.stdout


@pytest.mark.parametrize("content", ["[]", '{"format": "ols-transformer-certificate/1"}'])
def test_check_rejects_malformed_files_without_traceback(tmp_path, content):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    result = run("check", str(bad), str(tmp_path / "missing.json"))
    assert result.returncode == 1  # a certificate that does not check wins over one that cannot be read
    assert result.stdout.count("REJECTED") == 1 and "missing.json: CANNOT READ" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr
    assert run("check", str(tmp_path / "missing.json")).returncode == 2  # only unreadable: an I/O error


def test_certificates_into_a_file_is_a_usage_error(tmp_path):
    target = tmp_path / "file"
    target.write_text("keep me")
    result = run("prove", "--certificates", str(target))
    assert result.returncode == 2 and "not a directory" in result.stderr
    assert target.read_text() == "keep me"


def test_failing_proof_exits_non_zero_and_names_step_and_rule(monkeypatch, capsys):
    import dataclasses

    from derive.authoring import registry

    entry = registry.entry("preconditioned_gd")
    original = entry.build

    def broken():
        proof = original()
        steps = list(proof.claim.steps)
        steps[1] = dataclasses.replace(steps[1], rule="identity_mul")
        return dataclasses.replace(proof, claim=dataclasses.replace(proof.claim, steps=tuple(steps)))

    monkeypatch.setitem(registry._REGISTRY, "preconditioned_gd", dataclasses.replace(entry, build=broken))
    monkeypatch.setattr(registry, "_CHECKED", {})  # check again, not from the cache
    assert main(["prove", "--search", "orthogonal_inverse", "preconditioned_gd"]) == 1  # search: run the builder
    captured = capsys.readouterr()
    assert "preconditioned_gd/main step 2 (rule identity_mul)" in captured.err
    assert main(["prove", "--search", "--json", "preconditioned_gd"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["status"] == "failed"


def test_prove_with_the_witness(capsys):
    assert main(["prove", "--witness", "slow_fast_memory"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("slow_fast_memory"))
    assert "witness:" in row and "identities p = 1, 2" in row
    assert main(["prove", "--json", "--witness", "preconditioned_gd"]) == 0
    (record,) = json.loads(capsys.readouterr().out)
    assert record["witness"]["instances"] > 0 and record["witness"]["gradient"]


def test_version():
    import derive

    result = run("--version")
    assert result.returncode == 0 and result.stdout == f"derive {derive.__version__}\n"


def test_a_reader_that_goes_away_is_no_error():
    """derive list | head -1: the pipe closes before the output is written; no message, status 141 (SIGPIPE)."""
    process = subprocess.Popen([sys.executable, "-m", "derive", "list"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, cwd=ROOT)
    process.stdout.close()  # the reader is gone before derive writes anything
    stderr = process.stderr.read().decode()
    process.stderr.close()
    assert process.wait() == 141
    assert stderr == ""


def test_an_output_that_cannot_be_written_names_it(tmp_path):
    (tmp_path / "ols_attention.py").mkdir()  # in the way of the generated module, even for root
    result = run("codegen", "--backend", "numpy", "--out", str(tmp_path))
    assert result.returncode == 3
    assert result.stderr == f"derive: error: cannot write {tmp_path / 'ols_attention.py'}: Is a directory\n"
    assert not list(tmp_path.glob(".*"))  # the temporary file is gone too


def test_an_output_directory_that_cannot_be_created_is_a_write_error(tmp_path):
    (tmp_path / "file").write_text("keep me")
    result = run("prove", "--certificates", str(tmp_path / "file" / "certs"), "orthogonal_inverse")
    assert result.returncode == 3
    assert f"cannot create directory {tmp_path / 'file' / 'certs'}" in result.stderr
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1


def test_reproduce_without_matplotlib_says_so_first(tmp_path):
    out = tmp_path / "results"
    code = ("import sys; sys.modules['matplotlib'] = None; from derive.cli import main; "
            f"sys.exit(main(['reproduce', '--out', {str(out)!r}]))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "matplotlib" in result.stderr and "Traceback" not in result.stderr
    assert "python -m pip install 'matplotlib>=3.7'" in result.stderr
    assert result.stdout == "" and not out.exists()  # before computing (or creating) anything


def test_install_hints_work_from_a_checkout():
    """A message that suggests an install names `python -m pip install` and a target that exists from a checkout:
    a package from the index or the checkout itself (`.`), never a distribution name the index may not have."""
    import re

    hints = []
    for path in [*(ROOT / "derive").rglob("*.py"), *(ROOT / "notebooks").glob("*.py")]:
        for match in re.finditer(r"pip install[^\"\n]*", path.read_text(encoding="utf-8")):
            hints.append((path.name, match.group(0)))
    assert hints
    for name, hint in hints:
        assert "ols-transformer[" not in hint, (name, hint)
    text = "\n".join(path.read_text(encoding="utf-8") for path in (ROOT / "derive").rglob("*.py"))
    assert not re.search(r"(?<!-m )\bpip install", text)


def test_check_against_a_reference_checks_the_references_statement(tmp_path, capsys):
    """--reference CERT: a certificate verifies only as a proof of the reference's statement, whose steps it supplies
    (derive.kernel.check_stated); one that states anything else is rejected (issue 40 item 3)."""
    from sympy import Identity, MatrixSymbol

    from derive import ProofBuilder, dim, mul, transpose
    from derive.certificates import certificate_text
    from derive.kernel import check

    n = dim("n")
    U = MatrixSymbol("U", n, n)

    def proof(title, rhs_steps):
        b = ProofBuilder("mine", title, "words")
        b.main(transpose(transpose(mul(U, Identity(n))))).auto(U) if rhs_steps else \
            b.main(transpose(transpose(mul(U, Identity(n))))).rw("transpose_transpose").rw("identity_mul").qed(U)
        return check(b.proof())

    reference, other_steps, other_title = proof("T", True), proof("T", False), proof("another title", False)
    paths = {}
    for name, theorem in (("reference", reference), ("steps", other_steps), ("title", other_title)):
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(certificate_text(theorem))
    assert main(["check", "--reference", str(paths["reference"]), str(paths["steps"]), str(paths["title"])]) == 1
    out = capsys.readouterr().out
    assert f"{paths['steps']}: verified" in out
    assert f"{paths['title']}: REJECTED" in out and "--reference" in out
