"""False near-misses of a researcher's identities (issue 41): each one slip away from a true identity.

Each entry of :data:`NEAR_MISSES` is a function ``f(attempt=False)``.  With ``attempt=False`` it returns the
statement alone — a :class:`~derive.Proof` skeleton with the hypotheses, definitions, families and the claim
lhs = rhs, no step taken (built under ``statement_only()``, the registry's way of reading a statement) — for
:func:`derive.refute.refute`.  With ``attempt=True`` it asks ``.auto`` for a proof as a researcher would, which
must raise :class:`~derive.ProofError` (carrying the refuter's verdict as ``.counterexample``).

Nothing here is registered with ``@theorem``: loading this file adds no theorem to any command.

The slips: a wrong λ, a missing transpose, a wrong order of a product, a missing inverse, a dropped hypothesis,
a wrong coefficient, a wrong sign, a wrong shape-consistent factor.  ``SLIPS`` says which, and which true
identity (mostly of ``tests/data/researcher_identities.py``) each one misses.  Some are false only at sizes ≥ 2
(centring without 1/n, the centred Gram without n, kernel ridge with nλ, QQᵀ = I) or only for non-symmetric
matrices (Rᵀ for R, swapped tokens in the QK score, a swapped chunk state).
"""

import functools

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
    transpose,
)
from derive.authoring.builder import statement_only

n, p, k, m, d, dv, c, h, D = (dim(s) for s in ("n", "p", "k", "m", "d", "d_v", "c", "h", "D"))
X, Y, y = MatrixSymbol("X", n, p), MatrixSymbol("Y", n, k), MatrixSymbol("y", n, 1)
In, Ip = Identity(n), Identity(p)
gram = mul(transpose(X), X)
GRAM_INVERTIBLE = predicate("gram_invertible", Q.invertible, gram)
t = index("t")
lam, sigma, tau = scalar("lambda", positive=True), scalar("sigma", positive=True), scalar("tau", positive=True)
beta, gamma, kappa, mu = (scalar("beta", positive=True), scalar("gamma"), scalar("kappa", positive=True),
                          scalar("mu", positive=True))

#: name -> statement function, in presentation order.
NEAR_MISSES: dict = {}
#: name -> (lhs, rhs) as the statement function wrote them (the Proof's claim holds their normal forms).
AS_WRITTEN: dict = {}
#: name -> (the slip, the true identity it misses).
SLIPS: dict[str, tuple[str, str]] = {}


def near_miss(slip: str, misses: str):
    """Register ``fn`` (which builds its ProofBuilder and returns ``claim(b, lhs, rhs)``) as ``f(attempt=False)``:
    run under ``statement_only()`` (the builder made inside it takes no step) unless ``attempt``."""
    def register(fn):
        @functools.wraps(fn)
        def statement(attempt: bool = False):
            if attempt:
                return fn()
            with statement_only():
                return fn()

        NEAR_MISSES[fn.__name__] = statement
        SLIPS[fn.__name__] = (slip, misses)
        return statement

    return register


def claim(b: ProofBuilder, lhs, rhs):
    """The statement lhs = rhs of ``b``: closed at ``rhs`` with no step under ``statement_only()``, else ``.auto``'s
    attempt to prove it (a ProofError for a false claim).  The sides as written (before the kernel's normal form)
    are kept in :data:`AS_WRITTEN`."""
    AS_WRITTEN[b.theorem] = (lhs, rhs)
    b.main(lhs).auto(rhs)
    return b.proof()


# --- Bayesian linear regression -----------------------------------------------------------------------------

@near_miss("wrong λ (τ²/σ² for σ²/τ²)", "bayesian_posterior_mean_is_ridge")
def bayes_penalty_inverted():
    b = ProofBuilder("bayes_penalty_inverted", "Posterior mean as ridge, the ratio inverted",
                     "(XᵀX/σ² + I/τ²)⁻¹Xᵀy/σ² = (XᵀX + λI)⁻¹Xᵀy with λ = τ²/σ²",
                     [Hypothesis("penalty", lam, tau ** 2 / sigma ** 2)])
    precision = add(mul(1 / sigma ** 2, gram), mul(1 / tau ** 2, Ip))
    return claim(b, mul(inv(precision), 1 / sigma ** 2, transpose(X), y), mul(inv(add(gram, mul(lam, Ip))),
                                                                              transpose(X), y))


