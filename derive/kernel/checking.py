"""The trusted kernel: checks equational proofs about matrix expressions.

A proof is a chain ``claim.lhs = e1 = e2 = ... = claim.rhs``.  Each step names one rule,
and the kernel checks that the rule, applied at exactly one position of the previous
expression (a sub-term, or a run of adjacent factors of a product), gives the next one,
in either direction.  Rules are the matrix-algebra axioms in :data:`AXIOMS`, the
hypotheses (``hyp:NAME``), the definitions (``def:NAME``), lemmas proved earlier in the
same proof (``lemma:NAME``) and the main claims of checked theorems the proof cites (``thm:ID``,
instantiated, once their instantiated hypotheses hold in the citing chain).  Every
expression of every chain must be *defined*: shapes conform, and every inverse or
non-integer power is of a matrix the kernel can show invertible or positive definite
from the hypotheses.  Only :func:`check` makes a
:class:`Theorem`.

Semantics: a theorem says that for all values of its symbols (real matrices of any sizes
the dimension symbols allow) that satisfy the hypotheses and definitions, both sides of
the claim are defined and equal.  Definitions introduce fresh symbols only, so they never
constrain the others.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from sympy import Basic, PolynomialError, Symbol, preorder_traversal, srepr
from sympy.logic.boolalg import BooleanTrue
from sympy.matrices.expressions import (
    BlockMatrix,
    Inverse,
    MatAdd,
    MatMul,
    MatPow,
    MatrixSymbol,
    Transpose,
)

from .axioms import AXIOMS, Rule, equation_rule, scalar_equation_rule
from .budget import CheckInterrupted, GuardFired, WorkExceeded, charge, default_limit, guarded, metered
from .hints import explained
from .judgments import (
    NONZERO,
    Context,
    OutOfTime,
    _fact_keys,
    _square,
    check_defined,
    defined_canon,
    diagonal,
    invertible,
    nonzero,
    positive_definite,
    require_coefficient_defined,
    symmetric,
)
from .proof import (
    PREDICATES,
    Chain,
    Family,
    Hypothesis,
    Induction,
    Proof,
    ProofError,
    Step,
    Theorem,
    _issue,
    digest,
    is_issued,
)
from .scalars import CoefficientError, canon_coefficient, is_scalar_symbol, require_coefficient
from .terms import (
    CHARGE_EVERY,
    MATRIX_NODES,
    FamilyMatrix,
    TermError,
    add,
    canon,
    children,
    dims_equal,
    factors_of,
    index_kind,
    mul,
    rebuild,
    require_exact_types,
    require_index,
    require_shape_doubling,
    shape,
    shown,
)
from .validation import IDENTIFIER, ValidationError, validated

__all__ = ["chain_context", "check", "lemma_rule", "one_step", "proof_size", "resolve_rule", "rewrites",
           "theorem_context"]

# --- rewriting at one position ------------------------------------------------------


def _window(mats: list, target: Basic | None) -> tuple[int, int]:
    """(last start, first end) a run of ``mats`` may have if rewriting it can give ``target``.

    Rewriting the run ``mats[i:j]`` leaves ``mats[:i]`` and ``mats[j:]`` in place, so ``i`` is at most
    the common prefix of the two factor lists and ``j`` at least the length less the common suffix
    (coefficients aside).  A target that is not a product can only come from the whole product.
    """
    if target is None:
        return len(mats), 0
    if not isinstance(target, MatMul):
        return 0, len(mats)
    other = factors_of(target)[1]
    prefix = next((k for k, (a, b) in enumerate(zip(mats, other, strict=False)) if a != b), min(len(mats), len(other)))
    suffix = next((k for k, (a, b) in enumerate(zip(reversed(mats), reversed(other), strict=False)) if a != b),
                  min(len(mats), len(other)))
    return prefix, len(mats) - suffix


def _child_targets(term: Basic, kids: list, target: Basic | None) -> list[tuple[int, Basic | None]]:
    """The children a rewrite may change to reach ``target``, each with the child it must become (if known).

    Only a necessary condition, so it never hides a rewrite; without a usable target, every child.
    """
    every = [(index, None) for index in range(len(kids))]
    if target is None or type(target) is not type(term):
        return every
    if isinstance(term, MatMul):
        other = factors_of(target)[1]
        last_start, first_end = _window(kids, target)
        same_length = len(other) == len(kids)
        return [(k, other[k] if same_length else None) for k in range(len(kids)) if first_end - 1 <= k <= last_start]
    if isinstance(term, (Transpose, Inverse)) or (isinstance(term, MatPow) and term.args[1] == target.args[1]):
        return [(0, target.args[0])]
    if isinstance(term, BlockMatrix) and term.blockshape == target.blockshape:
        others = children(target)
        differ = [(k, others[k]) for k in range(len(kids)) if kids[k] != others[k]]
        return differ or every
    return every


def _ANY_RUN(mats, i, j) -> bool:
    return True


def rewrites(term: Basic, rule: Rule, ctx: Context, target: Basic | None = None) -> Iterator[tuple[Basic, Basic]]:
    """(rewritten sub-term, whole result) for every one-position application of ``rule``.

    With ``target``, positions whose rewrite cannot give ``target`` are skipped (see :func:`_window`),
    which keeps checking a step near-linear in the size of the terms.
    """
    ctx.tick()
    results = rule(term, ctx, target) if getattr(rule, "targeted", False) else rule(term, ctx)
    for result in results:
        yield term, canon(result)
    runs = getattr(rule, "runs", _ANY_RUN)  # which runs the rule can match (None: no product)
    if isinstance(term, MatMul) and runs is not None:  # runs of adjacent factors
        coeff, mats = factors_of(term)
        last_start, first_end = _window(mats, target)
        for i in range(min(len(mats), last_start + 1)):
            for j in range(max(i + 2, first_end), len(mats) + 1):
                if (j - i == len(mats) and coeff == 1) or not runs(mats, i, j):
                    continue  # the whole product is the node itself; or a run the rule cannot match
                ctx.tick()
                run = mul(mats[i:j])  # the factors of a normal form are in normal form
                for result in rule(run, ctx):
                    yield run, canon(mul(coeff, mats[:i], result, mats[j:]))
    if isinstance(term, MatAdd) and getattr(rule, "sum_sides", ()):
        yield from _sub_sums(term, rule.sum_sides, ctx)
    kids = children(term)
    for index, child_target in _child_targets(term, kids, target):
        for matched, result in rewrites(kids[index], rule, ctx, child_target):
            yield matched, canon(rebuild(term, kids[:index] + [result] + kids[index + 1 :]))


def _sub_sums(term: MatAdd, sides, ctx: Context) -> Iterator[tuple[Basic, Basic]]:
    """An equation a₁ + … + a_r = b applied to those terms inside a bigger sum: a₁ + … + a_r + c = b + c.

    Near-linear: the side's terms are looked up in the sum's terms once, as a multiset.
    """
    ctx.tick()
    have: dict = {}
    for arg in term.args:
        have[arg] = have.get(arg, 0) + 1
    for side, other in sides:
        if len(side.args) >= len(term.args):
            continue  # the whole sum is the node itself, tried as such
        need: dict = {}
        for arg in side.args:
            need[arg] = need.get(arg, 0) + 1
        if all(have.get(arg, 0) >= count for arg, count in need.items()):
            rest = list(term.args)
            for arg in side.args:
                rest.remove(arg)
            yield side, canon(add(rest, other))


def one_step(before: Basic, after: Basic, rule: Rule, ctx: Context) -> bool:
    """``rule`` rewrites ``before`` into ``after`` at one position, in either direction."""
    try:
        if any(r == after for _, r in rewrites(before, rule, ctx, after)):
            return True
        return any(r == before for _, r in rewrites(after, rule, ctx, before))
    except OutOfTime:
        raise
    except TermError:
        return False


# --- checking -----------------------------------------------------------------------


def _symbols_consistent(terms: list[Basic]) -> None:
    """One shape per matrix-symbol name, one set of assumptions per dimension-symbol name (a unit of work a node)."""
    seen: dict[str, Basic] = {}
    for term in terms:
        for node in _walked(term):
            if isinstance(node, (MatrixSymbol, Symbol)):
                key = ("M:" if isinstance(node, MatrixSymbol) else "d:") + str(node.name)
                if seen.setdefault(key, node) != node:
                    raise TermError(f"the name {node.name} is used for two different symbols")


def _walked(term: Basic) -> Iterator[Basic]:
    """Every node of ``term`` (``preorder_traversal``), a unit of work charged for each (:mod:`.budget`)."""
    walked = 0
    for node in preorder_traversal(term):
        walked += 1
        if walked == CHARGE_EVERY:
            charge(walked)
            walked = 0
        yield node
    if walked:
        charge(walked)


def _all_terms(proof: Proof) -> list[Basic]:
    out: list[Basic] = []
    for h in proof.hypotheses:
        out += [h.lhs, h.rhs, *h.forall]
    for d in proof.definitions:
        out += [d.symbol, d.rhs]
    for f in proof.families:
        out += [f.index, f.rows, f.cols] + ([f.base, f.step] if f.is_defined else [])
    for c in (*proof.lemmas, proof.claim):
        out += [c.lhs, c.rhs] + ([c.variable] if isinstance(c, Induction) else [])
        for h in c.hypotheses:
            out += [h.lhs, h.rhs, *h.forall]
        for s in c.steps:
            out.append(s.expr)
            for var, val in s.instance:  # a cited theorem's symbols live in that theorem, not in this proof
                out += [val] if s.rule.startswith("thm:") else [var, val]
    return out


def _add_hypotheses(hypotheses, ctx: Context, fail) -> None:
    """Add every hypothesis to ``ctx``, then check that each is defined against all of them.

    Hypotheses are assumptions, so their order does not matter: "W = (XᵀX)⁻¹" is defined under
    "XᵀX invertible" wherever that hypothesis stands in the list.
    """
    for h in hypotheses:
        if is_scalar_hypothesis(h):
            _add_scalar_hypothesis(h, ctx, fail)
            continue
        if h.is_scalar_fact:
            _add_scalar_fact(h, ctx, fail)
            continue
        if h.is_predicate:
            if h.forall or not isinstance(h.rhs, BooleanTrue):
                fail(f"predicate hypothesis {h.name} must read Q.<predicate>(M) = true")
            name = next((k for k, v in PREDICATES.items() if h.lhs.function == v), None)
            if name is None or len(h.lhs.arguments) != 1:
                fail(f"hypothesis {h.name} uses a predicate the kernel does not know")
            ctx.predicates[name].append(canon(h.lhs.arguments[0]))
        elif not h.forall:
            ctx.equations.append((canon(h.lhs), canon(h.rhs)))
        _register(f"hyp:{h.name}", (canon(h.lhs) if not h.is_predicate else None, h.rhs, h.forall), ctx, fail)
    for h in hypotheses:
        if is_scalar_hypothesis(h) or h.is_scalar_fact:
            _check_scalar_hypothesis(h, ctx, fail)
        elif h.is_predicate:
            subject = _defined(h.lhs.arguments[0], ctx, fail)
            if not _square(subject):
                fail(f"hypothesis {h.name} applies a predicate to a non-square matrix")
        else:
            lhs, rhs = _defined(h.lhs, ctx, fail), _defined(h.rhs, ctx, fail)
            _same_shape(lhs, rhs, fail, f"hypothesis {h.name}")


# --- scalar hypotheses λ = r (issue 29) ---------------------------------------------------------------------


def is_scalar_hypothesis(h: Hypothesis) -> bool:
    """A hypothesis between two scalars: its left side is a scalar symbol λ, its right side a coefficient r."""
    return type(h.lhs) is Symbol


def _add_scalar_hypothesis(h: Hypothesis, ctx: Context, fail) -> None:
    """λ = r: a scalar symbol (derive.scalar) on the left, a coefficient without λ on the right, nothing bound.
    Cited as ``hyp:NAME`` it rewrites λ into r (or back) in one product's coefficient; the sign judgment uses it."""
    if not is_scalar_symbol(h.lhs):
        fail(f"scalar hypothesis {h.name}: its left side {h.lhs} must be a scalar symbol (derive.scalar)")
    if h.forall:
        fail(f"scalar hypothesis {h.name} binds no variables")
    if isinstance(h.rhs, MATRIX_NODES) or not isinstance(h.rhs, Basic):
        fail(f"scalar hypothesis {h.name}: its right side must be a scalar (a coefficient), not a matrix")
    try:
        require_coefficient(h.rhs, require_exact_types)
        value = canon_coefficient(h.rhs, canon)
    except (CoefficientError, TermError, PolynomialError, ValueError, TypeError) as exc:
        fail(f"scalar hypothesis {h.name}: {' '.join(str(exc).split())[:200]}")
    if h.rhs.has(h.lhs) or value.has(h.lhs):
        fail(f"scalar hypothesis {h.name}: {h.lhs} occurs on both sides")
    _register(f"hyp:{h.name}", (None, h.rhs, ()), ctx, fail)  # not a matrix equation: _holds and thm: skip it
    ctx.scalar_equations[f"hyp:{h.name}"] = (h.lhs, value)


