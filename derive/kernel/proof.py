"""Proof data (plain, untrusted until checked), the checked :class:`Theorem`, and the canonical text.

Part of the trusted core.  A :class:`Proof` is what any builder proposes; only
:func:`derive.kernel.check` turns one into a :class:`Theorem`.
"""

from __future__ import annotations

import hashlib
import json
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from sympy import Basic, srepr
from sympy.assumptions import Q
from sympy.assumptions.assume import AppliedPredicate
from sympy.matrices.expressions import MatrixSymbol

__all__ = ["PREDICATES", "SCALAR_PREDICATES", "Chain", "Definition", "Family", "Hypothesis", "Induction", "Proof",
           "ProofError", "Step", "Theorem", "digest", "is_issued", "proof_to_data", "register_display"]

#: Predicate hypotheses the kernel understands, written ``Q.<name>(M)`` = true.
PREDICATES = {"positive_definite": Q.positive_definite, "invertible": Q.invertible,
              "diagonal": Q.diagonal, "symmetric": Q.symmetric}
#: Scalar facts (issue 41), written ``Q.nonzero(c)`` = true for a coefficient c (a scalar symbol, tr(m) of a 1×1
#: matrix, a rational function of them): c ≠ 0.
SCALAR_PREDICATES = {"nonzero": Q.nonzero}

# --- proofs (plain data, untrusted until checked) ------------------------------------


@dataclass(frozen=True)
class Hypothesis:
    """``lhs = rhs``; a predicate hypothesis has lhs ``Q.<pred>(M)`` and rhs ``true``.

    Steps cite it as ``hyp:NAME``, in either direction.  ``forall`` lists symbols (matrix or
    dimension) bound by this hypothesis alone: a step citing it instantiates them
    (``Step.instance``).  Make predicate hypotheses with :func:`derive.predicate`.
    """

    name: str
    lhs: Basic
    rhs: Basic
    forall: tuple[Basic, ...] = ()

    @property
    def is_predicate(self) -> bool:
        return isinstance(self.lhs, AppliedPredicate)

    @property
    def is_scalar_fact(self) -> bool:
        """``Q.nonzero(c)`` for a coefficient c (issue 41): a predicate about a scalar, not a matrix."""
        lhs = self.lhs
        return isinstance(lhs, AppliedPredicate) and any(lhs.function == p for p in SCALAR_PREDICATES.values())


@dataclass(frozen=True)
class Definition:
    """``symbol := rhs`` for a fresh matrix symbol; steps cite it as ``def:NAME``, in either direction.

    The symbol must occur in no hypothesis and not in its own right-hand side, so a definition never
    constrains the other symbols.
    """

    name: str
    symbol: MatrixSymbol
    rhs: Basic


@dataclass(frozen=True)
class Step:
    """One rewrite: ``expr`` follows from the previous expression by ``rule``."""

    expr: Basic
    rule: str
    instance: tuple[tuple[Basic, Basic], ...] = ()


@dataclass(frozen=True)
class Chain:
    """A claim ``lhs = rhs`` with its chain of steps; ``hypotheses`` are local to it."""

    name: str
    lhs: Basic
    rhs: Basic
    steps: tuple[Step, ...]
    hypotheses: tuple[Hypothesis, ...] = ()


@dataclass(frozen=True)
class Family:
    """A family of matrices ``F[0], F[1], ...`` (:class:`derive.kernel.terms.FamilyMatrix` members).

    ``rows`` and ``cols`` give the shape of ``F[index]`` in terms of the bound index symbol ``index``.  A
    family without ``base`` and ``step`` is free: any sequence of matrices of those shapes (the data
    x₁, x₂, ...).  With both it is defined by a recurrence, cited as ``base:NAME`` (F[0] = base) and
    ``step:NAME`` (F[e + 1] = step with ``index`` instantiated to e); its members are defined as far as the
    recurrence is.
    """

    name: str
    index: Basic
    rows: Basic
    cols: Basic
    base: Basic | None = None
    step: Basic | None = None

    @property
    def is_defined(self) -> bool:
        return self.base is not None


@dataclass(frozen=True)
class Induction:
    """The lemma ``lhs = rhs`` for every natural value of the index symbol ``variable``, by induction.

    ``base`` is the chain of steps from lhs to rhs at ``variable`` = 0; ``step`` the chain from lhs to rhs at
    ``variable`` + 1, which may cite the claim at ``variable`` as ``hyp:IH``.  Later chains cite the lemma as
    ``lemma:NAME``, as it stands or with ``variable`` instantiated to another index.
    """

    name: str
    variable: Basic
    lhs: Basic
    rhs: Basic
    base: tuple[Step, ...]
    step: tuple[Step, ...]

    hypotheses = ()  # an induction lemma holds under the theorem's hypotheses alone

    @property
    def steps(self) -> tuple[Step, ...]:
        """Every step of both chains (for counting)."""
        return (*self.base, *self.step)


