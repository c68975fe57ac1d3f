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

from sympy import Basic, Symbol
from sympy.matrices.expressions import BlockMatrix, MatrixSymbol

from ..kernel import Chain, Hypothesis, Theorem, is_issued
from .grouping import display_groups
from .printer import PaperLatexPrinter
from .symbols import macro_table, theorem_dimensions, theorem_symbols

__all__ = ["RULE_TEXT", "article_latex", "article_theorems", "describe", "notation_rows", "rule_text",
           "theorem_display", "theorem_latex"]

#: How each axiom is named beside a proof line: in words, never in letters a reader's matrices use.
RULE_TEXT = {
    "transpose_product": "transpose of a product",
    "transpose_transpose": "transpose of a transpose",
    "transpose_sum": "transpose of a sum",
    "transpose_symmetric": "symmetric matrix",
    "transpose_inverse": "transpose of an inverse",
    "transpose_zero": "transpose of zero",
    "inverse_product": "inverse of a product",
    "inverse_inverse": "inverse of an inverse",
    "inverse_cancel": "a matrix times its inverse",
    "power_combine": "product of powers",
    "identity_mul": "product with the identity",
    "zero_mul": "product with zero",
    "zero_add": "sum with zero",
    "collect": "collecting like terms",
    "distribute": "distributivity",
    "block_multiply": "block multiplication",
    "block_transpose": "block transpose",
    "block_single": "a single block",
}

_SPECIAL = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
            "%": r"\%", "_": " ", "^": r"\textasciicircum{}", "~": r"\textasciitilde{}"}


def _text(name: str) -> str:
    """A name as plain LaTeX text: underscores read as spaces, specials escaped."""
    return "".join(_SPECIAL.get(ch, ch) for ch in " ".join(str(name).split()))


def rule_text(rule: str) -> str:
    """How an axiom reads beside a proof line; an axiom without a description reads as its name in words."""
    return RULE_TEXT.get(rule) or f"rule {_text(rule)}"


def _label(theorem_id: str, lemma: str | None = None) -> str:
    return f"thm:{theorem_id}" if lemma is None else f"lem:{theorem_id}:{lemma}"


def _checked(theorem: Theorem) -> None:
    if not is_issued(theorem):
        raise TypeError("LaTeX is generated from checked theorems only (derive.kernel.check, unchanged since)")


@dataclass
class _Context:
    """What printing one theorem needs: the printer, and where lemmas already stated are (article-wide)."""

    theorem: Theorem
    printer: PaperLatexPrinter
    stated: dict = field(default_factory=dict)  # lemma statement key -> its label, shared by the article
    aliases: dict = field(default_factory=dict)  # this theorem's lemma name -> label of the same statement


BREAK = "\\olsbreak"  # where a long display may break: between the factors of an outermost product


def _printer(theorems: Sequence[Theorem], macros: bool, settings: Mapping) -> PaperLatexPrinter:
    """The printer of a fragment or the article: symbols as the package's macros, breakable displays."""
    settings = dict(settings)
    if macros:
        settings["symbol_names"] = {**macro_table(theorems), **(settings.get("symbol_names") or {})}
        settings.setdefault("breaks", BREAK)
    return PaperLatexPrinter(settings)


def _display(printer: PaperLatexPrinter, *terms: Basic, end: str = "") -> str:
    """A displayed statement ``a = b`` (breakable when the printer has breaks)."""
    text = " = ".join(printer.doprint_breakable(t) for t in terms) + end
    if printer._settings["breaks"] is None:
        return f"\\[ {text} \\]"
    return f"\\olsdisplay{{{text}}}"


# --- statements ---------------------------------------------------------------------


def _predicate(h: Hypothesis, printer: PaperLatexPrinter) -> tuple[str, str]:
    """(matrix, predicate in words) of a predicate hypothesis."""
    return printer.doprint(h.lhs.arguments[0]), h.lhs.function.name.replace("_", " ")


def _quantifier(h: Hypothesis, printer: PaperLatexPrinter) -> str:
    """``for every $A, T$ (of any sizes $r, s$)`` for a hypothesis that binds variables, else empty."""
    matrices = [printer.doprint(v) for v in h.forall if isinstance(v, MatrixSymbol)]
    dimensions = [printer.dimension(v) for v in h.forall if not isinstance(v, MatrixSymbol)]
    text = f"for every ${', '.join(matrices)}$" if matrices else ""
    if dimensions:
        text += f" (of any sizes ${', '.join(dimensions)}$)" if matrices else f"for every ${', '.join(dimensions)}$"
    return text


