"""Numeric code generated from checked theorems: NumPy and mpmath modules.

Each *route* is a lemma the kernel checked, of the form X_q (XᵀX)⁻¹XᵀY = X_q · E, where E
is built from the factors of a decomposition whose defining properties are the lemma's
hypotheses (eigh: XᵀX = VΛVᵀ; svd: X = USVᵀ; qr: X = QR).  The generator prints E with a
subclass of SymPy's code printers, after ``cse``: products fold right to left (so X_q (L (Lᵀ
(XᵀY))) never forms an n×n or m×n matrix), diagonal factors become vectors scaling rows or
columns, inverses of triangular factors become solves, and no fractional matrix power is ever
emitted.  Validation, batching, route choice and refinement are fixed template code.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from sympy import Basic, Rational, cse
from sympy.matrices.expressions import Inverse, MatMul, MatPow, MatrixSymbol, Transpose
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.pycode import MpmathPrinter

from ..kernel import Theorem
from ..kernel.terms import exponent_form, factors_of

__all__ = ["CodegenError", "Route", "registered_routes", "route_expression", "numpy_module", "mpmath_module",
           "REQUIRED_THEOREMS"]


class CodegenError(ValueError):
    """The generator was asked for something it cannot print safely."""


@dataclass(frozen=True)
class Route:
    """A route: the checked lemma whose right-hand side is evaluated, and how symbols are named.

    Declared by the theorem that proves the lemma (``@theorem(routes=[Route(...)])``); ``theorem`` is
    filled in from the registry.
    """

    name: str
    lemma: str
    names: dict[str, str]  # matrix symbol -> Python variable
    diagonal: tuple[str, ...] = ()  # symbols held as vectors of their diagonal
    lower: tuple[str, ...] = ()  # lower-triangular symbols (solved by substitution)
    upper: tuple[str, ...] = ()  # upper-triangular symbols
    gram: bool = False  # XᵀY arrives precomputed as ``XtY`` (the fast memory), so X itself is not needed
    theorem: str = ""


def registered_routes() -> dict[str, Route]:
    """Every route the registered theorems declare, by name (each name once)."""
    from ..authoring.registry import entries

    out: dict[str, Route] = {}
    for item in entries().values():
        for route in item.routes:
            if route.name in out:
                raise CodegenError(f"route {route.name} is declared by {out[route.name].theorem} and {item.id}")
            out[route.name] = dataclasses.replace(route, theorem=item.id)
    return out


#: Every theorem the generated modules rest on (routes, the construction, rank deficiency).
REQUIRED_THEOREMS = ("ols_is_linear_attention", "gauge_invariance", "paper_construction", "pseudo_inverse",
                     "preconditioned_gd")


def _lemma(theorem: Theorem, name: str):
    for chain in (*theorem.proof.lemmas, theorem.proof.claim):
        if chain.name == name:
            return chain
    raise CodegenError(f"{theorem.id} has no lemma {name}")


def route_definitions(theorem: Theorem, expr: Basic) -> dict[str, Basic]:
    """The theorem's definitions that ``expr`` uses, in order (printed as assignments first)."""
    used = {str(s.name) for s in expr.atoms(MatrixSymbol)}
    return {str(d.symbol.name): d.rhs for d in theorem.proof.definitions if str(d.symbol.name) in used}


def route_expression(theorem: Theorem, route: Route) -> Basic:
    """E in the checked lemma X_q (XᵀX)⁻¹XᵀY = X_q · E (the coefficients, β̂ = E)."""
    if not isinstance(theorem, Theorem):
        raise CodegenError("code is generated from checked theorems only")
    chain = _lemma(theorem, route.lemma)
    coeff, factors = factors_of(chain.rhs)
    lhs_coeff, lhs_factors = factors_of(chain.lhs)
    if coeff != 1 or lhs_coeff != 1 or factors[0] != lhs_factors[0] or str(factors[0].name) != "X_q":
        raise CodegenError(f"{theorem.id}/{route.lemma} is not of the form X_q (XᵀX)⁻¹XᵀY = X_q E")
    if chain.hypotheses:
        raise CodegenError(f"{theorem.id}/{route.lemma} has local hypotheses")
    return MatMul(*factors[1:], evaluate=False) if len(factors) > 2 else factors[1]


# --- printing -----------------------------------------------------------------------


def _is_diagonal_atom(term, route: Route) -> bool:
    base, _ = exponent_form(term)
    return isinstance(base, MatrixSymbol) and str(base.name) in route.diagonal


