"""A researcher's new identities (issue 41): 26 true identities stated the way the papers state them.

Written with the public authoring API only (``from derive import ...``), each chain closed by one call of
``.auto`` and nothing else (no hand steps, no helper lemmas): the statements are what a researcher would type
first, not tuned to the search.  Whether ``.auto`` succeeds is measured, not assumed
(``benchmarks/researcher_loop.py``); :data:`NEEDS_MORE_THAN_AUTO` names the theorems it did not prove when the
file was written, with what they would need.  Such a theorem still states its claim with ``.auto`` (so its statement
is read without a proof, and ``derive prove`` reports it as failed).

Kinds: chunkwise linear attention (chunk states as prefix sums), gated linear attention with a scalar decay,
the delta rule and DeltaNet's WY/UT forms, Bayesian linear regression (posterior mean as ridge, the dual/GP
form), Kalman updates (information-form gain, covariance update, Joseph form), GLS (homoscedastic GLS is OLS,
the GLS normal equations), sandwich covariances (homoscedastic, GLS), centring (idempotent, annihilates 1,
centred Gram), kernel ridge with a feature map, Nyström (exact under the span hypothesis), QR projections,
normalised linear attention, multi-query attention, QK/OV circuits.

Constructs the language lacks, so these are written in their nearest expressible form or left out:

- a causal mask ⊙ of general size (the intra-chunk term of chunkwise attention, masked attention as a matrix
  product): written as prefix families (chunk states by induction), the intra-chunk term left out;
- γ^{t−i} as a coefficient (the gated closed form Σ_i γ^{t−i} v_i k_iᵀ): written as a decayed key prefix
  Kγ_{t+1} = [γKγ_t; k_{t+1}ᵀ], whose row i holds γ^{t−i}k_iᵀ;
- diag(v) of a vector (the HC0 sandwich (XᵀX)⁻¹Xᵀdiag(e²)X(XᵀX)⁻¹, data-dependent GLA gates diag(α_t)):
  left out;
- the Kronecker product (vec(AXB) = (Bᵀ ⊗ A)vec(X), multi-head as I_h ⊗ W): left out;
- the ones vector with 1ᵀ1 = n known: written as a vector ``one`` with the hypothesis 1ᵀ1 = n·I₁.
"""

from sympy import Identity, MatrixSymbol, Q, ZeroMatrix

from derive import (
    Definition,
    Hypothesis,
    ProofBuilder,
    add,
    block,
    dim,
    family,
    index,
    inv,
    mul,
    predicate,
    scalar,
    theorem,
    transpose,
)
from derive.routes import Route

n, p, k, m, d, dv = dim("n"), dim("p"), dim("k"), dim("m"), dim("d"), dim("d_v")
X, Y, y = MatrixSymbol("X", n, p), MatrixSymbol("Y", n, k), MatrixSymbol("y", n, 1)
In, Ip = Identity(n), Identity(p)
gram = mul(transpose(X), X)
GRAM_INVERTIBLE = predicate("gram_invertible", Q.invertible, gram)
t = index("t")

#: Theorems ``.auto`` alone did not prove when this file was written, with what they would need instead.
NEEDS_MORE_THAN_AUTO: dict[str, str] = {
    "kalman_covariance_update": (
        "the Woodbury argument by hand: .auto finds no chain for (I − KH)P = (P⁻¹ + HᵀR⁻¹H)⁻¹, nor for the helper "
        "lemma (P⁻¹ + HᵀR⁻¹H)(I − KH)P = I (it would need R R⁻¹ inserted so that −HᵀS⁻¹HP − HᵀR⁻¹HPHᵀS⁻¹HP "
        "factors as −HᵀR⁻¹(R + HPHᵀ)S⁻¹HP, S = HPHᵀ + R)"),
}


def claim(chain_from, lhs, rhs) -> None:
    """``lhs = rhs``, by ``.auto`` alone."""
    chain_from(lhs).auto(rhs)


# --- chunkwise and gated linear attention -------------------------------------------------------------------

c = dim("c")  # the chunk length


@theorem(glossary={"K_c": "the keys of one chunk, one per row", "V_c": "the values of one chunk",
                   "S": "the state after each chunk", "K": "the keys of the chunks so far",
                   "V": "the values of the chunks so far", "Q_c": "the queries of the next chunk"})
