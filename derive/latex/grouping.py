"""Which kernel steps share a displayed line: bookkeeping goes with the step it serves.

A kernel chain has one step per rewrite, and many of them are bookkeeping: a product with a zero or an
identity, a sum with zero, the transpose of zero, a single block, collecting like terms, zero or identity
blocks, the inverse of I, a 1×1 factor read as a scalar (:data:`BOOKKEEPING`).  Printed one per
line they bury the argument under ``X_q L + 0 \\cdot 0``.  :func:`display_groups` cuts a chain into
displayed lines, each a run of consecutive steps ending at the expression shown; every rule of every step
stays named beside its line, so nothing is hidden.  It looks only at rule names and at the expressions,
so it works on any chain, hand-written or machine-found:

* *Noise* of an expression: the zero factors of products and zero terms of sums, transposes, inverses or
  powers of 0 or I, identity factors of products, zero scalar coefficients and single-block matrices.
* A maximal run of bookkeeping steps is split where its noise is least: the steps up to there clean up
  after the meaningful step before the run and share its line; the rest prepare the meaningful step after
  it (``A = A I = A U U^T``) and share that one's line.  A run at the start of a chain that cleans up the
  chain's own left side is a line of its own; at the end of a chain, it joins the last line.
* A line is not shown, but joined to the next, when its expression holds zero blocks that a later line
  no longer has (the block products of ``[X_q\\; 0]`` ... are one line with the clean-up that follows
  them), when the next line repeats its meaningful rule and is less noisy, or when the line brings noise
  the line before did not have (``V^T V`` becomes ``I``) and the next line's bookkeeping removes it.
  Noise a line keeps from the line before (the ``I`` that a hypothesis ``A \\Gamma X^T T = ...`` needs
  with ``A = I``) is deliberate and stays shown.

:func:`argument_groups` goes further, for the body of the article (issue 44): it merges the displayed lines
into at most ``limit`` *moves*, so that a proof of 180 checked steps reads as an argument of a few lines.
Consecutive lines that cite the same thing (a definition unfolded 100 times), that apply the same rules (block
multiplication four times), or that only unfold definitions, are one move.  Then, while there are more than
``limit``, two neighbouring moves become one, hiding the expression between them; what is hidden first is what
matters least to a reader (:func:`rule_weight`): the result of plain algebra (it prepares the next citation),
then that of a definition or recurrence, and only last the result of a cited theorem, lemma or hypothesis; the
smallest merge first.  The complete chain is printed elsewhere (the article's appendix), so a move never loses
a step: it only shows fewer of the expressions between them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sympy import Basic
from sympy.matrices.expressions import BlockMatrix, MatrixExpr

from ..kernel import Chain, Step

__all__ = ["BOOKKEEPING", "CITING", "DEFINING", "Group", "argument_groups", "display_groups", "noise",
           "rule_weight"]

#: Rules that only tidy up: zeros, identities, single blocks, like terms, zero blocks, identity blocks, the
#: inverse of I, and moving a 1×1 matrix between the factors and the coefficient (it prints the same either way).
BOOKKEEPING = frozenset({"identity_mul", "zero_mul", "zero_add", "transpose_zero", "block_single", "collect",
                         "block_zero", "block_identity", "inverse_identity", "scalar_matrix"})

#: Kinds of rule (``KIND:NAME``) that cite something a reader must know: a theorem, a lemma, a hypothesis.
CITING = frozenset({"thm", "lemma", "hyp"})
#: Kinds of rule that unfold a definition: a defined symbol, the first member or the recurrence of a family.
DEFINING = frozenset({"def", "base", "step"})


@dataclass(frozen=True)
class Group:
    """Steps ``start`` to ``stop - 1`` of a chain, shown as one line with the expression of the last."""

    start: int
    stop: int
    steps: tuple[Step, ...]

    @property
    def expr(self) -> Basic:
        return self.steps[-1].expr

    @property
    def rules(self) -> tuple[str, ...]:
        return tuple(step.rule for step in self.steps)


def noise(expr: Basic) -> tuple[int, int]:
    """(zero noise, other noise) of a term: how much bookkeeping it still carries."""
    zero = other = 0
    stack = [expr]
    while stack:
        node = stack.pop()
        args = getattr(node, "args", ())
        if getattr(node, "is_MatMul", False):
            matrices = [a for a in args if isinstance(a, MatrixExpr)]
            coeff = [a for a in args if not isinstance(a, MatrixExpr)]  # numbers, scalar symbols, 1×1 matrices
            if len(matrices) + len(coeff) >= 2:
                zero += sum(1 for a in matrices if a.is_ZeroMatrix) + sum(1 for c in coeff if c == 0)
                other += sum(1 for a in matrices if a.is_Identity)
        elif getattr(node, "is_MatAdd", False):
            zero += sum(1 for a in args if getattr(a, "is_ZeroMatrix", False))
        elif getattr(node, "is_Transpose", False) or getattr(node, "is_Inverse", False) or \
                getattr(node, "is_MatPow", False):
            base = args[0]
            zero += bool(getattr(base, "is_ZeroMatrix", False))
            other += bool(getattr(base, "is_Identity", False))
        elif isinstance(node, BlockMatrix) and node.blockshape == (1, 1):
            other += 1
        if isinstance(node, BlockMatrix):
            stack.extend(node.blocks)  # the blocks, not the ImmutableMatrix wrapper's shape
        else:
            stack.extend(a for a in args if getattr(a, "is_Matrix", False))
    return zero, other


def _key(step: Step) -> tuple:
    return step.rule, step.instance


def display_groups(chain: Chain) -> list[Group]:
    """The displayed lines of ``chain``: consecutive runs of its steps, covering every step once, in order."""
    steps = chain.steps
    if not steps:
        return []
    exprs = [chain.lhs, *(s.expr for s in steps)]  # exprs[i] is the expression after step i (1-based)
    noises = [noise(e) for e in exprs]
    total = [z + o for z, o in noises]
    book = [s.rule in BOOKKEEPING for s in steps]
    # owner[i]: the index of the step whose line step i+1 joins (a meaningful step's own index, or None
    # for a run of clean-up at the start, which becomes its own line)
    owner: list[int | None] = [None] * len(steps)
    i = 0
    while i < len(steps):
        if not book[i]:
            owner[i] = i
            i += 1
            continue
        j = i
        while j < len(steps) and book[j]:
            j += 1
        # steps i..j-1 are bookkeeping; expressions exprs[i] (before) .. exprs[j] (after the run)
        before = i - 1 if i > 0 else None
        after = j if j < len(steps) else None
        cut = min(range(i, j + 1), key=lambda t: (total[t], -t))  # least noise, latest: steps i..cut-1 go back
        for t in range(i, j):
            back = t < cut
            if back and before is not None:
                owner[t] = before
            elif not back and after is not None:
                owner[t] = after
            elif before is not None:
                owner[t] = before
            else:
                owner[t] = None if after is None or back else after
        i = j
    # runs of the same owner are the lines
    groups: list[list[int]] = []
    for index, who in enumerate(owner):
        if groups and owner[groups[-1][0]] == who:
            groups[-1].append(index)
        else:
            groups.append([index])
    groups = _fold(groups, steps, exprs, noises, total, book)
    return [Group(g[0], g[-1] + 1, tuple(steps[k] for k in g)) for g in groups]


def _fold(groups: list[list[int]], steps: Sequence[Step], exprs, noises, total, book) -> list[list[int]]:
    """Join a line to the next while its expression has zero noise that a later one lost, or repeats a rule."""
    later_zero = [0] * (len(exprs) + 1)  # least zero noise of exprs[e:] (exclusive of e)
    best = 1 << 30
    for e in range(len(exprs) - 1, -1, -1):
        later_zero[e] = best
        best = min(best, noises[e][0])

    def meaningful(group: list[int]) -> set:
        return {_key(steps[k]) for k in group if not book[k]}

    out = list(groups)
    index = len(out) - 2
    while index >= 0:
        end = out[index][-1] + 1  # exprs index of the line's expression
        nxt_end = out[index + 1][-1] + 1
        prev_end = out[index - 1][-1] + 1 if index else 0
        zero = noises[end][0]
        repeats = meaningful(out[index]) & meaningful(out[index + 1])
        brought = total[end] > total[prev_end] and total[nxt_end] < total[end] and any(book[k] for k in out[index + 1])
        if (zero and later_zero[end] < zero) or (repeats and total[end] > total[nxt_end]) or brought:
            out[index:index + 2] = [out[index] + out[index + 1]]
        index -= 1
    return out


def rule_weight(rule: str) -> int:
    """How much a step matters to the argument a reader follows: 3 for a citation (theorem, lemma, hypothesis,
    the induction hypothesis), 2 for a definition or recurrence, 1 for an algebraic axiom, 0 for bookkeeping."""
    kind, sep, _ = rule.partition(":")
    if sep and kind in CITING:
        return 3
    if sep and kind in DEFINING:
        return 2
    if sep:
        return 3  # an unknown kind of citation: shown, never folded away first
    return 0 if rule in BOOKKEEPING else 1


def _cited(steps: Sequence[Step]) -> tuple:
    """The rules of a line's citations and definitions, each once, in order."""
    return tuple(dict.fromkeys(s.rule for s in steps if rule_weight(s.rule) >= 2))