def _check_scalar_hypothesis(h: Hypothesis, ctx: Context, fail) -> None:
    """The right side (of a scalar fact, its subject) is defined: its 1×1 matrices are, and it divides only by
    scalars shown non-zero."""
    try:
        require_coefficient_defined(h.lhs.arguments[0] if h.is_scalar_fact else h.rhs, ctx)
    except TermError as exc:
        fail(f"scalar {'fact' if h.is_scalar_fact else 'hypothesis'} {h.name}: {explained(exc, ctx)}")


def _add_scalar_fact(h: Hypothesis, ctx: Context, fail) -> None:
    """Q.nonzero(c) (issue 41): the coefficient c is not zero.  The sign judgment narrows c — c itself, up to a
    rational factor (``judgments._fact_keys``), never a scalar that merely contains c — to non-zero; nothing
    is bound, and the hypothesis is no rewrite rule.  Its subject must be defined (checked with the others)."""
    if h.forall or not isinstance(h.rhs, BooleanTrue):
        fail(f"scalar fact {h.name} must read Q.nonzero(c) = true and bind nothing")
    (subject,) = h.lhs.arguments
    if isinstance(subject, MATRIX_NODES) or not isinstance(subject, Basic):
        fail(f"scalar fact {h.name} is about a scalar (a coefficient), not a matrix")
    try:
        require_coefficient(subject, require_exact_types)
    except (CoefficientError, TermError) as exc:
        fail(f"scalar fact {h.name}: {' '.join(str(exc).split())[:200]}")
    keys = _fact_keys(subject, canon)
    if not keys:
        fail(f"scalar fact {h.name}: {shown(subject)} is a number (or cannot be brought to a normal form)")
    _register(f"hyp:{h.name}", (None, h.rhs, ()), ctx, fail)  # a predicate: no rewrite rule
    for key in keys:
        ctx.scalar_facts[key] = NONZERO


