"""LaTeX of the extended kernel language: scalars, 1×1 matrices read as scalars, families, recurrences, induction
proofs, and block matrices that break across lines.

The small pieces are checked as exact LaTeX; the theorems (two attention heads on a block split, the Gram
matrix of a stacked row, the inverse of a scaled block-diagonal matrix, a rank-one update with a 1×1 scalar,
a gradient step with a step size, the fast-weight memory by induction, and the library's token form) are
compiled in ``amsart`` and ``article`` papers and as the standalone article, and no box may be overfull by more
than 2 pt.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sympy import Q, Rational, Trace
from sympy.matrices.expressions import Identity, MatrixSymbol, ZeroMatrix

from derive import (
    ProofBuilder,
    add,
    block,
    check,
    dim,
    family,
    index,
    inv,
    mul,
    predicate,
    scalar,
    transpose,
)
from derive.authoring.registry import checked
from derive.latex import (
    PaperLatexPrinter,
    article_latex,
    article_theorems,
    display_groups,
    math,
    notation_rows,
    package_latex,
    rule_text,
    theorem_display,
    theorem_latex,
)
from derive.latex.article import _printer as printer_for
from derive.latex.grouping import BOOKKEEPING
from derive.latex.symbols import macro_table, parse_symbols

ROOT = Path(__file__).resolve().parents[1]
n, p, k, m, d = dim("n"), dim("p"), dim("k"), dim("m"), dim("d")
p1, p2 = dim("p_1"), dim("p_2")
t = index("t")
lam, eta = scalar("lambda", positive=True), scalar("eta")
A, D = MatrixSymbol("A", p, p), MatrixSymbol("D", k, k)
u, v = MatrixSymbol("u", p, 1), MatrixSymbol("v", p, 1)
X, Y = MatrixSymbol("X", n, p), MatrixSymbol("Y", n, k)


# --- small pieces: exact LaTeX ------------------------------------------------------------


def test_scalars_print_as_themselves():
    B = MatrixSymbol("B", p, p)
    assert math(mul(lam, A)) == r"\lambda A"
    assert math(mul(eta, A)) == r"\eta A"
    assert math(mul(scalar("lam", positive=True), A)) == r"\lambda A"  # a short name spelled out
    assert math(mul(scalar("sig_1"), A)) == r"\sigma_{1} A"
    assert math(mul(1 / lam, A)) == r"\frac{1}{\lambda} A"
    assert math(mul(1 / (lam + 1), A)) == r"\frac{1}{\lambda + 1} A"
    assert math(mul(lam / (2 * (lam + 1)), A)) == r"\frac{\lambda}{2 (\lambda + 1)} A"
    assert math(mul(lam + 1, A)) == r"(\lambda + 1) A"
    assert math(mul(1 - lam, A)) == r"(1 - \lambda) A"
    assert math(mul(-lam - 1, A)) == r"-(\lambda + 1) A"
    assert math(mul(eta**2, A)) == r"\eta^{2} A"
    assert math(add(A, mul(-eta, B))) == r"A - \eta B"  # a negative coefficient is a subtraction
    assert math(add(A, mul(Rational(-1, 2) * eta, B))) == r"A - \frac{\eta}{2} B"
    assert math(add(A, mul(-1 / lam, B))) == r"A - \frac{1}{\lambda} B"


def test_a_one_by_one_matrix_prints_as_the_scalar_it_holds():
    w = add(Identity(1), mul(transpose(v), inv(A), u))
    assert math(Identity(1)) == "1" and math(Identity(1), dimensions=True) == "1"
    assert math(ZeroMatrix(1, 1)) == "0" and math(ZeroMatrix(1, 1), dimensions=True) == "0"
    assert math(w) == r"1 + v^{\top} A^{-1} u"  # the 1×1 identity first, as the scalar 1
    assert math(mul(inv(w), A)) == r"(1 + v^{\top} A^{-1} u)^{-1} A"  # Trace(s) in front of a product
    assert math(mul(u, inv(w), transpose(v))) == r"u (1 + v^{\top} A^{-1} u)^{-1} v^{\top}"  # a factor
    assert math(mul(lam * Trace(mul(transpose(v), u)), A)) == r"\lambda (v^{\top} u) A"
    assert math(mul(1 / Trace(w), A)) == r"\frac{1}{1 + v^{\top} A^{-1} u} A"
    assert math(mul(u, Identity(1), transpose(v))) == r"u \cdot 1 \cdot v^{\top}"


def test_family_members_print_with_their_index():
    x = family("x", (p, 1))
    X_q = family("X_q", lambda s: (s, p))
    assert math(x[t + 1]) == "x_{t+1}"
    assert math(transpose(x[t + 1])) == r"x_{t+1}^{\top}"
    assert math(x[0]) == "x_{0}" and math(x[t]) == "x_{t}"
    assert math(X_q[t]) == "X_{q,t}" and math(X_q[t + 2]) == "X_{q,t+2}"
    assert math(x[t], matrix_style="bold") == r"\mathbf{x}_{t}"
    macros = PaperLatexPrinter({"symbol_names": {"t": r"\olst"}, "family_names": {"x": r"\olsx"}})
    assert macros.doprint(x[t + 1]) == r"\olsx_{\olst+1}"  # a family's macro is its letter


def test_block_matrices_of_a_display_may_narrow_and_break():
    L1, L2 = MatrixSymbol("L_1", p, p), MatrixSymbol("L_2", k, k)
    wide = block([[mul(A, A), ZeroMatrix(p, k)], [ZeroMatrix(k, p), L2]])
    pr = printer_for([], True, {})
    assert pr.doprint_breakable(wide) == r"\olsblocks{1}{\olscell{A \olsbreak A} & 0 \\ \olscell{0} & L_{2}}"
    assert pr.doprint(wide) == r"\begin{bmatrix}A A & 0 \\ 0 & L_{2}\end{bmatrix}"  # inline: as written
    simple = block([[L1, ZeroMatrix(p, k)]])
    assert pr.doprint_breakable(transpose(mul(simple, block([[L1], [ZeroMatrix(k, p)]])))) == (
        r"\olsparen{\begin{bmatrix}L_{1} & 0\end{bmatrix} \olsbreak \begin{bmatrix}L_{1} \\ 0\end{bmatrix}}^{\top}")
    assert math(transpose(mul(simple, transpose(simple)))) == (  # without the package: stretchy parentheses, no breaks
        r"\left(\begin{bmatrix}L_{1} & 0\end{bmatrix} \begin{bmatrix}L_{1} & 0\end{bmatrix}^{\top}\right)^{\top}")


# --- theorems with blocks, scalars and families -----------------------------------------------


def two_heads():
    """Two heads on a block split: X = [X₁ X₂], L = diag(L₁, L₂), then (X_q L)(X L)ᵀ Y is the sum of the heads."""
    X1, X2 = MatrixSymbol("X_1", n, p1), MatrixSymbol("X_2", n, p2)
    Xq1, Xq2 = MatrixSymbol("X_q1", m, p1), MatrixSymbol("X_q2", m, p2)
    L1, L2 = MatrixSymbol("L_1", p1, p1), MatrixSymbol("L_2", p2, p2)
    Xb, Xqb = block([[X1, X2, Y]]), block([[Xq1, Xq2, ZeroMatrix(m, k)]])
    zero = ZeroMatrix
    W = block([[L1, zero(p1, p2), zero(p1, k)], [zero(p2, p1), L2, zero(p2, k)],
               [zero(k, p1), zero(k, p2), zero(k, k)]])
    W_V = block([[zero(p1, p1), zero(p1, p2), zero(p1, k)], [zero(p2, p1), zero(p2, p2), zero(p2, k)],
                 [zero(k, p1), zero(k, p2), Identity(k)]])
    heads = add(mul(Xq1, L1, transpose(L1), transpose(X1), Y), mul(Xq2, L2, transpose(L2), transpose(X2), Y))
    b = ProofBuilder("two_heads", "Two heads on a block split", "The heads' outputs add up in the label slot.")
    b.main(mul(Xqb, W, transpose(mul(Xb, W)), Xb, W_V)).auto(block([[zero(m, p1), zero(m, p2), heads]]), timeout=60)
    return check(b.proof())


def stacked_gram():
    """The Gram matrix of X with a row xᵀ appended: [X; xᵀ]ᵀ[X; xᵀ] = XᵀX + xxᵀ."""
    x = MatrixSymbol("x", p, 1)
    stacked = block([[X], [transpose(x)]])
    b = ProofBuilder("stacked_gram", "The Gram matrix of a stacked row", "")
    b.main(mul(transpose(stacked), stacked)).auto(add(mul(transpose(X), X), mul(x, transpose(x))))
    return check(b.proof())


def scaled_block_inverse():
    """(λ diag(A, D))⁻¹ = diag(λ⁻¹A⁻¹, λ⁻¹D⁻¹)."""
    diagonal = block([[A, ZeroMatrix(p, k)], [ZeroMatrix(k, p), D]])
    b = ProofBuilder("scaled_block_inverse", "The inverse of a scaled block-diagonal matrix", "",
                     [predicate("A_invertible", Q.invertible, A), predicate("D_invertible", Q.invertible, D)])
    inverse = block([[mul(1 / lam, inv(A)), ZeroMatrix(p, k)], [ZeroMatrix(k, p), mul(1 / lam, inv(D))]])
    b.main(inv(mul(lam, diagonal))).auto(inverse)
    return check(b.proof())


def rank_one():
    """(1 + vᵀA⁻¹u)⁻¹ (A + uvᵀ) A⁻¹ u vᵀ = u vᵀ: a 1×1 matrix read as the scalar in front of a product."""
    w = add(Identity(1), mul(transpose(v), inv(A), u))
    b = ProofBuilder("rank_one", "A rank-one update", "",
                     [predicate("A_invertible", Q.invertible, A), predicate("w_invertible", Q.invertible, w)])
    b.lemma("update", mul(add(A, mul(u, transpose(v))), inv(A), u)).auto(mul(u, w))
    (b.main(mul(inv(w), add(A, mul(u, transpose(v))), inv(A), u, transpose(v))).rw("lemma:update")
     .to(mul(u, w, inv(w), transpose(v)), "scalar_matrix").rw("inverse_cancel").rw("identity_mul")
     .qed(mul(u, transpose(v))))
    return check(b.proof())


def gradient_step():
    """β - η Xᵀ(Xβ - Y) = (I - η XᵀX) β + η XᵀY."""
    beta = MatrixSymbol("beta", p, k)
    b = ProofBuilder("gradient_step", "A gradient step", "")
    lhs = add(beta, mul(-eta, transpose(X), add(mul(X, beta), mul(-1, Y))))
    b.main(lhs).auto(add(mul(add(Identity(p), mul(-eta, transpose(X), X)), beta), mul(eta, transpose(X), Y)))
    return check(b.proof())


def fast_weights():
    """S₀ = 0, S_{t+1} = S_t + v_{t+1} k_{t+1}ᵀ equals V_tᵀ K_t for every t (V_t, K_t stack the first t)."""
    dk = dim("d_k")
    values, keys = family("v", (d, 1)), family("kappa", (dk, 1))
    S = family("S", (d, dk))
    S.recurrence(ZeroMatrix(d, dk), lambda s: add(S[s], mul(values[s + 1], transpose(keys[s + 1]))))
    V = family("V", lambda s: (s, d))
    V.recurrence(ZeroMatrix(0, d), lambda s: block([[V[s]], [transpose(values[s + 1])]]))
    K = family("K", lambda s: (s, dk))
    K.recurrence(ZeroMatrix(0, dk), lambda s: block([[K[s]], [transpose(keys[s + 1])]]))
    b = ProofBuilder("fast_weights", "The fast-weight memory", "S_t = V_tᵀ K_t",
                     families=[values, keys, S, V, K])
    b.induction("memory_sum", t, S[t], mul(transpose(V[t]), K[t])).auto()
    b.main(S[t + 1]).rw("lemma:memory_sum", instance=((t, t + 1),)).qed(mul(transpose(V[t + 1]), K[t + 1]))
    return check(b.proof())


BUILDERS = (two_heads, stacked_gram, scaled_block_inverse, rank_one, gradient_step, fast_weights)


@pytest.fixture(scope="module")
def theorems():
    return {builder.__name__: builder() for builder in BUILDERS}


def test_the_block_proofs_use_the_block_rules(theorems):
    rules = {step.rule for theorem in theorems.values() for chain in (*theorem.proof.lemmas, theorem.proof.claim)
             for step in chain.steps}
    assert {"block_multiply", "block_transpose", "block_scale", "block_inverse_diagonal", "scalar_matrix",
            "base:S", "step:V", "hyp:IH"} <= rules


def test_free_families_and_recurrences_are_stated(theorems):
    text = theorem_latex(theorems["fast_weights"])
    assert (r"Let $\olsv_{1}, \olsv_{2}, \ldots \in \mathbb{R}^{\olsd \times 1}$ and "
            r"$\olskappa_{1}, \olskappa_{2}, \ldots \in \mathbb{R}^{\olsdk \times 1}$ be any sequences of "
            "matrices.") in text
    assert (r"Define $\olsS_{s} \in \mathbb{R}^{\olsd \times \olsdk}$ by $\olsS_{0} = 0$ and "
            r"$\olsS_{s+1} = \olsv_{s+1} \olskappa_{s+1}^{\top} + \olsS_{s}$,\olsnext\ and") in text
    # a recurrence holding blocks is displayed, with the shape that depends on the index
    assert (r"\text{$\olsV_{s} \in \mathbb{R}^{s \times \olsd}$:}\ \olsV_{0} = 0 \olssep "
            r"\olsV_{s+1} = \begin{bmatrix}\olsV_{s} \\ \olsv_{s+1}^{\top}\end{bmatrix}") in text


def test_an_induction_proof_reads_by_induction(theorems):
    text = theorem_latex(theorems["fast_weights"])
    assert (r"\begin{lemma}\label{lem:fast_weights:memory_sum} For every $\olst$,"
            "\n" r"\olsdisplay{\olsS_{\olst} = \olsV_{\olst}^{\top} \olsbreak \olsK_{\olst}.}") in text
    assert "By induction on $\\olst$. For $\\olst = 0$:\n\\begin{olschain}{\\olsS_{0}}" in text
    assert (r"If $\olsS_{\olst} = \olsV_{\olst}^{\top} \olsK_{\olst}$ (the induction hypothesis), then for "
            r"$\olst + 1$:" "\n" r"\begin{olschain}{\olsS_{\olst+1}}") in text
    assert r"{definition of $\olsS_{0}$}" in text and r"recurrence of $\olsV$}" in text
    assert "{induction hypothesis}" in text
    assert r"{Lemma~\ref{lem:fast_weights:memory_sum} with $\olst + 1$ for $\olst$}" in text
    lemma = theorems["fast_weights"].proof.lemmas[0]
    assert text.count(r"\olsstep") == len(display_groups(_chain(lemma.base, lemma, 0))) + len(
        display_groups(_chain(lemma.step, lemma, t + 1))) + 1


def _chain(steps, lemma, value):
    from derive.kernel import Chain
    from derive.kernel.terms import canon

    return Chain("c", canon(lemma.lhs.xreplace({t: value})), canon(lemma.rhs.xreplace({t: value})), steps)


def test_new_rules_are_named_in_words():
    assert rule_text("block_inverse_diagonal") == "inverse of a block-diagonal matrix"
    assert rule_text("scalar_matrix") == "a 1-by-1 matrix is a scalar"
    assert rule_text("block_add") == "block sum" and rule_text("block_scale") == "scaling a block matrix"
    assert rule_text("inverse_identity") == "inverse of the identity"
    assert {"block_zero", "block_identity", "inverse_identity", "scalar_matrix"} <= BOOKKEEPING
    assert not {"block_add", "block_scale", "block_inverse_diagonal"} & BOOKKEEPING


def test_scalars_and_one_by_one_matrices_in_proofs(theorems):
    text = theorem_latex(theorems["scaled_block_inverse"])
    assert r"\olsstep{\frac{1}{\olslambda} \begin{bmatrix}\olsA & 0 \\ 0 & \olsD\end{bmatrix}^{-1}}" in text
    assert r"\olsparen{\olslambda \begin{bmatrix}\olsA & 0 \\ 0 & \olsD\end{bmatrix}}^{-1}" in text
    rank = theorem_latex(theorems["rank_one"])
    assert r"\olsdisplay{(1 + \olsv^{\top} \olsA^{-1} \olsu)^{-1} (\olsu \olsv^{\top} + \olsA) \olsbreak" in rank
    assert r"$1 + \olsv^{\top} \olsA^{-1} \olsu$ is invertible" in rank
    step = theorem_latex(theorems["gradient_step"])
    assert r"\olseta" in step and r"- \olseta \olsX^{\top}" in step


def test_scalars_indices_and_families_get_macros_and_glossary_lines(theorems):
    ordered = list(theorems.values())
    table = macro_table(ordered)
    assert table["lambda"] == r"\olslambda" and table["eta"] == r"\olseta" and table["t"] == r"\olst"
    assert table["S"] == r"\olsS" and table["kappa"] == r"\olskappa" and "s" not in table  # s is bound
    sty = package_latex(ordered)
    assert r"\providecommand{\olslambda}{\lambda}" in sty and r"\providecommand{\olseta}{\eta}" in sty
    assert r"\providecommand{\olskappa}{\kappa}% kappa" in sty and r"\providecommand{\olsS}{S}% S" in sty
    rows = {name: meanings for name, _, meanings in notation_rows(ordered, {}, dimensions=True)}
    assert rows["lambda"] == [("a positive scalar", ["scaled_block_inverse"])]
    assert rows["eta"] == [("a real scalar", ["gradient_step"])]
    assert rows["t"] == [("an index (a natural number)", ["fast_weights"])]
    assert rows["v[]"][0][0] == "a sequence of vectors in $\\mathbb{R}^{d}$"  # the family v beside the vector v
    assert rows["v"][0][0] == "a vector in $\\mathbb{R}^{p}$"
    assert rows["S"][0][0] == ("the $d \\times d_{k}$ matrices with $S_{0} = 0$ and "
                               "$S_{s+1} = v_{s+1} \\kappa_{s+1}^{\\top} + S_{s}$")
    assert rows["V"][0][0] == "the $s \\times d$ matrices defined by a recurrence"
    table_text = article_latex(ordered)
    assert r"$\olsS_{s}$ & the $\olsd \times \olsdk$ matrices with $\olsS_{0} = 0$" in table_text
    assert "A scalar multiplies a matrix entry by entry" in table_text and "A family $x_0, x_1" in table_text


def test_the_symbols_file_renames_scalars_and_families(theorems):
    ordered = list(theorems.values())
    mapping = parse_symbols("lambda = \\ell\nS = \\mathcal{S}\n", macro_table(ordered))
    sty = package_latex(ordered, symbols=mapping)
    assert r"\providecommand{\olslambda}{\ell}" in sty and r"\providecommand{\olsS}{\mathcal{S}}" in sty
    assert r"\olsS_{\olst+1}" in theorem_latex(theorems["fast_weights"])  # the fragment keeps the macro


def test_a_family_named_like_another_symbol_has_no_macro():
    x = family("k", (k, 1))  # the family k beside the dimension k
    b = ProofBuilder("keys", "Keys", "", families=[x])
    gram = mul(transpose(x[t]), x[t])
    b.main(transpose(transpose(gram))).rw("transpose_transpose").qed(gram)  # a claim that states something
    theorem = check(b.proof())
    assert macro_table([theorem])["k"] == r"\olsk"  # the dimension's
    text = theorem_latex(theorem)
    assert r"$k_{0}, k_{1}, \ldots \in \mathbb{R}^{\olsk \times 1}$" in text  # the family's plain letter
    rows = [name for name, _, _ in notation_rows([theorem], {}, dimensions=True)]
    assert rows == ["k", "t", "k[]"]


def test_a_free_family_whose_shape_depends_on_the_index():
    Xs = family("X_q", lambda s: (s, p))
    b = ProofBuilder("prefix", "Prefixes", "", families=[Xs])
    gram = mul(transpose(Xs[t]), Xs[t])
    b.main(transpose(transpose(gram))).rw("transpose_transpose").qed(gram)
    text = theorem_latex(check(b.proof()))
    assert r"Let $\olsXq_{q,s} \in \mathbb{R}^{s \times \olsp}$ ($s = 0, 1, \ldots$) be any sequence" in text


def test_jupyter_display_shows_recurrences(theorems):
    shown = theorem_display(theorems["fast_weights"])
    assert r"&S_{0} = 0,\quad S_{s+1} = v_{s+1} \kappa_{s+1}^{\top} + S_{s}" in shown
    assert r"\implies S_{t+1} = V_{t+1}^{\top} K_{t+1}" in shown


def test_the_output_is_deterministic(theorems):
    ordered, again = list(theorems.values()), [builder() for builder in BUILDERS]  # checked anew
    assert article_latex(ordered) == article_latex(again)
    assert package_latex(ordered) == package_latex(again)
    assert [theorem_latex(t) for t in ordered] == [theorem_latex(t) for t in again]


# --- no overfull boxes ----------------------------------------------------------------------

needs_tex = pytest.mark.skipif(shutil.which("pdflatex") is None, reason="TeX Live is installed by .ci/run")


def _compile(directory: Path, name: str) -> str:
    for _ in range(2):  # twice: references
        subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", name], cwd=directory,
                       capture_output=True, text=True, timeout=300)
    return (directory / name).with_suffix(".log").read_text(errors="replace")


def overfull(log: str) -> list[float]:
    """How far each overfull line of a TeX log runs into the margin, in pt."""
    return [float(w) for w in re.findall(r"Overfull \\hbox \(([\d.]+)pt too wide", log)]


def _problems(log: str) -> list[str]:
    problems = [line for line in log.splitlines() if line.startswith("!")]
    problems += [line for line in log.splitlines() if "undefined" in line.lower()]
    return problems + [f"overfull {w} pt" for w in overfull(log) if w > 2]


def _all(theorems) -> list:
    return article_theorems([*theorems.values(), checked("icl_token_form")])


@needs_tex
@pytest.mark.parametrize("documentclass", ["{amsart}", "{article}", "[twocolumn]{article}"])
def test_block_scalar_and_induction_fragments_fit_a_users_paper(tmp_path, theorems, documentclass):
    ordered = _all(theorems)
    (tmp_path / "olstransformer.sty").write_text(package_latex(ordered))
    for theorem in ordered:
        (tmp_path / f"{theorem.id}.tex").write_text(theorem_latex(theorem) + "\n")
    body = "\n".join(f"\\input{{{theorem.id}.tex}}" for theorem in ordered)
    (tmp_path / "paper.tex").write_text(f"\\documentclass{documentclass}\n\\usepackage{{olstransformer}}\n"
                                        f"\\begin{{document}}\n\\section{{Results}}\n{body}\n\\end{{document}}\n")
    log = _compile(tmp_path, "paper.tex")
    assert (tmp_path / "paper.pdf").exists() and _problems(log) == []


@needs_tex
def test_the_article_with_block_scalar_and_induction_theorems_compiles_cleanly(tmp_path, theorems):
    (tmp_path / "article.tex").write_text(article_latex(_all(theorems)))
    log = _compile(tmp_path, "article.tex")
    assert _problems(log) == [] and overfull(log) == []
    text = subprocess.run(["pdftotext", str(tmp_path / "article.pdf"), "-"], capture_output=True, text=True).stdout
    flat = " ".join(text.split())
    assert "By induction on t. For t = 0:" in flat and "(the induction hypothesis), then for t + 1:" in flat
    assert "inverse of a block-diagonal matrix" in flat and "a 1-by-1 matrix is a scalar" in flat


USER_LIBRARY = '''
from sympy import ZeroMatrix
from derive import ProofBuilder, add, block, dim, family, index, mul, scalar, theorem, transpose

d, k = dim("d"), dim("k")
t = index("t")
gamma = scalar("gamma", positive=True)


@theorem(glossary={"W": "the memory", "x": "the inputs", "gamma": "the write strength"})
def scaled_memory():
    x = family("x", (d, 1))
    W = family("W", (d, d))
    W.recurrence(ZeroMatrix(d, d), lambda s: add(W[s], mul(gamma, x[s + 1], transpose(x[s + 1]))))
    X = family("X", lambda s: (s, d))
    X.recurrence(ZeroMatrix(0, d), lambda s: block([[X[s]], [transpose(x[s + 1])]]))
    b = ProofBuilder("scaled_memory", "A scaled memory", "W_t = gamma X_t^T X_t", families=[x, W, X])
    b.induction("memory", t, W[t], mul(gamma, transpose(X[t]), X[t])).auto()
    b.main(W[t]).auto(mul(gamma, transpose(X[t]), X[t]))
    return b.proof()
'''


@needs_tex
def test_derive_latex_prints_a_users_scalar_and_family_theorem(tmp_path):
    """The command line end to end: a user's library with a scalar and families, a --symbols file renaming
    both, and the fragment in a paper without overfull boxes."""
    library, symbols, out = tmp_path / "memory.py", tmp_path / "symbols.txt", tmp_path / "tex"
    library.write_text(USER_LIBRARY)
    symbols.write_text("gamma = \\alpha\nx = \\mathbf{x}\n")
    result = subprocess.run([sys.executable, "-m", "derive", "latex", "scaled_memory", "--library", str(library),
                             "--symbols", str(symbols), "--out", str(out)], capture_output=True, text=True,
                            cwd=ROOT)
    assert result.returncode == 0, result.stderr
    sty = (out / "olstransformer.sty").read_text()
    assert r"\providecommand{\olsgamma}{\alpha}% gamma: the write strength" in sty
    assert r"\providecommand{\olsx}{\mathbf{x}}% x: the inputs" in sty
    fragment = (out / "scaled_memory.tex").read_text()
    assert r"\olsgamma \olsx_{s+1} \olsx_{s+1}^{\top}" in fragment and "By induction on $\\olst$" in fragment
    (out / "paper.tex").write_text("\\documentclass{amsart}\n\\usepackage{olstransformer}\n\\begin{document}\n"
                                   "\\input{scaled_memory.tex}\n\\end{document}\n")
    assert _problems(_compile(out, "paper.tex")) == []
