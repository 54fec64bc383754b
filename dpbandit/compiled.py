"""The decorator of dpbandit's compiled kernels: numba's ``njit``, cached on disk where numba can write its cache.

numba keeps a compiled kernel beside its source (``__pycache__``) or, where that is read-only, in the user's cache
directory (``NUMBA_CACHE_DIR``, else ``~/.cache/numba``). Where neither is writable (a read-only installation used
by an account without a writable home, e.g. ``nobody`` in a container), ``njit(cache=True)`` raises at import
time. :func:`kernel` then compiles without the disk cache instead: the same machine code, compiled again in each
process (some seconds per process), with one warning that names the remedy. The kernels' rules (no fast-math,
IEEE operations in program order) are in ``docs/ARCHITECTURE.md``, "Compiled kernels".
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

from numba import njit

__all__ = ["kernel"]

_warned = False


def kernel(func: Callable) -> Callable:
    """``numba.njit(cache=True)(func)``, or ``numba.njit(func)`` with one ``RuntimeWarning`` where numba has no
    writable cache location for ``func``'s module."""
    global _warned
    try:
        return njit(cache=True)(func)
    except RuntimeError as exc:
        if "no locator available" not in str(exc):
            raise
    if not _warned:
        _warned = True
        warnings.warn("numba cannot write its cache beside dpbandit or in the user's cache directory: dpbandit's "
                      "kernels are compiled in every process (some seconds each); set NUMBA_CACHE_DIR to a "
                      "writable directory to compile them once", RuntimeWarning, stacklevel=2)
    return njit(func)