def _equation(h: Hypothesis, printer: PaperLatexPrinter) -> str:
    if h.is_predicate:
        matrix, name = _predicate(h, printer)
        return f"${matrix}$ is {name}"
    text = f"${printer.doprint(h.lhs)} = {printer.doprint(h.rhs)}$"
    if h.forall:
        text = f"{_quantifier(h, printer)}: {text}"
    return text


def _instance(instance: Sequence[tuple[Basic, Basic]], printer: PaperLatexPrinter) -> str:
    """``U = V, ...`` for the matrices a citation renames; the dimensions only when nothing else is renamed."""
    pairs = [(v, t) for v, t in instance if v != t]
    shown = [(v, t) for v, t in pairs if isinstance(v, MatrixSymbol)] or pairs
    return ", ".join(f"{printer.doprint(v)} = {printer.doprint(t)}" for v, t in shown)


def _rule_text(step, ctx: _Context) -> str:
    """The rule of one step in words (an unknown rule or name still prints, as its name)."""
    rule, printer, proof = step.rule, ctx.printer, ctx.theorem.proof
    kind, sep, name = rule.partition(":")
    if not sep:
        return rule_text(rule)
    if kind == "thm":
        pairs = _instance(step.instance, printer)
        return f"Theorem~\\ref{{{_label(name)}}}" + (f" with ${pairs}$" if pairs else "")
    if kind == "lemma":
        return f"Lemma~\\ref{{{ctx.aliases.get(name, _label(ctx.theorem.id, name))}}}"
    if kind == "def":
        definition = next((d for d in proof.definitions if d.name == name), None)
        return f"definition of ${printer.doprint(definition.symbol)}$" if definition else f"definition {_text(name)}"
    if kind == "hyp":
        hyps = list(proof.hypotheses) + [h for c in proof.lemmas for h in c.hypotheses]
        h = next((h for h in hyps if h.name == name), None)
        if h is None:
            return f"hypothesis {_text(name)}"
        pairs = _instance(step.instance, printer)
        return f"by the hypothesis, with ${pairs}$" if pairs else f"by {_equation(h, printer)}"
    return f"rule {_text(rule)}"


_TIMES = {2: "twice", 3: "three times"}


def _group_tag(steps, ctx: _Context) -> str:
    """The rules of a displayed line's steps in order, each once, with how often it was applied."""
    counts: dict[str, int] = {}
    for step in steps:
        text = _rule_text(step, ctx)
        counts[text] = counts.get(text, 0) + 1
    return "; ".join(text if n == 1 else f"{text}, {_TIMES.get(n, f'{n} times')}" for text, n in counts.items())


def _chain_latex(chain: Chain, ctx: _Context) -> str:
    """A proof chain: one displayed line per meaningful rewrite, its bookkeeping named on the same line."""
    printer = ctx.printer
    if not chain.steps:
        return _display(printer, chain.lhs, chain.rhs)
    groups = display_groups(chain)
    if printer._settings["breaks"] is None:  # plain LaTeX (no package): align*, one line per displayed group
        lines = [f"  {printer.doprint(chain.lhs) if i == 0 else ''} &= {printer.doprint(g.expr)} "
                 f"\\tag*{{\\small({_group_tag(g.steps, ctx)})}}" for i, g in enumerate(groups)]
        return "\\begin{align*}\n" + " \\\\\n".join(lines) + "\n\\end{align*}"
    lines = [f"\\begin{{olschain}}{{{printer.doprint_breakable(chain.lhs)}}}"]
    for group in groups:
        lines.append(f"\\olsstep{{{printer.doprint_breakable(group.expr)}}}{{{_group_tag(group.steps, ctx)}}}")
    lines.append("\\end{olschain}")
    return "\n".join(lines)


def _shapes(theorem: Theorem, printer: PaperLatexPrinter) -> str:
    items = [f"${printer.doprint(s)} \\in \\mathbb{{R}}^{{{printer.dimension(s.rows)} \\times "
             f"{printer.dimension(s.cols)}}}$" for s in theorem_symbols(theorem).values()]
    return ", ".join(items)


def _tall(*terms: Basic) -> bool:
    """Whether a term holds a block matrix (too tall for a line of text)."""
    return any(t.atoms(BlockMatrix) or isinstance(t, BlockMatrix) for t in terms)