def chunkwise_inter_chunk_term():
    Kc, Vc = family("K_c", (c, d)), family("V_c", (c, dv))
    K = family("K", lambda s: (s * c, d)).recurrence(ZeroMatrix(0, d), lambda s: block([[K[s]], [Kc[s + 1]]]))
    V = family("V", lambda s: (s * c, dv)).recurrence(ZeroMatrix(0, dv), lambda s: block([[V[s]], [Vc[s + 1]]]))
    S = family("S", (dv, d)).recurrence(ZeroMatrix(dv, d), lambda s: add(S[s], mul(transpose(Vc[s + 1]), Kc[s + 1])))
    Qc = MatrixSymbol("Q_c", c, d)
    b = ProofBuilder(
        "chunkwise_inter_chunk_term", "Chunkwise linear attention: the inter-chunk term",
        "With chunks of c tokens, the state S_t = S_{t−1} + V_tᵀK_t (S_0 = 0) after t chunks is V_{≤t}ᵀK_{≤t}, so "
        "the contribution of all earlier chunks to the next chunk's outputs, Q S_tᵀ, is Q K_{≤t}ᵀV_{≤t}, for every t "
        "(the intra-chunk term needs the causal mask, which the language lacks).",
        families=[Kc, Vc, K, V, S],
    )
    b.induction("state_is_prefix_sum", t, S[t], mul(transpose(V[t]), K[t])).auto()
    claim(b.main, mul(Qc, transpose(S[t])), mul(Qc, transpose(K[t]), V[t]))
    return b.proof()


gamma = scalar("gamma")


@theorem(glossary={"gamma": "the decay of the gate", "S": "the gated state",
                   "K_gamma": "the keys so far, row i decayed by $\\gamma^{t-i}$", "V": "the values so far"})
def gated_linear_attention():
    kf, vf = family("k", (p, 1)), family("v", (dv, 1))
    Kg = family("K_gamma", lambda s: (s, p)).recurrence(
        ZeroMatrix(0, p), lambda s: block([[mul(gamma, Kg[s])], [transpose(kf[s + 1])]]))
    V = family("V", lambda s: (s, dv)).recurrence(ZeroMatrix(0, dv), lambda s: block([[V[s]], [transpose(vf[s + 1])]]))
    S = family("S", (dv, p)).recurrence(
        ZeroMatrix(dv, p), lambda s: add(mul(gamma, S[s]), mul(vf[s + 1], transpose(kf[s + 1]))))
    q = MatrixSymbol("q", p, 1)
    b = ProofBuilder(
        "gated_linear_attention", "Gated linear attention with a scalar decay (RetNet)",
        "The gated state S_t = γS_{t−1} + v_tk_tᵀ (S_0 = 0) is Σ_i γ^{t−i}v_ik_iᵀ = V_tᵀK^γ_t, K^γ_t the keys with "
        "row i decayed by γ^{t−i}, so the output S_tq is V_tᵀK^γ_tq, for every t.",
        families=[kf, vf, Kg, V, S],
    )
    b.induction("state_is_decayed_prefix_sum", t, S[t], mul(transpose(V[t]), Kg[t])).auto()
    claim(b.main, mul(S[t], q), mul(transpose(V[t]), Kg[t], q))
    return b.proof()


# --- the delta rule and DeltaNet ----------------------------------------------------------------------------

beta = scalar("beta", positive=True)
kv, vv = MatrixSymbol("k", p, 1), MatrixSymbol("v", dv, 1)
S_state = MatrixSymbol("S", dv, p)


@theorem(glossary={"S": "the fast-weight state", "k": "the key", "v": "the value", "beta": "the write strength"})
def delta_rule_step():
    b = ProofBuilder(
        "delta_rule_step", "The delta rule is a gradient step",
        "One step of gradient descent with rate β on ½‖Sk − v‖², S − β(Sk − v)kᵀ, is the delta rule "
        "S(I − βkkᵀ) + βvkᵀ.",
    )
    claim(b.main, add(S_state, mul(-1, beta, add(mul(S_state, kv), mul(-1, vv)), transpose(kv))),
          add(mul(S_state, add(Ip, mul(-1, beta, kv, transpose(kv)))), mul(beta, vv, transpose(kv))))
    return b.proof()


def _delta_families():
    kf, vf = family("k", (p, 1)), family("v", (dv, 1))
    K = family("K", lambda s: (s, p)).recurrence(ZeroMatrix(0, p), lambda s: block([[K[s]], [transpose(kf[s + 1])]]))
    return kf, vf, K


