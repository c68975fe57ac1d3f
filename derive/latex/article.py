"""Checked theorems in LaTeX: theorem fragments, the Jupyter display and the standalone article.

Only a :class:`~derive.kernel.Theorem` — never an unchecked proof — is printed: its statement from the
checked data, then its proof with one ``align*`` line per kernel step, each tagged with the rule the
kernel checked.  A step citing a checked theorem (rule ``thm:ID``) reads ``Theorem~\\ref{thm:ID}``,
followed by the instance when the citation renames symbols (``with $U = V$``).

A fragment (:func:`theorem_latex`, written as ``<id>.tex``) refers to the theorems it cites by
``\\ref{thm:ID}`` only; the labels are defined where those theorems are stated, so a document that
``\\input``s a fragment must state the cited theorems too.  :func:`article_latex` does: it adds every
cited theorem (transitively) before the first theorem citing it, each once.

The article's notation table takes each symbol's description from the theorems' own glossaries
(``@theorem(glossary=...)``, or the ``glossaries`` argument); a symbol described differently by
different theorems gets one line per meaning, naming the theorems it applies in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from sympy import Basic
from sympy.matrices.expressions import MatrixSymbol

from ..kernel import AXIOMS, Chain, Hypothesis, Theorem
from .printer import PaperLatexPrinter

__all__ = ["RULE_TEXT", "article_latex", "article_theorems", "notation_rows", "theorem_display", "theorem_latex"]

#: How each axiom is named beside a proof line.
RULE_TEXT = {
    "transpose_product": "transpose of a product",
    "transpose_transpose": r"$(A^{\top})^{\top} = A$",
    "transpose_sum": "transpose of a sum",
    "transpose_symmetric": "symmetric matrix",
    "transpose_inverse": r"$(A^{-1})^{\top} = (A^{\top})^{-1}$",
    "transpose_zero": "transpose of zero",
    "inverse_product": "inverse of a product",
    "inverse_inverse": r"$(A^{-1})^{-1} = A$",
    "inverse_cancel": r"$A^{-1} A = A A^{-1} = I$",
    "power_combine": r"$A^{a} A^{b} = A^{a+b}$",
    "identity_mul": r"$A I = I A = A$",
    "zero_mul": "product with zero",
    "zero_add": r"$A + 0 = A$",
    "distribute": "distributivity",
    "block_multiply": "block multiplication",
    "block_transpose": "block transpose",
    "block_single": "a single block",
}
assert set(RULE_TEXT) == set(AXIOMS), "every axiom needs a description"


def _label(theorem_id: str, lemma: str | None = None) -> str:
    return f"thm:{theorem_id}" if lemma is None else f"lem:{theorem_id}:{lemma}"


def _checked(theorem: Theorem) -> None:
    if not isinstance(theorem, Theorem):
        raise TypeError("LaTeX is generated from checked theorems only (derive.kernel.check)")


@dataclass
class _Context:
    """What printing one theorem needs: the printer, and where lemmas already stated are (article-wide)."""

    theorem: Theorem
    printer: PaperLatexPrinter
    stated: dict = field(default_factory=dict)  # lemma statement key -> its label, shared by the article
    aliases: dict = field(default_factory=dict)  # this theorem's lemma name -> label of the same statement


# --- statements ---------------------------------------------------------------------


def _predicate(h: Hypothesis, printer: PaperLatexPrinter) -> tuple[str, str]:
    """(matrix, predicate in words) of a predicate hypothesis."""
    return printer.doprint(h.lhs.arguments[0]), h.lhs.function.name.replace("_", " ")


def _equation(h: Hypothesis, printer: PaperLatexPrinter) -> str:
    if h.is_predicate:
        matrix, name = _predicate(h, printer)
        return f"${matrix}$ is {name}"
    text = f"${printer.doprint(h.lhs)} = {printer.doprint(h.rhs)}$"
    if h.forall:
        bound = ", ".join(printer.doprint(v) for v in h.forall if isinstance(v, MatrixSymbol))
        text = f"for every ${bound}$: {text}"
    return text


def _instance(instance: Sequence[tuple[Basic, Basic]], printer: PaperLatexPrinter) -> str:
    """``U = V, ...`` for the matrices a citation renames; the dimensions only when nothing else is renamed."""
    pairs = [(v, t) for v, t in instance if v != t]
    shown = [(v, t) for v, t in pairs if isinstance(v, MatrixSymbol)] or pairs
    return ", ".join(f"{printer.doprint(v)} = {printer.doprint(t)}" for v, t in shown)


def _rule_text(step, ctx: _Context) -> str:
    rule, printer, proof = step.rule, ctx.printer, ctx.theorem.proof
    if rule in RULE_TEXT:
        return RULE_TEXT[rule]
    kind, _, name = rule.partition(":")
    if kind == "thm":
        pairs = _instance(step.instance, printer)
        return f"Theorem~\\ref{{{_label(name)}}}" + (f" with ${pairs}$" if pairs else "")
    if kind == "lemma":
        return f"Lemma~\\ref{{{ctx.aliases.get(name, _label(ctx.theorem.id, name))}}}"
    if kind == "def":
        definition = next(d for d in proof.definitions if d.name == name)
        return f"definition of ${printer.doprint(definition.symbol)}$"
    hyps = list(proof.hypotheses) + [h for c in proof.lemmas for h in c.hypotheses]
    h = next(h for h in hyps if h.name == name)
    pairs = _instance(step.instance, printer)
    return f"by the hypothesis, with ${pairs}$" if pairs else f"by {_equation(h, printer)}"


_WIDE_LINE = 260  # characters of LaTeX beyond which a chain line would overflow the page


def _chain_latex(chain: Chain, ctx: _Context) -> str:
    printer = ctx.printer
    if not chain.steps:
        return f"\\[ {printer.doprint(chain.lhs)} = {printer.doprint(chain.rhs)} \\]"
    exprs = [printer.doprint(step.expr) for step in chain.steps]
    lhs = printer.doprint(chain.lhs)
    wide = max(len(e) for e in exprs) + len(lhs) > _WIDE_LINE  # then the left side gets a line of its own
    lines = [f"  & {lhs}"] if wide else []
    for index, (step, expr) in enumerate(zip(chain.steps, exprs, strict=True)):
        left = lhs if index == 0 and not wide else ""
        tag = _rule_text(step, ctx)
        lines.append(f"  {left} &{'{}' if wide else ''}= {expr} \\tag*{{\\small({tag})}}")
    return "\\begin{align*}\n" + " \\\\\n".join(lines) + "\n\\end{align*}"


def _statement_terms(theorem: Theorem) -> list[Basic]:
    proof = theorem.proof
    terms = [proof.claim.lhs, proof.claim.rhs] + [t for h in proof.hypotheses for t in (h.lhs, h.rhs)]
    terms += [t for d in proof.definitions for t in (d.symbol, d.rhs)]
    terms += [t for c in proof.lemmas for t in (c.lhs, c.rhs)]
    return terms


def _symbols(theorem: Theorem, bound_too: bool = False) -> dict[str, MatrixSymbol]:
    """The matrix symbols of a theorem's statement and lemmas by name, in order of appearance."""
    proof = theorem.proof
    hyps = [*proof.hypotheses, *(h for c in proof.lemmas for h in c.hypotheses)]
    bound = set() if bound_too else {v for h in hyps for v in h.forall}
    terms = _statement_terms(theorem)
    if bound_too:
        terms += [t for h in hyps for t in (h.lhs, h.rhs)]
    seen: dict[str, MatrixSymbol] = {}
    for term in terms:
        for sym in sorted(term.atoms(MatrixSymbol), key=lambda s: str(s.name)):
            if sym not in bound:
                seen.setdefault(str(sym.name), sym)
    return seen


