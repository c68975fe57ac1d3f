"""How long ``ChainBuilder.auto`` takes on each library theorem's main claim, from the statement alone.

For every theorem of the library, a fresh builder gets the theorem's hypotheses, definitions and the
theorems it cites (none of its lemmas), and ``.auto`` closes the main claim; the kernel then checks the
proof.  The same run times one hand-written kernel check of the library's own proof of that theorem, the
named peer, so a ratio does not depend on the machine's speed.

    python benchmarks/bench_auto.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

from derive import ProofBuilder, ProofError, check
from derive.authoring.registry import build, checked
from derive.library import THEOREM_IDS


def auto_once(theorem_id: str) -> tuple[float, int, int]:
    """Seconds for ``.auto`` plus the kernel check, the main chain's steps and the lemmas it proved."""
    proof = checked(theorem_id).proof
    start = time.perf_counter()
    b = ProofBuilder(theorem_id, proof.title, proof.statement, proof.hypotheses, proof.definitions,
                     families=proof.families)
    for cited in proof.cites:
        b.cite(cited)
    b.main(proof.claim.lhs).auto(proof.claim.rhs)
    theorem = check(b.proof())
    return time.perf_counter() - start, len(theorem.proof.claim.steps), len(theorem.proof.lemmas)


def check_once(theorem_id: str) -> float:
    """Seconds for the kernel to check the library's proof (built, not checked, beforehand)."""
    proof = build(theorem_id)
    start = time.perf_counter()
    check(proof)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print("| theorem | `.auto` + check, median s | steps | lemmas proved | kernel check of the library proof, s |")
    print("| --- | --- | --- | --- | --- |")
    for theorem_id in THEOREM_IDS:
        checks = [check_once(theorem_id) for _ in range(args.repeats)]
        try:
            runs = [auto_once(theorem_id) for _ in range(args.repeats)]
        except ProofError:  # the main claim follows from the theorem's own lemmas (an induction, say), not alone
            print(f"| {theorem_id} | not from the statement alone (the proof's lemmas needed) | — | — | "
                  f"{statistics.median(checks):.3f} |")
            continue
        seconds = statistics.median(r[0] for r in runs)
        print(f"| {theorem_id} | {seconds:.3f} | {runs[0][1]} | {runs[0][2]} | {statistics.median(checks):.3f} |")


if __name__ == "__main__":
    main()