Sigma0 = MatrixSymbol("Sigma_0", p, p)


@near_miss("missing inverse (σ²Σ₀ for σ²Σ₀⁻¹)", "bayesian_posterior_mean_dual")
def bayes_dual_prior_not_inverted():
    b = ProofBuilder("bayes_dual_prior_not_inverted", "Function-space posterior mean, prior not inverted",
                     "(XᵀX + σ²Σ₀)⁻¹Xᵀy = Σ₀Xᵀ(XΣ₀Xᵀ + σ²I)⁻¹y",
                     [predicate("prior_symmetric", Q.symmetric, Sigma0),
                      predicate("prior_positive_definite", Q.positive_definite, Sigma0)])
    return claim(b, mul(inv(add(gram, mul(sigma ** 2, Sigma0))), transpose(X), y),
                 mul(Sigma0, transpose(X), inv(add(mul(X, Sigma0, transpose(X)), mul(sigma ** 2, In))), y))


# --- Kalman -------------------------------------------------------------------------------------------------

P, H, R = MatrixSymbol("P", p, p), MatrixSymbol("H", m, p), MatrixSymbol("R", m, m)
K_gain = MatrixSymbol("K", p, m)
innovation = add(mul(H, P, transpose(H)), R)
KALMAN = [predicate("P_symmetric", Q.symmetric, P), predicate("P_positive_definite", Q.positive_definite, P),
          predicate("R_symmetric", Q.symmetric, R), predicate("R_positive_definite", Q.positive_definite, R)]
GAIN = Definition("K", K_gain, mul(P, transpose(H), inv(innovation)))
information = add(inv(P), mul(transpose(H), inv(R), H))


@near_miss("missing inverse (the gain without (HPHᵀ + R)⁻¹)", "kalman_gain_information_form")
def kalman_gain_missing_inverse():
    b = ProofBuilder("kalman_gain_missing_inverse", "Kalman gain, the innovation not inverted",
                     "K = PHᵀ(HPHᵀ + R) is (P⁻¹ + HᵀR⁻¹H)⁻¹HᵀR⁻¹", KALMAN,
                     [Definition("K", K_gain, mul(P, transpose(H), innovation))])
    return claim(b, K_gain, mul(inv(information), transpose(H), inv(R)))


@near_miss("wrong sign (P⁻¹ − HᵀR⁻¹H)", "kalman_covariance_update")
def kalman_covariance_wrong_sign():
    b = ProofBuilder("kalman_covariance_wrong_sign", "Kalman covariance update, wrong sign",
                     "(I − KH)P = (P⁻¹ − HᵀR⁻¹H)⁻¹", KALMAN, [GAIN])
    return claim(b, mul(add(Ip, mul(-1, K_gain, H)), P), inv(add(inv(P), mul(-1, transpose(H), inv(R), H))))


@near_miss("dropped term (Joseph form without KRKᵀ)", "kalman_joseph_form")
def kalman_joseph_without_noise():
    b = ProofBuilder("kalman_joseph_without_noise", "Joseph form without the noise term",
                     "(I − KH)P(I − KH)ᵀ = (I − KH)P",
                     [predicate("P_symmetric", Q.symmetric, P), predicate("R_symmetric", Q.symmetric, R),
                      predicate("innovation_invertible", Q.invertible, innovation)], [GAIN])
    update = add(Ip, mul(-1, K_gain, H))
    return claim(b, mul(update, P, transpose(update)), mul(update, P))


# --- GLS and sandwich covariances ---------------------------------------------------------------------------

Sigma, Omega = MatrixSymbol("Sigma", n, n), MatrixSymbol("Omega", n, n)
gls_gram = mul(transpose(X), inv(Sigma), X)
GLS_HYPOTHESES = [predicate("Sigma_invertible", Q.invertible, Sigma),
                  predicate("gls_gram_invertible", Q.invertible, gls_gram)]


