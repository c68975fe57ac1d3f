"""A user's theorem file with the Kronecker product for ``derive codegen`` (issue 41; tests/test_kron_outputs.py).

- ``kron_mixed_product``: (A ⊗ B)(C ⊗ D) = (AC) ⊗ (BD): the route ``kron_product`` prints the left side (the two
  Kronecker products, then their product), ``kron_of_products`` the right (the small products, then one Kronecker
  product);
- ``kron_inverse_solve``: (A ⊗ B)⁻¹(C ⊗ D) = (A⁻¹C) ⊗ (B⁻¹D) for invertible A, B: ``kron_solve`` prints the left side
  (one solve with the mn×mn matrix A ⊗ B), ``kron_factored_solve`` the right (a solve with A and one with B);
- ``kron_transpose_sum``: ((γA + C) ⊗ B)ᵀ = γ(Aᵀ ⊗ Bᵀ) + Cᵀ ⊗ Bᵀ, both sides as routes (``kron_transposed`` and
  ``kron_transposed_terms``), γ an argument;
- ``kron_scaled_weights``: γ(A ⊗ B)V = ((γA) ⊗ B)V, with the term ``kron_weights`` (the weights (γA) ⊗ B of V);
- ``kron_identity_factor``: (I ⊗ T)(E ⊗ F) = E ⊗ (TF), the identity's size m read off E's shape: ``kron_with_identity``
  prints the left side (the factor I as ``("I", E.shape[-2], 1)``), ``kron_without_identity`` the right.
"""

from sympy import Identity, MatrixSymbol, Q

from derive import ProofBuilder, add, dim, inv, kron, mul, predicate, scalar, theorem, transpose
from derive.routes import Route, Term

m, n, p, q, r, s = dim("m"), dim("n"), dim("p"), dim("q"), dim("r"), dim("s")
A, B = MatrixSymbol("A", m, p), MatrixSymbol("B", n, q)
C, D = MatrixSymbol("C", p, r), MatrixSymbol("D", q, s)
S, T = MatrixSymbol("S", m, m), MatrixSymbol("T", n, n)  # the square, invertible factors of the solve
E, F = MatrixSymbol("E", m, r), MatrixSymbol("F", n, s)
G = MatrixSymbol("G", m, p)
V = MatrixSymbol("V", p * q, r)
gamma = scalar("gamma")


@theorem(routes=[Route("kron_product", "main", side="lhs"), Route("kron_of_products", "main")])
def kron_mixed_product():
    b = ProofBuilder("kron_mixed_product", "The mixed product of Kronecker products",
                     "(A ⊗ B)(C ⊗ D) = (AC) ⊗ (BD).", [])
    b.main(mul(kron(A, B), kron(C, D))).auto(kron(mul(A, C), mul(B, D)))
    return b.proof()


@theorem(routes=[Route("kron_solve", "main", side="lhs"), Route("kron_factored_solve", "main")])
def kron_inverse_solve():
    b = ProofBuilder("kron_inverse_solve", "A solve with a Kronecker product, factor by factor",
                     "(S ⊗ T)⁻¹(E ⊗ F) = (S⁻¹E) ⊗ (T⁻¹F) for invertible S and T.",
                     [predicate("S_inv", Q.invertible, S), predicate("T_inv", Q.invertible, T)])
    b.main(mul(inv(kron(S, T)), kron(E, F))).auto(kron(mul(inv(S), E), mul(inv(T), F)))
    return b.proof()


@theorem(routes=[Route("kron_transposed", "main", side="lhs"), Route("kron_transposed_terms", "main")])
def kron_transpose_sum():
    b = ProofBuilder("kron_transpose_sum", "The transpose of a Kronecker product of a sum",
                     "((γA + G) ⊗ B)ᵀ = γ(Aᵀ ⊗ Bᵀ) + Gᵀ ⊗ Bᵀ.", [])
    b.main(transpose(kron(add(mul(gamma, A), G), B))).auto(
        add(mul(gamma, kron(transpose(A), transpose(B))), kron(transpose(G), transpose(B))))
    return b.proof()


@theorem(routes=[Term("kron_weights", lemma="main", values="V", names={})])
def kron_scaled_weights():
    b = ProofBuilder("kron_scaled_weights", "A scale into a Kronecker product", "γ(A ⊗ B)V = ((γA) ⊗ B)V.", [])
    b.main(mul(gamma, kron(A, B), V)).auto(mul(kron(mul(gamma, A), B), V))
    return b.proof()


@theorem(routes=[Route("kron_with_identity", "main", side="lhs"), Route("kron_without_identity", "main")])
def kron_identity_factor():
    b = ProofBuilder("kron_identity_factor", "A Kronecker product with the identity", "(I ⊗ T)(E ⊗ F) = E ⊗ (TF).", [])
    b.main(mul(kron(Identity(m), T), kron(E, F))).auto(kron(E, mul(T, F)))
    return b.proof()
