"""The compiled noise-off N-IHT fit (:func:`dpbandit.optim.niht_kernels.iht_quadratic`) gives ``iht_steps``'s bits."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import blas

from dpbandit.optim.niht import NIHTConfig, iht_steps
from dpbandit.optim.niht_kernels import _numpy_sum, iht_quadratic


def _kept_sums(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The Gram sum as noise-off FLIPHAT keeps it (F-ordered, upper triangle by dsyrk) and ``X^T y``."""
    G = np.zeros((X.shape[1], X.shape[1])).T
    G = blas.dsyrk(1.0, X.T, beta=1.0, c=G, trans=0, lower=0, overwrite_c=1)
    return G, X.T @ y


@pytest.mark.parametrize("d, s, iterations, radius, ties", [
    (12, 3, 1, 3.0, False), (50, 5, 1, 0.5, False), (50, 5, 3, 100.0, False), (7, 7, 2, 1.0, False),
    (200, 10, 2, 2.0, False), (40, 4, 2, 5.0, True), (9, 20, 1, 1.0, True)])
def test_iht_quadratic_is_iht_steps_bit_for_bit(d, s, iterations, radius, ties):
    """Inside and outside the l1 ball, s < d and s >= d, M > 1, and contexts on a grid whose gradients tie in
    magnitude (the stable tie rule: the lowest indices): the same vector, every bit, as ``iht_steps`` with the
    gradient ``G theta - b`` from scipy's ``dsymv``."""
    rng = np.random.default_rng(d + s)
    for trial in range(20):
        n = int(rng.integers(1, 3 * d))
        X = rng.integers(-2, 3, (n, d)) / 2.0 if ties else rng.uniform(-1, 1, (n, d))
        y = rng.integers(-1, 2, n).astype(float) if ties else X[:, :3].sum(axis=1) + rng.normal(0, 0.1, n)
        G, b = _kept_sums(X, y)
        c = NIHTConfig(sparsity=s, step=0.9, iterations=iterations, radius=radius, x_max=1.0, reward_low=-5.0,
                       reward_high=5.0, link="identity")
        start = np.zeros(d) if trial % 2 else iht_steps(lambda t: blas.dsymv(1.0, G, t, lower=0) - b, np.zeros(d), n,
                                                      c)
        want = iht_steps(lambda t: blas.dsymv(1.0, G, t, lower=0) - b, start, n, c)
        got = iht_quadratic(G, b, start, c.step / n, s, radius, iterations)
        np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))


def test_iht_quadratic_refuses_a_c_ordered_gram():
    """The kernel reads the upper triangle of an F-ordered G (as dsymv is called); another layout is refused."""
    with pytest.raises(ValueError, match="F-ordered"):
        iht_quadratic(np.zeros((3, 3)) + np.arange(3), np.zeros(3), np.zeros(3), 0.1, 1, 1.0, 1)


@pytest.mark.parametrize("n", [1, 7, 8, 9, 127, 128, 129, 300, 1000, 4099])
def test_numpy_sum_is_numpys_pairwise_sum(n):
    """The inside test of the l1 projection sums as numpy does (pairwise, blocks of 128, eight partial sums)."""
    a = np.abs(np.random.default_rng(n).standard_normal(n)) * 10.0 ** np.random.default_rng(n + 1).uniform(-8, 8, n)
    assert _numpy_sum(a) == a.sum()


def test_a_user_added_one_by_one_is_absorbed_bit_for_bit():
    """KeptUsers.add_user (the block path's, compiled dsyrk) gives absorb's sums (scipy's dsyrk wrapper and X.T @ y),
    also for a row that is a strided view (an own-data table's column slice)."""
    from dpbandit.agents.fliphat_noise_off import KeptUsers

    gen = np.random.default_rng(3)
    one, rows = KeptUsers(2, 9, "identity"), KeptUsers(2, 9, "identity")
    table = gen.uniform(-1, 1, (40, 18))
    for i in range(40):
        x, m, y = table[i, ::2], i % 2, float(gen.normal())
        one.add_user(m, x, y)
        rows.absorb(np.ascontiguousarray(x)[None], np.array([m]), np.array([y]))
    assert one._gram.tobytes() == rows._gram.tobytes() and one._moment.tobytes() == rows._moment.tobytes()
    assert one.counts.tolist() == rows.counts.tolist() == [20, 20]


@pytest.mark.parametrize("min_count", [-np.inf, 15.0])
def test_refit_quadratic_is_iht_steps_per_model(min_count):
    """All models of kept sums refitted in one call: each model's iht_steps from its own start and count, bit for
    bit; a model under min_count keeps the caller's zeros."""
    from dpbandit.agents.fliphat_noise_off import KeptUsers

    gen = np.random.default_rng(8)
    kept, d = KeptUsers(3, 11, "identity"), 11
    models = np.array([0] * 30 + [1] * 12 + [2] * 25)
    X = gen.uniform(-1, 1, (len(models), d))
    kept.absorb(X, models, X[:, 0] - X[:, 2] + gen.normal(0, 0.1, len(models)))
    c = NIHTConfig(sparsity=3, step=0.8, iterations=2, radius=1.5, x_max=1.0, reward_low=-3.0, reward_high=3.0,
                   link="identity")
    previous = gen.uniform(-0.1, 0.1, (3, d))
    theta, counts = kept.refit(previous, c, None if np.isinf(min_count) else min_count)
    assert (counts is None) == np.isinf(min_count) and not theta.flags.writeable
    for m, n in enumerate([30, 12, 25]):
        G, b = kept._gram[m].T, kept._moment[m]
        want = (iht_steps(lambda t, G=G, b=b: blas.dsymv(1.0, G, t, lower=0) - b, previous[m], float(n), c)
                if n >= min_count else np.zeros(d))
        assert theta[m].tobytes() == want.tobytes()


def test_a_logistic_user_added_one_by_one_goes_to_the_rows_on_disk():
    """KeptUsers.add_user with the logistic link writes the row as absorb does: the same gradient afterwards."""
    from dpbandit.agents.fliphat_noise_off import KeptUsers

    gen = np.random.default_rng(4)
    one, rows = KeptUsers(2, 5, "logistic"), KeptUsers(2, 5, "logistic")
    for i in range(12):
        x, m, y = gen.uniform(-1, 1, 5), i % 2, float(i % 3 == 0)
        one.add_user(m, x, y)
        rows.absorb(x[None], np.array([m]), np.array([y]))
    theta = gen.normal(size=5)
    for m in (0, 1):
        assert one._rows.gradient(m, "logistic")(theta).tobytes() == rows._rows.gradient(m, "logistic")(theta).tobytes()
    assert one.counts.tolist() == [6, 6]
