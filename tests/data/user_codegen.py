"""A user's theorem file for ``derive codegen`` as the user means it (issue 41 item 6; tests/test_codegen_user.py).

- ``ridge_push_through``: X_q(XᵀX + λI)⁻¹XᵀY = X_q Xᵀ(XXᵀ + λI)⁻¹Y with the scalar λ named ``lambda`` (a Python
  keyword) and listed in no route's names: the route ``ridge_dual`` (a name the built-in library uses too: in
  this library's own module it is this one) prints the right side's coefficients Xᵀ(XXᵀ + λI)⁻¹Y, the route
  ``ridge_primal`` the left side's, (XᵀX + λI)⁻¹XᵀY (``side="lhs"``); both take λ as ``lambda_``;
- ``sample_moments``: (np/n)(XᵀY)ᵀ = (np/n)YᵀX with a scalar named ``np`` (the name the NumPy module gives
  NumPy: it is the argument ``np_``) and the dimension n as a coefficient (read off X's rows): the routes
  ``cross_moment`` (the right side) and ``cross_moment_lhs`` (the left);
- ``gram_power``: the term ``gram_squared``, (XᵀX)², a matrix power the printers refuse (named, not printed), the
  term ``gram`` XᵀX (printed), and a second route named ``ridge_dual``, which the module already has (named).
"""

from sympy import Identity, MatrixSymbol

from derive import Definition, ProofBuilder, add, dim, inv, mul, power, scalar, theorem, transpose
from derive.routes import Route, Term

n, p, k, m = dim("n"), dim("p"), dim("k"), dim("m")
X, Y, X_q = MatrixSymbol("X", n, p), MatrixSymbol("Y", n, k), MatrixSymbol("X_q", m, p)
lam = scalar("lambda", positive=True)
c = scalar("np")


@theorem(routes=[Route("ridge_dual", "main"), Route("ridge_primal", "main", side="lhs")])
def ridge_push_through():
    b = ProofBuilder("ridge_push_through", "Ridge predictions, primal and dual",
                     "X_q(XᵀX + λI)⁻¹XᵀY = X_q Xᵀ(XXᵀ + λI)⁻¹Y for λ > 0.", [])
    primal = add(mul(transpose(X), X), mul(lam, Identity(p)))
    dual = add(mul(X, transpose(X)), mul(lam, Identity(n)))
    b.main(mul(X_q, inv(primal), transpose(X), Y)).auto(mul(X_q, transpose(X), inv(dual), Y))
    return b.proof()


@theorem(routes=[Route("cross_moment", "main"), Route("cross_moment_lhs", "main", side="lhs")])
def sample_moments():
    b = ProofBuilder("sample_moments", "A scaled cross moment", "(c/n)(XᵀY)ᵀ = (c/n)YᵀX.", [])
    b.main(mul(c / n, transpose(mul(transpose(X), Y)))).auto(mul(c / n, transpose(Y), X))
    return b.proof()


@theorem(routes=[Term("gram_squared", definition="S"), Term("gram", definition="G"), Route("ridge_dual", "main")])
def gram_power():
    S, G = MatrixSymbol("S", p, p), MatrixSymbol("G", p, p)
    b = ProofBuilder("gram_power", "The Gram matrix and its square", "With G = XᵀX and S = (XᵀX)², G = XᵀX.", [],
                     [Definition("S", S, power(mul(transpose(X), X), 2)), Definition("G", G, mul(transpose(X), X))])
    b.main(G).rw("def:G").qed(mul(transpose(X), X))
    return b.proof()
