"""Numeric code generated from checked theorems: NumPy and mpmath modules.

A generated module is three parts: a header naming its sources, the fixed numerics (the source of
:mod:`derive.codegen.numerics_numpy` or :mod:`derive.codegen.numerics_mpmath`, ordinary modules of this
package: validation, factorizations, condition estimates, refinement, route choice, public functions),
and small functions printed here from checked lemmas.  The numerics call a printed function by name
through their ``PRINTED`` registry, with the arguments their ``PRINTED_PARAMETERS`` declares; the printed
section defines the functions with exactly those parameters and fills ``PRINTED`` at the end of the file.

What is printed is declared by the theorem that proves it, in its decorator
(``@theorem(routes=[Route(...), Term(...)])``).  A :class:`Route` is a lemma: of the form
X_q · A = X_q · E, E is printed (the coefficients, as the built-in routes X_q (XᵀX)⁻¹XᵀY = X_q · E, where E
is built from the factors of a decomposition whose defining properties are the lemma's hypotheses), and
otherwise the lemma's whole right side.  A :class:`Term` is another term of a checked theorem: a
definition's right side (the construction's P) or the weights of a lemma's right side (the score matrix).
The generator prints with subclasses of SymPy's code printers: products fold right to left (so
X_q (L (Lᵀ (XᵀY))) never forms an n×n or m×n matrix), tails of products that occur twice and (by ``cse``)
repeated terms are computed once, diagonal factors become vectors scaling rows or columns, inverses become
solves (by substitution for triangular factors), block matrices are concatenated, the causal mask
``tril(A, k)`` is NumPy's ``np.tril`` (the array-API namespace's ``tril``, an entrywise helper for mpmath), the
Kronecker product ``kron(A, B)`` the helper ``_printed_kron`` (``np.kron`` on single matrices, a broadcast product on
stacks; a reshaped broadcast product in the array-API namespace; entry by entry for mpmath), and no
fractional matrix power is ever emitted.  A route or term the numerics do not call that cannot be printed is left
out and named (:class:`Unprinted`); the module is written with the others.  Printing one is bounded
(:data:`MAX_TERM_NODES`, :data:`MAX_WORK`): past the bounds it is named too, never an unbounded computation.

The package's modules hold the built-in library's routes and terms only.  A user library's (a ``--library``
module or file, an entry point) are printed in modules of its own, :func:`library_module`: its public functions
and the few helpers they call, copied from the backend's fixed numerics, so the package's modules are the same
bytes whatever library is loaded.  A route prints the side of its lemma it names (``Route.side``); the scalars
a printed side reads are its function's arguments, named after their symbols (:meth:`_FoldingMixin.python_name`).
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import functools
import hashlib
import importlib
import itertools
import keyword
import re
import textwrap
from collections.abc import Iterator, Sequence
from importlib import resources
from types import ModuleType

from sympy import Add, Basic, Mul, Pow, Rational, Symbol, cse
from sympy.matrices.expressions import (
    BlockMatrix,
    Identity,
    Inverse,
    MatAdd,
    MatMul,
    MatPow,
    MatrixSymbol,
    Trace,
    Transpose,
    ZeroMatrix,
)
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.pycode import MpmathPrinter

from ..kernel import Induction, Theorem, is_issued
from ..kernel.terms import FamilyMatrix, Kron, Tril, blocks_of, exponent_form, factors_of
from ..routes import CodegenError, Printed, Route, Term

__all__ = ["CodegenError", "Route", "Term", "registered_routes", "registered_printed", "declared_printed",
           "route_expression", "term_expression", "required_theorems", "Unprinted", "generate_module",
           "numpy_module", "mpmath_module", "xp_module", "dask_module", "library_module", "library_file",
           "library_module_name", "library_display", "library_of", "user_libraries", "PACKAGE_LIBRARY",
           "REQUIRED_THEOREMS", "NUMERICS"]


def declared_printed() -> list[Printed]:
    """Every route and term the registered theorems declare, in registry order (the built-in library first),
    each with its theorem filled in; two of one name may come from different libraries."""
    from ..authoring.registry import entries

    out: list[Printed] = []
    for item in entries().values():
        for declared in item.routes:
            if not isinstance(declared, (Route, Term)):
                raise CodegenError(f"{item.id} declares {declared!r}, which is neither a Route nor a Term")
            out.append(dataclasses.replace(declared, theorem=item.id))
    return out


def registered_printed() -> dict[str, Printed]:
    """Every route and term the registered theorems declare, by name, in registry order: of two of one name, the
    first registered (the built-in library's own come first, so a user's library never displaces them; each of
    a user's is printed in that library's module, :func:`library_module`)."""
    out: dict[str, Printed] = {}
    for declared in declared_printed():
        out.setdefault(declared.name, declared)
    return out


#: Where the built-in theorems live: a theorem registered by a module under it is the package's own, and what it
#: declares is printed in the package's generated modules; any other (a ``--library`` module or file, an entry
#: point) is a user's library, printed in a module of its own.
PACKAGE_LIBRARY = "derive."

_USER_FILE = re.compile(r"_derive_user_library_(?P<stem>.+)_[0-9a-f]{12}\Z")


def library_of(declared: Printed) -> str | None:
    """The registry module of the user library that declares ``declared``, or None for the package's own."""
    from ..authoring.registry import entries

    item = entries().get(declared.theorem)
    module = item.module if item is not None else ""
    return None if module.startswith(PACKAGE_LIBRARY) else module


def user_libraries() -> list[str]:
    """The user libraries that declare routes or terms (registry modules), in registry order."""
    return list(dict.fromkeys(lib for d in declared_printed() if (lib := library_of(d)) is not None))


def library_module_name(library: str) -> str:
    """The stem of a user library's generated modules, a Python name from its file or module: ``my_theorems`` for
    the file ``my_theorems.py`` (loaded from any folder), ``my_package_theorems`` for the module
    ``my_package.theorems``.  Its modules are ``<stem>_<backend>.py`` (:func:`library_file`)."""
    match = _USER_FILE.match(library)
    stem = match["stem"] if match else library.replace(".", "_")
    stem = re.sub(r"\W", "_", stem, flags=re.ASCII) or "library"
    return stem if stem[0].isalpha() or stem[0] == "_" else f"library_{stem}"


def library_file(library: str, backend: str) -> str:
    """The file name of a user library's module for ``backend``: ``<stem>_<backend>.py``."""
    return f"{library_module_name(library)}_{backend}.py"


def registered_routes() -> dict[str, Route]:
    """Every route the registered theorems declare, by name (each name once)."""
    return {name: d for name, d in registered_printed().items() if isinstance(d, Route)}


# --- backends: the fixed numerics modules ------------------------------------------------

#: Backend -> (the package module holding its fixed numerics, the generated module's title).
NUMERICS = {
    "numpy": ("derive.codegen.numerics_numpy", "OLS as single-layer linear attention: NumPy."),
    "mpmath": ("derive.codegen.numerics_mpmath", "OLS as single-layer linear attention: mpmath."),
    "xp": ("derive.codegen.numerics_xp",
           "OLS as single-layer linear attention: array API (NumPy, PyTorch, JAX, CuPy)."),
    "dask": ("derive.codegen.numerics_dask",
             "OLS as single-layer linear attention: Dask (tall data, chunked by rows)."),
}


def _numerics(backend: str) -> ModuleType:
    """The backend's numerics module, or, where its library (array_api_compat, dask) is not installed, its
    declarations read from its source: generating a module never needs the library it runs on."""
    try:
        return importlib.import_module(NUMERICS[backend][0])
    except ImportError:
        module = NUMERICS[backend][0]
        source = resources.files(module.rsplit(".", 1)[0]).joinpath(module.rsplit(".", 1)[1] + ".py")
        declared = ModuleType(module)
        for node in ast.parse(source.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name) and target.id in ("PRINTED_PARAMETERS", "RELIES_ON"):
                        setattr(declared, target.id, ast.literal_eval(node.value))
        return declared


def _called(backend: str) -> dict[str, tuple[str, ...]]:
    """The printed functions a backend's numerics call: name -> parameters."""
    return dict(_numerics(backend).PRINTED_PARAMETERS)


def required_theorems(backends: Sequence[str] = tuple(NUMERICS)) -> tuple[str, ...]:
    """The theorems the generated modules rest on, in registry order: those declaring the printed functions
    the numerics call, and those the numerics themselves rely on (``RELIES_ON``: rank deficiency, refinement)."""
    from ..authoring.registry import entries

    printed = registered_printed()
    wanted: set[str] = set()
    for backend in backends:
        wanted.update(printed[name].theorem for name in _called(backend) if name in printed)
        wanted.update(_numerics(backend).RELIES_ON)
    return tuple(theorem_id for theorem_id in entries() if theorem_id in wanted) + tuple(
        sorted(wanted - set(entries())))


class _RequiredTheorems(Sequence):
    """A live view of :func:`required_theorems` for both backends (the registry may grow as libraries load)."""

    def _ids(self) -> tuple[str, ...]:
        return required_theorems()

    def __getitem__(self, index):
        return self._ids()[index]

    def __len__(self) -> int:
        return len(self._ids())

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids())

    def __eq__(self, other) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, (tuple, list, _RequiredTheorems)) else other)

    def __hash__(self) -> int:
        return hash(self._ids())

    def __repr__(self) -> str:
        return repr(self._ids())


#: Every theorem the generated modules rest on; follows from the declarations (see :func:`required_theorems`).
REQUIRED_THEOREMS: Sequence[str] = _RequiredTheorems()


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
    """What a route prints: E of a checked lemma X_q · A = X_q · E (the coefficients, β̂ = E), or else the
    lemma's whole right side, whatever its shape; with ``side="lhs"``, A or the whole left side."""
    if not is_issued(theorem):
        raise CodegenError("code is generated from checked theorems only")
    chain = _lemma(theorem, route.lemma)
    if chain.hypotheses:
        raise CodegenError(f"{theorem.id}/{route.lemma} has local hypotheses")
    side = chain.lhs if route.side == "lhs" else chain.rhs
    _bounded(side)
    if side.has(FamilyMatrix):
        side = _members_as_arrays(side, _variable(chain, side, theorem, route), theorem, route)
    return _without_query(side) if _has_query(chain) else side


