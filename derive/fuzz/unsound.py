"""The kernel's functions as they were before the fixes of the four holes of issue 27, for the regression mode.

Each hole was a kernel function that accepted too much (or a check the old kernel did not have).
:func:`reverted` puts the old behaviour back, monkeypatching the kernel's modules *by function name* for the
time of a ``with`` block, so that a test can show that the fuzzer finds the hole when it is present:

* ``instance`` — ``derive.kernel.checking._instance_maps`` and ``._instantiate``: instances of a ``forall``
  hypothesis were not checked for definedness (B := I_n·I_1 read as an n×1 matrix).
* ``recurrence_index`` — ``derive.kernel.checking._declare_families``, ``._check_family_recurrences`` and
  ``.induction_chains``: a recurrence could mention another index symbol, the induction variable included.
* ``circular_definition`` — ``derive.kernel.checking._check_acyclic`` (made a no-op; the fix added it),
  ``._check_definitions`` and ``._check_family_recurrences``: a definition could use a family whose recurrence
  uses the definition.
* ``pd_power`` — ``derive.kernel.judgments._positive_definite``: Aᵏ was judged positive definite for every
  positive definite A, which is false for non-symmetric A (C³ = −I for a positive definite C).
* ``schur`` (issue 29, not a hole any kernel had: a plausible slip in the Schur-complement rules) —
  ``derive.kernel.judgments._schur_invertible`` and ``derive.kernel.axioms._schur_side`` without the complement's
  invertibility: [[A, B], [C, D]] judged invertible, and rewritten by ``block_inverse_schur``, whenever A is
  (or, mirrored, D is), although [[A, v], [wᵀ, wᵀA⁻¹v]] is singular for every invertible A.

* ``psd_congruence``, ``one_sided``, ``sign_narrowing`` (plausible slips, not past holes; added with the
  generator's coverage of every judgment) — ``derive.kernel.judgments._semidefinite_congruence`` without c ≥ 0
  (I − B(BᵀB)⁻¹Bᵀ = 0 judged positive definite); ``._one_sided_inverse`` reading A B = I as making B A
  invertible too (U Uᵀ for a tall U with UᵀU = I); ``._narrowed_sign`` dropping 0 from r's signs (λ = λ₂ + μ
  judged non-zero).

* ``scalar_instance`` (issue 40, a hole the kernel had until then) — ``derive.kernel.checking.scalar_hypothesis_holds``
  with only the step's *dimensions* put into r of a cited theorem's scalar hypothesis λ = r, not its matrices: a
  theorem with λ = tr(s) cited at s := u in a proof that assumes λ = tr(s) gave its claim for u (λI₁ = u, so
  u = s for every 1×1 u and s).  Its copy is the kernel's code before that fix (commit ``ec2222c``), with the fixed
  kernel's signature ``(h, dims, mats, ctx)``.

* ``index_power`` (issue 41, a plausible slip, not a past hole) — ``derive.kernel.judgments._index_power_defined``
  without its side condition: γ^(k·t + c) taken as defined for every γ even where the exponent may be negative, so
  γ^(−t) or γ^(t − 1) with γ possibly 0 is accepted (at γ = 0, t = 1 it has no value).

* ``scaled_invertible``, ``scalar_fact``, ``diag_invertible``, ``ones_inner`` (issue 41, plausible slips in the rules
  that entered with it, not holes any kernel had) — ``derive.kernel.judgments._scaled_invertible`` without c ≠ 0 (c·M
  judged invertible whenever M is: t·XᵀX at t = 0); ``._scalar_fact`` matching a fact Q.nonzero(c) against every
  scalar that *contains* c (μ ≠ 0 read as μ + λ ≠ 0); ``._diag_invertible`` without c ≠ 0 (diag(c·1ₙ) invertible for
  every c); ``derive.kernel.axioms._ones_pair`` checking only the right factor (vᵀ1ₙ = n for every row vector v);
  ``derive.kernel.judgments._require_column`` accepting diag(M) of any M (``diag_column``: diag of a matrix has no
  value).

* ``tril_above``, ``tril_block_offset``, ``tril_scalar``, ``tril_symmetric``, ``tril_diag_scale``,
  ``unit_lower_triangular``, ``tril_square`` (issues 41 and 42, plausible slips in the causal mask's rules, not holes
  any kernel had) — the entries of ``derive.kernel.axioms.AXIOMS`` put back through :class:`_Table`: ``tril_block``
  keeping the blocks *above* the diagonal blocks and zeroing those below, or passing tril(Aᵢᵢ) (the diagonal kept) to
  the diagonal blocks of tril(grid, -1); ``tril_scalar`` giving a for tril(a, -1); ``tril_diagonal`` taking any matrix
  judged symmetric for diagonal (tril(XᵀX) = XᵀX); ``tril_diag_scale`` moving any first or last factor out of a tril,
  not only diag(v); ``derive.kernel.judgments.unit_lower_triangular`` taking a tril that keeps its diagonal (I −
  tril(I) = 0 "invertible"); ``._check_defined`` without tril's square check (tril of an n×p matrix has no value).
  ``tril_partition`` (``MASKED``) is the one the fuzzer cannot find, and why: ``tril_block`` without its check that the
  diagonal blocks are square rewrites only into grids with tril of a non-square block, which definedness refuses.

* ``kron_transpose``, ``kron_scale``, ``kron_judgment`` (issue 41, plausible slips in the Kronecker product's rules
  and judgment): ``kron_transpose`` giving (A ⊗ B)ᵀ = Bᵀ ⊗ Aᵀ; ``kron_scale`` dropping the right factor's coefficient
  (cA ⊗ dB = c(A ⊗ B)); ``derive.kernel.judgments._invertible`` taking A ⊗ B as invertible when one factor is.
  ``kron_mixed`` (checking only that the whole product conforms) and ``kron_inverse`` (without its invertibility
  check) are in ``MASKED``: definedness refuses every step they would add.

* ``stale_record`` (issue 40, a hole outside the kernel: ``RECORD_HOLES``) — ``derive.records.replay_proof`` as it was:
  a record's proof checked as it stands once its statement matched the source's on the keys the source's lemmas
  have, so a lemma recorded under a local hypothesis the source no longer states was "verified".  Found as a
  replay whose theorem does not state the source's statement (``harness.Report.replay_mismatches``).

The copies are the kernel's code at commit ``c057037`` (before the fixes), verbatim except that
``_instance_maps`` and ``_instantiate`` also take the fixed kernel's signatures ``(given, ctx, fail)`` and
``(entry, step, ctx, fail)``.  They call the kernel's other functions by name, so they stay what they were as
long as those keep their signatures.  Nothing here is used outside that mode.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from sympy import Basic, PolynomialError, Symbol
from sympy.matrices.expressions import (
    BlockMatrix,
    Identity,
    Inverse,
    MatAdd,
    MatMul,
    MatPow,
    MatrixSymbol,
    Transpose,
    ZeroMatrix,
)

from ..kernel import axioms, checking, judgments
from ..kernel.axioms import Rule, equation_rule
from ..kernel.checking import _all_terms, _defined, _member, _register, _same_shape, _step_defined_for_any_member
from ..kernel.judgments import (
    _SEARCH_DEPTH,
    Context,
    _block_diagonal,
    _check_defined,
    _congruence,
    _invertible,
    _square,
    invertible,
    positive,
    positive_definite,
    positive_semidefinite,
    schur_blocks,
    schur_complement,
    sign,
    symmetric,
)
from ..kernel.proof import Chain, Hypothesis, Induction, Proof, ProofError, Step
from ..kernel.scalars import CoefficientError, canon_coefficient, index_power, is_number, is_one_by_one
from ..kernel.terms import (
    MATRIX_NODES,
    Diag,
    FamilyMatrix,
    Kron,
    Ones,
    TermError,
    Tril,
    block,
    blocks_of,
    canon,
    dims_equal,
    factors_of,
    index_kind,
    inv,
    mul,
    require_exact_types,
    require_index,
    shape,
)

__all__ = ["HOLES", "MASKED", "reverted"]


def _instance_maps(given: dict, *rest) -> tuple[dict, dict]:
    # the old signature (given, fail, normal), or the fixed kernel's (given, ctx, fail) with the old cite's normal
    if len(rest) == 2 and not isinstance(rest[0], Context):
        fail, normal = rest
    else:
        ctx, fail = rest
        normal = lambda t: _defined(t, ctx, fail)  # noqa: E731
    """Dimension and matrix substitutions of an instance, checked: positive-integer dimensions, matrices of
    the instantiated symbol's shape (keyed by that symbol with its dimensions substituted), each ``normal``-ised."""
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
            mats[target] = normal(t)
    return dims, mats