@theorem(glossary={"P": "the product of the generalised Householder factors", "W": "the WY factor, one row per token",
                   "K": "the keys so far, one per row"})
def deltanet_wy_form():
    kf, _, K = _delta_families()
    P = family("P", (p, p)).recurrence(
        Ip, lambda s: mul(P[s], add(Ip, mul(-1, beta, kf[s + 1], transpose(kf[s + 1])))))
    W = family("W", lambda s: (s, p)).recurrence(
        ZeroMatrix(0, p),
        lambda s: block([[W[s]], [transpose(mul(beta, add(kf[s + 1], mul(-1, transpose(W[s]), K[s], kf[s + 1]))))]]))
    b = ProofBuilder(
        "deltanet_wy_form", "DeltaNet's WY representation",
        "The product P_t = Π_{i≤t}(I − βk_ik_iᵀ) of the delta rule's transition matrices is I − W_tᵀK_t, the rows "
        "of W given by w_t = β(k_t − W_{t−1}ᵀK_{t−1}k_t), for every t.",
        families=[kf, K, P, W],
    )
    b.induction("wy_form", t, P[t], add(Ip, mul(-1, transpose(W[t]), K[t]))).auto()
    claim(b.main, P[t], add(Ip, mul(-1, transpose(W[t]), K[t])))
    return b.proof()


@theorem(glossary={"S": "the delta-rule state", "U": "the pseudo-values, one row per token",
                   "K": "the keys so far, one per row"})
def deltanet_ut_form():
    kf, vf, K = _delta_families()
    S = family("S", (dv, p)).recurrence(
        ZeroMatrix(dv, p), lambda s: add(mul(S[s], add(Ip, mul(-1, beta, kf[s + 1], transpose(kf[s + 1])))),
                                         mul(beta, vf[s + 1], transpose(kf[s + 1]))))
    U = family("U", lambda s: (s, dv)).recurrence(
        ZeroMatrix(0, dv),
        lambda s: block([[U[s]], [transpose(mul(beta, add(vf[s + 1], mul(-1, transpose(U[s]), K[s], kf[s + 1]))))]]))
    q = MatrixSymbol("q", p, 1)
    b = ProofBuilder(
        "deltanet_ut_form", "The delta-rule state in DeltaNet's UT form",
        "The delta-rule state S_t = S_{t−1}(I − βk_tk_tᵀ) + βv_tk_tᵀ (S_0 = 0) is U_tᵀK_t with pseudo-values "
        "u_t = β(v_t − U_{t−1}ᵀK_{t−1}k_t), so the output S_tq is U_tᵀK_tq: linear attention on the pseudo-values.",
        families=[kf, vf, K, S, U],
    )
    b.induction("ut_form", t, S[t], mul(transpose(U[t]), K[t])).auto()
    claim(b.main, mul(S[t], q), mul(transpose(U[t]), K[t], q))
    return b.proof()


# --- Bayesian linear regression -----------------------------------------------------------------------------

sigma, tau = scalar("sigma", positive=True), scalar("tau", positive=True)
lam = scalar("lambda", positive=True)


@theorem(glossary={"sigma": "the noise standard deviation", "tau": "the prior standard deviation",
                   "lambda": "the ridge penalty"},
         routes=[Route("posterior_mean", "main", {"X": "X", "y": "y", "lambda": "lam"})])
def bayesian_posterior_mean_is_ridge():
    b = ProofBuilder(
        "bayesian_posterior_mean_is_ridge", "The posterior mean is ridge regression",
        "With prior β ~ N(0, τ²I) and noise N(0, σ²I), the posterior mean (XᵀX/σ² + I/τ²)⁻¹Xᵀy/σ² is the ridge "
        "estimator (XᵀX + λI)⁻¹Xᵀy with λ = σ²/τ².",
        [Hypothesis("penalty", lam, sigma ** 2 / tau ** 2)],
    )
    precision = add(mul(1 / sigma ** 2, gram), mul(1 / tau ** 2, Ip))
    claim(b.main, mul(inv(precision), 1 / sigma ** 2, transpose(X), y),
          mul(inv(add(gram, mul(lam, Ip))), transpose(X), y))
    return b.proof()


Sigma0 = MatrixSymbol("Sigma_0", p, p)


