"""Random proofs over the whole kernel language, true by construction, and their mutants.

A proof is generated *forwards*: a random world (dimension, index and scalar symbols; matrix symbols with
hypotheses; definitions; free families and families defined by recurrences; sometimes a checked theorem to
cite), then chains that start at a random defined term (often one side of a random rule, instantiated) and
apply random rules where the kernel's own rewriting finds them — every axiom, ``hyp:``/``def:``/``lemma:``/
``thm:`` rewrites with random instances, ``base:``/``step:`` — or *expand* a sub-term by an axiom read
backwards (an identity or A⁻¹A inserted, a power split, a sum of like terms, I split into blocks).  Induction
lemmas relate two recurrences, one a random rewriting of the other.  The generator uses the kernel to find
rewrites, so most proofs check; the oracle (:mod:`.oracle`) decides whether what checks is true.

:func:`mutate` then changes one thing of a proof (a rule at the wrong place, an instance swapped, a
hypothesis dropped, an index shifted, a recurrence changed, an exponent, a block size, a coefficient...).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator
from itertools import islice

import sympy
from sympy import Basic, Integer, Rational, S, Symbol, Trace
from sympy.assumptions import Q
from sympy.matrices.expressions import (
    BlockMatrix,
    Identity,
    Inverse,
    MatMul,
    MatPow,
    MatrixSymbol,
    Transpose,
    ZeroMatrix,
)

from ..kernel import AXIOMS, Chain, Definition, Family, Hypothesis, Induction, Proof, ProofError, Step, check
from ..kernel.axioms import equation_rule
from ..kernel.checking import chain_context, lemma_rule, one_step, resolve_rule, rewrites, theorem_context
from ..kernel.judgments import Context, check_defined, defined_canon, invertible, positive_definite
from ..kernel.terms import (
    Diag,
    FamilyMatrix,
    Kron,
    Ones,
    TermError,
    Tril,
    add,
    block,
    canon,
    children,
    factors_of,
    index_kind,
    inv,
    mul,
    power,
    rebuild,
    transpose,
)

__all__ = ["Generated", "World", "generate", "mutate"]

n = Symbol("n", integer=True, positive=True)
p = Symbol("p", integer=True, positive=True)
t = Symbol("t", integer=True, nonnegative=True)
s = Symbol("s", integer=True, nonnegative=True)
u = Symbol("u", integer=True, nonnegative=True)
lam = Symbol("lam", positive=True)
mu = Symbol("mu", real=True)
nu = Symbol("nu", real=True)  # given by a scalar hypothesis nu = r (issue 29)

COEFFICIENTS = (2, -1, Rational(1, 2), 3, lam, mu, 1 / lam, lam + 1, mu**2 + 1, (lam + 1) / lam, 1 / (lam + 1))
#: Coefficients with dimension and index symbols (issue 29): n > 0, and t ≥ 0 (1/t is not defined at t = 0).
SIZE_COEFFICIENTS = (1 / n, n, p / (n + 1), 1 / (t + 1), t, (t + 1) / n, 1 / t)  # 1/t: refused (t may be 0)
#: Right sides of the scalar hypothesis nu = r: of every sign (nu ≠ 0 only where r is shown non-zero).
NU_VALUES = (mu**2 + 1, mu**2, lam + mu, 1 / lam, 2 * mu, lam * mu - 1)
#: Focuses a default run mixes in (one proof in four): the Schur rules and judgment, block_add/identity/zero and
#: scalar_matrix ("blocks"), and the judgments of the three slips of derive.fuzz.unsound.
COVERAGE_TARGETS = ("schur", "blocks", "psd_congruence", "one_sided", "sign_narrowing")
COVERAGE_RATE = 0.25
NU_MAYBE_ZERO = (lam + mu, lam * mu - 1)  # 0 on some samples (λ = −μ, λμ = 1): ν's sign keeps 0 (sign_narrowing)
#: Focus of the index powers γ^(k·t + c) (issue 41): coefficients with them are drawn often, and the oracle draws their
#: real bases 0 often (``derive.fuzz.unsound``'s ``index_power`` slip takes γ^(−t) as defined for every γ).
INDEX_POWER = "index_power"
INDEX_POWER_WORLDS = 0.25  # worlds (unfocused) whose coefficients are sometimes index powers
INDEX_POWER_RATE = 0.25  # coefficients of such a world that are (0.5 with the focus)
#: The focus of issue 40: cited theorems whose scalar hypothesis nu = r reads their matrix symbols, cited at instances
#: that change them (``derive.fuzz.unsound``'s ``scalar_instance`` slip checks r without the matrices put in).
SCALAR_INSTANCE = "scalar_instance"
MAX_OPS = 40  # terms larger than this (in nodes) are not pursued
#: What building a term can raise (SymPy refusing a construction, a shape that does not conform).
BUILD_ERRORS = (TermError, ValueError, TypeError, AttributeError, NotImplementedError, IndexError, KeyError,
                sympy.polys.polyerrors.BasePolynomialError)


class Skip(Exception):
    """The generator could not build what it tried (counted, then it tries something else)."""


def index_powers(i: Symbol, world: World | None = None) -> tuple:
    """Coefficients with index powers of the index symbol ``i`` (issue 41): of λ > 0 any (λ^(−i) too), of μ (real) the
    powers with a natural exponent only — μ^(−i) and μ^(i − 1) divide by μ, which may be 0 (a sound kernel refuses
    them) — and of ν (ν = r) a negative one, defined only where r is shown non-zero."""
    out = (lam**i, lam**(i + 1), lam**(-i), 1 / (lam**i + 1), (lam**(i - 1) + mu) / (lam + 1), lam**(2 * i) * mu,
           mu**i, mu**(i + 1), mu**(2 * i) + 1, (mu**i + lam) / lam, mu**(-i), mu**(i - 1))
    if world is not None and _nu_value(world) is not None:
        out += (nu**(-i), nu**i * lam)
    return out


def _size(term: Basic) -> int:
    return sum(1 for _ in sympy.preorder_traversal(term))


def _fail(reason):
    raise Skip(reason)


def paths(term: Basic, prefix: tuple = ()) -> Iterator[tuple[tuple, Basic]]:
    """(path, sub-term) for every matrix sub-term (pre-order)."""
    yield prefix, term
    for i, child in enumerate(children(term)):
        yield from paths(child, (*prefix, i))


def replace_at(term: Basic, path: tuple, new: Basic) -> Basic:
    if not path:
        return new
    kids = children(term)
    kids[path[0]] = replace_at(kids[path[0]], path[1:], new)
    return rebuild(term, kids)


def family_member(f: Family, index) -> FamilyMatrix:
    return FamilyMatrix(f.name, index, f.rows.xreplace({f.index: index}), f.cols.xreplace({f.index: index}))


# --- the world of one proof -------------------------------------------------------------------------


@dataclasses.dataclass
class World:
    """The symbols, hypotheses, definitions and families of one generated proof."""

    rng: random.Random
    focus: frozenset
    symbols: dict = dataclasses.field(default_factory=dict)  # name -> MatrixSymbol
    roles: dict = dataclasses.field(default_factory=dict)  # name -> set of roles
    hypotheses: list = dataclasses.field(default_factory=list)
    definitions: list = dataclasses.field(default_factory=list)
    families: list = dataclasses.field(default_factory=list)
    cites: list = dataclasses.field(default_factory=list)
    placeholders: dict = dataclasses.field(default_factory=dict)  # placeholder symbol -> family member
    #: cited theorem id -> {its matrix symbol: a term of this world}: the instance the citing proof's nu = r[instance]
    #: was written for (issue 40), which its citations of that theorem mostly use
    pinned: dict = dataclasses.field(default_factory=dict)
    ctx: Context | None = None
    #: issue 41: whether coefficients are sometimes index powers, and the stream of random numbers those choices use,
    #: of its own (seeded from the world's stream without drawing from it), so that a proof in which none is drawn is
    #: the proof the seed gave before index powers existed
    index_powers: bool = False
    aux: random.Random | None = None
    #: issue 41 (definedness that follows, 1ₙ, diag(v)): None in a world without its constructs, else the names of
    #: the hypotheses it added (:func:`_issue41_world`)
    constructs: set | None = None
    aux41: random.Random | None = None  # issue 41: the stream its choices are drawn from
    #: the causal mask (issues 41, 42): the stream of a world with tril lemmas (:func:`_tril_world`), None without;
    #: ``tril_active`` while those lemmas are built (the hooks in the walk act then only)
    tril: random.Random | None = None
    tril_active: bool = False
    #: the Kronecker product (issue 41): the stream of a world with kron lemmas (:func:`_kron_world`), None without;
    #: ``kron_active`` while those lemmas are built
    kron: random.Random | None = None
    kron_active: bool = False

    def chance(self, probability: float, hole: str | None = None) -> bool:
        if hole is not None and hole in self.focus:
            probability = max(probability, 0.9)
        return self.rng.random() < probability

    def symbol(self, name, rows, cols, *roles) -> MatrixSymbol:
        m = MatrixSymbol(name, rows, cols)
        self.symbols[name] = m
        self.roles[name] = set(roles)
        return m

    def of_role(self, role) -> list:
        return [self.symbols[k] for k, v in self.roles.items() if role in v]

    def family(self, name) -> Family | None:
        return next((f for f in self.families if f.name == name), None)


def build_world(rng: random.Random, focus: frozenset = frozenset()) -> World:
    w = World(rng, focus)
    w.aux = random.Random(f"index_power:{rng.getstate()[1][:8]}")  # reads the state, draws nothing
    w.index_powers = INDEX_POWER in focus or w.aux.random() < INDEX_POWER_WORLDS
    if w.chance(0.8, "pd_power"):
        A = w.symbol("A", p, p, "pd")
        w.hypotheses.append(Hypothesis("A_pd", Q.positive_definite(A), S.true))
    if w.chance(0.6):
        B = w.symbol("B", p, p, "inv")
        w.hypotheses.append(Hypothesis("B_inv", Q.invertible(B), S.true))
    if w.chance(0.35):
        Sy = w.symbol("S", p, p, "sym")
        w.hypotheses.append(Hypothesis("S_sym", Q.symmetric(Sy), S.true))
    if w.chance(0.3):
        Dg = w.symbol("Dg", p, p, "diag")
        w.hypotheses.append(Hypothesis("Dg_diag", Q.diagonal(Dg), S.true))
        if w.chance(0.5):
            w.roles["Dg"].add("pd")
            w.roles["Dg"].add("root")
            w.hypotheses.append(Hypothesis("Dg_pd", Q.positive_definite(Dg), S.true))
    X = w.symbol("X", n, p, "free") if w.chance(0.7) else None
    w.symbol("v", p, 1, "free")
    if w.chance(0.5):
        w.symbol("w", p, 1, "free")
    if w.chance(0.3):
        w.symbol("y", n, 1, "free")
    if w.chance(0.3):
        w.symbol("K", p, p, "free")
    if w.chance(0.25):
        w.symbol("Z", 2, p, "free")
    if w.chance(0.25):
        U = w.symbol("U", p, p, "orth")
        w.hypotheses += [Hypothesis("U_cols", mul(transpose(U), U), Identity(p)),
                         Hypothesis("U_rows", mul(U, transpose(U)), Identity(p))]
    if X is not None and w.chance(0.3):
        E = w.symbol("E", p, p, "pd", "eq")
        w.hypotheses.append(Hypothesis("E_gram", E, add(mul(transpose(X), X), mul(lam, Identity(p)))))
    if w.chance(0.35, "instance"):
        M, N = w.symbol("M", p, p, "free"), w.symbol("N", p, p, "free")
        b = MatrixSymbol("b", p, 1)
        w.hypotheses.append(Hypothesis("quadratic", mul(transpose(b), M, b), mul(transpose(b), N, b), (b,)))
        del M, N
    if w.chance(0.15):
        C = w.symbol("C", p, p, "free")
        Yb = MatrixSymbol("Y_b", p, p)
        w.hypotheses.append(Hypothesis("central", mul(Yb, C), mul(C, Yb), (Yb,)))
    if w.chance(0.5) or focus & {"recurrence_index", "circular_definition"}:
        w.families.append(Family("x", s, p, Integer(1)))
    if w.chance(0.2):  # an index as a dimension: the prefix Xp[t] has t rows, Xp[0] is empty
        w.families.append(Family("Xp", s, s, p))
    if SCALAR_INSTANCE not in focus and w.chance(0.3, "sign_narrowing"):  # a scalar hypothesis nu = r (issue 29)
        values = NU_MAYBE_ZERO if "sign_narrowing" in focus else NU_VALUES
        w.hypotheses.append(Hypothesis("nu_def", nu, rng.choice(values)))
    if w.family("x") is not None and w.chance(0.25):  # P[0] = 0 (0×p), P[s+1] = [P[s]; x[s+1]ᵀ]
        w.families.append(Family("P", s, s, p, ZeroMatrix(0, p),
                                 block([[FamilyMatrix("P", s, s, p)], [transpose(FamilyMatrix("x", s + 1, p, 1))]])))
    _issue29_world(w)
    _coverage_world(w)
    _issue41_world(w)
    _tril_world(w)
    _kron_world(w)
    return w


def _coverage_world(w: World) -> None:
    """Worlds for judgments the generator did not reach before (coverage, ``derive.fuzz.coverage``): a tall Ut
    (n×p) with orthonormal columns, UtᵀUt = I_p, whose Gram matrix Ut Utᵀ (n×n, rank p) is singular although
    UtᵀUt = I is a one-sided inverse (the ``one_sided`` slip); and, with an orthogonal U and X, Λ given by
    U Λ Uᵀ = XᵀX, positive semidefinite by the congruence judgment (N = F M Fᵀ, F invertible, N psd)."""
    if w.chance(0.12, "one_sided"):
        Ut = w.symbol("Ut", n, p, "tall_orth")
        w.hypotheses.append(Hypothesis("Ut_cols", mul(transpose(Ut), Ut), Identity(p)))
    if w.focus & {"psd_congruence", "one_sided"} and "U" not in w.symbols:  # U invertible by its one-sided inverse
        U = w.symbol("U", p, p, "orth")
        w.hypotheses += [Hypothesis("U_cols", mul(transpose(U), U), Identity(p)),
                         Hypothesis("U_rows", mul(U, transpose(U)), Identity(p))]
    if "psd_congruence" in w.focus and "X" not in w.symbols:
        w.symbol("X", n, p, "free")
    U, X = w.symbols.get("U"), w.symbols.get("X")
    if U is not None and X is not None and w.chance(0.5, "psd_congruence"):
        Lm = w.symbol("Lm", p, p, "psd")
        w.hypotheses.append(Hypothesis("Lm_cong", mul(U, Lm, transpose(U)), mul(transpose(X), X)))


#: issue 41: the holes of the rules that entered with it (derive.fuzz.unsound); a world has its constructs when focused
#: on one of them or, drawn from a stream of its own, in CONSTRUCT_WORLDS of the runs' worlds (so that a world without
#: them is the world the seed gave before they existed)
CONSTRUCT_HOLES = ("scaled_invertible", "scalar_fact", "diag_invertible", "ones_inner", "diag_column")
CONSTRUCT_WORLDS = 0.25
CONSTRUCT_SALT = "d"  # names the worlds' own stream (this one: seed 27's default run reaches every rule and judgment)
#: c of Σ = c·I (GLS with Σ = σ²I: Σ⁻¹ unfolds to c⁻¹I); μ is shown non-zero only by a fact μ ≠ 0
SCALE_VALUES = (lam**2, lam, 2, mu)
#: subjects c of the scalar fact Q.nonzero(c), and divisors a world with a fact draws coefficients 1/d of: d = c is
#: defined by the fact (up to a rational factor), a d that only contains c is not (the scalar_fact slip takes it)
FACT_SUBJECTS = (mu, mu + lam, lam - 1, mu - 1, 2 * mu)
FACT_DIVISORS = (mu, mu + lam, lam - 1, mu - 1, mu + 1, lam + mu - 1, 2 * mu)
#: coefficients c of c·M (M = XᵀX) and of diag(c·1ₚ): an index t may be 0 and μ is 0 nowhere the oracle samples, so a
#: sound kernel inverts t·XᵀX and diag(t·1ₚ) never (the scaled_invertible and diag_invertible slips do)
SCALED = (lam, Integer(2), Integer(-1), lam**2, t, mu, nu)


#: Axioms that entered with issue 41: drawn in a world with its constructs only, so that the random order of the others
#: (and so every world without them) is what the seed gave before they existed.
ISSUE41_AXIOMS = ("ones_inner",)
#: The causal mask's axioms, and block_flatten (issue 42, the grids a product of stacked rows gives): drawn in the tril
#: lemmas only (:func:`_tril_lemmas`), for the same reason.
TRIL_AXIOMS = ("tril_block", "tril_scalar", "tril_sum", "tril_scale", "tril_diagonal", "tril_diag_scale")
ISSUE42_AXIOMS = (*TRIL_AXIOMS, "block_flatten")
#: The axioms every walk draws from, in the kernel's order: those the seeds' streams were drawn with before issue 41.
#: An axiom the kernel adds is not among them until the generator draws it from a stream of its own (as the groups
#: above are): a new name in a shuffled list would change every proof of every seed, and the coverage the default run
#: is tuned to with it (tests/test_fuzz.py); until then the coverage count names it as not reached.
BASE_AXIOMS = ("transpose_product", "transpose_transpose", "transpose_sum", "transpose_symmetric", "transpose_inverse",
               "transpose_zero", "inverse_product", "inverse_identity", "inverse_inverse", "inverse_cancel",
               "power_combine", "identity_mul", "zero_mul", "zero_add", "collect", "distribute", "block_multiply",
               "block_transpose", "block_single", "block_add", "block_scale", "block_identity", "block_zero",
               "block_inverse_diagonal", "block_inverse_schur", "block_inverse_schur_mirror", "scalar_matrix",
               "transpose_scalar")


def _axiom_names(world: World | None) -> list[str]:
    """The axioms a step or a mutation draws from, in the kernel's order (issue 41's only for a world with them)."""
    return [a for a in AXIOMS if a in BASE_AXIOMS or
            (a in ISSUE41_AXIOMS and world is not None and world.constructs is not None)]


def _issue41_world(w: World) -> None:
    """Worlds for the rules of issue 41: XᵀX invertible (c·XᵀX invertible for c ≠ 0) and, focused, Σ = c·I (XᵀΣ⁻¹X
    unfolds to c⁻¹XᵀX), a scalar fact Q.nonzero(c), and v with diag(v) invertible or positive definite (every entry
    non-zero, positive).  Every choice here and in the hooks below is drawn from the world's stream of its own
    (:attr:`World.aux41`), and a construct *replaces* what the seed's stream chose (a term, a coefficient, a chain's
    start, an axiom tried): so the proofs of a run change only where a construct is drawn, and the rules and
    judgments the run reached before are still reached."""
    aux = random.Random(f"{CONSTRUCT_SALT}:{w.rng.getstate()[1][:8]}")  # reads the state, draws nothing
    focused = bool(w.focus & set(CONSTRUCT_HOLES))
    if not (focused or aux.random() < CONSTRUCT_WORLDS):
        return
    w.aux41, added = aux, set()
    w.constructs = added

    def chance(probability: float, hole: str) -> bool:
        return aux.random() < (max(probability, 0.9) if hole in w.focus else probability)

    X = w.symbols.get("X")
    if X is not None and chance(0.8, "scaled_invertible"):
        w.hypotheses.append(Hypothesis("gram_inv", Q.invertible(mul(transpose(X), X)), S.true))
        added.add("gram_inv")
        if focused and chance(0.5, "scaled_invertible"):  # a new symbol and rule: the focused worlds only
            Sc = w.symbol("Sc", n, n, "iso")
            w.hypotheses.append(Hypothesis("Sc_iso", Sc, mul(aux.choice(SCALE_VALUES), Identity(n))))
            added.add("Sc_iso")
    if chance(0.6, "scalar_fact"):
        w.hypotheses.append(Hypothesis("fact_nonzero", Q.nonzero(aux.choice(FACT_SUBJECTS)), S.true))
        added.add("fact_nonzero")
    if "v" in w.symbols and chance(0.5, "diag_invertible"):
        pred = aux.choice((Q.invertible, Q.invertible, Q.positive_definite))
        w.hypotheses.append(Hypothesis("Dv_entries", pred(Diag(w.symbols["v"])), S.true))
        added.add("Dv_entries")


def _construct_rate(world: World, base: float) -> float:
    """How often a hook of issue 41 replaces what the seed's stream chose (much more often when focused)."""
    return 0.6 if world.focus & set(CONSTRUCT_HOLES) else base


