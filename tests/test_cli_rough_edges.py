"""The command line and the estimator without rough edges (issue 44 item 4): each item as a newcomer meets it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from derive.cli import main

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "derive", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300)


def _help(capsys, *args: str) -> str:
    with pytest.raises(SystemExit):
        main([*args, "--help"])
    return " ".join(capsys.readouterr().out.split())


# --- ids before or after the options ------------------------------------------------------------------------


def test_export_coq_takes_its_ids_after_the_options(tmp_path, monkeypatch, capsys):
    """``derive export coq --out D --compile ID`` was a usage error (argparse filled ``ids`` with nothing before
    ``--out``); now the ids go where the user puts them."""
    import derive.export.coq as coq

    compiled = []
    monkeypatch.setattr(coq, "coqc", lambda: "/usr/bin/coqc")
    monkeypatch.setattr(coq, "compile_export", lambda out, ids, **kw: compiled.extend(ids) or dict.fromkeys(ids, "ok"))
    assert main(["export", "coq", "--out", str(tmp_path / "a"), "--compile", "orthogonal_inverse"]) == 0
    assert compiled == ["orthogonal_inverse"]
    out = capsys.readouterr().out
    assert "orthogonal_inverse             exported" in out and "coqc: accepted" in out
    assert sorted(p.name for p in (tmp_path / "a").glob("*.v")) == ["OlsPrelude.v", "orthogonal_inverse.v"]
    # the other orders, and ids on both sides of an option
    assert main(["export", "coq", "orthogonal_inverse", "--out", str(tmp_path / "b")]) == 0
    assert main(["export", "--out", str(tmp_path / "c"), "coq", "orthogonal_inverse"]) == 0
    for folder in "bc":
        assert sorted(p.name for p in (tmp_path / folder).glob("*.v")) == ["OlsPrelude.v", "orthogonal_inverse.v"]


def test_ids_on_both_sides_of_an_option_are_all_taken(capsys):
    assert main(["prove", "orthogonal_inverse", "--json", "spectral_precision"]) == 0
    assert [row["id"] for row in json.loads(capsys.readouterr().out)] == ["orthogonal_inverse", "spectral_precision"]


def test_an_unknown_option_is_still_an_error_with_a_suggestion():
    result = run("build", "--no-pfd")
    assert result.returncode == 2 and "unrecognized arguments: --no-pfd (did you mean --no-pdf?)" in result.stderr
    result = run("list", "extra")  # list takes no ids
    assert result.returncode == 2 and "unrecognized arguments: extra" in result.stderr


def test_a_mistyped_subcommand_gets_a_suggestion():
    result = run("prvoe")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "invalid choice: 'prvoe' (did you mean 'prove'?)" in result.stderr
    result = run("codegen", "--backend", "nmupy", "--out", "x")
    assert result.returncode == 2 and "(did you mean 'numpy'?)" in result.stderr
    assert "did you mean" not in run("frobnicate").stderr  # nothing close: no guess


# --- a failing new theorem, summarised honestly ----------------------------------------------------------------

FALSE = textwrap.dedent('''
    from sympy import MatrixSymbol
    from derive import ProofBuilder, dim, mul, theorem

    n = dim("n")
    A, B = MatrixSymbol("A", n, n), MatrixSymbol("B", n, n)


    @theorem
    def false_commute():
        b = ProofBuilder("false_commute", "AB = BA (false)", "AB = BA.")
        b.main(mul(A, B)).auto(mul(B, A))
        return b.proof()
''')


def test_a_failing_new_theorem_is_summarised_as_not_proved(tmp_path):
    library = tmp_path / "mine.py"
    library.write_text(FALSE)
    result = run("prove", "--library", str(library), "--record", str(tmp_path / "records"))
    assert result.returncode == 1 and "FAILED false_commute/main step 1 (rule auto)" in result.stderr
    last = result.stdout.splitlines()[-1]
    assert last == "0/1 theorems verified; 1 not proved: false_commute (why: its FAILED line)", last
    assert "replayed" not in last and "searched" not in last  # a failed search is neither a replay nor a proof
    both = run("prove", "--library", str(library), "--record", str(tmp_path / "records"), "orthogonal_inverse",
               "false_commute")
    assert both.stdout.splitlines()[-1] == ("1/2 theorems verified; 1 replayed from their records, 0 searched; "
                                            "1 not proved: false_commute (why: its FAILED line)")


# --- derive build: Coq said and skippable; its output folders --------------------------------------------------


def test_build_says_it_compiles_coq_and_takes_no_coq(capsys):
    text = _help(capsys, "build")
    assert "Coq" in text and "coqc" in text and "--no-coq" in text
    assert "default: build" in text and "build/lib" in text  # the folder it shares with pip, documented
    summary = _help(capsys)
    assert "Coq files" in summary


@pytest.mark.slow  # a whole derive build (15 s): the README's run keeps under 5 minutes
def test_build_with_no_coq_writes_the_coq_files_and_never_runs_coqc(tmp_path, monkeypatch, capsys):
    import derive.experiments.paper as paper
    import derive.export.coq as coq

    monkeypatch.setattr(coq, "coqc", lambda: "/usr/bin/coqc")  # as if Coq were installed
    monkeypatch.setattr(coq, "compile_export", lambda *a, **k: pytest.fail("coqc ran despite --no-coq"))
    monkeypatch.setattr(paper, "reproduce", lambda *a, **k: pytest.fail("the experiments ran despite --no-figures"))
    out = tmp_path / "build"
    assert main(["build", "--no-pdf", "--no-coq", "--no-figures", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "coqc not run (--no-coq)" in said.splitlines() and said.splitlines()[-1].endswith("coqc not run (--no-coq)")
    assert len(list((out / "coq").glob("*.v"))) >= 21  # the prelude and every theorem, written all the same
    # derive build's own folders only: nothing that pip (build/lib, build/bdist.*) or Sphinx (build/docs) writes;
    # no figures/ with --no-figures (tests/test_latex.py's full build draws them), and no Experiments section
    assert sorted(p.name for p in out.iterdir()) == ["certificates", "code", "coq", "latex"]
    assert "Experiments" not in (out / "latex" / "ols_transformer.tex").read_text(encoding="utf-8")


# --- derive check: a total, the package's notation, not JSON is "cannot read" ---------------------------------


@pytest.fixture(scope="module")
def certificates(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("certs")
    assert main(["prove", "--certificates", str(out), "spectral_precision", "orthogonal_inverse",
                 "orthogonal_transpose_inverse", "sherman_morrison"]) == 0
    return out


def test_check_of_several_files_prints_a_claim_each_and_a_total(certificates, tmp_path, capsys):
    (tmp_path / "garbage.json").write_text("this is not JSON {")
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe\x00")
    files = [*sorted(map(str, certificates.glob("*.json"))), str(tmp_path / "garbage.json"),
             str(tmp_path / "binary.json"), str(tmp_path / "missing.json")]
    assert main(["check", *files]) == 2  # nothing rejected; three files that cannot be read
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "7 certificates: 4 verified, 3 cannot be read"
    assert len(lines) == 2 * 4 + 3 + 1  # two lines a verified file, one for each other, the total
    assert "    proves  (XᵀX)⁻¹ = LLᵀ  (under 6 assumptions: --full lists them)" in lines
    assert "    proves  (A + uvᵀ)⁻¹ = A⁻¹ - A⁻¹u(1 + vᵀA⁻¹u)⁻¹vᵀA⁻¹  (under 2 assumptions: --full lists them)" in lines
    assert not any("*" in line or ".T" in line for line in lines)  # no SymPy syntax
    for name in ("garbage.json", "binary.json"):
        line = next(line for line in lines if line.startswith(str(tmp_path / name)))
        assert ": CANNOT READ: " in line and "not a certificate" in line, line


def test_check_of_one_file_prints_its_whole_statement_in_the_notation(certificates, capsys):
    assert main(["check", str(certificates / "spectral_precision.json")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "    assume  XᵀX = VΛVᵀ" in lines and "    define  L := VΛ^(-1/2)" in lines
    assert lines[-1] == "    then    (XᵀX)⁻¹ = LLᵀ"  # one file: no total line
    files = sorted(map(str, certificates.glob("*.json")))
    assert main(["check", "--full", *files]) == 0  # --full: every statement whole, and the total
    out = capsys.readouterr().out
    assert out.count("    then    ") == 4 and "    assume  XᵀX = VΛVᵀ" in out and out.endswith("4 verified\n")


def test_a_file_that_is_not_json_exits_2_not_1(tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("{")
    result = run("check", str(bad))
    assert result.returncode == 2, result.stdout
    assert result.stdout.startswith(f"{bad}: CANNOT READ: ") and "not valid JSON" in result.stdout
    assert "REJECTED" not in result.stdout and "Traceback" not in result.stderr
    bad.write_text("[]")  # JSON, but not a certificate: that one is rejected
    assert run("check", str(bad)).returncode == 1


def test_the_notation_keeps_names_apart_and_products_readable():
    from sympy import Identity, MatPow, MatrixSymbol, Rational, Symbol

    from derive import add, dim, inv, mul, transpose
    from derive.plaintext import display_names, plain

    n, p = dim("n"), dim("p")
    X, V, Lam = MatrixSymbol("X", n, p), MatrixSymbol("V", p, p), MatrixSymbol("Lambda", p, p)
    lam = Symbol("lambda", positive=True)
    assert plain(mul(transpose(X), X)) == "XᵀX" and plain(mul(V, Lam, transpose(V))) == "VΛVᵀ"
    assert plain(inv(add(mul(transpose(X), X), lam * Identity(p)))) == "(λI + XᵀX)⁻¹"
    assert plain(MatPow(Lam, Rational(-1, 2))) == "Λ^(-1/2)"
    W = MatrixSymbol("W_Q", p, p)
    assert plain(mul(W, V)) == "W_Q·V" and plain(mul(MatrixSymbol("AB", p, p), V)) == "AB·V"  # never "ABV"
    assert display_names(["lambda", "λ", "Lambda"]) == {"lambda": "lambda", "λ": "λ", "Lambda": "Λ"}


def test_check_file_and_codegen_backend_have_help(capsys):
    check = _help(capsys, "check")
    assert "FILE certificate files" in check and "--full" in check
    codegen = _help(capsys, "codegen")
    assert "--backend {numpy,mpmath,xp,dask,all} which module to write" in codegen
    for backend in ("numpy", "mpmath", "xp", "dask"):
        assert f"{backend} (ols_attention" in codegen


# --- derive reproduce: progress in a log ------------------------------------------------------------------------


def test_progress_prints_lines_where_stderr_is_not_a_terminal(monkeypatch, capsys):
    """A full ``derive reproduce`` printed nothing for two minutes into a log; now a line as each stage starts, one
    every LOG_EVERY seconds with how far it got, one when it is done (capsys: stderr is not a terminal)."""
    from derive.experiments import paper

    clock = iter(float(t) for t in range(0, 1000, 4))  # each step takes 4 s
    monkeypatch.setattr(paper.time, "perf_counter", lambda: next(clock))
    assert list(paper.progress(range(10), "hopfield capacity", 10)) == list(range(10))
    paper.stage("figures")
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "hopfield capacity: 10 steps ..."
    assert any(line.startswith("hopfield capacity: 3/10 (30%), 12.0 s") for line in lines), lines
    assert lines[-2].startswith("hopfield capacity done in") and lines[-1] == "figures ..."
    assert 4 <= len(lines) <= 8
    assert list(paper.progress(range(3), "quiet", 3, enabled=False)) == [0, 1, 2]
    assert capsys.readouterr().err == ""


# --- the estimator without scikit-learn ---------------------------------------------------------------------


def test_the_estimator_without_scikit_learn_names_the_extra():
    code = "import sys; sys.modules['sklearn'] = None\ntry:\n import derive.sklearn\nexcept ImportError as e:\n" \
           " print(type(e).__name__, e)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.stdout.startswith("ModuleNotFoundError derive.sklearn needs scikit-learn"), result.stdout
    assert "`sklearn` extra" in result.stdout and 'python -m pip install ".[sklearn]"' in result.stdout
    assert 'python -m pip install "scikit-learn>=1.6"' in result.stdout