def _instantiate(entry, step: Step, *rest) -> Rule:
    fail = rest[-1]  # the old signature (entry, step, fail), or the fixed kernel's (entry, step, ctx, fail)
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
    try:
        # exact node types here; definedness is checked where the instantiated rule's result is used
        dim_map, mat_map = _instance_maps(given, fail, lambda t: (require_exact_types(t), canon(t))[1])
        lhs_i = canon(lhs.xreplace(dim_map).xreplace(mat_map))
        rhs_i = canon(rhs.xreplace(dim_map).xreplace(mat_map))
    except (TermError, ValueError, TypeError) as exc:
        fail(f"cannot instantiate the hypothesis: {exc}")
    return equation_rule(lhs_i, rhs_i)


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
        ctx.families[f.name] = f


def _no_acyclicity_check(proof: Proof, fail) -> None:
    """The old kernel had no check that definitions and recurrences refer to each other without a cycle."""


def _check_definitions(proof: Proof, ctx: Context, fail) -> None:
    hypothesis_symbols = set()
    for h in proof.hypotheses:
        hypothesis_symbols |= h.lhs.atoms(MatrixSymbol) | h.rhs.atoms(MatrixSymbol)
    defined: set = set()
    used: set = set()  # symbols the earlier definitions already speak about
    for d in proof.definitions:
        sym = d.symbol
        if not isinstance(sym, MatrixSymbol):
            fail(f"definition {d.name} must define a matrix symbol")
        if sym in hypothesis_symbols or sym in defined or sym in used:
            fail(f"definition {d.name}: {sym.name} is not fresh")
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
            base = (_member(f, 0), canon(f.base))
            ctx.equations.append(base)
            _register(f"base:{f.name}", (base[0], base[1], ()), ctx, fail)
            _register(f"step:{f.name}", (_member(f, f.index + 1), canon(f.step), (f.index,)), ctx, fail)
            if _step_defined_for_any_member(f, ctx):
                ctx.total_families.add(f.name)
        earlier.add(f.name)


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


