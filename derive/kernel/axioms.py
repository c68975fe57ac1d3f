"""The matrix-algebra axioms: each an identity of real matrices under the side conditions it checks.

Part of the trusted core.  The table in ``docs/kernel.md`` lists them.
"""

from __future__ import annotations

from collections.abc import Callable

from sympy import Add, Basic
from sympy.matrices.expressions import BlockMatrix, Identity, Inverse, MatAdd, MatMul, Trace, Transpose, ZeroMatrix

from .budget import charge
from .judgments import (
    Context,
    _block_diagonal,
    _is_integer,
    _square,
    invertible,
    nonzero,
    positive_power_base,
    schur_blocks,
    schur_complement,
    symmetric,
)
from .scalars import is_one_by_one
from .terms import (
    Diag,
    Kron,
    Ones,
    Tril,
    add,
    block,
    blocks_of,
    canon,
    dims_equal,
    exponent_form,
    factors_of,
    inv,
    mul,
    power,
    shape,
)

__all__ = ["AXIOMS", "RUNS", "Rule", "equation_rule", "scalar_equation_rule"]

# Each axiom maps a term (a node, or a run of two or more adjacent factors of a product)
# to the terms it may be rewritten to.  Each is an identity of real matrices under the
# side conditions it checks; definedness of both sides is checked separately.

Rule = Callable[[Basic, Context], list[Basic]]


def _transpose_product(t, ctx):
    if isinstance(t, Transpose) and isinstance(t.args[0], MatMul):
        coeff, mats = factors_of(t.args[0])
        return [mul(coeff, [Transpose(m) for m in reversed(mats)])]
    return []


def _transpose_transpose(t, ctx):
    if isinstance(t, Transpose) and isinstance(t.args[0], Transpose):
        return [t.args[0].args[0]]
    return []


def _transpose_sum(t, ctx):
    if isinstance(t, Transpose) and isinstance(t.args[0], MatAdd):
        return [add([Transpose(a) for a in t.args[0].args])]
    return []


def _transpose_symmetric(t, ctx):
    if isinstance(t, Transpose) and symmetric(t.args[0], ctx):
        return [t.args[0]]
    return []


def _transpose_inverse(t, ctx):
    if isinstance(t, Transpose) and isinstance(t.args[0], Inverse):
        return [inv(Transpose(t.args[0].args[0]))]
    return []


def _transpose_zero(t, ctx):
    if isinstance(t, Transpose) and isinstance(t.args[0], ZeroMatrix):
        rows, cols = shape(t.args[0])
        return [ZeroMatrix(cols, rows)]
    return []


def _inverse_product(t, ctx):
    """(c A₁⋯A_r)⁻¹ = c⁻¹ A_r⁻¹⋯A₁⁻¹ (every Aᵢ square and invertible, c ≠ 0); else (issue 41) the coefficient alone
    taken out, (c M)⁻¹ = c⁻¹ M⁻¹ for the product M = A₁⋯A_r (c ≠ 1, r ≥ 2: M invertible, c ≠ 0), so (σ²XᵀX)⁻¹ =
    σ⁻²(XᵀX)⁻¹ whatever the shapes of M's factors."""
    if isinstance(t, Inverse) and isinstance(t.args[0], MatMul):
        coeff, mats = factors_of(t.args[0])
        if nonzero(coeff, ctx) and all(_square(m) and invertible(m, ctx) for m in mats):
            return [mul(1 / coeff, [inv(m) for m in reversed(mats)])]
        if coeff != 1 and len(mats) > 1 and nonzero(coeff, ctx) and invertible(mul(mats), ctx):
            return [mul(1 / coeff, inv(mul(mats)))]
    return []


def _inverse_identity(t, ctx):
    if isinstance(t, Inverse) and isinstance(t.args[0], Identity):
        return [t.args[0]]
    return []


def _inverse_inverse(t, ctx):
    if isinstance(t, Inverse) and isinstance(t.args[0], Inverse):
        return [t.args[0].args[0]]
    return []


def _inverse_cancel(t, ctx):
    """A⁻¹ A = I and A A⁻¹ = I, where A may be a run of several factors."""
    coeff, mats = factors_of(t)
    if coeff != 1 or len(mats) < 2:
        return []
    out = []
    if isinstance(mats[0], Inverse) and mats[0].args[0] == canon(mul(mats[1:])):
        out.append(Identity(shape(mats[0])[0]))
    if isinstance(mats[-1], Inverse) and mats[-1].args[0] == canon(mul(mats[:-1])):
        out.append(Identity(shape(mats[-1])[0]))
    return out


