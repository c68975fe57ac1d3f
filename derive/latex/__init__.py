"""LaTeX for checked theorems: the paper-notation printer, theorem fragments, the article and the PDF."""

from ..kernel.proof import register_display
from .pdf import TexError, compile_pdf, tex_engine
from .printer import (
    GLOSSARY,
    RULE_TEXT,
    PaperLatexPrinter,
    article_latex,
    math,
    theorem_display,
    theorem_latex,
)

register_display(theorem_display)

__all__ = ["GLOSSARY", "RULE_TEXT", "PaperLatexPrinter", "TexError", "article_latex", "compile_pdf", "math",
           "tex_engine", "theorem_display", "theorem_latex"]
