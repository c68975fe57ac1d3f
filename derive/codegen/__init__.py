"""Numeric code generated from checked theorems: standalone NumPy, mpmath, array-API and Dask modules.

The fixed numerics are the package modules :mod:`derive.codegen.numerics_numpy`, ``numerics_mpmath``,
``numerics_xp`` and ``numerics_dask``; :mod:`derive.codegen.generate` prints the rest from checked lemmas.  A user
library's routes and terms are printed in modules of its own (:func:`library_module`), never in the package's.
"""

from .generate import (
    NUMERICS,
    REQUIRED_THEOREMS,
    CodegenError,
    Route,
    Term,
    Unprinted,
    declared_printed,
    generate_module,
    library_file,
    library_module,
    mpmath_module,
    numpy_module,
    registered_printed,
    registered_routes,
    required_theorems,
    route_expression,
    term_expression,
    user_libraries,
)

__all__ = ["NUMERICS", "REQUIRED_THEOREMS", "CodegenError", "Route", "Term", "Unprinted", "declared_printed",
           "generate_module", "library_file", "library_module", "mpmath_module", "numpy_module", "registered_printed",
           "registered_routes", "required_theorems", "route_expression", "term_expression", "user_libraries"]