def _construct_start(terms: Terms, world: World):
    """A start for a chain of a world with issue 41's constructs (or None), of a kind drawn first (each kind reaches a
    rule or judgment of issue 41): the ones vector — the centring matrix C = I − 11ᵀ/p squared or applied to 1, 1ᵀ1,
    1ᵀM1, vᵀ11ᵀ1 (a row times 1 that is not 1ᵀ); diag(v) — diag(v)ᵀ, 1ᵀdiag(v)1, inverses of diag(c·1) and diag(v);
    c·M — inverses of c·XᵀX and XᵀSc⁻¹X; a scalar fact — 1/d·1ᵀ1 for d the fact's subject or a scalar containing it.
    Drawn from the world's own stream."""
    aux = world.aux41
    one = Ones(p)
    v = world.symbols.get("v")
    centring = add(Identity(p), mul(-1 / p, one, transpose(one)))
    middle = aux.choice([m for m in world.symbols.values() if m.shape == (p, p)] or [Identity(p)])
    kinds = {"ones": [mul(centring, centring), mul(centring, one), mul(transpose(one), one),
                      mul(transpose(one), middle, one), mul(one, transpose(one), one)]}
    if v is not None:
        kinds["ones"] += [mul(transpose(v), one, transpose(one), one), mul(transpose(one), one, transpose(v))]
        kinds["diag"] = [mul(Diag(v), one), mul(transpose(one), Diag(v), one), transpose(Diag(v))]
    inverses = [x for x in terms.construct_candidates(p) if terms.defined(inv(x))]
    kinds["diag"] = kinds.get("diag", []) + [inv(x) for x in inverses if type(x) is Diag]
    scaled = [x for x in inverses if type(x) is not Diag]
    if scaled:
        kinds["scaled"] = [inv(x) for x in scaled] + [mul(inv(x), aux.choice((one, v or one))) for x in scaled]
    fact = terms.fact_coefficient(force=True)
    if fact is not None:
        kinds["fact"] = [mul(fact, transpose(one), one), mul(fact, one), mul(fact, middle)]
    choice = aux.choice(kinds[aux.choice(sorted(kinds))])
    try:
        return canon(choice) if terms.defined(choice) else None
    except BUILD_ERRORS:
        return None


# --- the causal mask: tril(A) and tril(A, -1) (issues 41, 42) -------------------------------------------------------

#: The holes of the causal mask's rules and judgment (derive.fuzz.unsound), each a focus.  A world has tril lemmas when
#: focused on one of them or, drawn from a stream of its own, in TRIL_WORLDS of a run's worlds; the lemmas are built
#: after every other chain of the proof, from that stream, so that the rest of the proof is what the seed gave before
#: the mask existed (a run's coverage of the other rules stays what it was).
TRIL_WORLDS = 0.3
TRIL_SALT = "k"  # names the worlds' own stream (this one: seed 27's default run reaches every tril rule and judgment)
#: The kind of chain start each hole's focus draws most (see :func:`_tril_start`).
TRIL_FOCUS_KINDS = {"tril_above": "block", "tril_block_offset": "block", "tril_scalar": "scalar",
                    "tril_symmetric": "symmetric", "tril_diag_scale": "product", "unit_lower_triangular": "unit",
                    "tril_square": "square", "tril_partition": "partition"}
TRIL_HOLES = tuple(TRIL_FOCUS_KINDS)  # tril_partition: a masked slip (derive.fuzz.unsound.MASKED), focus only
#: The kinds an unfocused tril world draws its starts from: one for each rule (both of tril_diag_scale's sides), the
#: unit-lower-triangular inverses, a few that mix them; "partition", "square" and non-strict "unit" are for the focus.
TRIL_KINDS = ("block", "block", "block", "block", "scalar", "scalar", "sum", "scale", "scale", "diagonal",
              "diag_scale", "diag_scale", "unit", "unit", "unit", "product", "symmetric", "nested", "flatten",
              "flatten")


def _tril_world(w: World) -> None:
    """A world with tril lemmas (issues 41, 42), its choices drawn from a stream of its own (:attr:`World.tril`): one
    focused on a tril hole, or TRIL_WORLDS of the others but those of a run focused on another hole (whose seeds'
    findings stay where they were)."""
    aux = random.Random(f"tril{TRIL_SALT}:{w.rng.getstate()[1][:8]}")  # reads the state, draws nothing
    focused = w.focus & set(TRIL_HOLES)
    other = w.focus - set(TRIL_HOLES) - set(COVERAGE_TARGETS)  # a run focused on another hole: as it was
    if focused or (not other and aux.random() < TRIL_WORLDS):
        w.tril = aux


def _tril_lemmas(world: World, ctx: Context, lemma_rules: dict) -> list[Chain]:
    """Chains about the causal mask (one or two; two when focused), each from a start of :func:`_tril_start` walked with
    the tril axioms tried first or at places of the world's tril stream, and with their backward readings
    (:func:`_tril_expansions`); sometimes read backwards whole."""
    aux = world.tril
    out = []
    world.tril_active = True
    try:
        for k in range(2 if world.focus & set(TRIL_HOLES) else aux.choice((1, 2))):
            name = f"tril{k}"
            try:
                inner = chain_context(ctx, Chain(name, Identity(1), Identity(1), ()), lemma_rules, _fail)
            except (Skip, ProofError, TermError):
                break
            terms = Terms(world, inner)
            terms.rng = aux  # every choice of the chain from the world's tril stream
            try:
                chain = _tril_chain(name, inner, terms, world, aux.randint(2, 4))
            except (Skip, ProofError, *BUILD_ERRORS):  # a lemma not built: the proof without it
                chain = None
            if chain is not None:
                out.append(chain)
                lemma_rules[f"lemma:{name}"] = lemma_rule(chain)
    finally:
        world.tril_active = False
    return out


def _tril_chain(name: str, ctx: Context, terms: Terms, world: World, length: int) -> Chain | None:
    rng = terms.rng
    for _ in range(4):
        start = _tril_start(terms, world)
        steps = walk(start, length, ctx, terms, world) if start is not None else []
        steps = steps[:_checked_prefix(start, steps, ctx)]
        if steps:
            break
    else:
        return None
    if rng.random() < 0.3:  # read backwards: each step the rule read the other way
        exprs = [start] + [x.expr for x in steps]
        back = [Step(exprs[i - 1], steps[i - 1].rule, steps[i - 1].instance) for i in range(len(steps), 0, -1)]
        return Chain(name, exprs[-1], start, tuple(back))
    return Chain(name, start, steps[-1].expr, tuple(steps))


def _tril_step(current, ctx: Context, terms: Terms) -> Step | None:
    """A step of a tril lemma by one of the causal mask's axioms (or None, and the walk draws as it does elsewhere):
    usually forwards where a tril of ``current`` matches one, else backwards at a random sub-term
    (:func:`_tril_expansions`), each verified by the kernel."""
    rng = terms.rng
    if (current.atoms(Tril) or current.atoms(BlockMatrix)) and rng.random() < 0.75:
        names = list(ISSUE42_AXIOMS)
        rng.shuffle(names)
        for name in names:
            try:
                results = [r for _, r in islice(rewrites(current, AXIOMS[name], ctx), 24) if r != current]
            except Exception:  # noqa: BLE001 - the generator proposes; anything a rule cannot do is skipped
                continue
            rng.shuffle(results)
            for result in results[:4]:
                try:
                    after = defined_canon(result, ctx)
                except TermError:
                    continue
                if after != current and _size(after) <= 3 * MAX_OPS:
                    return Step(after, name)
    if rng.random() < 0.4:
        where = list(paths(current))
        rng.shuffle(where)
        for path, sub in where[:8]:
            proposals = _tril_expansions(sub, terms)
            rng.shuffle(proposals)
            for new_sub, name in proposals:
                try:
                    after = _accept(current, replace_at(current, path, new_sub), AXIOMS[name], ctx)
                except BUILD_ERRORS:
                    continue
                if after is not None:
                    return Step(after, name)
    return None


def _checked_prefix(start, steps: list[Step], ctx: Context) -> int:
    """How many of the walk's first steps the checker takes as they are written (each expression put in normal form
    again, the rule rewriting the previous one into it): the walk compares a rewrite's normal form, the checker the
    rewrite itself, and a tril lemma the checker refused would take the whole proof (and what it covers) with it."""
    try:
        current = defined_canon(start, ctx)
    except TermError:
        return 0
    for k, step in enumerate(steps):
        try:
            after = defined_canon(step.expr, ctx)
            if after == current or not one_step(current, after, resolve_rule(step, ctx, _fail), ctx):
                return k
        except (TermError, Skip):
            return k
        current = after
    return len(steps)


def _tril_sizes(world: World) -> list:
    """Sizes of the square arguments of a tril: p, 1, and n where X gives n×n terms."""
    return [p, p, p, 1] + ([n] if "X" in world.symbols else [])


def _tril_args(terms: Terms, k) -> list:
    """k×k arguments for a tril: symbols, products and sums of them, outer products vwᵀ, XᵀX, XXᵀ, vᵀMw, diag(v), I,
    and a random term of the shape."""
    w, rng = terms.w, terms.rng
    syms = [m for m in w.symbols.values() if m.shape == (k, k)]
    out = list(syms)
    v = w.symbols["v"]
    other = w.symbols.get("w", v)
    X, y = w.symbols.get("X"), w.symbols.get("y")
    if k == p:
        out += [mul(v, transpose(other)), Diag(v)]
        if X is not None:
            out.append(mul(transpose(X), X))
        if len(syms) >= 2:
            a, b = rng.sample(syms, 2)
            out += [mul(a, b), add(a, transpose(b))]
    elif k == n:
        out += [mul(X, transpose(X))] if X is not None else []
        out += [mul(y, transpose(y))] if y is not None else []
    elif k == 1:
        out += [mul(transpose(v), other), mul(transpose(other), rng.choice(syms or [Identity(p)]), v)]
        out += [mul(transpose(y), y)] if y is not None else []
    out.append(terms.term(k, k, 1))
    return out


def _tril_arg(terms: Terms, k):
    return terms.rng.choice(_tril_args(terms, k))


def _tril_block_of(terms: Terms, r, c):
    """A block of a grid: 0 or I sometimes, else a random term of its shape."""
    roll = terms.rng.random()
    if roll < 0.12:
        return ZeroMatrix(r, c)
    if roll < 0.2 and r == c:
        return Identity(r)
    return terms.term(r, c, 1)


def _tril_grid(terms: Terms, square: bool = True):
    """A block grid for tril_block: heights and widths from p, 1, n (with X) and 2 (with Z), equal (the diagonal
    blocks square: symbolic and numeric sizes, 2×2 and 3×3 grids) or, with ``square`` false, a rotation of the heights
    (the grid square, its diagonal blocks not: no rule splits its tril)."""
    w, rng = terms.w, terms.rng
    options = [(p, 1), (1, p), (1, 1), (p, 1, p), (1, p, 1)]
    if "X" in w.symbols:
        options += [(n, p), (p, n)]
    if "Z" in w.symbols:
        options += [(2, p), (2, 1)]
    heights = rng.choice(options)
    widths = heights
    if not square:
        options = [h for h in options if len(set(h)) > 1]
        heights = rng.choice(options)
        widths = heights[1:] + heights[:1]
    return block([[_tril_block_of(terms, r, c) for c in widths] for r in heights])


