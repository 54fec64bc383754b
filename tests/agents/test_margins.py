"""Default pre-selection margins come from the range of expected rewards (issue 12 item 5): with Bernoulli rewards
h/2 lies inside [0, 1], so the LASSO bandit and DP-HDB can exclude an arm."""

from __future__ import annotations

import math

import gymnasium
import numpy as np
import pytest

import dpbandit.envs  # noqa: F401  (registers the dpbandit/ ids)
from dpbandit.agents import make_agent
from dpbandit.agents.lasso_bandit import default_hyperparameters, expected_reward_range
from dpbandit.envs import USER_DATA, registered_envs

# Every built-in environment with a default instance (the USER_DATA ids need the user's own table).
DISJOINT = [e for e in registered_envs() if e != "dpbandit/SharedLinear-v0" and e not in USER_DATA]


@pytest.mark.parametrize("env_id", DISJOINT)
def test_default_margin_is_inside_the_range_of_expected_rewards(env_id):
    constants = gymnasium.make(env_id, horizon=100).unwrapped.constants
    low, high = expected_reward_range(constants)
    h = default_hyperparameters(constants)["h"]
    assert math.isfinite(h) and 0.0 < h / 2.0 <= (high - low) / 2.0 + 1e-12
    if constants.link != "identity" or constants.reward_high - constants.reward_low == 1.0:  # 0/1 rewards
        assert h / 2.0 <= 0.5


def test_known_margins():
    make = lambda env_id: gymnasium.make(env_id, horizon=100).unwrapped.constants  # noqa: E731
    logistic = make("dpbandit/SparseLogistic-v0")  # d = 50, l_inf contexts, means in [expit(-3), expit(3)]
    assert default_hyperparameters(logistic)["h"] == pytest.approx(math.tanh(1.5), rel=1e-12)  # expit(3) - expit(-3)
    assert default_hyperparameters(make("dpbandit/Iris-v0"))["h"] == 1.0
    gaussian = make("dpbandit/SparseLinear-v0")  # unchanged for Gaussian rewards: 5 s_y = 5 / sqrt(2 ln 100)
    assert default_hyperparameters(gaussian)["h"] == pytest.approx(5.0 / math.sqrt(2.0 * math.log(100.0)))


def test_lasso_bandit_excludes_arms_with_bernoulli_rewards():
    env = gymnasium.make("dpbandit/SparseLogistic-v0", horizon=1500)
    agent = make_agent("lasso", env)
    obs, _ = env.reset(seed=1)
    agent.reset(1)
    for _ in range(1500):
        arm = agent.act(obs)
        nxt, reward, _, _, info = env.step(arm)
        agent.update(obs, arm, reward, info)
        obs = nxt
    fresh = gymnasium.make("dpbandit/SparseLogistic-v0", horizon=300)
    obs, _ = fresh.reset(seed=9)
    excluded = 0
    for _ in range(299):
        forced = np.einsum("kd,kd->k", obs, agent.beta_forced)
        excluded += bool((forced < forced.max() - agent.h / 2.0).any())
        obs = fresh.step(0)[0]
    assert excluded >= 30  # 145 of 299 contexts at seed 1; never with the uncapped margin (h/2 = 2.47)
