"""A researcher's own identities from the regression and in-context-learning literature (issue 29).

Written with the public authoring API only, the way the papers state them (hypotheses as the papers assume
them, definitions as they name things), and each chain proved by one call of ``.auto`` (one per chain; an
induction's ``.auto()`` proves its base and step).  No hand steps, no helper lemmas.

Every theorem function takes ``swap`` (default False): with ``swap=True`` each claim is stated the other way
round (B = A instead of A = B), which the tests use to show that the result does not depend on which side is
written first.  ``derive prove --library`` calls the functions with no argument.

Kinds: Frisch–Waugh–Lovell, GLS by whitening, Woodbury, ridge as OLS on augmented rows (with λ = μ²),
hat-matrix and residual identities, ridge shrinkage (both orders of the product), the k-step gradient-descent
closed form, one Newton step, the push-through identity, causal linear attention as prefix
sums, the one-layer LSA prediction of the ICL papers, heads as one wide head, the leave-one-out deletion
formula and the residual sum of squares.
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
    power,
    predicate,
    scalar,
    theorem,
    transpose,
)
from derive.routes import Route, Term

n, p, k, m, q = dim("n"), dim("p"), dim("k"), dim("m"), dim("q")
X, Y, X_q = MatrixSymbol("X", n, p), MatrixSymbol("Y", n, k), MatrixSymbol("X_q", m, p)
H, beta_hat = MatrixSymbol("H", n, n), MatrixSymbol("beta_hat", p, k)
In, Ip = Identity(n), Identity(p)
lam = scalar("lambda", positive=True)
gram = mul(transpose(X), X)
ridge_gram = add(gram, mul(lam, Ip))  # XᵀX + λI
GRAM_INVERTIBLE = predicate("gram_invertible", Q.invertible, gram)
HAT = Definition("H", H, mul(X, inv(gram), transpose(X)))
OLS = Definition("beta_hat", beta_hat, mul(inv(gram), transpose(X), Y))


def claim(chain_from, lhs, rhs, swap: bool, **auto):
    """``lhs = rhs`` (or ``rhs = lhs`` when swapped), proved by ``.auto`` alone."""
    if swap:
        lhs, rhs = rhs, lhs
    chain_from(lhs).auto(rhs, **auto)


def by_induction(b: ProofBuilder, name: str, t, lhs, rhs, swap: bool) -> None:
    """``lhs = rhs`` for every t (or ``rhs = lhs``), base and step found by ``.auto`` alone."""
    if swap:
        lhs, rhs = rhs, lhs
    b.induction(name, t, lhs, rhs).auto()


# --- Frisch–Waugh–Lovell -------------------------------------------------------------------------------------

X1, X2 = MatrixSymbol("X_1", n, p), MatrixSymbol("X_2", n, q)
Xfull, M1 = MatrixSymbol("X", n, p + q), MatrixSymbol("M_1", n, n)
y = MatrixSymbol("y", n, 1)
gram1 = mul(transpose(X1), X1)


@theorem(glossary={"X_1": "the control regressors", "X_2": "the regressors of interest",
                   "M_1": "the residual maker of $X_1$"},
         routes=[Route("fwl_coefficients", "main", {"X_1": "X_1", "X_2": "X_2", "y": "y"})])
def frisch_waugh_lovell(swap: bool = False):
    b = ProofBuilder(
        "frisch_waugh_lovell", "Frisch–Waugh–Lovell",
        "Regressing y on X = [X₁ X₂], the coefficients of X₂ are those of regressing the residuals M₁y on the "
        "residuals M₁X₂, M₁ = I − X₁(X₁ᵀX₁)⁻¹X₁ᵀ, when X₁ᵀX₁ and X₂ᵀM₁X₂ are invertible.",
        [predicate("controls_full_rank", Q.invertible, gram1),
         predicate("residualised_full_rank", Q.invertible, mul(transpose(X2), M1, X2))],
        [Definition("M_1", M1, add(In, mul(-1, X1, inv(gram1), transpose(X1)))),
         Definition("X", Xfull, block([[X1, X2]]))],
    )
    last_q = block([[ZeroMatrix(q, p), Identity(q)]])
    claim(b.main, mul(last_q, inv(mul(transpose(Xfull), Xfull)), transpose(Xfull), y),
          mul(inv(mul(transpose(X2), M1, X2)), transpose(X2), M1, y), swap, timeout=60)
    return b.proof()


# --- generalized least squares by whitening ---------------------------------------------------------------

Sigma, L = MatrixSymbol("Sigma", n, n), MatrixSymbol("L", n, n)
X_w, Y_w = MatrixSymbol("X_w", n, p), MatrixSymbol("Y_w", n, k)


@theorem(glossary={"Sigma": "the noise covariance", "L": "its Cholesky factor",
                   "X_w": "whitened regressors", "Y_w": "whitened targets"},
         routes=[Route("gls_coefficients", "main", {"X": "X", "Y": "Y", "Sigma": "Sigma"})])
def gls_whitening(swap: bool = False):
    gls_gram = mul(transpose(X), inv(Sigma), X)
    b = ProofBuilder(
        "gls_whitening", "Generalized least squares is OLS on whitened data",
        "If Σ = LLᵀ with L invertible and XᵀΣ⁻¹X invertible, OLS on X_w = L⁻¹X, Y_w = L⁻¹Y is the GLS estimator.",
        [Hypothesis("cholesky", Sigma, mul(L, transpose(L))), predicate("L_invertible", Q.invertible, L),
         predicate("gls_gram_invertible", Q.invertible, gls_gram)],
        [Definition("X_w", X_w, mul(inv(L), X)), Definition("Y_w", Y_w, mul(inv(L), Y))],
    )
    claim(b.main, mul(inv(mul(transpose(X_w), X_w)), transpose(X_w), Y_w),
          mul(inv(gls_gram), transpose(X), inv(Sigma), Y), swap)
    return b.proof()


# --- Woodbury -----------------------------------------------------------------------------------------------

A, C = MatrixSymbol("A", p, p), MatrixSymbol("C", m, m)
U, V = MatrixSymbol("U", p, m), MatrixSymbol("V", m, p)


@theorem(glossary={"A": "an invertible matrix", "C": "an invertible core", "U": "a tall factor",
                   "V": "a wide factor"},
         routes=[Route("woodbury_inverse", "main", {"A": "A", "U": "U", "C": "C", "V": "V"})])
def woodbury_identity(swap: bool = False):
    capacitance = add(inv(C), mul(V, inv(A), U))
    b = ProofBuilder(
        "woodbury_identity", "The Woodbury matrix identity",
        "If A, C and C⁻¹ + VA⁻¹U are invertible, (A + UCV)⁻¹ = A⁻¹ − A⁻¹U(C⁻¹ + VA⁻¹U)⁻¹VA⁻¹.",
        [predicate("A_invertible", Q.invertible, A), predicate("C_invertible", Q.invertible, C),
         predicate("capacitance_invertible", Q.invertible, capacitance)],
    )
    claim(b.main, inv(add(A, mul(U, C, V))),
          add(inv(A), mul(-1, inv(A), U, inv(capacitance), V, inv(A))), swap)
    return b.proof()


@theorem(routes=[Route("dual_ridge_weights", "main", {"X": "X", "lambda": "lam"})])
def push_through(swap: bool = False):
    """The push-through identity of kernel ridge regression: (XᵀX + λI)⁻¹Xᵀ = Xᵀ(XXᵀ + λI)⁻¹."""
    b = ProofBuilder(
        "push_through", "The push-through identity",
        "For λ > 0, (XᵀX + λI)⁻¹Xᵀ = Xᵀ(XXᵀ + λI)⁻¹: ridge in the primal equals ridge in the dual.",
    )
    claim(b.main, mul(inv(ridge_gram), transpose(X)),
          mul(transpose(X), inv(add(mul(X, transpose(X)), mul(lam, In)))), swap)
    return b.proof()


# --- ridge as OLS on augmented rows -------------------------------------------------------------------------

mu = scalar("mu", positive=True)


@theorem(glossary={"mu": "the square root of the ridge penalty"},
         routes=[Route("augmented_ridge", "main", {"X": "X", "Y": "Y", "mu": "mu"})])
def ridge_augmented_rows(swap: bool = False):
    rows, targets = block([[X], [mul(mu, Ip)]]), block([[Y], [ZeroMatrix(p, k)]])
    b = ProofBuilder(
        "ridge_augmented_rows", "Ridge regression is OLS on augmented rows",
        "With λ = μ², OLS of [Y; 0] on [X; μI] is ridge regression with penalty λ.",
        [Hypothesis("penalty", lam, mu ** 2)],
    )
    claim(b.main, mul(inv(ridge_gram), transpose(X), Y),
          mul(inv(mul(transpose(rows), rows)), transpose(rows), targets), swap)
    return b.proof()


# --- the hat matrix and the residual maker ------------------------------------------------------------------

def _hat_theorem(theorem_id: str, title: str, statement: str, lhs, rhs, swap: bool):
    b = ProofBuilder(theorem_id, title, statement, [GRAM_INVERTIBLE], [HAT])
    claim(b.main, lhs, rhs, swap)
    return b.proof()


residual_maker = add(In, mul(-1, H))  # I − H


@theorem(routes=[Term("hat", definition="H")])
def hat_idempotent(swap: bool = False):
    return _hat_theorem("hat_idempotent", "The hat matrix is idempotent", "H² = H", power(H, 2), H, swap)


@theorem
def hat_symmetric(swap: bool = False):
    return _hat_theorem("hat_symmetric", "The hat matrix is symmetric", "Hᵀ = H", transpose(H), H, swap)


@theorem
def hat_reproduces_X(swap: bool = False):
    return _hat_theorem("hat_reproduces_X", "The hat matrix fixes the regressors", "HX = X", mul(H, X), X, swap)


@theorem
def residuals_orthogonal(swap: bool = False):
    return _hat_theorem("residuals_orthogonal", "The residual maker annihilates the regressors", "(I − H)X = 0",
                        mul(residual_maker, X), ZeroMatrix(n, p), swap)


@theorem
def residual_maker_idempotent(swap: bool = False):
    return _hat_theorem("residual_maker_idempotent", "The residual maker is idempotent", "(I − H)² = I − H",
                        mul(residual_maker, residual_maker), residual_maker, swap)


@theorem
def residual_sum_of_squares(swap: bool = False):
    b = ProofBuilder(
        "residual_sum_of_squares", "The residual sum of squares",
        "YᵀY − YᵀXβ̂ = Yᵀ(I − H)Y for β̂ = (XᵀX)⁻¹XᵀY and H = X(XᵀX)⁻¹Xᵀ.",
        [GRAM_INVERTIBLE], [HAT, OLS],
    )
    claim(b.main, add(mul(transpose(Y), Y), mul(-1, transpose(Y), X, beta_hat)),
          mul(transpose(Y), residual_maker, Y), swap)
    return b.proof()


# --- ridge shrinkage ----------------------------------------------------------------------------------------

@theorem
def ridge_shrinkage(swap: bool = False):
    b = ProofBuilder(
        "ridge_shrinkage", "Ridge shrinks the Gram matrix",
        "(XᵀX + λI)⁻¹XᵀX = I − λ(XᵀX + λI)⁻¹ for λ > 0.",
    )
    claim(b.main, mul(inv(ridge_gram), gram), add(Ip, mul(-1, lam, inv(ridge_gram))), swap)
    return b.proof()


@theorem
def ridge_shrinkage_commuted(swap: bool = False):
    b = ProofBuilder(
        "ridge_shrinkage_commuted", "The Gram matrix commutes with its ridge resolvent",
        "XᵀX(XᵀX + λI)⁻¹ = I − λ(XᵀX + λI)⁻¹ for λ > 0.",
    )
    claim(b.main, mul(gram, inv(ridge_gram)), add(Ip, mul(-1, lam, inv(ridge_gram))), swap)
    return b.proof()


@theorem
def ridge_towards_ols(swap: bool = False):
    b = ProofBuilder(
        "ridge_towards_ols", "Ridge is OLS shrunk",
        "If XᵀX is invertible, the ridge coefficients are β̂ − λ(XᵀX + λI)⁻¹β̂, β̂ the OLS coefficients.",
        [GRAM_INVERTIBLE], [OLS],
    )
    claim(b.main, mul(inv(ridge_gram), transpose(X), Y), add(beta_hat, mul(-1, lam, inv(ridge_gram), beta_hat)),
          swap)
    return b.proof()


# --- gradient descent and Newton ----------------------------------------------------------------------------

eta = scalar("eta", positive=True)
t = index("t")


@theorem(glossary={"beta": "the iterate of gradient descent", "S": "the accumulated step matrix",
                   "eta": "the step size"})
def gd_closed_form(swap: bool = False):
    beta = family("beta", (p, k))  # β_0 = 0, β_{s+1} = β_s − ηXᵀ(Xβ_s − Y)
    beta.recurrence(ZeroMatrix(p, k), lambda s: add(beta[s], mul(-1, eta, transpose(X), add(mul(X, beta[s]),
                                                                                          mul(-1, Y)))))
    S = family("S", (p, p))  # S_0 = 0, S_{s+1} = I + (I − ηXᵀX)S_s
    S.recurrence(ZeroMatrix(p, p), lambda s: add(Ip, mul(add(Ip, mul(-1, eta, gram)), S[s])))
    b = ProofBuilder(
        "gd_closed_form", "k steps of gradient descent in closed form",
        "Gradient descent from 0 with step η on ½‖Y − Xβ‖² gives β_t = η S_t XᵀY, "
        "S_t = Σ_{j<t} (I − ηXᵀX)^j, for every t.",
        families=[beta, S],
    )
    by_induction(b, "closed_form", t, beta[t], mul(eta, S[t], transpose(X), Y), swap)
    claim(b.main, beta[t], mul(eta, S[t], transpose(X), Y), swap)
    return b.proof()


beta0 = MatrixSymbol("beta_0", p, k)


@theorem
def newton_one_step(swap: bool = False):
    b = ProofBuilder(
        "newton_one_step", "One Newton step solves least squares",
        "From any β₀, one Newton step β₀ − (XᵀX)⁻¹(XᵀXβ₀ − XᵀY) on ½‖Y − Xβ‖² lands on β̂.",
        [GRAM_INVERTIBLE], [OLS],
    )
    gradient = add(mul(gram, beta0), mul(-1, transpose(X), Y))
    claim(b.main, add(beta0, mul(-1, inv(gram), gradient)), beta_hat, swap)
    return b.proof()


# --- causal linear attention ------------------------------------------------------------------------------



@theorem(glossary={"K": "the keys so far, one per row", "V": "the values so far", "S": "the fast-weight state"})
def causal_linear_attention(swap: bool = False):
    d = dim("d")  # the width of the values
    kf, vf = family("k", (p, 1)), family("v", (d, 1))
    K = family("K", lambda s: (s, p)).recurrence(ZeroMatrix(0, p), lambda s: block([[K[s]], [transpose(kf[s + 1])]]))
    Vv = family("V", lambda s: (s, d)).recurrence(ZeroMatrix(0, d), lambda s: block([[Vv[s]], [transpose(vf[s + 1])]]))
    S = family("S", (d, p)).recurrence(ZeroMatrix(d, p), lambda s: add(S[s], mul(vf[s + 1], transpose(kf[s + 1]))))
    b = ProofBuilder(
        "causal_linear_attention", "Causal linear attention is a prefix sum",
        "The state S_t = S_{t−1} + v_tk_tᵀ (S_0 = 0) is V_tᵀK_t, so the output S_tq at step t is the causal "
        "(masked) linear attention V_tᵀK_tq over the first t tokens, for every t.",
        families=[kf, vf, K, Vv, S],
    )
    by_induction(b, "state_is_prefix_sum", t, S[t], mul(transpose(Vv[t]), K[t]), swap)
    q_t = MatrixSymbol("q", p, 1)
    claim(b.main, mul(S[t], q_t), mul(transpose(Vv[t]), K[t], q_t), swap)
    return b.proof()


# --- in-context learning: the one-layer LSA prediction, heads ---------------------------------------------

@theorem(glossary={"y": "the context targets, one column", "Gamma": "the layer's preconditioner",
                   "x_q": "the query, one column"},
         routes=[Route("lsa_prediction", "main", {"X": "X", "y": "y", "Gamma": "Gamma", "x_q": "x_q"})])
def lsa_prediction(swap: bool = False):
    yc, Gamma, x_q = MatrixSymbol("y", n, 1), MatrixSymbol("Gamma", p, p), MatrixSymbol("x_q", p, 1)
    b = ProofBuilder(
        "lsa_prediction", "The one-layer LSA prediction",
        "The prediction of one linear self-attention layer, (1/n) yᵀXΓx_q, is (1/n) x_qᵀΓᵀXᵀy.",
    )
    claim(b.main, mul(1 / n, transpose(yc), X, Gamma, x_q), mul(1 / n, transpose(x_q), transpose(Gamma),
                                                                  transpose(X), yc), swap)
    return b.proof()


@theorem
def heads_as_wide_head(swap: bool = False):
    d = dim("d")
    W1, W2 = MatrixSymbol("W_1", p, k), MatrixSymbol("W_2", p, k)
    O1, O2 = MatrixSymbol("O_1", k, d), MatrixSymbol("O_2", k, d)
    b = ProofBuilder(
        "heads_as_wide_head", "Two heads are one wide head",
        "Concatenating the heads XW₁, XW₂ and projecting with [O₁; O₂] is XW₁O₁ + XW₂O₂, "
        "and the concatenation is X[W₁ W₂].",
    )
    claim(b.main, mul(block([[mul(X, W1), mul(X, W2)]]), block([[O1], [O2]])),
          add(mul(X, W1, O1), mul(X, W2, O2)), swap)
    return b.proof()


@theorem
def heads_concatenate(swap: bool = False):
    W1, W2 = MatrixSymbol("W_1", p, k), MatrixSymbol("W_2", p, k)
    b = ProofBuilder("heads_concatenate", "Concatenated heads are one product",
                     "[XW₁ XW₂] = X[W₁ W₂].")
    claim(b.main, block([[mul(X, W1), mul(X, W2)]]), mul(X, block([[W1, W2]])), swap)
    return b.proof()


# --- leave-one-out ------------------------------------------------------------------------------------------

x_i = MatrixSymbol("x_i", p, 1)


@theorem(glossary={"x_i": "the deleted example", "G": "the Gram matrix $X^\\top X$"},
         routes=[Route("deleted_inverse", "main", {"G": "G", "x_i": "x_i"})])
def leave_one_out_inverse(swap: bool = False):
    G = MatrixSymbol("G", p, p)
    leverage = add(Identity(1), mul(-1, transpose(x_i), inv(G), x_i))  # 1 − h_i
    b = ProofBuilder(
        "leave_one_out_inverse", "Deleting one example (Sherman–Morrison)",
        "If G is invertible and 1 − x_iᵀG⁻¹x_i ≠ 0, (G − x_ix_iᵀ)⁻¹ = G⁻¹ + G⁻¹x_i(1 − x_iᵀG⁻¹x_i)⁻¹x_iᵀG⁻¹.",
        [predicate("G_invertible", Q.invertible, G), predicate("leverage_below_one", Q.invertible, leverage)],
    )
    claim(b.main, inv(add(G, mul(-1, x_i, transpose(x_i)))),
          add(inv(G), mul(inv(G), x_i, inv(leverage), transpose(x_i), inv(G))), swap)
    return b.proof()


@theorem(glossary={"x_i": "the deleted example", "y_i": "its target", "G": "the Gram matrix $X^\\top X$",
                   "b": "the moments $X^\\top Y$", "beta_hat": "the coefficients on all examples"},
         routes=[Route("deleted_coefficients", "main", {"G": "G", "b": "b", "x_i": "x_i", "y_i": "y_i"})])
def leave_one_out_coefficients(swap: bool = False):
    G, b_, y_i = MatrixSymbol("G", p, p), MatrixSymbol("b", p, k), MatrixSymbol("y_i", k, 1)
    fitted = MatrixSymbol("beta_hat", p, k)
    leverage = add(Identity(1), mul(-1, transpose(x_i), inv(G), x_i))  # 1 − h_i
    b = ProofBuilder(
        "leave_one_out_coefficients", "The leave-one-out coefficients",
        "Deleting example i from G = XᵀX and b = XᵀY, the coefficients are β̂ − G⁻¹x_i(1 − h_i)⁻¹(y_iᵀ − x_iᵀβ̂), "
        "β̂ = G⁻¹b, h_i = x_iᵀG⁻¹x_i: the full fit corrected by the residual of the deleted example.",
        [predicate("G_invertible", Q.invertible, G), predicate("leverage_below_one", Q.invertible, leverage)],
        [Definition("beta_hat", fitted, mul(inv(G), b_))],
    )
    claim(b.main, mul(inv(add(G, mul(-1, x_i, transpose(x_i)))), add(b_, mul(-1, x_i, transpose(y_i)))),
          add(fitted, mul(-1, inv(G), x_i, inv(leverage), add(transpose(y_i), mul(-1, transpose(x_i), fitted)))),
          swap)
    return b.proof()