def _variable(chain, side: Basic, theorem: Theorem, route: Route) -> Basic:
    """The index a route's family members are read at: an induction's variable, else the one index of the side's
    members (a claim for every t)."""
    if type(chain) is Induction:
        return chain.variable
    indices = {member.index for member in side.atoms(FamilyMatrix)}
    if len(indices) != 1:
        raise CodegenError(f"{theorem.id}/{route.lemma}: members at several indices ({', '.join(map(str, indices))})"
                           "; a route prints the members at one index, each as the array of that step")
    return indices.pop()


def _members_as_arrays(side: Basic, variable: Basic, theorem: Theorem, route: Route) -> Basic:
    """A side of an induction lemma (issue 42: a chunk's outputs for every length t), with each family member at the
    lemma's variable, F[t], read as the array F of that step: the printed function takes the members at t and gives
    the side at t.  A member at another index (F[t − 1], F[0]) is refused, named; so is a family named like a plain
    symbol of the side."""
    plain = {str(s.name) for s in side.atoms(MatrixSymbol)}
    arrays = {}
    for member in side.atoms(FamilyMatrix):
        if member.index != variable:
            raise CodegenError(f"{theorem.id}/{route.lemma}: the member {member} is not at the lemma's index "
                               f"{variable}; only members F[{variable}] are printed, as the array F")
        if member.name in plain:
            raise CodegenError(f"{theorem.id}/{route.lemma}: the family {member.name} is named like a matrix")
        arrays[member] = MatrixSymbol(member.name, *member.shape)
    return side.xreplace(arrays)


def _has_query(chain) -> bool:
    """Both sides of the chain are X_q times something, with no coefficient: the route prints the something."""
    coeff, factors = factors_of(chain.rhs)
    lhs_coeff, lhs_factors = factors_of(chain.lhs)
    return (coeff == 1 and lhs_coeff == 1 and len(factors) >= 2 and len(lhs_factors) >= 2
            and factors[0] == lhs_factors[0] and isinstance(factors[0], MatrixSymbol)
            and str(factors[0].name) == "X_q")


def _without_query(side) -> Basic:
    _, factors = factors_of(side)
    return MatMul(*factors[1:], evaluate=False) if len(factors) > 2 else factors[1]


def term_expression(theorem: Theorem, term: Term) -> Basic:
    """The term a :class:`Term` declares: a definition's right side, or a chain's right side without its values."""
    if not is_issued(theorem):
        raise CodegenError("code is generated from checked theorems only")
    if term.definition:
        for definition in theorem.proof.definitions:
            if str(definition.symbol.name) == term.definition:
                return _bounded(definition.rhs)
        raise CodegenError(f"{theorem.id} has no definition {term.definition}")
    chain = _lemma(theorem, term.lemma)
    if chain.hypotheses:
        raise CodegenError(f"{theorem.id}/{term.lemma} has local hypotheses")
    coeff, factors = factors_of(_bounded(chain.rhs))
    last = factors[-1] if factors else None
    if coeff != 1 or len(factors) < 2 or not isinstance(last, MatrixSymbol) or str(last.name) != term.values:
        raise CodegenError(f"{theorem.id}/{term.lemma} is not of the form W {term.values} (weights times values)")
    return MatMul(*factors[:-1], evaluate=False) if len(factors) > 2 else factors[0]


def printed_assignments(theorem: Theorem, declared: Printed) -> dict[str, Basic]:
    """What a declaration prints: ``name = term`` in order, the last one the function's result.  Every term is
    within :data:`MAX_TERM_NODES` before SymPy is asked anything about it (:func:`_bounded`)."""
    if isinstance(declared, Route):
        expr = route_expression(theorem, declared)
        result = declared.result if _coefficients(theorem, declared) else declared.name
        definitions = route_definitions(theorem, expr)
        for term in definitions.values():
            _bounded(term)
        return {**definitions, result: expr}
    return {declared.result: term_expression(theorem, declared)}


def _require_bounded(terms) -> None:
    """A :class:`CodegenError` where ``terms`` hold more than :data:`MAX_TERM_NODES` nodes together (counted without
    asking SymPy anything, and counting no further than the bound)."""
    if _size(terms) > MAX_TERM_NODES:
        raise CodegenError(f"its terms have more than {MAX_TERM_NODES:,} nodes, the printer's bound on one route")


def _bounded(term: Basic) -> Basic:
    """``term`` itself, where it is within the printer's bound (:func:`_require_bounded`)."""
    _require_bounded([term])
    return term


# --- printing -----------------------------------------------------------------------


def _identity_multiple(term):
    """c for a term c·I (I alone: 1), else None."""
    if isinstance(term, Identity):
        return 1
    if isinstance(term, MatMul):
        coeff, factors = factors_of(term)
        if len(factors) == 1 and isinstance(factors[0], Identity):
            return coeff
    return None


def _is_diagonal_sum(term, route: Route) -> bool:
    """Λ + λI, Λ − cI, ...: a sum of a held diagonal and scalar multiples of I (held as a vector too)."""
    if not isinstance(term, MatAdd):
        return False
    held = 0
    for arg in term.args:
        if _identity_multiple(arg) is not None:
            continue
        _, factors = factors_of(arg) if isinstance(arg, MatMul) else (1, [arg])
        if len(factors) != 1 or not _is_diagonal_atom(factors[0], route):
            return False
        held += 1
    return held > 0


def _is_diagonal_atom(term, route: Route) -> bool:
    """A factor held as the vector of its diagonal: a declared diagonal symbol, or a diagonal sum, to a power."""
    base, _ = exponent_form(term)
    if isinstance(base, MatrixSymbol):
        return str(base.name) in route.diagonal
    return _is_diagonal_sum(base, route)


def _bare(code: str) -> str:
    """Printed code without the parentheses around all of it (the sole argument of a call needs none)."""
    if not (code.startswith("(") and code.endswith(")")):
        return code
    depth = 0
    for i, ch in enumerate(code):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and i < len(code) - 1:
            return code
    return code[1:-1]


def _atomic(code: str) -> str:
    """Printed code that binds as one operand: a name, a call or indexing, or parenthesized whole."""
    if code.isidentifier() or (_bare(code) != code and code.startswith("(")):
        return code
    try:
        node = ast.parse(code, mode="eval").body
    except SyntaxError:
        return f"({code})"
    return code if isinstance(node, (ast.Name, ast.Call, ast.Attribute, ast.Subscript)) else f"({code})"


