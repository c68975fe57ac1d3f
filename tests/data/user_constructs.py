"""A user's theorem file for the ones vector and diag(v) (issue 41, item 4), public authoring API only.

- the centring matrix C = I − (1/n)11ᵀ (``derive.ones(n)``: 1ᵀ1 = n is the axiom ``ones_inner``) is idempotent and
  annihilates 1;
- the HC0 sandwich (XᵀX)⁻¹Xᵀdiag(e)X(XᵀX)⁻¹ is its own transpose (diag(e) is symmetric);
- weighted least squares with W = diag(w) is GLS with Σ := diag(w)⁻¹ (every entry of w non-zero:
  ``predicate(..., Q.invertible, diag(w))``);
- a diagonal of equal entries: diag(c·1) with c ≠ 0 is invertible.
"""

from sympy import Identity, MatrixSymbol, Q, ZeroMatrix

from derive import (
    Definition,
    ProofBuilder,
    add,
    diag,
    dim,
    inv,
    mul,
    ones,
    predicate,
    scalar,
    theorem,
    transpose,
)

n, p = dim("n"), dim("p")
X, y, e, w = MatrixSymbol("X", n, p), MatrixSymbol("y", n, 1), MatrixSymbol("e", n, 1), MatrixSymbol("w", n, 1)
one, C = ones(n), MatrixSymbol("C", n, n)
CENTRE = Definition("C", C, add(Identity(n), mul(-1, 1 / n, one, transpose(one))))
CENTRE_GLOSSARY = {"C": "the centring matrix $I - \\frac{1}{n}\\mathbf{1}\\mathbf{1}^{\\top}$"}
gram = mul(transpose(X), X)


@theorem(glossary=CENTRE_GLOSSARY)
def centring_idempotent():
    b = ProofBuilder("centring_idempotent", "The centring matrix is idempotent",
                     "C = I − (1/n)11ᵀ satisfies C² = C (1ᵀ1 = n).", [], [CENTRE])
    b.main(mul(C, C)).auto(C)
    return b.proof()


@theorem(glossary=CENTRE_GLOSSARY)
def centring_annihilates_ones():
    b = ProofBuilder("centring_annihilates_ones", "Centring removes the mean",
                     "C = I − (1/n)11ᵀ satisfies C1 = 0 (1ᵀ1 = n).", [], [CENTRE])
    b.main(mul(C, one)).auto(ZeroMatrix(n, 1))
    return b.proof()


@theorem(glossary={"e": "the residuals"})
def hc0_sandwich_symmetric():
    bread = inv(gram)
    sandwich = mul(bread, transpose(X), diag(e), X, bread)
    b = ProofBuilder("hc0_sandwich_symmetric", "The HC0 sandwich is symmetric",
                     "If XᵀX is invertible, V = (XᵀX)⁻¹Xᵀdiag(e)X(XᵀX)⁻¹ satisfies Vᵀ = V.",
                     [predicate("gram_invertible", Q.invertible, gram)])
    b.main(transpose(sandwich)).auto(sandwich)
    return b.proof()


Sigma = MatrixSymbol("Sigma", n, n)


@theorem(glossary={"w": "the weights", "Sigma": "the noise covariance $\\operatorname{diag}(w)^{-1}$"})
def weighted_is_gls():
    W = diag(w)
    b = ProofBuilder(
        "weighted_is_gls", "Weighted least squares is GLS",
        "If every weight is non-zero (diag(w) invertible) and XᵀWX is invertible for W = diag(w), then with "
        "Σ := diag(w)⁻¹, (XᵀΣ⁻¹X)⁻¹XᵀΣ⁻¹y = (XᵀWX)⁻¹XᵀWy.",
        [predicate("weights_nonzero", Q.invertible, W),
         predicate("weighted_gram", Q.invertible, mul(transpose(X), W, X))],
        [Definition("Sigma", Sigma, inv(W))],
    )
    b.main(mul(inv(mul(transpose(X), inv(Sigma), X)), transpose(X), inv(Sigma), y)).auto(
        mul(inv(mul(transpose(X), W, X)), transpose(X), W, y))
    return b.proof()


c = scalar("c", positive=True)


@theorem(glossary={"c": "a positive constant"})
def constant_diagonal_inverse():
    D = diag(mul(c, one))
    b = ProofBuilder("constant_diagonal_inverse", "A constant diagonal is invertible",
                     "For c > 0, diag(c1)⁻¹diag(c1)y = y.")
    b.main(mul(inv(D), D, y)).auto(y)
    return b.proof()
