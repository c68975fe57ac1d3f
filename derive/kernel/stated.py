"""A statement from one place, steps from another: how a recorded or certified proof is checked.

Part of the trusted core.  A record (``derive.records``) or a certificate checked against a library supplies
*steps only*: :func:`check_stated` takes every part of what is stated — the theorem's id, title and words, its
hypotheses, definitions and families, each stated lemma's claim (and local hypotheses, or an induction's variable)
and the main claim — from ``statement`` (the theorem's source), and from ``steps`` only the chains' steps, the
lemmas found on the way (proved here like any other; a lemma with local hypotheses is never a rewrite rule) and the
checked theorems the steps cite.  What comes back states exactly ``statement``, or the check fails: no comparison
outside the kernel decides that a statement is verified.
"""

from __future__ import annotations

import time

from .budget import CheckInterrupted, GuardFired, guarded
from .checking import _vouch, check
from .judgments import OutOfTime
from .proof import Chain, Induction, Proof, ProofError, Theorem
from .validation import ValidationError, _sequence, validated

__all__ = ["check_stated"]


def check_stated(statement: Proof, steps: Proof, *, work_limit: int | None = None,
                 time_limit: float | None = None) -> Theorem:
    """The theorem ``statement`` states, proved by the steps of ``steps`` (see the module doc).

    ``statement``'s chains need no steps (any it has are ignored); every lemma it states must be proved by a chain
    of the same name and kind in ``steps``, in ``steps``' order.  ``work_limit`` and ``time_limit`` are
    :func:`derive.kernel.check`'s.  Raises :class:`ProofError` when the steps do not fit the statement or do not
    check.
    """
    theorem_id = statement.theorem if type(statement) is Proof and type(statement.theorem) is str else "?"

    def fail(reason: str):
        raise ProofError(theorem_id if theorem_id.isidentifier() else "?", "statement", None, None, reason)

    if type(statement) is not Proof or type(steps) is not Proof:
        fail("a statement and its steps are each a derive.kernel.Proof")
    if time_limit is not None and not (type(time_limit) in (int, float) and 0 < time_limit < float("inf")):
        fail("time_limit must be a positive finite number of seconds")
    deadline = None if time_limit is None else time.process_time() + time_limit
    try:  # exactly typed copies of both (the statement's citations are not its own: the steps name them)
        with guarded(deadline):  # validating, before any budget is known: under the outer time guard
            stated = validated(Proof(statement.theorem, statement.title, statement.statement, statement.hypotheses,
                                     statement.definitions,
                                     tuple(_bare(c) for c in _sequence(statement.lemmas, "the lemmas")),
                                     _bare(statement.claim), (), statement.families), _vouch)
            given = validated(steps, _vouch)
    except ValidationError as exc:
        fail(str(exc))
    except (OutOfTime, GuardFired):
        raise CheckInterrupted(theorem_id if theorem_id.isidentifier() else "?", time_limit) from None
    except ProofError:
        raise
    except RecursionError:
        fail("a term is nested too deeply")
    except (TypeError, ValueError, AttributeError) as exc:
        fail(f"not a well-formed proof ({type(exc).__name__})")
    if given.theorem != stated.theorem:
        fail(f"the steps are of theorem {given.theorem}, not of {stated.theorem}")
    wanted = {c.name: c for c in stated.lemmas}
    if len(wanted) != len(stated.lemmas):
        fail("the statement names two lemmas alike")
    lemmas, seen = [], set()
    for chain in given.lemmas:
        if chain.name in seen:
            fail(f"the steps prove lemma {chain.name} twice")
        seen.add(chain.name)
        source = wanted.get(chain.name)
        if source is None:  # a lemma found on the way: it states only what its own chain proves
            lemmas.append(chain)
        elif type(source) is not type(chain):
            fail(f"lemma {chain.name} is stated as {_kind(source)} but the steps prove it as {_kind(chain)}")
        elif isinstance(source, Induction):
            lemmas.append(Induction(source.name, source.variable, source.lhs, source.rhs, chain.base, chain.step))
        else:
            lemmas.append(Chain(source.name, source.lhs, source.rhs, chain.steps, source.hypotheses))
    missing = [name for name in wanted if name not in seen]
    if missing:
        fail(f"the steps prove no lemma {', '.join(missing)} of the statement")
    claim = stated.claim
    proof = Proof(stated.theorem, stated.title, stated.statement, stated.hypotheses, stated.definitions,
                  tuple(lemmas), Chain(claim.name, claim.lhs, claim.rhs, given.claim.steps, claim.hypotheses),
                  given.cites, stated.families)
    left = None if deadline is None else deadline - time.process_time()
    if left is not None and left <= 0:
        raise CheckInterrupted(stated.theorem, time_limit)
    return check(proof, work_limit=work_limit, time_limit=left)


def _bare(chain):
    """A stated chain without its steps (exact types only: anything else is left for validation to refuse)."""
    if type(chain) is Induction:
        return Induction(chain.name, chain.variable, chain.lhs, chain.rhs, (), ())
    if type(chain) is Chain:
        return Chain(chain.name, chain.lhs, chain.rhs, (), chain.hypotheses)
    return chain


def _kind(chain) -> str:
    return "an induction" if isinstance(chain, Induction) else "a chain"
