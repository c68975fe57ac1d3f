"""Building proofs: an untrusted helper that proposes steps for the kernel to check.

Nothing here is trusted.  :class:`ProofBuilder` finds the next expression of a chain by
running a named rule (an axiom, hypothesis, definition or lemma) at a chosen position, and
records the step; :func:`derive.kernel.check` later re-checks every step from scratch.
"""

from __future__ import annotations

import difflib
import os
import threading
from collections.abc import Sequence
from contextlib import contextmanager

from sympy import Basic
from sympy.matrices.expressions import MatrixExpr

from ..kernel import AXIOMS, Chain, Definition, Hypothesis, Induction, Proof, ProofError, Step, Theorem
from ..kernel.checking import chain_context, lemma_rule, one_step, resolve_rule, rewrites, theorem_context
from ..kernel.hints import explained
from ..kernel.judgments import check_defined
from ..kernel.terms import TermError, canon

__all__ = ["ChainBuilder", "InductionBuilder", "ProofBuilder", "StepsNeeded", "statement_only"]


class _Mode(threading.local):
    """Whether this thread builds statements only (see :func:`statement_only`)."""

    def __init__(self):
        self.statement_only = False
        self.made: list | None = None  # the builders made under statement_only(), in order
        self.searching = 0  # inside .auto: a chain the search closes and fails is its own business


_MODE = _Mode()


class StepsNeeded(Exception):
    """Raised in :func:`statement_only` mode by a chain closed with ``.qed()`` and no right-hand side: its claim
    is known only by running its steps."""


@contextmanager
def statement_only():
    """Build statements, not proofs: inside this block ``.rw``, ``.to`` and ``.auto`` take no step and search
    nothing, ``.qed(rhs)`` and ``.auto(rhs)`` close the chain at ``rhs``, and ``cite`` records the id without
    checking the cited theorem.  The :class:`~derive.Proof` a builder then returns has chains without steps:
    its hypotheses, definitions, families and claims are the theorem's statement (the registry's
    :func:`~derive.authoring.registry.statement`).  Never hand such a proof to the kernel as a proof.
    """
    saved = _MODE.statement_only, _MODE.made
    _MODE.statement_only, _MODE.made = True, []
    try:
        yield _MODE.made
    finally:
        _MODE.statement_only, _MODE.made = saved


