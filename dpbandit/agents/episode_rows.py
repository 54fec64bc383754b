"""An episode's rows on disk, read back chunk by chunk: what FLIPHAT with a non-identity link and M > 1 iterations
keeps of an episode (issue 25, item 3). Memory O(READ_ROWS d), whatever the episode's length.

N-IHT with M > 1 evaluates the summed GLM gradient ``g(theta) = sum_i x_i (mu(x_i^T theta) - y_i)`` at M points;
for a non-linear mu no fixed-size statistic gives it, so the episode's rows must be kept until the release. Instead of
a buffer of the longest episode in memory (about T/2 rows of d floats: 40 GB at T = 1e7, d = 1000) each model's rows
x and responses y go to two temporary files as they arrive, chunk by chunk (:meth:`EpisodeRows.append`), and every gradient
pass streams them back in chunks of :data:`READ_ROWS` rows through one buffer, accumulating ``X_c^T r_c`` in the
episode's order with BLAS ``dgemv`` (``beta = 1``). That is the one-shot ``X^T r`` of the whole episode with the
same per-row residuals; the sum is accumulated as the one-shot product accumulates it, so the result is the same up
to the BLAS kernel's blocking (bit for bit with this machine's OpenBLAS at d >= 20; tests/agents/test_episode_rows.py
checks it to 1e-12).

**Files.** Two per model (rows, responses), made by :func:`tempfile.TemporaryFile` in the temporary folder (``TMPDIR``; Python's
:func:`tempfile.gettempdir`): on POSIX the file has no name from its creation, so no other process can open it and
nothing is left behind, even by a killed run; it is closed (and its space freed) when the episode is released
(:meth:`EpisodeRows.clear`, the curator's forgetting) or the object is collected. The bytes on disk are at most
``8 (d + 1)`` per user of the longest episode (:meth:`EpisodeRows.disk_bytes`), which the agent checks against the
folder's free space before any work (:func:`check_disk`).
"""

from __future__ import annotations

import shutil
import tempfile

import numpy as np
from scipy.linalg import blas
from scipy.special import expit

from dpbandit.validation import check_int

__all__ = ["READ_ROWS", "EpisodeRows", "check_disk"]

#: Rows read back per chunk of a gradient pass (16 MB at d = 1000).
READ_ROWS = 2048


def check_disk(what: str, nbytes: int, hint: str = "") -> None:
    """Refuse up front what cannot be written: ``ValueError`` when ``nbytes`` exceed the free space of the temporary
    folder (:func:`tempfile.gettempdir`), naming both."""
    folder = tempfile.gettempdir()
    free = shutil.disk_usage(folder).free
    if nbytes > free:
        raise ValueError(f"{what} would write about {nbytes / 1e9:.3g} GB of temporary rows to {folder}, which has "
                         f"{free / 1e9:.3g} GB free" + (f"; {hint}" if hint else ""))


class EpisodeRows:
    """The rows ``x`` (d,) and responses ``y`` of one episode per model (M >= 1), on disk (module docstring)."""

    def __init__(self, n_models: int, dim: int) -> None:
        self.n_models = check_int("n_models", n_models, low=1)
        self.dim = check_int("dim", dim, low=1)
        self._files: list = [None] * self.n_models  # per model: (rows file, responses file)
        self.counts = np.zeros(self.n_models, dtype=np.int64)
        self._buffer: tuple[np.ndarray, np.ndarray] | None = None  # (READ_ROWS, d) and (READ_ROWS,), at first use

    @staticmethod
    def disk_bytes(rows: int, dim: int) -> int:
        """Bytes on disk for ``rows`` users of an episode (every model together)."""
        return 8 * rows * (dim + 1)

    @staticmethod
    def memory_bytes(dim: int) -> int:
        """Bytes in memory during a gradient pass: the read buffer and the chunk's products and residuals."""
        return 8 * READ_ROWS * (dim + 3) + 8 * dim

    def append(self, X: np.ndarray, models: np.ndarray | None, y: np.ndarray) -> None:
        """Write the rows ``X`` (n, d) with responses ``y`` (n,) after those of their ``models`` (n,) int in [0, M)
        (all to model 0 when ``models`` is None), in order."""
        if models is None or self.n_models == 1:
            self._write(0, X, y)
            return
        for m in np.flatnonzero(np.bincount(models, minlength=self.n_models)):
            mine = models == m
            self._write(int(m), X[mine], y[mine])

    def _write(self, m: int, X: np.ndarray, y: np.ndarray) -> None:
        if X.shape[0] == 0:
            return
        if self._files[m] is None:
            self._files[m] = tuple(tempfile.TemporaryFile(prefix=f"dpbandit-episode-{what}-") for what in ("rows", "y"))
        rows, responses = self._files[m]
        rows.write(np.ascontiguousarray(X, dtype=float).tobytes())
        responses.write(np.ascontiguousarray(y, dtype=float).tobytes())
        self.counts[m] += X.shape[0]

    def gradient(self, m: int, link: str):
        """``theta -> sum_i x_i (mu(x_i^T theta) - y_i)`` (d,) over model ``m``'s rows (``mu``: identity or
        logistic), streamed from disk in chunks of :data:`READ_ROWS` rows."""
        mean = expit if link == "logistic" else (lambda z: z)
        d, n, files = self.dim, int(self.counts[m]), self._files[m]

        def gradient(theta: np.ndarray) -> np.ndarray:
            total = np.zeros(d)
            if n == 0:
                return total
            if self._buffer is None:
                self._buffer = (np.empty((READ_ROWS, d)), np.empty(READ_ROWS))
            for f in files:
                f.seek(0)
            for start in range(0, n, READ_ROWS):
                k = min(READ_ROWS, n - start)
                X, y = self._buffer[0][:k], self._buffer[1][:k]
                _read_into(files[0], X)
                _read_into(files[1], y)
                residual = mean(X @ theta) - y
                total = blas.dgemv(1.0, X.T, residual, beta=1.0, y=total, overwrite_y=1)  # X.T: F-ordered, no copy
            return total

        return gradient

    def clear(self) -> None:
        """Forget every row: the files are closed (their space freed) and the counts reset."""
        for files in self._files:
            for f in files or ():
                f.close()
        self._files = [None] * self.n_models
        self.counts[...] = 0


def _read_into(f, out: np.ndarray) -> None:
    """Fill the contiguous array ``out`` with the next bytes of the file ``f``."""
    view, got = memoryview(out).cast("B"), 0
    while got < view.nbytes:
        read = f.readinto(view[got:])
        if not read:  # pragma: no cover - the file holds what was written
            raise OSError("the episode's rows file ended early")
        got += read