def _positive_definite(term, ctx: Context, depth: int) -> bool:
    if depth > _SEARCH_DEPTH or not _square(term):
        return False
    if isinstance(term, Identity) or ctx.has("positive_definite", term):
        return True
    if isinstance(term, (Inverse, MatPow)):
        return positive_definite(term.args[0], ctx, depth)
    if isinstance(term, Transpose):
        return positive_definite(term.args[0], ctx, depth)
    if isinstance(term, MatMul):
        coeff, mats = factors_of(term)
        if positive(coeff, ctx):
            if len(mats) == 1:
                return positive_definite(mats[0], ctx, depth)  # c·M, c > 0
            if len(mats) == 2 and mats[0] == Transpose(mats[1]):
                return _square(mats[1]) and invertible(mats[1], ctx, depth)  # Bᵀ B, B invertible
            middle = _congruence(mats)
            if middle is not None and all(_square(m) and invertible(m, ctx, depth) for m in mats):
                return positive_definite(middle, ctx, depth)  # F M Fᵀ, F square invertible
    if isinstance(term, MatAdd):  # positive semidefinite terms, one of them positive definite
        if all(positive_semidefinite(a, ctx, depth) for a in term.args):
            return any(positive_definite(a, ctx, depth) for a in term.args)
    diagonal = _block_diagonal(term)
    if diagonal is not None:
        return all(positive_definite(b, ctx, depth) for b in diagonal)
    return any(positive_definite(t, ctx, depth + 1) for t in ctx.equal_terms(term))


def _schur_invertible_unchecked(term, ctx: Context, depth: int) -> bool:
    """The Schur judgment without the complement: [[A, B], [C, D]] "invertible" when A (or D) is.  Unsound."""
    if depth >= _SEARCH_DEPTH:
        return False
    parts = schur_blocks(term)
    if parts is None:
        return False
    a, _, _, d = parts
    return invertible(a, ctx, depth) or invertible(d, ctx, depth)


