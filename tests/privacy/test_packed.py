"""The packed symmetric layout: phi is an isometry (||phi(M)||_2 = ||M||_F / sqrt 2) and its layout puts the
leading (n-1) x (n-1) block first; ``mirror`` scatters it below the diagonal."""

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


def test_leading_block_comes_first_and_mirror_fills_the_lower_triangle():
    n = 6
    layout = packed_layout(n)
    M = np.arange(n * n, dtype=float).reshape(n, n)
    M = M + M.T
    packed = M[layout.rows, layout.cols]
    block = (n - 1) * n // 2
    assert np.all(layout.cols[:block] < n - 1) and np.all(layout.cols[block:] == n - 1)
    out = np.full(n * n, np.nan)
    out[layout.mirror] = packed
    out = out.reshape(n, n)
    np.testing.assert_array_equal(np.tril(out), np.tril(M))
    assert np.isnan(out[np.triu_indices(n, 1)]).all()  # nothing written above the diagonal
    np.testing.assert_array_equal(packed[block:-1], out[-1, :-1])  # the response column, as the last row