@near_miss("dropped hypothesis (Σ = σ²I)", "gls_homoscedastic_is_ols")
def gls_without_spherical_noise():
    b = ProofBuilder("gls_without_spherical_noise", "GLS is OLS, without its hypothesis",
                     "(XᵀΣ⁻¹X)⁻¹XᵀΣ⁻¹Y = (XᵀX)⁻¹XᵀY for symmetric positive definite Σ",
                     [predicate("Sigma_symmetric", Q.symmetric, Sigma),
                      predicate("Sigma_positive_definite", Q.positive_definite, Sigma), GRAM_INVERTIBLE,
                      predicate("gls_gram_invertible", Q.invertible, gls_gram)])
    return claim(b, mul(inv(gls_gram), transpose(X), inv(Sigma), Y), mul(inv(gram), transpose(X), Y))


@near_miss("missing factor (Σ⁻¹ dropped from the normal equations)", "gls_normal_equations")
def gls_residuals_unweighted():
    beta_gls = MatrixSymbol("beta_GLS", p, k)
    b = ProofBuilder("gls_residuals_unweighted", "GLS residuals orthogonal to X, unweighted",
                     "Xᵀ(Y − Xβ̂_GLS) = 0", GLS_HYPOTHESES,
                     [Definition("beta_GLS", beta_gls, mul(inv(gls_gram), transpose(X), inv(Sigma), Y))])
    return claim(b, mul(transpose(X), add(Y, mul(-1, X, beta_gls))), ZeroMatrix(p, k))


@near_miss("missing inverse (σ²XᵀX for σ²(XᵀX)⁻¹)", "sandwich_homoscedastic")
def sandwich_missing_inverse():
    b = ProofBuilder("sandwich_missing_inverse", "Homoscedastic sandwich, the inverse lost",
                     "(XᵀX)⁻¹XᵀΩX(XᵀX)⁻¹ = σ²XᵀX if Ω = σ²I",
                     [Hypothesis("homoscedastic", Omega, mul(sigma ** 2, In)), GRAM_INVERTIBLE])
    return claim(b, mul(inv(gram), transpose(X), Omega, X, inv(gram)), mul(sigma ** 2, gram))


@near_miss("wrong coefficient (σ for σ²)", "sandwich_homoscedastic")
def sandwich_wrong_coefficient():
    b = ProofBuilder("sandwich_wrong_coefficient", "Homoscedastic sandwich, σ for σ²",
                     "(XᵀX)⁻¹XᵀΩX(XᵀX)⁻¹ = σ(XᵀX)⁻¹ if Ω = σ²I",
                     [Hypothesis("homoscedastic", Omega, mul(sigma ** 2, In)), GRAM_INVERTIBLE])
    return claim(b, mul(inv(gram), transpose(X), Omega, X, inv(gram)), mul(sigma, inv(gram)))


@near_miss("wrong factor (Σ⁻¹ for Σ in the middle)", "sandwich_gls")
def sandwich_gls_precision_in_middle():
    A = MatrixSymbol("A", p, n)
    b = ProofBuilder("sandwich_gls_precision_in_middle", "GLS sandwich with the precision in the middle",
                     "AΣ⁻¹Aᵀ = (XᵀΣ⁻¹X)⁻¹, A = (XᵀΣ⁻¹X)⁻¹XᵀΣ⁻¹",
                     [predicate("Sigma_symmetric", Q.symmetric, Sigma), *GLS_HYPOTHESES],
                     [Definition("A", A, mul(inv(gls_gram), transpose(X), inv(Sigma)))])
    return claim(b, mul(A, inv(Sigma), transpose(A)), inv(gls_gram))


# --- centring -----------------------------------------------------------------------------------------------

one = MatrixSymbol("one", n, 1)
C_centre = MatrixSymbol("C", n, n)
ONES = Hypothesis("ones_norm", mul(transpose(one), one), mul(n, Identity(1)))
CENTRE = Definition("C", C_centre, add(In, mul(-1, 1 / n, one, transpose(one))))
x_bar = MatrixSymbol("x_bar", p, 1)
MEANS = Definition("x_bar", x_bar, mul(1 / n, transpose(X), one))


@near_miss("missing coefficient (I − 11ᵀ without 1/n; false only for n ≥ 2)", "centring_idempotent")
def centring_without_scaling():
    b = ProofBuilder("centring_without_scaling", "Centring without 1/n is idempotent",
                     "(I − 11ᵀ)² = I − 11ᵀ with 1ᵀ1 = n", [ONES])
    M = add(In, mul(-1, one, transpose(one)))
    return claim(b, mul(M, M), M)