def _schur_side_unchecked(t, ctx: Context, pivot_last: bool) -> tuple | None:
    """The side condition of the Schur rules without the complement's invertibility.  Unsound."""
    if type(t) is not Inverse:
        return None
    parts = schur_blocks(t.args[0])
    if parts is None:
        return None
    a, b, c, d = parts
    if pivot_last:
        a, b, c, d = d, c, b, a
    if not invertible(a, ctx):
        return None
    return a, b, c, d, schur_complement(a, b, c, d)


# --- plausible slips in three judgments (the fuzzer's coverage work): not holes any kernel had ------------------


def _semidefinite_congruence_any_sign(coeff, mats: list, ctx: Context, depth: int) -> bool | None:
    """c·F M Fᵀ "positive semidefinite" when M is, whatever the sign of c.  Unsound: I − B(BᵀB)⁻¹Bᵀ = 0 is then
    judged positive definite (I plus a "semidefinite" term), hence invertible."""
    middle = _congruence(mats)
    if middle is None:
        return None
    return positive_semidefinite(middle, ctx, depth)


_KERNEL_ONE_SIDED_INVERSE = judgments._one_sided_inverse  # the sound judgment, kept before any put-back


def _one_sided_inverse_either_order(term, ctx: Context) -> bool:
    """A B = I "makes" B A invertible too (true only when A and B are square).  Unsound: UᵀU = I for a tall U
    (n×p, orthonormal columns) does not make U Uᵀ (n×n, rank p) invertible."""
    if _KERNEL_ONE_SIDED_INVERSE(term, ctx):
        return True
    for lhs, rhs in ctx.equations:
        for product, unit in ((lhs, rhs), (rhs, lhs)):
            if isinstance(unit, Identity) and isinstance(product, MatMul) and factors_of(product)[0] == 1:
                _, mats = factors_of(product)
                for cut in range(1, len(mats)):
                    if term == canon(MatMul(*mats[cut:], *mats[:cut])):
                        return True
    return False


def _narrowed_sign_without_zero(declared: frozenset, value: Basic, ctx: Context, depth: int) -> frozenset:
    """λ = r read as "λ has r's sign and is non-zero".  Unsound: λ = λ₂ + μ is 0 where μ = −λ₂, and 1/λ has no value."""
    return (declared & (sign(value, ctx, depth + 1) - {0})) or declared


def _scalar_hypothesis_holds_dims_only(h: Hypothesis, dims: dict, mats: dict, ctx: Context) -> bool:
    """λ = r of a cited theorem "holds" when the citing proof has λ = r with r's *dimensions* instantiated, whatever
    the instance does to r's matrices (``mats`` is ignored).  Unsound: λ = tr(s) cited at s := u."""
    if h.lhs in dims:
        return False
    try:
        value = canon_coefficient(h.rhs.xreplace(dims), canon)
    except (CoefficientError, TermError, PolynomialError, ValueError, TypeError):
        return False
    return any(symbol == h.lhs and known == value for symbol, known in ctx.scalar_equations.values())


def _index_power_defined_for_any_base(c, ctx: Context) -> bool:
    """γ^(k·t + c) "defined" whenever it is an index power, whatever γ and the exponent's sign.  Unsound: γ^(−t) with
    γ = 0 and t ≥ 1 divides by zero."""
    if index_power(c) is None:
        raise TermError(f"{c} is not a power the kernel knows")
    return True


# --- plausible slips in the rules of issue 41 (definedness that follows, the ones vector, diag(v)) ----------------


def _scaled_invertible_any_coefficient(coeff, mats: list, ctx: Context, depth: int) -> bool:
    """c·M "invertible" whenever M = A₁⋯A_r is, whatever c.  Unsound: c may be 0 (t·XᵀX at t = 0, ν = λ + μ)."""
    if coeff == 1 or not mats:
        return False
    return invertible(mul(mats), ctx, depth)


def _scalar_fact_contained(c: Basic, ctx: Context) -> frozenset | None:
    """A fact Q.nonzero(c′) read as making every scalar that *contains* c′ non-zero.  Unsound: μ ≠ 0 says nothing
    about μ + λ or μ − 1."""
    if is_number(c):
        return None
    for key, signs in ctx.scalar_facts.items():
        if c == key or c.has(key):
            return signs
    return None


