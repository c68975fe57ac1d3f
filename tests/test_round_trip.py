"""Every certificate that ``prove`` can write passes ``derive check`` in a fresh process.

The built-in theorems, the theorems of ``tests/data/`` and many randomly built theorems — sums, products,
inverses and blocks written in random orders, proved by hand steps and by ``.auto`` — are checked, their
certificates written, and all of them re-checked by one ``derive check`` run that shares nothing with
this process.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
from sympy import Identity, MatrixSymbol, Q
from sympy.matrices.expressions import MatAdd, MatMul

from derive import Definition, ProofBuilder, check, dim, predicate
from derive.authoring import checked, load_library
from derive.certificates import certificate_text
from derive.kernel.terms import block, canon, inv, mul, transpose

DATA = Path(__file__).parent / "data"
RANDOM_THEOREMS = 40

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


@pytest.fixture(scope="module")
def theorems() -> list:
    from derive.library import LIBRARY

    out = [checked(theorem_id) for theorem_id in LIBRARY]
    out += [checked(theorem_id) for theorem_id in load_library(str(DATA / "user_theorems.py"))]
    out += [_random_theorem(index) for index in range(RANDOM_THEOREMS)]
    return out


def test_every_certificate_prove_writes_passes_check_in_a_fresh_process(theorems, tmp_path):
    paths = []
    for theorem in theorems:
        path = tmp_path / f"{theorem.id}.json"
        path.write_text(certificate_text(theorem))
        paths.append(str(path))
    result = subprocess.run([sys.executable, "-m", "derive", "check", *paths], capture_output=True, text=True,
                            timeout=600)
    verified = [line for line in result.stdout.splitlines() if ": verified " in line]
    rejected = [line for line in result.stdout.splitlines() if "REJECTED" in line or "CANNOT READ" in line]
    assert rejected == [] and result.returncode == 0, "\n".join(rejected) + result.stderr[-2000:]
    assert len(verified) == len(theorems)
