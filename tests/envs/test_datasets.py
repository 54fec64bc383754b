import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import dpbandit.envs  # noqa: F401
from dpbandit.agents import make_agent
from dpbandit.envs.datasets import ClassificationBanditEnv
from dpbandit.experiment.runner import simulate

IDS = ["dpbandit/Digits-v0", "dpbandit/Wine-v0", "dpbandit/BreastCancer-v0", "dpbandit/Iris-v0"]


@pytest.mark.parametrize("env_id", IDS)
def test_check_env_without_warnings(env_id):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(gymnasium.make(env_id, horizon=50).unwrapped)


@pytest.mark.parametrize("norm", ["l2", "linf"])
def test_contexts_scaled_to_the_bound_and_labels_are_the_rewards(norm):
    env = ClassificationBanditEnv(dataset="wine", horizon=300, context_norm=norm, context_bound=2.0)
    assert (env.n_arms, env.dim) == (3, 13)
    obs, _ = env.reset(seed=1)
    for _ in range(300):
        x = obs[0]
        size = np.abs(x).max() if norm == "linf" else np.linalg.norm(x)
        assert size == pytest.approx(2.0)
        assert np.all(obs == x)
        arm = 1
        label = int(np.argmax(env.expected_rewards(obs)))
        obs, reward, _, truncated, info = env.step(arm)
        assert info["optimal_arm"] == label
        assert reward == float(arm == label) and info["regret"] == 1.0 - reward
    assert truncated


def test_seeding_and_full_information():
    a = ClassificationBanditEnv(dataset="iris", horizon=40, full_information=True)
    b = ClassificationBanditEnv(dataset="iris", horizon=40)
    oa, _ = a.reset(seed=3)
    ob, _ = b.reset(seed=3)
    for t in range(40):
        assert np.array_equal(oa, ob)
        oa, ra, _, _, ia = a.step(t % 3)
        ob, rb, _, _, ib = b.step(t % 3)
        assert ra == rb == ia["rewards"][t % 3]
    first = a.reset(seed=3)[0]
    assert not np.array_equal(first, a.reset(seed=4)[0]) or not np.array_equal(a.step(0)[0], first)


def test_oracle_zero_regret_and_linucb_learns_digits():
    env = gymnasium.make("dpbandit/Digits-v0", horizon=1500)
    assert simulate(env, make_agent("oracle", env), seed=0)["cumulative_regret"].iloc[-1] == 0
    linucb = simulate(env, make_agent("linucb", env, alpha=0.3), seed=0)["cumulative_regret"].iloc[-1]
    random = simulate(env, make_agent("random", env), seed=0)["cumulative_regret"].iloc[-1]
    assert random > 1200 and linucb < 0.5 * random, (linucb, random)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"dataset": "mnist"}, "dataset"),
        ({"horizon": 0}, "horizon"),
        ({"context_norm": "l1"}, "context_norm"),
        ({"context_bound": -1.0}, "context_bound"),
        ({"normalize": "squash"}, "normalize"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        ClassificationBanditEnv(**kwargs)
