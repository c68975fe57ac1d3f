"""The content-keyed cache of compiled Coq files (derive/export/coqcache.py): the same file with the same imports
is compiled once; anything that changes a file or what it imports compiles it again; a rejected file is never
cached; processes racing to store an entry all end up with the first one written."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from derive.export import coqcache
from derive.export.coq import PRELUDE, compile_export

ROOT = Path(__file__).resolve().parents[1]
needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is installed by .ci/run")


def test_the_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("DERIVE_COQ_CACHE", "off")
    assert coqcache.cache_folder() is None and coqcache.CoqCache.open("coqc", []) is None
    monkeypatch.setenv("DERIVE_COQ_CACHE", str(tmp_path))
    assert coqcache.cache_folder() == tmp_path
    monkeypatch.delenv("DERIVE_COQ_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert coqcache.cache_folder() == tmp_path / "xdg" / "derive" / "coq"


def test_keys_change_with_text_name_imports_installation_and_flags(tmp_path):
    cache = coqcache.CoqCache(tmp_path, "coq 8.16", ["-Q", ".", "OLS"])
    key = cache.key("a", "Lemma x : True.", ["k1"])
    assert key == cache.key("a", "Lemma x : True.", ["k1"])  # deterministic
    others = {cache.key("a", "Lemma x : False.", ["k1"]), cache.key("b", "Lemma x : True.", ["k1"]),
              cache.key("a", "Lemma x : True.", ["k2"]), cache.key("a", "Lemma x : True.", []),
              coqcache.CoqCache(tmp_path, "coq 8.17", ["-Q", ".", "OLS"]).key("a", "Lemma x : True.", ["k1"]),
              coqcache.CoqCache(tmp_path, "coq 8.16", ["-Q", ".", "X"]).key("a", "Lemma x : True.", ["k1"])}
    assert key not in others and len(others) == 6


def test_store_is_write_once_and_the_first_entry_wins(tmp_path):
    cache = coqcache.CoqCache(tmp_path / "cache", "coq", [])
    assert cache.fetch("k", tmp_path / "missing.vo") is None
    first, second = tmp_path / "first.vo", tmp_path / "second.vo"
    first.write_bytes(b"compiled once")
    second.write_bytes(b"compiled again, other bytes")
    cache.store("k", first, "Closed under the global context\n")
    cache.store("k", second, "other output")  # a second process, later: it takes the stored entry
    assert second.read_bytes() == b"compiled once"
    copy = tmp_path / "copy.vo"
    assert cache.fetch("k", copy) == "Closed under the global context\n" and copy.read_bytes() == b"compiled once"
    assert not [p for p in (tmp_path / "cache").iterdir() if p.name.startswith(".tmp-")]


def _development(folder: Path, names: list[str]) -> Path:
    folder.mkdir()
    for name in [PRELUDE, *names]:
        shutil.copy(ROOT / "proofs" / "coq" / f"{name}.v", folder / f"{name}.v")
    return folder


@pytest.mark.slow  # compiles cold on purpose (its own cache): about 25 s of coqc
@needs_coq
def test_a_cached_development_compiles_without_coqc_and_a_changed_one_does_not(tmp_path, monkeypatch):
    monkeypatch.setenv("DERIVE_COQ_CACHE", str(tmp_path / "cache"))
    names = ["orthogonal_inverse", "orthogonal_transpose_inverse", "spectral_precision"]  # the third imports both
    assert compile_export(_development(tmp_path / "cold", names), names) == {n: "ok" for n in names}
    assert len(list((tmp_path / "cache").glob("*.vo"))) == 4

    calls = []
    real = subprocess.run

    def counting(args, *rest, **kwargs):
        calls.append(args)
        return real(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "run", counting)
    warm = _development(tmp_path / "warm", names)
    assert compile_export(warm, names) == {n: "ok" for n in names}
    assert not [c for c in calls if str(c[-1]).endswith(".v")]  # nothing compiled: all four from the cache
    assert (warm / "spectral_precision.vo").read_bytes() == (tmp_path / "cold" / "spectral_precision.vo").read_bytes()

    # an admitted proof in the imported file: compiled again (not closed), and so is what imports it; the verdict
    # read back from the cache later is the same (coqc's output is kept with the .vo)
    def admitted(folder: Path) -> Path:
        text = (folder / "orthogonal_inverse.v").read_text()
        assert "Qed." in text
        (folder / "orthogonal_inverse.v").write_text(text.replace("Qed.", "Admitted."))
        return folder

    for attempt in ("changed", "changed_again"):
        calls.clear()
        results = compile_export(admitted(_development(tmp_path / attempt, names)), names)
        assert results["orthogonal_transpose_inverse"] == "ok", results
        assert results["orthogonal_inverse"].startswith("not closed: Axioms:"), results
        assert results["spectral_precision"].startswith("not closed: Axioms:"), results
        compiled = sorted(Path(str(c[-1])).stem for c in calls if str(c[-1]).endswith(".v"))
        assert compiled == (["orthogonal_inverse", "spectral_precision"] if attempt == "changed" else [])
    assert len(list((tmp_path / "cache").glob("*.vo"))) == 6

    # a file coqc rejects is compiled every time, never stored
    broken = _development(tmp_path / "broken", names)
    (broken / "spectral_precision.v").write_text("Lemma broken : False. Proof. exact I. Qed.\n")
    for _ in range(2):
        calls.clear()
        assert compile_export(broken, names)["spectral_precision"] != "ok"
        assert [Path(str(c[-1])).stem for c in calls if str(c[-1]).endswith(".v")] == ["spectral_precision"]
    assert len(list((tmp_path / "cache").glob("*.vo"))) == 6
