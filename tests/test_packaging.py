"""What ships: the license, the NIST StRD data as package data, read through the one loader."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from derive.experiments.nist import DATA_FILE, load_datasets, load_document

ROOT = Path(__file__).resolve().parents[1]


def test_license_is_the_mit_license_pyproject_names():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n") and "Permission is hereby granted, free of charge" in text
    assert 'license = { text = "MIT" }' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def test_nist_data_ship_with_the_package():
    packaged = resources.files("derive.data").joinpath(DATA_FILE)
    assert packaged.is_file()
    names = [d["name"] for d in load_datasets()]
    assert names == ["Norris", "Pontius", "NoInt1", "NoInt2", "Filip", "Longley", "Wampler1", "Wampler2", "Wampler3",
                     "Wampler4", "Wampler5"]  # the whole linear least squares collection
    assert "public-domain" in load_document()["source"]
    for dataset in load_datasets():
        assert len(dataset["x"]) == len(dataset["y"]) and dataset["certified"]["beta"]


def test_the_loader_reads_other_files_in_the_format(tmp_path):
    path = tmp_path / "extra.json"
    path.write_text(json.dumps({"source": "test", "datasets": [{"name": "T", "x": [[1.0]], "y": [2.0],
                                                                 "intercept": False, "certified": {"beta": [2.0]}}]}))
    assert [d["name"] for d in load_datasets(path)] == ["T"]
    path.write_text("[]")
    with pytest.raises(ValueError, match="not a NIST StRD file"):
        load_datasets(path)


def _build_py(tmp_path: Path) -> Path:
    """setuptools' build_py (pyproject.toml and setup.py's hook) on a copy of the project; the built tree."""
    project = tmp_path / "project"
    shutil.copytree(ROOT / "derive", project / "derive", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "proofs" / "certificates", project / "proofs" / "certificates")
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, project / name)
    lib = tmp_path / "lib"
    result = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(lib)],
                            capture_output=True, text=True, cwd=project)
    assert result.returncode == 0, result.stderr[-2000:]
    return lib


def test_setuptools_installs_the_data_with_the_package(tmp_path):
    """setuptools' build_py (what a wheel and ``pip install .`` hold) on a copy of the project: no network."""
    pytest.importorskip("setuptools")
    lib = _build_py(tmp_path)
    data = lib / "derive" / "data" / DATA_FILE
    assert data.read_bytes() == (ROOT / "derive" / "data" / DATA_FILE).read_bytes()
    assert (lib / "derive" / "experiments" / "figures.py").is_file()
    bib = lib / "derive" / "latex" / "references.bib"  # the article's bibliography ships with the package
    assert bib.read_bytes() == (ROOT / "derive" / "latex" / "references.bib").read_bytes()


@pytest.mark.slow  # a build of the package and a replay of every proof, 8 s: the README's run keeps under 5 minutes
def test_an_installed_package_replays_the_shipped_record(tmp_path):
    """The wheel holds proofs/certificates as derive/data/records: a non-editable install replays every built-in
    proof (no search), and never writes into the installed package."""
    pytest.importorskip("setuptools")
    lib = _build_py(tmp_path)
    shipped = lib / "derive" / "data" / "records"
    record = ROOT / "proofs" / "certificates"
    names = sorted(p.name for p in record.iterdir() if p.suffix == ".json" or p.name == "SOURCES")
    assert sorted(p.name for p in shipped.iterdir()) == names
    assert all((shipped / n).read_bytes() == (record / n).read_bytes() for n in names)
    assert not (lib / "proofs").exists()  # the checkout's folder is not there: the shipped copy is what replays
    before = {p.name: p.stat().st_mtime_ns for p in shipped.iterdir()}
    env = {**os.environ, "PYTHONPATH": str(lib), "DERIVE_RECORDS": "write"}
    result = subprocess.run([sys.executable, "-m", "derive", "prove"], capture_output=True, text=True, cwd=tmp_path,
                            env=env, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    count = len(names) - 1
    assert f"{count}/{count} theorems verified; {count} replayed from their records, 0 searched" in result.stdout
    assert {p.name: p.stat().st_mtime_ns for p in shipped.iterdir()} == before
