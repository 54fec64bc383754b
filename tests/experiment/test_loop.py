"""The block protocol (issue 25): environments hand out blocks of rounds, agents play them through kernels, and
every number equals the Gymnasium ``step`` loop's; anything without blocks still runs through ``step``."""

import gymnasium
import numpy as np
import pytest
from scipy import stats

from dpbandit.agents import make_agent
from dpbandit.agents.base import Agent, plays_blocks
from dpbandit.agents.draws import BLOCK_ROUNDS, RoundDraws, argmax_rows, pick_tie, tie_uniforms
from dpbandit.agents.linucb import LinUCB
from dpbandit.envs.blocks import RoundBlock
from dpbandit.experiment import simulate
from dpbandit.experiment.batch import simulate_batch
from dpbandit.experiment.config import AgentSpec, EnvSpec
from dpbandit.experiment.loop import block_source, play_steps

ENVS = [
    {"structure": "disjoint", "link": "identity"},
    {"structure": "shared", "link": "identity", "reward_clip": 0.3},
    {"structure": "disjoint", "link": "logistic"},
    {"structure": "shared", "link": "probit"},
    # environment blocks of 499 rounds (2^20 feature entries), which split the agents' blocks of 1024 draws
    {"structure": "shared", "link": "identity", "n_arms": 3, "dim": 700},
]
AGENTS = [("random", {}), ("oracle", {}), ("greedy", {}), ("egreedy", {"epsilon": 0.3}),
          ("egreedy", {"epsilon": 1.0, "decay": 50.0}), ("linucb", {"alpha": 0.5})]


@pytest.mark.parametrize("env_kwargs", ENVS)
@pytest.mark.parametrize("agent", AGENTS, ids=lambda a: f"{a[0]}{a[1]}")
def test_blocks_give_the_step_loops_numbers_bit_for_bit(env_kwargs, agent):
    env = gymnasium.make("dpbandit/GLMBandit-v0", horizon=2100, **env_kwargs)
    a = make_agent(agent[0], env, **agent[1])
    assert block_source(env) is env.unwrapped and plays_blocks(a)
    for checkpoints in (None, 7):
        blocks = simulate(env, a, 11, checkpoints)
        steps = play_steps(env, a, 11, checkpoints)
        assert blocks.equals(steps)
    assert blocks["t"].tolist()[-1] == 2100 and blocks["cumulative_regret"].iloc[-1] > 0 or agent[0] == "oracle"


@pytest.mark.parametrize("name", ["random", "egreedy", "linucb", "greedy"])
def test_lockstep_units_play_blocks_with_each_seeds_single_frame(name):
    env = EnvSpec("dpbandit/SparseLinear-v0", {"horizon": 1500, "dim": 30})
    frames = simulate_batch(env, AgentSpec(name), [4, 5, 6], checkpoints=13)
    for seed, frame in zip([4, 5, 6], frames):
        single = gymnasium.make(env.id, **env.kwargs)
        assert frame.equals(simulate(single, make_agent(name, single), seed, 13))


class Recentred(gymnasium.RewardWrapper):
    """A third-party wrapper that changes rewards: the loop must honour it through ``step``."""

    def reward(self, reward):
        return reward - 1.0


def test_a_wrapper_that_changes_rewards_is_played_through_step():
    env = Recentred(gymnasium.make("dpbandit/SparseLinear-v0", horizon=300))
    assert block_source(env) is None
    agent = make_agent("linucb", env)
    frame = simulate(env, agent, 2)
    plain = gymnasium.make("dpbandit/SparseLinear-v0", horizon=300)
    reference = simulate(plain, make_agent("linucb", plain), 2)
    assert not np.allclose(frame["reward"], reference["reward"])  # the wrapper acted: LinUCB learned other rewards


class Stepper(gymnasium.Env):
    """A third-party environment without blocks: two arms, the second always better."""

    def __init__(self, constants):
        self.constants = constants
        self.observation_space = gymnasium.spaces.Box(-1, 1, (2, 3))
        self.action_space = gymnasium.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.ones((2, 3)) / 2, {}

    def step(self, action):
        regret = 0.0 if action == 1 else 1.0
        return np.ones((2, 3)) / 2, 1.0 - regret, False, False, {"regret": regret}


class Counter(Agent):
    """A third-party agent without ``play_block``: plays arm 1 from round 3 on."""

    name = "counter"

    def _reset_state(self):
        self.t = 0

    def act(self, observation):
        return int(self.t >= 2)

    def update(self, observation, arm, reward, info):
        self.t += 1


