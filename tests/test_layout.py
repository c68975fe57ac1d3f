"""The architecture as the folders show it: the kernel imports nothing else of derive; the public API."""

from __future__ import annotations

import ast
from pathlib import Path

import derive

KERNEL = Path(derive.__file__).parent / "kernel"


def _imports(path: Path) -> list[tuple[int, str]]:
    """(relative level, module) of every import statement in a file, function-level ones included."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(0, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            out.append((node.level, node.module or ""))
    return out


def test_the_kernel_imports_nothing_else_of_derive_not_even_lazily():
    files = sorted(KERNEL.glob("*.py"))
    assert {f.stem for f in files} >= {"terms", "proof", "judgments", "axioms", "checking"}
    for path in files:
        for level, module in _imports(path):
            assert level <= 1, f"{path.name} imports from outside the kernel: {'.' * level}{module}"
            assert level == 1 or module.split(".")[0] != "derive", f"{path.name} imports {module}"
            assert level == 1 or module.split(".")[0] in {"sympy", "__future__", "collections", "dataclasses",
                                                          "hashlib", "json", "time", "typing", "functools", "re",
                                                          "threading", "weakref", "fractions", "operator"}, \
                f"{path.name} imports {module}"


def test_the_public_authoring_api():
    names = ("ProofBuilder Hypothesis Definition Proof Theorem ProofError check theorem dim predicate mul add inv "
             "transpose power block").split()
    for name in names:
        assert hasattr(derive, name), name
    n = derive.dim("n")
    assert n.is_integer and n.is_positive
    assert derive.check.__module__ == "derive.kernel.checking"
    assert derive.Theorem.__module__ == "derive.kernel.proof"
