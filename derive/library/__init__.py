"""The built-in theorem library: importing it registers every theorem, in presentation order.

Each module registers its theorems with :func:`derive.theorem`, together with what the outputs need
(glossary entries, witness sampling hints, codegen routes).  Building a proof does not make a theorem;
only :func:`derive.kernel.check` does.
"""

from __future__ import annotations

from collections.abc import Callable

from derive.authoring.registry import checked, entries
from derive.kernel import Proof

# Registration order is presentation order: the shared facts first, then the paper's theorems.
from . import base  # noqa: F401  isort: skip
from . import attention, icl, gauge, gradient_descent, memory, pseudo_inverse  # noqa: F401  isort: skip
# Beyond the paper: its stated future work and the known exact extensions.
from . import sherman_morrison, ridge, kernel_ridge, weighted, multi_head, multi_layer  # noqa: F401  isort: skip
from . import causal, fast_weights, softmax  # noqa: F401  isort: skip
# Modern linear attention (issue 42): the causal mask, chunkwise forms, the delta rule's WY form, RLS as a delta rule.
from . import linear_attention  # noqa: F401  isort: skip


def _recorded(theorem_id: str) -> Callable[[], Proof]:
    def proof() -> Proof:
        return checked(theorem_id).proof

    proof.__name__ = proof.__qualname__ = theorem_id
    return proof


#: Built-in theorem id -> function giving its proof, in the order they are presented: the recorded proof
#: (``proofs/certificates``, replayed and accepted by the kernel once per process; see :mod:`derive.records`),
#: found by ``.auto``'s search only where no current record replays.  The functions that build the proofs are
#: the registry's (``derive.authoring.registry.entry(ID).build``).
LIBRARY: dict[str, Callable[[], Proof]] = {
    theorem_id: _recorded(theorem_id) for theorem_id, item in entries().items() if item.module.startswith(__name__)
}

THEOREM_IDS = tuple(LIBRARY)


def build(theorem_id: str) -> Proof:
    """The proof of a built-in theorem (as :data:`LIBRARY` gives it: replayed from its record)."""
    return LIBRARY[theorem_id]()
