"""Data shipped with the package.

``nist_strd_lls.json``: the NIST Statistical Reference Datasets (StRD) for linear least squares — Norris,
Pontius, NoInt1, NoInt2, Longley, Wampler1 and Wampler2 — with their certified coefficients. NIST data
are in the public domain (https://www.itl.nist.gov/div898/strd/lls/lls.shtml). Read it with
:func:`derive.experiments.nist.load_datasets`, the one place that reads this file.
"""
