"""LaTeX: paper notation, one line per kernel step, deterministic, and it compiles."""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
from sympy import Q, Rational
from sympy.matrices.expressions import Identity, MatrixSymbol

from derive import Hypothesis, ProofBuilder, check, dim, inv, mul, predicate, transpose
from derive.authoring.registry import checked, entries
from derive.cli import ARTICLE, main
from derive.kernel.terms import power
from derive.latex import (
    article_latex,
    article_theorems,
    display_groups,
    math,
    notation_rows,
    rule_text,
    theorem_display,
    theorem_latex,
)
from derive.latex.article import _printer as printer
from derive.latex.grouping import noise
from derive.latex.pdf import compile_pdf, tex_engine
from derive.latex.text import escape_text, latex_text
from derive.library import LIBRARY, THEOREM_IDS
from derive.library.base import Lam, V, X, cite_orthogonal, p

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def theorems():
    return [checked(tid) for tid in THEOREM_IDS]  # as this process checked them: not the same work twice


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


def _chains(theorem):
    return (*theorem.proof.lemmas, theorem.proof.claim)


def test_one_line_per_meaningful_rewrite_every_rule_named(theorems):
    theorem = next(t for t in theorems if t.id == "ols_is_linear_attention")
    text = theorem_latex(theorem)
    assert text.count(r"\olsstep") == sum(len(display_groups(c)) for c in _chains(theorem))
    assert r"{Theorem~\ref{thm:spectral_precision}}" in text
    for lemma in theorem.proof.lemmas:
        assert rf"\label{{lem:ols_is_linear_attention:{lemma.name}}}" in text
    for theorem in theorems:  # every step is on exactly one line, in order, and its rule is named there
        text = theorem_latex(theorem)
        lines = [line for line in text.splitlines() if line.startswith(r"\olsstep{")]
        groups = [g for chain in _chains(theorem) for g in display_groups(chain)]
        assert len(lines) == len(groups)
        pr = printer(article_theorems([theorem]), True, {})
        for chain in _chains(theorem):
            assert [s for g in display_groups(chain) for s in g.steps] == list(chain.steps)
        for line, group in zip(lines, groups, strict=True):
            assert line.startswith(r"\olsstep{" + pr.doprint_breakable(group.expr) + "}")
            for step in group.steps:
                if ":" not in step.rule:
                    assert rule_text(step.rule) in line


def test_no_zero_noise_is_displayed(theorems):
    """No displayed proof line carries a product or sum with a zero block (only a chain's own left side may)."""
    lines = 0
    for theorem in theorems:
        for chain in _chains(theorem):
            for group in display_groups(chain):
                lines += 1
                assert noise(group.expr)[0] == 0, (theorem.id, chain.name, math(group.expr))
    assert lines < sum(t.steps for t in theorems)


def test_only_checked_theorems():
    with pytest.raises(TypeError, match="checked theorems only"):
        theorem_latex(LIBRARY["ols_is_linear_attention"]())
    with pytest.raises(TypeError):
        theorem_display(LIBRARY["ols_is_linear_attention"]())


def test_jupyter_display(theorems):
    shown = next(t for t in theorems if t.id == "ols_is_linear_attention")._repr_latex_()
    assert shown.startswith("$$") and shown.endswith("$$")
    assert r"X_{q} (X^{\top} X)^{-1} X^{\top} Y = X_{q} L (X L)^{\top} Y" in shown


def test_article_has_every_label_and_title(theorems):
    text = article_latex(theorems)
    for theorem in theorems:
        assert rf"\label{{thm:{theorem.id}}}" in text
        assert escape_text(theorem.title) in text
    assert text.count(r"\begin{theorem}") == len(theorems)


def test_the_shared_facts_come_first(theorems):
    assert [t.id for t in theorems[:3]] == ["orthogonal_inverse", "orthogonal_transpose_inverse", "spectral_precision"]
    text = theorem_latex(theorems[2])
    assert r"definition of $\olsL$" in text