def _register(rule: str, entry, ctx: Context, fail) -> None:
    if rule in ctx.rules:
        fail(f"two hypotheses, definitions or lemmas are named {rule.split(':', 1)[1]}")
    ctx.rules[rule] = entry


def _defined(term, ctx, fail):
    """The normal form of a term checked as written; ``fail`` with the reason otherwise (and, for a judgment
    definedness needed, which hypothesis would make it follow: ``hints.explained``)."""
    try:
        return defined_canon(term, ctx)
    except TermError as exc:
        fail(explained(exc, ctx))


def _same_shape(a, b, fail, what) -> None:
    (r1, c1), (r2, c2) = shape(a), shape(b)
    if not (dims_equal(r1, r2) and dims_equal(c1, c2)):
        fail(f"{what}: the two sides have different shapes")


def _instance_maps(given: dict, ctx: Context, fail) -> tuple[dict, dict]:
    """Dimension and matrix substitutions of an instance, checked: positive-integer dimensions; matrices that are
    defined terms in ``ctx`` of the instantiated symbol's shape, as written and in normal form (keyed by that
    symbol with its dimensions substituted), each in normal form."""
    dims = {v: t for v, t in given.items() if isinstance(v, Symbol)}
    for v, t in dims.items():
        if index_kind(v) == "index":
            try:
                require_index(t)
            except TermError as exc:
                fail(f"index {v} instantiated with {t}: {exc}")
        elif not isinstance(t, Basic) or t.is_integer is not True or t.is_positive is not True or not all(
            isinstance(s, Symbol) and s.is_integer and s.is_positive for s in t.free_symbols
        ):
            fail(f"dimension {v} instantiated with {t}, which is not a positive integer dimension")
    mats = {}
    for v, t in given.items():
        if isinstance(v, MatrixSymbol):
            if not isinstance(t, MATRIX_NODES):
                fail(f"{v.name} instantiated with something that is not a matrix term")
            target = v.xreplace(dims)
            _same_shape(target, t, fail, f"instance of {v.name}")
            value = _defined(t, ctx, lambda reason, name=v.name: fail(f"instance of {name}: {reason}"))
            _same_shape(target, value, fail, f"instance of {v.name} (in normal form)")
            mats[target] = value
    return dims, mats


def _instantiate(entry, step: Step, ctx: Context, fail) -> Rule:
    lhs, rhs, forall = entry[:3]
    optional = len(entry) > 3 and entry[3]  # an induction lemma: its variable stands for itself unless given
    if lhs is None:
        fail("a predicate hypothesis is not a rewrite rule")
    if not forall or (optional and not step.instance):
        if step.instance:
            fail("this rule binds no variables, but the step instantiates some")
        return equation_rule(lhs, rhs)
    given = dict(step.instance)
    if len(given) != len(step.instance) or set(given) != set(forall):
        fail("the step must instantiate exactly the variables the hypothesis binds")
    # every matrix instance is a defined term of the bound symbol's shape (B := I_n I_1 is not an n×1 matrix)
    dim_map, mat_map = _instance_maps(given, ctx, fail)
    try:
        lhs_i, rhs_i = (side.xreplace(dim_map).xreplace(mat_map) for side in (lhs, rhs))
        for side in (lhs_i, rhs_i):
            require_shape_doubling(side, "the instantiated hypothesis")
        lhs_i, rhs_i = canon(lhs_i), canon(rhs_i)
    except (TermError, ValueError, TypeError) as exc:
        fail(f"cannot instantiate the hypothesis: {exc}")
    return equation_rule(lhs_i, rhs_i)


def resolve_rule(step: Step, ctx: Context, fail) -> Rule:
    """The rule a step cites: an axiom, or an (instantiated) hypothesis, definition or lemma."""
    if step.rule in AXIOMS:
        if step.instance:
            fail("axioms take no instance")
        return AXIOMS[step.rule]
    if step.rule in ctx.scalar_equations:
        if step.instance:
            fail("this rule binds no variables, but the step instantiates some")
        return scalar_equation_rule(*ctx.scalar_equations[step.rule])
    if step.rule in ctx.rules:
        return _instantiate(ctx.rules[step.rule], step, ctx, fail)
    if step.rule.startswith("thm:"):
        theorem = ctx.citations.get(step.rule[4:])
        if theorem is None:
            fail(f"theorem {step.rule[4:]} is not among the theorems this proof cites")
        return _cite(theorem, step, ctx, fail)
    fail("no such rule")


