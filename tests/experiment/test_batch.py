"""simulate_batch: every seed's frame is bit-identical to simulate's for that seed; agents that neither play blocks nor
have a batched form are refused."""

import gymnasium
import pytest

from dpbandit.agents import make_agent
from dpbandit.experiment import simulate
from dpbandit.experiment.batch import simulate_batch
from dpbandit.experiment.config import AgentSpec, EnvSpec


def single(env_spec, agent_spec, seed, checkpoints):
    env = gymnasium.make(env_spec.id, **env_spec.kwargs)
    return simulate(env, make_agent(agent_spec.type, env, **agent_spec.params), seed, checkpoints)


def test_batched_checkpoints_and_a_block_boundary():
    env = EnvSpec("dpbandit/SparseLinear-v0", {"horizon": 1500, "dim": 70, "n_arms": 3})  # per-seed products
    agent = AgentSpec("linucb")
    frames = simulate_batch(env, agent, [5, 6], checkpoints=20)
    for seed, frame in zip([5, 6], frames):
        assert frame.equals(single(env, agent, seed, 20))


def test_agents_without_a_batched_form_are_refused():
    env = EnvSpec("dpbandit/GLMBandit-v0", {"horizon": 10})
    with pytest.raises(ValueError, match="no batched form"):
        simulate_batch(env, AgentSpec("lasso"), [0])
    with pytest.raises(ValueError, match="at least one seed"):
        simulate_batch(env, AgentSpec("linucb"), [])


def test_other_environments_step_seed_by_seed_with_the_same_results():
    env = EnvSpec("dpbandit/Iris-v0", {"horizon": 200})
    agent = AgentSpec("linucb")
    for seed, frame in zip([1, 2], simulate_batch(env, agent, [1, 2])):
        assert frame.equals(single(env, agent, seed, None))


def test_large_models_run_seed_by_seed_with_the_same_results():
    env = EnvSpec("dpbandit/GLMBandit-v0", {"n_arms": 10, "dim": 60, "horizon": 50})
    agent = AgentSpec("linucb")
    for seed, frame in zip([0, 1], simulate_batch(env, agent, [0, 1])):
        assert frame.equals(single(env, agent, seed, None))
