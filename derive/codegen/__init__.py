"""Numeric code generated from checked theorems: standalone NumPy and mpmath modules.

The fixed numerics are the package modules :mod:`derive.codegen.numerics_numpy` and
:mod:`derive.codegen.numerics_mpmath`; :mod:`derive.codegen.generate` prints the rest from checked lemmas.
"""

from .generate import (
    NUMERICS,
    REQUIRED_THEOREMS,
    CodegenError,
    Route,
    Term,
    generate_module,
    mpmath_module,
    numpy_module,
    registered_printed,
    registered_routes,
    required_theorems,
    route_expression,
    term_expression,
)

__all__ = ["NUMERICS", "REQUIRED_THEOREMS", "CodegenError", "Route", "Term", "generate_module", "mpmath_module",
           "numpy_module", "registered_printed", "registered_routes", "required_theorems", "route_expression",
           "term_expression"]