# --- citations ------------------------------------------------------------------------


def test_a_citation_names_the_theorem_and_its_instance(theorems):
    text = theorem_latex(next(t for t in theorems if t.id == "spectral_precision"))
    assert r"Theorem~\ref{thm:orthogonal_inverse} with $\olsU = \olsV$" in text
    assert r"Theorem~\ref{thm:orthogonal_transpose_inverse} with $\olsU = \olsV$" in text
    assert "d = p" not in text and r"\olsd = \olsp" not in text  # the dimension follows from the matrices
    plain = theorem_latex(next(t for t in theorems if t.id == "ols_is_linear_attention"))
    assert r"{Theorem~\ref{thm:spectral_precision}}" in plain and " with $" not in plain


def _labels(text: str) -> list[str]:
    return re.findall(r"\\begin\{theorem\}\[[^\]]*\]\\label\{thm:(\w+)\}", text)


def test_the_article_states_cited_theorems_first_each_once(theorems):
    ols = next(t for t in theorems if t.id == "ols_is_linear_attention")
    gauge = next(t for t in theorems if t.id == "gauge_invariance")
    text = article_latex([ols, gauge, ols])
    assert _labels(text) == ["orthogonal_transpose_inverse", "orthogonal_inverse", "spectral_precision",
                             "ols_is_linear_attention", "gauge_invariance"]
    # a cited theorem given after its citer moves before it; the full library keeps its order
    assert [t.id for t in article_theorems([ols, *theorems])][:4] == [
        "orthogonal_transpose_inverse", "orthogonal_inverse", "spectral_precision", "ols_is_linear_attention"]
    assert [t.id for t in article_theorems(theorems)] == list(THEOREM_IDS)
    for label in re.findall(r"\\ref\{(thm:\w+)\}", text):
        assert f"\\label{{{label}}}" in text  # no reference is undefined


def _lemma_statements(text: str) -> list[str]:
    blocks = re.findall(r"\\begin\{lemma\}(.*?)\\end\{lemma\}", text, re.S)
    return [re.sub(r"\\label\{[^}]*\}", "", b).strip() for b in blocks]


def _theorem_statements(text: str) -> list[str]:
    blocks = re.findall(r"\\begin\{theorem\}(.*?)\\end\{theorem\}", text, re.S)
    return [re.sub(r"^\[[^\]]*\]\\label\{[^}]*\}", "", b).strip() for b in blocks]


def test_the_article_states_no_lemma_twice(theorems):
    text = article_latex(theorems)
    lemmas = _lemma_statements(text)
    from derive.latex.article import _lemma_key

    # a lemma stated identically by two theorems (issue 42: DeltaNet's WY and UT lemmas) is stated once, then cited
    distinct = {_lemma_key(lemma) for t in theorems for lemma in t.proof.lemmas}
    assert len(lemmas) == len(distinct) > 10
    assert len(distinct) < sum(len(t.proof.lemmas) for t in theorems)
    assert len(set(lemmas)) == len(lemmas)
    statements = _theorem_statements(text)
    assert len(statements) == len(theorems) and len(set(statements)) == len(statements)


# --- the notation table ---------------------------------------------------------------


def _notation(text: str) -> str:
    start = text.index(r"\section{Index of notation}")
    return text[start:text.index(r"\end{longtable}", start)]