class _FoldingMixin:
    """Shared by the NumPy and mpmath printers: products fold right to left."""

    route: Route

    def _var(self, term) -> str:
        if isinstance(term, MatrixSymbol):
            name = str(term.name)
            return self.route.names.get(name, name)
        raise CodegenError(f"cannot name {term}")

    def _diagonal(self, term) -> str:
        """The vector of a diagonal factor's entries, raised to its exponent."""
        base, q = exponent_form(term)
        vector = self._var(base)
        return vector if q == 1 else self._vector_power(vector, q)

    def _fold(self, factors: list) -> str:
        """Print a product right to left; diagonal factors scale, inverses solve."""
        if not factors:
            raise CodegenError("empty product")
        if len(factors) >= 2 and _is_diagonal_atom(factors[-1], self.route):
            head = self._fold(factors[:-1])
            return self._scale_columns(head, self._diagonal(factors[-1]))
        if _is_diagonal_atom(factors[-1], self.route):
            raise CodegenError("a diagonal factor alone is a vector, not a matrix")
        out = self._print(factors[-1])
        for factor in reversed(factors[:-1]):
            if _is_diagonal_atom(factor, self.route):
                out = self._scale_rows(self._diagonal(factor), out)
            elif isinstance(factor, Inverse):
                out = self._inverse_times(factor.args[0], out)
            else:
                out = self._matmul(self._print(factor), out)
        return out

    def _inverse_times(self, matrix, out: str) -> str:
        """A⁻¹ B as a solve: by substitution for triangular A (or Aᵀ), else a general solve."""
        transposed = isinstance(matrix, Transpose)
        base = matrix.arg if transposed else matrix
        name = str(base.name) if isinstance(base, MatrixSymbol) else None
        if name in self.route.lower or name in self.route.upper:
            lower = (name in self.route.lower) != transposed
            return f"_solve_triangular({self._var(base)}, {out}, lower={lower}, transpose={transposed})"
        return self._solve(self._print(matrix), out)

    def _print_MatMul(self, expr):
        coeff, factors = factors_of(expr)
        out = self._fold(factors)
        return out if coeff == 1 else f"({self._print(coeff)})*{out}"

    def _print_MatrixSymbol(self, expr):
        return self._var(expr)

    def _print_Transpose(self, expr):
        return self._transpose(self._print(expr.arg))

    def _print_Inverse(self, expr):
        raise CodegenError(f"refusing to invert {expr.arg} outside a product (a solve is printed instead)")

    def _print_MatPow(self, expr):
        raise CodegenError(f"refusing to print the matrix power {expr} (only diagonal factors take powers)")


class BatchedNumPyPrinter(_FoldingMixin, NumPyPrinter):
    """NumPy printer for arrays with leading batch dimensions (..., rows, cols)."""

    def __init__(self, route: Route):
        super().__init__({"fully_qualified_modules": False})
        self.route = route

    def _matmul(self, a: str, b: str) -> str:
        return f"({a} @ {b})"

    def _transpose(self, a: str) -> str:
        return f"np.swapaxes({a}, -1, -2)"

    def _scale_rows(self, d: str, b: str) -> str:
        return f"({d}[..., :, None] * {b})"

    def _scale_columns(self, a: str, d: str) -> str:
        return f"({a} * {d}[..., None, :])"

    def _solve(self, a: str, b: str) -> str:
        return f"np.linalg.solve({a}, {b})"

    def _vector_power(self, v: str, q: Rational) -> str:
        return f"(1/{v})" if q == -1 else f"({v}**({q.p}/{q.q}))"


class MatrixMpmathPrinter(_FoldingMixin, MpmathPrinter):
    """mpmath printer for ``mpmath.matrix`` values; helpers are defined in the module template."""

    def __init__(self, route: Route):
        super().__init__({"fully_qualified_modules": False})
        self.route = route

    def _matmul(self, a: str, b: str) -> str:
        return f"({a} * {b})"

    def _transpose(self, a: str) -> str:
        return f"{a}.T"

    def _scale_rows(self, d: str, b: str) -> str:
        return f"_scale_rows({d}, {b})"

    def _scale_columns(self, a: str, d: str) -> str:
        return f"_scale_columns({a}, {d})"

    def _solve(self, a: str, b: str) -> str:
        return f"mp.lu_solve({a}, {b})"

    def _vector_power(self, v: str, q: Rational) -> str:
        return f"_vector_power({v}, {q.p}, {q.q})"


