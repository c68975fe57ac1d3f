"""Red team of the kernel after the widening of issue 29 (Schur, unfolding, capacitance, inductive facts, scalar
hypotheses, sizes as coefficients, transpose_scalar, citations).

The hole found: terms nested in the places where SymPy computes a shape twice — the only matrix factor of a product
(``MatMul.shape`` asks its rows, then its columns), the top-left block of a block matrix — cost 2**depth shape
look-ups, outside the work budget and between the looks of the time guard.  ``derive check`` of a 10 KB certificate
with ``2·(2·(⋯(2·U)))`` sixty deep ran for hours; so did ``check`` of a proof whose hypotheses, each within any
bound, unfold into one another (three rounds of substitution nest three times deeper).  The kernel now refuses a term
nested more than ``MAX_SHAPE_DOUBLING`` deep there: when it is validated, read from a certificate, or built by
substitution (an unfolding, an instance of a ``forall`` hypothesis or of a cited theorem).

Every other attack of the red team held; each is kept here as a wrong proof that must stay refused (and the true
variants next to them that must stay accepted), listed in docs/kernel.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sympy import Identity, Integer, MatrixSymbol, Q, S, ZeroMatrix
from sympy.matrices.expressions import MatMul, MatPow
from test_scalar_language import _refused as refused  # ProofError naming every word

from derive import dim, index, scalar
from derive.certificates.srepr_parser import ParseError, parse_srepr
from derive.kernel import Chain, Definition, Family, Hypothesis, Proof, Step, check
from derive.kernel.terms import (
    MAX_SHAPE_DOUBLING,
    FamilyMatrix,
    add,
    block,
    inv,
    mul,
    shape_doubling,
    transpose,
)

ROOT = Path(__file__).resolve().parents[1]
n, p, k, q = dim("n"), dim("p"), dim("k"), dim("q")
t, s = index("t"), index("s")
A = MatrixSymbol("A", p, p)


def pred(name, predicate, term) -> Hypothesis:
    return Hypothesis(name, predicate(term), S.true)


def proof(claim: Chain, hypotheses=(), definitions=(), cites=(), families=(), name="red") -> Proof:
    return Proof(name, "t", "t", tuple(hypotheses), tuple(definitions), (), claim, tuple(cites), tuple(families))


def cancel(matrix) -> Chain:
    """M⁻¹M = I by one inverse_cancel: checks exactly when M is judged invertible."""
    unit = Identity(matrix.shape[0])
    return Chain("main", mul(inv(matrix), matrix), unit, (Step(unit, "inverse_cancel"),))


def same(term) -> Chain:
    return Chain("main", term, term, ())




def scaled(term, depth: int):
    """2·(2·(⋯(2·term))) as written: each product has one matrix factor, whose shape SymPy asks twice."""
    for _ in range(depth):
        term = MatMul(2, term, evaluate=False)
    return term


def squared(term, depth: int):
    """2·(2·(term)²)² …: a product of one factor around a power, which no normal form flattens."""
    for _ in range(depth):
        term = MatMul(2, MatPow(term, 2), evaluate=False)
    return term


def nested_blocks(term, depth: int):
    for _ in range(depth):
        term = block([[term]])
    return term


# --- the hole: exponential shapes ---------------------------------------------------------------------------------


def test_sympys_shape_of_such_a_term_takes_exponential_time():
    """Why the bound exists: four more levels cost sixteen times the look-ups (counted, not timed)."""
    calls = {"n": 0}
    original = MatrixSymbol.shape

    class Counting:
        def __get__(self, obj, owner=None):
            calls["n"] += 1
            return original.fget(obj)

    MatrixSymbol.shape = Counting()
    try:
        counts = []
        for depth in (6, 10):
            calls["n"] = 0
            _ = scaled(A, depth).shape
            counts.append(calls["n"])
    finally:
        MatrixSymbol.shape = original
    assert counts == [2 ** 6, 2 ** 10]
    assert shape_doubling(scaled(A, 10)) == 10 and shape_doubling(nested_blocks(A, 5)) == 5
    assert shape_doubling(mul(A, A, A)) == 0  # a product of several factors asks each end once


@pytest.mark.parametrize("make, depth", [(scaled, 60), (squared, 14), (nested_blocks, 60)],
                         ids=["scaled", "squared", "blocks"])  # SymPy's MatPow asks its base's shape when built
def test_a_term_nested_past_the_bound_is_refused_at_once_and_one_within_it_checks(make, depth):
    deep = make(A, depth)
    start = time.process_time()
    refused(proof(same(deep)), "more than", str(MAX_SHAPE_DOUBLING), "deep")
    assert time.process_time() - start < 2
    check(proof(same(make(A, MAX_SHAPE_DOUBLING))))  # the bound itself is allowed (the library needs 2)


def test_hypotheses_that_unfold_into_one_another_no_longer_take_exponential_time():
    """X₀ = 2(2(⋯X₁⋯)²)², X₁ = … X₂, …: each within the bound, but three rounds of unfolding nest three times deeper
    (six levels each: more than five minutes of CPU before the fix).  The unfolding now stops there; the judgment is
    simply not shown."""
    symbols = [MatrixSymbol(f"X{i}", p, p) for i in range(5)]
    hypotheses = [Hypothesis(f"h{i}", symbols[i], squared(symbols[i + 1], 6)) for i in range(4)]
    start = time.process_time()
    refused(proof(cancel(symbols[0]), hypotheses), "cannot show that X0 is invertible")
    assert time.process_time() - start < 20


def test_an_instance_of_a_cited_theorem_may_not_nest_past_the_bound():
    """A cited theorem whose hypothesis nests six deep, instantiated by a term six deep: the steps stay shallow, but
    the instantiated hypothesis, judged in the citing chain, would nest twelve deep."""
    B = MatrixSymbol("B", p, p)
    claim = Chain("main", mul(A, Identity(p)), A, (Step(A, "identity_mul"),))
    cited = check(Proof("deep_cited", "t", "t", (pred("sym", Q.symmetric, squared(A, 6)),), (), (), claim))
    value = squared(B, 6)
    citing = Chain("main", mul(value, Identity(p)), value, (Step(value, "thm:deep_cited", ((A, value),)),))
    refused(proof(citing, [pred("sym", Q.symmetric, squared(value, 0))], cites=(cited,)),
            "an instance of theorem deep_cited", "deep")
    shallow = squared(B, 1)  # within the bound the citation still works
    check(proof(Chain("main", mul(shallow, Identity(p)), shallow, (Step(shallow, "thm:deep_cited", ((A, shallow),)),)),
                [pred("sym", Q.symmetric, squared(shallow, 6))], cites=(cited,)))


def _certificate(tmp_path: Path, term_text: str) -> Path:
    data = json.loads((ROOT / "proofs" / "certificates" / "orthogonal_inverse.json").read_text())
    data.update(theorem="deep_attack", steps=[])
    data["claim"] = {"lhs": term_text, "rhs": term_text}
    data.pop("sha256", None)
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(data))
    return path


U_TEXT = "MatrixSymbol(Str('U'), Symbol('d', integer=True, positive=True), Symbol('d', integer=True, positive=True))"


@pytest.mark.parametrize("wrap, levels", [
    ("MatMul(Integer(2), {})", 60),
    ("BlockMatrix(ImmutableDenseMatrix([[{}]]))", 45),
    ("Inverse(MatMul(Integer(2), {}), Integer(-1))", 60),
], ids=["scaled", "blocks", "inverses"])
def test_derive_check_rejects_a_deep_certificate_in_one_line_within_seconds(tmp_path, wrap, levels):
    text = U_TEXT
    for _ in range(levels):
        text = wrap.format(text)
    with pytest.raises(ParseError, match="deep"):
        parse_srepr(text)
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "derive", "check", str(_certificate(tmp_path, text))],
                            capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert time.monotonic() - start < 60  # before the fix: killed after 100 s, still parsing
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "REJECTED" in result.stdout and "deep" in result.stdout and len(result.stdout.strip().splitlines()) == 1


# --- attacks that held (docs/kernel.md, "Red team of issue 29"): wrong proofs that stay refused -------------------

x_col, y_col = MatrixSymbol("x", p, k), MatrixSymbol("y", p, k)
lam, mu = scalar("lambda"), scalar("mu")
P_, Bq, Cq, Dq = MatrixSymbol("P", p, p), MatrixSymbol("B", p, q), MatrixSymbol("C", q, p), MatrixSymbol("D", q, q)
GRID = block([[P_, Bq], [Cq, Dq]])
W_A, W_U = MatrixSymbol("Aw", n, n), MatrixSymbol("U", n, k)
W_C, W_V = MatrixSymbol("Cw", k, k), MatrixSymbol("V", k, n)
CAPACITANCE = add(inv(W_C), mul(W_V, inv(W_A), W_U))
xs = lambda e: FamilyMatrix("x", e, p, p)  # noqa: E731
Fm = lambda e: FamilyMatrix("F", e, p, p)  # noqa: E731
free_x = Family("x", s, p, p)
Xp = lambda e: FamilyMatrix("X", e, e, Integer(1))  # noqa: E731


def _held_attacks() -> dict:
    kk = mul(transpose(x_col), A, y_col)
    D_sym = MatrixSymbol("D", p, p)
    return {
        # transpose_scalar: k×k (k may be 1), a prefix member t×1 (t may be 1), a member node lying about its shape
        "transpose_scalar_k_by_k": proof(Chain("main", transpose(kk), kk, (Step(kk, "transpose_scalar"),))),
        "transpose_scalar_prefix": proof(
            Chain("main", transpose(Xp(t)), Xp(t), (Step(Xp(t), "transpose_scalar"),)),
            families=[Family("X", s, s, Integer(1))]),
        "member_shape_lie": proof(
            Chain("main", transpose(FamilyMatrix("X", t, 1, 1)), FamilyMatrix("X", t, 1, 1),
                  (Step(FamilyMatrix("X", t, 1, 1), "transpose_scalar"),)), families=[Family("X", s, s, Integer(1))]),
        # sizes as coefficients: an index may be 0, a difference of sizes may be 0
        "one_over_t": proof(same(mul(1 / t, A))),
        "one_over_n_times_t": proof(same(mul(1 / (n * t), A))),
        "n_minus_one": proof(same(mul(1 / (n - 1), A))),
        "t_identity_inverse": proof(cancel(mul(t, Identity(p)))),
        # scalar hypotheses: of an index (may be 0), circular, of a square (may be 0), on a dimension
        "lambda_is_t": proof(same(mul(1 / lam, A)), [Hypothesis("h", lam, t)]),
        "lambda_mu_circular": proof(same(mul(1 / lam, A)), [Hypothesis("h", lam, mu), Hypothesis("g", mu, lam)]),
        "lambda_is_a_square": proof(cancel(mul(lam, Identity(p))), [Hypothesis("h", lam, mu ** 2)]),
        "scalar_hypothesis_on_a_dimension": proof(same(A), [Hypothesis("h", n, Integer(1))]),
        "partial_rewrite": proof(Chain("main", mul(lam ** 2, A), mul(lam * mu, A), (Step(mul(lam * mu, A), "hyp:h"),)),
                                 [Hypothesis("h", lam, mu)]),
        # Schur: no complement; the complement negated or with B and C swapped (square blocks); a 3×3 grid
        "schur_without_complement": proof(cancel(GRID), [pred("a", Q.invertible, P_), pred("d", Q.invertible, Dq)]),
        "schur_swapped_complement": proof(
            cancel(block([[A, MatrixSymbol("B2", p, p)], [MatrixSymbol("C2", p, p), MatrixSymbol("D2", p, p)]])),
            [pred("a", Q.invertible, A), pred("s", Q.invertible, add(MatrixSymbol("D2", p, p), mul(
                -1, MatrixSymbol("B2", p, p), inv(A), MatrixSymbol("C2", p, p))))]),
        # Woodbury: C not invertible, the capacitance of A − UCV given for A + UCV
        "capacitance_without_C": proof(cancel(add(W_A, mul(W_U, W_C, W_V))),
                                       [pred("a", Q.invertible, W_A), pred("k", Q.invertible, CAPACITANCE)]),
        "capacitance_wrong_sign": proof(cancel(add(W_A, mul(-1, W_U, W_C, W_V))),
                                        [pred("a", Q.invertible, W_A), pred("c", Q.invertible, W_C),
                                         pred("k", Q.invertible, CAPACITANCE)]),
        # recurrences: a fact at index 0 only, at the recurrence's own index, through a definition of x[s]
        "fact_at_zero_only": proof(cancel(Fm(t)), [pred("h", Q.invertible, xs(0))],
                                   families=[free_x, Family("F", s, p, p, xs(0), xs(s + 1))]),
        "fact_at_own_index": proof(cancel(Fm(t)), [pred("h", Q.invertible, xs(s)), pred("h0", Q.invertible, xs(0))],
                                   families=[free_x, Family("F", s, p, p, xs(0), xs(s))]),
        "fact_through_a_definition": proof(cancel(Fm(t)), [pred("h", Q.invertible, D_sym)],
                                           [Definition("d", D_sym, xs(s))],
                                           families=[free_x, Family("F", s, p, p, Identity(p), xs(s))]),
        "step_subtracts": proof(cancel(Fm(t)), families=[free_x, Family("F", s, p, p, Identity(p),
                                                                         add(Fm(s), mul(-1, Identity(p))))]),
        "root_of_a_sign_flip": proof(same(MatPow(Fm(t), S.Half)),
                                     families=[free_x, Family("F", s, p, p, Identity(p), mul(-1, Fm(s)))]),
        # a cited theorem's definition must hold in the citing proof
        "empty_prefix_one_by_one": proof(Chain("main", transpose(block([[MatrixSymbol("a", 1, 1),
                                                                           MatrixSymbol("z", 1, t)]])),
                                               block([[MatrixSymbol("a", 1, 1), MatrixSymbol("z", 1, t)]]),
                                               (Step(block([[MatrixSymbol("a", 1, 1), MatrixSymbol("z", 1, t)]]),
                                                     "transpose_scalar"),))),
        "zero_block_product": proof(same(mul(ZeroMatrix(p, 0), inv(mul(0, Identity(0)))))),
    }


HELD = _held_attacks()


@pytest.mark.parametrize("name", sorted(HELD))
def test_attacks_that_held_stay_refused(name):
    refused(HELD[name])


def test_the_true_variants_next_to_the_attacks_are_accepted():
    kk = mul(transpose(MatrixSymbol("v", p, 1)), A, MatrixSymbol("w", p, 1))
    check(proof(Chain("main", transpose(kk), kk, (Step(kk, "transpose_scalar"),))))
    check(proof(same(mul(1 / (t + 1), A))))
    check(proof(same(mul(1 / lam, A)), [Hypothesis("h", lam, mu ** 2 + 1)]))
    schur = add(Dq, mul(-1, Cq, inv(P_), Bq))
    check(proof(cancel(GRID), [pred("a", Q.invertible, P_), pred("s", Q.invertible, schur)]))
    check(proof(cancel(add(W_A, mul(W_U, W_C, W_V))),
                [pred("a", Q.invertible, W_A), pred("c", Q.invertible, W_C), pred("k", Q.invertible, CAPACITANCE)]))
    check(proof(cancel(Fm(t)), families=[free_x, Family("F", s, p, p, Identity(p),
                                                         add(Fm(s), mul(transpose(xs(s + 1)), xs(s + 1))))]))
