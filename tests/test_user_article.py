"""A user's article is the user's (issue 44, item 2), and the package's abstract says what the build ran (item 1).

``derive latex --library FILE`` writes an article with the user's title, authors and abstract (``--title``,
``--author``, ``--abstract FILE``, or the library module's docstring), none of the package's own prose, every
cited theorem stated (a built-in one cites the package), every ``\\ref`` resolved and no raw theorem id.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from derive.authoring.registry import checked
from derive.cli import main
from derive.latex import Front, article_latex, front_from_docstring
from derive.latex.pdf import compile_pdf, tex_engine
from derive.latex.text import escape_text

DATA = Path(__file__).resolve().parent / "data"
ARTICLE = "ols_transformer.tex"

#: Sentences only the package's own article says: its title, abstract, introduction and conclusion.
BUILT_IN = ["Ordinary Least Squares Is Single-Layer Linear Attention", "\\author{The ols-transformer contributors}",
            "Tan and Zhao", "We formalise this result", "\\section{Introduction}", "What is formalised",
            "\\section{Conclusion}", "The OLS estimator is", "three judges", "for transformers"]

TITLE = "Centring & 100% of the_mean {new} #1 ~ XᵀX"
ABSTRACT = "First paragraph: 50% & R_x ^ {braces} #2 ~ λ.\n\nSecond paragraph, with $dollars$ and \\backslash."


def _latex(tmp_path: Path, data: str, *options: str) -> str:
    library = tmp_path / data  # a copy: the data file is only read
    shutil.copyfile(DATA / data, library)
    out = tmp_path / "out"
    argv = ["latex", "--library", str(library), "--record", str(tmp_path / "records"), "--out", str(out), *options]
    assert main(argv) == 0
    return (out / ARTICLE).read_text(encoding="utf-8")


def _labels_and_refs(text: str) -> tuple[set[str], set[str]]:
    return set(re.findall(r"\\label\{([^}]*)\}", text)), set(re.findall(r"\\ref\{([^}]*)\}", text))


def _assert_users(text: str) -> None:
    for sentence in BUILT_IN:
        assert sentence not in text, sentence
    labels, refs = _labels_and_refs(text)
    assert refs and refs <= labels, sorted(refs - labels)
    raw = re.findall(r"\\texttt\{([A-Za-z0-9]+(?:\\_[A-Za-z0-9]+)+)\}", text)
    assert raw == [], raw  # a theorem the article does not state is never printed as its id


def test_the_options_give_title_authors_and_abstract_escaped(tmp_path):
    abstract = tmp_path / "abstract.txt"
    abstract.write_text(ABSTRACT, encoding="utf-8")
    text = _latex(tmp_path, "user_theorems.py", "--title", TITLE, "--author", "Ada Lovelace", "--author",
                  "B & C", "--abstract", str(abstract))
    assert f"\\title{{{escape_text(TITLE)}}}" in text and "\\&" in escape_text(TITLE)
    assert "\\author{Ada Lovelace \\and B \\& C}" in text
    head = text[text.index("\\begin{abstract}"):text.index("\\end{abstract}")]
    assert escape_text("First paragraph: 50% & R_x ^ {braces} #2 ~ λ.") in head
    assert escape_text("Second paragraph, with $dollars$ and \\backslash.") in head
    assert "Three theorems" not in text  # the docstring gives way to the options
    _assert_users(text)


def test_a_cited_builtin_theorem_is_stated_and_cites_the_package(tmp_path):
    text = _latex(tmp_path, "user_theorems.py")
    assert "\\label{thm:spectral_precision}" in text  # cited by ols_coefficients_as_attention: stated
    assert "\\cite{olstransformer}" in text and "\\bibitem{olstransformer}" in text
    assert "\\paragraph{Source.}" in text
    _assert_users(text)


def test_the_docstring_gives_title_and_abstract_and_no_meaning_no_paragraph(tmp_path):
    text = _latex(tmp_path, "user_constructs.py")
    assert "\\title{A user's theorem file for the ones vector and diag(v) (issue 41, item 4), public " in text
    assert "the centring matrix C = I" in text[text.index("\\begin{abstract}"):text.index("\\end{abstract}")]
    assert "What it means" not in text  # no theorem of the file has a meaning=
    assert "``" not in text
    _assert_users(text)


@pytest.mark.skipif(tex_engine() is None, reason="no TeX engine")
def test_a_users_article_compiles_without_undefined_references(tmp_path):
    abstract = tmp_path / "abstract.txt"
    abstract.write_text(ABSTRACT, encoding="utf-8")
    _latex(tmp_path, "user_theorems.py", "--title", TITLE, "--author", "Ada", "--abstract", str(abstract))
    pdf = compile_pdf(tmp_path / "out" / ARTICLE)
    assert pdf.exists()
    log = (tmp_path / "out" / ARTICLE).with_suffix(".log").read_text(encoding="utf-8", errors="replace")
    assert "undefined" not in log.lower()
    assert "??" not in log


def test_an_unreadable_abstract_is_a_usage_error(tmp_path, capsys):
    shutil.copyfile(DATA / "user_constructs.py", tmp_path / "lib.py")
    out = tmp_path / "out"
    argv = ["latex", "--library", str(tmp_path / "lib.py"), "--record", str(tmp_path / "rec"), "--out", str(out),
            "--abstract", str(tmp_path / "missing.txt")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--abstract" in err and "missing.txt" in err and "cannot be read" in err
    assert "Traceback" not in err and not out.exists()


def test_front_from_docstring_defaults():
    assert front_from_docstring(None, default_title="Theorems of mine") == Front("Theorems of mine")
    front = front_from_docstring("My results.\n\nOne ``code`` paragraph\nover two lines.\n\nAnother.")
    assert front.title == "My results" and front.abstract == "One code paragraph\nover two lines.\n\nAnother."
    text = article_latex([checked("orthogonal_inverse")], front=front)
    assert "\\title{My results}" in text and "One code paragraph over two lines.\n\nAnother." in text


def _abstract(text: str) -> str:
    return text[text.index("\\begin{abstract}"):text.index("\\end{abstract}")]


def test_the_packages_abstract_says_what_the_build_ran():
    """Issue 44, item 1: the witness and Coq are claimed in the abstract only as the table of results says."""
    theorems = [checked("orthogonal_inverse"), checked("orthogonal_transpose_inverse")]
    ids = [t.id for t in theorems]
    nothing = _abstract(article_latex(theorems))
    assert "did not run for this article" in nothing and "judged by an independent witness" not in nothing
    assert "Coq did not check the theorems" in nothing and "compiled" not in nothing
    exported = _abstract(article_latex(theorems, results={i: {"coq": "exported"} for i in ids}))
    assert "exported but not compiled" in exported
    ran = _abstract(article_latex(theorems, results={i: {"coq": "checked", "witness": "20"} for i in ids}))
    assert "Every proof was also judged by an independent witness" in ran and "did not run" not in ran
    assert "compiled the exported proof script of every theorem" in ran
    some = _abstract(article_latex(theorems, results={ids[0]: {"coq": "checked", "witness": "20"},
                                                      ids[1]: {"coq": "rejected: no"}}))
    assert "For one of the two theorems, an independent witness" in some
    assert "proof scripts of one of the two theorems" in some and "Coq rejected one of them" in some
