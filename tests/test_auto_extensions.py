"""``.auto(rhs)`` alone proves the identities the extensions need, written with ``scalar`` and the public API.

Each is proved by one call of ``.auto`` within a time budget, re-checked by the kernel, and the false or
undefined variants are never theorems.
"""

from __future__ import annotations

import time

import pytest
from sympy import Identity, MatrixSymbol, Q, Rational, ZeroMatrix

from derive import (
    Definition,
    Hypothesis,
    ProofBuilder,
    ProofError,
    add,
    block,
    check,
    dim,
    inv,
    mul,
    orthogonal,
    power,
    predicate,
    scalar,
    transpose,
)

n, p, k, m = dim("n"), dim("p"), dim("k"), dim("m")
p1, p2 = dim("p1"), dim("p2")
X, Y, X_q = MatrixSymbol("X", n, p), MatrixSymbol("Y", n, k), MatrixSymbol("X_q", m, p)
A = MatrixSymbol("A", p, p)
u, v = MatrixSymbol("u", p, 1), MatrixSymbol("v", p, 1)
lam = scalar("lambda", positive=True)
BUDGET = 30.0


def prove(theorem_id: str, lhs, rhs, hypotheses=(), definitions=()):
    """``lhs = rhs`` by ``.auto`` alone, checked by the kernel; returns (theorem, seconds)."""
    b = ProofBuilder(theorem_id, theorem_id, theorem_id, list(hypotheses), list(definitions))
    start = time.monotonic()
    b.main(lhs).auto(rhs, timeout=BUDGET)
    seconds = time.monotonic() - start
    return check(b.proof()), seconds


def ridge_gram(M):
    return add(mul(transpose(M), M), mul(lam, Identity(M.shape[1])))


IDENTITIES = {
    "push_through": lambda: prove(
        "push_through", mul(inv(ridge_gram(X)), transpose(X)),
        mul(transpose(X), inv(add(mul(X, transpose(X)), mul(lam, Identity(n)))))),
    "lambda_identity_inverse": lambda: prove(
        "lambda_identity_inverse", inv(mul(lam, Identity(p))), mul(1 / lam, Identity(p))),
    "ridge_normal_equations": lambda: prove(
        "ridge_normal_equations", add(mul(transpose(X), X, MatrixSymbol("beta", p, k)),
                                      mul(lam, MatrixSymbol("beta", p, k))), mul(transpose(X), Y),
        definitions=[Definition("beta", MatrixSymbol("beta", p, k), mul(inv(ridge_gram(X)), transpose(X), Y))]),
    "sherman_morrison": lambda: prove(
        "sherman_morrison", inv(add(A, mul(u, transpose(v)))),
        add(inv(A), mul(-1, inv(A), u, inv(add(Identity(1), mul(transpose(v), inv(A), u))), transpose(v), inv(A))),
        [predicate("A_invertible", Q.invertible, A),
         predicate("denominator", Q.invertible, add(Identity(1), mul(transpose(v), inv(A), u)))]),
    "sherman_morrison_scalar": lambda: prove(
        "sherman_morrison_scalar", inv(add(A, mul(u, transpose(v)))),
        add(inv(A), mul(-1, inv(add(Identity(1), mul(transpose(v), inv(A), u))), inv(A), u, transpose(v), inv(A))),
        [predicate("A_invertible", Q.invertible, A),
         predicate("denominator", Q.invertible, add(Identity(1), mul(transpose(v), inv(A), u)))]),
    "block_diagonal_inverse": lambda: prove(
        "block_diagonal_inverse",
        inv(block([[A, ZeroMatrix(p, k)], [ZeroMatrix(k, p), MatrixSymbol("D", k, k)]])),
        block([[inv(A), ZeroMatrix(p, k)], [ZeroMatrix(k, p), inv(MatrixSymbol("D", k, k))]]),
        [predicate("A_invertible", Q.invertible, A), predicate("D_invertible", Q.invertible, MatrixSymbol("D", k, k))]),
    "stacked_row_gram": lambda: prove(
        "stacked_row_gram",
        mul(transpose(block([[MatrixSymbol("X_prev", n, p)], [transpose(MatrixSymbol("x", p, 1))]])),
            block([[MatrixSymbol("X_prev", n, p)], [transpose(MatrixSymbol("x", p, 1))]])),
        add(mul(transpose(MatrixSymbol("X_prev", n, p)), MatrixSymbol("X_prev", n, p)),
            mul(MatrixSymbol("x", p, 1), transpose(MatrixSymbol("x", p, 1))))),
    "ridge_spectral_precision": lambda: prove(
        "ridge_spectral_precision", inv(ridge_gram(X)),
        mul(MatrixSymbol("V", p, p), inv(add(MatrixSymbol("Lambda", p, p), mul(lam, Identity(p)))),
            transpose(MatrixSymbol("V", p, p))),
        [Hypothesis("gram", mul(transpose(X), X),
                    mul(MatrixSymbol("V", p, p), MatrixSymbol("Lambda", p, p), transpose(MatrixSymbol("V", p, p)))),
         *orthogonal("V", MatrixSymbol("V", p, p)),
         predicate("Lambda_diagonal", Q.diagonal, MatrixSymbol("Lambda", p, p))]),
}


