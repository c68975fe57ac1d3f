"""The numeric modules generated from the checked theorems, shipped in the package (nothing here is hand-written).

``ols_attention.py`` is what ``derive codegen --backend numpy`` writes and ``ols_attention_xp.py`` what
``--backend xp`` writes, from the library's checked theorems; both are committed, and a test regenerates them and
compares byte for byte (``tests/test_proof_layer.py``), as it does for ``proofs/``.  The scikit-learn estimator
and the experiments import the NumPy module from here, so nothing is proved at fit time; the array-API module's
host path finds the NumPy module beside it.  Regenerate after changing a theorem or the numerics:
``python -m derive codegen --out derive/generated --backend numpy`` and ``--backend xp``.
"""
