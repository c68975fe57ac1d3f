"""Untrusted proof authoring: the builder, the symbolic constructions, statements and the registry.

Everything here only proposes; :func:`derive.kernel.check` decides.
"""

from .builder import ChainBuilder, InductionBuilder, ProofBuilder
from .registry import LibraryError, TheoremEntry, build, checked, entries, load_entry_points, load_library, theorem
from .statements import MatrixFamily, dim, family, index, orthogonal, predicate, scalar

__all__ = ["ChainBuilder", "InductionBuilder", "LibraryError", "MatrixFamily", "ProofBuilder", "TheoremEntry", "build",
           "checked", "dim", "entries", "family", "index", "load_entry_points", "load_library", "orthogonal",
           "predicate", "scalar", "theorem"]