def _power_combine(t, ctx):
    """A^a A^b = A^(a+b) for two adjacent factors with the same base (A = A^1, A⁻¹ = A^-1)."""
    coeff, mats = factors_of(t)
    if coeff != 1 or len(mats) != 2:
        return []
    (base1, a), (base2, b) = exponent_form(mats[0]), exponent_form(mats[1])
    if base1 != base2 or not _square(base1):
        return []
    if not (_is_integer(a) and _is_integer(b)) and not positive_power_base(base1, ctx):
        return []
    if (a < 0 or b < 0 or a + b < 0) and not invertible(base1, ctx):
        return []
    return [power(base1, a + b)]


BLOCK_PRODUCT_UNITS = 100  # units per block product (and its share of the sums) of block_multiply, charged up front


def _common_ends(mats: list, target) -> tuple[int, int]:
    """(common prefix, common suffix) of ``mats`` and the factors of ``target`` (coefficients aside)."""
    other = factors_of(target)[1]
    prefix = next((k for k, (a, b) in enumerate(zip(mats, other, strict=False)) if a != b), min(len(mats), len(other)))
    suffix = next((k for k, (a, b) in enumerate(zip(reversed(mats), reversed(other), strict=False)) if a != b),
                  min(len(mats), len(other)))
    return prefix, suffix


def _identity_mul(t, ctx, target=None):
    """Drop one identity factor; with a ``target``, only where dropping it can give the target."""
    coeff, mats = factors_of(t)
    if not isinstance(t, MatMul) or len(mats) < 2:
        return []
    positions = range(len(mats))
    if target is not None:
        prefix, suffix = _common_ends(mats, target)
        positions = range(max(len(mats) - 1 - suffix, 0), min(prefix, len(mats) - 1) + 1)
    out, seen = [], set()
    for i in positions:
        if isinstance(mats[i], Identity) and (i == 0 or mats[i - 1] != mats[i]):  # equal neighbours: one result
            ctx.tick()
            result = mul(coeff, mats[:i], mats[i + 1 :])
            if result not in seen:
                seen.add(result)
                out.append(result)
    return out


def _zero_mul(t, ctx):
    coeff, mats = factors_of(t)
    if isinstance(t, MatMul) and any(isinstance(m, ZeroMatrix) for m in mats):
        return [ZeroMatrix(*shape(t))]
    return []


def _zero_add(t, ctx):
    if not isinstance(t, MatAdd):
        return []
    keep = [a for a in t.args if not isinstance(a, ZeroMatrix)]
    if len(keep) == len(t.args):
        return []
    return [add(keep) if keep else ZeroMatrix(*shape(t))]


def _collect(t, ctx, target=None):
    """a A + b A = (a + b) A: the terms of a sum with the same matrix part, collected (0·A is A's zero).

    Near-linear in the size of the sum: each term's matrix part is formed once, and with a ``target`` only
    the group whose collected term the target holds is rebuilt.
    """
    if not isinstance(t, MatAdd):
        return []
    groups: dict = {}
    for index, term in enumerate(t.args):
        if not index % 256:
            ctx.tick()
        coeff, mats = factors_of(term)
        groups.setdefault(mul(mats), []).append((index, coeff))
    wanted = None
    if target is not None:
        wanted = target.args if isinstance(target, MatAdd) else (target,)
        wanted_set = set(wanted)
    out = []
    for part, members in groups.items():
        if len(members) < 2:
            continue
        collected = mul(sum(coeff for _, coeff in members), part)
        if wanted is not None and (len(wanted) != max(len(t.args) - len(members) + 1, 1)
                                   or collected not in wanted_set):
            continue
        ctx.tick()
        taken = {index for index, _ in members}
        rest = [a for index, a in enumerate(t.args) if index not in taken]
        out.append(add(rest, collected))
    return out


def _distribute(t, ctx, target=None):
    """A (B + C) D = A B D + A C D, for each sum among the factors (with a ``target``, sums of its length)."""
    coeff, mats = factors_of(t)
    if not isinstance(t, MatMul):
        return []
    out = []
    for i, m in enumerate(mats):
        if not isinstance(m, MatAdd):
            continue
        if target is not None and (not isinstance(target, MatAdd) or len(target.args) != len(m.args)):
            continue
        ctx.tick()
        out.append(add([mul(coeff, mats[:i], term, mats[i + 1 :]) for term in m.args]))
    return out


