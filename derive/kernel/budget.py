"""The work budget: what decides that a check has gone on too long, in units of kernel work, never seconds.

Part of the trusted core.  Every pass of the kernel *charges* the work it does to the meter of the check
that runs it (one per thread): a rewrite tried, a term brought to its normal form, a judgment asked, a
monomial multiplied or added in a coefficient's polynomial arithmetic, a block product or sum of
``block_multiply``.  When the charges pass the meter's limit, :class:`WorkExceeded` is raised at that
point, so the same proof gets the same verdict on any machine at any load.

Results the kernel remembers across checks (normal forms of terms and coefficients) remember what they
cost, and a later use charges that cost again (:func:`metered_cache`): what an earlier check in the same
process computed never makes a later one cheaper, so the verdict on a proof does not depend on what was
checked before it either.
"""

from __future__ import annotations

import functools
import threading
import time

from .proof import ProofError

__all__ = ["CheckInterrupted", "GuardFired", "Meter", "WorkExceeded", "charge", "current", "default_limit",
           "guarded", "last_used", "metered", "metered_cache"]

#: The default budget of a check: ``BASE_UNITS + UNITS_PER_NODE × size``, where size counts the nodes of
#: every term of the proof (hypotheses, definitions, families, claims, steps, instances, and the statements
#: of the theorems it cites).
BASE_UNITS = 1_000_000
UNITS_PER_NODE = 50


class WorkExceeded(Exception):  # noqa: N818 - not an error of the proof's terms: the check stops here
    """The check did more work than its budget allows (deliberately not a ValueError or TermError, so no
    handler of a malformed term swallows it)."""

    def __init__(self, limit: int):
        super().__init__(f"the check exceeds the work budget of {limit} units")
        self.limit = limit


class CheckInterrupted(ProofError):
    """The outer time guard of :func:`derive.kernel.check` fired: the proof was *not checked* (no verdict)."""

    def __init__(self, theorem: str, seconds: float):
        super().__init__(theorem, "statement", None, None,
                         f"interrupted: not checked within the time limit of {seconds:g} s")
        self.seconds = seconds


class GuardFired(Exception):  # noqa: N818 - not an error of the proof: the check was stopped from outside
    """The outer time guard of a check fired (CPU seconds of this process): no verdict."""


GUARD_EVERY = 2048  # units of work between two looks at the CPU clock


class Meter:
    """Units of work charged so far, the limit (None: count, never stop), and the outer time guard: a
    ``time.process_time()`` value past which the check stops without a verdict (None: no guard)."""

    __slots__ = ("deadline", "limit", "look", "memo", "used")

    def __init__(self, limit: int | None = None, deadline: float | None = None, memo: dict | None = None):
        self.limit, self.used, self.deadline, self.look = limit, 0, deadline, GUARD_EVERY
        self.memo = memo  # one check's normal forms: term -> (normal form, units it cost); None outside a check


_local = threading.local()


def _meter() -> Meter:
    meter = getattr(_local, "meter", None)
    if meter is None:
        meter = _local.meter = Meter()
    return meter


def current() -> Meter:
    """This thread's meter (a check's, or one that only counts)."""
    return getattr(_local, "meter", None) or _meter()


def charge(units: int = 1) -> None:
    """Charge ``units`` of work to this thread's check; raise :class:`WorkExceeded` past its limit."""
    meter = getattr(_local, "meter", None) or _meter()
    meter.used += units
    if meter.limit is not None and meter.used > meter.limit:
        raise WorkExceeded(meter.limit)
    if meter.deadline is not None and meter.used >= meter.look:
        meter.look = meter.used + GUARD_EVERY
        if time.process_time() > meter.deadline:
            raise GuardFired("the check ran past its time guard")


class metered:  # noqa: N801 - used as ``with metered(limit) as meter``
    """Run a check under a fresh meter with ``limit`` units (None: count only) and the CPU-time ``deadline``
    (a ``time.process_time()`` value, or None); the outer meter is restored afterwards and charged nothing
    (a check of a cited theorem is its own)."""

    def __init__(self, limit: int | None, deadline: float | None = None):
        self.meter = Meter(limit, deadline, {})

    def __enter__(self) -> Meter:
        self.outer = getattr(_local, "meter", None)
        _local.meter = self.meter
        return self.meter

    def __exit__(self, *exc) -> None:
        _local.meter = self.outer
        _local.last = self.meter.used


class guarded(metered):  # noqa: N801 - used as ``with guarded(deadline)``
    """Run work whose budget is not known yet (validating a proof, measuring its size) under the outer time guard
    alone: what it charges is counted on a meter of its own, with no limit, only so that the CPU clock is looked at
    (:data:`GUARD_EVERY`); it decides no verdict and is not the check's :func:`last_used`."""

    def __init__(self, deadline: float | None):
        super().__init__(None, deadline)

    def __exit__(self, *exc) -> None:
        _local.meter = self.outer


def last_used() -> int | None:
    """The units of work the last check run in this thread used (None before any)."""
    return getattr(_local, "last", None)


def metered_cache(maxsize: int):
    """Like ``functools.lru_cache``, but a hit charges the units the first computation cost (a result is
    remembered only when its computation ended normally)."""

    def decorate(function):
        cache: dict = {}
        lock = threading.Lock()

        @functools.wraps(function)
        def wrapper(*args):
            meter = _meter()
            hit = cache.get(args)
            if hit is not None:
                charge(hit[1])
                return hit[0]
            before = meter.used
            result = function(*args)
            cost = meter.used - before
            with lock:
                if len(cache) >= maxsize:
                    cache.pop(next(iter(cache)))  # the oldest entry (dicts keep insertion order)
                cache[args] = (result, cost)
            return result

        wrapper.cache_clear = cache.clear
        return wrapper

    return decorate


def default_limit(size: int) -> int:
    """The default work budget of a check of a proof of ``size`` nodes (see :data:`UNITS_PER_NODE`)."""
    return BASE_UNITS + UNITS_PER_NODE * size
