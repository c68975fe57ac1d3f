"""Text from a certificate or a user reaches a Coq file only as a comment it cannot leave, and names only as Coq
identifiers (derive.export.coq.coq_comment_text and _ident).

A certificate's title used to be pasted as it stands into the ``(* ... *)`` header of its ``.v`` file: a title
``*) Local Notation "x = y" := ... (*`` rewrote every equation of the file (coqc accepted A = 2 A, closed under the
global context) and ``*) Redirect "/path" Print nat. (*`` wrote a file when the export was compiled.  The checks
below read the exported text with a scanner of their own, written from Coq's lexer (comments nest, and a ``"``
inside a comment opens a string in which ``*)`` does not close the comment), not with the exporter's rules.
"""

from __future__ import annotations

import json
import random
import re
import shutil

import pytest

from derive.cli import main
from derive.export.coq import Unsupported, _ident, compile_export, coq_comment_text, export_certificates, write_export

needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is installed by .ci/run")

#: the characters a comment's text may have, written here independently of the exporter
ALLOWED = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 .,:;-_+=/[]?")

#: Coq's keywords (reference manual, "Lexical conventions"), ssreflect's, and `Inline` (a modifier of `Variable`)
KEYWORDS = {"_", "Axiom", "CoFixpoint", "Definition", "Fixpoint", "Hypothesis", "Parameter", "Prop", "SProp", "Set",
            "Theorem", "Type", "Variable", "as", "at", "cofix", "else", "end", "fix", "for", "forall", "fun", "if",
            "in", "let", "match", "return", "then", "where", "with", "by", "exists", "exists2", "using", "is", "of",
            "Inline"}

NOTATION = '*) Local Notation "x = y" := (@eq unit tt tt) : type_scope. (*'  # every equation becomes tt = tt

BREAKERS = ["*)", "(*", "(**", "*)*)", "(*)", "*", "(", ")", '"', '""', '"""', "'", "\n", "\r", "\r\n", "\t", "\x00",
            "\x1b[2J", "\x7f", "\u2013", "\u1d40", "\u207b\u00b9", "\u202e", "\ufeff", "\U0001f600", "\udcff", "\\",
            "%", "{", "}", "`", "#", "@", "|", "~", "<", ">", "$", "&", "!", ".", ". ", ".\n", "..", " ", "x", "A",
            "0", "Local Notation", "Notation", "Redirect", '"/tmp/x"', "Print nat", "Axiom", "Admitted", "Qed",
            "Proof", "End", "Section", "Require Import", "From OLS Require Import", "Set", "Unset", "Declare ML Module",
            "Drop", NOTATION, '*) Redirect "/tmp/x" Print nat. (*', "x = y", ":=", "type_scope", "(* *)", '" *) "']


def comment_end(text: str, start: int) -> int | None:
    """The index just after the ``*)`` closing the comment whose ``(*`` ends at ``start``, read as Coq's lexer reads
    it: ``(*`` opens a nested comment, ``*)`` closes one, ``"`` opens a string (``""`` inside it is a quote) in
    which neither counts; None when the text ends first (an unterminated comment or string)."""
    depth, i = 1, start
    while i < len(text):
        if text.startswith("(*", i):
            depth, i = depth + 1, i + 2
        elif text.startswith("*)", i):
            depth, i = depth - 1, i + 2
            if depth == 0:
                return i
        elif text[i] == '"':
            i = string_end(text, i + 1)
            if i is None:
                return None
        else:
            i += 1
    return None


def string_end(text: str, start: int) -> int | None:
    """The index just after the ``"`` closing a string that opened just before ``start`` (``""`` is a quote)."""
    i = start
    while i < len(text):
        if text[i] == '"':
            if text.startswith('""', i):
                i += 2
                continue
            return i + 1
        i += 1
    return None


