"""Exports of checked proofs to other proof checkers (Coq/MathComp: :mod:`derive.export.coq`)."""
