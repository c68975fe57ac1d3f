"""Write the notebooks (*.ipynb) from their jupytext sources (*.py, percent format) in this folder.

The .py files are the source of truth: edit them (in an editor, or in JupyterLab with jupytext, which
keeps the pair in sync) and run

    python notebooks/sync.py           # rewrite every .ipynb that differs from its source
    python notebooks/sync.py --check   # exit 1, naming each .ipynb that is out of date (the tests run this)

The .ipynb are written stripped (no outputs, no execution counts, no cell metadata) with cell ids
numbered in order (m01, c01, …), so the same sources always give the same bytes. They stay committed so
that the notebooks open and render without jupytext. Needs jupytext and nbformat (the `notebooks` extra).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

FOLDER = Path(__file__).resolve().parent
METADATA = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}


def sources(folder: Path = FOLDER) -> list[Path]:
    """The notebook sources: the .py files whose names start with their two-digit number."""
    return sorted(p for p in folder.glob("[0-9][0-9]_*.py"))


def notebook_text(source: Path) -> str:
    """The .ipynb text for one jupytext source: deterministic, stripped, validated."""
    import jupytext
    import nbformat

    nb = jupytext.read(source, fmt="py:percent")
    nb.metadata = nbformat.from_dict(METADATA)
    counts = {"markdown": 0, "code": 0}
    for cell in nb.cells:
        if cell.cell_type not in counts:
            raise ValueError(f"{source.name}: unexpected {cell.cell_type} cell")
        counts[cell.cell_type] += 1
        cell.id = f"{cell.cell_type[0]}{counts[cell.cell_type]:02d}"
        cell.metadata = nbformat.from_dict({})
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nb.nbformat, nb.nbformat_minor = 4, 5
    nbformat.validate(nb)
    text = nbformat.writes(nb, version=4)
    return text if text.endswith("\n") else text + "\n"


def stale(folder: Path = FOLDER) -> list[Path]:
    """The .ipynb files that are missing or differ from what their sources give."""
    out = []
    for source in sources(folder):
        target = source.with_suffix(".ipynb")
        if not target.is_file() or target.read_text(encoding="utf-8") != notebook_text(source):
            out.append(target)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report .ipynb files that are out of date")
    args = parser.parse_args(argv)
    targets = stale()
    if args.check:
        for target in targets:
            print(f"{target.name} is out of date: run python notebooks/sync.py", file=sys.stderr)
        return 1 if targets else 0
    for target in targets:
        with open(target, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(notebook_text(target.with_suffix(".py")))
        print(f"wrote {target.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
