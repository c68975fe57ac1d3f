"""The trusted core: terms, proof data, judgments, axioms and the checker.

Only :func:`check` makes a :class:`Theorem`.  Nothing in this package imports any other part
of ``derive``; ``.ci/run`` enforces that with an import contract (``.importlinter``).
"""

from .axioms import AXIOMS
from .budget import CheckInterrupted, WorkExceeded, default_limit
from .checking import (
    chain_context,
    check,
    induction_chains,
    lemma_rule,
    one_step,
    proof_size,
    resolve_rule,
    rewrites,
    theorem_context,
)
from .judgments import Context, check_defined, invertible, positive_definite, symmetric
from .proof import (
    PREDICATES,
    SCALAR_PREDICATES,
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
from .stated import check_stated

__all__ = ["AXIOMS", "PREDICATES", "SCALAR_PREDICATES", "Chain", "CheckInterrupted", "Context", "Definition", "Family",
           "Hypothesis", "Induction", "Proof", "ProofError", "Step", "Theorem", "WorkExceeded", "chain_context",
           "check", "check_defined", "check_stated", "default_limit", "digest", "induction_chains", "invertible",
           "is_issued", "lemma_rule", "one_step", "positive_definite", "proof_size", "proof_to_data", "resolve_rule",
           "rewrites", "symmetric", "theorem_context"]