@near_miss("wrong sign (+ n x̄x̄ᵀ)", "centred_gram")
def centred_gram_wrong_sign():
    b = ProofBuilder("centred_gram_wrong_sign", "Centred Gram, wrong sign", "XᵀCX = XᵀX + n x̄x̄ᵀ", [ONES],
                     [CENTRE, MEANS])
    return claim(b, mul(transpose(X), C_centre, X), add(gram, mul(n, x_bar, transpose(x_bar))))


@near_miss("missing coefficient (x̄x̄ᵀ without n; false only for n ≥ 2)", "centred_gram")
def centred_gram_without_n():
    b = ProofBuilder("centred_gram_without_n", "Centred Gram without n", "XᵀCX = XᵀX − x̄x̄ᵀ", [ONES],
                     [CENTRE, MEANS])
    return claim(b, mul(transpose(X), C_centre, X), add(gram, mul(-1, x_bar, transpose(x_bar))))


# --- kernel ridge, Nyström, QR ------------------------------------------------------------------------------

Phi, phi_q = MatrixSymbol("Phi", n, D), MatrixSymbol("phi_q", D, 1)
K_kernel, k_q = MatrixSymbol("K", n, n), MatrixSymbol("k_q", n, 1)


@near_miss("wrong coefficient (nλ for λ, a scaling convention mixed up; false only for n ≥ 2)",
           "kernel_ridge_feature_map")
def kernel_ridge_n_lambda():
    b = ProofBuilder("kernel_ridge_n_lambda", "Kernel ridge with nλ on one side",
                     "φ_qᵀ(ΦᵀΦ + λI)⁻¹Φᵀy = k_qᵀ(K + nλI)⁻¹y", [],
                     [Definition("K", K_kernel, mul(Phi, transpose(Phi))), Definition("k_q", k_q, mul(Phi, phi_q))])
    return claim(b, mul(transpose(phi_q), inv(add(mul(transpose(Phi), Phi), mul(lam, Identity(D)))), transpose(Phi), y),
                 mul(transpose(k_q), inv(add(K_kernel, mul(n, lam, In))), y))


@near_miss("dropped hypothesis (Φ = AΦ_m, the span)", "nystrom_exact_in_span")
def nystrom_without_span():
    Phi_m, C, W = MatrixSymbol("Phi_m", m, D), MatrixSymbol("C", n, m), MatrixSymbol("W", m, m)
    b = ProofBuilder("nystrom_without_span", "Nyström is exact, without the span hypothesis", "CW⁻¹Cᵀ = K",
                     [predicate("landmarks_independent", Q.invertible, mul(Phi_m, transpose(Phi_m)))],
                     [Definition("K", K_kernel, mul(Phi, transpose(Phi))),
                      Definition("C", C, mul(Phi, transpose(Phi_m))), Definition("W", W, mul(Phi_m, transpose(Phi_m)))])
    return claim(b, mul(C, inv(W), transpose(C)), K_kernel)


Qf, Rf = MatrixSymbol("Q", n, p), MatrixSymbol("R", p, p)
QR = [Hypothesis("qr", X, mul(Qf, Rf)), Hypothesis("Q_orthonormal_columns", mul(transpose(Qf), Qf), Ip),
      predicate("R_invertible", Q.invertible, Rf)]


@near_miss("a transpose in the wrong place ((Rᵀ)⁻¹ for R⁻¹; false only for non-symmetric R)",
           "OLS through QR (docs/authoring.md)")
def qr_coefficients_transposed_R():
    b = ProofBuilder("qr_coefficients_transposed_R", "OLS through QR with Rᵀ", "(XᵀX)⁻¹XᵀY = (Rᵀ)⁻¹QᵀY", QR)
    return claim(b, mul(inv(gram), transpose(X), Y), mul(inv(transpose(Rf)), transpose(Qf), Y))


@near_miss("wrong order (QQᵀ for QᵀQ; false only for n > p)", "qr_hat_matrix")
def qr_projection_is_identity():
    b = ProofBuilder("qr_projection_is_identity", "Orthonormal columns make QQᵀ = I", "QQᵀ = I",
                     [Hypothesis("Q_orthonormal_columns", mul(transpose(Qf), Qf), Ip)])
    return claim(b, mul(Qf, transpose(Qf)), In)


