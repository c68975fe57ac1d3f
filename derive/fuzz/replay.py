"""Records in the fuzzer's scope: random stale and edited records replayed against random sources (issue 40).

A replay (:func:`derive.records.replay_proof`) takes the statement from the theorem's source and only the steps
from its record.  The fuzzer pairs sources and records that do not belong together, as a user's edits and a stale or
hand-edited record do:

* **stale**: the source was edited (a mutant of the generated proof: a hypothesis dropped, a claim changed, ...) and
  the record is the proof of the unedited source;
* **edited**: the source is the generated proof and the record is a mutant of it;
* **dropped**: the source's lemma lost a local hypothesis (deleted in a helper module, the theorem's file unchanged)
  and the record proves the lemma under it.

Whatever a replay returns must state exactly the source's statement (:func:`states_the_source`; else a finding,
whatever the oracle says), and is then judged by the oracle like any theorem the kernel made.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

from sympy.matrices.expressions import MatrixSymbol

from .. import records
from ..authoring.registry import Statement, stated
from ..certificates.format import FORMAT
from ..kernel import Chain, Hypothesis, Proof, Step, Theorem, proof_to_data

__all__ = ["pairs", "replayed", "states_the_source"]

def record_data(proof: Proof) -> dict:
    """The record (certificate JSON) of a proof, checked or not."""
    return json.loads(json.dumps({"format": FORMAT, **proof_to_data(proof)}))


def replayed(source: Proof, record: Proof) -> tuple[Statement, Theorem | None]:
    """The source's statement, and what a replay of ``record`` against it gives (None: no replay)."""
    statement = stated(source, [t.id for t in source.cites])
    known = {t.id: t for t in (*source.cites, *record.cites)}
    return statement, records.replay_proof(statement, record_data(record), known)


def states_the_source(theorem: Theorem, statement: Statement) -> str | None:
    """Why ``theorem`` does not state exactly ``statement`` (every part but the steps, each lemma the source states
    among the theorem's lemmas), or None when it does."""
    mine = stated(theorem.proof).data
    want = statement.data
    for key in ("theorem", "title", "statement", "hypotheses", "definitions", "families", "claim"):
        if mine.get(key) != want.get(key):
            return f"the replayed theorem's {key} is not the source's"
    lemmas = {chain["name"]: chain for chain in mine["lemmas"]}
    for chain in want["lemmas"]:
        if lemmas.get(chain["name"]) != chain:
            return f"the replayed theorem's lemma {chain['name']} is not the source's"
    return None


def dropped_local_hypothesis(proof: Proof, rng: random.Random) -> tuple[Proof, Proof] | None:
    """(source, record): the record proves a lemma A = B under its local hypothesis A = B, for two matrix symbols of
    the proof of one shape; the source states the same lemma without it (false in general)."""
    symbols = sorted({m for h in proof.hypotheses for m in (h.lhs.atoms(MatrixSymbol) | h.rhs.atoms(MatrixSymbol))}
                     | proof.claim.lhs.atoms(MatrixSymbol), key=lambda m: m.name)
    pairs_ = [(a, b) for a in symbols for b in symbols if a != b and a.shape == b.shape]
    if not pairs_:
        return None
    a, b = rng.choice(pairs_)
    local = Hypothesis("local_assumption", a, b)
    lemma = Chain("recorded_lemma", a, b, (Step(b, "hyp:local_assumption"),), (local,))
    record = Proof(proof.theorem, proof.title, proof.statement, proof.hypotheses, proof.definitions,
                   (lemma, *proof.lemmas), proof.claim, proof.cites, proof.families)
    source = Proof(proof.theorem, proof.title, proof.statement, proof.hypotheses, proof.definitions,
                   (Chain("recorded_lemma", a, b, ()), *proof.lemmas), proof.claim, proof.cites, proof.families)
    return source, record


def pairs(proof: Proof, mutants: list[tuple[Proof, str]], rng: random.Random) -> Iterator[tuple[Proof, Proof, str]]:
    """(source, record, what) for the generated proof and its mutants (see the module doc)."""
    for mutant, description in mutants:
        yield mutant, proof, f"stale record (source edited: {description})"
        yield proof, mutant, f"edited record ({description})"
    dropped = dropped_local_hypothesis(proof, rng)
    if dropped is not None:
        yield dropped[0], dropped[1], "stale record (a lemma's local hypothesis deleted from the source)"