def _shapes(theorem: Theorem, printer: PaperLatexPrinter) -> str:
    items = [f"${printer.doprint(s)} \\in \\mathbb{{R}}^{{{printer.doprint(s.rows)} \\times "
             f"{printer.doprint(s.cols)}}}$" for s in _symbols(theorem).values()]
    return ", ".join(items)


def _lemma_key(lemma: Chain) -> tuple:
    """A lemma's statement as the kernel sees it (symbols with their shapes), for finding one stated twice."""
    return lemma.lhs, lemma.rhs, tuple((h.lhs, h.rhs, h.forall) for h in lemma.hypotheses)


def _theorem_latex(ctx: _Context) -> str:
    theorem, printer = ctx.theorem, ctx.printer
    proof = theorem.proof
    out = [f"\\begin{{theorem}}[{theorem.title}]\\label{{{_label(theorem.id)}}}"]
    out.append(f"Let {_shapes(theorem, printer)}.")
    if proof.hypotheses:
        out.append("Assume " + "; ".join(_equation(h, printer) for h in proof.hypotheses) + ".")
    if proof.definitions:
        defs = ", ".join(f"${printer.doprint(d.symbol)} = {printer.doprint(d.rhs)}$" for d in proof.definitions)
        out.append(f"Define {defs}.")
    out.append(f"Then\n\\[ {printer.doprint(proof.claim.lhs)} = {printer.doprint(proof.claim.rhs)}. \\]")
    out.append("\\end{theorem}\n")
    out.append("\\begin{proof}")
    for lemma in proof.lemmas:
        key = _lemma_key(lemma)
        if key in ctx.stated:  # stated (and proved) earlier in the article: cite it, do not state it again
            ctx.aliases[lemma.name] = ctx.stated[key]
            out.append(f"We use Lemma~\\ref{{{ctx.stated[key]}}} again.")
            continue
        ctx.stated[key] = _label(theorem.id, lemma.name)
        header = f"\\begin{{lemma}}\\label{{{_label(theorem.id, lemma.name)}}}"
        if lemma.hypotheses:
            header += " If " + " and ".join(_equation(h, printer) for h in lemma.hypotheses) + ", then"
        out.append(header)
        out.append(f"\\[ {printer.doprint(lemma.lhs)} = {printer.doprint(lemma.rhs)}. \\]")
        out.append("\\end{lemma}")
        out.append(_chain_latex(lemma, ctx))
    out.append("For the claim:" if proof.lemmas else "")
    out.append(_chain_latex(proof.claim, ctx))
    out.append("\\end{proof}\n")
    return "\n".join(line for line in out if line)


