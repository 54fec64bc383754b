"""No silently meaningless agent (issue 24, item 3): a setting that would leave an agent playing like uniform random
play is refused at construction in one line naming the parameter, or replaced by a default the privacy report
states."""

import gymnasium
import pytest
from sklearn.datasets import load_iris

import dpbandit.envs  # noqa: F401
from dpbandit.agents import make_agent
from dpbandit.agents.dp_ucb import DPUCB
from dpbandit.agents.private import reward_clip_range
from dpbandit.envs.constants import BanditConstants
from dpbandit.experiment.config import AgentSpec, EnvSpec, ExperimentConfig
from dpbandit.offline import ReplayEnv, log_policy

T = 200


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X, y


def _own_data(iris, **kwargs):
    X, y = iris
    return gymnasium.make("dpbandit/Classification-v0", X=X, y=y, horizon=T, **kwargs)


NEEDS_BOUND = [  # (agent, params, what the message names besides theta_bound)
    ("dp_ucb", {"epsilon": 1.0}, "confidence width"),
    ("dp_hdb", {"epsilon": 1.0}, "radius=b"),
    ("fliphat", {"epsilon": 1.0}, "radius=C"),
    ("oco", {"learner": "pigd"}, "learner_params={'radius': ...}"),
]


@pytest.mark.parametrize("name, params, names", NEEDS_BOUND, ids=[n for n, *_ in NEEDS_BOUND])
def test_agents_that_need_a_theta_bound_refuse_an_infinite_one_in_one_line(iris, name, params, names):
    """On own data the bound is unknown (inf): before, dp_ucb played uniformly at random and the others failed with
    'radius must be a finite number > 0, got inf', naming no theta_bound."""
    with pytest.raises(ValueError) as info:
        make_agent(name, _own_data(iris), **params)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{name if name != 'oco' else 'oco (learner'}")
    assert "needs a finite theta_bound" in message and "got inf" in message and names in message
    assert "pass theta_bound=... to the environment" in message and "--theta-bound to dpbandit replay" in message
    make_agent(name, _own_data(iris, theta_bound=1.0), **params)  # a stated bound is accepted


def test_the_refusal_happens_in_experiment_validation_before_any_work(iris):
    config = ExperimentConfig(envs=(EnvSpec("dpbandit/Iris-v0", {"horizon": T}),),
                              agents=(AgentSpec("random"), AgentSpec("dp_ucb", params={"epsilon": 1.0})), seeds=1)
    with pytest.raises(ValueError, match="dp_ucb needs a finite theta_bound"):
        config.validate()


def test_replay_env_without_theta_bound_refuses_dp_ucb():
    env = gymnasium.make("dpbandit/SparseLogistic-v0", horizon=600, n_arms=3, dim=4, sparsity=2, instance_seed=0)
    data = log_policy(env, 300, seed=1)
    with pytest.raises(ValueError, match="dp_ucb needs a finite theta_bound"):
        make_agent("dp_ucb", ReplayEnv.from_logged(data, 100), epsilon=1.0)
    assert make_agent("dp_ucb", ReplayEnv.from_logged(data, 100, theta_bound=3.0), epsilon=1.0).cal.S == 3.0


def test_episodic_ridge_without_a_bound_splits_evenly_and_its_report_says_so(iris):
    """Before: 'gram_share must be a number in (0, 1), got nan' (inf/inf)."""
    agent = make_agent("episodic_ridge", _own_data(iris), epsilon=1.0)
    assert agent.cal.gram_share == 0.5
    note = agent.privacy_report().note
    assert "gram_share w = 0.5 (default for theta_bound = inf: an even split" in note
    bounded = make_agent("episodic_ridge", _own_data(iris, theta_bound=2.0), epsilon=1.0)
    L, B = 1.0, 0.5  # unit contexts, rewards in [0, 1] centred at 1/2; S = min(2, 2 B / L) = 1
    assert bounded.cal.gram_share == pytest.approx(L * 1.0 / (L * 1.0 + 2 * B))
    assert "(default L S / (L S + 2 B) with S = S_r = 1 = min(||theta||_2 bound, 2 B / L)" in bounded.privacy_report().note


def _constants(low, high):
    return BanditConstants(n_arms=2, dim=3, horizon=T, structure="disjoint", link="identity", context_norm="l2",
                           context_bound=1.0, theta_norm="l2", theta_bound=1.0, sparsity=3, noise_std=0.0,
                           reward_low=low, reward_high=high, mean_low=low, mean_high=high)


@pytest.mark.parametrize("low, high, c, value, needed", [(2.0, 3.0, 1.5, "1.5", "2"), (-5.0, -1.0, 0.5, "-0.5", "1")])
def test_a_reward_clip_that_maps_every_reward_to_one_value_is_refused(low, high, c, value, needed):
    """Rewards in [2, 3] clipped to [-1.5, 1.5] are all 1.5: the agent would learn nothing (before: accepted)."""
    with pytest.raises(ValueError) as info:
        DPUCB(_constants(low, high), epsilon=1.0, reward_clip=c)
    message = str(info.value)
    assert message.startswith(f"reward_clip = {c:g} clips every reward to {value}: rewards lie in [{low:g}, {high:g}]")
    assert f"pass reward_clip > {needed}" in message and "\n" not in message
    with pytest.raises(ValueError, match="reward_bound = 1.5 clips every reward"):
        make_agent("dp_hdb", _Env(_constants(2.0, 3.0)), epsilon=1.0, reward_bound=1.5)
    assert reward_clip_range(_constants(low, high), abs(low) + abs(high)).bound == abs(low) + abs(high)
    assert reward_clip_range(_constants(0.0, 1.0), 1e-3).high == 1e-3  # clips, but keeps the 0/1 signal


class _Env:
    def __init__(self, constants):
        self.constants = constants
        self.unwrapped = self


def test_the_oracle_refuses_logged_data_in_one_line():
    """Before: AttributeError ('ReplayEnv' object has no attribute 'expected_rewards'), a traceback in the CLI."""
    env = gymnasium.make("dpbandit/SparseLogistic-v0", horizon=600, n_arms=3, dim=4, sparsity=2, instance_seed=0)
    with pytest.raises(ValueError, match="oracle needs the environment's true expected rewards, which ReplayEnv"):
        make_agent("oracle", ReplayEnv.from_logged(log_policy(env, 100, seed=1), 50))


def test_lasso_refuses_an_infinite_default_penalty():
    """Noise-free rewards and no theta bound: the fallback penalty 0.05 s_x s_y was inf, so every Lasso fit was zero
    and the agent played uniformly at random (before: accepted)."""
    import math

    from dpbandit.agents.lasso_bandit import LassoBandit

    c = BanditConstants(n_arms=2, dim=3, horizon=T, structure="disjoint", link="identity", context_norm="l2",
                        context_bound=1.0, theta_norm="l2", theta_bound=math.inf, sparsity=3, noise_std=0.0,
                        reward_low=-math.inf, reward_high=math.inf, mean_low=-1.0, mean_high=1.0)
    with pytest.raises(ValueError, match=r"theta_bound = 1.0, inf; pass h, lambda1 and lambda2_0 explicitly"):
        LassoBandit(c)
    LassoBandit(c, h=0.5, lambda1=0.1, lambda2_0=0.1)
