"""A user's theorem file (public authoring API only): the partitioned-regression coefficient formula.

For X = [X₁ X₂], the last q coefficients of the least-squares fit β̂ = (XᵀX)⁻¹XᵀY are
β̂₂ = (X₂ᵀM₁X₂)⁻¹X₂ᵀM₁Y with M₁ = I − X₁(X₁ᵀX₁)⁻¹X₁ᵀ (Frisch–Waugh–Lovell: regress the residuals of X₂ on X₁).
The proof inverts XᵀX = [[X₁ᵀX₁, X₁ᵀX₂], [X₂ᵀX₁, X₂ᵀX₂]] by the Schur complement of X₁ᵀX₁, which is X₂ᵀM₁X₂
(kernel rule ``block_inverse_schur``; the kernel judges XᵀX invertible because X₁ᵀX₁ and that complement are).
"""

from sympy import Identity, MatrixSymbol, Q, ZeroMatrix

from derive import Definition, ProofBuilder, add, block, dim, inv, mul, predicate, theorem, transpose

n, p, q = dim("n"), dim("p"), dim("q")
X1, X2, Y = MatrixSymbol("X_1", n, p), MatrixSymbol("X_2", n, q), MatrixSymbol("Y", n, 1)
X, M1 = MatrixSymbol("X", n, p + q), MatrixSymbol("M_1", n, n)
gram1 = mul(transpose(X1), X1)
#: The Schur complement of X₁ᵀX₁ in XᵀX, as the kernel forms it: X₂ᵀX₂ − X₂ᵀX₁(X₁ᵀX₁)⁻¹X₁ᵀX₂.
schur = add(mul(transpose(X2), X2), mul(-1, transpose(X2), X1, inv(gram1), transpose(X1), X2))


@theorem(glossary={"X_1": "the first block of regressors", "X_2": "the second block of regressors",
                   "M_1": "the residual maker of $X_1$"})
def partitioned_regression():
    b = ProofBuilder(
        "partitioned_regression", "Partitioned regression (Frisch–Waugh–Lovell)",
        "If X = [X₁ X₂], X₁ᵀX₁ is invertible and so is its Schur complement X₂ᵀX₂ − X₂ᵀX₁(X₁ᵀX₁)⁻¹X₁ᵀX₂ in XᵀX, "
        "then the last q coefficients of (XᵀX)⁻¹XᵀY are (X₂ᵀM₁X₂)⁻¹X₂ᵀM₁Y with M₁ = I − X₁(X₁ᵀX₁)⁻¹X₁ᵀ.",
        [predicate("gram1_invertible", Q.invertible, gram1),
         predicate("schur_invertible", Q.invertible, schur)],
        [Definition("X", X, block([[X1, X2]])),
         Definition("M_1", M1, add(Identity(n), mul(-1, X1, inv(gram1), transpose(X1))))],
    )
    grid = block([[gram1, mul(transpose(X1), X2)], [mul(transpose(X2), X1), mul(transpose(X2), X2)]])
    b.lemma("gram", mul(transpose(X), X)).auto(grid)
    b.lemma("residual_gram", mul(transpose(X2), M1, X2)).auto(schur)
    select = block([[ZeroMatrix(q, p), Identity(q)]])  # the last q rows
    rhs = mul(inv(mul(transpose(X2), M1, X2)), transpose(X2), M1, Y)
    b.main(mul(select, inv(mul(transpose(X), X)), transpose(X), Y)).auto(rhs, timeout=60)
    return b.proof()