def _block_multiply(t, ctx):
    """Product of two block matrices with conforming partitions (a plain matrix is one block)."""
    coeff, mats = factors_of(t)
    if coeff != 1 or len(mats) != 2 or not any(isinstance(m, BlockMatrix) for m in mats):
        return []
    left, right = (blocks_of(m) if isinstance(m, BlockMatrix) else [[m]] for m in mats)
    inner_left = [shape(b)[1] for b in left[0]]
    inner_right = [shape(row[0])[0] for row in right]
    if len(inner_left) != len(inner_right) or not all(map(dims_equal, inner_left, inner_right)):
        return []
    # each block product and sum is work: charged before any is formed, so a product too large for the
    # budget is refused at once
    charge(BLOCK_PRODUCT_UNITS * len(left) * len(inner_left) * len(right[0]))
    product = [
        [add([mul(left[i][r], right[r][j]) for r in range(len(inner_left))]) for j in range(len(right[0]))]
        for i in range(len(left))
    ]
    return [block(product)]


def _block_transpose(t, ctx):
    if isinstance(t, Transpose) and isinstance(t.args[0], BlockMatrix):
        grid = blocks_of(t.args[0])
        return [block([[Transpose(grid[i][j]) for i in range(len(grid))] for j in range(len(grid[0]))])]
    return []


def _block_single(t, ctx):
    if isinstance(t, BlockMatrix) and t.blockshape == (1, 1):
        return [blocks_of(t)[0][0]]
    return []


def _block_flatten(t, ctx):
    """A k×1 grid of block rows [[R₁], …, [R_k]], each Rᵢ a 1×m block matrix [Aᵢ₁ … Aᵢₘ], is the k×m grid [Aᵢⱼ];
    a 1×k grid of m×1 block columns likewise (issue 42: a product of stacked rows by a transpose of stacked rows
    gives one).  Side condition: every Rᵢ is a block matrix of one block row (column) and all have one column
    (row) partition, so the flattened grid has the same entries in the same places."""
    if type(t) is not BlockMatrix:
        return []
    grid = blocks_of(t)
    if len(grid[0]) == 1 and len(grid) > 1:
        inner = [row[0] for row in grid]
        if all(type(b) is BlockMatrix and b.blockshape[0] == 1 for b in inner) and \
                all(_same_columns(inner[0], b) for b in inner[1:]):
            return [block([blocks_of(b)[0] for b in inner])]
    if len(grid) == 1 and len(grid[0]) > 1:
        inner = grid[0]
        if all(type(b) is BlockMatrix and b.blockshape[1] == 1 for b in inner) and \
                all(_same_rows(inner[0], b) for b in inner[1:]):
            columns = [blocks_of(b) for b in inner]
            return [block([[column[i][0] for column in columns] for i in range(len(columns[0]))])]
    return []


def _same_columns(a: BlockMatrix, b: BlockMatrix) -> bool:
    """One partition of the columns (widths of the block columns, in order)."""
    cols_a, cols_b = _partition(a)[1], _partition(b)[1]
    return len(cols_a) == len(cols_b) and all(map(dims_equal, cols_a, cols_b))


def _same_rows(a: BlockMatrix, b: BlockMatrix) -> bool:
    """One partition of the rows (heights of the block rows, in order)."""
    rows_a, rows_b = _partition(a)[0], _partition(b)[0]
    return len(rows_a) == len(rows_b) and all(map(dims_equal, rows_a, rows_b))


def _partition(term: BlockMatrix) -> tuple[list, list]:
    """(heights of the block rows, widths of the block columns)."""
    grid = blocks_of(term)
    return [shape(row[0])[0] for row in grid], [shape(b)[1] for b in grid[0]]


def _same_partition(a: BlockMatrix, b: BlockMatrix) -> bool:
    (rows_a, cols_a), (rows_b, cols_b) = _partition(a), _partition(b)
    return (len(rows_a) == len(rows_b) and len(cols_a) == len(cols_b)
            and all(map(dims_equal, rows_a, rows_b)) and all(map(dims_equal, cols_a, cols_b)))