def _statement_symbols(proof: Proof) -> set:
    """Matrix and dimension symbols of a theorem's statement (hypotheses, definitions, claim)."""
    terms = [proof.claim.lhs, proof.claim.rhs]
    for h in proof.hypotheses:
        terms += [h.lhs.arguments[0]] if h.is_predicate else [h.lhs, h.rhs]
    for d in proof.definitions:
        terms += [d.symbol, d.rhs]
    out: set = set()
    for term in terms:  # walked at every step that cites the theorem: charged
        for node in _walked(term):
            if isinstance(node, MatrixSymbol):
                out |= {node} | node.shape[0].free_symbols | node.shape[1].free_symbols
            elif isinstance(node, Symbol):
                out.add(node)
    return out


def _holds(lhs: Basic, rhs: Basic, ctx: Context) -> bool:
    """``lhs = rhs`` is one of the equations the citing chain has (hypothesis, definition, lemma), or trivial."""
    if lhs == rhs:
        return True
    known = list(ctx.equations) + [(canon(entry[0]), canon(entry[1])) for entry in ctx.rules.values()
                                   if entry[0] is not None and not entry[2]]
    return any((lhs, rhs) in ((a, b), (b, a)) for a, b in known)


def scalar_hypothesis_holds(h: Hypothesis, dims: dict, mats: dict, ctx: Context) -> bool:
    """A cited theorem's scalar hypothesis λ = r holds in the citing context: λ is not instantiated (a scalar
    symbol stands for itself; an instance names matrices and dimensions only) and the citing proof has the
    scalar hypothesis λ = r' with r' and r under the step's full instance (its dimensions, then its matrices, the
    one substitution every other hypothesis and the claim get) one coefficient in normal form."""
    if h.lhs in dims or h.lhs in mats:
        return False
    try:
        value = canon_coefficient(h.rhs.xreplace(dims).xreplace(mats), canon)
    except (CoefficientError, TermError, PolynomialError, ValueError, TypeError):
        return False
    return any(symbol == h.lhs and known == value for symbol, known in ctx.scalar_equations.values())


def scalar_fact_holds(h: Hypothesis, dims: dict, mats: dict, ctx: Context) -> bool:
    """A cited theorem's scalar fact Q.nonzero(c) holds in the citing context (issue 41): c under the step's full
    instance (dimensions, then matrices) is a defined coefficient the citing chain shows non-zero."""
    try:
        value = h.lhs.arguments[0].xreplace(dims).xreplace(mats)
        require_coefficient(value, require_exact_types)
        require_coefficient_defined(value, ctx)
        return nonzero(canon_coefficient(value, canon), ctx)
    except (CoefficientError, TermError, PolynomialError, ValueError, TypeError):
        return False


def _cite(theorem: Theorem, step: Step, ctx: Context, fail) -> Rule:
    """The claim of a checked theorem, instantiated, once its instantiated hypotheses hold here.

    Sound because a theorem holds for all values of its symbols that satisfy its hypotheses and
    definitions: symbols the step does not instantiate stand for themselves.
    """
    cited = theorem.proof
    if any(h.forall for h in cited.hypotheses):
        fail(f"theorem {theorem.id} has a hypothesis that binds variables; it cannot be cited")
    if cited.families:
        fail(f"theorem {theorem.id} declares families of matrices; it cannot be cited (its families are its own)")
    symbols = _statement_symbols(cited)
    given = dict(step.instance)
    if len(given) != len(step.instance):
        fail("the step instantiates a symbol twice")
    for v in given:
        if v not in symbols:
            fail(f"{v} is not a symbol of theorem {theorem.id}")
    dims, mats = _instance_maps(given, ctx, fail)

    def instance(term: Basic) -> Basic:
        try:
            term = term.xreplace(dims).xreplace(mats)
            require_shape_doubling(term, f"an instance of theorem {theorem.id}")
            return _defined(term, ctx, fail)
        except ProofError:
            raise
        except (TermError, ValueError, TypeError) as exc:
            fail(f"cannot instantiate theorem {theorem.id}: {exc}")

    judgments = {"invertible": invertible, "positive_definite": positive_definite, "symmetric": symmetric,
                 "diagonal": diagonal}
    for h in cited.hypotheses:
        if is_scalar_hypothesis(h):
            if not scalar_hypothesis_holds(h, dims, mats, ctx):
                fail(f"scalar hypothesis {h.name} of theorem {theorem.id} does not hold here: {h.lhs} = "
                     f"{shown(h.rhs.xreplace(dims).xreplace(mats))} is not a scalar hypothesis of this proof")
        elif h.is_scalar_fact:
            if not scalar_fact_holds(h, dims, mats, ctx):
                fail(f"scalar fact {h.name} of theorem {theorem.id} does not hold here: cannot show that "
                     f"{shown(h.lhs.arguments[0].xreplace(dims).xreplace(mats))} is not zero")
        elif h.is_predicate:
            name = next(k for k, v in PREDICATES.items() if h.lhs.function == v)
            subject = instance(h.lhs.arguments[0])
            if not judgments[name](subject, ctx):
                fail(f"hypothesis {h.name} of theorem {theorem.id} does not hold here: "
                     f"cannot show that {shown(subject)} is {name.replace('_', ' ')}")
        else:
            lhs, rhs = instance(h.lhs), instance(h.rhs)
            if not _holds(lhs, rhs, ctx):
                fail(f"hypothesis {h.name} of theorem {theorem.id} does not hold here: {shown(lhs)} = {shown(rhs)} "
                     "is not a hypothesis, definition or lemma of this proof")
    for d in cited.definitions:
        lhs, rhs = instance(d.symbol), instance(d.rhs)
        if not _holds(lhs, rhs, ctx):
            fail(f"definition {d.name} of theorem {theorem.id} does not hold here: {shown(lhs)} = {shown(rhs)} "
                 "is not a hypothesis, definition or lemma of this proof")
    return equation_rule(instance(cited.claim.lhs), instance(cited.claim.rhs))