def _unit_lower(terms: Terms, strict: bool = True):
    """I + Σ c·D tril(A, -1) E, D and E diag(v), diag(w), I or nothing (unit lower triangular, invertible); with
    ``strict`` false one part's tril keeps its diagonal (I − tril(I) = 0 among them): a sound kernel inverts none."""
    w, rng = terms.w, terms.rng
    k = n if "X" in w.symbols and rng.random() < 0.2 else p
    v = w.symbols["v"]
    diags = [None, None, Identity(k)] + ([Diag(v), Diag(w.symbols.get("w", v))] if k == p else [])
    if not strict and rng.random() < 0.3:
        return add(Identity(k), mul(-1, Tril(rng.choice([Identity(k), *diags[3:]]), 0)))
    parts = [Identity(k)]
    count = rng.choice((1, 1, 2))
    for i in range(count):
        offset = 0 if not strict and i == count - 1 else -1
        c = rng.choice((1, 1, -1, lam, terms.coefficient()))
        D, E = rng.choice(diags), rng.choice(diags)
        if rng.random() < 0.5:  # c·D tril(A, -1) E, the judgment's own form
            parts.append(mul(c, *[f for f in (D, Tril(_tril_arg(terms, k), offset), E) if f is not None]))
        else:  # tril(c·D A E, -1) or tril(A + B, -1): one tril too, which the mask's rules take apart
            inner = mul(c, *[f for f in (D, _tril_arg(terms, k), E) if f is not None]) if rng.random() < 0.6 else \
                add(_tril_arg(terms, k), _tril_arg(terms, k))
            parts.append(Tril(inner, offset))
    return add(*parts)


def _tril_start(terms: Terms, world: World):
    """A defined start with tril terms (or None): a kind drawn (most often the focus's), a tril built for it, then
    sometimes put in a product, a sum, a scaling or a transpose.  Kinds: a block grid (tril_block), a 1×1 term
    (tril_scalar), sums, scalings, I, 0 and diag(v) (tril_diagonal), diag(v) factors (tril_diag_scale), products of
    square matrices, symmetric matrices (XᵀX, S, A + Aᵀ), trils of trils, and inverses of unit lower triangular
    sums — for the focus also grids whose diagonal blocks are not square, trils of non-square matrices, and
    inverses of sums with a non-strict tril."""
    rng = terms.rng
    w = world
    focus = [TRIL_FOCUS_KINDS[h] for h in sorted(w.focus & set(TRIL_FOCUS_KINDS))]
    kind = rng.choice(focus) if focus and rng.random() < 0.8 else rng.choice(TRIL_KINDS)
    offset = -1 if (kind == "scalar" and "tril_scalar" in w.focus) or "tril_block_offset" in w.focus else \
        rng.choice((0, -1))
    k = rng.choice(_tril_sizes(w))
    v = w.symbols["v"]
    try:
        if kind == "block":
            core = Tril(_tril_grid(terms), offset)
        elif kind == "partition":
            core = Tril(_tril_grid(terms, square=False), offset)
        elif kind == "scalar":
            core = Tril(_tril_arg(terms, 1), offset)
        elif kind == "sum":
            core = Tril(add(*[_tril_arg(terms, k) for _ in range(rng.choice((2, 2, 3)))]), offset)
        elif kind == "scale":
            core = Tril(mul(rng.choice((2, -1, lam, terms.coefficient())), _tril_arg(terms, k)), offset)
        elif kind == "diagonal":
            choices = [Identity(k), ZeroMatrix(k, k)]
            if k == p:
                choices += [Diag(v), Diag(w.symbols.get("w", v)), Diag(mul(lam, v))]
            core = Tril(rng.choice(choices), offset)
        elif kind == "diag_scale":
            k, other = p, Diag(w.symbols.get("w", v))
            inner = rng.choice([[Diag(v), _tril_arg(terms, p)], [_tril_arg(terms, p), other],
                                [rng.choice((2, lam, -1)), Diag(v), _tril_arg(terms, p), other]])
            core = Tril(mul(*inner), offset)
        elif kind == "product":
            factors = [_tril_arg(terms, k) for _ in range(rng.choice((2, 2, 3)))]
            if k == p and rng.random() < 0.3:
                factors.insert(rng.choice((0, len(factors))), Diag(v))
            core = Tril(mul(*factors), offset)
        elif kind == "symmetric":
            syms = [m for m in w.symbols.values() if m.shape == (p, p)]
            choices = [mul(v, transpose(v)), add(Identity(p), mul(v, transpose(v)))]
            choices += [m for m in (w.symbols.get("S"), w.symbols.get("Dg")) if m is not None]
            choices += [add(a, transpose(a)) for a in syms[:2]]
            if "X" in w.symbols:
                choices.append(mul(transpose(w.symbols["X"]), w.symbols["X"]))
            k = p
            core = Tril(rng.choice(choices), offset)
        elif kind == "flatten":  # issue 42: a grid of block rows (or columns), tril of it or not
            grid = [[b for b in row] for row in _tril_grid(terms).blocks.tolist()]
            if rng.random() < 0.5:
                nested = block([[block([row])] for row in grid])
            else:
                nested = block([[block([[row[j]] for row in grid]) for j in range(len(grid[0]))]])
            core = Tril(nested, offset) if rng.random() < 0.7 else nested
        elif kind == "nested":
            core = Tril(add(Tril(_tril_arg(terms, k), rng.choice((0, -1))), _tril_arg(terms, k)), offset)
        elif kind == "square":
            choices = [m for m in w.symbols.values() if m.shape[0] != m.shape[1]]
            choices += [transpose(m) for m in choices]
            core = Tril(rng.choice(choices), offset)
            k = None
        else:  # "unit": the inverse of a unit lower triangular sum (non-strict with the focus)
            U = _unit_lower(terms, strict=not ("unit_lower_triangular" in w.focus and rng.random() < 0.8))
            k = U.shape[0]
            x = terms.term(k, 1, 1)
            return _defined_start(terms, rng.choice((inv(U), inv(U), mul(inv(U), x), mul(inv(U), U),
                                                     mul(transpose(x), inv(U), x), add(inv(U), U))))
        if k is not None:
            k = core.shape[0]
            roll = rng.random()
            if roll < 0.15:
                core = mul(core, terms.term(k, 1, 1))
            elif roll < 0.25:
                core = add(core, terms.term(k, k, 1))
            elif roll < 0.3:
                core = mul(rng.choice((2, lam)), core)
            elif roll < 0.35:
                core = transpose(core)
    except BUILD_ERRORS:
        return None
    return _defined_start(terms, core)


def _defined_start(terms: Terms, term):
    try:
        return canon(term) if terms.defined(term) else None
    except BUILD_ERRORS:
        return None


def _tril_expansions(sub: Basic, terms: Terms) -> list[tuple[Basic, str]]:
    """The causal mask's axioms read backwards (verified by the kernel before use): D → tril(D) and 0 → tril(D, -1)
    for D = I, diag(v); a → tril(a), 0₁ₓ₁ → tril(a, -1) for 1×1 a; tril(A) + tril(B) → tril(A + B); c·tril(A) →
    tril(c·A); diag(v)·tril(A) → tril(diag(v)·A) and tril(A)·diag(v) → tril(A·diag(v)); a grid with tril on its
    diagonal blocks and 0 above → tril(grid) (the blocks above drawn at random: the rule drops them)."""
    rng = terms.rng
    r, c = sub.shape
    out = []

    def propose(make, rule):
        try:
            out.append((make(), rule))
        except BUILD_ERRORS:
            pass

    if type(sub) in (Identity, Diag):
        propose(lambda: Tril(sub, 0), "tril_diagonal")
    if type(sub) is ZeroMatrix and r == c:
        choices = [Identity(r), ZeroMatrix(r, r)] + ([Diag(terms.w.symbols["v"])] if r == p else [])
        propose(lambda: Tril(rng.choice(choices), -1), "tril_diagonal")
    if r == 1 and c == 1:
        propose(lambda: Tril(sub, 0), "tril_scalar")
        if type(sub) is ZeroMatrix:
            propose(lambda: Tril(terms.term(1, 1, 1), -1), "tril_scalar")
    kind = type(sub)
    if kind is sympy.MatAdd and all(type(a) is Tril for a in sub.args) and len({a.args[1] for a in sub.args}) == 1:
        propose(lambda: Tril(add(*[a.args[0] for a in sub.args]), sub.args[0].args[1]), "tril_sum")
    if kind is MatMul:
        coeff, mats = factors_of(sub)
        if coeff != 1 and len(mats) == 1 and type(mats[0]) is Tril:
            propose(lambda: Tril(mul(coeff, mats[0].args[0]), mats[0].args[1]), "tril_scale")
        if coeff == 1 and len(mats) == 2 and type(mats[0]) is Diag and type(mats[1]) is Tril:
            propose(lambda: Tril(mul(mats[0], mats[1].args[0]), mats[1].args[1]), "tril_diag_scale")
        if coeff == 1 and len(mats) == 2 and type(mats[1]) is Diag and type(mats[0]) is Tril:
            propose(lambda: Tril(mul(mats[0].args[0], mats[1]), mats[0].args[1]), "tril_diag_scale")
    if kind is BlockMatrix and min(sub.blockshape) >= 2:  # block_flatten backwards: the rows (columns) nested
        rows = [[b for b in row] for row in sub.blocks.tolist()]
        propose(lambda: block([[block([row])] for row in rows]) if rng.random() < 0.5 else
                block([[block([[row[j]] for row in rows]) for j in range(len(rows[0]))]]), "block_flatten")
    if kind is BlockMatrix:
        grid = [[b for b in row] for row in sub.blocks.tolist()]
        size = len(grid)
        diagonal = [grid[i][i] for i in range(min(size, len(grid[0])))]
        if size == len(grid[0]) and all(type(d) is Tril for d in diagonal) and \
                len({d.args[1] for d in diagonal}) == 1 and \
                all(type(grid[i][j]) is ZeroMatrix for i in range(size) for j in range(i + 1, size)):
            offset = diagonal[0].args[1]
            propose(lambda: Tril(block([[grid[i][j] if i > j else grid[i][i].args[0] if i == j else
                                         _tril_block_of(terms, *grid[i][j].shape) for j in range(size)]
                                        for i in range(size)]), offset), "tril_block")
    return out


# --- the Kronecker product A ⊗ B (issue 41) --------------------------------------------------------------------------

#: The Kronecker product's axioms: drawn in the Kronecker lemmas only (:func:`_kron_lemmas`), as the tril ones are.
KRON_AXIOMS = ("kron_mixed", "kron_transpose", "kron_inverse", "kron_sum", "kron_scale", "kron_identity")
#: A world has Kronecker lemmas when focused on one of the holes below or, drawn from a stream of its own, in
#: KRON_WORLDS of a run's worlds; they are built after every other chain (the tril lemmas included, whose rules they do
#: not cite), from that stream, so that the rest of the proof is what the seed gave before the product existed.
KRON_WORLDS = 0.3
KRON_SALT = "a"  # names the worlds' own stream (this one: seed 27's default run reaches every kron rule)
#: The kind of chain start each hole's focus draws most (see :func:`_kron_start`); kron_mixed and kron_inverse are
#: masked slips (derive.fuzz.unsound.MASKED), focus only.
KRON_FOCUS_KINDS = {"kron_mixed": "conform", "kron_inverse": "inverse", "kron_transpose": "transpose",
                    "kron_judgment": "judgment", "kron_scale": "scale"}
KRON_HOLES = tuple(KRON_FOCUS_KINDS)
#: The kinds an unfocused Kronecker world draws its starts from: each rule (forwards here, backwards in the walk), the
#: pair that conforms only as a whole, and the invertible, symmetric and diagonal judgments of A ⊗ B.
KRON_KINDS = ("mixed", "mixed", "mixed", "conform", "transpose", "transpose", "inverse", "inverse", "inverse", "sum",
              "sum", "scale", "scale", "identity", "identity", "zero", "symmetric", "symmetric", "diagonal",
              "diagonal")
#: Besides its own, the rules a Kronecker lemma's walk tries first: the judgments' rules (A⁻¹A = I of an invertible
#: A ⊗ B, (S ⊗ T)ᵀ = S ⊗ T of symmetric factors) and what the mixed product leaves (I·A, 0·A).
KRON_STEP_RULES = (*KRON_AXIOMS, "transpose_symmetric", "inverse_cancel", "identity_mul", "zero_mul")


def _kron_world(w: World) -> None:
    """A world with Kronecker lemmas, its choices drawn from a stream of its own (:attr:`World.kron`): one focused on a
    kron hole, or KRON_WORLDS of the others but those of a run focused on another hole."""
    aux = random.Random(f"kron{KRON_SALT}:{w.rng.getstate()[1][:8]}")  # reads the state, draws nothing
    focused = w.focus & set(KRON_HOLES)
    other = w.focus - set(KRON_HOLES) - set(COVERAGE_TARGETS)
    if focused or (not other and aux.random() < KRON_WORLDS):
        w.kron = aux


def _kron_lemmas(world: World, ctx: Context, lemma_rules: dict) -> list[Chain]:
    """Chains about the Kronecker product (one or two; two when focused), each from a start of :func:`_kron_start`
    walked with the kron axioms tried first (:func:`_kron_step`) and their backward readings
    (:func:`_kron_expansions`); sometimes read backwards whole.  ``lemma_rules``: those of the chains before the tril
    lemmas (a kron lemma cites none of these, so that the tril lemmas are the same with or without it)."""
    aux = world.kron
    out = []
    # the world's other streams, while these lemmas are built, drawn from the kron stream: what the tril lemmas drew
    # from them does not change the kron lemmas, nor these the streams' states after
    saved = world.rng, world.aux, world.aux41
    world.rng = random.Random(aux.random())
    world.aux = random.Random(aux.random()) if world.aux is not None else None
    world.aux41 = random.Random(aux.random()) if world.aux41 is not None else None
    world.kron_active = True
    try:
        for k in range(2 if world.focus & set(KRON_HOLES) else aux.choice((1, 2))):
            name = f"kron{k}"
            try:
                inner = chain_context(ctx, Chain(name, Identity(1), Identity(1), ()), lemma_rules, _fail)
            except (Skip, ProofError, TermError):
                break
            terms = Terms(world, inner)
            terms.rng = aux  # every choice of the chain from the world's kron stream
            try:
                chain = _kron_chain(name, inner, terms, world, aux.randint(2, 4))
            except (Skip, ProofError, *BUILD_ERRORS):
                chain = None
            if chain is not None:
                out.append(chain)
                lemma_rules[f"lemma:{name}"] = lemma_rule(chain)
    finally:
        world.kron_active = False
        world.rng, world.aux, world.aux41 = saved
    return out


def _kron_chain(name: str, ctx: Context, terms: Terms, world: World, length: int) -> Chain | None:
    rng = terms.rng
    for _ in range(5):
        start = _kron_start(terms, world)
        steps = walk(start, length, ctx, terms, world) if start is not None else []
        steps = steps[:_checked_prefix(start, steps, ctx)]
        if steps:
            break
    else:
        return None
    if rng.random() < 0.3:  # read backwards: each step the rule read the other way
        exprs = [start] + [x.expr for x in steps]
        back = [Step(exprs[i - 1], steps[i - 1].rule, steps[i - 1].instance) for i in range(len(steps), 0, -1)]
        return Chain(name, exprs[-1], start, tuple(back))
    return Chain(name, start, steps[-1].expr, tuple(steps))