class ChainBuilder:
    """A chain under construction, starting at the claim's left-hand side.

    Made by :meth:`ProofBuilder.main` or :meth:`ProofBuilder.lemma`, not directly.  Each of :meth:`rw`
    and :meth:`to` records one step and returns the builder, so steps chain; :meth:`qed` closes the
    chain and hands it to the proof.  A step that cannot be taken raises :class:`~derive.ProofError`
    at once, naming the theorem, the chain, the step and the rule.
    """

    def __init__(self, builder: ProofBuilder, name: str, lhs: Basic, hypotheses: Sequence[Hypothesis],
                 on_close=None):
        self.given_lhs = lhs  # as the author wrote it (before the normal form), for the message on a trivial claim
        self.builder, self.name, self.lhs = builder, name, canon(lhs)
        self.on_close = on_close or builder._close
        self.hypotheses = tuple(hypotheses)
        self.current = self.lhs
        self.steps: list[Step] = []
        self.refutation_claim = None  # (name, lhs, rhs, hypotheses) a failure is refuted on, when not this chain's
        self.lazy = builder.lazy
        if self.lazy:  # statement_only(): no context, no steps
            self.ctx = None
            return
        probe = Chain(name, lhs, lhs, (), self.hypotheses)
        self.ctx = chain_context(builder.ctx, probe, builder.lemma_rules, self._fail)

    def _fail(self, reason: str, rule: str | None = None):
        raise ProofError(self.builder.theorem, self.name, len(self.steps) + 1, rule, reason)

    def _explain(self, reason: str, rule: str) -> str:
        """The kernel's reason, and for an unknown rule the closest rule names this chain has."""
        if reason != "no such rule" or not isinstance(rule, str):
            return reason
        known = [*AXIOMS, *self.ctx.rules, *(f"thm:{i}" for i in self.ctx.citations)]
        close = difflib.get_close_matches(rule, known, n=3, cutoff=0.5)
        return reason + (f"; the closest rule names are {', '.join(close)}" if close else
                         f"; rules are the axioms ({', '.join(sorted(AXIOMS)[:6])}, ...), hyp:NAME, def:NAME, "
                         "lemma:NAME, thm:ID, base:FAMILY and step:FAMILY")

    def _cite(self, rule: str) -> None:
        """A ``thm:ID`` rule: make sure the proof cites the checked theorem ID."""
        if rule.startswith("thm:") and rule[4:] not in self.ctx.citations:
            self.ctx.citations[rule[4:]] = self.builder.cite(rule[4:])

    def rw(self, rule: str, at: Basic | None = None, nth: int = 0, instance=()) -> ChainBuilder:
        """Apply ``rule`` at the position whose sub-term is ``at`` (the ``nth`` match, in order).

        Without ``at``, an equation (hypothesis, definition, lemma, cited theorem) rewrites its left side.
        ``rule`` is an axiom name, ``hyp:NAME``, ``def:NAME``, ``lemma:NAME`` or ``thm:ID`` (a checked
        theorem, instantiated by ``instance``: pairs (its symbol, term); other symbols stand for themselves).
        """
        if self.lazy:
            self.ran_steps = True
            return self
        self._cite(rule)
        step = Step(self.current, rule, tuple(instance))
        fn = resolve_rule(step, self.ctx, lambda reason: self._fail(self._explain(reason, rule), rule))
        entry = self.ctx.rules.get(rule)
        if at is None and entry is not None and (not entry[2] or (len(entry) > 3 and not instance)):
            at = self.ctx.rules[rule][0]  # equations run left to right unless told where
        elif at is None and rule.startswith("thm:"):
            at = fn.lhs
        target = None if at is None else canon(at)
        seen, undefined = [], []
        for matched, result in rewrites(self.current, fn, self.ctx):
            if (target is None or matched == target) and result not in seen and result != self.current:
                try:
                    check_defined(result, self.ctx)
                except TermError as exc:
                    undefined.append(exc)
                    continue
                seen.append(result)
        if len(seen) <= nth:
            where = "" if at is None else f" at {at}"
            if undefined:  # the rule applies, but what it gives is not defined: say why
                self._fail(f"applies{where}, but the result is not defined: {explained(undefined[0], self.ctx)}", rule)
            self._fail(f"does not apply{where} in {self.current}", rule)
        return self._record(seen[nth], rule, instance)

    def to(self, expr: Basic, rule: str, instance=()) -> ChainBuilder:
        """Step to an explicit expression (for rules used right to left)."""
        if self.lazy:
            self.ran_steps = True
            return self
        expr = canon(expr)
        self._cite(rule)
        fn = resolve_rule(Step(expr, rule, tuple(instance)), self.ctx,
                          lambda reason: self._fail(self._explain(reason, rule), rule))
        try:
            check_defined(expr, self.ctx)
        except TermError as exc:
            self._fail(f"{expr} is not defined: {explained(exc, self.ctx)}", rule)
        if not one_step(self.current, expr, fn, self.ctx):
            self._fail(f"does not lead from {self.current} to {expr}", rule)
        return self._record(expr, rule, instance)

    def _record(self, expr, rule, instance) -> ChainBuilder:
        self.steps.append(Step(expr, rule, tuple(instance)))
        self.current = expr
        return self

    def auto(self, rhs: Basic, budget: int | None = None, *, timeout: float | None = None) -> Chain:
        """Find the steps from the current expression to ``rhs``, record them, and close the chain.

        Proof automation (:mod:`derive.authoring.auto`): a directed normaliser from both sides, then a
        bounded search.  Every step it records names its rule, as a hand-written :meth:`rw` does, and the
        kernel re-checks the chain from scratch.  It may prove small lemmas first (an inverse given by a
        one-sided inverse, or an argument of an inverse that normalises as a whole).

        The search is bounded by ``budget`` units of counted work (default ``auto.default_budget``: proportional
        to the nodes of both sides and of the chain's equations), never by seconds, so it finds the same chain,
        or raises the same :class:`ProofError` ("no chain ... within the work budget of N units", showing both
        normal forms and where they first differ), on any machine at any load.  ``timeout`` (seconds) is an
        optional outer guard only: past it, ``auto.AutoInterrupted`` (a ProofError saying "interrupted"), no
        verdict on the statement.
        """
        if self.lazy:
            return self.qed(rhs)
        from .auto import AutoInterrupted, close

        _MODE.searching += 1
        try:
            return close(self, rhs, timeout=timeout, budget=budget)
        except AutoInterrupted:  # the wall-clock guard fired: no verdict, and no more time spent
            raise
        except ProofError as exc:
            self._refute(exc, rhs)
            raise
        finally:
            _MODE.searching -= 1

    def _refute(self, exc: ProofError, rhs: Basic) -> None:
        """Attach to ``exc``, a failure to close this chain, the verdict of :func:`derive.refute.refute` on the chain's
        statement (hypotheses, definitions, local hypotheses, lhs = ``rhs``) as ``exc.counterexample``: a
        :class:`~derive.refute.Verdict` (``"false"`` with a confirmed counterexample, or not proved), None when no
        verdict could be had; its one-line summary is added to the message.  Small budget (:data:`REFUTE_BUDGET`
        instances, :data:`REFUTE_SECONDS` CPU seconds as an outer guard); ``DERIVE_REFUTE=off`` turns it off."""
        if hasattr(exc, "counterexample"):
            return
        exc.counterexample = None
        if os.environ.get("DERIVE_REFUTE", "").strip().lower() in ("off", "0", "no", "false"):
            return
        try:
            from ..refute import refute

            name, lhs, target, hypotheses = self.refutation_claim or (self.name, self.lhs, canon(rhs), self.hypotheses)
            b = self.builder
            statement = Proof(b.theorem, b.title, b.statement, b.hypotheses, b.definitions, (),
                              Chain(name, lhs, target, (), tuple(hypotheses)), (), b.families)
            verdict = refute(statement, budget=REFUTE_BUDGET, time_limit=REFUTE_SECONDS)
        except Exception:  # a statement the refuter cannot read: the proof error stands as it is
            return
        exc.counterexample = verdict
        line = verdict.summary() if verdict.is_false else f"not proved; {verdict.summary()}"
        if len(line) > REFUTE_LINE:
            line = line[:REFUTE_LINE - 1] + "…"
        exc.reason = f"{exc.reason}; {line}"
        exc.args = (f"{exc.args[0]}; {line}", *exc.args[1:])

    def qed(self, rhs: Basic | None = None) -> Chain:
        """Close the chain; its right-hand side is where it ended (or must be ``rhs``)."""
        if self.lazy:
            if rhs is None:
                if getattr(self, "ran_steps", False):
                    raise StepsNeeded(f"{self.builder.theorem}/{self.name} ends where its steps lead (.qed())")
                rhs = self.current
            self.current = canon(rhs)
        elif rhs is not None and canon(rhs) != self.current:
            try:
                self._fail(f"the chain ends at {self.current}, not at {canon(rhs)}")
            except ProofError as exc:
                if not _MODE.searching:  # a hand-written chain that ends elsewhere: is its claim false?
                    self._refute(exc, rhs)
                raise
        if self.name == "main" and self.on_close == self.builder._close and self.current == self.lhs:
            raise ProofError(self.builder.theorem, "statement", None, None,
                             trivial_claim(self.given_lhs, self.given_lhs if rhs is None else rhs, self.lhs))
        chain = Chain(self.name, self.lhs, self.current, tuple(self.steps), self.hypotheses)
        self.on_close(chain)
        return chain