def _block_add(t, ctx):
    """[Aᵢⱼ] + [Bᵢⱼ] = [Aᵢⱼ + Bᵢⱼ]: the block matrices of a sum with one partition, added blockwise."""
    if not isinstance(t, MatAdd):
        return []
    blocks = [(i, a) for i, a in enumerate(t.args) if isinstance(a, BlockMatrix)]
    out, used = [], set()
    for i, first in blocks:
        if i in used:
            continue
        group = [(i, first)] + [(j, b) for j, b in blocks if j > i and j not in used and _same_partition(first, b)]
        if len(group) < 2:
            continue
        ctx.tick()
        members = {j for j, _ in group}
        used |= members
        grids = [blocks_of(b) for _, b in group]
        merged = block([[add([g[r][c] for g in grids]) for c in range(len(grids[0][0]))]
                        for r in range(len(grids[0]))])
        rest = [a for k, a in enumerate(t.args) if k not in members]
        out.append(add(rest, merged) if rest else merged)
    return out


def _block_scale(t, ctx):
    """c [Aᵢⱼ] = [c Aᵢⱼ]."""
    coeff, mats = factors_of(t)
    if isinstance(t, MatMul) and coeff != 1 and len(mats) == 1 and isinstance(mats[0], BlockMatrix):
        return [block([[mul(coeff, b) for b in row] for row in blocks_of(mats[0])])]
    return []


def _block_identity(t, ctx):
    """[[I, 0], [0, I]] = I: identity blocks on the diagonal, zero blocks off it (read backwards, I split)."""
    diagonal = _block_diagonal(t)
    if diagonal is not None and all(isinstance(b, Identity) for b in diagonal):
        return [Identity(Add(*[shape(b)[0] for b in diagonal]))]
    return []


def _block_zero(t, ctx):
    """A block matrix of zero blocks is the zero matrix of its size (read backwards, 0 split)."""
    if isinstance(t, BlockMatrix) and all(isinstance(b, ZeroMatrix) for row in blocks_of(t) for b in row):
        heights, widths = _partition(t)
        return [ZeroMatrix(Add(*heights), Add(*widths))]
    return []


def _block_inverse_diagonal(t, ctx):
    """[[A, 0], [0, D]]⁻¹ = [[A⁻¹, 0], [0, D⁻¹]] for square invertible diagonal blocks."""
    if isinstance(t, Inverse) and isinstance(t.args[0], BlockMatrix):
        diagonal = _block_diagonal(t.args[0])
        if diagonal is not None and all(invertible(b, ctx) for b in diagonal):
            grid = blocks_of(t.args[0])
            return [block([[inv(b) if i == j else b for j, b in enumerate(row)] for i, row in enumerate(grid)])]
    return []


# --- the Schur-complement inverse of a 2×2 block matrix (issue 29) --------------------------------


def _schur_inverse(a, b, c, d, s) -> BlockMatrix:
    """[[A⁻¹ + A⁻¹ B S⁻¹ C A⁻¹, −A⁻¹ B S⁻¹], [−S⁻¹ C A⁻¹, S⁻¹]] for the complement S = D − C A⁻¹ B."""
    ai, si = inv(a), inv(s)
    return block([[add(ai, mul(ai, b, si, c, ai)), mul(-1, ai, b, si)], [mul(-1, si, c, ai), si]])


def _schur_side(t, ctx, pivot_last: bool) -> tuple | None:
    """The side condition of both Schur rules: ``t`` is [[A, B], [C, D]]⁻¹ with A, D square, the pivot (A, or D
    for ``pivot_last``) invertible and its complement (S = D − C A⁻¹ B, or T = A − B D⁻¹ C) invertible.  Returns
    (pivot, B, C, other diagonal block, complement) with B and C swapped for the mirror, else None."""
    if type(t) is not Inverse:
        return None
    parts = schur_blocks(t.args[0])
    if parts is None:
        return None
    ctx.tick()
    a, b, c, d = parts
    if pivot_last:
        a, b, c, d = d, c, b, a
    if not invertible(a, ctx):
        return None
    complement = schur_complement(a, b, c, d)
    if not invertible(complement, ctx):
        return None
    return a, b, c, d, complement


def _block_inverse_schur(t, ctx):
    """[[A, B], [C, D]]⁻¹ by the Schur complement S = D − C A⁻¹ B of A: A, D square, A and S invertible."""
    side = _schur_side(t, ctx, False)
    return [] if side is None else [_schur_inverse(*side)]


