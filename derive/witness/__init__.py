"""The independent witness: exact re-evaluation of proofs on rational instances, without the kernel's rules."""

from .exact import *  # noqa: F403
from .exact import __all__  # noqa: F401