def _diag_invertible_any_coefficient(term, ctx: Context, depth: int) -> bool:
    """diag(c·1ₖ) "invertible" whatever c.  Unsound: diag(t·1ₖ) = 0 at t = 0."""
    _, mats = factors_of(term.args[0])
    return len(mats) == 1 and type(mats[0]) is Ones


def _any_vector(vector) -> None:
    """diag(M) "defined" for any matrix M, not only a column.  Unsound: diag of a p×p matrix has no meaning (no
    value)."""


def _ones_pair_right_only(left, right) -> bool:
    """The run x 1ₙ read as 1ₙᵀ1ₙ whenever x is a row of n entries (the left factor not checked).  Unsound: vᵀ1ₙ is
    the sum of v's entries, not n."""
    rows, cols = shape(left)
    return type(right) is Ones and is_number(rows) and rows == 1 and dims_equal(cols, right.args[0])


# --- plausible slips in the causal mask's rules and judgment (issues 41, 42) ---------------------------------------


def _partition(grid) -> tuple[list, list]:
    rows = blocks_of(grid)
    return [shape(row[0])[0] for row in rows], [shape(b)[1] for b in rows[0]]


def _tril_block_with(t, keep_above: bool = False, diagonal_offset=None, check_partition: bool = True):
    """``derive.kernel.axioms._tril_block`` with one of its parts changed (the slips below)."""
    if type(t) is not Tril or type(t.args[0]) is not BlockMatrix:
        return []
    grid = blocks_of(t.args[0])
    heights, widths = _partition(t.args[0])
    if check_partition and (len(heights) != len(widths) or not all(map(dims_equal, heights, widths))):
        return []
    offset = t.args[1]
    inner = offset if diagonal_offset is None else diagonal_offset

    def kept(i, j):
        return i < j if keep_above else i > j

    return [block([[Tril(b, inner) if i == j else b if kept(i, j) else ZeroMatrix(*shape(b)) for j, b in enumerate(row)]
                   for i, row in enumerate(grid)])]


def _tril_block_above(t, ctx):
    """tril([Aᵢⱼ]) with the blocks *above* the diagonal blocks kept and those below zeroed (the mask read as
    triu).  Unsound: tril([[A, B], [C, D]]) = [[tril(A), 0], [C, tril(D)]], not [[tril(A), B], [0, tril(D)]]."""
    return _tril_block_with(t, keep_above=True)


def _tril_block_offset_dropped(t, ctx):
    """tril([Aᵢⱼ], -1) with tril(Aᵢᵢ) (the diagonal kept) on the diagonal blocks: the offset not passed on.
    Unsound: the strictly lower part of a grid has tril(Aᵢᵢ, -1) on its diagonal blocks."""
    return _tril_block_with(t, diagonal_offset=0)


def _tril_block_any_partition(t, ctx):
    """tril([Aᵢⱼ]) split blockwise without the check that the diagonal blocks are square (heights = widths).
    *Masked*, not unsound in this kernel: the right side has tril(Aᵢᵢ) of each diagonal block, which is defined only
    for a square Aᵢᵢ, so every step the slip would add is refused by definedness (``MASKED``)."""
    return _tril_block_with(t, check_partition=False)


def _tril_scalar_strict_kept(t, ctx):
    """tril(a, k) = a for a literally 1×1 a, whatever k.  Unsound: tril(a, -1) = 0 (the one entry is on the
    diagonal, which the strict mask drops)."""
    if type(t) is Tril and is_one_by_one(t.args[0]):
        return [t.args[0]]
    return []


def _tril_diagonal_symmetric(t, ctx):
    """tril(D) = D (and tril(D, -1) = 0) for D = I, 0, diag(v) *or any matrix judged symmetric*.  Unsound: a symmetric
    matrix has entries above its diagonal (tril(XᵀX) ≠ XᵀX)."""
    if type(t) is Tril and (type(t.args[0]) in (Identity, ZeroMatrix, Diag) or symmetric(t.args[0], ctx)):
        return [t.args[0] if t.args[1] == 0 else ZeroMatrix(*shape(t.args[0]))]
    return []