def test_the_glossary_comes_from_the_theorems(theorems):
    import derive.latex.printer as printer

    assert not hasattr(printer, "GLOSSARY")
    glossaries = {theorem_id: item.glossary for theorem_id, item in entries().items()}
    rows = {name: meanings for name, _, meanings in notation_rows(theorems, glossaries)}
    # the paper's design matrix, then the other theorems' own X (a block split, stored patterns, a prefix family)
    assert rows["X"][0][0] == "design matrix, one example $x_i^{\\top}$ per row"
    assert "ridge_is_linear_attention" in rows["X"][0][1] and "multi_head_attention" not in rows["X"][0][1]
    assert all(meanings for meanings in rows.values())  # every symbol is described
    assert ["slow_fast_memory"] in [ids for _, ids in rows["S"]]  # the singular values are Σ, not S
    assert [ids for _, ids in rows["U"]] == [["orthogonal_inverse", "orthogonal_transpose_inverse"],
                                             ["gauge_invariance"]]
    table = _notation(article_latex(theorems))
    assert r"$\olsSigma$ & diagonal matrix of the singular values of $X$ \\" in table
    assert (r"$\olsU$ & an orthogonal matrix (in Theorems~\ref{thm:orthogonal_inverse} and "
            r"\ref{thm:orthogonal_transpose_inverse}) \\" "\n" r" & left singular vectors of $X$ "
            r"(in Theorem~\ref{thm:gauge_invariance}) \\") in table
    assert r"$\olsWQ$ & query weights \\" in table  # described alike everywhere: once, without theorems
    assert table.count("$\\olsV$ & ") == 1 and "right singular vectors of $X$ (in Theorem~" in table


# --- a user's theorems ------------------------------------------------------------------

n, k, m = dim("n"), dim("k"), dim("m")
Y, X_q = MatrixSymbol("Y", n, k), MatrixSymbol("X_q", m, p)
Qf, R = MatrixSymbol("Q", n, p), MatrixSymbol("R", p, p)
GRAM = mul(transpose(X), X)


def _ols_through_qr(theorem_id: str = "user_ols_through_qr"):
    """OLS through a QR factor, with the public API only."""
    b = ProofBuilder(
        theorem_id, "OLS through a QR factor", "If X = QR with QᵀQ = I and R invertible, then ...",
        [Hypothesis("qr", X, mul(Qf, R)),
         Hypothesis("Q_orthonormal_columns", mul(transpose(Qf), Qf), Identity(p)),
         predicate("R_invertible", Q.invertible, R),
         predicate("gram_invertible", Q.invertible, GRAM)],
    )
    (b.lemma("gram", GRAM)
     .rw("hyp:qr", nth=0).rw("hyp:qr")
     .rw("transpose_product").rw("hyp:Q_orthonormal_columns").rw("identity_mul")
     .qed(mul(transpose(R), R)))
    (b.main(mul(X_q, inv(GRAM), transpose(X), Y))
     .rw("lemma:gram").rw("inverse_product")
     .rw("hyp:qr", at=X).rw("transpose_product")
     .rw("inverse_cancel").rw("identity_mul")
     .qed(mul(X_q, inv(R), transpose(Qf), Y)))
    return check(b.proof())


def _citing():
    """A user's theorem citing a built-in one, with an instance."""
    b = ProofBuilder("user_inverse_of_V", "The inverse of V", "If V Vᵀ = I then V⁻¹ = Vᵀ.",
                     [Hypothesis("V_orthonormal_rows", mul(V, transpose(V)), Identity(p))])
    b.main(inv(V)).rw("thm:orthogonal_inverse", instance=cite_orthogonal(V)).qed(transpose(V))
    return check(b.proof())


USER_GLOSSARY = {"user_ols_through_qr": {"Q": "orthonormal factor of $X = QR$", "R": "invertible factor"}}


