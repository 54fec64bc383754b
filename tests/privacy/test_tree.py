"""TreeAggregator: exact prefix sums, the node structure (each item in at most L noisy nodes, popcount(t) nodes per
release), the release variances of the vanilla and Honaker estimators, validation and reproducibility."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpbandit.privacy.noise import (
    GammaNormNoise,
    GaussianNoise,
    GeneralizedGaussianNoise,
    LaplaceNoise,
    SymmetricGaussianNoise,
)
from dpbandit.privacy.tree import TreeAggregator, popcount, tree_depth
from tests.privacy.counter_noise import CounterNoise

P_FAIL = 1e-6


def lowbit(k: int) -> int:
    return k & -k


def decomposition_ends(t: int) -> list[int]:
    """Right ends e of the dyadic nodes (e - lowbit(e), e] whose disjoint union is (0, t]."""
    ends = []
    while t:
        ends.append(t)
        t -= lowbit(t)
    return ends


def chi2_bounds(n: int, p: float) -> tuple[float, float]:
    """Two-sided bounds of chi2_n / n at total probability p."""
    return stats.chi2.ppf(p / 2, n) / n, stats.chi2.isf(p / 2, n) / n


# -- exact prefix sums -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("honaker", [False, True])
def test_noise_free_prefix_sums_are_exact_for_every_t_up_to_1e4(honaker):
    rng = np.random.default_rng(1)
    T, d = 10_000, 3
    x = rng.integers(-1000, 1001, size=(T, d)).astype(float)  # integer data: float sums are exact
    tree = TreeAggregator(d, T, honaker=honaker)
    released = np.array([tree.add_and_release(v) for v in x])
    np.testing.assert_array_equal(released, np.cumsum(x, axis=0))
    with pytest.raises(ValueError, match="horizon"):
        tree.add(x[0])


def test_noise_free_prefix_sums_of_real_vectors_match_cumsum():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(3000, 4))
    tree = TreeAggregator((4,), 3000)
    released = np.array([tree.add_and_release(v) for v in x])
    np.testing.assert_allclose(released, np.cumsum(x, axis=0), rtol=0, atol=1e-9)


def test_noise_free_prefix_sums_of_symmetric_matrices():
    rng = np.random.default_rng(3)
    T, n = 2000, 4
    v = rng.integers(-3, 4, size=(T, n, 1)).astype(float)
    items = v * np.swapaxes(v, 1, 2)  # outer products, like a Gram-matrix stream
    tree = TreeAggregator((n, n), T)
    released = np.array([tree.add_and_release(m) for m in items])
    np.testing.assert_array_equal(released, np.cumsum(items, axis=0))


def test_release_before_any_item_is_zero_and_a_copy():
    tree = TreeAggregator(3, 4, GaussianNoise(1.0), np.random.default_rng(0))
    np.testing.assert_array_equal(tree.release(), np.zeros(3))
    tree.add(np.ones(3))
    r = tree.release()
    r[:] = 1e9
    assert np.all(tree.release() < 1e8)


# -- node structure ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("T", [1, 2, 3, 7, 8, 100, 1000, 1024])
def test_vanilla_release_sums_popcount_nodes_and_each_item_is_in_at_most_L_nodes(T):
    noise = CounterNoise()
    tree = TreeAggregator(T, T, noise, np.random.default_rng(0))
    used = set()
    for t in range(1, T + 1):
        r = tree.add_and_release(np.zeros(T))
        ids = np.flatnonzero(r)
        np.testing.assert_array_equal(r[ids], 1.0)  # every node with coefficient 1
        # draw k-1 is the node closing at step k, which covers (k - lowbit(k), k]
        assert sorted(ids + 1) == sorted(decomposition_ends(t))
        assert len(ids) == popcount(t) == tree.nodes_in_release()
        used.update(int(k) + 1 for k in ids)
    assert noise.draws == T  # one draw per item, none in advance
    per_item = np.zeros(T + 1, dtype=int)
    for e in used:
        per_item[e - lowbit(e) + 1 : e + 1] += 1
    L = tree_depth(T)
    assert per_item[1:].max() == L == tree.nodes_per_item == tree.depth
    assert L <= int(np.ceil(np.log2(T))) + 1 if T > 1 else L == 1


@pytest.mark.parametrize("T", [1, 2, 3, 4, 7, 8, 13, 64])
def test_honaker_draws_one_noise_per_closed_node(T):
    noise = CounterNoise()
    tree = TreeAggregator(4 * T, T, noise, np.random.default_rng(0), honaker=True)
    for _ in range(T):
        tree.add(np.zeros(4 * T))
    # nodes of level h that close by T: floor(T / 2^h); every leaf lies in one node per level
    assert noise.draws == sum(T >> h for h in range(tree_depth(T)))


@pytest.mark.parametrize(("honaker", "T", "factor"), [
    (False, 8, 1.0), (False, 7, 3.0),
    (True, 4, 4 / 7), (True, 8, 8 / 15), (True, 7, 4 / 7 + 2 / 3 + 1), (True, 1, 1.0), (True, 2, 2 / 3),
])
def test_release_noise_coefficients_give_the_exact_variance(honaker, T, factor):
    """With unit draws the release is the coefficient vector: its squared norm is the variance in units of sigma^2
    (TF Privacy tree_aggregation_test values, spec/dp-testing-and-accounting.md §1.3, §3)."""
    tree = TreeAggregator(4 * T, T, CounterNoise(), np.random.default_rng(0), honaker=honaker)
    for _ in range(T):
        r = tree.add_and_release(np.zeros(4 * T))
    assert np.sum(r**2) == pytest.approx(factor, rel=1e-12)
    assert tree.release_variance_factor() == pytest.approx(factor, rel=1e-12)


def test_honaker_is_unbiased_and_never_worse_than_vanilla():
    """The Honaker coefficients of the draws sum per node to the node's weight; with noise off it is exact, and its
    variance factor is <= popcount(t) for all t <= 1024, with the [measured] worst/mean values of §1.3."""
    T = 1024
    tree_v = TreeAggregator(1, T, GaussianNoise(1.0), np.random.default_rng(0))
    tree_h = TreeAggregator(1, T, GaussianNoise(1.0), np.random.default_rng(0), honaker=True)
    fv = np.array([tree_v.release_variance_factor(t) for t in range(1, T + 1)])
    fh = np.array([tree_h.release_variance_factor(t) for t in range(1, T + 1)])
    assert np.all(fh <= fv + 1e-12)
    assert fv.max() == 10 and fv.mean() == pytest.approx(5.0, abs=1e-3)
    assert fh.max() == pytest.approx(5.80, abs=0.005) and fh.mean() == pytest.approx(2.90, abs=0.005)


# -- empirical variances ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("honaker", [False, True])
def test_empirical_release_variance_matches_popcount_or_honaker(honaker):
    """Per-step variance over 20 000 independent coordinates against popcount(t) sigma^2 (vanilla, TF Privacy
    [1,1,2,1,2,2,3,1]) or the Honaker factor; chi-square bounds at p = 1e-6 (Bonferroni over the 8 steps)."""
    D, sigma = 20_000, 2.5
    tree = TreeAggregator(D, 8, GaussianNoise(sigma), np.random.default_rng(11), honaker=honaker)
    lo, hi = chi2_bounds(D, P_FAIL / 8)
    expected_vanilla = [1, 1, 2, 1, 2, 2, 3, 1]
    for t in range(1, 9):
        err = tree.add_and_release(np.full(D, 0.5)) - 0.5 * t
        factor = tree.release_variance_factor()
        if not honaker:
            assert factor == expected_vanilla[t - 1]
        ratio = np.mean(err**2) / (factor * sigma**2)
        assert lo < ratio < hi, (t, ratio)


def test_symmetric_matrix_tree_releases_symmetric_noise_with_the_E5_variances():
    n, sigma, T = 150, 1.5, 7
    tree = TreeAggregator((n, n), T, SymmetricGaussianNoise(sigma), np.random.default_rng(5))
    for _ in range(T):
        r = tree.add_and_release(np.eye(n))
    err = r - T * np.eye(n)
    np.testing.assert_array_equal(err, err.T)
    off = err[np.triu_indices(n, 1)]
    lo, hi = chi2_bounds(off.size, P_FAIL / 2)
    assert lo < np.mean(off**2) / (3 * sigma**2) < hi  # popcount(7) = 3 nodes, off-diagonal variance sigma^2
    lo, hi = chi2_bounds(n, P_FAIL / 2)
    assert lo < np.mean(np.diag(err) ** 2) / (3 * 2 * sigma**2) < hi  # diagonal variance 2 sigma^2


# -- statistics for the accountant ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("T", "L"), [(1, 1), (2, 2), (3, 2), (4, 3), (1000, 10), (1023, 10), (1024, 11), (10**5, 17)])
def test_depth_is_floor_log2_plus_one(T, L):
    tree = TreeAggregator(2, T)
    assert tree_depth(T) == tree.depth == tree.nodes_per_item == L


def test_accounting_statement():
    noise = GaussianNoise(3.0)
    acc = TreeAggregator(5, 1000, noise, np.random.default_rng(0), honaker=True).accounting
    assert (acc.nodes_per_item, acc.depth, acc.horizon, acc.window, acc.shape) == (10, 10, 1000, None, (5,))
    assert acc.noise is noise and "Honaker" in acc.mechanism
    tree = TreeAggregator(5, 1000, noise, np.random.default_rng(0))
    assert tree.noise_description == {"name": "gaussian", "sigma": 3.0}
    assert TreeAggregator(5, 1000).noise_description is None and TreeAggregator(5, 1000).accounting.noise is None


def test_state_is_O_L_times_size_independent_of_T_and_no_noise_is_predrawn():
    d = 1000
    small = TreeAggregator(d, 2**10, GaussianNoise(1.0), np.random.default_rng(0))
    big = TreeAggregator(d, 2**20, GaussianNoise(1.0), np.random.default_rng(0))
    assert big.nbytes == (2 * 21 + 1) * d * 8
    assert small.nbytes == (2 * 11 + 1) * d * 8
    honaker = TreeAggregator(d, 2**20, GaussianNoise(1.0), np.random.default_rng(0), honaker=True)
    assert honaker.nbytes == (3 * 21 + 1) * d * 8


# -- reproducibility -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("honaker", [False, True])
def test_same_seed_same_releases(honaker):
    def run(seed):
        tree = TreeAggregator(6, 50, GaussianNoise(1.0), np.random.default_rng(seed), honaker=honaker)
        return np.array([tree.add_and_release(np.arange(6.0)) for _ in range(50)])

    np.testing.assert_array_equal(run(7), run(7))
    assert not np.array_equal(run(7), run(8))


# -- validation ---------------------------------------------------------------------------------------------------

RNG = np.random.default_rng(0)


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    (dict(shape=0, horizon=5), ValueError, "shape"),
    (dict(shape=(2, 3), horizon=5), ValueError, "shape"),
    (dict(shape=(2, 2, 3), horizon=5), ValueError, "shape"),
    (dict(shape=(2, 2, 2, 2), horizon=5), ValueError, "shape"),
    (dict(shape="3", horizon=5), TypeError, "shape"),
    (dict(shape=(1.5,), horizon=5), TypeError, "shape"),
    (dict(shape=True, horizon=5), TypeError, "shape"),
    (dict(shape=3, horizon=0), ValueError, "horizon"),
    (dict(shape=3, horizon=-4), ValueError, "horizon"),
    (dict(shape=3, horizon=10.0), TypeError, "horizon"),
    (dict(shape=3, horizon=True), TypeError, "horizon"),
    (dict(shape=3, horizon=5, noise="gaussian", rng=RNG), TypeError, "noise"),
    (dict(shape=3, horizon=5, noise=GaussianNoise(1.0)), TypeError, "rng"),
    (dict(shape=3, horizon=5, noise=GaussianNoise(1.0), rng=np.random.RandomState(0)), TypeError, "rng"),
    (dict(shape=(3, 3), horizon=5, noise=GammaNormNoise(1.0), rng=RNG), ValueError, "vector"),
    (dict(shape=(3, 3), horizon=5, noise=GeneralizedGaussianNoise(1.0, 3.0), rng=RNG), ValueError, "vector"),
    (dict(shape=3, horizon=5, noise=SymmetricGaussianNoise(1.0), rng=RNG), ValueError, "square"),
    (dict(shape=3, horizon=5, honaker=1), TypeError, "honaker"),
])
def test_constructor_validation(kwargs, error, match):
    with pytest.raises(error, match=match):
        TreeAggregator(**kwargs)


@pytest.mark.parametrize(("value", "error", "match"), [
    (np.zeros(4), ValueError, "shape"),
    (np.zeros((3, 1)), ValueError, "shape"),
    (np.array([1.0, np.nan, 0.0]), ValueError, "finite"),
    (np.array([1.0, np.inf, 0.0]), ValueError, "finite"),
    (["a", "b", "c"], TypeError, "value"),
    (np.array([True, False, True]), TypeError, "value"),
])
def test_bad_items_are_refused_before_any_noise_is_drawn(value, error, match):
    rng = np.random.default_rng(3)
    tree = TreeAggregator(3, 5, LaplaceNoise(1.0), rng)
    state = rng.bit_generator.state
    with pytest.raises(error, match=match):
        tree.add(value)
    assert tree.t == 0 and rng.bit_generator.state == state


def test_step_queries_are_validated():
    tree = TreeAggregator(2, 8)
    assert [tree.nodes_in_release(t) for t in range(9)] == [popcount(t) for t in range(9)]
    with pytest.raises(ValueError, match="t must"):
        tree.nodes_in_release(9)
    with pytest.raises(TypeError, match="t must"):
        tree.release_variance_factor(1.0)


def test_tree_noise_plus_exact_sums_is_the_vanilla_tree():
    """TreeNoise is the vanilla tree's mechanism: with the same generator it draws the same node noise, and exact
    prefix sum + its noise equals TreeAggregator's release to rounding at every step; same accounting statement."""
    from dpbandit.privacy.noise import GaussianNoise
    from dpbandit.privacy.tree_noise import TreeNoise

    noise = GaussianNoise(0.7)
    tree, alone = TreeAggregator((5,), 37, noise, np.random.default_rng(4)), TreeNoise((5,), 37, noise,
                                                                                       np.random.default_rng(4))
    assert alone.accounting == tree.accounting
    items = np.random.default_rng(9).normal(size=(37, 5))
    total = np.zeros(5)
    for t in range(37):
        tree.add(items[t])
        total += items[t]
        np.testing.assert_allclose(total + alone.add(), tree.release(), rtol=0, atol=1e-12)
    assert alone.t == 37
    with pytest.raises(ValueError, match="horizon is 37"):
        alone.add()
    with pytest.raises(TypeError, match="noise must be"):
        TreeNoise((5,), 37, None, np.random.default_rng(0))


