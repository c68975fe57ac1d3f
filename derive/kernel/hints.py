"""Which hypothesis would make a definedness judgment follow (issue 41).

Part of the trusted core only in that it lives here: nothing it computes is a verdict.  When definedness needs a
judgment that was not shown (a :class:`~derive.kernel.judgments.NotShown` from ``check_defined``), the message says
what would make it follow, worded from the judgments' own rules: "σ²XᵀX is invertible if XᵀX is invertible and
σ ≠ 0; assume Q.invertible(XᵀX)".  The refusal stands whatever the hint says.
"""

from __future__ import annotations

from sympy import Basic, Mul, Pow
from sympy.matrices.expressions import Identity, MatAdd, MatMul

from .budget import GuardFired, WorkExceeded
from .judgments import Context, NotShown, _square, _unfolded, invertible, nonzero, sign
from .scalars import is_number
from .terms import Diag, Kron, TermError, Tril, canonical, factors_of, mul, shown

__all__ = ["explained"]


def explained(exc: TermError, ctx: Context) -> str:
    """The message of ``exc``, with — for a judgment definedness needed and did not get (:class:`NotShown`) — the
    hypothesis that would make it follow: "σ²XᵀX is invertible if XᵀX is invertible and σ ≠ 0; assume
    Q.invertible(XᵀX)".  Only a hint, worded from the judgments' own rules; never part of a verdict."""
    message = str(exc)
    if type(exc) is not NotShown:
        return message
    try:
        hint = _hint(exc.judgment, exc.subject, ctx)
    except (WorkExceeded, GuardFired):  # the check's own budget and guard: they decide, as everywhere
        raise
    except Exception:  # noqa: BLE001 - a hint that cannot be worded (or past a search's deadline) is left out
        hint = None
    return f"{message}: {hint}" if hint else message


def _scalar_parts(c: Basic) -> list:
    """The factors of a product of powers (σ²τ: σ, τ), c itself otherwise (numbers left out)."""
    parts = [b for b in (c.args if type(c) is Mul else (c,)) if not is_number(b)]
    return [b.args[0] if type(b) is Pow and is_number(b.args[1]) else b for b in parts]


def _nonzero_words(c: Basic) -> str:
    """"σ ≠ 0" for σ², "σ ≠ 0 and τ ≠ 0" for σ²τ, "c ≠ 0" otherwise."""
    return " and ".join(f"{shown(b)} ≠ 0" for b in _scalar_parts(c)) or f"{shown(c)} ≠ 0"


def _nonzero_hint(c: Basic, ctx: Context) -> str:
    """How to make the scalar ``c`` known non-zero: a fact about each factor of unknown sign, or about c itself."""
    unknown = [b for b in _scalar_parts(c) if 0 in sign(b, ctx)] or [c]
    return "assume " + " and ".join(f"Q.nonzero({shown(b)})" for b in unknown)


def _hint(judgment: str, subject, ctx: Context, unfold: bool = True) -> str | None:
    if judgment == "nonzero":
        return _nonzero_hint(subject, ctx)
    term = canonical(subject)
    coeff, mats = factors_of(term)
    if type(term) is MatMul and coeff != 1:
        inner = mul(mats)
        needs = [] if invertible(inner, ctx) else [f"Q.invertible({shown(inner)})"]
        scalar_ok = nonzero(coeff, ctx)
        wants = f"{shown(inner)} is invertible and {_nonzero_words(coeff)}"
        if not scalar_ok:
            needs.append(_nonzero_hint(coeff, ctx)[len("assume "):])
        return f"{shown(term)} is invertible if {wants}; assume " + " and ".join(needs) if needs else None
    if type(term) is MatMul and all(_square(m) for m in mats):
        missing = [m for m in mats if not invertible(m, ctx)]
        if missing:
            return ("a product of square matrices is invertible if each factor is; assume "
                    + " and ".join(f"Q.invertible({shown(m)})" for m in missing))
    if type(term) is Diag:
        return f"diag(v) is invertible if every entry of v is non-zero; assume Q.invertible({shown(term)})"
    if type(term) is MatAdd and any(type(a) is Identity for a in term.args) and term.has(Tril):
        return ("I plus strictly lower parts, each c·D tril(A, -1) E with D, E diagonal, is unit lower triangular and "
                f"so invertible (a mask that keeps the diagonal is not read so); assume Q.invertible({shown(term)})")
    if type(term) is Kron:
        return ("A ⊗ B is invertible if A and B are square and invertible; assume "
                + " and ".join(f"Q.invertible({shown(f)})" for f in term.args if not invertible(f, ctx)))
    unfolded = _unfolded(term, ctx, 0) if unfold else None
    if unfolded is not None and unfolded != term:
        deeper = _hint("invertible", unfolded, ctx, unfold=False)
        if deeper:
            return f"it is {shown(unfolded)} by the equations, and {deeper}"
    if not _square(term):
        return None
    return f"assume Q.invertible({shown(term)})"