class _FoldingMixin:
    """Shared by the NumPy and mpmath printers: products fold right to left."""

    route: Route
    #: Names the printed code may not give a symbol: the module's own (its imports and helpers).
    reserved: frozenset[str] = frozenset()
    #: The names of every symbol of the printed terms (set by :func:`print_assignments`): a name made for one
    #: symbol is never another's.
    taken: frozenset[str] = frozenset()

    def python_name(self, name: str) -> str:
        """The Python name of the symbol ``name``: as the declaration's ``names`` map it, else its own name, with a
        ``_`` appended while it is a keyword, a name of the module (``reserved``) or another symbol's
        (``lambda`` → ``lambda_``)."""
        if name in self.route.names:
            return self.route.names[name]
        python = name
        while keyword.iskeyword(python) or python in self.reserved or (python != name and python in self.taken):
            python += "_"
        return python

    def _var(self, term) -> str:
        if isinstance(term, MatrixSymbol):
            return self.python_name(str(term.name))
        raise CodegenError(f"cannot name {term}")

    def _diagonal(self, term) -> str:
        """The vector of a diagonal factor's entries, raised to its exponent."""
        base, q = exponent_form(term)
        vector = self._diagonal_vector(base)
        return vector if q == 1 else self._vector_power(vector, q)

    def _diagonal_vector(self, base) -> str:
        """The entries of a held diagonal, or of a diagonal sum Λ + cI (a vector plus scalars)."""
        if not isinstance(base, MatAdd):
            return self._var(base)
        vectors, shift = [], []
        for arg in base.args:
            c = _identity_multiple(arg)
            if c is not None:
                shift.append(self._print(c))
                continue
            coeff, (factor,) = factors_of(arg) if isinstance(arg, MatMul) else (1, [arg])
            vector = self._diagonal(factor)
            vectors.append(vector if coeff == 1 else self._vector_scale(vector, self._print(coeff)))
        out = vectors[0]
        for vector in vectors[1:]:
            out = self._vector_add(out, vector)
        return self._vector_shift(out, " + ".join(f"({c})" for c in shift)) if shift else out

    def _print_Symbol(self, expr):
        """A scalar of the theorem (λ), named by the route like its matrices, else by its own name; a dimension
        as a coefficient (the 1/n of a sample mean) is the size read off an argument's shape."""
        dims = getattr(self, "dims", {})
        if expr in dims:
            return f"({dims[expr]})"
        name = str(expr.name)
        if name in getattr(self, "one_by_one", ()) and not self._entries_allowed():
            raise CodegenError(f"{name}, a 1×1 matrix read as a scalar, is printed as a product's coefficient only")
        python = self.python_name(name)
        if not python.isidentifier() or keyword.iskeyword(python):
            raise CodegenError(f"the scalar {name} is mapped to {python!r}, not a Python name: map it to one in the "
                               "route's names")
        return python

    def _dim(self, size) -> str:
        """A dimension (p, or n + p) in terms of the printed function's arguments' shapes."""
        dims = getattr(self, "dims", {})
        missing = [str(s) for s in sorted(size.free_symbols, key=str) if s not in dims]
        if missing:
            raise CodegenError(f"the size {', '.join(missing)} of a block of I or 0 is not the size of any "
                               "matrix the function takes")
        out = self._print(size.xreplace({s: Symbol(f"_size_{s}") for s in size.free_symbols}))
        for s in size.free_symbols:
            out = out.replace(f"_size_{s}", dims[s])
        return out

    def _print_BlockMatrix(self, expr):
        """A block matrix: its blocks concatenated (multiples of I and zero blocks made to size)."""
        rows = []
        for row in blocks_of(expr):
            printed = []
            for b in row:
                c = _identity_multiple(b)
                if c is not None:
                    printed.append(f'("I", {self._dim(b.shape[0])}, {self._print(c)})')
                elif isinstance(b, ZeroMatrix):
                    printed.append(f'("0", {self._dim(b.shape[0])}, {self._dim(b.shape[1])})')
                else:
                    printed.append(self._print(b))
            rows.append(f"[{', '.join(printed)}]")
        self.helpers.add("_printed_block")
        return f"_printed_block([{', '.join(rows)}])"

    def _print_ZeroMatrix(self, expr):
        raise CodegenError("a zero matrix outside a block matrix is not printed (it has no size there)")

    def _print_MatAdd(self, expr):
        """A sum of matrices; its multiples of I are added to the diagonal of the rest."""
        if _is_diagonal_sum(expr, self.route):
            raise CodegenError(f"a diagonal sum alone is a vector, not a matrix: {expr}")
        rest, shift = [], []
        for arg in expr.args:
            c = _identity_multiple(arg)
            (rest if c is None else shift).append(arg if c is None else self._print(c))
        if not rest:
            raise CodegenError(f"cannot print {expr}: a multiple of I alone has no size in a printed function")
        out = " + ".join(self._print(arg) for arg in rest)
        out = f"({out})" if len(rest) > 1 else out
        return self._plus_identity(out, " + ".join(f"({c})" for c in shift)) if shift else out

    def _print_Identity(self, expr):
        raise CodegenError("I alone has no size in a printed function (only I added to a matrix is printed)")

    def _fold(self, factors: list) -> str:
        """Print a product right to left; diagonal factors scale, inverses solve."""
        if not factors:
            raise CodegenError("empty product")
        if len(factors) >= 2 and _is_diagonal_atom(factors[-1], self.route):
            head = self._fold(factors[:-1])
            return self._scale_columns(head, self._diagonal(factors[-1]))
        if _is_diagonal_atom(factors[-1], self.route):
            raise CodegenError("a diagonal factor alone is a vector, not a matrix")
        if len(factors) >= 2 and isinstance(factors[-1], Inverse):  # B A⁻¹ = (A⁻ᵀ Bᵀ)ᵀ: a solve too
            head = self._transpose(self._fold(factors[:-1]))
            return self._transpose(self._inverse_times(Transpose(factors[-1].args[0]), head))
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
        """A⁻¹ B as a solve: by substitution for triangular A (or Aᵀ), with A's factors where A is solved with
        more than once (``factored``: the NumPy backend), else a general solve."""
        transposed = isinstance(matrix, Transpose)
        base = matrix.arg if transposed else matrix
        name = str(base.name) if isinstance(base, MatrixSymbol) else None
        if name in self.route.lower or name in self.route.upper:
            lower = (name in self.route.lower) != transposed
            return f"_solve_triangular({self._var(base)}, {out}, lower={lower}, transpose={transposed})"
        if name is not None:
            var = self._var(base)
            counts = getattr(self, "solve_counts", None)
            if counts is not None:
                counts[var] = counts.get(var, 0) + 1
            factors = getattr(self, "factored", {}).get(var)
            if factors is not None:
                self.helpers.add("_printed_factor_solve")
                return f"_printed_factor_solve({factors}, {out}, transpose={transposed})"
        return self._solve(self._print(matrix), out)

    def _print_MatMul(self, expr):
        coeff, factors = factors_of(expr)
        out = self._fold(factors)
        return out if coeff == 1 else f"({self._coefficient(coeff)})*{out}"

    #: Whether a 1×1 matrix read as a scalar prints as a number (mpmath: its entry) and so may stand wherever a
    #: scalar does; else (the array printers) it is the (..., 1, 1) array, which scales a product by broadcasting
    #: and is printed as a product's coefficient only.
    scalar_entries = False

    def _coefficient(self, coeff) -> str:
        """A product's coefficient, where a 1×1 matrix read as a scalar, ``Trace(m)``, may be printed."""
        outer, self.in_coefficient = getattr(self, "in_coefficient", False), True
        try:
            return _bare(self._print(coeff))
        finally:
            self.in_coefficient = outer

    def _print_Trace(self, expr):
        """A 1×1 matrix read as a scalar, such as the (1ᵀKq)⁻¹ of normalised attention (issue 41)."""
        matrix = expr.arg
        if tuple(matrix.shape) != (1, 1):
            raise CodegenError(f"the trace of {_shown(matrix)}, not a 1×1 matrix, is not printed")
        if not self._entries_allowed():
            raise CodegenError(f"the 1×1 matrix {_shown(matrix)} read as a scalar is printed as the coefficient "
                               "of a product only")
        return self._entry(_atomic(self._print(matrix)))

    def _entries_allowed(self) -> bool:
        """Whether a 1×1 matrix read as a scalar may be printed here."""
        return self.scalar_entries or getattr(self, "in_coefficient", False)

    def _entry(self, a: str) -> str:
        """The scalar a 1×1 matrix holds, from its printed (atomic) code: the array itself, which broadcasts."""
        return a

    def _print_MatrixSymbol(self, expr):
        return self._var(expr)

    def _print_Transpose(self, expr):
        return self._transpose(self._print(expr.arg))

    def _print_Tril(self, expr):
        """The causal mask tril(A, k) (issues 41, 42): A with the entries above its k-th diagonal zeroed, k = 0
        (the diagonal kept) or -1 (strictly lower)."""
        matrix, offset = expr.args
        if _is_diagonal_atom(matrix, self.route):
            raise CodegenError(f"the causal mask of {_shown(matrix)}, a diagonal held as a vector, is not printed")
        return self._tril(_bare(self._print(matrix)), int(offset))

    def _print_Kron(self, expr):
        """The Kronecker product A ⊗ B (issue 41): block (i, j) is Aᵢⱼ·B, by the backend's helper ``_printed_kron``;
        a factor c·I is ``("I", n, c)`` (as in a block matrix: its size read off the arguments' shapes, its type the
        other factor's)."""
        multiples = [_identity_multiple(factor) for factor in expr.args]
        if all(c is not None for c in multiples):
            raise CodegenError(f"the Kronecker product of two multiples of I, {_shown(expr)}, is not printed (no "
                               "factor is an array to take the type from)")
        printed = []
        for factor, c in zip(expr.args, multiples, strict=True):
            if _is_diagonal_atom(factor, self.route):
                raise CodegenError(f"the Kronecker product with {_shown(factor)}, a diagonal held as a vector, is not "
                                   "printed")
            printed.append(_bare(self._print(factor)) if c is None
                           else f'("I", {self._dim(factor.shape[0])}, {self._print(c)})')
        self.helpers.add("_printed_kron")
        return f"_printed_kron({', '.join(printed)})"

    def _print_Inverse(self, expr):
        """An inverse applied to nothing: the one place an explicit inverse is printed (unavoidable)."""
        if _is_diagonal_atom(expr, self.route):
            raise CodegenError("a diagonal factor alone is a vector, not a matrix")
        if isinstance(expr.arg, MatrixSymbol):  # a matrix factored once: its factors solve with I
            var = self._var(expr.arg)
            factors = getattr(self, "factored", {}).get(var)
            if factors is not None:
                self.helpers.add("_printed_factor_solve")
                return f"_printed_factor_solve({factors}, np.eye({var}.shape[-1], dtype={var}.dtype), transpose=False)"
        if tuple(expr.shape) == (1, 1) and not self.scalar_entries:  # a 1×1 matrix: its entry's reciprocal
            return f"(1/{_atomic(self._print(expr.arg))})"
        return self._inverse(_bare(self._print(expr.arg)))

    def _print_MatPow(self, expr):
        raise CodegenError(f"refusing to print the matrix power {expr} (only diagonal factors take powers)")


class BatchedNumPyPrinter(_FoldingMixin, NumPyPrinter):
    """NumPy printer for arrays with leading batch dimensions (..., rows, cols)."""

    def __init__(self, route: Route):
        super().__init__({"fully_qualified_modules": False})
        self.route = route
        self.helpers: set[str] = set()  # the printed section's helpers the printed code calls
        self.dims: dict = {}  # dimension symbol -> its value read off an argument's shape

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

    def _inverse(self, a: str) -> str:
        return f"np.linalg.inv({a})"

    def _rows(self, a: str) -> str:
        return f"{a}.shape[-2]"

    def _cols(self, a: str) -> str:
        return f"{a}.shape[-1]"

    def _vector_power(self, v: str, q: Rational) -> str:
        return f"(1/{v})" if q == -1 else f"({v}**({q.p}/{q.q}))"

    def _vector_add(self, a: str, b: str) -> str:
        return f"({a} + {b})"

    def _vector_scale(self, v: str, c: str) -> str:
        return f"(({c}) * {v})"

    def _vector_shift(self, v: str, c: str) -> str:
        return f"({v} + {c})"

    def _plus_identity(self, a: str, c: str) -> str:
        return f"_plus_identity({a}, {c})"

    def _tril(self, a: str, k: int) -> str:
        return f"np.tril({a})" if k == 0 else f"np.tril({a}, {k})"


class FactoringNumPyPrinter(BatchedNumPyPrinter):
    """The NumPy backend's printer: a matrix solved with more than once is factored once (``_printed_factor``:
    LU by SciPy where it is installed and the matrix is a single one) and each solve uses the factors."""

    factor_once = True

    def __init__(self, route: Route):
        super().__init__(route)
        self.factored: dict[str, str] = {}  # a matrix's variable -> the variable holding its factorization