def _tril_diag_scale_any_factor(t, ctx):
    """tril(F A) = F tril(A) and tril(A F) = tril(A) F for *any* first or last factor F, not only diag(v).
    Unsound: only a diagonal factor scales whole rows or columns (tril(B A) ≠ B tril(A))."""
    if type(t) is not Tril or type(t.args[0]) is not MatMul:
        return []
    coeff, mats = factors_of(t.args[0])
    out, offset = [], t.args[1]
    if len(mats) >= 2:
        out.append(mul(mats[0], Tril(mul(coeff, mats[1:]), offset)))
        out.append(mul(Tril(mul(coeff, mats[:-1]), offset), mats[-1]))
    return out


def _unit_lower_any_tril(term) -> bool:
    """I + Σ cᵢ·Dᵢ tril(Aᵢ, kᵢ) Eᵢ judged invertible for tril(·, 0) too, not only the strictly lower tril(·, -1).
    Unsound: I − tril(A) has the diagonal 1 − aᵢᵢ (I − tril(I) = 0)."""
    identities = 0
    for part in term.args:
        if type(part) is Identity:
            identities += 1
            continue
        _, mats = factors_of(part)
        masks = [m for m in mats if type(m) is Tril]
        if len(masks) != 1 or not all(m is masks[0] or type(m) in (Diag, Identity) for m in mats):
            return False
    return identities == 1


def _check_defined_tril_any_shape(term, ctx, depth: int = 0) -> None:
    """``derive.kernel.judgments._check_defined`` with tril(A) defined for any defined A, square or not (its
    argument checked, its shape not).  Unsound: tril of an n×p matrix has no value (the mask is square)."""
    if isinstance(term, Tril):
        ctx.tick()
        judgments._check_defined(term.args[0], ctx, depth)
        return
    _check_defined(term, ctx, depth)  # the kernel's own, which calls this one back for every sub-term


for _slip in (_tril_block_above, _tril_block_offset_dropped, _tril_block_any_partition, _tril_scalar_strict_kept,
              _tril_diagonal_symmetric, _tril_diag_scale_any_factor):
    _slip.runs = None  # each rewrites a tril node, never a run of a product (as the kernel's axioms.RUNS says)


# --- plausible slips in the Kronecker product's rules and judgment (issue 41) ---------------------------------------


def _kron_mixed_whole_product(t, ctx):
    """(A ⊗ B)(C ⊗ D) = AC ⊗ BD when the whole product conforms, cols(A)·cols(B) = rows(C)·rows(D), without the
    check that each pair does (2·3 = 3·2).  *Masked*, not unsound in this kernel (``MASKED``): where a pair does not
    conform, AC (or BD) is not a defined product — SymPy refuses to build it with numeric sizes (the rule then gives
    nothing), definedness refuses it with symbolic ones, and a literally 1×1 factor read as a scalar gives AC ⊗ BD of
    another shape than the product's, which the checker refuses."""
    coeff, mats = factors_of(t)
    if not isinstance(t, MatMul) or coeff != 1 or len(mats) != 2 or not all(type(m) is Kron for m in mats):
        return []
    (a, b), (c, d) = mats[0].args, mats[1].args
    if not dims_equal(shape(mats[0])[1], shape(mats[1])[0]):
        return []
    try:
        return [Kron(mul(a, c), mul(b, d))]
    except (TermError, ValueError):  # SymPy's ShapeError: numeric sizes that do not conform
        return []


def _kron_inverse_unchecked(t, ctx):
    """(A ⊗ B)⁻¹ = A⁻¹ ⊗ B⁻¹ for square A and B, without the check that each is shown invertible.  *Masked*
    (``MASKED``): the rewritten side holds A⁻¹ and B⁻¹, which definedness takes only for A and B shown invertible —
    exactly the check dropped (and (A ⊗ B)⁻¹ itself needs A ⊗ B shown invertible, which for square factors holds
    only where both are)."""
    if type(t) is Inverse and type(t.args[0]) is Kron and all(_square(f) for f in t.args[0].args):
        return [Kron(inv(t.args[0].args[0]), inv(t.args[0].args[1]))]
    return []