@theorem(glossary={"Sigma_0": "the prior covariance", "sigma": "the noise standard deviation"},
         routes=[Route("posterior_mean_dual", "main", {"X": "X", "y": "y", "Sigma_0": "Sigma0", "sigma": "sigma"})])
def bayesian_posterior_mean_dual():
    b = ProofBuilder(
        "bayesian_posterior_mean_dual", "The posterior mean in function space",
        "With prior β ~ N(0, Σ₀), Σ₀ symmetric positive definite, and noise N(0, σ²I), the weight-space posterior "
        "mean (XᵀX + σ²Σ₀⁻¹)⁻¹Xᵀy equals the function-space (Gaussian-process) form Σ₀Xᵀ(XΣ₀Xᵀ + σ²I)⁻¹y.",
        [predicate("prior_symmetric", Q.symmetric, Sigma0), predicate("prior_positive_definite", Q.positive_definite,
                                                                       Sigma0)],
    )
    claim(b.main, mul(inv(add(gram, mul(sigma ** 2, inv(Sigma0)))), transpose(X), y),
          mul(Sigma0, transpose(X), inv(add(mul(X, Sigma0, transpose(X)), mul(sigma ** 2, In))), y))
    return b.proof()


# --- Kalman updates -----------------------------------------------------------------------------------------

P_prior, H_obs, R_noise = MatrixSymbol("P", p, p), MatrixSymbol("H", m, p), MatrixSymbol("R", m, m)
K_gain = MatrixSymbol("K", p, m)
Im = Identity(m)
innovation = add(mul(H_obs, P_prior, transpose(H_obs)), R_noise)  # HPHᵀ + R
KALMAN_HYPOTHESES = [predicate("P_symmetric", Q.symmetric, P_prior),
                     predicate("P_positive_definite", Q.positive_definite, P_prior),
                     predicate("R_symmetric", Q.symmetric, R_noise),
                     predicate("R_positive_definite", Q.positive_definite, R_noise)]
GAIN = Definition("K", K_gain, mul(P_prior, transpose(H_obs), inv(innovation)))
information = add(inv(P_prior), mul(transpose(H_obs), inv(R_noise), H_obs))  # P⁻¹ + HᵀR⁻¹H
KALMAN_GLOSSARY = {"P": "the prior covariance", "H": "the observation matrix", "R": "the observation noise covariance",
                   "K": "the Kalman gain"}


@theorem(glossary=KALMAN_GLOSSARY,
         routes=[Route("kalman_gain_information", "main", {"P": "P", "H": "H", "R": "R"})])
def kalman_gain_information_form():
    b = ProofBuilder(
        "kalman_gain_information_form", "The Kalman gain in information form",
        "For symmetric positive definite P and R, the gain K = PHᵀ(HPHᵀ + R)⁻¹ is (P⁻¹ + HᵀR⁻¹H)⁻¹HᵀR⁻¹.",
        KALMAN_HYPOTHESES, [GAIN],
    )
    claim(b.main, K_gain, mul(inv(information), transpose(H_obs), inv(R_noise)))
    return b.proof()


@theorem(glossary=KALMAN_GLOSSARY)
def kalman_covariance_update():
    b = ProofBuilder(
        "kalman_covariance_update", "The Kalman covariance update",
        "For symmetric positive definite P and R and the gain K = PHᵀ(HPHᵀ + R)⁻¹, the posterior covariance "
        "(I − KH)P is (P⁻¹ + HᵀR⁻¹H)⁻¹.",
        KALMAN_HYPOTHESES, [GAIN],
    )
    claim(b.main, mul(add(Ip, mul(-1, K_gain, H_obs)), P_prior), inv(information))
    return b.proof()


@theorem(glossary=KALMAN_GLOSSARY)
def kalman_joseph_form():
    b = ProofBuilder(
        "kalman_joseph_form", "The Joseph form at the optimal gain",
        "For symmetric P and R with HPHᵀ + R invertible and the gain K = PHᵀ(HPHᵀ + R)⁻¹, the Joseph form "
        "(I − KH)P(I − KH)ᵀ + KRKᵀ equals (I − KH)P.",
        [predicate("P_symmetric", Q.symmetric, P_prior), predicate("R_symmetric", Q.symmetric, R_noise),
         predicate("innovation_invertible", Q.invertible, innovation)],
        [GAIN],
    )
    update = add(Ip, mul(-1, K_gain, H_obs))
    claim(b.main, add(mul(update, P_prior, transpose(update)), mul(K_gain, R_noise, transpose(K_gain))),
          mul(update, P_prior))
    return b.proof()


