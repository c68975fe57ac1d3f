"""The package for users' papers: every fragment \\input into an amsart or article paper compiles cleanly."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_latex import _run  # derive ARGS in this process

from derive.cli import main
from derive.latex import RULE_TEXT, SymbolsError, display_groups, rule_text
from derive.latex.symbols import parse_symbols
from derive.library import THEOREM_IDS

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
needs_tex = pytest.mark.skipif(shutil.which("pdflatex") is None, reason="TeX Live is installed by .ci/run")


def test_rule_labels_are_words():
    from derive.kernel import AXIOMS

    for rule in (*AXIOMS, "collect"):
        text = rule_text(rule)
        assert text and "$" not in text and "\\" not in text
    assert RULE_TEXT["transpose_inverse"] == "transpose of an inverse"
    assert rule_text("some_new_axiom") == "rule some new axiom"  # an unknown rule still prints
    assert rule_text("odd#name_%") == r"rule odd\#name \%"


def test_grouping_is_generic():
    from sympy import Identity, MatrixSymbol, ZeroMatrix

    from derive.kernel import Chain, Step
    from derive.kernel.terms import add, mul

    n = 3
    A, B = MatrixSymbol("A", n, n), MatrixSymbol("B", n, n)
    Z, I = ZeroMatrix(n, n), Identity(n)
    steps = (Step(add(mul(A, B), mul(A, Z)), "distribute"), Step(add(mul(A, B), Z), "zero_mul"),
             Step(mul(A, B), "zero_add"), Step(mul(A, B, I), "identity_mul"), Step(mul(A, B, B), "hyp:h"),
             Step(mul(A, B, B), "frobnicate"))
    chain = Chain("main", mul(A, add(B, Z)), mul(A, B, B), steps)
    groups = display_groups(chain)
    assert [g.rules for g in groups] == [("distribute", "zero_mul", "zero_add"), ("identity_mul", "hyp:h"),
                                         ("frobnicate",)]


def test_symbols_file_is_parsed_safely():
    known = {"X", "X_q", "n"}
    assert parse_symbols("# mine\nX = \\mathbf{X}\n\n X_q=\\Xq \nn = N\n", known) == {
        "X": "\\mathbf{X}", "X_q": "\\Xq", "n": "N"}
    for text, message in [("X \\mathbf{X}", ":1: expected NAME = LATEX"), ("Y = Y", "unknown symbol 'Y'"),
                          ("X = {", "without its '}'"), ("X = }", "without its '{'"), ("X = #1", "unescaped '#'"),
                          ("X = 50%", "unescaped '%'"), ("X = a\nX = b", ":2: 'X' is mapped twice"),
                          ("X =", "no LaTeX"), ("__import__('os') = x", "not a symbol name"),
                          ("X = " + "x" * 300, "longer than")]:
        with pytest.raises(SymbolsError, match=re.escape(message)):
            parse_symbols(text, known, "s.txt")


def test_a_bad_symbols_file_is_a_usage_error(tmp_path):
    bad = tmp_path / "symbols.txt"
    for content in (b"X = \\mathbf{X\n", b"nope = x\n", b"\xff\xfe = x\n"):
        bad.write_bytes(content)
        out = tmp_path / "out"
        result = _run("latex", "orthogonal_inverse", "--symbols", str(bad), "--out", str(out))
        assert result.returncode == 2, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
        assert str(bad) in result.stderr and not list(out.glob("*.tex"))
    result = _run("latex", "orthogonal_inverse", "--symbols", str(tmp_path / "missing"), "--out", str(out))
    assert result.returncode == 2 and "cannot read" in result.stderr


def _paper(cls: str, inputs: list[str], preamble: str = "") -> str:
    body = "\n".join(f"\\input{{{name}.tex}}" for name in inputs)
    return (f"\\documentclass{{{cls}}}\n\\usepackage{{olstransformer}}\n{preamble}\\begin{{document}}\n"
            f"\\section{{Results}}\nOur theorems follow.\n{body}\n\\end{{document}}\n")


def _compile(directory: Path, name: str) -> str:
    for _ in range(2):  # twice: references
        subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", name], cwd=directory,
                       capture_output=True, text=True, timeout=300)
    return (directory / name).with_suffix(".log").read_text(errors="replace")


def _problems(log: str) -> list[str]:
    problems = [line for line in log.splitlines() if line.startswith("!")]
    problems += [line for line in log.splitlines() if "undefined" in line.lower()]
    problems += [f"overfull {w} pt" for w in re.findall(r"Overfull \\hbox \(([\d.]+)pt too wide", log)
                 if float(w) > 2]
    return problems


def _order(directory: Path) -> list[str]:
    """The fragments in an order that states each cited theorem first (the article's order)."""
    article = (directory / "ols_transformer.tex").read_text()
    return re.findall(r"\\begin\{theorem\}\[[^\]]*\]\\label\{thm:(\w+)\}", article)


@needs_tex
@pytest.mark.parametrize("cls", ["amsart", "article"])
def test_every_fragment_compiles_in_a_users_paper(tmp_path, cls):
    assert main(["latex", "--out", str(tmp_path)]) == 0
    sty = (tmp_path / "olstransformer.sty").read_text()
    assert sty.count("\\providecommand{\\ols") >= 30 and "\\RequirePackage{amsthm}" in sty
    ids = _order(tmp_path)
    assert sorted(ids) == sorted(THEOREM_IDS)
    (tmp_path / "paper.tex").write_text(_paper(cls, ids))
    log = _compile(tmp_path, "paper.tex")
    assert (tmp_path / "paper.pdf").exists() and _problems(log) == []
    text = subprocess.run(["pdftotext", str(tmp_path / "paper.pdf"), "-"], capture_output=True, text=True).stdout
    assert text.count("Proof") >= len(THEOREM_IDS) and "transpose of a product" in text


@needs_tex
def test_a_paper_with_its_own_theorems_and_notation(tmp_path):
    """The user's own theorem environment and macros, and theorems from a user's library file."""
    symbols = tmp_path / "symbols.txt"
    symbols.write_text("# my notation\nX = \\design\nY = \\mathbf{y}\nn = N\nQ = \\mathcal{Q}\n")
    result = _run("latex", "--library", str(DATA / "user_theorems.py"), "--symbols", str(symbols),
                  "--out", str(tmp_path), "--style", "bold")
    assert result.returncode == 0, result.stderr
    sty = (tmp_path / "olstransformer.sty").read_text()
    assert "\\providecommand{\\olsX}{\\design}" in sty and "\\providecommand{\\olsR}{\\mathbf{R}}" in sty
    preamble = ("\\newcommand{\\design}{\\mathsf{X}}\n\\newtheorem{theorem}{Theorem}[section]\n"
                "\\newtheorem{lemma}[theorem]{Lemma}\n")
    (tmp_path / "paper.tex").write_text(_paper("amsart", _order(tmp_path), preamble))
    log = _compile(tmp_path, "paper.tex")
    assert _problems(log) == []


def test_the_package_is_deterministic(tmp_path):
    for name in ("a", "b"):
        assert main(["latex", "--library", str(DATA / "user_theorems.py"), "--out", str(tmp_path / name)]) == 0
    for path in sorted((tmp_path / "a").iterdir()):
        assert path.read_bytes() == (tmp_path / "b" / path.name).read_bytes()
    # a fragment of the user's library cites a built-in theorem: its fragment is written too
    assert (tmp_path / "a" / "spectral_precision.tex").exists()
