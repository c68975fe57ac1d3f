"""``.auto``'s search is bounded by counted work, never by a clock (issue 28): the same statement gives the same
chain, or the same refusal, on any machine at any load; a wall-clock ``timeout`` is only an outer guard whose
expiry says "interrupted"."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sympy import Identity, MatrixSymbol, Q

from derive import Hypothesis, ProofBuilder, ProofError, check, dim, inv, mul, predicate, transpose
from derive.authoring import auto
from derive.kernel import budget as work
from derive.kernel.judgments import Context, OutOfTime
from derive.pipeline import certificate_text

ROOT = Path(__file__).resolve().parents[1]
n, p, k, m = dim("n"), dim("p"), dim("k"), dim("m")
X, Y, X_q = MatrixSymbol("X", n, p), MatrixSymbol("Y", n, k), MatrixSymbol("X_q", m, p)
U, S, V = MatrixSymbol("U", n, p), MatrixSymbol("S", p, p), MatrixSymbol("V", p, p)
SVD = [Hypothesis("svd", X, mul(U, S, transpose(V))), Hypothesis("U_orthonormal", mul(transpose(U), U), Identity(p)),
       Hypothesis("V_orthonormal", mul(transpose(V), V), Identity(p)), predicate("S_diagonal", Q.diagonal, S),
       predicate("S_positive", Q.positive_definite, S)]
LHS = mul(X_q, inv(mul(transpose(X), X)), transpose(X), Y)  # the OLS predictions ...
RHS = mul(X_q, V, inv(S), transpose(U), Y)  # ... through the SVD: a search with lemmas on the way


def search(**options) -> tuple[str, int, list]:
    """(the certificate's text, the units of work the search used, its recorded steps)."""
    b = ProofBuilder("svd_route", "svd_route", "svd_route", SVD)
    before = work.current().used
    b.main(LHS).auto(RHS, **options)
    used = work.current().used - before
    theorem = check(b.proof())
    steps = [(s.rule, s.expr) for chain in (*theorem.proof.lemmas, theorem.proof.claim) for s in chain.steps]
    return certificate_text(theorem), used, steps


def test_the_search_is_byte_identical_and_uses_the_same_work_twice():
    first, second = search(), search()
    assert first[0] == second[0]  # the certificate, byte for byte
    assert first[1] == second[1] > 0  # the same count of work, even with the caches warm the second time
    assert first[2] == second[2] and first[2]


def test_a_clock_that_jumps_changes_nothing(monkeypatch):
    """Every clock advances by a million seconds at each reading (a machine under extreme load): with no
    ``timeout`` the search reads no clock that matters and finds the same chain with the same steps."""
    expected = search()
    ticks = itertools.count()
    for name in ("monotonic", "process_time", "perf_counter", "time"):
        monkeypatch.setattr(time, name, lambda: 1e6 * next(ticks))
    assert search() == expected
    assert next(ticks) > 0  # the clocks were read (the kernel's timing of a check) and jumped, to no effect


def test_under_a_jumping_clock_a_timeout_interrupts_and_is_no_verdict(monkeypatch):
    ticks = itertools.count()
    monkeypatch.setattr(time, "monotonic", lambda: 1e6 * next(ticks))
    b = ProofBuilder("svd_route", "svd_route", "svd_route", SVD)
    with pytest.raises(auto.AutoInterrupted, match=r"interrupted.*guard of 30 s.*no verdict") as error:
        b.main(LHS).auto(RHS, timeout=30.0)
    assert "no chain" not in str(error.value) and b.lemmas == []  # what the search proved is dropped
    monkeypatch.undo()
    b.main(LHS).auto(RHS)  # the builder is still usable
    assert check(b.proof()).id == "svd_route"


def test_a_budget_too_small_refuses_naming_it():
    used = search()[1]
    b = ProofBuilder("svd_route", "svd_route", "svd_route", SVD)
    with pytest.raises(ProofError, match=f"no chain to .* within the work budget of {used // 2} units"):
        b.main(LHS).auto(RHS, budget=used // 2)
    assert b.lemmas == []


def test_the_budget_is_what_decides():
    """The search needs a fixed number of units: given that many it finds the same chain; given a quarter of
    them it refuses."""
    used = search()[1]
    assert search(budget=used)[0] == search()[0]
    with pytest.raises(ProofError, match="within the work budget"):
        search(budget=used // 4)


def test_the_default_budget_leaves_the_search_far_inside():
    b = ProofBuilder("svd_route", "svd_route", "svd_route", SVD)
    chain = b.main(LHS)
    default = auto.default_budget(chain, RHS)
    assert default >= auto.AUTO_BASE_UNITS and search()[1] * 3 <= default


@pytest.mark.parametrize("value", [0, -5, 1.5, True, "1000", float("inf")])
def test_the_budget_must_be_a_positive_whole_number(value):
    b = ProofBuilder("t", "t", "t", SVD)
    with pytest.raises(ValueError, match="budget must be a positive whole number of work units"):
        b.main(LHS).auto(RHS, budget=value)


def test_the_kernels_search_bound_counts_work_not_time(monkeypatch):
    """``Context.deadline`` is a count of the meter: past it a judgment raises OutOfTime, whatever the clocks say."""
    monkeypatch.setattr(time, "monotonic", lambda: float("inf"))
    ctx = Context(deadline=work.current().used + 5)
    for _ in range(5):
        ctx.tick()
    with pytest.raises(OutOfTime, match="work budget"):
        ctx.tick()
    Context(deadline=None).tick()  # no bound: never raises


SEARCH_IN_A_PROCESS = """
import hashlib, sys
sys.path.insert(0, {tests!r})
from test_auto_budget import search
text, used, _ = search()
print(hashlib.sha256(text.encode()).hexdigest(), used)
"""


def test_other_processes_with_other_hash_seeds_find_the_same_chain_with_the_same_work():
    """Set iteration order changes with Python's hash seed: neither the chain nor the count may depend on it."""
    here = search()
    code = SEARCH_IN_A_PROCESS.format(tests=str(ROOT / "tests"))
    outputs = []
    for seed in ("1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                                timeout=300)
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout.split())
    import hashlib

    assert outputs[0] == outputs[1] == [hashlib.sha256(here[0].encode()).hexdigest(), str(here[1])]
