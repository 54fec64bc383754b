"""The batched episodic forms (dpbandit/agents/batched/episodic.py) beyond the whole-run conformance of
tests/agents/test_batched.py: rounds fed by hand (rewards beyond the clip, rows at and beyond the context bound) leave
every seed's curator exactly where its own ``update`` leaves it, and bad input raises the single path's error."""

import math

import gymnasium
import numpy as np
import pytest

from dpbandit.agents import make_agent
from dpbandit.agents.batched import batched_form
from dpbandit.agents.batched.episodic import BatchedEpisodicRidge, BatchedFLIPHAT
from dpbandit.optim.gg_calibration import PublishedSettingWarning

ENV = {"n_arms": 3, "dim": 4, "horizon": 40, "theta": "dense"}


def _agents(name, seeds, structure="disjoint", **params):
    env = gymnasium.make("dpbandit/GLMBandit-v0", **ENV, structure=structure)
    agents = [make_agent(name, env, **params) for _ in seeds]
    for a, s in zip(agents, seeds):
        a.reset(s)
    return agents


def _rounds(rng, n, S, K=3, d=4):
    """n rounds of S seeds: unit-l2 contexts (some rows exactly at the bound), arms, rewards partly beyond the clip."""
    obs = rng.standard_normal((n, S, K, d))
    obs /= np.linalg.norm(obs, axis=-1, keepdims=True)
    arms = rng.integers(K, size=(n, S))
    rewards = rng.normal(0.0, 5.0, size=(n, S))  # the clip range is about [-1.4, 1.4]: most are clipped
    return obs, arms, rewards


@pytest.mark.parametrize("name,structure,params", [
    ("fliphat", "disjoint", {}), ("fliphat", "shared", {"selection": "gumbel"}),
    ("episodic_ridge", "disjoint", {"ucb_alpha": 1.0}), ("episodic_ridge", "shared", {"mode": "sum"}),
])
def test_update_by_hand_matches_each_seeds_own_update(name, structure, params):
    seeds = [1, 2, 7]
    batched, single = _agents(name, seeds, structure, **params), _agents(name, seeds, structure, **params)
    policy = batched_form(batched)
    assert isinstance(policy, BatchedFLIPHAT if name == "fliphat" else BatchedEpisodicRidge)
    obs, arms, rewards = _rounds(np.random.default_rng(0), 40, len(seeds))
    clipped = 0
    for t in range(40):
        chosen = policy.act(obs[t])
        for s, a in enumerate(single):
            assert chosen[s] == a.act(obs[t, s])
        policy.update(obs[t], arms[t], rewards[t])
        for s, a in enumerate(single):
            a.update(obs[t, s], int(arms[t, s]), float(rewards[t, s]), {})
        clip = single[0].curator.clip
        clipped += int(np.sum((rewards[t] < clip.low) | (rewards[t] > clip.high)))
        for b, a in zip(batched, single):
            assert b.curator.t == a.curator.t and b.curator.n_buffered == a.curator.n_buffered
            n = a.curator.n_buffered
            np.testing.assert_array_equal(b.curator._X[:n], a.curator._X[:n])
            np.testing.assert_array_equal(b.curator._arms[:n], a.curator._arms[:n])
            np.testing.assert_array_equal(b.curator._rewards[:n], a.curator._rewards[:n])
            np.testing.assert_array_equal(b._release.theta, a._release.theta)
    assert clipped > 20 and single[0].curator.n_releases >= 3
    assert all(b.privacy_report().to_dict() == a.privacy_report().to_dict() for b, a in zip(batched, single))


def test_bad_input_raises_the_single_path_error_before_buffering():
    agents = _agents("fliphat", [0, 1])
    policy = batched_form(agents)
    obs = np.zeros((2, 3, 4))
    obs[1, 2, 0] = 2.0  # seed 1's row 2 beyond ||x||_2 <= 1
    with pytest.raises(ValueError, match="context_bound"):
        policy.update(obs, np.array([0, 2]), np.zeros(2))
    obs[1, 2, 0] = math.nan
    with pytest.raises(ValueError, match="must be finite"):
        policy.update(obs, np.array([0, 2]), np.zeros(2))
    with pytest.raises(ValueError, match="reward"):
        policy.update(np.zeros((2, 3, 4)), np.array([0, 0]), np.array([0.0, math.inf]))
    with pytest.raises(ValueError, match=r"shape \(K, d\)"):
        policy.update(np.zeros((2, 2, 4)), np.array([0, 0]), np.zeros(2))
    assert all(a.curator.t == 0 and a.curator.n_buffered == 0 for a in agents)
    policy.update(obs, np.array([0, 0]), np.zeros(2))  # only the played row is bounded
    assert all(a.curator.t == 1 for a in agents)
    for _ in range(39):
        policy.update(np.zeros((2, 3, 4)), np.array([0, 0]), np.zeros(2))
    with pytest.raises(ValueError, match="horizon T = 40"):
        policy.update(np.zeros((2, 3, 4)), np.array([0, 0]), np.zeros(2))


