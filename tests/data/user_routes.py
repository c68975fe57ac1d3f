"""A user's theorem file whose routes have the general shape (``derive codegen`` tests, tests/test_user_library.py).

- ``refined_ols``: one step of iterative refinement, β̂ = G⁻¹XᵀY + G⁻¹Xᵀ(Y − X G⁻¹XᵀY) with G = XᵀX: the
  inverse three times, the intermediate G⁻¹XᵀY twice (route ``refined_coefficients``);
- ``ridge_as_augmented_ols``: ridge is OLS on the rows X stacked on μI with zero targets: the right side
  holds the blocks [X; μI] and [Y; 0] and the scalar μ (route ``augmented_ridge``);
- ``explained_sum_of_squares``: YᵀX(XᵀX)⁻¹XᵀY written as β̂ᵀ(XᵀX)β̂, with a coefficient, a transpose and
  an inverse on the right of a product (route ``explained``), and its definition of the hat matrix H
  declared as a term (``hat``);
- ``query_weights``: terms X_q(XᵀX)⁻¹ (an inverse on the right: a solve), (XᵀX)⁻¹ alone (``precision``, the
  one explicit inverse), and (XᵀX)², a power of a matrix not declared diagonal, which cannot be printed
  (``root``): codegen names it and prints the rest.
"""

from sympy import Identity, MatrixSymbol, Q, Rational, ZeroMatrix

from derive import (
    Definition,
    ProofBuilder,
    add,
    block,
    dim,
    inv,
    mul,
    power,
    predicate,
    scalar,
    theorem,
    transpose,
)
from derive.routes import Route, Term

n, p, k, m = dim("n"), dim("p"), dim("k"), dim("m")
X, Y, X_q = MatrixSymbol("X", n, p), MatrixSymbol("Y", n, k), MatrixSymbol("X_q", m, p)
gram = mul(transpose(X), X)
mu = scalar("mu", positive=True)
G_inv_b = mul(inv(gram), transpose(X), Y)


@theorem(routes=[Route("refined_coefficients", "main", {"X": "X", "Y": "Y"})])
def refined_ols():
    b = ProofBuilder("refined_ols", "One refinement step leaves OLS fixed",
                     "If XᵀX is invertible, G⁻¹XᵀY = G⁻¹XᵀY + G⁻¹Xᵀ(Y − X G⁻¹XᵀY) for G = XᵀX.",
                     [predicate("gram_invertible", Q.invertible, gram)])
    b.main(G_inv_b).auto(add(G_inv_b, mul(inv(gram), transpose(X), add(Y, mul(-1, X, G_inv_b)))))
    return b.proof()


@theorem(routes=[Route("augmented_ridge", "main", {"X": "X", "Y": "Y", "mu": "mu"})])
def ridge_as_augmented_ols():
    A, B = block([[X], [mul(mu, Identity(p))]]), block([[Y], [ZeroMatrix(p, k)]])
    b = ProofBuilder("ridge_as_augmented_ols", "Ridge is OLS on augmented rows",
                     "(XᵀX + μ²I)⁻¹XᵀY = (AᵀA)⁻¹AᵀB with A = [X; μI], B = [Y; 0].", [])
    b.main(mul(inv(add(gram, mul(mu ** 2, Identity(p)))), transpose(X), Y)).auto(
        mul(inv(mul(transpose(A), A)), transpose(A), B))
    return b.proof()


@theorem(routes=[Route("explained", "main", {"X": "X", "Y": "Y"}), Term("hat", definition="H")])
def explained_sum_of_squares():
    H = MatrixSymbol("H", n, n)
    fitted = mul(X, G_inv_b)
    b = ProofBuilder("explained_sum_of_squares", "The explained sum of squares",
                     "If XᵀX is invertible and H = X(XᵀX)⁻¹Xᵀ, then YᵀHY = ½ YᵀX(XᵀX)⁻¹XᵀY + ½ (XB)ᵀ(XB), "
                     "B = (XᵀX)⁻¹XᵀY.",
                     [predicate("gram_invertible", Q.invertible, gram)],
                     [Definition("H", H, mul(X, inv(gram), transpose(X)))])
    b.main(mul(transpose(Y), H, Y)).rw("def:H").auto(
        add(mul(Rational(1, 2), transpose(Y), X, inv(gram), transpose(X), Y),
            mul(Rational(1, 2), transpose(fitted), fitted)))
    return b.proof()


@theorem(routes=[Term("query_weights", definition="W"), Term("root", definition="S"),
                 Term("precision", definition="C")])
def query_weights():
    W, S, C = MatrixSymbol("W", m, p), MatrixSymbol("S", p, p), MatrixSymbol("C", p, p)
    b = ProofBuilder("query_weights", "Query weights",
                     "If XᵀX is invertible, W = X_q(XᵀX)⁻¹ and S = (XᵀX)², then W XᵀY = X_q(XᵀX)⁻¹XᵀY.",
                     [predicate("gram_invertible", Q.invertible, gram),
                      predicate("gram_positive", Q.positive_definite, gram)],
                     [Definition("W", W, mul(X_q, inv(gram))), Definition("S", S, power(gram, 2)),
                      Definition("C", C, inv(gram))])
    b.main(mul(W, transpose(X), Y)).rw("def:W").qed(mul(X_q, inv(gram), transpose(X), Y))
    return b.proof()
