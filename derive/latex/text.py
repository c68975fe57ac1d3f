"""Any text into LaTeX that compiles: titles and statements escaped, glossaries and meanings made safe.

Two kinds of text reach the article from a theorem's author:

* *plain text* — a title (``"Rate_of_decay & 100% {new}"``), the informal statement: every character means
  itself.  :func:`escape_text` escapes LaTeX's specials (``\\ { } $ & # % _ ^ ~``) and maps Unicode to
  LaTeX (``ᵀ`` to a superscript ⊤, ``Γ`` to ``\\Gamma``, accented letters to accents); a character it
  cannot map prints as its code point (``[U+2603]``), never as an error.
* *LaTeX text* — a glossary entry or a meaning paragraph (``"ridge penalty, $\\lambda > 0$"``): its
  ``$...$`` math and its commands are kept.  :func:`latex_text` maps Unicode the same way, escapes the
  characters that are errors wherever they stand in a paragraph (``&``, ``#``, ``%``; ``_`` and ``^``
  outside math), and escapes ``$`` or braces when they do not pair up, so a slip cannot break the build.

Both are pure functions of their input: the same text gives the same bytes.
"""

from __future__ import annotations

import unicodedata

__all__ = ["UNICODE_LATEX", "escape_text", "latex_text", "unicode_latex"]

_GREEK = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu",
          "nu", "xi", "omicron", "pi", "rho", "final", "sigma", "tau", "upsilon", "phi", "chi", "psi", "omega"]


_GREEK_CAPITALS = {"gamma", "delta", "theta", "lambda", "xi", "pi", "sigma", "upsilon", "phi", "psi", "omega"}
#: Greek capitals that look like Latin letters (LaTeX has no macro for them).
_LATIN_CAPITALS = {"alpha": "A", "beta": "B", "epsilon": "E", "zeta": "Z", "eta": "H", "iota": "I", "kappa": "K",
                   "mu": "M", "nu": "N", "omicron": "O", "rho": "P", "tau": "T", "chi": "X"}


def _greek() -> dict[str, str]:
    out: dict[str, str] = {}
    for offset, name in enumerate(_GREEK):
        lower, upper = chr(0x3B1 + offset), chr(0x391 + offset)
        if name == "final":  # U+03C2, final sigma; U+03A2 is unassigned
            out[lower] = r"\ensuremath{\varsigma}"
            continue
        out[lower] = "o" if name == "omicron" else rf"\ensuremath{{\{name}}}"
        out[upper] = rf"\ensuremath{{\{name.capitalize()}}}" if name in _GREEK_CAPITALS else _LATIN_CAPITALS[name]
    out["\u03d5"] = r"\ensuremath{\phi}"  # ϕ
    out["\u03f5"] = r"\ensuremath{\epsilon}"  # ϵ
    return out


_SUPERSCRIPTS = {"\u1d40": r"\top", "\u207b": "-", "\u207a": "+", "\u2070": "0", "\u00b9": "1", "\u00b2": "2",
                 "\u00b3": "3", "\u2074": "4", "\u2075": "5", "\u2076": "6", "\u2077": "7", "\u2078": "8",
                 "\u2079": "9", "\u207f": "n", "\u2071": "i", "\u1d57": "t", "\u1d4f": "k", "\u02b3": "r"}
_SUBSCRIPTS = {"\u2080": "0", "\u2081": "1", "\u2082": "2", "\u2083": "3", "\u2084": "4", "\u2085": "5",
               "\u2086": "6", "\u2087": "7", "\u2088": "8", "\u2089": "9", "\u208a": "+", "\u208b": "-",
               "\u2099": "n", "\u1d62": "i", "\u2c7c": "j", "\u2096": "k", "\u209c": "t", "\u2098": "m",
               "\u209a": "p", "\u2093": "x", "\u2091": "e", "\u2090": "a", "\u2092": "o", "\u1d63": "r"}

