"""Test-wide settings: the built-in record (proofs/certificates) is replayed, never rewritten by a test."""

import os

# Tests replay recorded proofs but never write a record (a test that needs writing switches it on itself);
# set before derive is imported, which installs the record store.
os.environ.setdefault("DERIVE_RECORDS", "read")
