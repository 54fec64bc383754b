"""dpbandit.compiled.kernel: numba's disk cache where numba can write it, an uncached kernel (and one warning) where
it cannot, e.g. a read-only installation used by an account without a writable home."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

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
    assert isinstance(f._cache, caching.FunctionCache)  # njit(cache=True)'s on-disk cache, with the package stamp
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


def _run(root: Path, code: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(Path(compiled.__file__).parents[1])])}
    env.pop("NUMBA_CACHE_DIR", None)
    done = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_a_cached_kernel_is_recompiled_when_a_kernel_it_calls_from_another_module_changes(tmp_path):
    """numba stamps a cache entry with its own module's source only: a caller cached with the old callee from
    another module (the batched forms call the single path's kernels) would be loaded after the callee changed.
    The package-wide stamp recompiles it; with unchanged sources the cache is used."""
    package = tmp_path / "kernelpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    callee = "from dpbandit.compiled import kernel\n\n\n@kernel\ndef f():\n    return {}\n"
    (package / "callee.py").write_text(callee.format(1))
    (package / "caller.py").write_text(textwrap.dedent("""\
        from dpbandit.compiled import kernel
        from kernelpkg.callee import f


        @kernel
        def g():
            return f() + 10
        """))
    run = "from kernelpkg.caller import g; print(g(), g.stats.cache_hits.total(), g.stats.cache_misses.total())"
    assert _run(tmp_path, run) == ["11", "0", "1"]  # compiled and saved
    assert _run(tmp_path, run) == ["11", "1", "0"]  # loaded from the disk cache
    (package / "callee.py").write_text(callee.format(2))
    assert _run(tmp_path, run) == ["12", "0", "1"]  # recompiled with the new callee, not the stale 11
    assert _run(tmp_path, run) == ["12", "1", "0"]
