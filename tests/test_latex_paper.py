"""The article as a paper: any title compiles, typography, the table of results, the bibliography."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from sympy.matrices.expressions import Identity, MatrixSymbol

from derive import Hypothesis, ProofBuilder, check, dim, inv, mul, transpose
from derive.authoring.registry import checked
from derive.latex import article_latex, math, theorem_latex
from derive.latex.bibliography import bib_text, bibliography_latex, cited_keys, references
from derive.latex.pdf import compile_pdf, tex_engine
from derive.latex.text import escape_text, latex_text

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = "Rate_of & 100% {new} #1 ~x^2 \\ XᵀX = Γ λ, naïve Øre ☃"


def _hostile_theorem():
    """A user's theorem whose title, statement and glossary hold every LaTeX special and some Unicode."""
    d = dim("d")
    U = MatrixSymbol("U_Gamma", d, d)
    b = ProofBuilder("user_hostile", HOSTILE, "If U Uᵀ = I then U⁻¹ = Uᵀ — 100% & _ {sure} #",
                     [Hypothesis("U_rows", mul(U, transpose(U)), Identity(d))])
    (b.main(inv(U)).to(mul(inv(U), Identity(d)), "identity_mul").rw("hyp:U_rows", at=Identity(d))
     .rw("inverse_cancel", at=mul(inv(U), U)).rw("identity_mul").qed(transpose(U)))
    return check(b.proof())


GLOSSARY = {"user_hostile": {"U_Gamma": "a rotation_matrix & 50% of Γ's #1 with $U^{\\top}U = I$ ᵀ",
                             "d": "size {unbalanced"}}


def test_plain_text_escapes_every_special_and_maps_unicode():
    assert escape_text("a_b & 100% {c} #1 ~ ^ \\") == (r"a\_b \& 100\% \{c\} \#1 \textasciitilde{} "
                                                       r"\textasciicircum{} \textbackslash{}")
    assert escape_text("XᵀX Γ λ") == r"X\ensuremath{^{\top}}X \ensuremath{\Gamma} \ensuremath{\lambda}"
    assert escape_text("naïve Sherman–Morrison") == r"na\"{\i}ve Sherman--Morrison"
    assert escape_text("☃") == r"\textnormal{[U+2603]}"  # no LaTeX for it: its code point, never an error
    assert escape_text("a\n  b") == "a b"


def test_latex_text_keeps_math_and_commands_and_escapes_slips():
    assert latex_text(r"ridge penalty, $\lambda > 0$") == r"ridge penalty, $\lambda > 0$"
    assert latex_text(r"see Theorem~\ref{thm:spectral_precision}, \cite{tan2026ols}") == (
        r"see Theorem~\ref{thm:spectral_precision}, \cite{tan2026ols}")
    assert latex_text("rate_of & 50% #1") == r"rate\_of \& 50\% \#1"
    assert latex_text("$x_1 & y$") == r"$x_1 \& y$"
    assert latex_text("costs $5") == r"costs \$5"  # an unpaired $ is a dollar sign
    assert latex_text("size {unbalanced") == r"size \{unbalanced"
    assert latex_text("Γ and $Γ$") == r"\ensuremath{\Gamma} and $\ensuremath{\Gamma}$"


def test_subscripts_are_subscripts():
    assert math(MatrixSymbol("L_lambda", 3, 3)) == r"L_{\lambda}"
    assert math(MatrixSymbol("ones_N", 3, 1)) == r"\mathbf{1}_{N}"
    assert math(MatrixSymbol("W_FFN", 3, 3)) == r"W_{\mathrm{FFN}}"


def test_hypotheses_are_separated_by_a_semicolon_and_a_space():
    text = theorem_latex(checked("ols_is_linear_attention"))
    assumption = text[text.index("Assume"):text.index("Define")]
    assert assumption.count(";\\olsnext\\ $") == 4 and not re.search(r";\\olsnext ?\$", assumption)


