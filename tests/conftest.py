"""Test-wide settings: the built-in record (proofs/certificates) is replayed, never rewritten by a test."""

import os

import pytest

# Tests replay recorded proofs but never write a record (a test that needs writing switches it on itself);
# set before derive is imported, which installs the record store.
os.environ.setdefault("DERIVE_RECORDS", "read")


def registered_only_while(load):
    """Run ``load()`` (which registers user theorems: ``load_library``) and yield its result; afterwards the theorems
    and modules it added are gone again, so tests in the same process (or xdist worker) that list every registered
    theorem — the article, the LaTeX fragments — see the built-in library only, in any test order."""
    import sys

    from derive.authoring import registry

    before, modules = set(registry._REGISTRY), set(sys.modules)
    try:
        yield load()
    finally:
        for theorem_id in set(registry._REGISTRY) - before:
            del registry._REGISTRY[theorem_id]
        for name in set(sys.modules) - modules:
            if name.startswith("_derive_user_library_"):
                del sys.modules[name]


@pytest.fixture(scope="module", autouse=True)
def _registry_as_the_module_found_it():
    """Theorems a test module registers (``load_library``, ``@theorem`` in a test) are unregistered after the module,
    so no other module in the same process or xdist worker sees them (``derive build`` would write them too)."""
    yield from registered_only_while(lambda: None)
