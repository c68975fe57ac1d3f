"""Numeric code generated from checked theorems: standalone NumPy and mpmath modules."""

from .generate import (
           REQUIRED_THEOREMS,
           CodegenError,
           Route,
           mpmath_module,
           numpy_module,
           registered_routes,
           route_expression,
)

__all__ = ["REQUIRED_THEOREMS", "CodegenError", "Route", "mpmath_module", "numpy_module",
           "registered_routes", "route_expression"]