def _applied(steps: Sequence[Step]) -> frozenset:
    """The rules of a line but its bookkeeping."""
    return frozenset(s.rule for s in steps if s.rule not in BOOKKEEPING)


def _unfolds(steps: Sequence[Step]) -> bool:
    """Whether a line only unfolds definitions or recurrences (with the bookkeeping they need)."""
    weights = {rule_weight(s.rule) for s in steps}
    return 2 in weights and weights <= {0, 2}


def argument_groups(chain: Chain, limit: int) -> list[Group]:
    """At most ``limit`` moves of ``chain`` (at least one), each a run of consecutive steps ending at the expression
    shown: the displayed lines of :func:`display_groups`, merged where it hides least (see the module's text).

    Deterministic and generic: only the rules' kinds and the number of steps are looked at.
    """
    lines = [list(range(g.start, g.stop)) for g in display_groups(chain)]
    if not lines:
        return []
    steps = chain.steps
    limit = max(1, limit)
    merged = [lines[0]]
    for line in lines[1:]:  # a line citing just what the line before cited continues its move, and so does
        last, this = [steps[k] for k in merged[-1]], [steps[k] for k in line]  # one unfolding definitions after one
        if (_cited(last) and _cited(last) == _cited(this)) or (_unfolds(last) and _unfolds(this)) or \
                (_applied(last) and _applied(last) == _applied(this)):
            merged[-1] = merged[-1] + line
        else:
            merged.append(line)
    lines = merged
    while len(lines) > limit:
        best = None
        for b in range(len(lines) - 1):  # merging b and b + 1 hides the expression at the end of line b
            here, after = [steps[k] for k in lines[b]], [steps[k] for k in lines[b + 1]]
            weight = max(rule_weight(s.rule) for s in here)
            same = bool(_cited(here)) and _cited(here) == _cited(after)
            rank = 0 if same else 1 if weight <= 1 else 2 if weight == 2 else 3
            cost = (rank, len(here) + len(after), b)
            if best is None or cost < best[0]:
                best = (cost, b)
        b = best[1]
        lines[b:b + 2] = [lines[b] + lines[b + 1]]
    return [Group(g[0], g[-1] + 1, tuple(steps[k] for k in g)) for g in lines]
