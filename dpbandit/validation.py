"""Argument checks shared by every layer of dpbandit.

Every public constructor and function validates its inputs *before any work starts* (no noise drawn, no round
played) and raises a ``ValueError`` or ``TypeError`` whose message names the parameter, the accepted range and the
offending value, e.g. ``"epsilon must be a finite number > 0, got nan"``.

This module imports nothing from the rest of the package, so every subpackage may use it.
"""

from __future__ import annotations

import math
import numbers
import operator
import os
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = [
    "check_real",
    "check_int",
    "check_choice",
    "check_epsilon",
    "check_delta",
    "check_probability",
    "check_generator",
    "check_run_name",
    "check_memory",
    "check_n_jobs",
    "MAX_JOBS",
    "physical_memory",
    "MEMORY_FRACTION",
]


def _is_bool(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_))


def check_real(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_inclusive: bool = True,
    high_inclusive: bool = True,
    allow_inf: bool = False,
) -> float:
    """Return ``value`` as a float after checking that it is a real number in the stated interval.

    Raises ``TypeError`` for non-numbers (booleans included) and ``ValueError`` for NaN, infinities (unless
    ``allow_inf``) and values outside ``[low, high]`` (bounds exclusive where requested).
    """
    if type(value) is not float and (_is_bool(value) or not isinstance(value, numbers.Real)):
        raise TypeError(f"{name} must be a real number, got {value!r} of type {type(value).__name__}")
    x = float(value)
    if math.isnan(x):
        raise ValueError(f"{name} must be a number{_range_text(low, high, low_inclusive, high_inclusive)}, got nan")
    if math.isinf(x) and not allow_inf:
        raise ValueError(
            f"{name} must be a finite number{_range_text(low, high, low_inclusive, high_inclusive)}, got {x}"
        )
    bad_low = low is not None and (x < low or (not low_inclusive and x == low))
    bad_high = high is not None and (x > high or (not high_inclusive and x == high))
    if bad_low or bad_high:
        kind = "finite number" if not allow_inf else "number"
        raise ValueError(f"{name} must be a {kind}{_range_text(low, high, low_inclusive, high_inclusive)}, got {x!r}")
    return x


def _range_text(low, high, low_inclusive, high_inclusive) -> str:
    if low is not None and high is not None:
        lb = "[" if low_inclusive else "("
        hb = "]" if high_inclusive else ")"
        return f" in {lb}{low:g}, {high:g}{hb}"
    if low is not None:
        return f" {'>=' if low_inclusive else '>'} {low:g}"
    if high is not None:
        return f" {'<=' if high_inclusive else '<'} {high:g}"
    return ""