def theorem_latex(theorem: Theorem, **settings) -> str:
    """A theorem environment (statement from the checked data) and its proof, one line per kernel step.

    This is the fragment ``derive latex`` writes as ``<id>.tex``.  It labels itself ``thm:<id>`` (its
    lemmas ``lem:<id>:<name>``) and refers to each theorem it cites by ``\\ref{thm:<cited id>}``: those
    labels resolve only in a document that states the cited theorems too, as :func:`article_latex` does.
    ``settings`` are :class:`PaperLatexPrinter` settings.
    """
    _checked(theorem)
    return _theorem_latex(_Context(theorem, PaperLatexPrinter(settings)))


def theorem_display(theorem: Theorem, **settings) -> str:
    """Math-mode summary for Jupyter (MathJax has no theorem environments): hypotheses, then the claim."""
    _checked(theorem)
    printer, proof = PaperLatexPrinter(settings), theorem.proof
    lines = [f"&\\textbf{{{theorem.title}}}\\ (\\text{{{len(proof.lemmas)} lemmas, {theorem.steps} checked steps}})"]
    for h in proof.hypotheses:
        if h.is_predicate:
            matrix, name = _predicate(h, printer)
            lines.append(f"&{matrix}\\ \\text{{{name}}}")
        else:
            lines.append(f"&{printer.doprint(h.lhs)} = {printer.doprint(h.rhs)}")
    for d in proof.definitions:
        lines.append(f"&{printer.doprint(d.symbol)} := {printer.doprint(d.rhs)}")
    lines.append(f"&\\implies {printer.doprint(proof.claim.lhs)} = {printer.doprint(proof.claim.rhs)}")
    return "$$\\begin{aligned}" + " \\\\ ".join(lines) + "\\end{aligned}$$"


# --- the article --------------------------------------------------------------------


def article_theorems(theorems: Iterable[Theorem]) -> list[Theorem]:
    """``theorems`` in order, each cited theorem (transitively) moved or added before its first citer, each once.

    Raises ``ValueError`` for two different theorems with the same id (their labels would clash).
    """
    out: list[Theorem] = []
    seen: dict[str, Theorem] = {}

    def visit(theorem: Theorem) -> None:
        _checked(theorem)
        if theorem.id in seen:
            if seen[theorem.id].digest != theorem.digest:
                raise ValueError(f"two different theorems named {theorem.id!r} cannot share an article")
            return
        seen[theorem.id] = theorem
        for cited in theorem.proof.cites:
            visit(cited)
        out.append(theorem)

    for theorem in theorems:
        visit(theorem)
    return out


def _registered_glossaries() -> dict[str, Mapping[str, str]]:
    """Each registered theorem's glossary (imported here, not at module level: the printer needs no library)."""
    from ..authoring.registry import entries

    return {theorem_id: item.glossary for theorem_id, item in entries().items()}


def _cited_as(theorem: Theorem) -> dict[str, set]:
    """For each theorem ``theorem`` cites, the symbols of it that some citing step renames."""
    renamed: dict[str, set] = {}
    for chain in (*theorem.proof.lemmas, theorem.proof.claim):
        for step in chain.steps:
            if step.rule.startswith("thm:"):
                renamed.setdefault(step.rule[4:], set()).update(v for v, t in step.instance if v != t)
    return renamed


def _meaning(theorem: Theorem, sym: MatrixSymbol, glossaries: Mapping[str, Mapping[str, str]],
             memo: dict) -> str | None:
    """What ``sym`` means in ``theorem``: its own glossary entry, else that of a cited theorem sharing the symbol.

    A cited theorem shares ``sym`` when it has the same symbol (name and shape) and no citing step renames it.
    """
    key = (theorem.id, sym)
    if key not in memo:
        memo[key] = None
        own = glossaries.get(theorem.id, {})
        if str(sym.name) in own:
            memo[key] = own[str(sym.name)]
        else:
            renamed = _cited_as(theorem)
            for cited in theorem.proof.cites:
                if sym in _symbols(cited, bound_too=True).values() and sym not in renamed.get(cited.id, ()):
                    meaning = _meaning(cited, sym, glossaries, memo)
                    if meaning:
                        memo[key] = meaning
                        break
    return memo[key]