@dataclass(frozen=True)
class Proof:
    """A theorem's statement and proof: lemmas first (each may be cited later), then the claim."""

    theorem: str
    title: str
    statement: str
    hypotheses: tuple[Hypothesis, ...]
    definitions: tuple[Definition, ...]
    lemmas: tuple[Chain | Induction, ...]
    claim: Chain
    cites: tuple[Theorem, ...] = ()  # checked theorems that steps cite as ``thm:ID``
    families: tuple[Family, ...] = ()  # families of matrices (sequences indexed by a natural number)


class ProofError(ValueError):
    """A proof does not check; names the theorem, the chain, the step and the rule.

    The message reads ``THEOREM/CHAIN step N (rule RULE): REASON``; the parts are attributes.

    Attributes
    ----------
    theorem : str
        The theorem's id.
    chain : str
        ``"main"``, a lemma's name, or ``"statement"`` for a fault outside the chains.
    step : int or None
        The failing step, counted from 1.
    rule : str or None
        The rule the failing step names.
    reason : str
        What is wrong, in words.
    """

    def __init__(self, theorem: str, chain: str, step: int | None, rule: str | None, reason: str):
        self.theorem, self.chain, self.step, self.rule, self.reason = theorem, chain, step, rule, reason
        where = f"{theorem}/{chain}"
        if step is not None:
            where += f" step {step}"
        if rule is not None:
            where += f" (rule {rule})"
        super().__init__(f"{where}: {reason}")


_KERNEL_TOKEN = object()


class Theorem:
    """A checked theorem.  Only :func:`check` can make one that counts, and its attributes cannot be changed.

    The kernel records every theorem it makes (the object's identity, its proof and the objects the proof's
    statement is made of); a theorem is cited, certified or printed only if it is one of those, unchanged
    (:func:`is_issued`).  An object made any other way — ``object.__new__(Theorem)``, or the constructor called
    with the kernel's token — is not recorded, so it proves nothing.

    Attributes
    ----------
    id : str
        The theorem's id.
    title : str
        Its one-line title.
    statement : str
        Its statement in words.
    proof : Proof
        The proof that was checked: the kernel's own validated copy (tuples only, nothing shared with the
        caller).
    digest : str
        SHA-256 of the proof's canonical text, the certificate's ``sha256``.
    seconds : float
        How long the check took.
    """

    __slots__ = ("id", "title", "statement", "proof", "digest", "seconds", "__weakref__")

    def __init__(self, token: object, proof: Proof, digest: str, seconds: float):
        if token is not _KERNEL_TOKEN:
            raise TypeError("theorems are made by derive.kernel.check only")
        object.__setattr__(self, "id", proof.theorem)
        object.__setattr__(self, "title", proof.title)
        object.__setattr__(self, "statement", proof.statement)
        object.__setattr__(self, "proof", proof)
        object.__setattr__(self, "digest", digest)
        object.__setattr__(self, "seconds", seconds)

    def __setattr__(self, name, value):
        raise AttributeError("theorems are immutable")

    def __delattr__(self, name):
        raise AttributeError("theorems are immutable")

    @property
    def steps(self) -> int:
        """The number of checked steps, lemmas included."""
        return sum(len(c.steps) for c in (*self.proof.lemmas, self.proof.claim))

    def __repr__(self) -> str:
        return f"Theorem({self.id!r}, steps={self.steps})"

    def _repr_latex_(self) -> str | None:
        """Jupyter shows checked theorems as mathematics, through a display registered from outside."""
        return _DISPLAY[0](self) if _DISPLAY else None


# Every theorem the kernel made: id(theorem) -> (a weak reference to it, its id, its digest, its proof, the parts of
# the proof, :func:`_parts`).  A weak reference, so a theorem that is collected leaves the record and a new object at
# the same address is not mistaken for it.
_ISSUED: dict[int, tuple[weakref.ref, str, str, Proof, tuple]] = {}
_ISSUED_LOCK = threading.Lock()


def _parts(proof: Proof) -> tuple:
    """What a theorem's proof is made of, as objects compared by identity: the proof's fields, the type and fields of
    each hypothesis, definition and family and of the main claim (all a citation instantiates), the claim's steps and
    the lemmas as the tuples they are.  As many objects as the statement has parts, never its terms' nodes: asking
    whether a theorem is issued costs nothing next to citing it."""
    claim = proof.claim
    out = [type(proof), proof.theorem, proof.title, proof.statement, proof.hypotheses, proof.definitions,
           proof.lemmas, claim, proof.cites, proof.families,
           type(claim), claim.name, claim.lhs, claim.rhs, claim.steps, claim.hypotheses]
    for h in proof.hypotheses:
        out += [type(h), h.name, h.lhs, h.rhs, h.forall]
    for d in proof.definitions:
        out += [type(d), d.name, d.symbol, d.rhs]
    for f in proof.families:
        out += [type(f), f.name, f.index, f.rows, f.cols, f.base, f.step]
    return tuple(out)