def _kron_transpose_swapped(t, ctx):
    """(A ⊗ B)ᵀ = Bᵀ ⊗ Aᵀ: the factors swapped, as (AB)ᵀ = BᵀAᵀ would have it.  Unsound: the shape is right
    ((c₂c₁)×(r₂r₁)), the entries are not ((A ⊗ B)ᵀ = Aᵀ ⊗ Bᵀ)."""
    if type(t) is Transpose and type(t.args[0]) is Kron:
        return [Kron(Transpose(t.args[0].args[1]), Transpose(t.args[0].args[0]))]
    return []


def _kron_scale_one_coefficient(t, ctx):
    """(cA) ⊗ (dB) = c (A ⊗ B): the right factor's coefficient dropped.  Unsound: A ⊗ 2B = 2(A ⊗ B), not A ⊗ B."""
    if type(t) is not Kron:
        return []
    (c, left), (d, right) = factors_of(t.args[0]), factors_of(t.args[1])
    if c == 1 and d == 1:
        return []
    return [mul(c, Kron(mul(left), mul(right)))]


def _invertible_kron_one_factor(term, ctx, depth):
    """``derive.kernel.judgments._invertible`` with A ⊗ B (A, B square) invertible when *one* factor is shown
    invertible, not both.  Unsound: A ⊗ 0 = 0, and A ⊗ vvᵀ has rank rank(A)."""
    if type(term) is Kron and all(_square(f) for f in term.args) and \
            any(invertible(f, ctx, depth) for f in term.args):
        return True
    return _invertible(term, ctx, depth)


_kron_mixed_whole_product.runs = axioms.RUNS["kron_mixed"]
for _slip in (_kron_inverse_unchecked, _kron_transpose_swapped, _kron_scale_one_coefficient):
    _slip.runs = None  # each rewrites a Transpose, Inverse or Kron node, never a run of a product


class _Table:
    """A table of the kernel (``axioms.AXIOMS``) with its entries as attributes, so that :func:`reverted` puts a rule
    of the table back by name like a function of a module."""

    def __init__(self, table: dict) -> None:
        object.__setattr__(self, "_table", table)

    def __getattr__(self, name: str):
        try:
            return self._table[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value) -> None:
        self._table[name] = value

    def __delattr__(self, name: str) -> None:
        del self._table[name]


_AXIOM_TABLE = _Table(axioms.AXIOMS)


#: hole -> (module, function name, old function) for each function put back.
HOLES = {
    "instance": ((checking, "_instance_maps", _instance_maps), (checking, "_instantiate", _instantiate)),
    "recurrence_index": ((checking, "_declare_families", _declare_families),
                         (checking, "_check_family_recurrences", _check_family_recurrences),
                         (checking, "induction_chains", induction_chains)),
    "circular_definition": ((checking, "_check_acyclic", _no_acyclicity_check),
                            (checking, "_check_definitions", _check_definitions),
                            (checking, "_check_family_recurrences", _check_family_recurrences)),
    "pd_power": ((judgments, "_positive_definite", _positive_definite),),
    "schur": ((judgments, "_schur_invertible", _schur_invertible_unchecked),
              (axioms, "_schur_side", _schur_side_unchecked)),
    "psd_congruence": ((judgments, "_semidefinite_congruence", _semidefinite_congruence_any_sign),),
    "one_sided": ((judgments, "_one_sided_inverse", _one_sided_inverse_either_order),),
    "sign_narrowing": ((judgments, "_narrowed_sign", _narrowed_sign_without_zero),),
    "scalar_instance": ((checking, "scalar_hypothesis_holds", _scalar_hypothesis_holds_dims_only),),
    "scaled_invertible": ((judgments, "_scaled_invertible", _scaled_invertible_any_coefficient),),
    "scalar_fact": ((judgments, "_scalar_fact", _scalar_fact_contained),),
    "diag_invertible": ((judgments, "_diag_invertible", _diag_invertible_any_coefficient),),
    "ones_inner": ((axioms, "_ones_pair", _ones_pair_right_only),),
    "diag_column": ((judgments, "_require_column", _any_vector),),
    "index_power": ((judgments, "_index_power_defined", _index_power_defined_for_any_base),),
    "tril_above": ((_AXIOM_TABLE, "tril_block", _tril_block_above),),
    "tril_block_offset": ((_AXIOM_TABLE, "tril_block", _tril_block_offset_dropped),),
    "tril_scalar": ((_AXIOM_TABLE, "tril_scalar", _tril_scalar_strict_kept),),
    "tril_symmetric": ((_AXIOM_TABLE, "tril_diagonal", _tril_diagonal_symmetric),),
    "tril_diag_scale": ((_AXIOM_TABLE, "tril_diag_scale", _tril_diag_scale_any_factor),),
    "unit_lower_triangular": ((judgments, "unit_lower_triangular", _unit_lower_any_tril),),
    "tril_square": ((judgments, "_check_defined", _check_defined_tril_any_shape),),
    "kron_transpose": ((_AXIOM_TABLE, "kron_transpose", _kron_transpose_swapped),),
    "kron_scale": ((_AXIOM_TABLE, "kron_scale", _kron_scale_one_coefficient),),
    "kron_judgment": ((judgments, "_invertible", _invertible_kron_one_factor),),
}