class ProofBuilder:
    """Collects a theorem's statement, lemmas and main chain into a :class:`~derive.Proof`.

    Parameters
    ----------
    theorem
        The theorem's id, a Python identifier (the name of the ``@theorem`` function).
    title
        A one-line title (certificates, the article).
    statement
        The statement in words.
    hypotheses
        Assumed by every chain: equations :class:`~derive.Hypothesis` and predicates made by
        :func:`~derive.predicate`.
    definitions
        :class:`~derive.Definition` entries ``S := rhs`` for fresh matrix symbols.
    """

    def __init__(self, theorem: str, title: str, statement: str = "",
                 hypotheses: Sequence[Hypothesis] = (), definitions: Sequence[Definition] = (),
                 families: Sequence = ()):
        self.theorem, self.title, self.statement = theorem, title, statement
        self.hypotheses, self.definitions = tuple(hypotheses), tuple(definitions)
        for h in self.hypotheses:
            if isinstance(h, Hypothesis) and isinstance(h.lhs, MatrixExpr) and _same_term(h.lhs, h.rhs):
                raise ProofError(theorem, "statement", None, None, trivial_hypothesis(h.name, canon(h.lhs)))
        self.families = tuple(getattr(f, "declaration", f) for f in families)
        self.lemmas: list[Chain | Induction] = []
        self.lemma_rules: dict = {}
        self.cites: list[Theorem] = []
        self.cited_ids: list[str] = []  # every theorem cited, by id (all statement_only() records of a citation)
        self.lazy = _MODE.statement_only
        if self.lazy:
            self.ctx = None
            _MODE.made.append(self)
            return
        self.ctx = theorem_context(self._proof(Chain("main", _placeholder(), _placeholder(), ())))

    def _proof(self, claim: Chain) -> Proof:
        return Proof(self.theorem, self.title, self.statement, self.hypotheses, self.definitions,
                     tuple(self.lemmas), claim, tuple(self.cites), self.families)

    def cite(self, theorem: str | Theorem) -> Theorem:
        """Cite a checked theorem (an id of the registry, checked on first use, or a :class:`Theorem`).

        In :func:`statement_only` mode the id is recorded and nothing is checked (returns None for an id).
        """
        theorem_id = theorem if isinstance(theorem, str) else theorem.id
        if theorem_id not in self.cited_ids:
            self.cited_ids.append(theorem_id)
        if self.lazy:
            return None if isinstance(theorem, str) else theorem
        if isinstance(theorem, str):
            from .registry import checked

            if theorem == self.theorem:
                raise ProofError(self.theorem, "statement", None, None, f"theorem {theorem} cites itself")
            theorem = checked(theorem)
        if all(t.id != theorem.id for t in self.cites):
            self.cites.append(theorem)
            self.ctx.citations[theorem.id] = theorem
        return theorem

    def lemma(self, name: str, lhs: Basic, hypotheses: Sequence[Hypothesis] = ()) -> ChainBuilder:
        """Start the lemma ``name`` at ``lhs``; once closed, later chains may cite it as ``lemma:NAME``.

        ``hypotheses`` are local to the lemma; a lemma with local hypotheses cannot be cited.
        """
        return ChainBuilder(self, name, lhs, hypotheses)

    def induction(self, name: str, variable: Basic, lhs: Basic, rhs: Basic) -> InductionBuilder:
        """Prove the lemma ``lhs = rhs`` for every value of the index ``variable`` by induction on it.

        Returns an :class:`InductionBuilder`: its :meth:`~InductionBuilder.base` chain goes from lhs to rhs at
        ``variable`` = 0, its :meth:`~InductionBuilder.step` chain at ``variable`` + 1, citing the claim at
        ``variable`` as ``hyp:IH``; :meth:`~InductionBuilder.auto` finds both.  Once both are closed, later
        chains cite the lemma as ``lemma:NAME``.
        """
        return InductionBuilder(self, name, variable, lhs, rhs)

    def main(self, lhs: Basic) -> ChainBuilder:
        """Start the main chain, the theorem's claim, at its left-hand side ``lhs``."""
        return ChainBuilder(self, "main", lhs, ())

    def _close(self, chain: Chain) -> None:
        if chain.name == "main":
            self.claim = chain
        else:
            self._close_lemma(chain)

    def _close_lemma(self, lemma: Chain | Induction) -> None:
        self.lemmas.append(lemma)
        rule = None if self.lazy else lemma_rule(lemma)
        if rule is not None:
            self.lemma_rules[f"lemma:{lemma.name}"] = rule

    def proof(self) -> Proof:
        """The :class:`~derive.Proof` built so far (after the main chain is closed), for the kernel to check."""
        if not hasattr(self, "claim"):  # a clear error, not an AttributeError, when the main chain was never closed
            raise ProofError(self.theorem, "main", None, None, "the proof has no main claim: close one with "
                             "b.main(lhs).auto(rhs), .qed(rhs) or .qed() before b.proof()")
        return self._proof(self.claim)


