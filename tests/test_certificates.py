"""Certificates: round trip, safe parsing, and rejection of anything altered."""

from __future__ import annotations

import copy
import json
import time

import pytest
from sympy import srepr

from derive.authoring.registry import checked
from derive.certificates.format import (
    FORMAT,
    CertificateError,
    certificate_text,
    proof_from_data,
    verify_certificate,
    write_atomic,
)
from derive.certificates.srepr_parser import MAX_DEPTH, ParseError, parse_srepr
from derive.kernel import check
from derive.kernel.terms import canon
from derive.library import LIBRARY, THEOREM_IDS


@pytest.fixture(scope="module")
def certificates() -> dict[str, dict]:
    # the theorems as this process checked them (replayed from proofs/certificates): checking each again is
    # the same work twice (test_certificates_are_deterministic checks twice on purpose)
    return {tid: json.loads(certificate_text(checked(tid))) for tid in THEOREM_IDS}


@pytest.mark.parametrize("theorem_id", THEOREM_IDS)
def test_round_trip_verifies(certificates, theorem_id):
    theorem = verify_certificate(certificates[theorem_id], LIBRARY)
    assert theorem.id == theorem_id
    assert theorem.digest == certificates[theorem_id]["sha256"]


@pytest.mark.parametrize("theorem_id", THEOREM_IDS)
def test_every_expression_parses_back_to_itself(theorem_id):
    proof = LIBRARY[theorem_id]()
    exprs = [proof.claim.lhs, proof.claim.rhs] + [s.expr for c in (*proof.lemmas, proof.claim) for s in c.steps]
    exprs += [h.lhs for h in proof.hypotheses if not h.is_predicate]
    for expr in exprs:  # srepr may list the terms of a sum in another order: compare normal forms
        assert canon(parse_srepr(srepr(expr))) == canon(expr)


def test_certificates_are_deterministic():
    first = certificate_text(check(LIBRARY["icl_token_form"]()))
    second = certificate_text(check(LIBRARY["icl_token_form"]()))
    assert first == second


def test_format_fields(certificates):
    data = certificates["ols_is_linear_attention"]
    assert data["format"] == FORMAT
    for key in ("theorem", "hypotheses", "definitions", "claim", "steps"):
        assert key in data
    assert all({"name", "lhs", "rhs"} <= set(h) for h in data["hypotheses"])
    assert all({"expr", "rule"} <= set(s) for s in data["steps"])
    assert set(data["claim"]) == {"lhs", "rhs"}


def _mutate(data: dict, edit) -> dict:
    mutant = copy.deepcopy(data)
    try:
        edit(mutant)
    except IndexError:  # the theorem has no such field to alter (e.g. a single hypothesis)
        mutant = copy.deepcopy(data)
    mutant.pop("sha256", None)  # make the statement comparison and the kernel do the work
    return mutant


def _scale(text: str) -> str:
    if text.startswith("MatMul("):
        return text.replace("MatMul(", "MatMul(Integer(2), ", 1)
    return f"MatMul(Integer(2), {text})"


ALTERATIONS = {
    "claim_scaled": lambda d: d["claim"].__setitem__("rhs", _scale(d["claim"]["rhs"])),
    "claim_lhs_scaled": lambda d: d["claim"].__setitem__("lhs", _scale(d["claim"]["lhs"])),
    "hypothesis_dropped": lambda d: d["hypotheses"].pop(0),
    "hypothesis_rhs_scaled": lambda d: d["hypotheses"][1].__setitem__("rhs", _scale(d["hypotheses"][1]["rhs"])),
    "predicate_changed": lambda d: [
        h.__setitem__("lhs", h["lhs"].replace("Q.diagonal", "Q.symmetric").replace("Q.invertible", "Q.symmetric"))
        for h in d["hypotheses"]
    ],
    "step_scaled": lambda d: d["steps"][0].__setitem__("expr", _scale(d["steps"][0]["expr"])),
    "step_dropped": lambda d: d["steps"].pop(0),
    "rule_renamed": lambda d: d["steps"][-1].__setitem__("rule", "transpose_transpose"),
    "definition_flipped": lambda d: [
        x.__setitem__("rhs", x["rhs"].replace("Rational(-1, 2)", "Rational(1, 2)")) for x in d["definitions"]
    ] + [d["definitions"][0].__setitem__("rhs", _scale(d["definitions"][0]["rhs"]))] if d["definitions"] else None,
    "theorem_renamed": lambda d: d.__setitem__("theorem", "paper_construction"),
    "title_changed": lambda d: d.__setitem__("title", d["title"] + " (improved)"),
}