def _issue(proof: Proof, digest_: str, seconds: float) -> Theorem:
    """Make and record a theorem (called by :func:`derive.kernel.check` only, after the proof checked)."""
    theorem = Theorem(_KERNEL_TOKEN, proof, digest_, seconds)
    key = id(theorem)

    def forget(_ref, key=key):
        with _ISSUED_LOCK:
            entry = _ISSUED.get(key)
            if entry is not None and entry[0]() is None:
                del _ISSUED[key]

    with _ISSUED_LOCK:
        _ISSUED[key] = (weakref.ref(theorem, forget), proof.theorem, digest_, proof, _parts(proof))
    return theorem


def is_issued(theorem: object) -> bool:
    """Whether ``theorem`` is a theorem the kernel made, unchanged since.

    Unchanged: its attributes, its proof and every part of the proof's statement are the very objects the kernel
    checked and hashed (:func:`_parts`).  They are compared by identity, not hashed again (a cited proof of
    megabytes was hashed at every citation): the kernel's objects are immutable (frozen dataclasses, tuples, SymPy
    terms), and one replaced behind the immutability (``object.__setattr__``) is another object.
    """
    if type(theorem) is not Theorem:
        return False
    with _ISSUED_LOCK:
        entry = _ISSUED.get(id(theorem))
    if entry is None or entry[0]() is not theorem:
        return False
    _, theorem_id, recorded, proof, parts = entry
    try:
        get = object.__getattribute__
        if not (get(theorem, "proof") is proof and get(theorem, "id") is theorem_id
                and get(theorem, "digest") is recorded and get(theorem, "title") is proof.title
                and get(theorem, "statement") is proof.statement):
            return False
        now = _parts(proof)
        return len(now) == len(parts) and all(a is b for a, b in zip(now, parts, strict=True))
    except Exception:  # a forged object with missing slots
        return False


_DISPLAY: list[Callable[[Theorem], str]] = []


def register_display(render: Callable[[Theorem], str]) -> None:
    """Set how ``Theorem._repr_latex_`` renders (the LaTeX package registers itself; the kernel imports no printer)."""
    _DISPLAY[:] = [render]


def digest(proof: Proof, show: Callable[[Basic], str] = srepr) -> str:
    """SHA-256 of the proof's canonical text (what certificates are hashed by); ``show`` is ``srepr`` (the kernel
    passes one that charges the work of printing, term by term)."""
    blob = json.dumps(proof_to_data(proof, show=show), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def proof_to_data(proof: Proof, *, steps: bool = True, show: Callable[[Basic], str] = srepr) -> dict:
    """The JSON-ready form of a proof (expressions as ``srepr`` strings, printed by ``show``).

    ``steps=False``: the statement alone (no steps of any chain, no citations), what
    :func:`derive.certificates.statement_of` compares; the steps are then never printed.
    """

    def hyp(h: Hypothesis) -> dict:
        out = {"name": h.name, "lhs": show(h.lhs), "rhs": show(h.rhs)}
        if h.forall:
            out["forall"] = [show(v) for v in h.forall]
        return out

    def chain_steps(items) -> list:
        out = []
        for s in items:
            item = {"expr": show(s.expr), "rule": s.rule}
            if s.instance:
                item["instance"] = [[show(v), show(t)] for v, t in s.instance]
            out.append(item)
        return out

    def chain(c: Chain | Induction) -> dict:
        out = {"name": c.name, "claim": {"lhs": show(c.lhs), "rhs": show(c.rhs)}}
        if isinstance(c, Induction):
            out["induction"] = show(c.variable)
            if steps:
                out.update({"base": chain_steps(c.base), "step": chain_steps(c.step)})
            return out
        if steps:
            out["steps"] = chain_steps(c.steps)
        if c.hypotheses:
            out["hypotheses"] = [hyp(h) for h in c.hypotheses]
        return out

    def family(f: Family) -> dict:
        out = {"name": f.name, "index": show(f.index), "rows": show(f.rows), "cols": show(f.cols)}
        if f.base is not None:
            out.update({"base": show(f.base), "step": show(f.step)})
        return out

    main = chain(proof.claim)
    return {
        **({"families": [family(f) for f in proof.families]} if proof.families else {}),
        "theorem": proof.theorem,
        "title": proof.title,
        "statement": proof.statement,
        "hypotheses": [hyp(h) for h in proof.hypotheses],
        "definitions": [{"name": d.name, "lhs": show(d.symbol), "rhs": show(d.rhs)} for d in proof.definitions],
        "lemmas": [chain(c) for c in proof.lemmas],
        "claim": main["claim"],
        **({"steps": main["steps"]} if steps else {}),
        **({"cites": [{"theorem": t.id, "sha256": t.digest} for t in proof.cites]} if proof.cites and steps else {}),
    }
