"""The article's bibliography, from the BibTeX file shipped with the package (``references.bib``).

The article prints its references itself (a ``thebibliography`` list holding only the works it cites), so
it compiles with ``pdflatex`` alone, with no BibTeX run; :data:`BIB_FILE` is also written beside the article
for a paper that cites the same works with BibTeX.  The parser reads the plain ``@type{key, field = {...}}``
entries of that file, nothing more general.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

__all__ = ["BIB_FILE", "bibliography_latex", "bib_text", "cited_keys", "references"]

BIB_FILE = "references.bib"

_ENTRY = re.compile(r"@(\w+)\s*\{\s*([^,\s]+)\s*,")
_FIELD = re.compile(r"(\w+)\s*=\s*")


def bib_text() -> str:
    """The shipped ``references.bib``."""
    return resources.files(__package__).joinpath(BIB_FILE).read_text(encoding="utf-8")


def _braced(text: str, start: int) -> tuple[str, int]:
    """The content of the ``{...}`` opening at ``start`` and the index after it."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1:i], i + 1
    raise ValueError(f"{BIB_FILE}: unbalanced braces after offset {start}")


@lru_cache(maxsize=1)
def references() -> dict[str, dict[str, str]]:
    """Key -> {"type": ..., field: value} for every entry of the shipped file, in file order."""
    text = "\n".join(line for line in bib_text().splitlines() if not line.lstrip().startswith("%"))
    out: dict[str, dict[str, str]] = {}
    for match in _ENTRY.finditer(text):
        body, _ = _braced(text, text.index("{", match.start()))
        fields = {"type": match.group(1).lower()}
        position = body.index(",") + 1
        while True:
            found = _FIELD.search(body, position)
            if found is None:
                break
            value, position = _braced(body, found.end())
            fields[found.group(1).lower()] = " ".join(value.split())
        out[match.group(2)] = fields
    return out


def _person(name: str) -> str:
    last, sep, first = name.partition(",")
    return f"{first.strip()} {last.strip()}" if sep else name.strip()


def _authors(field: str) -> str:
    names = [n.strip() for n in re.split(r"\s+and\s+", field)]
    if names[-1] == "others" or len(names) > 6:
        return f"{_person(names[0])} et al."
    people = [_person(n) for n in names]
    return people[0] if len(people) == 1 else ", ".join(people[:-1]) + f" and {people[-1]}"


def _entry_latex(key: str, entry: dict[str, str]) -> str:
    authors = _authors(entry["author"])
    parts = [authors if authors.endswith(".") else f"{authors}.", f"\\emph{{{entry['title']}}}."]
    if "booktitle" in entry:
        parts.append(f"In {entry['booktitle']}, {entry['year']}.")
    elif "journal" in entry:
        where = entry["journal"] + (f" {entry['volume']}" if "volume" in entry else "")
        where += f"({entry['number']})" if "number" in entry else ""
        where += f":{entry['pages']}" if "pages" in entry else ""
        parts.append(f"{where}, {entry['year']}.")
    elif "publisher" in entry:
        series = f"{entry['series']} {entry['volume']}, " if "series" in entry else ""
        parts.append(f"{series}{entry['publisher']}, {entry['year']}.")
    else:
        parts.append(f"{entry['year']}.")
    if entry.get("archiveprefix") == "arXiv":
        parts.append(f"arXiv:{entry['eprint']}" + (f" [{entry['primaryclass']}]" if "primaryclass" in entry else "")
                     + ".")
    return f"\\bibitem{{{key}}} " + " ".join(parts)


def cited_keys(latex: str) -> list[str]:
    """The keys ``\\cite``d in ``latex``, each once, in order of first citation."""
    keys: dict[str, None] = {}
    for group in re.findall(r"\\cite(?:\[[^\]]*\])?\{([^}]*)\}", latex):
        for key in group.split(","):
            keys.setdefault(key.strip(), None)
    return list(keys)


def bibliography_latex(latex: str) -> str:
    """``thebibliography`` of every shipped work ``latex`` cites, in the order of the shipped file.

    Raises ``KeyError`` naming a cited key that the file does not hold.
    """
    known = references()
    cited = set(cited_keys(latex))
    missing = sorted(cited - set(known))
    if missing:
        raise KeyError(f"cited but not in {BIB_FILE}: {', '.join(missing)}")
    items = [_entry_latex(key, entry) for key, entry in known.items() if key in cited]
    return "\n".join(["\\begin{thebibliography}{99}", *items, "\\end{thebibliography}"])
