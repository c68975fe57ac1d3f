"""Certificates: checked theorems as JSON, read back by a whitelist parser and re-checked from scratch."""

from .format import (
    FORMAT,
    CertificateError,
    CertificateInterrupted,
    CertificateUnreadable,
    certificate_text,
    read_certificate,
    same_statement,
    statement_of,
    verify_certificate,
)
from .srepr_parser import ParseError, parse_srepr

__all__ = ["FORMAT", "CertificateError", "CertificateInterrupted", "CertificateUnreadable", "ParseError",
           "certificate_text", "parse_srepr", "read_certificate", "same_statement", "statement_of",
           "verify_certificate"]
