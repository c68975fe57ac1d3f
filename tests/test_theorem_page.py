"""The documentation's theorem index (derive.latex.theorem_page): from re-checked certificates, every theorem
stated, linked, hashed, with its Coq status and its LaTeX fragment."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from derive.authoring.registry import checked, entries
from derive.certificates import CertificateError
from derive.latex.theorem_page import checked_certificates, markdown_text, theorem_page

ROOT = Path(__file__).resolve().parents[1]
PROOFS = ROOT / "proofs"
SMALL = ["orthogonal_inverse", "orthogonal_transpose_inverse", "spectral_precision", "fast_weight_delta_rule"]
NOT_EXPORTED, REASON = "fast_weight_delta_rule", "a construct the exporter would not model (an example)"


@pytest.fixture()
def proofs(tmp_path) -> Path:
    """A copy of proofs/ holding four theorems' certificates and Coq files, but for fast_weight_delta_rule's, given
    as not exported in the README (how a theorem the exporter refuses is shown)."""
    (tmp_path / "certificates").mkdir()
    (tmp_path / "coq").mkdir()
    for tid in SMALL:
        shutil.copy(PROOFS / "certificates" / f"{tid}.json", tmp_path / "certificates")
        if tid != NOT_EXPORTED:
            shutil.copy(PROOFS / "coq" / f"{tid}.v", tmp_path / "coq")
    readme = (PROOFS / "README.md").read_text(encoding="utf-8")
    (tmp_path / "README.md").write_text(f"{readme}\n* `{NOT_EXPORTED}`: {REASON}\n", encoding="utf-8")
    return tmp_path


def test_every_certificate_is_checked_once_cited_theorems_first(proofs):
    items = checked_certificates(proofs / "certificates")
    order = [item.theorem.id for item in items]
    assert sorted(order) == sorted(SMALL)
    assert order.index("spectral_precision") > max(order.index("orthogonal_inverse"),
                                                   order.index("orthogonal_transpose_inverse"))
    for item in items:
        assert item.theorem.digest == checked(item.theorem.id).digest


def test_the_page_states_every_theorem_with_its_hash_coq_and_latex(proofs, tmp_path):
    page = tmp_path / "docs" / "theorems.md"
    text = theorem_page(proofs / "certificates", page, coq=proofs / "coq", latex_out=tmp_path / "docs" / "gen")
    assert page.read_text(encoding="utf-8") == text
    order = list(entries())
    assert [line.split("`")[1] for line in text.splitlines() if line.startswith("| ") and "`" in line] == sorted(
        SMALL, key=order.index)  # the summary table, in the library's order
    for tid in SMALL:
        theorem = checked(tid)
        section = text.split(f"(thm-{tid.replace('_', '-')})=\n", 1)[1].split("\n(thm-", 1)[0]
        assert section.startswith(f"## {sorted(SMALL, key=order.index).index(tid) + 1}. {theorem.title}")
        assert f"certificate SHA-256 `{theorem.digest}`" in section and f"{theorem.steps} kernel steps" in section
        assert f"{{download}}`{tid}.tex <gen/{tid}.tex>`" in section
        assert (tmp_path / "docs" / "gen" / f"{tid}.tex").is_file()
        assert "**Then**\n\n$$\n" in section and f"*In words.* {theorem.proof.statement}" in section
        assert "*What it means.* " in section
    spectral = text.split("(thm-spectral-precision)=", 1)[1].split("\n(thm-", 1)[0]
    assert "cites [orthogonal_transpose_inverse](#thm-orthogonal-transpose-inverse)" in spectral
    assert "- $X^{\\top} X = V \\Lambda V^{\\top}$" in spectral and "$V$ is diagonal" not in spectral
    assert "{download}`spectral_precision.v <../coq/spectral_precision.v>`" in spectral
    memory = text.split("(thm-fast-weight-delta-rule)=", 1)[1].split("\n(thm-", 1)[0]
    assert f"not exported to Coq ({REASON})" in memory
    assert (tmp_path / "docs" / "gen" / "olstransformer.sty").is_file()
    again = theorem_page(proofs / "certificates", page, coq=proofs / "coq", latex_out=tmp_path / "docs" / "gen")
    assert again == text  # deterministic


def test_an_altered_certificate_is_refused(proofs, tmp_path):
    path = proofs / "certificates" / "orthogonal_inverse.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["steps"][0]["rule"] = "transpose_transpose"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(CertificateError):
        theorem_page(proofs / "certificates", tmp_path / "theorems.md")


def test_meanings_read_as_markdown():
    numbers = {"spectral_precision": 3}
    text = markdown_text(r"as in Theorem~\ref{thm:spectral_precision} and \ref{thm:absent}, "
                         r"\cite{tan2026ols}, \cite{vonoswald2023icl} and Aky\"urek; the \emph{slow} "
                         r"memory $L_{\lambda}--x$ -- fast; Goulet Coulombe~\cite{gouletcoulombe2025ols}", numbers)
    assert text == ("as in [Theorem 3](#thm-spectral-precision) and `absent`, (Tan and Zhao 2026), "
                    "(von Oswald et al. 2023) and Akyürek; the *slow* memory $L_{\\lambda}--x$ – fast; "
                    "Goulet Coulombe\u00a0(2025)")