def test_third_party_environments_and_agents_run_through_step():
    glm = gymnasium.make("dpbandit/GLMBandit-v0", horizon=50, n_arms=2, dim=3)
    constants = glm.unwrapped.constants
    frame = simulate(Stepper(constants), Counter(constants), 0)
    assert frame["cumulative_regret"].iloc[-1] == 2.0 and frame["cumulative_reward"].iloc[-1] == 48.0
    frame = simulate(glm, Counter(constants), 0)  # a block environment with an agent without blocks
    assert frame["t"].iloc[-1] == 50 and not plays_blocks(Counter(constants))
    frame = simulate(Stepper(constants), make_agent("linucb", glm), 0)  # a block agent in a step environment
    assert frame["t"].iloc[-1] == 50


class Optimist(LinUCB):
    """A subclass overriding ``act``: LinUCB's ``play_block`` would skip it, so it is played round by round."""

    def act(self, observation):
        return 0


def test_a_subclass_overriding_act_is_played_round_by_round():
    env = gymnasium.make("dpbandit/SparseLinear-v0", horizon=200)
    agent = Optimist(env.unwrapped.constants)
    assert not plays_blocks(agent) and plays_blocks(LinUCB)
    assert simulate(env, agent, 0)["reward"].equals(play_steps(env, agent, 0, None)["reward"])


class BadBlocks(LinUCB):
    def play_block(self, block):
        return np.full(block.n, self.n_arms, dtype=np.intp)


def test_arms_out_of_range_from_play_block_are_refused():
    env = gymnasium.make("dpbandit/SparseLinear-v0", horizon=20)
    with pytest.raises(ValueError, match=r"BadBlocks.play_block must return 20 arms \(intp\) in \[0, 4\]"):
        simulate(env, BadBlocks(env.unwrapped.constants), 0)


def test_take_block_and_step_can_be_mixed_and_serve_the_same_rounds():
    env = gymnasium.make("dpbandit/GLMBandit-v0", horizon=1500, structure="shared").unwrapped
    obs, _ = env.reset(seed=3)
    served = []
    for _ in range(100):
        obs, reward, *_ , info = env.step(1)
        served.append((info["mean_rewards"], reward))
    block = env.take_block()
    assert isinstance(block, RoundBlock) and (block.first, block.n) == (101, 924)
    nxt = env.take_block()
    assert (nxt.first, nxt.n) == (1025, 476)
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step(0)
    reference = env.__class__(horizon=1500, structure="shared")
    reference.reset(seed=3)
    for t in range(1, 1402):
        _, reward, _, truncated, info = reference.step(1)
        if t > 1024:
            assert np.array_equal(info["mean_rewards"], nxt.means[t - 1025]) and reward == nxt.rewards[t - 1025, 1]
        elif t > 100:
            assert np.array_equal(info["mean_rewards"], block.means[t - 101])
            assert info["regret"] == block.best[t - 101] - block.means[t - 101, 1]
        else:
            assert np.array_equal(info["mean_rewards"], served[t - 1][0])
    with pytest.raises(RuntimeError, match="take_block"):
        env.__class__().take_block()


def test_round_draws_are_a_function_of_the_round_however_they_are_taken():
    one = RoundDraws(np.random.default_rng(1), tie_uniforms)
    many = RoundDraws(np.random.default_rng(1), tie_uniforms)
    singles = [one.next()[0] for _ in range(2500)]
    taken = np.concatenate([many.take(n)[0] for n in (3, 1500, 1, 996)])
    assert np.array_equal(singles, taken) and one.t == many.t == 2500
    assert np.array_equal(taken[:BLOCK_ROUNDS], np.random.default_rng(1).random(BLOCK_ROUNDS))


def test_ties_are_broken_uniformly_with_the_rounds_uniform():
    values = np.array([0.2, 1.0, -3.0, 1.0, 1.0, 1.0])
    u = np.random.default_rng(7).random(40000)
    picks = np.array([pick_tie(values, 1, 4, x) for x in u])
    counts = np.array([(picks == a).sum() for a in (1, 3, 4, 5)])
    assert counts.sum() == u.size and stats.chisquare(counts).pvalue > 1e-6
    assert pick_tie(values, 1, 1, 0.99) == 1 and pick_tie(np.array([np.nan, 1.0]), 0, 0, 0.5) == -1
    arms = np.empty(2, dtype=np.intp)
    assert argmax_rows(np.array([[0.0, 2.0], [np.nan, 1.0]]), np.array([0.5, 0.5]), arms) == 1 and arms[0] == 1


def test_an_oracle_of_another_truth_is_asked_round_by_round():
    from dpbandit.agents.baselines import Oracle

    env = gymnasium.make("dpbandit/SparseLinear-v0", horizon=1100)
    worst = Oracle(env.unwrapped.constants, expected_rewards=lambda obs: -env.unwrapped.expected_rewards(obs))
    frame = simulate(env, worst, 1)
    assert frame.equals(play_steps(env, worst, 1, None)) and (frame["regret"] > 0).all()