# --- the delta rule, DeltaNet, gated and chunkwise attention ------------------------------------------------

kv, vv, S_state = MatrixSymbol("k", p, 1), MatrixSymbol("v", dv, 1), MatrixSymbol("S", dv, p)


@near_miss("missing coefficient (βvkᵀ written vkᵀ)", "delta_rule_step")
def delta_rule_unscaled_value():
    b = ProofBuilder("delta_rule_unscaled_value", "The delta rule, β lost on the write",
                     "S − β(Sk − v)kᵀ = S(I − βkkᵀ) + vkᵀ")
    return claim(b, add(S_state, mul(-1, beta, add(mul(S_state, kv), mul(-1, vv)), transpose(kv))),
                 add(mul(S_state, add(Ip, mul(-1, beta, kv, transpose(kv)))), mul(vv, transpose(kv))))


def _keys():
    kf = family("k", (p, 1))
    K = family("K", lambda s: (s, p)).recurrence(ZeroMatrix(0, p), lambda s: block([[K[s]], [transpose(kf[s + 1])]]))
    return kf, K


@near_miss("wrong order (K_tᵀW_t for W_tᵀK_t in the WY correction)", "deltanet_wy_form")
def deltanet_wy_swapped_correction():
    kf, K = _keys()
    Pf = family("P", (p, p)).recurrence(
        Ip, lambda s: mul(Pf[s], add(Ip, mul(-1, beta, kf[s + 1], transpose(kf[s + 1])))))
    W = family("W", lambda s: (s, p)).recurrence(
        ZeroMatrix(0, p),
        lambda s: block([[W[s]], [transpose(mul(beta, add(kf[s + 1], mul(-1, transpose(K[s]), W[s], kf[s + 1]))))]]))
    b = ProofBuilder("deltanet_wy_swapped_correction", "DeltaNet's WY form, correction factors swapped",
                     "Π(I − βk_ik_iᵀ) = I − W_tᵀK_t with w_t = β(k_t − K_{t−1}ᵀW_{t−1}k_t)", families=[kf, K, Pf, W])
    return claim(b, Pf[t], add(Ip, mul(-1, transpose(W[t]), K[t])))


@near_miss("missing coefficient (β dropped from the pseudo-values)", "deltanet_ut_form")
def deltanet_ut_missing_beta():
    kf, K = _keys()
    vf = family("v", (dv, 1))
    S = family("S", (dv, p)).recurrence(
        ZeroMatrix(dv, p), lambda s: add(mul(S[s], add(Ip, mul(-1, beta, kf[s + 1], transpose(kf[s + 1])))),
                                         mul(beta, vf[s + 1], transpose(kf[s + 1]))))
    U = family("U", lambda s: (s, dv)).recurrence(
        ZeroMatrix(0, dv), lambda s: block([[U[s]], [transpose(add(vf[s + 1], mul(-1, transpose(U[s]), K[s],
                                                                                  kf[s + 1])))]]))
    b = ProofBuilder("deltanet_ut_missing_beta", "DeltaNet's UT form without β",
                     "S_t = U_tᵀK_t, u_t = v_t − U_{t−1}ᵀK_{t−1}k_t", families=[kf, vf, K, S, U])
    return claim(b, S[t], mul(transpose(U[t]), K[t]))


@near_miss("wrong factor (the decay applied to the new key, not the old ones)", "gated_linear_attention")
def gated_decay_on_new_key():
    kf, vf = family("k", (p, 1)), family("v", (dv, 1))
    Kg = family("K_gamma", lambda s: (s, p)).recurrence(
        ZeroMatrix(0, p), lambda s: block([[Kg[s]], [mul(gamma, transpose(kf[s + 1]))]]))
    V = family("V", lambda s: (s, dv)).recurrence(ZeroMatrix(0, dv), lambda s: block([[V[s]], [transpose(vf[s + 1])]]))
    S = family("S", (dv, p)).recurrence(
        ZeroMatrix(dv, p), lambda s: add(mul(gamma, S[s]), mul(vf[s + 1], transpose(kf[s + 1]))))
    b = ProofBuilder("gated_decay_on_new_key", "Gated linear attention, decay on the new key",
                     "S_t = V_tᵀK^γ_t with K^γ_{t+1} = [K^γ_t; γk_{t+1}ᵀ]", families=[kf, vf, Kg, V, S])
    return claim(b, S[t], mul(transpose(V[t]), Kg[t]))