# --- generalised least squares and sandwich covariances -----------------------------------------------------

Sigma = MatrixSymbol("Sigma", n, n)
gls_gram = mul(transpose(X), inv(Sigma), X)  # XᵀΣ⁻¹X
beta_gls = MatrixSymbol("beta_GLS", p, k)
GLS = Definition("beta_GLS", beta_gls, mul(inv(gls_gram), transpose(X), inv(Sigma), Y))
GLS_HYPOTHESES = [predicate("Sigma_invertible", Q.invertible, Sigma),
                  predicate("gls_gram_invertible", Q.invertible, gls_gram)]


@theorem(glossary={"Sigma": "the noise covariance", "sigma": "the noise standard deviation"},
         routes=[Route("gls_homoscedastic", "main", {"X": "X", "Y": "Y"})])
def gls_homoscedastic_is_ols():
    b = ProofBuilder(
        "gls_homoscedastic_is_ols", "GLS with spherical noise is OLS",
        "If Σ = σ²I and XᵀX is invertible, the GLS estimator (XᵀΣ⁻¹X)⁻¹XᵀΣ⁻¹Y is the OLS estimator (XᵀX)⁻¹XᵀY.",
        [Hypothesis("spherical", Sigma, mul(sigma ** 2, In)), GRAM_INVERTIBLE],
    )
    claim(b.main, mul(inv(gls_gram), transpose(X), inv(Sigma), Y), mul(inv(gram), transpose(X), Y))
    return b.proof()


@theorem(glossary={"Sigma": "the noise covariance", "beta_GLS": "the GLS estimator"})
def gls_normal_equations():
    b = ProofBuilder(
        "gls_normal_equations", "The GLS residuals are Σ⁻¹-orthogonal to the regressors",
        "If Σ and XᵀΣ⁻¹X are invertible, β̂_GLS = (XᵀΣ⁻¹X)⁻¹XᵀΣ⁻¹Y solves XᵀΣ⁻¹(Y − Xβ̂_GLS) = 0.",
        GLS_HYPOTHESES, [GLS],
    )
    claim(b.main, mul(transpose(X), inv(Sigma), add(Y, mul(-1, X, beta_gls))), ZeroMatrix(p, k))
    return b.proof()


Omega = MatrixSymbol("Omega", n, n)


@theorem(glossary={"Omega": "the noise covariance", "sigma": "the noise standard deviation"})
def sandwich_homoscedastic():
    b = ProofBuilder(
        "sandwich_homoscedastic", "The sandwich covariance under homoscedasticity",
        "If Ω = σ²I and XᵀX is invertible, the sandwich (XᵀX)⁻¹XᵀΩX(XᵀX)⁻¹ is σ²(XᵀX)⁻¹.",
        [Hypothesis("homoscedastic", Omega, mul(sigma ** 2, In)), GRAM_INVERTIBLE],
    )
    claim(b.main, mul(inv(gram), transpose(X), Omega, X, inv(gram)), mul(sigma ** 2, inv(gram)))
    return b.proof()


@theorem(glossary={"Sigma": "the noise covariance", "A": "the GLS estimator as a linear map of Y"})
def sandwich_gls():
    A = MatrixSymbol("A", p, n)
    b = ProofBuilder(
        "sandwich_gls", "The covariance of the GLS estimator",
        "For symmetric invertible Σ with XᵀΣ⁻¹X invertible, the GLS estimator AY, A = (XᵀΣ⁻¹X)⁻¹XᵀΣ⁻¹, has the "
        "sandwich covariance AΣAᵀ = (XᵀΣ⁻¹X)⁻¹.",
        [predicate("Sigma_symmetric", Q.symmetric, Sigma), *GLS_HYPOTHESES],
        [Definition("A", A, mul(inv(gls_gram), transpose(X), inv(Sigma)))],
    )
    claim(b.main, mul(A, Sigma, transpose(A)), inv(gls_gram))
    return b.proof()


# --- centring -----------------------------------------------------------------------------------------------

one = MatrixSymbol("one", n, 1)
C_centre = MatrixSymbol("C", n, n)
ONES = Hypothesis("ones_norm", mul(transpose(one), one), mul(n, Identity(1)))  # 1ᵀ1 = n
CENTRE = Definition("C", C_centre, add(In, mul(-1, 1 / n, one, transpose(one))))
CENTRE_GLOSSARY = {"one": "the ones vector", "C": "the centring matrix"}


