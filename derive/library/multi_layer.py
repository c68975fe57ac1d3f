"""k layers of linear self-attention are k steps of preconditioned gradient descent, for every k."""

from __future__ import annotations

from sympy.matrices.expressions import Identity, MatrixSymbol, ZeroMatrix

from derive.authoring import ProofBuilder, family, index, theorem
from derive.authoring.constructions import ols_coefficients
from derive.kernel import Definition, Hypothesis, Proof
from derive.kernel.terms import add, block, inv, mul, transpose
from derive.routes import Term

from .base import GLOSSARY, I_p, X, X_q, Y, k, m, n, p
from .gauge import GRAM_INVERTIBLE

t = index("t")
Gamma = MatrixSymbol("Gamma", p, p)
W_Q, W_K = MatrixSymbol("W_Q", p + k, p), MatrixSymbol("W_K", p + k, p)
W_V = MatrixSymbol("W_V", p + k, p + k)
R = MatrixSymbol("R", p + k, k)  # reads the label slot of a token


def gd_step(beta_s):
    """β − Γ Xᵀ(Xβ − Y): one step of gradient descent on ½‖Y − Xβ‖², preconditioned by Γ."""
    return add(beta_s, mul(-1, Gamma, transpose(X), add(mul(X, beta_s), mul(-1, Y))))


def attend(tokens, context):
    """Linear attention of ``tokens`` (queries) to the ``context`` tokens (keys and values): (T W_Q)(C W_K)ᵀ(C W_V)."""
    return mul(mul(tokens, W_Q), transpose(mul(context, W_K)), mul(context, W_V))


beta = family("beta", (p, k)).recurrence(ZeroMatrix(p, k), lambda s: gd_step(beta[s]))
C = family("C", (n, p + k)).recurrence(block([[X, Y]]), lambda s: add(C[s], attend(C[s], C[s])))
T = family("T", (m, p + k)).recurrence(block([[X_q, ZeroMatrix(m, k)]]), lambda s: add(T[s], attend(T[s], C[s])))
P = family("P", (p, p)).recurrence(I_p, lambda s: mul(add(I_p, mul(-1, Gamma, transpose(X), X)), P[s]))
S = family("S", (p, p)).recurrence(ZeroMatrix(p, p), lambda s: add(S[s], P[s]))

#: The generated k-layer functions: one layer of the context and of the query tokens, from the recurrences.
LAYERS = [Term("context_layer", definition="C", names={"C": "C", "W_Q": "W_Q", "W_K": "W_K", "W_V": "W_V"}),
          Term("query_layer", definition="T", names={"T": "T", "C": "C", "W_Q": "W_Q", "W_K": "W_K", "W_V": "W_V"})]


#: What the theorem means for transformers (printed after its proof in the article).
MEANING_MULTI_LAYER_GD = (
    r"Stacking $k$ linear self-attention layers with residual connections in the token form runs $k$ steps "
    r"of preconditioned gradient descent on the in-context least-squares loss; the iterate is the "
    r"truncated Neumann series $\sum_{j<k}(I - \Gamma X^{\top}X)^{j}\Gamma X^{\top}Y$. The error contracts "
    r"by $I - \Gamma X^{\top}X$ per layer, so depth buys accuracy at the rate of its spectrum, and one "
    r"layer suffices when $\Gamma = (X^{\top}X)^{-1}$."
)


@theorem(meaning=MEANING_MULTI_LAYER_GD, glossary={
    **GLOSSARY,
    "Gamma": "step matrix (preconditioner) $W_Q W_K^{\\top}$ of every layer",
    "W_Q": "query weights",
    "W_K": "key weights",
    "W_V": "value weights",
    "R": "read-out $[0; I]$ of the label slot",
    "beta": "gradient-descent iterates, $\\beta_0 = 0$",
    "C": "context tokens after $t$ layers, $C_0 = [X\\; Y]$",
    "T": "query tokens after $t$ layers, $T_0 = [X_q\\; 0]$",
    "P": "powers $(I - \\Gamma X^{\\top}X)^t$",
    "S": "sums $\\sum_{j<t} (I - \\Gamma X^{\\top}X)^j$",
    "t": "number of layers (and of gradient steps)",
})
def multi_layer_gd() -> Proof:
    b = ProofBuilder(
        "multi_layer_gd",
        "k layers of linear attention are k steps of gradient descent",
        "Let context tokens [x_i; y_i] and query tokens [x_q; 0] pass through t layers of linear self-attention with "
        "residual connections, C_{s+1} = C_s + (C_sW_Q)(C_sW_K)ᵀ(C_sW_V) and T_{s+1} = T_s + (T_sW_Q)(C_sW_K)ᵀ"
        "(C_sW_V) (queries attend to the context only), with W_Q = [Γ; 0], W_K = [I; 0] and W_V = [0, 0; 0, -I]. "
        "For every t: C_t = [X  Y − Xβ_t] and T_t = [X_q  −X_qβ_t], where β_{s+1} = β_s − ΓXᵀ(Xβ_s − Y), β_0 = 0, "
        "are t steps of gradient descent on ½‖Y − Xβ‖² preconditioned by Γ: the label slot of a query after t layers "
        "is minus its prediction after t steps. The iterate is β_t = Σ_{j<t}(I − ΓXᵀX)^j ΓXᵀY; with XᵀX "
        "invertible and β̂ = (XᵀX)⁻¹XᵀY the OLS coefficients, (I − ΓXᵀX)^t β̂ = β̂ − β_t, so the layers converge "
        "to OLS as fast as the powers of I − ΓXᵀX vanish, and one layer is OLS when Γ = (XᵀX)⁻¹.",
        [GRAM_INVERTIBLE],
        [Definition("W_Q", W_Q, block([[Gamma], [ZeroMatrix(k, p)]])),
         Definition("W_K", W_K, block([[I_p], [ZeroMatrix(k, p)]])),
         Definition("W_V", W_V, block([[ZeroMatrix(p, p), ZeroMatrix(p, k)],
                                       [ZeroMatrix(k, p), mul(-1, Identity(k))]])),
         Definition("R", R, block([[ZeroMatrix(p, k)], [Identity(k)]]))],
        families=[beta, C, T, P, S],
    )
    b.induction("context_tokens", t, C[t], block([[X, add(Y, mul(-1, X, beta[t]))]])).auto()
    b.induction("query_tokens", t, T[t], block([[X_q, mul(-1, X_q, beta[t])]])).auto()
    b.induction("geometric_sum", t, add(I_p, mul(-1, Gamma, transpose(X), X, S[t])), P[t]).auto()
    b.induction("iterate_closed_form", t, beta[t], mul(S[t], Gamma, transpose(X), Y)).auto()
    b.induction("error_contracts", t, mul(P[t], ols_coefficients(X, Y)),
                add(ols_coefficients(X, Y), mul(-1, beta[t]))).auto()
    b.lemma("one_layer_is_ols", beta[1], [Hypothesis("Gamma_is_precision", Gamma, inv(mul(transpose(X), X)))]).auto(
        ols_coefficients(X, Y))
    b.main(mul(T[t], R)).auto(mul(-1, X_q, S[t], Gamma, transpose(X), Y))
    return b.proof()
