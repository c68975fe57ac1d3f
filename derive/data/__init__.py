"""Data shipped with the package.

``nist_strd_lls.json``: the NIST Statistical Reference Datasets (StRD) for linear least squares, the whole
collection — Norris, Pontius, NoInt1, NoInt2, Filip, Longley and Wampler1 to Wampler5 — with their certified
coefficients. NIST data are in the public domain (https://www.itl.nist.gov/div898/strd/lls/lls.shtml). Read it
with :func:`derive.experiments.nist.load_datasets`, the one place that reads this file.
"""
