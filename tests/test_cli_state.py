"""``derive.cli.main`` called in-process leaves no global state behind: a command with ``--library`` followed by one
without sees what a fresh process would (the test-order flake of issue 28: after ``derive export coq --library``
in-process, ``derive latex`` wrote the user's theorems only, 5 macros instead of the library's)."""

from __future__ import annotations

import shutil
from pathlib import Path

from derive.authoring import registry
from derive.cli import _LOADED, main
from derive.library import THEOREM_IDS
from derive.records import store

DATA = Path(__file__).resolve().parent / "data"


def _article_ids(folder: Path) -> list[str]:
    import re

    article = (folder / "ols_transformer.tex").read_text()
    return re.findall(r"\\begin\{theorem\}\[[^\]]*\]\\label\{thm:(\w+)\}", article)


def test_a_command_with_a_library_then_one_without(tmp_path, capsys):
    library = tmp_path / "mine.py"
    shutil.copy(DATA / "user_theorems.py", library)
    before = set(registry.entries())
    folders = dict(store().folders) if store() is not None else {}

    assert main(["prove", "--library", str(library), "--record", str(tmp_path / "rec")]) == 0
    capsys.readouterr()
    assert set(registry.entries()) == before and _LOADED == []  # nothing of the command is left
    assert (dict(store().folders) if store() is not None else {}) == folders

    assert main(["latex", "--out", str(tmp_path / "tex")]) == 0
    capsys.readouterr()
    sty = (tmp_path / "tex" / "olstransformer.sty").read_text()
    assert sty.count("\\providecommand{\\ols") >= 30  # the library's notation, not the user's 5 macros
    assert sorted(_article_ids(tmp_path / "tex")) == sorted(THEOREM_IDS)

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