def _block_inverse_schur_mirror(t, ctx):
    """[[A, B], [C, D]]⁻¹ by the Schur complement T = A − B D⁻¹ C of D: A, D square, D and T invertible; the
    result [[T⁻¹, −T⁻¹ B D⁻¹], [−D⁻¹ C T⁻¹, D⁻¹ + D⁻¹ C T⁻¹ B D⁻¹]] is ``_schur_inverse`` of the grid with its
    block rows and columns both swapped, swapped back."""
    side = _schur_side(t, ctx, True)
    if side is None:
        return []
    (dd, dc), (db, da) = blocks_of(_schur_inverse(*side))
    return [block([[da, db], [dc, dd]])]


def _scalar_matrix(t, ctx):
    """c·A s B = (c·tr s)·A B: a literally 1×1 factor of a product is the scalar it holds (read backwards,
    a 1×1 matrix in the coefficient goes back into the product where it conforms)."""
    coeff, mats = factors_of(t)
    if not isinstance(t, MatMul) or len(mats) < 2:
        return []
    return [mul(coeff * Trace(m), mats[:i], mats[i + 1 :]) for i, m in enumerate(mats)
            if is_one_by_one(m) and not isinstance(m, (Identity, ZeroMatrix))]


def _ones_inner(t, ctx):
    """1ₙᵀ1ₙ = n·I₁ (issue 41): the ones vector's inner product with itself is its length, a 1×1 matrix
    (``identity_mul`` and ``scalar_matrix`` then take the I₁ out).  Side condition: the run is 1ₙᵀ then 1ₙ, both
    ones vectors of one length n (an index may be 0: 1₀ᵀ1₀ = 0)."""
    coeff, mats = factors_of(t)
    if isinstance(t, MatMul) and coeff == 1 and len(mats) == 2 and _ones_pair(mats[0], mats[1]):
        return [mul(mats[1].args[0], Identity(1))]
    return []


def _ones_pair(left, right) -> bool:
    """``left`` is 1ₙᵀ and ``right`` is 1ₙ, of one length n."""
    return (type(right) is Ones and type(left) is Transpose and type(left.args[0]) is Ones
            and dims_equal(left.args[0].args[0], right.args[0]))


def _transpose_scalar(t, ctx):
    """Mᵀ = M for a literally 1×1 M (its shape is 1×1 as written, not by a dimension that might be 1): a 1×1
    matrix is its own transpose, so yᵀXΓx_q = (yᵀXΓx_q)ᵀ = x_qᵀΓᵀXᵀy (issue 29)."""
    if isinstance(t, Transpose) and is_one_by_one(t.args[0]):
        return [t.args[0]]
    return []


# --- the causal mask: tril(A) = A ⊙ M, Mᵢⱼ = [j ≤ i]; tril(A, -1) = A ⊙ M', M'ᵢⱼ = [j < i] (issues 41, 42) ----------


def _tril_block(t, ctx):
    """tril([Aᵢⱼ]) = [Lᵢⱼ] with Lᵢᵢ = tril(Aᵢᵢ) (same offset), Lᵢⱼ = Aᵢⱼ below the diagonal blocks and 0 above.
    Side condition: the grid is k×k and each block row's height equals the same block column's width (the diagonal
    blocks square), so block (i, j) holds rows of index ≥ every column index exactly when i > j."""
    if type(t) is not Tril or type(t.args[0]) is not BlockMatrix:
        return []
    grid = blocks_of(t.args[0])
    heights, widths = _partition(t.args[0])
    if len(heights) != len(widths) or not all(map(dims_equal, heights, widths)):
        return []
    ctx.tick()
    offset = t.args[1]
    return [block([[Tril(b, offset) if i == j else b if i > j else ZeroMatrix(*shape(b)) for j, b in enumerate(row)]
                   for i, row in enumerate(grid)])]


def _tril_scalar(t, ctx):
    """tril(a) = a and tril(a, -1) = 0 for a literally 1×1 a (its one entry is on the diagonal)."""
    if type(t) is Tril and is_one_by_one(t.args[0]):
        return [t.args[0] if t.args[1] == 0 else ZeroMatrix(1, 1)]
    return []


def _tril_sum(t, ctx):
    """tril(A + B) = tril(A) + tril(B) (a mask is applied entrywise)."""
    if type(t) is Tril and type(t.args[0]) is MatAdd:
        return [add([Tril(a, t.args[1]) for a in t.args[0].args])]
    return []


