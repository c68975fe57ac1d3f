"""The trusted core: terms, proof data, judgments, axioms and the checker.

Only :func:`check` makes a :class:`Theorem`.  Nothing in this package imports any other part
of ``derive``; ``.ci/run`` enforces that with an import contract (``.importlinter``).
"""

from .axioms import AXIOMS
from .checking import (
    chain_context,
    check,
    induction_chains,
    lemma_rule,
    one_step,
    resolve_rule,
    rewrites,
    theorem_context,
)
from .judgments import Context, check_defined, invertible, positive_definite, symmetric
from .proof import (
    PREDICATES,
    Chain,
    Definition,
    Family,
    Hypothesis,
    Induction,
    Proof,
    ProofError,
    Step,
    Theorem,
    digest,
    is_issued,
    proof_to_data,
)

__all__ = ["AXIOMS", "PREDICATES", "Chain", "Context", "Definition", "Family", "Hypothesis", "Induction", "Proof",
           "ProofError", "Step", "Theorem", "chain_context", "check", "check_defined", "digest", "induction_chains",
           "invertible", "is_issued", "lemma_rule", "one_step", "positive_definite", "proof_to_data", "resolve_rule",
           "rewrites", "symmetric", "theorem_context"]
