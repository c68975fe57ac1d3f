"""Untrusted proof authoring: the builder, the symbolic constructions, statements and the registry.

Everything here only proposes; :func:`derive.kernel.check` decides.
"""

from .builder import ChainBuilder, ProofBuilder
from .registry import LibraryError, TheoremEntry, build, checked, entries, load_entry_points, load_library, theorem
from .statements import dim, orthogonal, predicate, scalar

__all__ = ["ChainBuilder", "LibraryError", "ProofBuilder", "TheoremEntry", "build", "checked", "dim", "entries",
           "load_entry_points", "load_library", "orthogonal", "predicate", "scalar", "theorem"]
