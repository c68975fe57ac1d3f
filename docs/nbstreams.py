"""Stream outputs merged exactly: the text a command printed, never broken mid-token.

MyST-NB's ``nb_merge_streams`` joins a cell's stream outputs after stripping each one and adding a newline.
A ``%%bash`` cell reaches the notebook in chunks of 100 bytes (IPython's script magic reads its pipe that
way), so the tutorial's LaTeX output was cut into lines mid-token (``inv`` / ``ertible``, ``\\olsb`` /
``reak``), and LaTeX copied from the page did not compile.  :func:`merge_streams` concatenates the chunks as
they came; ``docs/conf.py`` installs it in place of MyST-NB's.
"""

from __future__ import annotations

import re

from nbformat import NotebookNode

__all__ = ["install", "merge_streams"]

_BACKSPACE = re.compile("[^\n]\x08")  # a character, then a backspace
_CARRIAGE_RETURN = re.compile(r"[^\n]*\r(?=[^\n])")  # a line overwritten after a bare \r


def merge_streams(outputs: list[NotebookNode]) -> list[NotebookNode]:
    """One output per stream name, its text the exact concatenation of the stream's chunks (at the place of
    the first), ``\\b`` and a bare ``\\r`` applied as a terminal would; stdout before stderr where adjacent."""
    merged: list[NotebookNode] = []
    streams: dict[str, NotebookNode] = {}
    for output in outputs:
        if output.get("output_type") != "stream":
            merged.append(output)
            continue
        name = output["name"]
        if name in streams:
            streams[name]["text"] += output["text"]
        else:
            first = NotebookNode({**output, "text": output["text"]})
            streams[name] = first
            merged.append(first)
    for output in streams.values():
        text = output["text"]
        previous = None
        while previous != text:
            previous, text = text, _BACKSPACE.sub("", text)
        output["text"] = _CARRIAGE_RETURN.sub("", text)
    for index in range(len(merged) - 1):
        here, after = merged[index], merged[index + 1]
        if (here.get("output_type") == after.get("output_type") == "stream" and here["name"] == "stderr"
                and after["name"] == "stdout"):
            merged[index], merged[index + 1] = after, here
    return merged


def install() -> None:
    """Use :func:`merge_streams` wherever MyST-NB merges a cell's streams (``nb_merge_streams = True``)."""
    from myst_nb.core import render

    render.coalesce_streams = merge_streams
