"""LaTeX for checked theorems: the paper-notation printer, theorem fragments, the article and the PDF.

:mod:`.printer` prints kernel terms in paper notation; :mod:`.article` turns checked theorems into
theorem fragments (which cite other theorems by ``\\ref{thm:ID}``), the Jupyter display and the
standalone article; :mod:`.pdf` compiles the article.
"""

from ..kernel.proof import register_display
from .article import RULE_TEXT, article_latex, article_theorems, notation_rows, theorem_display, theorem_latex
from .pdf import TexError, compile_pdf, tex_engine
from .printer import PaperLatexPrinter, math

register_display(theorem_display)

__all__ = ["RULE_TEXT", "PaperLatexPrinter", "TexError", "article_latex", "article_theorems", "compile_pdf", "math",
           "notation_rows", "tex_engine", "theorem_display", "theorem_latex"]
