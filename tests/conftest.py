"""Test-wide settings: the built-in record (proofs/certificates) is replayed, never rewritten by a test."""

import os

import pytest

# Tests replay recorded proofs but never write a record (a test that needs writing switches it on itself);
# set before derive is imported, which installs the record store.
os.environ.setdefault("DERIVE_RECORDS", "read")

#: The frameworks are the slow tier (issue 28 item 8: the README's run stays under 5 minutes on 2 cores): a test
#: whose name or parameters name JAX or PyTorch runs under ``pytest -m slow`` (.ci/run), never in the default run,
#: which tests the array-API module with NumPy and array-api-strict.
FRAMEWORKS = ("jax", "torch")


#: ``DERIVE_ALSO_RUN=FILE``: node ids (one a line, as ``DERIVE_SKIPPED_IMPORTS`` writes them: a test, or a module
#: skipped whole) whose tests are marked slow too, so that ``pytest -m slow`` runs them in the same run: .ci/run's
#: slow tier takes the tests the README's run skipped for an optional package (one collection, not two).
ALSO_RUN = "DERIVE_ALSO_RUN"


def _also_run() -> tuple[set[str], tuple[str, ...]]:
    path = os.environ.get(ALSO_RUN)
    if not path or not os.path.exists(path):
        return set(), ()
    with open(path, encoding="utf-8") as listed:
        ids = {line.strip() for line in listed if line.strip()}
    return ids, tuple(f"{i}::" for i in ids)


def pytest_collection_modifyitems(config, items):
    exact, prefixes = _also_run()
    for item in items:
        if any(name in item.nodeid.lower() for name in FRAMEWORKS):
            item.add_marker(pytest.mark.slow)
        elif item.nodeid in exact or item.nodeid.startswith(prefixes):
            item.add_marker(pytest.mark.slow)


#: ``DERIVE_SKIPPED_IMPORTS=FILE``: the node ids of the tests skipped because an optional package could not be
#: imported are written to FILE, one a line, so that .ci/run, which runs the README's test command with the test
#: extra alone, can run exactly those again once it has installed the frameworks (issue 40 item 8).
SKIPPED_IMPORTS = "DERIVE_SKIPPED_IMPORTS"


def _skipped_for_an_import(report) -> bool:
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return report.skipped and "could not import" in reason


def _note_skipped_import(config, report) -> None:
    path = os.environ.get(SKIPPED_IMPORTS)
    if path and not hasattr(config, "workerinput") and _skipped_for_an_import(report):  # the controller writes
        with open(path, "a", encoding="utf-8") as out:
            out.write(report.nodeid + "\n")


@pytest.hookimpl
def pytest_configure(config):
    global _CONFIG
    _CONFIG = config


_CONFIG = None


def pytest_runtest_logreport(report):
    _note_skipped_import(_CONFIG, report)


def pytest_collectreport(report):
    _note_skipped_import(_CONFIG, report)


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


#: The backends a user library's own modules are printed for (``derive codegen --library``).
USER_BACKENDS = ("numpy", "mpmath", "xp", "dask")


@pytest.fixture(scope="module")
def user_library_modules(tmp_path_factory):
    """A function: the theorem file ``tests/data/NAME.py`` loaded in a folder of its own, its theorems checked and
    its module printed for every backend (deterministically, nothing left out) and written beside it as
    ``NAME_<backend>.py``; returns (folder, theorems by id, module text by backend)."""
    import shutil
    from pathlib import Path

    from derive.authoring.registry import checked, load_library, scoped_registrations
    from derive.codegen import library_module, user_libraries

    def build(name: str):
        work = tmp_path_factory.mktemp(name)
        shutil.copy(Path(__file__).resolve().parent / "data" / f"{name}.py", work / f"{name}.py")
        texts, left_out = {}, []
        with scoped_registrations():
            ids = load_library(str(work / f"{name}.py"))
            theorems = {i: checked(i) for i in ids}
            (library,) = user_libraries()
            for backend in USER_BACKENDS:
                texts[backend] = library_module(theorems, backend, library, left_out)
                assert library_module(theorems, backend, library) == texts[backend]  # deterministic
        assert left_out == []
        for backend, text in texts.items():
            (work / f"{name}_{backend}.py").write_text(text)
        return work, theorems, texts

    return build


@pytest.fixture(scope="module")
def load_module():
    """A function: import the Python file ``path`` as the module ``name``."""
    import importlib.util

    def load(path, name: str):
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load