def _tril_scale(t, ctx):
    """tril(c·A) = c·tril(A) for a scalar coefficient c ≠ 1 (a mask is applied entrywise)."""
    if type(t) is Tril and type(t.args[0]) is MatMul:
        coeff, mats = factors_of(t.args[0])
        if coeff != 1:
            return [mul(coeff, Tril(mul(mats), t.args[1]))]
    return []


def _tril_diagonal(t, ctx):
    """tril(D) = D and tril(D, -1) = 0 for D = I, 0 or diag(v) (nothing of D is above its diagonal)."""
    if type(t) is Tril and type(t.args[0]) in (Identity, ZeroMatrix, Diag):
        return [t.args[0] if t.args[1] == 0 else ZeroMatrix(*shape(t.args[0]))]
    return []


def _tril_diag_scale(t, ctx):
    """tril(D A) = D tril(A) and tril(A D) = tril(A) D for D = diag(v), the first or last of two or more factors (a
    diagonal factor scales rows or columns, which the mask keeps or drops whole); the coefficient stays inside."""
    if type(t) is not Tril or type(t.args[0]) is not MatMul:
        return []
    coeff, mats = factors_of(t.args[0])
    out, offset = [], t.args[1]
    if len(mats) >= 2 and type(mats[0]) is Diag:
        out.append(mul(mats[0], Tril(mul(coeff, mats[1:]), offset)))
    if len(mats) >= 2 and type(mats[-1]) is Diag:
        out.append(mul(Tril(mul(coeff, mats[:-1]), offset), mats[-1]))
    return out


# --- the Kronecker product A ⊗ B (issue 41): block (i, j) of A ⊗ B is Aᵢⱼ·B ----------------------------------------


def _kron_mixed(t, ctx):
    """(A ⊗ B)(C ⊗ D) = (AC) ⊗ (BD).  Side condition: cols(A) = rows(C) and cols(B) = rows(D) each (the whole
    product conforming is not enough: 2·3 = 3·2)."""
    coeff, mats = factors_of(t)
    if not isinstance(t, MatMul) or coeff != 1 or len(mats) != 2 or not all(type(m) is Kron for m in mats):
        return []
    (a, b), (c, d) = mats[0].args, mats[1].args
    if dims_equal(shape(a)[1], shape(c)[0]) and dims_equal(shape(b)[1], shape(d)[0]):
        return [Kron(mul(a, c), mul(b, d))]
    return []


def _kron_transpose(t, ctx):
    """(A ⊗ B)ᵀ = Aᵀ ⊗ Bᵀ."""
    if type(t) is Transpose and type(t.args[0]) is Kron:
        return [Kron(Transpose(t.args[0].args[0]), Transpose(t.args[0].args[1]))]
    return []


def _kron_inverse(t, ctx):
    """(A ⊗ B)⁻¹ = A⁻¹ ⊗ B⁻¹.  Side condition: A and B square and shown invertible."""
    if type(t) is Inverse and type(t.args[0]) is Kron and all(_square(f) and invertible(f, ctx)
                                                               for f in t.args[0].args):
        return [Kron(inv(t.args[0].args[0]), inv(t.args[0].args[1]))]
    return []


def _kron_sum(t, ctx):
    """(A + B) ⊗ C = A ⊗ C + B ⊗ C and A ⊗ (B + C) = A ⊗ B + A ⊗ C."""
    if type(t) is not Kron:
        return []
    left, right = t.args
    out = []
    if type(left) is MatAdd:
        out.append(add([Kron(a, right) for a in left.args]))
    if type(right) is MatAdd:
        out.append(add([Kron(left, b) for b in right.args]))
    return out


def _kron_scale(t, ctx):
    """(cA) ⊗ (dB) = cd (A ⊗ B): the coefficients of both factors taken out (c, d not both 1)."""
    if type(t) is not Kron:
        return []
    (c, left), (d, right) = factors_of(t.args[0]), factors_of(t.args[1])
    if c == 1 and d == 1:
        return []
    return [mul(c * d, Kron(mul(left), mul(right)))]


def _kron_identity(t, ctx):
    """I_m ⊗ I_n = I_{mn}, and A ⊗ 0 = 0 ⊗ A = 0 (of the product's shape)."""
    if type(t) is not Kron:
        return []
    if all(type(f) is Identity for f in t.args):
        return [Identity(shape(t)[0])]
    if any(type(f) is ZeroMatrix for f in t.args):
        return [ZeroMatrix(*shape(t))]
    return []