@near_miss("wrong order (K_cᵀV_c for V_cᵀK_c in the chunk update; false only for non-symmetric products)",
           "chunkwise_inter_chunk_term")
def chunkwise_state_transposed():
    Kc, Vc = family("K_c", (c, d)), family("V_c", (c, d))
    K = family("K", lambda s: (s * c, d)).recurrence(ZeroMatrix(0, d), lambda s: block([[K[s]], [Kc[s + 1]]]))
    V = family("V", lambda s: (s * c, d)).recurrence(ZeroMatrix(0, d), lambda s: block([[V[s]], [Vc[s + 1]]]))
    S = family("S", (d, d)).recurrence(ZeroMatrix(d, d), lambda s: add(S[s], mul(transpose(Kc[s + 1]), Vc[s + 1])))
    Qc = MatrixSymbol("Q_c", c, d)
    b = ProofBuilder("chunkwise_state_transposed", "Chunkwise attention with the chunk update transposed",
                     "Q S_tᵀ = Q K_{≤t}ᵀV_{≤t} with S_t = S_{t−1} + K_tᵀV_t", families=[Kc, Vc, K, V, S])
    return claim(b, mul(Qc, transpose(S[t])), mul(Qc, transpose(K[t]), V[t]))


# --- normalised and multi-query attention, circuits ---------------------------------------------------------

Kx, q_vec, Vx = MatrixSymbol("K", n, d), MatrixSymbol("q", d, 1), MatrixSymbol("V", n, dv)


@near_miss("wrong normaliser (the squared norm (Kq)ᵀKq for the sum 1ᵀKq)", "normalised_attention_weights_sum_to_one")
def normalised_weights_l2():
    a = MatrixSymbol("a", n, 1)
    scores = mul(Kx, q_vec)
    b = ProofBuilder("normalised_weights_l2", "Attention weights normalised by the squared norm sum to one",
                     "1ᵀa = 1 for a = Kq((Kq)ᵀKq)⁻¹, with 1ᵀ1 = n",
                     [ONES, predicate("norm_invertible", Q.invertible, mul(transpose(scores), scores))],
                     [Definition("a", a, mul(Kx, q_vec, inv(mul(transpose(scores), scores))))])
    return claim(b, mul(transpose(one), a), Identity(1))


W_Q1, W_Q2, W_K, W_V = (MatrixSymbol(s, d, h) for s in ("W_Q1", "W_Q2", "W_K", "W_V"))
W_K1, W_K2, W_V1, W_V2 = (MatrixSymbol(s, d, h) for s in ("W_K1", "W_K2", "W_V1", "W_V2"))
O_1, O_2 = MatrixSymbol("O_1", h, d), MatrixSymbol("O_2", h, d)
Xt = MatrixSymbol("X", n, d)


@near_miss("dropped hypothesis (the second head's value projection not tied)", "multi_query_attention")
def mqa_value_not_tied():
    def head(W_Q, W_K_, W_V_, O):
        return mul(Xt, W_Q, transpose(mul(Xt, W_K_)), Xt, W_V_, O)

    b = ProofBuilder("mqa_value_not_tied", "MHA is MQA with only the keys and one value tied",
                     "two heads = XW_Q1(KᵀV)O_1 + XW_Q2(KᵀV)O_2",
                     [Hypothesis("tied_key_1", W_K1, W_K), Hypothesis("tied_key_2", W_K2, W_K),
                      Hypothesis("tied_value_1", W_V1, W_V)])
    cache = mul(transpose(mul(Xt, W_K)), Xt, W_V)
    return claim(b, add(head(W_Q1, W_K1, W_V1, O_1), head(W_Q2, W_K2, W_V2, O_2)),
                 add(mul(Xt, W_Q1, cache, O_1), mul(Xt, W_Q2, cache, O_2)))


W_Q = MatrixSymbol("W_Q", d, h)
W_QK = MatrixSymbol("W_QK", d, d)


@near_miss("wrong order (the tokens swapped: the QK form taken as symmetric; false only for d ≥ 2)",
           "qk_circuit_bilinear")
