"""Ordinary identities a researcher writes, each exported to Coq and accepted by coqc (issue 41 item 5).

Written with the public authoring API only, as the literature states them, every chain proved by ``.auto``:
DeltaNet's WY form of the delta rule (a product of Householder-like factors I − βkkᵀ as I − WᵀK, by induction on
families whose size is the index), Bayesian linear regression (posterior covariance and mean with a noise scale σ
and a prior covariance Σ₀, rational functions of σ), centring with the coefficient 1/n (C = I − (1/n)11ᵀ is
idempotent, 1ᵀ1 = n), a family whose members are s × s (DeltaNet's UT transform), families of c·s rows (chunkwise
attention) and with a decayed block (gated attention), generalized least squares through a whitening matrix,
Woodbury with a scalar and the Kalman gain.  ``tests/test_coq_user.py`` exports each and compiles it with coqc.
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

n, p, k, d, m = dim("n"), dim("p"), dim("k"), dim("d"), dim("m")
X, Y, y = MatrixSymbol("X", n, p), MatrixSymbol("Y", n, k), MatrixSymbol("y", n, 1)
In, Ip = Identity(n), Identity(p)
t = index("t")
beta = scalar("beta", positive=True)
sigma = scalar("sigma", positive=True)
gram = mul(transpose(X), X)


# --- DeltaNet: the WY form of the delta rule ---------------------------------------------------------------------

@theorem(glossary={"k": "the keys, one column each", "K": "the keys so far, one per row",
                   "W": "the WY vectors so far, one per row", "P": "the product of the delta-rule factors",
                   "beta": "the learning rate"})
def delta_rule_wy_form():
    kf = family("k", (d, 1))
    K = family("K", lambda s: (s, d)).recurrence(ZeroMatrix(0, d), lambda s: block([[K[s]], [transpose(kf[s + 1])]]))
    W = family("W", lambda s: (s, d))
    W.recurrence(ZeroMatrix(0, d), lambda s: block([[W[s]], [mul(beta, transpose(add(
        kf[s + 1], mul(-1, transpose(W[s]), K[s], kf[s + 1]))))]]))
    Id = Identity(d)
    P = family("P", (d, d)).recurrence(Id, lambda s: mul(P[s], add(Id, mul(-1, beta, kf[s + 1], transpose(kf[s + 1])))))
    b = ProofBuilder(
        "delta_rule_wy_form", "The WY form of the delta rule",
        "The product P_t = (I − βk₁k₁ᵀ)⋯(I − βk_tk_tᵀ) is I − W_tᵀK_t, where K_t stacks the keys and W_t the "
        "vectors w_s = β(k_s − W_{s−1}ᵀK_{s−1}k_s), for every t.",
        families=[kf, K, W, P],
    )
    b.induction("wy", t, P[t], add(Id, mul(-1, transpose(W[t]), K[t]))).auto()
    q = MatrixSymbol("q", d, 1)
    b.main(mul(P[t], q)).auto(add(q, mul(-1, transpose(W[t]), K[t], q)))
    return b.proof()


@theorem(glossary={"k": "the keys", "v": "the values", "S": "the delta-rule state", "U": "the WY values so far"})
def delta_rule_state_wy_form():
    kf, vf = family("k", (d, 1)), family("v", (m, 1))
    K = family("K", lambda s: (s, d)).recurrence(ZeroMatrix(0, d), lambda s: block([[K[s]], [transpose(kf[s + 1])]]))
    U = family("U", lambda s: (s, m))
    U.recurrence(ZeroMatrix(0, m), lambda s: block([[U[s]], [mul(beta, transpose(add(
        vf[s + 1], mul(-1, transpose(U[s]), K[s], kf[s + 1]))))]]))
    Id = Identity(d)
    S = family("S", (m, d)).recurrence(ZeroMatrix(m, d), lambda s: add(
        mul(S[s], add(Id, mul(-1, beta, kf[s + 1], transpose(kf[s + 1])))),
        mul(beta, vf[s + 1], transpose(kf[s + 1]))))
    b = ProofBuilder(
        "delta_rule_state_wy_form", "The delta-rule state in WY form",
        "The state S_t = S_{t−1}(I − βk_tk_tᵀ) + βv_tk_tᵀ (S_0 = 0) is U_tᵀK_t, u_s = β(v_s − U_{s−1}ᵀK_{s−1}k_s).",
        families=[kf, vf, K, U, S],
    )
    b.induction("state_wy", t, S[t], mul(transpose(U[t]), K[t])).auto()
    b.main(S[t]).auto(mul(transpose(U[t]), K[t]))
    return b.proof()


@theorem
def delta_rule_two_steps():
    k1, k2 = MatrixSymbol("k_1", d, 1), MatrixSymbol("k_2", d, 1)
    Id = Identity(d)
    b = ProofBuilder(
        "delta_rule_two_steps", "Two delta-rule factors in WY form",
        "(I − βk₁k₁ᵀ)(I − βk₂k₂ᵀ) = I − βk₁k₁ᵀ − β(k₂ − βk₁k₁ᵀk₂)k₂ᵀ.",
    )
    b.main(mul(add(Id, mul(-1, beta, k1, transpose(k1))), add(Id, mul(-1, beta, k2, transpose(k2))))).auto(
        add(Id, mul(-1, beta, k1, transpose(k1)), mul(-1, beta, add(k2, mul(-1, beta, k1, transpose(k1), k2)),
                                                      transpose(k2))))
    return b.proof()


# --- Bayesian linear regression ------------------------------------------------------------------------------

Sigma0 = MatrixSymbol("Sigma_0", p, p)
PRIOR = predicate("prior_positive_definite", Q.positive_definite, Sigma0)
precision = add(mul(1 / sigma ** 2, gram), inv(Sigma0))  # XᵀX/σ² + Σ₀⁻¹


@theorem(glossary={"Sigma_0": "the prior covariance", "sigma": "the noise scale"})
def bayes_posterior_covariance():
    b = ProofBuilder(
        "bayes_posterior_covariance", "The posterior covariance of Bayesian linear regression",
        "With a prior covariance Σ₀ (positive definite) and noise variance σ², the posterior covariance "
        "(XᵀX/σ² + Σ₀⁻¹)⁻¹ is Σ₀ − Σ₀Xᵀ(σ²I + XΣ₀Xᵀ)⁻¹XΣ₀.",
        [PRIOR, predicate("evidence_invertible", Q.invertible, add(mul(sigma ** 2, In), mul(X, Sigma0, transpose(X))))],
    )
    b.main(inv(precision)).auto(add(Sigma0, mul(-1, Sigma0, transpose(X), inv(add(
        mul(sigma ** 2, In), mul(X, Sigma0, transpose(X)))), X, Sigma0)))
    return b.proof()


@theorem(glossary={"Sigma_0": "the prior covariance", "sigma": "the noise scale"})
def bayes_posterior_mean():
    b = ProofBuilder(
        "bayes_posterior_mean", "The posterior mean of Bayesian linear regression",
        "The posterior mean (XᵀX/σ² + Σ₀⁻¹)⁻¹XᵀY/σ² is (XᵀX + σ²Σ₀⁻¹)⁻¹XᵀY.",
        [PRIOR],
    )
    b.main(mul(inv(precision), 1 / sigma ** 2, transpose(X), Y)).auto(
        mul(inv(add(gram, mul(sigma ** 2, inv(Sigma0)))), transpose(X), Y))
    return b.proof()


tau = scalar("tau", positive=True)


@theorem(glossary={"tau": "the prior scale", "sigma": "the noise scale"})
def bayes_mean_is_ridge():
    b = ProofBuilder(
        "bayes_mean_is_ridge", "The posterior mean under an isotropic prior is ridge",
        "With prior covariance τ²I and noise variance σ², the posterior mean (XᵀX/σ² + I/τ²)⁻¹XᵀY/σ² is ridge "
        "regression (XᵀX + (σ²/τ²)I)⁻¹XᵀY.",
    )
    b.main(mul(inv(add(mul(1 / sigma ** 2, gram), mul(1 / tau ** 2, Ip))), 1 / sigma ** 2, transpose(X), Y)).auto(
        mul(inv(add(gram, mul(sigma ** 2 / tau ** 2, Ip))), transpose(X), Y))
    return b.proof()


# --- centring --------------------------------------------------------------------------------------------------

ones = MatrixSymbol("one", n, 1)
C = MatrixSymbol("C", n, n)
ONES = Hypothesis("ones_count", mul(transpose(ones), ones), mul(n, Identity(1)))
CENTRING = Definition("C", C, add(In, mul(-1 / n, ones, transpose(ones))))


@theorem(glossary={"one": "the vector of ones", "C": "the centring matrix"})
def centring_idempotent():
    b = ProofBuilder(
        "centring_idempotent", "Centring is idempotent",
        "With 1ᵀ1 = n, the centring matrix C = I − (1/n)11ᵀ satisfies CC = C.",
        [ONES], [CENTRING],
    )
    b.main(mul(C, C)).auto(C)
    return b.proof()


@theorem(glossary={"one": "the vector of ones", "C": "the centring matrix"})
def centring_annihilates_ones():
    b = ProofBuilder(
        "centring_annihilates_ones", "Centring removes the mean",
        "With 1ᵀ1 = n, C1 = 0 for C = I − (1/n)11ᵀ.",
        [ONES], [CENTRING],
    )
    b.main(mul(C, ones)).auto(ZeroMatrix(n, 1))
    return b.proof()


# --- a family of square members: DeltaNet's UT transform -------------------------------------------------------

@theorem(glossary={"k": "the keys", "K": "the keys so far, one per row", "W": "the WY vectors so far, one per row",
                   "T": "the lower-triangular UT transform, t × t"})
def delta_rule_ut_transform():
    kf = family("k", (d, 1))
    K = family("K", lambda s: (s, d)).recurrence(ZeroMatrix(0, d), lambda s: block([[K[s]], [transpose(kf[s + 1])]]))
    W = family("W", lambda s: (s, d))
    W.recurrence(ZeroMatrix(0, d), lambda s: block([[W[s]], [mul(beta, transpose(add(
        kf[s + 1], mul(-1, transpose(W[s]), K[s], kf[s + 1]))))]]))
    T = family("T", lambda s: (s, s))
    T.recurrence(ZeroMatrix(0, 0), lambda s: block([
        [T[s], ZeroMatrix(s, 1)],
        [mul(-1, beta, transpose(kf[s + 1]), transpose(K[s]), T[s]), mul(beta, Identity(1))]]))
    b = ProofBuilder(
        "delta_rule_ut_transform", "The UT transform of the delta rule",
        "The WY vectors are W_t = T_tK_t for the t × t lower-triangular T_{s+1} = [[T_s, 0], [−βk_{s+1}ᵀK_sᵀT_s, β]] "
        "(T_0 empty), for every t.",
        families=[kf, K, W, T],
    )
    b.induction("ut", t, W[t], mul(T[t], K[t])).auto()
    b.main(W[t]).auto(mul(T[t], K[t]))
    return b.proof()


# --- chunkwise and gated linear attention: families of c·s rows, and a decayed top block -----------------------

c = dim("c")  # the chunk length
gamma = scalar("gamma")  # a real decay, of any sign


@theorem(glossary={"K_c": "the keys of one chunk", "V_c": "the values of one chunk", "K": "the keys of the chunks "
                   "so far, c·t rows", "V": "their values", "S": "the state after each chunk"})
def chunkwise_state():
    Kc, Vc = family("K_c", (c, d)), family("V_c", (c, m))
    K = family("K", lambda s: (s * c, d)).recurrence(ZeroMatrix(0, d), lambda s: block([[K[s]], [Kc[s + 1]]]))
    V = family("V", lambda s: (s * c, m)).recurrence(ZeroMatrix(0, m), lambda s: block([[V[s]], [Vc[s + 1]]]))
    S = family("S", (m, d)).recurrence(ZeroMatrix(m, d), lambda s: add(S[s], mul(transpose(Vc[s + 1]), Kc[s + 1])))
    b = ProofBuilder(
        "chunkwise_state", "The chunkwise state is a prefix sum over chunks",
        "After t chunks of c tokens, S_t = S_{t−1} + V_tᵀK_t (S_0 = 0) is V_{≤t}ᵀK_{≤t}, the keys and values of all "
        "c·t tokens so far, for every t.",
        families=[Kc, Vc, K, V, S],
    )
    b.induction("prefix", t, S[t], mul(transpose(V[t]), K[t])).auto()
    b.main(S[t]).auto(mul(transpose(V[t]), K[t]))
    return b.proof()


@theorem(glossary={"gamma": "the decay", "K_gamma": "the keys so far, row i decayed by $\\gamma^{t-i}$",
                   "V": "the values so far", "S": "the gated state"})
def gated_state():
    kf, vf = family("k", (d, 1)), family("v", (m, 1))
    Kg = family("K_gamma", lambda s: (s, d)).recurrence(
        ZeroMatrix(0, d), lambda s: block([[mul(gamma, Kg[s])], [transpose(kf[s + 1])]]))
    V = family("V", lambda s: (s, m)).recurrence(ZeroMatrix(0, m), lambda s: block([[V[s]], [transpose(vf[s + 1])]]))
    S = family("S", (m, d)).recurrence(
        ZeroMatrix(m, d), lambda s: add(mul(gamma, S[s]), mul(vf[s + 1], transpose(kf[s + 1]))))
    b = ProofBuilder(
        "gated_state", "The gated state with a scalar decay",
        "S_t = γS_{t−1} + v_tk_tᵀ (S_0 = 0) is V_tᵀK^γ_t, K^γ_{s+1} = [γK^γ_s; k_{s+1}ᵀ], for every t.",
        families=[kf, vf, Kg, V, S],
    )
    b.induction("decayed_prefix", t, S[t], mul(transpose(V[t]), Kg[t])).auto()
    b.main(S[t]).auto(mul(transpose(V[t]), Kg[t]))
    return b.proof()


# --- generalized least squares -------------------------------------------------------------------------------

Sigma = MatrixSymbol("Sigma", n, n)
Wh = MatrixSymbol("W", n, n)


@theorem(glossary={"Sigma": "the noise covariance", "W": "a whitening matrix, $W^{\\top}W = \\Sigma^{-1}$"})
def gls_whitened():
    gls_gram = mul(transpose(X), inv(Sigma), X)
    b = ProofBuilder(
        "gls_whitened", "GLS is OLS after whitening",
        "If WᵀW = Σ⁻¹ and XᵀΣ⁻¹X is invertible, (XᵀΣ⁻¹X)⁻¹XᵀΣ⁻¹y = ((WX)ᵀWX)⁻¹(WX)ᵀWy.",
        [predicate("Sigma_invertible", Q.invertible, Sigma),
         Hypothesis("whitening", mul(transpose(Wh), Wh), inv(Sigma)),
         predicate("gls_gram_invertible", Q.invertible, gls_gram)],
    )
    Xw = mul(Wh, X)
    b.main(mul(inv(gls_gram), transpose(X), inv(Sigma), y)).auto(
        mul(inv(mul(transpose(Xw), Xw)), transpose(Xw), Wh, y))
    return b.proof()


@theorem(glossary={"Sigma": "the noise covariance"})
def gls_residual_orthogonal():
    gls_gram = mul(transpose(X), inv(Sigma), X)
    beta_gls = mul(inv(gls_gram), transpose(X), inv(Sigma), y)
    b = ProofBuilder(
        "gls_residual_orthogonal", "GLS residuals are Σ⁻¹-orthogonal to the regressors",
        "Xᵀ Σ⁻¹(y − Xβ̂) = 0 for β̂ = (XᵀΣ⁻¹X)⁻¹XᵀΣ⁻¹y.",
        [predicate("Sigma_invertible", Q.invertible, Sigma), predicate("gls_gram_invertible", Q.invertible, gls_gram)],
    )
    b.main(mul(transpose(X), inv(Sigma), add(y, mul(-1, X, beta_gls)))).auto(ZeroMatrix(p, 1))
    return b.proof()


# --- Woodbury and the Kalman gain ---------------------------------------------------------------------------

A, Cc = MatrixSymbol("A", p, p), MatrixSymbol("C", m, m)
U, V = MatrixSymbol("U", p, m), MatrixSymbol("V", m, p)


@theorem(glossary={"A": "an invertible matrix", "C": "an invertible core"})
def woodbury_scaled():
    capacitance = add(inv(Cc), mul(1 / sigma, V, inv(A), U))
    b = ProofBuilder(
        "woodbury_scaled", "Woodbury with a scalar",
        "If A, C and C⁻¹ + VA⁻¹U/σ are invertible, (A + UCV/σ)⁻¹ = A⁻¹ − A⁻¹U(C⁻¹ + VA⁻¹U/σ)⁻¹VA⁻¹/σ.",
        [predicate("A_invertible", Q.invertible, A), predicate("C_invertible", Q.invertible, Cc),
         predicate("capacitance_invertible", Q.invertible, capacitance)],
    )
    b.main(inv(add(A, mul(1 / sigma, U, Cc, V)))).auto(
        add(inv(A), mul(-1 / sigma, inv(A), U, inv(capacitance), V, inv(A))))
    return b.proof()


P0 = MatrixSymbol("P", p, p)
H = MatrixSymbol("H", m, p)
R = MatrixSymbol("R", m, m)
Kg = MatrixSymbol("K", p, m)


@theorem(glossary={"P": "the prior covariance", "H": "the observation matrix", "R": "the observation noise",
                   "K": "the Kalman gain"})
def kalman_gain_information_form():
    innovation = add(mul(H, P0, transpose(H)), R)
    b = ProofBuilder(
        "kalman_gain_information_form", "The Kalman gain in information form",
        "With P and R positive definite, K = PHᵀ(HPHᵀ + R)⁻¹ equals (P⁻¹ + HᵀR⁻¹H)⁻¹HᵀR⁻¹.",
        [predicate("P_positive_definite", Q.positive_definite, P0),
         predicate("R_positive_definite", Q.positive_definite, R),
         predicate("innovation_invertible", Q.invertible, innovation)],
        [Definition("K", Kg, mul(P0, transpose(H), inv(innovation)))],
    )
    b.main(Kg).auto(mul(inv(add(inv(P0), mul(transpose(H), inv(R), H))), transpose(H), inv(R)))
    return b.proof()


@theorem(glossary={"P": "the prior covariance", "H": "the observation matrix", "R": "the observation noise",
                   "K": "the Kalman gain"})
def kalman_covariance_update():
    innovation = add(mul(H, P0, transpose(H)), R)
    b = ProofBuilder(
        "kalman_covariance_update", "The Kalman covariance update",
        "With K = PHᵀ(HPHᵀ + R)⁻¹, (I − KH)P = P − PHᵀ(HPHᵀ + R)⁻¹HP.",
        [predicate("innovation_invertible", Q.invertible, innovation)],
        [Definition("K", Kg, mul(P0, transpose(H), inv(innovation)))],
    )
    b.main(mul(add(Ip, mul(-1, Kg, H)), P0)).auto(
        add(P0, mul(-1, P0, transpose(H), inv(innovation), H, P0)))
    return b.proof()