def _kron_step(current, ctx: Context, terms: Terms) -> Step | None:
    """A step of a Kronecker lemma (or None, and the walk draws as it does elsewhere): usually forwards by one of
    KRON_STEP_RULES where ``current`` has a Kronecker product, else backwards at a random sub-term
    (:func:`_kron_expansions`), each verified by the kernel."""
    rng = terms.rng
    if current.atoms(Kron) and rng.random() < 0.75:
        names = list(KRON_STEP_RULES)
        rng.shuffle(names)
        for name in names:
            try:
                results = [r for _, r in islice(rewrites(current, AXIOMS[name], ctx), 24) if r != current]
            except Exception:  # noqa: BLE001 - the generator proposes; anything a rule cannot do is skipped
                continue
            rng.shuffle(results)
            for result in results[:4]:
                try:
                    after = defined_canon(result, ctx)
                except TermError:
                    continue
                if after != current and _size(after) <= 3 * MAX_OPS:
                    return Step(after, name)
    if rng.random() < 0.5:
        where = list(paths(current))
        rng.shuffle(where)
        for path, sub in where[:8]:
            proposals = _kron_expansions(sub, terms)
            rng.shuffle(proposals)
            for new_sub, name in proposals:
                try:
                    after = _accept(current, replace_at(current, path, new_sub), AXIOMS[name], ctx)
                except BUILD_ERRORS:
                    continue
                if after is not None:
                    return Step(after, name)
    return None


def _kron_dims(world: World) -> list:
    """Sizes of a Kronecker factor's sides: p, 1, 2, 3 and n where X gives n×… terms (symbolic and numeric)."""
    return [p, p, 1, 2, 3] + ([n] if "X" in world.symbols else [])


def _dim_name(d) -> str:
    return str(d).replace("*", "")


def _kron_symbol(r, c) -> MatrixSymbol:
    """A free matrix of the Kronecker lemmas, one name per shape (Kr12: 1×2, Krpp: p×p)."""
    return MatrixSymbol(f"Kr{_dim_name(r)}{_dim_name(c)}", r, c)


def _kron_factor(terms: Terms, r, c):
    """An r×c factor: a free matrix of its shape, the world's matrices of it, I, or a random term (symbolic sizes)."""
    rng = terms.rng
    options = [_kron_symbol(r, c), _kron_symbol(r, c)]
    options += [m for m in terms.w.symbols.values() if m.shape == (r, c)]
    if r == c:
        options.append(Identity(r))
    if not (is_number_dim(r) and is_number_dim(c)) and rng.random() < 0.4:
        try:
            options.append(terms.term(r, c, 1))
        except (Skip, *BUILD_ERRORS):
            pass
    return rng.choice(options)


def is_number_dim(d) -> bool:
    return isinstance(d, int) or getattr(d, "is_Integer", False)


def _kron_invertibles(terms: Terms, k) -> list:
    """k×k factors the kernel shows invertible: I, c·I, the world's A (pd), B, E, U (and their transposes, inverses)."""
    w = terms.w
    out = [Identity(k), mul(terms.rng.choice((2, -1, lam, Rational(1, 2))), Identity(k))]
    for name in ("A", "B", "E", "U"):
        m = w.symbols.get(name)
        if m is not None and m.shape == (k, k):
            out += [m, transpose(m), inv(m)]
    return [m for m in out if invertible(m, terms.ctx)]


def _kron_singulars(terms: Terms, k) -> list:
    """k×k factors that are singular on every sample (0, v wᵀ for p ≥ 2, 1ₖ… rank one) or not shown invertible."""
    w = terms.w
    out = [ZeroMatrix(k, k)]
    if k == p:
        v = w.symbols["v"]
        out += [mul(v, transpose(w.symbols.get("w", v))), mul(v, transpose(v))]
    if is_number_dim(k) and k >= 2:
        col = _kron_symbol(k, 1)
        out.append(mul(col, transpose(col)))
    return out


def _kron_symmetrics(terms: Terms, k) -> list:
    """k×k factors the kernel shows symmetric: I, c·I, S, Dg, XᵀX, XXᵀ, v vᵀ, M + Mᵀ."""
    w = terms.w
    out = [Identity(k), mul(lam, Identity(k))]
    if k == p:
        v = w.symbols["v"]
        out += [m for m in (w.symbols.get("S"), w.symbols.get("Dg")) if m is not None]
        out += [mul(v, transpose(v))]
        if "X" in w.symbols:
            out.append(mul(transpose(w.symbols["X"]), w.symbols["X"]))
        out += [add(m, transpose(m)) for m in w.symbols.values() if m.shape == (p, p)][:2]
    elif k == n and "X" in w.symbols:
        out.append(mul(w.symbols["X"], transpose(w.symbols["X"])))
    else:
        sq = _kron_symbol(k, k)
        out.append(add(sq, transpose(sq)))
    return out


def _kron_diagonals(terms: Terms, k) -> list:
    """k×k factors the kernel shows diagonal and invertible: I, c·I, Dg where it is positive definite too."""
    w = terms.w
    out = [Identity(k), mul(terms.rng.choice((2, lam, 3)), Identity(k))]
    if k == p and "Dg" in w.symbols and "pd" in w.roles["Dg"]:
        out += [w.symbols["Dg"]] * 2
    return out


def _kron_start(terms: Terms, world: World):
    """A defined start with Kronecker products (or None): a kind drawn (most often the focus's), then sometimes put in
    a product, a sum, a scaling or a transpose.  Kinds: mixed products (A ⊗ B)(C ⊗ D) with conforming pairs of
    symbolic and numeric sizes, products that conform only as a whole (1×2 ⊗ 3×3 times 3×1 ⊗ 2×2, which kron_mixed
    does not split), transposes, inverses of A ⊗ B with invertible factors (times A ⊗ B or a vector), sums on either
    side, scaled factors, I ⊗ I, A ⊗ 0 and 0 ⊗ A, the transpose of S ⊗ T with symmetric factors, (KᵀK)^(1/2) with K a
    product of diagonal invertible factors (the diagonal judgment), and — for the focus — inverses of A ⊗ B with
    one factor singular."""
    rng = terms.rng
    w = world
    focus = [KRON_FOCUS_KINDS[h] for h in sorted(w.focus & set(KRON_FOCUS_KINDS))]
    kind = rng.choice(focus) if focus and rng.random() < 0.8 else rng.choice(KRON_KINDS)
    dims = _kron_dims(w)
    square = [p, p, 1, 2, 3] + ([n] if "X" in w.symbols else [])
    try:
        if kind == "mixed":
            r1, m1, c1, r2, m2, c2 = (rng.choice(dims) for _ in range(6))
            A, C = _kron_factor(terms, r1, m1), _kron_factor(terms, m1, c1)
            B, D = _kron_factor(terms, r2, m2), _kron_factor(terms, m2, c2)
            core = mul(Kron(A, B), Kron(C, D))
        elif kind == "conform":  # cols(A)·cols(B) = rows(C)·rows(D), the pairs not conforming
            shapes = rng.choice([((1, 2), (3, 3), (3, 1), (2, 2)), ((2, 3), (1, 2), (2, 1), (3, 2)),
                                 ((1, p), (2, 2), (2, 1), (p, p)), ((3, 2), (2, 3), (3, 3), (2, 2))])
            A, B, C, D = (_kron_factor(terms, r, c) for r, c in shapes)
            core = mul(Kron(A, B), Kron(C, D))
        elif kind == "transpose":
            core = transpose(Kron(*(_kron_factor(terms, rng.choice(dims), rng.choice(dims)) for _ in range(2))))
        elif kind in ("inverse", "judgment"):
            k1, k2 = rng.choice(square), rng.choice(square)
            A = rng.choice(_kron_invertibles(terms, k1))
            B = rng.choice(_kron_singulars(terms, k2) if kind == "judgment" else _kron_invertibles(terms, k2))
            K = Kron(A, B) if rng.random() < 0.5 else Kron(B, A)
            x = _kron_factor(terms, K.shape[1], 1)
            core = rng.choice((inv(K), inv(K), mul(inv(K), K), mul(K, inv(K)), mul(inv(K), x),
                               add(inv(K), K) if kind == "judgment" else mul(transpose(x), inv(K), x)))
        elif kind == "sum":
            r1, c1, r2, c2 = (rng.choice(dims) for _ in range(4))
            left = add(_kron_factor(terms, r1, c1), _kron_factor(terms, r1, c1))
            right = _kron_factor(terms, r2, c2)
            core = Kron(left, right) if rng.random() < 0.5 else Kron(right, left)
            if rng.random() < 0.3:
                core = Kron(left, add(right, _kron_factor(terms, r2, c2)))
        elif kind == "scale":
            r1, c1, r2, c2 = (rng.choice(dims) for _ in range(4))
            c, d = (rng.choice((2, -1, lam, Rational(1, 2), 3, terms.coefficient())) for _ in range(2))
            left, right = _kron_factor(terms, r1, c1), _kron_factor(terms, r2, c2)
            roll = rng.random()
            if roll < 0.4 or "kron_scale" in w.focus:
                core = Kron(mul(c, left), mul(d, right))
            elif roll < 0.7:
                core = Kron(left, mul(d, right))
            else:
                core = Kron(mul(c, left), right)
        elif kind == "identity":
            k1, k2 = rng.choice(square), rng.choice(square)
            core = Kron(Identity(k1), Identity(k2))
            if rng.random() < 0.5:
                core = mul(core, _kron_factor(terms, core.shape[1], rng.choice((1, p))))
        elif kind == "zero":
            r1, c1, r2, c2 = (rng.choice(dims) for _ in range(4))
            zero, other = ZeroMatrix(r1, c1), _kron_factor(terms, r2, c2)
            core = Kron(zero, other) if rng.random() < 0.5 else Kron(other, zero)
            if rng.random() < 0.4:
                core = add(core, _kron_factor(terms, *core.shape))
        elif kind == "symmetric":
            k1, k2 = rng.choice(square), rng.choice(square)
            K = Kron(rng.choice(_kron_symmetrics(terms, k1)), rng.choice(_kron_symmetrics(terms, k2)))
            x = _kron_factor(terms, K.shape[0], 1)
            core = rng.choice((transpose(K), transpose(K), mul(transpose(x), transpose(K), x)))
        else:  # "diagonal": (KᵀK)^(1/2), KᵀK positive definite (K invertible) and diagonal (K ⊗ of diagonal factors)
            k1, k2 = rng.choice(square), rng.choice(square)
            K = Kron(rng.choice(_kron_diagonals(terms, k1)), rng.choice(_kron_diagonals(terms, k2)))
            core = power(mul(transpose(K), K), Rational(1, 2))
            if rng.random() < 0.5:
                core = mul(core, core)
        if kind not in ("inverse", "judgment", "symmetric", "diagonal"):
            r, c = core.shape
            roll = rng.random()
            if roll < 0.15:
                core = mul(core, _kron_factor(terms, c, 1))
            elif roll < 0.25:
                core = add(core, _kron_factor(terms, r, c))
            elif roll < 0.3:
                core = mul(rng.choice((2, lam)), core)
            elif roll < 0.35:
                core = transpose(core)
    except (Skip, *BUILD_ERRORS):
        return None
    return _defined_start(terms, core)


def _kron_expansions(sub: Basic, terms: Terms) -> list[tuple[Basic, str]]:
    """The Kronecker product's axioms read backwards (verified by the kernel before use): AC ⊗ BD → (A ⊗ B)(C ⊗ D)
    (each product split at a random place); Aᵀ ⊗ Bᵀ → (A ⊗ B)ᵀ; A⁻¹ ⊗ B⁻¹ → (A ⊗ B)⁻¹; A ⊗ C + B ⊗ C → (A + B) ⊗ C
    and on the right; c·(A ⊗ B) → cA ⊗ B, A ⊗ cB or c₁A ⊗ c₂B (c = c₁c₂); I_k ⊗ … of a product size → I ⊗ I, and 0 →
    A ⊗ 0 or 0 ⊗ A of a factored shape."""
    rng = terms.rng
    out = []

    def propose(make, rule):
        try:
            out.append((make(), rule))
        except (Skip, *BUILD_ERRORS):
            pass

    kind = type(sub)
    if kind is Kron:
        a, b = sub.args
        (ca, ma), (cb, mb) = factors_of(a), factors_of(b)
        if len(ma) >= 2 and len(mb) >= 2:
            i, j = rng.randrange(1, len(ma)), rng.randrange(1, len(mb))
            propose(lambda: mul(Kron(mul(ca, ma[:i]), mul(cb, mb[:j])), Kron(mul(ma[i:]), mul(mb[j:]))), "kron_mixed")
        if type(a) is Transpose and type(b) is Transpose:
            propose(lambda: Transpose(Kron(a.args[0], b.args[0])), "kron_transpose")
        if type(a) is Inverse and type(b) is Inverse:
            propose(lambda: Inverse(Kron(a.args[0], b.args[0])), "kron_inverse")
    if kind is sympy.MatAdd and all(type(x) is Kron for x in sub.args):
        lefts, rights = {x.args[0] for x in sub.args}, {x.args[1] for x in sub.args}
        if len(rights) == 1:
            propose(lambda: Kron(add(*[x.args[0] for x in sub.args]), sub.args[0].args[1]), "kron_sum")
        if len(lefts) == 1:
            propose(lambda: Kron(sub.args[0].args[0], add(*[x.args[1] for x in sub.args])), "kron_sum")
    if kind is MatMul:
        coeff, mats = factors_of(sub)
        if coeff != 1 and len(mats) == 1 and type(mats[0]) is Kron:
            a, b = mats[0].args
            split = rng.choice((coeff, 2, -1, lam)) if coeff != 1 else coeff
            propose(lambda: rng.choice((Kron(mul(coeff, a), b), Kron(a, mul(coeff, b)),
                                        Kron(mul(split, a), mul(coeff / split, b)))), "kron_scale")
    if kind is Identity:
        size = sub.shape[0]
        pairs = [(x, size / x) for x in (2, 3, p, n) if (size / x).is_integer and (size / x) != size and
                 (size / x).is_positive and x != size]
        if pairs:
            k1, k2 = rng.choice(pairs)
            propose(lambda: Kron(Identity(k1), Identity(k2)), "kron_identity")
    if kind is ZeroMatrix:
        r, c = sub.shape
        rows = [(x, r / x) for x in (1, 2, 3, p, n) if (r / x).is_integer and (r / x).is_positive]
        cols = [(x, c / x) for x in (1, 2, 3, p, n) if (c / x).is_integer and (c / x).is_positive]
        if rows and cols:
            (r1, r2), (c1, c2) = rng.choice(rows), rng.choice(cols)
            propose(lambda: Kron(ZeroMatrix(r1, c1), _kron_factor(terms, r2, c2)) if rng.random() < 0.5 else
                    Kron(_kron_factor(terms, r1, c1), ZeroMatrix(r2, c2)), "kron_identity")
    return out


def _issue29_world(w: World) -> None:
    """Definedness that follows from what is known (issue 29): a whitened X_w := L⁻¹X with Σ = LLᵀ and XᵀΣ⁻¹X (or,
    a hypothesis about the defined symbol, X_wᵀX_w) invertible; Woodbury's capacitance (A + UCV with C and
    C⁻¹ + VA⁻¹U invertible); a recurrence that keeps positive definiteness (Pd[s + 1] = Pd[s] + x[s + 1]x[s + 1]ᵀ)."""
    X = w.symbols.get("X")
    if X is not None and w.chance(0.2):
        Lw, Sg, Xw = w.symbol("Lw", n, n, "whiten"), w.symbol("Sg", n, n, "eq"), MatrixSymbol("Xw", n, p)
        w.hypotheses += [Hypothesis("Sg_chol", Sg, mul(Lw, transpose(Lw))),
                         Hypothesis("Lw_inv", Q.invertible(Lw), S.true)]
        w.definitions.append(Definition("Xw_def", Xw, mul(inv(Lw), X)))
        about_defined = w.chance(0.5)
        gram = mul(transpose(Xw), Xw) if about_defined else mul(transpose(X), inv(Sg), X)
        w.hypotheses.append(Hypothesis("whitened_gram", Q.invertible(gram), S.true))
    pd = w.of_role("pd")
    if pd and w.chance(0.2):
        Uc, Cc, Vc = w.symbol("Uc", p, 2, "tall"), w.symbol("Cc", 2, 2, "core"), w.symbol("Vc", 2, p, "wide")
        w.hypotheses += [Hypothesis("Cc_inv", Q.invertible(Cc), S.true),
                         Hypothesis("capacitance", Q.invertible(add(inv(Cc), mul(Vc, inv(pd[0]), Uc))), S.true)]
    if w.family("x") is not None and w.chance(0.2):
        x1 = FamilyMatrix("x", s + 1, p, Integer(1))
        base = w.rng.choice([Identity(p), *pd[:1]])
        w.families.append(Family("Pd", s, p, p, base, add(FamilyMatrix("Pd", s, p, p), mul(x1, transpose(x1)))))


