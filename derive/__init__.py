"""ols-transformer: OLS is a special case of the single-layer linear transformer, machine-checked.

The public authoring API (stable; see ``docs/authoring.md``)::

    from derive import (ProofBuilder, Hypothesis, Definition, Proof, Theorem, ProofError, check, theorem,
                        dim, predicate, mul, add, inv, transpose, power, block,
                        scalar, index, family)

``derive.kernel`` is the trusted core; everything else (``derive.authoring``, ``derive.library``,
``derive.certificates``, ``derive.witness``, ``derive.latex``, ``derive.codegen``, ``derive.experiments``)
builds on it and only proposes.
"""

from . import latex as _latex  # noqa: F401  (registers how checked theorems display in Jupyter)
from .authoring import (
    ChainBuilder,
    InductionBuilder,
    ProofBuilder,
    dim,
    family,
    index,
    orthogonal,
    predicate,
    scalar,
    theorem,
)
from .kernel import Chain, Definition, Family, Hypothesis, Induction, Proof, ProofError, Step, Theorem, check
from .kernel.terms import add, block, inv, mul, power, transpose

__version__ = "0.1.0"

__all__ = ["Chain", "ChainBuilder", "Definition", "Family", "Hypothesis", "Induction", "InductionBuilder", "Proof",
           "ProofBuilder", "ProofError", "Step", "Theorem", "__version__", "add", "block", "check", "dim", "family",
           "index", "inv", "mul", "orthogonal", "power", "predicate", "scalar", "theorem", "transpose"]

from . import records as _records  # noqa: E402  (replays recorded proofs; derive.records says where they live)

_records.install()
