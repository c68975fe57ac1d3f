"""ols-transformer: OLS is a special case of the single-layer linear transformer, machine-checked.

The public authoring API (stable; see ``docs/authoring.md``)::

    from derive import (ProofBuilder, Hypothesis, Definition, Proof, Theorem, ProofError, check, theorem,
                        dim, predicate, mul, add, inv, transpose, power, block,
                        scalar, index, family, ones, diag, tril, kron)

``derive.kernel`` is the trusted core; everything else (``derive.authoring``, ``derive.library``,
``derive.certificates``, ``derive.witness``, ``derive.latex``, ``derive.codegen``, ``derive.experiments``)
builds on it and only proposes.

The names above are imported on first use (with the LaTeX display of checked theorems in Jupyter), so that
``import derive.sklearn`` or ``import derive.generated.ols_attention`` does not pay for SymPy.
"""

from . import _hooks

__version__ = "0.1.0"

__all__ = ["Chain", "ChainBuilder", "Definition", "Family", "Hypothesis", "Induction", "InductionBuilder", "Proof",
           "ProofBuilder", "ProofError", "Step", "Theorem", "__version__", "add", "block", "check", "diag", "dim",
           "family", "index", "inv", "kron", "mul", "ones", "orthogonal", "power", "predicate", "scalar", "theorem",
           "transpose", "tril"]


def _record_store():
    """The store of recorded proofs (see :mod:`derive.records`), made when the registry first needs one."""
    from . import records

    return records.install()


_hooks.record_store_factory = _record_store


#: Where each name of the public API lives.
_SOURCES = {
    **dict.fromkeys(["ChainBuilder", "InductionBuilder", "ProofBuilder", "dim", "family", "index", "orthogonal",
                     "predicate", "scalar", "theorem"], "derive.authoring"),
    **dict.fromkeys(["Chain", "Definition", "Family", "Hypothesis", "Induction", "Proof", "ProofError", "Step",
                     "Theorem", "check"], "derive.kernel"),
    **dict.fromkeys(["add", "block", "diag", "inv", "kron", "mul", "ones", "power", "transpose", "tril"],
                   "derive.kernel.terms"),
}


def _load() -> None:
    """Import the public API (and derive.latex, which registers how checked theorems display in Jupyter)."""
    import importlib

    importlib.import_module("derive.latex")
    for name, module in _SOURCES.items():
        globals()[name] = getattr(importlib.import_module(module), name)


def __getattr__(name: str):
    if name in _SOURCES:
        _load()
        return globals()[name]
    raise AttributeError(f"module 'derive' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
