"""The decorator of dpbandit's compiled kernels: numba's ``njit``, cached on disk where numba can write its cache.

numba keeps a compiled kernel beside its source (``__pycache__``) or, where that is read-only, in the user's cache
directory (``NUMBA_CACHE_DIR``, else ``~/.cache/numba``). Where neither is writable (a read-only installation used
by an account without a writable home, e.g. ``nobody`` in a container), ``njit(cache=True)`` raises at import
time. :func:`kernel` then compiles without the disk cache instead: the same machine code, compiled again in each
process (some seconds per process), with one warning that names the remedy. The kernels' rules (no fast-math,
IEEE operations in program order) are in ``docs/ARCHITECTURE.md``, "Compiled kernels".

numba checks a cached kernel against its own source file only, not against the kernels it calls from other modules
(e.g. the batched forms' kernels call the single path's, ``agents/batched/dp_hdb.py`` -> ``agents/dp_hdb.py``): after
an edit, or an upgrade that changes only the callee's module, it would load the caller compiled with the old callee.
:func:`kernel` therefore stamps every cache entry with a hash of all the kernel modules of the package (the ``.py``
files under the top-level package that hold ``@kernel``, :func:`kernel_sources_stamp`): a change to any of them
recompiles every kernel once, and a stale one is never loaded.
"""

from __future__ import annotations

import functools
import hashlib
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

from numba import njit
from numba.core.caching import CompileResultCacheImpl, FunctionCache

__all__ = ["kernel", "kernel_sources_stamp"]

_warned = False


@functools.cache
def kernel_sources_stamp(package: str) -> str:
    """SHA-256 over the relative paths and contents of the ``.py`` files under the top-level ``package`` that hold
    ``@kernel`` (computed once per process); empty for a module outside a package (its own file is numba's stamp)."""
    module = sys.modules.get(package)
    if getattr(module, "__path__", None) is None or getattr(module, "__file__", None) is None:
        return ""
    root = Path(module.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        text = path.read_bytes()
        if b"@kernel" in text:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + text)
    return digest.hexdigest()


@functools.cache
def _stamped(locator: type) -> type:
    """numba's cache locator class with the source stamp extended by :func:`kernel_sources_stamp`."""

    class Stamped(locator):
        def __init__(self, py_func, py_file):
            super().__init__(py_func, py_file)
            self._package = py_func.__module__.partition(".")[0]

        def get_source_stamp(self):
            return super().get_source_stamp(), kernel_sources_stamp(self._package)

    Stamped.__name__ = Stamped.__qualname__ = f"PackageStamped{locator.__name__}"
    return Stamped


class _PackageStampedCacheImpl(CompileResultCacheImpl):
    @property
    def _locator_classes(self):  # numba's locators, in numba's order, read when a kernel is decorated
        return [_stamped(c) for c in CompileResultCacheImpl._locator_classes]


class _PackageStampedCache(FunctionCache):
    """numba's on-disk cache of a kernel (``njit(cache=True)``'s), its entries stamped as the module docstring says."""

    _impl_class = _PackageStampedCacheImpl


def kernel(func: Callable) -> Callable:
    """``numba.njit(cache=True)(func)`` with the package-wide source stamp (module docstring), or ``numba.njit(func)``
    with one ``RuntimeWarning`` where numba has no writable cache location for ``func``'s module."""
    global _warned
    dispatcher = njit(func)
    try:
        dispatcher._cache = _PackageStampedCache(func)  # what numba's enable_caching() does, with the stamp
        return dispatcher
    except RuntimeError as exc:
        if "no locator available" not in str(exc):
            raise
    if not _warned:
        _warned = True
        warnings.warn("numba cannot write its cache beside dpbandit or in the user's cache directory: dpbandit's "
                      "kernels are compiled in every process (some seconds each); set NUMBA_CACHE_DIR to a "
                      "writable directory to compile them once", RuntimeWarning, stacklevel=2)
    return njit(func)
