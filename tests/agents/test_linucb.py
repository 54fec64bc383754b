"""LinUCB: scores against a naive reference, decisions, seeding and validation."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dpbandit.agents.linucb import LinUCB
from dpbandit.envs.constants import BanditConstants


def constants(K: int, d: int, structure: str) -> BanditConstants:
    return BanditConstants(
        n_arms=K, dim=d, horizon=1000, structure=structure, link="identity", context_norm="l2",
        context_bound=1.0, theta_norm="l2", theta_bound=1.0, sparsity=d, noise_std=0.1,
        reward_low=-np.inf, reward_high=np.inf, mean_low=-1.0, mean_high=1.0,
    )


def observation(rng: np.random.Generator, K: int, d: int, structure: str) -> np.ndarray:
    if structure == "disjoint":
        x = rng.normal(size=d)
        return np.tile(x / np.linalg.norm(x), (K, 1))
    X = rng.normal(size=(K, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def naive_scores(history, obs, K, d, lam, alpha, structure):
    """x^T theta_hat + alpha sqrt(x^T A^{-1} x) from scratch, by matrix inversion."""
    scores = np.empty(K)
    for a in range(K):
        rows = [(x, y) for x, arm, y in history if structure == "shared" or arm == a]
        A = lam * np.eye(d) + sum((np.outer(x, x) for x, _ in rows), np.zeros((d, d)))
        b = sum((y * x for x, y in rows), np.zeros(d))
        theta = np.linalg.solve(A, b)
        scores[a] = obs[a] @ theta + alpha * np.sqrt(obs[a] @ np.linalg.inv(A) @ obs[a])
    return scores


@pytest.mark.parametrize("structure", ["disjoint", "shared"])
@pytest.mark.parametrize("alpha, lam", [(0.0, 1.0), (1.0, 1.0), (2.5, 0.2)])
def test_scores_match_naive_reference(structure, alpha, lam):
    K, d = 4, 5
    rng = np.random.default_rng(0)
    theta = rng.normal(size=(K, d))
    agent = LinUCB(constants(K, d, structure), alpha=alpha, lam=lam)
    agent.reset(1)
    history = []
    for t in range(60):
        obs = observation(rng, K, d, structure)
        if t % 15 == 0:
            np.testing.assert_allclose(
                agent.scores(obs), naive_scores(history, obs, K, d, lam, alpha, structure), rtol=1e-9, atol=1e-12
            )
        arm = agent.act(obs)
        scores = agent.scores(obs)
        assert scores[arm] == scores.max()
        reward = obs[arm] @ theta[arm if structure == "disjoint" else 0] + 0.1 * rng.normal()
        agent.update(obs, arm, reward, {})
        history.append((obs[arm].copy(), arm, reward))


def test_first_round_is_a_uniform_tie_in_the_disjoint_structure():
    K, d = 5, 3
    agent = LinUCB(constants(K, d, "disjoint"))
    obs = np.tile([0.6, 0.0, 0.8], (K, 1))
    first = set()
    for seed in range(40):
        agent.reset(seed)
        first.add(agent.act(obs))
    assert len(first) >= 3  # 40 fair draws from 5 arms miss 3 of them with probability < 1e-6


def test_learns_the_best_arm():
    K, d = 3, 4
    rng = np.random.default_rng(3)
    theta = np.array([[1.0, 0, 0, 0], [0, 1.0, 0, 0], [-0.5, -0.5, 0, 0]])
    agent = LinUCB(constants(K, d, "disjoint"), alpha=0.5)
    agent.reset(0)
    regret = []
    for _ in range(1500):
        obs = observation(rng, K, d, "disjoint")
        means = np.einsum("kd,kd->k", obs, theta)
        arm = agent.act(obs)
        regret.append(means.max() - means[arm])
        agent.update(obs, arm, means[arm] + 0.1 * rng.normal(), {})
    # the last 500 rounds lose far less than the first 500 (random play loses about 0.5 per round here)
    assert np.sum(regret[-500:]) < 0.25 * np.sum(regret[:500])


@pytest.mark.parametrize("structure", ["disjoint", "shared"])
def test_same_seed_same_actions(structure):
    K, d = 4, 6
    rng = np.random.default_rng(4)
    obs_seq = [observation(rng, K, d, structure) for _ in range(150)]
    rewards = rng.normal(size=150)

    def run(seed):
        agent = LinUCB(constants(K, d, structure), alpha=1.0)
        agent.reset(seed)
        actions = []
        for obs, r in zip(obs_seq, rewards):
            arm = agent.act(obs)
            agent.update(obs, arm, r, {})
            actions.append(arm)
        return actions

    assert run(5) == run(5)


def test_reset_forgets():
    K, d = 3, 2
    agent = LinUCB(constants(K, d, "shared"), alpha=1.0)
    obs = np.eye(2)[[0, 1, 0]]
    before = agent.scores(obs)
    agent.update(obs, 1, 1.0, {})
    assert not np.allclose(agent.scores(obs), before)
    agent.reset(0)
    np.testing.assert_array_equal(agent.scores(obs), before)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"alpha": -0.1}, ValueError, "alpha must be a finite number >= 0"),
        ({"alpha": float("inf")}, ValueError, "alpha"),
        ({"alpha": None}, TypeError, "alpha must be a real number"),
        ({"lam": 0.0}, ValueError, "lam must be a finite number > 0"),
    ],
)
def test_bad_hyperparameters(kwargs, error, match):
    with pytest.raises(error, match=match):
        LinUCB(constants(2, 2, "disjoint"), **kwargs)


def test_bad_structure_names_the_parameter():
    bad = dataclasses.replace(constants(2, 2, "disjoint"), structure="hybrid")
    with pytest.raises(ValueError, match="structure must be one of"):
        LinUCB(bad)


def test_update_rejects_an_invalid_arm():
    agent = LinUCB(constants(3, 2, "disjoint"))
    with pytest.raises(ValueError, match="arm must be an integer in"):
        agent.update(np.ones((3, 2)), 5, 1.0, {})
    with pytest.raises(ValueError, match="arm must be an integer in"):
        agent.update(np.ones((3, 2)), -1, 1.0, {})
    with pytest.raises(TypeError, match="arm must be an integer"):
        agent.update(np.ones((3, 2)), 1.0, 1.0, {})
    assert not agent.ridge.counts.any()


def test_observations_of_the_wrong_shape_are_refused_before_the_kernel_reads_them():
    agent = LinUCB(constants(3, 2, "disjoint"))
    with pytest.raises(ValueError, match=r"observation must have shape \(K, d\) = \(3, 2\), got \(3, 3\)"):
        agent.act(np.ones((3, 3)))
    with pytest.raises(ValueError, match=r"x must have shape \(d,\) = \(2,\), got \(3,\)"):
        agent.update(np.ones((3, 3)), 0, 1.0, {})
    with pytest.raises(ValueError, match="NaN"):
        agent.act(np.array([[np.nan, 0.0], [0.0, 1.0], [1.0, 0.0]]))
    assert not agent.ridge.counts.any()


@pytest.mark.parametrize("structure", ["disjoint", "shared"])
@pytest.mark.parametrize("d", [1, 3, 4, 9])  # play_linucb_block sums four j at a time: no tail, and tails of 1 to 3
def test_play_block_is_act_and_update_bit_for_bit(structure, d):
    from dpbandit.envs.blocks import RoundBlock

    K, n = 4, 300
    rng = np.random.default_rng(d)
    obs = np.stack([observation(rng, K, d, structure) for _ in range(n)])
    rewards = rng.normal(size=(n, K))
    stepped, blocked = (LinUCB(constants(K, d, structure), alpha=0.7) for _ in range(2))
    stepped.reset(3)
    blocked.reset(3)
    arms = []
    for t in range(n):
        arms.append(stepped.act(obs[t]))
        stepped.update(obs[t], arms[-1], float(rewards[t, arms[-1]]), {})
    played = np.concatenate([blocked.play_block(RoundBlock(lo + 1, obs[lo:hi], rewards[lo:hi], rewards[lo:hi],
                                                           rewards[lo:hi].max(axis=1)))
                             for lo, hi in ((0, 1), (1, 170), (170, n))])
    assert played.tolist() == arms and len(set(arms)) > 1
    assert stepped.ridge.W.tobytes() == blocked.ridge.W.tobytes()
    assert stepped.ridge.b.tobytes() == blocked.ridge.b.tobytes()
    assert stepped.ridge.counts.tolist() == blocked.ridge.counts.tolist()