def test_a_user_theorem_prints_like_a_builtin():
    theorem = _ols_through_qr()
    fragment = theorem_latex(theorem)
    assert fragment.startswith(r"\begin{theorem}[{OLS through a QR factor}]\label{thm:user_ols_through_qr}")
    assert r"$\olsR$ is invertible" in fragment and r"Lemma~\ref{lem:user_ols_through_qr:gram}" in fragment
    assert fragment.count(r"\olsstep") == sum(len(display_groups(c)) for c in _chains(theorem))
    with_glossary = _notation(article_latex([theorem], glossaries=USER_GLOSSARY))
    assert r"$\olsQ$ & orthonormal factor of $X = QR$ \\" in with_glossary
    assert r"$\olsR$ & invertible factor \\" in with_glossary
    # not described by this theorem: a description from what the theorem says of the symbol
    assert r"$\olsX$ & a given $\olsn \times \olsp$ matrix \\" in with_glossary
    assert r"$\olsn$ & a dimension (a positive integer) \\" in with_glossary
    without = article_latex([theorem])
    assert r"$\olsQ$ & a given $\olsn \times \olsp$ matrix \\" in _notation(without)
    assert " &  \\" not in _notation(without)  # no symbol goes undescribed
    assert _labels(without) == ["user_ols_through_qr"]
    # the article states the theorem as the fragment does; the fragment's complete chains are its appendix
    assert fragment[:fragment.index("\\end{theorem}")] in without
    appendix = without[without.index("\\appendix"):]
    chains = re.findall(r"\\begin\{olschain\}.*?\\end\{olschain\}", fragment, re.S)
    assert chains and all(chain in appendix for chain in chains)


def test_a_user_theorem_citing_a_builtin_one():
    theorem = _citing()
    fragment = theorem_latex(theorem)
    assert r"{Theorem~\ref{thm:orthogonal_inverse} with $\olsU = \olsV$}" in fragment
    text = article_latex([theorem])
    assert _labels(text) == ["orthogonal_inverse", "user_inverse_of_V"]
    assert r"$\olsU$ & an orthogonal matrix \\" in _notation(text)  # the cited theorem's glossary


def test_a_lemma_an_earlier_theorem_stated_is_cited_not_restated():
    first, second = _ols_through_qr(), _ols_through_qr("user_ols_through_qr_again")
    text = article_latex([first, second])
    assert len(_lemma_statements(text)) == 1
    assert r"The proof uses Lemma~\ref{lem:user_ols_through_qr:gram} again;" in text
    assert r"\ref{lem:user_ols_through_qr_again:gram}" not in text
    assert r"\ref{lem:user_ols_through_qr_again:gram}" in theorem_latex(second)  # a fragment stands alone


def test_two_theorems_with_one_id_cannot_share_an_article():
    other = _ols_through_qr("orthogonal_inverse")  # a different theorem under a built-in's id
    with pytest.raises(ValueError, match="two different theorems named 'orthogonal_inverse'"):
        article_theorems([checked("orthogonal_inverse"), other])
    with pytest.raises(ValueError, match="two different theorems"):
        article_latex([other, _citing()])


def test_the_article_is_deterministic(theorems):
    assert article_latex(theorems) == article_latex([checked(t) for t in THEOREM_IDS])


