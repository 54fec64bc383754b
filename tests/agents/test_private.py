"""Structure of private agents (dpbandit/agents/private.py): the action rule is a static function of the latest
release and the current user's observation, so it cannot read other users' data (the billboard argument of JDP);
the one reward-clipping rule (reward_clip_range) and its use by DP-HDB, DP-UCB and the OCO adapter."""

from __future__ import annotations

import dataclasses
import inspect
import math

import numpy as np
import pytest

from dpbandit.agents.dp_hdb import DPHDB
from dpbandit.agents.dp_ucb import DPUCB
from dpbandit.agents.oco_adapter import OCOAgent
from dpbandit.agents.private import REWARD_CLIP_STDS, Curator, PrivateAgent, check_context_bound, reward_clip_range
from dpbandit.envs.constants import BanditConstants
from dpbandit.privacy.report import PrivacyReport
from dpbandit.seeding import stream


def constants(K=3, d=4, T=100, structure="shared"):
    return BanditConstants(
        n_arms=K, dim=d, horizon=T, structure=structure, link="identity", context_norm="l2", context_bound=1.0,
        theta_norm="l2", theta_bound=1.0, sparsity=d, noise_std=0.1, reward_low=-1.0, reward_high=1.0,
        mean_low=-1.0, mean_high=1.0,
    )


@dataclasses.dataclass(frozen=True)
class MeanRelease:
    means: np.ndarray  # (K,) noisy per-arm reward means, read-only


class HistoryCurator(Curator):
    """A minimal curator that keeps the raw history and publishes noisy per-arm means."""

    def __init__(self, n_arms: int, rng: np.random.Generator):
        self.rng, self.history, self.n_arms = rng, [], n_arms
        self.first_draw = None

    def observe(self, observation, arm, reward):
        self.history.append((np.array(observation), arm, reward))

    def release(self):
        sums, counts = np.zeros(self.n_arms), np.ones(self.n_arms)
        for _, arm, reward in self.history:
            sums[arm] += reward
            counts[arm] += 1
        noise = self.rng.normal(scale=0.01, size=self.n_arms)
        if self.first_draw is None:
            self.first_draw = noise.copy()
        means = sums / counts + noise
        means.setflags(write=False)
        return MeanRelease(means)

    def privacy_report(self):
        return PrivacyReport.non_private("history curator (test)")


class MeanAgent(PrivateAgent):
    name = "test-mean"

    def _make_curator(self, privacy_rng):
        return HistoryCurator(self.n_arms, privacy_rng)

    @staticmethod
    def action_rule(release, observation, rng):
        scores = release.means + 1e-3 * observation.sum(axis=1)
        return int(np.argmax(scores))


def test_action_rule_must_be_a_staticmethod_at_class_creation():
    with pytest.raises(TypeError, match="must be a @staticmethod"):

        class Plain(MeanAgent):  # noqa: F841
            def action_rule(self, release, observation, rng):
                return 0

    with pytest.raises(TypeError, match="must be a @staticmethod"):

        class Klass(MeanAgent):  # noqa: F841
            @classmethod
            def action_rule(cls, release, observation, rng):
                return 0

    with pytest.raises(TypeError, match="must be a @staticmethod"):

        class Lambda(MeanAgent):  # noqa: F841
            action_rule = lambda self, release, observation, rng: 0  # noqa: E731

    class Fine(MeanAgent):
        @staticmethod
        def action_rule(release, observation, rng):
            return 0

    assert Fine(constants()).act(np.zeros((3, 4))) == 0


@pytest.mark.parametrize("cls", [MeanAgent, DPUCB])
def test_action_rule_sees_only_release_observation_and_rng(cls):
    rule = inspect.getattr_static(cls, "action_rule")
    assert isinstance(rule, staticmethod)
    assert list(inspect.signature(cls.action_rule).parameters) == ["release", "observation", "rng"]


def test_agent_without_curator_cannot_be_built():
    class NoCurator(PrivateAgent):
        @staticmethod
        def action_rule(release, observation, rng):
            return 0

    with pytest.raises(TypeError):
        NoCurator(constants())


def test_curator_gets_the_privacy_stream_and_the_rule_the_exploration_stream():
    agent = MeanAgent(constants())
    agent.reset(7)
    expected = stream(7, "privacy").normal(scale=0.01, size=3)
    np.testing.assert_array_equal(agent.curator.first_draw, expected)
    seen = []

    class Spy(MeanAgent):
        @staticmethod
        def action_rule(release, observation, rng):
            seen.append(rng)
            return 0

    spy = Spy(constants())
    spy.reset(3)
    spy.act(np.zeros((3, 4)))
    assert seen[0] is spy.rng
    assert spy.rng.bit_generator.state == stream(3, "exploration").bit_generator.state