#: The matrix-algebra axioms, by the name a step cites.
AXIOMS: dict[str, Rule] = {
    "transpose_product": _transpose_product,  # (A B)ᵀ = Bᵀ Aᵀ
    "transpose_transpose": _transpose_transpose,  # (Aᵀ)ᵀ = A
    "transpose_sum": _transpose_sum,  # (A + B)ᵀ = Aᵀ + Bᵀ
    "transpose_symmetric": _transpose_symmetric,  # Aᵀ = A for symmetric A
    "transpose_inverse": _transpose_inverse,  # (A⁻¹)ᵀ = (Aᵀ)⁻¹
    "transpose_zero": _transpose_zero,  # 0ᵀ = 0
    "inverse_product": _inverse_product,  # (c A B)⁻¹ = c⁻¹ B⁻¹ A⁻¹, A and B square invertible, c ≠ 0
    "inverse_identity": _inverse_identity,  # I⁻¹ = I
    "inverse_inverse": _inverse_inverse,  # (A⁻¹)⁻¹ = A
    "inverse_cancel": _inverse_cancel,  # A⁻¹ A = A A⁻¹ = I
    "power_combine": _power_combine,  # A^a A^b = A^(a+b)
    "identity_mul": _identity_mul,  # A I = I A = A
    "zero_mul": _zero_mul,  # A 0 = 0 A = 0
    "zero_add": _zero_add,  # A + 0 = A
    "collect": _collect,  # a A + b A = (a + b) A
    "distribute": _distribute,  # A (B + C) = A B + A C
    "block_multiply": _block_multiply,  # block product of conforming partitions
    "block_transpose": _block_transpose,  # [A B; C D]ᵀ = [Aᵀ Cᵀ; Bᵀ Dᵀ]
    "block_single": _block_single,  # [A] = A
    "block_flatten": _block_flatten,  # [[ [A B] ], [ [C D] ]] = [[A, B], [C, D]], one column partition (and columns)
    "block_add": _block_add,  # [Aᵢⱼ] + [Bᵢⱼ] = [Aᵢⱼ + Bᵢⱼ], one partition
    "block_scale": _block_scale,  # c [Aᵢⱼ] = [c Aᵢⱼ]
    "block_identity": _block_identity,  # [[I, 0], [0, I]] = I
    "block_zero": _block_zero,  # [[0, 0], [0, 0]] = 0
    "block_inverse_diagonal": _block_inverse_diagonal,  # [[A, 0], [0, D]]⁻¹ = [[A⁻¹, 0], [0, D⁻¹]]
    "block_inverse_schur": _block_inverse_schur,  # [[A, B], [C, D]]⁻¹ by S = D − C A⁻¹ B; A, S invertible
    "block_inverse_schur_mirror": _block_inverse_schur_mirror,  # ... by T = A − B D⁻¹ C; D, T invertible
    "scalar_matrix": _scalar_matrix,  # c A s B = (c tr s) A B for a 1×1 factor s
    "transpose_scalar": _transpose_scalar,  # Mᵀ = M for a literally 1×1 M
    "ones_inner": _ones_inner,  # 1ₙᵀ1ₙ = n·I₁
    "kron_mixed": _kron_mixed,  # (A ⊗ B)(C ⊗ D) = AC ⊗ BD, cols(A) = rows(C) and cols(B) = rows(D)
    "kron_transpose": _kron_transpose,  # (A ⊗ B)ᵀ = Aᵀ ⊗ Bᵀ
    "kron_inverse": _kron_inverse,  # (A ⊗ B)⁻¹ = A⁻¹ ⊗ B⁻¹, A and B square and invertible
    "kron_sum": _kron_sum,  # (A + B) ⊗ C = A ⊗ C + B ⊗ C, and on the right
    "kron_scale": _kron_scale,  # cA ⊗ dB = cd (A ⊗ B)
    "kron_identity": _kron_identity,  # I ⊗ I = I, A ⊗ 0 = 0 ⊗ A = 0
    "tril_block": _tril_block,  # tril([Aᵢⱼ]) = [tril(Aᵢᵢ) on, Aᵢⱼ below, 0 above the diagonal], diagonal blocks square
    "tril_scalar": _tril_scalar,  # tril(a) = a, tril(a, -1) = 0 for a literally 1×1
    "tril_sum": _tril_sum,  # tril(A + B) = tril(A) + tril(B)
    "tril_scale": _tril_scale,  # tril(c A) = c tril(A)
    "tril_diagonal": _tril_diagonal,  # tril(D) = D, tril(D, -1) = 0 for D = I, 0, diag(v)
    "tril_diag_scale": _tril_diag_scale,  # tril(diag(v) A) = diag(v) tril(A), tril(A diag(v)) = tril(A) diag(v)
}


