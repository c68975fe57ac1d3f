"""Every certificate that ``prove`` can write passes ``derive check`` in a fresh process.

The built-in theorems, the theorems of ``tests/data/`` and many randomly built theorems — sums, products,
inverses and blocks written in random orders, proved by hand steps and by ``.auto``; terms of every kind the
kernel accepts (explicit sizes such as a 1×1 label slot and one-token blocks, members of families, scalar
coefficients with integer powers and 1×1 traces, nested blocks, matrix powers); ``forall`` hypotheses used
with instances of explicit size; citations with instances; induction lemmas — are checked, their
certificates written, and all of them re-checked by one ``derive check`` run that shares nothing with
this process.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
from sympy import Identity, Integer, MatrixSymbol, Q, Rational, Trace, ZeroMatrix, preorder_traversal
from sympy.matrices.expressions import BlockMatrix, MatAdd, MatMul

from derive import Definition, Hypothesis, ProofBuilder, add, check, dim, family, index, power, predicate, scalar
from derive.authoring import checked, load_library
from derive.certificates import certificate_text
from derive.kernel.terms import block, canon, inv, mul, transpose

DATA = Path(__file__).parent / "data"
RANDOM_THEOREMS = 40
RANDOM_TERM_THEOREMS = 60  # theorems about random terms of every kind (explicit sizes, families, scalars, blocks)

n, p = dim("n"), dim("p")
A, B = MatrixSymbol("A", p, p), MatrixSymbol("B", p, p)
C = MatrixSymbol("C", n, p)
SQUARE = [A, B, mul(transpose(C), C), transpose(A), mul(A, B)]


def _shuffled_sum(rng: random.Random, terms: list):
    """A sum in a random order, built without the kernel's sorting (as a user's MatAdd may be)."""
    terms = list(terms)
    rng.shuffle(terms)
    return MatAdd(*terms, evaluate=False) if len(terms) > 1 else terms[0]


def _random_square(rng: random.Random, depth: int = 0):
    kind = rng.choice(["atom", "sum", "product", "transpose"] if depth < 2 else ["atom"])
    if kind == "atom":
        return rng.choice(SQUARE)
    if kind == "sum":
        return _shuffled_sum(rng, [_random_square(rng, depth + 1) for _ in range(rng.randint(2, 3))])
    if kind == "product":
        return MatMul(_random_square(rng, depth + 1), _random_square(rng, depth + 1), evaluate=False)
    return transpose(_random_square(rng, depth + 1))


def _random_theorem(index: int):
    rng = random.Random(index)
    M = _random_square(rng)
    kind = index % 4
    theorem_id = f"random_{index}"
    if kind == 0:  # M⁻¹ M = I under "M invertible", M written in another order in the hypothesis
        b = ProofBuilder(theorem_id, "t", "s", [predicate("M_invertible", Q.invertible, _random_order(rng, M))])
        b.main(mul(inv(M), M)).rw("inverse_cancel").qed(Identity(p))
    elif kind == 1:  # the same by .auto
        b = ProofBuilder(theorem_id, "t", "s", [predicate("M_invertible", Q.invertible, _random_order(rng, M))])
        b.main(MatMul(M, inv(M), evaluate=False)).auto(Identity(p))
    elif kind == 2:  # a named sum inside an inverse, unfolded by .auto
        S = MatrixSymbol("S", p, p)
        b = ProofBuilder(theorem_id, "t", "s", [predicate("M_invertible", Q.invertible, _random_order(rng, M))],
                         [Definition("S", S, M)])
        b.main(mul(inv(S), _random_order(rng, M))).auto(Identity(p))
    else:  # a block matrix's transpose, pushed inward by .auto
        grid = block([[M, A], [B, _random_order(rng, M)]])
        b = ProofBuilder(theorem_id, "t", "s", [])
        target = block([[transpose(M), transpose(B)], [transpose(A), transpose(M)]])
        b.main(transpose(grid)).auto(canon(target))
    return check(b.proof())


def _random_order(rng: random.Random, term):
    """``term`` with the arguments of every sum shuffled (the same matrix, written differently)."""
    if isinstance(term, MatAdd):
        return _shuffled_sum(rng, [_random_order(rng, a) for a in term.args])
    if isinstance(term, MatMul):
        return MatMul(*[a if not hasattr(a, "shape") else _random_order(rng, a) for a in term.args], evaluate=False)
    if term.args and hasattr(term, "shape") and not isinstance(term, MatrixSymbol) and hasattr(term.args[0], "shape"):
        return term.func(_random_order(rng, term.args[0]), *term.args[1:])
    return term


# --- random terms of every kind the kernel accepts ----------------------------------------------------------

t = index("t")
lam, mu = scalar("lambda", positive=True), scalar("mu")
x = family("x", (p, 1))  # one token per step: x[t], x[t + 1], x[0]
w = MatrixSymbol("w", p, 1)
SPLITS = {p + 1: (p, Integer(1)), Integer(2): (Integer(1), Integer(1)), 2 * p: (p, p)}  # sizes a block grid splits
INNER = [p, Integer(1), p + 1, Integer(2)]
SHAPES = [(p, p), (p, Integer(1)), (Integer(1), Integer(1)), (Integer(1), p + 1), (p + 1, p + 1),
          (Integer(2), Integer(2)), (p + 1, Integer(1))]


def _tag(size) -> str:
    return {p: "p", p + 1: "p1", 2 * p: "pp"}.get(size, str(size))


def _atom(rng: random.Random, rows, cols):
    options = [MatrixSymbol(f"M_{_tag(rows)}_{_tag(cols)}", rows, cols), ZeroMatrix(rows, cols)]
    if rows == cols:
        options.append(Identity(rows))  # Identity(1), Identity(2) among them
    if (rows, cols) == (p, p):
        options += [A, inv(A), power(A, 2), power(A, -3), power(A, Rational(1, 2))]
    if (rows, cols) == (p, 1):
        options += [x[t], x[t + 1], x[0], w]
    return rng.choice(options)


def _coefficient(rng: random.Random):
    trace = Trace(mul(transpose(w), w))  # a 1×1 matrix read as a scalar
    rewritten = Trace(add(transpose(mul(mu, Identity(1))), transpose(MatrixSymbol("M_1_1", 1, 1))))  # (μI₁)ᵀ inside
    return rng.choice([lam, mu, lam**2, lam**-1, Rational(3, 2), trace, lam + 1, 2 * mu * lam, trace**2, mu - trace,
                       rewritten, lam * rewritten])


def _random_term(rng: random.Random, rows, cols, depth: int = 0):
    """A random kernel term of the given shape: sums, products, transposes, scalar multiples and block grids
    (blocks of explicit size among them, and grids nested in grids)."""
    kinds = ["atom"] if depth >= 3 else ["atom", "transpose", "product", "sum", "scale"] + (
        ["block"] * 2 if rows in SPLITS or cols in SPLITS else [])
    kind = rng.choice(kinds)
    if kind == "atom":
        return _atom(rng, rows, cols)
    if kind == "transpose":
        return transpose(_random_term(rng, cols, rows, depth + 1))
    if kind == "product":
        inner = rng.choice(INNER)
        return mul(_random_term(rng, rows, inner, depth + 1), _random_term(rng, inner, cols, depth + 1))
    if kind == "sum":
        return add(_random_term(rng, rows, cols, depth + 1), _random_term(rng, rows, cols, depth + 1))
    if kind == "scale":
        return mul(_coefficient(rng), _random_term(rng, rows, cols, depth + 1))
    row_parts = SPLITS.get(rows, (rows,)) if cols not in SPLITS or rng.random() < 0.7 else (rows,)
    col_parts = SPLITS.get(cols, (cols,)) if len(row_parts) == 1 or rng.random() < 0.5 else (cols,)
    return block([[_random_term(rng, r, c, depth + 1) for c in col_parts] for r in row_parts])


def _double_transpose_theorem():
    """(Cᵀ)ᵀ = C for every C of any size r × s: a theorem to cite with instances."""
    r, s = dim("r"), dim("s")
    C = MatrixSymbol("C", r, s)
    b = ProofBuilder("double_transpose", "t", "s")
    b.main(transpose(transpose(C))).rw("transpose_transpose").qed(C)
    return check(b.proof())


def _random_term_theorem(index_: int, cited):
    """A theorem about a random term, by one of four routes: a hand step, a ``forall`` hypothesis used with an
    instance (the bound size taking explicit values too), a cited theorem with an instance, or ``.auto``."""
    rng = random.Random(1000 + index_)
    rows, cols = rng.choice(SHAPES)
    T = _random_term(rng, rows, cols)
    # A^(1/2) is defined: A diagonal and positive definite (a non-integer power needs both)
    hypotheses = [predicate("A_positive_definite", Q.positive_definite, A), predicate("A_diagonal", Q.diagonal, A)]
    kind = index_ % 4
    if kind == 1:  # for all r and every B (p × r): A B = B, used at B := T
        r = dim("r")
        B = MatrixSymbol("B", p, r)
        hypotheses.append(Hypothesis("A_fixes", mul(A, B), B, forall=(B, r)))
        T = _random_term(rng, p, cols)
    b = ProofBuilder(f"random_term_{index_}", "t", "s", hypotheses, families=[x])
    lhs = transpose(transpose(T))
    if kind == 0:
        b.main(lhs).rw("transpose_transpose", at=lhs).qed()
    elif kind == 1:
        b.main(mul(A, T)).rw("hyp:A_fixes", instance=((B, T), (r, cols))).qed(T)
    elif kind == 2:
        r, s = dim("r"), dim("s")
        b.cite(cited)
        instance = ((MatrixSymbol("C", r, s), T), (r, rows), (s, cols))
        b.main(lhs).rw("thm:double_transpose", at=lhs, instance=instance).qed()
    else:
        b.main(lhs).auto(T)
    return check(b.proof())


def _induction_theorem(explicit: bool):
    """The fast-weight memory S_t = V_tᵀK_t by induction over t, with values of size 1 (explicit) or p."""
    size = Integer(1) if explicit else p
    v, keys = family("v", (size, 1)), family("k", (p, 1))
    S = family("S", (size, p))
    S.recurrence(ZeroMatrix(size, p), lambda s: add(S[s], mul(v[s + 1], transpose(keys[s + 1]))))
    V = family("V", lambda s: (s, size))
    V.recurrence(ZeroMatrix(0, size), lambda s: block([[V[s]], [transpose(v[s + 1])]]))
    K = family("K", lambda s: (s, p))
    K.recurrence(ZeroMatrix(0, p), lambda s: block([[K[s]], [transpose(keys[s + 1])]]))
    b = ProofBuilder(f"fast_weights_{'explicit' if explicit else 'symbolic'}", "t", "s", families=[v, keys, S, V, K])
    b.induction("memory_sum", t, S[t], mul(transpose(V[t]), K[t])).auto()
    b.main(S[t + 1]).rw("lemma:memory_sum", instance=((t, t + 1),)).qed(mul(transpose(V[t + 1]), K[t + 1]))
    return check(b.proof())


def test_the_random_terms_cover_every_kind_of_node():
    """The generator reaches what the round trip must carry: blocks of explicit size, grids nested in grids,
    family members, 1×1 traces, integer powers of scalars and of matrices."""
    rng = random.Random(7)
    seen = set()
    for _ in range(300):
        for node in preorder_traversal(_random_term(rng, *rng.choice(SHAPES))):
            seen.add(type(node).__name__)
            if isinstance(node, BlockMatrix):
                blocks = list(node.blocks)
                seen |= {"explicit block"} if any(all(d.is_Integer for d in b.shape) for b in blocks) else set()
                seen |= {"nested block"} if any(isinstance(b, BlockMatrix) for b in blocks) else set()
    assert {"explicit block", "nested block", "FamilyMatrix", "Trace", "Pow", "MatPow", "Inverse", "Identity",
            "ZeroMatrix", "MatAdd", "MatMul", "Transpose"} <= seen


@pytest.fixture(scope="module")
def theorems() -> list:
    """Every theorem (the user files' theorems are unregistered after this module: tests/conftest.py)."""
    from derive.library import LIBRARY

    out = [checked(theorem_id) for theorem_id in LIBRARY]
    out += [checked(theorem_id) for theorem_id in load_library(str(DATA / "user_theorems.py"))]
    out += [checked(theorem_id) for theorem_id in load_library(str(DATA / "user_partitioned.py"))]  # Schur rule
    out += [checked(theorem_id) for theorem_id in load_library(str(DATA / "user_scalars.py"))]
    out += [_random_theorem(index) for index in range(RANDOM_THEOREMS)]
    cited = _double_transpose_theorem()
    out += [cited] + [_random_term_theorem(index_, cited) for index_ in range(RANDOM_TERM_THEOREMS)]
    out += [_induction_theorem(explicit) for explicit in (False, True)]
    return out


def test_every_certificate_prove_writes_passes_check_in_a_fresh_process(theorems, tmp_path):
    paths = []
    for theorem in theorems:
        path = tmp_path / f"{theorem.id}.json"
        path.write_text(certificate_text(theorem))
        paths.append(str(path))
    # a generous time budget: this test is about what check accepts (the bounds have tests of their own), and a
    # loaded machine may take more than the default 10 s to rebuild a library statement to compare with
    result = subprocess.run([sys.executable, "-m", "derive", "check", "--time-limit", "120", *paths],
                            capture_output=True, text=True, timeout=900)
    verified = [line for line in result.stdout.splitlines() if ": verified " in line]
    rejected = [line for line in result.stdout.splitlines() if "REJECTED" in line or "CANNOT READ" in line]
    assert rejected == [] and result.returncode == 0, "\n".join(rejected) + result.stderr[-2000:]
    assert len(verified) == len(theorems)