#: Slips that no proof can show, kept to say so (``tests/test_fuzz.py`` checks that the kernel refuses what they
#: would add): ``tril_partition`` drops tril_block's check that the diagonal blocks are square, but the rewritten grid
#: holds tril(Aᵢᵢ) of each diagonal block, defined only when Aᵢᵢ is square, so definedness refuses every step the
#: check would have refused (a zero-sized block row or column apart, where the blockwise tril is right anyway).
#: ``kron_mixed`` and ``kron_inverse`` (issue 41) likewise: kron_mixed checking only that the whole product conforms
#: gives AC ⊗ BD with a product that does not conform (or, a 1×1 factor read as a scalar, of another shape than the
#: product), and kron_inverse without its invertibility check gives A⁻¹ ⊗ B⁻¹, defined only for A and B shown
#: invertible: definedness (or the checker's shape check) refuses every step either would add.
MASKED = {"tril_partition": ((_AXIOM_TABLE, "tril_block", _tril_block_any_partition),),
          "kron_mixed": ((_AXIOM_TABLE, "kron_mixed", _kron_mixed_whole_product),),
          "kron_inverse": ((_AXIOM_TABLE, "kron_inverse", _kron_inverse_unchecked),)}


def _replay_proof_keys_present(statement, data, known=None):
    """``derive.records`` before issue 40: the record's proof checked as it is, once it "states" the source's statement
    — a lemma compared only on the keys the source's lemma has (a lemma with no local hypotheses has no
    ``hypotheses`` key, so a record of it under a hypothesis matched)."""
    from ..certificates.format import CertificateError, proof_from_data
    from ..kernel import check, proof_to_data

    try:
        proof = proof_from_data(data, known)
    except CertificateError:
        return None
    mine, want = proof_to_data(proof), dict(statement.data)
    if any(mine.get(key) != want.get(key) for key in ("theorem", "title", "statement", "hypotheses", "definitions",
                                                       "families", "claim")):
        return None
    recorded = {chain["name"]: chain for chain in mine["lemmas"]}
    for chain in want["lemmas"]:
        theirs = recorded.get(chain["name"])
        if theirs is None or any(theirs.get(k) != v for k, v in chain.items()):
            return None
    try:
        return check(proof)
    except ProofError:
        return None


def _records_module():
    from .. import records

    return records


#: Holes outside the kernel: what decided that a statement was verified (``stale_record``, issue 40: a replay of a
#: record whose lemma has a local hypothesis the source's lemma lost).  The fuzzer finds it as a replay whose theorem
#: does not state the source's statement (``Report.replay_mismatches``), not as a refuted claim.
RECORD_HOLES = {"stale_record": (("records", "replay_proof", _replay_proof_keys_present),)}


@contextlib.contextmanager
def reverted(hole: str) -> Iterator[None]:
    """Within the block, the kernel's functions of ``hole`` are the old, unsound ones (see the module's table)."""
    missing = object()
    table = HOLES if hole in HOLES else MASKED if hole in MASKED else None
    slips = table[hole] if table is not None else tuple((_records_module(), name, old)
                                                        for _, name, old in RECORD_HOLES[hole])
    saved = [(module, name, getattr(module, name, missing)) for module, name, _ in slips]
    try:
        for module, name, old in slips:
            setattr(module, name, old)
        yield
    finally:
        for module, name, current in reversed(saved):
            if current is missing:  # a function the fixed kernel added (the old one had no such check)
                delattr(module, name)
            else:
                setattr(module, name, current)
