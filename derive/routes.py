"""What a theorem declares for code generation: routes and terms, printed from its checked lemmas.

A theorem's module declares them in its decorator (``@theorem(routes=[Route(...), Term(...)])``), next to its
glossary and sampling hints, so adding a theorem touches one file.  This module sits below the registry, the
library and the code generator, which all use it and none of which it imports: the declarations are plain
data, and :mod:`derive.codegen` prints them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["SIDES", "TERM_NAMES", "CodegenError", "Printed", "Route", "Term"]

#: The sides of a lemma a :class:`Route` may print.
SIDES = ("lhs", "rhs")


class CodegenError(ValueError):
    """The generator was asked for something it cannot print safely."""


@dataclass(frozen=True)
class Route:
    """A route: the checked lemma one of whose sides is evaluated, and how symbols are named.

    Declared by the theorem that proves the lemma (``@theorem(routes=[Route(...)])``); ``theorem`` is
    filled in from the registry.  ``side`` names the side printed: ``"rhs"`` (the default) or ``"lhs"``.  Of the
    form X_q · A = X_q · E, E (or A) is printed (the coefficients β̂), else that whole side.  Printed as
    ``_<name>_beta`` where the numerics call it (``PRINTED[name]``), else as a public function ``<name>`` (a
    built-in theorem's in the generated modules, a user library's in that library's own modules).  ``names``
    maps symbols (matrices and scalars) to Python names; a symbol it leaves out is named after itself (a
    Python keyword or a name the module uses gets a ``_`` appended: the scalar ``lambda`` is ``lambda_``).
    """

    name: str
    lemma: str
    names: dict[str, str] = field(default_factory=dict)  # symbol -> Python variable
    diagonal: tuple[str, ...] = ()  # symbols held as vectors of their diagonal
    lower: tuple[str, ...] = ()  # lower-triangular symbols (solved by substitution)
    upper: tuple[str, ...] = ()  # upper-triangular symbols
    gram: bool = False  # XᵀY arrives precomputed as ``XtY`` (the fast memory), so X itself is not needed
    theorem: str = ""
    side: str = "rhs"  # which side of the lemma is printed: "rhs" or "lhs"

    def __post_init__(self):
        if self.side not in SIDES:
            raise CodegenError(f"route {self.name}: side must be \"lhs\" or \"rhs\", not {self.side!r}")

    @property
    def function(self) -> str:
        """The printed function's name."""
        return f"_{self.name}_beta"

    @property
    def result(self) -> str:
        return "beta"

    @property
    def source(self) -> str:
        """Where in the theorem the printed term comes from, in words."""
        return f"lemma {self.lemma}" if self.side == "rhs" else f"lemma {self.lemma}, left side"


#: How a :class:`Term`'s symbols are named unless it says otherwise.
TERM_NAMES = {"X": "X", "Y": "Y", "L": "L", "X_q": "X_query"}


@dataclass(frozen=True)
class Term:
    """A term of a checked theorem printed as a function ``_<name>`` (not a route; no definitions expanded).

    Either the right side of the definition ``definition`` (the construction's ``P``), or the right side of
    the chain ``lemma`` (``"main"``: the claim) without its last factor, which must be the symbol ``values``:
    the weights that the right side applies to the values (the score matrix).  Declared like a route
    (``@theorem(routes=[Term(...)])``); ``theorem`` is filled in from the registry.
    """

    name: str
    definition: str = ""
    lemma: str = ""
    values: str = ""
    names: dict[str, str] = field(default_factory=lambda: dict(TERM_NAMES))
    diagonal: tuple[str, ...] = ()
    lower: tuple[str, ...] = ()
    upper: tuple[str, ...] = ()
    gram: bool = False
    theorem: str = ""

    def __post_init__(self):
        if bool(self.definition) == bool(self.lemma) or bool(self.lemma) != bool(self.values):
            raise CodegenError(f"term {self.name}: give either definition=, or lemma= with values=")
        if not self.name.isidentifier():
            raise CodegenError(f"term name {self.name!r} must be a Python identifier")

    @property
    def function(self) -> str:
        """The printed function's name."""
        return f"_{self.name}"

    @property
    def result(self) -> str:
        return self.name

    @property
    def source(self) -> str:
        """Where in the theorem the printed term comes from, in words."""
        if self.definition:
            return f"definition {self.definition}"
        chain = "the claim" if self.lemma == "main" else f"lemma {self.lemma}"
        return f"{chain}, weights of {self.values}"


Printed = Route | Term