def test_the_table_of_results_has_a_row_per_theorem():
    theorems = [checked("ols_is_linear_attention"), checked("slow_fast_memory")]
    text = article_latex(theorems, results={"ols_is_linear_attention": {"coq": "checked", "witness": "8"},
                                            "slow_fast_memory": {"coq": "n - 1 is a difference"}})
    table = text[text.index(r"\section{Results}"):text.index(r"\section{The theorems}")]
    for theorem in [checked(i) for i in ("orthogonal_inverse", "orthogonal_transpose_inverse",
                                         "spectral_precision", *(t.id for t in theorems))]:
        row = next(line for line in table.splitlines() if line.startswith(f"\\ref{{thm:{theorem.id}}} &"))
        assert f"& {theorem.steps} &" in row and theorem.digest[:16] in row
    assert "& accepted & 8 \\\\" in table and "& not run & not run \\\\" in table  # no results: not run
    assert (r"Not exported to Coq (---), with the reason: Theorem~\ref{thm:slow_fast_memory}: n - 1 is a "
            r"difference.") in table


def test_the_bibliography_holds_what_the_article_cites():
    text = article_latex([checked("ols_is_linear_attention")])
    keys = cited_keys(text)
    assert keys[0] == "tan2026ols" and "gouletcoulombe2025ols" in keys
    bibliography = text[text.index(r"\begin{thebibliography}"):]
    assert [re.findall(r"\\bibitem\{(\w+)\}", bibliography).count(key) for key in keys] == [1] * len(keys)
    assert "arXiv:2604.13656" in bibliography and "Xiaojun Tan and Yuchen Zhao" in bibliography
    assert set(keys) <= set(references())
    with pytest.raises(KeyError, match="nobody2099"):
        bibliography_latex(r"\cite{tan2026ols,nobody2099}")


def test_references_bib_ships_with_the_package():
    package_data = (ROOT / "pyproject.toml").read_text().split("[tool.setuptools.package-data]", 1)[1]
    assert re.search(r'^"derive\.latex" = \["\*\.bib"\]', package_data, re.M)
    assert "@misc{tan2026ols," in bib_text() and "2604.13656" in references()["tan2026ols"]["eprint"]


def test_a_meaning_citing_a_theorem_the_article_lacks_prints_its_id():
    text = article_latex([checked("orthogonal_inverse")])
    assert r"\ref{thm:spectral_precision}" not in text and r"\texttt{spectral\_precision}" in text


def test_a_hostile_title_is_escaped_everywhere():
    text = article_latex([_hostile_theorem()], glossaries=GLOSSARY)
    assert f"\\subsection{{{escape_text(HOSTILE)}}}" in text
    assert f"\\begin{{theorem}}[{{{escape_text(HOSTILE)}}}]" in text
    assert article_latex([_hostile_theorem()], glossaries=GLOSSARY) == text  # deterministic


needs_tex = pytest.mark.skipif(tex_engine() is None or shutil.which("pdftotext") is None,
                               reason="TeX Live and poppler-utils are installed by .ci/run")


@needs_tex
def test_a_hostile_title_compiles_into_the_pdf(tmp_path):
    article = tmp_path / "hostile.tex"
    article.write_text(article_latex([_hostile_theorem()], glossaries=GLOSSARY))
    pdf = compile_pdf(article)
    log = article.with_suffix(".log").read_text(errors="replace")
    assert not [line for line in log.splitlines() if line.startswith("!")]
    flat = " ".join(subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True,
                                   check=True).stdout.split())
    # (\_ is a rule in the OT1 fonts: pdftotext reads it as a space)
    assert re.search(r"Rate.of & 100% \{new\} #1 .x.2 \\ X⊤ ?X = Γ λ, na.*ve Øre \[U\+2603\]", flat)
    assert re.search(r"rotation.matrix & 50% of Γ.s #1", flat) and "size {unbalanced" in flat
