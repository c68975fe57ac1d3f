"""ols-transformer: OLS is a special case of the single-layer linear transformer, machine-checked.

``derive.kernel`` is the trusted core (with ``derive.terms``); everything else builds on it.
"""

__version__ = "0.1.0"