def check_int(name: str, value: Any, *, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as an ``int`` after checking it is an integer (not a bool, not a float) in ``[low, high]``."""
    if type(value) is int:  # the common case first (a bool's type is bool): no ABC checks in per-round code
        n = value
    elif _is_bool(value) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r} of type {type(value).__name__}")
    else:
        n = int(value)
    if (low is not None and n < low) or (high is not None and n > high):
        if low is not None and high is not None:
            rng = f"in [{low}, {high}]"
        elif low is not None:
            rng = f">= {low}"
        else:
            rng = f"<= {high}"
        raise ValueError(f"{name} must be an integer {rng}, got {n}")
    return n


def check_choice(name: str, value: Any, choices: Iterable[str]) -> str:
    """Check that ``value`` is one of the strings ``choices`` and return it."""
    options = tuple(choices)
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {options}, got {value!r} of type {type(value).__name__}")
    if value not in options:
        raise ValueError(f"{name} must be one of {options}, got {value!r}")
    return value


def check_epsilon(value: Any, name: str = "epsilon", *, allow_inf: bool = False) -> float:
    """A privacy parameter epsilon: a finite number > 0 (``inf`` only where noise-off runs are meaningful)."""
    return check_real(name, value, low=0.0, low_inclusive=False, allow_inf=allow_inf)


def check_delta(value: Any, name: str = "delta", *, allow_zero: bool = True) -> float:
    """A privacy parameter delta in [0, 1), or in (0, 1) when the mechanism needs delta > 0 (Gaussian noise)."""
    return check_real(name, value, low=0.0, high=1.0, low_inclusive=allow_zero, high_inclusive=False)


def check_probability(name: str, value: Any) -> float:
    """A probability in [0, 1]."""
    return check_real(name, value, low=0.0, high=1.0)


def check_generator(value: Any, name: str = "rng") -> np.random.Generator:
    """Require an explicit ``numpy.random.Generator`` (dpbandit never uses the global numpy RNG)."""
    if not isinstance(value, np.random.Generator):
        raise TypeError(
            f"{name} must be a numpy.random.Generator (build one with dpbandit.seeding.stream), "
            f"got {type(value).__name__}"
        )
    return value


#: Characters a run name may hold besides letters and digits (a plain, printable folder name on every system).
RUN_NAME_PUNCTUATION = "._-+=@, "


def check_run_name(value: Any, name: str = "name") -> str:
    """A run name: one plain, printable folder name inside the output folder (``<out>/<name>``), never a path.

    Letters and digits (any script), and ``. _ - + = @ ,`` and inner spaces; it starts with a letter, a digit or
    ``_`` (so never ``-rf``, ``~``, ``.`` or ``..``) and is at most 100 characters. No ``/``, ``\\``, shell
    patterns (``*``), control characters or newlines, so it can never leave ``<out>`` nor surprise a shell.
    """
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string (one folder name), got {value!r} of type {type(value).__name__}")
    plain = all(c.isalnum() or c in RUN_NAME_PUNCTUATION for c in value)
    if not (plain and value and (value[0].isalnum() or value[0] == "_") and value.strip() == value
            and len(value) <= 100):
        raise ValueError(
            f"{name} must be a plain folder name: letters, digits and . _ - + = @ , or inner spaces, starting with a "
            f"letter, digit or _, at most 100 characters; got {value!r}"
        )
    return value


#: The size rule: one environment, agent or data stream may need at most this fraction of the machine's physical
#: memory (parallel jobs and the rest of the process need the remainder).
MEMORY_FRACTION = 0.5


def physical_memory() -> int | None:
    """Bytes of physical memory of this machine (``os.sysconf``), or None where the platform does not tell."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):  # pragma: no cover - non-POSIX
        return None


def _gigabytes(n: float) -> str:
    if n >= 1e12:
        return f"{n / 1e12:,.0f} TB"
    return f"{n / 1e9:.3g} GB" if n >= 1e8 else f"{n / 1e6:.3g} MB"


def check_memory(what: str, nbytes: float, hint: str = "") -> None:
    """Refuse up front what cannot fit: ``ValueError`` when ``nbytes`` (an estimate of what ``what`` will allocate,
    computed from its sizes before allocating anything) exceeds :data:`MEMORY_FRACTION` of the physical memory."""
    total = physical_memory()
    if total is not None and nbytes > MEMORY_FRACTION * total:
        raise ValueError(
            f"{what} would need about {_gigabytes(nbytes)} of memory, more than {MEMORY_FRACTION:.0%} of this "
            f"machine's {_gigabytes(total)} (the limit for one environment, agent or stream)"
            + (f"; {hint}" if hint else "")
        )


#: The most parallel jobs a run may ask for (processes on this machine, or workers of a local Dask cluster): more
#: would only start idle processes, or exhaust the machine before the first round.
MAX_JOBS = 1024


def check_n_jobs(value: Any, name: str = "n_jobs") -> int:
    """Return ``value`` as the number of parallel jobs: an integer in ``[1, MAX_JOBS]``."""
    return check_int(name, value, low=1, high=MAX_JOBS)


def check_index(name: str, value: Any, size: int, *, non_integer: type[Exception] = TypeError) -> int:
    """Return ``value`` as an ``int`` index in ``[0, size - 1]`` (numpy integers accepted, booleans not);
    ``ValueError`` naming the range when it is outside, ``non_integer`` (``TypeError`` by default) when it is not an
    integer."""
    try:
        if isinstance(value, (bool, np.bool_)):
            raise TypeError
        index = operator.index(value)
    except TypeError:
        raise non_integer(f"{name} must be an integer in [0, {size - 1}], got {value!r}") from None
    if not 0 <= index < size:
        raise ValueError(f"{name} must be an integer in [0, {size - 1}], got {index}")
    return index


def check_action(action: Any, n_arms: int) -> int:
    """A bandit environment's action as an ``int`` in ``[0, n_arms - 1]``: :func:`check_index` with ``ValueError``
    for every bad action, non-integers included (Gymnasium's convention for ``step``)."""
    return check_index("action", action, n_arms, non_integer=ValueError)