def test_gaussian_tree_noise_is_the_noise_draw_bit_for_bit():
    """Gaussian nodes are drawn as standard normals into a buffer and scaled where the node closes: the same bits
    as the noise's own ``draw`` (``normal(0, sigma)``), which other noises use, and the same generator state."""
    from dpbandit.privacy.noise import GaussianNoise
    from dpbandit.privacy.tree_noise import TreeNoise

    fast, generic = (TreeNoise((231,), 100, GaussianNoise(2.7), np.random.default_rng(5)) for _ in range(2))
    assert fast._unit is not None and fast._scale == 2.7
    generic._unit, generic._scale = None, 1.0  # the path of every other noise: draw() as it is
    for _ in range(100):
        assert np.array_equal(fast.add(), generic.add())
    assert fast._rng.bit_generator.state == generic._rng.bit_generator.state


def test_tree_noise_stack_is_each_trees_own_add_bit_for_bit():
    """TreeNoiseStack.add (seed batching) = each TreeNoise's own add: same noise bit for bit, each tree's draws from
    its own generator; the horizon is refused as by TreeNoise."""
    from dpbandit.privacy.noise import GaussianNoise, LaplaceNoise
    from dpbandit.privacy.tree_noise import TreeNoise, TreeNoiseStack

    def trees():
        return [TreeNoise((5,), 37, GaussianNoise(0.7), np.random.default_rng(s)) for s in range(3)]

    alone, together = trees(), trees()
    stack = TreeNoiseStack(together)
    for _ in range(37):
        expected = np.stack([tree.add().copy() for tree in alone])
        assert np.array_equal(stack.add(), expected)
        assert all(np.array_equal(a.suffix, b.suffix) and a.t == b.t for a, b in zip(alone, together))
    states = [tree._rng.bit_generator.state for tree in together]
    with pytest.raises(ValueError, match="horizon is 37"):
        stack.add()
    assert [tree.t for tree in together] == [37] * 3  # refused before any tree stepped or drew
    assert [tree._rng.bit_generator.state for tree in together] == states
    one = trees()
    one[0].add()
    with pytest.raises(ValueError, match="same step"):
        TreeNoiseStack(one)
    with pytest.raises(ValueError, match="noise"):
        TreeNoiseStack([*trees(), TreeNoise((5,), 37, GaussianNoise(0.8), np.random.default_rng(0))])
    laplace = [TreeNoise((5,), 37, LaplaceNoise(0.7), np.random.default_rng(s)) for s in range(2)]
    alone = [TreeNoise((5,), 37, LaplaceNoise(0.7), np.random.default_rng(s)) for s in range(2)]
    stack = TreeNoiseStack(laplace)
    for _ in range(37):
        assert np.array_equal(stack.add(), np.stack([tree.add().copy() for tree in alone]))