@theorem(glossary=CENTRE_GLOSSARY)
def centring_idempotent():
    b = ProofBuilder("centring_idempotent", "The centring matrix is idempotent",
                     "With 1ᵀ1 = n, C = I − (1/n)11ᵀ satisfies C² = C.", [ONES], [CENTRE])
    claim(b.main, mul(C_centre, C_centre), C_centre)
    return b.proof()


@theorem(glossary=CENTRE_GLOSSARY)
def centring_annihilates_ones():
    b = ProofBuilder("centring_annihilates_ones", "Centring removes the mean",
                     "With 1ᵀ1 = n, C = I − (1/n)11ᵀ satisfies C1 = 0.", [ONES], [CENTRE])
    claim(b.main, mul(C_centre, one), ZeroMatrix(n, 1))
    return b.proof()


@theorem(glossary={**CENTRE_GLOSSARY, "x_bar": "the column means of X"},
         routes=[Route("centred_gram", "main", {"X": "X", "x_bar": "x_bar"})])
def centred_gram():
    x_bar = MatrixSymbol("x_bar", p, 1)
    b = ProofBuilder(
        "centred_gram", "The centred Gram matrix",
        "With 1ᵀ1 = n, C = I − (1/n)11ᵀ and the column means x̄ = (1/n)Xᵀ1, XᵀCX = XᵀX − n x̄x̄ᵀ.",
        [ONES], [CENTRE, Definition("x_bar", x_bar, mul(1 / n, transpose(X), one))],
    )
    claim(b.main, mul(transpose(X), C_centre, X), add(gram, mul(-1, n, x_bar, transpose(x_bar))))
    return b.proof()


# --- kernel ridge with a feature map, Nyström ---------------------------------------------------------------

D = dim("D")  # the feature dimension
Phi, phi_q = MatrixSymbol("Phi", n, D), MatrixSymbol("phi_q", D, 1)
K_kernel, k_q = MatrixSymbol("K", n, n), MatrixSymbol("k_q", n, 1)


@theorem(glossary={"Phi": "the features $\\varphi(x_i)$ of the training inputs, one per row",
                   "phi_q": "the features of the query", "K": "the kernel matrix", "k_q": "the query's kernel column"},
         routes=[Route("kernel_ridge_prediction", "main", {"K": "K", "k_q": "k_q", "y": "y", "lambda": "lam"})])
def kernel_ridge_feature_map():
    D_ = Identity(D)
    b = ProofBuilder(
        "kernel_ridge_feature_map", "Kernel ridge regression with a feature map",
        "For λ > 0, ridge regression on the features Φ predicts φ_qᵀ(ΦᵀΦ + λI)⁻¹Φᵀy at a query, which is "
        "k_qᵀ(K + λI)⁻¹y with the kernel matrix K = ΦΦᵀ and k_q = Φφ_q.",
        [], [Definition("K", K_kernel, mul(Phi, transpose(Phi))), Definition("k_q", k_q, mul(Phi, phi_q))],
    )
    claim(b.main, mul(transpose(phi_q), inv(add(mul(transpose(Phi), Phi), mul(lam, D_))), transpose(Phi), y),
          mul(transpose(k_q), inv(add(K_kernel, mul(lam, In))), y))
    return b.proof()


@theorem(glossary={"Phi": "the features of the n points", "Phi_m": "the features of the m landmarks",
                   "A": "the coefficients of the points on the landmarks", "C": "the kernel columns of the landmarks",
                   "W": "the kernel matrix of the landmarks", "K": "the kernel matrix"})
def nystrom_exact_in_span():
    Phi_m, A, C, W = (MatrixSymbol("Phi_m", m, D), MatrixSymbol("A", n, m), MatrixSymbol("C", n, m),
                      MatrixSymbol("W", m, m))
    b = ProofBuilder(
        "nystrom_exact_in_span", "Nyström is exact when the features lie in the landmarks' span",
        "If Φ = AΦ_m (every point's features in the span of the landmarks') and W = Φ_mΦ_mᵀ is invertible, the "
        "Nyström approximation CW⁻¹Cᵀ with C = ΦΦ_mᵀ is the kernel matrix K = ΦΦᵀ.",
        [Hypothesis("span", Phi, mul(A, Phi_m)), predicate("landmarks_independent", Q.invertible,
                                                           mul(Phi_m, transpose(Phi_m)))],
        [Definition("K", K_kernel, mul(Phi, transpose(Phi))), Definition("C", C, mul(Phi, transpose(Phi_m))),
         Definition("W", W, mul(Phi_m, transpose(Phi_m)))],
    )
    claim(b.main, mul(C, inv(W), transpose(C)), K_kernel)
    return b.proof()