class ArrayAPIPrinter(BatchedNumPyPrinter):
    """Printer for arrays of any array-API namespace: operators only (``@``, ``.mT``, indexing), no namespace
    name; a general solve is the numerics' ``_general_solve``."""

    def _transpose(self, a: str) -> str:
        return f"{a}.mT"

    def _solve(self, a: str, b: str) -> str:
        return f"_general_solve({a}, {b})"

    def _inverse(self, a: str) -> str:
        self.helpers.add("_printed_inverse")
        return f"_printed_inverse({a})"

    def _tril(self, a: str, k: int) -> str:
        self.helpers.add("_printed_tril")
        return f"_printed_tril({a})" if k == 0 else f"_printed_tril({a}, {k})"


class MatrixMpmathPrinter(_FoldingMixin, MpmathPrinter):
    """mpmath printer for ``mpmath.matrix`` values; helpers are defined in the module template."""

    def __init__(self, route: Route):
        super().__init__({"fully_qualified_modules": False})
        self.route = route
        self.helpers: set[str] = set()  # the printed section's helpers the printed code calls
        self.dims: dict = {}  # dimension symbol -> its value read off an argument's shape

    def _matmul(self, a: str, b: str) -> str:
        return f"({a} * {b})"

    def _transpose(self, a: str) -> str:
        return f"{a}.T"

    def _scale_rows(self, d: str, b: str) -> str:
        return f"_scale_rows({d}, {b})"

    def _scale_columns(self, a: str, d: str) -> str:
        return f"_scale_columns({a}, {d})"

    def _solve(self, a: str, b: str) -> str:
        return f"_lu_solve({a}, {b})"

    scalar_entries = True

    def _entry(self, a: str) -> str:
        return f"{a}[0, 0]"

    def _print_Rational(self, expr):
        return f"mpmath.mpf({expr.p})/{expr.q}"

    def _inverse(self, a: str) -> str:
        return f"mpmath.inverse({a})"

    def _rows(self, a: str) -> str:
        return f"{a}.rows"

    def _cols(self, a: str) -> str:
        return f"{a}.cols"

    def _vector_power(self, v: str, q: Rational) -> str:
        return f"_vector_power({v}, {q.p}, {q.q})"

    def _vector_add(self, a: str, b: str) -> str:
        return f"_vector_add({a}, {b})"

    def _vector_scale(self, v: str, c: str) -> str:
        return f"_vector_scale({v}, {c})"

    def _vector_shift(self, v: str, c: str) -> str:
        return f"_vector_shift({v}, {c})"

    def _plus_identity(self, a: str, c: str) -> str:
        return f"_plus_identity({a}, {c})"

    def _tril(self, a: str, k: int) -> str:
        self.helpers.add("_printed_tril")
        return f"_printed_tril({a})" if k == 0 else f"_printed_tril({a}, {k})"


#: Backend -> the printer of its printed functions.
_PRINTERS = {"numpy": FactoringNumPyPrinter, "mpmath": MatrixMpmathPrinter, "xp": ArrayAPIPrinter,
             "dask": BatchedNumPyPrinter}


#: The printer's bounds on one route or term (issue 41): its terms may hold at most ``MAX_TERM_NODES`` nodes, and
#: printing them may take at most ``MAX_WORK`` steps (a node visited or rebuilt, a factor of a tail of a product
#: hashed).  The built-in routes and those of the tests' libraries take under 40 nodes and 250 steps; a term of
#: 4,000 nodes prints in about a second, ``cse`` included.  A route past either bound is not printed and is named.
MAX_TERM_NODES = 4_000
MAX_WORK = 2_000_000


class _Work:
    """The work spent printing one route, charged as it goes: past ``limit`` a :class:`CodegenError`."""

    def __init__(self, limit: int | None = None):
        self.limit, self.used = MAX_WORK if limit is None else limit, 0

    def charge(self, steps: int = 1) -> None:
        self.used += steps
        if self.used > self.limit:
            raise CodegenError(f"printing it takes more than {self.limit:,} steps, the printer's bound on one route")


#: The nodes the printer descends into (a product's coefficient and the 1×1 matrix of a ``Trace`` in it included, the
#: argument of a causal mask ``Tril``, the two factors of a Kronecker product ``Kron``);
#: every other node (a matrix symbol, I, 0, a scalar symbol, a number) is a leaf.
_DESCENDED = (MatMul, MatAdd, Transpose, MatPow, Trace, Tril, Kron, Mul, Add, Pow)  # Inverse is a MatPow


def _children(term: Basic) -> tuple:
    if isinstance(term, BlockMatrix):
        return tuple(b for row in blocks_of(term) for b in row)
    return term.args if isinstance(term, _DESCENDED) else ()


def _nodes(term: Basic, work: _Work) -> Iterator[Basic]:
    """The nodes of a term, in preorder, as :func:`_rebuild` descends: what is counted in them can be rewritten."""
    stack = [term]
    while stack:
        node = stack.pop()
        work.charge()
        yield node
        stack.extend(reversed(_children(node)))


def _rebuild(term: Basic, f, work: _Work) -> Basic:
    """``term`` with ``f`` applied to each of its children (:func:`_children`), built without SymPy's rewriting;
    ``term`` itself where nothing changed."""
    work.charge()
    children = _children(term)
    new = [f(child) for child in children]
    if all(a is b for a, b in zip(children, new, strict=True)):
        return term
    if isinstance(term, BlockMatrix):
        width = len(blocks_of(term)[0])
        return BlockMatrix([new[i:i + width] for i in range(0, len(new), width)])
    if isinstance(term, (MatMul, MatAdd, Mul, Add, Pow)):
        return term.func(*new, evaluate=False)
    return term.func(*new)


def _size(exprs, limit: int | None = None) -> int:
    """The number of nodes of the terms, counted up to ``limit`` + 1 (default: ``MAX_TERM_NODES`` + 1)."""
    limit = MAX_TERM_NODES if limit is None else limit
    count, work = 0, _Work(limit + 2)
    for e in exprs:
        for _ in _nodes(e, work):
            count += 1
            if count > limit:
                return count
    return count


def _shown(term, width: int = 60) -> str:
    text = " ".join(str(term).split())
    return text if len(text) <= width else text[: width - 1] + "…"


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
        return _rebuild(term, hide, work)

    _require_bounded(exprs.values())
    work = printer.work = _Work()
    printer.taken = frozenset(_symbol_names(exprs))
    printer.dims = _argument_dims(exprs, printer)
    exprs = _share_suffixes(dict(zip(exprs, (hide(e) for e in exprs.values()), strict=True)),
                            lambda f: _is_diagonal_atom(f, printer.route) or str(f) in {str(a) for a in atoms.values()},
                            work)
    hidden = list(exprs.values())
    local = _symbol_names(exprs) | set(printer.reserved) | {printer.python_name(n) for n in printer.taken}
    replacements, reduced = cse(hidden, symbols=_cse_names(local), optimizations=None)
    reveal = {v: k for k, v in atoms.items()}
    names = dict(printer.route.names)
    for atom, term in reveal.items():
        names[str(atom.name)] = printer._diagonal(term)
    names["XtY"] = "XtY"
    printer.route = dataclasses.replace(printer.route, names=names,
                                        diagonal=printer.route.diagonal + tuple(str(a.name) for a in reveal))
    lines = _emit_assignments(printer, exprs, names, replacements, reduced)
    repeated = sorted(var for var, count in getattr(printer, "solve_counts", {}).items() if count >= 2)
    if repeated and getattr(printer, "factor_once", False):  # again, each repeated inverse factored once
        printer.factored = {var: f"{var}_lu" for var in repeated}
        body = _emit_assignments(printer, exprs, names, replacements, reduced)
        head = []
        for var in repeated:
            line = f"{printer.factored[var]} = _printed_factor({var})"
            at = next((i for i, text in enumerate(body) if text.startswith(f"{var} = ")), None)
            if at is None:
                head.append(line)  # an argument of the function
            else:
                body.insert(at + 1, line)
        printer.helpers.add("_printed_factor")
        lines = head + body
    return lines


def _emit_assignments(printer, exprs: dict[str, Basic], names: dict, replacements, reduced) -> list[str]:
    """The assignment lines of :func:`print_assignments`, in an order where each follows what it reads."""
    printer.solve_counts = {}
    printer.one_by_one = set()  # the names of scalars computed once that hold a 1×1 matrix read as a scalar
    pending = [(str(symbol), value) for symbol, value in replacements] + list(zip(exprs, reduced, strict=True))
    lines = []
    shared: dict[str, Basic] = {}  # cse's placeholder, by name -> what later terms read in its place

    def read(value):
        return value.xreplace({a: shared[str(a.name)] for a in value.atoms(MatrixSymbol) if str(a.name) in shared})

    while pending:  # in order, each assignment after those it reads (cse's before the shared tails they read)
        waiting = {name for name, _ in pending}
        index = next((i for i, (name, value) in enumerate(pending)
                      if not ({str(a) for a in value.free_symbols} & (waiting - {name}))), 0)
        name, value = pending.pop(index)
        value = read(value)
        names[name] = name
        if name not in exprs and (isinstance(value, MatrixSymbol)
                                  or isinstance(value, Inverse) and isinstance(value.arg, MatrixSymbol)):
            # an alias (of a matrix, or of the inverse of one already computed): read it in place
            shared[name] = value
        elif not getattr(value, "is_Matrix", False):  # a scalar computed once (μ²)
            shared[name] = Symbol(name)
            traced = value.atoms(Trace) or {str(s) for s in value.free_symbols} & printer.one_by_one
            if traced:  # a 1×1 matrix read as a scalar: where it may be printed, so may this name
                printer.one_by_one.add(name)
            lines.append(f"{name} = {printer._coefficient(value) if traced else printer.doprint(value)}")
        elif isinstance(value, Inverse) and name not in exprs:  # a repeated inverse: its matrix once, solves
            shared[name] = Inverse(MatrixSymbol(name, *value.shape))
            lines.append(f"{name} = {printer.doprint(value.arg)}")
        else:
            if name not in exprs:
                shared[name] = MatrixSymbol(name, *value.shape)
            lines.append(f"{name} = {printer.doprint(value)}")
    return lines