def lex(text: str) -> tuple[str, list[str]]:
    """(the file outside its comments, its top-level comments): every comment and string must be closed."""
    code, comments, i = [], [], 0
    while i < len(text):
        if text.startswith("(*", i):
            end = comment_end(text, i + 2)
            assert end is not None, f"a comment opened at {i} is never closed"
            comments.append(text[i:end])
            code.append(" ")
            i = end
        elif text[i] == '"':
            end = string_end(text, i + 1)
            assert end is not None, f"a string opened at {i} is never closed"
            code.append(text[i:end])
            i = end
        else:
            code.append(text[i])
            i += 1
    return "".join(code), comments


def hostile_texts(count: int, seed: int = 29):
    rng = random.Random(seed)
    yield from BREAKERS
    yield "".join(BREAKERS)
    yield "x" * 5000 + "*)"
    for _ in range(count):
        yield "".join(rng.choice(BREAKERS) for _ in range(rng.randint(1, 12)))
        yield "".join(chr(rng.randint(0, 0x2FF)) for _ in range(rng.randint(0, 40)))


def test_comment_text_cannot_leave_the_comment():
    for text in hostile_texts(3000):
        out = coq_comment_text(text)
        assert set(out) <= ALLOWED, (text, out)
        assert not any(bad in out for bad in ('"', "(*", "*)", "(", ")", "*", "'", "\n", "\r", "\x00")), (text, out)
        assert len(out) <= 200, (text, len(out))
        assert coq_comment_text(out) == out  # what it writes, it keeps
        for before, after in (("(* ", " *)"), ("(*", "*)"), ("(* id: ", ".\n   Generated ... *)"),
                              ("Proof. (* ", ": not found *)")):
            wrapped = before + out + after
            start = wrapped.index("(*") + 2
            assert comment_end(wrapped + "\nAxiom x : False.", start) == len(wrapped), (text, wrapped)


def test_comment_text_keeps_plain_titles_and_marks_the_rest():
    assert coq_comment_text("OLS is single-layer linear attention") == "OLS is single-layer linear attention"
    assert coq_comment_text("The Sherman\u2013Morrison formula") == "The Sherman-Morrison formula"
    assert coq_comment_text("Woodbury (push-through)") == "Woodbury [push-through]"
    assert coq_comment_text("a\n\r\t  b") == "a b"
    assert coq_comment_text(NOTATION) == "?] Local Notation ?x = y? := [?eq unit tt tt] : type_scope. [?"
    assert coq_comment_text("x" * 500).endswith("...") and len(coq_comment_text("x" * 500)) == 200


def test_identifiers_are_safe_and_one_to_one():
    rng = random.Random(7)
    alphabet = "AZaz09_mTSRIO"
    names = {"T", "m_T", "m_m_T", "S", "m_S", "0", "m_0", "_x", "m__x", "x_", "m_x_", "e0_", "Z_", "IH", "IH1", "m_IH",
             "idx", "m_idx", "invmx", "Inline", "A", "beta", *KEYWORDS - {"_"}}
    names |= {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))) for _ in range(3000)}
    seen: dict[str, str] = {}
    for name in sorted(names):
        ident = _ident(name)
        assert re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", ident), (name, ident)
        assert ident not in KEYWORDS, (name, ident)
        assert seen.setdefault(ident, name) == name, f"{name} and {seen[ident]} are both {ident}"
    for bad in ("", "a b", "a.b", "a'", 'a"', "a*)", "(*a", "\u03bb", "a\n", "A-1", "x%"):
        with pytest.raises(Unsupported):
            _ident(bad)


# --- end to end: a checked certificate with a hostile title, and a false claim exported --unchecked ------------------

HOSTILE = [NOTATION, '*) Redirect "/tmp/derive_pwned" Print nat. (*', 'a\n*)\nAxiom x : False.\n(*',
           'q " *) Axiom cheat : False. (* "', 'an unbalanced " quote', "(* (* (*", "*) *) *)",
           "x\x00\r\u202e\U0001f600"]


