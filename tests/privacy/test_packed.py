"""The packed symmetric layout: phi is an isometry (||phi(M)||_2 = ||M||_F / sqrt 2) and its layout puts the
leading (n-1) x (n-1) block first, mirrored below the diagonal by ``lower``."""

import math

import numpy as np
import pytest

from dpbandit.privacy.packed import packed_layout


@pytest.mark.parametrize("n", [1, 2, 5, 21])
def test_pack_unpack_round_trip_and_isometry(n):
    rng = np.random.default_rng(n)
    layout = packed_layout(n)
    assert layout.size == n * (n + 1) // 2
    v, w = rng.standard_normal(n), rng.standard_normal(n)
    D = np.outer(v, v) - np.outer(w, w)
    p = layout.pack_outer(v) - layout.pack_outer(w)
    np.testing.assert_allclose(layout.unpack(p), D, atol=1e-12)
    assert np.linalg.norm(p) == pytest.approx(np.linalg.norm(D) / math.sqrt(2), rel=1e-12)


def test_leading_block_comes_first_and_lower_mirrors_it():
    n = 6
    layout = packed_layout(n)
    M = np.arange(n * n, dtype=float).reshape(n, n)
    M = M + M.T
    packed = M[layout.rows, layout.cols]
    block = (n - 1) * n // 2
    assert np.all(layout.cols[:block] < n - 1) and np.all(layout.cols[block:] == n - 1)
    out = np.zeros((n - 1) * (n - 1))
    out[layout.lower] = packed[:block]
    np.testing.assert_array_equal(np.tril(out.reshape(n - 1, n - 1)), np.tril(M[:-1, :-1]))
    np.testing.assert_array_equal(packed[block:-1], M[:-1, -1])  # the response column


def test_pack_outers_is_pack_outer_row_by_row_bit_for_bit():
    rng = np.random.default_rng(3)
    for n in (2, 8, 51):
        layout = packed_layout(n)
        V = rng.normal(size=(6, n))
        assert np.array_equal(layout.pack_outers(V), np.stack([layout.pack_outer(v) for v in V]))
