"""LaTeX for checked theorems: the paper-notation printer, theorem fragments, their package, the article, the PDF.

:mod:`.printer` prints kernel terms in paper notation; :mod:`.grouping` decides which kernel steps share a
displayed proof line, and which lines make one move of a proof's argument in the article's body;
:mod:`.article` turns checked theorems into theorem fragments (which cite other theorems by
``\\ref{thm:ID}``), the Jupyter display and the standalone article (each proof's argument in the body, its
complete chain in the appendix); :mod:`.figures` adds the experiments' figures to it where they were drawn;
:mod:`.package` writes the ``olstransformer.sty`` the fragments need in a user's paper, and :mod:`.symbols` its
symbol macros and the ``--symbols`` file; :mod:`.pdf` compiles the article.  :mod:`.text` makes any title,
statement, glossary or meaning compile (escaping, Unicode); :mod:`.bibliography` prints the article's references
from the shipped ``references.bib``; :mod:`.theorem_page` writes the documentation's theorem index from certificates.
"""

from ..kernel.proof import register_display
from .article import (
                      RULE_TEXT,
                      Front,
                      article_latex,
                      article_theorems,
                      describe,
                      front_from_docstring,
                      notation_rows,
                      rule_text,
                      theorem_display,
                      theorem_latex,
)
from .grouping import display_groups
from .package import PACKAGE, package_latex
from .pdf import TexError, compile_pdf, tex_engine
from .printer import PaperLatexPrinter, math
from .symbols import SymbolsError, macro_table, read_symbols

register_display(theorem_display)

__all__ = ["PACKAGE", "Front", "RULE_TEXT", "PaperLatexPrinter", "SymbolsError", "TexError", "article_latex",
           "article_theorems", "compile_pdf", "describe", "display_groups", "front_from_docstring", "macro_table",
           "math", "notation_rows", "package_latex", "read_symbols", "rule_text", "tex_engine", "theorem_display",
           "theorem_latex"]