def test_minimal_agent_action_unchanged_when_raw_history_is_altered():
    agent = MeanAgent(constants())
    rng = np.random.default_rng(0)
    obs = rng.uniform(size=(3, 4)) / 4
    for t in range(20):
        agent.update(obs, t % 3, 1.0 if t % 3 == 2 else 0.0, {})
    assert agent.act(obs) == 2
    agent.curator.history[:] = [(obs, 0, 1e6)] * 50  # rewrite the raw history of every earlier user
    assert agent.act(obs) == 2  # the action depends on the curator only through the last release
    agent.update(obs, 0, 1.0, {})  # the next release does reflect the (altered) data
    assert agent.act(obs) == 0


def _dpucb_with_users(structure: str, n_users: int = 40):
    agent = DPUCB(constants(K=3, d=4, structure=structure), epsilon=4.0, delta=1e-3)
    agent.reset(1)
    rng = np.random.default_rng(5)
    for t in range(n_users):
        X = rng.normal(size=(3, 4))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        agent.update(X, t % 3, float(rng.uniform(-1, 1)), {})
    return agent, rng


@pytest.mark.parametrize("structure", ["shared", "disjoint"])
def test_dpucb_action_unchanged_when_curator_history_is_altered_after_a_release(structure):
    agent, rng = _dpucb_with_users(structure)
    release = agent.curator.release()
    frozen = {k: np.array(v, copy=True) for k, v in vars(release).items() if isinstance(v, np.ndarray)}
    observations = [rng.normal(size=(3, 4)) / 2 for _ in range(25)]
    before = [agent.act(o) for o in observations]
    # alter the raw data the curator holds (exact sums, tree noise, work arrays) and feed it other users
    for state in _dpucb_state(agent.curator):
        state[...] = rng.normal(size=state.shape) * 1e3
    assert [agent.act(o) for o in observations] == before
    assert [DPUCB.action_rule(release, o, np.random.default_rng(0)) for o in observations] == before
    for t in range(5):
        agent.curator.observe(observations[t] / np.linalg.norm(observations[t], axis=1, keepdims=True), 0, 1.0)
    assert [DPUCB.action_rule(release, o, np.random.default_rng(0)) for o in observations] == before
    for key, value in frozen.items():  # the release was not aliased to the curator's state
        np.testing.assert_array_equal(getattr(release, key), value)


def _dpucb_state(curator) -> list:
    """Every array of a DP-UCB curator's state that holds users' data or the tree's noise."""
    return [curator._gram, curator._V, curator._v, curator._noise.suffix]


@pytest.mark.parametrize("structure", ["shared", "disjoint"])
def test_releases_are_read_only_and_share_no_memory_with_the_curator(structure):
    agent, _ = _dpucb_with_users(structure, 5)
    release = agent._release
    arrays = [v for v in vars(release).values() if isinstance(v, np.ndarray)]
    assert arrays
    state = _dpucb_state(agent.curator)
    for a in arrays:
        assert not a.flags.writeable
        with pytest.raises(ValueError):
            a.flat[0] = 0.0
        assert not any(np.shares_memory(a, s) for s in state)
    with pytest.raises(dataclasses.FrozenInstanceError):
        release.theta = None
    assert agent._release is agent.curator.release()  # act uses exactly the latest publication


def test_check_context_bound():
    check_context_bound(np.array([[0.6, 0.8], [1.0, 0.0]]), "l2", 1.0)
    check_context_bound(np.array([[1.0, -1.0]]), "linf", 1.0)
    with pytest.raises(ValueError, match=r"\|\|x\|\|_2 = 1.41421 > context_bound = 1"):
        check_context_bound(np.array([[1.0, 1.0]]), "l2", 1.0)
    with pytest.raises(ValueError, match="context_bound"):
        check_context_bound(np.array([1.0, -1.5]), "linf", 1.0)


def gaussian_constants(mean_low=-0.8, mean_high=1.0, noise_std=0.05, reward=(-math.inf, math.inf), K=2):
    """Disjoint identity-link constants (l_inf contexts; DP-HDB needs the disjoint structure)."""
    return dataclasses.replace(constants(K=K, d=4, structure="disjoint"), context_norm="linf", theta_norm="l1",
                               mean_low=mean_low, mean_high=mean_high, noise_std=noise_std,
                               reward_low=reward[0], reward_high=reward[1])


def test_reward_clip_rule_known_answers():
    clip = reward_clip_range(gaussian_constants())  # unbounded: mean bounds -/+ 4 noise_std
    assert REWARD_CLIP_STDS == 4.0 and (clip.low, clip.high) == pytest.approx((-1.0, 1.2)) and clip.bound == 1.2
    assert "mean bounds -/+ 4 noise_std = 0.05" in clip.describe() and "[-1, 1.2]" in clip.describe()
    assert clip.clip(1e9) == pytest.approx(1.2) and clip.clip(-1e9) == pytest.approx(-1.0) and clip.clip(0.3) == 0.3
    three = reward_clip_range(gaussian_constants(), n_std=3.0)
    assert (three.low, three.high) == pytest.approx((-0.95, 1.15))
    bounded = reward_clip_range(gaussian_constants(reward=(0.0, 1.0)))  # Bernoulli / clipped environment
    assert (bounded.low, bounded.high) == (0.0, 1.0) and "the environment's reward range" in bounded.rule
    override = reward_clip_range(gaussian_constants(), 0.5, name="reward_bound")
    assert (override.low, override.high) == (-0.5, 0.5) and override.rule == "reward_bound = 0.5"


