"""The build hook pyproject.toml cannot express: ship the built-in library's proof record in the package.

``proofs/certificates/`` (the recorded proofs and ``SOURCES``) lies outside the ``derive`` package, so
package-data cannot name it.  ``build_py`` copies it to ``derive/data/records/`` of the build, so that an
installed (non-editable) package replays the recorded proofs instead of searching all of them
(:mod:`derive.records` reads the checkout's folder first, then this copy).  Everything else is in pyproject.toml.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

RECORD = Path(__file__).resolve().parent / "proofs" / "certificates"


class BuildWithRecords(build_py):
    """build_py, then the built-in record copied into the built package (not for editable installs)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False) or not RECORD.is_dir():
            return  # an editable install reads the checkout's record itself
        target = Path(self.build_lib) / "derive" / "data" / "records"
        target.mkdir(parents=True, exist_ok=True)
        for source in sorted(RECORD.iterdir()):
            if source.name == "SOURCES" or source.suffix == ".json":
                shutil.copyfile(source, target / source.name)


setup(cmdclass={"build_py": BuildWithRecords})