class InductionBuilder:
    """An induction under construction (made by :meth:`ProofBuilder.induction`)."""

    def __init__(self, builder: ProofBuilder, name: str, variable: Basic, lhs: Basic, rhs: Basic):
        self.builder, self.name, self.variable = builder, name, variable
        self.lhs, self.rhs = canon(lhs), canon(rhs)
        self.chains: dict[str, Chain] = {}

    def _at(self, value) -> tuple[Basic, Basic]:
        return canon(self.lhs.xreplace({self.variable: value})), canon(self.rhs.xreplace({self.variable: value}))

    def base(self) -> ChainBuilder:
        """The chain from lhs to rhs at 0."""
        return self._refuted_as_whole(
            ChainBuilder(self.builder, f"{self.name}_base", self._at(0)[0], (), self._closed("base")))

    def step(self) -> ChainBuilder:
        """The chain from lhs to rhs at variable + 1; it may cite ``hyp:IH``, the claim at variable."""
        return self._refuted_as_whole(
            ChainBuilder(self.builder, f"{self.name}_step", self._at(self.variable + 1)[0],
                         (Hypothesis("IH", self.lhs, self.rhs),), self._closed("step")))

    def _refuted_as_whole(self, chain: ChainBuilder) -> ChainBuilder:
        """A base or step chain that fails is refuted as the induction's claim, lhs = rhs for every value of the
        index (its step's hypothesis IH cannot be sampled)."""
        chain.refutation_claim = (self.name, self.lhs, self.rhs, ())
        return chain

    def _closed(self, part: str):
        def close(chain: Chain) -> None:
            self.chains[part] = chain
            if len(self.chains) == 2:
                lemma = Induction(self.name, self.variable, self.lhs, self.rhs, self.chains["base"].steps,
                                  self.chains["step"].steps)
                self.builder._close_lemma(lemma)
                self.lemma = lemma

        return close

    def auto(self, budget: int | None = None, *, timeout: float | None = None) -> Induction:
        """Find both chains (:meth:`ChainBuilder.auto`, each with ``budget`` units of work and the optional
        wall-clock guard ``timeout``) and close the induction."""
        self.base().auto(self._at(0)[1], budget, timeout=timeout)
        self.step().auto(self._at(self.variable + 1)[1], budget, timeout=timeout)
        return self.lemma