def _items(verb: str, sep: str, items: list, printer: PaperLatexPrinter) -> str:
    """``Assume a; b.`` in the text; equations holding block matrices displayed after the others."""
    inline = [text for text, tall, _ in items if not tall]
    tall = [terms for _, is_tall, terms in items if is_tall]
    if not tall or printer._settings["breaks"] is None:
        return f"{verb} " + sep.join(text for text, _, _ in items) + "."
    shown = " \\olssep ".join((f"\\text{{{quantifier}:}}\\ " if quantifier else "")
                               + f"{printer.doprint(a)} = {printer.doprint(b)}" for a, b, quantifier in tall)
    head = f"{verb} " + sep.join(inline) + (sep.strip() + " and" if inline else "")
    return head + f"\n\\olsdisplay{{{shown}.}}"


def _lemma_key(lemma: Chain) -> tuple:
    """A lemma's statement as the kernel sees it (symbols with their shapes), for finding one stated twice."""
    return lemma.lhs, lemma.rhs, tuple((h.lhs, h.rhs, h.forall) for h in lemma.hypotheses)


def _theorem_latex(ctx: _Context) -> str:
    """The theorem, each new lemma with its proof, then the theorem's proof (each proof opens with "Proof")."""
    theorem, printer = ctx.theorem, ctx.printer
    proof = theorem.proof
    out = [f"\\begin{{theorem}}[{theorem.title}]\\label{{{_label(theorem.id)}}}"]
    out.append(f"Let {_shapes(theorem, printer)}.")
    if proof.hypotheses:
        out.append(_items("Assume", "; ", [(_equation(h, printer), not h.is_predicate and _tall(h.lhs, h.rhs),
                                           (h.lhs, h.rhs, _quantifier(h, printer) if h.forall else ""))
                                          for h in proof.hypotheses], printer))
    if proof.definitions:
        out.append(_items("Define", ", ", [(f"${printer.doprint(d.symbol)} = {printer.doprint(d.rhs)}$",
                                           _tall(d.rhs), (d.symbol, d.rhs, "")) for d in proof.definitions],
                          printer))
    out.append("Then")
    out.append(_display(printer, proof.claim.lhs, proof.claim.rhs, end="."))
    out.append("\\end{theorem}\n")
    again = []
    for lemma in proof.lemmas:
        key = _lemma_key(lemma)
        if key in ctx.stated:  # stated (and proved) earlier in the article: cite it, do not state it again
            ctx.aliases[lemma.name] = ctx.stated[key]
            again.append(ctx.stated[key])
            continue
        ctx.stated[key] = _label(theorem.id, lemma.name)
        header = f"\\begin{{lemma}}\\label{{{_label(theorem.id, lemma.name)}}}"
        header += (" If " + " and ".join(_equation(h, printer) for h in lemma.hypotheses) + ", then"
                   if lemma.hypotheses else "\\leavevmode")
        out.append(header)
        out.append(_display(printer, lemma.lhs, lemma.rhs, end="."))
        out.append("\\end{lemma}")
        out.append("\\begin{proof}")
        out.append(_chain_latex(lemma, ctx))
        out.append("\\end{proof}\n")
    fresh = len(proof.lemmas) > len(again)
    out.append(f"\\begin{{proof}}[Proof of Theorem~\\ref{{{_label(theorem.id)}}}]" if fresh else "\\begin{proof}")
    for label in dict.fromkeys(again):
        out.append(f"We use Lemma~\\ref{{{label}}} again.")
    out.append(_chain_latex(proof.claim, ctx))
    out.append("\\end{proof}\n")
    return "\n".join(line for line in out if line)


def _closure(theorem: Theorem) -> list[Theorem]:
    return article_theorems([theorem])


def theorem_latex(theorem: Theorem, macros: bool = True, **settings) -> str:
    """A theorem environment (statement from the checked data), each lemma with its proof, then the proof.

    This is the fragment ``derive latex`` writes as ``<id>.tex``; it needs the package
    (:func:`derive.latex.package_latex`, ``\\usepackage{olstransformer}``): its symbols are the package's
    macros (``\\olsX``) and its displays break to the text width.  With ``macros=False`` it prints plain
    symbols and ``align*`` chains, for a document without the package.  Each proof line is a meaningful
    rewrite with the bookkeeping steps it needs (products and sums with zero, identities), every rule named
    beside it.  The fragment labels itself ``thm:<id>`` (its lemmas ``lem:<id>:<name>``) and refers to each
    theorem it cites by ``\\ref{thm:<cited id>}``: those labels resolve only in a document that states the
    cited theorems too, as :func:`article_latex` does.  ``settings`` are :class:`PaperLatexPrinter` settings.
    """
    _checked(theorem)
    return _theorem_latex(_Context(theorem, _printer(_closure(theorem), macros, settings)))


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


