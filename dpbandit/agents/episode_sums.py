"""The per-model sums an episodic curator releases from, accumulated chunk by chunk in bounded memory (issue 25).

An episodic curator (:class:`~dpbandit.agents.episodic.EpisodicCurator` with ``chunk`` rows) buffers at most
``chunk`` users; every full chunk, and the episode's last one, is absorbed here and wiped. The sums are those the
mechanisms of :mod:`dpbandit.agents.episodic_ridge` and :mod:`dpbandit.agents.fliphat` are functions of, per model
m (one in the shared structure, one per arm in the disjoint one; a row's model is its arm):

* ``G_m = sum x x^T`` (optional): BLAS ``dsyrk`` into one triangle per chunk (level 3: about 24 us a row at
  d = 1000 on one core, against 270 us for numpy's einsum loop); mirrored by :meth:`EpisodeSums.take`;
* ``b_m = sum w x`` for per-row weights w (BLAS ``dgemv``): the moment ``sum y x`` (ridge; FLIPHAT with the
  identity link and M > 1), or the summed GLM gradient at theta = 0, ``sum (mu(0) - y) x`` (FLIPHAT with M = 1);
* ``n_m``: the rows absorbed.

Memory: ``M d^2 + M d`` floats (``M d`` without G), whatever the episode's length; the chunk buffer adds
``chunk (d + 2)``. The sums equal those over the whole episode at once up to floating-point summation order (chunks
are summed in arrival order), so a release that is a function of the episode's sums is the same mechanism, with the
same sensitivity and noise, as before. The BLAS calls are single-threaded inside :func:`dpbandit.experiment.simulate`
and ``simulate_batch`` (``one_blas_thread``); a batched form calls :meth:`absorb` per seed on that seed's rows, so
every seed's sums are bit for bit its single run's.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import blas

from dpbandit.compiled import kernel
from dpbandit.mapped import mapped_zeros
from dpbandit.validation import check_int

__all__ = ["CHUNK_ROWS", "EpisodeSums"]

#: Rows buffered before they are absorbed: enough for level-3 BLAS to run near its peak at d = 1000, and 2 MB of
#: buffer there.
CHUNK_ROWS = 256


@kernel
def symmetrise(G):
    """``G`` (d, d) in place: ``G_ij + G_ji`` off the diagonal (the sum, exactly, of ``G + G^T`` there; the same
    float either way round), the diagonal unchanged; no second d x d array."""
    d = G.shape[0]
    for i in range(d):
        for j in range(i + 1, d):
            s = G[i, j] + G[j, i]
            G[i, j] = s
            G[j, i] = s


class EpisodeSums:
    """``G_m`` (if ``gram``), ``b_m`` and ``n_m`` of the rows absorbed since the last :meth:`take` (module
    docstring); ``n_models`` M >= 1, ``dim`` d >= 1."""

    def __init__(self, n_models: int, dim: int, gram: bool) -> None:
        self.n_models = check_int("n_models", n_models, low=1)
        self.dim = check_int("dim", dim, low=1)
        # each block is used through its transpose, an F-ordered (d, d) array that dsyrk updates in place: its
        # "upper" triangle is the block's lower one; allocated with the first rows (after a take, the release's
        # work is done by then and its memory free again)
        self.gram = bool(gram)
        self._gram = None
        self._moment = np.zeros((n_models, dim))
        self._counts = np.zeros(n_models, dtype=np.int64)

    @staticmethod
    def nbytes(n_models: int, dim: int, gram: bool) -> int:
        """Bytes of the sums and of :meth:`take`'s result (what the statistics of one episode occupy)."""
        return 8 * (2 * n_models * (dim * dim * gram + dim) + n_models)

    def absorb(self, X: np.ndarray, models: np.ndarray | None, weights: np.ndarray) -> None:
        """Add the rows ``X`` (n, d) with ``weights`` (n,) to the sums of their ``models`` (n,) int in [0, M), or all
        to model 0 (``models`` None)."""
        if models is None or self.n_models == 1:
            self._add(0, X, weights)
            return
        for m in np.flatnonzero(np.bincount(models, minlength=self.n_models)):
            mine = models == m
            self._add(int(m), X[mine], weights[mine])

    def _add(self, m: int, X: np.ndarray, w: np.ndarray) -> None:
        n = X.shape[0]
        if n == 0:
            return
        if self.gram:
            if self._gram is None:
                self._gram = mapped_zeros((self.n_models, self.dim, self.dim))
            G = self._gram[m].T  # F-ordered: updated in place (kept if the wrapper ever returns a copy)
            out = blas.dsyrk(1.0, X.T, beta=1.0, c=G, trans=0, lower=0, overwrite_c=1)
            if not np.shares_memory(out, G):
                G[...] = out
        self._moment[m] += X.T @ w
        self._counts[m] += n

    def take(self) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
        """``(G (M, d, d) symmetric or None, b (M, d), n (M,) int)``: fresh arrays of the sums so far; the sums are
        then zero (the episode is forgotten)."""
        gram = None
        if self.gram:  # the lower triangles hold the sums, the upper ones zeros: mirror them exactly, in place
            # (G + G^T off the diagonal, which is kept: the floats a new array would hold), and hand the array out
            gram = self._gram
            if gram is None:  # no rows since the last take
                gram = mapped_zeros((self.n_models, self.dim, self.dim))
            for G in gram:
                symmetrise(G)
            self._gram = None  # the next rows' sums start from zeros
        moment, counts = self._moment.copy(), self._counts.copy()
        self._moment[...] = 0.0
        self._counts[...] = 0
        return gram, moment, counts