# --- random terms -------------------------------------------------------------------------------------


class Terms:
    """Random defined terms of a given shape over a world (filtered by the kernel's definedness check)."""

    def __init__(self, world: World, ctx: Context, extra_leaves=(), index_symbols=(t,)):
        self.w, self.ctx, self.rng = world, ctx, world.rng
        self.extra = list(extra_leaves)
        self.indices = list(index_symbols)

    def coefficient(self):
        fact = self.fact_coefficient()
        if fact is not None:
            return fact
        if _nu_value(self.w) is not None and self.rng.random() < (0.5 if "sign_narrowing" in self.w.focus else 0.05):
            return self.rng.choice((1 / nu, nu, 1 / nu))  # its definedness needs ν's sign, narrowed by ν = r
        c = self.rng.choice(COEFFICIENTS)
        if self.rng.random() < 0.12:  # issue 29: a dimension or index symbol, or the scalar of a hypothesis
            c = self.rng.choice(SIZE_COEFFICIENTS + ((nu, 1 / nu, nu + lam) if _nu_value(self.w) is not None else ()))
        if self.rng.random() < 0.1 and "v" in self.w.symbols:
            v = self.w.symbols["v"]
            other = self.w.symbols.get("w", v)
            c = c * Trace(mul(transpose(v), other))
        return self.index_power(c)

    def index_power(self, c):
        """``c``, or sometimes (in a world with index powers) a coefficient with an index power γ^(k·t + c) of one of
        this term's index symbols instead (issue 41; drawn from the world's own stream :attr:`World.aux`)."""
        w = self.w
        if not w.index_powers or not self.indices or w.aux is None:
            return c
        if w.aux.random() < (0.5 if INDEX_POWER in w.focus else INDEX_POWER_RATE):
            return w.aux.choice(index_powers(w.aux.choice(self.indices), w))
        return c

    def leaves(self, r, c) -> list:
        out = [m for m in [*self.w.symbols.values(), *self.extra] if m.shape == (r, c)]
        out += [transpose(m) for m in self.w.symbols.values() if m.shape == (c, r) and r != c]
        out += [d.symbol for d in self.w.definitions if d.symbol.shape == (r, c)]
        for f in self.w.families:
            for e in [0, 1, *self.indices, *(i + 1 for i in self.indices)]:
                member = family_member(f, e)
                if member.shape == (r, c):
                    out.append(member)
                if f.index in f.rows.free_symbols and f.cols == c and r == c:  # Xp[e]ᵀ Xp[e], empty at 0
                    out.append(mul(transpose(member), member))
        if r == c:
            out += [Identity(r)] * 2
        return out

    # -- issue 41: the ones vector, diag(v), c·M, scalar facts (only in a world with them: World.constructs) --

    def construct_leaves(self, r, c) -> list:
        """1ₖ and 1ₖᵀ (k = p, n), diag(v) and diag(λ·1ₚ), in a world with issue 41's constructs."""
        if self.w.constructs is None:
            return []
        out = []
        for k in (p, n):
            if (r, c) == (k, 1):
                out.append(Ones(k))
            if (r, c) == (1, k):
                out.append(transpose(Ones(k)))
        if r == c == p and "v" in self.w.symbols:
            out += [Diag(self.w.symbols["v"]), Diag(mul(lam, Ones(p)))]
        if r == c == p and "diag_column" in self.w.focus:  # diag of a matrix: a sound kernel never takes it
            out += [Diag(m) for m in self.w.symbols.values() if m.shape == (p, p)]
        return out

    def construct_candidates(self, k) -> list:
        """k×k candidates for an inverse (issue 41): c·XᵀX (XᵀX invertible), XᵀSc⁻¹X (Sc = c·I), diag(c·1ₚ), diag(v)
        (every entry of v non-zero by hypothesis); c of every sign, 0 included (t), for the kernel to refuse."""
        added = self.w.constructs
        if added is None or k != p:
            return []
        coefficients = [c for c in SCALED if (not c.has(t) or t in self.indices)
                        and (not c.has(nu) or _nu_value(self.w) is not None)]
        aux = self.w.aux41
        out = [Diag(mul(aux.choice(coefficients), Ones(p))), Diag(Ones(p))]
        X = self.w.symbols.get("X")
        if X is not None and "gram_inv" in added:
            out += [mul(aux.choice(coefficients), transpose(X), X) for _ in range(2)]
            if "Sc_iso" in added:
                out.append(mul(transpose(X), inv(self.w.symbols["Sc"]), X))
        if "Dv_entries" in added:
            out.append(Diag(self.w.symbols["v"]))
        return out

    def fact_coefficient(self, force: bool = False):
        """In a world with a scalar fact (issue 41), sometimes (``force``: always) 1/d for d the fact's subject (half
        the time) or a scalar that merely contains it (the scalar_fact slip takes μ ≠ 0 for μ + λ ≠ 0); else None."""
        added = self.w.constructs
        if added is None or "fact_nonzero" not in added:
            return None
        aux = self.w.aux41
        if force or aux.random() < (0.5 if "scalar_fact" in self.w.focus else 0.1):
            subject = next(h.lhs.arguments[0] for h in self.w.hypotheses if h.name == "fact_nonzero")
            return 1 / (subject if aux.random() < 0.5 else aux.choice(FACT_DIVISORS))
        return None

    def construct_swap(self, term, r, c):
        """``term``, or sometimes (in a world with issue 41's constructs) a defined construct of its shape instead: 1ₖ,
        1ₖᵀ, diag(v), diag(λ·1ₚ), or the inverse of a candidate (drawn from the world's own stream)."""
        aux = self.w.aux41
        if self.w.constructs is None or aux.random() >= _construct_rate(self.w, 0.0) / 2:
            return term
        options = self.construct_leaves(r, c)
        if r == c:
            options += [inv(x) for x in self.construct_candidates(r)]
        options = [x for x in options if self.defined(x)]
        return aux.choice(options) if options else term

    def invertible_candidates(self, k) -> list:
        out = []
        if k == p:
            I = Identity(p)
            for A in self.w.of_role("pd"):
                j, c = self.rng.choice(((2, lam), (3, 1), (4, 4), (3, lam)))
                out += [A, transpose(A), power(A, j), add(power(A, j), mul(c, I)), add(A, mul(lam, I))]
                out += [add(power(A, j), mul(c, I))] * 2
            for B in self.w.of_role("inv") + self.w.of_role("orth"):
                out += [B, mul(B, transpose(B)), power(B, 2)]
            if "X" in self.w.symbols:
                X = self.w.symbols["X"]
                out.append(add(mul(transpose(X), X), mul(lam, I)))
            out += [mul(self.rng.choice((2, lam)), I)]
            out += self._issue29_candidates()
            out += self.coverage_candidates(p)
        elif k == 1 and "v" in self.w.symbols:
            v = self.w.symbols["v"]
            out += [add(Identity(1), mul(transpose(v), v))]
            for A in self.w.of_role("pd"):
                out.append(add(Identity(1), mul(transpose(v), inv(A), v)))
        elif k == p + 1:
            for A in self.w.of_role("pd") + self.w.of_role("inv"):
                corner = mul(self.rng.choice((2, lam)), Identity(1))
                out.append(block([[A, ZeroMatrix(p, 1)], [ZeroMatrix(1, p), corner]]))
            out.append(Identity(p + 1))
            out += self.schur_candidates()
        elif k == n:
            if "X" in self.w.symbols:
                X = self.w.symbols["X"]
                out.append(add(mul(X, transpose(X)), mul(lam, Identity(n))))
            out += self.coverage_candidates(n)
        return out

    def schur_candidates(self) -> list:
        """(p + 1)-square block matrices with non-zero off-diagonal blocks (issue 29): [[A, v], [−vᵀ, λI₁]] for a
        positive definite A, invertible by either Schur complement (λ + vᵀA⁻¹v and A + λ⁻¹vvᵀ are positive
        definite); [[A, v], [wᵀ, wᵀA⁻¹v]], singular whatever A is (its complement is wᵀA⁻¹v − wᵀA⁻¹v = 0), which
        a sound kernel never inverts."""
        v = self.w.symbols.get("v")
        if v is None:
            return []
        other = self.w.symbols.get("w", v)
        out = [block([[A, v], [mul(-1, transpose(v)), mul(lam, Identity(1))]]) for A in self.w.of_role("pd")]
        out += [block([[A, v], [transpose(other), mul(transpose(other), inv(A), v)]])
                for A in self.w.of_role("pd") + self.w.of_role("inv")]
        return out

    def coverage_candidates(self, k) -> list:
        """k×k matrices for judgments the generator did not reach before: I ± B(BᵀB)⁻¹Bᵀ (I + a congruence of a
        positive definite middle; with −, the zero matrix, which a sound kernel never inverts), λI + K A Kᵀ
        (semidefinite by congruence with any K), Λ + λI (U Λ Uᵀ = XᵀX), λI + Ut Utᵀ and the singular Ut Utᵀ."""
        out, I = [], Identity(k)
        symbols = self.w.symbols
        if k == p:
            for B in (self.w.of_role("inv") + self.w.of_role("pd"))[:1]:
                middle = inv(mul(transpose(B), B))
                out += [add(I, mul(B, middle, transpose(B))), add(I, mul(-1, B, middle, transpose(B)))]
            if "K" in symbols and self.w.of_role("pd"):
                K = symbols["K"]
                out.append(add(mul(lam, I), mul(K, self.w.of_role("pd")[0], transpose(K))))
            if "Lm" in symbols:
                out.append(add(symbols["Lm"], mul(lam, I)))
        elif k == n and "Ut" in symbols:
            Ut = symbols["Ut"]
            out += [add(mul(Ut, transpose(Ut)), mul(lam, I)), mul(Ut, transpose(Ut))]
        return out

    def _issue29_candidates(self) -> list:
        """p×p matrices invertible by the judgments of issue 29: X_wᵀX_w (unfolded), A + UCV (capacitance),
        Pd[e] (a recurrence that keeps positive definiteness)."""
        out = []
        defined = {d.symbol.name: d.symbol for d in self.w.definitions}
        if "Xw" in defined:
            out.append(mul(transpose(defined["Xw"]), defined["Xw"]))
        if "Cc" in self.w.symbols and self.w.of_role("pd"):
            A = self.w.of_role("pd")[0]
            Uc, Cc, Vc = (self.w.symbols[k] for k in ("Uc", "Cc", "Vc"))
            out += [add(A, mul(Uc, Cc, Vc))] * 2
        pd_family = self.w.family("Pd")
        if pd_family is not None:
            out += [family_member(pd_family, e) for e in (0, 1, *self.indices, *(i + 1 for i in self.indices))]
        return out

    def defined(self, term) -> bool:
        try:
            check_defined(term, self.ctx)
        except TermError:
            return False
        return True

    def term(self, r, c, depth=2):
        for _ in range(12):
            try:
                candidate = self._term(r, c, depth)
            except BUILD_ERRORS:
                continue
            if candidate is not None and _size(candidate) <= MAX_OPS and self.defined(candidate):
                return self.construct_swap(candidate, r, c)
        leaves = self.leaves(r, c)
        if leaves:
            return self.rng.choice(leaves)
        return ZeroMatrix(r, c)

    def _term(self, r, c, depth):
        rng = self.rng
        if isinstance(r, sympy.Add) or isinstance(c, sympy.Add):
            if r == c and rng.random() < (0.6 if "schur" in self.w.focus else 0.15):  # a block matrix's inverse
                pool = self.schur_candidates() if "schur" in self.w.focus and rng.random() < 0.7 else \
                    self.invertible_candidates(r)
                candidates = [x for x in pool if self.defined(x)]
                if candidates:
                    return inv(rng.choice(candidates))
            if rng.random() < (0.6 if "blocks" in self.w.focus else 0.12):
                return self._block_cover(r, c, depth)
            return self._block(r, c, depth)
        choice = rng.random() if depth > 0 else 0.0
        if choice < 0.3:
            leaves = self.leaves(r, c)
            return rng.choice(leaves) if leaves else None
        if choice < 0.55:
            if rng.random() < (0.4 if "blocks" in self.w.focus else 0.06):  # a 1×1 middle factor (scalar_matrix)
                return mul(self.term(r, 1, depth - 1), self.term(1, 1, depth - 1), self.term(1, c, depth - 1))
            inner = rng.choice((p, p, n, 1, p + 1))
            left, right = self.term(r, inner, depth - 1), self.term(inner, c, depth - 1)
            parts = [left, right]
            if rng.random() < 0.3:
                parts.insert(0, self.coefficient())
            return mul(*parts)
        if choice < 0.7:
            terms = [self.term(r, c, depth - 1) for _ in range(rng.choice((2, 2, 3)))]
            return add([mul(self.coefficient(), x) if rng.random() < 0.3 else x for x in terms])
        if choice < 0.82 and r == c:
            candidates = [x for x in self.invertible_candidates(r) if self.defined(x)]
            powers = [x for x in candidates if x.atoms(MatPow)]
            if powers and rng.random() < 0.4:  # inverses of powers (and of sums with powers) of matrices
                candidates = powers
            special = [x for x in self._issue29_candidates() if x in candidates] if r == p else []
            if special and rng.random() < 0.4:  # judged invertible only by the judgments of issue 29
                candidates = special
            cover = [x for x in self.coverage_candidates(r) if x in candidates]
            if cover and rng.random() < (0.7 if self.w.focus & {"psd_congruence", "one_sided"} else 0.15):
                candidates = cover
            if candidates:
                chosen = inv(rng.choice(candidates))
                return transpose(chosen) if "blocks" in self.w.focus and rng.random() < 0.3 else chosen  # (K⁻¹)ᵀ
            return None
        if choice < 0.9 and r == c:
            bases = self.w.of_role("pd") + self.w.of_role("inv") + self.w.of_role("free")
            bases = [b for b in bases if b.shape == (r, r)]
            if not bases:
                return None
            base = rng.choice(bases)
            roles = self.w.roles.get(base.name, set())
            exponents = [2, 3]
            if roles & {"pd", "inv"}:
                exponents += [-1, -2, 4]
            if "pd" in roles:
                exponents += [Rational(1, 2), Rational(-1, 2), Rational(3, 2)]
            return power(base, rng.choice(exponents))
        if choice < 0.94:
            inner = self.term(c, r, depth - 1)
            return transpose(inner)
        return mul(self.coefficient(), self.term(r, c, depth - 1))

    def _block_cover(self, r, c, depth):
        """A sum of two block matrices of one partition (``block_add``), or the block forms of I and 0
        (``block_identity``, ``block_zero``), for the rules the generator did not reach before."""
        def split(d):
            return [d.args[0], d - d.args[0]] if isinstance(d, sympy.Add) else [d]

        rows, cols = split(r), split(c)
        kind = self.rng.randrange(3)
        if kind == 0:
            return add(*(block([[self.term(a, b, depth - 1) for b in cols] for a in rows]) for _ in range(2)))
        if kind == 1 and r == c:
            return block([[Identity(a) if i == j else ZeroMatrix(a, b) for j, b in enumerate(cols)]
                          for i, a in enumerate(rows)])
        return block([[ZeroMatrix(a, b) for b in cols] for a in rows])

    def _block(self, r, c, depth):
        def parts(d):
            return list(d.args) if isinstance(d, sympy.Add) and self.rng.random() < 0.8 else [d]

        rows, cols = parts(r), parts(c)
        if len(rows) == len(cols) == 1:
            return Identity(r) if r == c and self.rng.random() < 0.5 else None
        return block([[self.term(a, b, depth - 1) for b in cols] for a in rows])


