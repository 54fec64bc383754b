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


@pytest.mark.parametrize("name", ["random", "egreedy", "linucb", "greedy", "dp_hdb"])
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


# DP-HDB (dpbandit.agents.dp_hdb_blocks): one kernel per run of rounds, the single path's code where the kernel stops
INF = float("inf")
HDB_CASES = [  # (environment, agent parameters, the kernel's stops that must occur besides DONE and DRAWS)
    ({"dim": 40}, {"epsilon": 1.0}, {"FORCED"}),  # rejection sampling, the default warm-up
    ({"dim": 40}, {"epsilon": 16.0, "warmup": 1, "h": 0.05}, {"FORCED"}),
    ({"dim": 40}, {"epsilon": 1e5, "warmup": 0}, {"TIE", "SELECT"}),  # ties at round 1; rows past ln(8)/2
    ({"dim": 7, "n_arms": 3}, {"epsilon": 2.0, "warmup": 2}, {"SELECT"}),  # 2d <= 64: the inverse CDF every step
    ({"dim": 40}, {"epsilon": INF, "warmup": 5}, {"FORCED"}),  # noise off: the LMO, ties by the inverse CDF
    ({"dim": 40}, {"epsilon": 4.0, "form": "laplace", "warmup": 0}, None),  # Laplace noise every step: act/update
    ({"dim": 40, "link": "logistic", "theta_bound": 3.0}, {"epsilon": 8.0, "warmup": 3}, {"FORCED"}),
    ({"dim": 40, "context_norm": "linf", "normalize": "clip", "context_bound": 0.3}, {"epsilon": 2.0}, {"FORCED"}),
    ({"dim": 1000, "n_arms": 10, "horizon": 700}, {"epsilon": 1.0}, {"FORCED"}),
]


def _hdb_state(agent):
    e = agent.curator.learners
    return (e.t, agent.curator.round, e._scores, e.V, e._s_inf, e._last_j, e._last_value, agent.release.theta,
            agent.release.theta_forced, e.rng.bit_generator.state, agent.rng.bit_generator.state)


def _same_state(a, b):
    for x, y in zip(_hdb_state(a), _hdb_state(b)):
        assert np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y


def _watch_stops(monkeypatch) -> set:
    """The names of the stops the DP-HDB block kernel makes from now on (a set filled as it runs)."""
    from dpbandit.agents import dp_hdb_blocks

    seen, kernel = set(), dp_hdb_blocks.play_rounds
    names = {getattr(dp_hdb_blocks, n): n for n in ("DONE", "DRAWS", "TIE", "OBSERVE", "SELECT", "FORCED")}

    def watched(*args):
        result = kernel(*args)
        seen.add(names[result[1]])
        return result

    monkeypatch.setattr(dp_hdb_blocks, "play_rounds", watched)
    return seen


@pytest.mark.parametrize("env_kwargs, params, stops", HDB_CASES, ids=lambda c: str(sorted(c) if isinstance(c, set) else c))
def test_dp_hdb_blocks_give_the_step_loops_numbers_bit_for_bit(env_kwargs, params, stops, monkeypatch):
    seen = _watch_stops(monkeypatch)
    env = gymnasium.make("dpbandit/GLMBandit-v0", **{"n_arms": 4, "horizon": 2100, "theta": "dense", **env_kwargs})
    blocks, steps = (make_agent("dp_hdb", env, **params) for _ in range(2))
    assert plays_blocks(blocks) and block_source(env) is env.unwrapped
    frame = simulate(env, blocks, 11, None)
    assert frame.equals(play_steps(env, steps, 11, None))
    _same_state(blocks, steps)
    assert blocks.privacy_report().to_dict() == steps.privacy_report().to_dict()
    assert seen == set() if stops is None else seen >= {"DONE", "DRAWS", *stops}


def _user_block(obs, rewards, first=1):
    means = np.zeros(rewards.shape)
    return RoundBlock(first, obs, means, rewards, means.max(axis=1))


def test_dp_hdb_blocks_of_odd_users_check_clip_and_refuse_like_the_step_path(monkeypatch):
    """Zero contexts, contexts a rounding error over the bound (clipped), rewards beyond the clip, per-arm contexts:
    the kernel hands these rounds to the curator's own ``observe``; a context over the bound or a NaN reward raises
    the step path's error."""
    env = gymnasium.make("dpbandit/GLMBandit-v0", n_arms=3, dim=40, horizon=600, context_norm="linf",
                         context_bound=0.5)
    blocks, steps = (make_agent("dp_hdb", env, epsilon=2.0, warmup=4) for _ in range(2))
    blocks.reset(3)
    steps.reset(3)
    gen = np.random.default_rng(5)
    obs = gen.uniform(-0.5, 0.5, (500, 3, 40))  # another context on each arm
    obs[::7] = 0.0
    obs[3::11, :, 0] = 0.5 * (1.0 + 1e-12)
    rewards = gen.normal(0.0, 50.0, (500, 3))
    seen = _watch_stops(monkeypatch)
    arms = blocks.play_block(_user_block(obs, rewards))
    assert "OBSERVE" in seen  # the contexts over the bound went to the curator's checks (and clip)
    for i in range(500):
        assert arms[i] == steps.act(obs[i])
        steps.update(obs[i], int(arms[i]), rewards[i, arms[i]], {})
    _same_state(blocks, steps)
    for change, match in (("context", "context_bound"), ("reward", "nan")):
        bad_obs, bad_rewards = obs[:5].copy(), rewards[:5].copy()
        if change == "context":
            bad_obs[2] = 0.6
        else:
            bad_rewards[2] = np.nan
        with pytest.raises(ValueError, match=match):
            blocks.play_block(_user_block(bad_obs, bad_rewards, 501))


def test_dp_hdb_without_numpys_ddot_plays_its_blocks_through_act_and_update(monkeypatch):
    """Where no BLAS ``ddot`` gives numpy's ``V[a] @ x`` (``pofw_kernels.NUMPY_DOT`` False), the kernel is not used
    and the block's rounds run through ``act`` and ``update``: the same numbers."""
    from dpbandit.optim import pofw_kernels

    monkeypatch.setattr(pofw_kernels, "NUMPY_DOT", False)
    seen = _watch_stops(monkeypatch)
    env = gymnasium.make("dpbandit/GLMBandit-v0", n_arms=3, dim=40, horizon=1100, theta="dense")
    blocks, steps = (make_agent("dp_hdb", env, epsilon=2.0) for _ in range(2))
    assert simulate(env, blocks, 4).equals(play_steps(env, steps, 4, None)) and not seen
    _same_state(blocks, steps)
