"""Batched DP-HDB (dpbandit.agents.batched.dp_hdb) beyond the conformance cases of tests/agents/test_batched.py:
rejection rounds that miss (second and later proposal rounds), the single-path rounds (zero contexts, clipped
rewards) and the single path's errors, with the state compared to single-seed agents after every round."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import dpbandit.envs  # noqa: F401
from dpbandit.agents import make_agent
from dpbandit.agents.batched import batched_form
from dpbandit.agents.batched.dp_hdb import BatchedDPHDB
from dpbandit.experiment.batch import simulate_batch_agents
from dpbandit.experiment.config import AgentSpec, EnvSpec
from dpbandit.experiment.loop import play_steps
from dpbandit.optim import pofw

SEEDS = [0, 3, 11]
ENV = {"n_arms": 4, "dim": 40, "horizon": 200, "theta": "dense", "structure": "disjoint"}


def _agents(params, env_kwargs=ENV):
    env = gymnasium.make("dpbandit/GLMBandit-v0", **env_kwargs)
    agents = [make_agent("dp_hdb", env, **params) for _ in SEEDS]
    for a, s in zip(agents, SEEDS):
        a.reset(s)
    return env, agents


def _state(agent):
    e = agent.curator.learners
    return e.t, e._scores.copy(), e.V.copy(), e._s_inf.copy(), e._last_j.copy(), e._last_value.copy()


def _assert_same(batched_agents, single_agents):
    for a, b in zip(batched_agents, single_agents):
        for x, y in zip(_state(a), _state(b)):
            assert np.array_equal(x, y)
        assert a.rng.bit_generator.state == b.rng.bit_generator.state
        assert a.curator.learners.rng.bit_generator.state == b.curator.learners.rng.bit_generator.state


def _lockstep(env_spec, agent_spec, seeds):
    """The seeds round by round through the batched form over the vector environment (the lockstep of environments
    without blocks: ``simulate_batch`` plays the GLM bandits' blocks seed after seed instead)."""
    from dpbandit.envs.vector import GLMBanditVectorEnv
    from dpbandit.experiment import batch

    envs = [gymnasium.make(env_spec.id, **env_spec.kwargs) for _ in seeds]
    agents = [make_agent("dp_hdb", e, **agent_spec.params) for e in envs]
    for a, s in zip(agents, seeds):
        a.reset(s)
    world = batch._Vector(GLMBanditVectorEnv.from_envs([e.unwrapped for e in envs]), list(seeds))
    return batch._play(world, batched_form(agents), envs[0].unwrapped.constants.horizon, None), agents


def test_rejection_rounds_that_miss_are_bit_identical(monkeypatch):
    """One proposal per round (batch 1) at epsilon = 3e4 (envelopes near ln(8)/2): many rows miss and take further
    rounds, each seed drawing its own proposals in the single order, in the batched form and in the block path."""
    monkeypatch.setattr(pofw, "_REJECTION_BATCH", 1)
    rounds = []
    original = BatchedDPHDB._rejection_round

    def counting(self, *args):
        rounds.append(args[2].size)
        return original(self, *args)

    monkeypatch.setattr(BatchedDPHDB, "_rejection_round", counting)
    env_spec = EnvSpec("dpbandit/GLMBandit-v0", ENV)
    agent_spec = AgentSpec("dp_hdb", params={"epsilon": 3e4, "warmup": 1})
    frames, agents = _lockstep(env_spec, agent_spec, SEEDS)
    assert len(rounds) > ENV["horizon"] + 50  # misses happened: more proposal rounds than selections
    blocks, _ = simulate_batch_agents(env_spec, agent_spec, SEEDS)
    for seed, frame, block_frame, agent in zip(SEEDS, frames, blocks, agents):
        env = gymnasium.make(env_spec.id, **env_spec.kwargs)
        single = make_agent("dp_hdb", env, **agent_spec.params)
        steps = play_steps(env, single, seed, None)
        assert frame.equals(steps) and block_frame.equals(steps)
        _assert_same([agent], [single])


@pytest.mark.parametrize("params", [{"epsilon": 2.0, "warmup": 2}, {"epsilon": float("inf"), "warmup": 0},
                                    {"epsilon": 1e5, "warmup": 1}, {"epsilon": 4.0, "form": "laplace"}])
def test_single_path_rounds_and_clipped_rewards_keep_every_seed_identical(params):
    """Zero contexts (the zero-gradient round of the single path) and rewards beyond the clip, among batched
    rounds: after every round each seed's learners and streams equal a single-seed agent's fed the same users."""
    env, agents = _agents(params)
    _, singles = _agents(params)
    policy = batched_form(agents)
    assert isinstance(policy, BatchedDPHDB)
    c = env.unwrapped.constants
    gen = np.random.default_rng(7)
    low, high = agents[0].reward_range
    for t in range(c.horizon):
        ctx = gen.uniform(-1.0, 1.0, (len(SEEDS), c.dim)) * c.context_bound / np.sqrt(c.dim)
        if t % 17 == 5:
            ctx[1] = 0.0  # seed 1's user has a zero context: every seed takes its own path this round
        obs = np.broadcast_to(ctx[:, None, :], (len(SEEDS), c.n_arms, c.dim))
        rewards = gen.normal(0.0, 2.0 * max(abs(low), abs(high)), len(SEEDS))  # often beyond the clip
        arms = policy.act(obs)
        assert arms.tolist() == [a.act(o) for a, o in zip(singles, obs)]
        policy.update(obs, arms, rewards)
        for a, o, arm, r in zip(singles, obs, arms, rewards):
            a.update(o, int(arm), float(r), {})
        _assert_same(agents, singles)
    for a, b in zip(agents, singles):  # the releases materialised at the horizon
        assert np.array_equal(a._release.theta, b._release.theta) and a._release.round == b._release.round
        assert a.privacy_report().to_dict() == b.privacy_report().to_dict()


@pytest.mark.parametrize("change, match", [("context", "context_bound"), ("nan context", "NaN"), ("reward", "nan"),
                                           ("arm", "arm")])
def test_bad_users_raise_the_single_path_errors(change, match):
    env, agents = _agents({"epsilon": 1.0, "warmup": 1})
    policy = batched_form(agents)
    c = env.unwrapped.constants
    ctx = np.full((len(SEEDS), c.dim), c.context_bound / np.sqrt(c.dim))
    rewards, arms = np.zeros(len(SEEDS)), np.zeros(len(SEEDS), dtype=np.intp)
    if change == "context":
        ctx[2] *= 1.5
    elif change == "nan context":
        ctx[2, 1] = np.nan
    elif change == "reward":
        rewards[1] = np.nan
    else:
        arms[0] = c.n_arms
    obs = np.broadcast_to(ctx[:, None, :], (len(SEEDS), c.n_arms, c.dim))
    with pytest.raises(ValueError, match=match):
        policy.update(obs, arms, rewards)


def test_build_declines_seeds_at_different_rounds_or_with_different_hyperparameters():
    env, agents = _agents({"epsilon": 1.0})
    other = make_agent("dp_hdb", env, epsilon=2.0)
    other.reset(5)
    assert batched_form(agents + [other]) is None
    obs = np.full((ENV["n_arms"], ENV["dim"]), 0.01)
    agents[0].update(obs, 0, 0.5, {})
    assert batched_form(agents) is None