# --- instances ----------------------------------------------------------------------------------------


def instance_term(terms: Terms, r, c):
    """A term for a bound variable of shape r×c: usually a defined term; sometimes a raw product with an
    identity whose shape SymPy reads as r×c although its factors do not conform (``MatMul(I_n, I_1)``)."""
    rng = terms.rng
    if rng.random() < (0.6 if "instance" in terms.w.focus else 0.15):
        if c == 1 and r != 1:
            return rng.choice((MatMul(Identity(r), Identity(1)), MatMul(Identity(r), terms.term(1, 1, 0))))
        if r == 1 and c != 1:
            return MatMul(Identity(1), Identity(c))
        return MatMul(Identity(r), terms.term(r, c, 0))
    return terms.term(r, c, 1)


def instances(name: str, entry, terms: Terms, world: World) -> list[tuple]:
    """Random instances for the variables of the rule ``name`` (an entry of ``ctx.rules`` or a citation)."""
    rng = terms.rng
    if name.startswith("thm:"):
        return _citation_instance(name, terms, world)
    if entry is None:  # an axiom
        return []
    forall = entry[2]
    optional = len(entry) > 3 and entry[3]
    if not forall or (optional and rng.random() < 0.4):
        return []
    out, dims = [], {}
    for v in forall:
        if isinstance(v, Symbol):
            if v.is_nonnegative and not v.is_positive:  # an index
                value = rng.choice((Integer(0), Integer(1), Integer(2), t, t + 1, u))
            else:
                value = rng.choice((Integer(1), Integer(2), n, p))
            dims[v] = value
            out.append((v, value))
    for v in forall:
        if isinstance(v, MatrixSymbol):
            r, c = (d.xreplace(dims) for d in v.shape)
            out.append((v, instance_term(terms, r, c)))
    return out


def _citation_instance(name: str, terms: Terms, world: World) -> list[tuple]:
    """An instance for a citation of a theorem: each symbol of its claim and of the right side r of its scalar
    hypothesis nu = r (issue 40: an instance that changes r needs nu = r[instance] here) sometimes left to stand
    for itself, else a term that satisfies its predicates; r's symbols mostly as :attr:`World.pinned` has them."""
    theorem = next(th for th in world.cites if th.id == name[4:])
    rng = terms.rng
    preds = _predicates(theorem.proof)
    in_r = _scalar_hypothesis_symbols(theorem.proof)
    pinned = world.pinned.get(theorem.id, {}) if in_r and rng.random() < 0.85 else {}
    focused = SCALAR_INSTANCE in world.focus
    # focused, the symbols of its predicate hypotheses too (A, B: the citing world may have no such A of its own)
    extra = in_r | set(preds) if focused else in_r
    out = []
    for sym in sorted({m for m in theorem.proof.claim.lhs.atoms(MatrixSymbol)} |
                      {m for m in theorem.proof.claim.rhs.atoms(MatrixSymbol)} | extra, key=lambda m: m.name):
        if sym in pinned:
            out.append((sym, pinned[sym]))
            continue
        if rng.random() < (0.1 if focused and sym in extra else 0.4):
            continue
        value = _instance_for(sym, preds.get(sym, set()), terms, world)
        if value is not None:
            out.append((sym, value))
    return out


def _predicates(proof: Proof) -> dict:
    """matrix symbol -> the predicates (Q.invertible, ...) the proof's hypotheses state of it."""
    preds: dict = {}
    for h in proof.hypotheses:
        if h.is_predicate:
            preds.setdefault(h.lhs.arguments[0], set()).add(h.lhs.function)
    return preds


def _scalar_hypothesis_symbols(proof: Proof) -> set:
    """The matrix symbols the right sides of the proof's scalar hypotheses nu = r read (issue 40)."""
    return {m for h in proof.hypotheses if type(h.lhs) is Symbol for m in h.rhs.atoms(MatrixSymbol)}


def _instance_for(sym, need: set, terms: Terms, world: World):
    """A term for the cited theorem's symbol ``sym`` that the citing context shows has the predicates ``need``
    (positive definite, invertible), or any term of its shape when it needs none; None when there is none."""
    r, c = sym.shape
    if need & {Q.positive_definite, Q.invertible}:
        candidates = [x for x in terms.invertible_candidates(r) + [power(a, 3) for a in world.of_role("pd")]
                      if terms.defined(x)]
        if Q.positive_definite in need:
            candidates = [x for x in candidates if positive_definite(canon(x), terms.ctx)]
        elif candidates:
            candidates = [x for x in candidates if invertible(canon(x), terms.ctx)]
        return terms.rng.choice(candidates) if candidates else None
    if not need:
        return terms.term(r, c, 1)
    return None


def _nu_value(world: World):
    """The right side r of the world's scalar hypothesis nu = r, or None."""
    return next((h.rhs for h in world.hypotheses if h.name == "nu_def"), None)


def rule_for(name: str, instance, ctx: Context):
    return resolve_rule(Step(Identity(1), name, tuple(instance)), ctx, _fail)


# --- chains -------------------------------------------------------------------------------------------


def _expansions(sub: Basic, terms: Terms) -> list[tuple[Basic, str]]:
    """Sub-terms that an axiom read backwards rewrites to ``sub`` (verified by the kernel before use)."""
    rng = terms.rng
    r, c = sub.shape
    out = []

    def propose(make, rule):
        try:
            out.append((make(), rule))
        except BUILD_ERRORS:
            pass

    propose(lambda: mul(sub, Identity(c)), "identity_mul")
    propose(lambda: mul(Identity(r), sub), "identity_mul")
    propose(lambda: transpose(transpose(sub)), "transpose_transpose")
    propose(lambda: add(sub, ZeroMatrix(r, c)), "zero_add")
    propose(lambda: block([[sub]]), "block_single")
    a = terms.index_power(rng.choice(COEFFICIENTS[:4]))  # γ^t·A + (1 − γ^t)·A: an index power (issue 41)
    propose(lambda: add(mul(a, sub), mul(1 - a, sub)), "collect")
    if r == c:
        propose(lambda: transpose(sub), "transpose_symmetric")
    if isinstance(sub, Identity):
        candidates = terms.invertible_candidates(r)
        if candidates:
            k = rng.choice(candidates)
            propose(lambda: mul(inv(k), k), "inverse_cancel")
            propose(lambda: mul(k, inv(k)), "inverse_cancel")
        propose(lambda: inv(sub), "inverse_identity")
    if isinstance(sub, ZeroMatrix):
        propose(lambda: transpose(ZeroMatrix(c, r)), "transpose_zero")
        k = rng.choice((p, 1))
        propose(lambda: mul(ZeroMatrix(r, k), terms.term(k, c, 1)), "zero_mul")
    if r == c and not isinstance(sub, Identity):
        propose(lambda: inv(inv(sub)), "inverse_inverse")
    if isinstance(sub, Inverse):
        propose(lambda: transpose(inv(transpose(sub.args[0]))), "transpose_inverse")
    if isinstance(sub, MatPow) or (isinstance(sub, MatrixSymbol) and r == c):
        base, q = (sub.args[0], sub.args[1]) if isinstance(sub, MatPow) else (sub, Integer(1))
        split = rng.choice((Rational(1, 2), Integer(1), Integer(2), Integer(-1)))
        propose(lambda: mul(power(base, split), power(base, q - split)), "power_combine")
    if r == 1 and c == 1:  # issue 29: a literally 1×1 term is its own transpose
        propose(lambda: transpose(sub), "transpose_scalar")
    value = _nu_value(terms.w)
    if value is not None and rng.random() < 0.5:  # nu/r · sub, which hyp:nu_def (nu → r) rewrites to sub
        propose(lambda: mul(nu, 1 / value, sub), "hyp:nu_def")
    if isinstance(r, sympy.Add):
        a_, b_ = r.args[0], r - r.args[0]
        if isinstance(sub, Identity):
            propose(lambda: block([[Identity(a_), ZeroMatrix(a_, b_)], [ZeroMatrix(b_, a_), Identity(b_)]]),
                    "block_identity")
        if isinstance(sub, ZeroMatrix):
            propose(lambda: block([[ZeroMatrix(a_, c)], [ZeroMatrix(b_, c)]]), "block_zero")
    return out


def _accept(current, new, rule, ctx) -> Basic | None:
    try:
        after = defined_canon(new, ctx)
    except TermError:
        return None
    if after == current or _size(after) > 3 * MAX_OPS:
        return None
    try:
        ok = one_step(current, after, rule, ctx)
    except TermError:
        return None
    return after if ok else None


def _rule_names(ctx: Context, world: World) -> list[str]:
    names = list(AXIOMS) + [k for k in ctx.rules if not k.startswith("hyp:IH")] + [f"thm:{th.id}" for th in world.cites]
    scalar = getattr(ctx, "scalar_equations", {})  # scalar hypotheses λ = r are rules (issue 29); predicates are not
    return [k for k in names if not (k in ctx.rules and ctx.rules[k][0] is None) or k in scalar]


def step_forward(current, ctx: Context, terms: Terms, world: World) -> Step | None:
    rng = terms.rng
    if world.tril_active:  # the tril lemmas: the causal mask's axioms first, forwards or backwards
        step = _tril_step(current, ctx, terms)
        if step is not None:
            return step
    if world.kron_active:  # the Kronecker lemmas: its axioms first, forwards or backwards
        step = _kron_step(current, ctx, terms)
        if step is not None:
            return step
    if rng.random() < 0.35:
        where = list(paths(current))
        path, sub = rng.choice(where)
        proposals = _expansions(sub, terms)
        rng.shuffle(proposals)
        for new_sub, rule_name in proposals:
            try:
                new = replace_at(current, path, new_sub)
            except BUILD_ERRORS:
                continue
            try:
                rule = AXIOMS[rule_name] if rule_name in AXIOMS else rule_for(rule_name, (), ctx)
            except Skip:
                continue
            after = _accept(current, new, rule, ctx)
            if after is not None:
                return Step(after, rule_name)
        return None
    names = _rule_names(ctx, world)
    equations = [k for k in names if ":" in k]
    axioms = _axiom_names(None)
    rng.shuffle(axioms)
    if world.constructs is not None:  # issue 41's axioms, at a place of the world's own stream
        for name in ISSUE41_AXIOMS:
            axioms.insert(world.aux41.randrange(len(axioms) + 1), name)
    if world.tril_active:  # the causal mask's axioms (the tril lemmas only), at places of the tril stream
        for name in ISSUE42_AXIOMS:
            axioms.insert(world.tril.randrange(len(axioms) + 1), name)
    if world.kron_active:  # the Kronecker product's axioms (the kron lemmas only), at places of the kron stream
        for name in KRON_AXIOMS:
            axioms.insert(world.kron.randrange(len(axioms) + 1), name)
    tries = [rng.choice(equations) for _ in range(3)] if equations and rng.random() < 0.45 else []
    if any(isinstance(x.args[0], BlockMatrix) for x in current.atoms(Inverse)) and rng.random() < 0.5:
        first = ["block_inverse_schur", "block_inverse_schur_mirror", "block_inverse_diagonal"]
        rng.shuffle(first)  # each of the three first in turn (the mirror too)
        tries = first + tries  # issue 29: else rarely drawn first
    if "blocks" in world.focus and rng.random() < 0.7:  # rules that other axioms pre-empt when drawn in turn
        first = ["block_add", "block_identity", "block_zero", "scalar_matrix", "transpose_inverse"]
        rng.shuffle(first)
        tries = first + tries
    for name in tries + axioms:
        try:
            inst = instances(name, ctx.rules.get(name), terms, world)
            rule = AXIOMS[name] if name in AXIOMS else rule_for(name, inst, ctx)
            results = [r for _, r in islice(rewrites(current, rule, ctx), 24) if r != current]
        except Exception:  # noqa: BLE001 - the generator proposes; anything a rule cannot do is skipped
            continue
        rng.shuffle(results)
        for result in results[:4]:
            try:
                after = defined_canon(result, ctx)
            except TermError:
                continue
            if _size(after) <= (5 if "schur" in name else 3) * MAX_OPS:  # a Schur form is large by nature
                return Step(after, name, tuple(inst))
    return None


def seeded_start(ctx: Context, terms: Terms, world: World):
    """One side of a random equation rule (instantiated), sometimes inside a product or a sum: a start from
    which that rule applies."""
    rng = terms.rng
    names = [k for k in _rule_names(ctx, world) if ":" in k and k not in getattr(ctx, "scalar_equations", {})]
    rng.shuffle(names)
    cited = [k for k in names if k.startswith("thm:")]
    if cited and rng.random() < (0.9 if SCALAR_INSTANCE in world.focus else 0.5):  # a chain that uses the cited theorem
        names = cited + names
    for name in names[:6]:
        try:
            inst = instances(name, ctx.rules.get(name), terms, world)
            rule = rule_for(name, inst, ctx)
        except Exception:  # noqa: BLE001 - the generator proposes; anything a rule cannot do is skipped
            continue
        side = rng.choice((rule.lhs, rule.rhs))
        r, c = side.shape
        if rng.random() < 0.3:
            if rng.random() < 0.5:
                side = mul(terms.term(rng.choice((r, p, 1)), r, 1), side)
            else:
                side = add(side, terms.term(r, c, 1))
        if terms.defined(side):
            return canon(side), name, tuple(inst), rule
    return None


def walk(start, length: int, ctx: Context, terms: Terms, world: World) -> list[Step]:
    current, steps = start, []
    for _ in range(length * 3):
        if len(steps) >= length:
            break
        step = step_forward(current, ctx, terms, world)
        if step is not None and all(step.expr != earlier.expr for earlier in steps) and step.expr != start:
            steps.append(step)
            current = step.expr
    return steps


def random_chain(name: str, ctx: Context, terms: Terms, world: World, length: int) -> Chain | None:
    rng = terms.rng
    if world.constructs is not None and world.aux41.random() < _construct_rate(world, 0.3):
        start = _construct_start(terms, world)  # issue 41: the ones vector, diag(v), c·M, scalar facts
        steps = walk(start, length, ctx, terms, world) if start is not None else []
        if steps:
            return Chain(name, start, steps[-1].expr, tuple(steps))
    seeded = seeded_start(ctx, terms, world) if rng.random() < (0.3 if "schur" in world.focus else 0.55) else None
    first = []
    special = terms._issue29_candidates() if seeded is None else []
    cover = [m for k in (p, n) for m in terms.coverage_candidates(k) if terms.defined(inv(m))] \
        if seeded is None and world.focus & {"psd_congruence", "one_sided"} else []
    if cover and rng.random() < 0.6:  # a start with the inverse of a matrix of a focused judgment
        m = rng.choice(cover)
        start = canon(rng.choice((inv(m), mul(inv(m), terms.term(m.shape[0], 1, 1)))))
    elif special and rng.random() < 0.5:  # the inverse of a matrix only issue 29's judgments show invertible
        m = rng.choice(special)
        start = canon(rng.choice((mul(inv(m), m), mul(inv(m), terms.term(p, 1, 1)), add(inv(m), terms.term(p, p, 1)))))
    elif seeded is None:
        r, c = rng.choice(((p, p), (p, p), (p, 1), (n, p), (1, 1), (p + 1, p + 1), (n, n)))
        if "schur" in world.focus and rng.random() < 0.5:
            r, c = p + 1, p + 1
        if "one_sided" in world.focus and rng.random() < 0.5:
            r, c = n, n
        if "blocks" in world.focus and rng.random() < 0.6:
            r, c = p + 1, rng.choice((p + 1, 1))
        start = canon(terms.term(r, c, 2))
    else:  # the first step applies the rule the start was made for, with its instance
        start, rule_name, inst, rule = seeded
        try:
            results = [r for _, r in islice(rewrites(start, rule, ctx), 12) if r != start]
            after = defined_canon(rng.choice(results), ctx) if results else None
        except Exception:  # noqa: BLE001 - a proposal the kernel cannot take is dropped
            after = None
        if after is not None:
            first = [Step(after, rule_name, inst)]
    steps = first + walk(first[-1].expr if first else start, length - len(first), ctx, terms, world)
    if not steps:
        return None
    if rng.random() < 0.3:  # read the chain backwards: every step is then the rule read the other way
        exprs = [start] + [x.expr for x in steps]
        back = [Step(exprs[i - 1], steps[i - 1].rule, steps[i - 1].instance) for i in range(len(steps), 0, -1)]
        return Chain(name, exprs[-1], start, tuple(back))
    return Chain(name, start, steps[-1].expr, tuple(steps))