def _double_transpose(title: str, statement: str = "(A^T)^T = A") -> dict:
    """The certificate of (Aᵀ)ᵀ = A with this title, checked by the kernel and verified as `derive check` does."""
    from sympy import Symbol
    from sympy.matrices.expressions import MatrixSymbol, Transpose

    from derive.certificates.format import certificate_text, verify_certificate
    from derive.kernel import Chain, Proof, Step, check

    n = Symbol("n", integer=True, positive=True)
    a = MatrixSymbol("A", n, n)
    claim = Chain("main", Transpose(Transpose(a)), a, (Step(a, "transpose_transpose"),))
    data = json.loads(certificate_text(check(Proof("hostile_title", title, statement, (), (), (), claim))))
    assert verify_certificate(data).title == title
    return data


def _false_double(title: str) -> dict:
    """A forged certificate of A = 2 A (false), as --unchecked exports it."""
    from sympy import Integer, Symbol
    from sympy.matrices.expressions import MatMul, MatrixSymbol

    from derive.certificates.format import FORMAT
    from derive.kernel import Chain, Proof, Step, proof_to_data

    n = Symbol("n", integer=True, positive=True)
    a = MatrixSymbol("A", n, n)
    two = MatMul(Integer(2), a)
    claim = Chain("main", a, two, (Step(two, "identity_mul"),))
    return {"format": FORMAT, **proof_to_data(Proof("false_double", title, "A = 2 A", (), (), (), claim))}


@pytest.mark.parametrize("title", HOSTILE)
def test_a_hostile_title_changes_nothing_outside_the_header_comment(title):
    plain = export_certificates([_double_transpose("Plain")]).files["hostile_title.v"]
    text = export_certificates([_double_transpose(title, statement=title)]).files["hostile_title.v"]
    code, comments = lex(text)
    assert code == lex(plain)[0]  # the title (and the statement) changed comments only
    assert comments[0] == (f"(* hostile_title: {coq_comment_text(title)}.\n   Generated by `derive export coq` from "
                           "its certificate; do not edit. *)")
    for word in ("Notation", "Redirect", "Axiom", "tt tt", "cheat"):
        assert word not in code
    forged = export_certificates([_false_double(title)], unchecked=True).files["false_double.v"]
    code, comments = lex(forged)
    assert code == lex(export_certificates([_false_double("Plain")], unchecked=True).files["false_double.v"])[0]
    assert "(* identity_mul: not found at one position; unchecked export *)" in comments


def test_a_rule_name_that_is_not_an_identifier_refuses_the_theorem():
    data = _false_double("Plain")
    data["steps"][0]["rule"] = "identity_mul *) Axiom cheat : False. (*"
    export = export_certificates([data], unchecked=True)
    assert export.exported == [] and "false_double.v" not in export.files
    assert "is neither an axiom's name" in export.skipped["false_double"], export.skipped


def test_a_theorem_id_that_is_not_its_own_coq_identifier_is_refused():
    data = _false_double("Plain")
    data["theorem"] = "T"  # would be the Coq theorem m_T in T.v, which a citing theorem could not import by its id
    export = export_certificates([data], unchecked=True)
    assert export.exported == [] and "T.v" not in export.files, export.skipped
    assert export.skipped == {"T": "the theorem id T is not a Coq identifier as it stands (it would be m_T)"}


@needs_coq
def test_coq_rejects_a_false_claim_whose_title_redefines_equality(tmp_path, capsys):
    cert = tmp_path / "false.json"
    cert.write_text(json.dumps(_false_double(NOTATION)))
    status = main(["export", "coq", "--unchecked", str(cert), "--out", str(tmp_path / "out"), "--compile"])
    out = capsys.readouterr().out
    assert "false_double                   exported" in out, out  # written: the rejection is Coq's
    assert status == 1 and "coqc: accepted" not in out, out


@needs_coq
def test_a_title_cannot_make_coqc_write_a_file(tmp_path):
    target = tmp_path / "pwned"  # a fresh path: the file's text is new, so coqc runs (no cached result)
    title = f'*) Redirect "{target}" Print nat. (*'
    export = export_certificates([_double_transpose(title)])
    write_export(export, tmp_path / "out")
    assert compile_export(tmp_path / "out", export.exported) == {"hostile_title": "ok"}  # still a true theorem
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no pwned.out beside it
