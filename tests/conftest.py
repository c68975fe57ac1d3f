"""Test-wide settings: the built-in record (proofs/certificates) is replayed, never rewritten by a test."""

import os

import pytest

# Tests replay recorded proofs but never write a record (a test that needs writing switches it on itself);
# set before derive is imported, which installs the record store.
os.environ.setdefault("DERIVE_RECORDS", "read")



@pytest.fixture(scope="module", autouse=True)
def _registry_as_the_module_found_it():
    """Theorems a test module registers (``load_library``, ``@theorem`` in a test) are unregistered after the module,
    with the modules ``load_library`` made, so that no other module in the same process or xdist worker sees them:
    the article, the LaTeX fragments and ``derive build`` list the built-in library only, in any test order."""
    import sys

    from derive.authoring import registry

    registry.entries()  # the built-in theorems registered first: they are never taken away
    before, modules = set(registry._REGISTRY), set(sys.modules)
    yield
    for theorem_id in set(registry._REGISTRY) - before:
        del registry._REGISTRY[theorem_id]
    for name in set(sys.modules) - modules:
        if name.startswith("_derive_user_library_"):
            del sys.modules[name]