# --- families and induction ---------------------------------------------------------------------------


def _recurrence_pair(world: World, ctx: Context, name_f: str, name_g: str):
    """Families F and G with F[0] = b, F[s+1] = g(F[s], s) and G[0] = b', G[s+1] = g'(G[s], s), where b' and g'
    are random rewritings of b and g; returns (F, G, base walk, step walk, placeholder)."""
    rng = world.rng
    L = MatrixSymbol("L_", p, p)
    x = world.family("x")
    extras = [L]
    if x is not None:
        extras += [mul(family_member(x, s + 1), transpose(family_member(x, s))),
                   mul(family_member(x, s), transpose(family_member(x, s)))]
    terms = Terms(world, ctx, index_symbols=(s,))
    definitions = [d.symbol for d in world.definitions if d.symbol.shape == (p, p)]
    pieces = [rng.choice(extras[1:] or [terms.term(p, p, 1)])]
    if definitions and world.chance(0.3, "circular_definition"):
        pieces.append(rng.choice(definitions))
    other = terms.term(p, p, 1)
    form = rng.randrange(4)
    if form == 0:
        g = add(mul(other, L), *pieces)
    elif form == 1:
        g = add(L, mul(terms.coefficient(), pieces[0]), *pieces[1:])
    elif form == 2:
        g = add(mul(L, other), *pieces)
    else:
        g = add(mul(terms.coefficient(), L), *pieces)
    if not terms.defined(g):
        raise Skip("step not defined")
    g = canon(g)
    g_walk = walk(g, rng.randint(1, 3), ctx, Terms(world, ctx, index_symbols=(s,)), world)
    b = canon(terms.term(p, p, 1)) if rng.random() < 0.7 else ZeroMatrix(p, p)
    b_walk = walk(b, rng.randint(0, 2), ctx, Terms(world, ctx, index_symbols=()), world)
    g_end = g_walk[-1].expr if g_walk else g
    b_end = b_walk[-1].expr if b_walk else b
    F = Family(name_f, s, p, p, b, g.xreplace({L: FamilyMatrix(name_f, s, p, p)}))
    G = Family(name_g, s, p, p, b_end, g_end.xreplace({L: FamilyMatrix(name_g, s, p, p)}))
    return F, G, b_walk, g_walk, L


def induction_lemma(world: World, F: Family, G: Family, b_walk, g_walk, L, ctx: Context) -> Induction:
    Ft, Gt = family_member(F, t), family_member(G, t)
    base = [Step(F.base, f"base:{F.name}"), *b_walk, Step(family_member(G, 0), f"base:{G.name}")]
    if not b_walk and canon(F.base) == canon(G.base):
        base = [Step(F.base, f"base:{F.name}"), Step(family_member(G, 0), f"base:{G.name}")]
    at_t = {s: t}
    first = canon(F.step.xreplace({FamilyMatrix(F.name, s, p, p): Ft}).xreplace(at_t))
    steps = [Step(first, f"step:{F.name}", ((s, t),))]
    ih = equation_rule(Ft, Gt)
    current = first
    for _ in range(6):
        if not current.has(Ft):
            break
        nxt = next((r for _, r in rewrites(current, ih, ctx) if r.count(Ft) < current.count(Ft)), None)
        if nxt is None:
            raise Skip("IH does not apply")
        steps.append(Step(nxt, "hyp:IH"))
        current = nxt
    for step in g_walk:
        expr = canon(step.expr.xreplace({L: Gt}).xreplace(at_t))
        inst = tuple((v, val.xreplace({L: Gt}).xreplace(at_t) if isinstance(val, Basic) else val)
                     for v, val in step.instance)
        steps.append(Step(expr, step.rule, inst))
    steps.append(Step(family_member(G, t + 1), f"step:{G.name}", ((s, t),)))
    return Induction(f"ind_{F.name}", t, Ft, Gt, tuple(base), tuple(steps))


# --- whole proofs -------------------------------------------------------------------------------------


@dataclasses.dataclass
class Generated:
    proof: Proof
    world: World


def _skeleton(world: World, name: str) -> Proof:
    return Proof(name, "fuzz", "fuzz", tuple(world.hypotheses), tuple(world.definitions), (),
                 Chain("main", Identity(1), Identity(1), ()), tuple(world.cites), tuple(world.families))


def _context(world: World, name: str) -> Context:
    try:
        return theorem_context(_skeleton(world, name))
    except ProofError as exc:
        raise Skip(f"statement: {exc}") from None


def _matrix_nu_values(A, B, v, sc) -> tuple:
    """Right sides r of a cited theorem's scalar hypothesis nu = r that read its matrix symbols (issue 40): A (p×p,
    positive definite), B (invertible), v (p×1) and a 1×1 sc.  tr(vᵀv) + 1 is positive (the kernel then takes
    nu ≠ 0); the others may be 0, and nu is not assumed non-zero for them."""
    return (Trace(mul(transpose(v), v)) + 1, Trace(mul(transpose(v), A, v)), Trace(sc), lam * Trace(sc) + mu,
            Trace(mul(transpose(v), B, v)) - mu, Trace(mul(transpose(v), v)) * Trace(sc))


def _cited_theorem(rng: random.Random, name: str, focus: frozenset = frozenset()):
    """A small checked theorem with predicate hypotheses, for ``thm:`` citations; sometimes with a scalar
    hypothesis nu = r, whose r sometimes reads the theorem's matrices (issue 40), and then usually a claim
    nu·T = r·T (one ``hyp:nu_def`` step, then a walk): an instance that changes r's matrices changes the claim."""
    w = World(rng, frozenset())
    A = w.symbol("A", p, p, "pd")
    B = w.symbol("B", p, p, "inv")
    w.hypotheses += [Hypothesis("A_pd", Q.positive_definite(A), S.true), Hypothesis("B_inv", Q.invertible(B), S.true)]
    v = MatrixSymbol("v", p, 1)
    value = None
    roll = rng.random()  # (one draw for both choices: an unfocused proof without r's matrices is what it was)
    if roll < (1.0 if SCALAR_INSTANCE in focus else 0.4):  # a scalar hypothesis nu = r (issue 29)
        if (rng.random() < 0.9) if SCALAR_INSTANCE in focus else roll >= 0.2:  # r reads the theorem's matrices (40)
            sc = MatrixSymbol("sc", 1, 1)
            value = rng.choice(_matrix_nu_values(A, B, v, sc))
            if value.has(sc):
                w.symbol("sc", 1, 1, "free")
        else:
            value = rng.choice(NU_VALUES)
        w.hypotheses.append(Hypothesis("nu_def", nu, value))
    w.symbol("v", p, 1, "free")
    ctx = _context(w, name)
    terms = Terms(w, ctx)
    through = value is not None and value.atoms(MatrixSymbol) and \
        rng.random() < (0.9 if SCALAR_INSTANCE in focus else 0.6)
    for _ in range(4):
        chain = _through_scalar_hypothesis(ctx, terms, w) if through else None
        chain = chain or random_chain("main", ctx, terms, w, rng.randint(1, 3))
        if chain is None:
            continue
        try:
            return check(Proof(name, "cited", "cited", tuple(w.hypotheses), (), (), chain))
        except ProofError:
            continue
    return None


def _through_scalar_hypothesis(ctx: Context, terms: Terms, world: World) -> Chain | None:
    """nu·T = r·T' (issue 40): nu·T rewritten by ``hyp:nu_def`` to r·T, then a short walk (sometimes read
    backwards), so that the claim reads r's matrices."""
    rng = terms.rng
    try:
        rule = rule_for("hyp:nu_def", (), ctx)
        shape = rng.choice(((p, p), (p, 1), (1, 1), (p, p)))
        factor = next((x for x in (terms.term(*shape, 1) for _ in range(4)) if not x.atoms(ZeroMatrix)), None)
        if factor is None:  # nu·0 = r·0 says nothing
            return None
        start = canon(mul(nu, factor))
        results = [r for _, r in islice(rewrites(start, rule, ctx), 6) if r != start]
        after = defined_canon(rng.choice(results), ctx) if results else None
    except Exception:  # noqa: BLE001 - the generator proposes; what the kernel cannot take is dropped
        return None
    if after is None or after == start:
        return None
    steps = [Step(after, "hyp:nu_def")]
    steps += walk(after, rng.randint(0, 2), ctx, terms, world)
    if rng.random() < 0.3:
        exprs = [start] + [x.expr for x in steps]
        back = [Step(exprs[i - 1], steps[i - 1].rule, steps[i - 1].instance) for i in range(len(steps), 0, -1)]
        return Chain("main", exprs[-1], start, tuple(back))
    return Chain("main", start, steps[-1].expr, tuple(steps))


def _share_scalar_hypothesis(world: World, cited, name: str = "fuzz") -> None:
    """Usually the citing world assumes the cited theorem's nu = r too (then ``thm:`` may be used); sometimes it
    does not, or assumes another r, and every citation must be refused (the oracle samples nu freely then).

    Where r reads the cited theorem's matrices (issue 40), the citing world assumes r as it is (a citation must
    then leave r's matrices as they are), or r at an instance of its own, nu = r[instance] (:attr:`World.pinned`:
    the citations of the theorem mostly use that instance and are accepted; others must be refused), or neither."""
    theirs = next((h for h in cited.proof.hypotheses if h.name == "nu_def"), None)
    if theirs is None or _nu_value(world) is not None:
        return
    if not theirs.rhs.atoms(MatrixSymbol):
        if world.chance(0.7):
            world.hypotheses.append(Hypothesis("nu_def", nu, theirs.rhs))
        return
    roll = world.rng.random()
    if roll < 0.45:
        world.hypotheses.append(Hypothesis("nu_def", nu, theirs.rhs))
    elif roll < (0.95 if SCALAR_INSTANCE in world.focus else 0.85):
        _pin(world, cited, theirs.rhs, name)


def _pin(world: World, cited, value: Basic, name: str) -> None:
    """The citing world assumes nu = r[instance] for an instance of r's matrix symbols by terms of this world
    (no family member, definition or index symbol: the hypothesis speaks about the world's own symbols only)."""
    try:
        terms = Terms(world, _context(world, name), index_symbols=())
    except Skip:
        return
    preds = _predicates(cited.proof)
    pinned = {}
    for sym in sorted(value.atoms(MatrixSymbol), key=lambda m: m.name):
        for _ in range(6):
            term = _instance_for(sym, preds.get(sym, set()), terms, world)
            if term is not None and term != sym and not term.atoms(FamilyMatrix, ZeroMatrix) and not term.has(nu) \
                    and not any(index_kind(x) == "index" for x in term.free_symbols if isinstance(x, Symbol)):
                pinned[sym] = term
                break
    if not pinned:
        return
    try:
        instantiated = value.xreplace({tr: Trace(canon(tr.args[0].xreplace(pinned))) for tr in value.atoms(Trace)})
    except BUILD_ERRORS:
        return
    world.hypotheses.append(Hypothesis("nu_def", nu, instantiated))
    try:
        _context(world, name)
    except Skip:  # the kernel does not take this r[instance] (a coefficient too large, say): assume neither
        world.hypotheses.pop()
        return
    world.pinned[cited.id] = pinned


def generate(rng: random.Random, name: str = "fuzz", focus: frozenset = frozenset()) -> Generated:
    """A random proof (raises :class:`Skip` when this attempt built nothing usable).

    Without a ``focus``, one proof in four is focused on one of :data:`COVERAGE_TARGETS` (the constructs of a
    rarely reached rule or judgment), so that a default run of a few dozen proofs reaches every rule and judgment
    of the kernel (``derive.fuzz.coverage``)."""
    if not focus and rng.random() < COVERAGE_RATE:
        focus = frozenset({rng.choice(COVERAGE_TARGETS)})
    world = build_world(rng, focus)
    if world.chance(0.3, SCALAR_INSTANCE):
        cited = _cited_theorem(rng, f"{name}_cited", world.focus)
        if cited is not None:
            world.cites.append(cited)
            _share_scalar_hypothesis(world, cited, name)
    # definitions
    if world.chance(0.45, "circular_definition"):
        ctx = _context(world, name)
        world.definitions.append(Definition("D_def", MatrixSymbol("D", p, p),  # no index: induction stays possible
                                            Terms(world, ctx, index_symbols=()).term(p, p, 2)))
    if world.chance(0.2):
        ctx = _context(world, name)
        world.definitions.append(Definition("d_def", MatrixSymbol("d", p, 1),
                                            Terms(world, ctx, index_symbols=()).term(p, 1, 2)))
    # recurrences: a pair of families for an induction lemma
    induction_parts = None
    if world.chance(0.4, "recurrence_index") or "circular_definition" in world.focus:
        ctx = _context(world, name)
        try:
            F, G, b_walk, g_walk, L = _recurrence_pair(world, ctx, "F", "G")
            world.families += [F, G]
            induction_parts = (F, G, b_walk, g_walk, L)
        except (Skip, TermError, ProofError):
            induction_parts = None
    # a definition through a family defined by a recurrence that uses it: a cycle
    if induction_parts and world.definitions and world.definitions[0].symbol.name == "D" and \
            induction_parts[0].step.has(world.definitions[0].symbol) and world.chance(0.15, "circular_definition"):
        d = world.definitions[0]
        index = world.rng.choice((Integer(1), Integer(2)))
        world.definitions[0] = Definition(d.name, d.symbol, family_member(induction_parts[0], index))
    ctx = _context(world, name)
    lemmas: list = []
    lemma_rules: dict = {}
    if induction_parts:
        try:
            lemma = induction_lemma(world, *induction_parts, ctx)
            lemmas.append(lemma)
            lemma_rules[f"lemma:{lemma.name}"] = lemma_rule(lemma)
        except (Skip, TermError, ProofError, StopIteration):
            pass
        # a recurrence that mentions another index symbol (x[t + 1] where x[s + 1] stood): the induction step
        # at s = t reads the same, but F is now another sequence for every t
        if lemmas and world.chance(0.08, "recurrence_index"):
            foreign = _foreign_index(induction_parts[0], rng, t)
            if foreign is not None:
                world.families[world.families.index(induction_parts[0])] = foreign
                ctx = _context(world, name)
    for k in range(rng.choice((0, 0, 1, 2))):
        inner = chain_context(ctx, Chain(f"lemma{k}", Identity(1), Identity(1), ()), lemma_rules, _fail)
        chain = random_chain(f"lemma{k}", inner, Terms(world, inner), world, rng.randint(1, 4))
        if chain is not None:
            lemmas.append(chain)
            lemma_rules[f"lemma:{chain.name}"] = lemma_rule(chain)
    inner = chain_context(ctx, Chain("main", Identity(1), Identity(1), ()), lemma_rules, _fail)
    main = random_chain("main", inner, Terms(world, inner), world, rng.randint(1, 6))
    if main is None:
        if not lemmas:
            raise Skip("no chain")
        first = lemmas[0]
        main = Chain("main", first.lhs, first.rhs, (Step(first.rhs, f"lemma:{first.name}"),))
    seed_rules = dict(lemma_rules)  # the lemmas a kron lemma may cite: not the tril ones
    if world.tril is not None:  # last, from the world's tril stream: the chains above are the seed's
        lemmas += _tril_lemmas(world, ctx, lemma_rules)
    if world.kron is not None:  # then from the world's kron stream: the chains above are as they were without it
        lemmas += _kron_lemmas(world, ctx, seed_rules)
    proof = Proof(name, "fuzz", "A random proof of the soundness fuzzer", tuple(world.hypotheses),
                  tuple(world.definitions), tuple(lemmas), main, tuple(world.cites), tuple(world.families))
    return Generated(proof, world)