def chain_context(outer: Context, chain: Chain, lemma_rules: dict, fail) -> Context:
    """The context a chain is checked in: the theorem's, its local hypotheses, earlier lemmas.

    Earlier lemmas (proved from the theorem's hypotheses alone) also serve the definedness judgments:
    a lemma XᵀX = RᵀR shows XᵀX invertible when R is.  Copying the context is work: a unit for each equation,
    predicate fact and rule copied or registered (ten thousand one-step lemmas made a check quadratic).
    """
    charge(1 + len(outer.equations) + sum(len(v) for v in outer.predicates.values()) + len(outer.rules)
           + 2 * len(lemma_rules) + len(chain.hypotheses))
    ctx = Context(list(outer.equations), {k: list(v) for k, v in outer.predicates.items()}, dict(outer.rules),
                  dict(outer.citations), outer.deadline, families=dict(outer.families),
                  total_families=set(outer.total_families), scalar_equations=dict(outer.scalar_equations),
                  family_facts=outer.family_facts, scalar_facts=dict(outer.scalar_facts))
    for name, entry in lemma_rules.items():
        _register(name, entry, ctx, fail)
        ctx.equations.append((entry[0], entry[1]))
    _add_hypotheses(chain.hypotheses, ctx, fail)
    return ctx


def _check_chain(theorem: str, chain: Chain, outer: Context, lemma_rules: dict) -> None:
    def fail(reason, step=None, rule=None):
        raise ProofError(theorem, chain.name, step, rule, reason)

    ctx = chain_context(outer, chain, lemma_rules, fail)
    lhs, rhs = _defined(chain.lhs, ctx, fail), _defined(chain.rhs, ctx, fail)
    _same_shape(lhs, rhs, fail, "the claim")
    current = lhs
    for index, step in enumerate(chain.steps, start=1):
        try:
            try:
                after = defined_canon(step.expr, ctx)
            except TermError as exc:
                fail(explained(exc, ctx), index, step.rule)
            rule = resolve_rule(step, ctx, lambda reason, at=index, name=step.rule: fail(reason, at, name))
            if after == current:
                fail("the step does not change the expression", index, step.rule)
            if not one_step(current, after, rule, ctx):
                fail("the rule does not rewrite the previous expression into this one", index, step.rule)
        except (ProofError, OutOfTime):
            raise
        except WorkExceeded as exc:  # name the step that ran out of budget
            fail(str(exc), index, step.rule)
        except (ValueError, TypeError, AttributeError, KeyError, IndexError) as exc:  # SymPy refusing a term here
            said = " ".join(str(exc).split())[:200]
            fail(said if isinstance(exc, TermError) else f"SymPy refuses a term of this step ({type(exc).__name__}: "
                 f"{said})", index, step.rule)
        current = after
    if current != rhs:
        fail("the chain does not end at the right-hand side of the claim", len(chain.steps) or None)


def _check_definitions(proof: Proof, ctx: Context, fail) -> None:
    defined: set = set()
    used: set = set()  # symbols the earlier definitions already speak about
    for d in proof.definitions:
        sym = d.symbol
        if not isinstance(sym, MatrixSymbol):
            fail(f"definition {d.name} must define a matrix symbol")
        if sym in defined:
            fail(f"definition {d.name}: {sym.name} is defined twice (a definition introduces a fresh symbol)")
        if sym in used:
            fail(f"definition {d.name}: {sym.name} is used by an earlier definition, so it is not fresh (define it "
                 "before the definitions that use it)")
        if sym in d.rhs.atoms(MatrixSymbol):
            fail(f"definition {d.name} is circular")
        used |= d.rhs.atoms(MatrixSymbol)
        rhs = _defined(d.rhs, ctx, fail)
        _same_shape(sym, rhs, fail, f"definition {d.name}")
        ctx.equations.append((sym, rhs))
        _register(f"def:{d.name}", (sym, rhs, ()), ctx, fail)
        defined.add(sym)
    for c in (*proof.lemmas, proof.claim):  # local hypotheses may not constrain defined symbols
        for h in c.hypotheses:
            if (h.lhs.atoms(MatrixSymbol) | h.rhs.atoms(MatrixSymbol)) & defined:
                fail(f"local hypothesis {h.name} constrains a defined symbol")


# --- hypotheses about defined symbols (issue 29) ---------------------------------------------------------------


def _split_hypotheses(proof: Proof) -> tuple[list, list]:
    """The theorem's hypotheses that mention no defined symbol, and those that do.

    A hypothesis H(D) about a defined symbol D := R is the constraint H(R) on the other symbols: sound, because a
    theorem speaks of the matrices that satisfy its hypotheses and definitions.  Definitions stay conservative:
    each right side is judged defined from the first kind alone (before any hypothesis about a defined symbol is
    known), so each defined symbol exists and is fixed by the others whatever the second kind says."""
    defined = {d.symbol for d in proof.definitions if isinstance(d.symbol, MatrixSymbol)}
    plain, about = [], []
    for h in proof.hypotheses:
        sides = [h.lhs.arguments[0]] if h.is_predicate else [h.lhs, h.rhs, *h.forall]
        mentions = any(isinstance(side, Basic) and side.atoms(MatrixSymbol) & defined for side in sides)
        (about if mentions else plain).append(h)
    return plain, about


# --- recurrences whose members keep a property (issue 29) -------------------------------------------------------

_INDUCTIVE_PREDICATES = ("invertible", "positive_definite", "symmetric", "diagonal")


def _inductive_facts(f: Family, ctx: Context) -> frozenset:
    """The predicates every defined member of the recurrence ``f`` has, by induction on its index: the base value
    has them, and the step has them whenever the member it starts from has them all.

    The step is judged at a fresh index symbol s′ (named so that no proof can name it) with F[s′] an unknown matrix
    known to be defined and to have the predicates, nothing else: so the judgment holds at every index, and
    F[n + 1] (the step at n, F[n] defined) inherits them from F[n].  A predicate the step cannot keep is dropped
    and the rest tried again (the largest invariant set, found in at most four rounds)."""
    judges = {"invertible": invertible, "positive_definite": positive_definite, "symmetric": symmetric,
              "diagonal": diagonal}
    base = canon(f.base)
    kept = frozenset(name for name in _INDUCTIVE_PREDICATES if judges[name](base, ctx))
    if not kept:
        return kept
    fresh = _fresh_index(f)
    member = _member(f, fresh)
    step = f.step.xreplace({f.index: fresh})
    while kept:
        probe = Context(list(ctx.equations) + [(member, member)], {k: list(v) for k, v in ctx.predicates.items()},
                        dict(ctx.rules), dict(ctx.citations), ctx.deadline, families=dict(ctx.families),
                        total_families=set(ctx.total_families), family_facts=ctx.family_facts,
                        scalar_equations=dict(ctx.scalar_equations), scalar_facts=dict(ctx.scalar_facts))
        for name in kept:
            probe.predicates[name].append(member)
        try:
            check_defined(step, probe)
        except OutOfTime:
            raise
        except TermError:
            return frozenset()
        keeps = frozenset(name for name in kept if judges[name](canon(step), probe))
        if keeps == kept:
            return kept
        kept = keeps
    return kept


