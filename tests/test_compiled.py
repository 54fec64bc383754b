"""dpbandit.compiled.kernel: numba's disk cache where numba can write it, an uncached kernel (and one warning) where
it cannot, e.g. a read-only installation used by an account without a writable home."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numba import njit
from numba.core import caching

import dpbandit.compiled as compiled


def _square_sum(x):
    total = 0.0
    for v in x:
        total += v * v
    return total


def test_a_kernel_is_cached_on_disk_where_numba_can_write():
    f = compiled.kernel(_square_sum)
    assert type(f._cache).__name__ == "FunctionCache"  # njit(cache=True)'s on-disk cache
    assert f(np.array([3.0, 4.0])) == 25.0


def test_without_a_writable_cache_location_the_kernel_compiles_in_memory_and_warns_once(monkeypatch):
    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl  # (its name before numba 0.60)
    monkeypatch.setattr(impl, "_locator_classes", [])  # numba finds no place for its cache
    with pytest.raises(RuntimeError, match="no locator available"):
        njit(cache=True)(_square_sum)  # what importing dpbandit raised before
    monkeypatch.setattr(compiled, "_warned", False)
    with pytest.warns(RuntimeWarning, match="NUMBA_CACHE_DIR"):
        f = compiled.kernel(_square_sum)
    assert type(f._cache).__name__ == "NullCache"
    assert f(np.array([3.0, 4.0])) == 25.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled.kernel(_square_sum)  # the warning comes once per process
