"""A user's theorem file for definedness that follows (issue 41, item 3), public authoring API only.

Each statement is written as a researcher writes it, and each chain is closed by one ``.auto`` call:

- GLS with Σ = σ²I is OLS, with σ > 0 declared: XᵀΣ⁻¹X unfolds to σ⁻²XᵀX, invertible because XᵀX is and σ ≠ 0;
- the same with σ of unknown sign and the scalar fact σ ≠ 0 (``predicate(..., Q.nonzero, sigma)``);
- (σ²XᵀX)⁻¹ = σ⁻²(XᵀX)⁻¹: the coefficient taken out of an inverse whose product has non-square factors;
- the Bayesian posterior mean (XᵀX/σ² + I/τ²)⁻¹Xᵀy/σ² is the ridge estimator with λ = σ²/τ² (σ, τ > 0), written
  with the penalty σ²/τ² in the resolvent;
- a 1×1 quantity known non-zero stated as a scalar fact: with 1 + xᵀPx ≠ 0, (1 + xᵀPx)⁻¹ is a coefficient.
"""

from sympy import Identity, MatrixSymbol, Q, Trace

from derive import Hypothesis, ProofBuilder, add, dim, inv, mul, predicate, scalar, theorem, transpose

n, p, k = dim("n"), dim("p"), dim("k")
X, Y, y, Sigma = MatrixSymbol("X", n, p), MatrixSymbol("Y", n, k), MatrixSymbol("y", n, 1), MatrixSymbol("Sigma", n, n)
In, Ip = Identity(n), Identity(p)
gram = mul(transpose(X), X)
GRAM_INVERTIBLE = predicate("gram_invertible", Q.invertible, gram)
sigma, tau = scalar("sigma", positive=True), scalar("tau", positive=True)
s = scalar("s")  # a real scale of unknown sign


def gls(covariance):
    """(XᵀΣ⁻¹X)⁻¹XᵀΣ⁻¹Y for the covariance Σ."""
    return mul(inv(mul(transpose(X), inv(covariance), X)), transpose(X), inv(covariance), Y)


@theorem(glossary={"Sigma": "the noise covariance", "sigma": "the noise standard deviation"})
def gls_spherical_is_ols():
    b = ProofBuilder(
        "gls_spherical_is_ols", "GLS with spherical noise is OLS",
        "If Σ = σ²I with σ > 0 and XᵀX is invertible, then (XᵀΣ⁻¹X)⁻¹XᵀΣ⁻¹Y = (XᵀX)⁻¹XᵀY.",
        [Hypothesis("spherical", Sigma, mul(sigma ** 2, In)), GRAM_INVERTIBLE],
    )
    b.main(gls(Sigma)).auto(mul(inv(gram), transpose(X), Y))
    return b.proof()


@theorem(glossary={"Sigma": "the noise covariance", "s": "a non-zero scale"})
def gls_scaled_is_ols():
    b = ProofBuilder(
        "gls_scaled_is_ols", "GLS with a non-zero multiple of the identity is OLS",
        "If Σ = s²I with s ≠ 0 and XᵀX is invertible, then (XᵀΣ⁻¹X)⁻¹XᵀΣ⁻¹Y = (XᵀX)⁻¹XᵀY.",
        [Hypothesis("scaled", Sigma, mul(s ** 2, In)), predicate("s_nonzero", Q.nonzero, s), GRAM_INVERTIBLE],
    )
    b.main(gls(Sigma)).auto(mul(inv(gram), transpose(X), Y))
    return b.proof()


@theorem(glossary={"sigma": "a positive scale"})
def scaled_gram_inverse():
    b = ProofBuilder(
        "scaled_gram_inverse", "The inverse of a scaled Gram matrix",
        "If XᵀX is invertible and σ > 0, then (σ²XᵀX)⁻¹Xᵀy = σ⁻²(XᵀX)⁻¹Xᵀy.",
        [GRAM_INVERTIBLE],
    )
    b.main(mul(inv(mul(sigma ** 2, gram)), transpose(X), y)).auto(mul(sigma ** -2, inv(gram), transpose(X), y))
    return b.proof()


@theorem(glossary={"sigma": "the noise standard deviation", "tau": "the prior standard deviation"})
def bayesian_posterior_mean():
    b = ProofBuilder(
        "bayesian_posterior_mean", "The Bayesian posterior mean is a ridge estimator",
        "With prior β ~ N(0, τ²I) and noise N(0, σ²I), the posterior mean (XᵀX/σ² + I/τ²)⁻¹Xᵀy/σ² is "
        "(XᵀX + (σ²/τ²)I)⁻¹Xᵀy.",
    )
    precision = add(mul(1 / sigma ** 2, gram), mul(1 / tau ** 2, Ip))
    b.main(mul(inv(precision), 1 / sigma ** 2, transpose(X), y)).auto(
        mul(inv(add(gram, mul(sigma ** 2 / tau ** 2, Ip))), transpose(X), y))
    return b.proof()


x, P = MatrixSymbol("x", p, 1), MatrixSymbol("P", p, p)


@theorem(glossary={"x": "a new observation", "P": "a covariance"})
def scalar_fact_denominator():
    denominator = Trace(mul(transpose(x), P, x)) + 1
    b = ProofBuilder(
        "scalar_fact_denominator", "A gain with a denominator known non-zero",
        "If 1 + xᵀPx ≠ 0, then Px(1 + xᵀPx)⁻¹ + Px(1 + xᵀPx)⁻¹ = 2Px(1 + xᵀPx)⁻¹.",
        [predicate("denominator_nonzero", Q.nonzero, denominator)],
    )
    gain = mul(1 / denominator, P, x)
    b.main(add(gain, gain)).auto(mul(2 / denominator, P, x))
    return b.proof()
