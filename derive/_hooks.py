"""Wiring between layers that must not import each other (no imports here, so anything may import it).

``record_store_factory`` makes the store the theorem registry replays recorded proofs from
(:mod:`derive.records`); the package sets it when :mod:`derive` is imported, and the registry calls it the first
time it needs a store — so the registry (below certificates) never imports the certificate reader, and
``import derive`` stays cheap.
"""

record_store_factory = None