@pytest.mark.parametrize("override, error, match", [
    (0.0, ValueError, "reward_clip must be"), (-1.0, ValueError, "reward_clip must be"),
    (math.inf, ValueError, "reward_clip must be"), ("1", TypeError, "reward_clip"),
])
def test_reward_clip_override_is_validated(override, error, match):
    with pytest.raises(error, match=match):
        reward_clip_range(gaussian_constants(), override)
    with pytest.raises(TypeError, match="BanditConstants"):
        reward_clip_range({"noise_std": 0.1})


@pytest.mark.parametrize("reward", [(-math.inf, math.inf), (-0.7, 0.7), (0.0, 1.0)])
def test_dp_hdb_dp_ucb_and_the_oco_adapter_share_the_rule_and_state_it(reward):
    c = gaussian_constants(reward=reward)
    clip = reward_clip_range(c)
    hdb, ucb = DPHDB(c, epsilon=1.0), DPUCB(c, epsilon=1.0)
    oco = OCOAgent(c, learner="pftal", epsilon=None, learner_params={"epsilon": 1.0})
    assert hdb.reward_range == (clip.low, clip.high) and ucb.cal.clip == clip and ucb.cal.B == clip.bound
    assert oco.known_constants()["y_bound"] == clip.bound
    for agent in (hdb, ucb, oco):
        assert clip.describe() in agent.privacy_report().sensitivity_assumption
    # each agent keeps its own override parameter
    assert DPHDB(c, epsilon=1.0, reward_bound=0.3).reward_range == (-0.3, 0.3)
    assert DPUCB(c, epsilon=1.0, reward_clip=0.3).cal.B == 0.3
    own = OCOAgent(c, learner="pftal", epsilon=None, learner_params={"epsilon": 1.0, "y_bound": 0.3})
    assert "reward clip" not in own.privacy_report().sensitivity_assumption


@pytest.mark.parametrize("name", ["dp_ucb", "dp_hdb", "fliphat", "episodic_ridge"])
@pytest.mark.parametrize("norm", ["l2", "linf"])
@pytest.mark.parametrize("position", [0, 2])
def test_private_agents_refuse_a_nan_context_and_stay_usable(name, norm, position):
    """A NaN compares false with every bound, so a check written ``norm > bound`` would pass it (and the sums the
    calibration rests on would turn NaN); every private bandit agent refuses it before its state changes."""
    import gymnasium

    import dpbandit.envs  # noqa: F401
    from dpbandit.agents import make_agent

    env = gymnasium.make("dpbandit/GLMBandit-v0", n_arms=3, dim=4, horizon=50, structure="disjoint",
                         context_norm=norm)
    agent = make_agent(name, env)
    obs, _ = env.reset(seed=0)
    bad = np.array(obs, dtype=float)
    bad[1, position] = np.nan
    with pytest.raises(ValueError, match="NaN|finite"):
        agent.update(bad, 1, 0.0, {})
    with pytest.raises(ValueError, match="NaN"):
        check_context_bound(bad, norm, 1.0)
    agent.update(obs, 1, 0.0, {})  # the refused user was not counted
    assert 0 <= agent.act(obs) < 3


def test_the_context_slack_fits_inside_every_calibrations_rounding_margin():
    """A row accepted at ``L (1 + CONTEXT_RTOL)`` raises an ``L^2`` sensitivity by ``(1 + CONTEXT_RTOL)^2``; every
    calibration of an agent that checks contexts with :func:`check_context_bound` rounds its noise scale up by its
    ``_SAFETY``, which must cover it (review finding F2). And the check refuses just beyond the slack."""
    import importlib

    from dpbandit.agents.private import CONTEXT_RTOL

    for name in ("dpbandit.agents.episodic_ridge_calibration", "dpbandit.agents.episodic_glm",
                 "dpbandit.agents.support_ridge", "dpbandit.privacy.tree_calibration", "dpbandit.optim.gg_calibration"):
        safety = importlib.import_module(name)._SAFETY
        assert (1 + CONTEXT_RTOL) ** 2 <= safety, name
    row = np.array([3.0, 4.0])  # ||x||_2 = 5
    check_context_bound(row * (1 + 0.9 * CONTEXT_RTOL), "l2", 5.0)
    with pytest.raises(ValueError, match=r"> context_bound = 5"):
        check_context_bound(row * (1 + 2 * CONTEXT_RTOL), "l2", 5.0)