def qk_score_tokens_swapped():
    x_i, x_j = MatrixSymbol("x_i", d, 1), MatrixSymbol("x_j", d, 1)
    b = ProofBuilder("qk_score_tokens_swapped", "The QK score with the tokens swapped",
                     "(W_Qᵀx_i)ᵀ(W_Kᵀx_j) = x_jᵀW_QKx_i", [], [Definition("W_QK", W_QK, mul(W_Q, transpose(W_K)))])
    return claim(b, mul(transpose(mul(transpose(W_Q), x_i)), transpose(W_K), x_j), mul(transpose(x_j), W_QK, x_i))


@near_miss("wrong order (W_QK = W_KW_Qᵀ: the score matrix transposed)", "qk_ov_circuits")
def qk_circuit_wrong_order():
    W_OV = MatrixSymbol("W_OV", d, d)
    b = ProofBuilder("qk_circuit_wrong_order", "A head's circuits with W_QK = W_KW_Qᵀ",
                     "(XW_Q)(XW_K)ᵀ(XW_V)W_O = X W_QK Xᵀ X W_OV with W_QK = W_KW_Qᵀ", [],
                     [Definition("W_QK", W_QK, mul(W_K, transpose(W_Q))), Definition("W_OV", W_OV, mul(W_V, O_1))])
    return claim(b, mul(Xt, W_Q, transpose(mul(Xt, W_K)), Xt, W_V, O_1), mul(Xt, W_QK, transpose(Xt), Xt, W_OV))


# --- classics of the literature file, one slip each ---------------------------------------------------------

A_w, C_w = MatrixSymbol("A", p, p), MatrixSymbol("C", m, m)
U_w, V_w = MatrixSymbol("U", p, m), MatrixSymbol("V", m, p)


@near_miss("wrong sign (+ for − in Woodbury)", "woodbury_identity (tests/data/user_literature.py)")
def woodbury_wrong_sign():
    capacitance = add(inv(C_w), mul(V_w, inv(A_w), U_w))
    b = ProofBuilder("woodbury_wrong_sign", "Woodbury with a plus", "(A + UCV)⁻¹ = A⁻¹ + A⁻¹U(C⁻¹ + VA⁻¹U)⁻¹VA⁻¹",
                     [predicate("A_invertible", Q.invertible, A_w), predicate("C_invertible", Q.invertible, C_w),
                      predicate("capacitance_invertible", Q.invertible, capacitance)])
    return claim(b, inv(add(A_w, mul(U_w, C_w, V_w))),
                 add(inv(A_w), mul(inv(A_w), U_w, inv(capacitance), V_w, inv(A_w))))


@near_miss("wrong λ (λ = μ for λ = μ²)", "ridge_augmented_rows (tests/data/user_literature.py)")
def ridge_augmented_lambda_mu():
    rows, targets = block([[X], [mul(mu, Ip)]]), block([[Y], [ZeroMatrix(p, k)]])
    b = ProofBuilder("ridge_augmented_lambda_mu", "Ridge as augmented OLS with λ = μ",
                     "OLS of [Y; 0] on [X; μI] is ridge with λ = μ", [Hypothesis("penalty", lam, mu)])
    return claim(b, mul(inv(add(gram, mul(lam, Ip))), transpose(X), Y),
                 mul(inv(mul(transpose(rows), rows)), transpose(rows), targets))


@near_miss("wrong sign (a downdate written as an update's correction)", "leave_one_out_inverse (user_literature)")
def leave_one_out_wrong_sign():
    G, x_i = MatrixSymbol("G", p, p), MatrixSymbol("x_i", p, 1)
    leverage = add(Identity(1), mul(-1, transpose(x_i), inv(G), x_i))
    b = ProofBuilder("leave_one_out_wrong_sign", "Deleting one example, wrong sign",
                     "(G − xxᵀ)⁻¹ = G⁻¹ − G⁻¹x(1 − xᵀG⁻¹x)⁻¹xᵀG⁻¹",
                     [predicate("G_invertible", Q.invertible, G), predicate("leverage_below_one", Q.invertible,
                                                                            leverage)])
    return claim(b, inv(add(G, mul(-1, x_i, transpose(x_i)))),
                 add(inv(G), mul(-1, inv(G), x_i, inv(leverage), transpose(x_i), inv(G))))
