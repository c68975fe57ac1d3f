"""Soundness: the kernel rejects mutated proofs, and only it makes theorems.

Every library proof is mutated in many small ways (step expressions, cited rules, hypotheses,
claims, definitions, step order, the instance of a universally quantified hypothesis); each
mutant must make :func:`derive.kernel.check` raise :class:`ProofError`.  The few mutants that
may legitimately still be proofs are allowed only with a reason: step-expression mutations that
cannot change a value (marked ``(neutral)``: swapping commuting factors, dropping or duplicating an
identity, ...), renamed rules that still justify the step (the statement is then unchanged), and
predicate hypotheses replaced as listed in ``ACCEPTABLE_PREDICATE_CHANGES``.

By default the larger classes are sampled deterministically (``random.Random(0)``; of a long proof's
step and rename mutants, 80 are checked; of its re-ordered steps, 50 with every kind among them; fewer of the
COSTLY theorems, whose one check takes seconds) to keep the run short; ``SOUNDNESS_FULL=1`` checks every mutant.

Tests named ``test_kernel_bug_*`` state the correct behaviour for kernel bugs found while writing
these tests; they fail until the kernel is fixed (deselect with ``-k "not kernel_bug"``).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import random
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from sympy import Basic, Integer, Q, Rational, S, Symbol, Trace
from sympy.assumptions.assume import AppliedPredicate
from sympy.matrices.expressions import Identity, Inverse, MatMul, MatPow, MatrixSymbol, Transpose, ZeroMatrix

from derive.authoring import dim, predicate, scalar
from derive.kernel import (
    AXIOMS,
    PREDICATES,
    SCALAR_PREDICATES,
    Chain,
    Definition,
    Hypothesis,
    Induction,
    Proof,
    ProofError,
    Step,
    Theorem,
    check,
)
from derive.kernel.budget import metered
from derive.kernel.terms import (
    TermError,
    add,
    block,
    canon,
    children,
    exponent_form,
    factors_of,
    inv,
    mul,
    power,
    rebuild,
    transpose,
)
from derive.library import LIBRARY, THEOREM_IDS
from derive.witness import WitnessError, check_instances

FULL = os.environ.get("SOUNDNESS_FULL") == "1"
STEP_MUTANTS_PER_KIND = None if FULL else 1  # per step and mutation kind ...
STEP_MUTANTS_PER_THEOREM = None if FULL else 120  # ... and about this many per theorem (at least 3 a step)
RENAMES_PER_STEP = None if FULL else 2  # besides the non-existent name
ORDER_MUTANTS_PER_THEOREM = None if FULL else 50
CHECKED_PER_THEOREM = None if FULL else 80  # step and rename mutants checked per theorem (instance and induction
# mutants: half as many), a sample where more: multi_layer_gd's 150 steps give 450 of each, about 0.25 s of check
# apiece (4 minutes of the slow tier); SOUNDNESS_FULL=1 checks them all

#: Theorems whose one check takes seconds, sampled by this factor less (delta_rule_chunkwise: 292 steps, 2.4 s a
#: check, its mutants were three minutes of the slow tier at a quarter of the sample; multi_layer_gd: two minutes
#: at the full sample; gated_delta_rule: 0.7 s a check); SOUNDNESS_FULL=1 checks every mutant of them too.
COSTLY = {"delta_rule_chunkwise": 8, "gated_delta_rule": 2, "multi_layer_gd": 2}


def checked_per(theorem_id: str, half: bool = False) -> int | None:
    """How many of a theorem's step or rename mutants (``half``: instance and induction mutants) are checked."""
    if CHECKED_PER_THEOREM is None:
        return None
    return max(10, CHECKED_PER_THEOREM // (2 if half else 1) // COSTLY.get(theorem_id, 1))

# --- the rules of blocks, scalars and identities, one small proof each ---------------------------

_p, _q, _n, _m = dim("p"), dim("q"), dim("n"), dim("m")
_lam = scalar("lambda")
_P1, _P2 = MatrixSymbol("P1", _p, _p), MatrixSymbol("P2", _p, _p)
_K1, _K2 = MatrixSymbol("K1", _p, _q), MatrixSymbol("K2", _p, _q)
_J1, _J2 = MatrixSymbol("J1", _q, _p), MatrixSymbol("J2", _q, _p)
_R1 = MatrixSymbol("R1", _q, _q)
_u, _w, _s1 = MatrixSymbol("u", _n, 1), MatrixSymbol("w", _m, 1), MatrixSymbol("s1", 1, 1)
_S = add(_R1, mul(-1, _J1, inv(_P1), _K1))  # the Schur complement of P1 in [[P1, K1], [J1, R1]]
_T = add(_P1, mul(-1, _K1, inv(_R1), _J1))  # that of R1
_P1x, _mu = MatrixSymbol("Px", _n, _n), scalar("mu", positive=True)


def _one_step(rule: str, lhs: Basic, rhs: Basic, hypotheses: tuple[Hypothesis, ...] = ()) -> Callable[[], Proof]:
    def build() -> Proof:
        return Proof(f"rule_{rule}", rule, f"{rule}: one step", hypotheses, (), (),
                     Chain("main", lhs, rhs, (Step(rhs, rule),)))

    return build


#: Rules the library uses rarely or not at all (blocks, scalars, identities), each in a one-step proof.
RULE_PROOFS: dict[str, Callable[[], Proof]] = {
    "rule_block_add": _one_step("block_add", add(block([[_P1, _K1]]), block([[_P2, _K2]])),
                                block([[add(_P1, _P2), add(_K1, _K2)]])),
    "rule_block_scale": _one_step("block_scale", mul(_lam, block([[_P1], [_J1]])),
                                  block([[mul(_lam, _P1)], [mul(_lam, _J1)]])),
    "rule_block_identity": _one_step(
        "block_identity", block([[Identity(_p), ZeroMatrix(_p, _q)], [ZeroMatrix(_q, _p), Identity(_q)]]),
        Identity(_p + _q)),
    "rule_block_zero": _one_step("block_zero", block([[ZeroMatrix(_p, _p), ZeroMatrix(_p, _q)]]),
                                 ZeroMatrix(_p, _p + _q)),
    "rule_block_inverse_diagonal": _one_step(
        "block_inverse_diagonal", inv(block([[_P1, ZeroMatrix(_p, _q)], [ZeroMatrix(_q, _p), _R1]])),
        block([[inv(_P1), ZeroMatrix(_p, _q)], [ZeroMatrix(_q, _p), inv(_R1)]]),
        (predicate("P1_invertible", Q.invertible, _P1), predicate("R1_invertible", Q.invertible, _R1))),
    "rule_block_inverse_schur": _one_step(
        "block_inverse_schur", inv(block([[_P1, _K1], [_J1, _R1]])),
        block([[add(inv(_P1), mul(inv(_P1), _K1, inv(_S), _J1, inv(_P1))), mul(-1, inv(_P1), _K1, inv(_S))],
               [mul(-1, inv(_S), _J1, inv(_P1)), inv(_S)]]),
        (predicate("P1_invertible", Q.invertible, _P1), predicate("S_invertible", Q.invertible, _S))),
    "rule_block_inverse_schur_mirror": _one_step(
        "block_inverse_schur_mirror", inv(block([[_P1, _K1], [_J1, _R1]])),
        block([[inv(_T), mul(-1, inv(_T), _K1, inv(_R1))],
               [mul(-1, inv(_R1), _J1, inv(_T)), add(inv(_R1), mul(inv(_R1), _J1, inv(_T), _K1, inv(_R1)))]]),
        (predicate("R1_invertible", Q.invertible, _R1), predicate("T_invertible", Q.invertible, _T))),
    "rule_inverse_identity": _one_step("inverse_identity", add(_P1, inv(Identity(_p))), add(_P1, Identity(_p))),
    "rule_scalar_matrix": _one_step("scalar_matrix", mul(_lam, _u, _s1, transpose(_w)),
                                    mul(_lam * Trace(_s1), _u, transpose(_w))),
    # issue 29: a 1×1 transpose, a scalar hypothesis λ = μ² (μ > 0), a dimension in a coefficient
    "rule_transpose_scalar": _one_step("transpose_scalar", transpose(mul(transpose(_u), _P1x, _u)),
                                       mul(transpose(_u), _P1x, _u)),
    "rule_scalar_hypothesis": lambda: Proof(
        "rule_scalar_hypothesis", "hyp:lam_mu", "a scalar hypothesis: one step",
        (Hypothesis("lam_mu", _lam, _mu ** 2),),
        (), (), Chain("main", mul(_lam, 1 / _n, _P1), mul(_mu ** 2, 1 / _n, _P1),
                      (Step(mul(_mu ** 2, 1 / _n, _P1), "hyp:lam_mu"),))),
}
RULE_IDS = sorted(RULE_PROOFS)
#: The mutation suite on every library theorem is the slow tier (pytest -m slow, run by .ci/run); the default run
#: mutates these, which between them use equations, predicates, definitions, citations, scalars and blocks.
QUICK_IDS = {"orthogonal_inverse", "spectral_precision", "ols_is_linear_attention", "sherman_morrison",
             "kernel_ridge_push_through", "softmax_nadaraya_watson"}


def tiered(ids) -> list:
    """``ids`` with every one outside QUICK_IDS in the slow tier."""
    return [t if t in QUICK_IDS else pytest.param(t, marks=pytest.mark.slow) for t in ids]


TIERED_IDS = tiered(THEOREM_IDS)
#: The rules the kernel language gained with blocks, scalars and families (base:/step: are per family).
NEW_RULES = {"block_add", "block_scale", "block_identity", "block_zero", "block_inverse_diagonal",
             "block_inverse_schur", "block_inverse_schur_mirror",
             "inverse_identity", "scalar_matrix", "transpose_scalar"}


# --- helpers -------------------------------------------------------------------------------


@functools.cache
def proof_of(theorem_id: str) -> Proof:
    if theorem_id in RULE_PROOFS:
        return RULE_PROOFS[theorem_id]()
    return LIBRARY[theorem_id]()


@dataclass(frozen=True)
class Mutant:
    label: str
    proof: Proof


def chains(proof: Proof) -> list[Chain]:
    return [*proof.lemmas, proof.claim]


def with_chain(proof: Proof, index: int, chain: Chain) -> Proof:
    if index == len(proof.lemmas):
        return dataclasses.replace(proof, claim=chain)
    lemmas = list(proof.lemmas)
    lemmas[index] = chain
    return dataclasses.replace(proof, lemmas=tuple(lemmas))


def with_steps(proof: Proof, index: int, steps: list[Step], part: str = "steps") -> Proof:
    """The proof with the steps of chain ``index`` replaced (of an induction: its ``base`` or ``step`` chain)."""
    return with_chain(proof, index, dataclasses.replace(chains(proof)[index], **{part: tuple(steps)}))


def parts(proof: Proof) -> list[tuple[int, str, str, tuple[Step, ...]]]:
    """(chain index, part, label, steps) for every chain of steps: a lemma or the claim, or the base and the
    step chains of an induction lemma."""
    out = []
    for ci, chain in enumerate(chains(proof)):
        if isinstance(chain, Induction):
            out += [(ci, "base", f"{chain.name} base", chain.base), (ci, "step", f"{chain.name} step", chain.step)]
        else:
            out.append((ci, "steps", chain.name, chain.steps))
    return out


def outcome(proof: Proof) -> Theorem | None:
    """The theorem, or None when the kernel rejects the proof (any other exception propagates)."""
    try:
        return check(proof)
    except ProofError:
        return None


def accepted(mutants: list[Mutant]) -> list[tuple[Mutant, Theorem]]:
    out = []
    for mutant in mutants:
        theorem = outcome(mutant.proof)
        if theorem is not None:
            out.append((mutant, theorem))
    return out


def statement(proof: Proof) -> tuple:
    """What a proof claims: hypotheses, definitions, and every chain's (local hypotheses, lhs, rhs)."""
    return (
        proof.hypotheses,
        proof.definitions,
        tuple((c.name, c.hypotheses, canon(c.lhs), canon(c.rhs)) for c in chains(proof)),
    )


def same_term(a: Basic, b: Basic) -> bool:
    try:
        return canon(a) == canon(b)
    except TermError:
        return False


# --- term mutations ----------------------------------------------------------------------------


def positions(term: Basic, path: tuple[int, ...] = ()) -> Iterator[tuple[tuple[int, ...], Basic]]:
    yield path, term
    for index, child in enumerate(children(term)):
        yield from positions(child, (*path, index))


def replace_at(term: Basic, path: tuple[int, ...], new: Basic) -> Basic:
    if not path:
        return new
    kids = children(term)
    kids[path[0]] = replace_at(kids[path[0]], path[1:], new)
    return rebuild(term, kids)


def _commute(x: Basic, y: Basic) -> bool:
    """Two factors that commute whatever the matrices are: an identity, or powers of one base."""
    return isinstance(x, Identity) or isinstance(y, Identity) or exponent_form(x)[0] == exponent_form(y)[0]


def node_mutations(node: Basic) -> Iterator[tuple[str, bool, Callable[[], Basic]]]:
    """(kind, neutral, builder) for the mutations of one node; builders may raise TermError.

    ``neutral`` marks a mutation that cannot change the value of a defined term (swapping commuting
    factors, duplicating or dropping an identity, scaling a zero, transposing an identity): if the
    kernel accepts such a mutant, it is still a correct proof of the unchanged statement.
    """
    if isinstance(node, MatMul):
        coeff, mats = factors_of(node)
        for i in range(len(mats) - 1):
            swapped = [*mats[:i], mats[i + 1], mats[i], *mats[i + 2 :]]
            yield f"swap[{i}]", _commute(mats[i], mats[i + 1]), functools.partial(mul, coeff, swapped)
        for i in range(len(mats)):
            neutral = isinstance(mats[i], Identity)
            if len(mats) > 1:
                yield f"drop[{i}]", neutral, functools.partial(mul, coeff, mats[:i] + mats[i + 1 :])
            yield f"duplicate[{i}]", neutral, functools.partial(mul, coeff, [*mats[: i + 1], mats[i], *mats[i + 1 :]])
    if isinstance(node, Transpose):
        yield "untranspose", isinstance(node.args[0], Identity), lambda: node.args[0]
    else:
        yield "transpose", isinstance(node, Identity), lambda: transpose(node)
    if isinstance(node, (MatPow, Inverse)):
        base, q = exponent_form(node)
        yield "exponent_sign", False, lambda: power(base, -q)
    yield "scale", isinstance(node, ZeroMatrix), lambda: mul(2, node)


def kind_of(label: str) -> str:
    """The mutation kind in a step-expression mutant's label ('main step 3: swap[1]@(0,)' -> 'swap')."""
    return label.split(": ", 1)[1].split("@")[0].split("[")[0].removesuffix(" (neutral)")


def term_mutants(term: Basic) -> dict[str, list[tuple[str, Basic]]]:
    """Mutants of ``term`` by kind: (label, mutated term); only those with a new canonical form."""
    with metered(None):  # one memo of normal forms for the term and its mutants, which share most sub-terms
        return _term_mutants(term)


def _term_mutants(term: Basic) -> dict[str, list[tuple[str, Basic]]]:
    original = canon(term)
    normal = canon(original)  # what a mutant's normal form is compared with (same_term), computed once
    out: dict[str, list[tuple[str, Basic]]] = {}
    for path, node in positions(original):
        for kind, neutral, build in node_mutations(node):
            try:
                mutated = replace_at(original, path, build())
            except TermError:
                continue  # cannot be built
            try:
                if canon(mutated) == normal:
                    continue
            except TermError:
                pass  # no normal form: not the same term (as same_term says)
            label = f"{kind}@{path}" + (" (neutral)" if neutral else "")
            out.setdefault(kind.split("[")[0], []).append((label, mutated))
    return out


def sample(rng: random.Random, items: list, limit: int | None) -> list:
    if limit is None or len(items) <= limit:
        return list(items)
    return rng.sample(items, limit)


# --- (a) step expressions -----------------------------------------------------------------------


@functools.cache
def step_expression_mutants(theorem_id: str) -> tuple[Mutant, ...]:
    proof, rng, out = proof_of(theorem_id), random.Random(0), []
    total_steps = sum(len(c.steps) for c in chains(proof))
    per_step = None if STEP_MUTANTS_PER_THEOREM is None else max(3, -(-STEP_MUTANTS_PER_THEOREM // total_steps))
    for ci, part, name, chain_steps in parts(proof):
        for si, step in enumerate(chain_steps):
            picked = []
            for _, items in sorted(term_mutants(step.expr).items()):
                picked += sample(rng, items, STEP_MUTANTS_PER_KIND)
            for where, expr in sample(rng, picked, per_step):
                steps = list(chain_steps)
                steps[si] = dataclasses.replace(step, expr=expr)
                out.append(Mutant(f"{name} step {si + 1}: {where}", with_steps(proof, ci, steps, part)))
    return tuple(out)


# --- (b) rule renames ---------------------------------------------------------------------------


def rule_names(proof: Proof) -> list[str]:
    names = list(AXIOMS) + ["no_such_rule", "hyp:no_such_hypothesis"]
    names += [f"hyp:{h.name}" for h in proof.hypotheses]
    names += [f"def:{d.name}" for d in proof.definitions]
    names += [f"lemma:{c.name}" for c in proof.lemmas]
    names += [f"hyp:{h.name}" for c in chains(proof) for h in c.hypotheses]
    if any(isinstance(c, Induction) for c in chains(proof)):
        names.append("hyp:IH")
    names += [f"{kind}:{f.name}" for f in proof.families if f.is_defined for kind in ("base", "step")]
    return list(dict.fromkeys(names))


@functools.cache
def rename_mutants(theorem_id: str) -> tuple[Mutant, ...]:
    proof, rng, out = proof_of(theorem_id), random.Random(0), []
    names = rule_names(proof)
    for ci, part, label, chain_steps in parts(proof):
        for si, step in enumerate(chain_steps):
            others = [n for n in names if n != step.rule and n != "no_such_rule"]
            for name in ["no_such_rule", *sample(rng, others, RENAMES_PER_STEP)]:
                steps = list(chain_steps)
                steps[si] = dataclasses.replace(step, rule=name)
                out.append(Mutant(f"{label} step {si + 1}: {step.rule} -> {name}",
                                  with_steps(proof, ci, steps, part)))
    return tuple(out)


# --- (c), (d) hypotheses ------------------------------------------------------------------------


def hypothesis_sites(proof: Proof) -> list[tuple[str, Hypothesis, Callable[[Hypothesis | None], Proof]]]:
    """Every hypothesis (global and local) with a function replacing (or, given None, dropping) it."""
    sites = []
    for hi, h in enumerate(proof.hypotheses):
        def put(new: Hypothesis | None, hi: int = hi) -> Proof:
            hyps = list(proof.hypotheses)
            hyps[hi : hi + 1] = [] if new is None else [new]
            return dataclasses.replace(proof, hypotheses=tuple(hyps))

        sites.append((f"global {h.name}", h, put))
    for ci, chain in enumerate(chains(proof)):
        for hi, h in enumerate(chain.hypotheses):
            def put(new: Hypothesis | None, ci: int = ci, chain: Chain = chain, hi: int = hi) -> Proof:
                hyps = list(chain.hypotheses)
                hyps[hi : hi + 1] = [] if new is None else [new]
                return with_chain(proof, ci, dataclasses.replace(chain, hypotheses=tuple(hyps)))

            sites.append((f"{chain.name} local {h.name}", h, put))
    return sites


def dropped_hypothesis_mutants(theorem_id: str) -> list[Mutant]:
    proof = proof_of(theorem_id)
    return [Mutant(f"drop {where}", put(None)) for where, _, put in hypothesis_sites(proof)]


def matrix_symbols(proof: Proof) -> list[MatrixSymbol]:
    found: set = set()
    for term in (*[x for h in proof.hypotheses for x in (h.lhs, h.rhs)],
                 *[x for d in proof.definitions for x in (d.symbol, d.rhs)],
                 *[x for c in chains(proof) for x in (c.lhs, c.rhs)]):
        found |= term.atoms(MatrixSymbol)
    return sorted(found, key=lambda m: m.name)


def side_mutants(side: Basic) -> list[tuple[str, Basic]]:
    """Scaled, transposed, and each adjacent pair of factors swapped."""
    out = [("scaled", mul(2, side)), ("transposed", transpose(side))]
    coeff, mats = factors_of(canon(side))
    for i in range(len(mats) - 1):
        try:
            out.append((f"swap {i}", mul(coeff, [*mats[:i], mats[i + 1], mats[i], *mats[i + 2 :]])))
        except TermError:
            continue
    return [(label, t) for label, t in out if not same_term(t, side)]


def altered_hypothesis_mutants(theorem_id: str) -> list[Mutant]:
    proof, out = proof_of(theorem_id), []
    symbols = matrix_symbols(proof)
    for where, h, put in hypothesis_sites(proof):
        if isinstance(h.lhs, AppliedPredicate) and h.lhs.function in SCALAR_PREDICATES.values():
            # a scalar fact c ≠ 0 (issue 41): about a scalar that merely contains c it says nothing of c
            subject = h.lhs.arguments[0]
            for other in (subject - 1, subject + 1):
                altered = dataclasses.replace(h, lhs=h.lhs.function(other))
                out.append(Mutant(f"{where}: applied to {other}", put(altered)))
            out.append(Mutant(f"{where}: rhs false", put(dataclasses.replace(h, rhs=S.false))))
            continue
        if isinstance(h.lhs, AppliedPredicate):
            subject = h.lhs.arguments[0]
            old = next(name for name, predicate in PREDICATES.items() if predicate == h.lhs.function)
            for name, predicate in PREDICATES.items():
                if name != old:
                    new = dataclasses.replace(h, lhs=predicate(subject))
                    out.append(Mutant(f"{where}: predicate {old} -> {name}", put(new)))
            others = [m for m in symbols if m != subject and m.shape == subject.shape] + [mul(2, subject)]
            for other in others:
                new = dataclasses.replace(h, lhs=h.lhs.function(other))
                out.append(Mutant(f"{where}: applied to {other}", put(new)))
            out.append(Mutant(f"{where}: rhs false", put(dataclasses.replace(h, rhs=S.false))))
            continue
        for label, new in side_mutants(h.lhs):
            out.append(Mutant(f"{where}: lhs {label}", put(dataclasses.replace(h, lhs=new))))
        for label, new in side_mutants(h.rhs):
            out.append(Mutant(f"{where}: rhs {label}", put(dataclasses.replace(h, rhs=new))))
    return out


# --- (e) claims ---------------------------------------------------------------------------------


def claim_mutants(theorem_id: str) -> list[Mutant]:
    proof, out = proof_of(theorem_id), []
    all_chains = chains(proof)
    for ci, chain in enumerate(all_chains):
        def put(label: str, ci: int = ci, chain: Chain = chain, **changes: Basic) -> None:
            out.append(Mutant(f"{chain.name}: {label}", with_chain(proof, ci, dataclasses.replace(chain, **changes))))

        put("lhs scaled", lhs=mul(2, chain.lhs))
        put("rhs scaled", rhs=mul(2, chain.rhs))
        if not same_term(chain.lhs, chain.rhs):
            put("sides swapped", lhs=chain.rhs, rhs=chain.lhs)
            put("rhs := lhs", rhs=chain.lhs)
        put("rhs transposed", rhs=transpose(chain.rhs))
        if not isinstance(chain.rhs, ZeroMatrix):  # else it is no mutant: the chain already says rhs = 0
            put("rhs := 0", rhs=ZeroMatrix(*chain.rhs.shape))
        for other in all_chains:
            if other is not chain and other.rhs.shape == chain.rhs.shape and not same_term(other.rhs, chain.rhs):
                put(f"rhs := rhs of {other.name}", rhs=other.rhs)
    return out


# --- (f) definitions ----------------------------------------------------------------------------


def definition_mutants(theorem_id: str) -> list[Mutant]:
    proof, out = proof_of(theorem_id), []
    for di, d in enumerate(proof.definitions):
        def put(label: str, rhs: Basic, di: int = di, d: Definition = d) -> None:
            defs = list(proof.definitions)
            defs[di] = dataclasses.replace(d, rhs=rhs)
            out.append(Mutant(f"def {d.name}: {label}", dataclasses.replace(proof, definitions=tuple(defs))))

        rhs = canon(d.rhs)
        put("scaled", mul(2, rhs))
        for path, node in positions(rhs):
            if isinstance(node, (MatPow, Inverse)):
                base, q = exponent_form(node)
                put(f"exponent sign @{path}", replace_at(rhs, path, power(base, -q)))
            if isinstance(node, (MatrixSymbol, Identity)):
                put(f"factor transposed @{path}", replace_at(rhs, path, transpose(node)))
            if isinstance(node, ZeroMatrix):  # a zero that is not zero (β₀ := 0 becomes any matrix)
                put(f"zero replaced @{path}", replace_at(rhs, path, MatrixSymbol("Mutant", *node.shape)))
    return out


# --- (g) step order -----------------------------------------------------------------------------


@functools.cache
def step_order_mutants(theorem_id: str) -> tuple[Mutant, ...]:
    proof, out = proof_of(theorem_id), []
    for ci, part, name, chain_steps in parts(proof):
        steps = list(chain_steps)

        def put(label: str, new: list[Step], ci: int = ci, part: str = part, name: str = name) -> None:
            out.append(Mutant(f"{name}: {label}", with_steps(proof, ci, new, part)))

        for i in range(len(steps)):
            put(f"step {i + 1} deleted", steps[:i] + steps[i + 1 :])
            put(f"step {i + 1} duplicated", steps[: i + 1] + [steps[i]] + steps[i + 1 :])
            if i + 1 < len(steps) and steps[i] != steps[i + 1]:
                put(f"steps {i + 1} and {i + 2} swapped", [*steps[:i], steps[i + 1], steps[i], *steps[i + 2 :]])
        if steps[::-1] != steps:
            put("reversed", steps[::-1])
    limit = order_mutants_per(theorem_id)
    if limit is None or len(out) <= limit:
        return tuple(out)
    # every kind in the sample (a chain reversed is one mutant among hundreds), then the rest at random
    kinds: dict[str, list[Mutant]] = {}
    for mutant in out:
        kinds.setdefault(order_kind(mutant.label), []).append(mutant)
    rng = random.Random(0)
    first = [rng.choice(group) for _, group in sorted(kinds.items())]
    rest = [m for m in out if all(m is not f for f in first)]
    return tuple(first + rng.sample(rest, max(0, limit - len(first))))


def order_kind(label: str) -> str:
    """The kind of a re-ordered-step mutant ('main: step 3 deleted' -> 'step # deleted')."""
    return re.sub(r"\d+", "#", label.split(": ", 1)[-1])


def order_mutants_per(theorem_id: str) -> int | None:
    """How many of a theorem's re-ordered, deleted and duplicated steps are checked (COSTLY ones: fewer)."""
    if ORDER_MUTANTS_PER_THEOREM is None:
        return None
    return max(12, ORDER_MUTANTS_PER_THEOREM // COSTLY.get(theorem_id, 1))


# --- (h) instances of a universally quantified hypothesis ---------------------------------------


def instance_sites(proof: Proof) -> list[tuple[int, str, int, Step]]:
    return [(ci, part, si, s) for ci, part, _, steps in parts(proof) for si, s in enumerate(steps) if s.instance]


def instance_mutants(theorem_id: str) -> list[Mutant]:
    proof, out = proof_of(theorem_id), []
    symbols = matrix_symbols(proof)
    dims = sorted({d for m in symbols for d in m.shape[0].free_symbols | m.shape[1].free_symbols}, key=str)
    for ci, part, si, step in instance_sites(proof):
        chain = chains(proof)[ci]

        def put(label: str, instance: list, ci: int = ci, si: int = si, step: Step = step,
                chain: Chain = chain, part: str = part) -> None:
            steps = list(getattr(chain, part))
            steps[si] = dataclasses.replace(step, instance=tuple(instance))
            out.append(Mutant(f"{chain.name} {part} step {si + 1}: instance {label}",
                              with_steps(proof, ci, steps, part)))

        pairs = list(step.instance)
        put("emptied", [])
        put("extra pair", [*pairs, (MatrixSymbol("Extra", 1, 1), Identity(1))])
        put("pair repeated", [*pairs, pairs[0]])
        for k, (var, val) in enumerate(pairs):
            def at(new_val: Basic, k: int = k, var: Basic = var, pairs: list = pairs) -> list:
                return [*pairs[:k], (var, new_val), *pairs[k + 1 :]]

            put(f"{var} dropped", pairs[:k] + pairs[k + 1 :])
            if isinstance(var, Symbol):
                for new in [*dims, Integer(1), Integer(2), val + 1, Integer(0)]:
                    if new != val:
                        put(f"{var} := {new}", at(new))
            else:
                candidates = [mul(2, val), transpose(val), ZeroMatrix(*val.shape), Identity(val.shape[0])]
                candidates += [m for m in symbols if m.shape == val.shape]
                candidates += [v for _, v in pairs if isinstance(v, MatrixSymbol) or not isinstance(v, Symbol)]
                for new in candidates:
                    if not same_term(new, val):
                        put(f"{var} := {new}", at(new))
        values = [v for _, v in pairs]
        rotated = [(var, values[(k + 1) % len(values)]) for k, (var, _) in enumerate(pairs)]
        if any(new != old and not same_term(new, old) for (_, new), (_, old) in zip(rotated, pairs, strict=True)):
            put("values rotated", rotated)  # one pair, or equal values, rotate to the same instance: no mutant
    return out


# --- which accepted mutants are legitimate ----------------------------------------------------

#: Hypothesis mutants that may be accepted, with the reason the mutated statement is still true.
#: A predicate replaced by a weaker one the proof only uses in its weaker form (diagonal -> symmetric:
#: the kernel uses diagonality only as symmetry; positive definite -> invertible where only the
#: inverse is taken), or by a stronger one (invertible -> positive definite, symmetric -> diagonal),
#: which weakens the theorem.
ACCEPTABLE_PREDICATE_CHANGES = {
    ("diagonal", "symmetric"),  # Λ or S symmetric (and positive definite / invertible) is all the proof needs
    ("positive_definite", "invertible"),  # only the inverse of S or of XᵀX is taken in these proofs
    ("invertible", "positive_definite"),  # a stronger hypothesis: the theorem gets weaker
    ("symmetric", "diagonal"),  # a stronger hypothesis
}


def acceptable_hypothesis_mutant(label: str) -> bool:
    if ": predicate " not in label:
        return False
    old, new = label.split(": predicate ", 1)[1].split(" -> ")
    return (old, new) in ACCEPTABLE_PREDICATE_CHANGES


def describe(items: list[tuple[Mutant, Theorem]]) -> str:
    return "\n".join(m.label for m, _ in items)


# --- the tests ----------------------------------------------------------------------------------


@pytest.mark.parametrize("theorem_id", THEOREM_IDS)
def test_unmutated_proof_checks(theorem_id: str):
    theorem = check(proof_of(theorem_id))
    assert theorem.id == theorem_id and theorem.steps > 0


@pytest.mark.parametrize("theorem_id", TIERED_IDS)
def test_step_expression_mutants_are_rejected(theorem_id: str):
    generated = list(step_expression_mutants(theorem_id))
    steps = sum(len(c.steps) for c in chains(proof_of(theorem_id)))
    assert len(generated) >= 2 * steps
    mutants = sample(random.Random(1), generated, checked_per(theorem_id))
    kinds = {"swap", "drop", "duplicate", "transpose", "scale"}
    for kind in sorted(kinds - {kind_of(m.label) for m in mutants}):  # a small sample still has every kind
        mutants.append(random.Random(kind).choice([m for m in generated if kind_of(m.label) == kind]))
    assert kinds <= {kind_of(m.label) for m in mutants}
    bad = [(m, t) for m, t in accepted(mutants) if not m.label.endswith("(neutral)")]
    assert not bad, f"{len(bad)} mutated step expressions accepted:\n{describe(bad)}"


@pytest.mark.slow
def test_step_expression_mutants_are_many():
    counts = {tid: len(step_expression_mutants(tid)) for tid in THEOREM_IDS}
    assert sum(counts.values()) >= (800 if not FULL else 5000), counts
    kinds = {kind_of(m.label) for tid in THEOREM_IDS for m in step_expression_mutants(tid)}
    assert kinds == {"swap", "drop", "duplicate", "transpose", "untranspose", "exponent_sign", "scale"}


@pytest.mark.parametrize("theorem_id", TIERED_IDS)
def test_renamed_rules_are_rejected_or_prove_the_same_statement(theorem_id: str):
    generated = list(rename_mutants(theorem_id))
    assert len(generated) >= 3 * sum(len(c.steps) for c in chains(proof_of(theorem_id)))  # sampled
    mutants = sample(random.Random(1), generated, checked_per(theorem_id))
    unknown = sum("no_such" in m.label.split(" -> ")[1] for m in mutants)
    if CHECKED_PER_THEOREM is None:  # SOUNDNESS_FULL: every mutant is checked, an unknown rule at every step
        assert unknown >= sum(len(c.steps) for c in chains(proof_of(theorem_id)))
    else:  # a sample: unknown rules in it at about their share of the steps' mutants, not crowded out
        assert unknown >= len(mutants) // 5
    original = statement(proof_of(theorem_id))
    ok = accepted(mutants)
    for mutant, theorem in ok:
        assert statement(theorem.proof) == original, mutant.label
        assert "no_such" not in mutant.label.split(" -> ")[1], mutant.label
    # a rename is accepted only when the new rule really relates the two expressions; most are not
    assert len(ok) <= len(mutants) // 10, describe(ok)


@pytest.mark.parametrize("theorem_id", TIERED_IDS)
def test_every_hypothesis_is_needed(theorem_id: str):
    proof = proof_of(theorem_id)
    mutants = dropped_hypothesis_mutants(theorem_id)
    # one mutant per hypothesis, global or local (kernel_ridge_push_through has none: λ > 0 is a scalar's kind)
    assert len(mutants) == len(proof.hypotheses) + sum(len(c.hypotheses) for c in chains(proof))
    bad = accepted(mutants)
    assert not bad, f"hypotheses not needed:\n{describe(bad)}"


@pytest.mark.parametrize("theorem_id", TIERED_IDS)
def test_altered_hypotheses_are_rejected(theorem_id: str):
    mutants = altered_hypothesis_mutants(theorem_id)
    assert len(mutants) >= 3 * len(hypothesis_sites(proof_of(theorem_id)))
    # A hypothesis the proof does not need at all may be altered freely: that redundancy is what
    # test_every_hypothesis_is_needed reports, so it is not reported twice here.
    redundant = {m.label.removeprefix("drop ") for m, _ in accepted(dropped_hypothesis_mutants(theorem_id))}
    bad = [(m, t) for m, t in accepted(mutants)
           if not acceptable_hypothesis_mutant(m.label) and m.label.split(": ", 1)[0] not in redundant]
    assert not bad, f"altered hypotheses accepted:\n{describe(bad)}"


@pytest.mark.parametrize("theorem_id", TIERED_IDS)
def test_altered_claims_are_rejected(theorem_id: str):
    mutants = claim_mutants(theorem_id)
    assert len(mutants) >= 5 * len(chains(proof_of(theorem_id)))
    bad = accepted(mutants)
    assert not bad, f"altered claims accepted:\n{describe(bad)}"


@pytest.mark.parametrize("theorem_id", TIERED_IDS)
def test_altered_definitions_are_rejected(theorem_id: str):
    mutants = definition_mutants(theorem_id)
    if not proof_of(theorem_id).definitions:
        assert mutants == []
        return
    assert len(mutants) >= 2 * len(proof_of(theorem_id).definitions)
    bad = accepted(mutants)
    assert not bad, f"altered definitions accepted:\n{describe(bad)}"


@pytest.mark.parametrize("theorem_id", TIERED_IDS)
def test_reordered_deleted_and_duplicated_steps_are_rejected(theorem_id: str):
    mutants = list(step_order_mutants(theorem_id))
    steps = sum(len(c.steps) for c in chains(proof_of(theorem_id)))
    assert len(mutants) >= min(2 * steps, order_mutants_per(theorem_id) or 2 * steps)
    kinds = {order_kind(m.label) for m in mutants}
    assert {"step # deleted", "step # duplicated"} <= kinds, kinds
    bad = accepted(mutants)
    assert not bad, f"re-ordered steps accepted:\n{describe(bad)}"


INSTANCE_THEOREMS = [tid for tid in THEOREM_IDS if instance_sites(proof_of(tid))]


def test_instances_occur_in_forall_hypotheses_and_citations():
    proof = proof_of("preconditioned_gd")
    assert "ols_only_if" in [chains(proof)[ci].name for ci, _, _, _ in instance_sites(proof)]
    cited = [s for tid in INSTANCE_THEOREMS for _, _, _, s in instance_sites(proof_of(tid))
             if s.rule.startswith("thm:")]
    assert len(cited) >= 4  # spectral_precision and gauge_invariance cite the orthogonal-inverse theorems


@pytest.mark.parametrize("theorem_id", tiered(INSTANCE_THEOREMS))
def test_altered_instances_are_rejected(theorem_id: str):
    generated = instance_mutants(theorem_id)
    assert len(generated) >= 20
    bad = accepted(sample(random.Random(1), generated, checked_per(theorem_id, half=True)))
    assert not bad, f"altered instances accepted:\n{describe(bad)}"


def citation_mutants(theorem_id: str) -> list[Mutant]:
    """Steps citing another (or an unknown, or the same) theorem; citation lists emptied, shortened, repeated."""
    proof, out = proof_of(theorem_id), []
    rules = [f"thm:{t.id}" for t in proof.cites]
    for ci, part, name, chain_steps in parts(proof):
        for si, step in enumerate(chain_steps):
            if not step.rule.startswith("thm:"):
                continue
            for other in [r for r in rules if r != step.rule] + ["thm:no_such_theorem", f"thm:{theorem_id}"]:
                steps = list(chain_steps)
                steps[si] = dataclasses.replace(step, rule=other)
                out.append(Mutant(f"{name} step {si + 1}: cites {other}", with_steps(proof, ci, steps, part)))
    if proof.cites:
        out.append(Mutant("citations emptied", dataclasses.replace(proof, cites=())))
        for k, cited in enumerate(proof.cites):
            out.append(Mutant(f"citation of {cited.id} dropped",
                              dataclasses.replace(proof, cites=proof.cites[:k] + proof.cites[k + 1 :])))
        out.append(Mutant("citation repeated", dataclasses.replace(proof, cites=proof.cites + proof.cites[:1])))
        out.append(Mutant("citation of a proof, not a theorem",
                          dataclasses.replace(proof, cites=(proof.cites[0].proof, *proof.cites[1:]))))
    return out


CITING_THEOREMS = [tid for tid in THEOREM_IDS if proof_of(tid).cites]


def test_the_library_cites_its_shared_facts():
    assert {"spectral_precision", "ols_is_linear_attention", "paper_construction", "icl_token_form",
            "slow_fast_memory", "gauge_invariance"} <= set(CITING_THEOREMS)


@pytest.mark.parametrize("theorem_id", CITING_THEOREMS)
def test_altered_citations_are_rejected(theorem_id: str):
    mutants = citation_mutants(theorem_id)
    assert len(mutants) >= 5
    bad = accepted(mutants)
    assert not bad, f"altered citations accepted:\n{describe(bad)}"


@pytest.mark.slow
def test_mutant_classes_are_large():
    """The mutation classes together give thousands of mutants over the library."""
    generators = [step_expression_mutants, rename_mutants, dropped_hypothesis_mutants, altered_hypothesis_mutants,
                  claim_mutants, definition_mutants, step_order_mutants]
    generators += [instance_mutants, citation_mutants]
    if not FULL:  # enough to count up to the bound, cheapest theorems first (generating them all took a minute)
        total = 0
        for tid in sorted(THEOREM_IDS, key=lambda t: sum(len(c.steps) for c in chains(proof_of(t)))):
            total += sum(len(g(tid)) for g in generators)
            if total >= 2500:
                break
        assert total >= 2500
        return
    total = sum(len(g(tid)) for g in generators for tid in THEOREM_IDS)
    steps = sum(len(c.steps) for tid in THEOREM_IDS for c in chains(proof_of(tid)))
    # per checked step: the shared facts are proved once and cited now, so the library has fewer steps
    assert total >= 70 * steps


# --- forall hypotheses: a few direct checks -----------------------------------------------------


def _ols_only_if_with(instance) -> Proof:
    proof = proof_of("preconditioned_gd")
    ci, part, si, step = instance_sites(proof)[0]
    steps = list(getattr(chains(proof)[ci], part))
    steps[si] = dataclasses.replace(step, instance=tuple(instance))
    return with_steps(proof, ci, steps, part)


def test_forall_hypothesis_needs_its_instance():
    proof = proof_of("preconditioned_gd")
    _, _, _, step = instance_sites(proof)[0]
    assert outcome(_ols_only_if_with(step.instance)) is not None
    with pytest.raises(ProofError, match="instantiate"):
        check(_ols_only_if_with(()))


# --- Theorem objects ----------------------------------------------------------------------------


def test_theorem_cannot_be_constructed_outside_the_kernel():
    proof = proof_of("ols_is_linear_attention")
    for token in (None, object(), "kernel", Theorem):
        with pytest.raises(TypeError):
            Theorem(token, proof, "0" * 64, 0.0)


def test_theorem_is_immutable():
    theorem = check(proof_of("ols_is_linear_attention"))
    for name, value in (("statement", "anything"), ("id", "other"), ("proof", None), ("digest", "0" * 64)):
        with pytest.raises(AttributeError):
            setattr(theorem, name, value)
    with pytest.raises(AttributeError):
        theorem.extra = 1
    assert theorem.id == "ols_is_linear_attention"
    assert theorem.proof == proof_of("ols_is_linear_attention")  # equal, but the theorem's own copy


def test_proof_data_is_frozen():
    proof = proof_of("ols_is_linear_attention")
    with pytest.raises(dataclasses.FrozenInstanceError):
        proof.claim = proof.lemmas[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        proof.claim.steps[0].rule = "identity_mul"


# --- deep and large terms -----------------------------------------------------------------------

_p = Symbol("p", integer=True, positive=True)
_A = MatrixSymbol("A", _p, _p)


def _nested_transpose(depth: int) -> Basic:
    term = _A
    for _ in range(depth):
        term = Transpose(term)
    return term


def _small_proof(lhs: Basic, rhs: Basic, steps=(), hypotheses=()) -> Proof:
    return Proof("t", "t", "t", tuple(hypotheses), (), (), Chain("main", lhs, rhs, tuple(steps)))


@pytest.mark.parametrize("where", ["claim", "step", "hypothesis"])
def test_deeply_nested_transpose_is_refused_quickly(where: str):
    deep = _nested_transpose(2000)
    if where == "claim":
        proof = _small_proof(deep, _A)
    elif where == "step":
        proof = _small_proof(_A, _A, [Step(deep, "transpose_transpose"), Step(_A, "transpose_transpose")])
    else:
        proof = _small_proof(_A, _A, hypotheses=[Hypothesis("deep", deep, _A)])
    start = time.perf_counter()
    # Refused with an error, not a crash or a hang.  (Today the kernel raises RecursionError from
    # SymPy's tree walk or from canon, not ProofError: see the report; both are acceptable here.)
    with pytest.raises((ProofError, RecursionError)):
        check(proof)
    assert time.perf_counter() - start < 5


def test_moderately_deep_transpose_is_checked():
    # 200 transposes of A: an even number, so the chain of transpose_transpose steps proves A = A
    term, steps = _nested_transpose(200), []
    current = term
    while current != _A:
        current = current.args[0].args[0]
        steps.append(Step(current, "transpose_transpose"))
    start = time.perf_counter()
    theorem = check(_small_proof(term, _A, steps))
    assert theorem.steps == 100
    with pytest.raises(ProofError):
        check(_small_proof(term, _A, steps[:-1]))
    assert time.perf_counter() - start < 20


def test_long_product_is_handled():
    factors = [MatrixSymbol(f"M{i}", _p, _p) for i in range(60)]
    lhs = mul(factors)
    rhs = mul(factors[:30], Identity(_p), factors[30:])
    start = time.perf_counter()
    assert outcome(_small_proof(lhs, rhs, [Step(rhs, "identity_mul")])) is not None
    assert outcome(_small_proof(lhs, mul(factors[::-1]), [Step(mul(factors[::-1]), "identity_mul")])) is None
    assert time.perf_counter() - start < 20


# --- kernel bugs found by these tests (each test states the correct behaviour, and fails today) ---

_q = Symbol("q", integer=True, positive=True)
_n = Symbol("n", integer=True, positive=True)
_B = MatrixSymbol("B", _p, _p)


def test_kernel_bug_forward_referencing_definitions_are_circular():
    """KERNEL BUG: definitions A := B, B := A + I are accepted (B is "fresh" when A is defined).

    Together they say A = A + I, which no matrices satisfy, so the definitions constrain their
    symbols (the module docstring says definitions never constrain anything) and the kernel
    proves the theorem A = A + I.  A definition's symbol must not occur in an earlier definition.
    """
    I_p = Identity(_p)
    proof = Proof("circular", "circular", "A = A + I", (),
                  (Definition("A", _A, _B), Definition("B", _B, add(_A, I_p))), (),
                  Chain("main", _A, add(_A, I_p), (Step(_B, "def:A"), Step(add(_A, I_p), "def:B"))))
    with pytest.raises(ProofError):
        check(proof)


@pytest.mark.parametrize(
    "lhs, rhs",
    [
        (MatMul(0, Inverse(_A), evaluate=False), ZeroMatrix(_p, _p)),  # A⁻¹ of an arbitrary A
        (MatMul(0, _A, MatrixSymbol("K", _q, _q), evaluate=False), ZeroMatrix(_p, _q)),  # p x p times q x q
        (MatPow(MatrixSymbol("X", _n, _p), 0), Identity(_n)),  # power of a non-square matrix
        (MatPow(MatrixSymbol("X", _n, _p), 1), MatrixSymbol("X", _n, _p)),
        (MatPow(Inverse(_A), 0), Identity(_p)),
    ],
    ids=["zero_times_inverse", "zero_times_nonconforming", "X_pow_0", "X_pow_1", "inverse_pow_0"],
)
def test_kernel_bug_canon_erases_undefined_subterms(lhs: Basic, rhs: Basic):
    """KERNEL BUG: definedness is checked after ``canon``, which drops sub-terms (0·M -> 0, M^0 -> I, M^1 -> M).

    So a claim whose side is undefined (A⁻¹ with nothing known about A, a product of
    non-conforming matrices, a power of a non-square matrix) is accepted with no steps at all,
    although the kernel's semantics says both sides of a theorem are defined.
    """
    with pytest.raises(ProofError):
        check(_small_proof(lhs, rhs))


@pytest.mark.parametrize("value", [Rational(1, 2), Integer(-1)], ids=["half", "minus_one"])
def test_kernel_bug_non_dimension_instance_raises_a_bare_valueerror(value: Basic):
    """KERNEL BUG (robustness): instantiating a bound dimension with 1/2 or -1 escapes as SymPy's ValueError.

    ``check`` should raise ProofError for every bad proof; here the instance check lets a value with
    no free symbols through as a "dimension", and SymPy then fails building MatrixSymbol(A, 1/2, p).
    """
    proof = proof_of("preconditioned_gd")
    _, _, _, step = instance_sites(proof)[0]
    dim = next(v for v, _ in step.instance if isinstance(v, Symbol))
    instance = [(v, value if v == dim else t) for v, t in step.instance]
    with pytest.raises(ProofError):
        check(_ols_only_if_with(instance))


def test_kernel_bug_theorem_attributes_can_be_deleted():
    """KERNEL BUG (minor): Theorem blocks setattr but not delattr, so ``del theorem.statement`` works."""
    theorem = check(_small_proof(_A, _A))
    with pytest.raises(AttributeError):
        del theorem.statement
    assert theorem.statement == "t"


def test_sanity_kernel_rejects_plain_false_claims():
    """Guards the tests above: a false claim without a proof is rejected."""
    with pytest.raises(ProofError):
        check(_small_proof(_A, transpose(_A)))
    with pytest.raises(ProofError):
        check(_small_proof(_A, _B, [Step(_B, "transpose_symmetric")]))
    predicate_only = Hypothesis("A_pd", Q.positive_definite(_A), S.true)
    with pytest.raises(ProofError):
        check(_small_proof(transpose(_A), _A, [Step(_A, "transpose_symmetric")], [predicate_only]))


def test_collect_mutants_are_rejected():
    """Collecting like terms: the right coefficient is accepted, every other result of one collect step is not."""
    C, D = MatrixSymbol("C", 2, 3), MatrixSymbol("D", 2, 3)
    two_terms = add(mul(2, C), mul(3, C), D)
    assert isinstance(check(_small_proof(two_terms, add(mul(5, C), D), [Step(add(mul(5, C), D), "collect")])), Theorem)
    cancel = add(C, mul(-1, C))
    assert isinstance(check(_small_proof(cancel, ZeroMatrix(2, 3), [Step(ZeroMatrix(2, 3), "collect")])), Theorem)
    wrong = [add(mul(6, C), D), add(mul(4, C), D), mul(5, C), add(mul(5, D), C), add(mul(5, C), mul(-1, D)),
             add(mul(5, C), transpose(transpose(D)))]
    for value in wrong:
        with pytest.raises(ProofError):
            check(_small_proof(two_terms, value, [Step(value, "collect")]))
    for value in (C, mul(-1, C), mul(2, C), ZeroMatrix(3, 2)):
        with pytest.raises(ProofError):
            check(_small_proof(cancel, value, [Step(value, "collect")]))
    unlike = add(mul(2, C), mul(3, D))  # different matrix parts never collect
    with pytest.raises(ProofError):
        check(_small_proof(unlike, mul(5, C), [Step(mul(5, C), "collect")]))




def witness_holds(proof: Proof) -> bool:
    """The oracle for an accepted mutant: the independent witness finds every step true on its samples."""
    try:
        check_instances(proof, trials=1)
    except WitnessError:
        return False
    return True


def misapplied_rule_mutants(theorem_id: str) -> list[Mutant]:
    """The one step and the claim changed together: the rule is asked to justify a mutated right-hand side."""
    proof, out = proof_of(theorem_id), []
    claim = proof.claim
    others = [(label, new) for items in term_mutants(claim.rhs).values() for label, new in items]
    others += [("rhs := a fresh matrix", MatrixSymbol("Fresh", *claim.rhs.shape))]
    if not isinstance(claim.rhs, ZeroMatrix):
        others.append(("rhs := 0", ZeroMatrix(*claim.rhs.shape)))
    for label, new in others:
        steps = (dataclasses.replace(claim.steps[-1], expr=new),)
        out.append(Mutant(f"rhs {label}", dataclasses.replace(proof, claim=dataclasses.replace(
            claim, rhs=new, steps=steps))))
    return out


def test_every_new_rule_has_a_proof_and_the_library_uses_base_and_step_rules():
    assert {proof_of(tid).claim.steps[0].rule for tid in RULE_IDS} - {"hyp:lam_mu"} == NEW_RULES <= set(AXIOMS)
    used = {s.rule.split(":")[0] for tid in THEOREM_IDS for _, _, _, steps in parts(proof_of(tid)) for s in steps}
    assert {"base", "step", "hyp", "lemma", "thm"} <= used


@pytest.mark.parametrize("theorem_id", RULE_IDS)
def test_rule_proof_checks(theorem_id: str):
    assert check(proof_of(theorem_id)).steps == 1
    assert witness_holds(proof_of(theorem_id))


@pytest.mark.parametrize("theorem_id", RULE_IDS)
def test_misapplied_rules_are_rejected_unless_still_true(theorem_id: str):
    mutants = misapplied_rule_mutants(theorem_id)
    assert len(mutants) >= 3
    assert not witness_holds(mutants[-1].proof)  # the oracle refutes a fresh matrix or 0 as the right-hand side
    bad = [(m, t) for m, t in accepted(mutants) if not m.label.endswith("(neutral)") and not witness_holds(m.proof)]
    assert not bad, f"a rule justified a false step:\n{describe(bad)}"


@pytest.mark.parametrize("theorem_id", RULE_IDS)
def test_rule_proof_mutants_are_rejected(theorem_id: str):
    """Renamed rules, mutated steps and claims of the one-step proofs (an accepted one must still be true)."""
    mutants = [*rename_mutants(theorem_id), *step_expression_mutants(theorem_id), *claim_mutants(theorem_id)]
    assert len(mutants) >= 5
    original = statement(proof_of(theorem_id))
    bad = [(m, t) for m, t in accepted(mutants) if not m.label.endswith("(neutral)")
           and not (statement(t.proof) == original and witness_holds(m.proof))]
    assert not bad, f"mutants of a one-step proof accepted:\n{describe(bad)}"


def test_library_steps_with_new_rules_are_mutated():
    """Every step of the library citing a new rule is among the mutated ones (sampled runs included)."""
    for tid in THEOREM_IDS:
        proof = proof_of(tid)
        for _, _, name, steps in parts(proof):
            for si, step in enumerate(steps):
                if step.rule in NEW_RULES or step.rule.split(":")[0] in ("base", "step"):
                    assert any(m.label.startswith(f"{name} step {si + 1}: {step.rule} -> ")
                               for m in rename_mutants(tid)), (tid, name, si)


# --- induction lemmas and recurrences -----------------------------------------------------------

INDUCTION_THEOREMS = [tid for tid in THEOREM_IDS if any(isinstance(c, Induction) for c in chains(proof_of(tid)))]
FAMILY_THEOREMS = [tid for tid in THEOREM_IDS if any(f.is_defined for f in proof_of(tid).families)]


def induction_mutants(theorem_id: str) -> list[Mutant]:
    """A wrong base, base and step swapped, the step citing the claim at t + 1 or at t as a lemma (circular),
    the induction hypothesis used where the step chain must rewrite, a renamed induction variable."""
    proof, out = proof_of(theorem_id), []
    for ci, chain in enumerate(chains(proof)):
        if not isinstance(chain, Induction):
            continue
        t = chain.variable

        def put(label: str, ci: int = ci, chain: Induction = chain, **changes) -> None:
            try:
                new = dataclasses.replace(chain, **changes)
            except (TermError, ValueError, TypeError):
                return
            out.append(Mutant(f"{chain.name}: {label}", with_chain(proof, ci, new)))

        put("base and step swapped", base=chain.step, step=chain.base)
        put("base := step", base=chain.step)
        put("base emptied", base=())
        put("step emptied", step=())
        put("variable renamed", variable=Symbol("u_mutant", integer=True, nonnegative=True))
        base_rhs = chain.base[-1].expr
        put("base ends scaled", base=(*chain.base[:-1], dataclasses.replace(chain.base[-1], expr=mul(2, base_rhs))))
        for si, step in enumerate(chain.step):
            if step.rule != "hyp:IH":
                continue

            def at(label: str, new: Step, si: int = si, chain: Induction = chain, put=put) -> None:
                put(f"step {si + 1}: {label}", step=(*chain.step[:si], new, *chain.step[si + 1:]))

            at("IH at t + 1", dataclasses.replace(step, instance=((t, t + 1),)))
            at("IH at t - 1", dataclasses.replace(step, instance=((t, t - 1),)))
            at("IH at 0", dataclasses.replace(step, instance=((t, Integer(0)),)))
            at("the lemma itself cited at t", dataclasses.replace(step, rule=f"lemma:{chain.name}"))
            at("the lemma itself cited at t + 1", dataclasses.replace(step, rule=f"lemma:{chain.name}",
                                                                    instance=((t, t + 1),)))
        for si, step in enumerate(chain.base):
            put(f"base step {si + 1}: cites hyp:IH",
                base=(*chain.base[:si], dataclasses.replace(step, rule="hyp:IH"), *chain.base[si + 1:]))
    return out


def family_mutants(theorem_id: str) -> list[Mutant]:
    """Recurrences off by one (step at s + 1), with a scaled step, a scaled or zeroed base."""
    proof, out = proof_of(theorem_id), []
    for fi, f in enumerate(proof.families):
        if not f.is_defined:
            continue

        def put(label: str, fi: int = fi, f=f, **changes) -> None:
            try:
                families = list(proof.families)
                families[fi] = dataclasses.replace(f, **changes)
            except (TermError, ValueError, TypeError):
                return
            out.append(Mutant(f"family {f.name}: {label}", dataclasses.replace(proof, families=tuple(families))))

        put("off by one (step at s + 1)", step=f.step.xreplace({f.index: f.index + 1}))
        put("step scaled", step=mul(2, f.step))
        put("base scaled", base=mul(2, f.base))
        if not isinstance(f.base, ZeroMatrix):
            put("base := 0", base=ZeroMatrix(*f.base.shape))
    return [m for m in out if m.proof.families != proof.families]


@pytest.mark.parametrize("theorem_id", tiered(INDUCTION_THEOREMS))
def test_induction_mutants_are_rejected(theorem_id: str):
    generated = induction_mutants(theorem_id)
    inductions = sum(isinstance(c, Induction) for c in chains(proof_of(theorem_id)))
    assert len(generated) >= 7 * inductions
    assert any("IH at t + 1" in m.label for m in generated) and any("itself cited" in m.label for m in generated)
    bad = accepted(sample(random.Random(1), generated, checked_per(theorem_id, half=True)))
    assert not bad, f"induction mutants accepted:\n{describe(bad)}"


@pytest.mark.parametrize("theorem_id", tiered(FAMILY_THEOREMS))
def test_recurrence_mutants_are_rejected(theorem_id: str):
    mutants = family_mutants(theorem_id)
    assert len(mutants) >= 3
    # a recurrence the proof never unfolds may change freely: it is then not part of any step (but it is in the
    # statement, so the witness still decides whether an accepted mutant states something true)
    bad = [(m, t) for m, t in accepted(mutants) if not witness_holds(m.proof)]
    assert not bad, f"recurrence mutants accepted:\n{describe(bad)}"


def test_induction_theorems_are_mutated():
    assert {"multi_layer_gd", "causal_online_ls", "fast_weight_delta_rule"} <= set(INDUCTION_THEOREMS)
    assert set(INDUCTION_THEOREMS) <= set(FAMILY_THEOREMS)
