"""The soundness fuzzer: random proofs over the whole kernel language, their mutants, and an exact oracle.

* :mod:`.generate` — random worlds, terms and chains, true by construction (the kernel finds the rewrites);
  mutations of a proof;
* :mod:`.oracle` — independent of the kernel's judgments, axioms and checker: exact instances of the
  hypotheses by their documented meaning, every accepted expression evaluated;
* :mod:`.harness` — the loop, the summary, reproductions; ``python -m derive.fuzz --seed N --proofs M``;
* :mod:`.unsound` — the kernel's functions before the fixes of issue 27's four holes and issue 40's (a cited
  theorem's scalar hypothesis checked without the instance's matrices), and plausible slips, to show the fuzzer
  finds each one when it is put back.

Nothing in the kernel or the witness imports this package (import contracts in ``pyproject.toml``).
"""

from .harness import Finding, Report, main, run

__all__ = ["Finding", "Report", "main", "run"]