#: Unicode characters and the LaTeX that prints them in text and in math alike.
UNICODE_LATEX: dict[str, str] = {
    **_greek(),
    **{ch: rf"\ensuremath{{^{{{tex}}}}}" for ch, tex in _SUPERSCRIPTS.items()},
    **{ch: rf"\ensuremath{{_{{{tex}}}}}" for ch, tex in _SUBSCRIPTS.items()},
    "\u2013": "--", "\u2014": "---", "\u2212": r"\ensuremath{-}", "\u2010": "-", "\u2011": "-",
    "\u2018": "`", "\u2019": "'", "\u201c": "``", "\u201d": "''", "\u2026": r"\ldots{}", "\u00a0": "~",
    "\u00b7": r"\ensuremath{\cdot}", "\u00d7": r"\ensuremath{\times}", "\u00f7": r"\ensuremath{\div}",
    "\u00b1": r"\ensuremath{\pm}", "\u2213": r"\ensuremath{\mp}", "\u2264": r"\ensuremath{\le}",
    "\u2265": r"\ensuremath{\ge}", "\u2260": r"\ensuremath{\ne}", "\u2248": r"\ensuremath{\approx}",
    "\u2261": r"\ensuremath{\equiv}", "\u221e": r"\ensuremath{\infty}", "\u2211": r"\ensuremath{\sum}",
    "\u220f": r"\ensuremath{\prod}", "\u221a": r"\ensuremath{\surd}", "\u2202": r"\ensuremath{\partial}",
    "\u2207": r"\ensuremath{\nabla}", "\u2208": r"\ensuremath{\in}", "\u2209": r"\ensuremath{\notin}",
    "\u2282": r"\ensuremath{\subset}", "\u2286": r"\ensuremath{\subseteq}", "\u222a": r"\ensuremath{\cup}",
    "\u2229": r"\ensuremath{\cap}", "\u2200": r"\ensuremath{\forall}", "\u2203": r"\ensuremath{\exists}",
    "\u2192": r"\ensuremath{\to}", "\u2190": r"\ensuremath{\leftarrow}", "\u21d2": r"\ensuremath{\Rightarrow}",
    "\u21d4": r"\ensuremath{\Leftrightarrow}", "\u2194": r"\ensuremath{\leftrightarrow}",
    "\u21a6": r"\ensuremath{\mapsto}", "\u2218": r"\ensuremath{\circ}", "\u2297": r"\ensuremath{\otimes}",
    "\u2295": r"\ensuremath{\oplus}", "\u2299": r"\ensuremath{\odot}", "\u22a4": r"\ensuremath{\top}",
    "\u22a5": r"\ensuremath{\perp}", "\u2016": r"\ensuremath{\|}", "\u27e8": r"\ensuremath{\langle}",
    "\u27e9": r"\ensuremath{\rangle}", "\u2225": r"\ensuremath{\parallel}", "\u2205": r"\ensuremath{\emptyset}",
    "\u211d": r"\ensuremath{\mathbb{R}}", "\u2115": r"\ensuremath{\mathbb{N}}", "\u2124": r"\ensuremath{\mathbb{Z}}",
    "\u2102": r"\ensuremath{\mathbb{C}}", "\u211a": r"\ensuremath{\mathbb{Q}}", "\u2113": r"\ensuremath{\ell}",
    "\u00b0": r"\ensuremath{^{\circ}}", "\u00df": r"{\ss}", "\u00e6": r"{\ae}", "\u00c6": r"{\AE}",
    "\u0153": r"{\oe}", "\u0152": r"{\OE}", "\u00f8": r"{\o}", "\u00d8": r"{\O}", "\u00e5": r"{\aa}",
    "\u00c5": r"{\AA}", "\u0142": r"{\l}", "\u0141": r"{\L}", "\u0131": r"{\i}", "\u00a7": r"\S{}",
    "\u00b6": r"\P{}", "\u00a9": r"\copyright{}", "\u2022": r"\ensuremath{\bullet}", "\u2032": r"\ensuremath{'}",
    "\u00ab": r"<<", "\u00bb": r">>", "\u00bf": r"?`", "\u00a1": r"!`", "\u2009": r"\,", "\u200b": "",
    "\ufeff": "",
}

_ACCENTS = {"\u0300": "`", "\u0301": "'", "\u0302": "^", "\u0303": "~", "\u0304": "=", "\u0306": "u",
            "\u0307": ".", "\u0308": '"', "\u030a": "r", "\u030b": "H", "\u030c": "v", "\u0327": "c",
            "\u0328": "k", "\u0323": "d", "\u0331": "b"}

_TEXT_SPECIALS = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
                  "%": r"\%", "_": r"\_", "^": r"\textasciicircum{}", "~": r"\textasciitilde{}"}


