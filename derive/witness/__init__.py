"""The independent witness: exact re-evaluation of proofs on rational instances, without the kernel's rules.

Nothing here uses the kernel's judgments (no ``canon``, no rules, no definedness search): the witness
reads the proof's plain data (hypotheses, definitions, chains, steps) and evaluates every expression
with exact rational arithmetic.  A step the kernel accepted but that is false as mathematics shows up
here as two consecutive expressions with different values.

* :mod:`.evaluate` — exact arithmetic and the evaluator of kernel terms;
* :mod:`.sampler` — sources of parameters and the generic sampler (hypotheses + the theorem's hints);
* :mod:`.checks` — instances, identities of rational functions, the gradient formula, :func:`witness_all`.
"""

from .checks import (
    QUICK_IDENTITY_DIMS,
    GradientReport,
    IdentityReport,
    InstanceReport,
    check_gradient,
    check_identity,
    check_instances,
    identity_shape,
    witness_all,
)
from .evaluate import WitnessError, evaluate, mul
from .sampler import (
    KINDS,
    SHAPES,
    Sample,
    Sampler,
    Source,
    cayley,
    free,
    generic_sampler,
    hints_for,
    orthogonal,
    parse_hints,
    sampler_for,
    stiefel,
)

__all__ = ["KINDS", "QUICK_IDENTITY_DIMS", "SHAPES", "GradientReport", "IdentityReport", "InstanceReport",
           "Sample", "Sampler", "Source", "WitnessError", "cayley", "check_gradient", "check_identity",
           "check_instances", "evaluate", "free", "generic_sampler", "hints_for", "identity_shape", "mul",
           "orthogonal", "parse_hints", "sampler_for", "stiefel", "witness_all"]
