"""Baselines: uniform random play, the oracle, greedy and epsilon-greedy, and the tie-breaking helper."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from dpbandit.agents.baselines import EpsilonGreedy, Greedy, Oracle, UniformRandom, argmax_random_tie
from dpbandit.envs.constants import BanditConstants

P_FAIL = 1e-6  # per statistical check


def constants(K: int = 4, d: int = 3, structure: str = "disjoint") -> BanditConstants:
    return BanditConstants(
        n_arms=K, dim=d, horizon=1000, structure=structure, link="identity", context_norm="l2",
        context_bound=1.0, theta_norm="l2", theta_bound=1.0, sparsity=d, noise_std=0.1,
        reward_low=-np.inf, reward_high=np.inf, mean_low=-1.0, mean_high=1.0,
    )


def assert_uniform(counts: np.ndarray) -> None:
    """Chi-square goodness of fit to the uniform law, rejecting only at p < 1e-6."""
    statistic, _ = stats.chisquare(counts)
    assert statistic < stats.chi2.isf(P_FAIL, len(counts) - 1), counts


def disjoint_obs(rng: np.random.Generator, K: int, d: int) -> np.ndarray:
    x = rng.normal(size=d)
    return np.tile(x / np.linalg.norm(x), (K, 1))


# --------------------------------------------------------------------------- argmax helper
def test_argmax_random_tie_unique_max_draws_nothing():
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    assert argmax_random_tie(np.array([0.1, 3.0, -2.0]), rng) == 1
    assert rng.bit_generator.state == state


def test_argmax_random_tie_is_uniform_over_ties():
    rng = np.random.default_rng(1)
    values = np.array([1.0, 5.0, 5.0, 2.0, 5.0])
    picks = np.array([argmax_random_tie(values, rng) for _ in range(6000)])
    assert set(np.unique(picks)) == {1, 2, 4}
    assert_uniform(np.bincount(picks, minlength=5)[[1, 2, 4]])


def test_argmax_random_tie_handles_infinities_and_rejects_nan():
    rng = np.random.default_rng(2)
    assert argmax_random_tie(np.array([-np.inf, 0.5, -np.inf]), rng) == 1
    with pytest.raises(ValueError, match="NaN"):
        argmax_random_tie(np.array([0.0, np.nan]), rng)


# --------------------------------------------------------------------------- random
def test_uniform_random_is_uniform():
    agent = UniformRandom(constants(K=6))
    agent.reset(11)
    obs = np.zeros((6, 3))
    picks = np.array([agent.act(obs) for _ in range(12000)])
    assert picks.min() >= 0 and picks.max() <= 5
    assert_uniform(np.bincount(picks, minlength=6))


def test_uniform_random_seeding():
    agent = UniformRandom(constants(K=5))
    obs = np.zeros((5, 3))

    def actions(seed):
        agent.reset(seed)
        return [agent.act(obs) for _ in range(50)]

    assert actions(3) == actions(3)
    assert actions(3) != actions(4)


# --------------------------------------------------------------------------- oracle
def test_oracle_picks_the_argmax_of_the_true_means():
    theta = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]])

    def expected_rewards(obs):
        return np.einsum("kd,kd->k", obs, theta)

    agent = Oracle(constants(K=3, d=2), expected_rewards=expected_rewards)
    rng = np.random.default_rng(5)
    for _ in range(200):
        obs = disjoint_obs(rng, 3, 2)
        means = expected_rewards(obs)
        arm = agent.act(obs)
        assert means[arm] == means.max()
        agent.update(obs, arm, 0.0, {})


def test_oracle_from_env_reads_the_environment():
    consts = constants(K=3, d=2)
    env = SimpleNamespace(unwrapped=SimpleNamespace(constants=consts, expected_rewards=lambda obs: obs[:, 0]))
    agent = Oracle.from_env(env)
    assert agent.act(np.array([[0.0, 9.0], [2.0, 0.0], [1.0, 5.0]])) == 1
    with pytest.raises(TypeError, match="expected_rewards"):
        Oracle.from_env(env, expected_rewards=lambda obs: obs[:, 1])
    with pytest.raises(TypeError, match="expected_rewards must be a callable"):
        Oracle(consts, expected_rewards=np.zeros(3))


# --------------------------------------------------------------------------- greedy
@pytest.mark.parametrize("structure", ["disjoint", "shared"])
def test_greedy_breaks_initial_ties_at_random(structure):
    agent = Greedy(constants(K=4, structure=structure))
    agent.reset(7)
    obs = np.ones((4, 3))
    picks = np.array([agent.act(obs) for _ in range(4000)])  # all estimates are 0: a four-way tie
    assert_uniform(np.bincount(picks, minlength=4))


def test_greedy_follows_the_ridge_estimate():
    agent = Greedy(constants(K=3, d=2), lam=1.0)
    x = np.array([[1.0, 0.0]] * 3)
    for arm, reward in [(0, 0.2), (1, 0.9), (2, -0.5)]:
        agent.update(x, arm, reward, {})
    # theta_a = reward_a * x / (lam + 1): the means are 0.1, 0.45, -0.25
    np.testing.assert_allclose(agent.ridge.predict(x), [0.1, 0.45, -0.25])
    assert all(agent.act(x) == 1 for _ in range(20))


# --------------------------------------------------------------------------- epsilon-greedy
def trained_egreedy(K: int, **params) -> tuple[EpsilonGreedy, np.ndarray]:
    agent = EpsilonGreedy(constants(K=K, d=2), **params)
    obs = np.array([[1.0, 0.0]] * K)
    for arm in range(K):
        agent.update(obs, arm, 1.0 if arm == 2 else 0.0, {})  # arm 2 is the unique greedy arm
    return agent, obs


@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.5, 1.0])
def test_epsilon_greedy_explores_with_the_stated_frequency(epsilon):
    K, n = 5, 20000
    agent, obs = trained_egreedy(K, epsilon=epsilon)
    picks = np.array([agent.act(obs) for _ in range(n)])
    non_greedy = int(np.count_nonzero(picks != 2))
    p = epsilon * (K - 1) / K
    low, high = stats.binom.interval(1 - P_FAIL, n, p)
    assert low <= non_greedy <= high, (non_greedy, low, high)
    if epsilon > 0:
        # exploration is uniform over all arms
        explored = np.bincount(picks[picks != 2], minlength=K)
        assert_uniform(np.delete(explored, 2))


def test_epsilon_greedy_decaying_schedule():
    agent, obs = trained_egreedy(4, epsilon=1.0, decay=10.0)
    rates = []
    for _ in range(30):
        rates.append(agent.current_epsilon())
        agent.act(obs)
    np.testing.assert_allclose(rates, [min(1.0, 10.0 / t) for t in range(1, 31)])
    capped, _ = trained_egreedy(4, epsilon=0.2, decay=10.0)
    assert capped.current_epsilon() == 0.2
    # late rounds explore rarely: with epsilon_t = 10 / t, rounds 1000..20999 explore about 10 ln 21 = 30 times
    agent.t = 999
    picks = np.array([agent.act(obs) for _ in range(20000)])
    mean_explorations = sum(10.0 / t for t in range(1000, 21000))
    assert np.count_nonzero(picks != 2) <= stats.poisson.isf(P_FAIL, mean_explorations)


def test_epsilon_greedy_same_seed_same_actions():
    rng = np.random.default_rng(9)
    obs_seq = [disjoint_obs(rng, 4, 3) for _ in range(200)]
    rewards = rng.normal(size=200)

    def run(seed):
        agent = EpsilonGreedy(constants(K=4), epsilon=0.3)
        agent.reset(seed)
        actions = []
        for obs, r in zip(obs_seq, rewards):
            arm = agent.act(obs)
            agent.update(obs, arm, r, {})
            actions.append(arm)
        return actions

    assert run(1) == run(1)
    assert run(1) != run(2)


# --------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "cls, kwargs, error, match",
    [
        (Greedy, {"lam": 0.0}, ValueError, "lam must be a finite number > 0"),
        (Greedy, {"lam": "1"}, TypeError, "lam must be a real number"),
        (EpsilonGreedy, {"epsilon": 1.5}, ValueError, r"epsilon must be a finite number in \[0, 1\]"),
        (EpsilonGreedy, {"epsilon": -0.1}, ValueError, "epsilon"),
        (EpsilonGreedy, {"epsilon": True}, TypeError, "epsilon"),
        (EpsilonGreedy, {"decay": 0.0}, ValueError, "decay must be a finite number > 0"),
        (EpsilonGreedy, {"lam": -2.0}, ValueError, "lam"),
    ],
)
def test_bad_hyperparameters(cls, kwargs, error, match):
    with pytest.raises(error, match=match):
        cls(constants(), **kwargs)


def test_constants_must_be_bandit_constants():
    with pytest.raises(TypeError, match="constants must be a BanditConstants"):
        UniformRandom({"n_arms": 3})