# --- QR projections -----------------------------------------------------------------------------------------

Qf, Rf = MatrixSymbol("Q", n, p), MatrixSymbol("R", p, p)
QR_HYPOTHESES = [Hypothesis("qr", X, mul(Qf, Rf)), Hypothesis("Q_orthonormal_columns", mul(transpose(Qf), Qf), Ip),
                 predicate("R_invertible", Q.invertible, Rf)]
QR_GLOSSARY = {"Q": "the orthonormal factor of $X = QR$", "R": "the triangular factor of $X = QR$"}


@theorem(glossary=QR_GLOSSARY)
def qr_hat_matrix():
    b = ProofBuilder("qr_hat_matrix", "The hat matrix through QR",
                     "If X = QR with QᵀQ = I and R invertible, X(XᵀX)⁻¹Xᵀ = QQᵀ.", QR_HYPOTHESES)
    claim(b.main, mul(X, inv(gram), transpose(X)), mul(Qf, transpose(Qf)))
    return b.proof()


@theorem(glossary=QR_GLOSSARY)
def qr_residuals():
    b = ProofBuilder("qr_residuals", "The OLS residuals through QR",
                     "If X = QR with QᵀQ = I and R invertible, the residuals Y − X(XᵀX)⁻¹XᵀY are (I − QQᵀ)Y.",
                     QR_HYPOTHESES)
    claim(b.main, add(Y, mul(-1, X, inv(gram), transpose(X), Y)), mul(add(In, mul(-1, Qf, transpose(Qf))), Y))
    return b.proof()


# --- normalised and multi-query attention, QK and OV circuits -----------------------------------------------

Kx, q_vec, Vx = MatrixSymbol("K", n, d), MatrixSymbol("q", d, 1), MatrixSymbol("V", n, dv)
normaliser = mul(transpose(one), Kx, q_vec)  # 1ᵀKq, 1×1
NORMALISED_GLOSSARY = {"K": "the (non-negative) feature-mapped keys", "q": "the feature-mapped query",
                       "V": "the values", "one": "the ones vector"}


@theorem(glossary={**NORMALISED_GLOSSARY, "kappa": "a positive scale"},
         routes=[Route("normalised_attention", "main", {"K": "K", "q": "q", "V": "V", "one": "one"})])
def normalised_attention_scale_invariant():
    kappa = scalar("kappa", positive=True)
    b = ProofBuilder(
        "normalised_attention_scale_invariant", "Normalised linear attention ignores the query's scale",
        "If 1ᵀKq is invertible and κ > 0, the normalised output (1ᵀK(κq))⁻¹VᵀK(κq) is (1ᵀKq)⁻¹VᵀKq.",
        [predicate("normaliser_invertible", Q.invertible, normaliser)],
    )
    scaled = mul(transpose(one), Kx, mul(kappa, q_vec))
    claim(b.main, mul(inv(scaled), transpose(Vx), Kx, mul(kappa, q_vec)),
          mul(inv(normaliser), transpose(Vx), Kx, q_vec))
    return b.proof()


@theorem(glossary={**NORMALISED_GLOSSARY, "a": "the attention weights"})
def normalised_attention_weights_sum_to_one():
    a = MatrixSymbol("a", n, 1)
    b = ProofBuilder(
        "normalised_attention_weights_sum_to_one", "Normalised attention weights sum to one",
        "If 1ᵀKq is invertible, the weights a = Kq(1ᵀKq)⁻¹ satisfy 1ᵀa = 1, and the output is Vᵀa.",
        [predicate("normaliser_invertible", Q.invertible, normaliser)],
        [Definition("a", a, mul(Kx, q_vec, inv(normaliser)))],
    )
    claim(b.main, mul(transpose(one), a), Identity(1))
    return b.proof()