def _names_in(term: Basic) -> set[str]:
    return {a.name for a in term.atoms(MatrixSymbol, Symbol)}


def _check_bound_variables(proof: Proof, fail, tick=lambda: None) -> None:
    """Variables a hypothesis binds occur in that hypothesis only.

    Near-linear in the size of the proof: the names of every term are gathered once and counted, and a
    hypothesis's bound names are compared with the count of the terms outside it.
    """
    hyps = list(proof.hypotheses) + [h for c in (*proof.lemmas, proof.claim) for h in c.hypotheses]
    if not any(h.forall for h in hyps):
        return
    outside: list[Basic] = []
    for d in proof.definitions:
        outside += [d.symbol, d.rhs]
    for c in (*proof.lemmas, proof.claim):
        outside += [c.lhs, c.rhs] + [s.expr for s in c.steps]
    counts: dict[str, int] = {}  # name -> how many hypotheses and other terms speak of it
    for term in outside:
        tick()
        for name in _names_in(term):
            counts[name] = counts.get(name, 0) + 1
    own = []
    for h in hyps:
        tick()
        names = _names_in(h.lhs) | _names_in(h.rhs)
        own.append(names)
        for name in names:
            counts[name] = counts.get(name, 0) + 1
    for h, names in zip(hyps, own, strict=True):
        if not h.forall:
            continue
        tick()
        if not all(isinstance(v, (MatrixSymbol, Symbol)) for v in h.forall):
            fail(f"hypothesis {h.name} binds something that is not a symbol")
        bound = {v.name for v in h.forall}
        if any(counts.get(name, 0) - (name in names) > 0 for name in bound):
            fail(f"a variable bound by hypothesis {h.name} occurs outside it")
        bound_dims = {v for v in h.forall if isinstance(v, Symbol)}
        for m in h.lhs.atoms(MatrixSymbol) | h.rhs.atoms(MatrixSymbol):
            if m not in h.forall and (m.shape[0].free_symbols | m.shape[1].free_symbols) & bound_dims:
                fail(f"hypothesis {h.name}: {m.name} has a bound dimension but is not bound itself")
        for v in h.forall:
            if isinstance(v, Symbol) and not any(v in m.shape[0].free_symbols | m.shape[1].free_symbols
                                                 for m in h.forall if isinstance(m, MatrixSymbol)):
                fail(f"hypothesis {h.name} binds the dimension {v}, which no bound matrix uses")


def _declare_families(proof: Proof, ctx: Context, fail) -> None:
    """The proof's families by name: distinct names (none a matrix symbol's), index symbols as indices."""
    symbol_names = {m.name for term in _all_terms(proof) for m in term.atoms(MatrixSymbol)}
    for f in proof.families:
        if f.name in ctx.families or f.name in symbol_names:
            fail(f"family {f.name}: the name is used twice")
        if index_kind(f.index) != "index":
            fail(f"family {f.name}: its index must be an index symbol (derive.index)")
        if (f.base is None) != (f.step is None):
            fail(f"family {f.name}: a recurrence needs both a base value and a step")
        parts = [("shape", f.rows), ("shape", f.cols)]
        parts += [("base value", f.base), ("step", f.step)] if f.is_defined else []
        for what, part in parts:  # a recurrence means one sequence: no free index may change it
            others = sorted(str(s) for s in _index_symbols(part) if s != f.index or what == "base value")
            if others:
                fail(f"family {f.name}'s {what} mentions the index symbol {', '.join(others)}; a family's shape "
                     f"and step may mention only its own index {f.index} (its base none), earlier families and "
                     f"fixed symbols")
        ctx.families[f.name] = f


def _index_symbols(term: Basic) -> set:
    """The index symbols (derive.index) a term mentions, in dimensions and family members included."""
    return {s for s in term.free_symbols if index_kind(s) == "index"}


def _check_acyclic(proof: Proof, fail) -> None:
    """Definitions and recurrences together refer to one another without a cycle (D := F[1] with F's step using D
    would make D = D + I a theorem); the error names the cycle."""
    defined_symbols = {d.symbol: d for d in proof.definitions if isinstance(d.symbol, MatrixSymbol)}
    defined_families = {f.name: f for f in proof.families if f.is_defined}

    def refers(parts: list, own_family: str | None) -> list:
        out: dict = {}  # ordered, each node once
        for part in parts:
            for node in sorted(part.atoms(FamilyMatrix), key=str):
                if node.name in defined_families and node.name != own_family:
                    out[("family", node.name)] = None
            for node in sorted(part.atoms(MatrixSymbol), key=str):
                if node in defined_symbols:
                    out[("definition", defined_symbols[node].name)] = None
        return list(out)

    edges: dict = {}
    for d in proof.definitions:
        edges[("definition", d.name)] = refers([d.rhs], None)
    for f in defined_families.values():
        edges[("family", f.name)] = refers([f.base, f.step], f.name)

    def shown(node) -> str:
        kind, name = node
        if kind == "definition":
            symbol = next(d.symbol for d in proof.definitions if d.name == name)
            return f"definition {name} ({symbol.name})"
        return f"family {name}"

    done: set = set()
    for root in edges:  # depth-first, without recursion (a long chain of definitions is no deep Python stack)
        if root in done:
            continue
        path, on_path, todo = [root], {root}, [iter(edges[root])]
        while todo:
            nxt = next(todo[-1], None)
            if nxt is None:  # every edge of the node on top followed: it is on no cycle
                finished = path.pop()
                on_path.discard(finished)
                done.add(finished)
                todo.pop()
                continue
            if nxt in on_path:
                cycle = path[path.index(nxt):] + [nxt]
                fail("definitions and recurrences refer to each other in a cycle: "
                     + " -> ".join(shown(node) for node in cycle))
            if nxt not in done:
                path.append(nxt)
                on_path.add(nxt)
                todo.append(iter(edges.get(nxt, ())))


def _member(f: Family, index: Basic) -> FamilyMatrix:
    """``F[index]``, its shape from the family's template."""
    return FamilyMatrix(f.name, index, f.rows.xreplace({f.index: index}), f.cols.xreplace({f.index: index}))


