"""``derive.cli.main`` called in-process leaves no global state behind: a command with ``--library`` followed by one
without sees what a fresh process would (the test-order flake of issue 28: after ``derive export coq --library``
in-process, ``derive latex`` wrote the user's theorems only, 5 macros instead of the library's: the ids the
``--library`` registered were kept in a module-level list that every later command without ids selected)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from derive.authoring import registry
from derive.cli import _LOADED, main
from derive.library import THEOREM_IDS
from derive.records import store

DATA = Path(__file__).resolve().parent / "data"


def test_a_command_with_a_library_then_one_without(tmp_path, capsys):
    library = tmp_path / "mine.py"
    shutil.copy(DATA / "user_theorems.py", library)
    before = set(registry.entries())
    folders = dict(store().folders) if store() is not None else {}

    assert main(["list", "--library", str(library), "--record", str(tmp_path / "rec")]) == 0
    assert "ols_through_qr" in capsys.readouterr().out
    assert set(registry.entries()) == before and _LOADED == []  # nothing of the command is left
    assert (dict(store().folders) if store() is not None else {}) == folders

    # a command that takes its theorems from the last --library when given no ids (prove, latex, codegen, export)
    assert main(["prove", "--json"]) == 0
    assert [row["id"] for row in json.loads(capsys.readouterr().out)] == list(THEOREM_IDS)  # not the user's

    # the same library again in the same process: registered afresh; then gone again
    assert main(["list", "--library", str(library)]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert "ols_through_qr" in listed and set(THEOREM_IDS) < set(listed)
    assert set(registry.entries()) == before
    assert main(["list"]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == list(THEOREM_IDS)


def test_a_failing_command_leaves_nothing_either(tmp_path, capsys):
    before = set(registry.entries())
    status = main(["prove", "no_such_theorem", "--library", str(DATA / "user_theorems.py")])
    assert status == 2 and "unknown theorem id 'no_such_theorem'" in capsys.readouterr().err
    assert set(registry.entries()) == before and _LOADED == []
