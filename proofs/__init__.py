"""The theorem library: one module per family, each theorem a function that builds its proof.

Building a proof does not make a theorem; only :func:`derive.kernel.check` does.
"""

from __future__ import annotations

from collections.abc import Callable

from derive.kernel import Proof

from .attention import ols_is_linear_attention, paper_construction
from .gauge import gauge_invariance
from .gradient_descent import preconditioned_gd
from .icl import icl_token_form
from .memory import slow_fast_memory
from .pseudo_inverse import pseudo_inverse

#: Theorem id -> function building its proof, in the order they are presented.
LIBRARY: dict[str, Callable[[], Proof]] = {
    "ols_is_linear_attention": ols_is_linear_attention,
    "paper_construction": paper_construction,
    "icl_token_form": icl_token_form,
    "gauge_invariance": gauge_invariance,
    "preconditioned_gd": preconditioned_gd,
    "slow_fast_memory": slow_fast_memory,
    "pseudo_inverse": pseudo_inverse,
}

THEOREM_IDS = tuple(LIBRARY)


def build(theorem_id: str) -> Proof:
    """The proof of a library theorem (unchecked)."""
    try:
        return LIBRARY[theorem_id]()
    except KeyError:
        raise KeyError(theorem_id) from None