def unicode_latex(ch: str) -> str:
    """One non-ASCII character as LaTeX that compiles in text and in math: a symbol, an accented letter, or its
    code point ``[U+XXXX]`` when nothing better is known."""
    if ch in UNICODE_LATEX:
        return UNICODE_LATEX[ch]
    decomposed = unicodedata.normalize("NFD", ch)
    base, marks = decomposed[0], decomposed[1:]
    if marks and base.isascii() and base.isalpha() and all(mark in _ACCENTS for mark in marks):
        text = {"i": r"\i", "j": r"\j"}.get(base, base)  # dotless under an accent
        for mark in marks:
            text = f"\\{_ACCENTS[mark]}{{{text}}}"
        return text
    compatible = unicodedata.normalize("NFKC", ch)
    if compatible != ch and compatible.isascii() and compatible.isprintable():
        return escape_text(compatible)
    return f"\\textnormal{{[U+{ord(ch):04X}]}}"


def escape_text(text: str) -> str:
    """Plain text as LaTeX text: every character prints as itself (specials escaped, Unicode mapped)."""
    out = []
    for ch in " ".join(str(text).split()):
        if ch in _TEXT_SPECIALS:
            out.append(_TEXT_SPECIALS[ch])
        elif ch.isascii():
            out.append(ch if ch.isprintable() else " ")
        else:
            out.append(unicode_latex(ch))
    return "".join(out)


def _math_spans(text: str) -> list[tuple[bool, str]]:
    """``text`` split at unescaped ``$`` into (is math, piece); an odd count of ``$`` reads as no math."""
    pieces, current, math, i = [], [], False, 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            current.append(text[i:i + 2])
            i += 2
            continue
        if ch == "$":
            pieces.append((math, "".join(current)))
            current, math = [], not math
            i += 1
            continue
        current.append(ch)
        i += 1
    pieces.append((math, "".join(current)))
    if math:  # unpaired $: no math at all, every $ printed
        return [(False, "\\$".join(piece for _, piece in pieces))]
    return pieces


def _balanced(text: str) -> bool:
    depth, i = 0, 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth < 0:
            return False
        i += 1
    return depth == 0


#: Commands whose argument is a key, not text: copied as it stands (``\\ref{thm:ols_is_linear_attention}``).
_KEY_COMMANDS = {"ref", "eqref", "pageref", "label", "cite", "citep", "citet"}


def _safe_piece(piece: str, math: bool, braces: bool) -> str:
    out, i = [], 0
    while i < len(piece):
        ch = piece[i]
        if ch == "\\":
            if i + 1 >= len(piece):
                out.append(r"\textbackslash{}")
                break
            nxt = piece[i + 1]
            if nxt.isascii() and nxt.isalpha():
                j = i + 1
                while j < len(piece) and piece[j].isascii() and piece[j].isalpha():
                    j += 1
                out.append(piece[i:j])
                if piece[i + 1:j] in _KEY_COMMANDS and j < len(piece) and piece[j] == "{" and "}" in piece[j:]:
                    end = piece.index("}", j) + 1  # a key (\\ref{thm:a_b}) is copied as it stands
                    out.append(piece[j:end])
                    j = end
                i = j
                continue
            if nxt.isascii():
                out.append(piece[i:i + 2])
            else:
                out.append(r"\textbackslash{}" + unicode_latex(nxt))
            i += 2
            continue
        if ch in "&#%":
            out.append("\\" + ch)
        elif ch in "_^" and not math:
            out.append(_TEXT_SPECIALS[ch])
        elif ch in "{}" and not braces:
            out.append("\\" + ch)
        elif not ch.isascii():
            out.append(unicode_latex(ch))
        elif not ch.isprintable():
            out.append(" ")
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def latex_text(text: str) -> str:
    """LaTeX text (a glossary entry, a meaning) made safe: math and commands kept, Unicode mapped, and the
    characters that would be errors escaped (``& # %``; ``_ ^`` outside math; ``$`` or braces that do not
    pair up)."""
    text = " ".join(str(text).split())
    braces = _balanced(text)
    out = []
    for math, piece in _math_spans(text):
        safe = _safe_piece(piece, math, braces and _balanced(piece))
        out.append(f"${safe}$" if math else safe)
    return "".join(out)