def _check_family_recurrences(proof: Proof, ctx: Context, fail) -> None:
    """A defined family is fresh (in no hypothesis), its value at 0 is defined, its step gives the member at
    index + 1 from the member at index and families declared before it: so each recurrence defines one
    (partial) sequence, whatever the values of the other symbols."""
    hypothesis_families = {node.name for h in proof.hypotheses for side in (h.lhs, h.rhs)
                           for node in side.atoms(FamilyMatrix)}
    earlier: set[str] = set()
    for f in proof.families:
        if f.is_defined:
            if f.name in hypothesis_families:
                fail(f"family {f.name} is defined by a recurrence, so no hypothesis may speak about it")
            for part, what in ((f.base, "base value"), (f.step, "step")):
                for node in part.atoms(FamilyMatrix):
                    defined_other = ctx.families[node.name].is_defined and node.name != f.name
                    if defined_other and node.name not in earlier:
                        fail(f"family {f.name}'s {what} uses {node.name}, which is not declared before it")
                    if node.name == f.name and (what == "base value" or node.index != f.index):
                        fail(f"family {f.name}'s {what} may use {f.name} only at the index {f.index}")
            _same_shape(_member(f, 0), _defined(f.base, ctx, fail), fail, f"family {f.name}'s base value")
            try:
                require_exact_types(f.step)
            except TermError as exc:
                fail(f"family {f.name}'s step: {exc}")
            _same_shape(_member(f, f.index + 1), f.step, fail, f"family {f.name}'s step")
            _same_shape(_member(f, f.index + 1), canon(f.step), fail, f"family {f.name}'s step (in normal form)")
            base = (_member(f, 0), canon(f.base))
            ctx.equations.append(base)
            _register(f"base:{f.name}", (base[0], base[1], ()), ctx, fail)
            _register(f"step:{f.name}", (_member(f, f.index + 1), canon(f.step), (f.index,)), ctx, fail)
            if _step_defined_for_any_member(f, ctx):
                ctx.total_families.add(f.name)
        earlier.add(f.name)


def _step_defined_for_any_member(f: Family, ctx: Context) -> bool:
    """The step is defined whatever (defined) matrix F[s] is: then, by induction, every member is defined.

    F[s] is made defined and nothing else by a trivial equation F[s] = F[s] in a copy of the context (no
    hypothesis speaks about F, so no judgment learns more about it).  The step is judged at a fresh index symbol
    (issue 29): a hypothesis about x[s] for the recurrence's own index s speaks of that one s, not of every index."""
    fresh = _fresh_index(f)
    member = _member(f, fresh)
    probe = Context(list(ctx.equations) + [(member, member)], {k: list(v) for k, v in ctx.predicates.items()},
                    dict(ctx.rules), dict(ctx.citations), ctx.deadline, families=dict(ctx.families),
                    total_families=set(ctx.total_families), scalar_equations=dict(ctx.scalar_equations),
                    scalar_facts=dict(ctx.scalar_facts))
    try:
        check_defined(f.step.xreplace({f.index: fresh}), probe)
    except OutOfTime:
        raise
    except TermError:
        return False
    return True


def _fresh_index(f: Family) -> Symbol:
    """An index symbol no proof can name (′ is not in an identifier), standing for every index of ``f``."""
    return Symbol(f"{f.index.name}\u2032", integer=True, nonnegative=True)


def theorem_context(proof: Proof, deadline: int | None = None) -> Context:
    """The context of a theorem's statement: hypotheses and definitions, checked."""

    def fail(reason):
        raise ProofError(proof.theorem, "statement", None, None, reason)

    if proof.claim.hypotheses:
        fail("the main claim takes the theorem's hypotheses only")
    ctx = Context(deadline=deadline)
    try:
        _symbols_consistent(_all_terms(proof))
        _check_bound_variables(proof, fail, ctx.tick)
        _declare_families(proof, ctx, fail)
        _check_acyclic(proof, fail)
        plain, about_defined = _split_hypotheses(proof)
        _add_hypotheses(plain, ctx, fail)
        _check_definitions(proof, ctx, fail)
        _add_hypotheses(about_defined, ctx, fail)
        _check_family_recurrences(proof, ctx, fail)
        ctx.family_facts.prove = lambda name: _inductive_facts(ctx.families[name], ctx)  # judged when first asked
    except TermError as exc:
        fail(str(exc))
    for cited in proof.cites:
        if not is_issued(cited):
            fail("a proof cites checked theorems only (made by derive.kernel.check, unchanged since)")
        if cited.id == proof.theorem:
            fail(f"theorem {proof.theorem} cites itself")
        if cited.id in ctx.citations:
            fail(f"theorem {cited.id} is cited twice")
        ctx.citations[cited.id] = cited
    names = [c.name for c in (*proof.lemmas, proof.claim)]
    if len(set(names)) != len(names):
        fail("two chains of the proof have the same name")
    return ctx


def lemma_rule(lemma: Chain | Induction):
    """The rewrite rule a checked lemma becomes (None for a lemma with local hypotheses).

    An induction lemma binds its variable, which stands for itself unless a step instantiates it.
    """
    if isinstance(lemma, Induction):
        return canon(lemma.lhs), canon(lemma.rhs), (lemma.variable,), True
    return None if lemma.hypotheses else (canon(lemma.lhs), canon(lemma.rhs), ())


def induction_chains(proof: Proof, lemma: Induction) -> tuple[Chain, Chain]:
    """The chains an induction lemma stands for: the claim at 0, and at variable + 1 from ``hyp:IH``, the claim
    at variable.  Raises ProofError when the variable may not be inducted on."""
    t = lemma.variable

    def fail(reason):
        raise ProofError(proof.theorem, lemma.name, None, None, reason)

    if index_kind(t) != "index":
        fail(f"induction is on an index symbol (derive.index), not on {t}")
    statement = [side for h in proof.hypotheses for side in (h.lhs, h.rhs, *h.forall)]
    statement += [side for d in proof.definitions for side in (d.symbol, d.rhs)]
    if any(t in term.free_symbols for term in statement):
        fail(f"induction on {t}: a hypothesis or definition speaks about {t}, so the claim at {t} + 1 could not "
             f"use it")
    # Nothing the claim relies on may depend on t, directly or through what it references.  The only places t
    # can enter are hypotheses and definitions (refused above) and families (refused here, and already at their
    # declaration); a definition or family that references one of those is therefore refused with it.
    for f in proof.families:  # a family's own index is bound in it; any other mention of t changes its meaning
        parts = [f.rows, f.cols] + ([f.base, f.step] if f.is_defined else [])
        if f.index != t and any(t in part.free_symbols for part in parts) or \
                f.is_defined and t in f.base.free_symbols:
            fail(f"induction on {t}: family {f.name}'s shape or recurrence speaks about {t}, so the claim at "
                 f"{t} + 1 could not use it")
    for term in (lemma.lhs, lemma.rhs):
        for m in term.atoms(MatrixSymbol):
            if t in m.shape[0].free_symbols | m.shape[1].free_symbols:
                fail(f"induction on {t}: the size of {m.name} depends on {t}; make it a family (derive.family), "
                     f"whose members at {t} and {t} + 1 are different matrices")
    at = lambda value: (lemma.lhs.xreplace({t: value}), lemma.rhs.xreplace({t: value}))  # noqa: E731
    base, step = at(0), at(t + 1)
    return (Chain(f"{lemma.name}_base", base[0], base[1], lemma.base),
            Chain(f"{lemma.name}_step", step[0], step[1], lemma.step,
                  (Hypothesis("IH", lemma.lhs, lemma.rhs),)))


