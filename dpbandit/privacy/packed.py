"""Symmetric matrices as packed vectors: the isometry that lets a vector tree with iid Gaussian node noise release
symmetric Gram matrices with exactly the symmetric matrix noise of ``spec/errata.md`` E5.

For a symmetric n x n matrix M let ``phi(M)`` be the vector of its n(n+1)/2 entries on and above the diagonal, the
diagonal ones divided by sqrt(2). Then ``||phi(M)||_2 = ||M||_F / sqrt(2)`` (every off-diagonal entry appears twice
in ``||M||_F^2``, once in ``phi``), so phi is a linear isometry from (symmetric matrices, ||.||_F / sqrt 2) onto
(R^{n(n+1)/2}, ||.||_2), and for iid ``z ~ N(0, sigma^2 I)``

    phi^{-1}(phi(M) + z) = M + Z,   Z_jk = Z_kj ~ N(0, sigma^2) (j != k),   Z_jj = sqrt(2) z_jj ~ N(0, 2 sigma^2),

which is the law of :class:`~dpbandit.privacy.noise.SymmetricGaussianNoise` ``(Z' + Z'^T)/sqrt 2`` (E5). A
Gaussian vector mechanism on ``phi(item)`` with l2 sensitivity ``Delta_F / sqrt 2`` is therefore *the same
mechanism* as symmetric matrix noise of the same sigma with Frobenius sensitivity ``Delta_F``: same law of every
release, same privacy (Mahalanobis shift ``Delta_F / (sqrt 2 sigma)``). It draws n(n+1)/2 normals per matrix, the
number the symmetric noise needs, and keeps half the entries in the tree.

Layout: the entries are ordered column by column of the upper triangle, ``(j, k)`` for ``k = 0..n-1`` and
``j = 0..k``. ``mirror`` scatters a packed vector into the lower triangle of an n x n matrix (DP-UCB adds its noise
there: LAPACK's lower Cholesky factorisation reads only that triangle).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

__all__ = ["PackedLayout", "packed_layout"]

_INV_SQRT2 = 1.0 / math.sqrt(2.0)


@dataclass(frozen=True)
class PackedLayout:
    """Index arrays of the packed layout of n x n symmetric matrices (module docstring); all read-only.

    ``rows``, ``cols`` (P,): the entry (row <= col) of each packed position, P = n(n+1)/2; ``weight`` (P,):
    1/sqrt(2) on the diagonal, 1 off it (``phi``); ``mirror`` (P,): flat positions ``col * n + row`` in a C-ordered
    n x n matrix, the packed entries' mirror images *below* the diagonal.
    """

    n: int
    rows: np.ndarray
    cols: np.ndarray
    weight: np.ndarray
    mirror: np.ndarray
    flat: np.ndarray  # rows * n + cols: the packed entries' flat positions in an n x n matrix
    diagonal: np.ndarray  # the packed positions of the diagonal entries

    @property
    def size(self) -> int:
        return self.rows.size

    def pack_outer(self, v: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """``phi(v v^T)`` for a vector v of shape (n,): (P,), written into ``out`` when given."""
        out = np.take(np.multiply.outer(v, v), self.flat, out=out)
        out[self.diagonal] *= _INV_SQRT2
        return out

    def unpack(self, packed: np.ndarray) -> np.ndarray:
        """``phi^{-1}``: the symmetric (..., n, n) matrices of packed vectors (..., P) (for tests and inspection)."""
        out = np.zeros((*packed.shape[:-1], self.n, self.n))
        values = packed / self.weight
        out[..., self.rows, self.cols] = values
        out[..., self.cols, self.rows] = values
        return out


@functools.lru_cache(maxsize=32)
def packed_layout(n: int) -> PackedLayout:
    """The :class:`PackedLayout` of n x n symmetric matrices (cached)."""
    rows, cols = np.triu_indices(n)  # row <= col, row by row
    order = np.lexsort((rows, cols))  # column by column: column k holds rows 0..k
    rows, cols = rows[order], cols[order]
    weight = np.where(rows == cols, _INV_SQRT2, 1.0)
    mirror, flat, diagonal = cols * n + rows, rows * n + cols, np.flatnonzero(rows == cols)
    for a in (rows, cols, weight, mirror, flat, diagonal):
        a.flags.writeable = False
    return PackedLayout(n, rows, cols, weight, mirror, flat, diagonal)