def test_declines_seeds_at_different_users():
    agents = _agents("episodic_ridge", [0, 1])
    agents[1].update(np.zeros((3, 4)), 0, 0.0, {})
    assert batched_form(agents) is None


def test_act_breaks_ties_with_each_seeds_stream_and_refuses_nan():
    agents = _agents("fliphat", [0, 1, 2])
    policy = batched_form(agents)
    obs = np.broadcast_to(np.array([[1.0, 0.0, 0.0, 0.0]]), (3, 3, 4))
    copies = [np.random.Generator(type(a.rng.bit_generator)()) for a in agents]
    for copy, a in zip(copies, agents):
        copy.bit_generator.state = a.rng.bit_generator.state
    policy.theta = np.zeros((3, 3, 4))
    policy.theta[0, 2, 0] = 1.0  # seed 0: no tie; seeds 1, 2: all three arms tie
    arms = policy.act(obs)
    assert arms[0] == 2 and agents[0].rng.bit_generator.state == copies[0].bit_generator.state  # not consumed
    for s in (1, 2):  # argmax_random_tie's draw from the seed's own stream
        assert arms[s] == copies[s].integers(3)
        assert agents[s].rng.bit_generator.state == copies[s].bit_generator.state
    policy.theta[0, 1, 0] = np.nan  # seed 0: NaN, seed 1: a two-way tie, seed 2: none (match counts sum to S)
    policy.theta[1, :2, 0] = 1.0
    policy.theta[2, 2, 0] = 1.0
    with pytest.raises(ValueError, match="NaN"):
        policy.act(obs)


def test_infinite_reward_refused_under_an_unbounded_clip():
    with pytest.warns(PublishedSettingWarning):  # the published code's setting clips nothing per round
        agents = _agents("fliphat", [0, 1], "shared", published_setting_not_private=True, first_episode=4)
    policy = batched_form(agents)
    assert agents[0].curator.clip.high == math.inf
    with pytest.raises(ValueError, match="reward must be a finite number"):
        policy.update(np.zeros((2, 3, 4)), np.array([0, 0]), np.array([0.0, math.inf]))
    policy.update(np.zeros((2, 3, 4)), np.array([0, 0]), np.array([0.0, 1e300]))
    assert agents[1].curator._rewards[0] == 1e300


@pytest.mark.parametrize("S,K,d", [(16, 2, 50), (16, 10, 20), (10, 5, 50), (3, 4, 7), (19, 3, 129), (1, 1, 1)])
def test_score_functions_rows_are_bit_for_bit_the_single_calls(S, K, d):
    """The batched forms rely on it: each seed's row of a stacked call is exactly its own call (numpy runs the
    same per-row kernels), for the layouts simulate_batch passes (a seed-strided block slice; a context broadcast
    over the arms with stride 0, as the disjoint environments show it)."""
    from dpbandit.agents.episodic_ridge import ridge_scores
    from dpbandit.agents.fliphat import greedy_scores

    rng = np.random.default_rng(S * 1000 + K * 100 + d)
    full = rng.standard_normal((S, 3, K, d))[:, 1]
    broadcast = np.broadcast_to(rng.standard_normal((S, 2, d))[:, 1, None, :], (S, K, d))
    theta_k, theta = rng.standard_normal((S, K, d)), rng.standard_normal((S, d))
    theta_1 = rng.standard_normal((S, 1, d))
    A = rng.standard_normal((S, K + 1, d, d))
    v_inv = np.einsum("smij,smkj->smik", A, A)  # positive semi-definite, as V^{-1}
    for O in (full, broadcast):
        cases = [
            (greedy_scores(theta_k, O), [greedy_scores(theta_k[s], O[s]) for s in range(S)]),
            (greedy_scores(theta, O), [greedy_scores(theta[s], O[s]) for s in range(S)]),
            (ridge_scores(theta_1, v_inv[:, :1], 0.7, True, O),
             [ridge_scores(theta_1[s], v_inv[s, :1], 0.7, True, O[s]) for s in range(S)]),
            (ridge_scores(theta_k, v_inv[:, :K], 0.7, False, O),
             [ridge_scores(theta_k[s], v_inv[s, :K], 0.7, False, O[s]) for s in range(S)]),
        ]
        for batched, rows in cases:
            assert batched.shape == (S, K)
            np.testing.assert_array_equal(batched, np.stack(rows))


@pytest.mark.parametrize("name,structure,params", [
    ("fliphat", "disjoint", {}), ("fliphat", "shared", {"iterations": 3}),
    ("episodic_ridge", "disjoint", {"first_episode": 2}), ("episodic_ridge", "shared", {"first_episode": 2}),
])
def test_chunks_absorbed_mid_episode_keep_every_seed_bit_identical(name, structure, params, monkeypatch):
    """With chunks of 5 users (episodes up to 16 long), every seed's curator absorbs its own full chunks into its
    sums inside the lockstep round: releases stay bit for bit the single path's."""
    monkeypatch.setattr(f"dpbandit.agents.{name}.CHUNK_ROWS", 5)
    assert _agents(name, [0], structure, **params)[0].curator.buffer_rows == 5
    test_update_by_hand_matches_each_seeds_own_update(name, structure, params)
