"""Which of the kernel's rules and judgments a fuzzer run exercises.

The guide's rule is that every rule and judgment enters the soundness fuzzer's generator the day it enters the
kernel; this module measures it.  Rules are read off the steps of the proofs checked (an axiom by name, the
other rules by kind: ``hyp``, ``def``, ``lemma``, ``thm``, ``base``, ``step``, ``hyp:IH``, a scalar hypothesis
λ = r, an induction).  Judgments are counted while ``check`` runs: each judgment function of
:mod:`derive.kernel.judgments` named in :data:`JUDGMENTS` is wrapped, for the time of a ``with recording(...)``
block, so that a call that *decides in the proof's favour* (returns true; for the sign narrowing, narrows) is
counted.  Only the fuzzer uses it; the kernel does not know it exists.
"""

from __future__ import annotations

import contextlib
import functools
from collections import Counter
from collections.abc import Iterator

from ..kernel import AXIOMS, Induction, Proof, judgments

__all__ = ["JUDGMENTS", "RULE_KINDS", "all_rules", "recording", "rules_of"]

#: judgment -> the function of derive.kernel.judgments that decides it (or one way of deciding it).
JUDGMENTS: dict[str, str] = {
    "positive_definite": "_positive_definite",
    "positive_semidefinite": "_positive_semidefinite",
    "invertible": "_invertible",
    "symmetric": "_symmetric",
    "diagonal": "_diagonal",
    "sign_narrowing": "_narrowed_sign",  # λ = r narrows λ's sign to r's
    "semidefinite_congruence": "_semidefinite_congruence",  # c F M Fᵀ, c ≥ 0, M positive semidefinite
    "congruent_to_semidefinite": "_congruent_to_semidefinite",  # N = F M Fᵀ, F invertible, N psd: M psd
    "one_sided_inverse": "_one_sided_inverse",  # A B = I, A square: A invertible
    "low_rank_update": "_low_rank_update_invertible",  # A + cUV with I + cVA⁻¹U invertible
    "capacitance": "_capacitance_invertible",  # A + cUCV with C and C⁻¹ + cVA⁻¹U invertible
    "schur_invertible": "_schur_invertible",  # [[A, B], [C, D]] with A and D − CA⁻¹B invertible
    "family_fact": "_family_fact",  # a predicate kept by a recurrence
    "by_unfolding": "_by_unfolding",  # a predicate of a definition's unfolding
    "member_defined": "_member_defined",  # a family member defined at its index
    "scaled_invertible": "_scaled_invertible",  # c·M with c ≠ 0 and M (any factors) invertible (issue 41)
    "scalar_fact": "_scalar_fact",  # Q.nonzero(c) narrows c's sign (issue 41)
    "diag_invertible": "_diag_invertible",  # diag(c·1ₙ) with c ≠ 0 (issue 41)
    "index_power": "_index_power_defined",  # γ^(k·t + c) defined (γ ≠ 0 where the exponent may be negative)
    "unit_lower_triangular": "unit_lower_triangular",  # I + Σ c·D tril(A, -1) E invertible (issues 41, 42)
}

#: the rules that are not axioms, by kind.
RULE_KINDS = ("hyp", "scalar_hypothesis", "def", "lemma", "thm", "base", "step", "hyp:IH", "induction")


def all_rules() -> tuple[str, ...]:
    """Every axiom of the kernel's rule table, then every other kind of rule a step may cite."""
    return (*AXIOMS, *RULE_KINDS)


def rules_of(proof: Proof) -> Counter:
    """The rules (axioms by name, other rules by kind) the steps of ``proof`` cite, with multiplicities."""
    scalar = {h.name for h in proof.hypotheses if type(h.lhs).__name__ == "Symbol"}
    out: Counter = Counter()
    for chain in (*proof.lemmas, proof.claim):
        steps = (*chain.base, *chain.step) if isinstance(chain, Induction) else chain.steps
        if isinstance(chain, Induction):
            out["induction"] += 1
        for step in steps:
            if step.rule in AXIOMS or step.rule == "hyp:IH":
                out[step.rule] += 1
            elif step.rule.startswith("hyp:") and step.rule[4:] in scalar:
                out["scalar_hypothesis"] += 1
            else:
                out[step.rule.split(":", 1)[0]] += 1
    return out


def _counting(name: str, function, counter: Counter):
    if name == "sign_narrowing":
        @functools.wraps(function)
        def narrowing(declared, *args, **kwargs):
            result = function(declared, *args, **kwargs)
            if result != declared:
                counter[name] += 1
            return result
        return narrowing

    @functools.wraps(function)
    def judged(*args, **kwargs):
        result = function(*args, **kwargs)
        if result:
            counter[name] += 1
        return result
    return judged


@contextlib.contextmanager
def recording(counter: Counter) -> Iterator[Counter]:
    """Within the block, every judgment of :data:`JUDGMENTS` that decides in a proof's favour adds 1 to
    ``counter[judgment]`` (whatever function the module holds at entry: a put-back hole is counted too)."""
    saved = {attr: getattr(judgments, attr) for attr in JUDGMENTS.values()}
    try:
        for name, attr in JUDGMENTS.items():
            setattr(judgments, attr, _counting(name, saved[attr], counter))
        yield counter
    finally:
        for attr, function in saved.items():
            setattr(judgments, attr, function)