#: What a failure to close a chain spends on looking for a counterexample (see :meth:`ChainBuilder._refute`):
#: instances tried, an outer guard in CPU seconds, and the most characters of the verdict added to the message.
REFUTE_BUDGET = 60
REFUTE_SECONDS = 4.0
REFUTE_LINE = 600

#: How to keep a term as written: SymPy's operators simplify while they build, the package's constructors never.
KEEP_THE_FORM = ("SymPy's own operators (*, +, .T, .I, **) simplify while they build: (X.T*X).I*X.T*X is I "
                 "before the kernel sees it.  Write the terms with the package's constructors, which keep them as "
                 "written: derive.mul, derive.add, derive.transpose, derive.inv, derive.power, derive.block (e.g. "
                 "mul(inv(mul(transpose(X), X)), transpose(X), X))")


def trivial_claim(lhs: Basic, rhs: Basic, normal: Basic) -> str:
    """Why a claim whose two sides are one term (``normal``, in normal form) is refused, and how to keep its form."""
    shown = " ".join(str(normal).split())
    if lhs == rhs:
        return (f"the claim's two sides are the same term as given, {shown} = {shown}: it states nothing, and "
                f"would be certified in 0 steps.  {KEEP_THE_FORM}")
    return (f"the claim's two sides are the same term in the kernel's normal form (sums ordered, scalars "
            f"collected), {shown} = {shown}: it states nothing, and would be certified in 0 steps.  If you meant "
            f"more, {KEEP_THE_FORM[0].lower()}{KEEP_THE_FORM[1:]}")


def trivial_hypothesis(name: str, normal: Basic) -> str:
    shown = " ".join(str(normal).split())
    return (f"hypothesis {name}: its two sides are the same term, {shown} = {shown}: it assumes nothing.  "
            f"{KEEP_THE_FORM}")


def _same_term(a: Basic, b: Basic) -> bool:
    """``a`` and ``b`` are one term (as given, or in normal form); False for what is not a term at all."""
    if a == b:
        return True
    try:
        return canon(a) == canon(b)
    except (TermError, ValueError, TypeError, AttributeError):
        return False  # the kernel says what is wrong with it


def _placeholder():
    from sympy.matrices.expressions import Identity

    return Identity(1)