@pytest.mark.parametrize("theorem_id", THEOREM_IDS)
@pytest.mark.parametrize("alteration", ALTERATIONS)
def test_altered_certificate_is_rejected(certificates, theorem_id, alteration):
    mutant = _mutate(certificates[theorem_id], ALTERATIONS[alteration])
    if mutant == {k: v for k, v in certificates[theorem_id].items() if k != "sha256"}:
        pytest.skip("alteration does not apply to this theorem")
    with pytest.raises(CertificateError):
        verify_certificate(mutant, LIBRARY)


def test_sha256_must_match(certificates):
    mutant = copy.deepcopy(certificates["slow_fast_memory"])
    mutant["sha256"] = "0" * 64
    with pytest.raises(CertificateError, match="sha256"):
        verify_certificate(mutant, LIBRARY)


def test_a_renamed_certificate_is_checked_as_its_own_theorem_and_fails_an_expectation(certificates):
    mutant = copy.deepcopy(certificates["ols_is_linear_attention"])
    mutant["theorem"] = "my_theorem"
    mutant.pop("sha256")
    theorem = verify_certificate(mutant, LIBRARY)  # a valid proof of what it states, under its own id
    assert theorem.id == "my_theorem"
    with pytest.raises(CertificateError, match="not 'ols_is_linear_attention'"):
        verify_certificate(mutant, LIBRARY, expect="ols_is_linear_attention")
    with pytest.raises(CertificateError, match="no library theorem"):
        verify_certificate(mutant, LIBRARY, expect="no_such_theorem")


@pytest.mark.parametrize("text", [
    "__import__('os').system('touch /tmp/derive-pwned')",
    "eval('1')",
    "MatrixSymbol(Str('X'), Integer(2), Integer(2)).__class__",
    "Function('f')(Symbol('x'))",
    "Lambda(Symbol('x'), Symbol('x'))",
    "Symbol('x', evaluate=True)",
    "MatrixSymbol(Str('X; rm -rf'), Integer(2), Integer(2))",
    "MatrixSymbol(Str('X'), Integer(2))",
    "MatMul(Symbol('x'), MatrixSymbol(Str('X'), Integer(2), Integer(2)))",
    "Transpose(MatrixSymbol(Str('X'), Integer(2), Integer(2))",
    "Rational(1, 0)",
    "Inverse(MatrixSymbol(Str('X'), Integer(2), Integer(2)), Integer(2))",
    "Q.sin(MatrixSymbol(Str('X'), Integer(2), Integer(2)))",
    "MatMul(MatrixSymbol(Str('X'), Integer(2), Integer(2)),MatrixSymbol(Str('X'), Integer(2), Integer(2)))",
    "",
])
def test_parser_refuses(text, tmp_path):
    with pytest.raises(ParseError):
        parse_srepr(text)
    assert not (tmp_path / "derive-pwned").exists()


def test_code_in_a_certificate_never_runs(certificates, tmp_path):
    marker = tmp_path / "pwned"
    mutant = copy.deepcopy(certificates["ols_is_linear_attention"])
    mutant["claim"]["lhs"] = f"__import__('pathlib').Path('{marker}').touch()"
    with pytest.raises(CertificateError):
        verify_certificate(mutant, LIBRARY)
    assert not marker.exists()