def test_tree_noise_draws_units_in_blocks_as_its_steps_would():
    """draw_units + close_node + advance (a caller closing nodes in blocks, DP-UCB's play_block) gives the releases
    and step count of add(), bit for bit; non-Gaussian node noise and steps beyond the horizon are refused."""
    from dpbandit.privacy.tree_noise import TreeNoise, close_node

    stepped, blocked = (TreeNoise((4,), 9, GaussianNoise(0.7), np.random.default_rng(3)) for _ in range(2))
    expected = [stepped.add().copy() for _ in range(6)]
    units = blocked.draw_units(np.empty((6, 4)))
    got = []
    for t, unit in enumerate(units, start=1):
        close_node(blocked.suffix, (t & -t).bit_length() - 1, unit, blocked.scale)
        got.append(blocked.suffix[0].copy())
    blocked.advance(6)
    assert blocked.t == stepped.t == 6
    np.testing.assert_array_equal(np.array(got), np.array(expected))
    np.testing.assert_array_equal(blocked.add(), stepped.add())
    with pytest.raises(ValueError, match="horizon is 9"):
        blocked.advance(3)
    with pytest.raises(TypeError, match="Gaussian node noise, not LaplaceNoise"):
        TreeNoise((4,), 9, LaplaceNoise(1.0), np.random.default_rng(0)).draw_units(np.empty((2, 4)))