def print_assignments(exprs: dict[str, Basic], printer) -> list[str]:
    """``name = code`` lines for several expressions, sharing subexpressions found by ``cse``.

    Powers of diagonal factors are replaced by atoms first, so ``cse`` cannot rewrite them into
    matrix powers; they are printed as vector powers.
    """
    atoms: dict[Basic, MatrixSymbol] = {}

    def hide(term):
        if isinstance(term, (Inverse, MatPow)) and _is_diagonal_atom(term, printer.route):
            if term not in atoms:
                base, q = exponent_form(term)
                atoms[term] = MatrixSymbol(f"_d{len(atoms)}", *term.shape)
            return atoms[term]
        if isinstance(term, MatMul) and printer.route.gram:
            coeff, factors = factors_of(term)
            for i in range(len(factors) - 1):
                if str(getattr(factors[i], "T", None)) == "X" and isinstance(factors[i], Transpose) \
                        and str(factors[i + 1]) == "Y":
                    atom = MatrixSymbol("XtY", factors[i].shape[0], factors[i + 1].shape[1])
                    factors = factors[:i] + [atom] + factors[i + 2 :]
                    break
            term = MatMul(*([coeff] if coeff != 1 else []), *factors, evaluate=False) if len(factors) > 1 \
                else factors[0]
        if term.args and isinstance(term, (MatMul, Transpose, Inverse)):
            return term.func(*[hide(a) for a in term.args], **({"evaluate": False} if isinstance(term, MatMul) else {}))
        return term

    hidden = [hide(e) for e in exprs.values()]
    replacements, reduced = cse(hidden, symbols=_cse_names(), optimizations=None)
    reveal = {v: k for k, v in atoms.items()}
    names = dict(printer.route.names)
    for atom, term in reveal.items():
        base, q = exponent_form(term)
        names[str(atom.name)] = printer._vector_power(printer._var(base), q)
    names["XtY"] = "XtY"
    printer.route = dataclasses.replace(printer.route, names=names,
                                        diagonal=printer.route.diagonal + tuple(str(a.name) for a in reveal))
    lines = []
    for symbol, value in replacements:
        lines.append(f"{symbol} = {printer.doprint(value)}")
        names[str(symbol)] = str(symbol)
    for name, value in zip(exprs, reduced, strict=True):
        lines.append(f"{name} = {printer.doprint(value)}")
    return lines


def _cse_names():
    index = 0
    while True:
        yield MatrixSymbol(f"t{index}", 1, 1)  # shapes are fixed by cse's substitution
        index += 1


def _header(theorems: dict[str, Theorem], title: str) -> str:
    lines = [f'"""{title}', "", "Generated by `derive codegen` from these kernel-checked theorems "
             "(id, certificate sha256); do not edit:", ""]
    for theorem_id in REQUIRED_THEOREMS:
        lines.append(f"    {theorem_id:24} {theorems[theorem_id].digest}")
    return "\n".join(lines)


def _check_inputs(theorems: dict[str, Theorem]) -> None:
    for theorem_id in REQUIRED_THEOREMS:
        theorem = theorems.get(theorem_id)
        if not isinstance(theorem, Theorem) or theorem.id != theorem_id:
            raise CodegenError(f"code is generated from checked theorems only; {theorem_id} is missing")


def _bodies(theorems: dict[str, Theorem], printer_class) -> dict[str, str]:
    """Printed code for each route (coefficients) and for the paper's construction (P, scores)."""
    _check_inputs(theorems)
    bodies = {}
    for name, route in registered_routes().items():
        theorem = theorems[route.theorem]
        expr = route_expression(theorem, route)
        lines = print_assignments({**route_definitions(theorem, expr), "beta": expr}, printer_class(route))
        bodies[f"{name}_body"] = "\n".join("    " + line for line in lines)
    construction = theorems["paper_construction"].proof
    P = next(d.rhs for d in construction.definitions if str(d.symbol.name) == "P")
    generic = Route("factor", "", {"X": "X", "Y": "Y", "L": "L", "X_q": "X_query"}, theorem="paper_construction")
    bodies["P_body"] = "\n".join("    " + line for line in print_assignments({"P": P}, printer_class(generic)))
    attention = theorems["ols_is_linear_attention"].proof.claim.rhs  # (X_q L)(X L)ᵀ Y
    _, factors = factors_of(attention)
    scores = MatMul(*factors[:-1], evaluate=False)
    bodies["scores_body"] = "\n".join(
        "    " + line for line in print_assignments({"scores": scores}, printer_class(generic)))
    return bodies


def numpy_module(theorems: dict[str, Theorem]) -> str:
    """The NumPy module's text (deterministic)."""
    from .templates import NUMPY_TEMPLATE

    bodies = _bodies(theorems, BatchedNumPyPrinter)
    return NUMPY_TEMPLATE.substitute(header=_header(theorems, "OLS as single-layer linear attention: NumPy."),
                                     **bodies)


def mpmath_module(theorems: dict[str, Theorem]) -> str:
    """The mpmath module's text (deterministic)."""
    from .templates import MPMATH_TEMPLATE

    bodies = _bodies(theorems, MatrixMpmathPrinter)
    return MPMATH_TEMPLATE.substitute(header=_header(theorems, "OLS as single-layer linear attention: mpmath."),
                                      **bodies)