def _share_suffixes(exprs: dict[str, Basic], vector=lambda factor: False, work: _Work | None = None) \
        -> dict[str, Basic]:
    """Products fold right to left, so what two products share is a common tail of factors (G⁻¹XᵀY in
    G⁻¹XᵀY + G⁻¹Xᵀ(Y − XG⁻¹XᵀY)): each tail of two or more factors that occurs twice becomes an assignment,
    the longest first, computed once; ``cse`` finds the rest (whole repeated terms).  A tail of factors all
    held as vectors (``vector``) is not a matrix and stays where it is.

    Tails are counted and cut in the same nodes (:func:`_nodes`, :func:`_rebuild`: a product's coefficient
    too, the 1×1 matrix of a ``Trace`` in it included, issue 41), so every occurrence counted is cut and each
    round lowers Σ (factors − 1) over the products by at least 1: the loop ends within that many rounds.  A
    round that does not (a tail counted where it cannot be cut) is a :class:`CodegenError`, not a loop."""
    work = work if work is not None else _Work()
    taken = _symbol_names(exprs)
    fresh = (f"u{i}" for i in itertools.count() if f"u{i}" not in taken)
    shared: dict[str, Basic] = {}
    before, tail = None, ()
    while True:
        counts: dict[tuple, int] = {}
        potential = 0
        for e in (*shared.values(), *exprs.values()):
            for node in _nodes(e, work):
                if isinstance(node, MatMul):
                    _, factors = factors_of(node)
                    potential += max(len(factors) - 1, 0)
                    work.charge(len(factors) * (len(factors) + 1) // 2)  # the tails hashed
                    for i in range(len(factors) - 1):
                        counts[tuple(factors[i:])] = counts.get(tuple(factors[i:]), 0) + 1
        if before is not None and potential >= before:
            raise CodegenError(f"sharing the tails of products made no progress at {_shown(tail)} "
                               "(a tail counted where it cannot be cut)")
        before = potential
        repeated = [tail for tail, count in counts.items() if count >= 2 and not all(map(vector, tail))]
        if not repeated:
            break
        longest = max(map(len, repeated))
        tail = max((t for t in repeated if len(t) == longest), key=str)
        symbol = MatrixSymbol(next(fresh), tail[0].shape[0], tail[-1].shape[1])

        def cut(term, tail=tail, symbol=symbol):
            if isinstance(term, MatMul):
                coeff, factors = factors_of(term)
                if tuple(factors[-len(tail):]) == tail and len(factors) >= len(tail):
                    coeff, rest = cut(coeff), [cut(f) for f in factors[:-len(tail)]]
                    return MatMul(coeff, *rest, symbol, evaluate=False) if rest or coeff != 1 else symbol
            return _rebuild(term, cut, work)

        shared = {name: cut(e) for name, e in shared.items()}
        shared[str(symbol.name)] = MatMul(*tail, evaluate=False)
        exprs = {name: cut(e) for name, e in exprs.items()}
    ordered: dict[str, Basic] = {}

    def emit(name):
        if name in ordered:
            return
        for atom in sorted(shared[name].atoms(MatrixSymbol), key=str):
            if str(atom.name) in shared:
                emit(str(atom.name))
        ordered[name] = shared[name]

    for name in shared:
        emit(name)
    return {**ordered, **exprs}


def _argument_dims(exprs: dict[str, Basic], printer) -> dict:
    """Each dimension symbol of the matrices the expressions read (not those they define) -> its value, read off
    the first such matrix's shape, in the order of the route's names."""
    order = {name: i for i, name in enumerate(printer.route.names)}
    matrices = sorted({m for e in exprs.values() for m in e.atoms(MatrixSymbol)
                       if str(m.name) not in exprs and str(m.name) not in printer.route.diagonal},
                      key=lambda m: (order.get(str(m.name), len(order)), str(m.name)))
    dims: dict = {}
    for m in matrices:
        var = printer.route.names.get(str(m.name), str(m.name))
        for size, read in ((m.shape[0], printer._rows), (m.shape[1], printer._cols)):
            if isinstance(size, Symbol) and size not in dims:
                dims[size] = read(var)
    return dims


def _symbol_names(exprs: dict[str, Basic]) -> set[str]:
    """The names the terms use: what they define, and every matrix and scalar symbol they read."""
    return set(exprs) | {str(a.name) for e in exprs.values() for a in e.atoms(MatrixSymbol, Symbol)}


def _cse_names(taken: set[str] = frozenset()):
    """``t0``, ``t1``, ...: the names of what ``cse`` shares, none of them a name the terms or the module use."""
    for index in itertools.count():
        if f"t{index}" not in taken:
            yield MatrixSymbol(f"t{index}", 1, 1)  # shapes are fixed by cse's substitution




# --- assembling a module -------------------------------------------------------------------


def _check_inputs(theorems: dict[str, Theorem], required: Sequence[str]) -> None:
    for theorem_id in required:
        theorem = theorems.get(theorem_id)
        if not is_issued(theorem) or theorem.id != theorem_id:
            raise CodegenError(f"code is generated from checked theorems only; {theorem_id} is missing")


def _split_docstring(source: str, path: str) -> tuple[list[str], str]:
    """A module's docstring (its lines as written, quotes removed) and the source after it."""
    tree = ast.parse(source)
    first = tree.body[0] if tree.body else None
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        raise CodegenError(f"{path} has no module docstring")
    lines = source.splitlines()
    text = "\n".join(lines[first.lineno - 1:first.end_lineno])
    if not (text.startswith('"""') and text.endswith('"""')):
        raise CodegenError(f"{path}: the module docstring must be written in triple double quotes")
    return text[3:-3].strip("\n").splitlines(), "\n".join(lines[first.end_lineno:]).lstrip("\n")


def _top_level_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def _unbound_names(function: str, known: set[str]) -> list[str]:
    """Names a printed function reads that are neither its parameters, its locals nor ``known`` globals."""
    node = ast.parse(function).body[0]
    bound = {a.arg for a in node.args.args} | {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    read = [n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    return sorted({n for n in read if n not in bound and n not in known and not hasattr(builtins, n)})


def _check_calls(tree: ast.Module, parameters: dict[str, tuple[str, ...]], path: str) -> None:
    """Every ``_printed("name")(args)`` in the numerics passes exactly the declared parameters, by name."""
    seen = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Call) and isinstance(node.func.func, ast.Name) \
                and node.func.func.id == "_printed":
            name = ast.literal_eval(node.func.args[0])
            passed = tuple(a.id if isinstance(a, ast.Name) else ast.unparse(a) for a in node.args)
            if name not in parameters or passed != tuple(parameters[name]) or node.keywords:
                raise CodegenError(f"{path}:{node.lineno} calls printed function {name!r} with ({', '.join(passed)}), "
                                   f"not with its PRINTED_PARAMETERS {parameters.get(name)}")
            seen.add(name)
    unused = [name for name in parameters if name not in seen]
    if unused:
        raise CodegenError(f"{path} declares printed functions it never calls: {', '.join(unused)}")


def _printed_function(theorem: Theorem, declared: Printed, parameters: tuple[str, ...], printer_class,
                      helpers: set[str]) -> str:
    """The printed function's source: ``def _name(parameters): ...; return result``."""
    assignments = printed_assignments(theorem, declared)
    printer = printer_class(declared)
    lines = print_assignments(assignments, printer)
    helpers |= printer.helpers
    last = list(assignments)[-1]
    where = f"{declared.theorem}, {declared.source}"
    summary = f"{'β̂' if _coefficients(theorem, declared) else last} = {assignments[last]}: {where}."
    if len(summary) > 110:
        summary = f"Printed from {where}."
    body = [f"def {declared.function}({', '.join(parameters)}):", f'    """{summary}"""',
            *(_wrap("    " + line) for line in lines), f"    return {last}"]
    return "\n".join(body)


def _coefficients(theorem: Theorem, declared: Printed) -> bool:
    """A route of a lemma X_q · A = X_q · E: its function returns the coefficients β̂ = E."""
    return isinstance(declared, Route) and _has_query(_lemma(theorem, declared.lemma))


def _public_function(theorem: Theorem, declared: Printed, printer_class, known: set[str], backend: str,
                     helpers: set[str], reserved: frozenset[str] = frozenset(), module: str = "the generated module") \
        -> str:
    """A route or term the numerics do not call (a user's theorem declares it), printed as a public function
    ``<name>(<arguments>)``: its parameters are the matrices and scalars its printed side reads, those the
    declaration names first, in the order of its names, then the other matrices by name, then the other scalars
    by name (each named after its symbol: :meth:`_FoldingMixin.python_name`, no name of ``reserved``); a
    dimension it reads as a coefficient (1/n) is the size of an argument.  Raises :class:`CodegenError` saying
    why it cannot be printed."""
    kind = "route" if isinstance(declared, Route) else "term"
    if not declared.name.isidentifier() or declared.name.startswith("_") or declared.name in known \
            or keyword.iskeyword(declared.name):
        raise CodegenError(f"{kind} {declared.name} ({declared.theorem}) cannot be a public function of {module}: "
                           "its name must be a public identifier that the module does not already use")
    assignments = printed_assignments(theorem, declared)
    printer = printer_class(declared)
    printer.reserved = frozenset(reserved)
    lines = print_assignments(assignments, printer)
    result = list(assignments)[-1]
    needed = _unbound_names("\n".join(["def _probe():", *("    " + line for line in lines), f"    return {result}"]),
                            known - printer.helpers)
    needed = [name for name in needed if name not in printer.helpers]
    raw = {printer.python_name(name): name for name in sorted(printer.taken - set(assignments))}
    symbols = {**raw, **{v: k for k, v in declared.names.items()}}
    matrices = {printer.python_name(str(m.name)) for e in assignments.values() for m in e.atoms(MatrixSymbol)}
    # a scalar (derive.scalar), or an index (derive.index: the t of γ^t) that no argument has as a size; a dimension
    # (derive.dim) is a size, read off an argument's shape, never an argument of its own
    scalars = {printer.python_name(str(s.name)) for e in assignments.values() for s in e.atoms(Symbol)
               if not (s.is_integer and (s.is_positive or s in printer.dims))} - matrices
    order = [*declared.names.values(), "XtY"]
    parameters = [name for name in order if name in needed] + sorted(
        (n for n in needed if n not in order), key=lambda n: (n in scalars, n))
    clash = sorted(set(parameters) & known)
    if clash:
        raise CodegenError(f"{kind} {declared.name} ({declared.theorem}) would read {', '.join(clash)} as an argument, "
                           "a name the module already uses: rename it in the declaration's names")
    expr = assignments[result]
    strange = sorted(set(parameters) - matrices - scalars - {"XtY"})
    if strange:
        raise CodegenError(f"{kind} {declared.name} ({declared.theorem}): its printed code reads {', '.join(strange)}, "
                           "which is neither a matrix nor a scalar of the theorem")
    helpers |= printer.helpers
    if backend in ("numpy", "dask"):
        convert = [f"    {name} = np.asarray({name}, dtype=float)" for name in parameters]
    elif backend == "mpmath":
        convert = [f"    {name} = _{'scalar' if name in scalars else 'matrix'}_argument({name!r}, {name})"
                   for name in parameters]
    else:
        convert = []
    described = ", ".join(f"{name} ({symbols.get(name, 'XᵀY' if name == 'XtY' else name)})" for name in parameters)
    returned = {"mpmath": "mpmath matrix", "xp": "array"}.get(backend, "numpy.ndarray")
    given = {"mpmath": "mpmath matrix, or list of rows or of numbers",
             "xp": "array (any array-API namespace)"}.get(backend, "array_like")
    value = "β̂" if _coefficients(theorem, declared) else result
    what = f"{kind} {declared.name}"
    shown = " ".join(str(expr).split())
    summary = f'    """{value} = {shown}, printed from {declared.theorem}, {declared.source} ({what}).'
    if len(summary) > 116:
        summary = f'    """{value} printed from {declared.theorem}, {declared.source} ({what}).'
    said = (f"The {'matrices and scalars' if scalars & set(parameters) else 'matrices'} of the lemma: {described}; "
            f"the {kind} assumes what the theorem's hypotheses say of them (they are not checked here).")
    meaning = "The coefficients β̂." if value == "β̂" else f"The value of {result}."
    docstring = [summary, "", *textwrap.wrap(f"{value} = {shown}.", 112, initial_indent="    ",
                                             subsequent_indent="        ", break_long_words=False), "",
                 "    Parameters", "    ----------", f"    {', '.join(parameters)} : {given}",
                 *textwrap.wrap(said, 112, initial_indent="        ", subsequent_indent="        "), "",
                 "    Returns", "    -------", f"    {returned}",
                 *textwrap.wrap(meaning, 112, initial_indent="        ", subsequent_indent="        "), '    """']
    return "\n".join([f"def {declared.name}({', '.join(parameters)}):", *docstring, *convert,
                      *(_wrap("    " + line) for line in lines), f"    return {result}"])


def _wrap(line: str, width: int = 116) -> str:
    """An assignment ``name = code`` longer than ``width``, broken between tokens inside parentheses."""
    if len(line) <= width:
        return line
    indent = line[: len(line) - len(line.lstrip())]
    name, code = line.strip().split(" = ", 1)
    code = code if _bare(code) != code else f"({code})"  # parenthesized whole already: no second pair
    return "\n".join(textwrap.wrap(f"{name} = {code}", width, initial_indent=indent,
                                   subsequent_indent=indent + "    ", break_long_words=False,
                                   break_on_hyphens=False))


@dataclasses.dataclass(frozen=True)
class Unprinted:
    """A route or term a checked theorem declares that a generated module leaves out, and why."""

    theorem: str
    name: str
    kind: str  # "route" or "term"
    reason: str

    def line(self, backends: Sequence[str] = ()) -> str:
        """One line naming it: ``not printed: theorem <id>, route <name>: <reason>``."""
        where = f" ({', '.join(backends)})" if backends else ""
        return f"not printed{where}: theorem {self.theorem}, {self.kind} {self.name}: {self.reason}"


#: Backend -> the helpers the printed section defines when a printed function calls them (name -> source).
_HELPERS = {
    "numpy": {"_printed_block": '''def _printed_block(rows):
    """A block matrix from rows of blocks: arrays (their leading, batch, dimensions broadcast), ("I", n, c) for
    c times the n×n identity, ("0", r, c) for an r×c block of zeros."""
    arrays = [b for row in rows for b in row if not isinstance(b, tuple)]
    batch = np.broadcast_shapes(*(np.shape(b)[:-2] for b in arrays))
    dtype = np.result_type(*arrays)

    def full(b):
        if isinstance(b, tuple):
            kind, r, c = b
            b = c * np.eye(r, dtype=dtype) if kind == "I" else np.zeros((r, c), dtype=dtype)
        return np.broadcast_to(b, batch + np.shape(b)[-2:])

    return np.concatenate([np.concatenate([full(b) for b in row], axis=-1) for row in rows], axis=-2)''',
              "_printed_kron": '''def _printed_kron(A, B):
    """A ⊗ B, the Kronecker product: block (i, j) is A[..., i, j]·B, for every pair of matrices of two stacks (their
    leading, batch, dimensions broadcast); np.kron where both are single matrices (on stacks it would multiply
    out the stack axes too).  Either factor may be ("I", n, c), c times the n×n identity."""
    if isinstance(A, tuple):
        A = A[2] * np.eye(A[1], dtype=B.dtype)
    if isinstance(B, tuple):
        B = B[2] * np.eye(B[1], dtype=A.dtype)
    if A.ndim == 2 and B.ndim == 2:
        return np.kron(A, B)
    (m, n), (p, q) = A.shape[-2:], B.shape[-2:]
    out = A[..., :, None, :, None] * B[..., None, :, None, :]
    return out.reshape(out.shape[:-4] + (m * p, n * q))'''},
    "xp": {"_printed_block": '''def _printed_block(rows):
    """A block matrix from rows of blocks: arrays (their leading, batch, dimensions broadcast), ("I", n, c) for
    c times the n×n identity, ("0", r, c) for an r×c block of zeros; in the arrays' namespace, dtype and device."""
    arrays = [b for row in rows for b in row if not isinstance(b, tuple)]
    xp = array_namespace(*arrays)
    dtype, where = xp.result_type(*arrays), device(arrays[0])
    batch = ()
    for b in arrays:
        shape = tuple(b.shape[:-2])
        width = max(len(batch), len(shape))
        batch, shape = (1,) * (width - len(batch)) + batch, (1,) * (width - len(shape)) + shape
        batch = tuple(x if y == 1 else y for x, y in zip(batch, shape, strict=True))

    def full(b):
        if isinstance(b, tuple):
            kind, r, c = b
            b = c * xp.eye(r, dtype=dtype, device=where) if kind == "I" else xp.zeros((r, c), dtype=dtype, device=where)
        return xp.broadcast_to(b, batch + tuple(b.shape[-2:]))

    return xp.concat([xp.concat([full(b) for b in row], axis=-1) for row in rows], axis=-2)''',
           "_printed_inverse": '''def _printed_inverse(A):
    """A⁻¹ itself, where a printed term applies it to nothing (elsewhere an inverse is a solve)."""
    return array_namespace(A).linalg.inv(A)''',
           "_printed_tril": '''def _printed_tril(A, k=0):
    """The causal mask tril(A, k) in A's namespace: the entries above the k-th diagonal set to zero (k = 0 keeps
    the diagonal, k = -1 does not), for every matrix of a stack."""
    return array_namespace(A).tril(A, k=k)''',
           "_printed_kron": '''def _printed_kron(A, B):
    """A ⊗ B, the Kronecker product, in the arrays' namespace (the standard has no kron): block (i, j) is
    A[..., i, j]·B, for every pair of matrices of two stacks (their leading, batch, dimensions broadcast).  Either
    factor may be ("I", n, c), c times the n×n identity (in the other's namespace, dtype and device)."""
    array = B if isinstance(A, tuple) else A
    xp = array_namespace(array)
    if isinstance(A, tuple):
        A = A[2] * xp.eye(A[1], dtype=array.dtype, device=device(array))
    if isinstance(B, tuple):
        B = B[2] * xp.eye(B[1], dtype=array.dtype, device=device(array))
    (m, n), (p, q) = A.shape[-2:], B.shape[-2:]
    out = xp.reshape(A, (*A.shape[:-2], m, 1, n, 1)) * xp.reshape(B, (*B.shape[:-2], 1, p, 1, q))
    return xp.reshape(out, (*out.shape[:-4], m * p, n * q))'''},
    "mpmath": {"_printed_block": '''def _printed_block(rows):
    """A block matrix from rows of blocks: mpmath matrices, ("I", n, c) for c times the n×n identity, ("0", r, c)
    for an r×c block of zeros."""
    def full(b):
        if isinstance(b, tuple):
            kind, r, c = b
            return mpmath.eye(r) * c if kind == "I" else mpmath.zeros(r, c)
        return b

    grid = [[full(b) for b in row] for row in rows]
    out = mpmath.zeros(sum(row[0].rows for row in grid), sum(b.cols for b in grid[0]))
    top = 0
    for row in grid:
        left = 0
        for b in row:
            for i in range(b.rows):
                for j in range(b.cols):
                    out[top + i, left + j] = b[i, j]
            left += b.cols
        top += row[0].rows
    return out''',
               "_printed_tril": '''def _printed_tril(A, k=0):
    """The causal mask tril(A, k): a copy of A with the entries above the k-th diagonal set to zero (k = 0 keeps
    the diagonal, k = -1 does not)."""
    out = A.copy()
    for i in range(out.rows):
        for j in range(max(i + k + 1, 0), out.cols):
            out[i, j] = 0
    return out''',
               "_printed_kron": '''def _printed_kron(A, B):
    """A ⊗ B, the Kronecker product: block (i, j) is A[i, j]·B; either factor may be ("I", n, c), c times the n×n
    identity."""
    A, B = (mpmath.eye(X[1]) * X[2] if isinstance(X, tuple) else X for X in (A, B))
    out = mpmath.zeros(A.rows * B.rows, A.cols * B.cols)
    for i in range(A.rows):
        for j in range(A.cols):
            for r in range(B.rows):
                for c in range(B.cols):
                    out[i * B.rows + r, j * B.cols + c] = A[i, j] * B[r, c]
    return out'''},
}
_HELPERS["dask"] = dict(_HELPERS["numpy"])
_HELPERS["numpy"].update({
    "_printed_factor": '''def _printed_factor(A):
    """A square matrix factored once, for the several solves of a repeated inverse: (A, LU factors), the LU
    factors by SciPy where it is installed and A is a single matrix, else None (each solve then factors A)."""
    A = np.asarray(A)
    if A.ndim != 2:
        return A, None
    try:
        from scipy.linalg import lu_factor
    except ImportError:  # SciPy is optional: numpy's solve factors A each time
        return A, None
    return A, lu_factor(A, check_finite=False)''',
    "_printed_factor_solve": '''def _printed_factor_solve(F, B, transpose):
    """op(A)⁻¹ B with the factorization F = (A, LU) of ``_printed_factor`` (op(A) = Aᵀ if transpose)."""
    A, lu = F
    B = np.asarray(B)
    if lu is not None and B.ndim <= 2:
        from scipy.linalg import lu_solve

        return lu_solve(lu, B, trans=1 if transpose else 0, check_finite=False)
    return np.linalg.solve(np.swapaxes(A, -1, -2) if transpose else A, B)''',
})


def _header(title: str, backend: str, printed: list[Printed], theorems: dict[str, Theorem],
            required: Sequence[str], numerics: ModuleType, docstring: list[str],
            public: Sequence[Printed] = (), left_out: Sequence[Unprinted] = ()) -> str:
    module, _ = NUMERICS[backend]
    width = max(len(d.function) for d in printed) + 2
    lines = [f'"""{title}', "",
             "Generated by `derive codegen`; do not edit.  These functions are printed from kernel-checked lemmas",
             "(function: theorem, where in it):", ""]
    lines += [f"    {d.function:{width}}{d.theorem}, {d.source}" for d in printed]
    if public:
        lines += ["", "Public functions printed from the routes and terms that checked theorems declare and these",
                  "numerics do not call (function: theorem, where in it):", ""]
        lines += [f"    {d.name:{width}}{d.theorem}, {d.source}" for d in public]
    unused = [d for name, d in registered_printed().items() if d not in printed and d not in public
              and name not in {u.name for u in left_out} and library_of(d) is None]
    if left_out:
        lines += ["", "Declared by theorems but not printed (theorem, route or term: why):", ""]
        for u in left_out:
            lines += textwrap.wrap(f"{u.theorem}, {u.kind} {u.name}: {u.reason}", 110, initial_indent="    ",
                                   subsequent_indent="        ")
    if unused:
        lines += ["", *textwrap.wrap("Declared by checked theorems but not called by these numerics, so not "
                                     "printed: " + ", ".join(f"{d.name} ({d.theorem})" for d in unused) + ".", 110)]
    lines += ["", f"Everything else is fixed numerics, the source of the package module {module}", "(below), which "
              "relies on these checked theorems:", ""]
    lines += [f"    {theorem_id}: {why}" for theorem_id, why in numerics.RELIES_ON.items()]
    lines += ["", "Certificates of the theorems (id, sha256):", ""]
    lines += [f"    {theorem_id:24} {theorems[theorem_id].digest}" for theorem_id in required]
    body = docstring[1:]  # the numerics' own summary line names the package module's role, not this file's
    while body and not body[0].strip():
        body = body[1:]
    return "\n".join([*lines, "", *body, '"""'])


def generate_module(theorems: dict[str, Theorem], backend: str, unprinted: list[Unprinted] | None = None) -> str:
    """The standalone module of ``backend`` (a key of :data:`NUMERICS`): header, fixed numerics, printed
    functions.  Deterministic; it imports only the backend and the standard library.

    Every route and term the numerics do not call is printed as a public function where it can be; each one
    that cannot (its proof not checked, a term the printers refuse, a name the module uses) is left out, named
    in the header with its reason, and appended to ``unprinted`` when given.  What the numerics call must
    print: a failure there raises :class:`CodegenError`."""
    module, title = NUMERICS[backend]
    numerics = _numerics(backend)
    required = required_theorems([backend])
    _check_inputs(theorems, required)
    declared = registered_printed()
    missing = [name for name in numerics.PRINTED_PARAMETERS if name not in declared]
    if missing:
        raise CodegenError(f"{module} calls printed functions no registered theorem declares: {', '.join(missing)}")
    filename = module.rsplit(".", 1)[1] + ".py"
    source = resources.files(module.rsplit(".", 1)[0]).joinpath(filename).read_text(encoding="utf-8")
    docstring, code = _split_docstring(source, filename)
    tree = ast.parse(source)
    known = _top_level_names(tree)
    _check_calls(tree, numerics.PRINTED_PARAMETERS, filename)
    printer_class = _PRINTERS[backend]
    printed = [declared[name] for name in numerics.PRINTED_PARAMETERS]
    functions, helpers = [], set()
    for item in printed:
        parameters = tuple(numerics.PRINTED_PARAMETERS[item.name])
        function = _printed_function(theorems[item.theorem], item, parameters, printer_class, helpers)
        unbound = _unbound_names(function, known | helpers)
        if unbound:
            raise CodegenError(f"printed function {item.name} ({item.theorem}, {item.source}) needs "
                               f"{', '.join(unbound)}, which {module} does not pass it")
        functions.append(function)
    registry = ["PRINTED.update({", *(f'    "{d.name}": {d.function},' for d in printed), "})"]
    # not public: what this backend's numerics call; the xp and Dask modules, which call fewer, leave out too
    # what any backend calls (their public functions are the fixed ones); the NumPy and mpmath modules print
    # the rest of the routes (ridge_spectral and ridge_dual are public in mpmath, called by the NumPy numerics).
    # A term is public where no backend calls it (a user's theorem declares it).
    every = {name for other in NUMERICS for name in _called(other)}
    called = set(numerics.PRINTED_PARAMETERS) if backend in ("numpy", "mpmath") else every
    own = [d for name, d in declared.items() if name not in (called if isinstance(d, Route) else every)
           and library_of(d) is None]  # a user library's are printed in its own module (library_module)
    public, public_functions, left_out = _public_functions(own, theorems, printer_class, known, backend, helpers)
    if unprinted is not None:
        unprinted.extend(left_out)
    used = [_HELPERS[backend][name] for name in sorted(helpers)]
    section = ["# --- printed from checked lemmas by `derive codegen` (see the header) " + "-" * 20, "", "",
               "\n\n\n".join([*used, *functions]), "", "", *registry]
    if public:
        section += ["", "", "# --- routes and terms of checked theorems, as public functions " + "-" * 35, "", "",
                    "\n\n\n".join(public_functions), "", "",
                    *textwrap.wrap(f"__all__ += [{', '.join(repr(d.name) for d in public)}]", 116,
                                   subsequent_indent="    ", break_long_words=False)]
    if backend == "xp":  # its CPU engine: the NumPy module of the same theorems, written beside it
        digest = hashlib.sha256(numpy_module(theorems).encode("utf-8")).hexdigest()
        section += ["", "", "# --- the NumPy module generated with this one (route 'auto' on the CPU) " + "-" * 26,
                    "", f'HOST_MODULE_SHA256 = "{digest}"']
    header = _header(title, backend, printed, theorems, required, numerics, docstring, public, left_out)
    return "\n".join([header, "", code.rstrip("\n"), "", "", *section]) + "\n"


def _public_functions(declarations: Sequence[Printed], theorems: dict[str, Theorem], printer_class,
                      known: set[str], backend: str, helpers: set[str], reserved: frozenset[str] = frozenset(),
                      module: str = "the generated module") -> tuple[list[Printed], list[str], list[Unprinted]]:
    """Each declaration printed as a public function where it can be (:func:`_public_function`), in order: those
    printed, their sources, and those left out with the reason (a name taken by an earlier one included)."""
    public, functions, left_out = [], [], []
    for d in declarations:
        kind = "route" if isinstance(d, Route) else "term"
        if not is_issued(theorems.get(d.theorem)):
            left_out.append(Unprinted(d.theorem, d.name, kind, "its theorem's proof was not checked"))
            continue
        earlier = next((e for e in public if e.name == d.name), None)
        if earlier is not None:
            left_out.append(Unprinted(d.theorem, d.name, kind, f"{earlier.theorem} declares a {kind} of the same name"
                                      f" in {module}, printed there: rename one"))
            continue
        try:
            function = _public_function(theorems[d.theorem], d, printer_class, known | {p.name for p in public},
                                        backend, helpers, reserved, module)
        except CodegenError as exc:
            left_out.append(Unprinted(d.theorem, d.name, kind, str(exc)))
            continue
        except Exception as exc:  # SymPy's printers and cse on a term they do not take, or a slip of ours: named
            first = (str(exc).splitlines() or [""])[0]
            reason = f"the printer failed on it ({type(exc).__name__}: {first[:200]})"
            left_out.append(Unprinted(d.theorem, d.name, kind, reason))
            continue
        public.append(d)
        functions.append(function)
    return public, functions, left_out


def numpy_module(theorems: dict[str, Theorem], unprinted: list[Unprinted] | None = None) -> str:
    """The NumPy module's text (deterministic); what it leaves out is appended to ``unprinted``."""
    return generate_module(theorems, "numpy", unprinted)


def mpmath_module(theorems: dict[str, Theorem], unprinted: list[Unprinted] | None = None) -> str:
    """The mpmath module's text (deterministic); what it leaves out is appended to ``unprinted``."""
    return generate_module(theorems, "mpmath", unprinted)


def xp_module(theorems: dict[str, Theorem], unprinted: list[Unprinted] | None = None) -> str:
    """The array-API module's text (deterministic); what it leaves out is appended to ``unprinted``."""
    return generate_module(theorems, "xp", unprinted)


def dask_module(theorems: dict[str, Theorem], unprinted: list[Unprinted] | None = None) -> str:
    """The Dask module's text (deterministic); what it leaves out is appended to ``unprinted``."""
    return generate_module(theorems, "dask", unprinted)


# --- a user library's own modules ------------------------------------------------------------

#: The helpers of the fixed numerics that printed code may call (the printers' ``_solve``, ``_plus_identity``, ...,
#: and the mpmath module's readers of arguments); a user library's module copies those its functions call.
_PRINTER_CALLS = ("_plus_identity", "_solve_triangular", "_general_solve", "_lu_solve", "_scale_rows",
                  "_scale_columns", "_vector_power", "_vector_add", "_vector_scale", "_vector_shift",
                  "_matrix_argument", "_scalar_argument")

#: Backend -> how a user library's module names it in its title.
_LIBRARY_TITLES = {"numpy": "NumPy", "mpmath": "mpmath", "xp": "array API (NumPy, PyTorch, JAX, CuPy)",
                   "dask": "Dask (NumPy-printed)"}


@dataclasses.dataclass(frozen=True)
class _Statement:
    """A top-level statement of a numerics module: its source, the names it binds and the names it reads."""

    index: int
    node: ast.stmt
    text: str
    binds: frozenset[str]
    reads: frozenset[str]


def _statements(source: str) -> list[_Statement]:
    """The top-level statements of a numerics module's source that bind names (imports, definitions,
    assignments), each with what it binds and what it reads from the module (a function's own locals left out)."""
    lines = source.splitlines()
    out = []
    for index, node in enumerate(ast.parse(source).body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            binds = {(a.asname or a.name).split(".")[0] for a in node.names}
        else:
            binds = set()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                binds.add(node.name)
            else:
                binds |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
                binds |= {n.name for n in ast.walk(node)
                          if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
            if not binds:
                continue
        local = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        local |= {a.arg for n in ast.walk(node) if isinstance(n, ast.arguments)
                  for a in (*n.posonlyargs, *n.args, *n.kwonlyargs, n.vararg, n.kwarg) if a is not None}
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            local = set()  # a module-level assignment reads the module's names
        reads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - local
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        out.append(_Statement(index, node, "\n".join(lines[first - 1:node.end_lineno]), frozenset(binds),
                              frozenset(reads)))
    return out


def _closure(statements: list[_Statement], names: set[str]) -> tuple[list[_Statement], set[str]]:
    """The statements that bind ``names`` and, in turn, what they read (in source order), and every name needed."""
    by_name: dict[str, list[_Statement]] = {}
    for statement in statements:
        for name in statement.binds:
            by_name.setdefault(name, []).append(statement)
    needed, todo, chosen = set(), list(names), {}
    while todo:
        name = todo.pop()
        if name in needed:
            continue
        needed.add(name)
        for statement in by_name.get(name, ()):
            if statement.index not in chosen:
                chosen[statement.index] = statement
                if not isinstance(statement.node, (ast.Import, ast.ImportFrom)):
                    todo.extend(statement.reads)
    return [chosen[i] for i in sorted(chosen)], needed


def _copied(statements: list[_Statement], needed: set[str], source: str) -> tuple[list[str], list[str]]:
    """The import lines (only the names needed, in the source's order and groups: a blank line where the source
    had one between them) and the other statements' sources, in order."""
    lines = source.splitlines()
    imports, code, last = [], [], None
    for statement in statements:
        node = statement.node
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            code.append(statement.text)
            continue
        kept = [a for a in node.names if (a.asname or a.name).split(".")[0] in needed]
        if isinstance(node, ast.ImportFrom) and node.module == "__future__" or not kept:
            continue
        text = ast.unparse(type(node)(**{**{f: getattr(node, f) for f in node._fields}, "names": kept}))
        if last is not None and any(not line.strip() for line in lines[last:node.lineno - 1]):
            imports.append("")
        imports.append(text)
        last = node.end_lineno
    return imports, code


def _free_names(function: str) -> set[str]:
    """The names a function's source reads from its module: neither bound in it (its parameters, assignments,
    imports and nested definitions, at any depth) nor builtins."""
    node = ast.parse(function).body[0]
    bound = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    bound |= {a.arg for n in ast.walk(node) if isinstance(n, ast.arguments)
              for a in (*n.posonlyargs, *n.args, *n.kwonlyargs, n.vararg, n.kwarg) if a is not None}
    bound |= {(a.asname or a.name).split(".")[0] for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))
              for a in n.names}
    bound |= {n.name for n in ast.walk(node) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    read = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return {n for n in read - bound if not hasattr(builtins, n)}


@functools.cache
def _library_context(backend: str) -> tuple[str, list[_Statement], frozenset[str]]:
    """A backend's numerics source, its statements and the names a user library's module of it may hold (the
    numerics' imports, the helpers printed code may call and what they read, the printed section's helpers)."""
    module = NUMERICS[backend][0]
    source = resources.files(module.rsplit(".", 1)[0]).joinpath(module.rsplit(".", 1)[1] + ".py").read_text(
        encoding="utf-8")
    statements = _statements(source)
    imported = {name for s in statements if isinstance(s.node, (ast.Import, ast.ImportFrom)) for name in s.binds}
    _, reachable = _closure(statements, set(_PRINTER_CALLS))
    defined = {name for s in statements for name in s.binds}
    return source, statements, frozenset((imported | (reachable & defined) | set(_HELPERS.get(backend, {})))
                                         - {"annotations"})


def library_display(library: str) -> str:
    """How a user library is named in its modules: its file's name (``my_theorems.py``) or its dotted name."""
    match = _USER_FILE.match(library)
    return f"{match['stem']}.py" if match else library


def library_module(theorems: dict[str, Theorem], backend: str, library: str,
                   unprinted: list[Unprinted] | None = None) -> str:
    """The module of a user library (a registry module, :func:`user_libraries`) for ``backend``: every route and
    term its theorems declare, printed as public functions where they can be, each one that cannot named in the
    header with its reason (and appended to ``unprinted``), and the helpers they call, copied from the backend's
    fixed numerics.  Standalone (it imports only the backend and the standard library, never this package, nor
    the package's generated module) and deterministic (its text depends on the library's name, not on its folder).
    """
    if backend not in NUMERICS:
        raise CodegenError(f"no backend {backend!r} (known: {', '.join(NUMERICS)})")
    declarations = [d for d in declared_printed() if library_of(d) == library]
    if not declarations:
        raise CodegenError(f"library {library_display(library)} declares no route or term")
    source, statements, known = _library_context(backend)
    # the names of every backend's module are kept from the functions and their arguments, so that a function has
    # the same name and the same parameters in each (λ named lambda_ everywhere, a scalar np named np_ everywhere)
    everywhere = frozenset().union(*(_library_context(other)[2] for other in NUMERICS))
    display = library_display(library)
    helpers: set[str] = set()
    public, functions, left_out = _public_functions(declarations, theorems, _PRINTERS[backend], set(everywhere),
                                                    backend, helpers, everywhere, f"the module of {display}")
    if unprinted is not None:
        unprinted.extend(left_out)
    printed_helpers = [_HELPERS[backend][name] for name in sorted(helpers)]
    reads = {name for text in (*printed_helpers, *functions) for name in _free_names(text)}
    chosen, needed = _closure(statements, reads & known)
    imports, copied = _copied(chosen, needed, source)
    bound = {name for s in chosen for name in s.binds} | set(helpers) | {d.name for d in public}
    missing = sorted(reads - bound)
    if missing:  # the printers called something the numerics do not define: the package's slip, said plainly
        raise CodegenError(f"the module of {display} would read {', '.join(missing)}, which {NUMERICS[backend][0]} "
                           "does not define")
    numerics = NUMERICS[backend][0]
    width = max([len(d.name) for d in public] + [8]) + 2
    lines = [f'"""{display}: functions printed from its checked theorems, {_LIBRARY_TITLES[backend]}.', "",
             "Generated by `derive codegen`; do not edit.  Each function is printed from a kernel-checked lemma or",
             f"definition of a theorem of {display} (function: theorem, where in it):", ""]
    lines += [f"    {d.name:{width}}{d.theorem}, {d.source}" for d in public] or ["    (none)"]
    if left_out:
        lines += ["", "Declared by its theorems but not printed (theorem, route or term: why):", ""]
        for u in left_out:
            lines += textwrap.wrap(f"{u.theorem}, {u.kind} {u.name}: {u.reason}", 110, initial_indent="    ",
                                   subsequent_indent="        ")
    lines += ["", *textwrap.wrap(
        "A function assumes what its theorem's hypotheses say of its arguments; nothing here checks them.  The "
        "module imports only its backend and the standard library; the helpers its functions call are copied from "
        f"the package module {numerics}.", 110)]
    digests = list(dict.fromkeys(d.theorem for d in public))
    if digests:
        lines += ["", "Certificates of the theorems (id, sha256):", ""]
        lines += [f"    {theorem_id:24} {theorems[theorem_id].digest}" for theorem_id in digests]
    lines.append('"""')
    future = any(isinstance(s.node, ast.ImportFrom) and s.node.module == "__future__" for s in statements)
    parts = ["\n".join(lines), ""]
    if future:
        parts += ["from __future__ import annotations", ""]
    if imports:
        parts += [*imports, ""]
    parts += textwrap.wrap(f"__all__ = [{', '.join(repr(d.name) for d in public)}]", 116, subsequent_indent="    ",
                           break_long_words=False)
    body = [*copied, *printed_helpers, *functions]
    if body:
        parts += ["", "", "\n\n\n".join(body)]
    return "\n".join(parts) + "\n"
