"""A user's own theorem file, written only with the public authoring API (the CLI tests load it).

Three theorems: OLS through a QR factor, the idempotence of the hat matrix, and the OLS coefficients
in attention form, which cites the built-in theorem ``spectral_precision``.
"""

from sympy import Identity, MatrixSymbol, Q, Rational

from derive import Definition, Hypothesis, ProofBuilder, dim, inv, mul, power, predicate, theorem, transpose

n, p, k, m = dim("n"), dim("p"), dim("k"), dim("m")
X, Y, X_q = MatrixSymbol("X", n, p), MatrixSymbol("Y", n, k), MatrixSymbol("X_q", m, p)
gram = mul(transpose(X), X)


@theorem(glossary={"Q": "orthonormal factor of $X = QR$", "R": "invertible factor of $X = QR$"})
def ols_through_qr():
    Qf, R = MatrixSymbol("Q", n, p), MatrixSymbol("R", p, p)
    b = ProofBuilder(
        "ols_through_qr", "OLS through a QR factor",
        "If X = QR with QᵀQ = I and R invertible, then X_q (XᵀX)⁻¹XᵀY = X_q R⁻¹QᵀY.",
        [Hypothesis("qr", X, mul(Qf, R)),
         Hypothesis("Q_orthonormal_columns", mul(transpose(Qf), Qf), Identity(p)),
         predicate("R_invertible", Q.invertible, R)],
    )
    (b.lemma("gram", gram)
     .rw("hyp:qr", nth=0).rw("hyp:qr")
     .rw("transpose_product").rw("hyp:Q_orthonormal_columns").rw("identity_mul")
     .qed(mul(transpose(R), R)))
    (b.main(mul(X_q, inv(gram), transpose(X), Y))
     .rw("lemma:gram")
     .rw("inverse_product")
     .rw("hyp:qr", at=X)
     .rw("transpose_product")
     .rw("inverse_cancel")
     .rw("identity_mul")
     .qed(mul(X_q, inv(R), transpose(Qf), Y)))
    return b.proof()


@theorem
def hat_idempotent():
    H = MatrixSymbol("H", n, n)
    b = ProofBuilder(
        "hat_idempotent", "The hat matrix is idempotent",
        "If XᵀX is invertible and H = X(XᵀX)⁻¹Xᵀ, then H H = H.",
        [predicate("gram_invertible", Q.invertible, gram)],
        [Definition("H", H, mul(X, inv(gram), transpose(X)))],
    )
    (b.main(mul(H, H))
     .rw("def:H").rw("def:H")
     .rw("inverse_cancel")
     .rw("identity_mul")
     .to(H, "def:H")
     .qed())
    return b.proof()


@theorem(glossary={"V": "eigenvectors of $X^{\\top}X$", "Lambda": "eigenvalues of $X^{\\top}X$",
                   "L": "spectral factor $V\\Lambda^{-1/2}$"})
def ols_coefficients_as_attention():
    V, Lam, L = MatrixSymbol("V", p, p), MatrixSymbol("Lambda", p, p), MatrixSymbol("L", p, p)
    b = ProofBuilder(
        "ols_coefficients_as_attention", "OLS coefficients in attention form",
        "Under the spectral hypotheses, (XᵀX)⁻¹XᵀY = L (XL)ᵀ Y.",
        [Hypothesis("gram_spectral", gram, mul(V, Lam, transpose(V))),
         Hypothesis("V_orthonormal_columns", mul(transpose(V), V), Identity(p)),
         Hypothesis("V_orthonormal_rows", mul(V, transpose(V)), Identity(p)),
         predicate("Lambda_diagonal", Q.diagonal, Lam),
         predicate("Lambda_positive", Q.positive_definite, Lam)],
        [Definition("L", L, mul(V, power(Lam, Rational(-1, 2))))],
    )
    (b.main(mul(inv(gram), transpose(X), Y))
     .rw("thm:spectral_precision")
     .to(mul(L, transpose(mul(X, L)), Y), "transpose_product")
     .qed())
    return b.proof()