# --- mutations ----------------------------------------------------------------------------------------


def _chains(proof: Proof):
    return [*proof.lemmas, proof.claim]


def _with_chain(proof: Proof, index: int, chain) -> Proof:
    chains = _chains(proof)
    chains[index] = chain
    return dataclasses.replace(proof, lemmas=tuple(chains[:-1]), claim=chains[-1])


def _step_slots(proof: Proof) -> list[tuple[int, str, int]]:
    out = []
    for ci, c in enumerate(_chains(proof)):
        if isinstance(c, Induction):
            out += [(ci, "base", k) for k in range(len(c.base))] + [(ci, "step", k) for k in range(len(c.step))]
        else:
            out += [(ci, "steps", k) for k in range(len(c.steps))]
    return out


def _get_step(proof, slot) -> Step:
    ci, part, k = slot
    return getattr(_chains(proof)[ci], part)[k]


def _set_step(proof, slot, step: Step | None) -> Proof:
    ci, part, k = slot
    chain = _chains(proof)[ci]
    items = list(getattr(chain, part))
    if step is None:
        del items[k]
    else:
        items[k] = step
    return _with_chain(proof, ci, dataclasses.replace(chain, **{part: tuple(items)}))


def perturb(term: Basic, rng: random.Random, world: World) -> Basic | None:
    """``term`` with one random sub-term changed (a transpose, a factor order, a coefficient, an exponent, an
    identity's or a zero block's size, a family index, a symbol of the same shape)."""
    where = list(paths(term))
    for _ in range(8):
        path, sub = rng.choice(where)
        new = None
        kind = rng.randrange(8)
        if kind == 0:
            new = sub.args[0] if isinstance(sub, Transpose) else Transpose(sub)
        elif kind == 1 and isinstance(sub, MatMul):
            coeff = sub.args[0] if not isinstance(sub.args[0], sympy.matrices.MatrixExpr) else S.One
            mats = [a for a in sub.args if isinstance(a, sympy.matrices.MatrixExpr)]
            if len(mats) >= 2:
                i = rng.randrange(len(mats) - 1)
                mats[i], mats[i + 1] = mats[i + 1], mats[i]
                new = MatMul(*([coeff] if coeff != 1 else []), *mats)
        elif kind == 2 and isinstance(sub, MatMul) and _index_powers_of(sub) and rng.random() < 0.5:
            new = _shifted_index_power(sub, rng)  # issue 41: γ^e → γ^(e ± 1), γ^(−e), or another index symbol
        elif kind == 2:
            new = mul(rng.choice((2, -1, lam, Rational(1, 2))), sub)
        elif kind == 3 and isinstance(sub, (MatPow, Inverse)):
            q = sub.args[1] if isinstance(sub, MatPow) else Integer(-1)
            new = power(sub.args[0], q + rng.choice((1, -1, Rational(1, 2)))) if not isinstance(sub, Inverse) \
                else MatPow(sub.args[0], Integer(-2))
        elif kind == 4 and isinstance(sub, (Identity, ZeroMatrix)):
            r = sub.shape[0]
            bigger = r + 1 if rng.random() < 0.5 else (1 if r != 1 else p)
            new = Identity(bigger) if isinstance(sub, Identity) else ZeroMatrix(bigger, sub.shape[1])
        elif kind == 5:
            members = sorted(sub.atoms(FamilyMatrix), key=str)  # sorted: sets follow the hash seed
            if members:
                m = rng.choice(members)
                shifted = FamilyMatrix(m.name, m.index + 1, *m.shape)
                new = sub.xreplace({m: shifted})
        elif kind == 6:
            same = [m for m in world.symbols.values() if m.shape == sub.shape and m != sub]
            if same and isinstance(sub, MatrixSymbol):
                new = rng.choice(same)
        elif kind == 7 and isinstance(sub, BlockMatrix):
            blocks = [[b for b in row] for row in sub.blocks.tolist()]
            i, j = rng.randrange(len(blocks)), rng.randrange(len(blocks[0]))
            b = blocks[i][j]
            blocks[i][j] = Identity(b.shape[0] + 1) if isinstance(b, Identity) else \
                ZeroMatrix(b.shape[0], b.shape[1] + 1)
            new = BlockMatrix(sympy.ImmutableMatrix(blocks))
        if new is not None:
            try:
                return replace_at(term, path, new)
            except BUILD_ERRORS:
                continue
    return None


def _index_powers_of(term: MatMul) -> list:
    """The index powers γ^(k·t + c) of a product's coefficient, in a fixed order."""
    coeff = factors_of(term)[0]
    return sorted((node for node in sympy.preorder_traversal(coeff) if isinstance(node, sympy.Pow) and
                   not isinstance(node.exp, Rational)), key=sympy.default_sort_key)


def _shifted_index_power(term: MatMul, rng: random.Random):
    """``term`` with one index power of its coefficient changed: γ^(e + 1), γ^(e − 1), γ^(−e), or e's index symbol
    replaced by another one."""
    power = rng.choice(_index_powers_of(term))
    base, e = power.args
    symbol = sorted(e.free_symbols, key=str)[0]
    new_e = rng.choice((e + 1, e - 1, -e, e.xreplace({symbol: rng.choice([x for x in (t, s, u) if x != symbol])})))
    coeff, mats = factors_of(term)
    return mul(coeff.xreplace({power: sympy.Pow(base, new_e)}), mats)


def _foreign_index(f: Family, rng, other=None) -> Family | None:
    """The recurrence with a member of another family indexed by another index symbol (the induction variable):
    x[s + 1] becomes x[t + 1]."""
    members = [m for m in sorted(f.step.atoms(FamilyMatrix), key=str)
               if m.name != f.name and f.index in m.index.free_symbols]
    if not members:
        return None
    other = other if other is not None else rng.choice((t, u))
    return dataclasses.replace(f, step=f.step.xreplace({m: FamilyMatrix(m.name, m.index.xreplace({f.index: other}),
                                                                         *m.shape) for m in members}))


def _mutate_tril(proof: Proof, rng: random.Random) -> tuple[Proof, str] | None:
    """A step's expression with one tril changed (issues 41, 42): its offset flipped (tril(A) ↔ tril(A, -1)), the
    mask dropped (tril(A) → A), or its argument transposed."""
    slots = [slot for slot in _step_slots(proof) if _get_step(proof, slot).expr.atoms(Tril)]
    if not slots:
        return None
    slot = rng.choice(slots)
    step = _get_step(proof, slot)
    node = rng.choice(sorted(step.expr.atoms(Tril), key=sympy.default_sort_key))
    how = rng.choice(("offset", "offset", "drop", "transpose"))
    new = {"offset": lambda: Tril(node.args[0], -1 if node.args[1] == 0 else 0), "drop": lambda: node.args[0],
           "transpose": lambda: Tril(transpose(node.args[0]), node.args[1])}[how]()
    try:
        expr = step.expr.xreplace({node: new})
    except BUILD_ERRORS:
        return None
    return _set_step(proof, slot, dataclasses.replace(step, expr=expr)), f"step {slot}: tril {how}"


MUTATIONS = ("rule", "expr", "instance", "drop_hypothesis", "definition", "recurrence", "exponent", "claim",
             "drop_step", "cycle", "scalar")


def _mutate_scalar(proof: Proof, world: World, rng: random.Random, slots) -> tuple[Proof, str] | None:
    """The scalar hypothesis nu = r with another r (the steps that used it must now fail), or a step that cites
    transpose_scalar given the transpose of a sub-term that is not 1×1."""
    k = next((i for i, h in enumerate(proof.hypotheses) if h.name == "nu_def"), None)
    if k is not None and rng.random() < 0.6:
        h = proof.hypotheses[k]
        theirs = [c.rhs for th in proof.cites for c in th.proof.hypotheses if c.name == "nu_def" and
                  c.rhs.atoms(MatrixSymbol)]  # issue 40: r as the cited theorem has it, not at the pinned instance
        new = rng.choice([v for v in (*NU_VALUES, h.rhs + 1, -h.rhs, *theirs) if v != h.rhs])
        hyps = list(proof.hypotheses)
        hyps[k] = Hypothesis(h.name, h.lhs, new)
        return dataclasses.replace(proof, hypotheses=tuple(hyps)), f"scalar hypothesis nu = {h.rhs} -> {new}"
    if not slots:
        return None
    slot = rng.choice(slots)
    step = _get_step(proof, slot)
    larger = [(path, sub) for path, sub in paths(step.expr) if sub.shape != (1, 1)]
    if not larger:
        return None
    path, sub = rng.choice(larger)
    try:
        new = replace_at(step.expr, path, transpose(sub))
    except BUILD_ERRORS:
        return None
    return _set_step(proof, slot, Step(new, "transpose_scalar")), f"step {slot}: transpose_scalar on a larger term"


def mutate(proof: Proof, world: World, rng: random.Random) -> tuple[Proof, str] | None:
    """One random mutation of ``proof``: (mutant, description), or None if the chosen one does not apply."""
    if world.tril is not None and world.tril.random() < 0.2:  # the causal mask (a tril world's own stream)
        mutated = _mutate_tril(proof, world.tril)
        if mutated is not None:
            return mutated
    kind = rng.choice(MUTATIONS)
    slots = _step_slots(proof)
    if kind == "rule" and slots:
        slot = rng.choice(slots)
        step = _get_step(proof, slot)
        rules = _axiom_names(None) + [f"hyp:{h.name}" for h in proof.hypotheses]
        rules += [f"def:{d.name}" for d in proof.definitions]
        new = rng.choice([r for r in rules if r != step.rule])
        if world.constructs is not None and world.aux41.random() < 0.1:  # issue 41's axioms, on the world's stream
            new = world.aux41.choice([r for r in ISSUE41_AXIOMS if r != step.rule] or [new])
        if world.tril is not None and world.tril.random() < 0.15:  # the causal mask's axioms, on the tril stream
            new = world.tril.choice([r for r in ISSUE42_AXIOMS if r != step.rule])
        if world.kron is not None and world.kron.random() < 0.15:  # the Kronecker axioms, on the kron stream
            new = world.kron.choice([r for r in KRON_AXIOMS if r != step.rule])
        return _set_step(proof, slot, dataclasses.replace(step, rule=new, instance=())), f"rule {step.rule} -> {new}"
    if kind == "expr" and slots:
        slot = rng.choice(slots)
        step = _get_step(proof, slot)
        new = perturb(step.expr, rng, world)
        if new is None:
            return None
        return _set_step(proof, slot, dataclasses.replace(step, expr=new)), f"step {slot} expression perturbed"
    if kind == "instance":
        with_instance = [slot for slot in slots if _get_step(proof, slot).instance]
        if not with_instance:
            return None
        slot = rng.choice(with_instance)
        step = _get_step(proof, slot)
        inst = list(step.instance)
        i = rng.randrange(len(inst))
        var, value = inst[i]
        if isinstance(var, Symbol):
            new_value = value + 1 if rng.random() < 0.5 else rng.choice((t, Integer(0), Integer(1), p, n))
        else:
            new_value = perturb(value, rng, world) if rng.random() < 0.5 else \
                MatMul(Identity(value.shape[0]), Identity(value.shape[1])) if 1 in value.shape else None
        if new_value is None:
            return None
        inst[i] = (var, new_value)
        if len(inst) > 1 and rng.random() < 0.3:
            inst[0], inst[-1] = (inst[0][0], inst[-1][1]), (inst[-1][0], inst[0][1])
        return _set_step(proof, slot, dataclasses.replace(step, instance=tuple(inst))), f"instance {slot} changed"
    if kind == "drop_hypothesis" and proof.hypotheses:
        k = rng.randrange(len(proof.hypotheses))
        dropped = proof.hypotheses[k].name
        return (dataclasses.replace(proof, hypotheses=proof.hypotheses[:k] + proof.hypotheses[k + 1:]),
                f"hypothesis {dropped} dropped")
    if kind == "definition" and proof.definitions:
        k = rng.randrange(len(proof.definitions))
        d = proof.definitions[k]
        new = perturb(d.rhs, rng, world)
        if new is None:
            return None
        defs = list(proof.definitions)
        defs[k] = dataclasses.replace(d, rhs=new)
        return dataclasses.replace(proof, definitions=tuple(defs)), f"definition {d.name} changed"
    if kind == "recurrence":
        defined = [i for i, f in enumerate(proof.families) if f.is_defined]
        if not defined:
            return None
        i = rng.choice(defined)
        f = proof.families[i]
        how = rng.randrange(3)
        if how == 0:
            new_f = _foreign_index(f, rng)
            what = "a member indexed by another index symbol"
        elif how == 1:
            step = perturb(f.step, rng, world)
            new_f = dataclasses.replace(f, step=step) if step is not None else None
            what = "step perturbed"
        else:
            base = perturb(f.base, rng, world)
            new_f = dataclasses.replace(f, base=base) if base is not None else None
            what = "base perturbed"
        if new_f is None:
            return None
        families = list(proof.families)
        families[i] = new_f
        return dataclasses.replace(proof, families=tuple(families)), f"recurrence {f.name}: {what}"
    if kind == "exponent":
        powers = [(slot, node) for slot in slots for node in sorted(_get_step(proof, slot).expr.atoms(MatPow), key=str)]
        if not powers:
            return None
        slot, node = rng.choice(powers)
        step = _get_step(proof, slot)
        q = node.args[1]
        new = step.expr.xreplace({node: power(node.args[0], q + rng.choice((1, -1)))})
        return _set_step(proof, slot, dataclasses.replace(step, expr=new)), "exponent changed"
    if kind == "claim":
        new = perturb(proof.claim.rhs, rng, world)
        if new is None:
            return None
        return dataclasses.replace(proof, claim=dataclasses.replace(proof.claim, rhs=new)), "claim changed"
    if kind == "drop_step" and slots:
        slot = rng.choice(slots)
        return _set_step(proof, slot, None), f"step {slot} dropped"
    if kind == "scalar":  # issue 29: the scalar hypothesis changed, or a 1×1 transpose put on a larger term
        return _mutate_scalar(proof, world, rng, slots)
    if kind == "cycle" and proof.definitions:
        users = [f for f in proof.families if f.is_defined and
                 any(f.step.has(d.symbol) or f.base.has(d.symbol) for d in proof.definitions)]
        if not users:
            return None
        f = rng.choice(users)
        k = next(i for i, d in enumerate(proof.definitions) if f.step.has(d.symbol) or f.base.has(d.symbol))
        d = proof.definitions[k]
        if d.symbol.shape != (f.rows, f.cols):
            return None
        defs = list(proof.definitions)
        defs[k] = dataclasses.replace(d, rhs=family_member(f, rng.choice((Integer(1), Integer(2)))))
        return dataclasses.replace(proof, definitions=tuple(defs)), f"definition {d.name} through {f.name}"
    return None
