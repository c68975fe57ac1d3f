"""LaTeX: paper notation, one line per kernel step, deterministic, and it compiles."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sympy import Rational
from sympy.matrices.expressions import MatrixSymbol

from derive.cli import ARTICLE, main
from derive.kernel import check
from derive.kernel.terms import inv, mul, power, transpose
from derive.latex import article_latex, math, theorem_display, theorem_latex
from derive.latex.pdf import compile_pdf, tex_engine
from derive.library import LIBRARY, THEOREM_IDS
from derive.library.base import Lam, V, X, p

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def theorems():
    return [check(LIBRARY[tid]()) for tid in THEOREM_IDS]


def test_paper_notation():
    assert math(power(Lam, Rational(-1, 2))) == r"\Lambda^{-1/2}"
    assert math(transpose(X)) == r"X^{\top}"
    assert math(inv(mul(transpose(X), X))) == r"(X^{\top} X)^{-1}"
    assert math(transpose(mul(V, power(Lam, Rational(-1, 2))))) == r"(V \Lambda^{-1/2})^{\top}"
    assert math(MatrixSymbol("W_FFN", p, p)) == r"W_{\mathrm{FFN}}"
    assert math(MatrixSymbol("beta_hat", p, 1)) == r"\hat{\beta}"


def test_styles_and_symbol_names():
    assert math(mul(X, V), matrix_style="bold") == r"\mathbf{X} \mathbf{V}"
    assert math(Lam, matrix_style="bold") == r"\boldsymbol{\Lambda}"
    assert math(X, matrix_style="upright") == r"\mathrm{X}"
    assert math(mul(X, V), symbol_names={"X": r"\mathcal{D}"}) == r"\mathcal{D} V"
    with pytest.raises(ValueError, match="matrix_style"):
        math(X, matrix_style="fancy")


def test_one_line_per_kernel_step(theorems):
    theorem = next(t for t in theorems if t.id == "ols_is_linear_attention")
    text = theorem_latex(theorem)
    chains = re.findall(r"\\begin\{align\*\}(.*?)\\end\{align\*\}", text, re.S)
    proof = theorem.proof
    assert [c.count("&=") for c in chains] == [len(c.steps) for c in (*proof.lemmas, proof.claim)]
    assert text.count(r"\tag*") == theorem.steps
    assert r"(by $V V^{\top} = I$)" in text and r"(definition of $L$)" in text


def test_only_checked_theorems():
    with pytest.raises(TypeError, match="checked theorems only"):
        theorem_latex(LIBRARY["ols_is_linear_attention"]())
    with pytest.raises(TypeError):
        theorem_display(LIBRARY["ols_is_linear_attention"]())


def test_jupyter_display(theorems):
    shown = theorems[0]._repr_latex_()
    assert shown.startswith("$$") and shown.endswith("$$")
    assert r"X_{q} (X^{\top} X)^{-1} X^{\top} Y = X_{q} L (X L)^{\top} Y" in shown


def test_article_has_every_label_and_title(theorems):
    text = article_latex(theorems)
    for theorem in theorems:
        assert rf"\label{{thm:{theorem.id}}}" in text
        assert theorem.title in text
    assert text.count(r"\begin{theorem}") == len(theorems)


def test_latex_command_is_deterministic_and_atomic(tmp_path):
    for name in ("a", "b"):
        assert main(["latex", "--out", str(tmp_path / name)]) == 0
    files = sorted(f.name for f in (tmp_path / "a").iterdir())
    assert files == sorted([ARTICLE] + [f"{t}.tex" for t in THEOREM_IDS])
    for name in files:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_latex_to_an_existing_file_is_a_clear_error(tmp_path):
    target = tmp_path / "taken"
    target.write_text("keep")
    result = subprocess.run([sys.executable, "-m", "derive", "latex", "--out", str(target)],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 2 and "not a directory" in result.stderr and "Traceback" not in result.stderr
    assert target.read_text() == "keep"


def test_latex_under_a_file_is_a_clear_error(tmp_path):
    (tmp_path / "file").write_text("x")
    result = subprocess.run([sys.executable, "-m", "derive", "latex", "--out", str(tmp_path / "file" / "sub")],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 2 and "cannot create directory" in result.stderr


def test_pdf_without_tex_says_so_in_one_line(tmp_path):
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}
    result = subprocess.run([sys.executable, "-m", "derive", "latex", "ols_is_linear_attention", "--pdf",
                             "--out", str(tmp_path)], capture_output=True, text=True, cwd=ROOT, env=env)
    assert result.returncode == 0
    assert [line for line in result.stdout.splitlines() if "no TeX engine" in line]
    assert (tmp_path / ARTICLE).exists() and not (tmp_path / "ols_transformer.pdf").exists()


needs_tex = pytest.mark.skipif(tex_engine() is None or shutil.which("pdftotext") is None,
                               reason="TeX Live and poppler-utils are installed by .ci/run")


@needs_tex
def test_article_compiles_cleanly(tmp_path, theorems):
    article = tmp_path / ARTICLE
    article.write_text(article_latex(theorems))
    pdf = compile_pdf(article)
    log = article.with_suffix(".log").read_text(errors="replace")
    assert not [line for line in log.splitlines() if line.startswith("!")]
    assert "undefined" not in log.lower()
    assert "Overfull" not in log  # every proof line fits the page
    aux = article.with_suffix(".aux").read_text()
    for theorem in theorems:
        assert rf"\newlabel{{thm:{theorem.id}}}" in aux
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    flat = " ".join(text.split())
    for theorem in theorems:
        assert theorem.title in flat
    assert flat.count("(transpose of a product)") >= len(theorems)


@needs_tex
def test_build_writes_everything(tmp_path):
    assert main(["build", "--out", str(tmp_path)]) == 0
    assert sorted(p.stem for p in (tmp_path / "certificates").glob("*.json")) == sorted(THEOREM_IDS)
    assert (tmp_path / "latex" / "ols_transformer.pdf").stat().st_size > 10_000