@pytest.mark.slow
def test_latex_command_is_deterministic_and_atomic(tmp_path):
    for name in ("a", "b"):
        assert main(["latex", "--out", str(tmp_path / name)]) == 0
    files = sorted(f.name for f in (tmp_path / "a").iterdir())
    assert files == sorted([ARTICLE, "olstransformer.sty", "references.bib"] + [f"{t}.tex" for t in THEOREM_IDS])
    for name in files:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def _run(*args):
    """``derive ARGS`` in this process (a command leaves no global state behind, tests/test_cli_state.py): no
    interpreter start and no replay of the library per call.  The exit status and what it printed."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(args))
    return types.SimpleNamespace(returncode=status, stdout=out.getvalue(), stderr=err.getvalue())


def test_latex_to_an_existing_file_is_a_clear_error(tmp_path):
    target = tmp_path / "taken"
    target.write_text("keep")
    result = _run("latex", "--out", str(target))
    assert result.returncode == 2 and "not a directory" in result.stderr and "Traceback" not in result.stderr
    assert target.read_text() == "keep"


def test_latex_under_a_file_is_a_clear_error(tmp_path):
    (tmp_path / "file").write_text("x")
    result = _run("latex", "--out", str(tmp_path / "file" / "sub"))
    assert result.returncode in (2, 3) and "cannot create directory" in result.stderr


def test_pdf_without_tex_says_so_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))  # no TeX engine on it
    result = _run("latex", "ols_is_linear_attention", "--pdf", "--out", str(tmp_path))
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
    assert flat.count("transpose of a product") >= len(theorems)
    assert flat.count("Proof") >= len(theorems)
    # a paper: abstract, introduction, the formalised paper cited by its arXiv id, conclusion, references
    for heading in ("Abstract", "1 Introduction", "Results", "Conclusion", "Index of notation", "References"):
        assert heading in flat, heading
    assert "Tan and Zhao [1]" in flat and "arXiv:2604.13656" in flat and "Goulet Coulombe" in flat
    assert flat.count("What it means.") == len(theorems)
    assert "[?]" not in flat and "??" not in flat


@needs_tex
def test_an_article_with_user_theorems_compiles_cleanly(tmp_path):
    article = tmp_path / ARTICLE
    article.write_text(article_latex([_citing(), _ols_through_qr(), _ols_through_qr("user_ols_through_qr_again")],
                                     glossaries=USER_GLOSSARY))
    compile_pdf(article)
    log = article.with_suffix(".log").read_text(errors="replace")
    assert not [line for line in log.splitlines() if line.startswith("!")]
    assert "undefined" not in log.lower() and "Overfull" not in log


@pytest.mark.slow
@needs_tex
def test_build_writes_everything(tmp_path):
    assert main(["build", "--out", str(tmp_path)]) == 0
    assert sorted(p.stem for p in (tmp_path / "certificates").glob("*.json")) == sorted(THEOREM_IDS)
    assert (tmp_path / "latex" / "ols_transformer.pdf").stat().st_size > 10_000
    # the experiments' quick run, drawn for the article and shown in its Experiments section
    assert sorted(p.name for p in tmp_path.iterdir()) == ["certificates", "code", "coq", "figures", "latex"]
    assert len(list((tmp_path / "figures").glob("*.png"))) == 5
    assert "\\section{Experiments}" in (tmp_path / "latex" / "ols_transformer.tex").read_text(encoding="utf-8")


def _sections(article: str) -> dict[str, str]:
    """Each theorem's subsection of the article, by theorem id."""
    out = {}
    for section in article.split("\\subsection{")[1:]:
        found = re.search(r"\\label\{thm:(\w+)\}", section.split("\\end{theorem}")[0])
        if found:
            out[found.group(1)] = section
    return out


def test_every_theorem_says_in_the_article_what_it_means(theorems):
    """Every library theorem's section ends with what it means for transformers, from its own module."""
    sections = _sections(article_latex(theorems))
    assert sorted(sections) == sorted(THEOREM_IDS)
    for theorem_id, section in sections.items():
        meaning = section.split("\\paragraph{What it means.}", 1)
        assert entries()[theorem_id].meaning, f"{theorem_id} has no meaning in its module"
        assert len(meaning) == 2 and len(meaning[1].split()) >= 25, theorem_id
        assert latex_text(entries()[theorem_id].meaning) in meaning[1]


def test_a_theorem_without_a_meaning_reads_as_its_statement():
    text = article_latex([_ols_through_qr()])
    meaning = _sections(text)["user_ols_through_qr"].split("\\paragraph{What it means.}", 1)[1]
    assert meaning.strip().startswith(escape_text("If X = QR with QᵀQ = I and R invertible, then"))
    given = article_latex([_ols_through_qr()], meanings={"user_ols_through_qr": "QR is $x_1$ & safe"})
    assert r"\paragraph{What it means.} QR is $x_1$ \& safe" in given


def test_a_meaning_must_be_text():
    from derive.authoring import theorem
    from derive.authoring.registry import LibraryError

    with pytest.raises(LibraryError, match="meaning must be a string"):
        theorem(id="meaning_not_text", meaning=["not", "text"])(lambda: None)