# --- which runs of adjacent factors a rule can match -----------------------------------
# A rule that matches a run of two or more factors (a product) declares which runs can match, so a
# check need not build every run of a long product.  ``None``: the rule matches no product at all.
# A predicate that says no to a run that would match only costs completeness, never soundness.


def _runs_containing(kind: type):
    def runs(mats, i, j) -> bool:
        return any(type(m) is kind for m in mats[i:j])

    return runs


RUNS: dict[str, Callable | None] = {
    name: None for name in ("transpose_product", "transpose_transpose", "transpose_sum", "transpose_symmetric",
                            "transpose_inverse", "transpose_zero", "inverse_product", "inverse_inverse",
                            "zero_add", "collect", "block_transpose", "block_single", "block_flatten",
                            "inverse_identity", "block_add", "block_scale", "block_identity", "block_zero",
                            "block_inverse_diagonal",
                            "block_inverse_schur", "block_inverse_schur_mirror",
                            "scalar_matrix",  # the coefficient belongs to the whole product
                            "transpose_scalar",
                            "tril_block", "tril_scalar", "tril_sum", "tril_scale", "tril_diagonal",
                            "tril_diag_scale",  # each rewrites a tril node, never a run of a product
                            "kron_transpose", "kron_inverse", "kron_sum", "kron_scale", "kron_identity",
                            "identity_mul")  # dropping I from a run drops it from the whole product: no new result
}
RUNS.update({
    "inverse_cancel": lambda mats, i, j: type(mats[i]) is Inverse or type(mats[j - 1]) is Inverse,
    "power_combine": lambda mats, i, j: j - i == 2,
    "block_multiply": lambda mats, i, j: j - i == 2,
    "zero_mul": _runs_containing(ZeroMatrix),
    "distribute": _runs_containing(MatAdd),
    "ones_inner": lambda mats, i, j: j - i == 2 and type(mats[i + 1]) is Ones,
    "kron_mixed": lambda mats, i, j: j - i == 2 and type(mats[i]) is Kron and type(mats[i + 1]) is Kron,
})
assert set(RUNS) == set(AXIOMS), "every axiom says which runs it can match"
for _name, _rule in AXIOMS.items():
    _rule.runs = RUNS[_name]

# Rules that take the term the rewrite must give (when the checker knows it) and skip what cannot give it:
# only a filter, so it costs no completeness, and it keeps checking a step near-linear in the term's size.
for _rule in (_identity_mul, _collect, _distribute):
    _rule.targeted = True


def scalar_equation_rule(symbol: Basic, value: Basic) -> Rule:
    """The rewrite rule of a scalar hypothesis λ = r (issue 29): in the coefficient of one product, every λ
    (those inside a 1×1 matrix read as a scalar included) replaced by the rational function r; read backwards,
    r goes back to λ.  Sound because λ and r are the same number wherever the hypotheses hold, and a
    coefficient's reduced denominator is non-zero wherever the term as written is defined."""

    def rule(t, ctx):
        if not isinstance(t, MatMul):
            return []
        coeff, mats = factors_of(t)
        if not coeff.has(symbol):
            return []
        return [mul(coeff.xreplace({symbol: value}), mats)]

    rule.runs = None  # the coefficient belongs to the whole product
    rule.scalar = (symbol, value)
    return rule


def equation_rule(lhs: Basic, rhs: Basic) -> Rule:
    """The rewrite rule of an equation, usable in both directions (``rule.lhs``, ``rule.rhs`` say which)."""
    lhs, rhs = canon(lhs), canon(rhs)

    def rule(t, ctx):
        return [rhs] if t == lhs else [lhs] if t == rhs else []

    rule.lhs, rule.rhs = lhs, rhs
    lengths = {len(factors_of(side)[1]) for side in (lhs, rhs) if isinstance(side, MatMul) and factors_of(side)[0] == 1}
    rule.runs = (lambda mats, i, j: j - i in lengths) if lengths else None  # a run is matched whole, as a side
    # a side that is a sum also matches those terms inside a bigger sum (addition is associative and commutative)
    rule.sum_sides = tuple((side, other) for side, other in ((lhs, rhs), (rhs, lhs)) if isinstance(side, MatAdd))
    return rule