def test_deeply_nested_expression_fails_fast(certificates):
    deep = "Transpose(" * 50_000 + "MatrixSymbol(Str('X'), Integer(2), Integer(2))" + ")" * 50_000
    mutant = copy.deepcopy(certificates["ols_is_linear_attention"])
    mutant["steps"][0]["expr"] = deep
    start = time.perf_counter()
    with pytest.raises(CertificateError, match=f"deeper than {MAX_DEPTH}"):
        verify_certificate(mutant, LIBRARY)
    assert time.perf_counter() - start < 5


def test_wide_expression_is_bounded():
    wide = "MatAdd(" + ", ".join(["MatrixSymbol(Str('X'), Integer(2), Integer(2))"] * 30_000) + ")"
    with pytest.raises(ParseError, match="nodes"):
        parse_srepr(wide)


def test_structure_errors_name_the_field(certificates):
    mutant = copy.deepcopy(certificates["ols_is_linear_attention"])
    del mutant["steps"][0]["rule"]
    with pytest.raises(CertificateError, match=r"steps\[0\] has no 'rule'"):
        proof_from_data(mutant)
    with pytest.raises(CertificateError, match="format"):
        proof_from_data({"format": "other"})
    with pytest.raises(CertificateError, match="JSON object"):
        proof_from_data([])


def test_write_atomic_leaves_no_partial_file(tmp_path):
    target = tmp_path / "out.json"
    write_atomic(target, "first\n")
    with pytest.raises(TypeError):
        write_atomic(target, 12345)  # type: ignore[arg-type]
    assert target.read_text() == "first\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_blocks_of_explicit_size_round_trip_and_are_never_expanded():
    """The single-query form of an in-context prompt, [xᵀ 0₁ₓ₁], a 1×1 symbol as a block, and a grid nested in a
    grid: the kernel accepts them in-process, so a certificate must carry them (it refused "a block of explicit
    size 1×1"), and reading one builds each block as one block, never entry by entry."""
    from sympy import BlockMatrix, ImmutableDenseMatrix, MatrixSymbol, ZeroMatrix

    from derive import ProofBuilder, block, dim, transpose

    p = dim("p")
    x, y = MatrixSymbol("x", p, 1), MatrixSymbol("y", 1, 1)
    for term in (block([[transpose(x), ZeroMatrix(1, 1)]]), block([[transpose(x), y]]),
                 block([[block([[transpose(x), y]]), ZeroMatrix(1, 1)]])):
        b = ProofBuilder("one_token", "t", "s")
        b.main(transpose(transpose(term))).rw("transpose_transpose").qed(term)
        theorem = check(b.proof())
        again = verify_certificate(json.loads(certificate_text(theorem)))
        assert again.digest == theorem.digest and again.proof.claim.rhs == term
        grid = parse_srepr(srepr(term)).blocks
        assert all(not isinstance(b, ImmutableDenseMatrix) for b in grid) and grid.shape == term.blocks.shape
    big = MatrixSymbol("A", 10**6, 10**6)  # 10¹² entries, were SymPy to expand the block
    assert isinstance(parse_srepr(srepr(BlockMatrix([[big]]))).blocks[0, 0], MatrixSymbol)


def test_every_name_the_kernel_accepts_round_trips():
    """Names are the kernel's identifiers: a leading underscore and 100 characters included (the reader took
    only names starting with a letter, of at most 64 characters)."""
    from sympy import MatrixSymbol

    from derive import ProofBuilder, dim, mul, scalar, transpose

    for name in ("_X", "X" * 100, "x_1"):
        size, lam = dim(f"{name[:99]}_"[-100:]), scalar(f"_{name[:99]}")
        term = mul(lam, MatrixSymbol(name, size, 1))
        b = ProofBuilder(f"_{name[:99]}", "t", "s")
        b.main(transpose(transpose(term))).rw("transpose_transpose").qed(term)
        theorem = check(b.proof())
        assert verify_certificate(json.loads(certificate_text(theorem))).digest == theorem.digest
    with pytest.raises(ParseError, match="plain name"):
        parse_srepr("MatrixSymbol(Str('X" + "X" * 100 + "'), Integer(1), Integer(1))")