def notation_rows(theorems: Sequence[Theorem], glossaries: Mapping[str, Mapping[str, str]]
                  ) -> list[tuple[str, MatrixSymbol, list[tuple[str, list[str]]]]]:
    """(name, symbol, [(description, ids of the theorems it applies in), ...]) for every symbol, by name.

    A symbol no theorem describes has no descriptions; one described alike everywhere has one.
    """
    symbols: dict[str, MatrixSymbol] = {}
    meanings: dict[str, dict[str, list[str]]] = {}
    memo: dict = {}
    for theorem in theorems:
        for name, sym in _symbols(theorem, bound_too=True).items():
            symbols.setdefault(name, sym)
            found = meanings.setdefault(name, {})
            meaning = _meaning(theorem, sym, glossaries, memo)
            if meaning:
                ids = found.setdefault(meaning, [])
                if theorem.id not in ids:
                    ids.append(theorem.id)
    order = sorted(symbols, key=lambda n: (n.lower(), n))
    return [(name, symbols[name], list(meanings[name].items())) for name in order]


def _refs(ids: Sequence[str]) -> str:
    refs = [f"\\ref{{{_label(i)}}}" for i in ids]
    if len(refs) == 1:
        return f"Theorem~{refs[0]}"
    return "Theorems~" + ", ".join(refs[:-1]) + f" and {refs[-1]}"


PREAMBLE = r"""\documentclass[11pt]{article}
\usepackage[a4paper,margin=2cm]{geometry}
\usepackage{amsmath,amssymb,amsthm}
\allowdisplaybreaks
\newtheorem{theorem}{Theorem}
\newtheorem{lemma}{Lemma}[theorem]
\title{Ordinary least squares is single-layer linear attention\\\large machine-checked theorems}
\author{generated by \texttt{derive} from kernel-checked proofs}
\date{}
"""


def _notation(theorems: Sequence[Theorem], glossaries: Mapping[str, Mapping[str, str]],
              printer: PaperLatexPrinter) -> str:
    rows = []
    for _name, sym, meanings in notation_rows(theorems, glossaries):
        symbol = f"${printer.doprint(sym)}$"
        if len(meanings) <= 1:
            rows.append(f"{symbol} & {meanings[0][0] if meanings else ''} \\\\")
            continue
        for index, (text, ids) in enumerate(meanings):
            rows.append(f"{symbol if index == 0 else ''} & {text} (in {_refs(ids)}) \\\\")
    return "\n".join([
        "\\section*{Notation}",
        "Products are matrix products; $A^{\\top}$ is the transpose, $I$ an identity and $0$ a zero matrix "
        "of the size the context needs. The OLS estimator is $\\hat{\\beta} = (X^{\\top}X)^{-1}X^{\\top}Y$, "
        "its predictions at queries $X_{q}$ are $X_{q}\\hat{\\beta}$, and $\\hat{Y} = HY$. "
        "Each proof line names the rule the kernel checked for that step; a line citing an earlier theorem "
        "says which of its symbols are renamed. A symbol that means different things in different theorems "
        "is listed once per meaning, with the theorems that meaning applies in.",
        "\\begin{center}\\begin{tabular}{lp{0.8\\textwidth}}",
        *rows,
        "\\end{tabular}\\end{center}",
    ])


def article_latex(theorems: Sequence[Theorem], glossaries: Mapping[str, Mapping[str, str]] | None = None,
                  **settings) -> str:
    """A standalone article: notation, then every theorem with its proof.

    Every theorem cited is stated before the first theorem citing it (added when missing, each once,
    see :func:`article_theorems`), so every ``\\ref`` resolves; a lemma whose statement an earlier
    theorem already stated is cited, not stated again.  ``glossaries`` maps a theorem id to its
    symbols' descriptions; it defaults to, and overrides per theorem, the registered theorems' glossaries.
    ``settings`` are :class:`PaperLatexPrinter` settings.
    """
    ordered = article_theorems(theorems)
    resolved = {**_registered_glossaries(), **(glossaries or {})}
    printer = PaperLatexPrinter(settings)
    body = [PREAMBLE, "\\begin{document}", "\\maketitle", _notation(ordered, resolved, printer)]
    stated: dict = {}
    for theorem in ordered:
        body.append(f"\\section{{{theorem.title}}}")
        body.append(_theorem_latex(_Context(theorem, PaperLatexPrinter(settings), stated)))
    body.append("\\end{document}")
    return "\n\n".join(body) + "\n"