def two_heads():
    """Heads on orthogonal feature blocks X = [X₁ X₂], X₁ᵀX₂ = 0: their summed outputs are OLS on X."""
    X1, X2 = MatrixSymbol("X_1", n, p1), MatrixSymbol("X_2", n, p2)
    Q1, Q2 = MatrixSymbol("X_q1", m, p1), MatrixSymbol("X_q2", m, p2)
    Xb, Qb = MatrixSymbol("X", n, p1 + p2), MatrixSymbol("X_q", m, p1 + p2)
    hyps = [Hypothesis("split", Xb, block([[X1, X2]])), Hypothesis("query_split", Qb, block([[Q1, Q2]])),
            Hypothesis("orthogonal_blocks", mul(transpose(X1), X2), ZeroMatrix(p1, p2)),
            predicate("gram1", Q.positive_definite, mul(transpose(X1), X1)),
            predicate("gram2", Q.positive_definite, mul(transpose(X2), X2))]
    ols = mul(Qb, inv(mul(transpose(Xb), Xb)), transpose(Xb), Y)
    heads = add(mul(Q1, inv(mul(transpose(X1), X1)), transpose(X1), Y),
                mul(Q2, inv(mul(transpose(X2), X2)), transpose(X2), Y))
    return prove("two_orthogonal_heads", ols, heads, hyps)


IDENTITIES["two_orthogonal_heads"] = two_heads


@pytest.mark.parametrize("name", sorted(IDENTITIES))
def test_auto_proves_the_extension_identity(name):
    theorem, seconds = IDENTITIES[name]()
    assert theorem.id == name and seconds < BUDGET


half = Rational(1, 2)
eta = scalar("eta")


@pytest.mark.parametrize("name", ["push_through_without_lambda", "unknown_sign", "wrong_sign", "wrong_scale",
                                  "swapped_block", "half_power_of_symmetric"])
def test_false_or_undefined_variants_are_never_theorems(name):
    cases = {
        "push_through_without_lambda": lambda: prove(
            "bad", mul(inv(mul(transpose(X), X)), transpose(X)), mul(transpose(X), inv(mul(X, transpose(X))))),
        "unknown_sign": lambda: prove("bad", inv(mul(eta, Identity(p))), mul(1 / eta, Identity(p))),
        "wrong_sign": lambda: prove(
            "bad", inv(add(A, mul(u, transpose(v)))),
            add(inv(A), mul(inv(A), u, inv(add(Identity(1), mul(transpose(v), inv(A), u))), transpose(v), inv(A))),
            [predicate("A_invertible", Q.invertible, A),
             predicate("denominator", Q.invertible, add(Identity(1), mul(transpose(v), inv(A), u)))]),
        "wrong_scale": lambda: prove("bad", inv(mul(lam, Identity(p))), mul(lam, Identity(p))),
        "swapped_block": lambda: prove(
            "bad", inv(block([[A, ZeroMatrix(p, k)], [ZeroMatrix(k, p), MatrixSymbol("D", k, k)]])),
            block([[inv(A), ZeroMatrix(p, k)], [ZeroMatrix(k, p), inv(transpose(MatrixSymbol("D", k, k)))]]),
            [predicate("A_invertible", Q.invertible, A),
             predicate("D_invertible", Q.invertible, MatrixSymbol("D", k, k))]),
        "half_power_of_symmetric": lambda: prove(
            "bad", mul(power(A, half), power(A, half)), A, [predicate("A_symmetric", Q.symmetric, A)]),
    }
    with pytest.raises(ProofError):
        cases[name]()
