"""WindowTree: exact running sums with noise off, the noisy-node structure of spec/private-oco-learners.md §3.2
(at most log2 W + 1 nodes per release, a cover of exactly the last W items, one draw per node reused while the node
is in the window), the error variance |N_t| sigma^2, window-DP labelling, validation."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from scipy import stats

from dpbandit.privacy.ledger import PrivacyLedger
from dpbandit.privacy.tree_calibration import calibrate_window_sigma
from dpbandit.privacy.noise import GaussianNoise, LaplaceNoise, SymmetricGaussianNoise
from dpbandit.privacy.window import WindowTree, window_block, window_cover
from tests.privacy.counter_noise import CounterNoise


@pytest.mark.parametrize("window", [1, 2, 5, 16])
def test_noise_off_releases_the_exact_running_sum(window):
    rng = np.random.default_rng(0)
    x = rng.integers(-100, 101, size=(3000, 3)).astype(float)
    tree = WindowTree(3, window)
    released = np.array([tree.add_and_release(v) for v in x])
    np.testing.assert_array_equal(released, np.cumsum(x, axis=0))


@pytest.mark.parametrize("window", [1, 2, 4, 8, 16, 32])
def test_window_cover_partitions_the_window_into_block_aligned_dyadic_nodes(window):
    m = window.bit_length() - 1
    for t in range(0, 6 * window + 3):
        cover = window_cover(t, window)
        items = [i for h, s in cover for i in range(s, s + 2**h)]
        assert items == list(range(max(0, t - window) + 1, t + 1))  # exactly the window, in order, no overlap
        assert len(cover) <= m + 1
        for h, s in cover:  # dyadic and inside one block
            assert (s - 1) % 2**h == 0 and (s - 1) // window == (s + 2**h - 2) // window
    assert window_cover(7, 4) == [(0, 4), (1, 5), (0, 7)]  # Lou's example: noisy v4, s56, v7


@pytest.mark.parametrize("window", [1, 2, 4, 8, 16, 5])
def test_noise_draws_are_exactly_the_spec_nodes_drawn_once_and_reused(window):
    """Releases with unit draws reveal which draws each release uses. The draws must correspond one-to-one to the
    nodes of window_cover (same set of release times), each drawn exactly once, each item in <= log2 W + 1 nodes."""
    W = window_block(window)
    T = 12 * W + 3
    noise = CounterNoise()
    tree = WindowTree(4 * T, window, noise, np.random.default_rng(0))
    times_of_draw, times_of_node = defaultdict(list), defaultdict(list)
    for t in range(1, T + 1):
        r = tree.add_and_release(np.zeros(4 * T))
        ids = np.flatnonzero(r)
        np.testing.assert_array_equal(r[ids], 1.0)
        cover = window_cover(t, window)
        assert len(ids) == len(cover) == tree.nodes_in_release() <= np.log2(W) + 1
        for k in ids:
            times_of_draw[int(k)].append(t)
        for node in cover:
            times_of_node[node].append(t)
    assert noise.draws == len(times_of_node)  # one draw per node, nothing wasted or drawn twice
    assert sorted(map(tuple, times_of_draw.values())) == sorted(map(tuple, times_of_node.values()))
    per_item = defaultdict(int)
    for h, s in times_of_node:
        for i in range(s, s + 2**h):
            per_item[i] += 1
    assert max(per_item.values()) <= tree.nodes_per_item == np.log2(W) + 1


def test_error_variance_is_nodes_times_sigma2_and_does_not_grow():
    """Error of shat_t against |N_t| sigma^2 over 20 000 coordinates, t = 1..3W, chi-square bounds at p = 1e-6
    (Bonferroni over the steps); |N_t| stays <= log2 W + 1 for ever."""
    D, W, sigma = 20_000, 8, 0.7
    tree = WindowTree(D, W, GaussianNoise(sigma), np.random.default_rng(21))
    steps = 3 * W
    lo, hi = stats.chi2.ppf(1e-6 / (2 * steps), D) / D, stats.chi2.isf(1e-6 / (2 * steps), D) / D
    for t in range(1, steps + 1):
        err = tree.add_and_release(np.ones(D)) - t
        nodes = tree.nodes_in_release()
        assert nodes == len(window_cover(t, W))
        assert lo < np.mean(err**2) / (nodes * sigma**2) < hi, (t, nodes)
    assert max(tree.nodes_in_release(t) for t in range(1, 50 * W)) == np.log2(W) + 1


def test_matrix_items_with_symmetric_noise():
    tree = WindowTree((5, 5), 4, SymmetricGaussianNoise(1.0), np.random.default_rng(0))
    for _ in range(11):
        r = tree.add_and_release(np.eye(5))
    np.testing.assert_array_equal(r, r.T)
    assert not np.array_equal(r, 11 * np.eye(5))


def test_window_is_rounded_up_to_a_power_of_two():
    tree = WindowTree(2, 5)
    assert (tree.window, tree.requested_window, tree.depth, tree.nodes_per_item) == (8, 5, 4, 4)
    assert [window_block(w) for w in (1, 2, 3, 4, 5, 64, 65)] == [1, 2, 4, 4, 8, 64, 128]


def test_state_is_O_log_W_independent_of_t():
    d, W = 100, 64
    tree = WindowTree(d, W, GaussianNoise(1.0), np.random.default_rng(0))
    before = tree.nbytes
    for _ in range(5 * W):
        tree.add(np.zeros(d))
    assert tree.nbytes == before == (2 * 6 + 4) * d * 8


def test_same_seed_same_releases():
    def run(seed):
        tree = WindowTree(3, 4, LaplaceNoise(1.0), np.random.default_rng(seed))
        return np.array([tree.add_and_release(np.ones(3)) for _ in range(20)])

    np.testing.assert_array_equal(run(3), run(3))
    assert not np.array_equal(run(3), run(4))


def test_window_tree_guarantee_is_window_dp_only():
    sigma = calibrate_window_sigma(1.0, 1e-5, 64, 2.0)
    tree = WindowTree(3, 64, GaussianNoise(sigma), np.random.default_rng(0), horizon=10_000)
    acc = tree.accounting
    assert (acc.window, acc.nodes_per_item, acc.horizon, acc.mechanism) == (64, 7, 10_000, "window tree")
    ledger = PrivacyLedger().add_tree(tree, 2.0)
    report = ledger.report(1e-5, guarantee="window-JDP", sensitivity_assumption="||grad|| <= 1")
    assert report.guarantee == "window-JDP" and report.window == 64
    assert report.epsilon == pytest.approx(1.0, abs=1e-6) and report.epsilon <= 1.0
    assert "W=64" in report.label
    for plain in ("DP", "JDP", "LDP"):
        with pytest.raises(ValueError, match="window"):
            ledger.report(1e-5, guarantee=plain, sensitivity_assumption="")


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    (dict(shape=3, window=0), ValueError, "window"),
    (dict(shape=3, window=2.0), TypeError, "window"),
    (dict(shape=3, window=4, horizon=0), ValueError, "horizon"),
    (dict(shape=(3, 4), window=4), ValueError, "shape"),
    (dict(shape=3, window=4, noise=GaussianNoise(1.0)), TypeError, "rng"),
    (dict(shape=3, window=4, noise=SymmetricGaussianNoise(1.0), rng=np.random.default_rng(0)), ValueError, "square"),
])
def test_validation(kwargs, error, match):
    with pytest.raises(error, match=match):
        WindowTree(**kwargs)


def test_horizon_and_item_checks():
    rng = np.random.default_rng(0)
    tree = WindowTree(2, 4, GaussianNoise(1.0), rng, horizon=3)
    state = rng.bit_generator.state
    with pytest.raises(ValueError, match="finite"):
        tree.add([np.nan, 0.0])
    assert tree.t == 0 and rng.bit_generator.state == state
    for _ in range(3):
        tree.add([1.0, 1.0])
    with pytest.raises(ValueError, match="horizon"):
        tree.add([1.0, 1.0])