h = dim("h")  # the head width
W_Q1, W_Q2 = MatrixSymbol("W_Q1", d, h), MatrixSymbol("W_Q2", d, h)
W_K1, W_K2, W_V1, W_V2 = (MatrixSymbol(f"W_{r}{i}", d, h) for r in "KV" for i in (1, 2))
W_K, W_V = MatrixSymbol("W_K", d, h), MatrixSymbol("W_V", d, h)
O_1, O_2 = MatrixSymbol("O_1", h, d), MatrixSymbol("O_2", h, d)
Xt = MatrixSymbol("X", n, d)  # the tokens, one per row


@theorem(glossary={"W_K": "the shared key projection", "W_V": "the shared value projection"},
         routes=[Route("multi_query_attention", "main", {"X": "X", "W_Q1": "W_Q1", "W_Q2": "W_Q2", "W_K": "W_K",
                                                          "W_V": "W_V", "O_1": "O_1", "O_2": "O_2"})])
def multi_query_attention():
    def head(W_Q, W_K_, W_V_, O):  # one linear-attention head: (XW_Q)(XW_K)ᵀ(XW_V)O
        return mul(Xt, W_Q, transpose(mul(Xt, W_K_)), Xt, W_V_, O)

    b = ProofBuilder(
        "multi_query_attention", "Multi-head attention with tied keys and values is multi-query attention",
        "If the heads share their key and value projections (W_K1 = W_K2 = W_K, W_V1 = W_V2 = W_V), two linear "
        "attention heads are XW_Q1 (KᵀV) O_1 + XW_Q2 (KᵀV) O_2 with the one cache K = XW_K, V = XW_V.",
        [Hypothesis("tied_key_1", W_K1, W_K), Hypothesis("tied_key_2", W_K2, W_K),
         Hypothesis("tied_value_1", W_V1, W_V), Hypothesis("tied_value_2", W_V2, W_V)],
    )
    cache = mul(transpose(mul(Xt, W_K)), Xt, W_V)  # KᵀV
    claim(b.main, add(head(W_Q1, W_K1, W_V1, O_1), head(W_Q2, W_K2, W_V2, O_2)),
          add(mul(Xt, W_Q1, cache, O_1), mul(Xt, W_Q2, cache, O_2)))
    return b.proof()


W_QK, W_OV = MatrixSymbol("W_QK", d, d), MatrixSymbol("W_OV", d, d)
W_Qc = MatrixSymbol("W_Q", d, h)
CIRCUITS = [Definition("W_QK", W_QK, mul(W_Qc, transpose(W_K))), Definition("W_OV", W_OV, mul(W_V, O_1))]
CIRCUIT_GLOSSARY = {"W_QK": "the QK circuit $W_QW_K^\\top$", "W_OV": "the OV circuit $W_VW_O$", "O_1": "the output "
                    "projection"}


@theorem(glossary=CIRCUIT_GLOSSARY,
         routes=[Route("attention_by_circuits", "main", {"X": "X", "W_QK": "W_QK", "W_OV": "W_OV"})])
def qk_ov_circuits():
    b = ProofBuilder(
        "qk_ov_circuits", "A linear attention head is its QK and OV circuits",
        "The head (XW_Q)(XW_K)ᵀ(XW_V)W_O is X W_QK Xᵀ X W_OV with W_QK = W_QW_Kᵀ and W_OV = W_VW_O: only the "
        "products of the projections matter.", [], CIRCUITS,
    )
    claim(b.main, mul(Xt, W_Qc, transpose(mul(Xt, W_K)), Xt, W_V, O_1), mul(Xt, W_QK, transpose(Xt), Xt, W_OV))
    return b.proof()


@theorem(glossary={**CIRCUIT_GLOSSARY, "x_i": "the query token", "x_j": "the key token"})
def qk_circuit_bilinear():
    x_i, x_j = MatrixSymbol("x_i", d, 1), MatrixSymbol("x_j", d, 1)
    b = ProofBuilder(
        "qk_circuit_bilinear", "The attention score is a bilinear form of the QK circuit",
        "The score of query token x_i against key token x_j, (W_Qᵀx_i)ᵀ(W_Kᵀx_j), is x_iᵀW_QKx_j, W_QK = W_QW_Kᵀ.",
        [], CIRCUITS[:1],
    )
    claim(b.main, mul(transpose(mul(transpose(W_Qc), x_i)), transpose(W_K), x_j), mul(transpose(x_i), W_QK, x_j))
    return b.proof()
