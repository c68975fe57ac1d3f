"""Routes from identities of tests/test_auto_identities.py: right sides that repeat an inverse of an argument
(Woodbury: A⁻¹ three times, one of them alone) and of a sum (ridge shrinkage: (XᵀX)⁻¹ inside β̂)."""

from sympy import Identity, MatrixSymbol, Q

from derive import Definition, ProofBuilder, add, dim, inv, mul, predicate, scalar, theorem, transpose
from derive.routes import Route

n, p, k, m = dim("n"), dim("p"), dim("k"), dim("m")
A, C = MatrixSymbol("A", p, p), MatrixSymbol("C", m, m)
U, V = MatrixSymbol("U", p, m), MatrixSymbol("V", m, p)
X, Y = MatrixSymbol("X", n, p), MatrixSymbol("Y", n, k)
lam = scalar("lambda", positive=True)
capacitance = add(inv(C), mul(V, inv(A), U))


@theorem(routes=[Route("woodbury_inverse", "main", {"A": "A", "U": "U", "C": "C", "V": "V"})])
def woodbury_identity():
    b = ProofBuilder("woodbury_identity", "The Woodbury identity",
                     "(A + UCV)⁻¹ = A⁻¹ − A⁻¹U(C⁻¹ + VA⁻¹U)⁻¹VA⁻¹ when A, C, C⁻¹ + VA⁻¹U and A + UCV are invertible.",
                     [predicate("A_invertible", Q.invertible, A), predicate("C_invertible", Q.invertible, C),
                      predicate("capacitance_invertible", Q.invertible, capacitance),
                      predicate("update_invertible", Q.invertible, add(A, mul(U, C, V)))])
    b.main(inv(add(A, mul(U, C, V)))).auto(add(inv(A), mul(-1, inv(A), U, inv(capacitance), V, inv(A))))
    return b.proof()


@theorem(routes=[Route("ridge_from_ols", "main", {"X": "X", "Y": "Y", "lambda": "lam"})])
def ridge_shrinkage():
    gram = mul(transpose(X), X)
    ridge = add(gram, mul(lam, Identity(p)))
    beta_hat = MatrixSymbol("beta_hat", p, k)
    b = ProofBuilder("ridge_shrinkage", "Ridge shrinks OLS",
                     "(XᵀX + λI)⁻¹XᵀY = β̂ − λ(XᵀX + λI)⁻¹β̂ with β̂ = (XᵀX)⁻¹XᵀY, XᵀX invertible.",
                     [predicate("gram_invertible", Q.invertible, gram)],
                     [Definition("beta_hat", beta_hat, mul(inv(gram), transpose(X), Y))])
    b.main(mul(inv(ridge), transpose(X), Y)).auto(add(beta_hat, mul(-1, lam, inv(ridge), beta_hat)))
    return b.proof()