def proof_size(proof: Proof) -> int:
    """The nodes of every term of ``proof`` (each sub-term counted where it occurs) and of the statements of
    the theorems it cites: what the default work budget is proportional to.  (A unit of work is charged for each
    node looked at, so that the time guard of :func:`check` is looked at too.)"""
    terms = _all_terms(proof)
    for cited in proof.cites:
        terms += _statement_terms(cited.proof)
    sizes: dict = {}
    total = walked = 0
    for term in terms:
        stack = [(term, False)]
        while stack:
            node, done = stack.pop()
            walked += 1
            if walked == CHARGE_EVERY:
                charge(walked)
                walked = 0
            if node in sizes:
                continue
            args = node.args if isinstance(node, Basic) else ()
            if done or not args:
                sizes[node] = 1 + sum(sizes[a] for a in args)
            else:
                stack.append((node, True))
                stack += [(a, False) for a in args if a not in sizes]
        total += sizes[term]
    charge(walked)
    return total


def _statement_terms(proof: Proof) -> list[Basic]:
    terms = [proof.claim.lhs, proof.claim.rhs]
    for h in proof.hypotheses:
        terms += [h.lhs, h.rhs, *h.forall]
    for d in proof.definitions:
        terms += [d.symbol, d.rhs]
    return terms


def _limit(value, name: str, kind: type):
    """A limit given to :func:`check`: None, or a positive finite number (``kind`` int: a whole number)."""
    if value is None:
        return None
    number = type(value) in (int, float) and (kind is float or type(value) is int)
    if not number or not (0 < value < float("inf")):
        raise ValueError(f"{name} must be a positive finite {'number' if kind is float else 'integer'} or None, "
                         f"not {value!r}")
    return value


def check(proof: Proof, *, work_limit: int | None = None, time_limit: float | None = None) -> Theorem:
    """Check every chain of ``proof``; return the theorem or raise :class:`ProofError`.

    ``work_limit`` (units of kernel work, :mod:`derive.kernel.budget`) bounds the whole check; past it the
    check fails with a ProofError that says so, at the same point on any machine.  By default it is
    ``budget.default_limit(proof_size(proof))``.  ``time_limit`` (CPU seconds of this process, so that other
    programs' load does not count) is only an outer guard against the unforeseen: past it the check stops with
    :class:`CheckInterrupted` (a ProofError) — the proof was *not checked*, which is not a verdict on it.
    Whatever the proof holds, the check ends in a theorem or a ProofError.
    """
    work_limit, time_limit = _limit(work_limit, "work_limit", int), _limit(time_limit, "time_limit", float)
    theorem_id = proof.theorem if type(proof) is Proof and type(proof.theorem) is str else "?"
    theorem_id = theorem_id if IDENTIFIER.match(theorem_id) else "?"
    try:
        deadline = None if time_limit is None else time.process_time() + time_limit
        with guarded(deadline):  # the work before the budget is known, a unit a node: under the time guard
            try:
                proof = validated(proof, _vouch)
            except ValidationError as exc:
                raise ProofError(theorem_id, "statement", None, None, str(exc)) from None
            limit = work_limit if work_limit is not None else default_limit(proof_size(proof))
        with metered(limit, deadline):
            return _check(proof, None)
    except RecursionError:
        raise ProofError(theorem_id, "statement", None, None, "a term is nested too deeply") from None
    except ProofError as exc:
        if "ran past its time budget" in exc.reason and time_limit is not None:
            raise CheckInterrupted(theorem_id, time_limit) from None
        raise
    except (OutOfTime, GuardFired):
        raise CheckInterrupted(theorem_id, time_limit) from None
    except WorkExceeded as exc:
        raise ProofError(theorem_id, "statement", None, None, str(exc)) from None
    except (ValueError, TypeError, AttributeError, KeyError, IndexError) as exc:  # SymPy refusing a malformed term
        raise ProofError(theorem_id, "statement", None, None, f"malformed term: {exc}") from None


def _vouch(cited: object) -> Theorem:
    """A cited theorem, if the kernel made it and it is unchanged since."""
    if not is_issued(cited):
        raise ValidationError("a proof cites checked theorems only (made by derive.kernel.check, unchanged since)")
    return cited


def _check(proof: Proof, deadline: int | None) -> Theorem:
    start = time.perf_counter()
    ctx = theorem_context(proof, deadline)
    lemma_rules: dict = {}
    for index, chain in enumerate((*proof.lemmas, proof.claim)):
        parts = induction_chains(proof, chain) if isinstance(chain, Induction) else (chain,)
        for part in parts:
            try:
                _check_chain(proof.theorem, part, ctx, lemma_rules)
            except TermError as exc:
                raise ProofError(proof.theorem, part.name, None, None, str(exc)) from None
        if index < len(proof.lemmas) and lemma_rule(chain) is not None:
            lemma_rules[f"lemma:{chain.name}"] = lemma_rule(chain)
    return _issue(proof, digest(proof, _charged_srepr), time.perf_counter() - start)


#: Characters of a proof's canonical text (:func:`digest`) printed and hashed for a unit of work.
DIGEST_CHARACTERS_PER_UNIT = 32


def _charged_srepr(term: Basic) -> str:
    """``srepr(term)``, charged to the check (a unit for every :data:`DIGEST_CHARACTERS_PER_UNIT` characters): the
    digest of a large proof is work like any other, done under the budget and the time guard."""
    text = srepr(term)
    charge(1 + len(text) // DIGEST_CHARACTERS_PER_UNIT)
    return text