def resolved_glossaries(glossaries: Mapping[str, Mapping[str, str]] | None = None) -> dict:
    """The registered theorems' glossaries, overridden per theorem by ``glossaries``."""
    return {**_registered_glossaries(), **(glossaries or {})}


def _cited_as(theorem: Theorem) -> dict[str, set]:
    """For each theorem ``theorem`` cites, the symbols of it that some citing step renames."""
    renamed: dict[str, set] = {}
    for chain in (*theorem.proof.lemmas, theorem.proof.claim):
        for step in chain.steps:
            if step.rule.startswith("thm:"):
                renamed.setdefault(step.rule[4:], set()).update(v for v, t in step.instance if v != t)
    return renamed


def _meaning(theorem: Theorem, sym: Basic, glossaries: Mapping[str, Mapping[str, str]], memo: dict) -> str | None:
    """What ``sym`` means in ``theorem``: its own glossary entry, else that of a cited theorem sharing the symbol.

    A cited theorem shares ``sym`` when it has the same symbol (name and shape; a dimension by name) and no
    citing step renames it.
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
                pool = (theorem_symbols(cited, bound_too=True) if isinstance(sym, MatrixSymbol)
                        else theorem_dimensions(cited))
                if sym in pool.values() and sym not in renamed.get(cited.id, ()):
                    meaning = _meaning(cited, sym, glossaries, memo)
                    if meaning:
                        memo[key] = meaning
                        break
    return memo[key]


def describe(theorem: Theorem, sym: Basic, printer: PaperLatexPrinter | None = None) -> str:
    """A description of a symbol no glossary describes, from what the theorem says of it.

    A defined symbol reads as its definition, a symbol a hypothesis binds as "any matrix ..." of its size, a
    dimension as a size of the theorem's matrices, any other matrix by its size.
    """
    printer = printer or PaperLatexPrinter()
    proof = theorem.proof
    if isinstance(sym, Symbol) and not isinstance(sym, MatrixSymbol):
        return "a dimension (a positive integer)"
    size = f"${printer.dimension(sym.rows)} \\times {printer.dimension(sym.cols)}$"
    for d in proof.definitions:
        if d.symbol == sym:
            return f"the {size} matrix ${printer.doprint(sym)} = {printer.doprint(d.rhs)}$"
    hyps = [*proof.hypotheses, *(h for c in proof.lemmas for h in c.hypotheses)]
    if any(sym in h.forall for h in hyps):
        return f"any {size} matrix (bound by a hypothesis)"
    if sym.cols == 1:
        return f"a vector in $\\mathbb{{R}}^{{{printer.doprint(sym.rows)}}}$"
    return f"a given {size} matrix"


def notation_rows(theorems: Sequence[Theorem], glossaries: Mapping[str, Mapping[str, str]],
                  printer: PaperLatexPrinter | None = None, dimensions: bool = False,
                  ) -> list[tuple[str, Basic, list[tuple[str, list[str]]]]]:
    """(name, symbol, [(description, ids of the theorems it applies in), ...]) for every symbol, by name.

    Every symbol has at least one description: the glossaries' (a theorem's own, or that of a cited theorem
    sharing the symbol); a symbol no glossary describes anywhere gets the one :func:`describe` derives from
    the theorems.  A symbol described alike everywhere has one.
    ``dimensions`` adds the dimension symbols (``n``, ``p``), before the matrices.
    """
    printer = printer or PaperLatexPrinter()
    symbols: dict[str, Basic] = {}
    meanings: dict[str, dict[str, list[str]]] = {}
    derived: dict[str, dict[str, list[str]]] = {}
    memo: dict = {}
    for kind in ("dimensions", "matrices") if dimensions else ("matrices",):
        for theorem in theorems:
            pool = theorem_dimensions(theorem) if kind == "dimensions" else theorem_symbols(theorem, bound_too=True)
            for name, sym in pool.items():
                symbols.setdefault(name, sym)
                found = meanings.setdefault(name, {})
                meaning = _meaning(theorem, sym, glossaries, memo)
                if meaning:
                    ids = found.setdefault(meaning, [])
                    if theorem.id not in ids:
                        ids.append(theorem.id)
                else:
                    derived.setdefault(name, {}).setdefault(describe(theorem, sym, printer), []).append(theorem.id)
    for name, found in meanings.items():
        if not found:  # no glossary describes the symbol anywhere: what the theorems say of it
            found.update(derived[name])
    dims = [n for n in symbols if not isinstance(symbols[n], MatrixSymbol)]
    mats = [n for n in symbols if isinstance(symbols[n], MatrixSymbol)]
    order = sorted(dims) + sorted(mats, key=lambda n: (n.lower(), n))
    return [(name, symbols[name], list(meanings[name].items())) for name in order]


def descriptions(theorems: Sequence[Theorem], glossaries: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """Symbol name -> its description(s) in one line (for the package's comments)."""
    rows = notation_rows(theorems, glossaries, dimensions=True)
    return {name: "; ".join(text for text, _ in meanings) for name, _, meanings in rows}


def _refs(ids: Sequence[str]) -> str:
    refs = [f"\\ref{{{_label(i)}}}" for i in ids]
    if len(refs) == 1:
        return f"Theorem~{refs[0]}"
    return "Theorems~" + ", ".join(refs[:-1]) + f" and {refs[-1]}"


PREAMBLE = r"""\documentclass[11pt]{article}
\usepackage[a4paper,margin=2cm]{geometry}
\usepackage{amsmath,amssymb,amsthm}
\title{Ordinary least squares is single-layer linear attention\\\large machine-checked theorems}
\author{generated by \texttt{derive} from kernel-checked proofs}
\date{}
"""


def _notation(theorems: Sequence[Theorem], glossaries: Mapping[str, Mapping[str, str]],
              printer: PaperLatexPrinter) -> str:
    rows = []
    for _name, sym, meanings in notation_rows(theorems, glossaries, printer, dimensions=True):
        symbol = f"${printer.doprint(sym)}$"
        if len(meanings) == 1:
            rows.append(f"{symbol} & {meanings[0][0]} \\\\")
            continue
        for index, (text, ids) in enumerate(meanings):
            rows.append(f"{symbol if index == 0 else ''} & {text} (in {_refs(ids)}) \\\\")
    return "\n".join([
        "\\section*{Notation}",
        "Products are matrix products; $A^{\\top}$ is the transpose, $I$ an identity and $0$ a zero matrix "
        "of the size the context needs. The OLS estimator is $\\hat{\\beta} = (X^{\\top}X)^{-1}X^{\\top}Y$, "
        "its predictions at queries $X_{q}$ are $X_{q}\\hat{\\beta}$, and $\\hat{Y} = HY$. "
        "Each proof line is one rewrite, named beside it; the bookkeeping it needs (products and sums with "
        "zero, products with the identity, transposes of zero, single blocks) is named on the same line, "
        "with how often it was applied. A line citing an earlier theorem says which of its symbols are "
        "renamed. A symbol that means different things in different theorems is listed once per meaning, "
        "with the theorems that meaning applies in.",
        "\\begin{center}\\begin{tabular}{lp{0.8\\textwidth}}",
        *rows,
        "\\end{tabular}\\end{center}",
    ])


def article_latex(theorems: Sequence[Theorem], glossaries: Mapping[str, Mapping[str, str]] | None = None,
                  macros: bool = True, **settings) -> str:
    """A standalone article: notation, then every theorem with its proof.

    Every theorem cited is stated before the first theorem citing it (added when missing, each once,
    see :func:`article_theorems`), so every ``\\ref`` resolves; a lemma whose statement an earlier
    theorem already stated is cited, not stated again.  ``glossaries`` maps a theorem id to its
    symbols' descriptions; it defaults to, and overrides per theorem, the registered theorems' glossaries.
    The preamble carries the package's definitions (:mod:`derive.latex.package`), so the file compiles on
    its own.  ``settings`` are :class:`PaperLatexPrinter` settings (``matrix_style`` styles the symbols).
    """
    from .package import package_body

    ordered = article_theorems(theorems)
    resolved = resolved_glossaries(glossaries)
    style = settings.get("matrix_style", "plain")
    printer = _printer(ordered, macros, settings)
    preamble = PREAMBLE
    if macros:
        body = package_body(ordered, style, descriptions=descriptions(ordered, resolved))
        preamble += "\\makeatletter\n" + body + "\\makeatother\n"
    else:
        preamble += "\\newtheorem{theorem}{Theorem}\n\\newtheorem{lemma}{Lemma}[theorem]\n"
    body = [preamble, "\\begin{document}", "\\maketitle", _notation(ordered, resolved, printer)]
    stated: dict = {}
    for theorem in ordered:
        body.append(f"\\section{{{theorem.title}}}")
        body.append(_theorem_latex(_Context(theorem, _printer(ordered, macros, settings), stated)))
    body.append("\\end{document}")
    return "\n\n".join(body) + "\n"
